/* Deadlines in the simulator: drawn as ElasticFlow's evaluation draws them (a share of the
 * jobs, submit + lambda x time alone at the request), counted met per run, shown to the
 * policies or hidden, and read by `decide` from a snapshot. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "decide_cmd.h"
#include "report.h"
#include "template.h"
#include "workload.h"

static struct workload *poisson(size_t n, double mean, uint64_t seed)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&t, 1, mean, n, seed, 16, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    return w;
}

Test(deadline_sim, drawn_for_a_share_within_lambda)
{
    struct workload *w = poisson(600, 300, 5), *again = poisson(600, 300, 5);
    workload_draw_deadlines(w, 0.33, REPORT_DEADLINE_LO, REPORT_DEADLINE_HI, 5);
    workload_draw_deadlines(again, 0.33, REPORT_DEADLINE_LO, REPORT_DEADLINE_HI, 5);
    size_t n = 0;
    double lo = 10, hi = 0;
    for (size_t i = 0; i < w->njobs; i++) {
        const struct simulate_job_spec *j = &w->jobs[i];
        cr_assert_eq(j->deadline, again->jobs[i].deadline, "same seed, same deadlines");
        if (!(j->deadline > 0))
            continue;
        n++;
        double alone = workload_time_alone(j), l = (j->deadline - j->submit_time) / alone;
        cr_assert_gt(alone, 0);
        lo = fmin(lo, l);
        hi = fmax(hi, l);
    }
    cr_assert(n > 150 && n < 250, "about a third: %zu of 600", n);
    cr_assert(lo >= 0.5 - 1e-9 && lo < 0.6 && hi <= 1.5 + 1e-9 && hi > 1.4, "lambda %f..%f", lo,
              hi);
    workload_draw_deadlines(again, 0, REPORT_DEADLINE_LO, REPORT_DEADLINE_HI, 5);
    for (size_t i = 0; i < again->njobs; i++)
        cr_assert_eq(again->jobs[i].deadline, 0, "share 0: none");
    workload_destroy(w);
    workload_destroy(again);
}

static void run(const struct workload *w, const char *policy, int hide, struct report_row *row)
{
    struct options_cluster c;
    char err[256];
    cr_assert_eq(options_cluster_make(&c, 2, 8), 0);
    struct report_params prm = {.interval_s = 60,
                                .resize_cost_s = 10,
                                .seed = 1,
                                .min_resize_interval_s = 300,
                                .hide_deadlines = hide};
    cr_assert_eq(report_run(w, &c, sched_policy_find(policy), &prm, row, err, sizeof(err)), 0, "%s",
                 err);
    options_cluster_free(&c);
}

/* Counted as the jobs' own figures say; ringmaster meets more once it sees them, and at
 * least as many as tiresias, which never looks; edf too. */
Test(deadline_sim, met_counted_and_ringmaster_uses_them, .timeout = 60)
{
    struct workload *w = poisson(60, 600, 3);
    workload_draw_deadlines(w, 0.5, REPORT_DEADLINE_LO, REPORT_DEADLINE_HI, 3);
    struct report_row shown, hidden, tiresias, edf;
    run(w, "ringmaster", 0, &shown);
    run(w, "ringmaster", 1, &hidden);
    run(w, "tiresias", 0, &tiresias);
    run(w, "edf", 0, &edf);
    long n = 0, met = 0;
    for (size_t i = 0; i < w->njobs; i++) {
        const struct simulate_job_result *j = &shown.result->jobs[i];
        cr_assert_eq(j->deadline, w->jobs[i].deadline);
        n += j->deadline > 0;
        met += j->deadline > 0 && j->finish_time <= j->deadline;
        cr_assert_eq(j->deadline_met, j->deadline > 0 && j->finish_time <= j->deadline);
    }
    cr_assert_eq(shown.result->deadlines, n);
    cr_assert_eq(shown.result->deadlines_met, met);
    cr_assert_eq(hidden.result->deadlines, n, "hidden: still counted");
    cr_assert_gt(shown.result->deadlines_met, hidden.result->deadlines_met, "%ld vs %ld hidden",
                 shown.result->deadlines_met, hidden.result->deadlines_met);
    cr_assert_geq(shown.result->deadlines_met, tiresias.result->deadlines_met);
    cr_assert_geq(shown.result->deadlines_met, edf.result->deadlines_met);
    cr_assert_gt(shown.result->avg_jct_other_s, 0);
    report_row_clear(&shown);
    report_row_clear(&hidden);
    report_row_clear(&tiresias);
    report_row_clear(&edf);
    workload_destroy(w);
}

Test(deadline_sim, decide_reads_a_jobs_deadline)
{
    static const char snap[] =
        "{\"now\": 1000, \"policy\": \"edf\", \"nodes\": [{\"id\": 1, \"gpus\": 4}],"
        " \"jobs\": [{\"id\": 1, \"requested_gpus\": 4, \"submit_time\": 0},"
        " {\"id\": 2, \"requested_gpus\": 4, \"submit_time\": 10, \"deadline\": 5000}]}";
    char *out = NULL, err[256];
    cr_assert_eq(decide_cmd_json(snap, strlen(snap), NULL, &out, err, sizeof(err)), 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    json_t *jobs = json_object_get(d, "jobs");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 0), "gpus")), 0);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 1), "gpus")), 4,
                 "the job with a deadline first");
    json_decref(d);
    free(out);
    char bad[sizeof(snap) + 8];
    snprintf(bad, sizeof(bad), "%s", snap);
    memcpy(strstr(bad, "5000"), "-500", 4);
    errno = 0;
    cr_assert_eq(decide_cmd_json(bad, strlen(bad), NULL, &out, err, sizeof(err)), -1);
    cr_assert(strstr(err, "deadline"), "%s", err);
}
