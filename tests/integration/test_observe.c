/* GET /metrics (Prometheus text) and GET /api/v1/openapi.json, the latter checked against the
 * route table ringmasterd really serves (ringmasterd --routes). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(observe, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

/* The value of the sample line that starts with series (name and labels), or -1. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static char *scrape(void)
{
    struct hx_resp *r = hx_call("GET", "/metrics", NULL, NULL, NULL, 0, NULL);
    cr_assert_eq(r->status, 200, "metrics: %ld %s", r->status, r->body);
    cr_assert(strncmp(r->content_type, "text/plain; version=0.0.4", 25) == 0, "%s",
              r->content_type);
    char *text = strdup(r->body);
    hx_free(r);
    return text;
}

Test(observe, metrics_count_jobs_requests_and_rounds)
{
    hx_submit(hx.admin, "m1", 2);
    hx_submit(hx.admin, "m2", 1);
    hx_free(hx_call("GET", "/api/v1/no-such-thing", hx.admin, NULL, NULL, 0, NULL));
    hx_free(hx_call("GET", "/api/v1/jobs/{id}", hx.admin, NULL, NULL, 0, NULL));
    char *m = NULL;
    /* the scheduler thread rounds at start and on each submission; wait (bounded) for one */
    for (int i = 0; i < 100; i++) {
        free(m);
        m = scrape();
        if (sample(m, "ringmaster_scheduler_round_duration_seconds_count") >= 1)
            break;
        usleep(100000);
    }
    cr_assert_geq(sample(m, "ringmaster_scheduler_round_duration_seconds_count"), 1, "%s", m);
    cr_assert_eq(sample(m, "ringmaster_scheduler_round_duration_seconds_bucket{le=\"+Inf\"}"),
                 sample(m, "ringmaster_scheduler_round_duration_seconds_count"));
    cr_assert_geq(sample(m, "ringmaster_scheduler_round_duration_seconds_sum"), 0);
    cr_assert_eq(sample(m, "ringmaster_jobs{state=\"PENDING\"}"), 2, "%s", m);
    cr_assert_eq(sample(m, "ringmaster_jobs{state=\"RUNNING\"}"), 0);
    cr_assert_eq(sample(m, "ringmaster_queue_length"), 2);
    cr_assert_eq(sample(m, "ringmaster_gpus"), 0);
    cr_assert_eq(sample(m, "ringmaster_gpus_allocated"), 0);
    cr_assert_eq(sample(m, "ringmaster_database_up"), 1);
    cr_assert_eq(sample(m, "ringmaster_database_errors_total"), 0);
    cr_assert_eq(sample(m, "ringmaster_http_requests_total{method=\"POST\",route=\"/api/v1/jobs\","
                           "status=\"201\"}"),
                 2, "%s", m);
    /* the pattern, never the raw path, labels a request */
    cr_assert_eq(sample(m, "ringmaster_http_requests_total{method=\"\",route=\"unmatched\","
                           "status=\"404\"}"),
                 1, "%s", m);
    cr_assert_null(strstr(m, "no-such-thing"));
    cr_assert(strstr(m, "# TYPE ringmaster_http_requests_total counter"));
    cr_assert(strstr(m, "# TYPE ringmaster_scheduler_round_duration_seconds histogram"));
    free(m);
    hx_finish();
}

Test(observe, metrics_count_gpus_and_actions)
{
    char w[128];
    hx_user("w1", "worker", w);
    json_decref(hx_expect_json(
        hx_json("POST", "/api/v1/nodes", w,
                "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":[{\"index\":0,"
                "\"model\":\"V100\",\"memory_bytes\":1},{\"index\":1,\"model\":\"V100\","
                "\"memory_bytes\":1}]}"),
        201));
    hx_submit(hx.admin, "a", 1);
    char *m = NULL;
    for (int i = 0; i < 100; i++) {
        free(m);
        m = scrape();
        /* the gauges are not all updated at once: wait for the round's whole effect */
        if (sample(m, "ringmaster_gpus_allocated") == 1 &&
            sample(m, "ringmaster_queue_length") == 0)
            break;
        usleep(100000);
    }
    cr_assert_eq(sample(m, "ringmaster_gpus"), 2, "%s", m);
    cr_assert_eq(sample(m, "ringmaster_gpus_allocated"), 1, "%s", m);
    cr_assert_eq(sample(m, "ringmaster_actions_total{kind=\"start\",outcome=\"pending\"}"), 1,
                 "%s", m);
    cr_assert_eq(sample(m, "ringmaster_queue_length"), 0);
    free(m);
    hx_finish();
}

/* Adds "METHOD PATH" of every operation of the document into set. */
static void doc_operations(json_t *doc, json_t *set)
{
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op)
        {
            if (!strcmp(method, "parameters"))
                continue;
            cr_assert(json_object_get(op, "responses"), "%s %s has no responses", method, path);
            char key[256], up[16];
            size_t k = 0;
            for (; method[k] && k < sizeof(up) - 1; k++)
                up[k] = (char)(method[k] - 'a' + 'A');
            up[k] = '\0';
            snprintf(key, sizeof(key), "%s %s", up, path);
            json_object_set_new(set, key, json_true());
        }
    }
}

/* Fails the test when a "$ref" anywhere under v names no entry of doc's components. */
static void check_refs(json_t *doc, json_t *v)
{
    const char *key;
    json_t *sub;
    size_t i;
    if (json_is_array(v))
        json_array_foreach(v, i, sub) check_refs(doc, sub);
    if (!json_is_object(v))
        return;
    const char *ref = json_string_value(json_object_get(v, "$ref"));
    if (ref) {
        char kind[64], name[64];
        cr_assert_eq(sscanf(ref, "#/components/%63[^/]/%63s", kind, name), 2, "%s", ref);
        json_t *c = json_object_get(json_object_get(doc, "components"), kind);
        cr_assert(json_object_get(c, name), "dangling $ref %s", ref);
    }
    json_object_foreach(v, key, sub)
        check_refs(doc, sub);
}

/* The routes ringmasterd serves, "METHOD PATTERN" into set. */
static void served_routes(json_t *set)
{
    FILE *p = popen(RINGMASTERD_PATH " --routes", "r");
    cr_assert_not_null(p);
    char line[256];
    while (fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = '\0';
        json_object_set_new(set, line, json_true());
    }
    cr_assert_eq(pclose(p), 0);
    cr_assert_geq(json_object_size(set), 30);
}

Test(observe, openapi_document_matches_the_routes)
{
    struct hx_resp *r = hx_call("GET", "/api/v1/openapi.json", NULL, NULL, NULL, 0, NULL);
    cr_assert_str_eq(r->content_type, "application/json");
    json_t *doc = hx_expect_json(r, 200);
    cr_assert(strncmp(json_string_value(json_object_get(doc, "openapi")), "3.", 2) == 0);
    json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    cr_assert(json_object_get(schemas, "Problem"), "the problem document is described");
    cr_assert(json_object_get(schemas, "Job"));
    json_t *documented = json_object(), *served = json_object();
    doc_operations(doc, documented);
    check_refs(doc, doc);
    served_routes(served);
    const char *key;
    json_t *v;
    json_object_foreach(served, key, v)
        cr_expect(json_object_get(documented, key), "served but not documented: %s", key);
    json_object_foreach(documented, key, v)
        cr_expect(json_object_get(served, key), "documented but not served: %s", key);
    json_decref(documented);
    json_decref(served);
    json_decref(doc);
    hx_finish();
}
