#include "api.h"

#include "actions.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db.h"
#include "health.h"
#include "history.h"
#include "http.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "nodes.h"
#include "openapi.h"
#include "problem.h"
#include "reports.h"
#include "router.h"
#include "sched_api.h"
#include "users.h"
#include "www.h"

#define ANY_ROLE (AUTH_ADMIN | AUTH_USER | AUTH_WORKER)
#define PEOPLE (AUTH_ADMIN | AUTH_USER)
#define MACHINES (AUTH_ADMIN | AUTH_WORKER)

struct api {
    struct db_pool *db;
    const char *www_dir;
};

static const struct route routes[] = {
    {"GET", "/api/v1/health", health_get, 0, 0},
    {"GET", "/metrics", metrics_get, 0, 0},
    {"GET", "/api/v1/openapi.json", openapi_get, 0, 0},
    {"POST", "/api/v1/jobs", jobs_submit, PEOPLE, ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs", jobs_list, PEOPLE, 0},
    {"GET", "/api/v1/jobs/{id}", jobs_get, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/cancel", actions_cancel, PEOPLE, 0},
    {"GET", "/api/v1/jobs/{id}/events", jobs_events, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/suspend", actions_suspend, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/resume", actions_resume, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/metrics", reports_metrics_post, MACHINES, ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs/{id}/metrics", reports_metrics_get, ANY_ROLE, 0},
    {"POST", "/api/v1/jobs/{id}/state", reports_state, MACHINES, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs/{id}/log", reports_log_post, MACHINES, ROUTE_ANY_BODY},
    {"POST", "/api/v1/jobs/{id}/remote", actions_remote, MACHINES, ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs/{id}/log", reports_log_get, ANY_ROLE, 0},
    {"POST", "/api/v1/actions/{id}/result", actions_result, MACHINES, ROUTE_JSON_BODY},
    {"POST", "/api/v1/nodes", nodes_register, MACHINES, ROUTE_JSON_BODY},
    {"GET", "/api/v1/nodes", nodes_list, ANY_ROLE, 0},
    {"GET", "/api/v1/nodes/{id}", nodes_get, ANY_ROLE, 0},
    {"POST", "/api/v1/nodes/{id}/heartbeat", nodes_heartbeat, MACHINES, 0},
    {"GET", "/api/v1/nodes/{id}/actions", actions_poll, MACHINES, 0},
    {"POST", "/api/v1/users", users_create, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"GET", "/api/v1/users", users_list, AUTH_ADMIN, 0},
    {"GET", "/api/v1/whoami", users_whoami, PEOPLE, 0},
    /* the scheduler (sched_api.h) */
    {"GET", "/api/v1/scheduler", sched_api_get, PEOPLE, 0},
    {"PUT", "/api/v1/scheduler", sched_api_put, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"GET", "/api/v1/scheduler/rounds", sched_api_rounds, PEOPLE, 0},
    {"GET", "/api/v1/cluster/history", history_get, PEOPLE, 0},
    {"GET", "/api/v1/jobs/{id}/model", sched_api_model, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/resize", sched_api_resize, PEOPLE, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs/{id}/migrate", sched_api_migrate, PEOPLE, 0},
    {"PATCH", "/api/v1/jobs/{id}/priority", sched_api_priority, PEOPLE, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs/{id}/priority", sched_api_priority, PEOPLE, ROUTE_JSON_BODY},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

size_t api_route_count(void)
{
    return NROUTES;
}

const struct route *api_route(size_t i)
{
    return i < NROUTES ? &routes[i] : NULL;
}

struct api *api_create(struct db_pool *db, const char *www_dir)
{
    struct api *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->db = db;
    a->www_dir = www_dir;
    return a;
}

void api_destroy(struct api *a)
{
    free(a);
}

const char *api_version(void)
{
#ifdef RINGMASTER_VERSION
    return RINGMASTER_VERSION;
#else
    return "dev";
#endif
}

void api_respond_json(struct api_call *call, unsigned status, json_t *json)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    if (!text) {
        problem_respond(call->req, 500, "cannot encode the answer");
        return;
    }
    http_req_respond(call->req, status, "application/json", text, strlen(text), NULL);
    free(text);
}

int api_body_or_respond(struct api_call *call, json_t **out)
{
    size_t len;
    const char *body = http_req_body(call->req, &len);
    json_error_t e;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        problem_respond(call->req, 400, "malformed JSON at line %d column %d: %s", e.line, e.column,
                        e.text);
        return -1;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        problem_respond(call->req, 400, "the body must be a JSON object");
        return -1;
    }
    *out = j;
    return 0;
}

int api_id_or_respond(struct api_call *call, const char *what, long long *id)
{
    const char *s = call->id;
    char *end = (char *)s;
    long long v = 0;
    if (s[0] >= '1' && s[0] <= '9' && strlen(s) <= 18)
        v = strtoll(s, &end, 10);
    if (v <= 0 || *end != '\0') {
        problem_respond(call->req, 404, "no %s '%s'", what, s);
        return -1;
    }
    *id = v;
    return 0;
}

void api_db_error(struct api_call *call, const PGresult *r)
{
    if (PQstatus(call->db) != CONNECTION_OK) {
        problem_respond(call->req, 503, "the database is unavailable");
        return;
    }
    log_error("%s %s: database error %s", http_req_method(call->req), http_req_path(call->req),
              r ? db_sqlstate(r) : "");
    metrics_db_error();
    problem_respond(call->req, 500, "database error");
}

/* True for application/json, with or without parameters such as charset. */
static int is_json_type(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ')
        ct++;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* 401 when the token is missing or unknown, 403 when its role may not use the route. */
static int authorize_or_respond(struct api_call *call, const struct route *rt)
{
    const char *authz = http_req_header(call->req, "Authorization");
    int rc = auth_check(call->db, authz, &call->who);
    static const char *const bearer[] = {"WWW-Authenticate", "Bearer realm=\"ringmaster\"", NULL};
    if (rc == -2) {
        api_db_error(call, NULL);
        return -1;
    }
    if (rc < 0) {
        problem_send(call->req, 401, NULL, bearer, "%s",
                     authz ? "the bearer token is not valid" : "a bearer token is required");
        return -1;
    }
    if (!(rt->roles & call->who.role)) {
        problem_respond(call->req, 403, "role %s may not %s %s", auth_role_name(call->who.role),
                        http_req_method(call->req), rt->pattern);
        return -1;
    }
    return 0;
}

static int content_type_or_respond(struct api_call *call, const struct route *rt)
{
    size_t len;
    http_req_body(call->req, &len);
    if ((!(rt->flags & ROUTE_JSON_BODY) && len == 0) || (rt->flags & ROUTE_ANY_BODY))
        return 0;
    const char *ct = http_req_header(call->req, "Content-Type");
    if (is_json_type(ct))
        return 0;
    problem_respond(call->req, 415, "expected Content-Type application/json, got %s",
                    ct ? ct : "none");
    return -1;
}

static void dispatch_route(struct api *a, struct http_req *req, const struct router_match *m)
{
    struct api_call call = {.api = a, .req = req, .id = m->id};
    call.db = db_acquire(a->db);
    if (!call.db && m->route->roles) {
        problem_respond(req, 503, "the database is unavailable");
        return;
    }
    if ((!m->route->roles || authorize_or_respond(&call, m->route) == 0) &&
        content_type_or_respond(&call, m->route) == 0)
        m->route->handler(&call);
    db_release(a->db, call.db);
}

void api_handle(void *arg, struct http_req *req)
{
    struct api *a = arg;
    const char *path = http_req_path(req);
    const char *method = http_req_method(req);
    if (strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0 &&
        strcmp(path, "/metrics") != 0) {
        www_serve(req, a->www_dir);
        return;
    }
    struct router_match m;
    enum router_result rr = router_match(routes, NROUTES, method, path, &m);
    if (rr == ROUTER_NOT_FOUND) {
        problem_respond(req, 404, "no route %s", path);
    } else if (rr == ROUTER_BAD_METHOD) {
        const char *const allow[] = {"Allow", m.allow, NULL};
        problem_send(req, 405, NULL, allow, "%s is not allowed on %s; allowed: %s", method, path,
                     m.allow);
    } else {
        dispatch_route(a, req, &m);
    }
    /* A long-poll asked to be called again is counted when it is answered. */
    if (http_req_status(req))
        metrics_http_request(m.route ? (size_t)(m.route - routes) : METRICS_MAX_ROUTES,
                             http_req_status(req));
}
