/*
 * chains.h: serial chains shared by the solver tests (test_ik_chain.c,
 * test_ik_numeric.c, test_ik_threads.c): a joint built from URDF-style
 * values and the UR5 (base_link -> tool0 of the shared ur5 URDF: xyz, rpy,
 * axis, limits as written there). Header-only; everything is static inline
 * so that a test that uses only part of it compiles warning-free.
 */
#ifndef TESTS_SOLVER_CHAINS_H
#define TESTS_SOLVER_CHAINS_H

#include "solver/ik_chain.h"
#include "solver/ik_math.h"

#define ZERO ik_v3(0, 0, 0)

/* A joint: type, origin translation and roll-pitch-yaw, axis, limits. */
static inline ik_joint joint(ik_joint_type type, ik_vec3 xyz, ik_vec3 rpy, ik_vec3 axis,
                             double lo, double hi)
{
    ik_joint j;
    j.type = type;
    j.origin.p = xyz;
    j.origin.q = ik_quat_from_rpy(rpy.x, rpy.y, rpy.z);
    j.axis = axis;
    j.lower = lo;
    j.upper = hi;
    return j;
}

/* The UR5's six revolute joints and its fixed tool0 joint. */
#define UR5_JOINTS 7
static inline void ur5_joints(ik_joint j[UR5_JOINTS])
{
    const double pi2 = 1.57079632679, L = 6.28318530718;
    j[0] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.089159), ZERO, ik_v3(0, 0, 1), -L, L);
    j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0.13585, 0), ik_v3(0, pi2, 0), ik_v3(0, 1, 0), -L, L);
    j[2] = joint(IK_JOINT_REVOLUTE, ik_v3(0, -0.1197, 0.425), ZERO, ik_v3(0, 1, 0), -3.14159265359,
                 3.14159265359);
    j[3] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.39225), ik_v3(0, pi2, 0), ik_v3(0, 1, 0), -L, L);
    j[4] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0.093, 0), ZERO, ik_v3(0, 0, 1), -L, L);
    j[5] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.09465), ZERO, ik_v3(0, 1, 0), -L, L);
    j[6] = joint(IK_JOINT_FIXED, ik_v3(0, 0.0823, 0), ik_v3(-pi2, 0, 0), ZERO, 0, 0);
}

/* A PR2-like right arm: prismatic torso, six revolute joints and the
 * continuous forearm and wrist rolls (indices 5 and 7 of the movable
 * joints), a fixed tool offset. */
#define PR2_ARM_JOINTS 9
static inline void pr2_arm_joints(ik_joint j[PR2_ARM_JOINTS])
{
    j[0] = joint(IK_JOINT_PRISMATIC, ZERO, ZERO, ik_v3(0, 0, 1), 0, 0.33);
    j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(0, -0.188, 0), ZERO, ik_v3(0, 0, 1), -2.2854, 0.7146);
    j[2] = joint(IK_JOINT_REVOLUTE, ik_v3(0.1, 0, 0), ZERO, ik_v3(0, 1, 0), -0.5236, 1.3963);
    j[3] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(1, 0, 0), -3.9, 0.8);
    j[4] = joint(IK_JOINT_REVOLUTE, ik_v3(0.4, 0, 0), ZERO, ik_v3(0, 1, 0), -2.3213, 0);
    j[5] = joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ik_v3(1, 0, 0), 0, 0);
    j[6] = joint(IK_JOINT_REVOLUTE, ik_v3(0.321, 0, 0), ZERO, ik_v3(0, 1, 0), -2.18, 0);
    j[7] = joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ik_v3(1, 0, 0), 0, 0);
    j[8] = joint(IK_JOINT_FIXED, ik_v3(0.18, 0, 0), ZERO, ZERO, 0, 0);
}

#endif /* TESTS_SOLVER_CHAINS_H */
