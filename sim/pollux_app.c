/* pollux_app: a measured application as a goodput job (see pollux_app.h). */
#include "pollux_app.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "template.h"

#define GPUS_PER_NODE 4
#define MAX_JCT_S (12 * 3600.0)
#define LO_SCALING 0.5
#define HI_SCALING 0.8

/* yolov3's largest local batch in Pollux's simulator (shared/profiles/README.md); the other
 * apps' is the largest they measured. */
#define YOLOV3_MAX_LOCAL 8.0

/* Fits sp (gpus_per_node set) to every row of p; the fit's relative RMS error into *rel. */
static int fit_rows(struct speed_model *sp, const struct profile *p, double *rel)
{
    size_t n = p->placements.n + p->scalability.n, k = 0;
    struct speed_obs *obs = calloc(n + 1, sizeof(*obs));
    if (!obs)
        return -1;
    const struct profile_points *sets[2] = {&p->placements, &p->scalability};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sets[s]->n; i++)
            obs[k++] = (struct speed_obs){sets[s]->w[i], sets[s]->nodes[i],
                                          sets[s]->local_bsz[i], sets[s]->step_time[i],
                                          SPEED_LINK_ISLAND};
    int rc = speed_fit_obs(sp, obs, k);
    double sq = 0;
    for (size_t i = 0; rc == 0 && i < k; i++) {
        double t = speed_step_time_placed(sp, obs[i].w, obs[i].nodes, obs[i].m);
        sq += pow((t - obs[i].step_s) / obs[i].step_s, 2);
    }
    *rel = k ? sqrt(sq / k) : 0;
    free(obs);
    return rc;
}

static int fit_speed(struct pollux_app *a, const struct profile *p, char *err, size_t errlen)
{
    a->speed.gpus_per_node = GPUS_PER_NODE;
    int rc = fit_rows(&a->speed, p, &a->fit_rel_rmse);
    if (rc)
        snprintf(err, errlen, "%s: cannot fit a speed model to its profile", p->app);
    return rc;
}

static int local_bounds(struct pollux_app *a, const struct profile *p, double max_local)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < p->placements.n; i++) {
        lo = fmin(lo, p->placements.local_bsz[i]);
        hi = fmax(hi, p->placements.local_bsz[i]);
    }
    a->batch.min_local = isfinite(lo) ? lo : 1;
    a->batch.max_local = max_local > 0 ? max_local : hi;
    return 0;
}

static int build_grad(struct pollux_app *a, const struct profile *p, size_t epochs, char *err,
                      size_t errlen)
{
    size_t r = p->nvalidations;
    if (r == 0 || r > POLLUX_MAX_RUNS || p->validations[0].n == 0) {
        snprintf(err, errlen, "%s: %zu validation runs", p->app, r);
        return -1;
    }
    for (size_t v = 0; v < r; v++)
        if (p->validations[v].n < epochs) {
            snprintf(err, errlen, "%s: validation-%d.csv has %zu epochs, not %zu", p->app,
                     p->validations[v].global_bsz, p->validations[v].n, epochs);
            return -1;
        }
    a->arrays = calloc(r * (4 * epochs + 1), sizeof(double));
    if (!a->arrays) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double *batch = a->arrays, *prog = batch + r, *sqr = prog + r * epochs,
           *var = sqr + r * epochs, *error = var + r * epochs;
    /* a rising metric (accuracy, F1, hit rate) as an error: 1 or 100 less it */
    double top = 1;
    for (size_t v = 0; v < r; v++)
        for (size_t e = 0; e < epochs; e++)
            top = p->validations[v].metric[e] > 1 ? 100 : top;
    /* one epoch at M0 is the smallest run's first epoch: progress counts its steps */
    double epoch_steps = p->validations[0].iteration[0];
    a->work_epochs = INFINITY;
    double target = 0;
    for (size_t v = 0; v < r; v++) {
        const struct profile_validation *val = &p->validations[v];
        batch[v] = val->global_bsz;
        for (size_t e = 0; e < epochs; e++) {
            prog[v * epochs + e] = val->progress[e] / epoch_steps;
            sqr[v * epochs + e] = val->grad_sqr[e];
            var[v * epochs + e] = val->grad_var[e];
            double err = p->metric_rises ? top - val->metric[e] : val->metric[e];
            error[v * epochs + e] = e > 0 ? fmin(err, error[v * epochs + e - 1]) : err;
        }
        /* its user stops at the error every run has reached by its last epoch */
        target = fmax(target, error[v * epochs + epochs - 1]);
        a->work_epochs = fmin(a->work_epochs, prog[v * epochs + epochs - 1]);
        a->run_steps[v] = val->iteration[epochs - 1];
    }
    a->grad = (struct simulate_grad){r, epochs, batch, prog, sqr, var, error, target};
    a->batch.init_batch = a->batch.batch = batch[0];
    a->batch.max_batch = batch[r - 1];
    a->speed.batch_per_gpu = batch[0];
    a->speed.dataset_size = batch[0] * epoch_steps;
    return 0;
}

