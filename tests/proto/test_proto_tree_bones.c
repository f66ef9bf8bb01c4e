/*
 * test_proto_tree_bones.c: trees of a skeleton's bones over the wire format
 * (proto/proto_kind_tree.c, a tree chain given by "bones"): a character's end
 * bones as the tips of one tree, each bone on their paths turning as a ball
 * joint, answered as local rotations and tip poses.
 *
 * Every answer is checked here, never by the solver's own kinematics: the
 * test composes the skeleton chain's definition itself (a bone's global
 * transform is its parent's times translation * rotation * scale, as 3x4
 * affine maps, bones_fk below) with the answered local rotations, and
 * checks the answered positions and tip poses against it, the tips on
 * their targets, every bone as long as in the chain, and the bones off the
 * tips' paths unturned. Covered:
 *   - the chain: its description (bones, each tip's bones from its root,
 *     the bones shared), content-addressed ids, the cost a solve is given
 *     (heavy: the pool, not the loop), and every rejection with
 *     its JSON path (a non-uniform or negative scale above a tip, unknown
 *     and repeated tips, too many bones on a path or in all, mixed forms,
 *     a skeleton chain given tips, options and seeds that do not apply);
 *   - solves: full poses of the three tips from random poses of the
 *     skeleton, single solves from the chain's pose and a batch from
 *     seeds; a uniform scale above the tips and non-uniform ones on a tip
 *     and off the paths;
 *   - keep rules (pose: the feet stay; joints: the legs' bones stay),
 *     max_joint_step (the largest bone turn, refused with the seed
 *     returned), and the same skeleton written in Unity's convention
 *     answering the same pose;
 *   - a stream along a smooth motion: each answer continues the previous
 *     one (no bone turns more than the motion asks).
 * The CMU walk over a real WebSocket is tests/server/test_tree_skeleton.py.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_session.h"
#include "solver/ik_math.h"
#include "solver/ik_rng.h"
#include "tests/proto/proto_check.h"

/* ---- the skeleton and its forward kinematics, written here --------------- */

#define NB 11

typedef struct test_bone {
    const char *name;
    int parent;
    double t[3], q[4], s[3];
} test_bone;

/* A character standing on bent legs, an arm forward; the spine scales
 * uniformly (above the hand), the left foot (a tip) and the head (off the
 * paths) non-uniformly. */
static const test_bone SKEL[NB] = {
    {"pelvis", -1, {0, 0, 1}, {0, 0, 0, 1}, {1, 1, 1}},
    {"l_thigh", 0, {0, 0.1, 0}, {0, -0.258819, 0, 0.9659258}, {1, 1, 1}},
    {"l_shin", 1, {0, 0, -0.45}, {0, 0.5, 0, 0.8660254}, {1, 1, 1}},
    {"l_foot", 2, {0, 0, -0.45}, {0, -0.258819, 0, 0.9659258}, {1.5, 0.8, 1}},
    {"r_thigh", 0, {0, -0.1, 0}, {0, -0.258819, 0, 0.9659258}, {1, 1, 1}},
    {"r_shin", 4, {0, 0, -0.45}, {0, 0.5, 0, 0.8660254}, {1, 1, 1}},
    {"r_foot", 5, {0, 0, -0.45}, {0, -0.258819, 0, 0.9659258}, {1, 1, 1}},
    {"spine", 0, {0, 0, 0.1}, {0, 0, 0, 1}, {1.1, 1.1, 1.1}},
    {"l_arm", 7, {0, 0.2, 0.4}, {0, 0.3826834, 0, 0.9238795}, {1, 1, 1}},
    {"l_hand", 8, {0, 0, -0.3}, {0, 0, 0, 1}, {1, 1, 1}},
    {"head", 7, {0, 0, 0.5}, {0, 0, 0, 1}, {1.2, 1, 0.9}},
};
static const char *const TIPS[3] = {"l_foot", "r_foot", "l_hand"};
static const int TIP_BONE[3] = {3, 6, 9};
/* on a tip's path: every bone but the head */
static const bool ON_PATH[NB] = {true, true, true, true, true, true, true, true, true, true, false};

static ik_quat chain_rot(size_t b)
{
    return ik_quat_normalize((ik_quat){SKEL[b].q[0], SKEL[b].q[1], SKEL[b].q[2], SKEL[b].q[3]});
}

