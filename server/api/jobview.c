#include "jobview.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "job_state.h"
#include "live/live.h"
#include "log.h"
#include "store/db.h"

static json_t *col_json(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return json_null();
    json_t *v = json_loads(PQgetvalue(r, row, col), 0, NULL);
    return v ? v : json_null();
}

static long long col_ll(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* Cell c of row as a JSON integer, real or string, or null. */
static json_t *cell_int(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? json_null() : json_integer(col_ll(r, row, c));
}

static json_t *cell_real(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? json_null() : json_real(strtod(PQgetvalue(r, row, c), NULL));
}

/* The declared length (total_steps, epochs, stop_at_convergence, stop_at_loss), the total
 * the job reported it will run, and, once it completed, how far off the scheduler's
 * predictions of its finish were: "estimate": {error, samples, source} (docs/scheduler.md,
 * "Estimates"). */
static void length_fields(json_t *j, const PGresult *r, int row)
{
    json_object_set_new(j, "total_steps", cell_int(r, row, C_TOTAL_STEPS));
    json_object_set_new(j, "epochs", cell_real(r, row, C_EPOCHS));
    json_object_set_new(j, "stop_at_convergence",
                        json_boolean(strcmp(PQgetvalue(r, row, C_STOP_CONV), "t") == 0));
    json_object_set_new(j, "stop_at_loss", cell_real(r, row, C_STOP_LOSS));
    json_object_set_new(j, "reported_total_steps", cell_int(r, row, C_REPORTED_TOTAL));
    json_object_set_new(j, "estimate",
                        PQgetisnull(r, row, C_EST_ERROR)
                            ? json_null()
                            : json_pack("{s:o, s:o, s:s}", "error", cell_real(r, row, C_EST_ERROR),
                                        "samples", cell_int(r, row, C_EST_SAMPLES), "source",
                                        PQgetvalue(r, row, C_EST_SOURCE)));
}

/* "progress": {step, total_steps, percent, of} when the job's length in steps is known: the
 * latest step it reported (0 before its first report) of its declared total_steps ("of":
 * "declared"), else of the total it reported through libringjob ("reported"); null when
 * neither is known (a job that declares only epochs or a loss to stop at has no step total). */
static json_t *progress_json(const PGresult *r, int row)
{
    int declared = !PQgetisnull(r, row, C_TOTAL_STEPS);
    int col = declared ? C_TOTAL_STEPS : C_REPORTED_TOTAL;
    if (PQgetisnull(r, row, col))
        return json_null();
    long long total = col_ll(r, row, col);
    if (total < 1)
        return json_null();
    /* the step of a report is the count done, as the total counts them (ringjob.h) */
    long long done = PQgetisnull(r, row, C_STEP) ? 0 : col_ll(r, row, C_STEP);
    if (done < 0)
        done = 0;
    if (done > total)
        done = total;
    double pct = floor(1000.0 * (double)done / (double)total) / 10.0;
    return json_pack("{s:I, s:I, s:f, s:s}", "steps_done", (json_int_t)done, "total_steps",
                     (json_int_t)total, "percent", pct, "of", declared ? "declared" : "reported");
}

/* The batch model (docs/scheduler.md "Goodput"): the declared batch, adaptive_batch and
 * max_local_batch (null each without one), the global batch it runs now ("current_batch",
 * null before its first start or without a batch model) and its latest gradient statistics
 * ("grad": {sqr, var}, null before its first report). */
static void batch_fields(json_t *j, const PGresult *r, int row)
{
    json_t *decl = col_json(r, row, C_BATCH_SPEC);
    if (!json_is_object(decl)) {
        json_decref(decl);
        decl = json_pack("{s:n, s:n, s:n}", "batch", "adaptive_batch", "max_local_batch");
    }
    json_object_update(j, decl);
    json_decref(decl);
    json_object_set_new(j, "current_batch", cell_int(r, row, C_CUR_BATCH));
    json_object_set_new(j, "grad",
                        PQgetisnull(r, row, C_GRAD_SQR) || PQgetisnull(r, row, C_GRAD_VAR)
                            ? json_null()
                            : json_pack("{s:o, s:o}", "sqr", cell_real(r, row, C_GRAD_SQR), "var",
                                        cell_real(r, row, C_GRAD_VAR)));
}

/* One row of JOB_COLS as the API's job object (new). */
json_t *jobview_json(const PGresult *r, int row)
{
    json_t *j =
        json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:b, s:I, s:I, s:s, s:s}", "id",
                  (json_int_t)col_ll(r, row, C_ID), "user", PQgetvalue(r, row, C_USER), "state",
                  PQgetvalue(r, row, C_STATE), "name", PQgetvalue(r, row, C_NAME), "command",
                  col_json(r, row, C_CMD), "env", col_json(r, row, C_ENV), "gpus",
                  (json_int_t)col_ll(r, row, C_GPUS), "min_gpus", (json_int_t)col_ll(r, row, C_MIN),
                  "max_gpus", (json_int_t)col_ll(r, row, C_MAX), "elastic",
                  strcmp(PQgetvalue(r, row, C_ELASTIC), "t") == 0, "priority",
                  (json_int_t)col_ll(r, row, C_PRIO), "batch_per_gpu",
                  (json_int_t)col_ll(r, row, C_BATCH), "submitted_at",
                  PQgetvalue(r, row, C_SUBMITTED), "updated_at", PQgetvalue(r, row, C_UPDATED));
    if (!j)
        return NULL;
    if (!PQgetisnull(r, row, C_MODEL))
        json_object_set_new(j, "model", col_json(r, row, C_MODEL));
    json_object_set_new(j, "finished_at",
                        PQgetisnull(r, row, C_FINISHED)
                            ? json_null()
                            : json_string(PQgetvalue(r, row, C_FINISHED)));
    json_t *plans = col_json(r, row, C_PLAN_SPEC);
    if (json_is_object(plans))
        json_object_update(j, plans);
    json_decref(plans);
    json_object_set_new(j, "current_plan",
                        PQgetisnull(r, row, C_CUR_PLAN)
                            ? json_null()
                            : json_string(PQgetvalue(r, row, C_CUR_PLAN)));
    length_fields(j, r, row);
    json_object_set_new(j, "progress", progress_json(r, row));
    json_object_set_new(j, "array_id", cell_int(r, row, C_ARRAY_ID));
    json_object_set_new(j, "array_index", cell_int(r, row, C_ARRAY_INDEX));
    batch_fields(j, r, row);
    return j;
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

