/* learn_types: a job's model on each GPU type of the cluster, learned live (the rule, written
 * once; the server's round and the simulator's --speed live call learn_round()):
 *  - Measured. Each GPU model the job's steps were measured on gets its own entry
 *    (learn_fit_types(): its own fit from two sizes or more; from one the one-size rule,
 *    with the job's own communication when its reference model is its own fit of two sizes
 *    or more, else with the round's prior), source SCHED_TYPE_MEASURED. Its fits of two
 *    sizes or more are kept in the caller's cache while its steps are the same. A measurement replaces any
 *    estimate: an entry is measured as soon as one step time on the type is.
 *  - Estimated. Every other GPU model of the cluster gets an entry from the ratios that this
 *    cluster's jobs measured between types (source SCHED_TYPE_ESTIMATED): per pair of types
 *    (a, b), over the jobs with a measured entry on both, x = log(t_b / t_a) of their 1-GPU
 *    step times (the compute the types differ in); the ratio is exp(mean x) and its
 *    uncertainty, the relative 1-sigma of the step time, sqrt((sum (x - mean)^2 +
 *    LEARN_SIGMA_PRIOR^2) / k) over those k jobs (the spread of the jobs' ratios, the prior's
 *    width counted once, so that one job is not taken as certain). Without a job that
 *    measured both, the ratio of the two types' factors (gpu_speed_a / gpu_speed_b) with
 *    uncertainty LEARN_SIGMA_PRIOR. The job's entry on b is its measured model on the a that
 *    most jobs measured together with b (ties: the smaller uncertainty), its compute terms
 *    (theta[0], theta[1]) times the ratio, its communication as measured.
 *  - Free GPUs are free experiments: an estimate of a type with idle GPUs is used
 *    optimistically by its uncertainty (learn_type_experiment(), learn.h).
 *  - Largest local batch per type: what the job reported fits in one GPU of a model (the
 *    caller's fits: the most examples a rank computes at once there, as the job measured it)
 *    is that type's; the job's batch.max_local is known on one GPU model (the caller says
 *    which); on another its entry's max_local is the first reported fit (else that declared
 *    one) times the ratio of their GPU memory (sched_node.gpu_mem_gb), unless the entry has
 *    its own (> 0). Memory is only a guess at the limit: a model's own memory and its
 *    activations do not scale with it, so a report replaces it on its type.
 *  - A job that measured nothing has no entries: the policies read its reference model
 *    (sched_job.speed) times each type's factor, as before.
 * Pure: no I/O. */
#ifndef RINGMASTER_LEARN_TYPES_H
#define RINGMASTER_LEARN_TYPES_H

#include <stddef.h>

#include "learn_fit.h"
#include "sched_types.h"

#define LEARN_MAX_TYPES 16
/* The width (relative 1-sigma of a step time) of an estimate that no job's pair of
 * measurements supports, and the weight of that prior in one that some support. */
#define LEARN_SIGMA_PRIOR 0.5

/* A GPU model of the cluster, from its nodes. */
struct learn_type {
    int gpu_model;
    double gpu_speed;  /* its one factor (<= 0: 1) */
    double gpu_mem_gb; /* memory per GPU (<= 0: PLAN_DEFAULT_GPU_MEM_GB) */
    int gpus_per_node; /* the most GPUs of one of its nodes */
    int gpus;          /* on up nodes */
    int idle;          /* of those, held by no job of the snapshot */
};

/* The cluster's types and the log ratios its jobs measured between them. */
struct learn_ratios {
    size_t ntypes;
    struct learn_type type[LEARN_MAX_TYPES];
    /* [a][b]: over the jobs measured on both, sum and sum of squares of log(t_b / t_a) */
    double sum[LEARN_MAX_TYPES][LEARN_MAX_TYPES];
    double sum2[LEARN_MAX_TYPES][LEARN_MAX_TYPES];
    int jobs[LEARN_MAX_TYPES][LEARN_MAX_TYPES];
};

/* The types of nodes[0..nnodes) (the first LEARN_MAX_TYPES models) with their idle GPUs, and
 * the ratios that the MEASURED entries of jobs[0..njobs) (their type_speeds) say. */
void learn_ratios_make(struct learn_ratios *r, const struct sched_node *nodes, size_t nnodes,
                       const struct sched_job *jobs, size_t njobs);

/* The index into r->type of GPU model g, or -1. */
int learn_type_index(const struct learn_ratios *r, int g);

/* The ratio of a job's step time on model b to that on model a into *ratio, its uncertainty
 * into *sigma (see above). Returns the jobs that measured both (0: from the factors; -1:
 * a or b is not a type of the cluster, *ratio 1 and *sigma LEARN_SIGMA_PRIOR). */
int learn_ratio(const struct learn_ratios *r, int a, int b, double *ratio, double *sigma);

/* Appends to types[0..n) (job j's entries, at most cap in all) an ESTIMATED entry for each
 * type of the cluster that has none, from j's MEASURED entries (none: nothing appended).
 * Returns the entries now. */
size_t learn_estimate_types(const struct learn_ratios *r, struct sched_type_speed *types,
                            size_t n, size_t cap);

/* Sets each entry's max_local that is not positive: max_local (the job's, known on GPU model
 * known; known < 0 or max_local <= 0: left as is) times that type's memory over known's. */
void learn_types_max_local(const struct learn_ratios *r, double max_local, int known,
                           struct sched_type_speed *types, size_t n);

/* What a job reported fits in one GPU of a model: the most examples one rank computes at
 * once there (ringjob_report_fits()). */
struct learn_fits {
    int gpu_model;
    double max_local; /* > 0 */
};

/* Sets the max_local of each entry of types[0..n) whose GPU model has a fit among
 * fits[0..nfits) to it; then, as learn_types_max_local(), the others' from the first fit
 * (none: from max_local known on model known). */
void learn_types_fits(const struct learn_ratios *r, const struct learn_fits *fits, size_t nfits,
                      double max_local, int known, struct sched_type_speed *types, size_t n);

/* A job's steps and the storage of its entries, for learn_round(). obs NULL or nobs 0: the
 * job is left as it is (a caller's given type_speeds included). */
struct learn_job_steps {
    const struct learn_obs *obs;
    size_t nobs;
    struct sched_type_speed *types; /* cap entries, the job's type_speeds after the call */
    size_t cap;
    int max_local_model; /* the GPU model its batch.max_local is known on; < 0: every type */
    /* The caller's cache of the job's fits (may be NULL: every fit made each round) and the
     * version of obs (any change of the steps, or of the job's batch_per_gpu, must change
     * it): fits of two sizes or more made for the same version are reused. */
    struct learn_fit_cache *cache;
    long long version;
    /* Appended: what it reported fits in one GPU, per GPU model (may be NULL, nfits 0). */
    const struct learn_fits *fits;
    size_t nfits;
};

/* A round's learning over the snapshot's jobs[0..n) (the caller's, before sched_decide):
 * learn_apply()'s one-size reference models; then for each job with steps (in[i], may be
 * NULL: none) its MEASURED entries (learn_fit_types, with the round's prior), the ESTIMATED
 * ones of the cluster's other types from the ratios of all jobs' measured entries, each
 * type's largest local batch and nodes' size (gpus_per_node), and the experiment rule;
 * jobs[i].type_speeds then points at in[i].types. Returns the one-size reference models
 * made. */
size_t learn_round(struct sched_job *jobs, size_t n, const struct sched_node *nodes,
                   size_t nnodes, const struct learn_job_steps *in);

#endif
