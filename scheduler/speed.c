/* speed: the step-time model of a job (see speed.h) and the all-reduce cost models.
 *
 * All-reduce of n bytes over p workers, time = ca*alpha + cb*n*beta + cg*n*gamma
 * (Thakur, Rabenseifner and Gropp 2005; Rabenseifner and Träff 2004). This file returns
 * (ca, cb, cg) for each algorithm:
 *
 * ring (reduce-scatter then all-gather around the ring):
 *     ca = 2(p-1), cb = 2(p-1)/p, cg = (p-1)/p
 *
 * recursive halving-doubling (Rabenseifner), p a power of two:
 *     ca = 2 log2 p, cb = 2(p-1)/p, cg = (p-1)/p
 *   for other p (MPICH's fold): the r = p - p' extra ranks (p' = 2^floor(log2 p)) first
 *   hand their vector to a partner (alpha + n beta + n gamma), the p' ranks run
 *   halving-doubling, then the result goes back (alpha + n beta):
 *     ca = 2 log2 p' + 2, cb = 2(p'-1)/p' + 2, cg = (p'-1)/p' + 1
 *
 * binary blocks (Rabenseifner and Träff), p = 2^k0 + 2^k1 + ... + 2^k(s-1), k0 > k1 > ...:
 *   every block runs a recursive-halving reduce-scatter inside itself, in parallel; the
 *   largest block's k0 steps dominate: k0 alpha + (1 - 2^-k0) n (beta + gamma).
 *   Then, from the smallest block up, block i hands its partial result to block i-1: each
 *   of its ranks holds n/2^ki bytes, which are spread over the 2^(k(i-1) - ki) ranks of the
 *   bigger block that own those pieces. We charge that cascade step
 *       (1 + d_i) alpha + n/2^ki beta + n/2^k(i-1) gamma,   d_i = k(i-1) - ki,
 *   i.e. the extra exchange steps grow with the gap d_i between consecutive exponents
 *   (the sender splits its piece over 2^d_i receivers in d_i + 1 rounds) and the data a
 *   small block ships is larger when it is much smaller than the next. The all-gather
 *   mirrors the reduce-scatter without the reductions, so
 *       ca = 2 k0 + 2 sum_i (1 + d_i)
 *       cb = 2 (1 - 2^-k0) + 2 sum_i 2^-ki
 *       cg = (1 - 2^-k0) + sum_i 2^-k(i-1)
 *   For 2^k < p < 2^(k+1) every coefficient exceeds halving-doubling's at 2^(k+1), so a
 *   non-power-of-two world is slower per step than the next power of two (the doubling
 *   heuristic relies on this), and p = 2^k + 1 (the largest gap) is the worst.
 */
#include "speed.h"

#include "nnls.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Weight of the ridge rows, relative to unit-norm feature columns. It only decides how
 * weight is split between features the data cannot tell apart; its bias on the fit is
 * far below measurement noise. */
#define SPEED_RIDGE 1e-4

static bool is_pow2(int p)
{
    return p > 0 && (p & (p - 1)) == 0;
}

static int floor_log2(int p)
{
    return p > 1 ? 31 - __builtin_clz((unsigned)p) : 0;
}

/* 2^k, exactly, for |k| < 63 (what ldexp(1.0, k) gives, without the call: a round's
 * predictions ask for these coefficients tens of thousands of times). */
static double pow2(int k)
{
    return k >= 0 ? (double)(UINT64_C(1) << k) : 1.0 / (double)(UINT64_C(1) << -k);
}

enum allreduce_algo allreduce_algo_for(int p)
{
    if (p <= 1)
        return ALLREDUCE_NONE;
    return is_pow2(p) ? ALLREDUCE_HALVING_DOUBLING : ALLREDUCE_BINARY_BLOCKS;
}

static void ring_coefficients(int p, double *ca, double *cb, double *cg)
{
    double frac = (double)(p - 1) / p;
    *ca = 2.0 * (p - 1);
    *cb = 2.0 * frac;
    *cg = frac;
}

static void halving_doubling_coefficients(int p, double *ca, double *cb, double *cg)
{
    int k = floor_log2(p);
    double pp = pow2(k);
    double frac = (pp - 1.0) / pp;
    *ca = 2.0 * k;
    *cb = 2.0 * frac;
    *cg = frac;
    if (!is_pow2(p)) {
        *ca += 2.0;
        *cb += 2.0;
        *cg += 1.0;
    }
}