/* Answers with the job of id: 200, 404 when none. With sched, the scheduler's view is added
 * (jobview_sched_fields). The job's row, its allocation and that view are read from one
 * snapshot: read apart, a round committing between them showed a job RUNNING (before the
 * round) on the GPUs the round had just given it (after). */
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
    PGresult *r = db_exec(call->db,
                          "SELECT " JOB_COLS " FROM jobs j JOIN users u"
                          " ON u.id = j.user_id WHERE j.id = $1",
                          1, p);
    json_t *job = NULL;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %lld", id);
    else
        job = sched ? jobview_sched_fields(call->db, jobview_json(r, 0)) : jobview_json(r, 0);
    PQclear(r);
    jobview_snapshot_end(call->db, begun);
    if (job)
        api_respond_json(call, status, job);
}

/* {"items": rows, "next": the last id when more rows than limit came back}. */
json_t *jobview_page(const PGresult *r, long long limit)
{
    json_t *items = json_array();
    int n = PQntuples(r);
    int shown = n > limit ? (int)limit : n;
    for (int i = 0; i < shown; i++)
        json_array_append_new(items, jobview_json(r, i));
    json_t *next = n > limit ? json_string(PQgetvalue(r, shown - 1, C_ID)) : json_null();
    return json_pack("{s:o, s:o}", "items", items, "next", next);
}

static json_t *text_or_null(const PGresult *r, int i, int c)
{
    return PQgetisnull(r, i, c) ? json_null() : json_string(PQgetvalue(r, i, c));
}

/* Whether a job in state (a name) is one the rounds predict: waiting, holding GPUs or on
 * its way to; a SUSPENDED or ended job's row is left from an earlier round. */
static int predicted_state(const char *state)
{
    enum job_state st;
    return state && job_state_parse(state, &st) == 0 && !job_state_is_terminal(st) &&
           st != JOB_SUSPENDED;
}

/* Sets the queue fields of job from row i (or nulls when r is NULL), and predicted_finish. */
static void queue_fields(json_t *job, const PGresult *r, int i)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    int waiting = r && state && strcmp(state, "PENDING") == 0;
    json_object_set_new(job, "predicted_finish",
                        r && predicted_state(state) ? text_or_null(r, i, 5) : json_null());
    json_object_set_new(job, "pending_reason", waiting ? text_or_null(r, i, 1) : json_null());
    json_object_set_new(job, "queue_position",
                        waiting && !PQgetisnull(r, i, 2)
                            ? json_integer(strtoll(PQgetvalue(r, i, 2), NULL, 10))
                            : json_null());
    json_object_set_new(job, "predicted_start", waiting ? text_or_null(r, i, 3) : json_null());
    json_object_set_new(job, "remaining_source",
                        r && predicted_state(state) ? text_or_null(r, i, 6) : json_null());
}

#define SCHED_COLS                                                                                 \
    "job_id, pending_reason, queue_position, " TS("predicted_start") ", model::text, " TS(         \
        "predicted_finish") ", remaining_source"

static const char *const allocs_sql =
    "SELECT job_id, node_id, string_agg(gpu_idx::text, ' ' ORDER BY gpu_idx), count(*)"
    " FROM allocations WHERE job_id = ANY($1::bigint[]) GROUP BY job_id, node_id"
    " ORDER BY job_id, node_id";

/* Sets "allocation" [{node, gpus: [index...]}] and "world_size" of job from the rows of
 * allocs_sql that belong to it: those from row k on while they name it (r may be NULL, k -1:
 * none). */
