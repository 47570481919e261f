/* sched: the policy table and a round of policy then placement (see sched.h); the
 * snapshot's validation is validate.c's. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "gpumap.h"
#include "guarantee.h"
#include "learn.h"
#include "placement.h"
#include "placement_multi.h"
#include "policies/policy.h"
#include "policies/pack.h"
#include "radix.h"
#include "sched.h"
#include "text.h"
#include "validate.h"

/* The policies, in the order sched_policy_list() gives them. */
static const struct sched_policy_ops *const policies[] = {
    &policy_precompute, &policy_exploratory, &policy_optimus, &policy_fifo,
    &policy_fixed_one,  &policy_fixed_two,   &policy_fixed_four, &policy_fixed_eight,
    &policy_gandiva,    &policy_tiresias,    &policy_rubick,     &policy_ringmaster,
    &policy_edf,        NULL,
};

const struct sched_policy_ops *sched_policy_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; policies[i]; i++)
        if (strcmp(policies[i]->name, name) == 0)
            return policies[i];
    return NULL;
}

const struct sched_policy_ops *const *sched_policy_list(void)
{
    return policies;
}

int sched_validate(const struct sched_snapshot *snap, char *err, size_t errlen)
{
    int packed;

    return sched_validate_packed(snap, err, errlen, &packed);
}

void sched_decision_destroy(struct sched_decision *d)
{
    if (!d)
        return;
    free(d->stop_text);
    free(d->assign);
    free(d->slot_pool);
    free(d);
}

/* Keeps a policy's counts within 0..capacity so that placement can size them. */
static void sanitize_want(int *want, size_t n, int capacity)
{
    for (size_t i = 0; i < n; i++) {
        if (want[i] < 0)
            want[i] = 0;
        if (want[i] > capacity)
            want[i] = capacity;
    }
}

/* Why a job must leave GPUs it holds: none, a node down, a failed GPU, GPUs drained to be
 * evacuated: the first of these, in that order, that one of its GPUs has. */
enum leave { LEAVE_NONE, LEAVE_DOWN, LEAVE_FAILED, LEAVE_EVACUATED };

static enum leave why_leave(const struct sched_snapshot *snap, const struct sched_job *j)
{
    enum leave why = LEAVE_NONE;
    for (int k = 0; k < j->cur_gpus; k++) {
        const struct sched_node *nd = &snap->nodes[j->slots[k].node];
        int g = j->slots[k].gpu;
        if (!nd->up)
            return LEAVE_DOWN;
        if (g >= 0 && g < 64 && ((nd->failed >> g) & 1))
            why = LEAVE_FAILED;
        else if (why == LEAVE_NONE && gpumap_must_leave(nd, g))
            why = LEAVE_EVACUATED;
    }
    return why;
}

static const char *reason_waiting(const struct sched_snapshot *snap, const struct sched_job *j,
                                  int want, int capacity)
{
    if (want > 0)
        return j->cur_gpus ? "preempted: no room to place it" : "waiting: no room to place it";
    if (j->cur_gpus)
        return "preempted: the policy gave its GPUs to other jobs";
    if (policy_min_gpus(j) > capacity || (!j->elastic && j->requested_gpus > capacity))
        return "waiting: needs more GPUs than the cluster has up";
    if (j->requested_gpus > capacity)
        return "waiting: asks for more GPUs than the cluster has up";
    (void)snap;
    return "waiting: the policy gave it no GPUs";
}

/* A migration placement made to gather another job; decision_build() names that job when
 * placement says which (placement_plan.gather). */
static const char reason_gather[] = "migrated: to let another job span fewer nodes";

/* Why job i got what it got; also sets a->changed. */
static const char *reason_for(const struct sched_snapshot *snap, size_t i,
                              const struct placement_plan *p, int want, int capacity,
                              struct sched_assignment *a)
{
    const struct sched_job *j = &snap->jobs[i];

