/*
 * ik_math.h: the small linear algebra every ikd solver is written in.
 *
 * Vectors, quaternions and rigid transforms by value, with the operations the
 * seeds' formulas need (dot, cross, normalise, the minimal rotation between
 * two directions of seed 001, rotation of a vector, composition and inverse of
 * rigid transforms, roll-pitch-yaw as URDF writes it).
 *
 * CONVENTIONS (the whole solver library follows them):
 *   - Units: radians and metres (or whatever length unit the caller uses
 *     consistently). Degrees exist only at the wire format in proto/.
 *   - Right-handed frames internally. Other handedness and up axes are
 *     converted at the wire format, never here.
 *   - Quaternions are stored x, y, z, w (w is the scalar part) and are unit
 *     quaternions when they represent rotations. Products are Hamilton
 *     products: ik_quat_mul(a, b) rotates by b first, then by a.
 *   - A rigid transform ik_xform {p, q} maps a point x of the child frame to
 *     q * x + p in the parent frame (rotate, then translate).
 *   - Roll-pitch-yaw (URDF "rpy"): R = Rz(yaw) * Ry(pitch) * Rx(roll), fixed
 *     axes x, then y, then z.
 *   - 3x3 matrices are row-major double[9].
 *   - Small structs are passed and returned by value; outputs come last.
 *
 * DEGENERATE INPUT never produces NaN: normalising a zero (or non-finite)
 * vector returns the zero vector; normalising a zero quaternion returns the
 * identity; the rotation between a zero vector and anything is the identity;
 * the rotation between opposite directions is a half turn about an axis
 * perpendicular to them (any such axis). Non-finite input is the caller's to
 * reject: the solvers check with ik_vec3_isfinite() before calling in here.
 *
 * Not here: anything that allocates, anything about joints or chains
 * (ik_chain.h), anything that knows about a solver.
 */
#ifndef IK_MATH_H
#define IK_MATH_H

#include <math.h>
#include <stdbool.h>

#ifndef IK_PI
#define IK_PI 3.14159265358979323846
#endif

typedef struct ik_vec3 {
    double x, y, z;
} ik_vec3;

typedef struct ik_quat {
    double x, y, z, w;
} ik_quat;

typedef struct ik_xform {
    ik_vec3 p; /* translation */
    ik_quat q; /* rotation, unit */
} ik_xform;

/* ---- vec3 ------------------------------------------------------------- */

