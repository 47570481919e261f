/* The ringmaster policy against every other policy of the core: on the
 * paper's Table 3 scenarios (mean of three seeds), on the Rubick-style
 * mixed-plan workload and on a mixed GPU-model cluster. Issue 7 aims at 1.6x
 * below Precompute under extreme contention; ours is about 1.2x (see
 * docs/evaluation.md), and this test guards what is reached: clearly below
 * Precompute, and the lowest of all policies in every scenario run. Also:
 * the cluster syntax with GPU models, and the gpt-* templates. */
#include <criterion/criterion.h>
#include <string.h>

#include "options.h"
#include "paper.h"
#include "report.h"
#include "template.h"
#include "workload.h"

static const char *const names[] = {"ringmaster", "precompute", "exploratory", "optimus",
                                    "fifo",       "tiresias",   "rubick",      "one",
                                    "two",        "four",       "eight",       "gandiva"};
#define NP (sizeof(names) / sizeof(names[0]))
#define NSEEDS 3

static void policies(const struct sched_policy_ops **pol)
{
    for (size_t i = 0; i < NP; i++) {
        pol[i] = sched_policy_find(names[i]);
        cr_assert_not_null(pol[i], "policy %s missing", names[i]);
    }
}

Test(ringmaster, lowest_on_the_papers_table3_and_below_precompute, .timeout = 120)
{
    const struct sched_policy_ops *pol[NP];
    double h[NP * PAPER_NSCENARIOS] = {0}, one[NP * PAPER_NSCENARIOS];
    char err[256];

    policies(pol);
    for (uint64_t seed = 1; seed <= NSEEDS; seed++) {
        cr_assert_eq(paper_compute(pol, NP, seed, 1.0, one, err, sizeof(err)), 0, "%s", err);
        for (size_t i = 0; i < NP * PAPER_NSCENARIOS; i++)
            h[i] += one[i] / NSEEDS;
    }
    for (size_t s = 0; s < PAPER_NSCENARIOS; s++)
        for (size_t p = 1; p < NP; p++)
            cr_assert_leq(h[s], h[p * PAPER_NSCENARIOS + s] * 1.001,
                          "%s: ringmaster %.2f h, %s %.2f h", paper_scenario(s)->name, h[s],
                          names[p], h[p * PAPER_NSCENARIOS + s]);
    /* extreme, moderate: at least 1.2x and 1.25x below Precompute (1.22x, 1.30x seen). */
    cr_assert_geq(h[PAPER_NSCENARIOS + 0], 1.2 * h[0], "extreme %.2f vs %.2f", h[0],
                  h[PAPER_NSCENARIOS]);
    cr_assert_geq(h[PAPER_NSCENARIOS + 1], 1.25 * h[1], "moderate %.2f vs %.2f", h[1],
                  h[PAPER_NSCENARIOS + 1]);
}

/* Average JCT of every policy on w over cluster spec; ringmaster's first. */
static void run_all(const char *cluster, const struct workload *w, double *avg)
{
    const struct sched_policy_ops *pol[NP];
    struct options_cluster c;
    struct report_params prm = {.interval_s = 60, .resize_cost_s = 10, .seed = 1,
                                .min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S};
    char err[256];

    policies(pol);
    cr_assert_eq(options_cluster_parse(cluster, &c, err, sizeof(err)), 0, "%s", err);
    for (size_t p = 0; p < NP; p++) {
        struct report_row row;
        cr_assert_eq(report_run(w, &c, pol[p], &prm, &row, err, sizeof(err)), 0, "%s", err);
        avg[p] = row.result->avg_jct_s;
        report_row_clear(&row);
    }
    options_cluster_free(&c);
}

static void assert_lowest(const double *avg, const char *what)
{
    for (size_t p = 1; p < NP; p++)
        cr_assert_lt(avg[0], avg[p], "%s: ringmaster %.0f s, %s %.0f s", what, avg[0], names[p],
                     avg[p]);
}

Test(ringmaster, lowest_on_mixed_plans_and_mixed_gpu_models, .timeout = 120)
{
    struct template t[TEMPLATE_NPLANS], r;
    double avg[NP];
    char err[256];

    cr_assert_eq(template_plans(t), 0);
    struct workload *w = workload_poisson(t, TEMPLATE_NPLANS, 400, 40, 1, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    run_all("8x8", w, avg);
    assert_lowest(avg, "plans on 8x8");
    run_all("4x8:a100,4x8:v100", w, avg);
    assert_lowest(avg, "plans on 4x8:a100,4x8:v100");
    workload_destroy(w);
    cr_assert_eq(template_get("resnet110", &r, err, sizeof(err)), 0, "%s", err);
    w = workload_poisson(&r, 1, 500, 114, 1, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    run_all("4x8:a100,4x8:v100", w, avg);
    assert_lowest(avg, "resnet110 on 4x8:a100,4x8:v100");
    workload_destroy(w);
    /* The paper's extreme arrivals on it: rubick was lower before ringmaster
     * started every job first while GPUs are plentiful (2.50 h, rubick 2.54). */
    w = workload_poisson(&r, 1, 250, 206, 1, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    run_all("4x8:a100,4x8:v100", w, avg);
    assert_lowest(avg, "resnet110, 250 s, on 4x8:a100,4x8:v100");
    workload_destroy(w);
}

Test(ringmaster, cluster_groups_with_gpu_models)
{
    struct options_cluster c;
    char err[256];

    cr_assert_eq(options_cluster_parse("2x8:a100,1x4:v100:32:256", &c, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_eq(c.nnodes, 3);
    cr_assert_eq(c.total_gpus, 20);
    cr_assert_eq(c.nodes[0].gpu_model, c.nodes[1].gpu_model);
    cr_assert_neq(c.nodes[0].gpu_model, c.nodes[2].gpu_model);
    cr_assert_gt(c.nodes[0].gpu_speed, c.nodes[2].gpu_speed);
    cr_assert_eq(c.nodes[2].cpu_cores, 32);
    cr_assert_float_eq(c.nodes[2].host_mem_gb, 256, 1e-9);
    cr_assert_gt(c.nodes[0].cpu_cores, 0);
    options_cluster_free(&c);
    cr_assert_eq(options_cluster_parse("8x8", &c, err, sizeof(err)), 0);
    cr_assert_eq(c.nodes[0].gpu_model, 0);
    cr_assert_eq(c.nodes[0].cpu_cores, 0);
    options_cluster_free(&c);
    cr_assert_neq(options_cluster_parse("2x8:b200", &c, err, sizeof(err)), 0);
    cr_assert(strstr(err, "b200"), "%s", err);
    cr_assert_neq(options_cluster_parse("2x8:a100:x", &c, err, sizeof(err)), 0);
}

Test(ringmaster, gpt_templates_carry_plans)
{
    struct template t[TEMPLATE_NPLANS];

    cr_assert_eq(template_plans(t), 0);
    for (size_t k = 0; k < TEMPLATE_NPLANS; k++) {
        cr_assert(plan_has_info(&t[k].plan), "%s", t[k].name);
        cr_assert_gt(t[k].epochs, 0);
        cr_assert_gt(plan_requested_rate(&t[k].speed, &t[k].plan, t[k].requested_gpus, 0), 0,
                     "%s: its requested plan must run on its requested GPUs", t[k].name);
    }
}
