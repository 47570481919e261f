/* plan.c, placement_multi.c and the plan-aware policies: memory fit, offload,
 * the guarantee, host resources never over-committed, one GPU model per job,
 * the faster model preferred, and determinism on random heterogeneous,
 * multi-resource snapshots with plan-carrying jobs. */
#include <math.h>

#include "sched_fixture.h"
#include "learn.h"

/* A GPT-like model of p billion parameters (sim/template.c's gpt_speed). */
static struct speed_model gpt_model(double p)
{
    struct speed_model m;

    memset(&m, 0, sizeof(m));
    m.theta[0] = 0.02;
    m.theta[1] = 0.15 * p;
    m.theta[2] = 1e-4;
    m.theta[3] = 0.02 * p;
    m.theta[4] = 0.001 * p;
    m.theta[5] = 0.3 * p;
    m.batch_per_gpu = 8;
    m.dataset_size = 500 * 8 * 8;
    m.fitted = 1;
    m.gpus_per_node = 8;
    return m;
}

static struct plan_spec all_plans(double p, double act, int kind, int cores)
{
    struct plan_spec ps = { .params_b = p, .act_gb = act, .supported = (1u << PLAN_NKINDS) - 1,
                            .max_tp = 8, .max_pp = 4 };

    ps.requested = (struct plan_choice){ .kind = kind, .tp = 1, .pp = 1, .cpu_cores = cores };
    return ps;
}

Test(plan, memory_fit_excludes_plans_that_do_not_fit)
{
    struct speed_model sp = gpt_model(13);
    struct plan_spec ps = all_plans(13, 12, PLAN_OFFLOAD, 8);
    struct plan_choice dp = { PLAN_DP, 1, 1, 0, 0 }, z3 = { PLAN_ZERO3, 1, 1, 0, 0 };
    struct plan_choice off = { PLAN_OFFLOAD, 1, 1, 8, 0 }, best;

    /* 13B on one 40 GB GPU: DP needs 208 GB, ZeRO-3 too (d = 1), offload 38. */
    cr_assert(isinf(plan_step_time(&sp, &ps, &dp, 1, 1, 1, 40)));
    cr_assert(isinf(plan_step_time(&sp, &ps, &z3, 1, 1, 1, 40)));
    cr_assert(isfinite(plan_step_time(&sp, &ps, &off, 1, 1, 1, 40)));
    cr_assert_gt(plan_best(&sp, &ps, 1, 1, 40, 0, 0, &best), 0);
    cr_assert_eq(best.kind, PLAN_OFFLOAD, "only offload fits one GPU, got %s",
                 plan_kind_name(best.kind));
    /* On 16 GPUs ZeRO-3 fits (13 + 12 GB) and beats offload's host Adam. */
    cr_assert_gt(plan_best(&sp, &ps, 16, 1, 40, 0, 0, &best), 0);
    cr_assert_neq(best.kind, PLAN_OFFLOAD);
    cr_assert_leq(plan_gpu_mem_gb(&ps, &best, 16), 40.0);
    /* Nothing fits a 12 GB GPU on one GPU. */
    cr_assert_eq(plan_best(&sp, &ps, 1, 1, 12, 0, 0, &best), 0);
    /* tp * pp must divide w. */
    struct plan_choice tp4 = { PLAN_DP, 4, 1, 0, 0 };
    cr_assert(isinf(plan_step_time(&sp, &ps, &tp4, 6, 1, 1, 80)));
}

Test(plan, offload_trades_gpu_memory_for_host_traffic)
{
    struct speed_model sp = gpt_model(2.7);
    struct plan_spec ps = all_plans(2.7, 10, PLAN_ZERO2, 0);
    struct plan_choice z2 = { PLAN_ZERO2, 1, 1, 0, 0 }, off = { PLAN_OFFLOAD, 1, 1, 8, 0 };

    plan_demand(&ps, &z2, 8);
    plan_demand(&ps, &off, 8);
    cr_assert_lt(plan_gpu_mem_gb(&ps, &off, 8), plan_gpu_mem_gb(&ps, &z2, 8));
    cr_assert_gt(off.host_mem_gb, z2.host_mem_gb);
    cr_assert_gt(off.cpu_cores, z2.cpu_cores);
    double t_z2 = plan_step_time(&sp, &ps, &z2, 8, 1, 1, 80);
    double t_off = plan_step_time(&sp, &ps, &off, 8, 1, 1, 80);
    cr_assert_gt(t_off, t_z2, "offload pays PCIe and host Adam: %g vs %g", t_off, t_z2);
    /* More cores, a faster host-side step. */
    struct plan_choice off16 = off;
    off16.cpu_cores = 16;
    cr_assert_lt(plan_step_time(&sp, &ps, &off16, 8, 1, 1, 80), t_off);
    /* A host limit of 4 cores per GPU keeps the 8- and 16-core offloads out. */
    struct plan_choice best;
    plan_best(&sp, &ps, 8, 1, 80, 4, 0, &best);
    cr_assert(best.kind != PLAN_OFFLOAD || best.cpu_cores <= 4);
}

