/* placement: GPU counts onto nodes, buddy style (see placement.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "gpumap.h"
#include "placement.h"
#include "radix.h"
#include "policies/policy.h"

#define STRIDE SCHED_MAX_GPUS_PER_NODE
#define NORDERS PLACEMENT_BLOCK_ORDERS
#define NONE (-1)

/* One planning pass. Free GPUs of up nodes are kept as aligned blocks in one
 * free list per size (block b = node * STRIDE + first GPU), and up nodes with
 * free GPUs in one list per free count, so that every lookup is O(64). */
struct pass {
    const struct sched_snapshot *snap;
    uint64_t *busy;      /* per node: GPUs taken in this plan */
    int *nfree;          /* per node; 0 when not up */
    signed char *border; /* per block start: order of the free block there, or -1 */
    int *bnext, *bprev;
    int head[NORDERS];
    int *cnext, *cprev;
    int chead[STRIDE + 1];
    long total_free;
    uint64_t *resv; /* repack pass: old GPUs of unchanged jobs not yet placed */
    struct placement_plan *plan;
    int islands;    /* some up node knows its GPUs' islands (domain.h) */
    int groups;     /* some up node knows its switch or rack */
    int displace;   /* place_in_island() is looking past the reservations */
};

/* Free blocks looked at per size when avoiding reserved GPUs. */
#define RESV_SCAN 32

static void blk_push(struct pass *ps, int b, int order)
{
    ps->border[b] = (signed char)order;
    ps->bprev[b] = NONE;
    ps->bnext[b] = ps->head[order];
    if (ps->head[order] != NONE)
        ps->bprev[ps->head[order]] = b;
    ps->head[order] = b;
}

static void blk_remove(struct pass *ps, int b)
{
    int order = ps->border[b];

    if (ps->bprev[b] != NONE)
        ps->bnext[ps->bprev[b]] = ps->bnext[b];
    else
        ps->head[order] = ps->bnext[b];
    if (ps->bnext[b] != NONE)
        ps->bprev[ps->bnext[b]] = ps->bprev[b];
    ps->border[b] = -1;
}

static void cnt_link(struct pass *ps, int n)
{
    int c = ps->nfree[n];

    if (c == 0)
        return;
    ps->cprev[n] = NONE;
    ps->cnext[n] = ps->chead[c];
    if (ps->chead[c] != NONE)
        ps->cprev[ps->chead[c]] = n;
    ps->chead[c] = n;
}

static void cnt_unlink(struct pass *ps, int n)
{
    int c = ps->nfree[n];

    if (c == 0)
        return;
    if (ps->cprev[n] != NONE)
        ps->cnext[ps->cprev[n]] = ps->cnext[n];
    else
        ps->chead[c] = ps->cnext[n];
    if (ps->cnext[n] != NONE)
        ps->cprev[ps->cnext[n]] = ps->cprev[n];
}

/* Node n lost k free GPUs. */
static void node_took(struct pass *ps, int n, int k)
{
    cnt_unlink(ps, n);
    ps->nfree[n] -= k;
    cnt_link(ps, n);
    ps->total_free -= k;
}

/* Gives GPUs [lo, hi) of node n back as maximal aligned blocks. */
static void release_range(struct pass *ps, int n, int lo, int hi)
{
    while (lo < hi) {
        int o = 0;
        while (o + 1 < NORDERS && (lo & ((1 << (o + 1)) - 1)) == 0 && lo + (1 << (o + 1)) <= hi)
            o++;
        blk_push(ps, n * STRIDE + lo, o);
        lo += 1 << o;
    }
}

static void grab(struct pass *ps, size_t job, int n, int gpu)
{
    struct placement_plan *p = ps->plan;

    ps->busy[n] |= UINT64_C(1) << gpu;
    p->slots[p->off[job] + (size_t)p->gpus[job]++] = (struct sched_slot){ .node = n, .gpu = gpu };
}

