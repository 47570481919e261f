/* Goodput live (issue 18): a real ringmasterd, a real ringmaster-worker with two simulated
 * GPUs and real `mpirun ... train-mlp` jobs. An adaptive-batch job (batch 16, up to 256)
 * explores 1 and 2 GPUs at its initial batch and reports its gradient statistics; a second
 * job takes one of its GPUs, and when that one ends the ringmaster policy gives it both GPUs
 * again at the batch of best goodput there: the resize carries a new global batch and the
 * square-root learning rate, which the job runs (train-mlp prints them), its loss goes on
 * falling, and the goodput the model predicted for that batch and those GPUs (the action's
 * "goodput": step time and statistical efficiency) is held against what the job then
 * measures: its step times, and the efficiency its gradient statistics give at that batch.
 * Another job stays on its two GPUs, and its batch changes in place: no restart, the same
 * ranks run the new batch from the next step.
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
/* The largest relative error of the predicted step time allowed: the fit cannot tell the
 * job's compute per example from its fixed cost (it predicted 12-22 % short in six runs on a
 * loaded 2-core machine, 14-27 % in 17 later ones, while the job had run its initial batch
 * only), and the machine is shared (the CPU time in the steps varies). Since batches change
 * in place (issue 34) the job also ran a larger batch on two GPUs before the restart; its
 * loss, and so its noise scale, are then further on, and the batch chosen at the restart is
 * larger (59-83 instead of 37-66): 30-38 % short in 10 runs. */
#define STEP_TOLERANCE 0.5
/* The relative error allowed of the statistical efficiency predicted for the new batch
 * (check_efficiency): measured / predicted - 1 in [-EFF_BELOW, EFF_ABOVE]. Asymmetric: the
 * gradient's noise scale grows as the loss falls (the loss halves over a run), so the
 * efficiency measured over the 20 steps after the restart comes out above the one predicted
 * from the statistics before it: -0.3 to +28 % (median +11 %) in 17 runs on a loaded 2-core
 * machine, two of them sanitized (docs/scheduler.md "Goodput"). The lower bound is what
 * catches a model that promises more than the job gets: a prediction of 1 (the efficiency
 * ignored) is -20 to -29 % off the 0.71-0.80 measured. */
#define EFF_BELOW 0.15
#define EFF_ABOVE 0.40
/* Steps at the new batch before its first measured noise scale counts (train-mlp reports
 * the mean of a launch's first 20 steps, then an exponential average). */
#define GRAD_STEPS 20

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

/* await_num, asserting that sql reached want within timeout_s (what: the assertion's text);
 * the job's actions are printed when it did not. */
