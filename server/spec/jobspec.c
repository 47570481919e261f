/* jobspec: every rule of a job submission (name, command, env, GPUs, plans, batch, lengths,
 * priority...), each broken one naming its field, and the spec's JSON mapping. Pure. */
#include "jobspec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "fieldcheck.h"
#include "jobafter.h"

static const char *type_name(const json_t *v)
{
    static const char *const names[] = {"an object", "an array", "a string", "an integer",
                                        "a number",  "true",     "false",    "null"};
    return names[json_typeof(v)];
}

/* An optional integer in lo..hi; null or missing gives def. */
static int get_int(struct fieldcheck *c, const json_t *body, const char *key, long long lo,
                   long long hi, int def)
{
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v))
        return def;
    if (!json_is_integer(v)) {
        fieldcheck_fail(c, key, "expected an integer, got %s", type_name(v));
        return def;
    }
    long long x = json_integer_value(v);
    if (x < lo || x > hi) {
        fieldcheck_fail(c, key, "expected %lld..%lld, got %lld", lo, hi, x);
        return def;
    }
    return (int)x;
}

/* An optional boolean; missing or null gives false. */
static bool get_bool(struct fieldcheck *c, const json_t *body, const char *key)
{
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v))
        return false;
    if (!json_is_boolean(v)) {
        fieldcheck_fail(c, key, "expected true or false, got %s", type_name(v));
        return false;
    }
    return json_is_true(v);
}

static void check_name(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    const json_t *v = json_object_get(body, "name");
    if (!v) {
        fieldcheck_fail(c, "name", "required");
        return;
    }
    if (!json_is_string(v)) {
        fieldcheck_fail(c, "name", "expected a string, got %s", type_name(v));
        return;
    }
    long n = fieldcheck_text_chars(json_string_value(v));
    if (n < 0) {
        fieldcheck_fail(c, "name", "control characters are not allowed");
        return;
    }
    if (n < 1 || n > JOBSPEC_MAX_NAME) {
        fieldcheck_fail(c, "name", "expected 1..%d characters, got %ld", JOBSPEC_MAX_NAME, n);
        return;
    }
    spec->name = strdup(json_string_value(v));
}

static void check_command(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    json_t *v = json_object_get(body, "command");
    if (!v) {
        fieldcheck_fail(c, "command", "required");
        return;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > JOBSPEC_MAX_ARGS) {
        fieldcheck_fail(c, "command", "expected an array of 1..%d strings", JOBSPEC_MAX_ARGS);
        return;
    }
    size_t i;
    json_t *arg;
    json_array_foreach(v, i, arg)
    {
        char field[32];
        snprintf(field, sizeof(field), "command[%zu]", i);
        if (!json_is_string(arg))
            fieldcheck_fail(c, field, "expected a string, got %s", type_name(arg));
        else if (json_string_length(arg) > JOBSPEC_MAX_ARG)
            fieldcheck_fail(c, field, "longer than %d bytes", JOBSPEC_MAX_ARG);
        else if (i == 0 && json_string_length(arg) == 0)
            fieldcheck_fail(c, field, "the program must not be empty");
    }
    spec->command = json_incref(v);
}

static int env_name_ok(const char *k)
{
    size_t n = strlen(k);
    return n >= 1 && n <= 256 &&
           strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_") == n &&
           !(k[0] >= '0' && k[0] <= '9');
}

static void check_env(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    json_t *v = json_object_get(body, "env");
    if (!v || json_is_null(v)) {
        spec->env = json_object();
        return;
    }
    if (!json_is_object(v) || json_object_size(v) > JOBSPEC_MAX_ENV) {
        fieldcheck_fail(c, "env", "expected an object of at most %d strings", JOBSPEC_MAX_ENV);
        return;
    }
    const char *k;
    json_t *val;
    json_object_foreach(v, k, val)
    {
        char field[300];
        snprintf(field, sizeof(field), "env.%.256s", k);
        if (!env_name_ok(k))
            fieldcheck_fail(c, field, "not a variable name ([A-Za-z_][A-Za-z0-9_]*, 1..256)");
        else if (!json_is_string(val))
            fieldcheck_fail(c, field, "expected a string, got %s", type_name(val));
        else if (json_string_length(val) > JOBSPEC_MAX_ARG)
            fieldcheck_fail(c, field, "longer than %d bytes", JOBSPEC_MAX_ARG);
    }
    spec->env = json_incref(v);
}

