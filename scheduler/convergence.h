/* convergence: a job's training-loss curve l(k) = 1/(b0*k + b1) + b2, with
 * b0, b1, b2 >= 0 (Optimus; DESIGN.md "Models"), fitted to (step, loss) points. */
#ifndef RINGMASTER_CONVERGENCE_H
#define RINGMASTER_CONVERGENCE_H

#include <stddef.h>

struct conv_model {
    double b0, b1, b2;
    double rmse;    /* root mean squared error of the fit on its points */
    size_t npoints; /* points the fit used */
    int fitted;     /* 1 once a fit succeeded */
};

/* Fits the model to n points (steps[i], losses[i]); needs n >= 3, finite steps
 * >= 0 and finite, positive losses. The fit minimises the squared error in loss
 * space (see convergence.c). Returns 0, or -1 with errno EINVAL (too few or bad
 * points) or ENOMEM, leaving *out unchanged. */
int conv_fit(const double *steps, const double *losses, size_t n, struct conv_model *out);

/* Predicted loss at step k (INFINITY where b0*k + b1 == 0). */
double conv_loss(const struct conv_model *m, double k);

/* Steps still needed from step k until the loss reaches target; 0 if already
 * there, INFINITY if the model never gets there (target <= b2). */
double conv_steps_to_loss(const struct conv_model *m, double k, double target);

/* Steps still needed from step k until one more epoch (steps_per_epoch steps)
 * improves the loss by less than tol; 0 if that already holds (or b0 == 0, or
 * steps_per_epoch <= 0); INFINITY if tol <= 0. */
double conv_steps_to_converge(const struct conv_model *m, double k, double steps_per_epoch,
                              double tol);

/* Incremental fitting: points accumulate (bounded, oldest thinned evenly when
 * full) and conv_fitter_refit() refits from them. Cheap enough to call per
 * report. The struct is plain data so the core can embed it in a job.
 * Thinning: when the buffer is full, every other point of its older half is
 * dropped (the first point always stays), so recent points stay dense. */
#define CONV_FITTER_MAX_POINTS 256
struct conv_fitter {
    double steps[CONV_FITTER_MAX_POINTS];
    double losses[CONV_FITTER_MAX_POINTS];
    size_t n;
    struct conv_model model;
};

void conv_fitter_init(struct conv_fitter *f);
/* Adds one point; a negative or non-finite step, or a non-finite or non-positive
 * loss, is ignored (returns -1, EINVAL). */
int conv_fitter_add(struct conv_fitter *f, double step, double loss);
/* Refits from the points so far; returns 0, or -1 (EINVAL: too few points;
 * ENOMEM) keeping the previous model. */
int conv_fitter_refit(struct conv_fitter *f);

#endif