Test(plan, no_plan_info_is_plain_data_parallel)
{
    struct speed_model sp = fx_resnet_model();
    struct plan_spec none = { 0 };
    struct plan_choice dp = { 0 }, best;

    for (int w = 1; w <= 16; w *= 2) {
        cr_assert_eq(plan_epochs_per_second(&sp, &none, &dp, w, 1, 0, 0),
                     speed_epochs_per_second(&sp, w));
        cr_assert_eq(plan_best(&sp, &none, w, 1, 0, 0, 0, &best), speed_epochs_per_second(&sp, w));
    }
    /* A faster GPU speeds up compute only. */
    double r1 = plan_epochs_per_second(&sp, &none, &dp, 4, 1, 1, 0);
    double r2 = plan_epochs_per_second(&sp, &none, &dp, 4, 1, 2, 0);
    cr_assert(r2 > r1 && r2 < 2 * r1 + 1e-12);
}

/* plan_dp_rate() from a count's features is the number plan_epochs_per_second() (what
 * plan_best() without plan information went through) gives, bit for bit: any count, packed
 * or on one node, reference and other GPU speeds (and the ones read as 1), and 0 where the
 * model cannot run. */
Test(plan, dp_rate_from_features_is_the_plain_data_parallel_rate)
{
    static const double speeds[] = {1.0, 2.0, 0.37, 0.0, -1.0, INFINITY, NAN};
    static const int per_node[] = {0, 4, 8};
    struct plan_spec none = { 0 };
    struct plan_choice dp = { 0 }, best;

    for (size_t g = 0; g < sizeof(per_node) / sizeof(per_node[0]); g++) {
        struct speed_model sp = fx_resnet_model();
        sp.gpus_per_node = per_node[g];
        for (size_t s = 0; s < sizeof(speeds) / sizeof(speeds[0]); s++) {
            for (int w = 0; w <= 130; w++) {
                double f[SPEED_NFEATURES];
                int nodes = speed_packed_nodes(&sp, w);
                speed_features_placed(w, nodes, sp.batch_per_gpu, f);
                double want = plan_epochs_per_second(&sp, &none, &dp, w, nodes, speeds[s], 0);
                double got = plan_dp_rate(&sp, w, f, speeds[s]);
                cr_assert(memcmp(&want, &got, sizeof(got)) == 0,
                          "w %d speed %g per node %d: %.17g, not %.17g", w, speeds[s], per_node[g],
                          got, want);
                got = plan_best(&sp, NULL, w, speeds[s], 0, 0, 0, &best);
                cr_assert(memcmp(&want, &got, sizeof(got)) == 0, "plan_best, w %d", w);
            }
        }
    }
    struct speed_model unfitted = fx_resnet_model();
    double f[SPEED_NFEATURES];
    unfitted.fitted = 0;
    speed_features_placed(4, 1, unfitted.batch_per_gpu, f);
    cr_assert_eq(plan_dp_rate(&unfitted, 4, f, 1.0), 0.0);
}

/* Adds a gpt-like job with plan info to f. */
static struct sched_job *plan_job(struct fx *f, int64_t id, double p, int kind, int requested)
{
    struct sched_job *j = fx_job(f, id, requested);

    j->speed = gpt_model(p);
    j->plan = all_plans(p, p > 5 ? 12 : 6, kind, kind == PLAN_OFFLOAD ? 8 : 0);
    j->max_gpus = 32;
    return j;
}

static const char *const plan_policies[] = { "rubick", "ringmaster" };

