/* libringjob: what a training program links to talk to its Ringmaster worker.
 *
 * A job calls ringjob_init() once, then at every minibatch boundary
 * ringjob_report() and ringjob_poll(); the answer of ringjob_poll() says whether
 * to continue, to suspend in place, or to checkpoint and exit (resize, migration,
 * preemption). The protocol under it is described in docs/ringjob-protocol.md.
 *
 * Environment read by ringjob_init() (set by ringmaster-worker when it launches the job):
 *   RINGJOB_SOCKET          path of the unix socket of the worker's channel for this job.
 *                           Unset or empty: standalone mode; reports go nowhere and every
 *                           poll answers RINGJOB_CONTINUE, so a job runs outside Ringmaster.
 *   RINGJOB_JOB_ID          the job's id (free text, up to 63 bytes); "" when unset.
 *   RINGJOB_CHECKPOINT_DIR  directory of the job's checkpoints; "." when unset.
 *   RINGJOB_WORLD_SIZE      number of ranks of this launch; else OMPI_COMM_WORLD_SIZE; else 1.
 *   RINGJOB_LR_SCALE        factor on the learning rate of one rank (eq. 7 of DESIGN.md:
 *                           lr(w) = lr(1) * w for a constant per-rank batch); for a job with
 *                           a batch model, factor on the rate tuned at its initial batch M0,
 *                           sqrt(batch / M0) (square-root scaling). When unset: that square
 *                           root when RINGJOB_BATCH and RINGJOB_INIT_BATCH are both set, else
 *                           the world size.
 *   RINGJOB_PLAN            the execution plan chosen by the scheduler (e.g. "dp"); "dp" when
 *                           unset.
 *   RINGJOB_BATCH           the global batch (examples per step over all ranks) the scheduler
 *                           chose for a job with a batch model (docs/scheduler.md "Goodput");
 *                           unset: the job keeps its own.
 *   RINGJOB_INIT_BATCH      the job's initial global batch M0 (its spec's "batch"), the one
 *                           its learning rate is tuned at; unset: none.
 *   RINGJOB_MAX_LOCAL_BATCH the most examples one rank computes at once (its spec's
 *                           "max_local_batch", what fits in a GPU's memory); unset: no bound.
 *                           A rank whose share of RINGJOB_BATCH is larger accumulates the
 *                           gradients of ceil(share / max) micro-steps before it exchanges
 *                           them once (ringjob_max_local_batch()).
 *   OMPI_COMM_WORLD_RANK    this process's rank (set by OpenMPI's mpirun); 0 when unset.
 * Only rank 0 connects to the socket; the other ranks learn each decision from rank 0
 * through the broadcast callback (ringjob_set_broadcast()).
 *
 * Without a worker on the channel (standalone, or the worker was killed), SIGUSR1 is a planned
 * stop: the next ringjob_poll() answers RINGJOB_CHECKPOINT_EXIT on every rank. The next worker
 * of a host sends it to the jobs a killed one left running, so that they keep their training
 * in a checkpoint before it ends them. ringjob_init() takes SIGUSR1 only when the program
 * left it at its default action (which would end the process). A job suspended in place
 * whose worker goes away checkpoints and exits too (ringjob_suspended_wait()).
 *
 * The library keeps one job per process and is not thread-safe: call it from the
 * training loop's thread. Functions return 0 (or a value >= 0) on success and -1 on failure
 * with the reason in ringjob_error().
 */
#ifndef RINGJOB_H
#define RINGJOB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Answers of ringjob_poll(). */
enum ringjob_decision {
    RINGJOB_CONTINUE = 0,        /* go on with the next minibatch */
    RINGJOB_SUSPEND = 1,         /* move state off the GPU, call ringjob_suspended_wait() */
    RINGJOB_CHECKPOINT_EXIT = 2, /* write a checkpoint, ringjob_checkpoint_done(), exit */
};

/* Exit status of a planned stop: after ringjob_checkpoint_done() the program exits with
 * this status (0, so that mpirun reports success); the worker tells a planned stop from a
 * finished job by the CHECKPOINTED record it received on the channel. */
#define RINGJOB_EXIT_PLANNED 0

/* Agreement among ranks: copies len bytes of buf from rank 0 into buf on every rank, and
 * returns 0 when done or -1 on failure. An MPI program implements it with MPI_Bcast; a
 * program of one process need not register any. */
typedef int (*ringjob_broadcast_f)(void *buf, size_t len, void *ctx);

/* Reads the environment above and, on rank 0 with RINGJOB_SOCKET set, connects to the
 * worker and introduces the job. Returns 0, or -1 (socket unreachable, bad variable).
 * Calling it twice is an error. */
int ringjob_init(void);

/* Flushes pending reports, tells the worker the job is leaving, closes the channel.
 * Safe to call without ringjob_init(), and more than once. */
void ringjob_finalize(void);

/* Registers the rank agreement used by ringjob_poll() and ringjob_suspended_wait().
 * Without one, each rank decides alone, which is only right for a single process. */
void ringjob_set_broadcast(ringjob_broadcast_f fn, void *ctx);

