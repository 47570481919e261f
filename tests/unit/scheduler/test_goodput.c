/* goodput: the statistical gain of a batch, step times with gradient accumulation, fixed
 * (strong scaling) and adaptive batches. The check against the measured profiles is in
 * tests/unit/sim/test_goodput_profiles.c. */
#include <criterion/criterion.h>
#include <math.h>

#include "goodput.h"

/* A model whose step is 0.1 s + 1 ms per example per GPU, plus 0.05 s across nodes. */
static struct speed_model linear_model(void)
{
    struct speed_model sp = {.theta = {0.1, 0.001, 0, 0, 0, 0.05},
                             .batch_per_gpu = 32,
                             .dataset_size = 50000,
                             .fitted = 1,
                             .gpus_per_node = 4};
    return sp;
}

Test(goodput, gain_follows_the_noise_scale)
{
    struct batch_spec b = {.init_batch = 128, .grad_sqr = 1.0, .grad_var = 7.0};
    cr_expect_float_eq(goodput_gain(&b, 128), 1.0, 1e-12);
    /* s = 8: (7 + 1) / (7/8 + 1) */
    cr_expect_float_eq(goodput_gain(&b, 1024), 8.0 / (7.0 / 8 + 1.0), 1e-12);
    cr_expect_float_eq(goodput_efficiency(&b, 1024), 8.0 / (7.0 / 8 + 1.0) / 8, 1e-12);
    /* the gain grows with the batch, the efficiency falls */
    double g = 1.0, e = 1.0;
    for (double m = 256; m <= 1 << 16; m *= 2) {
        cr_expect_gt(goodput_gain(&b, m), g);
        cr_expect_lt(goodput_efficiency(&b, m), e);
        g = goodput_gain(&b, m);
        e = goodput_efficiency(&b, m);
    }
    /* ... and the gain is bounded by (var + sqr) / sqr */
    cr_expect_lt(goodput_gain(&b, 1e12), 8.0);
    cr_expect_gt(goodput_gain(&b, 1e12), 7.99);
}

Test(goodput, no_statistics_counts_every_example)
{
    struct batch_spec b = {.init_batch = 100};
    cr_expect_float_eq(goodput_gain(&b, 400), 4.0, 1e-12);
    cr_expect_float_eq(goodput_efficiency(&b, 400), 1.0, 1e-12);
    /* pure noise (sqr 0) is the same limit; no noise (var 0) gains nothing from a batch */
    b.grad_var = 5;
    cr_expect_float_eq(goodput_gain(&b, 400), 4.0, 1e-12);
    b.grad_var = 0;
    b.grad_sqr = 5;
    cr_expect_float_eq(goodput_gain(&b, 400), 1.0, 1e-12);
    struct batch_spec none = {0};
    cr_expect_not(goodput_has_model(&none));
    cr_expect_eq(goodput_rate(NULL, &none, 1, 1, 64), 0.0);
}

Test(goodput, fixed_batch_shrinks_per_gpu_as_it_grows)
{
    struct speed_model sp = linear_model();
    struct batch_spec b = {.init_batch = 256, .batch = 256, .grad_sqr = 1, .grad_var = 1};
    /* 256 on 1 GPU: 0.1 + 0.256; on 4: 0.1 + 0.064 (no all-reduce terms in this model) */
    cr_expect_float_eq(goodput_step_time(&sp, &b, 1, 1, 256, NULL), 0.356, 1e-12);
    cr_expect_float_eq(goodput_step_time(&sp, &b, 4, 1, 256, NULL), 0.164, 1e-12);
    cr_expect_float_eq(goodput_step_time(&sp, &b, 8, 2, 256, NULL), 0.182, 1e-12);
    double batch;
    double r4 = goodput_best(&sp, &b, 4, 1, &batch);
    cr_expect_float_eq(batch, 256, 1e-12, "a fixed batch stays");
    cr_expect_float_eq(r4, 256 * 1.0 / (0.164 * 50000), 1e-12);
    /* below the smallest local batch it cannot run */
    b.min_local = 64;
    cr_expect(isinf(goodput_step_time(&sp, &b, 8, 2, 256, NULL)));
    cr_expect_eq(goodput_best(&sp, &b, 8, 2, NULL), 0.0);
    cr_expect_gt(goodput_best(&sp, &b, 4, 1, NULL), 0.0);
}

Test(goodput, accumulation_above_the_largest_local_batch)
{
    struct speed_model sp = linear_model();
    struct batch_spec b = {.init_batch = 64, .max_local = 64};
    int k = -1;
    /* 256 on 1 GPU: 4 micro-steps of 64, 3 extra compute steps of 0.164 each */
    double t = goodput_step_time(&sp, &b, 1, 1, 256, &k);
    cr_expect_eq(k, 3);
    cr_expect_float_eq(t, 4 * 0.164, 1e-12);
    /* 256 on 2 nodes of 2: 2 micro-steps of 64 per GPU, the all-reduce once */
    t = goodput_step_time(&sp, &b, 4, 2, 512, &k);
    cr_expect_eq(k, 1);
    cr_expect_float_eq(t, 0.164 + 0.05 + 0.164, 1e-12);
    goodput_step_time(&sp, &b, 4, 1, 256, &k);
    cr_expect_eq(k, 0);
}

