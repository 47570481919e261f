/* policy_plan: the classes, rates, base counts and final plans that rubick
 * and ringmaster share (see policies/plans.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plans.h"

static void class_add_node(struct policy_plan_class *c, const struct sched_node *nd, int open)
{
    int cores = nd->cpu_cores > 0 ? nd->cpu_cores / nd->ngpus : 0;
    double host = nd->host_mem_gb > 0 ? nd->host_mem_gb / nd->ngpus : 0;

    c->free += open;
    if (cores > 0 && (c->cores == 0 || cores < c->cores))
        c->cores = cores;
    if (host > 0 && (c->host == 0 || host < c->host))
        c->host = host;
}

static void build_classes(struct policy_plan *pp)
{
    const struct sched_snapshot *snap = pp->snap;
    uint64_t *held = policy_held_if_drained(snap);

    for (size_t n = 0; n < snap->nnodes; n++) {
        const struct sched_node *nd = &snap->nodes[n];
        int open = policy_node_open(snap, n, held);
        if (!nd->up || nd->ngpus <= 0 || open <= 0)
            continue;
        size_t k = 0;
        while (k < pp->ncls && pp->cls[k].model != nd->gpu_model)
            k++;
        if (k == pp->ncls) {
            pp->cls[k] = (struct policy_plan_class){
                .model = nd->gpu_model,
                .speed = nd->gpu_speed > 0 ? nd->gpu_speed : 1.0,
                .mem = nd->gpu_mem_gb > 0 ? nd->gpu_mem_gb : PLAN_DEFAULT_GPU_MEM_GB,
            };
            pp->ncls++;
        }
        class_add_node(&pp->cls[k], nd, open);
    }
    free(held);
}

static double plan_rate(const struct policy_plan *pp, size_t i, int w, size_t c,
                        struct plan_choice *out);

/* k if w = 2^k with k < POLICY_PLAN_MEMO_POW, else -1. */
static int memo_pow(int w)
{
    if (w < 1 || w >= (1 << POLICY_PLAN_MEMO_POW) || (w & (w - 1)))
        return -1;
    return __builtin_ctz((unsigned)w);
}

/* plan_rate() of job i without plan information nor goodput model on 2^k GPUs of class c:
 * plan_best() from the round's all-reduce coefficients of 2^k (the same number). */
static double dp_rate(const struct policy_plan *pp, size_t i, int k, size_t c)
{
    const struct speed_model *sp = &pp->speed[i];
    const double *ar = pp->allreduce[k];
    int w = 1 << k;

    if (!pp->job[i].speed)
        return 0.0;
    enum speed_link l = w > 1 ? speed_packed_link(sp, w) : SPEED_LINK_ISLAND;
    double f[SPEED_NFEATURES] = {
        1.0, sp->batch_per_gpu, ar[0], ar[1], ar[2], l >= SPEED_LINK_SWITCH ? 1.0 : 0.0,
        l == SPEED_LINK_PCIE ? 1.0 : 0.0, l == SPEED_LINK_CROSS ? 1.0 : 0.0,
    };
    double s = pp->cls[c].speed;
    /* plan_dp_rate() takes a speed that is not positive and finite as 1; at 1 (a class of
     * reference GPUs, the usual case) its answer is plan_dp_rate_unit(), here inline. */
    if (sp->fitted && (s == 1.0 || !(s > 0 && isfinite(s))))
        return plan_dp_rate_unit(sp, w, f);
    return plan_dp_rate(sp, w, f, s);
}

/* A rate the memo does not hold yet, into it. Kept out of policy_plan_rate() (noinline): the
 * registers a new rate needs made every answer from the memo save and restore them. */
__attribute__((noinline)) static double memo_miss(const struct policy_plan *pp, size_t i, int k,
                                                  size_t c, size_t at)
{
    double r = pp->job[i].plan || pp->job[i].goodput || pp->job[i].typed
                   ? plan_rate(pp, i, 1 << k, c, NULL)
                   : dp_rate(pp, i, k, c);

    pp->rate_memo[at * POLICY_PLAN_MEMO_POW + (size_t)k] = r;
    pp->rate_known[at] |= (unsigned char)(1u << k);
    return r;
}

