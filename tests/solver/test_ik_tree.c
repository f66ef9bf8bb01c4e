/*
 * test_ik_tree.c: solver/ik_tree.h. Every answer is checked by forward
 * kinematics of the whole tree computed here from the described joints
 * (urdf_fk: origin * motion, URDF semantics, not ik_chain_fk), never
 * against the solver's own report:
 *   - building: shared prefixes (PR2 from base_link shares the prismatic
 *     torso joint, from torso_lift_link nothing), the parent-list builder
 *     against the chain-list builder, invalid trees;
 *   - both arms of the PR2 (tests/data/robots/pr2.urdf, from
 *     torso_lift_link and from base_link) and a Baxter-like tree built here
 *     (a torso yaw joint shared by two 7-joint arms with Baxter's link
 *     offsets; tests/data/robots/baxter_like.urdf must describe the same
 *     tree): targets by FK of random configurations inside the limits,
 *     both tips full pose at 1e-5, at least 99.9% success with a budget in
 *     iterations (never in time: the machine is shared), every answer
 *     inside the limits and on target by urdf_fk;
 *   - priorities: a small planar tree whose two tips cannot both reach
 *     their targets: the high-priority tip lands within 1e-6 and the
 *     low-priority one's weighted error equals the minimum found by a
 *     brute-force search over the freedom the first one leaves; strict
 *     priorities over shared joints (the PR2 from base_link, a humanoid's
 *     hands over its three back joints, tests/data/robots/humanoid_like.urdf):
 *     the priority-0 tip met in 40 of 40 cases whether the priority-1 tip
 *     is 10 m away (said at once: out of reach) or on a conflicting pose
 *     (cause priority);
 *   - out of reach: a one-tip tree answers IK_EUNREACHABLE at once, a few
 *     iterations and no restart, its best pose reaching towards the target;
 *   - turns: continuous joints (and revolute ones spanning a full turn)
 *     answered on the turn nearest the seed;
 *   - keep rules, the secondary objectives (each one's value is at least as
 *     good as the first solution's, and strictly better somewhere), invalid
 *     input, a too small workspace, determinism.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/proto/urdf_read.h"
#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"
#include "solver/ik_tree.h"
#include "chains.h"

static uint64_t rng_state;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1.0p-53);
}

static unsigned char ws[1 << 17];

/* ---- independent forward kinematics ------------------------------------ */

/* A described path and, for each of its movable joints in order, the tree
 * variable that drives it (found by the test from the joint identity, see
 * tip_vars). */
typedef struct path {
    ik_joint j[TEST_JOINTS_CAP];
    size_t n;
    size_t var[TEST_DOF_CAP];
    size_t nvar;
} path;

static ik_xform urdf_fk(const path *p, const double *q)
{
    ik_xform T = ik_xform_identity();
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        T = ik_xform_mul(T, p->j[i].origin);
        if (p->j[i].type == IK_JOINT_FIXED)
            continue;
        ik_xform m = ik_xform_identity();
        ik_vec3 ax = ik_vec3_normalize(p->j[i].axis);
        const double v = q[p->var[k++]];
        if (p->j[i].type == IK_JOINT_PRISMATIC)
            m.p = ik_vec3_scale(ax, v);
        else
            m.q = ik_quat_from_axis_angle(ax, v);
        T = ik_xform_mul(T, m);
    }
    return T;
}

/* Each movable joint of p, by position in the path, maps to the tree
 * variable whose source is that described joint (ids: the described index
 * of every joint of p in the builder's numbering). */
static void tip_vars(const ik_tree *tr, path *p, const size_t *ids)
{
    p->nvar = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->j[i].type == IK_JOINT_FIXED)
            continue;
        size_t v = 0;
        while (v < tr->dof && tr->source_index[v] != ids[i])
            v++;
        ck_assert_uint_lt(v, tr->dof);
        p->var[p->nvar++] = v;
    }
}

static void random_q(const ik_tree *tr, double *q)
{
    for (size_t v = 0; v < tr->dof; v++)
        q[v] = tr->type[v] == IK_JOINT_CONTINUOUS ? urand(-IK_PI, IK_PI)
                                                  : urand(tr->lower[v], tr->upper[v]);
}

/* ---- the PR2 -------------------------------------------------------------- */

