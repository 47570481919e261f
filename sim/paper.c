/* paper: Table 3 of "Dynamic Scheduling of MPI-based Distributed Deep Learning
 * Training Jobs" reproduced with our core (see paper.h, docs/simulator.md). */
#include "paper.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "report.h"
#include "template.h"
#include "workload.h"

static const struct paper_scenario scenarios[PAPER_NSCENARIOS] = {
    {"extreme", 250, 206},
    {"moderate", 500, 114},
    {"none", 1000, 44},
};

static const struct {
    const char *policy;
    double h[PAPER_NSCENARIOS];
} published[] = {
    {"precompute", {7.63, 2.63, 1.40}}, {"exploratory", {20.42, 2.92, 1.47}},
    {"eight", {22.76, 6.20, 1.40}},     {"four", {12.90, 3.50, 2.21}},
    {"two", {11.49, 4.58, 3.78}},       {"one", {10.10, 6.32, 6.37}},
};

#define NPUBLISHED (sizeof(published) / sizeof(published[0]))

static const char usage[] =
    "usage: ringmaster-sim paper-table3 [--policies a,b,c] [--seed N]\n"
    "           [--format table|csv|json]\n"
    "\n"
    "Simulates the paper's Table 3: 8 nodes x 8 GPUs, ResNet-110 jobs arriving with\n"
    "exponential inter-arrival times of 250, 500 and 1000 s (206, 114 and 44 jobs:\n"
    "extreme, moderate and no contention), and prints each strategy's average job\n"
    "time in hours beside the paper's, with its ratio to Precompute.\n"
    "  --policies LIST  default: precompute,exploratory,eight,four,two,one\n"
    "  --seed N         arrival and epoch seed (default 1)\n"
    "  --format F       table (default), csv or json (rows of `run`, in seconds)\n";

const struct paper_scenario *paper_scenario(size_t i)
{
    return i < PAPER_NSCENARIOS ? &scenarios[i] : NULL;
}

double paper_published_h(const char *policy, size_t scenario)
{
    for (size_t i = 0; i < NPUBLISHED && scenario < PAPER_NSCENARIOS; i++)
        if (!strcmp(published[i].policy, policy))
            return published[i].h[scenario];
    return -1;
}

/* Simulates every scenario under every policy into rows (npolicies x 3). */
static int paper_rows(const struct sched_policy_ops *const *pol, size_t np, uint64_t seed,
                      double scale, struct report_row *rows, char *err, size_t errlen)
{
    struct template t;
    struct options_cluster c;
    if (template_get("resnet110", &t, err, errlen))
        return -1;
    if (options_cluster_make(&c, 8, 8)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct report_params prm = {.interval_s = 60, .resize_cost_s = 10, .seed = seed,
                                .min_resize_interval_s = SCHED_MIN_RESIZE_INTERVAL_S};
    int rc = 0;
    for (size_t s = 0; s < PAPER_NSCENARIOS && rc == 0; s++) {
        size_t n = (size_t)ceil((double)scenarios[s].jobs * scale);
        struct workload *w = workload_poisson(&t, 1, scenarios[s].mean_s, n ? n : 1, seed,
                                              c.total_gpus, err, errlen);
        if (!w) {
            rc = -1;
            break;
        }
        snprintf(w->name, sizeof(w->name), "%s", scenarios[s].name);
        for (size_t p = 0; p < np && rc == 0; p++)
            rc = report_run(w, &c, pol[p], &prm, &rows[p * PAPER_NSCENARIOS + s], err, errlen);
        workload_destroy(w);
    }
    options_cluster_free(&c);
    return rc;
}

int paper_compute(const struct sched_policy_ops *const *policies, size_t npolicies, uint64_t seed,
                  double jobs_scale, double *avg_h, char *err, size_t errlen)
{
    size_t n = npolicies * PAPER_NSCENARIOS;
    struct report_row *rows = calloc(n ? n : 1, sizeof(*rows));
    if (!rows || !(jobs_scale > 0 && jobs_scale <= 1)) {
        free(rows);
        snprintf(err, errlen, "paper: out of memory or jobs_scale outside (0, 1]");
        return -1;
    }
    int rc = paper_rows(policies, npolicies, seed, jobs_scale, rows, err, errlen);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            avg_h[i] = rows[i].result->avg_jct_s / 3600.0;
        report_row_clear(&rows[i]);
    }
    free(rows);
    return rc;
}

