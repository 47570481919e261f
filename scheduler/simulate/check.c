/* check: the engine checks every decision against the cluster, so
 * a policy that overbooks a GPU or breaks a rule fails the run loudly. */
#include <errno.h>
#include <string.h>

#include "simulate_int.h"

/* Appends text to the error buffer (no stdio in the core). */
static void err_append(struct sim *s, const char *text)
{
    if (!s->err || s->errlen == 0)
        return;
    size_t have = strnlen(s->err, s->errlen - 1);
    size_t room = s->errlen - 1 - have;
    size_t n = strlen(text);
    if (n > room)
        n = room;
    memcpy(s->err + have, text, n);
    s->err[have + n] = '\0';
}

static void err_append_int(struct sim *s, long long v)
{
    char buf[24];
    char *p = buf + sizeof(buf) - 1;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    *p = '\0';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    err_append(s, p);
}

int simulate__fail(struct sim *s, int code, const char *what, long long job_id)
{
    err_append(s, what);
    if (job_id >= 0) {
        err_append(s, " (job ");
        err_append_int(s, job_id);
        err_append(s, ")");
    }
    errno = code;
    return -1;
}

/* A job's GPUs all of one model; its plan's host demand added to its nodes. */
static int check_models_and_host(struct sim *s, const struct sched_assignment *as, int64_t id)
{
    const struct sched_node *nodes = s->cfg->nodes;
    for (int g = 0; g < as->gpus; g++) {
        int n = as->slots[g].node;
        if (nodes[n].gpu_model != nodes[as->slots[0].node].gpu_model)
            return simulate__fail(s, EPROTO, "a job's GPUs are of different models", id);
        s->cores[n] += as->plan.cpu_cores;
        s->mem[n] += as->plan.host_mem_gb;
        if ((nodes[n].cpu_cores > 0 && s->cores[n] > nodes[n].cpu_cores + 1e-9) ||
            (nodes[n].host_mem_gb > 0 && s->mem[n] > nodes[n].host_mem_gb + 1e-9))
            return simulate__fail(s, EPROTO, "host CPU cores or memory over-committed", id);
    }
    return 0;
}

int simulate__is_shared(const struct sched_assignment *as)
{
    return as->pack == SCHED_PACK_PACK || as->pack == SCHED_PACK_KEEP;
}

/* The index in d of the partner of packed assignment a, checked: it names a
 * back, with the same action and the same slots. -1 if not. */
static long pair_partner(const struct sched_decision *d, size_t a)
{
    const struct sched_assignment *x = &d->assign[a];

    for (size_t b = 0; b < d->njobs; b++) {
        const struct sched_assignment *y = &d->assign[b];
        if (b == a || y->job_id != x->packed_with)
            continue;
        if (y->packed_with != x->job_id || y->pack != x->pack || y->gpus != x->gpus)
            return -1;
        for (int g = 0; g < x->gpus; g++)
            if (x->slots[g].node != y->slots[g].node || x->slots[g].gpu != y->slots[g].gpu)
                return -1;
        return (long)b;
    }
    return -1;
}

/* Checks one assignment's slots and marks them used; the second job of a
 * packed pair books nothing (its partner did). */
static int check_slots(struct sim *s, const struct sched_decision *d, size_t a, int *in_use)
{
    const struct sched_assignment *as = &d->assign[a];
    const struct sim_job *j = &s->jobs[s->active[a]];

    if (simulate__is_shared(as)) {
        long b = pair_partner(d, a);
        if (b < 0)
            return simulate__fail(s, EPROTO, "packed pair inconsistent", j->spec->id);
        if ((size_t)b < a) {
            s->max_per_gpu = 2;
            return 0;
        }
    }
    for (int g = 0; g < as->gpus; g++) {
        struct sched_slot sl = as->slots[g];
        if (sl.node < 0 || (size_t)sl.node >= s->cfg->nnodes || sl.gpu < 0 ||
            sl.gpu >= s->cfg->nodes[sl.node].ngpus)
            return simulate__fail(s, EPROTO, "slot outside the cluster", j->spec->id);
        if (!s->cfg->nodes[sl.node].up)
            return simulate__fail(s, EPROTO, "slot on a node that is down", j->spec->id);
        unsigned char *u = &s->used[s->node_off[sl.node] + sl.gpu];
        if (*u)
            return simulate__fail(s, EPROTO, "GPU given twice: capacity exceeded", j->spec->id);
        *u = 1;
        (*in_use)++;
    }
    return 0;
}

/* Checks every slot of the decision against the cluster and marks it used:
 * no GPU given twice, except to the two jobs of one packed pair. */
int simulate__check_decision(struct sim *s, const struct sched_decision *d)
{
    if (!d || d->njobs != s->nactive)
        return simulate__fail(s, EPROTO, "decision does not cover the snapshot's jobs", -1);
    memset(s->used, 0, (size_t)s->total_gpus);
    memset(s->cores, 0, s->cfg->nnodes * sizeof(*s->cores));
    memset(s->mem, 0, s->cfg->nnodes * sizeof(*s->mem));
    int in_use = 0;
    if (s->max_per_gpu < 1)
        s->max_per_gpu = 1;
    for (size_t a = 0; a < d->njobs; a++) {
        const struct sched_assignment *as = &d->assign[a];
        const struct sim_job *j = &s->jobs[s->active[a]];
        if (as->job_id != j->spec->id || as->gpus < 0 || (as->gpus > 0 && !as->slots))
            return simulate__fail(s, EPROTO, "decision out of order or malformed", j->spec->id);
        if (as->suspended && as->gpus > 0)
            return simulate__fail(s, EPROTO, "a suspended job holds GPUs", j->spec->id);
        if (check_slots(s, d, a, &in_use))
            return -1;
        if (check_models_and_host(s, as, j->spec->id))
            return -1;
    }
    if (in_use > s->max_in_use)
        s->max_in_use = in_use;
    return 0;
}
