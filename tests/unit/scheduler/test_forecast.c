/* forecast: predicted starts and finishes of waiting jobs in queue order (forecast.h). */
#include "forecast.h"
#include "sched_fixture.h"

static double left_of(void *ctx, size_t k, int need)
{
    const double *per_gpu = ctx; /* seconds of job k, whatever its GPUs */
    (void)need;
    return per_gpu[k];
}

Test(forecast, what_a_waiting_job_needs)
{
    cr_assert_eq(forecast_need(1, 2, 8), 2);
    cr_assert_eq(forecast_need(1, 0, 8), 8);
    cr_assert_eq(forecast_need(0, 2, 8), 8);
}

Test(forecast, free_gpus_then_releases_in_time_order)
{
    struct forecast_release run[2] = {{1300, 4}, {1100, 2}};
    struct forecast_wait q[3] = {{2, -1, -1}, {4, -1, -1}, {4, -1, -1}};
    double left[3] = {50, 500, 10};
    cr_assert_eq(forecast_starts(1000, 2, run, 2, q, 3, left_of, left), 0);
    cr_assert_float_eq(q[0].start, 1000, 1e-9, "2 free now");
    cr_assert_float_eq(q[0].finish, 1050, 1e-9);
    /* 2 back at 1050 (q[0]), 2 at 1100: 4 at 1100 */
    cr_assert_float_eq(q[1].start, 1100, 1e-9);
    cr_assert_float_eq(q[1].finish, 1600, 1e-9);
    cr_assert_float_eq(q[2].start, 1300, 1e-9, "the 4 of the job ending at 1300");
    cr_assert_float_eq(q[2].finish, 1310, 1e-9);
}

Test(forecast, unknown_from_the_first_that_cannot_be_predicted)
{
    struct forecast_release run[1] = {{1200, 2}};
    struct forecast_wait q[3] = {{2, -1, -1}, {8, -1, -1}, {1, -1, -1}};
    double left[3] = {-1, 10, 10};
    cr_assert_eq(forecast_starts(1000, 0, run, 1, q, 3, left_of, left), 0);
    cr_assert_float_eq(q[0].start, 1200, 1e-9);
    cr_assert_eq(q[0].finish, -1, "its length is unknown");
    cr_assert_eq(q[1].start, -1, "the rest are not predicted");
    cr_assert_eq(q[2].start, -1);
    left[0] = 10;
    q[0] = (struct forecast_wait){2, -1, -1};
    cr_assert_eq(forecast_starts(1000, 0, run, 1, q, 3, left_of, left), 0);
    cr_assert_eq(q[1].start, -1, "8 GPUs never come back");
    cr_assert_eq(q[2].start, -1, "nor anything after it");
}