static void await_or_dump(long long job, const char *sql, double want, double timeout_s,
                          const char *what)
{
    double v = await_num(sql, want, timeout_s);
    if (v < want)
        dump_actions(job);
    cr_assert_geq(v, want, "%s", what);
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

/* Statistical efficiency of global batch m from gradient statistics at M0 (sqr, var):
 * gain / s with gain = (var + sqr) / (var / s + sqr), s = m / M0 (docs/scheduler.md
 * "Goodput"), written out here rather than taken from scheduler/goodput.c. */
static double efficiency_at(double sqr, double var, double m)
{
    double s = m / M0;
    return (var + sqr) / (var / s + sqr) / s;
}

/* The noise scale (examples) train-mlp printed at the first step of batch `batch` on two
 * GPUs at least GRAD_STEPS steps after first_step (its first step there), or -1. The job
 * prints "step N loss L world W lr X batch B noise scale S" every 10 steps. */
static double first_noise_scale(const char *log, long batch, long long first_step)
{
    for (const char *p = log; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        long long step;
        int world;
        long b;
        double loss, lr, scale;
        if (sscanf(p, "step %lld loss %lf world %d lr %lf batch %ld noise scale %lf", &step, &loss,
                   &world, &lr, &b, &scale) == 6 &&
            world == 2 && b == batch && step - first_step + 1 >= GRAD_STEPS && scale > 0)
            return scale;
    }
    return -1;
}

/* The statistical-efficiency half of the prediction (and so goodput, its product with the
 * step rate). train-mlp measures the gradient's noise at the batch it runs (two-batch
 * estimates, averaged from each launch's first step); its first estimate at the new batch
 * (the mean of GRAD_STEPS steps there) gives the efficiency measured at that batch, held
 * against the action's. Not a later one: the noise scale goes on growing as the loss falls
 * (up to 3x by the test's end), which the rounds after see, not this prediction. The
 * prediction's own terms must agree with each other and with the statistics it carries
 * (those the job reported at M0 before the resize); the job must have reported new ones
 * since. */
static void check_efficiency(long long job, long long action, long batch, long long first_step,
                             double step_pred, double step_meas, double eff_pred)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT (a.spec->'goodput'->>'epochs_per_s')::float8,"
             " (a.spec->'goodput'->'grad'->>'sqr')::float8,"
             " (a.spec->'goodput'->'grad'->>'var')::float8, j.grad_var / j.grad_sqr * %d"
             " FROM jobs j, actions a WHERE j.id = %lld AND a.id = %lld"
             " AND j.grad_at > a.finished_at",
             M0, job, action);
    PGresult *r = hx_sql(sql);
    cr_assert_eq(PQntuples(r), 1, "gradient statistics reported after the resize");
    double eps_pred = strtod(PQgetvalue(r, 0, 0), NULL);
    double sqr0 = strtod(PQgetvalue(r, 0, 1), NULL), var0 = strtod(PQgetvalue(r, 0, 2), NULL);
    double scale_last = strtod(PQgetvalue(r, 0, 3), NULL);
    PQclear(r);
    /* The prediction is what the model says from the statistics it decided with:
     * efficiency(batch) from them, and epochs at M0 per second = batch x efficiency /
     * (step time x 50,000 examples an epoch, the default dataset size). */
    cr_assert_float_eq(eff_pred, efficiency_at(sqr0, var0, (double)batch), 1e-6,
                       "predicted efficiency from the statistics it carries");
    cr_assert_float_eq(eps_pred * step_pred * 50000 / ((double)batch * eff_pred), 1.0, 1e-6,
                       "predicted goodput = batch x efficiency / step time");
    char *log = wt_job_log(job);
    double scale = first_noise_scale(log, batch, first_step);
    free(log);
    cr_assert_gt(scale, 0, "the job printed its noise scale at batch %ld", batch);
    /* var / sqr at M0 is the noise scale over M0 */
    double eff_meas = efficiency_at(1.0, scale / M0, (double)batch);
    double eff_err = eff_meas / eff_pred - 1;
    double good_err = (step_pred / step_meas) * (eff_meas / eff_pred) - 1;
    fprintf(stderr,
            "goodput_live: efficiency at batch %ld predicted %.3f (noise scale %.1f),"
            " measured %.3f (noise scale %.1f; %.1f when the test ends), error %+.1f %%;"
            " goodput predicted %.4g epochs/s, measured %.4g, error %+.1f %%\n",
            batch, eff_pred, var0 / sqr0 * M0, eff_meas, scale, scale_last, eff_err * 100, eps_pred,
            eps_pred * (1 + good_err), good_err * 100);
    cr_assert(eff_err >= -EFF_BELOW && eff_err <= EFF_ABOVE,
              "efficiency predicted %.3f, measured %.3f", eff_pred, eff_meas);
    /* goodput = step rate x efficiency: within the product of the two halves' bounds */
    cr_assert(good_err >= (1 - EFF_BELOW) / (1 + STEP_TOLERANCE) - 1 &&
                  good_err <= (1 + EFF_ABOVE) / (1 - STEP_TOLERANCE) - 1,
              "goodput predicted %.4g, measured %.4g", eps_pred, eps_pred * (1 + good_err));
}

/* Submits the adaptive job: train-mlp at batch M0 (up to 256) on 1 to 2 GPUs, its device
 * emulated (1 ms per example, 8 ms of exchange a step on two ranks), seed seed. */
