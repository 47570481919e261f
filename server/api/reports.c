/* reports: what workers report about their jobs and its reading: who may report, minibatch
 * metrics posted and read, a job's own state transitions, its log. */
#include "reports.h"

#include <math.h>
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
#include "nodes.h"
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

/* Which of the caller's nodes (user $2) may report for job $1, per docs/worker-protocol.md
 * "Who may report": actions from before the job last entered the queue (submission or
 * requeue) and superseded ones do not count; "recent" is a finish less than $3 s ago.
 * Columns: runs (state, metrics), hosts (log). No row: no such job. Whether a node is the
 * caller's is asked of the few nodes the job's actions and allocations name (the nodes'
 * primary key), not of a list of all the caller's nodes: one worker token for a whole
 * cluster owns them all, and hashing that list twice a post took 0.8-1.2 ms of the
 * statement's 1.3 at 512 nodes (make bench-scale), more than the reports' insert. A scalar
 * subquery, not EXISTS: the generic plan turned EXISTS (... n.id = X AND n.registered_by = $2)
 * back into a hashed scan of the caller's nodes (all 2,048 of them at 16,384 GPUs, for each
 * post); a scalar subquery can only be run as the one lookup by key. */
#define CLAIM_MINE(node)                                                                           \
    "COALESCE((SELECT n.registered_by = $2 FROM nodes n WHERE n.id = " node "), false)"
/* The claim's parts, for claim_stmt and metrics_stmt: the job (no row: no such job), its
 * actions that count, the caller's live ones, its latest launch. */
#define CLAIM_CTES                                                                                 \
    "j AS (SELECT id, COALESCE((SELECT max(e.at) FROM job_events e WHERE e.job_id = jobs.id"       \
    " AND e.to_state = 'PENDING'), '-infinity') AS queued FROM jobs WHERE id = $1),"               \
    " acts AS (SELECT a.id, a.kind, a.state, a.spec, a.finished_at, " CLAIM_MINE("a.node_id")      \
    " AS mine FROM actions a, j WHERE a.job_id = j.id AND a.created_at > j.queued"                 \
    " AND a.state <> 'superseded'),"                                                               \
    " live AS (SELECT kind FROM acts WHERE mine AND (state = 'pending'"                            \
    " OR finished_at > now() - make_interval(secs => $3::float8))),"                               \
    " launch AS (SELECT mine, spec FROM acts WHERE kind IN ('start', 'resize', 'migrate')"         \
    " ORDER BY id DESC LIMIT 1)"
#define CLAIM_RUNS                                                                                 \
    "(EXISTS (SELECT 1 FROM launch l WHERE l.mine"                                                 \
    " OR " CLAIM_MINE("(l.spec->'slots'->0->>'node_id')::bigint") ")"                              \
    " OR EXISTS (SELECT 1 FROM live WHERE kind <> 'exec'))"
#define CLAIM_HOSTS                                                                                \
    "(EXISTS (SELECT 1 FROM launch l, jsonb_array_elements(CASE WHEN jsonb_typeof("                \
    "l.spec->'slots') = 'array' THEN l.spec->'slots' ELSE '[]' END) s"                             \
    " WHERE " CLAIM_MINE("(s->>'node_id')::bigint") ")"                                            \
    " OR EXISTS (SELECT 1 FROM live)"                                                              \
    " OR EXISTS (SELECT 1 FROM allocations al WHERE al.job_id = $1"                                \
    " AND " CLAIM_MINE("al.node_id") "))"
static const struct db_stmt claim_stmt = {
    "reports_claim", "WITH " CLAIM_CTES " SELECT " CLAIM_RUNS ", " CLAIM_HOSTS " FROM j", 3, 0};

/* The claim's answer r (a row of claim_stmt or metrics_stmt, ok) for job ids, its column
 * col: 0 when the caller may, else -1 after a 404 (no row: no such job) or a 403. */
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

/* What is wrong with a metrics post's body: the field (e.g. "items[3].step") and what was
 * expected; the single post answers it as api_field_error does, the node's batch names the
 * job entry before it. */
struct bad_field {
    char field[48];
    char what[120];
};