/* The chain object (frame NULL: no "frame" member, ROS). */
static json_t *skeleton_chain(const char *frame)
{
    json_t *bones = json_array();
    for (size_t b = 0; b < NB; b++) {
        const test_bone *s = &SKEL[b];
        json_t *o = json_pack("{s:s, s:[f,f,f], s:[f,f,f,f], s:[f,f,f]}", "name", s->name,
                              "translation", s->t[0], s->t[1], s->t[2], "rotation", s->q[0],
                              s->q[1], s->q[2], s->q[3], "scale", s->s[0], s->s[1], s->s[2]);
        if (s->parent >= 0)
            json_object_set_new(o, "parent", json_string(SKEL[s->parent].name));
        json_array_append_new(bones, o);
    }
    json_t *c = json_pack("{s:s, s:o, s:[s,s,s]}", "kind", "tree", "bones", bones, "tips", TIPS[0],
                          TIPS[1], TIPS[2]);
    if (frame)
        json_object_set_new(c, "frame", json_string(frame));
    return c;
}

typedef struct frames {
    double M[NB][12]; /* global 3x4, row-major */
    ik_quat Q[NB];    /* the rotations alone, composed */
} frames;

/* The skeleton chain's definition: G = G_parent * T(t) * R(q) * S(s). */
static void bones_fk(const ik_quat *q, frames *f)
{
    for (size_t b = 0; b < NB; b++) {
        const test_bone *s = &SKEL[b];
        ik_quat qb = ik_quat_normalize(q[b]);
        double R[9], L[12];
        ik_quat_to_mat3(qb, R);
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++)
                L[4 * r + c] = R[3 * r + c] * s->s[c];
            L[4 * r + 3] = s->t[r];
        }
        if (s->parent < 0) {
            memcpy(f->M[b], L, sizeof L);
            f->Q[b] = qb;
            continue;
        }
        const double *P = f->M[s->parent];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++)
                f->M[b][4 * r + c] = P[4 * r] * L[c] + P[4 * r + 1] * L[4 + c] +
                                     P[4 * r + 2] * L[8 + c] + (c == 3 ? P[4 * r + 3] : 0.0);
        f->Q[b] = ik_quat_normalize(ik_quat_mul(f->Q[s->parent], qb));
    }
}

static ik_vec3 origin(const frames *f, size_t b)
{
    return ik_v3(f->M[b][3], f->M[b][7], f->M[b][11]);
}

static void rotations_of(const json_t *a, ik_quat *q)
{
    ck_assert_uint_eq(json_array_size(a), NB);
    for (size_t b = 0; b < NB; b++)
        q[b] = pc_quat(json_array_get(a, b));
}

static json_t *quats_json(const ik_quat *q)
{
    json_t *a = json_array();
    for (size_t b = 0; b < NB; b++)
        json_array_append_new(a, json_pack("[f,f,f,f]", q[b].x, q[b].y, q[b].z, q[b].w));
    return a;
}

static json_t *pose_json(ik_vec3 p, ik_quat q)
{
    return json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", p.x, p.y, p.z, "orientation", q.x, q.y,
                     q.z, q.w);
}

/* Checks an answer started from rotations start: positions and tip poses
 * those of bones_fk, every bone as long as in the chain, the head
 * unturned, tips answered success on their target (want: each tip's pose,
 * pos_only: position only; NULL: not checked). Returns whether the answer
 * says success. */
