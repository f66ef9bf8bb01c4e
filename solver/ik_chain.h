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
 * MEMORY: a chain has no compiled capacity: any number of joints (the
 * daemon bounds them per request, proto/README.md "Limits"). Its per-joint
 * arrays live in STORAGE the caller gives to ik_chain_init(), sized up
 * front by ik_chain_storage_size() (any alignment; aligned inside), and the
 * ik_chain itself is a small view of them: copying an ik_chain by value
 * copies the view, both copies reading the same storage, which must outlive
 * them and must not change while any thread reads them (nothing in the
 * solver writes a chain after ik_chain_init). One allocation can hold both:
 *   ik_chain *c = malloc(sizeof *c + ik_chain_storage_size(n));
 *   ik_chain_init(c, c + 1, ik_chain_storage_size(n), joints, n);
 * Nothing here allocates.
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

/* A compiled chain: movable joints only, fixed transforms merged. Every
 * array has dof entries (fast_rot and fast_pos dof + 1) in the storage
 * given to ik_chain_init(); read them, never write them. */
typedef struct ik_chain {
    size_t dof;                /* number of movable joints, >= 1 */
    ik_xform tip;              /* fixed transform after the last movable joint */
    ik_joint_type *type;       /* REVOLUTE, CONTINUOUS or PRISMATIC */
    ik_xform *pre;             /* fixed transform in front of movable joint i */
    ik_vec3 *axis;             /* unit axis in joint i's frame */
    double *lower;             /* continuous: -INFINITY */
    double *upper;             /* continuous: +INFINITY */
    size_t *source_index;      /* index of joint i in the described list */
    /* Derived by ik_chain_init() for fast evaluation: the same chain
     * re-expressed so that every joint moves along or about its own local
     * z axis (rotation matrix, row-major, and translation of the fixed
     * transform in front of joint i; index dof is the tip). */
    double (*fast_rot)[9];
    double (*fast_pos)[3];
} ik_chain;

/* Bytes of storage ik_chain_init() needs for a chain of up to dof movable
 * joints (the number of described joints is always enough), the slack for
 * aligning an arbitrary pointer included. SIZE_MAX when that is not
 * representable. */
size_t ik_chain_storage_size(size_t dof);

/* Compiles n described joints into *out, its arrays into storage
 * (storage_size bytes, at least ik_chain_storage_size() of the chain's
 * movable joints). Returns IK_OK; IK_EINVAL when a number is non-finite, an
 * origin quaternion is not unit length (within 1e-6), a movable joint's
 * axis is zero, lower > upper on a revolute or prismatic joint, there is no
 * movable joint, or a pointer is NULL; IK_ENOSPC when the storage is too
 * small. On error *out and the storage are unchanged. */
int ik_chain_init(ik_chain *out, void *storage, size_t storage_size, const ik_joint *joints,
                  size_t n);

/* Forward kinematics: the tip frame in the base frame for joint values q
 * (dof entries). q is not clamped to the limits. */
ik_xform ik_chain_fk(const ik_chain *c, const double *q);

/* The same with joint i's value taken from q[index[i]] (a tree's chain
 * reading the tree's variables, ik_tree.h). */
ik_xform ik_chain_fk_gather(const ik_chain *c, const double *q, const size_t *index);

/* Frames of every movable joint (after its motion) and the tip:
 * frames[0..dof-1] are the joint frames, frames[dof] the tip (dof + 1
 * entries). */
void ik_chain_frames(const ik_chain *c, const double *q, ik_xform *frames);

/* The origins of those frames only, pos[0..dof] (dof + 1 entries: the
 * joints', then the tip's), and the tip frame into *tip when not NULL: the
 * same numbers as ik_chain_frames()' positions, without a rotation turned
 * into a quaternion per joint (what an answer's joint positions need). */
void ik_chain_positions(const ik_chain *c, const double *q, ik_vec3 *pos, ik_xform *tip);

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
