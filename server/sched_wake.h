/* sched_wake: how the HTTP handlers wake the scheduler thread at once (a submission, a
 * cancellation, a node registered, a person's resize or priority change) instead of waiting
 * for the next timed round. One process-wide condition; signals are never lost (a flag
 * remembers one that came while the thread was busy) and several coalesce into one round. */
#ifndef RINGMASTER_SCHED_WAKE_H
#define RINGMASTER_SCHED_WAKE_H

/* Asks for a round as soon as possible. Safe from any thread, never blocks for long. */
void sched_wake_signal(void);

/* Waits until a signal arrives or timeout_s seconds pass (or sched_wake_stop() was called).
 * Returns 1 when woken by a signal, 0 on the timeout, -1 once stopped. Clears the signal. */
int sched_wake_wait(double timeout_s);

/* Makes every present and future sched_wake_wait() return -1 at once. */
void sched_wake_stop(void);

/* Undoes sched_wake_stop() (a scheduler started again in the same process). */
void sched_wake_reset(void);

#endif