static bool check_answer(const json_t *res, const ik_quat *start, const ik_xform *want,
                         const bool *pos_only, double tol)
{
    ik_quat q[NB], q0[NB];
    rotations_of(json_object_get(res, "rotations"), q);
    frames f, f0;
    bones_fk(q, &f);
    for (size_t b = 0; b < NB; b++)
        q0[b] = chain_rot(b);
    bones_fk(q0, &f0);
    const json_t *pos = json_object_get(res, "positions");
    ck_assert_uint_eq(json_array_size(pos), NB);
    for (size_t b = 0; b < NB; b++) {
        ck_assert_double_le(ik_vec3_dist(pc_vec(json_array_get(pos, b)), origin(&f, b)), 1e-9);
        const int p = SKEL[b].parent;
        if (p >= 0) {
            double l0 = ik_vec3_dist(origin(&f0, b), origin(&f0, (size_t)p));
            ck_assert_double_eq_tol(ik_vec3_dist(origin(&f, b), origin(&f, (size_t)p)), l0,
                                    1e-9 * (1 + l0));
        }
        if (!ON_PATH[b])
            ck_assert_double_le(ik_quat_angle_between(q[b], start[b]), 1e-9);
    }
    const json_t *tips = json_object_get(res, "tips");
    ck_assert_uint_eq(json_array_size(tips), 3);
    bool ok = strcmp(json_string_value(json_object_get(res, "status")), "success") == 0;
    for (size_t k = 0; k < 3; k++) {
        const json_t *a = json_array_get(tips, k);
        const size_t b = (size_t)TIP_BONE[k];
        ck_assert_double_le(ik_vec3_dist(pc_vec(json_object_get(a, "position")), origin(&f, b)),
                            1e-9);
        ck_assert_double_le(
            ik_quat_angle_between(pc_quat(json_object_get(a, "orientation")), f.Q[b]), 1e-7);
        if (!want)
            continue;
        const char *st = json_string_value(json_object_get(a, "status"));
        if (!ok && (!st || strcmp(st, "success") != 0))
            continue;
        ik_vec3 d = ik_vec3_sub(origin(&f, b), want[k].p);
        ck_assert_msg(fabs(d.x) <= tol && fabs(d.y) <= tol && fabs(d.z) <= tol,
                      "tip %s answered success %g away", TIPS[k], ik_vec3_len(d));
        if (!pos_only || !pos_only[k]) {
            ik_vec3 rv = ik_quat_to_rotvec(ik_quat_mul(want[k].q, ik_quat_conj(f.Q[b])));
            ck_assert_msg(fabs(rv.x) <= tol && fabs(rv.y) <= tol && fabs(rv.z) <= tol,
                          "tip %s answered success turned %g", TIPS[k], ik_vec3_len(rv));
        }
    }
    return ok;
}

/* A random pose: each bone on the paths turned from the chain's rotation
 * by up to max rad about a random axis. */
static void random_pose(ik_rng *r, double max, ik_quat *q)
{
    for (size_t b = 0; b < NB; b++) {
        q[b] = chain_rot(b);
        if (!ON_PATH[b])
            continue;
        ik_vec3 ax = ik_vec3_normalize(
            ik_v3(ik_rng_uniform(r, -1, 1), ik_rng_uniform(r, -1, 1), ik_rng_uniform(r, -1, 1)));
        q[b] = ik_quat_mul(q[b], ik_quat_from_axis_angle(ax, ik_rng_uniform(r, 0, max)));
    }
}

static json_t *full_pose_target(const ik_quat *q, ik_xform *want)
{
    frames f;
    bones_fk(q, &f);
    json_t *tips = json_object();
    for (size_t k = 0; k < 3; k++) {
        want[k].p = origin(&f, (size_t)TIP_BONE[k]);
        want[k].q = f.Q[TIP_BONE[k]];
        json_object_set_new(tips, TIPS[k], pose_json(want[k].p, want[k].q));
    }
    return json_pack("{s:o}", "tips", tips);
}

static json_t *solve(json_t *req, proto_kind kind)
{
    char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    proto_error e;
    json_t *r = pc_solve(b, kind, &e);
    ck_assert_msg(r != NULL, "rejected: %s at %s", e.message, e.path);
    free(b);
    return r;
}

static void reject(json_t *req, const char *code, int status, const char *path)
{
    char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    pc_reject(b, PROTO_SOLVE, code, status, path);
    free(b);
}

static json_t *describe(json_t *chain)
{
    proto_error e;
    proto_chain *c = proto_chain_decode_json(chain, "", NULL, &e);
    ck_assert_msg(c != NULL, "%s at %s", e.message, e.path);
    json_t *d = proto_chain_describe(c);
    proto_chain_unref(c);
    return d;
}

/* ---- the chain --------------------------------------------------------- */

