/* The server's side of docs/worker-protocol.md, spoken by hand (no worker daemon): the
 * long-poll, idempotent results, metrics with duplicates, state moves, logs by offset and
 * stream, and who may do what. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

static char wtok[128];

/* Actions here are written by hand: the live scheduler (where built in) is paused. */
static void setup(void)
{
    hx_setup();
    hx_sql_do("DO $$ BEGIN IF to_regclass('scheduler_config') IS NOT NULL THEN"
       " UPDATE scheduler_config SET paused = true; END IF; END $$");
}

TestSuite(worker_api, .init = setup, .fini = hx_teardown, .timeout = 60);

static long long make_node(void)
{
    hx_user("api-worker", "worker", wtok);
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", wtok,
                                       "{\"name\":\"n1\",\"cpus\":2,\"memory_bytes\":1,"
                                       "\"gpus\":[],\"simulated\":true}"),
                               201);
    long long id = json_integer_value(json_object_get(n, "id"));
    cr_assert(json_is_true(json_object_get(n, "simulated")));
    json_decref(n);
    return id;
}

/* A start of job on node, written as a round would (pending): its worker may report. */
static void start_pending(long long job, long long node)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind, spec) VALUES (%lld, %lld, 'start',"
             " jsonb_build_object('slots', jsonb_build_array(jsonb_build_object('node_id', %lld,"
             " 'gpu', 0))))",
             node, job, node);
    hx_sql_do(sql);
}

Test(worker_api, long_poll_waits_then_answers_and_results_are_idempotent)
{
    long long node = make_node();
    long long job = hx_submit(hx.admin, "j", 1);
    char path[128], sql[256];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=1", node);
    double t0 = hx_now();
    json_t *a = hx_expect_json(hx_json("GET", path, wtok, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(a, "items")), 0);
    cr_assert(hx_now() - t0 >= 0.9, "an empty long-poll waited its second");
    json_decref(a);
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind) VALUES (%lld, %lld, 'suspend')", node,
             job);
    hx_sql_do(sql);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=30", node);
    t0 = hx_now();
    a = hx_expect_json(hx_json("GET", path, wtok, NULL), 200);
    cr_assert(hx_now() - t0 < 2, "a pending action answers at once");
    json_t *act = json_array_get(json_object_get(a, "items"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(act, "kind")), "suspend");
    long long id = json_integer_value(json_object_get(act, "id"));
    json_decref(a);
    snprintf(path, sizeof(path), "/api/v1/actions/%lld/result", id);
    json_decref(
        hx_expect_json(hx_json("POST", path, wtok, "{\"outcome\":\"ok\",\"detail\":\"x\"}"), 200));
    json_decref(
        hx_expect_json(hx_json("POST", path, wtok, "{\"outcome\":\"ok\",\"detail\":\"x\"}"), 200));
    hx_expect_problem(hx_json("POST", path, wtok, "{\"outcome\":\"failed\",\"detail\":\"y\"}"), 409,
                      NULL);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"outcome\":\"maybe\"}"), 400, "outcome");
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=0", node);
    a = hx_expect_json(hx_json("GET", path, wtok, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(a, "items")), 0, "a finished action is gone");
    json_decref(a);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=61", node);
    hx_expect_problem(hx_json("GET", path, wtok, NULL), 400, "wait");
    hx_finish();
}

/* A long-poll of wait seconds for node's actions, on its own thread. */
struct poll_arg {
    long long node;
    int wait;
    double took;  /* seconds until answered */
    size_t items; /* actions in the answer */
    long status;
};

static void *long_poll(void *arg)
{
    struct poll_arg *p = arg;
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=%d", p->node, p->wait);
    double t0 = hx_now();
    struct hx_resp *r = hx_json("GET", path, wtok, NULL);
    p->took = hx_now() - t0;
    p->status = r->status;
    p->items = json_array_size(json_object_get(r->json, "items"));
    hx_free(r);
    return NULL;
}

#define LOOKS "ringmaster_actions_poll_looks_total"

/* The long-poll is woken by the commit of an action for its node (sql/021's notification),
 * not by a timer: waiting with nothing to deliver it looks at the database only when it
 * arrives and when its wait ends (a timer of 0.2 s looked ten times a second), and an action
 * written by another connection while it waits is delivered long before the 10 s backstop. */
