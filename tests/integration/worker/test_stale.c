/* A requeued job's old copy (docs/worker-protocol.md, "Registration and liveness"): a real
 * ringmasterd (policy fifo), two real workers with one simulated GPU each, a real `mpirun
 * ... train-mlp` job. Worker A's daemon is frozen (SIGSTOP; its job's ranks keep running)
 * until its node is DOWN and the job runs again on B; when A comes back, its heartbeat's
 * answer tells it to stop the job, and it kills the old copy without a checkpoint, while B's
 * copy runs on and completes. Checkpoints live in one folder both workers reach
 * (RINGMASTER_CHECKPOINT_ROOT). Every wait is bounded. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "twoworkers.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define STEPS 1600

static void setup(void)
{
    tw_setup("rm-stale");
}

TestSuite(stale, .init = setup, .fini = tw_teardown, .timeout = 300);

static int procs_of(long long job, long long worker_b_side)
{
    return wt_count_job_procs(worker_b_side ? "sim-b" : "sim-a", job);
}

Test(stale, a_requeued_jobs_old_copy_is_killed_when_its_worker_comes_back)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"stale\",\"command\":[\"%s\",\"--steps\",\"%d\",\"--seed\",\"7301\","
             "\"--print-every\",\"100\",\"--sleep-us-per-sample\",\"500\"],\"gpus\":1,"
             "\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, STEPS);
    long long job = wt_post_job(body);
    tw_await(tw_runs_on, job, tw.node_a, 60, "not running on A", job);
    tw_await(tw_reported, job, 20, 60, "fewer than 20 reports", job);

    /* A's daemon freezes (its job's ranks do not): the node goes DOWN, the job runs on B */
    double t0 = hx_now();
    cr_assert_eq(kill(tw.worker_a, SIGSTOP), 0);
    tw_await(tw_node_is, tw.node_a, 1, 30, "node A not DOWN", job);
    double t_down = hx_now();
    tw_await(tw_runs_on, job, tw.node_b, 60, "not running on B", job);
    double t_b = hx_now();
    cr_assert_geq(procs_of(job, 0), 1, "the old copy still runs under A's frozen worker");
    cr_assert_geq(procs_of(job, 1), 1, "the new copy runs under B");

    /* A comes back: its old copy goes, B's stays */
    cr_assert_eq(kill(tw.worker_a, SIGCONT), 0);
    double t_cont = hx_now();
    tw_await(tw_gone_on_a, job, 0, 10, "A's old copy still runs", job);
    double t_gone = hx_now();
    tw_await(tw_node_is, tw.node_a, 0, 30, "node A not UP again", job);
    cr_assert_str_eq(wt_job_state(job), "RUNNING");
    cr_assert_eq(tw_allocated_on(job), tw.node_b);
    cr_assert_geq(procs_of(job, 1), 1, "B's copy runs on");
    cr_assert(!tw_log_has("sim-a", job, "checkpointed at step"),
              "the old copy was killed, not asked to checkpoint");
    char ckpt[400];
    /* the old copy's generation (g0): a checkpoint it was asked for would land there */
    snprintf(ckpt, sizeof(ckpt), "%s/job-%lld/g0/train-mlp.ckpt", tw.ckpt_root, job);
    cr_assert_neq(access(ckpt, F_OK), 0, "the old copy wrote no checkpoint");

    wt_expect_state(job, "COMPLETED", 150, wt_dump_logs);
    cr_assert_eq(wt_db_int("SELECT max(step) FROM job_metrics WHERE job_id = %lld", job), STEPS);
    cr_assert_eq(procs_of(job, 0) + procs_of(job, 1), 0);
    cr_assert_eq(wt_db_int("SELECT count(*) FROM job_events WHERE job_id = %lld"
                           " AND event = 'requeue' AND detail LIKE 'node sim-a is down%%'",
                           job),
                 1, "requeued once, because node A was down");
    cr_assert(tw_node_is(tw.node_a, 0), "node A UP");
    fprintf(stderr,
            "stale copy: node A down %.1f s after the freeze, the job running on B %.1f s"
            " after; A's old copy gone %.1f s after A came back\n",
            t_down - t0, t_b - t_down, t_gone - t_cont);
    hx_finish();
}

