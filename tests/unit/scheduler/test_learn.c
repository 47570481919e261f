/* learn: live learning (learn.h): the prior fitted jobs teach, a one-size job's model from it,
 * the 2x growth bound, the resize rule, and decisions in which free GPUs are the experiments. */
#include <limits.h>
#include <math.h>

#include "learn.h"
#include "learn_fit.h"
#include "sched_fixture.h"

/* A job measured at `size` GPUs only (step_s per step), holding them on node 0 from GPU
 * first (size 0: waiting), elastic 1..8, changed `age` seconds ago. */
static struct sched_job *one_size(struct fx *f, int64_t id, int size, int node, int first,
                                  double step_s, double age)
{
    struct sched_job *j = fx_job(f, id, 1);
    j->max_gpus = 8;
    j->model_source = SCHED_MODEL_NONE;
    memset(&j->speed, 0, sizeof(j->speed));
    j->speed.batch_per_gpu = 128;
    j->speed.dataset_size = 50000;
    j->measured_sizes = 1;
    j->measured_max_gpus = size > 0 ? size : 1;
    j->measured_step_s = step_s;
    j->measured_nodes = 1;
    j->measured_step_gpus = j->measured_max_gpus;
    j->measured_step_nodes = 1;
    if (size > 0) {
        fx_hold(f, j, node, first, size);
        j->last_change_time = f->snap.now - age;
        j->run_time = age;
    }
    return j;
}

/* A teacher: the ResNet profile as if fitted from its own steps at 1, 2, 4, 8 GPUs. */
static struct sched_job *teacher(struct fx *f, int64_t id)
{
    struct sched_job *j = fx_job(f, id, 1);
    j->model_source = SCHED_MODEL_FITTED;
    j->measured_sizes = 4;
    j->measured_max_gpus = 8;
    j->max_gpus = 8;
    return j;
}

static void live_settings(struct fx *f)
{
    f->snap.resize_cost_s = 30;
    f->snap.min_resize_interval_s = 120;
    f->snap.explore_stage_s = 8;
}

static double t1_of(const struct speed_model *m)
{
    return speed_step_time_placed(m, 1, 1, m->batch_per_gpu);
}

Test(learn, the_prior_is_the_teachers_mean_of_theta_over_their_1_gpu_step)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *a = teacher(&f, 1), *b = teacher(&f, 2);
    b->speed.theta[2] *= 3;
    b->speed.theta[3] *= 3;
    b->measured_nodes = 2;
    b->speed.theta[5] = 0.2;
    one_size(&f, 3, 1, 0, 0, 0.5, 10); /* not a teacher */
    struct learn_prior p;
    learn_prior(f.jobs, f.snap.njobs, &p);
    cr_assert_eq(p.nintra, 2);
    cr_assert_eq(p.ninter, 1, "only b measured across nodes");
    double ta = t1_of(&a->speed), tb = t1_of(&b->speed);
    for (int k = 0; k < 3; k++)
        cr_assert_float_eq(p.intra[k],
                           (a->speed.theta[2 + k] / ta + b->speed.theta[2 + k] / tb) / 2, 1e-12,
                           "theta[%d]", 2 + k);
    cr_assert_float_eq(p.inter, 0.2 / tb, 1e-12);
    cr_assert_float_eq(p.fixed, (a->speed.theta[0] / ta + b->speed.theta[0] / tb) / 2, 1e-12);
    cr_assert_gt(p.intra[0] + p.intra[1] + p.intra[2], 0, "ResNet's all-reduce costs");
}

