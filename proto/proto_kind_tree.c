/*
 * proto_kind_tree.c: tree chains on the wire (kind "tree"): several end
 * effectors over shared joints, both arms of a robot from its torso or a
 * character's feet and hands from its hips, solved together by
 * solver/ik_tree.h. The JSON is in proto/README.md, section "tree".
 *
 * A tree chain is given as a URDF document, a base link and tip links
 * (the paths from the base to every tip, read by proto_urdf_doc_tree from
 * the one parse the collision model reads too, each joint once however
 * many tips it moves), as a
 * joint list whose joints name their parent joint (URDF semantics joint by
 * joint, as a joints chain's, plus "parent": an earlier joint, or none for
 * the root) and the joints that end the tips, or as a skeleton's bones
 * (the skeleton chain's translate-rotate-scale hierarchy) and the end
 * bones that are its tips. The chain keeps an ik_tree: its variables are
 * the movable joints in the order the tips' paths meet them (tip 0's from
 * the root first), which is the order of the answer's "joints" and of
 * seeds.
 *
 * A tree of bones: every bone on the way from its root to a tip (the tip
 * included) turns as a ball joint, three continuous joints about the
 * bone's own x, y and z axes after its rotation L, so that its local
 * rotation is L * Rx(a) * Ry(b) * Rz(c). L is where the solve starts (the
 * seed's local rotation, on a stream the previous answer's, else the
 * chain's own): each solve compiles the tree anew around its start, in
 * the caller's workspace, and starts from a = b = c = 0, so the angles
 * measure the motion from the start and their singularity (b a quarter
 * turn) is a quarter turn away from it. The answer is every bone's local
 * rotation (as a skeleton chain's) and each tip's pose. Scale: bone b's
 * children are placed at scale(b) times their translation in its frame,
 * so the scales above a tip must be uniform and positive (k times the
 * identity, which commutes with every rotation below: each child's origin
 * is k times its translation from its parent, rigidly, whatever the
 * rotations); a non-uniform scale there would shear the frames its
 * children turn in and change their lengths, and is refused. A tip's own
 * scale, and those of the bones off the paths, move nothing the solve
 * moves and may be anything. The tips' poses are the rigid part of their
 * frames (origin and rotation, without scale).
 *
 * A target on a tree names its tips: {"tips": {name: target, ...}, "keep":
 * "pose" | "joints"}, each tip's target a single chain's numeric target
 * (position, orientation or rotation, weights) plus "priority" (0 highest)
 * and "weight"; tips without one hold their pose (or their joints: keep).
 * The answer gives every joint and, per tip in tip_names order, its pose
 * and, when it was checked, its status and errors.
 *
 * Not here: the members shared with the other chains (proto_chain.c's
 * ids, description, joint objects), the request and stream plumbing
 * (proto_job_decode.c, proto_session.c), writing answers
 * (proto_job_encode.c).
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_urdf.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"

/* ---- chains --------------------------------------------------------- */

/* "tips": 1..IK_TREE_MAX_TIPS distinct non-empty names. */
static int tip_list(const json_t *o, const char *path, const char **tips, size_t *n,
                    proto_error *err)
{
    char p[PROTO_PATH_MAX];
    json_t *v = proto_json_require(o, path, "tips", err);
    proto_json_path_key(p, path, "tips");
    if (!v || proto_json_array(v, p, 1, IK_TREE_MAX_TIPS, true, n, err))
        return -1;
    for (size_t t = 0; t < *n; t++) {
        char pt[PROTO_PATH_MAX];
        proto_json_path_index(pt, p, t);
        if (proto_json_string(json_array_get(v, t), pt, PROTO_NAME_MAX - 1, &tips[t], err))
            return -1;
        if (!tips[t][0])
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, pt, "names must not be empty");
        for (size_t u = 0; u < t; u++)
            if (strcmp(tips[t], tips[u]) == 0)
                return proto_error_set(err, PROTO_E_INVALID_CHAIN, pt, "tip \"%s\" is named twice",
                                       tips[t]);
    }
    return 0;
}

/* ik_tree_init() into one allocation, the view then its storage, freed
 * with free(): c->tree, its storage's size in c->tree_storage. Returns 0;
 * 1 when the solver refuses the joints; -1 when out of memory. */
static int tree_alloc(proto_chain *c, const ik_joint *j, const int *parent, size_t n,
                      const size_t *tip_joint, size_t ntips)
{
    const size_t store = ik_tree_storage_size(parent, n, tip_joint, ntips);
    if (store == SIZE_MAX)
        return 1;
    c->tree = store < SIZE_MAX - sizeof *c->tree ? malloc(sizeof *c->tree + store) : NULL;
    if (!c->tree)
        return -1;
    c->tree_storage = store;
    return ik_tree_init(c->tree, c->tree + 1, store, j, parent, n, tip_joint, ntips) == IK_OK ? 0
                                                                                           : 1;
}

