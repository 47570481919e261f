/* paper: `ringmaster-sim paper-table3`, the first paper's Table 3 (average job
 * time on 64 GPUs under three arrival rates) beside ours. */
#ifndef RINGMASTER_SIM_PAPER_H
#define RINGMASTER_SIM_PAPER_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"

#define PAPER_NSCENARIOS 3

/* Scenario i: name ("extreme", "moderate", "none"), mean inter-arrival, jobs. */
struct paper_scenario {
    const char *name;
    double mean_s;
    size_t jobs;
};
const struct paper_scenario *paper_scenario(size_t i);

/* The paper's average JCT in hours for a strategy and scenario; < 0 if the
 * paper has no such strategy. */
double paper_published_h(const char *policy, size_t scenario);

/* Average JCT in hours of each policy (rows) in each scenario (columns) on
 * 8 nodes x 8 GPUs with the resnet110 template; jobs_scale (0 < s <= 1) keeps
 * that share of each scenario's jobs (1 for the paper's counts).
 * avg_h has npolicies * PAPER_NSCENARIOS entries. Returns 0, or -1 with err. */
int paper_compute(const struct sched_policy_ops *const *policies, size_t npolicies, uint64_t seed,
                  double jobs_scale, double *avg_h, char *err, size_t errlen);

/* The subcommand; argv[0] is "paper-table3". Returns the exit code. */
int paper_main(int argc, char **argv);

#endif
