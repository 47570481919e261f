/* Drains and GPU faults, live (issue 32 items 5-7): a real ringmasterd (policy fifo), two real
 * workers with one simulated GPU each, a real `mpirun ... train-mlp` job on worker A.
 * Draining A with evacuate migrates the job to B at the next round: A checkpoints it at a
 * minibatch boundary, B restores it, and it completes with every step; node A is left empty
 * and gets no new job until it is undrained; the job's checkpoints (every 100 steps) reach the
 * scheduler. A fault injected into A's GPU (its worker's
 * --fault-file) moves the job the same way, and the fault is kept in gpu_faults. Every wait
 * is bounded. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "twoworkers.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define STEPS 1000

static void setup(void)
{
    tw_setup("rm-drain");
}

TestSuite(drain_live, .init = setup, .fini = tw_teardown, .timeout = 300);

static long long mlp(const char *name, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"command\":[\"%s\",\"--steps\",\"%d\",\"--seed\",\"%d\","
             "\"--print-every\",\"100\",\"--sleep-us-per-sample\",\"500\","
             "\"--checkpoint-every\",\"100\"],\"gpus\":1,"
             "\"env\":{" WT_ASAN_ENV "}}",
             name, TRAIN_MLP_PATH, STEPS, seed);
    return wt_post_job(body);
}

static void node_post(long long node, const char *what, const char *body)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/%s", node, what);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), 200));
}

static double job_num(const char *fmt, long long job)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, job);
    return hx_sql_num(sql);
}

/* The ledger's account of a job that ended (issue 33 item 5): the GPU-seconds it booked are
 * what the job's events say it held (1 GPU from its start to its end) within 1 %, its parts
 * add up to them, and its move was lost to cause (the ledger's column lost_<cause>_s). */
static void ledger_matches(long long job, const char *cause)
{
    double held = job_num("SELECT extract(epoch FROM max(at) - min(at)) FROM job_events"
                          " WHERE job_id = %lld AND from_state IS NOT NULL",
                          job);
    double alloc = job_num("SELECT sum(allocated_s) FROM usage_ledger WHERE job_id = %lld", job);
    double parts = job_num("SELECT sum(useful_s + idle_s + lost_restart_s + lost_resize_s"
                           " + lost_migration_s + lost_preemption_s + lost_fault_s)"
                           " FROM usage_ledger WHERE job_id = %lld",
                           job);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT sum(lost_%s_s) FROM usage_ledger WHERE job_id = %%lld",
             cause);
    double lost = job_num(sql, job);
    fprintf(stderr, "ledger of job %lld: held %.3f s, allocated %.3f, parts %.3f, %s %.3f\n", job,
            held, alloc, parts, cause, lost);
    cr_assert(fabs(alloc - held) <= 0.01 * held, "allocated %.3f s against %.3f held", alloc, held);
    cr_assert(fabs(parts - alloc) <= 0.01 * alloc, "parts %.3f of %.3f", parts, alloc);
    cr_assert(lost > 0, "its move is lost to %s", cause);
    cr_assert_eq(job_num("SELECT sum(steps) FROM usage_ledger WHERE job_id = %lld", job), STEPS,
                 "its progress: every step");
}

