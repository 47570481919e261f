/* A worker killed with SIGKILL in the middle of an action (issue 14 item 2): a real
 * ringmasterd, two real workers of four simulated GPUs ("sim-a" first, "sim-b"), policy fifo,
 * a 5 s node timeout, and a real `mpirun ... train-mlp` job of two ranks on sim-a whose ranks
 * take 4 s to honour a SUSPEND (--suspend-delay-ms), so that a resize, a migration or a
 * suspension is still in flight when sim-a's daemon is killed. Its ranks outlive it; the
 * daemon is started again under the same name, as systemd would.
 *
 * What must hold after each: the job leaves RESIZING / MIGRATING (never stuck there), no
 * action of it stays pending, and it ends RUNNING and training again (a resize or migration
 * from its checkpoint or requeued and restarted), or SUSPENDED for a suspension that
 * completed; it can then be cancelled. Every wait is bounded. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
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

static pid_t worker_a, worker_b;
static long long node_a, node_b;
static char ckpt_root[64];

static void setup(void)
{
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-crash", NULL); /* the server inherits it */
    hx_setup();
    wt_scheduler("{\"policy\":\"fifo\",\"interval_s\":1,\"min_resize_interval_s\":0,"
                 "\"resize_cost_s\":0,\"grace_s\":30,\"node_timeout_s\":5}");
    worker_a = wt_spawn_worker("sim-a", 4);
    node_a = wt_wait_node("sim-a"); /* registered first: the lower id, where fifo starts jobs */
    worker_b = wt_spawn_worker("sim-b", 4);
    node_b = wt_wait_node("sim-b");
}

static void teardown(void)
{
    int a = wt_stop_worker(&worker_a), b = wt_stop_worker(&worker_b);
    if (a != 0 || b != 0)
        wt_dump_logs();
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

TestSuite(crash_actions, .init = setup, .fini = teardown, .timeout = 300);

static long long reports(long long job)
{
    return wt_db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld", job);
}

static long long last_step(long long job)
{
    return wt_db_int("SELECT COALESCE(max(step), -1) FROM job_metrics WHERE job_id = %lld", job);
}

static long long pending_actions(long long job)
{
    return wt_db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND state = 'pending'",
                     job);
}

static char crash_at[64]; /* the database's clock when sim-a's daemon was killed */

static void post(long long job, const char *what, const char *body, long status)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/%s", job, what);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), status));
}

/* 1 once sim-a's worker fetched the job's action of kind and has not finished it. */
static int in_flight(long long job, const char *kind)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %%lld AND kind = '%s' AND node_id = %lld"
             " AND state = 'pending' AND delivered_at IS NOT NULL",
             kind, node_a);
    return wt_db_int(sql, job) > 0;
}

/* Kills sim-a's daemon with SIGKILL while the job's action of kind is in flight there, starts
 * it again, and returns the state the job settles in (RUNNING or SUSPENDED, with no action
 * pending; static storage), failing when it stays in flight. */
static const char *crash_during(long long job, const char *kind)
{
    double end = hx_now() + 60;
    while (!in_flight(job, kind) && hx_now() < end)
        usleep(50000);
    cr_assert(in_flight(job, kind), "sim-a took the %s", kind);
    usleep(500000); /* the ranks are on their way to the checkpoint, slowed down */
    const char *before = wt_job_state(job);
    fprintf(stderr, "crash_actions: SIGKILL to sim-a during the %s (job %s)\n", kind, before);
    PGresult *now = hx_sql("SELECT now()::text");
    snprintf(crash_at, sizeof(crash_at), "%s", PQgetvalue(now, 0, 0));
    PQclear(now);
    kill(worker_a, SIGKILL);
    waitpid(worker_a, NULL, 0);
    worker_a = wt_spawn_worker("sim-a", 4);

    static char settled[32];
    settled[0] = '\0';
    end = hx_now() + 120;
    while (hx_now() < end) {
        const char *st = wt_job_state(job);
        if ((!strcmp(st, "RUNNING") || !strcmp(st, "SUSPENDED")) && pending_actions(job) == 0) {
            snprintf(settled, sizeof(settled), "%s", st);
            break;
        }
        usleep(200000);
    }
    if (!settled[0]) {
        wt_dump_logs();
        wt_print_events();
        cr_assert_fail("job %lld after the %s: %s, %lld actions pending", job, kind,
                       wt_job_state(job), pending_actions(job));
    }
    fprintf(stderr, "crash_actions: after the %s the job is %s\n", kind, settled);
    return settled;
}

