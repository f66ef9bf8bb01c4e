/*
 * ik_anim.h: what the animation-chain solvers (FABRIK, ik_fabrik.h, and
 * CCD, ik_ccd.h) share: the chain as joint positions, the options, the
 * rotation limits, the result and the workspace.
 *
 * THE CHAIN is n >= 2 joint positions p[0..n-1] in one right-handed frame
 * (any length unit): p[0] is the fixed root, p[n-1] the end effector, and
 * bone i runs from p[i] to p[i+1] (n - 1 bones). Bone lengths are taken from
 * these input positions and kept by the solve (to rounding, about 1e-12
 * relative). Joint i (0 <= i <= n-2) sits at p[i] and turns bone i; the end
 * effector has no joint.
 *
 * THE TARGET is a position for the end effector (no orientation).
 *
 * OUTPUT (caller arrays; the solvers never allocate):
 *   out[0..n-1]      the new joint positions (out[0] == p[0] exactly). out
 *                    may be the same array as the input (solve in place).
 *   rot_world[0..n-2] (optional) for bone i, the minimal rotation (seed 001,
 *                    "GetRotationBetween", ik_quat_between) taking its input
 *                    direction to its new direction, in the world frame.
 *                    This is the swing only: a bone's twist about its own
 *                    axis is not represented by positions and is zero.
 *   rot_local[0..n-2] (optional) the same rotation relative to the parent
 *                    bone's: rot_local[0] = rot_world[0] and
 *                    rot_local[i] = conj(rot_world[i-1]) * rot_world[i], so
 *                    that rot_world[i] = rot_world[i-1] * rot_local[i]
 *                    (what a parent-relative skeleton applies, seed 001
 *                    "applied down the hierarchy").
 *   ik_anim_result   status, the final distance |out[n-1] - target| and the
 *                    number of iterations run.
 *
 * STATUS (ik_status.h):
 *   IK_OK            |out[n-1] - target| <= tolerance.
 *   IK_EUNREACHABLE  the target is farther from the root than the total
 *                    length L (the chain is returned fully extended towards
 *                    it: every bone along (target - root), then made to obey
 *                    the rotation limits, if any, from the root outwards),
 *                    or nearer than the chain can fold (closer than
 *                    2 max(l_i) - L) and not reached: the best pose found.
 *   IK_ENOTCONV      max_iterations ran out with the target in reach (for
 *                    example because rotation limits forbid it); the last
 *                    pose is returned.
 *   IK_EINVAL        invalid input, outputs untouched (see below).
 *   IK_ENOSPC        the workspace is too small, outputs untouched.
 *
 * INVALID INPUT (IK_EINVAL): n < 2; a NULL input, out or result pointer; a
 * non-finite coordinate (joints, target, pole, root_direction, limits); a
 * zero-length bone (shorter than 1e-12 of the total length, coincident
 * joints) or a total length that overflows; max_iterations < 0; tolerance
 * negative or NaN; a negative or NaN max_bend; a hinge with a zero axis or
 * hinge_min > hinge_max or a bound outside [-pi, pi]; a hinge limit given to
 * FABRIK (CCD only).
 * A target that coincides with the root is valid: it is reachable when the
 * chain can fold onto its root (2 max(l_i) <= L) and is solved like any
 * other; no direction is ever computed from a zero vector (a bone whose
 * direction becomes undefined keeps its previous direction), so no NaN
 * leaves the solvers.
 *
 * ROTATION LIMITS (optional, limits[i] for joint i, n - 1 entries):
 *   cone   the bend of joint i, the angle between bone i's direction and
 *          its parent's direction (bone i - 1; for joint 0 the reference
 *          direction root_direction, or, when that is zero, bone 0's input
 *          direction), stays <= max_bend (radians). max_bend >= pi (or
 *          INFINITY) means unlimited. Both solvers.
 *   hinge  (CCD only) joint i turns only about hinge_axis, given in the world
 *          frame of the input pose and carried along by every rotation of
 *          the joints before it (the parent bones). Its hinge angle, the
 *          signed angle about the axis from the parent direction to bone i,
 *          both projected on the plane perpendicular to the axis, stays in
 *          [hinge_min, hinge_max]. A hinge joint whose bone is parallel to
 *          its axis cannot turn; when its parent direction is parallel to
 *          the axis the hinge angle is undefined and the range is not
 *          enforced. A hinge joint ignores max_bend (its range is its limit).
 * After a solve every limit holds (to 1e-9 rad), whatever the status, even
 * when the input pose violated them.
 *
 * POLE (hint) point (optional): interior joints bend towards it. Each
 * interior joint j (1..n-2) is turned about the line through its neighbours
 * p[j-1], p[j+1] until it lies in the half-plane of that line containing the
 * pole (the standard technique; it moves neither neighbour, so the end
 * effector does not move). Both solvers do this once before the first
 * iteration (the pre-bend, then the limits are enforced) and once more at
 * the end, joint by joint, where it breaks no limit. CCD ignores the pole when the
 * chain has a hinge joint (turning a joint off its hinge plane is not
 * allowed). A pole on such a line, or a straight joint, leaves that joint as is.
 *
 * TOLERANCE is an absolute distance in the chain's length unit; 0 selects
 * the default, 1e-4 times the total length L. max_iterations 0 selects
 * IK_ANIM_DEFAULT_ITERATIONS. One iteration is one FABRIK forward + backward
 * pass, or one CCD sweep over every joint from the tip back to the root. The
 * solvers stop as soon as the end effector is within tolerance (0 iterations
 * when it already is).
 *
 * WORKSPACE: ik_anim_workspace_size(n) bytes, aligned as for double (memory
 * from malloc, or an array of double), owned by the caller, reusable between
 * solves, one per concurrent solve.
 *
 * THREAD-SAFETY: no globals, no allocation, no I/O; solves on different
 * workspaces and outputs may run concurrently. Deterministic.
 *
 * Not here: target orientations, sub-bases and multiple end effectors
 * (trees), twist limits, the two-bone closed form (ik_twobone.h).
 */
