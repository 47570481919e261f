/* progress: declared epochs from epochs or steps (goodput arithmetic), the examples per GPU
 * of a speed model, the epochs and seconds to go (progress.h); bounds: the settings' defaults
 * and the packing bound from the nodes (bounds.h). */
#include <limits.h>
#include <math.h>

#include "bounds.h"
#include "progress.h"
#include "sched_fixture.h"

Test(progress, declared_epochs_come_first_then_the_model_s)
{
    struct progress_declared d = {
        .epochs = 30, .model_epochs = 40, .steps = 1000, .dataset_size = 50000};
    cr_assert_float_eq(progress_declared_epochs(&d, 4), 30, 1e-12);
    d.epochs = 0;
    cr_assert_float_eq(progress_declared_epochs(&d, 4), 40, 1e-12);
    d.model_epochs = -1;
    d.steps = 0;
    cr_assert_float_eq(progress_declared_epochs(&d, 4), 0, 1e-12, "nothing declared");
    d.steps = 1000;
    d.dataset_size = 0;
    cr_assert_float_eq(progress_declared_epochs(&d, 4), 0, 1e-12, "steps without a dataset");
}

Test(progress, steps_before_it_ran_count_its_batch_at_w_gpus)
{
    struct progress_declared d = {.steps = 1000, .dataset_size = 51200, .batch_per_gpu = 128};
    /* 4 x 128 = 512 examples a step: 100 steps an epoch */
    cr_assert_float_eq(progress_declared_epochs(&d, 4), 10, 1e-12);
    cr_assert_float_eq(progress_declared_epochs(&d, 1), 2.5, 1e-12);
}

Test(progress, steps_after_it_ran_count_a_step_at_the_size_it_runs_now)
{
    struct progress_declared d = {.steps = 1000,
                                  .dataset_size = 51200,
                                  .batch_per_gpu = 128,
                                  .epochs_done = 2,
                                  .last_step = 400};
    /* 600 steps to go at 8 x 128 = 1024 examples a step: 12 more epochs, whatever the 400 did */
    cr_assert_float_eq(progress_declared_epochs(&d, 8), 14, 1e-12);
    cr_assert_float_eq(progress_declared_epochs(&d, 1), 3.5, 1e-12);
    d.last_step = 1200;
    cr_assert_float_eq(progress_declared_epochs(&d, 8), 2, 1e-12, "past its total: none to go");
    d.last_step = 400;
    d.batch_per_gpu = 0;
    cr_assert_float_eq(progress_declared_epochs(&d, 8), 5, 1e-12,
                       "no examples per GPU: what a step did so far (2 epochs in 400 steps)");
    d.batch_per_gpu = 128;
    cr_assert_float_eq(progress_declared_epochs(&d, 0), 5, 1e-12, "no size: what a step did");
}

/* Two equal jobs of 1000 steps, both at 8 GPUs now with 200 steps to go: one ran its first
 * 400 steps at 1 GPU (1 epoch) and 400 at 8 (8 epochs), the other all 800 at 8 (16 epochs).
 * Their 200 steps to go are the same 4 epochs at 8 GPUs; counted at the mean of their past
 * sizes, the first had 2.25 to go and the second 4 (live: 170 vs 293 epochs, 6 vs 10 min). */
Test(progress, equal_jobs_with_other_histories_have_the_same_steps_to_go)
{
    struct progress_declared grown = {.steps = 1000,
                                      .dataset_size = 51200,
                                      .batch_per_gpu = 128,
                                      .epochs_done = 9,
                                      .last_step = 800};
    struct progress_declared big = grown;
    big.epochs_done = 16;
    double left_grown = progress_declared_epochs(&grown, 8) - grown.epochs_done;
    double left_big = progress_declared_epochs(&big, 8) - big.epochs_done;
    cr_assert_float_eq(left_grown, 4, 1e-12);
    cr_assert_float_eq(left_big, 4, 1e-12);
    cr_assert_float_eq(progress_remaining_steps(&grown, left_grown, 1, 8), 200, 1e-9);
    cr_assert_float_eq(progress_remaining_steps(&grown, 2, 0, 8), 100, 1e-9,
                       "another source's epochs: in steps at 8 GPUs");
}

