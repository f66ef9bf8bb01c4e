/*
 * test_ik_math.c: every function of solver/ik_math.h on its own, with worked
 * values computed by hand, plus the degenerate inputs the header documents.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_math.h"
#include "solver/ik_linalg_internal.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"

#define TOL 1e-12

static void assert_vec(ik_vec3 a, double x, double y, double z, double tol)
{
    ck_assert_double_eq_tol(a.x, x, tol);
    ck_assert_double_eq_tol(a.y, y, tol);
    ck_assert_double_eq_tol(a.z, z, tol);
}

START_TEST(test_cross_dot)
{
    ik_vec3 c = ik_vec3_cross(ik_v3(1, 2, 3), ik_v3(4, 5, 6));
    assert_vec(c, -3, 6, -3, TOL);
    ck_assert_double_eq_tol(ik_vec3_dot(ik_v3(1, 2, 3), ik_v3(4, 5, 6)), 32, TOL);
    ck_assert_double_eq_tol(ik_vec3_len(ik_v3(3, 4, 12)), 13, TOL);
    ck_assert_double_eq_tol(ik_vec3_len(ik_v3(3e200, 4e200, 0)), 5e200, 1e188);
}
END_TEST

START_TEST(test_normalize_degenerate)
{
    assert_vec(ik_vec3_normalize(ik_v3(0, 0, 0)), 0, 0, 0, 1e-300);
    assert_vec(ik_vec3_normalize(ik_v3(NAN, 1, 0)), 0, 0, 0, 1e-300);
    assert_vec(ik_vec3_normalize(ik_v3(0, 0, 2)), 0, 0, 1, TOL);
    ik_quat q = ik_quat_normalize((ik_quat){0, 0, 0, 0});
    ck_assert_double_eq(q.w, 1.0);
}
END_TEST

START_TEST(test_perpendicular)
{
    ik_vec3 dirs[] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}, {-3, 0.1, 2}};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        ik_vec3 p = ik_vec3_any_perpendicular(dirs[i]);
        ck_assert_double_eq_tol(ik_vec3_dot(p, dirs[i]), 0, 1e-12);
        ck_assert_double_eq_tol(ik_vec3_len(p), 1, 1e-12);
    }
    assert_vec(ik_vec3_reject(ik_v3(1, 2, 3), ik_v3(0, 0, 1)), 1, 2, 0, TOL);
}
END_TEST

START_TEST(test_quat_rotate_axis_angle)
{
    ik_quat q = ik_quat_from_axis_angle(ik_v3(0, 0, 1), IK_PI / 2);
    assert_vec(ik_quat_rotate(q, ik_v3(1, 0, 0)), 0, 1, 0, TOL);
    q = ik_quat_from_axis_angle(ik_v3(1, 0, 0), IK_PI / 2);
    assert_vec(ik_quat_rotate(q, ik_v3(0, 1, 0)), 0, 0, 1, TOL);
    /* composition order: mul(a, b) applies b first */
    ik_quat a = ik_quat_from_axis_angle(ik_v3(0, 0, 1), IK_PI / 2);
    ik_quat b = ik_quat_from_axis_angle(ik_v3(0, 1, 0), IK_PI / 2);
    assert_vec(ik_quat_rotate(ik_quat_mul(a, b), ik_v3(1, 0, 0)), 0, 0, -1, TOL);
    assert_vec(ik_quat_rotate(ik_quat_mul(b, a), ik_v3(1, 0, 0)), 0, 1, 0, TOL);
}
END_TEST

START_TEST(test_quat_between)
{
    srand(7);
    for (int i = 0; i < 1000; i++) {
        ik_vec3 u = ik_v3(rand() / (double)RAND_MAX - 0.5, rand() / (double)RAND_MAX - 0.5,
                          rand() / (double)RAND_MAX - 0.5);
        ik_vec3 v = ik_v3(rand() / (double)RAND_MAX - 0.5, rand() / (double)RAND_MAX - 0.5,
                          rand() / (double)RAND_MAX - 0.5);
        ik_quat q = ik_quat_between(u, v);
        ik_vec3 r = ik_quat_rotate(q, ik_vec3_normalize(u));
        ik_vec3 vn = ik_vec3_normalize(v);
        assert_vec(r, vn.x, vn.y, vn.z, 1e-9);
        /* minimal: the angle is the angle between the directions */
        double ang = ik_vec3_len(ik_quat_to_rotvec(q));
        ck_assert_double_eq_tol(ang, ik_acos_clamped(ik_vec3_dot(ik_vec3_normalize(u), vn)),
                                1e-7);
    }
    /* near parallel and near opposite, where an angle from acos or a half
     * angle from 1 +- cos would lose its digits: the quaternion is unit,
     * its angle right to rounding, and it takes u onto v to rounding near
     * parallel; near opposite the axis u x v itself is only known to
     * rounding / sin(angle) (u's image is held to rounding by
     * test_quat_between_near_opposite) */
    for (int e = 1; e <= 14; e++) {
        double d = pow(10.0, -e);
        for (int side = 0; side < 2; side++) {
            double ang = side ? IK_PI - d : d;
            ik_vec3 u = ik_vec3_normalize(ik_v3(0.3, -0.5, 0.8));
            ik_vec3 n = ik_vec3_any_perpendicular(u);
            ik_vec3 v = ik_quat_rotate(ik_quat_from_axis_angle(n, ang), u);
            ik_quat q = ik_quat_between(u, v);
            ik_vec3 r = ik_quat_rotate(q, u);
            assert_vec(r, v.x, v.y, v.z, side && 1e-15 / d > 1e-13 ? 1e-15 / d : 1e-13);
            ck_assert_double_eq_tol(sqrt(ik_quat_dot(q, q)), 1.0, 1e-15);
            ck_assert_double_eq_tol(ik_vec3_len(ik_quat_to_rotvec(q)), ang, 1e-12);
            /* the axis: u x v's direction */
            if (ang > 1e-8 && ang < IK_PI - 1e-8) {
                ik_vec3 ax = ik_vec3_normalize(ik_v3(q.x, q.y, q.z));
                ik_vec3 want = ik_vec3_normalize(ik_vec3_cross(u, v));
                assert_vec(ax, want.x, want.y, want.z, 1e-6);
            }
        }
    }
    ik_quat h = ik_quat_between(ik_v3(1, 0, 0), ik_v3(-1, 0, 0));
    assert_vec(ik_quat_rotate(h, ik_v3(1, 0, 0)), -1, 0, 0, 1e-12);
    ik_quat z = ik_quat_between(ik_v3(0, 0, 0), ik_v3(1, 0, 0));
    ck_assert_double_eq(z.w, 1.0);
}
END_TEST

