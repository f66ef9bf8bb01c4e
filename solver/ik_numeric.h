/*
 * ik_numeric.h: numerical inverse kinematics for general serial chains
 * (ik_chain.h): full-pose, position-only and weighted targets, joint limits,
 * time and iteration budgets, deterministic random restarts.
 *
 * The solver minimises the 6-D pose error of the chain's tip, expressed in
 * the chain's BASE frame:
 *   e_pos = p_target - p_tip                                  (metres)
 *   e_rot = rotation vector of (R_target * R_tip^T)            (radians)
 * with damped least squares (Levenberg-Marquardt) on the analytic Jacobian
 * of ik_chain_jacobian(), joint limits enforced on every step, and random
 * restarts drawn uniformly inside the limits from a generator seeded with
 * opts.rng_seed. The exact algorithm is described in ik_numeric.c.
 *
 * SUCCESS means every checked component of e_pos is within tol_pos in
 * absolute value, every checked component of e_rot within tol_rot, and every
 * joint within its limits. Which components are checked depends on the
 * target mode:
 *   IK_TARGET_FULL_POSE  all six;
 *   IK_TARGET_POSITION   x, y, z only (the target orientation is ignored and
 *                        need not be valid);
 *   IK_TARGET_WEIGHTED   the components whose weight is > 0. The weights
 *                        scale the least-squares cost (so they decide the
 *                        compromise when not every component can be met);
 *                        the tolerance test is on the unweighted error. A
 *                        zero weight frees that component.
 *
 * MEMORY: the solver allocates nothing. The caller passes a workspace of at
 * least ik_numeric_workspace_size(chain) bytes (any alignment; the solver
 * aligns inside it). The workspace is scratch only: its content before and
 * after a call means nothing, and one workspace must not be used by two
 * calls at once.
 *
 * THREADS: no globals, no static state. Any number of threads may solve on
 * the same (read-only) chain at once, each with its own workspace.
 *
 * DETERMINISM: for the same chain, target, seed and options, the result is
 * the same on every run, unless the time budget stops the search (then how
 * far it got depends on the clocks). With timeout_s = 0 the result is fully
 * deterministic.
 *
 * TURNS: a continuous joint, and a revolute joint whose range spans 2 pi or
 * more, reaches the same pose at q and q + 2 pi k. Such a joint is answered
 * with the equivalent value (inside its limits) nearest the seed's, and the
 * distances of IK_SEARCH_NEAREST_TO_SEED and opts.max_step are measured
 * between those values: a seed at 6.2 on a continuous joint gets 6.3, never
 * 0.017 - 2 pi. Without a seed the reference is the mid-limit pose, so
 * continuous joints come back in [-pi, pi]. A continuous seed beyond
 * +-IK_TURN_SEED_MAX radians (where whole turns are no longer exact in a
 * double) is wrapped into (-pi, pi] first.
 *
 * CONTINUATION: with a seed and IK_SEARCH_NEAREST_TO_SEED (a stream's
 * previous answer, or a controller's current joints), the search first
 * continues from the seed: damped least squares with a floor on the damping
 * (singularity-robust) and every iteration's joint motion capped (step
 * control), first straight at the target, then, if that fails, along a
 * homotopy that moves the target from the seed's own tip pose to the
 * requested one in small increments, then as a plain damped walk from the
 * seed (no step cap, no damping floor) that goes on as long as its error
 * keeps falling. Random restarts run only when all three fail, and then
 * the solution nearest the seed wins.
 *
 * FOLLOWING A MOTION (opts.follow, for streams): when the seed is the
 * previous answer of a stream and the target the motion's next pose, a
 * redundant chain (more joints than checked error components: a 7-joint
 * arm on full poses, any arm on position-only targets) has spare freedom,
 * its self-motion, that the targets do not fix; the nearest solution alone
 * lets it drift, answer after answer, into regions where the next target
 * is reached only by a large step (two aligned axes) or not at all (a
 * joint on its limit). With follow set, each continuation iteration adds
 * to its least-squares step a motion in the null space of the target's
 * Jacobian, at most half as large as that step (so a target that does not
 * move gives no motion, and a small one a small motion), towards the
 * configurations where the target's own motion (the target's pose minus
 * the seed's) needs the smallest joint step, away from joint limits
 * (the outer tenth of each range at either end), and, weakly, towards the
 * middle of the ranges (so that the answers of a closed motion come back
 * round instead of drifting). A smooth joint-space motion reaches
 * its poses with small steps from its own configurations, so this steers
 * the answers towards them where it matters, next to a singularity. It
 * changes nothing on chains without spare freedom, without a seed or
 * without IK_SEARCH_NEAREST_TO_SEED, and it never loosens a tolerance:
 * the answer meets the target exactly as without it.
 *
 * TIME BUDGET (ik_budget.h): timeout_s bounds the CPU time the calling
 * thread spends in the call, so that time the thread spends descheduled on
 * a busy machine is not charged to the search (a solve that needs 50
 * microseconds of computing is not stopped after a few iterations by
 * another process's time slice); the wall-clock time of the call is bounded
 * too, by IK_BUDGET_WALL_FACTOR * timeout_s (or, when the thread was
 * descheduled before it could do IK_BUDGET_WORK_FLOOR iterations, the time
 * those take), so that the caller never waits much longer, whatever the
 * load.
 *
 * COLLISIONS (opts.collide, ik_collide.h): with a check that avoids, a
 * solution counts only when the robot is at least the check's margin
 * clear of the obstacles and of itself. The search is the same (the seed
 * first, continuation, restarts); a solution that is not clear is first
 * moved out of collision inside the freedom the target leaves (ik_avoid.h:
 * a redundant chain slides its elbow away while the tip stays on target),
 * and when that fails it is kept aside and the search goes on. When the
 * budget ends with only such solutions, the answer is IK_ECOLLISION with
 * the clearest of them (reason IK_REASON_IN_COLLISION, res->closest the
 * pair), or IK_ESTEP with the seed when that one needs a joint step
 * larger than opts.max_step / max_step_lin (no answer moves past the
 * step: the closed form's rule, proto/proto_serial.c). Links the target
 * itself fixes (those rigid with the base, and for a full pose those rigid
 * with the tip) already nearer than the margin
 * make the answer IK_ECOLLISION at once, after one plain attempt for the
 * pose. Without avoid, or with it, res->closest describes the answer's
 * closest pair (res->closest.distance its distance). The collision check
 * brings its own workspace.
 *
 * NO NaN ever leaves the solver: non-finite targets, seeds, weights or
 * options are rejected with IK_EINVAL before anything is written.
 *
 * Not here: analytic solvers (ik_twobone.h, ...), the geometry
 * (ik_collide.h), reading URDF (proto/proto_urdf.h), streams (warm starts are the caller's: pass
 * the previous answer as the seed and use IK_SEARCH_NEAREST_TO_SEED).
 */
