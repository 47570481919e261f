/* engine: discrete-event simulation of the scheduling core (see simulate.h).
 *
 * The loop: find the next event (an arrival, a completion, the periodic round,
 * or, when the policy explores, a job finishing its slice at one size), move
 * every running job forward to it at its true speed, admit arrivals, retire
 * completions, and run a round if one is due. A round builds the snapshot,
 * calls sched_decide(), checks the decision against the cluster and applies it. */
#include "simulate_int.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int size_index(int gpus)
{
    switch (gpus) {
    case 1:
        return 0;
    case 2:
        return 1;
    case 4:
        return 2;
    case 8:
        return 3;
    default:
        return -1;
    }
}

/* ---- time -------------------------------------------------------------- */

static double finish_time_of(const struct sim *s, const struct sim_job *j)
{
    if (j->gpus == 0 || j->rate <= 0.0)
        return INFINITY;
    double from = j->busy_until > s->now ? j->busy_until : s->now;
    double left = j->spec->epochs - j->epochs_done;
    return from + (left > 0.0 ? left / j->rate : 0.0);
}

/* When the job finishes its exploration slice at its current size, if it is
 * exploring one of 1, 2, 4, 8. */
static double explore_time_of(const struct sim *s, const struct sim_job *j)
{
    int k = size_index(j->use);
    if (s->cfg->view != SIMULATE_VIEW_EXPLORED || j->gpus == 0 || k < 0)
        return INFINITY;
    double left = s->cfg->explore_slice_s - j->explored_s[k];
    if (left <= SIM_EPS)
        return INFINITY;
    double from = j->busy_until > s->now ? j->busy_until : s->now;
    return from + left;
}

/* When a running job with a batch model reaches its next epoch's gradient statistics (its
 * rate changes there, without a round). */
static double grad_time_of(const struct sim *s, const struct sim_job *j)
{
    if (j->gpus == 0 || j->rate <= 0.0 || !j->spec->grad)
        return INFINITY;
    double p = simulate__batch_next_progress(j);
    if (!isfinite(p) || p >= j->spec->epochs)
        return INFINITY;
    double from = j->busy_until > s->now ? j->busy_until : s->now;
    double t = from + (p - j->epochs_done) / j->rate;
    /* A fast job a hair short of p (below the clock's resolution at now) would come back at
     * now for ever: the next representable time carries it past. */
    return t > s->now ? t : nextafter(s->now, INFINITY);
}

static double next_event(const struct sim *s, double next_periodic)
{
    double t = INFINITY;
    if (s->next_arrival < s->njobs) /* jobs submitted before start_time arrive at it */
        t = fmax(s->jobs[s->order[s->next_arrival]].spec->submit_time, s->now);
    if (s->nactive > 0 && next_periodic < t)
        t = next_periodic;
    double deadline = simulate__next_deadline(s);
    if (deadline < t)
        t = deadline;
    for (size_t a = 0; a < s->nactive; a++) {
        const struct sim_job *j = &s->jobs[s->active[a]];
        double f = finish_time_of(s, j), e = explore_time_of(s, j), g = grad_time_of(s, j);
        if (f < t)
            t = f;
        if (g < t)
            t = g;
        if (e < t)
            t = e;
    }
    return t;
}

/* Deterministic relative noise of job id's step time at size index k. */
static double step_noise(const struct sim *s, int64_t id, int k)
{
    uint64_t st = s->cfg->seed ^ ((uint64_t)id * 0xd1b54a32d192ed03ULL) ^ (uint64_t)(k + 1);
    return s->cfg->noise * (2.0 * simulate_rng_uniform(&st) - 1.0);
}

static void record_exploration(struct sim *s, struct sim_job *j, double productive)
{
    int k = size_index(j->use);
    if (k < 0 || productive <= 0.0)
        return;
    j->explored_s[k] += productive;
    /* Land exactly on the slice so the policy sees the stage as done. */
    if (fabs(j->explored_s[k] - s->cfg->explore_slice_s) < 1e-6)
        j->explored_s[k] = s->cfg->explore_slice_s;
    if (!j->obs_have[k]) {
        double t = speed_step_time(&j->spec->speed, j->use);
        j->obs_step[k] = t * (1.0 + step_noise(s, j->spec->id, k));
        j->obs_have[k] = 1;
    }
}

/* Minibatches run between from and t (productive time); notes when the
 * 100th ends. */
