/* jobspec_topology: a submission's "topology", its stored form and its reading back
 * (jobspec_topology.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fieldcheck.h"
#include "jobspec_topology.h"

/* member key of t: an integer (1..hi), or a number (0..hi) when real; def when absent. */
static double member(struct fieldcheck *c, const json_t *t, const char *key, int real, double hi,
                     double def)
{
    char field[48];
    const json_t *v = json_object_get(t, key);
    snprintf(field, sizeof(field), "topology.%s", key);
    if (!v)
        return def;
    double x = json_number_value(v);
    if (real ? !json_is_number(v) || !isfinite(x) || x < 0 || x > hi
             : !json_is_integer(v) || x < 1 || x > hi) {
        fieldcheck_fail(
            c, field,
            real ? "expected a number of seconds in 0..%g" : "expected an integer in 1..%g", hi);
        return def;
    }
    return x;
}

void jobspec_topology_check(struct fieldcheck *c, const json_t *body, int *max_switches,
                            double *wait_s)
{
    const json_t *t = json_object_get(body, "topology");
    const char *k;
    json_t *v;
    if (!t)
        return;
    if (!json_is_object(t)) {
        fieldcheck_fail(c, "topology",
                        "expected an object {\"max_switches\": N, \"max_wait_s\": T}");
        return;
    }
    json_object_foreach((json_t *)t, k, v) if (strcmp(k, "max_switches") && strcmp(k, "max_wait_s"))
        fieldcheck_fail(c, "topology", "unknown key '%.64s' (expected max_switches, max_wait_s)",
                        k);
    if (!json_object_get(t, "max_switches")) {
        fieldcheck_fail(c, "topology.max_switches", "required");
        return;
    }
    *max_switches = (int)member(c, t, "max_switches", 0, JOBSPEC_MAX_SWITCHES, 0);
    *wait_s =
        member(c, t, "max_wait_s", 1, JOBSPEC_MAX_SWITCH_WAIT_S, JOBSPEC_DEFAULT_SWITCH_WAIT_S);
}

json_t *jobspec_topology_json(int max_switches, double wait_s)
{
    if (max_switches <= 0)
        return NULL;
    return json_pack("{s:i, s:f}", "max_switches", max_switches, "max_wait_s", wait_s);
}

void jobspec_topology_read(const json_t *decl, int *max_switches, double *wait_s)
{
    json_t *n = json_object_get(decl, "max_switches"), *w = json_object_get(decl, "max_wait_s");
    *max_switches = json_is_integer(n) && json_integer_value(n) > 0 &&
                            json_integer_value(n) <= JOBSPEC_MAX_SWITCHES
                        ? (int)json_integer_value(n)
                        : 0;
    *wait_s =
        *max_switches && json_is_number(w) && json_number_value(w) >= 0 ? json_number_value(w) : 0;
}
