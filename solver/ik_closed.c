/*
 * ik_closed.c: closed-form inverse kinematics of the OPW and UR families of
 * six-joint arms (contract and conventions in ik_closed.h).
 *
 * The chain is read in its zero pose as a product of exponentials: joint i
 * turns about the unit axis w_i through the point r_i (base frame), and
 *   T(q) = E_1(q_1) ... E_6(q_6) M,   E_i(x) = R(w_i, q_i) (x - r_i) + r_i,
 * with M the tip frame at q = 0. R(w, t) v = v cos t + (w x v) sin t
 * + w (w . v)(1 - cos t) (Rodrigues). A target (R_d, p_d) is met when
 * T(q) = (R_d, p_d). Four small problems, each solved in closed form, give
 * every solution (the same decomposition as the papers cited in the header,
 * derived here on the chain's own axes):
 *
 *   A. "shoulder" (joint 1): a point c that joints 2.. either fix or move
 *      about axes parallel to w_2 keeps its component along w_2. Its target
 *      image W must therefore satisfy (R(w_1, -q_1)(W - r_1)) . w_2 =
 *      (c - r_1) . w_2, which expands to A cos q_1 + B sin q_1 + C = h:
 *      two solutions atan2(B, A) +- acos((h - C) / hypot(A, B)). OPW: c is
 *      the wrist centre; UR: c is the point where axes 5 and 6 meet (both
 *      map to known points W = T_d M^-1 c, since E_4..6, resp. E_5..6, fix
 *      them).
 *   B. "elbow" (joints 2, 3; planar): with u the point to reach after
 *      undoing joint 1, |E_3(p) - r_2| measured across w_2 depends on q_3
 *      only: |a|^2 + |d|^2 + 2 d . R(w_3, q_3) a = |u - r_2|^2 (law of
 *      cosines; a = p - r_3, d = r_3 - r_2, both across w_2): two q_3; then
 *      q_2 is the angle about w_2 from E_3(p) - r_2 to u - r_2.
 *   C. "wrist" (OPW, joints 4-6 about one point): the wrist rotation
 *      Rw = (R_1 R_2 R_3)^T R_d M_R^T must equal R(w_4, q_4) R(w_5, q_5)
 *      R(w_6, q_6). Rw w_6 = R_4 R_5 w_6: the intermediate direction z =
 *      R_5 w_6 has known components along w_5 (w_6 . w_5) and along w_4
 *      (Rw w_6 . w_4); with |z| = 1 that leaves z = a w_4 + b w_5 +- g
 *      (w_4 x w_5), two solutions (the wrist flip). q_5 turns w_6 onto z,
 *      q_4 turns z onto Rw w_6, q_6 follows from a vector across w_6.
 *   D. UR wrist (joints 5, 6 and the sum s = q_2 + q_3 + q_4): rotations
 *      about w_2 keep the w_2 component, so (R_5 w_6) . w_2 equals the
 *      target's axis 6 (undone by joint 1) along w_2: A cos q_5 + B sin q_5
 *      + C = h again, two q_5. Then R_6^T R_5^T w_2 = Rr^T w_2 (Rr = R_1^T
 *      R_d M_R^T) fixes q_6, the rest R(w_2, s) = Rr R_6^T R_5^T fixes s,
 *      and the elbow problem B on the origin of axis 4 (moved back from c by
 *      R(w_2, s)) gives q_2, q_3, then q_4 = s - q_2 - q_3 (signed).
 *
 * That is 2 x 2 x 2 = 8 branches. Where an acos argument leaves [-1, 1]
 * (the target beyond the workspace boundary) it is clamped and the branch
 * marked inexact: it is the closest the closed form gets (stretched towards
 * the target), used only as a failure's best pose. Where an angle is
 * undefined (a vector along the axis: shoulder or wrist singularity) the
 * reference (seed) value is kept; the UR wrist folded (q5 at 0 or pi)
 * keeps it only when the elbow can then reach (ur_wrist_free). Every
 * answer is then checked by forward kinematics (ik_chain_fk_mat) against
 * the target and the tolerance.
 *
 * Not here: position-only targets, seven-joint arms, arms whose wrist axes
 * do not meet (they fall back to the numeric solver), I/O, allocation.
 */
#include "solver/ik_closed.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "solver/ik_rng.h"

/* ---- tables ---------------------------------------------------------------- */

const char *ik_closed_kind_name(int kind)
{
    switch (kind) {
#define IK__CK(name, str, msg)                                                                     \
    case IK_CLOSED_##name:                                                                         \
        return str;
        IK_CLOSED_KIND_MAP(IK__CK)
#undef IK__CK
    }
    return "unknown";
}

const char *ik_closed_kind_message(int kind)
{
    switch (kind) {
#define IK__CK(name, str, msg)                                                                     \
    case IK_CLOSED_##name:                                                                         \
        return msg;
        IK_CLOSED_KIND_MAP(IK__CK)
#undef IK__CK
    }
    return "unknown family";
}

const char *ik_closed_why_name(int why)
{
    switch (why) {
#define IK__CW(name, str, msg)                                                                     \
    case IK_CLOSED_WHY_##name:                                                                     \
        return str;
        IK_CLOSED_WHY_MAP(IK__CW)
#undef IK__CW
    }
    return "unknown";
}

const char *ik_closed_why_message(int why)
{
    switch (why) {
#define IK__CW(name, str, msg)                                                                     \
    case IK_CLOSED_WHY_##name:                                                                     \
        return msg;
        IK_CLOSED_WHY_MAP(IK__CW)
#undef IK__CW
    }
    return "unknown reason";
}

/* ---- small geometry ---------------------------------------------------------- */

#define PARALLEL_TOL  1e-9 /* |w_i x w_j| below this: parallel */
#define MEET_TOL      1e-9 /* lines this close (times scale): meeting */
#define APART_MIN     1e-3 /* |w_i x w_j| above this: well apart */
#define SINGULAR_TOL  1e-12
#define WRIST_FREE    1e-9 /* UR: axis 6 this near axis 2's direction: folded */

/* R(w, t) v (w unit), with c = cos t, s = sin t. */
static inline ik_vec3 rot_cs(ik_vec3 w, double c, double s, ik_vec3 v)
{
    ik_vec3 x = ik_vec3_cross(w, v);
    double k = ik_vec3_dot(w, v) * (1.0 - c);
    return ik_v3(v.x * c + x.x * s + w.x * k, v.y * c + x.y * s + w.y * k,
                 v.z * c + x.z * s + w.z * k);
}