static char *read_text(const char *name, size_t *len)
{
    const char *root = getenv("IKD_DATA");
    char fn[4096];
    snprintf(fn, sizeof fn, "%s/%s", root ? root : "tests/data", name);
    FILE *f = fopen(fn, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (set IKD_DATA)", fn);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
    char *buf = malloc((size_t)n + 1);
    ck_assert(buf != NULL);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Both PR2 arms from base: tree from the two chains, paths for urdf_fk. */
static void pr2_tree(const char *base, ik_tree *tr, path *pl, path *pr)
{
    size_t len;
    char *xml = read_text("robots/pr2.urdf", &len);
    proto_error err;
    ck_assert_int_eq(proto_urdf_chain(xml, len, base, "l_wrist_roll_link", pl->j, TEST_JOINTS_CAP,
                                      &pl->n, NULL, &err),
                     0);
    ck_assert_int_eq(proto_urdf_chain(xml, len, base, "r_wrist_roll_link", pr->j, TEST_JOINTS_CAP,
                                      &pr->n, NULL, &err),
                     0);
    free(xml);
    const ik_joint *chains[2] = {pl->j, pr->j};
    size_t lens[2] = {pl->n, pr->n};
    ck_assert_int_eq(tree_from_chains(tr, chains, lens, 2), IK_OK);
    /* builder numbering: concatenated chains, shared joints keep the first
     * chain's index */
    size_t idl[TEST_JOINTS_CAP], idr[TEST_JOINTS_CAP];
    size_t shared = 0;
    while (shared < pl->n && shared < pr->n &&
           memcmp(&pl->j[shared], &pr->j[shared], sizeof pl->j[0]) == 0)
        shared++;
    for (size_t i = 0; i < pl->n; i++)
        idl[i] = i;
    for (size_t i = 0; i < pr->n; i++)
        idr[i] = i < shared ? i : pl->n + i;
    tip_vars(tr, pl, idl);
    tip_vars(tr, pr, idr);
}

static ik_tree tree, tree2; /* large: static */

START_TEST(test_pr2_build)
{
    path pl, pr;
    pr2_tree("torso_lift_link", &tree, &pl, &pr);
    ck_assert_uint_eq(tree.ntips, 2);
    ck_assert_uint_eq(tree.dof, 14);
    for (size_t v = 0; v < tree.dof; v++)
        ck_assert(tree.tips_of[v] == 1u || tree.tips_of[v] == 2u);
    pr2_tree("base_link", &tree, &pl, &pr);
    ck_assert_uint_eq(tree.dof, 15);
    ck_assert_uint_eq(pl.var[0], pr.var[0]); /* the torso, shared */
    ck_assert_int_eq(tree.type[pl.var[0]], IK_JOINT_PRISMATIC);
    ck_assert_uint_eq(tree.tips_of[pl.var[0]], 3u);
    size_t only_left = 0, only_right = 0;
    for (size_t v = 0; v < tree.dof; v++) {
        only_left += tree.tips_of[v] == 1u;
        only_right += tree.tips_of[v] == 2u;
    }
    ck_assert_uint_eq(only_left, 7);
    ck_assert_uint_eq(only_right, 7);
    /* tree FK against the described joints */
    rng_state = 5;
    for (int i = 0; i < 50; i++) {
        double q[TEST_DOF_CAP];
        random_q(&tree, q);
        ik_xform a = ik_tree_fk(&tree, q, 0), b = urdf_fk(&pl, q);
        ck_assert_double_lt(ik_vec3_dist(a.p, b.p), 1e-12);
        ck_assert_double_lt(ik_quat_angle_between(a.q, b.q), 1e-9);
        a = ik_tree_fk(&tree, q, 1);
        b = urdf_fk(&pr, q);
        ck_assert_double_lt(ik_vec3_dist(a.p, b.p), 1e-12);
    }
}
END_TEST

/* Full pose on every tip from random configurations; returns successes and
 * checks every answer by urdf_fk. */
static size_t random_full_pose(const ik_tree *tr, const path *paths, size_t samples,
                               double *iters_mean)
{
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000; /* a budget independent of the clock */
    size_t ok = 0, iters = 0;
    for (size_t s = 0; s < samples; s++) {
        double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(tr, qt);
        ik_tree_goal g[IK_TREE_MAX_TIPS];
        ik_xform goal[IK_TREE_MAX_TIPS];
        for (size_t t = 0; t < tr->ntips; t++) {
            goal[t] = urdf_fk(&paths[t], qt);
            g[t] = ik_tree_goal_target(ik_target_full_pose(goal[t]));
        }
        ik_tree_result res;
        int rc = ik_tree_solve(tr, g, NULL, &o, ws, sizeof ws, q, &res);
        iters += res.iterations;
        if (rc != IK_OK)
            continue;
        ck_assert(ik_tree_within_limits(tr, q, 0.0));
        for (size_t t = 0; t < tr->ntips; t++) {
            double e[6];
            ik_pose_error(goal[t], urdf_fk(&paths[t], q), e);
            for (int r = 0; r < 6; r++)
                ck_assert_msg(fabs(e[r]) <= 1e-5, "sample %zu tip %zu e[%d]=%g", s, t, r, e[r]);
        }
        ok++;
    }
    *iters_mean = (double)iters / (double)samples;
    return ok;
}

START_TEST(test_pr2_two_arms)
{
    path p[2];
    const char *base = _i == 0 ? "torso_lift_link" : "base_link";
    pr2_tree(base, &tree, &p[0], &p[1]);
    rng_state = 1000 + (uint64_t)_i;
    const size_t N = 2000;
    double it;
    size_t ok = random_full_pose(&tree, p, N, &it);
    printf("pr2 two arms from %s: %zu/%zu, %.1f iterations mean\n", base, ok, N, it);
    ck_assert_uint_ge(ok * 1000, N * 999);
}
END_TEST

/* A Baxter-like tree: a torso yaw joint shared by two 7-joint arms with the
 * link offsets, axes and limits of Baxter's arms (baxter_description). */
static void baxter_arm(path *p, double side)
{
    const double h = 1.57079632679;
    p->n = 0;
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.3), ZERO, ik_v3(0, 0, 1), -1.0, 1.0);
    p->j[p->n++] = joint(IK_JOINT_FIXED, ik_v3(0.024645, side * 0.219645, 0.118588),
                         ik_v3(0, 0, side * 0.7854), ZERO, 0, 0);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.055695, 0, 0.011038), ZERO, ik_v3(0, 0, 1),
                         -1.7016, 1.7016);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.069, 0, 0.27035), ik_v3(-h, 0, 0),
                         ik_v3(0, 0, 1), -2.147, 1.047);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.102, 0, 0), ik_v3(h, 0, h), ik_v3(0, 0, 1),
                         -3.0541, 3.0541);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.069, 0, 0.26242), ik_v3(-h, -h, 0),
                         ik_v3(0, 0, 1), -0.05, 2.618);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.10359, 0, 0), ik_v3(h, 0, h), ik_v3(0, 0, 1),
                         -3.059, 3.059);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.01, 0, 0.2707), ik_v3(-h, -h, 0),
                         ik_v3(0, 0, 1), -1.5707, 2.094);
    p->j[p->n++] = joint(IK_JOINT_REVOLUTE, ik_v3(0.115975, 0, 0), ik_v3(h, 0, h),
                         ik_v3(0, 0, 1), -3.059, 3.059);
    p->j[p->n++] = joint(IK_JOINT_FIXED, ik_v3(0, 0, 0.11355), ZERO, ZERO, 0, 0);
}

/* The same tree through the parent-list builder: torso 0, left 1..9,
 * right 10..18. */
static void baxter_tree(ik_tree *tr, path *p)
{
    baxter_arm(&p[0], 1.0);
    baxter_arm(&p[1], -1.0);
    ik_joint j[19];
    int parent[19];
    j[0] = p[0].j[0];
    parent[0] = -1;
    for (int i = 1; i < 10; i++) {
        j[i] = p[0].j[i];
        parent[i] = i - 1;
        j[9 + i] = p[1].j[i];
        parent[9 + i] = i == 1 ? 0 : 9 + i - 1;
    }
    size_t tips[2] = {9, 18};
    ck_assert_int_eq(tree_init(tr, j, parent, 19, tips, 2), IK_OK);
    size_t idl[10], idr[10];
    for (size_t i = 0; i < 10; i++) {
        idl[i] = i;
        idr[i] = i == 0 ? 0 : 9 + i;
    }
    tip_vars(tr, &p[0], idl);
    tip_vars(tr, &p[1], idr);
}

