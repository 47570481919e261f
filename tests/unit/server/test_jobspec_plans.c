/* The execution-plan fields of a job submission (docs/api.md): validation that names each
 * field, the defaults, the stored declaration and its reading back into the core's form,
 * and plan names both ways. */
#include <criterion/criterion.h>
#include <string.h>

#include "spec/jobspec.h"

#define BASE "\"name\":\"p\",\"command\":[\"train\"],\"gpus\":2"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    cr_assert_not_null(j, "test JSON: %s", e.text);
    return j;
}

/* Parses {BASE, fields}; expects success. */
static void parse_ok(const char *fields, struct jobspec *s)
{
    char text[1024], detail[256];
    snprintf(text, sizeof(text), "{" BASE "%s%s}", *fields ? "," : "", fields);
    json_t *body = load(text), *errors = NULL;
    cr_assert_eq(jobspec_parse(body, s, &errors, detail, sizeof(detail)), 0, "%s: %s", text,
                 detail);
    json_decref(body);
}

/* Parses {BASE, fields}; expects the first error on field, named in the detail too. */
static void expect_bad(const char *fields, const char *field)
{
    char text[1024], detail[256];
    snprintf(text, sizeof(text), "{" BASE ",%s}", fields);
    json_t *body = load(text), *errors = NULL;
    struct jobspec s;
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), -1, "accepted: %s",
                 text);
    const char *got = json_string_value(json_object_get(json_array_get(errors, 0), "field"));
    cr_expect_str_eq(got, field, "%s: %s", text, detail);
    cr_expect_eq(strncmp(detail, field, strlen(field)), 0, "detail names %s: %s", field, detail);
    json_decref(errors);
    json_decref(body);
}

Test(jobspec_plans, no_plan_fields_means_no_plan_information)
{
    struct jobspec s;
    parse_ok("", &s);
    cr_assert_eq(s.model_size, 0);
    cr_assert_null(jobspec_plans_json(&s));
    json_t *j = jobspec_to_json(&s);
    cr_assert_null(json_object_get(j, "plans"));
    json_decref(j);
    struct plan_spec ps;
    cr_assert_eq(jobspec_plans_read(NULL, &ps), 0);
    cr_assert_eq(ps.params_b, 0);
    jobspec_clear(&s);
}

Test(jobspec_plans, model_size_alone_asks_for_data_parallel)
{
    struct jobspec s;
    parse_ok("\"model_size\":1.3", &s);
    json_t *d = jobspec_plans_json(&s);
    cr_assert_not_null(d);
    cr_assert_str_eq(json_string_value(json_object_get(d, "plan")), "dp");
    cr_assert_eq(json_array_size(json_object_get(d, "plans")), 1);
    cr_assert_eq(json_integer_value(json_object_get(d, "max_tp")), 1);
    struct plan_spec ps;
    cr_assert_eq(jobspec_plans_read(d, &ps), 1);
    cr_assert_float_eq(ps.params_b, 1.3, 1e-12);
    cr_assert_eq(ps.supported, 1u << PLAN_DP);
    cr_assert_eq(ps.requested.kind, PLAN_DP);
    json_decref(d);
    jobspec_clear(&s);
}

Test(jobspec_plans, a_full_declaration_round_trips)
{
    struct jobspec s;
    parse_ok("\"model_size\":13,\"activation_gb\":12,\"plans\":[\"zero3\",\"offload\",\"dp\"],"
             "\"plan\":\"zero3-tp2\",\"max_tp\":4,\"max_pp\":2",
             &s);
    cr_assert_str_eq(s.plan, "zero3-tp2");
    cr_assert_eq(s.plans, (1u << PLAN_ZERO3) | (1u << PLAN_OFFLOAD) | (1u << PLAN_DP));
    json_t *d = jobspec_plans_json(&s);
    struct plan_spec ps;
    cr_assert_eq(jobspec_plans_read(d, &ps), 1);
    cr_assert_eq(ps.supported, s.plans);
    cr_assert_float_eq(ps.act_gb, 12, 1e-12);
    cr_assert_eq(ps.max_tp, 4);
    cr_assert_eq(ps.max_pp, 2);
    cr_assert_eq(ps.requested.kind, PLAN_ZERO3);
    cr_assert_eq(ps.requested.tp, 2);
    cr_assert_eq(ps.requested.pp, 1);
    /* What jobspec_to_json gives is accepted again and means the same. */
    json_t *j = jobspec_to_json(&s);
    json_t *errors = NULL;
    struct jobspec again;
    char detail[256];
    cr_assert_eq(jobspec_parse(j, &again, &errors, detail, sizeof(detail)), 0, "%s", detail);
    cr_assert_str_eq(again.plan, s.plan);
    cr_assert_eq(again.plans, s.plans);
    cr_assert_eq(again.model_size, s.model_size);
    jobspec_clear(&again);
    json_decref(j);
    json_decref(d);
    jobspec_clear(&s);
}

