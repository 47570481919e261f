/* Batches in decisions: ringmaster chooses an adaptive job's batch with its GPUs, the other
 * policies run every job at its own batch, a running job changes its batch in place (its
 * allocation stays) only when the goodput gain passes the threshold, and a fixed-batch job
 * is modelled at strong scaling. */
#include <criterion/criterion.h>
#include <math.h>

#include "goodput.h"
#include "sched_fixture.h"

/* An adaptive job: starts at 128 (the ResNet model's batch on one GPU), may go to 4096, with
 * a noisy gradient (noise scale 100 x 128) so that larger batches keep most of their worth. */
static struct sched_job *adaptive_job(struct fx *f, int64_t id, int requested, int max)
{
    struct sched_job *j = fx_job(f, id, requested);
    j->max_gpus = max;
    j->batch = (struct batch_spec){.init_batch = 128, .batch = 128, .max_batch = 4096,
                                   .max_local = 256, .adaptive = 1, .grad_sqr = 1,
                                   .grad_var = 100};
    return j;
}

static const struct sched_assignment *decide_one(struct fx *f, const char *policy,
                                                 struct sched_decision **out)
{
    *out = sched_decide(sched_policy_find(policy), &f->snap);
    cr_assert(*out, "%s decides", policy);
    return &(*out)->assign[0];
}

Test(goodput_decide, ringmaster_chooses_a_larger_batch_with_more_gpus)
{
    struct fx f;
    fx_init(&f, 2, 4);
    adaptive_job(&f, 1, 8, 8);
    struct sched_decision *d;
    const struct sched_assignment *a = decide_one(&f, "ringmaster", &d);
    cr_assert_gt(a->gpus, 1);
    cr_expect_gt(a->batch, 128, "batch %g on %d GPUs", a->batch, a->gpus);
    cr_expect_leq(a->batch, 4096);
    /* what it chose is the best the model knows for that many GPUs */
    double best;
    f.jobs[0].speed.gpus_per_node = 4;
    sched_job_rate(&f.jobs[0], a->gpus, &best);
    cr_expect_float_eq(a->batch, best, 1e-9);
    sched_decision_destroy(d);
}

Test(goodput_decide, other_policies_run_the_job_at_its_own_batch)
{
    const char *policies[] = {"precompute", "tiresias", "fifo", "optimus"};
    for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
        struct fx f;
        fx_init(&f, 2, 4);
        adaptive_job(&f, 1, 8, 8);
        struct sched_decision *d;
        const struct sched_assignment *a = decide_one(&f, policies[p], &d);
        cr_assert_gt(a->gpus, 0, "%s", policies[p]);
        cr_expect_float_eq(a->batch, 128, 1e-9, "%s: batch %g", policies[p], a->batch);
        sched_decision_destroy(d);
    }
}

/* A running adaptive job on 4 GPUs of one node at batch m; the decision of ringmaster. */
static const struct sched_assignment *running_at(struct fx *f, double m, struct sched_decision **d)
{
    fx_init(f, 1, 4);
    struct sched_job *j = adaptive_job(f, 1, 4, 4);
    fx_hold(f, j, 0, 0, 4);
    j->batch.batch = m;
    j->last_change_time = 0;
    const struct sched_assignment *a = decide_one(f, "ringmaster", d);
    cr_assert_eq(a->gpus, 4);
    cr_assert_eq(a->changed, 0, "its GPUs stay");
    return a;
}

Test(goodput_decide, a_running_job_changes_its_batch_in_place_when_the_gain_is_worth_it)
{
    struct fx f;
    struct sched_decision *d;
    const struct sched_assignment *a = running_at(&f, 128, &d);
    const struct sched_job *j = &f.jobs[0];
    double at128 = sched_batch_rate(j, a->gpu_model, 4, 1, 128);
    double now = sched_batch_rate(j, a->gpu_model, 4, 1, a->batch);
    cr_assert_gt(at128, 0);
    cr_expect_gt(a->batch, 128, "a noisy gradient is worth a larger batch on 4 GPUs");
    cr_expect_geq(now, at128 * (1 + SCHED_BATCH_MIN_GAIN), "goodput %gx", now / at128);
    cr_expect(sched_batch_in_place(j, a), "a change in place: no restart");
    double best = a->batch;
    sched_decision_destroy(d);

    /* at the best batch already: it stays, no change */
    a = running_at(&f, best, &d);
    cr_expect_float_eq(a->batch, best, 1e-9);
    cr_expect_not(sched_batch_in_place(&f.jobs[0], a));
    sched_decision_destroy(d);
}

