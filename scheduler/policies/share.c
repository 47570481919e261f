/* policy_share: the cluster shares of heSRPT (Berg, Vesilo and Harchol-Balter,
 * "heSRPT: Parallel Scheduling to Minimize Mean Slowdown", and its mean-flow-
 * time companion, 2020), which ringmaster uses to bound how far its greedy
 * grows a job while others wait (policies/ringmaster.c, docs/evaluation.md).
 *
 * For m jobs whose speed on a fraction x of the cluster is x^p (0 <= p < 1)
 * and no further arrivals, mean completion time is lowest when jobs finish
 * shortest first and the job with the k-th shortest remaining work (k = 0 the
 * shortest) holds the fraction ((m-k)/m)^c - ((m-k-1)/m)^c, c = 1 / (1 - p):
 * every job gets something, the shortest the most, the longest very little,
 * and the shares sum to 1. */
#include <limits.h>
#include <math.h>

#include "policy.h"

/* Keeps c finite: p = 0.95 already gives the shortest job nearly everything. */
#define SHARE_MAX_P 0.95
#define SHARE_SQRT2 1.41421356237309504880

double policy_share_fraction(size_t k, size_t m, double p)
{
    if (m == 0 || k >= m)
        return 0.0;
    if (!(p >= 0.0))
        p = 0.0;
    if (p > SHARE_MAX_P)
        p = SHARE_MAX_P;
    double c = 1.0 / (1.0 - p);
    double hi = (double)(m - k) / (double)m, lo = (double)(m - k - 1) / (double)m;
    return pow(hi, c) - pow(lo, c);
}

int policy_share_cap(int base, double target)
{
    int cap = base > 0 ? base : 1;

    if (!(target > 0) || isnan(target))
        return cap;
    /* Nearest power-of-two multiple on a log scale: round up past target / sqrt(2). */
    while (cap <= INT_MAX / 2 && 2.0 * cap <= target * SHARE_SQRT2)
        cap *= 2;
    return cap;
}

double policy_share_exponent_log(int w1, double r1, int w2, double r2, double lw)
{
    if (w1 < 1 || w2 <= w1 || !(r1 > 0) || !(r2 > r1) || !isfinite(r2))
        return 0.0;
    double p = log(r2 / r1) / lw;
    return p < 0 ? 0.0 : p > SHARE_MAX_P ? SHARE_MAX_P : p;
}

double policy_share_exponent(int w1, double r1, int w2, double r2)
{
    if (w1 < 1 || w2 <= w1)
        return 0.0;
    return policy_share_exponent_log(w1, r1, w2, r2, log((double)w2 / (double)w1));
}
