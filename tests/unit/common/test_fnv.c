/* FNV-1a: the published values of the 64-bit hash, and seeded starting points that differ from
 * one table to the next and from the plain one. */
#include <criterion/criterion.h>

#include "fnv.h"

Test(fnv, the_published_values)
{
    cr_assert_eq(fnv1a_str(""), UINT64_C(0xcbf29ce484222325));
    cr_assert_eq(fnv1a_str("a"), UINT64_C(0xaf63dc4c8601ec8c));
    cr_assert_eq(fnv1a_str("foobar"), UINT64_C(0x85944171f73967e8));
    cr_assert_eq(fnv1a(fnv1a(FNV1A_INIT, "foo", 3), "bar", 3), fnv1a_str("foobar"),
                 "folded in parts as in one");
}

Test(fnv, seeded_starting_points_are_tables_own)
{
    static int x, y; /* their addresses: the salts */
    uint64_t a = fnv1a_seeded_init(&x), b = fnv1a_seeded_init(&y);
    cr_assert_neq(a, b, "two tables: two starting points");
    cr_assert_neq(a, FNV1A_INIT);
    cr_assert_neq(fnv1a(a, "key", 3), fnv1a(b, "key", 3), "a key falls apart in each");
}