/* Near opposite directions u x v is only known to rounding / sin(angle),
 * but the rotation must still take u onto v: a bone that turns by almost
 * a half turn (CCD folding a chain back onto its root) gets a world
 * rotation that points it along its new direction. Random u, v a hair off
 * -u (1e-8 .. 1e-16 rad): u's image is v to rounding. */
START_TEST(test_quat_between_near_opposite)
{
    srand(11);
    double worst = 0.0;
    for (int i = 0; i < 20000; i++) {
        ik_vec3 u = ik_vec3_normalize(ik_v3(rand() / (double)RAND_MAX - 0.5,
                                            rand() / (double)RAND_MAX - 0.5,
                                            rand() / (double)RAND_MAX - 0.5));
        double eps = pow(10.0, -8.0 - 8.0 * rand() / (double)RAND_MAX);
        ik_vec3 v = ik_vec3_normalize(
            ik_vec3_add(ik_vec3_scale(u, -1.0), ik_vec3_scale(ik_vec3_any_perpendicular(u), eps)));
        ik_vec3 r = ik_quat_rotate(ik_quat_between(u, v), u);
        worst = fmax(worst, ik_vec3_len(ik_vec3_sub(r, v)));
    }
    ck_assert_msg(worst <= 1e-14, "u's image is %g off v", worst);
}
END_TEST

START_TEST(test_rpy_roundtrip)
{
    /* yaw 90 deg: x -> y */
    ik_quat q = ik_quat_from_rpy(0, 0, IK_PI / 2);
    assert_vec(ik_quat_rotate(q, ik_v3(1, 0, 0)), 0, 1, 0, TOL);
    /* fixed axes: roll first, then pitch, then yaw */
    q = ik_quat_from_rpy(IK_PI / 2, 0, IK_PI / 2);
    assert_vec(ik_quat_rotate(q, ik_v3(0, 1, 0)), 0, 0, 1, TOL);
    double r, p, y;
    ik_quat_to_rpy(ik_quat_from_rpy(0.3, -0.7, 2.5), &r, &p, &y);
    ck_assert_double_eq_tol(r, 0.3, 1e-12);
    ck_assert_double_eq_tol(p, -0.7, 1e-12);
    ck_assert_double_eq_tol(y, 2.5, 1e-12);
}
END_TEST

START_TEST(test_mat3_roundtrip)
{
    ik_quat cases[] = {ik_quat_from_rpy(0.1, 0.2, 0.3), ik_quat_from_axis_angle(ik_v3(1, 0, 0), 3.1),
                       ik_quat_from_axis_angle(ik_v3(0, 1, 0), 3.1),
                       ik_quat_from_axis_angle(ik_v3(0, 0, 1), -3.1)};
    for (size_t i = 0; i < 4; i++) {
        double m[9];
        ik_quat_to_mat3(cases[i], m);
        ik_quat back = ik_quat_from_mat3(m);
        ck_assert_double_le(ik_quat_angle_between(cases[i], back), 1e-9);
    }
    double m[9];
    ik_quat_to_mat3(ik_quat_from_axis_angle(ik_v3(0, 0, 1), IK_PI / 2), m);
    ck_assert_double_eq_tol(m[1], -1, TOL); /* row 0: (0, -1, 0) */
    ck_assert_double_eq_tol(m[3], 1, TOL);
}
END_TEST

START_TEST(test_rotvec_slerp)
{
    ik_vec3 r = ik_v3(0.2, -0.4, 1.1);
    ik_vec3 back = ik_quat_to_rotvec(ik_quat_from_rotvec(r));
    assert_vec(back, r.x, r.y, r.z, 1e-12);
    ik_quat a = ik_quat_identity();
    ik_quat b = ik_quat_from_axis_angle(ik_v3(0, 0, 1), 1.0);
    ik_quat m = ik_quat_slerp(a, b, 0.25);
    ck_assert_double_eq_tol(ik_quat_angle_between(a, m), 0.25, 1e-12);
    ck_assert_double_eq_tol(ik_quat_angle_between(a, b), 1.0, 1e-12);
}
END_TEST

