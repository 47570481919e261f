/* policy_fixed: the paper's baseline strategies One, Two, Four and Eight, and
 * fifo. Jobs are served strictly in order (priority, arrival, id); each gets
 * its count or, if that many GPUs are no longer free, it and every later job
 * wait (no backfilling). A job whose count exceeds the whole cluster can never
 * run and is passed over so that it does not block the queue forever.
 *
 * Counts: fixed k gives k GPUs within the job's min/max bounds (a non-elastic
 * job gets its request); fifo gives the request. */
#include <stdlib.h>

#include "policy.h"

static int serve_in_order(const struct sched_snapshot *snap, int *want, int fixed)
{
    size_t *order = malloc((snap->njobs + 1) * sizeof(*order));
    long capacity = policy_capacity(snap), free_gpus = capacity;

    if (!order || policy_order(snap, order)) {
        free(order);
        return -1;
    }
    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        const struct sched_job *j = &snap->jobs[i];
        int w = policy_clamp(j, fixed > 0 ? fixed : j->requested_gpus);
        if (w > capacity)
            continue;
        if (w > free_gpus)
            break;
        want[i] = w;
        free_gpus -= w;
    }
    free(order);
    return 0;
}

static int allocate_one(const struct sched_snapshot *snap, int *want)
{
    return serve_in_order(snap, want, 1);
}

static int allocate_two(const struct sched_snapshot *snap, int *want)
{
    return serve_in_order(snap, want, 2);
}

static int allocate_four(const struct sched_snapshot *snap, int *want)
{
    return serve_in_order(snap, want, 4);
}

static int allocate_eight(const struct sched_snapshot *snap, int *want)
{
    return serve_in_order(snap, want, 8);
}

static int allocate_fifo(const struct sched_snapshot *snap, int *want)
{
    return serve_in_order(snap, want, 0);
}

const struct sched_policy_ops policy_fixed_one = {
    .name = "one",
    .summary = "every job 1 GPU, first come first served (the paper's One)",
    .allocate = allocate_one,
};
const struct sched_policy_ops policy_fixed_two = {
    .name = "two",
    .summary = "every job 2 GPUs, first come first served (the paper's Two)",
    .allocate = allocate_two,
};
const struct sched_policy_ops policy_fixed_four = {
    .name = "four",
    .summary = "every job 4 GPUs, first come first served (the paper's Four)",
    .allocate = allocate_four,
};
const struct sched_policy_ops policy_fixed_eight = {
    .name = "eight",
    .summary = "every job 8 GPUs, first come first served (the paper's Eight)",
    .allocate = allocate_eight,
};
const struct sched_policy_ops policy_fifo = {
    .name = "fifo",
    .summary = "requested GPUs, strictly by priority then arrival, no backfilling",
    .allocate = allocate_fifo,
};
