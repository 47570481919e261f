/* sampler: the cluster over time, for the dashboard's charts (sql/007_history.sql; GET
 * /api/v1/cluster/history answers the rows). The scheduler thread calls history_tick() after
 * each round; it adds a sample (GPUs of the nodes up, allocated, busy; the queue and its
 * waits) at most every HISTORY_PERIOD_S, and keeps the table bounded: samples older than
 * HISTORY_RAW_S are averaged into rows of HISTORY_BUCKET_S, rows older than HISTORY_KEEP_S
 * are dropped. Private to live/. */
#ifndef RINGMASTER_LIVE_SAMPLER_H
#define RINGMASTER_LIVE_SAMPLER_H

#include <libpq-fe.h>
#include <stddef.h>

#include "live.h" /* HISTORY_PERIOD_S, HISTORY_BUSY_S */

#define HISTORY_RAW_S 86400         /* samples are kept as they are for a day */
#define HISTORY_BUCKET_S 600        /* then averaged into 10-minute rows */
#define HISTORY_KEEP_S (30 * 86400) /* and dropped after 30 days */

/* On c (autocommit, no transaction open): adds a sample when the newest is HISTORY_PERIOD_S
 * old or older (or there is none), and then compacts the table. Returns 1 when a sample was
 * added, 0 when none was due, -1 with text in err. One thread's (the scheduler's): it keeps
 * when the sample it added last makes the next one due, and asks nothing before. */
int history_tick(PGconn *c, char *err, size_t errlen);

#endif
