/*
 * ik_numeric.c: numerical IK for general serial chains (contract in
 * ik_numeric.h).
 *
 * The search is a sequence of ATTEMPTS, the first from the seed, the others
 * from random configurations drawn uniformly inside the limits (continuous
 * joints in [-pi, pi]) by a splitmix64 generator seeded with opts.rng_seed;
 * the idea of random restarts is KDL-RR's / TRAC-IK's (Beeson and Ames,
 * "TRAC-IK", Humanoids 2015). One attempt is Levenberg-Marquardt on the
 * weighted 6-D error e (ik_pose_error(): position difference and rotation
 * vector of R_target R^T, base frame), with the analytic geometric Jacobian
 * J of ik_chain_jacobian_mat() and only the m active rows (weight > 0):
 *   dq = Jw^T (Jw Jw^T + lambda I)^-1 ew     (Jw, ew: rows times sqrt(w))
 * which is the damped least-squares step (J^T J + lambda I)^-1 J^T e solved
 * as an m x m system (m <= 6) by Cholesky, whatever the number of joints.
 * Joint limits form a small active set: a joint the step would push through
 * a limit is moved onto it, its motion is taken out of the error, and the
 * step is solved again for the other joints (up to LOCK_PASSES times), so
 * the arm keeps sliding along a limit instead of stalling against it.
 * Revolute joints whose range spans a full turn are first shifted by whole
 * turns (same pose, no wall); continuous joints move freely (no wrapping
 * while solving, so that a continuation keeps the seed's turn).
 * The trial pose is accepted only if it lowers the weighted squared error:
 * then lambda shrinks (x LAMBDA_DOWN), else it grows (x LAMBDA_UP) and the
 * step is retried. An attempt ends when every checked component is below
 * CONVERGED_FRACTION of its tolerance (solved), when lambda exceeds
 * LAMBDA_MAX or after ATTEMPT_MAX_ITERS iterations (stalled: restart,
 * unless its pose meets the tolerance all the same, below MET_FRACTION of
 * it: then solved, as for a target just past the reach), or
 * when the budget runs out. Past ATTEMPT_MAX_ITERS an attempt may go on,
 * up to SLOW_MAX_ITERS, while its error is already small (cost below
 * SLOW_MAX_COST) and still quartering every SLOW_EVERY iterations: the
 * slow, linear convergence onto a solution next to a singularity. Short
 * attempts measured best on the shared robots (build/ikbench with
 * --max-iterations, a clock-independent count): an attempt that converges
 * does so in a few Newton-like steps; one that does not is usually in a
 * local minimum against the limits, and a fresh start is cheaper than
 * insisting.
 *
 * Turns: every solution is re-expressed, joint by joint, as the 2 pi k
 * equivalent (inside the limits) nearest the seed (ik_chain_turn_near) before it is
 * compared or returned, so distances to the seed are plain differences.
 *
 * Continuation (a seed with IK_SEARCH_NEAREST_TO_SEED): the seed's attempt
 * runs with a floor on the damping (CONT_LAMBDA_MIN: near a singularity
 * the step stays bounded instead of following 1/sigma) and every step cut
 * to at most CONT_STEP_MAX per joint (step control), with CONT_ATTEMPT_ITERS
 * iterations and then the allowance of a slow convergence. If it does not
 * reach the target, and the target is within CONT_REACH of the chain's
 * reach and CONT_TURN of the seed's tip (a motion to follow, not a new goal
 * across the workspace), a homotopy does: the target moves from the seed's
 * own tip pose to the requested pose in up to CONT_MAX_STAGES increments
 * (positions linearly, orientations by slerp), each stage solved from the
 * previous stage's answer the same way, so the arm is pulled along the
 * target's path rather than thrown at its end. When neither reaches it, the
 * seed's plain attempt (the first-found search's, as a WALK: past
 * ATTEMPT_MAX_ITERS it goes on while every SLOW_EVERY iterations take its
 * error below WALK_PROGRESS of what it was, up to WALK_MAX_ITERS, so that a
 * slow but steady descent to the solution next to the seed is not cut off
 * for a restart that lands on a far branch) and then the random restarts
 * run (Nakamura and Hanafusa 1986 for the damped, singularity-robust
 * inverse; Wampler 1986 for the damping floor).
 *
 * Following a motion (opts.follow, streams) on a redundant chain (fewer
 * active rows m than joints n): every continuation iteration adds to its
 * damped least-squares step a self-motion, the projection onto the null
 * space of the active rows (damped as the step is) of a direction d, at
 * most FOLLOW_SHARE of the step's largest joint motion (less when d is
 * flat, see FOLLOW_FULL; halved with each refused trial). d, taken once
 * at the attempt's start, descends
 * log f, f being the squared size of the damped least-norm step that
 * follows the target's motion (the error at the seed) from the current
 * pose, and the square of how deep each joint is into the outer LIMIT_ZONE
 * of its range: the classical gradient projection of Liegeois (1977),
 * with a secondary objective that rewards the configurations from which
 * the motion is cheapest (a smooth joint-space motion passes a singularity
 * with small steps from its own configurations, not from the others on
 * the same pose) instead of a fixed posture. Measured with ikbench stream
 * (12 motions of 300 steps each, plain and follow in the same run): the
 * iiwa 14 through its aligned axes (joints 2 and 6 around 0), steps above
 * 3 times the motion's own 621 -> 15, the largest 230 -> 14 times the
 * motion's, restarts 9 -> 0; at a working pose, and the Panda, no such
 * step either way, the largest 1.01 -> 1.38 and 1.07 -> 1.41 times the
 * motion's (the self-motion added); 1.2 to 1.35 times the CPU time per
 * solve (about 3.5 instead of 2.6 microseconds). Tuned on those and on
 * 24 motions around random centres: a smaller FOLLOW_FULL or a larger
 * FOLLOW_SHARE steers harder (fewer large steps through aligned axes,
 * larger ordinary ones), without the limit term the Panda's joint 4
 * still drifts onto its limit. d also descends, weakly (MID_PULL), the
 * squared distance of each joint with walls from the middle of its range:
 * a fixed potential, so that a closed motion's answers come back round
 * instead of drifting by a little every cycle. Without it the PR2's right
 * arm under fast forearm and wrist rolls drifted its elbow's swivel
 * until the wrist flex sat on its upper limit, 0, which is also the
 * wrist's singularity; the limit term cannot hold a joint there, as the
 * self-motion is at most FOLLOW_SHARE of a step whose largest motion is
 * that joint's own, and a restart then answered on the other branch
 * (both rolls turned by pi). Measured with ikbench stream, 24 motions,
 * iteration-bounded: the PR2 12 steps above 3 times the motion's own in
 * 6 motions (the largest 19 times it, 94 restarts) -> none (2.8 times at
 * most, no restart); the Panda and the iiwa at working poses, and the
 * iiwa through its aligned axes, as before (34 -> 32 such steps); the
 * Panda around test_ik_follow.c's centre next to joint 4's limit no
 * better (7 -> 13 such steps, restarts 40 -> 29; the jumps of over 50
 * times the motion's step in 4 motions either way, not the same ones). A
 * stronger pull (2.5) draws the iiwa's joints 2 and 6 towards 0, the
 * middle of their ranges and its aligned axes, too hard.
 *
 * The best pose seen by any attempt (lowest weighted error) is kept for the
 * failure case. The budget's clocks (ik_budget.h: the thread's CPU time,
 * with a wall-clock ceiling) are read every CLOCK_EVERY iterations. Nothing is allocated: all vectors live in the caller's
 * workspace, small fixed-size matrices on the stack.
 *
 * Collisions (opts.collide): every solution an attempt finds (the seed's,
 * the homotopy's, a restart's) passes through clear_of_collisions() before
 * it is recorded: clear, it counts; not clear, ik__avoid_repair() slides
 * it out inside the target's null space (ik_avoid.h); still not clear, it
 * is kept aside if it is the clearest so far and the attempt counts as
 * stalled, so the search goes on with its next restart.
 *
 * Not here: null-space objectives other than follow's (manipulability,
 * postures), the geometry (ik_collide.c), the SQP half of TRAC-IK.
 */