START_TEST(test_xform)
{
    ik_xform a = {{1, 0, 0}, ik_quat_from_axis_angle(ik_v3(0, 0, 1), IK_PI / 2)};
    ik_xform b = {{0, 2, 0}, ik_quat_identity()};
    ik_vec3 p = ik_xform_point(ik_xform_mul(a, b), ik_v3(1, 0, 0));
    /* b: (1,2,0); a: rotate -> (-2,1,0), + (1,0,0) */
    assert_vec(p, -1, 1, 0, TOL);
    ik_xform ai = ik_xform_inverse(a);
    ik_vec3 q = ik_xform_point(ai, ik_xform_point(a, ik_v3(0.3, 0.4, 0.5)));
    assert_vec(q, 0.3, 0.4, 0.5, TOL);
    assert_vec(ik_xform_dir(a, ik_v3(1, 0, 0)), 0, 1, 0, TOL);
}
END_TEST

START_TEST(test_scalars)
{
    ck_assert_double_eq(ik_clamp(NAN, -1, 1), -1);
    ck_assert_double_eq(ik_clamp(5, -1, 1), 1);
    ck_assert_double_eq_tol(ik_wrap_angle(3 * IK_PI), IK_PI, 1e-12);
    ck_assert_double_eq_tol(ik_wrap_angle(-3 * IK_PI / 2), IK_PI / 2, 1e-12);
    ck_assert_double_eq(ik_acos_clamped(1.0000001), 0.0);
    ck_assert_str_eq(ik_status_name(IK_EUNREACHABLE), "unreachable");
    ck_assert_str_eq(ik_status_name(12345), "unknown");
}
END_TEST

/* ---- one test per function not covered above --------------------------
 * Inputs are deliberately asymmetric (every component different, no zero)
 * so that a swapped or repeated component cannot pass (STYLE.md's
 * HandmadeMath tale: Result.X = Left.Z * Right.X). */

static void assert_exact(ik_vec3 a, double x, double y, double z)
{
    ck_assert_double_eq(a.x, x);
    ck_assert_double_eq(a.y, y);
    ck_assert_double_eq(a.z, z);
}

START_TEST(test_v3_constructor)
{
    ik_vec3 v = ik_v3(1.5, -2.25, 3.125);
    assert_exact(v, 1.5, -2.25, 3.125);
}
END_TEST

START_TEST(test_vec3_add_sub)
{
    ik_vec3 a = ik_v3(1, 2, 4), b = ik_v3(8, 16, 32);
    assert_exact(ik_vec3_add(a, b), 9, 18, 36);
    assert_exact(ik_vec3_sub(a, b), -7, -14, -28);
    assert_exact(ik_vec3_sub(b, a), 7, 14, 28);
}
END_TEST

START_TEST(test_vec3_scale_madd)
{
    assert_exact(ik_vec3_scale(ik_v3(1, -2, 3), 0.5), 0.5, -1, 1.5);
    /* a + b * s */
    assert_exact(ik_vec3_madd(ik_v3(1, 2, 3), ik_v3(10, 20, 40), 0.25), 3.5, 7, 13);
}
END_TEST

START_TEST(test_vec3_dot_cross_each_component)
{
    /* dot pairs x with x, y with y, z with z */
    ck_assert_double_eq(ik_vec3_dot(ik_v3(1, 10, 100), ik_v3(2, 3, 5)), 2 + 30 + 500);
    /* the basis: x cross y = z, y cross z = x, z cross x = y */
    assert_exact(ik_vec3_cross(ik_v3(1, 0, 0), ik_v3(0, 1, 0)), 0, 0, 1);
    assert_exact(ik_vec3_cross(ik_v3(0, 1, 0), ik_v3(0, 0, 1)), 1, 0, 0);
    assert_exact(ik_vec3_cross(ik_v3(0, 0, 1), ik_v3(1, 0, 0)), 0, 1, 0);
    /* (2,3,5) x (7,11,13) = (3*13-5*11, 5*7-2*13, 2*11-3*7) */
    assert_exact(ik_vec3_cross(ik_v3(2, 3, 5), ik_v3(7, 11, 13)), -16, 9, 1);
}
END_TEST

