/* Jobs through the real server and database: submit, get, list with paging and filters,
 * cancel, events, idempotent retries (also concurrent ones). */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(jobs, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    cr_assert_not_null(s, "no string %s", k);
    return s;
}

static long long num(const json_t *o, const char *k)
{
    cr_assert(json_is_integer(json_object_get(o, k)), "no integer %s", k);
    return json_integer_value(json_object_get(o, k));
}

Test(jobs, health_answers_without_a_token)
{
    json_t *j = hx_expect_json(hx_json("GET", "/api/v1/health", NULL, NULL), 200);
    cr_assert_str_eq(str(j, "status"), "ok");
    cr_assert_str_eq(str(j, "database"), "ok");
    cr_assert(strlen(str(j, "version")) > 0);
    json_decref(j);
    hx_finish();
}

Test(jobs, submit_then_get_returns_every_field)
{
    const char *body = "{\"name\":\"resnet\",\"command\":[\"python\",\"train.py\"],\"gpus\":4,"
                       "\"min_gpus\":2,\"max_gpus\":8,\"elastic\":true,\"priority\":3,"
                       "\"batch_per_gpu\":64,\"model\":{\"bytes\":1000},\"env\":{\"LR\":\"0.1\"}}";
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    cr_assert_str_eq(str(j, "state"), "PENDING");
    cr_assert_str_eq(str(j, "user"), "admin");
    cr_assert(strlen(str(j, "submitted_at")) >= 20);
    cr_assert_eq(num(j, "gpus"), 4);
    cr_assert_eq(num(j, "min_gpus"), 2);
    cr_assert_eq(num(j, "max_gpus"), 8);
    cr_assert_eq(num(j, "priority"), 3);
    cr_assert_eq(num(j, "batch_per_gpu"), 64);
    cr_assert(json_is_true(json_object_get(j, "elastic")));
    cr_assert_str_eq(str(json_object_get(j, "env"), "LR"), "0.1");
    cr_assert_eq(num(json_object_get(j, "model"), "bytes"), 1000);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "command"), 1)),
                     "train.py");
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", num(j, "id"));
    json_t *g = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    /* GET adds the scheduler's view (server/api/jobview.h); the rest is what POST answered */
    cr_assert(json_is_null(json_object_get(g, "queue_position")) ||
              json_is_integer(json_object_get(g, "queue_position")));
    json_object_del(g, "pending_reason");
    json_object_del(g, "queue_position");
    json_object_del(g, "predicted_start");
    json_object_del(g, "predicted_finish");
    json_object_del(g, "remaining_source");
    json_object_del(g, "remaining");
    json_object_del(g, "forecast");
    cr_assert_eq(num(json_object_get(g, "model"), "bytes"), 1000, "declared fields stay");
    cr_assert_eq(num(g, "world_size"), 0);
    json_object_del(g, "allocation");
    json_object_del(g, "world_size");
    json_object_set(g, "model", json_object_get(j, "model"));
    json_object_set(g, "state", json_object_get(j, "state"));
    json_object_set(g, "updated_at", json_object_get(j, "updated_at"));
    cr_assert(json_equal(g, j), "GET gives what POST answered");
    json_decref(g);
    json_decref(j);
    hx_finish();
}

