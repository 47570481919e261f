/* The ledger of GPU time (issue 33 item 5): the database's triggers book each job's spans as
 * its allocations and states change (sql/039_usage_ledger.sql), and GET
 * /api/v1/reports/usage sums them by user, array and day. The job's life is written here as
 * the scheduler and its workers write it, statement for statement, with the server stopped
 * so that no round moves the job meanwhile; the report is then read from the server. What
 * the ledger books is checked against the job's own events (its allocated time) and what
 * its parts add up to. The live path (real workers, a migration and a GPU fault) is checked
 * in drain_live. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

TestSuite(usage, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

/* A state move as live_move_job() writes it, then (when not NULL) more statements in the same
 * transaction, as a round or a worker's report writes them (each hx_sql_do is a connection of
 * its own: one text, one transaction). */
static void move_and(long long job, const char *from, const char *to, const char *ev,
                     const char *detail, const char *then)
{
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "BEGIN; WITH up AS (UPDATE jobs SET state = '%s' WHERE id = %lld AND state = '%s'"
             " RETURNING id) INSERT INTO job_events (job_id, from_state, to_state, event, actor,"
             " detail) SELECT id, '%s', '%s', '%s', 'scheduler', '%s' FROM up; %s; COMMIT",
             to, job, from, from, to, ev, detail, then ? then : "SELECT 1");
    hx_sql_do(sql);
}

static void move(long long job, const char *from, const char *to, const char *ev,
                 const char *detail)
{
    move_and(job, from, to, ev, detail, NULL);
}

/* A minibatch report of the job's launch at world size w. */
static void report(long long job, int step, int w)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_metrics (job_id, step, world_size, seconds) VALUES (%lld, %d, %d,"
             " 0.01)",
             job, step, w);
    hx_sql_do(sql);
}

/* The job's GPUs dropped, as live_release_job() does. */
static void release(long long job, const char *from, const char *to, const char *ev,
                    const char *detail)
{
    char del[128];
    snprintf(del, sizeof(del), "DELETE FROM allocations WHERE job_id = %lld", job);
    move_and(job, from, to, ev, detail, del);
}

/* A PENDING job of 2 GPUs of user alice (token into tok), with the server then stopped. */
static long long alice_job(char *tok)
{
    hx_user("alice", "user", tok);
    long long job = hx_submit(tok, "ledgered", 2);
    cr_assert_eq(hx_stop_server(SIGTERM, 10), 0, "the server stopped");
    hx_sql_do("INSERT INTO nodes (name, cpus, memory_bytes) VALUES ('n1', 8, 0)");
    return job;
}

/* A start as a round writes it: the move, then the GPUs. */
static void start(long long job)
{
    char ins[256];
    snprintf(ins, sizeof(ins),
             "INSERT INTO allocations (job_id, node_id, gpu_idx) SELECT %lld, id, g FROM nodes,"
             " generate_series(0, 1) g WHERE name = 'n1'",
             job);
    move_and(job, "PENDING", "STARTING", "start", "started", ins);
}

