/* What if, live (docs/whatif.md): a real ringmasterd under its default policy (ringmaster), a
 * real worker of two simulated GPUs, three real rigid `mpirun ... train-mlp` jobs of one GPU
 * each (the third waits for the first to end). Once they completed, POST /api/v1/whatif
 * replays them in ringmaster-sim under every policy of the core: a row per policy, and the
 * row of the policy in force agrees with what the jobs measured (mean JCT within 15 % + 2 s,
 * the tolerance docs/whatif.md gives for rigid jobs). Every wait is bounded. */
#include <criterion/criterion.h>
#include <math.h>
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

/* The run's row once it is no longer running (new), within 120 s. */
static json_t *finished_run(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/whatif/%lld", id);
    double end = hx_now() + 120;
    for (;;) {
        json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        if (strcmp(json_string_value(json_object_get(j, "state")), "running") || hx_now() > end)
            return j;
        json_decref(j);
        usleep(300000);
    }
}

static void setup(void)
{
    hx_setup();
    wt_scheduler("{\"interval_s\":1,\"min_resize_interval_s\":0,\"resize_cost_s\":0}");
    worker = wt_spawn_worker("w1", 2);
}

static void teardown(void)
{
    wt_stop_worker(&worker);
    hx_teardown();
}

TestSuite(whatif_live, .init = setup, .fini = teardown, .timeout = 300);

Test(whatif_live, the_policy_in_force_replays_what_the_jobs_measured)
{
    long long jobs[3];
    static const long steps[3] = {120, 60, 90};
    for (int k = 0; k < 3; k++) { /* 50 ms a step: 6, 3 and 4.5 s of training */
        char body[1024];
        snprintf(body, sizeof(body),
                 "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
                 "\"--print-every\",\"50\",\"--sleep-us-per-sample\",\"1562\"],\"gpus\":1,"
                 "\"env\":{" WT_ASAN_ENV "}}",
                 TRAIN_MLP_PATH, steps[k], 40 + k);
        jobs[k] = wt_post_job(body);
        usleep(200000);
    }
    for (int k = 0; k < 3; k++)
        wt_expect_state(jobs[k], "COMPLETED", 180, wt_dump_logs);

    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/whatif", hx.admin, "{\"since_s\":3600}"),
                               202);
    long long id = json_integer_value(json_object_get(j, "id"));
    cr_assert_eq(json_integer_value(json_object_get(j, "jobs")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(j, "policy_in_force")), "ringmaster");
    size_t npolicies = json_array_size(json_object_get(j, "policies"));
    cr_assert_geq(npolicies, 8, "every policy of the core");
    double measured = json_number_value(json_object_get(json_object_get(j, "measured"),
                                                        "mean_jct_s"));
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(j, "measured"), "models"), "course")),
                 3, "every job's course (its minibatches at 1 GPU) is in the trace");
    json_decref(j);

    j = finished_run(id);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "done", "%s",
                     json_string_value(json_object_get(j, "error")));
    json_t *rows = json_object_get(j, "results");
    cr_assert_eq(json_array_size(rows), npolicies, "a row per policy");
    size_t i;
    json_t *r;
    int in_force = 0;
    json_array_foreach(rows, i, r)
    {
        double jct = json_number_value(json_object_get(r, "mean_jct_s"));
        fprintf(stderr, "whatif_live: %-12s mean JCT %6.1f s (measured %.1f s)%s\n",
                json_string_value(json_object_get(r, "policy")), jct, measured,
                json_is_true(json_object_get(r, "in_force")) ? " in force" : "");
        cr_assert_eq(json_integer_value(json_object_get(r, "jobs")), 3);
        if (!json_is_true(json_object_get(r, "in_force")))
            continue;
        in_force++;
        cr_assert_str_eq(json_string_value(json_object_get(r, "policy")), "ringmaster");
        cr_assert_leq(fabs(jct - measured), 0.15 * measured + 2.0,
                      "the replay of the policy in force: %.1f s, measured %.1f s", jct, measured);
    }
    cr_assert_eq(in_force, 1);
    json_decref(j);
    hx_finish();
}

