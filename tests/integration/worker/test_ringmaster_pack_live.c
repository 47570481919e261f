/* Policy ringmaster packing live (docs/gandiva.md, "Live"; docs/evaluation.md): a real
 * ringmasterd, one real worker with one simulated a100 and two real `mpirun ... train-mlp`
 * jobs of one GPU, elastic (min 1), declaring gpu_util 0.4 and the built-in resnet110 speed
 * model (0.2015 s a minibatch alone on one a100). Ringmaster never preempts, so neither job is
 * ever measured alone before it is packed: their rates alone are predicted by that model.
 *
 * - rm_pack_kept: the jobs emulate their GPU compute by sleeping (--sleep-us-per-sample 6250,
 *   0.2 s a step, about the model's step), so packed they do not slow each other: the second
 *   is packed onto the first, the pair is kept past its measurement, both complete.
 * - rm_pack_reverted: the jobs hold their GPU 200 ms a step exclusively (--contend 200), so
 *   packed they take turns: the pair's normalised rates sum to about 1, the pair is reverted,
 *   the second job is suspended in place (holding no GPU) and runs once the first completes.
 *
 * Every wait is bounded. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

static pid_t worker;
static char tmp_root[64];

static void setup(void)
{
    /* the checkpoints under it (the server inherits the variable), the GPU locks beside */
    wt_tmp_root(tmp_root, sizeof(tmp_root), "rm-rmpack", "ckpt");
    hx_setup();
    wt_scheduler("{\"policy\":\"ringmaster\",\"interval_s\":1,\"min_resize_interval_s\":0,"
                 "\"resize_cost_s\":0,\"grace_s\":30}");
    worker = wt_start_worker("sim-rp", &(struct wt_worker){.gpus = 1, .model = "a100"});
    wt_wait_node("sim-rp");
}

static void teardown(void)
{
    if (wt_stop_worker(&worker) != 0)
        wt_dump_logs();
    hx_teardown();
    wt_remove_tree(tmp_root);
}

/* A 1-GPU elastic (min 1) train-mlp of steps steps with the resnet110 speed model,
 * gpu_util 0.4 and GPU memory mem bytes (0: undeclared); work: its GPU-time arguments (JSON
 * strings). */
static long long submit_mem(long steps, int seed, const char *work, double mem)
{
    char body[1400], m[64] = "";
    if (mem > 0)
        snprintf(m, sizeof(m), ",\"gpu_mem_bytes\":%.0f", mem);
    snprintf(body, sizeof(body),
             "{\"name\":\"rmpack\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
             "\"--print-every\",\"100\",%s],\"gpus\":1,\"min_gpus\":1,\"max_gpus\":1,"
             "\"elastic\":true,\"model\":{\"class\":\"resnet110\",\"epochs\":1000,"
             "\"gpu_util\":0.4%s},\"env\":{" WT_ASAN_ENV ",\"RINGMASTER_GPU_LOCK_DIR\":\"%s\"}}",
             TRAIN_MLP_PATH, steps, seed, work, m, tmp_root);
    return wt_post_job(body);
}

static long long submit(long steps, int seed, const char *work)
{
    return submit_mem(steps, seed, work, 0);
}

/* The job's events named ev that the scheduler wrote: a suspension is one such event (the
 * worker's word that the job took it is another "suspend" event, by the worker, a moment
 * later: counting both made "one job leaves the pair" see 2 whenever the check came after
 * it, in about a third of the runs). */
static long long events(long long job, const char *ev)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE job_id = %lld AND event = '%s'"
             " AND actor = 'scheduler'",
             job, ev);
    return (long long)hx_sql_num(sql);
}

static long long gpus_held(long long job)
{
    return wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job);
}

static long long max_step(long long job)
{
    return wt_db_int("SELECT COALESCE(max(step), 0) FROM job_metrics WHERE job_id = %lld", job);
}

/* Waits (bounded) until both jobs share GPU 0; fails the test when they do not. */
static void await_packed(long long a, long long b, double timeout_s)
{
    double end = hx_now() + timeout_s;
    while (!wt_pair_packed(a, b) && hx_now() < end)
        usleep(100000);
    if (!wt_pair_packed(a, b))
        wt_print_events();
    cr_assert(wt_pair_packed(a, b), "jobs %lld and %lld share GPU 0", a, b);
}

static void expect_completed(long long job, long steps)
{
    wt_expect_state(job, "COMPLETED", 90, wt_print_events);
    cr_assert_eq(max_step(job), steps);
}

/* Both packs froze the predicted rate alone (no job ran alone before): 0.2015 s on an a100. */
static void expect_predicted_alone(long long a, long long b)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_slices WHERE job_id IN (%lld, %lld)"
             " AND abs(alone_s - 0.2015) < 0.002",
             a, b);
    cr_assert_eq(hx_sql_num(sql), 2, "both rates alone predicted by the resnet110 model");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event = 'pack'"
                            " AND detail LIKE '%predicted by its speed model%'"),
                 2);
}

TestSuite(rm_pack_kept, .init = setup, .fini = teardown, .timeout = 180);

#define KEPT_STEPS 120

