/* policy_common: ordering, bounds, time predictions and the candidate heap
 * that the policies share (see policy.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpumap.h"
#include "policy.h"
#include "radix.h"

uint64_t *policy_held_if_drained(const struct sched_snapshot *snap)
{
    int any = 0;
    for (size_t n = 0; n < snap->nnodes && !any; n++)
        any = snap->nodes[n].drained != 0 || snap->nodes[n].failed != 0;
    uint64_t *held = any ? gpumap_create(snap->nnodes) : NULL;
    if (held)
        gpumap_held(held, snap);
    return held;
}

int policy_node_open(const struct sched_snapshot *snap, size_t n, const uint64_t *held)
{
    const struct sched_node *nd = &snap->nodes[n];
    if (!held || !(nd->drained | nd->failed))
        return nd->up && nd->ngpus > 0 ? nd->ngpus : 0;
    return gpumap_open(nd, held[n]);
}

int policy_capacity(const struct sched_snapshot *snap)
{
    long total = 0;
    uint64_t *held = policy_held_if_drained(snap);

    for (size_t n = 0; n < snap->nnodes; n++)
        total += policy_node_open(snap, n, held);
    free(held);
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

/* 1 if the jobs already stand in the policy order (snapshots usually come by id). */
static int in_order(const struct sched_snapshot *snap)
{
    for (size_t i = 1; i < snap->njobs; i++) {
        const struct sched_job *a = &snap->jobs[i - 1], *b = &snap->jobs[i];
        struct policy_rank x = {a->priority, a->submit_time, a->id};
        struct policy_rank y = {b->priority, b->submit_time, b->id};
        if (policy_rank_cmp(&x, &y) > 0)
            return 0;
    }
    return 1;
}

/* By id, then arrival, then priority, each pass stable: the order of policy_rank_cmp, ties
 * (equal ids) by index. */
