#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define SECONDS(p) "(" p "::float8 * interval '1 second')"

/* The time a job last entered the queue (its submission, or a return after its node died). */
#define QUEUED_AT(job, before)                                                                     \
    "COALESCE((SELECT max(q.at) FROM job_events q WHERE q.job_id = " job                           \
    " AND q.to_state = 'PENDING'" before "), j.submitted_at)"

/* $1 the period, $2 the busy window. Inserts nothing when the newest sample is too recent. */
static const char *const sample_sql =
    "WITH prev AS (SELECT max(at) AS at FROM cluster_history WHERE span_s = 0),"
    " due AS (SELECT COALESCE(prev.at, now() - " SECONDS(
        "$1") ") AS since FROM prev"
              " WHERE prev.at IS NULL OR prev.at <= now() - 0.9 * " SECONDS(
                  "$1") "),"
                        " starts AS (SELECT count(*) AS n, avg(extract(epoch FROM e.at "
                        "- " QUEUED_AT(
                            "e.job_id",
                            " AND q.id < e.id") ")) AS wait FROM due, job_events e JOIN jobs j"
                                                " ON j.id = e.job_id WHERE e.from_state = "
                                                "'PENDING' AND e.to_state = 'STARTING'"
                                                " AND e.at > due.since)"
                                                " INSERT INTO cluster_history (gpus_total, "
                                                "gpus_allocated, gpus_busy, queue_length,"
                                                " jobs_running, wait_pending_s, jobs_started, "
                                                "wait_started_s)"
                                                " SELECT (SELECT count(*) FROM node_gpus g JOIN "
                                                "nodes n ON n.id = g.node_id"
                                                " WHERE n.state = 'UP'),"
                                                " (SELECT count(DISTINCT (node_id, gpu_idx)) FROM "
                                                "allocations),"
                                                " (SELECT count(DISTINCT (a.node_id, a.gpu_idx)) "
                                                "FROM allocations a JOIN job_last_report l"
                                                " ON l.job_id = a.job_id WHERE l.at > now() - "
                                                "greatest($2::float8, 3 * (SELECT"
                                                " sum(s.sum_seconds) / nullif(sum(s.timed), 0) "
                                                "FROM job_metric_sums s"
                                                " WHERE s.job_id = a.job_id)) * interval '1 "
                                                "second'),"
                                                " (SELECT count(*) FROM jobs WHERE state = "
                                                "'PENDING'),"
                                                " (SELECT count(*) FROM jobs WHERE state = "
                                                "'RUNNING'),"
                                                " (SELECT avg(extract(epoch FROM now() "
                                                "- " QUEUED_AT("j.id",
                                                               "") ")) FROM jobs j"
                                                                   " WHERE j.state = 'PENDING'),"
                                                                   " starts.n, starts.wait FROM "
                                                                   "due, starts RETURNING id";

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

static int fail(char *err, size_t errlen, const char *what, PGconn *c)
{
    snprintf(err, errlen, "history: %s: %s", what, PQerrorMessage(c));
    err[strcspn(err, "\n")] = '\0';
    return -1;
}

/* Folds the old samples and drops the rows past keeping. Returns 0 or -1. */
static int compact(PGconn *c, char *err, size_t errlen)
{
    char bucket[24], raw[24], keep[24];
    snprintf(bucket, sizeof(bucket), "%d", HISTORY_BUCKET_S);
    snprintf(raw, sizeof(raw), "%d", HISTORY_RAW_S);
    snprintf(keep, sizeof(keep), "%d", HISTORY_KEEP_S);
    const char *f[] = {bucket, raw};
    if (db_command_params(c, fold_sql, 2, f) < 0)
        return fail(err, errlen, "folding old samples", c);
    const char *k[] = {keep};
    if (db_command_params(c, "DELETE FROM cluster_history WHERE at < now() - " SECONDS("$1"), 1,
                          k) < 0)
        return fail(err, errlen, "dropping old rows", c);
    return 0;
}

int history_tick(PGconn *c, char *err, size_t errlen)
{
    char period[24], busy[24];
    snprintf(period, sizeof(period), "%d", HISTORY_PERIOD_S);
    snprintf(busy, sizeof(busy), "%d", HISTORY_BUSY_S);
    const char *p[] = {period, busy};
    PGresult *r = db_exec(c, sample_sql, 2, p);
    if (!db_ok(r)) {
        PQclear(r);
        return fail(err, errlen, "sampling", c);
    }
    int added = PQntuples(r) == 1;
    PQclear(r);
    if (added && compact(c, err, errlen) < 0)
        return -1;
    return added;
}
