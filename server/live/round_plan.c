/* round_plan: a round's plan built from the database's snapshot: the core's snapshot of the
 * nodes and jobs (each job's evidence, refitted models, what its steps measured), the core's
 * decision under the configured policy, then what of it may change now (accept.c) and why
 * jobs wait (waiting.c). The rules of scheduling it applies are the core's (learn.h,
 * progress.h, bounds.h, sched.h); what stays here is how the database's jobs are shown to
 * the core (which jobs it sees: not those whose dependencies are not met, after.h; jobs in
 * transition fixed at what they hold, each job's evidence). */
#include "round_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "after.h"
#include "bounds.h"
#include "config.h"
#include "forecast_thread.h"
#include "learn_types.h"
#include "log.h"
#include "model.h"
#include "monotime.h"
#include "plan_int.h"
#include "progress.h"
#include "sched.h"
#include "slice.h"
#include "snap.h"
#include "spec/jobspec.h"

void live_plan_destroy(struct live_plan *p)
{
    if (!p)
        return;
    sched_decision_destroy(p->d);
    live_slice_destroy(p->slice);
    free(p->cnodes);
    free(p->cjobs);
    free(p->jobs);
    free(p->moved);
    free(p->busy);
    free(p->blocked);
    free(p);
}

/* What a job declared of its length and what it did, as the core's progress.h counts it: its
 * steps to go at the examples per GPU its steps measured (its speed model's, as declared until
 * it reports; train-mlp runs 32 a rank under a declared 128). */
static struct progress_declared declared_of(const struct snap_job *sj, const struct live_model *m)
{
    return (struct progress_declared){.epochs = sj->declared_epochs,
                                      .model_epochs = m->target_epochs,
                                      .steps = sj->declared_steps,
                                      .dataset_size = m->dataset_size,
                                      .epochs_done = m->epochs_done,
                                      .last_step = m->last_step,
                                      .batch_per_gpu = m->speed.batch_per_gpu > 0
                                                           ? m->speed.batch_per_gpu
                                                           : sj->batch_per_gpu,
                                      .batch = &sj->batch};
}

/* The epochs a job declared (the core's progress_declared_epochs) at w GPUs. */
static double declared_epochs(const struct snap_job *sj, const struct live_model *m, int w)
{
    struct progress_declared d = declared_of(sj, m);
    return progress_declared_epochs(&d, w);
}

/* What the core's estimate needs (sched_estimate_apply): the declared length, whether the
 * job may stop at convergence, the fit's epochs to go, and its user. */
static void evidence(struct sched_job *j, const struct snap_job *sj, const struct live_model *m,
                     int w)
{
    j->user_id = sj->user_id;
    j->declared_epochs = declared_epochs(sj, m, w);
    j->stops_at_convergence = sj->stops_at_convergence;
    double fit = live_model_fit_epochs(m, w);
    j->has_fit = fit >= 0;
    j->fit_remaining_epochs = fit >= 0 ? fit : 0;
}

/* Each step's GPU model and speed as this round's nodes have its GPU name (an unknown name
 * gets the node's index of it, or, when no node has it now, 1000 + the step's first index
 * of it), so that the core's per-type entries name the nodes' models. */
static void resolve_steps(struct live_model *m, const struct live_snap *s)
{
    for (size_t i = 0; i < m->nsteps; i++) {
        struct learn_obs *o = &m->steps[i];
        const char *name = m->step_gpu[i];
        int found = 0;
        for (size_t n = 0; n < s->nnodes && !found; n++)
            if (s->nodes[n].gpu_name && strcmp(s->nodes[n].gpu_name, name) == 0) {
                o->gpu_model = s->nodes[n].gpu_model;
                o->gpu_speed = s->nodes[n].gpu_speed;
                found = 1;
            }
        double speed, mem;
        int index;
        if (!found && live_snap_gpu_model(name, &index, &speed, &mem)) {
            o->gpu_model = index;
            o->gpu_speed = speed;
            found = 1;
        }
        for (size_t k = 0; !found && k <= i; k++)
            if (strcmp(m->step_gpu[k], name) == 0) {
                o->gpu_model = 1000 + (int)k;
                o->gpu_speed = 1.0;
                found = 1;
            }
    }
}

/* What the job's own steps measured, which the core's learning reads (learn.h, through
 * learn_fit_measured): the sizes, the largest, and of a job measured at one size its step
 * time there. The live fits assume one node (each step's nodes 1). A job with a declared
 * class keeps its profile: its measurements are not shown as learning. */
static void measured(struct sched_job *j, struct live_model *m, const struct live_snap *s)
{
    if (m->class_name[0])
        return;
    resolve_steps(m, s);
    learn_fit_measured(j, m->steps, m->nsteps);
}

