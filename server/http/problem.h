/* problem: RFC 9457 problem documents (application/problem+json) with type, title, status,
 * detail, instance, and errors[] ({field, detail}) for per-field messages. Pure: it builds the
 * document, and http (http_send_problem) sends it. */
#ifndef RINGMASTER_PROBLEM_H
#define RINGMASTER_PROBLEM_H

#include <jansson.h>

/* A new problem document for status with detail; instance may be NULL. */
json_t *problem_build(unsigned status, const char *detail, const char *instance);

/* The title of a status ("Not Found"), or "Error" for an unknown one. Static storage. */
const char *problem_title(unsigned status);

/* The document as compact JSON text (new; free()), with errors (NULL or an array of
 * {field, detail}; stolen) added; NULL on ENOMEM. http_send_problem() sends it. */
char *problem_text(unsigned status, json_t *errors, const char *detail, const char *instance);

#endif
