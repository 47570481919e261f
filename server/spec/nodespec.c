/* nodespec: nodespec_check(), the rules of a node registration (name, cpus, memory, GPUs
 * with distinct indexes, no unknown fields). Pure. */
#include "nodespec.h"

#include <stdio.h>
#include <string.h>

#include "fieldcheck.h"

static void check_int(struct fieldcheck *c, const json_t *obj, const char *key, const char *field,
                      long long lo, long long hi)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        fieldcheck_fail(c, field, "required");
    else if (!json_is_integer(v))
        fieldcheck_fail(c, field, "expected an integer");
    else if (json_integer_value(v) < lo || json_integer_value(v) > hi)
        fieldcheck_fail(c, field, "expected %lld..%lld, got %lld", lo, hi,
                        (long long)json_integer_value(v));
}

static void check_string(struct fieldcheck *c, const json_t *obj, const char *key,
                         const char *field, size_t max)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        fieldcheck_fail(c, field, "required");
    else if (!json_is_string(v))
        fieldcheck_fail(c, field, "expected a string");
    else if (json_string_length(v) < 1 || json_string_length(v) > max)
        fieldcheck_fail(c, field, "expected 1..%zu bytes", max);
    else if (strlen(json_string_value(v)) != json_string_length(v))
        fieldcheck_fail(c, field, "must not contain NUL");
}

static void check_unknown(struct fieldcheck *c, const json_t *obj, const char *prefix,
                          const char *const *known, size_t n)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        size_t i = 0;
        while (i < n && strcmp(k, known[i]) != 0)
            i++;
        if (i == n) {
            char field[128];
            snprintf(field, sizeof(field), "%s%.64s", prefix, k);
            fieldcheck_fail(c, field, "unknown field");
        }
    }
}

/* An optional member: absent, null, or an integer in lo..hi. */
static void check_opt_int(struct fieldcheck *c, const json_t *obj, const char *key,
                          const char *field, long long lo, long long hi)
{
    const json_t *v = json_object_get(obj, key);
    if (v && !json_is_null(v))
        check_int(c, obj, key, field, lo, hi);
}

static void check_gpu(struct fieldcheck *c, const json_t *g, size_t i, unsigned char *seen)
{
    static const char *const known[] = {"index", "model", "memory_bytes", "island", "numa"};
    char f[5][48], prefix[32];
    snprintf(prefix, sizeof(prefix), "gpus[%zu].", i);
    for (int k = 0; k < 5; k++)
        snprintf(f[k], sizeof(f[k]), "%s%s", prefix, known[k]);
    if (!json_is_object(g)) {
        snprintf(prefix, sizeof(prefix), "gpus[%zu]", i);
        fieldcheck_fail(c, prefix, "expected an object");
        return;
    }
    check_int(c, g, "index", f[0], 0, NODESPEC_MAX_GPUS - 1);
    check_string(c, g, "model", f[1], NODESPEC_MAX_MODEL);
    check_int(c, g, "memory_bytes", f[2], 0, (long long)1 << 50);
    check_opt_int(c, g, "island", f[3], 0, NODESPEC_MAX_GPUS - 1);
    check_opt_int(c, g, "numa", f[4], 0, NODESPEC_MAX_GPUS - 1);
    check_unknown(c, g, prefix, known, 5);
    const json_t *idx = json_object_get(g, "index");
    long long x = json_is_integer(idx) ? json_integer_value(idx) : -1;
    if (x >= 0 && x < NODESPEC_MAX_GPUS && seen[x]++)
        fieldcheck_fail(c, f[0], "index %lld appears twice", x);
}

int nodespec_check(const json_t *body, json_t **errors, char *detail, size_t len)
{
    static const char *const known[] = {"name", "cpus", "memory_bytes", "gpus", "simulated"};
    struct fieldcheck c = {.errors = json_array(), .detail = detail, .len = len};
    unsigned char seen[NODESPEC_MAX_GPUS] = {0};
    check_string(&c, body, "name", "name", NODESPEC_MAX_NAME);
    check_int(&c, body, "cpus", "cpus", 1, NODESPEC_MAX_CPUS);
    check_int(&c, body, "memory_bytes", "memory_bytes", 0, (long long)1 << 60);
    const json_t *gpus = json_object_get(body, "gpus");
    if (gpus && (!json_is_array(gpus) || json_array_size(gpus) > NODESPEC_MAX_GPUS))
        fieldcheck_fail(&c, "gpus", "expected an array of at most %d GPUs", NODESPEC_MAX_GPUS);
    else
        for (size_t i = 0; i < json_array_size(gpus); i++)
            check_gpu(&c, json_array_get(gpus, i), i, seen);
    const json_t *sim = json_object_get(body, "simulated");
    if (sim && !json_is_boolean(sim))
        fieldcheck_fail(&c, "simulated", "expected true or false");
    check_unknown(&c, body, "", known, 5);
    if (json_array_size(c.errors) == 0) {
        json_decref(c.errors);
        *errors = NULL;
        return 0;
    }
    *errors = c.errors;
    return -1;
}
