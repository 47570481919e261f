/* Goodput live (issue 18): a real ringmasterd, a real ringmaster-worker with two simulated
 * GPUs and real `mpirun ... train-mlp` jobs. An adaptive-batch job (batch 16, up to 256)
 * explores 1 and 2 GPUs at its initial batch and reports its gradient statistics; a second
 * job takes one of its GPUs, and when that one ends the ringmaster policy gives it both GPUs
 * again at the batch of best goodput there: the resize carries a new global batch and the
 * square-root learning rate, which the job runs (train-mlp prints them), its loss goes on
 * falling, and the step time the goodput model predicted for that batch and those GPUs (the
 * action's "goodput") is held against the step times the job then reports.
 *
 * The job's device time is emulated (1 ms per example, 8 ms of exchange a step on two
 * ranks): its compute per GPU then grows with its local batch and its exchange is fixed, the
 * shape that makes a larger batch worth more GPUs. Waits are on events, each bounded; no
 * count of resizes is asserted. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#define M0 16
/* The largest relative error of the predicted step time allowed: the fit has seen the job
 * at its initial batch only (its compute per example is then not told apart from its fixed
 * cost: it predicted 12-22 % short in six runs on a loaded 2-core machine), and the machine
 * is shared (the CPU time in the steps varies). */
#define STEP_TOLERANCE 0.4

static pid_t worker;
static char ckpt_root[64];

static void setup(void)
{
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-ckpt", NULL); /* the server inherits it */
    hx_setup();
    wt_scheduler("{\"policy\":\"ringmaster\",\"interval_s\":1,\"min_resize_interval_s\":0,"
                 "\"resize_cost_s\":0,\"grace_s\":30,\"explore_stage_s\":3}");
    worker = wt_spawn_worker("sim-a", 2);
}

static void teardown(void)
{
    if (wt_stop_worker(&worker) != 0)
        wt_dump_logs();
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

TestSuite(goodput_live, .init = setup, .fini = teardown, .timeout = 180);

/* Waits (polling, bounded) until the first cell of sql reaches at least want. */
static double await_num(const char *sql, double want, double timeout_s)
{
    double v = hx_sql_num(sql), end = hx_now() + timeout_s;
    while (!(v >= want) && hx_now() < end) {
        usleep(200000);
        v = hx_sql_num(sql);
    }
    return v;
}

static void dump_actions(long long job)
{
    char sql[300];
    snprintf(sql, sizeof(sql),
             "SELECT id, kind, state, spec->>'world_size', spec->>'batch', spec->>'lr_scale',"
             " spec->'goodput' FROM actions WHERE job_id = %lld ORDER BY id",
             job);
    PGresult *r = hx_sql(sql);
    for (int i = 0; i < PQntuples(r); i++) {
        for (int c = 0; c < PQnfields(r); c++)
            fprintf(stderr, "%s%s", c ? " | " : "action ", PQgetvalue(r, i, c));
        fputc('\n', stderr);
    }
    PQclear(r);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of column 0 of r's rows from..n-1. */
static double median_from(PGresult *r, int from)
{
    int n = PQntuples(r) - from;
    double *v = calloc((size_t)(n > 0 ? n : 1), sizeof(*v));
    cr_assert_not_null(v);
    for (int i = 0; i < n; i++)
        v[i] = strtod(PQgetvalue(r, from + i, 0), NULL);
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    double m = n > 0 ? v[n / 2] : NAN;
    free(v);
    return m;
}

/* Mean loss of the job's reports of steps (from, to] (any world size). */
static double mean_loss(long long job, long long from, long long to)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT avg(loss) FROM job_metrics WHERE job_id = %lld AND step > %lld"
             " AND step <= %lld",
             job, from, to);
    return hx_sql_num(sql);
}

