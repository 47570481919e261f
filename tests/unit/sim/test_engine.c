/* The simulation engine: capacity never exceeded, every job finishes, time
 * only moves forward, the same seed gives the same output, the resize delay is
 * paid exactly on changes after the start, and exploring jobs see no model
 * until they have explored. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "simulate/simulate.h"
#include "template.h"
#include "workload.h"

struct watch {
    double last_now;
    int capacity;
    long rounds;
    int explored_none, explored_fitted;
    int explorer_rounds, explorer_not_8; /* rounds an exploring job held GPUs */
};

/* Checks every round on its own, independently of the engine's checks. */
static void watch_round(const struct sched_snapshot *s, const struct sched_decision *d, void *arg)
{
    struct watch *w = arg;
    cr_assert_geq(s->now, w->last_now, "time went back: %f after %f", s->now, w->last_now);
    w->last_now = s->now;
    w->rounds++;
    int used = 0;
    unsigned char seen[8][SCHED_MAX_GPUS_PER_NODE] = {{0}};
    cr_assert_eq(d->njobs, s->njobs);
    for (size_t i = 0; i < d->njobs; i++) {
        used += d->assign[i].gpus;
        for (int g = 0; g < d->assign[i].gpus; g++) {
            struct sched_slot sl = d->assign[i].slots[g];
            cr_assert(sl.node >= 0 && (size_t)sl.node < s->nnodes);
            cr_assert(sl.gpu >= 0 && sl.gpu < s->nodes[sl.node].ngpus);
            cr_assert_eq(seen[sl.node][sl.gpu], 0, "GPU %d/%d given twice", sl.node, sl.gpu);
            seen[sl.node][sl.gpu] = 1;
        }
        if (s->jobs[i].model_source == SCHED_MODEL_NONE)
            w->explored_none++;
        if (s->jobs[i].model_source == SCHED_MODEL_NONE && d->assign[i].gpus > 0) {
            w->explorer_rounds++;
            w->explorer_not_8 += d->assign[i].gpus != 8;
        }
        if (s->jobs[i].model_source == SCHED_MODEL_FITTED)
            w->explored_fitted++;
    }
    cr_assert_leq(used, w->capacity);
}

static struct workload *poisson(double mean, size_t n, uint64_t seed)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&t, 1, mean, n, seed, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    return w;
}

static struct simulate_result *run(const struct workload *w, const char *policy, double resize_cost,
                                   uint64_t seed, struct watch *watch)
{
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 8, 8), 0);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find(policy);
    cr_assert_not_null(cfg.policy, "policy %s missing", policy);
    cfg.view = strcmp(policy, "exploratory") ? SIMULATE_VIEW_PROFILE : SIMULATE_VIEW_EXPLORED;
    cfg.resize_cost_s = resize_cost;
    cfg.seed = seed;
    char err[256];
    struct simulate_result *r =
        simulate_run(&cfg, w->jobs, w->njobs, watch ? watch_round : NULL, watch, err, sizeof(err));
    cr_assert_not_null(r, "%s: %s", policy, err);
    options_cluster_free(&c);
    return r;
}

Test(engine, invariants_hold_under_every_policy)
{
    struct workload *w = poisson(300, 80, 7);
    for (const struct sched_policy_ops *const *p = sched_policy_list(); *p; p++) {
        struct watch watch = {.capacity = 64};
        struct simulate_result *r = run(w, (*p)->name, 10, 1, &watch);
        cr_assert_eq(r->njobs, w->njobs);
        cr_assert_gt(watch.rounds, 0);
        cr_assert_leq(r->max_gpus_in_use, 64, "%s", (*p)->name);
        cr_assert(r->utilization > 0 && r->utilization <= 1.0 + 1e-9, "%s util %f", (*p)->name,
                  r->utilization);
        for (size_t i = 0; i < r->njobs; i++) {
            const struct simulate_job_result *j = &r->jobs[i];
            cr_assert(isfinite(j->finish_time), "%s: job %lld never finished", (*p)->name,
                      (long long)j->id);
            cr_assert_geq(j->start_time, j->submit_time);
            cr_assert_gt(j->finish_time, j->start_time);
            cr_assert_geq(j->queue_s, 0);
        }
        cr_assert_leq(r->median_jct_s, r->p95_jct_s);
        simulate_result_destroy(r);
    }
    workload_destroy(w);
}

