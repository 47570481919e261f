/* policy_grow: growth by doublings from a heap of candidates over GPU classes, shared by
 * rubick and ringmaster (see policies/plans.h); the loop is policy_greedy_run()'s. */
#include <limits.h>
#include <math.h>

#include "greedy.h"
#include "plans.h"

struct grow {
    double gain;
    long to;
};

static double age_boost(const struct policy_plan *pp, size_t i)
{
    return pp->job[i].boost;
}

static double inv(double t)
{
    return t > 0 && isfinite(t) ? 1.0 / t : 0.0;
}

/* Ringmaster's gain of starting job i: its best completion rate per GPU at
 * its base on any class, whether it fits now or not (times its weight); pp->start holds
 * that rate when set. */
static double start_gain(const struct policy_plan *pp, size_t i)
{
    double g = 0;

    for (size_t c = 0; !pp->start && c < pp->ncls; c++) {
        int b = policy_plan_base_count(pp, i, c, LONG_MAX / 4);
        double x = b > 0 ? inv(policy_plan_time_at(pp, i, b, c)) / b : 0;
        if (x > g)
            g = x;
    }
    if (pp->start)
        g = pp->start[i];
    if (pp->job[i].cur_gpus > 0)
        g *= 1.0 + SCHED_KEEP_MARGIN;
    return g * age_boost(pp, i) * pp->weight[i];
}

/* Starts job i on w GPUs of class c (policy_plan_start_class()'s answer, c >= 0). */
static void start_at(struct policy_plan *pp, size_t i, struct policy_want *pw, long c, int w)
{
    const struct sched_job *j = &pp->snap->jobs[i];

    pp->cls_of[i] = (int)c;
    pp->cls[c].free -= w;
    pw[i].gpus = w;
    if (!pp->job[i].pinned || policy_plan_running_class(pp, i) != c ||
        !policy_plan_can_grow(pp, i, pw))
        return;
    while (2 * pw[i].gpus <= j->cur_gpus && pw[i].gpus <= pp->cls[c].free &&
           2 * pw[i].gpus <= policy_max_gpus(j)) {
        pp->cls[c].free -= pw[i].gpus;
        pw[i].gpus *= 2;
    }
    /* what it holds when that is no doubling of its base (policy_grow_fill gave it) */
    int more = j->cur_gpus - pw[i].gpus;
    if (more > 0 && more <= pp->cls[c].free && j->cur_gpus <= policy_max_gpus(j)) {
        pp->cls[c].free -= more;
        pw[i].gpus = j->cur_gpus;
    }
}

int policy_grow_start(struct policy_plan *pp, size_t i, struct policy_want *pw)
{
    int w = 0;
    long c = policy_plan_start_class(pp, i, &w);

    if (c < 0)
        return 0;
    start_at(pp, i, pw, c, w);
    return 1;
}

static double step_gain(const struct policy_plan *pp, size_t i, int w, size_t to, int rm)
{
    const struct policy_plan_job *j = &pp->job[i];
    size_t c = (size_t)pp->cls_of[i];
    double cost = pp->resize_cost;
    int held = j->cur_gpus > 0 && policy_plan_running_class(pp, i) == (long)to;
    int back = held && 2 * w <= j->cur_gpus;
    int restart = j->cur_gpus > 0 && (to != c || (w <= j->cur_gpus && !back));
    double t1 = policy_plan_time_at(pp, i, w, c), t2 = policy_plan_time_at(pp, i, 2 * w, to);

    double g;
    if (rm)
        g = (back ? (inv(t2) - inv(t1)) * (1.0 + SCHED_KEEP_MARGIN)
                  : inv(t2 + (restart ? cost : 0.0)) - inv(t1)) / w * age_boost(pp, i);
    else if (back)
        g = ((t1 - t2) * (1.0 + SCHED_KEEP_MARGIN) + cost) / w;
    else
        g = (t1 - t2 - (restart ? cost : 0.0)) / w;
    return learn_step_gain(j->fills_idle, g, t1, t2, back ? cost : 0.0);
}

/* The best growth of job i that fits the free GPUs now; to = -1 if none. */
static struct grow best_grow(const struct policy_plan *pp, size_t i, int w, int rm)
{
    struct grow best = {0.0, -1};
    size_t c = (size_t)pp->cls_of[i];
    /* A running job grows only on the class it runs on: moving it whenever
     * the other class has room made jobs hop back and forth between classes
     * (3x the restarts, and a worse JCT than precompute on 4x8:a100,4x8:v100). */
    int stays = pp->job[i].cur_gpus > 0;

    for (size_t to = 0; to < pp->ncls; to++) {
        if (pp->cls[to].free < (to == c ? w : 2 * w) || (to != c && stays) ||
            (pp->pref && pp->pref[i] >= 0 && (size_t)pp->pref[i] != to))
            continue;
        double g = step_gain(pp, i, w, to, rm);
        if (g > best.gain && isfinite(g)) {
            best.gain = g;
            best.to = (long)to;
        }
    }
    return best;
}