#include "solver/ik_numeric.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "solver/ik_avoid.h"
#include "solver/ik_budget.h"
#include "solver/ik_linalg_internal.h"
#include "solver/ik_reason.h"
#include "solver/ik_rng.h"

ik_target ik_target_full_pose(ik_xform pose)
{
    ik_target t;
    memset(&t, 0, sizeof t);
    t.pose = pose;
    t.mode = IK_TARGET_FULL_POSE;
    return t;
}

ik_target ik_target_position(ik_vec3 p)
{
    ik_target t;
    memset(&t, 0, sizeof t);
    t.pose.p = p;
    t.pose.q = ik_quat_identity();
    t.mode = IK_TARGET_POSITION;
    return t;
}

ik_numeric_opts ik_numeric_opts_default(void)
{
    ik_numeric_opts o;
    memset(&o, 0, sizeof o);
    o.tol_pos = 1e-5;
    o.tol_rot = 1e-5;
    o.max_iterations = 0;
    o.timeout_s = IK_NUMERIC_DEFAULT_TIMEOUT_S;
    o.max_restarts = SIZE_MAX;
    o.rng_seed = 1;
    o.search = IK_SEARCH_FIRST_FOUND;
    o.nearest_extra_restarts = 8;
    o.nearest_local = 0.35;
    return o;
}

void ik_pose_error(ik_xform target, ik_xform actual, double e[6])
{
    e[0] = target.p.x - actual.p.x;
    e[1] = target.p.y - actual.p.y;
    e[2] = target.p.z - actual.p.z;
    ik_vec3 r = ik_quat_to_rotvec(ik_quat_mul(target.q, ik_quat_conj(actual.q)));
    e[3] = r.x;
    e[4] = r.y;
    e[5] = r.z;
}

/* ======================================================================= */

/* Internal tuning (measured with build/ikbench on the shared robots). */
#ifndef ATTEMPT_MAX_ITERS
#define ATTEMPT_MAX_ITERS 18   /* iterations before an attempt is abandoned */
#endif
#ifndef LAMBDA_INIT
#define LAMBDA_INIT 1e-2
#endif
#ifndef LAMBDA_MIN
#define LAMBDA_MIN 1e-9
#endif
#ifndef LAMBDA_MAX
#define LAMBDA_MAX 1e4
#endif
#ifndef LAMBDA_UP
#define LAMBDA_UP 8.0
#endif
#ifndef LAMBDA_DOWN
#define LAMBDA_DOWN 0.2
#endif
#define CONVERGED_FRACTION 0.5 /* stop below half the tolerance: a margin
                                  against rounding in the caller's check */
#define MET_FRACTION (1.0 - 1e-6) /* an attempt that stalls with its pose
                                  below this share of the tolerance has
                                  met the target all the same (a target
                                  just past the reach or the limits: its
                                  best pose never gets below half) */
#ifndef SLOW_EVERY
#define SLOW_EVERY 4
#endif
#ifndef SLOW_MAX_ITERS
#define SLOW_MAX_ITERS 200
#endif
#ifndef SLOW_MAX_COST
#define SLOW_MAX_COST 1e-6
#endif
#ifndef LOCK_PASSES
#define LOCK_PASSES 2          /* re-solves after moving joints onto limits */
#endif
#define CLOCK_EVERY 4          /* iterations between clock reads */
#ifndef CONT_STEP_MAX
#define CONT_STEP_MAX 0.25     /* continuation: largest joint motion per
                                  iteration (rad or m) */
#endif
#ifndef CONT_LAMBDA_MIN
#define CONT_LAMBDA_MIN 1e-6   /* continuation: damping floor */
#endif
#ifndef CONT_MAX_STAGES
#define CONT_MAX_STAGES 8      /* homotopy increments at most */
#endif
#define CONT_STAGE_ITERS 20    /* iterations per intermediate stage */
#define CONT_ATTEMPT_ITERS 30  /* the seed's continuation attempt (then the
                                  slow-convergence allowance) */
#ifndef WALK_MAX_ITERS
#define WALK_MAX_ITERS 200     /* the seed's plain walk of a continuation ... */
#endif
#ifndef WALK_PROGRESS
#define WALK_PROGRESS 0.9      /* ... goes on while every SLOW_EVERY iterations
                                  take its cost below this share */
#endif
#define CONT_REACH 0.25        /* the homotopy runs for targets within this
                                  fraction of the chain's reach ... */
#define CONT_TURN 1.0          /* ... and this rotation (radians) of the
                                  seed's tip: farther is a new goal, not a
                                  motion to follow */
#ifndef FOLLOW_SHARE
#define FOLLOW_SHARE 0.5       /* follow: an iteration's self-motion is at
                                  most this share of its least-squares step
                                  (largest joint motion against largest) */
#endif
#ifndef FOLLOW_FULL
#define FOLLOW_FULL 0.05       /* ... the whole share once the objective's
                                  slope along the self-motion is this steep
                                  (relative change per radian); less in
                                  proportion below it */
#endif
#define FOLLOW_MU 1e-6         /* follow: damping of the step-size measure */
#define FOLLOW_SLOPE_MAX 10.0  /* follow: the step size's relative slope is
                                  clipped to this (per radian) */
#define LIMIT_ZONE 0.2         /* follow: the outer share of each half range
                                  (a tenth of the range at either end) that
                                  repels the joint from its limit ... */
#define LIMIT_WEIGHT 10.0      /* ... with this weight against the step
                                  size's relative slope (a joint at its
                                  limit: a slope of LIMIT_WEIGHT * 2 /
                                  (LIMIT_ZONE * half range)) */
#ifndef MID_PULL
#define MID_PULL 2.0           /* follow: and every such joint is drawn
                                  towards the middle of its range with a
                                  slope of MID_PULL * u / half range (u:
                                  -1 at the lower limit, 1 at the upper) */
#endif


/* ---- the problem: target, active rows, tolerances ----------------------- */

typedef struct problem {
    const ik_chain *c;
    size_t n;             /* dof */
    ik_vec3 pt;           /* target position */
    ik_quat qt;           /* target orientation (unit) */
    double Rt[9];         /* the same as a matrix */
    bool need_rot;        /* some rotation row is active */
    size_t m;             /* active rows */
    int row[6];           /* their indices in the 6-D error */
    double sw[6];         /* square roots of their weights */
    bool check[6];        /* rows of the tolerance test */
    double tol[6];
} problem;

/* Jacobian and pose error at q; returns the weighted squared error. */
static double evaluate(const problem *P, const double *q, double *J, double e[6])
{
    double R[9], p[3];
    ik_chain_jacobian_mat(P->c, q, J, R, p);
    e[0] = P->pt.x - p[0];
    e[1] = P->pt.y - p[1];
    e[2] = P->pt.z - p[2];
    if (P->need_rot) {
        ik_mat3_rotvec_error(P->Rt, R, e + 3);
    } else {
        e[3] = e[4] = e[5] = 0.0;
    }
    double cost = 0.0;
    for (size_t a = 0; a < P->m; a++) {
        double v = P->sw[a] * e[P->row[a]];
        cost += v * v;
    }
    return cost;
}

static bool within_share(const problem *P, const double e[6], double share)
{
    for (int r = 0; r < 6; r++)
        if (P->check[r] && !(fabs(e[r]) <= share * P->tol[r]))
            return false;
    return true;
}

