/* node_drain: an operator's drain and undrain of a node or some of its GPUs (nodes.h). The
 * core reads the drain from the snapshot (sched_node.drained, evacuate). */
#include <stdio.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "live/live.h"
#include "log.h"
#include "nodes.h"
#include "spec/fieldcheck.h"
#include "store/db.h"

#define DRAIN_REASON_MAX 256 /* characters */
#define DRAIN_GPUS_MAX 64    /* SCHED_MAX_GPUS_PER_NODE */

/* The body's gpus as a PostgreSQL array literal into out ("" when absent: every GPU). Returns
 * 0, or -1 after a 400. */
static int gpus_or_respond(struct api_call *call, const json_t *g, char *out, size_t len)
{
    out[0] = '\0';
    if (!g)
        return 0;
    if (!json_is_array(g) || json_array_size(g) < 1 || json_array_size(g) > DRAIN_GPUS_MAX)
        return api_field_error(call, "gpus", "expected an array of 1..64 GPU indices");
    size_t used = 0;
    for (size_t i = 0; i < json_array_size(g); i++) {
        const json_t *e = json_array_get(g, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > 1023)
            return api_field_error(call, "gpus", "expected GPU indices 0..1023");
        for (size_t k = 0; k < i; k++)
            if (json_integer_value(json_array_get(g, k)) == json_integer_value(e))
                return api_field_error(call, "gpus", "an index appears twice");
        used += (size_t)snprintf(out + used, len - used, "%s%lld", i ? "," : "{",
                                 (long long)json_integer_value(e));
    }
    snprintf(out + used, len - used, "}");
    return 0;
}

/* Checks the drain's body; fills reason, gpus (array literal or "") and evacuate. */
static int body_or_respond(struct api_call *call, const json_t *body, const char **reason,
                           char *gpus, size_t len, int *evacuate)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        if (strcmp(k, "reason") && strcmp(k, "gpus") && strcmp(k, "evacuate"))
            return api_field_error(call, strlen(k) > 64 ? "(long name)" : k,
                                   "unknown field (reason, gpus, evacuate)");
    }
    v = json_object_get(body, "reason");
    long n = json_is_string(v) ? fieldcheck_text_chars(json_string_value(v)) : -2;
    if (n == -2)
        return api_field_error(call, "reason", "required: why the node is drained, a string");
    if (n < 1 || n > DRAIN_REASON_MAX)
        return api_field_error(call, "reason", "expected 1..256 characters, no control ones");
    *reason = json_string_value(v);
    v = json_object_get(body, "evacuate");
    if (v && !json_is_boolean(v))
        return api_field_error(call, "evacuate", "expected true or false");
    *evacuate = json_is_true(v);
    return gpus_or_respond(call, json_object_get(body, "gpus"), gpus, len);
}

void nodes_drain(struct api_call *call)
{
    long long nid;
    json_t *body;
    const char *reason = NULL;
    char gpus[DRAIN_GPUS_MAX * 6 + 4];
    int evacuate = 0;
    if (api_id_or_respond(call, "node", &nid) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    if (body_or_respond(call, body, &reason, gpus, sizeof(gpus), &evacuate) < 0) {
        json_decref(body);
        return;
    }
    char id[24], by[24];
    snprintf(id, sizeof(id), "%lld", nid);
    snprintf(by, sizeof(by), "%lld", call->who.id);
    const char *p[] = {id, reason, by, gpus[0] ? gpus : NULL, evacuate ? "true" : "false"};
    PGresult *r = db_exec(call->db,
                          "UPDATE nodes SET drained_at = now(), drain_reason = $2,"
                          " drained_by = $3, drain_gpus = $4::integer[], drain_evacuate = $5"
                          " WHERE id = $1 AND ($4::integer[] IS NULL OR $4::integer[] <@"
                          " ARRAY(SELECT g.idx FROM node_gpus g WHERE g.node_id = $1))"
                          " RETURNING name",
                          5, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        nodes_missing_or_field(call, id, "gpus", "the node has no GPU of such an index");
    } else {
        log_info("node %s drained%s by %s (GPUs %s): %s", PQgetvalue(r, 0, 0),
                 evacuate ? " to evacuate" : "", call->who.name, gpus[0] ? gpus : "all", reason);
        live_wake_signal();
        nodes_respond(call, id, 200);
    }
    PQclear(r);
    json_decref(body);
}

void nodes_undrain(struct api_call *call)
{
    long long nid;
    if (api_id_or_respond(call, "node", &nid) < 0)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%lld", nid);
    const char *p[] = {id};
    PGresult *r = db_exec(call->db,
                          "UPDATE nodes SET drained_at = NULL, drain_reason = NULL,"
                          " drained_by = NULL, drain_gpus = NULL, drain_evacuate = false"
                          " WHERE id = $1 RETURNING name",
                          1, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else if (PQntuples(r) != 1) {
        http_problem(call->req, 404, "no node %s", id);
    } else {
        log_info("node %s undrained by %s", PQgetvalue(r, 0, 0), call->who.name);
        live_wake_signal();
        nodes_respond(call, id, 200);
    }
    PQclear(r);
}
