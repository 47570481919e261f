/* policy_typed: ringmaster's GPU type for the jobs that have their own speed model on each
 * GPU model (sched_job.type_speeds), by comparative advantage as Sia chooses it (Jayaram
 * Subramanya et al., SOSP'23): each class's GPUs go to the jobs that would lose most without
 * them, measured against each job's own best class, not to the job that asked first; then
 * pairs of jobs exchange their GPUs where that raises ringmaster's completion rate
 * (see policies/plans.h, docs/evaluation.md "What ringmaster does"). */
#include <math.h>
#include <stdlib.h>

#include "plans.h"

double policy_typed_value(const struct policy_plan *pp, size_t i, int w, size_t c)
{
    const struct policy_plan_job *j = &pp->job[i];
    double t = policy_plan_time_at(pp, i, w, c);

    if (!(t > 0) || !isfinite(t))
        return 0.0;
    int keeps = j->cur_gpus > 0 && j->run_cls == (int)c && w == j->cur_gpus;
    double v = 1.0 / (t + (j->cur_gpus > 0 && !keeps ? pp->resize_cost : 0.0));
    if (keeps)
        v *= 1.0 + SCHED_KEEP_MARGIN;
    return v * j->boost * pp->weight[i];
}

int policy_typed_job(const struct policy_plan *pp, size_t i)
{
    const struct policy_plan_job *j = &pp->job[i];

    return j->typed && j->speed && j->elastic && !j->plan;
}

/* 1 if job i may hold w GPUs of another class than the greedy gave it: a typed job
 * (policy_typed_job) that is not pinned, w within its bounds. */
static int may_take(const struct policy_plan *pp, size_t i, int w)
{
    const struct policy_plan_job *j = &pp->job[i];

    return policy_typed_job(pp, i) && !j->pinned && w >= j->min_gpus && w <= j->max_gpus;
}

/* The exchanges look at most this many jobs (beyond, the allocation is left as the type
 * choice made it: the table of values is this squared) and make at most TYPED_SWAP_ROUNDS
 * exchanges (on section 8's workloads a round rarely makes more than two). */
#define TYPED_SWAP_MAX 256
#define TYPED_SWAP_ROUNDS 16

/* The best exchange between the holders x < y of allocations at[x], at[y] (different
 * classes, both allowed: v >= 0), its gain into *gain (0: none gains). */
static void best_exchange(const double *v, const size_t *at, const int *cls, size_t m,
                          size_t *bx, size_t *by, double *gain)
{
    *gain = 0;
    for (size_t x = 0; x < m; x++) {
        const double *vx = &v[x * m];
        for (size_t y = x + 1; y < m; y++) {
            const double *vy = &v[y * m];
            if (cls[at[x]] == cls[at[y]] || vx[at[y]] < 0 || vy[at[x]] < 0)
                continue;
            double d = vx[at[y]] + vy[at[x]] - vx[at[x]] - vy[at[y]];
            if (d > *gain) {
                *gain = d;
                *bx = x;
                *by = y;
            }
        }
    }
}

int policy_typed_swap(struct policy_plan *pp, struct policy_want *pw)
{
    size_t n = pp->snap->njobs, m = 0;
    size_t *c = malloc((n + 1) * sizeof(*c));

    if (!c)
        return -1;
    for (size_t i = 0; i < n && m <= TYPED_SWAP_MAX; i++)
        if (pw[i].gpus > 0 && pp->cls_of[i] >= 0 && may_take(pp, i, pw[i].gpus))
            c[m++] = i;
    if (m < 2 || m > TYPED_SWAP_MAX) {
        free(c);
        return 0;
    }
    /* The candidates only exchange the allocations they hold (count and class): v[x * m + a]
     * is job x's value on allocation a (-1: it may not take it), at[x] the one it holds. */
    double *v = malloc(m * m * sizeof(*v));
    size_t *at = malloc(m * sizeof(*at));
    int *w = malloc(m * sizeof(*w)), *cls = malloc(m * sizeof(*cls));
    int rc = -1;
    if (!v || !at || !w || !cls)
        goto out;
    for (size_t x = 0; x < m; x++) {
        at[x] = x;
        w[x] = pw[c[x]].gpus;
        cls[x] = pp->cls_of[c[x]];
    }
    for (size_t x = 0; x < m; x++)
        for (size_t a = 0; a < m; a++)
            v[x * m + a] = may_take(pp, c[x], w[a])
                               ? policy_typed_value(pp, c[x], w[a], (size_t)cls[a])
                               : -1.0;
    for (int round = 0; round < TYPED_SWAP_ROUNDS; round++) {
        size_t x = 0, y = 0;
        double gain;
        best_exchange(v, at, cls, m, &x, &y, &gain);
        if (!(gain > 0))
            break;
        size_t k = at[x];
        at[x] = at[y];
        at[y] = k;
    }
    for (size_t x = 0; x < m; x++) {
        pw[c[x]].gpus = w[at[x]];
        pp->cls_of[c[x]] = cls[at[x]];
    }
    rc = 0;
out:
    free(c);
    free(v);
    free(at);
    free(w);
    free(cls);
    return rc;
}