static inline ik_vec3 mat_vec(const double m[9], ik_vec3 v)
{
    return ik_v3(m[0] * v.x + m[1] * v.y + m[2] * v.z, m[3] * v.x + m[4] * v.y + m[5] * v.z,
                 m[6] * v.x + m[7] * v.y + m[8] * v.z);
}

static inline ik_vec3 mat_tvec(const double m[9], ik_vec3 v)
{
    return ik_v3(m[0] * v.x + m[3] * v.y + m[6] * v.z, m[1] * v.x + m[4] * v.y + m[7] * v.z,
                 m[2] * v.x + m[5] * v.y + m[8] * v.z);
}

static inline ik_vec3 across(ik_vec3 v, ik_vec3 w)
{
    return ik_vec3_madd(v, w, -ik_vec3_dot(v, w));
}

/* An angle with its cosine and sine, so that the rotations that follow
 * need no sin() or cos() of their own. */
typedef struct ang {
    double t, c, s;
} ang;

static ang ang_of(double t)
{
    ang a = {t, cos(t), sin(t)};
    return a;
}

/* The angle t with R(w, t) a = b, both taken across w; fallback when either
 * is shorter than eps (the angle is undefined there). */
static ang angle_about(ik_vec3 w, ik_vec3 a, ik_vec3 b, double eps, double fallback)
{
    ik_vec3 pa = across(a, w), pb = across(b, w);
    double la = ik_vec3_len2(pa), lb = ik_vec3_len2(pb);
    if (!(la > eps * eps) || !(lb > eps * eps))
        return ang_of(fallback);
    double y = ik_vec3_dot(w, ik_vec3_cross(pa, pb)), x = ik_vec3_dot(pa, pb);
    double r = sqrt(la * lb); /* = hypot(x, y): |pa x pb|^2 + (pa . pb)^2 */
    if (!(r > 0.0))
        return ang_of(fallback);
    ang o = {atan2(y, x), x / r, y / r};
    return o;
}

/* The two t with A cos t + B sin t = rhs: atan2(B, A) +- acos(x), x = rhs /
 * hypot(A, B) clamped into [-1, 1]; *exact tells whether it had to be
 * clamped. s2, when >= 0, is 1 - x^2 computed by the caller without
 * cancellation (a cross product), for the equations whose two solutions
 * meet at a singularity (acos loses half the digits there). With hypot(A,
 * B) below eps the angle is free: both are the fallback, exact when |rhs|
 * is small too. */
static void cos_sin_eq(double A, double B, double rhs, double s2, double eps, double fallback,
                       ang t[2], bool *exact)
{
    double rho = sqrt(A * A + B * B);
    if (!(rho > eps)) {
        t[0] = t[1] = ang_of(fallback);
        *exact = fabs(rhs) <= 1e3 * eps;
        return;
    }
    double x = rhs / rho;
    *exact = fabs(x) <= 1.0 + 1e-10;
    double xc = ik_clamp(x, -1.0, 1.0);
    double sa = s2 >= 0.0 ? sqrt(s2) : sqrt(fmax(0.0, (1.0 - xc) * (1.0 + xc)));
    double n = sqrt(xc * xc + sa * sa);
    xc /= n;
    sa /= n;
    double phi = atan2(B, A), al = atan2(sa, xc);
    double cp = A / rho, sp = B / rho;
    t[0].t = phi + al;
    t[0].c = cp * xc - sp * sa;
    t[0].s = sp * xc + cp * sa;
    t[1].t = phi - al;
    t[1].c = cp * xc + sp * sa;
    t[1].s = sp * xc - cp * sa;
}

/* ---- the four problems --------------------------------------------------------- */

/* A: joint 1 from the image W of k->c. */
static void shoulder(const ik_closed *k, ik_vec3 W, double ref, ang q1[2], bool *exact)
{
    const ik_vec3 w1 = k->w[0], w2 = k->w[1];
    ik_vec3 v = ik_vec3_sub(W, k->r[0]);
    double c12 = ik_vec3_dot(w1, w2), v1 = ik_vec3_dot(v, w1);
    double A = ik_vec3_dot(v, w2) - c12 * v1;
    double B = ik_vec3_dot(v, ik_vec3_cross(w1, w2));
    double C = c12 * v1;
    double h = ik_vec3_dot(ik_vec3_sub(k->c, k->r[0]), w2);
    cos_sin_eq(A, B, h - C, -1.0, SINGULAR_TOL * k->scale, ref, q1, exact);
}

/* B: joints 2, 3 taking point p (zero pose) to u (joint 1 undone). */
static void elbow(const ik_closed *k, ik_vec3 p, ik_vec3 u, const double *ref, ang q2[2],
                  ang q3[2], bool *exact)
{
    const ik_vec3 w2 = k->w[1], w3 = k->w[2];
    ik_vec3 a = across(ik_vec3_sub(p, k->r[2]), w2);
    ik_vec3 d = across(ik_vec3_sub(k->r[2], k->r[1]), w2);
    ik_vec3 t = across(ik_vec3_sub(u, k->r[1]), w2);
    double A = 2.0 * ik_vec3_dot(d, a);
    double B = 2.0 * ik_vec3_dot(d, ik_vec3_cross(w3, a));
    double rhs = ik_vec3_len2(t) - ik_vec3_len2(a) - ik_vec3_len2(d);
    cos_sin_eq(A, B, rhs, -1.0, SINGULAR_TOL * k->scale * k->scale, ref[2], q3, exact);
    for (int i = 0; i < 2; i++) {
        ik_vec3 e = ik_vec3_add(rot_cs(w3, q3[i].c, q3[i].s, a), d);
        q2[i] = angle_about(w2, e, t, SINGULAR_TOL * k->scale, ref[1]);
    }
}

