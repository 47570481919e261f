/* policy_edf: earliest deadline first, the deadline baseline (docs/evaluation.md "Deadlines").
 * Jobs with a deadline come first, the earliest first; then the jobs without one, in the
 * core's order (priority, arrival, id; policy.h), as fifo. Each gets its requested GPUs (an
 * elastic job its request within its bounds) while they fit in what the jobs before it left;
 * a later job that fits may still start (backfilling), so one large job does not hold the
 * queue. A priority set by an admin still comes before the deadlines (every policy serves it
 * first). It knows nothing of speed models: a job whose deadline cannot be met any more still
 * comes first, as EDF does. */
#include <stdlib.h>

#include "policy.h"

struct ekey {
    int priority;
    int has_deadline;
    double deadline;
    size_t rank; /* in the core's order */
    size_t idx;
};

static int cmp_ekey(const void *a, const void *b)
{
    const struct ekey *x = a, *y = b;

    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->has_deadline != y->has_deadline)
        return x->has_deadline ? -1 : 1;
    if (x->has_deadline && x->deadline != y->deadline)
        return x->deadline < y->deadline ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t n = snap->njobs;
    size_t *order = malloc((n + 1) * sizeof(*order));
    struct ekey *keys = malloc((n + 1) * sizeof(*keys));
    long capacity = policy_capacity(snap), free_gpus = capacity;

    if (!order || !keys || policy_order(snap, order)) {
        free(order);
        free(keys);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        const struct sched_job *j = &snap->jobs[order[k]];
        keys[k] = (struct ekey){j->priority, j->deadline > 0, j->deadline, k, order[k]};
    }
    qsort(keys, n, sizeof(*keys), cmp_ekey);
    for (size_t k = 0; k < n; k++) {
        const struct sched_job *j = &snap->jobs[keys[k].idx];
        int w = policy_clamp(j, j->requested_gpus < capacity ? j->requested_gpus : (int)capacity);
        if (w <= free_gpus) {
            want[keys[k].idx] = w;
            free_gpus -= w;
        }
    }
    free(order);
    free(keys);
    return 0;
}

const struct sched_policy_ops policy_edf = {
    .name = "edf",
    .summary = "earliest deadline first (jobs without one after, by arrival), requested GPUs, "
               "backfilling: the deadline baseline",
    .allocate = allocate,
};