static bool converged(const problem *P, const double e[6])
{
    return within_share(P, e, CONVERGED_FRACTION);
}

/* ---- one damped least-squares step -------------------------------------- */

/* The normal matrix N = Jw Jw^T over the active rows (m x m, lower
 * triangle filled). It depends on J only, so it is built once per accepted
 * pose and reused by every damping tried there. */
static void normal_matrix(const problem *P, const double *J, double N[6][6])
{
    const size_t n = P->n, m = P->m;
    for (size_t a = 0; a < m; a++) {
        const double *Ja = J + (size_t)P->row[a] * n;
        for (size_t b = 0; b <= a; b++) {
            const double *Jb = J + (size_t)P->row[b] * n;
            double s = 0.0;
            for (size_t k = 0; k < n; k++)
                s += Ja[k] * Jb[k];
            N[a][b] = s * P->sw[a] * P->sw[b];
        }
    }
}

/* Solves (N + lambda I) y = b in place (b -> y) by Cholesky (ik_linalg_internal.h),
 * m <= 6, inlined into each caller with m a constant where it is (6 or 3),
 * so that the compiler unrolls it. Returns false when a pivot is not
 * positive. */
static inline __attribute__((always_inline)) bool cholesky_solve(double N[6][6], double lambda,
                                                                 size_t m, double *b)
{
    double L[6][6], inv[6];
    if (!ik__cholesky(&N[0][0], &L[0][0], m, 6, lambda, inv))
        return false;
    ik__cholesky_solve(&L[0][0], m, 6, inv, b);
    return true;
}

/* dq = Jw^T (N + lambda I)^-1 ew over the joints not locked (locked ones
 * get 0; N must already exclude their columns). */
static bool dls_solve(const problem *P, const double *J, double N[6][6], const double e[6],
                      double lambda, const bool *locked, double *dq)
{
    const size_t n = P->n, m = P->m;
    double y[6];
    for (size_t a = 0; a < m; a++)
        y[a] = P->sw[a] * e[P->row[a]];
    bool ok = m == 6 ? cholesky_solve(N, lambda, 6, y)
                     : (m == 3 ? cholesky_solve(N, lambda, 3, y) : cholesky_solve(N, lambda, m, y));
    if (!ok)
        return false;
    for (size_t k = 0; k < n; k++)
        dq[k] = 0.0;
    for (size_t a = 0; a < m; a++) {
        const double *Ja = J + (size_t)P->row[a] * n;
        const double s = P->sw[a] * y[a];
        for (size_t k = 0; k < n; k++)
            dq[k] += Ja[k] * s;
    }
    for (size_t k = 0; k < n; k++)
        if (locked[k])
            dq[k] = 0.0;
    return true;
}

/* Joint k's value v put back inside its limits. A revolute joint whose
 * range spans a full turn is first shifted by whole turns (same pose, no
 * artificial wall); continuous joints are left as they are (ik_chain_turn_near()
 * chooses their turn at the end). *clamped tells whether v had to be
 * clamped onto a limit. */
static double limit_joint(const ik_chain *c, size_t k, double v, bool *clamped)
{
    *clamped = false;
    if (c->type[k] == IK_JOINT_CONTINUOUS)
        return v;
    const double lo = c->lower[k], hi = c->upper[k];
    if (v >= lo && v <= hi)
        return v;
    if (c->type[k] == IK_JOINT_REVOLUTE && hi - lo >= 2.0 * IK_PI) {
        double w = lo + fmod(v - lo, 2.0 * IK_PI) + (v < lo ? 2.0 * IK_PI : 0.0);
        if (w >= lo && w <= hi)
            return w;
    }
    *clamped = true;
    return v > hi ? hi : lo;
}

/* ---- following a motion (opts.follow) ------------------------------------ */

/* The direction in which the self-motion of a redundant chain is steered
 * at q (J its Jacobian, N its normal matrix Jw Jw^T over the active rows),
 * into d (n values):
 *   d = -grad log f - LIMIT_WEIGHT grad psi - MID_PULL grad mu
 * (the first term clipped to FOLLOW_SLOPE_MAX), where
 * f(q) = v^T (Jw Jw^T + FOLLOW_MU I)^-1 v is the squared size of the
 * damped least-norm step that would follow the target's motion v (the
 * weighted error at the seed) from q, and psi sums, over the joints with
 * walls (not continuous, not spanning a full turn), the square of how deep
 * the joint is into the outer LIMIT_ZONE of its half range (0 elsewhere),
 * and mu half the sum of the squares of their positions in their ranges
 * (u = -1 at the lower limit, 0 in the middle, 1 at the upper).
 * A smooth joint-space motion reaches its next pose with a small step from
 * its own configuration; next to a singularity f grows fast away from
 * there, so descending it steers the answers towards the motion's own
 * configurations, psi keeps them off the limits, and mu, a fixed
 * potential, keeps the self-motion from drifting cycle after cycle.
 *
 * The gradient of f needs the derivative of the Jacobian (the geometric
 * one of ik_chain_jacobian_mat, columns J_i = [z_i x (p - p_i); z_i] for a
 * revolute joint, [z_i; 0] for a prismatic one). A revolute joint k turns
 * everything after it about z_k, so for i >= k dJ_i/dq_k = z_k x J_i (both
 * halves); for i < k it moves only the tip, so the linear half of a
 * revolute column i changes by z_i x J_lin_k and its angular half not at
 * all. A prismatic joint k turns nothing: for i < k a revolute column's
 * linear half changes by z_i x z_k, the rest not. With y = (N + mu I)^-1 v
 * (weighted) and D = Jw^T y, df/dq_k = -2 y^T (dJw/dq_k) D, and
 * (dJ/dq_k) D = [z_k x T_lin + A x J_lin_k; z_k x T_ang] for a revolute k
 * ([A x z_k; 0] for a prismatic one), with T = sum over i >= k of D_i J_i
 * and A = sum over revolute i < k of D_i z_i, both accumulated in one pass.
 * O(6 n) after one m x m solve. scratch: 7 n + 6 doubles. */