START_TEST(test_bones_chain)
{
    json_t *chain = skeleton_chain(NULL);
    json_t *d = describe(chain);
    ck_assert_str_eq(json_string_value(json_object_get(d, "kind")), "tree");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "bones")), NB);
    ck_assert_ptr_null(json_object_get(d, "dof"));
    ck_assert_ptr_null(json_object_get(d, "joints"));
    ck_assert_ptr_null(json_object_get(d, "joint_names"));
    const json_t *names = json_object_get(d, "bone_names");
    ck_assert_uint_eq(json_array_size(names), NB);
    for (size_t b = 0; b < NB; b++)
        ck_assert_str_eq(json_string_value(json_array_get(names, b)), SKEL[b].name);
    json_t *want = json_pack("[{s:s, s:[s,s,s,s]}, {s:s, s:[s,s,s,s]}, {s:s, s:[s,s,s,s]}]", "name",
                             "l_foot", "bones", "pelvis", "l_thigh", "l_shin", "l_foot", "name",
                             "r_foot", "bones", "pelvis", "r_thigh", "r_shin", "r_foot", "name",
                             "l_hand", "bones", "pelvis", "spine", "l_arm", "l_hand");
    ck_assert(json_equal(json_object_get(d, "tips"), want));
    json_decref(want);
    want = json_pack("[s]", "pelvis");
    ck_assert(json_equal(json_object_get(d, "shared_bones"), want));
    json_decref(want);
    want = json_pack("[s]", "numeric");
    ck_assert(json_equal(json_object_get(d, "solvers"), want));
    json_decref(want);
    ck_assert_int_gt(json_integer_value(json_object_get(d, "memory_bytes")), 1000);
    /* a solve costs what its 30 rotation angles cost the numeric solver:
     * the daemon sends it to the pool, not inline (solve.c) */
    json_t *req = json_pack("{s:O, s:{s:{s:{s:[f,f,f]}}}}", "chain", chain, "target", "tips",
                            "l_hand", "position", 0.3, 0.3, 1.2);
    char *body = json_dumps(req, JSON_COMPACT);
    proto_job *job = NULL;
    proto_error e;
    ck_assert_int_eq(proto_job_decode(body, strlen(body), PROTO_SOLVE, NULL, NULL, NULL, &job, &e),
                     0);
    ck_assert_double_ge(proto_job_cost_us(job), 50.0 * 30);
    proto_job_free(job);
    free(body);
    json_decref(req);
    /* a content address: the same chain written again has the same id */
    json_t *again = skeleton_chain(NULL);
    json_t *d2 = describe(again);
    ck_assert_str_eq(json_string_value(json_object_get(d, "id")),
                     json_string_value(json_object_get(d2, "id")));
    json_decref(d2);
    json_decref(again);
    json_decref(d);
    json_decref(chain);
}
END_TEST

static void chain_reject(json_t *chain, const char *code, int status, const char *path)
{
    json_t *req = json_pack("{s:o, s:{s:{}}}", "chain", chain, "target", "tips");
    reject(req, code, status, path);
    json_decref(req);
}

/* A chain of n bones in a row, each 0.1 along z, its last bone the tip. */
static json_t *row_chain(size_t n, const char *prefix)
{
    json_t *bones = json_array();
    char name[32], parent[32];
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s%zu", prefix, i);
        json_t *o = json_pack("{s:s, s:[f,f,f]}", "name", name, "translation", 0.0, 0.0, 0.1);
        if (i)
            json_object_set_new(o, "parent", json_string(parent));
        json_array_append_new(bones, o);
        snprintf(parent, sizeof parent, "%s", name);
    }
    return json_pack("{s:s, s:o, s:[s]}", "kind", "tree", "bones", bones, "tips", name);
}

