#include "sched_plan.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "jobspec.h"
#include "log.h"
#include "sched.h"
#include "sched_model.h"
#include "sched_round.h"
#include "sched_slice.h"
#include "sched_snap.h"

#define FIXED_PRIORITY (INT_MAX / 2) /* jobs in transition rank before every other */

/* CH_SUSPEND and CH_RESUME: time-slicing (sched_slice.h). */
enum change { CH_KEEP, CH_START, CH_RESIZE, CH_MIGRATE, CH_SUSPEND, CH_RESUME };

struct plan_job {
    const struct snap_job *sj;
    struct sched_model *model;
    int fixed;                      /* may not change this round */
    int gpus;                       /* what it holds after the round */
    const struct sched_slot *slots; /* gpus entries: the decision's or its current ones */
    enum change change;
    const char *reason;
    int migrated_by_request;
    char pending_reason[192];
    int queue_position;      /* 1.. among waiting jobs; 0 when not waiting */
    double predicted_start;  /* epoch seconds; < 0 unknown */
    double predicted_finish; /* of a waiting job, epoch seconds; < 0 unknown */
};

struct sched_plan {
    const struct sched_snap *s;
    const struct sched_config *cfg;
    struct sched_node *cnodes;
    struct sched_job *cjobs;
    struct sched_snapshot snap;
    struct sched_decision *d;
    struct sched_slice *slice;
    struct plan_job *jobs;
    size_t njobs;
    struct sched_slot *moved; /* slots of migrations a person asked for */
    uint64_t *busy;           /* per node: GPUs held after the round */
    double stage_s;           /* exploring stage length */
    int capacity;             /* GPUs on up nodes */
    char policy[32];
};

void sched_plan_destroy(struct sched_plan *p)
{
    if (!p)
        return;
    sched_decision_destroy(p->d);
    sched_slice_destroy(p->slice);
    free(p->cnodes);
    free(p->cjobs);
    free(p->jobs);
    free(p->moved);
    free(p->busy);
    free(p);
}

/* The exploring stage length: the setting explore_stage_s (PUT /api/v1/scheduler, 1..86400
 * s), else the core's default (SCHED_EXPLORE_STAGE_S, the paper's 150 s). */
static double explore_stage_s(const struct sched_config *cfg)
{
    double s = cfg->explore_stage_s;
    return s > 0 && isfinite(s) ? s : SCHED_EXPLORE_STAGE_S;
}

/* The size of j's current exploring stage: the first of 1, 2, 4, 8 within its bounds and at
 * most limit GPUs that has run less than stage_s; 0 when every such stage is done. As in the
 * core, a job with no time measured at any stage counts its run time, stage after stage. */
static int explore_stage(const struct sched_job *j, int limit, double stage_s)
{
    int lo = j->min_gpus > 0 ? j->min_gpus : 1, hi = j->max_gpus > 0 ? j->max_gpus : INT_MAX;
    int tracked = 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++)
        tracked |= j->explored_s[k] > 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        double seen = tracked ? j->explored_s[k] : j->run_time - k * stage_s;
        if (w >= lo && w <= hi && w <= limit && seen < stage_s)
            return w;
    }
    return 0;
}

static void core_job(struct sched_plan *p, size_t i, const struct sched_snap *s)
{
    struct plan_job *pj = &p->jobs[i];
    const struct snap_job *sj = pj->sj;
    const struct sched_model *m = pj->model;
    struct sched_job *j = &p->cjobs[i];
    *j = (struct sched_job){.id = sj->id,
                            .submit_time = sj->submit,
                            .priority = sj->priority,
                            .requested_gpus = sj->gpus,
                            .min_gpus = sj->min_gpus,
                            .max_gpus = sj->max_gpus,
                            .elastic = sj->elastic,
                            .cur_gpus = sj->cur_gpus,
                            .slots = sj->slots,
                            .model_source = m->source,
                            .speed = m->speed,
                            .conv = m->conv,
                            .epochs_done = m->epochs_done,
                            .plan = sj->plan};
    if (sj->cur_gpus > 0) {
        j->last_change_time = sj->since_last;
        j->run_time = s->now - sj->since_first;
        j->cur_plan = sj->cur_plan;
    }
    j->remaining_epochs = sched_model_remaining_epochs(m, sj->cur_gpus > 0 ? sj->cur_gpus : 1);
    memcpy(j->explored_s, m->explored_s, sizeof(j->explored_s));
    /* A job fitted from its own steps explores every stage first (the paper's Exploratory):
     * until then the core sees no model, as the simulator shows it none. */
    if (j->elastic && !m->class_name[0] && m->source == SCHED_MODEL_FITTED &&
        explore_stage(j, p->capacity, p->stage_s) > 0)
        j->model_source = SCHED_MODEL_NONE;
    sched_slice_fill(p->slice, sj, j);
    if (pj->fixed) {
        j->priority = FIXED_PRIORITY;
        j->elastic = 0;
        j->requested_gpus = j->min_gpus = j->max_gpus = sj->cur_gpus;
    }
}