static int bad(struct bad_field *e, const char *field, const char *what)
{
    snprintf(e->field, sizeof(e->field), "%s", field);
    snprintf(e->what, sizeof(e->what), "%s", what);
    return -1;
}

static int bad_item(struct bad_field *e, size_t i, const char *field, const char *what)
{
    snprintf(e->field, sizeof(e->field), "items[%zu]%s%s", i, *field ? "." : "", field);
    snprintf(e->what, sizeof(e->what), "%s", what);
    return -1;
}

/* Each item: step >= 0, world_size >= 1, loss a number, the rest optional and typed. */
static int item_ok(const json_t *it, size_t i, struct bad_field *e)
{
    const json_t *step = json_object_get(it, "step"), *w = json_object_get(it, "world_size");
    const json_t *loss = json_object_get(it, "loss"), *s = json_object_get(it, "samples");
    const json_t *sec = json_object_get(it, "seconds"), *at = json_object_get(it, "at");
    if (!json_is_object(it))
        return bad_item(e, i, "", "expected an object");
    if (!json_is_integer(step) || json_integer_value(step) < 0)
        return bad_item(e, i, "step", "expected an integer >= 0");
    if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 1024)
        return bad_item(e, i, "world_size", "expected 1..1024");
    if (!json_is_number(loss) || !isfinite(json_number_value(loss)))
        return bad_item(e, i, "loss", "expected a finite number");
    if (s && !json_is_integer(s))
        return bad_item(e, i, "samples", "expected an integer");
    if (sec && !json_is_number(sec))
        return bad_item(e, i, "seconds", "expected a number");
    if (at && (!json_is_string(at) || json_string_length(at) > 40))
        return bad_item(e, i, "at", "expected an RFC 3339 time");
    return 0;
}

/* Stores the post's reports (and the job's total and statistics) when the caller may. */
struct metrics_extra {
    long long total; /* 0: not said */
    int grad;        /* 1: sqr, var said */
    double sqr, var;
    int ckpt;        /* 1: ckpt_step (and ckpt_at, NULL: now) said */
    long long ckpt_step;
    const char *ckpt_at;
    long long fits;  /* max_local_batch: what the job fits in one GPU (0: not said) */
};

/* The body of one job's post, checked into items and x (which point into body): 0, or -1
 * with e. "total_steps" is the job's TOTAL through its worker; "max_local_batch" its last
 * FITS record (the most examples one rank fits on its GPU); "grad" ({"sqr", "var"}) its last
 * GRAD record; "checkpoint" ({"step", "at"}) its last checkpoint, libringjob's
 * ringjob_checkpoint_saved or _done (the time is checked by the statement). */
static int post_ok(const json_t *body, const json_t **items, struct metrics_extra *x,
                   struct bad_field *e)
{
    memset(x, 0, sizeof(*x));
    *items = json_object_get(body, "items");
    if (!json_is_array(*items) || json_array_size(*items) > REPORTS_METRICS_MAX) {
        char what[80];
        snprintf(what, sizeof(what), "expected an array of at most %d reports",
                 REPORTS_METRICS_MAX);
        return bad(e, "items", what);
    }
    for (size_t i = 0; i < json_array_size(*items); i++)
        if (item_ok(json_array_get(*items, i), i, e) < 0)
            return -1;
    const json_t *v = json_object_get(body, "total_steps");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return bad(e, "total_steps", "expected an integer >= 1");
        x->total = json_integer_value(v);
    }
    v = json_object_get(body, "max_local_batch");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > REPORTS_FITS_MAX)
            return bad(e, "max_local_batch", "expected an integer 1..1000000");
        x->fits = json_integer_value(v);
    }
    const json_t *g = json_object_get(body, "grad");
    if (g && !json_is_null(g)) {
        const json_t *sq = json_object_get(g, "sqr"), *va = json_object_get(g, "var");
        if (!json_is_object(g) || json_object_size(g) != 2 || !json_is_number(sq) ||
            !json_is_number(va))
            return bad(e, "grad", "expected {\"sqr\": number, \"var\": number}");
        x->sqr = json_number_value(sq);
        x->var = json_number_value(va);
        if (!isfinite(x->sqr) || !isfinite(x->var) || x->sqr < 0 || x->var < 0 ||
            !(x->sqr + x->var > 0))
            return bad(e, "grad", "expected finite sqr and var >= 0, not both 0");
        x->grad = 1;
    }
    const json_t *c = json_object_get(body, "checkpoint");
    if (c && !json_is_null(c)) {
        const json_t *cs = json_object_get(c, "step"), *t = json_object_get(c, "at");
        if (!json_is_object(c) || !json_is_integer(cs) || json_integer_value(cs) < 0 ||
            (t && (!json_is_string(t) || json_string_length(t) > 40)) ||
            json_object_size(c) != 1u + (t != NULL))
            return bad(e, "checkpoint",
                       "expected {\"step\": integer >= 0, \"at\": RFC 3339 time}");
        x->ckpt = 1;
        x->ckpt_step = json_integer_value(cs);
        x->ckpt_at = t ? json_string_value(t) : NULL;
    }
    return 0;
}

