/* nnls: Lawson–Hanson active-set NNLS (Lawson & Hanson, "Solving Least Squares Problems",
 * 1974, ch. 23).
 *
 * Robustness measures on top of the textbook method:
 *  - columns are scaled to unit norm first (a positive scaling keeps x >= 0 the same
 *    constraint), so features of very different magnitude do not hurt the pivoting;
 *  - the unconstrained subproblem on the passive set is solved by Householder QR with column
 *    pivoting and a rank cut-off, never by normal equations: collinear columns get the basic
 *    solution (dependent columns at 0) instead of a blow-up;
 *  - a column whose entry would make the subproblem answer non-positive right away (a column
 *    dependent on the passive set, in floating point) is refused until x changes, which is
 *    Lawson–Hanson's guard against cycling;
 *  - every loop is bounded; running out of iterations returns the best feasible x with EDOM. */
#include "nnls.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct nnls_work {
    size_t m, n;
    double *a;   /* m x n, column-major, columns scaled to unit norm */
    double *qr;  /* m x n scratch for the factorisation */
    double *rhs; /* m scratch */
    double *r;   /* m residual */
    const double *b;
    double scale[NNLS_MAX_VARS]; /* column norms (0: column ignored) */
    double x[NNLS_MAX_VARS];     /* current iterate, scaled variables */
    double z[NNLS_MAX_VARS];     /* subproblem answer */
    double w[NNLS_MAX_VARS];     /* dual: A^T (b - A x) */
    bool passive[NNLS_MAX_VARS];
    bool refused[NNLS_MAX_VARS];
    double wtol; /* dual values at or below this count as zero: rounding of A^T r, plus a
                  * cosine of ~1e-14 between a unit column and the current residual */
};

