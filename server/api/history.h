/* history: GET /api/v1/cluster/history, the cluster over time for the dashboard's charts
 * (sql/007_history.sql). The scheduler thread writes the samples (live/sampler.c). */
#ifndef RINGMASTER_HISTORY_H
#define RINGMASTER_HISTORY_H

struct api_call;

#define HISTORY_LIMIT_MAX 10000
#define HISTORY_LIMIT_DEFAULT 1000
#define HISTORY_STEP_MAX 86400

/* GET /api/v1/cluster/history?since=ISO8601&limit=N&step=S: the newest limit rows after since
 * (all when absent), averaged into buckets of step seconds when step > 0, oldest first,
 * with an ETag (etag.h). 400 for a bad parameter. */
void history_get(struct api_call *call);

#endif
