/* learn_types: a job's model on each GPU type, learned live (learn_types.h): the cluster's
 * types and the ratios its jobs measured between them, the estimates of the types a job has
 * not run on, each type's largest local batch, and the round's learning (learn_round). */
#include "learn_types.h"

#include <math.h>
#include <string.h>

#include "plan.h"

int learn_type_index(const struct learn_ratios *r, int g)
{
    for (size_t k = 0; k < r->ntypes; k++)
        if (r->type[k].gpu_model == g)
            return (int)k;
    return -1;
}

/* The type's speed and memory as the core defaults them. */
static double type_speed(const struct sched_node *n)
{
    return n->gpu_speed > 0 && isfinite(n->gpu_speed) ? n->gpu_speed : 1.0;
}

static double type_mem(const struct sched_node *n)
{
    return n->gpu_mem_gb > 0 && isfinite(n->gpu_mem_gb) ? n->gpu_mem_gb : PLAN_DEFAULT_GPU_MEM_GB;
}

/* The 1-GPU step time of an entry at its examples per GPU (0 when not positive). */
static double one_gpu_step(const struct sched_type_speed *t)
{
    double s = speed_step_time_placed(&t->speed, 1, 1, t->speed.batch_per_gpu);
    return s > 0 && isfinite(s) ? s : 0;
}

static void add_types(struct learn_ratios *r, const struct sched_node *nodes, size_t nnodes)
{
    for (size_t i = 0; i < nnodes; i++) {
        const struct sched_node *n = &nodes[i];
        int k = learn_type_index(r, n->gpu_model);
        if (k < 0 && r->ntypes < LEARN_MAX_TYPES) {
            k = (int)r->ntypes++;
            r->type[k] = (struct learn_type){.gpu_model = n->gpu_model,
                                             .gpu_speed = type_speed(n),
                                             .gpu_mem_gb = type_mem(n)};
        }
        if (k < 0)
            continue;
        struct learn_type *t = &r->type[k];
        t->gpus_per_node = n->ngpus > t->gpus_per_node ? n->ngpus : t->gpus_per_node;
        if (n->up) {
            t->gpus += n->ngpus;
            t->idle += n->ngpus;
        }
    }
}

/* Each pair of types a job measured adds its log ratio. */
static void add_job(struct learn_ratios *r, const struct sched_job *j)
{
    for (size_t x = 0; j->type_speeds && x < j->ntype_speeds; x++) {
        const struct sched_type_speed *ta = &j->type_speeds[x];
        int a = learn_type_index(r, ta->gpu_model);
        double sa = one_gpu_step(ta);
        if (a < 0 || ta->source != SCHED_TYPE_MEASURED || !ta->speed.fitted || sa <= 0)
            continue;
        for (size_t y = 0; y < j->ntype_speeds; y++) {
            const struct sched_type_speed *tb = &j->type_speeds[y];
            int b = learn_type_index(r, tb->gpu_model);
            double sb = one_gpu_step(tb);
            if (y == x || b < 0 || b == a || tb->source != SCHED_TYPE_MEASURED ||
                !tb->speed.fitted || sb <= 0)
                continue;
            double l = log(sb / sa);
            r->sum[a][b] += l;
            r->sum2[a][b] += l * l;
            r->jobs[a][b]++;
        }
    }
}

void learn_ratios_make(struct learn_ratios *r, const struct sched_node *nodes, size_t nnodes,
                       const struct sched_job *jobs, size_t njobs)
{
    memset(r, 0, sizeof(*r));
    add_types(r, nodes, nnodes);
    for (size_t i = 0; i < njobs; i++) {
        const struct sched_job *j = &jobs[i];
        for (int g = 0; j->slots && g < j->cur_gpus; g++) {
            int node = j->slots[g].node;
            int k = node >= 0 && (size_t)node < nnodes
                        ? learn_type_index(r, nodes[node].gpu_model) : -1;
            if (k >= 0 && nodes[node].up && r->type[k].idle > 0)
                r->type[k].idle--;
        }
        add_job(r, j);
    }
}

