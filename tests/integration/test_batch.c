/* Sweeps: many jobs in one request (POST /api/v1/jobs:batch, one transaction) and job arrays
 * (ringctl submit --array), as users script hyper-parameter searches (issue 13 item 1). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

TestSuite(batch, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

static const char *three =
    "{\"jobs\":[{\"name\":\"lr-0.1\",\"command\":[\"t\",\"--lr\",\"0.1\"],\"gpus\":1},"
    "{\"name\":\"lr-0.01\",\"command\":[\"t\",\"--lr\",\"0.01\"],\"gpus\":2},"
    "{\"name\":\"lr-0.001\",\"command\":[\"t\",\"--lr\",\"0.001\"],\"gpus\":1,"
    "\"total_steps\":500}]}";

Test(batch, many_jobs_in_one_transaction_and_a_retry_makes_no_twins)
{
    struct hx_resp *r =
        hx_call("POST", "/api/v1/jobs:batch", hx.admin, "application/json", three,
                strlen(three), "Idempotency-Key: sweep-1");
    json_t *j = hx_expect_json(r, 201);
    json_t *items = json_object_get(j, "items");
    cr_assert_eq(json_array_size(items), 3);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 1), "name")),
                     "lr-0.01");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(items, 2), "total_steps")), 500);
    long long first = json_integer_value(json_object_get(json_array_get(items, 0), "id"));
    json_decref(j);
    /* the retry answers the same jobs */
    r = hx_call("POST", "/api/v1/jobs:batch", hx.admin, "application/json", three, strlen(three),
                "Idempotency-Key: sweep-1");
    j = hx_expect_json(r, 200);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(j, "items"), 0),
                                                    "id")),
                 first);
    json_decref(j);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 3, "no twin");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event = 'submit'"), 3);
    /* the same key with other jobs */
    const char *other = "{\"jobs\":[{\"name\":\"x\",\"command\":[\"t\"],\"gpus\":1}]}";
    hx_expect_problem(hx_call("POST", "/api/v1/jobs:batch", hx.admin, "application/json", other,
                              strlen(other), "Idempotency-Key: sweep-1"),
                      409, NULL);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 3, "nothing of it was kept");
    hx_finish();
}

Test(batch, one_bad_job_refuses_the_whole_batch_and_names_it)
{
    const char *bad = "{\"jobs\":[{\"name\":\"ok\",\"command\":[\"t\"],\"gpus\":1},"
                      "{\"name\":\"bad\",\"command\":[\"t\"],\"gpus\":0}]}";
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, bad), 400, "jobs[1].gpus");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 0, "all or nothing");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, "{\"jobs\":[]}"), 400,
                      "jobs");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, "{\"jobs\":[1]}"), 400,
                      "jobs[]");
    hx_expect_problem(
        hx_json("POST", "/api/v1/jobs:batch", hx.admin, "{\"jobs\":[],\"extra\":1}"), 400,
        "extra");
    /* 1,001 jobs are too many */
    size_t cap = 1001 * 48 + 32, n = 0;
    char *big = malloc(cap);
    n += (size_t)snprintf(big + n, cap - n, "{\"jobs\":[");
    for (int i = 0; i < 1001; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s{\"name\":\"j\",\"command\":[\"t\"],\"gpus\":1}",
                              i ? "," : "");
    snprintf(big + n, cap - n, "]}");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, big), 400, "jobs");
    free(big);
    hx_finish();
}

/* ringctl submit --array: one job per index, RINGJOB_ARRAY_INDEX in each one's environment,
 * one row each, one request. */
Test(batch, a_job_array_from_ringctl)
{
    char cmd[1024], out[4096] = "";
    snprintf(cmd, sizeof(cmd),
             "RINGMASTER_URL=http://127.0.0.1:%d RINGMASTER_TOKEN=%s %s submit --name sweep"
             " --gpus 1 --array 3-7 -- python3 train.py 2>&1",
             hx.port, hx.admin, RINGCTL_PATH);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s", out);
    int lines = 0;
    for (char *c = out; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, 5, "five ids: %s", out);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE name LIKE 'sweep[%'"), 5);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE name = 'sweep[5]'"
                            " AND env->>'RINGJOB_ARRAY_INDEX' = '5'"),
                 1);
    json_t *j = hx_expect_json(hx_json("GET", "/api/v1/jobs?name_prefix=sweep%5B", hx.admin, NULL),
                               200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 5);
    json_decref(j);
    snprintf(cmd, sizeof(cmd),
             "RINGMASTER_URL=http://127.0.0.1:%d RINGMASTER_TOKEN=%s %s submit --name s"
             " --array 9-2 -- t >/dev/null 2>&1",
             hx.port, hx.admin, RINGCTL_PATH);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2, "a bad range is a usage error");
    hx_finish();
}
