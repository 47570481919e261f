/* sched: the scheduling core's public face. A caller (ringmasterd's scheduler
 * thread, ringmaster-sim, `ringmaster-sim decide`) fills a snapshot of the
 * cluster and its jobs, asks a policy for a decision, and applies it. The core
 * keeps no hidden state between rounds: everything a policy needs (the time,
 * what each job has run, its observations and fitted models) is in the
 * snapshot, so the same snapshot and seed always give the same decision.
 *
 * The types of a snapshot and a decision, and the policies' op table, are in
 * sched_types.h (what the policies see); the estimates of remaining work and
 * the rates the policies plan with are in sched_estimate.h. This header adds
 * what calls the policies: finding one, checking a snapshot, deciding and
 * explaining.
 *
 * Memory: the caller owns the snapshot and everything it points to; a decision
 * is allocated by sched_decide() and freed with sched_decision_destroy(). */
#ifndef RINGMASTER_SCHED_H
#define RINGMASTER_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "sched_estimate.h"
#include "sched_types.h"

/* The policy of that name, or NULL. Policies: precompute, exploratory,
 * optimus, fifo, one, two, four, eight, gandiva, tiresias, rubick, ringmaster, edf. */
const struct sched_policy_ops *sched_policy_find(const char *name);

/* All policies, NULL-terminated, in a fixed order. */
const struct sched_policy_ops *const *sched_policy_list(void);

/* Checks a snapshot: node sizes 0..SCHED_MAX_GPUS_PER_NODE, jobs with
 * requested_gpus >= 1 and a consistent min/max, unique job ids, current slots
 * on existing GPUs and no GPU held by two jobs. Returns 0, or -1 with errno
 * EINVAL and a message in err (errlen bytes, may be NULL/0) saying what is wrong. */
int sched_validate(const struct sched_snapshot *snap, char *err, size_t errlen);

/* Runs the policy and placement on the snapshot. Returns a new decision, or
 * NULL with errno (EINVAL for an inconsistent snapshot, see sched_validate;
 * ENOMEM). The decision is always feasible: no GPU given twice, no node over
 * its size, nothing on a node that is not up. A running job whose count is
 * unchanged stays on its GPUs unless its node is down or moving it lets
 * another job span fewer nodes (placement.h; never under a policy with
 * keeps_slots). */
struct sched_decision *sched_decide(const struct sched_policy_ops *policy,
                                    const struct sched_snapshot *snap);

void sched_decision_destroy(struct sched_decision *d);

/* Goodput of job j (epochs at its initial batch per second, goodput.h) at global batch m on
 * gpus GPUs of GPU model gpu_model over nodes nodes: on its own model of that GPU model when it
 * has one, else its reference model; what the core chooses an adaptive job's batch by. 0 with
 * no batch model or no fitted speed model. The ratio of two such rates is what a batch change
 * is worth ("batch 512 on 4 GPUs: goodput 1.8x of batch 128"). */
double sched_batch_rate(const struct sched_job *j, int gpu_model, int gpus, int nodes, double m);

/* 1 when assignment a (of job j, in a decision) changes j's global batch while its GPUs stay:
 * a change in place, without a restart (the live scheduler's `batch` action, the simulator's
 * free change). */
int sched_batch_in_place(const struct sched_job *j, const struct sched_assignment *a);

/* The distinct nodes among n slots (in any order; n is a job's GPUs, so O(n^2) is fine). */
int sched_slots_nodes(const struct sched_slot *slots, int n);

/* Why job i waits: which jobs hold the GPUs it needs and why, e.g. "needs 8
 * GPUs; job 12 holds 8 GPUs: predicted to finish in 3 min (fit); job 4 holds
 * 2 GPUs: user 3 within its share". Writes at most len bytes into buf (always
 * terminated when len > 0) and returns the length the text needed. For a job
 * that runs, its assignment's reason. */
size_t sched_explain(const struct sched_snapshot *snap, const struct sched_decision *d, size_t i,
                     char *buf, size_t len);

/* The same for many jobs of one decision in O(jobs) in all (sched_explain alone scans every
 * job for each): init once, then sched_explainer_text(e, i, ...) as sched_explain(snap, d, i,
 * ...), then fini. init returns 0, or -1 (ENOMEM; fini is still safe). */
#define SCHED_EXPLAIN_HOLDERS 3 /* holders named in an explanation, the largest first */
struct sched_explain_user {
    int64_t user;
    long held;
};
struct sched_explainer {
    const struct sched_snapshot *snap;
    const struct sched_decision *d;
    size_t top[SCHED_EXPLAIN_HOLDERS + 1];
    size_t ntop;
    struct sched_explain_user *users; /* GPUs held per user, by user id */
    size_t nusers;
};
int sched_explainer_init(struct sched_explainer *e, const struct sched_snapshot *snap,
                         const struct sched_decision *d);
size_t sched_explainer_text(const struct sched_explainer *e, size_t i, char *buf, size_t len);
void sched_explainer_fini(struct sched_explainer *e);

#endif