/* C: the OPW wrist. qv = Rw w6, xv = Rw x6. */
static void opw_wrist(const ik_closed *k, ik_vec3 qv, ik_vec3 xv, const double *ref, ang q4[2],
                      ang q5[2], ang q6[2], bool *exact)
{
    const ik_vec3 w4 = k->w[3], w5 = k->w[4], w6 = k->w[5];
    double c45 = ik_vec3_dot(w4, w5), den = 1.0 - c45 * c45;
    double b5 = ik_vec3_dot(w6, w5), b4 = ik_vec3_dot(qv, w4);
    double al = (b4 - c45 * b5) / den, be = (b5 - c45 * b4) / den;
    /* g^2 = (1 - |a w4 + b w5|^2) / den, written as
     * (den |qv x w4|^2 - (b5 - c45 b4)^2) / den^2 so that it keeps its
     * precision next to the wrist singularity (g -> 0), where 1 - b4^2
     * would cancel */
    const double X = ik_vec3_len2(ik_vec3_cross(qv, w4)), yy = b5 - c45 * b4;
    double g2 = (den * X - yy * yy) / (den * den);
    *exact = g2 >= -1e-10;
    double g = g2 > 0.0 ? sqrt(g2) : 0.0;
    ik_vec3 n = ik_vec3_cross(w4, w5);
    for (int i = 0; i < 2; i++) {
        if (i == 1 && k->flip) {
            /* R(w4, q4 + pi) R(w5, -q5) R(w6, q6 + pi) = R(w4, q4) R(w5, q5)
             * R(w4, pi) R(w6, pi) R(w6, q6), and R(w4, pi) R(w6, pi) = I
             * when w6 = +-w4 (w5 across both) */
            q4[1].t = q4[0].t > 0.0 ? q4[0].t - IK_PI : q4[0].t + IK_PI;
            q4[1].c = -q4[0].c;
            q4[1].s = -q4[0].s;
            q5[1].t = -q5[0].t;
            q5[1].c = q5[0].c;
            q5[1].s = -q5[0].s;
            q6[1].t = q6[0].t > 0.0 ? q6[0].t - IK_PI : q6[0].t + IK_PI;
            q6[1].c = -q6[0].c;
            q6[1].s = -q6[0].s;
            break;
        }
        ik_vec3 z = ik_vec3_add(ik_vec3_add(ik_vec3_scale(w4, al), ik_vec3_scale(w5, be)),
                                ik_vec3_scale(n, i == 0 ? g : -g));
        q5[i] = angle_about(w5, w6, z, SINGULAR_TOL, ref[4]);
        q4[i] = angle_about(w4, z, qv, 1e-9, ref[3]);
        ik_vec3 y = rot_cs(w5, q5[i].c, -q5[i].s, rot_cs(w4, q4[i].c, -q4[i].s, xv));
        q6[i] = angle_about(w6, k->x6, y, SINGULAR_TOL, ref[5]);
    }
}

/* D, the UR wrist's sum s = q2 + q3 + q4 (signed) for q1, q5 and q6:
 * R(w2, s) x2 = R(w1, -q1) R_d M_R^T R(w6, -q6) R(w5, -q5) x2. */
static ang ur_sum(const ik_closed *k, const double R[9], double c1, double s1, double c5,
                  double s5, ang q6)
{
    ik_vec3 y = rot_cs(k->w[5], q6.c, -q6.s, rot_cs(k->w[4], c5, -s5, k->x2));
    y = rot_cs(k->w[0], c1, -s1, mat_vec(R, mat_tvec(k->RM, y)));
    return angle_about(k->w[1], k->x2, y, SINGULAR_TOL, 0.0);
}

/* |a|^2 + |d|^2 and 2 |a| |d| of the elbow on the origin of axis 4 (B):
 * the squared distance across w2 from axis 2 to that origin is within
 * the first plus or minus the second. */
static void ur_elbow_span(const ik_closed *k, double *mid, double *half)
{
    ik_vec3 a = across(ik_vec3_sub(k->r[3], k->r[2]), k->w[1]);
    ik_vec3 d = across(ik_vec3_sub(k->r[2], k->r[1]), k->w[1]);
    *mid = ik_vec3_len2(a) + ik_vec3_len2(d);
    *half = 2.0 * sqrt(ik_vec3_len2(a) * ik_vec3_len2(d));
}

/* The UR wrist folded (axis 6 on axis 2's direction: q5 at 0 or pi):
 * joints 4 and 6 turn about parallel axes and only s + sigma q6 is fixed
 * (sigma = +-1), a one-parameter family. Which q6 is taken decides
 * whether the elbow can reach the origin of axis 4, which the family moves
 * on a circle (u - r2 - R(w2, s) D across w2, D = c - r4 across w2). *q6
 * (the reference's) and *s are kept when the elbow reaches it; else they
 * move to the s nearest the reference's on the boundary of the reachable
 * part of the circle (the elbow stretched or folded there): the solutions
 * at a double singularity (elbow and wrist), which the reference's q6
 * misses by centimetres. When no s reaches, nothing changes (no solution
 * in this branch). */
static void ur_wrist_free(const ik_closed *k, const double R[9], ik_vec3 u, double c1,
                          double s1, double c5, double s5, ang *q6, ang *s)
{
    const ik_vec3 w2 = k->w[1];
    double mid, half;
    ur_elbow_span(k, &mid, &half);
    ik_vec3 P = across(ik_vec3_sub(u, k->r[1]), w2);
    ik_vec3 D = across(ik_vec3_sub(k->c, k->r[3]), w2);
    /* |P - R(w2, s) D|^2 = al - (A cos s + B sin s) */
    double al = ik_vec3_len2(P) + ik_vec3_len2(D);
    double A = 2.0 * ik_vec3_dot(P, D), B = 2.0 * ik_vec3_dot(P, ik_vec3_cross(w2, D));
    double t2 = al - (A * s->c + B * s->s);
    if (fabs(t2 - mid) <= half * (1.0 + 1e-10))
        return;
    double best = INFINITY, s_new = s->t;
    for (int b = 0; b < 2; b++) {
        ang r[2];
        bool ex;
        cos_sin_eq(A, B, al - (b ? mid - half : mid + half), -1.0,
                   SINGULAR_TOL * k->scale * k->scale, s->t, r, &ex);
        if (!ex)
            continue;
        for (int m = 0; m < 2; m++) {
            double dd = fabs(ik_wrap_angle(r[m].t - s->t));
            if (dd < best) {
                best = dd;
                s_new = r[m].t;
            }
        }
    }
    if (!(best < INFINITY))
        return;
    /* s moves against q6 (sigma from the chain: one radian of q6) */
    ang q6b = ang_of(q6->t + 1.0);
    double sigma = ik_wrap_angle(ur_sum(k, R, c1, s1, c5, s5, q6b).t - s->t);
    if (!(fabs(sigma) > 0.5))
        return;
    *q6 = ang_of(q6->t + ik_wrap_angle(s_new - s->t) / sigma);
    *s = ur_sum(k, R, c1, s1, c5, s5, *q6);
}

/* ---- the branches ---------------------------------------------------------------- */

static void put(double q[6], double a, double b, double c, double d, double e, double f)
{
    q[0] = a;
    q[1] = b;
    q[2] = c;
    q[3] = d;
    q[4] = e;
    q[5] = f;
}

