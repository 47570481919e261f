/* Drains (issue 32 item 6): POST /api/v1/nodes/{id}/drain and /undrain, checked by field, kept
 * across heartbeats, read by the scheduler: a drained node gets no new job, its running job
 * stays, and with evacuate the job is migrated off; an undrained node takes work again. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(drain, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

#define WAIT_S 20.0

static double num(const char *fmt, long long a, long long b)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, a, b);
    return hx_sql_num(sql);
}

/* Waits (bounded) until the query's number is want; returns the last value. */
static double wait_num(const char *fmt, long long a, long long b, double want)
{
    double until = hx_now() + WAIT_S, v;
    while ((v = num(fmt, a, b)) != want && hx_now() < until)
        usleep(100000);
    return v;
}

/* Waits until the scheduler has run two more rounds (one wholly after the caller's change). */
static void two_rounds(void)
{
    double from = hx_sql_num("SELECT COALESCE(max(id), 0) FROM sched_rounds");
    double until = hx_now() + WAIT_S;
    while (hx_sql_num("SELECT COALESCE(max(id), 0) FROM sched_rounds") < from + 2 &&
           hx_now() < until)
        usleep(100000);
    cr_assert_geq(hx_sql_num("SELECT COALESCE(max(id), 0) FROM sched_rounds"), from + 2,
                  "two rounds ran");
}

/* Registers node name of ngpus GPUs, answered status (201 new, 200 again); its id. */
static long long node_as(const char *name, int ngpus, long status)
{
    char body[1024];
    int o = snprintf(body, sizeof(body),
                     "{\"name\":\"%s\",\"cpus\":16,\"memory_bytes\":1000,\"gpus\":[", name);
    for (int g = 0; g < ngpus; g++)
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"index\":%d,\"model\":\"sim\",\"memory_bytes\":1}", g ? "," : "", g);
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, body), status);
    long long id = json_integer_value(json_object_get(n, "id"));
    json_decref(n);
    return id;
}

static long long node(const char *name, int ngpus)
{
    return node_as(name, ngpus, 201);
}

static json_t *drain(long long id, const char *body, long status)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/drain", id);
    return hx_expect_json(hx_json("POST", path, hx.admin, body), status);
}

static void drain_bad(long long id, const char *body, long status, const char *field)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/drain", id);
    hx_expect_problem(hx_json("POST", path, hx.admin, body), status, field);
}

static json_t *undrain(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/undrain", id);
    return hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200);
}

static long long submit(int gpus)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"name\":\"d\",\"command\":[\"t\"],\"gpus\":%d}", gpus);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

#define ON_NODE "SELECT count(*) FROM allocations WHERE job_id = %lld AND node_id = %lld"
#define ALLOCS "SELECT count(*) FROM allocations WHERE job_id = %lld AND 0 = %lld"

static void running(long long id)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET state = 'RUNNING' WHERE id = %lld", id);
    hx_sql_do(sql);
}

static void cancel(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
}

