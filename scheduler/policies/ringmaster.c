/* policy_ringmaster: the ringmaster policy (docs/evaluation.md) on the shared
 * plan machinery (policies/plans.h).
 *
 * Jobs are ordered by priority, then by predicted remaining time at their
 * base (ties and jobs it cannot grow: the policy order); then the
 * completion-rate greedy (below) starts and grows jobs, first each within its heSRPT share of the cluster
 * (policies/share.c), then with what is left (while all bases fit in
 * RM_SPARE of the GPUs, every job starts first); with jobs that have their own model per
 * GPU model, each GPU model's GPUs then go to the jobs with the comparative advantage there
 * (typed(), policies/typed.c); then GPUs of a model nobody could use go to running jobs
 * that gain from moving (use_idle).
 *
 * The completion-rate greedy: mean JCT falls fastest when jobs complete
 * soonest, so ringmaster maximises the cluster's completion rate, the sum over
 * running jobs of 1 / T_i(w_i), greedily per GPU: starting a waiting job on
 * its base count b gains 1 / T(b) / b, doubling a job from w gains
 * (1/T(2w) - 1/T(w)) / w. A short job is thus doubled before a long one
 * starts (shortest remaining first, with parallelism), and a long job still
 * gets what nobody shorter can use. Each gain is multiplied by
 * 1 + waited / POLICY_PLAN_AGE_S (ageing); a running job's start and its
 * doublings back to what it holds count (1 + SCHED_KEEP_MARGIN) times, growth
 * past it adds resize_cost_s to T(2w), and a pinned job gets back what it
 * holds and no more.
 *
 * Packing (see "packing" below): after placement, waiting jobs that would
 * start on 1 GPU share the GPU of a job alone on 1 GPU when both are light
 * (gandiva's rules, policies/pack.h); the allocator counts a pair's GPU once.
 *
 * Deadlines (policies/minshare.h): a job with one waits in the key order while its slack
 * lasts; once it runs out, the job gets the least share that meets its deadline (ElasticFlow's
 * minimum satisfactory share) ahead of that order. The guarantees (fair shares, max wait)
 * still come after, in sched_decide(). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "minshare.h"
#include "pack.h"
#include "plans.h"
#include "radix.h"

/* ringmaster starts every job first when all their bases fit in this share
 * of the free GPUs (docs/evaluation.md: 0.5 .. 0.75 measured). */
#define RM_SPARE 0.6

/* Rounds of the type choice (typed()): measured on section 8's workloads, 3 gave the lowest
 * mean JCT of 1-6 (docs/evaluation.md); most rounds settle in fewer. */
#define RM_TYPED_ROUNDS 3

/* Each job's base and exponent within one greedy(): they depend only on the job and the
 * classes' models; spare() asks for the base of every waiting job, the growth bounds
 * (set_caps) for the exponent of the jobs that start. */
struct exp_memo {
    double p;
    int base;
    int known; /* bit 0: base, bit 1: p */
    long cls;  /* the class where the base runs fastest per GPU; -1: none */
};

struct policy_plan_exp {
    struct exp_memo *m;
    double free;  /* free GPUs of all classes when the bounds were set */
    size_t plain; /* jobs without a model or not elastic (counted with the keys) */
    double ratio, log_ratio; /* the last ratio of counts an exponent spanned, its log (0: none):
                              * nearly every job's is 8 (its base to 8 times it) */
};

/* Ringmaster's key: predicted remaining seconds at its base on its best class,
 * shortened by waiting (age) and for running jobs (hysteresis). The same pass over the
 * classes works out best_base() (the base where it runs fastest per GPU), which spare()
 * and the growth bounds ask for later, and the best completion rate per GPU at a base
 * (pp->start, what grow.c's start_gain() works out before its factors): the bases, rates
 * and times are at hand here. */
