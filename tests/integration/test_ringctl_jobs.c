/* The real ringctl against a real ringmasterd, the commands on jobs: submit (with a batch
 * model), list (squeue-like, --wide, --watch), show, events, watch, cancel, and the requests
 * resize, suspend, resume and migrate, --wait following them until applied. Suite ringctl
 * (declared in ctl.c), as test_ringctl_cluster.c. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

Test(ringctl, jobs_from_submit_to_cancel)
{
    struct ctl_run *r = ctl("submit", "--name", "train", "--gpus", "2", "--", "python", "t.py");
    cr_assert_eq(r->code, 0, "%s", r->err);
    long long id = atoll(r->out);
    cr_assert_gt(id, 0, "%s", r->out);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);

    r = ctl("list");
    cr_assert_eq(r->code, 0);
    cr_assert(strstr(r->out, "NAME") && strstr(r->out, "train"), "%s", r->out);
    cr_assert(strstr(r->out, "REASON/FINISH") && strstr(r->out, "TIME") && strstr(r->out, "USER"),
              "%s", r->out);
    cr_assert(strstr(r->out, "PENDING") && strstr(r->out, " 0:00 ") && strstr(r->out, " ("),
              "a pending job has not run and says why it waits: %s", r->out);
    r = ctl("--json", "list", "--all");
    json_t *j = ctl_out_json(r);
    cr_assert_eq(json_array_size(j), 1);
    json_decref(j);

    /* the reason is the first round's after the submission: on a loaded machine that round
     * may still run when the list above came back ("(waiting)") */
    r = ctl("show", ids);
    for (double end = hx_now() + 20; r->code == 0 && !strstr(r->out, "pending:") && hx_now() < end;
         r = ctl("show", ids))
        usleep(50 * 1000);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "PENDING") && strstr(r->out, "python t.py"), "%s", r->out);
    cr_assert(strstr(r->out, "pending:"), "a pending job explains why: %s", r->out);
    r = ctl("--json", "show", ids);
    j = ctl_out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "id")), id);
    json_decref(j);

    r = ctl("resize", ids, "3");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "now asks for 3 GPUs") && !strchr(strchr(r->out, '\n') + 1, '\n'),
              "one line: %s", r->out);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs/1", hx.admin, NULL), 200);
    cr_assert_eq(json_integer_value(json_object_get(j, "gpus")), 3);
    json_decref(j);

    r = ctl("suspend", ids); /* never launched: refused */
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "409"), "%s", r->err);

    r = ctl("cancel", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    char line[64];
    snprintf(line, sizeof(line), "job %s cancelled\n", ids);
    cr_assert_str_eq(r->out, line);
    r = ctl("cancel", ids);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "409"), "the problem is printed: %s", r->err);

    r = ctl("list");
    cr_assert(strstr(r->out, "CANCELLED") && strstr(r->out, "finished "),
              "an ended job shows its finish: %s", r->out);

    r = ctl("events", ids);
    cr_assert_eq(r->code, 0);
    cr_assert(strstr(r->out, "EVENT") && strstr(r->out, "CANCELLED"), "%s", r->out);
    r = ctl("--json", "events", ids);
    j = ctl_out_json(r);
    cr_assert_geq(json_array_size(json_object_get(j, "items")), 2);
    json_decref(j);

    r = ctl("watch", ids, "--timeout", "20"); /* ended: returns at once */
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "CANCELLED"), "%s", r->out);
    hx_finish();
}

/* --batch, --adaptive-batch and --max-local-batch reach the job's batch model; a malformed
 * range is refused before any request. */