static void follow_direction(const problem *P, const double *q, const double *J,
                             double N[6][6], const double v[6], double *d, double *scratch)
{
    const ik_chain *c = P->c;
    const size_t n = P->n, m = P->m;
    double y[6], wv[6], f = 0.0;
    for (size_t k = 0; k < n; k++)
        d[k] = 0.0;
    for (size_t a = 0; a < m; a++)
        y[a] = wv[a] = P->sw[a] * v[P->row[a]];
    if (cholesky_solve(N, FOLLOW_MU, m, y))
        for (size_t a = 0; a < m; a++)
            f += wv[a] * y[a];
    if (f > 1e-300 && isfinite(f)) {
        double yr[6] = {0, 0, 0, 0, 0, 0}, *D = scratch, (*T)[6] = (double(*)[6])(scratch + n);
        for (size_t a = 0; a < m; a++)
            yr[P->row[a]] = P->sw[a] * y[a];
        for (size_t k = 0; k < n; k++) {
            double s = 0.0;
            for (int r = 0; r < 6; r++)
                s += J[(size_t)r * n + k] * yr[r];
            D[k] = s;
        }
        for (int r = 0; r < 6; r++)
            T[n][r] = 0.0;
        for (size_t i = n; i-- > 0;)
            for (int r = 0; r < 6; r++)
                T[i][r] = T[i + 1][r] + D[i] * J[(size_t)r * n + i];
        ik_vec3 A = ik_v3(0, 0, 0);
        for (size_t k = 0; k < n; k++) {
            ik_vec3 lin = ik_v3(J[k], J[n + k], J[2 * n + k]), dl, da;
            if (c->type[k] == IK_JOINT_PRISMATIC) {
                dl = ik_vec3_cross(A, lin);
                da = ik_v3(0, 0, 0);
            } else {
                ik_vec3 z = ik_v3(J[3 * n + k], J[4 * n + k], J[5 * n + k]);
                dl = ik_vec3_add(ik_vec3_cross(z, ik_v3(T[k][0], T[k][1], T[k][2])),
                                 ik_vec3_cross(A, lin));
                da = ik_vec3_cross(z, ik_v3(T[k][3], T[k][4], T[k][5]));
                A = ik_vec3_add(A, ik_vec3_scale(z, D[k]));
            }
            /* -d log f / dq_k = 2 y^T (dJw/dq_k) D / f */
            d[k] = 2.0 *
                   (yr[0] * dl.x + yr[1] * dl.y + yr[2] * dl.z + yr[3] * da.x + yr[4] * da.y +
                    yr[5] * da.z) /
                   f;
        }
        /* next to a singularity f changes by orders of magnitude per
         * radian: past FOLLOW_SLOPE_MAX only the direction counts, so that
         * a limit's repulsion still weighs against it */
        double big = 0.0;
        for (size_t k = 0; k < n; k++)
            big = fmax(big, fabs(d[k]));
        if (big > FOLLOW_SLOPE_MAX)
            for (size_t k = 0; k < n; k++)
                d[k] *= FOLLOW_SLOPE_MAX / big;
    }
    for (size_t k = 0; k < n; k++) {
        if (c->type[k] == IK_JOINT_CONTINUOUS ||
            (c->type[k] == IK_JOINT_REVOLUTE && c->upper[k] - c->lower[k] >= 2.0 * IK_PI))
            continue;
        const double half = 0.5 * (c->upper[k] - c->lower[k]);
        if (!(half > 0.0))
            continue;
        const double u = (q[k] - 0.5 * (c->upper[k] + c->lower[k])) / half;
        const double deep = fabs(u) - (1.0 - LIMIT_ZONE);
        if (deep > 0.0)
            d[k] -= LIMIT_WEIGHT * (u > 0.0 ? 2.0 : -2.0) * deep / (LIMIT_ZONE * LIMIT_ZONE * half);
        d[k] -= MID_PULL * u / half;
    }
}

/* Adds to the least-squares step dq the self-motion towards d: d projected
 * onto the null space of the active rows of J over the joints not locked
 * (damped as the step is: h = d - Jw^T (N + lambda I)^-1 Jw d, N without
 * the locked columns), scaled so that its largest joint motion is `share`
 * of dq's largest, in proportion less when h is flatter than FOLLOW_FULL.
 * A step dq of zero gets no self-motion. h: n doubles of scratch. */
static void add_self_motion(const problem *P, const double *J, double N[6][6], double lambda,
                            const bool *locked, const double *d, double share, double *dq,
                            double *h)
{
    const size_t n = P->n, m = P->m;
    double y[6], big_h = 0.0, big_dq = 0.0;
    for (size_t a = 0; a < m; a++) {
        const double *Ja = J + (size_t)P->row[a] * n;
        double s = 0.0;
        for (size_t k = 0; k < n; k++)
            if (!locked[k])
                s += Ja[k] * d[k];
        y[a] = P->sw[a] * s;
    }
    if (!cholesky_solve(N, lambda, m, y))
        return;
    for (size_t k = 0; k < n; k++) {
        h[k] = 0.0;
        if (locked[k])
            continue;
        double s = d[k];
        for (size_t a = 0; a < m; a++)
            s -= P->sw[a] * J[(size_t)P->row[a] * n + k] * y[a];
        h[k] = s;
        big_h = fmax(big_h, fabs(s));
        big_dq = fmax(big_dq, fabs(dq[k]));
    }
    if (!(big_h > 0.0) || !isfinite(big_h))
        return;
    const double scale = share * fmin(1.0, big_h / FOLLOW_FULL) * big_dq / big_h;
    for (size_t k = 0; k < n; k++)
        dq[k] += scale * h[k];
}

/* One damped least-squares step from q, respecting the limits (a small
 * active set): a joint the step would push through a limit is moved onto
 * that limit, its motion is taken out of the error, and the step is solved
 * again for the other joints; up to LOCK_PASSES times. The limited trial
 * pose goes to qt. Returns false when the damped system is not positive
 * definite. locked: n flags of scratch; h: n doubles of scratch (toward). */
static bool limited_step(const problem *P, const double *q, const double *J,
                         double N0[6][6], const double e[6], double lambda, double step_max,
                         const double *toward, double share, double *dq, double *qt,
                         bool *locked, double *h)
{
    const ik_chain *c = P->c;
    const size_t n = P->n, m = P->m;
    double el[6], N[6][6];
    memcpy(el, e, sizeof el);
    memcpy(N, N0, sizeof N);
    for (size_t k = 0; k < n; k++)
        locked[k] = false;
    for (int pass = 0;; pass++) {
        if (!dls_solve(P, J, N, el, lambda, locked, dq))
            return false;
        if (toward)
            add_self_motion(P, J, N, lambda, locked, toward, share, dq, h);
        if (step_max > 0.0) {
            /* step control: the whole step scaled down (its direction
             * kept) so that no joint moves more than step_max */
            double big = 0.0;
            for (size_t k = 0; k < n; k++)
                if (fabs(dq[k]) > big)
                    big = fabs(dq[k]);
            if (big > step_max)
                for (size_t k = 0; k < n; k++)
                    dq[k] *= step_max / big;
        }
        bool more = false;
        for (size_t k = 0; k < n; k++) {
            if (locked[k])
                continue;
            bool clamped;
            qt[k] = limit_joint(c, k, q[k] + dq[k], &clamped);
            if (clamped && pass < LOCK_PASSES) {
                /* lock it: its motion leaves the error, its column N */
                locked[k] = true;
                const double d = qt[k] - q[k];
                for (int r = 0; r < 6; r++)
                    el[r] -= J[(size_t)r * n + k] * d;
                double col[6];
                for (size_t a2 = 0; a2 < m; a2++)
                    col[a2] = P->sw[a2] * J[(size_t)P->row[a2] * n + k];
                for (size_t a2 = 0; a2 < m; a2++)
                    for (size_t b2 = 0; b2 <= a2; b2++)
                        N[a2][b2] -= col[a2] * col[b2];
                more = true;
            }
        }
        if (!more)
            return true;
    }
}

/* ---- the search --------------------------------------------------------- */

typedef struct search {
    const problem *P;
    const ik_numeric_opts *o;
    double *J, *Jt, *q, *qt, *dq, *best, *near, *seed;
    double *toward;  /* follow: the self-motion's direction (n) */
    double *scratch; /* follow_direction's and add_self_motion's (8 n + 6) */
    bool *locked;    /* limited_step's (n) */
    double best_cost;
    size_t iterations;
    ik_budget budget; /* opts.timeout_s (ik_budget.h) */
    bool timed_out;
    bool out_of_iterations;
    /* continuation mode of attempt(): step cap, damping floor and the
     * long iteration allowance (0 / LAMBDA_MIN / ATTEMPT_MAX_ITERS when
     * off) */
    double step_max;
    double lambda_min;
    size_t max_iters;
    bool walk;    /* past max_iters, go on while the cost keeps falling
                     (WALK_PROGRESS every SLOW_EVERY iterations), up to
                     WALK_MAX_ITERS: the seed's plain walk of a continuation */
    bool staging; /* S->P is an intermediate homotopy stage */
    bool follow;  /* continuation with opts.follow: steer the self-motion */
    const ik_collide_check *chk; /* opts.collide when it avoids, else NULL */
    size_t hits;          /* solutions not clear, kept aside ... */
    ik_collide_pair hit;  /* ... the clearest one's pair */
    double *hit_q;        /* ... and joints (in chk's workspace) */
} search;