static void apply_grow(struct policy_plan *pp, size_t i, struct policy_want *pw, long to)
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

int policy_grow_push(const struct policy_plan *pp, struct policy_heap *h,
                     const struct policy_want *pw, size_t i, int rm)
{
    double g;

    if (pw[i].gpus == 0 && rm)
        g = start_gain(pp, i);
    else if (pw[i].gpus == 0 || !policy_plan_can_grow(pp, i, pw) || pp->job[i].pinned)
        return 0;
    else
        g = best_grow(pp, i, pw[i].gpus, rm).gain;
    if (!(g > 0) || !isfinite(g))
        return 0;
    return policy_heap_add(h, g, pp->rank[i], i);
}

/* The gain of starting job i now on the class and count policy_plan_start_class() gives
 * (into *c and *w), or 0 (*c = -1). */
static double start_now(const struct policy_plan *pp, size_t i, long *c, int *w)
{
    *w = 0;
    *c = policy_plan_start_class(pp, i, w);
    if (*c < 0)
        return 0.0;
    double g =
        inv(policy_plan_time_at(pp, i, *w, (size_t)*c)) / *w * age_boost(pp, i) * pp->weight[i];
    return pp->job[i].cur_gpus > 0 ? g * (1.0 + SCHED_KEEP_MARGIN) : g;
}

/* The best growth of job i (on w GPUs) when popped as candidate c. With one class the
 * growth's gain depends only on the job and w, which have not changed since c was pushed
 * (a job has one candidate at a time), and the class: c's gain while w more GPUs are free
 * there, else nothing; best_grow() would work out the same number again. */
static struct grow popped_grow(const struct policy_plan *pp, size_t i, int w, int rm,
                               const struct policy_cand *c)
{
    if (pp->ncls == 1)
        return pp->cls[0].free >= w ? (struct grow){c->gain, 0} : (struct grow){0.0, -1};
    return best_grow(pp, i, w, rm);
}

int policy_grow_room(const struct policy_plan *pp)
{
    for (size_t c = 0; c < pp->ncls; c++)
        if (pp->cls[c].free > 0)
            return 1;
    return 0;
}

/* Asks the memory for the lines of job i that the loop reads first and that are largest
 * (its want, fields, memoised rates, speed model) ahead of its visit: the loop visits jobs in
 * gain order, so each visit was a row of cache misses that waited on each other. The small
 * per-job arrays (class, rank, weight, bound) mostly stay cached: prefetching them too was
 * no faster. Only a hint: nothing changes. Inlined by force: GCC takes a function of
 * prefetches alone for one without effects and drops the calls. */
__attribute__((always_inline)) static inline void
prefetch_job(const struct policy_plan *pp, const struct policy_want *pw, size_t i)
{
    __builtin_prefetch(&pw[i]);
    __builtin_prefetch(&pp->job[i]);
    __builtin_prefetch(&pp->rate_memo[i * pp->ncls * POLICY_PLAN_MEMO_POW]);
    __builtin_prefetch(&pp->speed[i]);
    __builtin_prefetch((const char *)&pp->speed[i] + sizeof(pp->speed[i]) - 1);
}

/* What the growth loop over classes works on. */
struct over_classes {
    struct policy_plan *pp;
    struct policy_want *pw;
    int rm;
};

static int classes_room(void *ctx)
{
    return policy_grow_room(((struct over_classes *)ctx)->pp);
}

/* Starts or grows the popped job when its gain now is still the candidate's (it is put back
 * with the lower gain when it fell); prefetches the jobs that the next pop chooses between. */
static int classes_take(void *ctx, struct policy_heap *h, struct policy_cand *c)
{
    struct over_classes *o = ctx;
    struct policy_plan *pp = o->pp;
    struct policy_want *pw = o->pw;
    size_t i = c->job;
    double now;
    long next[2];

    policy_heap_next(h, next);
    for (int x = 0; x < 2; x++)
        if (next[x] >= 0)
            prefetch_job(pp, pw, (size_t)next[x]);
    struct grow gr = {0.0, -1};
    long sc = -1;
    int sw = 0;
    if (pw[i].gpus == 0)
        now = start_now(pp, i, &sc, &sw);
    else
        now = (gr = popped_grow(pp, i, pw[i].gpus, o->rm, c)).gain;
    if (!(now > 0))
        return 0;
    if (now < c->gain * (1.0 - 1e-9)) {
        c->gain = now;
        return policy_heap_add(h, c->gain, c->rank, c->job) ? -1 : 0;
    }
    if (pw[i].gpus == 0)
        start_at(pp, i, pw, sc, sw);
    else
        apply_grow(pp, i, pw, gr.to);
    return 1;
}

static int classes_push(void *ctx, struct policy_heap *h, size_t i)
{
    struct over_classes *o = ctx;

    return policy_grow_push(o->pp, h, o->pw, i, o->rm);
}

static const struct policy_greedy classes_ops = {classes_room, classes_take, classes_push};

/* Once no class has a free GPU, no candidate can start (its base count must be free) nor grow
 * (by w more): the rest of the heap would be popped only to be dropped. It is left empty, as
 * the loop would have left it. */
