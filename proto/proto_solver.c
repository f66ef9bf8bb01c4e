/*
 * proto_solver.c: the solver bindings of the wire format. Picks the solver a
 * request asks for (or the one "auto" selects), checks that each target
 * carries what that solver needs and nothing it would ignore, and runs it,
 * all in ikd's internal convention (ROS frame, radians).
 *
 * Solvers and what binds them:
 *   two_link       ik_twolink2d_solve   (seed 000, two-link planar)
 *   three_link     ik_threelink2d_solve (seed 000, three-link planar, end
 *                                        direction "up")
 *   three_link_3d  ik_threelink3d_solve (seed 000, three-link in 3D)
 *   two_bone       ik_twobone_solve     (seed 001) on bones, or
 *                  ik_skeleton_twobone  (seed 001 with the bone orientation
 *                                        update) on skeletons
 *   fabrik, ccd    ik_fabrik_solve, ik_ccd_solve
 *   numeric        ik_numeric_solve     (joints, URDF and planar chains),
 *                  ik_tree_solve        (tree chains of URDF links, joint
 *                                       lists or a skeleton's bones,
 *                                       proto_tree.c)
 *   closed         ik_closed_solve      (joints and URDF chains whose six
 *                  (_all)               joints form an OPW or UR arm,
 *                                       solver/ik_closed.h; full poses only)
 * "auto": two lengths -> two_link; three lengths with target.up ->
 * three_link, without -> numeric; links3d -> three_link_3d; three bone
 * positions -> two_bone, more or fewer -> fabrik; skeleton -> two_bone;
 * joints and urdf -> closed when the chain has a closed form and the first
 * target is a full pose (an orientation, no weights), else numeric.
 *
 * Bone rotations (bones chains): the chain's rotations belong to the chain's
 * pose; each bone's new world rotation is the minimal rotation (seed 001,
 * GetRotationBetween) from its direction in the chain's pose to its new
 * direction, applied to its rotation; the end joint turns with the last
 * bone. Local rotations are relative to the previous joint's new world
 * rotation.
 *
 * Failures carry their cause (result.cause, solver/ik_reason.h): the
 * numeric and closed solvers report it; the seeds' analytic solvers from
 * their reach case (too far: out of reach; too close: no solution); FABRIK
 * and CCD from their status (unreachable: beyond the chain's length; not
 * converged: the iteration budget).
 *
 * The analytic and closed-form solvers are timed here (CLOCK_MONOTONIC); the
 * numeric solver times itself.
 */
#include "proto/proto_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/ik_anim.h"
#include "solver/ik_ccd.h"
#include "solver/ik_fabrik.h"
#include "solver/ik_numeric.h"
#include "solver/ik_planar.h"
#include "solver/ik_reason.h"
#include "solver/ik_servo.h"
#include "solver/ik_status.h"
#include "solver/ik_twobone.h"

const char *const proto_solver_names[] = {"auto",     "two_link", "three_link", "three_link_3d",
                                          "two_bone", "fabrik",   "ccd",        "numeric",
                                          "closed",   NULL};

/* Candidates the closed solver considers under options.max_joint_step (the
 * nearest first; more than the 8 branches times a few turns). */
#define CLOSED_CANDIDATES 64

/* ---- choosing the solver ---------------------------------------------- */

/* The chain's closed form, made on first use and kept (proto_impl.h). */
const ik_closed *proto__chain_closed(proto_chain *c)
{
    if ((c->kind != PROTO_CHAIN_JOINTS && c->kind != PROTO_CHAIN_URDF) || !c->chain)
        return NULL;
    ik_closed *k = atomic_load(&c->closed);
    if (k)
        return k;
    k = malloc(sizeof *k);
    if (!k)
        return NULL;
    ik_closed_init(k, c->chain);
    ik_closed *none = NULL;
    if (!atomic_compare_exchange_strong(&c->closed, &none, k)) {
        free(k); /* another thread was first: use its copy */
        k = none;
    }
    return k;
}

/* True when chain c (joints or urdf) has a proved closed form. */
static bool closed_applies(const proto_chain *c)
{
    const ik_closed *k = proto__chain_closed((proto_chain *)c);
    return k && k->kind != IK_CLOSED_NONE;
}

