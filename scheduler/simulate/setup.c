/* setup: a simulation's start: the configuration's defaults, checking the configuration and
 * the jobs, and the engine's state built from them (and freed at the end). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "simulate_int.h"

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

/* ---- checks ----------------------------------------------------------- */

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
    if (!(j->shown_factor >= 0.0) || !isfinite(j->shown_factor))
        return simulate__fail(s, EINVAL, "shown_factor must be finite and >= 0", j->id);
    if (!(j->declared_epochs >= 0.0) || !isfinite(j->declared_epochs))
        return simulate__fail(s, EINVAL, "declared_epochs must be finite and >= 0", j->id);
    return 0;
}

/* A job that runs when the run starts: on GPUs of the cluster, submitted by then, with work
 * left. */
static int check_start(struct sim *s, const struct simulate_config *c,
                       const struct simulate_job_spec *j)
{
    if (j->start_gpus == 0)
        return 0;
    if (j->start_gpus < 0 || !j->start_slots || j->submit_time > c->start_time)
        return simulate__fail(s, EINVAL, "a running job needs its slots, submitted by start_time",
                              j->id);
    if (!(j->start_epochs_done >= 0.0 && j->start_epochs_done < j->epochs) ||
        !(j->start_run_s >= 0.0) || !isfinite(j->start_run_s) ||
        !isfinite(j->start_last_change))
        return simulate__fail(s, EINVAL, "a running job needs 0 <= epochs done < epochs", j->id);
    for (int g = 0; g < j->start_gpus; g++) {
        struct sched_slot sl = j->start_slots[g];
        if (sl.node < 0 || (size_t)sl.node >= c->nnodes || sl.gpu < 0 ||
            sl.gpu >= c->nodes[sl.node].ngpus)
            return simulate__fail(s, EINVAL, "a running job's slot is outside the cluster", j->id);
    }
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
    if (!(c->checkpoint_every_s >= 0.0) || !isfinite(c->checkpoint_every_s) ||
        !(c->min_runtime_s >= 0.0) || !isfinite(c->min_runtime_s))
        return simulate__fail(s, EINVAL, "checkpoint_every_s and min_runtime_s: finite, >= 0", -1);
    if (!(c->start_time >= 0.0) || !isfinite(c->start_time) || isnan(c->until))
        return simulate__fail(s, EINVAL, "start_time must be finite and >= 0", -1);
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

/* Job j runs at the start on its start slots (sorted, as the decisions' are), so that a
 * first round that keeps them changes nothing and costs no restart. */
static int start_running(struct sim *s, struct sim_job *j)
{
    const struct simulate_job_spec *sp = j->spec;
    j->slots = malloc((size_t)sp->start_gpus * sizeof(*j->slots));
    if (!j->slots)
        return simulate__fail(s, ENOMEM, "out of memory", -1);
    memcpy(j->slots, sp->start_slots, (size_t)sp->start_gpus * sizeof(*j->slots));
    simulate__sort_slots(j->slots, sp->start_gpus);
    j->gpus = sp->start_gpus;
    j->started = 1;
    j->start_time = sp->submit_time;
    j->epochs_done = sp->start_epochs_done;
    j->run_time = sp->start_run_s;
    j->last_change = sp->start_last_change;
    return 0;
}

void simulate__free(struct sim *s)
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
    free(s->learn);
    free(s->learn_in);
    free(s->blind_nodes);
}

int simulate__init(struct sim *s, const struct simulate_config *cfg,
                   const struct simulate_job_spec *specs, size_t n)
{
    if (check_config(s, cfg))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (check_spec(s, &specs[i]) || check_start(s, cfg, &specs[i]))
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
    s->seen_nodes = cfg->nodes;
    s->island_size = domain_island_size(cfg->nodes, cfg->nnodes);
    if (cfg->topology_blind) {
        s->blind_nodes = calloc(cfg->nnodes + 1, sizeof(*s->blind_nodes));
        if (!s->blind_nodes)
            return simulate__fail(s, ENOMEM, "out of memory", -1);
        for (size_t i = 0; i < cfg->nnodes; i++) {
            s->blind_nodes[i] = cfg->nodes[i];
            memset(s->blind_nodes[i].island, 0, sizeof(s->blind_nodes[i].island));
            s->blind_nodes[i].switch_id = s->blind_nodes[i].rack_id = 0;
        }
        s->seen_nodes = s->blind_nodes;
    }
    if (cfg->speed_live) {
        s->learn = calloc(n ? n : 1, sizeof(*s->learn));
        s->learn_in = calloc(n ? n : 1, sizeof(*s->learn_in));
        if (!s->learn || !s->learn_in)
            return simulate__fail(s, ENOMEM, "out of memory", -1);
    }
    for (size_t i = 0; i < n; i++) {
        s->jobs[i].spec = &specs[i];
        s->jobs[i].seen = specs[i].speed;
        s->jobs[i].partner = -1;
        if (goodput_has_model(&specs[i].batch))
            s->jobs[i].batch = specs[i].batch.batch > 0 ? specs[i].batch.batch
                                                        : specs[i].batch.init_batch;
        simulate__estimate_init(s, &s->jobs[i]);
        if (specs[i].start_gpus > 0 && start_running(s, &s->jobs[i]))
            return -1;
    }
    s->now = cfg->start_time;
    return sort_arrivals(s, specs, n);
}
