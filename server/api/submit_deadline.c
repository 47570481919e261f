/* submit_deadline: the forecast finish of a job being submitted and the verdict on its
 * deadline (submit_deadline.h). */
#include "submit_deadline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "forecast.h"
#include "live/live.h"
#include "sched_estimate.h"
#include "store/db.h"

#define ACTIVE "('STARTING', 'RUNNING', 'RESIZING', 'MIGRATING')"

/* One statement, so that its parts see one snapshot: the clock, the GPUs free on up nodes,
 * then one row per running job (kind 1: its GPUs, its predicted finish), per waiting job of
 * priority $1 or above in queue order (kind 2: the GPUs it needs to start, the seconds the
 * last round predicted it to run) and per finished job of the prior's sample (kind 3: its
 * run time; the sample of the round's snapshot, server/live/snap.c). */
static const char *const forecast_sql =
    "WITH up AS (SELECT count(*) AS gpus FROM node_gpus g JOIN nodes n ON n.id = g.node_id"
    " WHERE n.state = 'UP'),"
    " held AS (SELECT a.job_id, count(*) AS gpus FROM allocations a JOIN jobs j"
    " ON j.id = a.job_id WHERE j.state IN " ACTIVE " GROUP BY a.job_id),"
    " fin AS (SELECT j.id, j.finished_at FROM jobs j WHERE j.state = 'COMPLETED'"
    " AND j.finished_at IS NOT NULL ORDER BY j.finished_at DESC LIMIT 500)"
    " SELECT 0, extract(epoch FROM now()), (SELECT gpus FROM up) - COALESCE((SELECT sum(gpus)"
    " FROM held), 0), 0, 0::bigint, 0::bigint"
    " UNION ALL SELECT 1, h.gpus, extract(epoch FROM s.predicted_finish), 0, 0, h.job_id"
    " FROM held h JOIN job_sched s ON s.job_id = h.job_id WHERE s.predicted_finish IS NOT NULL"
    " UNION ALL SELECT 2, CASE WHEN j.elastic AND j.min_gpus > 0 THEN j.min_gpus ELSE j.gpus END,"
    " extract(epoch FROM s.predicted_finish - s.predicted_start), j.priority,"
    " extract(epoch FROM j.submitted_at)::bigint, j.id"
    " FROM jobs j LEFT JOIN job_sched s ON s.job_id = j.id"
    " WHERE j.state = 'PENDING' AND j.priority >= $1::int"
    " UNION ALL SELECT 3, extract(epoch FROM f.finished_at - r.at), 0, 0, 0, 0 FROM fin f"
    " CROSS JOIN LATERAL (SELECT min(e.at) AS at FROM job_events e WHERE e.job_id = f.id"
    " AND e.to_state = 'RUNNING') r WHERE r.at IS NOT NULL AND f.finished_at > r.at"
    " ORDER BY 1, 4 DESC, 5, 6";

struct queue {
    double *left; /* seconds each waiting job runs; < 0 unknown */
};

static double queued_left(void *ctx, size_t k, int need)
{
    (void)need;
    return ((const struct queue *)ctx)->left[k];
}

static double num(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? -1 : strtod(PQgetvalue(r, row, col), NULL);
}

/* The forecast over the rows of forecast_sql (r) for a new job needing need GPUs. */
static double forecast_rows(const PGresult *r, int need)
{
    int n = PQntuples(r);
    double now = num(r, 0, 1), prior = -1, finish = -1;
    int nfree = (int)num(r, 0, 2);
    struct forecast_release *run = calloc((size_t)n + 1, sizeof(*run));
    struct forecast_wait *q = calloc((size_t)n + 1, sizeof(*q));
    double *left = calloc((size_t)n + 1, sizeof(*left));
    double *done = calloc((size_t)n + 1, sizeof(*done));
    size_t nrun = 0, nq = 0, ndone = 0;
    if (!run || !q || !left || !done)
        goto out;
    for (int i = 1; i < n; i++) {
        int kind = (int)num(r, i, 0);
        if (kind == 1)
            run[nrun++] = (struct forecast_release){num(r, i, 2), (int)num(r, i, 1)};
        else if (kind == 2) {
            q[nq] = (struct forecast_wait){(int)num(r, i, 1), -1, -1};
            left[nq++] = num(r, i, 2);
        } else if (kind == 3)
            done[ndone++] = num(r, i, 1);
    }
    prior = sched_estimate_prior_s(done, ndone, 0);
    for (size_t k = 0; k < nq; k++) /* not explained by a round yet: as long as the prior */
        if (!(left[k] > 0))
            left[k] = prior;
    q[nq] = (struct forecast_wait){need, -1, -1};
    left[nq++] = prior;
    struct queue ctx = {left};
    if (prior > 0 &&
        forecast_starts(now, nfree < 0 ? 0 : nfree, run, nrun, q, nq, queued_left, &ctx) == 0)
        finish = q[nq - 1].finish;
out:
    free(run);
    free(q);
    free(left);
    free(done);
    return finish;
}