Test(drain, the_api_checks_each_field_and_shows_the_drain)
{
    long long n = node("n1", 4);
    drain_bad(n, "{}", 400, "reason");
    drain_bad(n, "{\"reason\":\"\"}", 400, "reason");
    drain_bad(n, "{\"reason\":\"a\\u0001b\"}", 400, "reason");
    drain_bad(n, "{\"reason\":7}", 400, "reason");
    drain_bad(n, "{\"reason\":\"x\",\"gpus\":[4]}", 400, "gpus");
    drain_bad(n, "{\"reason\":\"x\",\"gpus\":[1,1]}", 400, "gpus");
    drain_bad(n, "{\"reason\":\"x\",\"gpus\":[]}", 400, "gpus");
    drain_bad(n, "{\"reason\":\"x\",\"gpus\":[-1]}", 400, "gpus");
    drain_bad(n, "{\"reason\":\"x\",\"evacuate\":1}", 400, "evacuate");
    drain_bad(n, "{\"reason\":\"x\",\"why\":1}", 400, "why");
    drain_bad(n + 1000, "{\"reason\":\"x\"}", 404, NULL);
    char user[128], path[64];
    hx_user("alice", "user", user);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/drain", n);
    hx_expect_problem(hx_json("POST", path, user, "{\"reason\":\"x\"}"), 403, NULL);

    json_t *got = drain(n, "{\"reason\":\"fan failing\",\"gpus\":[2,0]}", 200);
    json_t *d = json_object_get(got, "drain");
    cr_assert(json_is_object(d), "the node answers its drain");
    cr_assert_str_eq(json_string_value(json_object_get(d, "reason")), "fan failing");
    cr_assert_str_eq(json_string_value(json_object_get(d, "by")), "admin");
    cr_assert(json_is_string(json_object_get(d, "since")));
    cr_assert(json_is_false(json_object_get(d, "evacuate")));
    cr_assert_eq(json_array_size(json_object_get(d, "gpus")), 2);
    json_decref(got);
    /* a heartbeat (the node is UP again every time) keeps it */
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", n);
    got = hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200);
    cr_assert(json_is_object(json_object_get(got, "drain")), "kept by the heartbeat");
    json_decref(got);
    got = hx_expect_json(hx_json("GET", "/api/v1/nodes", hx.admin, NULL), 200);
    d = json_object_get(json_array_get(json_object_get(got, "items"), 0), "drain");
    cr_assert_str_eq(json_string_value(json_object_get(d, "reason")), "fan failing", "listed");
    json_decref(got);
    /* a drain of a drained node replaces it: all GPUs now, to evacuate */
    got = drain(n, "{\"reason\":\"all\",\"evacuate\":true}", 200);
    d = json_object_get(got, "drain");
    cr_assert_str_eq(json_string_value(json_object_get(d, "reason")), "all");
    cr_assert(json_is_null(json_object_get(d, "gpus")), "every GPU");
    cr_assert(json_is_true(json_object_get(d, "evacuate")));
    json_decref(got);
    got = undrain(n);
    cr_assert(json_is_null(json_object_get(got, "drain")), "undrained");
    json_decref(got);
    hx_finish();
}

Test(drain, a_drained_node_keeps_its_job_takes_no_new_one_and_evacuates_on_demand)
{
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"policy\":\"ringmaster\",\"interval_s\":1,"
                                       "\"node_timeout_s\":3600}"),
                               200));
    long long n1 = node("n1", 4), n2 = node("n2", 4);
    long long a = submit(2);
    cr_assert_eq(wait_num(ALLOCS, a, 0, 2), 2);
    long long x = (long long)num("SELECT min(node_id) + 0 * %lld FROM allocations"
                                 " WHERE job_id = %lld",
                                 0, a);
    long long y = x == n1 ? n2 : n1;
    running(a);

    /* x drained: a stays, its 2 free GPUs take nobody */
    json_decref(drain(x, "{\"reason\":\"maintenance\"}", 200));
    long long b = submit(2), c = submit(2);
    cr_assert_eq(wait_num(ON_NODE, b, y, 2), 2, "to the node not drained");
    cr_assert_eq(wait_num(ON_NODE, c, y, 2), 2, "to the node not drained");
    running(b);
    running(c);
    long long d = submit(2);
    two_rounds();
    two_rounds();
    cr_assert_eq(num(ON_NODE, a, x), 2, "the running job stays on the drained node");
    cr_assert_eq(num(ALLOCS, d, 0), 0, "the drained node's free GPUs are not given out");
    cr_assert_eq(num(ALLOCS, b, 0) + num(ALLOCS, c, 0), 4);

    /* evacuate: with room on y (c and d cancelled), a is migrated there */
    cancel(d);
    cancel(c);
    cr_assert_eq(wait_num(ALLOCS, c, 0, 0), 0);
    json_decref(drain(x, "{\"reason\":\"maintenance\",\"evacuate\":true}", 200));
    cr_assert_eq(wait_num(ON_NODE, a, y, 2), 2, "evacuated to the other node");
    cr_assert_eq(num("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'migrate'"
                     " AND node_id = %lld",
                     a, x),
                 1, "by a migration sent to where it ran");
    cr_assert_eq(num("SELECT count(*) + 0 * %lld FROM jobs WHERE id = %lld"
                     " AND state IN ('MIGRATING', 'RUNNING')",
                     0, a),
                 1, "not lost: it moves");

    /* undrained, the node takes work again */
    json_decref(undrain(x));
    long long e = submit(4);
    cr_assert_eq(wait_num(ON_NODE, e, x, 4), 4, "the undrained node takes the next job");
    hx_finish();
}

