/* api: dispatch of every HTTP request (routes, authentication, content type) and the helpers
 * the resource handlers share. Handlers named *_or_respond() have answered when they fail. */
#ifndef RINGMASTER_API_H
#define RINGMASTER_API_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "auth.h"

struct api;
struct db_pool;
struct http_req;

/* One request being served. */
struct api_call {
    struct api *api;
    struct http_req *req;
    const char *id;       /* the {id} path segment, or "" */
    struct auth_user who; /* the caller, when the route needs a token */
    PGconn *db;           /* held for the call; NULL only for a public route when the
                             database cannot be reached */
};

/* Borrows db (and www_dir, the dashboard's files, may be NULL). Returns NULL on ENOMEM. */
struct api *api_create(struct db_pool *db, const char *www_dir);
void api_destroy(struct api *a);

/* The http_handler_f of the server: arg is the struct api. */
void api_handle(void *arg, struct http_req *req);

/* Answers with json (stolen) as application/json. */
void api_respond_json(struct api_call *call, unsigned status, json_t *json);

/* Parses the body as a JSON object into *out (new). Returns 0, or -1 after a 400. */
int api_body_or_respond(struct api_call *call, json_t **out);

/* Parses call->id as a positive integer. Returns 0, or -1 after a 404 naming what. */
int api_id_or_respond(struct api_call *call, const char *what, long long *id);

/* Answers 503 or 500 for a failed statement (logged). */
void api_db_error(struct api_call *call, const PGresult *r);

/* The route table: its length, and its entry i (NULL past the end; borrowed, static). */
struct route;
size_t api_route_count(void);
const struct route *api_route(size_t i);

/* The version string reported by health. */
const char *api_version(void);

#endif
