/* reports_metrics: the minibatch reports workers post, a job's (POST /api/v1/jobs/{id}/metrics)
 * and a node's for all its jobs (POST /api/v1/nodes/{id}/metrics): checked, claimed and stored
 * with the job's total, gradient statistics, checkpoint and fit. Reading them is reports.c's. */
#include "reports.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "claim_sql.h"
#include "http/http.h"
#include "http/problem.h"
#include "log.h"
#include "nodes.h"
#include "store/db.h"

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

/* What the job said fits in one GPU ($2, its FITS record), kept for the GPU model it holds
 * (sql/049), after a metrics post that may report for it: a statement of its own, sent only
 * with a post that says it (once a launch), so that the hot path of every other post does not
 * carry it (make bench-scale: a data-modifying CTE is run for every post, said or not). */
static const char *const fits_sql =
    "INSERT INTO job_fits (job_id, gpu_model, max_local) SELECT $1::bigint, min(g.model), $2::int"
    " FROM allocations a JOIN node_gpus g ON g.node_id = a.node_id AND g.idx = a.gpu_idx"
    " WHERE a.job_id = $1::bigint HAVING min(g.model) <> ''"
    " ON CONFLICT (job_id, gpu_model) DO UPDATE SET max_local = EXCLUDED.max_local, at = now()";


/* Keeps what job said fits in one GPU (fits_sql); a failure is logged, the post stands. */
static void keep_fits(struct api_call *call, long long job, long long fits)
{
    char ids[24], fit[24];
    snprintf(ids, sizeof(ids), "%lld", job);
    snprintf(fit, sizeof(fit), "%lld", fits);
    const char *fp[] = {ids, fit};
    if (db_command_params(call->db, fits_sql, 2, fp) < 0)
        log_warn("job %s: its fit of %s a GPU not kept: %s", ids, fit, PQerrorMessage(call->db));
}

/* Every metrics post in one statement: a node's over all its entries (where each entry's own
 * statement was a round trip and an executor start of its own; make bench-scale: the node
 * post is the server's most frequent write), a job's as a node post of one entry. $1 whether
 * the caller may report for any job (an admin), $2 the caller, $3 REPORTS_LATE_S, $4 the
 * entries: [{ord, job_id, total (0: not said), sqr, var (null: not said), ckpt_step, ckpt_at
 * (null: not said; a time after the database's now() is taken as now), items}], one per job,
 * in job order (the rows each entry locks, its job's running sums and last report, are then
 * taken in one order by every node's post). Each entry is claimed by CLAIM_RUNS. One row per
 * entry, in ord: found (no: no such job), ok (whether the caller may report for it), stored.
 * A job's total, statistics and checkpoint are kept by one UPDATE (a statement changes a row
 * once); its last report and running sums follow from the insert's triggers (sql/005, 022).
 * Each report is stored with its job's latest launch (start, resize or migrate; 0: none): a
 * report sent again is the same (step, world size) of the same launch and is not stored
 * twice, while the steps a restarted job redoes from its checkpoint are new reports of a new
 * launch (sql/053), which its progress and the ledger's redone steps count.
 * The locks are held for this statement only, not across several (the one-transaction
 * variant held them while the rounds waited). */