START_TEST(test_vec3_len2_dist)
{
    ck_assert_double_eq(ik_vec3_len2(ik_v3(1, 2, 3)), 14);
    ck_assert_double_eq_tol(ik_vec3_dist(ik_v3(1, 2, 3), ik_v3(4, 6, 15)), 13, TOL);
    ck_assert_double_eq(ik_vec3_dist(ik_v3(1, 2, 3), ik_v3(1, 2, 3)), 0);
    /* no overflow: the difference is 2e300 */
    ck_assert_double_eq_tol(ik_vec3_dist(ik_v3(-1e300, 0, 0), ik_v3(1e300, 0, 0)), 2e300, 1e288);
    /* no underflow */
    ck_assert_double_eq_tol(ik_vec3_len(ik_v3(3e-200, 4e-200, 0)), 5e-200, 1e-212);
    /* len: inf stays inf, zero is zero */
    ck_assert(isinf(ik_vec3_len(ik_v3(INFINITY, 1, 0))));
    ck_assert(isinf(ik_vec3_len(ik_v3(1, 0, -INFINITY))));
    ck_assert_double_eq(ik_vec3_len(ik_v3(0, 0, 0)), 0);
    /* a NaN among finite components: NaN wherever it is (the largest
     * magnitude skips it, as fmax does, and the sum of squares holds it) */
    ck_assert(isnan(ik_vec3_len(ik_v3(NAN, 3, 4))));
    ck_assert(isnan(ik_vec3_len(ik_v3(3, NAN, 4))));
    ck_assert(isnan(ik_vec3_len(ik_v3(3, 4, NAN))));
    ck_assert_double_eq(ik_vec3_len(ik_v3(NAN, NAN, NAN)), 0);
    /* the largest magnitude in any position scales alike */
    ck_assert_double_eq_tol(ik_vec3_len(ik_v3(0, 4e-200, 3e-200)), 5e-200, 1e-212);
    ck_assert_double_eq_tol(ik_vec3_len(ik_v3(-4e200, 0, -3e200)), 5e200, 1e188);
}
END_TEST

START_TEST(test_vec3_isfinite)
{
    ck_assert(ik_vec3_isfinite(ik_v3(1, -1e308, 1e-308)));
    ck_assert(!ik_vec3_isfinite(ik_v3(NAN, 0, 0)));
    ck_assert(!ik_vec3_isfinite(ik_v3(0, INFINITY, 0)));
    ck_assert(!ik_vec3_isfinite(ik_v3(0, 0, -INFINITY)));
}
END_TEST

START_TEST(test_vec3_lerp)
{
    ik_vec3 a = ik_v3(1, 2, 3), b = ik_v3(5, -6, 11);
    assert_exact(ik_vec3_lerp(a, b, 0), 1, 2, 3);
    assert_exact(ik_vec3_lerp(a, b, 1), 5, -6, 11);
    assert_exact(ik_vec3_lerp(a, b, 0.25), 2, 0, 5);
    assert_exact(ik_vec3_lerp(a, b, 2), 9, -14, 19); /* extrapolates */
}
END_TEST

START_TEST(test_vec3_normalize_each_component)
{
    assert_vec(ik_vec3_normalize(ik_v3(2, 3, 6)), 2.0 / 7, 3.0 / 7, 6.0 / 7, TOL);
    assert_vec(ik_vec3_normalize(ik_v3(-1e300, 0, 0)), -1, 0, 0, TOL);
    assert_vec(ik_vec3_normalize(ik_v3(0, 1e-300, 0)), 0, 1, 0, TOL);
    assert_exact(ik_vec3_normalize(ik_v3(0, 0, INFINITY)), 0, 0, 0);
    /* reject keeps the perpendicular part, each component its own */
    assert_vec(ik_vec3_reject(ik_v3(2, 3, 5), ik_v3(1, 0, 0)), 0, 3, 5, TOL);
    assert_vec(ik_vec3_reject(ik_v3(2, 3, 5), ik_v3(0, 1, 0)), 2, 0, 5, TOL);
    /* any_perpendicular of zero is (1,0,0) as documented */
    assert_exact(ik_vec3_any_perpendicular(ik_v3(0, 0, 0)), 1, 0, 0);
}
END_TEST

START_TEST(test_quat_identity_conj_dot)
{
    ik_quat i = ik_quat_identity();
    ck_assert(i.x == 0 && i.y == 0 && i.z == 0 && i.w == 1);
    ik_quat q = {1, 2, 3, 4};
    ik_quat c = ik_quat_conj(q);
    ck_assert(c.x == -1 && c.y == -2 && c.z == -3 && c.w == 4);
    ck_assert_double_eq(ik_quat_dot(q, (ik_quat){5, 6, 7, 8}), 5 + 12 + 21 + 32);
    /* q * conj(q) = |q|^2 (real) */
    ik_quat n = ik_quat_mul(q, c);
    ck_assert(n.x == 0 && n.y == 0 && n.z == 0 && n.w == 30);
}
END_TEST

START_TEST(test_quat_mul_by_hand)
{
    /* Hamilton product of (x,y,z,w) = (1,2,3,4) and (5,6,7,8):
     * w = 4*8 - (1*5 + 2*6 + 3*7) = 32 - 38 = -6
     * v = 4*(5,6,7) + 8*(1,2,3) + (1,2,3) x (5,6,7)
     *   = (20,24,28) + (8,16,24) + (-4,8,-4) = (24,48,48) */
    ik_quat r = ik_quat_mul((ik_quat){1, 2, 3, 4}, (ik_quat){5, 6, 7, 8});
    ck_assert_double_eq(r.x, 24);
    ck_assert_double_eq(r.y, 48);
    ck_assert_double_eq(r.z, 48);
    ck_assert_double_eq(r.w, -6);
    /* i*j = k, j*k = i, k*i = j, j*i = -k */
    ik_quat I = {1, 0, 0, 0}, J = {0, 1, 0, 0}, K = {0, 0, 1, 0};
    r = ik_quat_mul(I, J);
    ck_assert(r.x == 0 && r.y == 0 && r.z == 1 && r.w == 0);
    r = ik_quat_mul(J, K);
    ck_assert(r.x == 1 && r.y == 0 && r.z == 0 && r.w == 0);
    r = ik_quat_mul(K, I);
    ck_assert(r.x == 0 && r.y == 1 && r.z == 0 && r.w == 0);
    r = ik_quat_mul(J, I);
    ck_assert(r.x == 0 && r.y == 0 && r.z == -1 && r.w == 0);
}
END_TEST