static void binary_blocks_coefficients(int p, double *ca, double *cb, double *cg)
{
    int prev = floor_log2(p);
    double top = 1.0 - pow2(-prev);
    *ca = 2.0 * prev;
    *cb = 2.0 * top;
    *cg = top;
    for (int k = prev - 1; k >= 0; k--) {
        if (!(p & (1 << k)))
            continue;
        *ca += 2.0 * (1 + prev - k);
        *cb += 2.0 * pow2(-k);
        *cg += pow2(-prev);
        prev = k;
    }
}

void allreduce_coefficients(enum allreduce_algo algo, int p, double *ca, double *cb, double *cg)
{
    *ca = *cb = *cg = 0.0;
    if (p <= 1)
        return;
    switch (algo) {
    case ALLREDUCE_RING:
        ring_coefficients(p, ca, cb, cg);
        break;
    case ALLREDUCE_HALVING_DOUBLING:
        halving_doubling_coefficients(p, ca, cb, cg);
        break;
    case ALLREDUCE_BINARY_BLOCKS:
        binary_blocks_coefficients(p, ca, cb, cg);
        break;
    case ALLREDUCE_NONE:
        break;
    }
}

static const char *const link_names[SPEED_NLINKS] = {"island", "pcie", "switch", "cross"};

const char *speed_link_name(enum speed_link link)
{
    return (unsigned)link < SPEED_NLINKS ? link_names[link] : "island";
}

int speed_link_parse(const char *name)
{
    for (int k = 0; name && k < SPEED_NLINKS; k++)
        if (strcmp(name, link_names[k]) == 0)
            return k;
    return -1;
}

enum speed_link speed_link_on(int nodes, enum speed_link link)
{
    if (nodes > 1)
        return link == SPEED_LINK_CROSS ? SPEED_LINK_CROSS : SPEED_LINK_SWITCH;
    return link == SPEED_LINK_PCIE ? SPEED_LINK_PCIE : SPEED_LINK_ISLAND;
}

void speed_features_linked(int w, int nodes, enum speed_link link, double m,
                           double f[SPEED_NFEATURES])
{
    enum speed_link l = speed_link_on(w > 1 ? nodes : 1, w > 1 ? link : SPEED_LINK_ISLAND);
    f[0] = 1.0;
    f[1] = m;
    allreduce_coefficients(allreduce_algo_for(w), w, &f[2], &f[3], &f[4]);
    f[5] = l >= SPEED_LINK_SWITCH ? 1.0 : 0.0;
    f[6] = l == SPEED_LINK_PCIE ? 1.0 : 0.0;
    f[7] = l == SPEED_LINK_CROSS ? 1.0 : 0.0;
}

void speed_features_placed(int w, int nodes, double m, double f[SPEED_NFEATURES])
{
    speed_features_linked(w, nodes, SPEED_LINK_ISLAND, m, f);
}

void speed_features(int w, double m, double f[SPEED_NFEATURES])
{
    speed_features_placed(w, 1, m, f);
}

static bool obs_valid(const struct speed_obs *o)
{
    return o->w >= 1 && o->nodes >= 1 && o->nodes <= o->w && isfinite(o->m) && o->m > 0.0 &&
           isfinite(o->step_s) && o->step_s > 0.0;
}

/* Fills the ridge-augmented system: rows 0..n-1 are the observations divided by their
 * step time (so the fit minimises relative error: a 2 s multi-node step does not drown
 * the 0.4 s single-GPU one), columns scaled to unit norm, then one row SPEED_RIDGE * e_j
 * per feature. Returns the column norms. */
static void build_system(const struct speed_obs *obs, size_t n, double *a, double *b,
                         double norm[SPEED_NFEATURES])
{
    const size_t nf = SPEED_NFEATURES;
    for (size_t i = 0; i < n; i++) {
        speed_features_linked(obs[i].w, obs[i].nodes, obs[i].link, obs[i].m, a + i * nf);
        for (size_t j = 0; j < nf; j++)
            a[i * nf + j] /= obs[i].step_s;
        b[i] = 1.0;
    }
    for (size_t j = 0; j < nf; j++) {
        norm[j] = 0.0;
        for (size_t i = 0; i < n; i++)
            norm[j] = hypot(norm[j], a[i * nf + j]);
        for (size_t i = 0; i < n; i++)
            a[i * nf + j] = norm[j] > 0.0 ? a[i * nf + j] / norm[j] : 0.0;
    }
    for (size_t r = 0; r < nf; r++) {
        for (size_t j = 0; j < nf; j++)
            a[(n + r) * nf + j] = r == j && norm[j] > 0.0 ? SPEED_RIDGE : 0.0;
        b[n + r] = 0.0;
    }
}

