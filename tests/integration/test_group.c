/* Group commit of concurrent single submissions (server/api/submit_group.h) through the real
 * server: each request gets its own job and its own answer when several are stored in one
 * statement (stored, refused for its size, made before under its Idempotency-Key, or a 409),
 * a job whose insert fails fails only its own request, and queued submissions are answered
 * when the server stops meanwhile. To make a group for certain, the test holds a lock on
 * job_events: the first submission's statement waits on it (PostgreSQL runs one statement of
 * submissions at a time), the next ones queue behind it, the first of them go into a second
 * statement waiting in the leader's pipeline, and when the lock goes they are stored as one
 * group or a few. The scheduler is paused meanwhile. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(group, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

/* One submission made from its own thread. */
struct sub {
    char body[256];
    char key[64]; /* "" without an Idempotency-Key */
    pthread_t tid;
    long status;
    long long id;
    char name[64]; /* the name the answer gives */
    char detail[512];
};

static void *submit(void *arg)
{
    struct sub *s = arg;
    char header[96];
    snprintf(header, sizeof(header), "Idempotency-Key: %s", s->key);
    struct hx_resp *r = hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", s->body,
                                strlen(s->body), s->key[0] ? header : NULL);
    s->status = r->status;
    s->id = r->json ? json_integer_value(json_object_get(r->json, "id")) : -1;
    const char *name = r->json ? json_string_value(json_object_get(r->json, "name")) : NULL;
    const char *detail = r->json ? json_string_value(json_object_get(r->json, "detail")) : NULL;
    snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
    snprintf(s->detail, sizeof(s->detail), "%s", detail ? detail : "");
    hx_free(r);
    return NULL;
}

static void set_body(struct sub *s, const char *name, int gpus, const char *key)
{
    snprintf(s->body, sizeof(s->body), "{\"name\":\"%s\",\"command\":[\"true\"],\"gpus\":%d}", name,
             gpus);
    snprintf(s->key, sizeof(s->key), "%s", key ? key : "");
}

/* n submissions of one GPU named prefix-0, prefix-1, ..., without a key. */
static void set_bodies(struct sub *s, int n, const char *prefix)
{
    memset(s, 0, sizeof(*s) * (size_t)n);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        set_body(&s[i], name, 1, NULL);
    }
}

/* A connection of the test's own that holds job_events against inserts until released. */
static PGconn *hold_events(void)
{
    PGconn *c = PQconnectdb(hx.conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, "BEGIN; LOCK TABLE job_events IN SHARE MODE");
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return c;
}

/* Ends the transaction of the test's connection c (sql: COMMIT or ROLLBACK), and closes it. */
static void end_hold(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
}

static void release_events(PGconn *c)
{
    end_hold(c, "COMMIT");
}

/* The submissions' statements waiting on job_events in this test's database (the tests run
 * in parallel on one cluster, and pg_locks shows every database's locks: their tables' oids
 * are alike). */
#define SUBMISSION_WAITS                                                                           \
    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT"           \
    " l.granted AND l.relation = 'job_events'::regclass AND a.datname = current_database()"        \
    " AND a.query LIKE 'WITH cl AS%'"

/* Waits (bounded) until a submission's statement waits for the test's lock (waits: the
 * count of such statements). */
static void await_submission_waiting(const char *waits)
{
    double end = hx_now() + 20;
    while (hx_sql_num(waits) < 1 && hx_now() < end)
        usleep(20000);
    cr_assert_geq(hx_sql_num(waits), 1, "a submission waits on the test's lock");
}

/* Whether the server's log holds text. */
static int log_has(const char *text)
{
    char path[320], line[1024];
    snprintf(path, sizeof(path), "%s/server.log", hx.dir);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return found;
}

/* Sends subs[0] and waits until its statement waits on a lock the test holds, then the
 * others, which queue behind it; gives them time to reach the queue (each checks its token
 * first) and checks that they did not start statements of their own. Returns the test's
 * connection that holds the lock (release_events() lets them go). The others are sent 150 ms
 * apart, each to an HTTP thread free. */
