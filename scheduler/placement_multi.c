/* placement_multi: GPU-model groups and host resources (see placement_multi.h). */
#include "placement_multi.h"
#include "gpumap.h"
#include "radix.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The distinct GPU models of the snapshot's nodes, ascending, into models
 * (nnodes + 1 entries); returns how many. */
static size_t list_models(const struct sched_snapshot *snap, int *models)
{
    size_t n = 0;

    for (size_t k = 0; k < snap->nnodes; k++) {
        int g = snap->nodes[k].gpu_model;
        size_t at = 0;
        while (at < n && models[at] < g)
            at++;
        if (at < n && models[at] == g)
            continue;
        memmove(models + at + 1, models + at, (n - at) * sizeof(*models));
        models[at] = g;
        n++;
    }
    return n;
}

static size_t model_index(const int *models, size_t n, int g)
{
    for (size_t k = 0; k < n; k++)
        if (models[k] == g)
            return k;
    return n;
}

/* The model all of a running job's GPUs are of, or INT_MIN (mixed, none). */
static int running_model(const struct sched_snapshot *snap, const struct sched_job *j)
{
    int g = INT_MIN;

    for (int k = 0; k < j->cur_gpus; k++) {
        int m = snap->nodes[j->slots[k].node].gpu_model;
        if (g != INT_MIN && m != g)
            return INT_MIN;
        g = m;
    }
    return g;
}

/* Sorts idx by want descending, then by job index (idx is ascending on entry and the sort
 * stable). Returns 0, or -1 (ENOMEM). */
