/* nodes: the /api/v1/nodes handlers: registration, the heartbeat with its reconciliation of
 * running jobs (requeueing those unseen or on a lost node), list and get. */
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

#define NODE_JSON                                                                                  \
    "json_build_object('id', n.id, 'name', n.name, 'cpus', n.cpus, 'memory_bytes',"                \
    " n.memory_bytes, 'state', n.state, 'simulated', n.simulated,"                                 \
    " 'registered_at', " DB_TS("n.registered_at") ","                                              \
    " 'last_heartbeat_at', " DB_TS("n.last_heartbeat_at") ","                                      \
    " 'labels', n.labels,"                                                                       \
    " 'drain', CASE WHEN n.drained_at IS NULL THEN NULL ELSE json_build_object('reason',"          \
    " n.drain_reason, 'since', " DB_TS("n.drained_at") ", 'by', (SELECT u.name FROM users u"       \
    " WHERE u.id = n.drained_by), 'gpus', to_json(n.drain_gpus), 'evacuate', n.drain_evacuate)"   \
    " END,"                                                                                        \
    " 'gpus', COALESCE((SELECT json_agg(json_build_object('index', g.idx, 'model', g.model,"       \
    " 'memory_bytes', g.memory_bytes, 'island', g.island, 'numa', g.numa, 'fault', g.fault,"       \
    " 'fault_since', "                                                                             \
    DB_TS("g.fault_since") ") ORDER BY g.idx) FROM node_gpus g WHERE g.node_id = n.id),"          \
    " '[]'))::text"

static json_t *row_json(const PGresult *r, int row)
{
    json_t *j = json_loads(PQgetvalue(r, row, 0), 0, NULL);
    return j ? j : json_null();
}

void nodes_respond(struct api_call *call, const char *id, unsigned status)
{
    const char *p[] = {id};
    PGresult *r = db_exec(call->db, "SELECT " NODE_JSON " FROM nodes n WHERE n.id = $1", 1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no node %s", id);
    else
        api_respond_json(call, status, row_json(r, 0));
    PQclear(r);
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
                               "INSERT INTO node_gpus (node_id, idx, model, memory_bytes,"
                               " island, numa) SELECT $1, g.\"index\", g.model, g.memory_bytes,"
                               " g.island, g.numa FROM jsonb_to_recordset($2::jsonb) AS"
                               " g(\"index\" int, model text, memory_bytes bigint, island int,"
                               " numa int)",
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
        nodes_respond(call, id, created ? 201 : 200);
        live_wake_signal();
    }
    json_decref(body);
}

int nodes_owned_or_respond(struct api_call *call, long long node)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", node);
    const char *p[] = {ids};
    static const struct db_stmt owner = {
        "nodes_owner", "SELECT COALESCE(registered_by, 0) FROM nodes WHERE id = $1", 1, 0};
    PGresult *r = db_exec_stmt(call->db, &owner, p);
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
 * (an empty body, no "running"). Returns 0; 1 for a "running" not so (answered by the
 * caller, after the check of who may beat, as before); or -1 after an answer (400 for a
 * body that is not JSON, now before that check; 500). */
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
        return 1;
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

/* Of job_unseen u joined with jobs j: a job of node $1 missing from its heartbeats for longer
 * than the node timeout, launched, with no action in flight (lost). */
#define LOST_SQL                                                                                   \
    "u.node_id = $1 AND j.state IN " LAUNCHED_STATES " AND u.since < now() - make_interval(secs"  \
    " => (SELECT node_timeout_s FROM scheduler_config WHERE id = 1)) AND NOT EXISTS (SELECT 1"     \
    " FROM actions a WHERE a.job_id = j.id AND a.state = 'pending')"

/* Jobs of the node missing from its heartbeats for longer than the node timeout, with no
 * action in flight: back to the queue, from their last checkpoint. Returns how many, or -1. */
static int requeue_unseen(PGconn *db, const char *node)
{
    const char *p[] = {node};
    PGresult *r = db_exec(db,
                          "SELECT j.id, j.state, n.name, round(extract(epoch FROM now() -"
                          " u.since)::numeric, 1) FROM job_unseen u JOIN jobs j ON j.id = u.job_id"
                          " JOIN nodes n ON n.id = u.node_id WHERE " LOST_SQL
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
            live_requeue_job(db, id, from, detail) < 0 ||
            db_command_params(db, "DELETE FROM job_unseen WHERE job_id = $1", 1, q) < 0)
            n = -1;
        else
            n++;
    }
    PQclear(r);
    return n;
}

