/* policy_plan: the plan-, resource- and GPU-model-aware allocator behind the
 * rubick and ringmaster policies (docs/plans.md).
 *
 * Classes: the up nodes grouped by GPU model; each has a speed, a memory per
 * GPU, free GPUs, and the host share per GPU that a plan may hold there (the
 * least cpu_cores / ngpus and host_mem_gb / ngpus of its nodes that advertise
 * them): plans within that share can never over-commit a node, whatever the
 * placement (placement_multi refuses the rest as a safety net).
 *
 * Rate of job i on w GPUs of class c: plan_best() (the fastest plan it
 * supports that fits); T = remaining epochs / rate.
 *
 * Base count of a job on a class: for a job with plan information the fewest
 * GPUs (powers of two from min_gpus) whose best plan is at least as fast as
 * its requested plan on its requested GPUs (the guarantee); for an elastic
 * job with a speed model min_gpus; else its request. A running job restarts
 * on the class it holds if its base fits there; a new job goes where its base
 * runs fastest per GPU (start_class).
 *
 * rubick: in priority, arrival, id order every job gets its base; then the
 * doubling heuristic (DESIGN.md) by seconds saved per added GPU with the
 * hysteresis of policy_step_gain() (see "growth" below).
 *
 * ringmaster: jobs ordered by predicted remaining time at their base (ties
 * and jobs it cannot grow: that order); then the completion-rate greedy (see
 * "ringmaster" below) starts and grows jobs, first each within its heSRPT
 * share of the cluster (policy_share.c), then with what is left (while all
 * bases fit in POLICY_PLAN_SPARE of the GPUs, every job starts first); then
 * GPUs of a model nobody could use go to running jobs that gain from moving
 * (rm_use_idle).
 *
 * Both: the plan of each job is the best plan at its final count; a job
 * whose best plan there is slower than its guarantee waits instead. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define POLICY_PLAN_AGE_S (4.0 * 3600.0)
/* ringmaster starts every job first when all their bases fit in this share
 * of the free GPUs (docs/evaluation.md: 0.5 .. 0.75 measured). */
#define POLICY_PLAN_SPARE 0.6

enum pp_mode { PP_RUBICK, PP_RINGMASTER };

struct pp_class {
    int model;
    double speed, mem;
    int cores;   /* per GPU a plan may hold; 0: no limit */
    double host; /* per GPU; 0: no limit */
    long free;
};

struct pp {
    const struct sched_snapshot *snap;
        struct pp_class *cls;
    size_t ncls;
    double *guarantee; /* per job: epochs/s its requested plan gives; 0: none */
    int *cls_of;       /* per job: class index, -1 */
    size_t *order, *rank;
    double *key;
    int *cap; /* ringmaster: growth bound of the first greedy pass; INT_MAX: none */
};

static void class_add_node(struct pp_class *c, const struct sched_node *nd)
{
    int cores = nd->cpu_cores > 0 ? nd->cpu_cores / nd->ngpus : 0;
    double host = nd->host_mem_gb > 0 ? nd->host_mem_gb / nd->ngpus : 0;

    c->free += nd->ngpus;
    if (cores > 0 && (c->cores == 0 || cores < c->cores))
        c->cores = cores;
    if (host > 0 && (c->host == 0 || host < c->host))
        c->host = host;
}

static void build_classes(struct pp *pp)
{
    const struct sched_snapshot *snap = pp->snap;

    for (size_t n = 0; n < snap->nnodes; n++) {
        const struct sched_node *nd = &snap->nodes[n];
        if (!nd->up || nd->ngpus <= 0)
            continue;
        size_t k = 0;
        while (k < pp->ncls && pp->cls[k].model != nd->gpu_model)
            k++;
        if (k == pp->ncls) {
            pp->cls[k] = (struct pp_class){
                .model = nd->gpu_model,
                .speed = nd->gpu_speed > 0 ? nd->gpu_speed : 1.0,
                .mem = nd->gpu_mem_gb > 0 ? nd->gpu_mem_gb : PLAN_DEFAULT_GPU_MEM_GB,
            };
            pp->ncls++;
        }
        class_add_node(&pp->cls[k], nd);
    }
}

