/* gpumap: the map of taken GPUs, one word a node (gpumap.h). */
#include "gpumap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_types.h"

uint64_t *gpumap_create(size_t nnodes)
{
    uint64_t *map = calloc(nnodes + 1, sizeof(*map));
    if (!map)
        errno = ENOMEM;
    return map;
}

void gpumap_clear(uint64_t *map, size_t nnodes)
{
    memset(map, 0, nnodes * sizeof(*map));
}

int gpumap_mark(uint64_t *map, const struct sched_slot *slots, int n)
{
    for (int k = 0; k < n; k++) {
        if (gpumap_taken(map, slots[k].node, slots[k].gpu))
            return -1;
        gpumap_take(map, slots[k].node, slots[k].gpu);
    }
    return 0;
}

void gpumap_mark_all(uint64_t *map, const struct sched_slot *slots, int n)
{
    for (int k = 0; k < n; k++)
        gpumap_take(map, slots[k].node, slots[k].gpu);
}

void gpumap_unmark(uint64_t *map, const struct sched_slot *slots, int n)
{
    for (int k = 0; k < n; k++)
        gpumap_free(map, slots[k].node, slots[k].gpu);
}

int gpumap_all_free(const uint64_t *map, const struct sched_slot *slots, int n)
{
    for (int k = 0; k < n; k++)
        if (gpumap_taken(map, slots[k].node, slots[k].gpu))
            return 0;
    return 1;
}

int gpumap_free_count(const uint64_t *map, int node, int ngpus)
{
    int n = 0;
    for (int g = 0; g < ngpus; g++)
        n += !gpumap_taken(map, node, g);
    return n;
}

void gpumap_held(uint64_t *map, const struct sched_snapshot *snap)
{
    gpumap_clear(map, snap->nnodes);
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        int leaves = 0;
        for (int k = 0; k < j->cur_gpus && !leaves; k++)
            leaves = gpumap_must_leave(&snap->nodes[j->slots[k].node], j->slots[k].gpu);
        if (!leaves)
            gpumap_mark_all(map, j->slots, j->cur_gpus);
    }
}

int gpumap_open(const struct sched_node *nd, uint64_t held)
{
    if (!nd->up || nd->ngpus <= 0)
        return 0;
    uint64_t all = nd->ngpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << nd->ngpus) - 1;
    uint64_t closed = ((nd->drained & (nd->evacuate ? all : ~held)) | nd->failed) & all;
    return nd->ngpus - __builtin_popcountll(closed);
}

int gpumap_must_leave(const struct sched_node *nd, int gpu)
{
    if (!nd->up)
        return 1;
    if (gpu < 0 || gpu >= 64)
        return 0;
    return ((nd->failed >> gpu) & 1) || (nd->evacuate && ((nd->drained >> gpu) & 1));
}
