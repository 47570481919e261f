/* domain: islands, switches, racks and a job's switch bound (domain.h). */
#include "domain.h"

#include <string.h>

int domain_node_has_islands(const struct sched_node *nd)
{
    for (int g = 0; g < nd->ngpus && g < SCHED_MAX_GPUS_PER_NODE; g++)
        if (nd->island[g])
            return 1;
    return 0;
}

uint64_t domain_island_mask(const struct sched_node *nd, int k)
{
    uint64_t m = 0;
    for (int g = 0; g < nd->ngpus && g < SCHED_MAX_GPUS_PER_NODE; g++)
        if (nd->island[g] == k)
            m |= UINT64_C(1) << g;
    return m;
}

int domain_group(const struct sched_node *nd, int rack, size_t nnodes)
{
    int g = rack ? nd->rack_id : nd->switch_id;
    return g > 0 && (size_t)g <= nnodes ? g : 0;
}

int domain_switches(const struct sched_snapshot *snap, const struct sched_slot *slots, int n)
{
    int count = 0;
    for (int k = 0; k < n; k++) {
        int sw = domain_group(&snap->nodes[slots[k].node], 0, snap->nnodes), seen = 0;
        for (int q = 0; q < k && !seen; q++)
            seen = domain_group(&snap->nodes[slots[q].node], 0, snap->nnodes) == sw;
        count += !seen;
    }
    return count;
}

enum speed_link domain_link(const struct sched_node *nodes, size_t nnodes,
                            const struct sched_slot *slots, int n)
{
    int multi = 0, sw0 = n > 0 ? domain_group(&nodes[slots[0].node], 0, nnodes) : 0;
    for (int k = 1; k < n; k++) {
        if (slots[k].node == slots[0].node)
            continue;
        int sw = domain_group(&nodes[slots[k].node], 0, nnodes);
        if (sw && sw0 && sw != sw0)
            return SPEED_LINK_CROSS;
        multi = 1;
    }
    if (multi)
        return SPEED_LINK_SWITCH;
    if (n < 2 || !domain_node_has_islands(&nodes[slots[0].node]))
        return SPEED_LINK_ISLAND;
    const struct sched_node *nd = &nodes[slots[0].node];
    int first = nd->island[slots[0].gpu];
    for (int k = 1; k < n; k++)
        if (!first || nd->island[slots[k].gpu] != first)
            return SPEED_LINK_PCIE;
    return SPEED_LINK_ISLAND;
}

int domain_island_size(const struct sched_node *nodes, size_t nnodes)
{
    int best = 0;
    for (size_t n = 0; n < nnodes; n++) {
        const struct sched_node *nd = &nodes[n];
        if (!nd->up || !domain_node_has_islands(nd))
            continue;
        for (int k = 1; k <= SCHED_MAX_GPUS_PER_NODE; k++) {
            int c = __builtin_popcountll(domain_island_mask(nd, k));
            best = c > best ? c : best;
        }
    }
    return best;
}

double domain_waited_s(const struct sched_snapshot *snap, const struct sched_job *j)
{
    double since = j->last_change_time > j->submit_time ? j->last_change_time : j->submit_time;
    return snap->now > since ? snap->now - since : 0.0;
}

int domain_switch_bound(const struct sched_snapshot *snap, const struct sched_job *j)
{
    return j->max_switches > 0 && j->cur_gpus == 0 &&
           domain_waited_s(snap, j) < j->max_switches_wait_s;
}

void domain_islands_from(const int *raw, int n, unsigned char *island)
{
    int next = 1;
    for (int g = 0; g < n && g < SCHED_MAX_GPUS_PER_NODE; g++) {
        island[g] = 0;
        for (int q = 0; q < g && raw[g] >= 0 && !island[g]; q++)
            if (raw[q] == raw[g])
                island[g] = island[q];
        if (raw[g] >= 0 && !island[g])
            island[g] = (unsigned char)next++;
    }
}

void domain_number(const char *const *names, size_t n, int *ids)
{
    int next = 1;
    for (size_t k = 0; k < n; k++) {
        ids[k] = 0;
        if (!names[k] || !names[k][0])
            continue;
        /* a quadratic scan: labels are read once a round, and clusters have few switches */
        for (size_t q = 0; q < k && !ids[k]; q++)
            if (ids[q] && strcmp(names[q], names[k]) == 0)
                ids[k] = ids[q];
        if (!ids[k])
            ids[k] = next++;
    }
}
