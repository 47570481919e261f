/* scheduler: GET and PUT /api/v1/scheduler (the settings, checked and stored by the core's
 * table of them, scheduler/settings.h) and GET /api/v1/scheduler/rounds. */
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

/* The settings (the core's table, scheduler/settings.h: every column of scheduler_config c
 * under its own name), the time of their last change, the last round and the leader. */
/* clang-format off */
static const char *const config_sql =
    "SELECT c.*, " DB_TS("c.updated_at") " AS updated_text, r.id AS round_id, " DB_TS("r.at")
    " AS round_at, r.policy AS round_policy, r.duration_us AS round_duration_us,"
    " r.jobs AS round_jobs, r.actions AS round_actions, (SELECT a.application_name FROM pg_locks l"
    " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.classid = "
    LIVE_LEADER_LOCK_CLASS " AND l.objid = " LIVE_LEADER_LOCK_OBJ " AND l.objsubid = 2 AND"
    " l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname ="
    " current_database()) LIMIT 1) AS leader, r.server AS round_server FROM scheduler_config c"
    " LEFT JOIN LATERAL (SELECT * FROM sched_rounds ORDER BY id DESC LIMIT 1) r ON true"
    " WHERE c.id = 1";
/* clang-format on */

static json_t *policies_json(void)
{
    json_t *a = json_array();
    for (const struct sched_policy_ops *const *p = sched_policy_list(); *p; p++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", (*p)->name, "summary",
                                           (*p)->summary ? (*p)->summary : ""));
    return a;
}

/* The text of the column named name in row 0 of r ("" when r has none). */
static const char *col_text(const PGresult *r, const char *name)
{
    int c = PQfnumber(r, name);
    return c < 0 ? "" : PQgetvalue(r, 0, c);
}

static int col_null(const PGresult *r, const char *name)
{
    int c = PQfnumber(r, name);
    return c < 0 || PQgetisnull(r, 0, c);
}

static json_int_t col_int(const PGresult *r, const char *name)
{
    return (json_int_t)strtoll(col_text(r, name), NULL, 10);
}

/* The settings of type t of s into j (new members), in the table's order. */
static void settings_json(json_t *j, const struct settings *s, enum settings_type t)
{
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        if (d->type != t)
            continue;
        if (t == SETTINGS_POLICY)
            json_object_set_new(j, d->name, json_string(settings_policy_of(d, s)));
        else if (t == SETTINGS_SECONDS)
            json_object_set_new(j, d->name, json_real(settings_seconds_of(d, s)));
        else
            json_object_set_new(j, d->name, json_boolean(settings_bool_of(d, s)));
    }
}

/* GET's answer (new): the policy, updated_at, policies, the numbers, last_round, paused and
 * leader, in that order. */
static json_t *config_json(const PGresult *r, const struct settings *s)
{
    json_t *j = json_object();
    settings_json(j, s, SETTINGS_POLICY);
    json_object_set_new(j, "updated_at", json_string(col_text(r, "updated_text")));
    json_object_set_new(j, "policies", policies_json());
    settings_json(j, s, SETTINGS_SECONDS);
    json_t *last = json_null();
    if (!col_null(r, "round_id"))
        last = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I}", "id", col_int(r, "round_id"), "at",
                         col_text(r, "round_at"), "policy", col_text(r, "round_policy"),
                         "duration_us", col_int(r, "round_duration_us"), "jobs",
                         col_int(r, "round_jobs"), "actions", col_int(r, "round_actions"));
    json_object_set_new(j, "last_round", last);
    settings_json(j, s, SETTINGS_BOOL);
    /* the server that runs the rounds now (the leader lock's holder), and the last round's */
    json_object_set_new(j, "leader",
                        col_null(r, "leader") ? json_null() : json_string(col_text(r, "leader")));
    if (json_is_object(last))
        json_object_set_new(last, "server", json_string(col_text(r, "round_server")));
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
            "{s:I, s:o, s:o, s:o}", "jobs", (json_int_t)strtoll(PQgetvalue(r, 0, 0), NULL, 10),
            "mean_error",
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
    struct settings s;
    char err[128];
    if (!db_ok(r) || PQntuples(r) != 1) {
        api_db_error(call, r);
    } else if (live_config_read(r, 0, &s, err, sizeof(err)) < 0) {
        log_error("GET /api/v1/scheduler: %s", err);
        api_db_error(call, NULL);
    } else {
        json_t *j = config_json(r, &s);
        json_object_set_new(j, "estimates", estimates_json(call->db));
        api_respond_json(call, 200, j);
    }
    PQclear(r);
}

/* One field of the body, the setting d, into s. Returns 0, or -1 after a 400. */
static int setting_or_respond(struct api_call *call, const struct settings_desc *d, const json_t *v,
                              struct settings *s)
{
    char want[64];
    double x = json_number_value(v);
    switch (d->type) {
    case SETTINGS_POLICY:
        if (!json_is_string(v) || settings_set_policy(d, s, json_string_value(v)) < 0)
            return api_field_error(call, d->name, "expected one of the policies GET lists");
        return 0;
    case SETTINGS_BOOL:
        if (!json_is_boolean(v))
            return api_field_error(call, d->name, "expected true or false");
        *settings_bool(d, s) = json_is_true(v);
        return 0;
    case SETTINGS_SECONDS:
        snprintf(want, sizeof(want), "expected a number %g..%g", d->min, d->max);
        if (!json_is_number(v) || !settings_in_bounds(d, x))
            return api_field_error(call, d->name, want);
        *settings_seconds(d, s) = x;
        return 0;
    }
    return api_field_error(call, d->name, "unknown field");
}

/* Checks every field of the body into s, marking given[k] for row k of the table. Returns 0,
 * or -1 after a 400. */
static int config_or_respond(struct api_call *call, const json_t *body, struct settings *s,
                             unsigned char *given)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        const struct settings_desc *d = settings_find(key);
        if (!d)
            return api_field_error(call, key, "unknown field");
        if (setting_or_respond(call, d, v, s) < 0)
            return -1;
        given[d - settings_list()] = 1;
    }
    return 0;
}

void scheduler_put(struct api_call *call)
{
    json_t *body;
    struct settings s;
    unsigned char given[SETTINGS_MAX] = {0};
    if (api_body_or_respond(call, &body) < 0)
        return;
    settings_defaults(&s);
    if (config_or_respond(call, body, &s, given) == 0) {
        if (live_config_save(call->db, &s, given) < 0) {
            api_db_error(call, NULL);
        } else {
            log_info("scheduler: settings changed by %s", call->who.name);
            live_wake_signal();
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
