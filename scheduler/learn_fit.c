/* learn_fit: a job's speed models from its measured steps (learn_fit.h): the reference model
 * from the steps on every GPU model normalised to the reference GPU, one model per GPU model
 * measured (its own fit, or the one-size rule), and what the learning rules read of them. */
#include "learn_fit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double obs_speed(const struct learn_obs *o)
{
    return o->gpu_speed > 0 && isfinite(o->gpu_speed) ? o->gpu_speed : 1.0;
}

static int obs_nodes(const struct learn_obs *o)
{
    int n = o->nodes > 1 ? o->nodes : 1;
    return n > o->w ? o->w : n;
}

/* The class the observation's placement spans (speed_link_on; ISLAND for one GPU). */
static enum speed_link obs_link(const struct learn_obs *o)
{
    return o->w > 1 ? speed_link_on(obs_nodes(o), o->link) : SPEED_LINK_ISLAND;
}

static double obs_m(const struct learn_obs *o, const struct speed_model *sm)
{
    return o->m > 0 && isfinite(o->m) ? o->m : sm->batch_per_gpu;
}

static double obs_weight(const struct learn_obs *o)
{
    return o->seconds > 0 && isfinite(o->seconds) ? o->seconds : 1.0;
}

static int obs_usable(const struct learn_obs *o)
{
    return o->w >= 1 && o->step_s > 0 && isfinite(o->step_s);
}

/* The speed with the most observations (ties: the one nearest 1, in log terms). */
static double dominant_speed(const struct learn_obs *obs, size_t n)
{
    double best = 1.0;
    size_t best_n = 0;
    for (size_t i = 0; i < n; i++) {
        double s = obs_speed(&obs[i]);
        size_t k = 0;
        for (size_t j = 0; j < n; j++)
            k += obs_speed(&obs[j]) == s;
        if (k > best_n || (k == best_n && fabs(log(s)) < fabs(log(best)))) {
            best = s;
            best_n = k;
        }
    }
    return best;
}

/* A fit of two sizes or more is kept only if its compute, theta[0] + theta[1] m at the
 * smallest size measured (its seconds-weighted mean examples per GPU there), is at least this
 * share of the step time measured there (the fit's prediction at that size, when the
 * measurement is not at hand). Two sizes whose steps take about as long (6 and 8 GPUs, say)
 * can be fitted exactly by the all-reduce terms alone, with no compute at all: such a model
 * predicts a step of 0 s on one GPU, an infinite speed, and a job with it was never placed
 * again (seen in the simulator's --speed live once GPUs were given in any count). */
#define LEARN_FIT_MIN_COMPUTE 0.01

/* 1 if sm, fitted to observations obs[0..n) (those of speed s when s > 0, of GPU model g
 * when g >= 0), keeps a compute term (LEARN_FIT_MIN_COMPUTE); s scales the measured
 * steps to the reference GPU as learn_fit_speed does (compute only: bounded below by
 * dividing the whole step). */
static int fit_has_compute(const struct speed_model *sm, const struct learn_obs *obs, size_t n,
                           int g)
{
    int w = 0;
    double sec = 0, st = 0, m = 0;
    for (size_t i = 0; i < n; i++)
        if (obs_usable(&obs[i]) && (g < 0 || obs[i].gpu_model == g) && (w == 0 || obs[i].w < w))
            w = obs[i].w;
    for (size_t i = 0; i < n; i++) {
        if (!obs_usable(&obs[i]) || (g >= 0 && obs[i].gpu_model != g) || obs[i].w != w)
            continue;
        double wt = obs_weight(&obs[i]), s = g < 0 ? obs_speed(&obs[i]) : 1.0;
        sec += wt;
        st += wt * obs[i].step_s * (s < 1.0 ? s : 1.0);
        m += wt * obs_m(&obs[i], sm);
    }
    if (!sm->fitted || !(sec > 0))
        return 0;
    double c = sm->theta[0] + sm->theta[1] * (m / sec);
    return isfinite(c) && c >= LEARN_FIT_MIN_COMPUTE * (st / sec);
}

/* Fits sm on the observations of speed s (all of them when s <= 0), each step time first
 * converted by conv (NULL: raw). */
