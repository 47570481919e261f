#include "submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
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

/* 0 when s fits a cluster of gpus GPUs on nodes nodes up (or no node is up: not known),
 * else -1 after a 422 that says the cluster's size. */
static int fits_size_or_respond(struct api_call *call, const struct jobspec *s, long nodes,
                                long gpus)
{
    if (nodes <= 0 || s->min_gpus <= gpus)
        return 0;
    json_t *errs = json_pack("[{s:s, s:s}]", "field", s->elastic ? "min_gpus" : "gpus", "detail",
                             "more GPUs than the cluster has");
    http_send_problem(call->req, 422, errs, NULL,
                      "the job needs %d GPUs; the cluster has %ld on %ld node%s up"
                      " (submit with \"hold\": true to wait for nodes still to come)",
                      s->min_gpus, gpus, nodes, nodes == 1 ? "" : "s");
    return -1;
}

/* The cluster registered now: its nodes up and their GPUs, into *nodes and *gpus. Returns 0,
 * or -1 after a 503 or 500. */
static int cluster_or_respond(struct api_call *call, long *nodes, long *gpus)
{
    PGresult *r = db_exec(call->db,
                          "SELECT count(DISTINCT n.id), count(g.idx) FROM nodes n"
                          " JOIN node_gpus g ON g.node_id = n.id WHERE n.state = 'UP'",
                          0, NULL);
    int rc = -1;
    if (!db_ok(r) || PQntuples(r) != 1) {
        api_db_error(call, r);
    } else {
        *nodes = strtol(PQgetvalue(r, 0, 0), NULL, 10);
        *gpus = strtol(PQgetvalue(r, 0, 1), NULL, 10);
        rc = 0;
    }
    PQclear(r);
    return rc;
}

/* A job that can never fit the cluster registered now is refused (unless it holds): its
 * min_gpus above the GPUs of the nodes up. A cluster with no node up yet is not known, and
 * refuses nothing. Returns 0, or -1 after answering (422 with the cluster's size, or 503). */
static int fits_or_respond(struct api_call *call, const struct jobspec *s)
{
    long nodes, gpus;
    if (s->hold)
        return 0;
    return cluster_or_respond(call, &nodes, &gpus) < 0 ? -1
                                                       : fits_size_or_respond(call, s, nodes, gpus);
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

/* Fills ip from spec (and body, whose canonical text is the request's hash). Returns 0, or
 * -1 on ENOMEM (ip then holds what to free). */
static int params_of(struct api_call *call, const struct jobspec *spec, const json_t *body,
                     struct insert_params *ip)
{
    *ip = (struct insert_params){
        .command = json_dumps(spec->command, JSON_COMPACT),
        .env = json_dumps(spec->env, JSON_COMPACT),
        .model = spec->model ? json_dumps(spec->model, JSON_COMPACT) : NULL,
        .canonical = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS),
        .length = length_json(spec),
    };
    json_t *plans = jobspec_plans_json(spec);
    ip->plans = plans ? json_dumps(plans, JSON_COMPACT) : NULL;
    snprintf(ip->uid, sizeof(ip->uid), "%lld", call->who.id);
    snprintf(ip->gpus, sizeof(ip->gpus), "%d", spec->gpus);
    snprintf(ip->min, sizeof(ip->min), "%d", spec->min_gpus);
    snprintf(ip->max, sizeof(ip->max), "%d", spec->max_gpus);
    snprintf(ip->prio, sizeof(ip->prio), "%d", spec->priority);
    snprintf(ip->batch, sizeof(ip->batch), "%d", spec->batch_per_gpu);
    int ok = ip->command && ip->env && ip->canonical && (!spec->model || ip->model) &&
             (!plans || ip->plans) && ip->length;
    json_decref(plans);
    return ok ? 0 : -1;
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
    struct insert_params ip;
    if (params_of(call, &spec, body, &ip) < 0)
        http_problem(call->req, 500, "out of memory");
    else if (fits_or_respond(call, &spec) == 0)
        insert_job(call, &spec, &ip, key);
    insert_params_free(&ip);
    jobspec_clear(&spec);
    json_decref(body);
}

/* ---- a batch: many jobs in one transaction ---- */

/* Validates every element of body's "jobs" (1..JOBS_BATCH_MAX) into specs[0..*n). Returns 0,
 * or -1 after a 400 naming each broken field as jobs[i].field. */
