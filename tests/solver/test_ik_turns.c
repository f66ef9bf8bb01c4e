/*
 * test_ik_turns.c: solver/ik_numeric.h's TURNS, CONTINUATION and step
 * limit, the behaviour a robot controller streaming targets relies on.
 * Every answer is checked by forward kinematics (ik_chain_fk and
 * ik_pose_error against the target), never by the solver's own report:
 *   - periodic joints (continuous, and revolute joints with a range of 2 pi
 *     or more) are answered on the turn nearest the seed, with and without
 *     the nearest search;
 *   - a continuous joint swept through +-pi and beyond comes back
 *     monotonic, never wrapped;
 *   - smooth joint-space motions (sinusoids inside the limits) solved one
 *     target at a time, each seeded with the previous answer, never step
 *     more than 3 times the motion's own largest step, through a wrist
 *     singularity included;
 *   - max_step refuses (IK_ESTEP, the seed returned) rather than answer a
 *     larger step, and res.max_step is the step the answer asks for.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "chains.h"

#define TOL 1e-5

static uint64_t rng_state;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1.0p-53);
}

static unsigned char ws[1 << 16];

static ik_chain ur5(void)
{
    ik_joint j[UR5_JOINTS];
    ur5_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, UR5_JOINTS), IK_OK);
    return c;
}

static ik_chain pr2_arm(void)
{
    ik_joint j[PR2_ARM_JOINTS];
    pr2_arm_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, PR2_ARM_JOINTS), IK_OK);
    return c;
}

static bool is_periodic(const ik_chain *c, size_t k)
{
    return c->type[k] == IK_JOINT_CONTINUOUS ||
           (c->type[k] == IK_JOINT_REVOLUTE && c->upper[k] - c->lower[k] >= 2 * IK_PI);
}

static void random_q(const ik_chain *c, double *q)
{
    for (size_t k = 0; k < c->dof; k++) {
        bool cont = c->type[k] == IK_JOINT_CONTINUOUS;
        q[k] = urand(cont ? -IK_PI : c->lower[k], cont ? IK_PI : c->upper[k]);
    }
}

/* Full pose by FK, inside the limits (continuous joints on any turn). */
static void assert_reaches(const ik_chain *c, ik_xform goal, const double *q)
{
    ck_assert(ik_chain_within_limits(c, q, 0.0));
    double e[6];
    ik_pose_error(goal, ik_chain_fk(c, q), e);
    for (int r = 0; r < 6; r++)
        ck_assert_double_lt(fabs(e[r]), TOL);
}

/* No whole-turn equivalent of q[k] inside the limits is nearer the seed. */
static void assert_nearest_turn(const ik_chain *c, const double *q, const double *seed)
{
    for (size_t k = 0; k < c->dof; k++) {
        if (!is_periodic(c, k))
            continue;
        double d = fabs(q[k] - seed[k]);
        for (int m = -3; m <= 3; m++) {
            double v = q[k] + 2 * IK_PI * m;
            if (m == 0 || v < c->lower[k] || v > c->upper[k])
                continue;
            ck_assert_msg(fabs(v - seed[k]) >= d - 1e-9,
                          "joint %zu: %.6f answered for seed %.6f, %.6f is nearer", k, q[k],
                          seed[k], v);
        }
    }
}

static ik_numeric_opts det_opts(ik_search_mode mode)
{
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.0;
    o.max_restarts = 300;
    o.search = mode;
    return o;
}

/* ---- turns ------------------------------------------------------------------ */

/* Random targets from random seeds (the answer usually comes from a
 * restart, on any turn): every periodic joint is answered on the turn
 * nearest the seed, first-found and nearest searches alike. */
START_TEST(test_nearest_turn_random_seeds)
{
    ik_chain chains[2] = {ur5(), pr2_arm()};
    for (int ci = 0; ci < 2; ci++) {
        const ik_chain *c = &chains[ci];
        rng_state = 41 + (uint64_t)ci;
        for (int mode = 0; mode < 2; mode++) {
            ik_numeric_opts o = det_opts(mode ? IK_SEARCH_NEAREST_TO_SEED : IK_SEARCH_FIRST_FOUND);
            for (int i = 0; i < 150; i++) {
                double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
                random_q(c, qt);
                random_q(c, seed);
                for (size_t k = 0; k < c->dof; k++) /* continuous seeds on other turns */
                    if (c->type[k] == IK_JOINT_CONTINUOUS)
                        seed[k] += 2 * IK_PI * (double)((int)urand(-3, 4));
                ik_xform goal = ik_chain_fk(c, qt);
                ik_target t = ik_target_full_pose(goal);
                o.rng_seed = (uint64_t)i;
                if (ik_numeric_solve(c, &t, seed, &o, ws, sizeof ws, q, NULL) != IK_OK)
                    continue;
                assert_reaches(c, goal, q);
                assert_nearest_turn(c, q, seed);
            }
        }
    }
}
END_TEST

