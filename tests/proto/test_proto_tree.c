/*
 * test_proto_tree.c: tree chains over the wire format (proto/proto_kind_tree.c
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
#include "proto/proto_stream.h"
#include "tests/proto/urdf_read.h"
#include "solver/ik_tree.h"
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
    {
        /* 33 tips: one more than a tree has at most (IK_TREE_MAX_TIPS) */
        char many[1024];
        size_t n = (size_t)snprintf(many, sizeof many,
                                    "{\"kind\":\"tree\",\"joints\":[{\"name\":\"a\",\"type\":"
                                    "\"continuous\"}],\"tips\":[");
        for (int t = 0; t < IK_TREE_MAX_TIPS + 1; t++)
            n += (size_t)snprintf(many + n, sizeof many - n, "%s\"t%d\"", t ? "," : "", t);
        snprintf(many + n, sizeof many - n, "]}");
        chain_reject(many, "too_large", 413, "/chain/tips");
    }
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
 * batch, every answer checked; at least 99.9% success (the budget in
 * iterations, 10000 each, so that a busy machine changes nothing). */
static void random_solves(test_tree *t, size_t n, uint64_t seed)
{
    json_t *d = describe(t->chain);
    const json_t *names = json_object_get(d, "joint_names");
    ik_rng r = {seed};
    size_t ok = 0;
    json_t *targets = json_array();
    /* a budget of iterations, not of time: the machine may be busy */
    json_t *opts = json_pack("{s:f, s:i}", "timeout_ms", 0.0, "max_iterations", 10000);
    for (size_t i = 0; i < n; i++) {
        json_t *q = random_joints(d, &r);
        json_t *tg = full_pose_target(t, d, q);
        json_t *req =
            json_pack("{s:O, s:O, s:O}", "chain", t->chain, "target", tg, "options", opts);
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
    json_t *req =
        json_pack("{s:O, s:O, s:O}", "chain", t->chain, "targets", targets, "options", opts);
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
    json_decref(opts);
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

/* ---- priorities against brute force ---------------------------------- */

/* The planar tree's lengths (PLANAR_TREE): A = s, a (1.0 then 0.8), B = s,
 * b1, b2 (-0.6, -0.7, -0.5 along x). */
#define LA0 1.0
#define LA1 0.8
#define LB0 0.6
#define LB1 0.7
#define LB2 0.5

/* B's squared error (x, y, yaw) for s, b1, b2, computed here. */
static double b_cost(double s, double b1, double b2, double tx, double ty, double tyaw)
{
    double x = -LB0 * cos(s) - LB1 * cos(s + b1) - LB2 * cos(s + b1 + b2);
    double y = -LB0 * sin(s) - LB1 * sin(s + b1) - LB2 * sin(s + b1 + b2);
    double dyaw = ik_wrap_angle(tyaw - (s + b1 + b2));
    return (tx - x) * (tx - x) + (ty - y) * (ty - y) + dyaw * dyaw;
}

/* Minimum of b_cost over b1, b2 for a fixed s: a coarse grid, then grids
 * five times finer around the best point, down to 1e-9 rad. */
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

/* Conflicting targets: A's position (priority 0) fixes s to two values,
 * B's planar pose (x, y, yaw; priority 1) then has two joints for three
 * components. A within 1e-6 (status success), B (no_ik_solution) exactly
 * as close as the brute force over the freedom A leaves, the answer as a
 * whole no_ik_solution. */
START_TEST(test_priorities_conflict)
{
    json_t *chain = planar_chain();
    ik_rng r = {99};
    int cases = 0;
    while (cases < 8) {
        double rr = ik_rng_uniform(&r, LA0 - LA1 + 0.05, LA0 + LA1 - 0.05);
        double ang = ik_rng_uniform(&r, -IK_PI, IK_PI);
        double ax = rr * cos(ang), ay = rr * sin(ang);
        double bx = ik_rng_uniform(&r, -1.5, 1.5), by = ik_rng_uniform(&r, -1.5, 1.5);
        double byaw = ik_rng_uniform(&r, -IK_PI, IK_PI);
        double phi = ik_acos_clamped((LA0 * LA0 + rr * rr - LA1 * LA1) / (2 * LA0 * rr));
        double ref = fmin(b_best(ang - phi, bx, by, byaw), b_best(ang + phi, bx, by, byaw));
        if (ref < 1e-4)
            continue; /* no conflict */
        cases++;
        ik_quat qb = ik_quat_from_axis_angle(ik_v3(0, 0, 1), byaw);
        json_t *req = json_pack(
            "{s:O, s:{s:{s:{s:[f,f,f]}, s:{s:[f,f,f], s:[f,f,f,f], s:[i,i,i,i,i,i], s:i}}}, "
            "s:{s:f, s:f, s:f, s:i}}",
            "chain", chain, "target", "tips", "a_tip", "position", ax, ay, 0.0, "b_tip", "position",
            bx, by, 0.0, "orientation", qb.x, qb.y, qb.z, qb.w, "weights", 1, 1, 0, 0, 0, 1,
            "priority", 1, "options", "tolerance", 1e-6, "angular_tolerance", 1e-6, "timeout_ms",
            0.0, "max_iterations", 10000);
        json_t *res = solve(req, PROTO_SOLVE);
        ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "no_ik_solution");
        /* why: the priority-0 tip keeps the freedom B needs */
        ck_assert_str_eq(json_string_value(json_object_get(res, "cause")), "priority");
        const json_t *tips = json_object_get(res, "tips"), *q = json_object_get(res, "joints");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, 0), "status")),
                         "success");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, 1), "status")),
                         "no_ik_solution");
        /* by the test's own planar kinematics */
        double s = json_number_value(json_array_get(q, 0)),
               a = json_number_value(json_array_get(q, 1));
        double b1 = json_number_value(json_array_get(q, 2)),
               b2 = json_number_value(json_array_get(q, 3));
        double px = LA0 * cos(s) + LA1 * cos(s + a), py = LA0 * sin(s) + LA1 * sin(s + a);
        ck_assert_double_le(fabs(px - ax), 1e-6);
        ck_assert_double_le(fabs(py - ay), 1e-6);
        double cost = b_cost(s, b1, b2, bx, by, byaw);
        ck_assert_msg(cost <= ref + 1e-6 * (1 + ref) && cost >= ref - 1e-5 * (1 + ref),
                      "case %d: low-priority cost %.9g, brute force %.9g", cases, cost, ref);
        json_decref(res);
        json_decref(req);
    }
    json_decref(chain);
}
END_TEST

