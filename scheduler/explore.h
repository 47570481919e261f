/* explore: the exploring rule (the paper's Exploratory), written once. A job without a usable
 * speed model explores: it runs a stage of the snapshot's explore_stage_s (default
 * SCHED_EXPLORE_STAGE_S, 2.5 min) at each of 1, 2, 4 and 8 GPUs in turn, so that its model
 * can be fitted from its own step times. Policy "exploratory" (policies/exploratory.c)
 * reserves and serves the explorers with it, for the paper's comparisons (the simulator, or a
 * server configured with it: server/live/ then runs each explorer's current stage). The live
 * scheduler no longer switches a round to it: every job is learned under the configured
 * policy (learn.h).
 *
 * The exact rules:
 *  - Only elastic jobs explore. A stage whose size is outside the job's min/max bounds
 *    (min <= 0: 1, max <= 0: no limit) or above the limit (the cluster's capacity, or what
 *    the decision gave) is skipped.
 *  - A stage is done when explored_s[k] reached the stage length. When the caller does not
 *    track explored_s (all four 0), run_time decides: stage k covers run_time in [k, k + 1)
 *    stage lengths.
 *  - An exploring job reserves its largest stage, 8 GPUs when its bounds and the cluster
 *    allow, for the whole exploration; it runs on 1, 2, 4 and then 8 of them in turn.
 *  - Which jobs lack a model (enum explore_model): the policy explores a job whose speed
 *    model may not be used (no fitted speed, or no model source); explore_fits counts the
 *    jobs with no model source. */
#ifndef RINGMASTER_EXPLORE_H
#define RINGMASTER_EXPLORE_H

#include <stddef.h>

#include "sched_types.h"

/* Which jobs count as without a model. */
enum explore_model {
    EXPLORE_NO_SPEED,  /* its speed model may not be used: !speed.fitted or source NONE */
    EXPLORE_NO_SOURCE, /* model_source is SCHED_MODEL_NONE */
};

/* The snapshot's stage length: explore_stage_s, or SCHED_EXPLORE_STAGE_S when it is not
 * above 0 (NaN included). */
double explore_stage_s(const struct sched_snapshot *snap);

/* The size of j's current exploring stage: the first of 1, 2, 4, 8 within its bounds and at
 * most limit GPUs that has run less than stage_s; 0 when every such stage is done. Whether
 * j explores at all is not asked (explore_reserve, explore_running_stage). */
int explore_stage(const struct sched_job *j, int limit, double stage_s);

/* The GPUs job j reserves while it explores (its largest stage within its bounds and
 * capacity), or 0 when it does not explore: not elastic, not without a model as m counts it,
 * or every stage it may run done. */
int explore_reserve(const struct sched_job *j, int capacity, double stage_s, enum explore_model m);

/* The stage an exploring job runs of the gpus its decision reserved (the caller runs it at
 * that size and leaves the rest idle): explore_stage(j, gpus, stage_s) for an elastic job
 * without a usable speed model (EXPLORE_NO_SPEED), else 0 (it does not explore). */
int explore_running_stage(const struct sched_job *j, int gpus, double stage_s);

/* 1 if exploring delays nobody (policy "exploratory"'s caller may ask it before running it): some job of jobs[0..n) explores (explore_reserve with
 * EXPLORE_NO_SOURCE) and the reservations fit in capacity beside what every other job holds
 * (cur_gpus) or waits for (its minimum, at least 1). Exploration keeps GPUs idle while it
 * runs the smaller stages: a sweep of hundreds of elastic jobs would otherwise hold the whole
 * cluster idle and starve every rigid job behind it (make bench-scale: 96 of 128 GPUs idle,
 * 100 rigid jobs waiting). */
int explore_fits(const struct sched_job *jobs, size_t n, int capacity, double stage_s);

/* Policy "exploratory"'s precedence: in order[0..njobs), each exploring job
 * (EXPLORE_NO_SPEED) is marked in explorer[] and gets its reservation in want[] if it fits
 * in *free_gpus (taken from it); one that does not fit waits whole for a later round.
 * capacity: the GPUs on up nodes; the stage length is explore_stage_s(snap). */
void explore_serve(const struct sched_snapshot *snap, int capacity, const size_t *order, int *want,
                   unsigned char *explorer, long *free_gpus);

#endif
