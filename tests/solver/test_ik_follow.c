/*
 * test_ik_follow.c: solver/ik_numeric.h's FOLLOWING A MOTION (opts.follow),
 * the continuation a stream's solves use on redundant chains. Every answer
 * is checked by forward kinematics (ik_chain_fk and ik_pose_error against
 * the target) and against the joint limits, never by the solver's own
 * report; every search is bounded by iterations, not time, so every figure
 * here is the same on every run and every machine.
 *
 * The motions are those of tests/server/test_robot_stream.py: each joint a
 * sinusoid of 0.3 rad around a centre, at its own frequency, 300 steps,
 * turned into full poses by forward kinematics and solved one at a time,
 * each solve seeded with the previous answer (a stream). Covered:
 *   - the KUKA iiwa 14 centred where joints 2 and 6 are zero (axes 1 and 3,
 *     and 5 and 7, line up there): no joint step above 3 times the
 *     motion's own largest, no restart, where the nearest solution alone
 *     drifts into the aligned axes and jumps 2.9 rad;
 *   - the same motion started at twelve phases: follow never answers from
 *     a restart, and its worst step is several times smaller than without;
 *   - the Franka Panda whose answers drift onto joint 4's limit without
 *     follow (a restart then jumps 1.6 rad): with it, no restart and no
 *     step above 3 times the motion's own;
 *   - the PR2's right arm under fast forearm and wrist rolls (3.2 rad
 *     either side): its elbow's swivel does not drift the wrist flex onto
 *     its upper limit (the wrist's singularity), where a restart jumped
 *     1.8 rad: no restart, no step above 3 times the motion's own;
 *   - a target that does not move gives the seed back, untouched;
 *   - a chain without spare freedom (the UR5 on full poses) is solved
 *     bit for bit as without follow;
 *   - the added self-motion is bounded (at most half of each iteration's
 *     step): from random seeds, one follow solve steps on average at most
 *     1.2 times, and never more than 2.5 times, as far as the plain
 *     continuation from the same seed (measured: 1.08 median, 2.21 at
 *     most of 5000).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_chain.h"
#include "solver/ik_closed.h"
#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "chains.h"

#define TOL 1e-5

static unsigned char ws[1 << 16];

static ik_chain iiwa(void)
{
    ik_joint j[IIWA_JOINTS];
    iiwa_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, IIWA_JOINTS), IK_OK);
    return c;
}

static ik_chain panda(void)
{
    ik_joint j[PANDA_JOINTS];
    panda_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, PANDA_JOINTS), IK_OK);
    return c;
}

static ik_chain ur5(void)
{
    ik_joint j[UR5_JOINTS];
    ur5_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, UR5_JOINTS), IK_OK);
    return c;
}

/* A stream's options: nearest, iterations only (deterministic). */
static ik_numeric_opts stream_opts(bool follow)
{
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 10000;
    o.search = IK_SEARCH_NEAREST_TO_SEED;
    o.follow = follow;
    return o;
}

/* q reaches goal within the tolerance, inside the limits. */
static void assert_reaches(const ik_chain *c, ik_xform goal, const double *q)
{
    ik_xform x = ik_chain_fk(c, q);
    double e[6];
    ik_pose_error(goal, x, e);
    for (int r = 0; r < 6; r++)
        ck_assert_double_le(fabs(e[r]), TOL);
    ck_assert(ik_chain_within_limits(c, q, 1e-12));
}

/* Joint k of the motion at step i of n (test_robot_stream.py's motion()):
 * a sinusoid of amp[k] (0.3 for every joint when amp is NULL) around
 * centre[k]. */
static double motion_q(const double *centre, const double *amp, size_t k, int i, int n,
                       double phase)
{
    double w = 2.0 * IK_PI * (double)i / (double)n * (1.0 + 0.5 * (double)(k % 3)) + phase +
               0.7 * (double)k;
    return centre[k] + (amp ? amp[k] : 0.3) * sin(w);
}

typedef struct stream_stats {
    double ratio;      /* largest answer step over the motion's own */
    size_t restarts;   /* restarts over the whole stream */
    size_t iterations; /* iterations over the whole stream */
} stream_stats;

/* The motion around centre (amplitudes amp, see motion_q), from phase,
 * streamed: opened on its first configuration, each answer checked by FK
 * and limits, seeded with the previous one. */
