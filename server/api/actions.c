/* actions: the handlers of a node's actions: the long-poll of pending actions, the results
 * workers post, and suspend, resume and cancel asked for by people. */
#include "actions.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "job_state.h"
#include "jobs.h"
#include "live/live.h"
#include "log.h"
#include "metrics.h"
#include "nodes.h"
#include "reports.h"
#include "store/db.h"

#define ACTION_JSON                                                                                \
    "json_build_object('id', a.id, 'node_id', a.node_id, 'job_id', a.job_id, 'kind', a.kind,"      \
    " 'spec', a.spec, 'state', a.state, 'created_at', " DB_TS("a.created_at") ")::text"
/* The node that runs a job's mpirun: the first slot's node of its latest launch. */
#define LAUNCH_NODE_SQL                                                                            \
    "(SELECT COALESCE((l.spec->'slots'->0->>'node_id')::bigint, l.node_id) FROM actions l"         \
    " WHERE l.job_id = $1 AND l.kind IN ('start', 'resize', 'migrate')"                            \
    " AND l.state <> 'superseded' ORDER BY l.id DESC LIMIT 1)"
#define DETAIL_MAX 4096

static atomic_int stopping;

void actions_stop_waiting(void)
{
    atomic_store(&stopping, 1);
}

static json_t *text_json(const PGresult *r, int row, int col)
{
    json_t *j = json_loads(PQgetvalue(r, row, col), 0, NULL);
    return j ? j : json_null();
}

/* The node's pending actions, marked delivered. NULL after answering an error. */
static PGresult *fetch_pending(struct api_call *call, const char *node)
{
    const char *p[] = {node};
    /* Only the actions not delivered before are written (and locked): a node polls again and
     * again while an action is carried out, and rewriting its pending rows at every look
     * took their locks against the round that supersedes them (deadlocks at 512 nodes).
     * Prepared: every node's every look (bench-scale: 71 a second). */
    static const struct db_stmt fetch = {
        "actions_fetch",
        "WITH fresh AS (UPDATE actions SET delivered_at = now()"
        " WHERE node_id = $1 AND state = 'pending' AND delivered_at IS NULL"
        " RETURNING *), seen AS (SELECT * FROM actions WHERE node_id = $1"
        " AND state = 'pending' AND delivered_at IS NOT NULL)"
        " SELECT " ACTION_JSON " FROM (SELECT * FROM fresh UNION ALL"
        " SELECT * FROM seen) a ORDER BY a.id",
        1, 0};
    PGresult *r = db_exec_stmt(call->db, &fetch, p);
    if (db_ok(r))
        return r;
    api_db_error(call, r);
    PQclear(r);
    return NULL;
}

/* Parses wait= (0..60, default 0). */
static int wait_or_respond(struct api_call *call, int *wait)
{
    const char *w = http_req_query(call->req, "wait");
    char *end = NULL;
    *wait = 0;
    if (!w)
        return 0;
    long v = strtol(w, &end, 10);
    if (w[0] < '0' || w[0] > '9' || strlen(w) > 3 || *end || v > ACTIONS_WAIT_MAX) {
        http_send_problem(call->req, 400,
                          json_pack("[{s:s, s:s}]", "field", "wait", "detail", "expected 0..60"),
                          NULL, "wait: expected 0..%d seconds, got '%.40s'", ACTIONS_WAIT_MAX, w);
        return -1;
    }
    *wait = (int)v;
    return 0;
}

static void respond_items(struct api_call *call, PGresult *r)
{
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, text_json(r, i, 0));
    api_respond_json(call, 200, json_pack("{s:o}", "items", items));
}

/* A waiting long-poll looks again when an action for its node is committed (sql/021, woken
 * through http_wake() with the node's id by ringmasterd's listener), and at least this often
 * in case a notification was lost. */
#define POLL_BACKSTOP_S 10.0