static PGconn *queue_behind_lock(struct sub *subs, int n)
{
    PGconn *hold = hold_events();
    /* a round that starts a job writes its event: it would wait on the lock too, and the
     * requests behind it with it */
    hx_sql_do("UPDATE scheduler_config SET paused = true");
    pthread_create(&subs[0].tid, NULL, submit, &subs[0]);
    await_submission_waiting(SUBMISSION_WAITS);
    for (int i = 1; i < n; i++) {
        usleep(150000);
        pthread_create(&subs[i].tid, NULL, submit, &subs[i]);
    }
    usleep(1000000);
    /* one statement in flight: the others queued instead of starting theirs */
    double waiting = hx_sql_num(SUBMISSION_WAITS);
    cr_assert_eq(waiting, 1, "one submission's statement in flight, not %.0f", waiting);
    return hold;
}

/* queue_behind_lock(), then releases the lock and waits for every answer. */
static void submit_as_group(struct sub *subs, int n)
{
    release_events(queue_behind_lock(subs, n));
    for (int i = 0; i < n; i++)
        pthread_join(subs[i].tid, NULL);
}

Test(group, each_job_of_a_group_gets_its_own_answer)
{
    /* a node of 4 GPUs up, so that a job of 8 can never fit */
    hx_sql_do("WITH n AS (INSERT INTO nodes (name, cpus, memory_bytes) VALUES ('n1', 8, 1)"
              " RETURNING id) INSERT INTO node_gpus (node_id, idx, model, memory_bytes)"
              " SELECT id, g, 'sim', 1 FROM n, generate_series(0, 3) g");
    const char *before = "{\"name\":\"before\",\"command\":[\"true\"],\"gpus\":1}";
    json_t *made = hx_expect_json(hx_call("POST", "/api/v1/jobs", hx.admin, "application/json",
                                          before, strlen(before), "Idempotency-Key: before"),
                                  201);
    enum { N = 8 }; /* the server's 8 HTTP threads: each request has one */
    struct sub s[N];
    memset(s, 0, sizeof(s));
    set_body(&s[0], "first", 1, NULL); /* alone: its statement waits on the lock */
    set_body(&s[1], "good-1", 1, NULL);
    set_body(&s[2], "too-big", 8, NULL);                     /* 422 */
    set_body(&s[3], "good-2-\xc3\xa9\xe2\x98\x83", 2, NULL); /* UTF-8 */
    set_body(&s[4], "twin", 1, "twin");                      /* one of the two makes it: 201 ... */
    set_body(&s[5], "twin", 1, "twin");         /* ... the other finds it: 200, same job */
    set_body(&s[6], "before", 1, "before");     /* made before the group: 200 */
    set_body(&s[7], "other-body", 1, "before"); /* the key came with another body: 409 */
    submit_as_group(s, N);
    for (int i = 0; i < N; i++)
        cr_log_info("%s: %ld %s", s[i].body, s[i].status, s[i].detail);
    const int good[] = {0, 1, 3};
    for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
        struct sub *g = &s[good[k]];
        cr_assert_eq(g->status, 201, "%s: %ld", g->body, g->status);
        cr_assert(strstr(g->body, g->name) && g->name[0], "its own job: %s", g->name);
        char sql[160];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM jobs WHERE id = %lld AND name = '%s'",
                 g->id, g->name);
        cr_assert_eq(hx_sql_num(sql), 1, "job %lld is %s", g->id, g->name);
    }
    cr_assert_eq(s[2].status, 422, "too-big: %ld", s[2].status);
    cr_assert(strstr(s[2].detail, "the cluster has 4 on 1 node up"), "%s", s[2].detail);
    cr_assert((s[4].status == 201 && s[5].status == 200) ||
                  (s[4].status == 200 && s[5].status == 201),
              "twins: %ld, %ld", s[4].status, s[5].status);
    cr_assert_eq(s[4].id, s[5].id, "the twins see one job");
    cr_assert_eq(s[6].status, 200);
    cr_assert_eq(s[6].id, json_integer_value(json_object_get(made, "id")));
    cr_assert_eq(s[7].status, 409);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < i; k++)
            cr_assert(s[i].status != 201 || s[k].status != 201 || s[i].id != s[k].id,
                      "new jobs %d and %d: one id %lld", k, i, s[i].id);
    /* before, first, good-1, good-2, twin: each once, with its one submit event */
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 5);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event = 'submit'"), 5);
    cr_assert_eq(hx_sql_num("SELECT count(DISTINCT job_id) FROM job_events"), 5);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE name IN ('too-big', 'other-body')"),
                 0);
    /* the jobs queued behind the first are stored as one group, or a few when two
     * connections shared an HTTP thread */
    double groups = hx_metric("ringmaster_submission_groups_total");
    double grouped = hx_metric("ringmaster_submissions_grouped_total");
    cr_log_info("%.0f jobs in %.0f groups", grouped, groups);
    cr_assert_geq(groups, 1, "a group was stored");
    cr_assert_geq(grouped, 2 * groups);
    json_decref(made);
    hx_finish();
}

