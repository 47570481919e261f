#include "decide.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "jobtx.h"
#include "log.h"
#include "model.h"
#include "monotime.h"
#include "plan_int.h"
#include "sched.h"
#include "slice.h"
#include "snap.h"
#include "spec/jobspec.h"
#include "store/db.h"

void sched_plan_destroy(struct sched_plan *p)
{
    if (!p)
        return;
    sched_decision_destroy(p->d);
    sched_slice_destroy(p->slice);
    free(p->cnodes);
    free(p->cjobs);
    free(p->jobs);
    free(p->moved);
    free(p->busy);
    free(p);
}

/* The exploring stage length: the setting explore_stage_s (PUT /api/v1/scheduler, 1..86400
 * s), else the core's default (SCHED_EXPLORE_STAGE_S, the paper's 150 s). */
static double explore_stage_s(const struct sched_config *cfg)
{
    double s = cfg->explore_stage_s;
    return s > 0 && isfinite(s) ? s : SCHED_EXPLORE_STAGE_S;
}

/* The size of j's current exploring stage: the first of 1, 2, 4, 8 within its bounds and at
 * most limit GPUs that has run less than stage_s; 0 when every such stage is done. As in the
 * core, a job with no time measured at any stage counts its run time, stage after stage. */
int plan_explore_stage(const struct sched_job *j, int limit, double stage_s)
{
    int lo = j->min_gpus > 0 ? j->min_gpus : 1, hi = j->max_gpus > 0 ? j->max_gpus : INT_MAX;
    int tracked = 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++)
        tracked |= j->explored_s[k] > 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        double seen = tracked ? j->explored_s[k] : j->run_time - k * stage_s;
        if (w >= lo && w <= hi && w <= limit && seen < stage_s)
            return w;
    }
    return 0;
}

/* The epochs a job declared: epochs, else its model's "epochs" (or its class's), else its
 * total steps (declared or reported), the steps to go at what a step does: with a batch
 * model a step of its current batch M does gain(M) steps' worth at M0 (epochs counted at M0,
 * as its epochs done are: model.c), else the samples per step it has run so far (before it
 * ran: its batch at w GPUs); 0 when none. */
static double declared_epochs(const struct snap_job *sj, const struct sched_model *m, int w)
{
    if (sj->declared_epochs > 0)
        return sj->declared_epochs;
    if (m->target_epochs > 0)
        return m->target_epochs;
    if (sj->declared_steps <= 0 || !(m->dataset_size > 0))
        return 0;
    const struct batch_spec *b = &sj->batch;
    double per_step = (double)w * sj->batch_per_gpu / m->dataset_size;
    if (goodput_has_model(b))
        per_step = b->init_batch * goodput_gain(b, b->batch > 0 ? b->batch : b->init_batch) /
                   m->dataset_size;
    else if (m->last_step > 0 && m->epochs_done > 0)
        per_step = m->epochs_done / m->last_step;
    return m->epochs_done + fmax(0, (double)sj->declared_steps - m->last_step) * per_step;
}

/* What the core's estimate needs (sched_estimate_apply): the declared length, whether the
 * job may stop at convergence, the fit's epochs to go, and its user. */
static void evidence(struct sched_job *j, const struct snap_job *sj, const struct sched_model *m,
                     int w)
{
    j->user_id = sj->user_id;
    j->declared_epochs = declared_epochs(sj, m, w);
    j->stops_at_convergence = sj->stops_at_convergence;
    double fit = sched_model_fit_epochs(m, w);
    j->has_fit = fit >= 0;
    j->fit_remaining_epochs = fit >= 0 ? fit : 0;
}

