/*
 * ik_chain.h: general serial chains with URDF joint semantics, their forward
 * kinematics and analytic Jacobian.
 *
 * A chain is described as the list of joints from the base link to the tip
 * link, in order, exactly as URDF writes them: each joint has an origin (the
 * fixed transform from its parent link's frame to the joint frame at zero
 * motion, URDF <origin xyz rpy>), an axis in the joint frame, a type and
 * limits. ik_chain_init() compiles that description into an ik_chain: fixed
 * joints are merged into the fixed transform in front of the next movable
 * joint (or into the tip transform), axes are normalised, limits checked.
 *
 * Joint motion (URDF): revolute and continuous joints rotate by q radians
 * about the axis; prismatic joints translate by q metres along it. The link
 * frame after joint i is  T_parent * origin_i * motion_i(q_i).
 *
 * The compiled chain has fixed capacity (IK_MAX_DOF movable joints, built
 * from at most IK_MAX_JOINTS described joints), so it needs no allocation and
 * can be copied, shared read-only between threads, and stored by value.
 *
 * Jacobian layout: 6 rows x dof columns, row-major (J[r * dof + c]); rows
 * 0-2 are the linear velocity of the tip origin, rows 3-5 the angular
 * velocity, both expressed in the chain's base frame.
 *
 * Not here: any solver (ik_numeric.h), reading URDF text (proto/proto_urdf.h),
 * joint names (the wire format keeps them).
 */
#ifndef IK_CHAIN_H
#define IK_CHAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "ik_math.h"

#define IK_MAX_DOF    32
#define IK_MAX_JOINTS 128

typedef enum ik_joint_type {
    IK_JOINT_FIXED = 0,
    IK_JOINT_REVOLUTE,
    IK_JOINT_CONTINUOUS,
    IK_JOINT_PRISMATIC
} ik_joint_type;

/* One joint as URDF describes it. */
typedef struct ik_joint {
    ik_joint_type type;
    ik_xform origin; /* parent link frame -> joint frame at zero motion */
    ik_vec3 axis;    /* in the joint frame; need not be unit; ignored if fixed */
    double lower;    /* rad (revolute) or m (prismatic); ignored if continuous/fixed */
    double upper;
} ik_joint;

/* A compiled chain: movable joints only, fixed transforms merged. */
typedef struct ik_chain {
    size_t dof;                        /* number of movable joints, 1..IK_MAX_DOF */
    ik_joint_type type[IK_MAX_DOF];    /* REVOLUTE, CONTINUOUS or PRISMATIC */
    ik_xform pre[IK_MAX_DOF];          /* fixed transform in front of movable joint i */
    ik_vec3 axis[IK_MAX_DOF];          /* unit axis in joint i's frame */
    double lower[IK_MAX_DOF];          /* continuous: -INFINITY */
    double upper[IK_MAX_DOF];          /* continuous: +INFINITY */
    size_t source_index[IK_MAX_DOF];   /* index of joint i in the described list */
    ik_xform tip;                      /* fixed transform after the last movable joint */
    /* Derived by ik_chain_init() for fast evaluation, read-only: the same
     * chain re-expressed so that every joint moves along or about its own
     * local z axis (rotation matrix, row-major, and translation of the
     * fixed transform in front of joint i; index dof is the tip). Change
     * the fields above only through ik_chain_init(). */
    double fast_rot[IK_MAX_DOF + 1][9];
    double fast_pos[IK_MAX_DOF + 1][3];
} ik_chain;

/* Compiles n described joints into *out. Returns IK_OK, or IK_EINVAL when a
 * number is non-finite, an origin quaternion is not unit length (within
 * 1e-6), a movable joint's axis is zero, lower > upper on a revolute or
 * prismatic joint, there is no movable joint, or n > IK_MAX_JOINTS / the
 * movable joints exceed IK_MAX_DOF. On error *out is unchanged. */
int ik_chain_init(ik_chain *out, const ik_joint *joints, size_t n);

/* Forward kinematics: the tip frame in the base frame for joint values q
 * (dof entries). q is not clamped to the limits. */
ik_xform ik_chain_fk(const ik_chain *c, const double *q);

/* Frames of every movable joint (after its motion) and the tip:
 * frames[0..dof-1] are the joint frames, frames[dof] the tip. */
void ik_chain_frames(const ik_chain *c, const double *q, ik_xform *frames);

/* Geometric Jacobian at q (6 x dof, layout above) into J; if tip is not
 * NULL, the tip frame is stored there too (it is computed on the way). */
void ik_chain_jacobian(const ik_chain *c, const double *q, double *J, ik_xform *tip);

/* The same two evaluations with the tip as a row-major rotation matrix R
 * and a position p (base frame), which saves the conversion to a quaternion
 * in inner loops (the numeric solver uses these). */
void ik_chain_fk_mat(const ik_chain *c, const double *q, double R[9], double p[3]);
void ik_chain_jacobian_mat(const ik_chain *c, const double *q, double *J, double R[9],
                           double p[3]);

/* True when every q[i] lies within [lower - eps, upper + eps]. */
bool ik_chain_within_limits(const ik_chain *c, const double *q, double eps);

/* The mid-limit pose (continuous joints: 0) into q. */
void ik_chain_mid(const ik_chain *c, double *q);

/* Turns: a revolute or continuous joint reaches the same pose at v and at
 * v + 2 pi k. ik_chain_turn_near() returns the equivalent of v that lies
 * inside joint k's limits and is nearest ref (itself inside the limits):
 * continuous joints give ref + (v - ref) wrapped into (-pi, pi]; revolute
 * joints the in-range equivalent nearest ref (for a range shorter than a
 * full turn that is the only one); v itself when no equivalent is inside
 * the limits (or, by rounding, the one found lands a hair outside), and for
 * prismatic joints. Every solver that answers "nearest the seed" measures
 * with it (ik_numeric.c, ik_closed.c). */
double ik_chain_turn_near(const ik_chain *c, size_t k, double v, double ref);

/* Clamps q into the limits in place (continuous joints are wrapped into
 * (-pi, pi] only if wrap is true). */
void ik_chain_clamp(const ik_chain *c, double *q, bool wrap);

#endif /* IK_CHAIN_H */
