/* outlook: forecasts by simulating forward (outlook.h). The snapshot becomes the engine's
 * workload, the running jobs started on their GPUs; K runs, each with the jobs' remaining work
 * drawn afresh; each job's starts and finishes over the runs give its P50 and P90. */
#include "outlook.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_estimate.h"
#include "simulate.h"

/* A stand-in length for a job nothing tells the length of: as long again as it ran, and at
 * least this (its own forecast is then unknown; it still holds GPUs in the runs). */
#define OUTLOOK_UNKNOWN_S 3600.0

void outlook_config_init(struct outlook_config *c)
{
    memset(c, 0, sizeof(*c));
    c->runs = 20;
    c->spread = 0.6;
    c->declared_spread = 0.1;
    c->interval_s = 60.0;
    c->horizon_s = 7 * 86400.0;
    c->seed = 1;
}

double outlook_spread(long n, double mean_error, double fallback)
{
    if (n < OUTLOOK_SPREAD_MIN_N || !(mean_error >= 0) || !isfinite(mean_error))
        return fallback;
    return fmax(0.02, fmin(3.0, mean_error * sqrt(M_PI / 2)));
}

static int cmp_known(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    x = x < 0 ? INFINITY : x;
    y = y < 0 ? INFINITY : y;
    return (x > y) - (x < y);
}

double outlook_quantile(double *v, size_t n, double p)
{
    if (n == 0)
        return -1;
    qsort(v, n, sizeof(*v), cmp_known);
    /* at rank p (n + 1): a new draw falls at or below the k-th of n with probability
     * k / (n + 1), so this P90 of 10 runs covers 90 % (p (n - 1) covered 83 %) */
    double r = fmin(fmax(p * (double)(n + 1) - 1.0, 0.0), (double)(n - 1));
    size_t lo = (size_t)floor(r), hi = lo + 1 < n ? lo + 1 : lo;
    if (v[lo] < 0 || v[hi] < 0)
        return -1;
    return v[lo] + (r - (double)lo) * (v[hi] - v[lo]);
}

/* What the runs share: the workload built once, the parts a draw changes kept apart. */
struct work {
    const struct sched_snapshot *snap;
    const struct outlook_config *c;
    struct simulate_job_spec *specs;
    double *rem;          /* per job: the estimate of its remaining epochs */
    double *sigma;        /* per job: the spread of its draw */
    unsigned char *blind; /* per job: nothing tells its length (its forecast is unknown) */
    double base;          /* snapshot time of the engine's 0 */
    int total_gpus;
    size_t n;        /* the snapshot's jobs, then the arrivals (outlook_config.future) */
    uint64_t *taken; /* per node: the GPUs of the jobs that run at the start */
};

/* Job i of the run: the snapshot's, then the expected arrivals. */
static const struct sched_job *job_of(const struct work *w, size_t i)
{
    return i < w->snap->njobs ? &w->snap->jobs[i] : &w->c->future[i - w->snap->njobs];
}

/* A speed of a job without a fitted model: one step time at any size, such that at the
 * GPUs it holds (or asks for) its estimate takes rem_s seconds. */
static struct speed_model stand_in(const struct sched_job *j, double rem, double rem_s)
{
    struct speed_model m = j->speed;
    int w = j->cur_gpus > 0 ? j->cur_gpus : j->requested_gpus > 0 ? j->requested_gpus : 1;
    memset(m.theta, 0, sizeof(m.theta));
    m.batch_per_gpu = m.batch_per_gpu > 0 ? m.batch_per_gpu : 1.0;
    m.dataset_size = m.dataset_size > 0 ? m.dataset_size : 1.0;
    m.gpus_per_node = 0;
    m.fitted = 1;
    /* epochs/s at w = w m / (theta0 D) = rem / rem_s */
    m.theta[0] = (double)w * m.batch_per_gpu * rem_s / (m.dataset_size * rem);
    return m;
}

/* The job's speed for the engine: its model, or a stand-in from the prior of finished jobs
 * (blind when there is none). */
