/* A job's own speed model per GPU model (sched_job.type_speeds): the one rate lookup
 * (sched_job_rate_on) and the policies choosing the GPU model that suits each job. */
#include <criterion/criterion.h>
#include <math.h>

#include "sched_fixture.h"

static struct speed_model scaled(double f)
{
    struct speed_model m = fx_resnet_model();
    for (size_t k = 0; k < SPEED_NFEATURES; k++)
        m.theta[k] *= f;
    return m;
}

Test(gpu_types, rate_on_a_model_is_its_own_model_else_the_factor)
{
    static struct fx f;
    fx_init(&f, 1, 4);
    struct sched_job *j = fx_job(&f, 1, 1);
    double ref = sched_job_rate(j, 2, NULL);
    cr_assert_gt(ref, 0);
    /* no per-model entry: the reference rate times the model's factor (<= 0: 1) */
    cr_assert_float_eq(sched_job_rate_on(j, 2, 3, 2.5, NULL), ref * 2.5, 1e-12);
    cr_assert_float_eq(sched_job_rate_on(j, 2, 3, 0.0, NULL), ref, 1e-12);
    struct sched_type_speed ts[2] = {{.gpu_model = 3, .speed = scaled(0.5)},
                                     {.gpu_model = 4, .speed = scaled(4.0)}};
    j->type_speeds = ts;
    j->ntype_speeds = 2;
    /* its own model there, whatever the factor says: 2x on model 3, 1/4 on model 4 */
    cr_assert_float_eq(sched_job_rate_on(j, 2, 3, 0.1, NULL), 2 * ref, 1e-9 * ref);
    cr_assert_float_eq(sched_job_rate_on(j, 2, 4, 9.0, NULL), ref / 4, 1e-9 * ref);
    cr_assert_float_eq(sched_job_rate_on(j, 2, 5, 3.0, NULL), 3 * ref, 1e-9 * ref);
    cr_assert_eq(sched_job_type_speed(j, 4), &ts[1]);
    cr_assert_null(sched_job_type_speed(j, 5));
    /* an unfitted entry is no model */
    ts[0].speed.fitted = 0;
    cr_assert_null(sched_job_type_speed(j, 3));
}

/* Two 4-GPU nodes: model 1 with factor 2, model 2 with factor 1. */
static void two_models(struct fx *f)
{
    fx_init(f, 2, 4);
    f->nodes[0] = (struct sched_node){.id = 1, .ngpus = 4, .up = 1, .gpu_model = 1,
                                      .gpu_speed = 2.0, .gpu_mem_gb = 32};
    f->nodes[1] = (struct sched_node){.id = 2, .ngpus = 4, .up = 1, .gpu_model = 2,
                                      .gpu_speed = 1.0, .gpu_mem_gb = 32};
}

static const char *const policies[] = {"ringmaster", "rubick"};

