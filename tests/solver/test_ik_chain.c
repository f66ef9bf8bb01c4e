/*
 * test_ik_chain.c: solver/ik_chain.h. Forward kinematics of small chains
 * worked out by hand (planar 2R, a prismatic joint with a non-unit axis,
 * merged fixed joints, rpy origins), the joint frames, the analytic
 * Jacobian against central finite differences of the forward kinematics on
 * random chains and configurations, every rejection of chain_init(), and
 * the limit helpers.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "solver/ik_status.h"
#include "chains.h"

#define TOL 1e-12

static void assert_vec(ik_vec3 a, double x, double y, double z, double tol)
{
    ck_assert_double_eq_tol(a.x, x, tol);
    ck_assert_double_eq_tol(a.y, y, tol);
    ck_assert_double_eq_tol(a.z, z, tol);
}

/* Same rotation (q and -q are the same rotation). */
static void assert_rot(ik_quat a, ik_quat b, double tol)
{
    ck_assert_double_le(ik_quat_angle_between(a, b), tol);
}

static const ik_vec3 ZAXIS = {0, 0, 1};

/* Planar 2R: l1 = 0.7, l2 = 0.4 along x, both joints about z. */
static ik_chain planar_2r(void)
{
    ik_joint j[3] = {
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ZAXIS, -3, 3),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.7, 0, 0), ZERO, ZAXIS, -3, 3),
        joint(IK_JOINT_FIXED, ik_v3(0.4, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 3), IK_OK);
    return c;
}

START_TEST(test_fk_planar_2r)
{
    ik_chain c = planar_2r();
    ck_assert_uint_eq(c.dof, 2);
    const double qs[][2] = {{0, 0}, {0.3, -1.1}, {-2.5, 2.9}, {1.5707963267948966, 0}};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        double a = qs[i][0], b = qs[i][1];
        ik_xform x = ik_chain_fk(&c, qs[i]);
        assert_vec(x.p, 0.7 * cos(a) + 0.4 * cos(a + b), 0.7 * sin(a) + 0.4 * sin(a + b), 0,
                   TOL);
        assert_rot(x.q, ik_quat_from_axis_angle(ZAXIS, a + b), 1e-9);
    }
}
END_TEST

START_TEST(test_frames_planar_2r)
{
    ik_chain c = planar_2r();
    double q[2] = {0.4, 0.9};
    ik_xform f[3];
    ik_chain_frames(&c, q, f);
    assert_vec(f[0].p, 0, 0, 0, TOL);
    assert_rot(f[0].q, ik_quat_from_axis_angle(ZAXIS, 0.4), 1e-9);
    assert_vec(f[1].p, 0.7 * cos(0.4), 0.7 * sin(0.4), 0, TOL);
    assert_rot(f[1].q, ik_quat_from_axis_angle(ZAXIS, 1.3), 1e-9);
    ik_xform tip = ik_chain_fk(&c, q);
    assert_vec(f[2].p, tip.p.x, tip.p.y, tip.p.z, TOL);
    assert_rot(f[2].q, tip.q, 1e-9);
}
END_TEST

