/* policy gandiva: time-slicing rotates and every job progresses, a suspended
 * job holds no GPU, packing kept when it helps and reverted when it hurts, at
 * most two jobs on a GPU, migration gathers a spread job, determinism. */
#include "sched_fixture.h"

static const struct sched_policy_ops *gandiva(void)
{
    const struct sched_policy_ops *p = sched_policy_find("gandiva");

    cr_assert_not_null(p);
    return p;
}

static struct sched_job *one_gpu_job(struct fx *f, int64_t id, double util)
{
    struct sched_job *j = fx_job(f, id, 1);

    j->elastic = 0;
    j->max_gpus = 1;
    j->gpu_util = util;
    return j;
}

/* Applies d to the fixture as a caller would, then moves the clock dt on. */
static void apply(struct fx *f, const struct sched_decision *d, double dt)
{
    for (size_t i = 0; i < d->njobs; i++) {
        struct sched_job *j = &f->jobs[i];
        const struct sched_assignment *a = &d->assign[i];
        if (a->changed)
            j->last_change_time = f->snap.now;
        for (int k = 0; k < a->gpus; k++)
            f->slots[i][k] = a->slots[k];
        j->cur_gpus = a->gpus;
        j->suspended = a->suspended || (j->suspended && a->gpus == 0);
        j->packed = a->pack == SCHED_PACK_PACK || a->pack == SCHED_PACK_KEEP;
        j->packed_with = j->packed ? a->packed_with : 0;
        j->pack_reverted |= a->pack == SCHED_PACK_REVERT;
        if (a->gpus > 0) {
            j->suspended = 0;
            j->run_time += dt;
        }
    }
    f->snap.now += dt;
}

Test(gandiva, time_slicing_rotates_and_every_job_progresses)
{
    static struct fx f;
    double ran[6] = { 0 };

    fx_init(&f, 1, 4);
    f.snap.now = 0;
    for (int i = 0; i < 6; i++)
        one_gpu_job(&f, i + 1, 0);
    for (int round = 0; round < 30; round++) {
        struct sched_decision *d = sched_decide(gandiva(), &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_eq(d->used, 4, "round %d: every GPU busy", round);
        for (size_t i = 0; i < 6; i++) {
            ran[i] += d->assign[i].gpus > 0;
            if (round > 0 && f.jobs[i].cur_gpus == 0 && d->assign[i].gpus > 0 &&
                f.jobs[i].suspended)
                cr_assert(d->assign[i].resumed);
            if (d->assign[i].suspended)
                cr_assert_str_eq(d->assign[i].reason,
                                 "suspended: time-sliced out, its state kept in host memory");
        }
        apply(&f, d, 60);
        sched_decision_destroy(d);
    }
    for (int i = 0; i < 6; i++)
        cr_assert(ran[i] >= 19 && ran[i] <= 21, "job %d ran %g of 30 rounds (fair: 20)", i + 1,
                  ran[i]);
}

Test(gandiva, no_slicing_when_jobs_fit_and_quantum_respected)
{
    static struct fx f;

    fx_init(&f, 1, 4);
    for (int i = 0; i < 3; i++)
        fx_hold(&f, one_gpu_job(&f, i + 1, 0), 0, i, 1);
    struct sched_decision *d = sched_decide(gandiva(), &f.snap);
    cr_assert_eq(d->nchanged, 0, "three jobs on four GPUs: nobody moves");
    sched_decision_destroy(d);

    /* A waiting job does not evict jobs inside their quantum. */
    fx_hold(&f, one_gpu_job(&f, 4, 0), 0, 3, 1);
    one_gpu_job(&f, 5, 0);
    for (int i = 0; i < 4; i++)
        f.jobs[i].last_change_time = f.snap.now - 30;
    d = sched_decide(gandiva(), &f.snap);
    cr_assert_eq(d->assign[4].gpus, 0);
    sched_decision_destroy(d);
    f.jobs[2].last_change_time = f.snap.now - 60;
    d = sched_decide(gandiva(), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[4].gpus, 1, "quantum used: the waiting job gets its turn");
    cr_assert(d->assign[2].suspended);
    cr_assert_eq(d->assign[2].gpus, 0);
    sched_decision_destroy(d);
}

/* Two 1-GPU jobs packed on GPU 0 of a one-GPU node, with measured rates. */
static void packed_pair(struct fx *f, double r1, double r2)
{
    fx_init(f, 1, 1);
    struct sched_job *a = one_gpu_job(f, 1, 0.5), *b = one_gpu_job(f, 2, 0.5);
    fx_hold(f, a, 0, 0, 1);
    fx_hold(f, b, 0, 0, 1);
    a->packed = b->packed = 1;
    a->packed_with = 2;
    b->packed_with = 1;
    a->rate_alone = b->rate_alone = 10;
    a->rate_packed = r1;
    b->rate_packed = r2;
}

Test(gandiva, packing_kept_when_it_helps_and_reverted_when_it_hurts)
{
    static struct fx f;
    char err[128];

    packed_pair(&f, 8, 8);
    cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), 0, "%s", err);
    struct sched_decision *d = sched_decide(gandiva(), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->packed_gpus, 1);
    cr_assert_eq(d->nchanged, 0);
    sched_decision_destroy(d);

    packed_pair(&f, 0, 0); /* not measured yet: kept */
    d = sched_decide(gandiva(), &f.snap);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_KEEP);
    sched_decision_destroy(d);

    packed_pair(&f, 4, 4.5); /* 0.85 < 1.05: a loss */
    d = sched_decide(gandiva(), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_REVERT);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_REVERT);
    cr_assert_eq(d->assign[0].gpus, 1, "the first keeps the GPU");
    cr_assert_eq(d->assign[1].gpus, 0);
    cr_assert(d->assign[1].suspended, "the second is suspended, holding no GPU");
    cr_assert_eq(d->packed_gpus, 0);
    sched_decision_destroy(d);
}

