/*
 * ik_planar.c: seed 000's analytic solvers ("Inverse Kinematics Study",
 * shared/seeds/000_73a759827fd96439.txt): two-link planar, three-link planar
 * with an end orientation, three-link in 3D ("The Natural Hard Way").
 * Frames, angle conventions and degenerate cases are documented in
 * ik_planar.h; this file follows the seed's steps in order.
 *
 * The law of cosines. Seed 000 derives
 *     theta_a = acos((d^2 + l1^2 - l2^2) / (2 d l2))
 * from "l2^2 = d^2 + l1^2 - 2 d l2 cos(theta_a)". That is a typo: theta_a
 * lies between the sides d and l1, so the law of cosines reads
 *     l2^2 = d^2 + l1^2 - 2 l1 d cos(theta_a),
 * which is what the seed's own code computes (2 * l1 * d) and what ikd
 * implements. Likewise theta_b = acos((l1^2 + l2^2 - d^2) / (2 l1 l2)) and
 * the elbow's exterior angle theta_1 = pi - theta_b.
 *
 * Precision: acos loses half the digits near 0 and pi (a nearly straight or
 * nearly folded arm), so both angles are evaluated as atan2(sin, cos) with
 * the same cosine numerators and the sine from the triangle's area (Heron's
 * formula in Kahan's stable arrangement): sin(theta_a) = 2K / (l1 d),
 * sin(theta_b) = 2K / (l1 l2). The angles are the seed's; only the
 * rounding is better. All lengths are scaled by the longest link first, so
 * no square overflows or underflows.
 *
 * Not here: the two-bone limb of seed 001 (ik_twobone.c).
 */
#include "solver/ik_planar.h"

#include <float.h>
#include <math.h>

#include "solver/ik_status.h"

/* Relative size below which the part of E_y perpendicular to the axis
 * O -> P_T counts as zero (then no roll is needed). */
#define PLANAR_TINY_ROLL 1e-14

/* ---- the two-link core ------------------------------------------------ */

/* The angles of seed 000's two-link solve towards the local target (x, y)
 * (target minus base). Lengths positive and finite, bend +-1, x and y
 * finite: checked by the callers. */
