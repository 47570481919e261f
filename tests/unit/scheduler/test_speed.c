/* The speed model: all-reduce algorithm choice and cost coefficients, recovery of planted
 * parameters, and the paper's measured ResNet-110 profile. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "speed.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

Test(speed, algorithm_follows_world_size)
{
    cr_expect_eq(allreduce_algo_for(1), ALLREDUCE_NONE);
    const int pow2[] = {2, 4, 8, 16, 32, 64, 1024};
    for (size_t i = 0; i < sizeof(pow2) / sizeof(pow2[0]); i++)
        cr_expect_eq(allreduce_algo_for(pow2[i]), ALLREDUCE_HALVING_DOUBLING, "p=%d", pow2[i]);
    const int other[] = {3, 5, 6, 7, 9, 12, 15, 17, 24, 63};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        cr_expect_eq(allreduce_algo_for(other[i]), ALLREDUCE_BINARY_BLOCKS, "p=%d", other[i]);
}

static void expect_coeffs(enum allreduce_algo algo, int p, double a, double b, double g)
{
    double ca, cb, cg;
    allreduce_coefficients(algo, p, &ca, &cb, &cg);
    cr_expect_float_eq(ca, a, 1e-12, "algo %d p %d: ca %g", algo, p, ca);
    cr_expect_float_eq(cb, b, 1e-12, "algo %d p %d: cb %g", algo, p, cb);
    cr_expect_float_eq(cg, g, 1e-12, "algo %d p %d: cg %g", algo, p, cg);
}

Test(speed, coefficients_match_the_formulas)
{
    expect_coeffs(ALLREDUCE_RING, 4, 6.0, 1.5, 0.75);
    expect_coeffs(ALLREDUCE_HALVING_DOUBLING, 8, 6.0, 1.75, 0.875);
    expect_coeffs(ALLREDUCE_HALVING_DOUBLING, 1, 0.0, 0.0, 0.0);
    /* MPICH's fold for 6 = 4 + 2 extra: 2 log2 4 + 2, 2*3/4 + 2, 3/4 + 1. */
    expect_coeffs(ALLREDUCE_HALVING_DOUBLING, 6, 6.0, 3.5, 1.75);
    /* Binary blocks 12 = 8 + 4: 2*3 + 2*(1+1), 2*7/8 + 2/4, 7/8 + 1/8. */
    expect_coeffs(ALLREDUCE_BINARY_BLOCKS, 12, 10.0, 2.25, 1.0);
    /* 9 = 8 + 1: gap 3. */
    expect_coeffs(ALLREDUCE_BINARY_BLOCKS, 9, 14.0, 3.75, 1.0);
    /* A power of two is one block: the same as halving-doubling. */
    expect_coeffs(ALLREDUCE_BINARY_BLOCKS, 16, 8.0, 1.875, 0.9375);
    expect_coeffs(ALLREDUCE_NONE, 16, 0.0, 0.0, 0.0);
}

Test(speed, coefficients_grow_with_world_size)
{
    double pa = 0, pb = 0, pg = 0;
    for (int p = 2; p <= 256; p++) {
        double ca, cb, cg;
        allreduce_coefficients(ALLREDUCE_RING, p, &ca, &cb, &cg);
        cr_expect(ca > pa && cb > pb && cg > pg, "ring not increasing at p=%d", p);
        pa = ca, pb = cb, pg = cg;
    }
    pa = pb = pg = 0;
    for (int p = 2; p <= 1024; p *= 2) {
        double ca, cb, cg;
        allreduce_coefficients(ALLREDUCE_HALVING_DOUBLING, p, &ca, &cb, &cg);
        cr_expect(ca > pa && cb > pb && cg > pg, "halving-doubling not increasing at p=%d", p);
        pa = ca, pb = cb, pg = cg;
    }
}

Test(speed, non_powers_of_two_cost_more_than_the_next_power)
{
    for (int k = 1; k <= 8; k++) {
        int lo = 1 << k, hi = 1 << (k + 1);
        double ha, hb, hg;
        allreduce_coefficients(ALLREDUCE_HALVING_DOUBLING, hi, &ha, &hb, &hg);
        for (int p = lo + 1; p < hi; p++) {
            double ca, cb, cg;
            allreduce_coefficients(allreduce_algo_for(p), p, &ca, &cb, &cg);
            cr_expect(ca > ha && cb > hb && cg >= hg, "p=%d not above p=%d", p, hi);
        }
        if (k >= 2) { /* the biggest gap (2^k + 1) is worse than two equal-ish blocks */
            double a1, b1, g1, a2, b2, g2;
            allreduce_coefficients(ALLREDUCE_BINARY_BLOCKS, lo + 1, &a1, &b1, &g1);
            allreduce_coefficients(ALLREDUCE_BINARY_BLOCKS, lo + lo / 2, &a2, &b2, &g2);
            cr_expect(a1 > a2 && b1 > b2, "p=%d should cost more than p=%d", lo + 1, lo + lo / 2);
        }
    }
}

