/*
 * test_ik_planar.c: seed 000's solvers (solver/ik_planar.h).
 *
 * Worked examples by hand (a 3-4-5 triangle, a right-angled elbow, a 3D arm
 * with 60-degree angles), then thousands of random targets per solver, each
 * answer checked by forward kinematics computed here from the returned
 * angles (planar: cumulative angles; 3D: the chain rebuilt from the angles in
 * the header's documented rotation order, and again from the returned bone
 * quaternions), never by comparing with the solver's own output. Also: the
 * seed's closest poses for unreachable targets, the bend side, and hostile
 * input (NaN, inf, 1e300, zero lengths, target on the root).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_planar.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"

#define N_RANDOM 5000

/* ---- helpers ---------------------------------------------------------- */

static ik_rng rng_state;

static double urand(void)
{
    return ik_rng_unit(&rng_state);
}
static double urange(double lo, double hi)
{
    return lo + (hi - lo) * urand();
}
static double dist2(ik_vec2 a, ik_vec2 b)
{
    return hypot(a.x - b.x, a.y - b.y);
}
static ik_vec2 polar(double r, double a)
{
    return ik_v2(r * cos(a), r * sin(a));
}
static ik_vec2 add2(ik_vec2 a, ik_vec2 b)
{
    return ik_v2(a.x + b.x, a.y + b.y);
}
/* angle difference folded into [0, pi] */
static double angdiff(double a, double b)
{
    double d = fmod(fabs(a - b), 2 * IK_PI);
    return d > IK_PI ? 2 * IK_PI - d : d;
}

/* Forward kinematics of a planar chain from cumulative angles. */
static ik_vec2 fk2(ik_vec2 base, const double *l, const double *th, int n, ik_vec2 *joints)
{
    ik_vec2 p = base;
    double phi = 0;
    if (joints)
        joints[0] = p;
    for (int i = 0; i < n; i++) {
        phi += th[i];
        p = add2(p, polar(l[i], phi));
        if (joints)
            joints[i + 1] = p;
    }
    return p;
}

/* ---- two-link: worked examples ---------------------------------------- */

