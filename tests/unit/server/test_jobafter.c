/* A submission's "after" (spec/jobafter.h through jobspec_parse): each broken rule names its
 * field, the stored form fills in "when", and the mapping keeps it. */
#include <criterion/criterion.h>
#include <string.h>

#include "spec/jobspec.h"

#define JOB "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":1,\"after\":"

/* jobspec_parse of JOB after }: returns 0 or -1, the first error's field into field. */
static int parse(const char *after, struct jobspec *s, char *field, size_t len)
{
    char text[1024];
    snprintf(text, sizeof(text), JOB "%s}", after);
    json_t *body = json_loads(text, 0, NULL), *errors = NULL;
    cr_assert_not_null(body, "%s", text);
    char detail[256];
    int rc = jobspec_parse(body, s, &errors, detail, sizeof(detail));
    const char *f = json_string_value(json_object_get(json_array_get(errors, 0), "field"));
    snprintf(field, len, "%s", f ? f : "");
    json_decref(errors);
    json_decref(body);
    return rc;
}

static void refused(const char *after, const char *field)
{
    struct jobspec s;
    char got[64];
    cr_expect_eq(parse(after, &s, got, sizeof(got)), -1, "accepted: %s", after);
    cr_expect_str_eq(got, field, "%s", after);
}

Test(jobafter, when_defaults_to_ok_and_the_mapping_keeps_it)
{
    struct jobspec s;
    char field[64];
    cr_assert_eq(parse("[{\"job\":12},{\"array\":7,\"when\":\"notok\"}]", &s, field, 64), 0);
    char *text = json_dumps(s.after, JSON_COMPACT);
    cr_assert_str_eq(text, "[{\"job\":12,\"when\":\"ok\"},{\"array\":7,\"when\":\"notok\"}]");
    free(text);
    json_t *o = jobspec_to_json(&s);
    cr_assert(json_equal(json_object_get(o, "after"), s.after));
    json_decref(o);
    jobspec_clear(&s);
}

Test(jobafter, no_after_is_none)
{
    char text[] = "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":1}";
    json_t *body = json_loads(text, 0, NULL), *errors = NULL;
    struct jobspec s;
    char detail[64];
    cr_assert_eq(jobspec_parse(body, &s, &errors, detail, sizeof(detail)), 0);
    cr_assert_null(s.after);
    jobspec_clear(&s);
    json_decref(body);
}

Test(jobafter, broken_dependencies_name_their_field)
{
    refused("\"12\"", "after");
    refused("[]", "after");
    refused("null", "after");
    refused("[{\"job\":1},{}]", "after[1]");
    refused("[{\"job\":1,\"array\":2}]", "after[0]");
    refused("[{\"job\":0}]", "after[0]");
    refused("[{\"array\":9007199254740993}]", "after[0]");
    refused("[{\"job\":1.5}]", "after[0]");
    refused("[{\"job\":1,\"when\":\"OK\"}]", "after[0]");
    refused("[{\"job\":1,\"when\":1}]", "after[0]");
    refused("[{\"job\":1,\"after\":1}]", "after[0]");
    refused("[true]", "after[0]");
}

Test(jobafter, at_most_64)
{
    char after[2048] = "[";
    for (int i = 1; i <= 65; i++)
        snprintf(after + strlen(after), sizeof(after) - strlen(after), "%s{\"job\":%d}",
                 i > 1 ? "," : "", i);
    strcat(after, "]");
    refused(after, "after");
}
