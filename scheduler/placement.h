/* placement: maps the GPU counts a policy chose onto nodes and GPUs (internal
 * to scheduler/; sched_decide() calls it).
 *
 * Rules, in order:
 *  - A running job whose count is unchanged keeps its GPUs (no needless
 *    migration), unless one of them is on a node that is not up.
 *  - Other jobs are placed largest first (ties: priority, arrival, id) as in a
 *    buddy allocator: each up node's free GPUs are kept as aligned power-of-two
 *    blocks, and a job of s <= node-size GPUs takes the smallest free block of
 *    2^ceil(log2 s) GPUs (a 4-GPU job lands on GPUs 0-3 or 4-7 of an 8-GPU
 *    node); the unused tail of the block goes back as smaller blocks.
 *  - With no such block, the node with the fewest free GPUs that still holds
 *    s takes it (smallest blocks first). A job bigger than every node's free
 *    space takes the emptiest nodes whole, then places its remainder as above:
 *    that spans the fewest nodes.
 *  - Topology (domain.h; only where nodes know it, so a cluster without it is
 *    placed exactly as above): a job that fits an NVLink island of an up node
 *    takes the island with the fewest free GPUs that holds it (on the fullest
 *    node among equals), before the buddy rule; a job bigger than every node's
 *    free space goes, where nodes know their switch or rack, to the switch with
 *    the fewest free GPUs that holds it, else such a rack (the emptiest of its
 *    nodes whole, the remainder on the fullest that holds it); else as above.
 *    So a job sits in the smallest domain that holds it: island, node, switch,
 *    rack.
 *  - If keeping running jobs in place left some job spread over more nodes
 *    than it needs, the whole cluster is planned again from empty, largest
 *    first, each unchanged job taking its old GPUs back where they are still
 *    free, and others choosing, among the first free blocks of each size, one
 *    that no unchanged job still holds; that plan wins only if it spreads
 *    strictly less (the migrations it makes are the price of defragmenting).
 *    The same at every level of the topology (issue 32 item 4): a job that fits
 *    one switch but spans several, or fits one NVLink island but spans several,
 *    counts as spread too (nodes first, then switches, then islands), and in the
 *    plan from empty a job that finds no island free of GPUs that unchanged jobs
 *    hope to get back takes the fullest island that holds it, displacing them
 *    (they are placed again elsewhere: migrations). A plan from empty is taken
 *    only if it migrates at most PLACEMENT_MAX_MIGRATIONS running jobs; the job
 *    whose spread it cut most is the one it makes room for (gather, gather_level).
 *  - A count that cannot be placed (the policy asked for more than is free) is
 *    cut to the free GPUs if the job is elastic and that is >= its min_gpus,
 *    else the job waits. The result never exceeds a node nor books a GPU twice.
 *
 * Fragmentation: the fraction of free GPUs (on up nodes) that lie outside the
 * largest free aligned block of their own node. 0 when each node's free GPUs
 * form one aligned block (or nothing is free); near 1 when free GPUs are
 * scattered singly. */
#ifndef RINGMASTER_PLACEMENT_H
#define RINGMASTER_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "placement_measure.h"
#include "sched_types.h"

/* The most running jobs a plan from empty may move in one round (consolidation's bound). */
#define PLACEMENT_MAX_MIGRATIONS 8


/* Places want[i] GPUs for each job i of a validated snapshot. Returns a new
 * plan, or NULL with errno ENOMEM. */
struct placement_plan *placement_create(const struct sched_snapshot *snap, const int *want);

/* placement_create() with repack 1; with repack 0 the cluster is never planned
 * again from empty: a running job whose count is unchanged keeps its GPUs
 * even where moving it would let another job span fewer nodes (for policies
 * that must not migrate, sched_policy_ops.keeps_slots). */
struct placement_plan *placement_create_ex(const struct sched_snapshot *snap, const int *want,
                                           int repack);

/* Frees the plan; NULL is a no-op. */
void placement_destroy(struct placement_plan *p);

/* An empty plan sized for want (room for want[i] slots of each job, nothing placed yet),
 * for a caller that fills or merges plans itself. NULL when out of memory. */
struct placement_plan *placement_plan_empty(const struct sched_snapshot *snap, const int *want);


#endif
