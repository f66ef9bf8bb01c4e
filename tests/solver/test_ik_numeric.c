/*
 * test_ik_numeric.c: solver/ik_numeric.h. Every answer is checked by forward
 * kinematics (ik_chain_fk) and ik_pose_error against the target, never
 * against the solver's own report: random reachable full-pose targets on
 * random chains and on a UR5 built in code from its URDF numbers,
 * position-only and weighted targets, unreachable targets (best pose finite
 * and inside the limits), warm starts, the nearest-to-seed search,
 * determinism, every invalid input, and a too small or misaligned
 * workspace.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"
#include "chains.h"

#define TOL 1e-5

static uint64_t rng_state;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1.0p-53);
}

/* UR5, base_link -> tool0, from ur5_robot.urdf (xyz, rpy, axis, limits). */
static ik_chain ur5(void)
{
    ik_joint j[UR5_JOINTS];
    ur5_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, UR5_JOINTS), IK_OK);
    return c;
}

/* The UR5 with its shoulder lift and elbow held within +-0.3 rad, and a
 * full-pose target within its maximum reach that those limits keep it from:
 * no search finds it, only a budget ends one. */
static ik_chain ur5_blocked(void)
{
    ik_joint j[UR5_JOINTS];
    ur5_joints(j);
    j[1].lower = j[2].lower = -0.3;
    j[1].upper = j[2].upper = 0.3;
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, UR5_JOINTS), IK_OK);
    return c;
}
static const ik_xform BLOCKED = {{0.45, 0.2, -0.2}, {0, 0, 0, 1}};

/* A random chain of `dof` joints: mostly revolute with limits, some
 * continuous and prismatic, random origins and axes. */
static ik_chain random_chain(size_t dof)
{
    ik_joint j[TEST_DOF_CAP + 1];
    for (size_t k = 0; k < dof; k++) {
        double r = urand(0, 1);
        ik_joint_type t = r < 0.75 ? IK_JOINT_REVOLUTE
                                   : (r < 0.9 ? IK_JOINT_CONTINUOUS : IK_JOINT_PRISMATIC);
        double lo = urand(-3, -0.5), hi = urand(0.5, 3);
        if (t == IK_JOINT_PRISMATIC) {
            lo = -0.3;
            hi = 0.3;
        }
        j[k] = joint(t, ik_v3(urand(-.4, .4), urand(-.4, .4), urand(0.05, .4)),
                     ik_v3(urand(-3, 3), urand(-1.5, 1.5), urand(-3, 3)),
                     ik_v3(urand(-1, 1), urand(-1, 1), urand(-1, 1)), lo, hi);
    }
    j[dof] = joint(IK_JOINT_FIXED, ik_v3(0, 0, 0.1), ZERO, ZERO, 0, 0);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, dof + 1), IK_OK);
    return c;
}

static void random_q(const ik_chain *c, double *q)
{
    for (size_t k = 0; k < c->dof; k++) {
        double lo = c->lower[k], hi = c->upper[k];
        if (c->type[k] == IK_JOINT_CONTINUOUS) {
            lo = -IK_PI;
            hi = IK_PI;
        }
        q[k] = urand(lo, hi);
    }
}

/* The answer meets the checked components of t within tol, by FK, inside
 * the limits, whatever turn its continuous joints are on. */
static bool meets_turns(const ik_chain *c, const ik_target *t, const double *q, double tol)
{
    if (!ik_chain_within_limits(c, q, 0.0))
        return false;
    double e[6];
    ik_xform target = t->pose;
    target.q = ik_quat_normalize(target.q);
    if (t->mode == IK_TARGET_POSITION)
        target.q = ik_quat_identity();
    ik_pose_error(target, ik_chain_fk(c, q), e);
    for (int r = 0; r < 6; r++) {
        bool checked = t->mode == IK_TARGET_FULL_POSE || (t->mode == IK_TARGET_POSITION && r < 3) ||
                       (t->mode == IK_TARGET_WEIGHTED && t->weight[r] > 0);
        if (checked && !(fabs(e[r]) < tol))
            return false;
    }
    return true;
}

/* The same with continuous joints in [-pi, pi]: an answer without a seed
 * (the reference is the mid-limit pose, 0 for continuous joints). */
static bool meets(const ik_chain *c, const ik_target *t, const double *q, double tol)
{
    for (size_t k = 0; k < c->dof; k++)
        if (c->type[k] == IK_JOINT_CONTINUOUS && fabs(q[k]) > IK_PI + 1e-12)
            return false;
    return meets_turns(c, t, q, tol);
}

static bool all_finite(const double *q, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!isfinite(q[k]))
            return false;
    return true;
}

/* Deterministic options: no clock, a bounded number of restarts. */
static ik_numeric_opts det_opts(void)
{
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.0;
    o.max_restarts = 300;
    return o;
}

static unsigned char ws[1 << 16];

/* ---- reachable targets ------------------------------------------------------ */

static void solve_random_targets(const ik_chain *c, size_t count, size_t *ok_out)
{
    ik_numeric_opts o = det_opts();
    size_t ok = 0;
    for (size_t i = 0; i < count; i++) {
        double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(c, qt);
        ik_target t = ik_target_full_pose(ik_chain_fk(c, qt));
        ik_numeric_result res;
        o.rng_seed = i;
        int st = ik_numeric_solve(c, &t, NULL, &o, ws, sizeof ws, q, &res);
        ck_assert_int_eq(st, res.status);
        ck_assert(all_finite(q, c->dof));
        ck_assert(ik_chain_within_limits(c, q, 0.0));
        if (st == IK_OK) {
            ck_assert_msg(meets(c, &t, q, TOL), "status ok but FK disagrees (sample %zu)", i);
            ck_assert_double_le(res.pos_err_max, TOL);
            ck_assert_double_le(res.rot_err_max, TOL);
            ok++;
        } else {
            ck_assert_int_eq(st, IK_ENOTCONV);
        }
    }
    *ok_out = ok;
}

START_TEST(test_ur5_reachable)
{
    rng_state = 1;
    ik_chain c = ur5();
    size_t ok;
    solve_random_targets(&c, 1000, &ok);
    ck_assert_uint_ge(ok, 995);
}
END_TEST

