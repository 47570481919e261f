#include "sched_api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "db.h"
#include "http.h"
#include "job_state.h"
#include "jobs.h"
#include "jobspec.h"
#include "log.h"
#include "problem.h"
#include "sched.h"
#include "sched_wake.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define ROUNDS_DEFAULT 50
#define ROUNDS_MAX 500

/* The numeric settings, their bounds (also checked by the table) and their columns. */
static const struct setting {
    const char *name;
    double min, max;
} settings[] = {
    {"interval_s", 0.1, 3600},   {"node_timeout_s", 1, 86400}, {"min_resize_interval_s", 0, 86400},
    {"resize_cost_s", 0, 86400}, {"grace_s", 0, 3600},         {"quantum_s", 1, 86400},
    {"explore_stage_s", 1, 86400},
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

/* clang-format off */
static const char *const config_sql =
    "SELECT c.policy, c.interval_s, c.node_timeout_s, c.min_resize_interval_s, c.resize_cost_s,"
    " c.grace_s, c.quantum_s, c.explore_stage_s, " TS("c.updated_at") ", r.id, " TS("r.at") ","
    " r.policy,"
    " r.duration_us, r.jobs, r.actions, c.paused FROM scheduler_config c"
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
    return j;
}

void sched_api_get(struct api_call *call)
{
    PGresult *r = db_exec(call->db, config_sql, 0, NULL);
    if (!db_ok(r) || PQntuples(r) != 1)
        api_db_error(call, r);
    else
        api_respond_json(call, 200, config_json(r));
    PQclear(r);
}

static int bad_field(struct api_call *call, const char *field, const char *fmt, const char *what)
{
    char detail[256];
    snprintf(detail, sizeof(detail), fmt, field, what);
    problem_send(call->req, 400, json_pack("[{s:s, s:s}]", "field", field, "detail", detail), NULL,
                 "%s", detail);
    return -1;
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
                return bad_field(call, key, "%s: %s", "expected one of the policies GET lists");
            params[0] = json_string_value(v);
        } else if (strcmp(key, "paused") == 0) {
            if (!json_is_boolean(v))
                return bad_field(call, key, "%s: %s", "expected true or false");
            params[1 + NSETTINGS] = json_is_true(v) ? "true" : "false";
        } else if (i < NSETTINGS) {
            double d = json_number_value(v);
            char want[64];
            snprintf(want, sizeof(want), "expected a number %g..%g", settings[i].min,
                     settings[i].max);
            if (!json_is_number(v) || !(d >= settings[i].min && d <= settings[i].max))
                return bad_field(call, key, "%s: %s", want);
            snprintf(num[i], sizeof(num[i]), "%.17g", d);
            params[1 + i] = num[i];
        } else {
            return bad_field(call, key, "%s: %s", "unknown field");
        }
    }
    return 0;
}

void sched_api_put(struct api_call *call)
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
            " paused = COALESCE($9::boolean, paused),"
            " updated_at = now() WHERE id = 1",
            2 + NSETTINGS, params);
        if (rc < 0) {
            api_db_error(call, NULL);
        } else {
            log_info("scheduler: settings changed by %s", call->who.name);
            sched_wake_signal();
            sched_api_get(call);
        }
    }
    json_decref(body);
}

static json_t *round_json(const PGresult *r, int i)
{
    return json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "id",
                     (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "at", PQgetvalue(r, i, 1),
                     "policy", PQgetvalue(r, i, 2), "duration_us",
                     (json_int_t)strtoll(PQgetvalue(r, i, 3), NULL, 10), "jobs",
                     (json_int_t)strtoll(PQgetvalue(r, i, 4), NULL, 10), "decisions",
                     (json_int_t)strtoll(PQgetvalue(r, i, 5), NULL, 10), "actions",
                     (json_int_t)strtoll(PQgetvalue(r, i, 6), NULL, 10), "nodes_down",
                     (json_int_t)strtoll(PQgetvalue(r, i, 7), NULL, 10));
}

