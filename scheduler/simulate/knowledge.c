/* knowledge: what the policies know of a job's remaining work in the
 * simulator (simulate.h, estimate_error, estimate_live and estimate_declared). The engine keeps
 * the truth (spec->epochs) and the job ends when it has trained it; only the
 * snapshot's remaining_epochs is replaced.
 *
 * Live: each job has a true loss curve l(e) = 1/(b0*e + b1) + b2 over epochs
 * e that converges (one more epoch improves it by less than its tolerance)
 * somewhere between 40 % of its length and its end; the job trains its whole
 * length, which it did not declare.
 * At a round the job has reported LIVE_POINTS losses evenly over the epochs
 * it has done, each with a relative noise; conv_fit() fits them and
 * conv_steps_to_converge() predicts the epochs left; sched_estimate_remaining()
 * turns a fit of "now" into the prior of the run's finished jobs.
 *
 * Declared (issue 34): each job shows the length its user declared and, when its runs report
 * a validation error, stops at convergence with a fit of the errors it reported at its epoch
 * ends to its target error; sched_estimate_remaining() alone turns that into its remaining
 * work, as the server's round does (no oracle). */
#include <math.h>

#include "simulate_int.h"

#define LIVE_POINTS 24
/* Refit only when the job has done this much more (fits are not free). */
#define LIVE_REFIT_GROWTH 1.1
/* A job's loss converges between this fraction of its length and its end. */
#define LIVE_CONV_MIN 0.4
/* Declared: the most epoch ends a fit of the reported errors uses. */
#define DECL_POINTS 128

double simulate_estimate_factor(uint64_t seed, int64_t id, double sigma)
{
    uint64_t st = seed ^ ((uint64_t)id * 0x9e3779b97f4a7c15ULL) ^ 0x5ca1ab1eULL;

    if (!(sigma > 0))
        return 1.0;
    double u1 = simulate_rng_uniform(&st), u2 = simulate_rng_uniform(&st);
    double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
    return exp(sigma * z);
}

void simulate_loss_curve(uint64_t seed, int64_t id, double epochs, struct conv_model *m,
                         double *tol, double *conv_at)
{
    uint64_t st = seed ^ ((uint64_t)id * 0xbf58476d1ce4e5b9ULL) ^ 0x10551055ULL;
    double c = 3.0 + 6.0 * simulate_rng_uniform(&st); /* loss falls (c+1)-fold */

    m->b2 = 0.1 + 0.4 * simulate_rng_uniform(&st);
    *conv_at = epochs * (LIVE_CONV_MIN + (1.0 - LIVE_CONV_MIN) * simulate_rng_uniform(&st));
    m->b0 = c / *conv_at;
    m->b1 = 1.0;
    m->rmse = 0;
    m->npoints = 0;
    m->fitted = 1;
    *tol = conv_loss(m, *conv_at) - conv_loss(m, *conv_at + 1.0);
}

void simulate__estimate_init(struct sim *s, struct sim_job *j)
{
    const struct simulate_config *c = s->cfg;

    j->wait_since = j->spec->submit_time;
    j->est_factor = j->spec->shown_factor > 0
                        ? j->spec->shown_factor
                        : simulate_estimate_factor(c->seed, j->spec->id, c->estimate_error);
    double conv_at;

    if (c->estimate_live)
        simulate_loss_curve(c->seed, j->spec->id, j->spec->epochs, &j->curve, &j->tol,
                            &conv_at);
}

/* The loss job j reports at epoch e, point k: the curve with relative noise. */
static double reported_loss(const struct sim *s, const struct sim_job *j, double e, int k)
{
    uint64_t st = s->cfg->seed ^ ((uint64_t)j->spec->id * 0xd1b54a32d192ed03ULL) ^
                  ((uint64_t)llround(e * 1000.0) << 8) ^ (uint64_t)k;
    double z = 2.0 * simulate_rng_uniform(&st) - 1.0;

    return conv_loss(&j->curve, e) * (1.0 + s->cfg->loss_noise * z);
}