/* Which jobs the core sees: every job but a SUSPENDED one holding nothing, and a job in
 * transition that lost its allocation. */
static int wanted(const struct snap_job *sj)
{
    int moving = sj->state != JOB_PENDING && sj->state != JOB_RUNNING;
    return !(moving && sj->cur_gpus == 0);
}

static int build_jobs(struct sched_plan *p, struct sched_models *ms, long round_no, PGconn *c)
{
    const struct sched_snap *s = p->s;
    p->jobs = calloc(s->njobs + 1, sizeof(*p->jobs));
    p->cjobs = calloc(s->njobs + 1, sizeof(*p->cjobs));
    if (!p->jobs || !p->cjobs)
        return -1;
    p->stage_s = explore_stage_s(p->cfg);
    for (size_t n = 0; n < s->nnodes; n++)
        p->capacity += s->nodes[n].up ? s->nodes[n].ngpus : 0;
    for (size_t k = 0; k < s->njobs; k++) {
        const struct snap_job *sj = &s->jobs[k];
        if (!sched_slice_wanted(p->slice, sj, wanted(sj)))
            continue;
        struct plan_job *pj = &p->jobs[p->njobs];
        pj->sj = sj;
        pj->model = sched_models_get(ms, sj->id, sj->model, sj->batch_per_gpu, round_no);
        if (!pj->model)
            return -1;
        if (sched_model_refresh(pj->model, c, sj->nmetrics) < 0)
            log_error("scheduler: job %lld: cannot read its metrics", (long long)sj->id);
        pj->fixed = sj->state != JOB_PENDING && sj->state != JOB_RUNNING &&
                    !sched_slice_waiting(p->slice, sj);
        pj->predicted_start = pj->predicted_finish = -1;
        core_job(p, p->njobs++, s);
    }
    return 0;
}

/* The packing bound: memory of one GPU in bytes, the smallest of the up nodes whose GPU
 * memory is known (reported, or their model's; sched_snap.c); 0 when none is (no bound). */
static double gpu_mem_bound(const struct sched_snap *s)
{
    double gb = 0;
    for (size_t n = 0; n < s->nnodes; n++) {
        double m = s->nodes[n].gpu_mem_gb;
        if (s->nodes[n].up && m > 0 && isfinite(m) && (gb <= 0 || m < gb))
            gb = m;
    }
    return gb * 1e9;
}

static int build_snapshot(struct sched_plan *p, long round_no)
{
    const struct sched_snap *s = p->s;
    p->cnodes = calloc(s->nnodes + 1, sizeof(*p->cnodes));
    if (!p->cnodes)
        return -1;
    for (size_t n = 0; n < s->nnodes; n++) {
        const struct snap_node *sn = &s->nodes[n];
        p->cnodes[n] = (struct sched_node){.id = sn->id,
                                           .ngpus = sn->ngpus,
                                           .up = sn->up,
                                           .cpu_cores = sn->cpu_cores,
                                           .host_mem_gb = sn->host_mem_gb,
                                           .gpu_model = sn->gpu_model,
                                           .gpu_speed = sn->gpu_speed,
                                           .gpu_mem_gb = sn->gpu_mem_gb};
    }
    p->snap = (struct sched_snapshot){
        .now = s->now,
        .seed = (uint64_t)round_no,
        .nodes = p->cnodes,
        .nnodes = s->nnodes,
        .jobs = p->cjobs,
        .njobs = p->njobs,
        .resize_cost_s = s->resize_cost_s >= 0 ? s->resize_cost_s : p->cfg->resize_cost_s,
        .min_resize_interval_s = p->cfg->min_resize_interval_s,
        .explore_stage_s = p->stage_s,
        .quantum_s = p->cfg->quantum_s,
        .gpu_mem_bytes = gpu_mem_bound(s),
    };
    return 0;
}

/* The configured policy, or "exploratory" when precompute meets a job without a model. */
static const struct sched_policy_ops *choose_policy(struct sched_plan *p)
{
    const char *name = p->cfg->policy;
    if (strcmp(name, "precompute") == 0)
        for (size_t i = 0; i < p->njobs; i++)
            if (p->cjobs[i].elastic && p->cjobs[i].model_source == SCHED_MODEL_NONE)
                name = "exploratory";
    snprintf(p->policy, sizeof(p->policy), "%s", name);
    const struct sched_policy_ops *ops = sched_policy_find(name);
    return ops ? ops : sched_policy_find("precompute");
}

/* Marks n slots busy; -1 when one already was. */
static int mark(uint64_t *busy, const struct sched_slot *sl, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t bit = 1ULL << sl[k].gpu;
        if (busy[sl[k].node] & bit)
            return -1;
        busy[sl[k].node] |= bit;
    }
    return 0;
}

static void unmark(uint64_t *busy, const struct sched_slot *sl, int n)
{
    for (int k = 0; k < n; k++)
        busy[sl[k].node] &= ~(1ULL << sl[k].gpu);
}

