/*
 * ik_tree.c: kinematic trees and their multi-target solver (contract and
 * references in ik_tree.h).
 *
 * Building: every tip's root-to-tip path is compiled by ik_chain_init()
 * (so fixed joints are merged and the fast evaluation of ik_chain.c is
 * used as is); the movable joints of the paths are then mapped onto tree
 * variables by the identity of the described joint they come from. The
 * caller's storage holds, in this order (tree_carve): the tips' chain
 * views and variable lists, each tip's chain storage, the per-variable
 * arrays and the builder's scratch (the path being compiled).
 *
 * Solving: the checked tips (targets and KEEP_POSE) become TASKS; tasks
 * linked through a shared moving variable form a GROUP, solved alone on its
 * own variables (see ik_tree.h). Inside a group the rows of every task are
 * stacked level by level (priority order) into one Jacobian J (rows
 * weighted by sqrt(component weight * tip weight), columns the group's
 * variables), built from ik_chain_jacobian_mat() of each tip's chain. An
 * ATTEMPT is Levenberg-Marquardt on the task-priority step of ik_tree.h;
 * with a single level it is exactly the damped least-squares step of
 * ik_numeric.c, Jw^T (Jw Jw^T + lambda I)^-1 ew, solved by Cholesky on
 * the (rows x rows) system, whose normal matrix Jw Jw^T is built once per
 * Jacobian (not once per damping tried) from the tasks' column lists: a
 * tip's rows are non-zero only in its own chain's variables, and two tips
 * share only their leading ones (a torso), so the products run over those
 * (limited_step_one). When the group's first level has many rows on
 * long chains (a hand's fingertips over an arm and a spine), the same
 * step is solved in joint space instead (tree_step: (J^T J + lambda I) dq
 * = J^T e, equal to the rows' form), by a Cholesky factorization that
 * eliminates the leaves first: the kinematic tree is then the elimination
 * tree, J^T J and its factor hold only each variable's entries with its
 * ancestors (a skyline), and the cost is the sum of the variables' depths
 * squared instead of the rows cubed; group_init picks the cheaper of the
 * two by their operation counts. The Jacobian is evaluated by one walk
 * down each task's chain, resumed after the joints it shares with an
 * earlier task's chain (ik_chain_internal.h), so a shared spine or arm is
 * walked once per evaluation. The joint limits are handled as in ik_numeric.c:
 * a joint the step pushes through a limit is put on it, its motion leaves
 * the error, its column leaves the step, and the step is solved again (up
 * to LOCK_PASSES times). The levels form a strict hierarchy (attempt(),
 * acceptable(), restore()): the step serves the first unmet level k and
 * the levels above it, and a trial is kept when level k improves and every
 * level above k keeps what it has (a met one all its checked components
 * below CONVERGED_FRACTION of the tolerance, a frozen one its cost), after
 * one Gauss-Newton step on the levels above k when the trial drifted off
 * them (the second-order drift of a null-space step leaves a 1e-5 band
 * otherwise). An attempt ends solved (every level met), stalled (for the
 * top level: lambda too large, or ATTEMPT_MAX_ITERS with ik_numeric.c's
 * slow-convergence extension; a lower level that stops improving is
 * frozen and the next one served, and the attempt is stalled when none is
 * left), or out of budget. Tips out of reach (FAILURES in ik_tree.h) get
 * HOPELESS_ITERS iterations on their level and no restart.
 *
 * The strict hierarchy replaced a merit function (the level costs weighted
 * 1e4 per level) that let a lower level's step disturb a met higher one:
 * with the PR2 from base_link, the left wrist at priority 0 on a reachable
 * pose and the right one 10 m away at priority 1, the left wrist was met
 * in 16 of 40 cases (20000 iterations each), on a humanoid's hands over
 * three back joints in 0 of 40; now in 40 of 40, each at once
 * (IK_EUNREACHABLE, about 25 iterations), and with a reachable but
 * conflicting priority-1 pose in 40 of 40 as before
 * (tests/solver/test_ik_tree.c).
 *
 * Restarts draw joints uniformly inside their limits (splitmix64 seeded
 * with opts.rng_seed): in a one-level group three restarts in FULL_EVERY
 * redraw only the variables that move nothing but unmet tasks (so a
 * solved arm is not thrown away because the other one sits in a local
 * minimum; when no task is met, the one farthest from its target counts
 * as the unmet one), the others the whole group; with several levels
 * every other restart is whole, since which branch the shared variables
 * take for the higher levels decides how close the lower ones can get
 * (and every one is whole once the top level was met: the lower levels'
 * freedom is in the shared variables' branch, not in their own).
 *
 * Tuning (build/ikbench tree: both PR2 arms from torso_lift_link and from
 * base_link, the Baxter-like tree of tests/data, 2000 to 10000 targets,
 * every answer checked by the bench's own forward kinematics): the
 * initial damping LAMBDA_INIT 0.1 (ik_numeric.c's 0.01 overshoots from
 * the mid-limit pose of two arms at once: the Baxter-like tree took three
 * times as long), attempts of ATTEMPT_MAX_ITERS 14 and one limit lock
 * pass. Together with the normal matrix above they took the mean solve
 * (thread CPU time, same machine, same run as the separate-chain
 * baseline) from 27 to 19 us on the PR2 from torso_lift_link, from 84 to
 * 33 us from base_link and from 178 to 43 us on the Baxter-like tree,
 * every one at 100% (it was 99.8% on the Baxter-like tree).
 *
 * Nothing is allocated: matrices live in the caller's workspace, small
 * per-task records on the stack.
 *
 * Not here: null-space gradient motion during the iterations (the
 * objectives choose among solutions, the TRAC-IK way), closed loops.
 */
#include "solver/ik_tree.h"

#include <math.h>
#include <string.h>

#include "solver/ik_budget.h"
#include "solver/ik_chain_internal.h"
#include "solver/ik_linalg_internal.h"
#include "solver/ik_reason.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"
#include "solver/ik_tree_avoid.h"

/* ---- building ------------------------------------------------------------ */

/* The storage of a tree, carved in this order (each piece aligned to
 * STORAGE_ALIGN): the tips' chain views and variable-list pointers, each
 * tip's chain storage (ik_chain_storage_size of its path length) and
 * variable list, the per-variable arrays (at most nvar variables), and the
 * builder's scratch (scratch bytes: the path being compiled and the
 * described-joint ids). */
#define STORAGE_ALIGN 16

typedef struct layout {
    size_t total; /* bytes, the slack for aligning the start included */
    bool ok;      /* representable */
} layout;

static size_t round_up(size_t x)
{
    return (x + STORAGE_ALIGN - 1) / STORAGE_ALIGN * STORAGE_ALIGN;
}

/* Adds a piece of count items of size bytes to L (saturating). */
static size_t take(layout *L, size_t count, size_t size)
{
    size_t at = L->total;
    if (!L->ok || (size && count > (SIZE_MAX / 2) / size)) {
        L->ok = false;
        return 0;
    }
    size_t b = round_up(count * size);
    if (L->total > SIZE_MAX / 2 - b) {
        L->ok = false;
        return 0;
    }
    L->total += b;
    return at;
}

typedef struct carve {
    char *base; /* aligned start; NULL: only count */
    layout L;
} carve;

static void *carve_take(carve *C, size_t count, size_t size)
{
    size_t at = take(&C->L, count, size);
    return C->base && C->L.ok ? (void *)(C->base + at) : NULL;
}

/* Carves (or, with base NULL, counts) the storage of a tree whose tip t
 * has a path of len[t] joints, with at most nvar variables and scratch
 * bytes of builder scratch, into T's arrays; chain_mem[t] gets tip t's
 * chain storage, *scratch_out the scratch. Returns the bytes needed. */
static size_t tree_carve(char *base, const size_t *len, size_t ntips, size_t nvar,
                         size_t scratch, ik_tree *T, void **chain_mem, void **scratch_out)
{
    carve C = {base, {0, true}};
    ik_chain *chain = carve_take(&C, ntips, sizeof(ik_chain));
    size_t **var = carve_take(&C, ntips, sizeof(size_t *));
    if (T) {
        T->chain = chain;
        T->var = var;
    }
    for (size_t t = 0; t < ntips; t++) {
        size_t cs = ik_chain_storage_size(len[t]);
        if (cs == SIZE_MAX)
            C.L.ok = false;
        void *cm = carve_take(&C, 1, cs);
        size_t *v = carve_take(&C, len[t], sizeof(size_t));
        if (T && C.base && C.L.ok) {
            chain_mem[t] = cm;
            var[t] = v;
        }
    }
    ik_joint_type *type = carve_take(&C, nvar, sizeof *type);
    double *lower = carve_take(&C, nvar, sizeof *lower);
    double *upper = carve_take(&C, nvar, sizeof *upper);
    size_t *src = carve_take(&C, nvar, sizeof *src);
    uint32_t *tips_of = carve_take(&C, nvar, sizeof *tips_of);
    void *sc = carve_take(&C, scratch, 1);
    if (T) {
        T->type = type;
        T->lower = lower;
        T->upper = upper;
        T->source_index = src;
        T->tips_of = tips_of;
    }
    if (scratch_out)
        *scratch_out = sc;
    if (!C.L.ok || C.L.total > SIZE_MAX - STORAGE_ALIGN)
        return SIZE_MAX;
    return C.L.total + STORAGE_ALIGN;
}

static char *align_storage(void *storage)
{
    return (char *)(((uintptr_t)storage + (STORAGE_ALIGN - 1)) & ~(uintptr_t)(STORAGE_ALIGN - 1));
}

/* Adds tip t, whose path is path[0..len-1] with described-joint ids
 * ids[0..len-1], to T (its variable list carved), its chain into cm. */
static int add_tip(ik_tree *T, size_t t, void *cm, const ik_joint *path, const size_t *ids,
                   size_t len)
{
    ik_chain *c = &T->chain[t];
    if (len == 0 || ik_chain_init(c, cm, ik_chain_storage_size(len), path, len) != IK_OK)
        return IK_EINVAL;
    for (size_t i = 0; i < c->dof; i++) {
        size_t id = ids[c->source_index[i]];
        size_t v = 0;
        while (v < T->dof && T->source_index[v] != id)
            v++;
        if (v == T->dof) {
            T->dof++;
            T->source_index[v] = id;
            T->type[v] = c->type[i];
            T->lower[v] = c->lower[i];
            T->upper[v] = c->upper[i];
            T->tips_of[v] = 0;
        }
        T->var[t][i] = v;
        T->tips_of[v] |= (uint32_t)1u << t;
    }
    return IK_OK;
}

/* The path lengths of ik_tree_init's tips into len; false when an index
 * is out of range. */
static bool path_lengths(const int *parent, size_t n, const size_t *tip_joint, size_t ntips,
                         size_t *len, size_t *longest)
{
    *longest = 0;
    for (size_t t = 0; t < ntips; t++) {
        if (tip_joint[t] >= n)
            return false;
        size_t l = 0;
        for (int j = (int)tip_joint[t]; j >= 0; j = parent[j])
            l++;
        len[t] = l;
        if (l > *longest)
            *longest = l;
    }
    return true;
}