static double rm_key(const struct policy_plan *pp, size_t i)
{
    struct exp_memo *m = &pp->exp->m[i];
    double t = INFINITY, best = 0, g = 0;

    m->base = 0;
    m->cls = -1;
    for (size_t c = 0; c < pp->ncls; c++) {
        int w = policy_plan_base_count(pp, i, c, LONG_MAX / 4);
        double tc = w > 0 ? policy_plan_time_at(pp, i, w, c) : INFINITY;
        if (tc < t)
            t = tc;
        double r = w > 0 ? policy_plan_rate(pp, i, w, c, NULL) / w : 0;
        if (r > best) {
            best = r;
            m->cls = (long)c;
            m->base = w;
        }
        double x = w > 0 && tc > 0 && isfinite(tc) ? 1.0 / tc / w : 0; /* start_gain()'s */
        if (x > g)
            g = x;
    }
    m->known |= 1;
    pp->start[i] = g;
    /* From what pp_init() gathered, not the 504-byte job: the remaining epochs, the ageing
     * factor (1 + waited / POLICY_PLAN_AGE_S when the job waited, else exactly 1: t / 1 is
     * t) and what it holds. */
    if (!isfinite(t))
        t = 1e12 + pp->job[i].remaining;
    t /= pp->job[i].boost;
    if (pp->job[i].cur_gpus > 0)
        t /= 1.0 + SCHED_KEEP_MARGIN;
    return t;
}

/* Orders by priority (an admin's word comes first), then by key (shorter first), ties by
 * the policy order (pp->order and pp->rank hold it on entry): from the policy order, a
 * stable sort by key, then one by priority. Returns 0, or -1 (ENOMEM). */
static int order_by_key(struct policy_plan *pp)
{
    size_t n = pp->snap->njobs;
    struct radix_item *it = malloc((n + 1) * sizeof(*it));
    struct radix_item *tmp = malloc((n + 1) * sizeof(*tmp));

    if (!it || !tmp) {
        free(it);
        free(tmp);
        return -1;
    }
    int one_priority = 1;
    for (size_t i = 0; i < n; i++) {
        pp->key[i] = rm_key(pp, i);
        pp->exp->plain += !pp->job[i].speed || !pp->job[i].elastic;
        one_priority &= pp->priority[i] == pp->priority[0];
    }
    for (size_t k = 0; k < n; k++)
        it[k] = (struct radix_item){radix_key_double(pp->key[pp->order[k]]), pp->order[k]};
    radix_sort(it, tmp, n);
    /* With one priority the sort by it would move nothing. */
    for (size_t k = 0; k < n && !one_priority; k++)
        it[k].key = radix_key_i64_desc(pp->priority[it[k].idx]);
    if (!one_priority)
        radix_sort(it, tmp, n);
    for (size_t k = 0; k < n; k++)
        pp->order[k] = it[k].idx;
    free(it);
    free(tmp);
    policy_ranks(pp->order, n, pp->rank);
    return 0;
}

/* The count of class to's free GPUs, at least w, that job i runs fastest on: w's doublings
 * and all of them, within its max_gpus (0: fewer than w free). */
static int idle_count(const struct policy_plan *pp, size_t i, int w, size_t to)
{
    long most = pp->cls[to].free < pp->job[i].max_gpus ? pp->cls[to].free : pp->job[i].max_gpus;
    int best = 0;
    double fastest = INFINITY;

    for (long t = w; t <= most; t = t < most && 2 * t > most ? most : 2 * t) {
        double x = policy_plan_time_at(pp, i, (int)t, to);
        if (x < fastest) {
            fastest = x;
            best = (int)t;
        }
        if (t == most)
            break;
    }
    return best;
}

/* After the greedy, GPUs of a model that nobody could use are idle: a running
 * job (longest predicted first) moves onto them when that makes it clearly
 * faster, at the largest power of two they hold within its bounds. The move
 * only takes what is left over, so jobs do not hop back and forth. */
static void use_idle(struct policy_plan *pp, struct policy_want *pw)
{
    const struct sched_snapshot *snap = pp->snap;
    double cost =
        snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s : 0.0;

    for (size_t k = snap->njobs; k-- > 0;) {
        size_t i = pp->order[k];
        const struct policy_plan_job *pj = &pp->job[i];
        if (pw[i].gpus == 0 || pp->cls_of[i] < 0 || !pj->elastic || !pj->speed || pj->pinned)
            continue;
        size_t c = (size_t)pp->cls_of[i];
        double now = policy_plan_time_at(pp, i, pw[i].gpus, c);
        for (size_t to = 0; to < pp->ncls; to++) {
            int t = idle_count(pp, i, pw[i].gpus, to);
            if (to == c || t == 0)
                continue;
            if (!(policy_plan_time_at(pp, i, t, to) + cost < now / (1.0 + SCHED_KEEP_MARGIN)))
                continue;
            pp->cls[c].free += pw[i].gpus;
            pp->cls[to].free -= t;
            pp->cls_of[i] = (int)to;
            pw[i].gpus = t;
            break;
        }
    }
}

