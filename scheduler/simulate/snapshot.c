/* snapshot: what a round's policy sees of a simulated job: its request, progress and
 * slots, the speed model its view allows (profiled, or fitted from its exploration) and what
 * Gandiva's introspection measures. */
#include <math.h>
#include <string.h>

#include "simulate_int.h"


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

/* The link classes of a model as the policies see them (issue 32): with the cluster's islands
 * (the packed placement of more GPUs than an island spans PCIe), or under topology_blind none
 * at all (a blind scheduler knows no class: its model has no term for one). */
static void see_links(const struct sim *s, struct speed_model *m)
{
    if (s->cfg->topology_blind) {
        m->theta[6] = m->theta[7] = 0;
        m->gpus_per_island = 0;
    } else {
        m->gpus_per_island = s->island_size;
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

void simulate__fill_snapshot_job(struct sim *s, struct sim_job *j, struct sched_job *o)
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
    o->deadline = s->cfg->hide_deadlines ? 0 : sp->deadline;
    o->cur_gpus = j->gpus;
    o->slots = j->slots;
    o->last_change_time = j->last_change;
    o->run_time = j->run_time;
    o->last_checkpoint_time = j->ckpt_time;
    o->last_checkpoint_step = (int64_t)j->ckpt_steps;
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
    if (s->cfg->show_type_speeds) {
        o->type_speeds = sp->types;
        o->ntype_speeds = sp->ntypes;
    }
    if (s->learn) {
        simulate__learn_fill(s, j, o);
        return;
    }
    if (s->cfg->view == SIMULATE_VIEW_PROFILE) {
        o->model_source = SCHED_MODEL_PROFILE;
        o->speed = sp->speed;
        see_links(s, &o->speed);
        return;
    }
    refresh_seen_model(j);
    int known = j->obs_fitted > 0 && explore_done(s, j);
    o->model_source = known ? SCHED_MODEL_FITTED : SCHED_MODEL_NONE;
    o->speed = known ? j->seen : sp->speed;
    if (!known)
        o->speed.fitted = 0;
    see_links(s, &o->speed);
}
