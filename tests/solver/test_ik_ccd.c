/*
 * test_ik_ccd.c: CCD (solver/ik_ccd.h), verified by the positions it
 * returns: the shared animation-chain cases of anim_cases.h plus hinge
 * limits (planar hinges keep the chain in its plane and their angles in
 * range; hinge axes carried by the parent bones keep a yaw-pitch limb in one
 * vertical plane).
 */
#include <stdio.h>

#include "solver/ik_ccd.h"

#define ANIM_SOLVE                ik_ccd_solve
#define ANIM_NAME                 "ccd"
#define ANIM_RANDOM_ITERATIONS    5000
#define ANIM_CONE_SUCCESS_PERCENT 80

#include "anim_cases.h"

/* Signed angle about z from u to v (both in the xy plane). */
static double angle_z(ik_vec3 u, ik_vec3 v)
{
    return atan2(u.x * v.y - u.y * v.x, u.x * v.x + u.y * v.y);
}

START_TEST(test_hinge_planar)
{
    rng r = {606};
    unsigned char work[MAXJ * 128];
    int ok = 0, trials = 1000;
    for (int trial = 0; trial < trials; trial++) {
        size_t n = 3 + (size_t)(rnd(&r) * 7);
        ik_vec3 p[MAXJ], out[MAXJ], q[MAXJ];
        double len[MAXJ], ang = rnd_in(&r, -IK_PI, IK_PI);
        ik_anim_limit lim[MAXJ];
        /* a planar chain in z = 1 with random in-range hinge angles */
        p[0] = ik_v3(0.5, -0.5, 1);
        q[0] = p[0];
        double qang = ang;
        for (size_t i = 0; i + 1 < n; i++) {
            len[i] = rnd_in(&r, 0.3, 1.2);
            double lo = rnd_in(&r, -2.5, 0), hi = rnd_in(&r, 0, 2.5);
            lim[i] = ik_anim_limit_hinge(ik_v3(0, 0, trial % 2 ? 1 : -2), lo, hi);
            if (trial % 2 == 0) { /* axis -z: the angle's sign flips */
                double t_ = lo;
                lo = -hi;
                hi = -t_;
            }
            double a_in = i ? rnd_in(&r, lo, hi) : 0;
            ang += a_in;
            p[i + 1] = ik_vec3_madd(p[i], ik_v3(cos(ang), sin(ang), 0), len[i]);
            double a_t = i ? rnd_in(&r, lo, hi) : rnd_in(&r, lo, hi);
            qang += a_t;
            q[i + 1] = ik_vec3_madd(q[i], ik_v3(cos(qang), sin(qang), 0), len[i]);
        }
        ik_vec3 t = q[n - 1];
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.limits = lim;
        o.max_iterations = 2000;
        o.tolerance = 1e-6 * chain_total(n, len);
        ik_anim_result res;
        int st = ik_ccd_solve(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert(st == IK_OK || st == IK_ENOTCONV);
        ok += st == IK_OK;
        check_shape(p, out, n);
        ik_vec3 parent = ik_vec3_sub(p[1], p[0]); /* joint 0's reference: input bone 0 */
        for (size_t i = 0; i + 1 < n; i++) {
            ck_assert_double_eq_tol(out[i + 1].z, 1, 1e-9);
            ik_vec3 d = ik_vec3_sub(out[i + 1], out[i]);
            double h = angle_z(parent, d);
            double lo = lim[i].hinge_min, hi = lim[i].hinge_max;
            if (trial % 2 == 0) /* measured about +z */
                h = -h;
            ck_assert_msg(h >= lo - 1e-9 && h <= hi + 1e-9,
                          "trial %d joint %zu: %g not in [%g, %g]", trial, i, h, lo, hi);
            parent = d;
        }
    }
    fprintf(stderr, "ccd: planar hinges, %d of %d in-range targets reached\n", ok, trials);
    ck_assert_int_ge(ok, trials * 70 / 100);
}
END_TEST

/* A leg: joint 0 yaws about z (any angle), the others pitch about the
 * horizontal axis perpendicular to the leg's plane, carried by the yaw. The
 * solved leg must stay in one vertical plane through the root. */
START_TEST(test_hinge_carried_axes)
{
    rng r = {909};
    unsigned char work[MAXJ * 128];
    int ok = 0;
    for (int trial = 0; trial < 500; trial++) {
        size_t n = 4 + (size_t)(rnd(&r) * 4);
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        ik_anim_limit lim[MAXJ];
        /* the leg in the xz plane, bending about y */
        p[0] = ik_v3(0, 0, 0);
        double pitch = -1.2;
        for (size_t i = 0; i + 1 < n; i++) {
            len[i] = rnd_in(&r, 0.3, 1.0);
            pitch += i ? rnd_in(&r, 0.1, 0.5) : 0;
            p[i + 1] = ik_vec3_madd(p[i], ik_v3(cos(pitch), 0, sin(pitch)), len[i]);
            lim[i] = i ? ik_anim_limit_hinge(ik_v3(0, -1, 0), -2.5, 2.5)
                       : ik_anim_limit_hinge(ik_v3(0, 0, 1), -IK_PI, IK_PI);
        }
        /* joint 0 is a yaw: it cannot pitch, so the reachable set is the
         * leg's own profile turned about z */
        double yaw = rnd_in(&r, -3, 3);
        ik_vec3 t0 = p[n - 1];
        ik_vec3 t = ik_quat_rotate(ik_quat_from_axis_angle(ik_v3(0, 0, 1), yaw),
                                   ik_v3(t0.x * 0.8, 0, t0.z * 0.8));
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.limits = lim;
        o.max_iterations = 3000;
        o.tolerance = 1e-6;
        ik_anim_result res;
        int st = ik_ccd_solve(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        check_shape(p, out, n);
        ok += st == IK_OK;
        /* all joints in one vertical plane through the root */
        ik_vec3 h = ik_v3(0, 0, 0);
        for (size_t i = 1; i < n; i++) {
            ik_vec3 v = ik_v3(out[i].x, out[i].y, 0);
            if (ik_vec3_len(v) > ik_vec3_len(h))
                h = v;
        }
        ik_vec3 hn = ik_vec3_normalize(h);
        for (size_t i = 1; i < n; i++)
            ck_assert_double_le(fabs(hn.x * out[i].y - hn.y * out[i].x), 1e-9);
    }
    fprintf(stderr, "ccd: carried hinge axes, %d of 500 reached\n", ok);
    ck_assert_int_ge(ok, 300);
}
END_TEST

/* Unreachable with hinges: CCD iterates, reports unreachable, keeps limits. */
START_TEST(test_hinge_unreachable)
{
    ik_vec3 p[4] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}}, out[4];
    ik_anim_limit lim[3] = {ik_anim_limit_hinge(ik_v3(0, 0, 1), -IK_PI, IK_PI),
                            ik_anim_limit_hinge(ik_v3(0, 0, 1), -0.5, 0.5),
                            ik_anim_limit_hinge(ik_v3(0, 0, 1), -0.5, 0.5)};
    ik_anim_options o;
    ik_anim_options_default(&o);
    o.limits = lim;
    unsigned char work[512];
    ik_anim_result res;
    ik_vec3 t = ik_v3(0, 10, 0);
    ck_assert_int_eq(ik_ccd_solve(p, 4, t, &o, work, sizeof work, out, NULL, NULL, &res),
                     IK_EUNREACHABLE);
    check_shape(p, out, 4);
    /* straight towards the target is allowed here, and CCD gets there */
    ck_assert_double_eq_tol(res.error, 7, 1e-3);
    /* a hinge cannot leave its plane even for an off-plane target */
    t = ik_v3(1, 1, 1);
    ik_ccd_solve(p, 4, t, &o, work, sizeof work, out, NULL, NULL, &res);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(out[i].z, 0, 1e-12);
}
END_TEST

