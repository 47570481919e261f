/* gpumap: which GPUs of a snapshot's nodes are taken, one 64-bit word a node (bit g of word
 * n: GPU g of node n; SCHED_MAX_GPUS_PER_NODE is 64). The one map every part that books GPUs
 * uses: the snapshot's check (no GPU held twice), placement's fragmentation, Gandiva's
 * gathering and the server's check of what of a decision may change now. */
#ifndef RINGMASTER_GPUMAP_H
#define RINGMASTER_GPUMAP_H

#include <stddef.h>
#include <stdint.h>

struct sched_slot;

/* A map for nnodes nodes, every GPU free (calloc: nnodes + 1 words, so 0 nodes is fine).
 * Returns it (free() it), or NULL with errno ENOMEM. */
uint64_t *gpumap_create(size_t nnodes);

/* Every GPU of the map's nnodes nodes free again. */
void gpumap_clear(uint64_t *map, size_t nnodes);

/* 1 if GPU gpu of node node is taken. */
static inline int gpumap_taken(const uint64_t *map, int node, int gpu)
{
    return (map[node] >> gpu) & 1;
}

/* Takes GPU gpu of node node (taking a taken one changes nothing). */
static inline void gpumap_take(uint64_t *map, int node, int gpu)
{
    map[node] |= UINT64_C(1) << gpu;
}

/* Frees GPU gpu of node node. */
static inline void gpumap_free(uint64_t *map, int node, int gpu)
{
    map[node] &= ~(UINT64_C(1) << gpu);
}

/* Takes n slots. Returns 0, or -1 when one of them was taken already (the slots before it
 * are then taken, the rest not). */
int gpumap_mark(uint64_t *map, const struct sched_slot *slots, int n);

/* Takes n slots, taken or not. */
void gpumap_mark_all(uint64_t *map, const struct sched_slot *slots, int n);

/* Frees n slots. */
void gpumap_unmark(uint64_t *map, const struct sched_slot *slots, int n);

/* 1 if none of n slots is taken. */
int gpumap_all_free(const uint64_t *map, const struct sched_slot *slots, int n);

/* Free GPUs of a node of ngpus GPUs. */
int gpumap_free_count(const uint64_t *map, int node, int ngpus);

struct sched_node;
struct sched_snapshot;

/* Takes every GPU that a job of snap holds and may keep (none of its GPUs is one it must
 * leave, gpumap_must_leave()); map of snap->nnodes words, cleared first. */
void gpumap_held(uint64_t *map, const struct sched_snapshot *snap);

/* The GPUs of node nd that work can use, where held is its word of gpumap_held(): none when
 * it is down; else its GPUs less the failed ones (sched_node.failed) and the drained ones
 * (sched_node.drained) that no job holds, or every drained one when it evacuates. */
int gpumap_open(const struct sched_node *nd, uint64_t held);

/* 1 if a job on GPU gpu of node nd must leave it: the node is down, the GPU failed, or it
 * is drained with evacuate. */
int gpumap_must_leave(const struct sched_node *nd, int gpu);

#endif
