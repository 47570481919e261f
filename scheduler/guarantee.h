/* guarantee: the guarantees every policy goes through (internal to scheduler/;
 * sched_decide() runs it on the policy's counts before placement). The
 * policies optimise what their models say; the guard holds whatever the
 * models say, so a wrong estimate cannot starve a job or a user:
 *  1. quotas: no user's jobs hold more than its max_gpus;
 *  2. fair share: a user with waiting work gets at least its weighted share
 *     of the GPUs (water-filled over the users' demands); what it does not
 *     use is lent to others and reclaimed from them when it has work again;
 *  3. no starvation: a job that fits the cluster and has waited longer than
 *     max_wait_s gets its base count (min_gpus for an elastic job, else its
 *     request) in this decision.
 * Room is made in this order: starts the policy chose for jobs not running
 * yet are dropped (latest first), elastic jobs shrink toward their minimum
 * (largest first), then running jobs yield (suspended under a time-slicing
 * policy, else preempted) in preempt.h's order: the least work lost since its
 * last checkpoint first, none within min_runtime_s of its start. A job
 * the guard served is never taken from in the same decision; for a fair share
 * only jobs of users above their share give way. */
#ifndef RINGMASTER_GUARANTEE_H
#define RINGMASTER_GUARANTEE_H

#include "sched_types.h"

/* Which guarantee stopped a running job, and for which job (the reason names them). */
struct guarantee_stop {
    unsigned char kind; /* 0: none; as forced: 1 max_wait_s, 2 the fair share */
    int64_t for_job;    /* the id of the job it made room for */
};

/* forced[i] is set to 1 for a job the max-wait guarantee served and 2 for one
 * the fair share served (0 otherwise). want has njobs counts within capacity.
 * stops (njobs entries, or NULL) says, of each running job a guarantee stopped
 * (want 0), which and for whom; zeroed for the others. Returns 0, or -1 with
 * errno ENOMEM (want then partly adjusted: the caller fails the decision). */
int guarantee_apply(const struct sched_snapshot *snap, int *want, unsigned char *forced,
                    struct guarantee_stop *stops);

/* The snapshot's max_wait_s as the guard uses it: INFINITY when off (<= 0 or
 * not finite). */
double guarantee_max_wait(const struct sched_snapshot *snap);

/* How long job j has waited, runnable, at snap->now: 0 when it holds GPUs;
 * since last_change_time for a job that ran (preempted or suspended), else
 * since submit_time. */
double guarantee_waited(const struct sched_snapshot *snap, const struct sched_job *j);

/* The user's share (>= some positive weight) and quota (INT_MAX: none). */
double guarantee_user_share(const struct sched_snapshot *snap, int64_t user);
int guarantee_user_quota(const struct sched_snapshot *snap, int64_t user);

#endif
