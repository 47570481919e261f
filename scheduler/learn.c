/* learn: live learning of each job from its own steps (learn.h): the prior that fitted jobs
 * teach, a one-size job's model from it, and the bounds, resize rule and experiment gain
 * that the policies read. */
#include "learn.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "explore.h"

int learn_is_teacher(const struct sched_job *j)
{
    /* a model fitted from two sizes or more, not one made by the one-size rule from the prior
     * (measured_step_s is set only for that rule) */
    return j->model_source == SCHED_MODEL_FITTED && j->measured_sizes >= 2 && j->speed.fitted &&
           !(j->measured_step_s > 0);
}

/* A model's 1-GPU step time at its own examples per GPU (0 when not positive). */
static double one_gpu_step_of(const struct speed_model *s)
{
    double f[SPEED_NFEATURES];
    speed_features_placed(1, 1, s->batch_per_gpu, f);
    double t = speed_step_time_features(s, f);
    return t > 0 && isfinite(t) ? t : 0;
}

static double one_gpu_step(const struct sched_job *j)
{
    return one_gpu_step_of(&j->speed);
}

/* 1 if every theta of j is finite and >= 0. */
static int sane_theta(const struct sched_job *j)
{
    for (size_t k = 0; k < SPEED_NFEATURES; k++)
        if (!(j->speed.theta[k] >= 0) || !isfinite(j->speed.theta[k]))
            return 0;
    return 1;
}

void learn_prior(const struct sched_job *jobs, size_t n, struct learn_prior *p)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < n; i++) {
        const struct sched_job *j = &jobs[i];
        double t1 = learn_is_teacher(j) && sane_theta(j) ? one_gpu_step(j) : 0;
        if (t1 <= 0)
            continue;
        p->fixed += j->speed.theta[0] / t1;
        for (int k = 0; k < 3; k++)
            p->intra[k] += j->speed.theta[2 + k] / t1;
        p->nintra++;
        if (j->measured_nodes > 1) {
            p->inter += j->speed.theta[5] / t1;
            p->ninter++;
        }
        if (j->measured_links & (1u << SPEED_LINK_PCIE)) {
            p->pcie += j->speed.theta[6] / t1;
            p->npcie++;
        }
        if (j->measured_links & (1u << SPEED_LINK_CROSS)) {
            p->cross += j->speed.theta[7] / t1;
            p->ncross++;
        }
    }
    if (p->npcie > 0)
        p->pcie /= p->npcie;
    if (p->ncross > 0)
        p->cross /= p->ncross;
    if (p->nintra > 0) {
        p->fixed /= p->nintra;
        for (int k = 0; k < 3; k++)
            p->intra[k] /= p->nintra;
    }
    if (p->ninter > 0)
        p->inter /= p->ninter;
}

int learn_speed_one_size(struct speed_model *s, double t, int w, int nodes, double m,
                         const struct learn_prior *p)
{
    return learn_speed_one_size_linked(s, t, w, nodes, SPEED_LINK_ISLAND, m, p);
}

int learn_speed_one_size_linked(struct speed_model *s, double t, int w, int nodes,
                                enum speed_link link, double m, const struct learn_prior *p)
{
    if (!(t > 0) || !isfinite(t) || w < 1 || !(m > 0) || !isfinite(m))
        return 0;
    nodes = nodes > 1 ? nodes : 1;
    double f[SPEED_NFEATURES];
    speed_features_linked(w, nodes > w ? w : nodes, link, m, f);
    double comm = p->intra[0] * f[2] + p->intra[1] * f[3] + p->intra[2] * f[4] + p->inter * f[5] +
                  p->pcie * f[6] + p->cross * f[7];
    double c = t / (1.0 + comm);
    double fixed = p->fixed >= 0 && p->fixed < 1 ? p->fixed : 0;
    s->theta[0] = fixed * c;
    s->theta[1] = (1.0 - fixed) * c / m;
    for (int k = 0; k < 3; k++)
        s->theta[2 + k] = p->intra[k] * c;
    s->theta[5] = p->inter * c;
    s->theta[6] = p->pcie * c;
    s->theta[7] = p->cross * c;
    s->rmse = 0;
    s->fitted = 1;
    return 1;
}

int learn_speed_one_size_own(struct speed_model *s, double t, int w, int nodes, double m,
                             const struct speed_model *own)
{
    if (!own || !own->fitted || !(t > 0) || !isfinite(t) || w < 1 || !(m > 0) || !isfinite(m))
        return 0;
    nodes = nodes > 1 ? nodes : 1;
    double f[SPEED_NFEATURES], comm = 0;
    speed_features_placed(w, nodes > w ? w : nodes, m, f);
    for (int k = 2; k < SPEED_NFEATURES; k++)
        comm += own->theta[k] * f[k];
    double own_c = own->theta[0] + own->theta[1] * m, c = t - comm;
    if (!(comm >= 0) || !isfinite(comm) || c < 0.1 * t || !(own_c > 0) || !isfinite(own_c))
        return 0;
    s->theta[0] = c * own->theta[0] / own_c;
    s->theta[1] = (c - s->theta[0]) / m;
    for (int k = 2; k < SPEED_NFEATURES; k++)
        s->theta[k] = own->theta[k];
    s->rmse = 0;
    s->fitted = 1;
    return 1;
}

