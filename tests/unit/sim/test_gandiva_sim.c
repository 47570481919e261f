/* Gandiva in the simulator: the micro reproductions' shape, packed GPUs
 * holding at most two jobs, suspended jobs holding none, the suspend cost
 * charged, time to the first 100 minibatches, determinism. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "gandiva_micro.h"
#include "options.h"
#include "simulate/simulate.h"
#include "template.h"

Test(gandiva_sim, time_slicing_keeps_throughput_and_shares_fairly)
{
    struct gandiva_micro_timeslice r;
    char err[256];

    cr_assert_eq(gandiva_micro_timeslice(&r, err, sizeof(err)), 0, "%s", err);
    double ratio = r.rate_sliced / r.rate_exclusive;
    cr_assert(ratio > 0.97 && ratio <= 1.0, "sliced / exclusive = %f", ratio);
    cr_assert(r.min_share > 0.64 && r.max_share < 0.67, "shares %f..%f", r.min_share,
              r.max_share);
    cr_assert_gt(r.suspends, 0);
}

Test(gandiva_sim, light_pair_kept_heavy_pair_reverted)
{
    struct gandiva_micro_packing light, heavy;
    char err[256];

    cr_assert_eq(gandiva_micro_packing(0.3, &light, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(light.packs, 1);
    cr_assert_eq(light.reverts, 0);
    cr_assert_gt(light.normalised, 1.5);
    cr_assert_lt(light.sliced, 1.0);
    cr_assert_eq(gandiva_micro_packing(0.8, &heavy, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(heavy.packs, 1);
    cr_assert_eq(heavy.reverts, 1);
    cr_assert_lt(heavy.model, 1.0, "the model says the heavy pair loses");
    cr_assert_lt(heavy.normalised, heavy.sliced + 0.01, "reverted soon: no worse than slicing");
}

struct pack_watch {
    long rounds, shared, suspended;
};

/* At most two jobs per GPU and only as a pair; a suspended job holds nothing. */
static void watch(const struct sched_snapshot *s, const struct sched_decision *d, void *arg)
{
    struct pack_watch *w = arg;
    int count[4] = { 0 };

    w->rounds++;
    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        if (a->suspended) {
            cr_assert_eq(a->gpus, 0);
            w->suspended++;
        }
        for (int g = 0; g < a->gpus; g++)
            count[a->slots[g].gpu]++;
        if (a->gpus > 0 && (a->pack == SCHED_PACK_PACK || a->pack == SCHED_PACK_KEEP))
            w->shared++;
    }
    for (int g = 0; g < 4; g++)
        cr_assert_leq(count[g], 2, "GPU %d holds %d jobs", g, count[g]);
    cr_assert_leq(d->used, 4);
    (void)s;
}

static struct simulate_result *run_ten(const char *policy, double suspend_cost, double util,
                                       struct pack_watch *w)
{
    static struct simulate_job_spec jobs[10];
    static struct sched_node node = { .id = 1, .ngpus = 4, .up = 1 };
    struct template t;
    struct simulate_config cfg;
    char err[256];

    cr_assert_eq(template_get("resnet110-steps", &t, err, sizeof(err)), 0, "%s", err);
    for (int i = 0; i < 10; i++)
        jobs[i] = (struct simulate_job_spec){ .id = i + 1, .submit_time = 100.0 * i,
                                              .requested_gpus = 1, .min_gpus = 1, .max_gpus = 1,
                                              .epochs = 2 + i % 3, .speed = t.speed,
                                              .gpu_util = util * (0.5 + 0.1 * (i % 6)) };
    simulate_config_init(&cfg);
    cfg.nodes = &node;
    cfg.nnodes = 1;
    cfg.policy = sched_policy_find(policy);
    cfg.suspend_cost_s = suspend_cost;
    struct simulate_result *r = simulate_run(&cfg, jobs, 10, watch, w, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    return r;
}

Test(gandiva_sim, packed_gpus_hold_two_jobs_at_most_and_runs_are_deterministic)
{
    struct pack_watch w = { 0 }, w2 = { 0 };
    struct simulate_result *a = run_ten("gandiva", 1.0, 0.6, &w);
    struct simulate_result *b = run_ten("gandiva", 1.0, 0.6, &w2);

    cr_assert_gt(a->packs, 0);
    cr_assert_eq(a->max_jobs_on_gpu, 2);
    cr_assert_gt(w.shared, 0);
    cr_assert_leq(a->max_gpus_in_use, 4);
    cr_assert(a->utilization > 0 && a->utilization <= 1.0);
    for (size_t i = 0; i < a->njobs; i++) {
        cr_assert_eq(a->jobs[i].finish_time, b->jobs[i].finish_time);
        cr_assert_eq(a->jobs[i].first100_s, b->jobs[i].first100_s);
        cr_assert_geq(a->jobs[i].start_time, a->jobs[i].submit_time);
    }
    simulate_result_destroy(a);
    simulate_result_destroy(b);
}

Test(gandiva_sim, suspend_cost_is_charged_and_first100_is_measured)
{
    struct pack_watch w = { 0 };
    struct simulate_result *free_cost = run_ten("gandiva", 0.0, 0.0, &w);
    struct simulate_result *costly = run_ten("gandiva", 5.0, 0.0, &w);
    struct simulate_result *fifo = run_ten("fifo", 0.0, 0.0, &w);
    struct template t;
    char err[256];

    cr_assert_gt(costly->suspends, 0);
    cr_assert_eq(costly->packs, 0, "utilisation unknown: never packed");
    cr_assert_gt(costly->makespan_s, free_cost->makespan_s);
    cr_assert_leq(costly->makespan_s, free_cost->makespan_s + 5.0 * (double)costly->suspends);
    cr_assert_eq(template_get("resnet110-steps", &t, err, sizeof(err)), 0, "%s", err);
    double hundred = 100.0 * speed_step_time(&t.speed, 1);
    cr_assert_float_eq(fifo->jobs[0].first100_s, hundred, 1e-6, "lone job: 100 steps");
    cr_assert_lt(free_cost->avg_first100_s, fifo->avg_first100_s, "slicing starts jobs sooner");
    simulate_result_destroy(free_cost);
    simulate_result_destroy(costly);
    simulate_result_destroy(fifo);
}
