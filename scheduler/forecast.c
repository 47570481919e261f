/* forecast: the predicted start and finish of each waiting job, from the GPUs free now and
 * when the running jobs are predicted to give theirs back (forecast.h). */
#include "forecast.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int forecast_need(int elastic, int min_gpus, int gpus)
{
    return elastic && min_gpus > 0 ? min_gpus : gpus;
}

static int cmp_release(const void *a, const void *b)
{
    const struct forecast_release *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

int forecast_starts(double now, int nfree, const struct forecast_release *run, size_t nrun,
                    struct forecast_wait *q, size_t nq, forecast_left_f left, void *ctx)
{
    size_t n = 0;
    struct forecast_release *rel = calloc(nrun + nq + 2, sizeof(*rel));
    if (!rel) {
        errno = ENOMEM;
        return -1;
    }
    rel[n++] = (struct forecast_release){now, nfree};
    memcpy(rel + n, run, nrun * sizeof(*rel));
    n += nrun;
    for (size_t k = 0; k < nq; k++) {
        qsort(rel, n, sizeof(*rel), cmp_release);
        int need = q[k].need, got = 0;
        size_t used = 0;
        while (used < n && got < need)
            got += rel[used++].gpus;
        if (got < need)
            break;
        double start = rel[used - 1].at;
        rel[used - 1].gpus = got - need;
        memmove(rel, rel + used - 1, (n - used + 1) * sizeof(*rel));
        n -= used - 1;
        q[k].start = start;
        double s = left(ctx, k, need);
        if (s < 0)
            break;
        q[k].finish = start + s;
        rel[n++] = (struct forecast_release){start + s, need};
    }
    free(rel);
    return 0;
}
