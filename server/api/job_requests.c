/* job_requests: the handlers of requests on a job that the scheduler carries out at its next
 * round (resize, migrate, priority) and of the scheduler's model of the job. */
#include "job_requests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "job_state.h"
#include "jobview.h"
#include "live/live.h"
#include "log.h"
#include "spec/jobspec.h"
#include "store/db.h"

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
        http_problem(call->req, 404, "no job %lld", id);
    else if (call->who.role != AUTH_ADMIN && strtoll(PQgetvalue(r, 0, 1), NULL, 10) != call->who.id)
        http_problem(call->req, 403, "job %lld belongs to another user", id);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &j->state) < 0 || job_state_is_terminal(j->state))
        http_problem(call->req, 409, "job %lld has ended (%s)", id, PQgetvalue(r, 0, 0));
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
    live_wake_signal();
    jobview_respond(call, strtoll(j->id, NULL, 10), status, 1);
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
        return api_field_error(call, field, want);
    *out = (int)json_integer_value(v);
    return 0;
}

void jobs_resize(struct api_call *call)
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
            api_field_error(call, "gpus", b);
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

void jobs_priority(struct api_call *call)
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
        rc = api_field_error(call, "node", "expected a node id");
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
        api_field_error(call, "node", "no such node up");
    else
        rc = 0;
    PQclear(r);
    return rc;
}

void jobs_migrate(struct api_call *call)
{
    long long node;
    struct locked_job j;
    if (migrate_target_or_respond(call, &node) < 0 || node_up_or_respond(call, node) < 0 ||
        lock_job_or_respond(call, &j) < 0)
        return;
    if (j.state != JOB_RUNNING) {
        db_command(call->db, "ROLLBACK");
        http_problem(call->req, 409, "job %s is %s: only a RUNNING job can migrate", j.id,
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

void jobs_model(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "job", &id) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db,
                          "SELECT s.model::text, j.state FROM jobs j LEFT JOIN job_sched s"
                          " ON s.job_id = j.id WHERE j.id = $1",
                          1, p);
    json_t *fit = db_ok(r) && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)
                      ? json_loads(PQgetvalue(r, 0, 0), 0, NULL)
                      : NULL;
    if (fit)
        jobview_model_now(fit, PQgetvalue(r, 0, 1));
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %lld", id);
    else if (!fit)
        http_problem(call->req, 404, "job %lld has no model yet", id);
    else
        api_respond_json(call, 200, json_incref(fit));
    json_decref(fit);
    PQclear(r);
}
