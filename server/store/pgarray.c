/* pgarray: PostgreSQL array literals written into room the caller sized (pgarray.h): the
 * quoting and escaping of an element, and the literal's braces and commas. */
#include "pgarray.h"

#include <string.h>

/* The bytes of the text that need a backslash before them inside an element's quotes. */
#define ESCAPED "\"\\"

size_t pgarray_room(const char *s)
{
    if (!s)
        return sizeof("NULL,") - 1;
    size_t n = sizeof("\"\",") - 1;
    for (;;) {
        size_t run = strcspn(s, ESCAPED);
        n += run;
        s += run;
        if (!*s)
            return n;
        n += 2;
        s++;
    }
}

void pgarray_start(struct pgarray *a, char *out)
{
    *a = (struct pgarray){.at = out};
    *a->at++ = '{';
}

void pgarray_add(struct pgarray *a, const char *s)
{
    char *o = a->at;
    if (a->n++)
        *o++ = ',';
    if (!s) {
        memcpy(o, "NULL", 4);
        a->at = o + 4;
        return;
    }
    *o++ = '"';
    for (;;) {
        size_t run = strcspn(s, ESCAPED);
        memcpy(o, s, run);
        o += run;
        s += run;
        if (!*s)
            break;
        *o++ = '\\';
        *o++ = *s++;
    }
    *o++ = '"';
    a->at = o;
}

char *pgarray_end(struct pgarray *a)
{
    *a->at++ = '}';
    *a->at++ = '\0';
    return a->at;
}
