/* fit: the pure part of the live scheduler's convergence refit (no database, no I/O), so
 * that unit tests can check it (the speed fits from step times are the core's, learn_fit.h,
 * which the simulator calls too):
 *  - a bounded, downsampled (step, loss) series that a job's points are appended to as they
 *    arrive, so that the convergence refit reads only the new ones. It keeps the whole run
 *    evenly (the core's conv_fitter keeps recent points dense and thins old ones
 *    geometrically: on a long run its fit misses the early curve, which the shape needs). */
#ifndef RINGMASTER_LIVE_FIT_H
#define RINGMASTER_LIVE_FIT_H

#include <stddef.h>

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
