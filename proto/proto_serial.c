/*
 * proto_serial.c: what the serial chains share (joints and urdf chains,
 * and a planar chain's numeric solve): their compiled ik_chain, the
 * numeric solver (ik_numeric_solve: damped least squares with restarts,
 * joint limits, full-pose, position-only and weighted targets, servo
 * periods, a step limit from the seed) and the closed form
 * (ik_closed_solve for 6-joint OPW and UR arms, every solution with
 * options.all_solutions), made and proved on first use and kept. "auto"
 * picks closed when the chain has a closed form and the first target is a
 * full pose, else numeric. The numeric solver times itself; the closed
 * form is timed by proto__run_one.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "solver/ik_numeric.h"
#include "solver/ik_servo.h"

/* Candidates the closed solver considers under options.max_joint_step (the
 * nearest first; more than the 8 branches times a few turns). */
#define CLOSED_CANDIDATES 64

/* Compiles the joints into c->chain, allocated here with its storage in
 * one block: only chains that need the numeric solver or forward
 * kinematics carry one (a bones chain decoded on every request should not
 * pay for it); with names, the movable joints' into c->names. Returns 0;
 * 1 when ik_chain_init() refuses the joints (the caller names the
 * reason); -1 with *err set when out of memory. When ik_chain_init()
 * refuses them, c->chain stays NULL. */
int proto__chain_compile(proto_chain *c, const ik_joint *j, size_t n,
                         char (*names)[PROTO_NAME_MAX], proto_error *err)
{
    const size_t store = ik_chain_storage_size(n);
    ik_chain *k = store < SIZE_MAX - sizeof *k ? malloc(sizeof *k + store) : NULL;
    if (!k)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    if (ik_chain_init(k, k + 1, store, j, n) != IK_OK) {
        free(k);
        return 1;
    }
    c->chain = k;
    c->memory += sizeof *k + store;
    /* the closed form joints and urdf chains get on first use */
    if (c->kind == PROTO_CHAIN_JOINTS || c->kind == PROTO_CHAIN_URDF)
        c->memory += sizeof(ik_closed);
    if (!names)
        return 0;
    c->names = calloc(k->dof, sizeof *c->names);
    if (!c->names)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    c->nnames = k->dof;
    for (size_t i = 0; i < k->dof; i++)
        memcpy(c->names[i], names[k->source_index[i]], PROTO_NAME_MAX);
    c->memory += c->nnames * PROTO_NAME_MAX;
    return 0;
}

/* The chain's closed form, made on first use and kept (proto_kind.h). */
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

bool proto__serial_allows(const proto_chain *c, proto_solver s)
{
    return s == PROTO_SOLVER_NUMERIC || (s == PROTO_SOLVER_CLOSED && closed_applies(c));
}

proto_solver proto__serial_pick(const proto_chain *c, const proto_target *t0)
{
    /* the closed form gives full poses only: position-only and weighted
     * targets go to the numeric solver */
    return t0->has_orientation && !t0->has_weights && closed_applies(c) ? PROTO_SOLVER_CLOSED
                                                                        : PROTO_SOLVER_NUMERIC;
}

size_t proto__serial_seed_len(const proto_chain *c)
{
    return c->chain->dof;
}

void proto__serial_dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot)
{
    *dof = c->chain->dof;
    *npos = c->chain->dof + 1;
    *nrot = 0;
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

size_t proto__serial_workspace(const proto_job *job)
{
    const ik_chain *c = job->chain->chain;
    return proto__collide_ws(job) +
           (job->solver == PROTO_SOLVER_CLOSED ? CLOSED_CANDIDATES * 6 * sizeof(double)
                                               : ik_numeric_workspace_size(c)) +
           answer_scratch_size(c);
}

void proto__serial_describe(const proto_chain *c, json_t *d)
{
    static const char *const tn[] = {"fixed", "revolute", "continuous", "prismatic"};
    proto__describe_size(d, c, "dof", c->chain->dof);
    json_t *lim = json_array();
    for (size_t i = 0; i < c->chain->dof; i++) {
        json_t *l = json_object();
        json_object_set_new(l, "type", json_string(tn[c->chain->type[i]]));
        if (isfinite(c->chain->lower[i])) {
            json_object_set_new(l, "lower", json_real(c->chain->lower[i]));
            json_object_set_new(l, "upper", json_real(c->chain->upper[i]));
        }
        json_array_append_new(lim, l);
    }
    json_object_set_new(d, "joints", lim);
}

/* Target t as the solvers' ik_target. */
ik_target proto__solver_target(const proto_target *t)
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

/* The position and orientation errors of pose got against want. */
static void pose_errors(ik_xform want, ik_xform got, double *pos, double *rot)
{
    double e[6];
    ik_pose_error(want, got, e);
    *pos = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    *rot = sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]);
}

