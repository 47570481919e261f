/* minshare: the least share that meets a job's deadline, and its place ahead of the policy's
 * order once the job's slack runs out (minshare.h). */
#include "minshare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

double policy_minshare_finish(const struct sched_snapshot *snap, const struct sched_job *j, int w)
{
    double t = policy_time_at(j, w);

    if (!isfinite(t))
        return INFINITY;
    double cost =
        snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s : 0.0;
    return snap->now + t * (1.0 + MINSHARE_MARGIN) +
           (j->cur_gpus > 0 && w != j->cur_gpus ? cost : 0);
}

/* The request within the job's bounds and the capacity. */
static int request_of(const struct sched_job *j, int capacity)
{
    return policy_clamp(j, j->requested_gpus < capacity ? j->requested_gpus : capacity);
}

int policy_minshare_count(const struct sched_snapshot *snap, const struct sched_job *j,
                          int capacity)
{
    if (!(j->deadline > 0))
        return 0;
    int req = request_of(j, capacity), best = -1;

    if (req <= capacity && policy_minshare_finish(snap, j, req) <= j->deadline)
        best = req;
    if (!j->elastic)
        return best;
    int top = policy_max_gpus(j) < capacity ? policy_max_gpus(j) : capacity;
    for (long w = policy_min_gpus(j); w <= top && (best < 0 || w < best); w *= 2)
        if (policy_minshare_finish(snap, j, (int)w) <= j->deadline)
            return (int)w;
    return best;
}

int policy_minshare_urgent(const struct sched_snapshot *snap, const struct sched_job *j,
                           int capacity)
{
    if (!(j->deadline > 0))
        return 0;
    int req = request_of(j, capacity);
    double t = policy_time_at(j, req);

    if (!isfinite(t))
        return 0;
    return policy_minshare_finish(snap, j, req) > j->deadline - MINSHARE_SLACK * t;
}

/* A job of the pass: an urgent one (key: its deadline, m: its least share) or one that may
 * give GPUs (key: minus its predicted time on what the policy gave it, m: its rank, 0 for a
 * deadline it can no longer meet, 1 for the others). */
struct ms_item {
    double key;
    size_t i;
    int m;
};

