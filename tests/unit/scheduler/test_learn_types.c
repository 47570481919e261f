/* learn_types and learn_fit per type: a job's model on each GPU model it measured (its own fit
 * from two sizes, the one-size rule from one), the estimate on a model it never ran on from
 * the ratios the cluster's jobs measured (with their spread as its uncertainty, the factors
 * when no job measured both), its replacement by a measurement, the optimistic use of an
 * estimate while its model's GPUs are idle, and each model's largest local batch. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "learn_types.h"
#include "sched.h"
#include "sched_estimate.h"

#define M 64.0
#define SLOW 4 /* a t4-like model: factor 0.4, 16 GB */
#define FAST 1 /* an a100-like model: factor 2.0, 80 GB */

static const struct sched_node nodes[] = {
    {.id = 1, .ngpus = 4, .up = 1, .gpu_model = SLOW, .gpu_speed = 0.4, .gpu_mem_gb = 16},
    {.id = 2, .ngpus = 4, .up = 1, .gpu_model = FAST, .gpu_speed = 2.0, .gpu_mem_gb = 80},
};

/* A job's true step at w GPUs (one node): compute c (theta0 = c/4, theta1 = 3c/4 / M) and a
 * ring all-reduce whose terms are comm. */
static double true_step(double c, double comm, int w)
{
    double f[SPEED_NFEATURES];
    speed_features_placed(w, 1, M, f);
    return c / 4 + 0.75 * c / M * f[1] + comm * (f[2] * 0.01 + f[3] * 0.2 + f[4] * 0.05);
}

static struct learn_obs obs(int w, int g, double c, double comm)
{
    return (struct learn_obs){.w = w,
                              .nodes = 1,
                              .gpu_model = g,
                              .gpu_speed = g == SLOW ? 0.4 : 2.0,
                              .step_s = true_step(c, comm, w),
                              .seconds = 100};
}

static const struct speed_model like = {.batch_per_gpu = M, .dataset_size = 50000};

Test(learn_types, each_model_measured_at_two_sizes_gets_its_own_fit)
{
    /* not one factor apart: compute 5x faster on FAST, communication the same */
    struct learn_obs o[] = {obs(1, SLOW, 1.0, 0.02), obs(2, SLOW, 1.0, 0.02),
                            obs(4, SLOW, 1.0, 0.02), obs(1, FAST, 0.2, 0.02),
                            obs(4, FAST, 0.2, 0.02)};
    struct sched_type_speed t[4];
    struct learn_prior none = {0};
    size_t n = learn_fit_types(o, 5, &like, NULL, &none, NULL, t, 4);
    cr_assert_eq(n, 2);
    cr_assert_eq(t[0].gpu_model, SLOW);
    cr_assert_eq(t[1].gpu_model, FAST);
    cr_assert_eq(t[0].source, SCHED_TYPE_MEASURED);
    cr_assert_eq(t[0].measured_sizes, 3);
    cr_assert_eq(t[1].measured_sizes, 2);
    for (int k = 0; k < 5; k++) {
        const struct sched_type_speed *e = o[k].gpu_model == SLOW ? &t[0] : &t[1];
        double got = speed_step_time_placed(&e->speed, o[k].w, 1, M);
        cr_assert(fabs(got - o[k].step_s) <= 0.03 * o[k].step_s, "w=%d g=%d: %g vs %g",
                  o[k].w, o[k].gpu_model, got, o[k].step_s);
    }
}

Test(learn_types, one_size_on_a_model_follows_the_one_size_rule)
{
    struct learn_obs o[] = {obs(2, FAST, 0.2, 0.02)};
    struct learn_prior p = {.fixed = 0.2, .intra = {0.01, 0.1, 0.02}, .nintra = 3};
    struct sched_type_speed t[2];
    cr_assert_eq(learn_fit_types(o, 1, &like, NULL, &p, NULL, t, 2), 1);
    cr_assert_eq(t[0].measured_sizes, 1);
    struct speed_model want = like;
    cr_assert(learn_speed_one_size(&want, o[0].step_s, 2, 1, M, &p));
    for (int k = 0; k < SPEED_NFEATURES; k++)
        cr_assert_float_eq(t[0].speed.theta[k], want.theta[k], 1e-12);
    /* it predicts what it measured there */
    cr_assert_float_eq(speed_step_time_placed(&t[0].speed, 2, 1, M), o[0].step_s,
                       1e-9 * o[0].step_s);
}

