/* history: the cluster over time, for the dashboard's charts (sql/007_history.sql). The
 * scheduler thread calls history_tick() after each round; it adds a sample (GPUs of the nodes
 * up, allocated, busy; the queue and its waits) at most every HISTORY_PERIOD_S, and keeps the
 * table bounded: samples older than HISTORY_RAW_S are averaged into rows of HISTORY_BUCKET_S,
 * rows older than HISTORY_KEEP_S are dropped. GET /api/v1/cluster/history answers them. */
#ifndef RINGMASTER_HISTORY_H
#define RINGMASTER_HISTORY_H

#include <libpq-fe.h>
#include <stddef.h>

struct api_call;

#define HISTORY_PERIOD_S 5          /* at most one sample per this many seconds */
#define HISTORY_BUSY_S 30           /* a GPU is busy when its job reported within this (or */
                                    /* three of its mean step times, when longer) */
#define HISTORY_RAW_S 86400         /* samples are kept as they are for a day */
#define HISTORY_BUCKET_S 600        /* then averaged into 10-minute rows */
#define HISTORY_KEEP_S (30 * 86400) /* and dropped after 30 days */
#define HISTORY_LIMIT_MAX 10000
#define HISTORY_LIMIT_DEFAULT 1000
#define HISTORY_STEP_MAX 86400

/* On c (autocommit, no transaction open): adds a sample when the newest is HISTORY_PERIOD_S
 * old or older (or there is none), and then compacts the table. Returns 1 when a sample was
 * added, 0 when none was due, -1 with text in err. */
int history_tick(PGconn *c, char *err, size_t errlen);

/* GET /api/v1/cluster/history?since=ISO8601&limit=N&step=S: the newest limit rows after since
 * (all when absent), averaged into buckets of step seconds when step > 0, oldest first,
 * with an ETag (etag.h). 400 for a bad parameter. */
void history_get(struct api_call *call);

#endif