static int cmp_urgent(const void *a, const void *b)
{
    const struct ms_item *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int cmp_giver(const void *a, const void *b)
{
    const struct ms_item *x = a, *y = b;

    if (x->m != y->m)
        return x->m < y->m ? -1 : 1;
    return cmp_urgent(a, b);
}

/* What giver g can give: with stop 0 an elastic job down to its minimum (a rigid one nothing);
 * with stop 1 all it has (it waits), but only when it is predicted to run longer than t, the
 * urgent job's time on its share (a job that would end sooner is not stopped for it, as
 * shortest-remaining-first would not). */
static int can_give(const struct sched_snapshot *snap, const struct policy_want *pw,
                    const struct ms_item *g, int stop, double t)
{
    const struct sched_job *j = &snap->jobs[g->i];
    int w = pw[g->i].gpus;

    if (w <= 0)
        return 0;
    if (stop)
        return -g->key > t ? w : 0;
    return j->elastic ? w - policy_min_gpus(j) : 0;
}

/* Takes up to need - *free GPUs from the givers (g, ng, in order) into *free: with stop 0 by
 * shrinking them, with stop 1 by stopping them. */
static void take(const struct sched_snapshot *snap, struct policy_want *pw, const struct ms_item *g,
                 size_t ng, int need, long *free_gpus, int stop, double t, int64_t urgent)
{
    for (size_t k = 0; k < ng && *free_gpus < need; k++) {
        int give = can_give(snap, pw, &g[k], stop, t);
        if (give <= 0)
            continue;
        if (!stop && give > need - *free_gpus)
            give = (int)(need - *free_gpus);
        pw[g[k].i].gpus -= give;
        *free_gpus += give;
        if (stop && pw[g[k].i].gpus == 0 && !pw[g[k].i].stopped_for)
            pw[g[k].i].stopped_for = urgent; /* its reason names the job */
    }
}

/* Makes need GPUs free (*free of them are) for an urgent job whose time on its share is t:
 * first by shrinking elastic givers toward their minimum, then by stopping givers that would
 * run longer than t (under contention most jobs hold their minimum: shrinking alone found no
 * room). Returns 0, or -1 when they cannot give that many (nothing taken). */
static int make_room(const struct sched_snapshot *snap, struct policy_want *pw,
                     const struct ms_item *g, size_t ng, int need, long *free_gpus, double t,
                     int64_t urgent)
{
    long avail = *free_gpus;

    for (size_t k = 0; k < ng && avail < need; k++) {
        int stop = can_give(snap, pw, &g[k], 1, t);
        avail += stop > 0 ? stop : can_give(snap, pw, &g[k], 0, t);
    }
    if (avail < need)
        return -1;
    take(snap, pw, g, ng, need, free_gpus, 0, t, urgent);
    take(snap, pw, g, ng, need, free_gpus, 1, t, urgent);
    return 0;
}

/* 1 when job j's deadline counts this round: its slack has run out, or it runs on a count
 * that meets it (once a job has its share, the margin of its slack shrinks with the time it
 * has left: without this it would flip between urgent and not, and lose a restart each time
 * the policy took its GPUs back). */
static int counts(const struct sched_snapshot *snap, const struct sched_job *j, int capacity)
{
    if (!(j->deadline > 0))
        return 0;
    if (j->cur_gpus > 0 && policy_minshare_finish(snap, j, j->cur_gpus) <= j->deadline)
        return 1;
    return policy_minshare_urgent(snap, j, capacity);
}

/* The jobs that must get their least share (u, by deadline) and the others that hold GPUs
 * and may give some (g: the jobs whose deadline no count meets any more first, best effort
 * as they are, then the rest, each the longest predicted first; never a job whose deadline
 * counts and is met); *used: the GPUs the policy gave. */
static void split(const struct sched_snapshot *snap, const struct policy_want *pw, int capacity,
                  struct ms_item *u, size_t *nu, struct ms_item *g, size_t *ng, long *used)
{
    *nu = *ng = 0;
    *used = 0;
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        int w = pw[i].gpus,
            m = counts(snap, j, capacity) ? policy_minshare_count(snap, j, capacity) : 0;
        *used += w;
        if (m > 0 && (w >= m || (w > 0 && policy_minshare_finish(snap, j, w) <= j->deadline)))
            continue; /* met by what the policy gave: kept as it is */
        if (m > 0) {
            u[(*nu)++] = (struct ms_item){j->deadline, i, m};
        } else if (w > 0) {
            double t = policy_time_at(j, w);
            if (m == 0 && j->deadline > 0)
                m = policy_minshare_count(snap, j, capacity);
            g[(*ng)++] = (struct ms_item){isfinite(t) ? -t : -HUGE_VAL, i, m < 0 ? 0 : 1};
        }
    }
}

int policy_minshare_apply(const struct sched_snapshot *snap, struct policy_want *pw)
{
    size_t n = snap->njobs, nu, ng, any = 0;

    for (size_t i = 0; i < n && !any; i++)
        any = snap->jobs[i].deadline > 0;
    if (!any)
        return 0;
    struct ms_item *u = malloc((n + 1) * sizeof(*u)), *g = malloc((n + 1) * sizeof(*g));
    if (!u || !g) {
        free(u);
        free(g);
        errno = ENOMEM;
        return -1;
    }
    int capacity = policy_capacity(snap);
    long used;
    split(snap, pw, capacity, u, &nu, g, &ng, &used);
    qsort(u, nu, sizeof(*u), cmp_urgent);
    qsort(g, ng, sizeof(*g), cmp_giver);
    long free_gpus = capacity - used;
    for (size_t k = 0; k < nu; k++) {
        size_t i = u[k].i;
        double t = policy_time_at(&snap->jobs[i], u[k].m);
        if (make_room(snap, pw, g, ng, u[k].m - pw[i].gpus, &free_gpus, t, snap->jobs[i].id))
            continue;
        free_gpus -= u[k].m - pw[i].gpus;
        pw[i].gpus = u[k].m;
        pw[i].deadline = 1;
    }
    free(u);
    free(g);
    return 0;
}