Test(jobspec_plans, the_requested_plan_defaults_to_the_first_supported)
{
    struct jobspec s;
    parse_ok("\"model_size\":2,\"plans\":[\"offload\",\"zero2\"]", &s);
    cr_assert_str_eq(s.plan, "offload");
    jobspec_clear(&s);
}

Test(jobspec_plans, each_rule_names_its_field)
{
    expect_bad("\"model_size\":0", "model_size");
    expect_bad("\"model_size\":-1", "model_size");
    expect_bad("\"model_size\":\"7B\"", "model_size");
    expect_bad("\"model_size\":1e9", "model_size");
    expect_bad("\"model_size\":1,\"activation_gb\":-2", "activation_gb");
    expect_bad("\"plans\":[\"dp\"]", "plans");
    expect_bad("\"plan\":\"dp\"", "plan");
    expect_bad("\"max_tp\":2", "max_tp");
    expect_bad("\"model_size\":1,\"plans\":[]", "plans");
    expect_bad("\"model_size\":1,\"plans\":\"dp\"", "plans");
    expect_bad("\"model_size\":1,\"plans\":[\"dp\",\"zero4\"]", "plans[1]");
    expect_bad("\"model_size\":1,\"plans\":[\"dp\",\"dp\"]", "plans[1]");
    expect_bad("\"model_size\":1,\"plans\":[\"dp\"],\"plan\":\"zero2\"", "plan");
    expect_bad("\"model_size\":1,\"plan\":\"dp-tp3\"", "plan");
    expect_bad("\"model_size\":1,\"plan\":\"dp-pp2-tp2\"", "plan");
    expect_bad("\"model_size\":1,\"plan\":7", "plan");
    expect_bad("\"model_size\":1,\"plan\":\"dp-tp4\",\"max_tp\":2", "max_tp");
    expect_bad("\"model_size\":1,\"max_pp\":16", "max_pp");
}

Test(jobspec_plans, plan_names_parse_and_print_both_ways)
{
    static const char *const good[] = {"dp",      "zero1",  "zero2",     "zero3",
                                       "offload", "dp-tp2", "zero3-pp4", "dp-tp8-pp2"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct plan_choice c;
        char back[JOBSPEC_PLAN_MAX];
        cr_assert_eq(jobspec_plan_parse(good[i], &c), 0, "%s", good[i]);
        jobspec_plan_name(&c, back, sizeof(back));
        cr_assert_str_eq(back, good[i]);
    }
    static const char *const bad[] = {"",        "DP",     "dp-",  "dp-tp",      "dp-tp16",
                                      "dp-tp2-", "dp tp2", "zero", "dp-pp2-tp2", "offload-c8"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct plan_choice c;
        cr_assert_eq(jobspec_plan_parse(bad[i], &c), -1, "accepted '%s'", bad[i]);
    }
    struct plan_choice c;
    cr_assert_eq(jobspec_plan_parse(NULL, &c), -1);
    /* The core's zero-initialised choice is plain data parallel. */
    char name[JOBSPEC_PLAN_MAX];
    jobspec_plan_name(&(struct plan_choice){0}, name, sizeof(name));
    cr_assert_str_eq(name, "dp");
}