static inline ik_vec3 ik_v3(double x, double y, double z)
{
    ik_vec3 v = {x, y, z};
    return v;
}
static inline ik_vec3 ik_vec3_add(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.x + b.x, a.y + b.y, a.z + b.z);
}
static inline ik_vec3 ik_vec3_sub(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.x - b.x, a.y - b.y, a.z - b.z);
}
static inline ik_vec3 ik_vec3_scale(ik_vec3 a, double s)
{
    return ik_v3(a.x * s, a.y * s, a.z * s);
}
/* a + b * s */
static inline ik_vec3 ik_vec3_madd(ik_vec3 a, ik_vec3 b, double s)
{
    return ik_v3(a.x + b.x * s, a.y + b.y * s, a.z + b.z * s);
}
static inline double ik_vec3_dot(ik_vec3 a, ik_vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline ik_vec3 ik_vec3_cross(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline double ik_vec3_len2(ik_vec3 a)
{
    return ik_vec3_dot(a, a);
}
/* Euclidean length, computed without overflow for huge components. */
double ik_vec3_len(ik_vec3 a);
static inline double ik_vec3_dist(ik_vec3 a, ik_vec3 b)
{
    return ik_vec3_len(ik_vec3_sub(a, b));
}
/* Unit vector along a; the zero vector for a zero or non-finite a. */
ik_vec3 ik_vec3_normalize(ik_vec3 a);
/* Component of v perpendicular to the unit vector n: v - (v.n) n. */
ik_vec3 ik_vec3_reject(ik_vec3 v, ik_vec3 n);
/* A unit vector perpendicular to a (any one; deterministic). For a zero a,
 * returns (1,0,0). */
ik_vec3 ik_vec3_any_perpendicular(ik_vec3 a);
bool ik_vec3_isfinite(ik_vec3 a);
ik_vec3 ik_vec3_lerp(ik_vec3 a, ik_vec3 b, double t);

/* ---- quaternion ------------------------------------------------------- */

static inline ik_quat ik_quat_identity(void)
{
    ik_quat q = {0.0, 0.0, 0.0, 1.0};
    return q;
}
/* Hamilton product a * b: rotating by the result rotates by b, then by a. */
ik_quat ik_quat_mul(ik_quat a, ik_quat b);
ik_quat ik_quat_conj(ik_quat q);
/* Unit quaternion along q; identity for a zero or non-finite q. */
ik_quat ik_quat_normalize(ik_quat q);
double ik_quat_dot(ik_quat a, ik_quat b);
bool ik_quat_isfinite(ik_quat q);
/* Rotation by angle (radians) about axis. A zero axis gives identity. The
 * axis need not be unit length. */
ik_quat ik_quat_from_axis_angle(ik_vec3 axis, double angle);
/* Rotation vector (axis * angle, angle in [0, pi]) of a unit quaternion. */
ik_vec3 ik_quat_to_rotvec(ik_quat q);
ik_quat ik_quat_from_rotvec(ik_vec3 r);
/* Rotate v by the unit quaternion q. */
ik_vec3 ik_quat_rotate(ik_quat q, ik_vec3 v);
/* Seed 001, "GetRotationBetween": the minimal rotation taking direction u to
 * direction v (axis u x v, angle acos(u.v)). u and v need not be unit length.
 * Parallel or zero input gives identity; opposite directions a half turn about
 * a perpendicular axis. */
ik_quat ik_quat_between(ik_vec3 u, ik_vec3 v);
/* URDF rpy: R = Rz(yaw) Ry(pitch) Rx(roll). */
ik_quat ik_quat_from_rpy(double roll, double pitch, double yaw);
void ik_quat_to_rpy(ik_quat q, double *roll, double *pitch, double *yaw);
/* Row-major 3x3 rotation matrix <-> quaternion. from_mat3 re-orthonormalises
 * nothing: the caller passes a rotation matrix (proto/ checks it). */
void ik_quat_to_mat3(ik_quat q, double m[9]);
ik_quat ik_quat_from_mat3(const double m[9]);
/* The rotation vector of Rt R^T (rotation matrices): the rotation error of
 * an actual orientation R against a target Rt, as ik_quat_to_rotvec() of
 * the quaternion of Rt R^T gives it, computed from the matrices (atan2 of
 * the skew part and the trace; through the quaternion near a half turn,
 * where that loses precision). */
void ik_mat3_rotvec_error(const double Rt[9], const double R[9], double r[3]);
/* Angle (radians, in [0, pi]) of the rotation taking a to b. */
double ik_quat_angle_between(ik_quat a, ik_quat b);
/* Spherical linear interpolation along the shorter arc. */
ik_quat ik_quat_slerp(ik_quat a, ik_quat b, double t);

/* ---- rigid transforms ------------------------------------------------- */

static inline ik_xform ik_xform_identity(void)
{
    ik_xform x = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 1.0}};
    return x;
}
/* a * b: first b, then a (child-to-parent composition). */
ik_xform ik_xform_mul(ik_xform a, ik_xform b);
ik_xform ik_xform_inverse(ik_xform a);
ik_vec3 ik_xform_point(ik_xform a, ik_vec3 p);
ik_vec3 ik_xform_dir(ik_xform a, ik_vec3 d);

/* ---- scalars ---------------------------------------------------------- */

/* Clamp to [lo, hi]; NaN becomes lo. */
double ik_clamp(double v, double lo, double hi);
/* Wrap an angle into (-pi, pi]. */
double ik_wrap_angle(double a);
/* acos with its argument clamped to [-1, 1] (rounding never gives NaN). */
double ik_acos_clamped(double c);

#endif /* IK_MATH_H */
