/* The database's own rules for a job's columns (sql/001 and later, as domains since sql/030):
 * whoever writes the jobs table, a value the rules forbid is refused with check_violation
 * (23514) and the row keeps what it had; the values the rules allow are taken. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

TestSuite(schema, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

/* Runs sql on the test's database; returns its SQLSTATE, or "" when it worked. */
static const char *sql_state(const char *sql)
{
    static char state[8];
    PGconn *c = PQconnectdb(hx.conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(state, sizeof(state), "%s",
             st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? "" : s ? s : "?");
    PQclear(r);
    PQfinish(c);
    return state;
}

/* A waiting job of the admin's, made through the API; its id. */
static long long a_job(void)
{
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"rules\",\"command\":[\"true\"],\"gpus\":1}"),
                               201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static void refused(long long id, const char *set)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET %s WHERE id = %lld", set, id);
    cr_assert_str_eq(sql_state(sql), "23514", "not refused: %s", sql);
}

static void taken(long long id, const char *set)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET %s WHERE id = %lld", set, id);
    cr_assert_str_eq(sql_state(sql), "", "refused: %s", sql);
}

Test(schema, a_jobs_columns_refuse_what_their_rules_forbid)
{
    long long id = a_job();
    refused(id, "state = 'DONE'");
    refused(id, "state = 'pending'");
    refused(id, "command = '{\"a\": 1}'");
    refused(id, "env = '[]'");
    refused(id, "model = '\"resnet\"'");
    refused(id, "plan_spec = '[1]'");
    refused(id, "batch_spec = '{\"batch\": 0}'");
    refused(id, "batch_spec = '[]'");
    refused(id, "batch_per_gpu = 0");
    refused(id, "ckpt_gen = -1");
    refused(id, "total_steps = 0");
    refused(id, "reported_total_steps = 0");
    refused(id, "epochs = 0");
    refused(id, "array_id = 7, array_index = -1");
    refused(id, "grad_sqr = -1");
    refused(id, "grad_var = -0.5");
    refused(id, "current_batch = 0");
    /* the rules over several columns */
    refused(id, "min_gpus = 0");
    refused(id, "gpus = 2, max_gpus = 1");
    refused(id, "max_gpus = 1025");
    refused(id, "array_id = 7");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE state = 'PENDING' AND"
                            " command = '[\"true\"]' AND array_id IS NULL AND batch_per_gpu = 128"),
                 1, "the row kept what it had");

    taken(id, "state = 'SUSPENDED'");
    taken(id, "state = 'PENDING'");
    taken(id, "model = '{\"name\": \"resnet\"}', plan_spec = '{}', env = '{\"A\": \"1\"}'");
    taken(id, "batch_spec = '{\"batch\": 64}', current_batch = 64, batch_per_gpu = 1");
    taken(id, "ckpt_gen = 0, total_steps = 1, reported_total_steps = 1, epochs = 0.5");
    taken(id, "grad_sqr = 0, grad_var = 0, array_id = 7, array_index = 0");
    taken(id, "model = NULL, plan_spec = NULL, batch_spec = NULL, total_steps = NULL,"
              " epochs = NULL, grad_sqr = NULL, current_batch = NULL");
    /* a state the scheduler writes through its parameters */
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM jobs WHERE state = 'CANCELLED'"), 1);
    hx_finish();
}

/* job_last_report.reports (sql/031): every report a job made, as its job_metric_sums count
 * them, whatever the statement mixes; the thinning's deletes leave it as it is. */
