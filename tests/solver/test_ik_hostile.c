/*
 * test_ik_hostile.c: "no NaN ever leaves the library", checked on every
 * solver entry point of solver/ at once.
 *
 * Each solver gets a valid problem, and then every scalar of that problem
 * (every coordinate, length, quaternion component, weight, option...) is
 * replaced in turn by each hostile value: NaN, +-Inf, +-1e308, +-1e-308,
 * 0 and -0. The answer must be
 *   - IK_EINVAL with every output byte untouched when the value is not
 *     finite (the headers promise "on error nothing is written");
 *   - otherwise one of the statuses that entry point documents, and every
 *     number it wrote (positions, angles, rotations, errors) finite; on
 *     IK_EINVAL untouched as above.
 * Then the geometric degeneracies the headers name, solver by solver:
 * zero-length links, the target on the root, coincident points (knee on the
 * hip, foot on the hip, target on a joint, pole on a joint), a chain whose
 * links all have zero length, each with its documented status.
 *
 * The entry points: ik_twolink2d_solve, ik_threelink2d_solve,
 * ik_threelink3d_solve (seed 000), ik_twobone_solve, ik_skeleton_globals,
 * ik_skeleton_twobone (seed 001), ik_chain_init + ik_numeric_solve,
 * ik_fabrik_solve and ik_ccd_solve.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_ccd.h"
#include "solver/ik_chain.h"
#include "solver/ik_fabrik.h"
#include "solver/ik_numeric.h"
#include "solver/ik_planar.h"
#include "solver/ik_skeleton.h"
#include "solver/ik_status.h"
#include "storage.h"
#include "solver/ik_twobone.h"

static const double HOSTILE[] = {NAN,     -NAN,     INFINITY, -INFINITY, 1e308, -1e308,
                                 1e-308, -1e-308, 0.0,      -0.0,      DBL_MAX};
#define N_HOSTILE (sizeof HOSTILE / sizeof HOSTILE[0])

/* ---- helpers ---------------------------------------------------------- */

static bool finite_doubles(const double *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(d[i]))
            return false;
    return true;
}
#define FINITE_ARRAY(p, count) finite_doubles((const double *)(p), (count) * sizeof *(p) / sizeof(double))

static bool status_in(int st, const int *allowed, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (st == allowed[i])
            return true;
    return false;
}

/* The verdict on one hostile call: v the value injected, st the status,
 * untouched whether every output byte is as before. */
static void verdict(const char *who, size_t slot, double v, int st, const int *allowed,
                    size_t n_allowed, bool untouched, bool finite_out)
{
    if (!isfinite(v)) {
        ck_assert_msg(st == IK_EINVAL, "%s slot %zu = %g: %s, want invalid_input", who, slot, v,
                      ik_status_name(st));
    } else {
        ck_assert_msg(status_in(st, allowed, n_allowed), "%s slot %zu = %g: status %s", who, slot,
                      v, ik_status_name(st));
    }
    if (st == IK_EINVAL)
        ck_assert_msg(untouched, "%s slot %zu = %g: invalid_input but outputs written", who, slot,
                      v);
    else
        ck_assert_msg(finite_out, "%s slot %zu = %g: %s with a non-finite output", who, slot, v,
                      ik_status_name(st));
}

/* ---- seed 000: planar two-link, three-link, 3D three-link ------------- */

START_TEST(test_twolink2d_hostile)
{
    static const int ok[] = {IK_OK, IK_EUNREACHABLE, IK_EINVAL};
    const ik_twolink2d good = {1.0, 0.7, {0.2, -0.1}, {0.9, 0.8}, +1};
    for (size_t slot = 0; slot < 6; slot++) {
        for (size_t h = 0; h < N_HOSTILE; h++) {
            ik_twolink2d p = good;
            double *f[6] = {&p.l1, &p.l2, &p.base.x, &p.base.y, &p.target.x, &p.target.y};
            *f[slot] = HOSTILE[h];
            ik_twolink2d_result r, before;
            memset(&r, 0xA5, sizeof r);
            before = r;
            int st = ik_twolink2d_solve(&p, &r);
            bool fin = isfinite(r.theta0) && isfinite(r.theta1) && FINITE_ARRAY(r.joints, 3) &&
                       isfinite(r.error);
            verdict("twolink2d", slot, HOSTILE[h], st, ok, 3, !memcmp(&r, &before, sizeof r),
                    fin);
            /* lengths must be > 0 */
            if (slot < 2 && !(HOSTILE[h] > 0))
                ck_assert_int_eq(st, IK_EINVAL);
        }
    }
}
END_TEST

