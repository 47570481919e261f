/* outbox: the worker's reports to the server, kept in order and sent again until the server
 * takes them, so that a server restart loses none. Every report is idempotent on the server
 * (metrics by step, results by action id, states by target, logs by offset), so a report sent
 * twice (its answer lost) does no harm. */
#ifndef RINGMASTER_OUTBOX_H
#define RINGMASTER_OUTBOX_H

#include <jansson.h>
#include <stddef.h>

struct outbox;
struct httpc;

/* max: most entries held; beyond it the oldest droppable entry (metrics) is dropped. */
struct outbox *outbox_create(size_t max);
void outbox_destroy(struct outbox *o);

/* Queues a JSON request (body stolen). droppable: may be lost under pressure. 0 or -1. */
int outbox_push_json(struct outbox *o, const char *method, const char *path, json_t *body,
                     int droppable);

/* Queues a request with a raw body of len bytes (copied). 0 or -1. */
int outbox_push_raw(struct outbox *o, const char *method, const char *path,
                    const char *content_type, const char *data, size_t len);

/* Sends entries oldest first for at most budget_s seconds. An answer 2xx or 4xx takes an
 * entry off (a 4xx is logged: the server will never take it); no answer or 5xx stops the
 * round. Returns the number of entries left, and sets *unreachable when the server was. */
size_t outbox_flush(struct outbox *o, struct httpc *c, double budget_s, int *unreachable);

size_t outbox_len(const struct outbox *o);
unsigned long outbox_dropped(const struct outbox *o);

#endif