Test(group, a_failing_job_fails_only_its_own_request)
{
    /* an insert that fails for one job only: the whole group's statement fails with it */
    hx_sql_do("ALTER TABLE jobs ADD CONSTRAINT test_no_poison CHECK (name <> 'poison')");
    enum { N = 6 };
    struct sub s[N];
    memset(s, 0, sizeof(s));
    set_body(&s[0], "first", 1, NULL);
    set_body(&s[1], "good-1", 1, NULL);
    set_body(&s[2], "poison", 1, NULL);
    set_body(&s[3], "good-2", 1, "k2");
    set_body(&s[4], "good-3", 1, NULL);
    set_body(&s[5], "good-4", 1, NULL);
    submit_as_group(s, N);
    for (int i = 0; i < N; i++) {
        long want = i == 2 ? 500 : 201;
        cr_assert_eq(s[i].status, want, "%s: %ld %s", s[i].body, s[i].status, s[i].detail);
        cr_assert(i == 2 || strstr(s[i].body, s[i].name), "its own job: %s", s[i].name);
    }
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), N - 1, "each good job once");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event = 'submit'"), N - 1);
    cr_log_info("%.0f jobs in %.0f groups", hx_metric("ringmaster_submissions_grouped_total"),
                hx_metric("ringmaster_submission_groups_total"));
    cr_assert(log_has("each is stored alone"), "a group was tried and failed");
    hx_finish();
}

/* The submissions' statements waiting for another transaction in this test's database. */
#define SUBMISSION_XACT_WAITS                                                                      \
    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT"           \
    " l.granted AND l.locktype = 'transactionid' AND a.datname = current_database()"             \
    " AND a.query LIKE 'WITH cl AS%'"

/* Sends subs[0] (its Idempotency-Key key) while a transaction of the test's holds that key
 * (inserted, not yet committed), waits until its statement waits on it, then sends the others
 * 150 ms apart and gives them time to queue: the first two go into a second statement in
 * the leader's pipeline, the others wait in the queue. (A lock on a table would hold up the
 * statements' PREPARE, before the pipeline.) Returns the test's connection: release_key()
 * rolls its transaction back, and the first job is stored. */
static PGconn *pipeline_behind_key(struct sub *subs, int n, const char *key)
{
    hx_sql_do("UPDATE scheduler_config SET paused = true");
    PGconn *hold = PQconnectdb(hx.conninfo);
    cr_assert_eq(PQstatus(hold), CONNECTION_OK, "%s", PQerrorMessage(hold));
    PGresult *r = PQexec(hold, "BEGIN");
    PQclear(r);
    const char *params[] = {key};
    r = PQexecParams(hold,
                     "INSERT INTO jobs (user_id, name, command, gpus, min_gpus, max_gpus,"
                     " idempotency_key, request_hash) SELECT id, 'blocker', '[\"true\"]', 1, 1,"
                     " 1, $1, sha256('x') FROM users WHERE name = 'admin'",
                     1, NULL, params, NULL, NULL, 0);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQresultErrorMessage(r));
    PQclear(r);
    snprintf(subs[0].key, sizeof(subs[0].key), "%s", key);
    pthread_create(&subs[0].tid, NULL, submit, &subs[0]);
    await_submission_waiting(SUBMISSION_XACT_WAITS);
    for (int i = 1; i < n; i++) {
        usleep(150000);
        pthread_create(&subs[i].tid, NULL, submit, &subs[i]);
    }
    usleep(1000000);
    cr_assert_eq(hx_sql_num(SUBMISSION_XACT_WAITS), 1, "one statement runs");
    return hold;
}