/* Job i's base on the class where it runs fastest per GPU (0: none fits). */
static int best_base(const struct policy_plan *pp, size_t i)
{
    struct exp_memo *m = &pp->exp->m[i];
    double best = 0;

    if (m->known & 1)
        return m->base;
    m->base = 0;
    m->cls = -1;
    for (size_t c = 0; c < pp->ncls; c++) {
        int b = policy_plan_base_count(pp, i, c, LONG_MAX / 4);
        double r = b > 0 ? policy_plan_rate(pp, i, b, c, NULL) / b : 0;
        if (r > best) {
            best = r;
            m->cls = (long)c;
            m->base = b;
        }
    }
    m->known |= 1;
    return m->base;
}

/* Speed-up exponent of job i on the class where its base runs fastest per
 * GPU, between its base b and min(max_gpus, 8b); *base = b (0: none fits). */
static double exponent(const struct policy_plan *pp, size_t i, int *base)
{
    struct exp_memo *m = &pp->exp->m[i];

    *base = best_base(pp, i);
    if (m->known & 2)
        return m->p;
    m->known |= 2;
    m->p = 0.0;
    if (m->cls < 0)
        return 0.0;
    int b = *base, top = pp->job[i].max_gpus;
    if (top / 8 >= b)
        top = 8 * b;
    double ratio = (double)top / (double)b;
    if (top > b && ratio != pp->exp->ratio) {
        pp->exp->ratio = ratio;
        pp->exp->log_ratio = log(ratio);
    }
    m->p = policy_share_exponent_log(b, policy_plan_rate(pp, i, b, (size_t)m->cls, NULL), top,
                                     policy_plan_rate(pp, i, top, (size_t)m->cls, NULL),
                                     pp->exp->log_ratio);
    return m->p;
}

/* Free GPUs of all classes. */
static double free_gpus(const struct policy_plan *pp)
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
 * made jobs resize back and forth when nothing contended). Worked out when the
 * greedy first asks (pp->cap_of): k is the job's rank, the free GPUs those when
 * set_caps() ran. */
static int cap_of(const struct policy_plan *pp, size_t i)
{
    int b = 0;
    double p = exponent(pp, i, &b);
    int cap = policy_share_cap(b, policy_share_fraction(pp->rank[i], pp->snap->njobs, p) *
                                      pp->exp->free);

    return pp->job[i].cur_gpus > cap ? pp->job[i].cur_gpus : cap;
}

static void set_caps(struct policy_plan *pp)
{
    pp->exp->free = free_gpus(pp);
    pp->cap_of = cap_of;
    for (size_t i = 0; i < pp->snap->njobs; i++)
        pp->cap[i] = POLICY_PLAN_CAP_LATER;
}

/* Pushes every elastic job with a model (a start or a growth) and runs the greedy. The
 * candidates come out of the heap in an order that depends only on them (gain, then rank),
 * not on the order they went in, so they are pushed in index order: one pass over the jobs'
 * arrays in memory order (in key order each job was a cache miss per array at 10,000 jobs).
 * Pushing changes nothing that a push reads (the free GPUs, the bounds' inputs). */
static int greedy_pass(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw)
{
    int rc = 0;

    /* With no GPU free, the loop could do nothing with what would be pushed. */
    for (size_t i = 0; i < pp->snap->njobs && rc == 0 && policy_grow_room(pp); i++)
        if (pp->job[i].speed && pp->job[i].elastic)
            rc = policy_grow_push(pp, h, pw, i, 1);
    return rc == 0 ? policy_grow_loop(pp, h, pw, 1) : rc;
}

/* 1 if the base counts of all elastic jobs with a model that hold nothing
 * yet fit in RM_SPARE of the free GPUs. */
static int spare(const struct policy_plan *pp, const struct policy_want *pw)
{
    double need = 0;

    for (size_t i = 0; i < pp->snap->njobs; i++) {
        if (pw[i].gpus > 0 || !pp->job[i].speed || !pp->job[i].elastic)
            continue;
        int b = best_base(pp, i);
        if (b <= 0)
            return 0;
        need += b;
    }
    return need <= RM_SPARE * free_gpus(pp);
}

/* Jobs without a model or not elastic get their base in key order. When the
 * others' bases all fit with room to spare (spare()), every one of them
 * starts first, in key order: nothing waits while GPUs are plentiful. Then
 * the completion-rate greedy starts and grows jobs, first each within its
 * heSRPT bound (set_caps), then, with what is left, without bounds. */