/* Epochs per second of job i on w GPUs of class c with its best plan. */
static double rate(const struct pp *pp, size_t i, int w, size_t c, struct plan_choice *out)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    const struct pp_class *k = &pp->cls[c];
    struct plan_choice tmp;

    if (!policy_has_speed(j) || w < 1)
        return 0.0;
    return plan_best(&j->speed, &j->plan, w, k->speed, k->mem, k->cores, k->host,
                     out ? out : &tmp);
}

static double time_at(const struct pp *pp, size_t i, int w, size_t c)
{
    double r = rate(pp, i, w, c, NULL);

    return r > 0 && isfinite(r) ? policy_remaining_epochs(&pp->snap->jobs[i]) / r : INFINITY;
}

static int next_size(int w)
{
    return w >= INT_MAX / 2 ? INT_MAX : 2 * w;
}

/* Base count of job i on class c; 0 if none fits the class or the job. */
static int base_count(const struct pp *pp, size_t i, size_t c, long cap)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    int max = policy_max_gpus(j);

    if (!policy_has_speed(j) || !j->elastic) {
        int w = policy_clamp(j, j->requested_gpus < cap ? j->requested_gpus : (int)cap);
        return w <= cap ? w : 0;
    }
    if (!plan_has_info(&j->plan))
        return policy_min_gpus(j) <= cap ? policy_min_gpus(j) : 0;
    for (int w = policy_min_gpus(j); w <= max && w <= cap; w = next_size(w)) {
        double r = rate(pp, i, w, c, NULL);
        if (r > 0 && r >= pp->guarantee[i] * (1.0 - 1e-9))
            return w;
    }
    return 0;
}

/* The class a running job's GPUs are all of, or -1. */
static long running_class(const struct pp *pp, const struct sched_job *j)
{
    long c = -1;

    for (int k = 0; k < j->cur_gpus; k++) {
        int g = pp->snap->nodes[j->slots[k].node].gpu_model;
        long at = -1;
        for (size_t x = 0; x < pp->ncls; x++)
            if (pp->cls[x].model == g)
                at = (long)x;
        if (at < 0 || (c >= 0 && at != c))
            return -1;
        c = at;
    }
    return c;
}

static long start_class(const struct pp *pp, size_t i, int *w);

/* Base pass for job i (rubick, and ringmaster's jobs it cannot grow): on the
 * class start_class() picks. */
static void give_base(struct pp *pp, size_t i, struct policy_want *pw)
{
    int w = 0;
    long c = start_class(pp, i, &w);

    if (c < 0)
        return;
    pp->cls_of[i] = (int)c;
    pp->cls[c].free -= w;
    pw[i].gpus = w;
}

static int can_grow(const struct pp *pp, size_t i, const struct policy_want *pw)
{
    const struct sched_job *j = &pp->snap->jobs[i];

    return pw[i].gpus > 0 && j->elastic && policy_has_speed(j) &&
           pw[i].gpus <= policy_max_gpus(j) / 2 && (!pp->cap || pw[i].gpus <= pp->cap[i] / 2);
}

/* Pinned running jobs get back what they hold, in order, and no more. */
static void keep_pinned(struct pp *pp, struct policy_want *pw)
{
    for (size_t k = 0; k < pp->snap->njobs; k++) {
        size_t i = pp->order[k];
        const struct sched_job *j = &pp->snap->jobs[i];
        if (!can_grow(pp, i, pw) || !policy_pinned(pp->snap, j) ||
            running_class(pp, j) != pp->cls_of[i])
            continue;
        struct pp_class *c = &pp->cls[pp->cls_of[i]];
        while (2 * pw[i].gpus <= j->cur_gpus && pw[i].gpus <= c->free) {
            c->free -= pw[i].gpus;
            pw[i].gpus *= 2;
        }
    }
}

/* Final plans; a job whose plan would break its guarantee waits. */
static void finish(struct pp *pp, struct policy_want *pw)
{
    for (size_t i = 0; i < pp->snap->njobs; i++) {
        const struct sched_job *j = &pp->snap->jobs[i];
        if (pw[i].gpus <= 0 || pp->cls_of[i] < 0) {
            pw[i].gpus = 0;
            continue;
        }
        size_t c = (size_t)pp->cls_of[i];
        pw[i].gpu_model = pp->cls[c].model;
        if (!plan_has_info(&j->plan) || !policy_has_speed(j))
            continue;
        double r = rate(pp, i, pw[i].gpus, c, &pw[i].plan);
        pw[i].has_plan = 1;
        if (!(r > 0) || r < pp->guarantee[i] * (1.0 - 1e-9))
            pw[i].gpus = 0;
    }
}