static void print_ours_and_paper(const struct sched_policy_ops *const *pol, size_t np,
                                 const struct report_row *rows)
{
    size_t pre = np;
    for (size_t p = 0; p < np; p++)
        if (!strcmp(pol[p]->name, "precompute"))
            pre = p;
    printf("Average job completion time (hours), 8 nodes x 8 GPUs, ResNet-110/CIFAR-10\n");
    printf("%-12s | %8s %8s %8s | %8s %8s %8s | %17s\n", "strategy", "extreme", "moderate", "none",
           "paper", "paper", "paper", "ours / precompute");
    for (size_t p = 0; p < np; p++) {
        printf("%-12s |", pol[p]->name);
        for (size_t s = 0; s < PAPER_NSCENARIOS; s++)
            printf(" %8.2f", rows[p * PAPER_NSCENARIOS + s].result->avg_jct_s / 3600.0);
        printf(" |");
        for (size_t s = 0; s < PAPER_NSCENARIOS; s++) {
            double h = paper_published_h(pol[p]->name, s);
            if (h < 0)
                printf(" %8s", "-");
            else
                printf(" %8.2f", h);
        }
        printf(" |");
        for (size_t s = 0; s < PAPER_NSCENARIOS && pre < np; s++)
            printf(" %5.2f", rows[p * PAPER_NSCENARIOS + s].result->avg_jct_s /
                                 rows[pre * PAPER_NSCENARIOS + s].result->avg_jct_s);
        printf("\n");
    }
}

static int parse(int argc, char **argv, const char **policies, uint64_t *seed,
                 enum options_format *fmt, char *err, size_t len)
{
    static const struct option longopts[] = {
        {"policies", required_argument, NULL, 'P'},
        {"seed", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h')
            return 1;
        if (c == 'P')
            *policies = optarg;
        else if (c == 'f' && options_format_parse(optarg, fmt, err, len))
            return -1;
        else if (c == 's' && options_long(optarg, 0, INT64_MAX, &n, "--seed", err, len))
            return -1;
        else if (c == 's')
            *seed = (uint64_t)n;
        else if (c != 'f') {
            snprintf(err, len, "unknown option (see --help)");
            return -1;
        }
    }
    if (optind < argc) {
        snprintf(err, len, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    return 0;
}

int paper_main(int argc, char **argv)
{
    const char *plist = "precompute,exploratory,eight,four,two,one";
    uint64_t seed = 1;
    enum options_format fmt = OPTIONS_TABLE;
    const struct sched_policy_ops *pol[OPTIONS_MAX_POLICIES];
    struct report_row rows[OPTIONS_MAX_POLICIES * PAPER_NSCENARIOS];
    char err[512];
    int rc = parse(argc, argv, &plist, &seed, &fmt, err, sizeof(err)), np;
    if (rc == 1) {
        fputs(usage, stdout);
        return 0;
    }
    if (rc ||
        (np = options_policies_parse(plist, pol, OPTIONS_MAX_POLICIES, err, sizeof(err))) < 0) {
        fprintf(stderr, "ringmaster-sim paper-table3: %s\n", err);
        return 2;
    }
    memset(rows, 0, sizeof(rows));
    rc = paper_rows(pol, (size_t)np, seed, 1.0, rows, err, sizeof(err));
    if (rc)
        fprintf(stderr, "ringmaster-sim paper-table3: %s\n", err);
    else if (fmt == OPTIONS_TABLE)
        print_ours_and_paper(pol, (size_t)np, rows);
    else
        report_print(stdout, fmt, rows, (size_t)np * PAPER_NSCENARIOS);
    for (size_t i = 0; i < (size_t)np * PAPER_NSCENARIOS; i++)
        report_row_clear(&rows[i]);
    return rc ? 1 : 0;
}
