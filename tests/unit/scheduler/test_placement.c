/* placement: buddy alignment, fewest nodes, no needless migration, never over
 * a node nor a GPU twice, and the fragmentation figure. */
#include "placement.h"
#include "sched_fixture.h"

/* The job's GPUs form one aligned block of its (power-of-two) size on one node. */
static void assert_aligned(const struct placement_plan *p, size_t i)
{
    int s = p->gpus[i], lo = 64;

    cr_assert_eq(fx_nodes_spanned(p, i), 1);
    for (int k = 0; k < s; k++)
        lo = p->slots[p->off[i] + (size_t)k].gpu < lo ? p->slots[p->off[i] + (size_t)k].gpu : lo;
    cr_assert_eq(lo % s, 0, "job %zu of %d GPUs starts at GPU %d", i, s, lo);
    for (int k = 0; k < s; k++) {
        int g = p->slots[p->off[i] + (size_t)k].gpu;
        cr_assert(g >= lo && g < lo + s);
    }
}

Test(placement, power_of_two_jobs_land_on_aligned_blocks)
{
    static struct fx f;
    int want[4] = { 1, 4, 2, 1 };

    fx_init(&f, 1, 8);
    for (int i = 0; i < 4; i++)
        fx_job(&f, i + 1, want[i]);
    struct placement_plan *p = fx_place(&f, want);
    for (size_t i = 0; i < 4; i++)
        assert_aligned(p, i);
    cr_assert_eq(p->spread, 0);
    cr_assert_eq(p->short_gpus, 0);
    cr_assert_float_eq(p->fragmentation, 0.0, 1e-12, "8 GPUs used, none free");
    placement_destroy(p);
}

Test(placement, four_gpu_job_avoids_a_misaligned_gap)
{
    static struct fx f;
    int want[2] = { 2, 4 };

    fx_init(&f, 1, 8);
    struct sched_job *a = fx_job(&f, 1, 2);
    fx_job(&f, 2, 4);
    fx_hold(&f, a, 0, 2, 2); /* GPUs 2-3: 0-1 free, 4-7 free */
    struct placement_plan *p = fx_place(&f, want);
    cr_assert(p->kept[0]);
    assert_aligned(p, 1);
    cr_assert_eq(p->slots[p->off[1]].gpu, 4);
    cr_assert_float_eq(p->fragmentation, 0.0, 1e-12, "GPUs 0-1 free form one block");
    placement_destroy(p);
}

Test(placement, big_jobs_take_whole_nodes_first)
{
    static struct fx f;
    int want[3] = { 2, 20, 4 };

    fx_init(&f, 4, 8);
    struct sched_job *small = fx_job(&f, 1, 2);
    fx_job(&f, 2, 20);
    fx_job(&f, 3, 4);
    fx_hold(&f, small, 1, 0, 2);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert(p->kept[0]);
    cr_assert_eq(p->gpus[1], 20);
    cr_assert_eq(fx_nodes_spanned(p, 1), 3, "two whole nodes and a half");
    assert_aligned(p, 2);
    cr_assert_eq(p->spread, 0);
    placement_destroy(p);
}

Test(placement, unchanged_running_jobs_stay_even_when_misaligned)
{
    static struct fx f;
    int want[2] = { 3, 2 };

    fx_init(&f, 1, 8);
    struct sched_job *a = fx_job(&f, 1, 3);
    fx_job(&f, 2, 2);
    fx_hold(&f, a, 0, 1, 3);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert(p->kept[0]);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(p->slots[p->off[0] + (size_t)k].gpu, 1 + k);
    assert_aligned(p, 1);
    cr_assert_eq(p->slots[p->off[1]].gpu, 4, "best fit: GPUs 4-5 of the 4-block");
    placement_destroy(p);
}

Test(placement, repacks_when_keeping_jobs_would_split_a_job)
{
    static struct fx f;
    int want[3] = { 4, 4, 8 };

    fx_init(&f, 2, 8);
    struct sched_job *a = fx_job(&f, 1, 4), *b = fx_job(&f, 2, 4);
    fx_job(&f, 3, 8);
    fx_hold(&f, a, 0, 2, 4); /* misaligned halves of both nodes */
    fx_hold(&f, b, 1, 2, 4);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert_eq(p->spread, 0, "the 8-GPU job fits one node after a repack");
    for (size_t i = 0; i < 3; i++)
        assert_aligned(p, i);
    placement_destroy(p);
}