Test(plan, policies_keep_the_guarantee_on_random_jobs)
{
    static struct fx f;
    uint64_t rng = 12345;
    static const double sizes[] = { 0.35, 1.3, 2.7, 6.7, 13 };

    for (int round = 0; round < 40; round++) {
        fx_init(&f, 4, 8);
        int n = fx_between(&rng, 1, 12);
        for (int i = 0; i < n; i++) {
            double p = sizes[fx_between(&rng, 0, 4)];
            struct sched_job *j = plan_job(&f, 1 + i, p, fx_between(&rng, 0, PLAN_NKINDS - 1),
                                           1 << fx_between(&rng, 0, 4));
            j->remaining_epochs = fx_between(&rng, 1, 50);
            j->plan.max_tp = fx_between(&rng, 0, 1) ? 8 : 1;
        }
        for (size_t p = 0; p < 2; p++) {
            struct sched_decision *d = sched_decide(sched_policy_find(plan_policies[p]), &f.snap);
            fx_check_feasible(&f.snap, d);
            for (size_t i = 0; i < d->njobs; i++) {
                const struct sched_assignment *a = &d->assign[i];
                const struct sched_job *j = &f.jobs[i];
                if (a->gpus == 0)
                    continue;
                double got = plan_epochs_per_second(&j->speed, &j->plan, &a->plan, a->gpus,
                                                    (a->gpus + 7) / 8, 1, 0);
                double asked = plan_requested_rate(&j->speed, &j->plan, j->requested_gpus, 0);
                cr_assert_geq(got, asked * (1 - 1e-9), "%s round %d job %zu: %g < %g",
                              plan_policies[p], round, i, got, asked);
            }
            sched_decision_destroy(d);
        }
    }
}

/* Asserts host resources within every advertising node and one model per job. */
static void check_host_and_models(const struct sched_snapshot *snap,
                                  const struct sched_decision *d, const char *who)
{
    double cores[FX_MAX_NODES] = { 0 }, mem[FX_MAX_NODES] = { 0 };

    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        for (int k = 0; k < a->gpus; k++) {
            int n = a->slots[k].node;
            cr_assert_eq(snap->nodes[n].gpu_model, snap->nodes[a->slots[0].node].gpu_model,
                         "%s: job %zu spans GPU models", who, i);
            cr_assert_eq(a->gpu_model, snap->nodes[n].gpu_model, "%s: job %zu model", who, i);
            cores[n] += a->plan.cpu_cores;
            mem[n] += a->plan.host_mem_gb;
        }
    }
    for (size_t n = 0; n < snap->nnodes; n++) {
        if (snap->nodes[n].cpu_cores > 0)
            cr_assert_leq(cores[n], snap->nodes[n].cpu_cores + 1e-9, "%s: node %zu cores", who, n);
        if (snap->nodes[n].host_mem_gb > 0)
            cr_assert_leq(mem[n], snap->nodes[n].host_mem_gb + 1e-9, "%s: node %zu memory", who,
                          n);
    }
}

static int same(const struct sched_decision *a, const struct sched_decision *b)
{
    for (size_t i = 0; i < a->njobs; i++) {
        const struct sched_assignment *x = &a->assign[i], *y = &b->assign[i];
        if (x->gpus != y->gpus || !plan_same(&x->plan, &y->plan) ||
            memcmp(x->slots, y->slots, (size_t)x->gpus * sizeof(*x->slots)))
            return 0;
    }
    return 1;
}

/* fx_random, then: two GPU models with host resources, and a third of the
 * jobs carrying plans (offload-heavy, to stress the host limits). */
static void random_hetero(struct fx *f, uint64_t *rng)
{
    fx_random(f, rng);
    for (size_t n = 0; n < f->snap.nnodes; n++) {
        int fast = fx_between(rng, 0, 1);
        f->nodes[n].gpu_model = fast ? 2 : 1;
        f->nodes[n].gpu_speed = fast ? 2.0 : 1.0;
        f->nodes[n].gpu_mem_gb = fast ? 80 : 32;
        f->nodes[n].cpu_cores = fx_between(rng, 0, 3) ? 4 * f->nodes[n].ngpus : 0;
        f->nodes[n].host_mem_gb = fx_between(rng, 0, 3) ? 40.0 * f->nodes[n].ngpus : 0;
    }
    for (size_t i = 0; i < f->snap.njobs; i++) {
        struct sched_job *j = &f->jobs[i];
        if (fx_between(rng, 0, 2) || !j->speed.fitted)
            continue;
        double p = fx_between(rng, 0, 1) ? 13 : 2.7;
        struct speed_model m = gpt_model(p);
        j->speed = m;
        j->plan = all_plans(p, 10, fx_between(rng, 0, 1) ? PLAN_OFFLOAD : PLAN_ZERO2, 8);
        j->cur_plan = j->plan.requested;
    }
}

