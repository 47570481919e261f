#include "nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/etag.h"
#include "http/http.h"
#include "http/problem.h"
#include "job_state.h"
#include "live/live.h"
#include "log.h"
#include "spec/nodespec.h"
#include "store/db.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define NODE_JSON                                                                                  \
    "json_build_object('id', n.id, 'name', n.name, 'cpus', n.cpus, 'memory_bytes',"                \
    " n.memory_bytes, 'state', n.state, 'simulated', n.simulated, 'registered_at', " TS(           \
        "n.registered_at") ","                                                                     \
                           " 'last_heartbeat_at', " TS(                                            \
                               "n.last_heartbeat_at") ", 'gpus', COALESCE((SELECT"                 \
                                                      " json_agg(json_build_object('index', "      \
                                                      "g.idx, 'model', g.model, 'memory_bytes',"   \
                                                      " g.memory_bytes) ORDER BY g.idx) FROM "     \
                                                      "node_gpus g WHERE g.node_id = n.id), "      \
                                                      "'[]'))::text"

static json_t *row_json(const PGresult *r, int row)
{
    json_t *j = json_loads(PQgetvalue(r, row, 0), 0, NULL);
    return j ? j : json_null();
}

/* Answers the node; with stop (stolen, may be NULL) as its member "stop". */
static void respond_node_with(struct api_call *call, const char *id, unsigned status, json_t *stop)
{
    const char *p[] = {id};
    PGresult *r = db_exec(call->db, "SELECT " NODE_JSON " FROM nodes n WHERE n.id = $1", 1, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        http_problem(call->req, 404, "no node %s", id);
    } else {
        json_t *node = row_json(r, 0);
        if (stop && json_is_object(node))
            json_object_set(node, "stop", stop);
        api_respond_json(call, status, node);
    }
    json_decref(stop);
    PQclear(r);
}

static void respond_node(struct api_call *call, const char *id, unsigned status)
{
    respond_node_with(call, id, status, NULL);
}

/* In a transaction: upserts the node, replaces its GPUs. Fills id; *created 1 when new.
 * A worker may update only a node it registered itself, or a DOWN one, which becomes its
 * own (a host reinstalled with a new token); an admin any. -1 with *created -1 when the name
 * belongs to another. */
static int store_node(struct api_call *call, const json_t *body, char *id, size_t idlen,
                      int *created)
{
    char cpus[24], mem[24], by[24];
    snprintf(cpus, sizeof(cpus), "%lld",
             (long long)json_integer_value(json_object_get(body, "cpus")));
    snprintf(mem, sizeof(mem), "%lld",
             (long long)json_integer_value(json_object_get(body, "memory_bytes")));
    snprintf(by, sizeof(by), "%lld", call->who.id);
    const char *p[] = {json_string_value(json_object_get(body, "name")),
                       cpus,
                       mem,
                       by,
                       json_is_true(json_object_get(body, "simulated")) ? "true" : "false",
                       call->who.role == AUTH_ADMIN ? "true" : "false"};
    PGresult *r = db_exec(call->db,
                          "INSERT INTO nodes (name, cpus, memory_bytes, registered_by, simulated)"
                          " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET"
                          " cpus = EXCLUDED.cpus, memory_bytes = EXCLUDED.memory_bytes,"
                          " simulated = EXCLUDED.simulated,"
                          " state = 'UP', updated_at = now(), last_heartbeat_at = now(),"
                          " registered_by = CASE WHEN nodes.state = 'DOWN' AND NOT $6 THEN"
                          " EXCLUDED.registered_by ELSE nodes.registered_by END"
                          " WHERE nodes.registered_by IS NOT DISTINCT FROM $4::bigint OR $6"
                          " OR nodes.state = 'DOWN'"
                          " RETURNING id, xmax = 0",
                          6, p);
    int ok = db_ok(r) && PQntuples(r) == 1;
    if (ok) {
        snprintf(id, idlen, "%s", PQgetvalue(r, 0, 0));
        *created = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    } else if (db_ok(r)) {
        *created = -1; /* the name is another worker's node */
    }
    PQclear(r);
    const json_t *gpus = json_object_get(body, "gpus");
    char *gtext = gpus ? json_dumps(gpus, JSON_COMPACT) : NULL;
    const char *g[] = {id, gtext ? gtext : "[]"};
    if (ok)
        ok = db_command_params(call->db, "DELETE FROM node_gpus WHERE node_id = $1", 1, g) == 0 &&
             db_command_params(call->db,
                               "INSERT INTO node_gpus (node_id, idx, model, memory_bytes)"
                               " SELECT $1, g.\"index\", g.model, g.memory_bytes FROM"
                               " jsonb_to_recordset($2::jsonb) AS g(\"index\" int,"
                               " model text, memory_bytes bigint)",
                               2, g) == 0;
    free(gtext);
    return ok ? 0 : -1;
}

