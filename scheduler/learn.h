/* learn: how a job is learned live from its own steps, without a round of its own (the rule,
 * written once; docs/scheduler.md "Live learning"). Every policy runs it: no GPU is kept idle
 * to explore, free GPUs are the experiments. The models come from the steps through
 * learn_fit.h (the fits: the reference model, one per GPU model measured, what the rules
 * below read of the steps) and learn_types.h (learn_round(): the round's learning, with the
 * estimates of the GPU models a job has not run on); the server's round and the simulator's
 * --speed live call learn_round(), the rules here are its parts.
 *
 * The exact rules:
 *  - A model from one size. A job whose steps were measured at a single world size
 *    (sched_job.measured_sizes 1) gets a speed model at once (learn_apply): its compute from
 *    its own measured step time, its communication from a prior that every job fitted from
 *    two sizes or more (a "teacher") teaches, per link class: theta[2..4] (the all-reduce
 *    terms, within a node) and theta[5] (across nodes), each divided by the teacher's own
 *    1-GPU step time, averaged over the teachers (theta[5] over those that measured across
 *    nodes only; theta[6] over PCIe and theta[7] across switches over those that measured
 *    the class, speed.h). The job's model is that normalised vector scaled so that it predicts the
 *    step time it measured. With no teacher, communication is 0: perfect scaling, as Pollux
 *    starts. Jobs of two sizes or more keep the fit their caller made (refined with each
 *    size); one whose sizes gave no fit (learn_fit_speed refuses a fit without compute)
 *    takes this rule at its smallest size.
 *  - Growth by experiments. A learning job (model fitted from its own steps: source FITTED
 *    with measured_max_gpus > 0, below its max_gpus) grows to at most twice the largest size
 *    it measured per step (Pollux's rule, learn_max_gpus).
 *  - A stage at each size. A running learning job keeps its size (is pinned, as hysteresis
 *    pins a job) until it measured it and ran the snapshot's stage length (explore_stage_s)
 *    since its last change; then it may be resized again without waiting
 *    min_resize_interval_s (learn_pinned): its next size is the experiment, and each size it
 *    passes is measured for a stage, as exploring measured it. The one exception is GPUs
 *    nobody else takes: once the job measured the size it holds for a quarter of a stage
 *    (learn_stage_fills), the fill may grow it into them before its stage ends.
 *  - No GPU idles while a learned job could use it. A growth step of an elastic job whose
 *    model was learned from its own steps (learn_fills_idle), which its model does not
 *    predict slower, gains at least LEARN_IDLE_GAIN (learn_step_gain): less than any step
 *    with a real gain (so it takes only GPUs that nobody gains from), more than leaving them
 *    idle. To a size not measured yet the step is an experiment, whose information is worth
 *    the restart; to a size measured, the restart penalty is weighed against remaining work
 *    that for such a job is mostly a guess (elapsed: as long again as it ran), and the issue
 *    asks that no GPU idle while an elastic job below its maximum could use it. So a restart
 *    penalty above the predicted gain never keeps free GPUs idle. And a step back to what
 *    such a job holds keeps it unless shrinking repays the restart it costs (its model
 *    predicts the held size slower by more than resize_cost_s): a job is not restarted to
 *    leave GPUs idle for a small predicted gain, nor for the warm-up steps that weigh on the
 *    mean step time of a size measured for one stage.
 *    While the job is still learning (learn_is_learning: below its max_gpus by what it
 *    measured), its steps take otherwise idle GPUs even when its model predicts them slower:
 *    a size measured for one stage is a noisy measurement (its restart's warm-up, the
 *    machine's load of the moment), the next size is the experiment that learning needs,
 *    and leaving the GPUs idle would teach nothing. Once it measured up to its max, its
 *    measurements decide (the rule above).
 *  - Per GPU model. The one-size rule above makes a job's model on each GPU model it measured
 *    at one size (learn_speed_one_size; with the job's own communication when its scaling is
 *    known from two sizes elsewhere, learn_speed_one_size_own), and a model it has not run
 *    on is estimated from the ratios the cluster's jobs measured (learn_types.h).
 *  - Free GPUs of an unseen type are free experiments: an estimate of a GPU model whose GPUs
 *    are idle is used optimistically by its uncertainty (learn_type_experiment), so that a
 *    policy tries the job there; the measurement then replaces the estimate.
 *  - Jobs with a model from a profile (source PROFILE) and jobs whose measurements are not
 *    tracked (measured_max_gpus 0) are not learning: these rules leave them as they were. */