START_TEST(test_threelink2d_hostile)
{
    static const int ok[] = {IK_OK, IK_EUNREACHABLE, IK_EINVAL};
    const ik_threelink2d good = {1.0, 0.7, 0.4, {0.2, -0.1}, {0.9, 0.8}, {0.0, 1.0}, -1};
    for (size_t slot = 0; slot < 9; slot++) {
        for (size_t h = 0; h < N_HOSTILE; h++) {
            ik_threelink2d p = good;
            double *f[9] = {&p.l1,       &p.l2,       &p.l3,    &p.base.x, &p.base.y,
                            &p.target.x, &p.target.y, &p.up.x, &p.up.y};
            *f[slot] = HOSTILE[h];
            ik_threelink2d_result r, before;
            memset(&r, 0xA5, sizeof r);
            before = r;
            int st = ik_threelink2d_solve(&p, &r);
            bool fin = isfinite(r.theta0) && isfinite(r.theta1) && isfinite(r.theta2) &&
                       FINITE_ARRAY(r.joints, 4) && isfinite(r.error);
            verdict("threelink2d", slot, HOSTILE[h], st, ok, 3, !memcmp(&r, &before, sizeof r),
                    fin);
            if (slot < 3 && !(HOSTILE[h] > 0))
                ck_assert_int_eq(st, IK_EINVAL);
        }
    }
}
END_TEST

START_TEST(test_threelink3d_hostile)
{
    static const int ok[] = {IK_OK, IK_EUNREACHABLE, IK_EINVAL};
    ik_threelink3d good = {1.0, 0.8, 0.3, {{0.1, 0.2, 0.3}, {0, 0, 0, 1}},
                           {0.5, 1.0, 0.9}, {0.2, 1.0, 0.1}, +1};
    good.base.q = ik_quat_from_rpy(0.3, -0.2, 0.5);
    for (size_t slot = 0; slot < 16; slot++) {
        for (size_t h = 0; h < N_HOSTILE; h++) {
            ik_threelink3d p = good;
            double *f[16] = {&p.l1,       &p.l2,       &p.l3,       &p.base.p.x, &p.base.p.y,
                             &p.base.p.z, &p.base.q.x, &p.base.q.y, &p.base.q.z, &p.base.q.w,
                             &p.target.x, &p.target.y, &p.target.z, &p.up.x,     &p.up.y,
                             &p.up.z};
            *f[slot] = HOSTILE[h];
            ik_threelink3d_result r, before;
            memset(&r, 0xA5, sizeof r);
            before = r;
            int st = ik_threelink3d_solve(&p, &r);
            bool fin = isfinite(r.yaw) && isfinite(r.theta0) && isfinite(r.theta1) &&
                       isfinite(r.theta2) && isfinite(r.roll) && FINITE_ARRAY(r.joints, 4) &&
                       FINITE_ARRAY(r.local, 3) && FINITE_ARRAY(r.world, 3) && isfinite(r.error);
            verdict("threelink3d", slot, HOSTILE[h], st, ok, 3, !memcmp(&r, &before, sizeof r),
                    fin);
            if (slot < 3 && !(HOSTILE[h] > 0))
                ck_assert_int_eq(st, IK_EINVAL);
        }
    }
}
END_TEST

