/* fit: the live convergence refit's pure part (fit.h): the loss series thinned by a doubling
 * stride. */
#include "fit.h"

/* Keeps every other point held: the stride doubles. */
static void halve(struct live_fit_series *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i += 2) {
        s->step[k] = s->step[i];
        s->loss[k++] = s->loss[i];
    }
    s->n = k;
    s->stride *= 2;
}

int live_fit_series_add(struct live_fit_series *s, double step, double loss)
{
    if (s->stride < 1)
        s->stride = 1;
    long long index = s->arrived++;
    if (index % s->stride != 0)
        return 0;
    if (s->n == LIVE_FIT_SERIES_MAX) {
        halve(s);
        if (index % s->stride != 0)
            return 1;
    }
    s->step[s->n] = step;
    s->loss[s->n++] = loss;
    return 1;
}
