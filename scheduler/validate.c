/* validate: the snapshot's checks before a round (validate.h; sched.h's sched_validate). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpumap.h"
#include "policies/pack.h"
#include "radix.h"
#include "sched_types.h"
#include "validate.h"

/* A message buffer filled without stdio: text and decimal integers. */
struct msg {
    char *buf;
    size_t len, cap;
};

static void msg_str(struct msg *m, const char *s)
{
    while (*s && m->len + 1 < m->cap)
        m->buf[m->len++] = *s++;
    if (m->cap)
        m->buf[m->len] = '\0';
}

static void msg_long(struct msg *m, long long v)
{
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[n++] = '-';
    char out[24];
    for (int k = 0; k < n; k++)
        out[k] = tmp[n - 1 - k];
    out[n] = '\0';
    msg_str(m, out);
}

static int fail(struct msg *m, const char *what, long long index, const char *detail)
{
    msg_str(m, what);
    if (index >= 0) {
        msg_str(m, " ");
        msg_long(m, index);
    }
    msg_str(m, ": ");
    msg_str(m, detail);
    errno = EINVAL;
    return -1;
}

static int validate_nodes(const struct sched_snapshot *snap, struct msg *m)
{
    if (snap->nnodes > 0 && !snap->nodes)
        return fail(m, "snapshot", -1, "nnodes > 0 but nodes is NULL");
    if (snap->nnodes > (size_t)INT_MAX / SCHED_MAX_GPUS_PER_NODE)
        return fail(m, "snapshot", -1, "too many nodes");
    for (size_t n = 0; n < snap->nnodes; n++)
        if (snap->nodes[n].ngpus < 0 || snap->nodes[n].ngpus > SCHED_MAX_GPUS_PER_NODE)
            return fail(m, "node", (long long)n, "ngpus must be 0..64");
    return 0;
}

static int validate_job(const struct sched_job *j, size_t i, struct msg *m)
{
    int min = j->min_gpus > 0 ? j->min_gpus : 1;
    int max = j->max_gpus > 0 ? j->max_gpus : INT_MAX;

    if (j->requested_gpus < 1)
        return fail(m, "job", (long long)i, "requested_gpus must be >= 1");
    if (min > max)
        return fail(m, "job", (long long)i, "min_gpus > max_gpus");
    if (j->requested_gpus < min || j->requested_gpus > max)
        return fail(m, "job", (long long)i, "requested_gpus outside min_gpus..max_gpus");
    if (j->cur_gpus < 0 || (j->cur_gpus > 0 && !j->slots))
        return fail(m, "job", (long long)i, "cur_gpus < 0, or slots missing");
    if (isnan(j->remaining_epochs) || isnan(j->submit_time) || isnan(j->run_time))
        return fail(m, "job", (long long)i, "NaN in remaining_epochs, submit_time or run_time");
    return 0;
}

static int has_slot(const struct sched_job *j, struct sched_slot s)
{
    for (int k = 0; k < j->cur_gpus; k++)
        if (j->slots[k].node == s.node && j->slots[k].gpu == s.gpu)
            return 1;
    return 0;
}

/* A packed job: its partner exists, is packed with it, on the same GPUs. */
static int validate_pack(const struct sched_snapshot *snap, size_t i, struct msg *m)
{
    const struct sched_job *j = &snap->jobs[i];
    long k = policy_pack_partner(snap, i);

    if (k < 0 || !snap->jobs[k].packed || snap->jobs[k].packed_with != j->id)
        return fail(m, "job", (long long)i, "packed with a job that is not packed with it");
    if (snap->jobs[k].cur_gpus != j->cur_gpus || j->cur_gpus == 0)
        return fail(m, "job", (long long)i, "packed but not on its partner's GPUs");
    for (int g = 0; g < j->cur_gpus; g++)
        if (!has_slot(&snap->jobs[k], j->slots[g]))
            return fail(m, "job", (long long)i, "packed but not on its partner's GPUs");
    return 0;
}

/* Slots on existing GPUs, none held twice except by the two jobs of a packed
 * pair. busy is a gpumap of the nodes, every GPU free. */
static int validate_slots(const struct sched_snapshot *snap, uint64_t *busy, struct msg *m,
                          int *packed)
{
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        *packed |= j->packed != 0;
        if (j->packed && validate_pack(snap, i, m))
            return -1;
        if (policy_pack_is_second(snap, i))
            continue;
        for (int k = 0; k < j->cur_gpus; k++) {
            struct sched_slot s = j->slots[k];
            if (s.node < 0 || (size_t)s.node >= snap->nnodes || s.gpu < 0 ||
                s.gpu >= snap->nodes[s.node].ngpus)
                return fail(m, "job", (long long)i, "a slot names no such node or GPU");
            if (gpumap_taken(busy, s.node, s.gpu))
                return fail(m, "job", (long long)i, "a slot names a GPU already held");
            gpumap_take(busy, s.node, s.gpu);
        }
    }
    return 0;
}

/* Unique ids: at once when they ascend (snapshots usually come by id; the job loop of
 * sched_validate() found that out), else sorted. */
static int validate_ids(const struct sched_snapshot *snap, int ascending, struct msg *m)
{
    size_t n = snap->njobs, i;

    if (ascending)
        return 0;
    struct radix_item *ids = malloc((n + 1) * sizeof(*ids));
    struct radix_item *tmp = malloc((n + 1) * sizeof(*tmp));
    if (!ids || !tmp) {
        free(ids);
        free(tmp);
        return fail(m, "snapshot", -1, "out of memory checking job ids");
    }
    for (i = 0; i < n; i++)
        ids[i] = (struct radix_item){radix_key_i64(snap->jobs[i].id), i};
    radix_sort(ids, tmp, n);
    free(tmp);
    for (i = 1; i < n; i++) {
        if (ids[i].key == ids[i - 1].key) {
            long long dup = (long long)snap->jobs[ids[i].idx].id;
            free(ids);
            return fail(m, "job id", dup, "appears twice");
        }
    }
    free(ids);
    return 0;
}

int sched_validate_packed(const struct sched_snapshot *snap, char *err, size_t errlen, int *packed)
{
    struct msg m = {err, 0, err ? errlen : 0};
    uint64_t *busy;
    int rc, ascending = 1;

    *packed = 0;
    msg_str(&m, "");
    if (!snap)
        return fail(&m, "snapshot", -1, "NULL");
    if (snap->njobs > 0 && !snap->jobs)
        return fail(&m, "snapshot", -1, "njobs > 0 but jobs is NULL");
    if (isnan(snap->now))
        return fail(&m, "snapshot", -1, "now is NaN");
    if (validate_nodes(snap, &m))
        return -1;
    for (size_t i = 0; i < snap->njobs; i++) {
        if (validate_job(&snap->jobs[i], i, &m))
            return -1;
        ascending &= i == 0 || snap->jobs[i].id > snap->jobs[i - 1].id;
    }
    busy = gpumap_create(snap->nnodes);
    if (!busy)
        return fail(&m, "snapshot", -1, "out of memory checking slots");
    rc = validate_slots(snap, busy, &m, packed);
    free(busy);
    if (rc == 0)
        rc = validate_ids(snap, ascending, &m);
    return rc;
}