START_TEST(test_twolink_by_hand)
{
    /* 3-4-5: d = 5, theta_E = 0, cos(theta_a) = (25 + 9 - 16) / (2*3*5) =
     * 0.6, theta_b = acos((9 + 16 - 25) / 24) = pi/2, theta_1 = -(pi - pi/2). */
    ik_twolink2d p = {3, 4, {0, 0}, {5, 0}, +1};
    ik_twolink2d_result r;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_OK);
    ck_assert_int_eq(r.reach, IK_REACH_OK);
    ck_assert_double_eq_tol(r.theta0, acos(0.6), 1e-14);
    ck_assert_double_eq_tol(r.theta1, -IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(r.joints[1].x, 1.8, 1e-14);
    ck_assert_double_eq_tol(r.joints[1].y, 2.4, 1e-14);
    ck_assert_double_eq_tol(r.joints[2].x, 5, 1e-14);
    ck_assert_double_eq_tol(r.joints[2].y, 0, 1e-14);
    ck_assert_double_eq_tol(r.error, 0, 1e-14);
    /* bend -1 mirrors it */
    p.bend = -1;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.theta0, -acos(0.6), 1e-14);
    ck_assert_double_eq_tol(r.theta1, IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(r.joints[1].y, -2.4, 1e-14);

    /* unit links, target (1, 1) from base (2, -1): theta_E = pi/4,
     * theta_a = acos(2 / (2 sqrt 2)) = pi/4, theta0 = pi/2, elbow (2, 0),
     * theta_1 = -(pi - acos(0)) = -pi/2 */
    ik_twolink2d q = {1, 1, {2, -1}, {3, 0}, +1};
    ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_OK);
    ck_assert_double_eq_tol(r.theta0, IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(r.theta1, -IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(r.joints[1].x, 2, 1e-14);
    ck_assert_double_eq_tol(r.joints[1].y, 0, 1e-14);
    ck_assert_double_eq(r.joints[0].x, 2);
}
END_TEST

START_TEST(test_twolink_unreachable_by_hand)
{
    ik_twolink2d p = {3, 4, {1, 1}, {1, 11}, +1};
    ik_twolink2d_result r;
    /* too far: straight up towards (1, 11): end at (1, 8), error 3 */
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
    ck_assert_int_eq(r.reach, IK_REACH_TOO_FAR);
    ck_assert_double_eq_tol(r.theta0, IK_PI / 2, 1e-14);
    ck_assert_double_eq(r.theta1, 0);
    ck_assert_double_eq_tol(r.joints[2].x, 1, 1e-14);
    ck_assert_double_eq_tol(r.joints[2].y, 8, 1e-14);
    ck_assert_double_eq_tol(r.error, 3, 1e-14);
    /* too close (d = 0.5 < 1) with l2 longer: link 2 towards the target,
     * link 1 away: elbow at (1, -2), end at (1, 2), error 0.5 */
    p.target = ik_v2(1, 1.5);
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
    ck_assert_int_eq(r.reach, IK_REACH_TOO_CLOSE);
    ck_assert_double_eq_tol(r.joints[1].x, 1, 1e-14);
    ck_assert_double_eq_tol(r.joints[1].y, -2, 1e-14);
    ck_assert_double_eq_tol(r.joints[2].y, 2, 1e-14);
    ck_assert_double_eq_tol(r.error, 0.5, 1e-14);
    /* l1 longer: link 1 towards the target, link 2 folded back */
    p.l1 = 4;
    p.l2 = 3;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
    ck_assert_double_eq_tol(r.joints[1].y, 5, 1e-14);
    ck_assert_double_eq_tol(r.joints[2].y, 2, 1e-14);
}
END_TEST

/* ---- two-link: random ------------------------------------------------- */

START_TEST(test_twolink_random_fk)
{
    rng_state.s = 10;
    for (int i = 0; i < N_RANDOM; i++) {
        ik_twolink2d p;
        p.l1 = urange(0.1, 2);
        p.l2 = urange(0.1, 2);
        p.base = ik_v2(urange(-5, 5), urange(-5, 5));
        double lo = fabs(p.l1 - p.l2), hi = p.l1 + p.l2;
        double d = urange(lo + 1e-9, hi - 1e-9);
        p.target = add2(p.base, polar(d, urange(-IK_PI, IK_PI)));
        p.bend = (i & 1) ? 1 : -1;
        ik_twolink2d_result r;
        ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_OK);
        double l[2] = {p.l1, p.l2}, th[2] = {r.theta0, r.theta1};
        ik_vec2 j[3];
        ik_vec2 end = fk2(p.base, l, th, 2, j);
        ck_assert_double_eq_tol(dist2(end, p.target), 0, 1e-12);
        for (int k = 0; k < 3; k++)
            ck_assert_double_eq_tol(dist2(j[k], r.joints[k]), 0, 1e-12);
        ck_assert_double_eq_tol(dist2(r.joints[1], r.joints[0]), p.l1, 1e-12);
        ck_assert_double_eq_tol(dist2(r.joints[2], r.joints[1]), p.l2, 1e-12);
        ck_assert(r.theta0 > -IK_PI && r.theta0 <= IK_PI);
        ck_assert(r.theta1 >= -IK_PI && r.theta1 <= IK_PI);
        /* bend +1: the elbow on the counter-clockwise side of base->target */
        ik_vec2 e = ik_v2(p.target.x - p.base.x, p.target.y - p.base.y);
        ik_vec2 w = ik_v2(r.joints[1].x - p.base.x, r.joints[1].y - p.base.y);
        double side = e.x * w.y - e.y * w.x;
        if (fabs(side) > 1e-9)
            ck_assert_int_eq(side > 0 ? 1 : -1, p.bend);
    }
}
END_TEST

START_TEST(test_twolink_random_unreachable)
{
    rng_state.s = 11;
    for (int i = 0; i < N_RANDOM; i++) {
        ik_twolink2d p;
        p.l1 = urange(0.1, 2);
        p.l2 = urange(0.1, 2);
        p.base = ik_v2(urange(-5, 5), urange(-5, 5));
        p.bend = (i & 2) ? 1 : -1;
        double lo = fabs(p.l1 - p.l2), hi = p.l1 + p.l2;
        bool far = (i & 1) || lo < 1e-3;
        double d = far ? hi * urange(1.001, 10) : lo * urange(0, 0.999);
        double ang = urange(-IK_PI, IK_PI);
        p.target = add2(p.base, polar(d, ang));
        ik_twolink2d_result r;
        ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
        ck_assert_int_eq(r.reach, far ? IK_REACH_TOO_FAR : IK_REACH_TOO_CLOSE);
        double l[2] = {p.l1, p.l2}, th[2] = {r.theta0, r.theta1};
        ik_vec2 j[3];
        ik_vec2 end = fk2(p.base, l, th, 2, j);
        /* the end on the ray towards the target, at l1 + l2 or |l1 - l2| */
        double want = far ? hi : lo;
        ik_vec2 expect = add2(p.base, polar(want, d > 0 ? ang : 0));
        ck_assert_double_eq_tol(dist2(end, expect), 0, 1e-12);
        ck_assert_double_eq_tol(r.error, fabs(d - want), 1e-12);
        ck_assert_double_eq_tol(dist2(end, r.joints[2]), 0, 1e-12);
        if (!far) {
            /* the longer link points towards the target */
            ik_vec2 dir = polar(1, ang);
            ik_vec2 v1 = ik_v2(j[1].x - j[0].x, j[1].y - j[0].y);
            double s1 = v1.x * dir.x + v1.y * dir.y;
            ck_assert(p.l1 >= p.l2 ? s1 > 0 : s1 < 0);
        }
    }
}
END_TEST

