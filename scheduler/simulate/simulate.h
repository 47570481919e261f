/* simulate: the discrete-event simulation engine behind ringmaster-sim. It
 * drives the scheduling core exactly as ringmasterd does (a snapshot in, a
 * decision out, see sched.h) over a virtual clock: jobs arrive, a round runs
 * every interval and on each arrival and completion, a job whose allocation
 * changes after its start pays a checkpoint-stop-restart delay, and a running
 * job progresses at its TRUE speed model. What the policy sees of a job's
 * speed is kept apart from that truth (enum simulate_view).
 *
 * Pure: no I/O, no clock, no threads. Deterministic for a given input and seed. */
#ifndef RINGMASTER_SIMULATE_H
#define RINGMASTER_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "speed.h"

/* The measured gradient statistics of a job over its training (the profiles' validation
 * runs): run r trained at global batch batch[r] (ascending); row k of it is its k-th epoch
 * over the data, with its progress at the end in epochs at the job's init_batch and that
 * epoch's sqr and var at init_batch. Arrays are nruns * nepochs, run-major. The truth of a
 * job at progress p and batch m: the epoch the runs have reached at p (the furthest of
 * them), its statistics interpolated linearly in batch between the two runs around m. */
struct simulate_grad {
    size_t nruns, nepochs;
    const double *batch;
    const double *progress;
    const double *sqr, *var;
    /* Appended (issue 34): each run's validation error after each epoch, the best so far
     * (lower is better: an accuracy as 1 - it), nruns x nepochs like progress, and the error
     * its user stops at (target_error); NULL: the job reports none. */
    const double *error;
    double target_error;
};

/* One job of a workload, as the simulator knows it. */
struct simulate_job_spec {
    int64_t id;
    double submit_time;     /* seconds, >= 0 */
    int requested_gpus;     /* >= 1 */
    int min_gpus, max_gpus; /* 1 <= min <= requested <= max */
    int elastic;
    int priority;
    double epochs;            /* work to do, > 0 */
    struct speed_model speed; /* the true speed (fitted, with m and dataset size) */

    /* Execution plans (plan.h); zero: none. The true step time of a job with
     * plan info, or on a node whose gpu_speed is not 1, is plan_step_time() of
     * the plan the decision gives it on its GPUs' model; a plan change while
     * running is a restart (resize_cost_s, counted as a resize). */
    struct plan_spec plan;
    /* Appended for Gandiva: what the job uses of one GPU alone (0..1, <= 0
     * unknown, taken as 1) and its GPU memory (0 unknown); shown to the policy
     * and used by the packing interference model (simulate_pack_factor). */
    double gpu_util;
    double gpu_mem_bytes;
    /* Appended for fair share: the user it belongs to (sched_job.user_id). */
    int64_t user;
    /* Appended for goodput (goodput.h): the job's batch model, its epochs counted at
     * batch.init_batch; batch.batch is the one it starts at. Its true rate is its goodput
     * on its GPUs' nodes at the batch it runs at (the decision's), with the gradient
     * statistics of grad (NULL: batch.grad_sqr and grad_var throughout); the policy is
     * shown the model with the statistics of the moment, as the job reports them. */
    struct batch_spec batch;
    const struct simulate_grad *grad;
    /* Appended for heterogeneous clusters: the job's TRUE speed on each GPU model it was
     * measured on (ntypes entries, sched_type_speed: absolute models, each with that model's
     * largest local batch). On a node whose gpu_model has an entry the job runs at that
     * model (no gpu_speed factor); elsewhere as above. The policies see them only under
     * simulate_config.show_type_speeds; else speed times gpu_speed, one factor per model. */
    const struct sched_type_speed *types;
    size_t ntypes;
    /* Appended (issue 33): > 0, the time by which the job should finish (submit + lambda x
     * its time alone at its request, sim/workload.c); shown to the policies as
     * sched_job.deadline unless simulate_config.hide_deadlines. 0: none. */
    double deadline;
    /* Appended for forecasts (outlook.h): a run that starts from a live state. A job with
     * start_gpus > 0 already runs when the run starts (simulate_config.start_time) on the
     * start_gpus GPUs of start_slots, with no restart at its first round if the policy keeps
     * them, having trained start_epochs_done of its epochs (< epochs), held GPUs start_run_s
     * seconds, its allocation last changed at start_last_change. shown_factor > 0: the
     * policies are shown its remaining work times this factor (a forecast shows them the
     * live estimate while the truth is a sample), in place of estimate_error's factor. */
    const struct sched_slot *start_slots;
    int start_gpus;
    double start_epochs_done, start_run_s, start_last_change;
    double shown_factor;
    /* Appended (issue 34, simulate_config.estimate_declared): > 0, the length its user
     * declared, in epochs as `epochs` counts them (the policies then see it, not `epochs`,
     * which the engine still trains); 0: none declared. */
    double declared_epochs;
};

