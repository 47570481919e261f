/* The Pollux setting: the six applications as goodput jobs (speed fit, work, configurations),
 * the engine's truth against the measured runs, the workloads, and batches chosen by
 * ringmaster alone. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "pollux.h"
#include "pollux_apps.h"
#include "report.h"

TestSuite(pollux, .init = pollux_apps_load, .fini = pollux_apps_free);

Test(pollux, every_application_is_modelled_from_its_profile)
{
    static const double epochs[PROFILE_NAPPS] = {2, 100, 80, 90, 10, 50};
    for (size_t k = 0; k < PROFILE_NAPPS; k++) {
        const struct pollux_app *a = &pollux_apps[k];
        cr_expect_lt(a->fit_rel_rmse, 0.2, "%s: step times fitted within %.3f", a->name,
                     a->fit_rel_rmse);
        /* progress is counted at the smallest batch: its run trains the epochs in full */
        cr_expect_float_eq(a->work_epochs, epochs[k], 0.01 * epochs[k], "%s: %g epochs", a->name,
                           a->work_epochs);
        cr_expect_gt(a->nconfigs, 0);
        cr_expect_eq(a->grad.nepochs, (size_t)epochs[k]);
        for (size_t c = 0; c < a->nconfigs; c++) {
            const struct pollux_config *cf = &a->configs[c];
            cr_expect_leq(cf->jct_s, 12 * 3600.0 + 1e-6, "%s: %d GPUs", a->name, cf->gpus);
            cr_expect_geq(cf->batch, a->batch.init_batch);
            cr_expect_leq(cf->batch, a->batch.max_batch);
        }
    }
    /* the configurations of the paper's published workloads: BERT 6-16 GPUs at 384, YOLOv3 4
     * at 64, NCF 1 at 32768, ImageNet 24 at 3200 and 32 at 6400 */
    cr_expect_geq(pollux_apps[0].configs[0].gpus, 6);
    cr_expect_float_eq(pollux_apps[0].configs[0].batch, 384, 1e-9);
    cr_expect_eq(pollux_apps[5].nconfigs, 1);
    cr_expect_eq(pollux_apps[5].configs[0].gpus, 4);
    cr_expect_float_eq(pollux_apps[5].configs[0].batch, 64, 1e-9);
    cr_expect_eq(pollux_apps[4].configs[0].gpus, 1);
    cr_expect_float_eq(pollux_apps[4].configs[0].batch, 32768, 1e-9);
    int has24 = 0, has32 = 0;
    for (size_t c = 0; c < pollux_apps[3].nconfigs; c++) {
        has24 |= pollux_apps[3].configs[c].gpus == 24 && pollux_apps[3].configs[c].batch == 3200;
        has32 |= pollux_apps[3].configs[c].gpus == 32 && pollux_apps[3].configs[c].batch == 6400;
    }
    cr_expect(has24 && has32);
}

/* One job alone under fifo (its requested GPUs, its batch): the engine's time to finish is
 * the validation run's steps at that batch times the step time (pollux_app_jct), since its
 * statistics reproduce that run's progress per step: within 8 %, because an epoch's
 * statistics trail the progress its run made (cifar10 at 2048 and 4096: 5-7 % more steps;
 * Pollux's simulator reads the same statistics). */
Test(pollux, a_job_alone_takes_as_long_as_its_measured_run)
{
    static const struct {
        size_t app;
        int gpus;
        double batch;
    } cases[] = {{1, 4, 2048}, {1, 8, 4096}, {2, 8, 320}, {4, 1, 4096}, {0, 12, 384}};
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 16, 4), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct pollux_app *a = &pollux_apps[cases[i].app];
        struct pollux_config cf = {cases[i].gpus, cases[i].batch, 0};
        struct simulate_job_spec j = {0};
        /* built as the workload builds its jobs */
        struct workload w = {.jobs = &j, .njobs = 1};
        snprintf(w.name, sizeof(w.name), "alone");
        j.id = 16 + (int64_t)cases[i].app;
        j.requested_gpus = cf.gpus;
        j.min_gpus = j.max_gpus = cf.gpus;
        j.epochs = a->work_epochs;
        j.speed = a->speed;
        j.batch = a->batch;
        j.batch.batch = cf.batch;
        j.grad = &a->grad;
        struct report_params prm = {.interval_s = 60, .resize_cost_s = 30};
        struct report_row row = {0};
        char err[256];
        cr_assert_eq(report_run(&w, &c, sched_policy_find("fifo"), &prm, &row, err, sizeof(err)), 0,
                     "%s", err);
        double want = pollux_app_jct(a, cf.gpus, cf.batch);
        cr_expect_float_eq(row.result->jobs[0].jct_s, want, 0.08 * want,
                           "%s on %d GPUs at %g: %.0f s, the run says %.0f s", a->name, cf.gpus,
                           cf.batch, row.result->jobs[0].jct_s, want);
        report_row_clear(&row);
    }
    options_cluster_free(&c);
}