void sched_api_rounds(struct api_call *call)
{
    const char *l = http_req_query(call->req, "limit");
    char *end = NULL;
    long limit = l ? strtol(l, &end, 10) : ROUNDS_DEFAULT;
    if (l && (strlen(l) > 4 || *end || limit < 1 || limit > ROUNDS_MAX)) {
        bad_field(call, "limit", "%s: %s", "expected 1..500");
        return;
    }
    char lim[16];
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *p[] = {lim};
    PGresult *r = db_exec(call->db,
                          "SELECT id, " TS("at") ", policy, duration_us, jobs, decisions, actions,"
                                                 " nodes_down FROM sched_rounds"
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

/* A locked job (inside BEGIN): its state and sizes. */
struct locked_job {
    char id[24];
    enum job_state state;
    int gpus, min_gpus, max_gpus, elastic, priority;
};

/* BEGIN, then locks job call->id. Returns 0, or -1 after answering (and rolling back). */
static int lock_job_or_respond(struct api_call *call, struct locked_job *j)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return -1;
    snprintf(j->id, sizeof(j->id), "%lld", id);
    const char *p[] = {j->id};
    PGresult *r = db_command(call->db, "BEGIN") == 0
                      ? db_exec(call->db,
                                "SELECT state, user_id, gpus, min_gpus, max_gpus, elastic,"
                                " priority FROM jobs WHERE id = $1 FOR UPDATE",
                                1, p)
                      : NULL;
    int rc = -1;
    if (!r || !db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        problem_respond(call->req, 404, "no job %lld", id);
    else if (call->who.role != AUTH_ADMIN && strtoll(PQgetvalue(r, 0, 1), NULL, 10) != call->who.id)
        problem_respond(call->req, 403, "job %lld belongs to another user", id);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &j->state) < 0 || job_state_is_terminal(j->state))
        problem_respond(call->req, 409, "job %lld has ended (%s)", id, PQgetvalue(r, 0, 0));
    else
        rc = 0;
    if (rc == 0) {
        j->gpus = atoi(PQgetvalue(r, 0, 2));
        j->min_gpus = atoi(PQgetvalue(r, 0, 3));
        j->max_gpus = atoi(PQgetvalue(r, 0, 4));
        j->elastic = strcmp(PQgetvalue(r, 0, 5), "t") == 0;
        j->priority = atoi(PQgetvalue(r, 0, 6));
    }
    PQclear(r);
    if (rc < 0)
        db_command(call->db, "ROLLBACK");
    return rc;
}

/* Writes the job's event (state unchanged), commits, wakes the scheduler and answers. */
static void finish_request(struct api_call *call, const struct locked_job *j, const char *event,
                           const char *detail, unsigned status)
{
    const char *st = job_state_name(j->state);
    const char *p[] = {j->id, st, event, call->who.name, detail};
    if (db_command_params(call->db,
                          "INSERT INTO job_events (job_id, from_state, to_state, event, actor,"
                          " detail) VALUES ($1, $2, $2, $3, $4, $5)",
                          5, p) < 0 ||
        db_command(call->db, "COMMIT") < 0) {
        db_command(call->db, "ROLLBACK");
        api_db_error(call, NULL);
        return;
    }
    log_info("job %s: %s (by %s: %s)", j->id, event, call->who.name, detail);
    sched_wake_signal();
    jobs_respond(call, strtoll(j->id, NULL, 10), status);
}

/* The integer field of the body within lo..hi; -1 after a 400. */
static int int_field_or_respond(struct api_call *call, const json_t *body, const char *field,
                                long lo, long hi, int *out)
{
    const json_t *v = json_object_get(body, field);
    char want[64];
    snprintf(want, sizeof(want), "expected an integer %ld..%ld", lo, hi);
    if (json_object_size(body) != 1 || !json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > hi)
        return bad_field(call, field, "%s: %s", want);
    *out = (int)json_integer_value(v);
    return 0;
}