/* Zero-length links, target on the root, coincident points: seed 000. */
START_TEST(test_planar_degenerate_geometry)
{
    ik_twolink2d_result r;
    /* target on the base: documented +x direction; equal links reach it */
    ik_twolink2d p = {1, 1, {3, 4}, {3, 4}, +1};
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_OK);
    ck_assert(FINITE_ARRAY(r.joints, 3) && isfinite(r.theta0) && isfinite(r.theta1));
    /* the target on the elbow's circle centre, unequal links: too close */
    p.l2 = 0.25;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EUNREACHABLE);
    ck_assert_int_eq(r.reach, IK_REACH_TOO_CLOSE);
    ck_assert_double_eq_tol(r.error, 0.75, 1e-15);
    /* zero-length link */
    p.l2 = 0;
    ck_assert_int_eq(ik_twolink2d_solve(&p, &r), IK_EINVAL);

    /* three-link: E - l3 up on the base */
    ik_threelink2d t = {1, 1, 1, {0, 0}, {0, 1}, {0, 1}, +1};
    ik_threelink2d_result r3;
    ck_assert_int_eq(ik_threelink2d_solve(&t, &r3), IK_OK);
    ck_assert(FINITE_ARRAY(r3.joints, 4));
    ck_assert_double_eq_tol(hypot(r3.joints[3].x - 0, r3.joints[3].y - 1), 0, 1e-15);
    /* the target on the base itself */
    t.target = t.base;
    ck_assert(ik_threelink2d_solve(&t, &r3) == IK_OK);
    ck_assert(FINITE_ARRAY(r3.joints, 4) && isfinite(r3.theta2));

    /* 3D: the target on the base, up along every axis; P_T on the base */
    ik_threelink3d q = {1, 1, 1, {{0, 0, 0}, {0, 0, 0, 1}}, {0, 0, 0}, {0, 1, 0}, +1};
    ik_threelink3d_result r4;
    const ik_vec3 ups[] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, -1, 0}, {1, 1, 1}};
    for (size_t k = 0; k < 5; k++) {
        q.up = ups[k];
        int st = ik_threelink3d_solve(&q, &r4);
        ck_assert(st == IK_OK || st == IK_EUNREACHABLE);
        ck_assert(FINITE_ARRAY(r4.joints, 4) && FINITE_ARRAY(r4.world, 3) &&
                  FINITE_ARRAY(r4.local, 3) && isfinite(r4.roll) && isfinite(r4.yaw));
        q.target = ik_vec3_normalize(ups[k]); /* P_T = E - l3 up on the base */
        st = ik_threelink3d_solve(&q, &r4);
        ck_assert_int_eq(st, IK_OK);
        ck_assert(FINITE_ARRAY(r4.joints, 4) && FINITE_ARRAY(r4.world, 3));
        ck_assert_double_le(ik_vec3_dist(r4.joints[3], q.target), 1e-14);
        q.target = ik_v3(0, 0, 0);
    }
    q.l1 = 0;
    ck_assert_int_eq(ik_threelink3d_solve(&q, &r4), IK_EINVAL);
}
END_TEST

/* ---- seed 001: two-bone and the skeleton update ----------------------- */

START_TEST(test_twobone_hostile)
{
    static const int ok[] = {IK_OK, IK_EUNREACHABLE, IK_EINVAL};
    const ik_vec3 good[5] = {{0.1, 0.2, 0.3}, {0.1, 1.2, 0.3}, {0.9, 1.4, 0.2},
                             {0.7, 0.5, 0.6}, {2, 1, 0}};
    for (int use_pole = 0; use_pole < 2; use_pole++) {
        for (size_t slot = 0; slot < (use_pole ? 15u : 12u); slot++) {
            for (size_t h = 0; h < N_HOSTILE; h++) {
                ik_vec3 v[5];
                memcpy(v, good, sizeof v);
                ((double *)v)[slot] = HOSTILE[h];
                ik_twobone_result r, before;
                memset(&r, 0xA5, sizeof r);
                before = r;
                int st = ik_twobone_solve(v[0], v[1], v[2], v[3], use_pole ? &v[4] : NULL, &r);
                bool fin = ik_vec3_isfinite(r.b) && ik_vec3_isfinite(r.c) && isfinite(r.error);
                verdict("twobone", slot, HOSTILE[h], st, ok, 3, !memcmp(&r, &before, sizeof r),
                        fin);
            }
        }
    }
}
END_TEST

START_TEST(test_twobone_degenerate_geometry)
{
    const ik_vec3 a = {1, 2, 3}, b = {1, 3, 3}, c = {2, 3, 3};
    ik_twobone_result r;
    /* zero-length bones: b on a, c on b */
    ck_assert_int_eq(ik_twobone_solve(a, a, c, ik_v3(0, 0, 0), NULL, &r), IK_EINVAL);
    ck_assert_int_eq(ik_twobone_solve(a, b, b, ik_v3(0, 0, 0), NULL, &r), IK_EINVAL);
    /* target on the root (equal bones: reachable, folded) */
    ck_assert_int_eq(ik_twobone_solve(a, b, c, a, NULL, &r), IK_OK);
    ck_assert(ik_vec3_isfinite(r.b) && ik_vec3_isfinite(r.c));
    ck_assert_double_le(ik_vec3_dist(r.c, a), 1e-15);
    /* the foot on the hip, the target on the knee, the pole on the hip, the
     * pole on the target, the pole on the knee */
    const ik_vec3 *poles[] = {NULL, &a, &b, &c};
    const ik_vec3 targets[] = {b, c, a, ik_v3(1.5, 2.5, 3.0)};
    for (size_t i = 0; i < 4; i++) {
        for (size_t k = 0; k < 4; k++) {
            int st = ik_twobone_solve(a, b, c, targets[k], poles[i], &r);
            ck_assert_int_eq(st, IK_OK);
            ck_assert(ik_vec3_isfinite(r.b) && ik_vec3_isfinite(r.c) && isfinite(r.error));
            ck_assert_double_le(ik_vec3_dist(r.c, targets[k]), 1e-14);
            ck_assert_double_eq_tol(ik_vec3_dist(r.b, a), 1, 1e-14);
        }
    }
    ik_vec3 on_target = ik_v3(1.5, 2.5, 3.0);
    ck_assert_int_eq(ik_twobone_solve(a, b, a, on_target, &on_target, &r), IK_OK);
    ck_assert(ik_vec3_isfinite(r.b));
}
END_TEST