static struct speed_model speed_of(struct work *w, size_t i)
{
    const struct sched_job *j = job_of(w, i);
    if (j->speed.fitted && j->model_source != SCHED_MODEL_NONE &&
        speed_epochs_per_second(&j->speed, 1) > 0)
        return j->speed;
    double rem_s = sched_estimate_prior_s(w->snap->finished_run_s, w->snap->nfinished, j->run_time);
    if (!(rem_s > 0)) {
        w->blind[i] = 1;
        rem_s = fmax(j->run_time, OUTLOOK_UNKNOWN_S);
    }
    return stand_in(j, w->rem[i], rem_s);
}

/* Marks job j's GPUs taken; 0 (nothing marked) when one is outside the cluster or already
 * taken: the second job of a packed pair (the engine packs only what a decision packs) then
 * waits in the runs, as does a job on GPUs that are gone. */
static int take_slots(struct work *w, const struct sched_job *j)
{
    for (int g = 0; g < j->cur_gpus; g++) {
        struct sched_slot sl = j->slots[g];
        if (sl.node < 0 || (size_t)sl.node >= w->snap->nnodes || sl.gpu < 0 ||
            sl.gpu >= w->snap->nodes[sl.node].ngpus || sl.gpu >= 64 ||
            (w->taken[sl.node] >> sl.gpu & 1))
            return 0;
    }
    for (int g = 0; g < j->cur_gpus; g++)
        w->taken[j->slots[g].node] |= 1ULL << j->slots[g].gpu;
    return 1;
}

static void spec_of(struct work *w, size_t i)
{
    const struct sched_job *j = job_of(w, i);
    int arrives = i >= w->snap->njobs; /* after now: it is submitted during the run */
    struct simulate_job_spec *sp = &w->specs[i];
    int lo = sched_job_min_gpus(j), hi = sched_job_max_gpus(j);
    int req = j->requested_gpus > lo ? j->requested_gpus : lo;
    hi = hi < w->total_gpus ? hi : w->total_gpus;
    hi = hi > req ? hi : req;
    double rem = j->remaining_epochs;
    w->rem[i] = rem > 0 && isfinite(rem) ? rem : fmax(j->epochs_done, 1.0);
    w->sigma[i] = j->remaining_source == SCHED_EST_DECLARED ? w->c->declared_spread : w->c->spread;
    *sp = (struct simulate_job_spec){
        .id = j->id,
        .submit_time =
            fmax((arrives ? j->submit_time : fmin(j->submit_time, w->snap->now)) - w->base, 0.0),
        .requested_gpus = req,
        .min_gpus = lo,
        .max_gpus = hi,
        .elastic = j->elastic,
        .priority = j->priority,
        .plan = j->plan,
        .gpu_util = j->gpu_util,
        .gpu_mem_bytes = j->gpu_mem_bytes,
        .user = j->user_id,
        .batch = j->batch,
        .types = j->type_speeds,
        .ntypes = j->ntype_speeds};
    sp->speed = speed_of(w, i);
    if (!arrives && j->cur_gpus > 0 && j->slots && take_slots(w, j)) {
        sp->start_gpus = j->cur_gpus;
        sp->start_slots = j->slots;
        sp->start_epochs_done = j->epochs_done > 0 ? j->epochs_done : 0.0;
        sp->start_run_s = j->run_time > 0 ? j->run_time : 0.0;
        sp->start_last_change = j->last_change_time - w->base;
    }
}

/* Draw k: job i's remaining work is its estimate times exp(bias + sigma z); the policy is
 * shown the estimate. */
static void draw(struct work *w, int k)
{
    uint64_t seed = w->c->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)k + 1;
    for (size_t i = 0; i < w->n; i++) {
        struct simulate_job_spec *sp = &w->specs[i];
        double f = exp(w->c->bias) * simulate_estimate_factor(seed, sp->id, w->sigma[i]);
        double truth = w->rem[i] * f;
        sp->epochs = sp->start_epochs_done + truth;
        sp->shown_factor = 1.0 / f;
    }
}