START_TEST(test_quat_normalize_isfinite)
{
    ik_quat q = ik_quat_normalize((ik_quat){1, 2, 4, 10}); /* |q| = 11 */
    ck_assert_double_eq_tol(q.x, 1.0 / 11, TOL);
    ck_assert_double_eq_tol(q.y, 2.0 / 11, TOL);
    ck_assert_double_eq_tol(q.z, 4.0 / 11, TOL);
    ck_assert_double_eq_tol(q.w, 10.0 / 11, TOL);
    q = ik_quat_normalize((ik_quat){0, 1e300, 0, 1e300}); /* no overflow */
    ck_assert_double_eq_tol(q.y, sqrt(0.5), TOL);
    q = ik_quat_normalize((ik_quat){NAN, 0, 0, 1});
    ck_assert(q.w == 1 && q.x == 0);
    ck_assert(ik_quat_isfinite((ik_quat){1, 2, 3, 4}));
    ck_assert(!ik_quat_isfinite((ik_quat){1, 2, 3, NAN}));
    ck_assert(!ik_quat_isfinite((ik_quat){INFINITY, 2, 3, 4}));
    ck_assert(!ik_quat_isfinite((ik_quat){1, -INFINITY, 3, 4}));
    ck_assert(!ik_quat_isfinite((ik_quat){1, 2, NAN, 4}));
}
END_TEST

START_TEST(test_quat_axis_angle_each_axis)
{
    /* rotating each basis vector by a quarter turn about each axis */
    ik_quat qx = ik_quat_from_axis_angle(ik_v3(2, 0, 0), IK_PI / 2); /* non-unit axis */
    ik_quat qy = ik_quat_from_axis_angle(ik_v3(0, 3, 0), IK_PI / 2);
    ik_quat qz = ik_quat_from_axis_angle(ik_v3(0, 0, 4), IK_PI / 2);
    assert_vec(ik_quat_rotate(qx, ik_v3(0, 0, 1)), 0, -1, 0, TOL);
    assert_vec(ik_quat_rotate(qy, ik_v3(0, 0, 1)), 1, 0, 0, TOL);
    assert_vec(ik_quat_rotate(qy, ik_v3(1, 0, 0)), 0, 0, -1, TOL);
    assert_vec(ik_quat_rotate(qz, ik_v3(0, 1, 0)), -1, 0, 0, TOL);
    /* components: sin(a/2) axis, cos(a/2) */
    ik_quat q = ik_quat_from_axis_angle(ik_v3(0, 0, 1), 1.0);
    ck_assert_double_eq_tol(q.z, sin(0.5), TOL);
    ck_assert_double_eq_tol(q.w, cos(0.5), TOL);
    /* zero axis, non-finite angle: identity */
    q = ik_quat_from_axis_angle(ik_v3(0, 0, 0), 1.0);
    ck_assert(q.w == 1 && q.x == 0 && q.y == 0 && q.z == 0);
    q = ik_quat_from_axis_angle(ik_v3(1, 0, 0), NAN);
    ck_assert(q.w == 1);
    /* rotate keeps the length, moves an off-axis vector as by hand */
    assert_vec(ik_quat_rotate(qz, ik_v3(2, 3, 5)), -3, 2, 5, TOL);
}
END_TEST

START_TEST(test_quat_rotvec_by_hand)
{
    /* a quarter turn about y: rotation vector (0, pi/2, 0) */
    ik_vec3 r = ik_quat_to_rotvec(ik_quat_from_axis_angle(ik_v3(0, 1, 0), IK_PI / 2));
    assert_vec(r, 0, IK_PI / 2, 0, TOL);
    /* the longer way round is folded: -q gives the same rotation vector */
    ik_quat q = ik_quat_from_axis_angle(ik_v3(1, 0, 0), 0.5);
    ik_quat nq = {-q.x, -q.y, -q.z, -q.w};
    assert_vec(ik_quat_to_rotvec(nq), 0.5, 0, 0, TOL);
    /* an angle beyond pi comes back in [0, pi] about the opposite axis */
    assert_vec(ik_quat_to_rotvec(ik_quat_from_axis_angle(ik_v3(0, 0, 1), 1.5 * IK_PI)), 0, 0,
               -0.5 * IK_PI, TOL);
    /* tiny angles */
    ik_quat t = ik_quat_from_rotvec(ik_v3(1e-14, -2e-14, 3e-14));
    assert_vec(ik_quat_to_rotvec(t), 1e-14, -2e-14, 3e-14, 1e-26);
    /* from_rotvec by hand: (0, 0, pi) is a half turn about z */
    assert_vec(ik_quat_rotate(ik_quat_from_rotvec(ik_v3(0, 0, IK_PI)), ik_v3(1, 2, 3)), -1, -2, 3,
               TOL);
}
END_TEST