static stream_stats stream(const ik_chain *c, const double *centre, const double *amp, double phase,
                           bool follow)
{
    const int n = 300;
    ik_numeric_opts o = stream_opts(follow);
    double prev[TEST_DOF_CAP], qm_prev[TEST_DOF_CAP];
    double own = 0.0, worst = 0.0;
    stream_stats st = {0, 0, 0};
    for (int i = 0; i <= n; i++) {
        double qm[TEST_DOF_CAP], q[TEST_DOF_CAP];
        for (size_t k = 0; k < c->dof; k++)
            qm[k] = motion_q(centre, amp, k, i, n, phase);
        if (i == 0) {
            memcpy(prev, qm, sizeof prev);
            memcpy(qm_prev, qm, sizeof qm_prev);
        }
        ik_xform goal = ik_chain_fk(c, qm);
        ik_target t = ik_target_full_pose(goal);
        ik_numeric_result res;
        ck_assert_int_eq(ik_numeric_solve(c, &t, prev, &o, ws, sizeof ws, q, &res), IK_OK);
        assert_reaches(c, goal, q);
        for (size_t k = 0; k < c->dof; k++) {
            own = fmax(own, fabs(qm[k] - qm_prev[k]));
            worst = fmax(worst, fabs(q[k] - prev[k]));
        }
        st.restarts += res.restarts;
        st.iterations += res.iterations;
        memcpy(prev, q, sizeof prev);
        memcpy(qm_prev, qm, sizeof qm_prev);
    }
    st.ratio = worst / own;
    return st;
}

/* The iiwa motion of test_robot_stream.py's
 * test_smooth_iiwa14_through_singular_centre: joints 2 and 6 around 0. */
static const double IIWA_SINGULAR[7] = {0.2, 0.0, -0.2, -1.3, 0.3, 0.0, 0.1};

START_TEST(test_iiwa_through_singular_centre)
{
    ik_chain c = iiwa();
    stream_stats plain = stream(&c, IIWA_SINGULAR, NULL, 0.0, false);
    stream_stats fol = stream(&c, IIWA_SINGULAR, NULL, 0.0, true);
    /* the nearest solution alone: 2.9 rad at step 277, after a restart */
    ck_assert_double_gt(plain.ratio, 100.0);
    ck_assert_double_le(fol.ratio, 3.0);
    ck_assert_uint_eq(fol.restarts, 0);
}
END_TEST

START_TEST(test_iiwa_singular_phases)
{
    ik_chain c = iiwa();
    double worst_plain = 0.0, worst_fol = 0.0;
    size_t within = 0;
    for (int p = 0; p < 12; p++) {
        stream_stats plain = stream(&c, IIWA_SINGULAR, NULL, 0.5 * p, false);
        stream_stats fol = stream(&c, IIWA_SINGULAR, NULL, 0.5 * p, true);
        ck_assert_uint_eq(fol.restarts, 0);
        worst_plain = fmax(worst_plain, plain.ratio);
        worst_fol = fmax(worst_fol, fol.ratio);
        within += fol.ratio <= 3.0;
    }
    ck_assert_double_gt(worst_plain, 5.0 * worst_fol);
    ck_assert_uint_ge(within, 8);
}
END_TEST

/* A Panda motion whose nearest answers drift onto joint 4's upper limit
 * (-0.0698) while the motion's own joint 4 stays near -0.64. */
START_TEST(test_panda_off_the_limit)
{
    ik_chain c = panda();
    const double centre[7] = {0.403, 1.242, -1.351, -0.639, 1.794, 1.235, -1.837};
    stream_stats plain = stream(&c, centre, NULL, 0.0, false);
    stream_stats fol = stream(&c, centre, NULL, 0.0, true);
    ck_assert_double_gt(plain.ratio, 50.0);
    ck_assert_uint_gt(plain.restarts, 0);
    ck_assert_double_le(fol.ratio, 3.0);
    ck_assert_uint_eq(fol.restarts, 0);
}
END_TEST

/* Independent forward kinematics straight from the described joints, with
 * URDF semantics: T = prod(origin_i * motion_i(q_i)), fixed joints have no
 * motion (does not use ik_chain_fk; test_ik_numeric.c's urdf_fk). */