Test(worker_api, a_long_poll_wakes_on_the_commit_not_on_a_timer)
{
    long long node = make_node();
    long long job = hx_submit(hx.admin, "j", 1);
    double before = hx_metric(LOOKS);
    cr_assert(before >= 0, "/metrics counts the long-poll's looks");
    struct poll_arg idle = {.node = node, .wait = 3};
    long_poll(&idle);
    cr_assert_eq(idle.status, 200);
    cr_assert_eq(idle.items, 0);
    cr_assert(idle.took >= 2.9, "an empty long-poll waited its 3 s (%.2f s)", idle.took);
    double looks = hx_metric(LOOKS) - before;
    cr_assert(looks >= 2 && looks <= 3, "a quiet 3 s wait looked %.0f times, not on a timer",
              looks);

    struct poll_arg woken = {.node = node, .wait = 30};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, long_poll, &woken), 0);
    usleep(500000); /* the poll is suspended by now (and if not, it finds the action at once) */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind) VALUES (%lld, %lld, 'suspend')", node,
             job);
    hx_sql_do(sql);
    pthread_join(t, NULL);
    cr_assert_eq(woken.status, 200);
    cr_assert_eq(woken.items, 1, "the action committed meanwhile is delivered");
    cr_assert(woken.took < 5, "delivered on its commit, not by the 10 s backstop (%.2f s)",
              woken.took);
    hx_finish();
}

Test(worker_api, metrics_ignore_duplicates_and_states_follow_the_machine)
{
    long long node = make_node();
    long long job = hx_submit(hx.admin, "j", 1);
    start_pending(job, node);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", job);
    const char *batch = "{\"items\":[{\"step\":1,\"loss\":0.9,\"world_size\":1,\"samples\":8,"
                        "\"seconds\":0.01},{\"step\":2,\"loss\":0.5,\"world_size\":1}]}";
    json_t *r = hx_expect_json(hx_json("POST", path, wtok, batch), 200);
    cr_assert_eq(json_integer_value(json_object_get(r, "stored")), 2);
    json_decref(r);
    r = hx_expect_json(hx_json("POST", path, wtok, batch), 200);
    cr_assert_eq(json_integer_value(json_object_get(r, "stored")), 0, "duplicates ignored");
    json_decref(r);
    hx_expect_problem(hx_json("POST", path, wtok,
                              "{\"items\":[{\"step\":-1,\"loss\":1,"
                              "\"world_size\":1}]}"),
                      400, NULL);
    r = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *items = json_object_get(r, "items");
    cr_assert_eq(json_array_size(items), 2);
    cr_assert_float_eq(json_number_value(json_object_get(json_array_get(items, 1), "loss")), 0.5,
                       1e-12);
    json_decref(r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", job);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"state\":\"RUNNING\"}"), 409, NULL);
    json_decref(hx_expect_json(hx_json("POST", path, wtok, "{\"state\":\"STARTING\"}"), 200));
    json_decref(hx_expect_json(hx_json("POST", path, wtok, "{\"state\":\"RUNNING\"}"), 200));
    json_decref(hx_expect_json(hx_json("POST", path, wtok, "{\"state\":\"RUNNING\"}"), 200));
    json_decref(hx_expect_json(
        hx_json("POST", path, wtok, "{\"state\":\"FAILED\",\"detail\":\"ranks\",\"exit_code\":3}"),
        200));
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/events", job);
    r = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    items = json_object_get(r, "items");
    cr_assert_eq(json_array_size(items), 4, "submit, start, running, fail");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 3), "detail")),
                     "ranks; exit code 3");
    json_decref(r);
    hx_finish();
}

/* Steps of n reports from..to at world size 1, each with its own "at" as the worker sends
 * them (at ms after the hour), posted for job by its worker; answers what it stored. */
static long long post_run(long long job, long from, long to, int ms)
{
    char path[96], *body = malloc(160 * (size_t)(to - from + 2));
    cr_assert_not_null(body);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", job);
    int o = sprintf(body, "{\"items\":[");
    for (long k = from; k <= to; k++)
        o += sprintf(body + o,
                     "%s{\"step\":%ld,\"loss\":1.0,\"samples\":8,\"seconds\":0.01,"
                     "\"world_size\":1,\"at\":\"2026-01-01T00:00:%02d.%03ldZ\"}",
                     k > from ? "," : "", k, ms / 1000, (long)(ms % 1000) + k % 100);
    sprintf(body + o, "]}");
    json_t *r = hx_expect_json(hx_json("POST", path, wtok, body), 200);
    free(body);
    long long stored = json_integer_value(json_object_get(r, "stored"));
    json_decref(r);
    return stored;
}

/* A job preempted (or requeued, or moved) and restarted at the size it ran, from its
 * checkpoint at step 20 after it reached step 40: the steps it redoes are reports of its new
 * launch, stored (the key was (job, step, world size), which dropped them all, so that its
 * latest step stayed 40 until it passed it). Its progress is the step it is at, and the 20
 * steps it went back are its redo (sql/053). A post sent again is still stored once. */
