/* sched_estimate: a job's remaining work from its evidence (declared length,
 * convergence fit, the prior of finished jobs) and the rates the policies plan
 * with (scheduler/estimate.c). Below sched.h, which includes it: the policies
 * call these without seeing sched.h. */
#ifndef RINGMASTER_SCHED_ESTIMATE_H
#define RINGMASTER_SCHED_ESTIMATE_H

#include <stddef.h>

#include "sched_types.h"

/* The prior of remaining work: over the finished jobs' run times d[0..n) that
 * exceed t, the mean of d - t (expected remaining seconds of a job that has run
 * t seconds). Returns it, or -1 when none ran longer than t. */
double sched_estimate_prior_s(const double *d, size_t n, double t);

/* Remaining epochs of job j from its evidence, and their source in *src (may
 * be NULL):
 *  - a declared length: declared_epochs - epochs_done (DECLARED); the fit may
 *    shorten it only when the job stops at convergence (FIT, when 0 < fit <
 *    declared remaining);
 *  - no declared length (or outlived it): the fit when it says > 0 (FIT);
 *  - else (the fit says "now" though the job still runs, or no fit): never 0,
 *    the prior over finished[0..nfinished) given run_time, converted to epochs
 *    at the job's rate (PRIOR), else max(epochs_done, 1) (ELAPSED).
 * Always > 0 and finite for a job that still runs. */
double sched_estimate_remaining(const struct sched_job *j, const double *finished,
                                size_t nfinished, enum sched_estimate_source *src);

/* Sets j->remaining_epochs and j->remaining_source by
 * sched_estimate_remaining() over the snapshot's finished_run_s. The server
 * calls it for each job after filling its evidence. */
void sched_estimate_apply(struct sched_job *j, const struct sched_snapshot *snap);

/* Epochs per second on w GPUs packed on as few nodes as sp's gpus_per_node allows, as the
 * policies plan it: with a batch model (b) its goodput at goodput_outlook(b) (at the best
 * batch when adaptive, that batch into *batch, which may be NULL), else
 * speed_epochs_per_second(). 0 when w < 1. */
double sched_speed_rate(const struct speed_model *sp, const struct batch_spec *b, int w,
                        double *batch);

/* sched_speed_rate() of job j; 0 when its speed model is not fitted. */
double sched_job_rate(const struct sched_job *j, int w, double *batch);

/* The job's own model on GPU model gpu_model (its type_speeds entry), or NULL. */
const struct sched_type_speed *sched_job_type_speed(const struct sched_job *j, int gpu_model);
/* THE rate of job j on w GPUs of GPU model gpu_model, whose one factor is gpu_speed (<= 0 or
 * not finite: 1), in epochs per second, as every policy that weighs GPU models plans it:
 *  - with its own model there (sched_job_type_speed()): sched_speed_rate() of that model, at
 *    its batch with that model's largest local batch (no factor);
 *  - else sched_job_rate() times gpu_speed (the one factor per model).
 * The best batch into *batch (may be NULL) as sched_speed_rate() says. 0 without a model. */
double sched_job_rate_on(const struct sched_job *j, int w, int gpu_model, double gpu_speed,
                         double *batch);
/* The batch spec job j runs with on GPU model gpu_model: its own, with the largest local
 * batch of its model there when it has one. */
struct batch_spec sched_job_batch_on(const struct sched_job *j, int gpu_model);
/* Short name of a source: "given", "declared", "fit", "prior", "elapsed". */
const char *sched_estimate_source_name(enum sched_estimate_source s);

#endif