START_TEST(test_quat_rpy_each_angle)
{
    /* roll alone: about x; pitch alone: about y */
    assert_vec(ik_quat_rotate(ik_quat_from_rpy(IK_PI / 2, 0, 0), ik_v3(0, 1, 0)), 0, 0, 1, TOL);
    assert_vec(ik_quat_rotate(ik_quat_from_rpy(0, IK_PI / 2, 0), ik_v3(0, 0, 1)), 1, 0, 0, TOL);
    /* to_rpy at gimbal lock (pitch = +-pi/2): the rotation is kept */
    for (int s = -1; s <= 1; s += 2) {
        ik_quat q = ik_quat_from_rpy(0.3, s * IK_PI / 2, -0.4);
        double r, p, y;
        ik_quat_to_rpy(q, &r, &p, &y);
        ck_assert_double_eq_tol(p, s * IK_PI / 2, 1e-7);
        ck_assert_double_le(ik_quat_angle_between(q, ik_quat_from_rpy(r, p, y)), 1e-7);
    }
}
END_TEST

/* ik_mat3_rotvec_error: the rotation vector of Rt R^T, as the quaternion
 * route gives it, for small errors, general rotations and errors within a
 * hair of a half turn (where it goes through the quaternion), and a
 * rotation by hand. */
START_TEST(test_mat3_rotvec_error)
{
    double Rt[9], R[9], r[3];
    /* by hand: R = identity, Rt = 0.3 rad about z -> (0, 0, 0.3) */
    ik_quat_to_mat3(ik_quat_from_axis_angle(ik_v3(0, 0, 1), 0.3), Rt);
    ik_quat_to_mat3(ik_quat_identity(), R);
    ik_mat3_rotvec_error(Rt, R, r);
    assert_vec(ik_v3(r[0], r[1], r[2]), 0, 0, 0.3, 1e-15);
    /* and the sign: the error of R = Rt against Rt' = identity is -0.3 */
    ik_mat3_rotvec_error(R, Rt, r);
    assert_vec(ik_v3(r[0], r[1], r[2]), 0, 0, -0.3, 1e-15);
    uint64_t st = 5;
    const double angles[] = {1e-9, 1e-4, 0.5, 2.0, 3.0, IK_PI - 1e-3, IK_PI - 1e-7};
    for (size_t i = 0; i < sizeof angles / sizeof angles[0]; i++)
        for (int k = 0; k < 20; k++) {
            ik_rng rg = {st++};
            ik_vec3 ax = ik_vec3_normalize(ik_v3(ik_rng_uniform(&rg, -1, 1),
                                                 ik_rng_uniform(&rg, -1, 1),
                                                 ik_rng_uniform(&rg, -1, 1)));
            ik_vec3 ax2 = ik_vec3_normalize(ik_v3(ik_rng_uniform(&rg, -1, 1),
                                                  ik_rng_uniform(&rg, -1, 1),
                                                  ik_rng_uniform(&rg, -1, 1)));
            ik_quat qa = ik_quat_from_axis_angle(ax2, ik_rng_uniform(&rg, -3, 3));
            ik_quat qt = ik_quat_mul(ik_quat_from_axis_angle(ax, angles[i]), qa);
            ik_quat_to_mat3(qt, Rt);
            ik_quat_to_mat3(qa, R);
            ik_mat3_rotvec_error(Rt, R, r);
            ik_vec3 want = ik_quat_to_rotvec(ik_quat_mul(qt, ik_quat_conj(qa)));
            double tol = angles[i] > 3.0 ? 1e-7 : 1e-12;
            ck_assert_msg(ik_vec3_dist(ik_v3(r[0], r[1], r[2]), want) <= tol,
                          "angle %g: (%g %g %g) against (%g %g %g)", angles[i], r[0], r[1], r[2],
                          want.x, want.y, want.z);
            ck_assert_double_eq_tol(ik_vec3_len(ik_v3(r[0], r[1], r[2])), angles[i], tol);
        }
}
END_TEST

START_TEST(test_quat_mat3_entries)
{
    /* every entry of a general rotation against Rz(yaw) Ry(pitch) Rx(roll)
     * multiplied out by hand */
    double r = 0.3, p = -0.5, y = 1.1;
    double cr = cos(r), sr = sin(r), cp = cos(p), sp = sin(p), cy = cos(y), sy = sin(y);
    double want[9] = {cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
                      sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
                      -sp,     cp * sr,                cp * cr};
    double m[9];
    ik_quat_to_mat3(ik_quat_from_rpy(r, p, y), m);
    for (int k = 0; k < 9; k++)
        ck_assert_double_eq_tol(m[k], want[k], TOL);
    /* from_mat3 of that matrix: rotating a vector agrees with the matrix */
    ik_quat q = ik_quat_from_mat3(want);
    ik_vec3 v = ik_v3(2, 3, 5);
    assert_vec(ik_quat_rotate(q, v), want[0] * 2 + want[1] * 3 + want[2] * 5,
               want[3] * 2 + want[4] * 3 + want[5] * 5, want[6] * 2 + want[7] * 3 + want[8] * 5,
               TOL);
}
END_TEST