/* The rest of a joint chain's answer once r->status and r->q are the
 * solver's: the servo period (streams), the step from the seed (refused:
 * the step that was refused, angular and prismatic, when r->status is
 * IK_ESTEP), every joint's position, the tip, and the errors (pos_err,
 * rot_err: the solver's, of r->q). sc: answer_scratch_take's; chk: the
 * collision check (NULL without a model). */
static void finish_joints(proto_job *job, size_t i, proto_result *r, const double *seed,
                          double pos_err, double rot_err, const double refused[2],
                          const answer_scratch *sc, const ik_collide_check *chk)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    double *from = sc->from;
    if (seed && job->opt.servo_period > 0) {
        /* servo: one period's motion toward the solution from where the
         * arm is (a joint past a limit comes back inside at its velocity),
         * every joint within its velocity limit; a failed solve holds */
        memcpy(from, seed, c->chain->dof * sizeof *from);
        double sf = r->status == IK_OK ? ik_servo_step(c->chain->dof, from, r->q,
                                                       job->opt.servo_velocity,
                                                       job->opt.servo_period, r->q)
                                       : -1.0;
        if (sf < 0.0)
            memcpy(r->q, from, c->chain->dof * sizeof *from);
        if (sf >= 0.0 && chk && chk->avoid) {
            /* near an obstacle the arm slows, and stops short of it */
            double cs = ik_collide_servo_scale(chk->model, &chk->scene, from, r->q, chk->margin,
                                               job->opt.servo_slow, chk->ws, chk->ws_size,
                                               NULL);
            if (cs >= 0.0 && cs < 1.0) {
                for (size_t k = 0; k < c->chain->dof; k++)
                    r->q[k] = from[k] + cs * (r->q[k] - from[k]);
                sf = 0.0;
            }
        }
        r->servo = sf >= 1.0 ? 1 : 0;
        /* the errors of the pose the arm is sent to */
        ik_xform tip = ik_chain_fk(c->chain, r->q);
        ik_xform want = {t->position, t->has_orientation ? t->orientation : tip.q};
        pose_errors(want, tip, &pos_err, &rot_err);
    }
    if (seed) {
        /* the motion the answer asks for, from the seed as the solver saw
         * it (inside the limits; servo: from where the arm is); when
         * refused, the motion refused */
        r->has_step = true;
        r->step_ang = r->step_lin = 0.0;
        if (r->status == IK_ESTEP && refused) {
            r->step_ang = refused[0];
            r->step_lin = refused[1];
        } else {
            if (job->opt.servo_period <= 0) /* servo: from holds the seed already */
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
    if (t->has_weights && t->has_orientation &&
        !(t->weight[3] > 0 || t->weight[4] > 0 || t->weight[5] > 0)) {
        /* the solver leaves an orientation no weight checks out of its
         * error: the answer's is still the angle to it */
        double pe;
        pose_errors((ik_xform){t->position, t->orientation}, r->tip, &pe, &rot_err);
    }
    r->pos_err = pos_err;
    r->rot_err = t->has_orientation ? rot_err : -1;
    proto__collide_measure(chk, r);
}

static void run_numeric(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const proto_target *t = &job->targets[i];
    ik_target tg = proto__solver_target(t);
    ik_numeric_opts o = ik_numeric_opts_default();
    if (job->opt.tolerance > 0)
        o.tol_pos = job->opt.tolerance;
    if (job->opt.angular_tolerance > 0)
        o.tol_rot = job->opt.angular_tolerance;
    o.timeout_s = job->opt.timeout_ms * 1e-3;
    o.max_iterations = job->opt.max_iterations ? job->opt.max_iterations : job->opt.iter_cap;
    o.search = job->opt.nearest ? IK_SEARCH_NEAREST_TO_SEED : IK_SEARCH_FIRST_FOUND;
    o.follow = job->opt.follow;
    const double *seed = proto__seed_of(job, i, c->chain->dof);
    if (seed && job->opt.max_joint_step_in > 0) {
        o.max_step = proto_angle_in(job->opt.units, job->opt.max_joint_step_in);
        o.max_step_lin = job->opt.max_joint_step_in;
    }
    ik_collide_check chk;
    bool coll = proto__collide_check(job, &chk, &ws, &ws_size);
    r->has_distance = false;
    if (coll && chk.avoid)
        o.collide = &chk;
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
    finish_joints(job, i, r, seed, res.pos_err, res.rot_err, refused, &sc, coll ? &chk : NULL);
}

/* The closed form (solver/ik_closed.h): the solution nearest the seed (the
 * mid-limit pose without one), turn-aware; with options.max_joint_step the
 * nearest within the step, or IK_ESTEP with the seed and the nearest
 * solution's step; with options.all_solutions every solution too. With
 * options.avoid_collisions, the nearest (within the step) clear by the
 * margin, or IK_ECOLLISION with the clearest. */
static void run_closed(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    const proto_chain *c = job->chain;
    const ik_closed *k = proto__chain_closed((proto_chain *)c);
    const proto_target *t = &job->targets[i];
    ik_target tg = proto__solver_target(t);
    ik_numeric_opts o = ik_numeric_opts_default();
    if (job->opt.tolerance > 0)
        o.tol_pos = job->opt.tolerance;
    if (job->opt.angular_tolerance > 0)
        o.tol_rot = job->opt.angular_tolerance;
    const double *seed = proto__seed_of(job, i, c->chain->dof);
    const size_t n = c->chain->dof;
    ik_closed_result res;
    ik_collide_check chk;
    bool coll = proto__collide_check(job, &chk, &ws, &ws_size);
    const ik_collide_check *avoid = coll && chk.avoid ? &chk : NULL;
    o.collide = avoid;
    r->has_distance = false;
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
        size_t pick = m, clear = m;
        double clear_d = -INFINITY;
        for (size_t s = 0; s < m && pick == m; s++) {
            bool within = true;
            for (size_t j = 0; j < n; j++)
                within &= fabs(cand[6 * s + j] - from[j]) <= step;
            if (within && avoid) {
                /* within the step, and clear: else the clearest is kept */
                double d = ik_collide_distance(avoid->model, &avoid->scene, cand + 6 * s,
                                               avoid->ws, avoid->ws_size, NULL);
                if (d < avoid->margin) {
                    within = false;
                    if (d > clear_d) {
                        clear_d = d;
                        clear = s;
                    }
                }
            }
            if (within)
                pick = s;
        }
        if (pick < m) {
            memcpy(r->q, cand + 6 * pick, n * sizeof *r->q);
            r->status = IK_OK;
        } else if (clear < m) {
            memcpy(r->q, cand + 6 * clear, n * sizeof *r->q);
            r->status = IK_ECOLLISION;
        } else {
            for (size_t j = 0; j < n; j++)
                refused[0] = fmax(refused[0], fabs(cand[j] - from[j]));
            memcpy(r->q, from, n * sizeof *r->q);
            r->status = IK_ESTEP;
        }
        r->cause = r->status == IK_ECOLLISION ? IK_REASON_IN_COLLISION : IK_REASON_NONE;
        double pe, re;
        pose_errors(tg.pose, ik_chain_fk(c->chain, r->q), &pe, &re);
        finish_joints(job, i, r, seed, pe, re, r->status == IK_OK ? NULL : refused, &sc,
                      coll ? &chk : NULL);
        return;
    }
    r->status = ik_closed_solve(c->chain, k, &tg, seed, &o, r->q, &res);
    r->cause = res.reason;
    if (r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    if (step > 0.0) {
        /* an answer past the step (a failed solve's best pose) is refused
         * as a solution past it is; the failure's cause is kept */
        seed_inside(c->chain, seed, sc.from);
        for (size_t j = 0; j < n; j++)
            refused[0] = fmax(refused[0], fabs(r->q[j] - sc.from[j]));
        if (refused[0] > step) {
            memcpy(r->q, sc.from, n * sizeof *r->q);
            r->status = IK_ESTEP;
            r->cause = r->cause == IK_REASON_IN_COLLISION ? IK_REASON_NONE : r->cause;
            pose_errors(tg.pose, ik_chain_fk(c->chain, r->q), &res.pos_err, &res.rot_err);
        }
    }
    finish_joints(job, i, r, seed, res.pos_err, res.rot_err, refused, &sc, coll ? &chk : NULL);
}

void proto__serial_run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size)
{
    if (job->solver == PROTO_SOLVER_CLOSED)
        run_closed(job, i, r, ws, ws_size);
    else
        run_numeric(job, i, r, ws, ws_size);
}
