/* fit: the live refits' pure parts (fit.h): the speed fit from step times on GPUs of several
 * speeds, scaled to the reference GPU, and the loss series thinned by a doubling stride. */
#include "fit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static double obs_speed(const struct live_fit_obs *o)
{
    return o->gpu_speed > 0 && isfinite(o->gpu_speed) ? o->gpu_speed : 1.0;
}

/* The speed with the most observations (ties: the one nearest 1, in log terms). */
static double dominant_speed(const struct live_fit_obs *obs, size_t n)
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

/* Fits sm on the observations of speed s (all of them when s <= 0), each step time first
 * converted by conv (NULL: raw). */
static int fit_group(struct speed_model *sm, const struct live_fit_obs *obs, size_t n, double s,
                     const struct speed_model *conv)
{
    struct speed_obs *o = calloc(n + 1, sizeof(*o));
    size_t k = 0;
    if (!o)
        return -1;
    for (size_t i = 0; i < n; i++) {
        double si = obs_speed(&obs[i]), t = obs[i].step_s;
        double m = obs[i].m > 0 && isfinite(obs[i].m) ? obs[i].m : sm->batch_per_gpu;
        if (s > 0 && si != s)
            continue;
        if (conv) {
            double f[SPEED_NFEATURES];
            speed_features_placed(obs[i].w, 1, m, f);
            double c = conv->theta[0] * f[0] + conv->theta[1] * f[1];
            t = fmin(fmax(t + c * (1.0 - 1.0 / si), t * fmin(1.0, si)), t * fmax(1.0, si));
        }
        o[k++] = (struct speed_obs){obs[i].w, 1, m, t};
    }
    int rc = speed_fit_obs(sm, o, k);
    free(o);
    return rc;
}

int live_fit_speed(struct speed_model *sm, const struct live_fit_obs *obs, size_t n)
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
        *sm = first;
        return 0;
    }
    struct speed_model second = *sm;
    if (fit_group(&second, obs, n, 0, &first) < 0)
        return -1;
    *sm = second;
    return 0;
}

/* Keeps every other point held: the stride doubles. */
static void halve(struct live_fit_series *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i += 2) {
        s->step[k] = s->step[i];
        s->loss[k++] = s->loss[i];
    }
    s->n = k;
    s->stride *= 2;
}

int live_fit_series_add(struct live_fit_series *s, double step, double loss)
{
    if (s->stride < 1)
        s->stride = 1;
    long long index = s->arrived++;
    if (index % s->stride != 0)
        return 0;
    if (s->n == LIVE_FIT_SERIES_MAX) {
        halve(s);
        if (index % s->stride != 0)
            return 1;
    }
    s->step[s->n] = step;
    s->loss[s->n++] = loss;
    return 1;
}