START_TEST(test_fk_prismatic)
{
    /* origin (1, 0, 0), axis (0, 0, 2) (normalised to z), then a tip 0.5
     * further along x: p = (1.5, 0, q). */
    ik_joint j[2] = {
        joint(IK_JOINT_PRISMATIC, ik_v3(1, 0, 0), ZERO, ik_v3(0, 0, 2), -1, 1),
        joint(IK_JOINT_FIXED, ik_v3(0.5, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 2), IK_OK);
    double q = 0.25;
    ik_xform x = ik_chain_fk(&c, &q);
    assert_vec(x.p, 1.5, 0, 0.25, TOL);
    assert_rot(x.q, ik_quat_identity(), 1e-9);
    double J[6];
    ik_chain_jacobian(&c, &q, J, NULL);
    const double want[6] = {0, 0, 1, 0, 0, 0};
    for (int r = 0; r < 6; r++)
        ck_assert_double_eq_tol(J[r], want[r], TOL);
}
END_TEST

START_TEST(test_fixed_merged)
{
    /* fixed, revolute, fixed, fixed: one dof, the first fixed origin merged
     * into pre, the last two into tip. */
    ik_joint j[4] = {
        joint(IK_JOINT_FIXED, ik_v3(0, 0, 1), ik_v3(0, 0, 1.5707963267948966), ZERO, 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(1, 0, 0), ZERO, ZAXIS, -1, 1),
        joint(IK_JOINT_FIXED, ik_v3(2, 0, 0), ZERO, ZERO, 0, 0),
        joint(IK_JOINT_FIXED, ik_v3(0, 0, 3), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 4), IK_OK);
    ck_assert_uint_eq(c.dof, 1);
    ck_assert_uint_eq(c.source_index[0], 1);
    /* pre: rotate 90 deg about z then move (1,0,0) in that frame: (0,1,1) */
    assert_vec(c.pre[0].p, 0, 1, 1, TOL);
    assert_vec(c.tip.p, 2, 0, 3, TOL);
    /* at q = 0: joint frame at (0,1,1) facing +y; tip 2 along its x: (0,3,4) */
    double q = 0.0;
    assert_vec(ik_chain_fk(&c, &q).p, 0, 3, 4, TOL);
    /* at q = 90 deg: the joint x axis points along -x: (-2,1,4) */
    q = 1.5707963267948966;
    ik_xform x = ik_chain_fk(&c, &q);
    assert_vec(x.p, -2, 1, 4, TOL);
    assert_rot(x.q, ik_quat_from_axis_angle(ZAXIS, IK_PI), 1e-9);
}
END_TEST

START_TEST(test_fk_rpy_origin)
{
    /* origin yaw 90 deg, joint about its own x (the base y): the tip
     * (0, 1, 0) in the joint frame goes to Rz(90) Rx(q) (0,1,0)
     * = (-cos q, 0, sin q). */
    ik_joint j[2] = {
        joint(IK_JOINT_REVOLUTE, ZERO, ik_v3(0, 0, 1.5707963267948966), ik_v3(1, 0, 0), -3, 3),
        joint(IK_JOINT_FIXED, ik_v3(0, 1, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 2), IK_OK);
    for (double q = -3; q <= 3; q += 0.5) {
        ik_xform x = ik_chain_fk(&c, &q);
        assert_vec(x.p, -cos(q), 0, sin(q), TOL);
        ik_quat want = ik_quat_mul(ik_quat_from_rpy(0, 0, 1.5707963267948966),
                                   ik_quat_from_axis_angle(ik_v3(1, 0, 0), q));
        assert_rot(x.q, want, 1e-9);
    }
    /* a non-trivial rpy: compare with a plain composition of the pieces */
    ik_joint k[3] = {
        joint(IK_JOINT_CONTINUOUS, ik_v3(0.1, -0.2, 0.3), ik_v3(0.3, -0.7, 1.1),
              ik_v3(1, 2, -2), 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.4, 0.0, -0.1), ik_v3(-1.2, 0.4, 0.2), ik_v3(0, 1, 0),
              -2, 2),
        joint(IK_JOINT_FIXED, ik_v3(0, 0.3, 0.2), ik_v3(0.5, 0.5, 0.5), ZERO, 0, 0),
    };
    ck_assert_int_eq(chain_init(&c, k, 3), IK_OK);
    double q2[2] = {0.8, -1.3};
    ik_xform want = ik_xform_identity();
    for (int i = 0; i < 3; i++) {
        want = ik_xform_mul(want, k[i].origin);
        if (i < 2) {
            ik_xform m = {ZERO, ik_quat_from_axis_angle(k[i].axis, q2[i])};
            want = ik_xform_mul(want, m);
        }
    }
    ik_xform x = ik_chain_fk(&c, q2);
    assert_vec(x.p, want.p.x, want.p.y, want.p.z, TOL);
    assert_rot(x.q, want.q, 1e-9);
}
END_TEST

/* ---- random chains -------------------------------------------------------- */

static uint64_t rng_state;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1.0p-53);
}

