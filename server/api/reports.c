/* reports: what workers report about their jobs and its reading: who may report, the
 * minibatch metrics read (their posts are reports_metrics.c's), a job's own state
 * transitions, its log. */
#include "reports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "job_state.h"
#include "launch_failed.h"
#include "live/live.h"
#include "log.h"
#include "store/db.h"

#define LOG_READ_MAX (1 << 20)
#define DETAIL_MAX 4096

/* Parses the query argument name as an integer in lo..hi; def when absent. */
static int query_ll_or_respond(struct api_call *call, const char *name, long long lo, long long hi,
                               long long def, long long *out)
{
    const char *s = http_req_query(call->req, name);
    char *end = NULL;
    *out = def;
    if (!s)
        return 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || strlen(s) > 19 || *end || v < lo || v > hi) {
        http_send_problem(call->req, 400,
                          json_pack("[{s:s, s:s}]", "field", name, "detail", "out of range"), NULL,
                          "%s: expected %lld..%lld, got '%.40s'", name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

#include "claim_sql.h"

static const struct db_stmt claim_stmt = {
    "reports_claim", "WITH " CLAIM_CTES " SELECT " CLAIM_RUNS ", " CLAIM_HOSTS " FROM j", 3, 0};

/* The claim's answer r (a row of claim_stmt, ok) for job ids, its column col: 0 when the
 * caller may, else -1 after a 404 (no row: no such job) or a 403. */
static int claimed_or_respond(struct api_call *call, const PGresult *r, const char *ids, int col)
{
    if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %s", ids);
    else if (strcmp(PQgetvalue(r, 0, col), "t") != 0)
        http_problem(call->req, 403,
                     "job %s does not run on a node of worker %s (a worker reports only the"
                     " jobs it runs, hosts or has an action of)",
                     ids, call->who.name);
    else
        return 0;
    return -1;
}

int reports_claim_or_respond(struct api_call *call, long long job, enum reports_claim claim)
{
    char ids[24], uid[24], late[24];
    if (call->who.role == AUTH_ADMIN)
        return 0;
    snprintf(ids, sizeof(ids), "%lld", job);
    snprintf(uid, sizeof(uid), "%lld", call->who.id);
    snprintf(late, sizeof(late), "%d", REPORTS_LATE_S);
    const char *p[] = {ids, uid, late};
    PGresult *r = db_exec_stmt(call->db, &claim_stmt, p);
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else
        rc = claimed_or_respond(call, r, ids, claim == REPORTS_LOG ? 1 : 0);
    PQclear(r);
    return rc;
}

void reports_metrics_get(struct api_call *call)
{
    long long id, after, limit;
    char ids[24], a[24], l[24];
    if (api_id_or_respond(call, "job", &id) < 0 ||
        query_ll_or_respond(call, "after", -1, (long long)1 << 62, -1, &after) < 0 ||
        query_ll_or_respond(call, "limit", 1, 100000, 10000, &limit) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    snprintf(a, sizeof(a), "%lld", after);
    snprintf(l, sizeof(l), "%lld", limit);
    const char *p[] = {ids, a, l};
    PGresult *r =
        db_exec(call->db,
                "SELECT j.id, COALESCE((SELECT json_agg(json_build_object('step', m.step,"
                " 'loss', m.loss, 'world_size', m.world_size, 'samples', m.samples,"
                " 'step_time_s', m.seconds, 'time', " DB_TS("m.at") ")"
                " ORDER BY m.step, m.world_size, m.launch) FROM (SELECT * FROM job_metrics"
                " WHERE job_id = j.id AND step > $2 ORDER BY step, world_size, launch"
                " LIMIT $3) m),"
                " '[]')::text FROM jobs j WHERE j.id = $1",
                3, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %s", ids);
    else
        api_respond_json(call, 200,
                         json_pack("{s:o}", "items", json_loads(PQgetvalue(r, 0, 1), 0, NULL)));
    PQclear(r);
}

/* The event that moves from to want, or -1. */
static int event_to(enum job_state from, enum job_state want)
{
    for (int ev = 0; ev < JOB_EVENT_COUNT; ev++) {
        enum job_state to;
        if (job_state_next(from, (enum job_event)ev, &to) == 0 && to == want)
            return ev;
    }
    return -1;
}

/* How long the action that brought the job here took, from when it was written (issued) to
 * now, appended to the event's detail: on RUNNING the job's latest start, resize, migrate or
 * resume (a start that follows a migrate is timed from the migrate), on SUSPENDED its latest
 * suspend: " (resize action 12 took 3.214 s)". */
static const char *const state_sql =
    "WITH up AS (UPDATE jobs SET state = $2, updated_at = now(),"
    " finished_at = CASE WHEN $2 IN ('COMPLETED', 'FAILED', 'CANCELLED') THEN now() END"
    " WHERE id = $1 RETURNING id)"
    " INSERT INTO job_events (job_id, from_state, to_state, event, actor, detail)"
    " SELECT id, $3, $2, $4, $5, $6 || COALESCE((SELECT format(' (%s action %s took %s s)',"
    " COALESCE(f.kind, a.kind), COALESCE(f.id, a.id), round(extract(epoch FROM now() -"
    " COALESCE(f.created_at, a.created_at))::numeric, 3)) FROM actions a LEFT JOIN actions f"
    " ON f.id = (a.spec->>'follows')::bigint AND f.job_id = a.job_id"
    " WHERE a.job_id = $1 AND a.kind = ANY(CASE $2 WHEN 'RUNNING' THEN"
    " '{start,resize,migrate,resume}'::text[] WHEN 'SUSPENDED' THEN '{suspend}'::text[] END)"
    " ORDER BY a.id DESC LIMIT 1), '') FROM up";

/* In a transaction: moves job ids to want. Returns 0 (answered 200) or -1 (answered). */
static int move_job(struct api_call *call, const char *ids, const char *want_name,
                    const char *detail)
{
    const char *p[] = {ids};
    enum job_state from, want;
    PGresult *r = db_exec(call->db, "SELECT state FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
    int ev = -2;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %s", ids);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &from) < 0 ||
             job_state_parse(want_name, &want) < 0)
        http_problem(call->req, 400, "state: not a job state");
    else if (from == want)
        ev = -1;
    else if ((ev = event_to(from, want)) < 0)
        http_problem(call->req, 409, "job %s cannot move from %s to %s", ids, PQgetvalue(r, 0, 0),
                     want_name);
    char fromname[16];
    snprintf(fromname, sizeof(fromname), "%s", db_ok(r) && PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    if (ev == -1)
        return 0;
    if (ev < 0)
        return -1;
    const char *u[] = {ids, want_name, fromname, job_event_name(ev), call->who.name, detail};
    if (db_command_params(call->db, state_sql, 6, u) < 0 ||
        (want == JOB_SUSPENDED && live_slice_suspended_late(call->db, ids) < 0) ||
        db_command(call->db, "COMMIT") < 0) {
        api_db_error(call, NULL);
        return -1;
    }
    log_info("job %s: %s -> %s (%s by %s) %s", ids, fromname, want_name, u[3], u[4], detail);
    return 0;
}

void reports_state(struct api_call *call)
{
    long long id;
    json_t *body;
    char ids[24], detail[DETAIL_MAX + 32];
    if (api_id_or_respond(call, "job", &id) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *st = json_string_value(json_object_get(body, "state"));
    const json_t *d = json_object_get(body, "detail"), *ec = json_object_get(body, "exit_code");
    /* PENDING: a host of the launch says it failed there (launch_failed.h) */
    int requeue = st && !strcmp(st, "PENDING");
    if (reports_claim_or_respond(call, id, requeue ? REPORTS_LOG : REPORTS_RUNS) < 0) {
        json_decref(body);
        return;
    }
    if (!st || (d && (!json_is_string(d) || json_string_length(d) > DETAIL_MAX)) ||
        (ec && !json_is_integer(ec))) {
        http_problem(call->req, 400,
                     "expected {\"state\": STATE, \"detail\"?: text of at"
                     " most %d bytes, \"exit_code\"?: integer}",
                     DETAIL_MAX);
    } else {
        int n = snprintf(detail, sizeof(detail), "%s", d ? json_string_value(d) : "");
        if (ec)
            snprintf(detail + n, sizeof(detail) - (size_t)n, "%sexit code %lld", n ? "; " : "",
                     (long long)json_integer_value(ec));
        if (requeue)
            launch_failed_post(call, id, body, detail);
        else if (db_command(call->db, "BEGIN") < 0)
            api_db_error(call, NULL);
        else if (move_job(call, ids, st, detail) == 0)
            api_respond_json(call, 200, json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", st));
    }
    json_decref(body);
}

static char *hex_encode(const char *data, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *out = malloc(2 * len + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[(unsigned char)data[i] >> 4];
        out[2 * i + 1] = digits[(unsigned char)data[i] & 15];
    }
    out[2 * len] = '\0';
    return out;
}

/* In a transaction: the stream's size now (the job locked), or -1 after answering. */
static long long log_size_or_respond(struct api_call *call, const char *ids, const char *stream)
{
    const char *p[] = {ids, stream};
    PGresult *r = db_exec(call->db,
                          "SELECT (SELECT COALESCE(max(off + length(data)), 0) FROM job_logs"
                          " WHERE job_id = j.id AND stream = $2) FROM jobs j WHERE j.id = $1"
                          " FOR UPDATE",
                          2, p);
    long long size = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %s", ids);
    else
        size = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return size;
}

/* Stores body[skip..len) of stream at offset; answers 200 with the new size. */
static void append_log(struct api_call *call, const char *ids, const char *stream, long long off,
                       const char *body, size_t len, long long size)
{
    size_t skip = (size_t)(size - off);
    char *hex = hex_encode(body + skip, len - skip);
    char o[24];
    snprintf(o, sizeof(o), "%lld", size);
    const char *p[] = {ids, o, hex, stream};
    if (!hex) {
        http_problem(call->req, 500, "out of memory");
    } else if (db_command_params(call->db,
                                 "INSERT INTO job_logs (job_id, off, data, stream)"
                                 " VALUES ($1, $2, decode($3, 'hex'), $4)",
                                 4, p) < 0 ||
               db_command(call->db, "COMMIT") < 0) {
        api_db_error(call, NULL);
    } else {
        api_respond_json(call, 200,
                         json_pack("{s:I}", "size", (json_int_t)(size + (long long)(len - skip))));
    }
    free(hex);
}

/* stream=: up to 64 of [A-Za-z0-9._-]; "" when absent. */
static int stream_or_respond(struct api_call *call, const char **stream)
{
    const char *s = http_req_query(call->req, "stream");
    *stream = s ? s : "";
    size_t n = strlen(*stream);
    if (n <= 64 && strspn(*stream, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789._-") == n)
        return 0;
    http_problem(call->req, 400, "stream: expected up to 64 of A-Z a-z 0-9 . _ -");
    return -1;
}

void reports_log_post(struct api_call *call)
{
    long long id, off, size;
    size_t len;
    char ids[24];
    const char *stream;
    if (api_id_or_respond(call, "job", &id) < 0 ||
        query_ll_or_respond(call, "offset", 0, (long long)1 << 50, 0, &off) < 0 ||
        stream_or_respond(call, &stream) < 0 || reports_claim_or_respond(call, id, REPORTS_LOG) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *body = http_req_body(call->req, &len);
    if (db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
    } else if ((size = log_size_or_respond(call, ids, stream)) < 0) {
        return;
    } else if (off > size) {
        http_problem(call->req, 409, "offset %lld is past the log's end (%lld bytes)", off, size);
    } else if (off + (long long)len <= size) {
        api_respond_json(call, 200, json_pack("{s:I}", "size", (json_int_t)size));
    } else {
        append_log(call, ids, stream, off, body, len, size);
    }
}

static int hexval(char c)
{
    return c >= 'a' ? c - 'a' + 10 : c - '0';
}

void reports_log_get(struct api_call *call)
{
    long long id, off, limit;
    char ids[24], o[24], l[24];
    if (api_id_or_respond(call, "job", &id) < 0 ||
        query_ll_or_respond(call, "offset", 0, (long long)1 << 50, 0, &off) < 0 ||
        query_ll_or_respond(call, "limit", 1, LOG_READ_MAX, LOG_READ_MAX, &limit) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    snprintf(o, sizeof(o), "%lld", off);
    snprintf(l, sizeof(l), "%lld", limit);
    const char *p[] = {ids, o, l};
    PGresult *r = db_exec(call->db,
                          "SELECT encode(COALESCE(substring(string_agg(g.data, ''::bytea ORDER BY"
                          " g.began, g.stream, g.off) FROM $2::int + 1 FOR $3::int), ''::bytea),"
                          " 'hex'), COALESCE(sum(length(g.data)), 0) FROM jobs j LEFT JOIN"
                          " (SELECT *, min(at) OVER (PARTITION BY stream) AS began FROM job_logs"
                          " WHERE job_id = $1) g ON g.job_id = j.id WHERE j.id = $1 GROUP BY j.id",
                          3, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        http_problem(call->req, 404, "no job %s", ids);
    } else {
        const char *hex = PQgetvalue(r, 0, 0);
        size_t n = strlen(hex) / 2;
        char *text = malloc(n + 1);
        for (size_t i = 0; text && i < n; i++)
            text[i] = (char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
        const char *const hdr[] = {"X-Log-Size", PQgetvalue(r, 0, 1), NULL};
        if (text)
            http_req_respond(call->req, 200, "text/plain; charset=utf-8", text, n, hdr);
        else
            http_problem(call->req, 500, "out of memory");
        free(text);
    }
    PQclear(r);
}
