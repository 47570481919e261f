/* policy_pack: the packing pieces gandiva and ringmaster share (see
 * policies/pack.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "pack.h"

long policy_pack_partner(const struct sched_snapshot *snap, size_t i)
{
    const struct sched_job *j = &snap->jobs[i];

    if (!j->packed)
        return -1;
    for (size_t k = 0; k < snap->njobs; k++)
        if (k != i && snap->jobs[k].id == j->packed_with)
            return (long)k;
    return -1;
}

int policy_pack_is_second(const struct sched_snapshot *snap, size_t i)
{
    long k = policy_pack_partner(snap, i);

    return k >= 0 && (size_t)k < i;
}

int policy_pack_lost(const struct sched_job *a, const struct sched_job *b)
{
    if (!(a->rate_alone > 0.0 && b->rate_alone > 0.0 && a->rate_packed > 0.0 &&
          b->rate_packed > 0.0))
        return 0;
    return a->rate_packed / a->rate_alone + b->rate_packed / b->rate_alone <
           1.0 + SCHED_PACK_MIN_GAIN;
}

int policy_pack_light(const struct sched_job *j)
{
    return j->gpu_util > 0.0 && j->gpu_util <= SCHED_PACK_MAX_UTIL && !j->pack_reverted;
}

int policy_pack_fits(const struct sched_snapshot *snap, const struct sched_job *a,
                     const struct sched_job *b)
{
    return !(snap->gpu_mem_bytes > 0.0 &&
             a->gpu_mem_bytes + b->gpu_mem_bytes > snap->gpu_mem_bytes);
}

int policy_pack_host_ok(const struct sched_snapshot *snap, const struct sched_decision *d, size_t i,
                        size_t h)
{
    const struct sched_assignment *a = &d->assign[h];

    return h != i && a->gpus == 1 && a->pack == SCHED_PACK_NONE &&
           policy_pack_light(&snap->jobs[h]) &&
           policy_pack_fits(snap, &snap->jobs[i], &snap->jobs[h]);
}

void policy_pack_share(const struct sched_snapshot *snap, struct sched_decision *d, size_t i,
                       size_t h, enum sched_pack_action act)
{
    struct sched_assignment *a = &d->assign[i], *b = &d->assign[h];
    int was_changed = a->changed;

    a->gpus = b->gpus;
    a->slots = b->slots;
    a->pack = b->pack = act;
    a->packed_with = snap->jobs[h].id;
    b->packed_with = snap->jobs[i].id;
    a->changed = act == SCHED_PACK_PACK || b->changed;
    d->nchanged += a->changed - was_changed;
    d->packed_gpus += b->gpus;
    a->reason = act == SCHED_PACK_PACK ? "packed: shares a GPU with a running job"
                                       : "packed: kept, the pair does more work";
    if (act == SCHED_PACK_PACK && b->reason && !b->changed)
        b->reason = "packed: shares its GPU with a waiting job";
}

void policy_pack_revert(const struct sched_snapshot *snap, struct sched_decision *d, size_t i,
                        size_t k)
{
    d->assign[i].pack = d->assign[k].pack = SCHED_PACK_REVERT;
    d->assign[i].packed_with = snap->jobs[k].id;
    d->assign[k].packed_with = snap->jobs[i].id;
    d->assign[i].reason = "packing reverted: the pair did less work than one job alone";
}

int policy_pack_view(const struct sched_snapshot *snap, struct sched_snapshot *view,
                     struct sched_job **copy)
{
    int any = 0;

    *view = *snap;
    *copy = NULL;
    for (size_t i = 0; i < snap->njobs && !any; i++)
        any = snap->jobs[i].packed;
    if (!any)
        return 0;
    *copy = malloc(snap->njobs * sizeof(**copy));
    if (!*copy) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(*copy, snap->jobs, snap->njobs * sizeof(**copy));
    for (size_t i = 0; i < snap->njobs; i++)
        if (policy_pack_is_second(snap, i)) {
            (*copy)[i].cur_gpus = 0;
            (*copy)[i].slots = NULL;
        }
    view->jobs = *copy;
    return 0;
}
