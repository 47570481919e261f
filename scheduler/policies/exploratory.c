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
 *    request, like a job without a model under "precompute".
 * The rule itself (stages, reservation, precedence) is explore.c's, which the
 * live scheduler calls too. */
#include <stdlib.h>

#include "explore.h"
#include "policy.h"

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t n = snap->njobs;
    size_t *order = malloc((n + 1) * sizeof(*order));
    unsigned char *explorer = calloc(n + 1, 1), *grow = calloc(n + 1, 1);
    long free_gpus = policy_capacity(snap);
    int rc = -1;

    if (!order || !explorer || !grow || policy_order(snap, order))
        goto out;
    explore_serve(snap, policy_capacity(snap), order, want, explorer, &free_gpus);
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