Test(learn, no_teacher_means_perfect_scaling)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *j = one_size(&f, 1, 1, 0, 0, 0.5, 10);
    cr_assert_eq(learn_apply(f.jobs, f.snap.njobs), 1);
    cr_assert_eq(j->model_source, SCHED_MODEL_FITTED);
    cr_assert(j->speed.fitted);
    cr_assert_float_eq(speed_step_time(&j->speed, 1), 0.5, 1e-12);
    cr_assert_float_eq(speed_step_time(&j->speed, 8), 0.5, 1e-12, "communication 0");
    cr_assert_float_eq(speed_epochs_per_second(&j->speed, 8),
                       8 * speed_epochs_per_second(&j->speed, 1), 1e-9);
}

Test(learn, a_one_size_job_predicts_the_time_it_measured)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    teacher(&f, 1);
    struct sched_job *j = one_size(&f, 2, 2, 0, 0, 0.9, 10);
    struct sched_job *profiled = fx_job(&f, 3, 1);
    profiled->measured_sizes = 1;
    profiled->measured_max_gpus = 1;
    profiled->measured_step_s = 5.0;
    profiled->measured_step_gpus = 1;
    struct speed_model before = profiled->speed;
    cr_assert_eq(learn_apply(f.jobs, f.snap.njobs), 1, "the profiled job keeps its profile");
    cr_assert_eq(memcmp(&before, &profiled->speed, sizeof(before)), 0);
    cr_assert_float_eq(speed_step_time(&j->speed, 2), 0.9, 1e-9, "its own measurement");
    cr_assert_lt(speed_step_time(&j->speed, 1), 0.9, "less all-reduce at 1 GPU");
    cr_assert_gt(speed_step_time(&j->speed, 8), 0.9, "more at 8: the teacher's comm");
    /* the normalised shape is the teacher's */
    const struct sched_job *t = &f.jobs[0];
    cr_assert_float_eq(j->speed.theta[2] / t1_of(&j->speed), t->speed.theta[2] / t1_of(&t->speed),
                       1e-9);
    j->measured_sizes = 2; /* a job of two sizes keeps its caller's fit */
    cr_assert_eq(learn_model(j, &(struct learn_prior){0}), 0);
}

/* Two sizes whose steps take about as long give no fit (learn_fit_speed refuses a fit without
 * compute); the job still gets a model, the one-size rule at its smallest size, and does not
 * teach the prior with it. */
Test(learn, two_sizes_without_a_fit_take_the_rule_at_the_smallest)
{
    /* steps that the all-reduce alone would explain (test_learn_fit's refused fit) */
    struct learn_obs obs[2];
    const int w[] = {6, 8};
    for (int i = 0; i < 2; i++) {
        double f[SPEED_NFEATURES];
        speed_features_placed(w[i], 1, 40, f);
        obs[i] = (struct learn_obs){.w = w[i], .nodes = 1, .step_s = 0.1986 * f[3],
                                    .gpu_speed = 1.0, .gpu_model = 0, .m = 40, .seconds = 60};
    }
    struct sched_job j = {.id = 1, .elastic = 1, .max_gpus = 16,
                          .speed = {.batch_per_gpu = 40, .dataset_size = 50000}};
    struct speed_model sm = j.speed;
    cr_assert_neq(learn_fit_speed(&sm, obs, 2), 0, "the fit is refused");
    learn_fit_measured(&j, obs, 2);
    cr_assert_eq(j.measured_sizes, 2);
    cr_assert_eq(j.measured_max_gpus, 8, "growth still counts from its largest");
    cr_assert_eq(j.measured_step_gpus, 6);
    cr_assert_float_eq(j.measured_step_s, obs[0].step_s, 1e-12);
    cr_assert_float_eq(j.measured_batch_per_gpu, 40, 1e-12);
    cr_assert_eq(learn_model(&j, &(struct learn_prior){0}), 1);
    cr_assert_eq(j.model_source, SCHED_MODEL_FITTED);
    cr_assert_float_eq(speed_step_time_placed(&j.speed, 6, 1, 40), obs[0].step_s, 1e-9);
    cr_assert_gt(j.speed.theta[0] + j.speed.theta[1] * 40, 0.5 * obs[0].step_s,
                 "no teacher: the whole step is compute");
    cr_assert_not(learn_is_teacher(&j), "a model from the prior teaches nothing");
    /* with a fit of its sizes the job keeps it */
    j.speed.fitted = 1;
    learn_fit_measured(&j, obs, 2);
    cr_assert_eq(j.measured_step_gpus, 0);
    cr_assert_eq(learn_model(&j, &(struct learn_prior){0}), 0);
}