static int batch_or_respond(struct api_call *call, const json_t *body, struct jobspec *specs,
                            size_t *n)
{
    const char *k;
    json_t *v;
    *n = 0;
    json_object_foreach((json_t *)body, k, v)
    {
        if (strcmp(k, "jobs") != 0)
            return api_field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field");
    }
    const json_t *jobs = json_object_get(body, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) < 1 || json_array_size(jobs) > JOBS_BATCH_MAX)
        return api_field_error(call, "jobs", "expected an array of 1..1000 job submissions");
    json_t *all = json_array();
    char first[768] = "";
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *errors;
        char detail[512];
        const json_t *one = json_array_get(jobs, i);
        if (!json_is_object(one)) {
            json_array_append_new(
                all, json_pack("{s:s, s:s}", "field", "jobs[]", "detail", "expected an object"));
            continue;
        }
        if (jobspec_parse(one, &specs[*n], &errors, detail, sizeof(detail)) == 0) {
            (*n)++;
            continue;
        }
        if (!first[0])
            snprintf(first, sizeof(first), "jobs[%zu].%s", i, detail);
        size_t e;
        json_t *it;
        json_array_foreach(errors, e, it)
        {
            char field[128];
            snprintf(field, sizeof(field), "jobs[%zu].%s", i,
                     json_string_value(json_object_get(it, "field")));
            json_array_append_new(all, json_pack("{s:s, s:O}", "field", field, "detail",
                                                 json_object_get(it, "detail")));
        }
        json_decref(errors);
    }
    if (json_array_size(all) == 0) {
        json_decref(all);
        return 0;
    }
    http_send_problem(call->req, 400, all, NULL, "%s",
                      first[0] ? first : "jobs[]: expected an object");
    return -1;
}

/* Inserts job i of a batch (its key: the batch's Idempotency-Key and #i), or finds the one an
 * earlier try with the key made. Appends the job to items; *fresh counts the new ones.
 * Returns 0, or -1 after answering (409 for a key used with another request, or a database
 * error). */
static int batch_insert(struct api_call *call, const struct jobspec *s, const json_t *body,
                        const char *key, size_t i, json_t *items, size_t *fresh)
{
    struct insert_params ip;
    char k[IDEMPOTENCY_KEY_MAX + 24];
    if (key)
        snprintf(k, sizeof(k), "%s#%zu", key, i);
    int rc = -1;
    if (params_of(call, s, body, &ip) < 0) {
        http_problem(call->req, 500, "out of memory");
        goto out;
    }
    const char *p[] = {ip.uid,       s->name,        ip.command,
                       ip.env,       ip.model,       ip.gpus,
                       ip.min,       ip.max,         s->elastic ? "true" : "false",
                       ip.prio,      ip.batch,       key ? k : NULL,
                       ip.canonical, call->who.name, ip.plans,
                       ip.length};
    PGresult *r = db_exec(call->db, insert_sql, 16, p);
    if (db_ok(r) && PQntuples(r) == 1) {
        json_array_append_new(items, jobview_json(r, 0));
        (*fresh)++;
        rc = 0;
    } else if (!db_ok(r)) {
        api_db_error(call, r);
    } else {
        const char *q[] = {ip.uid, k, ip.canonical};
        PGresult *e = db_exec(call->db, existing_sql, 3, q);
        if (!db_ok(e) || PQntuples(e) != 1)
            api_db_error(call, e);
        else if (strcmp(PQgetvalue(e, 0, C_NCOLS), "t") != 0)
            http_problem(call->req, 409, "Idempotency-Key '%s' was used with another request", key);
        else {
            json_array_append_new(items, jobview_json(e, 0));
            rc = 0;
        }
        PQclear(e);
    }
    PQclear(r);
out:
    insert_params_free(&ip);
    return rc;
}

void jobs_submit_batch(struct api_call *call)
{
    const char *key;
    json_t *body;
    if (idempotency_key_or_respond(call, &key) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    struct jobspec *specs = calloc(JOBS_BATCH_MAX, sizeof(*specs));
    size_t n = 0, fresh = 0;
    if (!specs) {
        http_problem(call->req, 500, "out of memory");
        json_decref(body);
        return;
    }
    json_t *items = json_array();
    long nodes = 0, gpus = 0; /* the cluster's size, read once for the whole batch */
    int ok = batch_or_respond(call, body, specs, &n) == 0 &&
             cluster_or_respond(call, &nodes, &gpus) == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = specs[i].hold || fits_size_or_respond(call, &specs[i], nodes, gpus) == 0;
    if (ok && db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
        ok = 0;
    }
    const json_t *jobs = json_object_get(body, "jobs");
    for (size_t i = 0; ok && i < n; i++)
        ok = batch_insert(call, &specs[i], json_array_get(jobs, i), key, i, items, &fresh) == 0;
    if (ok && db_command(call->db, "COMMIT") < 0) {
        api_db_error(call, NULL);
        ok = 0;
    }
    if (ok) {
        log_info("jobs: %zu submitted in a batch by %s (%zu new)", n, call->who.name, fresh);
        api_respond_json(call, fresh ? 201 : 200, json_pack("{s:O}", "items", items));
        if (fresh)
            sched_wake_signal();
    } else {
        db_command(call->db, "ROLLBACK");
    }
    json_decref(items);
    for (size_t i = 0; i < n; i++)
        jobspec_clear(&specs[i]);
    free(specs);
    json_decref(body);
}
