/* retention: one pass (retention_pass(), retention.h): the minibatch history of each job past
 * its bound thinned, old round audit rows dropped. Its thread: retention_thread.c. */
#include "retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monotime.h"
#include "store/db.h"

/* The jobs past their bound (sql/022 counts their rows), the longest histories first: by id,
 * the first jobs thinned came back past the bound before the last got a turn, and with 2,732
 * jobs reporting one of them kept its whole hour (make bench-retention). Read once at a
 * pass's start (a job that crosses its bound meanwhile waits for the next pass, 30 s on; the
 * pass that read 100 at a time, passing back the ids it had seen, was quadratic in the jobs
 * it thinned). A scan of one small row per job, sorted: no index (sql/022).
 * A job's bound is RETENTION_ROWS_MAX less (id * 389) mod RETENTION_SPREAD (389 is prime to
 * 500: a run of 500 ids takes every value once), so that jobs started together (a job
 * array, bench-retention's 2,732) do not all cross it in the same pass and again 25 passes
 * later: with one bound for all, every pass that thinned there took its whole 20 s budget. */
static const char *const long_jobs_sql =
    "SELECT job_id FROM job_last_report WHERE rows > " DB_NUM(RETENTION_ROWS_MAX)
    " - job_id * 389 % " DB_NUM(RETENTION_SPREAD) " ORDER BY rows DESC, job_id";

/* $1 the job, $2 the rows kept as they are. Drops every second row (by age, the oldest
 * kept) of those older than the newest $2, and takes them off the job's count; answers
 * the rows dropped. The count is lowered by what this statement deleted, so that reports
 * inserted meanwhile (counted by their own trigger) are neither lost nor counted twice.
 * The old rows are read in the primary key's order from the newest $2's edge (cut), and the
 * rows to drop deleted by their place (ctid: a row is never updated, and one this statement
 * sees cannot move under it): half the time of numbering the whole history twice (two
 * window sorts) and finding each row to drop by its key again, 18 against 39 ms a job of
 * 4,060 rows (docs/benchmarks.md, "Metrics retention that holds its bound"). */
static const char *const thin_sql =
    "WITH cut AS (SELECT step, world_size FROM job_metrics WHERE job_id = $1"
    " ORDER BY step DESC, world_size DESC OFFSET $2::bigint LIMIT 1),"
    " old AS (SELECT m.ctid AS t, row_number() OVER (ORDER BY m.step, m.world_size) AS k"
    " FROM job_metrics m, cut WHERE m.job_id = $1"
    " AND (m.step, m.world_size) <= (cut.step, cut.world_size)),"
    " gone AS (DELETE FROM job_metrics WHERE ctid = ANY (ARRAY(SELECT t FROM old"
    " WHERE k % 2 = 0)) AND job_id = $1 RETURNING 1),"
    " n AS (SELECT count(*) AS n FROM gone)"
    " UPDATE job_last_report l SET rows = greatest(l.rows - n.n, 0) FROM n"
    " WHERE l.job_id = $1 RETURNING n.n";

/* $1 the age in seconds. Among the oldest rows only, so that a pass reads a bounded number
 * of rows whether or not any is old. */
static const char *const rounds_sql =
    "DELETE FROM sched_rounds WHERE id IN (SELECT id FROM sched_rounds ORDER BY id LIMIT "
    DB_NUM(RETENTION_ROUNDS_PER_PASS) ") AND at < now() - $1::float8 * interval '1 second'";

/* The ledger's open spans closed, and its days past keeping ($1) dropped. */
static const char *const ledger_sql =
    "WITH gone AS (DELETE FROM usage_ledger WHERE day < (now() AT TIME ZONE 'UTC')::date"
    " - $1::int RETURNING 1) SELECT ledger_close_all(), (SELECT count(*) FROM gone)";

/* Thins one job's history (thin_sql); counts it in *res. Returns 0 or -1. */
static int thin_one(PGconn *c, const char *id, struct retention_result *res, char *err,
                    size_t errlen)
{
    char recent[24];
    snprintf(recent, sizeof(recent), "%d", RETENTION_RECENT);
    const char *p[] = {id, recent};
    PGresult *t = db_exec(c, thin_sql, 2, p);
    int rc = 0;
    if (!db_ok(t)) {
        rc = db_fail(err, errlen, "retention", "thinning a history", c);
    } else if (PQntuples(t) == 1) {
        res->jobs_thinned++;
        res->rows_dropped += strtoll(PQgetvalue(t, 0, 0), NULL, 10);
    }
    PQclear(t);
    return rc;
}

/* Every job past the bound, each once, until none is left, the budget is spent or *stop is
 * set. Returns 0 or -1. */
static int thin_jobs(PGconn *c, double end, const atomic_bool *stop, struct retention_result *res,
                     char *err, size_t errlen)
{
    PGresult *r = db_exec(c, long_jobs_sql, 0, NULL);
    if (!db_ok(r)) {
        PQclear(r);
        return db_fail(err, errlen, "retention", "finding long histories", c);
    }
    int rc = 0;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        if ((stop && atomic_load(stop)) || monotime_s() >= end) {
            res->unfinished = 1;
            break;
        }
        rc = thin_one(c, PQgetvalue(r, i, 0), res, err, errlen);
    }
    PQclear(r);
    return rc;
}

/* Closes the ledger's open spans and drops its old days (ledger_sql). Returns 0 or -1. */
static int ledger_pass(PGconn *c, struct retention_result *res, char *err, size_t errlen)
{
    char days[24];
    snprintf(days, sizeof(days), "%d", RETENTION_LEDGER_DAYS);
    const char *p[] = {days};
    PGresult *r = db_exec(c, ledger_sql, 1, p);
    int rc = db_ok(r) && PQntuples(r) == 1 ? 0 : -1;
    if (rc == 0) {
        res->ledger_closed = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        res->ledger_dropped = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    return rc == 0 ? 0 : db_fail(err, errlen, "retention", "closing the ledger", c);
}

int retention_pass(PGconn *c, double budget_s, const atomic_bool *stop,
                   struct retention_result *res, char *err, size_t errlen)
{
    struct retention_result none;
    if (!res)
        res = &none;
    memset(res, 0, sizeof(*res));
    if (thin_jobs(c, monotime_s() + budget_s, stop, res, err, errlen) < 0)
        return -1;
    char age[24];
    snprintf(age, sizeof(age), "%d", RETENTION_ROUNDS_S);
    const char *p[] = {age};
    PGresult *r = db_exec(c, rounds_sql, 1, p);
    if (!db_ok(r)) {
        PQclear(r);
        return db_fail(err, errlen, "retention", "dropping old rounds", c);
    }
    res->rounds_dropped = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return ledger_pass(c, res, err, errlen);
}