Test(gpu_types, each_job_goes_to_the_model_that_suits_it)
{
    static struct fx f;
    /* A is 4x faster on model 1 than on model 2; B the other way round, 8x. */
    static struct sched_type_speed ta[2], tb[2];
    ta[0] = (struct sched_type_speed){.gpu_model = 1, .speed = scaled(0.5)};
    ta[1] = (struct sched_type_speed){.gpu_model = 2, .speed = scaled(2.0)};
    tb[0] = (struct sched_type_speed){.gpu_model = 1, .speed = scaled(2.0)};
    tb[1] = (struct sched_type_speed){.gpu_model = 2, .speed = scaled(0.25)};
    for (size_t p = 0; p < 2; p++) {
        const struct sched_policy_ops *ops = sched_policy_find(policies[p]);
        /* B alone with the one factor: model 1 (factor 2) looks faster */
        two_models(&f);
        struct sched_job *b = fx_job(&f, 2, 4);
        b->max_gpus = 4;
        struct sched_decision *d = sched_decide(ops, &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_eq(d->assign[0].gpu_model, 1, "%s: factor view", policies[p]);
        sched_decision_destroy(d);
        /* with its own models it takes model 2 */
        b->type_speeds = tb;
        b->ntype_speeds = 2;
        d = sched_decide(ops, &f.snap);
        cr_assert_eq(d->assign[0].gpu_model, 2, "%s: B alone, per-type", policies[p]);
        sched_decision_destroy(d);
        /* both, A first: each on its own */
        two_models(&f);
        struct sched_job *a = fx_job(&f, 1, 4);
        a->max_gpus = 4;
        a->type_speeds = ta;
        a->ntype_speeds = 2;
        b = fx_job(&f, 2, 4);
        b->max_gpus = 4;
        b->type_speeds = tb;
        b->ntype_speeds = 2;
        d = sched_decide(ops, &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_eq(d->assign[0].gpus, 4, "%s", policies[p]);
        cr_assert_eq(d->assign[1].gpus, 4, "%s", policies[p]);
        cr_assert_eq(d->assign[0].gpu_model, 1, "%s: A on model %d", policies[p],
                     d->assign[0].gpu_model);
        cr_assert_eq(d->assign[1].gpu_model, 2, "%s: B on model %d", policies[p],
                     d->assign[1].gpu_model);
        sched_decision_destroy(d);
    }
}

/* Ringmaster's type choice by comparative advantage (policies/typed.c). */

/* Job id with remaining epochs, max 4 GPUs, and its own models: f1 times the reference step
 * time on model 1, f2 on model 2 (smaller: faster). */
static struct sched_job *typed_job(struct fx *f, int64_t id, double epochs,
                                   struct sched_type_speed ts[2], double f1, double f2)
{
    struct sched_job *j = fx_job(f, id, 1);
    j->max_gpus = 4;
    j->remaining_epochs = epochs;
    ts[0] = (struct sched_type_speed){.gpu_model = 1, .speed = scaled(f1)};
    ts[1] = (struct sched_type_speed){.gpu_model = 2, .speed = scaled(f2)};
    j->type_speeds = ts;
    j->ntype_speeds = 2;
    return j;
}

Test(gpu_types, the_fast_type_goes_to_the_job_that_gains_most_there)
{
    static struct fx f;
    static struct sched_type_speed ta[2], tb[2];
    const struct sched_policy_ops *rm = sched_policy_find("ringmaster");

    /* Both run fastest on model 1: A (much shorter, so first in ringmaster's order and
     * first to grow) only 1.1x faster there, B 5x. B goes there, A to model 2: together
     * they finish sooner so (completion rates 0.25 r against 0.23 r the other way round,
     * r A's epochs per second on model 2). */
    two_models(&f);
    typed_job(&f, 1, 5, ta, 1.0 / 1.1, 1.0);
    typed_job(&f, 2, 100, tb, 0.2, 1.0);
    struct sched_decision *d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 4);
    cr_assert_eq(d->assign[0].gpu_model, 2, "A on model %d", d->assign[0].gpu_model);
    cr_assert_eq(d->assign[1].gpu_model, 1, "B on model %d", d->assign[1].gpu_model);
    sched_decision_destroy(d);
    /* Opposite preferences (A 3x faster on model 2, B 3x on model 1): each on its own, in
     * either order of submission. */
    for (int order = 0; order < 2; order++) {
        two_models(&f);
        static struct sched_type_speed t[2][2];
        typed_job(&f, 1, order ? 100 : 20, t[0], 3.0, 1.0);
        typed_job(&f, 2, order ? 20 : 100, t[1], 1.0, 3.0);
        d = sched_decide(rm, &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_eq(d->assign[0].gpu_model, 2, "order %d: A on model %d", order,
                     d->assign[0].gpu_model);
        cr_assert_eq(d->assign[1].gpu_model, 1, "order %d: B on model %d", order,
                     d->assign[1].gpu_model);
        sched_decision_destroy(d);
    }
}

/* A (1.1x faster on model 1) runs on model 1, B (5x faster there) on model 2, both on 4
 * GPUs for a long time; resize_cost_s as given. */
static void wrong_way_round(struct fx *f, struct sched_type_speed ta[2],
                            struct sched_type_speed tb[2], double cost)
{
    two_models(f);
    f->snap.resize_cost_s = cost;
    f->snap.min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S;
    struct sched_job *a = typed_job(f, 1, 20, ta, 1.0 / 1.1, 1.0);
    struct sched_job *b = typed_job(f, 2, 100, tb, 0.2, 1.0);
    fx_hold(f, a, 0, 0, 4);
    fx_hold(f, b, 1, 0, 4);
    a->last_change_time = b->last_change_time = 0; /* 1000 s ago, past the interval */
    a->run_time = b->run_time = 1000;
}

Test(gpu_types, a_running_job_moves_to_a_better_type_only_when_it_repays_the_restart)
{
    static struct fx f;
    static struct sched_type_speed ta[2], tb[2];
    const struct sched_policy_ops *rm = sched_policy_find("ringmaster");

    /* 30 s per restart against hours of work: they exchange types. */
    wrong_way_round(&f, ta, tb, 30);
    double tb2 = f.jobs[1].remaining_epochs / sched_job_rate_on(&f.jobs[1], 4, 2, 1.0, NULL);
    double tb1 = f.jobs[1].remaining_epochs / sched_job_rate_on(&f.jobs[1], 4, 1, 1.0, NULL);
    cr_assert_gt(tb2 - tb1, 3000, "B saves %.0f s on model 1", tb2 - tb1);
    struct sched_decision *d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[1].gpu_model, 1, "B on model %d", d->assign[1].gpu_model);
    cr_assert_eq(d->assign[0].gpu_model, 2, "A on model %d", d->assign[0].gpu_model);
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 4);
    cr_assert(d->assign[0].migrated && d->assign[1].migrated);
    cr_assert_str_eq(d->assign[1].reason, "migrated: to a GPU model where it runs faster");
    sched_decision_destroy(d);
    /* A restart that costs more than B's whole remaining time on model 1: nobody moves. */
    wrong_way_round(&f, ta, tb, 2 * tb1);
    d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert(!d->assign[0].changed && !d->assign[1].changed, "A %s, B %s", d->assign[0].reason,
              d->assign[1].reason);
    sched_decision_destroy(d);
    /* Nor within min_resize_interval_s of B's last change. */
    wrong_way_round(&f, ta, tb, 30);
    f.jobs[1].last_change_time = f.snap.now - 10;
    d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert(!d->assign[1].changed, "B %s", d->assign[1].reason);
    sched_decision_destroy(d);
}