Test(ringctl, submit_gives_a_batch_model)
{
    struct ctl_run *r = ctl("--json", "submit", "--name", "ad", "--gpus", "2", "--batch", "64",
                            "--adaptive-batch", "64:1024", "--max-local-batch", "256", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = ctl_out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "batch")), 64);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "adaptive_batch"), "max")),
                 1024);
    cr_assert_eq(json_integer_value(json_object_get(j, "max_local_batch")), 256);
    char ids[32];
    snprintf(ids, sizeof(ids), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(j, "id")));
    json_decref(j);
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "batch:     64 global (adaptive to 1024), runs -"), "%s", r->out);
    cr_assert(!strstr(r->out, "chosen:"), "nothing chosen before a round runs it: %s", r->out);
    /* what a round says of it once it runs (model.batch_choice), as show prints it; the
     * rounds paused, which would say it waits */
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":true}"), 200));
    usleep(300000); /* a round under way when it paused writes before the row below */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_sched AS s (job_id, model) VALUES (%s, '{\"batch_choice\": {\"batch\":"
             " 256, \"gpus\": 2, \"init_batch\": 64, \"adaptive\": true, \"efficiency\": 0.714,"
             " \"goodput_x\": 1.8, \"why\": \"batch 256 on 2 GPUs: goodput 1.8x of batch 64\"}}')"
             " ON CONFLICT (job_id) DO UPDATE SET model = COALESCE(s.model, '{}') || EXCLUDED.model",
             ids);
    hx_sql_do(sql);
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "chosen:    batch 256 on 2 GPUs: goodput 1.8x of batch 64;"
                             " statistical efficiency 0.71\n"),
              "%s", r->out);
    r = ctl("--json", "submit", "--name", "lin", "--gpus", "1", "--batch", "8", "--lr-scaling",
            "linear", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    j = ctl_out_json(r);
    cr_assert_str_eq(json_string_value(json_object_get(j, "lr_scaling")), "linear");
    json_decref(j);
    r = ctl("submit", "--name", "bad", "--gpus", "1", "--batch", "8", "--lr-scaling", "cubic",
            "--", "t");
    cr_assert_neq(r->code, 0);
    cr_assert(strstr(r->err, "lr_scaling"), "the server's detail: %s", r->err);
    r = ctl("--json", "submit", "--name", "ad2", "--gpus", "1", "--batch", "8", "--adaptive-batch",
            "32", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    j = ctl_out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "adaptive_batch"), "min")),
                 8, "MAX alone: the range starts at --batch");
    json_decref(j);
    r = ctl("submit", "--name", "bad", "--batch", "64", "--adaptive-batch", "64:x", "--", "t");
    cr_assert_neq(r->code, 0);
    cr_assert(strstr(r->err, "--adaptive-batch"), "%s", r->err);
    r = ctl("submit", "--name", "bad", "--gpus", "1", "--batch", "64", "--adaptive-batch", "16:128",
            "--", "t");
    cr_assert_neq(r->code, 0);
    cr_assert(strstr(r->err, "adaptive_batch.min"), "the server's detail: %s", r->err);
    hx_finish();
}

/* --deadline: sent as "deadline" (RFC 3339, UTC), and the answer's verdict on the forecast
 * (submit_deadline.h) printed on stderr: the queue-order forecast plus the prior of the
 * cluster's finished jobs, here one job that ran an hour, on a node of 2 free GPUs with the
 * rounds paused (nothing else runs or waits). Bad values are the server's 400 naming the
 * field, or ringctl's own message. */