double pollux_app_jct(const struct pollux_app *a, int gpus, double m)
{
    for (size_t v = 0; v < a->grad.nruns; v++)
        if (a->grad.batch[v] == m) {
            int nodes = speed_packed_nodes(&a->speed, gpus);
            double t = goodput_step_time(&a->speed, &a->batch, gpus, nodes, m, NULL);
            return isfinite(t) ? a->run_steps[v] * t : INFINITY;
        }
    return INFINITY;
}

/* The measured step and sync seconds of w GPUs packed on nodes nodes at local batch m:
 * linear between the two measured local batches around m at that placement (clamped to the
 * measured range). Returns 0, or -1 when that placement was not measured. */
static int measured_step(const struct profile *p, int w, int nodes, double m, double *step,
                         double *sync)
{
    const struct profile_points *sets[2] = {&p->placements, &p->scalability};
    int lo = -1, hi = -1, s_lo = 0, s_hi = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sets[s]->n; i++) {
            const struct profile_points *q = sets[s];
            if (q->w[i] != w || q->nodes[i] != nodes)
                continue;
            if (q->local_bsz[i] <= m && (lo < 0 || q->local_bsz[i] > sets[s_lo]->local_bsz[lo])) {
                lo = (int)i;
                s_lo = s;
            }
            if (q->local_bsz[i] >= m && (hi < 0 || q->local_bsz[i] < sets[s_hi]->local_bsz[hi])) {
                hi = (int)i;
                s_hi = s;
            }
        }
    if (lo < 0 && hi < 0)
        return -1;
    if (lo < 0 || hi < 0) { /* outside the measured range: the nearest end */
        const struct profile_points *q = lo < 0 ? sets[s_hi] : sets[s_lo];
        int i = lo < 0 ? hi : lo;
        *step = q->step_time[i];
        *sync = q->sync_time[i];
        return 0;
    }
    double ml = sets[s_lo]->local_bsz[lo], mh = sets[s_hi]->local_bsz[hi];
    double t = mh > ml ? (m - ml) / (mh - ml) : 0.0;
    *step = (1 - t) * sets[s_lo]->step_time[lo] + t * sets[s_hi]->step_time[hi];
    *sync = (1 - t) * sets[s_lo]->sync_time[lo] + t * sets[s_hi]->sync_time[hi];
    return 0;
}

/* JCT on gpus GPUs packed on 4-GPU nodes at validated batch run v, from the measured step
 * times where the placement was measured (a step that accumulates k more micro-batches
 * computes k more times, without their all-reduce), else from the fitted model. */
static double config_jct(const struct pollux_app *a, const struct profile *p, int gpus,
                         size_t v)
{
    double m = a->grad.batch[v], local = m / gpus;
    int nodes = speed_packed_nodes(&a->speed, gpus), k = 0;
    if (local < a->batch.min_local * (1 - 1e-9))
        return INFINITY;
    if (a->batch.max_local > 0 && local > a->batch.max_local * (1 + 1e-9))
        k = (int)ceil(local / a->batch.max_local - 1e-9) - 1;
    double step, sync;
    if (measured_step(p, gpus, nodes, local / (k + 1), &step, &sync))
        return pollux_app_jct(a, gpus, m);
    return a->run_steps[v] * (step + k * (step - sync));
}

