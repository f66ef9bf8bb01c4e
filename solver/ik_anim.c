/*
 * ik_anim.c: the machinery FABRIK (ik_fabrik.c) and CCD (ik_ccd.c) share:
 * input validation and workspace layout, cone limits, the pole step, the
 * fully extended pose and the output rotations (ik_anim.h is the contract,
 * ik_anim_internal.h lists the internal functions).
 *
 * Output rotations are seed 001's "GetRotationBetween" (the minimal rotation
 * between a bone's old and new direction, ik_quat_between) and its
 * parent-relative form conj(parent) * child.
 *
 * The pole step is the usual "rotate the joint about the line through its
 * neighbours into the half-plane of the pole": with n the unit direction
 * p[j+1] - p[j-1], the joint and the pole are projected on the plane through
 * p[j-1] perpendicular to n and the joint is turned about n by the signed
 * angle between the two projections.
 *
 * Workspace layout (all double-aligned): len[n-1], dir0[n-1] (ik_vec3),
 * rot[n-1] (ik_quat).
 */
#include "solver/ik_anim.h"

#include <stdint.h>
#include <string.h>

#include "solver/ik_anim_internal.h"
#include "solver/ik_status.h"

/* ---- public helpers -------------------------------------------------- */

void ik_anim_options_default(ik_anim_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_iterations = IK_ANIM_DEFAULT_ITERATIONS;
    o->tolerance = 0.0;
    o->pole = NULL;
    o->root_direction = ik_v3(0.0, 0.0, 0.0);
    o->limits = NULL;
}

ik_anim_limit ik_anim_limit_none(void)
{
    ik_anim_limit l = {INFINITY, false, {0.0, 0.0, 0.0}, -IK_PI, IK_PI};
    return l;
}

ik_anim_limit ik_anim_limit_cone(double max_bend)
{
    ik_anim_limit l = ik_anim_limit_none();
    l.max_bend = max_bend;
    return l;
}

ik_anim_limit ik_anim_limit_hinge(ik_vec3 axis, double lo, double hi)
{
    ik_anim_limit l = ik_anim_limit_none();
    l.hinge = true;
    l.hinge_axis = axis;
    l.hinge_min = lo;
    l.hinge_max = hi;
    return l;
}

static size_t bone_bytes(void)
{
    return sizeof(double) + sizeof(ik_vec3) + sizeof(ik_quat);
}

size_t ik_anim_workspace_size(size_t n)
{
    if (n < 2)
        return 0;
    if (n - 1 > SIZE_MAX / bone_bytes())
        return SIZE_MAX;
    return (n - 1) * bone_bytes();
}

double ik_anim_bend(const ik_vec3 *p, size_t n, size_t i, ik_vec3 root_dir)
{
    if (!p || i + 1 >= n)
        return 0.0;
    ik_vec3 parent =
        i == 0 ? ik_vec3_normalize(root_dir) : ik_vec3_normalize(ik_vec3_sub(p[i], p[i - 1]));
    ik_vec3 d = ik_vec3_normalize(ik_vec3_sub(p[i + 1], p[i]));
    if (ik_vec3_len2(parent) == 0.0 || ik_vec3_len2(d) == 0.0)
        return 0.0;
    /* atan2 of |cross| and dot is accurate near 0 and pi, unlike acos. */
    return atan2(ik_vec3_len(ik_vec3_cross(parent, d)), ik_vec3_dot(parent, d));
}

/* ---- begin / finish --------------------------------------------------- */

static bool limit_valid(const ik_anim_limit *l, bool allow_hinge)
{
    if (isnan(l->max_bend) || l->max_bend < 0.0)
        return false;
    if (!l->hinge)
        return true;
    if (!allow_hinge || !ik_vec3_isfinite(l->hinge_axis) || !(ik_vec3_len(l->hinge_axis) > 0.0))
        return false;
    return isfinite(l->hinge_min) && isfinite(l->hinge_max) && l->hinge_min <= l->hinge_max &&
           l->hinge_min >= -IK_PI && l->hinge_max <= IK_PI;
}