START_TEST(test_random_chains_reachable)
{
    rng_state = 99;
    size_t ok = 0, total = 0;
    for (int k = 0; k < 40; k++) {
        size_t dof = 6 + (size_t)urand(0, 3); /* 6..8 */
        ik_chain c = random_chain(dof);
        size_t got;
        solve_random_targets(&c, 60, &got);
        ok += got;
        total += 60;
    }
    ck_assert_uint_ge(ok * 100, total * 97);
}
END_TEST

START_TEST(test_short_chains)
{
    /* fewer joints than constrained rows: position-only targets on 3-dof
     * chains, full poses reachable from their own configurations */
    rng_state = 5;
    ik_numeric_opts o = det_opts();
    size_t ok = 0, total = 0;
    for (int k = 0; k < 30; k++) {
        ik_chain c = random_chain(3);
        for (int i = 0; i < 20; i++) {
            double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
            random_q(&c, qt);
            ik_target t = i % 2 ? ik_target_full_pose(ik_chain_fk(&c, qt))
                                : ik_target_position(ik_chain_fk(&c, qt).p);
            int st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL);
            ck_assert(ik_chain_within_limits(&c, q, 0.0));
            if (st == IK_OK) {
                ck_assert(meets(&c, &t, q, TOL));
                ok++;
            }
            total++;
        }
    }
    ck_assert_uint_ge(ok * 100, total * 95);
}
END_TEST

START_TEST(test_position_only)
{
    rng_state = 7;
    ik_chain c = ur5();
    ik_numeric_opts o = det_opts();
    for (int i = 0; i < 300; i++) {
        double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        ik_target t = ik_target_position(ik_chain_fk(&c, qt).p);
        /* the orientation of a position-only target is ignored entirely */
        t.pose.q = (ik_quat){NAN, 0, 0, 0};
        ik_numeric_result res;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
        ck_assert(meets(&c, &t, q, TOL));
        ck_assert_double_eq(res.rot_err_max, 0.0);
    }
}
END_TEST

START_TEST(test_weighted)
{
    rng_state = 8;
    ik_chain c = ur5();
    ik_numeric_opts o = det_opts();
    const double weights[][6] = {
        {1, 1, 1, 0, 0, 1}, {2, 0.5, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 0}, {1, 1, 1, 0, 0, 0}};
    for (int i = 0; i < 400; i++) {
        double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        t.mode = IK_TARGET_WEIGHTED;
        memcpy(t.weight, weights[i % 4], sizeof t.weight);
        /* free components may be anything: move the target there */
        if (t.weight[IK_ERR_X] == 0)
            t.pose.p.x += 0.3;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL), IK_OK);
        ck_assert(meets(&c, &t, q, TOL));
    }
}
END_TEST

START_TEST(test_continuous_and_prismatic)
{
    /* PR2-like arm: prismatic torso, continuous forearm and wrist rolls */
    ik_joint j[9] = {
        joint(IK_JOINT_PRISMATIC, ZERO, ZERO, ik_v3(0, 0, 1), 0, 0.33),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, -0.188, 0), ZERO, ik_v3(0, 0, 1), -2.2854, 0.7146),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.1, 0, 0), ZERO, ik_v3(0, 1, 0), -0.5236, 1.3963),
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(1, 0, 0), -3.9, 0.8),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.4, 0, 0), ZERO, ik_v3(0, 1, 0), -2.3213, 0),
        joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ik_v3(1, 0, 0), 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.321, 0, 0), ZERO, ik_v3(0, 1, 0), -2.18, 0),
        joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ik_v3(1, 0, 0), 0, 0),
        joint(IK_JOINT_FIXED, ik_v3(0.18, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 9), IK_OK);
    rng_state = 3;
    size_t ok;
    solve_random_targets(&c, 500, &ok);
    ck_assert_uint_ge(ok, 495);
    /* a seed many turns out on the continuous joints keeps its turns: the
     * answer's continuous joints are the equivalents nearest the seed */
    double seed[8] = {0.1, -1, 0.5, -1, -1, 40.0, -1, -40.0}, q[8], qt[8];
    random_q(&c, qt);
    ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
    ik_numeric_opts o = det_opts();
    ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, q, NULL), IK_OK);
    ck_assert(meets_turns(&c, &t, q, TOL));
    ck_assert_double_le(fabs(q[5] - 40.0), IK_PI + 1e-9);
    ck_assert_double_le(fabs(q[7] + 40.0), IK_PI + 1e-9);
}
END_TEST

/* ---- search behaviour --------------------------------------------------------- */

START_TEST(test_warm_start)
{
    rng_state = 11;
    ik_chain c = ur5();
    ik_numeric_opts o = det_opts();
    for (int i = 0; i < 200; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        for (size_t k = 0; k < c.dof; k++)
            seed[k] = ik_clamp(qt[k] + urand(-0.01, 0.01), c.lower[k], c.upper[k]);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        ik_numeric_result res;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, q, &res), IK_OK);
        ck_assert(meets(&c, &t, q, TOL));
        ck_assert_uint_eq(res.restarts, 0);
        ck_assert_uint_le(res.iterations, 10);
        /* the seed's own branch: the answer stays next to the seed */
        for (size_t k = 0; k < c.dof; k++)
            ck_assert_double_le(fabs(q[k] - qt[k]), 0.05);
    }
}
END_TEST