/* The UR5 case: the last joint seeded a whole turn up (6.28) is
 * answered on that turn, not next to 0. */
START_TEST(test_ur5_seed_a_turn_up)
{
    ik_chain c = ur5();
    rng_state = 43;
    ik_numeric_opts o = det_opts(IK_SEARCH_NEAREST_TO_SEED);
    for (int i = 0; i < 100; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        qt[5] = urand(-0.3, 0.0); /* a turn up stays inside the limits */
        memcpy(seed, qt, sizeof seed);
        seed[5] = qt[5] + 2 * IK_PI;
        if (seed[5] > c.upper[5])
            seed[5] = c.upper[5];
        ik_xform goal = ik_chain_fk(&c, qt);
        ik_target t = ik_target_full_pose(goal);
        ik_numeric_result res;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, q, &res), IK_OK);
        assert_reaches(&c, goal, q);
        ck_assert_double_gt(q[5], IK_PI);
        ck_assert_double_lt(res.max_step, 0.35);
    }
}
END_TEST

/* A continuous joint (the wrist roll) swept from -4 to +8 rad, a target
 * at a time, each seeded with the previous answer: the answers rise
 * monotonically through +-pi and beyond, following the motion. */
START_TEST(test_continuous_sweep_monotonic)
{
    ik_chain c = pr2_arm();
    ik_numeric_opts o = det_opts(IK_SEARCH_NEAREST_TO_SEED);
    double base[8] = {0.1, -0.8, 0.4, -1.2, -1.0, 0.3, -1.0, 0.0};
    const int N = 400;
    double prev[TEST_DOF_CAP];
    memcpy(prev, base, sizeof base);
    prev[7] = -4.0;
    for (int i = 0; i <= N; i++) {
        double qt[8], q[TEST_DOF_CAP];
        memcpy(qt, base, sizeof qt);
        qt[7] = -4.0 + 12.0 * i / N;
        qt[5] = 0.3 + 0.5 * sin(2 * IK_PI * i / N);
        ik_xform goal = ik_chain_fk(&c, qt);
        ik_target t = ik_target_full_pose(goal);
        ck_assert_int_eq(ik_numeric_solve(&c, &t, prev, &o, ws, sizeof ws, q, NULL), IK_OK);
        assert_reaches(&c, goal, q);
        if (i > 0)
            ck_assert_double_gt(q[7], prev[7]);
        ck_assert_double_lt(fabs(q[7] - qt[7]), IK_PI); /* the motion's own turn */
        memcpy(prev, q, sizeof q);
    }
}
END_TEST

/* ---- continuity --------------------------------------------------------------- */

/* A smooth joint-space motion of n steps (each joint a sinusoid inside its
 * limits, the wrist of a UR5 through 0 when `singular`), streamed: every
 * answer by FK, no joint step above 3 times the motion's own largest. */
static void stream_motion(const ik_chain *c, const double *mid, const double *amp, int n,
                          double *worst_ratio, size_t *continued)
{
    ik_numeric_opts o = det_opts(IK_SEARCH_NEAREST_TO_SEED);
    double prev[TEST_DOF_CAP], qprev[TEST_DOF_CAP];
    double motion_step = 0.0, answer_step = 0.0;
    *continued = 0;
    for (int i = 0; i <= n; i++) {
        double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        for (size_t k = 0; k < c->dof; k++)
            qt[k] = mid[k] + amp[k] * sin(2 * IK_PI * (double)i / n * (1.0 + 0.37 * (double)k));
        if (i == 0) {
            memcpy(prev, qt, sizeof prev);
            memcpy(qprev, qt, sizeof qprev);
        }
        for (size_t k = 0; k < c->dof; k++)
            if (fabs(qt[k] - qprev[k]) > motion_step)
                motion_step = fabs(qt[k] - qprev[k]);
        ik_xform goal = ik_chain_fk(c, qt);
        ik_target t = ik_target_full_pose(goal);
        ik_numeric_result res;
        ck_assert_int_eq(ik_numeric_solve(c, &t, prev, &o, ws, sizeof ws, q, &res), IK_OK);
        assert_reaches(c, goal, q);
        double step = 0.0;
        for (size_t k = 0; k < c->dof; k++)
            if (fabs(q[k] - prev[k]) > step)
                step = fabs(q[k] - prev[k]);
        ck_assert_double_eq_tol(res.max_step, step, 1e-12);
        if (step > answer_step)
            answer_step = step;
        *continued += res.continued;
        memcpy(prev, q, sizeof prev);
        memcpy(qprev, qt, sizeof qprev);
    }
    *worst_ratio = answer_step / motion_step;
}

