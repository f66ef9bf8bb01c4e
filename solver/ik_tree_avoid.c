/*
 * ik_tree_avoid.c: the tree solver with a collision check (contract in
 * ik_tree.h, COLLISIONS; seam in ik_tree_avoid.h).
 *
 * The tree's own search (ik__tree_solve_plain) splits the tips into
 * independent groups and solves each alone, which collisions between the
 * groups (one arm against the other) would couple; so the collision check
 * wraps the whole solve instead of living inside it:
 *   1. links the targets fix (rigid with the root; rigid with a tip whose
 *      target is a full pose) nearer than the margin: IK_ECOLLISION at
 *      once (after one solve, for the pose);
 *   2. the solve from the caller's seed, then from random configurations
 *      (the variables that move no checked tip stay at the seed), each with
 *      the time left and its own restart stream, until one answers IK_OK;
 *   3. such an answer not clear is moved out of collision by ik_avoid.h's
 *      repair on the stacked rows of every checked tip (all levels at once:
 *      the answer met them all), the variables that move no checked tip
 *      pinned at the seed; clear, it is the answer; not, the clearest is
 *      kept and step 2 goes on.
 * Answers are re-expressed at the turns nearest the caller's seed (ik_tree.h
 * TURNS), and the tips' errors measured on the answer given.
 *
 * Not here: the tree's search itself (ik_tree.c), the geometry
 * (ik_collide.c), the repair (ik_avoid.c).
 */
#include "solver/ik_tree_avoid.h"

#include <math.h>
#include <string.h>

#include "solver/ik_avoid.h"
#include "solver/ik_budget.h"
#include "solver/ik_reason.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"

#define OUTER_MAX                                                                                  \
    32 /* solves without a time budget (an iteration- or                                           \
          restart-bound search repeats only this often) */
#define CONVERGED_FRACTION                                                                         \
    0.5 /* as ik_tree.c's: met below half the                                                      \
           tolerance */

/* A collision model has a body per variable, so a checked tree has at most
 * this many variables (ik_collide_check_valid() holds the model to the
 * tree's dof). */
#define MAX_VARS IK_COLLIDE_MAX_BODIES

/* ---- the checked tips as ik_avoid.h's task ------------------------------- */

typedef struct tip_task {
    size_t tip;
    ik_xform target; /* unit quaternion */
    double Rt[9];
    int row[6];
    double sw[6];
    size_t m;
} tip_task;

typedef struct tree_task {
    const ik_tree *T;
    const ik_tree_opts *o;
    tip_task task[IK_TREE_MAX_TIPS];
    size_t ntask;
    ik_budget *budget;
    size_t *work;
} tree_task;

static bool tree_eval(void *ctx, const double *q, double *Jw, double *ew, size_t *m_out)
{
    tree_task *X = ctx;
    const ik_tree *T = X->T;
    const size_t n = T->dof;
    bool met = true;
    size_t m = 0;
    (*X->work)++;
    for (size_t k = 0; k < X->ntask; k++) {
        const tip_task *tk = &X->task[k];
        const ik_chain *c = &T->chain[tk->tip];
        double qc[MAX_VARS], J[6 * MAX_VARS], R[9], p[3], e[6];
        ik_tree_gather(T, tk->tip, q, qc);
        ik_chain_jacobian_mat(c, qc, J, R, p);
        e[0] = tk->target.p.x - p[0];
        e[1] = tk->target.p.y - p[1];
        e[2] = tk->target.p.z - p[2];
        ik_mat3_rotvec_error(tk->Rt, R, e + 3);
        for (size_t a = 0; a < tk->m; a++, m++) {
            const int r = tk->row[a];
            double *row = Jw + m * n;
            for (size_t v = 0; v < n; v++)
                row[v] = 0.0;
            for (size_t i = 0; i < c->dof; i++)
                row[T->var[tk->tip][i]] += tk->sw[a] * J[(size_t)r * c->dof + i];
            ew[m] = tk->sw[a] * e[r];
            double tol = r < 3 ? X->o->tol_pos : X->o->tol_rot;
            if (!(fabs(e[r]) <= CONVERGED_FRACTION * tol))
                met = false;
        }
    }
    *m_out = m;
    return met;
}

static bool tree_budget(void *ctx)
{
    tree_task *X = ctx;
    return !(X->o->timeout_s > 0.0 && (*X->work) % 4 == 0 && ik_budget_spent(X->budget, *X->work));
}

/* The task of tip t: its goal's target, or (KEEP_POSE) its pose at seed;
 * false when the tip is not checked. */