START_TEST(test_seed_is_solution)
{
    ik_chain c = ur5();
    double qt[6] = {0.3, -1.2, 1.4, -0.5, 1.1, 0.2}, q[6];
    ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
    ik_numeric_result res;
    ik_numeric_opts o = det_opts();
    ck_assert_int_eq(ik_numeric_solve(&c, &t, qt, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert_uint_eq(res.iterations, 0);
    for (int k = 0; k < 6; k++)
        ck_assert_double_eq(q[k], qt[k]);
    /* q_out may alias the seed */
    double s[6] = {0.35, -1.1, 1.3, -0.6, 1.0, 0.3};
    ck_assert_int_eq(ik_numeric_solve(&c, &t, s, &o, ws, sizeof ws, s, NULL), IK_OK);
    ck_assert(meets(&c, &t, s, TOL));
}
END_TEST

static double dist2(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; k++)
        s += (a[k] - b[k]) * (a[k] - b[k]);
    return s;
}

START_TEST(test_nearest_to_seed)
{
    rng_state = 13;
    ik_chain c = ur5();
    ik_numeric_opts first = det_opts(), nearest = det_opts();
    nearest.search = IK_SEARCH_NEAREST_TO_SEED;
    nearest.nearest_extra_restarts = 12;
    size_t more = 0;
    for (int i = 0; i < 100; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q1[TEST_DOF_CAP], q2[TEST_DOF_CAP];
        random_q(&c, qt);
        random_q(&c, seed);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        first.rng_seed = nearest.rng_seed = (uint64_t)i;
        ik_numeric_result r1, r2;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &first, ws, sizeof ws, q1, &r1), IK_OK);
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &nearest, ws, sizeof ws, q2, &r2),
                         IK_OK);
        ck_assert(meets(&c, &t, q2, TOL));
        ck_assert_uint_eq(r1.solutions, 1);
        ck_assert_uint_ge(r2.solutions, 1);
        /* the same search, continued: never farther than the first found */
        ck_assert_double_le(dist2(q2, seed, c.dof), dist2(q1, seed, c.dof) + 1e-9);
        more += r2.solutions > 1;
    }
    ck_assert_uint_gt(more, 50);
}
END_TEST

/* NEAREST_TO_SEED with a seed next to the answer (a stream's step): the
 * seed's own attempt is returned at once (no restarts, one solution, close
 * to the seed); with nearest_local 0 the extra restarts run as before and
 * find nothing nearer than that step. */
START_TEST(test_nearest_local_step)
{
    rng_state = 29;
    ik_chain c = ur5();
    ik_numeric_opts o = det_opts(), full = det_opts();
    o.search = full.search = IK_SEARCH_NEAREST_TO_SEED;
    full.nearest_local = 0.0;
    size_t fast = 0;
    for (int i = 0; i < 100; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q1[TEST_DOF_CAP], q2[TEST_DOF_CAP];
        random_q(&c, qt);
        for (size_t k = 0; k < c.dof; k++)
            seed[k] = qt[k] + urand(-0.04, 0.04);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        ik_numeric_result r1, r2;
        o.rng_seed = full.rng_seed = (uint64_t)i;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, q1, &r1), IK_OK);
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &full, ws, sizeof ws, q2, &r2), IK_OK);
        ck_assert(meets(&c, &t, q1, TOL));
        if (r1.restarts == 0 && r1.solutions == 1) {
            fast++;
            for (size_t k = 0; k < c.dof; k++)
                ck_assert_double_le(fabs(q1[k] - seed[k]), 0.35);
        }
        ck_assert_uint_ge(r2.solutions, r1.solutions);
        /* the full search finds nothing nearer (up to where two converged
         * points of one branch may differ next to a singularity) */
        ck_assert_double_le(sqrt(dist2(q1, seed, c.dof)), sqrt(dist2(q2, seed, c.dof)) + 1e-3);
    }
    ck_assert_uint_gt(fast, 90);
    o.nearest_local = -1.0;
    double q[TEST_DOF_CAP];
    ik_target t = ik_target_position(ik_v3(0.3, 0.1, 0.3));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL), IK_EINVAL);
}
END_TEST

START_TEST(test_determinism)
{
    rng_state = 17;
    ik_chain c = random_chain(7);
    ik_numeric_opts o = det_opts();
    o.rng_seed = 0xDEADBEEF;
    for (int i = 0; i < 50; i++) {
        double qt[TEST_DOF_CAP], a[TEST_DOF_CAP], b[TEST_DOF_CAP];
        random_q(&c, qt);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        ik_numeric_result ra, rb;
        int sa = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, a, &ra);
        memset(ws, 0x5A, sizeof ws); /* the workspace's content must not matter */
        int sb = ik_numeric_solve(&c, &t, NULL, &o, ws + 8, sizeof ws - 8, b, &rb);
        ck_assert_int_eq(sa, sb);
        ck_assert_int_eq(memcmp(a, b, c.dof * sizeof *a), 0);
        ck_assert_uint_eq(ra.iterations, rb.iterations);
        ck_assert_uint_eq(ra.restarts, rb.restarts);
    }
}
END_TEST

/* ---- failures ------------------------------------------------------------------- */