#ifndef IK_NUMERIC_H
#define IK_NUMERIC_H

#include <stddef.h>
#include <stdint.h>

#include "ik_budget.h"
#include "ik_chain.h"
#include "ik_collide.h"
#include "ik_math.h"
#include "ik_status.h"

/* ---- targets ---------------------------------------------------------- */

typedef enum ik_target_mode {
    IK_TARGET_FULL_POSE = 0, /* position and orientation */
    IK_TARGET_POSITION,      /* position only */
    IK_TARGET_WEIGHTED       /* per-component weights, see weight[] */
} ik_target_mode;

/* Index of each component in ik_target.weight[] and in error vectors. */
enum { IK_ERR_X = 0, IK_ERR_Y, IK_ERR_Z, IK_ERR_RX, IK_ERR_RY, IK_ERR_RZ };

typedef struct ik_target {
    /* Desired tip frame in the chain's base frame. In full-pose and weighted
     * modes pose.q must be finite and non-zero; it is normalised by the
     * solver (the caller's copy is not changed). */
    ik_xform pose;
    ik_target_mode mode;
    /* IK_TARGET_WEIGHTED only: weights of x, y, z (position, base frame)
     * and rx, ry, rz (rotation vector, base frame). Each must be finite and
     * >= 0, and at least one > 0. Ignored in the other modes. */
    double weight[6];
} ik_target;

/* A full-pose target at pose (weights zeroed). */
ik_target ik_target_full_pose(ik_xform pose);
/* A position-only target at p (orientation identity, weights zeroed). */
ik_target ik_target_position(ik_vec3 p);

/* ---- options ---------------------------------------------------------- */