int policy_grow_loop(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw, int rm)
{
    struct over_classes o = {pp, pw, rm};

    return policy_greedy_run(h, &classes_ops, &o);
}

/* What job i on w GPUs of its class adds to the completion rate: 1 / T(w) times its ageing
 * and weight, T counting resize_cost_s when w is not what it holds there. */
static double fill_value(const struct policy_plan *pp, size_t i, int w)
{
    const struct policy_plan_job *j = &pp->job[i];
    double t = policy_plan_time_at(pp, i, w, (size_t)pp->cls_of[i]);

    if (!(t > 0) || !isfinite(t))
        return 0.0;
    int keeps = j->cur_gpus > 0 && j->run_cls == pp->cls_of[i] && w == j->cur_gpus;
    return j->boost * pp->weight[i] / (t + (j->cur_gpus > 0 && !keeps ? pp->resize_cost : 0.0));
}

/* What job i gains from k more GPUs of its class on top of w: the difference of
 * policy_typed_value, in which what a job holds counts 1 + SCHED_KEEP_MARGIN times (the
 * greedy's hysteresis: a job is not restarted for a small predicted gain) and a change adds
 * resize_cost_s. Back to what a job with a learned model holds, as learn.h keeps it: unless
 * shrinking repays the restart (no margin), so a learned job that the greedy shrank because
 * that repays the restart is not grown back here. */
static double fill_gain(const struct policy_plan *pp, size_t i, int w, int k)
{
    const struct policy_plan_job *j = &pp->job[i];
    size_t c = (size_t)pp->cls_of[i];

    if (j->fills_idle && j->cur_gpus > 0 && j->run_cls == (int)c && w + k == j->cur_gpus)
        return fill_value(pp, i, w + k) - fill_value(pp, i, w);
    return policy_typed_value(pp, i, w + k, c) - policy_typed_value(pp, i, w, c);
}

/* The count in 1..most that gains job i (on w GPUs) the most per GPU: powers of two and
 * most itself (a restart makes small counts lose; the greedy weighed the doublings). */
static int fill_best(const struct policy_plan *pp, size_t i, int w, int most, double *per_gpu)
{
    int best = 0;

    *per_gpu = 0;
    for (int k = 1; k <= most; k = k < most && 2 * k > most ? most : 2 * k) {
        double g = fill_gain(pp, i, w, k) / k;
        if (g > *per_gpu && isfinite(g)) {
            *per_gpu = g;
            best = k;
        }
        if (k == most)
            break;
    }
    return best;
}

/* 1 if job i may take more of its class's free GPUs in policy_grow_fill. */
static int may_fill(const struct policy_plan *pp, const struct policy_want *pw, size_t i)
{
    const struct policy_plan_job *j = &pp->job[i];

    return pw[i].gpus > 0 && pp->cls_of[i] >= 0 && j->elastic && j->speed &&
           (j->pinned != POLICY_PLAN_STAGED || learn_stage_fills(pp->snap, &pp->snap->jobs[i])) &&
           pw[i].gpus < j->max_gpus && pp->cls[pp->cls_of[i]].free > 0;
}

/* Job i's best fill now: its count into *k (0: none gains), its gain per GPU returned. */
static double fill_now(const struct policy_plan *pp, const struct policy_want *pw, size_t i,
                       int *k)
{
    long room = pp->job[i].max_gpus - pw[i].gpus, free = pp->cls[pp->cls_of[i]].free;
    double g = 0;

    *k = fill_best(pp, i, pw[i].gpus, (int)(room < free ? room : free), &g);
    return *k > 0 ? g : 0.0;
}

int policy_grow_fill(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw)
{
    int k;

    policy_heap_clear(h);
    if (!policy_grow_room(pp))
        return 0; /* a full cluster: nothing to fill, no pass over the jobs */
    for (size_t i = 0; i < pp->snap->njobs; i++) {
        double g = may_fill(pp, pw, i) ? fill_now(pp, pw, i, &k) : 0.0;
        if (g > 0 && policy_heap_add(h, g, pp->rank[i], i))
            return -1;
    }
    /* Lazy: a popped candidate is worked out again with what is free now; put back when it
     * fell. */
    struct policy_cand cd;
    while (policy_grow_room(pp) && policy_heap_pop(h, &cd) == 0) {
        size_t i = cd.job;
        double g = may_fill(pp, pw, i) ? fill_now(pp, pw, i, &k) : 0.0;
        if (!(g > 0))
            continue;
        if (g < cd.gain * (1.0 - 1e-9)) {
            if (policy_heap_add(h, g, cd.rank, i))
                return -1;
            continue;
        }
        pw[i].gpus += k;
        pp->cls[pp->cls_of[i]].free -= k;
        g = may_fill(pp, pw, i) ? fill_now(pp, pw, i, &k) : 0.0;
        if (g > 0 && policy_heap_add(h, g, cd.rank, i))
            return -1;
    }
    policy_heap_clear(h);
    return 0;
}