static void alloc_fields(json_t *job, const PGresult *r, int k)
{
    long long id = json_integer_value(json_object_get(job, "id"));
    json_t *alloc = json_array();
    long long world = 0;
    for (int i = k; r && i >= 0 && i < PQntuples(r); i++) {
        if (strtoll(PQgetvalue(r, i, 0), NULL, 10) != id)
            break;
        json_t *gpus = json_array();
        for (char *g = PQgetvalue(r, i, 2), *end; *g; g = end) {
            json_array_append_new(gpus, json_integer(strtol(g, &end, 10)));
            if (end == g)
                break;
        }
        json_array_append_new(alloc, json_pack("{s:I, s:o}", "node",
                                               (json_int_t)strtoll(PQgetvalue(r, i, 1), NULL, 10),
                                               "gpus", gpus));
        world += strtoll(PQgetvalue(r, i, 3), NULL, 10);
    }
    json_object_set_new(job, "allocation", alloc);
    json_object_set_new(job, "world_size", json_integer(world));
}

static int ended(const char *state)
{
    enum job_state st;
    return state && job_state_parse(state, &st) == 0 && job_state_is_terminal(st);
}

/* "{1,2,3}": the ids of the jobs in items (new text, or NULL); with live, only those of the
 * jobs that have not ended (an ended job has no queue fields: a list of the cluster's history
 * asks nothing of job_sched). *n: how many ids it holds. */
static char *id_array(const json_t *items, int live, size_t *n)
{
    size_t len = json_array_size(items);
    char *ids = malloc(len * 24 + 3);
    if (!ids)
        return NULL;
    size_t o = (size_t)sprintf(ids, "{");
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        const json_t *job = json_array_get(items, i);
        if (live && ended(json_string_value(json_object_get(job, "state"))))
            continue;
        o += (size_t)sprintf(ids + o, "%s%lld", (*n)++ ? "," : "",
                             (long long)json_integer_value(json_object_get(job, "id")));
    }
    sprintf(ids + o, "}");
    return ids;
}

static PGresult *query_ids(PGconn *c, const char *sql, const char *ids)
{
    const char *p[] = {ids};
    PGresult *r = db_exec(c, sql, 1, p);
    if (!db_ok(r)) {
        PQclear(r);
        return NULL;
    }
    return r;
}

/* The job's model object with the scheduler's fields merged in (the scheduler's win). */
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
    }
    json_object_update(model, fit);
    json_decref(fit);
}

json_t *jobview_sched_fields(PGconn *c, json_t *job)
{
    if (!job)
        return NULL;
    json_t *one = json_pack("[O]", job);
    size_t n;
    char *ids = id_array(one, 0, &n);
    json_decref(one);
    PGresult *r = ids ? query_ids(c,
                                  "SELECT " SCHED_COLS " FROM job_sched"
                                  " WHERE job_id = ANY($1::bigint[])",
                                  ids)
                      : NULL;
    PGresult *a = ids ? query_ids(c, allocs_sql, ids) : NULL;
    int found = r && PQntuples(r) == 1;
    queue_fields(job, found ? r : NULL, 0);
    if (found && !PQgetisnull(r, 0, 4))
        merge_model(job, PQgetvalue(r, 0, 4));
    json_t *model = json_object_get(job, "model");
    if (json_is_object(model) && json_object_get(job, "remaining_source"))
        json_object_set(model, "remaining_source", json_object_get(job, "remaining_source"));
    alloc_fields(job, a, 0);
    PQclear(r);
    PQclear(a);
    free(ids);
    return job;
}

/* The first row at or after *k of r (ordered by job_id, its column 0) whose job is id, or -1;
 * *k moves past the rows of smaller ids (items come in ascending ids). */
static int row_of(const PGresult *r, int *k, long long id)
{
    while (r && *k < PQntuples(r) && strtoll(PQgetvalue(r, *k, 0), NULL, 10) < id)
        (*k)++;
    return r && *k < PQntuples(r) && strtoll(PQgetvalue(r, *k, 0), NULL, 10) == id ? *k : -1;
}

json_t *jobview_list_fields(PGconn *c, json_t *page)
{
    json_t *items = json_object_get(page, "items");
    size_t live, all;
    char *live_ids = id_array(items, 1, &live), *ids = id_array(items, 0, &all);
    PGresult *r = live_ids && live ? query_ids(c,
                                               "SELECT " SCHED_COLS " FROM job_sched"
                                               " WHERE job_id = ANY($1::bigint[]) ORDER BY job_id",
                                               live_ids)
                                   : NULL;
    PGresult *a = ids && all ? query_ids(c, allocs_sql, ids) : NULL;
    free(live_ids);
    free(ids);
    int kr = 0, ka = 0; /* items and both results come in ascending ids: one pass */
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *job = json_array_get(items, i);
        long long id = json_integer_value(json_object_get(job, "id"));
        int row = row_of(r, &kr, id);
        queue_fields(job, row >= 0 ? r : NULL, row);
        alloc_fields(job, a, row_of(a, &ka, id));
    }
    PQclear(r);
    PQclear(a);
    return page;
}