static size_t random_joints(ik_joint *j, size_t max_movable)
{
    size_t n = 0, movable = 1 + (size_t)urand(0, (double)max_movable);
    for (size_t m = 0; m < movable; m++) {
        if (urand(0, 1) < 0.2)
            j[n++] = joint(IK_JOINT_FIXED, ik_v3(urand(-.3, .3), urand(-.3, .3), urand(-.3, .3)),
                           ik_v3(urand(-3, 3), urand(-1.5, 1.5), urand(-3, 3)), ZERO, 0, 0);
        double r = urand(0, 1);
        ik_joint_type t = r < 0.7 ? IK_JOINT_REVOLUTE
                                  : (r < 0.85 ? IK_JOINT_CONTINUOUS : IK_JOINT_PRISMATIC);
        j[n++] = joint(t, ik_v3(urand(-.5, .5), urand(-.5, .5), urand(-.5, .5)),
                       ik_v3(urand(-3, 3), urand(-1.5, 1.5), urand(-3, 3)),
                       ik_v3(urand(-1, 1), urand(-1, 1), urand(-1, 1)), -2, 2);
    }
    j[n++] = joint(IK_JOINT_FIXED, ik_v3(urand(-.3, .3), urand(-.3, .3), urand(-.3, .3)),
                   ik_v3(urand(-3, 3), urand(-1.5, 1.5), urand(-3, 3)), ZERO, 0, 0);
    return n;
}

START_TEST(test_jacobian_finite_differences)
{
    rng_state = 12345;
    const double h = 1e-6;
    for (int trial = 0; trial < 300; trial++) {
        ik_joint j[2 * 12 + 1];
        size_t n = random_joints(j, 12);
        ik_chain c;
        ck_assert_int_eq(chain_init(&c, j, n), IK_OK);
        const size_t dof = c.dof;
        double q[TEST_DOF_CAP], J[6 * TEST_DOF_CAP];
        for (size_t k = 0; k < dof; k++)
            q[k] = urand(-2, 2);
        ik_xform tip;
        ik_chain_jacobian(&c, q, J, &tip);
        ik_xform fk = ik_chain_fk(&c, q);
        assert_vec(tip.p, fk.p.x, fk.p.y, fk.p.z, TOL);
        assert_rot(tip.q, fk.q, 1e-9);
        for (size_t k = 0; k < dof; k++) {
            double qp[TEST_DOF_CAP], qm[TEST_DOF_CAP];
            memcpy(qp, q, sizeof qp);
            memcpy(qm, q, sizeof qm);
            qp[k] += h;
            qm[k] -= h;
            ik_xform a = ik_chain_fk(&c, qp), b = ik_chain_fk(&c, qm);
            ik_vec3 v = ik_vec3_scale(ik_vec3_sub(a.p, b.p), 1.0 / (2 * h));
            ik_vec3 w = ik_vec3_scale(ik_quat_to_rotvec(ik_quat_mul(a.q, ik_quat_conj(b.q))),
                                      1.0 / (2 * h));
            const double fd[6] = {v.x, v.y, v.z, w.x, w.y, w.z};
            for (int r = 0; r < 6; r++)
                ck_assert_double_eq_tol(J[r * dof + k], fd[r], 1e-6);
        }
    }
}
END_TEST

START_TEST(test_frames_consistent_random)
{
    /* frames[i] must be the joint frame: T_{i-1} * pre_i * motion_i(q_i),
     * composed here with quaternions. */
    rng_state = 777;
    for (int trial = 0; trial < 100; trial++) {
        ik_joint j[2 * 8 + 1];
        size_t n = random_joints(j, 8);
        ik_chain c;
        ck_assert_int_eq(chain_init(&c, j, n), IK_OK);
        double q[TEST_DOF_CAP];
        for (size_t k = 0; k < c.dof; k++)
            q[k] = urand(-2, 2);
        ik_xform f[TEST_DOF_CAP + 1], tip;
        ik_chain_frames(&c, q, f);
        /* the origins alone: the frames' positions and tip, bit for bit */
        ik_vec3 o[TEST_DOF_CAP + 1];
        ik_chain_positions(&c, q, o, &tip);
        for (size_t k = 0; k <= c.dof; k++)
            ck_assert_mem_eq(&o[k], &f[k].p, sizeof o[k]);
        ck_assert_mem_eq(&tip, &f[c.dof], sizeof tip);
        ik_xform T = ik_xform_identity();
        for (size_t k = 0; k < c.dof; k++) {
            ik_xform m = ik_xform_identity();
            if (c.type[k] == IK_JOINT_PRISMATIC)
                m.p = ik_vec3_scale(c.axis[k], q[k]);
            else
                m.q = ik_quat_from_axis_angle(c.axis[k], q[k]);
            T = ik_xform_mul(ik_xform_mul(T, c.pre[k]), m);
            assert_vec(f[k].p, T.p.x, T.p.y, T.p.z, 1e-12);
            assert_rot(f[k].q, T.q, 1e-9);
        }
        T = ik_xform_mul(T, c.tip);
        assert_vec(f[c.dof].p, T.p.x, T.p.y, T.p.z, 1e-12);
        assert_rot(f[c.dof].q, T.q, 1e-9);
    }
}
END_TEST