static int greedy_once(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw)
{
    const struct sched_snapshot *snap = pp->snap;
    int rc;

    for (size_t k = 0; k < snap->njobs && pp->exp->plain > 0; k++) {
        size_t i = pp->order[k];
        if (!pp->job[i].speed || !pp->job[i].elastic)
            policy_plan_give_base(pp, i, pw);
    }
    if (spare(pp, pw))
        for (size_t k = 0; k < snap->njobs; k++) {
            size_t i = pp->order[k];
            if (pw[i].gpus == 0 && pp->job[i].speed && pp->job[i].elastic)
                policy_grow_start(pp, i, pw);
        }
    set_caps(pp);
    rc = greedy_pass(pp, h, pw);
    int *cap = pp->cap;
    pp->cap = NULL;
    if (rc == 0)
        rc = greedy_pass(pp, h, pw);
    pp->cap = cap;
    return rc;
}

/* 1 with more than one class and a job whose type is chosen by comparative advantage
 * (policy_typed_job). */
static int typed_round(const struct policy_plan *pp)
{
    if (pp->ncls < 2)
        return 0;
    for (size_t i = 0; i < pp->snap->njobs; i++)
        if (policy_typed_job(pp, i))
            return 1;
    return 0;
}

/* Back to no GPU given out of total[c] per class. */
static void undo(struct policy_plan *pp, struct policy_want *pw, const long *total)
{
    for (size_t c = 0; c < pp->ncls; c++)
        pp->cls[c].free = total[c];
    for (size_t i = 0; i < pp->snap->njobs; i++) {
        pw[i].gpus = 0;
        pp->cls_of[i] = -1;
    }
}

/* With jobs that have their own model per GPU model: the greedy gives the counts; each
 * class then goes to the jobs with the comparative advantage there (policy_typed_assign),
 * and the greedy runs again with each of them held to its class (pp->pref), up to
 * RM_TYPED_ROUNDS times, until the classes stay as they were; a last pass without classes
 * gives out what is left; then pairs exchange their GPUs where both together gain
 * (policy_typed_swap). */
static int typed(struct policy_plan *pp, struct policy_heap *h, struct policy_want *pw)
{
    size_t n = pp->snap->njobs;
    long *total = malloc((pp->ncls + 1) * sizeof(*total));
    int *pref = malloc((n + 1) * sizeof(*pref));
    int *prev = malloc((n + 1) * sizeof(*prev));
    int rc = -1;

    if (!total || !pref || !prev)
        goto out;
    for (size_t c = 0; c < pp->ncls; c++)
        total[c] = pp->cls[c].free;
    if (greedy_once(pp, h, pw))
        goto out;
    for (int round = 0; round < RM_TYPED_ROUNDS; round++) {
        if (policy_typed_assign(pp, pw, total, pref))
            goto out;
        if (round > 0 && !memcmp(pref, prev, n * sizeof(*pref)))
            break;
        undo(pp, pw, total);
        pp->pref = pref;
        rc = greedy_once(pp, h, pw);
        pp->pref = NULL;
        if (rc)
            goto out;
        rc = -1;
        memcpy(prev, pref, n * sizeof(*pref));
    }
    int *cap = pp->cap;
    pp->cap = NULL;
    rc = greedy_pass(pp, h, pw);
    pp->cap = cap;
    if (rc == 0)
        rc = policy_typed_swap(pp, pw);
out:
    free(total);
    free(pref);
    free(prev);
    return rc;
}

static int greedy(struct policy_plan *pp, struct policy_want *pw)
{
    struct policy_heap h;
    int rc;

    if (policy_heap_init(&h, pp->snap->njobs))
        return -1;
    rc = typed_round(pp) ? typed(pp, &h, pw) : greedy_once(pp, &h, pw);
    if (rc == 0 && pp->ncls > 1)
        use_idle(pp, pw);
    if (rc == 0)
        rc = policy_grow_fill(pp, &h, pw);
    policy_heap_fini(&h);
    return rc;
}

/* The second job of a packed pair (it holds nothing in the allocator's view)
 * already progresses at f = rate_packed / rate_alone of its rate: starting it
 * on GPUs of its own adds only 1 - f of its completion rate, and nothing
 * until the pair is measured (a pair is judged on its first measurement). */
static void weigh_packed(struct policy_plan *pp)
{
    for (size_t i = 0; i < pp->snap->njobs; i++) {
        const struct sched_job *j = &pp->snap->jobs[i];
        if (!policy_pack_is_second(pp->snap, i))
            continue;
        double f = j->rate_alone > 0 && j->rate_packed > 0 ? j->rate_packed / j->rate_alone : 1.0;
        pp->weight[i] = f < 1.0 ? 1.0 - f : 0.0;
    }
}