Test(learn, growth_is_bounded_by_twice_the_largest_size_measured)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *j = one_size(&f, 1, 1, 0, 0, 0.5, 10);
    learn_apply(f.jobs, f.snap.njobs);
    cr_assert(learn_is_learning(j));
    cr_assert_eq(learn_max_gpus(j), 2);
    j->measured_max_gpus = 4;
    cr_assert_eq(learn_max_gpus(j), 8);
    j->measured_max_gpus = 8;
    cr_assert(!learn_is_learning(j), "measured at its max: learnt");
    cr_assert_eq(learn_max_gpus(j), 8);
    j->model_source = SCHED_MODEL_PROFILE;
    j->measured_max_gpus = 1;
    cr_assert_eq(learn_max_gpus(j), 8, "a profile is not learning");
    j->model_source = SCHED_MODEL_FITTED;
    j->measured_max_gpus = 0;
    cr_assert_eq(learn_max_gpus(j), 8, "measurements not tracked (the simulator)");

    static struct fx g;
    fx_init(&g, 2, 8);
    live_settings(&g);
    one_size(&g, 1, 1, 0, 0, 0.5, 10);
    learn_apply(g.jobs, g.snap.njobs);
    g.snap.njobs = 1;
    const char *pols[] = {"ringmaster", "precompute", "optimus"};
    for (size_t p = 0; p < 3; p++) {
        struct sched_decision *d = sched_decide(sched_policy_find(pols[p]), &g.snap);
        cr_assert_eq(d->assign[0].gpus, 2, "%s: 1 -> 2 only, 16 free", pols[p]);
        sched_decision_destroy(d);
    }
}

/* GPUs that nobody else takes are free experiments (#31): a job held for its stage that
 * measured the size it holds for a quarter of the stage grows into them (to twice what it
 * measured), but a waiting job gets them first, and a job not measured at its size waits. */
Test(learn, a_staged_job_grows_into_idle_gpus_once_it_measured_its_size)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    live_settings(&f);
    struct sched_job *j = one_size(&f, 1, 2, 0, 0, 0.5, 3);
    learn_apply(f.jobs, f.snap.njobs);
    cr_assert(learn_pinned(&f.snap, j), "3 s at its size, stage 8 s");
    cr_assert(learn_stage_fills(&f.snap, j), "measured at 2, 3 s >= 2 s");
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[0].gpus, 4, "2 -> 4 (twice what it measured), 6 idle: %d",
                 d->assign[0].gpus);
    sched_decision_destroy(d);

    struct sched_job *n = one_size(&f, 2, 0, 0, 0, 0.5, 0);
    n->model_source = SCHED_MODEL_FITTED;
    n->max_gpus = 6;
    learn_apply(f.jobs, f.snap.njobs);
    d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_gt(d->assign[1].gpus, 0, "the waiting job starts");
    cr_assert_geq(d->assign[0].gpus, 2, "the staged job is not shrunk");
    cr_assert_leq(d->assign[0].gpus + d->assign[1].gpus, 8);
    sched_decision_destroy(d);
}