/* Into (-pi, pi]: the values here are within a few turns. */
static inline double wrap(double a)
{
    return (a > -IK_PI && a <= IK_PI) ? a : ik_wrap_angle(a);
}

size_t ik_closed_branches(const ik_closed *k, const double R[9], const double p[3],
                          const double *ref, double q[][6], bool *exact)
{
    if (k->kind == IK_CLOSED_NONE)
        return 0;
    const ik_vec3 pd = ik_v3(p[0], p[1], p[2]);
    const ik_vec3 W = ik_vec3_add(mat_vec(R, k->c_tip), pd);
    const ik_vec3 z6 = mat_vec(R, k->m6), x6d = mat_vec(R, k->mx6);
    const ik_vec3 w1 = k->w[0], w2 = k->w[1];
    ang q1[2];
    bool ex1;
    shoulder(k, W, ref[0], q1, &ex1);
    size_t n = 0;
    for (int i = 0; i < 2; i++) {
        const double c1 = q1[i].c, s1 = q1[i].s;
        /* u = E_1^-1 W */
        ik_vec3 u = ik_vec3_add(rot_cs(w1, c1, -s1, ik_vec3_sub(W, k->r[0])), k->r[0]);
        if (k->kind == IK_CLOSED_OPW) {
            ang q2[2], q3[2];
            bool ex2;
            elbow(k, k->c, u, ref, q2, q3, &ex2);
            ik_vec3 z6r = rot_cs(w1, c1, -s1, z6), x6r = rot_cs(w1, c1, -s1, x6d);
            for (int j = 0; j < 2; j++) {
                /* Rw v = R(w2, -(q2 + s3 q3)) R(w1, -q1) R_d M_R^T v */
                double s3 = k->sgn[2] * q3[j].s;
                double c23 = q2[j].c * q3[j].c - q2[j].s * s3;
                double s23 = q2[j].s * q3[j].c + q2[j].c * s3;
                ik_vec3 qv = rot_cs(w2, c23, -s23, z6r);
                ik_vec3 xv = rot_cs(w2, c23, -s23, x6r);
                ang q4[2], q5[2], q6[2];
                bool ex3;
                opw_wrist(k, qv, xv, ref, q4, q5, q6, &ex3);
                for (int m = 0; m < 2; m++) {
                    put(q[n], q1[i].t, q2[j].t, q3[j].t, q4[m].t, q5[m].t, q6[m].t);
                    exact[n++] = ex1 && ex2 && ex3;
                }
            }
        } else { /* UR */
            const ik_vec3 w5 = k->w[4], w6 = k->w[5];
            ik_vec3 zr = rot_cs(w1, c1, -s1, z6);
            double c56 = ik_vec3_dot(w5, w6), c52 = ik_vec3_dot(w5, w2);
            double A = ik_vec3_dot(w6, w2) - c56 * c52;
            double B = ik_vec3_dot(ik_vec3_cross(w5, w6), w2);
            ang q5[2];
            bool ex5;
            /* for the usual wrist (w6 across w5 across w2: A^2 + B^2 = 1,
             * no constant) 1 - x^2 is |zr x w2|^2 */
            double s2 = -1.0;
            if (fabs(c56) < 1e-12 && fabs(c52) < 1e-12 && fabs(A * A + B * B - 1.0) < 1e-12)
                s2 = ik_vec3_len2(ik_vec3_cross(zr, w2));
            cos_sin_eq(A, B, ik_vec3_dot(zr, w2) - c56 * c52, s2, SINGULAR_TOL, ref[4], q5, &ex5);
            /* Rr^T w2 = M_R R_d^T R(w1, q1) w2 */
            ik_vec3 a6 = mat_vec(k->RM, mat_tvec(R, rot_cs(w1, c1, s1, w2)));
            for (int j = 0; j < 2; j++) {
                const double c5 = q5[j].c, s5 = q5[j].s;
                ik_vec3 b6 = rot_cs(w5, c5, -s5, w2);
                ang q6 = angle_about(w6, a6, b6, WRIST_FREE, ref[5]);
                ang s = ur_sum(k, R, c1, s1, c5, s5, q6);
                if (ik_vec3_len2(across(a6, w6)) <= WRIST_FREE * WRIST_FREE ||
                    ik_vec3_len2(across(b6, w6)) <= WRIST_FREE * WRIST_FREE)
                    ur_wrist_free(k, R, u, c1, s1, c5, s5, &q6, &s);
                ik_vec3 u4 = ik_vec3_sub(u, rot_cs(w2, s.c, s.s, ik_vec3_sub(k->c, k->r[3])));
                ang q2[2], q3[2];
                bool ex2;
                elbow(k, k->r[3], u4, ref, q2, q3, &ex2);
                for (int m = 0; m < 2; m++) {
                    double q4 = k->sgn[3] * (s.t - q2[m].t - k->sgn[2] * q3[m].t);
                    put(q[n], q1[i].t, q2[m].t, q3[m].t, q4, q5[j].t, q6.t);
                    exact[n++] = ex1 && ex5 && ex2;
                }
            }
        }
    }
    for (size_t b = 0; b < n; b++)
        for (int j = 0; j < 6; j++)
            q[b][j] = isfinite(q[b][j]) ? wrap(q[b][j]) : wrap(ref[j]);
    return n;
}

/* ---- detection ------------------------------------------------------------------- */

/* Closest points of the lines (ra, wa) and (rb, wb) (unit, not parallel):
 * their midpoint into *m, the distance between them returned. */
static double lines_meet(ik_vec3 ra, ik_vec3 wa, ik_vec3 rb, ik_vec3 wb, ik_vec3 *m)
{
    ik_vec3 d = ik_vec3_sub(rb, ra);
    double b = ik_vec3_dot(wa, wb), den = 1.0 - b * b;
    double da = ik_vec3_dot(d, wa), db = ik_vec3_dot(d, wb);
    double ta = (da - b * db) / den, tb = (b * da - db) / den;
    ik_vec3 pa = ik_vec3_madd(ra, wa, ta), pb = ik_vec3_madd(rb, wb, tb);
    *m = ik_vec3_lerp(pa, pb, 0.5);
    return ik_vec3_dist(pa, pb);
}

static double dist_to_line(ik_vec3 p, ik_vec3 r, ik_vec3 w)
{
    return ik_vec3_len(across(ik_vec3_sub(p, r), w));
}

static double cross_len(ik_vec3 a, ik_vec3 b)
{
    return ik_vec3_len(ik_vec3_cross(a, b));
}