static void core_job(struct sched_plan *p, size_t i, const struct sched_snap *s)
{
    struct plan_job *pj = &p->jobs[i];
    const struct snap_job *sj = pj->sj;
    const struct sched_model *m = pj->model;
    struct sched_job *j = &p->cjobs[i];
    *j = (struct sched_job){.id = sj->id,
                            .submit_time = sj->submit,
                            .priority = sj->priority,
                            .requested_gpus = sj->gpus,
                            .min_gpus = sj->min_gpus,
                            .max_gpus = sj->max_gpus,
                            .elastic = sj->elastic,
                            .cur_gpus = sj->cur_gpus,
                            .slots = sj->slots,
                            .model_source = m->source,
                            .speed = m->speed,
                            .conv = m->conv,
                            .epochs_done = m->epochs_done,
                            .plan = sj->plan,
                            .batch = sj->batch};
    if (sj->cur_gpus > 0) {
        j->last_change_time = sj->since_last;
        j->run_time = s->now - sj->since_first;
        j->cur_plan = sj->cur_plan;
    }
    int w = sj->cur_gpus > 0 ? sj->cur_gpus : 1;
    pj->model->has_estimate = 0;
    j->remaining_epochs = sched_model_remaining_epochs(m, w);
    evidence(j, sj, m, w);
    memcpy(j->explored_s, m->explored_s, sizeof(j->explored_s));
    /* A job fitted from its own steps explores every stage first (the paper's Exploratory):
     * until then the core sees no model, as the simulator shows it none. */
    if (j->elastic && !m->class_name[0] && m->source == SCHED_MODEL_FITTED &&
        plan_explore_stage(j, p->capacity, p->stage_s) > 0)
        j->model_source = SCHED_MODEL_NONE;
    sched_slice_fill(p->slice, sj, j);
    if (pj->fixed) {
        j->priority = FIXED_PRIORITY;
        j->elastic = 0;
        j->requested_gpus = j->min_gpus = j->max_gpus = sj->cur_gpus;
    }
}

/* The examples per GPU its speed model counts: batch_per_gpu, or with a batch model its
 * initial global batch over the GPUs it asked for. */
static int batch_per_gpu(const struct snap_job *sj)
{
    if (!goodput_has_model(&sj->batch))
        return sj->batch_per_gpu;
    long m = lround(sj->batch.init_batch / (sj->gpus > 0 ? sj->gpus : 1));
    return m < 1 ? 1 : m > INT_MAX ? INT_MAX : (int)m;
}

/* Which jobs the core sees: every job but a SUSPENDED one holding nothing, and a job in
 * transition that lost its allocation. */
static int wanted(const struct snap_job *sj)
{
    int moving = sj->state != JOB_PENDING && sj->state != JOB_RUNNING;
    return !(moving && sj->cur_gpus == 0);
}

/* Refits the models of the jobs with new metrics, all of them together (model.h); a job
 * whose metrics could not be read keeps its model this round. Returns 0, or -1 (ENOMEM). */
static int refresh_models(struct sched_plan *p, struct sched_models *ms, PGconn *c)
{
    long long t0 = monotime_us();
    struct sched_model **models = calloc(p->njobs + 1, sizeof(*models));
    long long *nmetrics = calloc(p->njobs + 1, sizeof(*nmetrics));
    if (!models || !nmetrics) {
        free(models);
        free(nmetrics);
        return -1;
    }
    for (size_t i = 0; i < p->njobs; i++) {
        models[i] = p->jobs[i].model;
        nmetrics[i] = p->jobs[i].sj->nmetrics;
    }
    p->refits = sched_models_refresh(ms, models, nmetrics, p->njobs, c);
    if (p->refits < 0)
        log_error("scheduler: cannot read the metrics of the jobs that reported: %s",
                  PQerrorMessage(c));
    free(models);
    free(nmetrics);
    p->refit_us = monotime_us() - t0;
    return 0;
}

