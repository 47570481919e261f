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
