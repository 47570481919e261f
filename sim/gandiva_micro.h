/* gandiva_micro: `ringmaster-sim gandiva-micro`, the Gandiva seed's micro-benchmarks
 * and cluster run reproduced with our core (docs/gandiva.md). */
#ifndef RINGMASTER_SIM_GANDIVA_MICRO_H
#define RINGMASTER_SIM_GANDIVA_MICRO_H

#include <stddef.h>
#include <stdint.h>

/* (a) Time-slicing: 6 one-GPU ResNet-110 jobs on one 4-GPU server under
 * gandiva, against 4 of them alone (fifo), over the first window_s seconds. */
struct gandiva_micro_timeslice {
    double window_s;
    double rate_sliced;    /* epochs/s of all 6 jobs together, time-sliced */
    double rate_exclusive; /* epochs/s of 4 jobs, each on its own GPU */
    double min_share, max_share; /* a sliced job's rate / its rate alone */
    long suspends;
};
int gandiva_micro_timeslice(struct gandiva_micro_timeslice *r, char *err, size_t errlen);

/* (b) Packing: two 1-GPU jobs on one GPU with utilisations u and u, over
 * window_s: the sum of their rates normalised by their rates alone. */
struct gandiva_micro_packing {
    double util;
    double normalised;   /* with packing (gandiva) */
    double sliced;       /* the same jobs time-sliced (utilisation unknown) */
    double model;        /* 2 * simulate_pack_factor(u, u): the pair's sum while packed */
    long packs, reverts;
};
int gandiva_micro_packing(double util, struct gandiva_micro_packing *r, char *err, size_t errlen);

/* (c) The trace run: a Philly slice under gandiva and fifo. */
struct gandiva_micro_cluster_fig {
    double avg_first100_s;
    double work_rate;   /* trace GPU-seconds of work done per second within the horizon */
    double avg_jct_s;
    long suspends, packs, reverts, migrations;
};
struct gandiva_micro_cluster {
    char trace[512];
    double horizon_s;
    size_t njobs;
    struct gandiva_micro_cluster_fig gandiva, fifo;
    struct gandiva_micro_cluster_fig slicing; /* gandiva with utilisation unknown: no packing */
};
int gandiva_micro_cluster_run(const char *trace, uint64_t seed, struct gandiva_micro_cluster *r,
                              char *err, size_t errlen);

/* The subcommand; argv[0] is "gandiva-micro". Returns the exit code. */
int gandiva_micro_main(int argc, char **argv);

#endif
