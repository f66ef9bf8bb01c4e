/*
 * ik_closed.h: closed-form inverse kinematics for the two families of
 * six-joint industrial arms that have one, found from the chain alone (the
 * joint origins, axes and types of ik_chain.h, i.e. the URDF), with every
 * solution.
 *
 * FAMILIES (the geometry the detection looks for, in the chain's zero pose):
 *   IK_CLOSED_OPW  axes 2 and 3 parallel, axis 1 not parallel to them,
 *                  axes 4, 5 and 6 through one point (a spherical wrist),
 *                  5 parallel to neither 4 nor 6: the "ortho-parallel basis
 *                  with a spherical wrist" of Brandstoetter, Angerer and
 *                  Hofbaur (ISR 2014): ABB IRB, KUKA KR, Fanuc, Staeubli.
 *                  The offsets a1, a2, b, c1..c4 of the paper, the signs of
 *                  the axes and the joint zero offsets are never asked for:
 *                  they are whatever the chain's axes and origins say.
 *   IK_CLOSED_UR   axes 2, 3 and 4 parallel, axis 1 not parallel to them,
 *                  axes 5 and 6 meeting in a point, 5 parallel to neither
 *                  axis 2 nor axis 6: the Universal Robots arms (Hawkins,
 *                  "Analytic Inverse Kinematics for the Universal Robots
 *                  UR-5/UR-10 Arms", 2013).
 * The math is written in ik_closed.c from the geometry (rotations about
 * the chain's own axes, product-of-exponentials form), not from either
 * paper's parameter tables, so one code path covers every sign convention.
 *
 * PROOF BEFORE USE: ik_closed_init() does not trust the geometric test
 * alone. It draws IK_CLOSED_PROOF_SAMPLES configurations inside the limits
 * (deterministic generator), computes each pose by ik_chain_fk(), solves it
 * in closed form and requires (a) every solution returned to reproduce the
 * pose within IK_CLOSED_PROOF_TOL (metres relative to the chain's size, and
 * in every element of the rotation matrix), and (b) the drawn configuration
 * to be among the solutions (up to whole turns). A detection that is wrong
 * is wrong for every pose (a sign, an offset), so a few samples settle it;
 * they cost about 50 microseconds, paid once per chain (proto/ makes it on a
 * chain's first closed-form use and keeps it). Every answer is checked by
 * forward kinematics again when it is solved. Otherwise the chain gets IK_CLOSED_NONE and the reason
 * IK_CLOSED_WHY_PROOF; callers then use the numeric solver (ik_numeric.h).
 *
 * SOLUTIONS: up to 8 branches (shoulder left/right x elbow up/down x wrist
 * flip); for a joint whose range spans more than a full turn, every 2 pi k
 * equivalent inside the limits is a solution of its own (at most
 * IK_CLOSED_TURNS per joint: the ones nearest the seed). Each branch is
 * checked by forward kinematics against the target with the caller's
 * tolerance, and each joint against its limits. ik_closed_solve() answers
 * with the solution nearest the seed (sum of squared joint differences,
 * turns chosen by ik_chain_turn_near(), as the numeric solver measures),
 * ik_closed_solve_all() lists them all, nearest first.
 *
 * DEGENERATE POSES never give NaN, and have a documented answer:
 *   - shoulder singularity (the wrist centre on axis 1, OPW; the point of
 *     axes 5 and 6 on axis 1's line, UR): joint 1 is free; it keeps the
 *     seed's value;
 *   - wrist singularity (axes 4 and 6 aligned, OPW; axes 6 and 2 aligned,
 *     UR): only a sum of two joints is fixed; joint 4 (OPW) or joint 6 (UR)
 *     keeps the seed's value and the other takes the rest. UR: where the
 *     elbow cannot reach the rest with the seed's q6 (joint 6 moves the
 *     origin of axis 4 on a circle), q6 takes the nearest value with which
 *     it can (the elbow then stretched or folded: with the elbow at 0 too,
 *     a double singularity, that is the only kind of solution);
 *   - elbow stretched or folded (boundary of the workspace): the two elbow
 *     branches coincide and are returned once.
 * Without a seed the reference is the mid-limit pose (ik_chain_mid()).
 *
 * FAILURES say why (ik_reason.h): the target farther than the chain's
 * maximum reach (IK_EUNREACHABLE, IK_REASON_OUT_OF_REACH); no joint values
 * reach it, limits aside (IK_EUNREACHABLE, IK_REASON_NO_SOLUTION: too close,
 * or an orientation the wrist cannot take); solutions exist but none inside
 * the limits (IK_ELIMITS, IK_REASON_LIMITS). In all three cases q_out holds
 * the best pose the closed form produced (branches clamped at the workspace
 * boundary and into the limits), and the result its error.
 *
 * NEXT TO A DOUBLE SINGULARITY (elbow stretched, wrist folded: the UR5's
 * upright pose; exactly at one, the wrist singularity above solves it),
 * the joint taken from the seed can leave every branch a
 * little short of the pose; ik_closed_solve() then finishes the best one
 * with the numeric solver (no restarts, at most 64 iterations, no time
 * budget) when it is within 1e-2 of the target (length times the scale,
 * radians), and answers that when it reaches the pose inside the limits.
 *
 * MEMORY: nothing is allocated; an ik_closed is a plain value (copy it,
 * store it next to its chain). THREADS: no globals, no static state; any
 * number of threads may solve with the same ik_closed and chain at once.
 * NO I/O, no clock of its own (the finish above is ik_numeric_solve()'s
 * iterations, unbudgeted). Only full-pose targets (IK_TARGET_FULL_POSE) are solved
 * here; the other modes get IK_EINVAL (use the numeric solver).
 */