Test(learn, a_staged_job_not_measured_at_its_size_does_not_fill)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    live_settings(&f);
    struct sched_job *j = one_size(&f, 1, 1, 0, 0, 0.5, 5);
    fx_hold(&f, j, 0, 1, 1); /* holds 2 (a fill gave it), measured only 1 */
    learn_apply(f.jobs, f.snap.njobs);
    cr_assert(learn_pinned(&f.snap, j));
    cr_assert(!learn_stage_fills(&f.snap, j), "its size not measured yet");
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[0].gpus, 2, "kept at 2 until measured there: %d", d->assign[0].gpus);
    sched_decision_destroy(d);
    struct sched_job idle = {0};
    cr_assert(!learn_stage_fills(&f.snap, &idle), "a job that does not run");
}

Test(learn, a_job_measured_for_a_stage_may_resize_before_the_interval)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    live_settings(&f);
    struct sched_job *j = one_size(&f, 1, 1, 0, 0, 0.5, 10);
    learn_apply(f.jobs, f.snap.njobs);
    cr_assert(!learn_pinned(&f.snap, j), "10 s at its size, stage 8 s");
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[0].gpus, 2, "grown though changed 10 s ago (interval 120 s)");
    sched_decision_destroy(d);
    j->last_change_time = f.snap.now - 1;
    cr_assert(learn_pinned(&f.snap, j), "1 s: not a stage yet");
    cr_assert(!learn_stage_fills(&f.snap, j), "1 s: under a quarter of the 8 s stage");
    d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[0].gpus, 1, "pinned");
    sched_decision_destroy(d);
    j->last_change_time = f.snap.now - 10;
    fx_hold(&f, j, 0, 1, 1); /* holds 2, measured only 1: not measured at its size */
    cr_assert(learn_pinned(&f.snap, j));
    f.snap.min_resize_interval_s = 0;
    d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[0].gpus, 2, "pinned to its stage even without an interval");
    sched_decision_destroy(d);
}

Test(learn, an_experiment_is_worth_more_than_idle_gpus)
{
    cr_assert_eq(learn_step_gain(1, -5.0, 100, 50, 0), LEARN_IDLE_GAIN);
    cr_assert_eq(learn_step_gain(1, 7.0, 100, 50, 0), 7.0, "a real gain stays");
    cr_assert_eq(learn_step_gain(1, -5.0, 100, 120, 0), -5.0, "predicted slower");
    cr_assert_eq(learn_step_gain(2, -5.0, 100, 120, 0), LEARN_IDLE_GAIN,
                 "predicted slower, but still learning: the experiment");
    cr_assert_eq(learn_step_gain(0, -5.0, 100, 50, 0), -5.0, "not learned from its steps");
    cr_assert_eq(learn_step_gain(1, -INFINITY, INFINITY, INFINITY, 0), -INFINITY);
    struct sched_job j = {
        .elastic = 1, .model_source = SCHED_MODEL_FITTED, .measured_max_gpus = 8, .max_gpus = 8};
    cr_assert_eq(learn_fills_idle(&j), 1, "learnt at every size, still fills idle GPUs");
    j.measured_max_gpus = 4;
    cr_assert_eq(learn_fills_idle(&j), 2, "learning");
    j.measured_max_gpus = 0;
    cr_assert(!learn_fills_idle(&j), "the simulator's given models: unchanged");
    j.measured_max_gpus = 1;
    j.model_source = SCHED_MODEL_PROFILE;
    cr_assert(!learn_fills_idle(&j), "a profile keeps today's rules");
}

/* Two elastic jobs measured at one size hold 1 GPU each of 8 (two nodes of 4), with little
 * work left (a restart costs more than growing saves): each policy grows both. */
