/* ringmaster's packing (policies/ringmaster.c, policies/pack.c): a waiting light
 * job packed onto a lone 1-GPU job, never when a utilisation is unknown or
 * high, after a revert or beyond memory; a losing pair reverted, a winning
 * or unmeasured one kept, never a third job on a GPU; a pair unpacked when
 * GPUs are free; a pair whose GPU goes to its second job kept in place;
 * random snapshots with pairs feasible, valid and deterministic. */
#include "sched_fixture.h"

static const struct sched_policy_ops *rm(void)
{
    const struct sched_policy_ops *p = sched_policy_find("ringmaster");

    cr_assert_not_null(p);
    return p;
}

/* An elastic job (ResNet model) that ringmaster starts on 1 GPU. */
static struct sched_job *light_job(struct fx *f, int64_t id, double util, double epochs)
{
    struct sched_job *j = fx_job(f, id, 1);

    j->gpu_util = util;
    j->remaining_epochs = epochs;
    return j;
}

/* Applies d to the fixture as the simulator does (no time passes); a job
 * given more GPUs than the fixture holds slots for waits instead. */
static void apply(struct fx *f, const struct sched_decision *d)
{
    for (size_t i = 0; i < d->njobs; i++) {
        struct sched_job *j = &f->jobs[i];
        const struct sched_assignment *a = &d->assign[i];
        int n = a->gpus <= 64 ? a->gpus : 0;
        if (a->changed)
            j->last_change_time = f->snap.now;
        for (int k = 0; k < n; k++)
            f->slots[i][k] = a->slots[k];
        j->cur_gpus = n;
        j->packed = a->pack == SCHED_PACK_PACK || a->pack == SCHED_PACK_KEEP;
        j->packed_with = j->packed ? a->packed_with : 0;
        j->pack_reverted |= a->pack == SCHED_PACK_REVERT;
        if (!j->packed)
            j->rate_packed = 0;
    }
}

static struct sched_decision *decide(struct fx *f)
{
    char err[160];

    cr_assert_eq(sched_validate(&f->snap, err, sizeof(err)), 0, "%s", err);
    struct sched_decision *d = sched_decide(rm(), &f->snap);
    fx_check_feasible(&f->snap, d);
    return d;
}

/* Jobs 1 and 2 packed on the only GPU of one node, with measured rates r1, r2
 * (alone: 10 each; 0: not measured). */
static void packed_pair(struct fx *f, double r1, double r2, double e1, double e2)
{
    fx_init(f, 1, 1);
    struct sched_job *a = light_job(f, 1, 0.4, e1), *b = light_job(f, 2, 0.4, e2);
    fx_hold(f, a, 0, 0, 1);
    fx_hold(f, b, 0, 0, 1);
    a->packed = b->packed = 1;
    a->packed_with = 2;
    b->packed_with = 1;
    a->last_change_time = b->last_change_time = 0;
    a->rate_alone = b->rate_alone = 10;
    a->rate_packed = r1;
    b->rate_packed = r2;
}

Test(ringmaster_pack, packs_the_shortest_waiting_light_job_onto_the_running_one)
{
    static struct fx f;

    fx_init(&f, 1, 1);
    light_job(&f, 1, 0.5, 50);
    light_job(&f, 2, 0.3, 400);
    light_job(&f, 3, 0.3, 200);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 1, "the shortest job runs");
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_PACK);
    cr_assert_eq(d->assign[2].pack, SCHED_PACK_PACK, "the shorter waiting job is packed");
    cr_assert_eq(d->assign[2].packed_with, 1);
    cr_assert_eq(d->assign[0].packed_with, 3);
    cr_assert_eq(d->assign[1].gpus, 0, "a GPU holds at most two jobs");
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_NONE);
    cr_assert_eq(d->used, 1);
    cr_assert_eq(d->packed_gpus, 1);
    apply(&f, d);
    sched_decision_destroy(d);

    /* Next round: the pair is kept (not measured yet), the third job waits. */
    d = decide(&f);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->assign[2].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->assign[1].gpus, 0, "never a third job on the GPU");
    cr_assert_eq(d->nchanged, 0);
    sched_decision_destroy(d);
}

