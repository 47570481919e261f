/* api: the route table and each request's dispatch: the dashboard's files outside /api, then
 * address, token, role and content type checked; inline single submissions; GET /metrics. */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "actions.h"
#include "authcache.h"
#include "authlimit.h"
#include "call.h"
#include "health.h"
#include "history.h"
#include "http/http.h"
#include "http/problem.h"
#include "http/router.h"
#include "http/www.h"
#include "job_requests.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "nodes.h"
#include "openapi.h"
#include "reports.h"
#include "scheduler.h"
#include "store/db.h"
#include "submit.h"
#include "usage.h"
#include "forecasts.h"
#include "users.h"
#include "whatif.h"
#include "whatif_run.h"

#define ANY_ROLE (AUTH_ADMIN | AUTH_USER | AUTH_WORKER)
#define PEOPLE (AUTH_ADMIN | AUTH_USER)
#define MACHINES (AUTH_ADMIN | AUTH_WORKER)

static void metrics_get(struct api_call *call);

/* Bad tokens: this many from one address within the window refuse it for the block. */
#define AUTH_MAX_FAILURES 10
#define AUTH_WINDOW_S 60
#define AUTH_BLOCK_S 60

/* How long a verified token is taken without asking the database again (authcache.h). */
#define AUTH_CACHE_TTL_S 10.0

struct api {
    struct api_shared shared; /* what its calls may reach (call.h) */
    const char *www_dir;
    const char *vendor_dir;
    struct authlimit *failures;
    struct authcache *tokens; /* verified lately (authcache.h) */
};