enum { ATTEMPT_SOLVED = 1, ATTEMPT_STALLED = 0, ATTEMPT_BUDGET = -1 };

static bool budget_left(search *S)
{
    if (S->o->max_iterations && S->iterations >= S->o->max_iterations) {
        S->out_of_iterations = true;
        return false;
    }
    if (S->o->timeout_s > 0.0 && S->iterations % CLOCK_EVERY == 0 &&
        ik_budget_spent(&S->budget, S->iterations)) {
        S->timed_out = true;
        return false;
    }
    return true;
}

static void keep_best(search *S, const double *q, double cost)
{
    if (S->staging)
        return; /* a homotopy stage's cost is not the target's */
    if (cost < S->best_cost) {
        S->best_cost = cost;
        memcpy(S->best, q, S->P->n * sizeof *q);
    }
}

/* The outcome of an attempt that stops short of CONVERGED_FRACTION with
 * the error e at S->q: solved all the same when e meets the tolerance
 * (below MET_FRACTION of it), else stalled. */
static int stalled(const problem *P, const double e[6])
{
    return within_share(P, e, MET_FRACTION) ? ATTEMPT_SOLVED : ATTEMPT_STALLED;
}

/* Levenberg-Marquardt from S->q (inside the limits). On ATTEMPT_SOLVED the
 * solution is in S->q: below CONVERGED_FRACTION of the tolerance, or, when
 * the attempt could get no lower, below MET_FRACTION of it. */
static int attempt(search *S)
{
    const problem *P = S->P;
    double e[6], et[6];
    double N[6][6];
    double cost = evaluate(P, S->q, S->J, e);
    keep_best(S, S->q, cost);
    normal_matrix(P, S->J, N);
    double lambda = LAMBDA_INIT;
    double checkpoint = INFINITY;
    /* follow: the target's motion is the error at the start (the seed's);
     * the direction is taken there, once (the few steps of an attempt
     * barely turn it: taken after every step, it cost 15% more CPU time
     * per solve for the same answers within 1%), and the self-motion's
     * share halves with every trial refused */
    const bool follow = S->follow && !S->staging && P->m < P->n;
    double *d = S->toward, share = FOLLOW_SHARE;
    if (follow)
        follow_direction(P, S->q, S->J, N, e, d, S->scratch);
    for (size_t it = 0;; it++) {
        if (converged(P, e))
            return ATTEMPT_SOLVED;
        if (!budget_left(S))
            return ATTEMPT_BUDGET;
        if (it >= S->max_iters && (it - S->max_iters) % SLOW_EVERY == 0) {
            /* past the usual length: go on only while close and still
             * halving the error every SLOW_EVERY iterations (slow, linear
             * convergence next to a singular solution); a walk, while its
             * error keeps falling at all */
            if (S->walk ? (it >= WALK_MAX_ITERS || cost > WALK_PROGRESS * checkpoint)
                        : (it >= SLOW_MAX_ITERS || cost > SLOW_MAX_COST ||
                           cost > 0.25 * checkpoint))
                return stalled(P, e);
            checkpoint = cost;
        }
        S->iterations++;
        const double *dir = follow && share > 1e-3 * FOLLOW_SHARE ? d : NULL;
        if (!limited_step(P, S->q, S->J, N, e, lambda, S->step_max, dir, share, S->dq, S->qt,
                          S->locked, S->scratch)) {
            lambda *= LAMBDA_UP;
            if (lambda > LAMBDA_MAX)
                return stalled(P, e);
            continue;
        }
        double ct = evaluate(P, S->qt, S->Jt, et);
        if (ct < cost) {
            double *tmp = S->q;
            S->q = S->qt;
            S->qt = tmp;
            tmp = S->J;
            S->J = S->Jt;
            S->Jt = tmp;
            memcpy(e, et, sizeof e);
            cost = ct;
            keep_best(S, S->q, cost);
            normal_matrix(P, S->J, N);
            lambda *= LAMBDA_DOWN;
            if (lambda < S->lambda_min)
                lambda = S->lambda_min;
        } else {
            share *= 0.5;
            lambda *= LAMBDA_UP;
            if (lambda > LAMBDA_MAX)
                return stalled(P, e);
        }
    }
}

static void random_config(const ik_chain *c, ik_rng *r, double *q)
{
    for (size_t k = 0; k < c->dof; k++) {
        if (c->type[k] == IK_JOINT_CONTINUOUS)
            q[k] = ik_rng_uniform(r, -IK_PI, IK_PI);
        else
            q[k] = ik_rng_uniform(r, c->lower[k], c->upper[k]);
    }
}

/* ---- turns ------------------------------------------------------------------ */

/* Every joint of q re-expressed nearest the reference pose ref. */
static void turns_near(const ik_chain *c, double *q, const double *ref)
{
    for (size_t k = 0; k < c->dof; k++)
        q[k] = ik_chain_turn_near(c, k, q[k], ref[k]);
}

/* Squared joint-space distance (q already re-expressed by turns_near). */
static double joint_dist2(const ik_chain *c, const double *a, const double *b)
{
    double s = 0.0;
    for (size_t k = 0; k < c->dof; k++) {
        double d = a[k] - b[k];
        s += d * d;
    }
    return s;
}

/* True when every joint of a is within lim of b. */
static bool within(const ik_chain *c, const double *a, const double *b, double lim)
{
    for (size_t k = 0; k < c->dof; k++)
        if (!(fabs(a[k] - b[k]) <= lim))
            return false;
    return true;
}

/* Largest |a[k] - b[k]| (and the same over angular and over prismatic
 * joints into ang and lin), and whether a stays within the caller's step
 * limits (max_step for angular joints, max_step_lin for prismatic). */
static double largest_step(const ik_chain *c, const double *a, const double *b,
                           const ik_numeric_opts *o, bool *allowed, double *ang, double *lin)
{
    double big = 0.0;
    *allowed = true;
    *ang = *lin = 0.0;
    for (size_t k = 0; k < c->dof; k++) {
        double d = fabs(a[k] - b[k]);
        if (d > big)
            big = d;
        double *m = c->type[k] == IK_JOINT_PRISMATIC ? lin : ang;
        if (d > *m)
            *m = d;
        double lim = c->type[k] == IK_JOINT_PRISMATIC ? o->max_step_lin : o->max_step;
        if (lim > 0.0 && !(d <= lim))
            *allowed = false;
    }
    return big;
}

/* ---- continuation ------------------------------------------------------------- */

static void continuation_mode(search *S, bool on)
{
    S->step_max = on ? CONT_STEP_MAX : 0.0;
    S->lambda_min = on ? CONT_LAMBDA_MIN : LAMBDA_MIN;
    S->max_iters = on ? CONT_ATTEMPT_ITERS : ATTEMPT_MAX_ITERS;
    S->follow = on && S->o->follow;
}

/* Rough reach of the chain: the lengths of its fixed offsets, added. */
static double chain_reach(const ik_chain *c)
{
    double r = ik_vec3_len(c->tip.p);
    for (size_t k = 0; k < c->dof; k++)
        r += ik_vec3_len(c->pre[k].p);
    return r > 1e-9 ? r : 1.0;
}

/* The homotopy from the seed's tip pose to the target: stage s of ns moves
 * the target s / ns of the way (position linearly, orientation by slerp),
 * each stage solved from the previous one's answer in continuation mode;
 * the last stage is the real target. S->q holds the seed on entry; on
 * ATTEMPT_SOLVED it holds the solution. */