#ifndef RINGMASTER_LEARN_H
#define RINGMASTER_LEARN_H

#include <stddef.h>

#include "sched_types.h"

/* The gain of a step into otherwise idle GPUs whose model predicts no net gain (see above):
 * positive, below any gain a policy weighs (seconds saved or completion rate per GPU). */
#define LEARN_IDLE_GAIN 1e-200

/* The prior of the communication terms, each as a fraction of a job's 1-GPU step time. */
struct learn_prior {
    double fixed;    /* theta[0] / t1 (the rest of t1 is per-example compute) */
    double intra[3]; /* theta[2..4] / t1: latency, transfer, reduction within a node */
    double inter;    /* theta[5] / t1: the jump once gradients cross nodes */
    int nintra;      /* teachers averaged into fixed and intra */
    int ninter;      /* those of them that measured across nodes, averaged into inter */
    /* Appended: the link classes (speed.h), theta[6] / t1 over PCIe inside a node and
     * theta[7] / t1 across switches, over the teachers that measured the class. */
    double pcie, cross;
    int npcie, ncross;
};

/* 1 if job j teaches the prior: its speed model was fitted from its own steps at two sizes
 * or more (source FITTED, measured_sizes >= 2, speed.fitted), not made by the one-size rule
 * (measured_step_s 0). */
int learn_is_teacher(const struct sched_job *j);

/* The prior that the teachers among jobs[0..n) teach (all zero without one). */
void learn_prior(const struct sched_job *jobs, size_t n, struct learn_prior *p);

/* The link classes a job has not measured (issue 32; learned from every job's measurements at
 * its placements): a fitted model s whose steps measured the classes of bits measured
 * (sched_job.measured_links) gets, for PCIE and CROSS not among them, the prior's fraction
 * of its own 1-GPU step time, unless its term is already positive; so a job measured only
 * inside one NVLink island is predicted slower over PCIe by what the jobs measured there
 * lost. Returns 1 if it changed s. */
int learn_links(struct speed_model *s, unsigned measured, const struct learn_prior *p);

/* Job j's speed model from its one measured size and the prior p: compute c from
 * measured_step_s = c * (1 + comm(p) at that size and its nodes), theta[0] = fixed * c,
 * theta[1] = (1 - fixed) * c / m, the communication terms p's fractions times c; fitted 1,
 * model_source FITTED. Returns 1 if it made one, 0 (j unchanged) when j has no one-size basis
 * (measured_step_gpus < 1: learn_fit_measured() sets it for one size, or for several that
 * gave no fit), keeps a fit of several sizes, its measurement is not a positive finite time,
 * or it has a model from a profile. */
int learn_model(struct sched_job *j, const struct learn_prior *p);

/* The one-size rule on a speed model s (batch_per_gpu, dataset_size as the caller's): from
 * step time t > 0 measured at world size w >= 1 over nodes nodes (<= 0: 1) with m > 0
 * examples per GPU, as learn_model() says; fitted 1. Returns 1, or 0 (s unchanged) when an
 * argument is not positive and finite. learn_model() and the per-type fit (learn_fit.h)
 * call it. */
int learn_speed_one_size(struct speed_model *s, double t, int w, int nodes, double m,
                         const struct learn_prior *p);

/* learn_speed_one_size() of a step measured over a link of class link (speed.h): the prior's
 * class terms count in its communication. learn_speed_one_size() is this with ISLAND. */
int learn_speed_one_size_linked(struct speed_model *s, double t, int w, int nodes,
                                enum speed_link link, double m, const struct learn_prior *p);

/* The one-size rule for a job whose scaling is known from its own fit own (two sizes or more,
 * on other GPU models): communication does not depend on the GPU model (the core's model,
 * plan.h), so its model at the new one keeps own's communication terms, and its compute,
 * t less that communication at (w, nodes, m), is split into theta[0] and theta[1] as own
 * splits its compute at m. Returns 1, or 0 (s unchanged) when an argument is not positive
 * and finite, own is not fitted, or its communication is above 90 % of t there (then the
 * prior's rule, learn_speed_one_size, is the caller's). */
