/* Execution plans and GPU models live (docs/plans.md, "Live"): a real ringmasterd under the
 * ringmaster policy, real ringmaster-workers with simulated GPUs of named models, and real
 * `mpirun ... train-mlp` jobs that declare their model size and plans. The scheduler's model
 * chooses each job's plan and GPU model; the job receives the plan as RINGJOB_PLAN and prints
 * what ringjob_plan() says, which the tests read back from the job's log. Every wait is
 * bounded.
 *
 * The jobs carry the built-in resnet110 speed model (DESIGN.md), so the choices below follow
 * from scheduler/plan.c's model with its figures (GPU memory 40 GB for a model it does not
 * know; a100: 2x compute, 80 GB; v100: the reference, 32 GB). */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define MAX_WORKERS 2

static pid_t workers[MAX_WORKERS];
static char ckpt_root[64];

/* Starts a worker named name with gpus simulated GPUs of model (NULL: "simulated"), its
 * output in hx.dir/worker-<name>.log. */
static pid_t spawn_worker(const char *name, int gpus, const char *model)
{
    char log[96];
    snprintf(log, sizeof(log), "worker-%s.log", name);
    return wt_start_worker(name, &(struct wt_worker){.gpus = gpus, .model = model, .log = log});
}

static void setup(void)
{
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-ckpt", NULL); /* the server inherits it */
    hx_setup();
    /* Paused until every job of the test is in: the first round sees them all. */
    wt_scheduler("{\"policy\":\"ringmaster\",\"interval_s\":1,\"min_resize_interval_s\":0,"
                 "\"resize_cost_s\":0,\"grace_s\":30,\"paused\":true}");
}

static void teardown(void)
{
    for (int k = 0; k < MAX_WORKERS; k++)
        if (wt_stop_worker(&workers[k]) != 0)
            fprintf(stderr, "worker %d did not stop cleanly (logs in %s)\n", k, hx.dir);
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

TestSuite(plans_live, .init = setup, .fini = teardown, .timeout = 240);

static void resume_scheduler(void)
{
    wt_scheduler("{\"paused\":false}");
}

/* Waits (bounded) until n nodes are UP. */
static void wait_nodes(int n)
{
    double end = hx_now() + 30;
    while (hx_sql_num("SELECT count(*) FROM nodes WHERE state = 'UP'") < n && hx_now() < end)
        usleep(100000);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM nodes WHERE state = 'UP'"), n,
                 "%d workers registered", n);
}

/* Submits a train-mlp job of the given extra fields; returns its id. */
static long long submit(const char *name, long steps, const char *fields)
{
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--print-every\","
             "\"500\"],%s,\"env\":{" WT_ASAN_ENV "}}",
             name, TRAIN_MLP_PATH, steps, fields);
    return wt_post_job(body);
}

/* The job's current_plan as the API shows it, into buf. */
static const char *current_plan(long long job, char *buf, size_t len)
{
    json_t *j = wt_job(job);
    const char *s = json_string_value(json_object_get(j, "current_plan"));
    snprintf(buf, len, "%s", s ? s : "(null)");
    json_decref(j);
    return buf;
}

/* Waits (bounded) until the job's log, as the server stores it, holds text. */
static int log_has(long long job, const char *text, double timeout_s)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log", job);
    double end = hx_now() + timeout_s;
    for (;;) {
        struct hx_resp *r = hx_json("GET", path, hx.admin, NULL);
        int found = r->status == 200 && strstr(r->body, text) != NULL;
        hx_free(r);
        if (found || hx_now() > end)
            return found;
        usleep(200000);
    }
}

static void cancel(long long job)
{
    wt_cancel(job);
    wt_expect_state(job, "CANCELLED", 30, NULL);
}

/* The plan of the job's action of kind (the latest), into buf. */
static const char *action_plan(long long job, const char *kind, char *buf, size_t len)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT spec->>'plan' FROM actions WHERE job_id = %lld AND kind = '%s'"
             " ORDER BY id DESC LIMIT 1",
             job, kind);
    struct pg_result *r = hx_sql(sql);
    snprintf(buf, len, "%s", PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "(none)");
    PQclear(r);
    return buf;
}

