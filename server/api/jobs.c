/* jobs: the /api/v1/jobs handlers: get, list (keyset paging and filters), cancel and a job's
 * events. */
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/etag.h"
#include "http/http.h"
#include "http/problem.h"
#include "job_state.h"
#include "jobview.h"
#include "live/live.h"
#include "log.h"
#include "spec/jobspec.h"
#include "store/db.h"

void jobs_get(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) == 0)
        jobview_respond(call, id, 200, 1);
}

/* Parses limit= (1..JOBS_LIST_MAX, default 50) and after= (an id >= 0, default 0). */
static int paging_or_respond(struct api_call *call, long long *limit, long long *after)
{
    const char *l = http_req_query(call->req, "limit");
    const char *a = http_req_query(call->req, "after");
    char *end = NULL;
    *limit = JOBS_LIST_DEFAULT;
    *after = 0;
    if (l &&
        (strlen(l) > 4 || (*limit = strtoll(l, &end, 10)) < 1 || *end || *limit > JOBS_LIST_MAX)) {
        http_send_problem(call->req, 400,
                          json_pack("[{s:s, s:s}]", "field", "limit", "detail", "expected 1..1000"),
                          NULL, "limit: expected 1..%d, got '%.40s'", JOBS_LIST_MAX, l);
        return -1;
    }
    if (a && (strlen(a) > 18 || a[0] < '0' || a[0] > '9' || (*after = strtoll(a, &end, 10)) < 0 ||
              *end)) {
        http_send_problem(
            call->req, 400,
            json_pack("[{s:s, s:s}]", "field", "after", "detail", "expected a cursor from next"),
            NULL, "after: expected a cursor from next, got '%.40s'", a);
        return -1;
    }
    return 0;
}

/* array= : an array's id (a positive integer), or NULL. Returns 0, or -1 after a 400. */
static int array_or_respond(struct api_call *call, const char **array)
{
    const char *a = http_req_query(call->req, "array");
    char *end = NULL;
    *array = a;
    if (!a || (strlen(a) <= 18 && a[0] >= '1' && a[0] <= '9' && strtoll(a, &end, 10) > 0 && !*end))
        return 0;
    http_send_problem(call->req, 400,
                      json_pack("[{s:s, s:s}]", "field", "array", "detail", "expected an array id"),
                      NULL, "array: expected an array id, got '%.40s'", a);
    return -1;
}

static int filters_or_respond(struct api_call *call, const char **state, const char **user,
                              const char **prefix)
{
    enum job_state s;
    *state = http_req_query(call->req, "state");
    *user = http_req_query(call->req, "user");
    *prefix = http_req_query(call->req, "name_prefix");
    if (*prefix && strlen(*prefix) > 4 * JOBSPEC_MAX_NAME) {
        http_problem(call->req, 400, "name_prefix: longer than a job's name may be");
        return -1;
    }
    if (*state && job_state_parse(*state, &s) < 0) {
        http_send_problem(call->req, 400,
                          json_pack("[{s:s, s:s}]", "field", "state", "detail", "not a job state"),
                          NULL, "state: not a job state: '%.40s'", *state);
        return -1;
    }
    if (*user && strlen(*user) > AUTH_NAME_MAX) {
        http_problem(call->req, 400, "user: longer than %d characters", AUTH_NAME_MAX);
        return -1;
    }
    return 0;
}

/* A page's statement with no filter but an array's, prepared once a session: planning a
 * page's three statements was a quarter of PostgreSQL's CPU for a page of 50 (docs/
 * benchmarks-history.md, "Lists on prepared statements"). $1 the cursor, $2 the limit, and in an
 * array's $3 the array. One generic plan serves every value: the ids' index, or the
 * array's. */
static const struct db_stmt list_all_stmt = {
    "jobs_list_all",
    "SELECT " JOB_COLS JOB_FROM " WHERE j.id > $1 ORDER BY j.id LIMIT $2",
    2, 0};
static const struct db_stmt list_array_stmt = {
    "jobs_list_array",
    "SELECT " JOB_COLS JOB_FROM " WHERE j.id > $1 AND j.array_id = $3::bigint"
    " ORDER BY j.id LIMIT $2",
    3, 0};

/* With a state, a user or a name prefix: planned with the values each time. A generic plan
 * reads the ids' index and filters (measured: 100,000 rows read for a state none had), where
 * the values' plan takes the state's, the user's or the name's index. */
static const char *const list_filtered_sql =
    "SELECT " JOB_COLS JOB_FROM " WHERE ($1::text IS NULL OR j.state = $1)"
    " AND ($2::text IS NULL OR"
    " j.user_id = (SELECT id FROM users WHERE name = $2)) AND j.id > $3"
    " AND ($5::text IS NULL OR starts_with(j.name, $5))"
    " AND ($6::bigint IS NULL OR j.array_id = $6)"
    " ORDER BY j.id LIMIT $4";