Test(worker_api, steps_redone_after_a_restart_at_the_same_size_are_kept)
{
    long long node = make_node();
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"j\",\"command\":[\"t\"],\"gpus\":1,"
                                       "\"total_steps\":1000}"),
                               201);
    long long job = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    start_pending(job, node);
    cr_assert_eq(post_run(job, 1, 40, 0), 40);
    cr_assert_eq(post_run(job, 1, 40, 0), 0, "the same post again: nothing twice");
    start_pending(job, node); /* its restart */
    cr_assert_eq(post_run(job, 21, 30, 5000), 10, "its redone steps are new reports");
    cr_assert_eq(post_run(job, 21, 30, 5000), 0, "and stored once");
    char sql[200];
    snprintf(sql, sizeof(sql), "SELECT step * 1000 + redo FROM job_last_report WHERE job_id = %lld",
             job);
    double v = hx_sql_num(sql);
    cr_assert_eq(v, 30 * 1000 + 20, "latest step 30, 20 redone: %g", v);
    snprintf(sql, sizeof(sql), "/api/v1/jobs/%lld", job);
    j = hx_expect_json(hx_json("GET", sql, hx.admin, NULL), 200);
    json_t *p = json_object_get(j, "progress");
    cr_assert_eq(json_integer_value(json_object_get(p, "steps_done")), 30, "its page's progress");
    json_decref(j);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM job_metrics WHERE job_id = %lld", job);
    cr_assert_eq(hx_sql_num(sql), 50, "40 and 10 reports");
    hx_finish();
}

Test(worker_api, logs_append_by_offset_per_stream)
{
    long long node = make_node();
    long long job = hx_submit(hx.admin, "j", 1);
    start_pending(job, node);
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log?offset=0&stream=node-1", job);
    hx_free(hx_call("POST", path, wtok, "text/plain", "hello ", 6, NULL));
    hx_free(hx_call("POST", path, wtok, "text/plain", "hello world\n", 12, NULL));
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log?offset=50&stream=node-1", job);
    hx_expect_problem(hx_call("POST", path, wtok, "text/plain", "x", 1, NULL), 409, NULL);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log?offset=0&stream=node-2", job);
    hx_free(hx_call("POST", path, wtok, "text/plain", "second\n", 7, NULL));
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log", job);
    struct hx_resp *r = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->body, "hello world\nsecond\n");
    hx_free(r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log?offset=6", job);
    r = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
    cr_assert_str_eq(r->body, "world\nsecond\n");
    hx_free(r);
    hx_finish();
}

Test(worker_api, suspend_needs_a_launched_running_job_and_its_owner)
{
    long long node = make_node();
    char user[128], path[96], sql[512];
    hx_user("dora", "user", user);
    long long job = hx_submit(hx.admin, "j", 1);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/suspend", job);
    hx_expect_problem(hx_json("POST", path, hx.admin, NULL), 409, NULL);
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET state = 'RUNNING' WHERE id = %lld; INSERT INTO actions (node_id,"
             " job_id, kind, state, spec) VALUES (%lld, %lld, 'start', 'done',"
             " jsonb_build_object('slots', jsonb_build_array(jsonb_build_object('node_id', %lld,"
             " 'gpu', 0))))",
             job, node, job, node);
    hx_sql_do(sql);
    hx_expect_problem(hx_json("POST", path, user, NULL), 403, NULL);
    hx_expect_problem(hx_json("POST", path, wtok, NULL), 403, NULL);
    json_t *a = hx_expect_json(hx_json("POST", path, hx.admin, NULL), 202);
    cr_assert_str_eq(json_string_value(json_object_get(a, "kind")), "suspend");
    cr_assert_eq(json_integer_value(json_object_get(a, "node_id")), node);
    json_decref(a);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", job);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions", node);
    a = hx_expect_json(hx_json("GET", path, wtok, NULL), 200);
    json_t *items = json_object_get(a, "items");
    cr_assert_eq(json_array_size(items), 1, "the undelivered suspend gave way to the cancel");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "kind")),
                     "cancel");
    json_decref(a);
    hx_finish();
}

/* A second worker user with its own node ("n2"); fills tok, returns the node's id. */
static long long make_other_node(char *tok)
{
    hx_user("api-worker-2", "worker", tok);
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", tok,
                                       "{\"name\":\"n2\",\"cpus\":2,\"memory_bytes\":1,"
                                       "\"gpus\":[],\"simulated\":true}"),
                               201);
    long long id = json_integer_value(json_object_get(n, "id"));
    json_decref(n);
    return id;
}

