/*
 * chains.h: serial chains shared by the solver tests (test_ik_chain.c,
 * test_ik_numeric.c, test_ik_threads.c, test_ik_follow.c): a joint built
 * from URDF-style values, the UR5 (base_link -> tool0 of the shared ur5
 * URDF: xyz, rpy, axis, limits as written there), a PR2-like arm, and the
 * two 7-joint arms of tests/data (the KUKA iiwa 14 from base_link to tool0
 * and the Franka Panda from panda_link0 to panda_link8, as their URDFs
 * write them). Header-only; everything is static inline
 * so that a test that uses only part of it compiles warning-free.
 */
#ifndef TESTS_SOLVER_CHAINS_H
#define TESTS_SOLVER_CHAINS_H

#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "storage.h"

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

/* The KUKA iiwa 14 R820, base_link -> tool0 (kuka_iiwa14_r820.urdf):
 * seven revolute joints, axes 1, 3, 5 and 7 along the links, so that
 * joints 2 and 6 at zero line up axes 1 and 3, and 5 and 7. */
#define IIWA_JOINTS 8
static inline void iiwa_joints(ik_joint j[IIWA_JOINTS])
{
    const double a = 2.9668, b = 2.0942;
    j[0] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -a, a);
    j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(-0.00043624, 0, 0.36), ZERO, ik_v3(0, 1, 0), -b, b);
    j[2] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -a, a);
    j[3] = joint(IK_JOINT_REVOLUTE, ik_v3(0.00043624, 0, 0.42), ZERO, ik_v3(0, -1, 0), -b, b);
    j[4] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -a, a);
    j[5] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.4), ZERO, ik_v3(0, 1, 0), -b, b);
    j[6] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -3.0541, 3.0541);
    j[7] = joint(IK_JOINT_FIXED, ik_v3(0, 0, 0.126), ZERO, ZERO, 0, 0);
}

/* The Franka Panda, panda_link0 -> panda_link8 (franka_panda.urdf): seven
 * revolute joints, joint 4 within [-3.0718, -0.0698] and joint 6 within
 * [-0.0175, 3.7525]. */
#define PANDA_JOINTS 8
static inline void panda_joints(ik_joint j[PANDA_JOINTS])
{
    const double pi2 = 1.5707963267948966, a = 2.8973;
    j[0] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.333), ZERO, ik_v3(0, 0, 1), -a, a);
    j[1] = joint(IK_JOINT_REVOLUTE, ZERO, ik_v3(-pi2, 0, 0), ik_v3(0, 0, 1), -1.7628, 1.7628);
    j[2] = joint(IK_JOINT_REVOLUTE, ik_v3(0, -0.316, 0), ik_v3(pi2, 0, 0), ik_v3(0, 0, 1), -a, a);
    j[3] = joint(IK_JOINT_REVOLUTE, ik_v3(0.0825, 0, 0), ik_v3(pi2, 0, 0), ik_v3(0, 0, 1), -3.0718,
                 -0.0698);
    j[4] = joint(IK_JOINT_REVOLUTE, ik_v3(-0.0825, 0.384, 0), ik_v3(-pi2, 0, 0), ik_v3(0, 0, 1), -a,
                 a);
    j[5] = joint(IK_JOINT_REVOLUTE, ZERO, ik_v3(pi2, 0, 0), ik_v3(0, 0, 1), -0.0175, 3.7525);
    j[6] = joint(IK_JOINT_REVOLUTE, ik_v3(0.088, 0, 0), ik_v3(pi2, 0, 0), ik_v3(0, 0, 1), -a, a);
    j[7] = joint(IK_JOINT_FIXED, ik_v3(0, 0, 0.107), ZERO, ZERO, 0, 0);
}

#endif /* TESTS_SOLVER_CHAINS_H */
