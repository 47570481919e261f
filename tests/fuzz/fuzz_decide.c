/* Fuzz target: `ringmaster-sim decide`'s JSON snapshot reader (sim/decide_input.c). A snapshot
 * it refuses must say why; one it reads is checked by sched_validate(), which either
 * passes it or says why; a valid small one then goes through one scheduling round with
 * its policy, whose decision must be feasible: one entry per job, no GPU given twice
 * (except to a packed pair), every slot on a GPU that exists on a node that is up. */
#include <errno.h>
#include <string.h>

#include "decide_input.h"
#include "fuzz.h"
#include "sched.h"

#define SMALL_JOBS 32
#define SMALL_NODES 32

static void check_decision(const struct sched_snapshot *s, const struct sched_decision *d)
{
    unsigned char held[SMALL_NODES][SCHED_MAX_GPUS_PER_NODE];
    int packs = 0;
    memset(held, 0, sizeof(held));
    FUZZ_CHECK(d->njobs == s->njobs, "%zu entries for %zu jobs", d->njobs, s->njobs);
    for (size_t i = 0; i < d->njobs; i++)
        packs += d->assign[i].pack != SCHED_PACK_NONE;
    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        FUZZ_CHECK(a->job_id == s->jobs[i].id, "entry %zu is job %lld", i, (long long)a->job_id);
        FUZZ_CHECK(a->gpus >= 0 && a->reason, "entry %zu: gpus %d", i, a->gpus);
        for (int g = 0; g < a->gpus; g++) {
            struct sched_slot sl = a->slots[g];
            FUZZ_CHECK(sl.node >= 0 && (size_t)sl.node < s->nnodes && sl.gpu >= 0 &&
                           sl.gpu < s->nodes[sl.node].ngpus,
                       "job %lld: slot %d:%d does not exist", (long long)a->job_id, sl.node,
                       sl.gpu);
            FUZZ_CHECK(s->nodes[sl.node].up, "job %lld on node %d, which is down",
                       (long long)a->job_id, sl.node);
            FUZZ_CHECK(packs || !held[sl.node][sl.gpu]++, "GPU %d:%d given twice", sl.node,
                       sl.gpu);
        }
    }
}

static void decide_small(const struct decide_input *in, const struct sched_snapshot *s)
{
    const char *name = decide_input_policy(in);
    const struct sched_policy_ops *p = sched_policy_find(name ? name : "precompute");
    if (!p || s->njobs > SMALL_JOBS || s->nnodes > SMALL_NODES)
        return;
    struct sched_decision *d = sched_decide(p, s);
    FUZZ_CHECK(d || errno == ENOMEM, "policy %s refused a valid snapshot: %s", p->name,
               strerror(errno));
    if (d)
        check_decision(s, d);
    sched_decision_destroy(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    errno = 0;
    struct decide_input *in = decide_input_read((const char *)data, size, err, sizeof(err));
    if (!in) {
        FUZZ_CHECK(err[0] && (errno == EINVAL || errno == ENOMEM), "refused without reason");
        return 0;
    }
    const struct sched_snapshot *s = decide_input_snapshot(in);
    FUZZ_CHECK(s->nnodes > 0 && s->nodes, "read without nodes");
    if (sched_validate(s, err, sizeof(err)) < 0)
        FUZZ_CHECK(err[0], "sched_validate refused without a message");
    else
        decide_small(in, s);
    decide_input_destroy(in);
    return 0;
}
