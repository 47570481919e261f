/* Fuzz target: the node registration validator (server/spec/nodespec.c), fed a request body
 * as POST /api/v1/nodes reads it. What it accepts must meet nodespec.h's rules, checked
 * here independently; what it rejects must carry errors[] and a detail. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "nodespec.h"

static int int_in(const json_t *o, const char *key, long long lo, long long hi)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static int string_ok(const json_t *o, const char *key, size_t max)
{
    const json_t *v = json_object_get(o, key);
    size_t n = json_string_length(v);
    return json_is_string(v) && n >= 1 && n <= max && strlen(json_string_value(v)) == n;
}

static int only_keys(const json_t *o, const char *const *known, size_t n)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        size_t i = 0;
        while (i < n && strcmp(k, known[i]))
            i++;
        if (i == n)
            return 0;
    }
    return 1;
}

static void check_accepted(const json_t *b)
{
    static const char *const top[] = {"name", "cpus", "memory_bytes", "gpus", "simulated"};
    static const char *const gpu[] = {"index", "model", "memory_bytes"};
    unsigned char seen[NODESPEC_MAX_GPUS] = {0};
    FUZZ_CHECK(only_keys(b, top, 5), "unknown key accepted");
    FUZZ_CHECK(string_ok(b, "name", NODESPEC_MAX_NAME), "name");
    FUZZ_CHECK(int_in(b, "cpus", 1, NODESPEC_MAX_CPUS), "cpus");
    FUZZ_CHECK(int_in(b, "memory_bytes", 0, (long long)1 << 60), "memory_bytes");
    const json_t *sim = json_object_get(b, "simulated"), *gpus = json_object_get(b, "gpus");
    FUZZ_CHECK(!sim || json_is_boolean(sim), "simulated");
    FUZZ_CHECK(!gpus || (json_is_array(gpus) && json_array_size(gpus) <= NODESPEC_MAX_GPUS),
               "gpus");
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        FUZZ_CHECK(json_is_object(g) && only_keys(g, gpu, 3), "gpus[%zu]", i);
        FUZZ_CHECK(int_in(g, "index", 0, NODESPEC_MAX_GPUS - 1), "gpus[%zu].index", i);
        FUZZ_CHECK(string_ok(g, "model", NODESPEC_MAX_MODEL), "gpus[%zu].model", i);
        FUZZ_CHECK(int_in(g, "memory_bytes", 0, (long long)1 << 50), "gpus[%zu].mem", i);
        long long x = json_integer_value(json_object_get(g, "index"));
        FUZZ_CHECK(!seen[x]++, "gpu index %lld twice", x);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) { /* the server answers 400 before validation */
        json_decref(body);
        return 0;
    }
    json_t *errors = NULL;
    char detail[512] = "";
    if (nodespec_check(body, &errors, detail, sizeof(detail)) == 0) {
        FUZZ_CHECK(errors == NULL, "accepted with errors");
        check_accepted(body);
    } else {
        FUZZ_CHECK(json_array_size(errors) > 0 && detail[0], "rejected without errors");
        size_t i;
        json_t *e;
        json_array_foreach(errors, i, e)
        FUZZ_CHECK(json_is_string(json_object_get(e, "field")) &&
                       json_is_string(json_object_get(e, "detail")),
                   "errors[%zu]", i);
        json_decref(errors);
    }
    json_decref(body);
    return 0;
}
