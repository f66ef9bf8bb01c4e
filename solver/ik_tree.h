/*
 * ik_tree.h: kinematic trees (one root, several tips over shared joints) and
 * a multi-target inverse-kinematics solver for them: both arms of a PR2 or
 * a Baxter from one torso, a character's feet and hands from its hips.
 *
 * A TREE is compiled from URDF-style joints (ik_chain.h semantics) in one of
 * two ways: directly, as a list of joints each naming its parent joint
 * (ik_tree_init), or from several serial chains that start at the same root
 * and share a prefix (ik_tree_from_chains). Each tip is reached from the
 * root by a serial chain, compiled with ik_chain_init(), whose movable
 * joints map onto the tree's VARIABLES: a joint on the path of several tips
 * (a torso, a spine) is one variable, moved once, seen by all of them.
 * Variables are numbered in the order the builder meets them; every
 * function below takes and returns tree->dof values in that order.
 *
 * GOALS. Each tip gets an ik_tree_goal: a target as in ik_numeric.h (full
 * pose, position only or weighted components, in the ROOT frame), a weight
 * (> 0, scales the tip's error inside its priority level) and a priority
 * (0 is the highest; a larger number is served only in the freedom the
 * smaller ones leave). A tip without a target follows its keep rule:
 *   IK_TREE_KEEP_POSE    (default) the tip holds its pose at the seed: a
 *                        full-pose target at its seed pose, at the goal's
 *                        priority and weight, checked like any target;
 *   IK_TREE_KEEP_JOINTS  the joints that move only untargeted tips stay at
 *                        the seed; the tip itself goes wherever the shared
 *                        joints take it and is not checked.
 * Variables that move no checked tip stay at the seed.
 *
 * THE SOLVE. Tips that share no moving variable do not interact, so the
 * tips are first split into independent GROUPS (the two arms of a PR2 from
 * torso_lift_link are two groups; from base_link the prismatic torso joins
 * them into one) and each group is solved on its own variables, in turn,
 * with an equal share of the remaining time budget. Inside a group every
 * iteration is a task-priority damped least-squares step (Siciliano and
 * Slotine, "A general framework for managing multiple tasks in highly
 * redundant robotic systems", ICAR 1991; Chiaverini 1997 for the damped
 * form): the levels are solved in priority order, each in the null space
 * that the levels above leave,
 *   dq_1 = A_1^T (A_1 A_1^T + lambda I)^-1 e_1,          A_1 = J_1
 *   dq_k = dq_{k-1} + A_k^T (A_k A_k^T + lambda I)^-1 (e_k - J_k dq_{k-1}),
 *   A_k  = J_k P_{k-1},   P_k = P_{k-1} - A_k^T (A_k A_k^T + mu I)^-1 A_k,
 * with Levenberg-Marquardt control of lambda, the joint limits of
 * ik_numeric.c (joints pushed through a limit are put on it and taken out
 * of the step) and random restarts (see ik_tree.c).
 *
 * STRICT PRIORITIES. The levels are served one at a time, the highest
 * first: while level k is not met the step serves levels 0..k only (level
 * k in the null space the levels above leave; the levels below are left
 * out of the step, so a far lower target cannot drag the higher ones while
 * they are being met), and a trial step is kept only when every level
 * above k keeps what it has (a met level stays met) and level k improves,
 * the trial pulled back onto the higher levels' targets by one
 * Gauss-Newton step on them when it drifted off. A met level hands over to
 * the next unmet one; a level that cannot improve any more under the ones
 * above is frozen at its best (its error may not grow) and the next one is
 * served under it. So a lower priority never moves a higher-priority tip
 * off its target once it is met, and the answer (the best pose found,
 * compared level by level) meets the highest levels whenever the search
 * met them (details in ik_tree.c).
 *
 * SUCCESS (IK_OK) means every checked tip is within tolerance (as in
 * ik_numeric.h: every checked component of the position error within
 * tol_pos, of the rotation vector within tol_rot, root frame), every
 * variable within its limits.
 *
 * TURNS, as ik_numeric.h's: a continuous variable, and a revolute one
 * whose range spans a full turn, is answered as the equivalent (inside
 * its limits) nearest the seed's value (ik_chain_turn_near), so a stream
 * seeded with its previous answer never jumps a whole turn; without a
 * seed the reference is the mid-limit pose (continuous: [-pi, pi]). A
 * continuous seed beyond IK_TURN_SEED_MAX is wrapped first. The
 * DISTANCE objective measures between those equivalents.
 * When targets conflict, the answer is IK_ENOTCONV (or IK_ETIMEDOUT) with
 * the best pose found: the highest levels met, then the first unmet level
 * as close as the remaining freedom allows; res->levels_met and
 * res->tip[] say which tips are on target.
 *
 * FAILURES say why, per tip (res->tip[t].reason) and for the answer
 * (res->reason: the first unmet tip's, in priority order), with the
 * reasons of ik_reason.h: a tip whose checked position (every position
 * component checked) lies beyond its root-to-tip chain's maximum reach
 * (ik_chain_beyond_reach) cannot be met: OUT_OF_REACH. It gets a few steps
 * towards its target for its best pose and no restart, and when every
 * unmet tip is out of reach the answer is IK_EUNREACHABLE at once, as a
 * chain's (a one-tip tree as fast as the chain). An unmet tip within reach
 * below met levels, after a search that ran its course (not cut by the
 * budget), is PRIORITY: the higher tips leave it too little freedom. Any
 * other unmet tip is BUDGET.
 *
 * SECONDARY OBJECTIVES for redundant trees (TRAC-IK's solve types, Beeson
 * and Ames, Humanoids 2015): with an objective other than NONE, the search
 * goes on after the first solution for up to extra_restarts more attempts
 * per group (or until the budget runs out) and returns, among the solutions
 * found, the one that is best for it:
 *   IK_TREE_OBJ_DISTANCE   nearest to the seed (sum of squared joint
 *                          differences, continuous joints modulo 2 pi);
 *                          a solution of the seed's own attempt with every
 *                          joint within opts.local of the seed is returned
 *                          at once (a stream's next step);
 *   IK_TREE_OBJ_MANIP1     largest manipulability sqrt(det(J J^T)) of the
 *                          checked rows (TRAC-IK Manip1);
 *   IK_TREE_OBJ_MANIP2     largest ratio of the smallest to the largest
 *                          singular value of J (TRAC-IK Manip2);
 *   IK_TREE_OBJ_MID_LIMITS joints nearest the middle of their limits (sum
 *                          of ((q - mid) / (upper - lower))^2 over bounded
 *                          joints).
 * Groups are chosen independently (exact for DISTANCE, MID_LIMITS and
 * MANIP1, whose values over independent groups add or multiply; MANIP2 per
 * group). res->objective is the value of the whole answer.
 *
 * MEMORY: a tree has no compiled bound on its joints or variables (the
 * daemon bounds them per request, proto/README.md "Limits"); it has at
 * most IK_TREE_MAX_TIPS tips. As with ik_chain.h, an ik_tree is a small
 * view of STORAGE the caller gives to the builder, sized up front by
 * ik_tree_storage_size() or ik_tree_chains_storage_size() (any alignment):
 * the per-variable arrays and each tip's compiled chain live there. A copy
 * of the view reads the same storage; storage must outlive every view and
 * never change while a thread reads it. The solver allocates nothing: the
 * caller passes a workspace of ik_tree_workspace_size(tree) bytes (any
 * alignment), scratch only, one per concurrent call.
 *
 * THREADS: no globals, no static state; any number of threads may solve on
 * the same tree at once, each with its own workspace.
 *
 * DETERMINISM: as ik_numeric.h: with timeout_s = 0 the same input gives the
 * same answer on every run.
 *
 * COLLISIONS (opts.collide, ik_collide.h, a model made by
 * ik_collide_model_from_tree on this tree): with a check that avoids, an
 * answer is IK_OK only with the robot at least the margin clear of the
 * obstacles and of itself (both arms of a PR2 against each other
 * included). The solve above runs as it is (ik_tree_avoid.c); a solution
 * that is not clear is moved out of collision inside the freedom the
 * checked tips leave (ik_avoid.h; variables that move no checked tip stay
 * at the seed), and when that fails the solve runs again from a random
 * configuration (those variables still at the seed) until the budget ends.
 * Only solutions in collision: IK_ECOLLISION with the clearest of them,
 * res->reason IK_REASON_IN_COLLISION and res->closest the pair. Links the
 * targets fix (rigid with the root, or with a tip that has a full-pose
 * target) already nearer than the margin: IK_ECOLLISION at once. With or
 * without avoid, res->closest describes the answer's closest pair.
 *
 * NO NaN ever leaves the solver: non-finite targets, seeds, weights or
 * options are IK_EINVAL before anything is written.
 *
 * Not here: closed chains (loops), the geometry (ik_collide.h), reading URDF or BVH
 * (proto/, tests), names of joints and tips (the wire format keeps them).
 */
