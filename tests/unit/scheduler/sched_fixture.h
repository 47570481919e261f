/* Shared helpers of the scheduler core's tests: cluster and job builders, the
 * ResNet-110 profile model, a deterministic PRNG and a feasibility checker. */
#ifndef RINGMASTER_TEST_SCHED_FIXTURE_H
#define RINGMASTER_TEST_SCHED_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "sched.h"

#define FX_MAX_NODES 256
#define FX_MAX_JOBS 512

struct fx {
    struct sched_node nodes[FX_MAX_NODES];
    struct sched_job jobs[FX_MAX_JOBS];
    struct sched_slot slots[FX_MAX_JOBS][64];
    struct sched_snapshot snap;
};

/* ResNet-110 on CIFAR-10 (DESIGN.md): step times at 1, 2, 4, 8 GPUs, 128 per GPU. */
static inline struct speed_model fx_resnet_model(void)
{
    struct speed_model m;
    const int w[4] = { 1, 2, 4, 8 };
    const double t[4] = { 0.4025, 0.4272, 0.4443, 0.4702 };

    memset(&m, 0, sizeof(m));
    m.batch_per_gpu = 128;
    m.dataset_size = 50000;
    cr_assert_eq(speed_fit(&m, w, t, 4), 0, "speed_fit of the ResNet-110 profile");
    return m;
}

static inline void fx_init(struct fx *f, int nnodes, int gpus_per_node)
{
    memset(f, 0, sizeof(*f));
    for (int n = 0; n < nnodes; n++)
        f->nodes[n] = (struct sched_node){ .id = 100 + n, .ngpus = gpus_per_node, .up = 1 };
    f->snap.nodes = f->nodes;
    f->snap.nnodes = (size_t)nnodes;
    f->snap.jobs = f->jobs;
    f->snap.now = 1000.0;
    f->snap.seed = 7;
}

/* Adds an elastic job with the ResNet model and 100 epochs to go. */
static inline struct sched_job *fx_job(struct fx *f, int64_t id, int requested)
{
    struct sched_job *j = &f->jobs[f->snap.njobs];

    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_time = (double)id;
    j->requested_gpus = requested;
    j->min_gpus = 1;
    j->elastic = 1;
    j->remaining_epochs = 100;
    j->model_source = SCHED_MODEL_PROFILE;
    j->speed = fx_resnet_model();
    j->slots = f->slots[f->snap.njobs];
    f->snap.njobs++;
    return j;
}

/* Makes job j hold GPUs [first, first + n) of node node. */
static inline void fx_hold(struct fx *f, struct sched_job *j, int node, int first, int n)
{
    struct sched_slot *s = f->slots[j - f->jobs];

    for (int k = 0; k < n; k++)
        s[j->cur_gpus++] = (struct sched_slot){ .node = node, .gpu = first + k };
}

static inline uint64_t fx_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

static inline int fx_between(uint64_t *state, int lo, int hi)
{
    return lo + (int)(fx_rand(state) % (uint64_t)(hi - lo + 1));
}

/* Packed pairs: two assignments that name each other, on the same GPUs, each
 * GPU held by no third job. Returns the GPUs they book (once per pair). */
static inline int fx_check_pairs(const struct sched_snapshot *snap,
                                 const struct sched_decision *d, uint64_t *busy)
{
    int used = 0, shared = 0;

    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        if (a->pack != SCHED_PACK_PACK && a->pack != SCHED_PACK_KEEP)
            continue;
        size_t k = 0;
        while (k < d->njobs && snap->jobs[k].id != a->packed_with)
            k++;
        cr_assert_lt(k, d->njobs, "packed with a job not in the snapshot");
        const struct sched_assignment *b = &d->assign[k];
        cr_assert_eq(b->packed_with, a->job_id);
        cr_assert_eq(b->pack, a->pack);
        cr_assert_eq(a->gpus, b->gpus);
        cr_assert_eq(a->gpus, 1, "only 1-GPU jobs are packed");
        cr_assert(a->slots[0].node == b->slots[0].node && a->slots[0].gpu == b->slots[0].gpu);
        if (k < i)
            continue;
        struct sched_slot s = a->slots[0];
        cr_assert_eq(busy[s.node] & (UINT64_C(1) << s.gpu), 0, "packed GPU holds a third job");
        busy[s.node] |= UINT64_C(1) << s.gpu;
        used++;
        shared++;
    }
    cr_assert_eq(shared, d->packed_gpus);
    return used;
}

/* Asserts that the decision is feasible for the snapshot: one assignment per
 * job in order, slots on up nodes and existing GPUs, no GPU given twice, counts
 * within the job's bounds, and unchanged jobs keeping their exact slots. */