/* ---- rejections ------------------------------------------------------------ */

/* ik_chain_init refuses j[0..n-1] with rc, changing neither the view nor
 * the storage (of the size for n joints, or store bytes when not 0) */
static void expect_refused(const ik_joint *j, size_t n, size_t store, int rc)
{
    ik_chain c;
    memset(&c, 0xA5, sizeof c);
    ik_chain before = c;
    size_t bytes = store ? store : ik_chain_storage_size(n);
    unsigned char *mem = malloc(bytes), *copy = malloc(bytes);
    ck_assert(mem && copy);
    memset(mem, 0x5A, bytes);
    memcpy(copy, mem, bytes);
    ck_assert_int_eq(ik_chain_init(&c, mem, bytes, j, n), rc);
    ck_assert_int_eq(memcmp(&c, &before, sizeof c), 0);
    ck_assert_int_eq(memcmp(mem, copy, bytes), 0);
    free(mem);
    free(copy);
}

static void expect_einval(const ik_joint *j, size_t n)
{
    expect_refused(j, n, 0, IK_EINVAL);
}

START_TEST(test_init_rejections)
{
    ik_joint good = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ZAXIS, -1, 1);
    ik_joint j[2];
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, &good, 1), IK_OK);
    expect_einval(&good, 0);
    ck_assert_int_eq(chain_init(NULL, &good, 1), IK_EINVAL);
    ck_assert_int_eq(chain_init(&c, NULL, 1), IK_EINVAL);

    j[0] = good;
    j[0].origin.p.y = NAN;
    expect_einval(j, 1);
    j[0] = good;
    j[0].origin.q.w = INFINITY;
    expect_einval(j, 1);
    j[0] = good;
    j[0].origin.q = (ik_quat){0, 0, 0, 1.01}; /* not unit */
    expect_einval(j, 1);
    j[0] = good;
    j[0].axis = ZERO;
    expect_einval(j, 1);
    j[0] = good;
    j[0].axis.x = NAN;
    expect_einval(j, 1);
    j[0] = good;
    j[0].lower = 2;
    j[0].upper = 1;
    expect_einval(j, 1);
    j[0] = good;
    j[0].upper = INFINITY;
    expect_einval(j, 1);
    j[0] = good;
    j[0].type = (ik_joint_type)42;
    expect_einval(j, 1);
    /* only fixed joints */
    j[0] = joint(IK_JOINT_FIXED, ZERO, ZERO, ZERO, 0, 0);
    j[1] = j[0];
    expect_einval(j, 2);
    /* a fixed joint's axis and limits are ignored; a continuous joint's
     * limits too */
    j[0].axis = ik_v3(NAN, 0, 0);
    j[0].lower = NAN;
    j[1] = joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ZAXIS, 5, -5);
    ck_assert_int_eq(chain_init(&c, j, 2), IK_OK);
    ck_assert(isinf(c.lower[0]) && c.lower[0] < 0 && isinf(c.upper[0]));
    /* no compiled bound on the joints: 300 described, 200 movable (the
     * storage sized by the movable ones is enough, one byte less is not) */
    static ik_joint many[300];
    for (size_t i = 0; i < 300; i++)
        many[i] = i % 3 == 2 ? joint(IK_JOINT_FIXED, ik_v3(0.01, 0, 0), ZERO, ZERO, 0, 0) : good;
    ck_assert_int_eq(chain_init(&c, many, 300), IK_OK);
    ck_assert_uint_eq(c.dof, 200);
    ck_assert_uint_eq(c.source_index[199], 298);
    expect_refused(many, 300, ik_chain_storage_size(200) - 1, IK_ENOSPC);
    void *exact = test_storage(ik_chain_storage_size(200));
    ck_assert_int_eq(ik_chain_init(&c, exact, ik_chain_storage_size(200), many, 300), IK_OK);
    ck_assert_uint_eq(c.dof, 200);
    ck_assert_int_eq(ik_chain_init(&c, NULL, 1 << 20, many, 300), IK_EINVAL);
    ck_assert_uint_eq(ik_chain_storage_size(SIZE_MAX / 2), SIZE_MAX);
    /* a quaternion off unit length by less than 1e-6 is accepted and
     * normalised */
    j[0] = good;
    j[0].origin.q = (ik_quat){0, 0, 0, 1.0 + 5e-7};
    ck_assert_int_eq(chain_init(&c, j, 1), IK_OK);
    ck_assert_double_eq_tol(ik_quat_dot(c.pre[0].q, c.pre[0].q), 1.0, 1e-15);
}
END_TEST