static int homotopy(search *S, const problem *P, const double *seed)
{
    const ik_chain *c = P->c;
    double R0[9], p0[3];
    ik_chain_fk_mat(c, seed, R0, p0);
    ik_vec3 pa = ik_v3(p0[0], p0[1], p0[2]);
    ik_quat qa = ik_quat_normalize(ik_quat_from_mat3(R0));
    double dp = ik_vec3_len(ik_vec3_sub(P->pt, pa));
    double dr = P->need_rot ? ik_vec3_len(ik_quat_to_rotvec(ik_quat_mul(P->qt, ik_quat_conj(qa))))
                            : 0.0;
    const double reach = chain_reach(c);
    if (dp > CONT_REACH * reach || dr > CONT_TURN)
        return ATTEMPT_STALLED; /* too far to follow: the restarts' job */
    double want = fmax(dp / (0.02 * reach), dr / 0.1);
    size_t ns = want >= (double)CONT_MAX_STAGES ? CONT_MAX_STAGES : (size_t)ceil(want);
    if (ns < 2)
        ns = 2;
    memcpy(S->q, seed, P->n * sizeof *S->q);
    problem stage = *P;
    for (int r = 0; r < 6; r++)
        stage.tol[r] = 100.0 * P->tol[r]; /* intermediate stages only guide */
    for (size_t st = 1; st < ns; st++) {
        double u = (double)st / (double)ns;
        stage.pt = ik_vec3_lerp(pa, P->pt, u);
        if (P->need_rot) {
            stage.qt = ik_quat_normalize(ik_quat_slerp(qa, P->qt, u));
            ik_quat_to_mat3(stage.qt, stage.Rt);
        }
        S->P = &stage;
        S->staging = true;
        size_t keep = S->max_iters;
        S->max_iters = CONT_STAGE_ITERS;
        int a = attempt(S);
        S->max_iters = keep;
        S->staging = false;
        S->P = P;
        if (a == ATTEMPT_BUDGET)
            return a;
        /* a stage that stalls still leaves S->q nearer the path: go on */
    }
    return attempt(S);
}

/* ---- choosing among solutions ---------------------------------------------------- */

/* The solution kept so far: the nearest to the seed among those within the
 * caller's step limits, or, while there is none, the nearest of all. */
typedef struct pick {
    size_t solutions;
    double d2;     /* squared distance to the seed */
    double step;   /* its largest joint step */
    double step_ang, step_lin; /* the same over angular / prismatic joints */
    bool allowed;  /* within max_step / max_step_lin */
    bool from_cont;
} pick;

/* A solution in S->q: re-expressed nearest the seed's turns, then kept in
 * S->near if it beats the one there. Returns true when every joint is
 * within opts.nearest_local of the seed (a stream's step: nothing nearer
 * is worth searching for). */
static bool record(search *S, pick *K, const ik_numeric_opts *o, bool from_cont)
{
    const ik_chain *c = S->P->c;
    turns_near(c, S->q, S->seed);
    double d2 = joint_dist2(c, S->q, S->seed);
    bool allowed;
    double ang, lin;
    double step = largest_step(c, S->q, S->seed, o, &allowed, &ang, &lin);
    K->solutions++;
    if (K->solutions == 1 || (allowed && !K->allowed) || (allowed == K->allowed && d2 < K->d2)) {
        K->d2 = d2;
        K->step = step;
        K->step_ang = ang;
        K->step_lin = lin;
        K->allowed = allowed;
        K->from_cont = from_cont;
        memcpy(S->near, S->q, S->P->n * sizeof *S->q);
    }
    return within(c, S->q, S->seed, o->nearest_local);
}

/* ---- why a search failed ------------------------------------------------- */

/* True when the best pose q has a joint on a limit (a wall: not a revolute
 * joint whose range spans a full turn, not a continuous one) that the
 * damped least-squares step towards the target, taken without limits,
 * would push further out, by a fair share (1e-3) of the step's largest
 * motion: as far as the solver can tell, the target lies beyond the joint
 * limits' workspace (ik_reason.h, IK_REASON_LIMITS). J: 6 x dof scratch,
 * dq: dof, locked: dof. */
static bool against_limits(const problem *P, const double *q, double *J, double *dq,
                           bool *locked)
{
    const ik_chain *c = P->c;
    double e[6], N[6][6];
    for (size_t k = 0; k < P->n; k++)
        locked[k] = false;
    evaluate(P, q, J, e);
    normal_matrix(P, J, N);
    if (!dls_solve(P, J, N, e, LAMBDA_INIT, locked, dq))
        return false;
    double big = 0.0;
    for (size_t k = 0; k < P->n; k++)
        big = fmax(big, fabs(dq[k]));
    if (!(big > 0.0))
        return false;
    for (size_t k = 0; k < P->n; k++) {
        if (c->type[k] == IK_JOINT_CONTINUOUS ||
            (c->type[k] == IK_JOINT_REVOLUTE && c->upper[k] - c->lower[k] >= 2.0 * IK_PI))
            continue;
        if (fabs(dq[k]) < 1e-3 * big)
            continue;
        double eps = 1e-9 * fmax(1.0, c->upper[k] - c->lower[k]);
        if ((q[k] <= c->lower[k] + eps && dq[k] < 0.0) ||
            (q[k] >= c->upper[k] - eps && dq[k] > 0.0))
            return true;
    }
    return false;
}

/* ---- collisions (opts.collide) ------------------------------------------ */

/* The task for ik_avoid.h: the target's active rows, weighted. */
static bool avoid_eval(void *ctx, const double *q, double *Jw, double *ew, size_t *m)
{
    search *S = ctx;
    const problem *P = S->P;
    const size_t n = P->n;
    double e[6];
    S->iterations++;
    evaluate(P, q, S->Jt, e);
    for (size_t a = 0; a < P->m; a++) {
        const double *Ja = S->Jt + (size_t)P->row[a] * n;
        for (size_t k = 0; k < n; k++)
            Jw[a * n + k] = P->sw[a] * Ja[k];
        ew[a] = P->sw[a] * e[P->row[a]];
    }
    *m = P->m;
    return converged(P, e);
}

static bool avoid_budget(void *ctx)
{
    return budget_left(ctx);
}

/* An attempt's outcome a, with its solution in S->q when solved, passed
 * through the collision check: clear (after a repair if need be), still
 * ATTEMPT_SOLVED; not clear, kept aside and ATTEMPT_STALLED. */
static int clear_of_collisions(search *S, int a)
{
    if (a != ATTEMPT_SOLVED || !S->chk)
        return a;
    const ik_chain *c = S->P->c;
    ik__avoid_task t = {c->dof, c->type, c->lower, c->upper, avoid_eval, avoid_budget, S};
    ik_collide_pair p;
    if (ik__avoid_repair(&t, S->chk, S->q, &p))
        return ATTEMPT_SOLVED;
    if (S->hits++ == 0 || p.distance > S->hit.distance) {
        S->hit = p;
        memcpy(S->hit_q, S->q, c->dof * sizeof *S->q);
    }
    return ATTEMPT_STALLED;
}

/* True when links the target fixes are nearer than the margin to an
 * obstacle (ik_reason.h, IN_COLLISION: certain): those rigid with the base,
 * and for a full pose those rigid with the tip (allowing for the
 * tolerance); *pc the pair. */
static bool fixed_in_collision(const search *S, const ik_target *t, ik_collide_pair *pc)
{
    const ik_collide_check *k = S->chk;
    const problem *P = S->P;
    if (ik_collide_rigid_distance(k->model, &k->scene, 0, ik_xform_identity(), pc) < k->margin)
        return true;
    if (t->mode != IK_TARGET_FULL_POSE)
        return false;
    ik_xform tip = {P->pt, P->qt};
    double slack = 2.0 * (S->o->tol_pos + S->o->tol_rot * chain_reach(P->c));
    return ik_collide_rigid_distance(k->model, &k->scene, ik_collide_tip_body(k->model, 0), tip,
                                     pc) < k->margin - slack;
}

