/* Sweeps: many jobs in one request (POST /api/v1/jobs:batch, one transaction) and job arrays
 * (ringctl submit --array), as users script hyper-parameter searches (issue 13 item 1). */
#include <criterion/criterion.h>
#include <pthread.h>
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
    /* the same three and one more: another request too, refused whole */
    char more[1024];
    snprintf(more, sizeof(more), "%.*s,{\"name\":\"x\",\"command\":[\"t\"],\"gpus\":1}]}",
             (int)strlen(three) - 2, three);
    hx_expect_problem(hx_call("POST", "/api/v1/jobs:batch", hx.admin, "application/json", more,
                              strlen(more), "Idempotency-Key: sweep-1"),
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
                      "jobs[0]");
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
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, big), 413, "jobs");
    free(big);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 0);
    hx_finish();
}

/* A job that can never fit the cluster up refuses the batch, naming it (422), unless it
 * holds. */
Test(batch, a_job_larger_than_the_cluster_is_named)
{
    const char *node = "{\"name\":\"n1\",\"cpus\":16,\"memory_bytes\":1000,\"gpus\":["
                       "{\"index\":0,\"model\":\"sim\",\"memory_bytes\":1},"
                       "{\"index\":1,\"model\":\"sim\",\"memory_bytes\":1}]}";
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, node), 201));
    const char *big = "{\"jobs\":[{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":2},"
                      "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":4}]}";
    struct hx_resp *r = hx_json("POST", "/api/v1/jobs:batch", hx.admin, big);
    cr_assert(strstr(r->body, "jobs[1].gpus: the job needs 4 GPUs"), "%s", r->body);
    hx_expect_problem(r, 422, "jobs[1].gpus");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 0, "all or nothing");
    const char *held = "{\"jobs\":[{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":2},"
                       "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":4,\"hold\":true}]}";
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/jobs:batch", hx.admin, held), 201));
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 2);
    hx_finish();
}

/* One try of an array batch under the key "race" (concurrent retries of one sweep). */
struct racer {
    long status;
    long long first, array;
};

static const char *race_body =
    "{\"jobs\":[{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":0},"
    "{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":1},"
    "{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":2}]}";

static void *race(void *arg)
{
    struct racer *rc = arg;
    struct hx_resp *r = hx_call("POST", "/api/v1/jobs:batch", hx.admin, "application/json",
                                race_body, strlen(race_body), "Idempotency-Key: race");
    rc->status = r->status;
    json_t *items = r->json ? json_object_get(r->json, "items") : NULL;
    rc->first = json_integer_value(json_object_get(json_array_get(items, 0), "id"));
    rc->array = r->json ? json_integer_value(json_object_get(r->json, "array_id")) : -1;
    hx_free(r);
    return NULL;
}

/* Retries racing each other store the array once: one 201, the others 200 with its jobs. */
Test(batch, concurrent_retries_store_one_array)
{
    enum { N = 6 };
    pthread_t t[N];
    struct racer rc[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, race, &rc[i]);
    int created = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        cr_assert(rc[i].status == 201 || rc[i].status == 200, "status %ld", rc[i].status);
        created += rc[i].status == 201;
    }
    cr_assert_eq(created, 1);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(rc[i].first, rc[0].first, "every try answers the same jobs");
        cr_assert_eq(rc[i].array, rc[0].first, "and the same array, its first job's id");
    }
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 3, "no twin");
    cr_assert_eq(hx_sql_num("SELECT count(DISTINCT array_id) FROM jobs"), 1);
    hx_finish();
}

/* A body of n jobs, each with an argument of pad bytes (new; free()). */
static char *jobs_body(int n, size_t pad)
{
    size_t cap = (size_t)n * (pad + 64) + 32, o = 0;
    char *arg = malloc(pad + 1), *b = malloc(cap);
    memset(arg, 'x', pad);
    arg[pad] = '\0';
    o += (size_t)snprintf(b + o, cap - o, "{\"jobs\":[");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(b + o, cap - o,
                              "%s{\"name\":\"s%d\",\"command\":[\"t\",\"%s\"],\"gpus\":1}",
                              i ? "," : "", i, arg);
    snprintf(b + o, cap - o, "]}");
    free(arg);
    return b;
}