void actions_poll(struct api_call *call)
{
    long long id;
    int wait;
    char node[24];
    if (api_id_or_respond(call, "node", &id) < 0 || wait_or_respond(call, &wait) < 0)
        return;
    snprintf(node, sizeof(node), "%lld", id);
    if (nodes_owned_or_respond(call, id) < 0)
        return;
    metrics_poll_look();
    PGresult *r = fetch_pending(call, node);
    if (!r)
        return;
    double left = wait - http_req_age(call->req);
    if (PQntuples(r) == 0 && left > 0 && !atomic_load(&stopping))
        http_req_retry_on(call->req, left < POLL_BACKSTOP_S ? left : POLL_BACKSTOP_S, id);
    else
        respond_items(call, r);
    PQclear(r);
}

/* Checks the result body; fills the action state it asks for and the detail. */
static int result_body_or_respond(struct api_call *call, const json_t *body, const char **state,
                                  const char **detail)
{
    const char *o = json_string_value(json_object_get(body, "outcome"));
    const json_t *d = json_object_get(body, "detail");
    const json_t *js = json_object_get(body, "job_state");
    enum job_state s;
    *detail = d ? json_string_value(d) : "";
    if (!o || (strcmp(o, "ok") != 0 && strcmp(o, "failed") != 0)) {
        http_problem(call->req, 400, "outcome: expected \"ok\" or \"failed\"");
        return -1;
    }
    if (!*detail || strlen(*detail) > DETAIL_MAX) {
        http_problem(call->req, 400, "detail: expected a string of at most %d bytes", DETAIL_MAX);
        return -1;
    }
    if (js && job_state_parse(json_string_value(js), &s) < 0) {
        http_problem(call->req, 400, "job_state: not a job state");
        return -1;
    }
    *state = strcmp(o, "ok") == 0 ? "done" : "failed";
    return 0;
}

/* 0 when the caller may answer action ids: an admin, or the worker of the action's node.
 * Else -1 after answering 404 or 403. */
static int action_owned_or_respond(struct api_call *call, const char *ids)
{
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db, "SELECT node_id FROM actions WHERE id = $1", 1, p);
    long long node = db_ok(r) && PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (!node)
        http_problem(call->req, 404, "no action %s", ids);
    PQclear(r);
    return node ? nodes_owned_or_respond(call, node) : -1;
}

/* The action was finished before: 200 when with the same outcome, else 404 or 409. */
static void respond_finished(struct api_call *call, const char *ids, const char *state)
{
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db,
                          "SELECT a.state, " ACTION_JSON " FROM actions a"
                          " WHERE a.id = $1",
                          1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no action %s", ids);
    else if (strcmp(PQgetvalue(r, 0, 0), state) != 0)
        http_problem(call->req, 409, "action %s is already %s", ids, PQgetvalue(r, 0, 0));
    else
        api_respond_json(call, 200, text_json(r, 0, 1));
    PQclear(r);
}

/* A migrate to another node: that node starts the job from the checkpoint just written
 * (unless the job ended meanwhile, e.g. was cancelled while it checkpointed). The start's
 * spec names the migrate it follows, so that the move is timed from the migrate. */
static const char *const follow_migrate_sql =
    "INSERT INTO actions (node_id, job_id, kind, spec)"
    " SELECT (a.spec->'slots'->0->>'node_id')::bigint, a.job_id, 'start',"
    " a.spec || jsonb_build_object('follows', a.id)"
    " FROM actions a JOIN jobs j ON j.id = a.job_id WHERE a.id = $1 AND a.kind = 'migrate'"
    " AND a.state = 'done' AND (a.spec->'slots'->0->>'node_id')::bigint <> a.node_id"
    " AND j.state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')";

/* A batch change in place that failed (the job was not there, or checkpointing): the job
 * runs the batch it ran, unless a later change named another since. */
static const char *const batch_failed_sql =
    "UPDATE jobs j SET current_batch = (a.spec->>'from_batch')::bigint FROM actions a"
    " WHERE a.id = $1 AND a.kind = 'batch' AND a.state = 'failed' AND j.id = a.job_id"
    " AND j.current_batch = (a.spec->>'batch')::bigint AND (a.spec->>'from_batch')::bigint >= 1";

