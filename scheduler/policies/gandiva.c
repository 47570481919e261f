/* policy_gandiva: Gandiva's introspective scheduling (Xiao et al., OSDI 2018;
 * docs/gandiva.md) over the core's snapshot/decision contract.
 *
 * Every job asks for its request (within its bounds). When jobs outnumber
 * GPUs they are time-sliced: each round serves, in order,
 *   0. running jobs still inside their quantum (now - last_change_time <
 *      quantum_s): they keep their GPUs;
 *   1. waiting and suspended jobs, longest waiting first (waiting since
 *      max(submit_time, last_change_time)): round-robin;
 *   2. running jobs whose quantum is used, least run_time first;
 * priority first throughout, ties by id; a job that does not fit is passed over
 * (backfilling), except that the first waiting job that does not fit reserves
 * its GPUs: no job of class 2 keeps GPUs past it, so that a big job is not
 * starved by rotating small ones. A running job left without GPUs is suspended
 * in place (sched_assignment.suspended), not checkpointed.
 *
 * Packing with introspection: a packed pair is one unit holding the first
 * job's GPUs. Once both rates are measured, the pair is kept while
 * rate_packed / rate_alone summed over the two exceeds 1 + SCHED_PACK_MIN_GAIN
 * (what the GPU did for them before: one job alone, or the two time-sliced),
 * else reverted: the second job is suspended, the first keeps the GPU. After
 * placement, a 1-GPU job still waiting is packed onto a running 1-GPU job when
 * both use at most SCHED_PACK_MAX_UTIL of a GPU, their memory fits one GPU and
 * neither was reverted before (the partner with the least utilisation first).
 *
 * Migration: placement (placement.h) keeps running jobs in place and moves
 * them only when that lets a job it places span fewer nodes; then a job left
 * spread over several nodes is gathered onto one node that can hold it (the
 * one where it holds most GPUs already, then the fullest). A suspended job
 * resumes wherever placement finds room. Deterministic, no randomness. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpumap.h"
#include "policy.h"
#include "pack.h"
#include "radix.h"

#define GANDIVA_EPS 1e-6

struct unit {
    size_t job;   /* the unit's first job */
    long second;  /* its packed partner, or -1 */
    int cls;      /* 0, 1, 2 as above */
    int gpus;     /* what it needs */
    double key;   /* order within the class */
    int priority;
    int64_t id;
};

static double quantum_of(const struct sched_snapshot *snap)
{
    return snap->quantum_s > 0.0 ? snap->quantum_s : SCHED_QUANTUM_S;
}

static void unit_classify(const struct sched_snapshot *snap, struct unit *u)
{
    const struct sched_job *j = &snap->jobs[u->job];
    double changed = j->last_change_time;

    if (u->second >= 0)
        changed = fmax(changed, snap->jobs[u->second].last_change_time);
    u->gpus = policy_clamp(j, j->requested_gpus);
    u->priority = j->priority;
    u->id = j->id;
    if (j->cur_gpus == 0) {
        u->cls = 1;
        u->key = fmax(j->submit_time, j->last_change_time);
    } else if (snap->now - changed < quantum_of(snap) - GANDIVA_EPS) {
        u->cls = 0;
        u->key = j->submit_time;
        u->gpus = j->cur_gpus;
    } else {
        u->cls = 2;
        u->key = j->run_time;
        u->gpus = j->cur_gpus;
    }
}

/* Sorts the units by priority (higher first), class, key, then id: a stable radix pass per
 * field, the least significant first (ids are unique, so this is the order of those fields).
 * Returns 0, or -1 (ENOMEM). */