/* Job i's goodput on w GPUs of class c relative to its best class at w (0..1; 0: it cannot
 * run there; best: that class's rate), as Sia normalises it. For a running job the class it
 * holds counts (1 + SCHED_KEEP_MARGIN) times (the hysteresis of ringmaster's greedy), and
 * another class loses the restart's share of the time the job would take there: a move
 * must repay resize_cost_s. */
static double relative(const struct policy_plan *pp, size_t i, int w, size_t c, double best)
{
    const struct policy_plan_job *j = &pp->job[i];
    double r = policy_plan_rate(pp, i, w, c, NULL);

    if (!(r > 0) || !(best > 0) || !isfinite(r))
        return 0.0;
    double q = r / best;
    if (j->cur_gpus > 0 && j->run_cls == (int)c)
        return q * (1.0 + SCHED_KEEP_MARGIN);
    if (j->cur_gpus > 0) {
        double t = policy_plan_time_at(pp, i, w, c);
        q *= t > pp->resize_cost ? 1.0 - pp->resize_cost / t : 0.0;
    }
    return q;
}

/* Job i's best class for w GPUs among those with w free in cap, with its goodput there
 * relative to its best class that holds w GPUs in all (total) (*first), and on the
 * runner-up (*second; 0 if none). Returns -1 if none has room. */
static long best_two(const struct policy_plan *pp, size_t i, int w, const long *total,
                     const long *cap, double *first, double *second)
{
    double top = 0;
    long at = -1;

    for (size_t c = 0; c < pp->ncls; c++) {
        if (total[c] < w)
            continue; /* the class could never hold w */
        double r = policy_plan_rate(pp, i, w, c, NULL);
        if (r > top && isfinite(r))
            top = r;
    }
    *first = *second = 0;
    for (size_t c = 0; c < pp->ncls; c++) {
        if (cap[c] < w)
            continue;
        double q = relative(pp, i, w, c, top);
        if (q > *first) {
            *second = *first;
            *first = q;
            at = (long)c;
        } else if (q > *second) {
            *second = q;
        }
    }
    return at;
}

int policy_typed_assign(const struct policy_plan *pp, const struct policy_want *pw,
                        const long *total, int *pref)
{
    size_t n = pp->snap->njobs, m = 0;
    size_t *c = malloc((n + 1) * sizeof(*c));
    long *cap = malloc((pp->ncls + 1) * sizeof(*cap));

    if (!c || !cap) {
        free(c);
        free(cap);
        return -1;
    }
    for (size_t k = 0; k < pp->ncls; k++)
        cap[k] = total[k];
    /* The GPUs of the other jobs stay where the allocation put them; a pinned typed job
     * keeps the class it runs on (the greedy may have put it elsewhere when that class
     * filled first). */
    for (size_t i = 0; i < n; i++) {
        pref[i] = -1;
        if (pw[i].gpus <= 0 || pp->cls_of[i] < 0)
            continue;
        if (may_take(pp, i, pw[i].gpus)) {
            c[m++] = i;
            continue;
        }
        cap[pp->cls_of[i]] -= pw[i].gpus;
        if (policy_typed_job(pp, i) && pp->job[i].cur_gpus > 0 && pp->job[i].run_cls >= 0)
            pref[i] = pp->job[i].run_cls;
    }
    /* Largest regret first (Vogel's approximation of the assignment): the job that would
     * lose most, in GPUs' worth of its best class, on its second class with room goes to
     * its first. A job's regret moves only when a class fills: popped, it is worked out
     * again and goes back in when it fell (ties: the policy order). */
    struct policy_heap h;
    if (policy_heap_init(&h, m + 1)) {
        free(c);
        free(cap);
        return -1;
    }
    int rc = 0;
    for (size_t x = 0; x < m && rc == 0; x++) {
        double q1, q2;
        size_t i = c[x];
        if (best_two(pp, i, pw[i].gpus, total, cap, &q1, &q2) >= 0)
            rc = policy_heap_add(&h, (q1 - q2) * pw[i].gpus, pp->rank[i], x);
    }
    struct policy_cand cd;
    while (rc == 0 && policy_heap_pop(&h, &cd) == 0) {
        size_t i = c[cd.job];
        double q1, q2;
        long to = best_two(pp, i, pw[i].gpus, total, cap, &q1, &q2);
        double g = (q1 - q2) * pw[i].gpus;
        if (to < 0)
            continue; /* fits nowhere whole any more: any class */
        if (g < cd.gain * (1.0 - 1e-9)) {
            rc = policy_heap_add(&h, g, cd.rank, cd.job);
            continue;
        }
        pref[i] = (int)to;
        cap[to] -= pw[i].gpus;
    }
    policy_heap_fini(&h);
    free(c);
    free(cap);
    return rc;
}
