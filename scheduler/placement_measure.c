/* placement_measure: how good a plan's placement is (placement_measure.h): each job's spread
 * over nodes, switches and NVLink islands, and the cluster's fragmentation. */
#include <stdint.h>
#include <stdlib.h>

#include "domain.h"
#include "placement_measure.h"

/* The sizes of the cluster's domains (up nodes): its largest node, switch and NVLink island
 * in GPUs (switch 0: no node knows its switch; island 0: no node knows its islands). */
struct domains {
    int node, sw, island;
};

static void size_domains(const struct sched_snapshot *snap, struct domains *d, long *sum)
{
    size_t nn = snap->nnodes;
    d->node = 1;
    d->sw = 0;
    d->island = domain_island_size(snap->nodes, nn);
    for (size_t g = 0; g <= nn; g++)
        sum[g] = 0;
    for (size_t n = 0; n < nn; n++) {
        if (!snap->nodes[n].up)
            continue;
        d->node = snap->nodes[n].ngpus > d->node ? snap->nodes[n].ngpus : d->node;
        sum[domain_group(&snap->nodes[n], 0, nn)] += snap->nodes[n].ngpus;
    }
    for (size_t g = 1; g <= nn; g++)
        d->sw = sum[g] > d->sw ? (int)sum[g] : d->sw;
}

/* 1 + the distinct values among v[0..n) that no earlier one has (a job's slots are few). */
static long distinct(const long *v, int n)
{
    long c = 0;
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int q = 0; q < k && !seen; q++)
            seen = v[q] == v[k];
        c += !seen;
    }
    return c;
}

/* Job i's spread in plan p at each level (placement_level order): nodes beyond the fewest;
 * switches beyond 1 if it fits one; islands beyond 1 if it fits one. key holds gpus[i]. */
static void job_spread(const struct sched_snapshot *snap, const struct placement_plan *p, size_t i,
                       const struct domains *d, long *key, long out[3])
{
    const struct sched_slot *s = &p->slots[p->off[i]];
    int n = p->gpus[i];
    out[0] = out[1] = out[2] = 0;
    if (n < 2)
        return;
    for (int k = 0; k < n; k++)
        key[k] = s[k].node;
    out[PLACEMENT_LEVEL_NODE] = distinct(key, n) - (n + d->node - 1) / d->node;
    if (d->sw > 0 && n <= d->sw) {
        for (int k = 0; k < n; k++)
            key[k] = domain_group(&snap->nodes[s[k].node], 0, snap->nnodes);
        out[PLACEMENT_LEVEL_SWITCH] = distinct(key, n) - 1;
    }
    if (d->island > 0 && n <= d->island) {
        /* a GPU of no known island is an island of its own */
        for (int k = 0; k < n; k++) {
            int isl = snap->nodes[s[k].node].island[s[k].gpu];
            key[k] = (long)s[k].node * 256 + (isl ? isl : 128 + s[k].gpu);
        }
        out[PLACEMENT_LEVEL_ISLAND] = distinct(key, n) - 1;
    }
}

/* The largest job's GPUs in p (room for job_spread's keys). */
static int largest_job(const struct placement_plan *p)
{
    int m = 1;
    for (size_t i = 0; i < p->njobs; i++)
        m = p->gpus[i] > m ? p->gpus[i] : m;
    return m;
}

int placement_measure_spread(const struct sched_snapshot *snap, struct placement_plan *p)
{
    long *sum = malloc((snap->nnodes + 1) * sizeof(*sum));
    long *key = malloc((size_t)largest_job(p) * sizeof(*key)), out[3];
    struct domains d;
    if (!sum || !key) {
        free(sum);
        free(key);
        return -1;
    }
    size_domains(snap, &d, sum);
    p->spread = p->switch_spread = p->island_spread = 0;
    for (size_t i = 0; i < p->njobs; i++) {
        job_spread(snap, p, i, &d, key, out);
        p->spread += out[PLACEMENT_LEVEL_NODE];
        p->switch_spread += out[PLACEMENT_LEVEL_SWITCH];
        p->island_spread += out[PLACEMENT_LEVEL_ISLAND];
    }
    free(sum);
    free(key);
    return 0;
}

int placement_measure_gather(const struct sched_snapshot *snap, const struct placement_plan *from,
                             struct placement_plan *to, int level)
{
    int big = largest_job(from) > largest_job(to) ? largest_job(from) : largest_job(to);
    long *sum = malloc((snap->nnodes + 1) * sizeof(*sum));
    long *key = malloc((size_t)big * sizeof(*key)), a[3], b[3], best = 0;
    struct domains d;
    if (!sum || !key) {
        free(sum);
        free(key);
        return -1;
    }
    size_domains(snap, &d, sum);
    for (size_t i = 0; i < snap->njobs; i++) {
        job_spread(snap, from, i, &d, key, a);
        job_spread(snap, to, i, &d, key, b);
        if (a[level] - b[level] > best) {
            best = a[level] - b[level];
            to->gather = (long)i;
            to->gather_level = (enum placement_level)level;
        }
    }
    free(sum);
    free(key);
    return 0;
}

/* Size of the largest aligned free block in a node's free mask. */
static int largest_block(uint64_t free_mask)
{
    static const uint64_t aligned[PLACEMENT_BLOCK_ORDERS] = {
        UINT64_C(0xffffffffffffffff), UINT64_C(0x5555555555555555), UINT64_C(0x1111111111111111),
        UINT64_C(0x0101010101010101), UINT64_C(0x0001000100010001), UINT64_C(0x0000000100000001),
        UINT64_C(0x0000000000000001),
    };
    uint64_t f = free_mask;
    int best = f ? 1 : 0;

    for (int o = 1; o < PLACEMENT_BLOCK_ORDERS && f; o++) {
        f = f & (f >> (1 << (o - 1))) & aligned[o];
        if (f)
            best = 1 << o;
    }
    return best;
}

double placement_fragmentation(const struct sched_snapshot *snap, const uint64_t *busy)
{
    long free_total = 0, outside = 0;

    for (size_t n = 0; n < snap->nnodes; n++) {
        int ngpus = snap->nodes[n].ngpus;
        if (!snap->nodes[n].up || ngpus <= 0)
            continue;
        uint64_t all = ngpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << ngpus) - 1;
        uint64_t f = ~(busy[n] | snap->nodes[n].drained | snap->nodes[n].failed) & all;
        int nf = __builtin_popcountll(f);
        free_total += nf;
        outside += nf - largest_block(f);
    }
    return free_total ? (double)outside / (double)free_total : 0.0;
}
