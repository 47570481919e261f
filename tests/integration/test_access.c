/* Users, roles and nodes: who may do what, and node registration and heartbeats. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(access, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

Test(access, users_get_a_token_once_and_roles_apply)
{
    char alice[128], bob[128], worker[128];
    hx_user("alice", "user", alice);
    hx_user("bob", "user", bob);
    hx_user("w1", "worker", worker);
    json_t *me = hx_expect_json(hx_json("GET", "/api/v1/whoami", alice, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(me, "role")), "user");
    json_decref(me);

    long long id = hx_submit(alice, "alices", 1);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
    hx_expect_problem(hx_json("POST", path, bob, NULL), 403, NULL);
    hx_expect_problem(hx_json("POST", path, worker, NULL), 403, NULL);
    json_t *j = hx_expect_json(hx_json("POST", path, alice, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "CANCELLED");
    json_decref(j);
    id = hx_submit(bob, "bobs", 1);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));

    /* workers only use node endpoints; users may not make users or register nodes */
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", worker, NULL), 403, NULL);
    hx_expect_problem(
        hx_json("POST", "/api/v1/jobs", worker, "{\"name\":\"x\",\"command\":[\"x\"],\"gpus\":1}"),
        403, NULL);
    hx_expect_problem(
        hx_json("POST", "/api/v1/users", alice, "{\"name\":\"eve\",\"role\":\"admin\"}"), 403,
        NULL);
    hx_expect_problem(
        hx_json("POST", "/api/v1/nodes", alice, "{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":1}"),
        403, NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/whoami", worker, NULL), 403, NULL);
    hx_expect_problem(hx_json("GET", "/api/v1/users", worker, NULL), 403, NULL);
    json_decref(hx_expect_json(hx_json("GET", "/api/v1/nodes", worker, NULL), 200));
    hx_finish();
}

Test(access, user_creation_rules)
{
    char t[128];
    hx_user("erin", "admin", t);
    hx_expect_problem(
        hx_json("POST", "/api/v1/users", hx.admin, "{\"name\":\"erin\",\"role\":\"user\"}"), 409,
        NULL);
    hx_expect_problem(
        hx_json("POST", "/api/v1/users", hx.admin, "{\"name\":\"frank\",\"role\":\"root\"}"), 400,
        "role");
    hx_expect_problem(
        hx_json("POST", "/api/v1/users", hx.admin, "{\"name\":\"a b\",\"role\":\"user\"}"), 400,
        "name");
    hx_expect_problem(hx_json("POST", "/api/v1/users", hx.admin, "{\"role\":\"user\"}"), 400,
                      "name");
    json_t *me = hx_expect_json(hx_json("GET", "/api/v1/whoami", t, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(me, "name")), "erin");
    json_decref(me);
    json_t *all = hx_expect_json(hx_json("GET", "/api/v1/users", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(all, "items")), 2);
    char *text = json_dumps(all, 0);
    cr_assert_null(strstr(text, "token"), "tokens are never listed");
    free(text);
    json_decref(all);
    hx_finish();
}

static const char *node_a =
    "{\"name\":\"gpu-a\",\"cpus\":32,\"memory_bytes\":274877906944,\"gpus\":["
    "{\"index\":0,\"model\":\"H100\",\"memory_bytes\":85899345920},"
    "{\"index\":1,\"model\":\"H100\",\"memory_bytes\":85899345920}]}";

Test(access, nodes_register_reregister_heartbeat)
{
    char worker[128];
    hx_user("w2", "worker", worker);
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", worker, node_a), 201);
    long long id = json_integer_value(json_object_get(n, "id"));
    cr_assert_eq(json_array_size(json_object_get(n, "gpus")), 2);
    cr_assert_eq(json_integer_value(json_object_get(n, "memory_bytes")), 274877906944LL);
    cr_assert_str_eq(json_string_value(json_object_get(n, "state")), "UP");
    json_decref(n);
    const char *again = "{\"name\":\"gpu-a\",\"cpus\":64,\"memory_bytes\":1,\"gpus\":["
                        "{\"index\":3,\"model\":\"A100\",\"memory_bytes\":1}]}";
    n = hx_expect_json(hx_json("POST", "/api/v1/nodes", worker, again), 200);
    cr_assert_eq(json_integer_value(json_object_get(n, "id")), id, "same name, same id");
    cr_assert_eq(json_integer_value(json_object_get(n, "cpus")), 64);
    json_t *g = json_array_get(json_object_get(n, "gpus"), 0);
    cr_assert_eq(json_array_size(json_object_get(n, "gpus")), 1);
    cr_assert_eq(json_integer_value(json_object_get(g, "index")), 3);
    json_decref(n);

    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", id);
    json_decref(hx_expect_json(hx_json("POST", path, worker, NULL), 200));
    json_decref(hx_expect_json(hx_json("POST", path, worker, "{}"), 200));
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", id);
    n = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(n, "name")), "gpu-a");
    json_decref(n);
    n = hx_expect_json(hx_json("GET", "/api/v1/nodes", worker, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(n, "items")), 1);
    json_decref(n);
    hx_expect_problem(hx_json("GET", "/api/v1/nodes/4242", worker, NULL), 404, NULL);
    hx_expect_problem(hx_json("POST", "/api/v1/nodes/4242/heartbeat", worker, NULL), 404, NULL);
    hx_expect_problem(
        hx_json("POST", "/api/v1/nodes", worker, "{\"name\":\"b\",\"cpus\":-1,\"memory_bytes\":1}"),
        400, "cpus");
    hx_finish();
}