#ifndef IK_CLOSED_H
#define IK_CLOSED_H

#include <stdbool.h>
#include <stddef.h>

#include "ik_chain.h"
#include "ik_numeric.h"
#include "ik_reason.h"

#define IK_CLOSED_BRANCHES      8    /* closed-form branches at most */
#define IK_CLOSED_TURNS         3    /* 2 pi k equivalents kept per joint */
#define IK_CLOSED_PROOF_SAMPLES 16   /* random configurations of the proof */
#define IK_CLOSED_PROOF_TOL     1e-9 /* radians; metres times max(1, reach) */

/* The families (one table: enum, short name, description). */
#define IK_CLOSED_KIND_MAP(XX)                                                                     \
    XX(NONE, "none", "no closed form: the numeric solver is used")                                 \
    XX(OPW, "opw", "spherical wrist, axes 2 and 3 parallel (ortho-parallel, ABB/KUKA/Fanuc)")      \
    XX(UR, "ur", "axes 2, 3 and 4 parallel, axes 5 and 6 meeting (Universal Robots)")

typedef enum ik_closed_kind {
#define IK__CLOSED_KIND(name, str, msg) IK_CLOSED_##name,
    IK_CLOSED_KIND_MAP(IK__CLOSED_KIND)
#undef IK__CLOSED_KIND
} ik_closed_kind;

/* Why a chain got no closed form (one table). */
#define IK_CLOSED_WHY_MAP(XX)                                                                      \
    XX(OK, "ok", "a closed form applies")                                                          \
    XX(DOF, "not_six_joints", "the chain does not have exactly six movable joints")                \
    XX(PRISMATIC, "prismatic_joint", "a joint is prismatic")                                       \
    XX(GEOMETRY, "geometry",                                                                       \
       "the axes fit neither family (axes 2-3 parallel with a spherical wrist, or axes 2-4 "       \
       "parallel with axes 5 and 6 meeting)")                                                      \
    XX(PROOF, "fk_proof_failed",                                                                   \
       "the closed form did not reproduce forward kinematics on random configurations")

typedef enum ik_closed_why {
#define IK__CLOSED_WHY(name, str, msg) IK_CLOSED_WHY_##name,
    IK_CLOSED_WHY_MAP(IK__CLOSED_WHY)
#undef IK__CLOSED_WHY
} ik_closed_why;

/* Short names and sentences of the two tables; static, never NULL
 * ("unknown" for a value not in the table). */
const char *ik_closed_kind_name(int kind);
const char *ik_closed_kind_message(int kind);
const char *ik_closed_why_name(int why);
const char *ik_closed_why_message(int why);

/* The detected geometry (zero pose, base frame). Read-only after
 * ik_closed_init(); only kind and why are meant for callers. */
typedef struct ik_closed {
    ik_closed_kind kind;
    ik_closed_why why;
    ik_vec3 w[6];     /* unit axes */
    ik_vec3 r[6];     /* a point on each axis (the joint origin) */
    ik_vec3 c;        /* wrist centre (OPW) or the point of axes 5 and 6 (UR) */
    ik_vec3 c_tip;    /* the same point in the tip frame */
    double RM[9];     /* tip rotation at the zero pose (row-major) */
    ik_vec3 m6, mx6;  /* RM^T w[5] and RM^T x6 */
    double sgn[6];    /* +1 or -1: axis i along or against axis 2 (i = 2, 3,
                         and 4 for UR); 1 elsewhere */
    ik_vec3 x2;       /* a unit vector perpendicular to axis 2 */
    ik_vec3 x6;       /* a unit vector perpendicular to axis 6 */
    double reach;     /* the chain's maximum reach (ik_reason.h) */
    double scale;     /* max(1, reach): length scale of the tolerances */
    bool flip;        /* OPW with axis 5 across axes 4 and 6, and 4 and 6
                         on one line at zero: the second wrist solution is
                         (q4 + pi, -q5, q6 + pi), no trigonometry needed */
} ik_closed;

