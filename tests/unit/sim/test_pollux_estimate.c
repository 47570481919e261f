/* The Pollux setting without an oracle (issue 34 item 2, `pollux --estimate declared`): each
 * job shows what its user submitted (its application's epochs, a stop at its target error)
 * and its remaining work comes only from the core's estimate rules; the engine still trains
 * the truth. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "pollux.h"
#include "pollux_apps.h"
#include "report.h"

TestSuite(pollux_estimate, .init = pollux_apps_load, .fini = pollux_apps_free);

Test(pollux_estimate, each_application_reports_an_error_that_falls_to_its_target)
{
    for (size_t k = 0; k < PROFILE_NAPPS; k++) {
        const struct simulate_grad *g = &pollux_apps[k].grad;
        cr_assert_not_null(g->error, "%s", pollux_apps[k].name);
        cr_expect_gt(g->target_error, 0, "%s", pollux_apps[k].name);
        for (size_t r = 0; r < g->nruns; r++) {
            const double *e = g->error + r * g->nepochs;
            for (size_t i = 1; i < g->nepochs; i++)
                cr_expect_leq(e[i], e[i - 1], "%s: the best error so far never rises",
                              pollux_apps[k].name);
            cr_expect_lt(e[g->nepochs - 1], e[0], "%s at %g: it falls", pollux_apps[k].name,
                         g->batch[r]);
            /* every run reaches the target by its last epoch, none at its first */
            cr_expect_leq(e[g->nepochs - 1], g->target_error, "%s", pollux_apps[k].name);
            cr_expect_gt(e[0], g->target_error, "%s at %g", pollux_apps[k].name, g->batch[r]);
        }
    }
    /* accuracy as its error: cifar10 stops near 6 % (94 % accuracy) */
    cr_expect(pollux_apps[1].grad.target_error > 0.04 && pollux_apps[1].grad.target_error < 0.08,
              "%g", pollux_apps[1].grad.target_error);
}

struct seen {
    long jobs, by_source[5], shown_truth;
    double worst_under; /* smallest shown / true remaining */
};

static const struct workload *watched;

static double true_remaining(const struct sched_job *j)
{
    for (size_t k = 0; k < watched->njobs; k++)
        if (watched->jobs[k].id == j->id)
            return watched->jobs[k].epochs - j->epochs_done;
    return NAN;
}

static void watch(const struct sched_snapshot *s, const struct sched_decision *d, void *arg)
{
    struct seen *v = arg;
    (void)d;
    for (size_t i = 0; i < s->njobs; i++) {
        const struct sched_job *j = &s->jobs[i];
        double truth = true_remaining(j);
        v->jobs++;
        v->by_source[j->remaining_source]++;
        cr_assert(j->remaining_epochs > 0 && isfinite(j->remaining_epochs),
                  "job %lld: %g epochs shown", (long long)j->id, j->remaining_epochs);
        v->shown_truth += fabs(j->remaining_epochs - truth) < 1e-9;
        if (truth > 1 && j->remaining_epochs / truth < v->worst_under)
            v->worst_under = j->remaining_epochs / truth;
    }
}

static struct workload *draw(int adaptive)
{
    char trace[1024], err[256];
    pollux_default_trace(trace, sizeof(trace));
    struct pollux_opts o = {.jobs = 40,
                            .start_s = 7200,
                            .window_s = 28800,
                            .seed = 3,
                            .adaptive = adaptive,
                            .cluster_gpus = 64};
    struct workload *w = pollux_workload(trace, pollux_apps, &o, err, sizeof(err));
    cr_assert(w, "%s", err);
    return w;
}