static bool setup(tip_task *tk, const ik_tree *T, size_t t, const ik_tree_goal *g,
                  const double *seed)
{
    if (!g->active && g->keep != IK_TREE_KEEP_POSE)
        return false;
    memset(tk, 0, sizeof *tk);
    tk->tip = t;
    double w[6] = {1, 1, 1, 1, 1, 1};
    ik_xform target = ik_tree_fk(T, seed, t);
    if (g->active) {
        target = g->target.pose;
        if (g->target.mode == IK_TARGET_POSITION)
            w[3] = w[4] = w[5] = 0.0;
        else if (g->target.mode == IK_TARGET_WEIGHTED)
            memcpy(w, g->target.weight, sizeof w);
    }
    bool rot = false;
    for (int r = 0; r < 6; r++)
        if (w[r] > 0.0) {
            tk->row[tk->m] = r;
            tk->sw[tk->m] = sqrt(w[r] * g->weight);
            tk->m++;
            rot |= r >= 3;
        }
    target.q = rot ? ik_quat_normalize(target.q) : ik_quat_identity();
    tk->target = target;
    ik_quat_to_mat3(target.q, tk->Rt);
    return true;
}

/* ---- helpers ------------------------------------------------------------- */

static double var_near(const ik_tree *T, size_t v, double x, double ref)
{
    if (T->type[v] == IK_JOINT_PRISMATIC)
        return x;
    for (size_t t = 0; t < T->ntips; t++)
        for (size_t i = 0; i < T->chain[t].dof; i++)
            if (T->var[t][i] == v)
                return ik_chain_turn_near(&T->chain[t], i, x, ref);
    return x;
}

/* The tips' results of ik_tree.h for the answer q. */
static void fill_tips(const ik_tree *T, const tree_task *X, const double *q, ik_tree_result *res)
{
    memset(res->tip, 0, sizeof res->tip);
    for (size_t k = 0; k < X->ntask; k++) {
        const tip_task *tk = &X->task[k];
        ik_tree_tip_result *tr = &res->tip[tk->tip];
        bool rot = false, check[6] = {false};
        for (size_t a = 0; a < tk->m; a++) {
            check[tk->row[a]] = true;
            rot |= tk->row[a] >= 3;
        }
        ik_xform a = ik_tree_fk(T, q, tk->tip);
        if (!rot)
            a.q = ik_quat_identity();
        double e[6];
        ik_pose_error(tk->target, a, e);
        tr->checked = true;
        tr->reached = true;
        tr->pos_err = ik_vec3_len(ik_v3(e[0], e[1], e[2]));
        tr->rot_err = rot ? sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]) : 0.0;
        for (int r = 0; r < 6; r++) {
            if (!check[r])
                continue;
            double v = fabs(e[r]);
            if (!(v <= (r < 3 ? X->o->tol_pos : X->o->tol_rot)))
                tr->reached = false;
            if (r < 3)
                tr->pos_err_max = fmax(tr->pos_err_max, v);
            else
                tr->rot_err_max = fmax(tr->rot_err_max, v);
        }
    }
}

/* Links the targets fix nearer than the margin (*pc the pair). */
static bool fixed_in_collision(const ik_collide_check *chk, const ik_tree *T,
                               const ik_tree_goal *goals, const ik_tree_opts *o,
                               ik_collide_pair *pc)
{
    const ik_collide_model *M = chk->model;
    if (ik_collide_rigid_distance(M, &chk->scene, 0, ik_xform_identity(), pc) < chk->margin)
        return true;
    for (size_t t = 0; t < T->ntips; t++) {
        const ik_tree_goal *g = &goals[t];
        if (!g->active || g->target.mode != IK_TARGET_FULL_POSE)
            continue;
        ik_xform pose = {g->target.pose.p, ik_quat_normalize(g->target.pose.q)};
        double slack = 2.0 * (o->tol_pos + o->tol_rot * ik_vec3_len(pose.p));
        if (ik_collide_rigid_distance(M, &chk->scene, ik_collide_tip_body(M, t), pose, pc) <
            chk->margin - slack)
            return true;
    }
    return false;
}

static void no_pair(ik_collide_pair *p)
{
    memset(p, 0, sizeof *p);
    p->link = p->other_link = p->obstacle = -1;
    p->distance = INFINITY;
}

/* ---- the search ---------------------------------------------------------- */

