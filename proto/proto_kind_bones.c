/*
 * proto_kind_bones.c: bones chains (kind "bones"): joint positions and
 * their world rotations, as an animation tool gives a limb. Solved by
 * two_bone (seed 001: three positions, the knee on the circle where two
 * spheres meet, nearest its current position or a pole; ik_twobone_solve),
 * fabrik or ccd (any number of positions; ik_fabrik_solve, ik_ccd_solve).
 * "auto": three positions -> two_bone, else fabrik. Seeds are the bones'
 * current positions.
 *
 * Bone rotations: each bone's new world rotation is the minimal rotation
 * (seed 001, GetRotationBetween) from its direction in the chain's pose to
 * its new direction, applied to its rotation; the end joint turns with the
 * last bone. Local rotations are relative to the previous joint's new
 * world rotation.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_anim.h"
#include "solver/ik_ccd.h"
#include "solver/ik_fabrik.h"
#include "solver/ik_twobone.h"

static int decode_bones(proto_chain *c, const json_t *o, const char *path,
                        const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "positions", "rotations", "frame", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int frame;
    if (proto__opt_enum(o, path, "frame", proto_frame_names, 0, &frame, err))
        return -1;
    json_t *pos = proto_json_require(o, path, "positions", err);
    if (!pos)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "positions");
    size_t n;
    if (proto_json_array(pos, p, 2, lim->max_joints, true, &n, err))
        return -1;
    c->positions = calloc(n, sizeof *c->positions);
    c->rotations = calloc(n, sizeof *c->rotations);
    if (!c->positions || !c->rotations)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    c->memory += n * (sizeof *c->positions + sizeof *c->rotations);
    c->nbones = n;
    for (size_t i = 0; i < n; i++) {
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, p, i);
        ik_vec3 v;
        if (proto__vec3(json_array_get(pos, i), pi, &v, err))
            return -1;
        c->positions[i] = proto_frame_vec_in((proto_frame)frame, v);
        c->rotations[i] = ik_quat_identity();
        if (i > 0 && !(ik_vec3_dist(c->positions[i], c->positions[i - 1]) >= PROTO_MIN_LENGTH))
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi,
                                   "bone %zu (positions %zu to %zu) has length %g; bones must be "
                                   "at least %g long",
                                   i - 1, i - 1, i,
                                   ik_vec3_dist(c->positions[i], c->positions[i - 1]),
                                   PROTO_MIN_LENGTH);
    }
    json_t *rot = json_object_get(o, "rotations");
    if (rot) {
        proto_json_path_key(p, path, "rotations");
        size_t k;
        if (proto_json_array(rot, p, n, n, false, &k, err))
            return -1;
        for (size_t i = 0; i < n; i++) {
            char pi[PROTO_PATH_MAX];
            proto_json_path_index(pi, p, i);
            ik_quat q;
            if (proto__quat(json_array_get(rot, i), pi, &q, err))
                return -1;
            c->rotations[i] = proto_frame_quat_in((proto_frame)frame, q);
        }
    }
    return 0;
}

static void describe(const proto_chain *c, json_t *d)
{
    json_object_set_new(d, "bones", json_integer((json_int_t)(c->nbones - 1)));
}

static size_t seed_len(const proto_chain *c)
{
    return 3 * c->nbones;
}

static bool allows(const proto_chain *c, proto_solver s)
{
    return s == PROTO_SOLVER_FABRIK || s == PROTO_SOLVER_CCD ||
           (s == PROTO_SOLVER_TWO_BONE && c->nbones == 3);
}

static proto_solver pick(const proto_chain *c, const proto_target *t0)
{
    (void)t0;
    return c->nbones == 3 ? PROTO_SOLVER_TWO_BONE : PROTO_SOLVER_FABRIK;
}

static void dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot)
{
    *dof = 0;
    *npos = *nrot = c->nbones;
}

static size_t workspace(const proto_job *job)
{
    const size_t n = job->chain->nbones;
    return job->solver == PROTO_SOLVER_FABRIK || job->solver == PROTO_SOLVER_CCD
               ? ik_anim_workspace_size(n) + n * sizeof(ik_vec3)
               : 0;
}

/* New world and local rotations of a bones chain for the new positions np:
 * each bone's minimal rotation from the pose p with world rotations rot
 * (a stream's previous answer, seed 001's old directions) or, without
 * them, from the chain's own pose, so that a stream's bones turn on from
 * their previous rotations instead of jumping where the rotation from the
 * chain's own directions flips (a bone passing the opposite of its own). */