void nodes_register(struct api_call *call)
{
    json_t *body, *errors;
    char detail[512], id[24] = "";
    int created = 0;
    if (api_body_or_respond(call, &body) < 0)
        return;
    if (nodespec_check(body, &errors, detail, sizeof(detail)) < 0) {
        http_send_problem(call->req, 400, errors, NULL, "%s", detail);
    } else if (db_command(call->db, "BEGIN") < 0 ||
               store_node(call, body, id, sizeof(id), &created) < 0 ||
               db_command(call->db, "COMMIT") < 0) {
        db_command(call->db, "ROLLBACK");
        if (created < 0)
            http_problem(call->req, 403, "node '%.253s' was registered by another user",
                         json_string_value(json_object_get(body, "name")));
        else
            api_db_error(call, NULL);
    } else {
        log_info("node %s: %s %s (by %s)", id, json_string_value(json_object_get(body, "name")),
                 created ? "registered" : "re-registered", call->who.name);
        respond_node(call, id, created ? 201 : 200);
        sched_wake_signal();
    }
    json_decref(body);
}

int nodes_owned_or_respond(struct api_call *call, long long node)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", node);
    const char *p[] = {ids};
    PGresult *r =
        db_exec(call->db, "SELECT COALESCE(registered_by, 0) FROM nodes WHERE id = $1", 1, p);
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no node %lld", node);
    else if (call->who.role == AUTH_WORKER &&
             strtoll(PQgetvalue(r, 0, 0), NULL, 10) != call->who.id)
        http_problem(call->req, 403, "node %lld is not the node of worker %s", node,
                     call->who.name);
    else
        rc = 0;
    PQclear(r);
    return rc;
}

/* The heartbeat's optional body: {"running": [{"job_id": N, ...}]}. Fills *ids with the
 * reported jobs as a bigint[] literal (new, free()), or NULL when the body does not say
 * (an empty body, no "running"). Returns 0, or -1 after a 400. */
static int running_or_respond(struct api_call *call, char **ids)
{
    size_t len;
    json_t *body = NULL;
    *ids = NULL;
    http_req_body(call->req, &len);
    if (len == 0)
        return 0;
    if (api_body_or_respond(call, &body) < 0)
        return -1;
    const json_t *run = json_object_get(body, "running");
    size_t n = json_array_size(run), o = 0;
    int bad = run && (!json_is_array(run) || n > NODES_RUNNING_MAX);
    char *out = run && !bad ? malloc(n * 24 + 3) : NULL;
    for (size_t i = 0; out && i < n && !bad; i++) {
        const json_t *job = json_object_get(json_array_get(run, i), "job_id");
        bad = !json_is_integer(job) || json_integer_value(job) < 1;
        o += (size_t)sprintf(out + o, "%s%lld", i ? "," : "{",
                             bad ? 0 : (long long)json_integer_value(job));
    }
    json_decref(body);
    if (bad) {
        free(out);
        http_problem(call->req, 400,
                     "running: expected an array of at most %d {\"job_id\": N >= 1}",
                     NODES_RUNNING_MAX);
        return -1;
    }
    if (run && !out) {
        http_problem(call->req, 500, "out of memory");
        return -1;
    }
    if (out)
        snprintf(out + o, 3, "%s}", n ? "" : "{");
    *ids = out;
    return 0;
}