static bool allowed(const proto_chain *c, proto_solver s)
{
    switch (c->kind) {
    case PROTO_CHAIN_PLANAR:
        return s == PROTO_SOLVER_NUMERIC ||
               s == (c->nlinks == 2 ? PROTO_SOLVER_TWO_LINK : PROTO_SOLVER_THREE_LINK);
    case PROTO_CHAIN_LINKS3D:
        return s == PROTO_SOLVER_THREE_LINK_3D;
    case PROTO_CHAIN_BONES:
        return s == PROTO_SOLVER_FABRIK || s == PROTO_SOLVER_CCD ||
               (s == PROTO_SOLVER_TWO_BONE && c->nbones == 3);
    case PROTO_CHAIN_SKELETON:
        return s == PROTO_SOLVER_TWO_BONE;
    default:
        return s == PROTO_SOLVER_NUMERIC || (s == PROTO_SOLVER_CLOSED && closed_applies(c));
    }
}

int proto__resolve_solver(const proto_chain *c, const proto_options *o, const proto_target *t0,
                          proto_solver *out, proto_error *err)
{
    proto_solver s = o->solver;
    if (s == PROTO_SOLVER_AUTO) {
        switch (c->kind) {
        case PROTO_CHAIN_PLANAR:
            s = c->nlinks == 2 ? PROTO_SOLVER_TWO_LINK
                : t0->has_up   ? PROTO_SOLVER_THREE_LINK
                               : PROTO_SOLVER_NUMERIC;
            break;
        case PROTO_CHAIN_LINKS3D:
            s = PROTO_SOLVER_THREE_LINK_3D;
            break;
        case PROTO_CHAIN_BONES:
            s = c->nbones == 3 ? PROTO_SOLVER_TWO_BONE : PROTO_SOLVER_FABRIK;
            break;
        case PROTO_CHAIN_SKELETON:
            s = PROTO_SOLVER_TWO_BONE;
            break;
        default:
            /* the closed form gives full poses only: position-only and
             * weighted targets go to the numeric solver */
            s = t0->has_orientation && !t0->has_weights && closed_applies(c)
                    ? PROTO_SOLVER_CLOSED
                    : PROTO_SOLVER_NUMERIC;
        }
    }
    if (s == PROTO_SOLVER_CLOSED && (c->kind == PROTO_CHAIN_JOINTS || c->kind == PROTO_CHAIN_URDF) &&
        !closed_applies(c)) {
        const ik_closed *k = proto__chain_closed((proto_chain *)c);
        if (!k)
            return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/solver",
                               "the closed solver does not apply to this %s chain: %s (%s); "
                               "use numeric or auto",
                               proto_chain_kind_names[c->kind], ik_closed_why_message(k->why),
                               ik_closed_why_name(k->why));
    }
    if (!allowed(c, s))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/solver",
                               "the %s solver does not apply to this %s chain",
                               proto_solver_names[s], proto_chain_kind_names[c->kind]);
    *out = s;
    return 0;
}

static int field_error(proto_error *err, const char *path, const char *key, const char *what,
                       const char *solver)
{
    char p[PROTO_PATH_MAX], name[PROTO_PATH_MAX];
    proto_json_path_key(p, path, key);
    proto_json_path_name(name, sizeof name, p);
    return proto_error_set(err, PROTO_E_INVALID_REQUEST, p, "%s %s by the %s solver", name, what,
                           solver);
}