void sched_api_resize(struct api_call *call)
{
    json_t *body;
    struct locked_job j;
    int n;
    if (api_body_or_respond(call, &body) < 0)
        return;
    if (int_field_or_respond(call, body, "gpus", 1, JOBSPEC_MAX_GPUS, &n) == 0 &&
        lock_job_or_respond(call, &j) == 0) {
        char detail[128], ns[16];
        snprintf(ns, sizeof(ns), "%d", n);
        snprintf(detail, sizeof(detail), "requested GPUs %d -> %d", j.gpus, n);
        const char *p[] = {j.id, ns};
        if (j.elastic && (n < j.min_gpus || n > j.max_gpus)) {
            db_command(call->db, "ROLLBACK");
            char b[64];
            snprintf(b, sizeof(b), "expected %d..%d (min_gpus..max_gpus)", j.min_gpus, j.max_gpus);
            bad_field(call, "gpus", "%s: %s", b);
        } else if (db_command_params(call->db,
                                     j.elastic ? "UPDATE jobs SET gpus = $2, updated_at = now()"
                                                 " WHERE id = $1"
                                               : "UPDATE jobs SET gpus = $2, min_gpus = $2,"
                                                 " max_gpus = $2, updated_at = now() WHERE id = $1",
                                     2, p) < 0) {
            db_command(call->db, "ROLLBACK");
            api_db_error(call, NULL);
        } else {
            finish_request(call, &j, "resize-request", detail, 200);
        }
    }
    json_decref(body);
}

void sched_api_priority(struct api_call *call)
{
    json_t *body;
    struct locked_job j;
    int prio;
    if (api_body_or_respond(call, &body) < 0)
        return;
    if (int_field_or_respond(call, body, "priority", JOBSPEC_MIN_PRIORITY, JOBSPEC_MAX_PRIORITY,
                             &prio) == 0 &&
        lock_job_or_respond(call, &j) == 0) {
        char detail[64], ps[16];
        snprintf(ps, sizeof(ps), "%d", prio);
        snprintf(detail, sizeof(detail), "priority %d -> %d", j.priority, prio);
        const char *p[] = {j.id, ps};
        if (db_command_params(call->db,
                              "UPDATE jobs SET priority = $2, updated_at = now() WHERE id = $1", 2,
                              p) < 0) {
            db_command(call->db, "ROLLBACK");
            api_db_error(call, NULL);
        } else {
            finish_request(call, &j, "priority", detail, 200);
        }
    }
    json_decref(body);
}

/* The optional body of migrate: {"node": id} (0 or absent: anywhere). -1 after a 400. */
static int migrate_target_or_respond(struct api_call *call, long long *node)
{
    size_t len;
    http_req_body(call->req, &len);
    json_t *body = NULL;
    *node = 0;
    if (len == 0)
        return 0;
    if (api_body_or_respond(call, &body) < 0)
        return -1;
    const json_t *v = json_object_get(body, "node");
    int rc = 0;
    if (json_object_size(body) > 1 || (v && (!json_is_integer(v) || json_integer_value(v) < 0)))
        rc = bad_field(call, "node", "%s: %s", "expected a node id");
    else if (v)
        *node = json_integer_value(v);
    json_decref(body);
    return rc;
}

static int node_up_or_respond(struct api_call *call, long long node)
{
    if (node == 0)
        return 0;
    char ns[24];
    snprintf(ns, sizeof(ns), "%lld", node);
    const char *p[] = {ns};
    PGresult *r = db_exec(call->db, "SELECT state FROM nodes WHERE id = $1", 1, p);
    int rc = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1 || strcmp(PQgetvalue(r, 0, 0), "UP") != 0)
        bad_field(call, "node", "%s: %s", "no such node up");
    else
        rc = 0;
    PQclear(r);
    return rc;
}