START_TEST(test_bones_errors)
{
    json_t *c;
    /* a non-uniform scale above a tip (the spine, above the hand) */
    c = skeleton_chain(NULL);
    json_array_set_new(json_object_get(json_array_get(json_object_get(c, "bones"), 7), "scale"), 1,
                       json_real(1.2));
    chain_reject(c, "invalid_chain", 422, "/chain/bones/7/scale");
    /* a mirroring scale above a tip (the pelvis) */
    c = skeleton_chain(NULL);
    json_object_set_new(json_array_get(json_object_get(c, "bones"), 0), "scale",
                        json_pack("[f,f,f]", -1.0, -1.0, -1.0));
    chain_reject(c, "invalid_chain", 422, "/chain/bones/0/scale");
    /* the same scales on a tip's own bone and off the paths are fine */
    c = skeleton_chain(NULL);
    json_object_set_new(json_array_get(json_object_get(c, "bones"), 9), "scale",
                        json_pack("[f,f,f]", -1.0, 2.0, 1.0));
    json_decref(describe(c));
    json_decref(c);
    /* an end bone that is no bone; one named twice */
    c = skeleton_chain(NULL);
    json_object_set_new(c, "tips", json_pack("[s,s]", "l_foot", "nose"));
    chain_reject(c, "invalid_chain", 422, "/chain/tips/1");
    c = skeleton_chain(NULL);
    json_object_set_new(c, "tips", json_pack("[s,s]", "l_foot", "l_foot"));
    chain_reject(c, "invalid_chain", 422, "/chain/tips/1");
    /* no bound on the bones on the way to a tip but the whole tree's:
     * eleven bones (33 angles) and twenty-one (63) are fine */
    json_decref(describe(c = row_chain(11, "b")));
    json_decref(c);
    json_decref(describe(c = row_chain(21, "b")));
    json_decref(c);
    /* three tips of eight bones each: 24 bones, 72 angles (64 at most) */
    c = row_chain(8, "a");
    json_t *more = json_object_get(c, "bones");
    for (int t = 0; t < 2; t++) {
        json_t *other = row_chain(8, t ? "c" : "b");
        json_array_extend(more, json_object_get(other, "bones"));
        json_array_append(json_object_get(c, "tips"),
                          json_array_get(json_object_get(other, "tips"), 0));
        json_decref(other);
    }
    chain_reject(c, "too_large", 413, "/chain/tips");
    /* bones and joints together; a skeleton chain given tips */
    c = skeleton_chain(NULL);
    json_object_set_new(c, "joints", json_array());
    chain_reject(c, "invalid_request", 400, "/chain/joints");
    c = skeleton_chain(NULL);
    json_object_set_new(c, "kind", json_string("skeleton"));
    chain_reject(c, "invalid_request", 400, "/chain/tips");
    /* members of a joint list, and the bones' own checks */
    c = skeleton_chain(NULL);
    json_object_set_new(c, "units", json_string("degrees"));
    chain_reject(c, "invalid_request", 400, "/chain/units");
    c = skeleton_chain(NULL);
    json_object_set_new(json_array_get(json_object_get(c, "bones"), 2), "parent",
                        json_string("l_foot"));
    chain_reject(c, "invalid_chain", 422, "/chain/bones/2/parent");
    c = skeleton_chain(NULL);
    json_object_set_new(json_array_get(json_object_get(c, "bones"), 4), "name",
                        json_string("l_thigh"));
    chain_reject(c, "invalid_chain", 422, "/chain/bones/4/name");
    c = skeleton_chain(NULL);
    json_object_set_new(json_array_get(json_object_get(c, "bones"), 1), "scale",
                        json_pack("[f,f,f]", 1.0, 0.0, 1.0));
    chain_reject(c, "invalid_chain", 422, "/chain/bones/1/scale");
    /* requests: what does not apply to bones, seeds of the wrong form */
    json_t *target = json_pack("{s:{s:{s:[f,f,f]}}}", "tips", "l_hand", "position", 0.3, 0.3, 1.2);
    json_t *req = json_pack("{s:o, s:O, s:{s:s}}", "chain", skeleton_chain(NULL), "target", target,
                            "options", "objective", "mid_limits");
    reject(req, "invalid_request", 400, "/options/objective");
    json_object_set_new(req, "options", json_pack("{s:s}", "solver", "two_bone"));
    reject(req, "invalid_request", 400, "/options/solver");
    json_object_set_new(req, "options", json_pack("{s:f}", "max_joint_step", 0.1));
    reject(req, "invalid_request", 400, "/options/max_joint_step");
    json_object_del(req, "options");
    ik_quat q[NB];
    for (size_t b = 0; b < NB; b++)
        q[b] = chain_rot(b);
    json_t *seed = quats_json(q);
    json_array_remove(seed, NB - 1);
    json_object_set_new(req, "seed", seed);
    reject(req, "invalid_request", 400, "/seed");
    seed = quats_json(q);
    json_array_set_new(seed, 3, json_pack("[f,f,f,f]", 0.0, 0.0, 0.0, 0.5));
    json_object_set_new(req, "seed", seed);
    reject(req, "invalid_request", 400, "/seed/3");
    json_object_set_new(req, "seed", json_pack("[f,f,f]", 0.0, 0.0, 0.0));
    reject(req, "invalid_request", 400, "/seed");
    json_object_del(req, "seed");
    json_object_set_new(
        req, "target", json_pack("{s:{s:{s:[f,f,f]}}}", "tips", "head", "position", 0.0, 0.0, 1.6));
    reject(req, "invalid_request", 400, "/target/tips/head");
    json_decref(req);
    json_decref(target);
}
END_TEST

/* ---- solves ------------------------------------------------------------- */

/* Full poses of the three tips from random poses of the skeleton: single
 * solves from the chain's pose, then a batch, each target seeded with its
 * pose turned a little further; every answer checked. */