/* A target on the edge of the reach, computed the way a client computes
 * it (base + (l1 + l2) times a direction, or |l1 - l2| times it), lands a
 * rounding error on either side of it: the arm meets it (stretched or
 * folded, its end within rounding of the target by the FK above), so the
 * answer is IK_OK, not IK_EUNREACHABLE with an error of 1e-16. The same
 * edge for the three-link arm's two-link part. A target a billionth of
 * l1 + l2 past an edge stays out of reach. */
START_TEST(test_reach_edge_rounding)
{
    rng_state.s = 13;
    for (int i = 0; i < N_RANDOM; i++) {
        double l[3] = {urange(0.1, 2), urange(0.1, 2), urange(0.1, 2)};
        ik_vec2 base = ik_v2(urange(-5, 5), urange(-5, 5));
        const double lo = fabs(l[0] - l[1]), hi = l[0] + l[1];
        const bool far = (i & 1) || lo < 1e-3;
        const double ang = urange(-IK_PI, IK_PI), upang = urange(-IK_PI, IK_PI);
        const int bend = (i & 2) ? 1 : -1;
        for (int past = 0; past < 2; past++) {
            const double d = (far ? hi : lo) + (past ? (far ? 1e-9 : -1e-9) * hi : 0.0);
            ik_twolink2d p = {l[0], l[1], base, add2(base, polar(d, ang)), bend};
            ik_twolink2d_result r;
            int st = ik_twolink2d_solve(&p, &r);
            double th[2] = {r.theta0, r.theta1};
            double miss = dist2(fk2(base, l, th, 2, NULL), p.target);
            if (past) {
                ck_assert_int_eq(st, IK_EUNREACHABLE);
                ck_assert_double_gt(miss, 1e-10 * hi);
                continue;
            }
            ck_assert_msg(st == IK_OK, "two-link, %s: the end %g from the target, status %d",
                          far ? "stretched" : "folded", miss, st);
            ck_assert_double_le(miss, 1e-12 * hi + 1e-14);
            ik_threelink2d q = {l[0], l[1], l[2], base,
                                add2(p.target, polar(l[2], upang)), polar(1.0, upang), bend};
            ik_threelink2d_result r3;
            st = ik_threelink2d_solve(&q, &r3);
            double th3[3] = {r3.theta0, r3.theta1, r3.theta2};
            miss = dist2(fk2(base, l, th3, 3, NULL), q.target);
            ck_assert_msg(st == IK_OK, "three-link, %s: the end %g from the target, status %d",
                          far ? "stretched" : "folded", miss, st);
            ck_assert_double_le(miss, 1e-12 * hi + 1e-14);
        }
    }
}
END_TEST

/* ---- three-link planar ------------------------------------------------ */

