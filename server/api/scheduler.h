/* scheduler: the scheduler's resource. Its settings (GET/PUT /api/v1/scheduler), stored in
 * the database so that a choice survives a restart and the scheduler thread reads them at each
 * round (a change wakes it), and the audit of its rounds. */
#ifndef RINGMASTER_API_SCHEDULER_H
#define RINGMASTER_API_SCHEDULER_H

struct api_call;

/* GET /api/v1/scheduler: the settings, the policies one may choose, the last round. */
void scheduler_get(struct api_call *call);
/* PUT /api/v1/scheduler (admin): any of policy, interval_s, node_timeout_s,
 * min_resize_interval_s, resize_cost_s, grace_s, quantum_s, explore_stage_s, max_wait_s,
 * paused; 400
 * naming a bad or unknown field (and a number's bounds). Answers as GET. */
void scheduler_put(struct api_call *call);
/* GET /api/v1/scheduler/rounds?limit=N (1..500, default 50): newest first. */
void scheduler_rounds(struct api_call *call);

#endif