/* The reported jobs ($2) that node $1 must no longer run: none of its jobs (launched, with
 * its latest start, resize or migrate on it or naming it first slot) and none with an action
 * pending on it. A job requeued while its node was silent (DOWN, or its worker lost it) and
 * started elsewhere, or ended meanwhile, is such a stale copy: its reports are refused (403,
 * "Who may report"), and it would hold the host's GPUs and cores for ever. */
#define STALE_SQL                                                                                  \
    "SELECT DISTINCT r.id FROM unnest($2::bigint[]) AS r(id) WHERE NOT EXISTS (SELECT 1"           \
    " FROM jobs j, LATERAL (SELECT l.node_id, (l.spec->'slots'->0->>'node_id')::bigint AS"         \
    " first FROM actions l WHERE l.job_id = j.id AND l.kind IN ('start', 'resize', 'migrate')"     \
    " AND l.state <> 'superseded' ORDER BY l.id DESC LIMIT 1) l WHERE j.id = r.id"                 \
    " AND j.state IN " LAUNCHED_STATES " AND (l.node_id = $1 OR l.first = $1))"                    \
    " AND NOT EXISTS (SELECT 1 FROM actions a WHERE a.job_id = r.id AND a.node_id = $1"            \
    " AND a.state = 'pending')"

/* A heartbeat in one statement (one round trip after the token's: at 512 nodes on a loaded
 * head node each round trip is a wait for a CPU, and this was eight). $1 the node, $2 the
 * jobs its worker runs (bigint[]; NULL: it did not say, nothing is reconciled), $3 the worker
 * that must own the node (0: any caller). One row, or none when there is no such node or it
 * is another's: the node after the beat (NODE_JSON), how many of its jobs are lost (missing
 * from its heartbeats for longer than the node timeout with no action in flight: requeued
 * after, by requeue_unseen(), which checks them again), and the stale jobs ($2's, STALE_SQL)
 * as a JSON array (NULL without $2).
 * job_unseen remembers since when each of the node's jobs has been missing; the jobs
 * reported again or no longer expected there are forgotten. Every part reads the table as
 * it was before the statement (one snapshot), so that the lost ones are counted among the
 * jobs still the node's and not reported, which are the rows the statement neither deletes
 * nor inserts; the rows it deletes (this node's, of jobs reported or not its own) and the
 * rows it inserts or updates (jobs of the node not reported) are never the same.
 * Prepared, and run with its generic plan (db_stmt.generic): planned for each call, as
 * PostgreSQL would (its generic estimate counts ten jobs in an unknown running list, the
 * custom one the list's own), 300 heartbeats took 1.35-2.18 s of a scratch database of 512
 * nodes and 5,000 jobs; with the generic plan, which finds every table by its indexes as the
 * custom ones do, 0.25-0.46 s.
 * Its transaction commits without waiting for the WAL's flush (synchronous_commit off for
 * it alone, set in its last column: a local setting is read at the commit and undone after
 * it). What it writes may be lost if PostgreSQL crashes in the next few hundred milliseconds,
 * and nothing is lost by that: the node's next heartbeat writes its time and state again,
 * and a job's absence is timed from then (a job lost that way goes back to the queue one
 * node timeout later). Its answer only reads what was committed before. At 512 nodes
 * (make bench-scale) the heartbeats were a quarter of the head node's WAL flushes (252 -> 186
 * a second), each waiting ~1.2 ms for the disk: a heartbeat's p50 3.3 -> 2.0-2.3 ms (docs/
 * benchmarks-history.md, "Heartbeats that do not wait for the disk"). */