START_TEST(test_baxter_two_arms)
{
    path p[2];
    baxter_tree(&tree, p);
    ck_assert_uint_eq(tree.dof, 15);
    ck_assert_uint_eq(tree.tips_of[p[0].var[0]], 3u);
    /* the chain-list builder finds the same sharing */
    const ik_joint *chains[2] = {p[0].j, p[1].j};
    size_t lens[2] = {p[0].n, p[1].n};
    ck_assert_int_eq(tree_from_chains(&tree2, chains, lens, 2), IK_OK);
    ck_assert_uint_eq(tree2.dof, 15);
    rng_state = 77;
    double q[TEST_DOF_CAP];
    random_q(&tree, q);
    for (size_t t = 0; t < 2; t++) {
        ik_xform a = ik_tree_fk(&tree, q, t), b = ik_tree_fk(&tree2, q, t);
        ck_assert_double_lt(ik_vec3_dist(a.p, b.p), 1e-12);
    }
    /* tests/data/robots/baxter_like.urdf describes the same tree */
    size_t len;
    char *xml = read_text("robots/baxter_like.urdf", &len);
    for (size_t t = 0; t < 2; t++) {
        proto_error err;
        ik_chain *cp = test_adopt(proto_urdf_load_chain(
            xml, len, "base_link", t ? "right_hand" : "left_hand", 64, NULL, &err));
        ck_assert_ptr_nonnull(cp);
        ik_chain c = *cp;
        const size_t dof = c.dof;
        ck_assert_uint_eq(dof, 8);
        for (int i = 0; i < 20; i++) {
            random_q(&tree, q);
            double qc[TEST_DOF_CAP];
            for (size_t k = 0; k < dof; k++)
                qc[k] = q[p[t].var[k]];
            /* the file writes pi/2 to 17 digits, baxter_arm to 12 */
            ik_xform a = ik_chain_fk(&c, qc), b = urdf_fk(&p[t], q);
            ck_assert_double_lt(ik_vec3_dist(a.p, b.p), 1e-9);
            ck_assert_double_lt(ik_quat_angle_between(a.q, b.q), 1e-9);
        }
    }
    free(xml);
    const size_t N = 2000;
    double it;
    size_t ok = random_full_pose(&tree, p, N, &it);
    printf("baxter-like two arms, shared torso yaw: %zu/%zu, %.1f iterations mean\n", ok, N, it);
    ck_assert_uint_ge(ok * 1000, N * 999);
}
END_TEST

/* ---- priorities against brute force ----------------------------------- */

/* Planar tree (every axis z): shared joint s at the root, tip A after s and
 * one joint a (links LA0 from s to a, LA1 from a to the tip), tip B after s
 * and two joints b1, b2 (links LB0, LB1, LB2, B's frame turns with them).
 * A has a position target (x, y): with s and a, two constraints on two
 * joints, so A alone fixes s (two branches); B's planar pose (x, y, yaw)
 * then has two joints for three components: a conflict, resolved in
 * favour of A. */
#define LA0 1.0
#define LA1 0.8
#define LB0 0.6
#define LB1 0.7
#define LB2 0.5

/* The joints continuous, or revolute in [lo, hi] when type says so. */
static void planar_tree_of(ik_tree *tr, path *p, ik_joint_type type, double lo, double hi)
{
    ik_vec3 z = ik_v3(0, 0, 1);
    p[0].n = p[1].n = 0;
    ik_joint s = joint(type, ZERO, ZERO, z, lo, hi);
    p[0].j[p[0].n++] = s;
    p[0].j[p[0].n++] = joint(type, ik_v3(LA0, 0, 0), ZERO, z, lo, hi);
    p[0].j[p[0].n++] = joint(IK_JOINT_FIXED, ik_v3(LA1, 0, 0), ZERO, ZERO, 0, 0);
    p[1].j[p[1].n++] = s;
    p[1].j[p[1].n++] = joint(type, ik_v3(-LB0, 0, 0), ZERO, z, lo, hi);
    p[1].j[p[1].n++] = joint(type, ik_v3(-LB1, 0, 0), ZERO, z, lo, hi);
    p[1].j[p[1].n++] = joint(IK_JOINT_FIXED, ik_v3(-LB2, 0, 0), ZERO, ZERO, 0, 0);
    const ik_joint *chains[2] = {p[0].j, p[1].j};
    size_t lens[2] = {p[0].n, p[1].n};
    ck_assert_int_eq(tree_from_chains(tr, chains, lens, 2), IK_OK);
    size_t ida[3] = {0, 1, 2}, idb[4] = {0, 4, 5, 6};
    tip_vars(tr, &p[0], ida);
    tip_vars(tr, &p[1], idb);
}

static void planar_tree(ik_tree *tr, path *p)
{
    planar_tree_of(tr, p, IK_JOINT_CONTINUOUS, 0, 0);
}

/* B's weighted squared error (x, y, yaw) for s, b1, b2, computed here. */
static double b_cost(double s, double b1, double b2, double tx, double ty, double tyaw)
{
    double x = -LB0 * cos(s) - LB1 * cos(s + b1) - LB2 * cos(s + b1 + b2);
    double y = -LB0 * sin(s) - LB1 * sin(s + b1) - LB2 * sin(s + b1 + b2);
    double dyaw = ik_wrap_angle(tyaw - (s + b1 + b2));
    return (tx - x) * (tx - x) + (ty - y) * (ty - y) + dyaw * dyaw;
}

/* Minimum of b_cost over b1, b2 for a fixed s: a coarse grid, then grids
 * ten times finer around the best point, down to 1e-9 rad. */
static double b_best(double s, double tx, double ty, double tyaw)
{
    double c1 = 0, c2 = 0, h = 2 * IK_PI / 200, best = INFINITY;
    for (int i = 0; i < 200; i++)
        for (int k = 0; k < 200; k++) {
            double b1 = -IK_PI + i * h, b2 = -IK_PI + k * h;
            double c = b_cost(s, b1, b2, tx, ty, tyaw);
            if (c < best) {
                best = c;
                c1 = b1;
                c2 = b2;
            }
        }
    while (h > 1e-9) {
        double n1 = c1, n2 = c2;
        for (int i = -10; i <= 10; i++)
            for (int k = -10; k <= 10; k++) {
                double b1 = c1 + i * h / 5, b2 = c2 + k * h / 5;
                double c = b_cost(s, b1, b2, tx, ty, tyaw);
                if (c < best) {
                    best = c;
                    n1 = b1;
                    n2 = b2;
                }
            }
        c1 = n1;
        c2 = n2;
        h /= 5;
    }
    return best;
}

