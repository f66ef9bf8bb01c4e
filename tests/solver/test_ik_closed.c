/*
 * test_ik_closed.c: solver/ik_closed.h, the closed-form solvers of the OPW
 * and UR families, and solver/ik_reason.h.
 *
 * Every answer is checked by forward kinematics computed HERE (ref_fk: the
 * described joints composed one by one with ik_math quaternions, without
 * ik_chain.c's compiled form), never against the solver's own report or
 * output. Chains: the UR5 and the ABB IRB 120 as their URDFs in tests/data
 * describe them (read through proto/proto_urdf.h, and as joint lists), a UR10-like
 * arm (its published lengths) and a KUKA KR6-like arm with axes 1, 4 and 6
 * pointing against the usual direction and a tilted zero pose (sign
 * conventions and joint offsets), all built here.
 *   - detection: each of those is found (OPW or UR) and others are not
 *     (7 joints, a prismatic joint, a tilted axis 3), with the reason;
 *   - every branch: for random configurations, every exact branch reaches
 *     the pose within 1e-9, the drawn configuration is among them, and
 *     generic configurations have 8 distinct branches;
 *   - the answer: the solution nearest the seed, inside the limits; the
 *     list of all solutions sorted by distance, 2 pi k equivalents included
 *     (the UR5's +-2 pi joints);
 *   - degenerate poses (wrist and shoulder singularities) give the
 *     documented answers, never NaN;
 *   - failures: beyond the maximum reach, too close, outside the limits,
 *     each with its reason and a best pose inside the limits;
 *   - collisions: with a check that avoids, the nearest solution clear of
 *     an obstacle put on the nearest one's elbow (distances computed here),
 *     or IK_ECOLLISION when every solution collides.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/proto/urdf_read.h"
#include "solver/ik_chain.h"
#include "solver/ik_closed.h"
#include "solver/ik_collide.h"
#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"
#include "chains.h"

#define EXACT 1e-9

static uint64_t rng_state = 12345;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1.0p-53);
}

/* ---- chains ------------------------------------------------------------- */

typedef struct arm {
    ik_joint j[16];
    size_t n;
    ik_chain c;
    ik_closed k;
} arm;

static void arm_init(arm *a)
{
    ck_assert_int_eq(chain_init(&a->c, a->j, a->n), IK_OK);
    ck_assert_int_eq(ik_closed_init(&a->k, &a->c), IK_OK);
}

static void make_ur5(arm *a)
{
    ur5_joints(a->j);
    a->n = UR5_JOINTS;
    arm_init(a);
}

/* The IRB 120 of tests/data/robots/abb_irb120.urdf, base_link -> tool0. */
static void make_irb120(arm *a)
{
    const ik_vec3 X = ik_v3(1, 0, 0), Y = ik_v3(0, 1, 0), Z = ik_v3(0, 0, 1);
    a->j[0] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, Z, -2.87979, 2.87979);
    a->j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.29), ZERO, Y, -1.91986, 1.91986);
    a->j[2] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.27), ZERO, Y, -1.91986, 1.22173);
    a->j[3] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.07), ZERO, X, -2.79253, 2.79253);
    a->j[4] = joint(IK_JOINT_REVOLUTE, ik_v3(0.302, 0, 0), ZERO, Y, -2.094395, 2.094395);
    a->j[5] = joint(IK_JOINT_REVOLUTE, ik_v3(0.072, 0, 0), ZERO, X, -6.98132, 6.98132);
    a->j[6] = joint(IK_JOINT_FIXED, ZERO, ZERO, ZERO, 0, 0);
    a->n = 7;
    arm_init(a);
}

/* A UR10-like arm: the UR5's layout with the UR10's published lengths
 * (d1 0.1273, shoulder offset 0.220941, upper arm 0.612, elbow offset
 * 0.1719, forearm 0.5723, wrist 0.1157 / 0.1157 / 0.0922), and the
 * elbow limited to +-pi as on the real arm. */
static void make_ur10(arm *a)
{
    const double pi2 = IK_PI / 2, L = 2 * IK_PI;
    const ik_vec3 Y = ik_v3(0, 1, 0), Z = ik_v3(0, 0, 1);
    a->j[0] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1273), ZERO, Z, -L, L);
    a->j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0.220941, 0), ik_v3(0, pi2, 0), Y, -L, L);
    a->j[2] = joint(IK_JOINT_REVOLUTE, ik_v3(0, -0.1719, 0.612), ZERO, Y, -IK_PI, IK_PI);
    a->j[3] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.5723), ik_v3(0, pi2, 0), Y, -L, L);
    a->j[4] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0.1157, 0), ZERO, Z, -L, L);
    a->j[5] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1157), ZERO, Y, -L, L);
    a->j[6] = joint(IK_JOINT_FIXED, ik_v3(0, 0.0922, 0), ik_v3(-pi2, 0, 0), ZERO, 0, 0);
    a->n = 7;
    arm_init(a);
}

