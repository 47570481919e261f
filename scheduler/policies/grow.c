/* policy_grow: growth by doublings from a heap of candidates, shared by rubick
 * and ringmaster (see policies/plans.h). */
#include <limits.h>
#include <math.h>

#include "plans.h"

struct grow {
    double gain;
    long to;
};

static double age_boost(const struct policy_plan *pp, size_t i)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    double waited = pp->snap->now - j->submit_time - j->run_time;

    return waited > 0 && isfinite(waited) ? 1.0 + waited / POLICY_PLAN_AGE_S : 1.0;
}

static double inv(double t)
{
    return t > 0 && isfinite(t) ? 1.0 / t : 0.0;
}

/* Ringmaster's gain of starting job i: its best completion rate per GPU at
 * its base on any class, whether it fits now or not (times its weight). */
static double start_gain(const struct policy_plan *pp, size_t i)
{
    double g = 0;

    for (size_t c = 0; c < pp->ncls; c++) {
        int b = policy_plan_base_count(pp, i, c, LONG_MAX / 4);
        double x = b > 0 ? inv(policy_plan_time_at(pp, i, b, c)) / b : 0;
        if (x > g)
            g = x;
    }
    if (pp->snap->jobs[i].cur_gpus > 0)
        g *= 1.0 + SCHED_KEEP_MARGIN;
    return g * age_boost(pp, i) * pp->weight[i];
}

int policy_grow_start(struct policy_plan *pp, size_t i, struct policy_want *pw)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    int w = 0;
    long c = policy_plan_start_class(pp, i, &w);

    if (c < 0)
        return 0;
    pp->cls_of[i] = (int)c;
    pp->cls[c].free -= w;
    pw[i].gpus = w;
    if (!policy_pinned(pp->snap, j) || policy_plan_running_class(pp, j) != c ||
        !policy_plan_can_grow(pp, i, pw))
        return 1;
    while (2 * pw[i].gpus <= j->cur_gpus && pw[i].gpus <= pp->cls[c].free &&
           2 * pw[i].gpus <= policy_max_gpus(j)) {
        pp->cls[c].free -= pw[i].gpus;
        pw[i].gpus *= 2;
    }
    return 1;
}

static double step_gain(const struct policy_plan *pp, size_t i, int w, size_t to, int rm)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    size_t c = (size_t)pp->cls_of[i];
    double cost = pp->snap->resize_cost_s > 0 && isfinite(pp->snap->resize_cost_s)
                      ? pp->snap->resize_cost_s
                      : 0.0;
    int held = j->cur_gpus > 0 && policy_plan_running_class(pp, j) == (long)to;
    int back = held && 2 * w <= j->cur_gpus;
    int restart = j->cur_gpus > 0 && (to != c || (w <= j->cur_gpus && !back));
    double t1 = policy_plan_time_at(pp, i, w, c), t2 = policy_plan_time_at(pp, i, 2 * w, to);

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
static struct grow best_grow(const struct policy_plan *pp, size_t i, int w, int rm)
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
    else if (pw[i].gpus == 0 || !policy_plan_can_grow(pp, i, pw) ||
             policy_pinned(pp->snap, &pp->snap->jobs[i]))
        return 0;
    else
        g = best_grow(pp, i, pw[i].gpus, rm).gain;
    if (!(g > 0) || !isfinite(g))
        return 0;
    return policy_heap_push(h, (struct policy_cand){g, pp->rank[i], i});
}

/* The gain of starting job i now (its feasible class), or 0. */
static double start_now(const struct policy_plan *pp, size_t i)
{
    int w = 0;
    long c = policy_plan_start_class(pp, i, &w);

    if (c < 0)
        return 0.0;
    double g = inv(policy_plan_time_at(pp, i, w, (size_t)c)) / w * age_boost(pp, i) * pp->weight[i];
    return pp->snap->jobs[i].cur_gpus > 0 ? g * (1.0 + SCHED_KEEP_MARGIN) : g;
}

int policy_grow_room(const struct policy_plan *pp)
{
    for (size_t c = 0; c < pp->ncls; c++)
        if (pp->cls[c].free > 0)
            return 1;
    return 0;
}

int policy_grow_loop(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw, int rm)
{
    struct policy_cand c;

    /* Once no class has a free GPU, no candidate can start (its base count must be free) nor
     * grow (by w more): the rest of the heap would be popped only to be dropped. It is left
     * empty, as the loop would have left it. */
    while (policy_grow_room(pp) && policy_heap_pop(h, &c) == 0) {
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
            policy_grow_start(pp, i, pw);
        else
            apply_grow(pp, i, pw, gr.to);
        if (policy_grow_push(pp, h, pw, i, rm))
            return -1;
    }
    h->n = 0;
    return 0;
}
