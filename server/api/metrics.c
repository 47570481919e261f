/* metrics: GET /metrics, ringmasterd's Prometheus text: the in-memory counters (requests,
 * database and auth errors, submit groups), round durations, and gauges read at each scrape. */
#include "metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forecast_cells.h"
#include "http/router.h"
#include "job_state.h"
#include "live/live.h"
#include "store/db.h"

#define STATUS_MIN 100
#define STATUS_SLOTS 500 /* 100..599 */

/* Zero-initialised; written by any thread with relaxed atomics (they are counts only). */
static atomic_ulong http_counts[METRICS_MAX_ROUTES + 1][STATUS_SLOTS];
static atomic_ulong db_errors;
static atomic_ulong auth_failures, auth_refused;
static atomic_ulong poll_looks;
static atomic_ulong submit_groups, submit_grouped, submit_pipelined;
/* The route table, named once by api_create (metrics_name_routes). */
static const struct route *route_table;
static size_t route_count;

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

void metrics_auth_failure(void)
{
    atomic_fetch_add_explicit(&auth_failures, 1, memory_order_relaxed);
}

void metrics_auth_refused(void)
{
    atomic_fetch_add_explicit(&auth_refused, 1, memory_order_relaxed);
}

void metrics_submit_group(unsigned n)
{
    atomic_fetch_add_explicit(&submit_groups, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&submit_grouped, n, memory_order_relaxed);
}

void metrics_submit_pipelined(void)
{
    atomic_fetch_add_explicit(&submit_pipelined, 1, memory_order_relaxed);
}

void metrics_poll_look(void)
{
    atomic_fetch_add_explicit(&poll_looks, 1, memory_order_relaxed);
}

void metrics_name_routes(const struct route *table, size_t n)
{
    route_table = table;
    route_count = n;
}

