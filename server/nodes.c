#include "nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "db.h"
#include "etag.h"
#include "log.h"
#include "nodespec.h"
#include "problem.h"
#include "sched_wake.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define NODE_JSON                                                                                  \
    "json_build_object('id', n.id, 'name', n.name, 'cpus', n.cpus, 'memory_bytes',"                \
    " n.memory_bytes, 'state', n.state, 'simulated', n.simulated, 'registered_at', " TS(                                     \
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

static void respond_node(struct api_call *call, const char *id, unsigned status)
{
    const char *p[] = {id};
    PGresult *r = db_exec(call->db, "SELECT " NODE_JSON " FROM nodes n WHERE n.id = $1", 1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        problem_respond(call->req, 404, "no node %s", id);
    else
        api_respond_json(call, status, row_json(r, 0));
    PQclear(r);
}

/* In a transaction: upserts the node, replaces its GPUs. Fills id; *created 1 when new. */
static int store_node(struct api_call *call, const json_t *body, char *id, size_t idlen,
                      int *created)
{
    char cpus[24], mem[24], by[24];
    snprintf(cpus, sizeof(cpus), "%lld",
             (long long)json_integer_value(json_object_get(body, "cpus")));
    snprintf(mem, sizeof(mem), "%lld",
             (long long)json_integer_value(json_object_get(body, "memory_bytes")));
    snprintf(by, sizeof(by), "%lld", call->who.id);
    const char *p[] = {json_string_value(json_object_get(body, "name")), cpus, mem, by,
                       json_is_true(json_object_get(body, "simulated")) ? "true" : "false"};
    PGresult *r = db_exec(call->db,
                          "INSERT INTO nodes (name, cpus, memory_bytes, registered_by, simulated)"
                          " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET"
                          " cpus = EXCLUDED.cpus, memory_bytes = EXCLUDED.memory_bytes,"
                          " simulated = EXCLUDED.simulated,"
                          " state = 'UP', updated_at = now(), last_heartbeat_at = now()"
                          " RETURNING id, xmax = 0",
                          5, p);
    int ok = db_ok(r) && PQntuples(r) == 1;
    if (ok) {
        snprintf(id, idlen, "%s", PQgetvalue(r, 0, 0));
        *created = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
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
        problem_send(call->req, 400, errors, NULL, "%s", detail);
    } else if (db_command(call->db, "BEGIN") < 0 ||
               store_node(call, body, id, sizeof(id), &created) < 0 ||
               db_command(call->db, "COMMIT") < 0) {
        db_command(call->db, "ROLLBACK");
        api_db_error(call, NULL);
    } else {
        log_info("node %s: %s %s (by %s)", id, json_string_value(json_object_get(body, "name")),
                 created ? "registered" : "re-registered", call->who.name);
        respond_node(call, id, created ? 201 : 200);
        sched_wake_signal();
    }
    json_decref(body);
}

void nodes_heartbeat(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "node", &id) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db,
                          "UPDATE nodes SET last_heartbeat_at = now(), state = 'UP'"
                          " WHERE id = $1 RETURNING state",
                          1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        problem_respond(call->req, 404, "no node %lld", id);
    else
        respond_node(call, ids, 200);
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
        etag_respond_json(call, json_pack("{s:o}", "items", items));
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