Test(schema, a_jobs_count_of_reports_is_every_report_it_ever_made)
{
    long long a = a_job(), b = a_job();
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds) VALUES"
             " (%lld, 1, 1, 2.0, 32, 0.1), (%lld, 2, 1, 1.9, 32, 0.1), (%lld, 3, 1, 1.8, 32, 0),"
             " (%lld, 4, 2, 1.7, 64, 0.1), (%lld, 5, 2, 1.6, 64, 0.1), (%lld, 1, 1, 3.0, 8, 0.2)",
             a, a, a, a, a, b);
    hx_sql_do(sql);
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds) VALUES"
             " (%lld, 6, 1, 1.5, 32, 0.1), (%lld, 2, 4, 2.9, 32, 0.1)",
             a, b);
    hx_sql_do(sql);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM job_last_report l WHERE l.reports <>"
                            " (SELECT sum(s.reports) FROM job_metric_sums s"
                            " WHERE s.job_id = l.job_id)"),
                 0, "the same count as the sums'");
    snprintf(sql, sizeof(sql), "SELECT reports FROM job_last_report WHERE job_id = %lld", a);
    cr_assert_eq(hx_sql_num(sql), 6);
    char del[128];
    snprintf(del, sizeof(del), "DELETE FROM job_metrics WHERE job_id = %lld AND step <= 3", a);
    hx_sql_do(del);
    cr_assert_eq(hx_sql_num(sql), 6, "deleted reports still count");
    snprintf(sql, sizeof(sql), "SELECT reports FROM job_last_report WHERE job_id = %lld", b);
    cr_assert_eq(hx_sql_num(sql), 2);
    hx_finish();
}

/* sql/032: a job's owner and its events are no longer checked by foreign keys, and still
 * nothing is orphaned: a user who owns jobs cannot be deleted or renumbered by hand, nor a
 * job given to no user (foreign_key_violation, 23503, as the keys answered); one who owns
 * none can go; a job deleted by hand takes its events and its reports with it, and only its
 * own. */
Test(schema, a_jobs_owner_and_events_are_kept_without_foreign_keys)
{
    char token[128];
    hx_user("owner", "user", token);
    hx_user("nobody", "user", token);
    long long mine = a_job(), other = a_job();
    hx_sql_do("UPDATE jobs SET user_id = (SELECT id FROM users WHERE name = 'owner')"
              " WHERE id = (SELECT max(id) FROM jobs)");
    cr_assert_str_eq(sql_state("UPDATE jobs SET user_id = 999999"), "23503",
                     "a job given to no user");
    cr_assert_str_eq(sql_state("DELETE FROM users WHERE name = 'owner'"), "23503");
    cr_assert_str_eq(sql_state("UPDATE users SET id = id + 1000 WHERE name = 'owner'"), "23503");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM users WHERE name = 'owner'"), 1,
                 "the owner was kept");
    cr_assert_str_eq(sql_state("DELETE FROM users WHERE name = 'nobody'"), "");
    cr_assert_str_eq(sql_state("UPDATE users SET created_at = now() WHERE name = 'owner'"), "",
                     "a change that keeps the id is taken");

    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM job_events WHERE job_id = %lld", mine);
    cr_assert_eq(hx_sql_num(sql), 1, "its submit event");
    char rep[256];
    snprintf(rep, sizeof(rep),
             "INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds)"
             " VALUES (%lld, 1, 1, 2.0, 32, 0.1), (%lld, 1, 1, 2.0, 32, 0.1)",
             mine, other);
    hx_sql_do(rep);
    char del[128];
    snprintf(del, sizeof(del), "DELETE FROM jobs WHERE id = %lld", mine);
    hx_sql_do(del);
    cr_assert_eq(hx_sql_num(sql), 0, "its events went with it");
    snprintf(rep, sizeof(rep), "SELECT count(*) FROM job_metrics WHERE job_id = %lld", mine);
    cr_assert_eq(hx_sql_num(rep), 0, "its reports went with it (sql/026)");
    snprintf(rep, sizeof(rep), "SELECT count(*) FROM job_metrics WHERE job_id = %lld", other);
    cr_assert_eq(hx_sql_num(rep), 1, "the other job's reports stay");
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM job_events WHERE job_id = %lld", other);
    cr_assert_eq(hx_sql_num(sql), 1, "the other job's events stay");
    cr_assert_str_eq(sql_state("DELETE FROM jobs"), "");
    cr_assert_str_eq(sql_state("DELETE FROM users WHERE name = 'owner'"), "",
                     "an owner of no jobs any more can go");
    hx_finish();
}
