/*
 * proto_solver.c: the solver binding of the wire format, the same for
 * every chain kind: the solver a request asks for (or the one "auto"
 * picks, the chain kind's choice), that it applies to the chain, that each
 * target carries what that solver needs and nothing it would ignore, and a
 * solve through the kind's operations (proto/proto_kind.h), all in ikd's
 * internal convention (ROS frame, radians); and the discovery document
 * (GET /v1/solvers).
 *
 * Solvers and where they are bound:
 *   two_link, three_link   planar chains (proto_kind_planar.c, seed 000)
 *   three_link_3d          links3d chains (proto_kind_links3d.c, seed 000)
 *   two_bone               bones (proto_kind_bones.c) and skeletons
 *                          (proto_kind_skeleton.c), seed 001
 *   fabrik, ccd            bones chains
 *   numeric                joints, urdf and planar chains (proto_serial.c),
 *                          trees (proto_kind_tree.c)
 *   closed                 joints and urdf chains whose six joints form an
 *                          OPW or UR arm (proto_serial.c; full poses only)
 *
 * Failures carry their cause (result.cause, solver/ik_reason.h): the
 * numeric and closed solvers report it; the seeds' analytic solvers from
 * their reach case (too far: out of reach; too close: no solution); FABRIK
 * and CCD from their status (unreachable: beyond the chain's length; not
 * converged: the iteration budget).
 *
 * Solves are timed here (CLOCK_MONOTONIC) but the numeric solvers', which
 * time themselves.
 */
#include "proto/proto_kind.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/ik_anim.h"
#include "solver/ik_numeric.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"

/* ---- choosing the solver ---------------------------------------------- */

int proto__resolve_solver(const proto_chain *c, const proto_options *o, const proto_target *t0,
                          proto_solver *out, proto_error *err)
{
    const proto_kind_ops *k = proto_kinds[c->kind];
    proto_solver s = o->solver == PROTO_SOLVER_AUTO ? k->pick(c, t0) : o->solver;
    if (s == PROTO_SOLVER_CLOSED && (c->kind == PROTO_CHAIN_JOINTS || c->kind == PROTO_CHAIN_URDF) &&
        !k->allows(c, s)) {
        const ik_closed *cf = proto__chain_closed((proto_chain *)c);
        if (!cf)
            return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/solver",
                               "the closed solver does not apply to this %s chain: %s (%s); "
                               "use numeric or auto",
                               proto_chain_kind_names[c->kind], ik_closed_why_message(cf->why),
                               ik_closed_why_name(cf->why));
    }
    if (!k->allows(c, s))
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

/* ---- running ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
    r->answered = NULL;
    proto_kinds[job->chain->kind]->run(job, i, r, ws, ws_size);
    if (job->solver != PROTO_SOLVER_NUMERIC) /* the numeric solvers time themselves */
        r->time_s = now_s() - t0;
}

/* ---- discovery -------------------------------------------------------- */

json_t *proto_solvers_describe(const proto_limits *lim)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
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
                  "{period_s: number in (0, 1], velocity: [number > 0], slow_distance: number "
                  "> 0}",
                  "default", "none", "description",
                  "streams only, joints and urdf chains: each answer one period of at most "
                  "velocity x period_s per joint toward the solution; velocity defaults to the "
                  "URDF's <limit velocity>; with avoid_collisions the arm slows within "
                  "slow_distance (length, default 0.1) beyond the margin and stops short of "
                  "obstacles"));
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
