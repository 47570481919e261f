/* The embedded PostgreSQL cluster, for real: initdb, start, reuse, restart
 * after the server was killed, and data kept across all of it. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pgcluster.h"

static char dir[] = "/tmp/rm-pgc-XXXXXX";

static void rm_dir(void)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static PGconn *connect_ok(struct pgcluster *c)
{
    PGconn *conn = PQconnectdb(pgcluster_conninfo(c));
    cr_assert_eq(PQstatus(conn), CONNECTION_OK, "connect: %s", PQerrorMessage(conn));
    return conn;
}

static void exec_ok(PGconn *conn, const char *sql)
{
    PGresult *r = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQresultErrorMessage(r));
    PQclear(r);
}

static long count_rows(struct pgcluster *c)
{
    PGconn *conn = connect_ok(c);
    PGresult *r = PQexec(conn, "SELECT count(*) FROM kept");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(conn);
    return n;
}

static pid_t postmaster_pid(struct pgcluster *c)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/postmaster.pid", pgcluster_datadir(c));
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    long pid = 0;
    cr_assert_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    return (pid_t)pid;
}

Test(pgcluster, lifecycle_reuse_and_crash_restart, .timeout = 180)
{
    char err[512] = "";
    cr_assert_not_null(mkdtemp(dir));
    struct pgcluster *c = pgcluster_create(dir, err, sizeof(err));
    cr_assert_not_null(c, "create: %s", err);
    cr_assert_eq(pgcluster_start(c, err, sizeof(err)), 0, "first start: %s", err);

    PGconn *conn = connect_ok(c);
    /* Reachable only through its unix socket, and that only by its owner. */
    PGresult *r = PQexec(conn, "SELECT current_setting('listen_addresses'),"
                               " current_setting('unix_socket_permissions')");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    cr_assert_str_eq(PQgetvalue(r, 0, 0), "", "no TCP address");
    cr_assert_str_eq(PQgetvalue(r, 0, 1), "0700");
    PQclear(r);
    exec_ok(conn, "CREATE TABLE kept (v text)");
    exec_ok(conn, "INSERT INTO kept VALUES ('one'), ('two')");
    PQfinish(conn);

    /* A second start finds the running server and reuses it. */
    pid_t before = postmaster_pid(c);
    cr_assert_eq(pgcluster_start(c, err, sizeof(err)), 0, "reuse: %s", err);
    cr_assert_eq(postmaster_pid(c), before, "a running server must be reused");

    /* The server dies hard; the next start recovers and nothing committed is lost. */
    cr_assert_eq(kill(before, SIGKILL), 0);
    for (int i = 0; i < 100 && kill(before, 0) == 0; i++)
        usleep(50 * 1000);
    cr_assert_eq(pgcluster_start(c, err, sizeof(err)), 0, "restart after kill: %s", err);
    cr_assert_eq(count_rows(c), 2);

    /* A clean stop, then a start with a fresh handle, as a new process would. */
    cr_assert_eq(pgcluster_stop(c), 0);
    cr_assert_eq(pgcluster_stop(c), 0, "stopping a stopped cluster is fine");
    pgcluster_destroy(c);
    c = pgcluster_create(dir, err, sizeof(err));
    cr_assert_not_null(c, "create again: %s", err);
    cr_assert_eq(pgcluster_start(c, err, sizeof(err)), 0, "second life: %s", err);
    cr_assert_eq(count_rows(c), 2);
    cr_assert_eq(pgcluster_stop(c), 0);
    pgcluster_destroy(c);
    rm_dir();
}

Test(pgcluster, conninfo_quotes_paths)
{
    char err[256];
    char odd[] = "/tmp/rm pgc 'q'-XXXXXX";
    cr_assert_not_null(mkdtemp(odd));
    struct pgcluster *c = pgcluster_create(odd, err, sizeof(err));
    cr_assert_not_null(c, "%s", err);
    char buf[1024];
    cr_assert_eq(pgcluster_conninfo_db(c, "x'y", buf, sizeof(buf)), 0);
    cr_expect(strstr(buf, "dbname='x\\'y'") != NULL, "got %s", buf);
    cr_expect(strstr(buf, "rm pgc \\'q\\'") != NULL, "got %s", buf);
    cr_expect_eq(pgcluster_conninfo_db(c, "db", buf, 10), -1, "too small a buffer must fail");
    pgcluster_destroy(c);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf \"%s\"", odd);
    cr_expect_eq(system(cmd), 0);
}

Test(pgcluster, refuses_a_socket_path_that_cannot_fit)
{
    char err[512] = "";
    char longdir[200];
    memset(longdir, 'a', sizeof(longdir));
    memcpy(longdir, "/tmp/", 5);
    longdir[sizeof(longdir) - 1] = '\0';
    struct pgcluster *c = pgcluster_create(longdir, err, sizeof(err));
    cr_assert_null(c);
    cr_expect(strstr(err, "too long") != NULL, "err: %s", err);
    rmdir(longdir);
}

/* As root, a state directory the cluster's user cannot reach (a clone under a
 * 0700 home) still works: the data moves under /var/lib and STATE_DIR/pg links
 * to it. */
Test(pgcluster, root_with_unreachable_state_dir_uses_a_linked_datadir, .timeout = 120)
{
    if (geteuid() != 0)
        cr_skip_test("only meaningful as root");
    char top[] = "/tmp/rm-pgc-home-XXXXXX";
    cr_assert_not_null(mkdtemp(top)); /* 0700, like /root */
    char state[256];
    snprintf(state, sizeof(state), "%s/clone/var", top);
    char err[512] = "";
    struct pgcluster *c = pgcluster_create(state, err, sizeof(err));
    cr_assert_not_null(c, "create: %s", err);
    cr_expect(strncmp(pgcluster_datadir(c), "/var/lib/ringmaster-embedded/", 29) == 0, "datadir %s",
              pgcluster_datadir(c));
    cr_assert_eq(pgcluster_start(c, err, sizeof(err)), 0, "start: %s", err);
    PGconn *conn = connect_ok(c);
    PQfinish(conn);
    char link[300], target[512];
    snprintf(link, sizeof(link), "%s/pg", state);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    cr_assert_gt(n, 0, "%s must be a link", link);
    target[n] = '\0';
    cr_expect_str_eq(target, pgcluster_datadir(c));
    cr_assert_eq(pgcluster_stop(c), 0);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", top, pgcluster_datadir(c));
    pgcluster_destroy(c);
    cr_expect_eq(system(cmd), 0);
}