/* A four-bone skeleton: root -> hip -> knee -> foot. */
static void skeleton(ik_bone *bones)
{
    memset(bones, 0, 4 * sizeof *bones); /* the padding too: the bones are compared whole */
    for (int i = 0; i < 4; i++) {
        bones[i].parent = i - 1;
        bones[i].translation = i == 0 ? ik_v3(0.1, 1.0, 0.0) : ik_v3(0.0, -0.45, 0.05);
        bones[i].rotation = ik_quat_from_rpy(0.1 * i, -0.05 * i, 0.2);
        bones[i].scale = ik_v3(1, 1, 1);
    }
    bones[0].scale = ik_v3(1.5, 1.5, 1.5);
}

static bool bones_finite(const ik_bone *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ik_vec3_isfinite(b[i].translation) || !ik_quat_isfinite(b[i].rotation) ||
            !ik_vec3_isfinite(b[i].scale))
            return false;
    return true;
}

START_TEST(test_skeleton_hostile)
{
    static const int ok_globals[] = {IK_OK, IK_EINVAL};
    static const int ok_limb[] = {IK_OK, IK_EUNREACHABLE, IK_EINVAL};
    const size_t per_bone = 10, n_slots = 4 * per_bone + 6;
    for (size_t slot = 0; slot < n_slots; slot++) {
        for (size_t h = 0; h < N_HOSTILE; h++) {
            ik_bone bones[4], bones_before[4];
            skeleton(bones);
            ik_vec3 target = ik_v3(0.3, 0.4, 0.1), pole = ik_v3(0, 0.5, 2);
            if (slot < 4 * per_bone) {
                ik_bone *b = &bones[slot / per_bone];
                double *f[10] = {&b->translation.x, &b->translation.y, &b->translation.z,
                                 &b->rotation.x,    &b->rotation.y,    &b->rotation.z,
                                 &b->rotation.w,    &b->scale.x,       &b->scale.y,
                                 &b->scale.z};
                *f[slot % per_bone] = HOSTILE[h];
            } else if (slot < 4 * per_bone + 3) {
                ((double *)&target)[slot - 4 * per_bone] = HOSTILE[h];
            } else {
                ((double *)&pole)[slot - 4 * per_bone - 3] = HOSTILE[h];
            }
            memcpy(bones_before, bones, sizeof bones);
            ik_mat34 g[4], g_before[4];
            memset(g, 0xA5, sizeof g);
            memcpy(g_before, g, sizeof g);
            if (slot < 4 * per_bone) {
                int st = ik_skeleton_globals(bones, 4, g);
                /* documented: invalid bones leave globals untouched; valid
                 * bones whose globals overflow reset them to identities */
                bool same = !memcmp(g, g_before, sizeof g);
                if (st == IK_EINVAL && isfinite(HOSTILE[h]) && !same) {
                    ik_mat34 id = ik_mat34_identity();
                    for (int k = 0; k < 4; k++)
                        ck_assert(!memcmp(&g[k], &id, sizeof id));
                    same = true;
                }
                verdict("skeleton_globals", slot, HOSTILE[h], st, ok_globals, 2, same,
                        FINITE_ARRAY(g, 4));
            }
            ik_twobone_result res, res_before;
            memset(&res, 0xA5, sizeof res);
            res_before = res;
            memset(g, 0xA5, sizeof g);
            int st = ik_skeleton_twobone(bones, 4, 1, 2, 3, target, &pole, g, &res);
            bool g_same = !memcmp(g, g_before, sizeof g);
            if (!g_same) { /* the overflow case: identities (ik_skeleton.h) */
                ik_mat34 id = ik_mat34_identity();
                g_same = true;
                for (int k = 0; k < 4; k++)
                    g_same = g_same && !memcmp(&g[k], &id, sizeof id);
            }
            bool untouched = g_same && !memcmp(bones, bones_before, sizeof bones) &&
                             !memcmp(&res, &res_before, sizeof res);
            bool fin = FINITE_ARRAY(g, 4) && bones_finite(bones, 4) && ik_vec3_isfinite(res.b) &&
                       ik_vec3_isfinite(res.c) && isfinite(res.error);
            verdict("skeleton_twobone", slot, HOSTILE[h], st, ok_limb, 3, untouched, fin);
        }
    }
}
END_TEST

