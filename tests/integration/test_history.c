/* The cluster's history (GET /api/v1/cluster/history, sampled by the scheduler thread into
 * sql/007_history.sql's table) and the conditional GETs of the lists the dashboard polls
 * (ETag, If-None-Match, 304), against a real ringmasterd and database. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "harness.h"

TestSuite(history, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

#define WAIT_S 40.0 /* samples come at most every 5 s; the machine is shared */

struct tagged {
    long status;
    char etag[64];
    char cache[64];
    size_t body_len;
};

static size_t on_tag_header(char *line, size_t size, size_t n, void *arg)
{
    struct tagged *t = arg;
    size_t len = size * n;
    char *dst = len > 5 && strncasecmp(line, "ETag:", 5) == 0 ? t->etag
                : len > 14 && strncasecmp(line, "Cache-Control:", 14) == 0 ? t->cache
                                                                           : NULL;
    if (dst) {
        const char *v = strchr(line, ':') + 1;
        while (*v == ' ')
            v++;
        snprintf(dst, 64, "%.*s", (int)strcspn(v, "\r\n"), v);
    }
    return len;
}

static size_t on_tag_body(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    ((struct tagged *)arg)->body_len += size * n;
    return size * n;
}

/* GET path as the admin, with If-None-Match: inm unless NULL; the status and headers. */
static struct tagged get_tagged(const char *path, const char *inm)
{
    struct tagged t = {0};
    char url[512], auth[256], cond[160];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", hx.port, path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", hx.admin);
    snprintf(cond, sizeof(cond), "If-None-Match: %s", inm ? inm : "");
    struct curl_slist *h = curl_slist_append(NULL, auth);
    if (inm)
        h = curl_slist_append(h, cond);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_tag_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_tag_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    cr_assert_eq(rc, CURLE_OK, "GET %s: %s", path, curl_easy_strerror(rc));
    return t;
}

/* 200 with a tag; the tag again gives 304 without a body (also as W/ and in a list). */
static struct tagged expect_stable_tag(const char *path)
{
    struct tagged a, b, c;
    char list[160];
    /* The history sampler adds a row every few seconds even while rounds are paused: a
     * sample landing between these requests changes the list, so the round of requests is
     * retried (a few times at most; a tag that never holds fails below). */
    for (int tries = 0;; tries++) {
        a = get_tagged(path, NULL);
        cr_assert_eq(a.status, 200, "%s", path);
        b = get_tagged(path, a.etag);
        snprintf(list, sizeof(list), "\"0000000000000000\", W/%s", a.etag);
        c = get_tagged(path, list);
        if ((b.status == 304 && c.status == 304) || tries == 3)
            break;
    }
    cr_assert_eq(strlen(a.etag), 18, "%s: a strong tag, got '%s'", path, a.etag);
    cr_assert_str_eq(a.cache, "no-cache");
    cr_assert_eq(b.status, 304, "%s with If-None-Match %s: %ld", path, a.etag, b.status);
    cr_assert_eq(b.body_len, 0);
    cr_assert_str_eq(b.etag, a.etag, "a 304 names the tag");
    cr_assert_eq(c.status, 304, "%s", list);
    cr_assert_eq(get_tagged(path, "\"0000000000000000\"").status, 200, "another tag: 200");
    return a;
}

static void register_node(const char *name, int ngpus)
{
    char body[1024];
    int o = snprintf(body, sizeof(body), "{\"name\":\"%s\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":[",
                     name);
    for (int g = 0; g < ngpus; g++)
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"index\":%d,\"model\":\"sim\",\"memory_bytes\":1}", g ? "," : "", g);
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, body), 201));
}