Test(ringctl, submit_deadline_says_whether_the_forecast_meets_it)
{
    char w[128], sql[512];
    ctl_one_node(w);
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":true}"), 200));
    usleep(300000); /* a round under way when it paused ends before the jobs below */
    long long done = hx_submit(hx.admin, "ran", 1);
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET state = 'COMPLETED', finished_at = now() WHERE id = %lld;"
             " INSERT INTO job_events (job_id, at, from_state, to_state, event, actor) VALUES"
             " (%lld, now() - interval '1 hour', 'STARTING', 'RUNNING', 'start', 'test')",
             done, done);
    hx_sql_do(sql);

    struct ctl_run *r =
        ctl("submit", "--name", "dl", "--gpus", "1", "--deadline", "+3h", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    long long id = atoll(r->out);
    cr_assert_gt(id, 0, "the id alone on stdout: %s", r->out);
    cr_assert(strstr(r->err, "forecast finish ~") && strstr(r->err, ", before the deadline"),
              "%s", r->err);
    r = ctl("submit", "--name", "late", "--gpus", "1", "--deadline", "+20m", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->err, ": will miss by ~40m at the current load"), "%s", r->err);
    r = ctl("--json", "submit", "--name", "dl2", "--gpus", "1", "--deadline", "2099-12-05T18:00Z",
            "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = ctl_out_json(r);
    cr_assert_str_eq(json_string_value(json_object_get(j, "deadline")),
                     "2099-12-05T18:00:00.000000Z");
    json_t *f = json_object_get(j, "deadline_forecast");
    cr_assert_str_eq(json_string_value(json_object_get(f, "verdict")), "meets");
    cr_assert(json_is_string(json_object_get(f, "finish")), "the forecast finish");
    json_decref(j);

    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "  deadline:  "), "%s", r->out);
    cr_assert(strstr(r->out, "no forecast yet"), "no round has forecast it (paused): %s", r->out);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert(json_is_string(json_object_get(j, "deadline")));
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(j, "deadline_forecast"), "verdict")),
        "unknown");
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", done);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert(json_is_null(json_object_get(j, "deadline")), "none: null");
    cr_assert_null(json_object_get(j, "deadline_forecast"));
    json_decref(j);

    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"b\",\"command\":[\"t\"],\"deadline\":\"friday\"}"),
                      400, "deadline");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"b\",\"command\":[\"t\"],\"deadline\":null}"),
                      400, "deadline");
    r = ctl("submit", "--name", "bad", "--deadline", "friday", "--", "t");
    cr_assert_neq(r->code, 0);
    cr_assert(strstr(r->err, "--deadline"), "%s", r->err);

    /* once completed, show says whether it finished by its deadline */
    char upd[256];
    snprintf(upd, sizeof(upd),
             "UPDATE jobs SET state = 'COMPLETED', finished_at = deadline - interval '1 hour'"
             " WHERE id = %lld",
             id);
    hx_sql_do(upd);
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "  deadline:  ") && strstr(r->out, "(met)"), "%s", r->out);
    snprintf(upd, sizeof(upd),
             "UPDATE jobs SET finished_at = deadline + interval '3 hours' WHERE id = %lld", id);
    hx_sql_do(upd);
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "(missed by about 3"), "%s", r->out);
    hx_finish();
}

/* --after: the dependencies sent as "after", shown by show with the reason it waits. */
Test(ringctl, submit_after_waits_for_its_job)
{
    struct ctl_run *r = ctl("submit", "--name", "a", "--gpus", "1", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char a[32], after[64];
    snprintf(a, sizeof(a), "%lld", strtoll(r->out, NULL, 10));
    snprintf(after, sizeof(after), "%s:any", a);
    r = ctl("--json", "submit", "--name", "b", "--gpus", "1", "--after", after, "--after", a, "--",
            "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = ctl_out_json(r);
    char *text = json_dumps(json_object_get(j, "after"), JSON_COMPACT), want[160];
    snprintf(want, sizeof(want), "[{\"job\":%s,\"when\":\"any\"},{\"job\":%s,\"when\":\"ok\"}]",
             a, a);
    cr_assert_str_eq(text, want);
    free(text);
    char b[32];
    snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(j, "id")));
    json_decref(j);
    snprintf(want, sizeof(want), "after:     job %s (any), job %s (ok)", a, a);
    r = ctl("show", b);
    cr_assert(strstr(r->out, want), "%s", r->out);
    snprintf(want, sizeof(want), "waiting for job %s, PENDING", a);
    double until = hx_now() + 20;
    while (!strstr(r->out, want) && hx_now() < until) { /* the next round's reason */
        usleep(100000);
        r = ctl("show", b);
    }
    cr_assert(strstr(r->out, want), "%s", r->out);
    r = ctl("submit", "--name", "c", "--after", "12:never", "--", "t");
    cr_assert_eq(r->code, 2, "a usage error");
    cr_assert(strstr(r->err, "--after"), "%s", r->err);
    r = ctl("submit", "--name", "c", "--gpus", "1", "--after", "array:999999", "--", "t");
    cr_assert_eq(r->code, 1, "refused by the server");
    cr_assert(strstr(r->err, "after[0].array"), "%s", r->err);
    hx_finish();
}

