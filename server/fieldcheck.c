#include "fieldcheck.h"

#include <stdarg.h>
#include <stdio.h>

void fieldcheck_fail(struct fieldcheck *c, const char *field, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (json_array_size(c->errors) == 0)
        snprintf(c->detail, c->len, "%s: %s", field, msg);
    json_array_append_new(c->errors, json_pack("{s:s, s:s}", "field", field, "detail", msg));
}
