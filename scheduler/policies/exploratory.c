/* policy_exploratory: the paper's Exploratory strategy. A job without a usable
 * speed model explores: it runs a stage of snapshot.explore_stage_s (default
 * SCHED_EXPLORE_STAGE_S, 2.5 min) at each of 1, 2, 4 and 8 GPUs in turn, ten
 * minutes in all, so that its model can be fitted from its own step times;
 * after that the doubling heuristic of "precompute" uses the fitted model.
 *
 * The exact rules:
 *  - Only elastic jobs explore. A stage whose size is outside the job's
 *    min/max bounds or above the cluster's capacity is skipped.
 *  - A job explores while some stage it may run is not done: explored_s[k]
 *    below the stage length. When the caller does not track explored_s (all
 *    four 0), run_time decides: stage k covers run_time in [k, k + 1) stage
 *    lengths.
 *  - An exploring job holds (reserves) its largest stage size, 8 GPUs when its
 *    bounds and the cluster allow, for the whole exploration, as the paper's
 *    jobs did: it runs on 1, 2, 4 and then 8 of them in turn and the rest stay
 *    idle meanwhile (the caller runs it at its current stage's size; the
 *    simulator does). That idleness is the explore cost the paper measures.
 *  - Precedence: exploring jobs are served first, by priority, arrival and id,
 *    before any other job gets its first GPU; one whose reservation does not
 *    fit in the GPUs left waits, whole, for a later round (as the paper's jobs
 *    waited for 8 GPUs). Running jobs with models may therefore lose GPUs to a
 *    job that has just arrived, whatever the hysteresis of sched.h says.
 *  - A job that has finished exploring but still has no model runs at its
 *    request, like a job without a model under "precompute". */
#include <stdlib.h>

#include "policy.h"

/* The GPUs job j reserves while it explores (its largest stage size), or 0
 * when it does not explore (not elastic, has a model, or every stage done). */
static int explore_reserve(const struct sched_job *j, int capacity, double stage_s)
{
    double seen[SCHED_EXPLORE_STAGES];
    int tracked = 0, reserve = 0, pending = 0;

    if (!j->elastic || policy_has_speed(j))
        return 0;
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
        reserve = w;
        pending |= seen[k] < stage_s;
    }
    return pending ? reserve : 0;
}

static void serve_explorers(const struct sched_snapshot *snap, const size_t *order, int *want,
                            unsigned char *explorer, long *free_gpus)
{
    int capacity = policy_capacity(snap);
    double stage_s = snap->explore_stage_s > 0 ? snap->explore_stage_s : SCHED_EXPLORE_STAGE_S;

    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        int reserve = explore_reserve(&snap->jobs[i], capacity, stage_s);
        if (reserve == 0)
            continue;
        explorer[i] = 1;
        if (reserve <= *free_gpus) {
            want[i] = reserve;
            *free_gpus -= reserve;
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
    .name = "exploratory",
    .summary = "hold 8 GPUs while exploring 1/2/4/8 for 2.5 min each, then the doubling heuristic",
    .allocate = allocate,
};