    a->changed = !(p->kept[i] || (a->gpus == 0 && j->cur_gpus == 0));
    if (a->gpus == 0)
        return reason_waiting(snap, j, want, capacity);
    if (p->kept[i])
        return "running: unchanged";
    if (a->gpus < want)
        return j->cur_gpus ? "resized: cut to the GPUs placement could find"
                           : "started: with fewer GPUs than the policy chose";
    if (j->cur_gpus == 0)
        return "started";
    if (a->gpus > j->cur_gpus)
        return "resized: grown";
    if (a->gpus < j->cur_gpus)
        return "resized: shrunk";
    switch (why_leave(snap, j)) {
    case LEAVE_DOWN:
        return "migrated: off a node that is down or draining";
    case LEAVE_FAILED:
        return "migrated: off a failed GPU";
    case LEAVE_EVACUATED:
        return "migrated: off GPUs drained to be evacuated";
    case LEAVE_NONE:
        break;
    }
    if (snap->nodes[a->slots[0].node].gpu_model != snap->nodes[j->slots[0].node].gpu_model)
        return "migrated: to a GPU model where it runs faster";
    return reason_gather;
}

/* The node whose GPU model a job placed on model g would get (first of them). */
static const struct sched_node *node_of_model(const struct sched_snapshot *snap, int g)
{
    for (size_t n = 0; n < snap->nnodes; n++)
        if (snap->nodes[n].gpu_model == g)
            return &snap->nodes[n];
    return snap->nnodes ? &snap->nodes[0] : NULL;
}

/* Without a speed model (a job still exploring) plans cannot be ranked: the
 * first of ZeRO-3, offload (8 cores), ZeRO-2, ZeRO-1, DP that the job supports
 * and that fits the GPU memory and host shares; else its requested plan. */
static struct plan_choice fallback_plan(const struct sched_job *j, int w, double mem, int cores,
                                        double host)
{
    static const int kinds[] = {PLAN_ZERO3, PLAN_OFFLOAD, PLAN_ZERO2, PLAN_ZERO1, PLAN_DP};

    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        struct plan_choice c = {kinds[k], 1, 1, 8, 0};
        if (j->plan.supported && !(j->plan.supported & (1u << kinds[k])))
            continue;
        plan_demand(&j->plan, &c, w);
        if (plan_gpu_mem_gb(&j->plan, &c, w) <= mem && (cores == 0 || c.cpu_cores <= cores) &&
            (host == 0 || c.host_mem_gb <= host))
            return c;
    }
    struct plan_choice c = j->plan.requested;
    plan_demand(&j->plan, &c, w);
    return c;
}

/* The plan a job the policy gave no plan runs with on w GPUs of node nd's
 * model: its requested plan if that fits there (GPU memory, and the node's
 * host cores and memory per GPU), else the fastest plan it supports within
 * them, else the fastest plan at all (placement then refuses what does not
 * fit the hosts). */
static struct plan_choice default_plan(const struct sched_job *j, int w,
                                       const struct sched_node *nd)
{
    struct plan_choice c = j->plan.requested;
    int cores = nd && nd->cpu_cores > 0 && nd->ngpus > 0 ? nd->cpu_cores / nd->ngpus : 0;
    double host = nd && nd->host_mem_gb > 0 && nd->ngpus > 0 ? nd->host_mem_gb / nd->ngpus : 0;
    double mem = nd && nd->gpu_mem_gb > 0 ? nd->gpu_mem_gb : PLAN_DEFAULT_GPU_MEM_GB;

    plan_demand(&j->plan, &c, w);
    if (plan_gpu_mem_gb(&j->plan, &c, w) <= mem && (cores == 0 || c.cpu_cores <= cores) &&
        (host == 0 || c.host_mem_gb <= host))
        return c;
    if (!j->speed.fitted)
        return fallback_plan(j, w, mem, cores, host);
    if (plan_best(&j->speed, &j->plan, w, nd ? nd->gpu_speed : 1, mem, cores, host, &c) > 0)
        return c;
    plan_best(&j->speed, &j->plan, w, nd ? nd->gpu_speed : 1, mem, 0, 0, &c);
    return c;
}

