/*
 * ik_avoid.c: moving a solution out of collision inside the freedom its
 * task leaves (contract and method in ik_avoid.h).
 *
 * One iteration at q, with the task's weighted rows Jw and error ew there,
 * the penalty P and its gradient g (ik_collide_penalty, activation
 * distance ik__avoid_active()):
 *   N      = Jw Jw^T + mu I               (Cholesky, m x m, m < n)
 *   dq_t   = Jw^T N^-1 ew                  (the task's correction)
 *   h      = g - Jw^T N^-1 Jw g            (g in the task's null space)
 *   dq     = dq_t - t h,  t = max(0, (2 P + g . dq_t) / (g . h))
 * capped to STEP_MAX per joint and kept inside the limits; the trial is
 * accepted when the penalty falls, or when it stays and the task error
 * falls, else halved (HALVINGS times) and the repair gives up. The
 * penalty is half the squared depth of the pairs inside the activation
 * distance, so for one pair the step is the Gauss-Newton step that moves
 * it to that distance; several pairs are pushed apart together.
 * It stops as soon as the task is met with the robot at least the margin
 * clear, after ITERS iterations, when g has (almost) nothing in the null
 * space (no freedom: a 6-joint arm on a full pose), or when the solver's
 * budget runs out.
 *
 * Tuned on the iiwa among three boxes (build/ikbench collide): most
 * colliding solutions clear in 2 to 6 iterations; those that do not in
 * ITERS are usually wedged between two obstacles, where a restart is
 * cheaper.
 */
#include "solver/ik_avoid.h"

#include <math.h>
#include <string.h>

#define ITERS    24  /* iterations at most */
#define HALVINGS 4   /* trial step halvings before giving up */
#define STEP_MAX 0.2 /* largest joint motion per iteration (rad or m) */
#define MU                                                                                         \
    1e-9 /* damping of the task's normal matrix, relative                                          \
            to its largest diagonal entry */
#define PROJECTIONS                                                                                \
    4 /* Gauss-Newton steps bringing a trial back onto                                             \
         the task */

size_t ik__avoid_doubles(size_t n, size_t rows)
{
    /* Jw, Jt: rows x n; N: rows x rows; ew, et, y: rows; g, gt, h, dq,
     * qt, qb, dp: n; then the solver's keep: n */
    return 2 * rows * n + rows * rows + 3 * rows + 8 * n;
}

double *ik__avoid_keep(const ik_collide_model *m, void *ws)
{
    return ik__avoid_scratch(m, ws) + ik__avoid_doubles(m->nvars, m->task_rows) - m->nvars;
}

double ik__avoid_active(const ik_collide_check *chk)
{
    double s = chk->model->scale;
    return chk->margin + (s > 0.0 ? 0.5 * s : 1e-3);
}

/* Cholesky of the m x m matrix N (lower triangle used) in place; false
 * when a pivot is not positive. */
static bool cholesky(double *N, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        double d = N[j * m + j];
        for (size_t k = 0; k < j; k++)
            d -= N[j * m + k] * N[j * m + k];
        if (!(d > 0.0))
            return false;
        d = sqrt(d);
        N[j * m + j] = d;
        for (size_t i = j + 1; i < m; i++) {
            double s = N[i * m + j];
            for (size_t k = 0; k < j; k++)
                s -= N[i * m + k] * N[j * m + k];
            N[i * m + j] = s / d;
        }
    }
    return true;
}

/* Solves L L^T y = b in place. */
static void chol_solve(const double *L, size_t m, double *b)
{
    for (size_t i = 0; i < m; i++) {
        double s = b[i];
        for (size_t k = 0; k < i; k++)
            s -= L[i * m + k] * b[k];
        b[i] = s / L[i * m + i];
    }
    for (size_t i = m; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < m; k++)
            s -= L[k * m + i] * b[k];
        b[i] = s / L[i * m + i];
    }
}

/* N = Jw Jw^T + mu I (m x m), factorised; false when it is not positive
 * definite. */
static bool normal(const double *Jw, size_t m, size_t n, double *N)
{
    double big = 0.0;
    for (size_t a = 0; a < m; a++)
        for (size_t b = 0; b <= a; b++) {
            double s = 0.0;
            for (size_t k = 0; k < n; k++)
                s += Jw[a * n + k] * Jw[b * n + k];
            N[a * m + b] = s;
            if (a == b)
                big = fmax(big, s);
        }
    for (size_t a = 0; a < m; a++)
        N[a * m + a] += MU * (big > 0.0 ? big : 1.0);
    return cholesky(N, m);
}

/* out = Jw^T N^-1 v (n values); v (m values) is overwritten. */
static void back(const double *Jw, const double *N, size_t m, size_t n, double *v, double *out)
{
    chol_solve(N, m, v);
    for (size_t k = 0; k < n; k++) {
        double s = 0.0;
        for (size_t a = 0; a < m; a++)
            s += Jw[a * n + k] * v[a];
        out[k] = s;
    }
}

static double limit(const ik__avoid_task *t, size_t k, double v)
{
    if (t->type[k] == IK_JOINT_CONTINUOUS)
        return v;
    return v < t->lower[k] ? t->lower[k] : (v > t->upper[k] ? t->upper[k] : v);
}

/* The scratch of one repair. */
typedef struct scratch {
    double *Jw, *Jt, *N, *ew, *et, *y, *g, *gt, *h, *dq, *qt, *qb, *dp;
} scratch;

/* True when the solver's budget allows no more evaluations of the task
 * (each counts as one of its iterations). */
