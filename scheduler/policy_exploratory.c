/* policy_exploratory: the paper's Exploratory strategy. A job without a usable
 * speed model explores: it runs a stage of snapshot.explore_stage_s (default
 * SCHED_EXPLORE_STAGE_S, 2.5 min) at each of 1, 2, 4 and 8 GPUs in turn, ten
 * minutes in all, so that its model can be fitted from its own step times;
 * after that the doubling heuristic of "precompute" uses the fitted model.
 *
 * The exact rules:
 *  - Only elastic jobs explore. A stage whose size is outside the job's
 *    min/max bounds or above the cluster's capacity is skipped.
 *  - The stage is the first k with explored_s[k] below the stage length. When
 *    the caller does not track explored_s (all four 0), run_time decides:
 *    stage k covers run_time in [k, k + 1) stage lengths.
 *  - An exploring job holds exactly its stage's size, 2^k GPUs (it runs at that
 *    size to measure it; it does not reserve 8 throughout).
 *  - Precedence: exploring jobs are served first, by priority, arrival and id,
 *    before any other job gets its first GPU; one whose stage does not fit in
 *    the GPUs left waits for this round (a partial stage would measure the
 *    wrong size). Running jobs with models may therefore lose GPUs to a job
 *    that has just arrived: that is the explore cost the paper measures.
 *  - A job that has finished exploring but still has no model runs at its
 *    request, like a job without a model under "precompute". */
#include <stdlib.h>

#include "policy.h"

/* The stage (0..3, for 2^k GPUs) job j explores now, or -1. */
static int explore_stage(const struct sched_job *j, int capacity, double stage_s)
{
    double seen[SCHED_EXPLORE_STAGES];
    int tracked = 0;

    if (!j->elastic || policy_has_speed(j))
        return -1;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        seen[k] = j->explored_s[k];
        tracked |= seen[k] > 0;
    }
    for (int k = 0; k < SCHED_EXPLORE_STAGES && !tracked; k++) {
        double s = j->run_time - k * stage_s;
        seen[k] = s < 0 ? 0 : s > stage_s ? stage_s : s;
    }
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        if (w < policy_min_gpus(j) || w > policy_max_gpus(j) || w > capacity)
            continue;
        if (seen[k] < stage_s)
            return k;
    }
    return -1;
}

static void serve_explorers(const struct sched_snapshot *snap, const size_t *order, int *want,
                            unsigned char *explorer, long *free_gpus)
{
    int capacity = policy_capacity(snap);
    double stage_s = snap->explore_stage_s > 0 ? snap->explore_stage_s : SCHED_EXPLORE_STAGE_S;

    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        int stage = explore_stage(&snap->jobs[i], capacity, stage_s);
        if (stage < 0)
            continue;
        explorer[i] = 1;
        if ((1 << stage) <= *free_gpus) {
            want[i] = 1 << stage;
            *free_gpus -= want[i];
        }
    }
}

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t n = snap->njobs;
    size_t *order = malloc((n + 1) * sizeof(*order));
    unsigned char *explorer = calloc(n + 1, 1), *grow = calloc(n + 1, 1);
    long free_gpus = policy_capacity(snap);
    int rc = -1;

    if (!order || !explorer || !grow || policy_order(snap, order))
        goto out;
    serve_explorers(snap, order, want, explorer, &free_gpus);
    policy_give_base(snap, order, want, explorer, &free_gpus);
    for (size_t i = 0; i < n; i++)
        grow[i] = !explorer[i] && snap->jobs[i].elastic && policy_has_speed(&snap->jobs[i]);
    rc = policy_doubling(snap, order, want, grow, &free_gpus);
out:
    free(order);
    free(explorer);
    free(grow);
    return rc;
}

const struct sched_policy_ops policy_exploratory = {
    "exploratory", "explore 1/2/4/8 GPUs for 2.5 min each, then the doubling heuristic",
    allocate,
};
