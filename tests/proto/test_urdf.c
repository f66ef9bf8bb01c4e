/*
 * test_urdf.c: proto/proto_urdf.h on the five shared robots and on small
 * adversarial documents.
 *
 * The shared robots ($IKD_DATA/robots, chains and tables in SOURCES.md) are
 * checked joint by joint (names, types, limits) and by forward kinematics:
 * the zero-pose tip positions of SOURCES.md, and the first 20 benchmark
 * targets of $IKD_DATA/targets/<robot>.txt, whose tip poses must come back
 * from the listed joint values. Forward kinematics is computed here
 * independently of solver/ik_chain.c (composing origin * motion of every
 * described joint), and compared with ik_chain_fk on the compiled chain of
 * proto_urdf_load_chain, so parser and compiler cross-check each other.
 *
 * Every rejection the header lists has its own small inline document, and
 * the security cases (DOCTYPE with entity bombs or external entities, a
 * 4 MiB document) are covered.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/proto/urdf_read.h"
#include "tests/proto/proto_check.h"
#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "tests/solver/storage.h"

/* ---- helpers --------------------------------------------------------- */

static char *read_data(const char *rel, size_t *len)
{
    const char *dir = getenv("IKD_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (set IKD_DATA)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Independent URDF forward kinematics over the described joints: the link
 * frame after joint i is T * origin_i * motion_i(q). q has one entry per
 * movable joint. */
static ik_xform fk_described(const ik_joint *j, size_t n, const double *q)
{
    ik_xform t = ik_xform_identity();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        t = ik_xform_mul(t, j[i].origin);
        ik_xform m = ik_xform_identity();
        if (j[i].type == IK_JOINT_REVOLUTE || j[i].type == IK_JOINT_CONTINUOUS)
            m.q = ik_quat_from_axis_angle(j[i].axis, q[k++]);
        else if (j[i].type == IK_JOINT_PRISMATIC)
            m.p = ik_vec3_scale(ik_vec3_normalize(j[i].axis), q[k++]);
        t = ik_xform_mul(t, m);
    }
    return t;
}

typedef struct expect_joint {
    const char *name;
    ik_joint_type type;
    double lower, upper;
} expect_joint;

typedef struct expect_chain {
    const char *file, *base, *tip, *targets;
    size_t n;
    expect_joint j[12];
    double tip_zero[3];
    double tip_tol;
} expect_chain;

#define R IK_JOINT_REVOLUTE
#define C IK_JOINT_CONTINUOUS
#define P IK_JOINT_PRISMATIC
#define F IK_JOINT_FIXED

/* Tables of SOURCES.md (limits printed there to 5-6 significant digits). */
static const expect_chain chains[] = {
    {"robots/ur5.urdf",
     "base_link",
     "tool0",
     "targets/ur5.txt",
     7,
     {{"shoulder_pan_joint", R, -6.28319, 6.28319},
      {"shoulder_lift_joint", R, -6.28319, 6.28319},
      {"elbow_joint", R, -3.14159, 3.14159},
      {"wrist_1_joint", R, -6.28319, 6.28319},
      {"wrist_2_joint", R, -6.28319, 6.28319},
      {"wrist_3_joint", R, -6.28319, 6.28319},
      {"wrist_3_link-tool0_fixed_joint", F, 0, 0}},
     {0.81725, 0.19145, -0.00549},
     1e-5},
    {"robots/abb_irb120.urdf",
     "base_link",
     "tool0",
     "targets/abb_irb120.txt",
     7,
     {{"joint_1", R, -2.87979, 2.87979},
      {"joint_2", R, -1.91986, 1.91986},
      {"joint_3", R, -1.91986, 1.22173},
      {"joint_4", R, -2.79253, 2.79253},
      {"joint_5", R, -2.0944, 2.0944},
      {"joint_6", R, -6.98132, 6.98132},
      {"joint6-tool0", F, 0, 0}},
     {0.374, 0, 0.630},
     1e-6},
    {"robots/kuka_iiwa14_r820.urdf",
     "base_link",
     "tool0",
     "targets/kuka_iiwa14_r820.txt",
     8,
     {{"joint_a1", R, -2.9668, 2.9668},
      {"joint_a2", R, -2.0942, 2.0942},
      {"joint_a3", R, -2.9668, 2.9668},
      {"joint_a4", R, -2.0942, 2.0942},
      {"joint_a5", R, -2.9668, 2.9668},
      {"joint_a6", R, -2.0942, 2.0942},
      {"joint_a7", R, -3.0541, 3.0541},
      {"joint_a7-tool0", F, 0, 0}},
     {0, 0, 1.306},
     1e-6},
    {"robots/franka_panda.urdf",
     "panda_link0",
     "panda_link8",
     "targets/franka_panda.txt",
     8,
     {{"panda_joint1", R, -2.8973, 2.8973},
      {"panda_joint2", R, -1.7628, 1.7628},
      {"panda_joint3", R, -2.8973, 2.8973},
      {"panda_joint4", R, -3.0718, -0.0698},
      {"panda_joint5", R, -2.8973, 2.8973},
      {"panda_joint6", R, -0.0175, 3.7525},
      {"panda_joint7", R, -2.8973, 2.8973},
      {"panda_joint8", F, 0, 0}},
     {0.088, 0, 0.926},
     1e-6},
    {"robots/pr2.urdf",
     "torso_lift_link",
     "r_wrist_roll_link",
     "targets/pr2.txt",
     9,
     {{"r_shoulder_pan_joint", R, -2.2854, 0.714602},
      {"r_shoulder_lift_joint", R, -0.5236, 1.3963},
      {"r_upper_arm_roll_joint", R, -3.9, 0.8},
      {"r_upper_arm_joint", F, 0, 0},
      {"r_elbow_flex_joint", R, -2.3213, 0},
      {"r_forearm_roll_joint", C, -INFINITY, INFINITY},
      {"r_forearm_joint", F, 0, 0},
      {"r_wrist_flex_joint", R, -2.18, 0},
      {"r_wrist_roll_joint", C, -INFINITY, INFINITY}},
     {0.821, -0.188, 0.0},
     1e-6},
    {"robots/pr2.urdf",
     "base_link",
     "r_wrist_roll_link",
     NULL,
     10,
     {{"torso_lift_joint", P, 0, 0.33},
      {"r_shoulder_pan_joint", R, -2.2854, 0.714602},
      {"r_shoulder_lift_joint", R, -0.5236, 1.3963},
      {"r_upper_arm_roll_joint", R, -3.9, 0.8},
      {"r_upper_arm_joint", F, 0, 0},
      {"r_elbow_flex_joint", R, -2.3213, 0},
      {"r_forearm_roll_joint", C, -INFINITY, INFINITY},
      {"r_forearm_joint", F, 0, 0},
      {"r_wrist_flex_joint", R, -2.18, 0},
      {"r_wrist_roll_joint", C, -INFINITY, INFINITY}},
     {0.7710, -0.1880, 0.7397},
     1e-4},
};

static void check_limit(double got, double want)
{
    if (isinf(want))
        ck_assert(isinf(got) && (got > 0) == (want > 0));
    else
        ck_assert_double_eq_tol(got, want, 1e-5);
}

/* ---- the shared robots ----------------------------------------------- */

START_TEST(test_robot_chain)
{
    const expect_chain *e = &chains[_i];
    size_t len;
    char *xml = read_data(e->file, &len);
    ik_joint j[32];
    char names[32][PROTO_URDF_NAME_MAX];
    size_t n = 0;
    proto_error err;
    proto_error_clear(&err);
    int r = proto_urdf_chain(xml, len, e->base, e->tip, j, 32, &n, names, &err);
    ck_assert_msg(r == 0, "%s: %s", e->file, err.message);
    ck_assert_uint_eq(n, e->n);
    size_t dof = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(names[i], e->j[i].name);
        ck_assert_int_eq(j[i].type, e->j[i].type);
        check_limit(j[i].lower, e->j[i].lower);
        check_limit(j[i].upper, e->j[i].upper);
        ck_assert_double_eq_tol(ik_vec3_len(ik_quat_rotate(j[i].origin.q, ik_v3(1, 2, 3))),
                                sqrt(14.0), 1e-12);
        dof += j[i].type != IK_JOINT_FIXED;
    }
    double zero[32] = {0};
    ik_xform tip = fk_described(j, n, zero);
    ck_assert_double_eq_tol(tip.p.x, e->tip_zero[0], e->tip_tol);
    ck_assert_double_eq_tol(tip.p.y, e->tip_zero[1], e->tip_tol);
    ck_assert_double_eq_tol(tip.p.z, e->tip_zero[2], e->tip_tol);

    /* The compiled chain: same dof, movable names in order, same FK. */
    char(*mnames)[PROTO_URDF_NAME_MAX] = NULL;
    ik_chain *cp = test_adopt(proto_urdf_load_chain(xml, len, e->base, e->tip, 1024, &mnames, &err));
    ck_assert_msg(cp != NULL, "%s: %s", e->file, err.message);
    test_adopt(mnames);
    ik_chain c = *cp;
    ck_assert_uint_eq(c.dof, dof);
    for (size_t i = 0, k = 0; i < n; i++)
        if (e->j[i].type != IK_JOINT_FIXED)
            ck_assert_str_eq(mnames[k++], e->j[i].name);
    ik_xform tc = ik_chain_fk(&c, zero);
    ck_assert_double_eq_tol(tc.p.x, tip.p.x, 1e-12);
    ck_assert_double_eq_tol(tc.p.y, tip.p.y, 1e-12);
    ck_assert_double_eq_tol(tc.p.z, tip.p.z, 1e-12);

    /* The benchmark targets: joint values | px py pz qx qy qz qw. */
    if (e->targets) {
        size_t tlen;
        char *txt = read_data(e->targets, &tlen);
        char *line = txt;
        for (int t = 0; t < 20; t++) {
            char *nl = strchr(line, '\n');
            ck_assert_ptr_nonnull(nl);
            *nl = '\0';
            double q[32], pose[7];
            char *p = line, *end;
            for (size_t k = 0; k < dof; k++) {
                q[k] = strtod(p, &end);
                ck_assert_ptr_ne(end, p);
                p = end;
            }
            p = strchr(p, '|');
            ck_assert_ptr_nonnull(p);
            p++;
            for (int k = 0; k < 7; k++) {
                pose[k] = strtod(p, &end);
                ck_assert_ptr_ne(end, p);
                p = end;
            }
            ik_xform a = fk_described(j, n, q);
            ik_xform b = ik_chain_fk(&c, q);
            ik_quat want = {pose[3], pose[4], pose[5], pose[6]};
            ck_assert_double_eq_tol(a.p.x, pose[0], 1e-9);
            ck_assert_double_eq_tol(a.p.y, pose[1], 1e-9);
            ck_assert_double_eq_tol(a.p.z, pose[2], 1e-9);
            ck_assert_double_le(ik_quat_angle_between(a.q, want), 1e-8);
            ck_assert_double_eq_tol(b.p.x, pose[0], 1e-9);
            ck_assert_double_eq_tol(b.p.y, pose[1], 1e-9);
            ck_assert_double_eq_tol(b.p.z, pose[2], 1e-9);
            ck_assert_double_le(ik_quat_angle_between(b.q, want), 1e-8);
            line = nl + 1;
        }
        free(txt);
    }
    free(xml);
}
END_TEST