static void release_key(PGconn *hold)
{
    end_hold(hold, "ROLLBACK");
}

#define PIPELINED "ringmaster_submission_statements_pipelined_total"

/* While the first statement waits, the jobs queued behind it go into a second statement sent
 * behind it on the same connection (once two wait), the later ones wait in the queue for a
 * statement to end; none is answered before its statement committed, and each is stored
 * once, with its own answer. */
Test(group, the_next_group_waits_in_the_pipeline_behind_the_statement_running)
{
    enum { N = 5 };
    struct sub s[N];
    set_bodies(s, N, "piped");
    PGconn *hold = pipeline_behind_key(s, N, "piped");
    cr_assert_eq(hx_metric(PIPELINED), 1, "the first two queued went into the pipeline, not %.0f",
                 hx_metric(PIPELINED));
    for (int i = 0; i < N; i++)
        cr_assert_eq(s[i].status, 0, "%s answered before its statement ran", s[i].body);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), 0, "nothing stored yet");
    /* while a leader stores, a submission is handled on libmicrohttpd's thread (its token
     * known): a broken one is answered at once, as on a handler's thread */
    const char *broken = "{\"name\":\"no-command\",\"gpus\":1}";
    struct hx_resp *r = hx_call("POST", "/api/v1/jobs", hx.admin, "application/json", broken,
                                strlen(broken), NULL);
    cr_assert_eq(r->status, 400, "%s", r->body);
    cr_assert(strstr(r->content_type, "application/problem+json"), "%s", r->content_type);
    cr_assert(strstr(r->body, "command"), "names the field: %s", r->body);
    hx_free(r);
    r = hx_call("POST", "/api/v1/jobs", hx.admin, "text/plain", broken, strlen(broken), NULL);
    cr_assert_eq(r->status, 415, "%s", r->body);
    hx_free(r);
    r = hx_call("POST", "/api/v1/jobs", "rm_not-a-token", "application/json", broken,
                strlen(broken), NULL);
    cr_assert_eq(r->status, 401, "%s", r->body);
    hx_free(r);
    release_key(hold);
    for (int i = 0; i < N; i++) {
        pthread_join(s[i].tid, NULL);
        cr_assert_eq(s[i].status, 201, "%s: %ld %s", s[i].body, s[i].status, s[i].detail);
        cr_assert(strstr(s[i].body, s[i].name) && s[i].name[0], "its own job: %s", s[i].name);
    }
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), N);
    cr_assert_eq(hx_sql_num("SELECT count(DISTINCT name) FROM jobs"), N);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event = 'submit'"), N);
    /* the last two went in behind the second once the first ended */
    cr_assert_eq(hx_metric(PIPELINED), 2);
    cr_assert_eq(hx_metric("ringmaster_submission_groups_total"), 2);
    cr_assert_eq(hx_metric("ringmaster_submissions_grouped_total"), 4);
    hx_finish();
}

/* A pipelined group whose rows came back but whose commit failed (a deferred check refuses
 * one job at commit) was not stored: its jobs are stored again one by one, the refused one
 * fails alone, and the group behind it in the pipeline is answered from its own results:
 * each good job once, none answered for a row that was never committed. */
