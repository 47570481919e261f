/* sampler: the cluster_history sample taken after a round when one is due (history_tick(),
 * sampler.h), and its compaction: old samples folded into 10-minute rows, older rows dropped. */
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monotime.h"
#include "store/db.h"

#define SECONDS(p) "(" p "::float8 * interval '1 second')"

/* A sample is due once the newest is this share of HISTORY_PERIOD_S old: the statement's
 * check, and history_tick()'s own before it asks. */
#define DUE_SHARE 0.9

/* The time a job last entered the queue (its submission, or a return after its node died). */
#define QUEUED_AT(job, before)                                                                     \
    "COALESCE((SELECT max(q.at) FROM job_events q WHERE q.job_id = " job                           \
    " AND q.to_state = 'PENDING'" before "), j.submitted_at)"

/* $1 the period, $2 the busy window. Inserts nothing when the newest sample is too recent.
 * A GPU counts once however many jobs share it; its job is busy when it reported within the
 * window, or within three of its mean minibatches (the jobs' means read once, by hash, not
 * once per allocation). At 4,096 GPUs and 5,000 jobs (make bench-scale) counting distinct
 * (node_id, gpu_idx) rows and reading a mean per allocation took 80 and 190 ms of the
 * statement's 350 under load: the scheduler thread runs it between rounds. */
static const char *const sample_sql =
    "WITH prev AS (SELECT max(at) AS at FROM cluster_history WHERE span_s = 0),"
    " due AS (SELECT COALESCE(prev.at, now() - " SECONDS("$1") ") AS since FROM prev"
    " WHERE prev.at IS NULL OR prev.at <= now() - " DB_NUM(DUE_SHARE) " * " SECONDS("$1") "),"
    " starts AS (SELECT count(*) AS n, avg(extract(epoch FROM e.at - " QUEUED_AT(
        "e.job_id", " AND q.id < e.id") ")) AS wait FROM due, job_events e JOIN jobs j"
    " ON j.id = e.job_id WHERE e.from_state = 'PENDING' AND e.to_state = 'STARTING'"
    " AND e.at > due.since),"
    " step AS (SELECT job_id, sum(sum_seconds) / nullif(sum(timed), 0) AS s FROM job_metric_sums"
    " GROUP BY job_id)"
    " INSERT INTO cluster_history (gpus_total, gpus_allocated, gpus_busy, queue_length,"
    " jobs_running, wait_pending_s, jobs_started, wait_started_s)"
    " SELECT (SELECT gpus FROM cluster_up WHERE id = 1),"
    " (SELECT count(*) FROM (SELECT DISTINCT node_id, gpu_idx FROM allocations) x),"
    " (SELECT count(*) FROM (SELECT DISTINCT a.node_id, a.gpu_idx FROM allocations a"
    " JOIN job_last_report l ON l.job_id = a.job_id LEFT JOIN step ON step.job_id = a.job_id"
    " WHERE l.at > now() - greatest($2::float8, 3 * step.s) * interval '1 second') x),"
    " (SELECT count(*) FROM jobs WHERE state = 'PENDING'),"
    " (SELECT count(*) FROM jobs WHERE state = 'RUNNING'),"
    " (SELECT avg(extract(epoch FROM now() - " QUEUED_AT("j.id", "") ")) FROM jobs j"
    " WHERE j.state = 'PENDING'),"
    " starts.n, starts.wait FROM due, starts RETURNING id";

/* Folds the samples older than $2 seconds (whole buckets only) into rows of $1 seconds. */
static const char *const fold_sql =
    "WITH old AS (DELETE FROM cluster_history WHERE span_s < $1::float8 AND at < to_timestamp("
    "floor(extract(epoch FROM now() - " SECONDS(
        "$2") ")::float8 / $1::float8) * $1::float8)"
              " RETURNING *)"
              " INSERT INTO cluster_history (at, span_s, samples, gpus_total, gpus_allocated, "
              "gpus_busy,"
              " queue_length, jobs_running, wait_pending_s, jobs_started, wait_started_s)"
              " SELECT to_timestamp(floor(extract(epoch FROM at)::float8 / $1::float8) * "
              "$1::float8),"
              " $1::float8, sum(samples), avg(gpus_total), avg(gpus_allocated), avg(gpus_busy),"
              " avg(queue_length), avg(jobs_running), avg(wait_pending_s), sum(jobs_started),"
              " sum(wait_started_s * jobs_started) / nullif(sum(jobs_started), 0)"
              " FROM old GROUP BY 1";

/* Folds the old samples and drops the rows past keeping. Returns 0 or -1. */
static int compact(PGconn *c, char *err, size_t errlen)
{
    char bucket[24], raw[24], keep[24];
    snprintf(bucket, sizeof(bucket), "%d", HISTORY_BUCKET_S);
    snprintf(raw, sizeof(raw), "%d", HISTORY_RAW_S);
    snprintf(keep, sizeof(keep), "%d", HISTORY_KEEP_S);
    const char *f[] = {bucket, raw};
    if (db_command_params(c, fold_sql, 2, f) < 0)
        return db_fail(err, errlen, "history", "folding old samples", c);
    const char *k[] = {keep};
    if (db_command_params(c, "DELETE FROM cluster_history WHERE at < now() - " SECONDS("$1"), 1,
                          k) < 0)
        return db_fail(err, errlen, "history", "dropping old rows", c);
    return 0;
}

int history_tick(PGconn *c, char *err, size_t errlen)
{
    /* Not due when this server added the newest sample itself, less than DUE_SHARE of a
     * period ago: the statement is not even sent. It runs after every round, and in a burst
     * of submissions (rounds several times a second) planning it cost ~1 ms each time
     * (pg_stat_statements, make bench-api) for one sample in 5 s. The scheduler thread's
     * alone (sampler.h). */
    static double next_due;
    double now = monotime_s();
    if (now < next_due)
        return 0;
    char period[24], busy[24];
    snprintf(period, sizeof(period), "%d", HISTORY_PERIOD_S);
    snprintf(busy, sizeof(busy), "%d", HISTORY_BUSY_S);
    const char *p[] = {period, busy};
    PGresult *r = db_exec(c, sample_sql, 2, p);
    if (!db_ok(r)) {
        PQclear(r);
        return db_fail(err, errlen, "history", "sampling", c);
    }
    int added = PQntuples(r) == 1;
    PQclear(r);
    if (added)
        next_due = now + DUE_SHARE * HISTORY_PERIOD_S;
    if (added && compact(c, err, errlen) < 0)
        return -1;
    return added;
}