static void health_bad(long long id, const char *body, const char *token, long status,
                       const char *field)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/health", id);
    hx_expect_problem(hx_json("POST", path, token, body), status, field);
}

static json_t *health(long long id, const char *body)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/health", id);
    return hx_expect_json(hx_json("POST", path, hx.admin, body), 200);
}

/* A GPU's fault (POST .../health, what a worker sends): checked by field, shown on the GPU,
 * kept in gpu_faults with the jobs on the GPU, counted in /metrics; the scheduler gives the
 * GPU to nobody and moves its job off; cleared, the GPU takes work again. */
Test(drain, a_gpu_fault_is_shown_recorded_and_its_job_moved_off)
{
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"policy\":\"ringmaster\",\"interval_s\":1,"
                                       "\"node_timeout_s\":3600}"),
                               200));
    long long n1 = node("n1", 2), n2 = node("n2", 2);
    health_bad(n1, "{}", hx.admin, 400, "gpus");
    health_bad(n1, "{\"gpus\":[{\"index\":0}]}", hx.admin, 400, "gpus[0]");
    health_bad(n1, "{\"gpus\":[{\"index\":0,\"fault\":\"\"}]}", hx.admin, 400, "gpus[0]");
    health_bad(n1, "{\"gpus\":[{\"index\":0,\"fault\":\"a\"},{\"index\":0,\"fault\":\"b\"}]}",
               hx.admin, 400, "gpus[1]");
    health_bad(n1, "{\"gpus\":[{\"index\":7,\"fault\":\"xid 79\"}]}", hx.admin, 400, "gpus");
    health_bad(n1, "{\"gpus\":[],\"x\":1}", hx.admin, 400, "x");
    health_bad(n1 + 1000, "{\"gpus\":[]}", hx.admin, 404, NULL);
    char w[128];
    hx_user("w9", "worker", w);
    health_bad(n1, "{\"gpus\":[]}", w, 403, NULL);

    long long a = submit(2);
    cr_assert_eq(wait_num(ALLOCS, a, 0, 2), 2);
    long long x = (long long)num("SELECT min(node_id) + 0 * %lld FROM allocations"
                                 " WHERE job_id = %lld",
                                 0, a);
    long long y = x == n1 ? n2 : n1;
    running(a);
    json_t *got = health(x, "{\"gpus\":[{\"index\":1,\"fault\":\"xid 79\"}]}");
    const json_t *g1 = json_array_get(json_object_get(got, "gpus"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(g1, "fault")), "xid 79");
    cr_assert(json_is_string(json_object_get(g1, "fault_since")));
    cr_assert(
        json_is_null(json_object_get(json_array_get(json_object_get(got, "gpus"), 0), "fault")));
    json_decref(got);
    cr_assert_eq(num("SELECT count(*) FROM gpu_faults WHERE node_id = %lld AND %lld = ANY(jobs)"
                     " AND cleared_at IS NULL",
                     x, a),
                 1, "recorded with the job on the GPU");
    cr_assert_eq(wait_num(ON_NODE, a, y, 2), 2, "the job moved off the failed GPU");
    cr_assert_eq(num("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'migrate'"
                     " AND node_id = %lld",
                     a, x),
                 1);
    struct hx_resp *m = hx_call("GET", "/metrics", NULL, NULL, NULL, 0, NULL);
    cr_assert(strstr(m->body, "ringmaster_gpus_faulty 1"), "%s", m->body);
    hx_free(m);
    /* a 1-GPU job fits beside the failed GPU; a 2-GPU one does not */
    long long b = submit(1), c = submit(2);
    cr_assert_eq(wait_num(ON_NODE, b, x, 1), 1);
    two_rounds();
    cr_assert_eq(num("SELECT count(*) FROM allocations WHERE job_id = %lld AND node_id = %lld"
                     " AND gpu_idx = 1",
                     b, x),
                 0, "not the failed GPU");
    cr_assert_eq(num(ALLOCS, c, 0), 0, "no room without the failed GPU");
    /* cleared: the GPU takes work again and the fault is closed */
    json_decref(health(x, "{\"gpus\":[]}"));
    cr_assert_eq(num("SELECT count(*) + 0 * %lld FROM gpu_faults WHERE node_id = %lld"
                     " AND cleared_at IS NOT NULL",
                     0, x),
                 1);
    cancel(b);
    cr_assert_eq(wait_num(ON_NODE, c, x, 2), 2, "the healthy node takes the 2-GPU job");
    hx_finish();
}