Test(engine, same_seed_same_output)
{
    struct workload *a = poisson(250, 60, 3), *b = poisson(250, 60, 3), *c = poisson(250, 60, 4);
    cr_assert_eq(memcmp(a->jobs, b->jobs, a->njobs * sizeof(*a->jobs)), 0);
    const char *pols[] = {"precompute", "exploratory"};
    for (int k = 0; k < 2; k++) {
        struct simulate_result *x = run(a, pols[k], 10, 5, NULL), *y = run(b, pols[k], 10, 5, NULL);
        struct simulate_result *z = run(c, pols[k], 10, 5, NULL);
        cr_assert_eq(memcmp(x->jobs, y->jobs, x->njobs * sizeof(*x->jobs)), 0, "%s", pols[k]);
        cr_assert_eq(x->avg_jct_s, y->avg_jct_s);
        cr_assert_eq(x->resizes, y->resizes);
        cr_assert_neq(x->avg_jct_s, z->avg_jct_s, "another seed, another workload");
        simulate_result_destroy(x);
        simulate_result_destroy(y);
        simulate_result_destroy(z);
    }
    workload_destroy(a);
    workload_destroy(b);
    workload_destroy(c);
}

Test(engine, lone_job_runs_at_its_true_speed)
{
    struct workload *w = poisson(1000, 1, 1);
    struct simulate_result *r = run(w, "eight", 10, 1, NULL);
    double expect = w->jobs[0].epochs / speed_epochs_per_second(&w->jobs[0].speed, 8);
    cr_assert_float_eq(r->jobs[0].jct_s, expect, 1e-6 * expect);
    cr_assert_eq(r->jobs[0].queue_s, 0);
    cr_assert_eq(r->resizes, 0);
    cr_assert_float_eq(r->utilization, 8.0 / 64.0, 1e-9);
    simulate_result_destroy(r);
    workload_destroy(w);
}

Test(engine, resize_delay_only_after_the_start)
{
    struct workload *w = poisson(400, 40, 2);
    /* A fixed strategy never resizes: the cost must not matter. */
    struct simulate_result *a = run(w, "eight", 0, 1, NULL), *b = run(w, "eight", 1000, 1, NULL);
    cr_assert_eq(a->resizes, 0);
    cr_assert_eq(a->avg_jct_s, b->avg_jct_s);
    /* Precompute resizes; a dearer restart makes jobs slower. */
    struct simulate_result *c = run(w, "precompute", 0, 1, NULL);
    struct simulate_result *d = run(w, "precompute", 600, 1, NULL);
    cr_assert_gt(c->resizes, 0);
    cr_assert_gt(d->avg_jct_s, c->avg_jct_s);
    simulate_result_destroy(a);
    simulate_result_destroy(b);
    simulate_result_destroy(c);
    simulate_result_destroy(d);
    workload_destroy(w);
}

Test(engine, exploring_jobs_see_a_model_only_after_exploring)
{
    struct workload *w = poisson(2000, 3, 9);
    struct watch watch = {.capacity = 64};
    struct simulate_result *r = run(w, "exploratory", 10, 1, &watch);
    cr_assert_gt(watch.explored_none, 0, "a new job starts without a model");
    cr_assert_gt(watch.explored_fitted, 0, "an explored job gets its fitted model");
    /* An exploring job holds 8 GPUs throughout (it runs 1, 2, 4, 8 of them in
     * turn), so it is not resized while exploring; it explores ten minutes
     * plus three restarts between stages before it sees its model. */
    cr_assert_gt(watch.explorer_rounds, 3, "exploring rounds: %d", watch.explorer_rounds);
    cr_assert_eq(watch.explorer_not_8, 0, "an explorer held other than 8 GPUs");
    for (size_t i = 0; i < r->njobs; i++)
        cr_assert_geq(r->jobs[i].finish_time - r->jobs[i].start_time, 630.0, "job %zu", i);
    simulate_result_destroy(r);
    workload_destroy(w);
}

