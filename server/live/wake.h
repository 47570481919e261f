/* wake: how the scheduler thread is woken at once instead of waiting for its next
 * timed round: in-process by the HTTP handlers (a submission, a cancellation, a node
 * registered, a settings change, a person's resize, priority or migrate request), and from
 * the database by a notification (sql/004: a job reaching RUNNING, SUSPENDED or an end state,
 * a node changing state, whoever wrote it) that the thread listens for on a socket. One
 * process-wide eventfd; signals are never lost and several coalesce into one round. */
#ifndef RINGMASTER_LIVE_WAKE_H
#define RINGMASTER_LIVE_WAKE_H

#include "live.h" /* live_wake_signal() */

/* Opens the wake-up channel (the scheduler thread's creator). Returns 0 or -1 (errno). */
int live_wake_open(void);

/* The round that answers the signals so far begins: a signal from now on wakes the waiter
 * again. Until then signals after the first write nothing (they are that round's). */
void live_wake_rearm(void);

/* Waits until a signal arrives, fd (when >= 0) becomes readable, or timeout_s passes.
 * Returns 1 for a signal (cleared), 2 when fd is readable, 0 on the timeout, -1 once
 * live_wake_stop() was called. */
int live_wake_wait(double timeout_s, int fd);

/* Makes every present and future live_wake_wait() return -1 at once. */
void live_wake_stop(void);

/* Closes the channel (after the waiting thread has ended). */
void live_wake_close(void);

#endif
