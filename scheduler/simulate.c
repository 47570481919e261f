/* simulate: discrete-event simulation of the scheduling core (see simulate.h).
 *
 * The loop: find the next event (an arrival, a completion, the periodic round,
 * or, when the policy explores, a job finishing its slice at one size), move
 * every running job forward to it at its true speed, admit arrivals, retire
 * completions, and run a round if one is due. A round builds the snapshot,
 * calls sched_decide(), checks the decision against the cluster and applies it. */
#include "simulate.h"
#include "simulate_int.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---------------------------------------------------- */

uint64_t simulate_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double simulate_rng_uniform(uint64_t *state)
{
    return (double)(simulate_rng_next(state) >> 11) * 0x1.0p-53;
}

double simulate_rng_exponential(uint64_t *state, double mean)
{
    return -mean * log(1.0 - simulate_rng_uniform(state));
}

void simulate_config_init(struct simulate_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->view = SIMULATE_VIEW_PROFILE;
    cfg->interval_s = 60.0;
    cfg->resize_cost_s = 10.0;
    cfg->min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S;
    cfg->explore_slice_s = SCHED_EXPLORE_STAGE_S;
    cfg->noise = 0.02;
    cfg->seed = 1;
    cfg->quantum_s = SCHED_QUANTUM_S;
    cfg->suspend_cost_s = 1.0;
    cfg->pack_kappa = 0.25;
    cfg->loss_noise = 0.03;
}

double simulate_pack_factor(double util_a, double util_b, double kappa)
{
    double u = (util_a > 0.0 ? util_a : 1.0) + (util_b > 0.0 ? util_b : 1.0);

    return 1.0 / (fmax(1.0, u) * (1.0 + kappa * u));
}

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

static int slot_cmp(const void *a, const void *b)
{
    const struct sched_slot *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* ---- setup ------------------------------------------------------------- */

static int check_spec(struct sim *s, const struct simulate_job_spec *j)
{
    if (!(j->submit_time >= 0.0) || !isfinite(j->submit_time))
        return simulate__fail(s, EINVAL, "submit_time must be finite and >= 0", j->id);
    if (!(j->epochs > 0.0) || !isfinite(j->epochs))
        return simulate__fail(s, EINVAL, "epochs must be finite and > 0", j->id);
    if (j->requested_gpus < 1 || j->min_gpus < 1 || j->min_gpus > j->max_gpus)
        return simulate__fail(s, EINVAL, "need 1 <= min_gpus <= max_gpus and requested_gpus >= 1", j->id);
    double r = speed_epochs_per_second(&j->speed, 1);
    if (!(r > 0.0) || !isfinite(r))
        return simulate__fail(s, EINVAL, "speed model gives no progress on 1 GPU", j->id);
    return 0;
}

static int check_config(struct sim *s, const struct simulate_config *c)
{
    if (!c->policy || !c->nodes || c->nnodes == 0)
        return simulate__fail(s, EINVAL, "need a policy and at least one node", -1);
    if (!(c->interval_s > 0.0) || !(c->resize_cost_s >= 0.0) || !(c->explore_slice_s > 0.0))
        return simulate__fail(s, EINVAL, "interval_s > 0, resize_cost_s >= 0, explore_slice_s > 0", -1);
    if (!(c->min_resize_interval_s >= 0.0) || !isfinite(c->min_resize_interval_s))
        return simulate__fail(s, EINVAL, "min_resize_interval_s must be finite and >= 0", -1);
    if (!(c->suspend_cost_s >= 0.0) || !(c->pack_kappa >= 0.0) || !(c->gpu_mem_bytes >= 0.0) ||
        !isfinite(c->quantum_s))
        return simulate__fail(s, EINVAL, "suspend_cost_s, pack_kappa, gpu_mem_bytes >= 0", -1);
    if (!(c->noise >= 0.0 && c->noise <= 0.5) || !(c->loss_noise >= 0.0 && c->loss_noise <= 0.5))
        return simulate__fail(s, EINVAL, "noise and loss_noise must be within 0..0.5", -1);
    if (!(c->estimate_error >= 0.0) || !isfinite(c->estimate_error) || isnan(c->max_wait_s))
        return simulate__fail(s, EINVAL, "estimate_error must be finite and >= 0", -1);
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ngpus < 0 || c->nodes[i].ngpus > SCHED_MAX_GPUS_PER_NODE)
            return simulate__fail(s, EINVAL, "node GPU count out of range", (long long)i);
    return 0;
}