/* Job takes GPUs [sub, sub + s) inside free block b; the rest goes back. */
static void take_sub(struct pass *ps, size_t job, int b, int sub, int s)
{
    int n = b / STRIDE, off = b % STRIDE, size = 1 << ps->border[b];

    blk_remove(ps, b);
    for (int g = sub; g < sub + s; g++)
        grab(ps, job, n, g);
    release_range(ps, n, off, sub);
    release_range(ps, n, sub + s, off + size);
    node_took(ps, n, s);
}

/* Job takes the first s GPUs of free block b. */
static void take_block_prefix(struct pass *ps, size_t job, int b, int s)
{
    take_sub(ps, job, b, b % STRIDE, s);
}

/* Job takes GPU g of node n if it is free. Returns 0, or -1 if it is not. */
static int take_gpu(struct pass *ps, size_t job, int n, int g)
{
    for (int o = 0; o < NORDERS; o++) {
        int start = g & ~((1 << o) - 1), b = n * STRIDE + start;
        if (ps->border[b] != o)
            continue;
        blk_remove(ps, b);
        release_range(ps, n, start, g);
        release_range(ps, n, g + 1, start + (1 << o));
        grab(ps, job, n, g);
        node_took(ps, n, 1);
        return 0;
    }
    return -1;
}

/* Job takes t free GPUs of node n, smallest free blocks first. */
static void take_from_node(struct pass *ps, size_t job, int n, int t)
{
    int ngpus = ps->snap->nodes[n].ngpus;

    while (t > 0) {
        int best = NONE, bo = NORDERS;
        for (int g = 0; g < ngpus; g++) {
            int b = n * STRIDE + g;
            if (ps->border[b] >= 0 && ps->border[b] < bo) {
                best = b;
                bo = ps->border[b];
            }
        }
        if (best == NONE)
            return;
        int k = (1 << bo) <= t ? 1 << bo : t;
        take_block_prefix(ps, job, best, k);
        t -= k;
    }
}

static int ceil_log2(int s)
{
    int o = 0;

    while ((1 << o) < s)
        o++;
    return o;
}

static uint64_t run_mask(int first, int s)
{
    return (s >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << s) - 1) << first;
}

/* Repack pass: takes an aligned 2^k sub-block of a free block of order o that
 * no unchanged job still hopes to get back (looking at RESV_SCAN blocks per
 * size). Returns 1 if it found one. */
