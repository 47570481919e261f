/* policy_plan: what the plan-, resource- and GPU-model-aware policies rubick
 * (policies/rubick.c) and ringmaster (policies/ringmaster.c) share (internal to
 * scheduler/; docs/plans.md):
 *
 * - policies/plans.c: the GPU-model classes, a job's rate and predicted time on
 *   a class, its base count, where it starts, the final plans;
 * - policies/grow.c: growth by doublings from a max-heap of candidates, weighed
 *   by seconds saved (rubick) or by completion rate (ringmaster, which also
 *   starts jobs from the heap).
 *
 * Classes: the up nodes grouped by GPU model; each has a speed, a memory per
 * GPU, free GPUs, and the host share per GPU that a plan may hold there (the
 * least cpu_cores / ngpus and host_mem_gb / ngpus of its nodes that advertise
 * them): plans within that share can never over-commit a node, whatever the
 * placement (placement_multi refuses the rest as a safety net).
 *
 * Rate of job i on w GPUs of class c: plan_best() (the fastest plan it
 * supports that fits); for a job with a batch model or its own model per GPU model,
 * sched_job_rate_on() of the class's model (sched_estimate.h); T = remaining epochs / rate.
 *
 * Base count of a job on a class: for a job with plan information the fewest
 * GPUs (powers of two from min_gpus) whose best plan is at least as fast as
 * its requested plan on its requested GPUs (the guarantee); for an elastic
 * job with a speed model min_gpus; else its request. A running job restarts
 * on the class it holds if its base fits there; a new job goes where its base
 * runs fastest per GPU (policy_plan_start_class), a job without a speed model yet (it
 * learns from its steps) on the class whose one factor (gpu_speed) is highest.
 *
 * Both policies end the same way (policy_plan_finish): the plan of each job
 * is the best plan at its final count; a job whose best plan there is slower
 * than its guarantee waits instead. */
#ifndef RINGMASTER_POLICY_PLAN_H
#define RINGMASTER_POLICY_PLAN_H

#include <limits.h>
#include <stddef.h>

#include "policy.h"

/* Ageing: a waiting job's key and gains are multiplied (or its key divided)
 * by 1 + waited / POLICY_PLAN_AGE_S. */
#define POLICY_PLAN_AGE_S (4.0 * 3600.0)

struct policy_plan_class {
    int model;
    double speed, mem;
    int cores;   /* per GPU a plan may hold; 0: no limit */
    double host; /* per GPU; 0: no limit */
    long free;
};

/* policy_plan_job.pinned of a job held at a size it is learning (learn_pinned). */
#define POLICY_PLAN_STAGED 2

/* What the growth loops read of each job, gathered once a round: the loops visit jobs in
 * heap order, and each visit to the snapshot's jobs (about 500 bytes apart) was a few cache
 * misses at 10,000 jobs. */
struct policy_plan_job {
    double remaining; /* policy_remaining_epochs() */
    double boost;     /* ageing factor of its gains: 1 + waited / POLICY_PLAN_AGE_S, or 1 */
    int cur_gpus;
    int min_gpus;     /* policy_min_gpus() */
    int max_gpus;     /* learn_max_gpus(): for a learning job 2x its largest measured */
    int run_cls;      /* policy_plan_running_class() */
    unsigned char speed, elastic, plan, pinned; /* policy_has_speed(), elastic,
                                                 * plan_has_info(), policy_pinned(): 1, or
                                                 * POLICY_PLAN_STAGED for a still-learning
                                                 * job held for its stage (learn_pinned) */
    unsigned char goodput;                      /* goodput_has_model() */
    unsigned char fills_idle;                   /* learn_fills_idle() */
    unsigned char typed;                        /* it has its own model per GPU model
                                                 * (sched_job.ntype_speeds > 0) */
};

/* Counts 1, 2, 4, ..., 128 are memoised (unsigned char bits). */
#define POLICY_PLAN_MEMO_POW 8

