/* batch: the global batch a batch-model job runs at after a round, and its learning-rate
 * factor (batch.h). */
#include "batch.h"

#include <math.h>

long batch_after_round(const struct batch_spec *b, double decided, int gpus)
{
    if (!goodput_has_model(b))
        return 0;
    double m = decided;
    if (!(m > 0) || !isfinite(m))
        m = b->batch > 0 ? b->batch : b->init_batch;
    double hi = b->max_batch > b->init_batch ? b->max_batch : b->init_batch;
    m = fmin(fmax(round(m), b->init_batch), hi);
    return (long)fmax(m, gpus);
}

double batch_lr_scale(long m, double m0)
{
    return sqrt((double)m / m0);
}