static bool parallel(ik_vec3 a, ik_vec3 b)
{
    return cross_len(a, b) <= PARALLEL_TOL;
}

static bool apart(ik_vec3 a, ik_vec3 b)
{
    return cross_len(a, b) >= APART_MIN;
}

/* The elbow needs two real links: axis 3 apart from axis 2, and p apart
 * from axis 3. */
static bool elbow_ok(const ik_closed *k, ik_vec3 p)
{
    double lim = 1e-6 * k->scale;
    return dist_to_line(k->r[2], k->r[1], k->w[1]) > lim &&
           dist_to_line(p, k->r[2], k->w[2]) > lim;
}

static bool detect_opw(ik_closed *k)
{
    const ik_vec3 *w = k->w, *r = k->r;
    if (!parallel(w[1], w[2]) || !apart(w[0], w[1]) || !apart(w[3], w[4]) ||
        !apart(w[4], w[5]))
        return false;
    ik_vec3 m;
    if (lines_meet(r[3], w[3], r[4], w[4], &m) > MEET_TOL * k->scale)
        return false;
    if (dist_to_line(m, r[5], w[5]) > MEET_TOL * k->scale)
        return false;
    k->c = m;
    return elbow_ok(k, m);
}

static bool detect_ur(ik_closed *k)
{
    const ik_vec3 *w = k->w, *r = k->r;
    if (!parallel(w[1], w[2]) || !parallel(w[1], w[3]) || !apart(w[0], w[1]) ||
        !apart(w[4], w[5]) || !apart(w[4], w[1]))
        return false;
    ik_vec3 m;
    if (lines_meet(r[4], w[4], r[5], w[5], &m) > MEET_TOL * k->scale)
        return false;
    k->c = m;
    /* problem D needs (R_5 w_6) . w_2 to vary with q_5 */
    double c56 = ik_vec3_dot(w[4], w[5]), c52 = ik_vec3_dot(w[4], w[1]);
    double A = ik_vec3_dot(w[5], w[1]) - c56 * c52;
    double B = ik_vec3_dot(ik_vec3_cross(w[4], w[5]), w[1]);
    return hypot(A, B) >= APART_MIN && elbow_ok(k, r[3]);
}


/* Position error (max component) and rotation angle between two poses. */
static void pose_err(const double Ra[9], const double pa[3], const double Rb[9],
                     const double pb[3], double e[6])
{
    ik_xform a, b;
    a.p = ik_v3(pa[0], pa[1], pa[2]);
    a.q = ik_quat_normalize(ik_quat_from_mat3(Ra));
    b.p = ik_v3(pb[0], pb[1], pb[2]);
    b.q = ik_quat_normalize(ik_quat_from_mat3(Rb));
    ik_pose_error(a, b, e);
}

static bool proof(const ik_closed *k, const ik_chain *c)
{
    ik_rng g = {0x1D0C105EDull};
    double mid[6], q[6], R[9], p[3], Rb[9], pb[3];
    double br[IK_CLOSED_BRANCHES][6];
    bool exact[IK_CLOSED_BRANCHES];
    ik_chain_mid(c, mid);
    const double tp = IK_CLOSED_PROOF_TOL * k->scale, tr = IK_CLOSED_PROOF_TOL;
    for (int s = 0; s < IK_CLOSED_PROOF_SAMPLES; s++) {
        for (int j = 0; j < 6; j++) {
            double lo = c->lower[j], hi = c->upper[j];
            if (c->type[j] == IK_JOINT_CONTINUOUS || hi - lo > 2.0 * IK_PI) {
                lo = -IK_PI;
                hi = IK_PI;
            }
            q[j] = ik_rng_uniform(&g, lo, hi);
        }
        ik_chain_fk_mat(c, q, R, p);
        size_t n = ik_closed_branches(k, R, p, mid, br, exact);
        bool found = false;
        for (size_t b = 0; b < n; b++) {
            if (!exact[b])
                continue;
            /* the same pose: positions within tp, and every element of
             * the rotation matrices within tr (a rotation by t between
             * them moves some element by at least t / sqrt(2)) */
            ik_chain_fk_mat(c, br[b], Rb, pb);
            for (int i = 0; i < 3; i++)
                if (!(fabs(p[i] - pb[i]) <= tp))
                    return false;
            for (int i = 0; i < 9; i++)
                if (!(fabs(R[i] - Rb[i]) <= tr))
                    return false;
            bool same = true;
            for (int j = 0; j < 6; j++)
                same &= fabs(ik_wrap_angle(br[b][j] - q[j])) <= 1e-6;
            found |= same;
        }
        if (!found)
            return false;
    }
    return true;
}

int ik_closed_init(ik_closed *out, const ik_chain *c)
{
    if (!out || !c)
        return IK_EINVAL;
    ik_closed k;
    memset(&k, 0, sizeof k);
    k.kind = IK_CLOSED_NONE;
    k.why = IK_CLOSED_WHY_OK;
    if (c->dof != 6) {
        k.why = IK_CLOSED_WHY_DOF;
        *out = k;
        return IK_OK;
    }
    for (int j = 0; j < 6; j++)
        if (c->type[j] == IK_JOINT_PRISMATIC) {
            k.why = IK_CLOSED_WHY_PRISMATIC;
            *out = k;
            return IK_OK;
        }
    ik_xform fr[7];
    const double zero[6] = {0, 0, 0, 0, 0, 0};
    ik_chain_frames(c, zero, fr);
    for (int j = 0; j < 6; j++) {
        k.w[j] = ik_vec3_normalize(ik_quat_rotate(fr[j].q, c->axis[j]));
        k.r[j] = fr[j].p;
        k.sgn[j] = 1.0;
    }
    ik_quat_to_mat3(fr[6].q, k.RM);
    const ik_vec3 pM = fr[6].p;
    k.reach = ik_chain_max_reach(c);
    k.scale = k.reach > 1.0 ? k.reach : 1.0;
    k.x2 = ik_vec3_any_perpendicular(k.w[1]);
    k.x6 = ik_vec3_any_perpendicular(k.w[5]);
    k.m6 = mat_tvec(k.RM, k.w[5]);
    k.mx6 = mat_tvec(k.RM, k.x6);
    k.sgn[2] = ik_vec3_dot(k.w[2], k.w[1]) < 0 ? -1.0 : 1.0;
    k.sgn[3] = ik_vec3_dot(k.w[3], k.w[1]) < 0 ? -1.0 : 1.0;
    k.why = IK_CLOSED_WHY_GEOMETRY;
    ik_closed_kind kind = IK_CLOSED_NONE;
    if (detect_opw(&k))
        kind = IK_CLOSED_OPW;
    else if (detect_ur(&k))
        kind = IK_CLOSED_UR;
    if (kind != IK_CLOSED_NONE) {
        if (kind == IK_CLOSED_OPW) {
            k.sgn[3] = 1.0;
            k.flip = fabs(ik_vec3_dot(k.w[3], k.w[4])) < 1e-12 &&
                     fabs(ik_vec3_dot(k.w[5], k.w[4])) < 1e-12 &&
                     ik_vec3_len(ik_vec3_cross(k.w[3], k.w[5])) < 1e-12 &&
                     dist_to_line(k.r[5], k.r[3], k.w[3]) < MEET_TOL * k.scale;
        }
        k.c_tip = mat_tvec(k.RM, ik_vec3_sub(k.c, pM));
        k.kind = kind;
        if (proof(&k, c)) {
            k.why = IK_CLOSED_WHY_OK;
        } else {
            k.kind = IK_CLOSED_NONE;
            k.why = IK_CLOSED_WHY_PROOF;
        }
    }
    *out = k;
    return IK_OK;
}

