/* afterspec: ringctl submit --after's dependencies (afterspec.h). */
#include <criterion/criterion.h>

#include "afterspec.h"

Test(afterspec, jobs_arrays_and_whens)
{
    struct afterspec a[8];
    size_t n = 0;
    char err[128];
    cr_assert_eq(afterspec_parse("12,13:any", a, 8, &n, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(afterspec_parse("array:41:notok", a, 8, &n, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(n, 3, "a repeated flag appends");
    cr_assert_eq(a[0].id, 12);
    cr_assert_str_eq(a[0].when, "ok");
    cr_assert_not(a[0].array);
    cr_assert_str_eq(a[1].when, "any");
    cr_assert_eq(a[2].id, 41);
    cr_assert(a[2].array);
    cr_assert_str_eq(a[2].when, "notok");
}

Test(afterspec, malformed_items_are_refused)
{
    static const char *const bad[] = {
        "",         "12,", ",12",    "0",   "-3",      "12:",       "12:OK",
        "12:never", "x",   "array:", "12x", "array:0", "12:ok:any", "99999999999999999999"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        struct afterspec a[4];
        size_t n = 0;
        char err[128] = "";
        cr_expect_eq(afterspec_parse(bad[k], a, 4, &n, err, sizeof(err)), -1, "'%s'", bad[k]);
        cr_expect_neq(err[0], '\0', "'%s' says why", bad[k]);
    }
}

Test(afterspec, at_most_cap)
{
    struct afterspec a[2];
    size_t n = 0;
    char err[128];
    cr_assert_eq(afterspec_parse("1,2,3", a, 2, &n, err, sizeof(err)), -1);
    cr_assert_eq(n, 2);
}
