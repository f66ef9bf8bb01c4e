/*
 * test_ik_math.c: every function of solver/ik_math.h on its own, with worked
 * values computed by hand, plus the degenerate inputs the header documents.
 */
#include <check.h>
#include <stdlib.h>

#include "solver/ik_math.h"
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
    ik_quat h = ik_quat_between(ik_v3(1, 0, 0), ik_v3(-1, 0, 0));
    assert_vec(ik_quat_rotate(h, ik_v3(1, 0, 0)), -1, 0, 0, 1e-12);
    ik_quat z = ik_quat_between(ik_v3(0, 0, 0), ik_v3(1, 0, 0));
    ck_assert_double_eq(z.w, 1.0);
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

static Suite *math_suite(void)
{
    Suite *s = suite_create("ik_math");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_cross_dot);
    tcase_add_test(tc, test_normalize_degenerate);
    tcase_add_test(tc, test_perpendicular);
    tcase_add_test(tc, test_quat_rotate_axis_angle);
    tcase_add_test(tc, test_quat_between);
    tcase_add_test(tc, test_rpy_roundtrip);
    tcase_add_test(tc, test_mat3_roundtrip);
    tcase_add_test(tc, test_rotvec_slerp);
    tcase_add_test(tc, test_xform);
    tcase_add_test(tc, test_scalars);
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
