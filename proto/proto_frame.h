/*
 * proto_frame.h: the caller's frame convention and angle unit, converted at
 * the wire format so the solvers only ever see ikd's internal convention.
 *
 * ikd's internal convention is ROS's (REP 103): right-handed, x forward,
 * y left, z up. A request may say it speaks another one:
 *   ros     z-up, right-handed   (identity)
 *   unity   y-up, left-handed    x right, y up, z forward
 *   unreal  z-up, left-handed    x forward, y right, z up
 * The change of coordinates is a fixed 3x3 matrix M with p_ros = M p_caller:
 *   unity:  p_ros = ( z, -x,  y)      (det M = -1)
 *   unreal: p_ros = ( x, -y,  z)      (det M = -1)
 * and M^-1 = M^T the other way. What converts how:
 *   - points and free directions (positions, up and pole vectors, prismatic
 *     axes):                    v_ros = M v
 *   - rotation matrices:        R_ros = M R M^T
 *   - quaternions (x,y,z,w):   the same rotation as R_ros. Because M is a
 *     reflection, M R M^T = P R P^T with the proper rotation P = -M, and
 *     conjugating by P rotates the vector part: q_ros = (P (x,y,z), w) =
 *     (-M (x,y,z), w). For unreal that is (-x, y, -z, w).
 *   - axes of revolute joints: a positive rotation about a in the caller's
 *     (left-handed) frame is a positive rotation about P a in ROS, so
 *     a_ros = -M a and the joint value itself does not change.
 * Both left-handed conventions use the same quaternion arithmetic as ikd
 * (a quaternion rotates a vector by the usual formula), which is what makes
 * these identities hold; the tests check that a solve stated in Unity's
 * frame, checked by forward kinematics done in Unity's frame, lands on the
 * target.
 *
 * Angles: radians or degrees, for joint values, joint limits, rpy angles and
 * angular errors; never for quaternions or matrices.
 *
 * Pure functions; thread-safe.
 */
#ifndef PROTO_FRAME_H
#define PROTO_FRAME_H

#include <stdbool.h>

#include "solver/ik_math.h"

typedef enum proto_frame { PROTO_FRAME_ROS = 0, PROTO_FRAME_UNITY, PROTO_FRAME_UNREAL } proto_frame;
typedef enum proto_units { PROTO_UNITS_RADIANS = 0, PROTO_UNITS_DEGREES } proto_units;

/* NULL-terminated names, indexed by the enums ("ros", "unity", "unreal";
 * "radians", "degrees"). */
extern const char *const proto_frame_names[];
extern const char *const proto_units_names[];

/* Caller -> ROS and back, for points and directions. */
ik_vec3 proto_frame_vec_in(proto_frame f, ik_vec3 v);
ik_vec3 proto_frame_vec_out(proto_frame f, ik_vec3 v);
/* Rotations as quaternions. */
ik_quat proto_frame_quat_in(proto_frame f, ik_quat q);
ik_quat proto_frame_quat_out(proto_frame f, ik_quat q);
/* Rotations as row-major 3x3 matrices (in place allowed: out may be m). */
void proto_frame_mat3_in(proto_frame f, const double m[9], double out[9]);
/* Revolute and continuous joint axes (pseudo-vectors). */
ik_vec3 proto_frame_axis_in(proto_frame f, ik_vec3 a);
/* Rigid transforms (child -> parent), both parts converted. */
ik_xform proto_frame_xform_in(proto_frame f, ik_xform x);
ik_xform proto_frame_xform_out(proto_frame f, ik_xform x);

/* Angle conversion: to radians from the unit, and from radians to it. */
double proto_angle_in(proto_units u, double a);
double proto_angle_out(proto_units u, double a);

#endif /* PROTO_FRAME_H */