/* The tree of n described joints (parents first) into c, with their
 * names; code and path for the errors ik_tree_init finds (the checks
 * before it name the tip). */
static int tree_build(proto_chain *c, const ik_joint *j, const int *parent,
                      char (*names)[PROTO_NAME_MAX], size_t n, const size_t *tip_joint,
                      const char **tips, size_t ntips, const proto_limits *lim, const char *path,
                      proto_errcode code, const char *where, proto_error *err)
{
    char pt[PROTO_PATH_MAX];
    proto_json_path_key(pt, path, "tips");
    size_t movable = 0;
    for (size_t i = 0; i < n; i++)
        movable += j[i].type != IK_JOINT_FIXED;
    for (size_t t = 0; t < ntips; t++) {
        size_t dof = 0;
        for (int i = (int)tip_joint[t]; i >= 0; i = parent[i])
            dof += j[i].type != IK_JOINT_FIXED;
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, pt, t);
        if (dof == 0)
            return proto_error_set(err, code, where ? where : pi,
                                   "the path to tip \"%s\" has no movable joint", tips[t]);
    }
    const size_t cap = lim->max_joints;
    if (movable > cap)
        return proto_error_set(err, PROTO_E_TOO_LARGE, where ? where : pt,
                               "the tree has %zu movable joints; the limit is %zu", movable, cap);
    c->tip_names = calloc(ntips, sizeof *c->tip_names);
    if (!c->tip_names)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    int trc = tree_alloc(c, j, parent, n, tip_joint, ntips);
    if (trc < 0)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    if (trc > 0)
        return proto_error_set(err, code, where ? where : pt,
                               "the joints do not form a tree the solver can use (a joint on a "
                               "path is degenerate)");
    c->names = calloc(c->tree->dof, sizeof *c->names);
    if (!c->names)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    c->nnames = c->tree->dof;
    for (size_t v = 0; v < c->tree->dof; v++)
        memcpy(c->names[v], names[c->tree->source_index[v]], PROTO_NAME_MAX);
    for (size_t t = 0; t < ntips; t++)
        snprintf(c->tip_names[t], PROTO_NAME_MAX, "%s", tips[t]);
    c->memory += sizeof *c->tree + c->tree_storage + (c->nnames + ntips) * PROTO_NAME_MAX;
    return 0;
}

