/*
 * test_proto_tree.c: tree chains over the wire format (proto/proto_tree.c
 * and the members it adds to requests, answers and streams): a root and
 * several tips over shared joints, from a URDF (a base link and tip links)
 * or from a joint list whose joints name their parents.
 *
 * Every answer is checked independently of the solver: the test reads each
 * tip's serial path itself (proto_urdf_chain, or the joint list it wrote)
 * and composes origin * motion of every joint with the answered joint
 * values matched by name (tree_fk below), never with ik_tree_fk:
 *   - chains: both PR2 arms from torso_lift_link and from base_link (the
 *     torso joint shared, listed once), the Baxter-like tree of tests/data,
 *     a joint list with parents; their descriptions (tips, each tip's
 *     joints, shared joints), content-addressed ids, memory counted, and
 *     every rejection with its JSON path;
 *   - solves: targets from random configurations inside the limits, both
 *     tips full pose at 1e-5, at least 99.9% success on each tree (single
 *     solves and a batch), every answer inside the limits and on target by
 *     tree_fk, each tip's answered pose that of tree_fk;
 *   - priorities with conflicting targets on a small planar tree: the
 *     high-priority tip within 1e-6, the low-priority one as close as the
 *     freedom left allows (a brute-force search over that freedom);
 *   - keep rules, weights, objectives, seeds and turns, max_joint_step,
 *     frames and units, streams (warm starts along a smooth motion: no
 *     joint jumps) through proto_session.
 * The CMU walk through the wire format is in test_proto_tree_bvh.c.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_session.h"
#include "proto/proto_urdf.h"
#include "solver/ik_math.h"
#include "solver/ik_rng.h"
#include "tests/proto/proto_check.h"

/* ---- the trees and their independent forward kinematics ---------------- */

#define MAX_TIPS 8

typedef struct tip_path {
    char name[PROTO_URDF_NAME_MAX];
    ik_joint j[64];
    char jn[64][PROTO_URDF_NAME_MAX];
    size_t n;
} tip_path;

typedef struct test_tree {
    char *xml; /* URDF text, or NULL for joint lists */
    size_t len;
    json_t *chain; /* the chain object */
    size_t ntips;
    tip_path tip[MAX_TIPS];
} test_tree;

static char *data_text(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", pc_data_dir(), rel);
    char *s = pc_read_file(path, len);
    ck_assert_msg(s != NULL, "cannot read %s (set IKD_DATA)", path);
    return s;
}

/* A URDF tree of tests/data: the chain object and each tip's path. */
static void urdf_tree(test_tree *t, const char *robot, const char *base, const char *const *tips,
                      size_t ntips)
{
    memset(t, 0, sizeof *t);
    char rel[128];
    snprintf(rel, sizeof rel, "robots/%s.urdf", robot);
    t->xml = data_text(rel, &t->len);
    json_t *jt = json_array();
    for (size_t k = 0; k < ntips; k++) {
        proto_error e;
        tip_path *p = &t->tip[k];
        snprintf(p->name, sizeof p->name, "%s", tips[k]);
        ck_assert_int_eq(
            proto_urdf_chain(t->xml, t->len, base, tips[k], p->j, 64, &p->n, p->jn, &e), 0);
        json_array_append_new(jt, json_string(tips[k]));
    }
    t->ntips = ntips;
    t->chain = json_pack("{s:s, s:s%, s:s, s:o}", "kind", "tree", "urdf", t->xml, t->len, "base",
                         base, "tips", jt);
    ck_assert_ptr_nonnull(t->chain);
}

static void tree_free(test_tree *t)
{
    free(t->xml);
    json_decref(t->chain);
    memset(t, 0, sizeof *t);
}

/* The answered value of joint `name` (joint_names / joints of an answer). */
static double joint_value(const json_t *names, const json_t *q, const char *name)
{
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), name) == 0)
            return json_number_value(json_array_get(q, i));
    ck_abort_msg("the answer has no joint %s", name);
    return 0;
}