Test(goodput, adaptive_batch_grows_with_the_gpus_while_the_noise_allows)
{
    struct speed_model sp = linear_model();
    /* a noisy gradient: large batches keep most of their value */
    struct batch_spec b = {.init_batch = 64, .max_batch = 4096, .adaptive = 1,
                           .max_local = 256, .grad_sqr = 1, .grad_var = 200};
    double m1, m8, m_fixed;
    double r1 = goodput_best(&sp, &b, 1, 1, &m1);
    double r8 = goodput_best(&sp, &b, 8, 2, &m8);
    cr_expect_geq(m1, 64);
    cr_expect_gt(m8, m1, "more GPUs, a larger batch (%g vs %g)", m8, m1);
    cr_expect_leq(m8, 4096);
    /* the chosen batch beats the initial one, and never loses to it */
    struct batch_spec fixed = b;
    fixed.adaptive = 0;
    double rf = goodput_best(&sp, &fixed, 8, 2, &m_fixed);
    cr_expect_float_eq(m_fixed, 64, 1e-12);
    cr_expect_gt(r8, rf);
    cr_expect_gt(r8, r1);
    for (double m = 64; m <= 4096; m *= 1.5)
        cr_expect_leq(goodput_rate(&sp, &b, 8, 2, m), r8 * (1 + 1e-9), "batch %g", m);
    /* with little noise, the batch stays near the start: a bigger one buys nothing */
    b.grad_var = 0.01;
    double mq;
    goodput_best(&sp, &b, 8, 2, &mq);
    cr_expect_lt(mq, m8);
}

Test(goodput, weak_scaling_without_statistics_matches_the_speed_model)
{
    struct speed_model sp = linear_model();
    /* no noise statistics, batch = w * 32: exactly speed_epochs_per_second */
    struct batch_spec b = {.init_batch = 32};
    for (int w = 1; w <= 4; w *= 2)
        cr_expect_float_eq(goodput_rate(&sp, &b, w, 1, 32.0 * w), speed_epochs_per_second(&sp, w),
                           1e-12, "w %d", w);
}

Test(goodput, outlook_takes_a_fixed_batch_noise_scale_as_at_least_its_batch)
{
    /* deepspeech2's first epoch at 640 = 32 x M0: sqr 37.8, var 24.1 (noise scale 0.64 M0) */
    struct batch_spec b = {.init_batch = 20, .batch = 640, .grad_sqr = 37.8, .grad_var = 24.1};
    struct batch_spec o = goodput_outlook(&b);
    cr_expect_float_eq(o.grad_sqr, 37.8, 1e-12);
    cr_expect_float_eq(o.grad_var, 32 * 37.8, 1e-9);
    cr_expect_lt(goodput_gain(&b, 640), 2.0, "the report's gain %g", goodput_gain(&b, 640));
    /* var = s sqr: gain (s + 1) / 2 */
    cr_expect_float_eq(goodput_gain(&o, 640), 33.0 / 2, 1e-9);
    cr_expect_float_eq(o.batch, 640, 1e-12);
    cr_expect_float_eq(o.init_batch, 20, 1e-12);
    /* a noise scale already above the batch is kept */
    b.grad_var = 100 * 37.8;
    o = goodput_outlook(&b);
    cr_expect_float_eq(o.grad_var, 100 * 37.8, 1e-9);
}

Test(goodput, outlook_leaves_adaptive_initial_and_unreported_batches)
{
    struct batch_spec adaptive = {.init_batch = 20, .batch = 640, .max_batch = 640,
                                  .adaptive = 1, .grad_sqr = 37.8, .grad_var = 24.1};
    cr_expect_float_eq(goodput_outlook(&adaptive).grad_var, 24.1, 1e-12);
    struct batch_spec initial = {.init_batch = 20, .batch = 20, .grad_sqr = 37.8,
                                 .grad_var = 24.1};
    cr_expect_float_eq(goodput_outlook(&initial).grad_var, 24.1, 1e-12);
    struct batch_spec none = {.init_batch = 20, .batch = 640};
    cr_expect_float_eq(goodput_outlook(&none).grad_var, 0.0, 1e-12);
    cr_expect_float_eq(goodput_outlook(&none).grad_sqr, 0.0, 1e-12);
    struct batch_spec no_model = {.batch = 640, .grad_sqr = 1};
    cr_expect_float_eq(goodput_outlook(&no_model).grad_var, 0.0, 1e-12);
}