static const struct route routes[] = {
    {"GET", "/api/v1/health", health_get, 0, 0},
    {"GET", "/metrics", metrics_get, 0, 0},
    {"GET", "/api/v1/openapi.json", openapi_get, 0, 0},
    {"POST", "/api/v1/jobs", jobs_submit, PEOPLE, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs:batch", jobs_submit_batch, PEOPLE, ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs", jobs_list, PEOPLE, 0},
    {"GET", "/api/v1/jobs/{id}", jobs_get, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/cancel", actions_cancel, PEOPLE, 0},
    {"GET", "/api/v1/jobs/{id}/events", jobs_events, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/suspend", actions_suspend, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/resume", actions_resume, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/metrics", reports_metrics_post, MACHINES,
     ROUTE_JSON_BODY | ROUTE_BULK},
    {"GET", "/api/v1/jobs/{id}/metrics", reports_metrics_get, ANY_ROLE, 0},
    {"POST", "/api/v1/jobs/{id}/state", reports_state, MACHINES, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs/{id}/log", reports_log_post, MACHINES, ROUTE_ANY_BODY | ROUTE_BULK},
    {"POST", "/api/v1/jobs/{id}/remote", actions_remote, MACHINES, ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs/{id}/log", reports_log_get, ANY_ROLE, 0},
    {"POST", "/api/v1/actions/{id}/result", actions_result, MACHINES, ROUTE_JSON_BODY},
    {"POST", "/api/v1/nodes", nodes_register, MACHINES, ROUTE_JSON_BODY},
    {"GET", "/api/v1/nodes", nodes_list, ANY_ROLE, 0},
    {"GET", "/api/v1/nodes/{id}", nodes_get, ANY_ROLE, 0},
    {"PATCH", "/api/v1/nodes/{id}", nodes_patch, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"POST", "/api/v1/nodes/{id}/heartbeat", nodes_heartbeat, MACHINES, ROUTE_URGENT},
    {"POST", "/api/v1/nodes/{id}/metrics", reports_node_metrics_post, MACHINES,
     ROUTE_JSON_BODY | ROUTE_BULK},
    {"GET", "/api/v1/nodes/{id}/actions", actions_poll, MACHINES, 0},
    {"POST", "/api/v1/nodes/{id}/drain", nodes_drain, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"POST", "/api/v1/nodes/{id}/undrain", nodes_undrain, AUTH_ADMIN, 0},
    {"POST", "/api/v1/nodes/{id}/health", nodes_health, MACHINES, ROUTE_JSON_BODY},
    {"POST", "/api/v1/users", users_create, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"GET", "/api/v1/users", users_list, AUTH_ADMIN, 0},
    {"PATCH", "/api/v1/users/{id}", users_patch, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"GET", "/api/v1/whoami", users_whoami, PEOPLE, 0},
    /* the scheduler (scheduler.h) */
    {"GET", "/api/v1/scheduler", scheduler_get, PEOPLE, 0},
    {"PUT", "/api/v1/scheduler", scheduler_put, AUTH_ADMIN, ROUTE_JSON_BODY},
    {"GET", "/api/v1/scheduler/rounds", scheduler_rounds, PEOPLE, 0},
    {"GET", "/api/v1/cluster/history", history_get, PEOPLE, 0},
    {"GET", "/api/v1/reports/usage", usage_get, PEOPLE, 0},
    {"GET", "/api/v1/forecasts/calibration", forecasts_calibration_get, PEOPLE, 0},
    {"GET", "/api/v1/jobs/{id}/model", jobs_model, PEOPLE, 0},
    {"POST", "/api/v1/jobs/{id}/resize", jobs_resize, PEOPLE, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs/{id}/migrate", jobs_migrate, PEOPLE, 0},
    {"PATCH", "/api/v1/jobs/{id}/priority", jobs_priority, PEOPLE, ROUTE_JSON_BODY},
    {"POST", "/api/v1/jobs/{id}/priority", jobs_priority, PEOPLE, ROUTE_JSON_BODY},
    /* what if the cluster's history had run under another policy (whatif.h) */
    {"POST", "/api/v1/whatif", whatif_create, PEOPLE, ROUTE_JSON_BODY},
    {"GET", "/api/v1/whatif", whatif_list, PEOPLE, 0},
    {"GET", "/api/v1/whatif/{id}", whatif_get, PEOPLE, 0},
    {"GET", "/api/v1/whatif/{id}/trace", whatif_trace, PEOPLE, 0},
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

void api_stop_waiting(void)
{
    actions_stop_waiting();
}

/* GET /metrics: the exposition that metrics writes. */
static void metrics_get(struct api_call *call)
{
    size_t len = 0;
    struct http_stats hs;
    http_req_stats(call->req, &hs);
    char *text = metrics_text(call->db, &hs, &len);
    if (!text) {
        http_problem(call->req, 500, "out of memory");
        return;
    }
    http_req_respond(call->req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
    free(text);
}

struct api *api_create(struct db_pool *db, const char *www_dir, const char *vendor_dir)
{
    struct api *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->shared.db = db;
    a->www_dir = www_dir;
    a->vendor_dir = vendor_dir;
    a->failures = authlimit_create(AUTH_MAX_FAILURES, AUTH_WINDOW_S, AUTH_BLOCK_S);
    a->tokens = a->failures ? authcache_create(AUTH_CACHE_TTL_S) : NULL;
    a->shared.whatif = a->tokens ? whatif_runner_create(db) : NULL;
    if (!a->shared.whatif) {
        authcache_destroy(a->tokens);
        authlimit_destroy(a->failures);
        free(a);
        return NULL;
    }
    metrics_name_routes(routes, NROUTES);
    return a;
}

void api_destroy(struct api *a)
{
    if (!a)
        return;
    whatif_runner_destroy(a->shared.whatif);
    authcache_destroy(a->tokens);
    authlimit_destroy(a->failures);
    free(a);
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

/* 429 with Retry-After while the client's address is refused for its bad tokens. */
static int not_refused_or_respond(struct api_call *call, const char *peer)
{
    unsigned wait = authlimit_check(call->api->failures, peer, monotime_s());
    if (!wait)
        return 0;
    metrics_auth_refused();
    char secs[16];
    snprintf(secs, sizeof(secs), "%u", wait);
    const char *const retry[] = {"Retry-After", secs, NULL};
    http_send_problem(call->req, 429, NULL, retry, "too many bad tokens from %s: try again in %u s",
                      peer, wait);
    return -1;
}

/* Counts a bad token (not a missing one: that is no guess) against the client's address. */
static void count_failure(struct api_call *call, const char *peer)
{
    metrics_auth_failure();
    unsigned wait = authlimit_fail(call->api->failures, peer, monotime_s());
    if (wait)
        log_info("auth: %s refused for %u s after %d bad tokens", peer, wait, AUTH_MAX_FAILURES);
}

/* auth_check(), asking the database only for a token not verified lately (authcache.h). */
static int check_token(struct api_call *call, const char *authz)
{
    const char *token = auth_bearer_token(authz);
    double now = monotime_s();
    if (token && authcache_get(call->api->tokens, token, now, &call->who))
        return 0;
    int rc = auth_check(call->db, authz, &call->who);
    if (rc == 0)
        authcache_put(call->api->tokens, token, &call->who, now);
    return rc;
}

/* 429 while the address is refused for bad tokens, 401 when the token is missing or
 * unknown, 403 when its role may not use the route. */
static int authorize_or_respond(struct api_call *call, const struct route *rt)
{
    char peer[64];
    http_req_peer(call->req, peer, sizeof(peer));
    if (not_refused_or_respond(call, peer) < 0)
        return -1;
    const char *authz = http_req_header(call->req, "Authorization");
    int rc = check_token(call, authz);
    static const char *const bearer[] = {"WWW-Authenticate", "Bearer realm=\"ringmaster\"", NULL};
    if (rc == -1 && authz)
        count_failure(call, peer);
    if (rc == -2) {
        api_db_error(call, NULL);
        return -1;
    }
    if (rc < 0) {
        http_send_problem(call->req, 401, NULL, bearer, "%s",
                          authz ? "the bearer token is not valid" : "a bearer token is required");
        return -1;
    }
    if (!(rt->roles & call->who.role)) {
        http_problem(call->req, 403, "role %s may not %s %s", auth_role_name(call->who.role),
                     http_req_method(call->req), rt->pattern);
        return -1;
    }
    return 0;
}

/* Whether req's body may go to rt's handler: JSON, none where none is required, or any
 * where any is taken. */
static int content_type_ok(struct http_req *req, const struct route *rt)
{
    size_t len;
    http_req_body(req, &len);
    return (!(rt->flags & ROUTE_JSON_BODY) && len == 0) || (rt->flags & ROUTE_ANY_BODY) ||
           is_json_type(http_req_header(req, "Content-Type"));
}

static int content_type_or_respond(struct api_call *call, const struct route *rt)
{
    if (content_type_ok(call->req, rt))
        return 0;
    const char *ct = http_req_header(call->req, "Content-Type");
    http_problem(call->req, 415, "expected Content-Type application/json, got %s",
                 ct ? ct : "none");
    return -1;
}

static void dispatch_route(struct api *a, struct http_req *req, const struct router_match *m)
{
    struct api_call call = {.api = a,
                            .shared = &a->shared,
                            .req = req,
                            .id = m->id,
                            .route = (size_t)(m->route - routes)};
    call.db = db_acquire(a->shared.db);
    if (!call.db && m->route->roles) {
        http_problem(req, 503, "the database is unavailable");
        return;
    }
    if ((!m->route->roles || authorize_or_respond(&call, m->route) == 0) &&
        content_type_or_respond(&call, m->route) == 0)
        m->route->handler(&call);
    db_release(a->shared.db, call.db);
}

/* The handlers that may run on libmicrohttpd's thread (api_run_inline), by route: 1 when
 * it ran, 0 when it did nothing. */
typedef int (*inline_handler_f)(struct api_call *call);

static inline_handler_f inline_handler_of(const struct route *rt)
{
    return rt->handler == jobs_submit ? jobs_submit_inline : NULL;
}

int api_run_inline(void *arg, struct http_req *req)
{
    struct api *a = arg;
    struct router_match m;
    if (router_match(routes, NROUTES, http_req_method(req), http_req_path(req), &m) !=
        ROUTER_FOUND)
        return 0;
    inline_handler_f run = inline_handler_of(m.route);
    if (!run)
        return 0;
    struct api_call call = {.api = a,
                            .shared = &a->shared,
                            .req = req,
                            .id = m.id,
                            .route = (size_t)(m.route - routes)};
    char peer[64];
    http_req_peer(req, peer, sizeof(peer));
    double now = monotime_s();
    const char *token = auth_bearer_token(http_req_header(req, "Authorization"));
    if (authlimit_check(a->failures, peer, now) || !token ||
        !authcache_get(a->tokens, token, now, &call.who) || !(m.route->roles & call.who.role))
        return 0;
    if (!content_type_ok(req, m.route) || !run(&call))
        return 0;
    if (!http_req_detached() && http_req_status(req))
        metrics_http_request(call.route, http_req_status(req));
    return 1;
}

enum http_class api_classify(const char *method, const char *path)
{
    struct router_match m;
    if (router_match(routes, NROUTES, method, path, &m) != ROUTER_FOUND)
        return HTTP_CLASS_NORMAL;
    return m.route->flags & ROUTE_URGENT ? HTTP_CLASS_URGENT
           : m.route->flags & ROUTE_BULK ? HTTP_CLASS_BULK
                                         : HTTP_CLASS_NORMAL;
}

void api_handle(void *arg, struct http_req *req)
{
    struct api *a = arg;
    const char *path = http_req_path(req);
    const char *method = http_req_method(req);
    if (strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0 &&
        strcmp(path, "/metrics") != 0) {
        www_serve(req, a->www_dir, a->vendor_dir);
        return;
    }
    struct router_match m;
    enum router_result rr = router_match(routes, NROUTES, method, path, &m);
    if (rr == ROUTER_NOT_FOUND) {
        http_problem(req, 404, "no route %s", path);
    } else if (rr == ROUTER_BAD_METHOD) {
        const char *const allow[] = {"Allow", m.allow, NULL};
        http_send_problem(req, 405, NULL, allow, "%s is not allowed on %s; allowed: %s", method,
                          path, m.allow);
    } else {
        dispatch_route(a, req, &m);
    }
    /* A long-poll asked to be called again is counted when it is answered, a detached call
     * by api_call_finish() (req may be gone already). */
    if (!http_req_detached() && http_req_status(req))
        metrics_http_request(m.route ? (size_t)(m.route - routes) : METRICS_MAX_ROUTES,
                             http_req_status(req));
}
