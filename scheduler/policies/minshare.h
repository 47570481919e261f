/* minshare: ElasticFlow's minimum satisfactory share (Gu et al., ASPLOS'23), the deadline
 * rule of the ringmaster policy (internal to the policies). A job with a deadline needs the
 * fewest GPUs whose predicted finish, by its own speed model, meets the deadline; it waits in
 * the policy's order (shortest remaining first) while its slack lasts, and once the slack
 * runs out it gets that least share ahead of that order, taken from the GPUs left free, then
 * from the jobs the order ranks last. A deadline no count can meet any more is left to the
 * order (the job runs as best effort and does not take GPUs it could not use in time). */
#ifndef RINGMASTER_POLICY_MINSHARE_H
#define RINGMASTER_POLICY_MINSHARE_H

#include "policy.h"

/* The margin a deadline is planned with: a finish predicted within this share of the job's
 * time of the deadline counts as late (rounds come every minute, the restart is an estimate). */
#define MINSHARE_MARGIN 0.05

/* Job j's predicted finish on w GPUs at snap->now: now + T(w) (policy_time_at) times
 * (1 + MINSHARE_MARGIN), plus resize_cost_s when it runs on another count (a restart).
 * INFINITY without a model. */
double policy_minshare_finish(const struct sched_snapshot *snap, const struct sched_job *j, int w);

/* The least count of job j, within its bounds and the capacity (a rigid job: its request
 * only), whose policy_minshare_finish() meets its deadline: 0 when j has no deadline, -1
 * when no count meets it. Counts tried: the request, then the minimum and its doublings. */
int policy_minshare_count(const struct sched_snapshot *snap, const struct sched_job *j,
                          int capacity);

/* 1 when j's slack has run out: it has a deadline and its finish at its request (clamped to
 * its bounds and the capacity) is later than the deadline less MINSHARE_MARGIN of its time
 * there; 0 otherwise. */
int policy_minshare_urgent(const struct sched_snapshot *snap, const struct sched_job *j,
                           int capacity);

/* Gives every urgent job (earliest deadline first) that would miss at pw[i].gpus its least
 * share, when the free GPUs and what other jobs can give (the longest predicted first: an
 * elastic job down to its minimum, a rigid one stopped; never an urgent job) make room.
 * Returns 0, or -1 with errno ENOMEM (pw unchanged). */
int policy_minshare_apply(const struct sched_snapshot *snap, struct policy_want *pw);

#endif
