/* metrics: ringmasterd's Prometheus exposition at GET /metrics (text format 0.0.4). Counters
 * kept in memory (HTTP requests by route and status, database errors, the scheduler's round
 * durations) are C11 atomics, safe from any thread; the gauges (jobs by state, GPUs, queue)
 * and the actions by kind and outcome are read from the database at each scrape. */
#ifndef RINGMASTER_METRICS_H
#define RINGMASTER_METRICS_H

#include <stddef.h>

struct api_call;

/* The most routes counted one by one; larger route indexes count as "unmatched". */
#define METRICS_MAX_ROUTES 64

/* Counts one answered request of the route at index route in api_route() (or any index >=
 * METRICS_MAX_ROUTES for a request no route matched) with its status (100..599). */
void metrics_http_request(size_t route, unsigned status);

/* Counts one failed database statement. */
void metrics_db_error(void);

/* Records one scheduling round that took seconds. */
void metrics_round_observe(double seconds);

/* The handler of GET /metrics: answers text/plain; version=0.0.4. call->db may be NULL
 * (the database gauges are then left out and ringmaster_database_up is 0). */
void metrics_get(struct api_call *call);

#endif