static struct simulate_result *run(const struct workload *w, int declared, struct seen *v)
{
    static struct options_cluster c;
    options_cluster_free(&c);
    cr_assert_eq(options_cluster_make(&c, 16, 4), 0);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find("ringmaster");
    cfg.resize_cost_s = 30;
    cfg.estimate_declared = declared;
    char err[256];
    watched = w;
    struct simulate_result *r =
        simulate_run(&cfg, w->jobs, w->njobs, v ? watch : NULL, v, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    return r;
}

Test(pollux_estimate, the_policies_see_the_declared_length_and_the_fit_not_the_truth)
{
    struct workload *w = draw(1);
    for (size_t k = 0; k < w->njobs; k++)
        cr_expect_eq(w->jobs[k].declared_epochs,
                     (double)pollux_apps[w->jobs[k].id % 16].grad.nepochs);
    struct seen v = {.worst_under = INFINITY};
    struct simulate_result *r = run(w, 1, &v);
    cr_expect_eq(r->njobs, w->njobs, "every job trains its true length and ends");
    cr_expect_gt(v.by_source[SCHED_EST_DECLARED], 0);
    cr_expect_gt(v.by_source[SCHED_EST_FIT], 0, "the fit of the reported errors shortens some");
    cr_expect_eq(v.by_source[SCHED_EST_GIVEN], 0, "no job is shown the truth as given");
    cr_expect_lt(v.shown_truth, v.jobs / 2, "%ld of %ld shown exactly the truth", v.shown_truth,
                 v.jobs);
    cr_expect_lt(v.worst_under, 0.9, "a fit predicted some job shorter than it is");
    /* the oracle run of the same jobs: the truth, given */
    struct seen o = {.worst_under = INFINITY};
    simulate_result_destroy(run(w, 0, &o));
    cr_expect_eq(o.by_source[SCHED_EST_GIVEN], o.jobs);
    cr_expect_eq(o.shown_truth, o.jobs);
    simulate_result_destroy(r);
    workload_destroy(w);
}

Test(pollux_estimate, a_declared_length_is_what_the_job_sees_without_a_reported_error)
{
    struct workload *w = draw(0);
    /* no error reported (the core's other workloads): the declared length alone, twice the
     * truth here, less what it has done; the engine still ends each job at its truth */
    struct simulate_grad plain[PROFILE_NAPPS];
    for (size_t k = 0; k < w->njobs; k++) {
        struct simulate_job_spec *j = &w->jobs[k];
        size_t a = (size_t)(j->id % 16);
        plain[a] = pollux_apps[a].grad;
        plain[a].error = NULL;
        j->grad = &plain[a];
        j->declared_epochs = 2 * j->epochs;
    }
    struct seen v = {.worst_under = INFINITY};
    struct simulate_result *r = run(w, 1, &v);
    cr_expect_eq(r->njobs, w->njobs);
    cr_expect_eq(v.by_source[SCHED_EST_FIT], 0);
    cr_expect_eq(v.by_source[SCHED_EST_DECLARED], v.jobs);
    cr_expect_geq(v.worst_under, 1.0, "a declared length twice the truth is never below it");
    simulate_result_destroy(r);
    workload_destroy(w);
}

Test(pollux_estimate, a_job_that_declares_no_length_is_planned_by_its_fit_and_the_prior)
{
    struct workload *w = draw(1);
    for (size_t k = 0; k < w->njobs; k++)
        w->jobs[k].declared_epochs = 0; /* `--estimate target` */
    struct seen v = {.worst_under = INFINITY};
    struct simulate_result *r = run(w, 1, &v);
    cr_expect_eq(r->njobs, w->njobs);
    cr_expect_eq(v.by_source[SCHED_EST_DECLARED], 0);
    cr_expect_eq(v.by_source[SCHED_EST_GIVEN], 0);
    cr_expect_gt(v.by_source[SCHED_EST_FIT], 0);
    cr_expect_gt(v.by_source[SCHED_EST_PRIOR] + v.by_source[SCHED_EST_ELAPSED], 0,
                 "a job without a fit, or past it, gets the prior or its elapsed time");
    simulate_result_destroy(r);
    workload_destroy(w);
}

Test(pollux_estimate, the_option_is_oracle_declared_or_target)
{
    char *bad[] = {"pollux", "--estimate", "live", NULL};
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = pollux_main(3, bad);
    fclose(stderr);
    stderr = saved;
    cr_expect_eq(rc, 2, "an unknown mode is a usage error");
}