Test(rm_pack_kept, two_light_jobs_are_packed_by_ringmaster_and_stay_packed)
{
    double t0 = hx_now();
    long long a = submit(KEPT_STEPS, 9101, "\"--sleep-us-per-sample\",\"6250\"");
    long long b = submit(KEPT_STEPS, 9102, "\"--sleep-us-per-sample\",\"6250\"");
    await_packed(a, b, 40);
    double t_packed = hx_now();
    expect_predicted_alone(a, b);
    /* the measurement (30 reports each after pack_at), and a few rounds after it */
    double end = hx_now() + 40;
    while (wt_pair_measured(a, b) < 35 && hx_now() < end)
        usleep(100000);
    long long nmeasured = wt_pair_measured(a, b);
    if (nmeasured < 35)
        wt_print_events();
    cr_assert_geq(nmeasured, 35, "both measured while packed");
    double sum = wt_pair_rate_sum(a, b);
    sleep(3);
    if (!wt_pair_packed(a, b) || getenv("RINGMASTER_TEST_VERBOSE"))
        wt_print_events();
    cr_assert(wt_pair_packed(a, b), "the pair stays packed past its measurement (sum %.2f)", sum);
    cr_assert_gt(sum, 1.05, "packed, they do more than one job alone: %.2f", sum);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event IN"
                            " ('unpack', 'suspend')"),
                 0);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_slices WHERE pack_reverted"), 0);
    /* both progress while packed, and complete */
    long long sa = max_step(a), sb = max_step(b);
    sleep(1);
    cr_assert_gt(max_step(a), sa);
    cr_assert_gt(max_step(b), sb);
    expect_completed(a, KEPT_STEPS);
    expect_completed(b, KEPT_STEPS);
    fprintf(stderr,
            "ringmaster packing kept: packed %.1f s into the test, normalised rates summed %.2f"
            " over the first %lld packed reports each, both done %.1f s into the test\n",
            t_packed - t0, sum, nmeasured, hx_now() - t0);
    hx_finish();
}

/* The packing bound is the GPU's memory (an a100: 80 GB): two jobs of 50 GB each are never
 * packed, the second waits for the first. */
Test(rm_pack_kept, jobs_whose_memory_does_not_fit_one_gpu_are_not_packed)
{
    long long a = submit_mem(100000, 9111, "\"--sleep-us-per-sample\",\"300\"", 5e10);
    long long b = submit_mem(100000, 9112, "\"--sleep-us-per-sample\",\"300\"", 5e10);
    double end = hx_now() + 40;
    while (!(wt_await_state(a, "RUNNING", 0.1) == 0 || wt_await_state(b, "RUNNING", 0.1) == 0) &&
           hx_now() < end)
        ;
    long long first = strcmp(wt_job_state(a), "RUNNING") == 0 ? a : b, second = a + b - first;
    wt_expect_state(first, "RUNNING", 1, wt_print_events);
    sleep(5); /* five rounds */
    if (events(second, "pack") > 0 || getenv("RINGMASTER_TEST_VERBOSE"))
        wt_print_events();
    cr_assert_eq(events(a, "pack") + events(b, "pack"), 0, "100 GB do not fit one 80 GB GPU");
    cr_assert_str_eq(wt_job_state(second), "PENDING");
    cr_assert_eq(gpus_held(second), 0);
    wt_cancel(a);
    wt_cancel(b);
    wt_expect_state(a, "CANCELLED", 30, wt_print_events);
    wt_expect_state(b, "CANCELLED", 30, wt_print_events);
    hx_finish();
}

TestSuite(rm_pack_reverted, .init = setup, .fini = teardown, .timeout = 180);

#define REVERTED_STEPS 70

Test(rm_pack_reverted, contending_jobs_are_unpacked_and_the_second_waits_suspended)
{
    double t0 = hx_now();
    long long a = submit(REVERTED_STEPS, 9201, "\"--contend\",\"200\"");
    long long b = submit(REVERTED_STEPS, 9202, "\"--contend\",\"200\"");
    await_packed(a, b, 40);
    double t_packed = hx_now();
    expect_predicted_alone(a, b);
    /* measured (30 reports each), the pair lost: one job is suspended in place */
    double end = hx_now() + 40;
    while (events(a, "suspend") + events(b, "suspend") == 0 && hx_now() < end)
        usleep(100000);
    if (events(a, "suspend") + events(b, "suspend") != 1)
        wt_print_events();
    cr_assert_eq(events(a, "suspend") + events(b, "suspend"), 1, "one job leaves the pair");
    double t_reverted = hx_now();
    long long second = events(a, "suspend") ? a : b, first = second == a ? b : a;
    cr_assert_eq(events(first, "unpack"), 1, "the revert is recorded");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_slices WHERE pack_reverted"), 2);
    /* the second waits suspended, holding no GPU, while the first runs alone */
    wt_expect_state(second, "SUSPENDED", 20, wt_print_events);
    cr_assert_eq(gpus_held(second), 0, "a suspended job holds no GPU");
    cr_assert_eq(gpus_held(first), 1);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM job_slices WHERE job_id = %lld AND sliced"
                           " AND home_gpus = '{0}'",
                           second),
                 1, "it waits for its turn on its GPU");
    long long s2 = max_step(second), s1 = max_step(first);
    sleep(2);
    cr_assert_gt(max_step(first), s1, "the first runs alone");
    if (max_step(first) < REVERTED_STEPS) {
        cr_assert_eq(max_step(second), s2, "the second does not run beside it");
        cr_assert_str_eq(wt_job_state(second), "SUSPENDED");
    }
    /* the first completes, then the second resumes in its place and completes */
    expect_completed(first, REVERTED_STEPS);
    expect_completed(second, REVERTED_STEPS);
    if (events(second, "resume") < 1 || getenv("RINGMASTER_TEST_VERBOSE"))
        wt_print_events();
    cr_assert_geq(events(second, "resume"), 1, "the scheduler resumed it");
    fprintf(stderr,
            "ringmaster packing reverted: packed %.1f s into the test, second suspended %.1f s"
            " later, both done %.1f s into the test\n",
            t_packed - t0, t_reverted - t_packed, hx_now() - t0);
    hx_finish();
}