int ik__anim_begin(ik__anim *a, const ik_vec3 *joints, size_t n, ik_vec3 target,
                   const ik_anim_options *opt, bool allow_hinge, void *work, size_t work_bytes,
                   ik_vec3 *out)
{
    ik_anim_options def;
    if (!opt) {
        ik_anim_options_default(&def);
        opt = &def;
    }
    if (n < 2 || !joints || !out || !ik_vec3_isfinite(target))
        return IK_EINVAL;
    if (opt->max_iterations < 0 || !(opt->tolerance >= 0.0) || !isfinite(opt->tolerance))
        return IK_EINVAL;
    if (!ik_vec3_isfinite(opt->root_direction) || (opt->pole && !ik_vec3_isfinite(*opt->pole)))
        return IK_EINVAL;
    double total = 0.0, longest = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!ik_vec3_isfinite(joints[i]))
            return IK_EINVAL;
        if (i > 0) {
            double l = ik__anim_dist(joints[i], joints[i - 1]);
            total += l;
            longest = fmax(longest, l);
        }
    }
    if (!isfinite(total) || !(total > 0.0))
        return IK_EINVAL;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!(ik__anim_dist(joints[i + 1], joints[i]) > 1e-12 * total))
            return IK_EINVAL;
        if (opt->limits && !limit_valid(&opt->limits[i], allow_hinge))
            return IK_EINVAL;
    }
    if (!isfinite(ik_vec3_dist(target, joints[0])) ||
        (opt->pole && !isfinite(ik_vec3_dist(*opt->pole, joints[0]))))
        return IK_EINVAL;
    size_t need = ik_anim_workspace_size(n);
    if (!work || work_bytes < need)
        return IK_ENOSPC;

    double *len = work;
    ik_vec3 *dir0 = (ik_vec3 *)(len + (n - 1));
    ik_quat *rot = (ik_quat *)(dir0 + (n - 1));
    for (size_t i = 0; i + 1 < n; i++) {
        ik_vec3 d = ik_vec3_sub(joints[i + 1], joints[i]);
        len[i] = ik__anim_len(d);
        dir0[i] = ik__anim_unit(d);
        rot[i] = ik_quat_identity();
    }
    memset(a, 0, sizeof *a);
    a->n = n;
    a->p = out;
    a->target = target;
    a->len = len;
    a->dir0 = dir0;
    a->rot = rot;
    a->limits = opt->limits;
    a->pole = opt->pole;
    a->root = joints[0];
    a->root_ref = ik_vec3_normalize(opt->root_direction);
    if (ik_vec3_len2(a->root_ref) == 0.0)
        a->root_ref = dir0[0];
    a->total = total;
    a->min_reach = fmax(0.0, 2.0 * longest - total);
    a->tol = opt->tolerance > 0.0 ? opt->tolerance : IK_ANIM_DEFAULT_TOLERANCE * total;
    a->max_iterations = opt->max_iterations > 0 ? opt->max_iterations : IK_ANIM_DEFAULT_ITERATIONS;
    for (size_t i = 0; opt->limits && i + 1 < n; i++) {
        if (opt->limits[i].hinge)
            a->any_hinge = true;
        else if (opt->limits[i].max_bend < IK_PI)
            a->any_cone = true;
    }
    memmove(out, joints, n * sizeof *out);
    return IK_OK;
}

int ik__anim_finish(const ik__anim *a, int iterations, ik_quat *rot_world, ik_quat *rot_local,
                    ik_anim_result *res)
{
    double err = ik_vec3_dist(a->p[a->n - 1], a->target);
    double reach = ik_vec3_dist(a->target, a->root);
    int st;
    if (err <= a->tol)
        st = IK_OK;
    else if (reach > a->total || reach < a->min_reach)
        st = IK_EUNREACHABLE;
    else
        st = IK_ENOTCONV;
    ik_quat prev = ik_quat_identity();
    for (size_t i = 0; (rot_world || rot_local) && i + 1 < a->n; i++) {
        ik_quat w = ik_quat_between(a->dir0[i], ik__anim_bone_dir(a, i, a->dir0[i]));
        if (rot_world)
            rot_world[i] = w;
        if (rot_local)
            rot_local[i] = ik_quat_normalize(ik_quat_mul(ik_quat_conj(prev), w));
        prev = w;
    }
    res->status = st;
    res->error = err;
    res->iterations = iterations;
    return st;
}

/* ---- geometry -------------------------------------------------------- */

double ik__anim_max_bend(const ik__anim *a, size_t i)
{
    if (!a->limits || a->limits[i].hinge)
        return INFINITY;
    return a->limits[i].max_bend;
}

ik_vec3 ik__anim_bone_dir(const ik__anim *a, size_t i, ik_vec3 fallback)
{
    ik_vec3 d = ik__anim_unit(ik_vec3_sub(a->p[i + 1], a->p[i]));
    return ik_vec3_len2(d) > 0.0 ? d : fallback;
}

ik_vec3 ik__anim_parent_dir(const ik__anim *a, size_t i)
{
    if (i == 0)
        return a->root_ref;
    return ik__anim_bone_dir(a, i - 1, a->dir0[i - 1]);
}