/* Tip k's pose for the answered joints, by composing its path's joints. */
static ik_xform tree_fk(const test_tree *t, size_t k, const json_t *names, const json_t *q)
{
    const tip_path *p = &t->tip[k];
    ik_xform x = ik_xform_identity();
    for (size_t i = 0; i < p->n; i++) {
        x = ik_xform_mul(x, p->j[i].origin);
        ik_xform m = ik_xform_identity();
        if (p->j[i].type == IK_JOINT_REVOLUTE || p->j[i].type == IK_JOINT_CONTINUOUS)
            m.q = ik_quat_from_axis_angle(p->j[i].axis, joint_value(names, q, p->jn[i]));
        else if (p->j[i].type == IK_JOINT_PRISMATIC)
            m.p = ik_vec3_scale(ik_vec3_normalize(p->j[i].axis), joint_value(names, q, p->jn[i]));
        x = ik_xform_mul(x, m);
    }
    return x;
}

/* The chain's description (POST /v1/chains' answer). */
static json_t *describe(const json_t *chain)
{
    proto_error e;
    proto_chain *c = proto_chain_decode_json((json_t *)chain, "", NULL, &e);
    ck_assert_msg(c != NULL, "%s at %s", e.message, e.path);
    json_t *d = proto_chain_describe(c);
    proto_chain_unref(c);
    return d;
}

/* Random joint values inside the limits of a description's joints
 * (continuous joints in [-pi, pi]), as a JSON array in joint_names order. */
static json_t *random_joints(const json_t *desc, ik_rng *r)
{
    json_t *q = json_array();
    const json_t *js = json_object_get(desc, "joints");
    for (size_t i = 0; i < json_array_size(js); i++) {
        const json_t *j = json_array_get(js, i);
        double lo = -IK_PI, hi = IK_PI;
        if (json_object_get(j, "lower")) {
            lo = json_number_value(json_object_get(j, "lower"));
            hi = json_number_value(json_object_get(j, "upper"));
        }
        json_array_append_new(q, json_real(ik_rng_uniform(r, lo, hi)));
    }
    return q;
}

/* json_equal(a, b), b a new reference that is released. */
static bool eq_new(const json_t *a, json_t *b)
{
    bool e = json_equal(a, b);
    json_decref(b);
    return e;
}

static json_t *pose_json(ik_xform x)
{
    return json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", x.p.x, x.p.y, x.p.z, "orientation",
                     x.q.x, x.q.y, x.q.z, x.q.w);
}

/* A full-pose target for every tip, from joint values q (joint_names
 * order of desc). */
static json_t *full_pose_target(const test_tree *t, const json_t *desc, const json_t *q)
{
    json_t *tips = json_object();
    for (size_t k = 0; k < t->ntips; k++)
        json_object_set_new(tips, t->tip[k].name,
                            pose_json(tree_fk(t, k, json_object_get(desc, "joint_names"), q)));
    return json_pack("{s:o}", "tips", tips);
}

/* Checks one answer to full-pose targets on every tip: inside the limits,
 * every tip on its target by tree_fk (each component within tol), the
 * answered tip poses those of tree_fk; returns whether it says success
 * (and then every check held). */
static bool check_full_pose(const test_tree *t, const json_t *desc, const json_t *target,
                            const json_t *names, const json_t *res, double tol)
{
    const json_t *q = json_object_get(res, "joints");
    const json_t *js = json_object_get(desc, "joints");
    ck_assert_uint_eq(json_array_size(q), json_array_size(js));
    for (size_t i = 0; i < json_array_size(js); i++) {
        const json_t *j = json_array_get(js, i);
        if (!json_object_get(j, "lower"))
            continue;
        double v = json_number_value(json_array_get(q, i));
        ck_assert_double_ge(v, json_number_value(json_object_get(j, "lower")) - 1e-12);
        ck_assert_double_le(v, json_number_value(json_object_get(j, "upper")) + 1e-12);
    }
    const json_t *tips = json_object_get(res, "tips");
    ck_assert_uint_eq(json_array_size(tips), t->ntips);
    bool ok = strcmp(json_string_value(json_object_get(res, "status")), "success") == 0;
    for (size_t k = 0; k < t->ntips; k++) {
        ik_xform x = tree_fk(t, k, names, q);
        const json_t *a = json_array_get(tips, k);
        ck_assert_double_le(ik_vec3_dist(pc_vec(json_object_get(a, "position")), x.p), 1e-9);
        ck_assert_double_le(ik_quat_angle_between(pc_quat(json_object_get(a, "orientation")), x.q),
                            1e-9);
        const json_t *g = json_object_get(json_object_get(target, "tips"), t->tip[k].name);
        ik_xform want = {pc_vec(json_object_get(g, "position")),
                         ik_quat_normalize(pc_quat(json_object_get(g, "orientation")))};
        double e[6];
        e[0] = want.p.x - x.p.x;
        e[1] = want.p.y - x.p.y;
        e[2] = want.p.z - x.p.z;
        ik_vec3 rv = ik_quat_to_rotvec(ik_quat_mul(want.q, ik_quat_conj(x.q)));
        e[3] = rv.x, e[4] = rv.y, e[5] = rv.z;
        bool on = true;
        for (int c = 0; c < 6; c++)
            on &= fabs(e[c]) <= tol;
        const char *st = json_string_value(json_object_get(a, "status"));
        if (ok)
            ck_assert_msg(on, "tip %s answered success but is off its target", t->tip[k].name);
        ck_assert_str_eq(st, on ? "success" : st);
        if (strcmp(st, "success") == 0)
            ck_assert_msg(on, "tip %s: status success, but off its target", t->tip[k].name);
    }
    return ok;
}