static long long submit_adaptive(int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"adaptive\",\"command\":[\"%s\",\"--steps\",\"100000000\",\"--seed\","
             "\"%d\",\"--params\",\"4096\",\"--batch\",\"%d\",\"--sleep-us-per-sample\","
             "\"1000\",\"--sleep-us-allreduce\",\"8000\",\"--print-every\",\"10\"],"
             "\"gpus\":1,\"min_gpus\":1,\"max_gpus\":2,\"elastic\":true,\"batch\":%d,"
             "\"adaptive_batch\":{\"max\":256},\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, seed, M0, M0);
    return wt_post_job(body);
}

Test(goodput_live, a_resize_hands_the_job_the_batch_of_best_goodput)
{
    long long a = submit_adaptive(1801);
    wt_expect_state(a, "RUNNING", 60, wt_dump_logs);

    /* It explores 1 and 2 GPUs (3 s of steps each) at its initial batch, and reports its
     * gradient statistics. */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT COALESCE(sum(sum_seconds), 0) FROM job_metric_sums WHERE job_id = %lld"
             " AND world_size = 2",
             a);
    await_or_dump(a, sql, 3.5, 60, "it ran 3 s at two GPUs");
    json_t *j = wt_job(a);
    json_t *grad = json_object_get(j, "grad");
    cr_assert(json_number_value(json_object_get(grad, "sqr")) +
                      json_number_value(json_object_get(grad, "var")) >
                  0,
              "gradient statistics stored");
    json_decref(j);
    /* explored at its initial batch: the launch at two GPUs ran M0 (once that size is
     * measured, a better batch may come in place, a_batch_changes_in_place_...) */
    snprintf(sql, sizeof(sql),
             "SELECT (spec->>'batch')::int FROM actions WHERE job_id = %lld"
             " AND spec->>'world_size' = '2' ORDER BY id LIMIT 1",
             a);
    cr_assert_eq(hx_sql_num(sql), M0, "explored at its initial batch");

    /* A second job takes a GPU; once it ends, the first may have both again. */
    long long b = wt_submit_mlp(150, "\"gpus\":1", 1802);
    wt_expect_state(b, "COMPLETED", 90, wt_dump_logs);
    /* From here a resize is not undone within 10 s (the default is 300): with none (the
     * setup's 0, for a quick exploration) the job alone on two GPUs was seen flapping 1 <-> 2
     * every round under ASan, its goodput at the two sizes within noise of each other (0.0222
     * and 0.0214 epochs/s predicted), and never ran 60 steps at one of them. */
    wt_scheduler("{\"min_resize_interval_s\":10}");

    /* A resize to two GPUs at another batch, carried out, and 60 steps run there at that batch
     * (since its last step on one GPU: it may have run another batch on two in place before).
     * Its noise scale moves fast as its loss falls, so a batch changed in place or a shrink
     * may end the resize's batch before 60 steps (seen once in a make check 4 programs at a
     * time: resize to batch 83, a batch of 142 in place seconds later): the next resize to two
     * GPUs at a new batch is then the one checked. */
    long long action = 0;
    long batch = 0;
    double lr_scale = 0, predicted = 0, efficiency = 0;
    char since[160], kind[16] = "";
    snprintf(since, sizeof(since),
             "(SELECT COALESCE(max(step), 0) FROM job_metrics WHERE job_id = %lld"
             " AND world_size = 1)",
             a);
    for (double end = hx_now() + 120;; usleep(200000)) {
        cr_assert(hx_now() < end || (dump_actions(a), 0),
                  "a resize to two GPUs at a new batch, then 60 steps at it (action %lld, batch"
                  " %ld)",
                  action, batch);
        snprintf(sql, sizeof(sql),
                 "SELECT id, (spec->>'batch')::int, (spec->>'lr_scale')::float8,"
                 " (spec->'goodput'->>'step_s')::float8,"
                 " (spec->'goodput'->>'efficiency')::float8, kind FROM actions"
                 " WHERE job_id = %lld AND state = 'done' AND spec->>'world_size' = '2'"
                 " AND (spec->>'batch')::int <> %d ORDER BY id DESC LIMIT 1",
                 a, M0);
        PGresult *r = hx_sql(sql);
        if (PQntuples(r) == 1) {
            action = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            batch = strtol(PQgetvalue(r, 0, 1), NULL, 10);
            lr_scale = strtod(PQgetvalue(r, 0, 2), NULL);
            predicted = strtod(PQgetvalue(r, 0, 3), NULL);
            efficiency = strtod(PQgetvalue(r, 0, 4), NULL);
            snprintf(kind, sizeof(kind), "%s", PQgetvalue(r, 0, 5));
        }
        PQclear(r);
        if (action == 0)
            continue;
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2"
                 " AND samples = %ld AND step > %s",
                 a, batch, since);
        if (hx_sql_num(sql) >= 60)
            break;
    }
    cr_assert_str_eq(kind, "resize");
    /* Below the largest: on throughput alone (the efficiency ignored) a larger batch is
     * always better, and the policy would take 256. */
    cr_assert(batch > M0 && batch < 256, "batch %ld", batch);
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
    /* its current batch is the resize's, or one changed since (its statistics moved on: the
     * noise scale grows as the loss falls) */
    j = wt_job(a);
    long long cur = json_integer_value(json_object_get(j, "current_batch"));
    json_decref(j);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND id > %lld"
             " AND kind IN ('batch', 'resize') AND (spec->>'batch')::bigint = %lld",
             a, action, cur);
    cr_assert(cur == batch || hx_sql_num(sql) >= 1, "current batch %lld, the resize's %ld", cur,
              batch);

    /* The predicted step time against the measured ones (the first 5 after the restart are
     * left out: the new ranks warm up). */
    snprintf(sql, sizeof(sql),
             "SELECT seconds, step FROM job_metrics WHERE job_id = %lld AND world_size = 2"
             " AND samples = %ld AND seconds > 0 AND step > %s ORDER BY step",
             a, batch, since);
    PGresult *r = hx_sql(sql);
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
    check_efficiency(a, action, batch, first_step, predicted, measured, efficiency);

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

