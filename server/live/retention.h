/* retention: what bounds the database while jobs report for weeks (docs/operations.md,
 * "What the database keeps"). The scheduler thread calls retention_tick() after each round;
 * at most every RETENTION_PERIOD_S it
 * - thins the minibatch history (job_metrics) of each job past RETENTION_ROWS_MAX rows: the
 *   newest RETENTION_RECENT rows stay as they came, and every second one of the older rows
 *   goes (the first stays), so that a job's history is at most RETENTION_ROWS_MAX rows at any
 *   age, at a resolution that halves as it grows, as the live fitter keeps its points
 *   (fit.h). The running sums the speed model reads (job_metric_sums) are not touched: a
 *   thinned job keeps its measured step times exactly.
 * - drops the scheduler's round audit rows (sched_rounds) older than RETENTION_ROUNDS_S.
 * Each pass does a bounded amount of work (RETENTION_JOBS_PER_PASS jobs, RETENTION_ROUNDS_
 * PER_PASS rows), so that a backlog is worked off over several passes, never in one long
 * statement. Private to live/. */
#ifndef RINGMASTER_LIVE_RETENTION_H
#define RINGMASTER_LIVE_RETENTION_H

#include <libpq-fe.h>
#include <stddef.h>

#define RETENTION_PERIOD_S 30.0
#define RETENTION_ROWS_MAX 4000
#define RETENTION_RECENT 1000
#define RETENTION_JOBS_PER_PASS 100
#define RETENTION_ROUNDS_S (7 * 86400)
#define RETENTION_ROUNDS_PER_PASS 10000

struct retention_result {
    int jobs_thinned;         /* jobs whose history was thinned */
    long long rows_dropped;   /* job_metrics rows dropped */
    long long rounds_dropped; /* sched_rounds rows dropped */
};

/* On c (autocommit, no transaction open): one pass when now (monotonic seconds) is at least
 * RETENTION_PERIOD_S after *last (0: never ran); sets *last. Fills *res (may be NULL).
 * Returns 1 after a pass, 0 when none was due, -1 with text in err. */
int retention_tick(PGconn *c, double now, double *last, struct retention_result *res, char *err,
                   size_t errlen);

/* One pass, whatever the time (tests, and retention_tick). Returns 0 or -1 with text in err. */
int retention_pass(PGconn *c, struct retention_result *res, char *err, size_t errlen);

#endif