static ik_xform urdf_fk(const ik_joint *j, size_t n, const double *q)
{
    ik_xform T = ik_xform_identity();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        T = ik_xform_mul(T, j[i].origin);
        if (j[i].type == IK_JOINT_FIXED)
            continue;
        ik_xform m = ik_xform_identity();
        ik_vec3 ax = ik_vec3_normalize(j[i].axis);
        if (j[i].type == IK_JOINT_PRISMATIC)
            m.p = ik_vec3_scale(ax, q[k]);
        else
            m.q = ik_quat_from_axis_angle(ax, q[k]);
        T = ik_xform_mul(T, m);
        k++;
    }
    return T;
}

/* The smallest singular value of the chain's 6 x n Jacobian at q (the
 * square root of the smallest eigenvalue of J J^T, by cyclic Jacobi
 * rotations): how near q is to a singular configuration. */
static double smallest_singular(const ik_chain *c, const double *q)
{
    const size_t n = c->dof;
    double J[6 * TEST_DOF_CAP], R[9], p[3], A[6][6];
    ik_chain_jacobian_mat(c, q, J, R, p);
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            double s = 0.0;
            for (size_t k = 0; k < n; k++)
                s += J[(size_t)a * n + k] * J[(size_t)b * n + k];
            A[a][b] = s;
        }
    for (int sweep = 0; sweep < 50; sweep++)
        for (int a = 0; a < 6; a++)
            for (int b = a + 1; b < 6; b++) {
                if (fabs(A[a][b]) < 1e-300)
                    continue;
                double th = 0.5 * atan2(2.0 * A[a][b], A[b][b] - A[a][a]);
                double co = cos(th), si = sin(th);
                for (int k = 0; k < 6; k++) {
                    double x = A[k][a], y = A[k][b];
                    A[k][a] = co * x - si * y;
                    A[k][b] = si * x + co * y;
                }
                for (int k = 0; k < 6; k++) {
                    double x = A[a][k], y = A[b][k];
                    A[a][k] = co * x - si * y;
                    A[b][k] = si * x + co * y;
                }
            }
    double low = INFINITY;
    for (int a = 0; a < 6; a++)
        low = fmin(low, A[a][a]);
    return sqrt(fmax(low, 0.0));
}

/* The Panda motion of test_panda_off_the_limit started at 24 phases (0,
 * 0.5, ..., 11.5), each answer checked by the independent FK above and
 * against the limits. Every one of these motions passes within a
 * thousandth or so (smallest singular value of the Jacobian) of a singular
 * configuration of the whole arm. Measured (iteration-bounded, the same on
 * every run): 7 of the 24 have steps above 3 times the motion's own, the
 * worst 171 times (2.14 rad, phase 3.0, after 9 restarts); 3 of them jump
 * after restarts (phases 3.0, 5.0, 6.0). Each of the 7 first steps that far
 * only after its answers came within 0.0025 of a singular configuration;
 * none of the 9 motions whose answers stayed 0.004 or more from one jumps.
 * At phase 5.0 the answers follow the motion exactly until they cross the
 * singular set (step 70), then their joint 4 turns the other way along the
 * self-motion (the motion's goes from -0.41 to -0.54, the answers' to
 * -0.07, its upper limit, by step 136), where the continuation stalls at 9
 * times the tolerance and a restart answers 0.73 rad away. So the jumps
 * come from the continuation leaving a singular crossing on another
 * self-motion branch, not from the limit handling: the limit is where that
 * branch ends. Not fixed: this test holds what is true today (the 17
 * continuous motions, at most 3 with restarts, and that no answer jumps
 * before its motion crossed near a singular configuration), so that a
 * fix can raise it and a regression, or a jump elsewhere, fails it. */
