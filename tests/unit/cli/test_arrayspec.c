/* arrayspec: the indexes of ringctl submit --array, Slurm's forms. */
#include <criterion/criterion.h>
#include <string.h>

#include "arrayspec.h"

static size_t parse(const char *s, long *idx, size_t cap)
{
    size_t n;
    char err[256];
    cr_assert_eq(arrayspec_parse(s, idx, cap, &n, err, sizeof(err)), 0, "%s: %s", s, err);
    return n;
}

static void refused(const char *s, size_t cap, const char *why)
{
    long idx[ARRAYSPEC_MAX_COUNT];
    size_t n;
    char err[256] = "";
    cr_assert_eq(arrayspec_parse(s, idx, cap, &n, err, sizeof(err)), -1, "%s", s);
    cr_assert(strstr(err, why), "%s: %s", s, err);
}

Test(arrayspec, ranges_lists_and_steps)
{
    long idx[ARRAYSPEC_MAX_COUNT];
    cr_assert_eq(parse("0-99", idx, 1000), 100);
    cr_assert_eq(idx[0], 0);
    cr_assert_eq(idx[99], 99);
    cr_assert_eq(parse("1,3,5-7", idx, 1000), 5);
    long want[] = {1, 3, 5, 6, 7};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(idx[i], want[i]);
    cr_assert_eq(parse("0-15:4", idx, 1000), 4);
    cr_assert_eq(idx[3], 12);
    cr_assert_eq(parse("7", idx, 1000), 1);
    cr_assert_eq(idx[0], 7);
    cr_assert_eq(parse("0-999", idx, 1000), 1000, "1,000 elements fit one batch");
}

Test(arrayspec, bad_forms_say_why)
{
    refused("9-2", 1000, "9-2");
    refused("", 1000, "expected");
    refused("1,,2", 1000, "expected");
    refused("-3", 1000, "expected");
    refused("1-5:0", 1000, "expected");
    refused("a-b", 1000, "expected");
    refused("0-1000", 1000, "more than 1000");
    refused("1,2,1", 1000, "index 1 given twice");
    refused("0-9%2", 1000, "throttle");
    refused("2000000", 1000, "expected");
}