START_TEST(test_pr2_torso_moves_along_z)
{
    size_t len;
    char *xml = read_data("robots/pr2.urdf", &len);
    ik_joint j[16];
    size_t n;
    proto_error err;
    ck_assert_int_eq(
        proto_urdf_chain(xml, len, "base_link", "r_wrist_roll_link", j, 16, &n, NULL, &err), 0);
    double q0[8] = {0}, q1[8] = {0.2};
    ik_xform a = fk_described(j, n, q0), b = fk_described(j, n, q1);
    ck_assert_double_eq_tol(b.p.z - a.p.z, 0.2, 1e-12);
    ck_assert_double_eq_tol(b.p.x - a.p.x, 0, 1e-12);
    free(xml);
}
END_TEST

/* proto_urdf_tree: both PR2 arms from base_link share the torso joint once
 * (every joint listed once, parents first), each tip's path through the
 * parents is the serial chain proto_urdf_chain reads, and the rejections
 * (an unknown tip, a tip that is no descendant, the same tip twice, too
 * many joints) name their cause. */
START_TEST(test_tree_paths)
{
    size_t len;
    char *xml = read_data("robots/pr2.urdf", &len);
    const char *tips[2] = {"l_wrist_roll_link", "r_wrist_roll_link"};
    ik_joint j[64];
    int parent[64];
    size_t n = 0, tip_joint[2];
    char(*names)[PROTO_URDF_NAME_MAX] = malloc(64 * sizeof *names);
    ck_assert_ptr_nonnull(names);
    proto_error err;
    ck_assert_int_eq(proto_urdf_tree(xml, len, "base_link", tips, 2, j, parent, 64, &n, tip_joint,
                                     names, &err),
                     0);
    for (size_t t = 0; t < 2; t++) {
        ik_joint c[16];
        size_t nc;
        char(*cn)[PROTO_URDF_NAME_MAX] = malloc(16 * sizeof *cn);
        ck_assert_int_eq(proto_urdf_chain(xml, len, "base_link", tips[t], c, 16, &nc, cn, &err),
                         0);
        /* up from the tip through the parents: the chain, tip first */
        size_t k = nc;
        for (int i = (int)tip_joint[t]; i >= 0; i = parent[i]) {
            ck_assert_uint_gt(k, 0);
            k--;
            ck_assert_str_eq(names[i], cn[k]);
            ck_assert_int_eq(j[i].type, c[k].type);
            ck_assert(memcmp(&j[i].origin, &c[k].origin, sizeof c[k].origin) == 0);
            ck_assert_int_lt(parent[i], i); /* parents first */
        }
        ck_assert_uint_eq(k, 0);
        free(cn);
    }
    /* each joint once: the torso joint appears once and is on both paths */
    size_t torso = 0;
    for (size_t i = 0; i < n; i++) {
        torso += strcmp(names[i], "torso_lift_joint") == 0;
        for (size_t k = 0; k < i; k++)
            ck_assert_str_ne(names[i], names[k]);
    }
    ck_assert_uint_eq(torso, 1);
    /* rejections */
    const char *bad[2] = {"l_wrist_roll_link", "no_such_link"};
    ck_assert_int_eq(proto_urdf_tree(xml, len, "base_link", bad, 2, j, parent, 64, &n, tip_joint,
                                     NULL, &err),
                     -1);
    ck_assert_str_eq(proto_error_name(err.code), "invalid_urdf");
    ck_assert_ptr_nonnull(strstr(err.message, "no_such_link"));
    bad[1] = "base_link";
    ck_assert_int_eq(proto_urdf_tree(xml, len, "r_wrist_roll_link", bad, 2, j, parent, 64, &n,
                                     tip_joint, NULL, &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.message, "not a descendant"));
    bad[1] = "l_wrist_roll_link";
    ck_assert_int_eq(proto_urdf_tree(xml, len, "base_link", bad, 2, j, parent, 64, &n, tip_joint,
                                     NULL, &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.message, "twice"));
    ck_assert_int_eq(proto_urdf_tree(xml, len, "base_link", tips, 2, j, parent, 10, &n, tip_joint,
                                     NULL, &err),
                     -1);
    ck_assert_str_eq(proto_error_name(err.code), "too_large");
    free(names);
    free(xml);
}
END_TEST