Test(learn, two_one_size_jobs_on_8_free_gpus_are_grown)
{
    const char *pols[] = {"ringmaster", "precompute"};
    for (size_t p = 0; p < 2; p++) {
        static struct fx f;
        fx_init(&f, 2, 4);
        live_settings(&f);
        struct sched_job *a = one_size(&f, 1, 1, 0, 0, 0.2, 10);
        struct sched_job *b = one_size(&f, 2, 1, 1, 0, 0.2, 10);
        a->remaining_epochs = b->remaining_epochs = 0.05; /* 20 s at 1 GPU < resize cost */
        learn_apply(f.jobs, f.snap.njobs);
        struct sched_decision *d = sched_decide(sched_policy_find(pols[p]), &f.snap);
        cr_assert_eq(d->assign[0].gpus, 2, "%s: a 1 -> 2", pols[p]);
        cr_assert_eq(d->assign[1].gpus, 2, "%s: b 1 -> 2", pols[p]);
        sched_decision_destroy(d);
        /* measured at 2 (a model from one size, 2): the two fill the 8 GPUs */
        static struct fx g;
        fx_init(&g, 2, 4);
        live_settings(&g);
        one_size(&g, 1, 2, 0, 0, 0.2, 10)->remaining_epochs = 0.05;
        one_size(&g, 2, 2, 1, 0, 0.2, 10)->remaining_epochs = 0.05;
        learn_apply(g.jobs, g.snap.njobs);
        d = sched_decide(sched_policy_find(pols[p]), &g.snap);
        cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 8, "%s: all 8 GPUs used (%d + %d)",
                     pols[p], d->assign[0].gpus, d->assign[1].gpus);
        sched_decision_destroy(d);
    }
}

/* Both learning jobs hold 4 of 8 GPUs; a rigid job of 2 arrives: it gets them at once. */
Test(learn, a_waiting_job_outranks_growth)
{
    static struct fx f;
    fx_init(&f, 2, 4);
    live_settings(&f);
    one_size(&f, 1, 4, 0, 0, 0.2, 10);
    one_size(&f, 2, 4, 1, 0, 0.2, 10);
    struct sched_job *r = fx_job(&f, 3, 2);
    r->elastic = 0;
    r->model_source = SCHED_MODEL_NONE;
    r->speed.fitted = 0;
    learn_apply(f.jobs, f.snap.njobs);
    const char *pols[] = {"ringmaster", "precompute"};
    for (size_t p = 0; p < 2; p++) {
        struct sched_decision *d = sched_decide(sched_policy_find(pols[p]), &f.snap);
        cr_assert_eq(d->assign[2].gpus, 2, "%s: the rigid job starts", pols[p]);
        cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 6, "%s: the rest stay used", pols[p]);
        sched_decision_destroy(d);
    }
}

/* The rigid job ended: a job shrunk to 2 after it measured 1, 2, 4 (its own fit) grows back
 * into the free GPUs, though the restart costs more than its little work left saves. */
Test(learn, jobs_grow_back_into_idle_gpus)
{
    static struct fx f;
    fx_init(&f, 2, 4);
    live_settings(&f);
    /* (optimus grows by +1: 3 GPUs, predicted slower than 2 by the all-reduce, stops it) */
    const char *pols[] = {"ringmaster", "precompute"};
    struct sched_job *a = fx_job(&f, 1, 1), *b = fx_job(&f, 2, 1);
    a->model_source = b->model_source = SCHED_MODEL_FITTED;
    a->max_gpus = b->max_gpus = 8;
    a->measured_sizes = b->measured_sizes = 3;
    a->measured_max_gpus = b->measured_max_gpus = 4;
    a->remaining_epochs = b->remaining_epochs = 0.01;
    fx_hold(&f, a, 0, 0, 4);
    fx_hold(&f, b, 1, 0, 2);
    a->last_change_time = f.snap.now - 100;
    b->last_change_time = f.snap.now - 10;
    for (size_t p = 0; p < 2; p++) {
        struct sched_decision *d = sched_decide(sched_policy_find(pols[p]), &f.snap);
        cr_assert_eq(d->assign[0].gpus, 4, "%s", pols[p]);
        cr_assert_eq(d->assign[1].gpus, 4, "%s: b 2 -> 4 into the idle GPUs", pols[p]);
        sched_decision_destroy(d);
    }
    a->model_source = b->model_source = SCHED_MODEL_PROFILE; /* today's rules for a profile */
    b->last_change_time = f.snap.now - 1000;
    struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
    cr_assert_eq(d->assign[1].gpus, 2, "a profile job's restart must repay itself");
    sched_decision_destroy(d);
}

