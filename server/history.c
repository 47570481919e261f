#include "history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "db.h"
#include "etag.h"
#include "http.h"
#include "problem.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define SECONDS(p) "(" p "::float8 * interval '1 second')"

/* The time a job last entered the queue (its submission, or a return after its node died). */
#define QUEUED_AT(job, before)                                                                     \
    "COALESCE((SELECT max(q.at) FROM job_events q WHERE q.job_id = " job                           \
    " AND q.to_state = 'PENDING'" before "), j.submitted_at)"

/* $1 the period, $2 the busy window. Inserts nothing when the newest sample is too recent. */
static const char *const sample_sql =
    "WITH prev AS (SELECT max(at) AS at FROM cluster_history WHERE span_s = 0),"
    " due AS (SELECT COALESCE(prev.at, now() - " SECONDS("$1") ") AS since FROM prev"
    " WHERE prev.at IS NULL OR prev.at <= now() - 0.9 * " SECONDS("$1") "),"
    " starts AS (SELECT count(*) AS n, avg(extract(epoch FROM e.at - " QUEUED_AT(
        "e.job_id", " AND q.id < e.id") ")) AS wait FROM due, job_events e JOIN jobs j"
    " ON j.id = e.job_id WHERE e.from_state = 'PENDING' AND e.to_state = 'STARTING'"
    " AND e.at > due.since)"
    " INSERT INTO cluster_history (gpus_total, gpus_allocated, gpus_busy, queue_length,"
    " jobs_running, wait_pending_s, jobs_started, wait_started_s)"
    " SELECT (SELECT count(*) FROM node_gpus g JOIN nodes n ON n.id = g.node_id"
    " WHERE n.state = 'UP'),"
    " (SELECT count(DISTINCT (node_id, gpu_idx)) FROM allocations),"
    " (SELECT count(DISTINCT (a.node_id, a.gpu_idx)) FROM allocations a JOIN job_last_report l"
    " ON l.job_id = a.job_id WHERE l.at > now() - greatest($2::float8, 3 * (SELECT"
    " sum(s.sum_seconds) / nullif(sum(s.timed), 0) FROM job_metric_sums s"
    " WHERE s.job_id = a.job_id)) * interval '1 second'),"
    " (SELECT count(*) FROM jobs WHERE state = 'PENDING'),"
    " (SELECT count(*) FROM jobs WHERE state = 'RUNNING'),"
    " (SELECT avg(extract(epoch FROM now() - " QUEUED_AT("j.id", "") ")) FROM jobs j"
    " WHERE j.state = 'PENDING'),"
    " starts.n, starts.wait FROM due, starts RETURNING id";

/* Folds the samples older than $2 seconds (whole buckets only) into rows of $1 seconds. */
static const char *const fold_sql =
    "WITH old AS (DELETE FROM cluster_history WHERE span_s < $1::float8 AND at < to_timestamp("
    "floor(extract(epoch FROM now() - " SECONDS("$2") ")::float8 / $1::float8) * $1::float8)"
    " RETURNING *)"
    " INSERT INTO cluster_history (at, span_s, samples, gpus_total, gpus_allocated, gpus_busy,"
    " queue_length, jobs_running, wait_pending_s, jobs_started, wait_started_s)"
    " SELECT to_timestamp(floor(extract(epoch FROM at)::float8 / $1::float8) * $1::float8),"
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

/* $1 since (or NULL), $2 limit + 1, $3 step (0: the rows as stored). Averages weigh each
 * row by its samples. */
#define WEIGHED(col) "sum(" col " * samples) / nullif(sum(samples) FILTER (WHERE " col            \
                     " IS NOT NULL), 0)"
static const char *const query_sql =
    "SELECT " TS("t") ", span, n, gt, ga, gb, ql, jr, wp, js, ws FROM (SELECT"
    " CASE WHEN $3::float8 > 0 THEN to_timestamp(floor(extract(epoch FROM min(at))::float8"
    " / $3::float8) * $3::float8) ELSE min(at) END AS t,"
    " CASE WHEN $3::float8 > 0 THEN greatest($3::float8, max(span_s)) ELSE max(span_s) END"
    " AS span, sum(samples) AS n, " WEIGHED("gpus_total") " AS gt, " WEIGHED(
        "gpus_allocated") " AS ga, " WEIGHED("gpus_busy") " AS gb, " WEIGHED("queue_length")
    " AS ql, " WEIGHED("jobs_running") " AS jr, " WEIGHED("wait_pending_s") " AS wp,"
    " sum(jobs_started) AS js, sum(wait_started_s * jobs_started) / nullif(sum(jobs_started), 0)"
    " AS ws FROM cluster_history WHERE ($1::timestamptz IS NULL OR at > $1::timestamptz)"
    " GROUP BY CASE WHEN $3::float8 > 0 THEN floor(extract(epoch FROM at)::float8"
    " / $3::float8) ELSE id END ORDER BY 1 DESC LIMIT $2) x ORDER BY t";