static int units_sort(struct unit *u, size_t n)
{
    struct radix_item *it = malloc((n + 1) * sizeof(*it));
    struct radix_item *tmp = malloc((n + 1) * sizeof(*tmp));
    struct unit *sorted = malloc((n + 1) * sizeof(*sorted));

    if (!it || !tmp || !sorted) {
        free(it);
        free(tmp);
        free(sorted);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        it[k] = (struct radix_item){radix_key_i64(u[k].id), k};
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        it[k].key = radix_key_double(u[it[k].idx].key);
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        it[k].key = radix_key_i64(u[it[k].idx].cls);
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        it[k].key = radix_key_i64_desc(u[it[k].idx].priority);
    radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        sorted[k] = u[it[k].idx];
    memcpy(u, sorted, n * sizeof(*u));
    free(it);
    free(tmp);
    free(sorted);
    return 0;
}

/* The units of the snapshot, in serving order; *n set. The second job of a
 * reverted pair forms no unit (it is suspended this round). NULL on ENOMEM. */
static struct unit *units_build(const struct sched_snapshot *snap, size_t *n)
{
    struct unit *u = malloc((snap->njobs + 1) * sizeof(*u));

    *n = 0;
    if (!u)
        return NULL;
    for (size_t i = 0; i < snap->njobs; i++) {
        long k = policy_pack_partner(snap, i);
        if (k >= 0 && (size_t)k < i)
            continue;
        int lost = k >= 0 && policy_pack_lost(&snap->jobs[i], &snap->jobs[k]);
        u[*n] = (struct unit){ .job = i, .second = lost ? -1 : k };
        unit_classify(snap, &u[*n]);
        (*n)++;
    }
    if (units_sort(u, *n)) {
        free(u);
        return NULL;
    }
    return u;
}

static int allocate_gandiva(const struct sched_snapshot *snap, int *want)
{
    size_t n;
    struct unit *u = units_build(snap, &n);
    long capacity = policy_capacity(snap), free_gpus = capacity;
    int reserved = 0;

    if (!u)
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (u[k].gpus > capacity || (reserved && u[k].cls == 2))
            continue;
        if (u[k].gpus > free_gpus) {
            if (u[k].cls == 1 && !reserved) {
                reserved = 1;
                free_gpus = 0;
            }
            continue;
        }
        want[u[k].job] = u[k].gpus;
        free_gpus -= u[k].gpus;
    }
    free(u);
    return 0;
}

/* Existing pairs: kept pairs share the first job's GPUs, reverted ones are
 * marked, pairs suspended together are no longer packed. */
static void refine_pairs(const struct sched_snapshot *snap, struct sched_decision *d)
{
    for (size_t i = 0; i < snap->njobs; i++) {
        long k = policy_pack_partner(snap, i);
        if (k < 0 || (size_t)k > i)
            continue;
        if (policy_pack_lost(&snap->jobs[k], &snap->jobs[i]))
            policy_pack_revert(snap, d, i, (size_t)k);
        else if (d->assign[k].gpus > 0)
            policy_pack_share(snap, d, i, (size_t)k, SCHED_PACK_KEEP);
    }
}

/* 1 if job j may be packed at all: light, and asks for 1 GPU. */
static int packable(const struct sched_job *j)
{
    return policy_pack_light(j) && policy_clamp(j, j->requested_gpus) == 1;
}

/* The best host for waiting job i: a lone running 1-GPU packable job whose
 * memory fits beside it, least utilisation first; -1 if none. */
static long best_host(const struct sched_snapshot *snap, const struct sched_decision *d, size_t i)
{
    long best = -1;

    for (size_t h = 0; h < snap->njobs; h++) {
        const struct sched_job *j = &snap->jobs[h];
        if (!policy_pack_host_ok(snap, d, i, h) || !packable(j))
            continue;
        if (best < 0 || j->gpu_util < snap->jobs[best].gpu_util)
            best = (long)h;
    }
    return best;
}

/* New pairs: waiting 1-GPU jobs, in serving order, onto lone running ones. */
static int refine_new_pairs(const struct sched_snapshot *snap, struct sched_decision *d)
{
    size_t n;
    struct unit *u = units_build(snap, &n);

    if (!u)
        return -1;
    for (size_t k = 0; k < n; k++) {
        size_t i = u[k].job;
        if (d->assign[i].gpus > 0 || d->assign[i].pack != SCHED_PACK_NONE ||
            !packable(&snap->jobs[i]))
            continue;
        long h = best_host(snap, d, i);
        if (h >= 0)
            policy_pack_share(snap, d, i, (size_t)h, SCHED_PACK_PACK);
    }
    free(u);
    return 0;
}

/* Nodes that assignment a spans. */
static int nodes_spanned(const struct sched_assignment *a)
{
    int n = 0;

    for (int g = 0; g < a->gpus; g++) {
        int seen = 0;
        for (int h = 0; h < g && !seen; h++)
            seen = a->slots[h].node == a->slots[g].node;
        n += !seen;
    }
    return n;
}

/* The up node that can hold all of a's GPUs (free ones plus its own there),
 * the one where it holds most already, then the fullest; -1 if none. */
static int gather_node(const struct sched_snapshot *snap, const struct sched_assignment *a,
                       const uint64_t *busy)
{
    int best = -1, best_own = -1, best_free = 0;

    for (size_t n = 0; n < snap->nnodes; n++) {
        int own = 0, free_here = 0;
        if (!snap->nodes[n].up)
            continue;
        for (int g = 0; g < a->gpus; g++)
            own += a->slots[g].node == (int)n;
        free_here = gpumap_free_count(busy, (int)n, snap->nodes[n].ngpus);
        if (own + free_here < a->gpus)
            continue;
        if (own > best_own || (own == best_own && free_here < best_free)) {
            best = (int)n;
            best_own = own;
            best_free = free_here;
        }
    }
    return best;
}