START_TEST(test_links_list)
{
    size_t len;
    char *xml = read_data("robots/kuka_iiwa14_r820.urdf", &len);
    char names[4][PROTO_URDF_NAME_MAX];
    size_t n = 0;
    proto_error err;
    ck_assert_int_eq(proto_urdf_links(xml, len, names, 4, &n, &err), 0);
    ck_assert_uint_gt(n, 4);
    ck_assert_str_eq(names[0], "base_link");
    free(xml);
}
END_TEST

/* Many threads parsing at once (each its own documents): same results. */
static void *parse_many(void *arg)
{
    const char *xml = arg;
    for (int i = 0; i < 20; i++) {
        ik_joint j[16];
        size_t n = 0;
        proto_error err;
        if (proto_urdf_chain(xml, strlen(xml), "base_link", "r_wrist_roll_link", j, 16, &n, NULL,
                             &err) != 0 ||
            n != 10)
            return (void *)1;
        if (proto_urdf_chain(xml, strlen(xml), "base_link", "nope", j, 16, &n, NULL, &err) != -1 ||
            !strstr(err.message, "unknown tip link 'nope'"))
            return (void *)1;
    }
    return NULL;
}

START_TEST(test_threads)
{
    size_t len;
    char *xml = read_data("robots/pr2.urdf", &len);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, parse_many, xml), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
    free(xml);
}
END_TEST

/* ---- one document, read several ways (proto_urdf_open) ---------------- */

