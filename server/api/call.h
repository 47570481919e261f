/* call: one API request being served, and the helpers every resource handler shares
 * (answers as JSON, the body as a JSON object, the {id} segment, database errors). A handler
 * named *_or_respond() has answered when it fails: it returns -1 and the caller returns. */
#ifndef RINGMASTER_API_CALL_H
#define RINGMASTER_API_CALL_H

#include <jansson.h>
#include <libpq-fe.h>

#include "auth.h"

struct api;
struct db_pool;
struct http_req;
struct whatif_runner;

/* What the server (api.h) lends every call: its database pool and its what-if runner. */
struct api_shared {
    struct db_pool *db;
    struct whatif_runner *whatif;
};

/* One request being served. */
struct api_call {
    struct api *api;                 /* the server's dispatch (api.c's own) */
    const struct api_shared *shared; /* what the server lends it */
    struct http_req *req;
    const char *id;       /* the {id} path segment, or "" */
    struct auth_user who; /* the caller, when the route needs a token */
    PGconn *db;           /* held for the call; NULL only for a public route when the
                             database cannot be reached */
    size_t route;         /* the route's index, for the metrics of a detached call */
};

/* Hands the call's request to another thread, which answers it later and then calls
 * api_call_finish() with a copy of the call (the handler returns at once, and its caller
 * releases call->db: the copy must use a connection of its own). */
void api_call_detach(struct api_call *call);

/* Sends the answer of a call detached with api_call_detach() and counts it. */
void api_call_finish(struct api_call *call);

/* Answers with json (stolen) as application/json. */
void api_respond_json(struct api_call *call, unsigned status, json_t *json);

/* Parses the body as a JSON object into *out (new). Returns 0, or -1 after a 400. */
int api_body_or_respond(struct api_call *call, json_t **out);

/* Parses call->id as a positive integer. Returns 0, or -1 after a 404 naming what. */
int api_id_or_respond(struct api_call *call, const char *what, long long *id);

/* Answers 400 with a problem document whose errors name field ("field: what"). Returns -1. */
int api_field_error(struct api_call *call, const char *field, const char *what);

/* Answers 400 for the bad query parameter name: errors name it with expected, the detail adds
 * what came ("limit: expected 1..10000, got 'x'", got cut at 40 bytes). Returns -1. */
int api_param_error(struct api_call *call, const char *name, const char *expected,
                    const char *got);

/* Answers 503 or 500 for a failed statement (logged, counted in metrics). */
void api_db_error(struct api_call *call, const PGresult *r);

/* Answers 200 {"items": [row(r, i) for every row of r]}, or r's database error; clears r. */
void api_respond_rows(struct api_call *call, PGresult *r, json_t *(*row)(const PGresult *, int));

/* The pool the call's connection came from (borrowed), for what it knows of the database. */
struct db_pool *api_pool(const struct api_call *call);

/* The what-if runner of the server (borrowed; whatif_run.h). */
struct whatif_runner *api_whatif(const struct api_call *call);

/* The version string reported by health. */
const char *api_version(void);

#endif