int learn_ratio(const struct learn_ratios *r, int a, int b, double *ratio, double *sigma)
{
    int ia = learn_type_index(r, a), ib = learn_type_index(r, b);
    *ratio = 1.0;
    *sigma = LEARN_SIGMA_PRIOR;
    if (ia < 0 || ib < 0)
        return -1;
    int k = r->jobs[ia][ib];
    if (k == 0) {
        *ratio = r->type[ia].gpu_speed / r->type[ib].gpu_speed;
        return 0;
    }
    double mean = r->sum[ia][ib] / k;
    double dev = r->sum2[ia][ib] - k * mean * mean; /* sum (x - mean)^2 */
    *ratio = exp(mean);
    *sigma = sqrt(((dev > 0 ? dev : 0) + LEARN_SIGMA_PRIOR * LEARN_SIGMA_PRIOR) / k);
    return k;
}

static int has_entry(const struct sched_type_speed *types, size_t n, int g)
{
    for (size_t k = 0; k < n; k++)
        if (types[k].gpu_model == g && types[k].speed.fitted)
            return 1;
    return 0;
}

/* The estimate on type b from the job's measured entry that most jobs measured with b. */
static int estimate_one(const struct learn_ratios *r, const struct sched_type_speed *types,
                        size_t n, int b, struct sched_type_speed *out)
{
    int best = -1, best_jobs = -1;
    double best_ratio = 1, best_sigma = INFINITY;
    for (size_t k = 0; k < n; k++) {
        if (types[k].source != SCHED_TYPE_MEASURED || !types[k].speed.fitted)
            continue;
        double ratio, sigma;
        int jobs = learn_ratio(r, types[k].gpu_model, b, &ratio, &sigma);
        if (jobs < 0 || !(ratio > 0) || !isfinite(ratio))
            continue;
        if (jobs > best_jobs || (jobs == best_jobs && sigma < best_sigma)) {
            best = (int)k;
            best_jobs = jobs;
            best_ratio = ratio;
            best_sigma = sigma;
        }
    }
    if (best < 0)
        return 0;
    *out = types[best];
    out->gpu_model = b;
    out->speed.theta[0] *= best_ratio;
    out->speed.theta[1] *= best_ratio;
    out->speed.rmse = 0;
    out->source = SCHED_TYPE_ESTIMATED;
    out->uncertainty = best_sigma;
    out->measured_sizes = 0;
    out->max_local = 0;
    return 1;
}

size_t learn_estimate_types(const struct learn_ratios *r, struct sched_type_speed *types,
                            size_t n, size_t cap)
{
    size_t measured = n;
    for (size_t k = 0; k < r->ntypes && n < cap; k++) {
        int b = r->type[k].gpu_model;
        if (!has_entry(types, n, b) && estimate_one(r, types, measured, b, &types[n]))
            n++;
    }
    return n;
}

void learn_types_max_local(const struct learn_ratios *r, double max_local, int known,
                           struct sched_type_speed *types, size_t n)
{
    int ik = known >= 0 ? learn_type_index(r, known) : -1;
    if (ik < 0 || !(max_local > 0) || !isfinite(max_local))
        return;
    for (size_t k = 0; k < n; k++) {
        int it = learn_type_index(r, types[k].gpu_model);
        if (it >= 0 && !(types[k].max_local > 0))
            types[k].max_local = max_local * r->type[it].gpu_mem_gb / r->type[ik].gpu_mem_gb;
    }
}