/* Ringmaster's key: predicted remaining seconds at its base on its best class,
 * shortened by waiting (age) and for running jobs (hysteresis). */
static double rm_key(const struct pp *pp, size_t i)
{
    const struct sched_snapshot *snap = pp->snap;
    const struct sched_job *j = &snap->jobs[i];
    double t = INFINITY;

    for (size_t c = 0; c < pp->ncls; c++) {
        int w = base_count(pp, i, c, LONG_MAX / 4);
        double tc = w > 0 ? time_at(pp, i, w, c) : INFINITY;
        if (tc < t)
            t = tc;
    }
    if (!isfinite(t))
        t = 1e12 + policy_remaining_epochs(j);
    double waited = snap->now - j->submit_time - j->run_time;
    if (waited > 0 && isfinite(waited))
        t /= 1.0 + waited / POLICY_PLAN_AGE_S;
    if (j->cur_gpus > 0)
        t /= 1.0 + SCHED_KEEP_MARGIN;
    return t;
}

/* Orders by key, ties by the policy order (pp->rank holds it on entry). */
static void order_by_key(struct pp *pp)
{
    size_t n = pp->snap->njobs;

    for (size_t i = 0; i < n; i++)
        pp->key[i] = rm_key(pp, i);
    /* Insertion sort, stable over the policy order (ties by its rank). */
    for (size_t k = 1; k < n; k++) {
        size_t v = pp->order[k], at = k;
        while (at > 0 && (pp->key[pp->order[at - 1]] > pp->key[v] ||
                          (pp->key[pp->order[at - 1]] == pp->key[v] &&
                           pp->rank[pp->order[at - 1]] > pp->rank[v]))) {
            pp->order[at] = pp->order[at - 1];
            at--;
        }
        pp->order[at] = v;
    }
    policy_ranks(pp->order, n, pp->rank);
}

static void pp_fini(struct pp *pp)
{
    free(pp->cls);
    free(pp->guarantee);
    free(pp->cls_of);
    free(pp->order);
    free(pp->rank);
    free(pp->key);
    free(pp->cap);
}

static int pp_init(struct pp *pp, const struct sched_snapshot *snap)
{
    size_t n = snap->njobs + 1;

    memset(pp, 0, sizeof(*pp));
    pp->snap = snap;
    pp->cls = calloc(snap->nnodes + 1, sizeof(*pp->cls));
    pp->guarantee = calloc(n, sizeof(*pp->guarantee));
    pp->cls_of = malloc(n * sizeof(*pp->cls_of));
    pp->order = malloc(n * sizeof(*pp->order));
    pp->rank = malloc(n * sizeof(*pp->rank));
    pp->key = malloc(n * sizeof(*pp->key));
    pp->cap = malloc(n * sizeof(*pp->cap));
    if (!pp->cls || !pp->guarantee || !pp->cls_of || !pp->order || !pp->rank || !pp->key ||
        !pp->cap || policy_order(snap, pp->order)) {
        pp_fini(pp);
        errno = ENOMEM;
        return -1;
    }
    build_classes(pp);
    policy_ranks(pp->order, snap->njobs, pp->rank);
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        pp->cls_of[i] = -1;
        pp->cap[i] = INT_MAX;
        if (plan_has_info(&j->plan) && policy_has_speed(j))
            pp->guarantee[i] = plan_requested_rate(&j->speed, &j->plan, j->requested_gpus, 0);
    }
    return 0;
}

/* ---- ringmaster: the completion-rate greedy ------------------------------
 *
 * Mean JCT falls fastest when jobs complete soonest, so ringmaster maximises
 * the cluster's completion rate, the sum over running jobs of 1 / T_i(w_i),
 * greedily per GPU: starting a waiting job on its base count b gains
 * 1 / T(b) / b, doubling a job from w gains (1/T(2w) - 1/T(w)) / w. A short
 * job is thus doubled before a long one starts (shortest remaining first,
 * with parallelism), and a long job still gets what nobody shorter can use.
 * Each gain is multiplied by 1 + waited / POLICY_PLAN_AGE_S (ageing); a
 * running job's start and its doublings back to what it holds count
 * (1 + SCHED_KEEP_MARGIN) times, growth past it adds resize_cost_s to T(2w),
 * and a pinned job gets back what it holds and no more. */

