/* Validation of job submissions: every rule names its field; the JSON mapping round-trips. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "spec/jobspec.h"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    cr_assert_not_null(j, "test JSON: %s", e.text);
    return j;
}

/* Parses text, expects failure, returns the first error's field (static copy). */
static const char *first_bad_field(const char *text, char *detail, size_t len)
{
    static char field[128];
    json_t *body = load(text);
    struct jobspec s;
    json_t *errors = NULL;
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, len), -1, "accepted: %s", text);
    cr_assert(json_array_size(errors) >= 1);
    snprintf(field, sizeof(field), "%s",
             json_string_value(json_object_get(json_array_get(errors, 0), "field")));
    cr_assert_null(s.name, "nothing left to free on failure");
    json_decref(errors);
    json_decref(body);
    return field;
}

static void expect_field(const char *text, const char *field)
{
    char detail[512];
    cr_expect_str_eq(first_bad_field(text, detail, sizeof(detail)), field, "%s", text);
    cr_expect_eq(strncmp(detail, field, strlen(field)), 0, "detail names %s: %s", field, detail);
}

Test(jobspec, minimal_job_gets_defaults)
{
    json_t *body = load("{\"name\":\"r\",\"command\":[\"train\"],\"gpus\":4}");
    struct jobspec s;
    json_t *errors = NULL;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0);
    cr_assert_null(errors);
    cr_assert_str_eq(s.name, "r");
    cr_assert_eq(s.gpus, 4);
    cr_assert_eq(s.min_gpus, 4);
    cr_assert_eq(s.max_gpus, 4);
    cr_assert_eq(s.elastic, false);
    cr_assert_eq(s.priority, 0);
    cr_assert_eq(s.batch_per_gpu, JOBSPEC_DEFAULT_BATCH);
    cr_assert(json_is_object(s.env) && json_object_size(s.env) == 0);
    cr_assert_null(s.model);
    jobspec_clear(&s);
    json_decref(body);
}

Test(jobspec, full_job_round_trips_through_json)
{
    const char *text = "{\"name\":\"resnet-110 ✓\",\"command\":[\"python\",\"t.py\",\"--lr\","
                       "\"0.1\"],\"gpus\":4,\"min_gpus\":1,\"max_gpus\":16,\"elastic\":true,"
                       "\"priority\":-5,\"batch_per_gpu\":64,\"env\":{\"A_1\":\"x\"},"
                       "\"model\":{\"bytes\":6800000,\"dataset\":50000}}";
    json_t *body = load(text);
    struct jobspec s, again;
    json_t *errors;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    json_t *out = jobspec_to_json(&s);
    cr_assert(json_equal(out, body), "to_json gives back what was accepted");
    cr_assert_eq(jobspec_parse(out, &again, &errors, detail, sizeof(detail)), 0);
    cr_assert_eq(again.max_gpus, 16);
    cr_assert_eq(again.elastic, true);
    jobspec_clear(&again);
    jobspec_clear(&s);
    json_decref(out);
    json_decref(body);
}

Test(jobspec, each_rule_names_its_field)
{
    expect_field("{\"command\":[\"x\"],\"gpus\":1}", "name");
    expect_field("{\"name\":\"\",\"command\":[\"x\"],\"gpus\":1}", "name");
    expect_field("{\"name\":7,\"command\":[\"x\"],\"gpus\":1}", "name");
    expect_field("{\"name\":\"a\\u0001\",\"command\":[\"x\"],\"gpus\":1}", "name");
    expect_field("{\"name\":\"a\",\"gpus\":1}", "command");
    expect_field("{\"name\":\"a\",\"command\":[],\"gpus\":1}", "command");
    expect_field("{\"name\":\"a\",\"command\":\"ls\",\"gpus\":1}", "command");
    expect_field("{\"name\":\"a\",\"command\":[\"x\",3],\"gpus\":1}", "command[1]");
    expect_field("{\"name\":\"a\",\"command\":[\"\"],\"gpus\":1}", "command[0]");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"]}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":0}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":-3}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1025}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":2.5}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":\"2\"}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":9223372036854775807}", "gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":4,\"min_gpus\":5}", "min_gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":4,\"max_gpus\":3}", "max_gpus");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"elastic\":1}", "elastic");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"priority\":1001}", "priority");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"batch_per_gpu\":0}",
                 "batch_per_gpu");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"env\":[]}", "env");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"env\":{\"A\":1}}", "env.A");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"env\":{\"1A\":\"v\"}}",
                 "env.1A");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"model\":\"resnet\"}", "model");
    expect_field("{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"gpu\":2}", "gpu");
}