/* Nesting depth of v: 0 for a scalar, 1 for a flat object or array. Stops counting past
 * limit + 1. */
static int json_depth(const json_t *v, int limit)
{
    if (limit < 0 || (!json_is_object(v) && !json_is_array(v)))
        return 0;
    int deepest = 0;
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach(v, i, e)
        {
            int d = json_depth(e, limit - 1);
            deepest = d > deepest ? d : deepest;
        }
    } else {
        json_object_foreach((json_t *)v, k, e)
        {
            int d = json_depth(e, limit - 1);
            deepest = d > deepest ? d : deepest;
        }
    }
    return deepest + 1;
}

static void check_model(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    json_t *v = json_object_get(body, "model");
    if (!v || json_is_null(v))
        return;
    if (!json_is_object(v)) {
        fieldcheck_fail(c, "model", "expected an object, got %s", type_name(v));
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT);
    size_t n = text ? strlen(text) : 0;
    free(text);
    if (n == 0 || n > JOBSPEC_MAX_MODEL) {
        fieldcheck_fail(c, "model", "larger than %d bytes", JOBSPEC_MAX_MODEL);
        return;
    }
    if (json_depth(v, JOBSPEC_MAX_MODEL_DEPTH) > JOBSPEC_MAX_MODEL_DEPTH) {
        fieldcheck_fail(c, "model", "nested deeper than %d levels", JOBSPEC_MAX_MODEL_DEPTH);
        return;
    }
    spec->model = json_incref(v);
}

static void check_gpus(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    if (!json_object_get(body, "gpus"))
        fieldcheck_fail(c, "gpus", "required");
    spec->gpus = get_int(c, body, "gpus", 1, JOBSPEC_MAX_GPUS, 1);
    spec->min_gpus = get_int(c, body, "min_gpus", 1, JOBSPEC_MAX_GPUS, spec->gpus);
    spec->max_gpus = get_int(c, body, "max_gpus", 1, JOBSPEC_MAX_GPUS, spec->gpus);
    if (spec->min_gpus > spec->gpus)
        fieldcheck_fail(c, "min_gpus", "must be at most gpus (%d), got %d", spec->gpus,
                        spec->min_gpus);
    if (spec->max_gpus < spec->gpus)
        fieldcheck_fail(c, "max_gpus", "must be at least gpus (%d), got %d", spec->gpus,
                        spec->max_gpus);
    const json_t *e = json_object_get(body, "elastic");
    if (e && !json_is_null(e) && !json_is_boolean(e))
        fieldcheck_fail(c, "elastic", "expected true or false, got %s", type_name(e));
    spec->elastic = e && json_is_true(e);
}

/* ---- execution plans ---- */

static const char *const plan_kinds[PLAN_NKINDS] = {"dp", "zero1", "zero2", "zero3", "offload"};

static int kind_of(const char *s, size_t n)
{
    for (int k = 0; k < PLAN_NKINDS; k++)
        if (strlen(plan_kinds[k]) == n && strncmp(s, plan_kinds[k], n) == 0)
            return k;
    return -1;
}

/* "-tpN" or "-ppN" at *s: stores N (1, 2, 4, 8) in *deg and advances; -1 when malformed. */
static int plan_degree(const char **s, const char *tag, int *deg)
{
    if ((*s)[0] != '-' || strncmp(*s + 1, tag, 2) != 0)
        return 0;
    char d = (*s)[3];
    if ((d != '1' && d != '2' && d != '4' && d != '8') || ((*s)[4] && (*s)[4] != '-'))
        return -1;
    *deg = d - '0';
    *s += 4;
    return 0;
}

