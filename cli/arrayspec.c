/* arrayspec: the parser of ringctl submit --array's indexes in Slurm's forms ("0-99",
 * "1,3,5-7", "0-15:4"), refusing repeats and bounds past ARRAYSPEC_MAX_*. */
#include "arrayspec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number 0..ARRAYSPEC_MAX_INDEX at *p (digits only); advances *p. Returns 0 or -1. */
static int number(const char **p, long *v)
{
    char *end;
    if (!isdigit((unsigned char)**p))
        return -1;
    errno = 0;
    *v = strtol(*p, &end, 10);
    if (errno || *v > ARRAYSPEC_MAX_INDEX)
        return -1;
    *p = end;
    return 0;
}

/* One item at *p (N, A-B or A-B:S) into first, last, step; advances *p. Returns 0 or -1. */
static int item(const char **p, long *first, long *last, long *step)
{
    *step = 1;
    if (number(p, first) < 0)
        return -1;
    *last = *first;
    if (**p == '-') {
        (*p)++;
        if (number(p, last) < 0 || *last < *first)
            return -1;
        if (**p == ':') {
            (*p)++;
            if (number(p, step) < 0 || *step < 1)
                return -1;
        }
    }
    return **p == ',' || **p == '\0' ? 0 : -1;
}

static int seen(const long *idx, size_t n, long v)
{
    for (size_t i = 0; i < n; i++)
        if (idx[i] == v)
            return 1;
    return 0;
}

int arrayspec_parse(const char *s, long *idx, size_t cap, size_t *n, char *err, size_t len)
{
    const char *p = s;
    *n = 0;
    if (strchr(s, '%')) {
        snprintf(err, len, "'%s': a %%N throttle is not supported (every element is queued)", s);
        return -1;
    }
    while (1) {
        long first, last, step;
        const char *at = p;
        if (item(&p, &first, &last, &step) < 0) {
            snprintf(err, len, "'%.*s': expected N, FIRST-LAST or FIRST-LAST:STEP (0..%d)",
                     (int)strcspn(at, ","), at, ARRAYSPEC_MAX_INDEX);
            return -1;
        }
        for (long v = first; v <= last; v += step) {
            if (*n == cap) {
                snprintf(err, len, "more than %zu indexes", cap);
                return -1;
            }
            if (seen(idx, *n, v)) {
                snprintf(err, len, "index %ld given twice", v);
                return -1;
            }
            idx[(*n)++] = v;
        }
        if (*p == '\0')
            return 0;
        p++; /* the comma */
    }
}