/* Invalid hinges. */
START_TEST(test_hinge_invalid)
{
    ik_vec3 p[3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}}, out[3];
    unsigned char work[256];
    ik_anim_result res;
    ik_anim_limit bad[] = {
        ik_anim_limit_hinge(ik_v3(0, 0, 0), -1, 1),   ik_anim_limit_hinge(ik_v3(0, 0, 1), 1, -1),
        ik_anim_limit_hinge(ik_v3(0, 0, 1), -4, 1),   ik_anim_limit_hinge(ik_v3(0, 0, 1), -1, 4),
        ik_anim_limit_hinge(ik_v3(0, NAN, 1), -1, 1), ik_anim_limit_hinge(ik_v3(0, 0, 1), NAN, 1),
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ik_anim_limit lim[2] = {ik_anim_limit_none(), bad[k]};
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.limits = lim;
        ck_assert_int_eq(
            ik_ccd_solve(p, 3, ik_v3(1, 1, 0), &o, work, sizeof work, out, NULL, NULL, &res),
            IK_EINVAL);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ik_ccd");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    add_anim_cases(tc);
    tcase_add_test(tc, test_hinge_planar);
    tcase_add_test(tc, test_hinge_carried_axes);
    tcase_add_test(tc, test_hinge_unreachable);
    tcase_add_test(tc, test_hinge_invalid);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