START_TEST(test_stream_smooth_ur5)
{
    ik_chain c = ur5();
    double mid[6] = {0.2, -1.3, 1.6, -1.9, -1.4, 0.5}, amp[6] = {1.0, 0.4, 0.6, 0.8, 0.3, 2.5};
    double ratio;
    size_t cont;
    stream_motion(&c, mid, amp, 300, &ratio, &cont);
    ck_assert_double_le(ratio, 3.0);
    ck_assert_uint_ge(cont, 290);
}
END_TEST

/* The UR5's wrist singularity (joint 5 through 0, where joints 4 and 6
 * line up): continuation keeps the branch, no jump. */
START_TEST(test_stream_through_wrist_singularity)
{
    ik_chain c = ur5();
    double mid[6] = {0.4, -1.2, 1.5, -1.7, 0.0, 0.3}, amp[6] = {0.3, 0.2, 0.3, 0.4, 0.6, 0.8};
    double ratio;
    size_t cont;
    stream_motion(&c, mid, amp, 400, &ratio, &cont);
    ck_assert_double_le(ratio, 3.0);
}
END_TEST

/* The PR2 arm without its torso lift and upper-arm roll (six joints, the
 * continuous forearm and wrist rolls at indices 3 and 5), both rolls
 * turning through several half turns. */
START_TEST(test_stream_smooth_pr2_arm)
{
    ik_joint j[PR2_ARM_JOINTS];
    pr2_arm_joints(j);
    j[0].type = j[3].type = IK_JOINT_FIXED;
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, PR2_ARM_JOINTS), IK_OK);
    ck_assert_uint_eq(c.dof, 6);
    double mid[6] = {-0.8, 0.4, -1.1, 2.8, -1.0, 3.0};
    double amp[6] = {0.6, 0.4, 0.6, 2.5, 0.6, 3.5};
    double ratio;
    size_t cont;
    stream_motion(&c, mid, amp, 300, &ratio, &cont);
    ck_assert_double_le(ratio, 3.0);
}
END_TEST

/* ---- the step limit ------------------------------------------------------------ */

START_TEST(test_max_step_refuses)
{
    ik_chain c = ur5();
    rng_state = 47;
    ik_numeric_opts o = det_opts(IK_SEARCH_NEAREST_TO_SEED);
    size_t refused = 0, accepted = 0;
    for (int i = 0; i < 100; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        for (size_t k = 0; k < c.dof; k++)
            seed[k] = ik_clamp(qt[k] + urand(-0.3, 0.3), c.lower[k], c.upper[k]);
        ik_xform goal = ik_chain_fk(&c, qt);
        ik_target t = ik_target_full_pose(goal);
        o.max_step = 0.2;
        ik_numeric_result res;
        int st = ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, q, &res);
        if (st == IK_ESTEP) {
            refused++;
            ck_assert_int_eq(memcmp(q, seed, c.dof * sizeof *q), 0); /* no motion */
            ck_assert_double_gt(res.max_step, 0.2);
        } else {
            ck_assert_int_eq(st, IK_OK);
            accepted++;
            assert_reaches(&c, goal, q);
            for (size_t k = 0; k < c.dof; k++)
                ck_assert_double_le(fabs(q[k] - seed[k]), 0.2);
            ck_assert_double_le(res.max_step, 0.2);
        }
    }
    ck_assert_uint_gt(refused, 10);
    ck_assert_uint_gt(accepted, 10);
    o.max_step = -1;
    double q[6];
    ik_target t = ik_target_position(ik_v3(0.3, 0.1, 0.3));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL), IK_EINVAL);
    o.max_step = 0;
    o.max_step_lin = NAN;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL), IK_EINVAL);
}
END_TEST

static Suite *turns_suite(void)
{
    Suite *s = suite_create("ik_turns");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_nearest_turn_random_seeds);
    tcase_add_test(tc, test_ur5_seed_a_turn_up);
    tcase_add_test(tc, test_continuous_sweep_monotonic);
    tcase_add_test(tc, test_stream_smooth_ur5);
    tcase_add_test(tc, test_stream_through_wrist_singularity);
    tcase_add_test(tc, test_stream_smooth_pr2_arm);
    tcase_add_test(tc, test_max_step_refuses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(turns_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
