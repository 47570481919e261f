/* Heterogeneous clusters in the simulator: the GPU types of --cluster, the jobs of
 * shared/profiles-hetero (loaded by header, one true model per type) and the engine running
 * each job at its type's measured speed; the Pollux recipe on the 64-GPU mixed cluster. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "pollux.h"
#include "report.h"

enum { T_AWS, T_RTX, T_QUAD, T_DGX };

static int have_hetero(void)
{
    return access("../shared/profiles-hetero/bert/placements-aws.csv", R_OK) == 0 ||
           getenv("RINGMASTER_SHARED_DIR");
}

Test(hetero, cluster_names_gpu_types)
{
    struct options_cluster c;
    char err[256];
    cr_assert_eq(options_cluster_parse("6x4:t4,3x8:rtx,2x8:a100", &c, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_eq(c.nnodes, 11);
    cr_assert_eq(c.total_gpus, 64);
    cr_assert_eq(c.nodes[0].ngpus, 4);
    cr_assert_eq(c.nodes[0].gpu_model, 4);
    cr_assert_float_eq(c.nodes[0].gpu_speed, 0.4, 1e-12);
    cr_assert_eq(c.nodes[6].ngpus, 8);
    cr_assert_eq(c.nodes[6].gpu_model, 5);
    cr_assert_float_eq(c.nodes[6].gpu_speed, 0.8, 1e-12);
    cr_assert_float_eq(c.nodes[6].gpu_mem_gb, 11, 1e-12);
    cr_assert_eq(c.nodes[9].gpu_model, 2);
    options_cluster_free(&c);
    /* the profiles' names are the same types */
    cr_assert_eq(options_cluster_parse("1x4:aws,1x8:dgx-ext,1x4:quad", &c, err, sizeof(err)), 0);
    cr_assert_eq(c.nodes[0].gpu_model, 4);
    cr_assert_eq(c.nodes[1].gpu_model, 2);
    cr_assert_float_eq(c.nodes[1].gpu_speed, 2.0, 1e-12);
    cr_assert_eq(c.nodes[2].gpu_model, 6);
    options_cluster_free(&c);
    /* homogeneous syntax unchanged: no model, factor 0 (the reference) */
    cr_assert_eq(options_cluster_parse("16x4", &c, err, sizeof(err)), 0);
    cr_assert_eq(c.nodes[3].gpu_model, 0);
    cr_assert_float_eq(c.nodes[3].gpu_speed, 0.0, 1e-12);
    options_cluster_free(&c);
    cr_assert_neq(options_cluster_parse("2x4:k80", &c, err, sizeof(err)), 0);
    cr_assert(strstr(err, "rtx") && strstr(err, "dgx-ext"), "%s", err);
}

