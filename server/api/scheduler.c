#include "scheduler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "job_state.h"
#include "live/live.h"
#include "log.h"
#include "sched.h"
#include "spec/jobspec.h"
#include "store/db.h"

#define ROUNDS_DEFAULT 50
#define ROUNDS_MAX 500

/* The numeric settings, their bounds (also checked by the table) and their columns. */
static const struct setting {
    const char *name;
    double min, max;
} settings[] = {
    {"interval_s", 0.1, 3600},
    {"node_timeout_s", 1, 86400},
    {"min_resize_interval_s", 0, 86400},
    {"resize_cost_s", 0, 86400},
    {"grace_s", 0, 3600},
    {"quantum_s", 1, 86400},
    {"explore_stage_s", 1, 86400},
    {"max_wait_s", 1, 2592000},
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

/* clang-format off */
static const char *const config_sql =
    "SELECT c.policy, c.interval_s, c.node_timeout_s, c.min_resize_interval_s, c.resize_cost_s,"
    " c.grace_s, c.quantum_s, c.explore_stage_s, c.max_wait_s, " DB_TS("c.updated_at") ", r.id, "
    DB_TS("r.at") ","
    " r.policy,"
    " r.duration_us, r.jobs, r.actions, c.paused, (SELECT a.application_name FROM pg_locks l"
    " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.classid = "
    SCHED_LEADER_LOCK_CLASS " AND l.objid = " SCHED_LEADER_LOCK_OBJ " AND l.objsubid = 2 AND"
    " l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname ="
    " current_database()) LIMIT 1), r.server FROM scheduler_config c"
    " LEFT JOIN LATERAL (SELECT * FROM sched_rounds ORDER BY id DESC LIMIT 1) r ON true"
    " WHERE c.id = 1";
/* clang-format on */
#define C_UPDATED (1 + (int)NSETTINGS) /* c.updated_at, after the settings */
#define C_ROUND (C_UPDATED + 1)        /* r.id, r.at, r.policy, r.duration_us, r.jobs, r.actions */
#define C_PAUSED (C_ROUND + 6)         /* column of c.paused, after the lateral join's */

static json_t *policies_json(void)
{
    json_t *a = json_array();
    for (const struct sched_policy_ops *const *p = sched_policy_list(); *p; p++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", (*p)->name, "summary",
                                           (*p)->summary ? (*p)->summary : ""));
    return a;
}

static json_int_t col_int(const PGresult *r, int col)
{
    return (json_int_t)strtoll(PQgetvalue(r, 0, col), NULL, 10);
}

static json_t *config_json(const PGresult *r)
{
    json_t *j = json_pack("{s:s, s:s, s:o}", "policy", PQgetvalue(r, 0, 0), "updated_at",
                          PQgetvalue(r, 0, C_UPDATED), "policies", policies_json());
    for (size_t i = 0; i < NSETTINGS; i++)
        json_object_set_new(j, settings[i].name,
                            json_real(strtod(PQgetvalue(r, 0, 1 + (int)i), NULL)));
    json_t *last = json_null();
    if (!PQgetisnull(r, 0, C_ROUND))
        last = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I}", "id", col_int(r, C_ROUND), "at",
                         PQgetvalue(r, 0, C_ROUND + 1), "policy", PQgetvalue(r, 0, C_ROUND + 2),
                         "duration_us", col_int(r, C_ROUND + 3), "jobs", col_int(r, C_ROUND + 4),
                         "actions", col_int(r, C_ROUND + 5));
    json_object_set_new(j, "last_round", last);
    json_object_set_new(j, "paused", json_boolean(strcmp(PQgetvalue(r, 0, C_PAUSED), "t") == 0));
    /* the server that runs the rounds now (the leader lock's holder), and the last round's */
    json_object_set_new(j, "leader",
                        PQgetisnull(r, 0, C_PAUSED + 1)
                            ? json_null()
                            : json_string(PQgetvalue(r, 0, C_PAUSED + 1)));
    if (json_is_object(last))
        json_object_set_new(last, "server", json_string(PQgetvalue(r, 0, C_PAUSED + 2)));
    return j;
}

/* The cluster's record of estimates (sql/014): over the jobs completed in the last 30 days,
 * how many have an error recorded, its mean and median, and per source of the estimates. */
static const char *const estimates_sql =
    "SELECT count(*), avg(estimate_error), percentile_cont(0.5) WITHIN GROUP (ORDER BY"
    " estimate_error), COALESCE((SELECT json_object_agg(src, n) FROM (SELECT estimate_source AS"
    " src, count(*) AS n FROM jobs WHERE state = 'COMPLETED' AND estimate_error IS NOT NULL AND"
    " finished_at > now() - interval '30 days' GROUP BY 1) s)::text, '{}')"
    " FROM jobs WHERE state = 'COMPLETED' AND estimate_error IS NOT NULL"
    " AND finished_at > now() - interval '30 days'";

static json_t *estimates_json(PGconn *c)
{
    PGresult *r = db_exec(c, estimates_sql, 0, NULL);
    json_t *e = json_null();
    if (db_ok(r) && PQntuples(r) == 1) {
        json_t *by = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
        e = json_pack(
            "{s:I, s:o, s:o, s:o}", "jobs", col_int(r, 0), "mean_error",
            PQgetisnull(r, 0, 1) ? json_null() : json_real(strtod(PQgetvalue(r, 0, 1), NULL)),
            "median_error",
            PQgetisnull(r, 0, 2) ? json_null() : json_real(strtod(PQgetvalue(r, 0, 2), NULL)),
            "by_source", by ? by : json_object());
    }
    PQclear(r);
    return e;
}

