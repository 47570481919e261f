/* submit: storing submissions, one job (POST /api/v1/jobs) or many in one transaction
 * (POST /api/v1/jobs:batch): validation (spec/jobspec.h), the admission check (a job that can
 * never fit the cluster up is refused, unless it holds), the Idempotency-Key that makes a
 * retry safe, and one wake-up of the scheduler. Concurrent single submissions are stored
 * together, a group in one statement (submit_group.h). A request becomes a submission
 * (submission.h) and its row (submit_row.h); submit.c stores one job, submit_batch.c a batch. */
#ifndef RINGMASTER_API_SUBMIT_H
#define RINGMASTER_API_SUBMIT_H

struct api_call;

#define JOBS_BATCH_MAX 1000
#define JOBS_ARRAY_INDEX_MAX 1000000

/* POST /api/v1/jobs: 201 and the job; with an Idempotency-Key already used by the caller,
 * 200 and the first job (409 when the key came with a different body); 422 when it can never
 * fit the cluster up and does not hold. */
void jobs_submit(struct api_call *call);

/* jobs_submit() on libmicrohttpd's thread (api_run_inline; call->db NULL): answers a broken
 * request, or queues the job behind the statement of submissions running (its leader stores
 * and answers it) and returns 1; returns 0 having done nothing when no statement runs (the
 * request then goes to a handler's thread, whose submission leads). */
int jobs_submit_inline(struct api_call *call);

/* POST /api/v1/jobs:batch {"jobs": [submission, ...]} (1..1000): all stored in one
 * transaction, or none: 201 {"items": [job...]} in their order; 400 naming jobs[i].field for
 * every broken field; 413 for more than 1000; 422 naming jobs[i] for the first that cannot
 * fit. An Idempotency-Key covers the whole batch (each job's key is KEY#i, its request the
 * hash of the whole body): a retry answers 200 and the jobs the first try made, 409 when it
 * came with another body. When every job carries "array_index" (0..1000000, distinct) the
 * batch is an array: each job stores it and its array's id (the first job's id), and gets
 * RINGJOB_ARRAY_INDEX in its environment; the answer adds "array_id". The scheduler is woken
 * once. */
void jobs_submit_batch(struct api_call *call);

#endif