/* The plan of job i for the GPUs it got. A job placement cut below what the
 * policy wanted, or whose plan cannot run on those GPUs, gets the fastest plan
 * there that holds no more host resources per GPU than the one chosen, or
 * waits if none fits (it would hold GPUs and make no progress). */
static void assign_plan(const struct sched_snapshot *snap, size_t i,
                        const struct policy_want *pw, struct sched_assignment *a)
{
    const struct sched_job *j = &snap->jobs[i];
    const struct sched_node *nd = a->gpus > 0 ? &snap->nodes[a->slots[0].node] : NULL;

    memset(&a->plan, 0, sizeof(a->plan));
    a->gpu_model = nd ? nd->gpu_model : 0;
    if (!nd || !plan_has_info(&j->plan)) /* a job placed nowhere: its lines are not read */
        return;
    a->plan = pw[i].plan;
    double mem = nd->gpu_mem_gb > 0 ? nd->gpu_mem_gb : PLAN_DEFAULT_GPU_MEM_GB;
    int runs = a->gpus == a->wanted && plan_gpu_mem_gb(&j->plan, &a->plan, a->gpus) <= mem;
    if (!runs && !j->speed.fitted) {
        struct plan_choice c = fallback_plan(j, a->gpus, mem, a->plan.cpu_cores,
                                             a->plan.host_mem_gb);
        runs = plan_gpu_mem_gb(&j->plan, &c, a->gpus) <= mem;
        a->plan = c;
    }
    if (!runs && !(plan_best(&j->speed, &j->plan, a->gpus, nd->gpu_speed, nd->gpu_mem_gb,
                             a->plan.cpu_cores, a->plan.host_mem_gb, &a->plan) > 0)) {
        a->gpus = 0;
        a->changed = j->cur_gpus > 0;
        a->reason = "waiting: no execution plan fits the GPUs placement found";
        memset(&a->plan, 0, sizeof(a->plan));
        return;
    }
    plan_demand(&j->plan, &a->plan, a->gpus);
    a->plan_changed = j->cur_gpus > 0 && !plan_same(&a->plan, &j->cur_plan);
    if (a->plan_changed && !a->changed) {
        a->changed = 1;
        a->reason = "replanned: a faster execution plan";
    }
}

/* The reason of a job the guard served (guarantee.h), or that got its deadline's share. */
static const char *reason_forced(unsigned char forced)
{
    return forced == 1   ? "started: it had waited longer than max_wait_s"
           : forced == 2 ? "started: its user's fair share of the GPUs"
                         : "given the least share that meets its deadline";
}

/* The reason of a job migrated to make room for job id at level (placement.h) into buf. */
static void room_reason(char *buf, size_t len, int64_t id, enum placement_level level)
{
    static const char *const tail[] = {" span fewer nodes", " run on one switch",
                                       " run on one NVLink island", " start"};
    struct text t = {buf, 0, len};
    text_put(&t, "migrated: to let job ");
    text_put_long(&t, (long long)id);
    text_put(&t, tail[level]);
}

/* Of a running job that must wait: which guarantee (stops[i], guarantee.h) or deadline
 * (pw[i].stopped_for, minshare.h) stopped it and for which job, as preempted_by and
 * preempted_for, its reason naming them in d->stop_text (made at the first). Returns -1 when
 * out of memory, else 0. */
static int stop_reason(struct sched_decision *d, const struct sched_snapshot *snap, size_t i,
                       const struct policy_want *pw, const struct guarantee_stop *stops)
{
    static const char *const tail[] = {"", ", which had waited longer than max_wait_s",
                                       ", within its user's fair share",
                                       ", to meet its deadline"};
    struct sched_assignment *a = &d->assign[i];
    int by = stops[i].kind ? stops[i].kind : pw[i].stopped_for ? 3 : 0;
    if (a->gpus > 0 || snap->jobs[i].cur_gpus <= 0 || !by)
        return 0;
    if (!d->stop_text && !(d->stop_text = calloc(d->njobs + 1, SCHED_STOP_TEXT)))
        return -1;
    a->preempted_by = by;
    a->preempted_for = by == 3 ? pw[i].stopped_for : stops[i].for_job;
    char *buf = d->stop_text + i * SCHED_STOP_TEXT;
    struct text t = {buf, 0, SCHED_STOP_TEXT};
    text_put(&t, "preempted: for job ");
    text_put_long(&t, (long long)a->preempted_for);
    text_put(&t, tail[by]);
    a->reason = buf;
    return 0;
}