START_TEST(test_unreachable)
{
    ik_chain c = ur5();
    ik_numeric_opts o = det_opts();
    o.max_restarts = 20;
    double q[6];
    /* beyond the maximum reach: answered at once (no restart, a handful of
     * iterations), the best pose reaching out towards it */
    ik_xform far = {{3, 1, 0.5}, {0, 0, 0, 1}};
    ck_assert(ik_chain_beyond_reach(&c, far.p));
    ik_target t = ik_target_full_pose(far);
    ik_numeric_result res;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_EUNREACHABLE);
    ck_assert_int_eq(res.status, IK_EUNREACHABLE);
    ck_assert_int_eq(res.reason, IK_REASON_OUT_OF_REACH);
    ck_assert_uint_eq(res.restarts, 0);
    ck_assert_uint_le(res.iterations, 50);
    ck_assert(all_finite(q, 6));
    ck_assert(ik_chain_within_limits(&c, q, 0.0));
    /* the best pose reported is the one returned, and it reaches out */
    double e[6];
    ik_pose_error(far, ik_chain_fk(&c, q), e);
    ck_assert_double_eq_tol(res.pos_err, sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), 1e-12);
    ck_assert_double_le(res.pos_err, ik_vec3_len(far.p) - 0.8);
    /* the same for a position-only target, whatever the budgets */
    ik_target tp = ik_target_position(far.p);
    o = ik_numeric_opts_default();
    o.timeout_s = 10.0;
    ck_assert_int_eq(ik_numeric_solve(&c, &tp, NULL, &o, ws, sizeof ws, q, &res),
                     IK_EUNREACHABLE);
    ck_assert_uint_le(res.iterations, 50);

    /* within reach, blocked by the limits: the budgets end the search */
    ik_chain cb = ur5_blocked();
    ik_target tb = ik_target_full_pose(BLOCKED);
    ck_assert(!ik_chain_beyond_reach(&cb, BLOCKED.p));
    o = det_opts();
    o.max_restarts = 20;
    ck_assert_int_eq(ik_numeric_solve(&cb, &tb, NULL, &o, ws, sizeof ws, q, &res), IK_ENOTCONV);
    ck_assert_uint_eq(res.restarts, 20);
    ck_assert(all_finite(q, 6) && ik_chain_within_limits(&cb, q, 0.0));
    ik_pose_error(BLOCKED, ik_chain_fk(&cb, q), e);
    ck_assert_double_eq_tol(res.pos_err, sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), 1e-12);

    /* iteration budget */
    o.max_restarts = SIZE_MAX;
    o.max_iterations = 50;
    ck_assert_int_eq(ik_numeric_solve(&cb, &tb, NULL, &o, ws, sizeof ws, q, &res), IK_ENOTCONV);
    ck_assert_uint_le(res.iterations, 50);
    ck_assert(ik_chain_within_limits(&cb, q, 0.0));

    /* time budget: so small that the first clock reading ends it */
    o = ik_numeric_opts_default();
    o.timeout_s = 1e-12;
    ck_assert_int_eq(ik_numeric_solve(&cb, &tb, NULL, &o, ws, sizeof ws, q, &res), IK_ETIMEDOUT);
    ck_assert(all_finite(q, 6));
    ck_assert(ik_chain_within_limits(&cb, q, 0.0));

    /* reachable position, impossible under tight limits */
    ik_joint j[2] = {
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -0.1, 0.1),
        joint(IK_JOINT_FIXED, ik_v3(1, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain small;
    ck_assert_int_eq(chain_init(&small, j, 2), IK_OK);
    ik_target side = ik_target_position(ik_v3(0, 1, 0));
    o = det_opts();
    o.max_restarts = 5;
    ck_assert_int_eq(ik_numeric_solve(&small, &side, NULL, &o, ws, sizeof ws, q, &res),
                     IK_ENOTCONV);
    ck_assert_double_eq_tol(q[0], 0.1, 1e-9); /* the closest pose, at the limit */
}
END_TEST

/* A target beyond the maximum reach by a fraction of the tolerance is met
 * within it (stretched out, the tip is inside the tolerance of it), and a
 * chain whose tip sits on its first joint (a pan-tilt head, reach 0) meets
 * a target a rounding error off that point: neither is out of reach in the
 * sense of the tolerance. Checked by FK. A target farther out than the
 * tolerance stays out_of_reach, said at once. */
START_TEST(test_reach_boundary)
{
    ik_joint arm[3] = {
        joint(IK_JOINT_REVOLUTE, ik_v3(0.1, 0.2, 0.3), ZERO, ik_v3(0, 0, 1), -3, 3),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.5, 0, 0), ZERO, ik_v3(0, 0, 1), -3, 3),
        joint(IK_JOINT_FIXED, ik_v3(0.4, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, arm, 3), IK_OK);
    ik_numeric_opts o = det_opts();
    o.max_restarts = 20;
    double q[2];
    ik_numeric_result res;
    ik_target t = ik_target_position(ik_v3(1.0 + 0.25 * TOL, 0.2, 0.3));
    int st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res);
    ck_assert_msg(st == IK_OK, "0.25 tol beyond the reach: %d", st);
    ck_assert(meets(&c, &t, q, TOL));
    t = ik_target_position(ik_v3(1.0 + 3 * TOL, 0.2, 0.3));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_EUNREACHABLE);
    ck_assert_int_eq(res.reason, IK_REASON_OUT_OF_REACH);
    ck_assert_uint_eq(res.restarts, 0);

    ik_joint head[2] = {
        joint(IK_JOINT_REVOLUTE, ik_v3(0.1, 0.2, 0.3), ZERO, ik_v3(0, 0, 1), -3, 3),
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 1, 0), -1, 1),
    };
    ck_assert_int_eq(chain_init(&c, head, 2), IK_OK);
    const ik_quat look = ik_quat_from_rpy(0, 0.4, 0.7);
    const double off[] = {0x1p-54, 1e-9};
    for (size_t k = 0; k < 2; k++) {
        t = ik_target_full_pose((ik_xform){ik_v3(0.1, 0.2, 0.3 + off[k]), look});
        st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res);
        ck_assert_msg(st == IK_OK, "head, %g off its joint: %d", off[k], st);
        ck_assert(meets(&c, &t, q, TOL));
    }
}
END_TEST

/* The whole band past the reach in which the stretched pose still meets
 * the tolerance is solved, not only its first half (an attempt stops below
 * half the tolerance, a stretched arm never gets there): a two-link arm
 * (links 0.5 and 0.4 about z from (0.1, 0.2, 0.3)), targets in its plane
 * at 0.9 + f tol from its base in several directions, position-only and
 * full pose. The answer's tip is worked out here (the two angles summed,
 * not ik_chain_fk), and the status must say success exactly when every
 * component of the error is below the tolerance, none when one is above
 * (a band of a thousandth of the tolerance around it left out). */
static void arm_tip(const double *q, double *x, double *y)
{
    *x = 0.1 + 0.5 * cos(q[0]) + 0.4 * cos(q[0] + q[1]);
    *y = 0.2 + 0.5 * sin(q[0]) + 0.4 * sin(q[0] + q[1]);
}