static bool valid_parents(const int *parent, size_t n)
{
    if (n > (size_t)INT32_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (parent[i] < -1 || parent[i] >= (int)i)
            return false;
    return true;
}

size_t ik_tree_storage_size(const int *parent, size_t n, const size_t *tip_joint, size_t ntips)
{
    size_t len[IK_TREE_MAX_TIPS], longest;
    if (!parent || !tip_joint || n == 0 || ntips == 0 || ntips > IK_TREE_MAX_TIPS ||
        !valid_parents(parent, n) || !path_lengths(parent, n, tip_joint, ntips, len, &longest))
        return SIZE_MAX;
    if (longest > SIZE_MAX / (2 * (sizeof(ik_joint) + sizeof(size_t))))
        return SIZE_MAX;
    return tree_carve(NULL, len, ntips, n, longest * (sizeof(ik_joint) + sizeof(size_t)), NULL,
                      NULL, NULL);
}

int ik_tree_init(ik_tree *out, void *storage, size_t storage_size, const ik_joint *joints,
                 const int *parent, size_t n, const size_t *tip_joint, size_t ntips)
{
    if (!out)
        return IK_EINVAL;
    memset(out, 0, sizeof *out);
    if (!storage || !joints || !parent || !tip_joint || n == 0 || ntips == 0 ||
        ntips > IK_TREE_MAX_TIPS || !valid_parents(parent, n))
        return IK_EINVAL;
    size_t len[IK_TREE_MAX_TIPS], longest;
    if (!path_lengths(parent, n, tip_joint, ntips, len, &longest))
        return IK_EINVAL;
    size_t need = ik_tree_storage_size(parent, n, tip_joint, ntips);
    if (need == SIZE_MAX)
        return IK_EINVAL;
    if (storage_size < need)
        return IK_ENOSPC;
    void *scratch, *cm[IK_TREE_MAX_TIPS];
    tree_carve(align_storage(storage), len, ntips, n,
               longest * (sizeof(ik_joint) + sizeof(size_t)), out, cm, &scratch);
    out->ntips = ntips;
    ik_joint *path = scratch;
    size_t *ids = (size_t *)(void *)(path + longest);
    for (size_t t = 0; t < ntips; t++) {
        size_t l = 0;
        for (int j = (int)tip_joint[t]; j >= 0; j = parent[j])
            ids[l++] = (size_t)j;
        for (size_t a = 0, b = l - 1; a < b; a++, b--) { /* root first */
            size_t tmp = ids[a];
            ids[a] = ids[b];
            ids[b] = tmp;
        }
        for (size_t i = 0; i < l; i++)
            path[i] = joints[ids[i]];
        if (add_tip(out, t, cm[t], path, ids, l) != IK_OK) {
            memset(out, 0, sizeof *out);
            return IK_EINVAL;
        }
    }
    return IK_OK;
}

static bool same_joint(const ik_joint *a, const ik_joint *b)
{
    return a->type == b->type && a->origin.p.x == b->origin.p.x &&
           a->origin.p.y == b->origin.p.y && a->origin.p.z == b->origin.p.z &&
           a->origin.q.x == b->origin.q.x && a->origin.q.y == b->origin.q.y &&
           a->origin.q.z == b->origin.q.z && a->origin.q.w == b->origin.q.w &&
           a->axis.x == b->axis.x && a->axis.y == b->axis.y && a->axis.z == b->axis.z &&
           a->lower == b->lower && a->upper == b->upper;
}

/* The chains' total length (their variables at most, and the ids
 * scratch); false when empty or not representable. */
static bool chains_total(const size_t *len, size_t ntips, size_t *total)
{
    *total = 0;
    for (size_t t = 0; t < ntips; t++) {
        if (len[t] == 0 || len[t] > SIZE_MAX / 4 - *total)
            return false;
        *total += len[t];
    }
    return true;
}

size_t ik_tree_chains_storage_size(const size_t *len, size_t ntips)
{
    size_t total;
    if (!len || ntips == 0 || ntips > IK_TREE_MAX_TIPS || !chains_total(len, ntips, &total))
        return SIZE_MAX;
    return tree_carve(NULL, len, ntips, total, total * sizeof(size_t), NULL, NULL, NULL);
}

int ik_tree_from_chains(ik_tree *out, void *storage, size_t storage_size,
                        const ik_joint *const *chains, const size_t *len, size_t ntips)
{
    if (!out)
        return IK_EINVAL;
    memset(out, 0, sizeof *out);
    size_t total;
    if (!storage || !chains || !len || ntips == 0 || ntips > IK_TREE_MAX_TIPS ||
        !chains_total(len, ntips, &total))
        return IK_EINVAL;
    for (size_t t = 0; t < ntips; t++)
        if (!chains[t])
            return IK_EINVAL;
    size_t need = ik_tree_chains_storage_size(len, ntips);
    if (need == SIZE_MAX)
        return IK_EINVAL;
    if (storage_size < need)
        return IK_ENOSPC;
    void *scratch, *cm[IK_TREE_MAX_TIPS];
    tree_carve(align_storage(storage), len, ntips, total, total * sizeof(size_t), out, cm,
               &scratch);
    out->ntips = ntips;
    size_t *ids_all = scratch, *ids[IK_TREE_MAX_TIPS];
    size_t offset = 0;
    for (size_t t = 0; t < ntips; t++) {
        ids[t] = ids_all + offset;
        /* the earlier chain with the longest identical prefix */
        size_t best_u = 0, best_l = 0;
        for (size_t u = 0; u < t; u++) {
            size_t l = 0;
            while (l < len[t] && l < len[u] && same_joint(&chains[t][l], &chains[u][l]))
                l++;
            if (l > best_l) {
                best_l = l;
                best_u = u;
            }
        }
        for (size_t i = 0; i < len[t]; i++)
            ids[t][i] = i < best_l ? ids[best_u][i] : offset + i;
        offset += len[t];
        if (add_tip(out, t, cm[t], chains[t], ids[t], len[t]) != IK_OK) {
            memset(out, 0, sizeof *out);
            return IK_EINVAL;
        }
    }
    return IK_OK;
}

/* ---- forward kinematics and limits --------------------------------------- */

void ik_tree_gather(const ik_tree *tree, size_t t, const double *q, double *qc)
{
    const ik_chain *c = &tree->chain[t];
    for (size_t i = 0; i < c->dof; i++)
        qc[i] = q[tree->var[t][i]];
}

ik_xform ik_tree_fk(const ik_tree *tree, const double *q, size_t t)
{
    if (t >= tree->ntips)
        return ik_xform_identity();
    return ik_chain_fk_gather(&tree->chain[t], q, tree->var[t]);
}

void ik_tree_fk_all(const ik_tree *tree, const double *q, ik_xform *tips)
{
    for (size_t t = 0; t < tree->ntips; t++)
        tips[t] = ik_tree_fk(tree, q, t);
}

bool ik_tree_within_limits(const ik_tree *tree, const double *q, double eps)
{
    for (size_t i = 0; i < tree->dof; i++) {
        if (!isfinite(q[i]))
            return false;
        if (tree->type[i] == IK_JOINT_CONTINUOUS)
            continue;
        if (!(q[i] >= tree->lower[i] - eps && q[i] <= tree->upper[i] + eps))
            return false;
    }
    return true;
}

void ik_tree_mid(const ik_tree *tree, double *q)
{
    for (size_t i = 0; i < tree->dof; i++)
        q[i] = tree->type[i] == IK_JOINT_CONTINUOUS ? 0.0
                                                    : 0.5 * (tree->lower[i] + tree->upper[i]);
}

/* ---- goals and options ------------------------------------------------------ */

ik_tree_goal ik_tree_goal_target(ik_target t)
{
    ik_tree_goal g;
    memset(&g, 0, sizeof g);
    g.active = true;
    g.target = t;
    g.weight = 1.0;
    g.keep = IK_TREE_KEEP_POSE;
    return g;
}

ik_tree_goal ik_tree_goal_keep(ik_tree_keep k)
{
    ik_tree_goal g;
    memset(&g, 0, sizeof g);
    g.active = false;
    g.target = ik_target_full_pose(ik_xform_identity());
    g.weight = 1.0;
    g.keep = k;
    return g;
}

ik_tree_opts ik_tree_opts_default(void)
{
    ik_tree_opts o;
    memset(&o, 0, sizeof o);
    o.tol_pos = 1e-5;
    o.tol_rot = 1e-5;
    o.max_iterations = 0;
    o.timeout_s = IK_NUMERIC_DEFAULT_TIMEOUT_S;
    o.max_restarts = SIZE_MAX;
    o.rng_seed = 1;
    o.objective = IK_TREE_OBJ_NONE;
    o.extra_restarts = 8;
    o.local = 0.35;
    return o;
}

/* ======================================================================== */

/* Tuning: ik_numeric.c's values, except the first three (measured here,
 * see the file comment), plus the lower levels'. */
#define ATTEMPT_MAX_ITERS  14
#define LAMBDA_INIT        1e-1
#define LAMBDA_MIN         1e-9
#define LAMBDA_MAX         1e4
#define LAMBDA_UP          8.0
#define LAMBDA_DOWN        0.2
#define CONVERGED_FRACTION 0.5
#define SLOW_EVERY         4
#define SLOW_MAX_ITERS     200
#define SLOW_MAX_COST      1e-6
#define LOCK_PASSES        1
#define CLOCK_EVERY        4
#define LOWER_MAX_ITERS    400   /* iterations on a lower level that cannot be met */
#define LOWER_FLAT         1e-12 /* relative improvement counted as none */
#define LOWER_FLAT_STEPS   4     /* consecutive flat steps that end the attempt */
#define PROJ_DAMPING       1e-10 /* mu of the null-space projectors */
#define FROZEN_SLACK       1e-9  /* relative growth a frozen level may take */
#define HOPELESS_ITERS     16    /* iterations on a level whose unmet tips are
                                    all out of reach (its best pose only) */
#define FULL_EVERY         4     /* one level: every so many restarts redraw the whole group */



/* ---- tasks and groups --------------------------------------------------- */

typedef struct task {
    size_t tip;
    ik_xform target;  /* q unit (identity when no rotation row) */
    double Rt[9];     /* target.q as a matrix */
    bool need_rot;
    bool check[6];
    size_t m;         /* active rows */
    int row[6];       /* their components */
    double sw[6];     /* sqrt of component weight * tip weight */
    unsigned priority;
    size_t level;     /* global level index */
    size_t row0;      /* first row in the group's stacked J */
    bool hopeless;    /* its position beyond its chain's reach (ik_reason.h) */
} task;

typedef struct group {
    uint32_t tips;                 /* task tips */
    size_t nv;                     /* variables */
    size_t *v;                     /* their tree indices (nv) */
    ptrdiff_t *local;              /* tree index -> local, -1 outside (tree dof) */
    size_t ntask;
    task *task[IK_TREE_MAX_TIPS];  /* sorted by level */
    size_t nlev;                   /* levels in the group */
    size_t lev_row[IK_TREE_MAX_TIPS + 1]; /* rows of level l: [lev_row[l], lev_row[l+1]) */
    size_t lev_task[IK_TREE_MAX_TIPS + 1];
    size_t m;                      /* rows */
    /* the columns of J each task's rows can be non-zero in (its chain's
     * variables, local indices, root first), and how many leading ones
     * two tasks share (paths from one root share a prefix); sparse is
     * false when some pair shares variables beyond that prefix */
    size_t *tcol[IK_TREE_MAX_TIPS];
    size_t ntcol[IK_TREE_MAX_TIPS];
    size_t *pre; /* pre[k1 * ntask + k2] */
    bool sparse;
    /* the variables as a tree (each one's parent: the variable before it on
     * every chain that holds it; -1 for a root), their depths, and where
     * each one's row of the joint-space normal matrix starts in its
     * skyline (tree_step); joint_space: the first level's steps are solved
     * there, which costs less than the stacked rows' system */
    ptrdiff_t *par;
    size_t *dep;
    size_t *sky;
    size_t nsky;
    bool joint_space;
} group;

typedef struct solver {
    const ik_tree *T;
    const ik_tree_opts *o;
    const group *G;
    double *J, *Jt, *e, *et, *el, *N, *A, *X, *P, *rhs, *y;
    double *N0;           /* the normal matrix of the first level's rows... */
    const double *N0_of;  /* ...of this Jacobian (NULL: none yet) */
    double *q, *qt, *dq, *best, *sol, *seed;
    double *qr, *Jr, *er; /* the restored trial (several levels) */
    ik__walk *walk;       /* each task's walk down its chain (evaluate), laid
                             out as the group's column lists */
    double *H0, *H;       /* tree_step: J^T J of the first level's rows in the
                             group's skyline (of this Jacobian: H0_of), and
                             its factor */
    const double *H0_of;
    double *g, *jinv;     /* tree_step: J^T e, 1 / the pivots */
    double (*cv)[6];      /* tree_normal: one task's columns */
    size_t *anc;          /* tree_step: a variable's ancestors */
    double *w;            /* eigenvalues (manipulability) */
    bool *locked;         /* the limited steps' (group variables) */
    bool met[IK_TREE_MAX_TIPS], met_t[IK_TREE_MAX_TIPS]; /* per group task */
    double lc[IK_TREE_MAX_TIPS + 1], lct[IK_TREE_MAX_TIPS + 1]; /* level costs */
    double lcr[IK_TREE_MAX_TIPS + 1];
    bool met_r[IK_TREE_MAX_TIPS];
    size_t best_k;
    double best_cost;
    size_t iterations;
    size_t nl;           /* levels the step serves: 0..nl-1 */
    bool frozen[IK_TREE_MAX_TIPS]; /* per level: at its best under those above */
    double ceil[IK_TREE_MAX_TIPS]; /* a frozen level's cost may not exceed */
    ik_budget whole; /* opts.timeout_s over the whole solve (ik_budget.h) */
    ik_budget part;  /* the current group's share of it */
    bool timed_out, out_of_iterations;
} solver;

static bool budget_left(solver *S)
{
    if (S->o->max_iterations && S->iterations >= S->o->max_iterations) {
        S->out_of_iterations = true;
        return false;
    }
    if (S->o->timeout_s > 0.0 && S->iterations % CLOCK_EVERY == 0 && ik_budget_spent(&S->part, S->iterations)) {
        S->timed_out = true;
        return false;
    }
    return true;
}

/* J (m x nv, weighted rows), e (weighted), level costs lc and task flags
 * met at the full variable vector q. Returns the first unmet level. */
static size_t evaluate(solver *S, const double *q, double *J, double *e, double *lc, bool *met)
{
    const group *G = S->G;
    const ik_tree *T = S->T;
    const size_t nv = G->nv;
    if (S->N0_of == J)
        S->N0_of = NULL; /* its normal matrix is about to be stale */
    if (S->H0_of == J)
        S->H0_of = NULL;
    /* J's entries off the tasks' chains are zero from search_group's start
     * on: only the chains' columns are written here */
    for (size_t l = 0; l < G->nlev; l++)
        lc[l] = 0.0;
    double R[9], p[3];
    size_t first_unmet = G->nlev;
    for (size_t k = 0; k < G->ntask; k++) {
        const task *tk = G->task[k];
        const ik_chain *c = &T->chain[tk->tip];
        const size_t dof = c->dof;
        /* the walk down the chain, resumed after the joints it shares with
         * an earlier task's chain (ik_chain_internal.h) */
        ik__walk *st = S->walk + (G->tcol[k] - G->tcol[0]);
        size_t from = 0, from_k = 0;
        for (size_t k2 = 0; k2 < k; k2++)
            if (G->pre[k * G->ntask + k2] > from) {
                from = G->pre[k * G->ntask + k2];
                from_k = k2;
            }
        if (from > 0)
            memcpy(st, S->walk + (G->tcol[from_k] - G->tcol[0]), from * sizeof *st);
        ik__chain_walk_from(c, q, T->var[tk->tip], from, st, R, p);
        double err[6];
        err[0] = tk->target.p.x - p[0];
        err[1] = tk->target.p.y - p[1];
        err[2] = tk->target.p.z - p[2];
        if (tk->need_rot)
            ik_mat3_rotvec_error(tk->Rt, R, err + 3);
        else
            err[3] = err[4] = err[5] = 0.0;
        bool ok = true;
        for (int r = 0; r < 6; r++) {
            const double tol = r < 3 ? S->o->tol_pos : S->o->tol_rot;
            if (tk->check[r] && !(fabs(err[r]) <= CONVERGED_FRACTION * tol))
                ok = false;
        }
        met[k] = ok;
        size_t ll = 0;
        while (G->lev_task[ll + 1] <= k)
            ll++;
        if (!ok && ll < first_unmet)
            first_unmet = ll;
        for (size_t a = 0; a < tk->m; a++) {
            const size_t row = tk->row0 + a;
            const double v = tk->sw[a] * err[tk->row[a]];
            e[row] = v;
            lc[ll] += v * v;
        }
        /* the Jacobian's columns of the chain's joints (ik_chain.h's
         * layout: [z x (p - o); z] for a revolute joint, [z; 0] for a
         * prismatic one), weighted, into the task's rows */
        const size_t *col = G->tcol[k];
        for (size_t i = 0; i < dof; i++) {
            const ik__walk *w = &st[i];
            double jc[6];
            if (c->type[i] == IK_JOINT_PRISMATIC) {
                jc[0] = w->z[0];
                jc[1] = w->z[1];
                jc[2] = w->z[2];
                jc[3] = jc[4] = jc[5] = 0.0;
            } else {
                const double dx = p[0] - w->o[0], dy = p[1] - w->o[1], dz = p[2] - w->o[2];
                jc[0] = w->z[1] * dz - w->z[2] * dy;
                jc[1] = w->z[2] * dx - w->z[0] * dz;
                jc[2] = w->z[0] * dy - w->z[1] * dx;
                jc[3] = w->z[0];
                jc[4] = w->z[1];
                jc[5] = w->z[2];
            }
            for (size_t a = 0; a < tk->m; a++)
                J[(tk->row0 + a) * nv + col[i]] = tk->sw[a] * jc[tk->row[a]];
        }
    }
    return first_unmet;
}

/* ---- linear algebra on the workspace ----------------------------------- */

/* N = A A^T for the r x nv matrix A (rows of stride nv). */
static void gram(const double *A, size_t r, size_t nv, double *N)
{
    for (size_t a = 0; a < r; a++)
        for (size_t b = 0; b <= a; b++) {
            double s = 0.0;
            for (size_t k = 0; k < nv; k++)
                s += A[a * nv + k] * A[b * nv + k];
            N[a * r + b] = s;
            N[b * r + a] = s;
        }
}

/* The task-priority damped least-squares step for the unlocked variables
 * (file comment of ik_tree.h) with error el, into S->dq. */
static bool priority_step(solver *S, const double *J, const double *el, double lambda,
                          const bool *locked)
{
    const group *G = S->G;
    const size_t nv = G->nv, nlev = S->nl;
    double inv[6 * IK_TREE_MAX_TIPS];
    for (size_t k = 0; k < nv; k++)
        S->dq[k] = 0.0;
    if (nlev > 1) {
        memset(S->P, 0, nv * nv * sizeof *S->P);
        for (size_t k = 0; k < nv; k++)
            S->P[k * nv + k] = locked[k] ? 0.0 : 1.0;
    }
    for (size_t l = 0; l < nlev; l++) {
        const size_t r0 = G->lev_row[l], r = G->lev_row[l + 1] - r0;
        const double *Jl = J + r0 * nv;
        double *A = S->A;
        if (nlev == 1) { /* A = J with the locked columns zeroed */
            for (size_t a = 0; a < r; a++)
                for (size_t k = 0; k < nv; k++)
                    A[a * nv + k] = locked[k] ? 0.0 : Jl[a * nv + k];
        } else { /* A = J_l P */
            for (size_t a = 0; a < r; a++)
                for (size_t k = 0; k < nv; k++) {
                    double s = 0.0;
                    for (size_t i = 0; i < nv; i++)
                        s += Jl[a * nv + i] * S->P[i * nv + k];
                    A[a * nv + k] = s;
                }
        }
        /* rhs = e_l - J_l dq */
        for (size_t a = 0; a < r; a++) {
            double s = el[r0 + a];
            if (l > 0)
                for (size_t k = 0; k < nv; k++)
                    s -= Jl[a * nv + k] * S->dq[k];
            S->rhs[a] = s;
        }
        gram(A, r, nv, S->N);
        const bool last = l + 1 == nlev;
        if (!last) /* keep A A^T for the projector: X holds a copy */
            memcpy(S->X, S->N, r * r * sizeof *S->N);
        if (!ik__cholesky(S->N, S->N, r, r, lambda, inv))
            return false;
        ik__cholesky_solve(S->N, r, r, inv, S->rhs);
        for (size_t a = 0; a < r; a++)
            for (size_t k = 0; k < nv; k++)
                S->dq[k] += A[a * nv + k] * S->rhs[a];
        if (last)
            break;
        /* P -= A^T (A A^T + mu I)^-1 A, column by column of A */
        double scale = 0.0;
        for (size_t a = 0; a < r; a++)
            scale = fmax(scale, S->X[a * r + a]);
        if (!ik__cholesky(S->X, S->X, r, r, PROJ_DAMPING * (scale > 0.0 ? scale : 1.0), inv))
            return false;
        for (size_t k = 0; k < nv; k++) {
            for (size_t a = 0; a < r; a++)
                S->y[a] = A[a * nv + k];
            ik__cholesky_solve(S->X, r, r, inv, S->y);
            for (size_t i = 0; i < nv; i++) {
                double s = 0.0;
                for (size_t a = 0; a < r; a++)
                    s += A[a * nv + i] * S->y[a];
                S->P[i * nv + k] -= s;
            }
        }
    }
    for (size_t k = 0; k < nv; k++)
        if (locked[k])
            S->dq[k] = 0.0;
    return true;
}

/* Variable v's value x put back inside its limits, as ik_numeric.c does. */
static double limit_var(const ik_tree *T, size_t v, double x, bool *clamped)
{
    *clamped = false;
    if (T->type[v] == IK_JOINT_CONTINUOUS)
        return ik_wrap_angle(x);
    const double lo = T->lower[v], hi = T->upper[v];
    if (x >= lo && x <= hi)
        return x;
    if (T->type[v] == IK_JOINT_REVOLUTE && hi - lo >= 2.0 * IK_PI) {
        double w = lo + fmod(x - lo, 2.0 * IK_PI) + (x < lo ? 2.0 * IK_PI : 0.0);
        if (w >= lo && w <= hi)
            return w;
    }
    *clamped = true;
    return x > hi ? hi : lo;
}

/* The normal matrix N = J J^T of the first level's rows (mr x mr, row
 * stride mr, both triangles), from the tasks' column lists: a tip's rows
 * are non-zero only in its own chain's variables, and two tips share only
 * the leading ones (G->pre), so each product runs over those alone. */
static void gram_tasks(const group *G, const double *J, size_t mr, double *N)
{
    const size_t nv = G->nv, nt = G->lev_task[1];
    for (size_t k1 = 0; k1 < nt; k1++) {
        const task *t1 = G->task[k1];
        const size_t *c = G->tcol[k1];
        for (size_t a = 0; a < t1->m; a++) {
            const size_t ra = t1->row0 + a;
            const double *Ja = J + ra * nv;
            for (size_t k2 = 0; k2 <= k1; k2++) {
                const task *t2 = G->task[k2];
                const size_t nc = k2 == k1 ? G->ntcol[k1] : G->pre[k1 * G->ntask + k2];
                for (size_t b = 0; b < t2->m; b++) {
                    const size_t rb = t2->row0 + b;
                    if (rb > ra)
                        break;
                    const double *Jb = J + rb * nv;
                    double sum = 0.0;
                    for (size_t i = 0; i < nc; i++)
                        sum += Ja[c[i]] * Jb[c[i]];
                    N[ra * mr + rb] = sum;
                    N[rb * mr + ra] = sum;
                }
            }
        }
    }
}

/* limited_step() when the step serves the first level only (every
 * single-level group, and the polish of a two-level one): the damped
 * least-squares step of ik_numeric.c on the first level's rows, with the
 * normal matrix built once per Jacobian (S->N0) and reused by every
 * damping tried there, a limit lock taking its column out of it by a
 * rank-one downdate instead of a new product. */
static bool limited_step_one(solver *S, double lambda)
{
    const group *G = S->G;
    const size_t nv = G->nv, mr = G->lev_row[1], nt = G->lev_task[1];
    const double *J = S->J;
    double inv[6 * IK_TREE_MAX_TIPS];
    bool *locked = S->locked;
    if (S->N0_of != J) {
        gram_tasks(G, J, mr, S->N0);
        S->N0_of = J;
    }
    memcpy(S->el, S->e, mr * sizeof *S->e);
    memcpy(S->qt, S->q, S->T->dof * sizeof *S->q);
    memcpy(S->N, S->N0, mr * mr * sizeof *S->N);
    for (size_t k = 0; k < nv; k++)
        locked[k] = false;
    for (int pass = 0;; pass++) {
        if (!ik__cholesky(S->N, S->X, mr, mr, lambda, inv))
            return false;
        memcpy(S->rhs, S->el, mr * sizeof *S->el);
        ik__cholesky_solve(S->X, mr, mr, inv, S->rhs);
        for (size_t k = 0; k < nv; k++)
            S->dq[k] = 0.0;
        for (size_t k1 = 0; k1 < nt; k1++) {
            const task *t1 = G->task[k1];
            const size_t *c = G->tcol[k1];
            for (size_t a = 0; a < t1->m; a++) {
                const size_t ra = t1->row0 + a;
                const double *Ja = J + ra * nv, y = S->rhs[ra];
                for (size_t i = 0; i < G->ntcol[k1]; i++)
                    S->dq[c[i]] += Ja[c[i]] * y;
            }
        }
        bool more = false;
        for (size_t k = 0; k < nv; k++) {
            if (locked[k])
                continue;
            const size_t v = G->v[k];
            bool clamped;
            S->qt[v] = limit_var(S->T, v, S->q[v] + S->dq[k], &clamped);
            if (clamped && pass < LOCK_PASSES) {
                /* lock it: its motion leaves the error, its column N */
                locked[k] = true;
                const double d = S->qt[v] - S->q[v];
                double col[6 * IK_TREE_MAX_TIPS];
                for (size_t r = 0; r < mr; r++) {
                    col[r] = J[r * nv + k];
                    S->el[r] -= col[r] * d;
                }
                for (size_t a = 0; a < mr; a++) {
                    if (col[a] == 0.0)
                        continue;
                    for (size_t b = 0; b < mr; b++)
                        S->N[a * mr + b] -= col[a] * col[b];
                }
                more = true;
            }
        }
        if (!more)
            return true;
    }
}

/* ---- the first level's step in joint space ---------------------------- */

/* H0 = J^T J of the first level's weighted rows, in the group's skyline:
 * variable k's row holds its entries with itself and its ancestors,
 * H0[sky[k] + d] for the ancestor d generations up. A row of task t is
 * non-zero only on t's chain (root first), whose variable i has the
 * variables i - 1, ..., 0 before it as its ancestors. */
static void tree_normal(solver *S)
{
    const group *G = S->G;
    const size_t nv = G->nv, nt = G->lev_task[1];
    const double *J = S->J;
    double(*cv)[6] = S->cv;
    memset(S->H0, 0, G->nsky * sizeof *S->H0);
    for (size_t k1 = 0; k1 < nt; k1++) {
        const task *t1 = G->task[k1];
        const size_t *c = G->tcol[k1], L = G->ntcol[k1], m = t1->m;
        /* the task's columns gathered, each a vector of its m rows */
        for (size_t a = 0; a < m; a++) {
            const double *Ja = J + (t1->row0 + a) * nv;
            for (size_t i = 0; i < L; i++)
                cv[i][a] = Ja[c[i]];
        }
        for (size_t i = 0; i < L; i++) {
            double *h = S->H0 + G->sky[c[i]];
            const double *vi = cv[i];
            if (m == 3) {
                for (size_t d = 0; d <= i; d++) {
                    const double *vj = cv[i - d];
                    h[d] += vi[0] * vj[0] + vi[1] * vj[1] + vi[2] * vj[2];
                }
            } else {
                for (size_t d = 0; d <= i; d++) {
                    const double *vj = cv[i - d];
                    double sum = 0.0;
                    for (size_t a = 0; a < m; a++)
                        sum += vi[a] * vj[a];
                    h[d] += sum;
                }
            }
        }
    }
    S->H0_of = J;
}

/* ha[k] -= li hv[k] for k < n: the Schur update of an ancestor's row (ha)
 * from a variable's (hv), rows that never overlap. */
static inline void schur_row(double *restrict ha, const double *restrict hv, size_t n, double li)
{
    size_t k = 0;
    for (; k + 4 <= n; k += 4) { /* four at a time: independent updates */
        ha[k] -= li * hv[k];
        ha[k + 1] -= li * hv[k + 1];
        ha[k + 2] -= li * hv[k + 2];
        ha[k + 3] -= li * hv[k + 3];
    }
    for (; k < n; k++)
        ha[k] -= li * hv[k];
}

/* The damped step dq = (J^T J + lambda I)^-1 J^T el over the unlocked
 * variables (the locked ones get 0), which is the stacked rows' step
 * J^T (J J^T + lambda I)^-1 el of limited_step_one, solved in joint space:
 * Cholesky of J^T J + lambda I eliminating the leaves first, so that the
 * factor fills nothing beyond each variable's ancestors (the kinematic
 * tree is the elimination tree); the cost is the sum over the variables
 * of their depth squared, instead of the rows cubed. False when a pivot
 * is not positive. */
static bool tree_step(solver *S, double lambda, const bool *locked)
{
    const group *G = S->G;
    const size_t nv = G->nv, nt = G->lev_task[1];
    const double *J = S->J;
    double *H = S->H, *g = S->g, *dq = S->dq;
    if (S->H0_of != J)
        tree_normal(S);
    memcpy(H, S->H0, G->nsky * sizeof *H);
    /* g = J^T el */
    for (size_t k = 0; k < nv; k++)
        g[k] = 0.0;
    for (size_t k1 = 0; k1 < nt; k1++) {
        const task *t1 = G->task[k1];
        const size_t *c = G->tcol[k1], L = G->ntcol[k1];
        for (size_t a = 0; a < t1->m; a++) {
            const size_t ra = t1->row0 + a;
            const double *Ja = J + ra * nv, y = S->el[ra];
            for (size_t i = 0; i < L; i++)
                g[c[i]] += Ja[c[i]] * y;
        }
    }
    /* factor, leaves first (a child's index is above its parent's) */
    for (size_t v = nv; v-- > 0;) {
        if (locked[v])
            continue;
        double *h = H + G->sky[v];
        const size_t dv = G->dep[v];
        const double d = h[0] + lambda;
        if (!(d > 0.0))
            return false;
        const double inv = 1.0 / sqrt(d);
        S->jinv[v] = inv;
        ptrdiff_t a = G->par[v];
        for (size_t k = 1; k <= dv; k++, a = G->par[a]) {
            S->anc[k] = (size_t)a;
            h[k] = locked[a] ? 0.0 : h[k] * inv;
        }
        for (size_t i = 1; i <= dv; i++) {
            const double li = h[i];
            if (li != 0.0) /* two different rows of the skyline */
                schur_row(H + G->sky[S->anc[i]], h + i, dv - i + 1, li);
        }
    }
    /* L y = g, leaves first; then L^T x = y, roots first */
    for (size_t v = nv; v-- > 0;) {
        if (locked[v]) {
            g[v] = 0.0;
            continue;
        }
        const double *h = H + G->sky[v];
        const double y = g[v] * S->jinv[v];
        g[v] = y;
        ptrdiff_t a = G->par[v];
        for (size_t k = 1; k <= G->dep[v]; k++, a = G->par[a])
            g[a] -= h[k] * y;
    }
    for (size_t v = 0; v < nv; v++) {
        if (locked[v]) {
            dq[v] = 0.0;
            continue;
        }
        const double *h = H + G->sky[v];
        double x = g[v];
        ptrdiff_t a = G->par[v];
        for (size_t k = 1; k <= G->dep[v]; k++, a = G->par[a])
            x -= h[k] * dq[a];
        dq[v] = x * S->jinv[v];
    }
    return true;
}

/* A step's joints put within their limits (S->q + S->dq into S->qt): a
 * joint pushed through a limit, in the first LOCK_PASSES passes, is put on
 * it and locked, and its motion leaves the error el (J: m rows of the
 * group's nv columns). True when a joint was locked (the step is solved
 * again without it). */
static bool clamp_and_lock(solver *S, const double *J, size_t m, bool *locked, int pass)
{
    const group *G = S->G;
    const size_t nv = G->nv;
    bool more = false;
    for (size_t k = 0; k < nv; k++) {
        if (locked[k])
            continue;
        const size_t v = G->v[k];
        bool clamped;
        S->qt[v] = limit_var(S->T, v, S->q[v] + S->dq[k], &clamped);
        if (clamped && pass < LOCK_PASSES) {
            locked[k] = true;
            const double d = S->qt[v] - S->q[v];
            for (size_t r = 0; r < m; r++)
                S->el[r] -= J[r * nv + k] * d;
            more = true;
        }
    }
    return more;
}

/* limited_step_one's step, solved by tree_step (the group's first level
 * costs less in joint space), with the same limits: a joint pushed through
 * a limit is put on it, its motion leaves the error, it leaves the step. */
static bool limited_step_tree(solver *S, double lambda)
{
    const group *G = S->G;
    const size_t nv = G->nv, mr = G->lev_row[1];
    const double *J = S->J;
    bool *locked = S->locked;
    memcpy(S->el, S->e, mr * sizeof *S->e);
    memcpy(S->qt, S->q, S->T->dof * sizeof *S->q);
    for (size_t k = 0; k < nv; k++)
        locked[k] = false;
    for (int pass = 0;; pass++) {
        if (!tree_step(S, lambda, locked))
            return false;
        if (!clamp_and_lock(S, J, mr, locked, pass))
            return true;
    }
}

/* One limited step from S->q into S->qt (full vectors). */
static bool limited_step(solver *S, double lambda)
{
    if (S->nl == 1 && S->G->joint_space)
        return limited_step_tree(S, lambda);
    if (S->nl == 1 && S->G->sparse)
        return limited_step_one(S, lambda);
    const group *G = S->G;
    const size_t nv = G->nv, m = G->m;
    bool *locked = S->locked;
    memcpy(S->el, S->e, m * sizeof *S->e);
    memcpy(S->qt, S->q, S->T->dof * sizeof *S->q);
    for (size_t k = 0; k < nv; k++)
        locked[k] = false;
    for (int pass = 0;; pass++) {
        if (!priority_step(S, S->J, S->el, lambda, locked))
            return false;
        if (!clamp_and_lock(S, S->J, m, locked, pass))
            return true;
    }
}

/* ---- the search -------------------------------------------------------- */

enum { ATTEMPT_SOLVED = 1, ATTEMPT_STALLED = 0, ATTEMPT_BUDGET = -1 };

static void keep_best(solver *S, const double *q, size_t k, const double *lc)
{
    const double c = k < S->G->nlev ? lc[k] : 0.0;
    if (k > S->best_k || (k == S->best_k && c < S->best_cost)) {
        S->best_k = k;
        S->best_cost = c;
        memcpy(S->best, q, S->T->dof * sizeof *q);
    }
}

/* ---- the hierarchy ------------------------------------------------------ */

/* True when every task of level l is met (flags per group task). */
static bool level_met(const group *G, const bool *met, size_t l)
{
    for (size_t k = G->lev_task[l]; k < G->lev_task[l + 1]; k++)
        if (!met[k])
            return false;
    return true;
}

/* True when every unmet task of level l (every level when l is the
 * group's level count) is out of reach: nothing more can meet it. */
static bool unmet_hopeless(const solver *S, size_t l)
{
    const group *G = S->G;
    const size_t k0 = l < G->nlev ? G->lev_task[l] : 0;
    const size_t k1 = l < G->nlev ? G->lev_task[l + 1] : G->ntask;
    for (size_t k = k0; k < k1; k++)
        if (!S->met[k] && !G->task[k]->hopeless)
            return false;
    return true;
}

/* The strict hierarchy of attempt(): a trial (level costs lct, task flags
 * met_t) is acceptable while the step serves level `serve` when every
 * level above it keeps what it has (a met level stays met, a FROZEN one,
 * whose target the freedom left cannot reach, stays at or below its
 * ceiling) and level `serve` is met or improves on cost. */
static bool acceptable(const solver *S, size_t serve, const double *lct, const bool *met_t,
                       double cost)
{
    const group *G = S->G;
    for (size_t l = 0; l < serve; l++) {
        if (S->frozen[l] ? !(lct[l] <= S->ceil[l]) : !level_met(G, met_t, l))
            return false;
    }
    return level_met(G, met_t, serve) || lct[serve] < cost;
}

/* Exchanges two sets of joint values, Jacobian and error rows (a trial
 * taken or restored: the buffers change owners, nothing is copied). */
static void swap_trial(double **q, double **J, double **e, double **q2, double **J2, double **e2)
{
    double *t = *q;
    *q = *q2;
    *q2 = t;
    t = *J;
    *J = *J2;
    *J2 = t;
    t = *e;
    *e = *e2;
    *e2 = t;
}

/* A trial that serves a lower level leaves the higher levels' constraint
 * surface to second order (the null space is that of the linearisation).
 * One Gauss-Newton step on the levels above `serve` alone, from the trial,
 * brings it back onto the surface (a second-order correction, as in SQP
 * methods); the corrected trial replaces the trial when it is acceptable.
 * Returns whether it did. */
static bool restore(solver *S, size_t serve, double cost)
{
    double *q = S->q, *J = S->J, *e = S->e, *qt = S->qt;
    S->q = S->qt;
    S->J = S->Jt;
    S->e = S->et;
    S->qt = S->qr;
    S->nl = serve;
    bool ok = limited_step(S, LAMBDA_MIN);
    S->q = q;
    S->J = J;
    S->e = e;
    S->qt = qt;
    if (!ok)
        return false;
    evaluate(S, S->qr, S->Jr, S->er, S->lcr, S->met_r);
    if (!acceptable(S, serve, S->lcr, S->met_r, cost))
        return false;
    swap_trial(&S->qt, &S->Jt, &S->et, &S->qr, &S->Jr, &S->er);
    memcpy(S->lct, S->lcr, sizeof S->lct);
    memcpy(S->met_t, S->met_r, sizeof S->met_t);
    return true;
}

/* Levenberg-Marquardt from S->q on a strict task hierarchy; *k_out: the
 * first unmet level at the end. The step serves one level at a time, the
 * first one not yet met (`serve`), in the null space of the levels above
 * it (ik_tree.h's task-priority step over levels 0..serve); the levels
 * below it are left out of the step altogether, so a far lower target
 * never drags the higher ones while they are being met. A trial is kept
 * only when acceptable() (no met level above is lost, the served one
 * improves), after restore() when it drifted off a higher level. When the
 * served level is met, the next unmet one is served. When it cannot
 * improve any more (the damping runs out, LOWER_MAX_ITERS iterations, or
 * LOWER_FLAT_STEPS kept steps that no longer improve it) it is the top
 * level (the attempt is stalled: a restart may do better), or a lower one
 * at the best the freedom left allows: it is FROZEN (its cost may not grow
 * beyond a hair, FROZEN_SLACK) and the next level is served under it. */
static int attempt(solver *S, size_t *k_out)
{
    const group *G = S->G;
    size_t k = evaluate(S, S->q, S->J, S->e, S->lc, S->met);
    keep_best(S, S->q, k, S->lc);
    double lambda = LAMBDA_INIT, checkpoint = INFINITY;
    size_t it = 0, it_level = 0, flat = 0, serve = k;
    for (size_t l = 0; l < G->nlev; l++)
        S->frozen[l] = false;
    int rc;
    for (;;) {
        *k_out = k;
        while (serve < G->nlev && level_met(G, S->met, serve))
            serve++;
        if (k == G->nlev) {
            rc = ATTEMPT_SOLVED;
            break;
        }
        if (serve == G->nlev) { /* every unmet level frozen */
            rc = ATTEMPT_STALLED;
            break;
        }
        if (!budget_left(S)) {
            rc = ATTEMPT_BUDGET;
            break;
        }
        const double cost = S->lc[serve];
        bool stall = false;
        if (serve == 0) {
            if (it >= ATTEMPT_MAX_ITERS && (it - ATTEMPT_MAX_ITERS) % SLOW_EVERY == 0) {
                if (it >= SLOW_MAX_ITERS || cost > SLOW_MAX_COST || cost > 0.25 * checkpoint) {
                    rc = ATTEMPT_STALLED;
                    break;
                }
                checkpoint = cost;
            }
        } else if (it_level >= LOWER_MAX_ITERS || flat >= LOWER_FLAT_STEPS) {
            stall = true;
        }
        if (it_level >= HOPELESS_ITERS && unmet_hopeless(S, serve)) {
            /* out of reach: a few steps towards it give the best pose */
            if (serve == 0) {
                rc = ATTEMPT_STALLED;
                break;
            }
            stall = true;
        }
        if (!stall) {
            S->iterations++;
            it++;
            it_level++;
            S->nl = serve + 1;
            if (!limited_step(S, lambda)) {
                lambda *= LAMBDA_UP;
                stall = lambda > LAMBDA_MAX;
            } else {
                size_t kt = evaluate(S, S->qt, S->Jt, S->et, S->lct, S->met_t);
                bool ok = acceptable(S, serve, S->lct, S->met_t, cost);
                if (!ok && serve > 0 && restore(S, serve, cost)) {
                    ok = true;
                    kt = 0;
                    while (kt < G->nlev && level_met(G, S->met_t, kt))
                        kt++;
                }
                if (ok) {
                    const bool met_now = level_met(G, S->met_t, serve);
                    flat = (!met_now && cost - S->lct[serve] <= LOWER_FLAT * cost) ? flat + 1 : 0;
                    swap_trial(&S->q, &S->J, &S->e, &S->qt, &S->Jt, &S->et);
                    memcpy(S->lc, S->lct, sizeof S->lc);
                    memcpy(S->met, S->met_t, sizeof S->met);
                    k = kt;
                    keep_best(S, S->q, k, S->lc);
                    lambda = fmax(lambda * LAMBDA_DOWN, LAMBDA_MIN);
                    if (met_now) { /* on to the next level */
                        checkpoint = INFINITY;
                        it_level = 0;
                        flat = 0;
                        lambda = LAMBDA_INIT;
                    }
                } else {
                    lambda *= LAMBDA_UP;
                    stall = lambda > LAMBDA_MAX;
                }
            }
        }
        if (stall) {
            if (serve == 0) {
                rc = ATTEMPT_STALLED;
                break;
            }
            /* the best this level gets under the ones above: frozen */
            S->frozen[serve] = true;
            S->ceil[serve] = S->lc[serve] * (1.0 + FROZEN_SLACK);
            serve++;
            it_level = 0;
            flat = 0;
            lambda = LAMBDA_INIT;
        }
    }
    return rc;
}

static void random_var(const ik_tree *T, size_t v, ik_rng *r, double *q)
{
    if (T->type[v] == IK_JOINT_CONTINUOUS)
        q[v] = ik_rng_uniform(r, -IK_PI, IK_PI);
    else
        q[v] = ik_rng_uniform(r, T->lower[v], T->upper[v]);
}

/* Variable v's value x re-expressed as its 2 pi k equivalent nearest ref
 * (itself inside the limits): ik_chain_turn_near() of a chain that holds
 * it (continuous joints, and revolute joints whose range spans a full
 * turn; x itself otherwise). */
static double var_near(const ik_tree *T, size_t v, double x, double ref)
{
    /* a one-joint view of the variable's type and limits */
    ik_chain one;
    memset(&one, 0, sizeof one);
    one.dof = 1;
    one.type = &T->type[v];
    one.lower = &T->lower[v];
    one.upper = &T->upper[v];
    return ik_chain_turn_near(&one, 0, x, ref);
}

/* a[v] - b[v] measured between the turns nearest each other. */
static double var_delta(const ik_tree *T, size_t v, const double *a, const double *b)
{
    return var_near(T, v, a[v], b[v]) - b[v];
}

/* ---- objectives --------------------------------------------------------- */

/* Eigenvalues of the symmetric d x d matrix M (destroyed) by cyclic
 * Jacobi rotations, into w. */
static void jacobi_eigen(double *M, size_t d, double *w)
{
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = 0.0, diag = 0.0;
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++)
                if (i != j)
                    off += M[i * d + j] * M[i * d + j];
                else
                    diag += M[i * d + i] * M[i * d + i];
        if (off <= 1e-30 * (diag > 0.0 ? diag : 1.0))
            break;
        for (size_t p = 0; p < d; p++)
            for (size_t q = p + 1; q < d; q++) {
                const double apq = M[p * d + q];
                if (fabs(apq) < 1e-300)
                    continue;
                const double theta = (M[q * d + q] - M[p * d + p]) / (2.0 * apq);
                const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (size_t k = 0; k < d; k++) { /* columns p, q */
                    const double mkp = M[k * d + p], mkq = M[k * d + q];
                    M[k * d + p] = c * mkp - s * mkq;
                    M[k * d + q] = s * mkp + c * mkq;
                }
                for (size_t k = 0; k < d; k++) { /* rows p, q */
                    const double mpk = M[p * d + k], mqk = M[q * d + k];
                    M[p * d + k] = c * mpk - s * mqk;
                    M[q * d + k] = s * mpk + c * mqk;
                }
            }
    }
    for (size_t i = 0; i < d; i++)
        w[i] = M[i * d + i];
}

