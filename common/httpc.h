/* httpc: a small JSON-over-HTTP client for Ringmaster's REST API (libcurl and
 * jansson), shared by ringctl, the worker and the benchmarks. One handle per
 * thread; the connection is kept alive between requests. */
#ifndef RINGMASTER_HTTPC_H
#define RINGMASTER_HTTPC_H

#include <jansson.h>
#include <stddef.h>

struct httpc;

/* base_url like "http://127.0.0.1:8080" (no trailing slash needed), or several
 * separated by commas (servers of one cluster: "http://a:8080,http://b:8080"):
 * requests go to the first until it cannot be reached, then to the next, and so
 * on round; a request that never reached a server is sent to the next at once.
 * token may be NULL. Both are copied. Returns NULL on allocation failure (or no URL). */
struct httpc *httpc_create(const char *base_url, const char *token);
void httpc_destroy(struct httpc *c);

/* Total time limit of each request in seconds (default 30). */
void httpc_set_timeout(struct httpc *c, long seconds);

/* Sends method path (e.g. "GET", "/api/v1/jobs?limit=5") with body (borrowed,
 * may be NULL) as JSON. On a transport success returns 0, sets *status to the
 * HTTP status and *out to the decoded JSON answer (new reference; NULL when
 * the answer is empty or not JSON). On failure to talk to the server returns
 * -1 with text in err. extra_header (may be NULL) is one "Name: value" line. */
int httpc_request(struct httpc *c, const char *method, const char *path, json_t *body,
                  const char *extra_header, long *status, json_t **out, char *err,
                  size_t errlen);

/* As httpc_request(), with a body of len bytes of data (borrowed, may be NULL for none)
 * sent as content_type. */
int httpc_request_raw(struct httpc *c, const char *method, const char *path,
                      const char *content_type, const char *data, size_t len,
                      const char *extra_header, long *status, json_t **out, char *err,
                      size_t errlen);

#endif
