/* plan_demand() keeps the host cores an offloading plan was given (4, 8 or 16 per GPU), so
 * plan_best() can choose among them: more cores, a faster host-side Adam step. */
#include "sched_fixture.h"

static struct plan_spec offload_only(double p)
{
    struct plan_spec ps = {
        .params_b = p, .act_gb = 2, .supported = 1u << PLAN_OFFLOAD, .max_tp = 1, .max_pp = 1};

    ps.requested = (struct plan_choice){.kind = PLAN_OFFLOAD, .tp = 1, .pp = 1};
    return ps;
}

Test(plan_offload, demand_keeps_the_cores_it_was_given)
{
    struct plan_spec ps = offload_only(4);
    static const int given[] = {4, 8, 16, 0, 3, 32};
    static const int kept[] = {4, 8, 16, 8, 8, 8};

    for (size_t k = 0; k < sizeof(given) / sizeof(given[0]); k++) {
        struct plan_choice c = {.kind = PLAN_OFFLOAD, .tp = 1, .pp = 1, .cpu_cores = given[k]};
        plan_demand(&ps, &c, 1);
        cr_assert_eq(c.cpu_cores, kept[k], "given %d cores, got %d", given[k], c.cpu_cores);
    }
}

Test(plan_offload, best_takes_the_most_cores_the_host_allows)
{
    struct speed_model sp = fx_resnet_model();
    struct plan_spec ps = offload_only(4);
    struct plan_choice best;

    cr_assert_gt(plan_best(&sp, &ps, 1, 1, 40, 0, 0, &best), 0);
    cr_assert_eq(best.cpu_cores, 16, "no host limit: 16 cores, got %d", best.cpu_cores);
    double r16 = plan_best(&sp, &ps, 1, 1, 40, 0, 0, &best);
    double r8 = plan_best(&sp, &ps, 1, 1, 40, 8, 0, &best);
    cr_assert_eq(best.cpu_cores, 8, "8 cores per GPU allowed: 8, got %d", best.cpu_cores);
    cr_assert_lt(r8, r16, "fewer cores, a slower host step");
    plan_best(&sp, &ps, 1, 1, 40, 5, 0, &best);
    cr_assert_eq(best.cpu_cores, 4);
}
