/* policy_common: ordering, bounds, time predictions and the candidate heap
 * that the policies share (see policy.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "policy.h"

int policy_capacity(const struct sched_snapshot *snap)
{
    long total = 0;

    for (size_t n = 0; n < snap->nnodes; n++)
        if (snap->nodes[n].up && snap->nodes[n].ngpus > 0)
            total += snap->nodes[n].ngpus;
    return total > INT_MAX ? INT_MAX : (int)total;
}

int policy_rank_cmp(const struct policy_rank *a, const struct policy_rank *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return 0;
}

struct rank_key {
    struct policy_rank rank;
    size_t idx;
};

static int cmp_rank(const void *a, const void *b)
{
    const struct rank_key *x = a, *y = b;
    int c = policy_rank_cmp(&x->rank, &y->rank);

    if (c)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int policy_order(const struct sched_snapshot *snap, size_t *order)
{
    struct rank_key *keys = malloc((snap->njobs + 1) * sizeof(*keys));

    if (!keys) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        keys[i] = (struct rank_key){ {j->priority, j->submit_time, j->id}, i };
    }
    qsort(keys, snap->njobs, sizeof(*keys), cmp_rank);
    for (size_t k = 0; k < snap->njobs; k++)
        order[k] = keys[k].idx;
    free(keys);
    return 0;
}

void policy_ranks(const size_t *order, size_t n, size_t *rank)
{
    for (size_t k = 0; k < n; k++)
        rank[order[k]] = k;
}

int policy_min_gpus(const struct sched_job *j)
{
    return j->min_gpus > 0 ? j->min_gpus : 1;
}

int policy_max_gpus(const struct sched_job *j)
{
    return j->max_gpus > 0 ? j->max_gpus : INT_MAX;
}

int policy_clamp(const struct sched_job *j, int w)
{
    if (!j->elastic)
        return j->requested_gpus;
    if (w < policy_min_gpus(j))
        return policy_min_gpus(j);
    if (w > policy_max_gpus(j))
        return policy_max_gpus(j);
    return w;
}

int policy_has_speed(const struct sched_job *j)
{
    return j->speed.fitted && j->model_source != SCHED_MODEL_NONE;
}

double policy_remaining_epochs(const struct sched_job *j)
{
    if (j->remaining_epochs >= 0 && isfinite(j->remaining_epochs))
        return j->remaining_epochs;
    return j->epochs_done > 1.0 ? j->epochs_done : 1.0;
}

double policy_time_at(const struct sched_job *j, int w)
{
    if (!policy_has_speed(j) || w < 1)
        return INFINITY;
    double eps = sched_job_rate(j, w, NULL);
    if (!(eps > 0) || !isfinite(eps))
        return INFINITY;
    return policy_remaining_epochs(j) / eps;
}

double policy_resize_penalty(const struct sched_snapshot *snap, const struct sched_job *j, int w,
                             int w2)
{
    if (j->cur_gpus <= 0 || w > j->cur_gpus || w2 <= j->cur_gpus)
        return 0.0;
    if (!(snap->resize_cost_s > 0) || !isfinite(snap->resize_cost_s))
        return 0.0;
    return snap->resize_cost_s;
}

int policy_pinned(const struct sched_snapshot *snap, const struct sched_job *j)
{
    double age = snap->now - j->last_change_time;

    return j->cur_gpus > 0 && snap->min_resize_interval_s > 0 &&
           isfinite(snap->min_resize_interval_s) && age < snap->min_resize_interval_s;
}

double policy_step_gain(const struct sched_snapshot *snap, const struct sched_job *j, int w,
                        int w2)
{
    double saved = policy_time_at(j, w) - policy_time_at(j, w2);
    double cost = snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s
                                                                           : 0.0;

    if (j->cur_gpus > 0 && w2 <= j->cur_gpus)
        return saved * (1.0 + SCHED_KEEP_MARGIN) + cost;
    return saved - policy_resize_penalty(snap, j, w, w2);
}

int policy_heap_init(struct policy_heap *h, size_t cap)
{
    h->items = malloc((cap + 1) * sizeof(*h->items));
    h->n = 0;
    h->cap = cap;
    if (!h->items) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void policy_heap_fini(struct policy_heap *h)
{
    free(h->items);
    h->items = NULL;
    h->n = h->cap = 0;
}

static int better(const struct policy_cand *a, const struct policy_cand *b)
{
    if (a->gain != b->gain)
        return a->gain > b->gain;
    return a->rank < b->rank;
}

int policy_heap_push(struct policy_heap *h, struct policy_cand c)
{
    size_t k;

    if (h->n == h->cap) {
        errno = ENOSPC;
        return -1;
    }
    k = h->n++;
    while (k > 0 && better(&c, &h->items[(k - 1) / 2])) {
        h->items[k] = h->items[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h->items[k] = c;
    return 0;
}

int policy_heap_pop(struct policy_heap *h, struct policy_cand *c)
{
    size_t k = 0;

    if (h->n == 0)
        return -1;
    *c = h->items[0];
    struct policy_cand last = h->items[--h->n];
    for (;;) {
        size_t l = 2 * k + 1, best = l;
        if (l >= h->n)
            break;
        if (l + 1 < h->n && better(&h->items[l + 1], &h->items[l]))
            best = l + 1;
        if (!better(&h->items[best], &last))
            break;
        h->items[k] = h->items[best];
        k = best;
    }
    h->items[k] = last;
    return 0;
}

void policy_give_base(const struct sched_snapshot *snap, const size_t *order, int *want,
                      const unsigned char *skip, long *free_gpus)
{
    int capacity = policy_capacity(snap);

    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = order[k];
        const struct sched_job *j = &snap->jobs[i];
        if (want[i] > 0 || (skip && skip[i]))
            continue;
        int request = j->requested_gpus < capacity ? j->requested_gpus : capacity;
        int base = j->elastic && policy_has_speed(j) ? policy_min_gpus(j)
                                                     : policy_clamp(j, request);
        if (base <= *free_gpus) {
            want[i] = base;
            *free_gpus -= base;
        }
    }
}