void learn_types_fits(const struct learn_ratios *r, const struct learn_fits *fits, size_t nfits,
                      double max_local, int known, struct sched_type_speed *types, size_t n)
{
    int reported = 0;
    for (size_t f = 0; fits && f < nfits; f++) {
        if (!(fits[f].max_local > 0) || !isfinite(fits[f].max_local))
            continue;
        for (size_t k = 0; k < n; k++)
            if (types[k].gpu_model == fits[f].gpu_model)
                types[k].max_local = fits[f].max_local;
        if (!reported && learn_type_index(r, fits[f].gpu_model) >= 0) {
            max_local = fits[f].max_local;
            known = fits[f].gpu_model;
            reported = 1;
        }
    }
    learn_types_max_local(r, max_local, known, types, n);
}

/* The job's MEASURED entry of the shortest 1-GPU step time among types[0..n) (NULL: none). */
static const struct speed_model *fastest_measured(const struct sched_type_speed *types, size_t n)
{
    const struct speed_model *best = NULL;
    double best_t = INFINITY;
    for (size_t e = 0; e < n; e++) {
        if (types[e].source != SCHED_TYPE_MEASURED || !types[e].speed.fitted)
            continue;
        double t = one_gpu_step(&types[e]);
        if (t > 0 && t < best_t) {
            best_t = t;
            best = &types[e].speed;
        }
    }
    return best;
}

size_t learn_round(struct sched_job *jobs, size_t n, const struct sched_node *nodes,
                   size_t nnodes, const struct learn_job_steps *in)
{
    struct learn_prior p;
    size_t made = 0;
    learn_prior(jobs, n, &p);
    for (size_t i = 0; i < n; i++) {
        made += (size_t)learn_model(&jobs[i], &p);
        if (jobs[i].model_source == SCHED_MODEL_FITTED && jobs[i].measured_max_gpus > 0)
            learn_links(&jobs[i].speed, jobs[i].measured_links, &p);
    }
    if (!in)
        return made;
    for (size_t i = 0; i < n; i++) {
        if (!in[i].obs || in[i].nobs == 0 || !in[i].types)
            continue;
        const struct sched_job *j = &jobs[i];
        const struct speed_model *own = learn_is_teacher(j) ? &j->speed : NULL;
        struct learn_fit_cache *c = in[i].cache;
        const struct learn_fit_cache *reuse = c && c->valid && c->version == in[i].version ? c : NULL;
        size_t k = learn_fit_types(in[i].obs, in[i].nobs, &j->speed, own, &p, reuse,
                                   in[i].types, in[i].cap);
        if (c && !reuse) {
            c->n = 0;
            for (size_t e = 0; e < k && c->n < LEARN_FIT_CACHE_MAX; e++)
                if (in[i].types[e].measured_sizes >= 2)
                    c->fits[c->n++] = in[i].types[e];
            c->version = in[i].version;
            c->valid = 1;
        }
        for (size_t e = 0; e < k; e++)
            learn_links(&in[i].types[e].speed, j->measured_links, &p);
        jobs[i].type_speeds = in[i].types;
        jobs[i].ntype_speeds = k;
    }
    struct learn_ratios r;
    learn_ratios_make(&r, nodes, nnodes, jobs, n);
    for (size_t i = 0; i < n; i++) {
        if (!in[i].obs || in[i].nobs == 0 || !in[i].types)
            continue;
        struct sched_type_speed *t = in[i].types;
        size_t k = learn_estimate_types(&r, t, jobs[i].ntype_speeds, in[i].cap);
        learn_types_fits(&r, in[i].fits, in[i].nfits, jobs[i].batch.max_local,
                         in[i].max_local_model, t, k);
        const struct speed_model *best = fastest_measured(t, k);
        for (size_t e = 0; e < k; e++) {
            int it = learn_type_index(&r, t[e].gpu_model);
            if (it < 0)
                continue;
            t[e].speed.gpus_per_node = r.type[it].gpus_per_node;
            learn_type_experiment(&t[e], r.type[it].idle, best);
        }
        jobs[i].ntype_speeds = k;
    }
    return made;
}
