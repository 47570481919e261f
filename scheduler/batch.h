/* batch: what a job with a batch model (goodput.h) runs at after a round: its global batch,
 * and the factor of its learning rate that goes with it (by the job's declared rule). */
#ifndef RINGMASTER_BATCH_H
#define RINGMASTER_BATCH_H

#include "goodput.h"

/* The global batch a job with batch model b runs at on gpus GPUs when the round decided
 * batch decided (not above 0 or not finite: none, it keeps its own, b->batch or else
 * b->init_batch): rounded to whole examples within [init_batch, max(max_batch,
 * init_batch)], and at least one per GPU. 0 when b has no model. */
long batch_after_round(const struct batch_spec *b, double decided, int gpus);

/* How a job rescales its learning rate with its global batch (its spec's "lr_scaling"). */
enum batch_lr_scaling {
    BATCH_LR_SQRT = 0, /* sqrt(m / m0): the gradient's noise falls with the square root of the
                        * batch (the default; AdaptDL's for Adam-like optimizers) */
    BATCH_LR_LINEAR,   /* m / m0: Goyal et al.'s linear rule (SGD) */
    BATCH_LR_NONE,     /* 1: the job keeps its rate (an optimizer that adapts it itself) */
};
#define BATCH_LR_NRULES 3

/* The learning-rate factor of global batch m for a job tuned at m0 under rule. */
double batch_lr_scale(enum batch_lr_scaling rule, long m, double m0);

/* The rule's name ("sqrt", "linear", "none"), and the rule of a name into *rule: 0, or -1 for
 * a name that is none of them (NULL included). */
const char *batch_lr_scaling_name(enum batch_lr_scaling rule);
int batch_lr_scaling_parse(const char *name, enum batch_lr_scaling *rule);

#endif