START_TEST(test_threelink2d_by_hand)
{
    /* target (5, 2) pointing up with l3 = 2: P = (5, 0), then the 3-4-5
     * triangle; link 3 at pi/2 absolute: theta2 = pi/2 - acos(0.6) + pi/2 */
    ik_threelink2d p = {3, 4, 2, {0, 0}, {5, 2}, {0, 7}, +1};
    ik_threelink2d_result r;
    ck_assert_int_eq(ik_threelink2d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.theta0, acos(0.6), 1e-14);
    ck_assert_double_eq_tol(r.theta1, -IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(r.theta2, IK_PI - acos(0.6), 1e-14);
    ck_assert_double_eq_tol(r.joints[2].x, 5, 1e-14);
    ck_assert_double_eq_tol(r.joints[2].y, 0, 1e-14);
    ck_assert_double_eq_tol(r.joints[3].y, 2, 1e-14);
    /* the up vector as an angle */
    p.up = ik_vec2_from_angle(IK_PI / 2);
    ck_assert_int_eq(ik_threelink2d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.theta2, IK_PI - acos(0.6), 1e-14);
}
END_TEST

START_TEST(test_threelink2d_random_fk)
{
    rng_state.s = 12;
    int unreachable = 0;
    for (int i = 0; i < N_RANDOM; i++) {
        ik_threelink2d p;
        p.l1 = urange(0.1, 2);
        p.l2 = urange(0.1, 2);
        p.l3 = urange(0.1, 2);
        p.base = ik_v2(urange(-5, 5), urange(-5, 5));
        p.bend = (i & 1) ? 1 : -1;
        double upang = urange(-IK_PI, IK_PI);
        p.up = polar(urange(0.1, 10), upang);
        /* build a reachable target: pick P in reach, E = P + l3 up; every
         * fourth one anywhere (maybe unreachable) */
        double lo = fabs(p.l1 - p.l2), hi = p.l1 + p.l2;
        ik_vec2 P = add2(p.base, polar(urange(lo + 1e-9, hi - 1e-9), urange(-IK_PI, IK_PI)));
        bool any = (i % 4 == 3);
        if (any)
            P = add2(p.base, ik_v2(urange(-6, 6), urange(-6, 6)));
        p.target = add2(P, polar(p.l3, upang));
        ik_threelink2d_result r;
        int st = ik_threelink2d_solve(&p, &r);
        double l[3] = {p.l1, p.l2, p.l3}, th[3] = {r.theta0, r.theta1, r.theta2};
        ik_vec2 j[4];
        ik_vec2 end = fk2(p.base, l, th, 3, j);
        /* link 3 along up in every case */
        ck_assert_double_eq_tol(angdiff(r.theta0 + r.theta1 + r.theta2, upang), 0, 1e-12);
        for (int k = 0; k < 4; k++)
            ck_assert_double_eq_tol(dist2(j[k], r.joints[k]), 0, 1e-12);
        ck_assert_double_eq_tol(dist2(end, p.target), r.error, 1e-12);
        if (st == IK_OK) {
            ck_assert_double_eq_tol(dist2(end, p.target), 0, 1e-12);
        } else {
            ck_assert(any);
            ck_assert_int_eq(st, IK_EUNREACHABLE);
            unreachable++;
            /* the two-link part's closest pose towards P */
            double d = dist2(P, p.base);
            double want = d > hi ? hi : lo;
            ck_assert_double_eq_tol(dist2(j[2], p.base), want, 1e-12);
            ck_assert_double_eq_tol(dist2(j[2], P), fabs(d - want), 1e-12);
        }
    }
    ck_assert(unreachable > 50);
}
END_TEST

/* ---- three-link in 3D ------------------------------------------------- */

static ik_vec3 qrot(ik_quat q, ik_vec3 v)
{
    return ik_quat_rotate(q, v);
}
static ik_quat axis_angle(ik_vec3 axis, double a)
{
    return ik_quat_from_axis_angle(axis, a);
}

/* The chain rebuilt from the returned angles, in the header's order:
 * R1 = Rp(roll) Ry(yaw) H(theta0), R2 = R1 H(theta1), R3 = R2 H(theta2),
 * H(a) about -x, links along +z; p = unit(P_T) in the base frame. */
static void fk3d_angles(const ik_threelink3d *p, const ik_threelink3d_result *r, ik_vec3 *j)
{
    ik_quat qb = p->base.q;
    ik_vec3 el = qrot(ik_quat_conj(qb), ik_vec3_sub(p->target, p->base.p));
    ik_vec3 u = qrot(ik_quat_conj(qb), ik_vec3_normalize(p->up));
    ik_vec3 pt = ik_vec3_sub(el, ik_vec3_scale(u, p->l3));
    ik_vec3 axis = ik_vec3_normalize(pt);
    ik_vec3 mx = ik_v3(-1, 0, 0);
    ik_quat r1 = ik_quat_mul(axis_angle(axis, r->roll),
                             ik_quat_mul(axis_angle(ik_v3(0, 1, 0), r->yaw), axis_angle(mx, r->theta0)));
    ik_quat r2 = ik_quat_mul(r1, axis_angle(mx, r->theta1));
    ik_quat r3 = ik_quat_mul(r2, axis_angle(mx, r->theta2));
    ik_quat rs[3] = {r1, r2, r3};
    double l[3] = {p->l1, p->l2, p->l3};
    ik_vec3 x = ik_v3(0, 0, 0);
    j[0] = p->base.p;
    for (int i = 0; i < 3; i++) {
        x = ik_vec3_add(x, qrot(rs[i], ik_v3(0, 0, l[i])));
        j[i + 1] = ik_vec3_add(p->base.p, qrot(qb, x));
    }
}

/* The chain rebuilt from the returned bone quaternions. */
static void fk3d_bones(const ik_threelink3d *p, const ik_threelink3d_result *r, ik_vec3 *jw,
                       ik_vec3 *jl)
{
    double l[3] = {p->l1, p->l2, p->l3};
    ik_quat acc = p->base.q;
    jw[0] = jl[0] = p->base.p;
    for (int i = 0; i < 3; i++) {
        jw[i + 1] = ik_vec3_add(jw[i], qrot(r->world[i], ik_v3(0, 0, l[i])));
        acc = ik_quat_mul(acc, r->local[i]);
        jl[i + 1] = ik_vec3_add(jl[i], qrot(acc, ik_v3(0, 0, l[i])));
    }
}

static double vdist(ik_vec3 a, ik_vec3 b)
{
    return ik_vec3_len(ik_vec3_sub(a, b));
}

START_TEST(test_threelink3d_by_hand)
{
    /* Unit links, base at the origin, E = (0, 1, 1) with E_y = +y:
     * P_T = (0, 0, 1), yaw = atan2(0, 1) = 0, r_T = 1, y_T = 0, d = 1,
     * theta_a = acos(1/2) = pi/3, theta1 = -(pi - pi/3); E_y lies in the
     * working plane already: beta = atan2(1, 0) = pi/2, roll 0. Joint 1 at
     * (0, sin 60, cos 60); link 2 points at -60 degrees; theta2 turns it to
     * +90: 150 degrees. */
    ik_threelink3d p = {1, 1, 1, {{0, 0, 0}, {0, 0, 0, 1}}, {0, 1, 1}, {0, 1, 0}, +1};
    ik_threelink3d_result r;
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.yaw, 0, 1e-15);
    ck_assert_double_eq_tol(r.theta0, IK_PI / 3, 1e-14);
    ck_assert_double_eq_tol(r.theta1, -2 * IK_PI / 3, 1e-14);
    ck_assert_double_eq_tol(r.theta2, 5 * IK_PI / 6, 1e-14);
    ck_assert_double_eq_tol(r.roll, 0, 1e-15);
    ck_assert_double_eq_tol(vdist(r.joints[1], ik_v3(0, sqrt(3) / 2, 0.5)), 0, 1e-14);
    ck_assert_double_eq_tol(vdist(r.joints[2], ik_v3(0, 0, 1)), 0, 1e-14);
    ck_assert_double_eq_tol(vdist(r.joints[3], ik_v3(0, 1, 1)), 0, 1e-14);

    /* The same arm with E_y = +x (left): E = (1, 0, 1), P_T = (0, 0, 1); now
     * beta = atan2(E_y . O_y, E_y . O_x) = atan2(0, 1) = 0, so the roll about
     * +z is -pi/2 and the elbow swings from +y to +x. */
    p.target = ik_v3(1, 0, 1);
    p.up = ik_v3(3, 0, 0);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.roll, -IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(vdist(r.joints[1], ik_v3(sqrt(3) / 2, 0, 0.5)), 0, 1e-14);
    ck_assert_double_eq_tol(vdist(r.joints[3], p.target), 0, 1e-14);

    /* Yaw: E = (1, 1, 0), E_y = +y: P_T = (1, 0, 0), yaw = atan2(1, 0) = pi/2 */
    p.target = ik_v3(1, 1, 0);
    p.up = ik_v3(0, 1, 0);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.yaw, IK_PI / 2, 1e-14);
    ck_assert_double_eq_tol(vdist(r.joints[1], ik_v3(0.5, sqrt(3) / 2, 0)), 0, 1e-14);
}
END_TEST

