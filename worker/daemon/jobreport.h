/* jobreport: what the server hears of one job of this worker (struct wjob, wjob_int.h),
 * queued in the agent's outbox: the job's state transitions, action results, its minibatch
 * metrics in batches and its log. A stale job (one the server no longer has this node run)
 * has its metrics dropped and its log kept here. */
#ifndef RINGMASTER_JOBREPORT_H
#define RINGMASTER_JOBREPORT_H

struct agent;
struct wjob;

/* Queues the job's transition to state, with detail and exit_code (< 0: none), after the
 * metrics not yet queued, so that the reports before a transition arrive before it. */
void jobreport_state(struct agent *a, struct wjob *j, const char *state, const char *detail,
                     int exit_code);

/* Tells the server that job j's launch failed on this node: the daemon that exec action act
 * started for the job's mpirun exited with code (state PENDING, docs/worker-protocol.md). */
void jobreport_launch_failed(struct agent *a, struct wjob *j, long long act, int code);

/* Queues the outcome of action act: "ok" when ok, else "failed", with detail. */
void jobreport_result(struct agent *a, long long act, int ok, const char *detail);

/* Queues the job's batch of metrics, when not empty, with the channel's total steps and
 * gradient statistics, and starts a new batch: in the node's post (POST
 * /api/v1/nodes/{id}/metrics), with the other jobs' gathered so far, queued at once. */
void jobreport_flush_metrics(struct agent *a, struct wjob *j);

/* Moves the channel's reports into the job's batch (RUNNING is reported at the first),
 * queued when the batch is full. */
void jobreport_take_metrics(struct agent *a, struct wjob *j);

/* Every METRICS_EVERY_S (0.5 s): one post of the node's jobs' batches, all at once, as
 * one request. */
void jobreport_tick(struct agent *a);

/* Queues the log's new bytes, up to a chunk a call. */
void jobreport_ship_log(struct agent *a, struct wjob *j);

#endif