/* A KUKA KR6-like arm (OPW parameters a1 0.025, a2 -0.035, b 0, c1 0.4,
 * c2 0.315, c3 0.365, c4 0.08 as in the KR 6 R700 sixx), written the way
 * KUKA's URDFs do: axes 1, 4 and 6 point against z and x, and here also a
 * zero pose with the upper arm tilted by 0.3 rad (a joint offset) and a
 * tool frame turned about y. */
static void make_kr6(arm *a)
{
    const ik_vec3 NX = ik_v3(-1, 0, 0), Y = ik_v3(0, 1, 0), NZ = ik_v3(0, 0, -1);
    a->j[0] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.4), ZERO, NZ, -2.967, 2.967);
    a->j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(0.025, 0, 0), ik_v3(0, 0.3, 0), Y, -3.3, 0.8);
    a->j[2] = joint(IK_JOINT_REVOLUTE, ik_v3(0.315, 0, 0), ik_v3(0, -0.3, 0), Y, -2.0, 2.7);
    a->j[3] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.035), ZERO, NX, -3.228, 3.228);
    a->j[4] = joint(IK_JOINT_REVOLUTE, ik_v3(0.365, 0, 0), ZERO, Y, -2.09, 2.09);
    a->j[5] = joint(IK_JOINT_REVOLUTE, ik_v3(0.08, 0, 0), ZERO, NX, -6.1, 6.1);
    a->j[6] = joint(IK_JOINT_FIXED, ZERO, ik_v3(0, IK_PI / 2, 0), ZERO, 0, 0);
    a->n = 7;
    arm_init(a);
}

/* ---- independent forward kinematics --------------------------------------- */

/* The frame of movable joint k_want (its rotation q[k_want] applied): where
 * the collision model's body k_want + 1 sits; with k_want past the last
 * movable joint, the tip (every joint composed). */
static ik_xform ref_joint_frame(const arm *a, const double *q, size_t k_want)
{
    ik_xform T = ik_xform_identity();
    size_t k = 0;
    for (size_t i = 0; i < a->n; i++) {
        const ik_joint *j = &a->j[i];
        T = ik_xform_mul(T, j->origin);
        if (j->type == IK_JOINT_FIXED)
            continue;
        ik_xform m = ik_xform_identity();
        m.q = ik_quat_from_axis_angle(j->axis, q[k]);
        T = ik_xform_mul(T, m);
        T.q = ik_quat_normalize(T.q);
        if (k++ == k_want)
            break;
    }
    return T;
}

static ik_xform ref_fk(const arm *a, const double *q)
{
    return ref_joint_frame(a, q, SIZE_MAX);
}

/* Largest position and rotation error components of q against goal. */
static void fk_err(const arm *a, ik_xform goal, const double *q, double *ep, double *er)
{
    double e[6];
    ik_pose_error(goal, ref_fk(a, q), e);
    *ep = fmax(fabs(e[0]), fmax(fabs(e[1]), fabs(e[2])));
    *er = fmax(fabs(e[3]), fmax(fabs(e[4]), fabs(e[5])));
}

static void assert_reaches(const arm *a, ik_xform goal, const double *q, double tol)
{
    double ep, er;
    for (int j = 0; j < 6; j++)
        ck_assert(isfinite(q[j]));
    fk_err(a, goal, q, &ep, &er);
    ck_assert_msg(ep <= tol && er <= tol, "pose error %.3g m, %.3g rad", ep, er);
}

static void random_q(const arm *a, double *q)
{
    for (int j = 0; j < 6; j++) {
        double lo = a->c.lower[j], hi = a->c.upper[j];
        if (hi - lo > 2 * IK_PI) {
            lo = -IK_PI;
            hi = IK_PI;
        }
        q[j] = urand(lo, hi);
    }
}

static void goal_of(const arm *a, const double *q, double R[9], double p[3], ik_xform *g)
{
    *g = ref_fk(a, q);
    ik_quat_to_mat3(g->q, R);
    p[0] = g->p.x;
    p[1] = g->p.y;
    p[2] = g->p.z;
}

/* ---- detection -------------------------------------------------------------- */

