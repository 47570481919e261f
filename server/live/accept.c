/* accept: what of a round's decision may change now (round_plan.h): every change when no GPU
 * ends up booked twice (the busy map is gpumap.h's), else only what fits in free GPUs; a
 * person's migrate requests. */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "explore.h"
#include "gpumap.h"
#include "log.h"
#include "plan_int.h"
#include "sched.h"
#include "slice.h"
#include "snap.h"

/* True when all n slots are on node. */
static int on_node_of(const struct sched_slot *sl, int n, int node)
{
    for (int k = 0; k < n; k++)
        if (sl[k].node != node)
            return 0;
    return 1;
}

/* Time-slicing (slice.h): a running job the decision leaves without GPUs is suspended
 * in place when the policy time-slices (a->suspended), or when it shares its GPU in a pair
 * (any packing policy: a reverted or ended pair's job given nothing must leave the shared
 * GPU; it then waits, time-sliced, for GPUs of its own), or when a guarantee of the core
 * gives its GPUs to a job that waited too long or is below its user's share (any policy: it
 * yields, suspended in place, and waits for GPUs again); a job suspended so resumes in place
 * on the GPUs it left, or moves through its checkpoint (migrate) onto others. CH_KEEP when
 * neither applies. */
static enum change slice_change(const struct live_plan *p, const struct live_plan_job *pj,
                                const struct sched_assignment *a)
{
    int paired = p->cjobs[pj - p->jobs].packed && a->gpus == 0;
    int yields = a->gpus == 0 && p->guaranteed;
    if (!pj->fixed && (a->suspended || paired || yields) && pj->sj->state == JOB_RUNNING &&
        pj->sj->cur_gpus > 0)
        return CH_SUSPEND;
    if (live_slice_waiting(p->slice, pj->sj) && a->gpus > 0)
        return live_slice_in_place(p->slice, pj->sj, a->slots, a->gpus) ? CH_RESUME : CH_MIGRATE;
    return CH_KEEP;
}

/* 1 if job i shares its GPUs with a packed partner listed before it, which books them. */
static int second_of_pair(const struct live_plan *p, size_t i)
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
 * size); a new batch on the same GPUs is a change in place (the core's sched_batch_in_place,
 * to a batch that differs once rounded). */
static enum change proposed(const struct live_plan *p, size_t i)
{
    const struct live_plan_job *pj = &p->jobs[i];
    const struct sched_assignment *a = &p->d->assign[i];
    enum change sliced = slice_change(p, pj, a);
    if (sliced != CH_KEEP)
        return sliced;
    if (pj->fixed || a->gpus <= 0)
        return CH_KEEP;
    if (pj->sj->state == JOB_PENDING)
        return CH_START;
    if (!a->changed)
        return pj->sj->state == JOB_RUNNING && sched_batch_in_place(&p->cjobs[i], a) &&
                       batch_after_round(&pj->sj->batch, a->batch, a->gpus) !=
                           (long)pj->sj->batch.batch
                   ? CH_BATCH
                   : CH_KEEP;
    return (a->gpus != pj->sj->cur_gpus || a->plan_changed) &&
                   on_node_of(a->slots, a->gpus, pj->sj->slots[0].node)
               ? CH_RESIZE
               : CH_MIGRATE;
}

static void keep(struct live_plan_job *pj)
{
    pj->change = CH_KEEP;
    pj->gpus = pj->sj->cur_gpus;
    pj->slots = pj->sj->slots;
}

static void take(struct live_plan *p, size_t i, enum change ch)
{
    p->jobs[i].change = ch;
    p->jobs[i].gpus = p->d->assign[i].gpus;
    p->jobs[i].slots = p->d->assign[i].slots;
}

/* Every change the decision makes, if no GPU ends up booked twice. Returns 0 or -1. */
static int accept_all(struct live_plan *p)
{
    gpumap_clear(p->busy, p->s->nnodes);
    for (size_t i = 0; i < p->njobs; i++) {
        enum change ch = proposed(p, i);
        if (ch == CH_KEEP)
            keep(&p->jobs[i]);
        else
            take(p, i, ch);
        if (!second_of_pair(p, i) && gpumap_mark(p->busy, p->jobs[i].slots, p->jobs[i].gpus) < 0)
            return -1;
    }
    return 0;
}

/* Running jobs keep their GPUs; a change goes ahead only into GPUs still free. */
static void accept_safe(struct live_plan *p)
{
    gpumap_clear(p->busy, p->s->nnodes);
    for (size_t i = 0; i < p->njobs; i++) {
        keep(&p->jobs[i]);
        if (!second_of_pair(p, i))
            gpumap_mark(p->busy, p->jobs[i].slots, p->jobs[i].gpus);
    }
    for (size_t i = 0; i < p->njobs; i++) {
        enum change ch = proposed(p, i);
        struct live_plan_job *pj = &p->jobs[i];
        const struct sched_assignment *a = &p->d->assign[i];
        if (ch == CH_KEEP)
            continue;
        gpumap_unmark(p->busy, pj->slots, pj->gpus);
        if (gpumap_all_free(p->busy, a->slots, a->gpus))
            take(p, i, ch);
        gpumap_mark(p->busy, pj->slots, pj->gpus);
    }
}

/* Up to n free GPUs of node that are not drained, into out; returns how many were found. */
static int free_on(const struct live_plan *p, int node, int n, struct sched_slot *out)
{
    int got = 0;
    for (int g = 0; g < p->s->nodes[node].ngpus && got < n; g++)
        if (!gpumap_taken(p->busy, node, g) &&
            !(((p->s->nodes[node].drained | p->s->nodes[node].failed) >> g) & 1))
            out[got++] = (struct sched_slot){node, g};
    return got;
}

/* A person's migrate request: the same count on one other node with enough free GPUs. */
static void migrate_requested(struct live_plan *p, size_t i, struct sched_slot *out)
{
    struct live_plan_job *pj = &p->jobs[i];
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
        gpumap_unmark(p->busy, pj->slots, pj->gpus);
        gpumap_mark(p->busy, out, sj->cur_gpus);
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

/* An exploring job holds its largest stage in the decision but runs its current stage (the
 * core's explore_running_stage): its allocation is the first GPUs of what the decision gave,
 * those it holds now first. The rest of the reservation stays free; the core reserves it
 * again in every round of the exploration. */
static void run_explore_stage(struct live_plan *p, size_t i)
{
    const struct sched_job *j = &p->cjobs[i];
    const struct snap_job *sj = p->jobs[i].sj;
    struct sched_assignment *a = &p->d->assign[i];
    int w = explore_running_stage(j, a->gpus, p->stage_s), front = 0;
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

int live_plan_apply_decision(struct live_plan *p)
{
    /* a guarantee of the core (max wait, fair share) or a deadline's least share gave a job
     * GPUs: the running jobs the decision leaves without GPUs yield them (slice_change) */
    for (size_t i = 0; i < p->njobs && !p->guaranteed; i++)
        p->guaranteed = p->d->assign[i].forced != 0;
    if (strcmp(p->policy, "exploratory") == 0)
        for (size_t i = 0; i < p->njobs; i++)
            run_explore_stage(p, i);
    p->busy = gpumap_create(p->s->nnodes);
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
