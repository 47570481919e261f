/* A second head node, live (docs/operations.md, "A second head node"): two real ringmasterd,
 * "head-a" (the leader) and "head-b", against one PostgreSQL, and a real worker of two
 * simulated GPUs given both (--server A,B). A real train-mlp job runs; head-a gets kill -9;
 * the worker goes on through head-b (its node stays UP, the job keeps running and completes),
 * head-b runs the rounds, and a job submitted after the kill runs to completion too. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

static struct hx_server head_a;
static pid_t worker;

static void setup(void)
{
    hx_server_args[0] = "--name";
    hx_server_args[1] = "head-a";
    hx_setup();
    hx_server_args[0] = NULL;
}

static void teardown(void)
{
    wt_stop_worker(&worker);
    if (head_a.pid > 0) {
        kill(head_a.pid, SIGKILL);
        waitpid(head_a.pid, NULL, 0);
    }
    hx_teardown();
}

TestSuite(leader_live, .init = setup, .fini = teardown, .timeout = 240);

static long long mlp(long steps, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
             "\"--print-every\",\"50\",\"--sleep-us-per-sample\",\"1000\"],\"gpus\":1,"
             "\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, steps, seed);
    return wt_post_job(body);
}

Test(leader_live, the_worker_fails_over_and_the_jobs_complete)
{
    wt_scheduler("{\"interval_s\":1,\"node_timeout_s\":5}");
    /* head-a takes the lock at its first round; only then does head-b start */
    double end = hx_now() + 20;
    json_t *s = NULL;
    do {
        json_decref(s);
        s = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
        if (json_is_string(json_object_get(s, "leader")))
            break;
        usleep(50000);
    } while (hx_now() < end);
    const char *first = json_string_value(json_object_get(s, "leader"));
    cr_assert_str_eq(first ? first : "", "head-a");
    json_decref(s);
    hx_second_server("head-b", &head_a);
    char servers[160];
    snprintf(servers, sizeof(servers), "http://127.0.0.1:%d,http://127.0.0.1:%d", head_a.port,
             hx.port);
    struct wt_worker w = {.gpus = 2, .servers = servers};
    worker = wt_start_worker("w1", &w);
    long long node = wt_wait_node("w1");

    long long before = mlp(250, 61); /* about 8 s of training */
    wt_expect_state(before, "RUNNING", 60, wt_dump_logs);
    kill(head_a.pid, SIGKILL);
    waitpid(head_a.pid, NULL, 0);
    head_a.pid = 0;
    long long after = mlp(150, 62);
    wt_expect_state(before, "COMPLETED", 90, wt_dump_logs);
    wt_expect_state(after, "COMPLETED", 90, wt_dump_logs);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM sched_rounds WHERE server = 'head-b'"
                           " AND %lld > 0",
                           1) > 0,
                 1, "head-b ran rounds");
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM nodes WHERE id = %%lld AND state = 'UP'");
    cr_assert_eq(wt_db_int(sql, node), 1, "the node stayed up: its heartbeats went to head-b");
    cr_assert_eq(wt_db_int("SELECT count(*) FROM job_events WHERE job_id = %lld AND"
                           " event = 'requeue'",
                           before),
                 0, "the running job was never requeued");
    hx_finish();
}