/* 1,000 jobs are one batch, answered in their order; a body over the server's bound (1 MiB)
 * is refused before it is read, and stores nothing. */
Test(batch, a_thousand_jobs_in_order_and_the_body_bound)
{
    char *body = jobs_body(1000, 8);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs:batch", hx.admin, body), 201);
    free(body);
    json_t *items = json_object_get(j, "items");
    cr_assert_eq(json_array_size(items), 1000);
    long long prev = 0;
    for (size_t i = 0; i < 1000; i++) {
        json_t *it = json_array_get(items, i);
        char want[16];
        snprintf(want, sizeof(want), "s%zu", i);
        cr_assert_str_eq(json_string_value(json_object_get(it, "name")), want);
        cr_assert_gt(json_integer_value(json_object_get(it, "id")), prev, "ids in order");
        prev = json_integer_value(json_object_get(it, "id"));
        cr_assert(json_is_null(json_object_get(it, "array_id")), "no array");
    }
    json_decref(j);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 1000);
    body = jobs_body(1000, 1100); /* about 1.2 MB */
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, body), 413, NULL);
    free(body);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 1000, "nothing more stored");
    hx_finish();
}

/* An array through the API: every job carries array_index, each a different one; the array's
 * id is its first job's, each job gets RINGJOB_ARRAY_INDEX, and ?array= lists them. */
Test(batch, an_array_through_the_api)
{
    const char *mixed = "{\"jobs\":[{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":0},"
                        "{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1}]}";
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, mixed), 400,
                      "jobs[1].array_index");
    const char *twice = "{\"jobs\":[{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":4},"
                        "{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":4}]}";
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, twice), 400,
                      "jobs[1].array_index");
    const char *neg = "{\"jobs\":[{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":-1}]}";
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, neg), 400,
                      "jobs[0].array_index");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":1}"),
                      400, "array_index");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 0);
    long long lone = hx_submit(hx.admin, "lone", 1);
    const char *arr = "{\"jobs\":[{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":2,"
                      "\"env\":{\"LR\":\"0.1\"}},"
                      "{\"name\":\"a\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":7}]}";
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs:batch", hx.admin, arr), 201);
    json_t *items = json_object_get(j, "items");
    long long first = json_integer_value(json_object_get(json_array_get(items, 0), "id"));
    cr_assert_gt(first, lone);
    cr_assert_eq(json_integer_value(json_object_get(j, "array_id")), first);
    json_t *second = json_array_get(items, 1);
    cr_assert_eq(json_integer_value(json_object_get(second, "array_id")), first);
    cr_assert_eq(json_integer_value(json_object_get(second, "array_index")), 7);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(second, "env"), "RINGJOB_ARRAY_INDEX")),
        "7");
    json_t *env0 = json_object_get(json_array_get(items, 0), "env");
    cr_assert_str_eq(json_string_value(json_object_get(env0, "LR")), "0.1");
    cr_assert_str_eq(json_string_value(json_object_get(env0, "RINGJOB_ARRAY_INDEX")), "2");
    json_decref(j);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs?array=%lld", first);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 2, "the lone job is not listed");
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", lone);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert(json_is_null(json_object_get(j, "array_id")));
    cr_assert(json_is_null(json_object_get(j, "array_index")));
    json_decref(j);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?array=x", hx.admin, NULL), 400, "array");
    hx_expect_problem(hx_json("GET", "/api/v1/jobs?array=0", hx.admin, NULL), 400, "array");
    hx_finish();
}

/* Runs ringctl with args against the test's server as the admin; its stdout into out.
 * Returns its exit status. */
