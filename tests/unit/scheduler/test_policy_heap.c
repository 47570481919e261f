/* policy_heap: the candidates come out best first (larger gain, then smaller rank) whatever
 * mix of pushes before the first pop (the sorted run) and pushes between pops (the heap) they
 * went in by, with ties of gain, pushes out of rank order, a clear in between, and the
 * limits of cap. The reference is the candidates' order under that comparison, by qsort. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"

static uint64_t rng_state = 987654321;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmp_best(const void *a, const void *b)
{
    const struct policy_cand *x = a, *y = b;

    if (x->gain != y->gain)
        return x->gain > y->gain ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A gain from few distinct values (ties) or from many. */
static double gain(int ties)
{
    return ties ? (double)(1 + rng() % 8) : 1e-9 + (double)(rng() % 1000000) * 1e-3;
}

/* n candidates with distinct ranks 0..n-1 (shuffled unless in_order) into c[]. */
static void make(struct policy_cand *c, size_t n, int ties, int in_order)
{
    for (size_t k = 0; k < n; k++)
        c[k] = (struct policy_cand){gain(ties), k, 1000 + k};
    for (size_t k = n; !in_order && k > 1; k--) {
        size_t x = rng() % k;
        struct policy_cand t = c[k - 1];
        c[k - 1] = c[x];
        c[x] = t;
    }
}

/* Pushes first of n candidates, then pops them all while pushing the rest one after each
 * pop: every candidate must come out in the reference order among those present, which for
 * pushes that are never better than the last popped is the plain sorted order. So the
 * later ones get gains below every earlier one's. */
static void check_mixed(size_t n, size_t first, int ties, int in_order)
{
    struct policy_heap h;
    struct policy_cand *c = malloc(n * sizeof(*c)), *want = malloc(n * sizeof(*want)), got;

    cr_assert(c && want);
    cr_assert_eq(policy_heap_init(&h, n), 0);
    make(c, n, ties, in_order);
    for (size_t k = first; k < n; k++)
        c[k].gain = -(double)(k - first) - 1.0 + c[k].gain * 1e-12; /* below all before */
    for (size_t k = 0; k < n; k++)
        want[k] = c[k];
    qsort(want, n, sizeof(*want), cmp_best);
    for (size_t k = 0; k < first; k++)
        cr_assert_eq(policy_heap_push(&h, c[k]), 0);
    size_t next = first;
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(policy_heap_pop(&h, &got), 0, "pop %zu of %zu", k, n);
        cr_assert(got.gain == want[k].gain && got.rank == want[k].rank && got.job == want[k].job,
                  "pop %zu: gain %g rank %zu, want gain %g rank %zu", k, got.gain, got.rank,
                  want[k].gain, want[k].rank);
        if (next < n)
            cr_assert_eq(policy_heap_push(&h, c[next++]), 0);
    }
    cr_assert_eq(policy_heap_pop(&h, &got), -1);
    policy_heap_fini(&h);
    free(c);
    free(want);
}

/* Runs of 4,096 candidates or more are sorted at the first pop, shorter ones go into the
 * heap: both ways are checked. */
Test(policy_heap, run_alone_pops_in_order)
{
    check_mixed(1, 1, 0, 0);
    check_mixed(2, 2, 1, 0);
    check_mixed(1000, 1000, 0, 0);
    check_mixed(1000, 1000, 1, 0);
    check_mixed(5000, 5000, 0, 0);
    check_mixed(5000, 5000, 1, 0);
    check_mixed(5000, 5000, 1, 1);
}

Test(policy_heap, heap_alone_pops_in_order)
{
    check_mixed(1000, 1, 0, 0);
    check_mixed(1000, 1, 1, 1);
}

Test(policy_heap, run_and_heap_merge)
{
    check_mixed(1000, 500, 0, 0);
    check_mixed(1000, 10, 1, 0);
    check_mixed(6000, 4096, 0, 0);
    check_mixed(6000, 5000, 1, 0);
    check_mixed(6000, 5999, 1, 1);
}

/* Into the sorted live[0..*n), after the equal-or-better ones. */
static void insert_sorted(struct policy_cand *live, size_t *n, struct policy_cand c)
{
    size_t at = *n;

    while (at > 0 && cmp_best(&c, &live[at - 1]) < 0) {
        live[at] = live[at - 1];
        at--;
    }
    live[at] = c;
    (*n)++;
}