/* One GPU, job 1 runs; job 2 waits: packed or not, by what is set on them. */
static int packs(double util1, double util2, int reverted, double mem2)
{
    static struct fx f;

    fx_init(&f, 1, 1);
    f.snap.gpu_mem_bytes = 16e9;
    struct sched_job *a = light_job(&f, 1, util1, 50), *b = light_job(&f, 2, util2, 100);
    a->gpu_mem_bytes = 8e9;
    b->gpu_mem_bytes = mem2;
    b->pack_reverted = reverted;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 1);
    int packed = d->assign[1].pack == SCHED_PACK_PACK;
    cr_assert_eq(d->packed_gpus, packed);
    sched_decision_destroy(d);
    return packed;
}

Test(ringmaster_pack, not_when_utilisation_unknown_or_high_reverted_or_out_of_memory)
{
    cr_assert(packs(0.4, 0.4, 0, 8e9), "light and fitting: packed");
    cr_assert(!packs(0.0, 0.4, 0, 8e9), "host utilisation unknown");
    cr_assert(!packs(0.4, 0.0, 0, 8e9), "waiting job's utilisation unknown");
    cr_assert(!packs(0.4, 0.85, 0, 8e9), "above SCHED_PACK_MAX_UTIL");
    cr_assert(!packs(0.9, 0.4, 0, 8e9), "host above SCHED_PACK_MAX_UTIL");
    cr_assert(!packs(0.4, 0.4, 1, 8e9), "reverted before");
    cr_assert(!packs(0.4, 0.4, 0, 9e9), "17 GB on a 16 GB GPU");
}

Test(ringmaster_pack, not_a_job_that_starts_on_more_than_one_gpu_nor_with_plans)
{
    static struct fx f;

    fx_init(&f, 1, 1);
    light_job(&f, 1, 0.3, 50);
    struct sched_job *big = light_job(&f, 2, 0.3, 100);
    big->min_gpus = 2;
    big->requested_gpus = 2;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->packed_gpus, 0, "min_gpus 2: never packed");
    sched_decision_destroy(d);

    big->min_gpus = 1;
    big->requested_gpus = 1;
    big->plan.supported = 1u << PLAN_DP;
    big->plan.requested = (struct plan_choice){PLAN_DP, 1, 1, 0, 0};
    big->plan.params_b = 0.1;
    d = decide(&f);
    cr_assert_eq(d->packed_gpus, 0, "a job with plan information is not packed");
    sched_decision_destroy(d);
}

Test(ringmaster_pack, a_losing_pair_is_reverted_and_never_packed_again)
{
    static struct fx f;

    packed_pair(&f, 4, 4.5, 50, 100); /* 0.85 < 1.05 */
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_REVERT);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_REVERT);
    cr_assert_eq(d->assign[0].packed_with, 2);
    cr_assert_eq(d->assign[1].packed_with, 1);
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 1, "one GPU, no longer shared");
    cr_assert_eq(d->packed_gpus, 0);
    apply(&f, d);
    sched_decision_destroy(d);
    cr_assert(f.jobs[0].pack_reverted && f.jobs[1].pack_reverted);

    d = decide(&f);
    cr_assert_eq(d->packed_gpus, 0, "reverted: never packed again");
    sched_decision_destroy(d);
}

Test(ringmaster_pack, a_winning_or_unmeasured_pair_is_kept_in_place)
{
    static struct fx f;

    packed_pair(&f, 8, 8, 50, 100); /* 1.6 */
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->nchanged, 0);
    cr_assert_eq(d->used, 1);
    cr_assert_eq(d->packed_gpus, 1);
    sched_decision_destroy(d);

    packed_pair(&f, 0, 0, 50, 100);
    d = decide(&f);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_KEEP, "not measured yet: kept");
    cr_assert_eq(d->nchanged, 0);
    sched_decision_destroy(d);
}