Test(history, lists_answer_304_until_they_change)
{
    /* no rounds: nothing but this test changes the lists (a round adds why a job waits) */
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":true}"), 200));
    struct tagged jobs = expect_stable_tag("/api/v1/jobs");
    struct tagged nodes = expect_stable_tag("/api/v1/nodes");
    expect_stable_tag("/api/v1/cluster/history");
    /* a filtered view has its own tag */
    struct tagged pending = expect_stable_tag("/api/v1/jobs?state=PENDING&limit=5");
    hx_submit(hx.admin, "changes-the-list", 1);
    struct tagged j2 = get_tagged("/api/v1/jobs", jobs.etag);
    cr_assert_eq(j2.status, 200, "the list changed: the old tag gets the new list");
    cr_assert_str_neq(j2.etag, jobs.etag, "a change gives a new tag");
    cr_assert_eq(get_tagged("/api/v1/jobs?state=PENDING&limit=5", pending.etag).status, 200);
    cr_assert_eq(get_tagged("/api/v1/jobs", j2.etag).status, 304);
    register_node("tagged", 2);
    struct tagged n2 = get_tagged("/api/v1/nodes", nodes.etag);
    cr_assert_eq(n2.status, 200);
    cr_assert_str_neq(n2.etag, nodes.etag);
    /* a 304 needs the token like the 200 does */
    char cond[128];
    snprintf(cond, sizeof(cond), "If-None-Match: %s", j2.etag);
    struct hx_resp *r = hx_call("GET", "/api/v1/jobs", NULL, NULL, NULL, 0, cond);
    cr_assert_eq(r->status, 401);
    hx_free(r);
    hx_finish();
}

/* The newest sample (new), or NULL when there is none. */
static json_t *newest_sample(void)
{
    json_t *h = hx_expect_json(hx_json("GET", "/api/v1/cluster/history", hx.admin, NULL), 200);
    json_t *items = json_object_get(h, "items");
    json_t *last = json_array_size(items) ? json_incref(json_array_get(items,
                                                                       json_array_size(items) - 1))
                                          : NULL;
    json_decref(h);
    return last;
}

static double field(const json_t *sample, const char *name)
{
    const json_t *v = json_object_get(sample, name);
    return json_is_number(v) ? json_number_value(v) : -1;
}

/* Waits (bounded) for a sample with these GPU and queue figures; returns it (new). */
static json_t *wait_sample(double total, double allocated, double busy, double queue)
{
    json_t *s = NULL;
    for (double until = hx_now() + WAIT_S; hx_now() < until; usleep(250000)) {
        json_decref(s);
        s = newest_sample();
        if (s && field(s, "gpus_total") == total && field(s, "gpus_allocated") == allocated &&
            field(s, "gpus_busy") == busy && field(s, "queue_length") == queue)
            return s;
    }
    char *text = s ? json_dumps(s, 0) : NULL;
    cr_assert_fail("no sample with %g GPUs, %g allocated, %g busy, queue %g; the newest: %s",
                   total, allocated, busy, queue, text ? text : "none");
    return NULL;
}

#define ALLOC_SQL "SELECT count(*) FROM allocations WHERE job_id = %lld"

static void wait_allocated(long long id, int gpus)
{
    char sql[128];
    snprintf(sql, sizeof(sql), ALLOC_SQL, id);
    double until = hx_now() + WAIT_S;
    while (hx_sql_num(sql) != gpus && hx_now() < until)
        usleep(100000);
    cr_assert_eq(hx_sql_num(sql), gpus, "job %lld holds %d GPUs", id, gpus);
}

Test(history, samples_tell_busy_from_allocated_and_count_the_queue)
{
    json_decref(hx_expect_json(
        hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.5,\"policy\":\"fifo\"}"),
        200));
    register_node("h1", 4);
    long long busy = hx_submit(hx.admin, "reports", 2);
    long long idle = hx_submit(hx.admin, "silent", 2);
    wait_allocated(busy, 2);
    wait_allocated(idle, 2);
    /* waits for nodes still to come (hold: the 4 GPUs up could never run it) */
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"too-big\",\"command\":[\"true\"],"
                                       "\"gpus\":8,\"hold\":true}"),
                               201));
    /* only the first job reports minibatches (as its worker would forward them) */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds)"
             " SELECT %lld, k, 2, 1.0, 256, 0.1 FROM generate_series(1, 5) k",
             busy);
    hx_sql_do(sql);
    json_t *s = wait_sample(4, 4, 2, 1);
    cr_assert_geq(field(s, "wait_pending_s"), 0, "the waiting job's wait");
    cr_assert_eq(json_integer_value(json_object_get(s, "samples")), 1);
    cr_assert_eq(field(s, "span_s"), 0);
    json_decref(s);
    /* the two starts were counted in some sample, with their waits */
    cr_assert_eq(hx_sql_num("SELECT sum(jobs_started) FROM cluster_history"), 2);
    cr_assert_geq(hx_sql_num("SELECT max(wait_started_s) FROM cluster_history"), 0);
    /* five slow minibatches: its mean is 1,500 s a minibatch */
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds)"
             " SELECT %lld, k, 2, 1.0, 256, 2999.9 FROM generate_series(6, 10) k",
             busy);
    hx_sql_do(sql);
    /* the report goes stale (two hours, past three minibatches): the GPUs stay allocated
     * but count as idle */
    snprintf(sql, sizeof(sql),
             "UPDATE job_last_report SET at = now() - interval '2 hours' WHERE job_id = %lld",
             busy);
    hx_sql_do(sql);
    json_decref(wait_sample(4, 4, 0, 1));
    /* an hour ago is within three of its minibatches (75 min), though past the window */
    snprintf(sql, sizeof(sql),
             "UPDATE job_last_report SET at = now() - interval '1 hour' WHERE job_id = %lld", busy);
    hx_sql_do(sql);
    json_decref(wait_sample(4, 4, 2, 1));
    hx_finish();
}

