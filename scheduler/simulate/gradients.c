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

/* The runs whose batches surround m (lo, hi) and m's weight on hi (0..1; 0 when lo == hi). */
static double bracket(const struct simulate_grad *g, double m, size_t *lo, size_t *hi)
{
    *lo = *hi = 0;
    for (size_t r = 0; r < g->nruns; r++) {
        if (g->batch[r] <= m)
            *lo = r;
        if (g->batch[r] >= m) {
            *hi = r;
            break;
        }
        *hi = r;
    }
    double span = g->batch[*hi] - g->batch[*lo];
    if (*lo == *hi || !(span > 0))
        return 0;
    double t = (m - g->batch[*lo]) / span;
    return t < 0 ? 0 : t > 1 ? 1 : t;
}

static void stats_at(const struct simulate_grad *g, double p, double m, double *sqr, double *var)
{
    size_t e = epoch_at(g, p), lo, hi;
    double t = bracket(g, m, &lo, &hi);
    size_t a = lo * g->nepochs + e, b = hi * g->nepochs + e;
    *sqr = (1 - t) * g->sqr[a] + t * g->sqr[b];
    *var = (1 - t) * g->var[a] + t * g->var[b];
}

double simulate__grad_error(const struct simulate_grad *g, size_t e, double m)
{
    if (!g || !g->error || g->nruns == 0 || e >= g->nepochs)
        return NAN;
    size_t lo, hi;
    double t = bracket(g, m, &lo, &hi);
    return (1 - t) * g->error[lo * g->nepochs + e] + t * g->error[hi * g->nepochs + e];
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