int ik__tree_solve_avoiding(const ik_tree *tree, const ik_tree_goal *goals, const double *seed,
                            const ik_tree_opts *opts, void *ws, size_t ws_size, double *q_out,
                            ik_tree_result *res)
{
    const ik_collide_check *chk = opts->collide;
    ik_tree_opts oo = *opts;
    oo.collide = NULL;
    ik_tree_result r;
    int rc = !tree || tree->dof == 0 || tree->dof > MAX_VARS
                 ? IK_EINVAL
                 : ik_collide_check_valid(chk, tree->dof);
    if (rc == IK_OK && !chk->avoid) {
        /* measured only */
        rc = ik__tree_solve_plain(tree, goals, seed, &oo, ws, ws_size, q_out, &r);
        if (rc != IK_EINVAL && rc != IK_ENOSPC)
            ik_collide_distance(chk->model, &chk->scene, q_out, chk->ws, chk->ws_size, &r.closest);
        if (res)
            *res = r;
        return rc;
    }
    if (rc != IK_OK) {
        if (res) {
            memset(res, 0, sizeof *res);
            res->status = rc;
        }
        return rc;
    }
    const ik_tree *T = tree;
    const size_t n = T->dof;
    ik_budget whole;
    ik_budget_start(&whole, opts->clock, opts->timeout_s);
    size_t work = 0;

    /* the caller's seed (q_out may alias it), the checked tips, the pins */
    double seed0[MAX_VARS], cur[MAX_VARS], q[MAX_VARS];
    double lower[MAX_VARS], upper[MAX_VARS];
    if (seed)
        memcpy(seed0, seed, n * sizeof *seed0);
    else
        ik_tree_mid(T, seed0);
    tree_task X;
    memset(&X, 0, sizeof X);
    X.T = T;
    X.o = opts;
    X.budget = &whole;
    X.work = &work;
    uint32_t checked = 0;
    for (size_t t = 0; t < T->ntips; t++)
        if (setup(&X.task[X.ntask], T, t, &goals[t], seed0)) {
            checked |= (uint32_t)1u << t;
            X.ntask++;
        }
    bool pinned[MAX_VARS];
    for (size_t v = 0; v < n; v++) {
        pinned[v] = (T->tips_of[v] & checked) == 0;
        double s = T->type[v] == IK_JOINT_CONTINUOUS ? seed0[v]
                                                     : ik_clamp(seed0[v], T->lower[v], T->upper[v]);
        lower[v] = pinned[v] ? s : T->lower[v];
        upper[v] = pinned[v] ? s : T->upper[v];
    }
    ik__avoid_task task = {n, T->type, lower, upper, tree_eval, tree_budget, &X};
    double *hit_q = ik__avoid_keep(chk->model, chk->ws);
    ik_collide_pair hit, fixed;
    no_pair(&hit);
    size_t hits = 0, iterations = 0, restarts = 0, solutions = 0;

    const bool certain = fixed_in_collision(chk, T, goals, opts, &fixed);
    ik_rng rng = {opts->rng_seed ^ 0xC0111DE5ull};
    int st = IK_ENOTCONV;
    bool found = false;
    for (size_t k = 0;; k++) {
        if (k > 0) {
            if (certain || found)
                break;
            if (opts->timeout_s > 0.0 ? ik_budget_spent(&whole, work + IK_BUDGET_WORK_FLOOR)
                                      : k >= OUTER_MAX)
                break;
            if (opts->max_restarts != SIZE_MAX && restarts >= opts->max_restarts)
                break;
            restarts++;
            for (size_t v = 0; v < n; v++)
                cur[v] = pinned[v] ? seed0[v]
                         : T->type[v] == IK_JOINT_CONTINUOUS
                             ? ik_rng_uniform(&rng, -IK_PI, IK_PI)
                             : ik_rng_uniform(&rng, T->lower[v], T->upper[v]);
            oo.rng_seed = opts->rng_seed + 0x9E3779B97F4A7C15ull * (uint64_t)k;
        }
        if (opts->timeout_s > 0.0) {
            oo.timeout_s = opts->timeout_s - ik_budget_cpu_s(&whole);
            if (!(oo.timeout_s > 0.0))
                break;
        }
        st = ik__tree_solve_plain(T, goals, k == 0 ? seed : cur, &oo, ws, ws_size, q, &r);
        if (st == IK_EINVAL || st == IK_ENOSPC) {
            if (res)
                *res = r;
            return st;
        }
        iterations += r.iterations;
        restarts += r.restarts;
        solutions += r.solutions;
        if (st == IK_OK && !certain) {
            ik_collide_pair p;
            if (ik__avoid_repair(&task, chk, q, &p)) {
                found = true;
            } else if (hits++ == 0 || p.distance > hit.distance) {
                hit = p;
                memcpy(hit_q, q, n * sizeof *q);
            }
        }
        if (st == IK_ETIMEDOUT)
            break;
    }
    int status = st;
    const double *answer = q;
    if (found)
        status = IK_OK;
    else if (certain)
        status = IK_ECOLLISION;
    else if (hits > 0)
        status = IK_ECOLLISION, answer = hit_q;
    else if (status == IK_OK)
        status = IK_ENOTCONV; /* cannot happen: an IK_OK answer is a hit */
    for (size_t v = 0; v < n; v++)
        q_out[v] = var_near(T, v, answer[v], seed0[v]);
    if (res) {
        *res = r;
        res->status = status;
        res->iterations = iterations + work;
        res->restarts = restarts;
        res->solutions = solutions;
        res->reason = status == IK_ECOLLISION ? IK_REASON_IN_COLLISION : IK_REASON_NONE;
        if (found || (!certain && hits > 0)) {
            /* a repaired answer, or another solve's: every level met */
            fill_tips(T, &X, q_out, res);
            res->levels_met = res->levels;
        }
        ik_collide_distance(chk->model, &chk->scene, q_out, chk->ws, chk->ws_size, &res->closest);
        if (certain)
            res->closest = fixed;
        res->elapsed_s = ik_budget_wall_s(&whole);
        res->cpu_s = ik_budget_cpu_s(&whole);
    }
    return status;
}