/* Refits job j's losses when it has progressed enough; returns 1 if it has a fit. */
static int live_fit(const struct sim *s, struct sim_job *j)
{
    double steps[LIVE_POINTS], losses[LIVE_POINTS];
    double done = j->epochs_done;

    if (!(done > 0))
        return 0;
    if (j->fit_epochs > 0 && done < j->fit_epochs * LIVE_REFIT_GROWTH)
        return j->fit.fitted;
    for (int k = 0; k < LIVE_POINTS; k++) {
        steps[k] = done * (k + 1) / LIVE_POINTS;
        losses[k] = reported_loss(s, j, steps[k], k);
    }
    j->fit_epochs = done;
    if (conv_fit(steps, losses, LIVE_POINTS, &j->fit))
        j->fit.fitted = 0;
    return j->fit.fitted;
}

/* Declared: the errors job j reported at the end of each epoch it has done (each run's rows,
 * interpolated at the batch it runs at now; at most DECL_POINTS of them, evenly) fitted when it
 * has done LIVE_REFIT_GROWTH more; returns 1 if it has a fit. */
static int declared_fit(struct sim_job *j)
{
    const struct simulate_grad *g = j->spec->grad;
    double steps[DECL_POINTS], errors[DECL_POINTS], done = j->epochs_done;

    if (!g || !g->error || !(done >= 1.0))
        return 0;
    if (j->fit_epochs > 0 && done < j->fit_epochs * LIVE_REFIT_GROWTH)
        return j->fit.fitted;
    struct batch_spec b = simulate__batch_now(j);
    double m = b.batch > 0 ? b.batch : b.init_batch;
    size_t ends = done < (double)g->nepochs ? (size_t)done : g->nepochs;
    size_t n = ends < DECL_POINTS ? ends : DECL_POINTS;
    for (size_t k = 0; k < n; k++) {
        size_t e = n == ends ? k : (k + 1) * ends / n - 1; /* epoch e + 1 ended */
        steps[k] = (double)(e + 1);
        errors[k] = simulate__grad_error(g, e, m);
    }
    j->fit_epochs = done;
    if (conv_fit(steps, errors, n, &j->fit))
        j->fit.fitted = 0;
    return j->fit.fitted;
}

/* Declared: the job as its user submitted it (estimate_declared). */
static void declared_fill(struct sim *s, struct sim_job *j, struct sched_job *o)
{
    const struct simulate_grad *g = j->spec->grad;

    o->declared_epochs = j->spec->declared_epochs;
    o->stops_at_convergence = g && g->error;
    o->has_fit = 0;
    o->fit_remaining_epochs = 0;
    if (o->stops_at_convergence && declared_fit(j)) {
        double left = conv_steps_to_loss(&j->fit, j->epochs_done, g->target_error);
        o->has_fit = isfinite(left);
        o->fit_remaining_epochs = isfinite(left) ? left : 0;
    }
    o->remaining_epochs =
        sched_estimate_remaining(o, s->finished_run_s, s->nfinished, &o->remaining_source);
}

void simulate__estimate_fill(struct sim *s, struct sim_job *j, struct sched_job *o)
{
    const struct simulate_config *c = s->cfg;

    if (c->estimate_declared) {
        declared_fill(s, j, o);
        return;
    }
    if (c->estimate_live) {
        o->has_fit = live_fit(s, j);
        o->fit_remaining_epochs =
            o->has_fit ? conv_steps_to_converge(&j->fit, j->epochs_done, 1.0, j->tol) : 0.0;
        if (c->estimate_live == SIMULATE_LIVE_NAIVE) {
            o->remaining_epochs = o->has_fit && isfinite(o->fit_remaining_epochs)
                                      ? o->fit_remaining_epochs
                                      : -1.0;
            o->remaining_source = SCHED_EST_FIT;
            return;
        }
        o->remaining_epochs = sched_estimate_remaining(o, s->finished_run_s, s->nfinished,
                                                       &o->remaining_source);
        return;
    }
    if (c->estimate_error > 0 || j->spec->shown_factor > 0)
        o->remaining_epochs *= j->est_factor;
}

double simulate__next_deadline(const struct sim *s)
{
    double t = INFINITY, w = s->cfg->max_wait_s;

    if (!(w > 0) || !isfinite(w))
        return INFINITY;
    for (size_t a = 0; a < s->nactive; a++) {
        const struct sim_job *j = &s->jobs[s->active[a]];
        double due = j->wait_since + w;
        if (j->gpus == 0 && due > s->now + SIM_EPS && due < t)
            t = due;
    }
    return t;
}
