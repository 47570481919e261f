/* guard: the connection budget and the request deadlines of the HTTP front door (private to
 * http/). libmicrohttpd's own timeout is an idle timeout: a client that sends one byte every
 * few seconds keeps its connection for ever, and enough of them take every slot. The guard
 * knows each connection's stage and closes (shutdown(2) of its socket, which libmicrohttpd
 * then sees as the peer's end) a connection whose request is not complete in time:
 *
 *   waiting  from the accept, or from the end of the previous answer on a kept-alive
 *            connection, until the request's header is complete: at most header_s;
 *   body     from the header until the last byte of the body: at most body_s;
 *   busy     a handler has the request (answers, long-polls, streams): no deadline here.
 *
 * And when more than high_water connections are open, each new one closes the oldest
 * waiting one, so slow clients alone cannot fill the budget: a client whose request arrives
 * at once gets a slot. Thread-safe: every call takes the guard's lock. */
#ifndef RINGMASTER_HTTP_GUARD_H
#define RINGMASTER_HTTP_GUARD_H

struct guard;
struct guard_conn;

struct guard_limits {
    unsigned header_s;   /* waiting to header complete */
    unsigned body_s;     /* header to body complete */
    unsigned high_water; /* above this many connections, a new one closes the oldest waiting */
};

/* Counters since the start, for the logs and tests. */
struct guard_stats {
    unsigned open;              /* connections open now */
    unsigned long long late;    /* closed for missing a deadline */
    unsigned long long evicted; /* closed to make room (high water) */
};

/* Returns a guard, or NULL (ENOMEM). */
struct guard *guard_create(const struct guard_limits *lim);

/* Frees. Every connection must have been closed (guard_close). NULL ok. */
void guard_destroy(struct guard *g);

/* A connection was accepted on socket fd: it is waiting from now. Closes the oldest waiting
 * connection when over high water. Returns its entry (new, owned by the guard until
 * guard_close), or NULL on ENOMEM (the connection then goes unguarded). */
struct guard_conn *guard_open(struct guard *g, int fd);

/* The connection is closing (before its socket is closed): forgets c. NULL ok. */
void guard_close(struct guard *g, struct guard_conn *c);

/* The request's header is complete: the body's deadline runs from now. NULL ok. */
void guard_header_done(struct guard *g, struct guard_conn *c);

/* A handler has the request: no deadline until guard_idle(). NULL ok. */
void guard_busy(struct guard *g, struct guard_conn *c);

/* The request was answered; the connection waits for the next one from now. NULL ok. */
void guard_idle(struct guard *g, struct guard_conn *c);

/* Closes the connections past their deadline. Returns how many it closed. */
unsigned guard_sweep(struct guard *g);

/* Open connections now. */
unsigned guard_open_count(struct guard *g);

void guard_get_stats(struct guard *g, struct guard_stats *out);

#endif
