/* forecast: when waiting jobs are predicted to start and finish. GPUs free now, then the GPUs
 * of the running jobs as their models predict them to finish; the waiting jobs in queue
 * order, each taking its GPUs as soon as enough are back and giving them back when its own
 * model says it ends. What the live scheduler tells a waiting job ("predicted start"). */
#ifndef RINGMASTER_FORECAST_H
#define RINGMASTER_FORECAST_H

#include <stddef.h>

/* GPUs that come back at a time: a running job's, when it is predicted to finish. */
struct forecast_release {
    double at; /* the caller's clock (seconds) */
    int gpus;
};

/* A waiting job in queue order: the GPUs it needs to start (forecast_need), and what the
 * forecast finds (< 0: unknown). */
struct forecast_wait {
    int need;
    double start, finish;
};

/* The GPUs a waiting job needs to start: an elastic job its minimum (when set), else its
 * request. */
int forecast_need(int elastic, int min_gpus, int gpus);

/* The seconds waiting job k of the queue runs on need GPUs (< 0: unknown). */
typedef double (*forecast_left_f)(void *ctx, size_t k, int need);

/* Fills q[k].start and q[k].finish of the nq waiting jobs in queue order, from nfree GPUs
 * free at now and the nrun releases of the running jobs (those with a known finish). From
 * the first job whose start cannot be predicted (not enough GPUs ever come back), or whose
 * own length is unknown (left < 0: its start is known, its finish not), the rest stay as
 * they were (the caller sets them to -1). Returns 0, or -1 with errno ENOMEM (nothing
 * predicted). */
int forecast_starts(double now, int nfree, const struct forecast_release *run, size_t nrun,
                    struct forecast_wait *q, size_t nq, forecast_left_f left, void *ctx);

#endif