/* What the policy is shown of each job's speed. */
enum simulate_view {
    SIMULATE_VIEW_PROFILE,  /* the true model, model_source PROFILE (Precompute) */
    SIMULATE_VIEW_EXPLORED, /* a model fitted to the (w, step time) points observed
                               while the job ran, shown (model_source FITTED) once
                               the job has run explore_slice_s at each of 1, 2, 4, 8
                               GPUs that its bounds allow; NONE before (Exploratory).
                               Until then the job runs on its first unfinished
                               stage's size among the GPUs it holds (the policy
                               reserves 8), restarting (resize_cost_s) between
                               stages */
};

struct simulate_config {
    const struct sched_node *nodes;
    size_t nnodes;
    const struct sched_policy_ops *policy;
    enum simulate_view view;
    double interval_s;      /* periodic round interval, > 0 (60 by default) */
    double resize_cost_s;   /* delay without progress after a change, >= 0 (10) */
    double min_resize_interval_s; /* passed to the policy in every snapshot, >= 0
                                     (SCHED_MIN_RESIZE_INTERVAL_S) */
    double explore_slice_s; /* VIEW_EXPLORED: a round also runs when a job has run
                               this long at its current size of 1, 2, 4 or 8
                               (SCHED_EXPLORE_STAGE_S) */
    double noise;           /* VIEW_EXPLORED: relative step-time noise, 0..0.5 (0.02) */
    uint64_t seed;
    /* Appended for Gandiva (policies with time_slices; docs/gandiva.md). */
    double quantum_s;       /* passed in every snapshot (SCHED_QUANTUM_S) */
    double suspend_cost_s;  /* a suspended job resuming on the node it left pays
                               this instead of resize_cost_s (1 s: moving a GPU
                               job's state to host memory and back over PCIe) */
    double pack_kappa;      /* interference of a packed pair (0.25) */
    double gpu_mem_bytes;   /* memory of one GPU, passed to the policy (0: unknown) */
    /* Appended: what the policies know of remaining work (docs/simulator.md
     * "Imperfect knowledge"), and the guarantees of guarantee.h. The truth stays
     * in the engine; only the snapshot's remaining_epochs changes. */
    double estimate_error;  /* sigma >= 0: each job's remaining work as shown is
                               the truth times exp(N(0, sigma)), one factor per
                               job and seed (simulate_estimate_factor); 0: truth */
    int estimate_live;      /* 1: remaining work from a convergence fit of the
                               losses the job reported so far, through
                               sched_estimate_remaining() (prior of the run's
                               finished jobs, elapsed); estimate_error unused.
                               SIMULATE_LIVE_NAIVE: the fit's number as it is
                               (0 once it says "now"), unknown (-1) without a
                               fit: what a server without those rules shows */
    double loss_noise;      /* live: relative noise of a reported loss (0.03) */
    double max_wait_s;      /* passed in every snapshot; 0: off; the engine also
                               runs a round when a waiting job reaches it */
    const struct sched_user *users; /* passed in every snapshot */
    size_t nusers;
    /* Appended: 1 shows each job's true per-GPU-model speeds (simulate_job_spec.types) to
     * the policies (sched_job.type_speeds, the oracle); 0 (default) shows only its speed
     * model, which the policies scale by each model's gpu_speed. */
    int show_type_speeds;
    /* Appended: 1 (--speed live) shows the policies no speed model at first: the engine
     * reports each job's steps as it runs (mean seconds per step per world size, nodes and
     * GPU model, each with a relative noise of up to `noise`, drawn once per job and
     * placement), and each round the core's learning makes the snapshot's models from them
     * as the server's round does (learn_fit.h: the reference model from two sizes or more,
     * learn_types.h learn_round: one-size models, a model per GPU model measured, estimates
     * of the others); show_type_speeds is then unused. */
    int speed_live;
    /* Appended: 1 hides the jobs' deadlines from the policies (the same run as without them,
     * for the other jobs' JCT), while the results still count the deadlines met. */
    int hide_deadlines;
    /* Appended (issue 32): 1 shows the policies a topology-blind cluster: the nodes without
     * their NVLink islands, switches and racks, and the jobs' speed models without link
     * classes (theta[6], theta[7] 0, gpus_per_island 0); the truth still charges each job the
     * classes its GPUs span (apply.c). 0 (default): the policies see the topology. */
    int topology_blind;
    /* Appended (issue 33 item 6, preempt.h): checkpoints and what a preemption loses.
     * checkpoint_every_s > 0: each job checkpoints every this many seconds of its progress
     * (and at each planned change: a resize, a migration, a suspension keeps its state), and
     * a job preempted (left without GPUs, not suspended) goes back to its last checkpoint:
     * the progress since is lost and redone. 0 (default): a preemption loses nothing (as if
     * the job checkpointed at the stop), as before. The policies are shown each job's last
     * checkpoint (sched_job.last_checkpoint_time); min_runtime_s and preempt_order are passed
     * in every snapshot. */
    double checkpoint_every_s;
    double min_runtime_s;
    enum sched_preempt_order preempt_order;
    /* Appended for forecasts (outlook.h): the clock when the run starts (>= 0; the jobs
     * submitted by then are there at once, those of simulate_job_spec.start_gpus running),
     * and, when until > start_time, the time it stops: a job not started by then has
     * start_time -1 in the result, one not finished finish_time -1, and a run whose waiting
     * jobs can get no GPUs ends there instead of failing. 0 and 0: from 0 to the end. */
    double start_time;
    double until;
    /* Appended (issue 34, `pollux --estimate declared`): 1 shows the policies each job as its
     * user submitted it: its declared_epochs as its length, and with a grad whose runs report
     * an error, stops_at_convergence with a fit of the errors it reported at each epoch end
     * (interpolated at its batch, as its statistics are) to its target_error; remaining work
     * then comes from sched_estimate_remaining() alone (declared, fit, prior of the run's
     * finished jobs, elapsed). estimate_error and estimate_live unused. */
    int estimate_declared;
};

