/*
 * proto_kind_planar.c: planar chains (kind "planar"): seed 000's two- and
 * three-link arms in their own x-y plane, 2 or 3 lengths and a base;
 * targets, seeds and answers are 2-D. Decoded into lengths and an
 * ik_chain (joints about +z, links along the rotated +x) so that forward
 * kinematics and the numeric solver apply too; solved by two_link
 * (ik_twolink2d_solve, law of cosines), three_link (ik_threelink2d_solve,
 * the end direction "up") or numeric (proto_serial.c). "auto": two
 * lengths -> two_link; three with target.up -> three_link, without ->
 * numeric. The elbow side: options.bend, else the side nearest the seed
 * (both tried), else +1; with a seed, each angle on the turn nearest it.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_planar.h"

/* Planar chains also compile to an ik_chain (joints about +z, links along
 * the rotated +x) so that forward kinematics and the numeric solver apply. */
static int planar_compile(proto_chain *c, proto_error *err)
{
    ik_joint j[4];
    memset(j, 0, sizeof j);
    for (size_t i = 0; i <= c->nlinks; i++) {
        j[i].origin = ik_xform_identity();
        if (i == 0)
            j[i].origin.p = ik_v3(c->base2[0], c->base2[1], 0);
        else
            j[i].origin.p = ik_v3(c->lengths[i - 1], 0, 0);
        j[i].axis = ik_v3(0, 0, 1);
        j[i].type = i < c->nlinks ? IK_JOINT_CONTINUOUS : IK_JOINT_FIXED;
        j[i].lower = -INFINITY;
        j[i].upper = INFINITY;
    }
    int rc = proto__chain_compile(c, j, c->nlinks + 1, NULL, err);
    if (rc > 0)
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, "", "the planar chain is degenerate");
    return rc;
}

static int decode_planar(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                         proto_error *err)
{
    static const char *const keys[] = {"kind", "lengths", "base", NULL};
    if (json_object_get(o, "frame")) {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "frame");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "planar chains take no frame (they live in their own x-y "
                               "plane); leave it out");
    }
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    if (proto__lengths(o, path, 2, 3, c->lengths, &c->nlinks, err))
        return -1;
    json_t *b = json_object_get(o, "base");
    if (b) {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "base");
        if (proto_json_numbers(b, p, 2, c->base2, err))
            return -1;
    }
    return planar_compile(c, err);
}

static void describe(const proto_chain *c, json_t *d)
{
    json_object_set_new(d, "dof", json_integer((json_int_t)c->nlinks));
}

static bool allows(const proto_chain *c, proto_solver s)
{
    return s == PROTO_SOLVER_NUMERIC ||
           s == (c->nlinks == 2 ? PROTO_SOLVER_TWO_LINK : PROTO_SOLVER_THREE_LINK);
}

static proto_solver pick(const proto_chain *c, const proto_target *t0)
{
    return c->nlinks == 2 ? PROTO_SOLVER_TWO_LINK
           : t0->has_up   ? PROTO_SOLVER_THREE_LINK
                          : PROTO_SOLVER_NUMERIC;
}

static void dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot)
{
    *dof = c->nlinks;
    *npos = c->nlinks + 1;
    *nrot = 0;
}

static size_t workspace(const proto_job *job)
{
    return job->solver == PROTO_SOLVER_NUMERIC ? proto__serial_workspace(job) : 0;
}

/* Sum of squared wrapped angle differences. */
static double angle_dist(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; k++) {
        double d = ik_wrap_angle(a[k] - b[k]);
        s += d * d;
    }
    return s;
}

static void run_analytic(proto_job *job, size_t i, proto_result *r)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    const double *seed = proto__seed_of(job, i, c->chain->dof);
    int bends[2] = {job->opt.bend ? job->opt.bend : 1, 0};
    int nb = 1;
    if (!job->opt.bend && seed) {
        bends[1] = -1;
        nb = 2;
    }
    double best = INFINITY;
    for (int k = 0; k < nb; k++) {
        double q[3];
        ik_vec2 j[4];
        double e;
        int st;
        ik_reach reach;
        if (c->nlinks == 2) {
            ik_twolink2d p = {c->lengths[0], c->lengths[1], ik_v2(c->base2[0], c->base2[1]),
                              ik_v2(t->position.x, t->position.y), bends[k]};
            ik_twolink2d_result o;
            st = ik_twolink2d_solve(&p, &o);
            q[0] = o.theta0, q[1] = o.theta1;
            memcpy(j, o.joints, sizeof o.joints);
            e = o.error;
            reach = o.reach;
        } else {
            ik_threelink2d p = {c->lengths[0],
                                c->lengths[1],
                                c->lengths[2],
                                ik_v2(c->base2[0], c->base2[1]),
                                ik_v2(t->position.x, t->position.y),
                                ik_v2(t->up.x, t->up.y),
                                bends[k]};
            ik_threelink2d_result o;
            st = ik_threelink2d_solve(&p, &o);
            q[0] = o.theta0, q[1] = o.theta1, q[2] = o.theta2;
            memcpy(j, o.joints, sizeof o.joints);
            e = o.error;
            reach = o.reach;
        }
        if (st == IK_EINVAL) {
            r->status = st;
            return;
        }
        double d = seed ? angle_dist(q, seed, c->nlinks) : 0;
        if (k == 0 || d < best) {
            best = d;
            r->status = st;
            r->cause = proto__reach_cause(st, reach);
            r->pos_err = e;
            memcpy(r->q, q, c->nlinks * sizeof *q);
            for (size_t m = 0; m <= c->nlinks; m++)
                r->positions[m] = ik_v3(j[m].x, j[m].y, 0);
        }
    }
    /* turns: each angle on the turn nearest the seed's (a stream's
     * previous answer), as the numeric solver answers continuous joints */
    if (seed && r->status != IK_EINVAL)
        for (size_t m = 0; m < c->nlinks; m++)
            r->q[m] = ik_chain_turn_near(c->chain, m, r->q[m], seed[m]);
    r->rot_err = -1;
}

static void run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    if (job->solver == PROTO_SOLVER_NUMERIC)
        proto__serial_run(job, i, r, ws, ws_size);
    else
        run_analytic(job, i, r);
}

const proto_kind_ops proto_kind_planar = {
    decode_planar, describe, proto__serial_seed_len, allows, pick, dims, workspace, run};