START_TEST(test_detects_families)
{
    static arm a;
    make_ur5(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_UR);
    ck_assert_int_eq(a.k.why, IK_CLOSED_WHY_OK);
    make_ur10(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_UR);
    make_irb120(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_OPW);
    ck_assert_int_eq(a.k.why, IK_CLOSED_WHY_OK);
    make_kr6(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_OPW);
    ck_assert_str_eq(ik_closed_kind_name(IK_CLOSED_OPW), "opw");
    ck_assert_str_eq(ik_closed_kind_name(IK_CLOSED_UR), "ur");
    ck_assert_str_eq(ik_closed_why_name(IK_CLOSED_WHY_PROOF), "fk_proof_failed");
    ck_assert_str_eq(ik_closed_why_name(99), "unknown");
}
END_TEST

/* The shared URDFs, read as the daemon reads them. */
static void load_urdf(const char *file, const char *base, const char *tip, ik_chain *c)
{
    const char *dir = getenv("IKD_DATA");
    char path[512];
    snprintf(path, sizeof path, "%s/robots/%s", dir && *dir ? dir : "tests/data", file);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char xml[1 << 20];
    size_t len = fread(xml, 1, sizeof xml, f);
    fclose(f);
    static ik_joint j[TEST_JOINTS_CAP];
    size_t n;
    proto_error err;
    ck_assert_int_eq(proto_urdf_chain(xml, len, base, tip, j, TEST_JOINTS_CAP, &n, NULL, &err), 0);
    ck_assert_int_eq(chain_init(c, j, n), IK_OK);
}

START_TEST(test_detects_from_urdf)
{
    static ik_chain c;
    ik_closed k;
    load_urdf("ur5.urdf", "base_link", "tool0", &c);
    ik_closed_init(&k, &c);
    ck_assert_int_eq(k.kind, IK_CLOSED_UR);
    load_urdf("abb_irb120.urdf", "base_link", "tool0", &c);
    ik_closed_init(&k, &c);
    ck_assert_int_eq(k.kind, IK_CLOSED_OPW);
    load_urdf("ur10_like.urdf", "base_link", "tool0", &c);
    ik_closed_init(&k, &c);
    ck_assert_int_eq(k.kind, IK_CLOSED_UR);
    load_urdf("kuka_iiwa14_r820.urdf", "base_link", "tool0", &c);
    ik_closed_init(&k, &c);
    ck_assert_int_eq(k.kind, IK_CLOSED_NONE);
    ck_assert_int_eq(k.why, IK_CLOSED_WHY_DOF);
}
END_TEST

START_TEST(test_rejects_others)
{
    static arm a;
    /* axis 3 tilted by 0.1 rad: no longer parallel to axis 2 */
    ur5_joints(a.j);
    a.n = UR5_JOINTS;
    a.j[2].axis = ik_v3(0, cos(0.1), sin(0.1));
    arm_init(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_NONE);
    ck_assert_int_eq(a.k.why, IK_CLOSED_WHY_GEOMETRY);
    /* a wrist whose axes 5 and 6 miss each other by 1 cm */
    make_irb120(&a);
    a.j[5].origin.p = ik_v3(0.072, 0.01, 0);
    arm_init(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_NONE);
    ck_assert_int_eq(a.k.why, IK_CLOSED_WHY_GEOMETRY);
    /* a prismatic joint */
    make_irb120(&a);
    a.j[0].type = IK_JOINT_PRISMATIC;
    arm_init(&a);
    ck_assert_int_eq(a.k.why, IK_CLOSED_WHY_PRISMATIC);
    /* seven joints */
    ik_joint pr2[PR2_ARM_JOINTS];
    pr2_arm_joints(pr2);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, pr2, PR2_ARM_JOINTS), IK_OK);
    ik_closed k;
    ck_assert_int_eq(ik_closed_init(&k, &c), IK_OK);
    ck_assert_int_eq(k.why, IK_CLOSED_WHY_DOF);
    ck_assert_int_eq(ik_closed_init(NULL, &c), IK_EINVAL);
    /* and the solvers refuse a chain without a closed form */
    double q[6];
    ik_closed_result res;
    ik_target t = ik_target_full_pose(ik_xform_identity());
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, q, &res), IK_EINVAL);
    ck_assert_int_eq(res.status, IK_EINVAL);
}
END_TEST

/* ---- every branch ------------------------------------------------------------- */