/* The fallback: the queue-order forecast over what the last round wrote. */
static double queue_order(PGconn *c, const struct jobspec *spec)
{
    char prio[16];
    snprintf(prio, sizeof(prio), "%d", spec->priority);
    const char *p[] = {prio};
    PGresult *r = db_exec(c, forecast_sql, 1, p);
    double finish = -1;
    if (db_ok(r) && PQntuples(r) > 0)
        finish = forecast_rows(r, forecast_need(spec->elastic, spec->min_gpus, spec->gpus));
    PQclear(r);
    return finish;
}

struct submit_forecast submit_deadline_forecast(PGconn *c, const struct jobspec *spec,
                                                long long user_id)
{
    struct sched_job j = {.priority = spec->priority,
                          .requested_gpus = spec->gpus,
                          .min_gpus = spec->min_gpus,
                          .max_gpus = spec->max_gpus,
                          .elastic = spec->elastic,
                          .deadline = spec->deadline,
                          .user_id = user_id};
    struct live_submit_forecast o;
    /* an outlook that cannot tell (its pass saw no GPUs, or no finished job to give a length)
     * answers nothing the queue order could not */
    if (live_forecast_submission(&j, &o) == 0 && o.finish_p50 >= 0)
        return (struct submit_forecast){o.finish_p50, 1, o.start_p50, o.start_p90, o.finish_p90,
                                        o.as_of};
    return (struct submit_forecast){queue_order(c, spec), 0, -1, -1, -1, -1};
}

/* An epoch time as text for a float8 parameter, or NULL (unknown). */
static const char *param(char *buf, size_t len, double v)
{
    if (v < 0)
        return NULL;
    snprintf(buf, len, "%.3f", v);
    return buf;
}

int submit_deadline_store(PGconn *c, long long id, const struct submit_forecast *f)
{
    if (!f->outlook)
        return 0;
    char b[6][32];
    snprintf(b[0], sizeof(b[0]), "%lld", id);
    const char *p[] = {b[0],
                       param(b[1], sizeof(b[1]), f->start_p50),
                       param(b[2], sizeof(b[2]), f->start_p90),
                       param(b[3], sizeof(b[3]), f->finish),
                       param(b[4], sizeof(b[4]), f->finish_p90),
                       param(b[5], sizeof(b[5]), f->as_of)};
    return db_command_params(c,
                             "INSERT INTO job_forecasts (job_id, start_p50, start_p90, finish_p50,"
                             " finish_p90, as_of) SELECT $1::bigint, to_timestamp($2::float8),"
                             " to_timestamp($3::float8), to_timestamp($4::float8),"
                             " to_timestamp($5::float8), to_timestamp($6::float8)"
                             " ON CONFLICT (job_id) DO NOTHING",
                             6, p);
}

/* The finish in the server's local time: "Thu 14:10" within six days, else "2026-12-24 09:00". */
static void local_label(double at, double now, char *buf, size_t len)
{
    time_t t = (time_t)at;
    struct tm tm;
    buf[0] = '\0';
    if (!localtime_r(&t, &tm))
        return;
    strftime(buf, len, at - now < 6 * 86400.0 ? "%a %H:%M" : "%Y-%m-%d %H:%M", &tm);
}

json_t *submit_deadline_json(double deadline, double finish)
{
    char label[32] = "", text[160], at[40];
    enum deadline_verdict v = deadline_check(deadline, finish);
    if (v == DEADLINE_MEETS || v == DEADLINE_MISSES) {
        local_label(finish, (double)time(NULL), label, sizeof(label));
        jobspec_deadline_text(finish, at, sizeof(at));
    }
    deadline_text(deadline, finish, label, text, sizeof(text));
    return json_pack("{s:o, s:s, s:s}", "finish",
                     v == DEADLINE_MEETS || v == DEADLINE_MISSES ? json_string(at) : json_null(),
                     "verdict", deadline_verdict_name(v), "text", text);
}