/* Three jobs: a and b measured both models (FAST at 0.5x and 0.3x their SLOW step), c only
 * SLOW. Each holds GPUs as given (slots on node 0 = SLOW, 1 = FAST). */
struct world {
    struct sched_job jobs[3];
    struct learn_obs o[3][4];
    struct learn_job_steps in[3];
    struct sched_type_speed types[3][LEARN_MAX_TYPES];
    struct sched_slot slots[3][4];
};

static void world_init(struct world *w, int fast_held)
{
    memset(w, 0, sizeof(*w));
    double ratio[2] = {0.5, 0.3};
    size_t nobs[3] = {0};
    for (int j = 0; j < 2; j++) {
        w->o[j][nobs[j]++] = obs(1, SLOW, 1.0, 0);
        w->o[j][nobs[j]++] = obs(2, SLOW, 1.0, 0);
        w->o[j][nobs[j]++] = obs(1, FAST, ratio[j], 0);
        w->o[j][nobs[j]++] = obs(2, FAST, ratio[j], 0);
    }
    w->o[2][nobs[2]++] = obs(1, SLOW, 2.0, 0);
    w->o[2][nobs[2]++] = obs(2, SLOW, 2.0, 0);
    for (int j = 0; j < 3; j++) {
        w->jobs[j] = (struct sched_job){.id = j + 1, .requested_gpus = 2, .elastic = 1,
                                        .speed = like};
        w->jobs[j].batch.max_local = 32;
        w->in[j] = (struct learn_job_steps){.obs = w->o[j], .nobs = nobs[j],
                                           .types = w->types[j], .cap = LEARN_MAX_TYPES,
                                           .max_local_model = -1};
    }
    /* jobs a and b hold the FAST GPUs when fast_held, else nothing */
    for (int j = 0; fast_held && j < 2; j++) {
        for (int g = 0; g < 2; g++)
            w->slots[j][g] = (struct sched_slot){.node = 1, .gpu = 2 * j + g};
        w->jobs[j].cur_gpus = 2;
        w->jobs[j].slots = w->slots[j];
    }
}

static double one_gpu(const struct sched_type_speed *t)
{
    return speed_step_time_placed(&t->speed, 1, 1, M);
}

Test(learn_types, an_unseen_model_is_estimated_from_the_ratios_jobs_measured)
{
    struct world w;
    world_init(&w, 1);
    learn_round(w.jobs, 3, nodes, 2, w.in);
    const struct sched_job *c = &w.jobs[2];
    cr_assert_eq(c->ntype_speeds, 2);
    const struct sched_type_speed *slow = sched_job_type_speed(c, SLOW);
    const struct sched_type_speed *fast = sched_job_type_speed(c, FAST);
    cr_assert(slow && fast);
    cr_assert_eq(slow->source, SCHED_TYPE_MEASURED);
    cr_assert_eq(fast->source, SCHED_TYPE_ESTIMATED);
    /* geometric mean of 0.5 and 0.3, the spread of their logs with the prior counted once */
    double x = 0.5 * log(0.5 / 0.3);
    double sigma = sqrt((2 * x * x + LEARN_SIGMA_PRIOR * LEARN_SIGMA_PRIOR) / 2);
    cr_assert_float_eq(fast->uncertainty, sigma, 1e-9);
    cr_assert_float_eq(one_gpu(fast) / one_gpu(slow), sqrt(0.5 * 0.3), 1e-6);
    /* a and b measured both: nothing estimated for them */
    for (int j = 0; j < 2; j++)
        for (size_t k = 0; k < w.jobs[j].ntype_speeds; k++)
            cr_assert_eq(w.jobs[j].type_speeds[k].source, SCHED_TYPE_MEASURED);
    /* the policies read it as any entry: the estimate, not the factor's 5x */
    double r = sched_job_rate_on(c, 1, FAST, 2.0, NULL), rs = sched_job_rate_on(c, 1, SLOW, 0.4, NULL);
    cr_assert_float_eq(r / rs, 1.0 / sqrt(0.15), 1e-6);
}