static void bone_rotations(const proto_chain *c, const double *p, const ik_quat *rot,
                           const ik_vec3 *np, proto_result *r)
{
    size_t n = c->nbones;
    const bool prev = p && rot;
    const ik_quat *from = prev ? rot : c->rotations;
    ik_quat d = ik_quat_identity();
    ik_vec3 a = prev ? ik_v3(p[0], p[1], p[2]) : c->positions[0];
    for (size_t k = 0; k < n; k++) {
        if (k + 1 < n) {
            ik_vec3 b = prev ? ik_v3(p[3 * k + 3], p[3 * k + 4], p[3 * k + 5])
                             : c->positions[k + 1];
            d = ik_quat_between(ik_vec3_sub(b, a), ik_vec3_sub(np[k + 1], np[k]));
            a = b;
        }
        r->rotations[k] = ik_quat_normalize(ik_quat_mul(d, from[k]));
        r->local[k] = k == 0 ? r->rotations[0]
                             : ik_quat_normalize(
                                   ik_quat_mul(ik_quat_conj(r->rotations[k - 1]), r->rotations[k]));
    }
}

static void run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    size_t n = c->nbones;
    const double *seed = proto__seed_of(job, i, 3 * n);
    r->rot_err = -1;
    if (job->solver == PROTO_SOLVER_TWO_BONE) {
        ik_vec3 p[3];
        for (size_t k = 0; k < 3; k++)
            p[k] = seed ? ik_v3(seed[3 * k], seed[3 * k + 1], seed[3 * k + 2]) : c->positions[k];
        ik_twobone_result o;
        /* a stream's solve without a pole keeps the previous answer's bend
         * plane (ik_twobone_plane_pole) */
        ik_vec3 plane;
        const ik_vec3 *pole = t->has_pole ? &t->pole
                              : job->opt.follow && ik_twobone_plane_pole(p[0], p[1], p[2],
                                                                         t->position, &plane)
                                  ? &plane
                                  : NULL;
        r->status = ik_twobone_solve(p[0], p[1], p[2], t->position, pole, &o);
        r->cause = proto__reach_cause(r->status, o.reach);
        if (r->status == IK_EINVAL)
            return;
        r->positions[0] = p[0];
        r->positions[1] = o.b;
        r->positions[2] = o.c;
        r->pos_err = o.error;
    } else {
        ik_vec3 *in = (ik_vec3 *)ws;
        for (size_t k = 0; k < n; k++)
            in[k] = seed ? ik_v3(seed[3 * k], seed[3 * k + 1], seed[3 * k + 2]) : c->positions[k];
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.max_iterations = (int)job->opt.max_iterations;
        o.tolerance = job->opt.tolerance;
        o.pole = t->has_pole ? &t->pole : NULL;
        ik_anim_result res;
        void *work = in + n;
        size_t wsz = ws_size - n * sizeof(ik_vec3);
        r->status = job->solver == PROTO_SOLVER_FABRIK
                        ? ik_fabrik_solve(in, n, t->position, &o, work, wsz, r->positions, NULL,
                                          NULL, &res)
                        : ik_ccd_solve(in, n, t->position, &o, work, wsz, r->positions, NULL,
                                       NULL, &res);
        if (r->status == IK_EINVAL || r->status == IK_ENOSPC)
            return;
        r->cause = r->status == IK_EUNREACHABLE ? IK_REASON_OUT_OF_REACH
                   : r->status == IK_ENOTCONV   ? IK_REASON_BUDGET
                                                : IK_REASON_NONE;
        r->pos_err = res.error;
        r->iterations = (size_t)res.iterations;
    }
    bone_rotations(c, seed, job->seed_rot, r->positions, r);
}

const proto_kind_ops proto_kind_bones = {decode_bones, describe, seed_len, allows,
                                         pick,         dims,     workspace, run};