static struct sched_decision *decision_build(const struct sched_snapshot *snap,
                                             struct placement_plan *p, const int *want,
                                             const struct policy_want *pw, int capacity,
                                             const unsigned char *forced,
                                             const struct guarantee_stop *stops)
{
    struct sched_decision *d = calloc(1, sizeof(*d));

    if (!d)
        return NULL;
    d->assign = calloc(snap->njobs + 1, sizeof(*d->assign));
    if (!d->assign) {
        free(d);
        return NULL;
    }
    d->njobs = snap->njobs;
    d->capacity = capacity;
    d->fragmentation = p->fragmentation;
    d->slot_pool = p->slots;
    p->slots = NULL;
    for (size_t i = 0; i < snap->njobs; i++) {
        struct sched_assignment *a = &d->assign[i];
        a->job_id = snap->jobs[i].id;
        a->gpus = p->gpus[i];
        a->wanted = want[i];
        a->slots = d->slot_pool + p->off[i];
        a->reason = reason_for(snap, i, p, want[i], capacity, a);
        if (a->reason == reason_gather && p->gather >= 0 && (size_t)p->gather != i) {
            if (!d->room_text[0])
                room_reason(d->room_text, sizeof(d->room_text), snap->jobs[p->gather].id,
                            p->gather_level);
            a->reason = d->room_text;
            a->has_room_for = 1;
            a->room_for = snap->jobs[p->gather].id;
        }
        a->forced = forced[i];
        if (!a->forced && pw[i].deadline && a->gpus > 0)
            a->forced = 3; /* the policy's own choice, but one that may stop others */
        if (a->forced && a->gpus > 0 && a->changed)
            a->reason = reason_forced(a->forced);
        if (stop_reason(d, snap, i, pw, stops) < 0) {
            sched_decision_destroy(d);
            return NULL;
        }
        assign_plan(snap, i, pw, a);
        d->used += a->gpus;
        d->nchanged += a->changed;
    }
    return d;
}

/* 1 if job j holds a GPU drained without evacuation (sched_node.drained) and none it must
 * leave (a failed GPU, a node down). */
static int holds_drained(const struct sched_snapshot *snap, const struct sched_job *j)
{
    for (int k = 0; k < j->cur_gpus; k++)
        if (gpumap_must_leave(&snap->nodes[j->slots[k].node], j->slots[k].gpu))
            return 0; /* it moves anyway */
    for (int k = 0; k < j->cur_gpus; k++) {
        const struct sched_node *nd = &snap->nodes[j->slots[k].node];
        int g = j->slots[k].gpu;
        if (nd->up && !nd->evacuate && g >= 0 && g < 64 && ((nd->drained >> g) & 1))
            return 1;
    }
    return 0;
}

/* What the policy sees: a policy that does not choose batches, adaptive jobs as fixed at
 * their batch; every policy, a job that holds GPUs drained without evacuation as rigid at
 * what it holds, ranked first: a drain lets running jobs run on as they are (their drained
 * GPUs are theirs alone, and a resize would move them off), and no policy may count those
 * GPUs for another job. *view is snap, or a copy of it over *copy (free it) when some job had
 * to change. */
static int policy_view(const struct sched_policy_ops *policy, const struct sched_snapshot *snap,
                       struct sched_snapshot *view, struct sched_job **copy)
{
    int batch = 0, drained = 0;

