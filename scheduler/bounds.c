/* bounds: the settings' defaults of a round's bounds and the packing bound from the nodes
 * (bounds.h). */
#include "bounds.h"

#include <math.h>

#include "sched.h"

double bounds_explore_stage_s(double s)
{
    return s > 0 && isfinite(s) ? s : SCHED_EXPLORE_STAGE_S;
}

double bounds_max_wait_s(double s)
{
    return s > 0 ? s : SCHED_MAX_WAIT_S;
}

double bounds_gpu_mem_bytes(const struct sched_node *nodes, size_t n)
{
    double gb = 0;
    for (size_t i = 0; i < n; i++) {
        double m = nodes[i].gpu_mem_gb;
        if (nodes[i].up && m > 0 && isfinite(m) && (gb <= 0 || m < gb))
            gb = m;
    }
    return gb * 1e9;
}