static void joint_eq(const ik_joint *a, const ik_joint *b)
{
    ck_assert_int_eq(a->type, b->type);
    ck_assert(memcmp(&a->origin, &b->origin, sizeof a->origin) == 0);
    ck_assert(memcmp(&a->axis, &b->axis, sizeof a->axis) == 0);
    ck_assert(memcmp(&a->lower, &b->lower, sizeof a->lower) == 0);
    ck_assert(memcmp(&a->upper, &b->upper, sizeof a->upper) == 0);
}

static void error_eq(const proto_error *a, const proto_error *b)
{
    ck_assert_int_eq(a->code, b->code);
    ck_assert_str_eq(a->message, b->message);
}

/* One open document read as a chain (with velocities), as the whole
 * robot, as a chain again and with an unknown tip gives, every time, what
 * the functions that parse the text themselves give: a chain's decode
 * reads its joints and its collision model from one parse. */
START_TEST(test_open_document_reads)
{
    const expect_chain *e = &chains[_i];
    size_t len;
    char *xml = read_data(e->file, &len);
    proto_error err, err2, verr, verr2;
    proto_urdf_doc *d = proto_urdf_open(xml, len, &err);
    ck_assert_msg(d != NULL, "%s: %s", e->file, err.message);

    ik_joint j[32], j2[32];
    char(*nm)[PROTO_URDF_NAME_MAX] = malloc(32 * sizeof *nm);
    char(*nm2)[PROTO_URDF_NAME_MAX] = malloc(32 * sizeof *nm2);
    double v[32], v2[32];
    size_t n = 0, n2 = 0;
    int vrc = -1, vrc2 = -1;
    ck_assert_ptr_nonnull(nm);
    ck_assert_ptr_nonnull(nm2);
    ck_assert_int_eq(proto_urdf_chain_velocities(xml, len, e->base, e->tip, j, 32, &n, nm, v, &vrc,
                                                 &verr, &err),
                     0);
    proto_urdf_robot rob, rob2;
    ck_assert_int_eq(proto_urdf_robot_read(xml, len, &rob, &err), 0);
    for (int round = 0; round < 2; round++) { /* the handle is read, never used up */
        memset(j2, 0, sizeof j2);
        ck_assert_int_eq(proto_urdf_doc_chain(d, e->base, e->tip, j2, 32, &n2, nm2, v2, &vrc2,
                                              &verr2, &err2),
                         0);
        ck_assert_uint_eq(n2, n);
        ck_assert_uint_eq(n2, e->n);
        ck_assert_int_eq(vrc2, vrc);
        for (size_t i = 0; i < n; i++) {
            joint_eq(&j2[i], &j[i]);
            ck_assert_str_eq(nm2[i], nm[i]);
            ck_assert(v2[i] == v[i]);
        }
        ck_assert_int_eq(proto_urdf_doc_robot(d, &rob2, &err2), 0);
        ck_assert_uint_eq(rob2.nlinks, rob.nlinks);
        ck_assert_uint_eq(rob2.njoints, rob.njoints);
        ck_assert_uint_eq(rob2.nshapes, rob.nshapes);
        ck_assert_uint_gt(rob2.nlinks, n);
        for (size_t l = 0; l < rob.nlinks; l++) {
            ck_assert_str_eq(rob2.link[l].name, rob.link[l].name);
            ck_assert_int_eq(rob2.link[l].parent_joint, rob.link[l].parent_joint);
            ck_assert_uint_eq(rob2.link[l].shape0, rob.link[l].shape0);
            ck_assert_uint_eq(rob2.link[l].nshapes, rob.link[l].nshapes);
        }
        for (size_t k = 0; k < rob.njoints; k++) {
            ck_assert_str_eq(rob2.joint[k].name, rob.joint[k].name);
            ck_assert_int_eq(rob2.joint[k].parent, rob.joint[k].parent);
            ck_assert_int_eq(rob2.joint[k].child, rob.joint[k].child);
            ck_assert_int_eq(rob2.joint[k].usable, rob.joint[k].usable);
            if (rob.joint[k].usable)
                joint_eq(&rob2.joint[k].joint, &rob.joint[k].joint);
        }
        for (size_t k = 0; k < rob.nshapes; k++) {
            const proto_urdf_shape *a = &rob2.shape[k], *b = &rob.shape[k];
            ck_assert_int_eq(a->kind, b->kind);
            ck_assert(memcmp(&a->origin, &b->origin, sizeof a->origin) == 0);
            ck_assert(memcmp(a->size, b->size, sizeof a->size) == 0);
        }
        proto_urdf_robot_free(&rob2);
        /* a rejection: the same code and message */
        ck_assert_int_eq(
            proto_urdf_chain(xml, len, e->base, "no_such_link", j, 32, &n2, NULL, &err), -1);
        ck_assert_int_eq(
            proto_urdf_doc_chain(d, e->base, "no_such_link", j2, 32, &n2, NULL, NULL, NULL, NULL,
                                 &err2),
            -1);
        error_eq(&err2, &err);
        ck_assert_ptr_nonnull(strstr(err2.message, "unknown tip link 'no_such_link'"));
    }
    proto_urdf_robot_free(&rob);
    proto_urdf_close(d);
    free(nm);
    free(nm2);
    free(xml);
}
END_TEST

/* The PR2's two arms as a tree from one open document, as proto_urdf_tree
 * reads them; a rejection alike; a document that does not open fails as
 * every reading of its text fails; no document is a clear error. */