START_TEST(test_quat_angle_between_slerp)
{
    ik_quat a = ik_quat_from_axis_angle(ik_v3(1, 2, 3), 0.4);
    ik_quat b = ik_quat_mul(a, ik_quat_from_axis_angle(ik_v3(-3, 1, 0), 0.9));
    ck_assert_double_eq_tol(ik_quat_angle_between(a, b), 0.9, TOL);
    ck_assert_double_eq_tol(ik_quat_angle_between(b, a), 0.9, TOL);
    /* q and -q are the same rotation */
    ck_assert_double_eq_tol(ik_quat_angle_between(a, (ik_quat){-a.x, -a.y, -a.z, -a.w}), 0,
                            1e-7);
    /* slerp: ends, and the shorter arc when b is given as -b */
    ck_assert_double_le(ik_quat_angle_between(ik_quat_slerp(a, b, 0), a), 1e-7);
    ck_assert_double_le(ik_quat_angle_between(ik_quat_slerp(a, b, 1), b), 1e-7);
    ik_quat nb = {-b.x, -b.y, -b.z, -b.w};
    ik_quat h = ik_quat_slerp(a, nb, 0.5);
    ck_assert_double_eq_tol(ik_quat_angle_between(a, h), 0.45, TOL);
    ck_assert_double_eq_tol(ik_quat_angle_between(h, b), 0.45, TOL);
}
END_TEST

START_TEST(test_xform_identity_inverse_dir)
{
    ik_xform i = ik_xform_identity();
    assert_exact(ik_xform_point(i, ik_v3(1, 2, 3)), 1, 2, 3);
    ik_xform a = {{1, 2, 3}, ik_quat_from_axis_angle(ik_v3(1, 1, 0), 0.7)};
    ik_xform b = {{-4, 0.5, 2}, ik_quat_from_axis_angle(ik_v3(0, 1, 1), -1.2)};
    /* a * a^-1 = identity, both ways */
    ik_xform l = ik_xform_mul(a, ik_xform_inverse(a)), r = ik_xform_mul(ik_xform_inverse(a), a);
    assert_vec(l.p, 0, 0, 0, TOL);
    assert_vec(r.p, 0, 0, 0, TOL);
    ck_assert_double_le(ik_quat_angle_between(l.q, ik_quat_identity()), 1e-7);
    /* (a b) x = a (b x) */
    ik_vec3 x = ik_v3(0.3, -0.2, 0.9);
    ik_vec3 lhs = ik_xform_point(ik_xform_mul(a, b), x);
    ik_vec3 rhs = ik_xform_point(a, ik_xform_point(b, x));
    assert_vec(lhs, rhs.x, rhs.y, rhs.z, TOL);
    /* dir ignores the translation */
    ik_vec3 d = ik_xform_dir(a, x);
    ik_vec3 want = ik_quat_rotate(a.q, x);
    assert_exact(d, want.x, want.y, want.z);
}
END_TEST

START_TEST(test_scalars_each)
{
    ck_assert_double_eq(ik_clamp(-5, -1, 1), -1);
    ck_assert_double_eq(ik_clamp(0.25, -1, 1), 0.25);
    ck_assert_double_eq(ik_clamp(INFINITY, -1, 1), 1);
    ck_assert_double_eq(ik_clamp(-INFINITY, -1, 1), -1);
    ck_assert_double_eq(ik_wrap_angle(0.5), 0.5);
    ck_assert_double_eq_tol(ik_wrap_angle(-IK_PI), IK_PI, 1e-15); /* (-pi, pi] */
    ck_assert_double_eq_tol(ik_wrap_angle(7.0), 7.0 - 2 * IK_PI, 1e-15);
    ck_assert_double_eq(ik_wrap_angle(NAN), 0);
    ck_assert_double_eq(ik_wrap_angle(INFINITY), 0);
    ck_assert_double_eq(ik_acos_clamped(-1.5), IK_PI);
    ck_assert_double_eq_tol(ik_acos_clamped(0.5), IK_PI / 3, TOL);
    /* status table: every code has a name and message, unknown has both */
    const int codes[] = {IK_OK, IK_EUNREACHABLE, IK_ENOTCONV, IK_ETIMEDOUT,
                         IK_EINVAL, IK_ENOSPC, IK_ELIMITS};
    const char *names[] = {"ok", "unreachable", "not_converged", "timed_out",
                           "invalid_input", "no_space", "joint_limits"};
    for (size_t k = 0; k < 7; k++) {
        ck_assert_str_eq(ik_status_name(codes[k]), names[k]);
        ck_assert_str_ne(ik_status_message(codes[k]), "unknown status");
    }
    ck_assert_str_eq(ik_status_message(999), "unknown status");
}
END_TEST

/* splitmix64's published sequence from state 0, and the ranges of the
 * doubles drawn from it. */
