/* What if (docs/whatif.md): a real ringmasterd replays the jobs that completed, as a trace,
 * under policies of the core, each in a real ringmaster-sim process. The jobs here are made
 * through the API as a worker would report them (STARTING by the scheduler, then RUNNING and
 * COMPLETED), and what the live scheduler measured of one of them is written as its rounds
 * and its reports would have (job_sched, job_metric_sums, jobs.grad_*); the live test with
 * real jobs is integration-worker's whatif_live. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(whatif, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

static char worker[128];

static void node(void)
{
    hx_user("w1", "worker", worker);
    json_decref(hx_expect_json(
        hx_json("POST", "/api/v1/nodes", worker,
                "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":[{\"index\":0,"
                "\"model\":\"V100\",\"memory_bytes\":1},{\"index\":1,\"model\":\"V100\","
                "\"memory_bytes\":1}]}"),
        201));
}

static void report(long long id, const char *state)
{
    char path[64], body[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
    snprintf(body, sizeof(body), "{\"state\":\"%s\"}", state);
    json_decref(hx_expect_json(hx_json("POST", path, worker, body), 200));
}

/* A job of gpus GPUs that the scheduler starts and the worker runs for about run_ms. */
static long long completed_job(const char *name, int gpus, int run_ms)
{
    long long id = hx_submit(hx.admin, name, gpus);
    double end = hx_now() + 30;
    while (strcmp(hx_job_state(id), "STARTING") && hx_now() < end)
        usleep(100000);
    cr_assert_str_eq(hx_job_state(id), "STARTING", "job %lld started", id);
    report(id, "RUNNING");
    usleep((useconds_t)run_ms * 1000);
    report(id, "COMPLETED");
    return id;
}