/* Detects the family of chain c and proves it (PROOF BEFORE USE above).
 * Always fills *out (kind NONE with a why when no closed form applies) and
 * returns IK_OK; IK_EINVAL only for NULL pointers (then *out is unchanged).
 * Costs IK_CLOSED_PROOF_SAMPLES closed-form solves and forward kinematics:
 * call it once per chain (when the chain is compiled or registered). */
int ik_closed_init(ik_closed *out, const ik_chain *c);

typedef struct ik_closed_result {
    int status;          /* the return value */
    int reason;          /* ik_reason.h: IK_REASON_NONE on IK_OK */
    double pos_err;      /* |e_pos| of q_out (metres) */
    double rot_err;      /* |e_rot| of q_out (radians) */
    double pos_err_max;  /* max |component| of e_pos */
    double rot_err_max;  /* max |component| of e_rot */
    size_t branches;     /* branches that reach the target, limits aside (0..8) */
    size_t solutions;    /* solutions inside the limits, whole turns included */
    double max_step;     /* largest |q_out[k] - ref[k]| (turn-aware) */
} ik_closed_result;

/* Solves full-pose target t in closed form: q_out (6 values) gets the
 * solution nearest seed (NULL: the mid-limit pose; a seed outside the limits
 * is clamped into them first). opts: tol_pos, tol_rot and collide are read
 * (NULL means the numeric defaults, 1e-5, no collisions). res may be NULL.
 * With opts->collide avoiding (ik_collide.h), the answer is the nearest
 * solution whose distance is at least the check's margin: every branch is
 * tried (whole turns move no link, so the nearest turn of each stands for
 * them all), which makes a miss a proof for the closed form's solutions.
 * Returns IK_OK; IK_EUNREACHABLE or IK_ELIMITS (FAILURES above, q_out holds
 * the best pose, inside the limits); IK_ECOLLISION when every solution
 * inside the limits is in collision (q_out the clearest of them, reason
 * IK_REASON_IN_COLLISION); IK_EINVAL for NULL pointers, a chain without a
 * closed form (k->kind NONE or a different dof), a mode other than full
 * pose, non-finite target or seed, tolerances <= 0, or a collision check
 * ik_collide_check_valid() refuses (then nothing is written to q_out and
 * res only gets status). q_out may alias seed. */
int ik_closed_solve(const ik_chain *c, const ik_closed *k, const ik_target *t,
                    const double *seed, const ik_numeric_opts *opts, double *q_out,
                    ik_closed_result *res);

/* Every solution of t inside the limits, sorted by distance to seed (nearest
 * first): the first min(cap, res->solutions) go to q_all (6 values each,
 * row after row); returns how many were written (0 with res->status telling
 * why when there are none). The same checks and failures as
 * ik_closed_solve(), collisions aside: every solution is listed, clear or
 * not (opts->collide is only validated); on failure nothing is written to
 * q_all. At most
 * IK_CLOSED_BRANCHES * IK_CLOSED_TURNS^6 solutions exist; cap may be
 * smaller (the nearest are kept). */
size_t ik_closed_solve_all(const ik_chain *c, const ik_closed *k, const ik_target *t,
                           const double *seed, const ik_numeric_opts *opts, double *q_all,
                           size_t cap, ik_closed_result *res);

/* The raw closed form, for tests and the proof: the branches of pose
 * (R row-major, p) with no limits and no tolerance check, each joint wrapped
 * into (-pi, pi], degenerate joints taken from ref (6 values, not NULL).
 * Writes up to IK_CLOSED_BRANCHES rows of 6 into q and sets exact[i] when
 * branch i needed no clamping at the workspace boundary (a clamped branch is
 * the nearest the closed form gets; it does not reach the pose). Returns
 * the number of rows. */
size_t ik_closed_branches(const ik_closed *k, const double R[9], const double p[3],
                          const double *ref, double q[][6], bool *exact);

#endif /* IK_CLOSED_H */