/* The validated batch that finishes soonest on gpus GPUs, into *best; its JCT. */
static double best_batch(const struct pollux_app *a, const struct profile *p, int gpus,
                         double *best)
{
    double jct = INFINITY;
    for (size_t v = 0; v < a->grad.nruns; v++) {
        double t = config_jct(a, p, gpus, v);
        if (t < jct) {
            jct = t;
            *best = a->grad.batch[v];
        }
    }
    return jct;
}

static void configurations(struct pollux_app *a, const struct profile *p)
{
    static const int counts[] = {1, 2, 4, 6, 8, 12, 16, 24, 32, 48};
    double base = INFINITY, base_batch = a->batch.init_batch;
    a->nconfigs = 0;
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        int w = counts[i];
        if (w * a->batch.min_local > a->batch.max_batch)
            break;
        double m = 0, jct = best_batch(a, p, w, &m);
        if (w == 1) {
            base = jct;
            base_batch = m;
            continue;
        }
        double scaling = base / jct / w;
        if (jct < MAX_JCT_S && scaling > LO_SCALING && scaling < HI_SCALING &&
            a->nconfigs < POLLUX_MAX_CONFIGS)
            a->configs[a->nconfigs++] = (struct pollux_config){w, m, jct};
    }
    if (a->nconfigs == 0)
        a->configs[a->nconfigs++] = (struct pollux_config){1, base_batch, base};
}

int pollux_app_load(const char *name, struct pollux_app *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    size_t epochs = (size_t)template_app_epochs(name);
    if (epochs == 0) {
        snprintf(err, errlen, "unknown application '%s'", name);
        return -1;
    }
    struct profile *p = profile_load(name, err, errlen);
    if (!p)
        return -1;
    snprintf(a->name, sizeof(a->name), "%s", name);
    double max_local = strcmp(name, "yolov3") ? 0 : YOLOV3_MAX_LOCAL;
    int rc = local_bounds(a, p, max_local) || build_grad(a, p, epochs, err, errlen) ||
             fit_speed(a, p, err, errlen);
    if (rc == 0)
        configurations(a, p);
    profile_destroy(p);
    if (rc)
        pollux_app_free(a);
    return rc ? -1 : 0;
}

void pollux_app_free(struct pollux_app *a)
{
    free(a->arrays);
    a->arrays = NULL;
}

int pollux_app_load_types(struct pollux_app *a, const int gpu_model[PROFILE_NTYPES],
                          const int node_gpus[PROFILE_NTYPES], double t4_factor, char *err,
                          size_t errlen)
{
    a->ntypes = 0;
    for (size_t t = 0; t < PROFILE_NTYPES; t++) {
        struct profile *p = profile_load_type(a->name, profile_type_name(t), err, errlen);
        if (!p)
            return -1;
        struct sched_type_speed *ty = &a->types[t];
        double hi = 0;
        const struct profile_points *sets[2] = {&p->placements, &p->scalability};
        for (int s = 0; s < 2; s++)
            for (size_t i = 0; i < sets[s]->n; i++)
                hi = fmax(hi, sets[s]->local_bsz[i]);
        *ty = (struct sched_type_speed){.gpu_model = gpu_model[t], .max_local = hi};
        ty->speed.gpus_per_node = node_gpus[t];
        ty->speed.batch_per_gpu = a->speed.batch_per_gpu;
        ty->speed.dataset_size = a->speed.dataset_size;
        int rc = fit_rows(&ty->speed, p, &a->type_rel_rmse[t]);
        profile_destroy(p);
        if (rc) {
            snprintf(err, errlen, "%s: cannot fit a speed model to its %s rows", a->name,
                     profile_type_name(t));
            return -1;
        }
        a->ntypes++;
    }
    /* the aws rows are those of shared/profiles: its T4 model, as a v100 model */
    a->ref_speed = a->types[0].speed;
    for (size_t k = 0; k < SPEED_NFEATURES; k++)
        a->ref_speed.theta[k] *= t4_factor > 0 ? t4_factor : 1.0;
    return 0;
}
