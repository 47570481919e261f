/* The round duration histogram of live.h: counts kept with relaxed atomics, written by the
 * scheduler thread and read by any thread (GET /metrics). */
#include <stdatomic.h>

#include "live.h"

const double live_round_hist_bound[LIVE_ROUND_HIST_BOUNDS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0};

static atomic_ulong buckets[LIVE_ROUND_HIST_BOUNDS + 1]; /* the last one is +Inf */
static atomic_ullong sum_us;

void live_round_hist_observe(double seconds)
{
    if (!(seconds >= 0))
        seconds = 0;
    size_t i = 0;
    while (i < LIVE_ROUND_HIST_BOUNDS && seconds > live_round_hist_bound[i])
        i++;
    atomic_fetch_add_explicit(&buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sum_us, (unsigned long long)(seconds * 1e6 + 0.5),
                              memory_order_relaxed);
}

void live_round_hist_read(struct live_round_hist *h)
{
    for (size_t i = 0; i <= LIVE_ROUND_HIST_BOUNDS; i++)
        h->counts[i] = atomic_load_explicit(&buckets[i], memory_order_relaxed);
    h->sum_s = (double)atomic_load_explicit(&sum_us, memory_order_relaxed) / 1e6;
}
