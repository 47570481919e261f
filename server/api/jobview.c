/* jobview: the job object as the API answers it: a row as JSON, one job or a page with the
 * scheduler's view (job_sched, allocations) added, read in one REPEATABLE READ snapshot. */
#include "jobview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "job_state.h"
#include "jobtext.h"
#include "store/db.h"
#include "submit_deadline.h"

/* Room for one job's text; a page grows from limit times this. */
#define JOB_TEXT_BYTES 768

json_t *jobview_json(const PGresult *r, int row)
{
    struct jsontext t;
    jsontext_init(&t, JOB_TEXT_BYTES);
    jobtext_job(&t, r, row, NULL, 0);
    size_t len;
    char *text = jsontext_take(&t, &len);
    json_t *j = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return j;
}

void jobview_respond_row(struct api_call *call, const PGresult *r, int row, unsigned status)
{
    struct jsontext t;
    jsontext_init(&t, JOB_TEXT_BYTES);
    jobtext_job(&t, r, row, NULL, 0);
    size_t len;
    char *text = jsontext_take(&t, &len);
    if (text)
        http_req_respond_take(call->req, status, "application/json", text, len, NULL);
    else
        http_problem(call->req, 500, "out of memory");
}

int jobview_snapshot_begin(PGconn *c)
{
    if (PQtransactionStatus(c) != PQTRANS_IDLE)
        return 0; /* inside the caller's transaction: its snapshot rules */
    return db_command(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") < 0 ? -1 : 1;
}

void jobview_snapshot_end(PGconn *c, int begun)
{
    if (begun > 0 && PQtransactionStatus(c) != PQTRANS_IDLE && db_command(c, "COMMIT") < 0)
        db_command(c, "ROLLBACK");
}

/* The scheduler's view and the allocations of the jobs of an id array ("{1,2,3}"), in
 * ascending ids: prepared once a session, as every page of jobs reads both (docs/
 * benchmarks-history.md, "Lists on prepared statements"). */
static const struct db_stmt sched_stmt = {"jobview_sched",
                                          "SELECT " JOBVIEW_SCHED_COLS JOBVIEW_SCHED_FROM
                                          " WHERE job_sched.job_id = ANY($1::bigint[])"
                                          " ORDER BY job_sched.job_id",
                                          1, 0};
static const struct db_stmt allocs_stmt = {
    "jobview_allocs",
    "SELECT job_id, node_id, string_agg(gpu_idx::text, ' ' ORDER BY gpu_idx), count(*)"
    " FROM allocations WHERE job_id = ANY($1::bigint[]) GROUP BY job_id, node_id"
    " ORDER BY job_id, node_id",
    1, 0};

/* One job's row, by its id. */
static const struct db_stmt job_stmt = {"jobview_job",
                                        "SELECT " JOB_COLS JOB_FROM " WHERE j.id = $1", 1, 0};

/* st with the id array ids as $1: its rows, or NULL when it failed (the view is then left
 * out, as when a round has not written it yet). */
static PGresult *query_ids(PGconn *c, const struct db_stmt *st, const char *ids)
{
    const char *p[] = {ids};
    PGresult *r = db_exec_stmt(c, st, p);
    if (!db_ok(r)) {
        PQclear(r);
        return NULL;
    }
    return r;
}

/* Moves the member name of job to its end. */
static void move_last(json_t *job, const char *name)
{
    json_t *v = json_incref(json_object_get(job, name));
    if (v && json_object_del(job, name) == 0)
        json_object_set(job, name, v);
    json_decref(v);
}

/* The job's model object with the scheduler's fields merged in (the scheduler's win). A
 * model object made for a job that declared none comes before its allocation, as it always
 * has. */
static void merge_model(json_t *job, const char *fit_text)
{
    json_t *fit = json_loads(fit_text, 0, NULL);
    if (!json_is_object(fit)) {
        json_decref(fit);
        return;
    }
    json_t *model = json_object_get(job, "model");
    if (!json_is_object(model)) {
        model = json_object();
        json_object_set_new(job, "model", model);
        move_last(job, "allocation");
        move_last(job, "world_size");
    }
    json_object_update(model, fit);
    json_decref(fit);
}

/* An ended job's model: nothing remains. */
static void model_ended(json_t *model)
{
    json_t *rem = json_pack("{s:i, s:i, s:i, s:s, s:s, s:O?, s:O?}", "epochs", 0, "steps", 0,
                            "seconds", 0, "source", "ended", "reason", "the job has ended",
                            "epochs_done", json_object_get(model, "epochs_done"), "gpus",
                            json_object_get(json_object_get(model, "remaining"), "gpus"));
    json_object_set_new(model, "remaining_epochs", json_integer(0));
    json_object_set_new(model, "remaining_steps", json_integer(0));
    json_object_set_new(model, "predicted_remaining_s", json_integer(0));
    json_object_set_new(model, "remaining_source", json_string("ended"));
    json_object_set_new(model, "remaining", rem ? rem : json_null());
}

void jobview_model_now(json_t *model, const char *state)
{
    enum job_state st;
    if (!json_is_object(model) || !json_object_get(model, "remaining"))
        return;
    if (state && job_state_parse(state, &st) == 0 && job_state_is_terminal(st))
        model_ended(model);
    json_t *conv = json_object_get(model, "convergence");
    if (!json_is_object(conv))
        return;
    json_object_set(conv, "steps_remaining", json_object_get(model, "remaining_steps"));
    json_object_set(conv, "seconds_remaining", json_object_get(model, "predicted_remaining_s"));
}

static int ended(const char *state)
{
    enum job_state st;
    return job_state_parse(state, &st) == 0 && job_state_is_terminal(st);
}

/* "deadline_forecast" of a job that has a deadline and has not ended: the verdict on its
 * predicted finish, the one figure (jobcols.h): the P50 of its forecast ("forecast",
 * docs/forecast.md; the submission's until the next pass), else the last round's prediction
 * until one is made (submit_deadline_json(); unknown without either). */
static void deadline_member(json_t *job)
{
    double deadline, finish = -1;
    const char *d = json_string_value(json_object_get(job, "deadline"));
    const char *f = json_string_value(json_object_get(job, "predicted_finish"));
    if (!d || jobspec_deadline_parse(d, &deadline) < 0 ||
        ended(json_string_value(json_object_get(job, "state"))))
        return;
    if (!f || jobspec_deadline_parse(f, &finish) < 0)
        finish = -1;
    json_t *v = submit_deadline_json(deadline, finish);
    if (v)
        json_object_set_new(job, "deadline_forecast", v);
}

/* The job of row 0 of r with the scheduler's view read on c (new, or NULL). */
static json_t *with_sched(PGconn *c, const PGresult *r)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "{%s}", PQgetvalue(r, 0, C_ID));
    PGresult *q = query_ids(c, &sched_stmt, ids);
    PGresult *a = query_ids(c, &allocs_stmt, ids);
    int found = q && PQntuples(q) == 1;
    struct jobtext_sched s = {q, found ? 0 : -1, a, a && PQntuples(a) > 0 ? 0 : -1};
    struct jsontext t;
    jsontext_init(&t, JOB_TEXT_BYTES);
    jobtext_job(&t, r, 0, &s, 0);
    size_t len;
    char *text = jsontext_take(&t, &len);
    json_t *job = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    if (job && found && !PQgetisnull(q, 0, JS_MODEL))
        merge_model(job, PQgetvalue(q, 0, JS_MODEL));
    if (job && found)
        jobview_model_now(json_object_get(job, "model"),
                          json_string_value(json_object_get(job, "state")));
    if (job)
        deadline_member(job);
    PQclear(q);
    PQclear(a);
    return job;
}

