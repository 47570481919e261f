/* fieldcheck: collects what is wrong with a request body, field by field, for
 * the problem document's errors[] and detail (the validators' shared part). */
#ifndef RINGMASTER_FIELDCHECK_H
#define RINGMASTER_FIELDCHECK_H

#include <jansson.h>
#include <stddef.h>

struct fieldcheck {
    json_t *errors; /* array of {"field", "detail"} (borrowed) */
    char *detail;   /* gets "field: message" of the first error */
    size_t len;     /* size of detail */
};

/* Records that field is wrong: appends {"field", "detail"} to c->errors and,
 * for the first error, writes "field: message" into c->detail. */
void fieldcheck_fail(struct fieldcheck *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Code points of valid UTF-8 text (jansson guarantees validity); -1 on a control character
 * (names, reasons: one line of text). */
long fieldcheck_text_chars(const char *s);

#endif
