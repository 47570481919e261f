/* What bounds the database (server/live/retention.h): a job's minibatch history is thinned
 * past RETENTION_ROWS_MAX rows, its newest RETENTION_RECENT rows kept as they came and its
 * measured step times (job_metric_sums) untouched; old round audit rows go. Against a real
 * ringmasterd, whose scheduler thread makes a pass at its first round after a start. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(retention, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

#define ROWS_MAX 4000 /* retention.h */
#define RECENT 1000

/* Posts steps first..first+n-1 (loss falling, 0.2 s a step) for job id, 1,000 a post. */
static void post_steps(long long id, long first, long n)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    for (long at = first; at < first + n; at += 1000) {
        long k = first + n - at < 1000 ? first + n - at : 1000;
        size_t cap = (size_t)k * 96 + 32, len = 0;
        char *body = malloc(cap);
        cr_assert_not_null(body);
        len += (size_t)snprintf(body + len, cap - len, "{\"items\":[");
        for (long s = at; s < at + k; s++)
            len += (size_t)snprintf(body + len, cap - len,
                                    "%s{\"step\":%ld,\"loss\":%.6f,\"samples\":64,"
                                    "\"seconds\":0.2,\"world_size\":1}",
                                    s > at ? "," : "", s, 3.0 / (1.0 + 0.001 * (double)s));
        snprintf(body + len, cap - len, "]}");
        json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), 200));
        free(body);
    }
}

static double job_num(const char *fmt, long long id)
{
    char sql[256];
    snprintf(sql, sizeof(sql), fmt, id);
    return hx_sql_num(sql);
}

static double rows_of(long long id)
{
    return job_num("SELECT count(*) FROM job_metrics WHERE job_id = %lld", id);
}

/* Restarts the server; its first round makes a pass. Waits (bounded) until id's history
 * is back under the bound. */
static void restart_and_wait_thinned(long long id)
{
    cr_assert_eq(hx_stop_server(SIGTERM, 20), 0);
    hx_start_server();
    double end = hx_now() + 60;
    while (rows_of(id) > ROWS_MAX && hx_now() < end)
        usleep(100 * 1000);
}

Test(retention, a_long_history_is_thinned_and_a_short_one_kept)
{
    long long big = hx_submit(hx.admin, "long", 1);
    long long small = hx_submit(hx.admin, "short", 1);
    post_steps(big, 0, 5500);
    post_steps(small, 0, 3000);
    cr_assert_float_eq(job_num("SELECT rows FROM job_last_report WHERE job_id = %lld", big), 5500,
                       1e-9, "the trigger counts the rows");
    hx_sql_do("INSERT INTO sched_rounds (at, policy, duration_us, jobs, decisions, actions)"
              " VALUES (now() - interval '8 days', 'fifo', 1, 0, 0, 0)");

    restart_and_wait_thinned(big);

    /* 4,500 old rows halved (the oldest kept), the newest 1,000 as they came. */
    cr_assert_float_eq(rows_of(big), RECENT + 4500 / 2, 1e-9);
    cr_assert_float_eq(job_num("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                               " AND step >= 4500",
                               big),
                       RECENT, 1e-9, "the newest reports are all kept");
    cr_assert_float_eq(job_num("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                               " AND step IN (0, 2, 4498)",
                               big),
                       3, 1e-9, "every second old report stays, the first too");
    cr_assert_float_eq(job_num("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                               " AND step IN (1, 3, 4499)",
                               big),
                       0, 1e-9);
    cr_assert_float_eq(job_num("SELECT rows FROM job_last_report WHERE job_id = %lld", big),
                       rows_of(big), 1e-9, "the count follows");
    cr_assert_float_eq(job_num("SELECT reports FROM job_metric_sums WHERE job_id = %lld", big),
                       5500, 1e-9, "the measured step times are untouched");
    cr_assert_float_eq(rows_of(small), 3000, 1e-9, "a history under the bound is left alone");
    cr_assert_float_eq(hx_sql_num("SELECT count(*) FROM sched_rounds"
                                  " WHERE at < now() - interval '7 days'"),
                       0, 1e-9, "an old round's row is dropped");
    cr_assert_gt(hx_sql_num("SELECT count(*) FROM sched_rounds"), 0, "recent rounds stay");

    /* It goes on reporting: the newest are read as ever, and the next pass halves again. */
    post_steps(big, 5500, 1500);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics?after=6990", big);
    json_t *m = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(m, "items")), 9);
    json_decref(m);
    cr_assert_float_eq(rows_of(big), 3250 + 1500, 1e-9);
    restart_and_wait_thinned(big);
    cr_assert_leq(rows_of(big), ROWS_MAX);
    cr_assert_float_eq(job_num("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                               " AND step >= 6000",
                               big),
                       RECENT, 1e-9);
    cr_assert_float_eq(job_num("SELECT count(*) FROM job_metrics WHERE job_id = %lld AND step = 0",
                               big),
                       1, 1e-9, "the first report stays at every age");
    hx_finish();
}