START_TEST(test_bones_random)
{
    ik_rng r = {7};
    const size_t n = 150;
    size_t ok = 0, bok = 0;
    json_t *targets = json_array(), *seeds = json_array();
    ik_xform *wants = calloc(3 * n, sizeof *wants);
    ik_quat(*starts)[NB] = calloc(n, sizeof *starts);
    ck_assert(wants && starts);
    ik_quat chain[NB];
    for (size_t b = 0; b < NB; b++)
        chain[b] = chain_rot(b);
    for (size_t i = 0; i < n; i++) {
        ik_quat q[NB];
        random_pose(&r, 0.6, q);
        json_t *target = full_pose_target(q, &wants[3 * i]);
        json_t *req = json_pack("{s:o, s:O, s:{s:f, s:i}}", "chain", skeleton_chain(NULL), "target",
                                target, "options", "timeout_ms", 0.0, "max_iterations", 10000);
        json_t *res = solve(req, PROTO_SOLVE);
        ok += check_answer(res, chain, &wants[3 * i], NULL, 1e-5);
        json_decref(res);
        json_decref(req);
        /* the batch's seed: the pose turned 0.2 rad further */
        for (size_t b = 0; b < NB; b++) {
            starts[i][b] = q[b];
            if (ON_PATH[b])
                starts[i][b] = ik_quat_mul(q[b], ik_quat_from_axis_angle(ik_v3(0, 1, 0), 0.2));
        }
        json_array_append_new(targets, target);
        json_array_append_new(seeds, quats_json(starts[i]));
    }
    ck_assert_msg(ok * 100 >= n * 99, "%zu of %zu", ok, n);
    json_t *req =
        json_pack("{s:o, s:o, s:o, s:{s:f, s:i}}", "chain", skeleton_chain(NULL), "targets",
                  targets, "seeds", seeds, "options", "timeout_ms", 0.0, "max_iterations", 10000);
    json_t *res = solve(req, PROTO_BATCH);
    const json_t *results = json_object_get(res, "results");
    ck_assert_uint_eq(json_array_size(results), n);
    for (size_t i = 0; i < n; i++) {
        const json_t *ri = json_array_get(results, i);
        bok += check_answer(ri, starts[i], &wants[3 * i], NULL, 1e-5);
        /* from a seed: the largest bone turn is answered */
        double turn = 0;
        ik_quat q[NB];
        rotations_of(json_object_get(ri, "rotations"), q);
        for (size_t b = 0; b < NB; b++)
            turn = fmax(turn, ik_quat_angle_between(q[b], starts[i][b]));
        ck_assert_double_eq_tol(pc_num(ri, "max_joint_step"), turn, 1e-9);
    }
    ck_assert_msg(bok * 100 >= n * 99, "batch: %zu of %zu", bok, n);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "counts"), "success")),
                     (json_int_t)bok);
    json_decref(res);
    json_decref(req);
    free(wants);
    free(starts);
}
END_TEST

/* keep pose: a hand target, the feet hold the poses they start in; keep
 * joints: the legs' bones do not turn; max_joint_step refuses an answer
 * that turns a bone farther (the seed returned, the turn refused said). */