Test(ringctl, running_jobs_show_allocation_suspend_and_migrate)
{
    char w[128], ids[32], ids2[32];
    ctl_one_node(w);
    snprintf(ids, sizeof(ids), "%lld", ctl_running_job(w, "r1"));
    snprintf(ids2, sizeof(ids2), "%lld", ctl_running_job(w, "r2"));
    char other[128], path[64];
    hx_user("w2", "worker", other);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/state", ids);
    hx_expect_problem(hx_json("POST", path, other, "{\"state\":\"COMPLETED\"}"), 403, NULL);
    struct ctl_run *r = ctl("show", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "RUNNING") && strstr(r->out, "allocation (world size 1): node 1"),
              "%s", r->out);
    cr_assert(strstr(r->out, "checkpoint: none reported"), "%s", r->out);
    /* its worker forwards a checkpoint its program reported (sql/044) */
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/metrics", ids);
    json_decref(hx_expect_json(
        hx_json("POST", path, w, "{\"items\":[],\"checkpoint\":{\"step\":1200}}"), 200));
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "checkpoint: step 1200, "), "%s", r->out);
    r = ctl("suspend", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "suspend action ") && strstr(r->out, " pending on node 1"), "%s",
              r->out);
    r = ctl("--json", "migrate", ids2);
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_decref(ctl_out_json(r));
    r = ctl("migrate", ids2, "99");
    cr_assert_eq(r->code, 1, "no node 99 (or not RUNNING any more): %s", r->out);
    json_t *acts = hx_expect_json(hx_json("GET", "/api/v1/nodes/1/actions", w, NULL), 200);
    char *text = json_dumps(acts, JSON_COMPACT);
    cr_assert(strstr(text, "\"suspend\""), "%s", text);
    free(text);
    json_decref(acts);
    hx_finish();
}

/* How many lines of the server's log (one per request) hold what. */
static int server_log_count(const char *what)
{
    static char log[1 << 20];
    char path[300];
    snprintf(path, sizeof(path), "%s/server.log", hx.dir);
    ctl_read_file(path, log, sizeof(log));
    int n = 0;
    for (const char *p = log; (p = strstr(p, what)); p++)
        n++;
    return n;
}

Test(ringctl, list_reads_like_squeue_and_watches)
{
    char w[128], path[64];
    ctl_one_node(w);
    long long run = ctl_running_job(w, "runs");
    long long done = ctl_running_job(w, "ends");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", done);
    sleep(1);
    json_decref(hx_expect_json(hx_json("POST", path, w, "{\"state\":\"COMPLETED\"}"), 200));
    long long wait = hx_submit(hx.admin, "waits", 2);
    (void)wait;
    char sql[160];
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET elastic = true, min_gpus = 1, max_gpus = 4 WHERE id = %lld", run);
    hx_sql_do(sql);
    /* "runs" reports its length (libringjob's ringjob_set_total_steps) and step 100 */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", run);
    json_decref(hx_expect_json(
        hx_json("POST", path, w,
                "{\"items\":[{\"step\":100,\"loss\":1.0,\"samples\":32,\"seconds\":0.1,"
                "\"world_size\":1}],\"total_steps\":400}"),
        200));

    struct ctl_run *r = ctl("list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    const char *heads[] = {"ID",   "NAME",     "USER",         "STATE",
                           "GPUS", "TIME",     "PROGRESS",     "REASON/FINISH"};
    for (size_t k = 0; k < sizeof(heads) / sizeof(heads[0]); k++)
        cr_assert(strstr(r->out, heads[k]), "no %s: %s", heads[k], r->out);
    cr_assert(!strstr(r->out, "SUBMITTED"), "not wide: %s", r->out);
    const char *line = strstr(r->out, "ends");
    cr_assert(line && strstr(line, "COMPLETED") && strstr(line, " 0:0") &&
                  strstr(line, "finished "),
              "a completed job shows its run time and finish: %s", r->out);
    line = strstr(r->out, "runs");
    cr_assert(line && strstr(line, "RUNNING") && strstr(line, " 0:0") && strstr(line, " 25% "),
              "%s", r->out);
    cr_assert(line && strstr(line, " 1 (1-4) "), "an elastic job: held (bounds): %s", r->out);
    line = strstr(r->out, "waits");
    cr_assert(line && strstr(line, "PENDING") && strstr(line, "("), "%s", r->out);
    char runs[32];
    snprintf(runs, sizeof(runs), "%lld", run);
    r = ctl("show", runs); /* (ctl's answer is one static: r is reused) */
    cr_assert(strstr(r->out, "progress:  100 of 400 steps (25.0%, reported)"), "%s", r->out);

    const char *wides[][3] = {{"list", "--wide", NULL}, {"list", "-o", "wide"}, {"-o", "wide", "list"}};
    for (size_t k = 0; k < 3; k++) {
        r = ctl_as(hx.admin, wides[k][0], wides[k][1], wides[k][2], NULL);
        cr_assert_eq(r->code, 0, "%s", r->err);
        cr_assert(strstr(r->out, "NODE[GPUS]") && strstr(r->out, "SUBMITTED"), "%s", r->out);
        line = strstr(r->out, "runs");
        cr_assert(line && strstr(line, "1[0]"), "the allocation per node: %s", r->out);
    }

    r = ctl("--json", "list");
    json_t *j = ctl_out_json(r);
    const char *fin = json_string_value(json_object_get(json_array_get(j, 1), "finished_at"));
    cr_assert(fin && strlen(fin) > 20 && fin[strlen(fin) - 1] == 'Z',
              "JSON keeps the server's timestamps: %s", fin);
    json_decref(j);

    double t0 = hx_now();
    int events_before = server_log_count("/events 200");
    r = ctl("list", "--watch", "--interval", "0.2", "--count", "3");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert_eq(server_log_count("/events 200") - events_before, 2,
                 "the two started jobs' events are read once, not at each redraw");
    int draws = 0;
    for (const char *p = r->out; (p = strstr(p, "Every 0.2s: ringctl list")); p++)
        draws++;
    cr_assert_eq(draws, 3, "%s", r->out);
    r = ctl("list", "--watch", "--interval", "0.2", "--timeout", "1");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "REASON/FINISH"), "%s", r->out);
    cr_assert_lt(hx_now() - t0, 10);
    cr_assert_eq(ctl("list", "--watch", "--count", "0")->code, 2);
    r = ctl("list", "--watch", "--interval", "0.1", "--count", "2", "--json");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char *second = strchr(r->out, '\n');
    cr_assert(second && second[1], "one JSON array a line: %s", r->out);
    *second = '\0';
    j = ctl_out_json(r);
    cr_assert_eq(json_array_size(j), 3, "%s", r->out);
    json_decref(j);
    hx_finish();
}