ik_vec3 ik__anim_clamp_cone(ik_vec3 d, ik_vec3 ref, double max)
{
    if (!(max < IK_PI))
        return d;
    ik_vec3 axis = ik_vec3_cross(ref, d);
    double s = ik__anim_len(axis), c = ik_vec3_dot(ref, d);
    if (atan2(s, c) <= max)
        return d;
    if (!(s > 1e-12))
        axis = ik_vec3_any_perpendicular(ref);
    ik_vec3 r = ik_vec3_normalize(ik_quat_rotate(ik_quat_from_axis_angle(axis, max), ref));
    return ik_vec3_len2(r) > 0.0 ? r : ref;
}

double ik__anim_signed_angle(ik_vec3 u, ik_vec3 v, ik_vec3 n)
{
    ik_vec3 pu = ik_vec3_reject(u, n), pv = ik_vec3_reject(v, n);
    double lu = ik__anim_len(pu), lv = ik__anim_len(pv);
    if (!(lu > 1e-300) || !(lv > 1e-300))
        return 0.0;
    pu = ik_vec3_scale(pu, 1.0 / lu);
    pv = ik_vec3_scale(pv, 1.0 / lv);
    return atan2(ik_vec3_dot(ik_vec3_cross(pu, pv), n), ik_vec3_dot(pu, pv));
}

void ik__anim_turn(ik__anim *a, size_t i, ik_quat q)
{
    ik_vec3 c = a->p[i];
    for (size_t k = i + 1; k < a->n; k++)
        a->p[k] = ik_vec3_add(c, ik_quat_rotate(q, ik_vec3_sub(a->p[k], c)));
    if (a->any_hinge) /* only hinge axes need the accumulated rotations */
        for (size_t k = i; k + 1 < a->n; k++)
            a->rot[k] = ik_quat_normalize(ik_quat_mul(q, a->rot[k]));
}

void ik__anim_enforce_cones(ik__anim *a)
{
    for (size_t i = 0; i + 1 < a->n; i++) {
        double m = ik__anim_max_bend(a, i);
        if (!(m < IK_PI))
            continue;
        ik_vec3 d = ik__anim_bone_dir(a, i, a->dir0[i]);
        ik_vec3 ref = ik__anim_parent_dir(a, i);
        ik_vec3 c = ik__anim_clamp_cone(d, ref, m);
        if (c.x == d.x && c.y == d.y && c.z == d.z)
            continue;
        ik__anim_turn(a, i, ik_quat_between(d, c));
        a->p[i + 1] = ik_vec3_madd(a->p[i], c, a->len[i]);
    }
}

void ik__anim_extend(ik__anim *a)
{
    ik_vec3 d = ik_vec3_normalize(ik_vec3_sub(a->target, a->root));
    if (ik_vec3_len2(d) == 0.0)
        d = a->dir0[0];
    a->p[0] = a->root;
    for (size_t i = 0; i + 1 < a->n; i++)
        a->p[i + 1] = ik_vec3_madd(a->p[i], d, a->len[i]);
    if (a->any_cone)
        ik__anim_enforce_cones(a);
}

/* True when the cone limit of joint i holds in the current pose. */
static bool cone_ok(const ik__anim *a, size_t i)
{
    double m = ik__anim_max_bend(a, i);
    if (!(m < IK_PI))
        return true;
    ik_vec3 d = ik__anim_bone_dir(a, i, a->dir0[i]);
    ik_vec3 ref = ik__anim_parent_dir(a, i);
    return atan2(ik__anim_len(ik_vec3_cross(ref, d)), ik_vec3_dot(ref, d)) <= m + 1e-12;
}

void ik__anim_pole_step(ik__anim *a, bool check_limits)
{
    if (!a->pole)
        return;
    for (size_t j = 1; j + 1 < a->n; j++) {
        ik_vec3 base = a->p[j - 1];
        ik_vec3 n = ik__anim_unit(ik_vec3_sub(a->p[j + 1], base));
        if (ik_vec3_len2(n) == 0.0)
            continue;
        ik_vec3 v = ik_vec3_reject(ik_vec3_sub(a->p[j], base), n);
        ik_vec3 w = ik_vec3_reject(ik_vec3_sub(*a->pole, base), n);
        double lv = ik__anim_len(v), lw = ik__anim_len(w);
        if (!(lv > 1e-9 * a->len[j - 1]) || !(lw > 1e-12 * a->total))
            continue;
        double ang = ik__anim_signed_angle(v, w, n);
        if (ang == 0.0)
            continue;
        ik_vec3 old = a->p[j];
        ik_vec3 rel = ik_vec3_sub(old, base);
        a->p[j] = ik_vec3_add(base, ik_quat_rotate(ik_quat_from_axis_angle(n, ang), rel));
        if (!ik_vec3_isfinite(a->p[j])) {
            a->p[j] = old;
            continue;
        }
        if (check_limits &&
            !(cone_ok(a, j - 1) && cone_ok(a, j) && (j + 2 >= a->n || cone_ok(a, j + 1))))
            a->p[j] = old;
    }
}