int jobspec_plan_parse(const char *s, struct plan_choice *c)
{
    memset(c, 0, sizeof(*c));
    c->tp = c->pp = 1;
    if (!s)
        return -1;
    size_t n = strcspn(s, "-");
    if ((c->kind = kind_of(s, n)) < 0)
        return -1;
    s += n;
    if (plan_degree(&s, "tp", &c->tp) < 0 || plan_degree(&s, "pp", &c->pp) < 0)
        return -1;
    return *s ? -1 : 0;
}

void jobspec_plan_name(const struct plan_choice *c, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s",
                     c->kind >= 0 && c->kind < PLAN_NKINDS ? plan_kinds[c->kind] : "dp");
    if (c->tp > 1 && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "-tp%d", c->tp);
    if (c->pp > 1 && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "-pp%d", c->pp);
}

/* An optional number in (lo, hi] (lo itself allowed when lo_ok); def when missing. */
static double get_num(struct fieldcheck *c, const json_t *body, const char *key, double lo,
                      int lo_ok, double hi, double def)
{
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v))
        return def;
    double x = json_number_value(v);
    if (!json_is_number(v))
        fieldcheck_fail(c, key, "expected a number, got %s", type_name(v));
    else if (!(x > lo || (lo_ok && x == lo)) || x > hi)
        fieldcheck_fail(c, key, "expected a number in %c%g, %g], got %g", lo_ok ? '[' : '(', lo, hi,
                        x);
    else
        return x;
    return def;
}

static void check_plan_list(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    const json_t *v = json_object_get(body, "plans");
    if (!v || json_is_null(v))
        return;
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > PLAN_NKINDS) {
        fieldcheck_fail(c, "plans",
                        "expected an array of 1..%d of dp, zero1, zero2, zero3,"
                        " offload",
                        PLAN_NKINDS);
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        char field[32];
        snprintf(field, sizeof(field), "plans[%zu]", i);
        const char *s = json_string_value(e);
        int k = s ? kind_of(s, strlen(s)) : -1;
        if (k < 0)
            fieldcheck_fail(c, field, "expected one of dp, zero1, zero2, zero3, offload");
        else if (spec->plans & (1u << k))
            fieldcheck_fail(c, field, "'%s' appears twice", s);
        else
            spec->plans |= 1u << k;
    }
}

/* The requested plan: given, or the first of plans, or dp. */
static void check_requested(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    const json_t *v = json_object_get(body, "plan");
    struct plan_choice pc;
    const char *s = json_string_value(v);
    if (!v || json_is_null(v)) {
        const json_t *first = json_array_get(json_object_get(body, "plans"), 0);
        s = json_string_value(first) ? json_string_value(first) : "dp";
    } else if (!s || jobspec_plan_parse(s, &pc) < 0) {
        fieldcheck_fail(c, "plan",
                        "expected KIND[-tpN][-ppN], KIND one of dp, zero1, zero2,"
                        " zero3, offload, N 1, 2, 4 or 8");
        return;
    }
    if (jobspec_plan_parse(s, &pc) < 0)
        return; /* a bad plans[0], already reported */
    jobspec_plan_name(&pc, spec->plan, sizeof(spec->plan));
    if (spec->plans && !(spec->plans & (1u << pc.kind)))
        fieldcheck_fail(c, "plan", "'%s' is not among plans", plan_kinds[pc.kind]);
    if (!spec->plans)
        spec->plans = 1u << pc.kind;
    spec->max_tp = get_int(c, body, "max_tp", 1, PLAN_MAX_DEGREE, pc.tp);
    spec->max_pp = get_int(c, body, "max_pp", 1, PLAN_MAX_DEGREE, pc.pp);
    if (spec->max_tp < pc.tp)
        fieldcheck_fail(c, "max_tp", "must be at least the plan's tp (%d)", pc.tp);
    if (spec->max_pp < pc.pp)
        fieldcheck_fail(c, "max_pp", "must be at least the plan's pp (%d)", pc.pp);
}