/* One round's working state of a plan-aware policy. */
struct policy_plan {
    const struct sched_snapshot *snap;
    struct policy_plan_class *cls;
    size_t ncls;
    struct policy_plan_job *job; /* per job */
    /* Per job: a copy of its speed model (zeros without one), taken in the pass that gathers
     * pp->job, where the job's lines are at hand; the rates read it. At 10,000 jobs the models
     * in the 504-byte jobs were a miss to memory for every job's first rate (perf: 14 % of a
     * rubick round on one load); these 80-byte copies sit together. */
    struct speed_model *speed;
    double *guarantee; /* per job: epochs/s its requested plan gives; 0: none */
    int *cls_of;       /* per job: class index, -1 */
    size_t *order, *rank;
    double *key;
    int *priority;  /* per job: its priority, gathered with pp->job (ringmaster's order reads
                     * it in key order, a job's line of the snapshot apiece) */
    int *cap;       /* ringmaster: growth bound of the first greedy pass; INT_MAX: none;
                     * POLICY_PLAN_CAP_LATER: cap_of(pp, i) works it out when first asked
                     * (most jobs of a long queue never start, and a bound costs pow()s) */
    int (*cap_of)(const struct policy_plan *pp, size_t i);
    struct policy_plan_exp *exp; /* ringmaster: its exponents and what cap_of needs */
    double *weight; /* ringmaster: factor on a waiting job's start gain; 1 unless set */
    double *start;  /* ringmaster, when set: per job, the best completion rate per GPU at its
                     * base on any class (policy_grow_push()'s start gain before its factors),
                     * worked out with its key; NULL: worked out when asked */
    /* The round's memo of policy_plan_rate() at 2^k GPUs (k < POLICY_PLAN_MEMO_POW), per job
     * and class: bit k of rate_known[i * ncls + c] says rate_memo[(i * ncls + c) *
     * POLICY_PLAN_MEMO_POW + k] holds it. A rate depends only on the job, the count and the
     * class's model and host shares, none of which change within a round; the growth loops
     * ask for the same few counts of every job again and again. */
    unsigned char *rate_known;
    double *rate_memo;
    /* The all-reduce coefficients (features 2..4, speed_features_placed()) of 2^k GPUs, k <
     * POLICY_PLAN_MEMO_POW: a new rate of a job without plan information is the speed model
     * at them, without working them out again (plan_dp_rate()). */
    double allreduce[POLICY_PLAN_MEMO_POW][3];
    double resize_cost; /* the snapshot's resize_cost_s if positive and finite, else 0 */
    int *pref; /* ringmaster, when set: per job, the class it starts and grows on (-1: any;
                * policy_typed_assign()); NULL: any */
};

#define POLICY_PLAN_CAP_LATER INT_MIN

/* A policy's body: fills pw[].gpus (and cls_of) from pp. Returns 0, or -1. */
typedef int (*policy_plan_body_f)(struct policy_plan *pp, struct policy_want *pw);

/* Sets up pp for snap (classes, guarantees, the policy order in order and
 * rank, no caps, weights 1), runs body, then policy_plan_finish(). Returns 0, or -1
 * with errno (ENOMEM, or body's). */
int policy_plan_allocate(const struct sched_snapshot *snap, struct policy_want *pw,
                         policy_plan_body_f body);

/* The counts alone of an allocate_ex function, into want[0..njobs). */
int policy_plan_counts(const struct sched_snapshot *snap, int *want, policy_allocate_ex_f ex);

/* Epochs per second of job i on w GPUs of class c with its best plan (its
 * plan into *out when out is not NULL); 0 without a speed model. */
double policy_plan_rate(const struct policy_plan *pp, size_t i, int w, size_t c,
                        struct plan_choice *out);

/* Predicted seconds to finish job i on w GPUs of class c; INFINITY if none. */
double policy_plan_time_at(const struct policy_plan *pp, size_t i, int w, size_t c);

/* Base count of job i on class c within cap GPUs; 0 if none fits. */
int policy_plan_base_count(const struct policy_plan *pp, size_t i, size_t c, long cap);

/* The class a running job i's GPUs are all of, or -1. */
long policy_plan_running_class(const struct policy_plan *pp, size_t i);

/* The class and base count (*w) job i starts on now (free GPUs), or -1: its
 * class pp->pref[i] when set (-1 if its base does not fit there); else a
 * running job restarts on the class it holds if its base fits there (growth
 * may move it later, paying the restart), a new one where its base runs
 * fastest per GPU, one without a speed model on the class of the highest gpu_speed. */
long policy_plan_start_class(const struct policy_plan *pp, size_t i, int *w);

/* Gives job i its base on the class policy_plan_start_class() picks, if any. */
void policy_plan_give_base(struct policy_plan *pp, size_t i, struct policy_want *pw);

/* 1 if job i holds a count it may double: elastic, a model, 2w within its
 * max_gpus and within its cap (pp->cap, when set). */
int policy_plan_can_grow(const struct policy_plan *pp, size_t i, const struct policy_want *pw);