Test(jobs, list_pages_by_cursor_and_filters)
{
    char user[128], name[32];
    hx_user("carol", "user", user);
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "job-%d", i);
        hx_submit(i % 2 ? user : hx.admin, name, 1);
    }
    char path[128] = "/api/v1/jobs?limit=3";
    int seen = 0, pages = 0;
    long long last = 0;
    for (;;) {
        json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        json_t *items = json_object_get(j, "items");
        pages++;
        for (size_t i = 0; i < json_array_size(items); i++) {
            long long id = num(json_array_get(items, i), "id");
            cr_assert(id > last, "ids ascend across pages");
            last = id;
            seen++;
        }
        json_t *next = json_object_get(j, "next");
        if (json_is_null(next)) {
            json_decref(j);
            break;
        }
        cr_assert_eq(json_array_size(items), 3);
        snprintf(path, sizeof(path), "/api/v1/jobs?limit=3&after=%s", json_string_value(next));
        json_decref(j);
        cr_assert(pages < 10);
    }
    cr_assert_eq(seen, 7);
    cr_assert_eq(pages, 3);
    json_t *j = hx_expect_json(hx_json("GET", "/api/v1/jobs?user=carol", user, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 3);
    json_decref(j);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs?state=CANCELLED", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 0);
    cr_assert(json_is_null(json_object_get(j, "next")));
    json_decref(j);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 7, "default limit is 50");
    json_decref(j);
    /* a name prefix (a sweep's jobs), with the other filters and up to 1,000 a page */
    hx_submit(hx.admin, "sweep-lr%_1", 1);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs?name_prefix=job-&limit=1000", hx.admin, NULL),
                       200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 7);
    json_decref(j);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs?name_prefix=job-&user=carol", hx.admin, NULL),
                       200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 3);
    json_decref(j);
    /* the prefix is text, not a pattern: % and _ match themselves */
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs?name_prefix=sweep-lr%25_", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 1);
    json_decref(j);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs?name_prefix=sweep-lrx", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 0);
    json_decref(j);
    hx_finish();
}

/* The job's timestamps as the API has always written them (PostgreSQL's to_char() with
 * TS()): UTC, "T", six digits of microseconds, "Z"; the server now formats them itself from
 * the timestamps' text, so every shape of that text is checked against to_char(): whole
 * seconds, a fraction without its trailing zeros, a five-digit year, a year BC, infinity. */
Test(jobs, timestamps_read_as_to_char_writes_them)
{
    static const char *const stamps[][3] = {
        {"2026-01-02 03:04:05+00", "2026-01-02 03:04:05.5+00", NULL},
        {"2026-11-27 23:59:59.999999+05", "2026-11-27 16:22:37.1234+00",
         "10000-01-01 00:00:00.000001+00"},
        {"0044-03-15 12:00:00.25+00 BC", "2026-11-27 16:22:37.010+00", "infinity"},
    };
    long long id = hx_submit(hx.admin, "stamped", 1);
    char sql[512], path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    for (size_t k = 0; k < sizeof(stamps) / sizeof(stamps[0]); k++) {
        snprintf(sql, sizeof(sql),
                 "UPDATE jobs SET submitted_at = '%s', updated_at = '%s', finished_at = %s%s%s"
                 " WHERE id = %lld",
                 stamps[k][0], stamps[k][1], stamps[k][2] ? "'" : "",
                 stamps[k][2] ? stamps[k][2] : "NULL", stamps[k][2] ? "'" : "", id);
        hx_sql_do(sql);
        json_t *one = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        json_t *list =
            hx_expect_json(hx_json("GET", "/api/v1/jobs?limit=1000", hx.admin, NULL), 200);
        json_t *item = json_array_get(json_object_get(list, "items"), 0);
        static const char *const cols[] = {"submitted_at", "updated_at", "finished_at"};
        for (int c = 0; c < 3; c++) {
            snprintf(sql, sizeof(sql),
                     "SELECT to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
                     " FROM jobs WHERE id = %lld",
                     cols[c], id);
            PGresult *r = hx_sql(sql);
            const char *want = PQgetisnull(r, 0, 0) ? NULL : PQgetvalue(r, 0, 0);
            const json_t *got[] = {json_object_get(one, cols[c]), json_object_get(item, cols[c])};
            for (int g = 0; g < 2; g++) {
                if (want)
                    cr_assert_str_eq(json_string_value(got[g]) ? json_string_value(got[g]) : "?",
                                     want, "%s of %s", cols[c], stamps[k][c]);
                else
                    cr_assert(json_is_null(got[g]), "%s of %s: null", cols[c], stamps[k][c]);
            }
            PQclear(r);
        }
        json_decref(list);
        json_decref(one);
    }
    hx_finish();
}