Test(jobspec, name_counts_characters_not_bytes)
{
    char text[1024], name[600] = "";
    for (int i = 0; i < 128; i++)
        strcat(name, "é"); /* 2 bytes each: 256 bytes, 128 characters */
    snprintf(text, sizeof(text), "{\"name\":\"%s\",\"command\":[\"x\"],\"gpus\":1}", name);
    json_t *body = load(text);
    struct jobspec s;
    json_t *errors;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    jobspec_clear(&s);
    json_decref(body);
    snprintf(text, sizeof(text), "{\"name\":\"%sx\",\"command\":[\"x\"],\"gpus\":1}", name);
    expect_field(text, "name");
}

Test(jobspec, model_nesting_is_bounded)
{
    char text[1024], model[512] = "";
    for (int i = 0; i < 32; i++)
        strcat(model, "{\"a\":");
    strcat(model, "1");
    for (int i = 0; i < 32; i++)
        strcat(model, "}");
    snprintf(text, sizeof(text), "{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"model\":%s}",
             model);
    json_t *body = load(text);
    struct jobspec s;
    json_t *errors;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    jobspec_clear(&s);
    json_decref(body);
    snprintf(text, sizeof(text),
             "{\"name\":\"a\",\"command\":[\"x\"],\"gpus\":1,\"model\":{\"b\":[%s]}}", model);
    expect_field(text, "model");
}

Test(jobspec, all_errors_are_listed)
{
    json_t *body = load("{\"name\":\"\",\"command\":[],\"gpus\":-3,\"zzz\":1}");
    struct jobspec s;
    json_t *errors;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), -1);
    cr_assert_eq(json_array_size(errors), 4);
    cr_assert_str_eq(detail, "name: expected 1..128 characters, got 0");
    json_decref(errors);
    json_decref(body);
}

#define JOB "\"name\":\"b\",\"command\":[\"t\"],\"gpus\":2"

Test(jobspec, batch_model_round_trips_and_reads_into_the_core)
{
    const char *text = "{" JOB ",\"batch\":64,\"adaptive_batch\":{\"min\":64,\"max\":1024},"
                       "\"max_local_batch\":128}";
    json_t *body = load(text);
    struct jobspec s;
    json_t *errors;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    cr_assert_eq(s.batch, 64);
    cr_assert_eq(s.max_batch, 1024);
    cr_assert_eq(s.max_local_batch, 128);
    json_t *out = jobspec_to_json(&s);
    cr_assert_eq(json_integer_value(json_object_get(out, "batch")), 64);
    cr_assert(json_equal(json_object_get(out, "adaptive_batch"),
                         json_object_get(body, "adaptive_batch")));
    json_t *decl = jobspec_batch_json(&s);
    struct batch_spec b;
    cr_assert_eq(jobspec_batch_read(decl, 2.0, 30.0, 256, &b), 1);
    cr_assert_float_eq(b.init_batch, 64, 1e-9);
    cr_assert_float_eq(b.batch, 256, 1e-9);
    cr_assert_float_eq(b.max_batch, 1024, 1e-9);
    cr_assert_float_eq(b.max_local, 128, 1e-9);
    cr_assert_eq(b.adaptive, 1);
    cr_assert_float_eq(b.grad_sqr, 2.0, 1e-12);
    cr_assert_float_eq(b.grad_var, 30.0, 1e-12);
    cr_assert_eq(jobspec_batch_read(decl, NAN, 1, 0, &b), 1);
    cr_assert_float_eq(b.batch, 64, 1e-9, "no current batch: the initial one");
    cr_assert(b.grad_sqr == 0 && b.grad_var == 0, "nonsense statistics are none");
    cr_assert_eq(jobspec_batch_read(NULL, 1, 1, 0, &b), 0);
    cr_assert_eq(b.init_batch, 0);
    json_decref(decl);
    json_decref(out);
    jobspec_clear(&s);
    json_decref(body);
}

Test(jobspec, fixed_batch_has_no_range)
{
    json_t *body = load("{" JOB ",\"batch\":32}");
    struct jobspec s;
    json_t *errors;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    json_t *out = jobspec_to_json(&s);
    json_t *want = json_pack("{s:s, s:[s], s:i, s:i, s:i, s:b, s:i, s:i, s:{}, s:i}", "name", "b",
                             "command", "t", "gpus", 2, "min_gpus", 2, "max_gpus", 2, "elastic", 0,
                             "priority", 0, "batch_per_gpu", 128, "env", "batch", 32);
    cr_assert(json_equal(out, want), "to_json gives back what was accepted, no range");
    json_decref(want);
    struct batch_spec b;
    json_t *decl = jobspec_batch_json(&s);
    cr_assert_eq(jobspec_batch_read(decl, 0, 0, 0, &b), 1);
    cr_assert_eq(b.adaptive, 0);
    cr_assert_float_eq(b.max_batch, 32, 1e-9);
    json_decref(decl);
    json_decref(out);
    jobspec_clear(&s);
    json_decref(body);
}