/* A metrics post in one statement (one round trip after the token's, where there were up
 * to four: the claim, the total, the gradient statistics, the insert; at 512 nodes the
 * reports are most of a head node's requests, and each round trip a wait for a CPU). $1
 * the job, $2 the caller, $3 REPORTS_LATE_S, $4 whether the caller may report for any job
 * (an admin), $5 the job's total steps (0: not said), $6 and $7 its gradient statistics
 * (NULL: not said), $8 the items, $9 and $10 the step and time of its last checkpoint (NULL:
 * not said; a time after the database's now() is taken as now). One row, or none for no such
 * job: whether the caller may report (CLAIM_RUNS), and the reports stored (none when it may
 * not). The job's total, statistics and checkpoint are kept in the same statement (one
 * UPDATE: a statement changes a row once). The job's last report and running sums follow from
 * the insert's triggers (sql/005, 022). */
static const struct db_stmt metrics_stmt = {
    "reports_metrics",
    "WITH " CLAIM_CTES ", ok AS (SELECT $4::bool OR " CLAIM_RUNS " AS ok FROM j),"
    " up AS (UPDATE jobs SET reported_total_steps = CASE WHEN $5::bigint > 0 THEN $5::bigint"
    " ELSE reported_total_steps END, grad_sqr = COALESCE($6::float8, grad_sqr),"
    " grad_var = COALESCE($7::float8, grad_var),"
    " grad_at = CASE WHEN $6::float8 IS NULL THEN grad_at ELSE now() END,"
    " checkpoint_step = COALESCE($9::bigint, checkpoint_step),"
    " checkpoint_at = CASE WHEN $9::bigint IS NULL THEN checkpoint_at"
    " ELSE least(COALESCE($10::timestamptz, now()), now()) END"
    " WHERE id = $1 AND (SELECT ok FROM ok) AND (($5::bigint > 0"
    " AND reported_total_steps IS DISTINCT FROM $5::bigint) OR $6::float8 IS NOT NULL"
    " OR $9::bigint IS NOT NULL)),"
    " pl AS (SELECT * FROM job_placement_link($1::bigint)),"
    " ins AS (INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds, at,"
    " gpu_model, nodes, link) SELECT $1, m.step, m.world_size, m.loss, m.samples, m.seconds,"
    " COALESCE(m.at, now()), COALESCE((SELECT min(g.model) FROM allocations a JOIN node_gpus"
    " g ON g.node_id = a.node_id AND g.idx = a.gpu_idx WHERE a.job_id = $1::bigint), ''),"
    " LEAST(pl.nodes, GREATEST(m.world_size, 1)), CASE WHEN m.world_size > 1 THEN pl.link"
    " ELSE 0 END FROM jsonb_to_recordset($8::jsonb) AS m(step bigint, world_size int,"
    " loss float8, samples bigint, seconds float8, at timestamptz), pl WHERE (SELECT ok FROM ok)"
    " ON CONFLICT DO NOTHING RETURNING 1)"
    " SELECT ok, (SELECT count(*) FROM ins) FROM ok",
    10, 0};

