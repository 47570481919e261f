/* server/store/db.c's prepared statements on a real PostgreSQL (the harness's): a statement
 * marked generic runs with its generic plan from the first call, and leaves the session's
 * plan_cache_mode at its default (the connection's), whether it succeeds or fails, inside a
 * transaction or not. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "store/db.h"

static PGconn *c;

static void setup(void)
{
    hx_setup();
    char err[256] = "";
    c = db_connect(hx.conninfo, err, sizeof(err));
    cr_assert(c && PQstatus(c) == CONNECTION_OK, "connect: %s", err);
}

static void teardown(void)
{
    PQfinish(c);
    hx_teardown();
}

TestSuite(db_stmt, .init = setup, .fini = teardown, .timeout = 60);

/* One text value of sql on c. */
static char *one(const char *sql)
{
    PGresult *r = db_exec(c, sql, 0, NULL);
    cr_assert(db_ok(r) && PQntuples(r) == 1, "%s: %s", sql, PQresultErrorMessage(r));
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void expect_mode(const char *want)
{
    char *v = one("SHOW plan_cache_mode");
    cr_assert_str_eq(v, want);
    free(v);
}

/* Plans taken by the session's prepared statement name: "generic custom". */
static char *plans(const char *name)
{
    const char *p[] = {name};
    PGresult *r = db_exec(c,
                          "SELECT generic_plans || ' ' || custom_plans FROM pg_prepared_statements"
                          " WHERE name = $1",
                          1, p);
    cr_assert(db_ok(r) && PQntuples(r) == 1, "%s", PQresultErrorMessage(r));
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* $1 / $2 over a table, so that there is a plan to choose. */
static const struct db_stmt generic = {
    "test_generic", "SELECT count(*) / $2::int FROM users WHERE id >= $1::bigint", 2, 1};
static const struct db_stmt custom = {
    "test_custom", "SELECT count(*) / $2::int FROM users WHERE id >= $1::bigint", 2, 0};

Test(db_stmt, a_generic_statement_uses_its_generic_plan_and_resets_the_mode)
{
    const char *ok[] = {"0", "1"}, *bad[] = {"0", "0"};
    for (int i = 0; i < 3; i++) {
        PGresult *r = db_exec_stmt(c, &generic, ok);
        cr_assert(db_ok(r), "%s", PQresultErrorMessage(r));
        cr_assert_geq(atoi(PQgetvalue(r, 0, 0)), 1, "the admin at least");
        PQclear(r);
        expect_mode("auto");
        r = db_exec_stmt(c, &custom, ok);
        cr_assert(db_ok(r));
        PQclear(r);
    }
    char *g = plans("test_generic"), *u = plans("test_custom");
    cr_assert_str_eq(g, "3 0", "generic from the first call");
    cr_assert_str_eq(u, "0 3", "PostgreSQL's own choice for the first five calls: custom");
    free(g);
    free(u);

    /* a failing one: its error, and the mode as it was */
    PGresult *r = db_exec_stmt(c, &generic, bad);
    cr_assert(!db_ok(r));
    cr_assert_str_eq(db_sqlstate(r), "22012", "division by zero");
    PQclear(r);
    expect_mode("auto");

    /* inside a transaction: the same, and a failure leaves the transaction to roll back */
    cr_assert_eq(db_command(c, "BEGIN"), 0);
    r = db_exec_stmt(c, &generic, ok);
    cr_assert(db_ok(r), "%s", PQresultErrorMessage(r));
    PQclear(r);
    expect_mode("auto");
    r = db_exec_stmt(c, &generic, bad);
    cr_assert(!db_ok(r));
    PQclear(r);
    cr_assert_eq(PQtransactionStatus(c), PQTRANS_INERROR);
    cr_assert_eq(db_command(c, "ROLLBACK"), 0);
    expect_mode("auto");
    g = plans("test_generic");
    cr_assert_str_eq(g, "6 0", "the failed calls were planned too");
    free(g);
    hx_finish();
}