static void write_http(FILE *f)
{
    fputs("# HELP ringmaster_http_requests_total HTTP requests answered, by route pattern and"
          " status.\n# TYPE ringmaster_http_requests_total counter\n",
          f);
    size_t n = route_count;
    for (size_t r = 0; r <= METRICS_MAX_ROUTES; r++) {
        const struct route *rt = r < n && r < METRICS_MAX_ROUTES ? &route_table[r] : NULL;
        if (!rt && r != METRICS_MAX_ROUTES)
            continue;
        for (unsigned s = 0; s < STATUS_SLOTS; s++) {
            unsigned long v = atomic_load_explicit(&http_counts[r][s], memory_order_relaxed);
            if (v)
                fprintf(f,
                        "ringmaster_http_requests_total{method=\"%s\",route=\"%s\","
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
    struct live_round_hist h;
    live_round_hist_read(&h);
    unsigned long cum = 0;
    for (size_t i = 0; i <= LIVE_ROUND_HIST_BOUNDS; i++) {
        cum += h.counts[i];
        if (i < LIVE_ROUND_HIST_BOUNDS)
            fprintf(f, "ringmaster_scheduler_round_duration_seconds_bucket{le=\"%g\"} %lu\n",
                    live_round_hist_bound[i], cum);
        else
            fprintf(f, "ringmaster_scheduler_round_duration_seconds_bucket{le=\"+Inf\"} %lu\n",
                    cum);
    }
    fprintf(f, "ringmaster_scheduler_round_duration_seconds_sum %.6f\n", h.sum_s);
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
        fprintf(f, "ringmaster_actions_total{kind=\"%s\",outcome=\"%s\"} %s\n", PQgetvalue(r, i, 0),
                PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
    PQclear(r);
}

/* The remaining work of the jobs the rounds plan (waiting, running or on their way; not
 * SUSPENDED nor ended), summed by where the scheduler's estimate came from (job_sched.model:
 * live_model_remaining_json), every source always written: a handful of series, whatever the
 * number of jobs. A job no round estimated yet counts under "none". */
static void write_remaining(FILE *f, PGconn *db)
{
    static const char *const sources[] = {"declared", "fit", "prior", "elapsed", "none"};
    static const struct {
        const char *name, *help;
    } gauges[] = {
        {"ringmaster_remaining_jobs", "Jobs the scheduler plans, by the source of their"
                                      " remaining work's estimate."},
        {"ringmaster_remaining_steps", "Steps the scheduler's estimates say the jobs it plans"
                                       " have to go, by source."},
        {"ringmaster_remaining_epochs", "Epochs the scheduler's estimates say the jobs it plans"
                                        " have to go, by source."},
        {"ringmaster_remaining_seconds", "Seconds of running the scheduler predicts the jobs it"
                                         " plans need at their sizes, by source (those whose"
                                         " speed is known)."},
        {"ringmaster_remaining_seconds_unknown_jobs", "Jobs the scheduler plans whose remaining"
                                                      " seconds are not known yet (learning"
                                                      " their speed), by source."},
    };
    PGresult *r = query(
        db, "SELECT COALESCE(s.model->>'remaining_source', 'none'), count(*),"
            " COALESCE(sum((s.model->>'remaining_steps')::float8), 0),"
            " COALESCE(sum((s.model->>'remaining_epochs')::float8), 0),"
            " COALESCE(sum((s.model->>'predicted_remaining_s')::float8), 0),"
            " count(*) FILTER (WHERE s.model->>'predicted_remaining_s' IS NULL)"
            " FROM jobs j LEFT JOIN job_sched s ON s.job_id = j.id"
            " WHERE j.state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED', 'SUSPENDED') GROUP BY 1");
    if (!r)
        return;
    for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g].name, gauges[g].help,
                gauges[g].name);
        for (size_t k = 0; k < sizeof(sources) / sizeof(sources[0]); k++) {
            const char *v = "0";
            for (int i = 0; i < PQntuples(r); i++)
                if (strcmp(PQgetvalue(r, i, 0), sources[k]) == 0)
                    v = PQgetvalue(r, i, (int)g + 1);
            fprintf(f, "%s{source=\"%s\"} %s\n", gauges[g].name, sources[k], v);
        }
    }
    PQclear(r);
}

/* The forecasts' calibration (forecasts.h: the view the dashboard reads too), every event and
 * lead always written: the scores, the share of truths at or below the P90, the median
 * |P50 error| over the time to the event (NaN when none was scored). */
static void write_forecasts(FILE *f, PGconn *db)
{
    static const char *const names[] = {"ringmaster_forecast_scores",
                                        "ringmaster_forecast_within_p90_ratio",
                                        "ringmaster_forecast_p50_error_ratio"};
    static const char *const helps[] = {
        "Forecasts scored against the job's start or completion, by how far ahead made.",
        "Share of the scored forecasts whose truth fell at or below their P90.",
        "Median absolute error of the P50 over the time to the event."};
    static const char *const events[FORECAST_EVENTS] = FORECAST_EVENT_NAMES;
    static const char *const leads[FORECAST_LEADS] = FORECAST_LEAD_NAMES;
    PGresult *r = query(db, "SELECT event, lead, n, within_p90, median_rel_err FROM"
                            " forecast_calibration");
    if (!r)
        return;
    for (int g = 0; g < 3; g++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", names[g], helps[g], names[g]);
        for (int e = 0; e < FORECAST_EVENTS; e++)
            for (int k = 0; k < FORECAST_LEADS; k++) {
                const char *v = g == 0 ? "0" : "NaN";
                for (int i = 0; i < PQntuples(r); i++)
                    if (!strcmp(PQgetvalue(r, i, 0), events[e]) &&
                        !strcmp(PQgetvalue(r, i, 1), leads[k]) &&
                        !PQgetisnull(r, i, 2 + g))
                        v = PQgetvalue(r, i, 2 + g);
                fprintf(f, "%s{event=\"%s\",lead=\"%s\"} %s\n", names[g], events[e],
                        leads[k], v);
            }
    }
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
                    "SELECT gpus FROM cluster_up WHERE id = 1"); /* sql/029 keeps it */
        /* A GPU holding a packed pair is one GPU allocated, not two. */
        write_gauge(f, db, "ringmaster_gpus_allocated", "GPUs held by jobs.",
                    "SELECT count(DISTINCT (node_id, gpu_idx)) FROM allocations");
        write_gauge(f, db, "ringmaster_gpus_faulty",
                    "GPUs whose worker reports a fault (they get no work).",
                    "SELECT count(*) FROM node_gpus WHERE fault IS NOT NULL");
        write_gauge(f, db, "ringmaster_gpu_faults_recorded",
                    "GPU faults reported, ever (gpu_faults).",
                    "SELECT count(*) FROM gpu_faults");
        write_gauge(f, db, "ringmaster_gpu_fault_lost_gpu_seconds",
                    "GPU-seconds the jobs hit by GPU faults lost to them, ever (their moves"
                    " and the steps they redid).",
                    "SELECT COALESCE(sum(lost_gpu_s), 0) FROM gpu_faults");
        write_actions(f, db);
        write_remaining(f, db);
        write_forecasts(f, db);
        /* How far off the scheduler's predictions of finishes were (sql/014), over the jobs
         * completed in the last 30 days that had any. */
        write_gauge(f, db, "ringmaster_estimate_error_mean",
                    "Mean relative error of the predicted finishes of the jobs completed in the"
                    " last 30 days.",
                    "SELECT COALESCE(avg(estimate_error), 0) FROM jobs WHERE state = 'COMPLETED'"
                    " AND estimate_error IS NOT NULL AND finished_at > now() - interval '30 days'");
        write_gauge(f, db, "ringmaster_estimate_jobs",
                    "Jobs completed in the last 30 days with a recorded estimate error.",
                    "SELECT count(*) FROM jobs WHERE state = 'COMPLETED' AND estimate_error IS NOT"
                    " NULL AND finished_at > now() - interval '30 days'");
    }
    fprintf(f,
            "# HELP ringmaster_database_up Whether the database answered.\n"
            "# TYPE ringmaster_database_up gauge\nringmaster_database_up %d\n",
            up);
    fprintf(f,
            "# HELP ringmaster_database_errors_total Failed database statements.\n"
            "# TYPE ringmaster_database_errors_total counter\n"
            "ringmaster_database_errors_total %lu\n",
            atomic_load_explicit(&db_errors, memory_order_relaxed));
}

