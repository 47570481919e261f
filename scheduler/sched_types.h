/* sched_types: the scheduling core's data: a snapshot of the cluster and its
 * jobs, a decision, a policy's op table and the constants of the rules they
 * follow. What the policies (policies/policy.h) see of the core; sched.h, which
 * calls the policies, includes it, so callers of sched.h see it unchanged. */
#ifndef RINGMASTER_SCHED_TYPES_H
#define RINGMASTER_SCHED_TYPES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "convergence.h"
#include "goodput.h"
#include "plan.h"
#include "speed.h"

#define SCHED_MAX_GPUS_PER_NODE 64

/* Exploratory profiling (policy "exploratory"): a job without a fitted speed
 * model runs SCHED_EXPLORE_STAGE_S seconds at each of 1, 2, 4, 8 GPUs in turn;
 * sched_job.explored_s[k] counts the seconds it has run at 2^k GPUs. A
 * snapshot may set its own stage length (sched_snapshot.explore_stage_s). */
#define SCHED_EXPLORE_STAGES 4
#define SCHED_EXPLORE_STAGE_S 150.0

/* Hysteresis of the model-driven policies (precompute, exploratory, optimus;
 * rubick and ringmaster the same way, docs/plans.md):
 * a running job changed less than sched_snapshot.min_resize_interval_s ago is
 * not grown, and is shrunk only to make room for a job that gets its first
 * GPUs; and while reclaiming what a running job already holds, its gain counts
 * (1 + SCHED_KEEP_MARGIN) times plus the restart it avoids, so another job
 * takes those GPUs only for a clearly larger gain (no ping-pong between two
 * running jobs whose gains cross as they progress). SCHED_MIN_RESIZE_INTERVAL_S
 * is the interval callers use by default (the simulator does). */
#define SCHED_KEEP_MARGIN 0.25
#define SCHED_MIN_RESIZE_INTERVAL_S 300.0

/* Batches in place (policies that choose batches, sched_decide): a running adaptive job
 * whose GPUs stay gets the best batch for them only when its goodput beats the batch it runs
 * by 1 + SCHED_BATCH_MIN_GAIN; the change needs no restart (sched_batch_in_place), but a job
 * whose gradient statistics move a little with each report must not change its batch, and
 * its learning rate, with every round; nor does a job learned live while it measures the size
 * it holds (learn_pinned). A change of GPUs always brings the best batch. */
#define SCHED_BATCH_MIN_GAIN 0.05

/* Gandiva (policy "gandiva", docs/gandiva.md): when jobs outnumber GPUs they
 * share them in quanta of sched_snapshot.quantum_s (SCHED_QUANTUM_S when <= 0),
 * suspended in place at a minibatch boundary and resumed later; two 1-GPU jobs
 * that each use at most SCHED_PACK_MAX_UTIL of a GPU may be packed on one GPU,
 * and the packing is kept only while the sum of their normalised rates
 * (rate_packed / rate_alone) exceeds 1 + SCHED_PACK_MIN_GAIN. A GPU never
 * holds more than 2 jobs. */
#define SCHED_QUANTUM_S 60.0
#define SCHED_PACK_MAX_UTIL 0.8
#define SCHED_PACK_MIN_GAIN 0.05

/* No starvation (sched_decide, every policy): a job that fits the cluster and
 * has waited, runnable, longer than sched_snapshot.max_wait_s gets GPUs in
 * the decision whatever the policy chose (docs/scheduler.md "Guarantees").
 * SCHED_MAX_WAIT_S is the default a caller sets (the server's setting); a
 * zero-initialised snapshot has the guarantee off, as before it existed. */
#define SCHED_MAX_WAIT_S 3600.0

/* Tiresias (policy "tiresias", scheduler/policies/tiresias.c): a job leaves the
 * first of its two queues once it has attained this much service, run time x
 * requested GPUs: 16 GPU-hours, the threshold of the Pollux artifact's
 * reimplementation (sched_snapshot.queue_threshold_gpu_s overrides it). */