/* Read apart, a round committing between the job's row, its allocation and its view showed
 * a job RUNNING (before the round) on the GPUs the round had just given it (after): with
 * sched they come from one snapshot. */
void jobview_respond(struct api_call *call, long long id, unsigned status, int sched)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    int begun = sched ? jobview_snapshot_begin(call->db) : 0;
    if (begun < 0) {
        api_db_error(call, NULL);
        return;
    }
    PGresult *r = db_exec_stmt(call->db, &job_stmt, p);
    json_t *job = NULL;
    int found = db_ok(r) && PQntuples(r) == 1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (!found)
        http_problem(call->req, 404, "no job %lld", id);
    else
        job = sched ? with_sched(call->db, r) : jobview_json(r, 0);
    PQclear(r);
    jobview_snapshot_end(call->db, begun);
    if (job)
        api_respond_json(call, status, job);
    else if (found)
        http_problem(call->req, 500, "out of memory");
}

/* "{1,2,3}": the ids of the first n rows of r (new text, or NULL); with live, only those of
 * the jobs that have not ended (an ended job has no queue fields: a page of the cluster's
 * history asks nothing of job_sched). *count: how many ids it holds. */
static char *id_array(const PGresult *r, int n, int live, int *count)
{
    char *ids = malloc((size_t)n * 21 + 3), *o = ids;
    if (!ids)
        return NULL;
    *o++ = '{';
    *count = 0;
    for (int i = 0; i < n; i++) {
        if (live && ended(PQgetvalue(r, i, C_STATE)))
            continue;
        if ((*count)++)
            *o++ = ',';
        size_t len = (size_t)PQgetlength(r, i, C_ID);
        memcpy(o, PQgetvalue(r, i, C_ID), len < 20 ? len : 20);
        o += len < 20 ? len : 20;
    }
    memcpy(o, "}", 2);
    return ids;
}

