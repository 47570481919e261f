/* radix: the sort against qsort with the comparator it stands for (key, then the items'
 * starting position), the key maps against the order of their fields, and the policy
 * order it now computes against policy_rank_cmp. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"
#include "radix.h"

static uint64_t rng_state = 12345;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmp_item(const void *a, const void *b)
{
    const struct radix_item *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* n items whose keys vary only in the bytes of mask, sorted both ways. */
static void check_sort(size_t n, uint64_t mask)
{
    struct radix_item *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
    struct radix_item *tmp = malloc((n + 1) * sizeof(*tmp));

    cr_assert(a && b && tmp);
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] = (struct radix_item){rng() & mask, i};
    radix_sort(a, tmp, n);
    qsort(b, n, sizeof(*b), cmp_item);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(a[i].key, b[i].key, "n %zu mask %llx: key at %zu", n,
                     (unsigned long long)mask, i);
        cr_assert_eq(a[i].idx, b[i].idx, "n %zu mask %llx: index at %zu (not stable)", n,
                     (unsigned long long)mask, i);
    }
    free(a);
    free(b);
    free(tmp);
}

Test(radix, matches_qsort_and_is_stable)
{
    /* 0x1c00 and 0xffc0000000000000 straddle the wide (11-bit) digits' boundaries. */
    static const uint64_t masks[] = {UINT64_MAX, 0x3, 0xff00, 0xff000000000000ffULL, 0,
                                     0x8000000000000001ULL, 0x1c00, 0xffc0000000000000ULL};
    static const size_t sizes[] = {0, 1, 2, 7, 100, 4095, 4096, 5000, 20000};

    for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            check_sort(sizes[s], masks[m]);
}

/* Keys that differ over more bits than the sort's first passes take (radix_sort() sorts by the
 * top varying bits, then the runs alike there): runs of every length alike in the top bits,
 * short (insertion) and long (a radix sort of the run), and doubles in a narrow range. */
Test(radix, runs_alike_in_the_top_bits)
{
    static const size_t sizes[] = {2, 33, 100, 4095, 4096, 5000, 20000};
    static const int groups[] = {1, 2, 3, 50, 1000, 100000};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
            for (int low = 0; low < 3; low++) {
                size_t n = sizes[s];
                struct radix_item *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
                struct radix_item *tmp = malloc(n * sizeof(*tmp));
                cr_assert(a && b && tmp);
                for (size_t i = 0; i < n; i++) {
                    uint64_t top = (rng() % (uint64_t)groups[g]) << (low == 2 ? 50 : 40);
                    uint64_t bottom = low == 0 ? rng() & 0xff : low == 1 ? rng() & 0xffffffffULL
                                                                         : rng() & 0x3;
                    double d = 1.0 + (double)(rng() % (uint64_t)groups[g]) * 1e-12;
                    a[i] = b[i] = (struct radix_item){
                        low == 2 && g % 2 ? radix_key_double(d) : top | bottom | (1ULL << 63), i};
                }
                radix_sort(a, tmp, n);
                qsort(b, n, sizeof(*b), cmp_item);
                for (size_t i = 0; i < n; i++)
                    cr_assert(a[i].key == b[i].key && a[i].idx == b[i].idx,
                              "n %zu groups %d low %d: at %zu", n, groups[g], low, i);
                free(a);
                free(b);
                free(tmp);
            }
}

Test(radix, double_keys_follow_the_numbers)
{
    static const double v[] = {-INFINITY, -1e300, -2.5, -1.0, -1e-300, 0.0,
                               1e-300,    1.0,    2.5,  1e300, INFINITY};
    size_t n = sizeof(v) / sizeof(v[0]);

    for (size_t i = 0; i + 1 < n; i++)
        cr_expect_lt(radix_key_double(v[i]), radix_key_double(v[i + 1]), "%g < %g", v[i],
                     v[i + 1]);
    cr_expect_eq(radix_key_double(-0.0), radix_key_double(0.0), "-0.0 sorts as 0.0");
    cr_expect_gt(radix_key_double(NAN), radix_key_double(INFINITY), "NaN last");
}

Test(radix, integer_keys_follow_the_numbers)
{
    static const int64_t v[] = {INT64_MIN, -5, -1, 0, 1, 5, INT64_MAX};
    size_t n = sizeof(v) / sizeof(v[0]);

    for (size_t i = 0; i + 1 < n; i++) {
        cr_expect_lt(radix_key_i64(v[i]), radix_key_i64(v[i + 1]));
        cr_expect_gt(radix_key_i64_desc(v[i]), radix_key_i64_desc(v[i + 1]));
    }
}

struct ranked {
    struct policy_rank r;
    size_t idx;
};

static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int c = policy_rank_cmp(&x->r, &y->r);

    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Shuffled jobs with few priorities, tied and negative arrival times, -0.0, and (for the
 * order alone; a snapshot that sched_decide takes has unique ids) repeated ids. */
Test(radix, policy_order_is_the_rank_order)
{
    enum { N = 3000 };
    struct sched_job *jobs = calloc(N, sizeof(*jobs));
    struct ranked *ref = malloc(N * sizeof(*ref));
    size_t *order = malloc(N * sizeof(*order));

    cr_assert(jobs && ref && order);
    for (int dup = 0; dup < 2; dup++) {
        for (size_t i = 0; i < N; i++) {
            jobs[i].id = dup ? (int64_t)(rng() % 50) - 25 : (int64_t)(rng() >> 1) - INT64_MAX / 2;
            jobs[i].priority = (int)(rng() % 5) - 2;
            jobs[i].submit_time = (double)(rng() % 40) - 20.0;
            if (jobs[i].submit_time == 0.0 && (rng() & 1))
                jobs[i].submit_time = -0.0;
            ref[i] = (struct ranked){{jobs[i].priority, jobs[i].submit_time, jobs[i].id}, i};
        }
        struct sched_snapshot snap = {.jobs = jobs, .njobs = N};
        cr_assert_eq(policy_order(&snap, order), 0);
        qsort(ref, N, sizeof(*ref), cmp_ranked);
        for (size_t k = 0; k < N; k++)
            cr_assert_eq(order[k], ref[k].idx, "ids %s: position %zu", dup ? "repeated" : "unique",
                         k);
    }
    free(jobs);
    free(ref);
    free(order);
}