double policy_plan_rate(const struct policy_plan *pp, size_t i, int w, size_t c,
                        struct plan_choice *out)
{
    int k = out ? -1 : memo_pow(w);

    if (k < 0 || !pp->rate_known)
        return plan_rate(pp, i, w, c, out);
    size_t at = i * pp->ncls + c;
    if (!(pp->rate_known[at] & (1u << k)))
        return memo_miss(pp, i, k, c, at);
    return pp->rate_memo[at * POLICY_PLAN_MEMO_POW + (size_t)k];
}

static double plan_rate(const struct policy_plan *pp, size_t i, int w, size_t c,
                        struct plan_choice *out)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    const struct policy_plan_class *k = &pp->cls[c];
    struct plan_choice tmp;

    if (!pp->job[i].speed || w < 1)
        return 0.0;
    if ((pp->job[i].goodput || pp->job[i].typed) && !pp->job[i].plan) {
        /* data parallel at its (best) batch: its own model on the class's GPU model, else a
         * faster GPU model scales the whole step (the one factor) */
        if (out)
            *out = (struct plan_choice){0};
        return sched_job_rate_on(j, w, k->model, k->speed, NULL);
    }
    /* Without plan information plan_best() reads nothing of the plan but that it has none
     * (pp->job[i].plan says so): NULL spares a cache line of the job per first rate. */
    return plan_best(&pp->speed[i], pp->job[i].plan ? &j->plan : NULL, w, k->speed, k->mem,
                     k->cores, k->host, out ? out : &tmp);
}

double policy_plan_time_at(const struct policy_plan *pp, size_t i, int w, size_t c)
{
    double r = policy_plan_rate(pp, i, w, c, NULL);

    return r > 0 && isfinite(r) ? pp->job[i].remaining / r : INFINITY;
}

static int next_size(int w)
{
    return w >= INT_MAX / 2 ? INT_MAX : 2 * w;
}

int policy_plan_base_count(const struct policy_plan *pp, size_t i, size_t c, long cap)
{
    const struct sched_job *j = &pp->snap->jobs[i];
    /* up to its request at least: a learning job's cap (learn_max_gpus, twice what it
     * measured) bounds its growth, not the base that meets its guarantee, which its request
     * meets by definition (a job measured at 4 GPUs whose plan needs 16 waited for ever) */
    int max = pp->job[i].max_gpus > j->requested_gpus ? pp->job[i].max_gpus : j->requested_gpus;

    if (!pp->job[i].speed || !pp->job[i].elastic) {
        int w = policy_clamp(j, j->requested_gpus < cap ? j->requested_gpus : (int)cap);
        return w <= cap ? w : 0;
    }
    if (!pp->job[i].plan)
        return pp->job[i].min_gpus <= cap ? pp->job[i].min_gpus : 0;
    for (int w = pp->job[i].min_gpus; w <= max && w <= cap; w = next_size(w)) {
        double r = policy_plan_rate(pp, i, w, c, NULL);
        if (r > 0 && r >= pp->guarantee[i] * (1.0 - 1e-9))
            return w;
    }
    return 0;
}

long policy_plan_running_class(const struct policy_plan *pp, size_t i)
{
    return pp->job[i].run_cls;
}

static long held_class(const struct policy_plan *pp, const struct sched_job *j)
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

