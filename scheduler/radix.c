/* radix: least-significant-digit radix sort, 8 or 11 bits a pass (see radix.h). */
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

/* Passes of width bits that a sort by the key bits from..63 needs: digits from `from` up, one
 * per digit in which some key differs from the others (diff). */
static int passes(uint64_t diff, int from, int bits)
{
    int n = 0;

    for (int shift = from; shift < 64; shift += bits) {
        int width = 64 - shift < bits ? 64 - shift : bits;
        n += ((diff >> shift) & ((UINT64_C(1) << width) - 1)) != 0;
    }
    return n;
}

/* Runs of keys alike from bit `from` up (after a sort by those bits) sorted by their whole
 * key, stably: short ones by insertion, long ones by radix_sort() on their lower bits. */
static void sort_runs(struct radix_item *items, struct radix_item *tmp, size_t n, int from)
{
    for (size_t k = 1; k < n; k++) {
        if ((items[k].key ^ items[k - 1].key) >> from)
            continue;
        size_t a = k - 1, b = k + 1;
        while (b < n && !((items[b].key ^ items[a].key) >> from))
            b++;
        if (b - a > 32) {
            radix_sort(items + a, tmp + a, b - a);
        } else {
            for (size_t i = a + 1; i < b; i++) {
                struct radix_item x = items[i];
                size_t at = i;
                while (at > a && items[at - 1].key > x.key) {
                    items[at] = items[at - 1];
                    at--;
                }
                items[at] = x;
            }
        }
        k = b;
    }
}

/* Keys that differ over more bits than `prefix` digits hold (doubles differ in every byte) are
 * sorted by their top varying bits (prefix digits' worth, from the highest bit where keys
 * differ down), which nearly always tell them apart, and then the few runs alike there by
 * their whole key (sort_runs): half the passes over the items for 64-bit keys. Stable either
 * way: the passes are, and sort_runs() keeps the order of equal keys. */
void radix_sort(struct radix_item *items, struct radix_item *tmp, size_t n)
{
    size_t count[RADIX_MAX_BUCKETS];
    struct radix_item *src = items, *dst = tmp;
    uint64_t all = ~UINT64_C(0), any = 0;
    int bits = n >= RADIX_WIDE_FROM ? 11 : 8;
    int prefix = n >= RADIX_WIDE_FROM ? 3 : 4; /* 33 or 32 bits */

    for (size_t k = 0; k < n; k++) {
        all &= items[k].key;
        any |= items[k].key;
    }
    uint64_t diff = all ^ any;
    int from = 0;
    if (diff && passes(diff, 0, bits) > prefix) {
        int hi = 63 - __builtin_clzll(diff);
        from = hi + 1 - prefix * bits;
    }
    for (int shift = from; shift < 64; shift += bits) {
        int width = 64 - shift < bits ? 64 - shift : bits;
        if (((diff >> shift) & ((UINT64_C(1) << width) - 1)) == 0)
            continue; /* one value of this digit in every key: the pass would move nothing */
        radix_pass(src, dst, n, shift, width, count);
        struct radix_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != items)
        memcpy(items, src, n * sizeof(*items));
    if (from > 0)
        sort_runs(items, tmp, n, from);
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