#define SCHED_TIRESIAS_THRESHOLD_GPU_S (16.0 * 3600.0)

/* Where a job's remaining work (sched_job.remaining_epochs, what every policy
 * reads) comes from. SCHED_EST_GIVEN, the zero value, is the caller's number as
 * it stands (the simulator's oracle); the others are set by
 * sched_estimate_apply() from the job's evidence. */
enum sched_estimate_source {
    SCHED_EST_GIVEN,    /* remaining_epochs as the caller filled it */
    SCHED_EST_DECLARED, /* the declared length less the epochs done */
    SCHED_EST_FIT,      /* the convergence fit of the job's losses */
    SCHED_EST_PRIOR,    /* finished jobs' lengths given the service attained:
                         * E[D - t | D > t] (Gittins / Tiresias) */
    SCHED_EST_ELAPSED,  /* nothing better: as long again as it has run */
};

/* What a decision does to a packed pair (sched_assignment.pack). */
enum sched_pack_action {
    SCHED_PACK_NONE,   /* not packed */
    SCHED_PACK_PACK,   /* starts sharing its GPUs with packed_with (a new pair) */
    SCHED_PACK_KEEP,   /* stays packed with packed_with (measured gain, or not yet measured) */
    SCHED_PACK_REVERT, /* the pair lost useful work: sharing ends; the caller sets
                        * pack_reverted on both jobs so they are not packed again */
};

/* Which running job a guarantee stops first (sched_snapshot.preempt_order, preempt.h). */
enum sched_preempt_order {
    SCHED_PREEMPT_LEAST_LOSS = 0, /* the least work lost since its last checkpoint */
    SCHED_PREEMPT_MOST_SERVICE,   /* the most attained service (GPU-seconds), the rule before
                                   * checkpoints were known: for comparisons
                                   * (ringmaster-sim --preempt-order service) */
};

struct sched_node {
    int64_t id;
    int ngpus;          /* GPUs on the node */
    int up;             /* 0: down or draining, gets no new work */

    /* Multi-resource and heterogeneous nodes (docs/plans.md). Zero-initialised
     * they mean "not advertised": unlimited host resources, GPU model 0 at the
     * reference speed and PLAN_DEFAULT_GPU_MEM_GB of memory. */
    int cpu_cores;      /* host CPU cores; 0: not counted */
    double host_mem_gb; /* host memory, GB; 0: not counted */
    int gpu_model;      /* the caller's GPU-model index; a job's GPUs are all of one */
    double gpu_speed;   /* compute speed relative to the reference GPU; <= 0: 1 */
    double gpu_mem_gb;  /* memory per GPU, GB; <= 0: PLAN_DEFAULT_GPU_MEM_GB */

    /* Drained by an operator (appended; gpumap.h sched_node_open()). Bit g: GPU g gets no
     * new work; a job that holds it keeps it while its allocation stays, unless evacuate,
     * when it is moved off (as off a node that is down). 0: none drained. */
    uint64_t drained;
    int evacuate;
    /* GPUs that failed (appended; the worker's health report: an Xid error, uncorrectable
     * ECC errors, a GPU off the bus). Bit g: GPU g gets no work, and a job on it is moved
     * off, as off a node that is down. */
    uint64_t failed;
    /* Topology (appended; issue 32, scheduler/domain.h). island[g]: 1 + the NVLink island of
     * GPU g on this node (1..64), 0 not known; a node whose GPUs are all 0 is one domain, as
     * before. switch_id, rack_id: the switch and the rack it hangs off, numbered 1..nnodes by
     * the caller (its labels "switch" and "rack"), 0 not known. Placement puts a job in the
     * smallest domain that holds it: an island, a node, a switch, a rack (placement.h). */
    unsigned char island[SCHED_MAX_GPUS_PER_NODE];
    int switch_id;
    int rack_id;
};

/* One GPU slot of an allocation. */
struct sched_slot {
    int node;           /* index into snapshot.nodes */
    int gpu;            /* GPU index on that node */
};