/* {"kind": "tree", "urdf", "base", "tips"} */
static int tree_urdf(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                     proto_error *err)
{
    static const char *const keys[] = {"kind",          "urdf", "base", "tips", "collision_spheres",
                                       "collision_skeleton", "srdf", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    char pu[PROTO_PATH_MAX];
    const char *xml, *base, *tips[IK_TREE_MAX_TIPS];
    size_t ntips;
    size_t len;
    if (proto__urdf_source(o, path, lim, &xml, &len, &base, err))
        return -1;
    proto_json_path_key(pu, path, "urdf");
    if (tip_list(o, path, tips, &ntips, err))
        return -1;
    const size_t cap = lim->max_joints;
    ik_joint *j = calloc(cap, sizeof *j);
    int *parent = calloc(cap, sizeof *parent);
    /* the URDF's names are the chain's (the two lengths are one, as
     * proto_chain_collide.c asserts) */
    char(*names)[PROTO_URDF_NAME_MAX] = calloc(cap, sizeof *names);
    /* parsed once for the joints and the collision model's robot (read
     * before the model is built, so that libxml2's tree is freed first) */
    proto_urdf_doc *doc = NULL;
    proto_urdf_robot robot = {0};
    proto_error robot_err;
    int rc = -1;
    size_t n = 0, tip_joint[IK_TREE_MAX_TIPS];
    if (!j || !parent || !names) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    if (!(doc = proto_urdf_open(xml, len, err)) ||
        proto_urdf_doc_tree(doc, base, tips, ntips, j, parent, cap, &n, tip_joint, names, err)) {
        snprintf(err->path, sizeof err->path, "%s", pu);
        goto out;
    }
    const bool robot_ok = proto_urdf_doc_robot(doc, &robot, &robot_err) == 0;
    proto_urdf_close(doc);
    doc = NULL;
    rc = tree_build(c, j, parent, names, n, tip_joint, tips, ntips, lim, path, PROTO_E_INVALID_URDF,
                    pu, err);
    if (rc == 0)
        c->memory += len;
    if (rc == 0) /* its collision model (proto_chain_collide.c) */
        rc = proto__chain_collide(c, o, path, robot_ok ? &robot : NULL, &robot_err, base, tips,
                                  ntips, lim, err);
out:
    proto_urdf_close(doc);
    proto_urdf_robot_free(&robot);
    free(j);
    free(parent);
    free(names);
    return rc;
}

/* {"kind": "tree", "joints": [... with "parent"], "tips", "frame", "units"} */
static int tree_joints(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                       proto_error *err)
{
    static const char *const keys[] = {"kind",  "joints",            "tips",
                                       "frame", "units",             "collision_spheres",
                                       "collision_skeleton", "srdf", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int fi, ui;
    char p[PROTO_PATH_MAX];
    if (proto__opt_enum(o, path, "frame", proto_frame_names, 0, &fi, err) ||
        proto__opt_enum(o, path, "units", proto_units_names, 0, &ui, err))
        return -1;
    json_t *arr = proto_json_require(o, path, "joints", err);
    if (!arr)
        return -1;
    proto_json_path_key(p, path, "joints");
    size_t n;
    if (proto_json_array(arr, p, 1, lim->max_joints, true, &n, err))
        return -1;
    const char *tips[IK_TREE_MAX_TIPS];
    size_t ntips;
    if (tip_list(o, path, tips, &ntips, err))
        return -1;
    ik_joint *j = calloc(n, sizeof *j);
    int *parent = calloc(n, sizeof *parent);
    char(*names)[PROTO_NAME_MAX] = calloc(n, sizeof *names);
    int rc = -1;
    size_t tip_joint[IK_TREE_MAX_TIPS];
    if (!j || !parent || !names) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        char pj[PROTO_PATH_MAX], pf[PROTO_PATH_MAX];
        proto_json_path_index(pj, p, i);
        const json_t *jo = json_array_get(arr, i);
        if (proto__joint_decode(jo, pj, i, (proto_frame)fi, (proto_units)ui, true, &j[i], names[i],
                                err))
            goto out;
        if (proto__name_index(names, i, names[i]) >= 0) {
            proto_json_path_key(pf, pj, "name");
            proto_error_set(err, PROTO_E_INVALID_CHAIN, pf, "joint name \"%s\" is used twice",
                            names[i]);
            goto out;
        }
        parent[i] = -1;
        const json_t *pv = json_object_get(jo, "parent");
        if (pv && !json_is_null(pv)) {
            const char *s;
            proto_json_path_key(pf, pj, "parent");
            if (proto_json_string(pv, pf, PROTO_NAME_MAX - 1, &s, err))
                goto out;
            int k = proto__name_index(names, i, s);
            if (k < 0) {
                proto_error_set(err, PROTO_E_INVALID_CHAIN, pf,
                                "parent \"%s\" of joint \"%s\" is not an earlier joint", s,
                                names[i]);
                goto out;
            }
            parent[i] = k;
        }
    }
    for (size_t t = 0; t < ntips; t++) {
        int k = proto__name_index(names, n, tips[t]);
        if (k < 0) {
            char pt[PROTO_PATH_MAX], pi[PROTO_PATH_MAX];
            proto_json_path_key(pt, path, "tips");
            proto_json_path_index(pi, pt, t);
            proto_error_set(err, PROTO_E_INVALID_CHAIN, pi,
                            "no joint is named \"%s\" (a tip is the link a joint ends in: name "
                            "that joint)",
                            tips[t]);
            goto out;
        }
        tip_joint[t] = (size_t)k;
    }
    rc = tree_build(c, j, parent, names, n, tip_joint, tips, ntips, lim, path,
                    PROTO_E_INVALID_CHAIN, NULL, err);
    if (rc == 0) /* its collision model (proto_chain_collide.c) */
        rc = proto__chain_collide_joints(c, o, path, j, parent, names, n, tip_joint, ntips,
                                         (proto_frame)fi, lim, err);
out:
    free(j);
    free(parent);
    free(names);
    return rc;
}

/* ---- trees of bones ----------------------------------------------------- */

/* The described joints of the tree of bones of c (3 per bone on the paths,
 * joints 3k..3k+2 turning c->path_bones[k] about its x, y, z axes after
 * its rotation L[bone]) into j and parent; rank and kk are scratch of
 * c->nskel ints and c->npath doubles. Bone b's origin is its translation
 * times kk, the product of the (uniform) scales above it. */
static void bone_joints(const proto_chain *c, const ik_quat *L, int *rank, double *kk, ik_joint *j,
                        int *parent)
{
    for (size_t b = 0; b < c->nskel; b++)
        rank[b] = -1;
    for (size_t k = 0; k < c->npath; k++) {
        const size_t b = c->path_bones[k];
        const ik_bone *bone = &c->skel[b];
        rank[b] = (int)k;
        const int pr = bone->parent >= 0 ? rank[bone->parent] : -1;
        kk[k] = pr >= 0 ? kk[pr] * c->skel[bone->parent].scale.x : 1.0;
        for (int a = 0; a < 3; a++) {
            ik_joint *jt = &j[3 * k + (size_t)a];
            memset(jt, 0, sizeof *jt);
            jt->type = IK_JOINT_CONTINUOUS;
            jt->origin = ik_xform_identity();
            jt->axis = ik_v3(a == 0, a == 1, a == 2);
            jt->lower = -INFINITY;
            jt->upper = INFINITY;
            parent[3 * k + (size_t)a] = a > 0 ? (int)(3 * k) + a - 1 : pr >= 0 ? 3 * pr + 2 : -1;
        }
        j[3 * k].origin.p = ik_vec3_scale(bone->translation, kk[k]);
        j[3 * k].origin.q = L[b];
    }
}

/* {"kind": "tree", "bones": [...], "tips", "frame"} */
static int tree_bones(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                      proto_error *err)
{
    static const char *const keys[] = {"kind", "bones", "tips", "frame", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int fi;
    char p[PROTO_PATH_MAX], pt[PROTO_PATH_MAX], pi[PROTO_PATH_MAX];
    if (proto__opt_enum(o, path, "frame", proto_frame_names, 0, &fi, err))
        return -1;
    if (proto__skeleton_bones(c, o, path, (proto_frame)fi, 1, lim, err))
        return -1;
    const char *tips[IK_TREE_MAX_TIPS];
    size_t ntips, tipb[IK_TREE_MAX_TIPS];
    if (tip_list(o, path, tips, &ntips, err))
        return -1;
    const size_t n = c->nskel;
    proto_json_path_key(pt, path, "tips");
    for (size_t t = 0; t < ntips; t++) {
        proto_json_path_index(pi, pt, t);
        int b = proto__name_index(c->names, n, tips[t]);
        if (b < 0)
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi, "no bone is named \"%s\"",
                                   tips[t]);
        tipb[t] = (size_t)b;
    }
    /* the paths: 1 on one, 2 above a tip */
    unsigned char *mark = calloc(n, 1);
    int *rank = calloc(n, sizeof *rank);
    double *kk = calloc(n, sizeof *kk);
    ik_quat *L = calloc(n, sizeof *L);
    ik_mat34 *g = calloc(n, sizeof *g);
    ik_joint *j = calloc(3 * n, sizeof *j);
    int *parent = calloc(3 * n, sizeof *parent);
    int rc = -1;
    if (!mark || !rank || !kk || !L || !g || !j || !parent) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    for (size_t t = 0; t < ntips; t++) {
        size_t len = 1;
        mark[tipb[t]] |= 1;
        for (int b = c->skel[tipb[t]].parent; b >= 0; b = c->skel[b].parent, len++)
            mark[b] |= 3;
    }
    size_t npath = 0;
    for (size_t b = 0; b < n; b++)
        npath += mark[b] != 0;
    const size_t cap = lim->max_joints;
    if (3 * npath > cap) {
        proto_error_set(err, PROTO_E_TOO_LARGE, pt,
                        "the tips' paths have %zu bones (%zu rotation angles); the limit is %zu "
                        "angles (%zu bones)",
                        npath, 3 * npath, cap, cap / 3);
        goto out;
    }
    const json_t *bones = json_object_get(o, "bones");
    for (size_t b = 0; b < n; b++) {
        if (!(mark[b] & 2))
            continue;
        const ik_vec3 sc = c->skel[b].scale;
        const double tol = PROTO_SCALE_ALIKE * fabs(sc.x); /* the factor: x */
        if (sc.x > 0 && fabs(sc.y - sc.x) <= tol && fabs(sc.z - sc.x) <= tol)
            continue;
        char pb[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "bones");
        proto_json_path_index(pb, p, b);
        proto_json_path_key(p, pb, "scale");
        const json_t *sv = json_object_get(json_array_get(bones, b), "scale");
        size_t t = 0;
        while (t + 1 < ntips) { /* a tip below it, for the message */
            int a = c->skel[tipb[t]].parent;
            while (a >= 0 && a != (int)b)
                a = c->skel[a].parent;
            if (a == (int)b)
                break;
            t++;
        }
        proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                        "bone \"%.64s\" above tip \"%.64s\" scales by [%g, %g, %g]: a bone above "
                        "a tip must scale uniformly by a positive factor (its children would "
                        "shear as they turn, or mirror); a tip's own scale may be anything",
                        c->names[b], tips[t], json_number_value(json_array_get(sv, 0)),
                        json_number_value(json_array_get(sv, 1)),
                        json_number_value(json_array_get(sv, 2)));
        goto out;
    }
    if (ik_skeleton_globals(c->skel, n, g) != IK_OK) {
        proto_json_path_key(p, path, "bones");
        proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                        "the skeleton is degenerate (its bones' transforms overflow)");
        goto out;
    }
    c->path_bones = calloc(npath, sizeof *c->path_bones);
    c->tip_names = calloc(ntips, sizeof *c->tip_names);
    if (!c->path_bones || !c->tip_names) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    c->npath = 0;
    for (size_t b = 0; b < n; b++) {
        L[b] = ik_quat_normalize(c->skel[b].rotation);
        if (mark[b])
            c->path_bones[c->npath++] = b;
    }
    bone_joints(c, L, rank, kk, j, parent);
    size_t tip_joint[IK_TREE_MAX_TIPS];
    for (size_t t = 0; t < ntips; t++)
        tip_joint[t] = 3 * (size_t)rank[tipb[t]] + 2;
    int trc = tree_alloc(c, j, parent, 3 * npath, tip_joint, ntips);
    if (trc < 0) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    if (trc > 0) {
        proto_json_path_key(p, path, "bones");
        proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                        "the bones do not form a tree the solver can use");
        goto out;
    }
    for (size_t t = 0; t < ntips; t++)
        snprintf(c->tip_names[t], PROTO_NAME_MAX, "%s", tips[t]);
    c->memory += sizeof *c->tree + c->tree_storage + ntips * PROTO_NAME_MAX +
                 npath * sizeof *c->path_bones;
    rc = 0;
