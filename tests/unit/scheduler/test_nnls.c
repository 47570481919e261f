/* NNLS against known answers: interior and active constraints, collinear and
 * ill-conditioned columns, fewer rows than columns, bad input. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "nnls.h"

/* ||A x - b||_2 for row-major A. */
static double residual(const double *a, const double *b, size_t m, size_t n, const double *x)
{
    double s = 0.0;
    for (size_t i = 0; i < m; i++) {
        double r = -b[i];
        for (size_t j = 0; j < n; j++)
            r += a[i * n + j] * x[j];
        s += r * r;
    }
    return sqrt(s);
}

/* KKT conditions of NNLS: x >= 0, w = A^T (b - A x) <= tol, and w_j ~ 0 where x_j > 0. */
static void expect_kkt(const double *a, const double *b, size_t m, size_t n, const double *x,
                       double tol)
{
    for (size_t j = 0; j < n; j++) {
        cr_expect_geq(x[j], 0.0, "x[%zu] = %g", j, x[j]);
        double w = 0.0;
        for (size_t i = 0; i < m; i++) {
            double r = b[i];
            for (size_t c = 0; c < n; c++)
                r -= a[i * n + c] * x[c];
            w += a[i * n + j] * r;
        }
        cr_expect_leq(w, tol, "dual w[%zu] = %g", j, w);
        if (x[j] > 1e-9)
            cr_expect_leq(fabs(w), tol, "active x[%zu] = %g with dual %g", j, x[j], w);
    }
}

Test(nnls, unconstrained_solution_is_exact)
{
    const double a[] = {1, 0, 0, 1, 1, 1};
    const double xt[] = {2, 3};
    double b[3], x[2];
    for (int i = 0; i < 3; i++)
        b[i] = a[2 * i] * xt[0] + a[2 * i + 1] * xt[1];
    cr_assert_eq(nnls_solve(a, b, 3, 2, x), 0);
    cr_expect_float_eq(x[0], 2.0, 1e-12);
    cr_expect_float_eq(x[1], 3.0, 1e-12);
}

Test(nnls, active_constraint_clamps_to_zero)
{
    /* Unconstrained least squares is x = (1, -1); the NNLS answer is x = (0.5, 0) with
     * A = I (2x2) plus row (1, 1), b = (1, -1, 0): minimise (x0-1)^2 + (x1+1)^2 + (x0+x1)^2. */
    const double a[] = {1, 0, 0, 1, 1, 1};
    const double b[] = {1, -1, 0};
    double x[2];
    cr_assert_eq(nnls_solve(a, b, 3, 2, x), 0);
    cr_expect_float_eq(x[0], 0.5, 1e-12);
    cr_expect_eq(x[1], 0.0);
    expect_kkt(a, b, 3, 2, x, 1e-12);
}

Test(nnls, all_negative_target_gives_zero)
{
    const double a[] = {1, 2, 3, 4, 5, 6};
    const double b[] = {-1, -2, -3};
    double x[2] = {7, 7};
    cr_assert_eq(nnls_solve(a, b, 3, 2, x), 0);
    cr_expect_eq(x[0], 0.0);
    cr_expect_eq(x[1], 0.0);
}

Test(nnls, answer_beats_every_feasible_grid_point)
{
    /* A 4x3 problem with one active constraint at the optimum: the answer meets KKT and no
     * point of a feasible grid fits better. */
    const double a[] = {0.0372, 0.2869, 0.6861, 0.7071, 0.6233, 0.6245,
                        0.6482, 0.6008, 0.5155, 0.3846, 0.0270, 0.6790};
    const double b[] = {0.8587, 0.1781, 0.0747, 0.8405};
    double x[3];
    cr_assert_eq(nnls_solve(a, b, 4, 3, x), 0);
    expect_kkt(a, b, 4, 3, x, 1e-10);
    double r = residual(a, b, 4, 3, x), best = INFINITY;
    for (double u = 0; u <= 1.5; u += 0.05)
        for (double v = 0; v <= 1.5; v += 0.05)
            for (double s = 0; s <= 1.5; s += 0.05) {
                double y[3] = {u, v, s};
                best = fmin(best, residual(a, b, 4, 3, y));
            }
    cr_expect_geq(best, r - 1e-12);
    cr_expect(x[0] == 0.0 || x[1] == 0.0 || x[2] == 0.0, "a constraint is active");
}