Test(worker_api, a_worker_token_acts_only_for_its_own_node)
{
    char tok2[128], path[128], sql[256];
    long long a = make_node();
    long long b = make_other_node(tok2);
    long long job = hx_submit(hx.admin, "j", 1);
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind) VALUES (%lld, %lld, 'suspend')", b, job);
    hx_sql_do(sql);
    long long act = (long long)hx_sql_num("SELECT max(id) FROM actions");

    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=0", b);
    hx_expect_problem(hx_json("GET", path, wtok, NULL), 403, NULL);
    json_t *l = hx_expect_json(hx_json("GET", path, tok2, NULL), 200);
    cr_assert_eq(json_array_size(json_object_get(l, "items")), 1, "B sees its own action");
    json_decref(l);
    l = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_decref(l);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=0", a);
    hx_expect_problem(hx_json("GET", path, tok2, NULL), 403, NULL);
    json_decref(hx_expect_json(hx_json("GET", path, wtok, NULL), 200));

    snprintf(path, sizeof(path), "/api/v1/actions/%lld/result", act);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"outcome\":\"ok\",\"detail\":\"x\"}"), 403,
                      NULL);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM actions WHERE state = 'pending'"), 1,
                 "the refused result changed nothing");
    json_decref(
        hx_expect_json(hx_json("POST", path, tok2, "{\"outcome\":\"ok\",\"detail\":\"x\"}"), 200));
    hx_expect_problem(hx_json("POST", "/api/v1/actions/999999/result", wtok,
                              "{\"outcome\":\"ok\",\"detail\":\"x\"}"),
                      404, NULL);

    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", b);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"running\":[]}"), 403, NULL);
    json_decref(hx_expect_json(hx_json("POST", path, tok2, "{\"running\":[]}"), 200));
    hx_expect_problem(hx_json("POST", "/api/v1/nodes", wtok,
                              "{\"name\":\"n2\",\"cpus\":4,\"memory_bytes\":1,\"gpus\":[]}"),
                      403, NULL);
    cr_assert_eq(hx_sql_num("SELECT cpus FROM nodes WHERE name = 'n2'"), 2,
                 "another worker cannot take a node over by its name");
    /* ... unless it is DOWN: a host reinstalled with a new token takes its node back */
    hx_sql_do("UPDATE nodes SET state = 'DOWN' WHERE name = 'n2'");
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/nodes", wtok,
                                       "{\"name\":\"n2\",\"cpus\":4,\"memory_bytes\":1,"
                                       "\"gpus\":[]}"),
                               200));
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=0", b);
    json_decref(hx_expect_json(hx_json("GET", path, wtok, NULL), 200));
    hx_expect_problem(hx_json("GET", path, tok2, NULL), 403, NULL);
    hx_finish();
}

/* Job job in state, launched on node (a done start), holding GPU gpu there. */
static void launched_on(long long job, long long node, const char *state, int gpu)
{
    char sql[768];
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET state = '%s' WHERE id = %lld; INSERT INTO actions (node_id,"
             " job_id, kind, state, spec) VALUES (%lld, %lld, 'start', 'done',"
             " jsonb_build_object('slots', jsonb_build_array(jsonb_build_object('node_id', %lld,"
             " 'gpu', %d)))); INSERT INTO node_gpus (node_id, idx, model, memory_bytes)"
             " VALUES (%lld, %d, 'sim', 1) ON CONFLICT DO NOTHING;"
             " INSERT INTO allocations (job_id, node_id, gpu_idx) VALUES (%lld, %lld, %d)",
             state, job, node, job, node, gpu, node, gpu, job, node, gpu);
    hx_sql_do(sql);
}

/* One metrics item at step n. */
#define METRIC(n) "{\"items\":[{\"step\":" #n ",\"loss\":0.5,\"world_size\":1}]}"

/* POSTs body to /api/v1/jobs/{job}/{what} as tok ("log": text at offset 0 of stream
 * "t-<n>", a new stream each time); returns the status, asserting a problem on 403. */
static long report(long long job, const char *tok, const char *what, const char *body)
{
    static int n;
    char path[160];
    struct hx_resp *r;
    if (strcmp(what, "log") == 0) {
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log?offset=0&stream=t-%d", job, ++n);
        r = hx_call("POST", path, tok, "text/plain", body, strlen(body), NULL);
    } else {
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/%s", job, what);
        r = hx_json("POST", path, tok, body);
    }
    long status = r->status;
    if (status == 403) {
        hx_expect_problem(r, 403, NULL);
        return status;
    }
    hx_free(r);
    return status;
}

static double job_count(const char *table, long long job)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE job_id = %lld", table, job);
    return hx_sql_num(sql);
}

static void beat(long long node, const char *body)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", node);
    json_decref(hx_expect_json(hx_json("POST", path, wtok, body), 200));
}

