/* ringmaster's ordering and bounds: heSRPT shares (policies/share.c), shortest
 * predicted remaining work first, growth within the shares under contention,
 * and ageing as the bound on how long a long job is passed over. */
#include <math.h>

#include "policies/policy.h"
#include "sched_fixture.h"

static struct sched_decision *rm_decide(struct fx *f)
{
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f->snap);

    fx_check_feasible(&f->snap, d);
    return d;
}

Test(ringmaster_share, shares_sum_to_one_and_fall_with_rank)
{
    static const double ps[] = {0.0, 0.5, 0.73, 0.9, 0.99};

    for (size_t q = 0; q < sizeof(ps) / sizeof(ps[0]); q++)
        for (size_t m = 1; m <= 60; m++) {
            double sum = 0, prev = INFINITY;
            for (size_t k = 0; k < m; k++) {
                double s = policy_share_fraction(k, m, ps[q]);
                cr_assert_gt(s, 0.0, "p %.2f m %zu k %zu", ps[q], m, k);
                cr_assert_leq(s, prev * (1 + 1e-12), "share must not grow with rank");
                prev = s;
                sum += s;
            }
            cr_assert_float_eq(sum, 1.0, 1e-9, "p %.2f m %zu: sum %.12f", ps[q], m, sum);
        }
    /* p = 0 (no speed-up): equal shares; k >= m: nothing. */
    cr_assert_float_eq(policy_share_fraction(3, 8, 0.0), 1.0 / 8, 1e-12);
    cr_assert_eq(policy_share_fraction(8, 8, 0.5), 0.0);
    cr_assert_eq(policy_share_fraction(0, 0, 0.5), 0.0);
    /* The closed form for m = 2, p = 0.5 (c = 2): 1 - 1/4 and 1/4. */
    cr_assert_float_eq(policy_share_fraction(0, 2, 0.5), 0.75, 1e-12);
    cr_assert_float_eq(policy_share_fraction(1, 2, 0.5), 0.25, 1e-12);
    /* More speed-up gives the shortest job more. */
    cr_assert_gt(policy_share_fraction(0, 10, 0.9), policy_share_fraction(0, 10, 0.5));
}

Test(ringmaster_share, caps_round_to_the_nearest_power_of_two_on_a_log_scale)
{
    cr_assert_eq(policy_share_cap(1, 0.0), 1);
    cr_assert_eq(policy_share_cap(1, 1.3), 1);
    cr_assert_eq(policy_share_cap(1, 1.5), 2);
    cr_assert_eq(policy_share_cap(1, 2.8), 2);
    cr_assert_eq(policy_share_cap(1, 2.9), 4);
    cr_assert_eq(policy_share_cap(1, 7.0), 8);
    cr_assert_eq(policy_share_cap(2, 1.0), 2, "never below the base");
    cr_assert_eq(policy_share_cap(2, 12.0), 16);
    cr_assert_eq(policy_share_cap(0, 1.0), 1);
    cr_assert_eq(policy_share_cap(1, NAN), 1);
    cr_assert_gt(policy_share_cap(1, 1e300), 1 << 29, "no overflow");
}

Test(ringmaster_share, exponent_of_a_speed_up)
{
    /* 4.55x on 8 GPUs (the paper's calibrated ResNet-110): p = ln 4.55 / ln 8. */
    cr_assert_float_eq(policy_share_exponent(1, 1.0, 8, 4.55), log(4.55) / log(8), 1e-12);
    cr_assert_float_eq(policy_share_exponent(2, 3.0, 4, 6.0), 0.95, 1e-12, "linear: clamped");
    cr_assert_eq(policy_share_exponent(1, 1.0, 1, 1.0), 0.0);
    cr_assert_eq(policy_share_exponent(1, 1.0, 8, 0.5), 0.0, "slower on more GPUs");
    cr_assert_eq(policy_share_exponent(1, 0.0, 8, 1.0), 0.0);
}

/* n waiting jobs, remaining epochs not in arrival order, all submitted now. */
static void waiting_jobs(struct fx *f, int n)
{
    for (int i = 0; i < n; i++) {
        struct sched_job *j = fx_job(f, 1 + i, 1);
        j->max_gpus = 8;
        j->submit_time = f->snap.now;
        j->remaining_epochs = 10.0 + (double)((i * 37) % n) * 10.0;
    }
}

Test(ringmaster, shortest_predicted_remaining_work_runs_first)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    waiting_jobs(&f, 24);
    struct sched_decision *d = rm_decide(&f);
    double longest_run = 0, shortest_wait = INFINITY;
    int most = 0;
    for (size_t i = 0; i < f.snap.njobs; i++) {
        double r = f.jobs[i].remaining_epochs;
        if (d->assign[i].gpus > 0 && r > longest_run)
            longest_run = r;
        if (d->assign[i].gpus == 0 && r < shortest_wait)
            shortest_wait = r;
        if (r == 10.0)
            most = d->assign[i].gpus;
    }
    cr_assert_lt(longest_run, shortest_wait, "a job of %.0f epochs runs, one of %.0f waits",
                 longest_run, shortest_wait);
    for (size_t i = 0; i < f.snap.njobs; i++)
        cr_assert_leq(d->assign[i].gpus, most, "the shortest job holds the most GPUs");
    cr_assert_eq(d->used, 8);
    sched_decision_destroy(d);
}

