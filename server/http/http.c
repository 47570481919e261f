/* http: the HTTP front door on libmicrohttpd: request bodies up to a bound, early refusals
 * (413, 414, 431), dispatch to the work queue, suspended requests woken by key, answers. */
#include "http.h"

#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "log.h"
#include "monotime.h"
#include "problem.h"
#include "workq.h"

/* How many recent http_wake() keys are kept to tell a handler that news came while it ran. */
#define WAKE_RING 64

/* Handler threads that run urgent requests only (a node's heartbeat), besides cfg->threads,
 * so that a node's liveness never waits for every general thread to leave a slow handler (a
 * PostgreSQL stall under a launch's metrics posts). On two cores make bench-scale measured no
 * gain from it: a heartbeat's wait in the queue there is a wait for a CPU (docs/
 * benchmarks-history.md, "The heartbeat as a node sends it"). */
#define HTTP_URGENT_THREADS 1

unsigned http_handler_threads(unsigned threads)
{
    return threads + HTTP_URGENT_THREADS;
}

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler_f fn;
    void *arg;
    struct guard *guard;
    struct workq *work; /* runs the handlers (workq.h) */
    enum http_class (*classify)(const char *method, const char *path);
    int (*run_inline)(void *arg, struct http_req *req);
    unsigned conn_limit;
    size_t max_target, max_header, max_body;
    pthread_mutex_t lock;
    struct http_req *suspended; /* under lock: requests waiting for their retry */
    /* http_wake() calls so far (written under lock) and the keys of the last WAKE_RING */
    atomic_ullong wakes;
    long long woken[WAKE_RING]; /* under lock: the key of wake number n at n % WAKE_RING */
    pthread_t resumer;
    int has_resumer;
    atomic_int stopping;
};

struct http_req {
    struct http_server *server;
    struct MHD_Connection *conn;
    struct guard_conn *gc; /* the connection's place in the guard, or NULL */
    const char *method;    /* borrowed from MHD, valid for the request's life */
    const char *path;
    char *body;
    size_t len, cap;
    int too_big;
    int answered;
    unsigned status;
    /* Set while the request is the work queue's (its connection suspended): an answer is
     * kept in pending until libmicrohttpd calls on_access again after the resume. */
    int in_work;
    struct MHD_Response *pending;
    double queued_at; /* monotonic s when last handed to the queue */
    double queued_s;  /* waited in the queue for a thread, in all (logged) */
    struct timespec started;
    double retry_in;              /* > 0: the handler asked to be called again */
    double retry_at;              /* CLOCK_MONOTONIC seconds, while suspended */
    struct http_req *snext;       /* in the server's suspended list */
    long long wait_key;           /* > 0: http_wake() with it (or 0) resumes the request */
    unsigned long long wake_seen; /* s->wakes when the handler was called */
};

void http_req_retry(struct http_req *r, double delay_s)
{
    r->retry_in = delay_s > 0.001 ? delay_s : 0.001;
    r->wait_key = 0;
}

void http_req_retry_on(struct http_req *r, double delay_s, long long key)
{
    http_req_retry(r, delay_s);
    r->wait_key = key > 0 ? key : 0;
}

void http_req_stats(const struct http_req *r, struct http_stats *out)
{
    struct guard_stats g;
    guard_get_stats(r->server->guard, &g);
    *out = (struct http_stats){g.open, g.late, g.evicted, workq_waiting(r->server->work)};
}

unsigned http_req_status(const struct http_req *r)
{
    return r->answered ? r->status : 0;
}

double http_req_age(const struct http_req *r)
{
    return monotime_s() - ((double)r->started.tv_sec + (double)r->started.tv_nsec / 1e9);
}

/* Under s->lock: whether http_wake() was called with key (or 0) since wake number seen.
 * When more wakes came than the ring holds, yes: a spurious look is cheap, a lost one not. */
static int woken_since(const struct http_server *s, long long key, unsigned long long seen)
{
    unsigned long long n = atomic_load(&s->wakes);
    if (n - seen > WAKE_RING)
        return 1;
    for (unsigned long long i = seen; i < n; i++)
        if (s->woken[i % WAKE_RING] == key || s->woken[i % WAKE_RING] == 0)
            return 1;
    return 0;
}

