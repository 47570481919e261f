/* live: ringmasterd's live scheduler, everything the scheduler thread owns. A round reads a
 * snapshot of the cluster from the database (snap.c), refits each job's models from its
 * reports (model.c, fit.c), decides with the pure core of scheduler/ (round_plan.c: the
 * policy runs outside any lock or transaction; every rule is the core's), keeps what may
 * change now (accept.c), explains the waiting jobs (waiting.c), and writes its decisions
 * back in one transaction (plan_write.c): allocations, actions for the workers, job moves
 * (jobtx.c), time-slicing and packing (slice*.c). It answers no HTTP request: the API calls
 * down into this header.
 *
 * Errors: functions returning int answer 0 (or a count) on success and -1 on failure (a
 * database error, after which the caller's transaction must roll back), as each says;
 * live_thread_create() writes its reason into err. Every name here is prefixed sched_ (the
 * scheduler thread). */
#ifndef RINGMASTER_LIVE_H
#define RINGMASTER_LIVE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"
#include "job_state.h"

/* ---- the thread ---- */

/* The scheduler thread: a round every interval_s of the scheduler's settings (config.h), and
 * at once after live_wake_signal() or a database notification; at least every
 * node_timeout_s / 2 so that silent nodes are noticed. It has its own database connection
 * and takes no lock an HTTP thread waits on. */
struct live_thread;

/* Connects to conninfo and starts the thread of the server called name (its rounds' audit
 * names it). Several servers may share one database: only the one holding the leader lock
 * runs rounds, the others stand by and take over when it goes. Returns the thread, or NULL
 * with text in err. */
struct live_thread *live_thread_create(const char *conninfo, const char *name, char *err,
                                        size_t errlen);

/* The advisory lock (pg_try_advisory_lock(CLASS, OBJ)) whose holder runs the rounds; in
 * pg_locks: locktype 'advisory', classid CLASS, objid OBJ, objsubid 2. */
#define LIVE_LEADER_LOCK_CLASS "1919512434" /* "ring" */
#define LIVE_LEADER_LOCK_OBJ "1"

/* SQL: true when this session holds the advisory lock (LIVE_LEADER_LOCK_CLASS, obj) or has
 * just taken it, false when another session holds it (a session lock: it goes with the
 * session). For the rounds' lock and retention's (RETENTION_LOCK_OBJ). */
#define LIVE_LOCK_HELD_SQL(obj)                                                                   \
    "CASE WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = "          \
    LIVE_LEADER_LOCK_CLASS " AND objid = " obj " AND objsubid = 2 AND pid = pg_backend_pid()"    \
    " AND granted) THEN true ELSE pg_try_advisory_lock(" LIVE_LEADER_LOCK_CLASS ", " obj ") END"

/* Stops the thread (waiting for a round in progress to end), closes its connection. NULL ok. */
void live_thread_destroy(struct live_thread *t);

/* The owner of the database (ringmasterd's supervisor of the embedded cluster) restarts it
 * (1) or it runs again (0): the thread's connection makes no attempt meanwhile; after, it and
 * the LISTEN connection are remade at once and a round runs. Safe from any thread. */
void live_thread_db_restarting(struct live_thread *t, int restarting);

/* Asks for a round as soon as possible (a submission, a cancellation, a node registered, a
 * settings change, a person's request). Safe from any thread, never blocks; a no-op while no
 * thread runs. */
void live_wake_signal(void);

/* ---- what the API changes inside its own transactions ---- */

/* Inside a transaction: job id goes back to the queue from `from` (event requeue with detail;
 * no move when it is PENDING or ended already): its allocations dropped, its pending start,
 * resize, migrate, suspend and resume superseded, its time-slicing forgotten, its checkpoint
 * generation (jobs.ckpt_gen) advanced, so that it starts afresh from its last checkpoint in a
 * folder no copy left behind writes. Returns 0 or -1. */
int live_requeue_job(PGconn *c, long long id, enum job_state from, const char *detail);

/* Inside a transaction: job id FAILED from `from` (event fail with detail, actor "scheduler"),
 * its allocations dropped and its pending start, resize and migrate superseded. Returns 0, or
 * -1 when the move is illegal, the job is no longer in `from`, or a statement failed. */
