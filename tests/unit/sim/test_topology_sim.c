/* The simulator's topology (issue 32): --cluster declares NVLink islands (8x8:a100@2x4), and a
 * run counts the multi-GPU placements that fit one node or one island and got one. */
#include <criterion/criterion.h>
#include <string.h>

#include "options.h"
#include "simulate/simulate.h"
#include "template.h"
#include "workload.h"

Test(topology_sim, cluster_declares_islands)
{
    struct options_cluster c;
    char err[256];
    cr_assert_eq(options_cluster_parse("2x8:a100@2x4,1x4:v100", &c, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_eq(c.nodes[1].island[3], 1);
    cr_assert_eq(c.nodes[1].island[4], 2);
    cr_assert_eq(c.nodes[2].island[0], 0, "no islands declared");
    options_cluster_free(&c);
    cr_assert_eq(options_cluster_parse("4x8@4x2", &c, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(c.nodes[3].island[7], 4);
    options_cluster_free(&c);
    cr_assert_neq(options_cluster_parse("2x8:a100@3x2", &c, err, sizeof(err)), 0);
    cr_assert(strstr(err, "6 GPUs, but the nodes have 8"), "%s", err);
    cr_assert_neq(options_cluster_parse("2x8@2", &c, err, sizeof(err)), 0);
}

/* ringmaster on 8x8:a100@2x4 under the paper's workload: every placement that fits a node
 * gets one, and at least 90 % of those that fit an island get one (98 % in docs/
 * evaluation.md's runs). */
Test(topology_sim, placements_stay_compact, .timeout = 120)
{
    struct options_cluster c;
    char err[256];
    struct template t;
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(options_cluster_parse("8x8:a100@2x4", &c, err, sizeof(err)), 0, "%s", err);
    struct workload *w = workload_poisson(&t, 1, 420, 100, 1, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find("ringmaster");
    struct simulate_result *r = simulate_run(&cfg, w->jobs, w->njobs, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    cr_assert_gt(r->fit_island, 50);
    cr_assert_eq(r->on_node, r->fit_node);
    cr_assert_geq((double)r->on_island, 0.9 * (double)r->fit_island, "%ld of %ld", r->on_island,
                  r->fit_island);
    simulate_result_destroy(r);
    workload_destroy(w);
    options_cluster_free(&c);
}