static bool spent(const ik__avoid_task *t)
{
    return t->budget_left && !t->budget_left(t->ctx);
}

/* Brings qt back onto the task (up to PROJECTIONS Gauss-Newton steps on
 * the task alone, inside the limits): true when it is met there, with Jt,
 * et, *mt evaluated at qt; false too when the budget is spent. */
static bool project(const ik__avoid_task *t, scratch *W, double *qt, size_t *mt)
{
    const size_t n = t->n;
    for (int p = 0;; p++) {
        if (spent(t))
            return false;
        bool met = t->eval(t->ctx, qt, W->Jt, W->et, mt);
        if (met)
            return true;
        if (p == PROJECTIONS || *mt >= n || !normal(W->Jt, *mt, n, W->N))
            return false;
        memcpy(W->y, W->et, *mt * sizeof *W->y);
        back(W->Jt, W->N, *mt, n, W->y, W->dp);
        for (size_t k = 0; k < n; k++)
            qt[k] = limit(t, k, qt[k] + W->dp[k]);
    }
}

bool ik__avoid_repair(const ik__avoid_task *t, const ik_collide_check *chk, double *q,
                      ik_collide_pair *closest)
{
    const ik_collide_model *M = chk->model;
    const size_t n = t->n, rows = M->task_rows;
    scratch W;
    W.Jw = ik__avoid_scratch(M, chk->ws);
    W.Jt = W.Jw + rows * n;
    W.N = W.Jt + rows * n;
    W.ew = W.N + rows * rows;
    W.et = W.ew + rows;
    W.y = W.et + rows;
    W.g = W.y + rows;
    W.gt = W.g + n;
    W.h = W.gt + n;
    W.dq = W.h + n;
    W.qt = W.dq + n;
    W.qb = W.qt + n;
    W.dp = W.qb + n;
    const double active = ik__avoid_active(chk);

    size_t m = 0, mt = 0;
    ik_collide_pair pair, pt;
    double P = ik_collide_penalty(M, &chk->scene, q, active, W.g, chk->ws, chk->ws_size, &pair);
    if (pair.distance >= chk->margin) {
        if (closest)
            *closest = pair;
        return true;
    }
    ik_collide_pair bestp = pair;
    memcpy(W.qb, q, n * sizeof *q);
    bool ok = false;
    if (spent(t))
        m = n; /* no evaluation left: no repair */
    else
        t->eval(t->ctx, q, W.Jw, W.ew, &m);
    for (int it = 0; it < ITERS && m < n && P > 0.0 && isfinite(P); it++) {
        if (spent(t))
            break;
        if (!normal(W.Jw, m, n, W.N))
            break;
        /* the task's correction (q meets the task: a small one) */
        memcpy(W.y, W.ew, m * sizeof *W.y);
        back(W.Jw, W.N, m, n, W.y, W.dq);
        /* h = g - Jw^T N^-1 Jw g: the gradient in the task's null space */
        for (size_t a = 0; a < m; a++) {
            double s = 0.0;
            for (size_t k = 0; k < n; k++)
                s += W.Jw[a * n + k] * W.g[k];
            W.y[a] = s;
        }
        back(W.Jw, W.N, m, n, W.y, W.h);
        double gh = 0.0, gd = 0.0, gg = 0.0;
        for (size_t k = 0; k < n; k++) {
            W.h[k] = W.g[k] - W.h[k];
            gh += W.g[k] * W.h[k];
            gd += W.g[k] * W.dq[k];
            gg += W.g[k] * W.g[k];
        }
        if (!(gh > 1e-6 * gg))
            break; /* no freedom left to move away */
        double step = (2.0 * P + gd) / gh;
        if (step < 0.0)
            step = 0.0;
        double cap = 0.0;
        for (size_t k = 0; k < n; k++) {
            W.dq[k] -= step * W.h[k];
            cap = fmax(cap, fabs(W.dq[k]));
        }
        if (!(cap > 0.0) || !isfinite(cap))
            break;
        if (cap > STEP_MAX)
            for (size_t k = 0; k < n; k++)
                W.dq[k] *= STEP_MAX / cap;
        bool accepted = false;
        double Pt = 0.0;
        for (int tr = 0; tr <= HALVINGS && !accepted; tr++) {
            for (size_t k = 0; k < n; k++)
                W.qt[k] = limit(t, k, q[k] + W.dq[k]);
            if (project(t, &W, W.qt, &mt)) {
                Pt = ik_collide_penalty(M, &chk->scene, W.qt, active, W.gt, chk->ws, chk->ws_size,
                                        &pt);
                accepted = Pt < P;
            }
            if (!accepted)
                for (size_t k = 0; k < n; k++)
                    W.dq[k] *= 0.5;
        }
        if (!accepted)
            break;
        memcpy(q, W.qt, n * sizeof *q);
        memcpy(W.g, W.gt, n * sizeof *W.g);
        double *tmp = W.Jw;
        W.Jw = W.Jt;
        W.Jt = tmp;
        tmp = W.ew;
        W.ew = W.et;
        W.et = tmp;
        m = mt;
        P = Pt;
        pair = pt;
        if (pair.distance >= chk->margin) {
            ok = true;
            break;
        }
        if (pair.distance > bestp.distance) {
            bestp = pair;
            memcpy(W.qb, q, n * sizeof *q);
        }
    }
    if (!ok) {
        memcpy(q, W.qb, n * sizeof *q);
        pair = bestp;
    }
    if (closest)
        *closest = pair;
    return ok;
}