static void check_branches(void (*make)(arm *), int samples)
{
    static arm a;
    make(&a);
    ck_assert_int_ne(a.k.kind, IK_CLOSED_NONE);
    double mid[6];
    ik_chain_mid(&a.c, mid);
    int eight = 0;
    for (int s = 0; s < samples; s++) {
        double q[6], R[9], p[3], br[IK_CLOSED_BRANCHES][6];
        bool exact[IK_CLOSED_BRANCHES];
        ik_xform g;
        random_q(&a, q);
        goal_of(&a, q, R, p, &g);
        size_t n = ik_closed_branches(&a.k, R, p, mid, br, exact);
        ck_assert_uint_le(n, IK_CLOSED_BRANCHES);
        bool found = false;
        int distinct = 0;
        for (size_t b = 0; b < n; b++) {
            for (int j = 0; j < 6; j++)
                ck_assert(isfinite(br[b][j]) && fabs(br[b][j]) <= IK_PI + 1e-12);
            if (!exact[b])
                continue;
            assert_reaches(&a, g, br[b], EXACT);
            bool same = true, dup = false;
            for (int j = 0; j < 6; j++)
                same &= fabs(ik_wrap_angle(br[b][j] - q[j])) < 1e-7;
            found |= same;
            for (size_t o = 0; o < b; o++) {
                bool eq = exact[o];
                for (int j = 0; j < 6 && eq; j++)
                    eq = fabs(ik_wrap_angle(br[b][j] - br[o][j])) < 1e-7;
                dup |= eq;
            }
            distinct += !dup;
        }
        ck_assert_msg(found, "sample %d: the drawn configuration is not among the branches", s);
        eight += distinct == 8;
    }
    /* most random configurations of these arms have all 8 branches */
    ck_assert_int_ge(eight, samples / 4);
}

START_TEST(test_branches_ur5)
{
    check_branches(make_ur5, 2000);
}
END_TEST

START_TEST(test_branches_ur10)
{
    check_branches(make_ur10, 2000);
}
END_TEST

START_TEST(test_branches_irb120)
{
    check_branches(make_irb120, 2000);
}
END_TEST

START_TEST(test_branches_kr6)
{
    check_branches(make_kr6, 2000);
}
END_TEST

/* ---- the answer ---------------------------------------------------------------------- */

static void check_nearest(void (*make)(arm *))
{
    static arm a;
    make(&a);
    int near_q = 0;
    for (int s = 0; s < 500; s++) {
        double q[6], seed[6], out[6], R[9], p[3];
        ik_xform g;
        random_q(&a, q);
        goal_of(&a, q, R, p, &g);
        /* a seed 0.05 rad from the drawn pose: that pose is the answer */
        for (int j = 0; j < 6; j++)
            seed[j] = ik_clamp(q[j] + urand(-0.05, 0.05), a.c.lower[j], a.c.upper[j]);
        ik_target t = ik_target_full_pose(g);
        ik_closed_result res;
        ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, out, &res), IK_OK);
        ck_assert_int_eq(res.reason, IK_REASON_NONE);
        assert_reaches(&a, g, out, EXACT);
        ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
        /* q itself is a solution: the answer is at least as near the
         * seed (and is q, unless q is next to a singularity where another
         * branch passes within 0.05) */
        double dq = 0.0, dout = 0.0;
        for (int j = 0; j < 6; j++) {
            dq += (q[j] - seed[j]) * (q[j] - seed[j]);
            dout += (out[j] - seed[j]) * (out[j] - seed[j]);
        }
        ck_assert_double_le(dout, dq + 1e-12);
        int same = 1;
        for (int j = 0; j < 6; j++)
            same &= fabs(out[j] - q[j]) < 1e-7;
        near_q += same;
        ck_assert_double_le(res.pos_err_max, EXACT);
        ck_assert_uint_ge(res.branches, 1);
        ck_assert_uint_ge(res.solutions, 1);
        /* without a seed: some solution, inside the limits, exact */
        ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, NULL), IK_OK);
        assert_reaches(&a, g, out, EXACT);
        ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
    }
    ck_assert_int_ge(near_q, 490);
}

START_TEST(test_nearest_ur5)
{
    check_nearest(make_ur5);
}
END_TEST

START_TEST(test_nearest_irb120)
{
    check_nearest(make_irb120);
}
END_TEST

START_TEST(test_nearest_ur10_kr6)
{
    check_nearest(make_ur10);
    check_nearest(make_kr6);
}
END_TEST

/* The UR5's +-2 pi joints: every branch comes in whole-turn equivalents;
 * the list is sorted by distance, every entry reaches the pose inside the
 * limits, no entry repeats, and the nearest is ik_closed_solve()'s answer. */
