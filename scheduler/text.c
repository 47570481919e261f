/* text: short texts written into a caller's buffer without stdio (text.h). */
#include "text.h"

void text_put(struct text *t, const char *s)
{
    for (; *s; s++, t->len++)
        if (t->len + 1 < t->cap)
            t->buf[t->len] = *s;
    if (t->cap)
        t->buf[t->len < t->cap ? t->len : t->cap - 1] = '\0';
}

void text_put_long(struct text *t, long long v)
{
    char out[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

    if (v < 0)
        text_put(t, "-");
    do {
        out[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (int k = 0; k < n / 2; k++) {
        char c = out[k];
        out[k] = out[n - 1 - k];
        out[n - 1 - k] = c;
    }
    out[n] = '\0';
    text_put(t, out);
}