/* The page's rows (limit + 1 of them, to tell whether more follow). */
static PGresult *list_rows(PGconn *c, const char *state, const char *user, const char *after,
                           const char *limit, const char *prefix, const char *array)
{
    if (state || user || prefix) {
        const char *p[] = {state, user, after, limit, prefix, array};
        return db_exec(c, list_filtered_sql, 6, p);
    }
    const char *p[] = {after, limit, array};
    return db_exec_stmt(c, array ? &list_array_stmt : &list_all_stmt, p);
}

void jobs_list(struct api_call *call)
{
    long long limit, after;
    const char *state, *user, *prefix, *array;
    if (paging_or_respond(call, &limit, &after) < 0 ||
        filters_or_respond(call, &state, &user, &prefix) < 0 ||
        array_or_respond(call, &array) < 0)
        return;
    char lim[24], aft[24];
    snprintf(lim, sizeof(lim), "%lld", limit + 1);
    snprintf(aft, sizeof(aft), "%lld", after);
    int begun = jobview_snapshot_begin(call->db); /* rows and allocations from one snapshot */
    if (begun < 0) {
        api_db_error(call, NULL);
        return;
    }
    PGresult *r = list_rows(call->db, state, user, aft, lim, prefix, array);
    size_t len = 0;
    char *page = db_ok(r) ? jobview_list_text(call->db, r, limit, &len) : NULL;
    int ok = db_ok(r);
    if (!ok)
        api_db_error(call, r);
    PQclear(r);
    jobview_snapshot_end(call->db, begun);
    if (ok)
        etag_respond_text(call->req, page, len);
}

/* Inside a transaction: locks job id and moves it by ev. Returns 0, or -1 after answering
 * (404 none, 403 not the caller's, 409 illegal). */
static int transition_or_respond(struct api_call *call, long long id, enum job_event ev)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r =
        db_exec(call->db, "SELECT state, user_id FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
    enum job_state from = JOB_PENDING, to;
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %lld", id);
    else if (call->who.role != AUTH_ADMIN && strtoll(PQgetvalue(r, 0, 1), NULL, 10) != call->who.id)
        http_problem(call->req, 403, "job %lld belongs to another user", id);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &from) < 0 || job_state_next(from, ev, &to) < 0)
        http_problem(call->req, 409, "cannot %s job %lld in state %s", job_event_name(ev), id,
                     PQgetvalue(r, 0, 0));
    else
        rc = 0;
    PQclear(r);
    if (rc < 0)
        return -1;
    const char *u[] = {ids, job_state_name(to), job_state_name(from), job_event_name(ev),
                       call->who.name};
    r = db_exec(call->db,
                "WITH up AS (UPDATE jobs SET state = $2, updated_at = now(),"
                " finished_at = CASE WHEN $2 IN ('COMPLETED', 'FAILED', 'CANCELLED')"
                " THEN now() END WHERE id = $1 RETURNING id)"
                " INSERT INTO job_events (job_id, from_state, to_state, event, actor)"
                " SELECT id, $3, $2, $4, $5 FROM up",
                5, u);
    rc = db_ok(r) && db_command(call->db, "COMMIT") == 0 ? 0 : -1;
    if (rc < 0)
        api_db_error(call, r);
    else
        log_info("job %lld: %s -> %s (%s by %s)", id, u[2], u[1], u[3], u[4]);
    PQclear(r);
    return rc;
}

void jobs_cancel(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    if (db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
        return;
    }
    if (transition_or_respond(call, id, JOB_EV_CANCEL) == 0) {
        jobview_respond(call, id, 200, 0);
        live_wake_signal();
    } else
        db_command(call->db, "ROLLBACK");
}

static long long col_ll(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static json_t *event_json(const PGresult *r, int i)
{
    return json_pack("{s:I, s:s, s:o, s:s, s:s, s:s, s:s}", "id", (json_int_t)col_ll(r, i, 0), "at",
                     PQgetvalue(r, i, 1), "from",
                     PQgetisnull(r, i, 2) ? json_null() : json_string(PQgetvalue(r, i, 2)), "to",
                     PQgetvalue(r, i, 3), "event", PQgetvalue(r, i, 4), "actor",
                     PQgetvalue(r, i, 5), "detail", PQgetvalue(r, i, 6));
}

void jobs_events(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r =
        db_exec(call->db,
                "SELECT e.id, " DB_TS("e.at") ", e.from_state, e.to_state,"
                                           " e.event, e.actor, e.detail, j.id FROM jobs j LEFT JOIN"
                                           " job_events e ON e.job_id = j.id WHERE j.id = $1"
                                           " ORDER BY e.id",
                1, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) == 0) {
        http_problem(call->req, 404, "no job %lld", id);
    } else {
        json_t *items = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            if (!PQgetisnull(r, i, 0))
                json_array_append_new(items, event_json(r, i));
        api_respond_json(call, 200, json_pack("{s:o}", "items", items));
    }
    PQclear(r);
}