/* A one-tip tree of the PR2's right arm whose target is beyond the arm's
 * reach answers at once, as the same arm as a chain does: no_ik_solution,
 * cause out_of_reach, a few iterations and no restart (not the whole
 * budget spent on restarts, and timed_out). */
START_TEST(test_out_of_reach)
{
    static const char *const tip[1] = {"r_wrist_roll_link"};
    test_tree t;
    urdf_tree(&t, "pr2", "torso_lift_link", tip, 1);
    json_t *req = json_pack("{s:O, s:{s:{s:{s:[f,f,f]}}}}", "chain", t.chain, "target", "tips",
                            "r_wrist_roll_link", "position", 2.5, -1.0, 0.4);
    json_t *res = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "no_ik_solution");
    ck_assert_str_eq(json_string_value(json_object_get(res, "cause")), "out_of_reach");
    ck_assert_int_eq(json_integer_value(json_object_get(res, "restarts")), 0);
    ck_assert_int_le(json_integer_value(json_object_get(res, "iterations")), 64);
    json_decref(res);
    json_decref(req);
    tree_free(&t);
}
END_TEST

/* ---- keep rules, weights, objectives, seeds, options -------------------- */

/* One solve on the planar tree with a target for A only: "keep": "pose"
 * holds B's pose (checked, success), "joints" holds B's own joints (B not
 * checked: no status), and a tip's weight decides against another's
 * without priorities. */