/* ---- the heartbeat's answer alone, no worker: the states written by hand ---- */

static void api_setup(void)
{
    hx_setup();
    wt_scheduler("{\"paused\":true}");
}

TestSuite(stale_api, .init = api_setup, .fini = hx_teardown, .timeout = 60);

static long long admin_node(const char *name)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"cpus\":2,\"memory_bytes\":1,\"gpus\":[{\"index\":0,"
             "\"model\":\"sim\",\"memory_bytes\":1}]}",
             name);
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(n, "id"));
    json_decref(n);
    return id;
}

/* The heartbeat answer's "stop" for node reporting body, as "a,b" ("-" when absent). */
static const char *stop_of(long long node, const char *body)
{
    static char out[256];
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", node);
    json_t *a = hx_expect_json(hx_json("POST", path, hx.admin, body), 200);
    json_t *stop = json_object_get(a, "stop");
    snprintf(out, sizeof(out), "%s", stop ? "" : "-");
    for (size_t i = 0; i < json_array_size(stop); i++)
        snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%lld", i ? "," : "",
                 (long long)json_integer_value(json_array_get(stop, i)));
    cr_assert_str_eq(json_string_value(json_object_get(a, "state")), "UP");
    json_decref(a);
    return out;
}

/* wt_write_action, less the allocation (only the actions and states matter here, and the
 * one GPU of a node holds two jobs at most). */
static void launch(long long job, const char *kind, const char *state, long long at, long long to)
{
    wt_write_action(job, kind, state, at, &to, 1, 1);
    hx_sql_do("DELETE FROM allocations");
}

Test(stale_api, the_heartbeat_names_the_jobs_its_node_no_longer_runs)
{
    long long n1 = admin_node("n1"), n2 = admin_node("n2");
    long long own = hx_submit(hx.admin, "own", 1), requeued = hx_submit(hx.admin, "requeued", 1);
    long long moving = hx_submit(hx.admin, "moving", 1), moved = hx_submit(hx.admin, "moved", 1);
    launch(own, "start", "RUNNING", n1, n1);
    launch(requeued, "start", "RUNNING", n1, n1);
    launch(moving, "start", "RUNNING", n1, n1);
    launch(moved, "start", "RUNNING", n1, n1);
    hx_sql_do("UPDATE actions SET state = 'done'");
    /* requeued: back in the queue (as when its node went down), then started on n2 */
    char sql[512];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET state = 'PENDING' WHERE id = %lld", requeued);
    hx_sql_do(sql);
    /* moving: its migration to n2 is under way (n1 checkpoints it); moved: done, n2 runs it */
    launch(moving, "migrate", "MIGRATING", n1, n2);
    launch(moved, "migrate", "MIGRATING", n1, n2);
    snprintf(sql, sizeof(sql), "UPDATE actions SET state = 'done' WHERE job_id = %lld", moved);
    hx_sql_do(sql);
    launch(moved, "start", "RUNNING", n2, n2); /* what the migrate's result writes */
    hx_sql_do(sql);
    char body[512];
    snprintf(body, sizeof(body),
             "{\"running\":[{\"job_id\":%lld},{\"job_id\":%lld},{\"job_id\":%lld},"
             "{\"job_id\":%lld},{\"job_id\":4242}]}",
             own, requeued, moving, moved);
    char want[128];
    snprintf(want, sizeof(want), "%lld,%lld,4242", requeued, moved);
    cr_assert_str_eq(stop_of(n1, body), want, "the requeued, the moved away and the unknown");
    cr_assert_str_eq(stop_of(n1, "{\"running\":[]}"), "");
    cr_assert_str_eq(stop_of(n1, NULL), "-", "no list, no verdict");
    snprintf(body, sizeof(body), "{\"running\":[{\"job_id\":%lld},{\"job_id\":%lld}]}", moving,
             moved);
    cr_assert_str_eq(stop_of(n2, body), "", "the migration's target runs both");
    /* the requeued job started again on n1 itself: that launch is n1's own */
    launch(requeued, "start", "STARTING", n1, n1);
    snprintf(body, sizeof(body), "{\"running\":[{\"job_id\":%lld}]}", requeued);
    cr_assert_str_eq(stop_of(n1, body), "");
    hx_finish();
}