/* An admin's labels on a node: merged, removed by null, checked by field, kept by a
 * re-registration and a heartbeat, refused to a user. */
Test(drain, labels_are_merged_checked_and_kept)
{
    long long n = node("n1", 2);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", n);
    json_t *got = hx_expect_json(
        hx_json("PATCH", path, hx.admin, "{\"labels\":{\"switch\":\"s1\",\"rack\":\"r1\"}}"), 200);
    json_t *l = json_object_get(got, "labels");
    cr_assert_str_eq(json_string_value(json_object_get(l, "switch")), "s1");
    cr_assert_str_eq(json_string_value(json_object_get(l, "rack")), "r1");
    json_decref(got);
    got = hx_expect_json(
        hx_json("PATCH", path, hx.admin, "{\"labels\":{\"rack\":null,\"zone\":\"b\"}}"), 200);
    l = json_object_get(got, "labels");
    cr_assert_eq(json_object_size(l), 2, "rack removed, zone added, switch kept");
    cr_assert_null(json_object_get(l, "rack"));
    cr_assert_str_eq(json_string_value(json_object_get(l, "zone")), "b");
    json_decref(got);
    hx_expect_problem(hx_json("PATCH", path, hx.admin, "{\"labels\":{\"-x\":\"1\"}}"), 400,
                      "labels.-x");
    hx_expect_problem(hx_json("PATCH", path, hx.admin, "{\"labels\":{\"x\":\"\"}}"), 400,
                      "labels.x");
    hx_expect_problem(hx_json("PATCH", path, hx.admin, "{\"labels\":{\"x\":7}}"), 400, "labels.x");
    hx_expect_problem(hx_json("PATCH", path, hx.admin, "{\"labels\":[]}"), 400, "labels");
    hx_expect_problem(hx_json("PATCH", path, hx.admin, "{\"name\":\"y\"}"), 400, "name");
    char many[2048];
    int o = snprintf(many, sizeof(many), "{\"labels\":{");
    for (int k = 0; k < 31; k++)
        o += snprintf(many + o, sizeof(many) - (size_t)o, "%s\"k%d\":\"v\"", k ? "," : "", k);
    snprintf(many + o, sizeof(many) - (size_t)o, "}}");
    hx_expect_problem(hx_json("PATCH", path, hx.admin, many), 400, "labels");
    char user[128];
    hx_user("bob", "user", user);
    hx_expect_problem(hx_json("PATCH", path, user, "{\"labels\":{\"a\":\"b\"}}"), 403, NULL);
    hx_expect_problem(hx_json("PATCH", "/api/v1/nodes/999999", hx.admin, "{\"labels\":{}}"), 404,
                      NULL);
    /* a re-registration (the worker's restart) and a heartbeat keep them */
    long long again = node_as("n1", 2, 200);
    cr_assert_eq(again, n);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", n);
    got = hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "labels"), "switch")),
                     "s1");
    json_decref(got);
    hx_finish();
}
