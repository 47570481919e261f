/* guarantee: quotas, fair shares and no starvation on top of any policy's counts
 * (see guarantee.h). Works on counts only; placement follows. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "guarantee.h"
#include "policies/policy.h"
#include "preempt.h"

/* A wait this close to max_wait_s counts as reached (the caller's round may
 * fall on the deadline itself). */
#define GUARD_WAIT_EPS 1e-6

struct guard {
    const struct sched_snapshot *snap;
    int *want;
    unsigned char *forced;
    size_t *order;   /* jobs by the core's rank */
    size_t *rank;    /* rank[i]: position of job i in order */
    size_t *uidx;    /* job -> dense user index */
    size_t nusers;
    long *alloc;     /* per user: GPUs in want */
    double *entitled; /* per user: its fair share now */
    long used, capacity;
    size_t *stopped; /* preempt(): the jobs it stopped, in order */
    int *took;       /* and the GPUs each gave */
    size_t nstopped;
    struct guarantee_stop *stops; /* the caller's, or NULL */
    unsigned char for_kind;       /* make_room(): the guarantee it serves (as forced) */
    size_t for_job;               /* and the job it makes room for */
};

double guarantee_max_wait(const struct sched_snapshot *snap)
{
    double w = snap->max_wait_s;

    return w > 0 && isfinite(w) ? w : INFINITY;
}

double guarantee_waited(const struct sched_snapshot *snap, const struct sched_job *j)
{
    /* A job that ran waits since it lost its GPUs; one that never ran since
     * its submission (its last_change_time may be unset). */
    int ran = j->run_time > 0 || j->suspended;
    double since = ran && j->last_change_time > j->submit_time ? j->last_change_time
                                                               : j->submit_time;

    if (j->cur_gpus > 0)
        return 0.0;
    return snap->now > since ? snap->now - since : 0.0;
}

static const struct sched_user *find_user(const struct sched_snapshot *snap, int64_t user)
{
    for (size_t u = 0; snap->users && u < snap->nusers; u++)
        if (snap->users[u].id == user)
            return &snap->users[u];
    return NULL;
}

double guarantee_user_share(const struct sched_snapshot *snap, int64_t user)
{
    const struct sched_user *u = find_user(snap, user);

    return u && u->share > 0 && isfinite(u->share) ? u->share : 1.0;
}

int guarantee_user_quota(const struct sched_snapshot *snap, int64_t user)
{
    const struct sched_user *u = find_user(snap, user);

    return u && u->max_gpus > 0 ? u->max_gpus : INT_MAX;
}

/* The count a job the guard serves gets: min_gpus when elastic, else its
 * request (cut to the cluster for an elastic request, as policy_give_base). */
static int base_count(const struct sched_job *j)
{
    if (j->elastic)
        return policy_min_gpus(j);
    return j->requested_gpus;
}

/* ---- users ---------------------------------------------------------------- */

struct ukey {
    int64_t user;
    size_t job;
};

static int cmp_ukey(const void *a, const void *b)
{
    const struct ukey *x = a, *y = b;

    if (x->user != y->user)
        return x->user < y->user ? -1 : 1;
    return (x->job > y->job) - (x->job < y->job);
}

static int map_users(struct guard *g)
{
    size_t n = g->snap->njobs;
    struct ukey *k = malloc((n + 1) * sizeof(*k));

    if (!k)
        return -1;
    for (size_t i = 0; i < n; i++)
        k[i] = (struct ukey){g->snap->jobs[i].user_id, i};
    qsort(k, n, sizeof(*k), cmp_ukey);
    g->nusers = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && k[i].user != k[i - 1].user)
            g->nusers++;
        g->uidx[k[i].job] = g->nusers;
    }
    if (n > 0)
        g->nusers++;
    free(k);
    return 0;
}

static void count_alloc(struct guard *g)
{
    memset(g->alloc, 0, (g->nusers + 1) * sizeof(*g->alloc));
    g->used = 0;
    for (size_t i = 0; i < g->snap->njobs; i++) {
        g->alloc[g->uidx[i]] += g->want[i];
        g->used += g->want[i];
    }
}

/* A job in the user table (first job of user u, for its id). */
static int64_t user_id_of(const struct guard *g, size_t u)
{
    for (size_t i = 0; i < g->snap->njobs; i++)
        if (g->uidx[i] == u)
            return g->snap->jobs[i].user_id;
    return 0;
}

/* ---- making room ------------------------------------------------------------ */

/* May job i give up GPUs for the job being served? who < 0: any user;
 * else only users over their share (not user `who`), and never a job the
 * guard itself served. */