typedef enum ik_search_mode {
    /* Return the first solution found (the seed's own basin first, then
     * random restarts). Fastest. */
    IK_SEARCH_FIRST_FOUND = 0,
    /* After the first solution, run nearest_extra_restarts more random
     * restarts (fewer if the time, iteration or restart budget runs out
     * first) and return, among all solutions found, the one nearest to the
     * seed: smallest sum of squared joint differences, continuous joints
     * compared modulo 2 pi. Use it for streams, so that consecutive answers
     * stay on one branch. Still IK_OK when the budget cuts the extra
     * restarts short, as long as one solution was found. */
    IK_SEARCH_NEAREST_TO_SEED
} ik_search_mode;

/* The default time budget of a solve (ik_numeric_opts.timeout_s and
 * ik_tree_opts.timeout_s), seconds: TRAC-IK's benchmark budget. proto/ uses
 * it as the wire format's default too. The one place it is written. */
#define IK_NUMERIC_DEFAULT_TIMEOUT_S 0.005

typedef struct ik_numeric_opts {
    double tol_pos;         /* metres, > 0; default 1e-5 */
    double tol_rot;         /* radians, > 0; default 1e-5 */
    size_t max_iterations;  /* solver iterations over all restarts; 0 = no
                               limit; default 0 */
    double timeout_s;       /* time budget in seconds, >= 0; 0 = none;
                               default IK_NUMERIC_DEFAULT_TIMEOUT_S: the
                               calling thread's CPU time, with a wall-clock
                               ceiling of IK_BUDGET_WALL_FACTOR times it
                               (TIME BUDGET below) */
    size_t max_restarts;    /* random restarts after the seed's attempt;
                               default SIZE_MAX (budget-bound) */
    uint64_t rng_seed;      /* restart generator seed (any value, 0 included);
                               default 1 */
    ik_search_mode search;  /* default IK_SEARCH_FIRST_FOUND */
    size_t nearest_extra_restarts; /* NEAREST_TO_SEED only; default 8 */
    double nearest_local;   /* NEAREST_TO_SEED only: a solution that the
                               seed's own attempt (before any restart) finds
                               with every joint within this of the seed
                               (radians or metres) is returned at once, as
                               the extra restarts start far away in other
                               branches. 0 always runs them; default 0.35 */
    double max_step;        /* > 0: refuse a solution that moves an angular
                               joint (revolute, continuous) more than this
                               many radians from the seed (IK_ESTEP); 0 = no
                               limit; default 0 */
    double max_step_lin;    /* the same for prismatic joints, metres;
                               0 = no limit; default 0 */
    bool follow;            /* the seed is a stream's previous answer and
                               the target the motion's next pose: steer a
                               redundant chain's self-motion in the
                               continuation (FOLLOWING A MOTION above);
                               default false */
    const ik_clock *clock;  /* the budget's clocks; NULL (default): the
                               real ones (tests inject their own) */
    const ik_collide_check *collide; /* COLLISIONS above; NULL (default):
                               none. Its model is built on this chain
                               (ik_collide_model_from_chain) */
} ik_numeric_opts;

/* Continuous seeds beyond this magnitude (radians) are wrapped first. */
#define IK_TURN_SEED_MAX 1e6

/* The defaults listed above. At least one of timeout_s, max_iterations or
 * max_restarts must bound the search (timeout_s > 0, max_iterations > 0 or
 * max_restarts < SIZE_MAX); otherwise ik_numeric_solve() returns IK_EINVAL. */
ik_numeric_opts ik_numeric_opts_default(void);

/* ---- result ----------------------------------------------------------- */

typedef struct ik_numeric_result {
    int status;           /* same as the return value of ik_numeric_solve() */
    double pos_err;       /* |e_pos| (metres) of the returned pose */
    double rot_err;       /* |e_rot| (radians) of the returned pose */
    double pos_err_max;   /* max |component| of e_pos over checked components */
    double rot_err_max;   /* max |component| of e_rot over checked components
                             (0 for position-only targets) */
    size_t iterations;    /* solver iterations over all attempts */
    size_t restarts;      /* random restarts used (0: the seed's attempt did it) */
    size_t solutions;     /* solutions found (> 1 only in NEAREST_TO_SEED) */
    double max_step;      /* largest |q_out[k] - seed[k]| over the joints
                             (radians or metres; turn-aware, see TURNS): the
                             largest joint motion the answer asks for. On
                             IK_ESTEP the smallest such step of the
                             solutions found (q_out is the seed then). */
    double step_ang;      /* max_step over the angular joints (radians) */
    double step_lin;      /* max_step over the prismatic joints (metres) */
    bool continued;       /* the answer came from the continuation phase
                             (straight or homotopy), not from a restart */
    int reason;           /* ik_reason.h, why a solve failed:
                             IK_REASON_OUT_OF_REACH with IK_EUNREACHABLE;
                             IK_REASON_LIMITS or IK_REASON_BUDGET with
                             IK_ENOTCONV and IK_ETIMEDOUT (FAILURES below),
                             and with the IK_ESTEP that refuses them;
                             IK_REASON_NONE otherwise */
    double elapsed_s;     /* wall-clock time of the call */
    double cpu_s;         /* the calling thread's CPU time during the call */
    ik_collide_pair closest; /* with opts.collide: the answer's closest
                             pair and its distance (ik_collide.h); without,
                             link -1 and distance +INFINITY */
} ik_numeric_result;

