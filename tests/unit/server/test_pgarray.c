/* pgarray writes PostgreSQL array literals: each element quoted, its " and \ escaped, NULL
 * unquoted, and everything else (braces, commas, spaces, the word NULL, UTF-8, an empty
 * text) as it is; within the room pgarray_room() counts. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "store/pgarray.h"

/* The literal of v[0..n), written into exactly the room counted for it (and a guard byte
 * after, that must stay). New; *room gets that room. */
static char *literal(const char *const *v, int n, size_t *room)
{
    *room = PGARRAY_ROOM;
    for (int k = 0; k < n; k++)
        *room += pgarray_room(v[k]);
    char *out = malloc(*room + 1);
    cr_assert_not_null(out);
    out[*room] = '#';
    struct pgarray a;
    pgarray_start(&a, out);
    for (int k = 0; k < n; k++)
        pgarray_add(&a, v[k]);
    char *end = pgarray_end(&a);
    cr_assert_eq(out[*room], '#', "wrote past its room");
    cr_assert_eq((size_t)(end - out), strlen(out) + 1, "the end is after the NUL");
    return out;
}

static void check(const char *const *v, int n, const char *want)
{
    size_t room;
    char *got = literal(v, n, &room);
    cr_expect_str_eq(got, want);
    /* the room is exact but for the last element's comma */
    cr_expect_eq(room, strlen(want) + 1 + (n > 0), "room %zu for %zu bytes", room, strlen(want));
    free(got);
}

Test(pgarray, an_empty_array)
{
    check(NULL, 0, "{}");
}

Test(pgarray, a_null_is_unquoted_and_the_word_null_quoted)
{
    const char *v[] = {NULL, "NULL", "null", NULL};
    check(v, 4, "{NULL,\"NULL\",\"null\",NULL}");
}

Test(pgarray, an_empty_text_is_two_quotes)
{
    const char *v[] = {"", NULL, ""};
    check(v, 3, "{\"\",NULL,\"\"}");
}

Test(pgarray, quotes_and_backslashes_are_escaped)
{
    const char *v[] = {"a\"b", "c\\d", "\\", "\"", "\\\"\\\"", "end\\"};
    check(v, 6, "{\"a\\\"b\",\"c\\\\d\",\"\\\\\",\"\\\"\",\"\\\\\\\"\\\\\\\"\",\"end\\\\\"}");
}

Test(pgarray, braces_commas_and_spaces_stay_inside_the_quotes)
{
    const char *v[] = {"{1,2}", " lead", "trail ", "a, b", "}{", "\t\n"};
    check(v, 6, "{\"{1,2}\",\" lead\",\"trail \",\"a, b\",\"}{\",\"\t\n\"}");
}

Test(pgarray, utf8_is_copied_byte_for_byte)
{
    const char *v[] = {"h\xc3\xa9llo", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x9a\x80"};
    check(v, 3, "{\"h\xc3\xa9llo\",\"\xe6\x97\xa5\xe6\x9c\xac\",\"\xf0\x9f\x9a\x80\"}");
}

Test(pgarray, json_texts_keep_their_own_escapes_under_the_arrays)
{
    /* a jsonb element: its JSON escapes (\" and \\) are escaped once more */
    const char *v[] = {"[\"a\\\"b\",\"c\\\\d\"]", "{\"k\":null}"};
    check(v, 2, "{\"[\\\"a\\\\\\\"b\\\",\\\"c\\\\\\\\d\\\"]\",\"{\\\"k\\\":null}\"}");
}

Test(pgarray, numbers_and_booleans_are_quoted_too)
{
    const char *v[] = {"42", "-1", "0.10000000000000001", "true", "false"};
    check(v, 5, "{\"42\",\"-1\",\"0.10000000000000001\",\"true\",\"false\"}");
}

Test(pgarray, literals_written_one_after_the_other)
{
    const char *a[] = {"x"}, *b[] = {NULL, "y\""};
    size_t room = 2 * PGARRAY_ROOM + pgarray_room(a[0]) + pgarray_room(b[0]) + pgarray_room(b[1]);
    char *out = malloc(room);
    cr_assert_not_null(out);
    struct pgarray w;
    pgarray_start(&w, out);
    pgarray_add(&w, a[0]);
    char *second = pgarray_end(&w);
    pgarray_start(&w, second);
    pgarray_add(&w, b[0]);
    pgarray_add(&w, b[1]);
    char *end = pgarray_end(&w);
    cr_expect_str_eq(out, "{\"x\"}");
    cr_expect_str_eq(second, "{NULL,\"y\\\"\"}");
    cr_expect_leq((size_t)(end - out), room);
    free(out);
}