START_TEST(test_limits_helpers)
{
    ik_joint j[3] = {
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ZAXIS, -1, 2),
        joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ZAXIS, 0, 0),
        joint(IK_JOINT_PRISMATIC, ZERO, ZERO, ZAXIS, 0.1, 0.3),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 3), IK_OK);
    double q[3];
    ik_chain_mid(&c, q);
    ck_assert_double_eq_tol(q[0], 0.5, TOL);
    ck_assert_double_eq_tol(q[1], 0.0, TOL);
    ck_assert_double_eq_tol(q[2], 0.2, TOL);
    ck_assert(ik_chain_within_limits(&c, q, 0));
    double out[3] = {2.5, 10.0, 0.0};
    ck_assert(!ik_chain_within_limits(&c, out, 0));
    ck_assert(ik_chain_within_limits(&c, (double[3]){2.05, 100, 0.3}, 0.1));
    ck_assert(!ik_chain_within_limits(&c, (double[3]){0, NAN, 0.2}, 0));
    ck_assert(!ik_chain_within_limits(&c, (double[3]){NAN, 0, 0.2}, 0));
    ik_chain_clamp(&c, out, false);
    ck_assert_double_eq_tol(out[0], 2.0, TOL);
    ck_assert_double_eq_tol(out[1], 10.0, TOL);
    ck_assert_double_eq_tol(out[2], 0.1, TOL);
    ik_chain_clamp(&c, out, true);
    ck_assert_double_eq_tol(out[1], 10.0 - 4 * IK_PI, 1e-12);
    ck_assert(ik_chain_within_limits(&c, out, 0));
}
END_TEST

/* ik_chain_turn_near: whole-turn equivalents inside the limits, nearest
 * the reference; ranges shorter than a turn keep the value bit for bit. */
START_TEST(test_turn_near)
{
    const double T = 2 * IK_PI;
    ik_joint j[3] = {
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -T, T),
        joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ik_v3(0, 0, 1), 0, 0),
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), 1.0, 6.0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 3), IK_OK);
    /* +-2 pi: the turn nearest the reference, inside the range */
    ck_assert_double_eq_tol(ik_chain_turn_near(&c, 0, -0.1, 6.0), -0.1 + T, 1e-12);
    ck_assert_double_eq_tol(ik_chain_turn_near(&c, 0, 0.1, 6.0), 0.1, 1e-12); /* 0.1 + 2 pi is out */
    ck_assert_double_eq_tol(ik_chain_turn_near(&c, 0, 0.1, -6.0), 0.1 - T, 1e-12);
    ck_assert_double_eq_tol(ik_chain_turn_near(&c, 0, 0.1 + T, 0.0), 0.1, 1e-12);
    /* continuous: any turn */
    ck_assert_double_eq_tol(ik_chain_turn_near(&c, 1, 0.1, 100.0), 0.1 + 16 * T, 1e-9);
    /* a range shorter than a turn: the one equivalent inside, or v */
    ck_assert_double_eq(ik_chain_turn_near(&c, 2, 2.5, 5.0), 2.5);
    ck_assert_double_eq_tol(ik_chain_turn_near(&c, 2, -1.0, 2.0), -1.0 + T, 1e-12);
    ck_assert_double_eq(ik_chain_turn_near(&c, 2, 0.5, 2.0), 0.5); /* none inside */
}
END_TEST

static Suite *chain_suite(void)
{
    Suite *s = suite_create("ik_chain");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fk_planar_2r);
    tcase_add_test(tc, test_frames_planar_2r);
    tcase_add_test(tc, test_fk_prismatic);
    tcase_add_test(tc, test_fixed_merged);
    tcase_add_test(tc, test_fk_rpy_origin);
    tcase_add_test(tc, test_jacobian_finite_differences);
    tcase_add_test(tc, test_frames_consistent_random);
    tcase_add_test(tc, test_init_rejections);
    tcase_add_test(tc, test_limits_helpers);
    tcase_add_test(tc, test_turn_near);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(chain_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
