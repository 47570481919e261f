/* policy: the policies' op tables and what they share (internal to scheduler/;
 * sched.c lists the policies and callers reach them through sched.h). The
 * policies see the core's types (sched_types.h) and estimates
 * (sched_estimate.h), never sched.h, whose implementation calls them.
 *
 * Order: every policy serves jobs by priority (higher first), then arrival
 * (submit_time), then id, so ties never depend on snapshot order and the same
 * snapshot always gives the same counts; no randomness is used.
 *
 * Per-job bounds: min_gpus <= 0 means 1, max_gpus <= 0 means no limit, and a
 * job with elastic == 0 only ever gets requested_gpus (or waits). */
#ifndef RINGMASTER_POLICY_H
#define RINGMASTER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "learn.h"
#include "sched_estimate.h"
#include "sched_types.h"

extern const struct sched_policy_ops policy_fixed_one;
extern const struct sched_policy_ops policy_fixed_two;
extern const struct sched_policy_ops policy_fixed_four;
extern const struct sched_policy_ops policy_fixed_eight;
extern const struct sched_policy_ops policy_fifo;
extern const struct sched_policy_ops policy_optimus;
extern const struct sched_policy_ops policy_precompute;
extern const struct sched_policy_ops policy_exploratory;
extern const struct sched_policy_ops policy_tiresias;
extern const struct sched_policy_ops policy_rubick;
extern const struct sched_policy_ops policy_ringmaster;
extern const struct sched_policy_ops policy_edf;

/* What a plan- and GPU-model-aware policy chooses for a job (policies/plans.h). */
struct policy_want {
    int gpus;                /* as want[i]: 0 waits */
    int gpu_model;           /* the GPU model all its GPUs must be of; -1: any */
    struct plan_choice plan; /* the plan, with its host demand per GPU */
    int has_plan;            /* 0: sched_decide() gives the job its default plan */
    int deadline;            /* 1: its least share for its deadline (minshare.h) raised gpus */
    int64_t stopped_for;     /* minshare.h stopped it (gpus 0) for this job's deadline (its
                              * id; 0: not) */
};

/* The richer allocator of rubick and ringmaster: fills want[0..njobs) (zeroed,
 * gpu_model -1, by the caller). Returns 0, or -1 with errno. */
typedef int (*policy_allocate_ex_f)(const struct sched_snapshot *snap, struct policy_want *want);

/* The richer allocator of policy p, or NULL if p only fills counts. */
policy_allocate_ex_f policy_allocate_ex_for(const struct sched_policy_ops *p);

/* The richer allocators of rubick (policies/rubick.c) and ringmaster
 * (policies/ringmaster.c), as policy_allocate_ex_f. */
int policy_rubick_ex(const struct sched_snapshot *snap, struct policy_want *want);
int policy_ringmaster_ex(const struct sched_snapshot *snap, struct policy_want *want);
extern const struct sched_policy_ops policy_gandiva;

/* GPUs that work can use: on nodes up, less the drained ones no job holds (all drained
 * ones of a node that evacuates; gpumap_open()). */
int policy_capacity(const struct sched_snapshot *snap);

/* The map of held GPUs (gpumap_held(); free() it) when some node has drained GPUs, else
 * NULL (also when out of memory: drains are then not counted, placement still keeps them). */
uint64_t *policy_held_if_drained(const struct sched_snapshot *snap);

/* What node n adds to policy_capacity() given held (policy_held_if_drained()). */
int policy_node_open(const struct sched_snapshot *snap, size_t n, const uint64_t *held);

/* Where a job stands in the core's one order among jobs. */
struct policy_rank {
    int priority;
    double submit;
    int64_t id;
};

/* That order: higher priority first, then earlier arrival, then lower id.
 * Returns -1, 0 or 1. */
int policy_rank_cmp(const struct policy_rank *a, const struct policy_rank *b);

/* Fills order[0..njobs) with job indices by priority, arrival, id.
 * Returns 0, or -1 with errno ENOMEM. */
int policy_order(const struct sched_snapshot *snap, size_t *order);

/* The job's bounds: min >= 1, max (INT_MAX when unlimited). */
int policy_min_gpus(const struct sched_job *j);
int policy_max_gpus(const struct sched_job *j);

/* w brought within the job's bounds; requested_gpus for a non-elastic job. */
int policy_clamp(const struct sched_job *j, int w);