enum { H_AT, H_SPAN, H_SAMPLES, H_TOTAL, H_ALLOC, H_BUSY, H_QUEUE, H_RUNNING, H_WAITP, H_STARTED,
       H_WAITS };

/* Cell c of row i as a JSON number rounded to milliunits, or null. */
static json_t *num(const PGresult *r, int i, int c)
{
    if (PQgetisnull(r, i, c))
        return json_null();
    return json_real(round(strtod(PQgetvalue(r, i, c), NULL) * 1000) / 1000);
}

static json_t *row_json(const PGresult *r, int i)
{
    return json_pack("{s:s, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o}", "at",
                     PQgetvalue(r, i, H_AT), "span_s", num(r, i, H_SPAN), "samples",
                     (json_int_t)strtoll(PQgetvalue(r, i, H_SAMPLES), NULL, 10), "gpus_total",
                     num(r, i, H_TOTAL), "gpus_allocated", num(r, i, H_ALLOC), "gpus_busy",
                     num(r, i, H_BUSY), "queue_length", num(r, i, H_QUEUE), "jobs_running",
                     num(r, i, H_RUNNING), "wait_pending_s", num(r, i, H_WAITP), "jobs_started",
                     (json_int_t)strtoll(PQgetvalue(r, i, H_STARTED), NULL, 10), "wait_started_s",
                     num(r, i, H_WAITS));
}

static int bad_param(struct api_call *call, const char *field, const char *expected,
                     const char *got)
{
    problem_send(call->req, 400, json_pack("[{s:s, s:s}]", "field", field, "detail", expected),
                 NULL, "%s: %s, got '%.40s'", field, expected, got);
    return -1;
}

/* A whole number in lo..hi from the query argument name (def when absent). */
static int count_or_respond(struct api_call *call, const char *name, long lo, long hi, long def,
                            long *out, const char *expected)
{
    const char *s = http_req_query(call->req, name);
    char *end = NULL;
    *out = def;
    if (!s)
        return 0;
    if (strlen(s) > 9 || s[0] < '0' || s[0] > '9' || (*out = strtol(s, &end, 10)) < lo ||
        *out > hi || *end)
        return bad_param(call, name, expected, s);
    return 0;
}

/* since= is left to PostgreSQL to read, after a check of its characters. */
static int since_or_respond(struct api_call *call, const char **since)
{
    const char *s = http_req_query(call->req, "since");
    *since = s;
    if (s && (strlen(s) < 4 || strlen(s) > 40 || strspn(s, "0123456789-:.+TtZz ") != strlen(s)))
        return bad_param(call, "since", "expected an ISO 8601 time", s);
    return 0;
}

static void respond_rows(struct api_call *call, const PGresult *r, long limit, long step)
{
    int n = PQntuples(r), first = n > limit ? n - (int)limit : 0;
    json_t *items = json_array();
    for (int i = first; i < n; i++)
        json_array_append_new(items, row_json(r, i));
    etag_respond_json(call, json_pack("{s:o, s:b, s:i, s:i, s:i}", "items", items, "more",
                                      first > 0, "period_s", HISTORY_PERIOD_S, "busy_window_s",
                                      HISTORY_BUSY_S, "step_s", (int)step));
}

void history_get(struct api_call *call)
{
    const char *since;
    long limit, step;
    if (since_or_respond(call, &since) < 0 ||
        count_or_respond(call, "limit", 1, HISTORY_LIMIT_MAX, HISTORY_LIMIT_DEFAULT, &limit,
                         "expected 1..10000") < 0 ||
        count_or_respond(call, "step", 0, HISTORY_STEP_MAX, 0, &step, "expected 0..86400") < 0)
        return;
    char lim[24], st[24];
    snprintf(lim, sizeof(lim), "%ld", limit + 1);
    snprintf(st, sizeof(st), "%ld", step);
    const char *p[] = {since, lim, st};
    PGresult *r = db_exec(call->db, query_sql, 3, p);
    if (!db_ok(r) && strncmp(db_sqlstate(r), "22", 2) == 0)
        bad_param(call, "since", "expected an ISO 8601 time", since ? since : "");
    else if (!db_ok(r))
        api_db_error(call, r);
    else
        respond_rows(call, r, limit, step);
    PQclear(r);
}
