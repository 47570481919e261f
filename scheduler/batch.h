/* batch: what a job with a batch model (goodput.h) runs at after a round: its global batch,
 * and the factor of its learning rate that goes with it. */
#ifndef RINGMASTER_BATCH_H
#define RINGMASTER_BATCH_H

#include "goodput.h"

/* The global batch a job with batch model b runs at on gpus GPUs when the round decided
 * batch decided (not above 0 or not finite: none, it keeps its own, b->batch or else
 * b->init_batch): rounded to whole examples within [init_batch, max(max_batch,
 * init_batch)], and at least one per GPU. 0 when b has no model. */
long batch_after_round(const struct batch_spec *b, double decided, int gpus);

/* The learning-rate factor of global batch m for a job tuned at m0: sqrt(m / m0), square-root
 * scaling (the gradient's noise falls with the square root of the batch). */
double batch_lr_scale(long m, double m0);

#endif
