/* policy_rubick: Rubick's plan- and resource-aware allocation (docs/plans.md)
 * on the shared plan machinery (policies/plans.h): in priority, arrival, id order
 * every job gets its base; then the doubling heuristic (DESIGN.md) by seconds
 * saved per added GPU with the hysteresis of policy_step_gain(). */
#include "plans.h"

/* Pinned running jobs get back what they hold, in order, and no more. */
static void keep_pinned(struct policy_plan *pp, struct policy_want *pw)
{
    for (size_t k = 0; k < pp->snap->njobs; k++) {
        size_t i = pp->order[k];
        if (!policy_plan_can_grow(pp, i, pw) || !pp->job[i].pinned ||
            policy_plan_running_class(pp, i) != pp->cls_of[i])
            continue;
        struct policy_plan_class *c = &pp->cls[pp->cls_of[i]];
        while (2 * pw[i].gpus <= pp->job[i].cur_gpus && pw[i].gpus <= c->free) {
            c->free -= pw[i].gpus;
            pw[i].gpus *= 2;
        }
    }
}

static int doubling(struct policy_plan *pp, struct policy_want *pw)
{
    struct policy_heap h;
    int rc = 0;

    if (policy_heap_init(&h, pp->snap->njobs))
        return -1;
    keep_pinned(pp, pw);
    for (size_t i = 0; i < pp->snap->njobs && rc == 0; i++)
        rc = policy_grow_push(pp, &h, pw, i, 0);
    if (rc == 0)
        rc = policy_grow_loop(pp, &h, pw, 0);
    policy_heap_fini(&h);
    return rc;
}

static int rubick_body(struct policy_plan *pp, struct policy_want *pw)
{
    for (size_t k = 0; k < pp->snap->njobs; k++)
        policy_plan_give_base(pp, pp->order[k], pw);
    return doubling(pp, pw);
}

int policy_rubick_ex(const struct sched_snapshot *snap, struct policy_want *pw)
{
    return policy_plan_allocate(snap, pw, rubick_body);
}

static int rubick_counts(const struct sched_snapshot *snap, int *want)
{
    return policy_plan_counts(snap, want, policy_rubick_ex);
}

const struct sched_policy_ops policy_rubick = {
    .name = "rubick",
    .summary = "execution plans and host resources chosen with the GPUs, each job at least as "
               "fast as its requested plan (Rubick), arrival order, doubling",
    .allocate = rubick_counts,
};