/* How a job's progress and remaining work are known. */
enum sched_model_source {
    SCHED_MODEL_NONE,     /* nothing known: needs exploring or a request */
    SCHED_MODEL_PROFILE,  /* from a profile at arrival (Precompute) */
    SCHED_MODEL_FITTED,   /* fitted online from the job's own reports */
};

/* A job's own speed on one GPU model (sched_job.type_speeds): its speed model there,
 * absolute (no gpu_speed factor applies to it), and that model's largest local batch (GPU
 * memory; <= 0: the job's batch.max_local). */
enum sched_type_source { SCHED_TYPE_GIVEN = 0,   /* handed in (simulator oracle, profiles) */
                         SCHED_TYPE_MEASURED,    /* fitted from the job's own steps on it */
                         SCHED_TYPE_ESTIMATED }; /* never run there: from the cluster's ratios */
struct sched_type_speed {
    int gpu_model;            /* sched_node.gpu_model */
    struct speed_model speed; /* fitted, with batch_per_gpu and dataset_size as the job's */
    double max_local;
    enum sched_type_source source;
    double uncertainty;  /* ESTIMATED: relative 1-sigma of its step time (e.g. 0.3); else 0 */
    int measured_sizes;  /* MEASURED: distinct world sizes measured on this type */
};

struct sched_job {
    int64_t id;
    double submit_time;   /* seconds, on the caller's clock */
    int priority;         /* higher first where a policy orders by it */
    int requested_gpus;   /* what the user asked for (>= 1) */
    int min_gpus, max_gpus; /* min <= 0 means 1; max <= 0 means no limit */
    int elastic;          /* 0: only ever gets requested_gpus */

    /* What it holds now (0 if waiting), and where. slots has cur_gpus entries. */
    int cur_gpus;
    const struct sched_slot *slots;
    double last_change_time; /* when its allocation last changed (start, resize) */
    double run_time;         /* seconds it has held GPUs in total */

    /* Progress and models. remaining_epochs < 0 when unknown: the policies then
     * assume the job is half done, max(epochs_done, 1) epochs to go. The speed
     * model is used only when speed.fitted and model_source != NONE. */
    double epochs_done;
    double remaining_epochs;
    enum sched_model_source model_source;
    struct speed_model speed;
    struct conv_model conv;

    /* Exploratory profiling: seconds observed so far at 1, 2, 4, 8 GPUs. When all
     * four are 0, the stage is derived from run_time instead. */
    double explored_s[4];

    /* Execution plans (Rubick, plan.h). Zero-initialised: no plan information,
     * the job runs plain data parallel. cur_plan is the plan it runs now
     * (meaningful while cur_gpus > 0). */
    struct plan_spec plan;
    struct plan_choice cur_plan;
    /* Gandiva (appended; all 0 for other callers). A suspended job was started
     * and then time-sliced out: cur_gpus is 0, its state waits in host memory;
     * a waiting or suspended job has waited since max(submit_time,
     * last_change_time), which orders the time-slicing queue. */
    int suspended;
    double gpu_util;      /* 0..1: share of one GPU's compute it uses alone; <= 0 unknown (1) */
    double gpu_mem_bytes; /* GPU memory it needs per GPU; 0 unknown */
    int packed;           /* 1: shares its GPUs (same slots) with job packed_with */
    int64_t packed_with;
    double rate_alone;    /* minibatches/s measured alone on its GPUs; 0 unknown */
    double rate_packed;   /* minibatches/s measured while packed; 0 not measured yet */
    int pack_reverted;    /* 1: a packing of it was reverted: never packed again */
    int has_home;         /* suspended: 1 if its state waits on node home_node (an
                           * index into snapshot.nodes); resuming there is cheap,
                           * elsewhere it migrates through its checkpoint */
    int home_node;

    /* Estimates from evidence (appended; sched_estimate_apply()). */
    double declared_epochs;   /* > 0: the length the job declared (total epochs) */
    int stops_at_convergence; /* 1: it stops when its loss converges, maybe early */
    int has_fit;              /* 1: fit_remaining_epochs holds the convergence fit's
                               * epochs to go (0 means the fit says "now") */
    double fit_remaining_epochs;
    enum sched_estimate_source remaining_source; /* where remaining_epochs came from */

