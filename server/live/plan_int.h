/* plan_int: the inside of a round's plan, shared by the files that build it (round_plan.c),
 * check what of the decision may change now (accept.c), explain the waiting jobs
 * (waiting.c) and write it (plan_write.c). Private to live/. */
#ifndef RINGMASTER_LIVE_PLAN_INT_H
#define RINGMASTER_LIVE_PLAN_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"

#define FIXED_PRIORITY (INT_MAX / 2) /* jobs in transition rank before every other */

struct live_snap;
struct snap_job;
struct settings;
struct live_model;

/* CH_SUSPEND and CH_RESUME: time-slicing (slice.h). CH_BATCH: a running job keeps its GPUs
 * and changes its global batch in place (sched_batch_in_place: a `batch` action, no
 * restart). */
enum change { CH_KEEP, CH_START, CH_RESIZE, CH_MIGRATE, CH_SUSPEND, CH_RESUME, CH_BATCH };

struct live_plan_job {
    const struct snap_job *sj;
    struct live_model *model;
    int fixed;                      /* may not change this round */
    int gpus;                       /* what it holds after the round */
    const struct sched_slot *slots; /* gpus entries: the decision's or its current ones */
    enum change change;
    const char *reason;
    int migrated_by_request;
    char pending_reason[384];
    int queue_position;      /* 1.. among waiting jobs; 0 when not waiting */
    double predicted_start;  /* epoch seconds; < 0 unknown */
    double predicted_finish; /* of a waiting job, epoch seconds; < 0 unknown */
    int sched_written;       /* its job_sched row is in this round's write */
    uint64_t sched_hash;     /* and says this (model.h) */
    double sched_start, sched_finish, sched_rem;
};

struct live_plan {
    const struct live_snap *s;
    const struct settings *cfg;
    struct sched_node *cnodes;
    struct sched_job *cjobs;
    struct sched_snapshot snap;
    struct sched_decision *d;
    struct live_slice *slice;
    struct live_plan_job *jobs;
    size_t njobs;
    struct sched_slot *moved; /* slots of migrations a person asked for */
    uint64_t *busy;           /* per node: GPUs held after the round */
    double stage_s;           /* exploring stage length (bounds_explore_stage_s) */
    int capacity;             /* GPUs on up nodes */
    int guaranteed;           /* a guarantee or a deadline gave a job GPUs (some assign forced) */
    char policy[32];
    const struct sched_policy_ops *ops; /* that policy's */
    const struct snap_job **blocked; /* PENDING jobs whose dependencies are not met (after.h):
                                      * not shown to the core; nblocked of them */
    size_t nblocked;
    int refits;         /* models refitted this round (-1: their metrics could not be read) */
    long long refit_us; /* the time their reads and fits took */
    int island_size;    /* the largest NVLink island of an up node (0: none known): the
                         * packing the jobs' speed models assume (speed.h gpus_per_island) */
};

/* Keeps from the decision what may change now (round_plan.h), and each job's reason
 * (accept.c). Returns 0, or -1 with errno ENOMEM. */
int live_plan_apply_decision(struct live_plan *p);

/* Why each waiting job waits, its queue position and predicted start (waiting.c). */
void live_plan_explain_waiting(struct live_plan *p);

#endif