/* What the job said fits in one GPU ($2, its FITS record), kept for the GPU model it holds
 * (sql/049), after a metrics post that may report for it: a statement of its own, sent only
 * with a post that says it (once a launch), so that the hot path of every other post does not
 * carry it (make bench-scale: a data-modifying CTE is run for every post, said or not). */
static const char *const fits_sql =
    "INSERT INTO job_fits (job_id, gpu_model, max_local) SELECT $1::bigint, min(g.model), $2::int"
    " FROM allocations a JOIN node_gpus g ON g.node_id = a.node_id AND g.idx = a.gpu_idx"
    " WHERE a.job_id = $1::bigint HAVING min(g.model) <> ''"
    " ON CONFLICT (job_id, gpu_model) DO UPDATE SET max_local = EXCLUDED.max_local, at = now()";


/* Stores one job's post when the caller may: returns 200 with *stored, 404 (no such job), 403
 * (not the caller's to report) or 400 (a value out of range) with detail, or -1 with *dberr
 * (a failed statement, for api_db_error; the caller clears it). */
static int store_one(struct api_call *call, long long job, const json_t *items,
                     const struct metrics_extra *x, long long *stored, char *detail, size_t dlen,
                     PGresult **dberr)
{
    char ids[24], uid[24], late[24], tot[24], s[32], v[32], cs[24], fit[24];
    *dberr = NULL;
    snprintf(ids, sizeof(ids), "%lld", job);
    snprintf(uid, sizeof(uid), "%lld", call->who.id);
    snprintf(late, sizeof(late), "%d", REPORTS_LATE_S);
    snprintf(tot, sizeof(tot), "%lld", x->total);
    snprintf(s, sizeof(s), "%.17g", x->sqr);
    snprintf(v, sizeof(v), "%.17g", x->var);
    snprintf(cs, sizeof(cs), "%lld", x->ckpt_step);
    char *text = json_dumps(items, JSON_COMPACT);
    if (!text) /* before the statement, which would keep the total and statistics */
        return snprintf(detail, dlen, "out of memory"), 500;
    const char *p[] = {ids, uid, late, call->who.role == AUTH_ADMIN ? "t" : "f", tot,
                       x->grad > 0 ? s : NULL, x->grad > 0 ? v : NULL, text,
                       x->ckpt > 0 ? cs : NULL, x->ckpt > 0 ? x->ckpt_at : NULL};
    PGresult *r = db_exec_stmt(call->db, &metrics_stmt, p);
    free(text);
    const char *st = db_sqlstate(r);
    int status = 200;
    if (db_ok(r) && PQntuples(r) != 1) {
        status = 404;
        snprintf(detail, dlen, "no job %s", ids);
    } else if (db_ok(r) && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        status = 403;
        snprintf(detail, dlen,
                 "job %s does not run on a node of worker %s (a worker reports only the jobs"
                 " it runs, hosts or has an action of)",
                 ids, call->who.name);
    } else if (db_ok(r)) {
        *stored = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        if (x->fits > 0) {
            snprintf(fit, sizeof(fit), "%lld", x->fits);
            const char *fp[] = {ids, fit};
            if (db_command_params(call->db, fits_sql, 2, fp) < 0)
                log_warn("job %s: its fit of %s a GPU not kept: %s", ids, fit,
                         PQerrorMessage(call->db));
        }
    } else if (strcmp(st, "23503") == 0) {
        status = 404;
        snprintf(detail, dlen, "no job %s", ids);
    } else if (strncmp(st, "22", 2) == 0) {
        status = 400;
        snprintf(detail, dlen, "items or checkpoint: a value out of range (an 'at' not a time?)");
    } else {
        *dberr = r;
        return -1;
    }
    PQclear(r);
    return status;
}