START_TEST(test_panda_singular_crossings)
{
    ik_joint j[PANDA_JOINTS];
    panda_joints(j);
    ik_chain c = panda();
    ik_numeric_opts o = stream_opts(true);
    const double centre[7] = {0.403, 1.242, -1.351, -0.639, 1.794, 1.235, -1.837};
    const int steps = 300;
    size_t continuous = 0, restarted = 0;
    double worst = 0.0;
    for (int ph = 0; ph < 24; ph++) {
        double prev[7], qm_prev[7], own = 0.0, largest = 0.0, near_singular = INFINITY;
        size_t restarts = 0;
        for (int i = 0; i <= steps; i++) {
            double qm[7], q[7];
            for (size_t k = 0; k < 7; k++)
                qm[k] = motion_q(centre, NULL, k, i, steps, 0.5 * ph);
            if (i == 0) {
                memcpy(prev, qm, sizeof prev);
                memcpy(qm_prev, qm, sizeof qm_prev);
            }
            ik_xform goal = urdf_fk(j, PANDA_JOINTS, qm);
            ik_target t = ik_target_full_pose(goal);
            ik_numeric_result res;
            ck_assert_int_eq(ik_numeric_solve(&c, &t, prev, &o, ws, sizeof ws, q, &res), IK_OK);
            double e[6], step = 0.0;
            ik_pose_error(goal, urdf_fk(j, PANDA_JOINTS, q), e);
            for (int r = 0; r < 6; r++)
                ck_assert_double_le(fabs(e[r]), TOL);
            for (size_t k = 0; k < 7; k++) {
                ck_assert(q[k] >= c.lower[k] && q[k] <= c.upper[k]);
                own = fmax(own, fabs(qm[k] - qm_prev[k]));
                step = fmax(step, fabs(q[k] - prev[k]));
            }
            ck_assert_msg(step <= 3.0 * own || near_singular < 0.003,
                          "phase %.1f, step %d: %.3f rad (%.1f times the motion's) with the "
                          "answers never nearer than %.4f to a singular configuration",
                          0.5 * ph, i, step, step / own, near_singular);
            largest = fmax(largest, step);
            near_singular = fmin(near_singular, smallest_singular(&c, q));
            restarts += res.restarts;
            memcpy(prev, q, sizeof prev);
            memcpy(qm_prev, qm, sizeof qm_prev);
        }
        continuous += largest <= 3.0 * own;
        restarted += restarts > 0;
        worst = fmax(worst, largest / own);
    }
    ck_assert_msg(continuous >= 17 && restarted <= 3,
                  "%zu of 24 motions within 3 times their own step, %zu with restarts, the "
                  "worst %.1f times",
                  continuous, restarted, worst);
}
END_TEST

/* The PR2's right arm, torso_lift_link -> r_wrist_roll_link (the PR2-like
 * arm of chains.h without its torso and tool): the motion of
 * test_robot_stream.py's motion(pr2, amp=0.2, spin=3.2), each joint with
 * walls a sinusoid of a fifth of its half range around its middle, the
 * continuous forearm and wrist rolls 3.2 rad either side of 0.3. The tip
 * (the wrist's centre) is placed by the first four joints, so the arm has
 * one spare freedom, its elbow's swivel. The nearest solution alone, and
 * follow without a pull towards the middle of the ranges, let the swivel
 * drift with the fast rolls (the upper arm roll from -1.4 to -3.4 while
 * the motion's stays within -1.9 and -1.3) until the wrist flex sits on
 * its upper limit, 0, which is also the wrist's singularity (forearm and
 * wrist rolls in line): the next targets are met there only with both
 * rolls turned by pi, and a restart answered 1.8 rad away (step 276, 10
 * restarts, 17.6 times the motion's own step). Now no step above 3 times
 * the motion's own and no restart, from six phases. */
static ik_chain pr2_arm(void)
{
    ik_joint j[PR2_ARM_JOINTS];
    pr2_arm_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j + 1, PR2_ARM_JOINTS - 2), IK_OK);
    ck_assert_uint_eq(c.dof, 7);
    return c;
}

START_TEST(test_pr2_fast_rolls)
{
    ik_chain c = pr2_arm();
    double centre[7], amp[7];
    for (size_t k = 0; k < 7; k++) {
        if (c.type[k] == IK_JOINT_CONTINUOUS) {
            centre[k] = 0.3;
            amp[k] = 3.2;
        } else {
            double half = 0.5 * fmin(c.upper[k] - c.lower[k], 2.0 * IK_PI);
            centre[k] = 0.5 * (c.upper[k] + c.lower[k]);
            amp[k] = fmin(0.2 * half, 0.3);
        }
    }
    for (int p = 0; p < 6; p++) {
        stream_stats fol = stream(&c, centre, amp, 0.5 * p, true);
        ck_assert_msg(fol.ratio <= 3.0 && fol.restarts == 0,
                      "phase %.1f: largest step %.2f times the motion's, %zu restarts", 0.5 * p,
                      fol.ratio, fol.restarts);
    }
}
END_TEST