static int all_free(const uint64_t *busy, const struct sched_slot *sl, int n)
{
    for (int k = 0; k < n; k++)
        if (busy[sl[k].node] & (1ULL << sl[k].gpu))
            return 0;
    return 1;
}

/* True when all n slots are on node. */
static int on_node_of(const struct sched_slot *sl, int n, int node)
{
    for (int k = 0; k < n; k++)
        if (sl[k].node != node)
            return 0;
    return 1;
}

/* Time-slicing (sched_slice.h): a running job the decision leaves without GPUs is suspended
 * in place when the policy time-slices (a->suspended), or when it shares its GPU in a pair
 * (any packing policy: a reverted or ended pair's job given nothing must leave the shared
 * GPU; it then waits, time-sliced, for GPUs of its own); a job suspended so resumes in place
 * on the GPUs it left, or moves through its checkpoint (migrate) onto others. CH_KEEP when
 * neither applies. */
static enum change slice_change(const struct sched_plan *p, const struct plan_job *pj,
                                const struct sched_assignment *a)
{
    int paired = p->cjobs[pj - p->jobs].packed && a->gpus == 0;
    if (!pj->fixed && (a->suspended || paired) && pj->sj->state == JOB_RUNNING &&
        pj->sj->cur_gpus > 0)
        return CH_SUSPEND;
    if (sched_slice_waiting(p->slice, pj->sj) && a->gpus > 0)
        return sched_slice_in_place(p->slice, pj->sj, a->slots, a->gpus) ? CH_RESUME : CH_MIGRATE;
    return CH_KEEP;
}

/* 1 if job i shares its GPUs with a packed partner listed before it, which books them. */
static int second_of_pair(const struct sched_plan *p, size_t i)
{
    const struct sched_assignment *a = &p->d->assign[i];
    if (a->pack != SCHED_PACK_PACK && a->pack != SCHED_PACK_KEEP)
        return 0;
    for (size_t k = 0; k < i; k++)
        if (p->jobs[k].sj->id == a->packed_with)
            return 1;
    return 0;
}

/* What the decision would change for job i, if it is allowed to. A new size or a new plan on
 * the node where the job runs is a resize (that worker restarts it); anything that leaves the
 * node is a migration (that worker checkpoints, the first new node starts it, at the new
 * size). */
static enum change proposed(const struct sched_plan *p, size_t i)
{
    const struct plan_job *pj = &p->jobs[i];
    const struct sched_assignment *a = &p->d->assign[i];
    enum change sliced = slice_change(p, pj, a);
    if (sliced != CH_KEEP)
        return sliced;
    if (pj->fixed || a->gpus <= 0)
        return CH_KEEP;
    if (pj->sj->state == JOB_PENDING)
        return CH_START;
    if (!a->changed)
        return CH_KEEP;
    return (a->gpus != pj->sj->cur_gpus || a->plan_changed) &&
                   on_node_of(a->slots, a->gpus, pj->sj->slots[0].node)
               ? CH_RESIZE
               : CH_MIGRATE;
}

static void keep(struct plan_job *pj)
{
    pj->change = CH_KEEP;
    pj->gpus = pj->sj->cur_gpus;
    pj->slots = pj->sj->slots;
}

static void take(struct sched_plan *p, size_t i, enum change ch)
{
    p->jobs[i].change = ch;
    p->jobs[i].gpus = p->d->assign[i].gpus;
    p->jobs[i].slots = p->d->assign[i].slots;
}

/* Every change the decision makes, if no GPU ends up booked twice. Returns 0 or -1. */
static int accept_all(struct sched_plan *p)
{
    memset(p->busy, 0, p->s->nnodes * sizeof(*p->busy));
    for (size_t i = 0; i < p->njobs; i++) {
        enum change ch = proposed(p, i);
        if (ch == CH_KEEP)
            keep(&p->jobs[i]);
        else
            take(p, i, ch);
        if (!second_of_pair(p, i) && mark(p->busy, p->jobs[i].slots, p->jobs[i].gpus) < 0)
            return -1;
    }
    return 0;
}

/* Running jobs keep their GPUs; a change goes ahead only into GPUs still free. */
static void accept_safe(struct sched_plan *p)
{
    memset(p->busy, 0, p->s->nnodes * sizeof(*p->busy));
    for (size_t i = 0; i < p->njobs; i++) {
        keep(&p->jobs[i]);
        if (!second_of_pair(p, i))
            mark(p->busy, p->jobs[i].slots, p->jobs[i].gpus);
    }
    for (size_t i = 0; i < p->njobs; i++) {
        enum change ch = proposed(p, i);
        struct plan_job *pj = &p->jobs[i];
        const struct sched_assignment *a = &p->d->assign[i];
        if (ch == CH_KEEP)
            continue;
        unmark(p->busy, pj->slots, pj->gpus);
        if (all_free(p->busy, a->slots, a->gpus))
            take(p, i, ch);
        mark(p->busy, pj->slots, pj->gpus);
    }
}