static const struct db_stmt node_metrics_stmt = {
    "reports_node_metrics",
    "WITH ne AS (SELECT * FROM jsonb_to_recordset($4::jsonb) AS ne(ord int, job_id bigint,"
    " total bigint, sqr float8, var float8, ckpt_step bigint, ckpt_at timestamptz, items jsonb)),"
    " c AS (SELECT ne.*, COALESCE(cl.found, false) AS found, COALESCE(cl.ok, false) AS ok,"
    " COALESCE(cl.launch, 0) AS launch"
    " FROM ne LEFT JOIN LATERAL (WITH " CLAIM_CTES_OF("ne.job_id")
    " SELECT true AS found, $1::bool OR " CLAIM_RUNS " AS ok,"
    " COALESCE((SELECT id FROM launch), 0) AS launch FROM j) cl ON true),"
    " up AS (UPDATE jobs SET reported_total_steps = CASE WHEN c.total > 0 THEN c.total"
    " ELSE reported_total_steps END, grad_sqr = COALESCE(c.sqr, grad_sqr),"
    " grad_var = COALESCE(c.var, grad_var),"
    " grad_at = CASE WHEN c.sqr IS NULL THEN grad_at ELSE now() END,"
    " checkpoint_step = COALESCE(c.ckpt_step, checkpoint_step),"
    " checkpoint_at = CASE WHEN c.ckpt_step IS NULL THEN checkpoint_at"
    " ELSE least(COALESCE(c.ckpt_at, now()), now()) END"
    " FROM c WHERE jobs.id = c.job_id AND c.ok AND ((c.total > 0"
    " AND reported_total_steps IS DISTINCT FROM c.total) OR c.sqr IS NOT NULL"
    " OR c.ckpt_step IS NOT NULL)),"
    " ins AS (INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds, at,"
    " gpu_model, nodes, link, launch) SELECT c.job_id, m.step, m.world_size, m.loss, m.samples,"
    " m.seconds, COALESCE(m.at, now()), COALESCE((SELECT min(g.model) FROM allocations a"
    " JOIN node_gpus g ON g.node_id = a.node_id AND g.idx = a.gpu_idx"
    " WHERE a.job_id = c.job_id), ''),"
    " LEAST(pl.nodes, GREATEST(m.world_size, 1)), CASE WHEN m.world_size > 1 THEN pl.link"
    " ELSE 0 END, c.launch FROM c CROSS JOIN LATERAL jsonb_to_recordset(c.items) AS m(step bigint,"
    " world_size int, loss float8, samples bigint, seconds float8, at timestamptz)"
    " CROSS JOIN LATERAL job_placement_link(c.job_id) pl WHERE c.ok"
    " ON CONFLICT DO NOTHING RETURNING job_id),"
    " n AS (SELECT job_id, count(*) AS stored FROM ins GROUP BY job_id)"
    " SELECT c.ord, c.found, c.ok, COALESCE(n.stored, 0) FROM c LEFT JOIN n USING (job_id)"
    " ORDER BY c.ord",
    4, 0};

/* One node's entries, checked (reports_node_metrics_post): entry i is job ids[i]'s post. */
struct node_post {
    size_t n;
    long long ids[REPORTS_NODE_JOBS_MAX];
    const json_t *items[REPORTS_NODE_JOBS_MAX];
    struct metrics_extra x[REPORTS_NODE_JOBS_MAX];
};

static json_t *entry_answer(long long job, int status, size_t received, long long stored,
                            const char *detail)
{
    return status == 200 ? json_pack("{s:I, s:i, s:I, s:I}", "job_id", (json_int_t)job,
                                     "status", 200, "received", (json_int_t)received, "stored",
                                     (json_int_t)stored)
                         : json_pack("{s:I, s:i, s:s}", "job_id", (json_int_t)job, "status",
                                     status, "detail", detail);
}

