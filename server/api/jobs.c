#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/etag.h"
#include "http/http.h"
#include "http/problem.h"
#include "job_state.h"
#include "jobview.h"
#include "live/live.h"
#include "log.h"
#include "spec/jobspec.h"
#include "store/db.h"

#define IDEMPOTENCY_KEY_MAX 255

/* The Idempotency-Key header: NULL when absent, else checked (1..255 printable ASCII). */
static int idempotency_key_or_respond(struct api_call *call, const char **key)
{
    const char *k = http_req_header(call->req, "Idempotency-Key");
    *key = k;
    if (!k)
        return 0;
    size_t n = strlen(k), i = 0;
    while (i < n && k[i] >= 0x21 && k[i] <= 0x7e)
        i++;
    if (n >= 1 && n <= IDEMPOTENCY_KEY_MAX && i == n)
        return 0;
    json_t *errs = json_pack("[{s:s, s:s}]", "field", "Idempotency-Key", "detail",
                             "expected 1..255 printable ASCII characters");
    http_send_problem(call->req, 400, errs, NULL,
                      "Idempotency-Key: expected 1..255 printable ASCII characters");
    return -1;
}

/* Text parameters of the insert, from spec; the caller frees the three JSON texts. */
struct insert_params {
    char uid[24], gpus[12], min[12], max[12], prio[12], batch[12];
    char *command, *env, *model, *canonical, *plans;
    char *length; /* {total_steps, epochs, stop_at_convergence, stop_at_loss}, as declared */
};

static void insert_params_free(struct insert_params *ip)
{
    free(ip->command);
    free(ip->env);
    free(ip->model);
    free(ip->canonical);
    free(ip->plans);
    free(ip->length);
}

static const char *const insert_sql =
    "WITH ins AS (INSERT INTO jobs (user_id, name, command, env, model, gpus, min_gpus,"
    " max_gpus, elastic, priority, batch_per_gpu, idempotency_key, request_hash, plan_spec,"
    " total_steps, epochs, stop_at_convergence, stop_at_loss)"
    " VALUES ($1, $2, $3::jsonb, $4::jsonb, $5::jsonb, $6, $7, $8, $9, $10, $11, $12,"
    " sha256(convert_to($13, 'UTF8')), $15::jsonb, ($16::jsonb->>'total_steps')::bigint,"
    " ($16::jsonb->>'epochs')::float8, COALESCE(($16::jsonb->>'stop_at_convergence')::bool,"
    " false), ($16::jsonb->>'stop_at_loss')::float8)"
    " ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING *),"
    " ev AS (INSERT INTO job_events (job_id, from_state, to_state, event, actor)"
    " SELECT id, NULL, 'PENDING', 'submit', $14 FROM ins)"
    " SELECT " JOB_COLS " FROM ins j JOIN users u ON u.id = j.user_id";

static const char *const existing_sql =
    "SELECT " JOB_COLS ", j.request_hash = sha256(convert_to($3, 'UTF8'))"
    " FROM jobs j JOIN users u ON u.id = j.user_id"
    " WHERE j.user_id = $1 AND j.idempotency_key = $2";

/* The job an earlier request with key made: 200, or 409 when the body differed. */
static void respond_existing(struct api_call *call, const struct insert_params *ip, const char *key)
{
    const char *p[] = {ip->uid, key, ip->canonical};
    PGresult *r = db_exec(call->db, existing_sql, 3, p);
    if (!db_ok(r) || PQntuples(r) != 1)
        api_db_error(call, r);
    else if (strcmp(PQgetvalue(r, 0, C_NCOLS), "t") != 0)
        http_problem(call->req, 409, "Idempotency-Key '%s' was used with another request", key);
    else
        api_respond_json(call, 200, jobview_json(r, 0));
    PQclear(r);
}

static void insert_job(struct api_call *call, const struct jobspec *s, struct insert_params *ip,
                       const char *key)
{
    const char *p[] = {ip->uid,       s->name,        ip->command,
                       ip->env,       ip->model,      ip->gpus,
                       ip->min,       ip->max,        s->elastic ? "true" : "false",
                       ip->prio,      ip->batch,      key,
                       ip->canonical, call->who.name, ip->plans,
                       ip->length};
    PGresult *r = db_exec(call->db, insert_sql, 16, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) == 0) {
        respond_existing(call, ip, key);
    } else {
        log_info("job %s: -> PENDING (submit by %s, %d gpus)", PQgetvalue(r, 0, C_ID),
                 call->who.name, s->gpus);
        api_respond_json(call, 201, jobview_json(r, 0));
        sched_wake_signal();
    }
    PQclear(r);
}

/* A job that can never fit the cluster registered now is refused (unless it holds): its
 * min_gpus above the GPUs of the nodes up. A cluster with no node up yet is not known, and
 * refuses nothing. Returns 0, or -1 after answering (422 with the cluster's size, or 503). */