/* A learned job holding 2 GPUs that its model predicts 10 % slower than 1 is restarted onto 1
 * only when that repays the restart (resize_cost_s 30): not with 20 s of work left, yes with
 * 1,000 s. */
Test(learn, a_learned_job_is_not_restarted_to_leave_gpus_idle)
{
    static struct fx f;
    fx_init(&f, 1, 4);
    live_settings(&f);
    struct sched_job *j = fx_job(&f, 1, 1);
    j->model_source = SCHED_MODEL_FITTED;
    j->max_gpus = 2; /* learnt at both sizes it may run */
    j->measured_sizes = 2;
    j->measured_max_gpus = 2;
    memset(j->speed.theta, 0, sizeof(j->speed.theta));
    j->speed.theta[1] = 0.1 / 128; /* 0.1 s a step at 1 GPU */
    j->speed.theta[2] = 0.06;      /* 0.22 s at 2: 10 % less throughput */
    fx_hold(&f, j, 0, 0, 2);
    j->last_change_time = f.snap.now - 200;
    cr_assert_eq(learn_step_gain(1, -5.0, 100, 120, 30), LEARN_IDLE_GAIN, "kept: within a restart");
    cr_assert_eq(learn_step_gain(1, -5.0, 100, 140, 30), -5.0, "shrinking repays the restart");
    const char *pols[] = {"ringmaster", "precompute"};
    for (size_t p = 0; p < 2; p++) {
        j->remaining_epochs = 20 * 0.0256;
        struct sched_decision *d = sched_decide(sched_policy_find(pols[p]), &f.snap);
        cr_assert_eq(d->assign[0].gpus, 2, "%s: 20 s left, keeps its 2", pols[p]);
        sched_decision_destroy(d);
        j->remaining_epochs = 1000 * 0.0256;
        d = sched_decide(sched_policy_find(pols[p]), &f.snap);
        cr_assert_eq(d->assign[0].gpus, 1, "%s: 1,000 s left, back to its faster 1", pols[p]);
        sched_decision_destroy(d);
    }
}

/* Link classes (issue 32): a teacher that measured over PCIe and across switches teaches their
 * cost as a share of its 1-GPU step; a job measured only inside NVLink islands gets that share
 * of its own, so it is predicted slower spread over islands; one that measured PCIe keeps its
 * own term. */
Test(learn, a_class_a_job_has_not_measured_takes_the_teachers_share)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *t = teacher(&f, 1), *j = teacher(&f, 2);
    t->speed.theta[6] = 0.08;
    t->speed.theta[7] = 0.12;
    t->measured_links = (1u << SPEED_LINK_ISLAND) | (1u << SPEED_LINK_PCIE) |
                        (1u << SPEED_LINK_SWITCH) | (1u << SPEED_LINK_CROSS);
    j->measured_links = 1u << SPEED_LINK_ISLAND;
    for (int k = 0; k < SPEED_NFEATURES; k++)
        j->speed.theta[k] *= 2; /* twice as slow, its all-reduce too */
    struct learn_prior p;
    learn_prior(f.jobs, f.snap.njobs, &p);
    cr_assert_eq(p.npcie, 1, "only the teacher measured PCIe");
    cr_assert_float_eq(p.pcie, 0.08 / t1_of(&t->speed), 1e-12);
    cr_assert_float_eq(p.cross, 0.12 / t1_of(&t->speed), 1e-12);
    double before = speed_step_time_linked(&j->speed, 8, 1, SPEED_LINK_PCIE, 128);
    cr_assert_eq(learn_links(&j->speed, j->measured_links, &p), 1);
    double island = speed_step_time_linked(&j->speed, 8, 1, SPEED_LINK_ISLAND, 128);
    double pcie = speed_step_time_linked(&j->speed, 8, 1, SPEED_LINK_PCIE, 128);
    cr_assert_float_eq(before, island, 1e-12, "unmeasured, PCIe was free before");
    cr_assert_float_eq(pcie - island, 2 * 0.08, 1e-9, "the teacher's share of its own t1");
    /* a measured class keeps the job's own fit, and a second pass changes nothing */
    struct speed_model own = t->speed;
    cr_assert_eq(learn_links(&own, t->measured_links, &p), 0);
    cr_assert_eq(learn_links(&j->speed, j->measured_links, &p), 0);
}