START_TEST(test_reach_tolerance_band)
{
    ik_joint arm[3] = {
        joint(IK_JOINT_REVOLUTE, ik_v3(0.1, 0.2, 0.3), ZERO, ik_v3(0, 0, 1), -3, 3),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.5, 0, 0), ZERO, ik_v3(0, 0, 1), -3, 3),
        joint(IK_JOINT_FIXED, ik_v3(0.4, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, arm, 3), IK_OK);
    ik_numeric_opts o = det_opts();
    o.max_restarts = 20;
    const double dirs[] = {0.0, 0.3, IK_PI / 4, 2.0, -2.9};
    const double fs[] = {0.55, 0.6, 0.75, 0.9, 0.99, 1.1, 1.3, 1.45, 1.6, 2.5};
    size_t solved = 0, refused = 0;
    for (int full = 0; full < 2; full++)
        for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
            for (size_t k = 0; k < sizeof fs / sizeof *fs; k++) {
                const double a = dirs[i], d = 0.9 + fs[k] * TOL;
                ik_vec3 p = ik_v3(0.1 + d * cos(a), 0.2 + d * sin(a), 0.3);
                ik_target t = full ? ik_target_full_pose((ik_xform){p, ik_quat_from_rpy(0, 0, a)})
                                   : ik_target_position(p);
                double q[2];
                ik_numeric_result res;
                int st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res);
                double x, y;
                arm_tip(q, &x, &y);
                double err = fmax(fabs(x - p.x), fabs(y - p.y));
                if (full) /* the tip's heading against the target's */
                    err = fmax(err, fabs(remainder(q[0] + q[1] - a, 2.0 * IK_PI)));
                if (fabs(err - TOL) < 1e-3 * TOL)
                    continue;
                ck_assert(st == IK_OK || st == IK_EUNREACHABLE);
                ck_assert_msg((st == IK_OK) == (err < TOL),
                              "%s, %g tol past the reach at %g rad: status %d, error %g tol",
                              full ? "full pose" : "position", fs[k], a, st, err / TOL);
                if (st == IK_OK)
                    solved++;
                else
                    refused++;
            }
    ck_assert_uint_gt(solved, 20);
    ck_assert_uint_gt(refused, 20);
}
END_TEST

/* A prismatic joint held by its limit: a target past the limit by less
 * than the tolerance is met with the joint on its limit (the tip worked
 * out here: the slide along x plus the tool's offset), past it by more it
 * is not; at either limit. */
START_TEST(test_prismatic_limit_band)
{
    ik_joint slide[2] = {
        joint(IK_JOINT_PRISMATIC, ik_v3(0.2, 0.0, 0.0), ZERO, ik_v3(1, 0, 0), 0.1, 0.6),
        joint(IK_JOINT_FIXED, ik_v3(0.05, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, slide, 2), IK_OK);
    ik_numeric_opts o = det_opts();
    o.max_restarts = 20;
    const double fs[] = {0.3, 0.75, 0.95, 1.2, 3.0};
    for (int upper = 0; upper < 2; upper++)
        for (size_t k = 0; k < sizeof fs / sizeof *fs; k++) {
            const double edge = 0.25 + (upper ? 0.6 : 0.1);
            ik_target t =
                ik_target_position(ik_v3(edge + (upper ? 1 : -1) * fs[k] * TOL, 0.0, 0.0));
            double q;
            ik_numeric_result res;
            int st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, &q, &res);
            ck_assert(q >= 0.1 && q <= 0.6);
            const double err = fabs(0.25 + q - t.pose.p.x);
            ck_assert_msg((st == IK_OK) == (err < TOL), "%s limit, %g tol past it: status %d, error %g tol",
                          upper ? "upper" : "lower", fs[k], st, err / TOL);
            ck_assert_msg((st == IK_OK) == (fs[k] < 1.0), "%s limit, %g tol past it: status %d",
                          upper ? "upper" : "lower", fs[k], st);
        }
}
END_TEST

/* Why a search failed (ik_reason.h): out of reach (above), against the
 * limits, or simply not found in the budget. */