START_TEST(test_priorities_brute_force)
{
    path p[2];
    planar_tree(&tree, p);
    ck_assert_uint_eq(tree.dof, 4);
    rng_state = 99 + (uint64_t)_i;
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 200000;
    o.tol_pos = 1e-6;
    o.tol_rot = 1e-6;
    /* 16 more attempts after the first that met the top level, and the
     * default 8 (what the wire format uses) */
    o.extra_restarts = _i == 0 ? 16 : 8;
    int cases = 0;
    while (cases < 20) {
        /* A's target: reachable (distance from the root in (LA0-LA1, LA0+LA1)) */
        double r = urand(LA0 - LA1 + 0.05, LA0 + LA1 - 0.05), ang = urand(-IK_PI, IK_PI);
        double ax = r * cos(ang), ay = r * sin(ang);
        double bx = urand(-1.5, 1.5), by = urand(-1.5, 1.5), byaw = urand(-IK_PI, IK_PI);
        /* the two values of s that put A on its target (law of cosines) */
        double sA[2];
        double phi = ik_acos_clamped((LA0 * LA0 + r * r - LA1 * LA1) / (2 * LA0 * r));
        sA[0] = ang - phi;
        sA[1] = ang + phi;
        double ref = fmin(b_best(sA[0], bx, by, byaw), b_best(sA[1], bx, by, byaw));
        if (ref < 1e-4)
            continue; /* no conflict: B reachable too */
        cases++;
        ik_target ta = ik_target_position(ik_v3(ax, ay, 0));
        ik_target tb;
        memset(&tb, 0, sizeof tb);
        tb.mode = IK_TARGET_WEIGHTED;
        tb.pose.p = ik_v3(bx, by, 0);
        tb.pose.q = ik_quat_from_axis_angle(ik_v3(0, 0, 1), byaw);
        tb.weight[0] = tb.weight[1] = tb.weight[5] = 1.0;
        ik_tree_goal g[2] = {ik_tree_goal_target(ta), ik_tree_goal_target(tb)};
        g[1].priority = 1;
        double q[TEST_DOF_CAP];
        ik_tree_result res;
        int rc = ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, &res);
        ck_assert_int_eq(rc, IK_ENOTCONV); /* B cannot be met */
        ck_assert_uint_eq(res.levels, 2);
        ck_assert_uint_eq(res.levels_met, 1);
        ck_assert(res.tip[0].reached && !res.tip[1].reached);
        /* A on target to 1e-6 by FK */
        ik_xform fa = urdf_fk(&p[0], q);
        ck_assert_double_le(fabs(fa.p.x - ax), 1e-6);
        ck_assert_double_le(fabs(fa.p.y - ay), 1e-6);
        /* B as close as the freedom left allows */
        ik_xform fb = urdf_fk(&p[1], q);
        ik_vec3 zb = ik_quat_rotate(fb.q, ik_v3(1, 0, 0));
        double yaw = atan2(zb.y, zb.x);
        double cost = (bx - fb.p.x) * (bx - fb.p.x) + (by - fb.p.y) * (by - fb.p.y) +
                      ik_wrap_angle(byaw - yaw) * ik_wrap_angle(byaw - yaw);
        /* never worse than the reference (beyond 1e-6); better only by
         * what A's own tolerance of 1e-6 lets s move (B's cost changes by
         * at most its gradient times that) */
        ck_assert_msg(cost <= ref + 1e-6 * (1 + ref) && cost >= ref - 1e-5 * (1 + ref),
                      "case %d: low-priority cost %.9g, brute force %.9g", cases, cost, ref);
    }
}
END_TEST

/* Same tree, weights instead of priorities: a heavy B pulls A off its
 * target, priorities do not. */
START_TEST(test_priority_vs_weight)
{
    path p[2];
    planar_tree(&tree, p);
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 50000;
    ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_position(ik_v3(1.2, 0.5, 0))),
                         ik_tree_goal_target(ik_target_position(ik_v3(-0.3, 2.5, 0)))};
    double q[TEST_DOF_CAP];
    ik_tree_result res;
    g[1].weight = 100.0;
    ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, &res);
    ck_assert_double_gt(ik_vec3_dist(urdf_fk(&p[0], q).p, ik_v3(1.2, 0.5, 0)), 1e-3);
    g[1].weight = 1.0;
    g[1].priority = 1;
    ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, &res);
    ck_assert_double_lt(ik_vec3_dist(urdf_fk(&p[0], q).p, ik_v3(1.2, 0.5, 0)), 1e-5);
}
END_TEST

/* ---- strict priorities over shared joints ---------------------------------- */

/* The tree of tips[0..ntips-1] from base of a URDF in tests/data, built
 * from its parent list (proto_urdf_tree, ik_tree_init), with each tip's
 * path for urdf_fk. */
static void urdf_tree(const char *file, const char *base, const char *const *tips, size_t ntips,
                      ik_tree *tr, path *p)
{
    size_t len;
    char *xml = read_text(file, &len);
    static ik_joint j[TEST_JOINTS_CAP];
    static int parent[TEST_JOINTS_CAP];
    size_t n, tip_joint[IK_TREE_MAX_TIPS];
    proto_error err;
    ck_assert_msg(proto_urdf_tree(xml, len, base, tips, ntips, j, parent, TEST_JOINTS_CAP, &n,
                                  tip_joint, NULL, &err) == 0,
                  "%s", err.message);
    free(xml);
    ck_assert_int_eq(tree_init(tr, j, parent, n, tip_joint, ntips), IK_OK);
    for (size_t t = 0; t < ntips; t++) {
        size_t ids[TEST_JOINTS_CAP], l = 0;
        for (int k = (int)tip_joint[t]; k >= 0; k = parent[k])
            ids[l++] = (size_t)k;
        for (size_t a = 0, b = l - 1; a < b; a++, b--) {
            size_t tmp = ids[a];
            ids[a] = ids[b];
            ids[b] = tmp;
        }
        p[t].n = l;
        for (size_t i = 0; i < l; i++)
            p[t].j[i] = j[ids[i]];
        tip_vars(tr, &p[t], ids);
    }
}

