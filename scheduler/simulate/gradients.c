/* gradients: the truth of a job with a batch model in the simulation engine (see
 * simulate.h, struct simulate_grad): its gradient statistics as training goes on, and its
 * rate at the batch it runs at. */
#include <math.h>

#include "simulate_int.h"

/* The epoch the runs have reached at progress p: the most rows of any run ending at or
 * before p (Pollux's simulator counts epochs the same way), at most nepochs - 1. */
static size_t epoch_at(const struct simulate_grad *g, double p)
{
    size_t best = 0;
    for (size_t r = 0; r < g->nruns; r++) {
        const double *prog = g->progress + r * g->nepochs;
        size_t k = 0;
        while (k < g->nepochs && prog[k] <= p)
            k++;
        if (k > best)
            best = k;
    }
    return best < g->nepochs ? best : g->nepochs - 1;
}

static void stats_at(const struct simulate_grad *g, double p, double m, double *sqr, double *var)
{
    size_t e = epoch_at(g, p), lo = 0, hi = 0;
    for (size_t r = 0; r < g->nruns; r++) {
        if (g->batch[r] <= m)
            lo = r;
        if (g->batch[r] >= m) {
            hi = r;
            break;
        }
        hi = r;
    }
    const double *s = g->sqr, *v = g->var;
    size_t a = lo * g->nepochs + e, b = hi * g->nepochs + e;
    double span = g->batch[hi] - g->batch[lo];
    if (lo == hi || !(span > 0)) {
        *sqr = s[a];
        *var = v[a];
        return;
    }
    double t = (m - g->batch[lo]) / span;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    *sqr = (1 - t) * s[a] + t * s[b];
    *var = (1 - t) * v[a] + t * v[b];
}

struct batch_spec simulate__batch_now(const struct sim_job *j)
{
    struct batch_spec b = j->spec->batch;
    const struct simulate_grad *g = j->spec->grad;
    if (j->batch > 0)
        b.batch = j->batch;
    if (g && g->nruns > 0 && g->nepochs > 0)
        stats_at(g, j->epochs_done, b.batch > 0 ? b.batch : b.init_batch, &b.grad_sqr,
                 &b.grad_var);
    return b;
}

double simulate__batch_rate(const struct sim_job *j, int u, int nodes, double *step_s)
{
    return simulate__batch_rate_on(j, NULL, u, nodes, step_s);
}

double simulate__batch_rate_on(const struct sim_job *j, const struct sched_type_speed *ty, int u,
                               int nodes, double *step_s)
{
    struct batch_spec b = simulate__batch_now(j);
    const struct speed_model *sp = ty ? &ty->speed : &j->spec->speed;
    if (ty && ty->max_local > 0)
        b.max_local = ty->max_local;
    double m = b.batch > 0 ? b.batch : b.init_batch;
    double t = goodput_step_time(sp, &b, u, nodes, m, NULL);
    if (step_s)
        *step_s = t;
    return isfinite(t) ? goodput_rate(sp, &b, u, nodes, m) : 0.0;
}

double simulate__batch_next_progress(const struct sim_job *j)
{
    const struct simulate_grad *g = j->spec->grad;
    double next = INFINITY;
    if (!g || !goodput_has_model(&j->spec->batch))
        return next;
    for (size_t r = 0; r < g->nruns; r++) {
        const double *prog = g->progress + r * g->nepochs;
        for (size_t k = 0; k + 1 < g->nepochs; k++)
            if (prog[k] > j->epochs_done * (1 + 1e-12)) {
                next = fmin(next, prog[k]);
                break;
            }
    }
    return next;
}