Test(gpu_types, quotas_shares_and_max_wait_hold_across_types)
{
    static struct fx f;
    static struct sched_type_speed t[4][2];
    static const struct sched_user users[] = {{.id = 1, .share = 1, .max_gpus = 4}};
    const struct sched_policy_ops *rm = sched_policy_find("ringmaster");

    /* User 1's two jobs suit different types; its quota of 4 holds over both. */
    two_models(&f);
    typed_job(&f, 1, 20, t[0], 3.0, 1.0)->user_id = 1;
    typed_job(&f, 2, 20, t[1], 1.0, 3.0)->user_id = 1;
    struct sched_decision *d = sched_decide(rm, &f.snap);
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 8, "no quota set yet");
    sched_decision_destroy(d);
    f.snap.users = users;
    f.snap.nusers = 1;
    d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_leq(d->assign[0].gpus + d->assign[1].gpus, 4, "over its quota of 4");
    cr_assert_gt(d->assign[0].gpus + d->assign[1].gpus, 0);
    sched_decision_destroy(d);

    /* User 1's jobs hold both types; user 2 (the same share) asks for 4 GPUs for a long,
     * rigid job: it gets them, on one type, and user 1 keeps 4. */
    two_models(&f);
    struct sched_job *u1a = typed_job(&f, 1, 5, t[0], 1.0, 2.0);
    struct sched_job *u1b = typed_job(&f, 2, 5, t[1], 2.0, 1.0);
    u1a->user_id = u1b->user_id = 1;
    fx_hold(&f, u1a, 0, 0, 4);
    fx_hold(&f, u1b, 1, 0, 4);
    struct sched_job *u2 = typed_job(&f, 3, 1e4, t[2], 1.0, 1.0);
    u2->user_id = 2;
    u2->elastic = 0;
    u2->requested_gpus = u2->min_gpus = u2->max_gpus = 4;
    d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[2].gpus, 4, "user 2 below its share: %s", d->assign[2].reason);
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 4);
    for (int k = 1; k < 4; k++)
        cr_assert_eq(f.nodes[d->assign[2].slots[k].node].gpu_model,
                     f.nodes[d->assign[2].slots[0].node].gpu_model, "one type per job");
    sched_decision_destroy(d);

    /* Two short jobs hold both types; a long one waited past max_wait_s: the guard serves
     * it on one type, all its GPUs of that type. */
    two_models(&f);
    f.snap.max_wait_s = SCHED_MAX_WAIT_S;
    struct sched_job *a = typed_job(&f, 1, 5, t[0], 1.0, 2.0);
    struct sched_job *b = typed_job(&f, 2, 5, t[1], 2.0, 1.0);
    fx_hold(&f, a, 0, 0, 4);
    fx_hold(&f, b, 1, 0, 4);
    struct sched_job *late = typed_job(&f, 3, 1e6, t[2], 1.0, 1.0);
    late->submit_time = f.snap.now - 2 * SCHED_MAX_WAIT_S;
    d = sched_decide(rm, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_geq(d->assign[2].gpus, 1, "the long job starves: %s", d->assign[2].reason);
    for (int k = 1; k < d->assign[2].gpus; k++)
        cr_assert_eq(f.nodes[d->assign[2].slots[k].node].gpu_model,
                     f.nodes[d->assign[2].slots[0].node].gpu_model, "one type per job");
    sched_decision_destroy(d);
}