Test(jobspec, batch_rules_name_their_field)
{
    expect_field("{" JOB ",\"batch\":0}", "batch");
    expect_field("{" JOB ",\"batch\":1}", "batch"); /* fewer examples than GPUs */
    expect_field("{" JOB ",\"batch\":16777217}", "batch");
    expect_field("{" JOB ",\"batch\":\"64\"}", "batch");
    expect_field("{" JOB ",\"adaptive_batch\":{\"max\":128}}", "adaptive_batch");
    expect_field("{" JOB ",\"max_local_batch\":8}", "max_local_batch");
    expect_field("{" JOB ",\"batch\":64,\"adaptive_batch\":128}", "adaptive_batch");
    expect_field("{" JOB ",\"batch\":64,\"adaptive_batch\":{}}", "adaptive_batch.max");
    expect_field("{" JOB ",\"batch\":64,\"adaptive_batch\":{\"max\":32}}", "adaptive_batch.max");
    expect_field("{" JOB ",\"batch\":64,\"adaptive_batch\":{\"max\":128,\"min\":32}}",
                 "adaptive_batch.min");
    expect_field("{" JOB ",\"batch\":64,\"adaptive_batch\":{\"max\":128,\"step\":2}}",
                 "adaptive_batch");
    expect_field("{" JOB ",\"batch\":64,\"max_local_batch\":0}", "max_local_batch");
}

/* lr_scaling: how the job's learning rate follows its batch; stored in its batch declaration
 * only when it is not the default, and read back from it. */
Test(jobspec, lr_scaling_is_declared_with_the_batch)
{
    expect_field("{" JOB ",\"lr_scaling\":\"linear\"}", "lr_scaling"); /* needs batch */
    expect_field("{" JOB ",\"batch\":64,\"lr_scaling\":\"cubic\"}", "lr_scaling");
    expect_field("{" JOB ",\"batch\":64,\"lr_scaling\":2}", "lr_scaling");
    expect_field("{" JOB ",\"batch\":64,\"lr_scaling\":null}", "lr_scaling");
    static const char *const names[] = {"sqrt", "linear", "none"};
    for (int k = 0; k < 3; k++) {
        char text[256];
        snprintf(text, sizeof(text), "{" JOB ",\"batch\":64,\"lr_scaling\":\"%s\"}", names[k]);
        json_t *body = load(text);
        struct jobspec s;
        json_t *errors;
        char detail[256];
        cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
        cr_expect_eq(s.lr_scaling, k);
        json_t *decl = jobspec_batch_json(&s), *out = jobspec_to_json(&s);
        cr_expect_eq(jobspec_batch_lr_scaling(decl), k, "%s read back", names[k]);
        cr_expect_eq(json_object_get(decl, "lr_scaling") != NULL, k != 0, "stored unless sqrt");
        cr_expect_eq(json_object_get(out, "lr_scaling") != NULL, k != 0);
        json_decref(decl);
        json_decref(out);
        jobspec_clear(&s);
        json_decref(body);
    }
    cr_expect_eq(jobspec_batch_lr_scaling(NULL), 0, "no declaration: sqrt");
}

/* null is not taken as a field's default ("gpus": null was accepted as 1): each such field is
 * named, but adaptive_batch, which the API documents as "absent or null: fixed", stays so. */
Test(jobspec, null_is_refused_by_name_unless_documented)
{
    static const char *const fields[] = {"gpus",    "min_gpus",   "max_gpus",      "elastic",
                                         "priority", "batch_per_gpu", "env",       "model",
                                         "total_steps", "epochs",  "stop_at_loss", "hold",
                                         "batch",   "max_local_batch", "plans",    "model_size",
                                         "deadline"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "{\"name\":\"r\",\"command\":[\"t\"],%s\"%s\":null}",
                 i == 0 ? "" : "\"gpus\":1,", fields[i]);
        char detail[512];
        const char *f = first_bad_field(text, detail, sizeof(detail));
        cr_expect_str_eq(f, fields[i], "%s", text);
        cr_expect(strstr(detail, "null") != NULL, "detail says why: %s", detail);
    }
    expect_field("{\"name\":null,\"command\":[\"t\"],\"gpus\":1}", "name");
    expect_field("{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"batch\":64,"
                 "\"adaptive_batch\":{\"max\":512,\"min\":null}}",
                 "adaptive_batch.min");

    json_t *body =
        load("{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"batch\":64,\"adaptive_batch\":null}");
    struct jobspec s;
    json_t *errors = NULL;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    cr_assert_eq(s.max_batch, 0, "documented null: a fixed batch");
    jobspec_clear(&s);
    json_decref(body);
}

/* "topology": {"max_switches": N, "max_wait_s": T} (issue 32, Slurm's --switches=N@T): its
 * rules name their field; it round-trips and reads back into the core's form. */