START_TEST(test_keep_and_weight)
{
    json_t *chain = planar_chain();
    /* seed: s 0.3, a 0.5, b1 0.4, b2 -0.2; A's target is reachable with s
     * where it is (a = 1.2), which B's pose holds */
    const double ax = LA0 * cos(0.3) + LA1 * cos(1.5), ay = LA0 * sin(0.3) + LA1 * sin(1.5);
    json_t *req = json_pack("{s:O, s:{s:{s:{s:[f,f,f]}}}, s:[f,f,f,f], s:{s:f, s:i}}", "chain",
                            chain, "target", "tips", "a_tip", "position", ax, ay, 0.0, "seed", 0.3,
                            0.5, 0.4, -0.2, "options", "timeout_ms", 0.0, "max_iterations", 10000);
    json_t *res = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
    const json_t *q = json_object_get(res, "joints"), *tips = json_object_get(res, "tips");
    double s = json_number_value(json_array_get(q, 0)),
           b1 = json_number_value(json_array_get(q, 2)),
           b2 = json_number_value(json_array_get(q, 3));
    /* B's pose at the seed and now */
    double x0 = -LB0 * cos(0.3) - LB1 * cos(0.7) - LB2 * cos(0.5);
    double y0 = -LB0 * sin(0.3) - LB1 * sin(0.7) - LB2 * sin(0.5);
    double x1 = -LB0 * cos(s) - LB1 * cos(s + b1) - LB2 * cos(s + b1 + b2);
    double y1 = -LB0 * sin(s) - LB1 * sin(s + b1) - LB2 * sin(s + b1 + b2);
    ck_assert_double_le(fabs(x1 - x0), 1e-5);
    ck_assert_double_le(fabs(y1 - y0), 1e-5);
    ck_assert_double_le(fabs(ik_wrap_angle(s + b1 + b2 - 0.5)), 1e-5);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, 1), "status")),
                     "success");
    json_decref(res);
    /* keep joints: b1 and b2 stay at the seed, B has no status */
    json_object_set_new(json_object_get(req, "target"), "keep", json_string("joints"));
    res = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
    q = json_object_get(res, "joints");
    ck_assert_double_eq(json_number_value(json_array_get(q, 2)), 0.4);
    ck_assert_double_eq(json_number_value(json_array_get(q, 3)), -0.2);
    const json_t *tb = json_array_get(json_object_get(res, "tips"), 1);
    ck_assert_ptr_null(json_object_get(tb, "status"));
    ck_assert_ptr_null(json_object_get(tb, "position_error"));
    ck_assert_ptr_nonnull(json_object_get(tb, "position"));
    json_decref(res);
    json_decref(req);
    /* weights: B out of reach pulls A off its target when B weighs 100,
     * not when it has the lower priority */
    req =
        json_pack("{s:O, s:{s:{s:{s:[f,f,f]}, s:{s:[f,f,f], s:f}}}, s:{s:f, s:i}}", "chain", chain,
                  "target", "tips", "a_tip", "position", 1.2, 0.5, 0.0, "b_tip", "position", -0.3,
                  2.5, 0.0, "weight", 100.0, "options", "timeout_ms", 0.0, "max_iterations", 5000);
    res = solve(req, PROTO_SOLVE);
    tips = json_object_get(res, "tips");
    ck_assert_double_gt(pc_num(json_array_get(tips, 0), "position_error"), 1e-3);
    json_decref(res);
    json_t *tbj = json_object_get(json_object_get(json_object_get(req, "target"), "tips"), "b_tip");
    json_object_del(tbj, "weight");
    json_object_set_new(tbj, "priority", json_integer(1));
    res = solve(req, PROTO_SOLVE);
    tips = json_object_get(res, "tips");
    ck_assert_double_lt(pc_num(json_array_get(tips, 0), "position_error"), 1e-5);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, 0), "status")),
                     "success");
    json_decref(res);
    json_decref(req);
    json_decref(chain);
}
END_TEST

/* Objectives: with position targets the PR2's arms are redundant; each
 * objective gives a solution on target, mid_limits one nearer the middle
 * of the limits than none's, distance one nearer the seed. */
