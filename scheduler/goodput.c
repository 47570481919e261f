/* goodput: statistical efficiency times throughput (see goodput.h). */
#include "goodput.h"

#include <math.h>

int goodput_has_model(const struct batch_spec *b)
{
    return b && b->init_batch > 0 && isfinite(b->init_batch);
}

static double current(const struct batch_spec *b)
{
    return b->batch > 0 && isfinite(b->batch) ? b->batch : b->init_batch;
}

static double largest(const struct batch_spec *b)
{
    if (!b->adaptive)
        return current(b);
    return b->max_batch > b->init_batch && isfinite(b->max_batch) ? b->max_batch
                                                                   : b->init_batch;
}

double goodput_gain(const struct batch_spec *b, double m)
{
    if (!goodput_has_model(b) || !(m > 0))
        return 1.0;
    double s = m / b->init_batch;
    double sqr = b->grad_sqr, var = b->grad_var;
    if (!isfinite(sqr) || !isfinite(var) || sqr < 0 || var < 0 || !(sqr + var > 0))
        return s; /* no statistics reported: every example counts in full */
    return (var + sqr) / (var / s + sqr);
}

double goodput_efficiency(const struct batch_spec *b, double m)
{
    if (!goodput_has_model(b) || !(m > 0))
        return 1.0;
    return goodput_gain(b, m) / (m / b->init_batch);
}

double goodput_step_time(const struct speed_model *sp, const struct batch_spec *b, int w,
                         int nodes, double m, int *accum)
{
    if (accum)
        *accum = 0;
    if (!sp || !sp->fitted || w < 1 || !(m > 0) || !isfinite(m))
        return INFINITY;
    double local = m / w, min_local = b && b->min_local > 0 ? b->min_local : 1.0;
    if (local < min_local * (1.0 - 1e-9))
        return INFINITY;
    int k = 0;
    if (b && b->max_local > 0 && local > b->max_local * (1.0 + 1e-9))
        k = (int)ceil(local / b->max_local - 1e-9) - 1;
    double micro = local / (k + 1);
    double t = speed_step_time_placed(sp, w, nodes, micro);
    if (k > 0) /* the extra micro-steps compute and do not synchronise */
        t += k * speed_step_time_placed(sp, 1, 1, micro);
    if (accum)
        *accum = k;
    return t > 0 ? t : INFINITY;
}

double goodput_rate(const struct speed_model *sp, const struct batch_spec *b, int w, int nodes,
                    double m)
{
    double t = goodput_step_time(sp, b, w, nodes, m, NULL);
    if (!goodput_has_model(b) || !isfinite(t) || !(sp->dataset_size > 0))
        return 0.0;
    return b->init_batch * goodput_gain(b, m) / (t * sp->dataset_size);
}

double goodput_best(const struct speed_model *sp, const struct batch_spec *b, int w, int nodes,
                    double *batch)
{
    double m = goodput_has_model(b) ? current(b) : 0.0;
    double best = goodput_rate(sp, b, w, nodes, m);
    if (goodput_has_model(b) && b->adaptive && w >= 1) {
        double min_local = b->min_local > 0 ? b->min_local : 1.0;
        double lo = fmax(b->init_batch, w * min_local), hi = largest(b);
        for (int i = 0; lo <= hi && i < GOODPUT_CANDIDATES; i++) {
            double c = GOODPUT_CANDIDATES > 1 && hi > lo
                           ? lo * pow(hi / lo, (double)i / (GOODPUT_CANDIDATES - 1))
                           : lo;
            double r = goodput_rate(sp, b, w, nodes, c);
            if (r > best * (1.0 + 1e-9)) {
                best = r;
                m = c;
            }
        }
    }
    if (batch)
        *batch = m;
    return best;
}

double goodput_runnable(const struct batch_spec *b, int w, double m)
{
    if (!goodput_has_model(b) || !b->adaptive || w < 1)
        return m;
    double min_local = b->min_local > 0 ? b->min_local : 1.0;
    double lo = fmax(b->init_batch, w * min_local), hi = largest(b);
    if (lo > hi)
        return m; /* nothing runs on w GPUs: the caller's allocation is at fault */
    return fmin(fmax(m, lo), hi);
}

struct batch_spec goodput_outlook(const struct batch_spec *b)
{
    struct batch_spec o = *b;

    if (!goodput_has_model(b) || b->adaptive)
        return o;
    double s = current(b) / b->init_batch;
    if (s > 1 && isfinite(s) && b->grad_sqr > 0 && isfinite(b->grad_sqr) && b->grad_var >= 0 &&
        b->grad_var < s * b->grad_sqr)
        o.grad_var = s * b->grad_sqr;
    return o;
}