Test(speed, features_of_one_worker_have_no_communication)
{
    double f[SPEED_NFEATURES];
    speed_features(1, 128.0, f);
    cr_expect_eq(f[0], 1.0);
    cr_expect_eq(f[1], 128.0);
    for (int j = 2; j < SPEED_NFEATURES; j++)
        cr_expect_eq(f[j], 0.0);
    speed_features_placed(8, 2, 64.0, f);
    cr_expect_float_eq(f[2], 6.0, 1e-12);
    cr_expect_float_eq(f[5], 1.0, 1e-12);
}

static double planted_time(const double *theta, int w, int nodes, double m)
{
    double f[SPEED_NFEATURES], t = 0.0;
    speed_features_placed(w, nodes, m, f);
    for (int j = 0; j < SPEED_NFEATURES; j++)
        t += theta[j] * f[j];
    return t;
}

Test(speed, noisy_fit_recovers_planted_step_times)
{
    const double theta[SPEED_NFEATURES] = {0.02, 0.0015, 0.004, 0.03, 0.01, 0.05};
    const double ms[] = {32, 64, 128};
    struct speed_obs obs[200];
    size_t n = 0;
    for (int w = 1; w <= 16; w++)
        for (int mi = 0; mi < 3; mi++)
            for (int nodes = 1; nodes <= (w < 4 ? w : 4); nodes++) {
                double t = planted_time(theta, w, nodes, ms[mi]);
                obs[n++] =
                    (struct speed_obs){w, nodes, ms[mi], t * (1.0 + 0.02 * (uniform() - 0.5)),
                                       SPEED_LINK_ISLAND};
            }
    struct speed_model model = {.batch_per_gpu = 64, .dataset_size = 1e4};
    cr_assert_eq(speed_fit_obs(&model, obs, n), 0);
    cr_expect(model.fitted);
    /* 1% noise: every prediction within 2%, also beyond the data (w up to 64). */
    for (int w = 1; w <= 64; w++) {
        int nodes = (w + 3) / 4;
        double want = planted_time(theta, w, nodes, 64.0);
        double got = speed_step_time_placed(&model, w, nodes, 64.0);
        cr_expect_float_eq(got, want, 0.02 * want, "w=%d: %g vs %g", w, got, want);
    }
    cr_expect_float_eq(model.theta[1], theta[1], 0.1 * theta[1], "per-example %g", model.theta[1]);
    double mean = 0.0;
    for (size_t i = 0; i < n; i++)
        mean += obs[i].step_s / (double)n;
    cr_expect_lt(model.rmse, 0.01 * mean); /* uniform +-1% noise has a std of 0.58% */
}

Test(speed, exact_data_fits_exactly)
{
    const double theta[SPEED_NFEATURES] = {0.1, 0.0, 0.002, 0.05, 0.02, 0.0};
    int w[12];
    double t[12];
    for (int i = 0; i < 12; i++) {
        w[i] = i + 1;
        t[i] = planted_time(theta, w[i], 1, 32.0);
    }
    struct speed_model model = {.batch_per_gpu = 32, .dataset_size = 1e4};
    cr_assert_eq(speed_fit(&model, w, t, 12), 0);
    for (int p = 1; p <= 64; p++) {
        double want = planted_time(theta, p, 1, 32.0);
        cr_expect_float_eq(speed_step_time(&model, p), want, 1e-3 * want, "w=%d", p);
    }
}

/* DESIGN.md: ResNet-110 on CIFAR-10, 128 images per GPU, 50,000 images, K40m. */
static struct speed_model resnet110(void)
{
    const int w[] = {1, 2, 4, 8};
    const double t[] = {0.4025, 0.4272, 0.4443, 0.4702};
    struct speed_model model = {.batch_per_gpu = 128, .dataset_size = 50000};
    cr_assert_eq(speed_fit(&model, w, t, 4), 0);
    for (int i = 0; i < 4; i++)
        cr_expect_float_eq(speed_step_time(&model, w[i]), t[i], 0.01 * t[i], "w=%d: %g", w[i],
                           speed_step_time(&model, w[i]));
    return model;
}