START_TEST(test_failure_reasons)
{
    double q[6];
    ik_numeric_result res;
    /* a one-joint arm turning within +-0.1 rad, the target at 90 degrees:
     * the best pose sits on the upper limit and the step wants more */
    ik_joint j[2] = {
        joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -0.1, 0.1),
        joint(IK_JOINT_FIXED, ik_v3(1, 0, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain small;
    ck_assert_int_eq(chain_init(&small, j, 2), IK_OK);
    ik_target side = ik_target_position(ik_v3(0, 1, 0));
    ik_numeric_opts o = det_opts();
    o.max_restarts = 5;
    ck_assert_int_eq(ik_numeric_solve(&small, &side, NULL, &o, ws, sizeof ws, q, &res),
                     IK_ENOTCONV);
    ck_assert_int_eq(res.reason, IK_REASON_LIMITS);
    /* the same arm turning freely (continuous): no wall, the target is on
     * the circle, found */
    j[0].type = IK_JOINT_CONTINUOUS;
    ck_assert_int_eq(chain_init(&small, j, 2), IK_OK);
    ck_assert_int_eq(ik_numeric_solve(&small, &side, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert_int_eq(res.reason, IK_REASON_NONE);
    /* the UR5 blocked by its limits, with a time budget: limits */
    ik_chain cb = ur5_blocked();
    ik_target tb = ik_target_full_pose(BLOCKED);
    o = ik_numeric_opts_default();
    o.timeout_s = 0.002;
    ck_assert_int_eq(ik_numeric_solve(&cb, &tb, NULL, &o, ws, sizeof ws, q, &res), IK_ETIMEDOUT);
    ck_assert_int_eq(res.reason, IK_REASON_LIMITS);
    /* a reachable target and one iteration: not found in the budget, and
     * nothing against a limit */
    ik_chain c = ur5();
    double qt[6] = {0.4, -1.1, 1.3, -1.6, 1.2, 0.3};
    ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
    o = det_opts();
    o.max_iterations = 1;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_ENOTCONV);
    ck_assert_int_eq(res.reason, IK_REASON_BUDGET);
    /* success carries no reason */
    o.max_iterations = 0;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert_int_eq(res.reason, IK_REASON_NONE);
}
END_TEST

/* A failed solve from a seed whose best pose moves a joint past
 * opts.max_step is refused as a solution past it is (ik_numeric.h,
 * IK_ESTEP): q_out the seed, res->max_step the refused motion (that of the
 * same solve's best pose without the step, measured here), res->reason the
 * failure's, the errors those of the seed's pose. */
START_TEST(test_failed_past_step)
{
    ik_chain c = ur5();
    ik_chain cb = ur5_blocked();
    const double seed[6] = {2.5, -0.2, 0.2, -1.0, -1.5, 0.3};
    const ik_xform far = {{-3, -1, 0.5}, {0, 0, 0, 1}};
    struct {
        const ik_chain *c;
        ik_target t;
        int failed, reason;
    } cases[] = {
        {&c, ik_target_full_pose(far), IK_EUNREACHABLE, IK_REASON_OUT_OF_REACH},
        {&cb, ik_target_full_pose(BLOCKED), IK_ENOTCONV, IK_REASON_LIMITS},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ik_numeric_opts o = det_opts();
        o.max_restarts = 5;
        double q[6], best[6], e[6];
        ik_numeric_result res;
        ck_assert_int_eq(ik_numeric_solve(cases[k].c, &cases[k].t, seed, &o, ws, sizeof ws,
                                          best, &res),
                         cases[k].failed);
        double moved = 0.0;
        for (size_t i = 0; i < 6; i++)
            moved = fmax(moved, fabs(best[i] - seed[i]));
        ck_assert_msg(moved > 0.3, "case %zu: the best pose moves %g only", k, moved);
        o.max_step = 0.3;
        ck_assert_int_eq(ik_numeric_solve(cases[k].c, &cases[k].t, seed, &o, ws, sizeof ws, q,
                                          &res),
                         IK_ESTEP);
        ck_assert_int_eq(res.status, IK_ESTEP);
        ck_assert_int_eq(res.reason, cases[k].reason);
        for (size_t i = 0; i < 6; i++)
            ck_assert_double_eq(q[i], seed[i]);
        ck_assert_double_eq_tol(res.max_step, moved, 1e-12);
        ck_assert_double_eq_tol(res.step_ang, moved, 1e-12);
        ik_pose_error(cases[k].t.pose, ik_chain_fk(cases[k].c, seed), e);
        ck_assert_double_eq_tol(res.pos_err, sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]),
                                1e-12);
        /* a step the best pose stays within: the failure as before */
        o.max_step = moved + 1e-9;
        ck_assert_int_eq(ik_numeric_solve(cases[k].c, &cases[k].t, seed, &o, ws, sizeof ws, q,
                                          &res),
                         cases[k].failed);
        ck_assert_int_eq(res.reason, cases[k].reason);
    }
}
END_TEST

START_TEST(test_invalid_input)
{
    ik_chain c = ur5();
    double qt[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    ik_target good = ik_target_full_pose(ik_chain_fk(&c, qt));
    ik_numeric_opts o = ik_numeric_opts_default();
    double q[6], sentinel[6];
    for (int k = 0; k < 6; k++)
        q[k] = sentinel[k] = 100.0 + k;
    ik_numeric_result res;

#define EXPECT(rc_, call_)                                                                          \
    do {                                                                                           \
        memset(&res, 0x7F, sizeof res);                                                            \
        ck_assert_int_eq((call_), (rc_));                                                          \
        ck_assert_int_eq(res.status, (rc_));                                                       \
        ck_assert_uint_eq(res.iterations, 0);                                                      \
        ck_assert_int_eq(memcmp(q, sentinel, sizeof q), 0);                                        \
    } while (0)

    ik_target t = good;
    t.pose.p.x = NAN;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t = good;
    t.pose.q.y = INFINITY;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t = good;
    t.pose.q = (ik_quat){0, 0, 0, 0};
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t = good;
    t.mode = (ik_target_mode)9;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t = good;
    t.mode = IK_TARGET_WEIGHTED; /* all weights zero */
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t.weight[0] = 1;
    t.weight[4] = -1;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t.weight[4] = NAN;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    t.weight[4] = INFINITY;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res));
    /* a weighted target with free rotation ignores the orientation */
    t.weight[4] = 0;
    t.pose.q = (ik_quat){NAN, NAN, NAN, NAN};
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    memcpy(q, sentinel, sizeof q);

    double seed[6] = {0, 0, NAN, 0, 0, 0};
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, seed, &o, ws, sizeof ws, q, &res));
    seed[2] = -INFINITY;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, seed, &o, ws, sizeof ws, q, &res));

    ik_numeric_opts bad = o;
    bad.tol_pos = 0;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &bad, ws, sizeof ws, q, &res));
    bad = o;
    bad.tol_rot = NAN;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &bad, ws, sizeof ws, q, &res));
    bad = o;
    bad.timeout_s = -1;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &bad, ws, sizeof ws, q, &res));
    bad = o;
    bad.timeout_s = INFINITY;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &bad, ws, sizeof ws, q, &res));
    bad = o;
    bad.timeout_s = 0; /* unbounded search */
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &bad, ws, sizeof ws, q, &res));
    bad = o;
    bad.search = (ik_search_mode)5;
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &bad, ws, sizeof ws, q, &res));

    EXPECT(IK_EINVAL, ik_numeric_solve(NULL, &good, NULL, &o, ws, sizeof ws, q, &res));
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, NULL, NULL, &o, ws, sizeof ws, q, &res));
    EXPECT(IK_EINVAL, ik_numeric_solve(&c, &good, NULL, &o, NULL, sizeof ws, q, &res));
    ck_assert_int_eq(ik_numeric_solve(&c, &good, NULL, &o, ws, sizeof ws, NULL, NULL),
                     IK_EINVAL);

    size_t need = ik_numeric_workspace_size(&c);
    ck_assert_uint_gt(need, 0);
    EXPECT(IK_ENOSPC, ik_numeric_solve(&c, &good, NULL, &o, ws, need - 1, q, &res));
    EXPECT(IK_ENOSPC, ik_numeric_solve(&c, &good, NULL, &o, ws, 0, q, &res));
#undef EXPECT
    /* exactly the reported size, at an odd address, works; NULL opts means
     * the defaults */
    ck_assert_int_eq(ik_numeric_solve(&c, &good, NULL, NULL, ws + 3, need, q, &res), IK_OK);
    ck_assert(meets(&c, &good, q, TOL));
}
END_TEST

START_TEST(test_pose_error_helper)
{
    ik_xform a = {{1, 2, 3}, ik_quat_from_axis_angle(ik_v3(0, 0, 1), 0.3)};
    ik_xform b = {{0.5, 2, 4}, ik_quat_identity()};
    double e[6];
    ik_pose_error(a, b, e);
    ck_assert_double_eq_tol(e[0], 0.5, 1e-15);
    ck_assert_double_eq_tol(e[1], 0.0, 1e-15);
    ck_assert_double_eq_tol(e[2], -1.0, 1e-15);
    ck_assert_double_eq_tol(e[3], 0.0, 1e-15);
    ck_assert_double_eq_tol(e[4], 0.0, 1e-15);
    ck_assert_double_eq_tol(e[5], 0.3, 1e-15);
    ik_numeric_opts o = ik_numeric_opts_default();
    ck_assert_double_eq(o.tol_pos, 1e-5);
    ck_assert_double_eq(o.tol_rot, 1e-5);
    ck_assert_double_eq(o.timeout_s, 0.005);
    ck_assert_int_eq(o.search, IK_SEARCH_FIRST_FOUND);
}
END_TEST

