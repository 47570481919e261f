/* learn_fit: a job's speed models from the steps it measured, the one fit that the server's
 * live refit and the simulator's --speed live both call (docs/scheduler.md "Live learning").
 * An observation is the mean step time the job measured at one world size, node count and
 * GPU model (sched_node.gpu_model), with that model's one factor (sched_node.gpu_speed).
 *  - The reference model (sched_job.speed, what a policy reads when a job has no entry for a
 *    type): every observation normalised to the reference GPU (speed 1) the way the core
 *    scales a GPU model (plan.h: only the compute terms theta[0] + theta[1] m are divided by
 *    the GPU's speed; communication is unchanged), learn_fit_speed().
 *  - One model per GPU model measured (sched_type_speed, source MEASURED, absolute: no factor
 *    applies to it), learn_fit_types(): from two sizes or more on that model, its own fit of
 *    those steps; from one size, the one-size rule of learn.h (its compute from the step time
 *    it measured there, its communication from the cluster's prior).
 *  - What the learning rules read of the steps (sched_job.measured_*), learn_fit_measured(). */
#ifndef RINGMASTER_LEARN_FIT_H
#define RINGMASTER_LEARN_FIT_H

#include <stddef.h>

#include "learn.h"
#include "sched_types.h"
#include "speed.h"

/* The steps measured at one placement: step_s > 0 mean seconds per step at world size w >= 1
 * over nodes nodes (<= 0: 1) of GPU model gpu_model, whose one factor is gpu_speed (<= 0 or
 * not finite: 1), m examples per GPU per step (<= 0: the model's batch_per_gpu; a job with a
 * batch model measures its own, its global batch / w), over seconds of steps (the weight of
 * a mean over several observations; <= 0: 1). */
struct learn_obs {
    int w;
    int nodes;
    int gpu_model;
    double gpu_speed;
    double step_s;
    double m;
    double seconds;
    enum speed_link link; /* appended: the placement's link class (speed.h; ISLAND, the zero,
                           * with nodes > 1 is SWITCH: one switch, as before classes) */
};

/* A caller's cache of a job's fits of two sizes or more per GPU model (learn_fit_types'
 * reuse; learn_round keeps it): valid for the steps of the caller's version. */
#define LEARN_FIT_CACHE_MAX 8
struct learn_fit_cache {
    long long version; /* the caller's version of the steps they were fitted from */
    int valid;
    size_t n;
    struct sched_type_speed fits[LEARN_FIT_CACHE_MAX];
};

/* The reference model: fits sm (batch_per_gpu, dataset_size and gpus_per_node set by the
 * caller) so that it describes the job on the reference GPU. When every observation comes
 * from one speed s the fit is exact under the core's model: the raw fit's compute
 * coefficients theta[0], theta[1] are multiplied by s. With several speeds the group with the
 * most observations (ties: the speed nearest 1) gives that first estimate; its compute time C
 * then converts every observation to the reference, t_ref = t + C (1 - 1/s), bounded by
 * t min(1, s) and t max(1, s) (all communication, all compute), and the fit is redone on
 * them. n >= 1. Returns 0, or -1 (errno) leaving *sm. */
int learn_fit_speed(struct speed_model *sm, const struct learn_obs *obs, size_t n);

/* The distinct world sizes among the observations of GPU model gpu_model (all of them when
 * gpu_model < 0) with a positive finite step time. */
int learn_obs_sizes(const struct learn_obs *obs, size_t n, int gpu_model);

/* One entry per GPU model among obs[0..n) (in order of first appearance, at most cap) into
 * out: source MEASURED, measured_sizes its distinct sizes there, uncertainty 0, max_local 0
 * (the job's; learn_types.h sets it per type), its speed model with like's batch_per_gpu,
 * dataset_size and gpus_per_node: with two sizes or more its own fit of those steps
 * (absolute), with one the one-size rule from their seconds-weighted mean step time and
 * examples per GPU: with the job's own communication when own (may be NULL) is its fit from
 * two sizes or more (learn_speed_one_size_own), else with the prior p (learn_speed_one_size).
 * A model whose fit fails is left out. reuse (may be NULL) holds fits of two sizes or more
 * made earlier from these same observations: an entry of reuse for a GPU model is taken as
 * it is instead of fitting again (the NNLS fits are the costly part: about 2-3 us each, tens
 * of ms a round at 10,000 jobs). Returns the entries made. */
size_t learn_fit_types(const struct learn_obs *obs, size_t n, const struct speed_model *like,
                       const struct speed_model *own, const struct learn_prior *p,
                       const struct learn_fit_cache *reuse, struct sched_type_speed *out,
                       size_t cap);

/* What the learning rules read (learn.h) of the observations into j: measured_sizes (distinct
 * world sizes over every GPU model), measured_max_gpus, measured_nodes (the most nodes the
 * largest size spanned), and with one size its seconds-weighted mean step time normalised to
 * the reference GPU (step_s x gpu_speed) and examples per GPU there (measured_step_s,
 * measured_batch_per_gpu, measured_step_gpus, measured_step_nodes; 0 otherwise). With several
 * sizes but no reference model in j->speed (learn_fit_speed refused them), the same of its
 * smallest size, so that learn_model() still gives it one. n 0: all zero (not tracked). */
void learn_fit_measured(struct sched_job *j, const struct learn_obs *obs, size_t n);

#endif
