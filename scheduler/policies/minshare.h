/* minshare: ElasticFlow's minimum satisfactory share (Gu et al., ASPLOS'23), the deadline
 * rule of the ringmaster policy (internal to the policies). A job with a deadline needs the
 * fewest GPUs whose predicted finish, by its own speed model, meets the deadline; it waits in
 * the policy's order (shortest remaining first) while its slack lasts, and once the slack
 * runs out it gets that least share ahead of that order, taken from the GPUs left free, then
 * from the jobs predicted to run longest. A deadline no count can meet any more is left to the
 * order (the job runs as best effort and does not take GPUs it could not use in time). */
#ifndef RINGMASTER_POLICY_MINSHARE_H
#define RINGMASTER_POLICY_MINSHARE_H

#include "policy.h"

/* The margin a deadline is planned with: the job's predicted time counts this much longer.
 * Measured on the workloads of docs/evaluation.md "Deadlines": 0.05 and 0.01 gave up on jobs
 * whose deadline is just above their time alone, which a plain EDF still meets; the rounds
 * correct the forecast every minute, so none is kept (the restart is counted, below). */
#define MINSHARE_MARGIN 0.0
/* The slack that runs out: a job waits in the policy's order while its finish at its request
 * is earlier than its deadline by more than this share of its time there (0.25: measured
 * there between 0.05, which met fewer, and 0.5, which reserves every share at arrival). */
#define MINSHARE_SLACK 0.25

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
 * its bounds and the capacity) is later than the deadline less MINSHARE_SLACK of its time
 * there; 0 otherwise. */
int policy_minshare_urgent(const struct sched_snapshot *snap, const struct sched_job *j,
                           int capacity);

/* Gives every urgent job (earliest deadline first) that would miss at pw[i].gpus its least
 * share, when the free GPUs and what other jobs can give make room: first elastic jobs shrink
 * toward their minimum, then jobs predicted to run longer than the urgent job on its share
 * are stopped; the jobs whose deadline no count can meet give first, then the others, the
 * longest predicted first; never a job whose deadline counts and is met. A running job that
 * holds a count meeting its deadline counts as urgent: it keeps its share once given.
 * Returns 0, or -1 with errno ENOMEM (pw unchanged). */
int policy_minshare_apply(const struct sched_snapshot *snap, struct policy_want *pw);

#endif