/* res->closest for the answer q (opts.collide), or none. */
static void measure(const ik_numeric_opts *o, const double *q, ik_numeric_result *res)
{
    if (!o->collide) {
        memset(&res->closest, 0, sizeof res->closest);
        res->closest.link = res->closest.other_link = res->closest.obstacle = -1;
        res->closest.distance = INFINITY;
        return;
    }
    const ik_collide_check *k = o->collide;
    ik_collide_distance(k->model, &k->scene, q, k->ws, k->ws_size, &res->closest);
}

/* ---- the public entry points ---------------------------------------------- */

#define WS_ALIGN 64
/* The workspace, in doubles per joint: J and Jt (6 each), the vectors q,
 * qt, dq, best, near, seed and toward, the scratch (8, plus WS_FIXED
 * doubles), then one flag per joint (locked). */
#define WS_PER_JOINT (2 * 6 + 7 + 8)
#define WS_FIXED 6

size_t ik_numeric_workspace_size(const ik_chain *c)
{
    size_t n = c && c->dof > 0 ? c->dof : 1;
    const size_t per = WS_PER_JOINT * sizeof(double) + sizeof(bool);
    if (n > (SIZE_MAX - WS_ALIGN - WS_FIXED * sizeof(double)) / per)
        return SIZE_MAX;
    return n * per + WS_FIXED * sizeof(double) + WS_ALIGN;
}

static bool finite_pose(const ik_xform *x, bool need_q)
{
    if (!ik_vec3_isfinite(x->p))
        return false;
    if (!need_q)
        return true;
    return ik_quat_isfinite(x->q) && ik_quat_dot(x->q, x->q) > 1e-24;
}

static int check_input(const ik_chain *c, const ik_target *t, const double *seed,
                       const ik_numeric_opts *o)
{
    if (!c || !t || c->dof == 0)
        return IK_EINVAL;
    if (t->mode != IK_TARGET_FULL_POSE && t->mode != IK_TARGET_POSITION &&
        t->mode != IK_TARGET_WEIGHTED)
        return IK_EINVAL;
    bool need_q = t->mode == IK_TARGET_FULL_POSE;
    if (t->mode == IK_TARGET_WEIGHTED) {
        bool any = false;
        for (int r = 0; r < 6; r++) {
            if (!isfinite(t->weight[r]) || t->weight[r] < 0.0)
                return IK_EINVAL;
            any |= t->weight[r] > 0.0;
            if (r >= 3 && t->weight[r] > 0.0)
                need_q = true;
        }
        if (!any)
            return IK_EINVAL;
    }
    if (!finite_pose(&t->pose, need_q))
        return IK_EINVAL;
    if (seed)
        for (size_t k = 0; k < c->dof; k++)
            if (!isfinite(seed[k]))
                return IK_EINVAL;
    if (!(o->tol_pos > 0.0) || !isfinite(o->tol_pos) || !(o->tol_rot > 0.0) ||
        !isfinite(o->tol_rot) || !(o->timeout_s >= 0.0) || !isfinite(o->timeout_s))
        return IK_EINVAL;
    if (o->timeout_s == 0.0 && o->max_iterations == 0 && o->max_restarts == SIZE_MAX)
        return IK_EINVAL;
    if (o->search != IK_SEARCH_FIRST_FOUND && o->search != IK_SEARCH_NEAREST_TO_SEED)
        return IK_EINVAL;
    if (!(o->nearest_local >= 0.0) || !isfinite(o->nearest_local))
        return IK_EINVAL;
    if (!(o->max_step >= 0.0) || !isfinite(o->max_step) || !(o->max_step_lin >= 0.0) ||
        !isfinite(o->max_step_lin))
        return IK_EINVAL;
    if (o->collide)
        return ik_collide_check_valid(o->collide, c->dof);
    return IK_OK;
}

static void setup_problem(problem *P, const ik_chain *c, const ik_target *t,
                          const ik_numeric_opts *o)
{
    memset(P, 0, sizeof *P);
    P->c = c;
    P->n = c->dof;
    P->pt = t->pose.p;
    P->qt = ik_quat_identity();
    double w[6] = {1, 1, 1, 1, 1, 1};
    if (t->mode == IK_TARGET_POSITION)
        w[3] = w[4] = w[5] = 0.0;
    else if (t->mode == IK_TARGET_WEIGHTED)
        memcpy(w, t->weight, sizeof w);
    for (int r = 0; r < 6; r++) {
        P->tol[r] = r < 3 ? o->tol_pos : o->tol_rot;
        if (w[r] > 0.0) {
            P->row[P->m] = r;
            P->sw[P->m] = sqrt(w[r]);
            P->m++;
            P->check[r] = true;
            if (r >= 3)
                P->need_rot = true;
        }
    }
    if (P->need_rot)
        P->qt = ik_quat_normalize(t->pose.q);
    ik_quat_to_mat3(P->qt, P->Rt);
}

static void fill_result(const problem *P, const double *q, double *J, int status,
                        const search *S, ik_numeric_result *res)
{
    double e[6];
    evaluate(P, q, J, e);
    memset(res, 0, sizeof *res);
    res->status = status;
    res->pos_err = ik_vec3_len(ik_v3(e[0], e[1], e[2])); /* no overflow for huge errors */
    res->rot_err = sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]);
    for (int r = 0; r < 6; r++) {
        if (!P->check[r])
            continue;
        double a = fabs(e[r]);
        if (r < 3 && a > res->pos_err_max)
            res->pos_err_max = a;
        if (r >= 3 && a > res->rot_err_max)
            res->rot_err_max = a;
    }
    res->iterations = S->iterations;
    res->elapsed_s = ik_budget_wall_s(&S->budget);
    res->cpu_s = ik_budget_cpu_s(&S->budget);
}