    *view = *snap;
    *copy = NULL;
    for (size_t n = 0; n < snap->nnodes && !drained; n++)
        drained = snap->nodes[n].drained != 0;
    for (size_t i = 0; i < snap->njobs && !batch && !policy->chooses_batch; i++)
        batch = snap->jobs[i].batch.adaptive;
    if (!batch && !drained)
        return 0;
    *copy = malloc((snap->njobs + 1) * sizeof(**copy));
    if (!*copy)
        return -1;
    memcpy(*copy, snap->jobs, snap->njobs * sizeof(**copy));
    for (size_t i = 0; i < snap->njobs; i++) {
        struct sched_job *j = &(*copy)[i];
        if (batch)
            j->batch.adaptive = 0;
        if (drained && holds_drained(snap, j)) {
            j->priority = INT_MAX / 2;
            j->elastic = 0;
            j->requested_gpus = j->min_gpus = j->max_gpus = j->cur_gpus;
        }
    }
    view->jobs = *copy;
    return 0;
}

double sched_batch_rate(const struct sched_job *j, int gpu_model, int gpus, int nodes, double m)
{
    /* on its own model of its GPUs' model when it has one (sched_job_rate_on()): a job learned
     * live may have one there before its reference model is fitted */
    const struct sched_type_speed *t = sched_job_type_speed(j, gpu_model);
    const struct speed_model *sp = t ? &t->speed : &j->speed;
    struct batch_spec b = t ? sched_job_batch_on(j, gpu_model) : j->batch;
    if (!goodput_has_model(&b) || !sp->fitted || gpus < 1 || !(m > 0))
        return 0;
    return goodput_rate(sp, &b, gpus, nodes, m);
}

/* The best batch for job j on the assignment's GPUs into *m (the goodput_best() of
 * sched_batch_rate()'s model); returns its rate, 0 when there is no model to choose by. */
static double best_batch(const struct sched_job *j, const struct sched_assignment *a, int nodes,
                         double *m)
{
    const struct sched_type_speed *t = sched_job_type_speed(j, a->gpu_model);
    const struct speed_model *sp = t ? &t->speed : &j->speed;
    struct batch_spec b = t ? sched_job_batch_on(j, a->gpu_model) : j->batch;
    return sp->fitted ? goodput_best(sp, &b, a->gpus, nodes, m) : 0;
}

/* The batch running job i runs at when it has a batch model: for a job that is not adaptive
 * (or under a policy that does not choose batches) its own; for an adaptive one the best for
 * its GPUs and nodes when they change (the new batch comes with the restart), and, while they
 * stay, the best when its goodput beats the current batch's by SCHED_BATCH_MIN_GAIN (a change
 * in place, no restart: sched_batch_in_place()), unless it is a job learned live that still
 * measures the size it holds (its stage, learn_pinned). */
static void assign_batch(const struct sched_snapshot *snap, struct sched_decision *d, size_t i)
{
    const struct sched_job *j = &snap->jobs[i];
    struct sched_assignment *a = &d->assign[i];

    if (a->gpus <= 0 || !goodput_has_model(&j->batch))
        return;
    a->batch = j->batch.batch > 0 ? j->batch.batch : j->batch.init_batch;
    if (!j->batch.adaptive)
        return;
    int nodes = sched_slots_nodes(a->slots, a->gpus), stays = !a->changed && j->cur_gpus > 0;
    /* a job learned from its own steps measures its size for a stage first (learn_pinned):
     * a batch changed meanwhile would spoil the measurement */
    if (stays && j->measured_max_gpus > 0 && learn_pinned(snap, j))
        return;
    double m, best = best_batch(j, a, nodes, &m);
    if (stays) {
        double now = sched_batch_rate(j, a->gpu_model, a->gpus, nodes, a->batch);
        if (best > 0 && now > 0 && best >= now * (1.0 + SCHED_BATCH_MIN_GAIN))
            a->batch = m;
    } else if (best > 0) {
        a->batch = m;
    } else {
        struct batch_spec b = sched_job_batch_on(j, a->gpu_model);
        a->batch = goodput_runnable(&b, a->gpus, a->batch);
    }
}