static int may_take(const struct guard *g, size_t i, long who)
{
    if (g->forced[i] || g->want[i] <= 0)
        return 0;
    if (who < 0)
        return 1;
    size_t u = g->uidx[i];
    return u != (size_t)who && g->alloc[u] > g->entitled[u] + 1e-9;
}

static void take_from(struct guard *g, size_t i, int gpus)
{
    g->want[i] -= gpus;
    g->alloc[g->uidx[i]] -= gpus;
    g->used -= gpus;
}

/* Step 1: starts of jobs that do not run yet, latest rank first. */
static void drop_starts(struct guard *g, long need, long who)
{
    for (size_t k = g->snap->njobs; k-- > 0 && g->capacity - g->used < need;) {
        size_t i = g->order[k];
        if (g->snap->jobs[i].cur_gpus == 0 && may_take(g, i, who))
            take_from(g, i, g->want[i]);
    }
}

/* Step 2: elastic jobs shrink toward their minimum, the largest first. */
static void shrink_elastic(struct guard *g, long need, long who)
{
    while (g->capacity - g->used < need) {
        long best = -1;
        for (size_t i = 0; i < g->snap->njobs; i++) {
            const struct sched_job *j = &g->snap->jobs[i];
            if (!j->elastic || !may_take(g, i, who) || g->want[i] <= policy_min_gpus(j))
                continue;
            if (best < 0 || g->want[i] > g->want[best])
                best = (long)i;
        }
        if (best < 0)
            return;
        const struct sched_job *j = &g->snap->jobs[best];
        long excess = g->want[best] - policy_min_gpus(j), gap = need - (g->capacity - g->used);
        take_from(g, (size_t)best, (int)(excess < gap ? excess : gap));
    }
}

/* Step 3: running jobs yield, in preempt.h's order (the least work lost since a checkpoint
 * first; none within min_runtime_s of its start). Then each job stopped here that the room
 * turned out not to need, the costliest first, keeps its GPUs: a small job stopped first
 * must not be lost for nothing when a larger one had to go anyway. */
static void preempt(struct guard *g, long need, long who)
{
    size_t n = g->snap->njobs, nstopped = 0;
    g->nstopped = 0;

    while (g->capacity - g->used < need) {
        long best = -1;
        for (size_t i = 0; i < n; i++) {
            if (!may_take(g, i, who) || !preempt_allowed(g->snap, &g->snap->jobs[i]))
                continue;
            if (best < 0 || preempt_before(g->snap, i, (size_t)best))
                best = (long)i;
        }
        if (best < 0)
            return;
        g->stopped[nstopped] = (size_t)best;
        g->took[nstopped++] = g->want[best];
        take_from(g, (size_t)best, g->want[best]);
    }
    for (size_t k = nstopped; k-- > 0;) {
        size_t i = g->stopped[k];
        if (g->capacity - g->used - g->took[k] < need)
            continue;
        g->want[i] += g->took[k];
        g->alloc[g->uidx[i]] += g->took[k];
        g->used += g->took[k];
    }
    g->nstopped = nstopped;
}

/* After make_room() made room: the running jobs preempt() stopped for good, as stopped by
 * g->for_kind for g->for_job (the first guarantee to stop a job names it). */
static void note_stops(struct guard *g)
{
    for (size_t k = 0; g->stops && k < g->nstopped; k++) {
        size_t i = g->stopped[k];
        if (g->want[i] == 0 && g->snap->jobs[i].cur_gpus > 0 && !g->stops[i].kind)
            g->stops[i] = (struct guarantee_stop){g->for_kind, g->snap->jobs[g->for_job].id};
    }
}

/* Frees need GPUs (who: as may_take). Returns 1 if it did; else restores
 * want from saved and returns 0. */
static int make_room(struct guard *g, long need, long who, const int *saved)
{
    g->nstopped = 0;
    if (g->capacity - g->used >= need)
        return 1;
    drop_starts(g, need, who);
    shrink_elastic(g, need, who);
    preempt(g, need, who);
    if (g->capacity - g->used >= need) {
        note_stops(g);
        return 1;
    }
    memcpy(g->want, saved, g->snap->njobs * sizeof(*g->want));
    count_alloc(g);
    return 0;
}

/* ---- the three guarantees ------------------------------------------------------ */