int ik_numeric_solve(const ik_chain *c, const ik_target *t, const double *seed,
                     const ik_numeric_opts *opts, void *ws, size_t ws_size, double *q_out,
                     ik_numeric_result *res)
{
    ik_numeric_opts defaults = ik_numeric_opts_default();
    const ik_numeric_opts *o = opts ? opts : &defaults;
    ik_budget budget;
    ik_budget_start(&budget, o->clock, o->timeout_s);
    int rc = (!ws || !q_out) ? IK_EINVAL : check_input(c, t, seed, o);
    if (rc == IK_OK && ws_size < ik_numeric_workspace_size(c))
        rc = IK_ENOSPC;
    if (rc != IK_OK) {
        if (res) {
            memset(res, 0, sizeof *res);
            res->status = rc;
        }
        return rc;
    }

    problem P;
    setup_problem(&P, c, t, o);
    const size_t n = c->dof;
    double *base = (double *)(((uintptr_t)ws + (WS_ALIGN - 1)) & ~(uintptr_t)(WS_ALIGN - 1));
    search S;
    memset(&S, 0, sizeof S);
    S.P = &P;
    S.o = o;
    S.J = base;
    S.Jt = base + 6 * n;
    S.q = base + 12 * n;
    S.qt = S.q + n;
    S.dq = S.qt + n;
    S.best = S.dq + n;
    S.near = S.best + n;
    S.seed = S.near + n;
    S.toward = S.seed + n;
    S.scratch = S.toward + n;
    S.locked = (bool *)(void *)(S.scratch + 8 * n + WS_FIXED);
    S.best_cost = INFINITY;
    S.budget = budget;
    if (o->collide && o->collide->avoid) {
        S.chk = o->collide;
        S.hit_q = ik__avoid_keep(S.chk->model, S.chk->ws);
    }

    if (seed)
        memcpy(S.seed, seed, n * sizeof *seed);
    else
        ik_chain_mid(c, S.seed);
    for (size_t k = 0; k < n; k++)
        if (c->type[k] == IK_JOINT_CONTINUOUS && fabs(S.seed[k]) > IK_TURN_SEED_MAX)
            S.seed[k] = ik_wrap_angle(S.seed[k]);
    ik_chain_clamp(c, S.seed, false); /* continuous seeds keep their turn */
    memcpy(S.q, S.seed, n * sizeof *S.q);
    memcpy(S.best, S.seed, n * sizeof *S.q);

    /* A target (or a chain) so far out that the distance between the seed's
     * tip and the target is not representable cannot be measured, let alone
     * solved: refuse it before anything is written. The seed's pose is the
     * fallback answer, so every returned pose then has a finite error. */
    {
        double R[9], p[3];
        ik_chain_fk_mat(c, S.q, R, p);
        ik_vec3 d = ik_v3(P.pt.x - p[0], P.pt.y - p[1], P.pt.z - p[2]);
        if (!ik_vec3_isfinite(d) || !isfinite(ik_vec3_len(d))) {
            if (res) {
                memset(res, 0, sizeof *res);
                res->status = IK_EINVAL;
            }
            return IK_EINVAL;
        }
    }

    /* A target beyond the chain's maximum reach (ik_reason.h) cannot be
     * reached by any joint values: say so at once instead of spending the
     * budget on restarts. One plain attempt from the seed still gives the
     * answer a best pose (stretched towards the target) and its error.
     * When that pose meets the target within the tolerance after all (a
     * target beyond the reach by less than it), the target is solved as
     * any other. */
    /* Likewise a target that puts links it fixes into an obstacle. */
    ik_collide_pair fixed;
    int at_once = 0, why = IK_REASON_NONE;
    if (P.check[0] && P.check[1] && P.check[2] && ik_chain_beyond_reach(c, P.pt)) {
        continuation_mode(&S, false);
        if (attempt(&S) == ATTEMPT_SOLVED)
            memcpy(S.q, S.seed, n * sizeof *S.q);
        else
            at_once = IK_EUNREACHABLE, why = IK_REASON_OUT_OF_REACH;
    } else if (S.chk && fixed_in_collision(&S, t, &fixed)) {
        at_once = IK_ECOLLISION, why = IK_REASON_IN_COLLISION;
        continuation_mode(&S, false);
        attempt(&S);
    }
    if (at_once) {
        turns_near(c, S.best, S.seed);
        bool ok;
        double ang, lin, big = largest_step(c, S.best, S.seed, o, &ok, &ang, &lin);
        if (!ok) { /* past the caller's step: refused, no motion (below) */
            at_once = IK_ESTEP;
            why = why == IK_REASON_IN_COLLISION ? IK_REASON_NONE : why;
        }
        memmove(q_out, ok ? S.best : S.seed, n * sizeof *q_out);
        if (res) {
            fill_result(&P, q_out, S.Jt, at_once, &S, res);
            res->reason = why;
            res->max_step = big;
            res->step_ang = ang;
            res->step_lin = lin;
            measure(o, q_out, res);
            if (at_once == IK_ECOLLISION)
                res->closest = fixed; /* the pair that decided it */
        }
        return at_once;
    }

    const bool cont = seed && o->search == IK_SEARCH_NEAREST_TO_SEED;
    pick K;
    memset(&K, 0, sizeof K);
    K.d2 = INFINITY;
    ik_rng r = {o->rng_seed};
    size_t restarts = 0, extra_left = 0;
    bool stop = false;

    /* the seed's own attempt: a continuation when cont */
    continuation_mode(&S, cont);
    int a = clear_of_collisions(&S, attempt(&S));
    if (a == ATTEMPT_SOLVED) {
        bool local = record(&S, &K, o, cont);
        if (o->search == IK_SEARCH_FIRST_FOUND || local)
            stop = true;
        else
            extra_left = o->nearest_extra_restarts;
        if (extra_left == 0)
            stop = true;
    } else if (a == ATTEMPT_BUDGET) {
        stop = true;
    }
    /* not there: the homotopy from the seed's pose */
    bool direct_solved = a == ATTEMPT_SOLVED;
    if (!stop && cont && !direct_solved) {
        a = clear_of_collisions(&S, homotopy(&S, &P, S.seed));
        if (a == ATTEMPT_SOLVED) {
            bool local = record(&S, &K, o, true);
            if (local)
                stop = true;
            else if (K.solutions == 1)
                extra_left = o->nearest_extra_restarts;
            if (extra_left == 0)
                stop = true;
        } else if (a == ATTEMPT_BUDGET) {
            stop = true;
        }
    }
    /* random restarts, plain; after a continuation, the seed's plain
     * attempt comes first (the one a first-found search makes), so that the
     * nearest search never ends farther than the first found */
    continuation_mode(&S, false);
    bool plain_seed = cont && !stop;
    while (!stop) {
        if (plain_seed) {
            plain_seed = false;
            memcpy(S.q, S.seed, n * sizeof *S.q);
            S.walk = true;
            a = clear_of_collisions(&S, attempt(&S));
            S.walk = false;
            if (a == ATTEMPT_SOLVED) {
                record(&S, &K, o, false);
                if (K.solutions == 1)
                    extra_left = o->nearest_extra_restarts;
                if (extra_left == 0)
                    break;
            } else if (a == ATTEMPT_BUDGET) {
                break;
            }
            continue;
        }
        if (restarts >= o->max_restarts || !budget_left(&S))
            break;
        restarts++;
        random_config(c, &r, S.q);
        a = clear_of_collisions(&S, attempt(&S));
        if (a == ATTEMPT_SOLVED) {
            record(&S, &K, o, false);
            if (o->search == IK_SEARCH_FIRST_FOUND)
                break;
            if (K.solutions == 1)
                extra_left = o->nearest_extra_restarts;
            else if (extra_left > 0)
                extra_left--;
            if (extra_left == 0)
                break;
        } else if (a == ATTEMPT_BUDGET) {
            break;
        } else if (K.solutions > 0 && extra_left > 0 && --extra_left == 0) {
            break;
        }
    }

    int status;
    const double *q_final;
    if (K.solutions > 0 && K.allowed) {
        status = IK_OK;
        q_final = S.near;
    } else if (K.solutions > 0) {
        status = IK_ESTEP; /* refused: no motion */
        q_final = S.seed;
    } else {
        /* a failure: the clearest pose in collision, or the best one */
        double *q_fail = S.hits > 0 ? S.hit_q : S.best;
        status = S.hits > 0 ? IK_ECOLLISION : S.timed_out ? IK_ETIMEDOUT : IK_ENOTCONV;
        turns_near(c, q_fail, S.seed);
        q_final = q_fail;
        if (S.hits == 0)
            why = against_limits(&P, S.best, S.J, S.dq, S.locked) ? IK_REASON_LIMITS
                                                                  : IK_REASON_BUDGET;
        bool allowed;
        K.step = largest_step(c, q_fail, S.seed, o, &allowed, &K.step_ang, &K.step_lin);
        if (!allowed) { /* past the caller's step: refused, no motion, the reason kept (as the
                         * closed form; in collision: none) */
            status = IK_ESTEP;
            q_final = S.seed;
        }
    }
    memmove(q_out, q_final, n * sizeof *q_out);
    if (res) {
        fill_result(&P, q_out, S.Jt, status, &S, res);
        res->restarts = restarts;
        res->solutions = K.solutions;
        if (status == IK_ESTEP) {
            res->max_step = K.step;
            res->step_ang = K.step_ang;
            res->step_lin = K.step_lin;
        } else {
            bool ok;
            res->max_step =
                largest_step(c, q_out, S.seed, o, &ok, &res->step_ang, &res->step_lin);
        }
        res->continued = status == IK_OK && K.from_cont;
        res->reason = status == IK_ECOLLISION ? IK_REASON_IN_COLLISION : why;
        measure(o, q_out, res);
    }
    return status;
}
