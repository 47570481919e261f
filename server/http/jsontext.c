/* jsontext: JSON written into a growing buffer byte for byte as jansson's compact dump:
 * strings escaped, reals formatted and jsonb documents rewritten as jansson would. */
#include "jsontext.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsontext_init(struct jsontext *t, size_t cap)
{
    *t = (struct jsontext){.p = malloc(cap ? cap : 64), .cap = cap ? cap : 64};
    t->failed = t->p == NULL;
    if (t->p)
        t->p[0] = '\0';
}

void jsontext_free(struct jsontext *t)
{
    free(t->p);
    *t = (struct jsontext){.failed = 1};
}

char *jsontext_take(struct jsontext *t, size_t *len)
{
    char *p = t->failed ? NULL : t->p;
    *len = t->failed ? 0 : t->len;
    if (t->failed)
        free(t->p);
    *t = (struct jsontext){.failed = 1};
    return p;
}

/* Room for n more bytes and the NUL; 0, or -1 (t failed). */
static int reserve(struct jsontext *t, size_t n)
{
    if (t->failed)
        return -1;
    if (t->len + n + 1 <= t->cap)
        return 0;
    size_t cap = t->cap;
    while (t->len + n + 1 > cap)
        cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
        t->failed = 1;
        return -1;
    }
    t->p = p;
    t->cap = cap;
    return 0;
}

void jsontext_raw(struct jsontext *t, const char *s, size_t n)
{
    if (reserve(t, n) < 0)
        return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void put(struct jsontext *t, char c)
{
    if (reserve(t, 1) < 0)
        return;
    t->p[t->len++] = c;
    t->p[t->len] = '\0';
}

/* The escape jansson writes for byte c of a string, or NULL when it writes c as it is. */
static const char *escape_of(unsigned char c, char seq[7])
{
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\b':
        return "\\b";
    case '\f':
        return "\\f";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    default:
        if (c >= 0x20)
            return NULL;
        snprintf(seq, 7, "\\u%04X", (unsigned)c);
        return seq;
    }
}

void jsontext_str(struct jsontext *t, const char *s)
{
    put(t, '"');
    for (;;) {
        size_t run = 0;
        while (s[run] && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] >= 0x20)
            run++;
        jsontext_raw(t, s, run);
        s += run;
        if (!*s)
            break;
        char seq[7];
        const char *e = escape_of((unsigned char)*s++, seq);
        jsontext_raw(t, e, strlen(e));
    }
    put(t, '"');
}

void jsontext_int(struct jsontext *t, long long v)
{
    char buf[24], *end = buf + sizeof(buf), *p = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    jsontext_raw(t, p, (size_t)(end - p));
}

void jsontext_real(struct jsontext *t, double v, int precision)
{
    /* jansson's jsonp_dtostr(): %.Ng, ".0" when that looks like an integer, and the
     * exponent without its '+' and leading zeros. */
    char buf[64];
    int n = snprintf(buf, sizeof(buf), "%.*g", precision ? precision : 17, v);
    if (n < 0 || (size_t)n + 3 >= sizeof(buf))
        return;
    size_t len = (size_t)n;
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    char *start = strchr(buf, 'e');
    if (start) {
        start++;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - buf) + 1);
            len -= (size_t)(end - start);
        }
    }
    jsontext_raw(t, buf, len);
}

/* ---- a JSON document copied compact, in one pass, when it is canonical ---- */

#define DOC_MAX_DEPTH 64 /* deeper documents go through jansson (its own limit is 2048) */
#define DOC_MAX_KEYS 16  /* objects with more keys too (duplicates are checked pairwise) */

struct doc {
    const char *s;
    struct jsontext *t;
    int precision;
    int depth;
};

static void skip_space(struct doc *d)
{
    while (*d->s == ' ' || *d->s == '\t' || *d->s == '\n' || *d->s == '\r')
        d->s++;
}

/* A string: copied as jansson writes it again, or -1 for what the fast path leaves to
 * jansson (\u escapes, bytes above ASCII that it would check as UTF-8, malformed text). */