static ik_quat rand_quat(void)
{
    for (;;) {
        ik_quat q = {urange(-1, 1), urange(-1, 1), urange(-1, 1), urange(-1, 1)};
        double n = sqrt(ik_quat_dot(q, q));
        if (n > 0.1 && n <= 1)
            return ik_quat_normalize(q);
    }
}
static ik_vec3 rand_unit3(void)
{
    for (;;) {
        ik_vec3 v = ik_v3(urange(-1, 1), urange(-1, 1), urange(-1, 1));
        double n = ik_vec3_len(v);
        if (n > 0.1 && n <= 1)
            return ik_vec3_scale(v, 1 / n);
    }
}

START_TEST(test_threelink3d_random_fk)
{
    rng_state.s = 13;
    int unreachable = 0;
    for (int i = 0; i < N_RANDOM; i++) {
        ik_threelink3d p;
        p.l1 = urange(0.1, 2);
        p.l2 = urange(0.1, 2);
        p.l3 = urange(0.1, 2);
        p.base.p = ik_v3(urange(-5, 5), urange(-5, 5), urange(-5, 5));
        p.base.q = rand_quat();
        p.bend = (i & 1) ? 1 : -1;
        ik_vec3 up = rand_unit3();
        p.up = ik_vec3_scale(up, urange(0.1, 10));
        double lo = fabs(p.l1 - p.l2), hi = p.l1 + p.l2;
        ik_vec3 P = ik_vec3_add(p.base.p, ik_vec3_scale(rand_unit3(), urange(lo + 1e-9, hi - 1e-9)));
        bool any = (i % 4 == 3);
        if (any)
            P = ik_vec3_add(p.base.p, ik_v3(urange(-5, 5), urange(-5, 5), urange(-5, 5)));
        p.target = ik_vec3_add(P, ik_vec3_scale(up, p.l3));
        ik_threelink3d_result r;
        int st = ik_threelink3d_solve(&p, &r);
        ck_assert(st == IK_OK || (any && st == IK_EUNREACHABLE));

        ik_vec3 ja[4], jw[4], jl[4];
        fk3d_angles(&p, &r, ja);
        fk3d_bones(&p, &r, jw, jl);
        for (int k = 0; k < 4; k++) {
            ck_assert_double_eq_tol(vdist(ja[k], r.joints[k]), 0, 1e-11);
            ck_assert_double_eq_tol(vdist(jw[k], r.joints[k]), 0, 1e-11);
            ck_assert_double_eq_tol(vdist(jl[k], r.joints[k]), 0, 1e-11);
        }
        /* links keep their lengths; link 3 along E_y */
        ck_assert_double_eq_tol(vdist(ja[1], ja[0]), p.l1, 1e-12);
        ck_assert_double_eq_tol(vdist(ja[2], ja[1]), p.l2, 1e-12);
        ik_vec3 l3dir = ik_vec3_scale(ik_vec3_sub(ja[3], ja[2]), 1 / p.l3);
        ck_assert_double_eq_tol(vdist(l3dir, up), 0, 1e-11);
        /* every link and E_y in one plane: the hinge axes are all the same */
        ik_vec3 hinge = qrot(r.world[0], ik_v3(1, 0, 0));
        for (int k = 1; k < 3; k++)
            ck_assert_double_eq_tol(vdist(qrot(r.world[k], ik_v3(1, 0, 0)), hinge), 0, 1e-12);
        for (int k = 0; k < 3; k++)
            ck_assert_double_eq_tol(ik_vec3_dot(ik_vec3_sub(ja[k + 1], ja[k]), hinge), 0, 1e-11);
        ck_assert_double_eq_tol(ik_vec3_dot(up, hinge), 0, 1e-11);
        /* local rotations 2 and 3 are pure hinges by theta1, theta2 */
        ik_vec3 h1 = qrot(r.local[1], ik_v3(0, 0, 1));
        ck_assert_double_eq_tol(h1.x, 0, 1e-14);
        ck_assert_double_eq_tol(atan2(h1.y, h1.z), r.theta1, 1e-12);
        ck_assert_double_eq_tol(vdist(ja[3], p.target), r.error, 1e-11);
        if (st == IK_OK) {
            ck_assert_double_eq_tol(vdist(ja[3], p.target), 0, 1e-11);
            /* bend +1: the elbow on E_y's side of the line O -> P_T */
            ik_vec3 axis = ik_vec3_normalize(ik_vec3_sub(P, p.base.p));
            ik_vec3 e = ik_vec3_sub(ja[1], p.base.p);
            ik_vec3 side = ik_vec3_sub(e, ik_vec3_scale(axis, ik_vec3_dot(e, axis)));
            ik_vec3 uperp = ik_vec3_sub(up, ik_vec3_scale(axis, ik_vec3_dot(up, axis)));
            double s = ik_vec3_dot(side, uperp);
            if (fabs(s) > 1e-6)
                ck_assert_int_eq(s > 0 ? 1 : -1, p.bend);
        } else {
            unreachable++;
            double d = vdist(P, p.base.p);
            double want = d > hi ? hi : lo;
            ck_assert_double_eq_tol(vdist(ja[2], p.base.p), want, 1e-11);
            ck_assert_double_eq_tol(vdist(ja[2], P), fabs(d - want), 1e-11);
        }
    }
    ck_assert(unreachable > 50);
}
END_TEST

