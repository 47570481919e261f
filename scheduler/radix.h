/* radix: a stable sort of (64-bit key, index) pairs, for the orders a round
 * takes of its jobs (the policy order, placement's order, ringmaster's keys).
 *
 * A round sorts its 10,000 jobs several times; qsort() with a comparator was
 * half of a fifo round at that size. An order by several fields is sorted one
 * field at a time, least significant first: the sort is stable, so equal keys
 * keep the order the previous field (or the items' starting order) gave them.
 * The radix_key_* functions map a field to a key whose unsigned order is the
 * field's order. */
#ifndef RINGMASTER_RADIX_H
#define RINGMASTER_RADIX_H

#include <stddef.h>
#include <stdint.h>

struct radix_item {
    uint64_t key;
    size_t idx;
};

/* Sorts items[0..n) by key, ascending and stable; tmp has room for n items
 * (its contents are lost). Bytes that are the same in every key cost nothing. */
void radix_sort(struct radix_item *items, struct radix_item *tmp, size_t n);

/* Keys whose unsigned order is v's order, ascending. */
uint64_t radix_key_i64(int64_t v);
/* -0.0 sorts as 0.0; NaN after +infinity. */
uint64_t radix_key_double(double v);

/* Keys for a descending order of v. */
uint64_t radix_key_i64_desc(int64_t v);

#endif
