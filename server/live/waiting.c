/* waiting: why waiting jobs wait: the reason, the queue position and the predicted start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "forecast.h"
#include "gpumap.h"
#include "model.h"
#include "plan_int.h"
#include "sched.h"
#include "snap.h"

/* ---- why waiting jobs wait ---- */

static int job_need(const struct snap_job *sj)
{
    return forecast_need(sj->elastic, sj->min_gpus, sj->gpus);
}

/* "needs 4 GPUs, 0 free; job 12 holds 8 GPUs: predicted to finish in 3 min (prior)": the jobs
 * that hold the GPUs and why the policy keeps them there (the core's sched_explain), after
 * what is free (most: on one node, or -1 for a single node). */
static void holders(const struct live_plan *p, const struct sched_explainer *e,
                    struct live_plan_job *pj, int need, int nfree, int most)
{
    char *out = pj->pending_reason;
    size_t len = sizeof(pj->pending_reason);
    int n = most < 0 ? snprintf(out, len, "needs %d GPUs, %d free on one node", need, nfree)
                     : snprintf(out, len, "needs %d GPUs, %d free (at most %d on one node)", need,
                                nfree, most);
    char why[sizeof(pj->pending_reason)];
    sched_explainer_text(e, (size_t)(pj - p->jobs), why, sizeof(why));
    const char *held = strchr(why, ';'); /* the core's text after its own "needs N, M free" */
    if (held && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "%s", held);
}

static void explain(const struct live_plan *p, const struct sched_explainer *e,
                    struct live_plan_job *pj, int nfree, int most, int up, int capacity)
{
    int need = job_need(pj->sj);
    char *out = pj->pending_reason;
    size_t len = sizeof(pj->pending_reason);
    if (up == 0)
        snprintf(out, len, "needs %d GPUs, no node is up", need);
    else if (need > capacity)
        snprintf(out, len, "needs %d GPUs, the cluster has %d on up nodes", need, capacity);
    else if (nfree < need)
        holders(p, e, pj, need, nfree, up == 1 ? -1 : most);
    else if (pj->reason && strcmp(pj->reason, DOMAIN_REASON_SWITCHES) == 0)
        sched_explainer_text(e, (size_t)(pj - p->jobs), out, len); /* "...; waiting for GPUs on
                                                                    * at most 1 switch (12 s
                                                                    * of 60 s)" */
    else
        snprintf(out, len, "needs %d GPUs, %d free: %s", need, nfree, pj->reason);
}

static int cmp_queue(const void *a, const void *b)
{
    const struct live_plan_job *x = *(struct live_plan_job *const *)a, *y = *(struct live_plan_job *const *)b;
    if (x->sj->priority != y->sj->priority)
        return x->sj->priority > y->sj->priority ? -1 : 1;
    if (x->sj->submit != y->sj->submit)
        return x->sj->submit < y->sj->submit ? -1 : 1;
    return x->sj->id < y->sj->id ? -1 : x->sj->id > y->sj->id;
}

/* The seconds waiting job k of the queue runs on need GPUs, by its model. */
static double queued_left(void *ctx, size_t k, int need)
{
    struct live_plan_job *const *q = ctx;
    return live_model_remaining_s(q[k]->model, need);
}

/* Predicted start of each waiting job in queue order (the core's forecast_starts): from the
 * GPUs free now and those of the running jobs as their models predict them to finish. */
static void predict_starts(struct live_plan *p, struct live_plan_job **q, size_t nq, int nfree)
{
    struct forecast_release *run = calloc(p->njobs + 1, sizeof(*run));
    struct forecast_wait *w = calloc(nq + 1, sizeof(*w));
    size_t nrun = 0;
    for (size_t i = 0; run && w && i < p->njobs; i++) {
        double left = live_model_remaining_s(p->jobs[i].model, p->jobs[i].gpus);
        if (p->jobs[i].gpus > 0 && left >= 0)
            run[nrun++] = (struct forecast_release){p->s->now + left, p->jobs[i].gpus};
    }
    for (size_t k = 0; run && w && k < nq; k++)
        w[k] = (struct forecast_wait){job_need(q[k]->sj), -1, -1};
    if (run && w && forecast_starts(p->s->now, nfree, run, nrun, w, nq, queued_left, q) == 0)
        for (size_t k = 0; k < nq; k++) {
            q[k]->predicted_start = w[k].start;
            q[k]->predicted_finish = w[k].finish;
        }
    free(run);
    free(w);
}

void live_plan_explain_waiting(struct live_plan *p)
{
    int nfree = 0, most = 0, up = 0, capacity = 0;
    for (size_t n = 0; n < p->s->nnodes; n++) {
        if (!p->s->nodes[n].up)
            continue;
        int f = gpumap_free_count(p->busy, (int)n, p->s->nodes[n].ngpus);
        nfree += f;
        most = f > most ? f : most;
        capacity += p->s->nodes[n].ngpus;
        up++;
    }
    struct live_plan_job **q = calloc(p->njobs + 1, sizeof(*q));
    size_t nq = 0;
    for (size_t i = 0; q && i < p->njobs; i++)
        if (p->jobs[i].sj->state == JOB_PENDING && p->jobs[i].change == CH_KEEP)
            q[nq++] = &p->jobs[i];
    if (!q)
        return;
    qsort(q, nq, sizeof(*q), cmp_queue);
    struct sched_explainer e; /* on ENOMEM it sums no user's GPUs: no quota is named */
    sched_explainer_init(&e, &p->snap, p->d);
    for (size_t k = 0; k < nq; k++) {
        q[k]->queue_position = (int)k + 1;
        explain(p, &e, q[k], nfree, most, up, capacity);
    }
    sched_explainer_fini(&e);
    predict_starts(p, q, nq, nfree);
    free(q);
}