struct arrival {
    double t;
    size_t i;
};

static int arrival_cmp(const void *a, const void *b)
{
    const struct arrival *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Fills s->order with the job indices by submit time (ties: spec order). */
static int sort_arrivals(struct sim *s, const struct simulate_job_spec *specs, size_t n)
{
    struct arrival *tmp = malloc((n ? n : 1) * sizeof(*tmp));
    if (!tmp)
        return simulate__fail(s, ENOMEM, "out of memory", -1);
    for (size_t i = 0; i < n; i++)
        tmp[i] = (struct arrival){specs[i].submit_time, i};
    qsort(tmp, n, sizeof(*tmp), arrival_cmp);
    for (size_t i = 0; i < n; i++)
        s->order[i] = tmp[i].i;
    free(tmp);
    return 0;
}

static void sim_free(struct sim *s)
{
    if (s->jobs)
        for (size_t i = 0; i < s->njobs; i++)
            free(s->jobs[i].slots);
    free(s->jobs);
    free(s->order);
    free(s->active);
    free(s->node_off);
    free(s->used);
    free(s->cores);
    free(s->mem);
    free(s->snap_jobs);
    free(s->finished_run_s);
}

static int sim_init(struct sim *s, const struct simulate_config *cfg,
                    const struct simulate_job_spec *specs, size_t n)
{
    if (check_config(s, cfg))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (check_spec(s, &specs[i]))
            return -1;
    s->cfg = cfg;
    s->njobs = n;
    s->jobs = calloc(n ? n : 1, sizeof(*s->jobs));
    s->order = calloc(n ? n : 1, sizeof(*s->order));
    s->active = calloc(n ? n : 1, sizeof(*s->active));
    s->snap_jobs = calloc(n ? n : 1, sizeof(*s->snap_jobs));
    s->finished_run_s = calloc(n ? n : 1, sizeof(*s->finished_run_s));
    s->node_off = calloc(cfg->nnodes + 1, sizeof(*s->node_off));
    s->cores = calloc(cfg->nnodes + 1, sizeof(*s->cores));
    s->mem = calloc(cfg->nnodes + 1, sizeof(*s->mem));
    if (!s->jobs || !s->order || !s->active || !s->snap_jobs || !s->node_off || !s->cores ||
        !s->mem || !s->finished_run_s)
        return simulate__fail(s, ENOMEM, "out of memory", -1);
    for (size_t i = 0; i < cfg->nnodes; i++)
        s->node_off[i + 1] = s->node_off[i] + cfg->nodes[i].ngpus;
    s->total_gpus = s->node_off[cfg->nnodes];
    s->used = calloc((size_t)s->total_gpus + 1, 1);
    if (!s->used)
        return simulate__fail(s, ENOMEM, "out of memory", -1);
    for (size_t i = 0; i < n; i++) {
        s->jobs[i].spec = &specs[i];
        s->jobs[i].seen = specs[i].speed;
        s->jobs[i].partner = -1;
        if (goodput_has_model(&specs[i].batch))
            s->jobs[i].batch = specs[i].batch.batch > 0 ? specs[i].batch.batch
                                                        : specs[i].batch.init_batch;
        simulate__estimate_init(s, &s->jobs[i]);
    }
    return sort_arrivals(s, specs, n);
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
    return from + (p - j->epochs_done) / j->rate;
}

static double next_event(const struct sim *s, double next_periodic)
{
    double t = INFINITY;
    if (s->next_arrival < s->njobs)
        t = s->jobs[s->order[s->next_arrival]].spec->submit_time;
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
        j->epochs_done += (t - from) * j->rate;
        record_exploration(s, j, t - from);
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

/* Advances to t; returns how many jobs completed. */
static int advance(struct sim *s, double t)
{
    int completed = 0;
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

static void refresh_seen_model(struct sim_job *j)
{
    int w[4];
    double step[4];
    size_t n = 0;
    for (int k = 0; k < 4; k++)
        if (j->obs_have[k]) {
            w[n] = 1 << k;
            step[n++] = j->obs_step[k];
        }
    if ((int)n == j->obs_fitted)
        return;
    struct speed_model m;
    memset(&m, 0, sizeof(m));
    m.batch_per_gpu = j->spec->speed.batch_per_gpu;
    m.dataset_size = j->spec->speed.dataset_size;
    if (speed_fit(&m, w, step, n) == 0) {
        j->seen = m;
        j->obs_fitted = (int)n;
    }
}

/* Whether the job has run its slice at every size of 1, 2, 4, 8 it may use. */
static int explore_done(const struct sim *s, const struct sim_job *j)
{
    for (int k = 0; k < 4; k++) {
        int w = 1 << k;
        if (w < j->spec->min_gpus || w > j->spec->max_gpus || w > s->total_gpus)
            continue;
        if (j->explored_s[k] < s->cfg->explore_slice_s)
            return 0;
    }
    return 1;
}

/* Minibatches per second of job j alone on its GPUs (or on its request). */
static double alone_rate(const struct sim_job *j)
{
    if (j->alone_rate > 0.0)
        return j->alone_rate; /* measured: on the GPU model it ran on */
    int w = j->use > 0 ? j->use : j->gpus > 0 ? j->gpus : j->spec->requested_gpus;
    double t = speed_step_time(&j->spec->speed, w);

    return t > 0.0 && isfinite(t) ? 1.0 / t : 0.0;
}

/* What Gandiva's introspection sees: the rates are measured (the true ones). */
static void fill_snapshot_gandiva(const struct sim *s, const struct sim_job *j,
                                  struct sched_job *o)
{
    o->suspended = j->suspended;
    o->gpu_util = j->spec->gpu_util;
    o->gpu_mem_bytes = j->spec->gpu_mem_bytes;
    o->pack_reverted = j->pack_reverted;
    o->rate_alone = alone_rate(j);
    o->has_home = j->suspended && j->susp_node >= 0;
    o->home_node = o->has_home ? j->susp_node : 0;
    if (j->partner >= 0) {
        o->packed = 1;
        o->packed_with = s->jobs[j->partner].spec->id;
        o->rate_packed = j->packed_run > 0.0 ? j->step_rate : 0.0;
    }
}

static void fill_snapshot_job(struct sim *s, struct sim_job *j, struct sched_job *o)
{
    const struct simulate_job_spec *sp = j->spec;
    memset(o, 0, sizeof(*o));
    o->id = sp->id;
    o->submit_time = sp->submit_time;
    o->priority = sp->priority;
    o->requested_gpus = sp->requested_gpus;
    o->min_gpus = sp->min_gpus;
    o->max_gpus = sp->max_gpus;
    o->elastic = sp->elastic;
    o->user_id = sp->user;
    o->cur_gpus = j->gpus;
    o->slots = j->slots;
    o->last_change_time = j->last_change;
    o->run_time = j->run_time;
    o->epochs_done = j->epochs_done;
    o->remaining_epochs = sp->epochs - j->epochs_done;
    if (o->remaining_epochs < 0.0)
        o->remaining_epochs = 0.0;
    memcpy(o->explored_s, j->explored_s, sizeof(o->explored_s));
    o->plan = sp->plan;
    o->cur_plan = j->plan;
    if (goodput_has_model(&sp->batch))
        o->batch = simulate__batch_now(j);
    fill_snapshot_gandiva(s, j, o);
    if (s->cfg->view == SIMULATE_VIEW_PROFILE) {
        o->model_source = SCHED_MODEL_PROFILE;
        o->speed = sp->speed;
        return;
    }
    refresh_seen_model(j);
    int known = j->obs_fitted > 0 && explore_done(s, j);
    o->model_source = known ? SCHED_MODEL_FITTED : SCHED_MODEL_NONE;
    o->speed = known ? j->seen : sp->speed;
    if (!known)
        o->speed.fitted = 0;
}

static int same_slots(const struct sim_job *j, const struct sched_slot *sorted, int n)
{
    if (j->gpus != n)
        return 0;
    for (int g = 0; g < n; g++)
        if (slot_cmp(&j->slots[g], &sorted[g]) != 0)
            return 0;
    return 1;
}

/* The delay and counters of a change after the first start: a suspension
 * (time-slicing) frees the GPUs; a resume on the node it left pays
 * suspend_cost_s, elsewhere a migration through its checkpoint (resize_cost_s);
 * any other change is a resize (resize_cost_s). */
static void charge_change(struct sim *s, struct sim_job *j, const struct sched_assignment *as,
                          const struct sched_slot *ns)
{
    if (as->suspended) {
        j->suspended = 1;
        j->susp_node = j->gpus > 0 ? j->slots[0].node : -1;
        j->suspends++;
        s->suspends++;
        return;
    }
    if (as->resumed && as->gpus > 0) {
        int home = ns[0].node == j->susp_node;
        j->busy_until = s->now + (home ? s->cfg->suspend_cost_s : s->cfg->resize_cost_s);
        j->migrations += !home;
        s->migrations += !home;
        return;
    }
    j->resizes++;
    s->resizes++;
    if (as->gpus > 0)
        j->busy_until = s->now + s->cfg->resize_cost_s;
    j->migrations += as->migrated;
    s->migrations += as->migrated;
}

static int apply_assignment(struct sim *s, struct sim_job *j, const struct sched_assignment *as)
{
    struct sched_slot *ns = NULL;
    if (as->gpus > 0) {
        ns = malloc((size_t)as->gpus * sizeof(*ns));
        if (!ns)
            return simulate__fail(s, ENOMEM, "out of memory", -1);
        memcpy(ns, as->slots, (size_t)as->gpus * sizeof(*ns));
        qsort(ns, (size_t)as->gpus, sizeof(*ns), slot_cmp);
    }
    int replan = as->gpus > 0 && plan_has_info(&j->spec->plan) && !plan_same(&as->plan, &j->plan);
    if (as->gpus > 0)
        j->plan = as->plan;
    if (same_slots(j, ns, as->gpus) && !replan) {
        free(ns);
        return 0;
    }
    if (j->gpus == 0 && as->gpus > 0)
        j->max_wait = fmax(j->max_wait, s->now - j->wait_since);
    else if (j->gpus > 0 && as->gpus == 0)
        j->wait_since = s->now;
    if (j->started) {
        charge_change(s, j, as, ns);
    } else if (as->gpus > 0) {
        j->started = 1;
        j->start_time = s->now;
    }
    if (as->gpus > 0)
        j->suspended = 0;
    if (as->gpus > 0 && as->batch > 0 && goodput_has_model(&j->spec->batch))
        j->batch = as->batch; /* a new batch comes with the restart */
    free(j->slots);
    j->slots = ns;
    j->gpus = as->gpus;
    j->last_change = s->now;
    j->use = 0;
    j->rate = 0.0;
    return 0;
}

/* Links packed pairs after a round: PACK and KEEP join the two jobs, REVERT
 * parts them for good, anything else parts them. */
static void apply_packs(struct sim *s, const struct sched_decision *d)
{
    for (size_t a = 0; a < d->njobs; a++) {
        struct sim_job *j = &s->jobs[s->active[a]];
        const struct sched_assignment *as = &d->assign[a];
        long was = j->partner;
        j->partner = -1;
        if (as->pack == SCHED_PACK_REVERT) {
            j->pack_reverted = 1;
            s->pack_reverts += d->assign[a].job_id < as->packed_with;
        }
        if (!simulate__is_shared(as))
            continue;
        for (size_t b = 0; b < d->njobs; b++)
            if (d->assign[b].job_id == as->packed_with)
                j->partner = (long)s->active[b];
        if (as->pack == SCHED_PACK_PACK) {
            j->packs++;
            s->packs += as->job_id < as->packed_with;
        }
        if (j->partner != was)
            j->packed_run = 0.0;
    }
}

/* The GPUs job j runs on among the j->gpus it holds. Outside exploring, all of
 * them. An exploring job (VIEW_EXPLORED, not done) runs its first unfinished
 * stage of 1, 2, 4, 8 that fits in what it holds (the policy reserves 8 for
 * the whole exploration and the job uses 1, 2, 4, then 8 of them); if none
 * fits, all it holds. */
static int working_gpus(const struct sim *s, const struct sim_job *j)
{
    if (s->cfg->view != SIMULATE_VIEW_EXPLORED || j->gpus == 0)
        return j->gpus;
    for (int k = 0; k < 4; k++) {
        int w = 1 << k;
        if (w < j->spec->min_gpus || w > j->spec->max_gpus || w > s->total_gpus)
            continue;
        if (j->explored_s[k] < s->cfg->explore_slice_s)
            return w <= j->gpus ? w : j->gpus;
    }
    return j->gpus;
}

/* The nodes job j's GPUs are on (its slots are sorted by node). */
static int nodes_held(const struct sim_job *j)
{
    int n = 0;
    for (int g = 0; g < j->gpus; g++)
        n += g == 0 || j->slots[g].node != j->slots[g - 1].node;
    return n > 0 ? n : 1;
}

/* Epochs per second of job j on u of its GPUs: its plan on its GPUs' model
 * when it has plan info or the model is not the reference, else (exactly as
 * before plans existed) speed_epochs_per_second(). */
static double true_rate(const struct sim *s, const struct sim_job *j, int u)
{
    const struct simulate_job_spec *sp = j->spec;
    const struct sched_node *nd = &s->cfg->nodes[j->slots[0].node];
    int hetero = nd->gpu_speed > 0 && nd->gpu_speed != 1.0;
    if (goodput_has_model(&sp->batch) && !plan_has_info(&sp->plan))
        return simulate__batch_rate(j, u, nodes_held(j), NULL) * (hetero ? nd->gpu_speed : 1.0);
    if (!plan_has_info(&sp->plan) && !hetero)
        return speed_epochs_per_second(&sp->speed, u);
    int nodes = speed_packed_nodes(&sp->speed, u);
    struct plan_choice dp = {0};
    const struct plan_choice *c = plan_has_info(&sp->plan) ? &j->plan : &dp;
    double r = plan_epochs_per_second(&sp->speed, &sp->plan, c, u, nodes, nd->gpu_speed,
                                      nd->gpu_mem_gb);
    /* An exploring job runs a stage of u < gpus GPUs: with the plan that fits. */
    if (r <= 0 && u != j->gpus) {
        struct plan_choice b;
        r = plan_best(&sp->speed, &sp->plan, u, nd->gpu_speed, nd->gpu_mem_gb, 0, 0, &b);
    }
    return r;
}

/* Sets each running job's working size and speed after a round. A job that
 * moves to its next exploring stage inside the GPUs it holds restarts at the
 * new world size: it pays the resize delay (not counted as a resize, since its
 * allocation did not change). */
static void update_use_of(struct sim *s, int grad_only)
{
    for (size_t a = 0; a < s->nactive; a++) {
        struct sim_job *j = &s->jobs[s->active[a]];
        if (grad_only && (!j->spec->grad || j->use <= 0))
            continue;
        int u = working_gpus(s, j);
        if (u != j->use && j->use > 0 && u > 0)
            j->busy_until = s->now + s->cfg->resize_cost_s;
        j->use = u;
        double f = 1.0;
        if (j->partner >= 0)
            f = simulate_pack_factor(j->spec->gpu_util, s->jobs[j->partner].spec->gpu_util,
                                     s->cfg->pack_kappa);
        double r = u > 0 ? true_rate(s, j, u) : 0.0;
        j->rate = r * f;
        double step_s;
        if (r > 0 && goodput_has_model(&j->spec->batch) && !plan_has_info(&j->spec->plan) &&
            simulate__batch_rate(j, u, nodes_held(j), &step_s) > 0)
            j->step_rate = f / step_s;
        else if (plan_has_info(&j->spec->plan) || r <= 0)
            j->step_rate = r > 0 ? f * r * j->spec->speed.dataset_size /
                                       ((double)u * j->spec->speed.batch_per_gpu)
                                 : 0.0;
        else
            j->step_rate = f / speed_step_time(&j->spec->speed, u) *
                           (r / speed_epochs_per_second(&j->spec->speed, u));
        if (j->step_rate > 0.0)
            j->alone_rate = j->step_rate / f;
    }
}

static void update_use(struct sim *s)
{
    update_use_of(s, 0);
}

/* One round; returns the GPUs in use after it, or -1. */
static int run_round(struct sim *s)
{
    for (size_t a = 0; a < s->nactive; a++) {
        fill_snapshot_job(s, &s->jobs[s->active[a]], &s->snap_jobs[a]);
        simulate__estimate_fill(s, &s->jobs[s->active[a]], &s->snap_jobs[a]);
    }
    struct sched_snapshot snap = {
        .now = s->now,
        .seed = s->cfg->seed,
        .nodes = s->cfg->nodes,
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
    };
    struct sched_decision *d = sched_decide(s->cfg->policy, &snap);
    if (!d)
        return simulate__fail(s, errno ? errno : EPROTO, "sched_decide failed", -1);
    int rc = simulate__check_decision(s, d);
    int in_use = 0;
    for (size_t a = 0; rc == 0 && a < s->nactive; a++)
        rc = apply_assignment(s, &s->jobs[s->active[a]], &d->assign[a]);
    if (rc == 0) {
        apply_packs(s, d);
        update_use(s);
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

/* ---- the loop and the totals ------------------------------------------- */

static int sim_loop(struct sim *s)
{
    double next_periodic = INFINITY;
    int idle_rounds = 0;
    while (s->ncompleted < s->njobs) {
        double t = next_event(s, next_periodic);
        double deadline = simulate__next_deadline(s);
        if (!isfinite(t))
            return simulate__fail(s, EPROTO, "no event left but jobs unfinished: policy stuck", -1);
        if (t < s->now)
            return simulate__fail(s, EPROTO, "time went backwards", -1);
        int events = advance(s, t);
        retire_completed(s);
        events += admit_arrivals(s);
        update_use_of(s, 1); /* rates follow the gradient statistics of the epoch reached */
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
    if (sim_init(&s, cfg, jobs, njobs) || sim_loop(&s))
        goto error;
    r = calloc(1, sizeof(*r));
    if (!r || !(r->jobs = calloc(njobs ? njobs : 1, sizeof(*r->jobs)))) {
        simulate__fail(&s, ENOMEM, "out of memory", -1);
        goto error;
    }
    r->njobs = njobs;
    if (simulate__fill_totals(&s, r))
        goto error;
    sim_free(&s);
    return r;
error : {
    int saved = errno;
    simulate_result_destroy(r);
    sim_free(&s);
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