static void check_plans(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    static const char *const needs_size[] = {"activation_gb", "plans", "plan", "max_tp", "max_pp"};
    const json_t *size = json_object_get(body, "model_size");
    if (!size || json_is_null(size)) {
        for (size_t i = 0; i < sizeof(needs_size) / sizeof(needs_size[0]); i++)
            if (json_object_get(body, needs_size[i]))
                fieldcheck_fail(c, needs_size[i], "needs model_size (billions of parameters)");
        return;
    }
    spec->model_size = get_num(c, body, "model_size", 0, 0, JOBSPEC_MAX_MODEL_SIZE, 0);
    spec->activation_gb = get_num(c, body, "activation_gb", 0, 1, JOBSPEC_MAX_ACTIVATION_GB, 0);
    check_plan_list(c, body, spec);
    check_requested(c, body, spec);
}

/* The declared length: total_steps (1..JOBSPEC_MAX_STEPS) or epochs, not both; whether it
 * stops at convergence or at a loss; and hold. */
static void check_length(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    const json_t *v = json_object_get(body, "total_steps");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v))
            fieldcheck_fail(c, "total_steps", "expected an integer, got %s", type_name(v));
        else if (json_integer_value(v) < 1 || json_integer_value(v) > JOBSPEC_MAX_STEPS)
            fieldcheck_fail(c, "total_steps", "expected 1..%lld, got %lld", JOBSPEC_MAX_STEPS,
                            (long long)json_integer_value(v));
        else
            spec->total_steps = json_integer_value(v);
    }
    spec->epochs = get_num(c, body, "epochs", 0, 0, JOBSPEC_MAX_EPOCHS, 0);
    if (spec->total_steps > 0 && spec->epochs > 0)
        fieldcheck_fail(c, "epochs", "declare total_steps or epochs, not both");
    spec->stop_at_convergence = get_bool(c, body, "stop_at_convergence");
    v = json_object_get(body, "stop_at_loss");
    if (v && !json_is_null(v)) {
        double x = json_number_value(v);
        if (!json_is_number(v) || !isfinite(x))
            fieldcheck_fail(c, "stop_at_loss", "expected a number, got %s", type_name(v));
        else {
            spec->has_stop_loss = true;
            spec->stop_at_loss = x;
        }
    }
    spec->hold = get_bool(c, body, "hold");
}

/* ---- the batch model ---- */

/* adaptive_batch: {"max": N, "min": M0 (optional)}. The scheduler chooses in [batch, max]:
 * the gradient statistics are measured at batch, and below it the job's work could not be
 * counted in the steps it declared; so min, when given, must equal batch. */
static void check_adaptive(struct fieldcheck *c, const json_t *v, struct jobspec *spec)
{
    const json_t *mx = json_object_get(v, "max"), *mn = json_object_get(v, "min");
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)v, k, e) if (strcmp(k, "max") != 0 && strcmp(k, "min") != 0)
        fieldcheck_fail(c, "adaptive_batch", "unknown key '%.64s' (expected min, max)", k);
    if (!json_is_integer(mx) || json_integer_value(mx) < spec->batch ||
        json_integer_value(mx) > JOBSPEC_MAX_GLOBAL_BATCH) {
        fieldcheck_fail(c, "adaptive_batch.max", "expected an integer in %d..%d (at least batch)",
                        spec->batch, JOBSPEC_MAX_GLOBAL_BATCH);
        return;
    }
    if (mn && (!json_is_integer(mn) || json_integer_value(mn) != spec->batch)) {
        fieldcheck_fail(c, "adaptive_batch.min",
                        "must equal batch (%d): the scheduler never goes below the batch the"
                        " gradient statistics are measured at",
                        spec->batch);
        return;
    }
    spec->max_batch = (int)json_integer_value(mx);
}