/* ---- hinges ----------------------------------------------------------- */

ik_vec3 ik__anim_hinge_axis(const ik__anim *a, size_t i)
{
    ik_vec3 ax = a->limits[i].hinge_axis;
    if (i > 0)
        ax = ik_quat_rotate(a->rot[i - 1], ax);
    return ik_vec3_normalize(ax);
}

/* Clamps a wanted hinge angle (any value) into [lo, hi]: wrapped into
 * (-pi, pi], then, if outside, the bound nearer around the circle. */
static double clamp_hinge(double want, double lo, double hi)
{
    double w = ik_wrap_angle(want);
    if (w >= lo && w <= hi)
        return w;
    double dlo = fabs(ik_wrap_angle(w - lo)), dhi = fabs(ik_wrap_angle(w - hi));
    return dlo <= dhi ? lo : hi;
}

ik_quat ik__anim_hinge_turn(const ik__anim *a, size_t i, ik_vec3 axis, double phi)
{
    const ik_anim_limit *l = &a->limits[i];
    ik_vec3 parent = ik__anim_parent_dir(a, i);
    ik_vec3 d = ik__anim_bone_dir(a, i, a->dir0[i]);
    if (ik_vec3_len(ik_vec3_reject(parent, axis)) < 1e-9)
        return ik_quat_from_axis_angle(axis, phi); /* hinge angle undefined */
    double theta = ik__anim_signed_angle(parent, d, axis);
    double goal = clamp_hinge(theta + phi, l->hinge_min, l->hinge_max);
    return ik_quat_from_axis_angle(axis, goal - theta);
}

/* ---- the straight-chain trap ------------------------------------------ */

/* A straight chain whose target lies on its own line makes no progress in
 * either solver: every FABRIK placement stays on the line and every CCD
 * rotation between parallel vectors is the identity. The solvers detect it
 * and bend every joint by this angle (towards the pole if any; the root
 * joint too, so that no joint stays on the target) a few times at most. */
#define IK_ANIM_KICK 0.5

/* The line the chain would have to leave: root to target, or bone 0's
 * direction when the target is on the root. */
static ik_vec3 target_line(const ik__anim *a)
{
    ik_vec3 l = ik_vec3_normalize(ik_vec3_sub(a->target, a->root));
    return ik_vec3_len2(l) > 0.0 ? l : ik__anim_bone_dir(a, 0, a->dir0[0]);
}

bool ik__anim_stuck_on_line(const ik__anim *a)
{
    if (a->n < 3 || ik__anim_dist(a->p[a->n - 1], a->target) <= a->tol)
        return false;
    /* the target on the line of bone 0 (cheap, false almost always)... */
    ik_vec3 l = ik__anim_bone_dir(a, 0, a->dir0[0]);
    if (ik__anim_len(ik_vec3_reject(ik_vec3_sub(a->target, a->p[0]), l)) > 1e-9 * a->total)
        return false;
    /* ...and every bone along it */
    for (size_t i = 1; i + 1 < a->n; i++)
        if (ik__anim_len(ik_vec3_cross(ik__anim_bone_dir(a, i, a->dir0[i]), l)) > 1e-9)
            return false;
    return true;
}

void ik__anim_kick(ik__anim *a)
{
    ik_vec3 l = target_line(a);
    ik_vec3 k = a->pole ? ik_vec3_normalize(ik_vec3_cross(l, ik_vec3_sub(*a->pole, a->root)))
                        : ik_v3(0.0, 0.0, 0.0);
    if (ik_vec3_len2(k) == 0.0)
        k = ik_vec3_any_perpendicular(l);
    for (size_t j = a->n - 1; j-- > 0;) {
        if (a->limits && a->limits[j].hinge) {
            ik__anim_turn(a, j, ik__anim_hinge_turn(a, j, ik__anim_hinge_axis(a, j), IK_ANIM_KICK));
        } else {
            ik__anim_turn(a, j, ik_quat_from_axis_angle(k, IK_ANIM_KICK));
        }
    }
    if (a->any_cone)
        ik__anim_enforce_cones(a);
}