/* The states of a job whose mpirun a worker should have (unless an action is on its way). */
#define LAUNCHED_STATES "('STARTING', 'RUNNING', 'SUSPENDED', 'RESIZING', 'MIGRATING')"

/* The jobs the server believes run on node $1: launched, and launched there last (the first
 * slot of its latest start, resize or migrate). Looked for among the jobs of the node's own
 * placement actions (sql/024's indexes), which hold every such job's latest one. */
#define NODE_JOBS_SQL                                                                              \
    "mine AS (SELECT j.id FROM jobs j WHERE j.state IN " LAUNCHED_STATES " AND"                    \
    " j.id IN (SELECT c.job_id FROM actions c WHERE c.kind IN ('start', 'resize', 'migrate')"      \
    " AND c.state <> 'superseded' AND (c.node_id = $1::bigint"                                     \
    " OR (c.spec->'slots'->0->>'node_id')::bigint = $1::bigint)) AND"                              \
    " (SELECT COALESCE((l.spec->'slots'->0->>'node_id')::bigint, l.node_id) FROM actions l"        \
    " WHERE l.job_id = j.id AND l.kind IN ('start', 'resize', 'migrate')"                          \
    " AND l.state <> 'superseded' ORDER BY l.id DESC LIMIT 1) = $1)"

/* Remembers since when each of the node's jobs has been missing from its heartbeats; forgets
 * the jobs reported again or no longer expected there. */
static int note_unseen(PGconn *db, const char *node, const char *reported)
{
    const char *p[] = {node, reported};
    return db_command_params(db,
                             "WITH " NODE_JOBS_SQL " DELETE FROM job_unseen u"
                             " WHERE u.node_id = $1 AND (u.job_id = ANY($2::bigint[])"
                             " OR u.job_id NOT IN (SELECT id FROM mine))",
                             2, p) < 0 ||
                   db_command_params(db,
                                     "WITH " NODE_JOBS_SQL " INSERT INTO job_unseen (job_id,"
                                     " node_id) SELECT id, $1 FROM mine"
                                     " WHERE id <> ALL($2::bigint[]) ON CONFLICT (job_id) DO"
                                     " UPDATE SET node_id = EXCLUDED.node_id, since = CASE WHEN"
                                     " job_unseen.node_id = EXCLUDED.node_id THEN"
                                     " job_unseen.since ELSE now() END",
                                     2, p) < 0
               ? -1
               : 0;
}

/* Jobs of the node missing from its heartbeats for longer than the node timeout, with no
 * action in flight: back to the queue, from their last checkpoint. Returns how many, or -1. */