/* n candidates, first of them pushed before the first pop, then 0..2 random ones (whose
 * gains may beat what the run still holds) after each pop: the popped sequence must be that
 * of a sorted list kept by hand. */
static void check_random(size_t n, size_t first)
{
    struct policy_heap h;
    struct policy_cand *all = malloc(n * sizeof(*all)), *live = malloc(n * sizeof(*live)), got;
    size_t nlive = 0, next = 0, at = 0;

    cr_assert(all && live);
    cr_assert_eq(policy_heap_init(&h, n), 0);
    make(all, n, 1, 0);
    for (; next < first; next++) {
        cr_assert_eq(policy_heap_push(&h, all[next]), 0);
        insert_sorted(live, &nlive, all[next]);
    }
    while (at < nlive) {
        cr_assert_eq(policy_heap_pop(&h, &got), 0);
        cr_assert(got.rank == live[at].rank && got.gain == live[at].gain, "rank %zu, want %zu",
                  got.rank, live[at].rank);
        at++;
        for (int p = (int)(rng() % 3); p > 0 && next < n; p--, next++) {
            cr_assert_eq(policy_heap_push(&h, all[next]), 0);
            /* live[at..nlive) holds what is still in; a new one goes into that part */
            memmove(live, live + at, (nlive - at) * sizeof(*live));
            nlive -= at;
            at = 0;
            insert_sorted(live, &nlive, all[next]);
        }
    }
    cr_assert_eq(policy_heap_pop(&h, &got), -1);
    policy_heap_fini(&h);
    free(all);
    free(live);
}

Test(policy_heap, random_pushes_between_pops_match_a_sorted_list)
{
    check_random(600, 300);
    check_random(9000, 4500);
}

/* A clear drops everything, and the pushes after it form a new run (ringmaster's second
 * greedy pass); so does the pop that finds the heap empty. */
Test(policy_heap, clear_and_empty_start_a_new_run)
{
    struct policy_heap h;
    struct policy_cand got;

    cr_assert_eq(policy_heap_init(&h, 4), 0);
    for (size_t k = 0; k < 4; k++)
        cr_assert_eq(policy_heap_push(&h, (struct policy_cand){1.0 + (double)k, k, k}), 0);
    cr_assert_eq(policy_heap_pop(&h, &got), 0);
    cr_assert_eq(got.job, 3);
    policy_heap_clear(&h);
    cr_assert_eq(policy_heap_pop(&h, &got), -1);
    for (size_t k = 0; k < 4; k++)
        cr_assert_eq(policy_heap_push(&h, (struct policy_cand){5.0, 4 - k, k}), 0);
    for (size_t k = 0; k < 4; k++) {
        cr_assert_eq(policy_heap_pop(&h, &got), 0);
        cr_assert_eq(got.rank, k + 1, "equal gains: smaller rank first");
    }
    cr_assert_eq(policy_heap_pop(&h, &got), -1);
    cr_assert_eq(policy_heap_push(&h, (struct policy_cand){2.0, 0, 9}), 0);
    cr_assert_eq(policy_heap_pop(&h, &got), 0);
    cr_assert_eq(got.job, 9);
    policy_heap_fini(&h);
}

Test(policy_heap, full_refuses_with_enospc)
{
    struct policy_heap h;
    struct policy_cand got;

    cr_assert_eq(policy_heap_init(&h, 2), 0);
    cr_assert_eq(policy_heap_push(&h, (struct policy_cand){1.0, 0, 0}), 0);
    cr_assert_eq(policy_heap_push(&h, (struct policy_cand){2.0, 1, 1}), 0);
    errno = 0;
    cr_assert_eq(policy_heap_push(&h, (struct policy_cand){3.0, 2, 2}), -1);
    cr_assert_eq(errno, ENOSPC);
    cr_assert_eq(policy_heap_pop(&h, &got), 0);
    cr_assert_eq(got.job, 1);
    cr_assert_eq(policy_heap_push(&h, (struct policy_cand){3.0, 2, 2}), 0);
    cr_assert_eq(policy_heap_pop(&h, &got), 0);
    cr_assert_eq(got.job, 2);
    cr_assert_eq(policy_heap_pop(&h, &got), 0);
    cr_assert_eq(got.job, 0);
    policy_heap_fini(&h);
}
