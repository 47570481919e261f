/* jobtext: the API's job object written as JSON text straight from its rows (the job, its
 * job_sched row, its allocations), byte for byte as jansson would. */
#include "jobtext.h"
#include "jobcols.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"

/* The text's "name": after a member (every field here follows "id"). */
static void key(struct jsontext *t, const char *name)
{
    jsontext_lit(t, ",\"");
    jsontext_raw(t, name, strlen(name));
    jsontext_lit(t, "\":");
}

static long long col_ll(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static void cell_str(struct jsontext *t, const PGresult *r, int row, int c)
{
    if (PQgetisnull(r, row, c))
        jsontext_lit(t, "null");
    else
        jsontext_str(t, PQgetvalue(r, row, c));
}

/* An integer column as PostgreSQL writes it: what jansson writes for its value. */
static void cell_int(struct jsontext *t, const PGresult *r, int row, int c)
{
    if (PQgetisnull(r, row, c))
        jsontext_lit(t, "null");
    else
        jsontext_raw(t, PQgetvalue(r, row, c), (size_t)PQgetlength(r, row, c));
}

/* A TS_UTC() column as DB_TS() writes it: "2026-11-27 16:22:37.5" (the ISO DateStyle, its
 * fraction without trailing zeros, " BC" after a year before 1) as
 * "2026-11-27T16:22:37.500000Z"; null for infinity (to_char() gives NULL). */
static void cell_ts(struct jsontext *t, const PGresult *r, int row, int c)
{
    const char *v = PQgetvalue(r, row, c);
    const char *sp = strchr(v, ' ');
    size_t frac = 0;
    if (PQgetisnull(r, row, c) || !sp || strlen(sp) < 9) {
        if (PQgetisnull(r, row, c) || strstr(v, "infinity"))
            jsontext_lit(t, "null");
        else
            jsontext_str(t, v); /* not the ISO DateStyle: as it came */
        return;
    }
    if (sp[9] == '.')
        frac = strspn(sp + 10, "0123456789");
    char buf[64];
    size_t day = (size_t)(sp - v);
    if (day + 28 > sizeof(buf) || frac > 6) {
        jsontext_str(t, v);
        return;
    }
    memcpy(buf, v, day);
    buf[day] = 'T';
    memcpy(buf + day + 1, sp + 1, 8);
    buf[day + 9] = '.';
    memcpy(buf + day + 10, sp + 10, frac);
    memset(buf + day + 10 + frac, '0', 6 - frac);
    memcpy(buf + day + 16, "Z", 2);
    jsontext_str(t, buf);
}

static void cell_doc(struct jsontext *t, const PGresult *r, int row, int c, int precision)
{
    if (PQgetisnull(r, row, c))
        jsontext_lit(t, "null");
    else
        jsontext_doc(t, PQgetvalue(r, row, c), precision);
}

/* Whether cell c is null or a finite real: jansson has no real for NaN or the infinities,
 * and the job object left out a field (or the object holding it) that had one. */
static int cell_finite(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) || isfinite(strtod(PQgetvalue(r, row, c), NULL));
}

static void cell_real(struct jsontext *t, const PGresult *r, int row, int c, int precision)
{
    if (PQgetisnull(r, row, c))
        jsontext_lit(t, "null");
    else
        jsontext_real(t, strtod(PQgetvalue(r, row, c), NULL), precision);
}

/* "name": the real of cell c, or null; no member when it is not finite. */
static void real_member(struct jsontext *t, const char *name, const PGresult *r, int row, int c,
                        int precision)
{
    if (!cell_finite(r, row, c))
        return;
    key(t, name);
    cell_real(t, r, row, c, precision);
}

/* The members of the object in cell c written among the job's own (its declaration of plans
 * or of a batch model: the keys jobspec_plans_json() and jobspec_batch_json() write, none of
 * which is a field of the job). Returns 1 when the cell held an object, 0 when not (nothing
 * written). */