static int fit_group(struct speed_model *sm, const struct learn_obs *obs, size_t n, double s,
                     const struct speed_model *conv)
{
    struct speed_obs *o = calloc(n + 1, sizeof(*o));
    size_t k = 0;
    if (!o)
        return -1;
    for (size_t i = 0; i < n; i++) {
        double si = obs_speed(&obs[i]), t = obs[i].step_s, m = obs_m(&obs[i], sm);
        if (s > 0 && si != s)
            continue;
        if (conv) {
            double f[SPEED_NFEATURES];
            speed_features_linked(obs[i].w, obs_nodes(&obs[i]), obs[i].link, m, f);
            double c = conv->theta[0] * f[0] + conv->theta[1] * f[1];
            t = fmin(fmax(t + c * (1.0 - 1.0 / si), t * fmin(1.0, si)), t * fmax(1.0, si));
        }
        o[k++] = (struct speed_obs){obs[i].w, obs_nodes(&obs[i]), m, t, obs[i].link};
    }
    int rc = speed_fit_obs(sm, o, k);
    free(o);
    return rc;
}

int learn_fit_speed(struct speed_model *sm, const struct learn_obs *obs, size_t n)
{
    if (!sm || !obs || n < 1) {
        errno = EINVAL;
        return -1;
    }
    double s = dominant_speed(obs, n);
    struct speed_model first = *sm;
    if (fit_group(&first, obs, n, s, NULL) < 0)
        return -1;
    first.theta[0] *= s;
    first.theta[1] *= s;
    int mixed = 0;
    for (size_t i = 0; i < n; i++)
        mixed |= obs_speed(&obs[i]) != s;
    if (!mixed) {
        if (!fit_has_compute(&first, obs, n, -1))
            goto no_compute;
        *sm = first;
        return 0;
    }
    struct speed_model second = *sm;
    if (fit_group(&second, obs, n, 0, &first) < 0)
        return -1;
    if (!fit_has_compute(&second, obs, n, -1))
        goto no_compute;
    *sm = second;
    return 0;
no_compute:
    errno = EDOM;
    return -1;
}

int learn_obs_sizes(const struct learn_obs *obs, size_t n, int gpu_model)
{
    int sizes = 0;
    for (size_t i = 0; i < n; i++) {
        if (!obs_usable(&obs[i]) || (gpu_model >= 0 && obs[i].gpu_model != gpu_model))
            continue;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = obs_usable(&obs[k]) && obs[k].w == obs[i].w &&
                   (gpu_model < 0 || obs[k].gpu_model == gpu_model);
        sizes += !seen;
    }
    return sizes;
}

/* The sums of the one-size rule over the observations of GPU model g at the smallest size
 * measured there (for a fit of several sizes without compute, fit_has_compute): that size,
 * its most nodes, the seconds, the seconds-weighted step time and examples per GPU. */
static void one_size_at_smallest(const struct learn_obs *obs, size_t n, int g,
                                 const struct speed_model *like, int *w, int *nodes, double *sec,
                                 double *st, double *sm)
{
    *w = 0;
    *nodes = 1;
    *sec = *st = *sm = 0;
    for (size_t i = 0; i < n; i++)
        if (obs[i].gpu_model == g && obs_usable(&obs[i]) && (*w == 0 || obs[i].w < *w))
            *w = obs[i].w;
    for (size_t i = 0; i < n; i++) {
        if (obs[i].gpu_model != g || !obs_usable(&obs[i]) || obs[i].w != *w)
            continue;
        double wt = obs_weight(&obs[i]);
        *sec += wt;
        *st += wt * obs[i].step_s;
        *sm += wt * obs_m(&obs[i], like);
        *nodes = obs_nodes(&obs[i]) > *nodes ? obs_nodes(&obs[i]) : *nodes;
    }
}