static double fit_rmse(const double theta[SPEED_NFEATURES], const struct speed_obs *obs, size_t n)
{
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) {
        double f[SPEED_NFEATURES], t = 0.0;
        speed_features_linked(obs[i].w, obs[i].nodes, obs[i].link, obs[i].m, f);
        for (size_t j = 0; j < SPEED_NFEATURES; j++)
            t += theta[j] * f[j];
        sq += (t - obs[i].step_s) * (t - obs[i].step_s);
    }
    return sqrt(sq / (double)n);
}

int speed_fit_obs(struct speed_model *model, const struct speed_obs *obs, size_t n)
{
    const size_t nf = SPEED_NFEATURES;
    if (!model || !obs || n < 1 || n > SIZE_MAX / 64 - nf) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!obs_valid(&obs[i])) {
            errno = EINVAL;
            return -1;
        }
    }
    size_t rows = n + nf;
    double *a = malloc(rows * nf * sizeof(double));
    double *b = malloc(rows * sizeof(double));
    double norm[SPEED_NFEATURES], theta[SPEED_NFEATURES];
    if (!a || !b) {
        free(a);
        free(b);
        errno = ENOMEM;
        return -1;
    }
    build_system(obs, n, a, b, norm);
    int rc = nnls_solve(a, b, rows, nf, theta);
    free(a);
    free(b);
    if (rc < 0 && errno != EDOM)
        return -1;
    for (size_t j = 0; j < nf; j++)
        model->theta[j] = norm[j] > 0.0 ? theta[j] / norm[j] : 0.0;
    model->rmse = fit_rmse(model->theta, obs, n);
    model->fitted = 1;
    return 0;
}

int speed_fit(struct speed_model *model, const int *w, const double *step_s, size_t n)
{
    if (!model || !w || !step_s || n < 1 || n > SIZE_MAX / sizeof(struct speed_obs)) {
        errno = EINVAL;
        return -1;
    }
    struct speed_obs *obs = malloc(n * sizeof(*obs));
    if (!obs) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        obs[i].w = w[i];
        obs[i].nodes = w[i] >= 1 ? speed_packed_nodes(model, w[i]) : 1;
        obs[i].m = model->batch_per_gpu;
        obs[i].step_s = step_s[i];
        obs[i].link = w[i] >= 1 ? speed_packed_link(model, w[i]) : SPEED_LINK_ISLAND;
    }
    int rc = speed_fit_obs(model, obs, n);
    free(obs);
    return rc;
}

double speed_step_time_linked(const struct speed_model *model, int w, int nodes,
                              enum speed_link link, double m)
{
    if (!model || !model->fitted || w < 1)
        return INFINITY;
    double f[SPEED_NFEATURES];
    speed_features_linked(w, nodes < 1 ? 1 : nodes, link, m, f);
    return speed_step_time_features(model, f);
}

enum speed_link speed_placed_link(const struct speed_model *model, int w, int nodes)
{
    if (nodes > 1)
        return SPEED_LINK_SWITCH;
    return model->gpus_per_island > 0 && w > model->gpus_per_island ? SPEED_LINK_PCIE
                                                                      : SPEED_LINK_ISLAND;
}

enum speed_link speed_packed_link(const struct speed_model *model, int w)
{
    return speed_placed_link(model, w, speed_packed_nodes(model, w));
}

double speed_step_time_placed(const struct speed_model *model, int w, int nodes, double m)
{
    if (!model)
        return INFINITY;
    return speed_step_time_linked(model, w, nodes, speed_placed_link(model, w, nodes), m);
}

double speed_step_time(const struct speed_model *model, int w)
{
    if (!model || w < 1)
        return INFINITY;
    return speed_step_time_linked(model, w, speed_packed_nodes(model, w),
                                  speed_packed_link(model, w), model->batch_per_gpu);
}

double speed_epochs_per_second(const struct speed_model *model, int w)
{
    double t = speed_step_time(model, w);
    if (!isfinite(t) || t <= 0.0 || !(model->dataset_size > 0.0))
        return 0.0;
    return (double)w * model->batch_per_gpu / (t * model->dataset_size);
}
