/* jobview: the job object as the API answers it. A job row (JOB_COLS of jobs j JOIN users u)
 * as JSON, a page of them, and the scheduler's view of each job added to it (pending reason,
 * queue position, predicted start and finish, allocation, world size, model), read from
 * what the rounds wrote (job_sched, allocations). */
#ifndef RINGMASTER_API_JOBVIEW_H
#define RINGMASTER_API_JOBVIEW_H

#include <jansson.h>
#include <libpq-fe.h>

#include "jobcols.h"

struct api_call;

/* One row of JOB_COLS as the API's job object (new), as jobtext writes it. */
json_t *jobview_json(const PGresult *r, int row);

/* Answers status with the job of row of r (JOB_COLS), as jobview_json() has it. */
void jobview_respond_row(struct api_call *call, const PGresult *r, int row, unsigned status);

/* A read-only REPEATABLE READ transaction on c, so that the several queries of one answer
 * see one snapshot. begin returns 1 when it opened one, 0 inside the caller's transaction
 * (left alone), -1 on failure; end(c, what begin returned) closes what begin opened. */
int jobview_snapshot_begin(PGconn *c);
void jobview_snapshot_end(PGconn *c, int begun);

/* Answers with the job of id: status, or 404 when none. With sched, the scheduler's view is
 * added: "pending_reason", "queue_position" and "predicted_start" (null unless the job is
 * PENDING and a round explained it), "predicted_finish" (the last round's, null when unknown
 * or the job is SUSPENDED or has ended), "remaining_source" (where the last round's estimate
 * of its remaining work came from: declared, fit, prior, elapsed; null when it had none),
 * "remaining" (that work: {epochs, steps, seconds, source, reason, epochs_done, gpus} as the
 * scheduler plans it, live_model_remaining_json(); null when the job has ended or no round
 * estimated it), "allocation" [{node, gpus: [index...]}] and "world_size" (GPUs held now), and
 * the scheduler's model of the job merged into its "model" object (declared fields stay
 * unless the scheduler has a field of that name; a `model` object is made when the job
 * declared none; jobview_model_now() applied). The job's row, its allocation and that view
 * are read from one snapshot. */
void jobview_respond(struct api_call *call, long long id, unsigned status, int sched);

/* Makes a scheduler's model object (borrowed; anything else is left alone) of a job in state
 * say what holds now: an ended job has nothing remaining (source "ended"), and the copies in
 * "convergence" (steps_remaining, seconds_remaining) are the remaining work's, which each
 * round refreshes while the rest of the model is written only when refitted. */
void jobview_model_now(json_t *model, const char *state);

/* The text of a page of jobs: {"items": the first limit rows of r (JOB_COLS, in ascending
 * ids), each with the scheduler's view as jobview_respond() adds it but without the models,
 * "next": the last id shown, as a string, when r has more rows than limit, else null}; reals
 * at JOBVIEW_LIST_PRECISION. Two queries on c at most, and none of job_sched for a page of
 * ended jobs. Returns the text (new; free()) and its length in *len, or NULL on ENOMEM. */
char *jobview_list_text(PGconn *c, const PGresult *r, long long limit, size_t *len);

/* The precision of the reals of a list, as etag_respond_json() writes them. */
#define JOBVIEW_LIST_PRECISION 15

#endif