Test(jobs, cancel_then_cancel_again_is_a_conflict)
{
    long long id = hx_submit(hx.admin, "to-cancel", 2);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
    json_t *j = hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200);
    cr_assert_str_eq(str(j, "state"), "CANCELLED");
    cr_assert(json_is_string(json_object_get(j, "finished_at")));
    json_decref(j);
    hx_expect_problem(hx_json("POST", path, hx.admin, NULL), 409, NULL);

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/events", id);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *items = json_object_get(j, "items");
    cr_assert_eq(json_array_size(items), 2, "submit and cancel, not the refused cancel");
    cr_assert(json_is_null(json_object_get(json_array_get(items, 0), "from")));
    cr_assert_str_eq(str(json_array_get(items, 0), "to"), "PENDING");
    cr_assert_str_eq(str(json_array_get(items, 1), "from"), "PENDING");
    cr_assert_str_eq(str(json_array_get(items, 1), "to"), "CANCELLED");
    cr_assert_str_eq(str(json_array_get(items, 1), "actor"), "admin");
    json_decref(j);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs?state=CANCELLED", hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 1);
    json_decref(j);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs/999999/events", hx.admin, NULL), 404, NULL);
    hx_expect_problem(hx_json("POST", "/api/v1/jobs/999999/cancel", hx.admin, NULL), 404, NULL);
    hx_finish();
}

static const char *retry_body = "{\"name\":\"once\",\"command\":[\"true\"],\"gpus\":1}";

Test(jobs, idempotent_retry_returns_the_first_job)
{
    const char *key = "Idempotency-Key: abc-123";
    struct hx_resp *r = hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", retry_body,
                                strlen(retry_body), key);
    json_t *first = hx_expect_json(r, 201);
    r = hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", retry_body,
                strlen(retry_body), key);
    json_t *again = hx_expect_json(r, 200);
    cr_assert(json_equal(first, again), "the retry returns the first job");
    const char *other = "{\"name\":\"twice\",\"command\":[\"true\"],\"gpus\":1}";
    hx_expect_problem(
        hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", other, strlen(other), key),
        409, NULL);
    char user[128];
    hx_user("dave", "user", user);
    r = hx_call("POST", "/api/v1/jobs", user, "application/json", retry_body, strlen(retry_body),
                key);
    json_t *theirs = hx_expect_json(r, 201);
    cr_assert_neq(num(theirs, "id"), num(first, "id"), "keys are per user");
    char *all = hx_all_jobs(hx.admin);
    json_t *list = json_loads(all, 0, NULL);
    cr_assert_eq(json_array_size(list), 2);
    json_decref(list);
    free(all);
    json_decref(theirs);
    json_decref(first);
    json_decref(again);
    hx_finish();
}

struct racer {
    long status;
    long long id;
};

static void *race(void *arg)
{
    struct racer *rc = arg;
    struct hx_resp *r = hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", retry_body,
                                strlen(retry_body), "Idempotency-Key: race");
    rc->status = r->status;
    rc->id = r->json ? json_integer_value(json_object_get(r->json, "id")) : -1;
    hx_free(r);
    return NULL;
}

Test(jobs, concurrent_retries_make_no_twin)
{
    enum { N = 8 };
    pthread_t t[N];
    struct racer rc[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, race, &rc[i]);
    int created = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        cr_assert(rc[i].status == 201 || rc[i].status == 200, "status %ld", rc[i].status);
        created += rc[i].status == 201;
        cr_assert_eq(rc[i].id, rc[0].id, "every retry sees the same job");
    }
    cr_assert_eq(created, 1);
    char *all = hx_all_jobs(hx.admin);
    json_t *list = json_loads(all, 0, NULL);
    cr_assert_eq(json_array_size(list), 1);
    json_decref(list);
    free(all);
    hx_finish();
}

Test(jobs, dashboard_files_are_served)
{
    struct hx_resp *r = hx_json("GET", "/", NULL, NULL);
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->content_type, "text/html; charset=utf-8");
    cr_assert(strstr(r->body, "Ringmaster"));
    hx_free(r);
    hx_expect_problem(hx_json("GET", "/../../etc/passwd", NULL, NULL), 404, NULL);
    hx_expect_problem(hx_json("GET", "/%2e%2e/%2e%2e/etc/passwd", NULL, NULL), 404, NULL);
    hx_expect_problem(hx_json("GET", "/missing.js", NULL, NULL), 404, NULL);
    hx_expect_problem(hx_json("POST", "/", NULL, "{}"), 405, NULL);
    hx_finish();
}