#ifndef IK_TREE_H
#define IK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ik_chain.h"
#include "ik_collide.h"
#include "ik_math.h"
#include "ik_numeric.h"

/* Tips of a tree at most (one bit each in tips_of). */
#define IK_TREE_MAX_TIPS 32

/* A compiled tree: per-variable arrays of dof entries and per-tip ones of
 * ntips entries, in the storage given to the builder; read them, never
 * write them. */
typedef struct ik_tree {
    size_t dof;           /* variables, >= 1 */
    size_t ntips;         /* 1..IK_TREE_MAX_TIPS */
    ik_joint_type *type;  /* REVOLUTE, CONTINUOUS or PRISMATIC */
    double *lower;        /* continuous: -INFINITY */
    double *upper;        /* continuous: +INFINITY */
    /* Which described joint each variable is: its index in ik_tree_init's
     * list, or in the concatenation of ik_tree_from_chains' chains (the
     * first chain that holds it). */
    size_t *source_index;
    uint32_t *tips_of;    /* bit t set: the variable moves tip t */
    ik_chain *chain;      /* root -> tip t, as ik_chain.h */
    size_t **var;         /* chain t's joint i is variable var[t][i] */
} ik_tree;

/* ---- building --------------------------------------------------------- */

/* Bytes of storage ik_tree_init() needs for these arguments (as it takes
 * them; SIZE_MAX when they are invalid or the size is not representable).
 * It counts every joint on the tips' paths, the path scratch included. */