/* The symmetric product of J (m x nv) with the smaller dimension into N;
 * returns that dimension. */
static size_t small_gram(const double *J, size_t m, size_t nv, double *N)
{
    if (m <= nv) {
        gram(J, m, nv, N);
        return m;
    }
    for (size_t a = 0; a < nv; a++)
        for (size_t b = 0; b <= a; b++) {
            double s = 0.0;
            for (size_t r = 0; r < m; r++)
                s += J[r * nv + a] * J[r * nv + b];
            N[a * nv + b] = N[b * nv + a] = s;
        }
    return nv;
}

/* Manip1 (sqrt det J J^T) or Manip2 (sigma_min / sigma_max) of J. */
static double manipulability(solver *S, const double *J, bool ratio)
{
    const group *G = S->G;
    size_t d = small_gram(J, G->m, G->nv, S->N);
    double *w = S->w;
    if (G->m > G->nv && ratio == false)
        return 0.0; /* more rows than joints: J J^T is singular */
    jacobi_eigen(S->N, d, w);
    double lo = INFINITY, hi = 0.0, prod = 1.0;
    for (size_t i = 0; i < d; i++) {
        double s = w[i] > 0.0 ? w[i] : 0.0;
        lo = fmin(lo, s);
        hi = fmax(hi, s);
        prod *= sqrt(s);
    }
    if (ratio)
        return hi > 0.0 ? sqrt(lo / hi) : 0.0;
    return prod;
}