START_TEST(test_bones_keep_and_step)
{
    ik_quat q0[NB];
    for (size_t b = 0; b < NB; b++)
        q0[b] = chain_rot(b);
    frames f0;
    bones_fk(q0, &f0);
    ik_xform want[3];
    for (size_t k = 0; k < 3; k++) {
        want[k].p = origin(&f0, (size_t)TIP_BONE[k]);
        want[k].q = f0.Q[TIP_BONE[k]];
    }
    want[2].p = ik_vec3_add(want[2].p, ik_v3(0.15, 0.1, 0.1));
    const bool pos_only[3] = {false, false, true};
    json_t *target = json_pack("{s:{s:{s:[f,f,f]}}}", "tips", "l_hand", "position", want[2].p.x,
                               want[2].p.y, want[2].p.z);
    json_t *req = json_pack("{s:o, s:O, s:{s:f, s:i}}", "chain", skeleton_chain(NULL), "target",
                            target, "options", "timeout_ms", 0.0, "max_iterations", 10000);
    json_t *res = solve(req, PROTO_SOLVE);
    ck_assert(check_answer(res, q0, want, pos_only, 1e-5));
    /* the feet were checked (kept poses) and the pelvis turned for the hand */
    const json_t *tips = json_object_get(res, "tips");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, 0), "status")),
                     "success");
    ik_quat q[NB];
    rotations_of(json_object_get(res, "rotations"), q);
    ck_assert_double_gt(ik_quat_angle_between(q[0], q0[0]), 1e-3);
    json_decref(res);
    /* keep joints: the legs stay, their tips unchecked */
    json_object_set_new(target, "keep", json_string("joints"));
    res = solve(req, PROTO_SOLVE);
    ck_assert(check_answer(res, q0, NULL, NULL, 1e-5));
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
    rotations_of(json_object_get(res, "rotations"), q);
    for (size_t b = 1; b <= 6; b++)
        ck_assert_double_le(ik_quat_angle_between(q[b], q0[b]), 1e-12);
    tips = json_object_get(res, "tips");
    ck_assert_ptr_null(json_object_get(json_array_get(tips, 0), "status"));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, 2), "status")),
                     "success");
    json_decref(res);
    /* max_joint_step from a seed, in degrees: 1 degree is too little */
    json_object_set_new(req, "seed", quats_json(q0));
    json_object_set_new(req, "options",
                        json_pack("{s:f, s:i, s:f, s:s}", "timeout_ms", 0.0, "max_iterations",
                                  10000, "max_joint_step", 1.0, "units", "degrees"));
    res = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "no_ik_solution");
    ck_assert_str_eq(json_string_value(json_object_get(res, "reason")), "joint_step");
    rotations_of(json_object_get(res, "rotations"), q);
    for (size_t b = 0; b < NB; b++)
        ck_assert_double_le(ik_quat_angle_between(q[b], q0[b]), 1e-12);
    ck_assert_double_gt(pc_num(res, "max_joint_step"), 1.0);
    json_decref(res);
    json_decref(req);
    json_decref(target);
}
END_TEST

/* Unity's convention (y up, left-handed): ROS (x, y, z) is Unity's
 * (z, -x, y). A vector v_ros is Unity's (-y, z, x); a rotation keeps its
 * angle about the axis seen in the other convention, which turns the other
 * way in a mirror: q_unity = (-(axis in Unity), w). */
static ik_vec3 to_unity(ik_vec3 v)
{
    return ik_v3(-v.y, v.z, v.x);
}

static ik_quat quat_to_unity(ik_quat q)
{
    ik_vec3 v = to_unity(ik_v3(q.x, q.y, q.z));
    return (ik_quat){-v.x, -v.y, -v.z, q.w};
}

/* The skeleton written in Unity's convention, with targets and answers in
 * it, answers the ROS skeleton's pose: the same rotations and positions
 * seen in Unity. */
START_TEST(test_bones_unity)
{
    ik_rng r = {3};
    ik_quat q[NB];
    random_pose(&r, 0.5, q);
    ik_xform want[3];
    json_t *target = full_pose_target(q, want);
    json_t *opts = json_pack("{s:f, s:i}", "timeout_ms", 0.0, "max_iterations", 10000);
    json_t *req = json_pack("{s:o, s:O, s:O}", "chain", skeleton_chain(NULL), "target", target,
                            "options", opts);
    json_t *ros = solve(req, PROTO_SOLVE);
    ik_quat q0[NB];
    for (size_t b = 0; b < NB; b++)
        q0[b] = chain_rot(b);
    ck_assert(check_answer(ros, q0, want, NULL, 1e-5));
    json_decref(req);
    /* the chain in Unity: translations and rotations converted, scales'
     * components permuted (x, y, z of ROS are Unity's z, x, y) */
    json_t *chain = skeleton_chain("unity");
    json_t *bones = json_object_get(chain, "bones");
    for (size_t b = 0; b < NB; b++) {
        json_t *o = json_array_get(bones, b);
        ik_vec3 t = to_unity(ik_v3(SKEL[b].t[0], SKEL[b].t[1], SKEL[b].t[2]));
        ik_quat qu = quat_to_unity(chain_rot(b));
        json_object_set_new(o, "translation", json_pack("[f,f,f]", t.x, t.y, t.z));
        json_object_set_new(o, "rotation", json_pack("[f,f,f,f]", qu.x, qu.y, qu.z, qu.w));
        json_object_set_new(o, "scale",
                            json_pack("[f,f,f]", SKEL[b].s[1], SKEL[b].s[2], SKEL[b].s[0]));
    }
    json_t *tips = json_object();
    for (size_t k = 0; k < 3; k++) {
        ik_vec3 p = to_unity(want[k].p);
        json_object_set_new(tips, TIPS[k], pose_json(p, quat_to_unity(want[k].q)));
    }
    json_object_set_new(opts, "frame", json_string("unity"));
    req = json_pack("{s:o, s:{s:o}, s:O}", "chain", chain, "target", "tips", tips, "options", opts);
    json_t *uni = solve(req, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(uni, "frame")), "unity");
    ck_assert_str_eq(json_string_value(json_object_get(uni, "status")), "success");
    const json_t *rr = json_object_get(ros, "rotations"), *ru = json_object_get(uni, "rotations");
    const json_t *pr = json_object_get(ros, "positions"), *pu = json_object_get(uni, "positions");
    for (size_t b = 0; b < NB; b++) {
        ck_assert_double_le(ik_quat_angle_between(quat_to_unity(pc_quat(json_array_get(rr, b))),
                                                  pc_quat(json_array_get(ru, b))),
                            1e-6);
        ck_assert_double_le(
            ik_vec3_dist(to_unity(pc_vec(json_array_get(pr, b))), pc_vec(json_array_get(pu, b))),
            1e-6);
    }
    json_decref(uni);
    json_decref(req);
    json_decref(ros);
    json_decref(target);
    json_decref(opts);
}
END_TEST