static int ringmaster_run(struct policy_plan *pp, struct policy_want *pw, int packed)
{
    struct policy_plan_exp exp = {calloc(pp->snap->njobs + 1, sizeof(*exp.m)), 0, 0, 0, 0};
    double *start = malloc((pp->snap->njobs + 1) * sizeof(*start));
    int rc = -1;

    if (!exp.m || !start) {
        free(exp.m);
        free(start);
        errno = ENOMEM;
        return -1;
    }
    pp->exp = &exp;
    pp->start = start;
    if (packed)
        weigh_packed(pp);
    if (order_by_key(pp) == 0)
        rc = greedy(pp, pw);
    pp->exp = NULL;
    pp->start = NULL;
    free(exp.m);
    free(start);
    return rc;
}

/* With packed jobs in the snapshot (weigh_packed), or none: then no job is the second of a
 * pair, and the pass that would look for them over every 504-byte job is spared. */
static int ringmaster_body(struct policy_plan *pp, struct policy_want *pw)
{
    return ringmaster_run(pp, pw, 1);
}

static int ringmaster_body_unpacked(struct policy_plan *pp, struct policy_want *pw)
{
    return ringmaster_run(pp, pw, 0);
}

/* The allocator sees the second job of each packed pair as holding nothing
 * (the pair's GPU counted once, as placement books it): it may give that job
 * GPUs of its own (the pair then ends) or nothing (the pair may be kept). */
int policy_ringmaster_ex(const struct sched_snapshot *snap, struct policy_want *pw)
{
    struct sched_snapshot view;
    struct sched_job *copy;

    if (policy_pack_view(snap, &view, &copy))
        return -1;
    /* policy_pack_view() copies the jobs only when one is packed. */
    int rc = policy_plan_allocate(&view, pw, copy ? ringmaster_body : ringmaster_body_unpacked);
    if (rc == 0)
        rc = policy_minshare_apply(&view, pw); /* deadlines whose slack ran out */
    free(copy);
    return rc;
}

/* ---- packing -------------------------------------------------------------
 *
 * After placement, a job that got nothing and would start on 1 GPU shares
 * the GPU of a job that runs alone on 1 GPU, on gandiva's conditions
 * (policies/pack.h): both light, their memory fits, neither reverted before.
 * Jobs with plan information are never packed (their plan is chosen for
 * GPUs of their own). */

/* 1 if job j would start on 1 GPU: min_gpus 1 for an elastic job with a
 * model, else a request of 1 (its base count, without plans). */
static int one_gpu(const struct sched_job *j)
{
    if (plan_has_info(&j->plan))
        return 0;
    if (policy_has_speed(j) && j->elastic)
        return policy_min_gpus(j) == 1;
    return policy_clamp(j, j->requested_gpus) == 1;
}

/* 1 if no assignment of d holds GPU s. */
static int gpu_free(const struct sched_decision *d, struct sched_slot s)
{
    for (size_t i = 0; i < d->njobs; i++)
        for (int g = 0; g < d->assign[i].gpus; g++)
            if (d->assign[i].slots[g].node == s.node && d->assign[i].slots[g].gpu == s.gpu)
                return 0;
    return 1;
}

/* The allocator gave the pair's GPU to its second job i (1 GPU) and nothing
 * to its first k: i runs on the pair's GPU (moved back onto it when placement
 * put it elsewhere and it is still free and up) and k stays beside it. Returns 1 if
 * the pair is kept this way. */
static int keep_swapped(const struct sched_snapshot *snap, struct sched_decision *d, size_t i,
                        size_t k)
{
    struct sched_assignment *b = &d->assign[i];
    struct sched_slot s = snap->jobs[k].slots[0];

    if (b->slots[0].node != s.node || b->slots[0].gpu != s.gpu) {
        if (!snap->nodes[s.node].up ||
            snap->nodes[s.node].gpu_model != snap->nodes[b->slots[0].node].gpu_model ||
            !gpu_free(d, s))
            return 0;
        b->slots[0] = s;
    }
    d->nchanged -= b->changed;
    b->changed = 0;
    b->reason = "packed: kept, the pair does more work";
    policy_pack_share(snap, d, k, i, SCHED_PACK_KEEP);
    return 1;
}

