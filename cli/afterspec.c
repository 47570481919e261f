/* afterspec: the parser of ringctl submit --after (afterspec.h). */
#include "afterspec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const whens[] = {"ok", "any", "notok"};

/* One item of n bytes at s into *a. Returns 0, or -1 with err. */
static int parse_item(const char *s, size_t n, struct afterspec *a, char *err, size_t len)
{
    char item[64], *end;
    if (n == 0 || n >= sizeof(item)) {
        snprintf(err, len, "expected ID[:ok|:any|:notok] or array:ID[:WHEN], got '%.*s'",
                 (int)(n < 40 ? n : 40), s);
        return -1;
    }
    memcpy(item, s, n);
    item[n] = '\0';
    const char *p = item;
    a->array = strncmp(p, "array:", 6) == 0;
    p += a->array ? 6 : 0;
    errno = 0;
    a->id = strtoll(p, &end, 10);
    if (end == p || errno || a->id < 1 || (*end && *end != ':')) {
        snprintf(err, len, "expected a job id (>= 1) in '%s'", item);
        return -1;
    }
    a->when = whens[0];
    if (!*end)
        return 0;
    for (size_t k = 0; k < sizeof(whens) / sizeof(whens[0]); k++)
        if (!strcmp(end + 1, whens[k])) {
            a->when = whens[k];
            return 0;
        }
    snprintf(err, len, "'%s': expected ok, any or notok after ':'", item);
    return -1;
}

int afterspec_parse(const char *s, struct afterspec *out, size_t cap, size_t *n, char *err,
                    size_t len)
{
    for (;;) {
        size_t k = strcspn(s, ",");
        if (*n >= cap) {
            snprintf(err, len, "at most %zu dependencies", cap);
            return -1;
        }
        if (parse_item(s, k, &out[*n], err, len) < 0)
            return -1;
        (*n)++;
        if (!s[k])
            return 0;
        s += k + 1;
    }
}
