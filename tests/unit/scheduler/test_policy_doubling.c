/* precompute (doubling heuristic) and optimus (+1 greedy) on the ResNet-110
 * profile: the 8 -> 9 versus 8 -> 16 example of the paper, bounds, ordering. */
#include "sched_fixture.h"

static struct sched_decision *decide(struct fx *f, const char *policy)
{
    struct sched_decision *d = sched_decide(sched_policy_find(policy), &f->snap);

    fx_check_feasible(&f->snap, d);
    return d;
}

Test(policy_doubling, resnet_model_is_slower_per_gpu_at_9_than_at_8)
{
    struct speed_model m = fx_resnet_model();

    cr_assert_gt(speed_epochs_per_second(&m, 8), speed_epochs_per_second(&m, 9),
                 "8 -> 9 leaves the power-of-two all-reduce");
    cr_assert_gt(speed_epochs_per_second(&m, 16), speed_epochs_per_second(&m, 8));
}

Test(policy_doubling, lone_job_doubles_to_16_where_optimus_stalls_at_8)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    fx_job(&f, 1, 1);
    struct sched_decision *d = decide(&f, "precompute");
    cr_assert_eq(d->assign[0].gpus, 16);
    cr_assert_eq(d->fragmentation, 0.0);
    sched_decision_destroy(d);
    d = decide(&f, "optimus");
    cr_assert_eq(d->assign[0].gpus, 8, "the +1 greedy stops where 8 -> 9 loses");
    sched_decision_destroy(d);

    fx_init(&f, 4, 8); /* 32 GPUs: still reaches at least 16 */
    fx_job(&f, 1, 1);
    d = decide(&f, "precompute");
    cr_assert_geq(d->assign[0].gpus, 16);
    cr_assert_eq(d->assign[0].gpus & (d->assign[0].gpus - 1), 0, "a power of two");
    sched_decision_destroy(d);
}

Test(policy_doubling, every_job_gets_one_gpu_before_anyone_doubles)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    for (int i = 0; i < 10; i++)
        fx_job(&f, i + 1, 1);
    struct sched_decision *d = decide(&f, "precompute");
    for (int i = 0; i < 8; i++)
        cr_assert_eq(d->assign[i].gpus, 1, "job %d", i);
    cr_assert_eq(d->assign[8].gpus, 0, "arrival order while GPUs last");
    cr_assert_eq(d->assign[9].gpus, 0);
    sched_decision_destroy(d);
}

Test(policy_doubling, the_job_with_most_work_left_gains_most_and_doubles_first)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    f.nodes[1].ngpus = 4; /* 12 GPUs */
    struct sched_job *a = fx_job(&f, 1, 1), *b = fx_job(&f, 2, 1);
    a->remaining_epochs = 10;
    b->remaining_epochs = 200;
    struct sched_decision *d = decide(&f, "precompute");
    cr_assert_eq(d->assign[1].gpus, 8, "1+1, then b doubles to 2, 4 and 8 first");
    cr_assert_eq(d->assign[0].gpus, 4, "then a to 2 and 4 with the 3 left");
    cr_assert_eq(d->used, 12);
    sched_decision_destroy(d);
}

Test(policy_doubling, bounds_and_elasticity_are_respected)
{
    static struct fx f;
    const char *policies[2] = { "precompute", "optimus" };

    for (int p = 0; p < 2; p++) {
        fx_init(&f, 4, 8);
        struct sched_job *capped = fx_job(&f, 1, 1), *rigid = fx_job(&f, 2, 2);
        struct sched_job *floor = fx_job(&f, 3, 3), *nomodel = fx_job(&f, 4, 4);
        capped->max_gpus = 6;
        rigid->elastic = 0;
        floor->min_gpus = 3;
        nomodel->speed.fitted = 0;
        nomodel->model_source = SCHED_MODEL_NONE;
        struct sched_decision *d = decide(&f, policies[p]);
        cr_assert_leq(d->assign[0].gpus, 6, "%s", policies[p]);
        cr_assert_eq(d->assign[1].gpus, 2, "%s: not elastic", policies[p]);
        cr_assert_geq(d->assign[2].gpus, 3, "%s", policies[p]);
        cr_assert_eq(d->assign[3].gpus, 4, "%s: no model, runs at its request", policies[p]);
        if (p == 0)
            cr_assert_eq(d->assign[0].gpus, 4, "doubling stops below max 6");
        sched_decision_destroy(d);
    }
}

Test(policy_doubling, unknown_remaining_epochs_fall_back_to_epochs_done)
{
    static struct fx f;

    fx_init(&f, 1, 4);
    struct sched_job *a = fx_job(&f, 1, 1), *b = fx_job(&f, 2, 1);
    a->remaining_epochs = -1;
    a->epochs_done = 150; /* guessed 150 to go */
    b->remaining_epochs = 100;
    struct sched_decision *d = decide(&f, "precompute");
    cr_assert_eq(d->assign[0].gpus, 2);
    cr_assert_eq(d->assign[1].gpus, 2);
    a->remaining_epochs = -1;
    a->epochs_done = 0;
    b->remaining_epochs = 10;
    sched_decision_destroy(d);
    d = decide(&f, "precompute");
    cr_assert_eq(d->assign[1].gpus, 2, "10 to go beats the guess of 1");
    sched_decision_destroy(d);
}

Test(policy_doubling, optimus_spreads_single_gpus_by_marginal_gain)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *a = fx_job(&f, 1, 1), *b = fx_job(&f, 2, 1);
    a->remaining_epochs = 100;
    b->remaining_epochs = 100;
    struct sched_decision *d = decide(&f, "optimus");
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 8);
    cr_assert_eq(d->assign[0].gpus, 4, "equal jobs split evenly");
    sched_decision_destroy(d);
}

Test(policy_doubling, a_running_job_grows_only_if_the_gain_repays_the_restart)
{
    static struct fx f;
    const char *policies[2] = { "precompute", "optimus" };

    for (int p = 0; p < 2; p++) {
        fx_init(&f, 2, 8);
        struct sched_job *j = fx_job(&f, 1, 1);
        fx_hold(&f, j, 0, 0, 4);
        f.snap.resize_cost_s = 1e7;
        struct sched_decision *d = decide(&f, policies[p]);
        cr_assert_eq(d->assign[0].gpus, 4, "%s: growing is not worth 1e7 s", policies[p]);
        cr_assert_eq(d->assign[0].changed, 0);
        sched_decision_destroy(d);
        f.snap.resize_cost_s = 30;
        d = decide(&f, policies[p]);
        cr_assert_eq(d->assign[0].gpus, p == 0 ? 16 : 8, "%s: 30 s is repaid", policies[p]);
        sched_decision_destroy(d);
        j->cur_gpus = 0; /* a waiting job pays nothing to start */
        f.snap.resize_cost_s = 1e7;
        d = decide(&f, policies[p]);
        cr_assert_eq(d->assign[0].gpus, p == 0 ? 16 : 8, "%s", policies[p]);
        sched_decision_destroy(d);
    }
}