/* Says how many steps the job will run in all (its length, counted as ringjob_report()'s
 * steps), so that the scheduler plans on it instead of guessing from the loss curve
 * (docs/scheduler.md, "Estimates"). Call after ringjob_init(), on rank 0, again when it
 * changes. Returns 0, or -1 for total < 1 or before ringjob_init(). */
int ringjob_set_total_steps(long total);

/* Records one minibatch: its step number, loss, samples processed (over all ranks) and
 * wall seconds. Only rank 0's reports are kept (others return 0 at once). Reports are
 * batched (sent without blocking by a poll once 4 KiB or 50 ms old); while the
 * worker does not read, new reports beyond the buffer (64 KiB) are dropped and counted.
 * Returns 0, or -1 before ringjob_init(). */
int ringjob_report(long step, double loss, long samples, double seconds);

/* Reports the gradient statistics of the job's recent steps, measured at its initial global
 * batch: the squared norm of the true gradient (sqr) and the variance of a one-batch
 * estimate of it (var); their ratio is the gradient noise scale from which the scheduler
 * predicts what a larger batch is worth (scheduler/goodput.h; Pollux's estimator from the
 * ranks' local gradients serves). The last report counts. Rank 0; finite, >= 0, not both 0.
 * Returns 0, or -1. */
int ringjob_report_grad(double sqr, double var);

/* Reports the most examples one rank of this job fits on its GPU at once (its largest local
 * batch there, as the job measured it: from its memory use, or by probing batches at its
 * start): the scheduler takes it as the limit on this GPU model (it differs from model to
 * model more than their memory says) and plans batches within it. The last report of a launch
 * counts. Rank 0; at least 1. Returns 0, or -1. */
int ringjob_report_fits(long max_local);

/* At a minibatch boundary, after `step` was completed: returns the decision every rank
 * takes (the same on all of them, through the broadcast), or -1. Never blocks on the
 * worker: rank 0 reads what the worker sent so far. Collective when a broadcast is set. */
int ringjob_poll(long step);

/* After RINGJOB_SUSPEND, once the program freed its GPU state: tells the worker the job is
 * suspended and blocks until the worker says resume (or asks for a checkpoint instead).
 * Returns RINGJOB_CONTINUE (restore state and go on), RINGJOB_CHECKPOINT_EXIT (asked, or the
 * worker went away: no one would resume it), or -1. Collective when a broadcast is set. */
int ringjob_suspended_wait(void);

/* Writes "<checkpoint dir>/<name>" into buf (len bytes) and creates the directory when
 * missing. Returns the length written, or -1 (ENAMETOOLONG, name with '/', mkdir failure). */
int ringjob_checkpoint_path(const char *name, char *buf, size_t len);

/* Tells the worker that the checkpoint of `step` is complete on disk (rank 0; others return
 * 0). After this the program exits with RINGJOB_EXIT_PLANNED. Returns 0 or -1. */
int ringjob_checkpoint_done(long step);

/* Tells the worker that a checkpoint of `step`, written while the job trains on (every N
 * steps, say), is complete on disk (rank 0; others return 0). The scheduler records it: when
 * a guarantee must take GPUs from running jobs, it stops the one that would lose the least
 * work since its last checkpoint (docs/scheduler.md, "Preemption"). The job goes on. Call it
 * after the file is renamed into place. Returns 0, or -1 (step < 0, not initialized, the
 * worker went away). */
int ringjob_checkpoint_saved(long step);

/* This process's rank, the world size of this launch, the learning-rate factor (for a job
 * with a batch model: to apply to the rate tuned at its initial batch, sqrt(batch / M0);
 * otherwise to the one-rank learning rate), the job id, the execution plan and the checkpoint directory
 * (borrowed strings, valid until ringjob_finalize()). Valid after ringjob_init(). */
int ringjob_rank(void);
int ringjob_world_size(void);
double ringjob_lr_scale(void);
/* The global batch the scheduler chose (RINGJOB_BATCH), 0 when it chose none: the job then
 * runs its own. Each rank takes ringjob_batch() / ringjob_world_size() examples per step.
 * The scheduler may change it while the job runs (a BATCH record, no restart): the new value,
 * and ringjob_lr_scale()'s with it, hold on every rank from the ringjob_poll() (or
 * ringjob_suspended_wait()) that took it on, i.e. for the steps after the one polled; so a job
 * reads both after each poll and runs its next step with them (examples/train-mlp.c). */
long ringjob_batch(void);
/* The job's initial global batch M0 (RINGJOB_INIT_BATCH, its spec's "batch"), 0 when unset:
 * the batch its learning rate was tuned at and its gradient statistics are measured at. */
long ringjob_init_batch(void);
/* The most examples a rank computes at once (RINGJOB_MAX_LOCAL_BATCH, the spec's
 * "max_local_batch"), 0 when unbounded: a rank whose share of the global batch is larger runs
 * it as ceil(share / max) micro-steps, summing their gradients (gradient accumulation), and
 * exchanges once a step. */
long ringjob_max_local_batch(void);
const char *ringjob_job_id(void);
const char *ringjob_plan(void);
const char *ringjob_checkpoint_dir(void);

/* 1 when connected to a worker, 0 in standalone mode (or on ranks other than 0). */
int ringjob_connected(void);

/* Text of the last failure (borrowed, never NULL). */
const char *ringjob_error(void);

#ifdef __cplusplus
}
#endif

#endif
