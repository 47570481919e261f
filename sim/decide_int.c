/* decide_int: the typed getters that decide_input.c and decide_observe.c read the snapshot's
 * JSON with, each with a path in its message. */
#include "decide_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>

/* ---- typed getters, each with a path in its message ---------------------- */

int decide_bad(struct decide_input *in, const char *path, const char *what)
{
    snprintf(in->err, in->errlen, "%s: %s", path, what);
    errno = EINVAL;
    return -1;
}

/* Number member key of o into *v: def when absent, an error when not a finite
 * number within [lo, hi]. */
int decide_get_num(struct decide_input *in, json_t *o, const char *path, const char *key, double lo,
                   double hi, double def, double *v)
{
    json_t *j = json_object_get(o, key);
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    if (!j) {
        *v = def;
        return 0;
    }
    double x = json_is_number(j) ? json_number_value(j) : NAN;
    if (!isfinite(x) || x < lo || x > hi) {
        char what[96];
        snprintf(what, sizeof(what), "expected a number in %g..%g", lo, hi);
        return decide_bad(in, p, what);
    }
    *v = x;
    return 0;
}

int decide_get_int(struct decide_input *in, json_t *o, const char *path, const char *key,
                   long long lo, long long hi, long long def, long long *v)
{
    json_t *j = json_object_get(o, key);
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    if (!j) {
        *v = def;
        return 0;
    }
    if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi) {
        char what[96];
        snprintf(what, sizeof(what), "expected a whole number in %lld..%lld", lo, hi);
        return decide_bad(in, p, what);
    }
    *v = json_integer_value(j);
    return 0;
}

int decide_get_bool(struct decide_input *in, json_t *o, const char *path, const char *key, int def,
                    int *v)
{
    json_t *j = json_object_get(o, key);
    if (!j) {
        *v = def;
        return 0;
    }
    if (!json_is_boolean(j)) {
        char p[160];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        return decide_bad(in, p, "expected true or false");
    }
    *v = json_is_true(j);
    return 0;
}

/* Array member (NULL if absent); an error if present and not an array of at most max. */
int decide_get_array(struct decide_input *in, json_t *o, const char *path, const char *key,
                     size_t max, json_t **arr)
{
    *arr = json_object_get(o, key);
    if (!*arr)
        return 0;
    if (!json_is_array(*arr) || json_array_size(*arr) > max) {
        char p[160], what[64];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        snprintf(what, sizeof(what), "expected an array of at most %zu entries", max);
        return decide_bad(in, p, what);
    }
    return 0;
}
