/* progress: a job's declared length, its examples per GPU, and what it has to go in epochs
 * and seconds (progress.h). */
#include "progress.h"

#include <limits.h>
#include <math.h>

#include "sched.h"

double progress_declared_epochs(const struct progress_declared *d, int w)
{
    if (d->epochs > 0)
        return d->epochs;
    if (d->model_epochs > 0)
        return d->model_epochs;
    if (d->steps <= 0 || !(d->dataset_size > 0))
        return 0;
    return d->epochs_done +
           fmax(0, (double)d->steps - d->last_step) * progress_epochs_per_step(d, w);
}

double progress_epochs_per_step(const struct progress_declared *d, int w)
{
    const struct batch_spec *b = d->batch;
    if (!(d->dataset_size > 0))
        return 0;
    if (b && goodput_has_model(b))
        return b->init_batch * goodput_gain(b, b->batch > 0 ? b->batch : b->init_batch) /
               d->dataset_size;
    /* The steps to go run at the size it runs now: its examples a step there, not the mean
     * of the sizes it ran at (two equal jobs, one grown sooner, were 170 and 293 epochs). */
    if (w > 0 && d->batch_per_gpu > 0)
        return (double)w * d->batch_per_gpu / d->dataset_size;
    if (d->last_step > 0 && d->epochs_done > 0)
        return d->epochs_done / d->last_step;
    return 0;
}

double progress_remaining_steps(const struct progress_declared *d, double epochs, int declared,
                                int w)
{
    if (!(epochs >= 0) || !isfinite(epochs))
        return -1;
    if (declared && d->steps > 0 && !(d->epochs > 0) && !(d->model_epochs > 0)) {
        double left = ceil((double)d->steps - fmax(0, d->last_step));
        return left >= 1 ? left : epochs > 0 ? 1 : 0;
    }
    double per_step = progress_epochs_per_step(d, w);
    if (!(per_step > 0) || !isfinite(per_step))
        return -1;
    double steps = ceil(epochs / per_step - 1e-9);
    return steps >= 1 || !(epochs > 0) ? fmax(steps, 0) : 1;
}

int progress_batch_per_gpu(const struct batch_spec *b, int batch_per_gpu, int gpus)
{
    if (!b || !goodput_has_model(b))
        return batch_per_gpu;
    long m = lround(b->init_batch / (gpus > 0 ? gpus : 1));
    return m < 1 ? 1 : m > INT_MAX ? INT_MAX : (int)m;
}

double progress_fit_epochs(const struct progress_fit *f, int w)
{
    if (!f->conv->fitted || w < 1)
        return -1;
    double spe = f->dataset_size / (w * f->batch_per_gpu);
    double steps = conv_steps_to_converge(f->conv, f->last_step, spe, PROGRESS_LOSS_TOLERANCE);
    return isfinite(steps) ? steps / spe : -1;
}

double progress_remaining_epochs(int has_estimate, double estimate, double target_epochs,
                                 double epochs_done, const struct progress_fit *f, int w)
{
    if (has_estimate)
        return estimate;
    if (target_epochs > 0)
        return fmax(0, target_epochs - epochs_done);
    return progress_fit_epochs(f, w);
}

double progress_remaining_s(double epochs, const struct speed_model *sp, const struct batch_spec *b,
                            int w)
{
    if (w < 1)
        return -1;
    double eps = sched_speed_rate(sp, b, w, NULL);
    return epochs >= 0 && eps > 0 && isfinite(eps) ? epochs / eps : -1;
}