Test(hetero, loader_reads_each_type_by_header)
{
    if (!have_hetero())
        cr_skip_test("no shared/profiles-hetero");
    char err[256];
    /* placements-dgx-ext.csv is local_bsz,step_time,sync_time,placement */
    struct profile *p = profile_load_type("bert", "dgx-ext", err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    cr_assert_gt(p->placements.n, 0);
    cr_assert_gt(p->scalability.n, 0);
    cr_assert_eq(p->placements.w[0], 1);
    cr_assert_eq(p->placements.nodes[0], 1);
    cr_assert_eq(p->placements.local_bsz[0], 4);
    cr_assert_float_eq(p->placements.step_time[0], 0.14855386316776276, 1e-12);
    cr_assert_float_eq(p->placements.sync_time[0], 0.003084479987621307, 1e-12);
    for (size_t i = 0; i < p->scalability.n; i++)
        cr_assert(p->scalability.w[i] >= p->scalability.nodes[i] && p->scalability.step_time[i] > 0);
    profile_destroy(p);
    /* the aws rows are those of shared/profiles */
    struct profile *a = profile_load_type("yolov3", "aws", err, sizeof(err));
    struct profile *h = profile_load("yolov3", err, sizeof(err));
    cr_assert(a && h, "%s", err);
    cr_assert_eq(a->placements.n, h->placements.n);
    for (size_t i = 0; i < a->placements.n; i++) {
        cr_assert_eq(a->placements.w[i], h->placements.w[i]);
        cr_assert_eq(a->placements.nodes[i], h->placements.nodes[i]);
        cr_assert_eq(a->placements.step_time[i], h->placements.step_time[i]);
    }
    cr_assert_eq(a->scalability.n, h->scalability.n);
    profile_destroy(a);
    profile_destroy(h);
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        for (size_t t = 0; t < PROFILE_NTYPES; t++) {
            p = profile_load_type(profile_app_name(k), profile_type_name(t), err, sizeof(err));
            cr_assert_not_null(p, "%s", err);
            profile_destroy(p);
        }
    cr_assert_null(profile_load_type("bert", "k80", err, sizeof(err)));
    cr_assert_null(profile_load_type("../x", "aws", err, sizeof(err)));
}

static void load(struct pollux_app *a, const char *name)
{
    char err[256];
    cr_assert_eq(pollux_app_load(name, a, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(pollux_load_types(a, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(a->ntypes, PROFILE_NTYPES);
}

/* One job of app a alone on cluster, gpus GPUs at global batch batch, fixed: its JCT. */
static double alone_jct(const struct pollux_app *a, const char *cluster, int gpus, double batch,
                        int show)
{
    struct options_cluster c;
    char err[256];
    cr_assert_eq(options_cluster_parse(cluster, &c, err, sizeof(err)), 0, "%s", err);
    struct simulate_job_spec j = {.id = 16, .requested_gpus = gpus, .min_gpus = gpus,
                                  .max_gpus = gpus, .epochs = a->work_epochs / 10,
                                  .speed = a->ref_speed, .batch = a->batch, .grad = &a->grad,
                                  .types = a->types, .ntypes = a->ntypes};
    j.batch.batch = batch;
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find("ringmaster");
    cfg.show_type_speeds = show;
    struct simulate_result *r = simulate_run(&cfg, &j, 1, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    double jct = r->avg_jct_s;
    simulate_result_destroy(r);
    options_cluster_free(&c);
    return jct;
}

Test(hetero, each_type_runs_at_its_measured_speed)
{
    if (!have_hetero())
        cr_skip_test("no shared/profiles-hetero");
    static struct pollux_app yolo, bert;
    load(&yolo, "yolov3");
    load(&bert, "bert");
    /* each type's largest local batch is what it measured */
    cr_assert_float_eq(yolo.types[T_RTX].max_local, 8, 1e-12);
    cr_assert_float_eq(yolo.types[T_AWS].max_local, 16, 1e-12);
    cr_assert_float_eq(bert.types[T_DGX].max_local, 48, 1e-12);
    for (size_t t = 0; t < PROFILE_NTYPES; t++) {
        cr_log_info("fit of %s rows: yolov3 %.3f, bert %.3f", profile_type_name(t),
                    yolo.type_rel_rmse[t], bert.type_rel_rmse[t]);
        cr_expect_lt(yolo.type_rel_rmse[t], 0.3, "yolov3 %zu: %g", t, yolo.type_rel_rmse[t]);
        cr_expect_lt(bert.type_rel_rmse[t], 0.3, "bert %zu: %g", t, bert.type_rel_rmse[t]);
    }
    /* the models: yolov3 slower on a 2080Ti than on a T4 (0.591 s against 0.326 s at 8 a
     * GPU), bert 5.2x faster on an A100 (0.163 s against 0.855 s at 11) */
    double y_t4 = speed_step_time_placed(&yolo.types[T_AWS].speed, 1, 1, 8);
    double y_rtx = speed_step_time_placed(&yolo.types[T_RTX].speed, 1, 1, 8);
    cr_assert_float_eq(y_rtx / y_t4, 0.591 / 0.326, 0.25);
    double b_t4 = speed_step_time_placed(&bert.types[T_AWS].speed, 1, 1, 11);
    double b_a100 = speed_step_time_placed(&bert.types[T_DGX].speed, 1, 1, 11);
    cr_assert_float_eq(b_t4 / b_a100, 5.24, 1.0);
    /* the engine: a 4-GPU yolov3 job takes longer on rtx than on t4; bert far less on a100 */
    double jy_t4 = alone_jct(&yolo, "1x4:t4", 4, 64, 0);
    double jy_rtx = alone_jct(&yolo, "1x8:rtx", 4, 64, 0);
    cr_assert_gt(jy_rtx, 1.3 * jy_t4, "yolov3: %.0f s on rtx, %.0f s on t4", jy_rtx, jy_t4);
    double jb_t4 = alone_jct(&bert, "1x4:t4", 4, 384, 0);
    double jb_a100 = alone_jct(&bert, "1x8:a100", 4, 384, 0);
    cr_assert_lt(jb_a100, jb_t4 / 2.5, "bert: %.0f s on a100, %.0f s on t4", jb_a100, jb_t4);
    /* the truth does not depend on what the policy is shown */
    cr_assert_float_eq(alone_jct(&yolo, "1x8:rtx", 4, 64, 1), jy_rtx, 1e-6 * jy_rtx);
    pollux_app_free(&yolo);
    pollux_app_free(&bert);
}

Test(hetero, pollux_recipe_runs_on_the_mixed_cluster, .timeout = 120)
{
    if (!have_hetero())
        cr_skip_test("no shared/profiles-hetero");
    static struct pollux_app apps[PROFILE_NAPPS];
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        load(&apps[k], profile_app_name(k));
    char trace[1024], err[256];
    pollux_default_trace(trace, sizeof(trace));
    struct options_cluster c;
    cr_assert_eq(options_cluster_parse(POLLUX_HETERO_CLUSTER, &c, err, sizeof(err)), 0);
    struct pollux_opts o = {.jobs = 160, .start_s = 7200, .window_s = 28800, .seed = 1,
                            .cluster_gpus = 24, .hetero = 1};
    struct workload *w = pollux_workload(trace, apps, &o, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->jobs[0].ntypes, PROFILE_NTYPES);
    for (size_t k = 0; k < w->njobs; k++)
        cr_assert_leq(w->jobs[k].requested_gpus, 24, "a job's GPUs are of one type");
    double jct[2];
    for (int show = 0; show < 2; show++) {
        struct report_params prm = {.interval_s = 60, .resize_cost_s = 30, .seed = 1,
                                    .min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S,
                                    .show_type_speeds = show};
        struct report_row row;
        cr_assert_eq(report_run(w, &c, sched_policy_find("ringmaster"), &prm, &row, err,
                                sizeof(err)),
                     0, "%s", err);
        cr_assert_eq(row.result->njobs, w->njobs);
        jct[show] = row.result->avg_jct_s;
        report_row_clear(&row);
    }
    /* choosing each job's type from its own model beats the one factor per type */
    cr_assert_lt(jct[1], jct[0], "per-type %.0f s, factor %.0f s", jct[1], jct[0]);
    workload_destroy(w);
    options_cluster_free(&c);
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        pollux_app_free(&apps[k]);
}

/* What the policies saw of the jobs' speeds over a --speed live run. */
struct seen {
    long jobs, no_model, measured, estimated, two_types, oracle;
};

static void count_seen(const struct sched_snapshot *snap, const struct sched_decision *d,
                       void *arg)
{
    struct seen *s = arg;
    (void)d;
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        int measured = 0;
        s->jobs++;
        s->no_model += j->model_source == SCHED_MODEL_NONE && j->ntype_speeds == 0;
        for (size_t k = 0; k < j->ntype_speeds; k++) {
            measured += j->type_speeds[k].source == SCHED_TYPE_MEASURED;
            s->estimated += j->type_speeds[k].source == SCHED_TYPE_ESTIMATED;
            s->oracle += j->type_speeds[k].source == SCHED_TYPE_GIVEN;
        }
        s->measured += measured > 0;
        s->two_types += measured >= 2;
    }
}

/* --speed live: the policies start with no model, learn each job per type from the steps the
 * engine reports (MEASURED entries, ESTIMATED ones for the types a job has not run on), never
 * see the oracle's models, and the run finishes every job. */
Test(hetero, speed_live_learns_each_job_per_type_and_finishes, .timeout = 120)
{
    if (!have_hetero())
        cr_skip_test("no shared/profiles-hetero");
    static struct pollux_app apps[PROFILE_NAPPS];
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        load(&apps[k], profile_app_name(k));
    char trace[1024], err[256];
    pollux_default_trace(trace, sizeof(trace));
    struct options_cluster c;
    cr_assert_eq(options_cluster_parse(POLLUX_HETERO_CLUSTER, &c, err, sizeof(err)), 0);
    struct pollux_opts o = {.jobs = 40, .start_s = 7200, .window_s = 28800, .seed = 1,
                            .cluster_gpus = 24, .hetero = 1};
    struct workload *w = pollux_workload(trace, apps, &o, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find("ringmaster");
    cfg.resize_cost_s = 30;
    cfg.speed_live = 1;
    cfg.show_type_speeds = 1; /* ignored under speed_live */
    struct seen s = {0};
    struct simulate_result *r = simulate_run(&cfg, w->jobs, w->njobs, count_seen, &s, err,
                                             sizeof(err));
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(r->njobs, w->njobs);
    for (size_t k = 0; k < r->njobs; k++)
        cr_assert_gt(r->jobs[k].finish_time, r->jobs[k].start_time);
    cr_assert_gt(s.no_model, 0, "jobs start without a model");
    cr_assert_gt(s.measured, 0, "jobs are measured on the types they run on");
    cr_assert_gt(s.estimated, 0, "types a job has not run on are estimated");
    cr_assert_gt(s.two_types, 0, "some jobs are measured on two types");
    cr_assert_eq(s.oracle, 0, "the oracle's models are never shown");
    cr_assert(r->idle_wanted_frac >= 0 && r->idle_wanted_frac <= 1, "%g", r->idle_wanted_frac);
    simulate_result_destroy(r);
    workload_destroy(w);
    options_cluster_free(&c);
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        pollux_app_free(&apps[k]);
}
