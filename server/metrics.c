#include "metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "db.h"
#include "http.h"
#include "job_state.h"
#include "problem.h"
#include "router.h"

#define STATUS_MIN 100
#define STATUS_SLOTS 500 /* 100..599 */

/* The round duration histogram's upper bounds, in seconds. */
static const double round_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,   0.25,   0.5,   1.0,  2.5,   5.0};
#define NBOUNDS (sizeof(round_bounds) / sizeof(round_bounds[0]))

/* Zero-initialised; written by any thread with relaxed atomics (they are counts only). */
static atomic_ulong http_counts[METRICS_MAX_ROUTES + 1][STATUS_SLOTS];
static atomic_ulong db_errors;
static atomic_ulong round_buckets[NBOUNDS + 1]; /* the last one is +Inf */
static atomic_ullong round_sum_us;

void metrics_http_request(size_t route, unsigned status)
{
    if (route > METRICS_MAX_ROUTES)
        route = METRICS_MAX_ROUTES;
    if (status < STATUS_MIN || status >= STATUS_MIN + STATUS_SLOTS)
        return;
    atomic_fetch_add_explicit(&http_counts[route][status - STATUS_MIN], 1, memory_order_relaxed);
}

void metrics_db_error(void)
{
    atomic_fetch_add_explicit(&db_errors, 1, memory_order_relaxed);
}

void metrics_round_observe(double seconds)
{
    if (!(seconds >= 0))
        seconds = 0;
    size_t i = 0;
    while (i < NBOUNDS && seconds > round_bounds[i])
        i++;
    atomic_fetch_add_explicit(&round_buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&round_sum_us, (unsigned long long)(seconds * 1e6 + 0.5),
                              memory_order_relaxed);
}

static void write_http(FILE *f)
{
    fputs("# HELP ringmaster_http_requests_total HTTP requests answered, by route pattern and"
          " status.\n# TYPE ringmaster_http_requests_total counter\n",
          f);
    size_t n = api_route_count();
    for (size_t r = 0; r <= METRICS_MAX_ROUTES; r++) {
        const struct route *rt = r < n && r < METRICS_MAX_ROUTES ? api_route(r) : NULL;
        if (!rt && r != METRICS_MAX_ROUTES)
            continue;
        for (unsigned s = 0; s < STATUS_SLOTS; s++) {
            unsigned long v = atomic_load_explicit(&http_counts[r][s], memory_order_relaxed);
            if (v)
                fprintf(f, "ringmaster_http_requests_total{method=\"%s\",route=\"%s\","
                           "status=\"%u\"} %lu\n",
                        rt ? rt->method : "", rt ? rt->pattern : "unmatched", s + STATUS_MIN, v);
        }
    }
}

static void write_rounds(FILE *f)
{
    fputs("# HELP ringmaster_scheduler_round_duration_seconds Duration of the scheduler's"
          " rounds.\n# TYPE ringmaster_scheduler_round_duration_seconds histogram\n",
          f);
    unsigned long cum = 0;
    for (size_t i = 0; i <= NBOUNDS; i++) {
        cum += atomic_load_explicit(&round_buckets[i], memory_order_relaxed);
        if (i < NBOUNDS)
            fprintf(f, "ringmaster_scheduler_round_duration_seconds_bucket{le=\"%g\"} %lu\n",
                    round_bounds[i], cum);
        else
            fprintf(f, "ringmaster_scheduler_round_duration_seconds_bucket{le=\"+Inf\"} %lu\n",
                    cum);
    }
    unsigned long long us = atomic_load_explicit(&round_sum_us, memory_order_relaxed);
    fprintf(f, "ringmaster_scheduler_round_duration_seconds_sum %.6f\n", (double)us / 1e6);
    fprintf(f, "ringmaster_scheduler_round_duration_seconds_count %lu\n", cum);
}

/* Runs sql; NULL (counted as a database error) when it fails. */
static PGresult *query(PGconn *db, const char *sql)
{
    PGresult *r = db_exec_retry(db, sql, 0, NULL);
    if (db_ok(r))
        return r;
    metrics_db_error();
    PQclear(r);
    return NULL;
}

static void write_jobs(FILE *f, PGconn *db)
{
    PGresult *r = query(db, "SELECT state, count(*) FROM jobs GROUP BY state");
    if (!r)
        return;
    fputs("# HELP ringmaster_jobs Jobs by state.\n# TYPE ringmaster_jobs gauge\n", f);
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        const char *name = job_state_name((enum job_state)s);
        const char *v = "0";
        for (int i = 0; i < PQntuples(r); i++)
            if (strcmp(PQgetvalue(r, i, 0), name) == 0)
                v = PQgetvalue(r, i, 1);
        fprintf(f, "ringmaster_jobs{state=\"%s\"} %s\n", name, v);
    }
    PQclear(r);
}

/* One unlabelled gauge from a one-value query. */
static void write_gauge(FILE *f, PGconn *db, const char *name, const char *help, const char *sql)
{
    PGresult *r = query(db, sql);
    if (!r)
        return;
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name,
            PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "0");
    PQclear(r);
}

static void write_actions(FILE *f, PGconn *db)
{
    PGresult *r = query(db, "SELECT kind, state, count(*) FROM actions GROUP BY kind, state"
                            " ORDER BY kind, state");
    if (!r)
        return;
    fputs("# HELP ringmaster_actions_total Worker actions written, by kind and outcome"
          " (pending, done, failed, superseded).\n# TYPE ringmaster_actions_total counter\n",
          f);
    for (int i = 0; i < PQntuples(r); i++)
        fprintf(f, "ringmaster_actions_total{kind=\"%s\",outcome=\"%s\"} %s\n",
                PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
    PQclear(r);
}

static void write_database(FILE *f, PGconn *db)
{
    int up = db && PQstatus(db) == CONNECTION_OK;
    if (up) {
        write_jobs(f, db);
        write_gauge(f, db, "ringmaster_queue_length", "Jobs waiting (PENDING).",
                    "SELECT count(*) FROM jobs WHERE state = 'PENDING'");
        write_gauge(f, db, "ringmaster_gpus", "GPUs of the nodes that are UP.",
                    "SELECT count(*) FROM node_gpus g JOIN nodes n ON n.id = g.node_id"
                    " WHERE n.state = 'UP'");
        /* A GPU holding a packed pair is one GPU allocated, not two. */
        write_gauge(f, db, "ringmaster_gpus_allocated", "GPUs held by jobs.",
                    "SELECT count(DISTINCT (node_id, gpu_idx)) FROM allocations");
        write_actions(f, db);
    }
    fprintf(f, "# HELP ringmaster_database_up Whether the database answered.\n"
               "# TYPE ringmaster_database_up gauge\nringmaster_database_up %d\n",
            up);
    fprintf(f, "# HELP ringmaster_database_errors_total Failed database statements.\n"
               "# TYPE ringmaster_database_errors_total counter\n"
               "ringmaster_database_errors_total %lu\n",
            atomic_load_explicit(&db_errors, memory_order_relaxed));
}

void metrics_get(struct api_call *call)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        problem_respond(call->req, 500, "out of memory");
        return;
    }
    write_database(f, call->db);
    write_rounds(f);
    write_http(f);
    if (fclose(f) != 0) {
        free(text);
        problem_respond(call->req, 500, "out of memory");
        return;
    }
    http_req_respond(call->req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
    free(text);
}
