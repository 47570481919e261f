#include "health.h"

#include "call.h"
#include "store/db.h"

void health_get(struct api_call *call)
{
    int ok = 0;
    if (call->db) {
        PGresult *r = db_exec_retry(call->db, "SELECT 1", 0, NULL);
        ok = db_ok(r);
        PQclear(r);
    }
    api_respond_json(call, ok ? 200 : 503,
                     json_pack("{s:s, s:s, s:s}", "status", ok ? "ok" : "degraded", "database",
                               ok ? "ok" : "unavailable", "version", api_version()));
}