Test(learn_types, a_measurement_replaces_the_estimate)
{
    struct world w;
    world_init(&w, 1);
    w.o[2][w.in[2].nobs++] = obs(1, FAST, 1.4, 0); /* c runs there: 0.7x, not 0.39x */
    learn_round(w.jobs, 3, nodes, 2, w.in);
    const struct sched_type_speed *fast = sched_job_type_speed(&w.jobs[2], FAST);
    cr_assert(fast);
    cr_assert_eq(fast->source, SCHED_TYPE_MEASURED);
    cr_assert_eq(fast->measured_sizes, 1);
    cr_assert_float_eq(fast->uncertainty, 0, 1e-12);
    cr_assert_float_eq(one_gpu(fast), true_step(1.4, 0, 1), 1e-9);
}

Test(learn_types, without_a_job_that_measured_both_the_factors_say_with_a_wide_sigma)
{
    struct world w;
    world_init(&w, 0);
    double ratio, sigma;
    struct learn_ratios r;
    learn_ratios_make(&r, nodes, 2, w.jobs, 0);
    cr_assert_eq(learn_ratio(&r, SLOW, FAST, &ratio, &sigma), 0);
    cr_assert_float_eq(ratio, 0.4 / 2.0, 1e-12);
    cr_assert_float_eq(sigma, LEARN_SIGMA_PRIOR, 1e-12);
    cr_assert_eq(learn_ratio(&r, SLOW, 99, &ratio, &sigma), -1);
    /* c alone in the round: its estimate on FAST is its SLOW model at the factors' ratio,
     * made optimistic by its sigma since the FAST GPUs are idle */
    learn_round(&w.jobs[2], 1, nodes, 2, &w.in[2]);
    const struct sched_type_speed *slow = sched_job_type_speed(&w.jobs[2], SLOW);
    const struct sched_type_speed *fast = sched_job_type_speed(&w.jobs[2], FAST);
    cr_assert(slow && fast);
    cr_assert_eq(fast->source, SCHED_TYPE_ESTIMATED);
    cr_assert_float_eq(one_gpu(fast) / one_gpu(slow), 0.2 * exp(-LEARN_EXPERIMENT_SIGMAS * 0.5),
                       1e-6);
}

Test(learn_types, free_gpus_of_the_model_make_the_estimate_optimistic)
{
    struct world held, idle;
    world_init(&held, 1);
    world_init(&idle, 0);
    learn_round(held.jobs, 3, nodes, 2, held.in);
    learn_round(idle.jobs, 3, nodes, 2, idle.in);
    const struct sched_type_speed *h = sched_job_type_speed(&held.jobs[2], FAST);
    const struct sched_type_speed *i = sched_job_type_speed(&idle.jobs[2], FAST);
    cr_assert(h && i);
    cr_assert_float_eq(one_gpu(i) / one_gpu(h), exp(-LEARN_EXPERIMENT_SIGMAS * h->uncertainty),
                       1e-9);
    /* the rule itself leaves measured entries alone */
    struct sched_type_speed m = *sched_job_type_speed(&idle.jobs[2], SLOW);
    cr_assert_eq(learn_type_experiment(&m, 4, NULL), 0);
    struct sched_type_speed e = *h;
    cr_assert_eq(learn_type_experiment(&e, 0, NULL), 0);
    cr_assert_eq(learn_type_experiment(&e, 1, NULL), 1);
}