static int allocate_nothing(const struct sched_snapshot *snap, int *want)
{
    (void)snap;
    (void)want;
    return 0;
}

Test(engine, a_policy_that_starves_everyone_is_reported)
{
    static const struct sched_policy_ops idle = {
        .name = "idle", .summary = "gives nothing", .allocate = allocate_nothing,
    };
    struct workload *w = poisson(100, 3, 1);
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 1, 8), 0);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = &idle;
    char err[256];
    struct simulate_result *r = simulate_run(&cfg, w->jobs, w->njobs, NULL, NULL, err, sizeof(err));
    cr_assert_null(r);
    cr_assert_eq(errno, EPROTO);
    cr_assert(strstr(err, "stuck"), "%s", err);
    options_cluster_free(&c);
    workload_destroy(w);
}

Test(engine, bad_input_is_refused_with_text)
{
    struct workload *w = poisson(100, 2, 1);
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 1, 8), 0);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find("one");
    w->jobs[1].epochs = 0;
    char err[256];
    cr_assert_null(simulate_run(&cfg, w->jobs, w->njobs, NULL, NULL, err, sizeof(err)));
    cr_assert_eq(errno, EINVAL);
    cr_assert(strstr(err, "epochs") && strstr(err, "job 2"), "%s", err);
    w->jobs[1].epochs = 10;
    cfg.interval_s = 0;
    cr_assert_null(simulate_run(&cfg, w->jobs, w->njobs, NULL, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "interval"), "%s", err);
    options_cluster_free(&c);
    workload_destroy(w);
}

Test(engine, prng_is_deterministic_and_uniform)
{
    uint64_t a = 11, b = 11;
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double u = simulate_rng_uniform(&a);
        cr_assert_eq(u, simulate_rng_uniform(&b));
        cr_assert(u >= 0 && u < 1);
        sum += u;
    }
    cr_assert_float_eq(sum / 10000, 0.5, 0.02);
}

static int allocate_four(const struct sched_snapshot *snap, int *want)
{
    for (size_t i = 0; i < snap->njobs; i++)
        want[i] = 4;
    return 0;
}

/* The run's idle_wanted_frac: GPU-time left idle while an elastic job held fewer than its
 * max_gpus, over the cluster's GPU-time. One job held at 4 of 16 GPUs: 12/16 of the run while
 * it may grow to 8, none when it may not grow. And idle_usable_frac, what of it the job would
 * have finished sooner with: 4/16 (bar the last restart's worth of its work). */
Test(engine, idle_gpus_while_an_elastic_job_wants_more_are_reported)
{
    static const struct sched_policy_ops four = {
        .name = "four", .summary = "4 GPUs each", .allocate = allocate_four,
    };
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    struct simulate_job_spec j = {.id = 1, .requested_gpus = 4, .min_gpus = 1, .max_gpus = 8,
                                  .elastic = 1, .epochs = 5, .speed = t.speed};
    struct options_cluster c;
    cr_assert_eq(options_cluster_make(&c, 1, 16), 0);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = &four;
    struct simulate_result *r = simulate_run(&cfg, &j, 1, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    cr_assert_float_eq(r->idle_wanted_frac, 12.0 / 16.0, 1e-9);
    /* Of the 12 idle, it would use 4 (up to its 8), and finish sooner on them (ResNet-110 on
     * 8 runs 1.9x its 4), while what it has left repays the restart. */
    cr_assert_gt(r->idle_usable_frac, 0.8 * 4.0 / 16.0, "%g", r->idle_usable_frac);
    cr_assert_leq(r->idle_usable_frac, 4.0 / 16.0 + 1e-9, "%g", r->idle_usable_frac);
    simulate_result_destroy(r);
    j.max_gpus = 4;
    r = simulate_run(&cfg, &j, 1, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    cr_assert_float_eq(r->idle_wanted_frac, 0, 1e-12);
    cr_assert_float_eq(r->idle_usable_frac, 0, 1e-12);
    simulate_result_destroy(r);
    options_cluster_free(&c);
}