int proto__check_target(const proto_job *job, const proto_target *t, const char *path,
                        proto_error *err)
{
    const char *sn = proto_solver_names[job->solver];
    bool want_up = false, up_ok = false, orient_ok = false, pole_ok = false;
    switch (job->solver) {
    case PROTO_SOLVER_THREE_LINK:
    case PROTO_SOLVER_THREE_LINK_3D:
        want_up = up_ok = true;
        break;
    case PROTO_SOLVER_TWO_BONE:
    case PROTO_SOLVER_FABRIK:
    case PROTO_SOLVER_CCD:
        pole_ok = true;
        break;
    case PROTO_SOLVER_NUMERIC:
        orient_ok = job->chain->kind != PROTO_CHAIN_PLANAR;
        break;
    case PROTO_SOLVER_CLOSED:
        orient_ok = true;
        if (!t->has_orientation)
            return field_error(err, path, "orientation",
                               "is required (a full pose: position-only and weighted targets "
                               "are solved by numeric)",
                               sn);
        break;
    default:
        break;
    }
    if (job->solver == PROTO_SOLVER_CLOSED && t->has_weights)
        return field_error(err, path, "weights",
                           "are not used (the closed form meets the full pose; weighted "
                           "targets are solved by numeric)",
                           sn);
    if (want_up && !t->has_up)
        return field_error(err, path, "up", "is required", sn);
    if (!up_ok && t->has_up)
        return field_error(err, path, "up", "is not used", sn);
    if (!pole_ok && t->has_pole)
        return field_error(err, path, "pole", "is not used", sn);
    if (!orient_ok && t->has_orientation)
        return field_error(err, path, "orientation", "is not used", sn);
    if (!orient_ok && t->has_weights)
        return field_error(err, path, "weights", "are not used", sn);
    return 0;
}

void proto__result_dims(const proto_chain *c, proto_solver s, size_t *dof, size_t *npos,
                        size_t *nrot)
{
    *dof = *npos = *nrot = 0;
    switch (c->kind) {
    case PROTO_CHAIN_PLANAR:
        *dof = c->nlinks;
        *npos = c->nlinks + 1;
        break;
    case PROTO_CHAIN_LINKS3D:
        *dof = 5;
        *npos = 4;
        *nrot = 3;
        break;
    case PROTO_CHAIN_BONES:
        *npos = *nrot = c->nbones;
        break;
    case PROTO_CHAIN_SKELETON:
        *npos = 3;
        *nrot = c->nskel;
        break;
    case PROTO_CHAIN_TREE:
        if (c->skel) /* a tree of bones: every bone's position and local rotation */
            *npos = *nrot = c->nskel;
        else
            *dof = c->tree->dof;
        /* and a pose per tip (proto_tip_result) */
        break;
    default:
        *dof = c->chain->dof;
        *npos = c->chain->dof + 1;
    }
    (void)s;
}

/* A joint chain's answer scratch (finish_joints), at the end of the
 * workspace: the seed inside the limits (dof doubles), aligned. */
static size_t answer_scratch_size(const ik_chain *c)
{
    return c->dof * sizeof(double) + 16;
}

typedef struct answer_scratch {
    double *from;
} answer_scratch;

/* The scratch at the end of ws (ws_size bytes, of which the solver gets
 * the rest: the new size). */
static size_t answer_scratch_take(const ik_chain *c, void *ws, size_t ws_size, answer_scratch *a)
{
    const size_t need = answer_scratch_size(c);
    if (!ws || ws_size < need) {
        a->from = NULL;
        return 0;
    }
    a->from = (double *)(((uintptr_t)ws + ws_size - need + 15) & ~(uintptr_t)15);
    return ws_size - need;
}

size_t proto__workspace_size(const proto_job *job)
{
    const proto_chain *c = job->chain;
    size_t ws = 0;
    switch (job->solver) {
    case PROTO_SOLVER_NUMERIC:
        ws = c->tree ? proto__tree_workspace_size(c)
                     : ik_numeric_workspace_size(c->chain) + answer_scratch_size(c->chain);
        break;
    case PROTO_SOLVER_CLOSED:
        ws = CLOSED_CANDIDATES * 6 * sizeof(double) + answer_scratch_size(c->chain);
        break;
    case PROTO_SOLVER_FABRIK:
    case PROTO_SOLVER_CCD:
        ws = ik_anim_workspace_size(c->nbones) + c->nbones * sizeof(ik_vec3);
        break;
    case PROTO_SOLVER_TWO_BONE:
        if (c->kind == PROTO_CHAIN_SKELETON)
            ws = c->nskel * (sizeof(ik_bone) + sizeof(ik_mat34));
        break;
    default:
        break;
    }
    return ws;
}