void actions_result(struct api_call *call)
{
    long long id;
    json_t *body;
    const char *state, *detail;
    char ids[24];
    if (api_id_or_respond(call, "action", &id) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    if (action_owned_or_respond(call, ids) == 0 &&
        result_body_or_respond(call, body, &state, &detail) == 0) {
        const char *p[] = {ids, state, detail};
        PGresult *r = NULL;
        int ok = db_command(call->db, "BEGIN") == 0;
        if (ok)
            r = db_exec(call->db,
                        "UPDATE actions a SET state = $2, finished_at = now(),"
                        " outcome_detail = $3 WHERE a.id = $1 AND a.state = 'pending'"
                        " RETURNING " ACTION_JSON,
                        3, p);
        int failed = ok && db_ok(r) && PQntuples(r) == 1 && strcmp(state, "failed") == 0;
        ok = ok && db_ok(r) && db_command_params(call->db, follow_migrate_sql, 1, p) == 0 &&
             (!failed || live_slice_suspend_failed(call->db, ids) == 0) &&
             (!failed || db_command_params(call->db, batch_failed_sql, 1, p) == 0) &&
             db_command(call->db, "COMMIT") == 0;
        if (ok && failed)
            live_wake_signal();
        if (!ok)
            api_db_error(call, r);
        else if (PQntuples(r) == 0)
            respond_finished(call, ids, state);
        else
            api_respond_json(call, 200, text_json(r, 0, 0));
        if (ok && PQntuples(r) == 1)
            log_info("action %s: %s (%s)", ids, state, detail);
        PQclear(r);
    }
    json_decref(body);
}

/* In a transaction: locks the job, checks the caller may act on it and that ev is legal now.
 * Returns 0, or -1 after answering. */
static int job_check_or_respond(struct api_call *call, const char *ids, enum job_event ev)
{
    const char *p[] = {ids};
    PGresult *r =
        db_exec(call->db, "SELECT state, user_id FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
    enum job_state from, to;
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %s", ids);
    else if (call->who.role != AUTH_ADMIN && strtoll(PQgetvalue(r, 0, 1), NULL, 10) != call->who.id)
        http_problem(call->req, 403, "job %s belongs to another user", ids);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &from) < 0 || job_state_next(from, ev, &to) < 0)
        http_problem(call->req, 409, "cannot %s job %s in state %s", job_event_name(ev), ids,
                     PQgetvalue(r, 0, 0));
    else
        rc = 0;
    PQclear(r);
    return rc;
}

/* 0 unless the scheduler suspended job ids to time-slice its GPUs: then a person's resume
 * would run it outside any allocation, and it answers 409 saying how to have it sooner. */
static int sliced_or_respond(struct api_call *call, const char *ids)
{
    int sliced = live_slice_by_scheduler(call->db, ids);
    if (sliced < 0)
        api_db_error(call, NULL);
    else if (sliced)
        http_problem(call->req, 409,
                     "job %s was suspended by the scheduler to time-slice the GPUs (policy"
                     " gandiva): it holds no GPU, and the scheduler resumes it in its turn;"
                     " to have it resumed sooner, raise its priority (PATCH"
                     " /api/v1/jobs/%s/priority), which the next round serves first",
                     ids, ids);
    return sliced ? -1 : 0;
}

static void manual_action(struct api_call *call, const char *kind, enum job_event ev)
{
    long long id;
    char ids[24];
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    if (db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
        return;
    }
    if (job_check_or_respond(call, ids, ev) < 0 ||
        (ev == JOB_EV_RESUME && sliced_or_respond(call, ids) < 0))
        return;
    const char *p[] = {ids, kind};
    PGresult *r = db_exec(call->db,
                          "WITH a AS (INSERT INTO actions (node_id, job_id, kind)"
                          " SELECT n, $1, $2 FROM (SELECT " LAUNCH_NODE_SQL " AS n) x"
                          " WHERE n IS NOT NULL RETURNING *) SELECT " ACTION_JSON " FROM a",
                          2, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        http_problem(call->req, 409, "job %s was never launched on a node", ids);
    } else if (db_command(call->db, "COMMIT") < 0) {
        api_db_error(call, NULL);
    } else {
        log_info("job %s: %s asked by %s", ids, kind, call->who.name);
        api_respond_json(call, 202, text_json(r, 0, 0));
    }
    PQclear(r);
}

