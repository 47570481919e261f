/* nnls: non-negative least squares, min ||A x - b||_2 subject to x >= 0.
 * Lawson–Hanson active-set method with a rank-revealing least-squares step, so
 * collinear and ill-conditioned columns give a finite, non-negative answer. */
#ifndef RINGMASTER_NNLS_H
#define RINGMASTER_NNLS_H

#include <stddef.h>

#define NNLS_MAX_VARS 16

/* a is m x n in row-major order, b has m entries, x receives n entries.
 * Requires 1 <= n <= NNLS_MAX_VARS and m >= 1; inputs are not modified.
 * Returns 0, or -1 with errno EINVAL (bad sizes, non-finite input), ENOMEM
 * (no memory for the m x n workspace; x untouched) or EDOM (no convergence
 * within the iteration limit, 30n + 100 least-squares solves; x then holds
 * the best feasible point found). Columns that are all zero get x = 0;
 * collinear columns get a basic solution (one of them carries the weight). */
int nnls_solve(const double *a, const double *b, size_t m, size_t n, double *x);

#endif