/* ---- restarts, budgets, tolerances, fixed joints (issue 2 audit) -------------- */

/* Random restarts are drawn from opts.rng_seed alone: the same seed gives a
 * bit-identical answer twice, restarts included; another seed takes other
 * restarts. Checked on solves that really restart. */
START_TEST(test_restarts_deterministic_per_rng_seed)
{
    rng_state = 23;
    ik_chain c = ur5();
    ik_numeric_opts o = det_opts();
    /* unreachable within reach (blocked by the limits): every restart is
     * used, the best pose depends on them */
    c = ur5_blocked();
    ik_target far = ik_target_full_pose(BLOCKED);
    o.max_restarts = 12;
    double a[6], b[6], d[6];
    ik_numeric_result ra, rb, rd;
    o.rng_seed = 77;
    ck_assert_int_eq(ik_numeric_solve(&c, &far, NULL, &o, ws, sizeof ws, a, &ra), IK_ENOTCONV);
    ck_assert_int_eq(ik_numeric_solve(&c, &far, NULL, &o, ws, sizeof ws, b, &rb), IK_ENOTCONV);
    ck_assert_uint_eq(ra.restarts, 12);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_uint_eq(ra.iterations, rb.iterations);
    ck_assert(ra.pos_err == rb.pos_err && ra.rot_err == rb.rot_err);
    o.rng_seed = 78;
    ik_numeric_solve(&c, &far, NULL, &o, ws, sizeof ws, d, &rd);
    ck_assert(memcmp(a, d, sizeof a) != 0 || ra.iterations != rd.iterations);

    /* reachable targets from a poor seed: collect solves that needed
     * restarts; each repeats bit for bit, and is a solution by FK */
    c = ur5();
    size_t restarted = 0;
    o.max_restarts = 300;
    for (int i = 0; i < 400 && restarted < 20; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP];
        random_q(&c, qt);
        random_q(&c, seed);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        o.rng_seed = (uint64_t)i * 7919u;
        o.max_iterations = 0;
        int sa = ik_numeric_solve(&c, &t, seed, &o, ws, sizeof ws, a, &ra);
        if (ra.restarts == 0)
            continue;
        restarted++;
        memset(ws, 0xEE, sizeof ws);
        int sb = ik_numeric_solve(&c, &t, seed, &o, ws + 5, sizeof ws - 5, b, &rb);
        ck_assert_int_eq(sa, sb);
        ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
        ck_assert_uint_eq(ra.restarts, rb.restarts);
        ck_assert_uint_eq(ra.iterations, rb.iterations);
        if (sa == IK_OK)
            ck_assert(meets(&c, &t, a, TOL));
    }
    ck_assert_uint_ge(restarted, 10);
}
END_TEST

/* The time budget: an unreachable target (within reach, blocked by the
 * limits) under a 3 ms budget stops with IK_ETIMEDOUT after about 3 ms of
 * the thread's CPU time (not long after: the clock is read every few
 * iterations), with the best pose finite and inside the limits. */
START_TEST(test_time_budget)
{
    ik_chain c = ur5_blocked();
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.003;
    double q[6];
    ik_numeric_result res;
    ik_target far = ik_target_full_pose(BLOCKED);
    ck_assert_int_eq(ik_numeric_solve(&c, &far, NULL, &o, ws, sizeof ws, q, &res), IK_ETIMEDOUT);
    ck_assert_double_ge(res.cpu_s, 0.003);
    ck_assert_double_ge(res.elapsed_s, 0.003);
    ck_assert_double_le(res.elapsed_s, 0.3); /* generous: sanitizers, loaded CI */
    ck_assert_uint_gt(res.restarts, 0);
    ck_assert(all_finite(q, 6) && ik_chain_within_limits(&c, q, 0.0));
    /* the iteration budget wins when it is the smaller one */
    o.timeout_s = 10;
    o.max_iterations = 30;
    ck_assert_int_eq(ik_numeric_solve(&c, &far, NULL, &o, ws, sizeof ws, q, &res), IK_ENOTCONV);
    ck_assert_uint_le(res.iterations, 30);
    ck_assert_double_le(res.elapsed_s, 1.0);
    /* and the restart budget */
    o.max_iterations = 0;
    o.max_restarts = 3;
    ck_assert_int_eq(ik_numeric_solve(&c, &far, NULL, &o, ws, sizeof ws, q, &res), IK_ENOTCONV);
    ck_assert_uint_eq(res.restarts, 3);
}
END_TEST

/* The tolerance is honoured both ways: a tight one is met by FK, a loose
 * one stops earlier. */
START_TEST(test_tolerance)
{
    rng_state = 29;
    ik_chain c = ur5();
    ik_numeric_opts tight = det_opts(), loose = det_opts();
    tight.tol_pos = tight.tol_rot = 1e-10;
    loose.tol_pos = 1e-2;
    loose.tol_rot = 1e-2;
    size_t it_tight = 0, it_loose = 0;
    for (int i = 0; i < 100; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        for (size_t k = 0; k < c.dof; k++) /* a nearby seed: one basin */
            seed[k] = ik_clamp(qt[k] + urand(-0.2, 0.2), c.lower[k], c.upper[k]);
        ik_target t = ik_target_full_pose(ik_chain_fk(&c, qt));
        ik_numeric_result r1, r2;
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &tight, ws, sizeof ws, q, &r1), IK_OK);
        ck_assert(meets(&c, &t, q, 1e-10));
        ck_assert_int_eq(ik_numeric_solve(&c, &t, seed, &loose, ws, sizeof ws, q, &r2), IK_OK);
        ck_assert(meets(&c, &t, q, 1e-2));
        ck_assert_double_le(r2.pos_err_max, 1e-2);
        it_tight += r1.iterations;
        it_loose += r2.iterations;
    }
    ck_assert_uint_lt(it_loose, it_tight);
}
END_TEST

