/* jsontext writes what jansson's compact dump writes: strings, reals, integers, and JSON
 * documents (as PostgreSQL writes jsonb, and anything else) compared byte for byte with
 * jansson itself, at the two precisions the API uses (15 for lists, jansson's 17). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/jsontext.h"

static const int precisions[] = {0, 15};

/* jansson's text of v (stolen), "null" when v is NULL. */
static char *jansson_text(json_t *v, int precision)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(precision))
                : strdup("null");
    json_decref(v);
    return s;
}

static void check_doc(const char *doc)
{
    for (size_t i = 0; i < sizeof(precisions) / sizeof(precisions[0]); i++) {
        int p = precisions[i];
        char *want = jansson_text(json_loads(doc, 0, NULL), p);
        struct jsontext t;
        jsontext_init(&t, 4);
        jsontext_lit(&t, "x");
        jsontext_doc(&t, doc, p);
        size_t len;
        char *got = jsontext_take(&t, &len);
        cr_assert_not_null(got);
        cr_assert_eq(len, strlen(got));
        cr_assert_str_eq(got + 1, want, "doc %s at precision %d", doc, p);
        free(got);
        free(want);
    }
}

Test(jsontext, documents_as_postgresql_writes_jsonb)
{
    const char *docs[] = {
        "[\"true\"]",
        "[\"python3\", \"train.py\", \"--lr\", \"0.1\"]",
        "{}",
        "[]",
        "{\"A\": \"1\", \"PATH\": \"/usr/bin:/bin\", \"RINGJOB_ARRAY_INDEX\": \"7\"}",
        "{\"kind\": \"resnet\", \"params\": {\"a\": 0.5, \"b\": -1.25e-7, \"c\": 1.0}}",
        "{\"batch\": 64, \"max_local_batch\": null, \"adaptive_batch\": {\"max\": 512, \"min\": "
        "64}}",
        "{\"plan\": \"auto\", \"plans\": [\"dp\", \"tp\"], \"max_pp\": 1, \"max_tp\": 8,"
        " \"model_size\": 7.0, \"activation_gb\": 0.3333333333333333}",
        "[0, -0, 1, -1, 9223372036854775807, -9223372036854775808, 1e5, 1E+5, 2.5e-300,"
        " 0.1, 100.0, 1.50, 123456789.123456789, 3.141592653589793]",
        "[\"quote \\\" back \\\\ slash \\/ tab \\t nl \\n cr \\r ff \\f bs \\b\"]",
        "[true, false, null, [[[]]], {\"a\": {\"b\": {\"c\": []}}}]",
        "  [ 1 ,2\t,\n3 ]  ",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
        check_doc(docs[i]);
}

Test(jsontext, documents_the_fast_path_leaves_to_jansson)
{
    const char *docs[] = {
        "[\"\\u0001 control\", \"\\u001f\"]",   /* as PostgreSQL escapes them: jansson's case */
        "[\"\\u00e9 \\u20ac \\ud83d\\ude00\"]", /* decoded by jansson */
        "[\"caf\xc3\xa9\", \"\xe2\x82\xac\"]",  /* UTF-8, checked by jansson */
        "[\"bad \xff utf-8\"]",
        "[99999999999999999999]",
        "[1e400]",
        "[-1e400]",
        "[01]",
        "[1.]",
        "[.5]",
        "[-]",
        "{\"a\": 1, \"a\": 2}",
        "{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, \"g\": 7, \"h\": 8, \"i\": 9,"
        " \"j\": 10, \"k\": 11, \"l\": 12, \"m\": 13, \"n\": 14, \"o\": 15, \"p\": 16, \"q\": 17,"
        " \"a\": 18}",
        "\"a scalar\"",
        "5",
        "null",
        "",
        "[1, 2",
        "{\"a\" 1}",
        "{\"a\": 1,}",
        "[1] [2]",
        "[\"raw\ttab\"]",
        "[tru]",
        "[nul, 1]",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
        check_doc(docs[i]);
}

Test(jsontext, deep_documents)
{
    char doc[4200];
    for (int depth = 60; depth <= 2100; depth += 520) {
        memset(doc, '[', (size_t)depth);
        memset(doc + depth, ']', (size_t)depth);
        doc[2 * depth] = '\0';
        check_doc(doc);
    }
}

Test(jsontext, strings_as_jansson_escapes_them)
{
    const char *strs[] = {"",
                          "plain",
                          "a\"b\\c/d",
                          "\b\f\n\r\t",
                          "\x01\x1f",
                          "\x7f",
                          "caf\xc3\xa9",
                          "\xf0\x9f\x98\x80 emoji",
                          "2026-11-27T16:22:37.123456Z"};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        char *want = jansson_text(json_string(strs[i]), 0);
        struct jsontext t;
        jsontext_init(&t, 1);
        jsontext_str(&t, strs[i]);
        size_t len;
        char *got = jsontext_take(&t, &len);
        cr_assert_str_eq(got, want);
        free(got);
        free(want);
    }
}

Test(jsontext, reals_and_integers_as_jansson_writes_them)
{
    double fixed[] = {0,       -0.0,   1,
                      -1,      0.1,    1.0 / 3,
                      2.0 / 3, 1e5,    1e15,
                      1e16,    1e17,   1e100,
                      1e-5,    1e-7,   1e-100,
                      123.456, 5e-324, 1.7976931348623157e308,
                      33.3,    99.9,   12345678901234567.0};
    unsigned seed = 7;
    for (int i = 0; i < 2000; i++) {
        double v = i < (int)(sizeof(fixed) / sizeof(fixed[0]))
                       ? fixed[i]
                       : (rand_r(&seed) - RAND_MAX / 2.0) * pow(10, rand_r(&seed) % 40 - 20);
        for (size_t k = 0; k < sizeof(precisions) / sizeof(precisions[0]); k++) {
            char *want = jansson_text(json_real(v), precisions[k]);
            struct jsontext t;
            jsontext_init(&t, 8);
            jsontext_real(&t, v, precisions[k]);
            size_t len;
            char *got = jsontext_take(&t, &len);
            cr_assert_str_eq(got, want, "%.17g at precision %d", v, precisions[k]);
            free(got);
            free(want);
        }
    }
    long long ints[] = {0, 1, -1, 42, 9223372036854775807LL, -9223372036854775807LL - 1};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        char *want = jansson_text(json_integer(ints[i]), 0);
        struct jsontext t;
        jsontext_init(&t, 8);
        jsontext_int(&t, ints[i]);
        size_t len;
        char *got = jsontext_take(&t, &len);
        cr_assert_str_eq(got, want);
        free(got);
        free(want);
    }
}

Test(jsontext, grows_and_takes)
{
    struct jsontext t;
    jsontext_init(&t, 1);
    for (int i = 0; i < 10000; i++)
        jsontext_lit(&t, "0123456789");
    size_t len;
    char *got = jsontext_take(&t, &len);
    cr_assert_eq(len, 100000);
    cr_assert_eq(strlen(got), 100000);
    free(got);
    cr_assert_null(jsontext_take(&t, &len), "taken: empty and failed");
    jsontext_free(&t);
}
