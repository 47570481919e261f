/* simulate_int: the simulation engine's internals, shared by its files
 * (engine.c: the event loop; setup.c: the start; snapshot.c: what a round's
 * policy sees; apply.c: a decision applied; check.c: checking a decision
 * against the cluster; knowledge.c: what the policies know of the work left;
 * gradients.c: the truth of a batch model; learning.c: the steps a job reports and
 * the models the core learns of them (speed_live); totals.c: the run's figures; rng.c:
 * the random numbers). Not a public face: names with a double underscore are
 * for these files only. */
#ifndef RINGMASTER_SIMULATE_INT_H
#define RINGMASTER_SIMULATE_INT_H

#include "learn_types.h"
#include "simulate.h"

#define SIM_EPS 1e-9
#define SIM_MAX_IDLE_ROUNDS 16

struct sim_job {
    const struct simulate_job_spec *spec;
    int gpus;
    struct sched_slot *slots; /* gpus entries, sorted by (node, gpu) */
    int use;                  /* GPUs it runs on: gpus, or while exploring its
                                 stage's size among them (0: to be set) */
    double rate;              /* true epochs per second at use */
    int started, done;
    double start_time, finish_time;
    double epochs_done;
    double busy_until; /* resize delay ends */
    double last_change;
    double run_time, gpu_seconds;
    int resizes;
    double explored_s[4];
    int obs_have[4];
    double obs_step[4];
    int obs_fitted; /* observations the seen model was fitted on */
    struct speed_model seen;
    struct plan_choice plan; /* the plan it runs (plan info only) */
    /* Gandiva. */
    int suspended;     /* time-sliced out, its state in host memory */
    int susp_node;     /* the node it left */
    long partner;      /* index of the job packed on its GPUs, or -1 */
    int pack_reverted;
    double packed_run; /* productive seconds since it was packed */
    double step_rate;  /* minibatches per second at use (packing included) */
    double alone_rate; /* step_rate without packing, on the GPUs it last ran on (0: never ran) */
    double steps_done, first100_time;
    int first100, suspends, packs, migrations;
    /* Imperfect knowledge and waits (knowledge.c). */
    double wait_since;   /* when it last became runnable without GPUs */
    double max_wait;     /* its longest wait so far */
    double est_factor;   /* estimate_error's factor */
    struct conv_model curve; /* live: the true loss curve */
    double tol;              /* live: its convergence tolerance per epoch */
    struct conv_model fit;   /* live: the fit of its reported losses */
    double fit_epochs;       /* epochs done when fit was made (0: none) */
    double batch;            /* goodput: the global batch it runs at (0: no model) */
    double true_step_s;      /* seconds per step at use alone, on its GPUs (0: not running) */
    /* Checkpoints (checkpoint_every_s). */
    double ckpt_epochs;  /* its progress at its last checkpoint */
    double ckpt_time;    /* when it was written (0: none) */
    double ckpt_steps;   /* minibatches run by then */
    double since_ckpt_s; /* productive seconds since, in the current run */
    int preempted;       /* stopped through a checkpoint: its next start's delay is lost */
};

/* What a job's steps reported under speed_live (learning.c), and the models the core made of
 * them. */
#define SIM_LEARN_OBS 32
struct sim_learn {
    struct learn_obs obs[SIM_LEARN_OBS]; /* per (world size, nodes, GPU model) */
    size_t nobs;
    size_t fitted;            /* obs its reference fit used (0: none) */
    long long version;        /* bumped when an obs is added or its mean moves */
    struct learn_fit_cache cache;
    struct speed_model speed; /* that fit */
    struct sched_type_speed types[LEARN_MAX_TYPES];
    /* what the job reports fits in one GPU of each model it ran on: its true max_local
     * there (learn_types.h "Largest local batch per type") */
    struct learn_fits fits[LEARN_MAX_TYPES];
    size_t nfits;
};

struct sim {
    const struct simulate_config *cfg;
    struct sim_job *jobs;
    size_t njobs;
    size_t *order;       /* job indices by submit time */
    size_t next_arrival; /* into order */
    size_t *active;      /* job indices, arrival order */
    size_t nactive;
    size_t ncompleted;
    double now;
    long rounds, resizes;
    long suspends, packs, pack_reverts, migrations;
    long batch_changes; /* batches changed in place */
    long preemptions;
    double lost_preempt_gpu_s, lost_redo_gpu_s; /* simulate_result's */
    int max_per_gpu;
    int total_gpus, max_in_use;
    int *node_off;       /* first bitmap index of each node */
    unsigned char *used; /* total_gpus entries */
    double *cores, *mem; /* per node: host use of a decision */
    struct sched_job *snap_jobs;
    double *finished_run_s; /* run times of the jobs completed so far */
    size_t nfinished;
    double idle_wanted_gpu_s; /* idle GPU-seconds while an elastic job wanted more */
    double idle_usable;       /* idle GPUs a running job could use (idle.c), since the round */
    double idle_usable_gpu_s; /* their GPU-seconds */
    struct sim_learn *learn;  /* speed_live: njobs entries (NULL otherwise) */
    struct learn_job_steps *learn_in; /* speed_live: a round's input to learn_round */
    simulate_round_f on_round;
    void *arg;
    char *err;
    size_t errlen;
    /* Compactness of multi-GPU placements (simulate_result's, apply.c); the largest node and
     * island of the cluster, 0 until the first placement. */
    long fit_node, on_node, fit_island, on_island;
    int biggest_node, biggest_island;
    /* Topology (issue 32): the nodes the policies see (cfg->nodes, or under topology_blind a
     * copy without islands, switches and racks) and the cluster's largest island (0: none). */
    const struct sched_node *seen_nodes;
    struct sched_node *blind_nodes;
    int island_size;
};