/* The launches of a job so far (start, resize, migrate actions) and the last one's id. */
static long long launches(long long job, long long *last)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*), COALESCE(max(id), 0) FROM actions WHERE job_id = %lld"
             " AND kind IN ('start', 'resize', 'migrate')",
             job);
    PGresult *r = hx_sql(sql);
    long long n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    *last = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    return n;
}

static int cmp_pid(const void *a, const void *b)
{
    return (*(const pid_t *)a > *(const pid_t *)b) - (*(const pid_t *)a < *(const pid_t *)b);
}

/* The job's processes on worker sim-a, sorted, into pids (at most 16); returns how many. */
static int sorted_pids(long long job, pid_t *pids)
{
    int n = wt_job_pids("sim-a", job, pids, 16);
    qsort(pids, (size_t)(n < 16 ? n : 16), sizeof(*pids), cmp_pid);
    return n;
}

/* Issue 34: an adaptive job at its largest size (2 GPUs) whose size is measured gets the
 * batch of best goodput there in place: a `batch` action, done when the job took it, no new
 * launch, the same processes, the new batch in its step reports from the step after the one
 * the worker names, at the square-root learning rate, and the job's event says why. */
Test(goodput_live, a_batch_changes_in_place_without_a_restart)
{
    long long a = submit_adaptive(3401);
    char sql[512];
    /* it runs at two GPUs (after its stage at one): its processes then */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2", a);
    cr_assert_geq(await_num(sql, 1, 90), 1, "it reached two GPUs");
    long long last_launch, nlaunch = launches(a, &last_launch);
    pid_t before[16], after[16];
    int nbefore = sorted_pids(a, before);
    cr_assert_gt(nbefore, 0, "its mpirun and ranks");

    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'batch'"
             " AND state = 'done'",
             a);
    await_or_dump(a, sql, 1, 60, "a batch action carried out");
    snprintf(sql, sizeof(sql),
             "SELECT id, (spec->>'batch')::int, (spec->>'from_batch')::int,"
             " (spec->>'lr_scale')::float8, outcome_detail, spec->>'reason' FROM actions"
             " WHERE job_id = %lld AND kind = 'batch' AND state = 'done' ORDER BY id LIMIT 1",
             a);
    PGresult *r = hx_sql(sql);
    long long act = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    long batch = strtol(PQgetvalue(r, 0, 1), NULL, 10),
         from = strtol(PQgetvalue(r, 0, 2), NULL, 10);
    double lr_scale = strtod(PQgetvalue(r, 0, 3), NULL);
    long long first = -1;
    cr_assert_eq(sscanf(PQgetvalue(r, 0, 4), "batch %*d from step %lld", &first), 1, "'%s'",
                 PQgetvalue(r, 0, 4));
    char reason[256];
    snprintf(reason, sizeof(reason), "%s", PQgetvalue(r, 0, 5));
    PQclear(r);
    cr_assert_eq(from, M0, "from its initial batch");
    cr_assert(batch > M0 && batch <= 256, "batch %ld", batch);
    cr_assert_float_eq(lr_scale, sqrt((double)batch / M0), 1e-9, "square-root scaling");
    char want[160];
    snprintf(want, sizeof(want), "batch %d -> %ld on 2 GPUs: goodput ", M0, batch);
    cr_assert(strstr(reason, want) == reason, "reason '%s'", reason);
    double gain = strtod(reason + strlen(want), NULL);
    cr_assert_geq(gain, 1.05, "worth the core's threshold: '%s'", reason);
    fprintf(stderr, "goodput_live: in place: %s, lr x%.3f, from step %lld\n", reason, lr_scale,
            first);

    /* 20 steps since the change: the same launch, the same processes. Not 20 at this batch:
     * the core may change it again in place as soon as the job's next gradient report beats
     * it by SCHED_BATCH_MIN_GAIN, and train-mlp's estimate of the noise scale (an average of
     * two-batch estimates at 8 examples a rank) spikes now and then for a report or two (with
     * seed 3401 from about 70 to 1350 and 648 at steps 210 and 220). A change decided on such
     * a report is undone the next round, e.g. 16 -> 228 -> 66 after 9 steps at 228 (with the
     * staged fill of learn_stage_fills the job reaches two GPUs at step ~65 instead of ~185
     * and its first change in place comes at step ~250, while the server may still hold the
     * step-220 report). Each step at world size 2 from the change's first step is of the
     * launch it started in while no launch came since (checked below). */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2"
             " AND step >= %lld",
             a, first);
    await_or_dump(a, sql, 20, 60, "it ran 20 steps since the change");
    long long last_now;
    cr_assert_eq(launches(a, &last_now), nlaunch, "no launch since");
    cr_assert_eq(last_now, last_launch);
    cr_assert_lt(last_launch, act, "the batch came after its last launch");
    int nafter = sorted_pids(a, after);
    cr_assert_eq(nafter, nbefore);
    for (int k = 0; k < nafter && k < 16; k++)
        cr_assert_eq(after[k], before[k], "the same processes go on");

    /* its step reports: the old batch up to the step the worker named, the new one after */
    snprintf(sql, sizeof(sql),
             "SELECT step, samples FROM job_metrics WHERE job_id = %lld AND world_size = 2"
             " AND step BETWEEN %lld AND %lld ORDER BY step",
             a, first - 1, first);
    r = hx_sql(sql);
    cr_assert_eq(PQntuples(r), 2, "steps %lld and %lld", first - 1, first);
    cr_assert_eq(strtol(PQgetvalue(r, 0, 1), NULL, 10), M0, "step %lld ran the old batch",
                 first - 1);
    cr_assert_eq(strtol(PQgetvalue(r, 1, 1), NULL, 10), batch, "step %lld ran the new one", first);
    PQclear(r);
    char *log = wt_job_log(a);
    snprintf(want, sizeof(want), "train-mlp: batch %d -> %ld in place after step %lld, lr %.6f", M0,
             batch, first - 1, 0.003 * lr_scale);
    cr_assert(strstr(log, want), "the job's log says '%s'", want);
    free(log);

    /* the job's event, and its current batch */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE job_id = %lld AND event = 'batch'"
             " AND from_state = 'RUNNING' AND to_state = 'RUNNING' AND detail LIKE '%%%s%%'",
             a, reason);
    cr_assert_eq(hx_sql_num(sql), 1, "the event says '%s'", reason);
    json_t *j = wt_job(a);
    long long cur = json_integer_value(json_object_get(j, "current_batch"));
    snprintf(sql, sizeof(sql),
             "SELECT (spec->>'batch')::int FROM actions WHERE job_id = %lld AND kind = 'batch'"
             " ORDER BY id DESC LIMIT 1",
             a);
    cr_assert_eq(cur, hx_sql_num(sql), "current_batch is its latest batch");
    /* the job's model says why it runs that batch (model.batch_choice, docs/api.md) */
    snprintf(want, sizeof(want), "batch %lld on 2 GPUs: goodput ", cur);
    const char *why = NULL;
    double eff = 0, x = 0, end = hx_now() + 10;
    do {
        json_decref(j);
        j = wt_job(a);
        json_t *c = json_object_get(json_object_get(j, "model"), "batch_choice");
        why = json_string_value(json_object_get(c, "why"));
        eff = json_number_value(json_object_get(c, "efficiency"));
        x = json_number_value(json_object_get(c, "goodput_x"));
        if (!(why && strstr(why, want) == why))
            usleep(200000);
    } while (!(why && strstr(why, want) == why) && hx_now() < end);
    cr_assert(why && strstr(why, want) == why, "model.batch_choice.why '%s'", why ? why : "");
    snprintf(want, sizeof(want), "x of batch %d", M0);
    cr_assert(strstr(why, want), "against its initial batch: '%s'", why);
    cr_assert(eff > 0 && eff <= 1, "statistical efficiency %g", eff);
    cr_assert_geq(x, 1.0, "goodput %gx of its initial batch", x);
    fprintf(stderr, "goodput_live: the job's model says '%s', efficiency %.3f\n", why, eff);
    json_decref(j);
    wt_cancel(a);
    wt_expect_state(a, "CANCELLED", 30, NULL);
    hx_finish();
}