/* Fills *cfg with the defaults above (no nodes, no policy). */
void simulate_config_init(struct simulate_config *cfg);

/* Called after every round with the snapshot the policy saw and its decision;
 * both are valid only during the call. */
typedef void (*simulate_round_f)(const struct sched_snapshot *snap, const struct sched_decision *d,
                                 void *arg);

struct simulate_job_result {
    int64_t id; /* start_time, finish_time: -1 when it had not started, finished by until */
    double submit_time, start_time, finish_time;
    double jct_s;       /* finish - submit */
    double queue_s;     /* first start - submit */
    double gpu_seconds; /* GPUs held * time held */
    int resizes;        /* allocation changes after the first start */
    /* Appended for Gandiva. */
    double first100_s;  /* submit to the end of its 100th minibatch (to its finish
                           if it runs fewer) */
    double steps;       /* minibatches run */
    int suspends;       /* times suspended in place (time-slicing) */
    int packs;          /* times packed with another job */
    int migrations;     /* moves at the same count (checkpoint-restart) */
    /* Appended. */
    int64_t user;
    double max_wait_s;  /* its longest runnable wait: from submission or from
                           losing its GPUs to getting GPUs again */
    /* Appended (issue 33): its deadline (0: none) and 1 when it finished by it. */
    double deadline;
    int deadline_met;
};