START_TEST(test_open_document_tree_and_errors)
{
    size_t len;
    char *xml = read_data("robots/pr2.urdf", &len);
    const char *tips[2] = {"l_wrist_roll_link", "r_wrist_roll_link"};
    ik_joint j[64], j2[64];
    int parent[64], parent2[64];
    size_t n = 0, n2 = 0, tj[2], tj2[2];
    char(*nm)[PROTO_URDF_NAME_MAX] = malloc(64 * sizeof *nm);
    char(*nm2)[PROTO_URDF_NAME_MAX] = malloc(64 * sizeof *nm2);
    ck_assert_ptr_nonnull(nm);
    ck_assert_ptr_nonnull(nm2);
    proto_error err, err2;
    proto_urdf_doc *d = proto_urdf_open(xml, len, &err);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(
        proto_urdf_tree(xml, len, "base_link", tips, 2, j, parent, 64, &n, tj, nm, &err), 0);
    ck_assert_int_eq(
        proto_urdf_doc_tree(d, "base_link", tips, 2, j2, parent2, 64, &n2, tj2, nm2, &err2), 0);
    ck_assert_uint_eq(n2, n);
    ck_assert_uint_gt(n, 14);
    for (size_t i = 0; i < n; i++) {
        joint_eq(&j2[i], &j[i]);
        ck_assert_int_eq(parent2[i], parent[i]);
        ck_assert_str_eq(nm2[i], nm[i]);
    }
    ck_assert_uint_eq(tj2[0], tj[0]);
    ck_assert_uint_eq(tj2[1], tj[1]);
    ck_assert_int_eq(proto_urdf_tree(xml, len, "base_link", tips, 2, j, parent, 10, &n, tj, NULL,
                                     &err),
                     -1);
    ck_assert_int_eq(proto_urdf_doc_tree(d, "base_link", tips, 2, j2, parent2, 10, &n2, tj2, NULL,
                                         &err2),
                     -1);
    error_eq(&err2, &err);
    ck_assert_str_eq(proto_error_name(err2.code), "too_large");
    proto_urdf_close(d);

    static const char *const bad[] = {
        "<robot name=\"t\"><link name=\"a\"></robot>",
        "<?xml version=\"1.0\"?><!DOCTYPE robot [<!ENTITY x \"y\">]><robot name=\"t\"/>",
        "<model name=\"t\"/>",
        "<robot name=\"t\"><link/></robot>",
        "<robot name=\"t\"><link name=\"a\"/><link name=\"a\"/></robot>",
        "<robot name=\"t\"><link name=\"a\"/><link name=\"b\"/>"
        "<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/></joint></robot>",
        "<robot name=\"t\"><link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>"
        "<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child link=\"c\"/></joint>"
        "<joint name=\"k\" type=\"fixed\"><parent link=\"b\"/><child link=\"c\"/></joint></robot>",
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        proto_error_clear(&err2);
        ck_assert_ptr_null(proto_urdf_open(bad[k], strlen(bad[k]), &err2));
        ck_assert_int_eq(
            proto_urdf_chain(bad[k], strlen(bad[k]), "a", "b", j, 64, &n, NULL, &err), -1);
        error_eq(&err2, &err);
        ck_assert_str_eq(proto_error_name(err2.code), "invalid_urdf");
    }
    ck_assert_int_eq(
        proto_urdf_doc_chain(NULL, "a", "b", j, 64, &n, NULL, NULL, NULL, NULL, &err2), -1);
    ck_assert_str_eq(proto_error_name(err2.code), "invalid_request");
    proto_urdf_robot rob;
    ck_assert_int_eq(proto_urdf_doc_robot(NULL, &rob, &err2), -1);
    ck_assert_uint_eq(rob.nlinks, 0);
    proto_urdf_close(NULL);
    free(nm);
    free(nm2);
    free(xml);
}
END_TEST

/* ---- inline documents ------------------------------------------------- */

#define HEAD  "<?xml version=\"1.0\"?>\n<robot name=\"t\">\n"
#define LINKS "<link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>\n"
#define J(name, type, parent, child, body)                                                         \
    "<joint name=\"" name "\" type=\"" type "\"><parent link=\"" parent "\"/><child link=\"" child \
    "\"/>" body "</joint>\n"
#define LIM  "<limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/>"
#define TAIL "</robot>\n"

/* Runs proto_urdf_chain from a to c and expects a rejection whose code and
 * message contain the given strings. */
static void expect_error(const char *xml, const char *base, const char *tip, const char *code,
                         int http, const char *needle)
{
    ik_joint j[8];
    size_t n = 99;
    proto_error err;
    proto_error_clear(&err);
    int r = proto_urdf_chain(xml, strlen(xml), base, tip, j, 8, &n, NULL, &err);
    ck_assert_int_eq(r, -1);
    ck_assert_str_eq(proto_error_name(err.code), code);
    ck_assert_int_eq(pc_http_status(err.code), http);
    ck_assert_msg(strstr(err.message, needle) != NULL, "message '%s' lacks '%s'", err.message,
                  needle);
}