Test(worker_api, a_job_its_worker_stops_reporting_goes_back_to_the_queue)
{
    long long node = make_node();
    long long job = hx_submit(hx.admin, "j", 1);
    char sql[256], running[96];
    long long resizing = hx_submit(hx.admin, "r", 1);
    hx_sql_do("UPDATE scheduler_config SET node_timeout_s = 1");
    launched_on(job, node, "RUNNING", 0);
    /* a job whose resize failed (its worker had lost it) would stay RESIZING for good */
    launched_on(resizing, node, "RESIZING", 1);
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind, state) VALUES (%lld, %lld, 'resize',"
             " 'failed')",
             node, resizing);
    hx_sql_do(sql);
    snprintf(running, sizeof(running),
             "{\"running\":[{\"job_id\":%lld,\"pid\":7,\"world_size\":1}]}", job);
    beat(node, running);
    beat(node, "{\"running\":[]}");
    beat(node, NULL); /* no list: nothing to reconcile */
    cr_assert_str_eq(wt_job_state(job), "RUNNING", "missing for less than the grace");
    usleep(1300000);
    beat(node, running);
    beat(node, "{\"running\":[]}");
    cr_assert_str_eq(wt_job_state(job), "RUNNING", "reported again: the grace starts over");
    usleep(1300000);
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind) VALUES (%lld, %lld, 'suspend')", node,
             job);
    hx_sql_do(sql);
    beat(node, "{\"running\":[]}");
    cr_assert_str_eq(wt_job_state(job), "RUNNING", "an action in flight: not lost yet");
    hx_sql_do("UPDATE actions SET state = 'failed' WHERE kind = 'suspend'");
    beat(node, "{\"running\":[]}");
    cr_assert_str_eq(wt_job_state(job), "PENDING", "lost: back to the queue");
    cr_assert_str_eq(wt_job_state(resizing), "PENDING", "lost while resizing, too");
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM allocations WHERE job_id = %lld", job);
    cr_assert_eq(hx_sql_num(sql), 0, "its GPUs were released");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE job_id = %lld AND from_state = 'RUNNING'"
             " AND to_state = 'PENDING' AND event = 'requeue' AND detail LIKE 'lost: %%'",
             job);
    cr_assert_eq(hx_sql_num(sql), 1, "one event says why");
    /* the requeue ends the old worker's claim: its late end is refused, the job stays queued */
    cr_assert_eq(report(job, wtok, "state", "{\"state\":\"FAILED\",\"detail\":\"late\"}"),
                 403);
    cr_assert_eq(report(job, wtok, "metrics", METRIC(7)), 403);
    cr_assert_str_eq(wt_job_state(job), "PENDING", "the late report changed nothing");
    cr_assert_eq(report(job, hx.admin, "metrics", METRIC(7)), 200, "an admin still may");
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", node);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"running\":3}"), 400, NULL);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"running\":[{\"job_id\":0}]}"), 400, NULL);
    hx_finish();
}

Test(worker_api, a_worker_reports_only_for_the_jobs_of_its_nodes)
{
    char tok2[128];
    long long a = make_node();
    make_other_node(tok2);
    long long job = hx_submit(hx.admin, "j", 1), queued = hx_submit(hx.admin, "q", 1);
    launched_on(job, a, "RUNNING", 0);
    double events = job_count("job_events", job);

    cr_assert_eq(report(job, tok2, "metrics", METRIC(1)), 403, "B does not run it");
    cr_assert_eq(report(job, tok2, "state", "{\"state\":\"COMPLETED\"}"), 403);
    cr_assert_eq(report(job, tok2, "log", "forged\n"), 403);
    cr_assert_eq(job_count("job_metrics", job), 0, "nothing stored");
    cr_assert_eq(job_count("job_logs", job), 0);
    cr_assert_eq(job_count("job_events", job), events);
    cr_assert_str_eq(wt_job_state(job), "RUNNING");
    /* a job launched nowhere: no worker may touch it (a worker could cancel it by its state) */
    cr_assert_eq(report(queued, wtok, "state", "{\"state\":\"CANCELLED\"}"), 403);
    cr_assert_str_eq(wt_job_state(queued), "PENDING");
    cr_assert_eq(report(424242, wtok, "metrics", METRIC(1)), 404);
    /* an admin skips the check of who reports: the database still refuses a job that does
     * not exist (sql/026: by the sums' and last report's foreign keys) */
    cr_assert_eq(report(424242, hx.admin, "metrics", METRIC(1)), 404);
    cr_assert_eq(job_count("job_metrics", 424242), 0, "nothing stored");

    cr_assert_eq(report(job, wtok, "metrics", METRIC(1)), 200, "A runs it");
    cr_assert_eq(report(job, wtok, "log", "mine\n"), 200);
    cr_assert_eq(report(job, hx.admin, "metrics", METRIC(2)), 200, "an admin any");
    cr_assert_eq(job_count("job_metrics", job), 2);
    cr_assert_eq(report(job, wtok, "state", "{\"state\":\"COMPLETED\"}"), 200);
    cr_assert_str_eq(wt_job_state(job), "COMPLETED");
    hx_sql_do("DELETE FROM allocations");
    cr_assert_eq(report(job, wtok, "log", "last bytes\n"), 200, "its last log, once ended");
    hx_finish();
}

