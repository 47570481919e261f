/* radix: least-significant-digit radix sort, 8 bits a pass (see radix.h). */
#include "radix.h"

#include <math.h>
#include <string.h>

/* Digits of 8 bits for short arrays; 11 bits (6 passes, not 8, over keys that differ in
 * every byte, as doubles do) once the array dwarfs the 2,048 counters a pass clears and sums. */
#define RADIX_WIDE_FROM 4096
#define RADIX_MAX_BUCKETS 2048

/* One stable pass by the digit of width bits at shift, from src into dst. */
static void radix_pass(const struct radix_item *src, struct radix_item *dst, size_t n, int shift,
                       int bits, size_t *count)
{
    size_t buckets = (size_t)1 << bits;
    uint64_t mask = buckets - 1;

    memset(count, 0, buckets * sizeof(*count));
    for (size_t k = 0; k < n; k++)
        count[(src[k].key >> shift) & mask]++;
    for (size_t b = 0, sum = 0; b < buckets; b++) {
        size_t t = count[b];
        count[b] = sum;
        sum += t;
    }
    for (size_t k = 0; k < n; k++)
        dst[count[(src[k].key >> shift) & mask]++] = src[k];
}

void radix_sort(struct radix_item *items, struct radix_item *tmp, size_t n)
{
    size_t count[RADIX_MAX_BUCKETS];
    struct radix_item *src = items, *dst = tmp;
    uint64_t all = ~UINT64_C(0), any = 0;
    int bits = n >= RADIX_WIDE_FROM ? 11 : 8;

    for (size_t k = 0; k < n; k++) {
        all &= items[k].key;
        any |= items[k].key;
    }
    for (int shift = 0; shift < 64; shift += bits) {
        int width = 64 - shift < bits ? 64 - shift : bits;
        if ((((all ^ any) >> shift) & ((UINT64_C(1) << width) - 1)) == 0)
            continue; /* one value of this digit in every key: the pass would move nothing */
        radix_pass(src, dst, n, shift, width, count);
        struct radix_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != items)
        memcpy(items, src, n * sizeof(*items));
}

uint64_t radix_key_i64(int64_t v)
{
    return (uint64_t)v ^ (UINT64_C(1) << 63);
}

uint64_t radix_key_i64_desc(int64_t v)
{
    return ~radix_key_i64(v);
}

uint64_t radix_key_double(double v)
{
    uint64_t u;

    if (isnan(v))
        return UINT64_MAX;
    if (v == 0.0)
        v = 0.0; /* -0.0 equals 0.0 */
    memcpy(&u, &v, sizeof(u));
    return u & (UINT64_C(1) << 63) ? ~u : u | (UINT64_C(1) << 63);
}
