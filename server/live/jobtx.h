/* jobtx: the job changes the scheduler writes inside a transaction, in a round or on a
 * worker's word: a state move with its event, a release of its GPUs, and forgetting its
 * time-slicing; the requeue that combines them is in live.h. */
#ifndef RINGMASTER_LIVE_JOBTX_H
#define RINGMASTER_LIVE_JOBTX_H

#include <libpq-fe.h>

#include "job_state.h"

/* Inside a transaction: job id moves from `from` by ev (job_state_next), with its event
 * (actor "scheduler", detail). Returns 0, or -1 when the move is illegal, the job is no
 * longer in `from`, or the statement failed. */
int live_move_job(PGconn *c, long long id, enum job_state from, enum job_event ev,
                   const char *detail);

/* Inside a transaction: drops the job's allocations and supersedes its pending start, resize
 * and migrate actions. Returns 0 or -1. */
int live_release_job(PGconn *c, long long id);

/* Inside a transaction: job id is no longer time-sliced (requeued: it starts afresh
 * anywhere): its row loses sliced, home and pair; its run time and a revert are kept.
 * Returns 0 or -1. */
int live_slice_forget(PGconn *c, long long id);

#endif