Test(learn_types, each_model_gets_a_largest_local_batch_by_its_memory)
{
    struct world w;
    world_init(&w, 1);
    w.in[2].max_local_model = SLOW; /* its 32 a GPU is known on the 16 GB model */
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert_float_eq(sched_job_type_speed(&w.jobs[2], SLOW)->max_local, 32, 1e-9);
    cr_assert_float_eq(sched_job_type_speed(&w.jobs[2], FAST)->max_local, 32 * 80 / 16.0, 1e-9);
    struct batch_spec b = sched_job_batch_on(&w.jobs[2], FAST);
    cr_assert_float_eq(b.max_local, 160, 1e-9);
    /* not known on any model: every model as the job's own */
    cr_assert_float_eq(sched_job_batch_on(&w.jobs[0], FAST).max_local, 32, 1e-9);
    /* and the nodes' size per model */
    cr_assert_eq(sched_job_type_speed(&w.jobs[2], FAST)->speed.gpus_per_node, 4);
}

/* What a job reports fits in one GPU of a model is that model's limit, and the basis of the
 * others' by their memory, before what it declared: the memory ratio guesses (a model's own
 * memory and activations do not scale with the GPU). */
Test(learn_types, a_reported_fit_is_its_models_limit_and_the_others_basis)
{
    struct world w;
    world_init(&w, 1);
    w.in[2].max_local_model = SLOW; /* declared 32 a GPU on the 16 GB model */
    const struct learn_fits fast_fits[] = {{FAST, 100}};
    w.in[2].fits = fast_fits;
    w.in[2].nfits = 1;
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert_float_eq(sched_job_type_speed(&w.jobs[2], FAST)->max_local, 100, 1e-9,
                       "reported, not 32 x 80 / 16");
    cr_assert_float_eq(sched_job_type_speed(&w.jobs[2], SLOW)->max_local, 100 * 16 / 80.0, 1e-9,
                       "scaled from the report");
    /* a report on each model: each its own */
    const struct learn_fits both[] = {{SLOW, 24}, {FAST, 100}};
    w.in[2].fits = both;
    w.in[2].nfits = 2;
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert_float_eq(sched_job_type_speed(&w.jobs[2], SLOW)->max_local, 24, 1e-9);
    cr_assert_float_eq(sched_job_type_speed(&w.jobs[2], FAST)->max_local, 100, 1e-9);
    cr_assert_float_eq(sched_job_batch_on(&w.jobs[2], FAST).max_local, 100, 1e-9);
}

Test(learn_types, a_job_that_measured_nothing_gets_no_entries)
{
    struct world w;
    world_init(&w, 1);
    w.in[2].nobs = 0;
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert_eq(w.jobs[2].ntype_speeds, 0);
    cr_assert_null(w.jobs[2].type_speeds);
}

Test(learn_types, measured_fields_say_what_the_rules_read)
{
    struct learn_obs o[] = {obs(2, FAST, 0.2, 0), obs(2, SLOW, 1.0, 0)};
    struct sched_job j = {0};
    learn_fit_measured(&j, o, 2);
    cr_assert_eq(j.measured_sizes, 1);
    cr_assert_eq(j.measured_max_gpus, 2);
    cr_assert_eq(j.measured_nodes, 1);
    /* the seconds-weighted mean step normalised to the reference GPU */
    cr_assert_float_eq(j.measured_step_s, (o[0].step_s * 2.0 + o[1].step_s * 0.4) / 2, 1e-12);
    learn_fit_measured(&j, o, 0);
    cr_assert_eq(j.measured_sizes, 0);
    cr_assert_eq(j.measured_max_gpus, 0);
}

/* A job whose scaling is known (its own fit from two sizes on SLOW) measured at one size on
 * FAST keeps its own communication there, which the core's model says the GPU model does not
 * change: its FAST model predicts FAST's truth at other sizes, which the prior's rule (no
 * teacher: perfect scaling) would not. */
