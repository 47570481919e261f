/* sched_snap: the live scheduler's view of the cluster, read from the database in one
 * read-only repeatable-read transaction: up and down nodes with their GPUs, the jobs that
 * wait or hold GPUs, their current allocations, and the measured cost of a resize. Owned by
 * the scheduler thread; strings point into the query results it keeps. */
#ifndef RINGMASTER_SCHED_SNAP_H
#define RINGMASTER_SCHED_SNAP_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "job_state.h"
#include "sched.h"

struct snap_node {
    int64_t id;
    const char *name;
    int up;
    int ngpus;
    int gpu_index[SCHED_MAX_GPUS_PER_NODE]; /* the core's GPU k is the node's GPU gpu_index[k] */
};

struct snap_job {
    int64_t id;
    enum job_state state;
    int gpus, min_gpus, max_gpus, elastic, priority, batch_per_gpu;
    double submit;     /* epoch seconds */
    const char *model; /* the job's model object as text, or NULL */
    const char *command, *env;
    long long nmetrics; /* job_metrics rows */
    int64_t migrate_to; /* -1: no request; 0: anywhere; else a node id */
    /* Current allocation: cur_gpus slots from slots[], node = index into nodes. */
    int cur_gpus;
    struct sched_slot *slots;
    double since_first, since_last; /* epoch seconds of its oldest and newest allocation row */
};

struct sched_snap {
    double now;           /* the database's clock, epoch seconds */
    double resize_cost_s; /* mean of finished resizes, or < 0 when none measured */
    struct snap_node *nodes;
    size_t nnodes;
    struct snap_job *jobs;
    size_t njobs;
    struct sched_slot *slot_pool;
    PGresult *res[4];
};

/* Reads a snapshot. Returns a new one, or NULL with text in err (database error, ENOMEM). */
struct sched_snap *sched_snap_read(PGconn *c, char *err, size_t errlen);

/* Frees; NULL is a no-op. */
void sched_snap_destroy(struct sched_snap *s);

/* The core's position of the node's GPU of index idx, or -1 when it has none such. */
int sched_snap_gpu_position(const struct snap_node *n, int idx);

/* Index of node id in s->nodes, or -1. */
int sched_snap_node_index(const struct sched_snap *s, int64_t id);

#endif