/* A stream along a smooth motion of the whole skeleton: every answer on
 * target, and no bone turns more from one answer to the next than the
 * motion turns it (plus a margin): the warm start continues each answer
 * from the previous local rotations. */
START_TEST(test_bones_stream)
{
    ik_rng r = {11};
    ik_vec3 axis[NB];
    double rate[NB];
    for (size_t b = 0; b < NB; b++) {
        axis[b] = ik_vec3_normalize(
            ik_v3(ik_rng_uniform(&r, -1, 1), ik_rng_uniform(&r, -1, 1), ik_rng_uniform(&r, -1, 1)));
        rate[b] = ON_PATH[b] ? ik_rng_uniform(&r, -0.02, 0.02) : 0.0;
    }
    ik_quat q0[NB];
    for (size_t b = 0; b < NB; b++)
        q0[b] = chain_rot(b);
    json_t *chain = skeleton_chain(NULL);
    proto_error e;
    proto_chain *c = proto_chain_decode_json(chain, "/chain", NULL, &e);
    ck_assert_msg(c != NULL, "%s at %s", e.message, e.path);
    proto_session *s = NULL;
    json_t *opts = json_pack("{s:f, s:i}", "timeout_ms", 0.0, "max_iterations", 10000);
    json_t *seed = quats_json(q0);
    ck_assert_msg(proto_session_open(c, opts, seed, NULL, &s, &e) == 0, "%s at %s", e.message,
                  e.path);
    proto_chain_unref(c);
    ik_quat prev[NB];
    memcpy(prev, q0, sizeof prev);
    for (int k = 1; k <= 40; k++) {
        ik_quat q[NB];
        for (size_t b = 0; b < NB; b++)
            q[b] = ik_quat_mul(q0[b], ik_quat_from_axis_angle(axis[b], rate[b] * k));
        ik_xform want[3];
        json_t *tg = full_pose_target(q, want);
        proto_job *job = NULL;
        ck_assert_msg(proto_session_target(s, tg, NULL, &job, &e) == 0, "%s at %s", e.message,
                      e.path);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_msg(check_answer(res, q0, want, NULL, 1e-5), "step %d", k);
        ik_quat got[NB];
        rotations_of(json_object_get(res, "rotations"), got);
        double turn = 0;
        for (size_t b = 0; b < NB; b++)
            turn = fmax(turn, ik_quat_angle_between(got[b], prev[b]));
        ck_assert_msg(turn <= 0.1, "step %d: a bone turns %g rad", k, turn);
        ck_assert_double_eq_tol(pc_num(res, "max_joint_step"), turn, 1e-9);
        memcpy(prev, got, sizeof prev);
        proto_session_solved(s, job);
        json_decref(res);
        json_decref(tg);
    }
    proto_session_free(s);
    json_decref(seed);
    json_decref(opts);
    json_decref(chain);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_tree_bones");
    TCase *tc = tcase_create("bones");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_bones_chain);
    tcase_add_test(tc, test_bones_errors);
    tcase_add_test(tc, test_bones_random);
    tcase_add_test(tc, test_bones_keep_and_step);
    tcase_add_test(tc, test_bones_unity);
    tcase_add_test(tc, test_bones_stream);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
