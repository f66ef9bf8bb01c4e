/*
 * ik_ccd.c: cyclic coordinate descent (contract in ik_ccd.h and ik_anim.h).
 *
 * One sweep visits joint i = n-2 .. 0. With e the end effector and t the
 * target, the unconstrained step turns the sub-chain beyond p[i] by the
 * minimal rotation taking (e - p[i]) to (t - p[i]) (ik_quat_between: axis
 * (e - p[i]) x (t - p[i]), angle between them), which points e at t.
 *   - cone limit: if bone i would leave the cone of half-angle max_bend about
 *     its parent direction, the step becomes the minimal rotation taking
 *     bone i onto the nearest direction of the cone;
 *   - hinge: the step is a turn about the hinge axis a by
 *     phi = atan2(((u x v) . a), u . v) with u, v the projections of
 *     (e - p[i]) and (t - p[i]) on the plane perpendicular to a, and the
 *     hinge angle theta + phi clamped into [hinge_min, hinge_max].
 * The hinge axis of joint i is its input axis turned by the accumulated
 * rotation of its parent bone (the workspace's rot[i-1], every step of the
 * joints before i applied to it), so it moves with the limb.
 *
 * The sub-chain is turned rigidly about p[i]: bone lengths and the bends of
 * the joints beyond i are unchanged (to rounding), which is why limits
 * enforced at each joint's own step hold at the end.
 */
#include "solver/ik_ccd.h"

#include "solver/ik_anim_internal.h"
#include "solver/ik_status.h"

static void step(ik__anim *a, size_t i)
{
    ik_vec3 c = a->p[i];
    ik_vec3 u = ik_vec3_sub(a->p[a->n - 1], c);
    ik_vec3 v = ik_vec3_sub(a->target, c);
    ik_quat q;
    if (a->limits && a->limits[i].hinge) {
        ik_vec3 axis = ik__anim_hinge_axis(a, i);
        q = ik__anim_hinge_turn(a, i, axis, ik__anim_signed_angle(u, v, axis));
    } else {
        q = ik__anim_between(u, v);
        double m = ik__anim_max_bend(a, i);
        if (m < IK_PI) {
            ik_vec3 d = ik__anim_bone_dir(a, i, a->dir0[i]);
            ik_vec3 nd = ik__anim_unit(ik_quat_rotate(q, d));
            ik_vec3 cl = ik__anim_clamp_cone(nd, ik__anim_parent_dir(a, i), m);
            if (cl.x != nd.x || cl.y != nd.y || cl.z != nd.z)
                q = ik__anim_between(d, cl);
        }
    }
    ik__anim_turn(a, i, q);
}

/* Makes the input pose obey every limit, root out. */
static void enforce_limits(ik__anim *a)
{
    for (size_t i = 0; i + 1 < a->n; i++) {
        if (a->limits[i].hinge) {
            ik__anim_turn(a, i, ik__anim_hinge_turn(a, i, ik__anim_hinge_axis(a, i), 0.0));
        } else {
            double m = ik__anim_max_bend(a, i);
            if (!(m < IK_PI))
                continue;
            ik_vec3 d = ik__anim_bone_dir(a, i, a->dir0[i]);
            ik_vec3 cl = ik__anim_clamp_cone(d, ik__anim_parent_dir(a, i), m);
            if (cl.x != d.x || cl.y != d.y || cl.z != d.z)
                ik__anim_turn(a, i, ik_quat_between(d, cl));
        }
    }
}

int ik_ccd_solve(const ik_vec3 *joints, size_t n, ik_vec3 target, const ik_anim_options *opt,
                 void *work, size_t work_bytes, ik_vec3 *out, ik_quat *rot_world,
                 ik_quat *rot_local, ik_anim_result *res)
{
    if (!res)
        return IK_EINVAL;
    ik__anim a;
    int st = ik__anim_begin(&a, joints, n, target, opt, true, work, work_bytes, out);
    if (st != IK_OK) {
        res->status = st;
        res->error = 0.0;
        res->iterations = 0;
        return st;
    }
    if (!a.any_hinge && ik_vec3_dist(target, a.root) > a.total) {
        ik__anim_extend(&a);
        return ik__anim_finish(&a, 0, rot_world, rot_local, res);
    }
    bool use_pole = a.pole && !a.any_hinge;
    if (use_pole)
        ik__anim_pole_step(&a, false);
    if (a.any_cone || a.any_hinge)
        enforce_limits(&a);
    int it = 0, kicks = 0;
    while (it < a.max_iterations && ik__anim_dist(a.p[n - 1], target) > a.tol) {
        it++;
        if (kicks < IK__ANIM_MAX_KICKS && ik__anim_stuck_on_line(&a)) {
            ik__anim_kick(&a);
            kicks++;
        }
        for (size_t i = n - 1; i-- > 0;)
            step(&a, i);
    }
    if (use_pole)
        ik__anim_pole_step(&a, a.any_cone);
    return ik__anim_finish(&a, it, rot_world, rot_local, res);
}