static double age_boost(const struct pp *pp, size_t i)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    double waited = pp->snap->now - j->submit_time - j->run_time;

    return waited > 0 && isfinite(waited) ? 1.0 + waited / POLICY_PLAN_AGE_S : 1.0;
}

static double inv(double t)
{
    return t > 0 && isfinite(t) ? 1.0 / t : 0.0;
}

/* The class and base count job i starts on now (free GPUs), or -1: a running
 * job restarts on the class it holds if its base fits there (growth may move
 * it later, paying the restart), a new one where its base runs fastest per GPU. */
static long start_class(const struct pp *pp, size_t i, int *w)
{
    long cur = running_class(pp, &pp->snap->jobs[i]), best = -1;
    double best_r = 0;

    if (cur >= 0 && (*w = base_count(pp, i, (size_t)cur, pp->cls[cur].free)) > 0)
        return cur;
    for (size_t c = 0; c < pp->ncls; c++) {
        int b = base_count(pp, i, c, pp->cls[c].free);
        if (b == 0)
            continue;
        double r = rate(pp, i, b, c, NULL) / b;
        if (best < 0 || r > best_r) {
            best = (long)c;
            best_r = r;
            *w = b;
        }
    }
    return best;
}

static double start_gain(const struct pp *pp, size_t i)
{
    double g = 0;

    for (size_t c = 0; c < pp->ncls; c++) {
        int b = base_count(pp, i, c, LONG_MAX / 4);
        double x = b > 0 ? inv(time_at(pp, i, b, c)) / b : 0;
        if (x > g)
            g = x;
    }
    if (pp->snap->jobs[i].cur_gpus > 0)
        g *= 1.0 + SCHED_KEEP_MARGIN;
    return g * age_boost(pp, i);
}

/* Starts job i if a class has room for its base; a pinned running job then
 * gets back what it holds. Returns 1 if it started. */
static int rm_start(struct pp *pp, size_t i, struct policy_want *pw)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    int w = 0;
    long c = start_class(pp, i, &w);

    if (c < 0)
        return 0;
    pp->cls_of[i] = (int)c;
    pp->cls[c].free -= w;
    pw[i].gpus = w;
    if (!policy_pinned(pp->snap, j) || running_class(pp, j) != c || !can_grow(pp, i, pw))
        return 1;
    while (2 * pw[i].gpus <= j->cur_gpus && pw[i].gpus <= pp->cls[c].free &&
           2 * pw[i].gpus <= policy_max_gpus(j)) {
        pp->cls[c].free -= pw[i].gpus;
        pw[i].gpus *= 2;
    }
    return 1;
}

/* ---- growth, shared ------------------------------------------------------
 *
 * A job on w GPUs of class c grows to 2w on class c (w more free there) or,
 * if it is not running yet, moves to 2w on another class `to` (2w free
 * there; its w on c are freed).
 * Rubick weighs a step by the seconds it saves per added GPU, ringmaster by
 * the completion rate it adds per added GPU (see above). Either way a step
 * back to what a running job holds counts (1 + SCHED_KEEP_MARGIN) times (rubick
 * also adds the restart it avoids), and a step that restarts a running job
 * (past what it holds, or to another class) pays resize_cost_s. */

struct grow {
    double gain;
    long to;
};

static double step_gain(const struct pp *pp, size_t i, int w, size_t to, int rm)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    size_t c = (size_t)pp->cls_of[i];
    double cost = pp->snap->resize_cost_s > 0 && isfinite(pp->snap->resize_cost_s)
                      ? pp->snap->resize_cost_s
                      : 0.0;
    int held = j->cur_gpus > 0 && running_class(pp, j) == (long)to;
    int back = held && 2 * w <= j->cur_gpus;
    int restart = j->cur_gpus > 0 && (to != c || (w <= j->cur_gpus && !back));
    double t1 = time_at(pp, i, w, c), t2 = time_at(pp, i, 2 * w, to);

    if (rm) {
        double g = back ? (inv(t2) - inv(t1)) * (1.0 + SCHED_KEEP_MARGIN)
                        : inv(t2 + (restart ? cost : 0.0)) - inv(t1);
        return g / w * age_boost(pp, i);
    }
    if (back)
        return ((t1 - t2) * (1.0 + SCHED_KEEP_MARGIN) + cost) / w;
    return (t1 - t2 - (restart ? cost : 0.0)) / w;
}