Test(learn_types, one_size_on_a_new_model_keeps_the_jobs_own_communication)
{
    struct learn_obs o[] = {obs(1, SLOW, 1.0, 0.5), obs(2, SLOW, 1.0, 0.5),
                            obs(4, SLOW, 1.0, 0.5), obs(2, FAST, 0.2, 0.5)};
    struct speed_model own = like;
    struct learn_obs slow_only[] = {o[0], o[1], o[2]};
    /* its reference fit: SLOW's steps at factor 0.4 */
    cr_assert_eq(learn_fit_speed(&own, slow_only, 3), 0);
    struct learn_prior none = {0};
    struct sched_type_speed with[2], without[2];
    cr_assert_eq(learn_fit_types(o, 4, &like, &own, &none, NULL, with, 2), 2);
    cr_assert_eq(learn_fit_types(o, 4, &like, NULL, &none, NULL, without, 2), 2);
    cr_assert_eq(with[1].gpu_model, FAST);
    cr_assert_eq(with[1].measured_sizes, 1);
    for (int w = 1; w <= 4; w *= 2) {
        double truth = true_step(0.2, 0.5, w);
        double got = speed_step_time_placed(&with[1].speed, w, 1, M);
        cr_assert(fabs(got - truth) <= 0.03 * truth, "w=%d: %g vs %g", w, got, truth);
    }
    double t4 = true_step(0.2, 0.5, 4);
    cr_assert_gt(fabs(speed_step_time_placed(&without[1].speed, 4, 1, M) - t4), 0.05 * t4);
    /* both predict what was measured */
    cr_assert_float_eq(speed_step_time_placed(&with[1].speed, 2, 1, M), o[3].step_s,
                       1e-9 * o[3].step_s);
}

/* learn_round keeps each job's fits of two sizes or more in its cache and reuses them while the
 * caller's version of its steps is the same; a new version fits again. */
Test(learn_types, fits_are_reused_for_the_same_steps_only)
{
    struct world w;
    struct learn_fit_cache cache = {0};
    world_init(&w, 1);
    w.in[0].cache = &cache;
    w.in[0].version = 7;
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert(cache.valid);
    cr_assert_eq(cache.version, 7);
    cr_assert_eq(cache.n, 2);
    double fitted = one_gpu(sched_job_type_speed(&w.jobs[0], FAST));
    /* mark the cached fit: the same version takes it as it is */
    for (size_t k = 0; k < cache.n; k++)
        cache.fits[k].speed.theta[0] += 1.0;
    world_init(&w, 1);
    w.in[0].cache = &cache;
    w.in[0].version = 7;
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert_float_eq(one_gpu(sched_job_type_speed(&w.jobs[0], FAST)), fitted + 1.0, 1e-9);
    /* a new version of the steps fits them again */
    world_init(&w, 1);
    w.in[0].cache = &cache;
    w.in[0].version = 8;
    learn_round(w.jobs, 3, nodes, 2, w.in);
    cr_assert_float_eq(one_gpu(sched_job_type_speed(&w.jobs[0], FAST)), fitted, 1e-9);
    cr_assert_eq(cache.version, 8);
}

/* Free GPUs are free experiments, through the policy: a job measured on model 1 (at 1, 2 and 4
 * GPUs, its max) runs on its 4 GPUs there while model 2's 4 GPUs are idle; both models have
 * the same factor, so its estimate there is its model 1 speed. Used as it is, nothing gains
 * from moving: ringmaster keeps it. Used optimistically (its uncertainty, the GPUs idle), the
 * move is worth its restart: ringmaster tries it there, and its steps there will replace the
 * estimate. */