out:
    free(mark);
    free(rank);
    free(kk);
    free(L);
    free(g);
    free(j);
    free(parent);
    return rc;
}

static int decode(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                  proto_error *err)
{
    static const char *const forms[] = {"urdf", "joints", "bones"};
    char p[PROTO_PATH_MAX];
    int form = -1;
    for (int k = 0; k < 3; k++) {
        if (!json_object_get(o, forms[k]))
            continue;
        if (form >= 0) {
            proto_json_path_key(p, path, forms[form]);
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "a tree is given by one of a URDF (urdf, base, tips), a joint "
                                   "list (joints, tips) or a skeleton's bones (bones, tips); this "
                                   "one has both %s and %s",
                                   forms[form], forms[k]);
        }
        form = k;
    }
    if (form < 0) {
        proto_json_path_key(p, path, "joints");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "a tree needs joints (a joint list naming parents), urdf (with "
                               "base) or bones (a skeleton's bones, its end bones as tips)");
    }
    return form == 0   ? tree_urdf(c, o, path, lim, err)
           : form == 1 ? tree_joints(c, o, path, lim, err)
                       : tree_bones(c, o, path, lim, err);
}

/* A tree of bones: each tip's bones from its root, and the bones shared. */
static void bones_describe(const proto_chain *c, json_t *d)
{
    const ik_tree *T = c->tree;
    json_t *tips = json_array(), *shared = json_array();
    for (size_t t = 0; t < T->ntips; t++) {
        json_t *bs = json_array();
        for (size_t i = 0; i < T->chain[t].dof; i += 3)
            json_array_append_new(
                bs, json_string(c->names[c->path_bones[T->source_index[T->var[t][i]] / 3]]));
        json_array_append_new(tips, json_pack("{s:s, s:o}", "name", c->tip_names[t], "bones", bs));
    }
    for (size_t v = 0; v < T->dof; v += 3)
        if (T->tips_of[v] & (T->tips_of[v] - 1)) /* two bits or more */
            json_array_append_new(shared,
                                  json_string(c->names[c->path_bones[T->source_index[v] / 3]]));
    json_object_set_new(d, "tips", tips);
    json_object_set_new(d, "shared_bones", shared);
}