/* A 4-billion-parameter job (2 GB of activations) that supports data parallel, ZeRO-2,
 * ZeRO-3 and offload and asks for offload. On one 40 GB GPU only offload fits (DP and the
 * ZeRO stages hold all 64 GB of states at d = 1); on two, ZeRO-2 fits (8 + 28 + 2 GB) and is
 * the fastest (no host traffic, less than ZeRO-3's). A 1-GPU job without plans shares the
 * node at first; when it ends the elastic job grows to 2 GPUs and the model replans it, so
 * it restarts with ZeRO-2. */
Test(plans_live, the_model_chooses_the_plan_and_the_job_runs_it)
{
    char buf[64];
    workers[0] = spawn_worker("sim-p", 2, NULL);
    wait_nodes(1);
    long long a = submit("planned", 100000000,
                         "\"gpus\":1,\"min_gpus\":1,\"max_gpus\":2,\"elastic\":true,"
                         "\"model\":{\"class\":\"resnet110\",\"epochs\":1000},"
                         "\"model_size\":4,\"activation_gb\":2,"
                         "\"plans\":[\"dp\",\"zero2\",\"zero3\",\"offload\"],\"plan\":\"offload\"");
    long long b = submit("plain", 400, "\"gpus\":1");
    resume_scheduler();
    wt_expect_state(a, "RUNNING", 60, NULL);
    cr_assert_str_eq(action_plan(a, "start", buf, sizeof(buf)), "offload",
                     "one GPU: only offload fits");
    cr_assert(log_has(a, "train-mlp: execution plan offload", 30),
              "the job's ranks got offload in RINGJOB_PLAN");
    json_t *j = wt_job(a);
    cr_assert_str_eq(json_string_value(json_object_get(j, "plan")), "offload");
    cr_assert_eq(json_number_value(json_object_get(j, "model_size")), 4.0);
    cr_assert_eq(json_array_size(json_object_get(j, "plans")), 4);
    json_decref(j);

    wt_expect_state(b, "COMPLETED", 120, NULL);
    cr_assert(log_has(b, "train-mlp: execution plan dp", 10), "a job without plans runs dp");
    cr_assert(log_has(a, "train-mlp: execution plan zero2", 90),
              "after the resize the ranks run zero2");
    /* Its first resize replanned it to zero2 and was carried out. On a loaded machine two CPU
     * ranks may measure no faster than one, and the fitted model may then shrink it later. */
    cr_assert_eq(wt_db_int("SELECT count(*) FROM (SELECT state, spec->>'plan' AS plan FROM"
                           " actions WHERE job_id = %lld AND kind = 'resize' ORDER BY id LIMIT 1)"
                           " f WHERE state = 'done' AND plan = 'zero2'",
                           a),
                 1, "replanned by its first resize, carried out");
    double end = hx_now() + 30;
    while (wt_db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2", a) <
               5 &&
           hx_now() < end)
        usleep(200000);
    cr_assert_geq(
        wt_db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2", a), 5,
        "it trains on two ranks");
    cr_assert_str_eq(current_plan(a, buf, sizeof(buf)), "zero2");
    cancel(a);
    cr_assert_eq(wt_stop_worker(&workers[0]), 0);
    hx_finish();
}

/* Two 1-GPU nodes, an a100 and a v100. The "big" job (3 billion parameters, 4 GB of
 * activations) fits one v100 (32 GB) only with offload, a 25x slower step, while one a100
 * (80 GB) runs it data parallel at twice the reference compute. The "small" job has no
 * plans: the a100 only doubles its compute. Ringmaster serves the job of the shortest
 * predicted remaining time first (big: 1,000 epochs to go, small: 2,000), on the model where
 * it runs fastest, so big gets the a100 although small was submitted first, and small the
 * v100. */