/* Posts the job's state as the worker w (as its worker reports it). */
static void report(const char *w, long long id, const char *state)
{
    char path[64], body[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
    snprintf(body, sizeof(body), "{\"state\":\"%s\"}", state);
    json_decref(hx_expect_json(hx_json("POST", path, w, body), 200));
}

/* As the worker w of node 1: waits (bounded) for the job's pending action of kind, which a
 * ringctl running beside the test asks for, and posts it done. */
static void take_action(const char *w, long long id, const char *kind)
{
    for (double t0 = hx_now(); hx_now() - t0 < 15; usleep(50000)) {
        json_t *a = hx_expect_json(hx_json("GET", "/api/v1/nodes/1/actions?wait=1", w, NULL), 200);
        size_t k;
        json_t *it;
        json_array_foreach(json_object_get(a, "items"), k, it)
        {
            if (json_integer_value(json_object_get(it, "job_id")) != id ||
                strcmp(json_string_value(json_object_get(it, "kind")), kind))
                continue;
            char path[64];
            snprintf(path, sizeof(path), "/api/v1/actions/%" JSON_INTEGER_FORMAT "/result",
                     json_integer_value(json_object_get(it, "id")));
            json_decref(a);
            json_decref(hx_expect_json(
                hx_json("POST", path, w, "{\"outcome\":\"ok\",\"detail\":\"test\"}"), 200));
            return;
        }
        json_decref(a);
    }
    cr_assert_fail("no %s action for job %lld", kind, id);
}

/* Starts ringctl with the test server and the admin token, arguments up to NULL. */
static pid_t ctl_bg(const char *first, ...)
{
    static char url[64];
    char *argv[32] = {"ringctl", (char *)first};
    int n = 2;
    va_list ap;
    va_start(ap, first);
    for (char *a; n < 31 && (a = va_arg(ap, char *)); n++)
        argv[n] = a;
    va_end(ap);
    argv[n] = NULL;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    return ctl_spawn(url, hx.admin, argv);
}

Test(ringctl, requests_say_what_next_and_wait_until_applied)
{
    char w[128], ids[32];
    ctl_one_node(w);
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"interval_s\": 1}"),
                               200));
    long long id = ctl_running_job(w, "r1");
    snprintf(ids, sizeof(ids), "%lld", id);
    struct ctl_run r;

    /* resize: the scheduler's next round gives it the second GPU; the worker reports it. */
    pid_t pid = ctl_bg("resize", ids, "2", "--wait", "--timeout", "25", NULL);
    json_decref(ctl_wait_state(id, "RESIZING"));
    report(w, id, "RUNNING");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "asks for 2 GPUs; the scheduler considers it at its next round"
                            " (every 1 s)"),
              "%s", r.out);
    cr_assert(strstr(r.out, "RUNNING -> RESIZING") && strstr(r.out, "RESIZING -> RUNNING"),
              "each step: %s", r.out);
    cr_assert(strstr(r.out, "runs on 2 GPUs"), "%s", r.out);

    /* suspend and resume: the worker applies them. */
    pid = ctl_bg("suspend", ids, "--wait", "--timeout", "20", NULL);
    take_action(w, id, "suspend");
    report(w, id, "SUSPENDED");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "suspend action ") && strstr(r.out, "RUNNING -> SUSPENDED") &&
                  strstr(r.out, "suspended\n"),
              "%s", r.out);
    pid = ctl_bg("resume", ids, "--wait", "--timeout", "20", "--json", NULL);
    take_action(w, id, "resume");
    report(w, id, "RUNNING");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    json_t *j = ctl_out_json(&r);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "RUNNING",
                     "--json: the job as it is at the end");
    json_decref(j);

    /* migrate: no other node, so it is not applied within the timeout (exit 1). */
    double t0 = hx_now();
    r = *ctl("migrate", ids, "--wait", "--timeout", "1");
    cr_assert_eq(r.code, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "migration to another node requested; the scheduler moves it at its"
                            " next round"),
              "%s", r.out);
    cr_assert(strstr(r.err, "not applied after 1 s"), "%s", r.err);
    cr_assert_lt(hx_now() - t0, 10);

    /* A paused scheduler: the answer says so. */
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"paused\": true}"),
                               200));
    r = *ctl("resize", ids, "1");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "asks for 1 GPU; the scheduler considers it once it is unpaused"),
              "%s", r.out);

    /* A job that ends while a request waits: refused (exit 1). */
    pid = ctl_bg("suspend", ids, "--wait", NULL);
    take_action(w, id, "suspend");
    report(w, id, "COMPLETED");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "ended (COMPLETED) before its suspend was applied"), "%s", r.err);

    /* Refused at once: the server's problem, no waiting. */
    r = *ctl("suspend", ids, "--wait");
    cr_assert_eq(r.code, 1);
    cr_assert(strstr(r.err, "409"), "%s", r.err);
    cr_assert_eq(ctl("suspend", ids, "--timeout", "x")->code, 2);
    cr_assert_eq(ctl("suspend", ids, "--bogus")->code, 2);
    hx_finish();
}

Test(ringctl, an_elastic_resize_says_when_the_scheduler_considers_it)
{
    char w[128], ids[32];
    ctl_one_node(w);
    struct ctl_run *r = ctl("submit", "--name", "el", "--gpus", "1", "--elastic", "--max-gpus",
                            "2", "--", "true");
    cr_assert_eq(r->code, 0, "%s", r->err);
    long long id = atoll(r->out);
    snprintf(ids, sizeof(ids), "%lld", id);
    json_decref(ctl_wait_state(id, "STARTING"));
    json_t *s = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
    char want[160];
    snprintf(want, sizeof(want),
             "(STARTING, elastic) asks for 2 GPUs; the scheduler considers it at its next round"
             " (every %g s); it resizes a job at most every %g s",
             json_number_value(json_object_get(s, "interval_s")),
             json_number_value(json_object_get(s, "min_resize_interval_s")));
    json_decref(s);
    r = ctl("resize", ids, "2");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, want), "%s\nwanted: %s", r->out, want);
    r = ctl("resize", ids, "3");
    cr_assert_eq(r->code, 1, "beyond max_gpus: refused");
    cr_assert(strstr(r->err, "gpus"), "%s", r->err);
    hx_finish();
}