START_TEST(test_all_sorted_with_turns)
{
    static arm a;
    make_ur5(&a);
    static double all[6 * 4096];
    for (int s = 0; s < 50; s++) {
        double q[6], R[9], p[3], seed[6], one[6];
        ik_xform g;
        random_q(&a, q);
        random_q(&a, seed);
        goal_of(&a, q, R, p, &g);
        ik_target t = ik_target_full_pose(g);
        ik_closed_result res;
        size_t n = ik_closed_solve_all(&a.c, &a.k, &t, seed, NULL, all, 4096, &res);
        ck_assert_int_eq(res.status, IK_OK);
        ck_assert_uint_eq(n, res.solutions);
        /* joints 1, 2, 4, 5, 6 span 4 pi: 2 or 3 turns each */
        ck_assert_uint_ge(n, 32);
        double prev = -1.0;
        for (size_t i = 0; i < n; i++) {
            const double *x = all + 6 * i;
            assert_reaches(&a, g, x, EXACT);
            ck_assert(ik_chain_within_limits(&a.c, x, 0.0));
            double d = 0.0;
            for (int j = 0; j < 6; j++)
                d += (x[j] - seed[j]) * (x[j] - seed[j]);
            ck_assert_double_ge(d, prev);
            prev = d;
            for (size_t o = 0; o < i; o++) {
                double m = 0.0;
                for (int j = 0; j < 6; j++)
                    m = fmax(m, fabs(x[j] - all[6 * o + j]));
                ck_assert_double_gt(m, 1e-9);
            }
        }
        ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, one, NULL), IK_OK);
        for (int j = 0; j < 6; j++)
            ck_assert_double_eq_tol(one[j], all[j], 1e-12);
        /* a smaller cap keeps the nearest */
        double few[6 * 3];
        ck_assert_uint_eq(ik_closed_solve_all(&a.c, &a.k, &t, seed, NULL, few, 3, NULL), 3);
        for (int i = 0; i < 18; i++)
            ck_assert_double_eq_tol(few[i], all[i], 1e-12);
    }
}
END_TEST

/* ---- degenerate poses ------------------------------------------------------------------ */

/* IRB 120, joint 5 at 0: axes 4 and 6 aligned, only q4 + q6 is fixed. The
 * answer keeps the seed's q4 and still reaches the pose. */
START_TEST(test_wrist_singularity)
{
    static arm a;
    make_irb120(&a);
    double q[6] = {0.3, 0.2, -0.4, 0.7, 0.0, -0.5}, R[9], p[3], out[6];
    ik_xform g;
    goal_of(&a, q, R, p, &g);
    ik_target t = ik_target_full_pose(g);
    for (double s4 = -1.5; s4 <= 1.5; s4 += 0.5) {
        double seed[6] = {0.3, 0.2, -0.4, s4, 0.0, 0.0};
        ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, out, NULL), IK_OK);
        assert_reaches(&a, g, out, EXACT);
        ck_assert_double_eq_tol(out[3], s4, 1e-9);
        ck_assert_double_eq_tol(out[3] + out[5], q[3] + q[5], 1e-9);
    }
    /* UR5, joint 5 at 0: axes 6 and 2 aligned; the seed's q6 is kept */
    make_ur5(&a);
    double u[6] = {0.4, -1.2, 1.1, -0.6, 0.0, 0.9};
    goal_of(&a, u, R, p, &g);
    t = ik_target_full_pose(g);
    double seed[6] = {0.4, -1.2, 1.1, -0.6, 0.0, 0.2};
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, out, NULL), IK_OK);
    assert_reaches(&a, g, out, EXACT);
    ck_assert_double_eq_tol(out[5], 0.2, 1e-9);
}
END_TEST

/* UR5 with the elbow stretched (q3 = 0) and joint 5 at 0 (or pi): only
 * q4 + q6 is fixed, and the elbow reaches the origin of axis 4 for q6 on
 * an arc only (its end: the drawn configuration). The closed form itself (its exact
 * branches, not the numeric finish) reaches every such pose, without a
 * seed and with a random one; the branches used to miss by centimetres
 * for the seed's q6 (q = {0.734611, 2.34083, 0, -2.27439, 0, 2.23158}
 * among them). */
START_TEST(test_ur5_double_singularity)
{
    static arm a;
    make_ur5(&a);
    for (int s = 0; s < 500; s++) {
        double q[6], R[9], p[3], out[6], seed[6], mid[6];
        ik_xform g;
        random_q(&a, q);
        random_q(&a, seed);
        ik_chain_mid(&a.c, mid);
        if (s == 0) {
            const double ex[6] = {0.734611, 2.34083, 0, -2.27439, 0, 2.23158};
            memcpy(q, ex, sizeof q);
        }
        q[2] = 0.0;
        q[4] = s % 4 == 3 ? IK_PI : 0.0; /* folded the other way too */
        goal_of(&a, q, R, p, &g);
        for (int seeded = 0; seeded < 2; seeded++) {
            const double *ref = seeded ? seed : mid;
            double br[IK_CLOSED_BRANCHES][6];
            bool exact[IK_CLOSED_BRANCHES];
            size_t n = ik_closed_branches(&a.k, R, p, ref, br, exact);
            bool hit = false;
            for (size_t b = 0; b < n; b++) {
                double ep, er;
                if (!exact[b])
                    continue;
                fk_err(&a, g, br[b], &ep, &er);
                hit |= ep <= EXACT && er <= EXACT;
            }
            ck_assert_msg(hit, "sample %d%s: no exact branch on the pose", s,
                          seeded ? " seeded" : "");
            ik_target t = ik_target_full_pose(g);
            ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seeded ? seed : NULL, NULL, out,
                                             NULL),
                             IK_OK);
            assert_reaches(&a, g, out, EXACT);
        }
    }
}
END_TEST