Test(speed, resnet110_profile_is_reproduced)
{
    struct speed_model model = resnet110();
    cr_expect_lt(model.rmse, 0.004);
    /* 318 images/s on one GPU is 318/50000 epochs per second. */
    cr_expect_float_eq(speed_epochs_per_second(&model, 1), 318.0 / 50000, 0.01 * 318.0 / 50000);
    cr_log_info("resnet110: t(1..64 by doubling) = %.1f %.1f %.1f %.1f %.1f %.1f %.1f ms",
                1e3 * speed_step_time(&model, 1), 1e3 * speed_step_time(&model, 2),
                1e3 * speed_step_time(&model, 4), 1e3 * speed_step_time(&model, 8),
                1e3 * speed_step_time(&model, 16), 1e3 * speed_step_time(&model, 32),
                1e3 * speed_step_time(&model, 64));
}

Test(speed, resnet110_extrapolates_sensibly)
{
    struct speed_model model = resnet110();
    double prev_t = 0.0, prev_eps = 0.0;
    for (int w = 1; w <= 64; w *= 2) {
        double t = speed_step_time(&model, w), eps = speed_epochs_per_second(&model, w);
        cr_expect_gt(t, prev_t, "step time grows with w (w=%d)", w);
        cr_expect_gt(eps, prev_eps, "throughput still grows (w=%d)", w);
        prev_t = t, prev_eps = eps;
    }
    /* Latency-bound growth: 64 GPUs cost well under twice the one-GPU step. */
    cr_expect_lt(speed_step_time(&model, 64), 1.5 * speed_step_time(&model, 1));
    cr_expect_gt(speed_step_time(&model, 64), speed_step_time(&model, 8));
}

Test(speed, resnet110_non_powers_of_two_are_slower_per_gpu)
{
    struct speed_model model = resnet110();
    const int cases[][3] = {{9, 8, 16}, {12, 8, 16}, {6, 4, 8}, {3, 2, 4}, {17, 16, 32}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int w = cases[i][0], lo = cases[i][1], hi = cases[i][2];
        double per = speed_epochs_per_second(&model, w) / w;
        cr_expect_lt(per, speed_epochs_per_second(&model, lo) / lo, "w=%d vs %d", w, lo);
        cr_expect_lt(per, speed_epochs_per_second(&model, hi) / hi, "w=%d vs %d", w, hi);
    }
}

Test(speed, packed_placement_adds_internode_cost)
{
    const double theta[SPEED_NFEATURES] = {0.1, 0.0, 0.0, 0.0, 0.0, 0.2};
    struct speed_model model = {.batch_per_gpu = 32, .dataset_size = 1e4, .fitted = 1};
    memcpy(model.theta, theta, sizeof(theta));
    cr_expect_float_eq(speed_step_time(&model, 8), 0.1, 1e-12); /* one node assumed */
    model.gpus_per_node = 4;
    cr_expect_float_eq(speed_step_time(&model, 4), 0.1, 1e-12);
    cr_expect_float_eq(speed_step_time(&model, 8), 0.1 + 0.2, 1e-12);
    cr_expect_float_eq(speed_step_time(&model, 16), 0.1 + 0.2, 1e-12);
}

Test(speed, unfitted_or_bad_input)
{
    struct speed_model model = {.batch_per_gpu = 32, .dataset_size = 1e4};
    cr_expect(isinf(speed_step_time(&model, 4)));
    cr_expect_eq(speed_epochs_per_second(&model, 4), 0.0);
    const int w[] = {1, 0};
    const double t[] = {0.1, 0.2};
    struct speed_model before = model;
    errno = 0;
    cr_expect_eq(speed_fit(&model, w, t, 2), -1);
    cr_expect_eq(errno, EINVAL);
    cr_expect_eq(memcmp(&model, &before, sizeof(model)), 0);
    const int w1[] = {1};
    const double tn[] = {NAN};
    cr_expect_eq(speed_fit(&model, w1, tn, 1), -1);
    cr_expect_eq(speed_fit(&model, w1, t, 0), -1);
    model.batch_per_gpu = 0;
    cr_expect_eq(speed_fit(&model, w1, t, 1), -1);
}

Test(speed, single_observation_predicts_every_size)
{
    const int w[] = {1};
    const double t[] = {0.3};
    struct speed_model model = {.batch_per_gpu = 32, .dataset_size = 1e4};
    cr_assert_eq(speed_fit(&model, w, t, 1), 0);
    for (int p = 1; p <= 64; p++)
        cr_expect(isfinite(speed_step_time(&model, p)) && speed_step_time(&model, p) > 0.0);
    cr_expect_float_eq(speed_step_time(&model, 1), 0.3, 1e-6);
}

