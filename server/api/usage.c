/* usage: GET /api/v1/reports/usage (usage.h): the GPU-time ledger summed by user, job array
 * and day. The ledger is written by the database's own triggers and the retention pass; this
 * only reads it. */
#include "usage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "store/db.h"

/* The keys a report sums by: the query's word, the column, its JSON member. */
struct usage_key {
    const char *word, *sql;
};
static const struct usage_key keys[] = {
    {"user", "us.name"},
    {"array", "u.array_id"},
    {"day", "to_char(u.day, 'YYYY-MM-DD')"},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The sums of a row, after its keys, in this order; their JSON members (seconds become
 * GPU-hours). The lost causes are grouped under "lost". */
static const char *const sums[] = {
    "allocated", "useful", "idle", "restart", "resize", "migration", "preemption", "fault",
};
#define NSUMS (sizeof(sums) / sizeof(sums[0]))
#define NLOST 5 /* the last NLOST sums are causes of loss */
#define SUMS_SQL                                                                                   \
    "sum(u.allocated_s), sum(u.useful_s), sum(u.idle_s), sum(u.lost_restart_s),"                   \
    " sum(u.lost_resize_s), sum(u.lost_migration_s), sum(u.lost_preemption_s),"                    \
    " sum(u.lost_fault_s), sum(u.steps), count(DISTINCT u.job_id)"

/* $1 since, $2 until (days, '' for the defaults), $3 the user's name or NULL: the span as
 * days, its length, the user's id, and the time up to which the ledger is complete (the
 * oldest open span's start: the retention pass closes them every 30 s). */
static const char *const span_sql =
    "SELECT to_char(d1, 'YYYY-MM-DD'), to_char(d2, 'YYYY-MM-DD'), d2 - d1,"
    " (SELECT id FROM users WHERE name = $3),"
    " " DB_TS("(SELECT COALESCE(min(since), now()) FROM job_ledger_open WHERE "
              "gpus > 0)") " FROM (SELECT COALESCE(NULLIF($1, '')::date, (now() "
                           "AT TIME ZONE 'UTC')::date - " DB_NUM(
                               USAGE_DAYS_DEFAULT) " + 1) AS d1,"
                                                   " COALESCE(NULLIF($2, "
                                                   "'')::date, (now() AT TIME "
                                                   "ZONE 'UTC')::date) AS d2) x";

struct usage_query {
    int by[NKEYS], nby; /* indexes into keys, in the order asked */
    char since[16], until[16];
    const char *user; /* NULL: all the caller may see */
};

/* by=: one to NKEYS distinct words of keys, comma-separated. */
static int by_or_respond(struct api_call *call, struct usage_query *q)
{
    const char *s = http_req_query(call->req, "by");
    const char *expected = "expected one to three of user, array, day, comma-separated";
    q->nby = 0;
    if (!s) {
        q->by[q->nby++] = 0;
        return 0;
    }
    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        size_t k = 0;
        while (k < NKEYS && !(strlen(keys[k].word) == n && strncmp(p, keys[k].word, n) == 0))
            k++;
        for (int i = 0; k < NKEYS && i < q->nby; i++)
            if (q->by[i] == (int)k)
                k = NKEYS; /* twice */
        if (k == NKEYS || q->nby == (int)NKEYS)
            return api_param_error(call, "by", expected, s);
        q->by[q->nby++] = (int)k;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* A day parameter, checked for its characters and kept as given; PostgreSQL reads it. */
static int day_or_respond(struct api_call *call, const char *name, char *out, size_t len)
{
    const char *s = http_req_query(call->req, name);
    out[0] = '\0';
    if (!s || !*s)
        return 0;
    if (strlen(s) < 8 || strlen(s) > 40 || strspn(s, "0123456789-:.+TtZz ") != strlen(s))
        return api_param_error(call, name, "expected a day (YYYY-MM-DD) or an RFC 3339 time", s);
    snprintf(out, len, "%.10s", s); /* the day of a time: its first ten characters */
    return 0;
}

static int query_or_respond(struct api_call *call, struct usage_query *q)
{
    memset(q, 0, sizeof(*q));
    if (by_or_respond(call, q) < 0 ||
        day_or_respond(call, "since", q->since, sizeof(q->since)) < 0 ||
        day_or_respond(call, "until", q->until, sizeof(q->until)) < 0)
        return -1;
    q->user = http_req_query(call->req, "user");
    if (call->who.role != AUTH_ADMIN) {
        if (q->user && strcmp(q->user, call->who.name) != 0) {
            http_send_problem(call->req, 403, NULL, NULL,
                              "user: only an admin may see another user's usage");
            return -1;
        }
        q->user = call->who.name;
    }
    return 0;
}

/* The statement for q: its keys, whether the row is the total, the sums, the steps and the
 * jobs; the rows by their keys, the total last. $1 since, $2 until, $3 the user's id or NULL
 * for all. */
static void statement(const struct usage_query *q, char *sql, size_t len)
{
    char group[128] = "";
    for (int i = 0; i < q->nby; i++) {
        size_t g = strlen(group);
        snprintf(group + g, sizeof(group) - g, "%s%s", i ? ", " : "", keys[q->by[i]].sql);
    }
    snprintf(sql, len,
             "SELECT %s, GROUPING(%s) <> 0, " SUMS_SQL
             " FROM usage_ledger u LEFT JOIN users us ON us.id = u.user_id"
             " WHERE u.day BETWEEN $1::date AND $2::date AND ($3::bigint IS NULL OR u.user_id = $3)"
             " GROUP BY GROUPING SETS ((%s), ()) ORDER BY %d, %s",
             group, group, group, q->nby + 1, group);
}

/* Seconds (cell c of row i) as GPU-hours, to a millionth. */
static json_t *hours(const PGresult *r, int i, int c)
{
    double s = PQgetisnull(r, i, c) ? 0 : strtod(PQgetvalue(r, i, c), NULL);
    return json_real(round(s / 3600 * 1e6) / 1e6);
}

/* Row i of the statement as JSON (new): its keys, its sums, "lost" by cause and in all. */
static json_t *row_json(const struct usage_query *q, const PGresult *r, int i)
{
    json_t *o = json_object(), *lost = json_object();
    for (int k = 0; k < q->nby; k++) {
        const char *v = PQgetisnull(r, i, k) ? NULL : PQgetvalue(r, i, k);
        json_t *j = !v              ? json_null()
                    : q->by[k] == 1 ? json_integer(strtoll(v, NULL, 10))
                                    : json_string(v);
        json_object_set_new(o, keys[q->by[k]].word, j);
    }
    int c0 = q->nby + 1;
    double lost_s = 0;
    for (size_t k = 0; k < NSUMS; k++) {
        json_t *h = hours(r, i, c0 + (int)k);
        if (k >= NSUMS - NLOST) {
            lost_s += json_real_value(h);
            json_object_set_new(lost, sums[k], h);
        } else {
            json_object_set_new(o, sums[k], h);
        }
    }
    json_object_set_new(lost, "total", json_real(round(lost_s * 1e6) / 1e6));
    json_object_set_new(o, "lost", lost);
    json_object_set_new(o, "steps", json_integer(strtoll(PQgetvalue(r, i, c0 + NSUMS), NULL, 10)));
    json_object_set_new(o, "jobs",
                        json_integer(strtoll(PQgetvalue(r, i, c0 + NSUMS + 1), NULL, 10)));
    return o;
}

/* The report of q over span (span_sql's row) as JSON (new), or NULL after answering. */
static json_t *report_or_respond(struct api_call *call, const struct usage_query *q,
                                 const PGresult *span)
{
    char sql[1024];
    statement(q, sql, sizeof(sql));
    const char *p[] = {PQgetvalue(span, 0, 0), PQgetvalue(span, 0, 1),
                       PQgetisnull(span, 0, 3) ? NULL : PQgetvalue(span, 0, 3)};
    PGresult *r = db_exec(call->db, sql, 3, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
        PQclear(r);
        return NULL;
    }
    json_t *items = json_array(), *total = NULL, *by = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetvalue(r, i, q->nby)[0] == 't')
            total = row_json(q, r, i);
        else
            json_array_append_new(items, row_json(q, r, i));
    }
    PQclear(r);
    for (int k = 0; k < q->nby; k++)
        json_array_append_new(by, json_string(keys[q->by[k]].word));
    return json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:o}", "since", PQgetvalue(span, 0, 0),
                     "until", PQgetvalue(span, 0, 1), "by", by, "unit", "gpu_hours", "as_of",
                     PQgetvalue(span, 0, 4), "items", items, "total", total ? total : json_null());
}

