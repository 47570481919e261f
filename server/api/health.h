/* health: GET /api/v1/health, no token needed. */
#ifndef RINGMASTER_HEALTH_H
#define RINGMASTER_HEALTH_H

struct api_call;

/* 200 {"status":"ok","database":"ok","version"} when the database answers; else 503 with
 * "status":"degraded","database":"unavailable". */
void health_get(struct api_call *call);

#endif