static json_t *run_of(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/whatif/%lld", id);
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

Test(whatif, the_jobs_that_completed_are_replayed_under_each_policy)
{
    /* nothing to replay on: no node, then no completed job */
    hx_expect_problem(hx_json("POST", "/api/v1/whatif", hx.admin, "{}"), 409, NULL);
    node();
    hx_expect_problem(hx_json("POST", "/api/v1/whatif", hx.admin, "{}"), 422, NULL);
    /* bad requests say which field */
    hx_expect_problem(hx_json("POST", "/api/v1/whatif", hx.admin, "{\"since_s\":5}"), 400,
                      "since_s");
    hx_expect_problem(hx_json("POST", "/api/v1/whatif", hx.admin, "{\"policies\":[\"nope\"]}"),
                      400, "policies");
    hx_expect_problem(
        hx_json("POST", "/api/v1/whatif", hx.admin, "{\"policies\":[\"fifo\",\"fifo\"]}"), 400,
        "policies");
    hx_expect_problem(hx_json("POST", "/api/v1/whatif", hx.admin, "{\"until\":1}"), 400, "until");

    long long a = completed_job("a", 1, 1500);
    long long b = completed_job("b", 2, 800);
    (void)a;
    /* what the live scheduler would have measured of b: a speed model fitted from its step
     * times at 1 and 2 GPUs, its course, a convergence fit, gradient statistics */
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_sched (job_id, model) VALUES (%lld, '{\"source\":\"fitted\","
             "\"dataset_size\":1000,\"speed\":{\"theta\":[0.05,0.001,0.02,0,0,0.1],"
             "\"batch_per_gpu\":32},\"convergence\":{\"b0\":0.01,\"b1\":1,\"b2\":0.1}}')"
             " ON CONFLICT (job_id) DO UPDATE SET model = EXCLUDED.model;"
             " INSERT INTO job_metric_sums (job_id, world_size, gpu_model, reports, timed,"
             " sum_seconds, sum_samples) VALUES (%lld, 1, 'V100', 10, 10, 1.0, 320),"
             " (%lld, 2, 'V100', 5, 5, 0.6, 320);"
             " UPDATE jobs SET grad_sqr = 2, grad_var = 8 WHERE id = %lld",
             b, b, b, b);
    hx_sql_do(sql);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/whatif", hx.admin,
                                       "{\"since_s\":3600,\"policies\":[\"fifo\",\"ringmaster\","
                                       "\"tiresias\"]}"),
                               202);
    long long id = json_integer_value(json_object_get(j, "id"));
    cr_assert_gt(id, 0);
    cr_assert_eq(json_integer_value(json_object_get(j, "jobs")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(j, "cluster")), "1x2:v100");
    cr_assert_str_eq(json_string_value(json_object_get(j, "policy_in_force")), "ringmaster");
    json_t *m = json_object_get(j, "measured");
    cr_assert_eq(json_integer_value(json_object_get(m, "jobs")), 2);
    double mean = json_number_value(json_object_get(m, "mean_jct_s"));
    cr_assert(mean > 0.8 && mean < 30, "measured mean JCT %.2f s", mean);
    json_t *models = json_object_get(m, "models");
    static const char *const kinds[] = {"speed", "course", "convergence", "gradient"};
    for (size_t k = 0; k < 4; k++)
        cr_assert_eq(json_integer_value(json_object_get(models, kinds[k])), 1,
                     "b's measured %s", kinds[k]);
    json_decref(j);

    /* it runs in the background: its progress grows to a row per policy */
    double end = hx_now() + 90;
    for (j = run_of(id); strcmp(json_string_value(json_object_get(j, "state")), "running") == 0 &&
                         hx_now() < end;
         j = run_of(id)) {
        json_decref(j);
        usleep(200000);
    }
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "done", "error: %s",
                     json_string_value(json_object_get(j, "error")));
    json_t *rows = json_object_get(j, "results");
    cr_assert_eq(json_array_size(rows), 3);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "progress"), "done")), 3);
    static const char *const names[] = {"fifo", "ringmaster", "tiresias"};
    for (size_t k = 0; k < 3; k++) {
        json_t *r = json_array_get(rows, k);
        cr_assert_str_eq(json_string_value(json_object_get(r, "policy")), names[k]);
        cr_assert_eq(json_is_true(json_object_get(r, "in_force")), k == 1);
        cr_assert_eq(json_integer_value(json_object_get(r, "jobs")), 2);
        double jct = json_number_value(json_object_get(r, "mean_jct_s"));
        cr_assert(jct > 0 && jct < 120, "%s: mean JCT %.2f s", names[k], jct);
        cr_assert(json_is_number(json_object_get(r, "p99_jct_s")));
        cr_assert(json_is_number(json_object_get(r, "mean_queue_s")));
        cr_assert(json_is_number(json_object_get(r, "utilization")));
        cr_assert_eq(json_integer_value(json_object_get(r, "jobs_own_speed")), 1,
                     "%s: b replayed at its own measured speed", names[k]);
    }
    json_decref(j);

    /* the trace it replayed, for ringmaster-sim run --trace */
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/whatif/%lld/trace", id);
    struct hx_resp *t = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
    cr_assert_eq(t->status, 200);
    cr_assert(strstr(t->body, "job_id,submit_time_s,num_gpus,duration_s,user,elastic,min_gpus,"
                              "max_gpus,speed_model,speed_theta,batch_per_gpu,dataset_size,"
                              "course,loss_model,grad_sqr,grad_var\n"),
              "%s", t->body);
    int lines = 0;
    for (const char *c = t->body; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, 3, "a header and a row per job: %s", t->body);
    cr_assert(strstr(t->body, ",admin,0,,,none,,,,,,,\n"), "a: rigid, nothing measured: %s",
              t->body);
    cr_assert(strstr(t->body, ",admin,0,,,fitted,0.05;0.001;0.02;0;0;0.1,32,1000,"
                              "1:10:0.100000;2:5:0.120000,0.01;1;0.1,2,8\n"),
              "b with what was measured: %s", t->body);
    hx_free(t);

    /* listed, newest first; an unknown run is 404 */
    j = hx_expect_json(hx_json("GET", "/api/v1/whatif", hx.admin, NULL), 200);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(j, "items"), 0),
                                                    "id")),
                 id);
    json_decref(j);
    hx_expect_problem(hx_json("GET", "/api/v1/whatif/999", hx.admin, NULL), 404, NULL);
    hx_finish();
}

/* A run left 'running' by a server that stopped is failed by the next one. */
Test(whatif, a_run_a_stopped_server_left_is_failed_at_the_next_start)
{
    hx_sql_do("INSERT INTO whatif_runs (user_id, since, until, policy_in_force, policies, cluster,"
              " jobs, trace, measured) SELECT id, now(), now(), 'fifo', '{fifo}', '1x1:v100', 1,"
              " 'x', '{}' FROM users WHERE role = 'admin'");
    cr_assert_eq(hx_stop_server(SIGTERM, 20), 0);
    hx_start_server();
    json_t *j = hx_expect_json(hx_json("GET", "/api/v1/whatif", hx.admin, NULL), 200);
    json_t *r = json_array_get(json_object_get(j, "items"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(r, "state")), "failed");
    cr_assert(strstr(json_string_value(json_object_get(r, "error")), "stopped"));
    json_decref(j);
    hx_finish();
}