Test(plans_live, the_job_that_gains_most_gets_the_faster_gpu_model)
{
    char buf[64];
    workers[0] = spawn_worker("sim-a100", 1, "a100");
    workers[1] = spawn_worker("sim-v100", 1, "v100");
    wait_nodes(2);
    long long a100 = (long long)hx_sql_num("SELECT id FROM nodes WHERE name = 'sim-a100'");
    long long v100 = (long long)hx_sql_num("SELECT id FROM nodes WHERE name = 'sim-v100'");
    long long small = submit("small", 100000000,
                             "\"gpus\":1,\"model\":{\"class\":\"resnet110\",\"epochs\":2000}");
    long long big = submit("big", 100000000,
                           "\"gpus\":1,\"model\":{\"class\":\"resnet110\",\"epochs\":1000},"
                           "\"model_size\":3,\"activation_gb\":4,"
                           "\"plans\":[\"dp\",\"zero3\",\"offload\"],\"plan\":\"offload\"");
    resume_scheduler();
    wt_expect_state(big, "RUNNING", 60, NULL);
    wt_expect_state(small, "RUNNING", 60, NULL);
    cr_assert_eq(wt_db_int("SELECT min(node_id) FROM allocations WHERE job_id = %lld", big), a100,
                 "big runs on the a100");
    cr_assert_eq(wt_db_int("SELECT min(node_id) FROM allocations WHERE job_id = %lld", small), v100,
                 "small runs on the v100");
    cr_assert_str_eq(action_plan(big, "start", buf, sizeof(buf)), "dp",
                     "on 80 GB the model runs it data parallel");
    cr_assert(log_has(big, "train-mlp: execution plan dp", 30));
    cr_assert_str_eq(current_plan(big, buf, sizeof(buf)), "dp");
    json_t *j = wt_job(big);
    json_t *alloc = json_array_get(json_object_get(j, "allocation"), 0);
    cr_assert_eq(json_integer_value(json_object_get(alloc, "node")), a100);
    json_decref(j);
    /* Both keep their models over the following rounds (no hopping). */
    sleep(3);
    cr_assert_eq(
        wt_db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind <> 'start'", big), 0,
        "big was not moved");
    cr_assert_eq(
        wt_db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind <> 'start'", small), 0,
        "small was not moved");
    cr_assert_eq(wt_db_int("SELECT min(node_id) FROM allocations WHERE job_id = %lld", small),
                 v100);
    /* A running job that runs another plan than the model's (as after an upgrade of the
     * model) is replanned where it is: a resize at the same size, with the model's plan. */
    char sql[160];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET current_plan = 'offload' WHERE id = %lld", big);
    hx_sql_do(sql);
    double end = hx_now() + 60;
    while (wt_db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'resize'"
                     " AND state = 'done' AND (spec->>'world_size')::int = 1",
                     big) < 1 &&
           hx_now() < end)
        usleep(200000);
    cr_assert_str_eq(action_plan(big, "resize", buf, sizeof(buf)), "dp");
    cr_assert_eq(wt_db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'resize'"
                           " AND state = 'done'",
                           big),
                 1, "replanned once, on its node, carried out");
    cr_assert_str_eq(current_plan(big, buf, sizeof(buf)), "dp");
    cr_assert(log_has(big, "train-mlp: restored step", 30), "restarted from its checkpoint");
    cr_assert_eq(wt_db_int("SELECT min(node_id) FROM allocations WHERE job_id = %lld", big), a100);
    cancel(big);
    cancel(small);
    cr_assert_eq(wt_stop_worker(&workers[0]), 0);
    cr_assert_eq(wt_stop_worker(&workers[1]), 0);
    hx_finish();
}

/* Through the API: a bad declaration is a problem document naming the field; a good one is
 * stored with its defaults and answered in the job, with no current plan before a start. */
Test(plans_live, declarations_are_validated_stored_and_answered)
{
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"x\",\"command\":[\"true\"],\"gpus\":1,"
                              "\"model_size\":2,\"plans\":[\"dp\",\"zero9\"]}"),
                      400, "plans[1]");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"x\",\"command\":[\"true\"],\"gpus\":1,"
                              "\"plans\":[\"dp\"]}"),
                      400, "plans");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"x\",\"command\":[\"true\"],\"gpus\":1,"
                              "\"model_size\":2,\"plans\":[\"dp\"],\"plan\":\"zero3\"}"),
                      400, "plan");
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"x\",\"command\":[\"true\"],\"gpus\":1,"
                                       "\"model_size\":7,\"plans\":[\"zero3\",\"offload\"]}"),
                               201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    j = wt_job(id);
    cr_assert_eq(json_number_value(json_object_get(j, "model_size")), 7.0);
    cr_assert_eq(json_number_value(json_object_get(j, "activation_gb")), 0.0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "plan")), "zero3", "the first of plans");
    cr_assert_eq(json_integer_value(json_object_get(j, "max_tp")), 1);
    cr_assert(json_is_null(json_object_get(j, "current_plan")));
    json_decref(j);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE plan_spec->>'plan' = 'zero3'"), 1);
    j = wt_job(hx_submit(hx.admin, "plain", 1));
    cr_assert_null(json_object_get(j, "plans"), "no plan fields without a declaration");
    json_decref(j);
    hx_finish();
}