Test(progress, steps_of_a_batch_model_count_at_its_initial_batch)
{
    struct batch_spec b = {.init_batch = 512, .batch = 512};
    struct progress_declared d = {.steps = 1000,
                                  .dataset_size = 51200,
                                  .batch_per_gpu = 64,
                                  .epochs_done = 1,
                                  .last_step = 100,
                                  .batch = &b};
    double per_step = 512 * goodput_gain(&b, 512) / 51200;
    cr_assert_float_eq(progress_declared_epochs(&d, 2), 1 + 900 * per_step, 1e-9);
    b.batch = 1024;
    per_step = 512 * goodput_gain(&b, 1024) / 51200;
    cr_assert_float_eq(progress_declared_epochs(&d, 2), 1 + 900 * per_step, 1e-9);
}

/* The README's demo: 60,000 steps declared, 4,000 done in 2.4 epochs (30 images a step, as
 * measured, of a 50,000-image dataset at 1 GPU: 0.0006 epochs a step): 56,000 steps to go. */
Test(progress, remaining_steps_of_a_declared_length_are_its_steps_to_go)
{
    struct progress_declared d = {.steps = 60000,
                                  .dataset_size = 50000,
                                  .batch_per_gpu = 30,
                                  .epochs_done = 2.4,
                                  .last_step = 4000};
    double left = progress_declared_epochs(&d, 1) - d.epochs_done;
    cr_assert_float_eq(left, 33.6, 1e-9);
    cr_assert_float_eq(progress_remaining_steps(&d, left, 1, 1), 56000, 1e-9);
    cr_assert_float_eq(progress_declared_epochs(&d, 4) - d.epochs_done, 4 * 33.6, 1e-9,
                       "grown to 4 GPUs: each step to go does 4 times the examples");
    /* another source (the fit said 6 epochs): its epochs at what a step does */
    cr_assert_float_eq(progress_remaining_steps(&d, 6, 0, 1), 10000, 1e-6);
    cr_assert_float_eq(progress_remaining_steps(&d, 6, 0, 4), 2500, 1e-6);
    d.last_step = 60000;
    cr_assert_float_eq(progress_remaining_steps(&d, 0.5, 1, 4), 1, 1e-12,
                       "work left: at least a step");
    cr_assert_eq(progress_remaining_steps(&d, -1, 1, 4), -1, "unknown epochs");
}

Test(progress, remaining_steps_from_epochs_before_and_after_it_ran)
{
    struct progress_declared d = {.epochs = 10, .dataset_size = 51200, .batch_per_gpu = 128};
    /* before it ran: w x 128 examples a step, 100 steps an epoch at 4 GPUs */
    cr_assert_float_eq(progress_epochs_per_step(&d, 4), 0.01, 1e-12);
    cr_assert_float_eq(progress_remaining_steps(&d, 10, 1, 4), 1000, 1e-9,
                       "declared in epochs: through its steps per epoch");
    cr_assert_float_eq(progress_remaining_steps(&d, 0.001, 0, 4), 1, 1e-12, "rounded up");
    cr_assert_float_eq(progress_remaining_steps(&d, 0, 0, 4), 0, 1e-12);
    cr_assert_eq(progress_epochs_per_step(&d, 0), 0, "no GPUs before it ran: unknown");
    cr_assert_eq(progress_remaining_steps(&d, 10, 0, 0), -1);
    d.dataset_size = 0;
    cr_assert_eq(progress_remaining_steps(&d, 10, 0, 4), -1, "no dataset size: unknown");
    struct batch_spec b = {.init_batch = 512, .batch = 512};
    d = (struct progress_declared){
        .dataset_size = 51200, .batch = &b, .last_step = 10, .epochs_done = 7};
    cr_assert_float_eq(progress_epochs_per_step(&d, 4), 512 * goodput_gain(&b, 512) / 51200, 1e-12,
                       "a batch model counts at its initial batch");
}

Test(progress, the_examples_per_gpu_of_its_speed_model)
{
    struct batch_spec none = {0}, b = {.init_batch = 1000};
    cr_assert_eq(progress_batch_per_gpu(&none, 128, 4), 128);
    cr_assert_eq(progress_batch_per_gpu(NULL, 128, 4), 128);
    cr_assert_eq(progress_batch_per_gpu(&b, 128, 4), 250);
    cr_assert_eq(progress_batch_per_gpu(&b, 128, 0), 1000, "no GPUs asked: 1");
    cr_assert_eq(progress_batch_per_gpu(&b, 128, 3), 333, "rounded");
    b.init_batch = 0.4;
    cr_assert_eq(progress_batch_per_gpu(&b, 128, 1), 1, "at least 1");
    b.init_batch = 1e12;
    cr_assert_eq(progress_batch_per_gpu(&b, 128, 1), INT_MAX, "at most INT_MAX");
}

