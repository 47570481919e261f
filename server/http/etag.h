/* etag: conditional GETs for the JSON answers the dashboard polls. The entity tag is a hash
 * of the exact bytes of the answer, so an unchanged answer keeps its tag (a strong validator)
 * and any change gives a new one; a request whose If-None-Match names the current tag is
 * answered 304 Not Modified without a body. Answers carry Cache-Control: no-cache, so a
 * browser cache keeps them but asks again every time. */
#ifndef RINGMASTER_ETAG_H
#define RINGMASTER_ETAG_H

#include <jansson.h>
#include <stddef.h>

struct http_req;

/* "\"" + 16 hex digits + "\"" and the NUL. */
#define ETAG_LEN 19

/* The entity tag of body[0..len) into tag: "\"0123456789abcdef\"" (a 64-bit hash). */
void etag_of(const char *body, size_t len, char tag[ETAG_LEN]);

/* 1 when the If-None-Match value header (may be NULL: 0) names tag by the weak comparison of
 * RFC 9110 (W/ ignored), or is "*"; 0 otherwise. */
int etag_matches(const char *header, const char *tag);

/* Answers 200 with json (stolen) as application/json with its ETag, or 304 when the request's
 * If-None-Match names that tag; 500 when json is NULL or cannot be encoded. */
void etag_respond_json(struct http_req *req, json_t *json);

/* As etag_respond_json() for an answer already written as JSON text[0..len) (stolen: freed
 * here); 500 when text is NULL. */
void etag_respond_text(struct http_req *req, char *text, size_t len);

#endif
