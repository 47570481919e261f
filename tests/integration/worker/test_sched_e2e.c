/* The live scheduler end to end: a real ringmasterd with its scheduler thread, a real
 * ringmaster-worker with two simulated GPUs, and real `mpirun ... train-mlp` jobs. Nothing is
 * written by hand: jobs are submitted through the API, the scheduler places, starts and
 * resizes them, the worker carries the actions out and reports. Every wait is bounded. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

static pid_t worker;
static char ckpt_root[64];

static int stop_worker(void)
{
    return wt_stop_worker(&worker);
}

static void setup(void)
{
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-ckpt", NULL); /* the server inherits it */
    hx_setup();
    wt_scheduler("{\"interval_s\":1,\"min_resize_interval_s\":0,\"resize_cost_s\":0,"
                 "\"grace_s\":30}");
    worker = wt_spawn_worker("sim-a", 2);
}

static void teardown(void)
{
    if (stop_worker() != 0) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "tail -n 40 '%s/worker.log' >&2", hx.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "no worker log\n");
    }
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

/* What the rounds wrote for the job, and what came of it, on stderr. */
static void dump_actions(long long job)
{
    char sql[300];
    snprintf(sql, sizeof(sql),
             "SELECT a.id, a.kind, a.state, a.spec->>'world_size', a.round_id, r.policy,"
             " a.outcome_detail FROM actions a LEFT JOIN sched_rounds r ON r.id = a.round_id"
             " WHERE a.job_id = %lld ORDER BY a.id",
             job);
    PGresult *r = hx_sql(sql);
    for (int i = 0; i < PQntuples(r); i++) {
        for (int c = 0; c < PQnfields(r); c++)
            fprintf(stderr, "%s%s", c ? " | " : "action ", PQgetvalue(r, i, c));
        fputc('\n', stderr);
    }
    PQclear(r);
}

TestSuite(sched_e2e, .init = setup, .fini = teardown, .timeout = 240);

Test(sched_e2e, a_submitted_job_is_scheduled_run_and_completed)
{
    long long job = wt_submit_mlp(600, "\"gpus\":2", 7301); /* scheduled, run to its end */
    wt_expect_state(job, "RUNNING", 60, NULL);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job), 2);
    wt_expect_state(job, "COMPLETED", 120, NULL);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'start'"
                           " AND state = 'done' AND round_id IS NOT NULL",
                           job),
                 1, "one start, written by a round, carried out");
    double end = hx_now() + 10;
    while (wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job) && hx_now() < end)
        usleep(100000);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job), 0,
                 "its GPUs were released");
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

Test(sched_e2e, an_elastic_job_grows_into_gpus_another_job_frees)
{
    /* a's ranks emulate a GPU (a sleep of 300 us per example, most of a step): two of them
     * do twice the work of one however loaded the host's cores are. With CPU arithmetic
     * only, on two cores shared with other test programs (CI), two ranks measured no faster
     * than one, the fitted model rightly shrank a back, and it never reached 20 reports at
     * two ranks in 90 s. */
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"100000000\",\"--seed\","
             "\"7302\",\"--print-every\",\"500\",\"--sleep-us-per-sample\",\"300\"],"
             "\"gpus\":1,\"min_gpus\":1,\"max_gpus\":2,\"elastic\":true,"
             "\"model\":{\"class\":\"resnet110\"},\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH);
    /* b first: submitted after a, a round between the two could give a both GPUs (an idle
     * GPU is grown into), and a would not share the node (seen once in seven runs) */
    long long b = wt_submit_mlp(400, "\"gpus\":1", 7303);
    wt_expect_state(b, "RUNNING", 60, NULL);
    long long a = wt_post_job(body);
    wt_expect_state(a, "RUNNING", 60, NULL);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", a), 1,
                 "a shares the node with b");
    wt_expect_state(b, "COMPLETED", 120, NULL);
    double end = hx_now() + 90;
    while (wt_db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2", a) <
               20 &&
           hx_now() < end)
        usleep(200000);
    long long at2 = wt_db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                              " AND world_size = 2",
                              a);
    if (at2 < 20) {
        dump_actions(a);
        wt_print_events();
    }
    cr_assert_geq(at2, 20, "a runs with two ranks after b ended");
    /* Its first resize grew it to 2 and was carried out. On a loaded machine two CPU ranks may
     * measure no faster than one, and the fitted model may then shrink it again later.
     * The worker's answer to the action may follow the new ranks' first reports: wait for it. */
    const char *first_resize = "SELECT count(*) FROM (SELECT state, spec->>'world_size' AS ws"
                               " FROM actions WHERE job_id = %lld AND kind = 'resize'"
                               " ORDER BY id LIMIT 1) f WHERE state = 'done' AND ws = '2'";
    long long grown;
    for (end = hx_now() + 30; (grown = wt_db_int(first_resize, a)) != 1 && hx_now() < end;)
        usleep(200000);
    if (grown != 1)
        dump_actions(a);
    cr_assert_eq(grown, 1, "grown to 2 by its first resize, carried out");
    cr_assert_geq(wt_db_int("SELECT count(*) FROM job_events WHERE job_id = %lld"
                            " AND to_state = 'RESIZING'",
                            a),
                  1);
    wt_cancel(a);
    wt_expect_state(a, "CANCELLED", 30, NULL);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}
