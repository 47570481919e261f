/* The fixed strategies One/Two/Four/Eight and fifo: counts, strict order with
 * priority first, no backfilling, bounds. */
#include "sched_fixture.h"

static struct sched_decision *decide(struct fx *f, const char *policy)
{
    struct sched_decision *d = sched_decide(sched_policy_find(policy), &f->snap);

    fx_check_feasible(&f->snap, d);
    return d;
}

Test(policy_fixed, each_job_gets_the_fixed_count_while_gpus_last)
{
    static struct fx f;
    const char *names[4] = { "one", "two", "four", "eight" };

    for (int p = 0; p < 4; p++) {
        int k = 1 << p;
        fx_init(&f, 2, 8);
        for (int i = 0; i < 20; i++)
            fx_job(&f, i + 1, 3);
        struct sched_decision *d = decide(&f, names[p]);
        int running = 16 / k < 20 ? 16 / k : 20;
        for (int i = 0; i < 20; i++)
            cr_assert_eq(d->assign[i].gpus, i < running ? k : 0, "%s job %d", names[p], i);
        for (int i = 0; i < running; i++)
            cr_assert_eq(d->assign[i].slots[0].gpu % k, 0, "%s: aligned", names[p]);
        cr_assert_eq(d->fragmentation, 0.0);
        sched_decision_destroy(d);
    }
}

Test(policy_fixed, fixed_counts_stay_within_bounds)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *capped = fx_job(&f, 1, 1), *rigid = fx_job(&f, 2, 2);
    capped->max_gpus = 2;
    rigid->elastic = 0;
    struct sched_decision *d = decide(&f, "eight");
    cr_assert_eq(d->assign[0].gpus, 2);
    cr_assert_eq(d->assign[1].gpus, 2, "not elastic: its request");
    sched_decision_destroy(d);
}

Test(policy_fifo, priority_first_then_arrival_then_id)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *old = fx_job(&f, 1, 4), *urgent = fx_job(&f, 2, 4), *tie = fx_job(&f, 3, 4);
    urgent->priority = 2;
    old->submit_time = 10;
    tie->submit_time = 10; /* same arrival as old: lower id first */
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[1].gpus, 4, "highest priority first");
    cr_assert_eq(d->assign[0].gpus, 4, "same arrival, lower id");
    cr_assert_eq(d->assign[2].gpus, 0);
    sched_decision_destroy(d);
}

Test(policy_fifo, strict_order_no_backfill_but_impossible_jobs_are_passed_over)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    fx_job(&f, 1, 6);
    fx_job(&f, 2, 4); /* does not fit in the 2 left: blocks the queue */
    fx_job(&f, 3, 1);
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[0].gpus, 6);
    cr_assert_eq(d->assign[1].gpus, 0);
    cr_assert_eq(d->assign[2].gpus, 0, "no backfilling past the head of the queue");
    sched_decision_destroy(d);

    fx_init(&f, 1, 8);
    fx_job(&f, 1, 16);
    fx_job(&f, 2, 8);
    d = decide(&f, "fifo");
    cr_assert_eq(d->assign[0].gpus, 0);
    cr_assert_str_eq(d->assign[0].reason, "waiting: asks for more GPUs than the cluster has up");
    cr_assert_eq(d->assign[1].gpus, 8, "a job that can never fit does not block the queue");
    sched_decision_destroy(d);
}

Test(policy_fifo, running_jobs_keep_their_place)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *a = fx_job(&f, 1, 2), *b = fx_job(&f, 2, 8);
    fx_job(&f, 3, 2);
    fx_hold(&f, a, 1, 6, 2);
    fx_hold(&f, b, 0, 0, 8);
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[0].changed, 0);
    cr_assert_eq(d->assign[1].changed, 0);
    cr_assert_eq(d->assign[2].gpus, 2);
    cr_assert_eq(d->assign[2].slots[0].node, 1);
    cr_assert_eq(d->nchanged, 1);
    sched_decision_destroy(d);
}