size_t ik_tree_storage_size(const int *parent, size_t n, const size_t *tip_joint, size_t ntips);

/* Compiles n described joints into *out, its arrays into storage
 * (storage_size bytes, at least ik_tree_storage_size()). parent[i] is the
 * index of the joint whose child link is joint i's parent link, or -1 when
 * joint i hangs from the root; parents come first (parent[i] < i). Tip t is
 * the child link of joint tip_joint[t] (a fixed joint may end a tip).
 * Returns IK_OK; IK_EINVAL when n, ntips or a parent or tip index is out of
 * range, a path has no movable joint, or ik_chain_init() rejects a path;
 * IK_ENOSPC when the storage is too small. On error *out is zeroed (the
 * storage's content is undefined). Nothing is allocated. */
int ik_tree_init(ik_tree *out, void *storage, size_t storage_size, const ik_joint *joints,
                 const int *parent, size_t n, const size_t *tip_joint, size_t ntips);

/* Bytes of storage ik_tree_from_chains() needs for chains of len[0..ntips-1]
 * joints (SIZE_MAX when invalid or not representable). */
size_t ik_tree_chains_storage_size(const size_t *len, size_t ntips);

/* Compiles ntips serial chains (chains[t]: len[t] joints from the root to
 * tip t) into *out and storage (at least ik_tree_chains_storage_size()
 * bytes). Chains share their leading joints: joint i of chain t is the
 * same joint as joint i of an earlier chain u when joints 0..i of both are
 * identical (every field equal). Chains that must stay apart even though
 * they begin with identical joints need ik_tree_init. Errors as
 * ik_tree_init (IK_EINVAL or IK_ENOSPC, *out zeroed). */
int ik_tree_from_chains(ik_tree *out, void *storage, size_t storage_size,
                        const ik_joint *const *chains, const size_t *len, size_t ntips);

/* ---- forward kinematics and limits ------------------------------------ */

/* Tip t's frame in the root frame for variables q (tree->dof values, not
 * clamped). The identity for t >= ntips. */
ik_xform ik_tree_fk(const ik_tree *tree, const double *q, size_t t);
/* Every tip's frame into tips[0..ntips-1]. */
void ik_tree_fk_all(const ik_tree *tree, const double *q, ik_xform *tips);
/* Chain t's joint values gathered from the tree's variables:
 * qc[0..chain[t].dof-1]. */
void ik_tree_gather(const ik_tree *tree, size_t t, const double *q, double *qc);
/* True when every q[i] lies within [lower - eps, upper + eps]. */
bool ik_tree_within_limits(const ik_tree *tree, const double *q, double eps);
/* The mid-limit pose (continuous: 0). */
void ik_tree_mid(const ik_tree *tree, double *q);

/* ---- goals, options, results ------------------------------------------- */

typedef enum ik_tree_keep { IK_TREE_KEEP_POSE = 0, IK_TREE_KEEP_JOINTS } ik_tree_keep;

typedef struct ik_tree_goal {
    bool active;       /* false: no target; keep decides */
    ik_target target;  /* root frame; validated as ik_numeric.h says */
    unsigned priority; /* 0 highest; default 0 */
    double weight;     /* > 0 and finite; default 1 */
    ik_tree_keep keep; /* !active only; default IK_TREE_KEEP_POSE */
} ik_tree_goal;

