/* jobafter: a submission's "after" checked, each broken rule naming its field, and the
 * stored form with every "when" filled in (jobafter.h). */
#include "jobafter.h"

#include <stdio.h>
#include <string.h>

#include "deps.h"

/* {"job": ID} or {"array": ID}, one of the two, ID 1..2^53 (a JSON number stays exact). */
static json_t *check_target(struct fieldcheck *c, const json_t *v, const char *at)
{
    const json_t *job = json_object_get(v, "job"), *arr = json_object_get(v, "array");
    const json_t *id = job ? job : arr;
    const char *name = job ? "job" : "array";

    if ((job != NULL) == (arr != NULL)) {
        fieldcheck_fail(c, at, "expected one of \"job\" or \"array\" (an id)");
        return NULL;
    }
    if (!json_is_integer(id) || json_integer_value(id) < 1 ||
        json_integer_value(id) > (1LL << 53)) {
        fieldcheck_fail(c, at, "%s: expected an id (an integer >= 1)", name);
        return NULL;
    }
    return json_pack("{s:I}", name, json_integer_value(id));
}

/* One dependency, at its field at ("after[0]"). */
static json_t *check_one(struct fieldcheck *c, const json_t *v, const char *at)
{
    const char *k;
    json_t *e;
    enum deps_when w = DEPS_OK;

    if (!json_is_object(v)) {
        fieldcheck_fail(c, at, "expected an object {\"job\": ID, \"when\": \"ok\"}");
        return NULL;
    }
    json_object_foreach((json_t *)v, k, e)
    {
        if (strcmp(k, "job") && strcmp(k, "array") && strcmp(k, "when")) {
            fieldcheck_fail(c, at, "unknown key '%.64s' (expected job or array, and when)", k);
            return NULL;
        }
    }
    const json_t *when = json_object_get(v, "when");
    if (when && (!json_is_string(when) || deps_when_parse(json_string_value(when), &w) < 0)) {
        fieldcheck_fail(c, at, "when: expected \"ok\", \"any\" or \"notok\"");
        return NULL;
    }
    json_t *d = check_target(c, v, at);
    if (d)
        json_object_set_new(d, "when", json_string(deps_when_name(w)));
    return d;
}

json_t *jobafter_check(struct fieldcheck *c, const json_t *v)
{
    size_t n = json_array_size(v), bad = 0;
    char at[32];

    if (!v)
        return NULL;
    if (!json_is_array(v) || n < 1 || n > JOBAFTER_MAX) {
        fieldcheck_fail(c, "after", "expected an array of 1..%d dependencies", JOBAFTER_MAX);
        return NULL;
    }
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++) {
        snprintf(at, sizeof(at), "after[%zu]", i);
        json_t *d = check_one(c, json_array_get(v, i), at);
        bad += !d;
        json_array_append_new(out, d ? d : json_null());
    }
    if (!out || bad) {
        json_decref(out);
        return NULL;
    }
    return out;
}

long long jobafter_id(const json_t *d, int *array)
{
    const json_t *job = json_object_get(d, "job");
    *array = job == NULL;
    return json_integer_value(job ? job : json_object_get(d, "array"));
}