void usage_get(struct api_call *call)
{
    struct usage_query q;
    if (query_or_respond(call, &q) < 0)
        return;
    const char *p[] = {q.since, q.until, q.user};
    PGresult *span = db_exec(call->db, span_sql, 3, p);
    if (!db_ok(span) && strncmp(db_sqlstate(span), "22", 2) == 0) {
        api_param_error(call, q.since[0] ? "since" : "until", "expected a day (YYYY-MM-DD)",
                        q.since[0] ? q.since : q.until);
    } else if (!db_ok(span)) {
        api_db_error(call, span);
    } else if (strtol(PQgetvalue(span, 0, 2), NULL, 10) < 0) {
        api_param_error(call, "until", "expected a day at or after since", q.until);
    } else if (strtol(PQgetvalue(span, 0, 2), NULL, 10) >= USAGE_DAYS_MAX) {
        api_param_error(call, "since", "expected a span of at most " DB_NUM(USAGE_DAYS_MAX) " days",
                        q.since);
    } else if (q.user && PQgetisnull(span, 0, 3)) {
        http_send_problem(call->req, 404, NULL, NULL, "user: no user named '%.64s'", q.user);
    } else {
        json_t *o = report_or_respond(call, &q, span);
        if (o)
            api_respond_json(call, 200, o);
    }
    PQclear(span);
}