START_TEST(test_objectives)
{
    test_tree t;
    urdf_tree(&t, "pr2", "torso_lift_link", PR2_TIPS, 2);
    json_t *d = describe(t.chain);
    const json_t *names = json_object_get(d, "joint_names"), *js = json_object_get(d, "joints");
    ik_rng r = {5};
    double worse_mid = 0, worse_dist = 0;
    for (int i = 0; i < 10; i++) {
        json_t *qt = random_joints(d, &r), *seed = random_joints(d, &r);
        json_t *tips = json_object();
        for (size_t k = 0; k < 2; k++) {
            ik_xform x = tree_fk(&t, k, names, qt);
            json_object_set_new(tips, t.tip[k].name,
                                json_pack("{s:[f,f,f]}", "position", x.p.x, x.p.y, x.p.z));
        }
        double mid[3], dist[3];
        static const char *const objs[3] = {"none", "mid_limits", "distance"};
        for (int o = 0; o < 3; o++) {
            json_t *req = json_pack("{s:O, s:{s:O}, s:O, s:{s:s, s:f, s:i}}", "chain", t.chain,
                                    "target", "tips", tips, "seed", seed, "options", "objective",
                                    objs[o], "timeout_ms", 0.0, "max_iterations", 10000);
            json_t *res = solve(req, PROTO_SOLVE);
            ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
            const json_t *q = json_object_get(res, "joints");
            for (size_t k = 0; k < 2; k++)
                ck_assert_double_le(
                    ik_vec3_dist(
                        tree_fk(&t, k, names, q).p,
                        pc_vec(json_object_get(json_object_get(tips, t.tip[k].name), "position"))),
                    2e-5);
            mid[o] = dist[o] = 0;
            for (size_t v = 0; v < json_array_size(js); v++) {
                const json_t *j = json_array_get(js, v);
                double x = json_number_value(json_array_get(q, v));
                double dd = x - json_number_value(json_array_get(seed, v));
                if (json_object_get(j, "lower")) {
                    double lo = pc_num(j, "lower"), hi = pc_num(j, "upper");
                    double m = (x - 0.5 * (lo + hi)) / (hi - lo);
                    mid[o] += m * m;
                } else {
                    dd = ik_wrap_angle(dd);
                }
                dist[o] += dd * dd;
            }
            json_decref(res);
            json_decref(req);
        }
        worse_mid += mid[1] > mid[0] + 1e-9;
        worse_dist += dist[2] > dist[0] + 1e-9;
        json_decref(tips);
        json_decref(qt);
        json_decref(seed);
    }
    ck_assert_double_le(worse_mid, 1); /* better or equal, but for a rare local optimum */
    ck_assert_double_le(worse_dist, 1);
    json_decref(d);
    tree_free(&t);
    /* objective is for trees only, and one of the names */
    pc_reject("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},\"target\":{\"position\":[1,1]},"
              "\"options\":{\"objective\":\"distance\"}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/objective");
    char body[2048];
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"tips\":{\"a_tip\":{\"position\":[1,1,0]}}},\"options\":"
             "{\"objective\":\"beauty\"}}",
             PLANAR_TREE);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/options/objective");
}
END_TEST

