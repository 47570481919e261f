/* placement_measure: the plans of placement.h, and how good one is: how far its jobs spread
 * beyond the fewest nodes, switches and NVLink islands that could hold them, which job a
 * consolidation gathered, and how fragmented the free GPUs are. The placement passes score
 * their plans with it; placement.h includes it. Pure. */
#ifndef RINGMASTER_PLACEMENT_MEASURE_H
#define RINGMASTER_PLACEMENT_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "sched_types.h"

/* The buddy orders of free blocks: 1, 2, 4, ..., 64 GPUs. */
#define PLACEMENT_BLOCK_ORDERS 7

/* The level a consolidation gathered a job at: onto fewer nodes, one switch, one island; or
 * room for a job that could not be placed at all without it. */
enum placement_level {
    PLACEMENT_LEVEL_NODE,
    PLACEMENT_LEVEL_SWITCH,
    PLACEMENT_LEVEL_ISLAND,
    PLACEMENT_LEVEL_ROOM
};

struct placement_plan {
    struct sched_slot *slots; /* all slots; job i's are slots[off[i]..off[i]+gpus[i]) */
    size_t *off;
    int *gpus; /* what each job got (<= want) */
    int *kept; /* 1: the job keeps exactly the GPUs it holds */
    size_t njobs;
    double fragmentation;
    long spread;     /* nodes spanned beyond the fewest possible, all jobs */
    long short_gpus; /* GPUs asked for but not placed */
    /* Appended (issue 32): the spread at the other levels, all jobs: switches spanned by a job
     * that fits one switch beyond 1, islands spanned by a job that fits one island beyond 1. */
    long switch_spread, island_spread;
    long migrations; /* running jobs of unchanged count moved by a plan from empty */
    long gather;     /* the job (index) a plan from empty made room for; -1 none */
    enum placement_level gather_level;
};

/* Sums every job's spread into p (spread, switch_spread, island_spread): nodes beyond the
 * fewest that hold it; switches beyond 1 for a job that fits one; islands beyond 1 for a
 * job that fits one. Returns 0, or -1 out of memory. */
int placement_measure_spread(const struct sched_snapshot *snap, struct placement_plan *p);

/* The job whose spread at level (enum placement_level, below ROOM) the plan to cut most
 * against the plan from (ties: the first in snapshot order) into to->gather and
 * gather_level; nothing when none cut it. Returns 0, or -1 out of memory. */
int placement_measure_gather(const struct sched_snapshot *snap, const struct placement_plan *from,
                             struct placement_plan *to, int level);

/* Fragmentation of a cluster whose GPU g on node n is busy when bit g of
 * busy[n] is set; nodes that are not up are ignored. */
double placement_fragmentation(const struct sched_snapshot *snap, const uint64_t *busy);

#endif