/* A request body (malloc'd). */
static char *body_of(json_t *req)
{
    char *s = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_ptr_nonnull(s);
    return s;
}

static json_t *solve(json_t *req, proto_kind kind)
{
    char *b = body_of(req);
    proto_error e;
    json_t *r = pc_solve(b, kind, &e);
    ck_assert_msg(r != NULL, "rejected: %s at %s", e.message, e.path);
    free(b);
    return r;
}

static void reject(json_t *req, proto_kind kind, const char *code, int status, const char *path)
{
    char *b = body_of(req);
    pc_reject(b, kind, code, status, path);
    free(b);
}

/* ---- chains ------------------------------------------------------------- */

static const char *const PR2_TIPS[2] = {"l_wrist_roll_link", "r_wrist_roll_link"};
static const char *const BAXTER_TIPS[2] = {"left_hand", "right_hand"};

START_TEST(test_chain_urdf)
{
    test_tree t;
    urdf_tree(&t, "pr2", "base_link", PR2_TIPS, 2);
    json_t *d = describe(t.chain);
    ck_assert_str_eq(json_string_value(json_object_get(d, "kind")), "tree");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "dof")), 15);
    const json_t *names = json_object_get(d, "joint_names");
    ck_assert_uint_eq(json_array_size(names), 15);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "joints")), 15);
    /* the torso joint once, shared by both tips */
    const json_t *shared = json_object_get(d, "shared_joints");
    ck_assert_uint_eq(json_array_size(shared), 1);
    ck_assert_str_eq(json_string_value(json_array_get(shared, 0)), "torso_lift_joint");
    const json_t *tips = json_object_get(d, "tips");
    ck_assert_uint_eq(json_array_size(tips), 2);
    for (size_t k = 0; k < 2; k++) {
        const json_t *tk = json_array_get(tips, k);
        ck_assert_str_eq(json_string_value(json_object_get(tk, "name")), PR2_TIPS[k]);
        const json_t *tj = json_object_get(tk, "joints");
        /* the tip's movable joints, base first, as its serial chain reads them */
        size_t m = 0;
        for (size_t i = 0; i < t.tip[k].n; i++) {
            if (t.tip[k].j[i].type == IK_JOINT_FIXED)
                continue;
            ck_assert_str_eq(json_string_value(json_array_get(tj, m)), t.tip[k].jn[i]);
            m++;
        }
        ck_assert_uint_eq(json_array_size(tj), m);
        ck_assert_uint_eq(m, 8);
    }
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "solvers"), 0)),
                     "numeric");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "solvers")), 1);
    ck_assert_int_gt(json_integer_value(json_object_get(d, "memory_bytes")), (json_int_t)t.len);
    ck_assert(json_equal(json_object_get(d, "chain"), t.chain));
    /* content-addressed: the same object the same id, another tip order
     * another chain */
    json_t *d2 = describe(t.chain);
    ck_assert_str_eq(json_string_value(json_object_get(d, "id")),
                     json_string_value(json_object_get(d2, "id")));
    json_decref(d2);
    json_t *other = json_deep_copy(t.chain);
    json_object_set_new(other, "tips", json_pack("[s,s]", PR2_TIPS[1], PR2_TIPS[0]));
    d2 = describe(other);
    ck_assert_str_ne(json_string_value(json_object_get(d, "id")),
                     json_string_value(json_object_get(d2, "id")));
    json_decref(d2);
    json_decref(other);
    json_decref(d);
    tree_free(&t);
    /* from torso_lift_link nothing is shared */
    urdf_tree(&t, "pr2", "torso_lift_link", PR2_TIPS, 2);
    d = describe(t.chain);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "dof")), 14);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "shared_joints")), 0);
    json_decref(d);
    tree_free(&t);
}
END_TEST