static void config_of(const struct work *w, struct simulate_config *cfg, int k)
{
    const struct sched_snapshot *snap = w->snap;
    simulate_config_init(cfg);
    cfg->nodes = snap->nodes;
    cfg->nnodes = snap->nnodes;
    cfg->policy = w->c->policy;
    cfg->interval_s = w->c->interval_s;
    cfg->resize_cost_s = snap->resize_cost_s > 0 ? snap->resize_cost_s : 0.0;
    cfg->min_resize_interval_s = snap->min_resize_interval_s > 0 ? snap->min_resize_interval_s : 0;
    if (snap->explore_stage_s > 0)
        cfg->explore_slice_s = snap->explore_stage_s;
    cfg->noise = 0;
    cfg->seed = w->c->seed + (uint64_t)k;
    cfg->quantum_s = snap->quantum_s;
    cfg->gpu_mem_bytes = snap->gpu_mem_bytes;
    cfg->max_wait_s = snap->max_wait_s > 0 && isfinite(snap->max_wait_s) ? snap->max_wait_s : 0;
    cfg->users = snap->users;
    cfg->nusers = snap->nusers;
    cfg->show_type_speeds = 1;
    cfg->start_time = snap->now - w->base;
    cfg->until = cfg->start_time + w->c->horizon_s;
}