/* Tip 0 at priority 0 on the pose of a random configuration, tip 1 at
 * priority 1 on a target it cannot reach together with tip 0 (10 m away
 * when far, else the pose of another random configuration: the shared
 * joints cannot serve both): tip 0 is met, by urdf_fk, every time. */
static void priority_cases(const ik_tree *tr, const path *p, bool far, int cases)
{
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000;
    size_t need = ik_tree_workspace_size(tr);
    ck_assert_uint_le(need, sizeof ws);
    int met = 0, low_met = 0;
    for (int i = 0; i < cases; i++) {
        double qa[TEST_DOF_CAP], qb[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(tr, qa);
        random_q(tr, qb);
        ik_xform ta = urdf_fk(&p[0], qa), tb = urdf_fk(&p[1], far ? qa : qb);
        if (far)
            tb.p = ik_vec3_add(tb.p, ik_v3(10, 0, 0));
        ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_full_pose(ta)),
                             ik_tree_goal_target(ik_target_full_pose(tb))};
        g[1].priority = 1;
        ik_tree_result res;
        o.rng_seed = (uint64_t)i;
        int rc = ik_tree_solve(tr, g, NULL, &o, ws, sizeof ws, q, &res);
        ck_assert(ik_tree_within_limits(tr, q, 0.0));
        double e[6];
        ik_pose_error(ta, urdf_fk(&p[0], q), e);
        bool ok = true;
        for (int r = 0; r < 6; r++)
            ok &= fabs(e[r]) <= 1e-5;
        met += ok;
        ck_assert_int_eq(res.tip[0].reached, ok);
        ck_assert_uint_eq(res.levels_met, ok ? (res.tip[1].reached ? 2u : 1u) : 0u);
        low_met += res.tip[1].reached;
        if (far) { /* said at once: no restart spent on it */
            ck_assert_int_eq(rc, IK_EUNREACHABLE);
            ck_assert_int_eq(res.reason, IK_REASON_OUT_OF_REACH);
            ck_assert_int_eq(res.tip[1].reason, IK_REASON_OUT_OF_REACH);
        } else if (!res.tip[1].reached) {
            ck_assert_int_eq(rc, IK_ENOTCONV);
            ck_assert_int_eq(res.reason, IK_REASON_PRIORITY);
            ck_assert_int_eq(res.tip[1].reason, IK_REASON_PRIORITY);
        }
        ck_assert_int_eq(res.tip[0].reason, IK_REASON_NONE);
    }
    ck_assert_msg(met == cases, "the priority-0 tip met %d times in %d", met, cases);
    if (far)
        ck_assert_int_eq(low_met, 0);
}

START_TEST(test_priorities_shared_joints)
{
    path p[2];
    rng_state = 2300 + (uint64_t)_i;
    if (_i < 2) {
        /* the PR2 from base_link: the prismatic torso shared */
        pr2_tree("base_link", &tree, &p[0], &p[1]);
        priority_cases(&tree, p, _i == 0, 40);
    } else {
        /* a humanoid's hands from the pelvis over its three back joints
         * (as Atlas's) */
        static const char *const tips[2] = {"l_hand", "r_hand"};
        urdf_tree("robots/humanoid_like.urdf", "pelvis", tips, 2, &tree, p);
        ck_assert_uint_eq(tree.dof, 17);
        priority_cases(&tree, p, _i == 2, 40);
    }
}
END_TEST

/* A one-tip tree (the PR2's right arm) with its target beyond the arm's
 * reach answers IK_EUNREACHABLE with reason OUT_OF_REACH at once, as a
 * chain does: a few steps towards the target for the best pose, no
 * restart, whatever the budget; a tree with a reachable tip beside it
 * meets that one and says which tip is out of reach. */
START_TEST(test_out_of_reach)
{
    static const char *const tips[2] = {"r_wrist_roll_link", "l_wrist_roll_link"};
    path p[2];
    urdf_tree("robots/pr2.urdf", "torso_lift_link", tips, 1, &tree, p);
    ck_assert_uint_eq(tree.ntips, 1);
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 100000;
    double mid[TEST_DOF_CAP], q[TEST_DOF_CAP];
    ik_tree_mid(&tree, mid);
    const ik_vec3 far = ik_v3(2.5, -1.0, 0.4);
    ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_position(far)),
                         ik_tree_goal_target(ik_target_full_pose(urdf_fk(&p[0], mid)))};
    ik_tree_result res;
    ck_assert_int_eq(ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, &res), IK_EUNREACHABLE);
    ck_assert_int_eq(res.reason, IK_REASON_OUT_OF_REACH);
    ck_assert_int_eq(res.tip[0].reason, IK_REASON_OUT_OF_REACH);
    ck_assert(!res.tip[0].reached);
    ck_assert_uint_eq(res.restarts, 0);
    ck_assert_uint_le(res.iterations, 64);
    ck_assert(ik_tree_within_limits(&tree, q, 0.0));
    /* its best pose reaches towards the target */
    ck_assert_double_lt(ik_vec3_dist(urdf_fk(&p[0], q).p, far),
                        ik_vec3_dist(urdf_fk(&p[0], mid).p, far) - 0.1);
    /* both arms: the left one's target met, the right one out of reach */
    urdf_tree("robots/pr2.urdf", "torso_lift_link", tips, 2, &tree, p);
    double qa[TEST_DOF_CAP];
    rng_state = 77;
    random_q(&tree, qa);
    g[1] = ik_tree_goal_target(ik_target_full_pose(urdf_fk(&p[1], qa)));
    ck_assert_int_eq(ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, &res), IK_EUNREACHABLE);
    ck_assert(res.tip[1].reached && !res.tip[0].reached);
    ck_assert_int_eq(res.tip[0].reason, IK_REASON_OUT_OF_REACH);
    ck_assert_int_eq(res.tip[1].reason, IK_REASON_NONE);
    ck_assert_double_lt(ik_vec3_dist(urdf_fk(&p[1], q).p, urdf_fk(&p[1], qa).p), 1e-5);
    ck_assert_uint_eq(res.restarts, 0);
}
END_TEST