Test(gpu_types, random_typed_snapshots_give_feasible_decisions)
{
    static struct fx f;
    static struct sched_type_speed t[FX_MAX_JOBS][3];
    const struct sched_policy_ops *rm = sched_policy_find("ringmaster");
    uint64_t rng = 31;

    for (int round = 0; round < 200; round++) {
        fx_random(&f, &rng);
        for (size_t n = 0; n < f.snap.nnodes; n++) {
            f.nodes[n].gpu_model = 1 + fx_between(&rng, 0, 2);
            f.nodes[n].gpu_speed = f.nodes[n].gpu_model;
        }
        for (size_t i = 0; i < f.snap.njobs; i++) {
            if (fx_between(&rng, 0, 3) == 0)
                continue;
            for (int m = 0; m < 3; m++)
                t[i][m] = (struct sched_type_speed){
                    .gpu_model = 1 + m, .speed = scaled(0.2 + 0.1 * fx_between(&rng, 0, 20))};
            f.jobs[i].type_speeds = t[i];
            f.jobs[i].ntype_speeds = (size_t)fx_between(&rng, 1, 3);
        }
        struct sched_decision *d = sched_decide(rm, &f.snap);
        fx_check_feasible(&f.snap, d);
        for (size_t i = 0; i < d->njobs; i++)
            for (int k = 1; k < d->assign[i].gpus; k++)
                cr_assert_eq(f.nodes[d->assign[i].slots[k].node].gpu_model,
                             f.nodes[d->assign[i].slots[0].node].gpu_model, "one type per job");
        sched_decision_destroy(d);
    }
}