/* IRB 120 with its wrist centre on axis 1: joint 1 is free and keeps the
 * seed's value. */
START_TEST(test_shoulder_singularity)
{
    static arm a;
    make_irb120(&a);
    /* q3 such that the wrist centre (0.302, 0.07 from joint 3) is above
     * joint 2 with q2 = 0 */
    double q3 = atan2(-0.302, 0.07);
    double q[6] = {0.0, 0.0, q3, 0.4, 0.8, 0.2}, R[9], p[3], out[6];
    ik_xform g;
    goal_of(&a, q, R, p, &g);
    ik_target t = ik_target_full_pose(g);
    for (double s1 = -1.0; s1 <= 1.0; s1 += 0.5) {
        double seed[6] = {s1, 0.0, q3, 0.0, 0.5, 0.0};
        ik_closed_result res;
        ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, out, &res), IK_OK);
        assert_reaches(&a, g, out, EXACT);
        ck_assert_double_eq_tol(out[0], s1, 1e-9);
    }
}
END_TEST

/* ---- failures -------------------------------------------------------------------------- */

START_TEST(test_out_of_reach)
{
    static arm a;
    make_ur5(&a);
    double reach = ik_chain_max_reach(&a.c);
    ck_assert_double_gt(reach, 0.9);
    ck_assert_double_lt(reach, 1.3);
    ik_xform far = ik_xform_identity();
    far.p = ik_v3(3.0, 0.5, 0.2);
    ik_target t = ik_target_full_pose(far);
    double out[6];
    ik_closed_result res;
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, &res), IK_EUNREACHABLE);
    ck_assert_int_eq(res.reason, IK_REASON_OUT_OF_REACH);
    ck_assert_str_eq(ik_reason_name(res.reason), "out_of_reach");
    ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
    /* the best pose is the arm stretched towards the target: its error is
     * the distance minus about the reach, and reported as it is */
    double ep, er;
    fk_err(&a, far, out, &ep, &er);
    ck_assert_double_eq_tol(res.pos_err_max, ep, 1e-9);
    ck_assert_double_lt(res.pos_err, ik_vec3_len(far.p) - 0.5);
    /* absurd but finite coordinates: still a finite answer */
    far.p = ik_v3(1e300, -1e300, 1e300);
    t = ik_target_full_pose(far);
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, &res), IK_EUNREACHABLE);
    for (int j = 0; j < 6; j++)
        ck_assert(isfinite(out[j]));
    ck_assert_int_eq(ik_closed_solve_all(&a.c, &a.k, &t, NULL, NULL, out, 1, &res), 0);
    ck_assert_int_eq(res.status, IK_EUNREACHABLE);
}
END_TEST

START_TEST(test_too_close)
{
    static arm a;
    make_irb120(&a);
    /* the wrist centre on joint 2's axis: nearer than |upper arm - forearm| */
    ik_xform g = ik_xform_identity();
    g.p = ik_v3(0.072, 0, 0.29);
    ik_target t = ik_target_full_pose(g);
    double out[6];
    ik_closed_result res;
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, &res), IK_EUNREACHABLE);
    ck_assert_int_eq(res.reason, IK_REASON_NO_SOLUTION);
    ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
    ck_assert_double_gt(res.pos_err, 0.01);
}
END_TEST

START_TEST(test_outside_limits)
{
    static arm a;
    make_irb120(&a);
    a.j[0].lower = -0.5;
    a.j[0].upper = 0.5;
    arm_init(&a);
    ck_assert_int_eq(a.k.kind, IK_CLOSED_OPW);
    /* joint 1 at 1.2 and the other shoulder branch at 1.2 - pi: both out */
    double q[6] = {1.2, 0.3, -0.2, 0.5, 0.6, 0.7}, R[9], p[3], out[6];
    ik_xform g;
    goal_of(&a, q, R, p, &g);
    ik_target t = ik_target_full_pose(g);
    ik_closed_result res;
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, &res), IK_ELIMITS);
    ck_assert_int_eq(res.reason, IK_REASON_LIMITS);
    ck_assert_uint_ge(res.branches, 1);
    ck_assert_uint_eq(res.solutions, 0);
    ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
    ck_assert_double_eq_tol(out[0], 0.5, 1e-12);
}
END_TEST

