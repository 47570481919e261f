/* The real ringctl against a real ringmasterd: one figure for when a job starts and ends
 * (docs/forecast.md). The forecast's P50 where the forecast thread made one, the last round's
 * prediction only until then, in the API (predicted_start, predicted_finish), ringctl list
 * (START, FINISH; REASON/FINISH says no other time) and ringctl show. The rounds are paused and
 * the scheduler's rows written here, so that no round or forecast pass changes them between
 * the looks. Suite ringctl (declared in ctl.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

/* The line of job id in ringctl list's table, into row. */
static void list_row(long long id, char *row, size_t len)
{
    struct ctl_run *r = ctl("list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char key[32];
    snprintf(key, sizeof(key), "\n%lld ", id);
    const char *line = strstr(r->out, key);
    cr_assert_not_null(line, "%s", r->out);
    snprintf(row, len, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
}

static json_t *job(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

/* Seconds from the database's now to the job's member k (RFC 3339). */
static double in_s(json_t *j, const char *k)
{
    const char *v = json_string_value(json_object_get(j, k));
    cr_assert_not_null(v, "%s", k);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT extract(epoch FROM '%s'::timestamptz - now())", v);
    return hx_sql_num(sql);
}

static void sql(const char *fmt, long long id)
{
    char q[512];
    snprintf(q, sizeof(q), fmt, id);
    hx_sql_do(q);
}

Test(ringctl, one_figure_for_start_and_finish)
{
    char w[128], row[1024];
    ctl_one_node(w);
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":true}"), 200));
    usleep(300000); /* a round under way when it paused ends before the rows below */
    long long run = hx_submit(hx.admin, "runs", 1), wait = hx_submit(hx.admin, "waits", 2);
    sql("UPDATE jobs SET state = 'RUNNING' WHERE id = %lld", run);
    sql("INSERT INTO job_sched (job_id, predicted_finish) VALUES (%lld, now() + interval"
        " '10 min 20 s')",
        run);
    sql("INSERT INTO job_sched (job_id, pending_reason, queue_position, predicted_start,"
        " predicted_finish) VALUES (%lld, 'needs 2 GPUs, 1 free', 1, now() + interval"
        " '20 min 20 s', now() + interval '50 min')",
        wait);

    /* before the first forecast pass: the round's, unsure ("~": it has no P90) */
    list_row(run, row, sizeof(row));
    cr_assert(strstr(row, " ~10m ") && !strstr(row, "finish"), "the round's finish: %s", row);
    list_row(wait, row, sizeof(row));
    cr_assert(strstr(row, " ~20m ") && strstr(row, " ~50m ") && !strstr(row, " start "),
              "the round's start and finish, the reason without a time: %s", row);
    json_t *j = job(run);
    cr_assert(json_is_null(json_object_get(j, "forecast")));
    double left = in_s(j, "predicted_finish");
    cr_assert(left > 600 && left < 630, "%.0f", left);
    json_decref(j);
    char id[32];
    snprintf(id, sizeof(id), "%lld", run);
    struct ctl_run *r = ctl("show", id);
    cr_assert(strstr(r->out, "finish:    predicted ") &&
                  strstr(r->out, "(last round's; no forecast yet)"),
              "%s", r->out);

    /* a forecast made: its P50 is the one figure everywhere, the round's is shown nowhere */
    sql("INSERT INTO job_forecasts (job_id, finish_p50, finish_p90, as_of) VALUES (%lld, now()"
        " + interval '3 min 20 s', now() + interval '3 min 30 s', now())",
        run);
    sql("INSERT INTO job_forecasts (job_id, start_p50, start_p90, finish_p50, as_of) VALUES"
        " (%lld, now() + interval '5 min 20 s', now() + interval '5 min 30 s', NULL, now())",
        wait);
    list_row(run, row, sizeof(row));
    cr_assert(strstr(row, " in 3m ") && !strstr(row, "10m"), "the forecast's finish: %s", row);
    list_row(wait, row, sizeof(row));
    cr_assert(strstr(row, " in 5m ") && !strstr(row, "20m") && !strstr(row, "50m"),
              "the forecast's start; its finish unknown to it, not the round's: %s", row);
    j = job(run);
    cr_assert_str_eq(json_string_value(json_object_get(j, "predicted_finish")),
                     json_string_value(json_object_get(json_object_get(j, "forecast"),
                                                       "finish_p50")));
    json_decref(j);
    j = job(wait);
    cr_assert_str_eq(json_string_value(json_object_get(j, "predicted_start")),
                     json_string_value(json_object_get(json_object_get(j, "forecast"),
                                                       "start_p50")));
    cr_assert(json_is_null(json_object_get(j, "predicted_finish")), "unknown to the forecast");
    json_decref(j);
    r = ctl("show", id);
    cr_assert(strstr(r->out, "finish:    predicted ") && strstr(r->out, "(forecast P50)") &&
                  strstr(r->out, "forecast:  finish "),
              "%s", r->out);
    hx_finish();
}

/* A deadline's answer at submission comes from the forecast (docs/forecast.md): the outlook of
 * the last pass with the new job added, stored as the job's forecast so that GET says the
 * same until a pass that saw the job replaces it. One job ran an hour (the prior of a job
 * that has reported nothing); a node of 2 GPUs. */
Test(ringctl, submit_deadline_answers_from_the_forecast)
{
    char w[128];
    ctl_one_node(w);
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":true}"), 200));
    usleep(300000);
    long long done = hx_submit(hx.admin, "ran", 1);
    char q[512];
    snprintf(q, sizeof(q),
             "UPDATE jobs SET state = 'COMPLETED', finished_at = now() WHERE id = %lld;"
             " INSERT INTO job_events (job_id, at, from_state, to_state, event, actor) VALUES"
             " (%lld, now() - interval '1 hour', 'STARTING', 'RUNNING', 'start', 'test')",
             done, done);
    hx_sql_do(q);
    long long x = hx_submit(hx.admin, "x", 1);
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":false}"), 200));
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM job_forecasts WHERE job_id = %lld AND finish_p50 IS NOT NULL",
             x);
    for (double end = hx_now() + 30; hx_sql_num(q) < 1 && hx_now() < end;)
        usleep(100000);
    cr_assert_eq(hx_sql_num(q), 1, "a pass forecast x");

    struct ctl_run *r = ctl("--json", "submit", "--name", "dl", "--gpus", "1", "--deadline",
                            "+3h", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = ctl_out_json(r);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_t *f = json_object_get(j, "deadline_forecast");
    cr_assert_str_eq(json_string_value(json_object_get(f, "source")), "forecast");
    cr_assert_str_eq(json_string_value(json_object_get(f, "verdict")), "meets");
    json_decref(j);
    snprintf(q, sizeof(q), "SELECT count(*) FROM job_forecasts WHERE job_id = %lld", id);
    cr_assert_eq(hx_sql_num(q), 1, "its forecast is stored with it");
    /* shown once a round has the job in its view (job_sched) */
    j = job(id);
    for (double end = hx_now() + 20;
         !json_is_string(json_object_get(j, "predicted_finish")) && hx_now() < end;
         j = job(id)) {
        json_decref(j);
        usleep(100000);
    }
    cr_assert_str_eq(json_string_value(json_object_get(j, "predicted_finish")),
                     json_string_value(json_object_get(json_object_get(j, "forecast"),
                                                       "finish_p50")));
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(j, "deadline_forecast"), "verdict")),
        "meets");
    double left = in_s(j, "predicted_finish");
    cr_assert(left > 600 && left < 4 * 3600, "about the hour the finished job ran: %.0f", left);
    json_decref(j);
    hx_finish();
}