/* An elastic job (1..2 GPUs) shares the worker with a rigid one, grows to 2 GPUs when that one
 * ends, and its speed model is fitted from its own step times at 1 and 2 GPUs: the trace
 * carries that model and its course, the replay runs it at its own measured speed, and the
 * policy in force again agrees with what the jobs measured. */
Test(whatif_live, an_elastic_job_is_replayed_at_its_own_measured_speed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"grow\",\"command\":[\"%s\",\"--steps\",\"300\",\"--seed\",\"50\","
             "\"--print-every\",\"50\",\"--sleep-us-per-sample\",\"1562\"],\"gpus\":1,"
             "\"min_gpus\":1,\"max_gpus\":2,\"elastic\":true,\"model\":{\"class\":\"resnet110\"},"
             "\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH);
    long long a = wt_post_job(body);
    usleep(200000);
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"80\",\"--seed\",\"51\","
             "\"--print-every\",\"50\",\"--sleep-us-per-sample\",\"1562\"],\"gpus\":1,"
             "\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH);
    long long b = wt_post_job(body);
    wt_expect_state(b, "COMPLETED", 120, wt_dump_logs);
    wt_expect_state(a, "COMPLETED", 180, wt_dump_logs);
    cr_assert_eq(wt_db_int("SELECT count(DISTINCT world_size) FROM job_metric_sums"
                           " WHERE job_id = %lld", a),
                 2, "the elastic job ran at 1 and 2 GPUs");
    cr_assert_eq(wt_db_int("SELECT count(*) FROM job_sched WHERE job_id = %lld"
                           " AND model->>'source' = 'fitted'", a),
                 1, "its speed model was fitted from its own step times");

    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/whatif", hx.admin,
                                       "{\"since_s\":3600,\"policies\":[\"ringmaster\",\"fifo\"]}"),
                               202);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_t *models = json_object_get(json_object_get(j, "measured"), "models");
    cr_assert_eq(json_integer_value(json_object_get(models, "speed")), 1, "a's fitted model");
    cr_assert_eq(json_integer_value(json_object_get(models, "course")), 2);
    double measured = json_number_value(json_object_get(json_object_get(j, "measured"),
                                                        "mean_jct_s"));
    json_decref(j);

    char path[64];
    snprintf(path, sizeof(path), "/api/v1/whatif/%lld/trace", id);
    struct hx_resp *t = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
    cr_assert_eq(t->status, 200);
    char row[64];
    snprintf(row, sizeof(row), "\n%lld,", a);
    const char *ra = strstr(t->body, row);
    cr_assert(ra && strstr(ra, ",1,1,2,fitted,") && strstr(ra, ",1:") && strstr(ra, ";2:"),
              "a: elastic 1..2, its fitted model and its course at 1 and 2 GPUs: %s", t->body);
    fprintf(stderr, "whatif_live: trace\n%s", t->body);
    hx_free(t);

    j = finished_run(id);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "done", "%s",
                     json_string_value(json_object_get(j, "error")));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(j, "results"), i, r)
    {
        double jct = json_number_value(json_object_get(r, "mean_jct_s"));
        fprintf(stderr, "whatif_live: %-12s mean JCT %6.1f s (measured %.1f s)%s\n",
                json_string_value(json_object_get(r, "policy")), jct, measured,
                json_is_true(json_object_get(r, "in_force")) ? " in force" : "");
        cr_assert_eq(json_integer_value(json_object_get(r, "jobs_own_speed")), 1,
                     "a replayed at its own measured speed");
        if (json_is_true(json_object_get(r, "in_force")))
            cr_assert_leq(fabs(jct - measured), 0.15 * measured + 2.0,
                          "the replay of the policy in force: %.1f s, measured %.1f s", jct,
                          measured);
    }
    json_decref(j);
    hx_finish();
}