long policy_plan_start_class(const struct policy_plan *pp, size_t i, int *w)
{
    long cur = policy_plan_running_class(pp, i), best = -1;
    double best_r = 0;

    if (pp->pref && pp->pref[i] >= 0) {
        size_t c = (size_t)pp->pref[i];
        *w = policy_plan_base_count(pp, i, c, pp->cls[c].free);
        return *w > 0 ? (long)c : -1;
    }
    if (cur >= 0 && (*w = policy_plan_base_count(pp, i, (size_t)cur, pp->cls[cur].free)) > 0)
        return cur;
    for (size_t c = 0; c < pp->ncls; c++) {
        int b = policy_plan_base_count(pp, i, c, pp->cls[c].free);
        if (b == 0)
            continue;
        /* a job without a speed model (learning, learn.h) starts on the model that its one
         * factor says is fastest: the best known of a GPU model before the job's own steps */
        double r = pp->job[i].speed ? policy_plan_rate(pp, i, b, c, NULL) / b : pp->cls[c].speed;
        if (best < 0 || r > best_r) {
            best = (long)c;
            best_r = r;
            *w = b;
        }
    }
    return best;
}

void policy_plan_give_base(struct policy_plan *pp, size_t i, struct policy_want *pw)
{
    int w = 0;
    long c = policy_plan_start_class(pp, i, &w);

    if (c < 0)
        return;
    pp->cls_of[i] = (int)c;
    pp->cls[c].free -= w;
    pw[i].gpus = w;
}

static int cap_at(const struct policy_plan *pp, size_t i)
{
    if (pp->cap[i] == POLICY_PLAN_CAP_LATER)
        pp->cap[i] = pp->cap_of(pp, i);
    return pp->cap[i];
}

int policy_plan_can_grow(const struct policy_plan *pp, size_t i, const struct policy_want *pw)
{
    const struct policy_plan_job *j = &pp->job[i];

    return pw[i].gpus > 0 && j->elastic && j->speed && pw[i].gpus <= j->max_gpus / 2 &&
           (!pp->cap || pw[i].gpus <= cap_at(pp, i) / 2);
}

/* Final plans; a job whose plan would break its guarantee waits. */
static void finish(struct policy_plan *pp, struct policy_want *pw)
{
    for (size_t i = 0; i < pp->snap->njobs; i++) {
        if (pw[i].gpus <= 0 || pp->cls_of[i] < 0) {
            pw[i].gpus = 0;
            continue;
        }
        size_t c = (size_t)pp->cls_of[i];
        pw[i].gpu_model = pp->cls[c].model;
        if (!pp->job[i].plan || !pp->job[i].speed)
            continue;
        double r = policy_plan_rate(pp, i, pw[i].gpus, c, &pw[i].plan);
        pw[i].has_plan = 1;
        if (!(r > 0) || r < pp->guarantee[i] * (1.0 - 1e-9))
            pw[i].gpus = 0;
    }
}

static double age_boost(const struct sched_snapshot *snap, const struct sched_job *j)
{
    double waited = snap->now - j->submit_time - j->run_time;

    return waited > 0 && isfinite(waited) ? 1.0 + waited / POLICY_PLAN_AGE_S : 1.0;
}

/* pp->job[i], once the classes are known. */
static void job_init(struct policy_plan *pp, size_t i)
{
    const struct sched_job *j = &pp->snap->jobs[i];

    pp->job[i] = (struct policy_plan_job){
        .remaining = policy_remaining_epochs(j),
        .boost = age_boost(pp->snap, j),
        .cur_gpus = j->cur_gpus,
        .min_gpus = policy_min_gpus(j),
        .max_gpus = learn_max_gpus(j),
        .fills_idle = (unsigned char)learn_fills_idle(j),
        .run_cls = (int)held_class(pp, j),
        .speed = (unsigned char)policy_has_speed(j),
        .elastic = j->elastic != 0,
        .plan = (unsigned char)plan_has_info(&j->plan),
        .goodput = (unsigned char)goodput_has_model(&j->batch),
        .typed = (unsigned char)(j->type_speeds && j->ntype_speeds > 0),
        .pinned = (unsigned char)(!policy_pinned(pp->snap, j) ? 0
                                  : j->cur_gpus > 0 && learn_is_learning(j) ? POLICY_PLAN_STAGED
                                                                            : 1),
    };
    if (pp->job[i].speed)
        pp->speed[i] = j->speed;
    else
        memset(&pp->speed[i], 0, sizeof(pp->speed[i]));
}