/* ---- solving ------------------------------------------------------------------------ */

typedef struct closed_job {
    const ik_chain *c;
    const ik_closed *k;
    double Rd[9], pd[3];
    double tol_pos, tol_rot;
    const ik_collide_check *avoid; /* opts->collide when it avoids */
    ik_xform goal;                 /* the target pose, its quaternion unit */
    double ref[6];
    double br[IK_CLOSED_BRANCHES][6];
    bool exact[IK_CLOSED_BRANCHES];
    bool good[IK_CLOSED_BRANCHES]; /* exact, verified and not a duplicate */
    size_t n;
} closed_job;

static int job_setup(closed_job *J, const ik_chain *c, const ik_closed *k, const ik_target *t,
                     const double *seed, const ik_numeric_opts *opts)
{
    if (!c || !k || !t || k->kind == IK_CLOSED_NONE || c->dof != 6)
        return IK_EINVAL;
    if (t->mode != IK_TARGET_FULL_POSE || !ik_vec3_isfinite(t->pose.p) ||
        !ik_quat_isfinite(t->pose.q) || !(ik_quat_dot(t->pose.q, t->pose.q) > 1e-24))
        return IK_EINVAL;
    ik_numeric_opts d = ik_numeric_opts_default();
    const ik_numeric_opts *o = opts ? opts : &d;
    if (!(o->tol_pos > 0.0) || !isfinite(o->tol_pos) || !(o->tol_rot > 0.0) ||
        !isfinite(o->tol_rot))
        return IK_EINVAL;
    if (seed)
        for (int j = 0; j < 6; j++)
            if (!isfinite(seed[j]))
                return IK_EINVAL;
    J->avoid = o->collide && o->collide->avoid ? o->collide : NULL;
    if (J->avoid && ik_collide_check_valid(J->avoid, 6) != IK_OK)
        return IK_EINVAL;
    J->c = c;
    J->k = k;
    J->tol_pos = o->tol_pos;
    J->tol_rot = o->tol_rot;
    if (seed) {
        memcpy(J->ref, seed, sizeof J->ref);
        for (int j = 0; j < 6; j++)
            if (c->type[j] == IK_JOINT_CONTINUOUS && fabs(J->ref[j]) > IK_TURN_SEED_MAX)
                J->ref[j] = ik_wrap_angle(J->ref[j]);
        ik_chain_clamp(c, J->ref, false);
    } else {
        ik_chain_mid(c, J->ref);
    }
    J->goal.p = t->pose.p;
    J->goal.q = ik_quat_normalize(t->pose.q);
    ik_quat_to_mat3(J->goal.q, J->Rd);
    J->pd[0] = t->pose.p.x;
    J->pd[1] = t->pose.p.y;
    J->pd[2] = t->pose.p.z;
    return IK_OK;
}

/* The pose error of q as ik_pose_error() defines it (target minus actual;
 * rotation vector of R_d R^T), from the matrices: away from a half turn
 * straight from E = R_d R^T (2 sin(t) axis = (E21 - E12, E02 - E20,
 * E10 - E01), cos(t) = (trace - 1) / 2), near one through quaternions. */
static void err_of(const closed_job *J, const double *q, double e[6])
{
    double R[9], p[3], E[9];
    ik_chain_fk_mat(J->c, q, R, p);
    e[0] = J->pd[0] - p[0];
    e[1] = J->pd[1] - p[1];
    e[2] = J->pd[2] - p[2];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            E[3 * i + j] = J->Rd[3 * i] * R[3 * j] + J->Rd[3 * i + 1] * R[3 * j + 1] +
                           J->Rd[3 * i + 2] * R[3 * j + 2];
    const double tr = E[0] + E[4] + E[8];
    if (tr > -0.9) {
        const double vx = E[7] - E[5], vy = E[2] - E[6], vz = E[3] - E[1];
        const double s2 = sqrt(vx * vx + vy * vy + vz * vz);
        const double f = s2 < 1e-200 ? 0.5 : atan2(0.5 * s2, 0.5 * (tr - 1.0)) / s2;
        e[3] = f * vx;
        e[4] = f * vy;
        e[5] = f * vz;
    } else {
        pose_err(J->Rd, J->pd, R, p, e);
    }
}

static bool within_tol(const closed_job *J, const double e[6])
{
    for (int i = 0; i < 6; i++)
        if (!(fabs(e[i]) <= (i < 3 ? J->tol_pos : J->tol_rot)))
            return false;
    return true;
}

/* Two branches (joints in (-pi, pi]) equal up to whole turns. */
static bool same_branch(const double *a, const double *b)
{
    for (int j = 0; j < 6; j++) {
        double d = fabs(a[j] - b[j]);
        if (d > 1e-9 && fabs(d - 2.0 * IK_PI) > 1e-9)
            return false;
    }
    return true;
}

/* The branches, marked good when exact, reaching the target within the
 * tolerance (forward kinematics) and not repeating an earlier one. */
static size_t job_branches(closed_job *J)
{
    J->n = ik_closed_branches(J->k, J->Rd, J->pd, J->ref, J->br, J->exact);
    size_t good = 0;
    for (size_t b = 0; b < J->n; b++) {
        J->good[b] = false;
        if (!J->exact[b])
            continue;
        bool dup = false;
        for (size_t a = 0; a < b && !dup; a++) {
            if (!J->good[a])
                continue;
            dup = same_branch(J->br[a], J->br[b]);
        }
        if (dup)
            continue;
        double e[6];
        err_of(J, J->br[b], e);
        J->good[b] = within_tol(J, e);
        good += J->good[b];
    }
    return good;
}

