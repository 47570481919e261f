/* progress: how far a job is and how much it has to go, from plain inputs, so that the live
 * scheduler and the simulator count a job's length the same way: the epochs it declared
 * (epochs, or total steps turned into epochs with goodput arithmetic), the examples per GPU
 * its speed model counts, the epochs to go by its convergence fit, its remaining epochs, the
 * steps they are and the seconds they take at w GPUs. */
#ifndef RINGMASTER_PROGRESS_H
#define RINGMASTER_PROGRESS_H

#include "convergence.h"
#include "goodput.h"
#include "speed.h"

/* An epoch improving the loss by less than this counts as converged. */
#define PROGRESS_LOSS_TOLERANCE 0.001

/* What a job says of its length, and what it has done. */
struct progress_declared {
    double epochs;                  /* the epochs it declared; <= 0: none */
    double model_epochs;            /* its model's "epochs" (or its class's); <= 0: none */
    long long steps;                /* its total steps (declared, or reported); <= 0: none */
    double dataset_size;            /* examples per epoch; not above 0: steps cannot count */
    double epochs_done;             /* epochs counted so far (at its initial batch M0) */
    double last_step;               /* the last step it reported */
    double batch_per_gpu;           /* examples per GPU per step, as its steps measured them
                                     * (else as declared); <= 0: unknown */
    const struct batch_spec *batch; /* its batch model (goodput_has_model), or none */
};

/* The epochs a job declared: epochs, else model_epochs, else its total steps, the steps to go
 * at what a step does at the w GPUs it runs on now: with a batch model a step of its current
 * batch M does gain(M) steps' worth at M0 (epochs counted at M0, as epochs_done are), else its
 * batch at w GPUs (w batch_per_gpu, the examples per GPU its steps measured), else (w < 1 or
 * no batch_per_gpu) the samples per step it has run so far (epochs_done / last_step), which
 * mix every size it ran at; 0 when none of these is known. */
double progress_declared_epochs(const struct progress_declared *d, int w);

/* The epochs one of its steps does at w GPUs, by progress_declared_epochs()'s arithmetic
 * (ignores epochs, model_epochs and steps): gain(M) steps' worth at M0 with a batch model, else
 * w batch_per_gpu examples over dataset_size, else (w < 1 or batch_per_gpu <= 0) the epochs per
 * step it has run so far; 0 when unknown (no dataset size, none of these). */
double progress_epochs_per_step(const struct progress_declared *d, int w);

/* The steps its remaining epochs (< 0 unknown) are at w GPUs: with declared (the estimate is
 * its declared length less what it did) and its length in steps (d->steps > 0, no epochs nor
 * model_epochs), its steps less the last it reported (at least 1 while any epochs remain),
 * else epochs over progress_epochs_per_step(); -1 when unknown. Rounded up: a job with work
 * left has at least one step to go. */
double progress_remaining_steps(const struct progress_declared *d, double epochs, int declared,
                                int w);

/* The examples per GPU its speed model counts: batch_per_gpu, or with a batch model b its
 * initial global batch over the gpus it asked for (<= 0: 1), rounded, within 1..INT_MAX. */
int progress_batch_per_gpu(const struct batch_spec *b, int batch_per_gpu, int gpus);

/* A convergence fit and what it counts from: the loss curve fitted (conv), the last step,
 * dataset_size examples an epoch, batch_per_gpu examples per GPU per step. */
struct progress_fit {
    const struct conv_model *conv;
    double last_step;
    double dataset_size;
    double batch_per_gpu; /* as speed_model.batch_per_gpu */
};

/* Epochs to go by the convergence fit alone at world size w (0: converged); -1 when it is not
 * fitted, w < 1 or it never converges. */
double progress_fit_epochs(const struct progress_fit *f, int w);

/* Remaining epochs at world size w (< 0 unknown): the estimate when has_estimate, else
 * target_epochs (> 0) less epochs_done (at least 0), else progress_fit_epochs(f, w). */
double progress_remaining_epochs(int has_estimate, double estimate, double target_epochs,
                                 double epochs_done, const struct progress_fit *f, int w);

/* Seconds the remaining epochs (< 0 unknown) take at w GPUs, at sched_speed_rate() (with a
 * batch model its goodput as the policies plan it); -1 when unknown, w < 1 or the rate is not
 * positive and finite. */
double progress_remaining_s(double epochs, const struct speed_model *sp, const struct batch_spec *b,
                            int w);

#endif