typedef struct twolink_angles {
    double theta_e; /* atan2(y, x); 0 on the base */
    double theta0;  /* wrapped */
    double theta1;  /* [-pi, pi] */
    ik_reach reach;
} twolink_angles;

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* 4K for a triangle with sides p, q, r (Kahan's stable Heron); 0 when
 * rounding makes the triangle degenerate. */
static double four_area(double p, double q, double r)
{
    double t;
    if (p < q) { t = p; p = q; q = t; }
    if (q < r) { t = q; q = r; r = t; }
    if (p < q) { t = p; p = q; q = t; }
    /* p >= q >= r */
    double f = (p + (q + r)) * (r - (p - q)) * (r + (p - q)) * (p + (q - r));
    return f > 0.0 ? sqrt(f) : 0.0;
}

static twolink_angles twolink_core(double l1, double l2, double x, double y, int bend)
{
    twolink_angles o;
    double d = hypot(x, y);
    o.theta_e = (d > 0.0) ? atan2(y, x) : 0.0;

    double inv = 1.0 / max2(l1, l2);
    double A = l1 * inv, B = l2 * inv, D = d * inv; /* D may be +inf */
    double s = (double)bend;

    /* the edges of the reach widened by rounding (IK_REACH_ROUNDING of
     * it): a target a rounding error past one is met, stretched or folded
     * (four_area gives 0 there) */
    const double slack = (A + B) * IK_REACH_ROUNDING;
    if (D > A + B + slack) {
        /* Too far: fully extended towards the target. */
        o.theta0 = o.theta_e;
        o.theta1 = 0.0;
        o.reach = IK_REACH_TOO_FAR;
    } else if (D < fabs(A - B) - slack) {
        /* Too close: folded, the longer link towards the target. These are
         * the limits of the reachable answer at d = |l1 - l2|. */
        o.theta0 = o.theta_e + (l1 >= l2 ? 0.0 : s * IK_PI);
        o.theta1 = -s * IK_PI;
        o.reach = IK_REACH_TOO_CLOSE;
    } else {
        double theta_a, theta_1mag;
        if (D > 0.0) {
            double k4 = four_area(A, B, D);
            /* cos(theta_a) = (d^2 + l1^2 - l2^2) / (2 l1 d),
             * sin(theta_a) = 2K / (l1 d): common factor 1 / (2 l1 d). */
            theta_a = atan2(k4, D * D + (A - B) * (A + B));
            /* theta_1 = pi - theta_b with cos(theta_b) =
             * (l1^2 + l2^2 - d^2) / (2 l1 l2): pi - atan2(s, c) = atan2(s, -c). */
            theta_1mag = atan2(k4, D * D - A * A - B * B);
        } else {
            /* Target on the base with l1 == l2: the limit d -> 0. */
            theta_a = IK_PI / 2.0;
            theta_1mag = IK_PI;
        }
        /* Seed code: origin at angI + ang1, joint1 at -ang2 (bend +1). */
        o.theta0 = o.theta_e + s * theta_a;
        o.theta1 = -s * theta_1mag;
        o.reach = IK_REACH_OK;
    }
    o.theta0 = ik_wrap_angle(o.theta0);
    return o;
}

static bool valid_length(double l)
{
    return isfinite(l) && l > 0.0;
}

static bool finite2(ik_vec2 v)
{
    return isfinite(v.x) && isfinite(v.y);
}

static int reach_status(ik_reach r)
{
    return r == IK_REACH_OK ? IK_OK : IK_EUNREACHABLE;
}

/* ---- two-link planar -------------------------------------------------- */

int ik_twolink2d_solve(const ik_twolink2d *p, ik_twolink2d_result *out)
{
    if (!valid_length(p->l1) || !valid_length(p->l2) || (p->bend != 1 && p->bend != -1))
        return IK_EINVAL;
    if (!finite2(p->base) || !finite2(p->target))
        return IK_EINVAL;
    ik_vec2 e = ik_v2(p->target.x - p->base.x, p->target.y - p->base.y);
    if (!finite2(e))
        return IK_EINVAL;

    twolink_angles ang = twolink_core(p->l1, p->l2, e.x, e.y, p->bend);
    ik_twolink2d_result r;
    r.theta0 = ang.theta0;
    r.theta1 = ang.theta1;
    r.reach = ang.reach;
    /* Position system: pos1 = (cos, sin)(angI + ang1) * l1, then link 2. */
    double phi = ang.theta0 + ang.theta1;
    r.joints[0] = p->base;
    r.joints[1] = ik_v2(p->base.x + p->l1 * cos(ang.theta0), p->base.y + p->l1 * sin(ang.theta0));
    r.joints[2] = ik_v2(r.joints[1].x + p->l2 * cos(phi), r.joints[1].y + p->l2 * sin(phi));
    r.error = hypot(r.joints[2].x - p->target.x, r.joints[2].y - p->target.y);
    if (!finite2(r.joints[1]) || !finite2(r.joints[2]) || !isfinite(r.error))
        return IK_EINVAL;
    *out = r;
    return reach_status(r.reach);
}

/* ---- three-link planar ------------------------------------------------ */

int ik_threelink2d_solve(const ik_threelink2d *p, ik_threelink2d_result *out)
{
    if (!valid_length(p->l1) || !valid_length(p->l2) || !valid_length(p->l3) ||
        (p->bend != 1 && p->bend != -1))
        return IK_EINVAL;
    if (!finite2(p->base) || !finite2(p->target) || !finite2(p->up))
        return IK_EINVAL;
    double ul = hypot(p->up.x, p->up.y);
    if (!(ul > 0.0) || !isfinite(ul))
        return IK_EINVAL;
    ik_vec2 u = ik_v2(p->up.x / ul, p->up.y / ul);

    /* Seed: newTarget = target.position - l3 * target.up. */
    ik_vec2 pt = ik_v2(p->target.x - p->l3 * u.x, p->target.y - p->l3 * u.y);
    ik_vec2 e = ik_v2(pt.x - p->base.x, pt.y - p->base.y);
    if (!finite2(pt) || !finite2(e))
        return IK_EINVAL;

    twolink_angles ang = twolink_core(p->l1, p->l2, e.x, e.y, p->bend);
    ik_threelink2d_result r;
    r.theta0 = ang.theta0;
    r.theta1 = ang.theta1;
    /* Seed: endEffector.up = target.up, i.e. link 3's absolute angle is the
     * up vector's angle. */
    r.theta2 = ik_wrap_angle(atan2(u.y, u.x) - ang.theta0 - ang.theta1);
    r.reach = ang.reach;
    double phi = ang.theta0 + ang.theta1;
    r.joints[0] = p->base;
    r.joints[1] = ik_v2(p->base.x + p->l1 * cos(ang.theta0), p->base.y + p->l1 * sin(ang.theta0));
    r.joints[2] = ik_v2(r.joints[1].x + p->l2 * cos(phi), r.joints[1].y + p->l2 * sin(phi));
    r.joints[3] = ik_v2(r.joints[2].x + p->l3 * u.x, r.joints[2].y + p->l3 * u.y);
    r.error = hypot(r.joints[3].x - p->target.x, r.joints[3].y - p->target.y);
    if (!finite2(r.joints[1]) || !finite2(r.joints[2]) || !finite2(r.joints[3]) ||
        !isfinite(r.error))
        return IK_EINVAL;
    *out = r;
    return reach_status(r.reach);
}

/* ---- three-link in 3D ------------------------------------------------- */

/* H(a): rotation by a about the hinge axis forward x up = -x. */
static ik_quat hinge(double a)
{
    return ik_quat_from_axis_angle(ik_v3(-1.0, 0.0, 0.0), a);
}

int ik_threelink3d_solve(const ik_threelink3d *p, ik_threelink3d_result *out)
{
    if (!valid_length(p->l1) || !valid_length(p->l2) || !valid_length(p->l3) ||
        (p->bend != 1 && p->bend != -1))
        return IK_EINVAL;
    if (!ik_vec3_isfinite(p->base.p) || !ik_quat_isfinite(p->base.q) ||
        !ik_vec3_isfinite(p->target) || !ik_vec3_isfinite(p->up))
        return IK_EINVAL;
    ik_quat qb = p->base.q;
    if (!(ik_quat_dot(qb, qb) > 0.0))
        return IK_EINVAL;
    qb = ik_quat_normalize(qb);
    ik_vec3 u = ik_vec3_normalize(p->up);
    if (!(ik_vec3_len2(u) > 0.0))
        return IK_EINVAL;

    /* Everything in O's local frame (seed: "make sure that everything is
     * calculated locally"): E_L = E - O, rotated into O's axes. */
    ik_quat qi = ik_quat_conj(qb);
    ik_vec3 el = ik_vec3_sub(p->target, p->base.p);
    if (!ik_vec3_isfinite(el))
        return IK_EINVAL;
    el = ik_quat_rotate(qi, el);
    u = ik_quat_rotate(qi, u);
    /* P_T = E_L - l3 E_y. */
    ik_vec3 pt = ik_vec3_madd(el, u, -p->l3);
    if (!ik_vec3_isfinite(pt))
        return IK_EINVAL;

    /* theta_y = atan2(x_T, z_T); r_T = sqrt(x_T^2 + z_T^2); the working
     * plane has coordinates (r_T, y_T). */
    double yaw = (pt.x != 0.0 || pt.z != 0.0) ? atan2(pt.x, pt.z) : 0.0;
    double r_t = hypot(pt.x, pt.z);
    twolink_angles ang = twolink_core(p->l1, p->l2, r_t, pt.y, p->bend);
    double te = ang.theta_e;

    /* The roll-free frame on the axis O -> P_T: O_z = p (towards P_T),
     * O_y = the working plane's up tilted perpendicular to p, O_x = the
     * yawed left axis (the hinge normal). */
    double sy = sin(yaw), cy = cos(yaw), se = sin(te), ce = cos(te);
    ik_vec3 ox = ik_v3(cy, 0.0, -sy);
    ik_vec3 oy = ik_v3(-se * sy, ce, -se * cy);
    ik_vec3 oz = ik_v3(ce * sy, se, ce * cy);
    /* Seed: beta = atan2(E_y . O_y, E_y . O_x); the applied roll turns O_y
     * onto E_y's part perpendicular to p: roll = beta - pi/2. */
    double ex = ik_vec3_dot(u, ox), ey = ik_vec3_dot(u, oy);
    double roll = 0.0;
    if (hypot(ex, ey) > PLANAR_TINY_ROLL)
        roll = ik_wrap_angle(atan2(ey, ex) - IK_PI / 2.0);

    /* Bone system, in the documented order. */
    ik_quat q_roll = ik_quat_from_axis_angle(oz, roll);
    ik_quat q_yaw = ik_quat_from_axis_angle(ik_v3(0.0, 1.0, 0.0), yaw);
    ik_quat r1 = ik_quat_mul(q_roll, ik_quat_mul(q_yaw, hinge(ang.theta0)));
    ik_quat h1 = hinge(ang.theta1);
    ik_quat r2 = ik_quat_mul(r1, h1);
    /* Seed: j_y = J_y . E_y, j_z = J_z . E_y, theta_2 = atan2 of them, in
     * the third joint's frame before its own rotation. The seed's links run
     * along J_y (Unity bones point up); ikd's run along J_z, so the angle
     * from the link towards J_y is atan2(J_y . E_y, J_z . E_y). */
    ik_vec3 jy = ik_quat_rotate(r2, ik_v3(0.0, 1.0, 0.0));
    ik_vec3 jz = ik_quat_rotate(r2, ik_v3(0.0, 0.0, 1.0));
    double theta2 = atan2(ik_vec3_dot(jy, u), ik_vec3_dot(jz, u));
    ik_quat h2 = hinge(theta2);
    ik_quat r3 = ik_quat_mul(r2, h2);

    ik_threelink3d_result r;
    r.yaw = ik_wrap_angle(yaw);
    r.theta0 = ang.theta0;
    r.theta1 = ang.theta1;
    r.theta2 = ik_wrap_angle(theta2);
    r.roll = roll;
    r.reach = ang.reach;
    r.local[0] = r1;
    r.local[1] = h1;
    r.local[2] = h2;
    r.world[0] = ik_quat_mul(qb, r1);
    r.world[1] = ik_quat_mul(qb, r2);
    r.world[2] = ik_quat_mul(qb, r3);

    ik_vec3 j1 = ik_quat_rotate(r1, ik_v3(0.0, 0.0, p->l1));
    ik_vec3 j2 = ik_vec3_add(j1, ik_quat_rotate(r2, ik_v3(0.0, 0.0, p->l2)));
    ik_vec3 j3 = ik_vec3_add(j2, ik_quat_rotate(r3, ik_v3(0.0, 0.0, p->l3)));
    r.joints[0] = p->base.p;
    r.joints[1] = ik_vec3_add(p->base.p, ik_quat_rotate(qb, j1));
    r.joints[2] = ik_vec3_add(p->base.p, ik_quat_rotate(qb, j2));
    r.joints[3] = ik_vec3_add(p->base.p, ik_quat_rotate(qb, j3));
    r.error = ik_vec3_dist(r.joints[3], p->target);
    for (int i = 1; i < 4; i++)
        if (!ik_vec3_isfinite(r.joints[i]))
            return IK_EINVAL;
    if (!isfinite(r.error))
        return IK_EINVAL;
    *out = r;
    return reach_status(r.reach);
}
