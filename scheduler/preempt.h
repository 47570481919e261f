/* preempt: which running job gives up its GPUs when a guarantee of the core must take them
 * (guarantee.h: a fair share, max_wait_s; a deadline may call it too). The one owner of that
 * choice: the job that would lose the least work since its last checkpoint goes first, and no
 * job goes within min_runtime_s of its start.
 *
 * A stopped job restarts from its last checkpoint: what it ran since then is redone, on as
 * many GPUs as it held. So the work a stop loses is cur_gpus x the seconds since the later of
 * its last checkpoint (sched_job.last_checkpoint_time) and the start of its current run
 * (last_change_time: a start, resume, resize or migration restarts it from a checkpoint, so
 * nothing before it is at stake). The old rule, the most attained service first, breaks ties
 * (e.g. two jobs that have just checkpointed). */
#ifndef RINGMASTER_PREEMPT_H
#define RINGMASTER_PREEMPT_H

#include "sched_types.h"

/* GPU-seconds of progress job j would lose if stopped at now (0 when it holds no GPUs). */
double preempt_loss_gpu_s(const struct sched_job *j, double now);

/* When job j's current run began on the caller's clock: last_change_time, or for a job whose
 * change time is unset, now - run_time. */
double preempt_run_start(const struct sched_job *j, double now);

/* 1 when job j may be stopped at snap->now: it holds no GPUs, or its current run has lasted
 * snap->min_runtime_s or longer (<= 0: always). */
int preempt_allowed(const struct sched_snapshot *snap, const struct sched_job *j);

/* 1 when job a is to be stopped before job b (both holding GPUs): less work lost since its
 * checkpoint, then more attained service (run_time x GPUs), then the earlier in the
 * snapshot (under SCHED_PREEMPT_MOST_SERVICE the loss is not looked at). A strict order, so a
 * caller's loop over candidates picks the same job whatever it visits first. */
int preempt_before(const struct sched_snapshot *snap, size_t a, size_t b);

#endif
