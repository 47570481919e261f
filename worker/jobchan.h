/* jobchan: the worker's end of one job's channel to libringjob (docs/ringjob-protocol.md).
 *
 * A jobchan listens on a unix socket whose path the worker passes to the job as
 * RINGJOB_SOCKET. Rank 0 of the job connects, sends its minibatch reports (kept here
 * until the caller takes them as a batch to forward to the server) and its
 * acknowledgements; the worker gives commands (suspend, resume, checkpoint-exit, a new
 * global batch), which are written to the job at once, or when it connects, and which the
 * job takes at its next minibatch boundary.
 *
 * Poll-driven and single-threaded: the caller's event loop adds the descriptors of
 * jobchan_pollfds() to its poll() set and hands the results to jobchan_handle(), or simply
 * calls jobchan_run(). Nothing blocks. One job connection at a time; when it closes, a
 * later launch of the job may connect again.
 */
#ifndef RINGMASTER_JOBCHAN_H
#define RINGMASTER_JOBCHAN_H

#include <poll.h>
#include <stddef.h>

struct jobchan;

enum jobchan_cmd {
    JOBCHAN_SUSPEND,         /* suspend in place at the next minibatch boundary */
    JOBCHAN_RESUME,          /* resume a suspended job (or withdraw a pending suspend) */
    JOBCHAN_CHECKPOINT_EXIT, /* checkpoint and exit (resize, migration, preemption) */
};

/* Where the job stands, as far as the channel knows. */
enum jobchan_state {
    JOBCHAN_WAITING,       /* no job connected yet (or it left and none came back) */
    JOBCHAN_RUNNING,       /* connected and training */
    JOBCHAN_SUSPENDING,    /* suspend sent, not yet acknowledged */
    JOBCHAN_SUSPENDED,     /* the job said it is suspended and waits */
    JOBCHAN_RESUMING,      /* resume sent; running again at the job's next report */
    JOBCHAN_CHECKPOINTING, /* checkpoint-exit sent, checkpoint not yet complete */
    JOBCHAN_CHECKPOINTED,  /* the job's checkpoint is complete; it is exiting (stays so
                              after it closed the channel, until a new launch says HELLO) */
    JOBCHAN_GONE,          /* the job closed the channel without a checkpoint */
};

/* One minibatch as rank 0 reported it; time is when it arrived (CLOCK_MONOTONIC seconds). */
struct jobchan_report {
    long step;
    double loss;
    long samples;
    double seconds;
    double time;
};

/* Creates the socket at path (an existing socket file there is replaced) and listens.
 * Returns the channel, or NULL with the reason in err (errlen bytes). */
struct jobchan *jobchan_create(const char *path, char *err, size_t errlen);

/* Closes the connection and the listening socket, unlinks the path. NULL is a no-op. */
void jobchan_destroy(struct jobchan *jc);

/* Fills at most max entries of fds with what to poll (the listener, the connection and
 * POLLOUT while output waits); returns the number filled (at most JOBCHAN_MAX_POLLFDS). */
#define JOBCHAN_MAX_POLLFDS 2
int jobchan_pollfds(const struct jobchan *jc, struct pollfd *fds, int max);

/* Processes the revents of fds filled by jobchan_pollfds(): accepts, reads, writes.
 * Returns 0, or -1 with jobchan_error() set when the job's connection was dropped for a
 * protocol error (the channel itself stays usable). */
int jobchan_handle(struct jobchan *jc, const struct pollfd *fds, int n);

/* One turn of a private loop: polls up to timeout_ms, then handles. Returns as handle. */
int jobchan_run(struct jobchan *jc, int timeout_ms);

/* Gives the job a command. Returns 0, or -1 with errno EINVAL when the command makes no
 * sense in the current state (resume of a running job is accepted and does nothing;
 * anything after the checkpoint completed is refused). */
int jobchan_command(struct jobchan *jc, enum jobchan_cmd cmd);

/* Gives the job a new global batch to run from its next minibatch boundary on, with its
 * learning-rate factor (0: libringjob's sqrt(batch / initial batch)): a BATCH record, written
 * at once, or at the job's HELLO when none is connected. No restart: the same ranks go on.
 * Returns 0, or -1 with errno EINVAL for batch < 1, a factor outside [0, 1e6], or a job that
 * is checkpointing (its restart gets its batch from its launch). */
int jobchan_batch(struct jobchan *jc, long batch, double lr_scale);

/* The batch of the job's last BATCHED record (it took a BATCH: the batch runs from the step
 * after *step), 0 when none came; *step (may be NULL) gets that step, -1 with none. */
long jobchan_batched(const struct jobchan *jc, long *step);

/* Moves up to max reports received so far, oldest first, into out; returns how many. */
size_t jobchan_take_reports(struct jobchan *jc, struct jobchan_report *out, size_t max);

/* Reports waiting to be taken. */
size_t jobchan_pending_reports(const struct jobchan *jc);

/* Reports lost: dropped here when the caller did not take them (the buffer holds
 * JOBCHAN_REPORT_CAP), plus those the job said it dropped. */
#define JOBCHAN_REPORT_CAP 4096
unsigned long jobchan_dropped(const struct jobchan *jc);

enum jobchan_state jobchan_state(const struct jobchan *jc);
const char *jobchan_state_name(enum jobchan_state state);

/* CLOCK_MONOTONIC seconds when the current state was entered. */
double jobchan_state_since(const struct jobchan *jc);

/* Step of the last completed checkpoint, -1 when none. */
long jobchan_checkpoint_step(const struct jobchan *jc);

/* The job's last complete checkpoint, periodic (SAVED, ringjob_checkpoint_saved) or at a
 * planned stop (CHECKPOINTED): its step into *step and the CLOCK_MONOTONIC time its record
 * arrived into *at; 1, or 0 when the job reported none on this channel. */
int jobchan_last_checkpoint(const struct jobchan *jc, long *step, double *at);

/* Last step the job reported or acknowledged, -1 when none. */
long jobchan_last_step(const struct jobchan *jc);

/* What the job said in its HELLO: its id ("-" when none) and world size (0 before). */
const char *jobchan_job_id(const struct jobchan *jc);
int jobchan_world_size(const struct jobchan *jc);

/* 1 while a job is connected. */
int jobchan_connected(const struct jobchan *jc);

/* 1 when the job said BYE before closing (it finished or stopped on purpose). */
int jobchan_said_bye(const struct jobchan *jc);

/* Text of the last error (borrowed, never NULL). */
const char *jobchan_error(const struct jobchan *jc);

/* The steps the job said it runs in all (TOTAL), 0 until it says. */
long jobchan_total_steps(const struct jobchan *jc);

/* The gradient statistics of the job's last GRAD record (libringjob's ringjob_report_grad)
 * into *sqr and *var: 1, or 0 when none came. */
int jobchan_grad(const struct jobchan *jc, double *sqr, double *var);

/* The largest local batch a FITS record may say (the server's bound on "max_local_batch"). */
#define JOBCHAN_FITS_MAX 1000000

/* The largest local batch of the job's last FITS record (ringjob_report_fits), 0 when none
 * came. */
long jobchan_fits(const struct jobchan *jc);

#endif