/* Setup (setup.c). Checks cfg and the n specs and builds s from them (s->err, errlen,
 * on_round and arg already set). Returns 0, or -1 with errno set and the error text filled;
 * simulate__free(s) then frees what it built. */
int simulate__init(struct sim *s, const struct simulate_config *cfg,
                   const struct simulate_job_spec *specs, size_t n);

/* Frees what simulate__init() built (not s itself). */
void simulate__free(struct sim *s);

/* A round (snapshot.c, apply.c). Fills the snapshot job o with what the policy may see of
 * j (its speed model as the view allows; the truth of its remaining work, which
 * simulate__estimate_fill() then replaces). */
void simulate__fill_snapshot_job(struct sim *s, struct sim_job *j, struct sched_job *o);

/* Applies the assignment to job j: its new slots (sorted), start, and the cost of a change.
 * Returns 0, or -1 (ENOMEM). */
int simulate__apply_assignment(struct sim *s, struct sim_job *j, const struct sched_assignment *as);

/* Sorts n slots by (node, gpu), the order a job's slots are kept in (apply.c). */
void simulate__sort_slots(struct sched_slot *sl, int n);

/* Links and parts the packed pairs of decision d (s->active in the decision's order). */
void simulate__apply_packs(struct sim *s, const struct sched_decision *d);

/* Sets each running job's working size, true rate and step rate; with grad_only, only the
 * running jobs whose rate follows gradient statistics. */
void simulate__update_use(struct sim *s, int grad_only);

/* Checks (check.c). Appends what went wrong (and the job's id when >= 0) to the run's error
 * text, sets errno to code and returns -1. */
int simulate__fail(struct sim *s, int code, const char *what, long long job_id);

/* 1 when the assignment shares its GPUs with a packed partner. */
int simulate__is_shared(const struct sched_assignment *as);

/* Checks a decision against the cluster: every job covered in order, slots
 * inside the cluster on nodes that are up, no GPU given twice except to a
 * packed pair, GPU models and host resources respected. Returns 0 or -1. */
int simulate__check_decision(struct sim *s, const struct sched_decision *d);

/* Sets up job i's estimate state (factor, loss curve, wait). */
void simulate__estimate_init(struct sim *s, struct sim_job *j);

/* Replaces the snapshot job's remaining work by what the configuration lets
 * the policy know (estimate_error, estimate_live, estimate_declared); the truth when none. */
void simulate__estimate_fill(struct sim *s, struct sim_job *j, struct sched_job *o);

/* The next time a waiting job reaches max_wait_s after now (INFINITY: none). */
double simulate__next_deadline(const struct sim *s);

/* Goodput (gradients.c). The job's batch model as of now: its batch and the true
 * gradient statistics at its progress. */
struct batch_spec simulate__batch_now(const struct sim_job *j);

/* True epochs per second of a job with a batch model on u GPUs over nodes nodes, and its
 * seconds per step into *step_s (may be NULL). */
double simulate__batch_rate(const struct sim_job *j, int u, int nodes, double *step_s);
/* As simulate__batch_rate(), on the job's true model t of a GPU model (its batch with t's
 * largest local batch); t NULL: simulate__batch_rate(). */
double simulate__batch_rate_on(const struct sim_job *j, const struct sched_type_speed *t, int u,
                               int nodes, double *step_s);

/* The validation error after epoch e + 1 (row e of g->error) at global batch m, interpolated
 * between the two runs whose batches surround m, as the statistics are; NAN without errors
 * or past the table. */
double simulate__grad_error(const struct simulate_grad *g, size_t e, double m);

/* The progress (epochs at init_batch) at which the job's gradient statistics change next:
 * the next epoch end of any of its runs (INFINITY: never, or no table). */
double simulate__batch_next_progress(const struct sim_job *j);

/* Live speed learning (learning.c, speed_live). Adds productive seconds of the steps job j
 * ran at its current placement to what it reported. */
void simulate__learn_record(struct sim *s, struct sim_job *j, double productive);

/* Fills the snapshot job o's speed as the job's reports tell it (no model before them; the
 * reference fit once two sizes were measured; what learn.h reads). */
void simulate__learn_fill(struct sim *s, struct sim_job *j, struct sched_job *o);

/* The round's learning over the snapshot's jobs (s->snap_jobs, s->active order):
 * learn_round(). */
void simulate__learn_round(struct sim *s);

/* The nodes job j's GPUs are on (its slots sorted by node; apply.c). */
int simulate__nodes_held(const struct sim_job *j);

/* Epochs per second of job j on u GPUs over nodes nodes of the GPU model of node node, by its
 * true model (apply.c; what the engine runs it at there). */
double simulate__rate_on(const struct sim *s, const struct sim_job *j, size_t node, int u,
                         int nodes);

/* After a round (idle.c): s->idle_usable, the free GPUs that some running elastic job below
 * its max_gpus would finish sooner with, its restart (resize_cost_s) counted, by its true
 * model: grown into the free GPUs of the GPU model it runs on, or moved onto those of
 * another (at most what one job could take of each model's free GPUs). */
void simulate__measure_idle(struct sim *s);

/* Checkpoints (apply.c). Job j made productive progress from `from` to t at its rate: the
 * checkpoints it wrote meanwhile (every checkpoint_every_s of it), its last one kept. */
void simulate__checkpoints(struct sim *s, struct sim_job *j, double from, double t,
                           double epochs_before, double steps_before);

/* Fills r's totals (average, median, p95 JCT, makespan, queueing, utilisation,
 * counts) and per-job figures from the finished run. Returns 0 or -1. */
int simulate__fill_totals(struct sim *s, struct simulate_result *r);

#endif