/* An admin's priority comes before the predicted remaining work: of two rigid
 * jobs of 4 GPUs on 4, the long one with the higher priority runs, with or
 * without a model (unmodelled jobs once tied and ran in arrival order). */
Test(ringmaster, a_higher_priority_runs_before_a_shorter_job)
{
    static struct fx f;

    for (int modelled = 0; modelled < 2; modelled++) {
        fx_init(&f, 1, 4);
        struct sched_job *a = fx_job(&f, 1, 4), *b = fx_job(&f, 2, 4);
        a->elastic = b->elastic = 0;
        a->remaining_epochs = 5;
        b->remaining_epochs = 500;
        b->priority = 9;
        if (!modelled)
            a->model_source = b->model_source = SCHED_MODEL_NONE;
        struct sched_decision *d = rm_decide(&f);
        cr_assert_eq(d->assign[1].gpus, 4, "modelled %d: b, priority 9, runs", modelled);
        cr_assert_eq(d->assign[0].gpus, 0, "modelled %d: a waits", modelled);
        sched_decision_destroy(d);
        b->priority = 0;
        d = rm_decide(&f);
        cr_assert_eq(d->assign[0].gpus, 4, "modelled %d: at equal priority a "
                     "(shorter, or first in arrival order) runs", modelled);
        sched_decision_destroy(d);
    }
}

Test(ringmaster, growth_stays_within_the_shares_under_contention)
{
    static struct fx f;
    size_t order[FX_MAX_JOBS];
    const int n = 100;

    fx_init(&f, 8, 8);
    waiting_jobs(&f, n);
    struct sched_decision *d = rm_decide(&f);
    /* Rank of each job by remaining work (distinct values). */
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        for (int x = 0; x < n; x++)
            k += f.jobs[x].remaining_epochs < f.jobs[i].remaining_epochs;
        order[i] = k;
    }
    struct speed_model m = fx_resnet_model();
    double p = policy_share_exponent(1, speed_epochs_per_second(&m, 1), 8,
                                     speed_epochs_per_second(&m, 8));
    int started = 0;
    for (int i = 0; i < n; i++) {
        int cap = policy_share_cap(1, policy_share_fraction(order[i], (size_t)n, p) * 64);
        cr_assert_leq(d->assign[i].gpus, cap, "rank %zu: %d GPUs, its share %d", order[i],
                      d->assign[i].gpus, cap);
        started += d->assign[i].gpus > 0;
    }
    cr_assert_eq(d->used, 64, "no GPU left idle while jobs wait");
    cr_assert_geq(started, 16, "only %d of %d jobs started", started, n);
    sched_decision_destroy(d);
}

Test(ringmaster, ageing_bounds_how_long_a_long_job_is_passed_over)
{
    static struct fx f;

    /* One GPU; a job of 10x the work of a newcomer. Waiting 1 h it still
     * yields; after 40 h (its key divided by 1 + 40/4) it runs first. */
    for (int hours = 1; hours <= 40; hours += 39) {
        fx_init(&f, 1, 1);
        f.snap.now = 200000.0;
        struct sched_job *old = fx_job(&f, 1, 1);
        old->remaining_epochs = 100;
        old->submit_time = f.snap.now - hours * 3600.0;
        struct sched_job *young = fx_job(&f, 2, 1);
        young->remaining_epochs = 10;
        young->submit_time = f.snap.now;
        struct sched_decision *d = rm_decide(&f);
        cr_assert_eq(d->assign[0].gpus, hours == 40 ? 1 : 0, "waited %d h", hours);
        cr_assert_eq(d->assign[1].gpus, hours == 40 ? 0 : 1, "waited %d h", hours);
        sched_decision_destroy(d);
    }
}

Test(ringmaster, every_job_starts_while_gpus_are_plentiful)
{
    static struct fx f;
    static const double epochs[] = {10, 10.5, 11, 11.5, 12, 1000};

    /* Six jobs, 12 GPUs: their bases (6) fit in 0.6 of the cluster, so the
     * longest starts too, rather than wait while the shortest grows to 8. */
    fx_init(&f, 1, 12);
    for (int i = 0; i < 6; i++) {
        struct sched_job *j = fx_job(&f, 1 + i, 1);
        j->max_gpus = 8;
        j->submit_time = f.snap.now;
        j->remaining_epochs = epochs[i];
    }
    struct sched_decision *d = rm_decide(&f);
    for (int i = 0; i < 6; i++)
        cr_assert_gt(d->assign[i].gpus, 0, "the job of %.0f epochs waits", epochs[i]);
    cr_assert_geq(d->assign[0].gpus, d->assign[5].gpus, "the shortest holds the most");
    cr_assert_eq(d->used, 12);
    sched_decision_destroy(d);
}
