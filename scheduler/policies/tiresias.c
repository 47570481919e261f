/* policy_tiresias: 2D-LAS, discretised least attained service (Tiresias,
 * Gu et al., NSDI 2019), a baseline. A job's attained service is the GPU-time
 * it has received, run_time * requested_gpus (it always runs at its request).
 * Jobs fall into queues by attained service (thresholds TIRESIAS_Q1_S and
 * TIRESIAS_Q2_S GPU-seconds); lower queues first, first come first served
 * inside a queue; a waiting job whose current wait (since it was preempted)
 * exceeds TIRESIAS_STARVE times its run time goes back to the first queue
 * (Tiresias' promotion knob), and a job started or resized less than
 * min_resize_interval_s ago stays in the first queue (a lease: without it a
 * promoted job was preempted again at the next round, millions of restarts
 * on the Philly trace).
 * Each job gets its request (a non-elastic count, cut to the cluster) while
 * GPUs last; later jobs that fit still run (backfilling). Running jobs of a
 * lower queue are preempted for higher ones because every round recomputes. */
#include <math.h>
#include <stdlib.h>

#include "policy.h"

#define TIRESIAS_Q1_S (3600.0)       /* one GPU-hour */
#define TIRESIAS_Q2_S (10.0 * 3600.0)
#define TIRESIAS_STARVE 2.0

struct tkey {
    int queue;
    size_t rank;
    size_t idx;
};

static int cmp_tkey(const void *a, const void *b)
{
    const struct tkey *x = a, *y = b;

    if (x->queue != y->queue)
        return x->queue < y->queue ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int queue_of(const struct sched_snapshot *snap, const struct sched_job *j)
{
    double attained = j->run_time * j->requested_gpus;
    double waited = snap->now - j->last_change_time;

    if (policy_pinned(snap, j))
        return 0;
    if (j->cur_gpus == 0 && j->run_time > 0 && waited > TIRESIAS_STARVE * j->run_time)
        return 0;
    if (attained < TIRESIAS_Q1_S)
        return 0;
    return attained < TIRESIAS_Q2_S ? 1 : 2;
}

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t n = snap->njobs;
    size_t *order = malloc((n + 1) * sizeof(*order)), *rank = malloc((n + 1) * sizeof(*rank));
    struct tkey *keys = malloc((n + 1) * sizeof(*keys));
    long capacity = policy_capacity(snap), free_gpus = capacity;
    int rc = -1;

    if (!order || !rank || !keys || policy_order(snap, order))
        goto out;
    policy_ranks(order, n, rank);
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct tkey){queue_of(snap, &snap->jobs[i]), rank[i], i};
    qsort(keys, n, sizeof(*keys), cmp_tkey);
    for (size_t k = 0; k < n; k++) {
        const struct sched_job *j = &snap->jobs[keys[k].idx];
        int w = policy_clamp(j, j->requested_gpus < capacity ? j->requested_gpus : (int)capacity);
        if (w <= free_gpus && w <= capacity) {
            want[keys[k].idx] = w;
            free_gpus -= w;
        }
    }
    rc = 0;
out:
    free(order);
    free(rank);
    free(keys);
    return rc;
}

const struct sched_policy_ops policy_tiresias = {
    .name = "tiresias",
    .summary = "2D-LAS: least attained GPU-time first in discretised queues, requested GPUs",
    .allocate = allocate,
};
