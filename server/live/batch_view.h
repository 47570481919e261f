/* batch_view: why a running job with a batch model runs the batch it runs after a round
 * (docs/api.md, "The model object": model.batch_choice): its batch, GPUs, statistical
 * efficiency there and the goodput against its initial batch on those GPUs, as the core rates
 * them (sched_batch_rate), e.g. "batch 46 on 2 GPUs: goodput 1.29x of batch 16". Private to
 * live/. */
#ifndef RINGMASTER_LIVE_BATCH_VIEW_H
#define RINGMASTER_LIVE_BATCH_VIEW_H

#include <jansson.h>
#include <stdint.h>

struct live_plan;
struct live_plan_job;

struct live_batch_view {
    int shown;        /* 0: the job waits or has no batch model (nothing to say) */
    long batch, init; /* the global batch it runs after the round, its initial one */
    int gpus;
    int adaptive;      /* the scheduler chooses its batch */
    double efficiency; /* goodput_efficiency at batch, from its gradient statistics */
    double goodput_x;  /* goodput at batch over goodput at init on its GPUs; <= 0 unknown */
    char why[160];
};

/* Fills *v for job pj of plan p (the batch it runs after the round: a change's, else its
 * current one). */
void live_batch_view(const struct live_plan *p, const struct live_plan_job *pj,
                     struct live_batch_view *v);

/* v as the model's batch_choice (new): {"batch", "gpus", "init_batch", "adaptive",
 * "efficiency", "goodput_x" (null unknown), "why"}, or JSON null when not shown (a job that
 * waits now: the choice it had is cleared). */
json_t *live_batch_view_json(const struct live_batch_view *v);

/* What of v says something (batch, GPUs, efficiency and goodput to two decimals), folded into
 * hash h (fnv1a): a job's scheduler row is written again when it changes. */
uint64_t live_batch_view_hash(uint64_t h, const struct live_batch_view *v);

#endif