Test(group, a_group_whose_commit_fails_is_stored_again_job_by_job)
{
    hx_sql_do("CREATE FUNCTION test_refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS"
              " $$BEGIN IF NEW.name = 'refused-at-commit' THEN RAISE EXCEPTION 'refused at"
              " commit'; END IF; RETURN NULL; END$$");
    hx_sql_do("CREATE CONSTRAINT TRIGGER test_refuse_at_commit AFTER INSERT ON jobs DEFERRABLE"
              " INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_refuse_at_commit()");
    enum { N = 5 };
    struct sub s[N];
    memset(s, 0, sizeof(s));
    set_body(&s[0], "first", 1, NULL);
    set_body(&s[1], "good-1", 1, NULL);
    set_body(&s[2], "refused-at-commit", 1, NULL); /* with good-1, in the pipeline */
    set_body(&s[3], "good-2", 1, NULL);            /* queued, then behind them */
    set_body(&s[4], "good-3", 1, NULL);
    release_key(pipeline_behind_key(s, N, "first"));
    for (int i = 0; i < N; i++) {
        pthread_join(s[i].tid, NULL);
        long want = i == 2 ? 500 : 201;
        cr_assert_eq(s[i].status, want, "%s: %ld %s", s[i].body, s[i].status, s[i].detail);
        cr_assert(i == 2 || strstr(s[i].body, s[i].name), "its own job: %s", s[i].name);
    }
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), N - 1, "each good job once");
    cr_assert_eq(hx_sql_num("SELECT count(DISTINCT name) FROM jobs"), N - 1);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE name = 'refused-at-commit'"), 0);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_events WHERE event = 'submit'"), N - 1);
    cr_assert_geq(hx_metric(PIPELINED), 2, "the groups went through the pipeline");
    cr_assert(log_has("each is stored alone"), "the group was stored again alone");
    hx_finish();
}

static void *submit_many(void *arg)
{
    struct sub *s = arg; /* 10 submissions in a row, each checked as it comes */
    char name[64];
    snprintf(name, sizeof(name), "%s", s->name);
    for (int i = 0; i < 10 && s->status != -1; i++) {
        char mine[80];
        snprintf(mine, sizeof(mine), "%s-%d", name, i);
        set_body(s, mine, 1 + i % 3, NULL);
        submit(s);
        if (s->status != 201 || strcmp(s->name, mine) != 0)
            s->status = -1;
    }
    return NULL;
}

Test(group, concurrent_submissions_each_get_their_own_job)
{
    enum { T = 16 };
    struct sub s[T];
    memset(s, 0, sizeof(s));
    for (int i = 0; i < T; i++) {
        snprintf(s[i].name, sizeof(s[i].name), "c%d", i);
        pthread_create(&s[i].tid, NULL, submit_many, &s[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(s[i].tid, NULL);
        cr_assert_eq(s[i].status, 201, "client %d: a wrong answer (%s)", i, s[i].name);
    }
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs"), T * 10);
    cr_assert_eq(hx_sql_num("SELECT count(DISTINCT name) FROM jobs"), T * 10);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs j JOIN job_events e ON e.job_id = j.id"
                            " AND e.event = 'submit'"),
                 T * 10, "one submit event each");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE gpus <> 1 + (split_part(name, '-',"
                            " 2)::int % 3)"),
                 0, "each stored as its request asked");
    cr_log_info("%.0f of %d submissions stored in %.0f groups",
                hx_metric("ringmaster_submissions_grouped_total"), T * 10,
                hx_metric("ringmaster_submission_groups_total"));
    hx_finish();
}

static void *stop_server(void *arg)
{
    *(int *)arg = hx_stop_server(SIGTERM, 60);
    return NULL;
}

/* Queued submissions hold no thread: the server is told to stop while they wait behind the
 * first one's statement, and still answers each (the leader stores the queue before its
 * handler returns), then exits cleanly (no connection left suspended). */
Test(group, queued_submissions_are_answered_when_the_server_stops)
{
    enum { N = 4 };
    struct sub s[N];
    set_bodies(s, N, "stopping");
    PGconn *hold = queue_behind_lock(s, N);
    int rc = -2;
    pthread_t stopper;
    pthread_create(&stopper, NULL, stop_server, &rc);
    usleep(300000); /* the server is stopping, its first statement still waits on the lock */
    release_events(hold);
    for (int i = 0; i < N; i++) {
        pthread_join(s[i].tid, NULL);
        cr_expect_eq(s[i].status, 201, "%s: %ld %s", s[i].body, s[i].status, s[i].detail);
    }
    pthread_join(stopper, NULL);
    cr_assert_eq(rc, 0, "ringmasterd exited with %d on SIGTERM", rc);
}