/* The entry of GPU model g from the observations of that model. Returns 1 if made. */
static int fit_type(struct sched_type_speed *t, const struct learn_obs *obs, size_t n, int g,
                    const struct speed_model *like, const struct speed_model *own,
                    const struct learn_prior *p, const struct learn_fit_cache *reuse)
{
    for (size_t k = 0; reuse && k < reuse->n; k++)
        if (reuse->fits[k].gpu_model == g && reuse->fits[k].measured_sizes >= 2 &&
            reuse->fits[k].speed.fitted) {
            *t = reuse->fits[k];
            return 1;
        }
    struct speed_obs *o = calloc(n + 1, sizeof(*o));
    if (!o)
        return 0;
    size_t k = 0;
    double sec = 0, st = 0, sm = 0;
    int w = 0, nodes = 1, link = SPEED_LINK_ISLAND;
    for (size_t i = 0; i < n; i++) {
        if (obs[i].gpu_model != g || !obs_usable(&obs[i]))
            continue;
        link = (int)obs_link(&obs[i]) > link ? (int)obs_link(&obs[i]) : link;
        double m = obs_m(&obs[i], like), wt = obs_weight(&obs[i]);
        o[k++] = (struct speed_obs){obs[i].w, obs_nodes(&obs[i]), m, obs[i].step_s, obs[i].link};
        sec += wt;
        st += wt * obs[i].step_s;
        sm += wt * m;
        w = obs[i].w;
        nodes = obs_nodes(&obs[i]) > nodes ? obs_nodes(&obs[i]) : nodes;
    }
    memset(t, 0, sizeof(*t));
    t->gpu_model = g;
    t->source = SCHED_TYPE_MEASURED;
    t->measured_sizes = learn_obs_sizes(obs, n, g);
    t->speed = *like;
    memset(t->speed.theta, 0, sizeof(t->speed.theta));
    t->speed.fitted = 0;
    t->speed.rmse = 0;
    int ok = 0;
    if (t->measured_sizes >= 2) {
        ok = speed_fit_obs(&t->speed, o, k) == 0 && fit_has_compute(&t->speed, obs, n, g);
        if (!ok)
            one_size_at_smallest(obs, n, g, like, &w, &nodes, &sec, &st, &sm);
    }
    if (!ok && t->measured_sizes >= 1 && sec > 0) {
        t->speed.fitted = 0;
        ok = learn_speed_one_size_own(&t->speed, st / sec, w, nodes, sm / sec, own) ||
             learn_speed_one_size_linked(&t->speed, st / sec, w, nodes, (enum speed_link)link,
                                         sm / sec, p);
    }
    free(o);
    return ok && t->speed.fitted;
}

size_t learn_fit_types(const struct learn_obs *obs, size_t n, const struct speed_model *like,
                       const struct speed_model *own, const struct learn_prior *p,
                       const struct learn_fit_cache *reuse, struct sched_type_speed *out,
                       size_t cap)
{
    static const struct learn_prior none;
    size_t made = 0;
    if (!p)
        p = &none;
    for (size_t i = 0; i < n && made < cap; i++) {
        int g = obs[i].gpu_model, seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = obs[k].gpu_model == g;
        if (!seen && obs_usable(&obs[i]) && fit_type(&out[made], obs, n, g, like, own, p, reuse))
            made++;
    }
    return made;
}

void learn_fit_measured(struct sched_job *j, const struct learn_obs *obs, size_t n)
{
    double sec = 0, st = 0, msec = 0, sm = 0;
    int smallest = 0;
    j->measured_sizes = learn_obs_sizes(obs, n, -1);
    j->measured_max_gpus = 0;
    j->measured_nodes = 0;
    j->measured_step_s = 0;
    j->measured_batch_per_gpu = 0;
    j->measured_step_gpus = 0;
    j->measured_step_nodes = 0;
    j->measured_links = 0;
    j->measured_step_link = SPEED_LINK_ISLAND;
    for (size_t i = 0; i < n; i++) {
        if (!obs_usable(&obs[i]))
            continue;
        if (obs[i].w > 1)
            j->measured_links |= 1u << obs_link(&obs[i]);
        int nodes = obs_nodes(&obs[i]);
        if (obs[i].w > j->measured_max_gpus || (obs[i].w == j->measured_max_gpus &&
                                                 nodes > j->measured_nodes)) {
            j->measured_max_gpus = obs[i].w;
            j->measured_nodes = nodes;
        }
        if (smallest == 0 || obs[i].w < smallest)
            smallest = obs[i].w;
    }
    /* the one-size rule's basis: its one size, or its smallest when its sizes gave no
     * reference model (learn_fit_speed refused them: no compute left in the fit) */
    if (j->measured_sizes < 1 || (j->measured_sizes > 1 && j->speed.fitted))
        return;
    for (size_t i = 0; i < n; i++) {
        if (!obs_usable(&obs[i]) || obs[i].w != smallest)
            continue;
        int nodes = obs_nodes(&obs[i]);
        j->measured_step_nodes = nodes > j->measured_step_nodes ? nodes : j->measured_step_nodes;
        if ((int)obs_link(&obs[i]) > j->measured_step_link)
            j->measured_step_link = (int)obs_link(&obs[i]);
        double wt = obs_weight(&obs[i]);
        sec += wt;
        st += wt * obs[i].step_s * obs_speed(&obs[i]);
        if (obs[i].m > 0 && isfinite(obs[i].m)) {
            msec += wt;
            sm += wt * obs[i].m;
        }
    }
    if (sec > 0) {
        j->measured_step_s = st / sec;
        j->measured_batch_per_gpu = msec > 0 ? sm / msec : 0;
        j->measured_step_gpus = smallest;
    }
}