/* 1. Quotas: the user's lowest-ranked jobs shrink, then stop. */
static void apply_quotas(struct guard *g)
{
    for (size_t k = g->snap->njobs; k-- > 0;) {
        size_t i = g->order[k];
        const struct sched_job *j = &g->snap->jobs[i];
        long over = g->alloc[g->uidx[i]] - guarantee_user_quota(g->snap, j->user_id);
        if (over <= 0 || g->want[i] <= 0)
            continue;
        int keep = j->elastic ? g->want[i] - (int)(over < g->want[i] ? over : g->want[i]) : 0;
        if (keep < policy_min_gpus(j))
            keep = 0;
        take_from(g, i, g->want[i] - keep);
    }
}

/* The most GPUs job j can use: its request when rigid, else its maximum
 * (within the cluster). */
static int usable_count(const struct guard *g, const struct sched_job *j)
{
    int m = j->elastic ? policy_max_gpus(j) : j->requested_gpus;

    return m < g->capacity ? m : (int)g->capacity;
}

/* Each user's demand: what its jobs could use, within its quota. */
static void user_demands(const struct guard *g, double *demand)
{
    for (size_t i = 0; i < g->snap->njobs; i++) {
        const struct sched_job *j = &g->snap->jobs[i];
        if (base_count(j) <= g->capacity)
            demand[g->uidx[i]] += usable_count(g, j);
    }
    for (size_t u = 0; u < g->nusers; u++) {
        int q = guarantee_user_quota(g->snap, user_id_of(g, u));
        if (demand[u] > q)
            demand[u] = q;
    }
}

/* Water-filling: capacity shared by weight, no user above its demand. */
static void water_fill(struct guard *g, const double *demand, const double *weight)
{
    double left = (double)g->capacity;
    unsigned char *done = calloc(g->nusers + 1, 1);

    for (size_t u = 0; u < g->nusers; u++)
        g->entitled[u] = 0;
    if (!done)
        return;
    for (int round = 0; round < (int)g->nusers + 1 && left > 1e-9; round++) {
        double wsum = 0;
        for (size_t u = 0; u < g->nusers; u++)
            wsum += done[u] ? 0 : weight[u];
        if (!(wsum > 0))
            break;
        int capped = 0;
        double given = 0;
        for (size_t u = 0; u < g->nusers; u++) {
            if (done[u])
                continue;
            double give = left * weight[u] / wsum;
            if (g->entitled[u] + give >= demand[u]) {
                give = demand[u] - g->entitled[u];
                done[u] = 1;
                capped = 1;
            }
            g->entitled[u] += give;
            given += give;
        }
        left -= given;
        if (!capped)
            break;
    }
    free(done);
}

/* Grows user u's running elastic jobs, in rank order, by doublings that
 * stay within its share, with GPUs taken from users over their share. */
static void grow_within_share(struct guard *g, size_t u, int *saved)
{
    for (size_t k = 0; k < g->snap->njobs; k++) {
        size_t i = g->order[k];
        const struct sched_job *j = &g->snap->jobs[i];
        if (g->uidx[i] != u || !j->elastic || g->want[i] <= 0)
            continue;
        for (;;) {
            int next = 2 * g->want[i] <= policy_max_gpus(j) ? 2 * g->want[i] : 0;
            long delta = next - g->want[i];
            if (next <= 0 || g->alloc[u] + delta > g->entitled[u] + 1e-9)
                break;
            memcpy(saved, g->want, g->snap->njobs * sizeof(*saved));
            g->for_kind = 2;
            g->for_job = i;
            if (!make_room(g, delta, (long)u, saved))
                break;
            g->want[i] = next;
            g->alloc[u] += delta;
            g->used += delta;
            if (!g->forced[i])
                g->forced[i] = 2;
        }
    }
}

/* 2. Fair share: a user below its share with a waiting job that fits in it
 * gets that job started, with GPUs taken from users over their share; then
 * its elastic jobs grow toward its share the same way. */
static int apply_shares(struct guard *g)
{
    double *demand = calloc(g->nusers + 1, sizeof(*demand));
    double *weight = calloc(g->nusers + 1, sizeof(*weight));
    int *saved = malloc((g->snap->njobs + 1) * sizeof(*saved));

    if (!demand || !weight || !saved) {
        free(demand);
        free(weight);
        free(saved);
        return -1;
    }
    if (g->nusers > 1) {
        user_demands(g, demand);
        for (size_t u = 0; u < g->nusers; u++)
            weight[u] = guarantee_user_share(g->snap, user_id_of(g, u));
        water_fill(g, demand, weight);
        for (size_t k = 0; k < g->snap->njobs; k++) {
            size_t i = g->order[k];
            const struct sched_job *j = &g->snap->jobs[i];
            size_t u = g->uidx[i];
            int b = base_count(j);
            if (g->want[i] > 0 || b > g->capacity || g->alloc[u] + b > g->entitled[u] + 1e-9)
                continue;
            memcpy(saved, g->want, g->snap->njobs * sizeof(*saved));
            g->for_kind = 2;
            g->for_job = i;
            if (make_room(g, b, (long)u, saved)) {
                g->want[i] = b;
                g->alloc[u] += b;
                g->used += b;
                g->forced[i] = 2;
            }
        }
        for (size_t u = 0; u < g->nusers; u++)
            if (g->alloc[u] < g->entitled[u] - 1e-9)
                grow_within_share(g, u, saved);
    }
    free(demand);
    free(weight);
    free(saved);
    return 0;
}

