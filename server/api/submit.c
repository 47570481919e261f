#include "submit.h"

#include <stddef.h>
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
#include "submit_group.h"
#include "submit_sql.h"

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
    char *batch_spec; /* jobspec_batch_json(), or NULL without a batch model */
};

static void insert_params_free(struct insert_params *ip)
{
    free(ip->command);
    free(ip->env);
    free(ip->model);
    free(ip->canonical);
    free(ip->plans);
    free(ip->length);
    free(ip->batch_spec);
}

static const struct db_stmt insert_stmt = {
    "submit_insert",
    "WITH ins AS (" INSERT_TARGET " VALUES (" INSERT_VALUES ")" INSERT_REST
    " SELECT " JOB_COLS " FROM ins j JOIN users u ON u.id = j.user_id",
    SUBMIT_NPARAMS - 1, 0};

static const char *const existing_sql =
    "SELECT " JOB_COLS ", j.request_hash = sha256(convert_to($3, 'UTF8'))" JOB_FROM
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
        jobview_respond_row(call, r, 0, 200);
    PQclear(r);
}

/* 0 when s fits a cluster of gpus GPUs on nodes nodes up (or no node is up: not known),
 * else -1 after a 422 that says the cluster's size. i: the job's place in a batch (its field
 * then jobs[i].gpus), or -1. */
static int fits_size_or_respond(struct api_call *call, const struct jobspec *s, long nodes,
                                long gpus, long i)
{
    if (nodes <= 0 || s->min_gpus <= gpus)
        return 0;
    char field[48], where[32] = "";
    if (i >= 0)
        snprintf(where, sizeof(where), "jobs[%ld].", i);
    snprintf(field, sizeof(field), "%s%s", where, s->elastic ? "min_gpus" : "gpus");
    json_t *errs =
        json_pack("[{s:s, s:s}]", "field", field, "detail", "more GPUs than the cluster has");
    http_send_problem(call->req, 422, errs, NULL,
                      "%s%sthe job needs %d GPUs; the cluster has %ld on %ld node%s up"
                      " (submit with \"hold\": true to wait for nodes still to come)",
                      i >= 0 ? field : "", i >= 0 ? ": " : "", s->min_gpus, gpus, nodes,
                      nodes == 1 ? "" : "s");
    return -1;
}

/* Answers for job, stored (201), refused for its size (422), or made before under its key. */
static void respond_stored(struct api_call *call, const struct jobspec *s,
                           const struct insert_params *ip, const char *key, const PGresult *r,
                           int row)
{
    if (!db_ok(r) || PQntuples(r) <= row) {
        api_db_error(call, r);
    } else if (PQgetisnull(r, row, C_ID)) { /* refused for its size, or made before */
        long nodes = strtol(PQgetvalue(r, row, C_NCOLS), NULL, 10);
        long gpus = strtol(PQgetvalue(r, row, C_NCOLS + 1), NULL, 10);
        if (s->hold || fits_size_or_respond(call, s, nodes, gpus, -1) == 0)
            respond_existing(call, ip, key);
    } else {
        log_info("job %s: -> PENDING (submit by %s, %d gpus)", PQgetvalue(r, row, C_ID),
                 call->who.name, s->gpus);
        jobview_respond_row(call, r, row, 201);
        sched_wake_signal();
    }
}

/* A single submission on its way: what its statement and its answer need, on the heap
 * from its handler to its answer, which its group's leader may give from another thread
 * (submit_group.h). */
struct submission {
    struct submit_group_job job;
    struct api_call call; /* the handler's; its db that of whoever answers */
    json_t *body;
    struct jobspec spec; /* parsed from body */
    struct insert_params ip;
    char *canonical;
    const char *key; /* the request's Idempotency-Key header, or NULL */
    const char *params[SUBMIT_NPARAMS];
};

static void submission_free(struct submission *sub)
{
    insert_params_free(&sub->ip);
    free(sub->canonical);
    jobspec_clear(&sub->spec);
    json_decref(sub->body);
    free(sub);
}

/* submit_group's done(): answers the submission on c's data and frees it. */
static void submission_done(struct submit_group_job *job, PGconn *c, const PGresult *r, int row)
{
    struct submission *sub = (struct submission *)((char *)job - offsetof(struct submission, job));
    sub->call.db = c;
    if (!r)
        http_problem(sub->call.req, 503, "the database is unavailable");
    else
        respond_stored(&sub->call, &sub->spec, &sub->ip, sub->key, r, row);
    api_call_finish(&sub->call);
    submission_free(sub);
}

