/* dblisten: a thread that LISTENs on one channel of the database, on a connection of its
 * own, and hands each notification's payload to a callback. PostgreSQL delivers a
 * notification when the transaction that sent it commits, and none while the listener is
 * disconnected: after each (re)connection the callback is called with NULL, meaning "news may
 * have been missed, look again at everything". A lost connection is remade with back-off
 * (DB_RETRY_MIN_S doubling to DB_RETRY_MAX_S). */
#ifndef RINGMASTER_DBLISTEN_H
#define RINGMASTER_DBLISTEN_H

#include <stddef.h>

struct dblisten;

/* Called on the listener's thread with a notification's payload (borrowed, for the call
 * only), or NULL after a (re)connection. Must not block for long. */
typedef void (*dblisten_f)(void *arg, const char *payload);

/* Starts listening on channel (an identifier, borrowed for the call) of conninfo's database.
 * The first connection is made on the thread: a database away now is retried. Returns the
 * listener, or NULL with text in err (no memory, no thread). */
struct dblisten *dblisten_create(const char *conninfo, const char *channel, dblisten_f fn,
                                 void *arg, char *err, size_t errlen);

/* Stops the thread, closes its connection, frees. After it returns fn is not called. NULL ok. */
void dblisten_destroy(struct dblisten *l);

#endif