static int build_jobs(struct sched_plan *p, struct sched_models *ms, long round_no, PGconn *c)
{
    const struct sched_snap *s = p->s;
    p->jobs = calloc(s->njobs + 1, sizeof(*p->jobs));
    p->cjobs = calloc(s->njobs + 1, sizeof(*p->cjobs));
    if (!p->jobs || !p->cjobs)
        return -1;
    p->stage_s = explore_stage_s(p->cfg);
    for (size_t n = 0; n < s->nnodes; n++)
        p->capacity += s->nodes[n].up ? s->nodes[n].ngpus : 0;
    for (size_t k = 0; k < s->njobs; k++) {
        const struct snap_job *sj = &s->jobs[k];
        if (!sched_slice_wanted(p->slice, sj, wanted(sj)))
            continue;
        struct plan_job *pj = &p->jobs[p->njobs++];
        pj->sj = sj;
        pj->model = sched_models_get(ms, sj->id, sj->model, batch_per_gpu(sj), round_no);
        if (!pj->model)
            return -1;
        pj->model->own_batch = goodput_has_model(&sj->batch);
        pj->model->batch = sj->batch;
    }
    if (refresh_models(p, ms, c) < 0)
        return -1;
    for (size_t i = 0; i < p->njobs; i++) {
        struct plan_job *pj = &p->jobs[i];
        pj->fixed = pj->sj->state != JOB_PENDING && pj->sj->state != JOB_RUNNING &&
                    !sched_slice_waiting(p->slice, pj->sj);
        pj->predicted_start = pj->predicted_finish = -1;
        core_job(p, i, s);
    }
    return 0;
}

/* The packing bound: memory of one GPU in bytes, the smallest of the up nodes whose GPU
 * memory is known (reported, or their model's; sched_snap.c); 0 when none is (no bound). */
static double gpu_mem_bound(const struct sched_snap *s)
{
    double gb = 0;
    for (size_t n = 0; n < s->nnodes; n++) {
        double m = s->nodes[n].gpu_mem_gb;
        if (s->nodes[n].up && m > 0 && isfinite(m) && (gb <= 0 || m < gb))
            gb = m;
    }
    return gb * 1e9;
}

/* Each job's remaining work from its evidence (the core's sched_estimate_apply), kept in its
 * model so that its answer and predicted finish say the same. A job without a speed model
 * yet keeps none: it explores first. */
static void estimate(struct sched_plan *p)
{
    for (size_t i = 0; i < p->njobs; i++) {
        struct sched_job *j = &p->cjobs[i];
        struct sched_model *m = p->jobs[i].model;
        if (j->model_source == SCHED_MODEL_NONE && m->source == SCHED_MODEL_NONE)
            continue;
        sched_estimate_apply(j, &p->snap);
        m->has_estimate = 1;
        m->estimate_epochs = j->remaining_epochs;
        m->estimate_source = j->remaining_source;
    }
}

static int build_snapshot(struct sched_plan *p, long round_no)
{
    const struct sched_snap *s = p->s;
    p->cnodes = calloc(s->nnodes + 1, sizeof(*p->cnodes));
    if (!p->cnodes)
        return -1;
    for (size_t n = 0; n < s->nnodes; n++) {
        const struct snap_node *sn = &s->nodes[n];
        p->cnodes[n] = (struct sched_node){.id = sn->id,
                                           .ngpus = sn->ngpus,
                                           .up = sn->up,
                                           .cpu_cores = sn->cpu_cores,
                                           .host_mem_gb = sn->host_mem_gb,
                                           .gpu_model = sn->gpu_model,
                                           .gpu_speed = sn->gpu_speed,
                                           .gpu_mem_gb = sn->gpu_mem_gb};
    }
    p->snap = (struct sched_snapshot){
        .now = s->now,
        .seed = (uint64_t)round_no,
        .nodes = p->cnodes,
        .nnodes = s->nnodes,
        .jobs = p->cjobs,
        .njobs = p->njobs,
        .resize_cost_s = s->resize_cost_s >= 0 ? s->resize_cost_s : p->cfg->resize_cost_s,
        .min_resize_interval_s = p->cfg->min_resize_interval_s,
        .explore_stage_s = p->stage_s,
        .quantum_s = p->cfg->quantum_s,
        .gpu_mem_bytes = gpu_mem_bound(s),
        .max_wait_s = p->cfg->max_wait_s > 0 ? p->cfg->max_wait_s : SCHED_MAX_WAIT_S,
        .users = s->users,
        .nusers = s->nusers,
        .finished_run_s = s->finished_run_s,
        .nfinished = s->nfinished,
    };
    estimate(p);
    return 0;
}

