/* sched_estimate: a job's remaining work from what is actually known (see
 * sched_estimate.h). The convergence fit is often wrong: a job whose loss flattened is
 * predicted to end "now" and then holds its GPUs for hours while the policies
 * think it is about to free them. So the fit may shorten a declared length only
 * when the job stops at convergence, and a job that outlived its prediction is
 * given the remaining work that finished jobs of its age had left (Gittins'
 * index idea, as Tiresias uses it), never 0. */
#include <math.h>

#include "sched_estimate.h"
#include "speed.h"

/* Below this many epochs a prediction means "now". */
#define EST_NOW_EPOCHS 1e-6

double sched_estimate_prior_s(const double *d, size_t n, double t)
{
    double sum = 0.0;
    size_t k = 0;

    if (!(t >= 0.0))
        t = 0.0;
    for (size_t i = 0; d && i < n; i++) {
        if (isfinite(d[i]) && d[i] > t) {
            sum += d[i] - t;
            k++;
        }
    }
    return k ? sum / (double)k : -1.0;
}

/* Epochs per second of the job as it runs (or would start): its speed model at
 * its current or requested count, else its observed average; 0 unknown. */
static double job_rate(const struct sched_job *j)
{
    int w = j->cur_gpus > 0 ? j->cur_gpus : j->requested_gpus;

    if (j->speed.fitted && j->model_source != SCHED_MODEL_NONE) {
        double r = sched_job_rate(j, w > 0 ? w : 1, NULL);
        if (r > 0 && isfinite(r))
            return r;
    }
    if (j->run_time > 0 && j->epochs_done > 0)
        return j->epochs_done / j->run_time;
    return 0.0;
}

/* The fallback once the fit says "now" (or there is none): prior, else elapsed. */
static double est_unknown(const struct sched_job *j, const double *finished, size_t nfinished,
                          enum sched_estimate_source *src)
{
    double t = j->run_time > 0 ? j->run_time : 0.0;
    double rem_s = sched_estimate_prior_s(finished, nfinished, t);
    double rate = job_rate(j);

    if (rem_s > 0 && rate > 0 && rem_s * rate > EST_NOW_EPOCHS) {
        *src = SCHED_EST_PRIOR;
        return rem_s * rate;
    }
    *src = SCHED_EST_ELAPSED;
    return j->epochs_done > 1.0 ? j->epochs_done : 1.0;
}

static int fit_usable(const struct sched_job *j)
{
    return j->has_fit && isfinite(j->fit_remaining_epochs) &&
           j->fit_remaining_epochs > EST_NOW_EPOCHS;
}

double sched_estimate_remaining(const struct sched_job *j, const double *finished,
                                size_t nfinished, enum sched_estimate_source *src)
{
    enum sched_estimate_source dummy;
    double declared = j->declared_epochs - (j->epochs_done > 0 ? j->epochs_done : 0.0);

    if (!src)
        src = &dummy;
    if (j->declared_epochs > 0 && isfinite(j->declared_epochs) && declared > EST_NOW_EPOCHS) {
        if (j->stops_at_convergence && fit_usable(j) && j->fit_remaining_epochs < declared) {
            *src = SCHED_EST_FIT;
            return j->fit_remaining_epochs;
        }
        *src = SCHED_EST_DECLARED;
        return declared;
    }
    if (fit_usable(j)) {
        *src = SCHED_EST_FIT;
        return j->fit_remaining_epochs;
    }
    return est_unknown(j, finished, nfinished, src);
}

void sched_estimate_apply(struct sched_job *j, const struct sched_snapshot *snap)
{
    j->remaining_epochs = sched_estimate_remaining(j, snap ? snap->finished_run_s : NULL,
                                                   snap ? snap->nfinished : 0,
                                                   &j->remaining_source);
}

const char *sched_estimate_source_name(enum sched_estimate_source s)
{
    static const char *const names[] = {"given", "declared", "fit", "prior", "elapsed"};

    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

double sched_speed_rate(const struct speed_model *sp, const struct batch_spec *b, int w,
                        double *batch)
{
    if (batch)
        *batch = 0.0;
    if (w < 1)
        return 0.0;
    if (!goodput_has_model(b))
        return speed_epochs_per_second(sp, w);
    struct batch_spec o = goodput_outlook(b);
    return goodput_best(sp, &o, w, speed_packed_nodes(sp, w), batch);
}

double sched_job_rate(const struct sched_job *j, int w, double *batch)
{
    if (j->speed.fitted)
        return sched_speed_rate(&j->speed, &j->batch, w, batch);
    if (batch)
        *batch = 0.0;
    return 0.0;
}

const struct sched_type_speed *sched_job_type_speed(const struct sched_job *j, int gpu_model)
{
    for (size_t k = 0; j->type_speeds && k < j->ntype_speeds; k++)
        if (j->type_speeds[k].gpu_model == gpu_model && j->type_speeds[k].speed.fitted)
            return &j->type_speeds[k];
    return NULL;
}

struct batch_spec sched_job_batch_on(const struct sched_job *j, int gpu_model)
{
    struct batch_spec b = j->batch;
    const struct sched_type_speed *t = sched_job_type_speed(j, gpu_model);
    if (t && t->max_local > 0)
        b.max_local = t->max_local;
    return b;
}

double sched_job_rate_on(const struct sched_job *j, int w, int gpu_model, double gpu_speed,
                         double *batch)
{
    const struct sched_type_speed *t = sched_job_type_speed(j, gpu_model);
    if (t) {
        struct batch_spec b = sched_job_batch_on(j, gpu_model);
        return sched_speed_rate(&t->speed, &b, w, batch);
    }
    double s = gpu_speed > 0 && isfinite(gpu_speed) ? gpu_speed : 1.0;
    return sched_job_rate(j, w, batch) * s;
}