/* ---- degenerate and hostile input ------------------------------------- */

START_TEST(test_planar_degenerate)
{
    ik_twolink2d_result r;
    /* target on the base, equal links: reachable, elbow at +-pi/2 */
    ik_twolink2d p = {2, 2, {1, 1}, {1, 1}, +1};
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.theta0, IK_PI / 2, 1e-15);
    ck_assert_double_eq_tol(dist2(r.joints[2], p.target), 0, 1e-15);
    /* target on the base, unequal links: too close along +x */
    p.l2 = 3;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
    ck_assert_double_eq_tol(r.joints[2].x, 2, 1e-15);
    ck_assert_double_eq_tol(r.joints[2].y, 1, 1e-15);
    ck_assert_double_eq_tol(r.error, 1, 1e-15);
    /* -0.0 offset: still the documented +x */
    ik_twolink2d z = {3, 2, {0, 0}, {-0.0, 0}, -1};
    ck_assert_int_eq(ik_twolink2d_solve(&z, &r), IK_EUNREACHABLE);
    ck_assert_double_eq_tol(r.joints[2].x, 1, 1e-15);

    /* invalid: each leaves the result untouched */
    const double bad[] = {0, -1, NAN, INFINITY, -INFINITY};
    ik_twolink2d_result before;
    memset(&r, 0x5a, sizeof r);
    before = r;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ik_twolink2d q = {1, 1, {0, 0}, {1, 0}, 1};
        q.l1 = bad[k];
        ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_EINVAL);
        q.l1 = 1;
        q.l2 = bad[k];
        ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_EINVAL);
        if (bad[k] != 0 && bad[k] != -1) {
            q.l2 = 1;
            q.target.y = bad[k];
            ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_EINVAL);
            q.target.y = 0;
            q.base.x = bad[k];
            ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_EINVAL);
        }
    }
    ik_twolink2d q = {1, 1, {0, 0}, {1, 0}, 0};
    ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_EINVAL);
    q.bend = 2;
    ck_assert_int_eq(ik_twolink2d_solve(&q, &r), IK_EINVAL);
    /* the offset target - base overflows */
    ik_twolink2d o = {1, 1, {-1e308, 0}, {1e308, 0}, 1};
    ck_assert_int_eq(ik_twolink2d_solve(&o, &r), IK_EINVAL);
    ck_assert(memcmp(&r, &before, sizeof r) == 0);

    /* three-link: zero up */
    ik_threelink2d t3 = {1, 1, 1, {0, 0}, {1, 1}, {0, 0}, 1};
    ik_threelink2d_result r3, b3;
    memset(&r3, 0x5a, sizeof r3);
    b3 = r3;
    ck_assert_int_eq(ik_threelink2d_solve(&t3, &r3), IK_EINVAL);
    t3.up = ik_v2(NAN, 1);
    ck_assert_int_eq(ik_threelink2d_solve(&t3, &r3), IK_EINVAL);
    t3.up = ik_v2(0, 1);
    t3.l3 = 0;
    ck_assert_int_eq(ik_threelink2d_solve(&t3, &r3), IK_EINVAL);
    ck_assert(memcmp(&r3, &b3, sizeof r3) == 0);
}
END_TEST

