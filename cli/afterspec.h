/* afterspec: the dependencies of ringctl submit --after, a list separated by commas, each
 * ID[:WHEN] (a job) or array:ID[:WHEN] (every job of an array), WHEN one of ok (the
 * default), any, notok: "12", "12:any,13", "array:41:notok". Pure. */
#ifndef RINGMASTER_AFTERSPEC_H
#define RINGMASTER_AFTERSPEC_H

#include <stddef.h>

#define AFTERSPEC_MAX 64 /* the server's bound on a job's dependencies */

struct afterspec {
    long long id;
    int array;        /* 1: id is an array's */
    const char *when; /* "ok", "any" or "notok" (static) */
};

/* Parses s, appending to out[*n..) (at most cap in all). Returns 0, or -1 with why in err
 * (an empty or malformed item, an id < 1, an unknown WHEN, more than cap); *n then counts
 * the items appended before it. */
int afterspec_parse(const char *s, struct afterspec *out, size_t cap, size_t *n, char *err,
                    size_t len);

#endif
