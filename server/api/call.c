/* call: one API request being served, and the helpers every handler shares (call.h). */
#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "log.h"
#include "metrics.h"
#include "store/db.h"

const char *api_version(void)
{
#ifdef RINGMASTER_VERSION
    return RINGMASTER_VERSION;
#else
    return "dev";
#endif
}

void api_call_detach(struct api_call *call)
{
    http_req_detach(call->req);
}

void api_call_finish(struct api_call *call)
{
    struct http_req *req = call->req;
    metrics_http_request(call->route, http_req_status(req) ? http_req_status(req) : 500);
    http_req_finish(req);
}

struct db_pool *api_pool(const struct api_call *call)
{
    return call->shared->db;
}

struct whatif_runner *api_whatif(const struct api_call *call)
{
    return call->shared->whatif;
}

void api_respond_json(struct api_call *call, unsigned status, json_t *json)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    if (!text) {
        http_problem(call->req, 500, "cannot encode the answer");
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
        http_problem(call->req, 400, "malformed JSON at line %d column %d: %s", e.line, e.column,
                     e.text);
        return -1;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        http_problem(call->req, 400, "the body must be a JSON object");
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
        http_problem(call->req, 404, "no %s '%s'", what, s);
        return -1;
    }
    *id = v;
    return 0;
}

void api_db_error(struct api_call *call, const PGresult *r)
{
    if (PQstatus(call->db) != CONNECTION_OK) {
        http_problem(call->req, 503, "the database is unavailable");
        return;
    }
    log_error("%s %s: database error %s", http_req_method(call->req), http_req_path(call->req),
              r ? db_sqlstate(r) : "");
    metrics_db_error();
    http_problem(call->req, 500, "database error");
}

int api_field_error(struct api_call *call, const char *field, const char *what)
{
    char detail[256];
    snprintf(detail, sizeof(detail), "%s: %s", field, what);
    http_send_problem(call->req, 400, json_pack("[{s:s, s:s}]", "field", field, "detail", detail),
                      NULL, "%s", detail);
    return -1;
}

int api_param_error(struct api_call *call, const char *name, const char *expected,
                    const char *got)
{
    http_send_problem(call->req, 400, json_pack("[{s:s, s:s}]", "field", name, "detail", expected),
                      NULL, "%s: %s, got '%.40s'", name, expected, got);
    return -1;
}

void api_respond_rows(struct api_call *call, PGresult *r, json_t *(*row)(const PGresult *, int))
{
    if (!db_ok(r)) {
        api_db_error(call, r);
        PQclear(r);
        return;
    }
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, row(r, i));
    PQclear(r);
    api_respond_json(call, 200, json_pack("{s:o}", "items", items));
}