/* The objective's score of the group's solution S->q (lower is better);
 * J must be the Jacobian at S->q. */
static double score(solver *S)
{
    const group *G = S->G;
    const ik_tree *T = S->T;
    double s = 0.0;
    switch (S->o->objective) {
    case IK_TREE_OBJ_DISTANCE:
        for (size_t k = 0; k < G->nv; k++) {
            double d = var_delta(T, G->v[k], S->q, S->seed);
            s += d * d;
        }
        return s;
    case IK_TREE_OBJ_MID_LIMITS:
        for (size_t k = 0; k < G->nv; k++) {
            const size_t v = G->v[k];
            if (T->type[v] == IK_JOINT_CONTINUOUS || !(T->upper[v] > T->lower[v]))
                continue;
            double d = (S->q[v] - 0.5 * (T->lower[v] + T->upper[v])) / (T->upper[v] - T->lower[v]);
            s += d * d;
        }
        return s;
    case IK_TREE_OBJ_MANIP1:
        return -manipulability(S, S->J, false);
    case IK_TREE_OBJ_MANIP2:
        return -manipulability(S, S->J, true);
    default:
        return 0.0;
    }
}

/* Group *G of the tasks whose tips are in `tips` (tasks[0..ntask-1],
 * levels 0..nlev-1), on every variable that moves one of them: its tasks
 * stacked level by level (their row0 is set here) and the column lists
 * of the sparse products. Its arrays go to the workspace's gi (the
 * solver's carve: tree dof, tree dof, the chains' dof added, ntask^2,
 * and tree dof three times for the variables' tree). */