/* max_local_batch (docs/api.md): a job whose global batch does not fit its GPUs at that many
 * examples each accumulates gradients. Batch 64 on two GPUs with at most 16 examples at once:
 * the start carries max_local_batch, the worker hands it to the ranks
 * (RINGJOB_MAX_LOCAL_BATCH), and each rank runs its 32 examples as two micro-steps of 16
 * before the step's exchange. */
Test(goodput_live, a_batch_above_max_local_batch_accumulates)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"accum\",\"command\":[\"%s\",\"--steps\",\"60\",\"--seed\",\"1803\","
             "\"--params\",\"4096\",\"--batch\",\"64\",\"--print-every\",\"20\"],"
             "\"gpus\":2,\"batch\":64,\"max_local_batch\":16,\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH);
    long long a = wt_post_job(body);
    wt_expect_state(a, "COMPLETED", 90, wt_dump_logs);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT (spec->>'batch')::int, (spec->>'max_local_batch')::int FROM actions"
             " WHERE job_id = %lld AND kind = 'start'",
             a);
    PGresult *r = hx_sql(sql);
    cr_assert_eq(PQntuples(r), 1);
    cr_assert_eq(atoi(PQgetvalue(r, 0, 0)), 64);
    cr_assert_eq(atoi(PQgetvalue(r, 0, 1)), 16, "the start carries max_local_batch");
    PQclear(r);
    char *log = wt_job_log(a);
    cr_assert(strstr(log, "global batch 64 (initial 64), 32 examples on rank 0"), "%s", log);
    cr_assert(strstr(log, "gradient accumulation: 2 micro-steps of at most 16 examples on rank 0"
                          " (max local batch 16)"),
              "%s", log);
    free(log);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_metrics WHERE job_id = %lld AND samples = 64"
             " AND world_size = 2",
             a);
    cr_assert_eq(hx_sql_num(sql), 60, "60 steps of 64 examples on two GPUs");
    hx_finish();
}