static int sort_by_want(size_t *idx, size_t n, const int *want)
{
    struct radix_item *w = malloc((n + 1) * sizeof(*w));
    struct radix_item *tmp = malloc((n + 1) * sizeof(*tmp));

    if (!w || !tmp) {
        free(w);
        free(tmp);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        w[k] = (struct radix_item){(uint64_t)(INT_MAX - want[idx[k]]), idx[k]};
    radix_sort(w, tmp, n);
    for (size_t k = 0; k < n; k++)
        idx[k] = w[k].idx;
    free(w);
    free(tmp);
    return 0;
}

static void pick_model(const struct sched_snapshot *snap, size_t i, int want, const int *models,
                       size_t nm, long *free_gpus, int *model)
{
    int cur = running_model(snap, &snap->jobs[i]);
    size_t best = model_index(models, nm, cur);

    if (best == nm || free_gpus[best] < want) {
        best = 0;
        for (size_t k = 1; k < nm; k++)
            if (free_gpus[k] > free_gpus[best])
                best = k;
    }
    free_gpus[best] -= want;
    model[i] = models[best];
}

int placement_multi_assign_models(const struct sched_snapshot *snap, const int *want, int *model)
{
    int *models = malloc((snap->nnodes + 1) * sizeof(*models));
    long *free_gpus = calloc(snap->nnodes + 1, sizeof(*free_gpus));
    size_t *idx = malloc((snap->njobs + 1) * sizeof(*idx)), n = 0;

    if (!models || !free_gpus || !idx) {
        free(models);
        free(free_gpus);
        free(idx);
        errno = ENOMEM;
        return -1;
    }
    size_t nm = list_models(snap, models);
    for (size_t k = 0; k < snap->nnodes; k++)
        if (snap->nodes[k].up)
            free_gpus[model_index(models, nm, snap->nodes[k].gpu_model)] += snap->nodes[k].ngpus;
    for (size_t i = 0; i < snap->njobs; i++)
        if (want[i] > 0 && model[i] < 0)
            idx[n++] = i;
    /* With one model every job gets it, whatever the order. */
    int rc = nm > 1 ? sort_by_want(idx, n, want) : 0;
    for (size_t k = 0; rc == 0 && k < n && nm > 0; k++)
        pick_model(snap, idx[k], want[idx[k]], models, nm, free_gpus, model);
    free(models);
    free(free_gpus);
    free(idx);
    if (rc < 0)
        errno = ENOMEM;
    return rc;
}

static void merge_group(struct placement_plan *dst, const struct placement_plan *src,
                        const int *model, int g)
{
    for (size_t i = 0; i < dst->njobs; i++) {
        if (model[i] != g)
            continue;
        dst->gpus[i] = src->gpus[i];
        dst->kept[i] = src->kept[i];
        memcpy(dst->slots + dst->off[i], src->slots + src->off[i],
               (size_t)src->gpus[i] * sizeof(*dst->slots));
    }
    dst->spread += src->spread;
    dst->short_gpus += src->short_gpus;
    dst->switch_spread += src->switch_spread;
    dst->island_spread += src->island_spread;
    dst->migrations += src->migrations;
    if (src->gather >= 0 && dst->gather < 0) {
        dst->gather = src->gather;
        dst->gather_level = src->gather_level;
    }
}

/* Places group g alone: its nodes keep their state, the others look down. */
static struct placement_plan *place_group(const struct sched_snapshot *snap, const int *want,
                                          const int *model, int g, struct sched_node *view,
                                          int *want_g, int repack)
{
    struct sched_snapshot sub = *snap;

    for (size_t k = 0; k < snap->nnodes; k++) {
        view[k] = snap->nodes[k];
        if (view[k].gpu_model != g)
            view[k].up = 0;
    }
    for (size_t i = 0; i < snap->njobs; i++)
        want_g[i] = model[i] == g ? want[i] : 0;
    sub.nodes = view;
    return placement_create_ex(&sub, want_g, repack);
}

static void measure_fragmentation(const struct sched_snapshot *snap, struct placement_plan *p,
                                  uint64_t *busy)
{
    gpumap_clear(busy, snap->nnodes);
    for (size_t i = 0; i < p->njobs; i++)
        gpumap_mark_all(busy, &p->slots[p->off[i]], p->gpus[i]);
    p->fragmentation = placement_fragmentation(snap, busy);
}

static struct placement_plan *place_groups(const struct sched_snapshot *snap, const int *want,
                                           const int *model, const int *models, size_t nm,
                                           int repack)
{
    struct sched_node *view = malloc((snap->nnodes + 1) * sizeof(*view));
    int *want_g = calloc(snap->njobs + 1, sizeof(*want_g));
    uint64_t *busy = gpumap_create(snap->nnodes);
    struct placement_plan *p = placement_plan_empty(snap, want);

    for (size_t k = 0; p && view && want_g && busy && k < nm; k++) {
        struct placement_plan *q = place_group(snap, want, model, models[k], view, want_g, repack);
        if (!q) {
            placement_destroy(p);
            p = NULL;
            break;
        }
        merge_group(p, q, model, models[k]);
        placement_destroy(q);
    }
    if (p && view && want_g && busy)
        measure_fragmentation(snap, p, busy);
    else {
        placement_destroy(p);
        p = NULL;
    }
    free(view);
    free(want_g);
    free(busy);
    return p;
}

/* Per-node host use of the plan into cores[], mem[] (nnodes entries). */
static void host_use(const struct sched_snapshot *snap, const struct placement_plan *p,
                     const struct plan_choice *plan, double *cores, double *mem)
{
    memset(cores, 0, snap->nnodes * sizeof(*cores));
    memset(mem, 0, snap->nnodes * sizeof(*mem));
    for (size_t i = 0; i < p->njobs; i++) {
        struct plan_choice c = plan[i];
        if (p->gpus[i] > 0 && plan_has_info(&snap->jobs[i].plan))
            plan_demand(&snap->jobs[i].plan, &c, p->gpus[i]);
        for (int k = 0; k < p->gpus[i]; k++) {
            int n = p->slots[p->off[i] + (size_t)k].node;
            cores[n] += c.cpu_cores;
            mem[n] += c.host_mem_gb;
        }
    }
}

static int node_over(const struct sched_node *nd, double cores, double mem)
{
    return (nd->cpu_cores > 0 && cores > nd->cpu_cores + 1e-9) ||
           (nd->host_mem_gb > 0 && mem > nd->host_mem_gb + 1e-9);
}

/* The first over-committed node, or -1. A cluster whose nodes advertise no cores and no
 * memory has none (node_over), and nothing to add up. */
static long over_node(const struct sched_snapshot *snap, const struct placement_plan *p,
                      const struct plan_choice *plan, double *cores, double *mem)
{
    size_t counted = 0;

    while (counted < snap->nnodes && snap->nodes[counted].cpu_cores <= 0 &&
           !(snap->nodes[counted].host_mem_gb > 0))
        counted++;
    if (counted == snap->nnodes)
        return -1;
    host_use(snap, p, plan, cores, mem);
    for (size_t n = 0; n < snap->nnodes; n++)
        if (node_over(&snap->nodes[n], cores[n], mem[n]))
            return (long)n;
    return -1;
}

int placement_multi_fits(const struct sched_snapshot *snap, const struct placement_plan *p,
                         const struct plan_choice *plan)
{
    double *cores = malloc((snap->nnodes + 1) * sizeof(*cores));
    double *mem = malloc((snap->nnodes + 1) * sizeof(*mem));
    int ok = cores && mem && over_node(snap, p, plan, cores, mem) < 0;

    free(cores);
    free(mem);
    return ok;
}

static int uses_node(const struct placement_plan *p, size_t i, long n)
{
    for (int k = 0; k < p->gpus[i]; k++)
        if (p->slots[p->off[i] + (size_t)k].node == n)
            return 1;
    return 0;
}

/* 1 if job a is cheaper to refuse than job b (see placement_multi.h). */
static int cheaper(const struct sched_snapshot *snap, const struct placement_plan *p,
                   const struct plan_choice *plan, size_t a, size_t b)
{
    const struct sched_job *x = &snap->jobs[a], *y = &snap->jobs[b];
    double da = plan[a].cpu_cores + plan[a].host_mem_gb, db = plan[b].cpu_cores + plan[b].host_mem_gb;

    if (p->kept[a] != p->kept[b])
        return p->kept[a] < p->kept[b];
    if (da != db)
        return da > db;
    if (x->priority != y->priority)
        return x->priority < y->priority;
    if (x->submit_time != y->submit_time)
        return x->submit_time > y->submit_time;
    return x->id > y->id;
}

static size_t victim(const struct sched_snapshot *snap, const struct placement_plan *p,
                     const struct plan_choice *plan, long n)
{
    size_t best = snap->njobs;

    for (size_t i = 0; i < snap->njobs; i++) {
        if (!uses_node(p, i, n) || (plan[i].cpu_cores <= 0 && plan[i].host_mem_gb <= 0))
            continue;
        if (best == snap->njobs || cheaper(snap, p, plan, i, best))
            best = i;
    }
    return best;
}

static struct placement_plan *place(const struct sched_snapshot *snap, const int *want,
                                    const int *model, const int *models, size_t nm, int repack)
{
    if (nm <= 1)
        return placement_create_ex(snap, want, repack);
    return place_groups(snap, want, model, models, nm, repack);
}

struct placement_plan *placement_multi_create(const struct sched_snapshot *snap, int *want,
                                              const int *model, const struct plan_choice *plan,
                                              int repack)
{
    int *models = malloc((snap->nnodes + 1) * sizeof(*models));
    double *cores = malloc((snap->nnodes + 1) * sizeof(*cores));
    double *mem = malloc((snap->nnodes + 1) * sizeof(*mem));
    struct placement_plan *p = NULL;

    if (!models || !cores || !mem)
        goto out;
    size_t nm = list_models(snap, models);
    p = place(snap, want, model, models, nm, repack);
    for (size_t round = 0; p && round < snap->njobs; round++) {
        long n = over_node(snap, p, plan, cores, mem);
        size_t v = n < 0 ? snap->njobs : victim(snap, p, plan, n);
        if (v == snap->njobs)
            break;
        want[v] = 0;
        placement_destroy(p);
        p = place(snap, want, model, models, nm, repack);
    }
out:
    if (!p)
        errno = ENOMEM;
    free(models);
    free(cores);
    free(mem);
    return p;
}