/* The first row at or after *k of q (ordered by job_id, its column 0) whose job is id, or -1;
 * *k moves past the rows of smaller ids (a page comes in ascending ids). */
static int row_of(const PGresult *q, int *k, long long id)
{
    while (q && *k < PQntuples(q) && strtoll(PQgetvalue(q, *k, 0), NULL, 10) < id)
        (*k)++;
    return q && *k < PQntuples(q) && strtoll(PQgetvalue(q, *k, 0), NULL, 10) == id ? *k : -1;
}

char *jobview_list_text(PGconn *c, const PGresult *r, long long limit, size_t *len)
{
    int n = PQntuples(r), shown = n > limit ? (int)limit : n, live, all;
    char *live_ids = id_array(r, shown, 1, &live), *ids = id_array(r, shown, 0, &all);
    PGresult *q = live_ids && live ? query_ids(c, &sched_stmt, live_ids) : NULL;
    PGresult *a = ids && all ? query_ids(c, &allocs_stmt, ids) : NULL;
    free(live_ids);
    free(ids);
    struct jsontext t;
    jsontext_init(&t, (size_t)(shown + 1) * JOB_TEXT_BYTES);
    jsontext_lit(&t, "{\"items\":[");
    int kq = 0, ka = 0; /* the rows and both results come in ascending ids: one pass */
    for (int i = 0; i < shown; i++) {
        long long id = strtoll(PQgetvalue(r, i, C_ID), NULL, 10);
        struct jobtext_sched s = {q, row_of(q, &kq, id), a, row_of(a, &ka, id)};
        jsontext_raw(&t, ",", i ? 1 : 0);
        jobtext_job(&t, r, i, &s, JOBVIEW_LIST_PRECISION);
    }
    jsontext_lit(&t, "],\"next\":");
    if (n > limit)
        jsontext_str(&t, PQgetvalue(r, shown - 1, C_ID));
    else
        jsontext_lit(&t, "null");
    jsontext_lit(&t, "}");
    PQclear(q);
    PQclear(a);
    return jsontext_take(&t, len);
}