/* Keeps r's connection suspended (it is, since its handler ran in the work queue) until its
 * retry is due (the resumer thread wakes it) or, when it waits on a key, until http_wake()
 * with that key; resumes it at once when that came while the handler ran. */
static void park_request(struct http_server *s, struct http_req *r)
{
    r->retry_at = monotime_s() + r->retry_in;
    r->retry_in = 0;
    pthread_mutex_lock(&s->lock);
    if (r->wait_key && woken_since(s, r->wait_key, r->wake_seen)) {
        MHD_resume_connection(r->conn);
    } else {
        r->snext = s->suspended;
        s->suspended = r;
    }
    pthread_mutex_unlock(&s->lock);
}

/* Under s->lock: resumes the suspended requests that match (due, or waiting on key). */
static void resume_where(struct http_server *s,
                         int (*match)(const struct http_req *r, double now, long long key),
                         long long key)
{
    double now = monotime_s();
    for (struct http_req **pp = &s->suspended; *pp;) {
        struct http_req *r = *pp;
        if (match(r, now, key)) {
            *pp = r->snext;
            MHD_resume_connection(r->conn);
        } else {
            pp = &r->snext;
        }
    }
}

static int is_due(const struct http_req *r, double now, long long all)
{
    return all || r->retry_at <= now;
}

static int waits_on(const struct http_req *r, double now, long long key)
{
    (void)now;
    return r->wait_key && (key == 0 || r->wait_key == key);
}

/* Resumes the suspended requests that are due (all of them when all). */
static void resume_due(struct http_server *s, int all)
{
    pthread_mutex_lock(&s->lock);
    resume_where(s, is_due, all);
    pthread_mutex_unlock(&s->lock);
}

void http_wake(struct http_server *s, long long key)
{
    pthread_mutex_lock(&s->lock);
    unsigned long long n = atomic_load(&s->wakes);
    s->woken[n % WAKE_RING] = key;
    atomic_store(&s->wakes, n + 1);
    resume_where(s, waits_on, key);
    pthread_mutex_unlock(&s->lock);
}

static void *resumer_main(void *arg)
{
    struct http_server *s = arg;
    while (!atomic_load(&s->stopping)) {
        usleep(20000);
        resume_due(s, 0);
        guard_sweep(s->guard);
    }
    return NULL;
}

const char *http_req_method(const struct http_req *r)
{
    return r->method;
}

const char *http_req_path(const struct http_req *r)
{
    return r->path;
}

