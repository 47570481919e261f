/* submit_batch: POST /api/v1/jobs:batch, many jobs in one transaction: each element made a
 * submission (submission.h), an array's rules, the admission check of them all at once, and
 * each stored by its row's insert (submit_row.h) or found made by an earlier try. */
#include "submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "jobview.h"
#include "live/live.h"
#include "log.h"
#include "store/db.h"
#include "submission.h"
#include "submit_row.h"

/* A batch being stored: its jobs (array_index -1 each when it is no array) and what
 * identifies it for its Idempotency-Key. */
struct batch {
    struct submission subs[JOBS_BATCH_MAX];
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

/* Validates job i of a batch into b->subs[b->n] (counted when valid), the caller's, adding
 * its errors to all and its first message to first (when first is still ""). */
static void batch_one(struct api_call *call, struct batch *b, const json_t *one, size_t i,
                      json_t *all, char *first, size_t flen)
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
    struct submission *s = &b->subs[b->n];
    submission_init(s, call);
    int rc = jobspec_parse(el, &s->spec, &errors, detail, sizeof(detail));
    json_decref(el);
    if (rc < 0) {
        if (!first[0])
            snprintf(first, flen, "jobs[%zu].%s", i, detail);
        add_errors(all, i, errors);
        return;
    }
    if (index >= 0)
        set_array_env(&s->spec, index);
    s->array_index = index;
    b->n++;
}

/* An array's jobs all carry array_index, each a different one. Adds the first error found. */
static void array_rules(struct batch *b, json_t *all)
{
    size_t with = 0;
    for (size_t i = 0; i < b->n; i++)
        with += b->subs[i].array_index >= 0;
    b->array = with > 0;
    for (size_t i = 0; with && with < b->n && i < b->n; i++)
        if (b->subs[i].array_index < 0) {
            add_error(all, i, "array_index", "the other jobs have one: an array's jobs all do");
            return;
        }
    for (size_t i = 0; with == b->n && i < b->n; i++)
        for (size_t k = 0; k < i; k++)
            if (b->subs[k].array_index == b->subs[i].array_index) {
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
        batch_one(call, b, json_array_get(jobs, i), i, all, first, sizeof(first));
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

/* Inserts job i of a batch (its key: the batch's Idempotency-Key and #i), or finds the one an
 * earlier try with the key made; array: the array's id (its first job's), or -1. Appends the
 * job to items; *fresh counts the new ones. Returns 0, or -1 after answering. */
static int batch_insert(struct api_call *call, struct batch *b, const char *key, size_t i,
                        long long array, json_t *items, size_t *fresh)
{
    struct submission *s = &b->subs[i];
    struct submit_row row;
    char k[SUBMISSION_KEY_MAX + 24];
    if (key) {
        snprintf(k, sizeof(k), "%s#%zu", key, i);
        s->key = k;
        s->request = b->canonical;
    }
    if (array >= 0) {
        s->array_id = array;
        s->id = i == 0 ? array : 0;
    }
    if (submit_row_of(s, &row) < 0) {
        http_problem(call->req, 500, "out of memory");
        return -1;
    }
    PGresult *r = db_exec_stmt(call->db, submit_row_stmt(SUBMIT_ROW_INSERT), row.params);
    int rc = -1;
    if (db_ok(r) && PQntuples(r) == 1) {
        json_array_append_new(items, jobview_json(r, 0));
        (*fresh)++;
        rc = 0;
    } else if (!db_ok(r)) {
        api_db_error(call, r);
    } else {
        PGresult *e = submission_earlier_or_respond(call, s, key);
        if (e) {
            json_array_append_new(items, jobview_json(e, 0));
            rc = 0;
        }
        PQclear(e);
    }
    PQclear(r);
    submit_row_clear(&row);
    s->key = s->request = NULL; /* k is gone with this call */
    return rc;
}

/* Stores b's jobs in one transaction, appending them to items. Returns 0, or -1 after
 * answering (the transaction rolled back). */
static int batch_store_or_respond(struct api_call *call, struct batch *b, const char *key,
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

/* Every job of b fits the cluster up (or holds), and the jobs each runs after exist. Returns
 * 0, or -1 after a 422 naming the first that cannot fit, or a 400 naming missing jobs. */
static int batch_fits_or_respond(struct api_call *call, const struct batch *b)
{
    long nodes = 0, gpus = 0; /* the cluster's size, read once for the whole batch */
    if (cluster_or_respond(call, &nodes, &gpus) < 0)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        const struct jobspec *s = &b->subs[i].spec;
        if (!s->hold && submission_fits_or_respond(call, s, nodes, gpus, (long)i) < 0)
            return -1;
        if (submission_after_or_respond(call, s, (long)i) < 0)
            return -1;
    }
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
        live_wake_signal(); /* once for the whole batch */
}

void jobs_submit_batch(struct api_call *call)
{
    const char *key;
    json_t *body;
    if (submission_key_or_respond(call, &key) < 0 || api_body_or_respond(call, &body) < 0)
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
        submission_clear(&b->subs[i]);
    free(b);
    json_decref(items);
    json_decref(body);
}