/* Branch b with every joint on the turn nearest the reference; false when
 * some joint has no equivalent inside its limits. */
static bool branch_near(const closed_job *J, size_t b, double q[6])
{
    for (int j = 0; j < 6; j++) {
        q[j] = ik_chain_turn_near(J->c, (size_t)j, J->br[b][j], J->ref[j]);
        if (J->c->type[j] != IK_JOINT_CONTINUOUS &&
            !(q[j] >= J->c->lower[j] && q[j] <= J->c->upper[j]))
            return false;
    }
    return true;
}

static double dist2(const double *a, const double *b)
{
    double s = 0.0;
    for (int j = 0; j < 6; j++)
        s += (a[j] - b[j]) * (a[j] - b[j]);
    return s;
}

static void fill_res(const closed_job *J, const double *q, int status, int reason,
                     size_t branches, size_t solutions, ik_closed_result *res)
{
    if (!res)
        return;
    double e[6];
    err_of(J, q, e);
    memset(res, 0, sizeof *res);
    res->status = status;
    res->reason = reason;
    res->pos_err = ik_vec3_len(ik_v3(e[0], e[1], e[2]));
    res->rot_err = sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]);
    for (int i = 0; i < 6; i++) {
        double a = fabs(e[i]);
        if (i < 3 && a > res->pos_err_max)
            res->pos_err_max = a;
        if (i >= 3 && a > res->rot_err_max)
            res->rot_err_max = a;
    }
    res->branches = branches;
    res->solutions = solutions;
    for (int j = 0; j < 6; j++) {
        double d = fabs(q[j] - J->ref[j]);
        if (d > res->max_step)
            res->max_step = d;
    }
}

/* The failure's best pose: every branch, turned near the reference and
 * clamped into the limits, the one with the smallest error. */
static int job_fail(const closed_job *J, size_t good, double *q_out, ik_closed_result *res)
{
    double best[6], q[6], e[6], best_cost = INFINITY;
    memcpy(best, J->ref, sizeof best);
    for (size_t b = 0; b < J->n; b++) {
        for (int j = 0; j < 6; j++)
            q[j] = ik_chain_turn_near(J->c, (size_t)j, J->br[b][j], J->ref[j]);
        ik_chain_clamp(J->c, q, false);
        err_of(J, q, e);
        double cost = 0.0;
        for (int i = 0; i < 6; i++)
            cost += e[i] * e[i];
        if (cost < best_cost) {
            best_cost = cost;
            memcpy(best, q, sizeof best);
        }
    }
    int status, reason;
    if (good > 0) {
        status = IK_ELIMITS;
        reason = IK_REASON_LIMITS;
    } else {
        status = IK_EUNREACHABLE;
        reason = ik_chain_beyond_reach(J->c, ik_v3(J->pd[0], J->pd[1], J->pd[2]))
                     ? IK_REASON_OUT_OF_REACH
                     : IK_REASON_NO_SOLUTION;
    }
    memcpy(q_out, best, sizeof best);
    fill_res(J, q_out, status, reason, good, 0, res);
    return status;
}

static void invalid(int rc, ik_closed_result *res)
{
    if (res) {
        memset(res, 0, sizeof *res);
        res->status = rc;
    }
}

/* The exact branches that are not repeats of an earlier one, without the
 * forward-kinematics check (ik_closed_solve() checks its answer only). */
static size_t job_exact(closed_job *J)
{
    J->n = ik_closed_branches(J->k, J->Rd, J->pd, J->ref, J->br, J->exact);
    size_t cnt = 0;
    for (size_t b = 0; b < J->n; b++) {
        J->good[b] = false;
        if (!J->exact[b])
            continue;
        bool dup = false;
        for (size_t a = 0; a < b && !dup; a++) {
            if (!J->good[a])
                continue;
            dup = same_branch(J->br[a], J->br[b]);
        }
        J->good[b] = !dup;
        cnt += !dup;
    }
    return cnt;
}

/* Next to a double singularity (the elbow stretched and the wrist
 * folded, as the UR5's upright pose) the joint the closed form takes from
 * the reference decides whether the rest reaches: a reference a little
 * off leaves every branch a little short (5e-6 m from 0.01 rad away on the
 * UR5, growing as its square). When the best pose of a failure is within
 * POLISH_NEAR of the target (times the length scale; radians for the
 * rotation), the numeric solver finishes it from there: no restarts, at
 * most POLISH_ITERATIONS iterations toward POLISH_TOL, no time budget, the
 * caller's collision check. Returns IK_OK with q updated when the result
 * is within the caller's tolerances, inside the limits and clear; else q
 * stays as it was. */
#define POLISH_NEAR       1e-2
#define POLISH_ITERATIONS 64
#define POLISH_TOL        1e-12
#define POLISH_WS         4096

static int polish(const closed_job *J, double q[6], const ik_closed_result *fr)
{
    if (!(fr->pos_err <= POLISH_NEAR * J->k->scale && fr->rot_err <= POLISH_NEAR))
        return IK_EUNREACHABLE;
    _Alignas(64) unsigned char ws[POLISH_WS];
    if (ik_numeric_workspace_size(J->c) > sizeof ws)
        return IK_ENOSPC;
    /* as near as the iterations get (the closed form's answers are exact
     * to rounding), then held to the caller's tolerances below */
    ik_numeric_opts o = ik_numeric_opts_default();
    o.tol_pos = POLISH_TOL * J->k->scale;
    o.tol_rot = POLISH_TOL;
    o.max_iterations = POLISH_ITERATIONS;
    o.timeout_s = 0.0;
    o.max_restarts = 0;
    o.collide = J->avoid;
    ik_target t = ik_target_full_pose(J->goal);
    double out[6];
    const int rc = ik_numeric_solve(J->c, &t, q, &o, ws, sizeof ws, out, NULL);
    if (rc != IK_OK && rc != IK_ENOTCONV)
        return IK_EUNREACHABLE;
    double e[6];
    err_of(J, out, e);
    if (!within_tol(J, e) || !ik_chain_within_limits(J->c, out, 0.0))
        return IK_EUNREACHABLE;
    if (J->avoid && !(ik_collide_distance(J->avoid->model, &J->avoid->scene, out, J->avoid->ws,
                                          J->avoid->ws_size, NULL) >= J->avoid->margin))
        return IK_ECOLLISION;
    memcpy(q, out, sizeof out);
    return IK_OK;
}