int live_fail_job(PGconn *c, long long id, enum job_state from, const char *detail);

/* 1 if job id (decimal text) was suspended by the scheduler to time-slice its GPUs and waits
 * for its turn (a person's resume would run it outside any allocation), 0 if not, -1 on a
 * database error. */
int live_slice_by_scheduler(PGconn *c, const char *id);

/* Inside the transaction that finished action id (decimal text) as failed: when it was a
 * round's suspension of a job that still RUNNING (the job did not take it, so it still runs
 * on the GPUs it was to leave), gives the job those GPUs back (allocation restored, no
 * longer sliced, event "suspend_failed"), or, when they already hold two jobs, requeues it
 * (live_requeue_job). Anything else: nothing. Returns 0 or -1. */
int live_slice_suspend_failed(PGconn *c, const char *id);

/* Inside the transaction that moved job id (decimal text) to SUSPENDED, on its worker's word:
 * when the job's latest action is a round's suspension that failed (it timed out, so
 * live_slice_suspend_failed gave the job its GPUs back) and the job still holds those GPUs,
 * the suspension took after all, late. The scheduler wanted the job off them, and a
 * time-sliced job holds no GPU: its allocation is released and its row is sliced again (home:
 * where it waits, run_s grown by the allocation's age), event "suspend_late"; it waits for its
 * turn like any time-sliced job instead of holding GPUs until a person resumes it. Returns 1
 * when it did so, 0 when nothing applied, -1 on a database error. */
int live_slice_suspended_late(PGconn *c, const char *id);

/* ---- the forecasts (docs/forecast.md) ---- */

/* THE forecast finish of job job_id as the forecast thread last stored it: its P50 and P90
 * (epoch seconds; the P90 -1 when unknown) and when it was made, into those that are not NULL.
 * Returns 0, 1 when the job has no forecast finish (none made yet, or unknown), -1 on a
 * database error. The core's outlook_finish() answers the same of a forecast in memory. */
int live_forecast_finish(PGconn *c, long long job_id, double *p50, double *p90, double *as_of);

/* The forecast of a job about to be submitted (a deadline's answer, issue 33 item 3),
 * made as the forecasts are: outlook_run() over the snapshot of this server's last forecast
 * pass with the job added, waiting since that snapshot's time (job as the core would see it
 * waiting: gpus, bounds, elastic, priority, user, deadline; no model: its length is the
 * prior of the finished jobs, as a round would estimate it), with the pass's spreads and
 * policy. Bounded: at most LIVE_SUBMIT_FORECAST_CPU_S of CPU by the last pass's cost per
 * run (fewer runs than a pass's). Into *out: its start and finish P50 and P90 (epoch seconds,
 * -1 unknown) and as_of (the snapshot's time). Returns 0, or 1 when it cannot (this server has
 * made no pass: it does not lead, or no round ran yet; even the fewest runs would cost more;
 * out of memory). Safe from any thread. */
#define LIVE_SUBMIT_FORECAST_CPU_S 0.25
struct sched_job;
struct live_submit_forecast {
    double start_p50, start_p90, finish_p50, finish_p90, as_of;
};
int live_forecast_submission(const struct sched_job *job, struct live_submit_forecast *out);

/* ---- the cluster's history (live/sampler.c writes it, GET /api/v1/cluster/history reads it) ----
 */

#define HISTORY_PERIOD_S 5 /* at most one sample per this many seconds */
#define HISTORY_BUSY_S 30  /* a GPU is busy when its job reported within this (or */
                           /* three of its mean step times, when longer) */

/* ---- the rounds' durations, for GET /metrics ---- */

#define LIVE_ROUND_HIST_BOUNDS 12

/* The histogram's upper bounds in seconds (0.001 .. 5), ascending. */
extern const double live_round_hist_bound[LIVE_ROUND_HIST_BOUNDS];

struct live_round_hist {
    unsigned long counts[LIVE_ROUND_HIST_BOUNDS + 1]; /* per bucket, not cumulative; last: +Inf */
    double sum_s;
};

/* Counts one round that took seconds (the thread, after each round that ran). */
void live_round_hist_observe(double seconds);

/* A copy of the counts so far. Safe from any thread. */
void live_round_hist_read(struct live_round_hist *h);

#endif
