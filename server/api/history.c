/* history: GET /api/v1/cluster/history: the scheduler's samples of the cluster since a time,
 * optionally averaged into buckets of step seconds, with an ETag. */
#include "history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/etag.h"
#include "http/http.h"
#include "http/problem.h"
#include "live/live.h"
#include "store/db.h"

/* $1 since (or NULL), $2 limit + 1, $3 step (0: the rows as stored). Averages weigh each
 * row by its samples. */
#define WEIGHED(col)                                                                               \
    "sum(" col " * samples) / nullif(sum(samples) FILTER (WHERE " col " IS NOT NULL), 0)"
static const char *const query_sql =
    "SELECT " DB_TS("t") ", span, n, gt, ga, gb, ql, jr, wp, js, ws FROM (SELECT"
             " CASE WHEN $3::float8 > 0 THEN to_timestamp(floor(extract(epoch FROM min(at))::float8"
             " / $3::float8) * $3::float8) ELSE min(at) END AS t,"
             " CASE WHEN $3::float8 > 0 THEN greatest($3::float8, max(span_s)) ELSE max(span_s) END"
             " AS span, sum(samples) AS n, " WEIGHED("gpus_total") " AS gt, " WEIGHED("gpus_"
                                                                                      "allocated") " AS ga, " WEIGHED("gpus_busy") " AS gb, " WEIGHED("queue_length") " AS ql, " WEIGHED(
                 "jobs_running") " AS jr, " WEIGHED("wait_pending_s") " AS wp,"
                                                                      " sum(jobs_started) AS js, "
                                                                      "sum(wait_started_s * "
                                                                      "jobs_started) / "
                                                                      "nullif(sum(jobs_started), 0)"
                                                                      " AS ws FROM cluster_history "
                                                                      "WHERE ($1::timestamptz IS "
                                                                      "NULL OR at > "
                                                                      "$1::timestamptz)"
                                                                      " GROUP BY CASE WHEN "
                                                                      "$3::float8 > 0 THEN "
                                                                      "floor(extract(epoch FROM "
                                                                      "at)::float8"
                                                                      " / $3::float8) ELSE id END "
                                                                      "ORDER BY 1 DESC LIMIT $2) x "
                                                                      "ORDER BY t";

enum {
    H_AT,
    H_SPAN,
    H_SAMPLES,
    H_TOTAL,
    H_ALLOC,
    H_BUSY,
    H_QUEUE,
    H_RUNNING,
    H_WAITP,
    H_STARTED,
    H_WAITS
};

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
        return api_param_error(call, name, expected, s);
    return 0;
}

/* since= is left to PostgreSQL to read, after a check of its characters. */
static int since_or_respond(struct api_call *call, const char **since)
{
    const char *s = http_req_query(call->req, "since");
    *since = s;
    if (s && (strlen(s) < 4 || strlen(s) > 40 || strspn(s, "0123456789-:.+TtZz ") != strlen(s)))
        return api_param_error(call, "since", "expected an ISO 8601 time", s);
    return 0;
}

static void respond_rows(struct api_call *call, const PGresult *r, long limit, long step)
{
    int n = PQntuples(r), first = n > limit ? n - (int)limit : 0;
    json_t *items = json_array();
    for (int i = first; i < n; i++)
        json_array_append_new(items, row_json(r, i));
    etag_respond_json(call->req, json_pack("{s:o, s:b, s:i, s:i, s:i}", "items", items, "more",
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
        api_param_error(call, "since", "expected an ISO 8601 time", since ? since : "");
    else if (!db_ok(r))
        api_db_error(call, r);
    else
        respond_rows(call, r, limit, step);
    PQclear(r);
}
