/* batch: the global batch a batch-model job runs at after a round, and its learning-rate
 * factor (batch.h). */
#include "batch.h"

#include <math.h>
#include <string.h>

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

static const char *const rule_names[BATCH_LR_NRULES] = {"sqrt", "linear", "none"};

double batch_lr_scale(enum batch_lr_scaling rule, long m, double m0)
{
    if (rule == BATCH_LR_NONE || !(m0 > 0))
        return 1;
    return rule == BATCH_LR_LINEAR ? (double)m / m0 : sqrt((double)m / m0);
}

const char *batch_lr_scaling_name(enum batch_lr_scaling rule)
{
    return (unsigned)rule < BATCH_LR_NRULES ? rule_names[rule] : rule_names[0];
}

int batch_lr_scaling_parse(const char *name, enum batch_lr_scaling *rule)
{
    for (int k = 0; name && k < BATCH_LR_NRULES; k++)
        if (!strcmp(name, rule_names[k])) {
            *rule = (enum batch_lr_scaling)k;
            return 0;
        }
    return -1;
}
