/* domain: the cluster's topology as the core reads it (issue 32; internal to scheduler/):
 * the NVLink islands inside a node (sched_node.island), the switch and the rack a node hangs
 * off (switch_id, rack_id), and a job's bound on the switches it spans (sched_job.
 * max_switches, as Slurm's --switches=N@T). The one owner of these rules: placement.c uses
 * the islands and groups, sched.c and explain.c the bound. */
#ifndef RINGMASTER_DOMAIN_H
#define RINGMASTER_DOMAIN_H

#include <stdint.h>

#include "sched_types.h"

/* The reason of a job that waits for its switch bound (sched_assignment.reason). */
#define DOMAIN_REASON_SWITCHES "waiting: for GPUs on at most max_switches switches"

/* 1 if some GPU of nd has a known island. */
int domain_node_has_islands(const struct sched_node *nd);

/* The GPUs of nd in island k (1..64, as sched_node.island numbers them), as a mask. */
uint64_t domain_island_mask(const struct sched_node *nd, int k);

/* The group of node nd at the level asked: its switch (rack 0) or its rack (rack 1), 1..nnodes;
 * 0 when not known or out of range. */
int domain_group(const struct sched_node *nd, int rack, size_t nnodes);

/* The distinct switches that n slots span; nodes of no known switch count as one together
 * (a cluster without switch labels is one switch). */
int domain_switches(const struct sched_snapshot *snap, const struct sched_slot *slots, int n);

/* The link class (speed.h) that n slots span: CROSS over more than one known switch, SWITCH
 * over nodes of one, PCIE over two NVLink islands of one node (known islands; a GPU of no
 * known island counts as an island of its own), else ISLAND. nodes is the snapshot's. */
enum speed_link domain_link(const struct sched_node *nodes, size_t nnodes,
                            const struct sched_slot *slots, int n);

/* The GPUs of the largest NVLink island of the up nodes (0: no node knows its islands). */
int domain_island_size(const struct sched_node *nodes, size_t nnodes);

/* Seconds job j has waited for GPUs: now - max(submit_time, last_change_time), >= 0. */
double domain_waited_s(const struct sched_snapshot *snap, const struct sched_job *j);

/* 1 if j's switch bound still applies: it asks for max_switches > 0, holds no GPUs and has
 * waited less than max_switches_wait_s. */
int domain_switch_bound(const struct sched_snapshot *snap, const struct sched_job *j);

/* For callers building a snapshot: the island numbers a node reports for its n GPUs (raw[g]
 * >= 0, or < 0 not known) as sched_node.island's 1..64, in order of first appearance. */
void domain_islands_from(const int *raw, int n, unsigned char *island);

/* For callers building a snapshot: names[k] (a node's "switch" or "rack" label; NULL or ""
 * not known) as 1..n in order of first appearance, 0 for none, into ids[k]. */
void domain_number(const char *const *names, size_t n, int *ids);

#endif