START_TEST(test_skeleton_degenerate_geometry)
{
    ik_bone bones[4];
    ik_mat34 g[4];
    ik_twobone_result res;
    /* zero-length thigh: the knee on the hip */
    skeleton(bones);
    bones[2].translation = ik_v3(0, 0, 0);
    ck_assert_int_eq(ik_skeleton_twobone(bones, 4, 1, 2, 3, ik_v3(0, 0, 0), NULL, g, &res),
                     IK_EINVAL);
    /* target on the hip */
    skeleton(bones);
    ck_assert_int_eq(ik_skeleton_globals(bones, 4, g), IK_OK);
    ik_vec3 hip = ik_mat34_origin(&g[1]);
    int st = ik_skeleton_twobone(bones, 4, 1, 2, 3, hip, NULL, g, &res);
    ck_assert(st == IK_OK || st == IK_EUNREACHABLE);
    ck_assert(FINITE_ARRAY(g, 4) && bones_finite(bones, 4));
    /* pole on the hip, on the target */
    skeleton(bones);
    st = ik_skeleton_twobone(bones, 4, 1, 2, 3, ik_v3(0.2, 0.5, 0.3), &hip, g, &res);
    ck_assert_int_eq(st, IK_OK);
    ck_assert(FINITE_ARRAY(g, 4) && bones_finite(bones, 4));
    ik_vec3 t = ik_v3(0.2, 0.5, 0.3);
    st = ik_skeleton_twobone(bones, 4, 1, 2, 3, t, &t, g, &res);
    ck_assert_int_eq(st, IK_OK);
    ck_assert(FINITE_ARRAY(g, 4) && bones_finite(bones, 4));
    ck_assert_double_le(ik_vec3_dist(ik_mat34_origin(&g[3]), t), 1e-12);
}
END_TEST

/* ---- general chains: ik_chain_init and ik_numeric_solve --------------- */

static ik_joint jnt(ik_joint_type type, ik_vec3 xyz, ik_vec3 axis, double lo, double hi)
{
    ik_joint j;
    j.type = type;
    j.origin.p = xyz;
    j.origin.q = ik_quat_identity();
    j.axis = axis;
    j.lower = lo;
    j.upper = hi;
    return j;
}

#define NJ 5
static void arm_joints(ik_joint *j)
{
    j[0] = jnt(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.1), ik_v3(0, 0, 1), -3, 3);
    j[1] = jnt(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.2), ik_v3(0, 1, 0), -2, 2);
    j[2] = jnt(IK_JOINT_PRISMATIC, ik_v3(0, 0, 0.3), ik_v3(0, 0, 1), -0.1, 0.2);
    j[3] = jnt(IK_JOINT_CONTINUOUS, ik_v3(0, 0.1, 0.2), ik_v3(1, 0, 0), 0, 0);
    j[4] = jnt(IK_JOINT_FIXED, ik_v3(0.05, 0, 0.1), ik_v3(0, 0, 0), 0, 0);
}

static unsigned char ws[1 << 14];

static ik_numeric_opts quick_opts(void)
{
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0;
    o.max_restarts = 2;
    o.max_iterations = 300;
    return o;
}

static bool numeric_result_finite(const ik_numeric_result *r)
{
    return isfinite(r->pos_err) && isfinite(r->rot_err) && isfinite(r->pos_err_max) &&
           isfinite(r->rot_err_max) && isfinite(r->elapsed_s);
}

/* One numeric solve with the verdict: q must be finite and inside the
 * limits on every status but IK_EINVAL / IK_ENOSPC. */
static void numeric_verdict(const char *who, size_t slot, double v, const ik_chain *c,
                            const ik_target *t, const double *seed, const ik_numeric_opts *o)
{
    static const int ok[] = {IK_OK, IK_EUNREACHABLE, IK_ENOTCONV, IK_ETIMEDOUT, IK_EINVAL};
    double q[TEST_DOF_CAP], before[TEST_DOF_CAP];
    for (size_t k = 0; k < TEST_DOF_CAP; k++)
        q[k] = before[k] = -12345.0;
    ik_numeric_result res;
    memset(&res, 0xA5, sizeof res);
    int st = ik_numeric_solve(c, t, seed, o, ws, sizeof ws, q, &res);
    ck_assert_int_eq(st, res.status);
    bool fin = finite_doubles(q, c->dof) && ik_chain_within_limits(c, q, 0.0) &&
               numeric_result_finite(&res);
    verdict(who, slot, v, st, ok, sizeof ok / sizeof ok[0], !memcmp(q, before, sizeof q), fin);
}