/* Moves a onto node n: the GPUs it holds there, then the lowest free ones. */
static void gather_onto(struct sched_assignment *a, int n, uint64_t *busy)
{
    uint64_t mine = 0;
    int k = 0;

    gpumap_unmark(busy, a->slots, a->gpus);
    for (int g = 0; g < a->gpus; g++)
        if (a->slots[g].node == n)
            mine |= UINT64_C(1) << a->slots[g].gpu;
    for (int g = 0; g < SCHED_MAX_GPUS_PER_NODE && k < a->gpus; g++)
        if (mine & (UINT64_C(1) << g))
            a->slots[k++] = (struct sched_slot){ .node = n, .gpu = g };
    for (int g = 0; g < SCHED_MAX_GPUS_PER_NODE && k < a->gpus; g++)
        if (!(mine & (UINT64_C(1) << g)) && !gpumap_taken(busy, n, g))
            a->slots[k++] = (struct sched_slot){ .node = n, .gpu = g };
    gpumap_mark_all(busy, a->slots, a->gpus);
}

/* The GPUs decision d gives, as a new gpumap (free() it), or NULL (ENOMEM). */
static uint64_t *decision_map(const struct sched_snapshot *snap, const struct sched_decision *d)
{
    uint64_t *busy = gpumap_create(snap->nnodes);

    for (size_t i = 0; busy && i < d->njobs; i++)
        gpumap_mark_all(busy, d->assign[i].slots, d->assign[i].gpus);
    return busy;
}

/* Migration: a multi-GPU job spread over several nodes moves onto one node
 * that can hold it (through its checkpoint; the caller pays resize_cost_s). */
static int refine_gather(const struct sched_snapshot *snap, struct sched_decision *d)
{
    uint64_t *busy = decision_map(snap, d);

    if (!busy)
        return -1;
    for (size_t i = 0; i < d->njobs; i++) {
        struct sched_assignment *a = &d->assign[i];
        if (a->gpus < 2 || a->pack != SCHED_PACK_NONE || nodes_spanned(a) < 2)
            continue;
        int n = gather_node(snap, a, busy);
        if (n < 0)
            continue;
        gather_onto(a, n, busy);
        d->nchanged += !a->changed;
        a->changed = 1;
        a->reason = "migrated: gathered onto one node";
    }
    free(busy);
    return 0;
}

/* A 1-GPU job that starts or resumes on node n this round and whose home is
 * not n (moving it loses nothing), or -1. */
static long fresh_on(const struct sched_snapshot *snap, const struct sched_decision *d, int n)
{
    for (size_t k = 0; k < d->njobs; k++) {
        const struct sched_job *j = &snap->jobs[k];
        const struct sched_assignment *a = &d->assign[k];
        if (a->gpus == 1 && a->slots[0].node == n && j->cur_gpus == 0 &&
            !(j->has_home && j->home_node == n) && a->pack == SCHED_PACK_NONE)
            return (long)k;
    }
    return -1;
}

/* A suspended 1-GPU job resumes on the node that holds its state when it can:
 * onto a free GPU there, or swapping with a job that starts there and is not
 * at home there. */
static int refine_home(const struct sched_snapshot *snap, struct sched_decision *d)
{
    uint64_t *busy = decision_map(snap, d);

    if (!busy)
        return -1;
    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        struct sched_assignment *a = &d->assign[i];
        int n = j->home_node;
        if (!j->has_home || a->gpus != 1 || n < 0 || (size_t)n >= snap->nnodes ||
            a->slots[0].node == n || !snap->nodes[n].up)
            continue;
        int g = 0;
        while (g < snap->nodes[n].ngpus && gpumap_taken(busy, n, g))
            g++;
        if (g < snap->nodes[n].ngpus) {
            gpumap_free(busy, a->slots[0].node, a->slots[0].gpu);
            gpumap_take(busy, n, g);
            a->slots[0] = (struct sched_slot){ .node = n, .gpu = g };
            continue;
        }
        long k = fresh_on(snap, d, n);
        if (k >= 0) {
            struct sched_slot t = a->slots[0];
            a->slots[0] = d->assign[k].slots[0];
            d->assign[k].slots[0] = t;
        }
    }
    free(busy);
    return 0;
}

static int refine_gandiva(const struct sched_snapshot *snap, struct sched_decision *d)
{
    refine_pairs(snap, d);
    if (refine_home(snap, d) || refine_gather(snap, d))
        return -1;
    return refine_new_pairs(snap, d);
}

const struct sched_policy_ops policy_gandiva = {
    .name = "gandiva",
    .summary = "time-slicing in quanta, packing kept by introspection, migration to gather "
               "(Gandiva)",
    .allocate = allocate_gandiva,
    .refine = refine_gandiva,
    .time_slices = 1,
};
