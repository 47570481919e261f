/* The loss-curve model: planted parameters are recovered from noisy points, the
 * step predictions follow from them, the incremental fitter stays bounded and cheap. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "convergence.h"

static uint64_t rng_state = 0x853c49e6748fea9bULL;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static double curve(double b0, double b1, double b2, double k)
{
    return 1.0 / (b0 * k + b1) + b2;
}

/* n points at steps 0, dk, 2dk, ..., with multiplicative noise of +-noise. */
static void make_points(double b0, double b1, double b2, size_t n, double dk, double noise,
                        double *k, double *l)
{
    for (size_t i = 0; i < n; i++) {
        k[i] = dk * (double)i;
        l[i] = curve(b0, b1, b2, k[i]) * (1.0 + noise * (2.0 * uniform() - 1.0));
    }
}

Test(convergence, exact_points_recover_the_parameters)
{
    double k[50], l[50];
    make_points(2e-3, 0.5, 0.3, 50, 100.0, 0.0, k, l);
    struct conv_model m;
    cr_assert_eq(conv_fit(k, l, 50, &m), 0);
    cr_expect(m.fitted);
    cr_expect_eq(m.npoints, 50);
    cr_expect_float_eq(m.b0, 2e-3, 1e-6 * 2e-3);
    cr_expect_float_eq(m.b1, 0.5, 1e-6 * 0.5);
    cr_expect_float_eq(m.b2, 0.3, 1e-6 * 0.3);
    cr_expect_lt(m.rmse, 1e-6);
}

Test(convergence, noisy_points_recover_the_parameters)
{
    /* 20 trials, 200 points each with +-2% noise on the loss: the asymptote within 2% and
     * the steps to reach loss 0.35 within 5% of the truth (9,750 steps). */
    const double b0 = 2e-3, b1 = 0.5, b2 = 0.3, truth = (1.0 / (0.35 - b2) - b1) / b0;
    for (int trial = 0; trial < 20; trial++) {
        double k[200], l[200];
        make_points(b0, b1, b2, 200, 50.0, 0.02, k, l);
        struct conv_model m;
        cr_assert_eq(conv_fit(k, l, 200, &m), 0);
        cr_expect_float_eq(m.b2, b2, 0.02 * b2, "trial %d: b2 %g", trial, m.b2);
        double s = conv_steps_to_loss(&m, 0.0, 0.35);
        cr_expect_float_eq(s, truth, 0.05 * truth, "trial %d: %g steps", trial, s);
        cr_expect_lt(m.rmse, 0.02 * 0.35);
    }
}

Test(convergence, large_steps_and_large_losses)
{
    /* ImageNet-like: a million steps, loss from 5 down to an asymptote of 1.5. */
    double k[120], l[120];
    make_points(1e-5, 0.3, 1.5, 120, 1e4, 0.01, k, l);
    struct conv_model m;
    cr_assert_eq(conv_fit(k, l, 120, &m), 0);
    cr_expect_float_eq(m.b2, 1.5, 0.03 * 1.5, "b2 %g", m.b2);
    cr_expect_float_eq(m.b0, 1e-5, 0.1e-5, "b0 %g", m.b0);
    for (size_t i = 0; i < 120; i += 17)
        cr_expect_float_eq(conv_loss(&m, k[i]), curve(1e-5, 0.3, 1.5, k[i]), 0.02 * l[i]);
}

Test(convergence, zero_asymptote_is_found)
{
    double k[60], l[60];
    make_points(1e-3, 1.0, 0.0, 60, 200.0, 0.0, k, l);
    struct conv_model m;
    cr_assert_eq(conv_fit(k, l, 60, &m), 0);
    cr_expect_lt(m.b2, 1e-6);
    cr_expect_float_eq(m.b0, 1e-3, 1e-6);
}

Test(convergence, three_points_and_flat_curves)
{
    const double k[] = {0, 10, 20}, l[] = {1.0, 0.8, 0.7};
    struct conv_model m;
    cr_assert_eq(conv_fit(k, l, 3, &m), 0);
    for (int i = 0; i < 3; i++)
        cr_expect_float_eq(conv_loss(&m, k[i]), l[i], 1e-3);
    const double flat[] = {0.5, 0.5, 0.5, 0.5};
    const double kf[] = {1, 2, 3, 4};
    cr_assert_eq(conv_fit(kf, flat, 4, &m), 0);
    cr_expect_float_eq(conv_loss(&m, 100.0), 0.5, 1e-9);
    cr_expect(isinf(conv_steps_to_loss(&m, 4.0, 0.4)));
}