Test(ringmaster_pack, the_pairs_gpu_given_to_its_second_job_keeps_the_pair)
{
    static struct fx f;

    /* The second job is far shorter and measured at 0.5 of its rate: the
     * allocator gives it the GPU and not the first; the pair stays as it is. */
    packed_pair(&f, 8, 5, 1000, 5);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_KEEP);
    cr_assert_eq(d->nchanged, 0, "nobody moves");
    cr_assert_eq(d->assign[0].migrated + d->assign[1].migrated, 0);
    sched_decision_destroy(d);
}

Test(ringmaster_pack, a_pair_unpacks_when_gpus_are_free)
{
    static struct fx f;

    packed_pair(&f, 8, 8, 50, 100);
    f.nodes[0].ngpus = 4;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->packed_gpus, 0);
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_NONE);
    cr_assert_eq(d->assign[1].pack, SCHED_PACK_NONE);
    cr_assert_geq(d->assign[1].gpus, 1, "the second runs on GPUs of its own");
    cr_assert(d->assign[1].changed);
    for (int g = 0; g < d->assign[1].gpus; g++)
        cr_assert_neq(d->assign[1].slots[g].gpu, d->assign[0].slots[0].gpu);
    sched_decision_destroy(d);
}

Test(ringmaster_pack, a_resized_first_job_ends_the_pair)
{
    static struct fx f;

    packed_pair(&f, 8, 8, 5000, 100);
    f.nodes[0].ngpus = 8;
    f.jobs[0].max_gpus = 8;
    struct sched_decision *d = decide(&f);
    cr_assert_gt(d->assign[0].gpus, 1, "the first grows");
    cr_assert_eq(d->assign[0].pack, SCHED_PACK_NONE, "so it is no longer packed");
    cr_assert_eq(d->packed_gpus, 0);
    sched_decision_destroy(d);
}

/* Random snapshots, then some waiting light jobs packed onto running 1-GPU
 * ones: valid, feasible, deterministic, and valid again once applied. */
Test(ringmaster_pack, feasible_valid_and_deterministic_on_random_snapshots_with_pairs)
{
    static struct fx f;
    uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);
    long packed = 0;

    for (int round = 0; round < 150; round++) {
        fx_random(&f, &rng);
        for (size_t i = 0; i < f.snap.njobs; i++)
            f.jobs[i].gpu_util = 0.05 * fx_between(&rng, 0, 20);
        for (size_t h = 0; h < f.snap.njobs; h++) {
            struct sched_job *host = &f.jobs[h];
            if (host->cur_gpus != 1 || host->packed || fx_between(&rng, 0, 1))
                continue;
            for (size_t g = 0; g < f.snap.njobs; g++) {
                struct sched_job *guest = &f.jobs[g];
                if (guest->cur_gpus || guest->packed || guest->requested_gpus != 1)
                    continue;
                fx_hold(&f, guest, host->slots[0].node, host->slots[0].gpu, 1);
                guest->packed = host->packed = 1;
                guest->packed_with = host->id;
                host->packed_with = guest->id;
                guest->rate_alone = host->rate_alone = 10;
                guest->rate_packed = fx_between(&rng, 0, 10);
                host->rate_packed = fx_between(&rng, 0, 10);
                break;
            }
        }
        struct sched_decision *a = decide(&f), *b = decide(&f);
        packed += a->packed_gpus;
        for (size_t i = 0; i < a->njobs; i++) {
            cr_assert_eq(a->assign[i].gpus, b->assign[i].gpus);
            cr_assert_eq(a->assign[i].pack, b->assign[i].pack);
            cr_assert_eq(a->assign[i].packed_with, b->assign[i].packed_with);
        }
        apply(&f, a);
        char err[160];
        cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), 0, "applied: %s", err);
        sched_decision_destroy(a);
        sched_decision_destroy(b);
    }
    cr_assert_gt(packed, 0, "the random snapshots packed something");
}
