/* ringmaster's packing in the simulator: every round valid and within the
 * cluster (a GPU holds two jobs at most, and only a pair), light pairs packed
 * and heavy pairs reverted, runs deterministic, and no packing at all when
 * utilisations are unknown. */
#include <criterion/criterion.h>
#include <string.h>

#include "simulate/simulate.h"
#include "template.h"

#define NGPUS 4
#define NJOBS 24

struct rm_watch {
    long rounds, shared, reverts;
};

/* Each round (sched_decide has validated its snapshot, the simulator checked
 * the decision): no GPU holds more than two jobs (and two only as a pair),
 * and the decision uses no more GPUs than the cluster has. The snapshot's
 * slots are stale here (the round has been applied). */
static void watch(const struct sched_snapshot *s, const struct sched_decision *d, void *arg)
{
    struct rm_watch *w = arg;
    int count[NGPUS] = {0};
    (void)s;
    w->rounds++;
    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        int shared = a->pack == SCHED_PACK_PACK || a->pack == SCHED_PACK_KEEP;
        for (int g = 0; g < a->gpus; g++)
            count[a->slots[g].gpu]++;
        w->shared += shared;
        w->reverts += a->pack == SCHED_PACK_REVERT;
        if (shared)
            cr_assert_eq(a->gpus, 1, "only 1-GPU jobs share a GPU");
    }
    for (int g = 0; g < NGPUS; g++)
        cr_assert_leq(count[g], 2, "GPU %d holds %d jobs", g, count[g]);
    cr_assert_leq(d->used, NGPUS, "capacity exceeded");
    cr_assert_leq(d->used + d->packed_gpus, NGPUS * 2);
}

/* NJOBS elastic resnet110 jobs (1..4 GPUs) on one 4-GPU node, utilisation
 * lo + (hi - lo) * (i % 5) / 4 (0: unknown). */
static struct simulate_result *run_on(double lo, double hi, double gpu_speed, struct rm_watch *w)
{
    static struct simulate_job_spec jobs[NJOBS];
    static struct sched_node node = {.id = 1, .ngpus = NGPUS, .up = 1};
    struct template t;
    struct simulate_config cfg;
    char err[256];

    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    node.gpu_speed = gpu_speed;
    for (int i = 0; i < NJOBS; i++)
        jobs[i] =
            (struct simulate_job_spec){.id = i + 1,
                                       .submit_time = 30.0 * i,
                                       .requested_gpus = 1,
                                       .min_gpus = 1,
                                       .max_gpus = 4,
                                       .elastic = 1,
                                       .epochs = 10 + 10 * ((i * 7) % 5),
                                       .speed = t.speed,
                                       .gpu_util = hi > 0 ? lo + (hi - lo) * (i % 5) / 4.0 : 0.0};
    simulate_config_init(&cfg);
    cfg.nodes = &node;
    cfg.nnodes = 1;
    cfg.policy = sched_policy_find("ringmaster");
    cfg.min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S;
    memset(w, 0, sizeof(*w));
    struct simulate_result *r = simulate_run(&cfg, jobs, NJOBS, watch, w, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    return r;
}

static struct simulate_result *run(double lo, double hi, struct rm_watch *w)
{
    return run_on(lo, hi, 0.0, w);
}

Test(ringmaster_pack_sim, light_jobs_pack_within_capacity_and_runs_are_deterministic)
{
    struct rm_watch w, w2;
    struct simulate_result *a = run(0.2, 0.5, &w), *b = run(0.2, 0.5, &w2);

    cr_assert_gt(a->packs, 0, "light jobs that wait are packed");
    cr_assert_eq(a->max_jobs_on_gpu, 2);
    cr_assert_gt(w.shared, 0);
    cr_assert_eq(a->pack_reverts, 0, "light pairs gain (model: >= 1.6 at U <= 1)");
    cr_assert_leq(a->max_gpus_in_use, NGPUS);
    cr_assert_eq(a->njobs, (size_t)NJOBS);
    for (size_t i = 0; i < a->njobs; i++) {
        cr_assert_eq(a->jobs[i].finish_time, b->jobs[i].finish_time);
        cr_assert_geq(a->jobs[i].start_time, a->jobs[i].submit_time);
    }
    simulate_result_destroy(a);
    simulate_result_destroy(b);
}

Test(ringmaster_pack_sim, heavy_pairs_are_reverted_and_unknown_utilisation_never_packs)
{
    struct rm_watch w;
    struct simulate_result *heavy = run(0.75, 0.8, &w);

    cr_assert_gt(heavy->packs, 0);
    cr_assert_gt(heavy->pack_reverts, 0, "U >= 1.5: the pair loses and is reverted");
    cr_assert_leq(heavy->max_gpus_in_use, NGPUS);
    simulate_result_destroy(heavy);

    struct simulate_result *none = run(0, 0, &w);
    cr_assert_eq(none->packs, 0);
    cr_assert_eq(none->max_jobs_on_gpu, 1);
    cr_assert_eq(w.shared, 0);
    simulate_result_destroy(none);
}

/* The rates a pair is judged by are both measured on the GPU it runs on: on a GPU twice as
 * fast as the reference, a losing pair must still lose (it once compared its packed rate on
 * the fast GPU with its alone rate on the reference one, and kept every pair). */
Test(ringmaster_pack_sim, heavy_pairs_are_reverted_on_a_faster_gpu_model_too)
{
    struct rm_watch w;
    struct simulate_result *heavy = run_on(0.75, 0.8, 2.0, &w);

    cr_assert_gt(heavy->packs, 0);
    cr_assert_gt(heavy->pack_reverts, 0, "the pair loses on an A100 as on a V100");
    simulate_result_destroy(heavy);
}