/* The best growth of job i that fits the free GPUs now; to = -1 if none. */
static struct grow best_grow(const struct pp *pp, size_t i, int w, int rm)
{
    struct grow best = {0.0, -1};
    size_t c = (size_t)pp->cls_of[i];
    /* A running job grows only on the class it runs on: moving it whenever
     * the other class has room made jobs hop back and forth between classes
     * (3x the restarts, and a worse JCT than precompute on 4x8:a100,4x8:v100). */
    int stays = pp->snap->jobs[i].cur_gpus > 0;

    for (size_t to = 0; to < pp->ncls; to++) {
        if (pp->cls[to].free < (to == c ? w : 2 * w) || (to != c && stays))
            continue;
        double g = step_gain(pp, i, w, to, rm);
        if (g > best.gain && isfinite(g)) {
            best.gain = g;
            best.to = (long)to;
        }
    }
    return best;
}

static void apply_grow(struct pp *pp, size_t i, struct policy_want *pw, long to)
{
    int w = pw[i].gpus;

    if (to == pp->cls_of[i]) {
        pp->cls[to].free -= w;
    } else {
        pp->cls[pp->cls_of[i]].free += w;
        pp->cls[to].free -= 2 * w;
        pp->cls_of[i] = (int)to;
    }
    pw[i].gpus = 2 * w;
}

static int grow_push(const struct pp *pp, struct policy_heap *h, const struct policy_want *pw,
                     size_t i, int rm)
{
    double g;

    if (pw[i].gpus == 0 && rm)
        g = start_gain(pp, i);
    else if (pw[i].gpus == 0 || !can_grow(pp, i, pw) || policy_pinned(pp->snap, &pp->snap->jobs[i]))
        return 0;
    else
        g = best_grow(pp, i, pw[i].gpus, rm).gain;
    if (!(g > 0) || !isfinite(g))
        return 0;
    return policy_heap_push(h, (struct policy_cand){g, pp->rank[i], i});
}

/* The gain of starting job i now (its feasible class), or 0. */
static double start_now(const struct pp *pp, size_t i)
{
    int w = 0;
    long c = start_class(pp, i, &w);

    if (c < 0)
        return 0.0;
    double g = inv(time_at(pp, i, w, (size_t)c)) / w * age_boost(pp, i);
    return pp->snap->jobs[i].cur_gpus > 0 ? g * (1.0 + SCHED_KEEP_MARGIN) : g;
}

/* Pops candidates best first; a gain that fell since it was pushed (the free
 * GPUs shrank) goes back in at its new value. */
static int grow_loop(struct pp *pp, struct policy_heap *h, struct policy_want *pw, int rm)
{
    struct policy_cand c;

    while (policy_heap_pop(h, &c) == 0) {
        size_t i = c.job;
        double now;
        struct grow gr = {0.0, -1};
        if (pw[i].gpus == 0)
            now = start_now(pp, i);
        else
            now = (gr = best_grow(pp, i, pw[i].gpus, rm)).gain;
        if (!(now > 0))
            continue;
        if (now < c.gain * (1.0 - 1e-9)) {
            c.gain = now;
            if (policy_heap_push(h, c))
                return -1;
            continue;
        }
        if (pw[i].gpus == 0)
            rm_start(pp, i, pw);
        else
            apply_grow(pp, i, pw, gr.to);
        if (grow_push(pp, h, pw, i, rm))
            return -1;
    }
    return 0;
}

static int doubling(struct pp *pp, struct policy_want *pw)
{
    struct policy_heap h;
    int rc = 0;

    if (policy_heap_init(&h, pp->snap->njobs))
        return -1;
    keep_pinned(pp, pw);
    for (size_t i = 0; i < pp->snap->njobs && rc == 0; i++)
        rc = grow_push(pp, &h, pw, i, 0);
    if (rc == 0)
        rc = grow_loop(pp, &h, pw, 0);
    policy_heap_fini(&h);
    return rc;
}

/* After the greedy, GPUs of a model that nobody could use are idle: a running
 * job (longest predicted first) moves onto them when that makes it clearly
 * faster, at the largest power of two they hold within its bounds. The move
 * only takes what is left over, so jobs do not hop back and forth. */