/* 1 if the job's speed model may be used (speed.fitted and a model source). */
int policy_has_speed(const struct sched_job *j);

/* Epochs still to run: remaining_epochs, or when unknown (< 0) the guess that
 * the job is half done, max(epochs_done, 1). */
double policy_remaining_epochs(const struct sched_job *j);

/* Predicted seconds to finish on w GPUs, T(w) = remaining / epochs_per_second(w);
 * INFINITY when the job has no usable speed model or the speed is not positive. */
double policy_time_at(const struct sched_job *j, int w);

/* What growing a job from w to w2 > w GPUs costs beyond its speed: the
 * snapshot's resize_cost_s when the job is running and this step takes it past
 * the count it holds (it must checkpoint and restart), else 0. The growth
 * loops subtract it from the step's gain, so a running job is not resized for
 * less than the restart costs; starting a waiting job costs nothing extra. */
double policy_resize_penalty(const struct sched_snapshot *snap, const struct sched_job *j, int w,
                             int w2);

/* 1 if the job runs and its allocation changed less than the snapshot's
 * min_resize_interval_s ago: it must not be resized again yet; a learning job instead until
 * it measured its size for a stage (learn_pinned: its next size is the experiment). */
int policy_pinned(const struct sched_snapshot *snap, const struct sched_job *j);

/* The predicted seconds saved by growing job j from w to w2 > w GPUs, as the
 * growth loops weigh it: T(w) - T(w2) less policy_resize_penalty() when the
 * step goes past what a running job holds; when w2 <= cur_gpus (the job
 * reclaims GPUs it holds) (T(w) - T(w2)) * (1 + SCHED_KEEP_MARGIN) plus the
 * restart avoided (resize_cost_s); for a job learned from its own steps, at least
 * LEARN_IDLE_GAIN when its model does not predict the step slower (learn_step_gain). Not finite when the job has no model. */
double policy_step_gain(const struct sched_snapshot *snap, const struct sched_job *j, int w,
                        int w2);

/* policy_step_gain() for job i of snap with a memo of the last count each job grew to and
 * its T: a growth loop asks for T(w) and T(2w) (or T(w + 1)), then for T(2w) and T(4w), so
 * half the speed-model evaluations were repeats. The memo also holds what the loops read of
 * each job besides its speed model, gathered in one pass: they visit jobs in heap order, and
 * each field of the 504-byte job they read there was a cache miss at 10,000 jobs. m has
 * njobs entries from policy_time_memo_create() (free() it), which gathers the jobs with
 * want[i] > 0 (those the loops grow; the others' entries hold nothing and must not be
 * asked); the gain is the same number. */
struct policy_time_memo {
    int w;        /* the count t is for */
    int max_gpus; /* learn_max_gpus(): its bound, for a learning job 2x its largest measured */
    int cur_gpus;
    unsigned char speed, goodput, pinned; /* policy_has_speed(), goodput_has_model(),
                                           * policy_pinned() */
    unsigned char fills_idle;             /* learn_fills_idle() */
    double t;                             /* policy_time_at(j, w) */
    double remaining;                     /* policy_remaining_epochs() */
};
struct policy_time_memo *policy_time_memo_create(const struct sched_snapshot *snap,
                                                 const int *want);
double policy_step_gain_memo(const struct sched_snapshot *snap, size_t i, int w, int w2,
                             struct policy_time_memo *m);

/* The job-rank order's inverse: rank[order[k]] = k. */
void policy_ranks(const size_t *order, size_t n, size_t *rank);

/* A max-heap of growth candidates: largest gain first, then smallest rank. Gains are never
 * NaN, and a job has at most one candidate in it at a time (ranks differ), so the order is
 * strict.
 *
 * The candidates pushed before the first pop (a policy's first candidate of every job: up
 * to 10,000 of them) wait in a run that the first pop sorts once (radix), when it holds
 * 4,096 or more (fewer go into the heap then; a heap for fewer than 4,096 has no run);
 * later pushes go to the heap, and each pop takes the better of the run's next and the
 * heap's top. At 10,000 jobs the heap's pops were the largest part of a doubling round;
 * now most pops take the run's next in O(1). */
struct policy_cand {
    double gain;
    size_t rank;
    size_t job;
};

struct radix_item;