/* Independent forward kinematics straight from the described joints, with
 * URDF semantics: T = prod(origin_i * motion_i(q_i)), fixed joints have no
 * motion (does not use ik_chain_fk). */
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

/* Fixed joints anywhere in the chain (first, between movable joints,
 * several in a row, last) are merged and the solves land on the target by
 * the independent FK above. */
START_TEST(test_fixed_joints_inside_chain)
{
    ik_joint j[11] = {
        joint(IK_JOINT_FIXED, ik_v3(0.1, 0, 0.05), ik_v3(0, 0, 0.3), ZERO, 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1), ZERO, ik_v3(0, 0, 1), -3, 3),
        joint(IK_JOINT_FIXED, ik_v3(0, 0.05, 0.1), ik_v3(0.2, -0.1, 0), ZERO, 0, 0),
        joint(IK_JOINT_FIXED, ik_v3(0, 0, 0.05), ik_v3(0, 0.3, 0), ZERO, 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1), ZERO, ik_v3(0, 1, 0), -2, 2),
        joint(IK_JOINT_PRISMATIC, ik_v3(0, 0, 0.3), ZERO, ik_v3(0, 0, 1), -0.1, 0.15),
        joint(IK_JOINT_FIXED, ik_v3(0.02, 0, 0.1), ik_v3(0, 0, -0.4), ZERO, 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1), ZERO, ik_v3(0, 1, 0), -2.5, 2.5),
        joint(IK_JOINT_CONTINUOUS, ik_v3(0, 0, 0.2), ZERO, ik_v3(0, 0, 1), 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1), ZERO, ik_v3(1, 0, 0), -2, 2),
        joint(IK_JOINT_FIXED, ik_v3(0, 0, 0.08), ik_v3(0.1, 0.2, 0.3), ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 11), IK_OK);
    ck_assert_uint_eq(c.dof, 6);
    rng_state = 31;
    ik_numeric_opts o = det_opts();
    size_t ok = 0;
    for (int i = 0; i < 200; i++) {
        double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&c, qt);
        ik_xform goal = urdf_fk(j, 11, qt);
        ik_target t = ik_target_full_pose(goal);
        if (ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL) != IK_OK)
            continue;
        ok++;
        ck_assert(ik_chain_within_limits(&c, q, 0.0));
        double e[6];
        ik_pose_error(goal, urdf_fk(j, 11, q), e);
        for (int r = 0; r < 6; r++)
            ck_assert_double_lt(fabs(e[r]), TOL);
    }
    ck_assert_uint_ge(ok, 195);
}
END_TEST

/* Snakes of 48 and 64 joints (no compiled bound on a chain's joints):
 * revolute joints about x and y in turn, 1 m long in all, each within
 * +-1 rad, a fixed tip; full-pose targets made by the independent FK from
 * random configurations within +-0.6 rad, solved from the mid-limit pose
 * on an iteration budget, every answer checked by that FK. */
START_TEST(test_long_snakes)
{
    static const size_t sizes[2] = {48, 64};
    for (size_t s = 0; s < 2; s++) {
        const size_t n = sizes[s];
        ik_joint j[65];
        for (size_t k = 0; k < n; k++)
            j[k] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, k ? 1.0 / (double)n : 0), ZERO,
                         k % 2 ? ik_v3(0, 1, 0) : ik_v3(1, 0, 0), -1.0, 1.0);
        j[n] = joint(IK_JOINT_FIXED, ik_v3(0, 0, 1.0 / (double)n), ZERO, ZERO, 0, 0);
        ik_chain c;
        ck_assert_int_eq(chain_init(&c, j, n + 1), IK_OK);
        ck_assert_uint_eq(c.dof, n);
        ck_assert_uint_le(ik_numeric_workspace_size(&c), sizeof ws);
        rng_state = 4800 + n;
        ik_numeric_opts o = det_opts();
        o.max_iterations = 20000;
        for (int i = 0; i < 25; i++) {
            double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
            for (size_t k = 0; k < n; k++)
                qt[k] = urand(-0.6, 0.6);
            ik_xform goal = urdf_fk(j, n + 1, qt);
            ik_target t = ik_target_full_pose(goal);
            o.rng_seed = (uint64_t)i;
            int st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, NULL);
            ck_assert_msg(st == IK_OK, "%zu joints, target %d: %s", n, i, ik_status_name(st));
            ck_assert(ik_chain_within_limits(&c, q, 0.0));
            double e[6];
            ik_pose_error(goal, urdf_fk(j, n + 1, q), e);
            for (int r = 0; r < 6; r++)
                ck_assert_double_lt(fabs(e[r]), TOL);
        }
    }
}
END_TEST

static Suite *numeric_suite(void)
{
    Suite *s = suite_create("ik_numeric");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ur5_reachable);
    tcase_add_test(tc, test_random_chains_reachable);
    tcase_add_test(tc, test_short_chains);
    tcase_add_test(tc, test_position_only);
    tcase_add_test(tc, test_weighted);
    tcase_add_test(tc, test_continuous_and_prismatic);
    tcase_add_test(tc, test_warm_start);
    tcase_add_test(tc, test_seed_is_solution);
    tcase_add_test(tc, test_nearest_to_seed);
    tcase_add_test(tc, test_nearest_local_step);
    tcase_add_test(tc, test_determinism);
    tcase_add_test(tc, test_unreachable);
    tcase_add_test(tc, test_reach_boundary);
    tcase_add_test(tc, test_reach_tolerance_band);
    tcase_add_test(tc, test_prismatic_limit_band);
    tcase_add_test(tc, test_failure_reasons);
    tcase_add_test(tc, test_failed_past_step);
    tcase_add_test(tc, test_invalid_input);
    tcase_add_test(tc, test_pose_error_helper);
    tcase_add_test(tc, test_restarts_deterministic_per_rng_seed);
    tcase_add_test(tc, test_time_budget);
    tcase_add_test(tc, test_tolerance);
    tcase_add_test(tc, test_fixed_joints_inside_chain);
    tcase_add_test(tc, test_long_snakes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(numeric_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