    /* Fair share (appended): the user the job belongs to (sched_snapshot.users). */
    int64_t user_id;

    /* Goodput (appended; goodput.h). Zero: no batch model, the job keeps its examples
     * per GPU as it grows. With one (batch.init_batch > 0) its epochs are counted at
     * init_batch, its rate at w GPUs is its goodput at its batch (batch.batch, fixed), or,
     * when batch.adaptive and the policy chooses batches, at the best batch for w. */
    struct batch_spec batch;

    /* Live learning (appended; learn.h). What the job's own steps measured; all 0: not
     * tracked (a given model, as the simulator's), and the learning rules leave it alone.
     * A job measured at one size has its speed model made by learn_apply() from
     * measured_step_s and the prior that the other jobs' fits teach. */
    int measured_sizes;      /* distinct world sizes its steps were measured at */
    int measured_max_gpus;   /* the largest of them */
    double measured_step_s;  /* its mean seconds per step at measured_step_gpus, on the
                              * reference GPU (learn_fit_measured) */
    int measured_nodes;      /* the nodes that size spanned (<= 0: 1) */
    double measured_batch_per_gpu; /* examples per GPU of those steps (<= 0:
                                    * speed.batch_per_gpu) */
    int measured_step_gpus;  /* the size measured_step_s is of (0: none): the one size, or the
                              * smallest of several that gave no reference fit */
    int measured_step_nodes; /* the nodes it spanned (<= 0: 1) */
    /* Per GPU model (appended; docs/plans.md "gpu_speed"). ntype_speeds entries, one per
     * model at most; sched_job_rate_on() reads them. Zero: the job's rate on a model is its
     * speed model times the model's one factor (sched_node.gpu_speed), as before. */
    const struct sched_type_speed *type_speeds;
    size_t ntype_speeds;
    /* Topology (appended; issue 32, domain.h), as Slurm's --switches=N@T. max_switches > 0:
     * a job that holds no GPUs starts only on GPUs of at most this many switches while it has
     * waited less than max_switches_wait_s (since max(submit_time, last_change_time)); then it
     * takes what there is. 0: no bound. */
    int max_switches;
    double max_switches_wait_s;
    /* Deadline (appended; issue 33, policies/minshare.h): > 0, the time on the caller's clock
     * by which the job should finish; 0: none. ringmaster gives it the least share that meets
     * it once its slack runs out; edf orders by it; the others ignore it. */
    double deadline;
    /* Link classes (appended; issue 32, speed.h): bit c set when the job's steps were measured
     * on a placement of class c (enum speed_link; learn_fit_measured). A class it did not
     * measure takes the cluster's prior (learn_links). 0: none known. */
    unsigned measured_links;
    int measured_step_link; /* the class of measured_step_gpus's placement (enum speed_link) */
    /* Checkpoints (appended; issue 33, preempt.h): the time (the caller's clock) and the step
     * of the job's last checkpoint, as its program reported it (libringjob); 0 and 0: none
     * reported, and a stop would lose all of its current run. The core's rule reads the time;
     * the step is the caller's record of it. */
    double last_checkpoint_time;
    int64_t last_checkpoint_step;
    /* The caller's forecast of when the job finishes (appended; issue 33): the P50 of its
     * simulations forward (simulate/outlook.h), on the caller's clock; 0: none. Only words
     * read it (sched_explain: a waiting job's reason names when its GPUs' holders finish by
     * the figure their own page shows); no rule decides by it. */
    double forecast_finish;
};

/* A job's bounds as every part of the core reads them: min_gpus <= 0 means 1, max_gpus <= 0
 * means no limit (INT_MAX). The one writer of these defaults (policy_min_gpus() and
 * policy_max_gpus() are these). */
static inline int sched_job_min_gpus(const struct sched_job *j)
{
    return j->min_gpus > 0 ? j->min_gpus : 1;
}

