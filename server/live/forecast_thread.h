/* forecast_thread: the background refresh of the forecasts (docs/forecast.md). After a round,
 * the scheduler thread offers the snapshot its policy decided on (forecast_thread_offer: a
 * copy, taken only when the forecast thread is ready for one); the forecast thread runs the
 * core's outlook_run() on it at nice 10 with the spreads that the estimate errors of the
 * cluster's completed jobs measure (jobs.estimate_error, sql/014), writes the forecasts
 * (job_forecasts, 040) and the marks to score later in one transaction, and scores the marks of the
 * jobs that started or completed since. Its cost is bounded by a duty cycle at the grain of one
 * of the pass's K runs: after a run that took c seconds of its CPU it sleeps 9 c before the
 * next, and after the pass it takes no snapshot until 9 times the pass's CPU has gone by (at
 * least FORECAST_MIN_PERIOD_S), so it uses at most a tenth of one core, never in a burst longer
 * than one run. Private to live/. */
#ifndef RINGMASTER_LIVE_FORECAST_THREAD_H
#define RINGMASTER_LIVE_FORECAST_THREAD_H

#include <stddef.h>

#include "sched.h"

#define FORECAST_MIN_PERIOD_S 5.0
#define FORECAST_IDLE_FACTOR 9.0 /* wait >= this times a pass's CPU seconds */
/* K: with 10 runs 83 % of the starts fell at or below the P90 forecast an hour ahead, with 20
 * 92 % (docs/evaluation.md section 12) */
#define FORECAST_RUNS 20
#define FORECAST_ROUND_MIN_S 60.0 /* the forecasts' periodic round, at least */
#define FORECAST_MARK_EVERY_S 600 /* a job's forecast kept to be scored at most this often */
#define FORECAST_SCORES_DAYS 90   /* scores kept */
#define FORECAST_SPREAD_JOBS 500  /* the latest completed jobs the spread is measured on */
#define FORECAST_SUBMIT_RUNS 10    /* a submission's forecast: at most this many runs, */
#define FORECAST_SUBMIT_MIN_RUNS 3 /* and none (the caller's fallback) below this many */

struct forecast_thread;

/* Starts the thread with a connection of its own to conninfo. Returns it, or NULL with text
 * in err. */
struct forecast_thread *forecast_thread_create(const char *conninfo, char *err, size_t errlen);

/* Stops the thread (a pass in progress ends first), closes its connection. NULL ok. */
void forecast_thread_destroy(struct forecast_thread *t);

/* As live_thread_db_restarting(). */
void forecast_thread_db_restarting(struct forecast_thread *t, int restarting);

/* 1 when the thread is ready for a snapshot (t NULL: 0). */
int forecast_thread_wants(struct forecast_thread *t);

/* After a round: a copy of snap (and all it points to) for the next pass, when the thread is
 * ready for one; else nothing. policy: the round's; interval_s: the live round interval. t
 * NULL: nothing. Never blocks on a pass. */
void forecast_thread_offer(struct forecast_thread *t, const struct sched_snapshot *snap,
                           const struct sched_policy_ops *policy, double interval_s);

#endif
