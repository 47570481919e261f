/* learning: the simulator's --speed live (simulate_config.speed_live). A running job reports
 * its steps as the server's workers do: per placement (world size, nodes, GPU model) the mean
 * seconds per step over the productive seconds it ran there, at its examples per GPU, each
 * placement's measurement off the truth by a relative noise drawn once per job and
 * placement (uniform within +-noise: a worker's mean step includes its machine's load).
 * The restart's warm-up is not modelled: a restart's delay (resize_cost_s) runs no steps.
 * The policies see no speed model until a job reports; each round the snapshot's models
 * are made from those reports by the same core functions as the server's round: the
 * reference model (learn_fit_speed, from two sizes or more), what learn.h reads
 * (learn_fit_measured), and learn_round (one-size models with the round's prior, a model per
 * GPU model measured, estimates of the cluster's other models from the ratios the jobs
 * measured, the experiment rule). A job's batch.max_local is taken as known on the GPU model
 * of its spec's first true type (the profile it came from), else every type is as the job. */
#include <math.h>
#include <string.h>

#include "domain.h"
#include "simulate_int.h"

/* The relative error of job id's measurement at a placement, within +-noise. */
static double placement_noise(const struct sim *s, int64_t id, int w, int nodes, int g)
{
    uint64_t st = s->cfg->seed ^ ((uint64_t)id * 0x9e3779b97f4a7c15ULL) ^
                  ((uint64_t)(unsigned)w << 20) ^ ((uint64_t)(unsigned)nodes << 40) ^
                  ((uint64_t)(unsigned)g * 0xbf58476d1ce4e5b9ULL) ^ 0x1ea51ea5ULL;
    (void)simulate_rng_next(&st);
    return s->cfg->noise * (2.0 * simulate_rng_uniform(&st) - 1.0);
}

void simulate__learn_record(struct sim *s, struct sim_job *j, double productive)
{
    if (j->gpus == 0 || j->use <= 0 || !(j->true_step_s > 0) || !(productive > 0))
        return;
    struct sim_learn *l = &s->learn[j - s->jobs];
    const struct sched_node *nd = &s->cfg->nodes[j->slots[0].node];
    int w = j->use, nodes = simulate__nodes_held(j), g = nd->gpu_model;
    double m = j->batch > 0 ? j->batch / w : j->spec->speed.batch_per_gpu;
    /* the class of its placement, as a worker of a cluster that knows its topology reports it
     * (a blind one reports none: ISLAND, by its nodes) */
    enum speed_link link = s->cfg->topology_blind
                               ? SPEED_LINK_ISLAND
                               : domain_link(s->cfg->nodes, s->cfg->nnodes, j->slots, w);
    size_t k = 0;
    while (k < l->nobs && !(l->obs[k].w == w && l->obs[k].nodes == nodes &&
                            l->obs[k].gpu_model == g && l->obs[k].link == link))
        k++;
    if (k == l->nobs) {
        if (l->nobs == SIM_LEARN_OBS)
            return;
        l->obs[l->nobs++] = (struct learn_obs){
            .w = w, .nodes = nodes, .gpu_model = g,
            .gpu_speed = nd->gpu_speed > 0 ? nd->gpu_speed : 1.0, .link = link};
    }
    struct learn_obs *o = &l->obs[k];
    double t = j->true_step_s * (1.0 + placement_noise(s, j->spec->id, w, nodes, g));
    double sec = o->seconds + productive, before = o->step_s;
    o->step_s = (o->step_s * o->seconds + t * productive) / sec;
    if (!(fabs(o->step_s - before) <= 1e-6 * o->step_s))
        l->version++;
    o->m = (o->m * o->seconds + m * productive) / sec;
    o->seconds = sec;
}

void simulate__learn_fill(struct sim *s, struct sim_job *j, struct sched_job *o)
{
    const struct simulate_job_spec *sp = j->spec;
    struct sim_learn *l = &s->learn[j - s->jobs];
    o->type_speeds = NULL;
    o->ntype_speeds = 0;
    o->model_source = SCHED_MODEL_NONE;
    o->speed = (struct speed_model){.batch_per_gpu = sp->speed.batch_per_gpu,
                                    .dataset_size = sp->speed.dataset_size,
                                    .gpus_per_node = sp->speed.gpus_per_node,
                                    .gpus_per_island = s->cfg->topology_blind ? 0 : s->island_size};
    if (learn_obs_sizes(l->obs, l->nobs, -1) >= 2 && l->fitted != l->nobs) {
        struct speed_model sm = o->speed;
        if (learn_fit_speed(&sm, l->obs, l->nobs) == 0) {
            l->speed = sm;
            l->fitted = l->nobs;
        }
    }
    if (l->fitted > 0) {
        o->speed = l->speed;
        o->model_source = SCHED_MODEL_FITTED;
    }
    learn_fit_measured(o, l->obs, l->nobs);
    memset(o->explored_s, 0, sizeof(o->explored_s));
    for (size_t k = 0; k < l->nobs; k++)
        for (int e = 0; e < SCHED_EXPLORE_STAGES; e++)
            if (l->obs[k].w == 1 << e)
                o->explored_s[e] += l->obs[k].seconds;
}

/* What job sp reports fits in one GPU of each model its steps ran on: its true max_local of
 * that model (a job that measures its memory, or probes its largest batch, at its start). */
static void report_fits(const struct simulate_job_spec *sp, struct sim_learn *l)
{
    l->nfits = 0;
    for (size_t k = 0; k < l->nobs; k++) {
        int g = l->obs[k].gpu_model, seen = 0;
        for (size_t f = 0; f < l->nfits && !seen; f++)
            seen = l->fits[f].gpu_model == g;
        for (size_t t = 0; t < sp->ntypes && !seen && l->nfits < LEARN_MAX_TYPES; t++)
            if (sp->types[t].gpu_model == g && sp->types[t].max_local > 0) {
                l->fits[l->nfits++] = (struct learn_fits){g, sp->types[t].max_local};
                seen = 1;
            }
    }
}

void simulate__learn_round(struct sim *s)
{
    for (size_t a = 0; a < s->nactive; a++) {
        size_t i = s->active[a];
        struct sim_learn *l = &s->learn[i];
        const struct simulate_job_spec *sp = s->jobs[i].spec;
        report_fits(sp, l);
        s->learn_in[a] = (struct learn_job_steps){
            .obs = l->obs, .nobs = l->nobs, .types = l->types, .cap = LEARN_MAX_TYPES,
            .max_local_model = sp->ntypes > 0 ? sp->types[0].gpu_model : -1,
            .cache = &l->cache, .version = l->version, .fits = l->fits, .nfits = l->nfits};
    }
    learn_round(s->snap_jobs, s->nactive, s->seen_nodes, s->cfg->nnodes, s->learn_in);
}
