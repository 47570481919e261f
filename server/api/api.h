/* api: ringmasterd's REST API. The route table (method, path, handler, roles) and the dispatch
 * of every HTTP request: authentication (auth.h), content type, a database connection held
 * for the call, then the resource's handler (one file per resource: jobs, nodes, users,
 * actions, reports, scheduler, history, metrics, health, openapi); requests outside /api and
 * /metrics are the dashboard's static files (http/www.h). The handlers answer with problem
 * documents (http/problem.h) on every error and share call.h. */
#ifndef RINGMASTER_API_H
#define RINGMASTER_API_H

#include <stddef.h>

struct api;
struct db_pool;
struct http_req;

/* Borrows db, www_dir (the dashboard's files) and vendor_dir (the system's JavaScript
 * libraries, served under /vendor/; see http/www.h); either directory may be NULL. Returns
 * NULL on ENOMEM. */
struct api *api_create(struct db_pool *db, const char *www_dir, const char *vendor_dir);
void api_destroy(struct api *a);

/* The http_handler_f of the server: arg is the struct api. */
void api_handle(void *arg, struct http_req *req);

/* How a request waits for a handler's thread (http_config.classify), as its route says
 * (ROUTE_URGENT, ROUTE_BULK): a node's heartbeat (its liveness: a burst of posts must not
 * make a node seem down) is urgent; minibatch reports and log lines, which a worker sends in
 * bulk and keeps in its outbox, are bulk; the rest (people, state changes, actions) normal. */
enum http_class api_classify(const char *method, const char *path);

/* http_config.run_inline: runs a route that may (a single submission, which only
 * queues its job behind the statement running: submit.h) on libmicrohttpd's thread, without
 * the hop to a handler's thread, when nothing of it has to wait: its token verified lately
 * (authcache), its role allowed, its body JSON, its address not refused. Anything else (a
 * token to look up, an answer with a problem) takes the usual way. Returns 1 when it ran. */
int api_run_inline(void *arg, struct http_req *req);

/* Answers every long-poll waiting for actions at once (the server is stopping). */
void api_stop_waiting(void);

/* The route table: its length, and its entry i (NULL past the end; borrowed, static). */
struct route;
size_t api_route_count(void);
const struct route *api_route(size_t i);

#endif