/* Up to n free GPUs of node, into out; returns how many were found. */
static int free_on(const struct sched_plan *p, int node, int n, struct sched_slot *out)
{
    int got = 0;
    for (int g = 0; g < p->s->nodes[node].ngpus && got < n; g++)
        if (!(p->busy[node] & (1ULL << g)))
            out[got++] = (struct sched_slot){node, g};
    return got;
}

/* A person's migrate request: the same count on one other node with enough free GPUs. */
static void migrate_requested(struct sched_plan *p, size_t i, struct sched_slot *out)
{
    struct plan_job *pj = &p->jobs[i];
    const struct snap_job *sj = pj->sj;
    if (sj->migrate_to < 0 || sj->state != JOB_RUNNING || pj->change != CH_KEEP ||
        sj->cur_gpus == 0)
        return;
    for (size_t n = 0; n < p->s->nnodes; n++) {
        const struct snap_node *node = &p->s->nodes[n];
        if (!node->up || (int)n == sj->slots[0].node ||
            (sj->migrate_to > 0 && node->id != sj->migrate_to))
            continue;
        if (free_on(p, (int)n, sj->cur_gpus, out) < sj->cur_gpus)
            continue;
        unmark(p->busy, pj->slots, pj->gpus);
        mark(p->busy, out, sj->cur_gpus);
        pj->change = CH_MIGRATE;
        pj->slots = out;
        pj->migrated_by_request = 1;
        return;
    }
}

/* True when slot sl is one of the n in set. */
static int slot_in(struct sched_slot sl, const struct sched_slot *set, int n)
{
    for (int k = 0; k < n; k++)
        if (set[k].node == sl.node && set[k].gpu == sl.gpu)
            return 1;
    return 0;
}

/* An exploring job holds its largest stage in the decision but runs its current stage
 * (policy_exploratory.c: "the caller runs it at its current stage's size"): its allocation
 * is the first GPUs of what the decision gave, those it holds now first. The rest of the
 * reservation stays free; the core reserves it again in every round of the exploration. */
static void run_explore_stage(struct sched_plan *p, size_t i)
{
    const struct sched_job *j = &p->cjobs[i];
    const struct snap_job *sj = p->jobs[i].sj;
    struct sched_assignment *a = &p->d->assign[i];
    if (!j->elastic || (j->model_source != SCHED_MODEL_NONE && j->speed.fitted) || a->gpus <= 0)
        return;
    int w = explore_stage(j, a->gpus, p->stage_s), front = 0;
    if (w <= 0)
        return;
    a->reason = "exploring: runs its current stage of 1, 2, 4, 8 GPUs";
    if (w >= a->gpus)
        return;
    for (int k = 0; k < a->gpus; k++)
        if (slot_in(a->slots[k], sj->slots, sj->cur_gpus)) {
            struct sched_slot t = a->slots[front];
            a->slots[front++] = a->slots[k];
            a->slots[k] = t;
        }
    a->gpus = w;
    a->changed = !(w == sj->cur_gpus && front >= w);
}

static int apply_decision(struct sched_plan *p)
{
    if (strcmp(p->policy, "exploratory") == 0)
        for (size_t i = 0; i < p->njobs; i++)
            run_explore_stage(p, i);
    p->busy = calloc(p->s->nnodes + 1, sizeof(*p->busy));
    size_t total = 0;
    for (size_t i = 0; i < p->njobs; i++)
        total += (size_t)p->jobs[i].sj->cur_gpus;
    p->moved = calloc(total + 1, sizeof(*p->moved));
    if (!p->busy || !p->moved)
        return -1;
    if (accept_all(p) < 0) {
        log_info("scheduler: the decision moved a job in transition; keeping running jobs");
        accept_safe(p);
    }
    size_t off = 0;
    for (size_t i = 0; i < p->njobs; i++) {
        p->jobs[i].reason = p->d->assign[i].reason;
        migrate_requested(p, i, p->moved + off);
        off += (size_t)p->jobs[i].sj->cur_gpus;
    }
    return 0;
}

/* ---- why waiting jobs wait ---- */

static int job_need(const struct snap_job *sj)
{
    return sj->elastic && sj->min_gpus > 0 ? sj->min_gpus : sj->gpus;
}

static void explain(const struct sched_plan *p, struct plan_job *pj, int nfree, int most, int up,
                    int capacity)
{
    int need = job_need(pj->sj);
    char *out = pj->pending_reason;
    size_t len = sizeof(pj->pending_reason);
    if (up == 0)
        snprintf(out, len, "needs %d GPUs, no node is up", need);
    else if (need > capacity)
        snprintf(out, len, "needs %d GPUs, the cluster has %d on up nodes", need, capacity);
    else if (nfree < need && up == 1)
        snprintf(out, len, "needs %d GPUs, %d free on one node", need, nfree);
    else if (nfree < need)
        snprintf(out, len, "needs %d GPUs, %d free (at most %d on one node)", need, nfree, most);
    else
        snprintf(out, len, "needs %d GPUs, %d free: %s", need, nfree, pj->reason);
    (void)p;
}

