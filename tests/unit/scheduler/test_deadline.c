/* Deadlines: the verdict and its words (deadline.h), the least share that meets a deadline
 * and when ringmaster gives it ahead of its order (policies/minshare.h), and the edf
 * baseline. */
#include <math.h>

#include "deadline.h"
#include "policies/minshare.h"
#include "sched_fixture.h"

Test(deadline, verdict_from_the_forecast_finish)
{
    cr_assert_eq(deadline_check(0, 100), DEADLINE_NONE);
    cr_assert_eq(deadline_check(1000, -1), DEADLINE_UNKNOWN);
    cr_assert_eq(deadline_check(1000, INFINITY), DEADLINE_UNKNOWN);
    cr_assert_eq(deadline_check(1000, 1000), DEADLINE_MEETS);
    cr_assert_eq(deadline_check(1000, 1001), DEADLINE_MISSES);
    cr_assert_str_eq(deadline_verdict_name(DEADLINE_MISSES), "misses");
    cr_assert_str_eq(deadline_verdict_name(DEADLINE_MEETS), "meets");
}

Test(deadline, text_says_before_or_by_how_much_it_misses)
{
    char buf[128];

    cr_assert_eq(deadline_text(10000, 9000, "Thu 14:10", buf, sizeof(buf)), strlen(buf));
    cr_assert_str_eq(buf, "forecast finish ~Thu 14:10, before the deadline");
    deadline_text(10000, 10000 + 3 * 3600 + 600, "Fri 09:00", buf, sizeof(buf));
    cr_assert_str_eq(buf, "forecast finish ~Fri 09:00: will miss by ~3h at the current load");
    deadline_text(10000, 10000 + 40 * 60, NULL, buf, sizeof(buf));
    cr_assert_str_eq(buf, "forecast finish: will miss by ~40m at the current load");
    deadline_text(10000, -1, "Thu 14:10", buf, sizeof(buf));
    cr_assert_str_eq(buf, "no forecast yet: the deadline cannot be checked");
    cr_assert_eq(deadline_text(0, 5, "x", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "");
    /* cut short, still terminated, and the length it needed */
    size_t need = deadline_text(10000, 9000, "Thu 14:10", buf, 8);
    cr_assert_eq(need, strlen("forecast finish ~Thu 14:10, before the deadline"));
    cr_assert_str_eq(buf, "forecas");
}

Test(deadline, span_rounds_to_the_unit_read)
{
    char buf[16];

    deadline_span_text(10, buf, sizeof(buf));
    cr_assert_str_eq(buf, "~1m");
    deadline_span_text(59 * 60, buf, sizeof(buf));
    cr_assert_str_eq(buf, "~59m");
    deadline_span_text(3600 * 5.4, buf, sizeof(buf));
    cr_assert_str_eq(buf, "~5h");
    deadline_span_text(86400 * 3.2, buf, sizeof(buf));
    cr_assert_str_eq(buf, "~3d");
}

/* A job of the ResNet model with `epochs` to go and a deadline `after` seconds from now. */
static struct sched_job *dl_job(struct fx *f, int64_t id, int req, double epochs, double after)
{
    struct sched_job *j = fx_job(f, id, req);

    j->remaining_epochs = epochs;
    j->max_gpus = 16;
    j->deadline = after > 0 ? f->snap.now + after : 0;
    return j;
}

Test(minshare, fewest_gpus_whose_finish_meets_the_deadline)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *j = dl_job(&f, 1, 1, 100, 0);
    double t1 = policy_time_at(j, 1), t2 = policy_time_at(j, 2), t4 = policy_time_at(j, 4);
    cr_assert(t1 > t2 && t2 > t4);
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), 0, "no deadline: no share");
    j->deadline = f.snap.now + t1 * 2;
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), 1);
    j->deadline = f.snap.now + t1 * 0.9; /* 1 GPU is too slow, 2 enough */
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), 2);
    j->deadline = f.snap.now + t4 * (1 + MINSHARE_MARGIN) + 1;
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), 4);
    j->deadline = f.snap.now + t4 * (1 + MINSHARE_MARGIN) + 1;
    cr_assert_eq(policy_minshare_count(&f.snap, j, 2), -1, "the capacity bounds the share");
    j->deadline = f.snap.now + 1;
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), -1, "no count meets it");
    j->elastic = 0;
    j->requested_gpus = 2;
    j->deadline = f.snap.now + t1 * 0.9;
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), 2, "a rigid job: its request only");
    j->deadline = f.snap.now + t2 * 0.9;
    cr_assert_eq(policy_minshare_count(&f.snap, j, 16), -1);
}

Test(minshare, slack_runs_out_at_the_request)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *j = dl_job(&f, 1, 2, 100, 0);
    double t2 = policy_time_at(j, 2);
    cr_assert_not(policy_minshare_urgent(&f.snap, j, 8));
    j->deadline = f.snap.now + t2 * 1.5;
    cr_assert_not(policy_minshare_urgent(&f.snap, j, 8), "half its time to spare");
    j->deadline = f.snap.now + t2 * (1 + MINSHARE_MARGIN + MINSHARE_SLACK + 0.02);
    cr_assert_not(policy_minshare_urgent(&f.snap, j, 8), "slack left");
    j->deadline = f.snap.now + t2 * (1 + MINSHARE_MARGIN + MINSHARE_SLACK - 0.02);
    cr_assert(policy_minshare_urgent(&f.snap, j, 8), "the slack ran out: it must start");
    j->deadline = f.snap.now + t2 * 0.7;
    cr_assert(policy_minshare_urgent(&f.snap, j, 8), "needs more than it asked");
}

