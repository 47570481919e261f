/* goodput: what a job's steps are worth at a given global batch size.
 *
 * A larger batch is not free progress: past the gradient noise scale, more examples per step
 * stop making the step much better (Pollux, Qiao et al., OSDI 2021; McCandlish et al. 2018).
 * The job's work is counted at its initial global batch M0, and one step at batch M does
 *
 *   gain(M) = (var + sqr) / (var / s + sqr),   s = M / M0,
 *
 * steps' worth of progress at M0, where sqr and var are the squared norm and the variance of
 * the gradient measured at M0 (var / sqr * M0 is the noise scale). The statistical efficiency
 * of batch M is gain(M) / s: 1 at M0, falling towards 1/s when the gradient noise is small.
 *
 * Goodput, in epochs at M0 per second on w GPUs over n nodes:
 *
 *   M0 * gain(M) / (t_step(w, n, M) * dataset_size)
 *
 * where t_step is the speed model's step time at M / w examples per GPU; above the job's
 * largest local batch a step accumulates gradients over k + 1 micro-steps of M / (w (k + 1))
 * examples, which costs k more compute (speed model at one GPU) but no more all-reduce.
 *
 * A fixed-batch job keeps M whatever its GPUs (strong scaling: its local batch shrinks as it
 * grows); an adaptive one may run any M in [M0, max_batch]. Without a batch model
 * (init_batch <= 0) a job keeps its examples per GPU as it grows (weak scaling), as
 * speed_epochs_per_second() says. Pure: no I/O, no state. */
#ifndef RINGMASTER_GOODPUT_H
#define RINGMASTER_GOODPUT_H

#include "speed.h"

/* How many candidate batch sizes goodput_best() tries between its bounds (geometric). */
#define GOODPUT_CANDIDATES 48

struct batch_spec {
    double init_batch; /* M0 > 0: the global batch its work is counted at; <= 0: no model */
    double batch;      /* the global batch it runs now; <= 0: init_batch */
    double max_batch;  /* adaptive: the largest global batch; <= init_batch: init_batch */
    double min_local;  /* fewest examples per GPU per step; <= 0: 1 */
    double max_local;  /* most examples per GPU per micro-step before accumulating; <= 0: none */
    int adaptive;      /* 1: the scheduler may choose the batch in [init_batch, max_batch] */
    double grad_sqr;   /* gradient statistics at init_batch (the job's last report); */
    double grad_var;   /* both 0 (nothing reported): efficiency taken as 1 */
};

/* Whether the job has a batch model (init_batch > 0). */
int goodput_has_model(const struct batch_spec *b);

/* Progress of one step at global batch m, in steps at init_batch (>= 1 for m >= M0). */
double goodput_gain(const struct batch_spec *b, double m);

/* Statistical efficiency of batch m: goodput_gain / (m / init_batch), in (0, 1]. */
double goodput_efficiency(const struct batch_spec *b, double m);

/* Seconds per step of global batch m on w GPUs over nodes nodes, with gradient
 * accumulation above max_local (*accum, may be NULL, gets the extra micro-steps).
 * INFINITY when the speed model is not fitted, w < 1, or m / w < min_local. */
double goodput_step_time(const struct speed_model *sp, const struct batch_spec *b, int w,
                         int nodes, double m, int *accum);

/* Epochs at init_batch per second at global batch m on w GPUs over nodes nodes
 * (0 where goodput_step_time is infinite or the dataset size unknown). */
double goodput_rate(const struct speed_model *sp, const struct batch_spec *b, int w, int nodes,
                    double m);

/* The batch the job runs at on w GPUs over nodes nodes: its batch when fixed; when adaptive,
 * the one of GOODPUT_CANDIDATES geometric steps in [max(M0, w * min_local), max_batch] (and
 * its current batch) with the highest goodput_rate. Sets *batch (may be NULL) and returns the
 * rate (0 when no batch is feasible there). */
double goodput_best(const struct speed_model *sp, const struct batch_spec *b, int w, int nodes,
                    double *batch);

/* A batch that w GPUs can run when there is no model to choose one by: m itself when it is
 * feasible there; else, for an adaptive job, m moved into [max(M0, w * min_local), max_batch]
 * (a job grown from 2 to 8 GPUs must not keep a batch of 3 examples per GPU). A fixed batch
 * is returned as it is. */
double goodput_runnable(const struct batch_spec *b, int w, double m);

/* The batch spec the policies plan a job's remaining time with. A fixed-batch job's
 * gradient statistics are those of its last report, but its noise scale grows as it trains
 * (McCandlish et al. 2018: by orders of magnitude): at its first epochs the gradient is large
 * and consistent, and a large batch is worth little more than its initial one (deepspeech2
 * at 640 = 32 x M0: gain 1.6 in its first epoch, 10 by its fourth, 20 by its tenth; in every
 * measured profile the noise scale passes 32 x M0 within about ten epochs). Extrapolated over
 * all of its remaining work, that first report makes the job look 10-20 times longer than it
 * is, and a shortest-remaining-first policy leaves it at its base for hours (issue 18). So
 * for a fixed batch M above M0 the noise scale is taken as at least M (the batch its user
 * chose to train at throughout): grad_var >= (M / M0) grad_sqr, an efficiency of at least
 * about 1/2 at M. Adaptive jobs (the core chooses their batch from the statistics as they
 * are) and jobs without statistics are returned unchanged. */
struct batch_spec goodput_outlook(const struct batch_spec *b);

#endif