static inline int sched_job_max_gpus(const struct sched_job *j)
{
    return j->max_gpus > 0 ? j->max_gpus : INT_MAX;
}

/* A user's weight and quota (sched_snapshot.users). A user not listed has
 * share 1 and no quota. */
struct sched_user {
    int64_t id;
    double share;  /* weight of its fair share of the GPUs; <= 0: 1 */
    int max_gpus;  /* quota: the most GPUs its jobs hold at once; <= 0: none */
};

struct sched_snapshot {
    double now;           /* seconds, on the caller's clock */
    uint64_t seed;        /* for any tie-breaking randomness */
    const struct sched_node *nodes;
    size_t nnodes;
    const struct sched_job *jobs;
    size_t njobs;
    double resize_cost_s; /* measured cost of a checkpoint-stop-restart; the
                           * model-driven policies grow a running job only when
                           * the predicted time saved exceeds it */
    double explore_stage_s; /* seconds per exploring stage; <= 0 means
                             * SCHED_EXPLORE_STAGE_S */
    double min_resize_interval_s; /* a running job whose allocation changed
                                   * less than this long ago (now -
                                   * last_change_time) keeps it, except to
                                   * make room for a waiting job; <= 0: no
                                   * minimum (see SCHED_KEEP_MARGIN) */

    /* Gandiva (appended). */
    double quantum_s;          /* time-slice length; <= 0 means SCHED_QUANTUM_S */
    double gpu_mem_bytes;      /* memory of one GPU, bounds packing; 0 unknown (no bound) */

    /* Guarantees every policy goes through (appended; docs/scheduler.md). */
    double max_wait_s;         /* no starvation: the longest a runnable job waits
                                * (callers: SCHED_MAX_WAIT_S); <= 0 or infinite:
                                * off */
    const struct sched_user *users; /* nusers entries: shares and quotas */
    size_t nusers;
    const double *finished_run_s;   /* run times (seconds holding GPUs) of a sample
                                     * of finished jobs: the prior of
                                     * sched_estimate_apply() */
    size_t nfinished;

    /* Tiresias (appended; policy "tiresias"). Zero-initialised: the defaults
     * of the original (docs/plans.md). */
    double queue_threshold_gpu_s; /* attained service (GPU-seconds) that demotes a
                                   * job to the second queue; <= 0:
                                   * SCHED_TIRESIAS_THRESHOLD_GPU_S */
    double starvation_knob;       /* > 0: a demoted job that has waited this many
                                   * times its executed time goes back to the
                                   * first queue; <= 0: never (the default) */

    /* Preemption by the guarantees (appended; issue 33, preempt.h). */
    double min_runtime_s; /* a running job is not stopped within this of its current run's
                           * start (the setting min_runtime_s); <= 0: no minimum */
    enum sched_preempt_order preempt_order; /* which running job is stopped first */
};

/* A job's part of a decision, in snapshot order. */
struct sched_assignment {
    int64_t job_id;
    int gpus;                 /* 0: waits */
    struct sched_slot *slots; /* gpus entries (owned by the decision) */
    int changed;              /* 1 if gpus or slots differ from what it holds */
    const char *reason;       /* why it runs, waits or changed: static text, never
                               * NULL, e.g. "started", "resized: grown",
                               * "waiting: the policy gave it no GPUs" */
    int wanted;               /* what the policy asked for; gpus < wanted when
                               * placement had to cut it down */