static void group_init(group *G, const ik_tree *T, uint32_t tips, task *tasks, size_t ntask,
                       size_t nlev, const group *gi)
{
    memset(G, 0, sizeof *G);
    G->tips = tips;
    G->v = gi->v;
    G->local = gi->local;
    G->pre = gi->pre;
    for (size_t v = 0; v < T->dof; v++) {
        G->local[v] = -1;
        if (T->tips_of[v] & tips) {
            G->local[v] = (ptrdiff_t)G->nv;
            G->v[G->nv++] = v;
        }
    }
    /* its tasks in level order, rows stacked */
    size_t row = 0;
    for (size_t l = 0; l < nlev; l++) {
        bool any = false;
        for (size_t k = 0; k < ntask; k++) {
            if (tasks[k].level != l || !(tips & (1u << tasks[k].tip)))
                continue;
            if (!any) {
                G->lev_row[G->nlev] = row;
                G->lev_task[G->nlev] = G->ntask;
                any = true;
            }
            tasks[k].row0 = row;
            row += tasks[k].m;
            G->task[G->ntask++] = &tasks[k];
        }
        if (any)
            G->nlev++;
    }
    G->lev_row[G->nlev] = row;
    G->lev_task[G->nlev] = G->ntask;
    G->m = row;
    G->sparse = true;
    size_t *col = gi->tcol[0];
    for (size_t k = 0; k < G->ntask; k++) {
        const size_t t = G->task[k]->tip;
        G->ntcol[k] = T->chain[t].dof;
        G->tcol[k] = col;
        col += G->ntcol[k];
        for (size_t i = 0; i < G->ntcol[k]; i++)
            G->tcol[k][i] = (size_t)G->local[T->var[t][i]];
        for (size_t k2 = 0; k2 < k; k2++) {
            const size_t t2 = G->task[k2]->tip;
            size_t p = 0;
            while (p < T->chain[t].dof && p < T->chain[t2].dof && T->var[t][p] == T->var[t2][p])
                p++;
            G->pre[k * G->ntask + k2] = G->pre[k2 * G->ntask + k] = p;
            for (size_t i = p; i < T->chain[t].dof; i++) /* nothing shared past it */
                if (T->tips_of[T->var[t][i]] & (1u << t2))
                    G->sparse = false;
        }
    }
    /* the variables' tree: a chain's variable i has variable i - 1 as its
     * parent, whichever chain holds it (the joint-space step needs that) */
    bool tree_ok = G->sparse;
    G->par = gi->par;
    G->dep = gi->dep;
    G->sky = gi->sky;
    for (size_t k = 0; k < G->nv; k++)
        G->dep[k] = SIZE_MAX;
    for (size_t k = 0; k < G->ntask && tree_ok; k++)
        for (size_t i = 0; i < G->ntcol[k]; i++) {
            const size_t c = G->tcol[k][i];
            const ptrdiff_t pc = i ? (ptrdiff_t)G->tcol[k][i - 1] : -1;
            if (G->dep[c] == SIZE_MAX) {
                G->par[c] = pc;
                G->dep[c] = i;
            } else if (G->par[c] != pc || G->dep[c] != i) {
                tree_ok = false;
            }
            if (pc >= 0 && (size_t)pc >= c) /* parents are numbered first */
                tree_ok = false;
        }
    /* the cheaper system for the first level: the stacked rows' (their
     * Cholesky, rows cubed over 6, and their products over the shared
     * prefixes) or the joint-space skyline's (its Cholesky, the depths
     * squared, and J^T J over each row's chain) */
    double rows = 0.0, joint = 0.0;
    const size_t mr = G->lev_row[1];
    G->nsky = 0;
    for (size_t k = 0; k < G->nv && tree_ok; k++) {
        if (G->dep[k] == SIZE_MAX) { /* on no chain: impossible */
            tree_ok = false;
            break;
        }
        G->sky[k] = G->nsky;
        G->nsky += G->dep[k] + 1;
        joint += 0.5 * (double)(G->dep[k] * G->dep[k]);
    }
    rows = (double)mr * (double)mr * (double)mr / 6.0;
    for (size_t k1 = 0; k1 < G->lev_task[1]; k1++) {
        const double L = (double)G->ntcol[k1], m1 = (double)G->task[k1]->m;
        joint += 0.5 * m1 * L * L;
        for (size_t k2 = 0; k2 <= k1; k2++)
            rows += m1 * (double)G->task[k2]->m *
                    (double)(k2 == k1 ? G->ntcol[k1] : G->pre[k1 * G->ntask + k2]);
    }
    G->joint_space = tree_ok && joint < rows;
}