/* The connections (guard.h), the requests waiting for a thread and the refusals of bad tokens
 * (authlimit.h). */
static void write_guards(FILE *f, const struct http_stats *h)
{
    fprintf(f,
            "# HELP ringmaster_http_connections HTTP connections open.\n"
            "# TYPE ringmaster_http_connections gauge\n"
            "ringmaster_http_connections %u\n"
            "# HELP ringmaster_http_connections_cut_total HTTP connections the server closed: a"
            " request past its header or body deadline, or the oldest one waiting for its header"
            " to make room.\n"
            "# TYPE ringmaster_http_connections_cut_total counter\n"
            "ringmaster_http_connections_cut_total{reason=\"deadline\"} %llu\n"
            "ringmaster_http_connections_cut_total{reason=\"room\"} %llu\n"
            "# HELP ringmaster_http_requests_waiting Complete requests waiting for a handler's"
            " thread (heartbeats go first, minibatch reports and log lines last).\n"
            "# TYPE ringmaster_http_requests_waiting gauge\n"
            "ringmaster_http_requests_waiting %zu\n",
            h->connections, h->cut_late, h->cut_for_room, h->waiting);
    fprintf(f,
            "# HELP ringmaster_auth_failures_total Bad bearer tokens presented.\n"
            "# TYPE ringmaster_auth_failures_total counter\n"
            "ringmaster_auth_failures_total %lu\n"
            "# HELP ringmaster_auth_refused_total Requests refused (429) because their address"
            " presented too many bad tokens.\n"
            "# TYPE ringmaster_auth_refused_total counter\n"
            "ringmaster_auth_refused_total %lu\n",
            atomic_load_explicit(&auth_failures, memory_order_relaxed),
            atomic_load_explicit(&auth_refused, memory_order_relaxed));
}

static void write_polls(FILE *f)
{
    fprintf(f,
            "# HELP ringmaster_actions_poll_looks_total Looks of the workers' long-polls for"
            " their node's actions (a look when the poll arrives, when an action for the node is"
            " committed, and at least every 10 s while it waits).\n"
            "# TYPE ringmaster_actions_poll_looks_total counter\n"
            "ringmaster_actions_poll_looks_total %lu\n",
            atomic_load_explicit(&poll_looks, memory_order_relaxed));
}

static void write_submissions(FILE *f)
{
    fprintf(f,
            "# HELP ringmaster_submission_groups_total Groups of concurrent single submissions"
            " stored in one statement (group commit).\n"
            "# TYPE ringmaster_submission_groups_total counter\n"
            "ringmaster_submission_groups_total %lu\n"
            "# HELP ringmaster_submissions_grouped_total Single submissions stored in such a"
            " group.\n"
            "# TYPE ringmaster_submissions_grouped_total counter\n"
            "ringmaster_submissions_grouped_total %lu\n"
            "# HELP ringmaster_submission_statements_pipelined_total Statements of submissions"
            " sent behind another still running, on the same connection.\n"
            "# TYPE ringmaster_submission_statements_pipelined_total counter\n"
            "ringmaster_submission_statements_pipelined_total %lu\n",
            atomic_load_explicit(&submit_groups, memory_order_relaxed),
            atomic_load_explicit(&submit_grouped, memory_order_relaxed),
            atomic_load_explicit(&submit_pipelined, memory_order_relaxed));
}

char *metrics_text(PGconn *db, const struct http_stats *http, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    write_database(f, db);
    write_rounds(f);
    write_http(f);
    write_guards(f, http);
    write_polls(f);
    write_submissions(f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
