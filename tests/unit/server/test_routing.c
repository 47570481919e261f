/* The route table matcher, node validation, problem documents and static-file paths. */
#include <criterion/criterion.h>
#include <string.h>

#include "http/problem.h"
#include "http/router.h"
#include "http/www.h"
#include "spec/nodespec.h"

static void h(struct api_call *c)
{
    (void)c;
}

static const struct route table[] = {
    {"GET", "/api/v1/jobs", h, 1, 0},
    {"POST", "/api/v1/jobs", h, 1, 0},
    {"GET", "/api/v1/jobs/{id}", h, 1, 0},
    {"POST", "/api/v1/jobs/{id}/cancel", h, 1, 0},
};
#define N (sizeof(table) / sizeof(table[0]))

Test(router, finds_routes_and_ids)
{
    struct router_match m;
    cr_assert_eq(router_match(table, N, "POST", "/api/v1/jobs", &m), ROUTER_FOUND);
    cr_assert_eq(m.route, &table[1]);
    cr_assert_eq(router_match(table, N, "POST", "/api/v1/jobs/42/cancel", &m), ROUTER_FOUND);
    cr_assert_eq(m.route, &table[3]);
    cr_assert_str_eq(m.id, "42");
    cr_assert_eq(router_match(table, N, "GET", "/api/v1/jobs/abc", &m), ROUTER_FOUND);
    cr_assert_str_eq(m.id, "abc", "the handler decides whether an id exists");
}

Test(router, unknown_paths_and_wrong_methods)
{
    struct router_match m;
    cr_assert_eq(router_match(table, N, "GET", "/api/v1/job", &m), ROUTER_NOT_FOUND);
    cr_assert_eq(router_match(table, N, "GET", "/api/v1/jobs/", &m), ROUTER_NOT_FOUND);
    cr_assert_eq(router_match(table, N, "GET", "/api/v1/jobs//cancel", &m), ROUTER_NOT_FOUND);
    cr_assert_eq(router_match(table, N, "GET", "/api/v1/jobs/1/cancel/x", &m), ROUTER_NOT_FOUND);
    cr_assert_eq(router_match(table, N, "DELETE", "/api/v1/jobs", &m), ROUTER_BAD_METHOD);
    cr_assert_str_eq(m.allow, "GET, POST");
    cr_assert_eq(router_match(table, N, "GET", "/api/v1/jobs/7/cancel", &m), ROUTER_BAD_METHOD);
    cr_assert_str_eq(m.allow, "POST");
}

Test(router, over_long_ids_are_empty)
{
    struct router_match m;
    char path[256] = "/api/v1/jobs/";
    memset(path + strlen(path), '9', 100);
    cr_assert_eq(router_match(table, N, "GET", path, &m), ROUTER_FOUND);
    cr_assert_str_eq(m.id, "");
}

Test(problem, document_has_the_rfc_9457_members)
{
    json_t *p = problem_build(404, "no job 9", "/api/v1/jobs/9");
    cr_assert_str_eq(json_string_value(json_object_get(p, "title")), "Not Found");
    cr_assert_eq(json_integer_value(json_object_get(p, "status")), 404);
    cr_assert_str_eq(json_string_value(json_object_get(p, "detail")), "no job 9");
    cr_assert_str_eq(json_string_value(json_object_get(p, "instance")), "/api/v1/jobs/9");
    cr_assert(json_is_string(json_object_get(p, "type")));
    json_decref(p);
}

Test(www, paths_and_types)
{
    cr_assert(www_path_ok("/"));
    cr_assert(www_path_ok("/index.html"));
    cr_assert(www_path_ok("/css/a.css"));
    cr_assert(!www_path_ok("/../etc/passwd"));
    cr_assert(!www_path_ok("/a/../../b"));
    cr_assert(!www_path_ok("/a/.."));
    cr_assert(!www_path_ok("//etc/passwd"));
    cr_assert(!www_path_ok("/a\\..\\b"));
    cr_assert(!www_path_ok("index.html"));
    cr_assert(www_path_ok("/a..b"), "dots inside a name are fine");
    cr_assert_str_eq(www_content_type("x/index.html"), "text/html; charset=utf-8");
    cr_assert_str_eq(www_content_type("app.js"), "text/javascript; charset=utf-8");
    cr_assert_str_eq(www_content_type("noext"), "application/octet-stream");
    cr_assert_str_eq(www_content_type("chart.esm.mjs"), "text/javascript; charset=utf-8");
    cr_assert_str_eq(www_content_type("dygraph.min.js.map"), "application/json");
}

static const char *node_error(const char *text)
{
    static char field[128];
    json_t *body = json_loads(text, 0, NULL);
    json_t *errors = NULL;
    char detail[256];
    cr_assert_not_null(body);
    int rc = nodespec_check(body, &errors, detail, sizeof(detail));
    snprintf(field, sizeof(field), "%s",
             rc == 0 ? "" : json_string_value(json_object_get(json_array_get(errors, 0), "field")));
    json_decref(errors);
    json_decref(body);
    return field;
}

Test(nodespec, registration_rules)
{
    cr_assert_str_eq(node_error("{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":"
                                "[{\"index\":0,\"model\":\"A100\",\"memory_bytes\":80}]}"),
                     "");
    cr_assert_str_eq(node_error("{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1}"), "");
    cr_assert_str_eq(node_error("{\"cpus\":8,\"memory_bytes\":1}"), "name");
    cr_assert_str_eq(node_error("{\"name\":\"h\",\"cpus\":0,\"memory_bytes\":1}"), "cpus");
    cr_assert_str_eq(node_error("{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":-1}"), "memory_bytes");
    cr_assert_str_eq(node_error("{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":1,\"gpus\":{}}"),
                     "gpus");
    cr_assert_str_eq(node_error("{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":1,\"gpus\":"
                                "[{\"index\":0,\"model\":\"a\",\"memory_bytes\":1},"
                                "{\"index\":0,\"model\":\"a\",\"memory_bytes\":1}]}"),
                     "gpus[1].index");
    cr_assert_str_eq(node_error("{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":1,\"gpus\":"
                                "[{\"index\":0,\"memory_bytes\":1}]}"),
                     "gpus[0].model");
    cr_assert_str_eq(node_error("{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":1,\"x\":1}"), "x");
}

/* A GPU's NVLink island and NUMA domain (issue 32): optional, null, or 0..1023. */
Test(nodespec, topology_per_gpu)
{
#define GPU(extra)                                                                                 \
    "{\"name\":\"h\",\"cpus\":1,\"memory_bytes\":1,\"gpus\":[{\"index\":0,\"model\":\"a\","         \
    "\"memory_bytes\":1" extra "}]}"
    cr_assert_str_eq(node_error(GPU(",\"island\":1,\"numa\":0")), "");
    cr_assert_str_eq(node_error(GPU(",\"island\":null,\"numa\":null")), "");
    cr_assert_str_eq(node_error(GPU(",\"island\":-1")), "gpus[0].island");
    cr_assert_str_eq(node_error(GPU(",\"island\":1024")), "gpus[0].island");
    cr_assert_str_eq(node_error(GPU(",\"island\":\"a\"")), "gpus[0].island");
    cr_assert_str_eq(node_error(GPU(",\"numa\":1.5")), "gpus[0].numa");
    cr_assert_str_eq(node_error(GPU(",\"switch\":1")), "gpus[0].switch");
#undef GPU
}