static void describe(const proto_chain *c, json_t *d)
{
    static const char *const tn[] = {"fixed", "revolute", "continuous", "prismatic"};
    const ik_tree *T = c->tree;
    proto__describe_size(d, c, c->skel ? "bones" : "dof", c->skel ? c->nskel : T->dof);
    if (c->skel) {
        bones_describe(c, d);
        return;
    }
    json_t *lim = json_array();
    for (size_t v = 0; v < T->dof; v++) {
        json_t *l = json_object();
        json_object_set_new(l, "type", json_string(tn[T->type[v]]));
        if (T->type[v] != IK_JOINT_CONTINUOUS) {
            json_object_set_new(l, "lower", json_real(T->lower[v]));
            json_object_set_new(l, "upper", json_real(T->upper[v]));
        }
        json_array_append_new(lim, l);
    }
    json_object_set_new(d, "joints", lim);
    json_t *tips = json_array(), *shared = json_array();
    for (size_t t = 0; t < T->ntips; t++) {
        json_t *js = json_array();
        for (size_t i = 0; i < T->chain[t].dof; i++)
            json_array_append_new(js, json_string(c->names[T->var[t][i]]));
        json_array_append_new(tips, json_pack("{s:s, s:o}", "name", c->tip_names[t], "joints", js));
    }
    for (size_t v = 0; v < T->dof; v++)
        if (T->tips_of[v] & (T->tips_of[v] - 1)) /* two bits or more */
            json_array_append_new(shared, json_string(c->names[v]));
    json_object_set_new(d, "tips", tips);
    json_object_set_new(d, "shared_joints", shared);
}

/* ---- solving ---------------------------------------------------------- */