/* lr_scaling: "sqrt" (the default), "linear" or "none" (batch.h). */
static void check_lr_scaling(struct fieldcheck *c, const json_t *v, struct jobspec *spec)
{
    enum batch_lr_scaling rule = BATCH_LR_SQRT;
    if (v && batch_lr_scaling_parse(json_string_value(v), &rule) < 0)
        fieldcheck_fail(c, "lr_scaling", "expected \"sqrt\", \"linear\" or \"none\"");
    spec->lr_scaling = (int)rule;
}

/* batch (M0, at least gpus: each GPU takes one example or more), adaptive_batch,
 * max_local_batch and lr_scaling; the last three need batch. */
static void check_batch(struct fieldcheck *c, const json_t *body, struct jobspec *spec)
{
    const json_t *b = json_object_get(body, "batch"), *a = json_object_get(body, "adaptive_batch");
    if (!b || json_is_null(b)) {
        if (a && !json_is_null(a))
            fieldcheck_fail(c, "adaptive_batch", "needs batch (the initial global batch)");
        if (json_object_get(body, "max_local_batch"))
            fieldcheck_fail(c, "max_local_batch", "needs batch (the initial global batch)");
        if (json_object_get(body, "lr_scaling"))
            fieldcheck_fail(c, "lr_scaling", "needs batch (the initial global batch)");
        return;
    }
    spec->batch = get_int(c, body, "batch", 1, JOBSPEC_MAX_GLOBAL_BATCH, 0);
    if (spec->batch > 0 && spec->batch < spec->gpus) {
        fieldcheck_fail(c, "batch",
                        "must be at least gpus (%d): one example per GPU or more,"
                        " got %d",
                        spec->gpus, spec->batch);
        spec->batch = 0;
    }
    spec->max_local_batch = get_int(c, body, "max_local_batch", 1, JOBSPEC_MAX_BATCH, 0);
    check_lr_scaling(c, json_object_get(body, "lr_scaling"), spec);
    if (spec->batch <= 0 || !a || json_is_null(a))
        return;
    if (!json_is_object(a))
        fieldcheck_fail(c, "adaptive_batch", "expected an object {\"max\": N}, got %s",
                        type_name(a));
    else
        check_adaptive(c, a, spec);
}

/* null for a field the API does not document null for (only adaptive_batch: "absent or
 * null: the batch stays fixed") is refused by name rather than taken as its default
 * ("gpus": null was 1); name and command say "expected ..., got null" themselves. */
static int null_refused(const char *k)
{
    return strcmp(k, "adaptive_batch") != 0 && strcmp(k, "name") != 0 &&
           strcmp(k, "command") != 0;
}

static void check_unknown(struct fieldcheck *c, const json_t *body)
{
    static const char *const known[] = {"name",
                                        "command",
                                        "gpus",
                                        "min_gpus",
                                        "max_gpus",
                                        "elastic",
                                        "priority",
                                        "batch_per_gpu",
                                        "model",
                                        "env",
                                        "model_size",
                                        "activation_gb",
                                        "plans",
                                        "plan",
                                        "max_tp",
                                        "max_pp",
                                        "total_steps",
                                        "epochs",
                                        "stop_at_convergence",
                                        "stop_at_loss",
                                        "hold",
                                        "batch",
                                        "adaptive_batch",
                                        "max_local_batch",
                                        "after",
                                        "topology",
                                        "lr_scaling",
                                        "deadline"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        size_t i = 0;
        while (i < sizeof(known) / sizeof(known[0]) && strcmp(k, known[i]) != 0)
            i++;
        if (i == sizeof(known) / sizeof(known[0]))
            fieldcheck_fail(c, strlen(k) > 64 ? "(long name)" : k, "unknown field");
    }
}

/* The body without the fields whose null is refused (each named in c), so that the rules
 * after it see them as absent and say nothing more of them; NULL when out of memory. */