static int doc_string(struct doc *d)
{
    const char *s = d->s + 1;
    put(d->t, '"');
    for (;;) {
        size_t run = 0;
        while (s[run] >= 0x20 && s[run] != '"' && s[run] != '\\')
            run++;
        jsontext_raw(d->t, s, run);
        s += run;
        if (*s == '"')
            break;
        if (*s != '\\')
            return -1; /* a control byte, the end, or a byte above ASCII */
        char e = s[1];
        if (e == '/')
            put(d->t, '/');
        else if (e && strchr("\"\\bfnrt", e))
            jsontext_raw(d->t, s, 2);
        else
            return -1;
        s += 2;
    }
    put(d->t, '"');
    d->s = s + 1;
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A number, by jansson's grammar, written as jansson writes the integer or real it reads;
 * -1 when it does not read one (jansson refuses the document then). */
static int doc_number(struct doc *d)
{
    const char *s = d->s, *p = s;
    int real = 0;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (is_digit(*p))
        while (is_digit(*p))
            p++;
    else
        return -1;
    if (*p == '.') {
        real = 1;
        if (!is_digit(*++p))
            return -1;
        while (is_digit(*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        real = 1;
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return -1;
        while (is_digit(*p))
            p++;
    }
    char *end;
    errno = 0;
    if (real) {
        double v = strtod(s, &end);
        if (end != p || ((v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE))
            return -1;
        jsontext_real(d->t, v, d->precision);
    } else {
        long long v = strtoll(s, &end, 10);
        if (end != p || errno == ERANGE)
            return -1;
        jsontext_int(d->t, v);
    }
    d->s = p;
    return 0;
}

static int doc_value(struct doc *d);

static int doc_array(struct doc *d)
{
    d->s++;
    put(d->t, '[');
    skip_space(d);
    for (int n = 0; *d->s != ']'; n++) {
        if (n && *d->s++ != ',')
            return -1;
        if (n)
            put(d->t, ',');
        skip_space(d);
        if (doc_value(d) < 0)
            return -1;
        skip_space(d);
    }
    d->s++;
    put(d->t, ']');
    return 0;
}

/* 1 when the key written at t->p[at..len) was written before at one of keys[0..n). */
static int seen_key(const struct jsontext *t, const size_t keys[][2], int n, size_t at)
{
    size_t len = t->len - at;
    for (int i = 0; i < n; i++)
        if (keys[i][1] == len && memcmp(t->p + keys[i][0], t->p + at, len) == 0)
            return 1;
    return 0;
}

static int doc_object(struct doc *d)
{
    size_t keys[DOC_MAX_KEYS][2];
    d->s++;
    put(d->t, '{');
    skip_space(d);
    for (int n = 0; *d->s != '}'; n++) {
        if (n && *d->s++ != ',')
            return -1;
        if (n)
            put(d->t, ',');
        skip_space(d);
        size_t at = d->t->len;
        if (n == DOC_MAX_KEYS || *d->s != '"' || doc_string(d) < 0 || d->t->failed)
            return -1;
        if (seen_key(d->t, keys, n, at))
            return -1; /* jansson keeps one of them: leave it to jansson */
        keys[n][0] = at;
        keys[n][1] = d->t->len - at;
        skip_space(d);
        if (*d->s++ != ':')
            return -1;
        put(d->t, ':');
        skip_space(d);
        if (doc_value(d) < 0)
            return -1;
        skip_space(d);
    }
    d->s++;
    put(d->t, '}');
    return 0;
}

static int doc_literal(struct doc *d, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(d->s, word, n) != 0)
        return -1;
    jsontext_raw(d->t, word, n);
    d->s += n;
    return 0;
}

static int doc_value(struct doc *d)
{
    if (++d->depth > DOC_MAX_DEPTH)
        return -1;
    int rc;
    switch (*d->s) {
    case '{':
        rc = doc_object(d);
        break;
    case '[':
        rc = doc_array(d);
        break;
    case '"':
        rc = doc_string(d);
        break;
    case 't':
        rc = doc_literal(d, "true");
        break;
    case 'f':
        rc = doc_literal(d, "false");
        break;
    case 'n':
        rc = doc_literal(d, "null");
        break;
    default:
        rc = doc_number(d);
        break;
    }
    d->depth--;
    return rc;
}

/* What jansson writes for doc, the slow way. */
static void doc_by_jansson(struct jsontext *t, const char *doc, int precision)
{
    json_t *v = json_loads(doc, 0, NULL);
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(precision)) : NULL;
    json_decref(v);
    if (text)
        jsontext_raw(t, text, strlen(text));
    else
        jsontext_lit(t, "null");
    free(text);
}

void jsontext_doc(struct jsontext *t, const char *doc, int precision)
{
    size_t at = t->len;
    struct doc d = {.s = doc, .t = t, .precision = precision};
    skip_space(&d);
    int rc = *d.s == '{' || *d.s == '[' ? doc_value(&d) : -1;
    if (rc == 0) /* (after a failure d.s may be past the end) */
        skip_space(&d);
    if (rc == 0 && *d.s == '\0')
        return;
    if (t->failed)
        return;
    t->len = at; /* not canonical: jansson decides, and writes it */
    t->p[at] = '\0';
    doc_by_jansson(t, doc, precision);
}