static void pp_fini(struct policy_plan *pp)
{
    free(pp->cls);
    free(pp->job);
    free(pp->speed);
    free(pp->guarantee);
    free(pp->cls_of);
    free(pp->order);
    free(pp->rank);
    free(pp->key);
    free(pp->priority);
    free(pp->cap);
    free(pp->weight);
    free(pp->rate_known);
    free(pp->rate_memo);
}

static int pp_init(struct policy_plan *pp, const struct sched_snapshot *snap)
{
    size_t n = snap->njobs + 1;

    memset(pp, 0, sizeof(*pp));
    pp->snap = snap;
    pp->resize_cost =
        snap->resize_cost_s > 0 && isfinite(snap->resize_cost_s) ? snap->resize_cost_s : 0.0;
    pp->cls = calloc(snap->nnodes + 1, sizeof(*pp->cls));
    pp->job = malloc(n * sizeof(*pp->job));
    pp->speed = malloc(n * sizeof(*pp->speed));
    pp->guarantee = calloc(n, sizeof(*pp->guarantee));
    pp->cls_of = malloc(n * sizeof(*pp->cls_of));
    pp->order = malloc(n * sizeof(*pp->order));
    pp->rank = malloc(n * sizeof(*pp->rank));
    pp->key = malloc(n * sizeof(*pp->key));
    pp->priority = malloc(n * sizeof(*pp->priority));
    pp->cap = malloc(n * sizeof(*pp->cap));
    pp->weight = malloc(n * sizeof(*pp->weight));
    if (!pp->cls || !pp->job || !pp->speed || !pp->guarantee || !pp->cls_of || !pp->order ||
        !pp->rank || !pp->key || !pp->priority || !pp->cap || !pp->weight ||
        policy_order(snap, pp->order)) {
        pp_fini(pp);
        errno = ENOMEM;
        return -1;
    }
    build_classes(pp);
    size_t cells = n * (pp->ncls ? pp->ncls : 1);
    pp->rate_known = calloc(cells, 1);
    /* A job's counts on a class fill one cache line (8 doubles), aligned to it. */
    pp->rate_memo = aligned_alloc(64, cells * POLICY_PLAN_MEMO_POW * sizeof(*pp->rate_memo));
    if (!pp->rate_known || !pp->rate_memo) {
        pp_fini(pp);
        errno = ENOMEM;
        return -1;
    }
    for (int k = 0; k < POLICY_PLAN_MEMO_POW; k++) {
        double f[SPEED_NFEATURES];
        speed_features_placed(1 << k, 1, 0.0, f);
        memcpy(pp->allreduce[k], &f[2], sizeof(pp->allreduce[k]));
    }
    policy_ranks(pp->order, snap->njobs, pp->rank);
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        job_init(pp, i);
        pp->priority[i] = j->priority;
        pp->cls_of[i] = -1;
        pp->cap[i] = INT_MAX;
        pp->weight[i] = 1.0;
        if (pp->job[i].plan && pp->job[i].speed)
            pp->guarantee[i] = plan_requested_rate(&j->speed, &j->plan, j->requested_gpus, 0);
    }
    return 0;
}

int policy_plan_allocate(const struct sched_snapshot *snap, struct policy_want *pw,
                         policy_plan_body_f body)
{
    struct policy_plan pp;

    if (pp_init(&pp, snap))
        return -1;
    int rc = body(&pp, pw);
    if (rc == 0)
        finish(&pp, pw);
    pp_fini(&pp);
    return rc;
}

int policy_plan_counts(const struct sched_snapshot *snap, int *want, policy_allocate_ex_f ex)
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

policy_allocate_ex_f policy_allocate_ex_for(const struct sched_policy_ops *p)
{
    if (p == &policy_rubick)
        return policy_rubick_ex;
    if (p == &policy_ringmaster)
        return policy_ringmaster_ex;
    return NULL;
}
