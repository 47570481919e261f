/* sched_thread: ringmasterd's scheduler thread. A round (sched_round) every interval_s of the
 * scheduler's settings, and at once when a handler calls sched_wake_signal(); it also runs at
 * least every node_timeout_s / 2 so that silent nodes are noticed. The thread has its own
 * database connection and takes no lock an HTTP thread waits on. */
#ifndef RINGMASTER_SCHED_THREAD_H
#define RINGMASTER_SCHED_THREAD_H

#include <stddef.h>

struct sched_thread;

/* Connects to conninfo and starts the thread. Returns it, or NULL with text in err. */
struct sched_thread *sched_thread_create(const char *conninfo, char *err, size_t errlen);

/* Stops the thread (waiting for a round in progress to end), closes its connection. NULL ok. */
void sched_thread_destroy(struct sched_thread *t);

#endif
