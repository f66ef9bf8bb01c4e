/*
 * proto_kind_links3d.c: three links in 3D (kind "links3d"): seed 000's
 * three-link arm from an origin frame, solved by three_link_3d
 * (ik_threelink3d_solve: yaw about the up axis, the working plane, the
 * last joint from target.up, the base roll that keeps the links coplanar).
 * The answer's joints are yaw, theta0, theta1, theta2 and roll; its bones'
 * frames have the link along the convention's forward axis. A seed is
 * such an answer (a stream's previous one): each angle is answered on the
 * turn nearest it.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_planar.h"

/* The solver's base axes (x left, y up, z forward; ik_planar.h) in ROS's
 * (x forward, y left, z up): solver x -> ROS y, y -> z, z -> x. */
static ik_quat links3d_axes(void)
{
    static const double m[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    return ik_quat_from_mat3(m);
}

static int decode_links3d(proto_chain *c, const json_t *o, const char *path,
                          const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "lengths", "origin", "frame", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int frame;
    if (proto__opt_enum(o, path, "frame", proto_frame_names, 0, &frame, err))
        return -1;
    if (proto__lengths(o, path, 3, 3, c->lengths, &c->nlinks, err))
        return -1;
    ik_xform origin = ik_xform_identity();
    json_t *og = json_object_get(o, "origin");
    if (og) {
        static const char *const okeys[] = {"position", "orientation", NULL};
        char p[PROTO_PATH_MAX], q[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "origin");
        if (proto_json_check_object(og, p, okeys, err))
            return -1;
        json_t *v = json_object_get(og, "position");
        proto_json_path_key(q, p, "position");
        if (v && proto__vec3(v, q, &origin.p, err))
            return -1;
        v = json_object_get(og, "orientation");
        proto_json_path_key(q, p, "orientation");
        if (v && proto__quat(v, q, &origin.q, err))
            return -1;
    }
    origin = proto_frame_xform_in((proto_frame)frame, origin);
    origin.q = ik_quat_normalize(ik_quat_mul(origin.q, links3d_axes()));
    c->origin = origin;
    return 0;
}

static void describe(const proto_chain *c, json_t *d)
{
    json_object_set_new(d, "dof", json_integer((json_int_t)c->nlinks));
}

/* a seed: the five joint values of an answer */
static size_t seed_len(const proto_chain *c)
{
    (void)c;
    return 5;
}

static bool allows(const proto_chain *c, proto_solver s)
{
    (void)c;
    return s == PROTO_SOLVER_THREE_LINK_3D;
}

static proto_solver pick(const proto_chain *c, const proto_target *t0)
{
    (void)c, (void)t0;
    return PROTO_SOLVER_THREE_LINK_3D;
}

static void dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot)
{
    (void)c;
    *dof = 5;
    *npos = 4;
    *nrot = 3;
}

static size_t workspace(const proto_job *job)
{
    (void)job;
    return 0;
}

static void run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    (void)ws, (void)ws_size;
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    ik_threelink3d p = {c->lengths[0], c->lengths[1], c->lengths[2], c->origin,
                        t->position,   t->up,         job->opt.bend ? job->opt.bend : 1};
    ik_threelink3d_result o;
    r->status = ik_threelink3d_solve(&p, &o);
    r->cause = proto__reach_cause(r->status, o.reach);
    r->rot_err = -1;
    if (r->status == IK_EINVAL)
        return;
    r->q[0] = o.yaw, r->q[1] = o.theta0, r->q[2] = o.theta1, r->q[3] = o.theta2, r->q[4] = o.roll;
    /* turns: each angle on the turn nearest the seed's (a stream's
     * previous answer), as the planar kind answers its own */
    const double *seed = proto__seed_of(job, i, 5);
    for (size_t k = 0; seed && k < 5; k++)
        r->q[k] = seed[k] + ik_wrap_angle(r->q[k] - seed[k]);
    for (size_t k = 0; k < 4; k++)
        r->positions[k] = o.joints[k];
    /* bone frames with the caller's axis meaning: the link along the
     * convention's forward (ROS +x), up along its up; the solver's bones
     * have the link along +z and up along +y (ik_planar.h) */
    static const double m[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    ik_quat axes_inv = ik_quat_conj(ik_quat_from_mat3(m));
    ik_quat parent = ik_quat_normalize(ik_quat_mul(c->origin.q, axes_inv));
    for (size_t k = 0; k < 3; k++) {
        ik_quat w = ik_quat_normalize(ik_quat_mul(o.world[k], axes_inv));
        r->rotations[k] = w;
        r->local[k] = ik_quat_normalize(ik_quat_mul(ik_quat_conj(parent), w));
        parent = w;
    }
    r->pos_err = o.error;
}

const proto_kind_ops proto_kind_links3d = {decode_links3d, describe, seed_len, allows,
                                           pick,           dims,     workspace, run};