Test(nnls, collinear_columns_stay_finite_and_optimal)
{
    /* Columns 0 and 1 identical, column 2 twice column 0: the fit is y = 3*t. */
    double a[8 * 3], b[8], x[3];
    for (int i = 0; i < 8; i++) {
        double t = 1.0 + i;
        a[3 * i] = t;
        a[3 * i + 1] = t;
        a[3 * i + 2] = 2.0 * t;
        b[i] = 3.0 * t;
    }
    cr_assert_eq(nnls_solve(a, b, 8, 3, x), 0);
    for (int j = 0; j < 3; j++)
        cr_expect(isfinite(x[j]) && x[j] >= 0.0);
    cr_expect_float_eq(x[0] + x[1] + 2.0 * x[2], 3.0, 1e-10);
    cr_expect_lt(residual(a, b, 8, 3, x), 1e-10);
}

Test(nnls, collinear_with_negative_direction)
{
    /* Column 1 = -column 0: only column 0 can carry a positive target. */
    double a[6 * 2], b[6], x[2];
    for (int i = 0; i < 6; i++) {
        a[2 * i] = i + 1.0;
        a[2 * i + 1] = -(i + 1.0);
        b[i] = 2.0 * (i + 1.0);
    }
    cr_assert_eq(nnls_solve(a, b, 6, 2, x), 0);
    cr_expect_float_eq(x[0] - x[1], 2.0, 1e-10);
    cr_expect_lt(residual(a, b, 6, 2, x), 1e-10);
}

Test(nnls, hilbert_matrix_recovers_positive_solution)
{
    /* 8x8 Hilbert matrix, condition number ~1.5e10, exact b from x = 1. */
    enum { N = 8 };
    double a[N * N], b[N], x[N];
    for (int i = 0; i < N; i++) {
        b[i] = 0.0;
        for (int j = 0; j < N; j++) {
            a[i * N + j] = 1.0 / (i + j + 1.0);
            b[i] += a[i * N + j];
        }
    }
    cr_assert_eq(nnls_solve(a, b, N, N, x), 0);
    cr_expect_lt(residual(a, b, N, N, x), 1e-12);
    for (int j = 0; j < N; j++)
        cr_expect_float_eq(x[j], 1.0, 1e-3, "x[%d] = %.9g", j, x[j]);
}

Test(nnls, hilbert_with_active_constraints_meets_kkt)
{
    enum { M = 12, N = 10 };
    double a[M * N], b[M], x[N];
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++)
            a[i * N + j] = 1.0 / (i + j + 1.0);
        b[i] = sin(i + 1.0);
    }
    int rc = nnls_solve(a, b, M, N, x);
    cr_assert_eq(rc, 0);
    expect_kkt(a, b, M, N, x, 1e-9);
}

Test(nnls, fewer_rows_than_columns)
{
    /* 2 equations, 4 unknowns: an exact non-negative solution exists. */
    const double a[] = {1, 2, 0, 1, 0, 1, 1, 3};
    const double b[] = {3, 2};
    double x[4];
    cr_assert_eq(nnls_solve(a, b, 2, 4, x), 0);
    cr_expect_lt(residual(a, b, 2, 4, x), 1e-12);
    for (int j = 0; j < 4; j++)
        cr_expect_geq(x[j], 0.0);
}

Test(nnls, zero_column_gets_zero)
{
    const double a[] = {1, 0, 2, 0, 3, 0};
    const double b[] = {2, 4, 6};
    double x[2];
    cr_assert_eq(nnls_solve(a, b, 3, 2, x), 0);
    cr_expect_float_eq(x[0], 2.0, 1e-12);
    cr_expect_eq(x[1], 0.0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

Test(nnls, random_problems_satisfy_kkt)
{
    for (int trial = 0; trial < 200; trial++) {
        size_t m = 1 + (size_t)(uniform() * 20), n = 1 + (size_t)(uniform() * NNLS_MAX_VARS);
        double a[20 * NNLS_MAX_VARS], b[20], x[NNLS_MAX_VARS];
        for (size_t i = 0; i < m * n; i++)
            a[i] = uniform() * 2.0 - 1.0;
        for (size_t i = 0; i < m; i++)
            b[i] = uniform() * 2.0 - 1.0;
        cr_assert_eq(nnls_solve(a, b, m, n, x), 0, "trial %d (%zux%zu)", trial, m, n);
        expect_kkt(a, b, m, n, x, 1e-9);
    }
}

Test(nnls, rejects_bad_input)
{
    const double a[] = {1, NAN};
    const double b[] = {1, 1};
    double x[1];
    errno = 0;
    cr_expect_eq(nnls_solve(a, b, 2, 1, x), -1);
    cr_expect_eq(errno, EINVAL);
    errno = 0;
    cr_expect_eq(nnls_solve(a, b, 2, 0, x), -1);
    cr_expect_eq(errno, EINVAL);
    errno = 0;
    cr_expect_eq(nnls_solve(a, b, 0, 1, x), -1);
    cr_expect_eq(errno, EINVAL);
    errno = 0;
    cr_expect_eq(nnls_solve(a, b, 1, NNLS_MAX_VARS + 1, x), -1);
    cr_expect_eq(errno, EINVAL);
}