void sched_api_migrate(struct api_call *call)
{
    long long node;
    struct locked_job j;
    if (migrate_target_or_respond(call, &node) < 0 || node_up_or_respond(call, node) < 0 ||
        lock_job_or_respond(call, &j) < 0)
        return;
    if (j.state != JOB_RUNNING) {
        db_command(call->db, "ROLLBACK");
        problem_respond(call->req, 409, "job %s is %s: only a RUNNING job can migrate", j.id,
                        job_state_name(j.state));
        return;
    }
    char ns[24], detail[64];
    snprintf(ns, sizeof(ns), "%lld", node);
    snprintf(detail, sizeof(detail), node ? "to node %lld" : "to any other node", node);
    const char *p[] = {j.id, ns};
    if (db_command_params(call->db,
                          "INSERT INTO job_sched (job_id, migrate_to) VALUES ($1, $2)"
                          " ON CONFLICT (job_id) DO UPDATE SET migrate_to = $2",
                          2, p) < 0) {
        db_command(call->db, "ROLLBACK");
        api_db_error(call, NULL);
        return;
    }
    finish_request(call, &j, "migrate-request", detail, 202);
}

static json_t *text_or_null(const PGresult *r, int i, int c)
{
    return PQgetisnull(r, i, c) ? json_null() : json_string(PQgetvalue(r, i, c));
}

/* Whether a job in state (a name) is one the rounds predict: waiting, holding GPUs or on
 * its way to; a SUSPENDED or ended job's row is left from an earlier round. */
static int predicted_state(const char *state)
{
    enum job_state st;
    return state && job_state_parse(state, &st) == 0 && !job_state_is_terminal(st) &&
           st != JOB_SUSPENDED;
}

/* Sets the queue fields of job from row i (or nulls when r is NULL), and predicted_finish. */
static void queue_fields(json_t *job, const PGresult *r, int i)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    int waiting = r && state && strcmp(state, "PENDING") == 0;
    json_object_set_new(job, "predicted_finish",
                        r && predicted_state(state) ? text_or_null(r, i, 5) : json_null());
    json_object_set_new(job, "pending_reason", waiting ? text_or_null(r, i, 1) : json_null());
    json_object_set_new(job, "queue_position",
                        waiting && !PQgetisnull(r, i, 2)
                            ? json_integer(strtoll(PQgetvalue(r, i, 2), NULL, 10))
                            : json_null());
    json_object_set_new(job, "predicted_start", waiting ? text_or_null(r, i, 3) : json_null());
}

#define SCHED_COLS                                                                                 \
    "job_id, pending_reason, queue_position, " TS("predicted_start") ", model::text, "             \
    TS("predicted_finish")

static const char *const allocs_sql =
    "SELECT job_id, node_id, string_agg(gpu_idx::text, ' ' ORDER BY gpu_idx), count(*)"
    " FROM allocations WHERE job_id = ANY($1::bigint[]) GROUP BY job_id, node_id"
    " ORDER BY job_id, node_id";

/* Sets "allocation" [{node, gpus: [index...]}] and "world_size" of job from the rows of
 * allocs_sql that belong to it (r may be NULL: none). */
static void alloc_fields(json_t *job, const PGresult *r)
{
    long long id = json_integer_value(json_object_get(job, "id"));
    json_t *alloc = json_array();
    long long world = 0;
    for (int i = 0; r && i < PQntuples(r); i++) {
        if (strtoll(PQgetvalue(r, i, 0), NULL, 10) != id)
            continue;
        json_t *gpus = json_array();
        for (char *g = PQgetvalue(r, i, 2), *end; *g; g = end) {
            json_array_append_new(gpus, json_integer(strtol(g, &end, 10)));
            if (end == g)
                break;
        }
        json_array_append_new(alloc, json_pack("{s:I, s:o}", "node",
                                               (json_int_t)strtoll(PQgetvalue(r, i, 1), NULL, 10),
                                               "gpus", gpus));
        world += strtoll(PQgetvalue(r, i, 3), NULL, 10);
    }
    json_object_set_new(job, "allocation", alloc);
    json_object_set_new(job, "world_size", json_integer(world));
}

