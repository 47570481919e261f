/* policy_precompute: the paper's doubling heuristic with models known at
 * arrival (profiled beforehand, or fitted online). Every job gets its base
 * count in order while GPUs last (1, or min_gpus; a job without a speed model
 * or not elastic gets its request), then policy_doubling() grows the elastic
 * jobs with models. A doubling that takes a running job past what it holds
 * must also repay the snapshot's resize_cost_s (policy_resize_penalty).
 *
 * Hysteresis (sched.h): the doubling is recomputed from scratch every round
 * and its gain per GPU is proportional to a job's remaining work, so two
 * running jobs' gains cross as the one holding more GPUs progresses faster;
 * without hysteresis they would swap GPUs back and forth every few rounds.
 * So a running job's doublings up to what it holds weigh (1 + SCHED_KEEP_MARGIN)
 * times plus the restart they avoid (policy_step_gain), and a job resized less
 * than min_resize_interval_s ago only gets back what it holds (keep_pinned). */
#include <math.h>
#include <stdlib.h>

#include "greedy.h"
#include "policy.h"

static int push_double(const struct sched_snapshot *snap, struct policy_heap *h, const int *want,
                       const size_t *rank, size_t i, struct policy_time_memo *m)
{
    int w = want[i];

    if (w > m[i].max_gpus / 2)
        return 0;
    double gain = policy_step_gain_memo(snap, i, w, 2 * w, m) / w;
    if (!(gain > 0) || !isfinite(gain))
        return 0;
    return policy_heap_add(h, gain, rank[i], i);
}

/* Jobs resized too recently go back to what they hold first, in order, as far
 * as the GPUs left after the waiting jobs' base counts allow; they grow no
 * further this round. */
static void keep_pinned(const struct sched_snapshot *snap, const size_t *order, int *want,
                        const unsigned char *grow, long *free_gpus,
                        const struct policy_time_memo *m)
{
    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        if (want[i] <= 0 || !grow[i] || !m[i].pinned)
            continue;
        while (2 * want[i] <= m[i].cur_gpus && want[i] <= *free_gpus) {
            *free_gpus -= want[i];
            want[i] *= 2;
        }
    }
}

/* What the doubling loop works on. */
struct doubling {
    const struct sched_snapshot *snap;
    int *want;
    const size_t *rank;
    struct policy_time_memo *m;
    long *free_gpus;
};

static int doubling_room(void *ctx)
{
    return *((struct doubling *)ctx)->free_gpus > 0;
}

/* A doubling that does not fit now never will (free only shrinks): drop it. */
static int doubling_take(void *ctx, struct policy_heap *h, struct policy_cand *c)
{
    struct doubling *d = ctx;

    (void)h;
    if (d->want[c->job] > *d->free_gpus)
        return 0;
    *d->free_gpus -= d->want[c->job];
    d->want[c->job] *= 2;
    return 1;
}

static int doubling_push(void *ctx, struct policy_heap *h, size_t i)
{
    struct doubling *d = ctx;

    push_double(d->snap, h, d->want, d->rank, i, d->m);
    return 0;
}

static const struct policy_greedy doubling_ops = {doubling_room, doubling_take, doubling_push};

int policy_doubling(const struct sched_snapshot *snap, const size_t *order, int *want,
                    const unsigned char *grow, long *free_gpus)
{
    size_t *rank = malloc((snap->njobs + 1) * sizeof(*rank));
    struct policy_time_memo *m = policy_time_memo_create(snap, want);
    struct policy_heap h;

    if (!rank || !m || policy_heap_init(&h, snap->njobs)) {
        free(rank);
        free(m);
        return -1;
    }
    policy_ranks(order, snap->njobs, rank);
    keep_pinned(snap, order, want, grow, free_gpus, m);
    for (size_t i = 0; i < snap->njobs; i++)
        if (want[i] > 0 && grow[i] && !m[i].pinned)
            push_double(snap, &h, want, rank, i, m);
    struct doubling d = {snap, want, rank, m, free_gpus};
    policy_greedy_run(&h, &doubling_ops, &d);
    policy_heap_fini(&h);
    free(rank);
    free(m);
    return 0;
}

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t n = snap->njobs;
    size_t *order = malloc((n + 1) * sizeof(*order));
    unsigned char *grow = calloc(n + 1, 1);
    long free_gpus = policy_capacity(snap);
    int rc = -1;

    if (!order || !grow || policy_order(snap, order))
        goto out;
    policy_give_base(snap, order, want, NULL, &free_gpus);
    for (size_t i = 0; i < n; i++)
        grow[i] = snap->jobs[i].elastic && policy_has_speed(&snap->jobs[i]);
    rc = policy_doubling(snap, order, want, grow, &free_gpus);
out:
    free(order);
    free(grow);
    return rc;
}

const struct sched_policy_ops policy_precompute = {
    .name = "precompute",
    .summary = "doubling heuristic on models known in advance (the paper's Precompute)",
    .allocate = allocate,
};
