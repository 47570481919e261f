/* http: the HTTP front door (libmicrohttpd). Collects each request's body up to a bound,
 * answers 413 past it, calls one handler per complete request and logs one line per request
 * when it is done (method path status duration, and of that the time it waited for a
 * handler's thread). Guards its connections against slow and hostile clients (deadlines for
 * a request's header and body, a budget that slow clients cannot fill: guard.h), refuses
 * over-long request targets (414) and headers (431) and puts the security headers
 * (Content-Security-Policy, nosniff, no referrer, no framing) on every answer. */
#ifndef RINGMASTER_HTTP_H
#define RINGMASTER_HTTP_H

#include <jansson.h>
#include <stddef.h>

struct http_server;
struct http_req;

/* Called once per request, with the complete body, on one of the work queue's threads (not
 * libmicrohttpd's: a handler that waits holds up no other connection; but see
 * http_config.run_inline). Must answer with
 * http_req_respond() (or http_problem()) exactly once, or ask for a retry. */
typedef void (*http_handler_f)(void *arg, struct http_req *req);

/* Requests wait for a handler's thread in order of arrival within their class: urgent ones
 * first, then normal ones, then bulk ones, which get a turn in four while normal ones wait
 * (late under load, never starved). */
enum http_class { HTTP_CLASS_BULK, HTTP_CLASS_NORMAL, HTTP_CLASS_URGENT };

struct http_config {
    const char *listen;    /* "HOST:PORT", IPv4 or [IPv6] (borrowed) */
    unsigned threads;      /* threads that run handlers, and libmicrohttpd's threads, >= 1 */
    unsigned conn_limit;   /* connections served at once; a request past it gets 503 with
                            * Retry-After; from conn_limit - conn_limit/16 on, each new
                            * connection closes the oldest one still waiting for its header */
    unsigned per_ip_limit; /* simultaneous connections from one address (more: closed at once) */
    unsigned timeout_s;    /* idle timeout of a connection (also while answering) */
    unsigned header_s;     /* a request's header must be complete this long after the
                            * connection opened or answered its previous request */
    unsigned body_s;       /* and its body this long after its header */
    size_t max_target;     /* longer request targets (path and query) get 414 */
    size_t max_header;     /* larger request lines and headers get 431 */
    size_t max_body;       /* larger bodies get 413 */
    /* How a request waits for a handler's thread (NULL: all normal); called on
     * libmicrohttpd's threads, must not block. */
    enum http_class (*classify)(const char *method, const char *path);
    /* Runs a request's handler on libmicrohttpd's thread instead, when it can without
     * waiting (NULL: never): returns 1 when it did (the request answered, or detached), 0
     * when it did nothing and the request goes to the work queue. Must not block. */
    int (*run_inline)(void *arg, struct http_req *req);
};

/* Starts listening. Returns the server, or NULL with text in err. */
struct http_server *http_create(const struct http_config *cfg, http_handler_f fn, void *arg,
                                char *err, size_t errlen);

/* Stops listening, waits for the threads, frees. NULL ok. */
void http_destroy(struct http_server *s);

/* Request accessors; the strings are borrowed and live until the request is answered. */
const char *http_req_method(const struct http_req *r);
const char *http_req_path(const struct http_req *r);
/* A header by case-insensitive name, or NULL. */
const char *http_req_header(const struct http_req *r, const char *name);
/* A query argument (decoded), or NULL when absent or given without "=value". */
const char *http_req_query(const struct http_req *r, const char *name);
/* The body (NUL-terminated for convenience) and its length; "" when none. */
const char *http_req_body(const struct http_req *r, size_t *len);

/* Leaves r unanswered for now: when the handler returns, the connection is suspended (it holds
 * no thread) and the handler is called again for the same request after delay_s. A server
 * being destroyed answers such a request 503 instead. For long-polls. */
void http_req_retry(struct http_req *r, double delay_s);

/* As http_req_retry(), and the handler is called again sooner, at once, when http_wake() is
 * called with key (or with 0) after the request's handler began: also while the handler still
 * runs, so that news between the handler's look and its return is not lost. key > 0. */
void http_req_retry_on(struct http_req *r, double delay_s, long long key);

/* Leaves r to be answered after its handler returns, by whoever the handler handed it to
 * (another handler's thread): that one answers it and then calls http_req_finish(r). Until
 * then the connection stays suspended and holds no thread. After http_req_detach(), the
 * handler and its callers must not touch r again: it may be answered and gone before they
 * return. */
void http_req_detach(struct http_req *r);

/* Whether the handler running on this thread detached its request (http_req_detach()):
 * its callers, after the handler returned, must then leave the request alone. */
int http_req_detached(void);

/* Sends the answer of a detached request (500 when none was given). Safe from any thread. */
void http_req_finish(struct http_req *r);

/* Calls again now every request suspended by http_req_retry_on() with key; every one waiting
 * with any key when key is 0. Safe from any thread; takes the server's short lock. */
void http_wake(struct http_server *s, long long key);

/* The handler threads a server with threads (http_config.threads) starts, the urgent one
 * included: each may hold one of the database pool's connections while it runs. */
unsigned http_handler_threads(unsigned threads);

/* The client's address as numeric text ("127.0.0.1", "::1") into buf. Returns 0, or -1
 * (buf is then ""). */
int http_req_peer(const struct http_req *r, char *buf, size_t len);

/* The front door's counters, for /metrics. */
struct http_stats {
    unsigned connections;            /* open now */
    unsigned long long cut_late;     /* closed: a request past its header or body deadline */
    unsigned long long cut_for_room; /* closed: the oldest waiting one, to make room */
    size_t waiting;                  /* complete requests waiting for a handler's thread */
};

/* Fills *out with the counters of the server that received r. */
void http_req_stats(const struct http_req *r, struct http_stats *out);

/* The status the request was answered with, 0 before. */
unsigned http_req_status(const struct http_req *r);

/* Seconds since the request arrived. */
double http_req_age(const struct http_req *r);

/* Answers. headers: NULL, or a NULL-terminated list of name, value pairs. The body is copied.
 * Returns 0, or -1 when the response could not be queued (the connection is then closed). */
int http_req_respond(struct http_req *r, unsigned status, const char *content_type,
                     const char *body, size_t len, const char *const *headers);

/* As http_req_respond() for a body allocated with malloc(), handed over instead of copied
 * (a page of 1,000 jobs is 650 KB): freed here in every case. */
int http_req_respond_take(struct http_req *r, unsigned status, const char *content_type,
                          char *body, size_t len, const char *const *headers);

/* Answers r with a problem document (problem.h) whose detail is the formatted text and whose
 * instance is the request's path. errors: NULL or an array of {field, detail} (stolen).
 * headers: as for http_req_respond(). Returns http_req_respond()'s result. */
int http_send_problem(struct http_req *r, unsigned status, json_t *errors,
                      const char *const *headers, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define http_problem(r, status, ...) http_send_problem((r), (status), NULL, NULL, __VA_ARGS__)

#endif
