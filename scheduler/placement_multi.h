/* placement_multi: placement on heterogeneous, multi-resource clusters
 * (internal to scheduler/; sched_decide() calls it; docs/plans.md).
 *
 * Nodes are grouped by GPU model (sched_node.gpu_model). Every job is placed
 * within one group, by placement_create() on a view of the snapshot where
 * the other groups' nodes are down, so a job's GPUs are all of one model and
 * the buddy rules of placement.h hold inside each group. With one group this
 * is exactly placement_create().
 *
 * Host resources: job i needs plan[i]'s cpu_cores and host_mem_gb per GPU
 * (plan_demand() for the count it is placed with) on every node it uses. A node that advertises cpu_cores or
 * host_mem_gb (> 0) is never over-committed: while some node is, the job on it
 * that is cheapest to refuse (not kept in place, then the largest demand,
 * then the latest in priority, arrival, id order) waits and placement runs
 * again (at most njobs times). */
#ifndef RINGMASTER_PLACEMENT_MULTI_H
#define RINGMASTER_PLACEMENT_MULTI_H

#include "placement.h"
#include "sched_types.h"

/* Gives each job with want[i] > 0 and model[i] < 0 a GPU model: the model its
 * running GPUs are of if that group still has want[i] free GPUs, else the
 * group with the most free GPUs (ties: the lower model index). Jobs are taken
 * largest first. With one group every job gets it. Returns 0, or -1 (ENOMEM). */
int placement_multi_assign_models(const struct sched_snapshot *snap, const int *want, int *model);

/* Places the jobs as described above; want[i] is set to 0 for a job made to
 * wait for host resources; repack as placement_create_ex(). Returns a new plan
 * (placement_destroy), or NULL with errno ENOMEM. */
struct placement_plan *placement_multi_create(const struct sched_snapshot *snap, int *want,
                                              const int *model, const struct plan_choice *plan,
                                              int repack);

/* 1 if no node that advertises cpu_cores or host_mem_gb is over-committed by
 * the plan (job i using plan[i]'s per-GPU demand on each of its GPUs). */
int placement_multi_fits(const struct sched_snapshot *snap, const struct placement_plan *p,
                         const struct plan_choice *plan);

#endif
