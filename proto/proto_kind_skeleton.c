/*
 * proto_kind_skeleton.c: skeleton chains (kind "skeleton"): seed 001's
 * translate-rotate-scale hierarchy of bones (proto__skeleton_bones) and
 * the limb moved, three bones hip, knee, foot. Solved by two_bone with
 * the bone orientation update down the hierarchy (ik_skeleton_twobone);
 * the answer is every bone's local rotation. Seeds are the bones' local
 * rotations.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_twobone.h"

static int decode_skeleton(proto_chain *c, const json_t *o, const char *path,
                           const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "bones", "limb", "frame", NULL};
    char p[PROTO_PATH_MAX];
    if (json_object_get(o, "tips") && !json_object_get(o, "limb")) {
        proto_json_path_key(p, path, "tips");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "a skeleton solved for several end bones is a tree chain: "
                               "{\"kind\": \"tree\", \"bones\": [...], \"tips\": [...]} (a "
                               "skeleton chain moves one limb: \"limb\": [hip, knee, foot])");
    }
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int fi;
    if (proto__opt_enum(o, path, "frame", proto_frame_names, 0, &fi, err))
        return -1;
    if (proto__skeleton_bones(c, o, path, (proto_frame)fi, 3, lim, err))
        return -1;
    const size_t n = c->nskel;
    json_t *limb = proto_json_require(o, path, "limb", err);
    if (!limb)
        return -1;
    proto_json_path_key(p, path, "limb");
    size_t k;
    if (proto_json_array(limb, p, 3, 3, false, &k, err))
        return -1;
    for (size_t i = 0; i < 3; i++) {
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, p, i);
        const char *s;
        if (proto_json_string(json_array_get(limb, i), pi, PROTO_NAME_MAX - 1, &s, err))
            return -1;
        int b = proto__name_index(c->names, n, s);
        if (b < 0)
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi, "no bone is named \"%s\"", s);
        c->limb[i] = (size_t)b;
    }
    if (c->skel[c->limb[1]].parent != (int)c->limb[0] ||
        c->skel[c->limb[2]].parent != (int)c->limb[1])
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                               "the limb must be three bones hip, knee, foot where the knee's "
                               "parent is the hip and the foot's parent is the knee");
    /* the hip and the bones above it scale alike on every axis (mirrored
     * or not): their turns must keep the limb's lengths, or the foot
     * misses the target the two-bone solve reached (ik_skeleton.h); alike
     * within PROTO_SCALE_ALIKE */
    for (int b = (int)c->limb[0]; b >= 0; b = c->skel[b].parent) {
        const ik_vec3 s = c->skel[b].scale;
        const double a = fabs(s.x), tol = PROTO_SCALE_ALIKE * a;
        if (fabs(fabs(s.y) - a) <= tol && fabs(fabs(s.z) - a) <= tol)
            continue;
        char pb[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "bones");
        proto_json_path_index(pb, p, (size_t)b);
        proto_json_path_key(p, pb, "scale");
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                               "bone \"%.64s\" scales by [%g, %g, %g]: the hip and the bones "
                               "above it must scale alike on every axis (the limb would shear "
                               "as it turns and miss the target); the knee's and the foot's "
                               "own scales may be anything",
                               c->names[b], s.x, s.y, s.z);
    }
    ik_mat34 *g = calloc(n, sizeof *g);
    if (!g)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    int rc = ik_skeleton_globals(c->skel, n, g);
    double l1 = rc == IK_OK ? ik_vec3_dist(ik_mat34_origin(&g[c->limb[0]]),
                                           ik_mat34_origin(&g[c->limb[1]]))
                            : 0;
    double l2 = rc == IK_OK ? ik_vec3_dist(ik_mat34_origin(&g[c->limb[1]]),
                                           ik_mat34_origin(&g[c->limb[2]]))
                            : 0;
    free(g);
    if (rc != IK_OK)
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p, "the skeleton is degenerate");
    if (!(l1 >= PROTO_MIN_LENGTH) || !(l2 >= PROTO_MIN_LENGTH))
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                               "the limb's bones have lengths %g and %g; each must be at least "
                               "%g",
                               l1, l2, PROTO_MIN_LENGTH);
    return 0;
}

static void describe(const proto_chain *c, json_t *d)
{
    proto__describe_size(d, c, "bones", c->nskel);
}

static size_t seed_len(const proto_chain *c)
{
    return 4 * c->nskel;
}

static bool allows(const proto_chain *c, proto_solver s)
{
    (void)c;
    return s == PROTO_SOLVER_TWO_BONE;
}

static proto_solver pick(const proto_chain *c, const proto_target *t0)
{
    (void)c, (void)t0;
    return PROTO_SOLVER_TWO_BONE;
}

static void dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot)
{
    *dof = 0;
    *npos = 3;
    *nrot = c->nskel;
}

static size_t workspace(const proto_job *job)
{
    return job->chain->nskel * (sizeof(ik_bone) + sizeof(ik_mat34));
}

static void run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    size_t n = c->nskel;
    ik_bone *bones = (ik_bone *)ws;
    ik_mat34 *g = (ik_mat34 *)(bones + n);
    memcpy(bones, c->skel, n * sizeof *bones);
    const double *seed = proto__seed_of(job, i, 4 * n);
    for (size_t k = 0; seed && k < n; k++) {
        ik_quat q = {seed[4 * k], seed[4 * k + 1], seed[4 * k + 2], seed[4 * k + 3]};
        bones[k].rotation = q;
    }
    ik_twobone_result o;
    r->rot_err = -1;
    /* a stream's solve without a pole keeps the previous answer's bend
     * plane (ik_twobone_plane_pole), from the start pose's limb */
    ik_vec3 plane;
    const ik_vec3 *pole = t->has_pole ? &t->pole : NULL;
    if (!pole && job->opt.follow && ik_skeleton_globals(bones, n, g) == IK_OK &&
        ik_twobone_plane_pole(ik_mat34_origin(&g[c->limb[0]]), ik_mat34_origin(&g[c->limb[1]]),
                              ik_mat34_origin(&g[c->limb[2]]), t->position, &plane))
        pole = &plane;
    r->status = ik_skeleton_twobone(bones, n, c->limb[0], c->limb[1], c->limb[2], t->position,
                                    pole, g, &o);
    r->cause = proto__reach_cause(r->status, o.reach);
    if (r->status == IK_EINVAL)
        return;
    r->positions[0] = ik_mat34_origin(&g[c->limb[0]]);
    r->positions[1] = o.b;
    r->positions[2] = o.c;
    for (size_t k = 0; k < n; k++)
        r->local[k] = r->rotations[k] = ik_quat_normalize(bones[k].rotation);
    r->pos_err = o.error;
}

const proto_kind_ops proto_kind_skeleton = {decode_skeleton, describe, seed_len, allows,
                                            pick,            dims,     workspace, run};
