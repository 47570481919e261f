/* sched_round: one round of the live scheduler. Marks nodes whose heartbeat is too old DOWN
 * (their jobs, and the time-sliced jobs waiting on them, go back to PENDING, allocations
 * dropped, events written); reads a snapshot
 * (sched_snap); refits the models of jobs with new metrics (sched_model); runs the active
 * policy of the core outside any lock or transaction; diffs the decision against the current
 * allocations; and writes, in ONE transaction, the round's audit row, the new allocations,
 * the actions for the workers (start, resize, migrate, suspend, resume; spec per
 * docs/worker-protocol.md), the job state transitions (through job_state_next) with their
 * events, what time-slicing and packing did (job_slices, sched_slice.h), and each job's model
 * and queue explanation (job_sched). A job changed by someone else meanwhile makes the round
 * roll back and the next one try again. */
#ifndef RINGMASTER_SCHED_ROUND_H
#define RINGMASTER_SCHED_ROUND_H

#include <libpq-fe.h>
#include <stddef.h>

#include "job_state.h"

struct sched_models;

/* The settings (table scheduler_config). */
struct sched_config {
    char policy[32];
    double interval_s;            /* seconds between timed rounds */
    double node_timeout_s;        /* a node silent this long is DOWN */
    double min_resize_interval_s; /* hysteresis of the core */
    double resize_cost_s;         /* assumed cost of a resize until one is measured */
    double grace_s;               /* a job losing GPUs gets this long to checkpoint */
    double quantum_s;             /* time-slice length of policy gandiva (docs/gandiva.md) */
    double explore_stage_s;       /* seconds an exploring job runs at each of 1, 2, 4, 8 GPUs */
    int paused;                   /* 1: no rounds (nodes are not marked DOWN either) */
};

/* Reads the settings. Returns 0, or -1 with text in err. */
int sched_config_load(PGconn *c, struct sched_config *cfg, char *err, size_t errlen);

struct sched_round_result {
    long long round_id; /* 0 when nothing was written */
    long long duration_us;
    int jobs, decisions, actions, nodes_down;
    char policy[32]; /* the policy that ran (see sched_round_run) */
};

/* Runs one round. round_no counts the thread's rounds (model cache pruning, the core's
 * seed). The policy is cfg->policy, except that "precompute" with an elastic job that has
 * no model (no known class, not yet measured at two sizes) runs "exploratory", which is the
 * doubling heuristic for the jobs with models and explores the others. Returns 0, or -1
 * with text in err (the database state is then unchanged but for nodes marked DOWN). */
int sched_round_run(PGconn *c, struct sched_models *ms, const struct sched_config *cfg,
                    long round_no, struct sched_round_result *out, char *err, size_t errlen);

/* Inside a transaction: job id moves from `from` by ev (job_state_next), with its event
 * (actor "scheduler", detail). Returns 0, or -1 when the move is illegal, the job is no
 * longer in `from`, or the statement failed. */
int sched_round_move_job(PGconn *c, long long id, enum job_state from, enum job_event ev,
                         const char *detail);

/* Inside a transaction: job id goes back to the queue from `from` (event requeue with detail;
 * no move when it is PENDING or ended already): its allocations dropped, its pending start,
 * resize, migrate, suspend and resume superseded, its time-slicing forgotten
 * (sched_slice_forget), its checkpoint generation (jobs.ckpt_gen) advanced, so that it starts
 * afresh from its last checkpoint in a folder no copy left behind writes. Returns 0 or -1. */
int sched_round_requeue_job(PGconn *c, long long id, enum job_state from, const char *detail);

/* Inside a transaction: drops the job's allocations and supersedes its pending start, resize
 * and migrate actions. Returns 0 or -1. */
int sched_round_release_job(PGconn *c, long long id);

#endif
