/* workq: the threads that run the HTTP front door's handlers (private to http/), apart from
 * libmicrohttpd's own threads. libmicrohttpd's pool serves each connection on one of its
 * threads, one request after another: a handler that waits for PostgreSQL holds up every
 * other connection of its thread. At 512 nodes a node's heartbeat waited up to 15 s behind
 * the posts of a launch burst while the handlers themselves took at most 0.7 s (make
 * bench-scale; docs/benchmarks-history.md, "One queue for every connection's requests"). Here
 * every request waits in one queue for the first free thread, in order of arrival within
 * three classes: urgent ones (a node's heartbeat: its liveness) first, then the normal ones,
 * then bulk ones (minibatch reports), which get one turn in WORKQ_BULK_TURN while normal
 * ones wait, so that they are late under load but never starved. Some threads may be
 * reserved for urgent items: with every other thread inside a slow handler (a launch's
 * metrics posts wait for PostgreSQL), a heartbeat still finds one free at once.
 *
 * Thread-safe. Items are the caller's; the queue only holds them until run() is called. */
#ifndef RINGMASTER_HTTP_WORKQ_H
#define RINGMASTER_HTTP_WORKQ_H

#include <stddef.h>

struct workq;

typedef void (*workq_run_f)(void *arg, void *item);

enum workq_class { WORKQ_BULK, WORKQ_NORMAL, WORKQ_URGENT };

#define WORKQ_BULK_TURN 4

/* Starts nthreads (>= 1) threads that call run(arg, item) for each item pushed, and nurgent
 * more that run urgent items only. Returns the queue, or NULL (out of memory, or a thread
 * could not start). */
struct workq *workq_create(unsigned nthreads, unsigned nurgent, workq_run_f run, void *arg);

/* Queues item in its class. Returns 0, or -1 when the queue is stopping or out of memory:
 * run() will not see it. */
int workq_push(struct workq *q, void *item, enum workq_class cls);

/* General threads waiting for an item. */
unsigned workq_idle(struct workq *q);

/* Items waiting (not yet taken by a thread). */
size_t workq_waiting(struct workq *q);

/* Refuses new items (workq_push answers -1 from now on), lets the threads run every item
 * already queued, and joins them. Again: nothing more. */
void workq_drain(struct workq *q);

/* workq_drain(), then frees. NULL ok. */
void workq_destroy(struct workq *q);

#endif
