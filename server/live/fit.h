/* fit: the pure parts of the live scheduler's refits (no database, no I/O), so that
 * unit tests can check them:
 *  - the speed fit from step times measured on GPUs of different models, normalised to the
 *    reference GPU (speed 1) the way the core scales a GPU model (plan.h: only the compute
 *    terms θ0 + θ1 m are divided by the GPU's speed; communication is unchanged);
 *  - a bounded, downsampled (step, loss) series that a job's points are appended to as they
 *    arrive, so that the convergence refit reads only the new ones. It keeps the whole run
 *    evenly (the core's conv_fitter keeps recent points dense and thins old ones
 *    geometrically: on a long run its fit misses the early curve, which the shape needs). */
#ifndef RINGMASTER_LIVE_FIT_H
#define RINGMASTER_LIVE_FIT_H

#include <stddef.h>

#include "speed.h"

/* Mean step time step_s > 0 at world size w >= 1 on GPUs of speed gpu_speed (relative to the
 * reference; <= 0 or not finite: 1), one node, m examples per GPU per step (<= 0: the model's
 * batch_per_gpu; a job with a batch model measures its own, its global batch / w). */
struct live_fit_obs {
    int w;
    double step_s;
    double gpu_speed;
    double m;
};

/* Fits sm (batch_per_gpu and gpus_per_node set by the caller) so that it describes the job on
 * the reference GPU. When every observation comes from one speed s the fit is exact under the
 * core's model: the raw fit's compute coefficients θ0, θ1 are multiplied by s. With several
 * speeds the group with the most observations (ties: the speed nearest 1) gives that first
 * estimate; its compute time C then converts every observation to the reference,
 * t_ref = t + C (1 - 1/s), bounded by t min(1, s) and t max(1, s) (all communication, all
 * compute), and the fit is redone on them. n >= 1. Returns 0, or -1 (errno) leaving *sm. */
int live_fit_speed(struct speed_model *sm, const struct live_fit_obs *obs, size_t n);

#define LIVE_FIT_SERIES_MAX 512

/* A job's loss curve as it arrives: every point while fewer than LIVE_FIT_SERIES_MAX came,
 * then every stride-th (by arrival), the stride doubling each time the buffer fills, so that
 * the points held cover the whole run evenly. Zero-initialised: empty. */
struct live_fit_series {
    double step[LIVE_FIT_SERIES_MAX];
    double loss[LIVE_FIT_SERIES_MAX];
    size_t n;          /* points held */
    long long stride;  /* keep every stride-th arrival (0 means 1) */
    long long arrived; /* points appended ever */
};

/* Appends a point (in increasing step order: the caller reads them so). Returns 1 when the
 * series changed (the point is held, or the stride doubled), 0 when the point was passed
 * over (the series, and so a fit on it, are as they were). */
int live_fit_series_add(struct live_fit_series *s, double step, double loss);

#endif