static double cell(const json_t *row, const char *a, const char *b)
{
    const json_t *v = json_object_get(row, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

/* The parts of a report's row add up to its allocated time (to its rounding). */
static void parts_add_up(const json_t *row)
{
    double parts = cell(row, "useful", NULL) + cell(row, "idle", NULL) + cell(row, "lost", "total"),
           alloc = cell(row, "allocated", NULL);
    cr_assert(alloc > 0, "GPU time allocated");
    cr_assert(fabs(parts - alloc) <= 0.01 * alloc, "parts %.6f of allocated %.6f GPU-h", parts,
              alloc);
}

static json_t *usage_as(const char *tok, const char *query)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/reports/usage%s", query);
    return hx_expect_json(hx_json("GET", path, tok, NULL), 200);
}

Test(usage, each_span_is_booked_by_state_and_cause_and_adds_up_to_the_allocation)
{
    char tok[128];
    long long job = alice_job(tok);
    start(job);
    usleep(300000);
    move(job, "STARTING", "RUNNING", "running", "");
    for (int s = 1; s <= 10; s++) {
        report(job, s * 10, 2);
        usleep(50000);
    }
    hx_sql_do("SELECT ledger_close_all()");
    /* its GPU fails (as POST /nodes/{id}/health records it), and it is moved off */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO gpu_faults (node_id, gpu_idx, reason, jobs) SELECT id, 0, 'xid 79',"
             " ARRAY[%lld::bigint] FROM nodes WHERE name = 'n1'",
             job);
    hx_sql_do(sql);
    move(job, "RUNNING", "MIGRATING", "migrate", "migrated: off a failed GPU");
    usleep(200000);
    move(job, "MIGRATING", "RUNNING", "running", "");
    report(job, 110, 2);
    usleep(100000);
    release(job, "RUNNING", "COMPLETED", "complete", "");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_ledger_open"), 0, "no span left open");
    /* what it lost to the fault is recorded against the fault too (sql/048) */
    snprintf(sql, sizeof(sql),
             "SELECT (SELECT lost_gpu_s FROM gpu_faults) - sum(lost_fault_s) FROM usage_ledger"
             " WHERE job_id = %lld",
             job);
    cr_assert(fabs(hx_sql_num(sql)) < 1e-6, "the fault charged %.6f s off its job's loss",
              hx_sql_num(sql));
    cr_assert(hx_sql_num("SELECT lost_gpu_s FROM gpu_faults") >= 2 * 0.15, "its move");

    /* what the job's events say it held: 2 GPUs from its start to its end */
    snprintf(sql, sizeof(sql),
             "SELECT 2 * extract(epoch FROM max(at) - min(at)) / 3600 FROM job_events"
             " WHERE job_id = %lld AND from_state IS NOT NULL",
             job);
    double held_h = hx_sql_num(sql);

    hx_start_server();
    json_t *r = usage_as(tok, "");
    const json_t *items = json_object_get(r, "items");
    cr_assert_eq(json_array_size(items), 1, "one user: alice");
    const json_t *row = json_array_get(items, 0);
    cr_assert_str_eq(json_string_value(json_object_get(row, "user")), "alice");
    double alloc = cell(row, "allocated", NULL);
    cr_assert(fabs(alloc - held_h) <= 0.01 * held_h, "allocated %.6f h against %.6f held", alloc,
              held_h);
    parts_add_up(row);
    cr_assert(cell(row, "lost", "restart") * 3600 >= 2 * 0.25, "its launch: 2 GPUs >= 0.25 s");
    cr_assert(cell(row, "lost", "fault") * 3600 >= 2 * 0.15, "its move off the failed GPU");
    cr_assert(cell(row, "useful", NULL) * 3600 >= 2 * 0.5, "its minibatches");
    cr_assert_eq(cell(row, "lost", "migration"), 0);
    cr_assert_eq(json_integer_value(json_object_get(row, "steps")), 110, "every step");
    cr_assert_eq(json_integer_value(json_object_get(row, "jobs")), 1);
    parts_add_up(json_object_get(r, "total"));
    json_decref(r);

    /* ringctl nodes NODE lists the fault with the GPU time it cost */
    char node[24];
    snprintf(node, sizeof(node), "%lld", (long long)hx_sql_num("SELECT id FROM nodes"));
    struct ctl_run *c = ctl("nodes", node);
    cr_assert_eq(c->code, 0, "%s", c->err);
    cr_assert(strstr(c->out, "GPU_TIME_LOST") && strstr(c->out, "xid 79") && strstr(c->out, " s"),
              "%s", c->out);

    /* by day and array: today's row, outside any array */
    r = usage_as(hx.admin, "?by=array,day");
    row = json_array_get(json_object_get(r, "items"), 0);
    cr_assert(json_is_null(json_object_get(row, "array")), "not in an array");
    cr_assert(json_is_string(json_object_get(row, "day")), "a day");
    cr_assert(fabs(cell(row, "allocated", NULL) - alloc) < 1e-5, "the same time");
    json_decref(r);
    hx_finish();
}