static int merge_members(struct jsontext *t, const PGresult *r, int row, int c, int precision)
{
    if (PQgetisnull(r, row, c))
        return 0;
    size_t at = t->len;
    jsontext_doc(t, PQgetvalue(r, row, c), precision);
    if (t->failed)
        return 0;
    int object = t->p[at] == '{';
    if (!object || t->len - at == 2) { /* not an object, or {} */
        t->len = at;
        t->p[at] = '\0';
        return object;
    }
    t->p[at] = ','; /* {"k":v,...} -> ,"k":v,... */
    t->p[--t->len] = '\0';
    return 1;
}

/* The declared length, the total the job reported it will run, and "estimate" (jobview.h). */
static void length_fields(struct jsontext *t, const PGresult *r, int row, int precision)
{
    key(t, "total_steps");
    cell_int(t, r, row, C_TOTAL_STEPS);
    real_member(t, "epochs", r, row, C_EPOCHS, precision);
    key(t, "stop_at_convergence");
    if (strcmp(PQgetvalue(r, row, C_STOP_CONV), "t") == 0)
        jsontext_lit(t, "true");
    else
        jsontext_lit(t, "false");
    real_member(t, "stop_at_loss", r, row, C_STOP_LOSS, precision);
    key(t, "reported_total_steps");
    cell_int(t, r, row, C_REPORTED_TOTAL);
    if (!cell_finite(r, row, C_EST_ERROR))
        return;
    key(t, "estimate");
    if (PQgetisnull(r, row, C_EST_ERROR)) {
        jsontext_lit(t, "null");
        return;
    }
    jsontext_lit(t, "{\"error\":");
    cell_real(t, r, row, C_EST_ERROR, precision);
    jsontext_lit(t, ",\"samples\":");
    cell_int(t, r, row, C_EST_SAMPLES);
    jsontext_lit(t, ",\"source\":");
    jsontext_str(t, PQgetvalue(r, row, C_EST_SOURCE));
    jsontext_lit(t, "}");
}

/* "progress": {steps_done, total_steps, percent, of} when the job's length in steps is
 * known: the latest step it reported (0 before its first report) of its declared
 * total_steps ("of": "declared"), else of the total it reported through libringjob
 * ("reported"); null when neither is known. */
static void progress_field(struct jsontext *t, const PGresult *r, int row, int precision)
{
    int declared = !PQgetisnull(r, row, C_TOTAL_STEPS);
    int col = declared ? C_TOTAL_STEPS : C_REPORTED_TOTAL;
    long long total = PQgetisnull(r, row, col) ? 0 : col_ll(r, row, col);
    key(t, "progress");
    if (total < 1) {
        jsontext_lit(t, "null");
        return;
    }
    /* the step of a report is the count done, as the total counts them (ringjob.h) */
    long long done = PQgetisnull(r, row, C_STEP) ? 0 : col_ll(r, row, C_STEP);
    if (done < 0)
        done = 0;
    if (done > total)
        done = total;
    jsontext_lit(t, "{\"steps_done\":");
    jsontext_int(t, done);
    jsontext_lit(t, ",\"total_steps\":");
    jsontext_int(t, total);
    jsontext_lit(t, ",\"percent\":");
    jsontext_real(t, floor(1000.0 * (double)done / (double)total) / 10.0, precision);
    if (declared)
        jsontext_lit(t, ",\"of\":\"declared\"}");
    else
        jsontext_lit(t, ",\"of\":\"reported\"}");
}

/* The batch model: the declared batch, adaptive_batch and max_local_batch (null each
 * without one), "current_batch" and "grad": {sqr, var} (null before its first report). */
static void batch_fields(struct jsontext *t, const PGresult *r, int row, int precision)
{
    if (!merge_members(t, r, row, C_BATCH_SPEC, precision))
        jsontext_lit(t, ",\"batch\":null,\"adaptive_batch\":null,\"max_local_batch\":null");
    key(t, "current_batch");
    cell_int(t, r, row, C_CUR_BATCH);
    if (PQgetisnull(r, row, C_GRAD_SQR) || PQgetisnull(r, row, C_GRAD_VAR)) {
        jsontext_lit(t, ",\"grad\":null");
        return;
    }
    if (!cell_finite(r, row, C_GRAD_SQR) || !cell_finite(r, row, C_GRAD_VAR))
        return;
    key(t, "grad");
    jsontext_lit(t, "{\"sqr\":");
    cell_real(t, r, row, C_GRAD_SQR, precision);
    jsontext_lit(t, ",\"var\":");
    cell_real(t, r, row, C_GRAD_VAR, precision);
    jsontext_lit(t, "}");
}

