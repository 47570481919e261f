#include "retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The jobs past the bound (sql/022 counts their rows). */
static const char *const long_jobs_sql =
    "SELECT job_id FROM job_last_report WHERE rows > " STR(RETENTION_ROWS_MAX)
    " ORDER BY job_id LIMIT " STR(RETENTION_JOBS_PER_PASS);

/* $1 the job, $2 the rows kept as they are. Drops every second row (by age, the oldest
 * kept) of those older than the newest $2, and takes them off the job's count; answers
 * the rows dropped. The count is lowered by what this statement deleted, so that reports
 * inserted meanwhile (counted by their own trigger) are neither lost nor counted twice. */
static const char *const thin_sql =
    "WITH ordered AS (SELECT step, world_size, row_number() OVER (ORDER BY step DESC,"
    " world_size DESC) AS newest FROM job_metrics WHERE job_id = $1),"
    " old AS (SELECT step, world_size, row_number() OVER (ORDER BY step, world_size) AS k"
    " FROM ordered WHERE newest > $2::bigint),"
    " gone AS (DELETE FROM job_metrics m USING old o WHERE m.job_id = $1"
    " AND m.step = o.step AND m.world_size = o.world_size AND o.k % 2 = 0 RETURNING 1),"
    " n AS (SELECT count(*) AS n FROM gone)"
    " UPDATE job_last_report l SET rows = greatest(l.rows - n.n, 0) FROM n"
    " WHERE l.job_id = $1 RETURNING n.n";

/* $1 the age in seconds. Among the oldest rows only, so that a pass reads a bounded number
 * of rows whether or not any is old. */
static const char *const rounds_sql =
    "DELETE FROM sched_rounds WHERE id IN (SELECT id FROM sched_rounds ORDER BY id LIMIT "
    STR(RETENTION_ROUNDS_PER_PASS) ") AND at < now() - $1::float8 * interval '1 second'";

static int fail(char *err, size_t errlen, const char *what, PGconn *c)
{
    snprintf(err, errlen, "retention: %s: %s", what, PQerrorMessage(c));
    err[strcspn(err, "\n")] = '\0';
    return -1;
}

static int thin_jobs(PGconn *c, struct retention_result *res, char *err, size_t errlen)
{
    PGresult *r = db_exec(c, long_jobs_sql, 0, NULL);
    if (!db_ok(r)) {
        PQclear(r);
        return fail(err, errlen, "finding long histories", c);
    }
    int rc = 0;
    char recent[24];
    snprintf(recent, sizeof(recent), "%d", RETENTION_RECENT);
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        const char *p[] = {PQgetvalue(r, i, 0), recent};
        PGresult *t = db_exec(c, thin_sql, 2, p);
        if (!db_ok(t)) {
            rc = fail(err, errlen, "thinning a history", c);
        } else if (PQntuples(t) == 1) {
            res->jobs_thinned++;
            res->rows_dropped += strtoll(PQgetvalue(t, 0, 0), NULL, 10);
        }
        PQclear(t);
    }
    PQclear(r);
    return rc;
}

int retention_pass(PGconn *c, struct retention_result *res, char *err, size_t errlen)
{
    struct retention_result none;
    if (!res)
        res = &none;
    memset(res, 0, sizeof(*res));
    if (thin_jobs(c, res, err, errlen) < 0)
        return -1;
    char age[24];
    snprintf(age, sizeof(age), "%d", RETENTION_ROUNDS_S);
    const char *p[] = {age};
    PGresult *r = db_exec(c, rounds_sql, 1, p);
    if (!db_ok(r)) {
        PQclear(r);
        return fail(err, errlen, "dropping old rounds", c);
    }
    res->rounds_dropped = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

int retention_tick(PGconn *c, double now, double *last, struct retention_result *res, char *err,
                   size_t errlen)
{
    if (*last > 0 && now - *last < RETENTION_PERIOD_S)
        return 0;
    *last = now;
    return retention_pass(c, res, err, errlen) < 0 ? -1 : 1;
}