static int fits_or_respond(struct api_call *call, const struct jobspec *s)
{
    if (s->hold)
        return 0;
    PGresult *r = db_exec(call->db,
                          "SELECT count(DISTINCT n.id), count(g.idx) FROM nodes n"
                          " JOIN node_gpus g ON g.node_id = n.id WHERE n.state = 'UP'",
                          0, NULL);
    int rc = 0;
    if (!db_ok(r) || PQntuples(r) != 1) {
        api_db_error(call, r);
        rc = -1;
    } else {
        long nodes = strtol(PQgetvalue(r, 0, 0), NULL, 10);
        long gpus = strtol(PQgetvalue(r, 0, 1), NULL, 10);
        if (nodes > 0 && s->min_gpus > gpus) {
            json_t *errs = json_pack("[{s:s, s:s}]", "field", s->elastic ? "min_gpus" : "gpus",
                                     "detail", "more GPUs than the cluster has");
            http_send_problem(call->req, 422, errs, NULL,
                              "the job needs %d GPUs; the cluster has %ld on %ld node%s up"
                              " (submit with \"hold\": true to wait for nodes still to come)",
                              s->min_gpus, gpus, nodes, nodes == 1 ? "" : "s");
            rc = -1;
        }
    }
    PQclear(r);
    return rc;
}

/* The declared length as the insert's $16 (new text; NULL on ENOMEM). */
static char *length_json(const struct jobspec *s)
{
    json_t *o = json_object();
    if (s->total_steps > 0)
        json_object_set_new(o, "total_steps", json_integer(s->total_steps));
    if (s->epochs > 0)
        json_object_set_new(o, "epochs", json_real(s->epochs));
    if (s->stop_at_convergence)
        json_object_set_new(o, "stop_at_convergence", json_true());
    if (s->has_stop_loss)
        json_object_set_new(o, "stop_at_loss", json_real(s->stop_at_loss));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

void jobs_submit(struct api_call *call)
{
    const char *key;
    json_t *body, *errors;
    struct jobspec spec;
    char detail[512];
    if (idempotency_key_or_respond(call, &key) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    if (jobspec_parse(body, &spec, &errors, detail, sizeof(detail)) < 0) {
        http_send_problem(call->req, 400, errors, NULL, "%s", detail);
        json_decref(body);
        return;
    }
    struct insert_params ip = {
        .command = json_dumps(spec.command, JSON_COMPACT),
        .env = json_dumps(spec.env, JSON_COMPACT),
        .model = spec.model ? json_dumps(spec.model, JSON_COMPACT) : NULL,
        .canonical = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS),
    };
    json_t *plans = jobspec_plans_json(&spec);
    ip.plans = plans ? json_dumps(plans, JSON_COMPACT) : NULL;
    ip.length = length_json(&spec);
    snprintf(ip.uid, sizeof(ip.uid), "%lld", call->who.id);
    snprintf(ip.gpus, sizeof(ip.gpus), "%d", spec.gpus);
    snprintf(ip.min, sizeof(ip.min), "%d", spec.min_gpus);
    snprintf(ip.max, sizeof(ip.max), "%d", spec.max_gpus);
    snprintf(ip.prio, sizeof(ip.prio), "%d", spec.priority);
    snprintf(ip.batch, sizeof(ip.batch), "%d", spec.batch_per_gpu);
    if (!ip.command || !ip.env || !ip.canonical || (spec.model && !ip.model) ||
        (plans && !ip.plans) || !ip.length)
        http_problem(call->req, 500, "out of memory");
    else if (fits_or_respond(call, &spec) == 0)
        insert_job(call, &spec, &ip, key);
    insert_params_free(&ip);
    json_decref(plans);
    jobspec_clear(&spec);
    json_decref(body);
}

void jobs_get(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) == 0)
        jobview_respond(call, id, 200, 1);
}

/* Parses limit= (1..JOBS_LIST_MAX, default 50) and after= (an id >= 0, default 0). */
static int paging_or_respond(struct api_call *call, long long *limit, long long *after)
{
    const char *l = http_req_query(call->req, "limit");
    const char *a = http_req_query(call->req, "after");
    char *end = NULL;
    *limit = JOBS_LIST_DEFAULT;
    *after = 0;
    if (l &&
        (strlen(l) > 4 || (*limit = strtoll(l, &end, 10)) < 1 || *end || *limit > JOBS_LIST_MAX)) {
        http_send_problem(call->req, 400,
                          json_pack("[{s:s, s:s}]", "field", "limit", "detail", "expected 1..1000"),
                          NULL, "limit: expected 1..%d, got '%.40s'", JOBS_LIST_MAX, l);
        return -1;
    }
    if (a && (strlen(a) > 18 || a[0] < '0' || a[0] > '9' || (*after = strtoll(a, &end, 10)) < 0 ||
              *end)) {
        http_send_problem(
            call->req, 400,
            json_pack("[{s:s, s:s}]", "field", "after", "detail", "expected a cursor from next"),
            NULL, "after: expected a cursor from next, got '%.40s'", a);
        return -1;
    }
    return 0;
}

