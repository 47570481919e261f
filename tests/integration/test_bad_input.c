/* Bad input: every kind gets the right status and a problem document, none gives a 500,
 * and none changes what is stored. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(bad_input, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

static void post_job(const char *body, long status, const char *field)
{
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin, body), status, field);
}

/* Waits (bounded) until the scheduler has explained job id's wait: its round is written. */
static void wait_scheduled(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    for (int i = 0; i < 100; i++) {
        json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        int done = json_is_string(json_object_get(j, "pending_reason"));
        json_decref(j);
        if (done)
            return;
        usleep(50000);
    }
    cr_assert_fail("job %lld was never explained", id);
}

Test(bad_input, malformed_and_wrong_shapes_are_400)
{
    wait_scheduled(hx_submit(hx.admin, "keep-me", 1));
    char *before = hx_all_jobs(hx.admin);
    post_job("{\"name\":", 400, NULL);
    post_job("not json at all", 400, NULL);
    post_job("", 400, NULL);
    post_job("[1,2]", 400, NULL);
    post_job("{\"name\":\"a\",\"name\":\"b\",\"command\":[\"x\"],\"gpus\":1}", 400, NULL);
    post_job("{\"name\":1,\"command\":[\"x\"],\"gpus\":1}", 400, "name");
    post_job("{\"name\":\"a\",\"command\":\"rm -rf /\",\"gpus\":1}", 400, "command");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":\"4\"}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":true}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"env\":{\"A\":2}}", 400, "env.A");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"model\":[]}", 400, "model");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"extra\":0}", 400, "extra");
    char *after = hx_all_jobs(hx.admin);
    cr_assert_str_eq(after, before, "bad input changed stored data");
    free(after);
    free(before);
    hx_finish();
}

Test(bad_input, negative_and_huge_numbers_are_400)
{
    char *before = hx_all_jobs(hx.admin);
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":-1}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":0}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1025}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":9223372036854775807}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":99999999999999999999999}", 400, NULL);
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1e300}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":4,\"min_gpus\":8}", 400, "min_gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":4,\"max_gpus\":2}", 400, "max_gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"priority\":-2147483649}", 400,
             "priority");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"batch_per_gpu\":-5}", 400,
             "batch_per_gpu");
    /* null is no default (it was taken as 1) */
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":null}", 400, "gpus");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"priority\":null}", 400,
             "priority");
    post_job("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"env\":null}", 400, "env");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?limit=0", hx.admin, NULL), 400, "limit");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?limit=1001", hx.admin, NULL), 400, "limit");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?limit=-1", hx.admin, NULL), 400, "limit");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?after=-3", hx.admin, NULL), 400, "after");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?after=99999999999999999999999", hx.admin, NULL),
                      400, "after");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?state=DONE", hx.admin, NULL), 400, "state");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs/-1", hx.admin, NULL), 404, NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs/99999999999999999999", hx.admin, NULL), 404,
                      NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs/abc", hx.admin, NULL), 404, NULL);
    char *after = hx_all_jobs(hx.admin);
    cr_assert_str_eq(after, before);
    free(after);
    free(before);
    hx_finish();
}

Test(bad_input, sql_looking_strings_are_stored_verbatim)
{
    const char *evil = "x'); DROP TABLE jobs; --";
    json_t *b = json_pack("{s:s, s:[s, s], s:i, s:{s:s}}", "name", evil, "command", "sh",
                          "'; DELETE FROM users; --", "gpus", 1, "env", "Q", "\" OR 1=1 --");
    char *text = json_dumps(b, JSON_COMPACT);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, text), 201);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", json_integer_value(json_object_get(j, "id")));
    json_t *g = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(g, "name")), evil);
    cr_assert(json_equal(json_object_get(g, "command"), json_object_get(b, "command")));
    cr_assert(json_equal(json_object_get(g, "env"), json_object_get(b, "env")));
    json_decref(
        hx_expect_json(hx_json("GET", "/api/v1/jobs?user=x'%20OR%20'1'='1", hx.admin, NULL), 200));
    json_t *all = hx_expect_json(hx_json("GET", "/api/v1/users", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(all, "items")), 1, "users still there");
    json_decref(all);
    json_decref(g);
    json_decref(j);
    json_decref(b);
    free(text);
    hx_finish();
}

Test(bad_input, routes_methods_and_tokens)
{
    hx_expect_problem(hx_json("GET", "/api/v1/nothing", hx.admin, NULL), 404, NULL);
    hx_expect_problem(hx_json("GET", "/api/v2/jobs", hx.admin, NULL), 404, NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs/1/explode", hx.admin, NULL), 404, NULL);
    struct hx_resp *r = hx_json("DELETE", "/api/v1/jobs", hx.admin, NULL);
    cr_assert_str_eq(r->allow, "POST, GET");
    hx_expect_problem(r, 405, NULL);
    r = hx_json("PUT", "/api/v1/jobs/1/cancel", hx.admin, NULL);
    cr_assert_str_eq(r->allow, "POST");
    hx_expect_problem(r, 405, NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", NULL, NULL), 401, NULL);
    char bad[128];
    snprintf(bad, sizeof(bad), "%s", hx.admin);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", bad, NULL), 401, NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", "not-a-token", NULL), 401, NULL);
    hx_expect_problem(hx_call("GET", "/api/v1/jobs", NULL, NULL, NULL, 0,
                              "Authorization: Basic YWRtaW46YWRtaW4="),
                      401, NULL);
    hx_expect_problem(
        hx_json("POST", "/api/v1/jobs", NULL, "{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1}"),
        401, NULL);
    char *all = hx_all_jobs(hx.admin);
    cr_assert_str_eq(all, "[]", "nothing was stored");
    free(all);
    hx_finish();
}

Test(bad_input, bodies_too_large_or_not_json)
{
    size_t big = (1u << 20) + 1;
    char *body = malloc(big + 1);
    memset(body, ' ', big);
    body[0] = '{';
    body[big - 1] = '}';
    body[big] = '\0';
    hx_expect_problem(
        hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", body, big, NULL), 413, NULL);
    hx_expect_problem(
        hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", body, (size_t)-1, NULL), 413,
        NULL);
    free(body);
    const char *ok = "{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1}";
    hx_expect_problem(hx_call("POST", "/api/v1/jobs", hx.admin, "text/plain", ok, strlen(ok), NULL),
                      415, NULL);
    hx_expect_problem(hx_call("POST", "/api/v1/jobs", hx.admin, NULL, ok, strlen(ok), NULL), 415,
                      NULL);
    hx_expect_problem(
        hx_call("POST", "/api/v1/jobs", hx.admin, "application/jsonx", ok, strlen(ok), NULL), 415,
        NULL);
    json_decref(hx_expect_json(hx_call("POST", "/api/v1/jobs", hx.admin,
                                       "application/json; charset=utf-8", ok, strlen(ok), NULL),
                               201));
    char *all = hx_all_jobs(hx.admin);
    json_t *list = json_loads(all, 0, NULL);
    cr_assert_eq(json_array_size(list), 1, "only the good submission was stored");
    json_decref(list);
    free(all);
    hx_finish();
}
