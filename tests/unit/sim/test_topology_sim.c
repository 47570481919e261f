/* The simulator's topology (issue 32): --cluster declares NVLink islands (8x8:a100@2x4), a
 * run counts the multi-GPU placements that fit one node or one island and got one, the truth
 * charges the link classes from the profiles, and a topology-blind run is slower. */
#include <criterion/criterion.h>
#include <string.h>

#include "options.h"
#include "profile.h"
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

/* The resnet110 jobs' link classes (template.h) are what profile_link_shares() reads from
 * shared/profiles/cifar10 at the paper's 128 examples per GPU. */
Test(topology_sim, resnet_link_shares_come_from_the_cifar10_profile)
{
    char err[256];
    struct profile *p = profile_load("cifar10", err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    double pcie, cross;
    cr_assert_eq(profile_link_shares(p, 128, &pcie, &cross), 3,
                 "w = 2, 3, 4 on one node and on several");
    cr_assert_float_eq(pcie, TEMPLATE_RESNET_PCIE_SHARE, 5e-4, "%g", pcie);
    cr_assert_float_eq(cross, TEMPLATE_RESNET_CROSS_SHARE, 5e-4, "%g", cross);
    profile_destroy(p);
    struct template t;
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    double t1 = speed_step_time_placed(&t.speed, 1, 1, t.speed.batch_per_gpu);
    cr_assert_float_eq(t.speed.theta[6], TEMPLATE_RESNET_PCIE_SHARE * t1, 1e-12);
    cr_assert_float_eq(t.speed.theta[7], TEMPLATE_RESNET_CROSS_SHARE * t1, 1e-12);
}

/* Mean JCT of ringmaster on 16x4:a100@2x2 over 4 switches (nodes 0-3, 4-7, ...), 100 jobs of
 * the paper's workload at 420 s (about 80 % load), seeing the topology or not (topology_blind):
 * the truth charges each job the link classes it spans either way. */
static double mean_jct(int blind)
{
    struct options_cluster c;
    char err[256];
    struct template t;
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(options_cluster_parse("16x4:a100@2x2", &c, err, sizeof(err)), 0, "%s", err);
    for (size_t n = 0; n < c.nnodes; n++)
        c.nodes[n].switch_id = 1 + (int)(n / 4);
    struct workload *w = workload_poisson(&t, 1, 420, 100, 1, 64, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find("ringmaster");
    cfg.topology_blind = blind;
    struct simulate_result *r = simulate_run(&cfg, w->jobs, w->njobs, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    double jct = r->avg_jct_s;
    simulate_result_destroy(r);
    workload_destroy(w);
    options_cluster_free(&c);
    return jct;
}

/* Seeing the topology pays (docs/evaluation.md section 9: 3799 s against 4272 s). */
Test(topology_sim, seeing_the_topology_shortens_jobs_across_switches, .timeout = 120)
{
    double aware = mean_jct(0), blind = mean_jct(1);
    cr_assert_lt(aware, 0.95 * blind, "aware %g s, blind %g s", aware, blind);
}