int sched_batch_in_place(const struct sched_job *j, const struct sched_assignment *a)
{
    double cur = j->batch.batch > 0 ? j->batch.batch : j->batch.init_batch;
    return a->gpus > 0 && !a->changed && j->cur_gpus > 0 && goodput_has_model(&j->batch) &&
           a->batch > 0 && fabs(a->batch - cur) >= 0.5;
}

int sched_slots_nodes(const struct sched_slot *slots, int n)
{
    int nodes = 0;
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int q = 0; q < k && !seen; q++)
            seen = slots[q].node == slots[k].node;
        nodes += !seen;
    }
    return nodes;
}

/* Runs the policy into pw (and want); returns 0, or -1 with errno. */
static int run_policy(const struct sched_policy_ops *policy, const struct sched_snapshot *snap,
                      int *want, struct policy_want *pw)
{
    policy_allocate_ex_f ex = policy_allocate_ex_for(policy);

    for (size_t i = 0; i < snap->njobs; i++)
        pw[i].gpu_model = -1;
    if (ex) {
        if (ex(snap, pw))
            return -1;
        for (size_t i = 0; i < snap->njobs; i++)
            want[i] = pw[i].gpus;
        return 0;
    }
    return policy->allocate(snap, want);
}

/* Plans the placement: GPU models for the jobs without one, then placement
 * within the models and host resources (placement_multi.h). */
static struct placement_plan *place(const struct sched_snapshot *snap, int *want,
                                    struct policy_want *pw, int repack)
{
    int *model = malloc((snap->njobs + 1) * sizeof(*model));
    struct plan_choice *plan = calloc(snap->njobs + 1, sizeof(*plan));
    struct placement_plan *p = NULL;

    if (!model || !plan)
        goto out;
    for (size_t i = 0; i < snap->njobs; i++)
        model[i] = pw[i].gpu_model;
    if (placement_multi_assign_models(snap, want, model))
        goto out;
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        if (want[i] <= 0 || !plan_has_info(&j->plan)) /* want first: no line of a job it skips */
            continue;
        if (!pw[i].has_plan)
            pw[i].plan = default_plan(j, want[i], node_of_model(snap, model[i]));
        pw[i].has_plan = 1;
        plan[i] = pw[i].plan;
        plan_demand(&j->plan, &plan[i], want[i]);
    }
    p = placement_multi_create(snap, want, model, plan, repack);
out:
    if (!p)
        errno = ENOMEM;
    free(model);
    free(plan);
    return p;
}

/* A job bound to at most max_switches switches (domain.h) that placement put on more waits
 * while its bound lasts (held[i] = 1), and the others are placed again, until no such job is
 * left (each pass holds one more job at least). Returns 0, or -1 with errno ENOMEM. */
static int hold_switches(const struct sched_snapshot *snap, int *want, struct policy_want *pw,
                         int repack, struct placement_plan **pp, unsigned char *held)
{
    for (size_t pass = 0; pass < snap->njobs; pass++) {
        const struct placement_plan *p = *pp;
        int any = 0;
        for (size_t i = 0; i < snap->njobs; i++) {
            const struct sched_job *j = &snap->jobs[i];
            if (p->gpus[i] > 0 && domain_switch_bound(snap, j) &&
                domain_switches(snap, &p->slots[p->off[i]], p->gpus[i]) > j->max_switches) {
                want[i] = 0;
                held[i] = any = 1;
            }
        }
        if (!any)
            return 0;
        placement_destroy(*pp);
        *pp = place(snap, want, pw, repack);
        if (!*pp)
            return -1;
    }
    return 0;
}

/* Job i's suspend, resume and migrate flags, once the decision is final. */
static void mark_move(const struct sched_policy_ops *policy, const struct sched_snapshot *snap,
                      struct sched_decision *d, size_t i)
{
    const struct sched_job *j = &snap->jobs[i];
    struct sched_assignment *a = &d->assign[i];