static json_t *without_nulls(struct fieldcheck *c, const json_t *body)
{
    json_t *copy = json_copy((json_t *)body);
    const char *k;
    json_t *v;
    void *tmp;
    if (!copy)
        return NULL;
    json_object_foreach_safe(copy, tmp, k, v)
    {
        if (!json_is_null(v) || !null_refused(k))
            continue;
        fieldcheck_fail(c, strlen(k) > 64 ? "(long name)" : k,
                        "null is not a value here: leave the field out for its default");
        json_object_del(copy, k);
    }
    return copy;
}

int jobspec_parse(const json_t *in, struct jobspec *spec, json_t **errors, char *detail,
                  size_t len)
{
    struct fieldcheck c = {.errors = json_array(), .detail = detail, .len = len};
    memset(spec, 0, sizeof(*spec));
    json_t *body = without_nulls(&c, in);
    if (!body) {
        fieldcheck_fail(&c, "(body)", "out of memory");
        *errors = c.errors;
        return -1;
    }
    check_name(&c, body, spec);
    check_command(&c, body, spec);
    check_gpus(&c, body, spec);
    spec->priority = get_int(&c, body, "priority", JOBSPEC_MIN_PRIORITY, JOBSPEC_MAX_PRIORITY, 0);
    spec->batch_per_gpu =
        get_int(&c, body, "batch_per_gpu", 1, JOBSPEC_MAX_BATCH, JOBSPEC_DEFAULT_BATCH);
    check_env(&c, body, spec);
    check_model(&c, body, spec);
    check_plans(&c, body, spec);
    check_length(&c, body, spec);
    check_batch(&c, body, spec);
    spec->after = jobafter_check(&c, json_object_get(body, "after"));
    jobspec_topology_check(&c, body, &spec->max_switches, &spec->max_switches_wait_s);
    jobspec_deadline_check(&c, body, &spec->deadline);
    check_unknown(&c, body);
    json_decref(body);
    if (json_array_size(c.errors) == 0 && spec->name && spec->env) {
        json_decref(c.errors);
        *errors = NULL;
        return 0;
    }
    if (json_array_size(c.errors) == 0)
        fieldcheck_fail(&c, "(body)", "out of memory");
    jobspec_clear(spec);
    *errors = c.errors;
    return -1;
}

void jobspec_clear(struct jobspec *spec)
{
    free(spec->name);
    json_decref(spec->command);
    json_decref(spec->env);
    json_decref(spec->model);
    json_decref(spec->after);
    memset(spec, 0, sizeof(*spec));
}

json_t *jobspec_to_json(const struct jobspec *spec)
{
    json_t *o = json_pack("{s:s, s:O, s:i, s:i, s:i, s:b, s:i, s:i, s:O}", "name", spec->name,
                          "command", spec->command, "gpus", spec->gpus, "min_gpus", spec->min_gpus,
                          "max_gpus", spec->max_gpus, "elastic", spec->elastic, "priority",
                          spec->priority, "batch_per_gpu", spec->batch_per_gpu, "env", spec->env);
    if (o && spec->model)
        json_object_set(o, "model", spec->model);
    json_t *plans = jobspec_plans_json(spec);
    if (o && plans)
        json_object_update(o, plans);
    json_decref(plans);
    if (o && spec->total_steps > 0)
        json_object_set_new(o, "total_steps", json_integer(spec->total_steps));
    if (o && spec->epochs > 0)
        json_object_set_new(o, "epochs", json_real(spec->epochs));
    if (o && spec->stop_at_convergence)
        json_object_set_new(o, "stop_at_convergence", json_true());
    if (o && spec->has_stop_loss)
        json_object_set_new(o, "stop_at_loss", json_real(spec->stop_at_loss));
    if (o && spec->hold)
        json_object_set_new(o, "hold", json_true());
    json_t *batch = jobspec_batch_json(spec);
    if (o && batch) {
        json_object_update(o, batch);
        if (!spec->max_batch)
            json_object_del(o, "adaptive_batch");
        if (!spec->max_local_batch)
            json_object_del(o, "max_local_batch");
    }
    json_decref(batch);
    if (o && spec->after)
        json_object_set(o, "after", spec->after);
    json_t *topology = jobspec_topology_json(spec->max_switches, spec->max_switches_wait_s);
    if (o && topology)
        json_object_set(o, "topology", topology);
    json_decref(topology);
    char at[40];
    if (o && spec->deadline > 0 && jobspec_deadline_text(spec->deadline, at, sizeof(at)) > 0)
        json_object_set_new(o, "deadline", json_string(at));
    return o;
}

