/* The forecasts checked inside a run (calib.h): made every period, scored at the end; with
 * nothing unknown (no estimate error, no spread) a running job's finish forecast is the
 * truth, and a wide spread puts more truths under the P90 than a narrow one when the
 * estimates are off. */
#include <criterion/criterion.h>
#include <math.h>

#include "calib.h"
#include "options.h"
#include "report.h"
#include "template.h"
#include "workload.h"

static struct report_row run_with(const char *policy, double est_error, double spread,
                                  double arrivals_s)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&t, 1, 400, 24, 5, 16, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 2, 8), 0);
    struct report_params prm = {.interval_s = 60,
                                .resize_cost_s = 10,
                                .seed = 1,
                                .min_resize_interval_s = 300,
                                .estimate_error = est_error,
                                .forecast_every_s = 1800,
                                .forecast_runs = 4,
                                .forecast_spread = spread,
                                .forecast_arrivals_s = arrivals_s};
    struct report_row row;
    cr_assert_eq(report_run(w, &c, sched_policy_find(policy), &prm, &row, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert(row.has_calib);
    options_cluster_free(&c);
    workload_destroy(w);
    return row;
}

static struct report_row run(const char *policy, double est_error, double spread)
{
    return run_with(policy, est_error, spread, 0);
}

static long total(const struct calib_cell *c, long *within)
{
    long n = 0;
    *within = 0;
    for (int k = 0; k < CALIB_BUCKETS; k++) {
        n += c[k].n;
        *within += c[k].within;
    }
    return n;
}

Test(calib, exact_knowledge_forecasts_the_finish)
{
    struct report_row row = run("fifo", 0, 0);
    cr_assert_gt(row.calib.forecasts, 2);
    long within, n = total(row.calib.finish, &within);
    cr_assert_gt(n, 10, "finishes scored: %ld", n);
    cr_assert_geq(within, n * 9 / 10, "%ld of %ld under the P90", within, n);
    cr_assert_lt(row.calib.finish[0].median_rel, 0.01, "no error to speak of near the end: %f",
                 row.calib.finish[0].median_rel);
    report_row_clear(&row);
}

Test(calib, the_spread_covers_the_estimate_error)
{
    struct report_row narrow = run("ringmaster", 1, 0.05), wide = run("ringmaster", 1, 1);
    long wn, ww;
    long nn = total(narrow.calib.finish, &wn), nw = total(wide.calib.finish, &ww);
    cr_assert(nn > 0 && nw > 0);
    cr_assert_gt((double)ww / nw, (double)wn / nn + 0.1, "wide %ld/%ld, narrow %ld/%ld", ww, nw, wn,
                 nn);
    report_row_clear(&narrow);
    report_row_clear(&wide);
}

/* Expecting the recent past again (the arrivals of the last 2 h) makes the forecasts of
 * starts later, never earlier, than leaving arrivals out: the same run, other forecasts. */
Test(calib, expected_arrivals_delay_the_starts)
{
    struct report_row none = run_with("fifo", 0, 0, 0), some = run_with("fifo", 0, 0, 7200);
    long wn, ws;
    long nn = total(none.calib.start, &wn), ns = total(some.calib.start, &ws);
    cr_assert_eq(nn, ns, "the same starts are forecast: %ld, %ld", nn, ns);
    cr_assert_eq(none.result->avg_jct_s, some.result->avg_jct_s, "the run is the same");
    cr_assert_geq(ws, wn, "later forecasts put no fewer truths under the P90: %ld, %ld", ws, wn);
    report_row_clear(&none);
    report_row_clear(&some);
}

Test(calib, buckets)
{
    cr_assert_eq(calib_bucket(0), 0);
    cr_assert_eq(calib_bucket(599), 0);
    cr_assert_eq(calib_bucket(600), 1);
    cr_assert_eq(calib_bucket(3600), 2);
    cr_assert_eq(calib_bucket(4 * 3600), 3);
    cr_assert_str_eq(calib_bucket_name(2), "1-4h");
}