/* The one-size rule counts the class of the step it measured: a step over PCIe holds the
 * prior's PCIe share, so the job's compute is less and inside an island it is faster. */
Test(learn, a_one_size_step_over_pcie_is_faster_inside_an_island)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    struct sched_job *t = teacher(&f, 1);
    t->speed.theta[6] = 0.1;
    t->measured_links = (1u << SPEED_LINK_ISLAND) | (1u << SPEED_LINK_PCIE);
    struct sched_job *j = one_size(&f, 2, 8, 0, 0, 0.6, 10);
    j->measured_step_link = SPEED_LINK_PCIE;
    j->measured_links = 1u << SPEED_LINK_PCIE;
    learn_apply(f.jobs, f.snap.njobs);
    cr_assert_eq(j->model_source, SCHED_MODEL_FITTED);
    double pcie = speed_step_time_linked(&j->speed, 8, 1, SPEED_LINK_PCIE, 128);
    double island = speed_step_time_linked(&j->speed, 8, 1, SPEED_LINK_ISLAND, 128);
    cr_assert_float_eq(pcie, 0.6, 1e-9, "it predicts what it measured");
    cr_assert_lt(island, pcie - 0.05, "inside an island it is faster: %g", island);
}

/* Issue 31 item 1: a learned elastic job on all 8 GPUs of two nodes of 4, a rigid 2-GPU job
 * arrives. The elastic one gives up what the arrival needs, 8 -> 6, not half of what it holds
 * (seen once live at 3dd05ab: 8 -> 4, two GPUs idle for the resize interval; not reproduced
 * here nor live since, 8 -> 6 twice). precompute, the paper's doubling heuristic, halves
 * (4): a baseline, left as it is. */
Test(learn, a_job_shrunk_for_an_arrival_keeps_what_the_arrival_leaves)
{
    static struct fx f;
    fx_init(&f, 2, 4);
    live_settings(&f);
    struct sched_job *a = fx_job(&f, 1, 1);
    a->model_source = SCHED_MODEL_FITTED;
    a->max_gpus = 8;
    a->measured_sizes = 4;
    a->measured_max_gpus = 8;
    memset(a->speed.theta, 0, sizeof(a->speed.theta));
    a->speed.theta[1] = 0.2 / 128; /* 0.2 s a step at 1 GPU, near-linear scaling */
    a->speed.theta[2] = 0.001;
    fx_hold(&f, a, 0, 0, 4);
    fx_hold(&f, a, 1, 0, 4);
    a->last_change_time = f.snap.now - 300;
    a->run_time = 300;
    struct sched_job *r = fx_job(&f, 2, 2);
    r->elastic = 0;
    r->model_source = SCHED_MODEL_NONE;
    r->speed.fitted = 0;
    for (int k = 0; k < 2; k++) {
        a->remaining_epochs = k ? 100 : 2; /* long, or little work left (~20 s) */
        struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &f.snap);
        cr_assert_eq(d->assign[1].gpus, 2, "the rigid job starts");
        cr_assert_eq(d->assign[0].gpus, 6, "the elastic one keeps the other 6, got %d",
                     d->assign[0].gpus);
        sched_decision_destroy(d);
    }
}