void actions_suspend(struct api_call *call)
{
    manual_action(call, "suspend", JOB_EV_SUSPEND);
}

void actions_resume(struct api_call *call)
{
    manual_action(call, "resume", JOB_EV_RESUME);
}

static int cancel_job(PGconn *db, long long job_id)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", job_id);
    const char *p[] = {ids};
    if (db_command_params(db,
                          "UPDATE actions SET state = 'superseded', finished_at = now()"
                          " WHERE job_id = $1 AND state = 'pending' AND delivered_at IS NULL",
                          1, p) < 0)
        return -1;
    return db_command_params(db,
                             "INSERT INTO actions (node_id, job_id, kind, spec)"
                             " SELECT n, $1, 'cancel', '{\"grace_s\": 10}' FROM"
                             " (SELECT " LAUNCH_NODE_SQL " AS n) x WHERE n IS NOT NULL",
                             1, p);
}

/* A worker may start a remote daemon only on a node of the job's latest launch (its hosts);
 * an admin anywhere. Returns 0, or -1 after answering 403 (or 5xx). */
static int remote_target_or_respond(struct api_call *call, const char *ids, const char *node)
{
    if (call->who.role == AUTH_ADMIN)
        return 0;
    const char *p[] = {ids, node};
    PGresult *r = db_exec(call->db,
                          "SELECT EXISTS (SELECT 1 FROM nodes n, (SELECT l.spec FROM actions l"
                          " WHERE l.job_id = $1 AND l.kind IN ('start', 'resize', 'migrate')"
                          " AND l.state <> 'superseded' ORDER BY l.id DESC LIMIT 1) l,"
                          " jsonb_array_elements(CASE WHEN jsonb_typeof(l.spec->'slots') ="
                          " 'array' THEN l.spec->'slots' ELSE '[]' END) s WHERE n.name = $2"
                          " AND n.id = (s->>'node_id')::bigint)",
                          2, p);
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (strcmp(PQgetvalue(r, 0, 0), "t") != 0)
        http_problem(call->req, 403, "node '%.200s' is not a host of job %s", node, ids);
    else
        rc = 0;
    PQclear(r);
    return rc;
}

void actions_remote(struct api_call *call)
{
    long long id;
    json_t *body;
    char ids[24];
    if (api_id_or_respond(call, "job", &id) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *node = json_string_value(json_object_get(body, "node"));
    const char *cmd = json_string_value(json_object_get(body, "command"));
    if (!node || !cmd || !*cmd || strlen(cmd) > 65536) {
        http_problem(call->req, 400, "expected {\"node\": NAME, \"command\": TEXT}");
        json_decref(body);
        return;
    }
    if (reports_claim_or_respond(call, id, REPORTS_RUNS) < 0 ||
        remote_target_or_respond(call, ids, node) < 0) {
        json_decref(body);
        return;
    }
    json_t *spec = json_pack("{s:s}", "command", cmd);
    char *stext = json_dumps(spec, JSON_COMPACT);
    const char *p[] = {ids, node, stext ? stext : "{}"};
    PGresult *r = db_exec(call->db,
                          "WITH a AS (INSERT INTO actions (node_id, job_id, kind, spec)"
                          " SELECT n.id, $1, 'exec', $3::jsonb FROM nodes n WHERE n.name = $2"
                          " RETURNING *) SELECT " ACTION_JSON " FROM a",
                          3, p);
    if (!db_ok(r) && strcmp(db_sqlstate(r), "23503") == 0)
        http_problem(call->req, 404, "no job %s", ids);
    else if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no node named '%.200s'", node);
    else
        api_respond_json(call, 201, text_json(r, 0, 0));
    PQclear(r);
    free(stext);
    json_decref(spec);
    json_decref(body);
}

void actions_cancel(struct api_call *call)
{
    long long id;
    jobs_cancel(call);
    if (http_req_status(call->req) != 200 || api_id_or_respond(call, "job", &id) < 0)
        return;
    if (cancel_job(call->db, id) < 0)
        log_error("job %lld: cancelled, but its cancel action could not be written", id);
}
