/* The live convergence series: the incremental, thinned loss series fits the curve as a
 * full refit does (the speed fit it sat beside moved to the core: tests/unit/scheduler/
 * test_learn_fit.c). */
#include <criterion/criterion.h>
#include <math.h>

#include "convergence.h"
#include "live/fit.h"

/* A deterministic noisy loss curve l(k) = 1/(b0 k + b1) + b2, times 1 +- 2%. */
static double noisy_loss(long k, unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    double u = ((*seed >> 8) & 0xffff) / 65535.0 - 0.5;
    return (1.0 / (0.002 * k + 0.4) + 0.05) * (1.0 + 0.04 * u);
}

/* What the live scheduler now does: points appended in batches as they arrive, a refit after
 * each batch, from the bounded downsampled series; against one full fit on every point. */
Test(sched_fit, incremental_series_matches_a_full_refit)
{
    enum { N = 20000, BATCH = 250 };
    static double steps[N], losses[N];
    unsigned seed = 7;
    static struct live_fit_series s;
    struct conv_model inc = {0}, full;
    for (long k = 0; k < N; k++) {
        steps[k] = (double)k;
        losses[k] = noisy_loss(k, &seed);
        live_fit_series_add(&s, steps[k], losses[k]);
        if ((k + 1) % BATCH == 0)
            cr_assert_eq(conv_fit(s.step, s.loss, s.n, &inc), 0);
    }
    cr_assert_eq(conv_fit(steps, losses, N, &full), 0);
    cr_assert(s.n <= LIVE_FIT_SERIES_MAX && s.n >= LIVE_FIT_SERIES_MAX / 2, "%zu", s.n);
    cr_assert_eq(s.step[0], 0.0, "the first point stays");
    cr_assert(s.step[s.n - 1] >= N - 1 - s.stride, "the points reach the end");
    for (size_t i = 1; i < s.n; i++)
        cr_assert_eq(s.step[i] - s.step[i - 1], (double)s.stride, "evenly spaced");
    for (double k = 0; k <= 40000; k += 2500) {
        double a = conv_loss(&inc, k), b = conv_loss(&full, k);
        cr_assert(fabs(a - b) <= 0.02 * b, "k=%g: %g vs %g", k, a, b);
    }
    double spe = 50000.0 / 128;
    double sa = conv_steps_to_converge(&inc, N, spe, 0.001);
    double sb = conv_steps_to_converge(&full, N, spe, 0.001);
    cr_assert(fabs(sa - sb) <= 0.10 * sb + spe, "steps to converge %g vs %g", sa, sb);
}

/* The series says when it changed, so that a refit on an unchanged one can be skipped: every
 * point is held until the buffer fills; then only every stride-th, and the arrival that
 * doubles the stride changes it even when that point itself is passed over. */
Test(sched_fit, series_add_says_whether_it_changed)
{
    static struct live_fit_series s;
    for (int k = 0; k < LIVE_FIT_SERIES_MAX; k++)
        cr_assert_eq(live_fit_series_add(&s, k, 1.0), 1, "point %d", k);
    cr_assert_eq(s.n, (size_t)LIVE_FIT_SERIES_MAX);
    cr_assert_eq(live_fit_series_add(&s, LIVE_FIT_SERIES_MAX, 1.0), 1, "halved and held");
    cr_assert_eq(s.stride, 2);
    size_t n = s.n;
    cr_assert_eq(live_fit_series_add(&s, LIVE_FIT_SERIES_MAX + 1, 1.0), 0, "passed over");
    cr_assert_eq(s.n, n, "nothing held");
    cr_assert_eq(live_fit_series_add(&s, LIVE_FIT_SERIES_MAX + 2, 1.0), 1, "held");
    cr_assert_eq(s.n, n + 1);
}
