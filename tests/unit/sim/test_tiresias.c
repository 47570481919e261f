/* The tiresias baseline over whole runs: under the paper's extreme contention
 * (8 x 8 GPUs, ResNet-110 every 250 s) a job is preempted only when a job
 * ahead of it needs its GPUs, and never moved. Before it followed the
 * original it restarted jobs 4,192 times (206 jobs, seed 1). */
#include <criterion/criterion.h>

#include "options.h"
#include "report.h"
#include "template.h"
#include "workload.h"

Test(tiresias_sim, few_restarts_and_no_migration_under_contention, .timeout = 60)
{
    struct template r;
    struct options_cluster c;
    struct report_params prm = {.interval_s = 60,
                                .resize_cost_s = 10,
                                .seed = 1,
                                .min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S};
    struct report_row row;
    char err[256];

    cr_assert_eq(template_get("resnet110", &r, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&r, 1, 250, 206, 1, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(options_cluster_parse("8x8", &c, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(report_run(w, &c, sched_policy_find("tiresias"), &prm, &row, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_lt(row.result->resizes, 206, "%ld restarts for 206 jobs", row.result->resizes);
    cr_assert_eq(row.result->migrations, 0);
    report_row_clear(&row);
    options_cluster_free(&c);
    workload_destroy(w);
}