START_TEST(test_invalid)
{
    static arm a;
    make_ur5(&a);
    double q[6] = {0.1, -1, 1, 0, 1, 0}, out[6] = {7, 7, 7, 7, 7, 7};
    ik_target t = ik_target_position(ref_fk(&a, q).p);
    ik_closed_result res;
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, &res), IK_EINVAL);
    ck_assert_double_eq(out[0], 7);
    t = ik_target_full_pose(ref_fk(&a, q));
    double bad[6] = {0, NAN, 0, 0, 0, 0};
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, bad, NULL, out, &res), IK_EINVAL);
    ik_numeric_opts o = ik_numeric_opts_default();
    o.tol_pos = 0;
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, &o, out, &res), IK_EINVAL);
    t.pose.p.x = INFINITY;
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, NULL, out, &res), IK_EINVAL);
    ck_assert_int_eq(ik_closed_solve_all(&a.c, &a.k, &t, NULL, NULL, NULL, 4, &res), 0);
    ck_assert_int_eq(res.status, IK_EINVAL);
    ck_assert_double_eq(out[0], 7);
}
END_TEST

/* Collisions (opts.collide avoiding): a ball on the UR5's elbow (body 3,
 * the frame of joint 2), and an obstacle ball where the nearest solution
 * puts that elbow. The answer is the nearest solution whose elbow is clear
 * by the margin, distances measured HERE (centre distance minus the radii,
 * from ref_joint_frame); when none is, IK_ECOLLISION with the clearest, and
 * then every solution ik_closed_solve_all() lists is in collision here. */
START_TEST(test_avoids_collisions)
{
    static arm a;
    make_ur5(&a);
    static ik_collide_model M;
    const double R = 0.05, MARGIN = 0.01;
    ck_assert_int_eq(ik_collide_model_from_chain(&M, &a.c), IK_OK);
    int l = ik_collide_add_link(&M, 3, ik_xform_identity());
    ck_assert_int_ge(l, 0);
    ck_assert_int_eq(ik_collide_add_sphere(&M, l, ZERO, R), IK_OK);
    ck_assert_int_eq(ik_collide_model_finish(&M), IK_OK);
    static unsigned char ws[1 << 16];
    ck_assert_uint_le(ik_collide_workspace_size(&M), sizeof ws);
    ik_obstacle ob;
    ik_collide_check chk = {&M, {&ob, 1}, MARGIN, true, ws, sizeof ws};
    ik_numeric_opts o = ik_numeric_opts_default();
    o.collide = &chk;
    static double all[6 * 4096];
    int clear = 0, blocked = 0;
    for (int s = 0; s < 200; s++) {
        double q[6], seed[6], R9[9], p[3], near[6], out[6];
        ik_xform g;
        random_q(&a, q);
        random_q(&a, seed);
        goal_of(&a, q, R9, p, &g);
        ik_target t = ik_target_full_pose(g);
        ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, near, NULL), IK_OK);
        const ik_vec3 elbow = ref_joint_frame(&a, near, 2).p;
        ck_assert_int_eq(ik_obstacle_sphere(&ob, elbow, R), IK_OK);
        ik_closed_result res;
        int rc = ik_closed_solve(&a.c, &a.k, &t, seed, &o, out, &res);
        assert_reaches(&a, g, out, EXACT);
        ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
        double gap = ik_vec3_dist(ref_joint_frame(&a, out, 2).p, elbow) - 2 * R;
        size_t n = ik_closed_solve_all(&a.c, &a.k, &t, seed, NULL, all, 4096, NULL);
        ck_assert_uint_gt(n, 0);
        if (rc == IK_OK) {
            clear++;
            ck_assert_double_ge(gap, MARGIN);
            /* nearer solutions than the answer all collide here */
            double dout = 0.0;
            for (int j = 0; j < 6; j++)
                dout += (out[j] - seed[j]) * (out[j] - seed[j]);
            for (size_t i = 0; i < n; i++) {
                double d = 0.0;
                for (int j = 0; j < 6; j++)
                    d += (all[6 * i + j] - seed[j]) * (all[6 * i + j] - seed[j]);
                if (d < dout - 1e-9)
                    ck_assert_double_lt(
                        ik_vec3_dist(ref_joint_frame(&a, all + 6 * i, 2).p, elbow) - 2 * R,
                        MARGIN);
            }
        } else {
            blocked++;
            ck_assert_int_eq(rc, IK_ECOLLISION);
            ck_assert_int_eq(res.reason, IK_REASON_IN_COLLISION);
            ck_assert_double_lt(gap, MARGIN);
            for (size_t i = 0; i < n; i++)
                ck_assert_double_lt(
                    ik_vec3_dist(ref_joint_frame(&a, all + 6 * i, 2).p, elbow) - 2 * R, MARGIN);
        }
    }
    /* the elbow's other branch is usually inside the UR5's limits */
    ck_assert_int_ge(clear, 150);
    ck_assert_int_eq(clear + blocked, 200);
    /* a check the collision module refuses */
    chk.margin = -1.0;
    double q[6] = {0.1, -1, 1, 0, 1, 0}, out[6];
    ik_target t = ik_target_full_pose(ref_fk(&a, q));
    ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, NULL, &o, out, NULL), IK_EINVAL);
}
END_TEST

