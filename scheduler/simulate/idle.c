/* The GPUs a round leaves idle that a running elastic job could have used (simulate_result's
 * idle_usable_frac), judged by the jobs' TRUE models: the policies' own view cannot say
 * whether they missed something. */
#include <math.h>
#include <stdlib.h>

#include "simulate_int.h"

/* Remaining seconds of job j at rate r (epochs per second); INFINITY when r is not positive. */
static double time_at(const struct sim_job *j, double r)
{
    double left = j->spec->epochs - j->epochs_done;
    return r > 0 && isfinite(r) ? (left > 0 ? left : 0) / r : INFINITY;
}

/* How many of the free GPUs of the GPU model of node nd (free of them, per_node a node) job j
 * could use to finish sooner, its restart counted: grown into them on the model it runs on,
 * or moved onto them from another. 0: none. */
static int could_use(const struct sim *s, const struct sim_job *j, size_t nd, int free,
                     int per_node)
{
    int max = j->spec->max_gpus;
    int same = s->cfg->nodes[j->slots[0].node].gpu_model == s->cfg->nodes[nd].gpu_model;
    int u = same ? j->gpus + free : free;
    if (u > max)
        u = max;
    if (u <= (same ? j->gpus : 0))
        return 0;
    int nodes = same ? simulate__nodes_held(j) + (u - j->gpus + per_node - 1) / per_node
                     : (u + per_node - 1) / per_node;
    int use = j->use > 0 ? j->use : j->gpus;
    double now = time_at(j, simulate__rate_on(s, j, (size_t)j->slots[0].node, use,
                                              simulate__nodes_held(j)));
    double then = time_at(j, simulate__rate_on(s, j, nd, u, nodes));
    if (!(then + s->cfg->resize_cost_s < now))
        return 0;
    return same ? u - j->gpus : u;
}

void simulate__measure_idle(struct sim *s)
{
    s->idle_usable = 0;
    int *held = calloc(s->cfg->nnodes + 1, sizeof(*held));
    if (!held)
        return;
    for (size_t a = 0; a < s->nactive; a++) {
        const struct sim_job *j = &s->jobs[s->active[a]];
        if (j->partner >= 0 && (size_t)j->partner < s->active[a])
            continue; /* a packed pair's GPUs once */
        for (int g = 0; g < j->gpus; g++)
            held[j->slots[g].node]++;
    }
    /* Per GPU model (the first node of each stands for it): its free GPUs, the most GPUs of a
     * node, and the most of them one job could use. */
    for (size_t n = 0; n < s->cfg->nnodes; n++) {
        int model = s->cfg->nodes[n].gpu_model, first = 1, free = 0, per_node = 1;
        for (size_t k = 0; k < n && first; k++)
            first = s->cfg->nodes[k].gpu_model != model;
        if (!first)
            continue;
        for (size_t k = n; k < s->cfg->nnodes; k++) {
            const struct sched_node *nd = &s->cfg->nodes[k];
            if (nd->gpu_model != model || !nd->up)
                continue;
            free += nd->ngpus > held[k] ? nd->ngpus - held[k] : 0;
            per_node = nd->ngpus > per_node ? nd->ngpus : per_node;
        }
        int best = 0;
        for (size_t a = 0; a < s->nactive && free > 0 && best < free; a++) {
            const struct sim_job *j = &s->jobs[s->active[a]];
            if (!j->spec->elastic || j->gpus <= 0 || j->gpus >= j->spec->max_gpus ||
                j->partner >= 0)
                continue;
            int u = could_use(s, j, n, free, per_node);
            best = u > best ? u : best;
        }
        s->idle_usable += best < free ? best : free;
    }
    free(held);
}
