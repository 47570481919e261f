/* The embedded cluster's supervisor, for real: the postmaster killed with -9, then stopped
 * cleanly behind the supervisor's back; each time it is started again, committed rows kept,
 * and the owner hears DOWN then UP. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pgcluster.h"
#include "pgsup.h"

static char dir[] = "/tmp/rm-sup-XXXXXX";
static atomic_int downs, ups;

static void on_event(void *arg, enum pgsup_event ev)
{
    (void)arg;
    atomic_fetch_add(ev == PGSUP_DOWN ? &downs : &ups, 1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sql_ok(struct pgcluster *c, const char *sql, const char *want)
{
    PGconn *conn = PQconnectdb(pgcluster_conninfo(c));
    cr_assert_eq(PQstatus(conn), CONNECTION_OK, "connect: %s", PQerrorMessage(conn));
    PGresult *r = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQresultErrorMessage(r));
    if (want)
        cr_assert_str_eq(PQgetvalue(r, 0, 0), want, "%s", sql);
    PQclear(r);
    PQfinish(conn);
}

/* Waits (bounded) for the n-th UP; returns the seconds it took. */
static double wait_up(int n, double bound_s)
{
    double t0 = now_s();
    while (atomic_load(&ups) < n) {
        cr_assert(now_s() < t0 + bound_s, "the cluster is not back within %.0f s", bound_s);
        usleep(20000);
    }
    return now_s() - t0;
}

Test(pgsup, restarts_the_cluster_whatever_ended_it, .timeout = 180)
{
    char err[512] = "";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(pgsup_adopt(), 0);
    struct pgcluster *c = pgcluster_create(dir, err, sizeof(err));
    cr_assert_not_null(c, "create: %s", err);
    cr_assert_eq(pgcluster_start(c, err, sizeof(err)), 0, "start: %s", err);
    sql_ok(c, "CREATE TABLE kept AS SELECT 1 AS v", NULL);
    struct pgsup *s = pgsup_create(c, on_event, NULL, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);

    long first = pgcluster_postmaster_pid(c);
    cr_assert(first > 0);
    cr_assert_eq(kill((pid_t)first, SIGKILL), 0);
    double took = wait_up(1, 30);
    fprintf(stderr, "pgsup: back %.2f s after kill -9\n", took);
    cr_assert_eq(atomic_load(&downs), 1);
    long second = pgcluster_postmaster_pid(c);
    cr_assert(second > 0 && second != first, "a new postmaster runs");
    sql_ok(c, "SELECT count(*) FROM kept", "1");

    cr_assert_eq(pgcluster_stop(c), 0); /* someone's pg_ctl stop: also repaired */
    wait_up(2, 30);
    cr_assert_eq(atomic_load(&downs), 2);
    cr_assert_eq(pgsup_restarts(s), 2);
    sql_ok(c, "SELECT count(*) FROM kept", "1");

    pgsup_destroy(s); /* then a stop stays a stop */
    cr_assert_eq(pgcluster_stop(c), 0);
    usleep(300000);
    cr_assert_eq(pgcluster_postmaster_pid(c), 0);
    cr_assert_eq(atomic_load(&ups), 2);
    pgcluster_destroy(c);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}
