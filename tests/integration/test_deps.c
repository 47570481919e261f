/* deps: jobs that run after others (issue 33 item 4) over HTTP, on a real PostgreSQL and
 * ringmasterd with a registered node and no worker (a job's end is written as a worker's
 * report would): a dependent waits with its reason, starts once its dependency completed, is
 * cancelled (or held) when it can no longer be met; arrays; and the 400s of bad input. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(deps, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

#define WAIT_S 20.0

/* The first cell of fmt (a query of the job id arg) as a number, once it equals want or after
 * WAIT_S (want NAN: at once). */
static double job_num(const char *fmt, long long arg, double want)
{
    char sql[512];
    double until = hx_now() + (isnan(want) ? 0 : WAIT_S), v;
    snprintf(sql, sizeof(sql), fmt, arg);
    while ((v = hx_sql_num(sql)) != want && hx_now() < until)
        usleep(100000);
    return v;
}

/* Job id ends in state, as its worker's report would write it. */
static void job_ends(long long id, const char *state)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET state = '%s' WHERE id = %lld", state, id);
    hx_sql_do(sql);
}

/* POST body to path as the admin; the answer's want status and its JSON (new). */
static json_t *post(const char *path, const char *body, long want)
{
    return hx_expect_json(hx_json("POST", path, hx.admin, body), want);
}

static void register_node(int ngpus)
{
    char body[1024];
    int o = snprintf(body, sizeof(body),
                     "{\"name\":\"n1\",\"cpus\":16,\"memory_bytes\":1000,"
                     "\"gpus\":[");
    for (int g = 0; g < ngpus; g++)
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"index\":%d,\"model\":\"sim\",\"memory_bytes\":1}", g ? "," : "", g);
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    json_decref(post("/api/v1/nodes", body, 201));
}

static long long submit_after(int gpus, const char *after)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"name\":\"j\",\"command\":[\"t\"],\"gpus\":%d%s%s}", gpus,
             after ? ",\"after\":" : "", after ? after : "");
    json_t *j = post("/api/v1/jobs", body, 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* The job's pending_reason once it holds want (bounded wait; into buf). */
static const char *wait_reason(long long id, const char *want, char *buf, size_t len)
{
    char path[64];
    double until = hx_now() + WAIT_S;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    buf[0] = '\0';
    do {
        json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        const char *r = json_string_value(json_object_get(j, "pending_reason"));
        snprintf(buf, len, "%s", r ? r : "");
        json_decref(j);
        if (strstr(buf, want))
            break;
        usleep(100000);
    } while (hx_now() < until);
    return buf;
}

/* Job a (a_gpus) and b (1 GPU) after it (when), on a node of node_gpus GPUs. */
static void pair(int node_gpus, int a_gpus, const char *when, long long *a, long long *b)
{
    char after[96];
    register_node(node_gpus);
    *a = submit_after(a_gpus, NULL);
    snprintf(after, sizeof(after), "[{\"job\":%lld%s%s%s}]", *a, when ? ",\"when\":\"" : "",
             when ? when : "", when ? "\"" : "");
    *b = submit_after(1, after);
}

#define ALLOC_SQL "SELECT count(*) FROM allocations WHERE job_id = %lld"
#define CANCELLED_SQL "SELECT (state = 'CANCELLED')::int FROM jobs WHERE id = %lld"

Test(deps, a_dependent_waits_with_its_reason_and_starts_when_its_job_completed)
{
    long long a, b;
    char want[96], got[512];
    pair(8, 4, NULL, &a, &b);
    cr_assert_eq(job_num(ALLOC_SQL, a, 4), 4);
    snprintf(want, sizeof(want), "waiting for job %lld, STARTING", a);
    cr_assert_str_eq(wait_reason(b, want, got, sizeof(got)), want);
    cr_assert_eq(job_num(ALLOC_SQL, b, NAN), 0,
                 "4 GPUs are free, but its dependency has not ended");

    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", b);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    char *text = json_dumps(json_object_get(j, "after"), JSON_COMPACT);
    snprintf(want, sizeof(want), "[{\"job\":%lld,\"when\":\"ok\"}]", a);
    cr_assert_str_eq(text, want, "the job keeps its after, with when filled in");
    free(text);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "PENDING");
    json_decref(j);

    job_ends(a, "COMPLETED");
    cr_assert_eq(job_num(ALLOC_SQL, b, 1), 1, "it starts once its dependency completed");
    hx_finish();
}