START_TEST(test_planar_extreme_scales)
{
    static const double scales[] = {1e-300, 1e-100, 1e100, 1e300};
    rng_state.s = 14;
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        double k = scales[s];
        for (int i = 0; i < 200; i++) {
            ik_twolink2d p;
            p.l1 = k * urange(0.1, 2);
            p.l2 = k * urange(0.1, 2);
            p.base = ik_v2(k * urange(-1, 1), k * urange(-1, 1));
            double lo = fabs(p.l1 - p.l2), hi = p.l1 + p.l2;
            p.target = add2(p.base, polar(urange(lo + 1e-9 * hi, hi * (1 - 1e-9)), urange(-3, 3)));
            p.bend = 1;
            ik_twolink2d_result r;
            ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_OK);
            ck_assert_double_eq_tol(dist2(r.joints[2], p.target) / k, 0, 1e-12);
            ck_assert_double_eq_tol(dist2(r.joints[1], p.base) / k, p.l1 / k, 1e-12);
        }
    }
    /* tiny links, far target (d / l overflows): too far, finite */
    ik_twolink2d p = {1e-300, 2e-300, {0, 0}, {1e300, 1e300}, 1};
    ik_twolink2d_result r;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
    ck_assert(isfinite(r.error) && isfinite(r.theta0));
    ck_assert_double_eq_tol(r.theta0, IK_PI / 4, 1e-15);
    /* links of wildly different sizes */
    ik_twolink2d w = {1e-300, 1, {0, 0}, {0, 1}, 1};
    ck_assert_int_eq(ik_twolink2d_solve(&w, &r), IK_OK);
    ck_assert(isfinite(r.theta0) && isfinite(r.theta1));
    ck_assert_double_eq_tol(dist2(r.joints[2], w.target), 0, 1e-15);
}
END_TEST