static int take_unreserved(struct pass *ps, size_t job, int k, int s)
{
    for (int o = k; o < NORDERS; o++) {
        int b = ps->head[o];
        for (int seen = 0; b != NONE && seen < RESV_SCAN; seen++, b = ps->bnext[b]) {
            int n = b / STRIDE, off = b % STRIDE;
            for (int sub = off; sub < off + (1 << o); sub += 1 << k) {
                if (!(ps->resv[n] & run_mask(sub, s))) {
                    take_sub(ps, job, b, sub, s);
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* Free GPUs of node n in this pass, as a mask (the repack pass: none an unchanged job hopes
 * to get back). */
static uint64_t free_mask(const struct pass *ps, int n)
{
    const struct sched_node *nd = &ps->snap->nodes[n];
    uint64_t all = nd->ngpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << nd->ngpus) - 1;
    uint64_t taken = ps->busy[n] | nd->drained | nd->failed | (ps->resv ? ps->resv[n] : 0);
    return nd->up ? ~taken & all : 0;
}

/* The order of the free block that holds free GPU g of node n. */
static int block_order_of(const struct pass *ps, int n, int g)
{
    for (int o = 0; o < NORDERS; o++) {
        int start = g & ~((1 << o) - 1);
        if (ps->border[n * STRIDE + start] == o)
            return o;
    }
    return NORDERS;
}

/* Job takes t GPUs of mask (free GPUs of node n), those in the smallest free blocks first. */
static void take_from_mask(struct pass *ps, size_t job, int n, uint64_t mask, int t)
{
    for (; t > 0 && mask; t--) {
        int best = -1, bo = NORDERS + 1;
        for (uint64_t m = mask; m; m &= m - 1) {
            int g = __builtin_ctzll(m), o = block_order_of(ps, n, g);
            if (o < bo) {
                best = g;
                bo = o;
            }
        }
        take_gpu(ps, job, n, best);
        mask &= ~(UINT64_C(1) << best);
    }
}

/* The island of node n with the fewest free GPUs that still holds s (ties: the lower island)
 * into *mask; returns its free count, or 0 when none holds s. */
static int best_island(const struct pass *ps, int n, int s, uint64_t *mask)
{
    const struct sched_node *nd = &ps->snap->nodes[n];
    uint64_t f = free_mask(ps, n), seen = 0;
    int best = 0;
    for (int g = 0; g < nd->ngpus && g < STRIDE; g++) {
        int k = nd->island[g];
        if (!k || !((f >> g) & 1) || ((seen >> (k - 1)) & 1))
            continue;
        seen |= UINT64_C(1) << (k - 1);
        uint64_t m = domain_island_mask(nd, k) & f;
        int c = __builtin_popcountll(m);
        if (c >= s && (best == 0 || c < best)) {
            best = c;
            *mask = m;
        }
    }
    return best;
}

/* s fits an NVLink island: the island with the fewest free GPUs that holds s, on the fullest
 * node among equals, takes it (smallest free blocks first). Returns 1, or 0 when no island of
 * an up node holds s. */
static int place_in_island(struct pass *ps, size_t job, int s)
{
    int bn = NONE, bc = 0;
    uint64_t bm = 0;
    for (int c = s; c <= STRIDE && bc != s; c++) {
        for (int n = ps->chead[c]; n != NONE && bc != s; n = ps->cnext[n]) {
            uint64_t m = 0;
            int k = best_island(ps, n, s, &m);
            if (k && (bc == 0 || k < bc)) {
                bn = n;
                bc = k;
                bm = m;
            }
        }
    }
    if (bn == NONE && ps->resv && !ps->displace) {
        /* consolidation: no island without GPUs that unchanged jobs hope to get back holds s;
         * the fullest island that holds it, those jobs displaced (placed again elsewhere) */
        uint64_t *resv = ps->resv;
        ps->resv = NULL;
        ps->displace = 1;
        int done = place_in_island(ps, job, s);
        ps->displace = 0;
        ps->resv = resv;
        return done;
    }
    if (bn == NONE)
        return 0;
    take_from_mask(ps, job, bn, bm, s);
    return 1;
}

/* s fits on one node: smallest aligned block first (in the repack pass one
 * that displaces no unchanged job, if any), else the fullest node with room.
 * Where nodes know their islands, an island that holds s comes first. */
static void place_within_node(struct pass *ps, size_t job, int s)
{
    if (ps->islands && place_in_island(ps, job, s))
        return;
    if (ps->resv && take_unreserved(ps, job, ceil_log2(s), s))
        return;
    for (int o = ceil_log2(s); o < NORDERS; o++) {
        if (ps->head[o] != NONE) {
            take_block_prefix(ps, job, ps->head[o], s);
            return;
        }
    }
    for (int c = s; c <= STRIDE; c++) {
        if (ps->chead[c] != NONE) {
            take_from_node(ps, job, ps->chead[c], s);
            return;
        }
    }
}

static int max_free(const struct pass *ps)
{
    for (int c = STRIDE; c > 0; c--)
        if (ps->chead[c] != NONE)
            return c;
    return 0;
}

/* Job takes s GPUs of node n (s <= its free GPUs): an island of it that holds s, else its
 * smallest free blocks. */
static void place_on_node(struct pass *ps, size_t job, int n, int s)
{
    uint64_t m = 0;
    if (ps->islands && best_island(ps, n, s, &m))
        take_from_mask(ps, job, n, m, s);
    else
        take_from_node(ps, job, n, s);
}

/* The switch (rack 0) or rack (rack 1) whose up nodes have the fewest free GPUs that still
 * hold s (ties: the lower number); 0 when none does. */
static int smallest_group(const struct pass *ps, int s, int rack, long *sum)
{
    size_t nn = ps->snap->nnodes;
    int best = 0;
    for (size_t g = 0; g <= nn; g++)
        sum[g] = 0;
    for (size_t n = 0; n < nn; n++)
        sum[domain_group(&ps->snap->nodes[n], rack, nn)] += ps->nfree[n];
    for (size_t g = 1; g <= nn; g++)
        if (sum[g] >= s && (best == 0 || sum[g] < sum[best]))
            best = (int)g;
    return best;
}

/* Places s GPUs for job on the fewest nodes of group g (switch or rack, which holds s): the
 * emptiest nodes whole, then the remainder on the fullest node that holds it. */
static void place_in_group(struct pass *ps, size_t job, int s, int g, int rack)
{
    size_t nn = ps->snap->nnodes;
    while (s > 0) {
        int most = NONE, fit = NONE;
        for (size_t n = 0; n < nn; n++) {
            if (domain_group(&ps->snap->nodes[n], rack, nn) != g || ps->nfree[n] == 0)
                continue;
            if (most == NONE || ps->nfree[n] > ps->nfree[most])
                most = (int)n;
            if (ps->nfree[n] >= s && (fit == NONE || ps->nfree[n] < ps->nfree[fit]))
                fit = (int)n;
        }
        if (most == NONE)
            return;
        if (fit != NONE) {
            place_on_node(ps, job, fit, s);
            return;
        }
        int c = ps->nfree[most];
        take_from_node(ps, job, most, c);
        s -= c;
    }
}

/* s GPUs spanning nodes, where nodes know their switch or rack: in the switch, else the rack,
 * with the fewest free GPUs that holds s. Returns 1, or 0 when none holds s (or out of
 * memory: the caller places it as without topology). */
static int place_in_domain(struct pass *ps, size_t job, int s)
{
    long *sum = malloc((ps->snap->nnodes + 1) * sizeof(*sum));
    int done = 0;
    for (int rack = 0; sum && rack <= 1 && !done; rack++) {
        int g = smallest_group(ps, s, rack, sum);
        if (g) {
            place_in_group(ps, job, s, g, rack);
            done = 1;
        }
    }
    free(sum);
    return done;
}

/* Places s <= total_free GPUs for job on the fewest nodes. */
static void place_fresh(struct pass *ps, size_t job, int s)
{
    if (ps->groups && s > max_free(ps) && place_in_domain(ps, job, s))
        return;
    while (s > 0) {
        int c = max_free(ps);
        if (c == 0)
            return;
        if (s <= c) {
            place_within_node(ps, job, s);
            return;
        }
        take_from_node(ps, job, ps->chead[c], c);
        s -= c;
    }
}

/* The count placement can honour for job i asking for s. */
static int feasible_count(const struct pass *ps, const struct sched_job *j, int s)
{
    if (s <= ps->total_free)
        return s;
    int min = j->min_gpus > 0 ? j->min_gpus : 1;
    if (j->elastic && ps->total_free >= min)
        return (int)ps->total_free;
    return 0;
}

/* A running job asking for what it holds, none of it on a node down or on GPUs drained to
 * be evacuated, may stay. */
static int keepable(const struct sched_snapshot *snap, const int *want, size_t i)
{
    const struct sched_job *j = &snap->jobs[i];

    if (j->cur_gpus == 0 || want[i] != j->cur_gpus)
        return 0;
    for (int k = 0; k < j->cur_gpus; k++)
        if (gpumap_must_leave(&snap->nodes[j->slots[k].node], j->slots[k].gpu))
            return 0;
    return 1;
}

static void build_free_lists(struct pass *ps)
{
    const struct sched_snapshot *snap = ps->snap;

    for (int o = 0; o < NORDERS; o++)
        ps->head[o] = NONE;
    for (int c = 0; c <= STRIDE; c++)
        ps->chead[c] = NONE;
    ps->total_free = 0;
    for (size_t n = snap->nnodes; n-- > 0;) {
        int ngpus = snap->nodes[n].ngpus;
        ps->nfree[n] = 0;
        if (!snap->nodes[n].up)
            continue;
        /* drained GPUs are never given out (the jobs on them were kept before) */
        uint64_t taken = ps->busy[n] | snap->nodes[n].drained | snap->nodes[n].failed;
        for (int g = ngpus - 1; g >= 0; g--) {
            if (taken & (UINT64_C(1) << g))
                continue;
            int lo = g;
            while (lo > 0 && !(taken & (UINT64_C(1) << (lo - 1))))
                lo--;
            release_range(ps, (int)n, lo, g + 1);
            ps->nfree[n] += g + 1 - lo;
            g = lo;
        }
        ps->total_free += ps->nfree[n];
        cnt_link(ps, (int)n);
        ps->islands = ps->islands || domain_node_has_islands(&snap->nodes[n]);
        ps->groups = ps->groups || domain_group(&snap->nodes[n], 0, snap->nnodes) ||
                     domain_group(&snap->nodes[n], 1, snap->nnodes);
    }
}

void placement_destroy(struct placement_plan *p)
{
    if (!p)
        return;
    free(p->slots);
    free(p->off);
    free(p->gpus);
    free(p->kept);
    free(p);
}

struct placement_plan *placement_plan_empty(const struct sched_snapshot *snap, const int *want)
{
    struct placement_plan *p = calloc(1, sizeof(*p));
    size_t total = 0, n = snap->njobs;

    if (!p)
        return NULL;
    p->njobs = n;
    p->gather = -1;
    p->off = calloc(n + 1, sizeof(*p->off));
    p->gpus = calloc(n + 1, sizeof(*p->gpus));
    p->kept = calloc(n + 1, sizeof(*p->kept));
    if (!p->off || !p->gpus || !p->kept)
        goto error;
    for (size_t i = 0; i < n; i++) {
        p->off[i] = total;
        total += (size_t)want[i];
    }
    p->slots = calloc(total + 1, sizeof(*p->slots));
    if (!p->slots)
        goto error;
    return p;
error:
    placement_destroy(p);
    return NULL;
}

static void pass_fini(struct pass *ps)
{
    free(ps->busy);
    free(ps->nfree);
    free(ps->border);
    free(ps->bnext);
    free(ps->bprev);
    free(ps->cnext);
    free(ps->cprev);
    free(ps->resv);
}

static int pass_init(struct pass *ps, const struct sched_snapshot *snap)
{
    size_t nn = snap->nnodes + 1, nb = nn * STRIDE;

    memset(ps, 0, sizeof(*ps));
    ps->snap = snap;
    ps->busy = calloc(nn, sizeof(*ps->busy));
    ps->nfree = calloc(nn, sizeof(*ps->nfree));
    ps->border = malloc(nb);
    ps->bnext = malloc(nb * sizeof(int));
    ps->bprev = malloc(nb * sizeof(int));
    ps->cnext = malloc(nn * sizeof(int));
    ps->cprev = malloc(nn * sizeof(int));
    if (!ps->busy || !ps->nfree || !ps->border || !ps->bnext || !ps->bprev || !ps->cnext ||
        !ps->cprev) {
        pass_fini(ps);
        return -1;
    }
    memset(ps->border, 0xff, nb);
    return 0;
}

/* The job keeps its old GPUs: in the keep pass by marking them before the free
 * lists exist, in the repack pass by taking them back if they are all free. */
static int keep_old(struct pass *ps, size_t i, int lists_built)
{
    const struct sched_job *j = &ps->snap->jobs[i];

    if (lists_built) {
        /* its drained GPUs are not in the free lists: a repack moves it off them */
        for (int k = 0; k < j->cur_gpus; k++)
            if ((ps->busy[j->slots[k].node] | ps->snap->nodes[j->slots[k].node].drained |
                 ps->snap->nodes[j->slots[k].node].failed) &
                (UINT64_C(1) << j->slots[k].gpu))
                return 0;
        for (int k = 0; k < j->cur_gpus; k++)
            take_gpu(ps, i, j->slots[k].node, j->slots[k].gpu);
    } else {
        for (int k = 0; k < j->cur_gpus; k++)
            grab(ps, i, j->slots[k].node, j->slots[k].gpu);
    }
    ps->plan->kept[i] = 1;
    return 1;
}

static void measure(struct pass *ps)
{
    ps->plan->fragmentation = placement_fragmentation(ps->snap, ps->busy);
}

/* Repack pass: marks the GPUs each unchanged job would like back. */
static int reserve_old(struct pass *ps, const unsigned char *keep)
{
    const struct sched_snapshot *snap = ps->snap;

    ps->resv = calloc(snap->nnodes + 1, sizeof(*ps->resv));
    if (!ps->resv)
        return -1;
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        if (keep[i])
            for (int k = 0; k < j->cur_gpus; k++)
                ps->resv[j->slots[k].node] |= UINT64_C(1) << j->slots[k].gpu;
    }
    return 0;
}

static void unreserve(struct pass *ps, size_t i)
{
    const struct sched_job *j = &ps->snap->jobs[i];

    for (int k = 0; k < j->cur_gpus; k++)
        ps->resv[j->slots[k].node] &= ~(UINT64_C(1) << j->slots[k].gpu);
}

/* One plan: repack == 0 keeps unchanged running jobs first; repack == 1 starts
 * from an empty cluster and lets them take their old GPUs back in turn. keep[i]: job i is
 * keepable() (worked out once for both passes). */
static struct placement_plan *run_pass(const struct sched_snapshot *snap, const int *want,
                                       const unsigned char *keep, const size_t *order,
                                       size_t norder, int repack)
{
    struct pass ps;

    if (pass_init(&ps, snap))
        return NULL;
    ps.plan = placement_plan_empty(snap, want);
    if (!ps.plan) {
        pass_fini(&ps);
        return NULL;
    }
    if (repack && reserve_old(&ps, keep)) {
        placement_destroy(ps.plan);
        pass_fini(&ps);
        return NULL;
    }
    if (!repack)
        for (size_t i = 0; i < snap->njobs; i++)
            if (keep[i])
                keep_old(&ps, i, 0);
    build_free_lists(&ps);
    for (size_t k = 0; k < norder; k++) {
        size_t i = order[k];
        if (repack)
            unreserve(&ps, i);
        if (ps.plan->kept[i] || (repack && keep[i] && keep_old(&ps, i, 1)))
            continue;
        int s = feasible_count(&ps, &snap->jobs[i], want[i]);
        ps.plan->short_gpus += want[i] - s;
        place_fresh(&ps, i, s);
    }
    measure(&ps);
    pass_fini(&ps);
    if (placement_measure_spread(snap, ps.plan)) {
        placement_destroy(ps.plan);
        return NULL;
    }
    return ps.plan;
}

/* Jobs with want > 0, largest first, then in the policy order (priority, arrival, id):
 * the policy order, then a stable sort by want. */
static size_t *placement_order(const struct sched_snapshot *snap, const int *want, size_t *norder)
{
    struct radix_item *it = malloc((snap->njobs + 1) * sizeof(*it));
    struct radix_item *tmp = malloc((snap->njobs + 1) * sizeof(*tmp));
    size_t *order = malloc((snap->njobs + 1) * sizeof(*order));
    size_t n = 0;

    if (!it || !tmp || !order || policy_order(snap, order)) {
        free(it);
        free(tmp);
        free(order);
        return NULL;
    }
    for (size_t k = 0; k < snap->njobs; k++)
        if (want[order[k]] > 0)
            it[n++] = (struct radix_item){(uint64_t)(INT_MAX - want[order[k]]), order[k]};
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        order[k] = it[k].idx;
    free(it);
    free(tmp);
    *norder = n;
    return order;
}

/* 1 if plan a is better than b: fewer GPUs short, then less spread over nodes, then over
 * switches, then over islands. */
static int better(const struct placement_plan *a, const struct placement_plan *b)
{
    const long x[4] = {a->short_gpus, a->spread, a->switch_spread, a->island_spread};
    const long y[4] = {b->short_gpus, b->spread, b->switch_spread, b->island_spread};
    for (int k = 0; k < 4; k++)
        if (x[k] != y[k])
            return x[k] < y[k];
    return 0;
}

/* The running jobs that p moves although their count stays (keepable, not kept). */
static void count_migrations(const struct sched_snapshot *snap, const unsigned char *keep,
                             struct placement_plan *p)
{
    p->migrations = 0;
    for (size_t i = 0; i < snap->njobs; i++)
        p->migrations += keep[i] && !p->kept[i];
}

/* The job the plan from empty (to) made room for, against the plan that keeps jobs (from):
 * at the first level whose spread it cuts (nodes, switches, islands), the job whose spread
 * there it cuts most (ties: the first in snapshot order) into to->gather and gather_level.
 * Returns 0, or -1 out of memory. */
static int find_gather(const struct sched_snapshot *snap, const struct placement_plan *from,
                       struct placement_plan *to)
{
    const long cut[3] = {from->spread - to->spread, from->switch_spread - to->switch_spread,
                         from->island_spread - to->island_spread};
    int level = 0;
    while (level < 3 && cut[level] <= 0)
        level++;
    if (from->short_gpus > to->short_gpus) {
        /* room: the job that got most GPUs more (ties: the first) */
        int more = 0;
        for (size_t i = 0; i < snap->njobs; i++)
            if (to->gpus[i] - from->gpus[i] > more) {
                more = to->gpus[i] - from->gpus[i];
                to->gather = (long)i;
                to->gather_level = PLACEMENT_LEVEL_ROOM;
            }
        return 0;
    }
    return level == 3 ? 0 : placement_measure_gather(snap, from, to, level);
}

struct placement_plan *placement_create(const struct sched_snapshot *snap, const int *want)
{
    return placement_create_ex(snap, want, 1);
}

struct placement_plan *placement_create_ex(const struct sched_snapshot *snap, const int *want,
                                           int repack)
{
    size_t norder;
    size_t *order = placement_order(snap, want, &norder);
    unsigned char *keep = malloc(snap->njobs + 1);
    struct placement_plan *best = NULL, *other = NULL;

    if (!order || !keep)
        goto nomem;
    for (size_t i = 0; i < snap->njobs; i++)
        keep[i] = (unsigned char)keepable(snap, want, i);
    best = run_pass(snap, want, keep, order, norder, 0);
    if (!best)
        goto nomem;
    if (repack && (best->spread > 0 || best->short_gpus > 0 || best->switch_spread > 0 ||
                   best->island_spread > 0)) {
        other = run_pass(snap, want, keep, order, norder, 1);
        if (!other)
            goto nomem;
        count_migrations(snap, keep, other);
        if (other->migrations <= PLACEMENT_MAX_MIGRATIONS && better(other, best)) {
            if (find_gather(snap, best, other))
                goto nomem;
            struct placement_plan *t = best;
            best = other;
            other = t;
        }
        placement_destroy(other);
        other = NULL;
    }
    free(order);
    free(keep);
    return best;
nomem:
    free(order);
    free(keep);
    placement_destroy(best);
    errno = ENOMEM;
    return NULL;
}
