/* nnls: non-negative least squares, min ||A x - b||_2 subject to x >= 0.
 * Lawson–Hanson active-set method with a rank-revealing least-squares step, so
 * collinear and ill-conditioned columns give a finite, non-negative answer. */
#ifndef RINGMASTER_NNLS_H
#define RINGMASTER_NNLS_H

#include <stddef.h>

#define NNLS_MAX_VARS 16

/* a is m x n in row-major order, b has m entries, x receives n entries.
 * Requires 1 <= n <= NNLS_MAX_VARS and m >= 1; inputs are not modified.
 * Returns 0, or -1 with errno EINVAL (bad sizes, non-finite input) or
 * EDOM (no convergence within the iteration limit; x then holds the best
 * feasible point found). */
int nnls_solve(const double *a, const double *b, size_t m, size_t n, double *x);

#endif
