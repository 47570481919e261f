/* Imperfect knowledge in the engine (scheduler/simulate/knowledge.c): the
 * policies see remaining work with an error or from a live convergence fit,
 * the truth stays in the engine; max_wait_s bounds every runnable wait. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "options.h"
#include "simulate/simulate.h"
#include "template.h"
#include "workload.h"

static struct workload *poisson(double mean, size_t n, uint64_t seed)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&t, 1, mean, n, seed, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    return w;
}

struct seen {
    long running, zero_while_running;
    long by_source[5];
    double max_ratio, min_ratio; /* shown / true remaining */
    const struct workload *w;
    double done_epochs_max;
};

static void watch(const struct sched_snapshot *s, const struct sched_decision *d, void *arg)
{
    struct seen *v = arg;
    (void)d;
    for (size_t i = 0; i < s->njobs; i++) {
        const struct sched_job *j = &s->jobs[i];
        v->by_source[j->remaining_source]++;
        if (j->cur_gpus > 0) {
            v->running++;
            v->zero_while_running += !(j->remaining_epochs > 0);
        }
    }
}

static struct simulate_result *run(const struct workload *w, const char *policy,
                                   struct simulate_config *cfg, struct seen *v)
{
    static struct options_cluster c; /* kept for the run's result; the last one's freed here */
    options_cluster_free(&c);
    cr_assert_eq(options_cluster_make(&c, 8, 8), 0);
    cfg->nodes = c.nodes;
    cfg->nnodes = c.nnodes;
    cfg->policy = sched_policy_find(policy);
    char err[256];
    struct simulate_result *r =
        simulate_run(cfg, w->jobs, w->njobs, v ? watch : NULL, v, err, sizeof(err));
    cr_assert_not_null(r, "%s: %s", policy, err);
    return r;
}

Test(sim_estimate, the_factor_is_lognormal_fixed_per_job_and_seed)
{
    double logs = 0, sq = 0;
    int n = 4000;

    cr_assert_eq(simulate_estimate_factor(1, 7, 0), 1.0);
    cr_assert_eq(simulate_estimate_factor(1, 7, 1), simulate_estimate_factor(1, 7, 1));
    cr_assert_neq(simulate_estimate_factor(1, 7, 1), simulate_estimate_factor(2, 7, 1));
    for (int i = 0; i < n; i++) {
        double l = log(simulate_estimate_factor(3, i, 1.0));
        logs += l;
        sq += l * l;
    }
    double mean = logs / n, sd = sqrt(sq / n - mean * mean);
    cr_assert_lt(fabs(mean), 0.06, "mean of log %f", mean);
    cr_assert_lt(fabs(sd - 1.0), 0.06, "sd of log %f", sd);
}

Test(sim_estimate, an_error_changes_what_policies_see_not_the_truth)
{
    struct workload *w = poisson(400, 40, 2);
    struct simulate_config cfg;

    simulate_config_init(&cfg);
    struct simulate_result *a = run(w, "precompute", &cfg, NULL);
    struct simulate_result *f0 = run(w, "fifo", &cfg, NULL);
    cfg.estimate_error = 2.0;
    struct simulate_result *b = run(w, "precompute", &cfg, NULL);
    struct simulate_result *f2 = run(w, "fifo", &cfg, NULL);
    cr_assert_neq(a->avg_jct_s, b->avg_jct_s, "precompute reads remaining work");
    /* fifo reads no estimate: the engine's truth is unchanged. */
    cr_assert_eq(f0->avg_jct_s, f2->avg_jct_s);
    cr_assert_eq(f0->makespan_s, f2->makespan_s);
    simulate_result_destroy(a);
    simulate_result_destroy(b);
    simulate_result_destroy(f0);
    simulate_result_destroy(f2);
    workload_destroy(w);
}

Test(sim_estimate, live_estimates_come_from_the_fit_and_never_say_now)
{
    struct workload *w = poisson(300, 40, 3);
    struct simulate_config cfg;
    struct seen v = {0};

    simulate_config_init(&cfg);
    cfg.estimate_live = 1;
    struct simulate_result *r = run(w, "ringmaster", &cfg, &v);
    cr_assert_gt(v.by_source[SCHED_EST_FIT], 0);
    cr_assert_gt(v.by_source[SCHED_EST_PRIOR] + v.by_source[SCHED_EST_ELAPSED], 0);
    cr_assert_eq(v.by_source[SCHED_EST_GIVEN], 0, "no oracle in live mode");
    cr_assert_eq(v.zero_while_running, 0, "a running job was shown 0 epochs to go");
    simulate_result_destroy(r);
    workload_destroy(w);
}

Test(sim_estimate, a_loss_curve_flattens_before_the_job_ends)
{
    struct conv_model m;
    double tol, at, lo = 1e9, hi = 0;

    for (int id = 0; id < 200; id++) {
        simulate_loss_curve(1, id, 146, &m, &tol, &at);
        cr_assert_float_eq(conv_steps_to_converge(&m, 0, 1.0, tol), at, 1.0);
        cr_assert_float_eq(conv_steps_to_converge(&m, at, 1.0, tol), 0.0, 1.0);
        lo = at < lo ? at : lo;
        hi = at > hi ? at : hi;
    }
    cr_assert(lo >= 0.4 * 146 && lo < 0.5 * 146, "earliest %f", lo);
    cr_assert(hi <= 146 && hi > 0.9 * 146, "latest %f", hi);
}

Test(sim_estimate, naive_live_estimates_say_now_the_rules_do_not)
{
    struct workload *w = poisson(300, 40, 3);
    struct simulate_config cfg;
    struct seen v = {0};

    simulate_config_init(&cfg);
    cfg.estimate_live = SIMULATE_LIVE_NAIVE;
    struct simulate_result *r = run(w, "ringmaster", &cfg, &v);
    cr_assert_gt(v.zero_while_running, 0, "the flattened fits say now");
    simulate_result_destroy(r);
    workload_destroy(w);
}

Test(sim_estimate, no_runnable_wait_exceeds_max_wait)
{
    struct workload *w = poisson(150, 60, 4);
    struct simulate_config cfg;

    simulate_config_init(&cfg);
    struct simulate_result *a = run(w, "fifo", &cfg, NULL);
    cr_assert_gt(a->max_queue_s, 3600.0, "the workload must contend: %f", a->max_queue_s);
    cfg.max_wait_s = 3600;
    struct simulate_result *b = run(w, "fifo", &cfg, NULL);
    cr_assert_leq(b->max_queue_s, 3600.0 + 1e-6, "waited %f s", b->max_queue_s);
    for (size_t i = 0; i < b->njobs; i++)
        cr_assert_leq(b->jobs[i].max_wait_s, 3600.0 + 1e-6);
    simulate_result_destroy(a);
    simulate_result_destroy(b);
    workload_destroy(w);
}