Test(usage, steps_redone_after_a_preemption_are_lost_to_it)
{
    char tok[128];
    long long job = alice_job(tok);
    start(job);
    move(job, "STARTING", "RUNNING", "running", "");
    for (int s = 1; s <= 10; s++) {
        report(job, s * 10, 2);
        usleep(50000);
    }
    release(job, "RUNNING", "PENDING", "requeue",
            "preempted: the policy gave its GPUs to other jobs");
    usleep(300000); /* waiting, without GPUs */
    start(job);
    usleep(300000); /* its restart after the preemption: lost to it (sql/045), not a launch */
    move(job, "STARTING", "RUNNING", "running", "");
    /* back to its checkpoint at step 40: steps 41..100 are done again */
    for (int s = 5; s <= 12; s++) {
        report(job, s * 10, 1);
        usleep(50000);
    }
    hx_sql_do("SELECT ledger_close_all()");

    /* the time it held GPUs in all (sql/048, the snapshot's run_time): both runs, not the
     * wait between them, not only the current allocation's age */
    char sql[768];
    snprintf(sql, sizeof(sql),
             "SELECT o.held_s - (extract(epoch FROM q.at - s1.at) + extract(epoch FROM o.since -"
             " s2.at)) FROM job_ledger_open o,"
             " (SELECT min(at) AS at FROM job_events WHERE job_id = %lld AND event = 'start') s1,"
             " (SELECT max(at) AS at FROM job_events WHERE job_id = %lld AND event = 'start') s2,"
             " (SELECT at FROM job_events WHERE job_id = %lld AND event = 'requeue') q"
             " WHERE o.job_id = %lld",
             job, job, job, job);
    double off = hx_sql_num(sql);
    cr_assert(fabs(off) < 0.005, "held time off by %.4f s from its runs", off);
    snprintf(sql, sizeof(sql), "SELECT held_s FROM job_ledger_open WHERE job_id = %lld", job);
    cr_assert(hx_sql_num(sql) > 0.5, "both runs counted");

    hx_start_server();
    json_t *r = usage_as(hx.admin, "?by=user");
    const json_t *row = json_array_get(json_object_get(r, "items"), 0);
    parts_add_up(row);
    double lost = cell(row, "lost", "preemption"), useful = cell(row, "useful", NULL);
    cr_assert(lost > 0, "the redone steps are lost to the preemption");
    cr_assert(lost * 3600 >= 2 * 0.25, "and its restart: 2 GPUs >= 0.25 s");
    cr_assert(cell(row, "lost", "restart") * 3600 < 2 * 0.25,
              "its restart is not booked as a launch: %.3f GPU-s",
              cell(row, "lost", "restart") * 3600);
    /* 60 of the 160 steps it ran were done twice */
    double share = lost / (lost + useful);
    cr_assert(share > 0.2 && share < 0.55, "lost share %.2f of the run's minibatch time", share);
    cr_assert_eq(json_integer_value(json_object_get(row, "steps")), 120, "net progress");
    json_decref(r);
    hx_finish();
}

/* A running job a round stops in place (a guarantee's yield, or time-slicing: the round's
 * "suspend" event, its GPUs dropped; the worker's SUSPENDED) and later resumes (the round's
 * "resume" event, its GPUs back while it is still SUSPENDED; the worker's RUNNING): the GPUs it
 * holds while it comes back are lost to preemption, not idle (sql/045). */