#ifndef IK_ANIM_H
#define IK_ANIM_H

#include <stdbool.h>
#include <stddef.h>

#include "ik_math.h"

#define IK_ANIM_DEFAULT_ITERATIONS 32
#define IK_ANIM_DEFAULT_TOLERANCE  1e-4 /* relative to the total chain length */

/* Rotation limit of one joint (see "ROTATION LIMITS" above). The zero value
 * {0} is NOT "no limit" (max_bend 0 keeps the joint straight): use
 * ik_anim_limit_none(). */
typedef struct ik_anim_limit {
    double max_bend;    /* radians; >= IK_PI or INFINITY: no cone limit */
    bool hinge;         /* CCD only */
    ik_vec3 hinge_axis; /* world frame at the input pose, need not be unit */
    double hinge_min;   /* radians, in [-pi, pi] */
    double hinge_max;
} ik_anim_limit;

typedef struct ik_anim_options {
    int max_iterations;          /* 0: IK_ANIM_DEFAULT_ITERATIONS */
    double tolerance;            /* absolute distance; 0: 1e-4 * total length */
    const ik_vec3 *pole;         /* pole (hint) point, or NULL */
    ik_vec3 root_direction;      /* reference for joint 0's limit; zero: bone 0's input direction */
    const ik_anim_limit *limits; /* n - 1 entries, or NULL for none */
} ik_anim_options;

typedef struct ik_anim_result {
    int status;     /* as returned */
    double error;   /* |out[n-1] - target|; 0 on IK_EINVAL / IK_ENOSPC */
    int iterations; /* iterations run */
} ik_anim_result;

/* Defaults: no pole, no limits, default iterations and tolerance. */
void ik_anim_options_default(ik_anim_options *o);

/* A limit that limits nothing. */
ik_anim_limit ik_anim_limit_none(void);
/* A cone limit of max_bend radians. */
ik_anim_limit ik_anim_limit_cone(double max_bend);
/* A hinge about axis (world, input pose) with the angle in [lo, hi]. */
ik_anim_limit ik_anim_limit_hinge(ik_vec3 axis, double lo, double hi);

/* Bytes of workspace a solve of an n-joint chain needs (0 for n < 2;
 * SIZE_MAX when n is absurdly large). */
size_t ik_anim_workspace_size(size_t n);

/* The bend of joint i of the chain p (n joints) as the limits measure it:
 * the angle in [0, pi] between bone i and its parent direction (for i == 0:
 * root_dir, which must be a non-zero direction). For tests and clients
 * checking a pose; 0 for a degenerate bone. */
double ik_anim_bend(const ik_vec3 *p, size_t n, size_t i, ik_vec3 root_dir);

#endif /* IK_ANIM_H */
