/* explore: the exploring rule, written once (explore.h): the stage a job explores, what it
 * reserves, whether exploring fits a round, and policy "exploratory"'s precedence of explorers. */
#include "explore.h"

#include <limits.h>

double explore_stage_s(const struct sched_snapshot *snap)
{
    return snap->explore_stage_s > 0 ? snap->explore_stage_s : SCHED_EXPLORE_STAGE_S;
}

/* Whether j lacks a model as m counts it (EXPLORE_NO_SPEED: policy_has_speed() false). */
static int lacks_model(const struct sched_job *j, enum explore_model m)
{
    if (m == EXPLORE_NO_SOURCE)
        return j->model_source == SCHED_MODEL_NONE;
    return !j->speed.fitted || j->model_source == SCHED_MODEL_NONE;
}

/* A stage's seconds run so far. When explored_s is not tracked, the run time stage after
 * stage: run_time - k stage_s (not clamped to [0, stage_s]: below stage_s exactly when the
 * clamped value is, for every stage_s > 0). */
int explore_stage(const struct sched_job *j, int limit, double stage_s)
{
    int lo = sched_job_min_gpus(j), hi = sched_job_max_gpus(j), tracked = 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++)
        tracked |= j->explored_s[k] > 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        double seen = tracked ? j->explored_s[k] : j->run_time - k * stage_s;
        if (w >= lo && w <= hi && w <= limit && seen < stage_s)
            return w;
    }
    return 0;
}

int explore_reserve(const struct sched_job *j, int capacity, double stage_s, enum explore_model m)
{
    if (!j->elastic || !lacks_model(j, m) || explore_stage(j, capacity, stage_s) == 0)
        return 0;
    int lo = sched_job_min_gpus(j), hi = sched_job_max_gpus(j), reserve = 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        if (w >= lo && w <= hi && w <= capacity)
            reserve = w;
    }
    return reserve;
}

int explore_running_stage(const struct sched_job *j, int gpus, double stage_s)
{
    if (!j->elastic || !lacks_model(j, EXPLORE_NO_SPEED) || gpus <= 0)
        return 0;
    return explore_stage(j, gpus, stage_s);
}

int explore_fits(const struct sched_job *jobs, size_t n, int capacity, double stage_s)
{
    long holds = 0, others = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sched_job *j = &jobs[i];
        int h = explore_reserve(j, capacity, stage_s, EXPLORE_NO_SOURCE);
        if (h > 0)
            holds += h;
        else
            others += j->cur_gpus > 0 ? j->cur_gpus : sched_job_min_gpus(j);
    }
    return holds > 0 && holds + others <= capacity;
}

void explore_serve(const struct sched_snapshot *snap, int capacity, const size_t *order, int *want,
                   unsigned char *explorer, long *free_gpus)
{
    double stage_s = explore_stage_s(snap);
    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        int reserve = explore_reserve(&snap->jobs[i], capacity, stage_s, EXPLORE_NO_SPEED);
        if (reserve == 0)
            continue;
        explorer[i] = 1;
        if (reserve <= *free_gpus) {
            want[i] = reserve;
            *free_gpus -= reserve;
        }
    }
}