Test(usage, a_job_a_round_suspends_loses_its_resume_to_preemption)
{
    char tok[128], ins[256], del[128];
    long long job = alice_job(tok);
    start(job);
    move(job, "STARTING", "RUNNING", "running", "");
    for (int s = 1; s <= 5; s++) {
        report(job, s * 10, 2);
        usleep(50000);
    }
    snprintf(del, sizeof(del), "DELETE FROM allocations WHERE job_id = %lld", job);
    move_and(job, "RUNNING", "RUNNING", "suspend",
             "round 7: time-sliced out of GPUs {0,1} on node 1 (preempted: the policy gave its"
             " GPUs to other jobs)",
             del);
    move(job, "RUNNING", "SUSPENDED", "suspend", "suspended in place at step 50");
    usleep(200000);
    snprintf(ins, sizeof(ins),
             "INSERT INTO allocations (job_id, node_id, gpu_idx) SELECT %lld, id, g FROM nodes,"
             " generate_series(0, 1) g WHERE name = 'n1'",
             job);
    move_and(job, "SUSPENDED", "SUSPENDED", "resume", "round 9: back on 2 GPU(s) (resumed)", ins);
    usleep(400000);
    move(job, "SUSPENDED", "RUNNING", "resume", "resumed at step 50");
    report(job, 60, 2);
    hx_sql_do("SELECT ledger_close_all()");

    hx_start_server();
    json_t *r = usage_as(hx.admin, "?by=user");
    const json_t *row = json_array_get(json_object_get(r, "items"), 0);
    parts_add_up(row);
    double lost = cell(row, "lost", "preemption") * 3600;
    cr_assert(lost >= 2 * 0.35, "its resume, 2 GPUs >= 0.35 s, lost to the preemption: %.3f",
              lost);
    cr_assert(cell(row, "idle", NULL) * 3600 < 2 * 0.35, "not idle");
    cr_assert_eq(json_integer_value(json_object_get(row, "steps")), 60, "nothing redone");
    json_decref(r);
    hx_finish();
}

Test(usage, bad_parameters_are_refused_and_users_see_their_own)
{
    char alice[128], bob[128];
    hx_user("alice", "user", alice);
    hx_user("bob", "user", bob);
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?by=team", alice, NULL), 400, "by");
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?by=user,user", alice, NULL), 400, "by");
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?since=yesterday", alice, NULL), 400,
                      "since");
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?since=2026-02-30", alice, NULL), 400,
                      "since");
    hx_expect_problem(
        hx_json("GET", "/api/v1/reports/usage?since=2026-12-02&until=2026-11-01", alice, NULL), 400,
        "until");
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?since=1990-01-01", alice, NULL), 400,
                      "since");
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?user=bob", alice, NULL), 403, "user");
    hx_expect_problem(hx_json("GET", "/api/v1/reports/usage?user=carol", hx.admin, NULL), 404,
                      "user");

    /* bob's day, written as the ledger would have it: alice does not see it, the admin does */
    hx_sql_do("INSERT INTO usage_ledger (day, job_id, user_id, allocated_s, useful_s)"
              " SELECT (now() AT TIME ZONE 'UTC')::date, 99, id, 7200, 7200 FROM users"
              " WHERE name = 'bob'");
    json_t *r = usage_as(alice, "?since=2026-01-01T00:00:00Z");
    cr_assert_eq(json_array_size(json_object_get(r, "items")), 0, "alice sees none of bob's");
    json_decref(r);
    r = usage_as(hx.admin, "?user=bob&by=day");
    const json_t *row = json_array_get(json_object_get(r, "items"), 0);
    cr_assert_eq(cell(row, "allocated", NULL), 2.0, "2 GPU-hours");
    cr_assert_eq(cell(row, "useful", NULL), 2.0);
    json_decref(r);

    /* ringctl report: the table with its total, the CSV, and its refusals */
    struct ctl_run *c = ctl("report", "--by", "user,day");
    cr_assert_eq(c->code, 0, "%s", c->err);
    cr_assert(strstr(c->out, "USER") && strstr(c->out, "DAY") && strstr(c->out, "ALLOCATED"),
              "%s", c->out);
    cr_assert(strstr(c->out, "bob") && strstr(c->out, "2.00") && strstr(c->out, "TOTAL"), "%s",
              c->out);
    c = ctl("report", "--since", "7d", "--csv");
    cr_assert_eq(c->code, 0, "%s", c->err);
    cr_assert(strncmp(c->out, "user,allocated_gpu_hours,useful_gpu_hours,", 42) == 0, "%s",
              c->out);
    cr_assert(strstr(c->out, "\nbob,2.000000,2.000000,0.000000,"), "%s", c->out);
    c = ctl_as(alice, "report", "--user", "bob", NULL);
    cr_assert_eq(c->code, 1, "refused: %s", c->err);
    c = ctl("report", "--since", "soon");
    cr_assert_eq(c->code, 2, "a usage error: %s", c->err);
    hx_finish();
}