/* The tip result of goal g (keep: the target's rule) at the tree's pose q,
 * the seed pose seed_pose serving KEEP_POSE tips. */
static void tip_result(const proto_job *job, const proto_tip_goal *g, unsigned keep, ik_xform pose,
                       ik_xform seed_pose, proto_tip_result *tr)
{
    memset(tr, 0, sizeof *tr);
    tr->pose = pose;
    tr->rot_err = -1;
    if (!g->active && keep != IK_TREE_KEEP_POSE)
        return;
    double w[6] = {1, 1, 1, 1, 1, 1};
    ik_xform want = seed_pose;
    if (g->active) {
        want.p = g->t.position;
        want.q = g->t.orientation;
        if (g->t.has_weights)
            memcpy(w, g->t.weight, sizeof w);
        else if (!g->t.has_orientation)
            w[3] = w[4] = w[5] = 0.0;
    }
    /* an orientation the weights leave free still has its error, as a chain's */
    bool rot = !g->active || g->t.has_orientation;
    double e[6];
    ik_xform got = pose;
    if (!rot)
        want.q = got.q = ik_quat_identity();
    ik_pose_error(want, got, e);
    const double tp = job->opt.tolerance > 0 ? job->opt.tolerance : 1e-5;
    const double tol_r = job->opt.angular_tolerance > 0 ? job->opt.angular_tolerance : 1e-5;
    tr->checked = true;
    tr->reached = true;
    for (int k = 0; k < 6; k++)
        if (w[k] > 0 && !(fabs(e[k]) <= (k < 3 ? tp : tol_r)))
            tr->reached = false;
    tr->pos_err = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    tr->rot_err = rot ? sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]) : -1;
}

/* The solver's goals g[0..ntips-1] for target i of a tree job. */
static void solver_goals(const proto_job *job, size_t i, ik_tree_goal *g)
{
    const proto_tip_goal *goals = job->goals + i * job->ntips;
    const unsigned keep = job->keep[i];
    for (size_t t = 0; t < job->ntips; t++) {
        const proto_tip_goal *pg = &goals[t];
        if (!pg->active) {
            g[t] = ik_tree_goal_keep((ik_tree_keep)keep);
            continue;
        }
        ik_target tg = proto__solver_target(&pg->t);
        g[t] = ik_tree_goal_target(tg);
        g[t].priority = pg->priority;
        g[t].weight = pg->weight;
    }
}

/* The solver's options for a tree job. */
static ik_tree_opts solver_opts(const proto_job *job)
{
    ik_tree_opts o = ik_tree_opts_default();
    if (job->opt.tolerance > 0)
        o.tol_pos = job->opt.tolerance;
    if (job->opt.angular_tolerance > 0)
        o.tol_rot = job->opt.angular_tolerance;
    o.timeout_s = job->opt.timeout_ms * 1e-3;
    o.max_iterations = job->opt.max_iterations ? job->opt.max_iterations : job->opt.iter_cap;
    o.objective = job->opt.has_objective ? (ik_tree_objective)job->opt.objective
                  : job->opt.nearest     ? IK_TREE_OBJ_DISTANCE
                                         : IK_TREE_OBJ_NONE;
    return o;
}

/* Every tip's result of target i at the tree T's pose q, the KEEP_POSE
 * tips held at their pose at from; the answer's errors the largest of
 * the tips checked. */
static void tips_result(const proto_job *job, size_t i, const ik_tree *T, const double *q,
                        const double *from, proto_result *r)
{
    const proto_tip_goal *goals = job->goals + i * job->ntips;
    r->pos_err = 0.0;
    r->rot_err = -1;
    for (size_t t = 0; t < T->ntips; t++) {
        proto_tip_result *tr = &r->tips[t];
        tip_result(job, &goals[t], job->keep[i], ik_tree_fk(T, q, t), ik_tree_fk(T, from, t), tr);
        if (!tr->checked)
            continue;
        r->pos_err = fmax(r->pos_err, tr->pos_err);
        if (tr->rot_err >= 0)
            r->rot_err = fmax(r->rot_err, tr->rot_err);
    }
}

static void run_bones(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size);

/* A tree of joints' answer scratch after the solver's workspace: the
 * solve's start (n doubles), aligned. */
static size_t tree_scratch(size_t n)
{
    return n * sizeof(double) + 16;
}