/* The cluster registered now: its nodes up and their GPUs, into *nodes and *gpus. Returns 0,
 * or -1 after a 503 or 500. */
static int cluster_or_respond(struct api_call *call, long *nodes, long *gpus)
{
    static const struct db_stmt cluster = {"submit_cluster", SUBMIT_CLUSTER_SQL, 0, 0};
    PGresult *r = db_exec_stmt(call->db, &cluster, NULL);
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

/* Fills ip from spec, with canonical (copied; NULL: none) the text whose hash identifies the
 * request for its Idempotency-Key. Returns 0, or -1 on ENOMEM (ip then holds what to free). */
static int params_of(struct api_call *call, const struct jobspec *spec, const char *canonical,
                     struct insert_params *ip)
{
    *ip = (struct insert_params){
        .command = json_dumps(spec->command, JSON_COMPACT),
        .env = json_dumps(spec->env, JSON_COMPACT),
        .model = spec->model ? json_dumps(spec->model, JSON_COMPACT) : NULL,
        .canonical = canonical ? strdup(canonical) : NULL,
        .length = length_json(spec),
    };
    json_t *plans = jobspec_plans_json(spec), *batch = jobspec_batch_json(spec);
    ip->plans = plans ? json_dumps(plans, JSON_COMPACT) : NULL;
    ip->batch_spec = batch ? json_dumps(batch, JSON_COMPACT) : NULL;
    snprintf(ip->uid, sizeof(ip->uid), "%lld", call->who.id);
    snprintf(ip->gpus, sizeof(ip->gpus), "%d", spec->gpus);
    snprintf(ip->min, sizeof(ip->min), "%d", spec->min_gpus);
    snprintf(ip->max, sizeof(ip->max), "%d", spec->max_gpus);
    snprintf(ip->prio, sizeof(ip->prio), "%d", spec->priority);
    snprintf(ip->batch, sizeof(ip->batch), "%d", spec->batch_per_gpu);
    int ok = ip->command && ip->env && (!canonical || ip->canonical) &&
             (!spec->model || ip->model) && (!plans || ip->plans) && ip->length &&
             (!batch || ip->batch_spec);
    json_decref(plans);
    json_decref(batch);
    return ok ? 0 : -1;
}

/* The insert's parameters $1..$20 (INSERT_VALUES, submit_sql.h) for s as ip holds it: its
 * Idempotency-Key, the submitter's name (its first event's actor), and for an array's job
 * the id chosen beforehand, the array's id and the job's index there (each NULL: none). */
static void insert_args(const char **p, const struct jobspec *s, const struct insert_params *ip,
                        const char *key, const char *actor, const char *id, const char *array,
                        const char *index)
{
    const char *args[SUBMIT_NPARAMS - 1] = {ip->uid,
                                            s->name,
                                            ip->command,
                                            ip->env,
                                            ip->model,
                                            ip->gpus,
                                            ip->min,
                                            ip->max,
                                            s->elastic ? "true" : "false",
                                            ip->prio,
                                            ip->batch,
                                            key,
                                            ip->canonical,
                                            actor,
                                            ip->plans,
                                            ip->length,
                                            id,
                                            array,
                                            index,
                                            ip->batch_spec};
    memcpy(p, args, sizeof(args));
}

/* The submission of call's request, ready to store; NULL after answering it (a broken
 * request: 400, 415, or out of memory). */
static struct submission *submission_of(struct api_call *call)
{
    const char *key;
    json_t *body, *errors;
    char detail[512];
    if (idempotency_key_or_respond(call, &key) < 0 || api_body_or_respond(call, &body) < 0)
        return NULL;
    struct submission *sub = calloc(1, sizeof(*sub));
    if (!sub) {
        http_problem(call->req, 500, "out of memory");
        json_decref(body);
        return NULL;
    }
    *sub = (struct submission){.call = *call, .body = body, .key = key};
    sub->call.id = ""; /* the router's, gone with the handler */
    if (jobspec_parse(body, &sub->spec, &errors, detail, sizeof(detail)) < 0) {
        http_send_problem(call->req, 400, errors, NULL, "%s", detail);
        json_decref(body);
        free(sub);
        return NULL;
    }
    /* the request's text identifies it only for a retry with its Idempotency-Key */
    sub->canonical = key ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if ((key && !sub->canonical) || params_of(call, &sub->spec, sub->canonical, &sub->ip) < 0) {
        http_problem(call->req, 500, "out of memory");
        submission_free(sub);
        return NULL;
    }
    insert_args(sub->params, &sub->spec, &sub->ip, key, sub->call.who.name, NULL, NULL, NULL);
    sub->params[SUBMIT_NPARAMS - 1] = sub->spec.hold ? "true" : "false"; /* $21 */
    sub->job = (struct submit_group_job){.params = sub->params, .done = submission_done};
    return sub;
}

/* Stores the job in one statement, alone or in a group with concurrent submissions
 * (submit_group.h), and answers: the request is detached, and answered by submission_done()
 * on this thread or on its group's leader's. */
void jobs_submit(struct api_call *call)
{
    struct submission *sub = submission_of(call);
    if (!sub)
        return;
    api_call_detach(call);
    submit_group_store(call->db, &sub->job);
}

int jobs_submit_inline(struct api_call *call)
{
    if (!submit_group_leading())
        return 0; /* the usual way leads; parsing here first would be work thrown away */
    struct submission *sub = submission_of(call);
    if (!sub)
        return 1; /* answered */
    api_call_detach(call); /* before the job is queued: its leader may answer it at once */
    if (submit_group_enqueue(&sub->job) == 0)
        return 1;
    submission_free(sub); /* the statement ended meanwhile: nothing done, the usual way */
    return 0;
}

/* ---- a batch: many jobs in one transaction ---- */

/* A batch being stored: its jobs, their array indexes (-1 each when it is no array) and what
 * identifies it for its Idempotency-Key. */
struct batch {
    struct jobspec specs[JOBS_BATCH_MAX];
    long index[JOBS_BATCH_MAX];
    size_t n;
    int array;          /* its jobs carry array_index */
    char canonical[96]; /* "batch SHA256HEX" of the whole body, or "" without a key */
};

/* Appends the errors of job i (an array of {field, detail}; stolen) to all, their fields
 * prefixed jobs[i]. */
static void add_errors(json_t *all, size_t i, json_t *errors)
{
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

static void add_error(json_t *all, size_t i, const char *field, const char *detail)
{
    char f[64];
    snprintf(f, sizeof(f), "jobs[%zu]%s%s", i, field[0] ? "." : "", field);
    json_array_append_new(all, json_pack("{s:s, s:s}", "field", f, "detail", detail));
}

/* Job i's array_index (absent: -1) into *index. Returns 0, or -1 after adding its error. */
static int array_index_of(const json_t *one, size_t i, long *index, json_t *all)
{
    const json_t *v = json_object_get(one, "array_index");
    *index = -1;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > JOBS_ARRAY_INDEX_MAX) {
        add_error(all, i, "array_index", "expected an integer 0..1000000");
        return -1;
    }
    *index = (long)json_integer_value(v);
    return 0;
}

/* The environment of an array's job gets RINGJOB_ARRAY_INDEX (spec->env is shared with the
 * body: it is replaced by a copy). */
static void set_array_env(struct jobspec *spec, long index)
{
    char text[24];
    json_t *env = json_copy(spec->env);
    if (!env)
        return;
    snprintf(text, sizeof(text), "%ld", index);
    json_object_set_new(env, "RINGJOB_ARRAY_INDEX", json_string(text));
    json_decref(spec->env);
    spec->env = env;
}

/* Validates job i of a batch into b->specs[b->n] (counted when valid), adding its errors to
 * all and its first message to first (when first is still ""). */
static void batch_one(struct batch *b, const json_t *one, size_t i, json_t *all, char *first,
                      size_t flen)
{
    json_t *errors;
    char detail[512];
    long index;
    if (!json_is_object(one)) {
        add_error(all, i, "", "expected an object");
        return;
    }
    if (array_index_of(one, i, &index, all) < 0)
        return;
    json_t *el = json_copy((json_t *)one); /* shallow: the spec shares its members */
    if (!el) {
        add_error(all, i, "", "out of memory");
        return;
    }
    json_object_del(el, "array_index");
    int rc = jobspec_parse(el, &b->specs[b->n], &errors, detail, sizeof(detail));
    json_decref(el);
    if (rc < 0) {
        if (!first[0])
            snprintf(first, flen, "jobs[%zu].%s", i, detail);
        add_errors(all, i, errors);
        return;
    }
    if (index >= 0)
        set_array_env(&b->specs[b->n], index);
    b->index[b->n++] = index;
}

/* An array's jobs all carry array_index, each a different one. Adds the first error found. */
static void array_rules(struct batch *b, json_t *all)
{
    size_t with = 0;
    for (size_t i = 0; i < b->n; i++)
        with += b->index[i] >= 0;
    b->array = with > 0;
    for (size_t i = 0; with && with < b->n && i < b->n; i++)
        if (b->index[i] < 0) {
            add_error(all, i, "array_index", "the other jobs have one: an array's jobs all do");
            return;
        }
    for (size_t i = 0; with == b->n && i < b->n; i++)
        for (size_t k = 0; k < i; k++)
            if (b->index[k] == b->index[i]) {
                add_error(all, i, "array_index", "the same as an earlier job's");
                return;
            }
}

/* Validates every element of body's "jobs" (1..JOBS_BATCH_MAX) into b. Returns 0, or -1
 * after a 413 (too many) or a 400 naming each broken field as jobs[i].field. */
static int batch_or_respond(struct api_call *call, const json_t *body, struct batch *b)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        if (strcmp(k, "jobs") != 0)
            return api_field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field");
    }
    const json_t *jobs = json_object_get(body, "jobs");
    if (json_array_size(jobs) > JOBS_BATCH_MAX) {
        http_send_problem(
            call->req, 413,
            json_pack("[{s:s, s:s}]", "field", "jobs", "detail", "at most 1000 jobs a batch"),
            NULL, "jobs: %zu jobs, at most %d in one batch", json_array_size(jobs),
            JOBS_BATCH_MAX);
        return -1;
    }
    if (!json_is_array(jobs) || json_array_size(jobs) < 1)
        return api_field_error(call, "jobs", "expected an array of 1..1000 job submissions");
    json_t *all = json_array();
    char first[768] = "";
    for (size_t i = 0; i < json_array_size(jobs); i++)
        batch_one(b, json_array_get(jobs, i), i, all, first, sizeof(first));
    if (json_array_size(all) == 0)
        array_rules(b, all);
    if (json_array_size(all) == 0) {
        json_decref(all);
        return 0;
    }
    if (!first[0])
        snprintf(first, sizeof(first), "%s: %s",
                 json_string_value(json_object_get(json_array_get(all, 0), "field")),
                 json_string_value(json_object_get(json_array_get(all, 0), "detail")));
    http_send_problem(call->req, 400, all, NULL, "%s", first);
    return -1;
}

