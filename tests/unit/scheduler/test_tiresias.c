/* The tiresias policy against the original it stands for (the Pollux
 * artifact's simulator/tiresias.py): demotion at 16 GPU-hours of attained
 * service, first in first out inside each of the two queues, running jobs
 * neither preempted by later jobs of their queue nor moved, backfilling, and
 * starvation promotion only when the knob is on. */
#include "sched_fixture.h"

#define THR_S SCHED_TIRESIAS_THRESHOLD_GPU_S

/* A job submitted at submit asking req GPUs that has held GPUs run_s seconds;
 * waiting, or preempted a minute ago if it ran. */
static struct sched_job *job(struct fx *f, int64_t id, double submit, int req, double run_s)
{
    struct sched_job *j = fx_job(f, id, req);

    j->submit_time = submit;
    j->run_time = run_s;
    j->last_change_time = run_s > 0 ? f->snap.now - 60 : 0;
    return j;
}

/* Makes j run on GPUs [first, first + n) of node since start. */
static void runs(struct fx *f, struct sched_job *j, int node, int first, int n, double start)
{
    fx_hold(f, j, node, first, n);
    j->last_change_time = start;
}

static struct sched_decision *decide(struct fx *f)
{
    struct sched_decision *d = sched_decide(sched_policy_find("tiresias"), &f->snap);

    cr_assert_not_null(d);
    fx_check_feasible(&f->snap, d);
    return d;
}

static void expect(struct fx *f, const int *gpus)
{
    struct sched_decision *d = decide(f);

    for (size_t i = 0; i < f->snap.njobs; i++)
        cr_assert_eq(d->assign[i].gpus, gpus[i], "job %lld: %d GPUs, expected %d",
                     (long long)f->jobs[i].id, d->assign[i].gpus, gpus[i]);
    sched_decision_destroy(d);
}

Test(tiresias, demoted_at_exactly_the_threshold)
{
    static struct fx f;

    fx_init(&f, 1, 4);
    f.snap.now = 100000;
    struct sched_job *a = job(&f, 1, 0, 4, THR_S / 4 - 1);
    runs(&f, a, 0, 0, 4, 1000);
    job(&f, 2, 100, 4, 0);
    expect(&f, (int[]){4, 0}); /* one second short of 16 GPU-hours: still first */
    a->run_time = THR_S / 4;
    expect(&f, (int[]){0, 4});
    f.snap.queue_threshold_gpu_s = 3600; /* the snapshot's threshold */
    a->run_time = 899;
    expect(&f, (int[]){4, 0});
    a->run_time = 900;
    expect(&f, (int[]){0, 4});
}

Test(tiresias, first_in_first_out_inside_each_queue)
{
    static struct fx f;

    /* Queue 0 by arrival, whatever the service attained below the threshold. */
    fx_init(&f, 1, 4);
    f.snap.now = 100000;
    job(&f, 1, 0, 4, 4500); /* 5 GPU-hours */
    job(&f, 2, 10, 4, 0);
    expect(&f, (int[]){4, 0});

    /* Queue 1 by when each job reached the threshold: job 4 (4 GPUs) got there
     * at 1,000 + 14,400 s, before job 3 (1 GPU, 57,600 s) though it came later;
     * job 5 reached it last (50,000 + 14,400 s) and waits behind both. */
    fx_init(&f, 1, 4);
    f.snap.now = 100000;
    job(&f, 3, 0, 1, THR_S + 100);
    job(&f, 4, 1000, 4, THR_S / 4 + 100);
    job(&f, 5, 50000, 4, THR_S / 4);
    expect(&f, (int[]){0, 4, 0});
}

Test(tiresias, a_running_job_keeps_its_place_and_its_gpus)
{
    static struct fx f;

    /* A later job of the same queue does not preempt it. */
    fx_init(&f, 1, 4);
    f.snap.now = 100000;
    struct sched_job *a = job(&f, 1, 0, 4, 1800);
    runs(&f, a, 0, 0, 4, 98200);
    job(&f, 2, 10, 4, 0);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[0].changed, 0);
    cr_assert_eq(d->assign[1].gpus, 0);
    sched_decision_destroy(d);

    /* Nor is it moved so that a new job spans fewer nodes: the new one takes
     * the free GPUs of both nodes. */
    fx_init(&f, 2, 4);
    f.snap.now = 100000;
    runs(&f, job(&f, 1, 0, 2, 600), 0, 0, 2, 99400);
    runs(&f, job(&f, 2, 10, 2, 600), 1, 0, 2, 99400);
    job(&f, 3, 20, 4, 0);
    d = decide(&f);
    cr_assert_eq(d->assign[0].changed, 0, "job 1 moved");
    cr_assert_eq(d->assign[1].changed, 0, "job 2 moved");
    cr_assert_eq(d->assign[2].gpus, 4);
    sched_decision_destroy(d);
}

Test(tiresias, a_later_smaller_job_fills_what_an_earlier_one_cannot_use)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    f.snap.now = 100000;
    runs(&f, job(&f, 1, 0, 6, 60), 0, 0, 6, 99940);
    job(&f, 2, 10, 4, 0);
    job(&f, 3, 20, 2, 0);
    job(&f, 4, 30, 1, THR_S + 100); /* queue 1: nothing left for it */
    expect(&f, (int[]){6, 0, 2, 0});
}

Test(tiresias, starved_jobs_are_promoted_only_when_the_knob_is_on)
{
    static struct fx f;

    /* Job 1 reached the threshold at 14,400 s and has waited since: 15,600 s,
     * more than once its executed time. */
    fx_init(&f, 1, 4);
    f.snap.now = 30000;
    struct sched_job *a = job(&f, 1, 0, 4, THR_S / 4);
    a->last_change_time = THR_S / 4;
    job(&f, 2, 29000, 4, 0);
    expect(&f, (int[]){0, 4}); /* off, the original's default */
    f.snap.starvation_knob = 1;
    expect(&f, (int[]){4, 0}); /* back to queue 0 at 28,800 s, before job 2 came */

    /* Promoted, it stays in queue 0 while it runs, until its run since the
     * promotion reaches the threshold again. */
    runs(&f, a, 0, 0, 4, 30000);
    f.snap.now = 31000;
    a->run_time = THR_S / 4 + 1000;
    expect(&f, (int[]){4, 0});
    f.snap.starvation_knob = 0;
    expect(&f, (int[]){0, 4});
    f.snap.starvation_knob = 1;
    f.snap.now = 30000 + THR_S / 4;
    a->run_time = THR_S / 2;
    expect(&f, (int[]){0, 4});
}