/* A goal with target t, priority 0, weight 1. */
ik_tree_goal ik_tree_goal_target(ik_target t);
/* No target, keep rule k, priority 0, weight 1. */
ik_tree_goal ik_tree_goal_keep(ik_tree_keep k);

typedef enum ik_tree_objective {
    IK_TREE_OBJ_NONE = 0, /* the first solution found (fastest) */
    IK_TREE_OBJ_DISTANCE,
    IK_TREE_OBJ_MANIP1,
    IK_TREE_OBJ_MANIP2,
    IK_TREE_OBJ_MID_LIMITS
} ik_tree_objective;

typedef struct ik_tree_opts {
    double tol_pos;        /* metres, > 0; default 1e-5 */
    double tol_rot;        /* radians, > 0; default 1e-5 */
    size_t max_iterations; /* over all groups and attempts; 0 = none; default 0 */
    double timeout_s;      /* >= 0; 0 = none; default
                              IK_NUMERIC_DEFAULT_TIMEOUT_S: CPU time of
                              the calling thread, with a wall-clock ceiling
                              IK_BUDGET_WALL_FACTOR times it (ik_budget.h,
                              as ik_numeric.h) */
    size_t max_restarts;   /* per group; default SIZE_MAX (budget-bound) */
    uint64_t rng_seed;     /* default 1 */
    ik_tree_objective objective; /* default NONE */
    size_t extra_restarts; /* attempts after the first solution (objective
                              != NONE) or after the first attempt that met
                              the highest level but not every level
                              (conflicting priorities); default 8 */
    double local;          /* DISTANCE only, see above; default 0.35 */
    const ik_clock *clock; /* the budget's clocks; NULL (default): the real
                              ones */
    const ik_collide_check *collide; /* COLLISIONS above; NULL (default):
                              none */
} ik_tree_opts;

/* The defaults above. As in ik_numeric.h, at least one of timeout_s,
 * max_iterations or max_restarts must bound the search. */
ik_tree_opts ik_tree_opts_default(void);

typedef struct ik_tree_tip_result {
    bool checked;       /* the tip had a target or KEEP_POSE */
    bool reached;       /* checked and within tolerance */
    int reason;         /* checked and not reached: why (ik_reason.h,
                           FAILURES above); IK_REASON_NONE otherwise */
    double pos_err;     /* |e_pos| against its target (0 when not checked) */
    double rot_err;     /* |e_rot| (0 when not checked) */
    double pos_err_max; /* max |component| over checked components */
    double rot_err_max;
} ik_tree_tip_result;

typedef struct ik_tree_result {
    int status;        /* the return value */
    int reason;        /* why a solve failed: the reason of the first unmet
                          tip in priority order (FAILURES above);
                          IK_REASON_IN_COLLISION with IK_ECOLLISION;
                          IK_REASON_NONE on success */
    size_t levels;     /* distinct priorities among the checked tips */
    size_t levels_met; /* leading levels whose tips are all reached */
    size_t groups;     /* independent groups solved */
    size_t iterations; /* over all groups and attempts */
    size_t restarts;   /* over all groups */
    size_t solutions;  /* full solutions found over all groups */
    double objective;  /* value of the chosen objective for the answer (0: NONE) */
    double elapsed_s;  /* wall-clock time of the call */
    double cpu_s;      /* the calling thread's CPU time during the call */
    ik_tree_tip_result tip[IK_TREE_MAX_TIPS];
    ik_collide_pair closest; /* with opts.collide: the answer's closest
                          pair; without, link -1, distance +INFINITY */
} ik_tree_result;

/* ---- solving ------------------------------------------------------------ */

/* Workspace bytes ik_tree_solve() needs for this tree. Never 0. */
size_t ik_tree_workspace_size(const ik_tree *tree);

/* Solves goals[0..tree->ntips-1] on tree. seed: tree->dof values or NULL
 * for the mid-limit pose (clamped into the limits first). opts: NULL for
 * the defaults. q_out: tree->dof values (may alias seed). res: may be NULL.
 * Returns IK_OK, IK_EUNREACHABLE (every unmet tip out of reach, FAILURES
 * above), IK_ENOTCONV, IK_ETIMEDOUT (q_out: the best pose found, inside
 * the limits; res describes it), IK_ECOLLISION (COLLISIONS above),
 * IK_EINVAL (invalid tree, goal, seed or options, a collision check
 * ik_collide_check_valid() refuses; nothing written but res->status) or
 * IK_ENOSPC (workspace too small; likewise). */
int ik_tree_solve(const ik_tree *tree, const ik_tree_goal *goals, const double *seed,
                  const ik_tree_opts *opts, void *ws, size_t ws_size, double *q_out,
                  ik_tree_result *res);

#endif /* IK_TREE_H */