Test(progress, remaining_epochs_estimate_then_target_then_fit)
{
    struct conv_model conv = {.b0 = 0.01, .b1 = 1, .b2 = 0.1, .fitted = 1};
    struct progress_fit f = {
        .conv = &conv, .last_step = 100, .dataset_size = 50000, .batch_per_gpu = 128};
    double fit = progress_fit_epochs(&f, 4);
    double spe = 50000.0 / (4 * 128);
    double steps = conv_steps_to_converge(&conv, 100, spe, PROGRESS_LOSS_TOLERANCE);
    cr_assert(isfinite(steps));
    cr_assert_float_eq(fit, steps / spe, 1e-12);
    cr_assert_float_eq(progress_remaining_epochs(1, 7, 20, 5, &f, 4), 7, 1e-12);
    cr_assert_float_eq(progress_remaining_epochs(0, 7, 20, 5, &f, 4), 15, 1e-12);
    cr_assert_float_eq(progress_remaining_epochs(0, 7, 20, 25, &f, 4), 0, 1e-12);
    cr_assert_float_eq(progress_remaining_epochs(0, 7, 0, 5, &f, 4), fit, 1e-12);
    cr_assert_eq(progress_fit_epochs(&f, 0), -1);
    conv.fitted = 0;
    cr_assert_eq(progress_remaining_epochs(0, 7, 0, 5, &f, 4), -1, "no fit: unknown");
}

Test(progress, remaining_seconds_at_its_rate)
{
    struct speed_model sp = fx_resnet_model();
    struct batch_spec none = {0};
    double eps = sched_speed_rate(&sp, &none, 4, NULL);
    cr_assert_gt(eps, 0);
    cr_assert_float_eq(progress_remaining_s(10, &sp, &none, 4), 10 / eps, 1e-9);
    cr_assert_eq(progress_remaining_s(-1, &sp, &none, 4), -1, "unknown epochs");
    cr_assert_eq(progress_remaining_s(10, &sp, &none, 0), -1, "no GPUs");
    sp.fitted = 0;
    cr_assert_eq(progress_remaining_s(10, &sp, &none, 4), -1, "no rate");
}

Test(bounds, the_settings_defaults)
{
    cr_assert_eq(bounds_explore_stage_s(60), 60);
    cr_assert_eq(bounds_explore_stage_s(0), SCHED_EXPLORE_STAGE_S);
    cr_assert_eq(bounds_explore_stage_s(-1), SCHED_EXPLORE_STAGE_S);
    cr_assert_eq(bounds_explore_stage_s(INFINITY), SCHED_EXPLORE_STAGE_S);
    cr_assert_eq(bounds_explore_stage_s(NAN), SCHED_EXPLORE_STAGE_S);
    cr_assert_eq(bounds_max_wait_s(600), 600);
    cr_assert_eq(bounds_max_wait_s(0), SCHED_MAX_WAIT_S);
    cr_assert_eq(bounds_max_wait_s(-5), SCHED_MAX_WAIT_S);
}

Test(bounds, the_packing_bound_is_the_smallest_known_gpu_of_an_up_node)
{
    struct sched_node n[4] = {
        {.up = 1, .gpu_mem_gb = 80},
        {.up = 0, .gpu_mem_gb = 16},
        {.up = 1, .gpu_mem_gb = 0},
        {.up = 1, .gpu_mem_gb = 40},
    };
    cr_assert_float_eq(bounds_gpu_mem_bytes(n, 4), 40e9, 1);
    cr_assert_float_eq(bounds_gpu_mem_bytes(n, 1), 80e9, 1);
    cr_assert_eq(bounds_gpu_mem_bytes(n + 1, 2), 0, "none known: no bound");
    n[3].gpu_mem_gb = INFINITY;
    cr_assert_float_eq(bounds_gpu_mem_bytes(n, 4), 80e9, 1, "not finite: unknown");
    cr_assert_eq(bounds_gpu_mem_bytes(n, 0), 0);
}