static int check(const struct sched_snapshot *snap, const struct outlook_config *c, char *err,
                 size_t errlen)
{
    if (!snap || !c || !c->policy || c->runs < 1 || c->runs > OUTLOOK_MAX_RUNS ||
        !(c->spread >= 0) || !(c->declared_spread >= 0) || !isfinite(c->spread) ||
        !isfinite(c->declared_spread) || !isfinite(c->bias) || !(c->interval_s > 0) ||
        !(c->horizon_s > 0) || !isfinite(c->horizon_s) || !isfinite(snap->now)) {
        snprintf(err, errlen, "outlook: bad configuration");
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static int work_init(struct work *w, const struct sched_snapshot *snap,
                     const struct outlook_config *c)
{
    size_t n = snap->njobs + (c->future ? c->nfuture : 0);
    *w = (struct work){.snap = snap, .c = c, .base = snap->now, .n = n};
    n = n ? n : 1;
    w->specs = calloc(n, sizeof(*w->specs));
    w->rem = calloc(n, sizeof(*w->rem));
    w->sigma = calloc(n, sizeof(*w->sigma));
    w->blind = calloc(n, 1);
    w->taken = calloc(snap->nnodes + 1, sizeof(*w->taken));
    if (!w->specs || !w->rem || !w->sigma || !w->blind || !w->taken)
        return -1;
    /* a job is there by now (a clock a little ahead of the snapshot's counts as now) */
    for (size_t i = 0; i < snap->njobs; i++) {
        w->base = fmin(w->base, snap->jobs[i].submit_time);
        if (snap->jobs[i].cur_gpus > 0)
            w->base = fmin(w->base, snap->jobs[i].last_change_time);
    }
    for (size_t k = 0; k < snap->nnodes; k++)
        w->total_gpus += snap->nodes[k].ngpus;
    for (size_t i = 0; i < w->n; i++)
        spec_of(w, i);
    return 0;
}

static void work_fini(struct work *w)
{
    free(w->specs);
    free(w->rem);
    free(w->sigma);
    free(w->blind);
    free(w->taken);
}

/* Job i's P50 and P90 of the runs' times in v (K per job, job-major) into *p50, *p90, on the
 * snapshot's clock. */
static void band(double *v, int runs, double base, double *p50, double *p90)
{
    double q50 = outlook_quantile(v, (size_t)runs, 0.5);
    double q90 = outlook_quantile(v, (size_t)runs, 0.9);
    *p50 = q50 >= 0 ? q50 + base : -1;
    *p90 = q90 >= 0 ? q90 + base : -1;
}

static void summarise(struct outlook *o, const struct work *w, double *starts, double *fins,
                      int runs)
{
    for (size_t i = 0; i < o->njobs; i++) {
        struct outlook_job *oj = &o->jobs[i];
        const struct sched_job *j = &w->snap->jobs[i];
        oj->id = j->id;
        oj->start_p50 = oj->start_p90 = oj->finish_p50 = oj->finish_p90 = -1;
        if (j->cur_gpus == 0)
            band(starts + i * (size_t)runs, runs, w->base, &oj->start_p50, &oj->start_p90);
        if (!w->blind[i])
            band(fins + i * (size_t)runs, runs, w->base, &oj->finish_p50, &oj->finish_p90);
    }
}

/* The K runs; their starts and finishes into starts and fins (job-major). */
static int runs_into(struct work *w, double *starts, double *fins, char *err, size_t errlen)
{
    size_t n = w->snap->njobs;
    for (int k = 0; k < w->c->runs; k++) {
        if (w->c->stop && w->c->stop(w->c->stop_arg)) {
            snprintf(err, errlen, "outlook: stopped");
            errno = ECANCELED;
            return -1;
        }
        struct simulate_config cfg;
        config_of(w, &cfg, k);
        draw(w, k);
        struct simulate_result *r = simulate_run(&cfg, w->specs, w->n, NULL, NULL, err, errlen);
        if (!r)
            return -1;
        for (size_t i = 0; i < n; i++) {
            starts[i * (size_t)w->c->runs + (size_t)k] = r->jobs[i].start_time;
            fins[i * (size_t)w->c->runs + (size_t)k] = r->jobs[i].finish_time;
        }
        simulate_result_destroy(r);
    }
    return 0;
}

struct outlook *outlook_run(const struct sched_snapshot *snap, const struct outlook_config *c,
                            char *err, size_t errlen)
{
    if (check(snap, c, err, errlen))
        return NULL;
    struct work w;
    size_t cells = (snap->njobs ? snap->njobs : 1) * (size_t)c->runs;
    double *starts = calloc(cells, sizeof(*starts)), *fins = calloc(cells, sizeof(*fins));
    struct outlook *o = calloc(1, sizeof(*o));
    int rc = work_init(&w, snap, c);
    if (o)
        o->jobs = calloc(snap->njobs ? snap->njobs : 1, sizeof(*o->jobs));
    if (rc || !starts || !fins || !o || !o->jobs) {
        snprintf(err, errlen, "outlook: out of memory");
        errno = ENOMEM;
        goto error;
    }
    for (size_t i = 0; i < cells; i++)
        starts[i] = fins[i] = -1; /* no GPUs, no runs: all unknown */
    if (snap->njobs > 0 && w.total_gpus > 0 && runs_into(&w, starts, fins, err, errlen))
        goto error;
    o->njobs = snap->njobs;
    o->runs = w.total_gpus > 0 ? c->runs : 0;
    summarise(o, &w, starts, fins, c->runs);
    work_fini(&w);
    free(starts);
    free(fins);
    return o;
error : {
    int saved = errno;
    work_fini(&w);
    free(starts);
    free(fins);
    outlook_destroy(o);
    errno = saved;
}
    return NULL;
}

void outlook_destroy(struct outlook *o)
{
    if (!o)
        return;
    free(o->jobs);
    free(o);
}

const struct outlook_job *outlook_find(const struct outlook *o, int64_t id)
{
    for (size_t i = 0; o && i < o->njobs; i++)
        if (o->jobs[i].id == id)
            return &o->jobs[i];
    return NULL;
}

int outlook_finish(const struct outlook *o, int64_t id, double *p50, double *p90)
{
    const struct outlook_job *j = outlook_find(o, id);
    if (!j || j->finish_p50 < 0)
        return -1;
    if (p50)
        *p50 = j->finish_p50;
    if (p90)
        *p90 = j->finish_p90;
    return 0;
}
