/* health: GET /api/v1/health, no token needed. */
#ifndef RINGMASTER_HEALTH_H
#define RINGMASTER_HEALTH_H

struct api_call;

/* 200 {"status":"ok","database":"ok","version"} when the database answers. Else 503 with
 * "database":"unavailable" and "status" "recovering" while ringmasterd brings the database
 * back (it restarts its embedded cluster, or retries a lost connection with back-off; then
 * also "reason", "down_s" and "retries"), "degraded" when it answers errors to a working
 * connection. docs/api.md. */
void health_get(struct api_call *call);

#endif