Test(gandiva, packs_light_jobs_at_most_two_per_gpu_and_never_after_a_revert)
{
    static struct fx f;

    fx_init(&f, 1, 1);
    f.snap.gpu_mem_bytes = 16e9;
    for (int i = 0; i < 3; i++)
        one_gpu_job(&f, i + 1, 0.3)->gpu_mem_bytes = 4e9;
    struct sched_decision *d = sched_decide(gandiva(), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_PACK);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_PACK);
    cr_assert_eq(d->assign[1].packed_with, 1);
    cr_assert_eq(d->assign[2].gpus, 0, "a GPU holds at most two jobs");
    cr_assert_eq(d->used, 1);
    sched_decision_destroy(d);

    f.jobs[1].gpu_mem_bytes = 13e9; /* 17 GB > 16 GB: job 3 goes instead */
    d = sched_decide(gandiva(), &f.snap);
    cr_assert_eq(d->assign[1].gpus, 0);
    cr_assert_eq(d->assign[2].pack, SCHED_PACK_PACK);
    sched_decision_destroy(d);

    f.jobs[2].pack_reverted = 1;
    f.jobs[1].gpu_util = 0.9; /* too heavy to try */
    d = sched_decide(gandiva(), &f.snap);
    cr_assert_eq(d->packed_gpus, 0);
    sched_decision_destroy(d);
}

Test(gandiva, migration_gathers_a_spread_job)
{
    static struct fx f;

    fx_init(&f, 2, 4);
    struct sched_job *spread = fx_job(&f, 1, 2), *small = fx_job(&f, 2, 1);
    spread->elastic = small->elastic = 0;
    fx_hold(&f, spread, 0, 3, 1);
    fx_hold(&f, spread, 1, 0, 1);
    fx_hold(&f, small, 0, 0, 1);
    struct sched_decision *d = sched_decide(gandiva(), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].gpus, 2);
    cr_assert_eq(d->assign[0].slots[0].node, d->assign[0].slots[1].node, "on one node now");
    cr_assert(d->assign[0].migrated);
    cr_assert_eq(d->assign[0].suspended, 0);
    sched_decision_destroy(d);
}

Test(gandiva, feasible_and_deterministic_with_packing_on_random_snapshots)
{
    static struct fx f;
    uint64_t rng = UINT64_C(0x2545f4914f6cdd1d);

    for (int round = 0; round < 100; round++) {
        fx_random(&f, &rng);
        f.snap.quantum_s = fx_between(&rng, 0, 1) ? 60.0 : 0.0;
        for (size_t i = 0; i < f.snap.njobs; i++) {
            f.jobs[i].gpu_util = 0.05 * fx_between(&rng, 0, 20);
            f.jobs[i].suspended = f.jobs[i].cur_gpus == 0 && fx_between(&rng, 0, 1);
            f.jobs[i].last_change_time = f.snap.now - fx_between(&rng, 0, 120);
        }
        struct sched_decision *a = sched_decide(gandiva(), &f.snap);
        struct sched_decision *b = sched_decide(gandiva(), &f.snap);
        fx_check_feasible(&f.snap, a);
        cr_assert_eq(a->packed_gpus, b->packed_gpus);
        for (size_t i = 0; i < a->njobs; i++) {
            cr_assert_eq(a->assign[i].gpus, b->assign[i].gpus);
            cr_assert_eq(a->assign[i].pack, b->assign[i].pack);
            cr_assert_eq(a->assign[i].packed_with, b->assign[i].packed_with);
        }
        sched_decision_destroy(a);
        sched_decision_destroy(b);
    }
}

Test(gandiva, a_suspended_job_resumes_on_the_node_holding_its_state)
{
    static struct fx f;

    for (int home = 0; home < 2; home++) {
        fx_init(&f, 2, 1);
        struct sched_job *a = one_gpu_job(&f, 1, 0), *b = one_gpu_job(&f, 2, 0);
        a->suspended = a->has_home = 1;
        a->home_node = home;
        a->last_change_time = f.snap.now - 60;
        (void)b;
        struct sched_decision *d = sched_decide(gandiva(), &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_eq(d->assign[0].gpus, 1);
        cr_assert(d->assign[0].resumed);
        cr_assert_eq(d->assign[0].slots[0].node, home, "resumed at home (node %d)", home);
        cr_assert_eq(d->assign[1].slots[0].node, 1 - home);
        sched_decision_destroy(d);
    }
}
