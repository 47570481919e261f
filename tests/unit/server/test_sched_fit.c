/* sched_fit and the live convergence series: a job's speed model fitted from step times
 * measured on a100 (or t4, or a mix) GPUs is the one measured on the reference v100, and the
 * incremental, thinned loss series fits the curve as a full refit does. */
#include <criterion/criterion.h>
#include <math.h>

#include "convergence.h"
#include "live/fit.h"
#include "plan.h"

#define M 128.0

/* The job on the reference GPU: compute 0.3 + 0.001 m seconds, a ring all-reduce. */
static const double ref_theta[SPEED_NFEATURES] = {0.3, 0.001, 0.002, 0.05, 0.01, 0.0};

/* Its step time at w GPUs of speed s as the core models it (plan.h). */
static double true_step(int w, double s)
{
    double f[SPEED_NFEATURES];
    speed_features_placed(w, 1, M, f);
    double compute = ref_theta[0] * f[0] + ref_theta[1] * f[1], comm = 0;
    for (int k = 2; k < SPEED_NFEATURES; k++)
        comm += ref_theta[k] * f[k];
    return compute / s + comm;
}

static struct speed_model fit_on(const int *w, const double *speed, size_t n)
{
    struct live_fit_obs obs[16];
    for (size_t i = 0; i < n; i++)
        obs[i] = (struct live_fit_obs){w[i], true_step(w[i], speed[i]), speed[i], 0};
    struct speed_model sm = {.batch_per_gpu = M, .dataset_size = 50000};
    cr_assert_eq(live_fit_speed(&sm, obs, n), 0);
    cr_assert(sm.fitted);
    return sm;
}

/* Both models predict the same reference step time (1%) at 1..64 GPUs. */
static void assert_same(const struct speed_model *a, const struct speed_model *b, double tol)
{
    for (int w = 1; w <= 64; w *= 2) {
        double ta = speed_step_time(a, w), tb = speed_step_time(b, w);
        cr_assert(fabs(ta - tb) <= tol * tb, "w=%d: %g vs %g", w, ta, tb);
        cr_assert(fabs(tb - true_step(w, 1.0)) <= tol * tb, "w=%d: %g vs true %g", w, tb,
                  true_step(w, 1.0));
    }
}

Test(sched_fit, a100_measurements_normalise_to_the_v100_model)
{
    const int w[] = {1, 2, 4, 8};
    const double v100[] = {1, 1, 1, 1}, a100[] = {2, 2, 2, 2};
    struct speed_model on_v = fit_on(w, v100, 4), on_a = fit_on(w, a100, 4);
    assert_same(&on_a, &on_v, 0.01);
    /* And the core, asked about the a100, predicts what was measured there. */
    const struct plan_spec none = {0};
    const struct plan_choice dp = {0};
    for (int i = 0; i < 4; i++) {
        double t = plan_step_time(&on_a, &none, &dp, w[i], 1, 2.0, 80);
        cr_assert(fabs(t - true_step(w[i], 2.0)) <= 0.01 * t, "w=%d: %g", w[i], t);
    }
}

Test(sched_fit, without_normalising_a100_looks_twice_as_fast)
{
    const int w[] = {1, 2, 4, 8};
    const double ref[] = {1, 1, 1, 1};
    struct live_fit_obs obs[4];
    for (int i = 0; i < 4; i++)
        obs[i] = (struct live_fit_obs){w[i], true_step(w[i], 2.0), 1.0, 0}; /* speed ignored */
    struct speed_model naive = {.batch_per_gpu = M, .dataset_size = 50000};
    cr_assert_eq(live_fit_speed(&naive, obs, 4), 0);
    struct speed_model on_v = fit_on(w, ref, 4);
    cr_assert(speed_step_time(&naive, 1) < 0.6 * speed_step_time(&on_v, 1));
}

Test(sched_fit, t4_measurements_normalise_too)
{
    const int w[] = {1, 2, 4, 8};
    const double v100[] = {1, 1, 1, 1}, t4[] = {0.4, 0.4, 0.4, 0.4};
    struct speed_model on_v = fit_on(w, v100, 4), on_t = fit_on(w, t4, 4);
    assert_same(&on_t, &on_v, 0.01);
}

Test(sched_fit, mixed_models_come_close_to_the_reference)
{
    const int w[] = {1, 2, 4, 8, 2, 4};
    const double mixed[] = {1, 1, 2, 2, 2, 3};
    const int wv[] = {1, 2, 4, 8};
    const double v100[] = {1, 1, 1, 1};
    struct speed_model on_v = fit_on(wv, v100, 4), on_mix = fit_on(w, mixed, 6);
    assert_same(&on_mix, &on_v, 0.03);
}

/* A job with a batch model measures each world size at its own examples per GPU (its global
 * batch, 256 or 1024, spread over w): the fit at those batches predicts the step time at any
 * other batch, which one at the model's batch_per_gpu could not. */
Test(sched_fit, own_batches_identify_the_compute_per_example)
{
    const int w[] = {1, 2, 4, 8, 2, 8};
    const double global[] = {256, 256, 256, 256, 1024, 1024};
    struct live_fit_obs obs[6];
    for (int i = 0; i < 6; i++) {
        double m = global[i] / w[i], f[SPEED_NFEATURES], t = 0;
        speed_features_placed(w[i], 1, m, f);
        for (int k = 0; k < SPEED_NFEATURES; k++)
            t += ref_theta[k] * f[k];
        obs[i] = (struct live_fit_obs){w[i], t, 1.0, m};
    }
    struct speed_model sm = {.batch_per_gpu = 256, .dataset_size = 50000};
    cr_assert_eq(live_fit_speed(&sm, obs, 6), 0);
    for (int w2 = 1; w2 <= 8; w2 *= 2)
        for (double m = 16; m <= 512; m *= 2) {
            double f[SPEED_NFEATURES], t = 0;
            speed_features_placed(w2, 1, m, f);
            for (int k = 0; k < SPEED_NFEATURES; k++)
                t += ref_theta[k] * f[k];
            double got = speed_step_time_placed(&sm, w2, 1, m);
            cr_assert(fabs(got - t) <= 0.03 * t, "w=%d m=%g: %g vs %g", w2, m, got, t);
        }
}

Test(sched_fit, bad_input_is_refused)
{
    struct speed_model sm = {.batch_per_gpu = M};
    struct live_fit_obs bad = {0, 1.0, 1.0, 0};
    cr_assert_eq(live_fit_speed(&sm, NULL, 1), -1);
    cr_assert_eq(live_fit_speed(&sm, &bad, 1), -1);
    cr_assert_not(sm.fitted);
}

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
