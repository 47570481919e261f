/* slice: Gandiva's time-slicing and packing carried out by the live scheduler
 * (docs/gandiva.md, "Live"); internal to the scheduler thread, used by round_plan.c and
 * plan_write.c.
 *
 * The core (policy gandiva) is stateless: what it needs from one round to the next lives in
 * table job_slices (sql/006) and in the jobs' minibatch reports. live_slice_read() reads it
 * after the snapshot; live_slice_fill() gives each core job its Gandiva fields (suspended,
 * home node, accumulated run time, declared utilisation, rates alone and packed, its pair);
 * live_slice_record() writes, inside the round's transaction, what the decision did to a
 * job: time-sliced out (suspended in place, its GPUs released), back in (resumed in place, or
 * through its checkpoint when its GPUs differ), packed, kept or reverted; each switch is also
 * a job event.
 *
 * The model is the core's: a job suspended by the scheduler holds no GPU (its allocation is
 * deleted in the round that suspends it, the GPU goes to the next job at once); its state
 * waits in host memory on its home node. Its job state stays RUNNING until its worker says
 * the job took the suspension (SUSPENDED); meanwhile the core does not see it. */
#ifndef RINGMASTER_LIVE_SLICE_H
#define RINGMASTER_LIVE_SLICE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "sched.h"
#include "snap.h"

/* Minibatch reports a packed job must make (after its pair's measurement began) before its
 * packed rate counts, and seconds between both jobs running and the measurement's start. */
#define LIVE_SLICE_MIN_PACKED 30
#define LIVE_SLICE_SETTLE_S 2.0
/* Reports alone needed before a job's measured rate alone counts (a pair is judged against
 * the rates alone; before that a job's speed model may predict it, else it is never packed). */
#define LIVE_SLICE_MIN_ALONE 20

struct live_slice;

/* What a round did to one job. */
enum slice_move {
    SLICE_STAY, /* nothing that concerns time-slicing */
    SLICE_OUT,  /* suspended in place (time-sliced out, or the second job of a reverted pair) */
    SLICE_IN,   /* a sliced job gets GPUs again (resume or migrate) */
};

/* Reads job_slices and the rates of the snapshot's active jobs. Returns a new one, or NULL
 * with text in err. */
struct live_slice *live_slice_read(PGconn *c, const struct live_snap *s, char *err,
                                     size_t errlen);

/* Frees; NULL is a no-op. */
void live_slice_destroy(struct live_slice *sl);

/* 1 if the core sees job sj this round, given what the plan would decide alone (dflt): a
 * sliced SUSPENDED job does (it waits for its turn), a job whose scheduler suspension is in
 * flight does not. */
int live_slice_wanted(const struct live_slice *sl, const struct snap_job *sj, int dflt);

/* 1 if sj was suspended by the scheduler and now waits, holding nothing. */
int live_slice_waiting(const struct live_slice *sl, const struct snap_job *sj);

/* Fills j's Gandiva fields (j has its other fields already, its speed model and its source
 * included). Its rate alone is measured (LIVE_SLICE_MIN_ALONE reports) or, before that,
 * predicted by its speed model (1 GPU of the model it runs on, or waits on; else the reference
 * GPU); its declared gpu_util is shown only when one of them is known. Keeps j's speed model
 * for live_slice_record (a pack freezes the rate alone predicted on the pair's GPU). */
void live_slice_fill(struct live_slice *sl, const struct snap_job *sj, struct sched_job *j);

/* 1 if a sliced job resuming on these gpus slots finds them exactly where it left them
 * (resume in place); 0 if it must move through its checkpoint. */
int live_slice_in_place(const struct live_slice *sl, const struct snap_job *sj,
                         const struct sched_slot *slots, int gpus);

/* Resumes in place where the decision allows it: a sliced 1-GPU job that the decision
 * resumes on its home node but on another GPU takes the GPU it left when that one is free, or
 * swaps with a 1-GPU job that starts or resumes on it this round (and is not at home there).
 * as: the decision's n assignments; sjs[i]: the snapshot job of as[i]. */
void live_slice_prefer_home(const struct live_slice *sl, const struct snap_job *const *sjs,
                             struct sched_assignment *as, size_t n);

/* The node index (into s->nodes) where a sliced job's state waits, or -1. */
int live_slice_home(const struct live_slice *sl, const struct snap_job *sj);

/* Inside the round's transaction: records what the round did to sj (mv; a: its assignment;
 * round: the round's id as text), its job_slices row and, for each switch, a job event.
 * Returns 0 or -1. */
int live_slice_record(struct live_slice *sl, PGconn *c, const struct snap_job *sj,
                       const struct sched_assignment *a, enum slice_move mv, const char *round);

#endif