/* "checkpoint": {step, at}, the last checkpoint the job's program reported (sql/044), null
 * before its first. */
static void checkpoint_field(struct jsontext *t, const PGresult *r, int row)
{
    key(t, "checkpoint");
    if (PQgetisnull(r, row, C_CKPT_STEP)) {
        jsontext_lit(t, "null");
        return;
    }
    jsontext_lit(t, "{\"step\":");
    cell_int(t, r, row, C_CKPT_STEP);
    jsontext_lit(t, ",\"at\":");
    cell_ts(t, r, row, C_CKPT_AT);
    jsontext_lit(t, "}");
}

/* The job's own fields, in the order the API has always written them. */
static void own_fields(struct jsontext *t, const PGresult *r, int row, int precision)
{
    static const struct {
        const char *name;
        int col;
    } ints[] = {{"gpus", C_GPUS}, {"min_gpus", C_MIN}, {"max_gpus", C_MAX}};
    jsontext_lit(t, "{\"id\":");
    cell_int(t, r, row, C_ID);
    jsontext_lit(t, ",\"user\":");
    jsontext_str(t, PQgetvalue(r, row, C_USER));
    jsontext_lit(t, ",\"state\":");
    jsontext_str(t, PQgetvalue(r, row, C_STATE));
    jsontext_lit(t, ",\"name\":");
    jsontext_str(t, PQgetvalue(r, row, C_NAME));
    jsontext_lit(t, ",\"command\":");
    cell_doc(t, r, row, C_CMD, precision);
    jsontext_lit(t, ",\"env\":");
    cell_doc(t, r, row, C_ENV, precision);
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        key(t, ints[i].name);
        cell_int(t, r, row, ints[i].col);
    }
    if (strcmp(PQgetvalue(r, row, C_ELASTIC), "t") == 0)
        jsontext_lit(t, ",\"elastic\":true");
    else
        jsontext_lit(t, ",\"elastic\":false");
    jsontext_lit(t, ",\"priority\":");
    cell_int(t, r, row, C_PRIO);
    jsontext_lit(t, ",\"batch_per_gpu\":");
    cell_int(t, r, row, C_BATCH);
    jsontext_lit(t, ",\"submitted_at\":");
    cell_ts(t, r, row, C_SUBMITTED);
    jsontext_lit(t, ",\"updated_at\":");
    cell_ts(t, r, row, C_UPDATED);
    if (!PQgetisnull(r, row, C_MODEL)) {
        jsontext_lit(t, ",\"model\":");
        cell_doc(t, r, row, C_MODEL, precision);
    }
    jsontext_lit(t, ",\"finished_at\":");
    cell_ts(t, r, row, C_FINISHED);
    merge_members(t, r, row, C_PLAN_SPEC, precision);
    jsontext_lit(t, ",\"current_plan\":");
    cell_str(t, r, row, C_CUR_PLAN);
    length_fields(t, r, row, precision);
    progress_field(t, r, row, precision);
    jsontext_lit(t, ",\"array_id\":");
    cell_int(t, r, row, C_ARRAY_ID);
    jsontext_lit(t, ",\"array_index\":");
    cell_int(t, r, row, C_ARRAY_INDEX);
    batch_fields(t, r, row, precision);
    if (!PQgetisnull(r, row, C_DEPS)) { /* the jobs it runs after (sql/036) */
        jsontext_lit(t, ",\"after\":");
        cell_doc(t, r, row, C_DEPS, precision);
    }
    jsontext_lit(t, ",\"topology\":");
    cell_doc(t, r, row, C_TOPOLOGY, precision);
    jsontext_lit(t, ",\"deadline\":"); /* sql/042; null: none */
    cell_ts(t, r, row, C_DEADLINE);
    checkpoint_field(t, r, row);
}