    a->suspended = policy->time_slices && j->cur_gpus > 0 && a->gpus == 0;
    a->resumed = a->gpus > 0 && j->cur_gpus == 0 && j->suspended; /* suspended: another line */
    a->migrated = j->cur_gpus > 0 && a->gpus == j->cur_gpus && a->changed &&
                  a->pack != SCHED_PACK_PACK;
    if (a->suspended && a->pack == SCHED_PACK_NONE)
        a->reason = "suspended: time-sliced out, its state kept in host memory";
    if (a->resumed && a->pack == SCHED_PACK_NONE)
        a->reason = "resumed: its turn in the time-slicing";
}

/* After a refine step moved jobs (packing, migration): assignment i's GPU model from its
 * slots, and its plan's host demand for its count. */
static void refresh_model(const struct sched_snapshot *snap, struct sched_decision *d, size_t i)
{
    struct sched_assignment *a = &d->assign[i];

    a->gpu_model = a->gpus > 0 ? snap->nodes[a->slots[0].node].gpu_model : 0;
    if (a->gpus > 0 && plan_has_info(&snap->jobs[i].plan))
        plan_demand(&snap->jobs[i].plan, &a->plan, a->gpus);
}

/* The decision's last steps, each job's in one visit (each reads and writes only job i and
 * its assignment): at 10,000 jobs a pass of its own over the 504-byte jobs and the
 * assignments was a cache miss or two per job each. */
static void finish_decision(const struct sched_policy_ops *policy,
                            const struct sched_snapshot *snap, struct sched_decision *d)
{
    for (size_t i = 0; i < d->njobs; i++) {
        mark_move(policy, snap, d, i);
        if (policy->refine)
            refresh_model(snap, d, i);
        assign_batch(snap, d, i);
    }
}

struct sched_decision *sched_decide(const struct sched_policy_ops *policy,
                                    const struct sched_snapshot *given)
{
    struct sched_decision *d = NULL;
    struct placement_plan *p = NULL;
    struct policy_want *pw = NULL;
    struct sched_snapshot view, base;
    const struct sched_snapshot *snap = &base;
    struct sched_job *copy = NULL, *fixed = NULL;
    unsigned char *forced = NULL, *held = NULL;
    struct guarantee_stop *stops = NULL;
    int *want = NULL, capacity, packed = 0;

    if (!policy || !policy->allocate || sched_validate_packed(given, NULL, 0, &packed)) {
        errno = EINVAL;
        return NULL;
    }
    if (policy_view(policy, given, &base, &fixed)) {
        errno = ENOMEM;
        return NULL;
    }
    want = calloc(snap->njobs + 1, sizeof(*want));
    pw = calloc(snap->njobs + 1, sizeof(*pw));
    forced = calloc(snap->njobs + 1, 1);
    held = calloc(snap->njobs + 1, 1);
    stops = calloc(snap->njobs + 1, sizeof(*stops));
    view = *snap; /* policy_pack_view()'s answer when no job is packed, without its pass */
    if (!want || !pw || !forced || !held || !stops || (packed && policy_pack_view(snap, &view, &copy))) {
        errno = ENOMEM;
        goto out;
    }
    if (run_policy(policy, snap, want, pw))
        goto out;
    capacity = policy_capacity(snap);
    sanitize_want(want, snap->njobs, capacity);
    if (guarantee_apply(snap, want, forced, stops))
        goto out;
    p = place(&view, want, pw, !policy->keeps_slots);
    if (!p || hold_switches(&view, want, pw, !policy->keeps_slots, &p, held))
        goto out;
    d = decision_build(snap, p, want, pw, capacity, forced, stops);
    if (!d) {
        errno = ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < d->njobs; i++)
        if (held[i])
            d->assign[i].reason = DOMAIN_REASON_SWITCHES;
    if (policy->refine && policy->refine(snap, d)) {
        sched_decision_destroy(d);
        d = NULL;
        goto out;
    }
    finish_decision(policy, snap, d);
out:
    placement_destroy(p);
    free(copy);
    free(fixed);
    free(forced);
    free(held);
    free(stops);
    free(want);
    free(pw);
    return d;
}
