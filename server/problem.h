/* problem: RFC 9457 problem documents (application/problem+json) with type, title, status,
 * detail, instance, and errors[] ({field, detail}) for per-field messages. */
#ifndef RINGMASTER_PROBLEM_H
#define RINGMASTER_PROBLEM_H

#include <jansson.h>

struct http_req;

/* A new problem document for status with detail; instance may be NULL. */
json_t *problem_build(unsigned status, const char *detail, const char *instance);

/* The title of a status ("Not Found"), or "Error" for an unknown one. Static storage. */
const char *problem_title(unsigned status);

/* Answers r with a problem document. errors: NULL or an array of {field, detail} (stolen).
 * headers: as for http_req_respond(). Returns http_req_respond()'s result. */
int problem_send(struct http_req *r, unsigned status, json_t *errors, const char *const *headers,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define problem_respond(r, status, ...) problem_send((r), (status), NULL, NULL, __VA_ARGS__)

#endif
