/* snap: the live scheduler's view of the cluster, read from the database in one
 * read-only repeatable-read transaction: up and down nodes with their GPUs, the jobs that
 * wait or hold GPUs, their current allocations, and the measured cost of a resize. Owned by
 * the scheduler thread; strings point into the query results it keeps. */
#ifndef RINGMASTER_LIVE_SNAP_H
#define RINGMASTER_LIVE_SNAP_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "deps.h"
#include "job_state.h"
#include "sched.h"

/* Completed jobs whose run times make the prior of remaining work (a text, for the SQL). */
#define SNAP_FINISHED_MAX "500"

struct snap_node {
    int64_t id;
    const char *name;
    int up;
    int ngpus;
    int gpu_index[SCHED_MAX_GPUS_PER_NODE]; /* the core's GPU k is the node's GPU gpu_index[k] */
    /* What the core needs of its hardware (sched_node's fields; see live_snap_gpu_model). */
    const char *gpu_name; /* the model its GPUs report ("" with none) */
    int gpu_model;        /* the core's model index: 1..4 for the known models, else 100.. */
    double gpu_speed;     /* relative to the reference GPU (v100); 1 when unknown */
    double gpu_mem_gb;    /* per GPU; 0: unknown (the core's default) */
    int cpu_cores;        /* host cores; 0 for simulated nodes (not counted) */
    double host_mem_gb;   /* host memory; 0 for simulated nodes (not counted) */
    uint64_t drained;     /* bit k: the core's GPU k is drained (sched_node.drained) */
    int evacuate;         /* its drained GPUs are evacuated */
    uint64_t failed;      /* bit k: the core's GPU k has a fault (sched_node.failed) */
    unsigned char island[SCHED_MAX_GPUS_PER_NODE]; /* the core's GPU k's island (sched_node) */
    int switch_id, rack_id; /* its labels "switch" and "rack" numbered 1..; 0: none */
};

struct snap_job {
    int64_t id;
    enum job_state state;
    int gpus, min_gpus, max_gpus, elastic, priority, batch_per_gpu;
    double submit;     /* epoch seconds */
    const char *model; /* the job's model object as text, or NULL */
    long long nmetrics; /* job_metrics rows */
    long long last_step;  /* its latest reported step (job_last_report.step; 0: none) */
    long long redo_steps; /* the steps it redid after going back to a checkpoint (its redo) */
    int64_t migrate_to; /* -1: no request; 0: anywhere; else a node id */
    /* Current allocation: cur_gpus slots from slots[], node = index into nodes. */
    int cur_gpus;
    struct sched_slot *slots;
    double since_first, since_last; /* epoch seconds of its oldest and newest allocation row */
    double held_s; /* seconds it has held GPUs in all, over every allocation (the ledger's
                    * span, sql/048); < 0: unknown (it never held any) */
    struct plan_spec plan;          /* its declared plans (zero: none, plain data parallel) */
    const char *current_plan;       /* the plan of its latest start/resize/migrate, or NULL */
    struct plan_choice cur_plan;    /* current_plan parsed (dp when NULL) */
    int ckpt_gen;                   /* its checkpoint generation (jobs.ckpt_gen) */
    int64_t user_id;                /* whose it is (fair shares) */
    long long declared_steps;       /* total_steps, else the total it reported; 0: none */
    double declared_epochs;         /* epochs it declared; 0: none */
    int stops_at_convergence;       /* it may stop early (stop_at_convergence, stop_at_loss) */
    /* Its batch model (zero: none): the declared batch_spec, its latest gradient statistics
     * and, as batch.batch, the global batch of its latest start/resize (current_batch). */
    struct batch_spec batch;
    /* A PENDING job's dependencies (its "after", sql/036) with the states of the jobs they
     * name now, in its order: ndeps entries from deps (0: none). */
    const struct deps_target *deps;
    size_t ndeps;
    double runnable_since; /* epoch seconds the last job its dependencies name ended (0: none,
                            * or no dependencies): it waits, for the core, from then on */
    int max_switches;           /* its topology bound (sched_job's; 0: none) */
    double max_switches_wait_s;
    int lr_scaling; /* its rule for the learning rate of a new batch (enum batch_lr_scaling) */
    double deadline; /* epoch seconds it should finish by (sched_job's; 0: none) */
    double checkpoint_at;    /* epoch seconds of its last checkpoint (sql/044); 0: none */
    int64_t checkpoint_step; /* its step */
    double forecast_finish;  /* epoch seconds of its forecast finish, P50 (job_forecasts, the
                              * figure the API and ringctl show); 0: none */
};

struct live_snap {
    double now;           /* the database's clock, epoch seconds */
    double resize_cost_s; /* mean of finished resizes, or < 0 when none measured */
    struct snap_node *nodes;
    size_t nnodes;
    struct snap_job *jobs;
    size_t njobs;
    struct sched_slot *slot_pool;
    struct sched_user *users; /* nusers with a share or quota of their own */
    size_t nusers;
    double *finished_run_s; /* run times of the latest completed jobs (the estimates' prior) */
    size_t nfinished;
    struct deps_target *deps_pool; /* every job's deps */
    PGresult *res[7];
};

/* Reads a snapshot. Returns a new one, or NULL with text in err (database error, ENOMEM). */
struct live_snap *live_snap_read(PGconn *c, char *err, size_t errlen);

/* Frees; NULL is a no-op. */
void live_snap_destroy(struct live_snap *s);

/* The core's position of the node's GPU of index idx, or -1 when it has none such. */
int live_snap_gpu_position(const struct snap_node *n, int idx);

/* The known GPU model whose name is a word of name ("NVIDIA A100-SXM4-80GB": a100), case
 * insensitive: v100 (1, speed 1, the reference), a100 (2, 2.0), h100 (3, 3.0), t4 (4, 0.4),
 * as the simulator's models. Fills index, speed and memory per GPU (GB) and returns 1; 0 and
 * nothing filled when none matches. */
int live_snap_gpu_model(const char *name, int *index, double *speed, double *mem_gb);

/* The item of id among n items of size bytes sorted by id, each beginning with its int64_t
 * id (struct snap_node, snap_job, slice_row: the snapshot reads them by id), or NULL; as
 * bsearch(). */
void *live_snap_by_id(const void *items, size_t n, size_t size, int64_t id);

/* The job of id in s->jobs, or NULL. */
struct snap_job *live_snap_job(const struct live_snap *s, int64_t id);

/* Index of node id in s->nodes, or -1. */
int live_snap_node_index(const struct live_snap *s, int64_t id);

#endif