static int ringctl(const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "RINGMASTER_URL=http://127.0.0.1:%d RINGMASTER_TOKEN=%s %s %s",
             hx.port, hx.admin, RINGCTL_PATH, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

static int count_lines(const char *s)
{
    int lines = 0;
    for (; *s; s++)
        lines += *s == '\n';
    return lines;
}

/* ringctl submit --array: one job per index, RINGJOB_ARRAY_INDEX in each one's environment,
 * one row each, one request; list shows them as ARRAY_ID_INDEX; cancel of the array's id
 * cancels them all. */
Test(batch, a_job_array_from_ringctl)
{
    char out[8192] = "", q[256];
    cr_assert_eq(ringctl("submit --name sweep --gpus 1 --array 3-7 -- python3 train.py", out,
                         sizeof(out)),
                 0, "%s", out);
    cr_assert_eq(count_lines(out), 5, "five ids: %s", out);
    long long array = strtoll(out, NULL, 10);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE name LIKE 'sweep[%'"), 5);
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM jobs WHERE array_id = %lld AND array_index BETWEEN 3 AND 7"
             " AND env->>'RINGJOB_ARRAY_INDEX' = array_index::text",
             array);
    cr_assert_eq(hx_sql_num(q), 5, "each job's index in its environment");
    snprintf(q, sizeof(q), "SELECT id FROM jobs WHERE array_id = %lld AND array_index = 3", array);
    cr_assert_eq(hx_sql_num(q), array, "the array's id is its first job's");
    json_t *j = hx_expect_json(hx_json("GET", "/api/v1/jobs?name_prefix=sweep%5B", hx.admin, NULL),
                               200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 5);
    json_decref(j);
    /* lists, steps and a lone job beside */
    cr_assert_eq(ringctl("submit --name odd --gpus 1 --array 1,3,5-7,10-16:3 -- t", out, sizeof(out)), 0);
    cr_assert_eq(count_lines(out), 8, "1 3 5 6 7 10 13 16: %s", out);
    long long odd = strtoll(out, NULL, 10);
    long long lone = hx_submit(hx.admin, "lone", 1);
    char want[64];
    cr_assert_eq(ringctl("list --all", out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "%lld_16 ", odd);
    cr_assert(strstr(out, want), "list shows ARRAY_ID_INDEX: %s", out);
    snprintf(want, sizeof(want), "\n%lld ", lone);
    cr_assert(strstr(out, want), "a lone job by its id: %s", out);
    snprintf(q, sizeof(q), "list --array %lld -o id", odd);
    cr_assert_eq(ringctl(q, out, sizeof(out)), 0);
    cr_assert_eq(count_lines(out), 8, "%s", out);
    /* cancel one element by ARRAY_ID_INDEX, then the whole array by its id */
    snprintf(q, sizeof(q), "cancel %lld_13", odd);
    cr_assert_eq(ringctl(q, out, sizeof(out)), 0, "%s", out);
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM jobs WHERE array_id = %lld AND state = 'CANCELLED'", odd);
    cr_assert_eq(hx_sql_num(q), 1);
    snprintf(q, sizeof(q), "cancel %lld", odd);
    cr_assert_eq(ringctl(q, out, sizeof(out)), 0, "%s", out);
    cr_assert(strstr(out, "7 cancelled"), "%s", out);
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM jobs WHERE array_id = %lld AND state = 'CANCELLED'", odd);
    cr_assert_eq(hx_sql_num(q), 8, "every job of the array");
    cr_assert_str_eq(hx_job_state(lone), "PENDING", "nothing else");
    snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE array_id = %lld AND state = 'PENDING'",
             array);
    cr_assert_eq(hx_sql_num(q), 5, "nor another array");
    snprintf(q, sizeof(q), "cancel %lld_99 2>&1", odd);
    cr_assert_eq(ringctl(q, out, sizeof(out)), 1, "no such index: %s", out);
    cr_assert_eq(ringctl("submit --name s --gpus 1 --array 9-2 -- t 2>/dev/null", out, sizeof(out)), 2,
                 "a bad range is a usage error");
    cr_assert_eq(ringctl("submit --name s --gpus 1 --array 0-9%2 -- t 2>/dev/null", out, sizeof(out)), 2,
                 "no throttle");
    hx_finish();
}
