/* policy_optimus: the +1 greedy of Optimus (policy_greedy_run()'s loop). Every job first gets its base
 * count (1, or min_gpus; a job without a speed model or not elastic gets its
 * request) in order while GPUs last; then one GPU at a time goes to the elastic
 * job whose predicted remaining time drops most, T(w) - T(w+1), until no GPU
 * is left or no job gains. Because it only looks one GPU ahead it stalls where
 * w + 1 is slower than w (8 -> 9 leaves the power-of-two all-reduce), which is
 * what the doubling heuristic of policy "precompute" avoids. Growing a running
 * job past what it holds must also repay resize_cost_s, and the hysteresis of
 * sched.h (SCHED_KEEP_MARGIN, min_resize_interval_s) applies as in precompute. */
#include <math.h>
#include <stdlib.h>

#include "greedy.h"
#include "policy.h"

static int push_next(const struct sched_snapshot *snap, struct policy_heap *h, const int *want,
                     const size_t *rank, size_t i, struct policy_time_memo *m)
{
    int w = want[i];

    if (w + 1 > m[i].max_gpus)
        return 0;
    double gain = policy_step_gain_memo(snap, i, w, w + 1, m);
    if (!(gain > 0) || !isfinite(gain))
        return 0;
    return policy_heap_add(h, gain, rank[i], i);
}

/* What the growth loop of optimus works on. */
struct by_one {
    const struct sched_snapshot *snap;
    int *want;
    const size_t *rank;
    struct policy_time_memo *m;
    long free_gpus;
};

static int by_one_room(void *ctx)
{
    return ((struct by_one *)ctx)->free_gpus > 0;
}

static int by_one_take(void *ctx, struct policy_heap *h, struct policy_cand *c)
{
    struct by_one *b = ctx;

    (void)h;
    b->want[c->job]++;
    b->free_gpus--;
    return 1;
}

static int by_one_push(void *ctx, struct policy_heap *h, size_t i)
{
    struct by_one *b = ctx;

    push_next(b->snap, h, b->want, b->rank, i, b->m);
    return 0;
}

static const struct policy_greedy by_one_ops = {by_one_room, by_one_take, by_one_push};

static int grow_by_one(const struct sched_snapshot *snap, const size_t *order, int *want,
                       long free_gpus)
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
    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        const struct sched_job *j = &snap->jobs[i];
        if (want[i] <= 0 || !j->elastic || !policy_has_speed(j))
            continue;
        if (!policy_pinned(snap, j)) {
            push_next(snap, &h, want, rank, i, m);
            continue;
        }
        int back = j->cur_gpus - want[i] < free_gpus ? j->cur_gpus - want[i] : (int)free_gpus;
        if (back > 0) { /* resized too recently: back to what it holds, no further */
            want[i] += back;
            free_gpus -= back;
        }
    }
    struct by_one b = {snap, want, rank, m, free_gpus};
    policy_greedy_run(&h, &by_one_ops, &b);
    policy_heap_fini(&h);
    free(rank);
    free(m);
    return 0;
}

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t *order = malloc((snap->njobs + 1) * sizeof(*order));
    long free_gpus = policy_capacity(snap);
    int rc;

    if (!order || policy_order(snap, order)) {
        free(order);
        return -1;
    }
    policy_give_base(snap, order, want, NULL, &free_gpus);
    rc = grow_by_one(snap, order, want, free_gpus);
    free(order);
    return rc;
}

const struct sched_policy_ops policy_optimus = {
    .name = "optimus",
    .summary = "Optimus +1 greedy on predicted remaining time (stalls at 8 -> 9)",
    .allocate = allocate,
};
