/* round_plan: a round's decision and what it changes (internal to the scheduler thread).
 * live_plan_create() turns a database snapshot into the core's snapshot, refits models,
 * runs the policy, and keeps from the decision only the changes that are safe now:
 *  - a PENDING job placed by the decision starts (start action);
 *  - a RUNNING job whose count changed is resized, one whose GPUs moved is migrated; a
 *    running job is never stopped to 0 by a round (no preemption), except that a
 *    time-slicing policy's suspension is a suspend action and its return a resume (or a
 *    migrate through the checkpoint), and packed pairs share a GPU (slice.h);
 *  - jobs in transition (STARTING, RESIZING, MIGRATING) or SUSPENDED keep what they hold:
 *    the core sees them as non-elastic at their current size, ranked first;
 *  - if keeping those leaves the decision inconsistent (a GPU booked twice), running jobs
 *    keep their GPUs and only the starts and resizes that fit in free GPUs go ahead.
 * A person's migrate request moves a running job to free GPUs on the node asked for (or any
 * other node) when enough are free on one node. Waiting jobs get their explanation.
 * live_plan_write() writes all of it in one transaction. */
#ifndef RINGMASTER_LIVE_ROUND_PLAN_H
#define RINGMASTER_LIVE_ROUND_PLAN_H

#include <libpq-fe.h>
#include <stddef.h>

struct settings;
struct live_models;
struct live_snap;

/* What a round did (live_plan_write fills it; live_round_run returns it). */
struct live_round_result {
    long long round_id; /* 0 when nothing was written */
    long long duration_us;
    int jobs, decisions, actions, nodes_down;
    char policy[32]; /* the policy that ran (see live_round_run) */
    /* Where its time went: the snapshot read, the refits (refits models), the rest of the
     * decision (core and checks), and the write up to the audit row's update. */
    long long snap_us, refit_us, decide_us, write_us;
    int refits;
};

struct live_plan;
struct forecast_thread;

/* Builds the plan; c is used to read metrics for refits. Returns NULL with text in err. */
struct live_plan *live_plan_create(const struct live_snap *s, struct live_models *ms,
                                     const struct settings *cfg, long round_no, PGconn *c,
                                     char *err, size_t errlen);

/* Writes the plan in one transaction (t0_us: the round's start on the monotonic clock, for
 * its duration) and fills out. Returns 0, or -1 with text in err after a rollback. */
int live_plan_write(struct live_plan *p, PGconn *c, long long t0_us,
                     struct live_round_result *out, char *err, size_t errlen);

void live_plan_destroy(struct live_plan *p);

/* Offers fc (forecast_thread.h; NULL: none) the state after the plan: the core's snapshot
 * with each job on the GPUs the plan leaves it, under the plan's policy. */
void live_plan_offer_forecast(const struct live_plan *p, struct forecast_thread *fc,
                              double interval_s);

#endif