START_TEST(test_chain_init_hostile)
{
    /* every number of every described joint */
    const size_t per_joint = 12;
    for (size_t slot = 0; slot < NJ * per_joint; slot++) {
        for (size_t h = 0; h < N_HOSTILE; h++) {
            ik_joint j[NJ];
            arm_joints(j);
            ik_joint *x = &j[slot / per_joint];
            double *f[12] = {&x->origin.p.x, &x->origin.p.y, &x->origin.p.z, &x->origin.q.x,
                             &x->origin.q.y, &x->origin.q.z, &x->origin.q.w, &x->axis.x,
                             &x->axis.y,     &x->axis.z,     &x->lower,      &x->upper};
            *f[slot % per_joint] = HOSTILE[h];
            ik_chain c, before;
            memset(&c, 0xA5, sizeof c);
            before = c;
            int st = chain_init(&c, j, NJ);
            /* fields URDF ignores: a continuous joint's limits, a fixed
             * joint's axis and limits (ik_chain.h) */
            size_t fk = slot % per_joint;
            bool ignored = (x->type == IK_JOINT_CONTINUOUS && fk >= 10) ||
                           (x->type == IK_JOINT_FIXED && fk >= 7);
            double v = ignored ? 0.5 : HOSTILE[h];
            if (!isfinite(v))
                ck_assert_msg(st == IK_EINVAL, "chain_init slot %zu = %g: %s", slot, v,
                              ik_status_name(st));
            if (st != IK_OK) {
                ck_assert_int_eq(st, IK_EINVAL);
                ck_assert(!memcmp(&c, &before, sizeof c));
                continue;
            }
            /* a chain that compiles: its FK at the mid pose is finite or the
             * numeric solver refuses it; any solve on it stays finite */
            ik_target t = ik_target_position(ik_v3(0.1, 0.2, 0.5));
            ik_numeric_opts o = quick_opts();
            numeric_verdict("chain", slot, v, &c, &t, NULL, &o);
            t = ik_target_full_pose((ik_xform){{0.1, 0.2, 0.5}, {0, 0, 0, 1}});
            numeric_verdict("chain full", slot, v, &c, &t, NULL, &o);
        }
    }
}
END_TEST

START_TEST(test_numeric_hostile)
{
    ik_joint j[NJ];
    arm_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, NJ), IK_OK);
    const double good_seed[4] = {0.1, -0.2, 0.05, 1.0};
    /* target (pose p, q; weights), seed, options */
    const size_t n_slots = 7 + 6 + 4 + 3;
    for (int mode = 0; mode < 3; mode++) {
        for (size_t slot = 0; slot < n_slots; slot++) {
            for (size_t h = 0; h < N_HOSTILE; h++) {
                ik_target t = ik_target_full_pose(
                    (ik_xform){{0.1, 0.1, 0.6}, ik_quat_from_rpy(0.2, 0.1, -0.3)});
                t.mode = (ik_target_mode)mode;
                for (int r = 0; r < 6; r++)
                    t.weight[r] = 1.0;
                double seed[4];
                memcpy(seed, good_seed, sizeof seed);
                ik_numeric_opts o = quick_opts();
                double v = HOSTILE[h];
                bool counts = true; /* does the slot matter in this mode? */
                if (slot < 7) {
                    double *f[7] = {&t.pose.p.x, &t.pose.p.y, &t.pose.p.z, &t.pose.q.x,
                                    &t.pose.q.y, &t.pose.q.z, &t.pose.q.w};
                    *f[slot] = v;
                    counts = slot < 3 || t.mode != IK_TARGET_POSITION;
                } else if (slot < 13) {
                    t.weight[slot - 7] = v;
                    counts = t.mode == IK_TARGET_WEIGHTED;
                } else if (slot < 17) {
                    seed[slot - 13] = v;
                } else {
                    double *f[3] = {&o.tol_pos, &o.tol_rot, &o.timeout_s};
                    *f[slot - 17] = v;
                    if (slot == 19 && isfinite(v) && v > 0)
                        o.timeout_s = fmin(v, 0.05); /* keep the test fast */
                }
                if (!counts)
                    v = 0.5; /* ignored input: no verdict on its value */
                numeric_verdict("numeric", slot + 100 * (size_t)mode, v, &c, &t, seed, &o);
            }
        }
    }
}
END_TEST

