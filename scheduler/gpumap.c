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
