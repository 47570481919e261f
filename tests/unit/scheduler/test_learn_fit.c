/* learn_fit's reference model: a job's speed model fitted from step times measured on a100
 * (or t4, or a mix) GPUs is the one measured on the reference v100 (moved here from the
 * server's live fit, which now calls it). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "convergence.h"
#include "learn_fit.h"
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
    struct learn_obs obs[16];
    for (size_t i = 0; i < n; i++)
        obs[i] = (struct learn_obs){.w = w[i], .step_s = true_step(w[i], speed[i]), .gpu_speed = speed[i]};
    struct speed_model sm = {.batch_per_gpu = M, .dataset_size = 50000};
    cr_assert_eq(learn_fit_speed(&sm, obs, n), 0);
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

Test(learn_fit, a100_measurements_normalise_to_the_v100_model)
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

Test(learn_fit, without_normalising_a100_looks_twice_as_fast)
{
    const int w[] = {1, 2, 4, 8};
    const double ref[] = {1, 1, 1, 1};
    struct learn_obs obs[4];
    for (int i = 0; i < 4; i++)
        obs[i] = (struct learn_obs){.w = w[i], .step_s = true_step(w[i], 2.0), .gpu_speed = 1.0}; /* speed ignored */
    struct speed_model naive = {.batch_per_gpu = M, .dataset_size = 50000};
    cr_assert_eq(learn_fit_speed(&naive, obs, 4), 0);
    struct speed_model on_v = fit_on(w, ref, 4);
    cr_assert(speed_step_time(&naive, 1) < 0.6 * speed_step_time(&on_v, 1));
}

Test(learn_fit, t4_measurements_normalise_too)
{
    const int w[] = {1, 2, 4, 8};
    const double v100[] = {1, 1, 1, 1}, t4[] = {0.4, 0.4, 0.4, 0.4};
    struct speed_model on_v = fit_on(w, v100, 4), on_t = fit_on(w, t4, 4);
    assert_same(&on_t, &on_v, 0.01);
}

