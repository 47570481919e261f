/* ringmaster's fill (policy_grow_fill): the GPUs that no doubling fits go to the jobs that
 * gain from them, in any count; a job pinned by min_resize_interval_s grows into them but
 * keeps what it holds, a job held for its learning stage is left alone until it measured its
 * size for a quarter of the stage (test_learn.c). */
#include "sched_fixture.h"

static struct sched_decision *rm_decide(struct fx *f)
{
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f->snap);

    fx_check_feasible(&f->snap, d);
    return d;
}

/* Three nodes of 8; one long ResNet job, elastic to 24, holding 16 on nodes 0 and 1. */
static struct sched_job *long_job(struct fx *f, double changed_ago)
{
    fx_init(f, 3, 8);
    f->snap.resize_cost_s = 30;
    f->snap.min_resize_interval_s = 300;
    struct sched_job *j = fx_job(f, 1, 1);
    j->max_gpus = 24;
    j->remaining_epochs = 1000;
    fx_hold(f, j, 0, 0, 8);
    fx_hold(f, j, 1, 0, 8);
    j->last_change_time = f->snap.now - changed_ago;
    j->run_time = changed_ago;
    return j;
}

/* Doubling 16 needs 32: before the fill the third node stayed idle. */
Test(fill, a_job_grows_into_gpus_that_no_doubling_fits)
{
    static struct fx f;
    long_job(&f, 1000);
    struct sched_decision *d = rm_decide(&f);
    cr_assert_eq(d->assign[0].gpus, 24, "16 + the 8 idle: %d", d->assign[0].gpus);
    cr_assert_eq(d->used, 24);
    sched_decision_destroy(d);
}

Test(fill, a_pinned_job_grows_into_idle_gpus)
{
    static struct fx f;
    long_job(&f, 10);
    struct sched_decision *d = rm_decide(&f);
    cr_assert_eq(d->assign[0].gpus, 24, "changed 10 s ago, the interval 300 s: %d",
                 d->assign[0].gpus);
    sched_decision_destroy(d);
}

/* A job that arrives takes from the idle GPUs; the pinned one keeps its 16 (it is not shrunk
 * to make room, nor to a doubling of its base). */
Test(fill, a_pinned_job_keeps_what_it_holds_and_a_newcomer_starts)
{
    static struct fx f;
    long_job(&f, 10);
    struct sched_job *n = fx_job(&f, 2, 1);
    n->max_gpus = 8;
    n->remaining_epochs = 5;
    n->submit_time = f.snap.now;
    struct sched_decision *d = rm_decide(&f);
    cr_assert_geq(d->assign[0].gpus, 16);
    cr_assert_gt(d->assign[1].gpus, 0, "the newcomer waits");
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 24, "no GPU idle: %d + %d",
                 d->assign[0].gpus, d->assign[1].gpus);
    sched_decision_destroy(d);
}

/* A pinned job on 12 (what a fill gave it) gets its 12 back, not the 8 of its doublings. */
Test(fill, a_pinned_job_keeps_a_count_that_is_no_doubling)
{
    static struct fx f;
    fx_init(&f, 2, 8);
    f.snap.resize_cost_s = 30;
    f.snap.min_resize_interval_s = 300;
    struct sched_job *j = fx_job(&f, 1, 1);
    j->max_gpus = 12;
    j->remaining_epochs = 1000;
    fx_hold(&f, j, 0, 0, 8);
    fx_hold(&f, j, 1, 0, 4);
    j->last_change_time = f.snap.now - 10;
    struct sched_job *o = fx_job(&f, 2, 4);
    o->elastic = 0;
    o->remaining_epochs = 1000;
    fx_hold(&f, o, 1, 4, 4);
    o->last_change_time = f.snap.now - 10;
    struct sched_decision *d = rm_decide(&f);
    cr_assert_eq(d->assign[0].gpus, 12, "%d", d->assign[0].gpus);
    cr_assert_eq(d->assign[1].gpus, 4);
    sched_decision_destroy(d);
}