/* Searches group G; the answer's group variables go to S->sol (a full
 * solution) or S->best. Returns the number of full solutions found. */
static size_t search_group(solver *S, size_t *restarts_out, double *score_out)
{
    const group *G = S->G;
    const ik_tree *T = S->T;
    const ik_tree_opts *o = S->o;
    const size_t n = T->dof;
    memcpy(S->q, S->seed, n * sizeof *S->q);
    memcpy(S->best, S->seed, n * sizeof *S->q);
    /* the Jacobians' entries off the tasks' chains, zero for the group
     * (evaluate writes the chains' columns only) */
    memset(S->J, 0, G->m * G->nv * sizeof *S->J);
    memset(S->Jt, 0, G->m * G->nv * sizeof *S->Jt);
    memset(S->Jr, 0, G->m * G->nv * sizeof *S->Jr);
    S->N0_of = S->H0_of = NULL;
    S->best_k = 0;
    S->best_cost = INFINITY;
    ik_rng r = {o->rng_seed ^ ((uint64_t)G->tips * 0xD1B54A32D192ED03ull)};
    size_t restarts = 0, solutions = 0, extra_left = 0;
    bool counting = false;
    double best_score = INFINITY;
    for (;;) {
        size_t k;
        int a = attempt(S, &k);
        if (a == ATTEMPT_SOLVED) {
            solutions++;
            double sc = score(S);
            if (sc < best_score) {
                best_score = sc;
                memcpy(S->sol, S->q, n * sizeof *S->q);
            }
            if (o->objective == IK_TREE_OBJ_NONE)
                break;
            if (o->objective == IK_TREE_OBJ_DISTANCE && restarts == 0) {
                bool near = true;
                for (size_t i = 0; i < G->nv; i++)
                    if (!(fabs(var_delta(T, G->v[i], S->q, S->seed)) <= o->local))
                        near = false;
                if (near)
                    break;
            }
        } else if (a == ATTEMPT_BUDGET) {
            break;
        } else if (unmet_hopeless(S, G->nlev)) {
            break; /* what is left unmet is out of reach: no restart helps */
        }
        /* after the first solution (objectives) or the first attempt that
         * met the top level (conflicting priorities): extra_restarts more */
        if (a == ATTEMPT_SOLVED || k > 0) {
            if (!counting) {
                counting = true;
                extra_left = o->extra_restarts;
            } else if (extra_left > 0) {
                extra_left--;
            }
            if (extra_left == 0)
                break;
        } else if (counting) {
            if (extra_left > 0)
                extra_left--;
            if (extra_left == 0)
                break;
        }
        if (restarts >= o->max_restarts || !budget_left(S))
            break;
        restarts++;
        /* Three restarts in FULL_EVERY (one level; every other with
         * several) redraw only the variables that move nothing but unmet
         * tasks, so that a solved arm is not thrown away because the other
         * one sits in a local minimum; when no task is met (one level), the
         * task farthest from its target counts as the only unmet one, the
         * others being usually on their way. The rest redraw the whole
         * group (the shared variables too). */
        uint32_t unmet = 0;
        for (size_t t = 0; t < G->ntask; t++)
            if (!S->met[t])
                unmet |= (uint32_t)1u << G->task[t]->tip;
        if (a != ATTEMPT_SOLVED && unmet == G->tips && G->ntask > 1 && G->nlev == 1) {
            double worst = -1.0;
            for (size_t t = 0; t < G->ntask; t++) {
                const task *tk = G->task[t];
                double c = 0.0;
                for (size_t i = 0; i < tk->m; i++)
                    c += S->e[tk->row0 + i] * S->e[tk->row0 + i];
                if (c > worst) {
                    worst = c;
                    unmet = (uint32_t)1u << tk->tip;
                }
            }
        }
        bool partial = a != ATTEMPT_SOLVED && unmet != 0 && unmet != G->tips &&
                       (G->nlev == 1 ? restarts % FULL_EVERY != 0 : k == 0 && restarts % 2 != 0);
        if (partial) {
            size_t own = 0;
            for (size_t i = 0; i < G->nv; i++)
                if ((T->tips_of[G->v[i]] & G->tips & ~unmet) == 0) {
                    random_var(T, G->v[i], &r, S->q);
                    own++;
                }
            partial = own > 0;
        }
        if (!partial)
            for (size_t i = 0; i < G->nv; i++)
                random_var(T, G->v[i], &r, S->q);
    }
    *restarts_out = restarts;
    *score_out = best_score;
    return solutions;
}