Test(jobspec, topology_bound_rules_and_round_trip)
{
#define TOPO(t) "{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":16,\"topology\":" t "}"
    expect_field(TOPO("3"), "topology");
    expect_field(TOPO("{}"), "topology.max_switches");
    expect_field(TOPO("{\"max_switches\":0}"), "topology.max_switches");
    expect_field(TOPO("{\"max_switches\":1.5}"), "topology.max_switches");
    expect_field(TOPO("{\"max_switches\":2000}"), "topology.max_switches");
    expect_field(TOPO("{\"max_switches\":1,\"max_wait_s\":-1}"), "topology.max_wait_s");
    expect_field(TOPO("{\"max_switches\":1,\"max_wait_s\":\"1m\"}"), "topology.max_wait_s");
    expect_field(TOPO("{\"max_switches\":1,\"nodes\":2}"), "topology");
    json_t *body = load(TOPO("{\"max_switches\":1}")), *errors = NULL;
    struct jobspec s;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    cr_assert_eq(s.max_switches, 1);
    cr_assert_float_eq(s.max_switches_wait_s, JOBSPEC_DEFAULT_SWITCH_WAIT_S, 1e-9, "default");
    json_t *t = jobspec_topology_json(s.max_switches, s.max_switches_wait_s);
    int n = 0;
    double w = 0;
    jobspec_topology_read(t, &n, &w);
    cr_assert_eq(n, 1);
    cr_assert_float_eq(w, 300.0, 1e-9);
    json_t *back = jobspec_to_json(&s);
    cr_assert(json_equal(json_object_get(back, "topology"), t), "round trip");
    json_decref(back);
    json_decref(t);
    jobspec_clear(&s);
    json_decref(body);
    jobspec_topology_read(NULL, &n, &w);
    cr_assert_eq(n, 0, "none stored: no bound");
#undef TOPO
}

/* "deadline" (issue 33 item 3): an RFC 3339 date-time, with its offset, into epoch seconds;
 * anything else names the field; it round-trips in UTC. */
Test(jobspec, deadline_is_rfc3339_and_round_trips)
{
#define DL(t) "{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"deadline\":" t "}"
    double at = 0;
    cr_assert_eq(jobspec_deadline_parse("2026-12-05T18:00:00Z", &at), 0);
    cr_assert_float_eq(at, 1796493600.0, 1e-6, "got %f", at);
    cr_assert_eq(jobspec_deadline_parse("2026-12-05t19:30:00+01:30", &at), 0);
    cr_assert_float_eq(at, 1796493600.0, 1e-6, "offset east");
    cr_assert_eq(jobspec_deadline_parse("2026-12-05 13:00:00.25-05:00", &at), 0);
    cr_assert_float_eq(at, 1796493600.25, 1e-6, "offset west, fraction");
    cr_assert_eq(jobspec_deadline_parse("2028-02-29T00:00:00Z", &at), 0, "a leap day");
    static const char *const bad[] = {"2026-12-05",           "2026-12-05T18:00Z",
                                      "2026-12-05T18:00:00",  "2027-02-29T00:00:00Z",
                                      "2026-13-01T00:00:00Z", "2026-12-05T24:00:00Z",
                                      "2026-12-05T18:00:60Z", "2026-12-05T18:00:00+2:00",
                                      "1969-12-31T23:59:59Z", "2026-12-05T18:00:00.Z",
                                      "2026-12-05T18:00:00Zx", "tomorrow"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(jobspec_deadline_parse(bad[i], &at), -1, "accepted %s", bad[i]);
    expect_field(DL("\"2026-12-05\""), "deadline");
    expect_field(DL("1796493600"), "deadline");
    expect_field(DL("\"next friday\""), "deadline");

    json_t *body = load(DL("\"2026-12-05T19:00:00+01:00\"")), *errors = NULL;
    struct jobspec s;
    char detail[256];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    cr_assert_float_eq(s.deadline, 1796493600.0, 1e-6);
    json_t *back = jobspec_to_json(&s);
    cr_assert_str_eq(json_string_value(json_object_get(back, "deadline")),
                     "2026-12-05T18:00:00.000000Z");
    char text[40];
    jobspec_deadline_text(1796493600.5, text, sizeof(text));
    cr_assert_str_eq(text, "2026-12-05T18:00:00.500000Z");
    json_decref(back);
    jobspec_clear(&s);
    json_decref(body);
    body = load("{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1}");
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0, "%s", detail);
    cr_assert_eq(s.deadline, 0, "none");
    back = jobspec_to_json(&s);
    cr_assert_null(json_object_get(back, "deadline"));
    json_decref(back);
    jobspec_clear(&s);
    json_decref(body);
#undef DL
}