/* ---- running ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const double *seed_of(const proto_job *job, size_t i, size_t len)
{
    return job->has_seed[i] && job->seed_q ? job->seed_q + i * len : NULL;
}

/* The cause of an analytic solver's failure from its reach case
 * (solver/ik_reach.h): too far is beyond the chain's reach, too close has
 * no solution although within reach. */
static int reach_cause(int st, ik_reach reach)
{
    if (st != IK_EUNREACHABLE)
        return IK_REASON_NONE;
    return reach == IK_REACH_TOO_CLOSE ? IK_REASON_NO_SOLUTION : IK_REASON_OUT_OF_REACH;
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

static void run_planar(proto_job *job, size_t i, proto_result *r)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    const double *seed = seed_of(job, i, c->chain->dof);
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
            r->cause = reach_cause(st, reach);
            r->pos_err = e;
            memcpy(r->q, q, c->nlinks * sizeof *q);
            for (size_t m = 0; m <= c->nlinks; m++)
                r->positions[m] = ik_v3(j[m].x, j[m].y, 0);
        }
    }
    r->rot_err = -1;
}

static void run_links3d(proto_job *job, size_t i, proto_result *r)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    ik_threelink3d p = {c->lengths[0], c->lengths[1], c->lengths[2], c->origin,
                        t->position,   t->up,         job->opt.bend ? job->opt.bend : 1};
    ik_threelink3d_result o;
    r->status = ik_threelink3d_solve(&p, &o);
    r->cause = reach_cause(r->status, o.reach);
    r->rot_err = -1;
    if (r->status == IK_EINVAL)
        return;
    r->q[0] = o.yaw, r->q[1] = o.theta0, r->q[2] = o.theta1, r->q[3] = o.theta2, r->q[4] = o.roll;
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

/* New world and local rotations of a bones chain for the new positions. */
static void bone_rotations(const proto_chain *c, const ik_vec3 *np, proto_result *r)
{
    size_t n = c->nbones;
    ik_quat d = ik_quat_identity();
    for (size_t k = 0; k < n; k++) {
        if (k + 1 < n)
            d = ik_quat_between(ik_vec3_sub(c->positions[k + 1], c->positions[k]),
                                ik_vec3_sub(np[k + 1], np[k]));
        r->rotations[k] = ik_quat_normalize(ik_quat_mul(d, c->rotations[k]));
        r->local[k] = k == 0 ? r->rotations[0]
                             : ik_quat_normalize(
                                   ik_quat_mul(ik_quat_conj(r->rotations[k - 1]), r->rotations[k]));
    }
}

static void run_bones(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    size_t n = c->nbones;
    const double *seed = seed_of(job, i, 3 * n);
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
        r->cause = reach_cause(r->status, o.reach);
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
    bone_rotations(c, r->positions, r);
}

static void run_skeleton(proto_job *job, size_t i, proto_result *r, void *ws)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    size_t n = c->nskel;
    ik_bone *bones = (ik_bone *)ws;
    ik_mat34 *g = (ik_mat34 *)(bones + n);
    memcpy(bones, c->skel, n * sizeof *bones);
    const double *seed = seed_of(job, i, 4 * n);
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
    r->cause = reach_cause(r->status, o.reach);
    if (r->status == IK_EINVAL)
        return;
    r->positions[0] = ik_mat34_origin(&g[c->limb[0]]);
    r->positions[1] = o.b;
    r->positions[2] = o.c;
    for (size_t k = 0; k < n; k++)
        r->local[k] = r->rotations[k] = ik_quat_normalize(bones[k].rotation);
    r->pos_err = o.error;
}

/* Target i as the solvers' ik_target. */
static ik_target solver_target(const proto_target *t)
{
    ik_target tg;
    if (t->has_weights) {
        memset(&tg, 0, sizeof tg);
        tg.pose.p = t->position;
        tg.pose.q = t->orientation;
        tg.mode = IK_TARGET_WEIGHTED;
        memcpy(tg.weight, t->weight, sizeof tg.weight);
    } else if (t->has_orientation) {
        ik_xform x = {t->position, t->orientation};
        tg = ik_target_full_pose(x);
    } else {
        tg = ik_target_position(t->position);
    }
    return tg;
}

/* The seed as the solvers see it: continuous joints as given, the others
 * clamped into their limits. */