static void core_job(struct live_plan *p, size_t i, const struct live_snap *s)
{
    struct live_plan_job *pj = &p->jobs[i];
    const struct snap_job *sj = pj->sj;
    const struct live_model *m = pj->model;
    struct sched_job *j = &p->cjobs[i];
    *j = (struct sched_job){.id = sj->id,
                            .submit_time = sj->runnable_since > sj->submit ? sj->runnable_since
                                                                           : sj->submit,
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
                            .batch = sj->batch,
                            .max_switches = sj->max_switches,
                            .max_switches_wait_s = sj->max_switches_wait_s,
                            .deadline = sj->deadline,
                            .last_checkpoint_time = sj->checkpoint_at,
                            .last_checkpoint_step = sj->checkpoint_step,
                            .forecast_finish = sj->forecast_finish};
    j->speed.gpus_per_island = p->island_size; /* a packed job larger than one spans PCIe */
    if (sj->cur_gpus > 0) {
        j->last_change_time = sj->since_last;
        j->run_time = s->now - sj->since_first;
        j->cur_plan = sj->cur_plan;
    }
    /* All the time it has held GPUs, over its resizes, moves and preemptions (sql/048): the
     * allocation rows' age above is only the current allocation's. */
    if (sj->held_s >= 0 && sj->held_s > j->run_time)
        j->run_time = sj->held_s;
    int w = sj->cur_gpus > 0 ? sj->cur_gpus : 1;
    pj->model->has_estimate = 0;
    evidence(j, sj, m, w);
    memcpy(j->explored_s, m->explored_s, sizeof(j->explored_s));
    measured(j, pj->model, s);
    live_slice_fill(p->slice, sj, j);
    if (pj->fixed) {
        j->priority = FIXED_PRIORITY;
        j->elastic = 0;
        j->requested_gpus = j->min_gpus = j->max_gpus = sj->cur_gpus;
    }
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
static int refresh_models(struct live_plan *p, struct live_models *ms, PGconn *c)
{
    long long t0 = monotime_us();
    struct live_model **models = calloc(p->njobs + 1, sizeof(*models));
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
    p->refits = live_models_refresh(ms, models, nmetrics, p->njobs, c);
    if (p->refits < 0)
        log_error("scheduler: cannot read the metrics of the jobs that reported: %s",
                  PQerrorMessage(c));
    /* What it has done is what its page shows: its latest step, not the highest it reached
     * before a restart took it back to a checkpoint (or to step 0). */
    for (size_t i = 0; i < p->njobs; i++)
        live_model_progress(models[i], p->jobs[i].sj->last_step, p->jobs[i].sj->redo_steps);
    free(models);
    free(nmetrics);
    p->refit_us = monotime_us() - t0;
    return 0;
}

/* The GPUs of the largest NVLink island of an up node (0: no node knows its islands). */
static int island_size(const struct live_snap *s)
{
    int best = 0;
    for (size_t n = 0; n < s->nnodes; n++) {
        int count[SCHED_MAX_GPUS_PER_NODE + 1] = {0};
        const struct snap_node *sn = &s->nodes[n];
        for (int g = 0; sn->up && g < sn->ngpus && g < SCHED_MAX_GPUS_PER_NODE; g++)
            if (sn->island[g] && ++count[sn->island[g]] > best)
                best = count[sn->island[g]];
    }
    return best;
}

static int build_jobs(struct live_plan *p, struct live_models *ms, long round_no, PGconn *c)
{
    const struct live_snap *s = p->s;
    p->jobs = calloc(s->njobs + 1, sizeof(*p->jobs));
    p->cjobs = calloc(s->njobs + 1, sizeof(*p->cjobs));
    p->blocked = calloc(s->njobs + 1, sizeof(*p->blocked));
    if (!p->jobs || !p->cjobs || !p->blocked)
        return -1;
    p->stage_s = bounds_explore_stage_s(p->cfg->explore_stage_s);
    for (size_t n = 0; n < s->nnodes; n++)
        p->capacity += s->nodes[n].up ? s->nodes[n].ngpus : 0;
    p->island_size = island_size(s);
    for (size_t k = 0; k < s->njobs; k++) {
        const struct snap_job *sj = &s->jobs[k];
        if (live_after_blocked(sj)) {
            p->blocked[p->nblocked++] = sj;
            continue;
        }
        if (!live_slice_wanted(p->slice, sj, wanted(sj)))
            continue;
        struct live_plan_job *pj = &p->jobs[p->njobs++];
        pj->sj = sj;
        int per_gpu = progress_batch_per_gpu(&sj->batch, sj->batch_per_gpu, sj->gpus);
        pj->model = live_models_get(ms, sj->id, sj->model, per_gpu, round_no);
        if (!pj->model)
            return -1;
        pj->model->own_batch = goodput_has_model(&sj->batch);
        pj->model->batch = sj->batch;
    }
    if (refresh_models(p, ms, c) < 0)
        return -1;
    for (size_t i = 0; i < p->njobs; i++) {
        struct live_plan_job *pj = &p->jobs[i];
        pj->fixed = pj->sj->state != JOB_PENDING && pj->sj->state != JOB_RUNNING &&
                    !live_slice_waiting(p->slice, pj->sj);
        pj->predicted_start = pj->predicted_finish = -1;
        core_job(p, i, s);
    }
    return 0;
}

/* Keeps in m the speed model the core learned for j from one size (learn_apply), which the
 * policies plan with, so that the API shows it; marks m changed when it is new or moved. */
static void learned_into(struct live_model *m, const struct sched_job *j)
{
    int learned = m->source == SCHED_MODEL_NONE && j->model_source == SCHED_MODEL_FITTED &&
                  j->speed.fitted;
    if (learned != m->learned ||
        (learned && memcmp(m->learned_speed.theta, j->speed.theta, sizeof(j->speed.theta))))
        m->changed = 1;
    m->learned = learned;
    if (learned)
        m->learned_speed = j->speed;
}

/* The GPU model a job's batch.max_local is taken as known on: the one its steps ran longest
 * on (-1: none). */
static int max_local_model(const struct live_model *m)
{
    int best = -1;
    double best_s = -1;
    for (size_t i = 0; i < m->nsteps; i++) {
        double sec = 0;
        for (size_t k = 0; k < m->nsteps; k++)
            sec += m->steps[k].gpu_model == m->steps[i].gpu_model ? m->steps[k].seconds : 0;
        if (sec > best_s) {
            best = m->steps[i].gpu_model;
            best_s = sec;
        }
    }
    return best;
}

/* The name of GPU model g: a node's reported GPU name, else that of one of the job's steps. */
static void type_name(char *out, size_t len, int g, const struct live_model *m,
                      const struct live_snap *s)
{
    out[0] = '\0';
    for (size_t n = 0; n < s->nnodes; n++)
        if (s->nodes[n].gpu_model == g && s->nodes[n].gpu_name) {
            snprintf(out, len, "%s", s->nodes[n].gpu_name);
            return;
        }
    for (size_t i = 0; i < m->nsteps; i++)
        if (m->steps[i].gpu_model == g) {
            snprintf(out, len, "%s", m->step_gpu[i]);
            return;
        }
}

/* The round's learning (the core's learn_round, learn_types.h): each job measured at one
 * size gets its speed model from the prior the others teach, and each job that measured
 * steps (not one with a declared class: it keeps its profile) its model on each GPU model
 * it ran on and an estimate on the cluster's others, kept in its live_model (types) and
 * handed to the core as its type_speeds. Returns 0, or -1 (ENOMEM). */
static int learn(struct live_plan *p)
{
    struct learn_job_steps *in = calloc(p->njobs + 1, sizeof(*in));
    if (!in)
        return -1;
    for (size_t i = 0; i < p->njobs; i++) {
        struct live_model *m = p->jobs[i].model;
        if (m->class_name[0] || m->nsteps == 0)
            continue;
        in[i] = (struct learn_job_steps){.obs = m->steps,
                                         .nobs = m->nsteps,
                                         .types = m->types,
                                         .cap = LIVE_MAX_GPU_TYPES,
                                         .max_local_model = max_local_model(m),
                                         .cache = &m->fit_cache,
                                         .version = m->steps_version,
                                         .fits = m->fits,
                                         .nfits = m->nfits};
    }
    learn_round(p->cjobs, p->njobs, p->cnodes, p->s->nnodes, in);
    for (size_t i = 0; i < p->njobs; i++) {
        struct live_model *m = p->jobs[i].model;
        const struct sched_job *j = &p->cjobs[i];
        size_t n = in[i].types ? j->ntype_speeds : 0;
        m->ntypes = n;
        for (size_t k = 0; k < n; k++)
            type_name(m->type_names[k], sizeof(m->type_names[k]), m->types[k].gpu_model, m,
                      p->s);
        live_model_note_types(m);
    }
    free(in);
    return 0;
}

/* Each job measured at one size gets its speed model from the prior the others teach, and
 * its models per GPU model (learn()); then each job's remaining work from its evidence (the
 * core's sched_estimate_apply), and the steps it is (progress_remaining_steps), kept in its
 * model so that its answer, its predicted finish and what the API shows say the same. A job
 * without a speed model yet has an estimate too (its declared length, fit, prior or elapsed
 * time need no speed): only its seconds wait for its speed. Returns 0, or -1 (ENOMEM). */
static int estimate(struct live_plan *p)
{
    if (learn(p) < 0)
        return -1;
    for (size_t i = 0; i < p->njobs; i++) {
        struct sched_job *j = &p->cjobs[i];
        struct live_plan_job *pj = &p->jobs[i];
        struct live_model *m = pj->model;
        learned_into(m, j);
        sched_estimate_apply(j, &p->snap);
        m->has_estimate = 1;
        m->estimate_epochs = j->remaining_epochs;
        m->estimate_source = j->remaining_source;
        struct progress_declared d = declared_of(pj->sj, m);
        int w = pj->sj->cur_gpus > 0 ? pj->sj->cur_gpus : 1;
        int declared = j->remaining_source == SCHED_EST_DECLARED;
        m->estimate_steps = progress_remaining_steps(&d, j->remaining_epochs, declared, w);
    }
    return 0;
}

static int build_snapshot(struct live_plan *p, long round_no)
{
    const struct live_snap *s = p->s;
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
                                           .gpu_mem_gb = sn->gpu_mem_gb,
                                           .drained = sn->drained,
                                           .evacuate = sn->evacuate,
                                           .failed = sn->failed,
                                           .switch_id = sn->switch_id,
                                           .rack_id = sn->rack_id};
        memcpy(p->cnodes[n].island, sn->island, sizeof(sn->island));
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
        .gpu_mem_bytes = bounds_gpu_mem_bytes(p->cnodes, s->nnodes),
        .max_wait_s = bounds_max_wait_s(p->cfg->max_wait_s),
        .min_runtime_s = p->cfg->min_runtime_s,
        .users = s->users,
        .nusers = s->nusers,
        .finished_run_s = s->finished_run_s,
        .nfinished = s->nfinished,
    };
    return estimate(p);
}