int policy_order(const struct sched_snapshot *snap, size_t *order)
{
    size_t n = snap->njobs;
    struct radix_item *it, *tmp;

    if (in_order(snap)) {
        for (size_t k = 0; k < n; k++)
            order[k] = k;
        return 0;
    }
    it = malloc((n + 1) * sizeof(*it));
    tmp = malloc((n + 1) * sizeof(*tmp));
    if (!it || !tmp) {
        free(it);
        free(tmp);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        it[i] = (struct radix_item){radix_key_i64(snap->jobs[i].id), i};
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        it[k].key = radix_key_double(snap->jobs[it[k].idx].submit_time);
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        it[k].key = radix_key_i64_desc(snap->jobs[it[k].idx].priority);
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        order[k] = it[k].idx;
    free(it);
    free(tmp);
    return 0;
}

void policy_ranks(const size_t *order, size_t n, size_t *rank)
{
    for (size_t k = 0; k < n; k++)
        rank[order[k]] = k;
}

int policy_min_gpus(const struct sched_job *j)
{
    return sched_job_min_gpus(j);
}

int policy_max_gpus(const struct sched_job *j)
{
    return sched_job_max_gpus(j);
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

/* policy_resize_penalty() of a job holding cur_gpus. */
static double resize_penalty(const struct sched_snapshot *snap, int cur_gpus, int w, int w2)
{
    if (cur_gpus <= 0 || w > cur_gpus || w2 <= cur_gpus)
        return 0.0;
    if (!(snap->resize_cost_s > 0) || !isfinite(snap->resize_cost_s))
        return 0.0;
    return snap->resize_cost_s;
}

double policy_resize_penalty(const struct sched_snapshot *snap, const struct sched_job *j, int w,
                             int w2)
{
    return resize_penalty(snap, j->cur_gpus, w, w2);
}

int policy_pinned(const struct sched_snapshot *snap, const struct sched_job *j)
{
    double age = snap->now - j->last_change_time;

    if (j->cur_gpus > 0 && learn_is_learning(j))
        return learn_pinned(snap, j);
    return j->cur_gpus > 0 && snap->min_resize_interval_s > 0 &&
           isfinite(snap->min_resize_interval_s) && age < snap->min_resize_interval_s;
}

static double step_gain_of(const struct sched_snapshot *snap, int cur_gpus, int w, int w2,
                           double t1, double t2)
{
    double saved = t1 - t2;
    double cost = snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s
                                                                           : 0.0;

    if (cur_gpus > 0 && w2 <= cur_gpus)
        return saved * (1.0 + SCHED_KEEP_MARGIN) + cost;
    return saved - resize_penalty(snap, cur_gpus, w, w2);
}

/* step_gain_of() as the learning rule weighs it (learn_step_gain): a step back to what the
 * job holds avoids its restart. */
static double learned_gain(const struct sched_snapshot *snap, int fills, int cur_gpus, int w,
                           int w2, double t1, double t2)
{
    double g = step_gain_of(snap, cur_gpus, w, w2, t1, t2);
    if (!fills)
        return g;
    int back = cur_gpus > 0 && w2 <= cur_gpus;
    double cost = snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s
                                                                           : 0.0;
    return learn_step_gain(fills, g, t1, t2, back ? cost : 0.0);
}

double policy_step_gain(const struct sched_snapshot *snap, const struct sched_job *j, int w,
                        int w2)
{
    return learned_gain(snap, learn_fills_idle(j), j->cur_gpus, w, w2, policy_time_at(j, w),
                        policy_time_at(j, w2));
}

struct policy_time_memo *policy_time_memo_create(const struct sched_snapshot *snap, const int *want)
{
    struct policy_time_memo *m = malloc((snap->njobs + 1) * sizeof(*m));

    if (!m) {
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        if (want[i] <= 0) {
            m[i] = (struct policy_time_memo){.w = 0, .t = INFINITY};
            continue;
        }
        m[i] = (struct policy_time_memo){
            .w = 0,
            .t = INFINITY, /* policy_time_at(j, 0) */
            .max_gpus = learn_max_gpus(j),
            .fills_idle = (unsigned char)learn_fills_idle(j),
            .cur_gpus = j->cur_gpus,
            .speed = (unsigned char)policy_has_speed(j),
            .goodput = (unsigned char)goodput_has_model(&j->batch),
            .pinned = (unsigned char)policy_pinned(snap, j),
            .remaining = policy_remaining_epochs(j),
        };
    }
    return m;
}

/* policy_time_at(j, w) from the memo's fields and j's speed model (and batch model, if it
 * has one): sched_job_rate() of a job with a model. */
static double memo_time_at(const struct sched_job *j, const struct policy_time_memo *m, int w)
{
    if (!m->speed || w < 1)
        return INFINITY;
    double eps = m->goodput ? sched_speed_rate(&j->speed, &j->batch, w, NULL)
                            : speed_epochs_per_second(&j->speed, w);
    if (!(eps > 0) || !isfinite(eps))
        return INFINITY;
    return m->remaining / eps;
}

double policy_step_gain_memo(const struct sched_snapshot *snap, size_t i, int w, int w2,
                             struct policy_time_memo *m)
{
    const struct sched_job *j = &snap->jobs[i];
    double t1 = m[i].w == w ? m[i].t : memo_time_at(j, &m[i], w);
    double t2 = memo_time_at(j, &m[i], w2);

    m[i].w = w2;
    m[i].t = t2;
    return learned_gain(snap, m[i].fills_idle, m[i].cur_gpus, w, w2, t1, t2);
}

/* A run shorter than this goes into the heap instead: a short round (1,000 jobs on 64 GPUs)
 * pops a few of its many candidates, and sorting them all cost more than pushing them. A
 * heap for fewer candidates has no run at all. */
#define HEAP_SORT_FROM 4096

/* The heap is 4-ary: children of k are 4k + 1 .. 4k + 4, side by side in memory. At 10,000
 * candidates a binary heap's 13 levels were 13 dependent cache misses a pop; this has 7. */
#define HEAP_D 4
/* Items before items[0] in its block: with 16-byte items, 4k + 1 then starts a 64-byte
 * line, so the four children of every node share one line. */
#define HEAP_SKEW 3
#define HEAP_LINE 64

_Static_assert(sizeof(struct policy_heap_item) * HEAP_D == HEAP_LINE,
               "a node's children fill one cache line");
_Static_assert(sizeof(struct policy_heap_item) * (HEAP_SKEW + 1) == HEAP_LINE,
               "items[1] starts a line");

/* An array of cap items laid out for the heap (see HEAP_SKEW); NULL if out of memory. */
static struct policy_heap_item *heap_array(size_t cap)
{
    size_t bytes = (cap + HEAP_SKEW + 1) * sizeof(struct policy_heap_item);
    struct policy_heap_item *a = aligned_alloc(HEAP_LINE, (bytes + HEAP_LINE - 1) / HEAP_LINE *
                                                              HEAP_LINE);

    return a ? a + HEAP_SKEW : NULL;
}

static void heap_array_free(struct policy_heap_item *a)
{
    if (a)
        free(a - HEAP_SKEW);
}

int policy_heap_init(struct policy_heap *h, size_t cap)
{
    int runs = cap >= HEAP_SORT_FROM;

    *h = (struct policy_heap){
        .items = heap_array(cap),
        .run = runs ? heap_array(cap) : NULL,
        .sort = runs ? malloc((cap + 1) * sizeof(*h->sort)) : NULL,
        .tmp = runs ? malloc((cap + 1) * sizeof(*h->tmp)) : NULL,
        .cap = cap,
        .sorted = !runs,
    };
    if (!h->items || (runs && (!h->run || !h->sort || !h->tmp))) {
        policy_heap_fini(h);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void policy_heap_fini(struct policy_heap *h)
{
    heap_array_free(h->items);
    heap_array_free(h->run);
    free(h->sort);
    free(h->tmp);
    *h = (struct policy_heap){0};
}

void policy_heap_clear(struct policy_heap *h)
{
    h->n = h->run_n = h->run_at = 0;
    h->sorted = h->run == NULL;
}

/* Larger gain, then smaller rank; without branches, as the heap's comparisons of
 * unrelated gains go either way at random. */
static int better(const struct policy_heap_item *a, const struct policy_heap_item *b)
{
    return (a->key > b->key) | ((a->key == b->key) & (a->rank < b->rank));
}

#define SIGN_BIT (UINT64_C(1) << 63)

/* The key of gain g (not NaN): unsigned order is g's order, -0.0 as 0.0. */
static uint64_t gain_key(double g)
{
    uint64_t u;

    if (g == 0.0)
        g = 0.0;
    memcpy(&u, &g, sizeof(u));
    return u & SIGN_BIT ? ~u : u | SIGN_BIT;
}

static double key_gain(uint64_t key)
{
    uint64_t u = key & SIGN_BIT ? key & ~SIGN_BIT : ~key;
    double g;

    memcpy(&g, &u, sizeof(g));
    return g;
}

static struct policy_cand cand_of(struct policy_heap_item it)
{
    return (struct policy_cand){key_gain(it.key), it.rank, it.job};
}

static size_t heap_parent(size_t k)
{
    return (k - 1) / HEAP_D;
}

int policy_heap_push(struct policy_heap *h, struct policy_cand c)
{
    return policy_heap_add(h, c.gain, c.rank, c.job);
}

int policy_heap_add(struct policy_heap *h, double gain, size_t rank, size_t job)
{
    size_t k;

    if (rank > UINT32_MAX || job > UINT32_MAX) {
        errno = EOVERFLOW;
        return -1;
    }
    struct policy_heap_item it = {gain_key(gain), (uint32_t)rank, (uint32_t)job};
    if (!h->sorted) {
        if (h->run_n == h->cap) {
            errno = ENOSPC;
            return -1;
        }
        h->run[h->run_n++] = it;
        return 0;
    }
    if (h->n == h->cap) {
        errno = ENOSPC;
        return -1;
    }
    k = h->n++;
    while (k > 0 && better(&it, &h->items[heap_parent(k)])) {
        h->items[k] = h->items[heap_parent(k)];
        k = heap_parent(k);
    }
    h->items[k] = it;
    return 0;
}

/* Sorts run[a..b), candidates of one gain, by rank. */
static void rank_ties(struct policy_heap *h, size_t a, size_t b)
{
    struct policy_heap_item *r = h->run;

    if (b - a <= 32) {
        for (size_t k = a + 1; k < b; k++) {
            struct policy_heap_item x = r[k];
            size_t at = k;
            while (at > a && r[at - 1].rank > x.rank) {
                r[at] = r[at - 1];
                at--;
            }
            r[at] = x;
        }
        return;
    }
    for (size_t k = a; k < b; k++)
        h->sort[k - a] = (struct radix_item){r[k].rank, k};
    radix_sort(h->sort, h->tmp, b - a);
    for (size_t k = a; k < b; k++)
        h->items[k] = r[h->sort[k - a].idx];
    for (size_t k = a; k < b; k++)
        r[k] = h->items[k];
}

/* Sorts the run best first, as better() orders it: by gain descending, then the runs of one
 * gain (rare) by rank, so the order the candidates were pushed in does not matter. The heap
 * is empty (every push so far went to the run), so its array takes the sorted run and the
 * run's array becomes the heap's. */
static void sort_run(struct policy_heap *h)
{
    size_t n = h->run_n;

    for (size_t k = 0; k < n; k++)
        h->sort[k] = (struct radix_item){~h->run[k].key, k};
    radix_sort(h->sort, h->tmp, n);
    for (size_t k = 0; k < n; k++)
        h->items[k] = h->run[h->sort[k].idx];
    struct policy_heap_item *t = h->run;
    h->run = h->items;
    h->items = t;
    for (size_t k = 1; k < n; k++) {
        if (h->run[k].key != h->run[k - 1].key)
            continue;
        size_t a = k - 1, b = k + 1;
        while (b < n && h->run[b].key == h->run[a].key)
            b++;
        rank_ties(h, a, b);
        k = b;
    }
}

/* The best of the HEAP_D children from l (all there, in one cache line): two pairs, then
 * their winners, so that the comparisons of a level do not wait on each other. Candidates
 * are distinct, so the best is the same in any order of comparing. */
static size_t best_of_four(const struct policy_heap_item *it, size_t l)
{
    _Static_assert(HEAP_D == 4, "best_of_four() compares four children");
    size_t a = better(&it[l + 1], &it[l]) ? l + 1 : l;
    size_t b = better(&it[l + 3], &it[l + 2]) ? l + 3 : l + 2;

    return better(&it[b], &it[a]) ? b : a;
}

/* Floyd's pop: the hole at the root goes down to a leaf along the best children, then the
 * last item rises from there (rarely far: it came from the bottom). */
static void heap_pop(struct policy_heap *h, struct policy_heap_item *c)
{
    size_t k = 0;

    *c = h->items[0];
    struct policy_heap_item last = h->items[--h->n];
    for (size_t l = 1; l < h->n; l = HEAP_D * k + 1) {
        size_t best = l, end = l + HEAP_D < h->n ? l + HEAP_D : h->n;
        if (end - l == HEAP_D)
            best = best_of_four(h->items, l);
        else
            for (size_t x = l + 1; x < end; x++)
                best = better(&h->items[x], &h->items[best]) ? x : best;
        h->items[k] = h->items[best];
        k = best;
    }
    while (k > 0 && better(&last, &h->items[heap_parent(k)])) {
        h->items[k] = h->items[heap_parent(k)];
        k = heap_parent(k);
    }
    h->items[k] = last;
}

/* The better of the run's next candidate and the heap's top. Candidates are distinct (a job
 * has one at a time, ranks differ), so the order popped depends only on them, not on where
 * each one waits. */
int policy_heap_pop(struct policy_heap *h, struct policy_cand *c)
{
    struct policy_heap_item it;

    if (!h->sorted) {
        h->sorted = 1;
        if (h->run_n >= HEAP_SORT_FROM) {
            sort_run(h);
        } else {
            for (size_t k = 0; k < h->run_n; k++) /* cannot fail: the heap is empty */
                policy_heap_push(h, cand_of(h->run[k]));
            h->run_n = 0;
        }
    }
    if (h->run_at < h->run_n && (h->n == 0 || better(&h->run[h->run_at], &h->items[0]))) {
        it = h->run[h->run_at++];
    } else if (h->n == 0) {
        policy_heap_clear(h);
        return -1;
    } else {
        heap_pop(h, &it);
    }
    *c = cand_of(it);
    return 0;
}

void policy_heap_next(const struct policy_heap *h, long next[2])
{
    next[0] = h->sorted && h->run_at < h->run_n ? (long)h->run[h->run_at].job : -1;
    next[1] = h->sorted && h->n > 0 ? (long)h->items[0].job : -1;
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