void reports_metrics_post(struct api_call *call)
{
    long long id, stored = 0;
    json_t *body;
    const json_t *items;
    struct metrics_extra x;
    struct bad_field e;
    char detail[256];
    PGresult *dberr;
    if (api_id_or_respond(call, "job", &id) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    if (post_ok(body, &items, &x, &e) < 0) {
        api_field_error(call, e.field, e.what);
    } else {
        int st = store_one(call, id, items, &x, &stored, detail, sizeof(detail), &dberr);
        if (st == 200)
            api_respond_json(call, 200,
                             json_pack("{s:I, s:I}", "received",
                                       (json_int_t)json_array_size(items), "stored",
                                       (json_int_t)stored));
        else if (st > 0)
            http_problem(call->req, st, "%s", detail);
        else {
            api_db_error(call, dberr);
            PQclear(dberr);
        }
    }
    json_decref(body);
}

void reports_node_metrics_post(struct api_call *call)
{
    long long node;
    json_t *body;
    struct bad_field e;
    if (api_id_or_respond(call, "node", &node) < 0 || nodes_owned_or_respond(call, node) < 0 ||
        api_body_or_respond(call, &body) < 0)
        return;
    const json_t *jobs = json_object_get(body, "jobs");
    size_t n = json_array_size(jobs);
    if (!json_is_array(jobs) || n > REPORTS_NODE_JOBS_MAX) {
        char what[80];
        snprintf(what, sizeof(what), "expected an array of at most %d job entries",
                 REPORTS_NODE_JOBS_MAX);
        api_field_error(call, "jobs", what);
        json_decref(body);
        return;
    }
    /* Every entry is checked before any is stored: a bad one answers 400 and stores nothing. */
    const json_t *items[REPORTS_NODE_JOBS_MAX];
    struct metrics_extra x[REPORTS_NODE_JOBS_MAX];
    long long ids[REPORTS_NODE_JOBS_MAX];
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *entry = json_array_get(jobs, i), *id = json_object_get(entry, "job_id");
        char field[64];
        if (!json_is_integer(id) || json_integer_value(id) < 1) {
            snprintf(field, sizeof(field), "jobs[%zu].job_id", i);
            api_field_error(call, field, "expected an integer >= 1");
            json_decref(body);
            return;
        }
        ids[i] = json_integer_value(id);
        if (post_ok(entry, &items[i], &x[i], &e) < 0) {
            snprintf(field, sizeof(field), "jobs[%zu].%.40s", i, e.field);
            api_field_error(call, field, e.what);
            json_decref(body);
            return;
        }
        total += json_array_size(items[i]);
    }
    if (total > REPORTS_NODE_ITEMS_MAX) {
        char what[80];
        snprintf(what, sizeof(what), "at most %d reports in all", REPORTS_NODE_ITEMS_MAX);
        api_field_error(call, "jobs", what);
        json_decref(body);
        return;
    }
    /* Each entry in a statement of its own, as its own post would be: in one transaction, the
     * entries' locks (the jobs' rows, their running sums) were held across the post and the
     * rounds' writes waited on them (make bench-scale, 512 nodes: node posts p99 422 -> 974 ms,
     * round p50 174 -> 256 ms). */
    json_t *out = json_array();
    for (size_t i = 0; i < n && out; i++) {
        long long stored = 0;
        char detail[256];
        PGresult *dberr;
        int st = store_one(call, ids[i], items[i], &x[i], &stored, detail, sizeof(detail), &dberr);
        if (st < 0) { /* the database is not there: the worker sends the whole post again */
            api_db_error(call, dberr);
            PQclear(dberr);
            json_decref(out);
            json_decref(body);
            return;
        }
        json_array_append_new(
            out, st == 200 ? json_pack("{s:I, s:i, s:I, s:I}", "job_id", (json_int_t)ids[i],
                                       "status", 200, "received",
                                       (json_int_t)json_array_size(items[i]), "stored",
                                       (json_int_t)stored)
                           : json_pack("{s:I, s:i, s:s}", "job_id", (json_int_t)ids[i], "status",
                                       st, "detail", detail));
    }
    if (out)
        api_respond_json(call, 200, json_pack("{s:o}", "jobs", out));
    else
        http_problem(call->req, 500, "out of memory");
    json_decref(body);
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
                " ORDER BY m.step, m.world_size) FROM (SELECT * FROM job_metrics"
                " WHERE job_id = j.id AND step > $2 ORDER BY step, world_size LIMIT $3) m),"
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