static int cmp_queue(const void *a, const void *b)
{
    const struct plan_job *x = *(struct plan_job *const *)a, *y = *(struct plan_job *const *)b;
    if (x->sj->priority != y->sj->priority)
        return x->sj->priority > y->sj->priority ? -1 : 1;
    if (x->sj->submit != y->sj->submit)
        return x->sj->submit < y->sj->submit ? -1 : 1;
    return x->sj->id < y->sj->id ? -1 : x->sj->id > y->sj->id;
}

struct release {
    double at;
    int gpus;
};

static int cmp_release(const void *a, const void *b)
{
    const struct release *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Predicted start of each waiting job in queue order: GPUs free now, then the GPUs of
 * running jobs as their models predict them to finish; a waiting job predicted to start
 * takes its GPUs and gives them back when its own model says it ends. Unknown (-1) from
 * the first job whose start cannot be predicted. */
static void predict_starts(struct sched_plan *p, struct plan_job **q, size_t nq, int nfree)
{
    size_t cap = p->njobs * 2 + 2, n = 0;
    struct release *rel = calloc(cap, sizeof(*rel));
    if (!rel)
        return;
    rel[n++] = (struct release){p->s->now, nfree};
    for (size_t i = 0; i < p->njobs; i++) {
        double left = sched_model_remaining_s(p->jobs[i].model, p->jobs[i].gpus);
        if (p->jobs[i].gpus > 0 && left >= 0)
            rel[n++] = (struct release){p->s->now + left, p->jobs[i].gpus};
    }
    for (size_t k = 0; k < nq; k++) {
        qsort(rel, n, sizeof(*rel), cmp_release);
        int need = job_need(q[k]->sj), got = 0;
        size_t used = 0;
        while (used < n && got < need)
            got += rel[used++].gpus;
        if (got < need)
            break;
        double start = rel[used - 1].at;
        rel[used - 1].gpus = got - need;
        memmove(rel, rel + used - 1, (n - used + 1) * sizeof(*rel));
        n -= used - 1;
        q[k]->predicted_start = start;
        double left = sched_model_remaining_s(q[k]->model, need);
        if (left < 0)
            break;
        q[k]->predicted_finish = start + left;
        rel[n++] = (struct release){start + left, need};
    }
    free(rel);
}

static void explain_waiting(struct sched_plan *p)
{
    int nfree = 0, most = 0, up = 0, capacity = 0;
    for (size_t n = 0; n < p->s->nnodes; n++) {
        if (!p->s->nodes[n].up)
            continue;
        int f = p->s->nodes[n].ngpus - __builtin_popcountll(p->busy[n]);
        nfree += f;
        most = f > most ? f : most;
        capacity += p->s->nodes[n].ngpus;
        up++;
    }
    struct plan_job **q = calloc(p->njobs + 1, sizeof(*q));
    size_t nq = 0;
    for (size_t i = 0; q && i < p->njobs; i++)
        if (p->jobs[i].sj->state == JOB_PENDING && p->jobs[i].change == CH_KEEP)
            q[nq++] = &p->jobs[i];
    if (!q)
        return;
    qsort(q, nq, sizeof(*q), cmp_queue);
    for (size_t k = 0; k < nq; k++) {
        q[k]->queue_position = (int)k + 1;
        explain(p, q[k], nfree, most, up, capacity);
    }
    predict_starts(p, q, nq, nfree);
    free(q);
}

/* Time-sliced jobs resume on the very GPUs they left when the decision allows it
 * (sched_slice_prefer_home). Returns 0, or -1 with errno ENOMEM. */
static int prefer_home(struct sched_plan *p)
{
    const struct snap_job **sjs = calloc(p->njobs + 1, sizeof(*sjs));
    if (!sjs)
        return -1;
    for (size_t i = 0; i < p->njobs; i++)
        sjs[i] = p->jobs[i].sj;
    sched_slice_prefer_home(p->slice, sjs, p->d->assign, p->njobs);
    free(sjs);
    return 0;
}

struct sched_plan *sched_plan_create(const struct sched_snap *s, struct sched_models *ms,
                                     const struct sched_config *cfg, long round_no, PGconn *c,
                                     char *err, size_t errlen)
{
    struct sched_plan *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->s = s;
    p->cfg = cfg;
    p->slice = sched_slice_read(c, s, err, errlen);
    if (!p->slice)
        goto error;
    if (build_jobs(p, ms, round_no, c) < 0 || build_snapshot(p, round_no) < 0) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    char why[256] = "";
    if (sched_validate(&p->snap, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "inconsistent snapshot: %s", why);
        goto error;
    }
    p->d = sched_decide(choose_policy(p), &p->snap);
    if (!p->d || prefer_home(p) < 0 || apply_decision(p) < 0) {
        snprintf(err, errlen, "deciding: %s", strerror(errno));
        goto error;
    }
    explain_waiting(p);
    return p;
error:
    sched_plan_destroy(p);
    return NULL;
}

/* ---- writing the round ---- */

static const char *const kind_name[] = {"keep", "start", "resize", "migrate", "suspend", "resume"};

/* The plan job i runs with after the round: the decision's for a change it takes, the one
 * it runs with for a migration a person asked for ("dp" for a job without plans). */
static void plan_after(const struct sched_plan *p, const struct plan_job *pj, char *buf, size_t len)
{
    const struct snap_job *sj = pj->sj;
    if (pj->migrated_by_request)
        jobspec_plan_name(&sj->cur_plan, buf, len);
    else
        jobspec_plan_name(&p->d->assign[pj - p->jobs].plan, buf, len);
}

/* The spec of a start, resize or migrate action (new), per docs/worker-protocol.md. */
static json_t *action_spec(const struct sched_plan *p, const struct plan_job *pj)
{
    char plan[JOBSPEC_PLAN_MAX];
    plan_after(p, pj, plan, sizeof(plan));
    const struct snap_job *sj = pj->sj;
    json_t *slots = json_array(), *hosts = json_array(), *last = NULL;
    int last_node = -1;
    for (int k = 0; k < pj->gpus; k++) {
        const struct snap_node *n = &p->s->nodes[pj->slots[k].node];
        json_array_append_new(slots, json_pack("{s:I, s:i}", "node_id", (json_int_t)n->id, "gpu",
                                               n->gpu_index[pj->slots[k].gpu]));
        if (pj->slots[k].node != last_node) {
            last = json_pack("{s:I, s:s, s:i}", "node", (json_int_t)n->id, "name", n->name, "slots",
                             0);
            json_array_append_new(hosts, last);
            last_node = pj->slots[k].node;
        }
        json_object_set_new(last, "slots",
                            json_integer(json_integer_value(json_object_get(last, "slots")) + 1));
    }
    json_t *spec = json_pack("{s:o, s:o, s:i, s:o, s:o, s:f, s:s, s:i, s:s}", "command",
                             json_loads(sj->command, 0, NULL), "env", json_loads(sj->env, 0, NULL),
                             "world_size", pj->gpus, "slots", slots, "hosts", hosts, "lr_scale",
                             (double)pj->gpus, "plan", plan, "from_world_size", sj->cur_gpus,
                             "reason", pj->migrated_by_request ? "migrate requested" : pj->reason);
    /* Checkpoints must be reachable from every node a job may move to: a shared folder the
     * operator names; without one the worker keeps them in its own state directory. One
     * folder per generation (docs/worker-protocol.md, "Checkpoint generations"). */
    const char *root = getenv("RINGMASTER_CHECKPOINT_ROOT");
    if (spec && root && *root) {
        char ckpt[4096];
        snprintf(ckpt, sizeof(ckpt), "%s/job-%lld/g%d", root, (long long)sj->id, sj->ckpt_gen);
        json_object_set_new(spec, "checkpoint_dir", json_string(ckpt));
    }
    if (spec && pj->change != CH_START)
        json_object_set_new(spec, "grace_s", json_real(p->cfg->grace_s));
    return spec;
}

static void ids_array(char *buf, size_t len, const struct sched_plan *p, const struct plan_job *pj,
                      int nodes)
{
    size_t o = 0;
    buf[o++] = '{';
    for (int k = 0; k < pj->gpus && o + 24 < len; k++)
        o += (size_t)snprintf(
            buf + o, len - o, "%s%lld", k ? "," : "",
            nodes ? (long long)p->s->nodes[pj->slots[k].node].id
                  : (long long)p->s->nodes[pj->slots[k].node].gpu_index[pj->slots[k].gpu]);
    snprintf(buf + o, len - o, "}");
}

static int insert_allocation(PGconn *c, const struct sched_plan *p, const struct plan_job *pj)
{
    char id[24], nodes[64 * 24 + 8], gpus[64 * 24 + 8];
    snprintf(id, sizeof(id), "%lld", (long long)pj->sj->id);
    ids_array(nodes, sizeof(nodes), p, pj, 1);
    ids_array(gpus, sizeof(gpus), p, pj, 0);
    const char *prm[] = {id, nodes, gpus};
    return db_command_params(c,
                             "INSERT INTO allocations (job_id, node_id, gpu_idx)"
                             " SELECT $1, unnest($2::bigint[]), unnest($3::int[])",
                             3, prm);
}

/* The node index an action goes to: a start's or resume's first GPU; else where the job runs
 * now, which checkpoints it (the spec says where it goes next), or where a time-sliced job's
 * state waits. */
static int action_node(const struct sched_plan *p, const struct plan_job *pj)
{
    int home = sched_slice_home(p->slice, pj->sj);
    if (pj->change == CH_START || pj->change == CH_RESUME)
        return pj->slots[0].node;
    if (pj->sj->cur_gpus > 0)
        return pj->sj->slots[0].node;
    return home >= 0 ? home : pj->slots[0].node;
}

/* Start, resume, suspend: to action_node(); resize and migrate likewise. */
static int insert_action(PGconn *c, const struct sched_plan *p, const struct plan_job *pj,
                         const char *round)
{
    int at = action_node(p, pj);
    char node[24], job[24];
    snprintf(node, sizeof(node), "%lld", (long long)p->s->nodes[at].id);
    snprintf(job, sizeof(job), "%lld", (long long)pj->sj->id);
    json_t *sj =
        pj->change == CH_SUSPEND ? json_pack("{s:s}", "reason", pj->reason) : action_spec(p, pj);
    char *spec = sj ? json_dumps(sj, JSON_COMPACT) : NULL;
    json_decref(sj);
    const char *prm[] = {node, job, kind_name[pj->change], spec, round};
    /* The job's current_plan is the spec's: written with the action, in its transaction. */
    int rc = spec ? db_command_params(c,
                                      "WITH a AS (INSERT INTO actions (node_id, job_id, kind,"
                                      " spec, round_id) VALUES ($1, $2, $3, $4::jsonb, $5)"
                                      " RETURNING job_id, spec->>'plan' AS plan)"
                                      " UPDATE jobs j SET current_plan = a.plan FROM a"
                                      " WHERE j.id = a.job_id",
                                      5, prm)
                  : -1;
    free(spec);
    return rc;
}

static const enum job_event change_event[] = {JOB_EV_START,   JOB_EV_START,   JOB_EV_RESIZE,
                                              JOB_EV_MIGRATE, JOB_EV_SUSPEND, JOB_EV_RESUME};

/* Suspend and resume leave the job's state to its worker (it says SUSPENDED or RUNNING once
 * the job took it); sched_slice writes their events. */
static int moves_state(enum change ch)
{
    return ch != CH_SUSPEND && ch != CH_RESUME;
}

static enum slice_move slice_move_of(const struct sched_plan *p, const struct plan_job *pj)
{
    if (pj->change == CH_SUSPEND)
        return SLICE_OUT;
    if (pj->change == CH_RESUME ||
        (pj->change == CH_MIGRATE && sched_slice_waiting(p->slice, pj->sj)))
        return SLICE_IN;
    return SLICE_STAY;
}

/* What time-slicing and packing did to each job (job_slices, events). A change the plan
 * did not take leaves the pack fields alone. Returns 0 or -1. */
static int write_slices(struct sched_plan *p, PGconn *c, const char *round)
{
    for (size_t i = 0; i < p->njobs; i++) {
        const struct plan_job *pj = &p->jobs[i];
        const struct sched_assignment *a = &p->d->assign[i];
        int taken = pj->change != CH_KEEP || !a->changed;
        if (sched_slice_record(p->slice, c, pj->sj, taken ? a : NULL, slice_move_of(p, pj), round) <
            0)
            return -1;
    }
    return 0;
}

/* Moves, releases, allocations, actions. Returns actions written, or -1. */
static int write_changes(struct sched_plan *p, PGconn *c, const char *round)
{
    int n = 0;
    for (size_t i = 0; i < p->njobs; i++) {
        struct plan_job *pj = &p->jobs[i];
        if (pj->change == CH_KEEP)
            continue;
        char detail[256];
        snprintf(detail, sizeof(detail), "round %s: %d -> %d GPUs (%s)", round, pj->sj->cur_gpus,
                 pj->gpus, pj->reason);
        if ((moves_state(pj->change) &&
             sched_round_move_job(c, pj->sj->id, pj->sj->state, change_event[pj->change], detail) <
                 0) ||
            sched_round_release_job(c, pj->sj->id) < 0)
            return -1;
    }
    /* Suspensions first: a worker holds a launch while a suspension on its node is under
     * way, so the GPUs a suspended job frees are free when the next job starts on them. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < p->njobs; i++) {
            struct plan_job *pj = &p->jobs[i];
            if (pj->change == CH_KEEP || (pj->change == CH_SUSPEND) != (pass == 0))
                continue;
            if ((pj->gpus > 0 && insert_allocation(c, p, pj) < 0) ||
                insert_action(c, p, pj, round) < 0)
                return -1;
            n++;
        }
    return write_slices(p, c, round) < 0 ? -1 : n;
}

/* When pj is predicted to end, epoch seconds (< 0 unknown): a job holding GPUs after the
 * round ends when its model says at that size, a waiting one as predict_starts() found. */
static double predicted_finish(const struct sched_plan *p, const struct plan_job *pj)
{
    if (pj->gpus <= 0)
        return pj->predicted_finish;
    double left = sched_model_remaining_s(pj->model, pj->gpus);
    return left >= 0 && isfinite(left) ? p->s->now + left : -1;
}

/* One element of the job_sched upsert (new). */
static json_t *job_sched_json(const struct sched_plan *p, const struct plan_job *pj)
{
    double finish = predicted_finish(p, pj);
    json_t *e = json_pack("{s:I, s:I}", "id", (json_int_t)pj->sj->id, "metrics",
                          (json_int_t)pj->model->metrics_seen);
    if (pj->queue_position > 0) {
        json_object_set_new(e, "reason", json_string(pj->pending_reason));
        json_object_set_new(e, "pos", json_integer(pj->queue_position));
    }
    if (pj->predicted_start >= 0)
        json_object_set_new(e, "start", json_real(pj->predicted_start));
    if (finish >= 0)
        json_object_set_new(e, "finish", json_real(finish));
    if (pj->model->changed || pj->change != CH_KEEP)
        json_object_set_new(e, "model", sched_model_json(pj->model, pj->gpus));
    if (pj->migrated_by_request)
        json_object_set_new(e, "migrated", json_true());
    return e;
}

static int write_job_sched(struct sched_plan *p, PGconn *c)
{
    json_t *all = json_array();
    for (size_t i = 0; i < p->njobs; i++)
        json_array_append_new(all, job_sched_json(p, &p->jobs[i]));
    char *text = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    const char *prm[] = {text};
    int rc = text
                 ? db_command_params(
                       c,
                       "INSERT INTO job_sched AS s (job_id, model, metrics_seen, pending_reason,"
                       " queue_position, predicted_start, predicted_finish, migrate_to, updated_at)"
                       " SELECT (e->>'id')::bigint, e->'model', (e->>'metrics')::bigint,"
                       " e->>'reason', (e->>'pos')::int, to_timestamp((e->>'start')::float8),"
                       " to_timestamp((e->>'finish')::float8),"
                       " CASE WHEN e ? 'migrated' THEN -1 END, now()"
                       " FROM jsonb_array_elements($1::jsonb) e"
                       " ON CONFLICT (job_id) DO UPDATE SET"
                       " model = COALESCE(EXCLUDED.model, s.model),"
                       " metrics_seen = EXCLUDED.metrics_seen,"
                       " pending_reason = EXCLUDED.pending_reason,"
                       " queue_position = EXCLUDED.queue_position,"
                       " predicted_start = EXCLUDED.predicted_start,"
                       " predicted_finish = EXCLUDED.predicted_finish, updated_at = now(),"
                       " migrate_to = CASE WHEN EXCLUDED.migrate_to = -1 THEN NULL"
                       " ELSE s.migrate_to END",
                       1, prm)
                 : -1;
    free(text);
    return rc;
}

static long long usec_since(long long t0)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000 - t0;
}

static int begin_round(struct sched_plan *p, PGconn *c, char *round, size_t len)
{
    char jobs[16];
    snprintf(jobs, sizeof(jobs), "%zu", p->njobs);
    const char *prm[] = {p->policy, jobs};
    PGresult *r = db_command(c, "BEGIN") == 0
                      ? db_exec(c,
                                "INSERT INTO sched_rounds (policy, duration_us, jobs, decisions,"
                                " actions) VALUES ($1, 0, $2, 0, 0) RETURNING id",
                                2, prm)
                      : NULL;
    int ok = r && db_ok(r) && PQntuples(r) == 1;
    if (ok)
        snprintf(round, len, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return ok && db_command(c, "DELETE FROM allocations a USING jobs j WHERE a.job_id = j.id"
                               " AND j.state IN ('COMPLETED', 'FAILED', 'CANCELLED')") == 0
               ? 0
               : -1;
}

static int end_round(struct sched_plan *p, PGconn *c, const char *round, long long t0,
                     struct sched_round_result *out)
{
    char us[24], dec[16], act[16], down[16];
    out->duration_us = usec_since(t0);
    out->decisions = p->d->nchanged;
    snprintf(us, sizeof(us), "%lld", out->duration_us);
    snprintf(dec, sizeof(dec), "%d", out->decisions);
    snprintf(act, sizeof(act), "%d", out->actions);
    snprintf(down, sizeof(down), "%d", out->nodes_down);
    const char *prm[] = {round, us, dec, act, down};
    return db_command_params(c,
                             "UPDATE sched_rounds SET duration_us = $2, decisions = $3,"
                             " actions = $4, nodes_down = $5 WHERE id = $1",
                             5, prm) == 0 &&
                   db_command(c, "COMMIT") == 0
               ? 0
               : -1;
}

int sched_plan_write(struct sched_plan *p, PGconn *c, long long t0_us,
                     struct sched_round_result *out, char *err, size_t errlen)
{
    char round[24] = "";
    snprintf(out->policy, sizeof(out->policy), "%s", p->policy);
    out->jobs = (int)p->njobs;
    if (begin_round(p, c, round, sizeof(round)) < 0 ||
        (out->actions = write_changes(p, c, round)) < 0 || write_job_sched(p, c) < 0 ||
        end_round(p, c, round, t0_us, out) < 0) {
        snprintf(err, errlen, "writing round: %s", PQerrorMessage(c));
        db_command(c, "ROLLBACK");
        return -1;
    }
    out->round_id = strtoll(round, NULL, 10);
    for (size_t i = 0; i < p->njobs; i++)
        p->jobs[i].model->changed = 0;
    return 0;
}
