/*
 * ik_numeric.c: numerical IK for general serial chains (contract in
 * ik_numeric.h).
 */
#include "solver/ik_numeric.h"

#include <math.h>
#include <string.h>

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
    o.timeout_s = 0.005;
    o.max_restarts = SIZE_MAX;
    o.rng_seed = 1;
    o.search = IK_SEARCH_FIRST_FOUND;
    o.nearest_extra_restarts = 8;
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
