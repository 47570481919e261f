/* Remaining work from evidence (scheduler/estimate.c): declared lengths, the
 * convergence fit, the prior of finished jobs given attained service, elapsed. */
#include <math.h>

#include "sched_fixture.h"

static struct sched_job plain_job(void)
{
    struct sched_job j;

    memset(&j, 0, sizeof(j));
    j.id = 1;
    j.requested_gpus = 1;
    j.remaining_epochs = -1;
    return j;
}

Test(estimate, prior_is_mean_remaining_of_longer_jobs)
{
    const double d[] = {100, 200, 400, 1000};

    cr_assert_float_eq(sched_estimate_prior_s(d, 4, 0), 425.0, 1e-9);
    /* Ran 300 s: only 400 and 1000 are longer, (100 + 700) / 2. */
    cr_assert_float_eq(sched_estimate_prior_s(d, 4, 300), 400.0, 1e-9);
    cr_assert_float_eq(sched_estimate_prior_s(d, 4, 1000), -1.0, 1e-9);
    cr_assert_float_eq(sched_estimate_prior_s(NULL, 0, 10), -1.0, 1e-9);
}

Test(estimate, declared_length_wins_over_a_fit_unless_it_stops_at_convergence)
{
    struct sched_job j = plain_job();
    enum sched_estimate_source src;

    j.declared_epochs = 100;
    j.epochs_done = 30;
    j.has_fit = 1;
    j.fit_remaining_epochs = 5;
    cr_assert_float_eq(sched_estimate_remaining(&j, NULL, 0, &src), 70.0, 1e-9);
    cr_assert_eq(src, SCHED_EST_DECLARED);
    j.stops_at_convergence = 1;
    cr_assert_float_eq(sched_estimate_remaining(&j, NULL, 0, &src), 5.0, 1e-9);
    cr_assert_eq(src, SCHED_EST_FIT);
    /* The fit never lengthens a declared length. */
    j.fit_remaining_epochs = 500;
    cr_assert_float_eq(sched_estimate_remaining(&j, NULL, 0, &src), 70.0, 1e-9);
    cr_assert_eq(src, SCHED_EST_DECLARED);
    /* A fit of "now" does not end a job that still runs. */
    j.fit_remaining_epochs = 0;
    cr_assert_float_eq(sched_estimate_remaining(&j, NULL, 0, &src), 70.0, 1e-9);
}

Test(estimate, outlived_fit_gets_the_prior_given_its_age_never_now)
{
    struct sched_job j = plain_job();
    enum sched_estimate_source src;
    const double d[] = {600, 3600, 7200};

    j.stops_at_convergence = 1;
    j.has_fit = 1;
    j.fit_remaining_epochs = 0; /* its loss flattened: "finishes now" */
    j.run_time = 1800;
    j.epochs_done = 18; /* 0.01 epochs/s observed */
    double r = sched_estimate_remaining(&j, d, 3, &src);
    cr_assert_eq(src, SCHED_EST_PRIOR);
    /* (1800 + 5400) / 2 s at 0.01 epochs/s. */
    cr_assert_float_eq(r, 36.0, 1e-9);
    /* Older than every finished job: as long again as it ran. */
    j.run_time = 9000;
    j.epochs_done = 90;
    r = sched_estimate_remaining(&j, d, 3, &src);
    cr_assert_eq(src, SCHED_EST_ELAPSED);
    cr_assert_float_eq(r, 90.0, 1e-9);
    /* No history at all: elapsed too, at least one epoch. */
    j.run_time = 0;
    j.epochs_done = 0;
    r = sched_estimate_remaining(&j, NULL, 0, &src);
    cr_assert_eq(src, SCHED_EST_ELAPSED);
    cr_assert_float_eq(r, 1.0, 1e-9);
}

Test(estimate, usable_fit_is_used_without_a_declared_length)
{
    struct sched_job j = plain_job();
    enum sched_estimate_source src;

    j.has_fit = 1;
    j.fit_remaining_epochs = 12;
    cr_assert_float_eq(sched_estimate_remaining(&j, NULL, 0, &src), 12.0, 1e-9);
    cr_assert_eq(src, SCHED_EST_FIT);
}

Test(estimate, prior_converts_seconds_with_the_speed_model)
{
    struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *j = fx_job(&f, 1, 4);
    const double d[] = {10000};

    j->remaining_epochs = -1;
    j->run_time = 0;
    f.snap.finished_run_s = d;
    f.snap.nfinished = 1;
    sched_estimate_apply(j, &f.snap);
    cr_assert_eq(j->remaining_source, SCHED_EST_PRIOR);
    double eps = speed_epochs_per_second(&j->speed, 4);
    cr_assert_float_eq(j->remaining_epochs, 10000 * eps, 1e-6);
    cr_assert_str_eq(sched_estimate_source_name(j->remaining_source), "prior");
}