/* The entries as node_metrics_stmt's $4, in job order; NULL when out of memory. */
static char *entries_text(const struct node_post *np)
{
    size_t order[REPORTS_NODE_JOBS_MAX];
    for (size_t i = 0; i < np->n; i++) {
        size_t k = i;
        for (; k > 0 && np->ids[order[k - 1]] > np->ids[i]; k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    json_t *a = json_array();
    for (size_t k = 0; k < np->n && a; k++) {
        size_t i = order[k];
        const struct metrics_extra *x = &np->x[i];
        json_t *e = json_pack("{s:i, s:I, s:I, s:O}", "ord", (int)i, "job_id",
                              (json_int_t)np->ids[i], "total", (json_int_t)x->total, "items",
                              np->items[i]);
        if (e && x->grad)
            json_object_set_new(e, "sqr", json_real(x->sqr)),
                json_object_set_new(e, "var", json_real(x->var));
        if (e && x->ckpt)
            json_object_set_new(e, "ckpt_step", json_integer(x->ckpt_step)),
                json_object_set_new(e, "ckpt_at", x->ckpt_at ? json_string(x->ckpt_at)
                                                             : json_null());
        if (!e || json_array_append_new(a, e) < 0) {
            json_decref(a);
            a = NULL;
        }
    }
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return text;
}

/* Every entry in one statement: the answers in entry order, or NULL with *r the failed
 * statement's result (NULL: out of memory), which the caller clears. */
static json_t *store_all(struct api_call *call, const struct node_post *np, PGresult **r)
{
    char uid[24], late[24];
    snprintf(uid, sizeof(uid), "%lld", call->who.id);
    snprintf(late, sizeof(late), "%d", REPORTS_LATE_S);
    char *text = entries_text(np);
    *r = NULL;
    if (!text)
        return NULL;
    const char *p[] = {call->who.role == AUTH_ADMIN ? "t" : "f", uid, late, text};
    PGresult *res = db_exec_stmt(call->db, &node_metrics_stmt, p);
    free(text);
    if (!db_ok(res) || (size_t)PQntuples(res) != np->n) {
        *r = res;
        return NULL;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < np->n && out; i++) {
        char detail[256] = "";
        char ids[24];
        snprintf(ids, sizeof(ids), "%lld", np->ids[i]);
        int status = 200;
        if (strcmp(PQgetvalue(res, (int)i, 1), "t") != 0)
            status = 404, snprintf(detail, sizeof(detail), "no job %s", ids);
        else if (strcmp(PQgetvalue(res, (int)i, 2), "t") != 0)
            status = 403, snprintf(detail, sizeof(detail),
                                   "job %s does not run on a node of worker %s (a worker reports"
                                   " only the jobs it runs, hosts or has an action of)",
                                   ids, call->who.name);
        else if (np->x[i].fits > 0)
            keep_fits(call, np->ids[i], np->x[i].fits);
        json_array_append_new(out, entry_answer(np->ids[i], status,
                                                json_array_size(np->items[i]),
                                                strtoll(PQgetvalue(res, (int)i, 3), NULL, 10),
                                                detail));
    }
    PQclear(res);
    return out;
}

/* Entry i of np in a statement of its own (a node post of one entry): its answer, 200 or 403
 * / 404 / 400 (a value the database refuses: an 'at' that is no time) with detail; or NULL
 * with *dberr the failed statement (NULL: out of memory), which the caller clears. */
static json_t *store_alone(struct api_call *call, const struct node_post *np, size_t i,
                           PGresult **dberr)
{
    struct node_post one = {.n = 1, .ids = {np->ids[i]}, .items = {np->items[i]},
                            .x = {np->x[i]}};
    json_t *out = store_all(call, &one, dberr);
    if (!out && *dberr && strncmp(db_sqlstate(*dberr), "22", 2) == 0) {
        PQclear(*dberr);
        *dberr = NULL;
        return entry_answer(np->ids[i], 400, json_array_size(np->items[i]), 0,
                            "items or checkpoint: a value out of range (an 'at' not a time?)");
    }
    json_t *answer = json_incref(json_array_get(out, 0));
    json_decref(out);
    return answer;
}

/* Each entry in a statement of its own, as its own post would be: where one entry's value
 * failed the statement of all (an 'at' that is no time), the others are stored and it is
 * answered 400. The answers, or NULL after the database's error was answered. */
static json_t *store_each(struct api_call *call, const struct node_post *np)
{
    json_t *out = json_array();
    for (size_t i = 0; i < np->n && out; i++) {
        PGresult *dberr = NULL;
        json_t *answer = store_alone(call, np, i, &dberr);
        if (!answer && dberr) { /* the database is not there: the worker sends it all again */
            api_db_error(call, dberr);
            PQclear(dberr);
            json_decref(out);
            return NULL;
        }
        if (!answer || json_array_append_new(out, answer) < 0) {
            json_decref(out);
            out = NULL;
        }
    }
    if (!out)
        http_problem(call->req, 500, "out of memory");
    return out;
}

void reports_metrics_post(struct api_call *call)
{
    struct node_post np = {.n = 1};
    json_t *body;
    struct bad_field e;
    if (api_id_or_respond(call, "job", &np.ids[0]) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    if (post_ok(body, &np.items[0], &np.x[0], &e) < 0) {
        api_field_error(call, e.field, e.what);
        json_decref(body);
        return;
    }
    PGresult *dberr = NULL;
    json_t *answer = store_alone(call, &np, 0, &dberr);
    const json_t *status = json_object_get(answer, "status");
    if (!answer && dberr)
        api_db_error(call, dberr);
    else if (!answer)
        http_problem(call->req, 500, "out of memory");
    else if (json_integer_value(status) == 200)
        api_respond_json(call, 200,
                         json_pack("{s:O, s:O}", "received", json_object_get(answer, "received"),
                                   "stored", json_object_get(answer, "stored")));
    else
        http_problem(call->req, (int)json_integer_value(status), "%s",
                     json_string_value(json_object_get(answer, "detail")));
    PQclear(dberr);
    json_decref(answer);
    json_decref(body);
}

/* Checks the node post's body into np: 0, or -1 with the field and what was expected. */
static int node_post_ok(const json_t *body, struct node_post *np, char *field, size_t flen,
                        char *what, size_t wlen)
{
    const json_t *jobs = json_object_get(body, "jobs");
    size_t total = 0;
    np->n = json_array_size(jobs);
    if (!json_is_array(jobs) || np->n > REPORTS_NODE_JOBS_MAX)
        return snprintf(field, flen, "jobs"),
               snprintf(what, wlen, "expected an array of at most %d job entries",
                        REPORTS_NODE_JOBS_MAX),
               -1;
    for (size_t i = 0; i < np->n; i++) {
        const json_t *entry = json_array_get(jobs, i), *id = json_object_get(entry, "job_id");
        struct bad_field e;
        if (!json_is_integer(id) || json_integer_value(id) < 1)
            return snprintf(field, flen, "jobs[%zu].job_id", i),
                   snprintf(what, wlen, "expected an integer >= 1"), -1;
        np->ids[i] = json_integer_value(id);
        for (size_t k = 0; k < i; k++)
            if (np->ids[k] == np->ids[i])
                return snprintf(field, flen, "jobs[%zu].job_id", i),
                       snprintf(what, wlen, "job %lld is jobs[%zu] already: one entry a job",
                                np->ids[i], k),
                       -1;
        if (post_ok(entry, &np->items[i], &np->x[i], &e) < 0)
            return snprintf(field, flen, "jobs[%zu].%.40s", i, e.field),
                   snprintf(what, wlen, "%s", e.what), -1;
        total += json_array_size(np->items[i]);
    }
    if (total > REPORTS_NODE_ITEMS_MAX)
        return snprintf(field, flen, "jobs"),
               snprintf(what, wlen, "at most %d reports in all", REPORTS_NODE_ITEMS_MAX), -1;
    return 0;
}

void reports_node_metrics_post(struct api_call *call)
{
    long long node;
    json_t *body;
    if (api_id_or_respond(call, "node", &node) < 0 || nodes_owned_or_respond(call, node) < 0 ||
        api_body_or_respond(call, &body) < 0)
        return;
    /* Every entry is checked before any is stored: a bad one answers 400 and stores nothing. */
    struct node_post np;
    char field[96], what[160];
    if (node_post_ok(body, &np, field, sizeof(field), what, sizeof(what)) < 0) {
        api_field_error(call, field, what);
        json_decref(body);
        return;
    }
    PGresult *r = NULL;
    json_t *out = store_all(call, &np, &r);
    const char *st = r ? db_sqlstate(r) : "";
    if (!out && r && (strncmp(st, "22", 2) == 0 || strncmp(st, "40", 2) == 0)) {
        /* a value only one entry's own statement can tell (22: an 'at' that is no time), or
         * a deadlock or serialization failure: each entry again, on its own */
        log_info("node %lld's metrics post: %s (SQLSTATE %s); its entries one by one", node,
                 PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY), st);
        PQclear(r);
        r = NULL;
        out = store_each(call, &np);
    } else if (!out && r) {
        api_db_error(call, r);
    } else if (!out) {
        http_problem(call->req, 500, "out of memory");
    }
    PQclear(r);
    if (out)
        api_respond_json(call, 200, json_pack("{s:o}", "jobs", out));
    json_decref(body);
}