START_TEST(test_still_target)
{
    ik_chain c = iiwa();
    ik_numeric_opts o = stream_opts(true);
    double seed[7] = {0.3, 0.05, -0.4, -1.2, 0.7, 0.02, -0.5}, q[7];
    ik_target t = ik_target_full_pose(ik_chain_fk(&c, seed));
    ik_numeric_result res;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, q, &res), IK_OK);
        for (size_t k = 0; k < 7; k++)
            ck_assert_double_eq(q[k], seed[k]);
        ck_assert_uint_eq(res.iterations, 0);
    }
}
END_TEST

START_TEST(test_no_spare_freedom)
{
    ik_chain c = ur5();
    ik_numeric_opts plain = stream_opts(false), fol = stream_opts(true);
    /* the wrist through its singularity (joint 5 through 0) */
    const double mid[6] = {0.4, -1.2, 1.5, -1.7, 0.0, 0.3};
    double a[6], b[6];
    memcpy(a, mid, sizeof a);
    memcpy(b, mid, sizeof b);
    for (int i = 1; i <= 200; i++) {
        double qm[6], qa[6], qb[6];
        for (size_t k = 0; k < 6; k++)
            qm[k] = mid[k] + 0.4 * sin(0.05 * i * (1.0 + 0.3 * (double)k));
        ik_xform goal = ik_chain_fk(&c, qm);
        ik_target t = ik_target_full_pose(goal);
        ik_numeric_result ra, rb;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, a, &plain, ws, sizeof ws, qa, &ra), IK_OK);
        ck_assert_int_eq(ik_numeric_solve(&c, &t, b, &fol, ws, sizeof ws, qb, &rb), IK_OK);
        assert_reaches(&c, goal, qb);
        ck_assert_uint_eq(ra.iterations, rb.iterations);
        for (size_t k = 0; k < 6; k++)
            ck_assert(qa[k] == qb[k]);
        memcpy(a, qa, sizeof a);
        memcpy(b, qb, sizeof b);
    }
}
END_TEST

/* From random configurations of the iiwa, a random small motion of every
 * joint (up to 0.05 rad): the follow answer reaches the target and steps
 * on average at most 1.2 times, never more than 2.5 times, as far as the
 * plain continuation's answer. */
START_TEST(test_bounded_self_motion)
{
    ik_chain c = iiwa();
    ik_numeric_opts plain = stream_opts(false), fol = stream_opts(true);
    uint64_t s = 42;
    double ratio_max = 0.0, ratio_sum = 0.0;
    size_t count = 0;
    for (int i = 0; i < 500; i++) {
        double seed[7], qm[7], qa[7], qb[7];
        for (size_t k = 0; k < 7; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(s >> 11) * 0x1.0p-53;
            seed[k] = c.lower[k] + 0.1 + (c.upper[k] - c.lower[k] - 0.2) * u;
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            qm[k] = seed[k] + 0.05 * (2.0 * ((double)(s >> 11) * 0x1.0p-53) - 1.0);
        }
        ik_xform goal = ik_chain_fk(&c, qm);
        ik_target t = ik_target_full_pose(goal);
        ik_numeric_result ra, rb;
        if (ik_numeric_solve(&c, &t, seed, &plain, ws, sizeof ws, qa, &ra) != IK_OK || ra.restarts)
            continue;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &fol, ws, sizeof ws, qb, &rb), IK_OK);
        assert_reaches(&c, goal, qb);
        if (rb.restarts)
            continue;
        ratio_max = fmax(ratio_max, rb.max_step / ra.max_step);
        ratio_sum += rb.max_step / ra.max_step;
        count++;
    }
    ck_assert_uint_ge(count, 400);
    ck_assert_double_le(ratio_sum / (double)count, 1.2);
    ck_assert_double_le(ratio_max, 2.5);
}
END_TEST