int learn_speed_one_size_own(struct speed_model *s, double t, int w, int nodes, double m,
                             const struct speed_model *own);

/* learn_prior() of jobs[0..n), then learn_model() and learn_links() of each: what a caller
 * runs on its snapshot's jobs before sched_decide(). Returns the models made. */
size_t learn_apply(struct sched_job *jobs, size_t n);

/* 1 if j is learning: elastic, its model fitted from its own steps (source FITTED,
 * measured_max_gpus > 0) and its largest measured size below its max_gpus. */
int learn_is_learning(const struct sched_job *j);

/* The most GPUs a policy may grow j to: its max_gpus (INT_MAX when unlimited), and for a
 * learning job at most twice its largest measured size (never below what it holds). */
int learn_max_gpus(const struct sched_job *j);

/* The share of the stage length (explore_stage_s) a learning job must have run at the size it
 * holds, measured there, before the fill may grow it into otherwise idle GPUs while it is
 * still held for its stage (learn_stage_fills). */
#define LEARN_FILL_STAGE_SHARE 0.25

/* 1 if running learning job j, held for its stage (learn_pinned), may still grow into GPUs
 * that nobody else takes (the policies' fill, policies/plans.h policy_grow_fill): it measured
 * the size it holds (measured_max_gpus >= cur_gpus) and ran there for LEARN_FILL_STAGE_SHARE
 * of the stage. The stage keeps a job at its size against the doublings and any shrink; idle
 * GPUs are free experiments (#31: no GPU idles while an elastic job below its maximum could
 * use it), and learn_max_gpus still bounds the growth to twice what it measured. 0 for a
 * job that does not run. */
int learn_stage_fills(const struct sched_snapshot *snap, const struct sched_job *j);

/* How j's growth steps take otherwise idle GPUs (learn_step_gain): 0 not (no model learned
 * from its own steps: not elastic, source not FITTED or measured_max_gpus 0), 2 while it is
 * learning (learn_is_learning), 1 once it measured up to its max. */
int learn_fills_idle(const struct sched_job *j);

/* For a learning job j that runs (cur_gpus > 0): 1 while it must keep its size, that is
 * until it measured the size it holds (measured_max_gpus >= cur_gpus) and held it for the
 * snapshot's stage length (explore_stage_s(snap)); then 0, whatever min_resize_interval_s
 * says. 0 for a job that does not run. The policies' policy_pinned() asks it of learning
 * jobs instead of the interval. */
int learn_pinned(const struct sched_snapshot *snap, const struct sched_job *j);

/* A growth step's gain as a policy weighs it, gain, for a job with fills =
 * learn_fills_idle(), with predicted times t1 before and t2 after (seconds to finish), and
 * avoided the restart that taking the step avoids (resize_cost_s for a step back to what
 * the job holds, else 0): gain, or LEARN_IDLE_GAIN when gain is not positive, t2 is finite
 * and fills is 2, or fills is 1 and t2 <= t1 + avoided (the model does not predict it
 * slower than the alternative). */
double learn_step_gain(int fills, double gain, double t1, double t2, double avoided);

/* How many sigmas of its uncertainty an ESTIMATED type entry is made faster by while GPUs of
 * its type are idle (learn_type_experiment). */
#define LEARN_EXPERIMENT_SIGMAS 1.0

/* Free GPUs are free experiments: an ESTIMATED entry t (never run there) whose type has
 * idle_gpus > 0 free GPUs in the snapshot is used optimistically, so that a policy tries the
 * job there when nothing else uses those GPUs; the measurement then replaces the estimate.
 * Its compute terms (theta[0], theta[1]) are the faster of: times
 * exp(-LEARN_EXPERIMENT_SIGMAS * uncertainty), and the compute of best (the job's fastest
 * MEASURED model, NULL: none), a short probe at parity with the best GPU it ran on. The
 * second is what lets each job try each idle type once: the ratios other jobs measured say
 * little of it (a job 4x slower on an A100 than on a T4 beside one 4x faster), and one job's
 * probe of a type otherwise settles every other job's estimate there. Other entries, and
 * estimates of a type without idle GPUs, are left as they are. Returns 1 if it changed t. */
int learn_type_experiment(struct sched_type_speed *t, int idle_gpus,
                          const struct speed_model *best);

#endif