/* The configured policy, which runs every round (a job is learned under it, learn.h), its
 * name kept in p->policy; ringmaster's ops when no policy has that name. */
static const struct sched_policy_ops *choose_policy(struct live_plan *p)
{
    const struct sched_policy_ops *ops = sched_policy_find(p->cfg->policy);
    snprintf(p->policy, sizeof(p->policy), "%s", p->cfg->policy);
    p->ops = ops ? ops : sched_policy_find("ringmaster");
    return p->ops;
}

void live_plan_offer_forecast(const struct live_plan *p, struct forecast_thread *fc,
                              double interval_s)
{
    if (!forecast_thread_wants(fc))
        return;
    struct sched_job *jobs = calloc(p->njobs + 1, sizeof(*jobs));
    if (!jobs)
        return;
    for (size_t i = 0; i < p->njobs; i++) {
        const struct live_plan_job *pj = &p->jobs[i];
        jobs[i] = p->cjobs[i];
        jobs[i].cur_gpus = pj->gpus;
        jobs[i].slots = pj->gpus > 0 ? pj->slots : NULL;
        if (pj->change != CH_KEEP && pj->change != CH_BATCH)
            jobs[i].last_change_time = p->s->now;
    }
    struct sched_snapshot after = p->snap;
    after.jobs = jobs;
    forecast_thread_offer(fc, &after, p->ops, interval_s);
    free(jobs);
}

/* Time-sliced jobs resume on the very GPUs they left when the decision allows it
 * (live_slice_prefer_home). Returns 0, or -1 with errno ENOMEM. */
static int prefer_home(struct live_plan *p)
{
    const struct snap_job **sjs = calloc(p->njobs + 1, sizeof(*sjs));
    if (!sjs)
        return -1;
    for (size_t i = 0; i < p->njobs; i++)
        sjs[i] = p->jobs[i].sj;
    live_slice_prefer_home(p->slice, sjs, p->d->assign, p->njobs);
    free(sjs);
    return 0;
}

struct live_plan *live_plan_create(const struct live_snap *s, struct live_models *ms,
                                     const struct settings *cfg, long round_no, PGconn *c,
                                     char *err, size_t errlen)
{
    struct live_plan *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->s = s;
    p->cfg = cfg;
    p->slice = live_slice_read(c, s, err, errlen);
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
    if (!p->d || prefer_home(p) < 0 || live_plan_apply_decision(p) < 0) {
        snprintf(err, errlen, "deciding: %s", strerror(errno));
        goto error;
    }
    live_plan_explain_waiting(p);
    return p;
error:
    live_plan_destroy(p);
    return NULL;
}