Test(goodput_decide, a_running_job_keeps_its_batch_when_the_gain_is_below_the_threshold)
{
    struct fx f;
    struct sched_decision *d;
    const struct sched_assignment *a = running_at(&f, 128, &d);
    double best = a->batch;
    sched_decision_destroy(d);
    /* a batch whose goodput is within SCHED_BATCH_MIN_GAIN of the best's: kept */
    double m = best;
    for (double x = best; x > 128; x *= 0.97) {
        struct fx g;
        fx_init(&g, 1, 4);
        struct sched_job *j = adaptive_job(&g, 1, 4, 4);
        double r = sched_batch_rate(j, 0, 4, 1, x), rb = sched_batch_rate(j, 0, 4, 1, best);
        if (rb < r * (1 + SCHED_BATCH_MIN_GAIN) * 0.999)
            m = x;
        else
            break;
    }
    cr_assert_neq(m, best, "some batch below the best is close enough to keep");
    a = running_at(&f, m, &d);
    cr_expect_float_eq(a->batch, m, 1e-9, "kept %g (best %g)", m, best);
    cr_expect_not(sched_batch_in_place(&f.jobs[0], a));
    sched_decision_destroy(d);
    /* a policy that does not choose batches never changes one */
    fx_init(&f, 1, 4);
    struct sched_job *j = adaptive_job(&f, 1, 4, 4);
    fx_hold(&f, j, 0, 0, 4);
    a = decide_one(&f, "precompute", &d);
    cr_expect_float_eq(a->batch, 128, 1e-9);
    cr_expect_not(sched_batch_in_place(&f.jobs[0], a));
    sched_decision_destroy(d);
}

/* A job learned live keeps its batch while it measures the size it holds (its stage since
 * its last change, learn_pinned); once measured, the rule applies. */
Test(goodput_decide, a_job_measuring_its_size_keeps_its_batch)
{
    struct fx f;
    fx_init(&f, 1, 4);
    struct sched_job *j = adaptive_job(&f, 1, 4, 4);
    fx_hold(&f, j, 0, 0, 4);
    j->measured_max_gpus = 4;
    f.snap.now = 1000;
    f.snap.explore_stage_s = 60;
    j->last_change_time = 990;
    struct sched_decision *d;
    const struct sched_assignment *a = decide_one(&f, "ringmaster", &d);
    cr_assert_eq(a->changed, 0);
    cr_expect_float_eq(a->batch, 128, 1e-9, "10 s into its 60 s stage: kept");
    sched_decision_destroy(d);
    f.jobs[0].last_change_time = 900;
    a = decide_one(&f, "ringmaster", &d);
    cr_assert_eq(a->changed, 0);
    cr_expect_gt(a->batch, 128, "its stage done: the better batch, in place");
    cr_expect(sched_batch_in_place(&f.jobs[0], a));
    sched_decision_destroy(d);
}

Test(goodput_decide, a_job_without_a_batch_model_gets_none)
{
    struct fx f;
    fx_init(&f, 1, 4);
    fx_job(&f, 1, 2);
    struct sched_decision *d;
    const struct sched_assignment *a = decide_one(&f, "ringmaster", &d);
    cr_expect_gt(a->gpus, 0);
    cr_expect_eq(a->batch, 0.0);
    sched_decision_destroy(d);
}

Test(goodput_decide, a_fixed_batch_job_gains_less_from_gpus_than_a_weak_scaling_one)
{
    /* the same model and work; the fixed one keeps 128 in all, the other 128 per GPU */
    struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *weak = fx_job(&f, 1, 1);
    struct sched_job *fixed = fx_job(&f, 2, 1);
    fixed->batch = (struct batch_spec){.init_batch = 128, .batch = 128};
    double w1 = sched_job_rate(weak, 1, NULL), w8 = sched_job_rate(weak, 8, NULL);
    double f1 = sched_job_rate(fixed, 1, NULL), f8 = sched_job_rate(fixed, 8, NULL);
    cr_expect_float_eq(w1, f1, 1e-12, "alike on one GPU");
    cr_expect_gt(w8 / w1, f8 / f1, "speed-up %g (weak) vs %g (fixed)", w8 / w1, f8 / f1);
    /* 16 examples per GPU: the step's fixed costs dominate, so the fixed job barely speeds up */
    cr_expect_lt(f8 / f1, 2.0);
}

/* Issue 18: a fixed-batch job in its first epoch reports a small noise scale (a large,
 * consistent gradient), and its batch of 8 x M0 is then worth barely more than M0. Taken as
 * its efficiency for all its remaining work, that report made it look four times longer than
 * it is: behind a job that is truly twice as long, held at its base. Two jobs run on 1 GPU
 * each and one GPU is free: the one that is truly shorter must get it. */
