/* bounds: the bounds a round runs under, as the snapshot takes them from the settings and
 * the nodes: the exploring stage's length and the longest wait (their SCHED_* defaults), and
 * the packing bound of GPU memory. */
#ifndef RINGMASTER_BOUNDS_H
#define RINGMASTER_BOUNDS_H

#include <stddef.h>

struct sched_node;

/* The exploring stage length of the setting explore_stage_s: s when above 0 and finite, else
 * the core's default SCHED_EXPLORE_STAGE_S (the paper's 150 s). */
double bounds_explore_stage_s(double s);

/* The longest wait of the setting max_wait_s: s when above 0, else SCHED_MAX_WAIT_S. */
double bounds_max_wait_s(double s);

/* The packing bound: memory of one GPU in bytes, the smallest of the up nodes of
 * nodes[0..n) whose GPU memory is known (above 0 and finite); 0 when none is (no bound). */
double bounds_gpu_mem_bytes(const struct sched_node *nodes, size_t n);

#endif