/* A candidate as the heap holds it: 16 bytes, so that the four children of a node share one
 * cache line (the arrays are offset for that, policy_heap_init()): a pop goes down one line
 * a level. The gain is kept as an integer of the same order (its bits, the negative ones
 * reversed), which compares faster along a pop's chain of comparisons and gives the gain
 * back exactly (a gain of -0.0 comes back as 0.0, its equal). Ranks and jobs below 2^32 (a
 * push of a larger one fails with EOVERFLOW). */
struct policy_heap_item {
    uint64_t key;
    uint32_t rank, job;
};

struct policy_heap {
    struct policy_heap_item *items; /* the heap, items[0..n) */
    size_t n, cap;
    struct policy_heap_item *run; /* run[run_at..run_n): pushed before the first pop */
    size_t run_n, run_at;
    int sorted; /* 1 once a pop sorted the run (or from the start when cap is
                 * too small for one: run NULL); pushes then go to the heap */
    struct radix_item *sort, *tmp;
};

/* Room for cap candidates. Returns 0, or -1 with errno ENOMEM. */
int policy_heap_init(struct policy_heap *h, size_t cap);
void policy_heap_fini(struct policy_heap *h);
/* Adds c; returns -1 (ENOSPC) when full (cap candidates in the run, or in the heap;
 * EOVERFLOW for a rank or job of 2^32 or more). */
int policy_heap_push(struct policy_heap *h, struct policy_cand c);
/* policy_heap_push() of {gain, rank, job}, the three in registers: a candidate built to be
 * passed by value went through the stack, and its reload waited on the store. */
int policy_heap_add(struct policy_heap *h, double gain, size_t rank, size_t job);
/* Removes the best candidate into *c; returns 0, or -1 when empty (the heap is then as
 * policy_heap_clear() leaves it). */
int policy_heap_pop(struct policy_heap *h, struct policy_cand *c);
/* Drops every candidate; the next pushes form a new run. */
void policy_heap_clear(struct policy_heap *h);
/* The jobs of the candidates that the next pop chooses between (the run's next and the
 * heap's top) into next[0..2), -1 where there is none (and both before the first pop): a
 * loop may load their data while it works on the one it popped. */
void policy_heap_next(const struct policy_heap *h, long next[2]);

/* The first pass of the model-driven policies: in order, each job not yet
 * served (want[i] == 0 and !skip[i]) gets its base count if it still fits in
 * *free: min_gpus for an elastic job with a speed model, else its request
 * within its bounds (an elastic job's request cut to the cluster's capacity).
 * Jobs that do not fit wait; later, smaller ones may fit. */
void policy_give_base(const struct sched_snapshot *snap, const size_t *order, int *want,
                      const unsigned char *skip, long *free_gpus);

/* The doubling heuristic (DESIGN.md): among jobs with grow[i] set, repeatedly
 * double the one with the largest per-GPU gain (T(w) - T(2w)) / w while the
 * GPUs are free and 2w <= max_gpus; stops when no doubling fits or gains.
 * Returns 0, or -1 with errno ENOMEM. */
int policy_doubling(const struct sched_snapshot *snap, const size_t *order, int *want,
                    const unsigned char *grow, long *free_gpus);

/* heSRPT's share of the cluster (policies/share.c) for the job with the k-th
 * shortest remaining work (k = 0: the shortest) among m jobs whose speed on a
 * fraction x of the cluster grows as x^p: ((m-k)/m)^c - ((m-k-1)/m)^c with
 * c = 1 / (1 - p), p clamped to [0, 0.95]. The m shares sum to 1 and fall
 * with k; 0 when k >= m. */
double policy_share_fraction(size_t k, size_t m, double p);

/* The GPUs a job of base count base may grow to when its share is target
 * GPUs: base times the power of two nearest target on a log scale (the
 * largest base * 2^n <= target * sqrt(2)), never below base (>= 1). */
int policy_share_cap(int base, double target);

/* The exponent p of rate(w) ~ w^p through (w1, r1) and (w2, r2), clamped to
 * [0, 0.95]; 0 when w2 <= w1, a rate is not positive or r2 <= r1. */
double policy_share_exponent(int w1, double r1, int w2, double r2);
/* The same with lw = log((double)w2 / (double)w1) given (a caller that asks for the same
 * ratio of counts again and again keeps its log): the same number. */
double policy_share_exponent_log(int w1, double r1, int w2, double r2, double lw);

#endif