Test(plan, every_policy_respects_host_resources_and_gpu_models, .timeout = 60)
{
    static struct fx f;
    uint64_t rng = UINT64_C(0x1234567) ^ 77;

    for (int round = 0; round < 60; round++) {
        random_hetero(&f, &rng);
        for (size_t p = 0; sched_policy_list()[p]; p++) {
            const struct sched_policy_ops *ops = sched_policy_list()[p];
            struct sched_decision *a = sched_decide(ops, &f.snap);
            struct sched_decision *b = sched_decide(ops, &f.snap);
            fx_check_feasible(&f.snap, a);
            check_host_and_models(&f.snap, a, ops->name);
            cr_assert(same(a, b), "%s not deterministic in round %d", ops->name, round);
            sched_decision_destroy(a);
            sched_decision_destroy(b);
        }
    }
}

Test(plan, the_faster_gpu_model_gets_the_job_that_gains)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    f.nodes[0] = (struct sched_node){ .id = 1, .ngpus = 8, .up = 1, .gpu_model = 1,
                                      .gpu_speed = 1.0, .gpu_mem_gb = 32 };
    f.nodes[1] = (struct sched_node){ .id = 2, .ngpus = 8, .up = 1, .gpu_model = 2,
                                      .gpu_speed = 2.0, .gpu_mem_gb = 80 };
    fx_job(&f, 1, 4)->max_gpus = 8;
    for (size_t p = 0; p < 2; p++) {
        struct sched_decision *d = sched_decide(sched_policy_find(plan_policies[p]), &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_gt(d->assign[0].gpus, 0);
        cr_assert_eq(d->assign[0].gpu_model, 2, "%s put it on model %d", plan_policies[p],
                     d->assign[0].gpu_model);
        sched_decision_destroy(d);
    }
    /* A 13B job whose plans need memory goes to the 80 GB GPUs too. */
    fx_init(&f, 2, 8);
    f.nodes[0] = (struct sched_node){ .id = 1, .ngpus = 8, .up = 1, .gpu_model = 1,
                                      .gpu_speed = 1.0, .gpu_mem_gb = 32 };
    f.nodes[1] = (struct sched_node){ .id = 2, .ngpus = 8, .up = 1, .gpu_model = 2,
                                      .gpu_speed = 1.0, .gpu_mem_gb = 80 };
    plan_job(&f, 1, 13, PLAN_OFFLOAD, 8)->max_gpus = 8;
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[0].gpu_model, 2);
    sched_decision_destroy(d);
}

Test(plan, an_offload_plan_waits_rather_than_over_commit_a_node)
{
    static struct fx f;

    /* One node, 8 GPUs but only 8 cores and 64 GB: fifo's requested offload
     * plans (8 cores per GPU) cannot all run; what runs fits. */
    fx_init(&f, 1, 8);
    f.nodes[0].cpu_cores = 8;
    f.nodes[0].host_mem_gb = 64;
    for (int i = 0; i < 4; i++) {
        struct sched_job *j = plan_job(&f, 1 + i, 2.7, PLAN_OFFLOAD, 1);
        j->elastic = 0;
    }
    for (size_t p = 0; sched_policy_list()[p]; p++) {
        struct sched_decision *d = sched_decide(sched_policy_list()[p], &f.snap);
        fx_check_feasible(&f.snap, d);
        check_host_and_models(&f.snap, d, sched_policy_list()[p]->name);
        sched_decision_destroy(d);
    }
}

/* A plan job learned live, measured at 4 GPUs, may grow to 8 (learn_max_gpus); its guarantee
 * is its requested plan on its 16. Its base is the least count that meets the guarantee, up
 * to its request: the learning cap bounds growth, not the base (it waited for ever under
 * rubick, the simulator's "stuck" on --template plans --speed live). */
Test(plan, a_learning_plan_job_gets_the_base_its_guarantee_needs)
{
    for (size_t p = 0; p < 2; p++) {
        static struct fx f;
        fx_init(&f, 4, 8);
        struct sched_job *j = plan_job(&f, 1, 13, PLAN_OFFLOAD, 16);
        j->elastic = 1;
        j->model_source = SCHED_MODEL_FITTED;
        j->measured_sizes = 1;
        j->measured_max_gpus = 4;
        cr_assert(learn_is_learning(j));
        cr_assert_eq(learn_max_gpus(j), 8);
        struct sched_decision *d = sched_decide(sched_policy_find(plan_policies[p]), &f.snap);
        cr_assert(d);
        fx_check_feasible(&f.snap, d);
        cr_expect_geq(d->assign[0].gpus, 9, "%s gives %d GPUs", plan_policies[p],
                      d->assign[0].gpus);
        sched_decision_destroy(d);
    }
}