/* Rejections of tree targets, each with its path. */
START_TEST(test_target_errors)
{
    static const struct {
        const char *target, *code, *path;
    } cases[] = {
        {"{\"position\":[1,0,0]}", "invalid_request", "/target/position"},
        {"{\"tips\":[]}", "invalid_request", "/target/tips"},
        {"{}", "invalid_request", "/target/tips"},
        {"{\"tips\":{\"c_tip\":{\"position\":[1,0,0]}}}", "invalid_request", "/target/tips/c_tip"},
        {"{\"tips\":{\"a/tip\":{\"position\":[1,0,0]}}}", "invalid_request", "/target/tips/a~1tip"},
        {"{\"tips\":{\"a_tip\":[1,0,0]}}", "invalid_request", "/target/tips/a_tip"},
        {"{\"tips\":{\"a_tip\":{}}}", "invalid_request", "/target/tips/a_tip/position"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0],\"pole\":[0,1,0]}}}", "invalid_request",
         "/target/tips/a_tip/pole"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,1e9]}}}", "invalid_request",
         "/target/tips/a_tip/position/2"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0],\"orientation\":[0,0,0,2]}}}",
         "invalid_request", "/target/tips/a_tip/orientation"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0],\"priority\":-1}}}", "invalid_request",
         "/target/tips/a_tip/priority"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0],\"priority\":0.5}}}", "invalid_request",
         "/target/tips/a_tip/priority"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0],\"weight\":0}}}", "invalid_request",
         "/target/tips/a_tip/weight"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0],\"weights\":[0,0,0,0,0,0]}}}",
         "invalid_request", "/target/tips/a_tip/weights"},
        {"{\"tips\":{\"a_tip\":{\"position\":[1,0,0]}},\"keep\":\"nothing\"}", "invalid_request",
         "/target/keep"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[2048];
        snprintf(body, sizeof body, "{\"chain\":%s,\"target\":%s}", PLANAR_TREE, cases[i].target);
        pc_reject(body, PROTO_SOLVE, cases[i].code, 400, cases[i].path);
    }
    /* a seed of every joint, and batch paths */
    char body[2048];
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"tips\":{\"a_tip\":{\"position\":[1,0,0]}}},\"seed\":[0,0,"
             "0]}",
             PLANAR_TREE);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/seed");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"targets\":[{\"tips\":{\"a_tip\":{\"position\":[1,0,0]}}},{\"tips\":"
             "{\"b_tip\":{\"position\":[1,0,\"x\"]}}}]}",
             PLANAR_TREE);
    pc_reject(body, PROTO_BATCH, "invalid_request", 400, "/targets/1/tips/b_tip/position/2");
    /* servo is for single chains */
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"tips\":{\"a_tip\":{\"position\":[1,0,0]}}},"
             "\"options\":{\"servo\":{\"period_s\":0.01}}}",
             PLANAR_TREE);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/options/servo");
}
END_TEST

/* Seeds and turns: a continuous joint is answered on the turn of its seed;
 * max_joint_step refuses a solution too far from the seed (reason
 * joint_step, the seed's joints, no motion) and reports the step of the
 * others; degrees and another frame convert seeds, targets and answers. */
