/* Users in the simulator: the trace's user column, synthetic users
 * (--users, --user-mix), fair shares through the core, and the
 * finish-time-fairness figure of the report. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "report.h"
#include "template.h"
#include "workload.h"

static struct workload *poisson(double mean, size_t n, uint64_t seed)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&t, 1, mean, n, seed, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    return w;
}

Test(users, the_trace_user_column_numbers_users_by_first_appearance)
{
    const char *csv = "job_id,submit_time_s,num_gpus,duration_s,user\n"
                      "a,0,1,100,alice\n"
                      "b,10,1,100,bob\n"
                      "c,20,1,100,alice\n"
                      "d,30,1,100,\n";
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0);
    struct workload_trace_opts o = {0};
    FILE *in = fmemopen((void *)csv, strlen(csv), "r");
    struct workload *w = workload_trace_read(in, "t", &o, &t, 64, NULL, err, sizeof(err));
    fclose(in);
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->jobs[0].user, 1);
    cr_assert_eq(w->jobs[1].user, 2);
    cr_assert_eq(w->jobs[2].user, 1);
    cr_assert_eq(w->jobs[3].user, 0, "no name: no user");
    /* --users gives only the job without a user one. */
    cr_assert_eq(workload_assign_users(w, 3, NULL, 0, 1), 0);
    cr_assert_eq(w->jobs[0].user, 1);
    cr_assert_eq(w->jobs[3].user, 1);
    workload_destroy(w);
}

Test(users, round_robin_and_mix)
{
    struct workload *w = poisson(100, 1100, 1);
    cr_assert_eq(workload_assign_users(w, 2, NULL, 0, 1), 0);
    cr_assert_eq(w->jobs[0].user, 1);
    cr_assert_eq(w->jobs[1].user, 2);
    cr_assert_eq(w->jobs[2].user, 1);
    for (size_t i = 0; i < w->njobs; i++)
        w->jobs[i].user = 0;
    const double mix[] = {10, 1};
    cr_assert_eq(workload_assign_users(w, 2, mix, 2, 1), 0);
    size_t heavy = 0;
    for (size_t i = 0; i < w->njobs; i++)
        heavy += w->jobs[i].user == 1;
    cr_assert(heavy > 900 && heavy < 1060, "user 1 got %zu of 1100 jobs", heavy);
    cr_assert_eq(workload_assign_users(w, 3, mix, 2, 1), -1);
    int64_t ids[4];
    cr_assert_eq(workload_users(w, ids, 4), 2);
    workload_destroy(w);
}

Test(users, subcluster_takes_the_first_nodes)
{
    struct options_cluster c, s;
    cr_assert_eq(options_cluster_make(&c, 8, 8), 0);
    cr_assert_eq(report_subcluster(&c, 20, &s), 0);
    cr_assert_eq(s.total_gpus, 20);
    cr_assert_eq(s.nnodes, 3);
    cr_assert_eq(s.nodes[2].ngpus, 4);
    options_cluster_free(&s);
    options_cluster_free(&c);
}

/* The light user's mean JCT against its own alone on half the cluster. */
static double light_ratio(const char *policy, double max_wait)
{
    struct workload *w = poisson(250, 120, 2);
    const double mix[] = {10, 1};
    cr_assert_eq(workload_assign_users(w, 2, mix, 2, 3), 0);
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 8, 8), 0);
    struct report_params prm = {.interval_s = 60, .resize_cost_s = 10, .seed = 1,
                                .min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S,
                                .max_wait_s = max_wait};
    struct report_row row;
    char err[256];
    cr_assert_eq(report_run(w, &c, sched_policy_find(policy), &prm, &row, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert(!isnan(row.fairness));
    double f = row.fairness;
    report_row_clear(&row);
    options_cluster_free(&c);
    workload_destroy(w);
    return f;
}

Test(users, fairness_is_reported_for_two_users)
{
    double f = light_ratio("fifo", 0);
    cr_assert_gt(f, 0.0);
}

Test(users, the_light_user_is_not_swamped_by_the_heavy_one)
{
    /* Jobs carry users, so the core's fair share applies to every policy:
     * the worst user is within 1.2x of its JCT alone on half the cluster. */
    double f = light_ratio("ringmaster", 3600);
    cr_assert_leq(f, 1.2, "fairness %f", f);
}