/* The status of entry i of a node's post's answer (-1: none). */
/* How many lines of the server's log hold needle. */
static int server_log_lines(const char *needle)
{
    char path[320], line[2048];
    snprintf(path, sizeof(path), "%s/server.log", hx.dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

static long entry_status(const json_t *answer, size_t i, long long *stored)
{
    const json_t *e = json_array_get(json_object_get(answer, "jobs"), i);
    if (stored)
        *stored = json_integer_value(json_object_get(e, "stored"));
    return e ? (long)json_integer_value(json_object_get(e, "status")) : -1;
}

/* One request carries a node's jobs' reports (the worker sends one every 0.5 s for all its
 * jobs, not one per job), one entry a job: each entry is claimed and stored as its own post
 * would be (all in one statement) and answered in order; a bad entry refuses the whole post;
 * only the node's worker posts. */
Test(worker_api, a_nodes_post_carries_each_of_its_jobs_and_answers_each)
{
    char tok2[128], body[1024], path[96];
    long long a = make_node(), b = make_other_node(tok2);
    long long mine = hx_submit(hx.admin, "mine", 1), other = hx_submit(hx.admin, "other", 1);
    long long mine2 = hx_submit(hx.admin, "mine2", 1);
    launched_on(mine, a, "RUNNING", 0);
    launched_on(other, b, "RUNNING", 0);
    launched_on(mine2, a, "RUNNING", 0);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/metrics", a);
    snprintf(body, sizeof(body),
             "{\"jobs\":[{\"job_id\":%lld,\"items\":[{\"step\":1,\"loss\":0.5,\"world_size\":1},"
             "{\"step\":2,\"loss\":0.4,\"world_size\":1}],\"total_steps\":100,"
             "\"grad\":{\"sqr\":1.5,\"var\":0.5},\"checkpoint\":{\"step\":2}},"
             "{\"job_id\":%lld,\"items\":[{\"step\":1,\"loss\":0.5,\"world_size\":1}]},"
             "{\"job_id\":424242,\"items\":[{\"step\":1,\"loss\":0.5,\"world_size\":1}]}]}",
             mine, other);
    json_t *r = hx_expect_json(hx_json("POST", path, wtok, body), 200);
    long long stored = -1;
    cr_assert_eq(entry_status(r, 0, &stored), 200);
    cr_assert_eq(stored, 2);
    cr_assert_eq(entry_status(r, 1, NULL), 403, "not a job of this worker's nodes");
    cr_assert_eq(entry_status(r, 2, NULL), 404);
    cr_assert_eq(json_array_size(json_object_get(r, "jobs")), 3);
    json_decref(r);
    cr_assert_eq(job_count("job_metrics", mine), 2);
    cr_assert_eq(job_count("job_metrics", other), 0, "nothing stored for another's job");
    cr_assert_eq(wt_db_int("SELECT reported_total_steps FROM jobs WHERE id = %lld", mine), 100,
                 "the entry's other fields are kept as a job's post keeps them");
    cr_assert_eq(wt_db_int("SELECT checkpoint_step FROM jobs WHERE id = %lld", mine), 2);
    cr_assert_eq(wt_db_int("SELECT (grad_sqr * 10)::int FROM jobs WHERE id = %lld", mine), 15);

    r = hx_expect_json(hx_json("POST", path, wtok, body), 200);
    cr_assert_eq(entry_status(r, 0, &stored), 200);
    cr_assert_eq(stored, 0, "the same reports again: duplicates ignored");
    json_decref(r);

    snprintf(body, sizeof(body),
             "{\"jobs\":[{\"job_id\":%lld,\"items\":[{\"step\":3,\"loss\":0.5,\"world_size\":1}]},"
             "{\"job_id\":%lld,\"items\":[{\"step\":-1,\"loss\":0.5,\"world_size\":1}]}]}",
             mine, mine2);
    struct hx_resp *bad = hx_json("POST", path, wtok, body);
    cr_assert(strstr(bad->body, "jobs[1].items[0].step: expected an integer >= 0"), "%s",
              bad->body);
    hx_expect_problem(bad, 400, "jobs[1].items[0].step");
    cr_assert_eq(job_count("job_metrics", mine), 2, "a bad entry: nothing of the post stored");
    snprintf(body, sizeof(body),
             "{\"jobs\":[{\"job_id\":%lld,\"items\":[{\"step\":3,\"loss\":0.5,\"world_size\":1}]},"
             "{\"job_id\":%lld,\"items\":[{\"step\":4,\"loss\":0.5,\"world_size\":1}]}]}",
             mine, mine);
    hx_expect_problem(hx_json("POST", path, wtok, body), 400, "jobs[1].job_id");
    cr_assert_eq(job_count("job_metrics", mine), 2, "one entry a job: nothing stored");

    /* A value the database refuses (an 'at' that is no time) fails that entry only: the post's
     * transaction is given up and the entries are stored one by one. */
    snprintf(body, sizeof(body),
             "{\"jobs\":[{\"job_id\":%lld,\"items\":[{\"step\":4,\"loss\":0.5,\"world_size\":1,"
             "\"at\":\"no time\"}]},{\"job_id\":%lld,\"items\":[{\"step\":5,\"loss\":0.5,"
             "\"world_size\":1}]}]}",
             mine, mine2);
    r = hx_expect_json(hx_json("POST", path, wtok, body), 200);
    cr_assert_eq(entry_status(r, 0, NULL), 400);
    cr_assert_eq(entry_status(r, 1, &stored), 200);
    cr_assert_eq(stored, 1);
    json_decref(r);
    cr_assert_eq(job_count("job_metrics", mine), 2, "the bad entry not stored");
    cr_assert_eq(job_count("job_metrics", mine2), 1, "the good entry stored");
    cr_assert_eq(server_log_lines("its entries one by one"), 1,
                 "only that post left the one statement of all its entries");

    snprintf(body, sizeof(body), "{\"jobs\":[{\"job_id\":%lld,\"items\":[]}]}", mine);
    char other_path[96];
    snprintf(other_path, sizeof(other_path), "/api/v1/nodes/%lld/metrics", b);
    hx_expect_problem(hx_json("POST", other_path, wtok, body), 403, NULL);
    hx_expect_problem(hx_json("POST", "/api/v1/nodes/999999/metrics", wtok, body), 404, NULL);
    hx_expect_problem(hx_json("POST", path, wtok, "{\"jobs\":{}}"), 400, "jobs");
    hx_finish();
}

Test(worker_api, both_workers_report_during_a_migration_then_only_the_target)
{
    char tok2[128], path[96], sql[512];
    long long a = make_node();
    long long b = make_other_node(tok2);
    long long job = hx_submit(hx.admin, "j", 1);
    launched_on(job, a, "RUNNING", 0);
    cr_assert_eq(report(job, tok2, "metrics", METRIC(1)), 403, "not B's before the move");
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET state = 'MIGRATING' WHERE id = %lld; INSERT INTO actions (node_id,"
             " job_id, kind, spec) VALUES (%lld, %lld, 'migrate',"
             " jsonb_build_object('slots', jsonb_build_array(jsonb_build_object('node_id', %lld,"
             " 'gpu', 0))))",
             job, a, job, b);
    hx_sql_do(sql);
    long long mig = (long long)hx_sql_num("SELECT max(id) FROM actions");
    cr_assert_eq(report(job, wtok, "metrics", METRIC(2)), 200, "the source, checkpointing");
    cr_assert_eq(report(job, tok2, "metrics", METRIC(3)), 200, "the target");
    snprintf(path, sizeof(path), "/api/v1/actions/%lld/result", mig);
    json_decref(hx_expect_json(
        hx_json("POST", path, wtok, "{\"outcome\":\"ok\",\"detail\":\"checkpointed\"}"),
        200));
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND node_id = %lld"
             " AND kind = 'start' AND state = 'pending'",
             job, b);
    cr_assert_eq(hx_sql_num(sql), 1, "the target's start follows");
    cr_assert_eq(report(job, wtok, "log", "source's last bytes\n"), 200, "late, but recent");
    cr_assert_eq(report(job, tok2, "state", "{\"state\":\"RUNNING\"}"), 200);
    cr_assert_str_eq(wt_job_state(job), "RUNNING");
    cr_assert_eq(report(job, tok2, "metrics", METRIC(4)), 200);
    /* long after the move the source has no claim left */
    snprintf(sql, sizeof(sql),
             "UPDATE actions SET finished_at = now() - interval '1 hour' WHERE id = %lld", mig);
    hx_sql_do(sql);
    cr_assert_eq(report(job, wtok, "metrics", METRIC(5)), 403);
    cr_assert_eq(report(job, wtok, "state", "{\"state\":\"FAILED\"}"), 403);
    cr_assert_str_eq(wt_job_state(job), "RUNNING");
    cr_assert_eq(job_count("job_metrics", job), 3);
    hx_finish();
}

Test(worker_api, remote_daemons_only_by_the_launching_worker_on_the_jobs_hosts)
{
    char tok2[128], path[96], body[128];
    long long a = make_node();
    make_other_node(tok2);
    long long job = hx_submit(hx.admin, "j", 1);
    launched_on(job, a, "RUNNING", 0);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/remote", job);
    snprintf(body, sizeof(body), "{\"node\":\"n1\",\"command\":\"orted\"}");
    hx_expect_problem(hx_json("POST", path, tok2, body), 403, NULL);
    hx_expect_problem(hx_json("POST", path, wtok,
                              "{\"node\":\"n2\",\"command\":\"rm -rf /\"}"),
                      403, NULL);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM actions WHERE kind = 'exec'"), 0);
    json_decref(hx_expect_json(hx_json("POST", path, wtok, body), 201));
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin,
                                       "{\"node\":\"n2\",\"command\":\"orted\"}"),
                               201));
    hx_finish();
}