Test(learn_fit, mixed_models_come_close_to_the_reference)
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
Test(learn_fit, own_batches_identify_the_compute_per_example)
{
    const int w[] = {1, 2, 4, 8, 2, 8};
    const double global[] = {256, 256, 256, 256, 1024, 1024};
    struct learn_obs obs[6];
    for (int i = 0; i < 6; i++) {
        double m = global[i] / w[i], f[SPEED_NFEATURES], t = 0;
        speed_features_placed(w[i], 1, m, f);
        for (int k = 0; k < SPEED_NFEATURES; k++)
            t += ref_theta[k] * f[k];
        obs[i] = (struct learn_obs){.w = w[i], .step_s = t, .gpu_speed = 1.0, .m = m};
    }
    struct speed_model sm = {.batch_per_gpu = 256, .dataset_size = 50000};
    cr_assert_eq(learn_fit_speed(&sm, obs, 6), 0);
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

Test(learn_fit, bad_input_is_refused)
{
    struct speed_model sm = {.batch_per_gpu = M};
    struct learn_obs bad = {.w = 0, .step_s = 1.0, .gpu_speed = 1.0};
    cr_assert_eq(learn_fit_speed(&sm, NULL, 1), -1);
    cr_assert_eq(learn_fit_speed(&sm, &bad, 1), -1);
    cr_assert_not(sm.fitted);
}


/* Two sizes whose steps take about as long are fitted exactly by the all-reduce terms alone:
 * no compute, a step of 0 s on one GPU, an infinite speed. The simulator's --speed live met
 * one (6 and 8 GPUs of one type; the job was never placed again). Such a fit is refused: the
 * reference model is not made (the caller keeps what it had), the per-type entry takes the
 * one-size rule at the smaller size (its compute from its own steps). */
Test(learn_fit, a_fit_without_compute_is_refused)
{
    struct learn_obs obs[2];
    const int w[] = {6, 8};
    for (int i = 0; i < 2; i++) {
        double f[SPEED_NFEATURES];
        speed_features_placed(w[i], 1, M, f);
        obs[i] = (struct learn_obs){.w = w[i], .step_s = 0.1986 * f[3], .gpu_speed = 1.0,
                                    .gpu_model = 3, .m = M, .seconds = 60};
    }
    struct speed_model raw = {.batch_per_gpu = M, .dataset_size = 50000};
    struct speed_obs so[2] = {{6, 1, M, obs[0].step_s, SPEED_LINK_ISLAND},
                             {8, 1, M, obs[1].step_s, SPEED_LINK_ISLAND}};
    cr_assert_eq(speed_fit_obs(&raw, so, 2), 0);
    cr_assert_lt(raw.theta[0] + raw.theta[1] * M, 0.01 * obs[0].step_s,
                 "the raw fit has no compute: %g + %g m", raw.theta[0], raw.theta[1]);

    struct speed_model sm = {.batch_per_gpu = M, .dataset_size = 50000};
    errno = 0;
    cr_assert_eq(learn_fit_speed(&sm, obs, 2), -1);
    cr_assert_eq(errno, EDOM);
    cr_assert_not(sm.fitted, "the caller's model is left as it was");

    struct sched_type_speed t[2];
    struct learn_prior p = {0};
    cr_assert_eq(learn_fit_types(obs, 2, &sm, NULL, &p, NULL, t, 2), 1);
    cr_assert_eq(t[0].measured_sizes, 2);
    cr_assert(t[0].speed.fitted);
    double c = t[0].speed.theta[0] + t[0].speed.theta[1] * M;
    cr_assert_gt(c, 0.5 * obs[0].step_s, "compute from the steps at 6: %g of %g", c,
                 obs[0].step_s);
    double one = speed_step_time(&t[0].speed, 1);
    cr_assert(one > 0 && isfinite(one), "a finite step on one GPU: %g", one);
    cr_assert(fabs(speed_step_time_placed(&t[0].speed, 6, 1, M) - obs[0].step_s) <=
                  0.01 * obs[0].step_s,
              "and the step measured at 6");
}

/* Link classes (issue 32): steps measured inside an island and over PCIe on one node, and on
 * one switch and across switches over two, are fitted per class (the jumps of 30 ms over
 * PCIe, 100 ms across nodes, 60 ms more across switches), and what the learning rules read
 * says which classes the job measured. */
Test(learn_fit, each_link_class_of_the_steps_is_learned)
{
    const double jump[SPEED_NLINKS] = {0, 0.03, 0.1, 0.16};
    struct learn_obs obs[16];
    size_t n = 0;
    for (int w = 1; w <= 8; w *= 2)
        for (int l = SPEED_LINK_ISLAND; l <= SPEED_LINK_CROSS; l++) {
            if ((w == 1 && l > SPEED_LINK_ISLAND) || (w == 2 && l == SPEED_LINK_CROSS))
                continue;
            double t = true_step(w, 1) + jump[l];
            obs[n++] = (struct learn_obs){.w = w,
                                          .nodes = l >= SPEED_LINK_SWITCH ? 2 : 1,
                                          .step_s = t,
                                          .gpu_speed = 1,
                                          .link = (enum speed_link)l};
        }
    struct speed_model sm = {.batch_per_gpu = M, .dataset_size = 50000};
    cr_assert_eq(learn_fit_speed(&sm, obs, n), 0);
    for (int l = SPEED_LINK_PCIE; l <= SPEED_LINK_CROSS; l++) {
        int nodes = l >= SPEED_LINK_SWITCH ? 2 : 1;
        double t = speed_step_time_linked(&sm, 4, nodes, (enum speed_link)l, M);
        cr_assert_float_eq(t, true_step(4, 1) + jump[l], 2e-3, "class %d: %g", l, t);
    }
    struct sched_job j = {.speed = sm};
    learn_fit_measured(&j, obs, n);
    cr_assert_eq(j.measured_links, 15u, "all four classes measured");
    obs[0].link = SPEED_LINK_PCIE; /* a 1-GPU step spans no link */
    learn_fit_measured(&j, obs, 1);
    cr_assert_eq(j.measured_links, 0u);
}
