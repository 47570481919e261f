/* retention: what bounds the database while jobs report for weeks (docs/operations.md,
 * "What the database keeps"). A thread of its own (retention_thread_create(), started by
 * the scheduler thread: a pass never delays a round) makes a pass every RETENTION_PERIOD_S;
 * a pass
 * - thins the minibatch history (job_metrics) of each job past its bound, between
 *   RETENTION_ROWS_MAX - RETENTION_SPREAD + 1 and RETENTION_ROWS_MAX rows by its id: the
 *   newest RETENTION_RECENT rows stay as they came, and every second one of the older rows
 *   goes (the first stays), so that a job's history is at most RETENTION_ROWS_MAX rows after
 *   each pass (plus what it reports until the next), at a resolution that halves as it grows,
 *   as the live fitter keeps its points (fit.h). The running sums the speed model reads
 *   (job_metric_sums) are not touched: a thinned job keeps its measured step times exactly.
 * - drops the scheduler's round audit rows (sched_rounds) older than RETENTION_ROUNDS_S.
 * - closes every job's open span of the GPU-time ledger (sql/039_usage_ledger.sql), so that
 *   GET /api/v1/reports/usage is at most a period behind, and drops the ledger's days older
 *   than RETENTION_LEDGER_DAYS.
 * A pass thins every job past the bound at its start (the longest histories first, each job
 * once), one short statement a job, and begins no job after
 * RETENTION_PASS_BUDGET_S: a backlog (after an upgrade) is worked off over a few passes, never
 * in one long statement. With 2,732 jobs reporting twice a second, a pass that thinned took
 * 210 jobs on average, at most 331, and never ran into its budget (make bench-retention,
 * docs/benchmarks.md "Metrics retention that holds its bound"). Private to live/. */
#ifndef RINGMASTER_LIVE_RETENTION_H
#define RINGMASTER_LIVE_RETENTION_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stddef.h>

#define RETENTION_PERIOD_S 30.0
#define RETENTION_ROWS_MAX 4000
#define RETENTION_SPREAD 500 /* a job's own bound: RETENTION_ROWS_MAX less 0..499 (retention.c) */
#define RETENTION_RECENT 1000
#define RETENTION_PASS_BUDGET_S 20.0
#define RETENTION_ROUNDS_S (7 * 86400)
#define RETENTION_ROUNDS_PER_PASS 10000
#define RETENTION_LEDGER_DAYS 400

/* The advisory lock (pg_try_advisory_lock(LIVE_LEADER_LOCK_CLASS, RETENTION_LOCK_OBJ)) whose
 * holder makes the passes: one server of several sharing a database thins at a time. */
#define RETENTION_LOCK_OBJ "2"

struct retention_result {
    int jobs_thinned;         /* jobs whose history was thinned */
    long long rows_dropped;   /* job_metrics rows dropped */
    long long rounds_dropped; /* sched_rounds rows dropped */
    long long ledger_closed;  /* open ledger spans closed */
    long long ledger_dropped; /* usage_ledger rows past keeping dropped */
    int unfinished;           /* jobs past the bound were left for the next pass (budget, stop) */
};

/* One pass on c (autocommit, no transaction open): begins no job's thinning after budget_s
 * seconds, nor once *stop is set (stop may be NULL). Fills *res (may be NULL). Returns 0 or
 * -1 with text in err. */
int retention_pass(PGconn *c, double budget_s, const atomic_bool *stop,
                   struct retention_result *res, char *err, size_t errlen);

/* The thread: a connection of its own to conninfo, a pass at once and then every
 * RETENTION_PERIOD_S (from one pass's start to the next), made only while its connection
 * holds the retention lock. Returns it, or NULL with text in err. */
struct retention_thread;
struct retention_thread *retention_thread_create(const char *conninfo, char *err,
                                                 size_t errlen);

/* Stops the thread (the statement of a pass in progress is cancelled), closes its
 * connection. NULL ok. */
void retention_thread_destroy(struct retention_thread *t);

/* As live_thread_db_restarting(): the database is restarting (1) or runs again (0). */
void retention_thread_db_restarting(struct retention_thread *t, int restarting);

#endif
