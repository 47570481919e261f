/* The cache of verified tokens: hits until the time to live ends, tokens apart, a bounded
 * table whose full sets give up their oldest entries. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "api/authcache.h"

/* A token of the right shape, told apart by n. */
static void token_of(unsigned n, char out[AUTH_TOKEN_LEN + 1])
{
    snprintf(out, AUTH_TOKEN_LEN + 1, "rm_%064x", n);
}

static struct auth_user user_of(long long id, enum auth_role role)
{
    struct auth_user u = {.id = id, .role = role};
    snprintf(u.name, sizeof(u.name), "user-%lld", id);
    return u;
}

Test(authcache, a_token_put_is_found_until_its_time_to_live_ends)
{
    struct authcache *c = authcache_create(10);
    char t[AUTH_TOKEN_LEN + 1];
    token_of(1, t);
    struct auth_user who, alice = user_of(7, AUTH_WORKER);
    cr_assert_eq(authcache_get(c, t, 100, &who), 0, "nothing before it is put");
    authcache_put(c, t, &alice, 100);
    cr_assert_eq(authcache_get(c, t, 109.9, &who), 1);
    cr_assert_eq(who.id, 7);
    cr_assert_eq(who.role, AUTH_WORKER);
    cr_assert_str_eq(who.name, "user-7");
    cr_assert_eq(authcache_get(c, t, 110, &who), 0, "expired: the database is asked again");
    authcache_put(c, t, &alice, 110);
    cr_assert_eq(authcache_get(c, t, 115, &who), 1, "put again: kept again");
    authcache_destroy(c);
}

Test(authcache, tokens_differing_in_one_character_are_apart)
{
    struct authcache *c = authcache_create(10);
    char a[AUTH_TOKEN_LEN + 1], b[AUTH_TOKEN_LEN + 1];
    token_of(0x10, a);
    token_of(0x11, b); /* the last hex digit differs */
    struct auth_user who, ua = user_of(1, AUTH_ADMIN);
    authcache_put(c, a, &ua, 0);
    cr_assert_eq(authcache_get(c, b, 1, &who), 0, "another token is not the cached one's");
    cr_assert_eq(authcache_get(c, "rm_short", 1, &who), 0, "a token of another length");
    cr_assert_eq(authcache_get(c, a, 1, &who), 1);
    cr_assert_eq(who.role, AUTH_ADMIN);
    authcache_destroy(c);
}

Test(authcache, a_full_table_keeps_the_newest_and_stays_correct)
{
    struct authcache *c = authcache_create(1000);
    char t[AUTH_TOKEN_LEN + 1];
    struct auth_user who;
    const unsigned n = 4 * AUTHCACHE_SLOTS;
    for (unsigned i = 0; i < n; i++) {
        token_of(i, t);
        struct auth_user u = user_of(i, AUTH_USER);
        authcache_put(c, t, &u, (double)i / n);
    }
    unsigned hits = 0, recent = 0;
    for (unsigned i = 0; i < n; i++) {
        token_of(i, t);
        if (authcache_get(c, t, 1, &who)) {
            cr_assert_eq(who.id, i, "a hit is the token's own user");
            hits++;
            recent += i >= n - AUTHCACHE_SLOTS;
        }
    }
    cr_assert_leq(hits, AUTHCACHE_SLOTS, "bounded: %u hits", hits);
    cr_assert_geq(hits, AUTHCACHE_SLOTS / 2, "most slots used: %u hits", hits);
    cr_assert_geq(recent * 10, hits * 7, "mostly the newest kept: %u of %u", recent, hits);
    authcache_destroy(c);
}

Test(authcache, no_cache_is_a_miss)
{
    char t[AUTH_TOKEN_LEN + 1];
    token_of(3, t);
    struct auth_user who, u = user_of(3, AUTH_USER);
    authcache_put(NULL, t, &u, 0);
    cr_assert_eq(authcache_get(NULL, t, 0, &who), 0);
}
