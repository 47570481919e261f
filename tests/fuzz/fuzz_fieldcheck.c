/* Fuzz target: the validators' error collector (server/spec/fieldcheck.c). Validators pass it
 * field names cut from the client's JSON keys ("env.%.256s", "%.64s"), so a name may be
 * any bytes, a multi-byte character cut in two included. Input: NUL-separated pairs
 * "field\0message\0...". Every call must add exactly one {field, detail} entry and the
 * first must fill detail: a lost entry is a rule broken without a 400. */
#include <jansson.h>
#include <string.h>

#include "fieldcheck.h"
#include "fuzz.h"

/* The next NUL-terminated piece of data at *pos (a copy; free it), or NULL at the end. */
static char *next_piece(const uint8_t *data, size_t size, size_t *pos)
{
    if (*pos >= size)
        return NULL;
    const uint8_t *start = data + *pos, *nul = memchr(start, '\0', size - *pos);
    size_t n = nul ? (size_t)(nul - start) : size - *pos;
    char *s = malloc(n + 1);
    FUZZ_CHECK(s, "out of memory");
    memcpy(s, start, n);
    s[n] = '\0';
    *pos += n + 1;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char detail[128] = "";
    struct fieldcheck c = {.errors = json_array(), .detail = detail, .len = sizeof(detail)};
    size_t pos = 0, calls = 0;
    char *field, *msg;
    while (calls < 64 && (field = next_piece(data, size, &pos))) {
        msg = next_piece(data, size, &pos);
        fieldcheck_fail(&c, field, "%s", msg ? msg : "");
        calls++;
        FUZZ_CHECK(json_array_size(c.errors) == calls, "%zu calls, %zu errors", calls,
                   json_array_size(c.errors));
        json_t *e = json_array_get(c.errors, calls - 1);
        FUZZ_CHECK(json_is_string(json_object_get(e, "field")) &&
                       json_is_string(json_object_get(e, "detail")),
                   "entry %zu malformed", calls - 1);
        FUZZ_CHECK(detail[0] != '\0', "detail empty after an error");
        json_t *d = json_string(detail); /* the problem document must encode it */
        FUZZ_CHECK(d, "detail is not valid UTF-8");
        json_decref(d);
        free(field);
        free(msg);
    }
    /* The problem document must encode (it is sent as JSON). */
    char *text = json_dumps(c.errors, JSON_COMPACT);
    FUZZ_CHECK(text, "errors[] does not encode");
    free(text);
    json_decref(c.errors);
    return 0;
}