    /* Plans and heterogeneity (docs/plans.md). */
    struct plan_choice plan;  /* the plan to run, with its host demand per GPU
                               * (cpu_cores, host_mem_gb); for a job without plan
                               * info: data parallel, no host demand */
    int plan_changed;         /* 1 if it runs and its plan differs from cur_plan
                               * (a restart even when its slots stay) */
    int gpu_model;            /* the GPU model of its slots (0 when it waits) */
    /* Appended for Gandiva; every policy sets them, only gandiva packs. */
    int suspended;            /* 1: a running job time-sliced out (policy with
                               * time_slices): gpus 0, suspend it in place at a
                               * minibatch boundary, state to host memory, GPUs
                               * freed (other policies' preemption checkpoints) */
    int resumed;              /* 1: a suspended job gets GPUs again: resume it (in
                               * place when its slots are on the node it left,
                               * else through its checkpoint) */
    int migrated;             /* 1: same count on other GPUs: checkpoint and
                               * restart there */
    enum sched_pack_action pack;
    int64_t packed_with;      /* the partner when pack is PACK, KEEP or REVERT */
    /* Appended for the guarantees. */
    int forced;               /* 1: the max-wait guard gave it GPUs (2: the fair
                               * share did), whatever the policy chose; 3: the
                               * policy gave it the least share that meets its
                               * deadline (policies/minshare.h), which may stop
                               * running jobs as a guarantee does */
    /* Appended for goodput. */
    double batch;             /* the global batch to run at (a job with a batch model
                               * that runs; 0 otherwise): its own unless the policy
                               * chooses batches and the job is adaptive */
    /* Appended for consolidation (issue 32 item 4): 1 when it migrates to make room for job
     * room_for (its reason names it: sched_decision.room_text). */
    int has_room_for;
    int64_t room_for;
    /* Appended (issue 33): a running job stopped to make room for job preempted_for (its id)
     * by preempted_by, as forced: 1 max_wait_s, 2 the fair share, 3 a deadline's least share;
     * its reason names them (sched_decision.stop_text). 0: not so stopped. */
    int preempted_by;
    int64_t preempted_for;
};

struct sched_decision {
    struct sched_assignment *assign; /* njobs entries, snapshot order */
    size_t njobs;
    double fragmentation;     /* 0..1: fraction of free GPUs on up nodes outside
                               * the largest free aligned block of their node
                               * (0: every node's free GPUs form one buddy
                               * block); see placement.h */
    int capacity;             /* GPUs on up nodes */
    int used;                 /* GPUs assigned by this decision */
    int nchanged;             /* assignments with changed == 1 */
    struct sched_slot *slot_pool; /* every assignment's slots point into it */

    /* Appended for Gandiva. used counts each GPU once; a packed pair's two
     * assignments name the same slots (at most 2 jobs on one GPU). */
    int packed_gpus;          /* GPUs shared by a packed pair */
    /* Appended (issue 32 item 4): the reason of the jobs migrated to make room for another
     * ("migrated: to let job 12 run on one NVLink island"); their reason points here. */
    char room_text[96];
    /* Appended (issue 33): the reasons of the jobs a guarantee or a deadline stopped
     * ("preempted: for job 12, which had waited longer than max_wait_s"), SCHED_STOP_TEXT
     * bytes each, njobs of them (NULL when none was); their reason points here. */
    char *stop_text;
};
#define SCHED_STOP_TEXT 96

/* A policy: given a snapshot, how many GPUs each job gets (want[i], 0 = waits).
 * Placement then maps those counts onto nodes. Returns 0, or -1 with errno. */
typedef int (*sched_allocate_f)(const struct sched_snapshot *snap, int *want);

/* A policy's last word on a decision that placement built (optional): it may
 * set the pack fields and give a packed job its partner's slots (pointing at
 * them). Returns 0, or -1 with errno. */
typedef int (*sched_refine_f)(const struct sched_snapshot *snap, struct sched_decision *d);

struct sched_policy_ops {
    const char *name;
    const char *summary;
    sched_allocate_f allocate;
    /* Appended for Gandiva. */
    sched_refine_f refine; /* NULL: none */
    int time_slices;       /* 1: a running job it gives no GPUs is suspended in
                            * place (assignment.suspended), not checkpointed */
    /* Appended for Tiresias. */
    int keeps_slots;       /* 1: a running job whose count is unchanged keeps its
                            * GPUs, never moved to let another job span fewer
                            * nodes (placement_create_ex, repack 0) */
    /* Appended for goodput. */
    int chooses_batch;     /* 1: it chooses an adaptive job's batch with its GPUs; 0: every
                            * job runs at its own batch (the policy sees adaptive = 0) */
};

#endif