const char *http_req_header(const struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *http_req_query(const struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_req_body(const struct http_req *r, size_t *len)
{
    *len = r->len;
    return r->body ? r->body : "";
}

/* On every answer. The dashboard (www/) has no inline script or style and loads nothing
 * from elsewhere; nothing is to be framed, sniffed or told where the user came from. */
static const char *const security_headers[] = {
    "Content-Security-Policy",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options",
    "nosniff",
    "Referrer-Policy",
    "no-referrer",
    "X-Frame-Options",
    "DENY",
    NULL};

int http_req_peer(const struct http_req *r, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    socklen_t salen = !sa                         ? 0
                      : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                  : sizeof(struct sockaddr_in);
    if (len)
        buf[0] = '\0';
    if (!sa || getnameinfo(sa, salen, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0) {
        if (len)
            buf[0] = '\0';
        return -1;
    }
    return 0;
}

/* Queues resp (NULL: -1) with the content type and headers; on a work queue's thread, keeps
 * it for on_access (libmicrohttpd takes an answer only from its own callback). */
static int queue(struct http_req *r, unsigned status, struct MHD_Response *resp,
                 const char *content_type, const char *const *headers)
{
    if (!resp)
        return -1;
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    for (size_t i = 0; security_headers[i]; i += 2)
        MHD_add_response_header(resp, security_headers[i], security_headers[i + 1]);
    for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
        MHD_add_response_header(resp, headers[i], headers[i + 1]);
    if (r->in_work) {
        r->pending = resp;
        return 0;
    }
    enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    return rc == MHD_YES ? 0 : -1;
}

int http_req_respond(struct http_req *r, unsigned status, const char *content_type,
                     const char *body, size_t len, const char *const *headers)
{
    if (r->answered)
        return -1;
    r->answered = 1;
    r->status = status;
    return queue(r, status,
                 MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY),
                 content_type, headers);
}

int http_req_respond_take(struct http_req *r, unsigned status, const char *content_type,
                          char *body, size_t len, const char *const *headers)
{
    if (r->answered) {
        free(body);
        return -1;
    }
    r->answered = 1;
    r->status = status;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(body);
    return queue(r, status, resp, content_type, headers);
}

/* Appends a chunk, or marks the request too big and drops the chunk. */
static void append_body(struct http_req *r, size_t max, const char *data, size_t n)
{
    if (r->too_big || r->len + n > max) {
        r->too_big = 1;
        return;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *p = realloc(r->body, cap);
        if (!p) {
            r->too_big = 1;
            return;
        }
        r->body = p;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
}

static enum MHD_Result add_arg_len(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    size_t *n = cls;
    (void)kind;
    *n += 2 + strlen(key) + (value ? strlen(value) : 0);
    return MHD_YES;
}

/* The request target's length: the path, and the query's arguments as decoded. */
static size_t target_len(struct http_req *r)
{
    size_t n = strlen(r->path);
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg_len, &n);
    return n;
}

/* Answers a request that breaks a limit at once: 503 when the server is full, 414, 431,
 * 413 for an announced body over the bound. */
static void refuse_early(struct http_server *s, struct http_req *r)
{
    static const char *const busy[] = {"Retry-After", "1", "Connection", "close", NULL};
    const union MHD_ConnectionInfo *hs =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    const char *cl =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    size_t tlen = target_len(r);
    if (guard_open_count(s->guard) > s->conn_limit) {
        http_send_problem(r, 503, NULL, busy, "over %u connections: try again shortly",
                          s->conn_limit);
    } else if (tlen > s->max_target) {
        http_problem(r, 414, "request target of %zu bytes, over %zu", tlen, s->max_target);
    } else if (hs && hs->header_size > s->max_header) {
        http_problem(r, 431, "request header of %zu bytes, over %zu", hs->header_size,
                     s->max_header);
    } else if (cl && strtoull(cl, NULL, 10) > s->max_body) {
        r->too_big = 1;
        http_problem(r, 413, "request body over %zu bytes", s->max_body);
    }
}

/* First call (the header is complete): set up the request and refuse it at once when it
 * breaks a limit. */
static enum MHD_Result begin_request(struct http_server *s, struct MHD_Connection *conn,
                                     const char *url, const char *method, void **con_cls)
{
    struct http_req *r = calloc(1, sizeof(*r));
    if (!r)
        return MHD_NO;
    r->server = s;
    r->conn = conn;
    r->method = method;
    r->path = url;
    clock_gettime(CLOCK_MONOTONIC, &r->started);
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->gc = sc ? sc->socket_context : NULL;
    *con_cls = r;
    guard_header_done(s->guard, r->gc);
    refuse_early(s, r);
    if (r->answered)
        guard_busy(s->guard, r->gc);
    return MHD_YES;
}

/* Set on a handler's thread while its handler runs, when it detached its request. */
static _Thread_local int detached;

void http_req_detach(struct http_req *r)
{
    (void)r;
    detached = 1;
}

int http_req_detached(void)
{
    return detached;
}

void http_req_finish(struct http_req *r)
{
    if (!r->answered)
        http_problem(r, 500, "the handler gave no answer");
    MHD_resume_connection(r->conn);
}

/* A work queue's thread: runs the handler of r (its connection suspended), then resumes the
 * connection for its answer, or leaves it suspended until its retry (park_request), or to
 * whoever it was handed to (detached: r may be gone already). */
static void run_request(void *arg, void *item)
{
    struct http_server *s = arg;
    struct http_req *r = item;
    r->queued_s += monotime_s() - r->queued_at;
    r->wake_seen = atomic_load(&s->wakes);
    detached = 0;
    s->fn(s->arg, r);
    if (detached) {
        detached = 0;
        return;
    }
    if (!r->answered && r->retry_in > 0 && !atomic_load(&s->stopping)) {
        park_request(s, r);
        return;
    }
    if (!r->answered && r->retry_in > 0)
        http_problem(r, 503, "the server is stopping");
    else if (!r->answered)
        http_problem(r, 500, "the handler gave no answer");
    MHD_resume_connection(r->conn);
}

/* Runs r's handler here, on libmicrohttpd's thread, when run_inline can (its connection
 * suspended, as on the work queue: a detached request is answered from another thread).
 * Returns 1 when it ran, 0 when r goes to the work queue. */
static int run_here(struct http_server *s, struct http_req *r)
{
    detached = 0;
    if (!s->run_inline || !s->run_inline(s->arg, r)) {
        detached = 0;
        return 0;
    }
    if (detached) {
        detached = 0;
        return 1;
    }
    if (!r->answered)
        http_problem(r, 500, "the handler gave no answer");
    MHD_resume_connection(r->conn);
    return 1;
}

/* Hands r to the work queue (or runs it here: run_here()); its connection stays suspended
 * until the handler is done. */
static void dispatch(struct http_server *s, struct http_req *r)
{
    MHD_suspend_connection(r->conn);
    r->in_work = 1;
    r->queued_at = monotime_s();
    if (!atomic_load(&s->stopping) && run_here(s, r))
        return;
    enum http_class c = s->classify ? s->classify(r->method, r->path) : HTTP_CLASS_NORMAL;
    enum workq_class wc = c == HTTP_CLASS_URGENT ? WORKQ_URGENT
                          : c == HTTP_CLASS_BULK ? WORKQ_BULK
                                                 : WORKQ_NORMAL;
    if (atomic_load(&s->stopping) || workq_push(s->work, r, wc) < 0) {
        http_problem(r, 503, "the server is stopping");
        MHD_resume_connection(r->conn);
    }
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct http_server *s = cls;
    (void)version;
    if (!*con_cls)
        return begin_request(s, conn, url, method, con_cls);
    struct http_req *r = *con_cls;
    if (*upload_data_size) {
        append_body(r, s->max_body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->in_work && r->answered) { /* back from the work queue with its answer */
        struct MHD_Response *resp = r->pending;
        r->pending = NULL;
        r->in_work = 0;
        if (!resp)
            return MHD_NO; /* the answer could not be made (out of memory): close */
        enum MHD_Result rc = MHD_queue_response(conn, r->status, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    if (r->answered)
        return MHD_YES;
    guard_busy(s->guard, r->gc);
    if (r->too_big) {
        http_problem(r, 413, "request body over %zu bytes", s->max_body);
        return MHD_YES;
    }
    dispatch(s, r); /* first time, or resumed for a retry */
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *s = cls;
    struct http_req *r = *con_cls;
    (void)conn;
    if (!r)
        return;
    if (r->pending) /* never sent: the connection ended first */
        MHD_destroy_response(r->pending);
    guard_idle(s->guard, r->gc);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double ms = (double)(now.tv_sec - r->started.tv_sec) * 1e3 +
                (double)(now.tv_nsec - r->started.tv_nsec) / 1e6;
    log_info("%s %s %u %.1fms%s queued %.1fms", r->method, r->path, r->status, ms,
             toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)", r->queued_s * 1e3);
    free(r->body);
    free(r);
    *con_cls = NULL;
}

/* Gives each connection its place in the guard, and takes it back when it closes. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? guard_open(s->guard, ci->connect_fd) : NULL;
    } else {
        guard_close(s->guard, *socket_context);
        *socket_context = NULL;
    }
}

/* Splits "HOST:PORT" or "[V6]:PORT" and resolves it into *res (freeaddrinfo). */
static int resolve_listen(const char *listen, struct addrinfo **res, char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    const char *h = listen;
    size_t hlen = colon ? (size_t)(colon - listen) : 0;
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (!colon || hlen == 0 || hlen >= sizeof(host) || !colon[1]) {
        snprintf(err, errlen, "listen: expected HOST:PORT, got '%s'", listen);
        return -1;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    int rc = getaddrinfo(host, colon + 1, &hints, res);
    if (rc != 0) {
        snprintf(err, errlen, "listen %s: %s", listen, gai_strerror(rc));
        return -1;
    }
    return 0;
}

/* What libmicrohttpd may hold of one connection's request (MHD_OPTION_CONNECTION_MEMORY_LIMIT):
 * past it, it answers 414 or 431 itself, with an HTML page that cannot be changed in 0.9.75.
 * 128 KiB takes request heads to about 115 KB (a 100 KB path, query or header, the
 * hostile-input corpus's), which our own bounds (max_target, max_header) then refuse as
 * problem documents; only a longer head gets the HTML page. It costs no resident memory to
 * an idle connection: the pool is mapped, and only what a request writes is touched (200
 * connections holding 2 KB of a request each: 4.6 KiB each with 64 or 128 KiB; measured
 * with the server's VmRSS). */
#define HTTP_POOL_BYTES (128 * 1024)

/* libmicrohttpd's own limits sit above ours, so that ours answer first: its connection
 * limit (past which it stops accepting) leaves room for the 503s, and its memory per
 * connection holds a head well past our bounds (HTTP_POOL_BYTES). epoll: with poll(2) each pool thread
 * looked at every one of its connections at each wake-up, and at 512 nodes' ~1,500
 * connections that was 40 % of the server's CPU (make bench-scale; docs/benchmarks-history.md,
 * "The heartbeat as a node sends it"). epoll was left once because its first thread awake accepts
 * a series of connections (8 clients served by 2 of 8 threads): the handlers then ran on
 * those threads; now they run on the work queue, and the pool threads only read and write. */
static struct MHD_Daemon *start_daemon(struct http_server *s, const struct http_config *cfg,
                                       const struct sockaddr *sa, int ipv6)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    if (ipv6)
        flags |= MHD_USE_IPv6;
    unsigned hard_limit = cfg->conn_limit + cfg->conn_limit / 16 + cfg->threads;
    size_t pool = 2 * (cfg->max_header + cfg->max_target) + 16384;
    if (pool < HTTP_POOL_BYTES)
        pool = HTTP_POOL_BYTES;
    return MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, s, MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned int)cfg->threads, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, hard_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned int)cfg->per_ip_limit, MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback)on_completed, (void *)s,
        MHD_OPTION_NOTIFY_CONNECTION, (MHD_NotifyConnectionCallback)on_connection, (void *)s,
        MHD_OPTION_END);
}

struct http_server *http_create(const struct http_config *cfg, http_handler_f fn, void *arg,
                                char *err, size_t errlen)
{
    struct addrinfo *ai = NULL;
    if (resolve_listen(cfg->listen, &ai, err, errlen) < 0)
        return NULL;
    struct http_server *s = calloc(1, sizeof(*s));
    if (!s) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->fn = fn;
    s->arg = arg;
    s->classify = cfg->classify;
    s->run_inline = cfg->run_inline;
    s->conn_limit = cfg->conn_limit;
    s->max_target = cfg->max_target;
    s->max_header = cfg->max_header;
    s->max_body = cfg->max_body;
    pthread_mutex_init(&s->lock, NULL);
    struct guard_limits gl = {cfg->header_s, cfg->body_s, cfg->conn_limit - cfg->conn_limit / 16};
    s->guard = guard_create(&gl);
    s->work = s->guard ? workq_create(cfg->threads, HTTP_URGENT_THREADS, run_request, s) : NULL;
    if (s->work)
        s->daemon = start_daemon(s, cfg, ai->ai_addr, ai->ai_family == AF_INET6);
    freeaddrinfo(ai);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use or not local?)", cfg->listen);
        workq_destroy(s->work);
        guard_destroy(s->guard);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    s->has_resumer = pthread_create(&s->resumer, NULL, resumer_main, s) == 0;
    if (!s->has_resumer) {
        snprintf(err, errlen, "cannot start the resumer thread");
        http_destroy(s);
        return NULL;
    }
    return s;
}

void http_destroy(struct http_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    if (s->has_resumer)
        pthread_join(s->resumer, NULL);
    /* The queued requests run (a retry is answered 503); what comes later is answered 503. */
    if (s->work)
        workq_drain(s->work);
    /* Suspended requests are resumed (and answered 503 if they ask again) before the stop:
     * MHD must not be stopped with suspended connections. */
    for (int i = 0; i < 100; i++) {
        resume_due(s, 1);
        usleep(10000);
        pthread_mutex_lock(&s->lock);
        int left = s->suspended != NULL;
        pthread_mutex_unlock(&s->lock);
        if (!left)
            break;
    }
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    workq_destroy(s->work); /* after the daemon: its threads push until they stop */
    guard_destroy(s->guard);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

int http_send_problem(struct http_req *r, unsigned status, json_t *errors,
                      const char *const *headers, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);

    char *text = problem_text(status, errors, detail, http_req_path(r));
    const char *body = text ? text : "{\"title\":\"Error\"}";
    int rc = http_req_respond(r, status, "application/problem+json", body, strlen(body), headers);
    free(text);
    return rc;
}