Test(drain_live, evacuate_moves_the_job_off_from_its_checkpoint_and_loses_nothing)
{
    long long job = mlp("evacuee", 7401);
    tw_await(tw_runs_on, job, tw.node_a, 60, "not running on A", job);
    tw_await(tw_reported, job, 20, 60, "fewer than 20 reports", job);

    double t0 = hx_now();
    node_post(tw.node_a, "drain", "{\"reason\":\"live test\",\"evacuate\":true}");
    tw_await(tw_runs_on, job, tw.node_b, 60, "not running on B after the evacuation", job);
    double moved = hx_now() - t0;
    tw_await(tw_gone_on_a, job, 0, 30, "its ranks still run under A", job);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'migrate'"
             " AND node_id = %lld",
             job, tw.node_a);
    cr_assert_eq(hx_sql_num(sql), 1, "one migration, sent to A");
    double end = hx_now() + 30;
    while (!tw_log_has("sim-b", job, "restored step") && hx_now() < end)
        usleep(200000);
    cr_assert(tw_log_has("sim-a", job, "checkpointed at step"), "A checkpointed it");
    cr_assert(tw_log_has("sim-b", job, "restored step"), "B restored it");

    /* A, drained, takes no new job while B is busy; undrained, it does */
    long long next = mlp("next", 7402);
    usleep(3000000);
    cr_assert_eq(tw_allocated_on(next), 0, "nothing on the drained node");
    node_post(tw.node_a, "undrain", NULL);
    tw_await(tw_runs_on, next, tw.node_a, 60, "not running on A once undrained", next);

    wt_expect_state(job, "COMPLETED", 150, wt_dump_logs);
    cr_assert_eq(wt_db_int("SELECT max(step) FROM job_metrics WHERE job_id = %lld", job), STEPS,
                 "every step, none lost");
    cr_assert_eq(wt_db_int("SELECT count(*) FROM job_events WHERE job_id = %lld"
                           " AND event = 'requeue'",
                           job),
                 0, "moved, never requeued");
    ledger_matches(job, "migration");
    /* its checkpoints reached the scheduler (libringjob's SAVED every 100 steps, through B's
     * metrics posts after the move): the last one, at step STEPS - 100 */
    cr_assert_eq(wt_db_int("SELECT COALESCE(checkpoint_step, -1) FROM jobs WHERE id = %lld", job),
                 STEPS - 100, "the job's last checkpoint is recorded");
    cr_assert_eq(wt_db_int("SELECT count(*) FROM jobs WHERE id = %lld AND checkpoint_at"
                           " BETWEEN submitted_at AND now()",
                           job),
                 1, "with its time");
    fprintf(stderr, "drain --evacuate: the job ran on B %.1f s after the drain\n", moved);
    wt_cancel(next);
    hx_finish();
}

Test(drain_live, a_gpu_fault_moves_the_job_to_a_healthy_gpu_and_is_recorded)
{
    long long job = mlp("faulted", 7403);
    tw_await(tw_runs_on, job, tw.node_a, 60, "not running on A", job);
    tw_await(tw_reported, job, 20, 60, "fewer than 20 reports", job);

    double t0 = hx_now();
    wt_fault("sim-a", "gpu 0 xid 79");
    tw_await(tw_runs_on, job, tw.node_b, 60, "not running on B after the fault", job);
    double moved = hx_now() - t0;
    char sql[320];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM gpu_faults WHERE node_id = %lld AND gpu_idx = 0"
             " AND reason = 'xid 79' AND cleared_at IS NULL AND %lld = ANY(jobs)",
             tw.node_a, job);
    cr_assert_eq(hx_sql_num(sql), 1, "the fault is recorded with the job it hit");
    json_t *node = hx_expect_json(hx_json("GET", "/api/v1/nodes", hx.admin, NULL), 200);
    const json_t *a = json_array_get(json_object_get(node, "items"), 0);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(a, "gpus"), 0), "fault")),
        "xid 79", "the API shows the GPU's fault");
    json_decref(node);

    /* the GPU healthy again takes work */
    wt_fault("sim-a", "gpu 0 ok");
    long long next = mlp("next", 7404);
    tw_await(tw_runs_on, next, tw.node_a, 60, "not running on A once healthy", next);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM gpu_faults WHERE node_id = %lld AND cleared_at IS NOT NULL",
             tw.node_a);
    cr_assert_eq(hx_sql_num(sql), 1, "the fault is closed");

    wt_expect_state(job, "COMPLETED", 150, wt_dump_logs);
    cr_assert_eq(wt_db_int("SELECT max(step) FROM job_metrics WHERE job_id = %lld", job), STEPS,
                 "every step, none lost");
    ledger_matches(job, "fault");
    /* the GPU time it lost is recorded against the fault too (sql/048), and shown with it */
    double lost = job_num("SELECT sum(lost_fault_s) FROM usage_ledger WHERE job_id = %lld", job);
    snprintf(sql, sizeof(sql), "/api/v1/nodes/%lld", tw.node_a);
    node = hx_expect_json(hx_json("GET", sql, hx.admin, NULL), 200);
    const json_t *f = json_array_get(json_object_get(node, "faults"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(f, "reason")), "xid 79");
    double charged = json_number_value(json_object_get(f, "lost_gpu_s"));
    cr_assert(fabs(charged - lost) <= 0.01 + 0.01 * lost, "fault charged %.3f s of %.3f lost",
              charged, lost);
    json_decref(node);
    fprintf(stderr,
            "GPU fault: the job ran on B %.1f s after the fault was injected"
            " (node_timeout 5 s)\n",
            moved);
    wt_cancel(next);
    hx_finish();
}