/* ---- solving ---------------------------------------------------------- */

/* Bytes of workspace ik_numeric_solve() needs for chain c (includes the
 * slack for aligning an arbitrary pointer). Never 0. */
size_t ik_numeric_workspace_size(const ik_chain *c);

/* Solves target t on chain c.
 *
 * seed: c->dof joint values to start from, or NULL for the mid-limit pose
 * (ik_chain_mid). A seed outside the limits is clamped into them first.
 * opts: NULL means ik_numeric_opts_default().
 * ws, ws_size: the workspace (see MEMORY above).
 * q_out: c->dof values. res: may be NULL.
 *
 * Returns (and stores in res->status):
 *   IK_OK        q_out reaches the target within tolerance, inside limits;
 *   IK_EUNREACHABLE the target's position (every position component
 *                checked) is beyond the chain's maximum reach
 *                (ik_chain_max_reach()): answered at once, after one plain
 *                attempt from the seed, without spending the budget;
 *   IK_ENOTCONV  max_iterations or max_restarts ran out first;
 *   IK_ETIMEDOUT the time budget ran out first;
 *   IK_EINVAL    non-finite or invalid target, seed, weights or options
 *                (tol <= 0, timeout < 0, unbounded search, a collision
 *                check ik_collide_check_valid() refuses), NULL pointers,
 *                or a distance between the seed's tip and the target that
 *                is not representable (coordinates near 1e308);
 *   IK_ENOSPC    ws_size < ik_numeric_workspace_size(c);
 *   IK_ESTEP     solutions were found, but the nearest needs a joint step
 *                larger than opts.max_step / max_step_lin, or the solve
 *                failed and its best pose needs one: q_out is the seed
 *                (clamped into the limits: no motion), res->max_step (and
 *                step_ang, step_lin) the step that was refused, res->reason
 *                the failure's (none for solutions, nor in collision);
 *   IK_ECOLLISION opts.collide avoids, and every solution found is nearer
 *                than its margin (COLLISIONS above): q_out is the clearest
 *                of them, res->closest its closest pair (IK_ESTEP instead
 *                when the clearest is past opts.max_step / max_step_lin).
 * On IK_EUNREACHABLE, IK_ENOTCONV and IK_ETIMEDOUT q_out holds the best
 * pose found (smallest weighted error), inside the limits and within
 * opts.max_step / max_step_lin of the seed, and res describes it.
 *
 * FAILURES say why (res->reason, ik_reason.h): IK_REASON_OUT_OF_REACH with
 * IK_EUNREACHABLE (certain); after a search that ran out of budget,
 * IK_REASON_LIMITS when the best pose has a joint on a limit (not a
 * full-turn or continuous joint) that the damped least-squares step
 * towards the target, taken without limits, would push further out (the
 * target lies outside the joint limits' workspace as far as the solver can
 * tell), else IK_REASON_BUDGET (not found in the budget; reachable or
 * not). On IK_EINVAL and
 * IK_ENOSPC nothing is written to q_out, and res (if not NULL) only gets
 * status set and every other field zeroed. q_out may alias seed. */
int ik_numeric_solve(const ik_chain *c, const ik_target *t, const double *seed,
                     const ik_numeric_opts *opts, void *ws, size_t ws_size, double *q_out,
                     ik_numeric_result *res);

/* ---- helpers ---------------------------------------------------------- */

/* The 6-D pose error of actual against target, as the solver measures it:
 * e[0..2] = target.p - actual.p, e[3..5] = rotation vector of
 * target.q * conj(actual.q), both in the base frame. Quaternions must be
 * unit. */
void ik_pose_error(ik_xform target, ik_xform actual, double e[6]);

#endif /* IK_NUMERIC_H */