void scheduler_get(struct api_call *call)
{
    PGresult *r = db_exec(call->db, config_sql, 0, NULL);
    if (!db_ok(r) || PQntuples(r) != 1) {
        api_db_error(call, r);
    } else {
        json_t *j = config_json(r);
        json_object_set_new(j, "estimates", estimates_json(call->db));
        api_respond_json(call, 200, j);
    }
    PQclear(r);
}

/* Checks every field of the body; fills params[0] (policy), params[1..NSETTINGS] (settings)
 * and params[1 + NSETTINGS] (paused), NULL for those absent. Returns 0, or -1 after a 400. */
static int config_or_respond(struct api_call *call, const json_t *body, const char **params,
                             char num[][32])
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        size_t i = 0;
        while (i < NSETTINGS && strcmp(settings[i].name, key) != 0)
            i++;
        if (strcmp(key, "policy") == 0) {
            if (!json_is_string(v) || !sched_policy_find(json_string_value(v)))
                return api_field_error(call, key, "expected one of the policies GET lists");
            params[0] = json_string_value(v);
        } else if (strcmp(key, "paused") == 0) {
            if (!json_is_boolean(v))
                return api_field_error(call, key, "expected true or false");
            params[1 + NSETTINGS] = json_is_true(v) ? "true" : "false";
        } else if (i < NSETTINGS) {
            double d = json_number_value(v);
            char want[64];
            snprintf(want, sizeof(want), "expected a number %g..%g", settings[i].min,
                     settings[i].max);
            if (!json_is_number(v) || !(d >= settings[i].min && d <= settings[i].max))
                return api_field_error(call, key, want);
            snprintf(num[i], sizeof(num[i]), "%.17g", d);
            params[1 + i] = num[i];
        } else {
            return api_field_error(call, key, "unknown field");
        }
    }
    return 0;
}

void scheduler_put(struct api_call *call)
{
    json_t *body;
    const char *params[2 + NSETTINGS] = {NULL};
    char num[NSETTINGS][32];
    if (api_body_or_respond(call, &body) < 0)
        return;
    if (config_or_respond(call, body, params, num) == 0) {
        int rc = db_command_params(
            call->db,
            "UPDATE scheduler_config SET policy = COALESCE($1, policy),"
            " interval_s = COALESCE($2::float8, interval_s),"
            " node_timeout_s = COALESCE($3::float8, node_timeout_s),"
            " min_resize_interval_s = COALESCE($4::float8, min_resize_interval_s),"
            " resize_cost_s = COALESCE($5::float8, resize_cost_s),"
            " grace_s = COALESCE($6::float8, grace_s),"
            " quantum_s = COALESCE($7::float8, quantum_s),"
            " explore_stage_s = COALESCE($8::float8, explore_stage_s),"
            " max_wait_s = COALESCE($9::float8, max_wait_s),"
            " paused = COALESCE($10::boolean, paused),"
            " updated_at = now() WHERE id = 1",
            2 + NSETTINGS, params);
        if (rc < 0) {
            api_db_error(call, NULL);
        } else {
            log_info("scheduler: settings changed by %s", call->who.name);
            sched_wake_signal();
            scheduler_get(call);
        }
    }
    json_decref(body);
}

static json_t *round_json(const PGresult *r, int i)
{
    return json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s}", "id",
                     (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "at", PQgetvalue(r, i, 1),
                     "policy", PQgetvalue(r, i, 2), "duration_us",
                     (json_int_t)strtoll(PQgetvalue(r, i, 3), NULL, 10), "jobs",
                     (json_int_t)strtoll(PQgetvalue(r, i, 4), NULL, 10), "decisions",
                     (json_int_t)strtoll(PQgetvalue(r, i, 5), NULL, 10), "actions",
                     (json_int_t)strtoll(PQgetvalue(r, i, 6), NULL, 10), "nodes_down",
                     (json_int_t)strtoll(PQgetvalue(r, i, 7), NULL, 10), "server",
                     PQgetvalue(r, i, 8));
}

void scheduler_rounds(struct api_call *call)
{
    const char *l = http_req_query(call->req, "limit");
    char *end = NULL;
    long limit = l ? strtol(l, &end, 10) : ROUNDS_DEFAULT;
    if (l && (strlen(l) > 4 || *end || limit < 1 || limit > ROUNDS_MAX)) {
        api_field_error(call, "limit", "expected 1..500");
        return;
    }
    char lim[16];
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *p[] = {lim};
    PGresult *r = db_exec(call->db,
                          "SELECT id, " DB_TS("at") ", policy, duration_us, jobs, decisions,"
                          " actions, nodes_down, server FROM sched_rounds"
                          " ORDER BY id DESC LIMIT $1",
                          1, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
    } else {
        json_t *items = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            json_array_append_new(items, round_json(r, i));
        api_respond_json(call, 200, json_pack("{s:o}", "items", items));
    }
    PQclear(r);
}
