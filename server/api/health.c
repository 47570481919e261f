/* health: GET /api/v1/health: ok, or 503 with the database's recovery state. */
#include "health.h"

#include "call.h"
#include "store/db.h"

static json_t *recovering(struct api_call *call)
{
    struct db_status st;
    db_status(api_pool(call), &st);
    if (st.up)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:f, s:i, s:s}", "status", "recovering", "database",
                     "unavailable", "reason",
                     st.restarting ? "restarting the embedded PostgreSQL"
                                   : "reconnecting to the database",
                     "down_s", st.down_s, "retries", (int)st.retries, "version", api_version());
}

void health_get(struct api_call *call)
{
    int ok = 0;
    if (call->db) {
        PGresult *r = db_exec_retry(call->db, "SELECT 1", 0, NULL);
        ok = db_ok(r);
        PQclear(r);
    }
    json_t *rec = ok ? NULL : recovering(call);
    if (rec) {
        api_respond_json(call, 503, rec);
        return;
    }
    api_respond_json(call, ok ? 200 : 503,
                     json_pack("{s:s, s:s, s:s}", "status", ok ? "ok" : "degraded", "database",
                               ok ? "ok" : "unavailable", "version", api_version()));
}