Test(history, old_samples_are_averaged_then_dropped_and_queries_are_checked)
{
    /* two days ago, 10-minute buckets of 120 samples; and a row past keeping */
    hx_sql_do("INSERT INTO cluster_history (at, gpus_total, gpus_allocated, gpus_busy,"
              " queue_length, jobs_running, jobs_started, wait_started_s)"
              " SELECT date_trunc('hour', now()) - interval '2 days' + g * interval '5 s', 8,"
              " g % 2 * 4, 2, 3, 1, 1, 10 FROM generate_series(0, 239) g");
    hx_sql_do("INSERT INTO cluster_history (at, gpus_total, gpus_allocated, gpus_busy,"
              " queue_length, jobs_running) VALUES (now() - interval '40 days', 1, 1, 1, 1, 1)");
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.5}"), 200));
    const char *raw_old = "SELECT count(*) FROM cluster_history"
                          " WHERE span_s = 0 AND at < now() - interval '1 day'";
    for (double until = hx_now() + WAIT_S; hx_sql_num(raw_old) > 0 && hx_now() < until;)
        usleep(250000);
    cr_assert_eq(hx_sql_num(raw_old), 0, "the old samples were folded");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM cluster_history WHERE span_s = 600"), 2);
    cr_assert_eq(hx_sql_num("SELECT min(samples) FROM cluster_history WHERE span_s = 600"), 120);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM cluster_history"
                            " WHERE at < now() - interval '30 days'"),
                 0, "past keeping: dropped");

    /* step= averages into buckets; since= and limit= choose the rows */
    json_t *h = hx_expect_json(hx_json("GET", "/api/v1/cluster/history?step=3600&limit=1",
                                       hx.admin, NULL),
                               200);
    cr_assert(json_is_true(json_object_get(h, "more")), "newer buckets exist: the oldest is left out");
    json_decref(h);
    h = hx_expect_json(hx_json("GET",
                               "/api/v1/cluster/history?step=3600&since=2000-01-01T00:00:00Z"
                               "&limit=10000",
                               hx.admin, NULL),
                       200);
    json_t *first = json_array_get(json_object_get(h, "items"), 0);
    cr_assert_eq(field(first, "span_s"), 3600);
    cr_assert_eq(json_integer_value(json_object_get(first, "samples")), 240);
    cr_assert_eq(field(first, "gpus_total"), 8);
    cr_assert_eq(field(first, "gpus_allocated"), 2, "the average of 0 and 4");
    cr_assert_eq(json_integer_value(json_object_get(first, "jobs_started")), 240);
    cr_assert_eq(field(first, "wait_started_s"), 10);
    cr_assert_eq(json_integer_value(json_object_get(h, "step_s")), 3600);
    json_decref(h);

    static const char *const bad[] = {"since=yesterday", "since=2026-13-01T00:00:00Z",
                                      "limit=0", "limit=10001", "step=-1", "step=86401",
                                      "limit=x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[128], f[16];
        snprintf(path, sizeof(path), "/api/v1/cluster/history?%s", bad[i]);
        snprintf(f, sizeof(f), "%.*s", (int)strcspn(bad[i], "="), bad[i]);
        hx_expect_problem(hx_json("GET", path, hx.admin, NULL), 400, f);
    }
    char w[128];
    hx_user("hw", "worker", w);
    hx_expect_problem(hx_json("GET", "/api/v1/cluster/history", w, NULL), 403, NULL);
    hx_finish();
}