START_TEST(test_numeric_degenerate_geometry)
{
    /* every link of zero length: the tip never leaves the base */
    ik_joint j[4] = {jnt(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0), ik_v3(0, 0, 1), -1, 1),
                     jnt(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0), ik_v3(0, 1, 0), -1, 1),
                     jnt(IK_JOINT_CONTINUOUS, ik_v3(0, 0, 0), ik_v3(1, 0, 0), 0, 0),
                     jnt(IK_JOINT_FIXED, ik_v3(0, 0, 0), ik_v3(0, 0, 0), 0, 0)};
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 4), IK_OK);
    ik_numeric_opts o = quick_opts();
    double q[3];
    ik_numeric_result res;
    /* target on the root: reached at once */
    ik_target t = ik_target_position(ik_v3(0, 0, 0));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert(finite_doubles(q, 3) && numeric_result_finite(&res));
    /* anywhere else: out of reach (said at once), best pose finite */
    t = ik_target_position(ik_v3(1, 0, 0));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_EUNREACHABLE);
    ck_assert(finite_doubles(q, 3) && numeric_result_finite(&res));
    ck_assert_double_eq_tol(res.pos_err, 1, 1e-12);
    /* full pose on the root: the orientation is reachable */
    t = ik_target_full_pose((ik_xform){{0, 0, 0}, ik_quat_from_rpy(0.3, 0.2, 0.1)});
    int st = ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res);
    ck_assert_int_eq(st, IK_OK);
    ck_assert(finite_doubles(q, 3) && numeric_result_finite(&res));
    /* a prismatic-only chain with a zero range: fixed in place */
    ik_joint p[1] = {jnt(IK_JOINT_PRISMATIC, ik_v3(0, 0, 1), ik_v3(0, 0, 1), 0, 0)};
    ck_assert_int_eq(chain_init(&c, p, 1), IK_OK);
    t = ik_target_position(ik_v3(0, 0, 1));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    t = ik_target_position(ik_v3(0, 0, 0));
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_EUNREACHABLE);
    ck_assert(finite_doubles(q, 1) && numeric_result_finite(&res));
}
END_TEST

/* ---- animation chains: FABRIK and CCD --------------------------------- */

typedef int (*anim_fn)(const ik_vec3 *, size_t, ik_vec3, const ik_anim_options *, void *, size_t,
                       ik_vec3 *, ik_quat *, ik_quat *, ik_anim_result *);

static void anim_hostile(anim_fn solve, const char *who, bool hinge)
{
    static const int ok[] = {IK_OK, IK_EUNREACHABLE, IK_ENOTCONV, IK_EINVAL};
    enum { N = 4 };
    const ik_vec3 good[N] = {{0, 0, 0}, {0, 0.5, 0}, {0.3, 0.9, 0}, {0.3, 1.2, 0.2}};
    /* joints (12), target (3), pole (3), root_direction (3), tolerance,
     * limits: joint 1 max_bend, joint 2 hinge axis (3), min, max */
    const size_t n_slots = 12 + 3 + 3 + 3 + 1 + 1 + (hinge ? 5u : 0u);
    static double work[256];
    for (size_t slot = 0; slot < n_slots; slot++) {
        for (size_t h = 0; h < N_HOSTILE; h++) {
            ik_vec3 p[N], target = ik_v3(0.4, 0.6, 0.3), pole = ik_v3(1, 1, 0);
            memcpy(p, good, sizeof p);
            ik_anim_limit lim[N - 1] = {ik_anim_limit_none(), ik_anim_limit_cone(2.0),
                                        ik_anim_limit_none()};
            if (hinge)
                lim[2] = ik_anim_limit_hinge(ik_v3(0, 0, 1), -2.5, 2.5);
            ik_anim_options o;
            ik_anim_options_default(&o);
            o.pole = hinge ? NULL : &pole;
            o.limits = lim;
            o.max_iterations = 50;
            double v = HOSTILE[h];
            if (slot < 12)
                ((double *)p)[slot] = v;
            else if (slot < 15)
                ((double *)&target)[slot - 12] = v;
            else if (slot < 18) {
                ((double *)&pole)[slot - 15] = v;
                o.pole = &pole;
            } else if (slot < 21)
                ((double *)&o.root_direction)[slot - 18] = v;
            else if (slot == 21)
                o.tolerance = v;
            else if (slot == 22)
                lim[1].max_bend = v;
            else if (slot < 26)
                ((double *)&lim[2].hinge_axis)[slot - 23] = v;
            else if (slot == 26)
                lim[2].hinge_min = v;
            else
                lim[2].hinge_max = v;
            ik_vec3 out[N];
            ik_quat rw[N - 1], rl[N - 1];
            memset(out, 0xA5, sizeof out);
            memset(rw, 0xA5, sizeof rw);
            memset(rl, 0xA5, sizeof rl);
            unsigned char before[sizeof out + sizeof rw + sizeof rl];
            memcpy(before, out, sizeof out);
            memcpy(before + sizeof out, rw, sizeof rw);
            memcpy(before + sizeof out + sizeof rw, rl, sizeof rl);
            ik_anim_result res;
            int st = solve(p, N, target, &o, work, sizeof work, out, rw, rl, &res);
            ck_assert_int_eq(st, res.status);
            bool untouched = !memcmp(before, out, sizeof out) &&
                             !memcmp(before + sizeof out, rw, sizeof rw) &&
                             !memcmp(before + sizeof out + sizeof rw, rl, sizeof rl);
            bool fin = FINITE_ARRAY(out, N) && FINITE_ARRAY(rw, N - 1) && FINITE_ARRAY(rl, N - 1) &&
                       isfinite(res.error);
            /* max_bend = +INFINITY is documented as "no limit": valid */
            double judged = (slot == 22 && v == INFINITY) ? 4.0 : v;
            verdict(who, slot, judged, st, ok, 4, untouched, fin);
        }
    }
}

