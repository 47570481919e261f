/* fieldcheck: fieldcheck_fail(), which records a wrong field as {field, detail} and the
 * first one as the problem's detail (field names cut to whole UTF-8 characters). */
#include "fieldcheck.h"

#include <stdarg.h>
#include <stdio.h>

/* Length (1..4) of the valid UTF-8 sequence at s, or 0 when the bytes there are not one
 * (stray continuation, overlong form, surrogate, past U+10FFFF, cut by the NUL). */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : lo;
        hi = c == 0xed ? 0x9f : hi;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : lo;
        hi = c == 0xf4 ? 0x8f : hi;
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* Copies s into buf (len > 0 bytes) as valid UTF-8: a byte that starts no valid sequence
 * becomes '?', and a character that does not fit whole is left out. Field names are cut
 * from client keys by "%.64s" and the like, which may split a character: jansson refuses
 * such a string, and the error would be lost (a broken rule without a 400). */
static void utf8_copy(char *buf, size_t len, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t out = 0;
    while (*p) {
        size_t n = utf8_seq(p);
        if (out + (n ? n : 1) >= len)
            break;
        for (size_t i = 0; i < n; i++)
            buf[out++] = (char)p[i];
        if (!n)
            buf[out++] = '?';
        p += n ? n : 1;
    }
    buf[out] = '\0';
}

void fieldcheck_fail(struct fieldcheck *c, const char *field, const char *fmt, ...)
{
    char raw[256], msg[256], name[320], first[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    utf8_copy(msg, sizeof(msg), raw);
    utf8_copy(name, sizeof(name), field);
    if (json_array_size(c->errors) == 0 && c->len > 0) {
        snprintf(first, sizeof(first), "%s: %s", name, msg);
        utf8_copy(c->detail, c->len, first);
    }
    json_array_append_new(c->errors, json_pack("{s:s, s:s}", "field", name, "detail", msg));
}

long fieldcheck_text_chars(const char *s)
{
    long n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return -1;
        n += (*p & 0xc0) != 0x80;
    }
    return n;
}
