/* wjob: the jobs one worker runs. Carries out the actions of docs/worker-protocol.md for
 * them (start, suspend, resume, resize, migrate, cancel), watches their channel (jobchan)
 * and their mpirun process, and queues what the server must hear in the agent's outbox:
 * action results, the job's state transitions, minibatch metrics in batches, its log.
 *
 * A job's files live in <state-dir>/jobs/<id>/: chan.sock (RINGJOB_SOCKET) and log (stdout
 * and stderr of mpirun and every rank, kept across relaunches). Checkpoints go to the spec's
 * checkpoint_dir, else <state-dir>/checkpoints/<id>: a migration to another host needs a
 * checkpoint_dir on storage both hosts reach. */
#ifndef RINGMASTER_WJOB_H
#define RINGMASTER_WJOB_H

#include <jansson.h>
#include <poll.h>

struct agent;

/* Carries out (or starts carrying out) one action of the server (borrowed). Returns 0 when
 * taken (or already done before, whose result is then sent again), 1 when the job is busy
 * with another action and this one must wait. */
int wjob_exec_action(struct agent *a, const json_t *action);

/* Fills fds with the jobs' channel descriptors; returns how many (at most max). */
int wjob_pollfds(struct agent *a, struct pollfd *fds, int max);

/* Hands the poll results of the fds filled by wjob_pollfds() to the channels. */
void wjob_handle(struct agent *a, const struct pollfd *fds, int n);

/* Periodic work: reaps exited jobs and finishes their actions, follows the channels'
 * states, forwards metrics and logs, enforces deadlines. */
void wjob_tick(struct agent *a);

/* ids (borrowed): the heartbeat answer's "stop", jobs whose mpirun here the server no longer
 * has this node run (a copy left behind when the job was requeued while this worker was
 * silent). Kills each with SIGKILL, mpirun and its ranks, without asking for a checkpoint (it
 * would overwrite the live copy's in a shared folder), and reports nothing more for it;
 * actions for the job wait until it is reaped. Unknown ids are ignored. */
void wjob_stop_stale(struct agent *a, const json_t *ids);

/* {"running": [{"job_id", "pid", "world_size"}]}, the heartbeat's body (new). */
json_t *wjob_heartbeat_json(struct agent *a);

/* Stops every job and frees them: asks each to checkpoint and exit (waiting up to grace_s),
 * then SIGTERM to the ones left, SIGKILL after grace_s more. Their server state is left as
 * it is: a node that stops heartbeating loses its jobs to the queue, and they restart from
 * these checkpoints. */
void wjob_stop_all(struct agent *a, double grace_s);

#endif