/* A tip whose target lies past its reach by less than the tolerance is
 * met (stretched towards it, as ik_numeric.c meets one): the planar tree's
 * tip A (links LA0, LA1 from the origin, tip B free) at LA0 + LA1 + f tol
 * in several directions. Success exactly when A's tip, worked out here
 * from the two angles, is within the tolerance in every component; a tip
 * that is met is never answered no_ik_solution. */
START_TEST(test_reach_tolerance_band)
{
    path p[2];
    planar_tree(&tree, p);
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000;
    const double tol = o.tol_pos;
    const double dirs[] = {0.0, 0.7, 2.5, -1.9};
    const double fs[] = {0.3, 0.6, 0.75, 0.95, 1.2, 2.0};
    size_t refused = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        for (size_t k = 0; k < sizeof fs / sizeof *fs; k++) {
            const double d = LA0 + LA1 + fs[k] * tol;
            const ik_vec3 t = ik_v3(d * cos(dirs[i]), d * sin(dirs[i]), 0.0);
            ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_position(t)),
                                 ik_tree_goal_keep(IK_TREE_KEEP_JOINTS)};
            double q[TEST_DOF_CAP];
            ik_tree_result res;
            int st = ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, &res);
            const double x = LA0 * cos(q[0]) + LA1 * cos(q[0] + q[1]);
            const double y = LA0 * sin(q[0]) + LA1 * sin(q[0] + q[1]);
            const double err = fmax(fabs(x - t.x), fabs(y - t.y));
            ck_assert_msg((st == IK_OK) == (err < tol),
                          "%g tol past the reach at %g rad: status %d, error %g tol, tip %s",
                          fs[k], dirs[i], st, err / tol, res.tip[0].reached ? "reached" : "not reached");
            if (fs[k] < 1.0) /* every component is below it */
                ck_assert_msg(st == IK_OK, "%g tol past the reach: status %d", fs[k], st);
            refused += st != IK_OK;
        }
    ck_assert_uint_ge(refused, 4);
}
END_TEST

/* ---- keep rules, objectives, errors --------------------------------------- */

START_TEST(test_keep_rules)
{
    path p[2];
    baxter_tree(&tree, p);
    rng_state = 3;
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000;
    size_t kept = 0;
    for (int i = 0; i < 50; i++) {
        double seed[TEST_DOF_CAP], qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&tree, seed);
        /* a target for the left hand that the left arm reaches without
         * the torso: the right hand can then hold still */
        memcpy(qt, seed, sizeof qt);
        for (size_t k = 1; k < p[0].nvar; k++)
            qt[p[0].var[k]] = urand(tree.lower[p[0].var[k]], tree.upper[p[0].var[k]]);
        ik_xform goal = urdf_fk(&p[0], qt), right0 = urdf_fk(&p[1], seed);
        ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_full_pose(goal)),
                             ik_tree_goal_keep(IK_TREE_KEEP_POSE)};
        ik_tree_result res;
        if (ik_tree_solve(&tree, g, seed, &o, ws, sizeof ws, q, &res) != IK_OK)
            continue;
        kept++;
        ck_assert(res.tip[1].checked && res.tip[1].reached);
        double e[6];
        ik_pose_error(right0, urdf_fk(&p[1], q), e);
        for (int r = 0; r < 6; r++)
            ck_assert_double_le(fabs(e[r]), 1e-5);
        ik_pose_error(goal, urdf_fk(&p[0], q), e);
        for (int r = 0; r < 6; r++)
            ck_assert_double_le(fabs(e[r]), 1e-5);
        /* KEEP_JOINTS: the right arm's own joints do not move */
        g[1] = ik_tree_goal_keep(IK_TREE_KEEP_JOINTS);
        ck_assert_int_eq(ik_tree_solve(&tree, g, seed, &o, ws, sizeof ws, q, &res), IK_OK);
        ck_assert(!res.tip[1].checked);
        for (size_t k = 1; k < p[1].nvar; k++)
            ck_assert_double_eq(q[p[1].var[k]], seed[p[1].var[k]]);
    }
    ck_assert_uint_ge(kept, 48);
}
END_TEST

static double dist2(const ik_tree *tr, const double *a, const double *b)
{
    double s = 0;
    for (size_t v = 0; v < tr->dof; v++) {
        double d = a[v] - b[v];
        if (tr->type[v] == IK_JOINT_CONTINUOUS)
            d = ik_wrap_angle(d);
        s += d * d;
    }
    return s;
}

static double mid_cost(const ik_tree *tr, const double *q)
{
    double s = 0;
    for (size_t v = 0; v < tr->dof; v++) {
        if (tr->type[v] == IK_JOINT_CONTINUOUS)
            continue;
        double d = (q[v] - 0.5 * (tr->lower[v] + tr->upper[v])) / (tr->upper[v] - tr->lower[v]);
        s += d * d;
    }
    return s;
}

/* Position-only targets leave the Baxter tree 9 spare degrees of freedom:
 * each objective's answer is on target and at least as good as the first
 * solution found (the same search stopped at once), strictly better on
 * some samples. */
START_TEST(test_objectives)
{
    path p[2];
    baxter_tree(&tree, p);
    const ik_tree_objective objs[4] = {IK_TREE_OBJ_DISTANCE, IK_TREE_OBJ_MID_LIMITS,
                                       IK_TREE_OBJ_MANIP1, IK_TREE_OBJ_MANIP2};
    for (int oi = 0; oi < 4; oi++) {
        rng_state = 11;
        size_t better = 0, n = 0;
        for (int i = 0; i < 30; i++) {
            double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q0[TEST_DOF_CAP],
                q1[TEST_DOF_CAP];
            random_q(&tree, qt);
            random_q(&tree, seed);
            ik_tree_goal g[2];
            ik_vec3 goal[2];
            for (size_t t = 0; t < 2; t++) {
                goal[t] = urdf_fk(&p[t], qt).p;
                g[t] = ik_tree_goal_target(ik_target_position(goal[t]));
            }
            ik_tree_opts o = ik_tree_opts_default();
            o.timeout_s = 0.0;
            o.max_iterations = 50000;
            o.objective = objs[oi];
            o.local = 0.0;
            o.extra_restarts = 0; /* the first solution */
            ik_tree_result r0, r1;
            if (ik_tree_solve(&tree, g, seed, &o, ws, sizeof ws, q0, &r0) != IK_OK)
                continue;
            o.extra_restarts = 12;
            ck_assert_int_eq(ik_tree_solve(&tree, g, seed, &o, ws, sizeof ws, q1, &r1), IK_OK);
            for (size_t t = 0; t < 2; t++)
                ck_assert_double_le(ik_vec3_dist(urdf_fk(&p[t], q1).p, goal[t]), 2e-5);
            double v0, v1;
            if (objs[oi] == IK_TREE_OBJ_DISTANCE) {
                v0 = dist2(&tree, q0, seed);
                v1 = dist2(&tree, q1, seed);
                ck_assert_double_eq_tol(r1.objective, v1, 1e-9);
            } else if (objs[oi] == IK_TREE_OBJ_MID_LIMITS) {
                v0 = mid_cost(&tree, q0);
                v1 = mid_cost(&tree, q1);
                ck_assert_double_eq_tol(r1.objective, v1, 1e-9);
            } else { /* maximised: compare negated */
                v0 = -r0.objective;
                v1 = -r1.objective;
                ck_assert_double_gt(r1.objective, 0.0);
            }
            ck_assert_double_le(v1, v0 + 1e-12);
            better += v1 < v0 - 1e-9;
            n++;
        }
        ck_assert_uint_ge(n, 25);
        /* the seed's own attempt usually finds the nearest solution
         * already; the others are improved more often */
        ck_assert_uint_ge(better, objs[oi] == IK_TREE_OBJ_DISTANCE ? 3 : 5);
    }
}
END_TEST