START_TEST(test_minimal_defaults)
{
    const char *xml = HEAD LINKS J("j1", "revolute", "a", "b", LIM)
        J("j2", "prismatic", "b", "c",
          "<origin xyz=\" 1  2\t3 \" rpy=\"0 0 1.5707963267948966\"/><axis xyz=\"0 0 2\"/>"
          "<limit lower=\"0.1\" upper=\"0.5\"/>") TAIL;
    ik_joint j[4];
    char names[4][PROTO_URDF_NAME_MAX];
    size_t n = 0;
    proto_error err;
    ck_assert_int_eq(proto_urdf_chain(xml, strlen(xml), "a", "c", j, 4, &n, names, &err), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(names[0], "j1");
    ck_assert_str_eq(names[1], "j2");
    /* j1: no origin, no axis: identity and (1, 0, 0) */
    ck_assert_double_eq(j[0].origin.p.x, 0);
    ck_assert_double_eq(j[0].origin.q.w, 1);
    ck_assert_double_eq(j[0].axis.x, 1);
    ck_assert_double_eq(j[0].axis.y, 0);
    ck_assert_double_eq(j[0].lower, -1);
    ck_assert_double_eq(j[0].upper, 1);
    ck_assert_double_eq(j[1].origin.p.z, 3);
    ik_vec3 r = ik_quat_rotate(j[1].origin.q, ik_v3(1, 0, 0));
    ck_assert_double_eq_tol(r.y, 1, 1e-12);
    ck_assert_double_eq(j[1].axis.z, 2);
    ck_assert_double_eq(j[1].lower, 0.1);
    ck_assert_int_eq(j[1].type, IK_JOINT_PRISMATIC);

    /* a sub-chain, and limit without lower/upper defaults to 0 0 */
    const char *xml2 = HEAD LINKS J("j1", "revolute", "a", "b", "<limit effort=\"1\"/>")
        J("j2", "continuous", "b", "c", "") TAIL;
    ck_assert_int_eq(proto_urdf_chain(xml2, strlen(xml2), "b", "c", j, 4, &n, names, &err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(names[0], "j2");
    ck_assert(isinf(j[0].lower) && j[0].lower < 0);
    ck_assert_int_eq(proto_urdf_chain(xml2, strlen(xml2), "a", "b", j, 4, &n, NULL, &err), 0);
    ck_assert_double_eq(j[0].lower, 0);
    ck_assert_double_eq(j[0].upper, 0);
}
END_TEST

START_TEST(test_malformed_xml)
{
    expect_error(HEAD LINKS "<joint name=\"x\">\n</robot>", "a", "c", "invalid_urdf", 422,
                 "malformed XML at line 5: Opening and ending tag mismatch: joint");
    expect_error("", "a", "c", "invalid_urdf", 422, "malformed XML");
    expect_error("not xml at all", "a", "c", "invalid_urdf", 422, "malformed XML");
    proto_error err;
    size_t n;
    ik_joint j[2];
    ck_assert_int_eq(proto_urdf_chain(NULL, 0, "a", "b", j, 2, &n, NULL, &err), -1);
    ck_assert_str_eq(proto_error_name(err.code), "invalid_urdf");
}
END_TEST

START_TEST(test_no_robot_root)
{
    expect_error("<?xml version=\"1.0\"?><model><link name=\"a\"/></model>", "a", "c",
                 "invalid_urdf", 422, "<model>, not <robot>");
}
END_TEST

START_TEST(test_unknown_links)
{
    const char *xml =
        HEAD LINKS J("j1", "revolute", "a", "b", LIM) J("j2", "revolute", "b", "c", LIM) TAIL;
    expect_error(xml, "nope", "c", "invalid_urdf", 422, "unknown base link 'nope'");
    expect_error(xml, "nope", "c", "invalid_urdf", 422, "links: a, b, c");
    expect_error(xml, "a", "zzz", "invalid_urdf", 422, "unknown tip link 'zzz'");
    expect_error(xml, "a", "a", "invalid_urdf", 422, "same link 'a'");
}
END_TEST

START_TEST(test_not_descendant)
{
    /* a -> b, a -> c: c is not below b; and b is not below c */
    const char *xml =
        HEAD LINKS J("j1", "revolute", "a", "b", LIM) J("j2", "revolute", "a", "c", LIM) TAIL;
    expect_error(xml, "b", "c", "invalid_urdf", 422,
                 "tip link 'c' is not a descendant of base link 'b'");
    expect_error(xml, "b", "c", "invalid_urdf", 422, "no serial path");
    /* upwards is not a chain either */
    expect_error(xml, "b", "a", "invalid_urdf", 422, "not a descendant");
    /* two disconnected trees */
    const char *xml2 = HEAD LINKS "<link name=\"d\"/>" J("j1", "revolute", "a", "b", LIM)
        J("j2", "revolute", "c", "d", LIM) TAIL;
    expect_error(xml2, "a", "d", "invalid_urdf", 422, "root link 'c'");
}
END_TEST

START_TEST(test_two_parents_and_cycles)
{
    const char *xml =
        HEAD LINKS J("j1", "revolute", "a", "c", LIM) J("j2", "revolute", "b", "c", LIM) TAIL;
    expect_error(xml, "a", "c", "invalid_urdf", 422, "link 'c' has two parents");
    expect_error(xml, "a", "c", "invalid_urdf", 422, "'j1' and 'j2'");
    /* a cycle without a root: b -> c -> b */
    const char *cyc =
        HEAD LINKS J("j1", "revolute", "b", "c", LIM) J("j2", "revolute", "c", "b", LIM) TAIL;
    expect_error(cyc, "a", "c", "invalid_urdf", 422, "cycle");
    /* joint naming an undeclared parent link */
    const char *und = HEAD LINKS J("j1", "revolute", "ghost", "c", LIM) TAIL;
    expect_error(und, "ghost", "c", "invalid_urdf", 422, "unknown base link 'ghost'");
    expect_error(und, "a", "c", "invalid_urdf", 422, "'ghost', which is not a <link>");
    /* a joint without child / parent, a link without name, a link twice */
    expect_error(HEAD LINKS "<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/></joint>" TAIL,
                 "a", "b", "invalid_urdf", 422, "joint 'j' has no <child");
    expect_error(HEAD LINKS "<joint name=\"j\" type=\"fixed\"><child link=\"a\"/></joint>" TAIL,
                 "a", "b", "invalid_urdf", 422, "joint 'j' has no <parent");
    expect_error(HEAD LINKS "<link/>" TAIL, "a", "b", "invalid_urdf", 422, "has no name");
    expect_error(HEAD LINKS "<link name=\"b\"/>" TAIL, "a", "b", "invalid_urdf", 422,
                 "link 'b' is declared twice");
}
END_TEST

START_TEST(test_joint_types)
{
    expect_error(HEAD LINKS J("j1", "floating", "a", "b", "") TAIL, "a", "b", "invalid_urdf", 422,
                 "joint 'j1' is of type 'floating'");
    expect_error(HEAD LINKS J("j1", "planar", "a", "b", "") TAIL, "a", "b", "invalid_urdf", 422,
                 "joint 'j1' is of type 'planar'");
    expect_error(HEAD LINKS J("j1", "hinge", "a", "b", "") TAIL, "a", "b", "invalid_urdf", 422,
                 "unknown type 'hinge'");
    expect_error(HEAD LINKS
                 "<joint name=\"j1\"><parent link=\"a\"/><child link=\"b\"/></joint>" TAIL,
                 "a", "b", "invalid_urdf", 422, "joint 'j1' has no type");
    expect_error(HEAD LINKS J("j1", "revolute", "a", "b", "") TAIL, "a", "b", "invalid_urdf", 422,
                 "revolute joint 'j1' has no <limit");
    expect_error(HEAD LINKS J("j1", "prismatic", "a", "b", "") TAIL, "a", "b", "invalid_urdf", 422,
                 "prismatic joint 'j1' has no <limit");
    /* a floating joint off the chain does not matter */
    const char *xml =
        HEAD LINKS J("j1", "revolute", "a", "b", LIM) J("j2", "floating", "a", "c", "") TAIL;
    ik_joint j[2];
    size_t n;
    proto_error err;
    ck_assert_int_eq(proto_urdf_chain(xml, strlen(xml), "a", "b", j, 2, &n, NULL, &err), 0);
    ck_assert_uint_eq(n, 1);
}
END_TEST

START_TEST(test_bad_numbers)
{
    static const char *bodies[] = {
        "<origin xyz=\"0 0 nan\"/>" LIM,       "<origin xyz=\"0 0 inf\"/>" LIM,
        "<origin xyz=\"0 0 1e999\"/>" LIM,     "<origin xyz=\"0 0\"/>" LIM,
        "<origin xyz=\"0 0 0 0\"/>" LIM,       "<origin xyz=\"0 0 1x\"/>" LIM,
        "<origin rpy=\"a b c\"/>" LIM,         "<origin rpy=\"\"/>" LIM,
        "<axis xyz=\"0 1 -INF\"/>" LIM,        "<axis xyz=\"0,1,0\"/>" LIM,
        "<limit lower=\"-1\" upper=\"NaN\"/>", "<limit lower=\"low\" upper=\"1\"/>",
        "<limit lower=\"1 2\" upper=\"3\"/>",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        char xml[512];
        snprintf(xml, sizeof xml,
                 HEAD LINKS "<joint name=\"jx\" type=\"revolute\"><parent link=\"a\"/><child "
                            "link=\"b\"/>%s</joint>" TAIL,
                 bodies[i]);
        expect_error(xml, "a", "b", "invalid_urdf", 422, "joint 'jx'");
        expect_error(xml, "a", "b", "invalid_urdf", 422, "finite number");
    }
    expect_error(HEAD LINKS J("jz", "revolute", "a", "b", "<axis xyz=\"0 0 0\"/>" LIM) TAIL, "a",
                 "b", "invalid_urdf", 422, "joint 'jz' has a zero axis");
    expect_error(HEAD LINKS J("jl", "revolute", "a", "b", "<limit lower=\"1\" upper=\"-1\"/>") TAIL,
                 "a", "b", "invalid_urdf", 422, "joint 'jl': lower limit 1 is above upper");
}
END_TEST

START_TEST(test_too_large)
{
    const char *xml =
        HEAD LINKS J("j1", "revolute", "a", "b", LIM) J("j2", "revolute", "b", "c", LIM) TAIL;
    ik_joint j[2];
    size_t n = 0;
    proto_error err;
    ck_assert_int_eq(proto_urdf_chain(xml, strlen(xml), "a", "c", j, 1, &n, NULL, &err), -1);
    ck_assert_str_eq(proto_error_name(err.code), "too_large");
    ck_assert_int_eq(pc_http_status(err.code), 413);
    ck_assert_ptr_nonnull(strstr(err.message, "2 joints"));
    ck_assert_int_eq(proto_urdf_chain(xml, strlen(xml), "a", "c", j, 2, &n, NULL, &err), 0);

    /* a 40-joint path exceeds a limit of 32 joints: load_chain says so */
    size_t cap = 1 << 16;
    char *big = malloc(cap);
    size_t used = (size_t)snprintf(big, cap, HEAD "<link name=\"l0\"/>");
    for (int i = 1; i <= 40; i++)
        used += (size_t)snprintf(big + used, cap - used,
                                 "<link name=\"l%d\"/>" J("j%d", "revolute", "l%d", "l%d", LIM), i,
                                 i, i - 1, i);
    used += (size_t)snprintf(big + used, cap - used, TAIL);
    ck_assert_ptr_null(proto_urdf_load_chain(big, used, "l0", "l40", 32, NULL, &err));
    ck_assert_str_eq(proto_error_name(err.code), "too_large");
    ik_chain *c30 = proto_urdf_load_chain(big, used, "l0", "l30", 32, NULL, &err);
    ck_assert_ptr_nonnull(c30);
    ck_assert_uint_eq(c30->dof, 30);
    free(c30);
    /* and a 40-joint one loads under a limit of 40 */
    ik_chain *c40 = proto_urdf_load_chain(big, used, "l0", "l40", 40, NULL, &err);
    ck_assert_ptr_nonnull(c40);
    ck_assert_uint_eq(c40->dof, 40);
    free(c40);
    free(big);

    /* only fixed joints */
    const char *fx = HEAD LINKS J("j1", "fixed", "a", "b", "") TAIL;
    ck_assert_ptr_null(proto_urdf_load_chain(fx, strlen(fx), "a", "b", 32, NULL, &err));
    ck_assert_str_eq(proto_error_name(err.code), "invalid_urdf");
    ck_assert_ptr_nonnull(strstr(err.message, "no movable joint"));

    /* a joint name too long for the names array */
    char longname[300];
    char lx[800];
    memset(longname, 'n', 100);
    longname[100] = '\0';
    snprintf(lx, sizeof lx, HEAD LINKS J("%s", "revolute", "a", "b", LIM) TAIL, longname);
    char names[2][PROTO_URDF_NAME_MAX];
    ck_assert_int_eq(proto_urdf_chain(lx, strlen(lx), "a", "b", j, 2, &n, names, &err), -1);
    ck_assert_str_eq(proto_error_name(err.code), "too_large");
    ck_assert_int_eq(proto_urdf_chain(lx, strlen(lx), "a", "b", j, 2, &n, NULL, &err), 0);
}
END_TEST

START_TEST(test_doctype_refused)
{
    /* billion laughs */
    const char *bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE robot [\n<!ENTITY a \"aaaaaaaaaa\">\n"
                       "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">\n<!ENTITY c "
                       "\"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">\n"
                       "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">\n<!ENTITY e "
                       "\"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\">\n"
                       "<!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\">\n<!ENTITY g "
                       "\"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\">\n"
                       "<!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\">\n<!ENTITY i "
                       "\"&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;\">\n"
                       "]>\n<robot name=\"&i;\"><link name=\"&i;\"/><link name=\"b\"/></robot>\n";
    expect_error(bomb, "a", "b", "invalid_urdf", 422, "DOCTYPE");
    /* external entity (XXE) */
    const char *xxe = "<?xml version=\"1.0\"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "
                      "\"file:///etc/passwd\">]>\n<robot name=\"t\"><link name=\"&x;\"/>"
                      "<link name=\"b\"/></robot>";
    expect_error(xxe, "a", "b", "invalid_urdf", 422, "DOCTYPE");
    const char *ext = "<?xml version=\"1.0\"?>\n<!DOCTYPE robot SYSTEM "
                      "\"http://127.0.0.1:9/robot.dtd\">\n<robot name=\"t\"/>";
    expect_error(ext, "a", "b", "invalid_urdf", 422, "DOCTYPE");
    /* an undeclared entity reference is a plain XML error */
    expect_error(HEAD "<link name=\"&x;\"/>" TAIL, "a", "b", "invalid_urdf", 422, "malformed XML");
}
END_TEST

START_TEST(test_big_document)
{
    /* 4 MiB: a 20-joint chain followed by thousands of unrelated links and
     * comments; the chain is found and the parse stays fast. */
    size_t cap = 5u << 20;
    char *big = malloc(cap);
    size_t used = (size_t)snprintf(big, cap, HEAD "<link name=\"l0\"/>");
    for (int i = 1; i <= 20; i++)
        used += (size_t)snprintf(big + used, cap - used,
                                 "<link name=\"l%d\"/>" J("j%d", "revolute", "l%d", "l%d",
                                                          "<origin xyz=\"0 0 0.1\"/>" LIM),
                                 i, i, i - 1, i);
    int k = 0;
    while (used < (4u << 20) - 200) {
        used += (size_t)snprintf(
            big + used, cap - used,
            "<link name=\"x%d\"/>" J("y%d", "floating", "l0", "x%d",
                                     "") "<!-- padding padding padding padding -->\n",
            k, k, k);
        k++;
    }
    used += (size_t)snprintf(big + used, cap - used, TAIL);
    ck_assert_uint_ge(used, 4000000);
    ik_joint j[32];
    size_t n = 0;
    proto_error err;
    int r = proto_urdf_chain(big, used, "l0", "l20", j, 32, &n, NULL, &err);
    ck_assert_msg(r == 0, "%s", err.message);
    ck_assert_uint_eq(n, 20);
    double q[20] = {0};
    ck_assert_double_eq_tol(fk_described(j, n, q).p.z, 2.0, 1e-12);
    char names[2][PROTO_URDF_NAME_MAX];
    size_t nl;
    ck_assert_int_eq(proto_urdf_links(big, used, names, 2, &nl, &err), 0);
    ck_assert_uint_eq(nl, 21 + (size_t)k);
    ck_assert_str_eq(names[1], "l1");
    free(big);
}
END_TEST

static Suite *urdf_suite(void)
{
    Suite *s = suite_create("urdf");
    TCase *tc = tcase_create("robots");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_robot_chain, 0, (int)(sizeof chains / sizeof chains[0]));
    tcase_add_test(tc, test_pr2_torso_moves_along_z);
    tcase_add_test(tc, test_links_list);
    tcase_add_test(tc, test_tree_paths);
    tcase_add_test(tc, test_threads);
    tcase_add_loop_test(tc, test_open_document_reads, 0, (int)(sizeof chains / sizeof chains[0]));
    tcase_add_test(tc, test_open_document_tree_and_errors);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("errors");
    tcase_set_timeout(te, 60);
    tcase_add_test(te, test_minimal_defaults);
    tcase_add_test(te, test_malformed_xml);
    tcase_add_test(te, test_no_robot_root);
    tcase_add_test(te, test_unknown_links);
    tcase_add_test(te, test_not_descendant);
    tcase_add_test(te, test_two_parents_and_cycles);
    tcase_add_test(te, test_joint_types);
    tcase_add_test(te, test_bad_numbers);
    tcase_add_test(te, test_too_large);
    tcase_add_test(te, test_doctype_refused);
    tcase_add_test(te, test_big_document);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(urdf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