/* ---- policies/grow.c -------------------------------------------------------
 *
 * A job on w GPUs of class c grows to 2w on class c (w more free there) or,
 * if it is not running yet, moves to 2w on another class `to` (2w free there;
 * its w on c are freed). rm = 0 weighs a step by the seconds it saves per
 * added GPU (rubick), rm = 1 by the completion rate it adds per added GPU
 * (ringmaster, policies/ringmaster.c), where a waiting job's start is also a
 * candidate. Either way a step back to what a running job holds counts
 * (1 + SCHED_KEEP_MARGIN) times (rubick also adds the restart it avoids), and
 * a step that restarts a running job (past what it holds, or to another
 * class) pays resize_cost_s. */

/* Starts job i if a class has room for its base; a pinned running job then
 * gets back what it holds. Returns 1 if it started. */
int policy_grow_start(struct policy_plan *pp, size_t i, struct policy_want *pw);

/* Pushes job i's next step (its start when rm and it waits; else its best
 * doubling unless it is pinned or cannot grow) if it gains. Returns 0, or -1
 * with errno ENOSPC. */
int policy_grow_push(const struct policy_plan *pp, struct policy_heap *h,
                     const struct policy_want *pw, size_t i, int rm);

/* Pops candidates best first and applies them (pushing each job's next step);
 * a gain that fell since it was pushed goes back in at its new value.
 * Returns 0, or -1. */
int policy_grow_loop(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw, int rm);

/* 1 while some class has a free GPU (a start or a growth may still fit), else 0. */
int policy_grow_room(const struct policy_plan *pp);

/* After the doublings: each class's free GPUs go, in any count, to the jobs on that class
 * that gain most per GPU from them (policy_typed_value; back to what a job with a learned
 * model holds, without the margin, as learn.h keeps it), up to each job's max_gpus. Jobs
 * without a model or not elastic are left as they are; a pinned job may grow so, never
 * shrink: min_resize_interval_s guards against restarts that undo each other, not against
 * using GPUs that nobody else takes; a job held for its learning stage (POLICY_PLAN_STAGED)
 * is left alone until it measured the size it holds for a share of the stage
 * (learn_stage_fills), then grows so too. The doublings leave GPUs idle that no doubling
 * fits (8 free next to a job on 16); a count that is not a power of two is as good a size to
 * the speed model. A lazy heap of each job's best gain per GPU (h, cleared on entry and on
 * return). Returns 0, or -1 (ENOMEM). */
int policy_grow_fill(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw);

/* ---- policies/typed.c ------------------------------------------------------
 *
 * Ringmaster's GPU type per job when jobs have their own speed model per GPU model
 * (sched_job.type_speeds; docs/evaluation.md section 8). */

/* 1 if job i's type is chosen by comparative advantage: elastic, a model, its own models
 * per GPU model, no plan information. */
int policy_typed_job(const struct policy_plan *pp, size_t i);

/* What job i on w GPUs of class c adds to the completion rate ringmaster maximises:
 * 1 / T(w) times its ageing and weight; a running job that would restart (another count or
 * class) adds resize_cost_s to T, one that keeps what it holds counts (1 + SCHED_KEEP_MARGIN)
 * times. 0: it cannot run there. */
double policy_typed_value(const struct policy_plan *pp, size_t i, int w, size_t c);

/* Each class's GPUs to the jobs with the comparative advantage there: from an allocation
 * (pw, pp->cls_of) of total[c] GPUs per class, each typed job that holds GPUs and is not
 * pinned gets a class for its count into pref[i], the one with the largest regret first
 * (its goodput relative to its best class, on its best class with room less on the next,
 * times its count); the class it runs on counts (1 + SCHED_KEEP_MARGIN) times, another
 * loses the restart's share of its time there. A pinned typed job keeps the class it runs
 * on; the others get -1 (any). A lazy heap of regrets: O(m log m) for m such jobs, bar the
 * regrets that fall as classes fill. Returns 0, or -1 (ENOMEM). */
int policy_typed_assign(const struct policy_plan *pp, const struct policy_want *pw,
                        const long *total, int *pref);

/* Exchanges the GPUs of pairs of typed jobs on different classes (count and class whole,
 * so no class gives out more) while that raises their summed policy_typed_value(), best
 * exchange first: at most 16 exchanges, and none when more than 256 jobs could take part
 * (its table of values is their number squared). Returns 0, or -1 (ENOMEM). */
int policy_typed_swap(struct policy_plan *pp, struct policy_want *pw);

#endif