static int filters_or_respond(struct api_call *call, const char **state, const char **user,
                              const char **prefix)
{
    enum job_state s;
    *state = http_req_query(call->req, "state");
    *user = http_req_query(call->req, "user");
    *prefix = http_req_query(call->req, "name_prefix");
    if (*prefix && strlen(*prefix) > 4 * JOBSPEC_MAX_NAME) {
        http_problem(call->req, 400, "name_prefix: longer than a job's name may be");
        return -1;
    }
    if (*state && job_state_parse(*state, &s) < 0) {
        http_send_problem(call->req, 400,
                          json_pack("[{s:s, s:s}]", "field", "state", "detail", "not a job state"),
                          NULL, "state: not a job state: '%.40s'", *state);
        return -1;
    }
    if (*user && strlen(*user) > AUTH_NAME_MAX) {
        http_problem(call->req, 400, "user: longer than %d characters", AUTH_NAME_MAX);
        return -1;
    }
    return 0;
}

void jobs_list(struct api_call *call)
{
    long long limit, after;
    const char *state, *user, *prefix;
    if (paging_or_respond(call, &limit, &after) < 0 ||
        filters_or_respond(call, &state, &user, &prefix) < 0)
        return;
    char lim[24], aft[24];
    snprintf(lim, sizeof(lim), "%lld", limit + 1);
    snprintf(aft, sizeof(aft), "%lld", after);
    const char *p[] = {state, user, aft, lim, prefix};
    PGresult *r = db_exec(call->db,
                          "SELECT " JOB_COLS " FROM jobs j JOIN users u"
                          " ON u.id = j.user_id WHERE ($1::text IS NULL OR j.state = $1)"
                          " AND ($2::text IS NULL OR u.name = $2) AND j.id > $3"
                          " AND ($5::text IS NULL OR starts_with(j.name, $5))"
                          " ORDER BY j.id LIMIT $4",
                          5, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else
        etag_respond_json(call->req, jobview_list_fields(call->db, jobview_page(r, limit)));
    PQclear(r);
}

/* Inside a transaction: locks job id and moves it by ev. Returns 0, or -1 after answering
 * (404 none, 403 not the caller's, 409 illegal). */
static int transition_or_respond(struct api_call *call, long long id, enum job_event ev)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r =
        db_exec(call->db, "SELECT state, user_id FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
    enum job_state from = JOB_PENDING, to;
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %lld", id);
    else if (call->who.role != AUTH_ADMIN && strtoll(PQgetvalue(r, 0, 1), NULL, 10) != call->who.id)
        http_problem(call->req, 403, "job %lld belongs to another user", id);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &from) < 0 || job_state_next(from, ev, &to) < 0)
        http_problem(call->req, 409, "cannot %s job %lld in state %s", job_event_name(ev), id,
                     PQgetvalue(r, 0, 0));
    else
        rc = 0;
    PQclear(r);
    if (rc < 0)
        return -1;
    const char *u[] = {ids, job_state_name(to), job_state_name(from), job_event_name(ev),
                       call->who.name};
    r = db_exec(call->db,
                "WITH up AS (UPDATE jobs SET state = $2, updated_at = now(),"
                " finished_at = CASE WHEN $2 IN ('COMPLETED', 'FAILED', 'CANCELLED')"
                " THEN now() END WHERE id = $1 RETURNING id)"
                " INSERT INTO job_events (job_id, from_state, to_state, event, actor)"
                " SELECT id, $3, $2, $4, $5 FROM up",
                5, u);
    rc = db_ok(r) && db_command(call->db, "COMMIT") == 0 ? 0 : -1;
    if (rc < 0)
        api_db_error(call, r);
    else
        log_info("job %lld: %s -> %s (%s by %s)", id, u[2], u[1], u[3], u[4]);
    PQclear(r);
    return rc;
}

void jobs_cancel(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    if (db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
        return;
    }
    if (transition_or_respond(call, id, JOB_EV_CANCEL) == 0) {
        jobview_respond(call, id, 200, 0);
        sched_wake_signal();
    } else
        db_command(call->db, "ROLLBACK");
}

static long long col_ll(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static json_t *event_json(const PGresult *r, int i)
{
    return json_pack("{s:I, s:s, s:o, s:s, s:s, s:s, s:s}", "id", (json_int_t)col_ll(r, i, 0), "at",
                     PQgetvalue(r, i, 1), "from",
                     PQgetisnull(r, i, 2) ? json_null() : json_string(PQgetvalue(r, i, 2)), "to",
                     PQgetvalue(r, i, 3), "event", PQgetvalue(r, i, 4), "actor",
                     PQgetvalue(r, i, 5), "detail", PQgetvalue(r, i, 6));
}

void jobs_events(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r =
        db_exec(call->db,
                "SELECT e.id, " TS("e.at") ", e.from_state, e.to_state,"
                                           " e.event, e.actor, e.detail, j.id FROM jobs j LEFT JOIN"
                                           " job_events e ON e.job_id = j.id WHERE j.id = $1"
                                           " ORDER BY e.id",
                1, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) == 0) {
        http_problem(call->req, 404, "no job %lld", id);
    } else {
        json_t *items = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            if (!PQgetisnull(r, i, 0))
                json_array_append_new(items, event_json(r, i));
        api_respond_json(call, 200, json_pack("{s:o}", "items", items));
    }
    PQclear(r);
}