START_TEST(test_seed_turns_step_units)
{
    json_t *chain = planar_chain();
    /* the seed two turns up on every joint (B keeps its joints): the
     * answer stays there */
    const double s0[4] = {0.3 + 4 * IK_PI, 0.5 + 4 * IK_PI, 0.4 + 4 * IK_PI, -0.2 + 4 * IK_PI};
    json_t *req = json_pack("{s:O, s:{s:{s:{s:[f,f,f]}}, s:s}, s:[f,f,f,f], s:{s:f, s:i}}", "chain",
                            chain, "target", "tips", "a_tip", "position", 1.0, 1.2, 0.0, "keep",
                            "joints", "seed", s0[0], s0[1], s0[2], s0[3], "options", "timeout_ms",
                            0.0, "max_iterations", 10000);
    json_t *res = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
    const json_t *q = json_object_get(res, "joints");
    for (size_t v = 0; v < 4; v++)
        ck_assert_double_le(fabs(json_number_value(json_array_get(q, v)) - s0[v]), IK_PI);
    double step = pc_num(res, "max_joint_step");
    ck_assert_double_gt(step, 0.01);
    json_decref(res);
    /* the same step refused */
    json_object_set_new(req, "options",
                        json_pack("{s:f, s:i, s:f}", "timeout_ms", 0.0, "max_iterations", 10000,
                                  "max_joint_step", 0.5 * step));
    res = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "no_ik_solution");
    ck_assert_str_eq(json_string_value(json_object_get(res, "reason")), "joint_step");
    q = json_object_get(res, "joints");
    for (size_t v = 0; v < 4; v++)
        ck_assert_double_eq_tol(json_number_value(json_array_get(q, v)), s0[v], 1e-12);
    json_decref(res);
    json_decref(req);
    /* degrees and Unity's convention: the same solve stated both ways
     * gives the same joints (in degrees), tips in Unity's axes */
    req = json_pack("{s:O, s:{s:{s:{s:[f,f,f]}}, s:s}, s:[f,f,f,f], s:{s:f, s:i}}", "chain", chain,
                    "target", "tips", "a_tip", "position", 1.0, 1.2, 0.0, "keep", "joints", "seed",
                    0.3, 0.5, 0.4, -0.2, "options", "timeout_ms", 0.0, "max_iterations", 5000);
    json_t *ros = solve(req, PROTO_SOLVE);
    json_decref(req);
    /* ROS (x, y, z) is Unity (-y, z, x) */
    req = json_pack("{s:O, s:{s:{s:{s:[f,f,f]}}, s:s}, s:[f,f,f,f], s:{s:s, s:s, s:f, s:i}}",
                    "chain", chain, "target", "tips", "a_tip", "position", -1.2, 0.0, 1.0, "keep",
                    "joints", "seed", 0.3 * 180 / IK_PI, 0.5 * 180 / IK_PI, 0.4 * 180 / IK_PI,
                    -0.2 * 180 / IK_PI, "options", "units", "degrees", "frame", "unity",
                    "timeout_ms", 0.0, "max_iterations", 5000);
    json_t *unity = solve(req, PROTO_SOLVE);
    for (size_t v = 0; v < 4; v++)
        ck_assert_double_eq_tol(
            json_number_value(json_array_get(json_object_get(unity, "joints"), v)),
            json_number_value(json_array_get(json_object_get(ros, "joints"), v)) * 180 / IK_PI,
            1e-6);
    ik_vec3 pr =
        pc_vec(json_object_get(json_array_get(json_object_get(ros, "tips"), 1), "position"));
    ik_vec3 pu =
        pc_vec(json_object_get(json_array_get(json_object_get(unity, "tips"), 1), "position"));
    ck_assert_double_le(ik_vec3_dist(pu, ik_v3(-pr.y, pr.z, pr.x)), 1e-9);
    json_decref(ros);
    json_decref(unity);
    json_decref(req);
    json_decref(chain);
}
END_TEST

/* ---- streams ------------------------------------------------------------ */

/* A stream on both PR2 arms from base_link (the torso shared), opened with
 * the arms' state as its seed (continuous joints on other turns), follows
 * a smooth motion of the whole tree: every target by tree_fk of joints
 * moving a little each step, each solve warm-started by the session. Every
 * answer is on target, no joint moves more than 0.2 rad between
 * consecutive answers (no flips), continuous joints stay on their turn. */
START_TEST(test_stream_smooth)
{
    test_tree t;
    urdf_tree(&t, "pr2", "base_link", PR2_TIPS, 2);
    json_t *d = describe(t.chain);
    const json_t *names = json_object_get(d, "joint_names"), *js = json_object_get(d, "joints");
    const size_t n = json_array_size(names);
    ik_rng r = {42};
    json_t *q0 = random_joints(d, &r);
    double q[64], dq[64], prev[64];
    for (size_t v = 0; v < n; v++) {
        q[v] = json_number_value(json_array_get(q0, v));
        dq[v] = ik_rng_uniform(&r, -0.01, 0.01);
        if (!json_object_get(json_array_get(js, v), "lower"))
            q[v] += 2 * IK_PI; /* the arm's wrist a turn up */
        prev[v] = q[v];
    }
    json_t *seed = json_array();
    for (size_t v = 0; v < n; v++)
        json_array_append_new(seed, json_real(q[v]));
    proto_error e;
    proto_chain *c = proto_chain_decode_json(t.chain, "/chain", NULL, &e);
    ck_assert_ptr_nonnull(c);
    proto_session *s = NULL;
    json_t *opts = json_pack("{s:f, s:i}", "timeout_ms", 0.0, "max_iterations", 10000);
    ck_assert_msg(proto_session_open(c, opts, seed, NULL, &s, &e) == 0, "%s at %s", e.message,
                  e.path);
    proto_chain_unref(c);
    for (int k = 0; k < 60; k++) {
        for (size_t v = 0; v < n; v++) {
            const json_t *j = json_array_get(js, v);
            double x = q[v] + dq[v];
            if (json_object_get(j, "lower") &&
                (x < pc_num(j, "lower") + 0.02 || x > pc_num(j, "upper") - 0.02))
                dq[v] = -dq[v]; /* turn back inside the limits */
            q[v] += dq[v];
        }
        json_t *qj = json_array();
        for (size_t v = 0; v < n; v++)
            json_array_append_new(qj, json_real(q[v]));
        json_t *tg = full_pose_target(&t, d, qj);
        proto_job *job = NULL;
        ck_assert_msg(proto_session_target(s, tg, NULL, &job, &e) == 0, "%s at %s", e.message,
                      e.path);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_msg(check_full_pose(&t, d, tg, names, res, 1e-5), "step %d: %s", k,
                      json_string_value(json_object_get(res, "status")));
        const json_t *a = json_object_get(res, "joints");
        for (size_t v = 0; v < n; v++) {
            double x = json_number_value(json_array_get(a, v));
            ck_assert_msg(fabs(x - prev[v]) <= 0.2, "step %d: joint %s jumps from %g to %g", k,
                          json_string_value(json_array_get(names, v)), prev[v], x);
            prev[v] = x;
        }
        ck_assert_double_le(pc_num(res, "max_joint_step"), 0.2);
        proto_session_solved(s, job);
        json_decref(res);
        json_decref(tg);
        json_decref(qj);
    }
    proto_session_free(s);
    json_decref(opts);
    json_decref(seed);
    json_decref(q0);
    json_decref(d);
    tree_free(&t);
}
END_TEST