/* With an Idempotency-Key, the text every job of the batch stores as its request: the hash
 * of the whole body, so that a retry with any other body (another job, one more or fewer) is
 * refused at its first job. Returns 0, or -1 after answering. */
static int batch_canonical_or_respond(struct api_call *call, const json_t *body, struct batch *b)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    const char *p[] = {text};
    PGresult *r =
        text ? db_exec(call->db, "SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')", 1, p)
             : NULL;
    int rc = -1;
    if (!text)
        http_problem(call->req, 500, "out of memory");
    else if (!db_ok(r) || PQntuples(r) != 1)
        api_db_error(call, r);
    else {
        snprintf(b->canonical, sizeof(b->canonical), "batch %s", PQgetvalue(r, 0, 0));
        rc = 0;
    }
    PQclear(r);
    free(text);
    return rc;
}

/* The id of an array's first job, drawn before it is stored (every job of the array names
 * it). Returns it, or -1 after answering. */
static long long array_id_or_respond(struct api_call *call)
{
    PGresult *r = db_exec(call->db, "SELECT nextval('jobs_id_seq'::regclass)", 0, NULL);
    long long id = -1;
    if (!db_ok(r) || PQntuples(r) != 1)
        api_db_error(call, r);
    else
        id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return id;
}

/* The job an earlier try of the batch stored under key k: appended to items. Returns 0, or
 * -1 after answering (409 when that try came with another body). */