/* The GPUs an exploring job holds while it explores (its largest stage within its bounds
 * and the cluster: policy_exploratory's reservation), 0 when it does not explore. */
static int explore_hold(const struct sched_job *j, int capacity, double stage_s)
{
    if (!j->elastic || j->model_source != SCHED_MODEL_NONE ||
        plan_explore_stage(j, capacity, stage_s) == 0)
        return 0;
    int lo = j->min_gpus > 0 ? j->min_gpus : 1, hi = j->max_gpus > 0 ? j->max_gpus : INT_MAX;
    int hold = 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        if (w >= lo && w <= hi && w <= capacity)
            hold = w;
    }
    return hold;
}

/* Whether every exploring job's hold fits beside what the others hold or wait for (their
 * GPUs now, or their base when they wait). Exploration puts its jobs first and keeps GPUs
 * idle while it runs the smaller stages, so it is only affordable while it delays nobody: a
 * sweep of hundreds of elastic jobs would otherwise hold the whole cluster idle and starve
 * every rigid job behind it (make bench-scale: 96 of 128 GPUs idle, 100 rigid jobs waiting). */
static int exploring_fits(const struct sched_plan *p)
{
    long holds = 0, others = 0;
    for (size_t i = 0; i < p->njobs; i++) {
        const struct sched_job *j = &p->cjobs[i];
        int h = explore_hold(j, p->capacity, p->stage_s);
        if (h > 0)
            holds += h;
        else
            others += j->cur_gpus > 0 ? j->cur_gpus : j->min_gpus > 0 ? j->min_gpus : 1;
    }
    return holds > 0 && holds + others <= p->capacity;
}

/* The configured policy, or "exploratory" when a policy that reads speed models (precompute,
 * ringmaster) meets an elastic job without one and exploring delays nobody (exploring_fits):
 * such a job explores 1, 2, 4, 8 GPUs first, since its model is fitted from its own steps at
 * several sizes, and without it these policies would never grow it past its base. Otherwise
 * the configured policy runs it at its base, and it explores in a later round with room. */
static const struct sched_policy_ops *choose_policy(struct sched_plan *p)
{
    const char *name = p->cfg->policy;
    if ((strcmp(name, "precompute") == 0 || strcmp(name, "ringmaster") == 0) &&
        exploring_fits(p))
        name = "exploratory";
    snprintf(p->policy, sizeof(p->policy), "%s", name);
    const struct sched_policy_ops *ops = sched_policy_find(name);
    return ops ? ops : sched_policy_find("ringmaster");
}

/* Time-sliced jobs resume on the very GPUs they left when the decision allows it
 * (sched_slice_prefer_home). Returns 0, or -1 with errno ENOMEM. */
static int prefer_home(struct sched_plan *p)
{
    const struct snap_job **sjs = calloc(p->njobs + 1, sizeof(*sjs));
    if (!sjs)
        return -1;
    for (size_t i = 0; i < p->njobs; i++)
        sjs[i] = p->jobs[i].sj;
    sched_slice_prefer_home(p->slice, sjs, p->d->assign, p->njobs);
    free(sjs);
    return 0;
}

struct sched_plan *sched_plan_create(const struct sched_snap *s, struct sched_models *ms,
                                     const struct sched_config *cfg, long round_no, PGconn *c,
                                     char *err, size_t errlen)
{
    struct sched_plan *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->s = s;
    p->cfg = cfg;
    p->slice = sched_slice_read(c, s, err, errlen);
    if (!p->slice)
        goto error;
    if (build_jobs(p, ms, round_no, c) < 0 || build_snapshot(p, round_no) < 0) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    char why[256] = "";
    if (sched_validate(&p->snap, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "inconsistent snapshot: %s", why);
        goto error;
    }
    p->d = sched_decide(choose_policy(p), &p->snap);
    if (!p->d || prefer_home(p) < 0 || plan_apply_decision(p) < 0) {
        snprintf(err, errlen, "deciding: %s", strerror(errno));
        goto error;
    }
    plan_explain_waiting(p);
    return p;
error:
    sched_plan_destroy(p);
    return NULL;
}