Test(goodput_live, a_resize_hands_the_job_the_batch_of_best_goodput)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"adaptive\",\"command\":[\"%s\",\"--steps\",\"100000000\",\"--seed\","
             "\"1801\",\"--params\",\"4096\",\"--batch\",\"%d\",\"--sleep-us-per-sample\","
             "\"1000\",\"--sleep-us-allreduce\",\"8000\",\"--print-every\",\"100\"],"
             "\"gpus\":1,\"min_gpus\":1,\"max_gpus\":2,\"elastic\":true,\"batch\":%d,"
             "\"adaptive_batch\":{\"max\":256},\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, M0, M0);
    long long a = wt_post_job(body);
    wt_expect_state(a, "RUNNING", 60, wt_dump_logs);

    /* It explores 1 and 2 GPUs (3 s of steps each) at its initial batch, and reports its
     * gradient statistics. */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT COALESCE(sum(sum_seconds), 0) FROM job_metric_sums WHERE job_id = %lld"
             " AND world_size = 2",
             a);
    double explored = await_num(sql, 3.5, 60);
    if (explored < 3.5)
        dump_actions(a);
    cr_assert_geq(explored, 3.5, "it ran 3 s at two GPUs");
    json_t *j = wt_job(a);
    json_t *grad = json_object_get(j, "grad");
    cr_assert(json_number_value(json_object_get(grad, "sqr")) +
                      json_number_value(json_object_get(grad, "var")) >
                  0,
              "gradient statistics stored");
    cr_assert_eq(json_integer_value(json_object_get(j, "current_batch")), M0,
                 "explored at its initial batch");
    json_decref(j);

    /* A second job takes a GPU; once it ends, the first may have both again. */
    long long b = wt_submit_mlp(150, "\"gpus\":1", 1802);
    wt_expect_state(b, "COMPLETED", 90, wt_dump_logs);

    /* A resize to two GPUs at another batch, carried out, and 40 steps run there. */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2"
             " AND samples <> %d",
             a, M0);
    double ran = await_num(sql, 60, 60);
    if (ran < 60)
        dump_actions(a);
    cr_assert_geq(ran, 60, "it ran two GPUs at a new batch");
    snprintf(sql, sizeof(sql),
             "SELECT id, (spec->>'batch')::int, (spec->>'lr_scale')::float8,"
             " (spec->'goodput'->>'step_s')::float8, (spec->'goodput'->>'efficiency')::float8,"
             " kind FROM actions WHERE job_id = %lld AND state = 'done'"
             " AND spec->>'world_size' = '2' AND (spec->>'batch')::int <> %d"
             " ORDER BY id DESC LIMIT 1",
             a, M0);
    PGresult *r = hx_sql(sql);
    cr_assert_eq(PQntuples(r), 1, "the resize that carried the new batch");
    long long action = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    long batch = strtol(PQgetvalue(r, 0, 1), NULL, 10);
    double lr_scale = strtod(PQgetvalue(r, 0, 2), NULL);
    double predicted = strtod(PQgetvalue(r, 0, 3), NULL);
    double efficiency = strtod(PQgetvalue(r, 0, 4), NULL);
    cr_assert_str_eq(PQgetvalue(r, 0, 5), "resize");
    PQclear(r);
    cr_assert(batch > M0 && batch <= 256, "batch %ld", batch);
    cr_assert_float_eq(lr_scale, sqrt((double)batch / M0), 1e-9, "square-root scaling");
    cr_assert(efficiency > 0 && efficiency <= 1, "efficiency %g", efficiency);
    cr_assert(predicted > 0, "a prediction was recorded");

    /* The job runs that batch at that rate: train-mlp says so, and reports it. */
    char want[128];
    snprintf(want, sizeof(want), "global batch %ld (initial %d), %ld examples on rank 0, lr %.6f",
             batch, M0, (batch + 1) / 2, 0.003 * lr_scale);
    char *log = wt_job_log(a);
    cr_assert(strstr(log, want), "the job's log says '%s'", want);
    free(log);
    j = wt_job(a);
    cr_assert_eq(json_integer_value(json_object_get(j, "current_batch")), batch);
    json_decref(j);

    /* The predicted step time against the measured ones (the first 5 after the restart are
     * left out: the new ranks warm up). */
    snprintf(sql, sizeof(sql),
             "SELECT seconds, step FROM job_metrics WHERE job_id = %lld AND world_size = 2"
             " AND samples = %ld AND seconds > 0 ORDER BY step",
             a, batch);
    r = hx_sql(sql);
    cr_assert_geq(PQntuples(r), 40);
    long long first_step = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    long long last_step = strtoll(PQgetvalue(r, PQntuples(r) - 1, 1), NULL, 10);
    double measured = median_from(r, 5);
    PQclear(r);
    double err = measured / predicted - 1;
    cr_log_info("action %lld: batch %d -> %ld on 2 GPUs, lr x%.3f, efficiency %.3f; step time"
                " predicted %.2f ms, measured %.2f ms (median), error %+.1f %%",
                action, M0, batch, lr_scale, efficiency, predicted * 1e3, measured * 1e3,
                err * 100);
    fprintf(stderr,
            "goodput_live: batch %d -> %ld on 2 GPUs, lr x%.3f, efficiency %.3f; step time"
            " predicted %.2f ms, measured %.2f ms (median of %lld), error %+.1f %%\n",
            M0, batch, lr_scale, efficiency, predicted * 1e3, measured * 1e3,
            last_step - first_step - 4, err * 100);
    cr_assert(fabs(err) <= STEP_TOLERANCE, "predicted %.4f s, measured %.4f s", predicted,
              measured);

    /* Its loss goes on falling at the new batch: the mean over the steps 30 to 60 after the
     * restart is below the mean over the 30 before it. */
    double before = mean_loss(a, first_step - 31, first_step - 1);
    double after = mean_loss(a, first_step + 29, first_step + 59);
    fprintf(stderr, "goodput_live: loss %.5f over the 30 steps before, %.5f 30-60 after\n", before,
            after);
    cr_assert_lt(after, before, "loss %.5f before the resize, %.5f after", before, after);
    wt_cancel(a);
    wt_expect_state(a, "CANCELLED", 30, NULL);
    hx_finish();
}