/* Existing pairs (i the second, k the first, which held the GPU for the
 * allocator and placement): reverted when the measured rates say the pair
 * lost; kept when the first stays alone on its GPU and the second got no
 * GPUs of its own; else the pair ends (NONE): the second runs on its own
 * GPUs (it moves off the shared GPU) or waits, and the first was resized,
 * moved or stopped. */
static void keep_pairs(const struct sched_snapshot *snap, struct sched_decision *d)
{
    for (size_t i = 0; i < snap->njobs; i++) {
        long k = policy_pack_partner(snap, i);
        if (k < 0 || (size_t)k > i)
            continue;
        const struct sched_job *a = &snap->jobs[k], *b = &snap->jobs[i];
        const struct sched_assignment *first = &d->assign[k], *second = &d->assign[i];
        if (policy_pack_lost(a, b))
            policy_pack_revert(snap, d, i, (size_t)k);
        else if (first->gpus == 1 && !first->changed && second->gpus == 0 &&
                 second->pack == SCHED_PACK_NONE && policy_pack_light(a) && policy_pack_light(b) &&
                 policy_pack_fits(snap, a, b) && one_gpu(b))
            policy_pack_share(snap, d, i, (size_t)k, SCHED_PACK_KEEP);
        else if (first->gpus == 0 && second->gpus == 1 && first->pack == SCHED_PACK_NONE &&
                 policy_pack_light(a) && policy_pack_light(b) && policy_pack_fits(snap, a, b) &&
                 one_gpu(a))
            keep_swapped(snap, d, i, (size_t)k);
    }
}

/* The host for waiting job i: a job alone on 1 GPU that may take a partner
 * (policy_pack_host_ok), without plan information; -1 if none. */
static long best_host(const struct sched_snapshot *snap, const struct sched_decision *d, size_t i)
{
    long best = -1;

    for (size_t h = 0; h < snap->njobs; h++) {
        const struct sched_job *j = &snap->jobs[h];
        if (!policy_pack_host_ok(snap, d, i, h) || plan_has_info(&j->plan))
            continue;
        if (best < 0 || j->gpu_util < snap->jobs[best].gpu_util)
            best = (long)h;
    }
    return best;
}

/* New pairs: waiting jobs that would start on 1 GPU, shortest predicted
 * remaining time (on 1 GPU) first, ties in the policy order (a stable sort from it).
 * The candidates are found first, in index order: the policy order (a pass over every job)
 * is taken only when there is one. */
static int new_pairs(const struct sched_snapshot *snap, struct sched_decision *d)
{
    size_t n = snap->njobs, m = 0, found = 0;
    unsigned char *cand = malloc(n + 1);

    if (!cand)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct sched_job *j = &snap->jobs[i];
        cand[i] = d->assign[i].gpus <= 0 && d->assign[i].pack == SCHED_PACK_NONE &&
                  policy_pack_light(j) && one_gpu(j);
        found += cand[i];
    }
    if (found == 0) {
        free(cand);
        return 0;
    }
    size_t *order = malloc((n + 1) * sizeof(*order));
    struct radix_item *w = malloc((n + 1) * sizeof(*w));
    struct radix_item *tmp = malloc((n + 1) * sizeof(*tmp));

    if (!order || !w || !tmp || policy_order(snap, order)) {
        free(cand);
        free(order);
        free(w);
        free(tmp);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        if (!cand[i])
            continue;
        double t = policy_time_at(&snap->jobs[i], 1);
        w[m++] = (struct radix_item){radix_key_double(isfinite(t) ? t : HUGE_VAL), i};
    }
    radix_sort(w, tmp, m);
    for (size_t k = 0; k < m; k++) {
        long h = best_host(snap, d, w[k].idx);
        if (h >= 0)
            policy_pack_share(snap, d, w[k].idx, (size_t)h, SCHED_PACK_PACK);
    }
    free(cand);
    free(order);
    free(w);
    free(tmp);
    return 0;
}

static int refine_ringmaster(const struct sched_snapshot *snap, struct sched_decision *d)
{
    keep_pairs(snap, d);
    return new_pairs(snap, d);
}

static int ringmaster_counts(const struct sched_snapshot *snap, int *want)
{
    return policy_plan_counts(snap, want, policy_ringmaster_ex);
}

const struct sched_policy_ops policy_ringmaster = {
    .name = "ringmaster",
    .summary = "shortest predicted remaining time first with ageing, heSRPT shares, plans, "
               "GPU models, doubling with hysteresis, packing of light 1-GPU jobs",
    .allocate = ringmaster_counts,
    .refine = refine_ringmaster,
    .chooses_batch = 1,
};