static void seed_inside(const ik_chain *c, const double *seed, double *out)
{
    for (size_t k = 0; k < c->dof; k++)
        out[k] = c->type[k] == IK_JOINT_CONTINUOUS ? seed[k]
                                                   : ik_clamp(seed[k], c->lower[k], c->upper[k]);
}

/* The rest of a joint chain's answer once r->status and r->q are the
 * solver's: the servo period (streams), the step from the seed (refused:
 * the step that was refused, angular and prismatic, when r->status is
 * IK_ESTEP), every joint's position, the tip, and the errors (pos_err,
 * rot_err: the solver's, of r->q). sc: answer_scratch_take's. */
static void finish_joints(proto_job *job, size_t i, proto_result *r, const double *seed,
                          double pos_err, double rot_err, const double refused[2],
                          const answer_scratch *sc)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    double *from = sc->from;
    if (seed && job->opt.servo_period > 0) {
        /* servo: one period's motion toward the solution, every joint
         * within its velocity limit; on a failed solve the arm holds */
        seed_inside(c->chain, seed, from);
        double sf = r->status == IK_OK ? ik_servo_step(c->chain->dof, from, r->q,
                                                       job->opt.servo_velocity,
                                                       job->opt.servo_period, r->q)
                                       : -1.0;
        if (sf < 0.0)
            memcpy(r->q, from, c->chain->dof * sizeof *from);
        r->servo = sf >= 1.0 ? 1 : 0;
        /* the errors of the pose the arm is sent to */
        ik_xform tip = ik_chain_fk(c->chain, r->q);
        double e[6];
        ik_xform want = {t->position, t->has_orientation ? t->orientation : tip.q};
        ik_pose_error(want, tip, e);
        pos_err = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
        rot_err = sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]);
    }
    if (seed) {
        /* the motion the answer asks for, from the seed as the solver saw
         * it (inside the limits); when refused, the motion refused */
        r->has_step = true;
        r->step_ang = r->step_lin = 0.0;
        if (r->status == IK_ESTEP && refused) {
            r->step_ang = refused[0];
            r->step_lin = refused[1];
        } else {
            seed_inside(c->chain, seed, from);
            for (size_t k = 0; k < c->chain->dof; k++) {
                double d = fabs(r->q[k] - from[k]);
                double *m = c->chain->type[k] == IK_JOINT_PRISMATIC ? &r->step_lin : &r->step_ang;
                if (d > *m)
                    *m = d;
            }
        }
    }
    /* every joint's position and the tip, in one walk down the chain */
    ik_chain_positions(c->chain, r->q, r->positions, &r->tip);
    r->has_tip = c->kind != PROTO_CHAIN_PLANAR;
    r->pos_err = pos_err;
    r->rot_err = t->has_orientation ? rot_err : -1;
}