START_TEST(test_fabrik_hostile)
{
    anim_hostile(ik_fabrik_solve, "fabrik", false);
}
END_TEST

START_TEST(test_ccd_hostile)
{
    anim_hostile(ik_ccd_solve, "ccd", false);
    anim_hostile(ik_ccd_solve, "ccd hinge", true);
}
END_TEST

START_TEST(test_anim_degenerate_geometry)
{
    anim_fn solvers[2] = {ik_fabrik_solve, ik_ccd_solve};
    static double work[256];
    for (int s = 0; s < 2; s++) {
        ik_vec3 p[4] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {1, 1, 1}}, out[4];
        ik_quat rw[3], rl[3];
        ik_anim_result res;
        /* coincident joints: a zero-length bone */
        ik_vec3 z[4] = {{0, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1}};
        ck_assert_int_eq(solvers[s](z, 4, ik_v3(1, 1, 0), NULL, work, sizeof work, out, rw, rl,
                                    &res),
                         IK_EINVAL);
        /* the target on the root, on each joint, on the tip; the pole on
         * each joint and on the target */
        for (int k = 0; k < 4; k++) {
            for (int pk = -1; pk < 5; pk++) {
                ik_anim_options o;
                ik_anim_options_default(&o);
                ik_vec3 pole = pk < 0 ? ik_v3(0, 0, 0) : pk < 4 ? p[pk] : p[k];
                o.pole = pk < 0 ? NULL : &pole;
                int st = solvers[s](p, 4, p[k], &o, work, sizeof work, out, rw, rl, &res);
                ck_assert_msg(st == IK_OK || st == IK_EUNREACHABLE || st == IK_ENOTCONV,
                              "solver %d target %d pole %d: %s", s, k, pk, ik_status_name(st));
                ck_assert(FINITE_ARRAY(out, 4) && FINITE_ARRAY(rw, 3) && FINITE_ARRAY(rl, 3) &&
                          isfinite(res.error));
                for (int b = 0; b < 3; b++)
                    ck_assert_double_eq_tol(ik_vec3_dist(out[b], out[b + 1]),
                                            ik_vec3_dist(p[b], p[b + 1]), 1e-9);
            }
        }
    }
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("ik_hostile");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_twolink2d_hostile);
    tcase_add_test(tc, test_threelink2d_hostile);
    tcase_add_test(tc, test_threelink3d_hostile);
    tcase_add_test(tc, test_planar_degenerate_geometry);
    tcase_add_test(tc, test_twobone_hostile);
    tcase_add_test(tc, test_twobone_degenerate_geometry);
    tcase_add_test(tc, test_skeleton_hostile);
    tcase_add_test(tc, test_skeleton_degenerate_geometry);
    tcase_add_test(tc, test_chain_init_hostile);
    tcase_add_test(tc, test_numeric_hostile);
    tcase_add_test(tc, test_numeric_degenerate_geometry);
    tcase_add_test(tc, test_fabrik_hostile);
    tcase_add_test(tc, test_ccd_hostile);
    tcase_add_test(tc, test_anim_degenerate_geometry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hostile_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