START_TEST(test_rng)
{
    ik_rng r = {0};
    ck_assert(ik_rng_next(&r) == 0xe220a8397b1dcdafull);
    ck_assert(ik_rng_next(&r) == 0x6e789e6aa1b965f4ull);
    ck_assert(ik_rng_next(&r) == 0x06c45d188009454full);
    ik_rng a = {42}, b = {42};
    double lo = 1, hi = 0;
    for (int i = 0; i < 10000; i++) {
        double u = ik_rng_unit(&a);
        ck_assert(u >= 0 && u < 1);
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        double v = ik_rng_uniform(&b, -3, 5);
        ck_assert(v >= -3 && v < 5);
        ck_assert_double_eq_tol(v, -3 + 8 * u, 1e-12); /* same state, same draw */
    }
    ck_assert(lo < 0.001 && hi > 0.999);
}
END_TEST

/* ik_linalg_internal.h: the Cholesky factorization of N + lambda I, in place and
 * into another matrix, with a row stride wider than the matrix: L L^T
 * equals N + lambda I, the solve's residual is at rounding, and a matrix
 * that is not positive definite is refused. */
START_TEST(test_cholesky)
{
    ik_rng rg = {12};
    for (size_t m = 1; m <= 12; m++) {
        const size_t s = m + 3; /* a stride wider than the matrix */
        double A[12 * 15], N[12 * 15], L[12 * 15], inv[12], b[12], y[12];
        for (size_t i = 0; i < m * s; i++)
            A[i] = ik_rng_uniform(&rg, -1, 1);
        for (size_t i = 0; i < m; i++) /* N = A A^T: positive semi-definite */
            for (size_t j = 0; j < m; j++) {
                double v = 0.0;
                for (size_t k = 0; k < m; k++)
                    v += A[i * s + k] * A[j * s + k];
                N[i * s + j] = v;
            }
        const double lambda = 0.1;
        ck_assert(ik__cholesky(N, L, m, s, lambda, inv));
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j <= i; j++) {
                double v = 0.0;
                for (size_t k = 0; k <= j; k++)
                    v += (k == i ? 1.0 / inv[i] : L[i * s + k]) * (k == j ? 1.0 / inv[j] : L[j * s + k]);
                ck_assert_double_eq_tol(v, N[i * s + j] + (i == j ? lambda : 0.0), 1e-12);
            }
        }
        for (size_t i = 0; i < m; i++)
            b[i] = y[i] = ik_rng_uniform(&rg, -1, 1);
        ik__cholesky_solve(L, m, s, inv, y);
        for (size_t i = 0; i < m; i++) {
            double v = lambda * y[i];
            for (size_t j = 0; j < m; j++)
                v += N[i * s + j] * y[j];
            ck_assert_double_eq_tol(v, b[i], 1e-11);
        }
        /* in place gives the same factor */
        double M[12 * 15];
        memcpy(M, N, sizeof M);
        ck_assert(ik__cholesky(M, M, m, s, lambda, inv));
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < i; j++)
                ck_assert_double_eq(M[i * s + j], L[i * s + j]);
    }
    /* not positive definite: refused */
    double bad[4] = {1, 2, 2, 1}, Lb[4], inv[2];
    ck_assert(!ik__cholesky(bad, Lb, 2, 2, 0.0, inv));
    double nan[1] = {NAN};
    ck_assert(!ik__cholesky(nan, Lb, 1, 1, 1.0, inv));
}
END_TEST

static Suite *math_suite(void)
{
    Suite *s = suite_create("ik_math");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_cross_dot);
    tcase_add_test(tc, test_normalize_degenerate);
    tcase_add_test(tc, test_perpendicular);
    tcase_add_test(tc, test_quat_rotate_axis_angle);
    tcase_add_test(tc, test_quat_between);
    tcase_add_test(tc, test_quat_between_near_opposite);
    tcase_add_test(tc, test_rpy_roundtrip);
    tcase_add_test(tc, test_mat3_roundtrip);
    tcase_add_test(tc, test_rotvec_slerp);
    tcase_add_test(tc, test_xform);
    tcase_add_test(tc, test_scalars);
    tcase_add_test(tc, test_v3_constructor);
    tcase_add_test(tc, test_vec3_add_sub);
    tcase_add_test(tc, test_vec3_scale_madd);
    tcase_add_test(tc, test_vec3_dot_cross_each_component);
    tcase_add_test(tc, test_vec3_len2_dist);
    tcase_add_test(tc, test_vec3_isfinite);
    tcase_add_test(tc, test_vec3_lerp);
    tcase_add_test(tc, test_vec3_normalize_each_component);
    tcase_add_test(tc, test_quat_identity_conj_dot);
    tcase_add_test(tc, test_quat_mul_by_hand);
    tcase_add_test(tc, test_quat_normalize_isfinite);
    tcase_add_test(tc, test_quat_axis_angle_each_axis);
    tcase_add_test(tc, test_quat_rotvec_by_hand);
    tcase_add_test(tc, test_quat_rpy_each_angle);
    tcase_add_test(tc, test_quat_mat3_entries);
    tcase_add_test(tc, test_mat3_rotvec_error);
    tcase_add_test(tc, test_quat_angle_between_slerp);
    tcase_add_test(tc, test_xform_identity_inverse_dir);
    tcase_add_test(tc, test_scalars_each);
    tcase_add_test(tc, test_rng);
    tcase_add_test(tc, test_cholesky);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(math_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