/* A launch of job over nodes a and b (a done start on a, GPU 0 of each): returns the id of
 * the exec action that started its daemon on b. */
static long long launched_on_two(long long job, long long a, long long b)
{
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET state = 'STARTING' WHERE id = %lld; INSERT INTO actions (node_id,"
             " job_id, kind, state, spec) VALUES (%lld, %lld, 'start', 'done',"
             " jsonb_build_object('slots', jsonb_build_array(jsonb_build_object('node_id', %lld,"
             " 'gpu', 0), jsonb_build_object('node_id', %lld, 'gpu', 0))));"
             " INSERT INTO node_gpus (node_id, idx, model, memory_bytes) VALUES (%lld, 0, 'sim',"
             " 1), (%lld, 0, 'sim', 1) ON CONFLICT DO NOTHING; INSERT INTO allocations (job_id,"
             " node_id, gpu_idx) VALUES (%lld, %lld, 0), (%lld, %lld, 0) ON CONFLICT DO NOTHING",
             job, a, job, a, b, a, b, job, a, job, b);
    hx_sql_do(sql);
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind, state, spec) VALUES (%lld, %lld,"
             " 'exec', 'done', '{\"command\": \"orted\"}') RETURNING id",
             b, job);
    return (long long)hx_sql_num(sql);
}