/* Continuation first, and no jump farther than a solution next to the seed:
 * the UR5 streamed with the numeric solver along wide motions (each joint
 * swinging over half its range, at most 1.5 rad, past its limits' regions),
 * opened WITHOUT a seed (the first answer from the mid-limit pose, so the
 * stream runs on a branch of its own, as an unseeded wire stream does),
 * every later solve seeded with the previous answer. The UR5's closed form
 * (ik_closed.h) lists every solution of each target: whenever one lies
 * within 1 rad of the seed on every joint (a solution a walk from the seed
 * can reach), the answer is about as near the seed (Euclidean, turn-aware,
 * as the nearest search measures) as the nearest solution: within a
 * quarter of its distance or 0.05 rad (next to the wrist's singularity two
 * solutions lie a few hundredths apart), never on a far branch. */
START_TEST(test_nearest_against_closed_form)
{
    ik_chain c = ur5();
    static ik_closed k;
    ck_assert_int_eq(ik_closed_init(&k, &c), IK_OK);
    ck_assert_int_ne(k.kind, IK_CLOSED_NONE);
    ik_numeric_opts o = stream_opts(true);
    double centre[TEST_DOF_CAP];
    ik_chain_mid(&c, centre);
    static double all[6 * 1024];
    size_t checked = 0;
    for (int ph = 0; ph < 6; ph++) {
        double prev[TEST_DOF_CAP];
        bool have = false;
        for (int i = 0; i <= 150; i++) {
            double qm[TEST_DOF_CAP], q[TEST_DOF_CAP];
            for (size_t j = 0; j < c.dof; j++) {
                double w = 2.0 * IK_PI * (double)i / 150.0 * (1.0 + 0.5 * (double)(j % 3)) +
                           0.5 * ph + 0.7 * (double)j;
                double half = 0.5 * fmin(c.upper[j] - c.lower[j], 2.0 * IK_PI);
                qm[j] = centre[j] + fmin(0.5 * half, 1.5) * sin(w);
            }
            ik_xform goal = ik_chain_fk(&c, qm);
            ik_target t = ik_target_full_pose(goal);
            ik_numeric_result res;
            ck_assert_int_eq(ik_numeric_solve(&c, &t, have ? prev : NULL, &o, ws, sizeof ws, q,
                                              &res),
                             IK_OK);
            assert_reaches(&c, goal, q);
            if (have) {
                ik_closed_result cr;
                size_t m = ik_closed_solve_all(&c, &k, &t, prev, NULL, all, 1024, &cr);
                ck_assert_uint_gt(m, 0);
                double near2 = INFINITY, near_step = 0.0, got2 = 0.0;
                for (size_t s = 0; s < m; s++) {
                    double d2 = 0.0, step = 0.0;
                    for (size_t j = 0; j < 6; j++) {
                        double d = all[6 * s + j] - prev[j];
                        d2 += d * d;
                        step = fmax(step, fabs(d));
                    }
                    if (d2 < near2) {
                        near2 = d2;
                        near_step = step;
                    }
                }
                for (size_t j = 0; j < 6; j++)
                    got2 += (q[j] - prev[j]) * (q[j] - prev[j]);
                if (near_step <= 1.0) {
                    checked++;
                    ck_assert_msg(sqrt(got2) <= fmax(1.25 * sqrt(near2), sqrt(near2) + 0.05),
                                  "motion %d, step %d: the answer moves %.4f rad, a solution %.4f "
                                  "rad from the seed exists",
                                  ph, i, sqrt(got2), sqrt(near2));
                }
            }
            memcpy(prev, q, sizeof prev);
            have = true;
        }
    }
    ck_assert_uint_ge(checked, 800);
}
END_TEST

static Suite *follow_suite(void)
{
    Suite *s = suite_create("ik_follow");
    TCase *tc = tcase_create("follow");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_iiwa_through_singular_centre);
    tcase_add_test(tc, test_iiwa_singular_phases);
    tcase_add_test(tc, test_panda_off_the_limit);
    tcase_add_test(tc, test_panda_singular_crossings);
    tcase_add_test(tc, test_pr2_fast_rolls);
    tcase_add_test(tc, test_still_target);
    tcase_add_test(tc, test_no_spare_freedom);
    tcase_add_test(tc, test_bounded_self_motion);
    tcase_add_test(tc, test_nearest_against_closed_form);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(follow_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