Test(goodput_decide, a_fixed_batch_job_at_its_first_report_is_not_held_at_its_base)
{
    struct fx f;
    fx_init(&f, 1, 3);
    struct sched_job *fixed = fx_job(&f, 1, 8);
    fixed->batch = (struct batch_spec){.init_batch = 128, .batch = 1024, .grad_sqr = 10,
                                       .grad_var = 1};
    fx_hold(&f, fixed, 0, 0, 1);
    struct sched_job *other = fx_job(&f, 2, 8);
    fx_hold(&f, other, 0, 1, 1);
    fixed->last_change_time = other->last_change_time = 0;
    fixed->run_time = other->run_time = 900;
    /* its time on 1 GPU if its noise scale is taken at its batch (var = 8 sqr) */
    struct batch_spec outlook = fixed->batch;
    outlook.grad_var = 8 * outlook.grad_sqr;
    double t_fixed =
        fixed->remaining_epochs / goodput_rate(&fixed->speed, &outlook, 1, 1, 1024);
    double t_report =
        fixed->remaining_epochs / goodput_rate(&fixed->speed, &fixed->batch, 1, 1, 1024);
    cr_assert_gt(t_report, 3.5 * t_fixed, "the report's %g s vs %g s", t_report, t_fixed);
    /* the other job: twice as long as the fixed one truly is */
    other->remaining_epochs = 2 * t_fixed * sched_job_rate(other, 1, NULL);
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert(d);
    cr_expect_eq(d->assign[0].gpus, 2, "the fixed-batch job got %d GPUs", d->assign[0].gpus);
    cr_expect_eq(d->assign[1].gpus, 1, "the longer job got %d GPUs", d->assign[1].gpus);
    sched_decision_destroy(d);
}

/* A job learned live may hold a model of its GPUs' type (learn_round's) and no reference
 * model (its two sizes gave no fit). Without one it is given what it asked for, 8 GPUs, from
 * the 2 it ran on; its new batch is chosen on its type's model. At its old batch of 13
 * examples per GPU it could not run on 8 GPUs with at least 10 each (the simulator's
 * "stuck" under --speed live --batch adaptive). */
Test(goodput_decide, a_job_grown_on_its_type_model_gets_a_batch_it_can_run)
{
    struct fx f;
    fx_init(&f, 2, 4);
    struct sched_job *j = adaptive_job(&f, 1, 8, 8);
    j->batch.init_batch = 20;
    j->batch.batch = 26;
    j->batch.min_local = 10;
    j->batch.max_batch = 640;
    j->batch.max_local = 80;
    struct sched_type_speed ty = {.gpu_model = 0, .speed = j->speed, .max_local = 80,
                                  .source = SCHED_TYPE_MEASURED, .measured_sizes = 1};
    /* measured at 1 and 2 GPUs, a reference fit refused (learn_fit's compute rule) */
    j->speed.fitted = 0;
    j->model_source = SCHED_MODEL_NONE;
    j->measured_sizes = 2;
    j->measured_max_gpus = 2;
    j->measured_nodes = 1;
    j->explored_s[0] = j->explored_s[1] = 600;
    j->type_speeds = &ty;
    j->ntype_speeds = 1;
    fx_hold(&f, j, 0, 0, 2);
    j->last_change_time = 0;
    struct sched_decision *d;
    const struct sched_assignment *a = decide_one(&f, "ringmaster", &d);
    cr_assert_gt(a->gpus, 2, "grown into the free GPUs (%d)", a->gpus);
    cr_expect_geq(a->batch, 10.0 * a->gpus, "batch %g on %d GPUs", a->batch, a->gpus);
    cr_expect_leq(a->batch, 640);
    sched_decision_destroy(d);
}

/* With no model at all a grown job's batch is still one its GPUs can run. */
Test(goodput_decide, a_grown_job_without_a_model_keeps_a_runnable_batch)
{
    struct batch_spec b = {.init_batch = 20, .batch = 26, .max_batch = 640, .min_local = 10,
                           .max_local = 80, .adaptive = 1};
    cr_expect_float_eq(goodput_runnable(&b, 2, 26), 26, 1e-12);
    cr_expect_float_eq(goodput_runnable(&b, 8, 26), 80, 1e-12);
    cr_expect_float_eq(goodput_runnable(&b, 1, 1000), 640, 1e-12);
    b.adaptive = 0;
    cr_expect_float_eq(goodput_runnable(&b, 8, 26), 26, 1e-12, "a fixed batch is the user's");
}