/* A planar tree as a joint list with parents: a shared joint s at the root,
 * tip A after one more joint, tip B after two (the solver test's tree). */
static const char PLANAR_TREE[] =
    "{\"kind\":\"tree\",\"joints\":["
    "{\"name\":\"s\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
    "{\"name\":\"a\",\"parent\":\"s\",\"type\":\"continuous\",\"origin\":{\"xyz\":[1.0,0,0]},"
    "\"axis\":[0,0,1]},"
    "{\"name\":\"a_tip\",\"parent\":\"a\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0.8,0,0]}},"
    "{\"name\":\"b1\",\"parent\":\"s\",\"type\":\"continuous\",\"origin\":{\"xyz\":[-0.6,0,0]},"
    "\"axis\":[0,0,1]},"
    "{\"name\":\"b2\",\"parent\":\"b1\",\"type\":\"continuous\",\"origin\":{\"xyz\":[-0.7,0,0]},"
    "\"axis\":[0,0,1]},"
    "{\"name\":\"b_tip\",\"parent\":\"b2\",\"type\":\"fixed\",\"origin\":{\"xyz\":[-0.5,0,0]}}],"
    "\"tips\":[\"a_tip\",\"b_tip\"]}";

static json_t *planar_chain(void)
{
    json_error_t je;
    json_t *c = json_loads(PLANAR_TREE, 0, &je);
    ck_assert_ptr_nonnull(c);
    return c;
}

START_TEST(test_chain_joints)
{
    json_t *c = planar_chain();
    json_t *d = describe(c);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "dof")), 4);
    ck_assert(
        eq_new(json_object_get(d, "joint_names"), json_pack("[s,s,s,s]", "s", "a", "b1", "b2")));
    ck_assert(eq_new(json_object_get(d, "shared_joints"), json_pack("[s]", "s")));
    const json_t *tips = json_object_get(d, "tips");
    ck_assert(eq_new(json_array_get(tips, 0),
                     json_pack("{s:s, s:[s,s]}", "name", "a_tip", "joints", "s", "a")));
    ck_assert(eq_new(json_array_get(tips, 1),
                     json_pack("{s:s, s:[s,s,s]}", "name", "b_tip", "joints", "s", "b1", "b2")));
    json_decref(d);
    json_decref(c);
}
END_TEST

/* Every rejection of a tree chain names its path. */
static void chain_reject(const char *chain, const char *code, int status, const char *path)
{
    char body[4096];
    snprintf(body, sizeof body, "{\"chain\":%s,\"target\":{\"tips\":{}}}", chain);
    pc_reject(body, PROTO_SOLVE, code, status, path);
}

START_TEST(test_chain_errors)
{
    /* a parent that is no earlier joint */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"parent\":\"b\",\"type\":"
                 "\"continuous\"},{\"name\":\"b\",\"type\":\"continuous\"}],\"tips\":[\"a\"]}",
                 "invalid_chain", 422, "/chain/joints/0/parent");
    /* a name used twice */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"},"
                 "{\"name\":\"a\",\"parent\":\"a\",\"type\":\"continuous\"}],\"tips\":[\"a\"]}",
                 "invalid_chain", 422, "/chain/joints/1/name");
    /* an unknown tip */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"}],"
                 "\"tips\":[\"a\",\"z\"]}",
                 "invalid_chain", 422, "/chain/tips/1");
    /* a tip named twice */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"}],"
                 "\"tips\":[\"a\",\"a\"]}",
                 "invalid_chain", 422, "/chain/tips/1");
    /* a tip without a movable joint on its path */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"},"
                 "{\"name\":\"f\",\"type\":\"fixed\"}],\"tips\":[\"a\",\"f\"]}",
                 "invalid_chain", 422, "/chain/tips/1");
    /* no tips, too many tips */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"}],"
                 "\"tips\":[]}",
                 "invalid_request", 400, "/chain/tips");
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"}],"
                 "\"tips\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]}",
                 "too_large", 413, "/chain/tips");
    /* tips are required; a URDF or joints, not both */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"}]}",
                 "invalid_request", 400, "/chain/tips");
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\"}],"
                 "\"urdf\":\"<robot/>\",\"base\":\"x\",\"tips\":[\"a\"]}",
                 "invalid_request", 400, "/chain/urdf");
    chain_reject("{\"kind\":\"tree\",\"tips\":[\"a\"]}", "invalid_request", 400, "/chain/joints");
    /* joint members are checked as a joints chain's */
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"revolute\"}],"
                 "\"tips\":[\"a\"]}",
                 "invalid_request", 400, "/chain/joints/0/limits");
    chain_reject("{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\","
                 "\"colour\":1}],\"tips\":[\"a\"]}",
                 "invalid_request", 400, "/chain/joints/0/colour");
    /* URDF: an unknown tip link, a base that is no ancestor */
    char *xml = data_text("robots/pr2.urdf", NULL);
    json_t *c = json_pack("{s:s, s:s, s:s, s:[s,s]}", "kind", "tree", "urdf", xml, "base",
                          "torso_lift_link", "tips", "l_wrist_roll_link", "nose");
    json_t *req = json_pack("{s:o, s:{s:{}}}", "chain", c, "target", "tips");
    reject(req, PROTO_SOLVE, "invalid_urdf", 422, "/chain/urdf");
    json_object_set_new(json_object_get(req, "chain"), "tips",
                        json_pack("[s,s]", "l_wrist_roll_link", "base_link"));
    reject(req, PROTO_SOLVE, "invalid_urdf", 422, "/chain/urdf");
    json_decref(req);
    free(xml);
}
END_TEST