static int batch_existing(struct api_call *call, const struct insert_params *ip, const char *key,
                          const char *k, json_t *items)
{
    const char *q[] = {ip->uid, k, ip->canonical};
    PGresult *e = db_exec(call->db, existing_sql, 3, q);
    int rc = -1;
    if (!db_ok(e) || PQntuples(e) != 1)
        api_db_error(call, e);
    else if (strcmp(PQgetvalue(e, 0, C_NCOLS), "t") != 0)
        http_problem(call->req, 409, "Idempotency-Key '%s' was used with another request", key);
    else {
        json_array_append_new(items, jobview_json(e, 0));
        rc = 0;
    }
    PQclear(e);
    return rc;
}

/* Inserts job i of a batch (its key: the batch's Idempotency-Key and #i), or finds the one an
 * earlier try with the key made; array: the array's id (its first job's), or -1. Appends the
 * job to items; *fresh counts the new ones. Returns 0, or -1 after answering. */
static int batch_insert(struct api_call *call, const struct batch *b, const char *key, size_t i,
                        long long array, json_t *items, size_t *fresh)
{
    const struct jobspec *s = &b->specs[i];
    struct insert_params ip;
    char k[IDEMPOTENCY_KEY_MAX + 24], id[24] = "", aid[24] = "", idx[24] = "";
    if (key)
        snprintf(k, sizeof(k), "%s#%zu", key, i);
    if (array >= 0) {
        snprintf(aid, sizeof(aid), "%lld", array);
        snprintf(idx, sizeof(idx), "%ld", b->index[i]);
        if (i == 0)
            snprintf(id, sizeof(id), "%lld", array);
    }
    if (params_of(call, s, key ? b->canonical : NULL, &ip) < 0) {
        insert_params_free(&ip);
        http_problem(call->req, 500, "out of memory");
        return -1;
    }
    const char *p[SUBMIT_NPARAMS - 1];
    insert_args(p, s, &ip, key ? k : NULL, call->who.name, id[0] ? id : NULL,
                aid[0] ? aid : NULL, idx[0] ? idx : NULL);
    PGresult *r = db_exec_stmt(call->db, &insert_stmt, p);
    int rc = -1;
    if (db_ok(r) && PQntuples(r) == 1) {
        json_array_append_new(items, jobview_json(r, 0));
        (*fresh)++;
        rc = 0;
    } else if (!db_ok(r))
        api_db_error(call, r);
    else
        rc = batch_existing(call, &ip, key, k, items);
    PQclear(r);
    insert_params_free(&ip);
    return rc;
}