static void run_numeric(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    ik_target tg = solver_target(t);
    ik_numeric_opts o = ik_numeric_opts_default();
    if (job->opt.tolerance > 0)
        o.tol_pos = job->opt.tolerance;
    if (job->opt.angular_tolerance > 0)
        o.tol_rot = job->opt.angular_tolerance;
    o.timeout_s = job->opt.timeout_ms * 1e-3;
    o.max_iterations = job->opt.max_iterations ? job->opt.max_iterations : job->opt.iter_cap;
    o.search = job->opt.nearest ? IK_SEARCH_NEAREST_TO_SEED : IK_SEARCH_FIRST_FOUND;
    o.follow = job->opt.follow;
    const double *seed = seed_of(job, i, c->chain->dof);
    if (seed && job->opt.max_joint_step_in > 0) {
        o.max_step = proto_angle_in(job->opt.units, job->opt.max_joint_step_in);
        o.max_step_lin = job->opt.max_joint_step_in;
    }
    ik_numeric_result res;
    answer_scratch sc;
    ws_size = answer_scratch_take(c->chain, ws, ws_size, &sc);
    if (!sc.from) {
        r->status = IK_ENOSPC;
        return;
    }
    r->status = ik_numeric_solve(c->chain, &tg, seed, &o, ws, ws_size, r->q, &res);
    r->iterations = res.iterations;
    r->restarts = res.restarts;
    r->time_s = res.elapsed_s;
    r->has_step = false;
    r->cause = res.reason;
    if (r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    const double refused[2] = {res.step_ang, res.step_lin};
    finish_joints(job, i, r, seed, res.pos_err, res.rot_err, refused, &sc);
}

/* The closed form (solver/ik_closed.h): the solution nearest the seed (the
 * mid-limit pose without one), turn-aware; with options.max_joint_step the
 * nearest within the step, or IK_ESTEP with the seed and the nearest
 * solution's step; with options.all_solutions every solution too. */
static void run_closed(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const ik_closed *k = proto__chain_closed((proto_chain *)c);
    const proto_target *t = &job->targets[i];
    ik_target tg = solver_target(t);
    ik_numeric_opts o = ik_numeric_opts_default();
    if (job->opt.tolerance > 0)
        o.tol_pos = job->opt.tolerance;
    if (job->opt.angular_tolerance > 0)
        o.tol_rot = job->opt.angular_tolerance;
    const double *seed = seed_of(job, i, c->chain->dof);
    const size_t n = c->chain->dof;
    ik_closed_result res;
    r->nall = r->total = 0;
    answer_scratch sc;
    ws_size = answer_scratch_take(c->chain, ws, ws_size, &sc);
    if (!k || !sc.from) {
        r->status = IK_ENOSPC;
        return;
    }
    if (job->opt.all_solutions) {
        r->nall = ik_closed_solve_all(c->chain, k, &tg, seed, &o, r->all, job->sol_cap, &res);
        r->total = res.status == IK_OK ? res.solutions : 0;
    }
    double refused[2] = {0.0, 0.0};
    double step = seed ? proto_angle_in(job->opt.units, job->opt.max_joint_step_in) : 0.0;
    double *cand = ws;
    size_t m = 0;
    if (step > 0.0 && ws_size >= CLOSED_CANDIDATES * 6 * sizeof(double))
        m = ik_closed_solve_all(c->chain, k, &tg, seed, &o, cand, CLOSED_CANDIDATES, &res);
    if (m > 0) {
        /* the nearest solution within the step (all joints turn) */
        double *from = sc.from;
        seed_inside(c->chain, seed, from);
        size_t pick = m;
        for (size_t s = 0; s < m && pick == m; s++) {
            bool within = true;
            for (size_t j = 0; j < n; j++)
                within &= fabs(cand[6 * s + j] - from[j]) <= step;
            if (within)
                pick = s;
        }
        if (pick < m) {
            memcpy(r->q, cand + 6 * pick, n * sizeof *r->q);
            r->status = IK_OK;
        } else {
            for (size_t j = 0; j < n; j++)
                refused[0] = fmax(refused[0], fabs(cand[j] - from[j]));
            memcpy(r->q, from, n * sizeof *r->q);
            r->status = IK_ESTEP;
        }
        r->cause = IK_REASON_NONE;
        ik_xform x = ik_chain_fk(c->chain, r->q);
        double e[6];
        ik_pose_error(tg.pose, x, e);
        finish_joints(job, i, r, seed, sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]),
                      sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]),
                      r->status == IK_OK ? NULL : refused, &sc);
        return;
    }
    r->status = ik_closed_solve(c->chain, k, &tg, seed, &o, r->q, &res);
    r->cause = res.reason;
    if (r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    finish_joints(job, i, r, seed, res.pos_err, res.rot_err, refused, &sc);
}