/* ---- the public entry point -------------------------------------------- */

#define WS_ALIGN 64

/* Carves (base NULL: only counts) the workspace of a solve on T into S and
 * the group arrays gi: with n variables, M = 6 ntips rows at most and
 * sq = max(M, n): J, Jt, A, Jr (M x n); N, X (sq x sq: small_gram may
 * take n x n); N0 (M x M); P (n x n); e, et, el, rhs, y, er (M); q, qt,
 * dq, best, sol, seed, qr, ref (n); the walks down the tips' chains (one
 * state per chain joint: the chains' dof added); the eigenvalues (sq); the
 * group's variable lists (n, n), column lists (the chains' dof added),
 * shared prefixes (ntips^2) and variables' tree (n, n, n); the joint-space
 * step's skylines (n times the longest chain plus one, twice), vectors (n,
 * n), ancestors (longest plus one) and task columns (longest x 6); the
 * locked flags (n). Returns the bytes, alignment slack included (SIZE_MAX
 * when not representable). */
static size_t solver_carve(char *base, const ik_tree *T, solver *S, group *gi, double **ref)
{
    const size_t n = T->dof, M = 6 * T->ntips, sq = M > n ? M : n;
    size_t longest = 0, cols = 0;
    for (size_t t = 0; t < T->ntips; t++) {
        longest = T->chain[t].dof > longest ? T->chain[t].dof : longest;
        cols += T->chain[t].dof;
    }
    carve C = {base, {0, true}};
    solver dummy;
    group gdummy;
    double *dref;
    if (!base) {
        S = &dummy;
        gi = &gdummy;
        ref = &dref;
    }
    if (n > SIZE_MAX / 8 / (M + 1) || sq > SIZE_MAX / 8 / (sq + 1))
        return SIZE_MAX;
    S->J = carve_take(&C, M * n, sizeof(double));
    S->Jt = carve_take(&C, M * n, sizeof(double));
    S->A = carve_take(&C, M * n, sizeof(double));
    S->Jr = carve_take(&C, M * n, sizeof(double));
    S->N = carve_take(&C, sq * sq, sizeof(double));
    S->X = carve_take(&C, sq * sq, sizeof(double));
    S->N0 = carve_take(&C, M * M, sizeof(double));
    S->P = carve_take(&C, n * n, sizeof(double));
    S->e = carve_take(&C, M, sizeof(double));
    S->et = carve_take(&C, M, sizeof(double));
    S->el = carve_take(&C, M, sizeof(double));
    S->rhs = carve_take(&C, M, sizeof(double));
    S->y = carve_take(&C, M, sizeof(double));
    S->er = carve_take(&C, M, sizeof(double));
    S->q = carve_take(&C, n, sizeof(double));
    S->qt = carve_take(&C, n, sizeof(double));
    S->dq = carve_take(&C, n, sizeof(double));
    S->best = carve_take(&C, n, sizeof(double));
    S->sol = carve_take(&C, n, sizeof(double));
    S->seed = carve_take(&C, n, sizeof(double));
    S->qr = carve_take(&C, n, sizeof(double));
    *ref = carve_take(&C, n, sizeof(double));
    S->walk = carve_take(&C, cols, sizeof(ik__walk));
    S->w = carve_take(&C, sq, sizeof(double));
    gi->v = carve_take(&C, n, sizeof(size_t));
    gi->local = carve_take(&C, n, sizeof(ptrdiff_t));
    gi->tcol[0] = carve_take(&C, cols, sizeof(size_t));
    gi->pre = carve_take(&C, T->ntips * T->ntips, sizeof(size_t));
    gi->par = carve_take(&C, n, sizeof(ptrdiff_t));
    gi->dep = carve_take(&C, n, sizeof(size_t));
    gi->sky = carve_take(&C, n, sizeof(size_t));
    /* the skyline: each variable's row up to the root, at most the longest
     * chain's length plus one */
    S->H0 = carve_take(&C, n * (longest + 1), sizeof(double));
    S->H = carve_take(&C, n * (longest + 1), sizeof(double));
    S->g = carve_take(&C, n, sizeof(double));
    S->jinv = carve_take(&C, n, sizeof(double));
    S->anc = carve_take(&C, longest + 1, sizeof(size_t));
    S->cv = carve_take(&C, longest, 6 * sizeof(double));
    S->locked = carve_take(&C, n, sizeof(bool));
    if (!C.L.ok || C.L.total > SIZE_MAX - WS_ALIGN)
        return SIZE_MAX;
    return C.L.total + WS_ALIGN;
}

size_t ik_tree_workspace_size(const ik_tree *tree)
{
    if (!tree || tree->dof == 0 || tree->ntips == 0 || tree->ntips > IK_TREE_MAX_TIPS ||
        !tree->chain)
        return WS_ALIGN;
    return solver_carve(NULL, tree, NULL, NULL, NULL);
}

static bool valid_target(const ik_target *t)
{
    bool need_q = t->mode == IK_TARGET_FULL_POSE;
    if (t->mode == IK_TARGET_WEIGHTED) {
        bool any = false;
        for (int r = 0; r < 6; r++) {
            if (!isfinite(t->weight[r]) || t->weight[r] < 0.0)
                return false;
            any |= t->weight[r] > 0.0;
            need_q |= r >= 3 && t->weight[r] > 0.0;
        }
        if (!any)
            return false;
    } else if (t->mode != IK_TARGET_FULL_POSE && t->mode != IK_TARGET_POSITION) {
        return false;
    }
    if (!ik_vec3_isfinite(t->pose.p))
        return false;
    return !need_q || (ik_quat_isfinite(t->pose.q) && ik_quat_dot(t->pose.q, t->pose.q) > 1e-24);
}

static int check_input(const ik_tree *T, const ik_tree_goal *goals, const double *seed,
                       const ik_tree_opts *o)
{
    if (!T || !goals || T->dof == 0 || T->ntips == 0 || T->ntips > IK_TREE_MAX_TIPS ||
        !T->chain)
        return IK_EINVAL;
    for (size_t t = 0; t < T->ntips; t++) {
        const ik_tree_goal *g = &goals[t];
        if (!isfinite(g->weight) || !(g->weight > 0.0))
            return IK_EINVAL;
        if (g->active ? !valid_target(&g->target)
                      : (g->keep != IK_TREE_KEEP_POSE && g->keep != IK_TREE_KEEP_JOINTS))
            return IK_EINVAL;
    }
    if (seed)
        for (size_t k = 0; k < T->dof; k++)
            if (!isfinite(seed[k]))
                return IK_EINVAL;
    if (!(o->tol_pos > 0.0) || !isfinite(o->tol_pos) || !(o->tol_rot > 0.0) ||
        !isfinite(o->tol_rot) || !(o->timeout_s >= 0.0) || !isfinite(o->timeout_s))
        return IK_EINVAL;
    if (o->timeout_s == 0.0 && o->max_iterations == 0 && o->max_restarts == SIZE_MAX)
        return IK_EINVAL;
    if (o->objective > IK_TREE_OBJ_MID_LIMITS || !(o->local >= 0.0) || !isfinite(o->local))
        return IK_EINVAL;
    return IK_OK;
}

/* The task of tip t: its target (or its seed pose for KEEP_POSE). */
static void setup_task(task *tk, size_t t, const ik_tree_goal *g, ik_xform seed_pose)
{
    memset(tk, 0, sizeof *tk);
    tk->tip = t;
    tk->priority = g->priority;
    double w[6] = {1, 1, 1, 1, 1, 1};
    ik_xform target = seed_pose;
    if (g->active) {
        target = g->target.pose;
        if (g->target.mode == IK_TARGET_POSITION)
            w[3] = w[4] = w[5] = 0.0;
        else if (g->target.mode == IK_TARGET_WEIGHTED)
            memcpy(w, g->target.weight, sizeof w);
    }
    for (int r = 0; r < 6; r++)
        if (w[r] > 0.0) {
            tk->row[tk->m] = r;
            tk->sw[tk->m] = sqrt(w[r] * g->weight);
            tk->m++;
            tk->check[r] = true;
            tk->need_rot |= r >= 3;
        }
    tk->target.p = target.p;
    tk->target.q = tk->need_rot ? ik_quat_normalize(target.q) : ik_quat_identity();
    ik_quat_to_mat3(tk->target.q, tk->Rt);
}

