/* metrics: ringmasterd's Prometheus exposition at GET /metrics (text format 0.0.4). A
 * registry of counters kept in memory, C11 atomics safe from any thread, that the API fills
 * (HTTP requests by route and status, database errors); the scheduler thread's round
 * durations (live.h's histogram); and gauges (jobs by state, GPUs, queue) and the actions by
 * kind and outcome, read from the database at each scrape. */
#ifndef RINGMASTER_METRICS_H
#define RINGMASTER_METRICS_H

#include <libpq-fe.h>
#include <stddef.h>

#include "http/http.h"

struct route;

/* The most routes counted one by one; larger route indexes count as "unmatched". */
#define METRICS_MAX_ROUTES 64

/* Names the routes counted: index i of metrics_http_request() is table[i] (borrowed; static
 * storage). Before it, every route counts as "unmatched". */
void metrics_name_routes(const struct route *table, size_t n);

/* Counts one answered request of the route at index route of the named table (or any index
 * >= METRICS_MAX_ROUTES for a request no route matched) with its status (100..599). */
void metrics_http_request(size_t route, unsigned status);

/* Counts one failed database statement. */
void metrics_db_error(void);

/* Counts one bad bearer token presented; one request refused (429) for its address's. */
void metrics_auth_failure(void);
void metrics_auth_refused(void);

/* Counts a group of n jobs of concurrent single submissions stored in one statement
 * (submit_group.h). */
void metrics_submit_group(unsigned n);

/* Counts one statement of submissions sent into the leader's pipeline behind another still
 * running (submit_group.h). */
void metrics_submit_pipelined(void);

/* Counts one look of a worker's long-poll for its node's actions (actions.c). */
void metrics_poll_look(void);

/* The whole exposition as text (new; free()) with its length in *len, or NULL on ENOMEM. db
 * may be NULL (the database gauges are then left out and ringmaster_database_up is 0); http:
 * the front door's counters. */
char *metrics_text(PGconn *db, const struct http_stats *http, size_t *len);

#endif