static const struct db_stmt beat_stmt = {
    "nodes_beat",
    "WITH node AS (UPDATE nodes n SET last_heartbeat_at = now(), state = 'UP' WHERE n.id = $1"
    " AND ($3::bigint = 0 OR n.registered_by = $3::bigint) RETURNING " NODE_JSON " AS json),"
    " " NODE_JOBS_SQL ","
    " gone AS (DELETE FROM job_unseen u WHERE $2::bigint[] IS NOT NULL"
    " AND EXISTS (SELECT 1 FROM node) AND u.node_id = $1 AND (u.job_id = ANY($2::bigint[])"
    " OR u.job_id NOT IN (SELECT id FROM mine))),"
    " noted AS (INSERT INTO job_unseen (job_id, node_id) SELECT id, $1 FROM mine"
    " WHERE $2::bigint[] IS NOT NULL AND EXISTS (SELECT 1 FROM node)"
    " AND id <> ALL($2::bigint[]) ON CONFLICT (job_id) DO UPDATE"
    " SET node_id = EXCLUDED.node_id, since = CASE WHEN"
    " job_unseen.node_id = EXCLUDED.node_id THEN job_unseen.since ELSE now() END)"
    " SELECT node.json,"
    " (SELECT count(*) FROM job_unseen u JOIN jobs j ON j.id = u.job_id WHERE $2::bigint[]"
    " IS NOT NULL AND u.job_id IN (SELECT id FROM mine) AND u.job_id <> ALL($2::bigint[])"
    " AND " LOST_SQL "),"
    " CASE WHEN $2::bigint[] IS NOT NULL THEN (SELECT COALESCE(json_agg(s.id ORDER BY s.id),"
    " '[]') FROM (" STALE_SQL ") s)::text END,"
    " set_config('synchronous_commit', 'off', true)"
    " FROM node",
    3, 1};

/* The lost jobs of the node, in their own transaction (requeue_unseen checks and locks
 * them). Returns how many went back to the queue, or -1. */
static int requeue_lost(PGconn *db, const char *node)
{
    if (db_command(db, "BEGIN") < 0)
        return -1;
    int n = requeue_unseen(db, node);
    if (n < 0 || db_command(db, "COMMIT") < 0) {
        db_command(db, "ROLLBACK");
        return -1;
    }
    return n;
}

/* The stale jobs of a heartbeat's answer (beat_stmt's third column) as a JSON array (new),
 * each logged; NULL when the worker did not say what it runs. */
static json_t *stale_jobs(const PGresult *r, const char *node)
{
    if (PQgetisnull(r, 0, 2))
        return NULL;
    json_t *ids = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
    for (size_t i = 0; i < json_array_size(ids); i++)
        log_warn("node %s still runs job %lld, which is no longer its own: told to stop it", node,
                 (long long)json_integer_value(json_array_get(ids, i)));
    return ids ? ids : json_array();
}

void nodes_heartbeat(struct api_call *call)
{
    long long id;
    char *reported = NULL;
    if (api_id_or_respond(call, "node", &id) < 0)
        return;
    int body = running_or_respond(call, &reported);
    if (body < 0 || (body > 0 && nodes_owned_or_respond(call, id) < 0))
        return;
    if (body > 0) {
        http_problem(call->req, 400,
                     "running: expected an array of at most %d {\"job_id\": N >= 1}",
                     NODES_RUNNING_MAX);
        return;
    }
    char ids[24], owner[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    snprintf(owner, sizeof(owner), "%lld", call->who.role == AUTH_WORKER ? call->who.id : 0LL);
    const char *p[] = {ids, reported, owner};
    PGresult *r = db_exec_stmt(call->db, &beat_stmt, p);
    int lost = 0;
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        if (nodes_owned_or_respond(call, id) == 0) /* registered meanwhile */
            http_problem(call->req, 404, "no node %lld", id);
    } else if ((lost = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10)) > 0 &&
               (lost = requeue_lost(call->db, ids)) < 0) {
        api_db_error(call, NULL);
    } else {
        if (lost > 0)
            live_wake_signal();
        json_t *node = row_json(r, 0), *stop = stale_jobs(r, ids);
        if (stop && json_is_object(node))
            json_object_set(node, "stop", stop);
        json_decref(stop);
        api_respond_json(call, 200, node);
    }
    PQclear(r);
    free(reported);
}

void nodes_missing_or_field(struct api_call *call, const char *id, const char *field,
                            const char *what)
{
    const char *p[] = {id};
    PGresult *r = db_exec(call->db, "SELECT 1 FROM nodes WHERE id = $1", 1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) == 0)
        http_problem(call->req, 404, "no node %s", id);
    else
        api_field_error(call, field, what);
    PQclear(r);
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

/* One node, with its latest GPU faults (node_health.c). */
static const char *const node_get_sql =
    "SELECT " NODE_JSON ", " NODE_FAULTS_JSON " FROM nodes n WHERE n.id = $1";

void nodes_get(struct api_call *call)
{
    long long id;
    char ids[24];
    if (api_id_or_respond(call, "node", &id) < 0)
        return;
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db, node_get_sql, 1, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        http_problem(call->req, 404, "no node %s", ids);
    } else {
        json_t *node = row_json(r, 0), *faults = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
        json_object_set_new(node, "faults", faults ? faults : json_array());
        api_respond_json(call, 200, node);
    }
    PQclear(r);
}
