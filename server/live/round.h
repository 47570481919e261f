/* round: one round of the live scheduler. Marks nodes whose heartbeat is too old DOWN
 * (their jobs, and the time-sliced jobs waiting on them, go back to PENDING, allocations
 * dropped, events written); reads a snapshot
 * (snap.h); refits the models of jobs with new metrics (model.h); runs the active
 * policy of the core outside any lock or transaction; diffs the decision against the current
 * allocations; and writes, in ONE transaction, the round's audit row, the new allocations,
 * the actions for the workers (start, resize, migrate, suspend, resume; spec per
 * docs/worker-protocol.md), the job state transitions (through job_state_next) with their
 * events, what time-slicing and packing did (job_slices, slice.h), and each job's model
 * and queue explanation (job_sched). A job changed by someone else meanwhile makes the round
 * roll back and the next one try again. */
#ifndef RINGMASTER_LIVE_ROUND_H
#define RINGMASTER_LIVE_ROUND_H

#include <libpq-fe.h>
#include <stddef.h>

#include "round_plan.h"

struct settings;
struct live_models;
struct forecast_thread;

/* Runs one round. round_no counts the thread's rounds (model cache pruning, the core's
 * seed). The policy is cfg->policy, every round: a job without a declared class is learned
 * under it from its own steps (the core's learn.h: a model from one size, growth to twice
 * the largest size measured on free GPUs). A round that wrote its plan offers its snapshot
 * to fc, the forecasts' thread (forecast_thread.h; NULL: none). Returns 0, or -1
 * with text in err (the database state is then unchanged but for nodes marked DOWN). */
int live_round_run(PGconn *c, struct live_models *ms, const struct settings *cfg,
                    long round_no, struct forecast_thread *fc, struct live_round_result *out,
                    char *err, size_t errlen);

#endif