static void rm_use_idle(struct pp *pp, struct policy_want *pw)
{
    const struct sched_snapshot *snap = pp->snap;
    double cost = snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s
                                                                           : 0.0;

    for (size_t k = snap->njobs; k-- > 0;) {
        size_t i = pp->order[k];
        const struct sched_job *j = &snap->jobs[i];
        if (pw[i].gpus == 0 || pp->cls_of[i] < 0 || !j->elastic || !policy_has_speed(j) ||
            policy_pinned(snap, j))
            continue;
        size_t c = (size_t)pp->cls_of[i];
        double now = time_at(pp, i, pw[i].gpus, c);
        for (size_t to = 0; to < pp->ncls; to++) {
            int t = pw[i].gpus;
            if (to == c || pp->cls[to].free < t)
                continue;
            while (2 * t <= pp->cls[to].free && 2 * t <= policy_max_gpus(j))
                t *= 2;
            if (!(time_at(pp, i, t, to) + cost < now / (1.0 + SCHED_KEEP_MARGIN)))
                continue;
            pp->cls[c].free += pw[i].gpus;
            pp->cls[to].free -= t;
            pp->cls_of[i] = (int)to;
            pw[i].gpus = t;
            break;
        }
    }
}

/* Speed-up exponent of job i on the class where its base runs fastest per
 * GPU, between its base b and min(max_gpus, 8b); *base = b (0: none fits). */
static double rm_exponent(const struct pp *pp, size_t i, int *base)
{
    double best = 0;
    long bc = -1;

    *base = 0;
    for (size_t c = 0; c < pp->ncls; c++) {
        int b = base_count(pp, i, c, LONG_MAX / 4);
        double r = b > 0 ? rate(pp, i, b, c, NULL) / b : 0;
        if (r > best) {
            best = r;
            bc = (long)c;
            *base = b;
        }
    }
    if (bc < 0)
        return 0.0;
    int m = policy_max_gpus(&pp->snap->jobs[i]);
    if (m / 8 >= *base)
        m = 8 * *base;
    return policy_share_exponent(*base, rate(pp, i, *base, (size_t)bc, NULL), m,
                                 rate(pp, i, m, (size_t)bc, NULL));
}

/* Free GPUs of all classes. */
static double rm_free(const struct pp *pp)
{
    double g = 0;

    for (size_t c = 0; c < pp->ncls; c++)
        g += (double)pp->cls[c].free;
    return g;
}

/* Growth bounds of the first greedy pass: the job at position k of the key
 * order gets its heSRPT share of the free GPUs (policy_share_fraction),
 * rounded to a power-of-two multiple of its base; a running job keeps at
 * least what it holds (shrinking it to a share that moves with every arrival
 * made jobs resize back and forth when nothing contended). */
static void rm_caps(struct pp *pp)
{
    size_t n = pp->snap->njobs;
    double g = rm_free(pp);

    for (size_t k = 0; k < n; k++) {
        size_t i = pp->order[k];
        int b = 0;
        double p = rm_exponent(pp, i, &b);
        int cap = policy_share_cap(b, policy_share_fraction(k, n, p) * g);
        if (pp->snap->jobs[i].cur_gpus > cap)
            cap = pp->snap->jobs[i].cur_gpus;
        pp->cap[i] = cap;
    }
}

/* Pushes every elastic job with a model (a start or a growth) and runs the greedy. */
static int rm_pass(struct pp *pp, struct policy_heap *h, struct policy_want *pw)
{
    int rc = 0;

    for (size_t k = 0; k < pp->snap->njobs && rc == 0; k++) {
        size_t i = pp->order[k];
        const struct sched_job *j = &pp->snap->jobs[i];
        if (policy_has_speed(j) && j->elastic)
            rc = grow_push(pp, h, pw, i, 1);
    }
    return rc == 0 ? grow_loop(pp, h, pw, 1) : rc;
}

/* 1 if the base counts of all elastic jobs with a model that hold nothing
 * yet fit in POLICY_PLAN_SPARE of the free GPUs. */