Test(convergence, rejects_bad_points_and_keeps_the_model)
{
    struct conv_model m = {.b0 = 7.0, .fitted = 1}, before = m;
    const double k[] = {0, 1, 2}, good[] = {1, 0.9, 0.8}, bad[] = {1, -0.9, 0.8};
    const double nan[] = {1, NAN, 0.8};
    errno = 0;
    cr_expect_eq(conv_fit(k, good, 2, &m), -1);
    cr_expect_eq(errno, EINVAL);
    cr_expect_eq(conv_fit(k, bad, 3, &m), -1);
    cr_expect_eq(conv_fit(k, nan, 3, &m), -1);
    cr_expect_eq(memcmp(&m, &before, sizeof(m)), 0);
}

Test(convergence, steps_to_loss_follow_the_formula)
{
    struct conv_model m = {.b0 = 1e-3, .b1 = 0.5, .b2 = 0.2, .fitted = 1};
    /* l(k) = 0.25 at 1/(0.05) = 20 = 1e-3 k + 0.5 -> k = 19,500. */
    cr_expect_float_eq(conv_steps_to_loss(&m, 0.0, 0.25), 19500.0, 1e-6);
    cr_expect_float_eq(conv_steps_to_loss(&m, 500.0, 0.25), 19000.0, 1e-6);
    cr_expect_eq(conv_steps_to_loss(&m, 30000.0, 0.25), 0.0);
    cr_expect_eq(conv_steps_to_loss(&m, 0.0, 5.0), 0.0);
    cr_expect(isinf(conv_steps_to_loss(&m, 0.0, 0.2)));
    cr_expect(isinf(conv_steps_to_loss(&m, 0.0, 0.1)));
}

Test(convergence, steps_to_converge_meet_the_tolerance)
{
    struct conv_model m = {.b0 = 1e-3, .b1 = 0.5, .b2 = 0.2, .fitted = 1};
    const double epoch = 390.0, tol = 1e-3;
    double s = conv_steps_to_converge(&m, 0.0, epoch, tol);
    cr_assert(s > 0.0 && isfinite(s));
    double gain = conv_loss(&m, s) - conv_loss(&m, s + epoch);
    cr_expect_float_eq(gain, tol, 1e-9, "improvement over an epoch at %g: %g", s, gain);
    cr_expect_gt(conv_loss(&m, s - 100.0) - conv_loss(&m, s - 100.0 + epoch), tol);
    cr_expect_float_eq(conv_steps_to_converge(&m, 1000.0, epoch, tol), s - 1000.0, 1e-6);
    cr_expect_eq(conv_steps_to_converge(&m, s + 1.0, epoch, tol), 0.0);
    cr_expect(isinf(conv_steps_to_converge(&m, 0.0, epoch, 0.0)));
    struct conv_model flat = {.b0 = 0.0, .b1 = 2.0, .fitted = 1};
    cr_expect_eq(conv_steps_to_converge(&flat, 0.0, epoch, tol), 0.0);
}

Test(convergence, fitter_stays_bounded_and_keeps_history)
{
    struct conv_fitter f;
    conv_fitter_init(&f);
    cr_expect_eq(conv_fitter_refit(&f), -1);
    cr_expect_eq(conv_fitter_add(&f, 1.0, NAN), -1);
    cr_expect_eq(conv_fitter_add(&f, 1.0, 0.0), -1);
    cr_expect_eq(conv_fitter_add(&f, -1.0, 1.0), -1);
    cr_expect_eq(f.n, 0);
    for (int i = 0; i < 5000; i++) {
        cr_assert_eq(conv_fitter_add(&f, 10.0 * i, curve(1e-3, 0.5, 0.2, 10.0 * i)), 0);
        cr_assert_leq(f.n, CONV_FITTER_MAX_POINTS);
    }
    cr_expect_eq(f.steps[0], 0.0, "the first point stays");
    cr_expect_eq(f.steps[f.n - 1], 49990.0, "the newest point is there");
    for (size_t i = 1; i < f.n; i++)
        cr_expect_gt(f.steps[i], f.steps[i - 1], "order kept");
    cr_assert_eq(conv_fitter_refit(&f), 0);
    cr_expect(f.model.fitted);
    cr_expect_float_eq(f.model.b2, 0.2, 1e-6);
}

Test(convergence, refit_of_a_full_buffer_is_cheap)
{
    struct conv_fitter f;
    conv_fitter_init(&f);
    for (int i = 0; i < CONV_FITTER_MAX_POINTS; i++)
        conv_fitter_add(&f, 40.0 * i, curve(2e-3, 0.5, 0.3, 40.0 * i) * (1 + 0.02 * uniform()));
    struct timespec t0, t1;
    const int reps = 50;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int r = 0; r < reps; r++)
        cr_assert_eq(conv_fitter_refit(&f), 0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / reps;
    cr_log_info("refit of %d points: %.0f us", CONV_FITTER_MAX_POINTS, us);
    /* CPU time of this process, so other tests running beside it do not count. About
     * 0.14 ms in a plain -O2 build; the bound leaves room for sanitizers. */
    cr_expect_lt(us, 2000.0, "refit took %.0f us", us);
}