static void run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const ik_tree *T = c->tree;
    if (c->skel) {
        run_bones(job, i, r, ws, ws_size);
        return;
    }
    ik_tree_goal g[IK_TREE_MAX_TIPS];
    solver_goals(job, i, g);
    ik_tree_opts o = solver_opts(job);
    ik_collide_check chk; /* the tree's collision model */
    bool coll = proto__collide_check(job, &chk, &ws, &ws_size);
    if (coll && chk.avoid)
        o.collide = &chk;
    r->has_distance = false;
    const size_t n = T->dof;
    const double *seed = job->has_seed[i] && job->seed_q ? job->seed_q + i * n : NULL;
    ik_tree_result res;
    /* the solve's start, at the end of the workspace (tree_scratch) */
    if (!ws || ws_size < tree_scratch(n)) {
        r->status = IK_ENOSPC;
        return;
    }
    ws_size -= tree_scratch(n);
    double *from = (double *)(((uintptr_t)ws + ws_size + 15) & ~(uintptr_t)15);
    r->status = ik_tree_solve(T, g, seed, &o, ws, ws_size, r->q, &res);
    r->iterations = res.iterations;
    r->restarts = res.restarts;
    r->time_s = res.elapsed_s;
    r->cause = res.reason;
    if (r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    /* where the solve started, inside the limits (continuous joints keep
     * their turn): the KEEP_POSE tips' poses and the steps' origin */
    if (seed)
        memcpy(from, seed, n * sizeof *from);
    else
        ik_tree_mid(T, from);
    for (size_t v = 0; v < n; v++)
        if (T->type[v] != IK_JOINT_CONTINUOUS)
            from[v] = ik_clamp(from[v], T->lower[v], T->upper[v]);
    if (seed) {
        r->has_step = true;
        r->step_ang = r->step_lin = 0.0;
        for (size_t v = 0; v < n; v++) {
            double d = fabs(r->q[v] - from[v]);
            double *m = T->type[v] == IK_JOINT_PRISMATIC ? &r->step_lin : &r->step_ang;
            if (d > *m)
                *m = d;
        }
        const double ms = job->opt.max_joint_step_in;
        if (ms > 0 && (r->step_ang > proto_angle_in(job->opt.units, ms) || r->step_lin > ms)) {
            /* a solution too far from the seed is not answered: no motion;
             * the step refused is answered, with no cause (proto_serial.c) */
            if (r->status == IK_ECOLLISION)
                r->cause = IK_REASON_NONE;
            r->status = IK_ESTEP;
            memcpy(r->q, from, n * sizeof *from);
        }
    }
    tips_result(job, i, T, r->q, from, r);
    proto__collide_measure(coll ? &chk : NULL, r);
}

/* ---- solving a tree of bones ------------------------------------------- */

/* The workspace of a tree of bones, carved in this order, each piece
 * aligned: the tree compiled around the solve's start, the solver's
 * workspace, the described joints and their parents, the scratch of
 * bone_joints, the start and answered local rotations, the bones and
 * their globals (for the answer's positions), the angles and zeros. */
#define WS_ALIGN 64

static size_t aligned(size_t n)
{
    return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN;
}

typedef struct bones_ws {
    ik_tree *T;
    void *tstore; /* T's storage */
    void *tws;
    size_t tws_size;
    ik_joint *j;
    int *parent, *rank;
    double *kk, *q, *zero;
    ik_quat *L, *L2;
    ik_bone *bones;
    ik_mat34 *g;
} bones_ws;

/* Carves ws (NULL: only counts); the bytes needed. */
static size_t bones_carve(const proto_chain *c, char *ws, bones_ws *b)
{
    const size_t n = c->nskel, m = 3 * c->npath, dof = c->tree->dof;
    const size_t tws = ik_tree_workspace_size(c->tree);
    size_t at = 0;
#define TAKE(field, bytes)                                                                         \
    do {                                                                                           \
        if (ws)                                                                                    \
            b->field = (void *)(ws + at);                                                          \
        at += aligned(bytes);                                                                      \
    } while (0)
    TAKE(T, sizeof(ik_tree));
    TAKE(tstore, c->tree_storage);
    TAKE(tws, tws);
    TAKE(j, m * sizeof(ik_joint));
    TAKE(parent, m * sizeof(int));
    TAKE(rank, n * sizeof(int));
    TAKE(kk, c->npath * sizeof(double));
    TAKE(L, n * sizeof(ik_quat));
    TAKE(L2, n * sizeof(ik_quat));
    TAKE(bones, n * sizeof(ik_bone));
    TAKE(g, n * sizeof(ik_mat34));
    TAKE(q, dof * sizeof(double));
    TAKE(zero, dof * sizeof(double));
#undef TAKE
    if (ws)
        b->tws_size = tws;
    return at + WS_ALIGN; /* room to align the start */
}

static size_t tree_workspace(const proto_chain *c)
{
    if (!c->skel)
        return ik_tree_workspace_size(c->tree) + tree_scratch(c->tree->dof);
    bones_ws b;
    return bones_carve(c, NULL, &b);
}

/* Target i of a tree of bones (see the top of this file): the tree
 * compiled around the start L (seed or chain), solved from zero angles,
 * the angles turned into local rotations. */