static int rm_spare(const struct pp *pp, const struct policy_want *pw)
{
    double need = 0;

    for (size_t i = 0; i < pp->snap->njobs; i++) {
        const struct sched_job *j = &pp->snap->jobs[i];
        int b = 0;
        if (pw[i].gpus > 0 || !policy_has_speed(j) || !j->elastic)
            continue;
        rm_exponent(pp, i, &b);
        if (b <= 0)
            return 0;
        need += b;
    }
    return need <= POLICY_PLAN_SPARE * rm_free(pp);
}

/* Jobs without a model or not elastic get their base in key order. When the
 * others' bases all fit with room to spare (rm_spare), every one of them
 * starts first, in key order: nothing waits while GPUs are plentiful. Then
 * the completion-rate greedy starts and grows jobs, first each within its
 * heSRPT bound (rm_caps), then, with what is left, without bounds. */
static int rm_greedy(struct pp *pp, struct policy_want *pw)
{
    struct policy_heap h;
    const struct sched_snapshot *snap = pp->snap;
    int rc;

    if (policy_heap_init(&h, snap->njobs))
        return -1;
    for (size_t k = 0; k < snap->njobs; k++) {
        size_t i = pp->order[k];
        const struct sched_job *j = &snap->jobs[i];
        if (!policy_has_speed(j) || !j->elastic)
            give_base(pp, i, pw);
    }
    if (rm_spare(pp, pw))
        for (size_t k = 0; k < snap->njobs; k++) {
            size_t i = pp->order[k];
            const struct sched_job *j = &snap->jobs[i];
            if (pw[i].gpus == 0 && policy_has_speed(j) && j->elastic)
                rm_start(pp, i, pw);
        }
    rm_caps(pp);
    rc = rm_pass(pp, &h, pw);
    int *cap = pp->cap;
    pp->cap = NULL;
    if (rc == 0)
        rc = rm_pass(pp, &h, pw);
    pp->cap = cap;
    if (rc == 0 && pp->ncls > 1)
        rm_use_idle(pp, pw);
    policy_heap_fini(&h);
    return rc;
}

static int allocate_ex(const struct sched_snapshot *snap, struct policy_want *pw, enum pp_mode m)
{
    struct pp pp;

    if (pp_init(&pp, snap))
        return -1;
    int rc;
    if (m == PP_RINGMASTER) {
        order_by_key(&pp);
        rc = rm_greedy(&pp, pw);
    } else {
        for (size_t k = 0; k < snap->njobs; k++)
            give_base(&pp, pp.order[k], pw);
        rc = doubling(&pp, pw);
    }
    if (rc == 0)
        finish(&pp, pw);
    pp_fini(&pp);
    return rc;
}

static int rubick_ex(const struct sched_snapshot *snap, struct policy_want *pw)
{
    return allocate_ex(snap, pw, PP_RUBICK);
}

static int ringmaster_ex(const struct sched_snapshot *snap, struct policy_want *pw)
{
    return allocate_ex(snap, pw, PP_RINGMASTER);
}

/* The counts alone, for callers that use allocate directly. */
static int counts_of(const struct sched_snapshot *snap, int *want, policy_allocate_ex_f ex)
{
    struct policy_want *pw = calloc(snap->njobs + 1, sizeof(*pw));

    if (!pw) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < snap->njobs; i++)
        pw[i].gpu_model = -1;
    int rc = ex(snap, pw);
    for (size_t i = 0; rc == 0 && i < snap->njobs; i++)
        want[i] = pw[i].gpus;
    free(pw);
    return rc;
}

static int rubick_counts(const struct sched_snapshot *snap, int *want)
{
    return counts_of(snap, want, rubick_ex);
}

static int ringmaster_counts(const struct sched_snapshot *snap, int *want)
{
    return counts_of(snap, want, ringmaster_ex);
}

const struct sched_policy_ops policy_rubick = {
    .name = "rubick",
    .summary = "execution plans and host resources chosen with the GPUs, each job at least as "
               "fast as its requested plan (Rubick), arrival order, doubling",
    .allocate = rubick_counts,
};

const struct sched_policy_ops policy_ringmaster = {
    .name = "ringmaster",
    .summary = "shortest predicted remaining time first with ageing, heSRPT shares, plans, "
               "GPU models, doubling with hysteresis",
    .allocate = ringmaster_counts,
};

policy_allocate_ex_f policy_allocate_ex_for(const struct sched_policy_ops *p)
{
    if (p == &policy_rubick)
        return rubick_ex;
    if (p == &policy_ringmaster)
        return ringmaster_ex;
    return NULL;
}