int ik_closed_solve(const ik_chain *c, const ik_closed *k, const ik_target *t,
                    const double *seed, const ik_numeric_opts *opts, double *q_out,
                    ik_closed_result *res)
{
    closed_job J;
    int rc = q_out ? job_setup(&J, c, k, t, seed, opts) : IK_EINVAL;
    if (rc != IK_OK) {
        invalid(rc, res);
        return rc;
    }
    size_t exact = job_exact(&J);
    /* the exact branches inside the limits, on the turn nearest the
     * reference, then checked by forward kinematics nearest first: the
     * first that passes is the answer */
    double cand[IK_CLOSED_BRANCHES][6], d[IK_CLOSED_BRANCHES];
    size_t m = 0;
    for (size_t b = 0; b < J.n; b++) {
        if (!J.good[b] || !branch_near(&J, b, cand[m]))
            continue;
        d[m] = dist2(cand[m], J.ref);
        m++;
    }
    size_t inside = m;
    /* with collisions: the clearest solution in collision so far */
    double clear_q[6], clear_d = -INFINITY;
    while (m > 0) {
        size_t best = 0;
        for (size_t i = 1; i < m; i++)
            if (d[i] < d[best])
                best = i;
        double e[6];
        err_of(&J, cand[best], e);
        bool take = within_tol(&J, e);
        if (take && J.avoid) {
            const ik_collide_check *a = J.avoid;
            double dd = ik_collide_distance(a->model, &a->scene, cand[best], a->ws, a->ws_size,
                                            NULL);
            take = dd >= a->margin;
            if (!take && dd > clear_d) {
                clear_d = dd;
                memcpy(clear_q, cand[best], sizeof clear_q);
            }
        } else if (!take) {
            /* not reached after all (rounding next to a singularity) */
            inside--;
        }
        if (take) {
            memcpy(q_out, cand[best], sizeof cand[best]);
            fill_res(&J, q_out, IK_OK, IK_REASON_NONE, exact, inside, res);
            return IK_OK;
        }
        m--;
        memcpy(cand[best], cand[m], sizeof cand[m]);
        d[best] = d[m];
    }
    if (clear_d > -INFINITY) {
        memcpy(q_out, clear_q, sizeof clear_q);
        fill_res(&J, q_out, IK_ECOLLISION, IK_REASON_IN_COLLISION, exact, inside, res);
        return IK_ECOLLISION;
    }
    ik_closed_result fr;
    const int st = job_fail(&J, job_branches(&J), q_out, &fr);
    if (st == IK_EUNREACHABLE && fr.reason != IK_REASON_OUT_OF_REACH &&
        polish(&J, q_out, &fr) == IK_OK) {
        fill_res(&J, q_out, IK_OK, IK_REASON_NONE, exact, inside, res);
        return IK_OK;
    }
    if (res)
        *res = fr;
    return st;
}

/* The equivalents v + 2 pi k of joint j inside its limits, the (at most
 * IK_CLOSED_TURNS) nearest ref first; continuous joints: the nearest only. */
static int turns_of(const ik_chain *c, int j, double v, double ref, double out[IK_CLOSED_TURNS])
{
    const double T = 2.0 * IK_PI;
    if (c->type[j] == IK_JOINT_CONTINUOUS) {
        out[0] = ik_chain_turn_near(c, (size_t)j, v, ref);
        return 1;
    }
    const double lo = c->lower[j], hi = c->upper[j];
    double near = ik_chain_turn_near(c, (size_t)j, v, ref);
    if (!(near >= lo && near <= hi))
        return 0;
    out[0] = near;
    int n = 1;
    /* then alternately one turn further below and above */
    for (int s = 1; n < IK_CLOSED_TURNS && s <= IK_CLOSED_TURNS; s++) {
        double dn = near - s * T, up = near + s * T;
        bool dn_ok = dn >= lo, up_ok = up <= hi;
        if (!dn_ok && !up_ok)
            break;
        if (dn_ok && n < IK_CLOSED_TURNS)
            out[n++] = dn;
        if (up_ok && n < IK_CLOSED_TURNS)
            out[n++] = up;
    }
    return n;
}

/* Inserts q into the sorted list (nearest ref first) of *n rows, keeping at
 * most cap. */
static void insert_sorted(double *list, size_t *n, size_t cap, const double q[6],
                          const double *ref)
{
    double d = dist2(q, ref);
    size_t lo = 0, hi = *n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (dist2(list + 6 * mid, ref) <= d)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= cap)
        return;
    size_t keep = *n < cap ? *n : cap - 1;
    memmove(list + 6 * (lo + 1), list + 6 * lo, (keep - lo) * 6 * sizeof *list);
    memcpy(list + 6 * lo, q, 6 * sizeof *q);
    if (*n < cap)
        (*n)++;
}

size_t ik_closed_solve_all(const ik_chain *c, const ik_closed *k, const ik_target *t,
                           const double *seed, const ik_numeric_opts *opts, double *q_all,
                           size_t cap, ik_closed_result *res)
{
    closed_job J;
    int rc = (q_all || cap == 0) ? job_setup(&J, c, k, t, seed, opts) : IK_EINVAL;
    if (rc != IK_OK) {
        invalid(rc, res);
        return 0;
    }
    size_t good = job_branches(&J);
    size_t total = 0, written = 0;
    for (size_t b = 0; b < J.n; b++) {
        if (!J.good[b])
            continue;
        double tv[6][IK_CLOSED_TURNS];
        int cnt[6], idx[6] = {0, 0, 0, 0, 0, 0};
        bool none = false;
        for (int j = 0; j < 6; j++) {
            cnt[j] = turns_of(c, j, J.br[b][j], J.ref[j], tv[j]);
            none |= cnt[j] == 0;
        }
        if (none)
            continue;
        for (;;) {
            double q[6];
            for (int j = 0; j < 6; j++)
                q[j] = tv[j][idx[j]];
            total++;
            if (cap > 0)
                insert_sorted(q_all, &written, cap, q, J.ref);
            int j = 5;
            while (j >= 0 && ++idx[j] == cnt[j])
                idx[j--] = 0;
            if (j < 0)
                break;
        }
    }
    if (total == 0) {
        double q[6];
        int st = job_fail(&J, good, q, res);
        (void)st;
        return 0;
    }
    if (res) {
        double q0[6];
        if (written > 0)
            memcpy(q0, q_all, sizeof q0);
        else
            memcpy(q0, J.ref, sizeof q0);
        fill_res(&J, q0, IK_OK, IK_REASON_NONE, good, total, res);
    }
    return written;
}