static void count_steps(struct sim_job *j, double from, double t)
{
    double before = j->steps_done;

    j->steps_done += (t - from) * j->step_rate;
    if (j->partner >= 0)
        j->packed_run += t - from;
    if (!j->first100 && j->steps_done >= 100.0 && j->step_rate > 0.0) {
        j->first100 = 1;
        j->first100_time = from + (100.0 - before) / j->step_rate;
    }
}

/* Moves job j from s->now to t; returns 1 if it completed. */
static int advance_job(struct sim *s, struct sim_job *j, double t)
{
    if (j->gpus == 0)
        return 0;
    double fin = finish_time_of(s, j);
    double dt = t - s->now;
    double from = j->busy_until > s->now ? j->busy_until : s->now;
    j->run_time += dt;
    j->gpu_seconds += dt * j->gpus * (j->partner >= 0 ? 0.5 : 1.0);
    if (t > from) {
        simulate__checkpoints(s, j, from, t, j->epochs_done, j->steps_done);
        j->epochs_done += (t - from) * j->rate;
        record_exploration(s, j, t - from);
        if (s->learn)
            simulate__learn_record(s, j, t - from);
        count_steps(j, from, t);
    }
    if (t >= fin - SIM_EPS * (fin > 1.0 ? fin : 1.0)) {
        j->epochs_done = j->spec->epochs;
        j->done = 1;
        j->finish_time = t;
        if (!j->first100) {
            j->first100 = 1;
            j->first100_time = t;
        }
        return 1;
    }
    return 0;
}

/* Counts the GPUs idle from now to t while an elastic job wants more (simulate_result's
 * idle_wanted_frac). */
static void count_idle(struct sim *s, double t)
{
    double dt = t - s->now, held = 0;
    int wanting = 0, up = 0;
    if (!(dt > 0))
        return;
    for (size_t a = 0; a < s->nactive; a++) {
        const struct sim_job *j = &s->jobs[s->active[a]];
        held += j->gpus * (j->partner >= 0 ? 0.5 : 1.0);
        wanting |= j->spec->elastic && j->gpus < j->spec->max_gpus;
    }
    for (size_t n = 0; n < s->cfg->nnodes; n++)
        up += s->cfg->nodes[n].up ? s->cfg->nodes[n].ngpus : 0;
    if (wanting && up > held)
        s->idle_wanted_gpu_s += (up - held) * dt;
    s->idle_usable_gpu_s += s->idle_usable * dt;
}

/* Advances to t; returns how many jobs completed. */
static int advance(struct sim *s, double t)
{
    int completed = 0;
    count_idle(s, t);
    for (size_t a = 0; a < s->nactive; a++)
        completed += advance_job(s, &s->jobs[s->active[a]], t);
    s->now = t;
    return completed;
}

static int admit_arrivals(struct sim *s)
{
    int n = 0;
    while (s->next_arrival < s->njobs) {
        size_t i = s->order[s->next_arrival];
        if (s->jobs[i].spec->submit_time > s->now)
            break;
        s->active[s->nactive++] = i;
        s->next_arrival++;
        n++;
    }
    return n;
}

static void retire_completed(struct sim *s)
{
    size_t w = 0;
    for (size_t a = 0; a < s->nactive; a++) {
        struct sim_job *j = &s->jobs[s->active[a]];
        if (j->done) {
            if (j->partner >= 0)
                s->jobs[j->partner].partner = -1;
            j->partner = -1;
            j->gpus = 0;
            j->use = 0;
            j->rate = 0.0;
            s->finished_run_s[s->nfinished++] = j->run_time;
            s->ncompleted++;
            continue;
        }
        s->active[w++] = s->active[a];
    }
    s->nactive = w;
}

/* ---- a round ------------------------------------------------------------ */

