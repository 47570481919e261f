/* The table of failed authentications: windows, blocks, addresses apart, bounded size. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "api/authlimit.h"

Test(authlimit, blocks_after_n_failures_within_the_window)
{
    struct authlimit *a = authlimit_create(3, 60, 30);
    cr_assert_eq(authlimit_fail(a, "10.0.0.1", 100), 0);
    cr_assert_eq(authlimit_fail(a, "10.0.0.1", 101), 0);
    cr_assert_eq(authlimit_check(a, "10.0.0.1", 101), 0);
    cr_assert_eq(authlimit_fail(a, "10.0.0.1", 102), 30);
    cr_assert_eq(authlimit_check(a, "10.0.0.1", 102.5), 30, "rounded up");
    cr_assert_eq(authlimit_check(a, "10.0.0.2", 102.5), 0, "other addresses are free");
    cr_assert_eq(authlimit_check(a, "10.0.0.1", 132), 0, "the block ends");
    authlimit_destroy(a);
}

Test(authlimit, failures_outside_the_window_are_forgotten)
{
    struct authlimit *a = authlimit_create(3, 60, 30);
    authlimit_fail(a, "10.0.0.1", 0);
    authlimit_fail(a, "10.0.0.1", 1);
    cr_assert_eq(authlimit_fail(a, "10.0.0.1", 61), 0, "a new window");
    cr_assert_eq(authlimit_fail(a, "10.0.0.1", 62), 0);
    cr_assert_eq(authlimit_fail(a, "10.0.0.1", 63), 30);
    authlimit_destroy(a);
}

Test(authlimit, ipv6_counts_by_its_64)
{
    struct authlimit *a = authlimit_create(2, 60, 30);
    authlimit_fail(a, "2001:db8:1:2::1", 0);
    cr_assert_eq(authlimit_fail(a, "2001:db8:1:2:ffff::9", 1), 30);
    cr_assert_eq(authlimit_check(a, "2001:db8:1:2::77", 2), 29);
    cr_assert_eq(authlimit_check(a, "2001:db8:1:3::1", 2), 0);
    authlimit_destroy(a);
}

Test(authlimit, a_flood_of_addresses_keeps_the_table_bounded_and_blocks_kept)
{
    struct authlimit *a = authlimit_create(1, 60, 600);
    cr_assert_eq(authlimit_fail(a, "192.0.2.1", 0), 600);
    char addr[32];
    /* many more addresses than slots, each failing once (and so blocked) */
    for (int i = 0; i < 4 * AUTHLIMIT_SLOTS; i++) {
        snprintf(addr, sizeof(addr), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        authlimit_fail(a, addr, 1 + i * 1e-4);
    }
    /* the oldest block in a full set gives way first: the table stays bounded */
    int kept = 0;
    for (int i = 4 * AUTHLIMIT_SLOTS - 1000; i < 4 * AUTHLIMIT_SLOTS; i++) {
        snprintf(addr, sizeof(addr), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        kept += authlimit_check(a, addr, 2) > 0;
    }
    cr_assert_geq(kept, 900, "recent blocks are kept: %d of 1000", kept);
    authlimit_destroy(a);
}
