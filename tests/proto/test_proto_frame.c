/*
 * test_proto_frame.c: frame conventions and angle units (proto_frame.h).
 * Checks the named axes of each convention, exact round trips, and the
 * identities that make a solve stated in a left-handed frame come out right:
 * converting a rotated vector equals rotating the converted vector by the
 * converted quaternion / matrix / joint axis.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/proto_frame.h"

#define TOL 1e-12

static void assert_vec(ik_vec3 a, ik_vec3 b)
{
    ck_assert_double_eq_tol(a.x, b.x, TOL);
    ck_assert_double_eq_tol(a.y, b.y, TOL);
    ck_assert_double_eq_tol(a.z, b.z, TOL);
}

static uint64_t rng = 88172645463325252ull;
static double rnd(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Rotation by the standard formula, numerically, in whatever frame. */
static ik_vec3 rot_axis_angle(ik_vec3 a, double t, ik_vec3 v)
{
    ik_vec3 k = ik_vec3_normalize(a);
    ik_vec3 c = ik_vec3_cross(k, v);
    return ik_vec3_add(ik_vec3_add(ik_vec3_scale(v, cos(t)), ik_vec3_scale(c, sin(t))),
                       ik_vec3_scale(k, ik_vec3_dot(k, v) * (1 - cos(t))));
}

START_TEST(test_named_axes)
{
    /* unity: x right, y up, z forward -> ros: x forward, y left, z up */
    assert_vec(proto_frame_vec_in(PROTO_FRAME_UNITY, ik_v3(0, 1, 0)), ik_v3(0, 0, 1));
    assert_vec(proto_frame_vec_in(PROTO_FRAME_UNITY, ik_v3(0, 0, 1)), ik_v3(1, 0, 0));
    assert_vec(proto_frame_vec_in(PROTO_FRAME_UNITY, ik_v3(1, 0, 0)), ik_v3(0, -1, 0));
    /* unreal: x forward, y right, z up */
    assert_vec(proto_frame_vec_in(PROTO_FRAME_UNREAL, ik_v3(1, 0, 0)), ik_v3(1, 0, 0));
    assert_vec(proto_frame_vec_in(PROTO_FRAME_UNREAL, ik_v3(0, 1, 0)), ik_v3(0, -1, 0));
    assert_vec(proto_frame_vec_in(PROTO_FRAME_UNREAL, ik_v3(0, 0, 1)), ik_v3(0, 0, 1));
    assert_vec(proto_frame_vec_in(PROTO_FRAME_ROS, ik_v3(1, 2, 3)), ik_v3(1, 2, 3));
    /* unreal quaternion: (-x, y, -z, w) */
    ik_quat q = proto_frame_quat_in(PROTO_FRAME_UNREAL, (ik_quat){0.1, 0.2, 0.3, 0.9});
    ck_assert_double_eq_tol(q.x, -0.1, TOL);
    ck_assert_double_eq_tol(q.y, 0.2, TOL);
    ck_assert_double_eq_tol(q.z, -0.3, TOL);
    ck_assert_double_eq_tol(q.w, 0.9, TOL);
}
END_TEST

START_TEST(test_round_trips)
{
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < 50; i++) {
            ik_vec3 v = ik_v3(rnd(), rnd(), rnd());
            assert_vec(proto_frame_vec_out(f, proto_frame_vec_in(f, v)), v);
            assert_vec(proto_frame_vec_in(f, proto_frame_vec_out(f, v)), v);
            ik_quat q = ik_quat_normalize((ik_quat){rnd(), rnd(), rnd(), rnd()});
            ik_quat r = proto_frame_quat_out(f, proto_frame_quat_in(f, q));
            ck_assert_double_eq_tol(r.x, q.x, TOL);
            ck_assert_double_eq_tol(r.y, q.y, TOL);
            ck_assert_double_eq_tol(r.z, q.z, TOL);
            ck_assert_double_eq_tol(r.w, q.w, TOL);
            ik_xform x = {v, q};
            ik_xform y = proto_frame_xform_out(f, proto_frame_xform_in(f, x));
            assert_vec(y.p, x.p);
            /* lengths are preserved */
            ck_assert_double_eq_tol(ik_vec3_len(proto_frame_vec_in(f, v)), ik_vec3_len(v), TOL);
        }
}
END_TEST

START_TEST(test_rotation_identities)
{
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < 100; i++) {
            ik_vec3 v = ik_v3(rnd(), rnd(), rnd());
            ik_quat q = ik_quat_normalize((ik_quat){rnd(), rnd(), rnd(), rnd()});
            /* M (q v) == q_ros (M v) */
            ik_vec3 lhs = proto_frame_vec_in(f, ik_quat_rotate(q, v));
            ik_vec3 rhs = ik_quat_rotate(proto_frame_quat_in(f, q), proto_frame_vec_in(f, v));
            assert_vec(lhs, rhs);
            /* the same with the rotation as a matrix */
            double m[9], mr[9];
            ik_quat_to_mat3(q, m);
            proto_frame_mat3_in(f, m, mr);
            ik_vec3 mv = proto_frame_vec_in(f, v);
            ik_vec3 r2 = ik_v3(mr[0] * mv.x + mr[1] * mv.y + mr[2] * mv.z,
                               mr[3] * mv.x + mr[4] * mv.y + mr[5] * mv.z,
                               mr[6] * mv.x + mr[7] * mv.y + mr[8] * mv.z);
            assert_vec(r2, rhs);
            /* a joint axis: rotating by t about a in the caller's frame is
             * rotating by t about axis_in(a) in ROS */
            ik_vec3 a = ik_v3(rnd(), rnd(), rnd());
            double t = 3 * rnd();
            lhs = proto_frame_vec_in(f, rot_axis_angle(a, t, v));
            rhs = ik_quat_rotate(ik_quat_from_axis_angle(proto_frame_axis_in(f, a), t),
                                 proto_frame_vec_in(f, v));
            assert_vec(lhs, rhs);
            /* the way out: M^T (q_ros w) == quat_out(q_ros) (M^T w) */
            ik_vec3 w = ik_v3(rnd(), rnd(), rnd());
            lhs = proto_frame_vec_out(f, ik_quat_rotate(q, w));
            rhs = ik_quat_rotate(proto_frame_quat_out(f, q), proto_frame_vec_out(f, w));
            assert_vec(lhs, rhs);
        }
}
END_TEST

START_TEST(test_angles)
{
    ck_assert_double_eq_tol(proto_angle_in(PROTO_UNITS_DEGREES, 180), IK_PI, TOL);
    ck_assert_double_eq_tol(proto_angle_out(PROTO_UNITS_DEGREES, IK_PI / 2), 90, TOL);
    ck_assert_double_eq(proto_angle_in(PROTO_UNITS_RADIANS, 1.25), 1.25);
    ck_assert_double_eq(proto_angle_out(PROTO_UNITS_RADIANS, 1.25), 1.25);
    ck_assert_str_eq(proto_frame_names[PROTO_FRAME_UNITY], "unity");
    ck_assert_str_eq(proto_units_names[PROTO_UNITS_DEGREES], "degrees");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_frame");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_named_axes);
    tcase_add_test(tc, test_round_trips);
    tcase_add_test(tc, test_rotation_identities);
    tcase_add_test(tc, test_angles);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
