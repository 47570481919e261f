/* job_requests: a person's requests on a job that the scheduler carries out at its next
 * round (each wakes it): a new size, a move to another node, a priority; and the scheduler's
 * model of the job. */
#ifndef RINGMASTER_API_JOB_REQUESTS_H
#define RINGMASTER_API_JOB_REQUESTS_H

struct api_call;

/* POST /api/v1/jobs/{id}/resize {"gpus": N}: the job's requested size becomes N (for an
 * elastic job within min_gpus..max_gpus; a rigid job's min and max follow). 409 when the job
 * has ended. Answers with the job. */
void jobs_resize(struct api_call *call);
/* POST /api/v1/jobs/{id}/migrate {"node": ID}? : asks to move a RUNNING job to that node (or
 * any other one) at the next round where enough GPUs are free on one node. 202 and the job;
 * 409 when it is not running; 400 for an unknown or down node. */
void jobs_migrate(struct api_call *call);
/* PATCH or POST /api/v1/jobs/{id}/priority {"priority": P} (-1000..1000), while it waits or
 * runs. Answers with the job. */
void jobs_priority(struct api_call *call);
/* GET /api/v1/jobs/{id}/model: the scheduler's model of the job (source, speed with its
 * curve per GPU count, convergence with steps and seconds remaining); 404 before the first
 * round that saw it. */
void jobs_model(struct api_call *call);

#endif