/* Reports the job made after the crash: how many, and the lowest step among them. */
static long long after_crash(long long job, const char *what)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT COALESCE(%s, 0) FROM job_metrics WHERE job_id = %%lld"
             " AND at > '%s'::timestamptz",
             what, crash_at);
    return wt_db_int(sql, job);
}

/* RUNNING again and training: reports made after the crash, going on from the step it had
 * reached before (its checkpoint), not from its start; one copy of it runs. */
static void trains_again(long long job, long long step)
{
    double end = hx_now() + 90;
    while (after_crash(job, "count(*)") < 10 && hx_now() < end)
        usleep(200000);
    cr_assert_geq(after_crash(job, "count(*)"), 10, "job %lld trains again after the crash (%s)",
                  job, wt_job_state(job));
    cr_assert_str_eq(wt_job_state(job), "RUNNING");
    long long first = after_crash(job, "min(step)");
    if (first <= 1) { /* started over: how it came back */
        wt_print_events();
        wt_dump_logs();
    }
    cr_assert_gt(first, 1, "job %lld went on from step %lld, not from its start", job, first);
    cr_assert_leq(first, step + 2000, "job %lld: step %lld after the crash, %lld before", job,
                  first, step);
    /* one copy of it runs: the one the killed daemon left behind was ended or is this one */
    end = hx_now() + 30;
    int copies = 0;
    do {
        copies = (wt_count_job_procs("sim-a", job) > 0) + (wt_count_job_procs("sim-b", job) > 0);
        if (copies != 1)
            usleep(200000);
    } while (copies != 1 && hx_now() < end);
    cr_assert_eq(copies, 1, "job %lld runs on one host, not %d", job, copies);
    /* how it came back, for the log */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT string_agg(COALESCE(from_state, '') || '->' || to_state || ' ' || event,"
             " ', ' ORDER BY id) FROM job_events WHERE job_id = %lld",
             job);
    PGresult *r = hx_sql(sql);
    fprintf(stderr, "crash_actions: job %lld (step %lld before, %lld first after): %s\n", job,
            step, first, PQgetvalue(r, 0, 0));
    PQclear(r);
}

static long long running_job(int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"crash\",\"command\":[\"%s\",\"--steps\",\"100000000\",\"--params\","
             "\"2048\",\"--seed\",\"%d\",\"--print-every\",\"1000\",\"--sleep-us-per-sample\","
             "\"300\",\"--suspend-delay-ms\",\"4000\"],\"gpus\":2,\"elastic\":true,"
             "\"min_gpus\":1,\"max_gpus\":4,\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, seed);
    long long job = wt_post_job(body);
    wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    double end = hx_now() + 60;
    while (reports(job) < 20 && hx_now() < end)
        usleep(100000);
    cr_assert_geq(reports(job), 20, "job %lld reports", job);
    return job;
}

static void cancel_and_end(long long job)
{
    post(job, "cancel", NULL, 200);
    wt_expect_state(job, "CANCELLED", 60, wt_dump_logs);
    hx_finish();
}

Test(crash_actions, a_worker_killed_in_a_resize)
{
    long long job = running_job(9101);
    post(job, "resize", "{\"gpus\":4}", 200);
    long long step = last_step(job);
    cr_assert_str_eq(crash_during(job, "resize"), "RUNNING");
    trains_again(job, step);
    cancel_and_end(job);
}

Test(crash_actions, a_worker_killed_in_a_migration)
{
    long long job = running_job(9102);
    char body[64];
    snprintf(body, sizeof(body), "{\"node\":%lld}", node_b);
    post(job, "migrate", body, 202);
    long long step = last_step(job);
    cr_assert_str_eq(crash_during(job, "migrate"), "RUNNING");
    trains_again(job, step);
    cancel_and_end(job);
}

Test(crash_actions, a_worker_killed_in_a_suspension)
{
    long long job = running_job(9103);
    post(job, "suspend", NULL, 202);
    long long step = last_step(job);
    const char *st = crash_during(job, "suspend");
    if (!strcmp(st, "SUSPENDED")) {
        /* the suspension held: resuming it trains again */
        post(job, "resume", NULL, 202);
        wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    }
    trains_again(job, step);
    cancel_and_end(job);
}
