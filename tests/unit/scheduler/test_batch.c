/* batch: the global batch a batch-model job runs at after a round and its learning-rate
 * factor (batch.h). */
#include <math.h>

#include "batch.h"
#include "sched_fixture.h"

Test(batch, the_decided_batch_within_its_range_and_one_per_gpu)
{
    struct batch_spec none = {0};
    struct batch_spec b = {.init_batch = 256, .batch = 512, .max_batch = 2048};
    cr_assert_eq(batch_after_round(&none, 1024, 4), 0, "no batch model");
    cr_assert_eq(batch_after_round(&b, 1024.4, 4), 1024, "rounded");
    cr_assert_eq(batch_after_round(&b, 0, 4), 512, "none decided: its own");
    cr_assert_eq(batch_after_round(&b, NAN, 4), 512);
    cr_assert_eq(batch_after_round(&b, 100, 4), 256, "at least its initial batch");
    cr_assert_eq(batch_after_round(&b, 1e6, 4), 2048, "at most its largest");
    b.batch = 0;
    cr_assert_eq(batch_after_round(&b, 0, 4), 256, "no batch now: its initial one");
    b.max_batch = 0;
    cr_assert_eq(batch_after_round(&b, 1e6, 4), 256, "no larger batch than the initial");
    cr_assert_eq(batch_after_round(&b, 0, 300), 300, "one example per GPU");
}

Test(batch, the_learning_rate_scales_as_the_job_declares)
{
    cr_assert_float_eq(batch_lr_scale(BATCH_LR_SQRT, 1024, 256), 2, 1e-12);
    cr_assert_float_eq(batch_lr_scale(BATCH_LR_SQRT, 256, 256), 1, 1e-12);
    cr_assert_float_eq(batch_lr_scale(BATCH_LR_LINEAR, 1024, 256), 4, 1e-12);
    cr_assert_float_eq(batch_lr_scale(BATCH_LR_NONE, 1024, 256), 1, 1e-12);
    cr_assert_float_eq(batch_lr_scale(BATCH_LR_LINEAR, 1024, 0), 1, 1e-12, "no initial batch");
    enum batch_lr_scaling r = BATCH_LR_SQRT;
    for (int k = 0; k < BATCH_LR_NRULES; k++) {
        cr_assert_eq(batch_lr_scaling_parse(batch_lr_scaling_name(k), &r), 0);
        cr_assert_eq(r, k);
    }
    cr_assert_eq(batch_lr_scaling_parse("cubic", &r), -1);
    cr_assert_eq(batch_lr_scaling_parse(NULL, &r), -1);
    cr_assert_eq(r, BATCH_LR_NONE, "a failed parse changes nothing");
    cr_assert_str_eq(batch_lr_scaling_name(99), "sqrt");
}