/* A path on a tree stream: waypoints are tree targets; each sample's tip
 * positions are interpolated between the waypoints around it (linearly),
 * its orientations by slerp, the rest (priorities, the tips without a
 * target, keep) from the segment's first waypoint; every sample's answer is
 * on its interpolated target and continues the previous one. A waypoint
 * that is not a tree target is refused at its path. */
START_TEST(test_stream_path)
{
    json_t *chain = planar_chain();
    proto_error e;
    proto_chain *c = proto_chain_decode_json(chain, "/chain", NULL, &e);
    ck_assert_ptr_nonnull(c);
    proto_session *s = NULL;
    json_t *seed = json_pack("[f,f,f,f]", 0.3, 0.5, 0.4, -0.2);
    json_t *opts = json_pack("{s:f, s:i}", "timeout_ms", 0.0, "max_iterations", 10000);
    ck_assert_int_eq(proto_session_open(c, opts, seed, NULL, &s, &e), 0);
    /* three waypoints from poses of the tree: A's position, B's x and yaw
     * (4 constraints on 4 joints) */
    const double wq[3][4] = {{0.3, 0.5, 0.4, -0.2}, {0.5, 0.3, 0.6, -0.1}, {0.7, 0.1, 0.8, 0.0}};
    double ax[3], ay[3], bx[3], byaw[3];
    json_t *wps = json_array();
    for (int w = 0; w < 3; w++) {
        const double *q = wq[w];
        ax[w] = LA0 * cos(q[0]) + LA1 * cos(q[0] + q[1]);
        ay[w] = LA0 * sin(q[0]) + LA1 * sin(q[0] + q[1]);
        bx[w] = -LB0 * cos(q[0]) - LB1 * cos(q[0] + q[2]) - LB2 * cos(q[0] + q[2] + q[3]);
        byaw[w] = q[0] + q[2] + q[3];
        ik_quat o = ik_quat_from_axis_angle(ik_v3(0, 0, 1), byaw[w]);
        json_array_append_new(
            wps,
            json_pack("{s:{s:{s:[f,f,f]}, s:{s:[f,f,f], s:[f,f,f,f], s:[i,i,i,i,i,i]}}}", "tips",
                      "a_tip", "position", ax[w], ay[w], 0.0, "b_tip", "position", bx[w], 0.0, 0.0,
                      "orientation", o.x, o.y, o.z, o.w, "weights", 1, 0, 0, 0, 0, 1));
    }
    json_t *msg = json_pack("{s:s, s:s, s:i, s:i, s:f, s:o}", "type", "path", "stream", "t", "seq",
                            5, "rate_hz", 10, "duration_s", 1.0, "waypoints", wps);
    char *text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(17));
    proto_stream_msg m;
    ck_assert_msg(proto_stream_decode(text, strlen(text), &m, &e) == 0, "%s at %s", e.message,
                  e.path);
    ck_assert_int_eq(m.type, PROTO_STREAM_PATH);
    ck_assert_msg(proto_session_path(s, m.path, &e) == 0, "%s at %s", e.message, e.path);
    size_t count = proto_stream_path_count(m.path);
    ck_assert_uint_eq(count, 11);
    double prev[4] = {0.3, 0.5, 0.4, -0.2};
    for (size_t i = 0; i < count; i++) {
        proto_job *job;
        ck_assert_int_eq(proto_session_sample(s, m.path, i, &job, &e), 0);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_msg(strcmp(json_string_value(json_object_get(res, "status")), "success") == 0,
                      "sample %zu: %s", i, json_string_value(json_object_get(res, "status")));
        /* the interpolated targets, computed here: sample i at i / 10 s of
         * 1 s, two segments */
        double u = (double)i / 10.0 * 2.0;
        size_t seg = u >= 1.0 ? 1 : 0;
        double f = u - (double)seg;
        const json_t *q = json_object_get(res, "joints");
        double sj = json_number_value(json_array_get(q, 0)),
               a = json_number_value(json_array_get(q, 1));
        double b1 = json_number_value(json_array_get(q, 2)),
               b2 = json_number_value(json_array_get(q, 3));
        double px = LA0 * cos(sj) + LA1 * cos(sj + a), py = LA0 * sin(sj) + LA1 * sin(sj + a);
        ck_assert_double_le(fabs(px - (ax[seg] + f * (ax[seg + 1] - ax[seg]))), 1e-5);
        ck_assert_double_le(fabs(py - (ay[seg] + f * (ay[seg + 1] - ay[seg]))), 1e-5);
        double wx = -LB0 * cos(sj) - LB1 * cos(sj + b1) - LB2 * cos(sj + b1 + b2);
        ck_assert_double_le(fabs(wx - (bx[seg] + f * (bx[seg + 1] - bx[seg]))), 1e-5);
        /* slerp about one axis: the yaw moves linearly */
        ck_assert_double_le(
            fabs(ik_wrap_angle(sj + b1 + b2 - (byaw[seg] + f * (byaw[seg + 1] - byaw[seg])))),
            1e-5);
        for (size_t v = 0; v < 4; v++) {
            double x = json_number_value(json_array_get(q, v));
            ck_assert_double_le(fabs(x - prev[v]), 0.3);
            prev[v] = x;
        }
        json_decref(res);
        proto_session_solved(s, job);
    }
    proto_stream_msg_free(&m);
    free(text);
    json_decref(msg);
    /* single-chain waypoints on a tree are refused where they are */
    const char *bad = "{\"type\":\"path\",\"stream\":\"t\",\"seq\":6,\"waypoints\":[{\"tips\":"
                      "{\"a_tip\":{\"position\":[1.0,1.1,0]}}},{\"position\":[1,1,0]}]}";
    ck_assert_int_eq(proto_stream_decode(bad, strlen(bad), &m, &e), 0);
    ck_assert_int_eq(proto_session_path(s, m.path, &e), -1);
    ck_assert_str_eq(e.path, "/waypoints/1/position");
    proto_stream_msg_free(&m);
    proto_session_free(s);
    json_decref(opts);
    json_decref(seed);
    proto_chain_unref(c);
    json_decref(chain);
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
    tcase_add_test(ts, test_priorities_conflict);
    tcase_add_test(ts, test_out_of_reach);
    tcase_add_test(ts, test_keep_and_weight);
    tcase_add_test(ts, test_objectives);
    tcase_add_test(ts, test_target_errors);
    tcase_add_test(ts, test_seed_turns_step_units);
    tcase_add_test(ts, test_stream_smooth);
    tcase_add_test(ts, test_stream_path);
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