START_TEST(test_threelink3d_degenerate)
{
    ik_threelink3d_result r, before;
    memset(&r, 0x5a, sizeof r);
    before = r;
    ik_threelink3d ok = {1, 1, 1, {{0, 0, 0}, {0, 0, 0, 1}}, {0, 1, 1}, {0, 1, 0}, 1};
    ik_threelink3d p = ok;
    p.up = ik_v3(0, 0, 0);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    p = ok;
    p.base.q = (ik_quat){0, 0, 0, 0};
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    p = ok;
    p.base.q.x = NAN;
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    p = ok;
    p.target.z = INFINITY;
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    p = ok;
    p.l2 = -1;
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    p = ok;
    p.bend = 0;
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    p = ok;
    p.base.p = ik_v3(-1e308, 0, 0);
    p.target = ik_v3(1e308, 0, 0);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_EINVAL);
    ck_assert(memcmp(&r, &before, sizeof r) == 0);

    /* P_T straight above the base: yaw 0; E_y along O -> P_T: roll 0 */
    p = ok;
    p.target = ik_v3(0, 2.5, 0);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq(r.yaw, 0);
    ck_assert_double_eq(r.roll, 0);
    ck_assert_double_eq_tol(vdist(r.joints[3], p.target), 0, 1e-14);
    /* P_T on the base (E = l3 E_y), equal links: reachable */
    p = ok;
    p.target = ik_v3(0.6, 0.8, 0);
    p.up = ik_v3(0.6, 0.8, 0);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(vdist(r.joints[2], p.base.p), 0, 1e-15);
    ck_assert_double_eq_tol(vdist(r.joints[3], p.target), 0, 1e-15);
    for (int k = 0; k < 4; k++)
        ck_assert(ik_vec3_isfinite(r.joints[k]));
    /* a non-unit base quaternion is normalised */
    p = ok;
    p.base.q = (ik_quat){0, 0, 0, 5};
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(vdist(r.joints[3], p.target), 0, 1e-14);
    /* huge: 1e300 links and target */
    p = ok;
    p.l1 = p.l2 = p.l3 = 1e300;
    p.target = ik_v3(0, 1e300, 1e300);
    ck_assert_int_eq(ik_threelink3d_solve(&p, &r), IK_OK);
    ck_assert_double_eq_tol(r.theta0, IK_PI / 3, 1e-14);
    ck_assert_double_eq_tol(vdist(ik_vec3_scale(r.joints[3], 1e-300), ik_v3(0, 1, 1)), 0, 1e-14);
}
END_TEST

static Suite *planar_suite(void)
{
    Suite *s = suite_create("ik_planar");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_twolink_by_hand);
    tcase_add_test(tc, test_twolink_unreachable_by_hand);
    tcase_add_test(tc, test_twolink_random_fk);
    tcase_add_test(tc, test_twolink_random_unreachable);
    tcase_add_test(tc, test_reach_edge_rounding);
    tcase_add_test(tc, test_threelink2d_by_hand);
    tcase_add_test(tc, test_threelink2d_random_fk);
    tcase_add_test(tc, test_threelink3d_by_hand);
    tcase_add_test(tc, test_threelink3d_random_fk);
    tcase_add_test(tc, test_planar_degenerate);
    tcase_add_test(tc, test_planar_extreme_scales);
    tcase_add_test(tc, test_threelink3d_degenerate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(planar_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
