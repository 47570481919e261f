/* sched_api: the scheduler's HTTP face. The settings (GET/PUT /api/v1/scheduler), the audit
 * of rounds, a person's requests on a job (resize, migrate, priority), and the scheduler's
 * view added to the job objects that GET /api/v1/jobs[/{id}] returns. Each request that
 * changes something wakes the scheduler thread (sched_wake). */
#ifndef RINGMASTER_SCHED_API_H
#define RINGMASTER_SCHED_API_H

#include <jansson.h>
#include <libpq-fe.h>

struct api_call;

/* GET /api/v1/scheduler: the settings, the policies one may choose, the last round. */
void sched_api_get(struct api_call *call);
/* PUT /api/v1/scheduler (admin): any of policy, interval_s, node_timeout_s,
 * min_resize_interval_s, resize_cost_s, grace_s, quantum_s, explore_stage_s, paused; 400
 * naming a bad or unknown field (and a number's bounds). Stored in
 * the database, so the choice survives a restart. Answers as GET. */
void sched_api_put(struct api_call *call);
/* GET /api/v1/scheduler/rounds?limit=N (1..500, default 50): newest first. */
void sched_api_rounds(struct api_call *call);
/* POST /api/v1/jobs/{id}/resize {"gpus": N}: the job's requested size becomes N (for an
 * elastic job within min_gpus..max_gpus; a rigid job's min and max follow). 409 when the job
 * has ended. Answers with the job. */
void sched_api_resize(struct api_call *call);
/* POST /api/v1/jobs/{id}/migrate {"node": ID}? : asks to move a RUNNING job to that node (or
 * any other one) at the next round where enough GPUs are free on one node. 202 and the job;
 * 409 when it is not running; 400 for an unknown or down node. */
void sched_api_migrate(struct api_call *call);
/* PATCH or POST /api/v1/jobs/{id}/priority {"priority": P} (-1000..1000), while it waits or
 * runs. Answers with the job. */
void sched_api_priority(struct api_call *call);

/* GET /api/v1/jobs/{id}/model: the scheduler's model of the job (source, speed with its
 * curve per GPU count, convergence with steps and seconds remaining); 404 before the first
 * round that saw it. */
void sched_api_model(struct api_call *call);

/* Adds to job (a job object, stolen; returned): "pending_reason", "queue_position" and
 * "predicted_start" (null unless the job is PENDING and a round explained it),
 * "predicted_finish" (the last round's, null when unknown or the job is SUSPENDED or has
 * ended), "allocation"
 * [{node, gpus: [index...]}] and "world_size" (GPUs held now), and the scheduler's model of
 * the job merged into its "model" object (declared fields stay unless the scheduler has a
 * field of that name; a `model` object is made when the job declared none). */
json_t *sched_api_job_fields(PGconn *c, json_t *job);

/* As sched_api_job_fields for every item of a page {"items": [...]} (stolen; returned),
 * without the models; two queries in all. */
json_t *sched_api_list_fields(PGconn *c, json_t *page);

#endif