Test(speed, two_sizes_predict_growing_step_times)
{
    /* Exploratory profiling may have seen only 1 and 2 GPUs: the model must still grow
     * with w over powers of two and rank non-powers below their neighbours. */
    const int w[] = {1, 2};
    const double t[] = {0.40, 0.43};
    struct speed_model model = {.batch_per_gpu = 128, .dataset_size = 50000};
    cr_assert_eq(speed_fit(&model, w, t, 2), 0);
    cr_expect_float_eq(speed_step_time(&model, 2), 0.43, 1e-4);
    for (int p = 2; p <= 32; p *= 2)
        cr_expect_gt(speed_step_time(&model, 2 * p), speed_step_time(&model, p), "w=%d", p);
    cr_expect_gt(speed_step_time(&model, 9), speed_step_time(&model, 16));
}

/* Link classes (issue 32): steps measured inside an NVLink island, over PCIe, on one switch and
 * across switches give each class its own term, and each placement is predicted by its class. */
Test(speed, each_link_class_is_learned_and_predicted)
{
    /* planted: 20 ms over PCIe, 50 ms once nodes are crossed, 40 ms more across switches */
    const double theta[SPEED_NFEATURES] = {0.02, 0.0015, 0.004, 0.03, 0.01, 0.05, 0.02, 0.04};
    struct speed_obs obs[64];
    size_t n = 0;
    for (int w = 1; w <= 16; w *= 2)
        for (int l = SPEED_LINK_ISLAND; l <= SPEED_LINK_CROSS; l++) {
            int nodes = l >= SPEED_LINK_SWITCH ? (w + 3) / 4 : 1;
            if ((l >= SPEED_LINK_SWITCH && nodes < 2) || (l <= SPEED_LINK_PCIE && w > 8) ||
                (w == 1 && l != SPEED_LINK_ISLAND))
                continue;
            double f[SPEED_NFEATURES], t = 0;
            speed_features_linked(w, nodes, (enum speed_link)l, 64, f);
            for (int k = 0; k < SPEED_NFEATURES; k++)
                t += theta[k] * f[k];
            obs[n++] = (struct speed_obs){w, nodes, 64, t, (enum speed_link)l};
        }
    struct speed_model m = {.batch_per_gpu = 64, .dataset_size = 1e4};
    cr_assert_eq(speed_fit_obs(&m, obs, n), 0);
    double island = speed_step_time_linked(&m, 8, 1, SPEED_LINK_ISLAND, 64);
    double pcie = speed_step_time_linked(&m, 8, 1, SPEED_LINK_PCIE, 64);
    double sw = speed_step_time_linked(&m, 8, 2, SPEED_LINK_SWITCH, 64);
    double cross = speed_step_time_linked(&m, 8, 2, SPEED_LINK_CROSS, 64);
    cr_expect_float_eq(pcie - island, 0.02, 1e-3, "PCIe costs its own 20 ms: %g", pcie - island);
    cr_expect_float_eq(sw - island, 0.05, 1e-3, "a switch 50 ms: %g", sw - island);
    cr_expect_float_eq(cross - sw, 0.04, 1e-3, "across switches 40 ms more: %g", cross - sw);
    /* the class is clamped to what the nodes allow, and nodes alone mean ISLAND or SWITCH */
    cr_expect_eq(speed_link_on(2, SPEED_LINK_PCIE), SPEED_LINK_SWITCH);
    cr_expect_eq(speed_link_on(1, SPEED_LINK_CROSS), SPEED_LINK_ISLAND);
    cr_expect_float_eq(speed_step_time_placed(&m, 8, 2, 64), sw, 1e-12);
    /* packed, with islands of 4 known: 8 GPUs on one node span PCIe, 4 do not */
    m.gpus_per_island = 4;
    cr_expect_eq(speed_packed_link(&m, 8), SPEED_LINK_PCIE);
    cr_expect_eq(speed_packed_link(&m, 4), SPEED_LINK_ISLAND);
    cr_expect_float_eq(speed_step_time(&m, 8), pcie, 1e-12);
    m.gpus_per_node = 4;
    cr_expect_eq(speed_packed_link(&m, 8), SPEED_LINK_SWITCH);
    cr_expect_eq(speed_link_parse("cross"), SPEED_LINK_CROSS);
    cr_expect_eq(speed_link_parse("nvlink"), -1);
    cr_expect_str_eq(speed_link_name(SPEED_LINK_PCIE), "pcie");
}

/* Without classes (every observation ISLAND, i.e. by its nodes) the fit is the one of before:
 * its PCIe and cross-switch terms stay 0. */
Test(speed, observations_without_classes_leave_the_class_terms_at_zero)
{
    const int w[4] = {1, 2, 4, 8};
    const double t[4] = {0.4025, 0.4272, 0.4443, 0.4702};
    struct speed_model m = {.batch_per_gpu = 128, .dataset_size = 50000, .gpus_per_node = 4};
    cr_assert_eq(speed_fit(&m, w, t, 4), 0);
    cr_expect_eq(m.theta[6], 0.0);
    cr_expect_eq(m.theta[7], 0.0);
}
