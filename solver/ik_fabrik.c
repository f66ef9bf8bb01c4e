/*
 * ik_fabrik.c: FABRIK (Aristidou and Lasenby 2011, Algorithm 1; contract in
 * ik_fabrik.h and ik_anim.h).
 *
 * Algorithm 1 of the paper, with its notation: d_i the bone lengths, b the
 * initial root position.
 *   - If |t - p_1| > sum d_i the target is unreachable: every joint goes on
 *     the line to t, p_{i+1} = (1 - lambda_i) p_i + lambda_i t with
 *     lambda_i = d_i / |t - p_i|, which is the chain straight towards t
 *     (ik__anim_extend does exactly that, then applies cone limits).
 *   - Otherwise, while |p_n - t| > tol:
 *       forward reaching:  p_n = t; for i = n-1 .. 1:
 *                          p_i = p_{i+1} + d_i (p_i - p_{i+1}) / |p_i - p_{i+1}|
 *       backward reaching: p_1 = b; for i = 1 .. n-1:
 *                          p_{i+1} = p_i + d_i (p_{i+1} - p_i) / |p_{i+1} - p_i|
 *     (written here with the unit directions, which is the paper's lambda
 *     interpolation, 0-based).
 * Cone limits (section 4 of the paper constrains each placed joint to a
 * region around the previous bone; here the region is a circular cone):
 * in the forward pass bone i is clamped into the cone about bone i+1
 * (joint i+1's limit, the bend being symmetric), in the backward pass bone
 * i into the cone about its parent direction (joint i's limit). The pole
 * step runs once before the loop (pre-bend) and once after it; running it
 * between the passes, as some implementations do, was measured to slow
 * convergence badly (the two fight), so it is not done.
 *
 * Degenerate directions (two joints on top of each other in mid-solve, e.g.
 * a target on the root) fall back on the bone's input direction, so no
 * division by zero or NaN can happen.
 */
#include "solver/ik_fabrik.h"

#include "solver/ik_anim_internal.h"
#include "solver/ik_status.h"

static void forward_pass(ik__anim *a)
{
    ik_vec3 *p = a->p;
    size_t n = a->n;
    p[n - 1] = a->target;
    for (size_t i = n - 1; i-- > 0;) {
        /* direction of bone i (p[i] -> p[i+1]) */
        ik_vec3 d = ik__anim_unit(ik_vec3_sub(p[i + 1], p[i]));
        if (ik_vec3_len2(d) == 0.0)
            d = a->dir0[i];
        if (a->any_cone && i + 2 < n) {
            double m = ik__anim_max_bend(a, i + 1);
            if (m < IK_PI)
                d = ik__anim_clamp_cone(d, ik__anim_bone_dir(a, i + 1, a->dir0[i + 1]), m);
        }
        p[i] = ik_vec3_madd(p[i + 1], d, -a->len[i]);
    }
}

static void backward_pass(ik__anim *a)
{
    ik_vec3 *p = a->p;
    p[0] = a->root;
    for (size_t i = 0; i + 1 < a->n; i++) {
        ik_vec3 d = ik__anim_unit(ik_vec3_sub(p[i + 1], p[i]));
        if (ik_vec3_len2(d) == 0.0)
            d = i > 0 ? ik__anim_parent_dir(a, i) : a->dir0[0];
        if (a->any_cone) {
            double m = ik__anim_max_bend(a, i);
            if (m < IK_PI)
                d = ik__anim_clamp_cone(d, ik__anim_parent_dir(a, i), m);
        }
        p[i + 1] = ik_vec3_madd(p[i], d, a->len[i]);
    }
}

int ik_fabrik_solve(const ik_vec3 *joints, size_t n, ik_vec3 target, const ik_anim_options *opt,
                    void *work, size_t work_bytes, ik_vec3 *out, ik_quat *rot_world,
                    ik_quat *rot_local, ik_anim_result *res)
{
    if (!res)
        return IK_EINVAL;
    ik__anim a;
    int st = ik__anim_begin(&a, joints, n, target, opt, false, work, work_bytes, out);
    if (st != IK_OK) {
        res->status = st;
        res->error = 0.0;
        res->iterations = 0;
        return st;
    }
    if (ik_vec3_dist(target, a.root) > a.total) {
        ik__anim_extend(&a);
        return ik__anim_finish(&a, 0, rot_world, rot_local, res);
    }
    ik__anim_pole_step(&a, false);
    if (a.any_cone)
        ik__anim_enforce_cones(&a);
    int it = 0, kicks = 0;
    while (it < a.max_iterations && ik__anim_dist(a.p[n - 1], target) > a.tol) {
        it++;
        if (kicks < IK__ANIM_MAX_KICKS && ik__anim_stuck_on_line(&a)) {
            ik__anim_kick(&a);
            kicks++;
        }
        forward_pass(&a);
        backward_pass(&a);
    }
    ik__anim_pole_step(&a, a.any_cone);
    return ik__anim_finish(&a, it, rot_world, rot_local, res);
}