struct wkey {
    double waited;
    size_t rank, job;
};

static int cmp_wkey(const void *a, const void *b)
{
    const struct wkey *x = a, *y = b;

    if (x->waited != y->waited)
        return x->waited > y->waited ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* 3. No starvation: the longest waiting first. */
static int apply_max_wait(struct guard *g)
{
    double max_wait = guarantee_max_wait(g->snap);
    size_t n = g->snap->njobs, m = 0;
    struct wkey *k = malloc((n + 1) * sizeof(*k));
    int *saved = malloc((n + 1) * sizeof(*saved));

    if (!k || !saved) {
        free(k);
        free(saved);
        return -1;
    }
    for (size_t i = 0; i < n && isfinite(max_wait); i++) {
        double w = guarantee_waited(g->snap, &g->snap->jobs[i]);
        if (w < max_wait - GUARD_WAIT_EPS)
            continue;
        if (g->want[i] == 0)
            k[m++] = (struct wkey){w, g->rank[i], i};
        else if (!g->forced[i])
            g->forced[i] = 1; /* the policy starts it: no other starving job takes that */
    }
    qsort(k, m, sizeof(*k), cmp_wkey);
    for (size_t s = 0; s < m; s++) {
        size_t i = k[s].job;
        const struct sched_job *j = &g->snap->jobs[i];
        int b = base_count(j);
        if (b > g->capacity || g->alloc[g->uidx[i]] + b > guarantee_user_quota(g->snap, j->user_id))
            continue;
        memcpy(saved, g->want, n * sizeof(*saved));
        g->for_kind = 1;
        g->for_job = i;
        if (make_room(g, b, -1, saved)) {
            g->want[i] = b;
            g->alloc[g->uidx[i]] += b;
            g->used += b;
            g->forced[i] = 1;
        }
    }
    free(k);
    free(saved);
    return 0;
}

/* 1 when no guarantee can act: max wait off, no quotas, one user. */
static int nothing_to_guard(const struct sched_snapshot *snap)
{
    if (isfinite(guarantee_max_wait(snap)))
        return 0;
    for (size_t u = 0; snap->users && u < snap->nusers; u++)
        if (snap->users[u].max_gpus > 0)
            return 0;
    for (size_t i = 1; i < snap->njobs; i++)
        if (snap->jobs[i].user_id != snap->jobs[0].user_id)
            return 0;
    return 1;
}

int guarantee_apply(const struct sched_snapshot *snap, int *want, unsigned char *forced,
                    struct guarantee_stop *stops)
{
    size_t n = snap->njobs;
    struct guard g = {.snap = snap, .want = want, .forced = forced, .stops = stops};
    int rc = -1;

    memset(forced, 0, n);
    if (stops)
        memset(stops, 0, n * sizeof(*stops));
    if (nothing_to_guard(snap))
        return 0;
    g.capacity = policy_capacity(snap);
    g.order = malloc((n + 1) * sizeof(*g.order));
    g.rank = malloc((n + 1) * sizeof(*g.rank));
    g.uidx = malloc((n + 1) * sizeof(*g.uidx));
    g.alloc = calloc(n + 1, sizeof(*g.alloc));
    g.entitled = calloc(n + 1, sizeof(*g.entitled));
    g.stopped = malloc((n + 1) * sizeof(*g.stopped));
    g.took = malloc((n + 1) * sizeof(*g.took));
    if (!g.order || !g.rank || !g.uidx || !g.alloc || !g.entitled || !g.stopped || !g.took ||
        policy_order(snap, g.order) || map_users(&g))
        goto out;
    policy_ranks(g.order, n, g.rank);
    count_alloc(&g);
    apply_quotas(&g);
    if (apply_shares(&g) || apply_max_wait(&g))
        goto out;
    rc = 0;
out:
    if (rc)
        errno = ENOMEM;
    free(g.order);
    free(g.rank);
    free(g.uidx);
    free(g.alloc);
    free(g.entitled);
    free(g.stopped);
    free(g.took);
    return rc;
}