Test(placement, repack_moves_as_few_running_jobs_as_it_can)
{
    static struct fx f;
    int want[3] = { 4, 4, 8 };

    fx_init(&f, 2, 8);
    struct sched_job *a = fx_job(&f, 1, 4), *b = fx_job(&f, 2, 4);
    fx_job(&f, 3, 8);
    fx_hold(&f, a, 0, 0, 4); /* aligned halves: the new 8 still needs a whole node */
    fx_hold(&f, b, 1, 0, 4);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert_eq(p->spread, 0);
    cr_assert_eq(fx_nodes_spanned(p, 2), 1);
    cr_assert_eq(p->kept[0] + p->kept[1], 1, "one of the two moves, the other stays");
    for (size_t i = 0; i < 3; i++)
        assert_aligned(p, i);
    placement_destroy(p);
}

Test(placement, overcommitted_counts_are_cut_or_wait)
{
    static struct fx f;
    int want[3] = { 6, 4, 4 };

    fx_init(&f, 1, 8);
    fx_job(&f, 1, 6);
    struct sched_job *b = fx_job(&f, 2, 4), *c = fx_job(&f, 3, 4);
    b->min_gpus = 3;
    c->elastic = 0;
    struct placement_plan *p = fx_place(&f, want);
    cr_assert_eq(p->gpus[0], 6);
    cr_assert_eq(p->gpus[1], 0, "2 left, below min 3: waits");
    cr_assert_eq(p->gpus[2], 0);
    cr_assert_eq(p->short_gpus, 8);
    b->min_gpus = 1;
    placement_destroy(p);
    p = fx_place(&f, want);
    cr_assert_eq(p->gpus[1], 2, "elastic: cut to the 2 left");
    placement_destroy(p);
}

Test(placement, fragmentation_counts_free_gpus_outside_each_nodes_largest_block)
{
    static struct fx f;
    uint64_t busy[2] = { 0x55, 0x0f }; /* node 0: 1,3,5,7 free; node 1: 4-7 free */

    fx_init(&f, 2, 8);
    cr_assert_float_eq(placement_fragmentation(&f.snap, busy), 3.0 / 8.0, 1e-12);
    busy[0] = 0xff;
    cr_assert_float_eq(placement_fragmentation(&f.snap, busy), 0.0, 1e-12);
    busy[1] = 0x00;
    cr_assert_float_eq(placement_fragmentation(&f.snap, busy), 0.0, 1e-12);
    busy[1] = 0x81; /* 1-6 free: blocks 1, 2-3, 4-5, 6 -> largest 2 */
    cr_assert_float_eq(placement_fragmentation(&f.snap, busy), 4.0 / 6.0, 1e-12);
    f.nodes[1].up = 0;
    cr_assert_float_eq(placement_fragmentation(&f.snap, busy), 0.0, 1e-12);
}

/* Random snapshots and random counts (summing to at most the free capacity):
 * every GPU booked at most once, only on up nodes, and only unchanged jobs kept. */
Test(placement, random_plans_never_double_book_or_overflow_a_node)
{
    static struct fx f;
    static int want[FX_MAX_JOBS];
    uint64_t rng = 12345;

    for (int round = 0; round < 300; round++) {
        fx_random(&f, &rng);
        int capacity = 0;
        for (size_t n = 0; n < f.snap.nnodes; n++)
            capacity += f.nodes[n].up ? f.nodes[n].ngpus : 0;
        for (size_t i = 0; i < f.snap.njobs; i++) {
            int w = fx_between(&rng, 0, 3) ? f.jobs[i].cur_gpus : fx_between(&rng, 0, 24);
            want[i] = w <= capacity ? w : 0;
            capacity -= want[i];
        }
        struct placement_plan *p = fx_place(&f, want);
        uint64_t busy[FX_MAX_NODES] = { 0 };
        for (size_t i = 0; i < f.snap.njobs; i++) {
            cr_assert_eq(p->gpus[i], want[i], "round %d: all fits, nothing cut", round);
            if (p->kept[i])
                cr_assert_eq(want[i], f.jobs[i].cur_gpus);
            for (int k = 0; k < p->gpus[i]; k++) {
                struct sched_slot s = p->slots[p->off[i] + (size_t)k];
                cr_assert(f.nodes[s.node].up && s.gpu < f.nodes[s.node].ngpus);
                cr_assert_eq(busy[s.node] & (UINT64_C(1) << s.gpu), 0, "round %d", round);
                busy[s.node] |= UINT64_C(1) << s.gpu;
            }
        }
        placement_destroy(p);
    }
}
