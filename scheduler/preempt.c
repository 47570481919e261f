/* preempt: the order in which running jobs are stopped for a guarantee (see preempt.h): the
 * least work lost since the last checkpoint first, none within min_runtime_s of its start. */
#include "preempt.h"

#include <math.h>

/* Two losses this close are the same loss (GPU-seconds). */
#define PREEMPT_EPS 1e-6

double preempt_run_start(const struct sched_job *j, double now)
{
    if (j->last_change_time > 0)
        return j->last_change_time;
    return j->run_time > 0 ? now - j->run_time : now;
}

double preempt_loss_gpu_s(const struct sched_job *j, double now)
{
    if (j->cur_gpus <= 0)
        return 0.0;
    double since = preempt_run_start(j, now);
    if (j->last_checkpoint_time > since)
        since = j->last_checkpoint_time;
    return now > since ? (now - since) * j->cur_gpus : 0.0;
}

int preempt_allowed(const struct sched_snapshot *snap, const struct sched_job *j)
{
    double m = snap->min_runtime_s;

    if (j->cur_gpus <= 0 || !(m > 0) || !isfinite(m))
        return 1;
    return snap->now - preempt_run_start(j, snap->now) >= m - PREEMPT_EPS;
}

static double attained(const struct sched_job *j)
{
    return j->run_time * (j->cur_gpus > 0 ? j->cur_gpus : 1);
}

int preempt_before(const struct sched_snapshot *snap, size_t a, size_t b)
{
    const struct sched_job *x = &snap->jobs[a], *y = &snap->jobs[b];
    double lx = preempt_loss_gpu_s(x, snap->now), ly = preempt_loss_gpu_s(y, snap->now);

    if (snap->preempt_order != SCHED_PREEMPT_MOST_SERVICE && fabs(lx - ly) > PREEMPT_EPS)
        return lx < ly;
    if (attained(x) != attained(y))
        return attained(x) > attained(y);
    return a < b;
}
