/* jobview: the job object as the API answers it. A job row (JOB_COLS of jobs j JOIN users u)
 * as JSON, a page of them, and the scheduler's view of each job added to it (pending reason,
 * queue position, predicted start and finish, allocation, world size, model), read from
 * what the rounds wrote (job_sched, allocations). */
#ifndef RINGMASTER_API_JOBVIEW_H
#define RINGMASTER_API_JOBVIEW_H

#include <jansson.h>
#include <libpq-fe.h>

struct api_call;

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define JOB_COLS                                                                                   \
    "j.id, u.name, j.state, j.name, j.command, j.env, j.model, j.gpus, j.min_gpus,"                \
    " j.max_gpus, j.elastic, j.priority, j.batch_per_gpu, " TS("j.submitted_at") ", " TS(          \
        "j.updated_at") ", " TS("j.finished_at") ", j.plan_spec, j.current_plan, j.total_steps,"   \
                                                 " j.epochs, j.stop_at_convergence, "              \
                                                 "j.stop_at_loss, j.reported_total_steps,"         \
                                                 " j.estimate_error, j.estimate_samples, "         \
                                                 "j.estimate_source,"                       \
                                                 " (SELECT l.step FROM job_last_report l"   \
                                                 " WHERE l.job_id = j.id), j.array_id, j.array_index,"  \
                                                 " j.batch_spec, j.current_batch, j.grad_sqr,"      \
                                                 " j.grad_var"
enum {
    C_ID,
    C_USER,
    C_STATE,
    C_NAME,
    C_CMD,
    C_ENV,
    C_MODEL,
    C_GPUS,
    C_MIN,
    C_MAX,
    C_ELASTIC,
    C_PRIO,
    C_BATCH,
    C_SUBMITTED,
    C_UPDATED,
    C_FINISHED,
    C_PLAN_SPEC,
    C_CUR_PLAN,
    C_TOTAL_STEPS,
    C_EPOCHS,
    C_STOP_CONV,
    C_STOP_LOSS,
    C_REPORTED_TOTAL,
    C_EST_ERROR,
    C_EST_SAMPLES,
    C_EST_SOURCE,
    C_STEP,
    C_ARRAY_ID,
    C_ARRAY_INDEX,
    C_BATCH_SPEC,
    C_CUR_BATCH,
    C_GRAD_SQR,
    C_GRAD_VAR,
    C_NCOLS
};

/* One row of JOB_COLS as the API's job object (new). */
json_t *jobview_json(const PGresult *r, int row);

/* {"items": rows, "next": the last id when more rows than limit came back} (new). */
json_t *jobview_page(const PGresult *r, long long limit);

/* Answers with the job of id: status, or 404 when none. With sched, the scheduler's view is
 * added (jobview_sched_fields). */
/* A read-only REPEATABLE READ transaction on c, so that the several queries of one answer
 * see one snapshot. begin returns 1 when it opened one, 0 inside the caller's transaction
 * (left alone), -1 on failure; end(c, what begin returned) closes what begin opened. */
int jobview_snapshot_begin(PGconn *c);
void jobview_snapshot_end(PGconn *c, int begun);

void jobview_respond(struct api_call *call, long long id, unsigned status, int sched);

/* Adds to job (a job object, stolen; returned): "pending_reason", "queue_position" and
 * "predicted_start" (null unless the job is PENDING and a round explained it),
 * "predicted_finish" (the last round's, null when unknown or the job is SUSPENDED or has
 * ended), "remaining_source" (where the last round's estimate of its remaining work came
 * from: declared, fit, prior, elapsed; null when it had none), "allocation"
 * [{node, gpus: [index...]}] and "world_size" (GPUs held now), and the
 * scheduler's model of the job merged into its "model" object (declared fields stay unless
 * the scheduler has a field of that name; a `model` object is made when the job declared
 * none). */
json_t *jobview_sched_fields(PGconn *c, json_t *job);

/* As jobview_sched_fields for every item of a page {"items": [...]} (stolen; returned; its
 * items in ascending ids, as a page is), without the models; two queries at most, and no
 * query of the scheduler's view for a page of ended jobs. */
json_t *jobview_list_fields(PGconn *c, json_t *page);

#endif