Test(pollux, a_workload_follows_the_papers_recipe)
{
    char trace[1024], err[256];
    pollux_default_trace(trace, sizeof(trace));
    struct pollux_opts o = {
        .jobs = 160, .start_s = 7200, .window_s = 28800, .seed = 3, .cluster_gpus = 64};
    struct workload *w = pollux_workload(trace, pollux_apps, &o, err, sizeof(err));
    cr_assert(w, "%s", err);
    cr_assert_eq(w->njobs, 160);
    size_t count[PROFILE_NAPPS] = {0};
    for (size_t i = 0; i < w->njobs; i++) {
        const struct simulate_job_spec *j = &w->jobs[i];
        cr_expect_geq(j->submit_time, 0);
        cr_expect_lt(j->submit_time, 28800);
        if (i)
            cr_expect_geq(j->submit_time, w->jobs[i - 1].submit_time);
        count[j->id % 16]++;
        cr_expect_eq(j->batch.adaptive, 0);
        cr_expect(j->grad);
        cr_expect_leq(j->requested_gpus, j->max_gpus);
    }
    /* most jobs are small (cifar10, ncf), a few are imagenet */
    cr_expect_gt(count[1] + count[4], 80, "%zu small jobs", count[1] + count[4]);
    cr_expect_lt(count[3], 16, "%zu imagenet jobs", count[3]);
    /* same seed, same workload */
    struct workload *again = pollux_workload(trace, pollux_apps, &o, err, sizeof(err));
    cr_assert(again);
    cr_expect_eq(memcmp(again->jobs, w->jobs, w->njobs * sizeof(*w->jobs)), 0);
    workload_destroy(again);
    workload_destroy(w);
}

/* A workload file in the Pollux artifact's format (simulator/workloads/workload-N.csv). */
static struct workload *read_csv(const char *text, int adaptive, char *err, size_t errlen)
{
    char path[] = "/tmp/rm-pollux-csv-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    struct pollux_opts o = {.seed = 1, .adaptive = adaptive, .cluster_gpus = 64};
    struct workload *w = pollux_workload_csv(path, pollux_apps, &o, err, errlen);
    unlink(path);
    return w;
}

Test(pollux, the_artifacts_workload_files_are_read_as_they_are)
{
    char err[256];
    struct workload *w = read_csv("name,time,application,num_replicas,batch_size\n"
                                  "imagenet-1,1604,imagenet,32,6400\n"
                                  "cifar10-0,107,cifar10,6,2048\n"
                                  "ncf-2,135,ncf,1,32768\n",
                                  1, err, sizeof(err));
    cr_assert(w, "%s", err);
    cr_assert_eq(w->njobs, 3);
    const struct simulate_job_spec *c = &w->jobs[0], *n = &w->jobs[1], *i = &w->jobs[2];
    cr_expect_str_eq(pollux_job_app(c), "cifar10", "sorted by submission");
    cr_expect_float_eq(c->submit_time, 107, 1e-9);
    cr_expect_eq(c->requested_gpus, 6);
    cr_expect_float_eq(c->batch.batch, 2048, 1e-9);
    cr_expect_eq(c->batch.adaptive, 1);
    cr_expect_str_eq(pollux_job_app(n), "ncf");
    cr_expect_str_eq(pollux_job_app(i), "imagenet");
    cr_expect_eq(i->requested_gpus, 32);
    cr_expect_float_eq(i->batch.batch, 6400, 1e-9);
    workload_destroy(w);

    cr_expect_null(read_csv("name,time,app\n", 0, err, sizeof(err)));
    cr_expect(strstr(err, "header"), "%s", err);
    cr_expect_null(read_csv("name,time,application,num_replicas,batch_size\n"
                            "cifar10-0,107,cifar10,6,2048\n"
                            "gpt-1,200,gpt,8,512\n",
                            0, err, sizeof(err)));
    cr_expect(strstr(err, ":3:"), "the line is named: %s", err);
    cr_expect_null(
        read_csv("name,time,application,num_replicas,batch_size\n", 0, err, sizeof(err)));
    cr_expect(strstr(err, "no job"), "%s", err);
}

static double mean_jct(const char *policy, int adaptive, uint64_t seed)
{
    char trace[1024], err[256];
    pollux_default_trace(trace, sizeof(trace));
    struct pollux_opts o = {.jobs = 160,
                            .start_s = 7200,
                            .window_s = 28800,
                            .seed = seed,
                            .adaptive = adaptive,
                            .cluster_gpus = 64};
    struct workload *w = pollux_workload(trace, pollux_apps, &o, err, sizeof(err));
    cr_assert(w, "%s", err);
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 16, 4), 0);
    struct report_params prm = {.interval_s = 60,
                                .resize_cost_s = 30,
                                .seed = seed,
                                .min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S};
    struct report_row row = {0};
    cr_assert_eq(report_run(w, &c, sched_policy_find(policy), &prm, &row, err, sizeof(err)), 0,
                 "%s: %s", policy, err);
    double m = row.result->avg_jct_s;
    report_row_clear(&row);
    options_cluster_free(&c);
    workload_destroy(w);
    return m;
}

Test(pollux, ringmaster_gains_from_adaptive_batches_and_the_baselines_ignore_them)
{
    double fixed = mean_jct("ringmaster", 0, 2), adaptive = mean_jct("ringmaster", 1, 2);
    cr_expect_lt(adaptive, 0.85 * fixed, "adaptive %.0f s, fixed %.0f s", adaptive, fixed);
    const char *baselines[] = {"tiresias", "precompute"};
    for (size_t i = 0; i < 2; i++)
        cr_expect_float_eq(mean_jct(baselines[i], 1, 2), mean_jct(baselines[i], 0, 2), 1e-6,
                           "%s runs every job at its own batch", baselines[i]);
}