/* Whether a job in state is one the rounds predict: waiting, holding GPUs or on its way to;
 * a SUSPENDED or ended job's row is left from an earlier round. */
static int predicted_state(const char *state)
{
    enum job_state st;
    return job_state_parse(state, &st) == 0 && !job_state_is_terminal(st) && st != JOB_SUSPENDED;
}

/* ,"name": the cell c of row i of q when on, else null. */
static void view_member(struct jsontext *t, const char *name, int on,
                        void (*cell)(struct jsontext *, const PGresult *, int, int),
                        const PGresult *q, int i, int c)
{
    key(t, name);
    if (on)
        cell(t, q, i, c);
    else
        jsontext_lit(t, "null");
}

/* "remaining": the remaining work the last round planned with (model.remaining of its row
 * of job_sched: jobview.h), null when the job has ended or no round has estimated it. */
static void remaining_member(struct jsontext *t, const char *state, const PGresult *q, int i,
                             int precision)
{
    enum job_state st;
    int live = job_state_parse(state, &st) == 0 && !job_state_is_terminal(st);
    key(t, "remaining");
    if (q && live)
        cell_doc(t, q, i, JS_REMAINING, precision);
    else
        jsontext_lit(t, "null");
}

/* The queue fields from the job's row of job_sched (none: all null). */
static void queue_fields(struct jsontext *t, const char *state, const struct jobtext_sched *s,
                         int precision)
{
    const PGresult *q = s->qrow >= 0 ? s->q : NULL;
    int i = s->qrow;
    int predicted = q && predicted_state(state);
    int waiting = q && strcmp(state, "PENDING") == 0;
    view_member(t, "predicted_finish", predicted, cell_ts, q, i, JS_FINISH);
    view_member(t, "pending_reason", waiting, cell_str, q, i, JS_REASON);
    view_member(t, "queue_position", waiting, cell_int, q, i, JS_POSITION);
    view_member(t, "predicted_start", waiting, cell_ts, q, i, JS_START);
    view_member(t, "remaining_source", predicted, cell_str, q, i, JS_SOURCE);
    remaining_member(t, state, q, i, precision);
    key(t, "forecast"); /* null: none made, or the job has ended */
    if (predicted && !PQgetisnull(q, i, JS_FORECAST))
        cell_doc(t, q, i, JS_FORECAST, precision);
    else
        jsontext_lit(t, "null");
}

/* "allocation": [{node, gpus: [index...]}] and "world_size" from the allocation rows of job
 * id (from s->arow on while they name it). */
static void alloc_fields(struct jsontext *t, long long id, const struct jobtext_sched *s)
{
    const PGresult *a = s->a;
    long long world = 0;
    jsontext_lit(t, ",\"allocation\":[");
    for (int i = s->arow; a && i >= 0 && i < PQntuples(a); i++) {
        if (col_ll(a, i, JA_JOB) != id)
            break;
        jsontext_raw(t, ",", i > s->arow ? 1 : 0);
        jsontext_lit(t, "{\"node\":");
        cell_int(t, a, i, JA_NODE);
        jsontext_lit(t, ",\"gpus\":[");
        int first = 1;
        for (char *g = PQgetvalue(a, i, JA_GPUS), *end; *g; g = end) {
            long v = strtol(g, &end, 10);
            jsontext_raw(t, ",", first ? 0 : 1);
            jsontext_int(t, v);
            first = 0;
            if (end == g)
                break;
        }
        jsontext_lit(t, "]}");
        world += col_ll(a, i, JA_COUNT);
    }
    jsontext_lit(t, "],\"world_size\":");
    jsontext_int(t, world);
}

void jobtext_job(struct jsontext *t, const PGresult *r, int row, const struct jobtext_sched *s,
                 int precision)
{
    own_fields(t, r, row, precision);
    if (s) {
        queue_fields(t, PQgetvalue(r, row, C_STATE), s, precision);
        alloc_fields(t, col_ll(r, row, C_ID), s);
    }
    jsontext_lit(t, "}");
}
