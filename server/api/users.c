#include "users.h"

#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "log.h"
#include "store/db.h"

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= AUTH_NAME_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static void field_error(struct api_call *call, const char *field, const char *msg)
{
    http_send_problem(call->req, 400, json_pack("[{s:s, s:s}]", "field", field, "detail", msg),
                      NULL, "%s: %s", field, msg);
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
            field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field");
            return -1;
        }
    }
    json_t *n = json_object_get(body, "name");
    json_t *r = json_object_get(body, "role");
    if (!json_is_string(n) || !name_ok(json_string_value(n))) {
        field_error(call, "name", "expected 1..64 of A-Z a-z 0-9 . _ -");
        return -1;
    }
    if (!json_is_string(r) || auth_role_parse(json_string_value(r), role) < 0) {
        field_error(call, "role", "expected admin, user or worker");
        return -1;
    }
    *name = json_string_value(n);
    return 0;
}

void users_create(struct api_call *call)
{
    json_t *body;
    const char *name;
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

void users_list(struct api_call *call)
{
    PGresult *r = db_exec(call->db,
                          "SELECT id, name, role, to_char(created_at AT TIME ZONE"
                          " 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM users"
                          " ORDER BY id",
                          0, NULL);
    if (!db_ok(r)) {
        api_db_error(call, r);
        PQclear(r);
        return;
    }
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items,
                              json_pack("{s:I, s:s, s:s, s:s}", "id",
                                        (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "name",
                                        PQgetvalue(r, i, 1), "role", PQgetvalue(r, i, 2),
                                        "created_at", PQgetvalue(r, i, 3)));
    PQclear(r);
    api_respond_json(call, 200, json_pack("{s:o}", "items", items));
}

void users_whoami(struct api_call *call)
{
    api_respond_json(call, 200,
                     json_pack("{s:I, s:s, s:s}", "id", (json_int_t)call->who.id, "name",
                               call->who.name, "role", auth_role_name(call->who.role)));
}
