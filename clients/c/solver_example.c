/*
 * solver_example.c: ikd's solver library (libiksolver) embedded in a C program, as
 * a game server or a robot controller would use it: no daemon, no network,
 * no allocation while solving. It builds against the INSTALLED library
 * (make install, then pkg-config; clients/c/README.md has the commands) and
 * checks every answer itself:
 *
 *   1. seed 001's two-bone solve (ik_twobone.h): a leg's knee and foot for a
 *      target, checked by its geometry (the hip kept, both bone lengths kept,
 *      the foot on the target);
 *   2. a six-joint arm (the UR5 of tests/data/robots/ur5.urdf, base_link to
 *      tool0, its joints typed in below as URDF writes them) compiled with
 *      ik_chain_init() into storage sized by ik_chain_storage_size(), and
 *      solved for full poses with the numeric solver
 *      (ik_numeric.h) from the mid-limit pose, each target made by forward
 *      kinematics from joint values inside the limits; every answer is
 *      checked by forward kinematics of the returned joints (position error
 *      and rotation vector, each component below 1e-5) and against the
 *      joint limits.
 *
 * It prints one line per solve and "all checks passed", and exits 0; a
 * failed check prints "FAILED: ..." and exits 1. Everything is
 * deterministic except the time each solve takes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <ikd/solver/ik_chain.h>
#include <ikd/solver/ik_numeric.h>
#include <ikd/solver/ik_status.h>
#include <ikd/solver/ik_twobone.h>

#define TOL 1e-5

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

/* ---- 1. two bones ------------------------------------------------------ */

static void two_bone(void)
{
    ik_vec3 hip = ik_v3(0, 0, 1), knee = ik_v3(0.1, 0, 0.55), foot = ik_v3(0, 0, 0.1);
    ik_vec3 target = ik_v3(0.2, 0.1, 0.25);
    ik_twobone_result r;
    int st = ik_twobone_solve(hip, knee, foot, target, NULL, &r);
    printf("two_bone: %s, knee (%.4f, %.4f, %.4f), foot (%.4f, %.4f, %.4f)\n", ik_status_name(st),
           r.b.x, r.b.y, r.b.z, r.c.x, r.c.y, r.c.z);
    check(st == IK_OK, "two_bone: status ok");
    check(fabs(ik_vec3_dist(hip, r.b) - ik_vec3_dist(hip, knee)) < 1e-12,
          "two_bone: thigh length kept");
    check(fabs(ik_vec3_dist(r.b, r.c) - ik_vec3_dist(knee, foot)) < 1e-12,
          "two_bone: shin length kept");
    check(ik_vec3_dist(r.c, target) < 1e-12, "two_bone: foot on the target");
}

/* ---- 2. a six-joint arm ------------------------------------------------ */

/* URDF origin (xyz, rpy) as an ik_xform. */
static ik_xform origin(double x, double y, double z, double roll, double pitch, double yaw)
{
    ik_xform t = {ik_v3(x, y, z), ik_quat_from_rpy(roll, pitch, yaw)};
    return t;
}

/* tests/data/robots/ur5.urdf from base_link to tool0: six revolute joints
 * and the fixed tool flange, compiled into c with its arrays in storage
 * (*storage: allocated here, sized for the seven described joints; the
 * caller frees it when done with the chain). */
static int ur5_chain(ik_chain *c, void **storage)
{
    const double pi = 3.14159265359, half = 1.57079632679, turn = 6.28318530718;
    const ik_joint j[] = {
        {IK_JOINT_REVOLUTE, origin(0, 0, 0.089159, 0, 0, 0), {0, 0, 1}, -turn, turn},
        {IK_JOINT_REVOLUTE, origin(0, 0.13585, 0, 0, half, 0), {0, 1, 0}, -turn, turn},
        {IK_JOINT_REVOLUTE, origin(0, -0.1197, 0.425, 0, 0, 0), {0, 1, 0}, -pi, pi},
        {IK_JOINT_REVOLUTE, origin(0, 0, 0.39225, 0, half, 0), {0, 1, 0}, -turn, turn},
        {IK_JOINT_REVOLUTE, origin(0, 0.093, 0, 0, 0, 0), {0, 0, 1}, -turn, turn},
        {IK_JOINT_REVOLUTE, origin(0, 0, 0.09465, 0, 0, 0), {0, 1, 0}, -turn, turn},
        {IK_JOINT_FIXED, origin(0, 0.0823, 0, -half, 0, 0), {0, 0, 0}, 0, 0},
    };
    const size_t n = sizeof j / sizeof j[0], size = ik_chain_storage_size(n);
    *storage = malloc(size);
    if (!*storage)
        return IK_EINVAL;
    return ik_chain_init(c, *storage, size, j, n);
}

static void six_joints(void)
{
    ik_chain arm; /* a small view; its arrays are in storage */
    void *storage = NULL;
    int st = ur5_chain(&arm, &storage);
    check(st == IK_OK && arm.dof == 6, "ur5: the chain compiles to six joints");
    if (st != IK_OK) {
        free(storage);
        return;
    }

    /* The workspace is sized once and reused by every solve. */
    size_t ws_size = ik_numeric_workspace_size(&arm);
    void *ws = malloc(ws_size);
    check(ws != NULL, "ur5: workspace allocated");
    if (!ws) {
        free(storage);
        return;
    }
    ik_numeric_opts opts = ik_numeric_opts_default();
    opts.tol_pos = opts.tol_rot = TOL;
    opts.timeout_s = 1.0; /* generous: the check is the answer, not the speed */

    /* joint values inside the limits; their forward kinematics is the target */
    const double configs[][6] = {
        {0.3, -1.2, 1.4, -0.8, 1.1, 0.5},
        {-1.0, -0.6, -1.9, 2.1, -0.4, -2.5},
        {2.2, -2.0, 0.7, 0.3, 1.9, 1.0},
    };
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        ik_target target = ik_target_full_pose(ik_chain_fk(&arm, configs[k]));
        double q[6];
        ik_numeric_result res;
        st = ik_numeric_solve(&arm, &target, NULL, &opts, ws, ws_size, q, &res);

        /* the check: forward kinematics of the answer against the target */
        double e[6];
        ik_pose_error(target.pose, ik_chain_fk(&arm, q), e);
        double pos = 0, rot = 0;
        for (int i = 0; i < 3; i++) {
            pos = fmax(pos, fabs(e[i]));
            rot = fmax(rot, fabs(e[3 + i]));
        }
        printf("ur5 pose %zu: %s in %zu iterations, forward kinematics error %.1e m, "
               "%.1e rad\n",
               k + 1, ik_status_name(st), res.iterations, pos, rot);
        printf("  joints %.4f %.4f %.4f %.4f %.4f %.4f\n", q[0], q[1], q[2], q[3], q[4], q[5]);
        check(st == IK_OK, "ur5: status ok");
        check(pos < TOL && rot < TOL, "ur5: the tip on the target (forward kinematics)");
        check(ik_chain_within_limits(&arm, q, 0), "ur5: joints inside the limits");
    }
    free(ws);
    free(storage);
}

int main(void)
{
    two_bone();
    six_joints();
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