struct simulate_result {
    struct simulate_job_result *jobs; /* njobs entries, in spec order */
    size_t njobs;
    double avg_jct_s, median_jct_s, p95_jct_s;
    double makespan_s; /* last completion - first submission */
    double avg_queue_s;
    double utilization; /* GPU-seconds allocated / (cluster GPUs * makespan) */
    long resizes;
    long rounds;
    int max_gpus_in_use; /* the most GPUs held at once: never above capacity */
    /* Appended for Gandiva. */
    double avg_first100_s;   /* mean time to the first 100 minibatches */
    double steps_per_s;      /* all jobs' minibatches / makespan */
    double jobs_per_hour;    /* jobs / makespan */
    long suspends, packs, pack_reverts, migrations; /* packs, reverts: pairs */
    int max_jobs_on_gpu;     /* the most jobs on one GPU at once: 1, or 2 packed */
    /* Appended. */
    double p99_jct_s;
    double max_queue_s;      /* the longest runnable wait of any job (max_wait_s) */
    /* Appended: GPU-seconds left idle (on up nodes, held by no job) while an elastic job that
     * had arrived and not finished held fewer than its max_gpus, over the cluster's
     * GPU-seconds of the makespan (total GPUs x makespan). */
    double idle_wanted_frac;
    /* Appended: of those, the GPU-seconds that a running elastic job below its max_gpus would
     * have finished sooner with, by its true model and its restart counted (grown into the
     * free GPUs of its GPU model, or moved onto another's), over the same total: what a
     * policy left idle that it could have used. */
    double idle_usable_frac;
    /* Appended (issue 32): the placements (starts, resizes, moves) of more than one GPU that
     * fit one node (at most its largest node's GPUs) and those of them on one node; likewise
     * for the NVLink islands (sched_node.island; 0 and 0 when no node knows its islands). */
    long fit_node, on_node, fit_island, on_island;
    /* Appended: global batches changed in place (sched_batch_in_place: no restart, none of
     * the resize cost). */
    long batch_changes;
    /* Appended (issue 33): the jobs with a deadline, those that finished by it, and the mean
     * JCT of the jobs without one (the whole mean when no job has a deadline). */
    long deadlines, deadlines_met;
    double avg_jct_other_s;
    /* Appended (issue 33 item 6): running jobs left without GPUs and not suspended (their
     * restart goes through a checkpoint), and the GPU-seconds those preemptions lost: the
     * progress since each one's last checkpoint (redone, checkpoint_every_s > 0) plus the
     * restart delay of its next start (resize_cost_s on the GPUs it then gets). */
    long preemptions;
    double lost_preemption_gpu_s;
    double lost_redo_gpu_s; /* of which the progress redone */
};

/* Runs the workload to completion. Checks after every round that no GPU is
 * given twice or beyond its node, that allocations are on up nodes and of one
 * GPU model per job, that no node's advertised CPU cores or host memory are
 * over-committed (the plans' per-GPU demand), and that time never goes back; fails if it does, or if no job can run any more.
 * Returns a new result (free with simulate_result_destroy), or NULL with errno
 * (EINVAL bad input, ENOMEM, EPROTO invariant broken or policy stuck) and a
 * message in err. on_round may be NULL. */
struct simulate_result *simulate_run(const struct simulate_config *cfg,
                                     const struct simulate_job_spec *jobs, size_t njobs,
                                     simulate_round_f on_round, void *arg, char *err,
                                     size_t errlen);

void simulate_result_destroy(struct simulate_result *r);

/* The packing interference model: each job of a pair packed on one GPU runs
 * at this fraction of its rate alone, 1 / (max(1, U) * (1 + kappa * U)) with
 * U = util_a + util_b (each <= 0 taken as 1): the GPU's compute is shared
 * when U > 1, and contention for memory bandwidth and caches grows with U.
 * With kappa 0.25 the pair's normalised rates sum to 1.74 at U = 0.6, 1.60 at
 * 1.0, 1.28 at 1.2 and 0.89 at 1.6 (a loss). */
double simulate_pack_factor(double util_a, double util_b, double kappa);

/* The factor on job id's remaining work under estimate_error sigma:
 * exp(sigma * z), z standard normal drawn from (seed, id); 1 when sigma <= 0. */
double simulate_estimate_factor(uint64_t seed, int64_t id, double sigma);

#define SIMULATE_LIVE_NAIVE 2

/* The true loss curve of a job under estimate_live (epochs as steps): b0, b1,
 * b2 drawn from (seed, id) so that one more epoch improves the loss by
 * exactly *tol at epoch *conv_at, drawn uniformly in [0.4, 1] of epochs (the
 * job's length): a job's loss flattens before it ends (it trains a fixed
 * schedule it did not declare), and a fit of its losses then says "now"
 * while it still runs, as live fits do. */
void simulate_loss_curve(uint64_t seed, int64_t id, double epochs, struct conv_model *m,
                         double *tol, double *conv_at);

/* Deterministic PRNG (splitmix64) for workloads and tie-breaks. */
uint64_t simulate_rng_next(uint64_t *state);
/* Uniform in [0, 1). */
double simulate_rng_uniform(uint64_t *state);
/* Exponential with the given mean. */
double simulate_rng_exponential(uint64_t *state, double mean);

#endif