Test(deps, a_cancelled_dependency_cancels_the_dependent_with_the_reason)
{
    long long a, b;
    char path[64], want[160];
    pair(4, 4, "ok", &a, &b);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", a);
    json_decref(post(path, NULL, 200));
    cr_assert_eq(job_num(CANCELLED_SQL, b, 1), 1, "cancelled by the scheduler");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/events", b);
    json_t *ev = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *last = json_array_get(json_object_get(ev, "items"), 1);
    snprintf(want, sizeof(want),
             "dependency on job %lld can no longer be met: it CANCELLED"
             " (after ok)",
             a);
    cr_assert_str_eq(json_string_value(json_object_get(last, "detail")), want);
    cr_assert_str_eq(json_string_value(json_object_get(last, "actor")), "scheduler");
    json_decref(ev);
    cr_assert_eq(job_num("SELECT (finished_at IS NOT NULL)::int FROM jobs WHERE id = %lld", b, NAN),
                 1);
    hx_finish();
}

Test(deps, the_setting_holds_instead_and_notok_runs_after_a_failure)
{
    json_decref(hx_expect_json(
        hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"hold_unmet_deps\":true}"), 200));
    register_node(4);
    long long a = submit_after(1, NULL);
    char after[96], want[160], got[512];
    snprintf(after, sizeof(after), "[{\"job\":%lld,\"when\":\"notok\"}]", a);
    long long b = submit_after(1, after);
    long long c = submit_after(1, after);
    cr_assert_eq(job_num(ALLOC_SQL, a, 1), 1);
    job_ends(a, "COMPLETED");
    snprintf(want, sizeof(want),
             "held: dependency on job %lld can no longer be met: it COMPLETED (after notok)", a);
    cr_assert_str_eq(wait_reason(b, want, got, sizeof(got)), want);
    cr_assert_str_eq(hx_job_state(c), "PENDING");
    cr_assert_eq(job_num(ALLOC_SQL, b, NAN), 0);

    long long d = submit_after(1, NULL);
    snprintf(after, sizeof(after), "[{\"job\":%lld,\"when\":\"notok\"}]", d);
    long long e = submit_after(1, after);
    cr_assert_eq(job_num(ALLOC_SQL, d, 1), 1);
    job_ends(d, "FAILED");
    cr_assert_eq(job_num(ALLOC_SQL, e, 1), 1, "notok: it runs after a failure");
    hx_finish();
}

Test(deps, an_array_dependency_waits_for_every_element)
{
    register_node(8);
    json_t *arr =
        post("/api/v1/jobs:batch",
             "{\"jobs\":[{\"name\":\"s\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":0},"
             "{\"name\":\"s\",\"command\":[\"t\"],\"gpus\":1,\"array_index\":1}]}",
             201);
    long long id = json_integer_value(json_object_get(arr, "array_id"));
    long long second =
        json_integer_value(json_object_get(json_array_get(json_object_get(arr, "items"), 1), "id"));
    json_decref(arr);
    char after[64], want[96], got[512];
    snprintf(after, sizeof(after), "[{\"array\":%lld,\"when\":\"any\"}]", id);
    long long b = submit_after(1, after);
    job_ends(id, "FAILED");
    snprintf(want, sizeof(want), "waiting for array %lld, 1 of 2 ended", id);
    cr_assert_str_eq(wait_reason(b, want, got, sizeof(got)), want);
    cr_assert_eq(job_num(ALLOC_SQL, b, NAN), 0);
    job_ends(second, "COMPLETED");
    cr_assert_eq(job_num(ALLOC_SQL, b, 1), 1, "every element ended");
    hx_finish();
}

/* A submission of after (a JSON text) is refused with 400 naming field. */
static void refused(const char *after, const char *field)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"name\":\"x\",\"command\":[\"t\"],\"gpus\":1,\"after\":%s}",
             after);
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin, body), 400, field);
}

Test(deps, bad_dependencies_are_refused_naming_the_field)
{
    long long a = submit_after(1, NULL);
    char after[96];
    refused("\"x\"", "after");
    refused("[]", "after");
    refused("[{}]", "after[0]");
    refused("[{\"job\":1,\"array\":1}]", "after[0]");
    refused("[{\"job\":0}]", "after[0]");
    refused("[{\"job\":\"1\"}]", "after[0]");
    refused("[{\"job\":1,\"when\":\"never\"}]", "after[0]");
    refused("[{\"job\":1,\"if\":\"ok\"}]", "after[0]");
    refused("[7]", "after[0]");
    snprintf(after, sizeof(after), "[{\"job\":%lld},{\"job\":999999}]", a);
    refused(after, "after[1].job");
    snprintf(after, sizeof(after), "[{\"array\":%lld}]", a);
    refused(after, "after[0].array");
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jobs\":[{\"name\":\"x\",\"command\":[\"t\"],\"gpus\":1},{\"name\":\"y\","
             "\"command\":[\"t\"],\"gpus\":1,"
             "\"after\":[{\"job\":999999}]}]}");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs:batch", hx.admin, body), 400,
                      "jobs[1].after[0].job");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 1, "nothing stored");
    hx_finish();
}
