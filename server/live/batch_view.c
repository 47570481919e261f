/* batch_view: why a running batch-model job runs its batch (batch_view.h). */
#include "batch_view.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "fnv.h"
#include "plan_int.h"
#include "sched.h"
#include "snap.h"

/* The batch pj runs after the round: a change's (batch_after_round of the decision's), else
 * the one it runs now. */
static long batch_now(const struct live_plan *p, const struct live_plan_job *pj)
{
    const struct snap_job *sj = pj->sj;
    if (pj->change == CH_KEEP || pj->migrated_by_request || pj->change == CH_SUSPEND)
        return batch_after_round(&sj->batch, 0, pj->gpus);
    return batch_after_round(&sj->batch, p->d->assign[pj - p->jobs].batch, pj->gpus);
}

static void why_text(struct live_batch_view *v)
{
    int n = snprintf(v->why, sizeof(v->why), "batch %ld on %d GPU%s", v->batch, v->gpus,
                     v->gpus == 1 ? "" : "s");
    size_t o = n > 0 && (size_t)n < sizeof(v->why) ? (size_t)n : 0, len = sizeof(v->why) - o;
    if (!v->adaptive)
        snprintf(v->why + o, len, ": fixed by the job");
    else if (v->batch == v->init)
        snprintf(v->why + o, len, ": its initial batch (no larger one gains enough)");
    else if (v->goodput_x > 0)
        snprintf(v->why + o, len, ": goodput %.3gx of batch %ld", v->goodput_x, v->init);
}

void live_batch_view(const struct live_plan *p, const struct live_plan_job *pj,
                     struct live_batch_view *v)
{
    const struct snap_job *sj = pj->sj;
    memset(v, 0, sizeof(*v));
    if (pj->gpus <= 0 || pj->change == CH_SUSPEND || !goodput_has_model(&sj->batch))
        return;
    const struct sched_job *j = &p->cjobs[pj - p->jobs];
    v->shown = 1;
    v->batch = batch_now(p, pj);
    v->init = (long)sj->batch.init_batch;
    v->gpus = pj->gpus;
    v->adaptive = sj->batch.adaptive;
    v->efficiency = goodput_efficiency(&sj->batch, (double)v->batch);
    int nodes = sched_slots_nodes(pj->slots, pj->gpus);
    int model = p->cnodes[pj->slots[0].node].gpu_model;
    double r = sched_batch_rate(j, model, pj->gpus, nodes, (double)v->batch);
    double r0 = sched_batch_rate(j, model, pj->gpus, nodes, (double)v->init);
    v->goodput_x = r > 0 && r0 > 0 ? r / r0 : 0;
    why_text(v);
}

json_t *live_batch_view_json(const struct live_batch_view *v)
{
    if (!v->shown)
        return json_null();
    json_t *x = v->goodput_x > 0 && isfinite(v->goodput_x) ? json_real(v->goodput_x) : json_null();
    return json_pack("{s:I, s:i, s:I, s:b, s:f, s:o, s:s}", "batch", (json_int_t)v->batch, "gpus",
                     v->gpus, "init_batch", (json_int_t)v->init, "adaptive", v->adaptive,
                     "efficiency", isfinite(v->efficiency) ? v->efficiency : 0.0, "goodput_x", x,
                     "why", v->why);
}

uint64_t live_batch_view_hash(uint64_t h, const struct live_batch_view *v)
{
    long said[5] = {v->shown, v->batch, v->gpus, lround(v->efficiency * 100),
                    lround((v->goodput_x > 0 ? v->goodput_x : 0) * 100)};
    return fnv1a(h, said, sizeof(said));
}