/* One round; returns the GPUs in use after it, or -1. */
static int run_round(struct sim *s)
{
    for (size_t a = 0; a < s->nactive; a++) {
        simulate__fill_snapshot_job(s, &s->jobs[s->active[a]], &s->snap_jobs[a]);
        simulate__estimate_fill(s, &s->jobs[s->active[a]], &s->snap_jobs[a]);
    }
    if (s->learn)
        simulate__learn_round(s);
    struct sched_snapshot snap = {
        .now = s->now,
        .seed = s->cfg->seed,
        .nodes = s->seen_nodes,
        .nnodes = s->cfg->nnodes,
        .jobs = s->snap_jobs,
        .njobs = s->nactive,
        .resize_cost_s = s->cfg->resize_cost_s,
        .explore_stage_s = s->cfg->explore_slice_s,
        .min_resize_interval_s = s->cfg->min_resize_interval_s,
        .quantum_s = s->cfg->quantum_s,
        .gpu_mem_bytes = s->cfg->gpu_mem_bytes,
        .max_wait_s = s->cfg->max_wait_s,
        .users = s->cfg->users,
        .nusers = s->cfg->nusers,
        .finished_run_s = s->finished_run_s,
        .nfinished = s->nfinished,
        .min_runtime_s = s->cfg->min_runtime_s,
        .preempt_order = s->cfg->preempt_order,
    };
    struct sched_decision *d = sched_decide(s->cfg->policy, &snap);
    if (!d)
        return simulate__fail(s, errno ? errno : EPROTO, "sched_decide failed", -1);
    int rc = simulate__check_decision(s, d);
    int in_use = 0;
    for (size_t a = 0; rc == 0 && a < s->nactive; a++)
        rc = simulate__apply_assignment(s, &s->jobs[s->active[a]], &d->assign[a]);
    if (rc == 0) {
        simulate__apply_packs(s, d);
        simulate__update_use(s, 0);
        simulate__measure_idle(s);
    }
    /* GPUs of jobs that progress: a job given GPUs its plan cannot run on
     * makes none, and a run where nothing progresses is stuck. */
    for (size_t a = 0; rc == 0 && a < s->nactive; a++)
        if (s->jobs[s->active[a]].rate > 0)
            in_use += d->assign[a].gpus;
    if (rc == 0 && s->on_round)
        s->on_round(&snap, d, s->arg);
    sched_decision_destroy(d);
    s->rounds++;
    return rc ? -1 : in_use;
}

/* ---- the loop ----------------------------------------------------------- */

/* 1 when the run has an end of its own (simulate_config.until). */
static int has_until(const struct sim *s)
{
    return s->cfg->until > s->cfg->start_time;
}

static int sim_loop(struct sim *s)
{
    double next_periodic = INFINITY;
    int idle_rounds = 0;
    while (s->ncompleted < s->njobs) {
        double t = next_event(s, next_periodic);
        double deadline = simulate__next_deadline(s);
        if (has_until(s) && !(t <= s->cfg->until))
            return 0; /* what has not started or finished by then stays unknown */
        if (!isfinite(t))
            return simulate__fail(s, EPROTO, "no event left but jobs unfinished: policy stuck", -1);
        if (t < s->now)
            return simulate__fail(s, EPROTO, "time went backwards", -1);
        int events = advance(s, t);
        retire_completed(s);
        events += admit_arrivals(s);
        simulate__update_use(s, 1); /* rates follow the gradient statistics of the epoch reached */
        int due = events > 0 || t >= next_periodic - SIM_EPS || t >= deadline - SIM_EPS;
        for (size_t a = 0; !due && a < s->nactive; a++)
            due = explore_time_of(s, &s->jobs[s->active[a]]) <= t + SIM_EPS;
        if (!due || s->nactive == 0)
            continue;
        int in_use = run_round(s);
        if (in_use < 0)
            return -1;
        next_periodic = t + s->cfg->interval_s;
        idle_rounds = in_use == 0 && s->next_arrival >= s->njobs ? idle_rounds + 1 : 0;
        if (idle_rounds > SIM_MAX_IDLE_ROUNDS && has_until(s))
            return 0;
        if (idle_rounds > SIM_MAX_IDLE_ROUNDS)
            return simulate__fail(s, EPROTO, "policy gives no GPUs to waiting jobs: stuck", -1);
    }
    return 0;
}

struct simulate_result *simulate_run(const struct simulate_config *cfg,
                                     const struct simulate_job_spec *jobs, size_t njobs,
                                     simulate_round_f on_round, void *arg, char *err, size_t errlen)
{
    struct sim s = {.on_round = on_round, .arg = arg, .err = err, .errlen = errlen};
    struct simulate_result *r = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!cfg || (!jobs && njobs)) {
        simulate__fail(&s, EINVAL, "no configuration or jobs", -1);
        return NULL;
    }
    if (simulate__init(&s, cfg, jobs, njobs) || sim_loop(&s))
        goto error;
    r = calloc(1, sizeof(*r));
    if (!r || !(r->jobs = calloc(njobs ? njobs : 1, sizeof(*r->jobs)))) {
        simulate__fail(&s, ENOMEM, "out of memory", -1);
        goto error;
    }
    r->njobs = njobs;
    if (simulate__fill_totals(&s, r))
        goto error;
    simulate__free(&s);
    return r;
error : {
    int saved = errno;
    simulate_result_destroy(r);
    simulate__free(&s);
    errno = saved;
}
    return NULL;
}

void simulate_result_destroy(struct simulate_result *r)
{
    if (!r)
        return;
    free(r->jobs);
    free(r);
}