Test(learn_types, free_gpus_of_an_unseen_model_get_the_job_tried_there)
{
    static const struct sched_node two[] = {
        {.id = 1, .ngpus = 4, .up = 1, .gpu_model = 1, .gpu_speed = 1.0, .gpu_mem_gb = 32},
        {.id = 2, .ngpus = 4, .up = 1, .gpu_model = 2, .gpu_speed = 1.0, .gpu_mem_gb = 32},
    };
    static const double step[] = {0.4025, 0.4272, 0.4443}; /* ResNet-110 at 1, 2, 4 */
    struct learn_obs o[3];
    for (int k = 0; k < 3; k++)
        o[k] = (struct learn_obs){.w = 1 << k, .nodes = 1, .gpu_model = 1, .gpu_speed = 1.0,
                                  .step_s = step[k], .seconds = 300};
    int where[2];
    for (int optimistic = 0; optimistic < 2; optimistic++) {
        struct sched_slot slots[4];
        struct sched_job j = {.id = 1, .requested_gpus = 4, .min_gpus = 1, .max_gpus = 4,
                              .elastic = 1, .cur_gpus = 4, .slots = slots,
                              .remaining_epochs = 100, .model_source = SCHED_MODEL_FITTED};
        for (int g = 0; g < 4; g++)
            slots[g] = (struct sched_slot){.node = 0, .gpu = g};
        j.speed = (struct speed_model){.batch_per_gpu = 128, .dataset_size = 50000};
        cr_assert_eq(learn_fit_speed(&j.speed, o, 3), 0);
        learn_fit_measured(&j, o, 3);
        struct sched_type_speed types[LEARN_MAX_TYPES];
        struct learn_job_steps in = {.obs = o, .nobs = 3, .types = types,
                                     .cap = LEARN_MAX_TYPES, .max_local_model = -1};
        learn_round(&j, 1, two, 2, &in);
        cr_assert_eq(j.ntype_speeds, 2);
        cr_assert_eq(types[1].source, SCHED_TYPE_ESTIMATED);
        if (!optimistic) { /* the estimate as it is: model 1's, at the factors' ratio 1 */
            types[1].speed = types[0].speed;
            types[1].speed.gpus_per_node = 4;
        }
        struct sched_snapshot snap = {.now = 10000, .seed = 1, .nodes = two, .nnodes = 2,
                                      .jobs = &j, .njobs = 1, .resize_cost_s = 30};
        struct sched_decision *d = sched_decide(sched_policy_find("ringmaster"), &snap);
        cr_assert_not_null(d);
        cr_assert_eq(d->assign[0].gpus, 4);
        where[optimistic] = d->assign[0].slots[0].node;
        sched_decision_destroy(d);
    }
    cr_assert_eq(where[0], 0, "without the experiment rule it stays where it was measured");
    cr_assert_eq(where[1], 1, "with it, the idle model's GPUs are tried");
}

/* A probe: on idle GPUs of a model it never ran on, a job's estimate there is at least as
 * fast as its best measured model (its compute at parity, its own communication kept), so a
 * job that the cluster's ratios call slow there is still tried once; the measurement then
 * decides. Without idle GPUs, or for a measured entry, nothing changes. */
Test(learn_types, a_probe_at_parity_with_its_best_measured_model_on_idle_gpus)
{
    struct sched_type_speed best = {.gpu_model = 1, .source = SCHED_TYPE_MEASURED};
    best.speed.theta[0] = 0.01;
    best.speed.theta[1] = 0.001;
    best.speed.theta[2] = 0.002;
    best.speed.batch_per_gpu = 32;
    best.speed.fitted = 1;
    struct sched_type_speed est = best;
    est.gpu_model = 2;
    est.source = SCHED_TYPE_ESTIMATED;
    est.uncertainty = 0.5;
    est.speed.theta[0] = 0.05; /* the ratios say 5x slower */
    est.speed.theta[1] = 0.005;
    est.speed.theta[2] = 0.004;
    struct sched_type_speed busy = est;
    cr_assert_eq(learn_type_experiment(&busy, 0, &best.speed), 0);
    cr_assert_float_eq(busy.speed.theta[0], 0.05, 1e-15, "no idle GPUs: the estimate stays");
    cr_assert_eq(learn_type_experiment(&est, 4, &best.speed), 1);
    cr_assert_float_eq(est.speed.theta[0], 0.01, 1e-15);
    cr_assert_float_eq(est.speed.theta[1], 0.001, 1e-15);
    cr_assert_float_eq(est.speed.theta[2], 0.004, 1e-15, "its own communication kept");
    /* an estimate faster than parity keeps its optimism */
    struct sched_type_speed fast = best;
    fast.source = SCHED_TYPE_ESTIMATED;
    fast.uncertainty = 0.5;
    fast.speed.theta[0] = 0.002;
    fast.speed.theta[1] = 0.0002;
    cr_assert_eq(learn_type_experiment(&fast, 4, &best.speed), 1);
    cr_assert_float_eq(fast.speed.theta[0], 0.002 * exp(-LEARN_EXPERIMENT_SIGMAS * 0.5), 1e-15);
    struct sched_type_speed m = best;
    cr_assert_eq(learn_type_experiment(&m, 4, &best.speed), 0, "measured: left alone");
}