void proto__run_one(proto_job *job, size_t i, void *ws, size_t ws_size)
{
    proto_result *r = proto__result(job, i);
    double t0 = now_s();
    r->iterations = r->restarts = 0;
    r->has_tip = false;
    r->has_step = false;
    r->servo = -1;
    r->cause = IK_REASON_NONE;
    r->pos_err = 0;
    r->rot_err = -1;
    switch (job->solver) {
    case PROTO_SOLVER_TWO_LINK:
    case PROTO_SOLVER_THREE_LINK:
        run_planar(job, i, r);
        break;
    case PROTO_SOLVER_THREE_LINK_3D:
        run_links3d(job, i, r);
        break;
    case PROTO_SOLVER_TWO_BONE:
        if (job->chain->kind == PROTO_CHAIN_SKELETON)
            run_skeleton(job, i, r, ws);
        else
            run_bones(job, i, r, ws, ws_size);
        break;
    case PROTO_SOLVER_FABRIK:
    case PROTO_SOLVER_CCD:
        run_bones(job, i, r, ws, ws_size);
        break;
    case PROTO_SOLVER_CLOSED:
        run_closed(job, i, r, ws, ws_size);
        break;
    default:
        if (job->chain->kind == PROTO_CHAIN_TREE)
            proto__run_tree(job, i, r, ws, ws_size);
        else
            run_numeric(job, i, r, ws, ws_size);
        return; /* timed by the solver */
    }
    r->time_s = now_s() - t0;
}

/* ---- discovery -------------------------------------------------------- */

