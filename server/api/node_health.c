/* node_health: a worker's report of its GPUs' faults (nodes.h). The core reads them from the
 * snapshot (sched_node.failed); gpu_faults keeps each one (sql/034). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "live/live.h"
#include "log.h"
#include "nodes.h"
#include "store/db.h"

#define HEALTH_GPUS_MAX 64
#define FAULT_MAX 128 /* bytes */

/* The body's faults as JSON text (new, free()) after checking them, or NULL after a 400. */
static char *faults_or_respond(struct api_call *call, const json_t *body)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        if (strcmp(k, "gpus")) {
            api_field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field (gpus)");
            return NULL;
        }
    }
    const json_t *g = json_object_get(body, "gpus");
    if (!json_is_array(g) || json_array_size(g) > HEALTH_GPUS_MAX) {
        api_field_error(call, "gpus",
                        "required: the array (at most 64) of the GPUs with a fault,"
                        " [{\"index\": N, \"fault\": TEXT}], [] when all are healthy");
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(g); i++) {
        const json_t *e = json_array_get(g, i), *idx = json_object_get(e, "index"),
                     *f = json_object_get(e, "fault");
        const char *s = json_string_value(f);
        int ok = json_is_object(e) && json_object_size(e) == 2 && json_is_integer(idx) &&
                 json_integer_value(idx) >= 0 && json_integer_value(idx) <= 1023 && s &&
                 json_string_length(f) >= 1 && json_string_length(f) <= FAULT_MAX;
        for (const char *p = s; ok && *p; p++)
            ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
        for (size_t j = 0; ok && j < i; j++)
            ok = json_integer_value(json_object_get(json_array_get(g, j), "index")) !=
                 json_integer_value(idx);
        if (!ok) {
            char field[32];
            snprintf(field, sizeof(field), "gpus[%zu]", i);
            api_field_error(call, field,
                            "expected {\"index\": 0..1023 (once), \"fault\": 1..128 bytes of"
                            " text}");
            return NULL;
        }
    }
    return json_dumps(g, JSON_COMPACT);
}

/* One statement: the node's GPUs get the faults reported (the others none); each new fault
 * opens a row of gpu_faults with the jobs on the GPU, each cleared or replaced one closes its
 * row. Nothing changes when an index is not one of the node's GPUs (the second column). */
static const char *const health_sql =
    "WITH want AS (SELECT (e->>'index')::int AS idx, e->>'fault' AS fault"
    " FROM json_array_elements($2::json) e),"
    " old AS (SELECT g.idx, g.fault FROM node_gpus g WHERE g.node_id = $1 FOR UPDATE),"
    " bad AS (SELECT count(*) AS c FROM want w WHERE NOT EXISTS (SELECT 1 FROM old o"
    " WHERE o.idx = w.idx)),"
    " diff AS (SELECT o.idx, o.fault AS was, w.fault AS now FROM old o LEFT JOIN want w"
    " ON w.idx = o.idx WHERE o.fault IS DISTINCT FROM w.fault AND (SELECT c FROM bad) = 0),"
    " upd AS (UPDATE node_gpus g SET fault = d.now, fault_since = CASE WHEN d.now IS NULL"
    " THEN NULL ELSE now() END FROM diff d WHERE g.node_id = $1 AND g.idx = d.idx"
    " RETURNING g.idx),"
    " opened AS (INSERT INTO gpu_faults (node_id, gpu_idx, reason, jobs)"
    " SELECT $1, d.idx, d.now, COALESCE((SELECT array_agg(a.job_id) FROM allocations a"
    " WHERE a.node_id = $1 AND a.gpu_idx = d.idx), '{}') FROM diff d WHERE d.now IS NOT NULL"
    " RETURNING id),"
    " closed AS (UPDATE gpu_faults f SET cleared_at = now() FROM diff d WHERE f.node_id = $1"
    " AND f.gpu_idx = d.idx AND f.cleared_at IS NULL AND d.was IS NOT NULL RETURNING f.id)"
    " SELECT (SELECT count(*) FROM upd), (SELECT c FROM bad), (SELECT count(*) FROM opened),"
    " (SELECT count(*) FROM closed)";

void nodes_health(struct api_call *call)
{
    long long nid;
    json_t *body;
    if (api_id_or_respond(call, "node", &nid) < 0 || nodes_owned_or_respond(call, nid) < 0 ||
        api_body_or_respond(call, &body) < 0)
        return;
    char *faults = faults_or_respond(call, body);
    json_decref(body);
    if (!faults)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%lld", nid);
    const char *p[] = {id, faults};
    PGresult *r = db_exec(call->db, health_sql, 2, p);
    if (!db_ok(r) || PQntuples(r) != 1) {
        api_db_error(call, r);
    } else if (strcmp(PQgetvalue(r, 0, 1), "0") != 0) {
        api_field_error(call, "gpus", "an index that is not one of the node's GPUs");
    } else {
        if (strcmp(PQgetvalue(r, 0, 0), "0") != 0) {
            log_info("node %s: GPU health changed, %s fault(s) reported, %s cleared: %s", id,
                     PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3), faults);
            live_wake_signal();
        }
        nodes_respond(call, id, 200);
    }
    PQclear(r);
    free(faults);
}