/* Turns, as ik_numeric.h's: a continuous joint (the PR2's forearm and
 * wrist rolls) is answered on the turn nearest its seed, never wrapped
 * back into (-pi, pi]; a revolute joint whose range spans a full turn
 * too; without a seed continuous joints come back in [-pi, pi]. */
START_TEST(test_turns)
{
    path p[2];
    pr2_tree("torso_lift_link", &tree, &p[0], &p[1]);
    rng_state = 21;
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000;
    size_t cont = 0;
    for (int i = 0; i < 20; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
        random_q(&tree, qt);
        for (size_t v = 0; v < tree.dof; v++) {
            seed[v] = qt[v];
            if (tree.type[v] == IK_JOINT_CONTINUOUS)
                seed[v] += (i % 2 ? 2.0 : -4.0) * IK_PI + 0.05; /* other turns */
        }
        ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_full_pose(urdf_fk(&p[0], qt))),
                             ik_tree_goal_target(ik_target_full_pose(urdf_fk(&p[1], qt)))};
        o.objective = i % 4 < 2 ? IK_TREE_OBJ_NONE : IK_TREE_OBJ_DISTANCE;
        ck_assert_int_eq(ik_tree_solve(&tree, g, seed, &o, ws, sizeof ws, q, NULL), IK_OK);
        for (size_t v = 0; v < tree.dof; v++) {
            if (tree.type[v] != IK_JOINT_CONTINUOUS)
                continue;
            cont++;
            ck_assert_msg(fabs(q[v] - seed[v]) <= IK_PI, "sample %d: variable %zu is %g, seed %g", i,
                          v, q[v], seed[v]);
        }
        for (size_t t = 0; t < 2; t++) { /* the same pose */
            double e[6];
            ik_pose_error(g[t].target.pose, urdf_fk(&p[t], q), e);
            for (int r = 0; r < 6; r++)
                ck_assert_double_le(fabs(e[r]), 1e-5);
        }
        /* without a seed: continuous joints in [-pi, pi] */
        ck_assert_int_eq(ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, NULL), IK_OK);
        for (size_t v = 0; v < tree.dof; v++)
            if (tree.type[v] == IK_JOINT_CONTINUOUS)
                ck_assert_double_le(fabs(q[v]), IK_PI);
    }
    ck_assert_uint_eq(cont, 20 * 4);
    /* a revolute joint of range [-2 pi, 2 pi] shared by two planar tips
     * (the priorities' tree with that range on every joint) */
    path pp[2];
    planar_tree_of(&tree, pp, IK_JOINT_REVOLUTE, -2.0 * IK_PI, 2.0 * IK_PI);
    for (int i = 0; i < 20; i++) {
        double qt[TEST_DOF_CAP], seed[TEST_DOF_CAP], q[TEST_DOF_CAP];
        for (size_t v = 0; v < tree.dof; v++) {
            qt[v] = urand(-IK_PI, IK_PI);
            seed[v] = qt[v] + (qt[v] < 0 ? 2.0 * IK_PI - 0.03 : -2.0 * IK_PI + 0.03);
        }
        ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_position(urdf_fk(&pp[0], qt).p)),
                             ik_tree_goal_target(ik_target_position(urdf_fk(&pp[1], qt).p))};
        o.objective = IK_TREE_OBJ_NONE;
        ck_assert_int_eq(ik_tree_solve(&tree, g, seed, &o, ws, sizeof ws, q, NULL), IK_OK);
        for (size_t v = 0; v < tree.dof; v++) {
            ck_assert_msg(fabs(q[v] - seed[v]) <= IK_PI, "planar %d: variable %zu is %g, seed %g",
                          i, v, q[v], seed[v]);
            ck_assert(q[v] >= -2.0 * IK_PI && q[v] <= 2.0 * IK_PI);
        }
    }
}
END_TEST