static bool inputs_finite(const double *v, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* Euclidean norm; the plain sum of squares unless it over- or underflows. */
static double norm2(const double *v, size_t len)
{
    double s = 0.0;
    for (size_t i = 0; i < len; i++)
        s += v[i] * v[i];
    if (isfinite(s) && s > 1e-280)
        return sqrt(s);
    double big = 0.0;
    for (size_t i = 0; i < len; i++)
        big = fmax(big, fabs(v[i]));
    if (big == 0.0 || !isfinite(big))
        return big;
    s = 0.0;
    for (size_t i = 0; i < len; i++)
        s += (v[i] / big) * (v[i] / big);
    return big * sqrt(s);
}

/* Copies a (row-major) into column-major form and scales each column to unit norm. */
static void load_columns(struct nnls_work *k, const double *a)
{
    for (size_t j = 0; j < k->n; j++) {
        for (size_t i = 0; i < k->m; i++)
            k->rhs[i] = a[i * k->n + j];
        double s = norm2(k->rhs, k->m);
        k->scale[j] = s;
        for (size_t i = 0; i < k->m; i++)
            k->a[j * k->m + i] = s > 0.0 ? a[i * k->n + j] / s : 0.0;
    }
}

/* r = b - A x and w = A^T r. */
static void compute_dual(struct nnls_work *k)
{
    memcpy(k->r, k->b, k->m * sizeof(double));
    for (size_t j = 0; j < k->n; j++) {
        if (k->x[j] == 0.0)
            continue;
        const double *col = k->a + j * k->m;
        for (size_t i = 0; i < k->m; i++)
            k->r[i] -= col[i] * k->x[j];
    }
    for (size_t j = 0; j < k->n; j++) {
        const double *col = k->a + j * k->m;
        double s = 0.0;
        for (size_t i = 0; i < k->m; i++)
            s += col[i] * k->r[i];
        k->w[j] = s;
    }
}

/* Applies the Householder reflection that zeroes col[c+1..m-1] of column c of qr to the
 * later columns c+1..ncols-1 and to rhs; returns the new diagonal entry R[c][c]. */
static double householder_step(double *qr, double *rhs, size_t m, size_t ncols, size_t c)
{
    double *v = qr + c * m;
    double alpha = norm2(v + c, m - c);
    if (alpha == 0.0)
        return 0.0;
    if (v[c] > 0.0)
        alpha = -alpha;
    v[c] -= alpha; /* v = x - alpha e1, and v^T v = 2 alpha (alpha - x1) = -2 alpha v[c] */
    double vtv_half = -alpha * v[c];
    for (size_t j = c + 1; j <= ncols; j++) {
        double *col = j < ncols ? qr + j * m : rhs;
        double s = 0.0;
        for (size_t i = c; i < m; i++)
            s += v[i] * col[i];
        s /= vtv_half;
        for (size_t i = c; i < m; i++)
            col[i] -= s * v[i];
    }
    return alpha;
}

/* Swaps the column of qr at position c with the remaining one of largest norm. */
static void pivot_column(double *qr, size_t m, size_t ncols, size_t c, size_t *perm)
{
    size_t best = c;
    double best_norm = -1.0;
    for (size_t j = c; j < ncols; j++) {
        double s = norm2(qr + j * m + c, m - c);
        if (s > best_norm) {
            best_norm = s;
            best = j;
        }
    }
    if (best == c)
        return;
    for (size_t i = 0; i < m; i++) {
        double t = qr[c * m + i];
        qr[c * m + i] = qr[best * m + i];
        qr[best * m + i] = t;
    }
    size_t t = perm[c];
    perm[c] = perm[best];
    perm[best] = t;
}

/* Least squares on the passive columns: z_P = argmin ||A_P z - b||, z_Z = 0, by pivoted
 * Householder QR; columns beyond the numerical rank get 0 (the basic solution). */
static void solve_passive(struct nnls_work *k)
{
    size_t idx[NNLS_MAX_VARS], perm[NNLS_MAX_VARS], np = 0, m = k->m;
    double diag[NNLS_MAX_VARS];
    for (size_t j = 0; j < k->n; j++) {
        k->z[j] = 0.0;
        if (k->passive[j]) {
            memcpy(k->qr + np * m, k->a + j * m, m * sizeof(double));
            perm[np] = np;
            idx[np++] = j;
        }
    }
    memcpy(k->rhs, k->b, m * sizeof(double));
    size_t steps = np < m ? np : m, rank = 0;
    double cut = 0.0;
    for (size_t c = 0; c < steps; c++) {
        pivot_column(k->qr, m, np, c, perm);
        diag[c] = householder_step(k->qr, k->rhs, m, np, c);
        if (c == 0)
            cut = fabs(diag[0]) * 10.0 * DBL_EPSILON * (double)(m > np ? m : np);
        if (fabs(diag[c]) <= cut || diag[c] == 0.0)
            break;
        rank = c + 1;
    }
    double y[NNLS_MAX_VARS];
    for (size_t c = rank; c-- > 0;) {
        double s = k->rhs[c];
        for (size_t j = c + 1; j < rank; j++)
            s -= k->qr[j * m + c] * y[j];
        y[c] = s / diag[c];
    }
    for (size_t c = 0; c < rank; c++)
        k->z[idx[perm[c]]] = y[c];
}

/* The zero-set index of largest dual value above tolerance, or -1 if none (optimal). */
static int pick_entering(const struct nnls_work *k)
{
    int best = -1;
    for (size_t j = 0; j < k->n; j++) {
        if (k->passive[j] || k->refused[j] || k->scale[j] == 0.0 || k->w[j] <= k->wtol)
            continue;
        if (best < 0 || k->w[j] > k->w[best])
            best = (int)j;
    }
    return best;
}

static bool passive_all_positive(const struct nnls_work *k)
{
    for (size_t j = 0; j < k->n; j++)
        if (k->passive[j] && k->z[j] <= 0.0)
            return false;
    return true;
}

/* Moves x toward z as far as feasibility allows and drops the columns that hit zero. */
static void step_toward(struct nnls_work *k)
{
    double alpha = 1.0;
    int hit = -1;
    for (size_t j = 0; j < k->n; j++) {
        if (!k->passive[j] || k->z[j] > 0.0)
            continue;
        double d = k->x[j] - k->z[j];
        double t = d > 0.0 ? k->x[j] / d : 0.0;
        if (hit < 0 || t < alpha) {
            alpha = t;
            hit = (int)j;
        }
    }
    for (size_t j = 0; j < k->n; j++) {
        if (!k->passive[j])
            continue;
        k->x[j] += alpha * (k->z[j] - k->x[j]);
        if (k->x[j] <= 0.0 || (int)j == hit) {
            k->x[j] = 0.0;
            k->passive[j] = false;
        }
    }
}

/* One outer iteration after column t entered; returns the inner iterations it used, or
 * 0 when t was refused (its subproblem value was not positive). */
static int enter_column(struct nnls_work *k, int t, int budget)
{
    k->passive[t] = true;
    solve_passive(k);
    if (k->z[t] <= 0.0) {
        k->passive[t] = false;
        k->refused[t] = true;
        return 0;
    }
    int used = 1;
    while (!passive_all_positive(k) && used < budget) {
        step_toward(k);
        solve_passive(k);
        used++;
    }
    for (size_t j = 0; j < k->n; j++) {
        if (k->passive[j])
            k->x[j] = k->z[j] > 0.0 ? k->z[j] : 0.0;
        k->refused[j] = false;
    }
    return used;
}

static double residual_norm(struct nnls_work *k, const double *v)
{
    for (size_t i = 0; i < k->m; i++) {
        double r = k->b[i];
        for (size_t j = 0; j < k->n; j++)
            r -= k->a[j * k->m + i] * v[j];
        k->rhs[i] = r;
    }
    return norm2(k->rhs, k->m);
}

/* On ill-conditioned problems the dual of a zero-set column can sit at rounding level
 * while the column still helps (a Hilbert matrix stops with x_j = 0 where the answer is
 * 1). After convergence, try the subproblem with every such column passive as well and
 * keep it if it is feasible and fits better. */
static void polish(struct nnls_work *k)
{
    bool saved[NNLS_MAX_VARS];
    bool any = false;
    memcpy(saved, k->passive, sizeof(saved));
    for (size_t j = 0; j < k->n; j++) {
        if (!k->passive[j] && k->scale[j] > 0.0 && k->w[j] > -k->wtol) {
            k->passive[j] = true;
            any = true;
        }
    }
    if (!any)
        return;
    solve_passive(k);
    if (passive_all_positive(k) && residual_norm(k, k->z) < residual_norm(k, k->x)) {
        memcpy(k->x, k->z, sizeof(k->x));
        return;
    }
    memcpy(k->passive, saved, sizeof(saved));
}

static int run_active_set(struct nnls_work *k)
{
    int budget = 30 * (int)k->n + 100;
    double dim = (double)(k->m > k->n ? k->m : k->n), bnorm = norm2(k->b, k->m);
    compute_dual(k);
    while (budget > 0) {
        k->wtol = 10.0 * DBL_EPSILON * dim * norm2(k->r, k->m) + DBL_EPSILON * sqrt(dim) * bnorm;
        int t = pick_entering(k);
        if (t < 0) {
            polish(k);
            return 0;
        }
        int used = enter_column(k, t, budget);
        budget -= used > 0 ? used : 1;
        if (used > 0)
            compute_dual(k);
    }
    return -1;
}

static void work_free(struct nnls_work *k)
{
    free(k->a);
    free(k->qr);
    free(k->rhs);
    free(k->r);
}

int nnls_solve(const double *a, const double *b, size_t m, size_t n, double *x)
{
    if (!a || !b || !x || n < 1 || n > NNLS_MAX_VARS || m < 1 || m > SIZE_MAX / n / 8 ||
        !inputs_finite(a, m * n) || !inputs_finite(b, m)) {
        errno = EINVAL;
        return -1;
    }
    struct nnls_work k = {.m = m, .n = n, .b = b};
    k.a = malloc(m * n * sizeof(double));
    k.qr = malloc(m * n * sizeof(double));
    k.rhs = malloc(m * sizeof(double));
    k.r = malloc(m * sizeof(double));
    if (!k.a || !k.qr || !k.rhs || !k.r) {
        work_free(&k);
        errno = ENOMEM;
        return -1;
    }
    load_columns(&k, a);
    int rc = run_active_set(&k);
    for (size_t j = 0; j < n; j++)
        x[j] = k.scale[j] > 0.0 ? k.x[j] / k.scale[j] : 0.0;
    work_free(&k);
    if (rc < 0)
        errno = EDOM;
    return rc;
}