json_t *proto_solvers_describe(const proto_limits *lim)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    static const struct {
        const char *name, *chains, *what;
    } tab[] = {
        {"two_link", "planar (2 lengths)", "seed 000 two-link planar, law of cosines"},
        {"three_link", "planar (3 lengths), target.up", "seed 000 three-link planar with end "
                                                        "direction"},
        {"three_link_3d", "links3d, target.up", "seed 000 three-link in 3D"},
        {"two_bone", "bones (3 positions), skeleton", "seed 001 two-bone with knee nearest its "
                                                      "current position or a pole"},
        {"fabrik", "bones", "FABRIK (Aristidou and Lasenby 2011)"},
        {"ccd", "bones", "cyclic coordinate descent"},
        {"numeric", "joints, urdf, planar, tree",
         "damped least squares with random restarts, joint limits, full-pose/position/weighted "
         "targets; on trees several tips at once, with priorities, weights and secondary "
         "objectives, a skeleton's bones turning as ball joints"},
        {"closed", "joints, urdf (6 joints: OPW or UR arm, found from the chain)",
         "closed form with every solution (Brandstoetter et al. 2014 for spherical wrists, "
         "Hawkins 2013 for UR arms), proved by forward kinematics; full-pose targets"},
    };
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s}", "name", tab[i].name, "chains", tab[i].chains,
                              "description", tab[i].what);
        json_array_append_new(a, o);
    }
    /* The defaults are the ones decode_options() (proto_job_decode.c) leaves and
     * the solvers then apply; those that depend on the solver are given per
     * solver, and only for the solvers that use the option. */
    ik_numeric_opts nd = ik_numeric_opts_default();
    double timeout = proto_limits_default_timeout_ms(lim);
    json_t *opts = json_pack(
        "{s:{s:s, s:[s,s,s,s,s,s,s,s,s], s:s}, "
        "s:{s:s, s:{s:f, s:f, s:f}, s:s}, "
        "s:{s:s, s:f, s:s}, "
        "s:{s:s, s:{s:I, s:i, s:i}, s:I, s:s}, "
        "s:{s:s, s:f, s:f, s:s}, "
        "s:{s:s, s:[s,s], s:s}, s:{s:s, s:[s,s]}, s:{s:s, s:[s,s,s]}, "
        "s:{s:{s:i, s:i, s:i}, s:[i,i], s:s}}",
        "solver", "default", "auto", "values", "auto", "two_link", "three_link", "three_link_3d",
        "two_bone", "fabrik", "ccd", "numeric", "closed", "description",
        "auto: joints and urdf chains get closed when it applies (GET /v1/chains/{id} says) and "
        "the target is a full pose, else numeric", /* */
        "tolerance", "type", "number > 0 (length)", "default", "numeric", nd.tol_pos, "fabrik",
        IK_ANIM_DEFAULT_TOLERANCE, "ccd", IK_ANIM_DEFAULT_TOLERANCE, "description",
        "numeric: per component of the position error; fabrik/ccd: the default is relative "
        "(times the chain's total length), a value given is absolute; the analytic solvers "
        "take none", /* */
        "angular_tolerance", "type", "number > 0 (angle units)", "default", nd.tol_rot,
        "description", "numeric only, per component of the rotation error; radians unless "
        "units is degrees", /* */
        "max_iterations", "type", "integer >= 1", "default", "numeric",
        (json_int_t)lim->max_iterations, "fabrik", IK_ANIM_DEFAULT_ITERATIONS, "ccd",
        IK_ANIM_DEFAULT_ITERATIONS, "max", (json_int_t)lim->max_iterations, "description",
        "numeric: over all restarts, bounded by timeout_ms as well; fabrik/ccd: forward and "
        "backward passes or sweeps", /* */
        "timeout_ms", "type", "number >= 0", "default", timeout, "max", lim->max_time_ms,
        "description",
        "numeric only; the solving thread's CPU time, the wall clock at most 10 times it (never "
        "before 256 iterations); 0: no time budget, max_iterations bounds the search",
        /* */
        "search", "default", "first", "values", "first", "nearest", "description",
        "numeric only; a stream's warm-started solves are always nearest", /* */
        "units", "default", "radians", "values", "radians", "degrees", /* */
        "frame", "default", "ros", "values", "ros", "unity", "unreal", /* */
        "bend", "default", "two_link", 1, "three_link", 1, "three_link_3d", 1, "values", 1, -1,
        "description",
        "elbow side of seed 000's solvers; without it two_link and three_link take the side "
        "nearest their seed when they have one (warm starts included)");
    json_object_set_new(
        opts, "max_joint_step",
        json_pack("{s:s, s:s, s:s}", "type",
                  "number > 0 (angle units; length for prismatic joints)", "default", "none",
                  "description",
                  "numeric and closed, with a seed: an answer moving a joint farther from its "
                  "seed is refused (reason joint_step, the seed returned, max_joint_step the "
                  "step refused)"));
    json_object_set_new(
        opts, "all_solutions",
        json_pack("{s:s, s:b, s:I, s:s}", "type", "boolean", "default", 0, "max",
                  (json_int_t)PROTO_MAX_SOLUTIONS, "description",
                  "closed only: every solution in the answer (solutions, nearest the seed first, "
                  "at most max; solution_count), whole turns of joints with 2 pi ranges included"));
    json_object_set_new(
        opts, "servo",
        json_pack("{s:s, s:s, s:s}", "type",
                  "{period_s: number in (0, 1], velocity: [number > 0]}", "default", "none",
                  "description",
                  "streams only, joints and urdf chains: each answer one period of at most "
                  "velocity x period_s per joint toward the solution; velocity defaults to the "
                  "URDF's <limit velocity>"));
    json_object_set_new(
        opts, "fields",
        json_pack("{s:s, s:s, s:s}", "type", "[member name]", "default", "all",
                  "description",
                  "the result members answered (status always): code, reason, cause, joints, "
                  "positions, rotations, local_rotations, tip, tips, position_error, "
                  "orientation_error, max_joint_step, arrived, solutions, solution_count, "
                  "iterations, restarts, time_ms"));
    json_object_set_new(
        opts, "digits",
        json_pack("{s:s, s:s, s:s}", "type", "integer 1..17", "default", "shortest",
                  "description",
                  "significant digits of every number in a result, correctly rounded; without "
                  "it each number has the fewest digits that read back exactly"));
    json_object_set_new(
        opts, "objective",
        json_pack("{s:s, s:[s,s,s,s,s], s:s}", "default", "none", "values", "none", "distance",
                  "manip1", "manip2", "mid_limits", "description",
                  "tree chains only: which solution to answer when there are several (TRAC-IK's "
                  "Distance, Manip1, Manip2, and joints nearest the middle of their limits, which "
                  "trees of bones have not); distance for search nearest and on streams"));
    json_t *l = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:I}", "max_body_bytes",
                          (json_int_t)lim->max_body_bytes, "max_joints",
                          (json_int_t)lim->max_joints, "max_targets", (json_int_t)lim->max_targets,
                          "max_items", (json_int_t)lim->max_items,
                          "max_iterations", (json_int_t)lim->max_iterations, "max_time_ms",
                          lim->max_time_ms, "max_urdf_bytes", (json_int_t)lim->max_urdf_bytes);
    return json_pack("{s:o, s:o, s:o}", "solvers", a, "options", opts, "limits", l);
}
