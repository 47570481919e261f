/* Fuzz target: the job submission validator (server/spec/jobspec.c), fed a request body as
 * POST /api/v1/jobs reads it. A spec it accepts must meet every documented bound and
 * round-trip through jobspec_to_json(); a spec it rejects must say why, field by field. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "jobspec.h"

static void check_errors(const json_t *errors, const char *detail)
{
    FUZZ_CHECK(json_is_array(errors) && json_array_size(errors) > 0, "rejected without errors[]");
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        const char *field = json_string_value(json_object_get(e, "field"));
        FUZZ_CHECK(field && json_is_string(json_object_get(e, "detail")), "errors[%zu]", i);
        if (i == 0)
            FUZZ_CHECK(!strncmp(detail, field, strlen(field)), "detail '%s' vs field '%s'",
                       detail, field);
    }
}

static int env_name_ok(const char *k)
{
    size_t n = strlen(k);
    return n >= 1 && n <= 256 && !(k[0] >= '0' && k[0] <= '9') &&
           strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static void check_plans(const struct jobspec *s)
{
    struct plan_choice pc;
    FUZZ_CHECK(s->plans != 0 && s->plans < (1u << PLAN_NKINDS), "plans %#x", s->plans);
    FUZZ_CHECK(jobspec_plan_parse(s->plan, &pc) == 0, "plan '%s'", s->plan);
    FUZZ_CHECK(s->plans & (1u << pc.kind), "plan '%s' not among plans", s->plan);
    FUZZ_CHECK(s->max_tp >= pc.tp && s->max_pp >= pc.pp, "max_tp/max_pp below the plan's");
    json_t *decl = jobspec_plans_json(s);
    struct plan_spec ps;
    FUZZ_CHECK(jobspec_plans_read(decl, &ps) == 1, "stored plan declaration unreadable");
    FUZZ_CHECK(ps.params_b == s->model_size && ps.supported == s->plans &&
                   ps.max_tp == s->max_tp && ps.max_pp == s->max_pp,
               "stored plan declaration differs");
    json_decref(decl);
}

static void check_accepted(const struct jobspec *s)
{
    FUZZ_CHECK(s->name && s->name[0], "no name");
    FUZZ_CHECK(json_is_array(s->command) && json_array_size(s->command) >= 1 &&
                   json_array_size(s->command) <= JOBSPEC_MAX_ARGS,
               "command");
    FUZZ_CHECK(json_string_length(json_array_get(s->command, 0)) > 0, "empty program");
    FUZZ_CHECK(s->gpus >= 1 && s->gpus <= JOBSPEC_MAX_GPUS, "gpus %d", s->gpus);
    FUZZ_CHECK(s->min_gpus >= 1 && s->min_gpus <= s->gpus && s->max_gpus >= s->gpus &&
                   s->max_gpus <= JOBSPEC_MAX_GPUS,
               "min/max gpus %d/%d/%d", s->min_gpus, s->gpus, s->max_gpus);
    FUZZ_CHECK(s->priority >= JOBSPEC_MIN_PRIORITY && s->priority <= JOBSPEC_MAX_PRIORITY, "prio");
    FUZZ_CHECK(s->batch_per_gpu >= 1 && s->batch_per_gpu <= JOBSPEC_MAX_BATCH, "batch");
    const char *k;
    json_t *v;
    json_object_foreach(s->env, k, v)
    {
        FUZZ_CHECK(env_name_ok(k), "env name '%.40s'", k);
        FUZZ_CHECK(json_is_string(v) && json_string_length(v) <= JOBSPEC_MAX_ARG, "env value");
    }
    FUZZ_CHECK(!s->model || json_is_object(s->model), "model");
    if (s->model_size > 0)
        check_plans(s);
}

/* Accepted specs round-trip: to_json, parse again, to_json again gives the same object. */
static void check_round_trip(const struct jobspec *s)
{
    json_t *j1 = jobspec_to_json(s), *errors = NULL;
    char detail[512];
    struct jobspec again;
    FUZZ_CHECK(j1, "jobspec_to_json failed");
    int rc = jobspec_parse(j1, &again, &errors, detail, sizeof(detail));
    FUZZ_CHECK(rc == 0, "its own JSON is refused: %s", detail);
    json_t *j2 = jobspec_to_json(&again);
    FUZZ_CHECK(json_equal(j1, j2), "the round trip changed the spec");
    json_decref(j1);
    json_decref(j2);
    jobspec_clear(&again);
}

/* The plan names of jobspec_plan_parse() round-trip through jobspec_plan_name(). */
static void check_plan_name(const uint8_t *data, size_t size)
{
    char s[64], name[JOBSPEC_PLAN_MAX];
    struct plan_choice c, c2;
    if (size >= sizeof(s) || memchr(data, '\0', size))
        return;
    memcpy(s, data, size);
    s[size] = '\0';
    if (jobspec_plan_parse(s, &c) < 0)
        return;
    jobspec_plan_name(&c, name, sizeof(name));
    FUZZ_CHECK(jobspec_plan_parse(name, &c2) == 0 && c.kind == c2.kind && c.tp == c2.tp &&
                   c.pp == c2.pp,
               "plan '%s' -> '%s'", s, name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    check_plan_name(data, size);
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) { /* the server answers 400 before validation */
        json_decref(body);
        return 0;
    }
    struct jobspec spec;
    json_t *errors = NULL;
    char detail[512] = "";
    if (jobspec_parse(body, &spec, &errors, detail, sizeof(detail)) == 0) {
        FUZZ_CHECK(errors == NULL, "accepted with errors");
        check_accepted(&spec);
        check_round_trip(&spec);
        jobspec_clear(&spec);
    } else {
        check_errors(errors, detail);
        json_decref(errors);
    }
    json_decref(body);
    return 0;
}