/* Stores b's jobs in one transaction, appending them to items. Returns 0, or -1 after
 * answering (the transaction rolled back). */
static int batch_store_or_respond(struct api_call *call, const struct batch *b, const char *key,
                                  json_t *items, size_t *fresh)
{
    if (db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
        return -1;
    }
    long long array = b->array ? array_id_or_respond(call) : -1;
    int ok = !b->array || array >= 0;
    for (size_t i = 0; ok && i < b->n; i++)
        ok = batch_insert(call, b, key, i, array, items, fresh) == 0;
    if (ok && db_command(call->db, "COMMIT") < 0) {
        api_db_error(call, NULL);
        ok = 0;
    }
    if (!ok)
        db_command(call->db, "ROLLBACK");
    return ok ? 0 : -1;
}

/* Every job of b fits the cluster up (or holds). Returns 0, or -1 after a 422 naming the
 * first that cannot. */
static int batch_fits_or_respond(struct api_call *call, const struct batch *b)
{
    long nodes = 0, gpus = 0; /* the cluster's size, read once for the whole batch */
    if (cluster_or_respond(call, &nodes, &gpus) < 0)
        return -1;
    for (size_t i = 0; i < b->n; i++)
        if (!b->specs[i].hold && fits_size_or_respond(call, &b->specs[i], nodes, gpus, (long)i) < 0)
            return -1;
    return 0;
}

static void batch_respond(struct api_call *call, const struct batch *b, json_t *items,
                          size_t fresh)
{
    json_t *out = json_pack("{s:O}", "items", items);
    json_t *first = json_array_get(items, 0);
    if (b->array)
        json_object_set(out, "array_id", json_object_get(first, "array_id"));
    log_info("jobs: %zu submitted in a batch by %s (%zu new)%s%s", b->n, call->who.name, fresh,
             b->array ? ", array " : "",
             b->array ? json_string_value(json_object_get(first, "name")) : "");
    api_respond_json(call, fresh ? 201 : 200, out);
    if (fresh)
        sched_wake_signal(); /* once for the whole batch */
}

void jobs_submit_batch(struct api_call *call)
{
    const char *key;
    json_t *body;
    if (idempotency_key_or_respond(call, &key) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    struct batch *b = calloc(1, sizeof(*b));
    json_t *items = json_array();
    size_t fresh = 0;
    if (!b || !items)
        http_problem(call->req, 500, "out of memory");
    else if (batch_or_respond(call, body, b) == 0 && batch_fits_or_respond(call, b) == 0 &&
             (!key || batch_canonical_or_respond(call, body, b) == 0) &&
             batch_store_or_respond(call, b, key, items, &fresh) == 0)
        batch_respond(call, b, items, fresh);
    for (size_t i = 0; b && i < b->n; i++)
        jobspec_clear(&b->specs[i]);
    free(b);
    json_decref(items);
    json_decref(body);
}
