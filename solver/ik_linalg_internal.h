/*
 * ik_linalg_internal.h: the one Cholesky factorization of the numeric solvers
 * (ik_numeric.c's 6 x 6 normal matrices, ik_tree.c's stacked ones).
 * Internal to solver/ (ik__ prefix); header-only and static inline, so
 * that ik_numeric.c's calls with a constant size (6 or 3) unroll as its own
 * copy did.
 *
 * Both are always inlined (a GCC attribute, as the rest of ikd uses): a
 * caller's constant sizes then unroll the loops.
 *
 * Matrices are row-major with a row STRIDE (>= m): element (i, j) is
 * A[i * stride + j]. The factorization reads the lower triangle of a
 * symmetric positive definite N plus lambda on the diagonal and writes the
 * strictly lower triangle of L (N + lambda I = L L^T), which may be N
 * itself (in place: every element is read before it is written); L's
 * diagonal is not stored: its reciprocals go to inv, so that the solves
 * multiply instead of dividing. Degenerate
 * input: a pivot that is not positive (N + lambda I not positive definite,
 * or NaN) stops the factorization, which then returns false and leaves L
 * partly written.
 *
 * Not here: any allocation, pivoting (the normal matrices plus a positive
 * damping need none), other decompositions (ik_tree.c's Jacobi eigenvalues
 * serve only its secondary objectives).
 */
#ifndef IK_LINALG_INTERNAL_H
#define IK_LINALG_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* L L^T = N + lambda I for the m x m matrices N and L (stride s, L may be
 * N; L's strict lower triangle written), inv[j] = 1 / L[j][j]. False when
 * a pivot is not positive. */
static inline __attribute__((always_inline)) bool ik__cholesky(const double *N, double *L, size_t m,
                                                               size_t s, double lambda, double *inv)
{
    for (size_t j = 0; j < m; j++) {
        double d = N[j * s + j] + lambda;
        for (size_t k = 0; k < j; k++)
            d -= L[j * s + k] * L[j * s + k];
        if (!(d > 0.0))
            return false;
        inv[j] = 1.0 / sqrt(d);
        for (size_t i = j + 1; i < m; i++) {
            double v = N[i * s + j];
            for (size_t k = 0; k < j; k++)
                v -= L[i * s + k] * L[j * s + k];
            L[i * s + j] = v * inv[j];
        }
    }
    return true;
}

/* Solves L L^T y = b in place (b -> y) with ik__cholesky's L and inv. */
static inline __attribute__((always_inline)) void
ik__cholesky_solve(const double *L, size_t m, size_t s, const double *inv, double *b)
{
    for (size_t i = 0; i < m; i++) { /* L z = b */
        double v = b[i];
        for (size_t k = 0; k < i; k++)
            v -= L[i * s + k] * b[k];
        b[i] = v * inv[i];
    }
    for (size_t i = m; i-- > 0;) { /* L^T y = z */
        double v = b[i];
        for (size_t k = i + 1; k < m; k++)
            v -= L[k * s + i] * b[k];
        b[i] = v * inv[i];
    }
}

#endif /* IK_LINALG_INTERNAL_H */