static void run_bones(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const ik_tree *T0 = c->tree;
    const size_t n = c->nskel, dof = T0->dof;
    bones_ws b;
    char *base = (char *)ws + (WS_ALIGN - (uintptr_t)ws % WS_ALIGN) % WS_ALIGN;
    if (!ws || ws_size < tree_workspace(c)) {
        r->status = IK_ENOSPC;
        return;
    }
    bones_carve(c, base, &b);
    const double *seed = job->has_seed[i] && job->seed_q ? job->seed_q + i * 4 * n : NULL;
    for (size_t k = 0; k < n; k++)
        b.L[k] = ik_quat_normalize(
            seed ? (ik_quat){seed[4 * k], seed[4 * k + 1], seed[4 * k + 2], seed[4 * k + 3]}
                 : c->skel[k].rotation);
    bone_joints(c, b.L, b.rank, b.kk, b.j, b.parent);
    size_t tip_joint[IK_TREE_MAX_TIPS];
    for (size_t t = 0; t < T0->ntips; t++)
        tip_joint[t] = T0->source_index[T0->var[t][T0->chain[t].dof - 1]];
    if (ik_tree_init(b.T, b.tstore, c->tree_storage, b.j, b.parent, 3 * c->npath, tip_joint,
                     T0->ntips) != IK_OK ||
        b.T->dof != dof) {
        r->status = IK_EINVAL;
        return;
    }
    ik_tree_goal g[IK_TREE_MAX_TIPS];
    solver_goals(job, i, g);
    ik_tree_opts o = solver_opts(job);
    memset(b.zero, 0, dof * sizeof *b.zero);
    ik_tree_result res;
    r->status = ik_tree_solve(b.T, g, b.zero, &o, b.tws, b.tws_size, b.q, &res);
    r->iterations = res.iterations;
    r->restarts = res.restarts;
    r->time_s = res.elapsed_s;
    r->cause = res.reason;
    if (r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    /* the angles as local rotations: bone k's x, y, z variables are
     * consecutive, in that order */
    memcpy(b.L2, b.L, n * sizeof *b.L2);
    for (size_t v = 0; v + 2 < dof; v += 3) {
        const size_t k = b.T->source_index[v] / 3, bone = c->path_bones[k];
        ik_quat d = ik_quat_mul(ik_quat_from_axis_angle(ik_v3(1, 0, 0), b.q[v]),
                                ik_quat_mul(ik_quat_from_axis_angle(ik_v3(0, 1, 0), b.q[v + 1]),
                                            ik_quat_from_axis_angle(ik_v3(0, 0, 1), b.q[v + 2])));
        b.L2[bone] = ik_quat_normalize(ik_quat_mul(b.L[bone], d));
    }
    if (seed) {
        /* the largest turn of a bone from its seed */
        r->has_step = true;
        r->step_ang = r->step_lin = 0.0;
        for (size_t k = 0; k < n; k++)
            r->step_ang = fmax(r->step_ang, ik_quat_angle_between(b.L[k], b.L2[k]));
        const double ms = job->opt.max_joint_step_in;
        if (ms > 0 && r->step_ang > proto_angle_in(job->opt.units, ms)) {
            /* too far from the seed: no motion */
            r->status = IK_ESTEP;
            memcpy(b.L2, b.L, n * sizeof *b.L2);
            memcpy(b.q, b.zero, dof * sizeof *b.q);
        }
    }
    memcpy(b.bones, c->skel, n * sizeof *b.bones);
    for (size_t k = 0; k < n; k++) {
        b.bones[k].rotation = b.L2[k];
        r->local[k] = r->rotations[k] = b.L2[k];
    }
    if (ik_skeleton_globals(b.bones, n, b.g) != IK_OK) {
        r->status = IK_EINVAL;
        return;
    }
    for (size_t k = 0; k < n; k++)
        r->positions[k] = ik_mat34_origin(&b.g[k]);
    tips_result(job, i, b.T, b.q, b.zero, r);
}

/* ---- the kind ------------------------------------------------------------ */

static size_t seed_len(const proto_chain *c)
{
    return c->skel ? 4 * c->nskel : c->tree->dof;
}

static bool allows(const proto_chain *c, proto_solver s)
{
    (void)c;
    return s == PROTO_SOLVER_NUMERIC;
}

static proto_solver pick(const proto_chain *c, const proto_target *t0)
{
    (void)c, (void)t0;
    return PROTO_SOLVER_NUMERIC;
}

static void dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot)
{
    /* a tree of bones: every bone's position and local rotation; else the
     * joints; and a pose per tip (proto_tip_result) */
    *dof = c->skel ? 0 : c->tree->dof;
    *npos = *nrot = c->skel ? c->nskel : 0;
}

static size_t workspace(const proto_job *job)
{
    return proto__collide_ws(job) + tree_workspace(job->chain);
}

const proto_kind_ops proto_kind_tree = {decode, describe, seed_len,  allows,
                                        pick,   dims,     workspace, run};