static inline void fx_check_feasible(const struct sched_snapshot *snap,
                                     const struct sched_decision *d)
{
    static uint64_t busy[FX_MAX_NODES];
    int used = 0;

    cr_assert_not_null(d);
    cr_assert_eq(d->njobs, snap->njobs);
    memset(busy, 0, sizeof(busy));
    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        const struct sched_job *j = &snap->jobs[i];
        cr_assert_eq(a->job_id, j->id);
        cr_assert_not_null(a->reason);
        cr_assert_geq(a->gpus, 0);
        if (a->gpus > 0 && !j->elastic)
            cr_assert_eq(a->gpus, j->requested_gpus, "job %lld not elastic", (long long)j->id);
        if (a->gpus > 0 && j->min_gpus > 0)
            cr_assert_geq(a->gpus, j->min_gpus);
        if (a->gpus > 0 && j->max_gpus > 0)
            cr_assert_leq(a->gpus, j->max_gpus);
        for (int k = 0; k < a->gpus; k++) {
            struct sched_slot s = a->slots[k];
            cr_assert(s.node >= 0 && (size_t)s.node < snap->nnodes);
            cr_assert(snap->nodes[s.node].up, "slot on a node that is not up");
            cr_assert(s.gpu >= 0 && s.gpu < snap->nodes[s.node].ngpus, "GPU beyond node");
            if (a->pack == SCHED_PACK_PACK || a->pack == SCHED_PACK_KEEP)
                continue; /* checked pairwise below */
            cr_assert_eq(busy[s.node] & (UINT64_C(1) << s.gpu), 0, "GPU booked twice");
            busy[s.node] |= UINT64_C(1) << s.gpu;
            used++;
        }
        if (a->suspended)
            cr_assert_eq(a->gpus, 0, "a suspended job holds no GPU");
        if (!a->changed) {
            cr_assert_eq(a->gpus, j->cur_gpus);
            for (int k = 0; k < a->gpus; k++)
                cr_assert(a->slots[k].node == j->slots[k].node &&
                          a->slots[k].gpu == j->slots[k].gpu);
        }
    }
    used += fx_check_pairs(snap, d, busy);
    cr_assert_eq(used, d->used);
    cr_assert_leq(d->used, d->capacity);
    cr_assert(d->fragmentation >= 0.0 && d->fragmentation <= 1.0);
}

/* A random but valid snapshot: up to 32 nodes of 1..16 GPUs (some down), up
 * to 120 jobs with random bounds, some running on free GPUs. */
static inline void fx_random(struct fx *f, uint64_t *rng)
{
    static const int sizes[] = { 8, 8, 8, 4, 16, 6, 2, 1 };
    int nnodes = fx_between(rng, 1, 32), njobs = fx_between(rng, 0, 120);
    uint64_t busy[FX_MAX_NODES] = { 0 };

    fx_init(f, nnodes, 8);
    f->snap.resize_cost_s = fx_between(rng, 0, 1) ? 10.0 : 0.0;
    f->snap.min_resize_interval_s = fx_between(rng, 0, 1) ? 300.0 : 0.0;
    for (int n = 0; n < nnodes; n++) {
        f->nodes[n].ngpus = sizes[fx_between(rng, 0, 7)];
        f->nodes[n].up = fx_between(rng, 0, 9) != 0;
    }
    for (int i = 0; i < njobs; i++) {
        struct sched_job *j = fx_job(f, 1000 + i, 1 << fx_between(rng, 0, 4));
        j->priority = fx_between(rng, 0, 2);
        j->submit_time = fx_between(rng, 0, 50);
        j->elastic = fx_between(rng, 0, 3) != 0;
        j->max_gpus = fx_between(rng, 0, 1) ? 0 : j->requested_gpus * fx_between(rng, 1, 4);
        j->min_gpus = fx_between(rng, 0, 3) ? 1 : j->requested_gpus;
        j->remaining_epochs = fx_between(rng, 0, 4) ? fx_between(rng, 1, 300) : -1;
        j->epochs_done = fx_between(rng, 0, 100);
        if (fx_between(rng, 0, 4) == 0) {
            j->model_source = SCHED_MODEL_NONE;
            j->speed.fitted = 0;
            j->run_time = fx_between(rng, 0, 700);
        }
        j->last_change_time = f->snap.now - fx_between(rng, 0, 600);
        int want = j->requested_gpus, n = fx_between(rng, 0, nnodes - 1);
        if (fx_between(rng, 0, 1) == 0)
            continue;
        for (int g = 0; g < f->nodes[n].ngpus && j->cur_gpus < want; g++) {
            if (busy[n] & (UINT64_C(1) << g))
                continue;
            busy[n] |= UINT64_C(1) << g;
            fx_hold(f, j, n, g, 1);
        }
        if (j->cur_gpus < j->min_gpus || (!j->elastic && j->cur_gpus != j->requested_gpus)) {
            for (int k = 0; k < j->cur_gpus; k++)
                busy[j->slots[k].node] &= ~(UINT64_C(1) << j->slots[k].gpu);
            j->cur_gpus = 0;
        }
    }
}

/* placement_create() on a snapshot that must be valid; the plan (placement_destroy). */
static inline struct placement_plan *fx_place(struct fx *f, const int *want)
{
    char err[128];

    cr_assert_eq(sched_validate(&f->snap, err, sizeof(err)), 0, "%s", err);
    struct placement_plan *p = placement_create(&f->snap, want);
    cr_assert_not_null(p);
    return p;
}

/* The nodes job i's slots of plan p span. */
static inline int fx_nodes_spanned(const struct placement_plan *p, size_t i)
{
    int seen[FX_MAX_NODES] = { 0 }, n = 0;

    for (int k = 0; k < p->gpus[i]; k++) {
        int node = p->slots[p->off[i] + (size_t)k].node;
        n += !seen[node];
        seen[node] = 1;
    }
    return n;
}

#endif