/* b's word that the daemon of exec action x failed: the status of the state post. */
static long daemon_failed(long long job, const char *tok, long long x)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"state\":\"PENDING\",\"detail\":\"the MPI daemon exited with 127\","
             "\"exec_action\":%lld}",
             x);
    return report(job, tok, "state", body);
}

static long long count_of(const char *fmt, long long job)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, job);
    return (long long)hx_sql_num(sql);
}

/* A host whose daemon for the job's mpirun failed says so (the worker's exec ended with an
 * error): mpirun would wait for it for good, the job STARTING on its GPUs. The job goes back
 * to the queue from its checkpoint, its GPUs released; the third failure in a row fails it.
 * Refused: a daemon of an older launch, while an action is in flight, a node that is no host,
 * no exec action named. */
Test(worker_api, a_launch_that_failed_on_a_host_goes_back_to_the_queue_then_fails)
{
    char tok2[128], tok3[128];
    long long a = make_node(), b = make_other_node(tok2);
    hx_user("api-worker-3", "worker", tok3);
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/nodes", tok3,
                                       "{\"name\":\"n3\",\"cpus\":2,\"memory_bytes\":1,"
                                       "\"gpus\":[],\"simulated\":true}"),
                               201));
    long long job = hx_submit(hx.admin, "j", 2);
    long long old = launched_on_two(job, a, b);
    long long x = launched_on_two(job, a, b);
    hx_expect_problem(hx_json("POST", "/api/v1/jobs/1/state", tok2, "{\"state\":\"PENDING\"}"),
                      400, NULL);
    cr_assert_eq(daemon_failed(job, tok3, x), 403, "n3 is no host of the job");
    cr_assert_eq(daemon_failed(job, tok2, old), 409, "a daemon of an older launch");
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind) VALUES (%lld, %lld, 'suspend')", a,
             job);
    hx_sql_do(sql);
    cr_assert_eq(daemon_failed(job, tok2, x), 409, "an action in flight");
    hx_sql_do("UPDATE actions SET state = 'failed' WHERE kind = 'suspend'");
    /* the launch's daemon for a is not started yet (mpirun asks for both at once): no bar */
    snprintf(sql, sizeof(sql),
             "INSERT INTO actions (node_id, job_id, kind, spec) VALUES (%lld, %lld, 'exec',"
             " '{\"command\": \"orted\"}')",
             a, job);
    hx_sql_do(sql);
    long long gen = count_of("SELECT ckpt_gen FROM jobs WHERE id = %lld", job);
    cr_assert_eq(daemon_failed(job, tok2, x), 200);
    cr_assert_str_eq(wt_job_state(job), "PENDING");
    cr_assert_eq(job_count("allocations", job), 0, "its GPUs were released");
    cr_assert_eq(count_of("SELECT ckpt_gen FROM jobs WHERE id = %lld", job), gen + 1,
                 "a new checkpoint generation: no copy left behind writes where it restarts");
    cr_assert_eq(count_of("SELECT count(*) FROM job_events WHERE job_id = %lld AND event ="
                          " 'requeue' AND detail LIKE 'launch failed: the MPI daemon exited"
                          " with 127 (reported by api-worker-2)%%'",
                          job),
                 1, "one event says why and who");
    cr_assert_eq(daemon_failed(job, tok2, x), 403, "again: the requeue ended b's claim");
    cr_assert_eq(daemon_failed(job, hx.admin, x), 200, "an admin's, on a PENDING job: no change");
    cr_assert_eq(count_of("SELECT count(*) FROM job_events WHERE job_id = %lld", job), 2);
    usleep(10000);
    cr_assert_eq(daemon_failed(job, tok2, launched_on_two(job, a, b)), 200);
    cr_assert_str_eq(wt_job_state(job), "PENDING", "the second failure in a row");
    usleep(10000);
    cr_assert_eq(daemon_failed(job, tok2, launched_on_two(job, a, b)), 200);
    cr_assert_str_eq(wt_job_state(job), "FAILED", "the third");
    cr_assert_eq(count_of("SELECT count(*) FROM job_events WHERE job_id = %lld AND to_state ="
                          " 'FAILED' AND detail LIKE 'launch failed 3 times in a row, the last:%%'",
                          job),
                 1);
    cr_assert_eq(job_count("allocations", job), 0);
    cr_assert_eq(daemon_failed(job, hx.admin, x), 409, "it has ended");
    hx_finish();
}