json_t *jobspec_batch_json(const struct jobspec *spec)
{
    if (spec->batch <= 0)
        return NULL;
    json_t *adaptive = spec->max_batch > 0
                           ? json_pack("{s:i, s:i}", "min", spec->batch, "max", spec->max_batch)
                           : json_null();
    json_t *local = spec->max_local_batch > 0 ? json_integer(spec->max_local_batch) : json_null();
    json_t *o = json_pack("{s:i, s:o, s:o}", "batch", spec->batch, "adaptive_batch", adaptive,
                          "max_local_batch", local);
    if (o && spec->lr_scaling != BATCH_LR_SQRT)
        json_object_set_new(o, "lr_scaling", json_string(batch_lr_scaling_name(spec->lr_scaling)));
    return o;
}

int jobspec_batch_lr_scaling(const json_t *decl)
{
    enum batch_lr_scaling rule = BATCH_LR_SQRT;
    batch_lr_scaling_parse(json_string_value(json_object_get(decl, "lr_scaling")), &rule);
    return (int)rule;
}

int jobspec_batch_read(const json_t *decl, double grad_sqr, double grad_var, long cur,
                       struct batch_spec *b)
{
    memset(b, 0, sizeof(*b));
    json_int_t m0 = json_integer_value(json_object_get(decl, "batch"));
    if (!json_is_object(decl) || m0 < 1)
        return 0;
    json_int_t mx =
        json_integer_value(json_object_get(json_object_get(decl, "adaptive_batch"), "max"));
    b->init_batch = (double)m0;
    b->batch = cur > 0 ? (double)cur : (double)m0;
    b->adaptive = mx >= m0;
    b->max_batch = b->adaptive ? (double)mx : (double)m0;
    b->max_local = (double)json_integer_value(json_object_get(decl, "max_local_batch"));
    b->min_local = 1;
    if (isfinite(grad_sqr) && isfinite(grad_var) && grad_sqr >= 0 && grad_var >= 0) {
        b->grad_sqr = grad_sqr;
        b->grad_var = grad_var;
    }
    return 1;
}

json_t *jobspec_plans_json(const struct jobspec *spec)
{
    if (!(spec->model_size > 0))
        return NULL;
    json_t *kinds = json_array();
    for (int k = 0; k < PLAN_NKINDS; k++)
        if (spec->plans & (1u << k))
            json_array_append_new(kinds, json_string(plan_kinds[k]));
    return json_pack("{s:f, s:f, s:o, s:s, s:i, s:i}", "model_size", spec->model_size,
                     "activation_gb", spec->activation_gb, "plans", kinds, "plan", spec->plan,
                     "max_tp", spec->max_tp, "max_pp", spec->max_pp);
}

int jobspec_plans_read(const json_t *decl, struct plan_spec *ps)
{
    memset(ps, 0, sizeof(*ps));
    double size = json_number_value(json_object_get(decl, "model_size"));
    if (!json_is_object(decl) || !(size > 0) ||
        jobspec_plan_parse(json_string_value(json_object_get(decl, "plan")), &ps->requested) < 0)
        return 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(decl, "plans"), i, e)
    {
        const char *s = json_string_value(e);
        int k = s ? kind_of(s, strlen(s)) : -1;
        if (k >= 0)
            ps->supported |= 1u << k;
    }
    ps->params_b = size;
    ps->act_gb = json_number_value(json_object_get(decl, "activation_gb"));
    ps->max_tp = (int)json_integer_value(json_object_get(decl, "max_tp"));
    ps->max_pp = (int)json_integer_value(json_object_get(decl, "max_pp"));
    return 1;
}