START_TEST(test_invalid_input)
{
    path p[2];
    baxter_tree(&tree, p);
    double q[TEST_DOF_CAP], seed[TEST_DOF_CAP];
    ik_tree_mid(&tree, seed);
    for (size_t v = 0; v < tree.dof; v++)
        q[v] = 42.0;
    ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_full_pose(ik_xform_identity())),
                         ik_tree_goal_keep(IK_TREE_KEEP_POSE)};
    ik_tree_result res;
    ik_tree_goal bad[2];
    memcpy(bad, g, sizeof bad);
    bad[0].target.pose.p.x = NAN;
    ck_assert_int_eq(ik_tree_solve(&tree, bad, NULL, NULL, ws, sizeof ws, q, &res), IK_EINVAL);
    ck_assert_int_eq(res.status, IK_EINVAL);
    memcpy(bad, g, sizeof bad);
    bad[1].weight = 0.0;
    ck_assert_int_eq(ik_tree_solve(&tree, bad, NULL, NULL, ws, sizeof ws, q, NULL), IK_EINVAL);
    memcpy(bad, g, sizeof bad);
    bad[0].target.pose.q = (ik_quat){0, 0, 0, 0};
    ck_assert_int_eq(ik_tree_solve(&tree, bad, NULL, NULL, ws, sizeof ws, q, NULL), IK_EINVAL);
    memcpy(bad, g, sizeof bad);
    bad[1].keep = (ik_tree_keep)7;
    ck_assert_int_eq(ik_tree_solve(&tree, bad, NULL, NULL, ws, sizeof ws, q, NULL), IK_EINVAL);
    seed[3] = INFINITY;
    ck_assert_int_eq(ik_tree_solve(&tree, g, seed, NULL, ws, sizeof ws, q, NULL), IK_EINVAL);
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    ck_assert_int_eq(ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q, NULL), IK_EINVAL);
    ck_assert_int_eq(ik_tree_solve(&tree, g, NULL, NULL, ws, ik_tree_workspace_size(&tree) - 1,
                                   q, &res),
                     IK_ENOSPC);
    for (size_t v = 0; v < tree.dof; v++)
        ck_assert_double_eq(q[v], 42.0);
    /* invalid trees */
    ik_joint j[3] = {joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -1, 1),
                     joint(IK_JOINT_FIXED, ik_v3(1, 0, 0), ZERO, ZERO, 0, 0),
                     joint(IK_JOINT_FIXED, ik_v3(0, 1, 0), ZERO, ZERO, 0, 0)};
    int parent[3] = {-1, 0, 0};
    size_t tips[2] = {1, 2};
    ck_assert_int_eq(tree_init(&tree2, j, parent, 3, tips, 2), IK_OK);
    ck_assert_uint_eq(tree2.dof, 1);
    parent[1] = 1; /* not before it */
    ck_assert_int_eq(tree_init(&tree2, j, parent, 3, tips, 2), IK_EINVAL);
    ck_assert_uint_eq(tree2.dof, 0);
    parent[1] = 0;
    parent[2] = -1; /* tip 1 without a movable joint */
    ck_assert_int_eq(tree_init(&tree2, j, parent, 3, tips, 2), IK_EINVAL);
    parent[2] = 0;
    tips[1] = 3;
    ck_assert_int_eq(tree_init(&tree2, j, parent, 3, tips, 2), IK_EINVAL);
    ck_assert_int_eq(tree_init(&tree2, j, parent, 3, tips, IK_TREE_MAX_TIPS + 1), IK_EINVAL);
    /* storage: the size asked for is enough, a byte less is IK_ENOSPC, and
     * the builder writes nowhere past it (any alignment) */
    tips[1] = 2;
    size_t need = ik_tree_storage_size(parent, 3, tips, 2);
    ck_assert_uint_lt(need, SIZE_MAX);
    static unsigned char store[4096];
    ck_assert_uint_lt(need + 8, sizeof store);
    ck_assert_int_eq(ik_tree_init(&tree2, store + 1, need - 1, j, parent, 3, tips, 2), IK_ENOSPC);
    ck_assert_uint_eq(tree2.dof, 0);
    memset(store, 0xA5, sizeof store);
    ck_assert_int_eq(ik_tree_init(&tree2, store + 1, need, j, parent, 3, tips, 2), IK_OK);
    ck_assert_uint_eq(store[0], 0xA5);
    for (size_t b = need + 1; b < sizeof store; b++)
        ck_assert_uint_eq(store[b], 0xA5);
    ck_assert_double_lt(ik_vec3_dist(ik_tree_fk(&tree2, (double[]){0.0}, 1).p, ik_v3(0, 1, 0)),
                        1e-15);
    ck_assert_uint_eq(ik_tree_storage_size(parent, 3, tips, 0), SIZE_MAX);
    const ik_joint *cj[2] = {j, j};
    size_t lens[2] = {2, 1};
    need = ik_tree_chains_storage_size(lens, 2);
    ck_assert_int_eq(ik_tree_from_chains(&tree2, store, need - 1, cj, lens, 2), IK_ENOSPC);
    ck_assert_int_eq(ik_tree_from_chains(&tree2, store, need, cj, lens, 2), IK_OK);
    ck_assert_uint_eq(tree2.dof, 1);
}
END_TEST

/* The solver writes only inside the workspace size it announces, and the
 * same input gives the same answer. */
START_TEST(test_workspace_and_determinism)
{
    path p[2];
    pr2_tree("base_link", &tree, &p[0], &p[1]);
    size_t need = ik_tree_workspace_size(&tree);
    ck_assert_uint_lt(need + 256, sizeof ws);
    rng_state = 8;
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000;
    for (int i = 0; i < 20; i++) {
        double qt[TEST_DOF_CAP], q1[TEST_DOF_CAP], q2[TEST_DOF_CAP];
        random_q(&tree, qt);
        ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_full_pose(urdf_fk(&p[0], qt))),
                             ik_tree_goal_target(ik_target_full_pose(urdf_fk(&p[1], qt)))};
        memset(ws, 0xA5, sizeof ws);
        int rc1 = ik_tree_solve(&tree, g, NULL, &o, ws + 3, need, q1, NULL);
        for (size_t b = need + 3; b < sizeof ws; b++)
            ck_assert_uint_eq(ws[b], 0xA5);
        ck_assert_uint_eq(ws[0], 0xA5);
        int rc2 = ik_tree_solve(&tree, g, NULL, &o, ws, sizeof ws, q2, NULL);
        ck_assert_int_eq(rc1, rc2);
        ck_assert_mem_eq(q1, q2, tree.dof * sizeof q1[0]);
    }
}
END_TEST

static Suite *tree_suite(void)
{
    Suite *s = suite_create("ik_tree");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_pr2_build);
    tcase_add_loop_test(tc, test_pr2_two_arms, 0, 2);
    tcase_add_test(tc, test_baxter_two_arms);
    tcase_add_loop_test(tc, test_priorities_brute_force, 0, 2);
    tcase_add_test(tc, test_priority_vs_weight);
    tcase_add_loop_test(tc, test_priorities_shared_joints, 0, 4);
    tcase_add_test(tc, test_out_of_reach);
    tcase_add_test(tc, test_reach_tolerance_band);
    tcase_add_test(tc, test_keep_rules);
    tcase_add_test(tc, test_objectives);
    tcase_add_test(tc, test_turns);
    tcase_add_test(tc, test_invalid_input);
    tcase_add_test(tc, test_workspace_and_determinism);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tree_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
