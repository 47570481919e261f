/* Nothing acknowledged is lost: kill -9 of ringmasterd and a restart, with an outside
 * database and with the embedded one; a clean SIGTERM stops the embedded cluster. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pgcluster.h"

TestSuite(persistence, .timeout = 180);

static void submit_many(int n, long long *ids)
{
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "durable-%d", i);
        ids[i] = hx_submit(hx.admin, name, 1 + i % 4);
    }
}

static void expect_all_there(int n, const long long *ids)
{
    char *all = hx_all_jobs(hx.admin);
    json_t *list = json_loads(all, 0, NULL);
    cr_assert_eq(json_array_size(list), (size_t)n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(list, i), "id")), ids[i]);
    json_decref(list);
    free(all);
}

Test(persistence, kill_9_and_restart_keeps_every_job, .init = hx_setup, .fini = hx_teardown)
{
    long long ids[20];
    submit_many(20, ids);
    char admin[128];
    snprintf(admin, sizeof(admin), "%s", hx.admin);
    cr_assert_eq(hx_stop_server(SIGKILL, 10), 128 + SIGKILL);
    hx_start_server();
    cr_assert_str_eq(hx.admin, admin, "the admin token is not remade");
    expect_all_there(20, ids);
    hx_submit(hx.admin, "after-restart", 1);
    hx_finish();
}

static char embedded_dir[128];

static void embedded_cleanup(void)
{
    if (hx.pid > 0)
        hx_stop_server(SIGKILL, 5);
    char err[256];
    struct pgcluster *c = pgcluster_create(embedded_dir, err, sizeof(err));
    if (c)
        pgcluster_stop(c); /* in case the test failed with the cluster up */
    pgcluster_destroy(c);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", embedded_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", embedded_dir);
}

static long postmaster_pid(void)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/pg/postmaster.pid", embedded_dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f && fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    if (f)
        fclose(f);
    return pid;
}

Test(persistence, embedded_cluster_survives_kill_9_and_stops_on_sigterm, .fini = embedded_cleanup)
{
    memset(&hx, 0, sizeof(hx));
    snprintf(embedded_dir, sizeof(embedded_dir), "/tmp/rm-emb-XXXXXX");
    cr_assert_not_null(mkdtemp(embedded_dir));
    snprintf(hx.dir, sizeof(hx.dir), "%s", embedded_dir);
    hx.port = hx_free_port();
    hx_start_server();
    long long ids[5];
    submit_many(5, ids);
    cr_assert_eq(hx_stop_server(SIGKILL, 10), 128 + SIGKILL);
    long pm = postmaster_pid();
    cr_assert(pm > 0 && kill((pid_t)pm, 0) == 0, "the cluster outlives a kill -9");
    hx_start_server();
    expect_all_there(5, ids);
    pm = postmaster_pid();
    cr_assert_eq(hx_stop_server(SIGTERM, 30), 0, "clean exit on SIGTERM");
    cr_assert_eq(postmaster_pid(), 0, "postmaster.pid removed: the cluster stopped");
    for (int i = 0; i < 100 && kill((pid_t)pm, 0) == 0; i++)
        usleep(50000); /* its last children may take a moment to go */
    cr_assert(kill((pid_t)pm, 0) != 0, "the postmaster is gone");
}

Test(persistence, restart_applies_no_migration_twice, .init = hx_setup, .fini = hx_teardown)
{
    PGresult *r = hx_sql("SELECT count(*), count(DISTINCT version) FROM schema_migrations");
    char first[32];
    snprintf(first, sizeof(first), "%s", PQgetvalue(r, 0, 0));
    cr_assert(atoi(first) >= 1);
    cr_assert_str_eq(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
    PQclear(r);
    cr_assert_eq(hx_stop_server(SIGTERM, 20), 0);
    hx_start_server();
    r = hx_sql("SELECT count(*) FROM schema_migrations");
    cr_assert_str_eq(PQgetvalue(r, 0, 0), first, "a restart applies nothing again");
    PQclear(r);
    r = hx_sql("SELECT count(*) FROM users WHERE role = 'admin'");
    cr_assert_str_eq(PQgetvalue(r, 0, 0), "1", "one first admin, not one per start");
    PQclear(r);
    hx_finish();
}

Test(persistence, lost_database_connections_are_remade, .init = hx_setup, .fini = hx_teardown)
{
    long long id = hx_submit(hx.admin, "before", 1);
    /* each backend waited for until it is gone (up to 10 s), so that every connection the
     * server holds is closed before the next request: a request racing its backend's end may
     * fail (503) when its first statement is the handler's own, with the token known */
    PGresult *r = hx_sql("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)),"
                         " count(*) FROM pg_stat_activity"
                         " WHERE datname = current_database() AND pid <> pg_backend_pid()");
    cr_assert(atoi(PQgetvalue(r, 0, 0)) >= 1, "the server's connections were cut");
    cr_assert_str_eq(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), "each backend ended");
    PQclear(r);
    for (int i = 0; i < 12; i++)
        json_decref(hx_expect_json(hx_json("GET", "/api/v1/jobs", hx.admin, NULL), 200));
    json_decref(hx_expect_json(hx_json("GET", "/api/v1/health", NULL, NULL), 200));
    /* the submission's statements are prepared per session (db_exec_stmt): the new sessions
     * prepare them again, alone and inside a batch's transaction */
    json_t *b =
        hx_expect_json(hx_json("POST", "/api/v1/jobs:batch", hx.admin,
                               "{\"jobs\":[{\"name\":\"b0\",\"command\":[\"x\"],\"gpus\":1},"
                               "{\"name\":\"b1\",\"command\":[\"x\"],\"gpus\":1}]}"),
                       201);
    cr_assert_eq(json_array_size(json_object_get(b, "items")), 2);
    json_decref(b);
    long long after = hx_submit(hx.admin, "after", 1);
    cr_assert(after > id);
    cr_assert(hx_submit(hx.admin, "after-again", 1) > after);
    hx_finish();
}

Test(persistence, a_vanished_database_gives_503_not_a_crash, .init = hx_setup, .fini = hx_teardown)
{
    hx_submit(hx.admin, "doomed", 1);
    char drop[128];
    snprintf(drop, sizeof(drop), "DROP DATABASE %s WITH (FORCE)", hx.dbname);
    hx_admin_sql(drop);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", hx.admin, NULL), 503, NULL);
    json_t *h = hx_expect_json(hx_json("GET", "/api/v1/health", NULL, NULL), 503);
    cr_assert_str_eq(json_string_value(json_object_get(h, "database")), "unavailable");
    json_decref(h);
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1}"),
                      503, NULL);
    hx_finish();
}