int learn_links(struct speed_model *s, unsigned measured, const struct learn_prior *p)
{
    double t1 = s->fitted ? one_gpu_step_of(s) : 0;
    int changed = 0;
    if (!(t1 > 0))
        return 0;
    if (!(measured & (1u << SPEED_LINK_PCIE)) && !(s->theta[6] > 0) && p->pcie > 0) {
        s->theta[6] = p->pcie * t1;
        changed = 1;
    }
    if (!(measured & (1u << SPEED_LINK_CROSS)) && !(s->theta[7] > 0) && p->cross > 0) {
        s->theta[7] = p->cross * t1;
        changed = 1;
    }
    return changed;
}

int learn_model(struct sched_job *j, const struct learn_prior *p)
{
    double t = j->measured_step_s;
    if (j->measured_step_gpus < 1 || !(t > 0) || !isfinite(t) ||
        j->model_source == SCHED_MODEL_PROFILE || (j->measured_sizes > 1 && j->speed.fitted))
        return 0;
    double m = j->measured_batch_per_gpu > 0 ? j->measured_batch_per_gpu : j->speed.batch_per_gpu;
    if (!learn_speed_one_size_linked(&j->speed, t, j->measured_step_gpus, j->measured_step_nodes,
                                     j->measured_step_link, m, p))
        return 0;
    j->model_source = SCHED_MODEL_FITTED;
    return 1;
}

size_t learn_apply(struct sched_job *jobs, size_t n)
{
    struct learn_prior p;
    size_t made = 0;
    learn_prior(jobs, n, &p);
    for (size_t i = 0; i < n; i++) {
        made += (size_t)learn_model(&jobs[i], &p);
        if (jobs[i].model_source == SCHED_MODEL_FITTED && jobs[i].measured_max_gpus > 0)
            learn_links(&jobs[i].speed, jobs[i].measured_links, &p);
    }
    return made;
}

int learn_is_learning(const struct sched_job *j)
{
    return j->elastic && j->model_source == SCHED_MODEL_FITTED && j->measured_max_gpus > 0 &&
           j->measured_max_gpus < sched_job_max_gpus(j);
}

int learn_max_gpus(const struct sched_job *j)
{
    int max = sched_job_max_gpus(j);
    if (!learn_is_learning(j) || j->measured_max_gpus > INT_MAX / 2)
        return max;
    int cap = 2 * j->measured_max_gpus;
    if (cap < j->cur_gpus)
        cap = j->cur_gpus;
    return cap < max ? cap : max;
}

int learn_fills_idle(const struct sched_job *j)
{
    if (!j->elastic || j->model_source != SCHED_MODEL_FITTED || j->measured_max_gpus <= 0)
        return 0;
    return learn_is_learning(j) ? 2 : 1;
}

int learn_pinned(const struct sched_snapshot *snap, const struct sched_job *j)
{
    return j->cur_gpus > 0 && (j->measured_max_gpus < j->cur_gpus ||
                               snap->now - j->last_change_time < explore_stage_s(snap));
}

int learn_stage_fills(const struct sched_snapshot *snap, const struct sched_job *j)
{
    return j->cur_gpus > 0 && j->measured_max_gpus >= j->cur_gpus &&
           snap->now - j->last_change_time >= LEARN_FILL_STAGE_SHARE * explore_stage_s(snap);
}

double learn_step_gain(int fills, double gain, double t1, double t2, double avoided)
{
    if (!fills || gain > 0 || !isfinite(t2))
        return gain;
    if (fills == 1 && !(t2 <= t1 + (avoided > 0 ? avoided : 0)))
        return gain;
    return LEARN_IDLE_GAIN;
}

int learn_type_experiment(struct sched_type_speed *t, int idle_gpus,
                          const struct speed_model *best)
{
    if (t->source != SCHED_TYPE_ESTIMATED || idle_gpus <= 0 || !(t->uncertainty > 0) ||
        !isfinite(t->uncertainty))
        return 0;
    double f = exp(-LEARN_EXPERIMENT_SIGMAS * t->uncertainty);
    double t0 = t->speed.theta[0] * f, t1 = t->speed.theta[1] * f;
    double m = t->speed.batch_per_gpu > 0 ? t->speed.batch_per_gpu : 1.0;
    if (best && best->fitted && best->theta[0] + best->theta[1] * m < t0 + t1 * m) {
        t0 = best->theta[0];
        t1 = best->theta[1];
    }
    t->speed.theta[0] = t0;
    t->speed.theta[1] = t1;
    return 1;
}
