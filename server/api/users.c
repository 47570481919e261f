/* users: the /api/v1/users handlers (create with a new token, list, patch share and quota)
 * and whoami. */
#include "users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "live/live.h"
#include "log.h"
#include "store/db.h"

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= AUTH_NAME_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* Checks the body; returns 0 with name and role, or -1 after a 400. */
static int user_body_or_respond(struct api_call *call, json_t *body, const char **name,
                                enum auth_role *role)
{
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        if (strcmp(k, "name") != 0 && strcmp(k, "role") != 0) {
            return api_field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field");
        }
    }
    json_t *n = json_object_get(body, "name");
    json_t *r = json_object_get(body, "role");
    if (!json_is_string(n) || !name_ok(json_string_value(n))) {
        return api_field_error(call, "name", "expected 1..64 of A-Z a-z 0-9 . _ -");
    }
    if (!json_is_string(r) || auth_role_parse(json_string_value(r), role) < 0) {
        return api_field_error(call, "role", "expected admin, user or worker");
    }
    *name = json_string_value(n);
    return 0;
}

void users_create(struct api_call *call)
{
    json_t *body;
    const char *name = NULL;
    enum auth_role role;
    char token[AUTH_TOKEN_LEN + 1];
    long long id;
    if (api_body_or_respond(call, &body) < 0)
        return;
    if (user_body_or_respond(call, body, &name, &role) == 0) {
        int rc = auth_user_create(call->db, name, role, token, &id);
        if (rc == -1) {
            http_problem(call->req, 409, "a user named %s exists", name);
        } else if (rc < 0) {
            api_db_error(call, NULL);
        } else {
            log_info("user %lld: %s created with role %s by %s", id, name, auth_role_name(role),
                     call->who.name);
            api_respond_json(call, 201,
                             json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)id, "name", name,
                                       "role", auth_role_name(role), "token", token));
        }
    }
    json_decref(body);
}

/* Each user with its share, its quota, the GPUs its jobs hold now and its waiting jobs. */
static const char *const list_sql =
    "SELECT u.id, u.name, u.role, " DB_TS("u.created_at") ", u.share, u.max_gpus,"
    " (SELECT count(DISTINCT (a.node_id, a.gpu_idx)) FROM allocations a JOIN jobs j"
    " ON j.id = a.job_id WHERE j.user_id = u.id),"
    " (SELECT count(*) FROM jobs j WHERE j.user_id = u.id AND j.state = 'PENDING')"
    " FROM users u WHERE $1::text IS NULL OR u.id::text = $1 OR u.name = $1 ORDER BY u.id";

static json_t *user_json(const PGresult *r, int i)
{
    return json_pack("{s:I, s:s, s:s, s:s, s:f, s:o, s:I, s:I}", "id",
                     (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "name",
                     PQgetvalue(r, i, 1), "role", PQgetvalue(r, i, 2), "created_at",
                     PQgetvalue(r, i, 3), "share", strtod(PQgetvalue(r, i, 4), NULL), "max_gpus",
                     PQgetisnull(r, i, 5) ? json_null()
                                          : json_integer(strtoll(PQgetvalue(r, i, 5), NULL, 10)),
                     "gpus_held", (json_int_t)strtoll(PQgetvalue(r, i, 6), NULL, 10),
                     "jobs_pending", (json_int_t)strtoll(PQgetvalue(r, i, 7), NULL, 10));
}

void users_list(struct api_call *call)
{
    const char *p[] = {NULL};
    api_respond_rows(call, db_exec(call->db, list_sql, 1, p), user_json);
}

/* Checks a PATCH body: share (0 < s <= 1000) and max_gpus (1..100000, or null: no quota).
 * Fills the texts (NULL: unchanged; "none" in *quota: clear it). Returns 0, or -1 after 400. */
static int patch_body_or_respond(struct api_call *call, json_t *body, char share[32],
                                 char quota[24], const char **ps, const char **pq)
{
    const char *k;
    json_t *v;
    *ps = *pq = NULL;
    json_object_foreach(body, k, v)
    {
        if (strcmp(k, "share") == 0) {
            double x = json_number_value(v);
            if (!json_is_number(v) || !(x > 0 && x <= 1000))
                return api_field_error(call, k, "expected a number in (0, 1000]");
            snprintf(share, 32, "%.17g", x);
            *ps = share;
        } else if (strcmp(k, "max_gpus") == 0) {
            if (json_is_null(v)) {
                snprintf(quota, 24, "none");
            } else if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                       json_integer_value(v) > 100000) {
                return api_field_error(call, k, "expected an integer 1..100000, or null");
            } else {
                snprintf(quota, 24, "%lld", (long long)json_integer_value(v));
            }
            *pq = quota;
        } else {
            return api_field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field");
        }
    }
    return 0;
}

void users_patch(struct api_call *call)
{
    json_t *body;
    char share[32], quota[24];
    const char *ps, *pq;
    if (api_body_or_respond(call, &body) < 0)
        return;
    if (patch_body_or_respond(call, body, share, quota, &ps, &pq) == 0) {
        const char *p[] = {call->id, ps, pq};
        PGresult *r = db_exec(call->db,
                              "UPDATE users SET share = COALESCE($2::float8, share),"
                              " max_gpus = CASE WHEN $3::text IS NULL THEN max_gpus"
                              " WHEN $3 = 'none' THEN NULL ELSE $3::int END"
                              " WHERE id::text = $1 OR name = $1 RETURNING id",
                              3, p);
        if (!db_ok(r)) {
            api_db_error(call, r);
        } else if (PQntuples(r) != 1) {
            http_problem(call->req, 404, "no user %s", call->id);
        } else {
            log_info("user %s: share %s, max_gpus %s (by %s)", call->id, ps ? ps : "kept",
                     pq ? pq : "kept", call->who.name);
            const char *q[] = {PQgetvalue(r, 0, 0)};
            PGresult *u = db_exec(call->db, list_sql, 1, q);
            if (db_ok(u) && PQntuples(u) == 1)
                api_respond_json(call, 200, user_json(u, 0));
            else
                api_db_error(call, u);
            PQclear(u);
            live_wake_signal();
        }
        PQclear(r);
    }
    json_decref(body);
}

void users_whoami(struct api_call *call)
{
    api_respond_json(call, 200,
                     json_pack("{s:I, s:s, s:s}", "id", (json_int_t)call->who.id, "name",
                               call->who.name, "role", auth_role_name(call->who.role)));
}