static struct sched_decision *decide(struct fx *f, const char *policy)
{
    struct sched_decision *d = sched_decide(sched_policy_find(policy), &f->snap);

    cr_assert_not_null(d);
    fx_check_feasible(&f->snap, d);
    return d;
}

/* Two rigid jobs hold the node; a waiting elastic job whose slack is gone gets the least share
 * that meets its deadline ahead of them (one of them is stopped: it would run longer), and no
 * more; a job that would end sooner than it is never stopped for it. */
Test(minshare, ringmaster_gives_the_least_share_once_slack_runs_out)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *a = dl_job(&f, 1, 4, 4000, 0);
    struct sched_job *b = dl_job(&f, 2, 4, 4000, 0);
    struct sched_job *c = dl_job(&f, 3, 2, 400, 0);
    a->elastic = b->elastic = 0;
    fx_hold(&f, a, 0, 0, 4);
    fx_hold(&f, b, 0, 4, 4);
    a->last_change_time = b->last_change_time = f.snap.now - 100;
    a->run_time = b->run_time = 100;
    struct sched_decision *d = decide(&f, "ringmaster");
    cr_assert_eq(d->assign[2].gpus, 0, "no deadline: it waits for the running jobs");
    sched_decision_destroy(d);

    c->deadline = f.snap.now + policy_time_at(c, 2) * 3; /* slack to spare: still waits */
    d = decide(&f, "ringmaster");
    cr_assert_eq(d->assign[2].gpus, 0);
    sched_decision_destroy(d);

    c->deadline = f.snap.now + policy_time_at(c, 2) * 0.8; /* needs 4 now */
    int m = policy_minshare_count(&f.snap, c, 8);
    cr_assert_eq(m, 4);
    d = decide(&f, "ringmaster");
    cr_assert_eq(d->assign[2].gpus, 4, "got %d", d->assign[2].gpus);
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 4, "one of them stopped");
    cr_assert_eq(d->assign[2].forced, 3, "live, it may stop running jobs as a guarantee does");
    cr_assert_str_eq(d->assign[2].reason, "given the least share that meets its deadline");
    cr_assert_eq(d->assign[0].forced + d->assign[1].forced, 0);
    size_t gone = d->assign[0].gpus == 0 ? 0 : 1; /* the one stopped names the deadline job */
    cr_assert_str_eq(d->assign[gone].reason, "preempted: for job 3, to meet its deadline");
    cr_assert_eq(d->assign[gone].preempted_by, 3);
    cr_assert_eq(d->assign[gone].preempted_for, 3);
    cr_assert_eq(d->assign[1 - gone].preempted_by, 0);
    sched_decision_destroy(d);

    a->remaining_epochs = b->remaining_epochs = 10; /* they end sooner: neither is stopped */
    d = decide(&f, "ringmaster");
    cr_assert_eq(d->assign[2].gpus, 0);
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 8);
    sched_decision_destroy(d);

    a->remaining_epochs = b->remaining_epochs = 4000;
    c->deadline = f.snap.now + 60; /* hopeless: best effort, takes nothing */
    d = decide(&f, "ringmaster");
    cr_assert_eq(d->assign[2].gpus, 0);
    sched_decision_destroy(d);
}

/* The max-wait guarantee still holds against a deadline job's share. */
Test(minshare, max_wait_still_holds)
{
    static struct fx f;

    fx_init(&f, 1, 4);
    f.snap.max_wait_s = 600;
    struct sched_job *a = dl_job(&f, 1, 4, 400, 0);
    a->deadline = f.snap.now + policy_time_at(a, 4) * 1.08; /* urgent, met at 4 */
    a->min_gpus = 4;
    a->submit_time = f.snap.now - 10;
    struct sched_job *b = dl_job(&f, 2, 1, 50, 0);
    b->elastic = 0;
    b->submit_time = f.snap.now - 700; /* waited past max_wait_s */
    cr_assert_eq(policy_minshare_count(&f.snap, a, 4), 4);
    cr_assert(policy_minshare_urgent(&f.snap, a, 4));
    struct sched_decision *d = decide(&f, "ringmaster");
    cr_assert_eq(d->assign[1].gpus, 1, "the starved job gets its GPU");
    sched_decision_destroy(d);
}

Test(edf, earliest_deadline_first_then_arrival_with_backfilling)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *a = dl_job(&f, 1, 4, 10, 0);    /* no deadline, first to arrive */
    struct sched_job *b = dl_job(&f, 2, 4, 10, 5000); /* later deadline */
    struct sched_job *c = dl_job(&f, 3, 4, 10, 1000); /* earliest deadline */
    struct sched_job *e = dl_job(&f, 4, 8, 10, 9000); /* does not fit after b and c */
    (void)a;
    (void)b;
    (void)c;
    (void)e;
    struct sched_decision *d = decide(&f, "edf");
    cr_assert_eq(d->assign[0].gpus, 0);
    cr_assert_eq(d->assign[1].gpus, 4);
    cr_assert_eq(d->assign[2].gpus, 4);
    cr_assert_eq(d->assign[3].gpus, 0);
    sched_decision_destroy(d);
    f.jobs[2].requested_gpus = 2; /* room left: the job without a deadline backfills */
    f.jobs[0].requested_gpus = 2;
    d = decide(&f, "edf");
    cr_assert_eq(d->assign[0].gpus, 2);
    cr_assert_eq(d->assign[2].gpus, 2);
    sched_decision_destroy(d);
}