/* "{1,2,3}": the ids of the jobs in items (new text, or NULL). */
static char *id_array(const json_t *items)
{
    size_t n = json_array_size(items);
    char *ids = malloc(n * 24 + 3);
    if (!ids)
        return NULL;
    size_t o = (size_t)sprintf(ids, "{");
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(
            ids + o, "%s%lld", i ? "," : "",
            (long long)json_integer_value(json_object_get(json_array_get(items, i), "id")));
    sprintf(ids + o, "}");
    return ids;
}

static PGresult *query_ids(PGconn *c, const char *sql, const char *ids)
{
    const char *p[] = {ids};
    PGresult *r = db_exec(c, sql, 1, p);
    if (!db_ok(r)) {
        PQclear(r);
        return NULL;
    }
    return r;
}

/* The job's model object with the scheduler's fields merged in (the scheduler's win). */
static void merge_model(json_t *job, const char *fit_text)
{
    json_t *fit = json_loads(fit_text, 0, NULL);
    if (!json_is_object(fit)) {
        json_decref(fit);
        return;
    }
    json_t *model = json_object_get(job, "model");
    if (!json_is_object(model)) {
        model = json_object();
        json_object_set_new(job, "model", model);
    }
    json_object_update(model, fit);
    json_decref(fit);
}

json_t *sched_api_job_fields(PGconn *c, json_t *job)
{
    if (!job)
        return NULL;
    json_t *one = json_pack("[O]", job);
    char *ids = id_array(one);
    json_decref(one);
    PGresult *r = ids ? query_ids(c,
                                  "SELECT " SCHED_COLS " FROM job_sched"
                                  " WHERE job_id = ANY($1::bigint[])",
                                  ids)
                      : NULL;
    PGresult *a = ids ? query_ids(c, allocs_sql, ids) : NULL;
    int found = r && PQntuples(r) == 1;
    queue_fields(job, found ? r : NULL, 0);
    if (found && !PQgetisnull(r, 0, 4))
        merge_model(job, PQgetvalue(r, 0, 4));
    alloc_fields(job, a);
    PQclear(r);
    PQclear(a);
    free(ids);
    return job;
}

void sched_api_model(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db,
                          "SELECT s.model::text FROM jobs j LEFT JOIN job_sched s"
                          " ON s.job_id = j.id WHERE j.id = $1",
                          1, p);
    json_t *fit = db_ok(r) && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)
                      ? json_loads(PQgetvalue(r, 0, 0), 0, NULL)
                      : NULL;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        problem_respond(call->req, 404, "no job %lld", id);
    else if (!fit)
        problem_respond(call->req, 404, "job %lld has no model yet", id);
    else
        api_respond_json(call, 200, json_incref(fit));
    json_decref(fit);
    PQclear(r);
}

json_t *sched_api_list_fields(PGconn *c, json_t *page)
{
    json_t *items = json_object_get(page, "items");
    char *ids = id_array(items);
    if (!ids)
        return page;
    PGresult *r = query_ids(c,
                            "SELECT " SCHED_COLS " FROM job_sched"
                            " WHERE job_id = ANY($1::bigint[]) ORDER BY job_id",
                            ids);
    PGresult *a = query_ids(c, allocs_sql, ids);
    free(ids);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *job = json_array_get(items, i);
        long long id = json_integer_value(json_object_get(job, "id"));
        int row = -1;
        for (int k = 0; r && k < PQntuples(r) && row < 0; k++)
            if (strtoll(PQgetvalue(r, k, 0), NULL, 10) == id)
                row = k;
        queue_fields(job, row >= 0 ? r : NULL, row);
        alloc_fields(job, a);
    }
    PQclear(r);
    PQclear(a);
    return page;
}