/* ---- solves ------------------------------------------------------------- */

/* N targets from random configurations on tree t: single solves and one
 * batch, every answer checked; at least 99.9% success. */
static void random_solves(test_tree *t, size_t n, uint64_t seed)
{
    json_t *d = describe(t->chain);
    const json_t *names = json_object_get(d, "joint_names");
    ik_rng r = {seed};
    size_t ok = 0;
    json_t *targets = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *q = random_joints(d, &r);
        json_t *tg = full_pose_target(t, d, q);
        json_t *req = json_pack("{s:O, s:O}", "chain", t->chain, "target", tg);
        json_t *res = solve(req, PROTO_SOLVE);
        ck_assert(json_equal(json_object_get(res, "joint_names"), names));
        ck_assert(eq_new(json_object_get(res, "tip_names"),
                         json_pack("[s,s]", t->tip[0].name, t->tip[1].name)));
        ok += check_full_pose(t, d, tg, names, res, 1e-5);
        if (i < 200)
            json_array_append(targets, tg);
        json_decref(res);
        json_decref(req);
        json_decref(tg);
        json_decref(q);
    }
    ck_assert_msg(ok * 1000 >= n * 999, "%zu of %zu solved", ok, n);
    /* the same targets as one batch */
    json_t *req = json_pack("{s:O, s:O}", "chain", t->chain, "targets", targets);
    json_t *res = solve(req, PROTO_BATCH);
    const json_t *results = json_object_get(res, "results");
    ck_assert_uint_eq(json_array_size(results), json_array_size(targets));
    size_t bok = 0;
    for (size_t i = 0; i < json_array_size(targets); i++)
        bok += check_full_pose(t, d, json_array_get(targets, i), names, json_array_get(results, i),
                               1e-5);
    ck_assert_uint_ge(bok * 1000, json_array_size(targets) * 999);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "counts"), "success")),
                     (json_int_t)bok);
    json_decref(res);
    json_decref(req);
    json_decref(targets);
    json_decref(d);
}

START_TEST(test_pr2_and_baxter)
{
    test_tree t;
    const char *robot = _i == 2 ? "baxter_like" : "pr2";
    const char *base = _i == 0 ? "torso_lift_link" : "base_link";
    urdf_tree(&t, robot, base, _i == 2 ? BAXTER_TIPS : PR2_TIPS, 2);
    random_solves(&t, 1000, 100 + (uint64_t)_i);
    tree_free(&t);
}
END_TEST

static Suite *tree_suite(void)
{
    Suite *s = suite_create("proto_tree");
    TCase *tc = tcase_create("chains");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_chain_urdf);
    tcase_add_test(tc, test_chain_joints);
    tcase_add_test(tc, test_chain_errors);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("solves");
    tcase_set_timeout(ts, 300);
    tcase_add_loop_test(ts, test_pr2_and_baxter, 0, 3);
    suite_add_tcase(s, ts);
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