static void fill_tip(const ik_tree *T, const task *tk, const double *q, const ik_tree_opts *o,
                     ik_tree_tip_result *tr)
{
    ik_xform a = ik_tree_fk(T, q, tk->tip);
    if (!tk->need_rot)
        a.q = ik_quat_identity();
    double e[6];
    ik_pose_error(tk->target, a, e);
    tr->checked = true;
    tr->reached = true;
    tr->pos_err = ik_vec3_len(ik_v3(e[0], e[1], e[2]));
    tr->rot_err = tk->need_rot ? sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]) : 0.0;
    for (int r = 0; r < 6; r++) {
        if (!tk->check[r])
            continue;
        double v = fabs(e[r]);
        if (!(v <= (r < 3 ? o->tol_pos : o->tol_rot)))
            tr->reached = false;
        if (r < 3)
            tr->pos_err_max = fmax(tr->pos_err_max, v);
        else
            tr->rot_err_max = fmax(tr->rot_err_max, v);
    }
}

/* With a collision check, ik_tree_avoid.c's search runs the solve below. */
int ik_tree_solve(const ik_tree *tree, const ik_tree_goal *goals, const double *seed,
                  const ik_tree_opts *opts, void *ws, size_t ws_size, double *q_out,
                  ik_tree_result *res)
{
    if (opts && opts->collide)
        return ik__tree_solve_avoiding(tree, goals, seed, opts, ws, ws_size, q_out, res);
    return ik__tree_solve_plain(tree, goals, seed, opts, ws, ws_size, q_out, res);
}

int ik__tree_solve_plain(const ik_tree *tree, const ik_tree_goal *goals, const double *seed,
                         const ik_tree_opts *opts, void *ws, size_t ws_size, double *q_out,
                         ik_tree_result *res)
{
    ik_tree_opts defaults = ik_tree_opts_default();
    const ik_tree_opts *o = opts ? opts : &defaults;
    int rc = (!ws || !q_out) ? IK_EINVAL : check_input(tree, goals, seed, o);
    if (rc == IK_OK && ws_size < ik_tree_workspace_size(tree))
        rc = IK_ENOSPC;
    if (rc != IK_OK) {
        if (res) {
            memset(res, 0, sizeof *res);
            res->status = rc;
        }
        return rc;
    }
    const ik_tree *T = tree;
    const size_t n = T->dof;
    char *base = (char *)(((uintptr_t)ws + (WS_ALIGN - 1)) & ~(uintptr_t)(WS_ALIGN - 1));
    solver S;
    memset(&S, 0, sizeof S);
    S.T = T;
    S.o = o;
    group gi; /* the group arrays in the workspace */
    double *ref;
    solver_carve(base, T, &S, &gi, &ref);
    ik_budget_start(&S.whole, o->clock, o->timeout_s);
    S.part = S.whole;

    /* the seed, inside the limits; ref keeps its turns (continuous joints
     * unwrapped unless beyond IK_TURN_SEED_MAX) for the answer's */
    if (seed)
        memcpy(S.seed, seed, n * sizeof *seed);
    else
        ik_tree_mid(T, S.seed);
    for (size_t v = 0; v < n; v++) {
        if (T->type[v] == IK_JOINT_CONTINUOUS) {
            ref[v] = fabs(S.seed[v]) > IK_TURN_SEED_MAX ? ik_wrap_angle(S.seed[v]) : S.seed[v];
            S.seed[v] = ik_wrap_angle(S.seed[v]);
        } else {
            S.seed[v] = ik_clamp(S.seed[v], T->lower[v], T->upper[v]);
            ref[v] = S.seed[v];
        }
    }

    /* tasks, levels */
    task tasks[IK_TREE_MAX_TIPS];
    size_t ntask = 0;
    unsigned prio[IK_TREE_MAX_TIPS];
    size_t nlev = 0;
    uint32_t task_tips = 0;
    for (size_t t = 0; t < T->ntips; t++) {
        const ik_tree_goal *g = &goals[t];
        if (!g->active && g->keep != IK_TREE_KEEP_POSE)
            continue;
        const ik_xform at_seed = ik_tree_fk(T, S.seed, t);
        setup_task(&tasks[ntask], t, g, at_seed);
        tasks[ntask].hopeless = tasks[ntask].check[0] && tasks[ntask].check[1] &&
                                tasks[ntask].check[2] &&
                                ik_chain_beyond_reach(&T->chain[t], tasks[ntask].target.p);
        /* a target too far to measure cannot be solved */
        ik_vec3 d = ik_vec3_sub(tasks[ntask].target.p, at_seed.p);
        if (!ik_vec3_isfinite(d) || !isfinite(ik_vec3_len(d))) {
            if (res) {
                memset(res, 0, sizeof *res);
                res->status = IK_EINVAL;
            }
            return IK_EINVAL;
        }
        task_tips |= (uint32_t)1u << t;
        size_t l = 0;
        while (l < nlev && prio[l] < g->priority)
            l++;
        if (l == nlev || prio[l] != g->priority) {
            memmove(prio + l + 1, prio + l, (nlev - l) * sizeof *prio);
            prio[l] = g->priority;
            nlev++;
        }
        ntask++;
    }
    for (size_t k = 0; k < ntask; k++)
        for (size_t l = 0; l < nlev; l++)
            if (prio[l] == tasks[k].priority)
                tasks[k].level = l;

    /* groups: tasks joined by a shared moving variable */
    uint32_t comp[IK_TREE_MAX_TIPS];
    size_t ncomp = 0;
    for (size_t k = 0; k < ntask; k++)
        comp[ncomp++] = (uint32_t)1u << tasks[k].tip;
    for (size_t v = 0; v < n; v++) {
        uint32_t mask = T->tips_of[v] & task_tips, merged = 0;
        if (!mask)
            continue;
        size_t w = 0;
        for (size_t c = 0; c < ncomp; c++) {
            if (comp[c] & mask)
                merged |= comp[c];
            else
                comp[w++] = comp[c];
        }
        comp[w++] = merged;
        ncomp = w;
    }

    /* the answer starts as the seed: variables of no task stay there */
    double *answer = q_out; /* may alias seed: S.seed holds the copy */
    memcpy(answer, S.seed, n * sizeof *answer);
    double manip = o->objective == IK_TREE_OBJ_MANIP2 ? INFINITY : 1.0;

    size_t restarts_total = 0, solutions_total = 0;
    bool all_solved = true;
    for (size_t c = 0; c < ncomp; c++) {
        group G;
        group_init(&G, T, comp[c], tasks, ntask, nlev, &gi);
        S.G = &G;
        /* an equal share of the time left */
        ik_budget_share(&S.part, &S.whole, 1.0 / (double)(ncomp - c));
        size_t restarts;
        double sc;
        size_t sols = search_group(&S, &restarts, &sc);
        restarts_total += restarts;
        solutions_total += sols;
        const double *from = sols > 0 ? S.sol : S.best;
        if (sols == 0)
            all_solved = false;
        else if (o->objective == IK_TREE_OBJ_MANIP1)
            manip *= -sc;
        else if (o->objective == IK_TREE_OBJ_MANIP2)
            manip = fmin(manip, -sc);
        for (size_t i = 0; i < G.nv; i++)
            answer[G.v[i]] = from[G.v[i]];
    }
    for (size_t v = 0; v < n; v++) /* the turns nearest the seed's */
        answer[v] = var_near(T, v, answer[v], ref[v]);

    /* the tips of the answer: which are met, and why the others are not */
    ik_tree_tip_result tip[IK_TREE_MAX_TIPS];
    memset(tip, 0, sizeof tip);
    bool lev_ok[IK_TREE_MAX_TIPS];
    for (size_t l = 0; l < nlev; l++)
        lev_ok[l] = true;
    for (size_t k = 0; k < ntask; k++) {
        fill_tip(T, &tasks[k], answer, o, &tip[tasks[k].tip]);
        if (!tip[tasks[k].tip].reached)
            lev_ok[tasks[k].level] = false;
    }
    size_t levels_met = 0;
    while (levels_met < nlev && lev_ok[levels_met])
        levels_met++;
    const bool cut = S.timed_out || S.out_of_iterations;
    bool unmet_in_reach = false;
    int reason = IK_REASON_NONE;
    for (size_t l = 0; l < nlev; l++) /* in priority order */
        for (size_t k = 0; k < ntask; k++) {
            ik_tree_tip_result *tr = &tip[tasks[k].tip];
            if (tasks[k].level != l || tr->reached)
                continue;
            tr->reason = tasks[k].hopeless                 ? IK_REASON_OUT_OF_REACH
                         : l > 0 && levels_met >= l && !cut ? IK_REASON_PRIORITY
                                                           : IK_REASON_BUDGET;
            unmet_in_reach |= !tasks[k].hopeless;
            if (reason == IK_REASON_NONE)
                reason = tr->reason;
        }
    /* a group left without a solution whose best pose meets every tip's
     * tolerance all the same (a target past the reach or a limit by less
     * than it, where no attempt gets below CONVERGED_FRACTION of it) has
     * met its targets: every level is met */
    int status = IK_OK;
    if (!all_solved && levels_met < nlev)
        status = !unmet_in_reach && reason != IK_REASON_NONE ? IK_EUNREACHABLE
                 : S.timed_out                              ? IK_ETIMEDOUT
                                                            : IK_ENOTCONV;
    if (res) {
        memset(res, 0, sizeof *res);
        res->status = status;
        res->reason = status == IK_OK ? IK_REASON_NONE : reason;
        res->levels = nlev;
        res->levels_met = levels_met;
        res->groups = ncomp;
        res->iterations = S.iterations;
        res->restarts = restarts_total;
        res->solutions = solutions_total;
        memcpy(res->tip, tip, sizeof res->tip);
        /* the objective of the whole answer */
        if (o->objective == IK_TREE_OBJ_DISTANCE || o->objective == IK_TREE_OBJ_MID_LIMITS) {
            double s = 0.0;
            for (size_t v = 0; v < n; v++) {
                if (o->objective == IK_TREE_OBJ_DISTANCE) {
                    double d = var_delta(T, v, answer, S.seed);
                    s += d * d;
                } else if (T->type[v] != IK_JOINT_CONTINUOUS && T->upper[v] > T->lower[v]) {
                    double d = (answer[v] - 0.5 * (T->lower[v] + T->upper[v])) /
                               (T->upper[v] - T->lower[v]);
                    s += d * d;
                }
            }
            res->objective = s;
        } else if ((o->objective == IK_TREE_OBJ_MANIP1 || o->objective == IK_TREE_OBJ_MANIP2) &&
                   all_solved && ncomp > 0) {
            res->objective = manip;
        }
        res->elapsed_s = ik_budget_wall_s(&S.whole);
        res->cpu_s = ik_budget_cpu_s(&S.whole);
        res->closest.link = res->closest.other_link = res->closest.obstacle = -1;
        res->closest.distance = INFINITY;
    }
    return status;
}