static int requeue_unseen(PGconn *db, const char *node)
{
    const char *p[] = {node};
    PGresult *r = db_exec(db,
                          "SELECT j.id, j.state, n.name, round(extract(epoch FROM now() -"
                          " u.since)::numeric, 1) FROM job_unseen u JOIN jobs j ON j.id = u.job_id"
                          " JOIN nodes n ON n.id = u.node_id WHERE u.node_id = $1"
                          " AND j.state IN " LAUNCHED_STATES " AND u.since < now() -"
                          " make_interval(secs => (SELECT node_timeout_s FROM scheduler_config"
                          " WHERE id = 1)) AND NOT EXISTS (SELECT 1 FROM actions a"
                          " WHERE a.job_id = j.id AND a.state = 'pending')"
                          " ORDER BY j.id FOR UPDATE OF j",
                          1, p);
    int n = db_ok(r) ? 0 : -1;
    for (int i = 0; n >= 0 && i < PQntuples(r); i++) {
        long long id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        enum job_state from;
        char detail[400], ids[24];
        snprintf(detail, sizeof(detail),
                 "lost: the worker of node %s has not reported it for %s s: back to the queue",
                 PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
        snprintf(ids, sizeof(ids), "%lld", id);
        const char *q[] = {ids};
        if (job_state_parse(PQgetvalue(r, i, 1), &from) < 0 ||
            sched_requeue_job(db, id, from, detail) < 0 ||
            db_command_params(db, "DELETE FROM job_unseen WHERE job_id = $1", 1, q) < 0)
            n = -1;
        else
            n++;
    }
    PQclear(r);
    return n;
}

/* The reported jobs that node $1 must no longer run: none of its jobs (launched, with its
 * latest start, resize or migrate on it or naming it first slot) and none with an action
 * pending on it. A job requeued while its node was silent (DOWN, or its worker lost it) and
 * started elsewhere, or ended meanwhile, is such a stale copy: its reports are refused (403,
 * "Who may report"), and it would hold the host's GPUs and cores for ever. */
static const char *const stale_sql =
    "SELECT DISTINCT r.id FROM unnest($2::bigint[]) AS r(id) WHERE NOT EXISTS (SELECT 1"
    " FROM jobs j, LATERAL (SELECT l.node_id, (l.spec->'slots'->0->>'node_id')::bigint AS"
    " first FROM actions l WHERE l.job_id = j.id AND l.kind IN ('start', 'resize', 'migrate')"
    " AND l.state <> 'superseded' ORDER BY l.id DESC LIMIT 1) l WHERE j.id = r.id"
    " AND j.state IN " LAUNCHED_STATES " AND (l.node_id = $1 OR l.first = $1))"
    " AND NOT EXISTS (SELECT 1 FROM actions a WHERE a.job_id = r.id AND a.node_id = $1"
    " AND a.state = 'pending') ORDER BY r.id";

/* The ids of stale_sql as a JSON array (new), or NULL on a database error. */
static json_t *stale_jobs(PGconn *db, const char *node, const char *reported)
{
    const char *p[] = {node, reported};
    PGresult *r = db_exec(db, stale_sql, 2, p);
    json_t *ids = db_ok(r) ? json_array() : NULL;
    for (int i = 0; ids && i < PQntuples(r); i++) {
        long long id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        log_warn("node %s still runs job %lld, which is no longer its own: told to stop it", node,
                 id);
        json_array_append_new(ids, json_integer(id));
    }
    PQclear(r);
    return ids;
}

/* In a transaction: the heartbeat itself, then (when the worker said what it runs) the
 * reconciliation. Returns the jobs requeued, -1 on a database error, -2 for no such node. */
static int beat(PGconn *db, const char *node, const char *reported)
{
    const char *p[] = {node};
    PGresult *r = db_exec(db,
                          "UPDATE nodes SET last_heartbeat_at = now(), state = 'UP'"
                          " WHERE id = $1 RETURNING state",
                          1, p);
    int rc = !db_ok(r) ? -1 : PQntuples(r) != 1 ? -2 : 0;
    PQclear(r);
    if (rc == 0 && reported && (rc = note_unseen(db, node, reported)) == 0)
        rc = requeue_unseen(db, node);
    return rc;
}

void nodes_heartbeat(struct api_call *call)
{
    long long id;
    char *reported = NULL;
    if (api_id_or_respond(call, "node", &id) < 0 || nodes_owned_or_respond(call, id) < 0 ||
        running_or_respond(call, &reported) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    int rc = db_command(call->db, "BEGIN") < 0 ? -1 : beat(call->db, ids, reported);
    json_t *stop = rc >= 0 && reported ? stale_jobs(call->db, ids, reported) : NULL;
    if (rc < 0 || (reported && !stop) || db_command(call->db, "COMMIT") < 0) {
        db_command(call->db, "ROLLBACK");
        json_decref(stop);
        if (rc == -2)
            http_problem(call->req, 404, "no node %lld", id);
        else
            api_db_error(call, NULL);
    } else {
        if (rc > 0)
            sched_wake_signal();
        respond_node_with(call, ids, 200, stop);
    }
    free(reported);
}

void nodes_list(struct api_call *call)
{
    PGresult *r = db_exec(call->db, "SELECT " NODE_JSON " FROM nodes n ORDER BY n.id", 0, NULL);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else {
        json_t *items = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            json_array_append_new(items, row_json(r, i));
        etag_respond_json(call->req, json_pack("{s:o}", "items", items));
    }
    PQclear(r);
}

void nodes_get(struct api_call *call)
{
    long long id;
    char ids[24];
    if (api_id_or_respond(call, "node", &id) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    respond_node(call, ids, 200);
}
