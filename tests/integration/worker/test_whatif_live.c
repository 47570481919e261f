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
    json_decref(j);

    char path[64];
    snprintf(path, sizeof(path), "/api/v1/whatif/%lld", id);
    double end = hx_now() + 120;
    for (;;) {
        j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        if (strcmp(json_string_value(json_object_get(j, "state")), "running") || hx_now() > end)
            break;
        json_decref(j);
        usleep(300000);
    }
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