/* The UR5's upright pose (elbow stretched, wrist folded: a double
 * singularity) from seeds 0.001 to 0.1 rad away on every joint: the joint
 * the closed form takes from the seed left every branch a little short
 * (no_ik_solution, 5e-6 m off from 0.01); the finish by iterations
 * reaches the pose, inside the limits, checked by ref_fk. */
START_TEST(test_upright_double_singularity)
{
    static arm a;
    make_ur5(&a);
    const double up[2][6] = {{0, -IK_PI / 2, 0, -IK_PI / 2, 0, 0},
                             {0.5, -IK_PI / 2, 0, -IK_PI / 2, 0, 0.3}};
    const double off[4] = {0.001, 0.01, 0.05, 0.1};
    for (int u = 0; u < 2; u++)
        for (int k = 0; k < 4; k++) {
            double seed[6], out[6];
            for (int j = 0; j < 6; j++)
                seed[j] = up[u][j] + (j % 2 ? -off[k] : off[k]);
            ik_xform g = ref_fk(&a, up[u]);
            ik_target t = ik_target_full_pose(g);
            ik_closed_result res;
            ck_assert_int_eq(ik_closed_solve(&a.c, &a.k, &t, seed, NULL, out, &res), IK_OK);
            assert_reaches(&a, g, out, 1e-8);
            ck_assert(ik_chain_within_limits(&a.c, out, 0.0));
        }
}
END_TEST

START_TEST(test_reason_table)
{
    ck_assert_str_eq(ik_reason_name(IK_REASON_NONE), "none");
    ck_assert_str_eq(ik_reason_name(IK_REASON_LIMITS), "outside_limits");
    ck_assert_str_eq(ik_reason_name(IK_REASON_BUDGET), "budget");
    ck_assert_str_eq(ik_reason_name(42), "unknown");
    ck_assert_ptr_nonnull(ik_reason_message(IK_REASON_NO_SOLUTION));
    /* the reach bound holds on random poses and is nearly met */
    static arm a;
    make_irb120(&a);
    double r = ik_chain_max_reach(&a.c), far = 0.0;
    for (int s = 0; s < 2000; s++) {
        double q[6];
        random_q(&a, q);
        double d = ik_vec3_dist(ref_fk(&a, q).p, a.c.pre[0].p);
        ck_assert_double_le(d, r);
        far = fmax(far, d);
        ck_assert(!ik_chain_beyond_reach(&a.c, ref_fk(&a, q).p));
    }
    ck_assert_double_gt(far, 0.8 * r);
}
END_TEST

static Suite *closed_suite(void)
{
    Suite *s = suite_create("ik_closed");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_detects_families);
    tcase_add_test(tc, test_detects_from_urdf);
    tcase_add_test(tc, test_rejects_others);
    tcase_add_test(tc, test_branches_ur5);
    tcase_add_test(tc, test_branches_ur10);
    tcase_add_test(tc, test_branches_irb120);
    tcase_add_test(tc, test_branches_kr6);
    tcase_add_test(tc, test_nearest_ur5);
    tcase_add_test(tc, test_nearest_irb120);
    tcase_add_test(tc, test_nearest_ur10_kr6);
    tcase_add_test(tc, test_all_sorted_with_turns);
    tcase_add_test(tc, test_wrist_singularity);
    tcase_add_test(tc, test_ur5_double_singularity);
    tcase_add_test(tc, test_shoulder_singularity);
    tcase_add_test(tc, test_out_of_reach);
    tcase_add_test(tc, test_too_close);
    tcase_add_test(tc, test_outside_limits);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_avoids_collisions);
    tcase_add_test(tc, test_upright_double_singularity);
    tcase_add_test(tc, test_reason_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(closed_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
