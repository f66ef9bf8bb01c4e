/*
 * ik_chain.c: compiling a URDF-style joint list into an ik_chain, and the
 * chain's forward kinematics, joint frames, geometric Jacobian and limit
 * helpers (contract in ik_chain.h).
 *
 * Compilation walks the described joints once: every origin is composed into
 * an accumulator; a movable joint takes the accumulator as its "pre"
 * transform and resets it, so fixed joints end up merged into the transform
 * in front of the next movable joint, and whatever is left after the last
 * movable joint becomes the tip transform.
 *
 * Evaluation runs on row-major 3x3 rotation matrices. At compilation every
 * movable joint i gets a constant rotation B_i taking the z axis onto its
 * axis a_i, so that Rot(a_i, q) = B_i Rz(q) B_i^T (and likewise for a
 * prismatic translation). Folding each B into its neighbours,
 *   T(q) = F_0 Z_0(q_0) F_1 Z_1(q_1) ... Z_{n-1}(q_{n-1}) F_n,
 *   F_0 = pre_0 B_0,  F_i = B_{i-1}^T pre_i B_i,  F_n = B_{n-1}^T tip,
 * (the fast_rot / fast_pos fields), so a joint costs one 3x3 product with
 * a constant, one sin and one cos, and a rotation of two columns. The
 * joint's axis in the base frame is then the z column of the running
 * rotation and its origin the running position. The Jacobian column of
 * joint i, with z_i its axis and o_i its origin in the base frame and p the
 * tip position, is [z_i x (p - o_i); z_i] for a revolute joint and [z_i; 0]
 * for a prismatic one.
 * ik_chain_fk_mat() and ik_chain_jacobian_mat() give the tip as a matrix
 * and a vector, which is what the numeric solver works on; the xform
 * variants convert once at the end.
 *
 * Storage: ik_chain_init() checks the whole description first, then
 * carves the caller's storage (aligned to STORAGE_ALIGN) into the chain's
 * arrays, doubles first (pre, axis, lower, upper, then fast_rot and
 * fast_pos with the tip's entry), then source_index and type: JOINT_BYTES
 * per movable joint and TIP_BYTES for the tip, nothing else. No scratch
 * is needed while evaluating: the Jacobian's columns hold each joint's
 * axis and origin on the way down the chain, and become the columns once
 * the tip is known.
 *
 * Not here: solving (ik_numeric.c), URDF text (proto/proto_urdf.c).
 */
#include "solver/ik_chain.h"
#include "solver/ik_chain_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "solver/ik_status.h"

/* ---- small matrix helpers (row-major 3x3) ------------------------------ */

static inline void mat3_mul(const double a[9], const double b[9], double out[9])
{
    for (int r = 0; r < 3; r++) {
        const double a0 = a[3 * r], a1 = a[3 * r + 1], a2 = a[3 * r + 2];
        out[3 * r] = a0 * b[0] + a1 * b[3] + a2 * b[6];
        out[3 * r + 1] = a0 * b[1] + a1 * b[4] + a2 * b[7];
        out[3 * r + 2] = a0 * b[2] + a1 * b[5] + a2 * b[8];
    }
}

static inline void mat3_vec(const double m[9], const double v[3], double out[3])
{
    const double x = v[0], y = v[1], z = v[2];
    out[0] = m[0] * x + m[1] * y + m[2] * z;
    out[1] = m[3] * x + m[4] * y + m[5] * z;
    out[2] = m[6] * x + m[7] * y + m[8] * z;
}

/* ---- compilation ------------------------------------------------------- */

static void mat3_transpose(const double a[9], double out[9])
{
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            out[3 * k + r] = a[3 * r + k];
}

/* The F_i of the file comment into c->fast_rot / c->fast_pos. */
static void compile_fast(ik_chain *c)
{
    double Bt_prev[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}; /* B_{i-1}^T */
    double M[9], T[9], B[9];
    for (size_t i = 0; i <= c->dof; i++) {
        const ik_xform *x = i < c->dof ? &c->pre[i] : &c->tip;
        const double pp[3] = {x->p.x, x->p.y, x->p.z};
        mat3_vec(Bt_prev, pp, c->fast_pos[i]);
        ik_quat_to_mat3(x->q, M);
        mat3_mul(Bt_prev, M, T);
        if (i == c->dof) {
            memcpy(c->fast_rot[i], T, sizeof T);
            break;
        }
        ik_quat_to_mat3(ik_quat_between(ik_v3(0, 0, 1), c->axis[i]), B);
        mat3_mul(T, B, c->fast_rot[i]);
        mat3_transpose(B, Bt_prev);
    }
}

static bool xform_valid(const ik_xform *x)
{
    if (!ik_vec3_isfinite(x->p) || !ik_quat_isfinite(x->q))
        return false;
    double n = sqrt(ik_quat_dot(x->q, x->q));
    return fabs(n - 1.0) <= 1e-6;
}

#define STORAGE_ALIGN 16

/* Bytes per movable joint and for the tip in the storage (file comment). */
#define JOINT_BYTES                                                                                \
    (sizeof(ik_xform) + sizeof(ik_vec3) + 2 * sizeof(double) + 12 * sizeof(double) +              \
     sizeof(size_t) + sizeof(ik_joint_type))
#define TIP_BYTES (12 * sizeof(double))

size_t ik_chain_storage_size(size_t dof)
{
    if (dof > (SIZE_MAX - TIP_BYTES - STORAGE_ALIGN) / JOINT_BYTES)
        return SIZE_MAX;
    return dof * JOINT_BYTES + TIP_BYTES + STORAGE_ALIGN;
}

int ik_chain_init(ik_chain *out, void *storage, size_t storage_size, const ik_joint *joints,
                  size_t n)
{
    if (!out || !storage || !joints || n == 0)
        return IK_EINVAL;
    size_t dof = 0;
    for (size_t i = 0; i < n; i++) {
        const ik_joint *j = &joints[i];
        if (!xform_valid(&j->origin))
            return IK_EINVAL;
        switch (j->type) {
        case IK_JOINT_FIXED:
            continue;
        case IK_JOINT_REVOLUTE:
        case IK_JOINT_PRISMATIC:
            if (!isfinite(j->lower) || !isfinite(j->upper) || j->lower > j->upper)
                return IK_EINVAL;
            break;
        case IK_JOINT_CONTINUOUS:
            break;
        default:
            return IK_EINVAL;
        }
        if (!ik_vec3_isfinite(j->axis) || ik_vec3_len(j->axis) < 1e-12)
            return IK_EINVAL;
        dof++;
    }
    if (dof == 0)
        return IK_EINVAL;
    if (storage_size < ik_chain_storage_size(dof))
        return IK_ENOSPC;

    /* Valid: carve the storage (doubles first, then the integers) and
     * compile into it; nothing can fail from here on. */
    ik_chain c;
    char *at = (char *)(((uintptr_t)storage + (STORAGE_ALIGN - 1)) &
                        ~(uintptr_t)(STORAGE_ALIGN - 1));
    c.dof = dof;
    c.pre = (ik_xform *)(void *)at;
    at += dof * sizeof *c.pre;
    c.axis = (ik_vec3 *)(void *)at;
    at += dof * sizeof *c.axis;
    c.lower = (double *)(void *)at;
    at += dof * sizeof *c.lower;
    c.upper = (double *)(void *)at;
    at += dof * sizeof *c.upper;
    c.fast_rot = (double(*)[9])(void *)at;
    at += (dof + 1) * sizeof *c.fast_rot;
    c.fast_pos = (double(*)[3])(void *)at;
    at += (dof + 1) * sizeof *c.fast_pos;
    c.source_index = (size_t *)(void *)at;
    at += dof * sizeof *c.source_index;
    c.type = (ik_joint_type *)(void *)at;
    ik_xform acc = ik_xform_identity();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const ik_joint *j = &joints[i];
        ik_xform o = j->origin;
        o.q = ik_quat_normalize(o.q);
        acc = ik_xform_mul(acc, o);
        acc.q = ik_quat_normalize(acc.q);
        if (j->type == IK_JOINT_FIXED)
            continue;
        c.type[k] = j->type;
        c.pre[k] = acc;
        c.axis[k] = ik_vec3_normalize(j->axis);
        if (j->type == IK_JOINT_CONTINUOUS) {
            c.lower[k] = -INFINITY;
            c.upper[k] = INFINITY;
        } else {
            c.lower[k] = j->lower;
            c.upper[k] = j->upper;
        }
        c.source_index[k] = i;
        k++;
        acc = ik_xform_identity();
    }
    c.tip = acc;
    compile_fast(&c);
    *out = c;
    return IK_OK;
}

/* ---- evaluation --------------------------------------------------------- */

/* The one walk down the chain (file comment). Fills, when not NULL: the
 * joint frames (after each joint's motion, through xform_from and the
 * joint's B_i) or their origins alone, the base frame axes and origins of the joints into the
 * Jacobian's storage J (6 x dof: the axis z_i into rows 3-5 of column i,
 * the origin o_i into rows 0-2, which ik_chain_jacobian_mat then turns
 * into the columns), and always the tip R, p. */
static ik_xform xform_from(const double R[9], const double p[3]);

/* Inlined into each caller, so that the outputs it does not ask for (NULL,
 * constants there) cost no test in the loop: the numeric solvers' inner
 * loops call ik_chain_fk_mat and ik_chain_jacobian_mat. */
static inline __attribute__((always_inline)) void
chain_walk(const ik_chain *c, const double *q, const size_t *index, size_t from, ik__walk *st,
           ik_xform *frames, ik_vec3 *origins, double *J, double R[9], double p[3])
{
    double Rc[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, T[9], v[3];
    double pc[3] = {0, 0, 0};
    const size_t n = c->dof;
    if (from > 0) { /* resumed after joint from - 1 (ik_chain_internal.h) */
        memcpy(Rc, st[from - 1].R, sizeof Rc);
        memcpy(pc, st[from - 1].p, sizeof pc);
    }
    for (size_t i = from; i < n; i++) {
        mat3_vec(Rc, c->fast_pos[i], v);
        pc[0] += v[0];
        pc[1] += v[1];
        pc[2] += v[2];
        mat3_mul(Rc, c->fast_rot[i], T);
        if (st) {
            st[i].z[0] = T[2];
            st[i].z[1] = T[5];
            st[i].z[2] = T[8];
            memcpy(st[i].o, pc, sizeof pc);
        }
        if (J) {
            J[3 * n + i] = T[2];
            J[4 * n + i] = T[5];
            J[5 * n + i] = T[8];
            J[0 * n + i] = pc[0];
            J[1 * n + i] = pc[1];
            J[2 * n + i] = pc[2];
        }
        const double qi = index ? q[index[i]] : q[i];
        if (c->type[i] == IK_JOINT_PRISMATIC) {
            pc[0] += T[2] * qi;
            pc[1] += T[5] * qi;
            pc[2] += T[8] * qi;
            memcpy(Rc, T, sizeof Rc);
        } else {
            /* Rc = T Rz(q): columns x' = c x + s y, y' = c y - s x */
            const double s = sin(qi), cq = cos(qi);
            for (int r = 0; r < 3; r++) {
                const double x = T[3 * r], y = T[3 * r + 1];
                Rc[3 * r] = cq * x + s * y;
                Rc[3 * r + 1] = cq * y - s * x;
                Rc[3 * r + 2] = T[3 * r + 2];
            }
        }
        if (origins)
            origins[i] = ik_v3(pc[0], pc[1], pc[2]);
        if (st) {
            memcpy(st[i].R, Rc, sizeof Rc);
            memcpy(st[i].p, pc, sizeof pc);
        }
        if (frames) {
            /* the walk's frame is the joint frame times B_i (file comment) */
            frames[i] = xform_from(Rc, pc);
            ik_quat b = ik_quat_between(ik_v3(0, 0, 1), c->axis[i]);
            frames[i].q = ik_quat_normalize(ik_quat_mul(frames[i].q, ik_quat_conj(b)));
        }
    }
    mat3_vec(Rc, c->fast_pos[n], v);
    p[0] = pc[0] + v[0];
    p[1] = pc[1] + v[1];
    p[2] = pc[2] + v[2];
    mat3_mul(Rc, c->fast_rot[n], R);
}

static ik_xform xform_from(const double R[9], const double p[3])
{
    ik_xform x;
    x.p = ik_v3(p[0], p[1], p[2]);
    x.q = ik_quat_normalize(ik_quat_from_mat3(R));
    return x;
}

void ik_chain_fk_mat(const ik_chain *c, const double *q, double R[9], double p[3])
{
    chain_walk(c, q, NULL, 0, NULL, NULL, NULL, NULL, R, p);
}

ik_xform ik_chain_fk(const ik_chain *c, const double *q)
{
    double R[9], p[3];
    chain_walk(c, q, NULL, 0, NULL, NULL, NULL, NULL, R, p);
    return xform_from(R, p);
}

ik_xform ik_chain_fk_gather(const ik_chain *c, const double *q, const size_t *index)
{
    double R[9], p[3];
    chain_walk(c, q, index, 0, NULL, NULL, NULL, NULL, R, p);
    return xform_from(R, p);
}

void ik_chain_frames(const ik_chain *c, const double *q, ik_xform *frames)
{
    double R[9], p[3];
    chain_walk(c, q, NULL, 0, NULL, frames, NULL, NULL, R, p);
    frames[c->dof] = xform_from(R, p);
}

void ik__chain_walk_from(const ik_chain *c, const double *q, const size_t *index, size_t from,
                         ik__walk *st, double R[9], double p[3])
{
    chain_walk(c, q, index, from, st, NULL, NULL, NULL, R, p);
}

void ik_chain_positions(const ik_chain *c, const double *q, ik_vec3 *pos, ik_xform *tip)
{
    double R[9], p[3];
    chain_walk(c, q, NULL, 0, NULL, NULL, pos, NULL, R, p);
    pos[c->dof] = ik_v3(p[0], p[1], p[2]);
    if (tip)
        *tip = xform_from(R, p);
}

void ik_chain_jacobian_mat(const ik_chain *c, const double *q, double *J, double R[9],
                           double p[3])
{
    chain_walk(c, q, NULL, 0, NULL, NULL, NULL, J, R, p);
    const size_t n = c->dof;
    for (size_t i = 0; i < n; i++) {
        const double zx = J[3 * n + i], zy = J[4 * n + i], zz = J[5 * n + i];
        if (c->type[i] == IK_JOINT_PRISMATIC) {
            J[0 * n + i] = zx;
            J[1 * n + i] = zy;
            J[2 * n + i] = zz;
            J[3 * n + i] = 0.0;
            J[4 * n + i] = 0.0;
            J[5 * n + i] = 0.0;
        } else {
            const double dx = p[0] - J[0 * n + i], dy = p[1] - J[1 * n + i],
                         dz = p[2] - J[2 * n + i];
            J[0 * n + i] = zy * dz - zz * dy;
            J[1 * n + i] = zz * dx - zx * dz;
            J[2 * n + i] = zx * dy - zy * dx;
        }
    }
}

void ik_chain_jacobian(const ik_chain *c, const double *q, double *J, ik_xform *tip)
{
    double R[9], p[3];
    ik_chain_jacobian_mat(c, q, J, R, p);
    if (tip)
        *tip = xform_from(R, p);
}

/* ---- limits ------------------------------------------------------------- */

bool ik_chain_within_limits(const ik_chain *c, const double *q, double eps)
{
    for (size_t i = 0; i < c->dof; i++) {
        if (!isfinite(q[i]))
            return false;
        if (c->type[i] == IK_JOINT_CONTINUOUS)
            continue;
        if (!(q[i] >= c->lower[i] - eps && q[i] <= c->upper[i] + eps))
            return false;
    }
    return true;
}

void ik_chain_mid(const ik_chain *c, double *q)
{
    for (size_t i = 0; i < c->dof; i++)
        q[i] = c->type[i] == IK_JOINT_CONTINUOUS ? 0.0 : 0.5 * (c->lower[i] + c->upper[i]);
}

void ik_chain_clamp(const ik_chain *c, double *q, bool wrap)
{
    for (size_t i = 0; i < c->dof; i++) {
        if (c->type[i] == IK_JOINT_CONTINUOUS) {
            if (wrap)
                q[i] = ik_wrap_angle(q[i]);
        } else {
            q[i] = ik_clamp(q[i], c->lower[i], c->upper[i]);
        }
    }
}

double ik_chain_turn_near(const ik_chain *c, size_t k, double v, double ref)
{
    if (c->type[k] == IK_JOINT_PRISMATIC || !isfinite(v) || !isfinite(ref))
        return v;
    double w = ref + ik_wrap_angle(v - ref); /* nearest overall: |w - ref| <= pi */
    if (c->type[k] == IK_JOINT_CONTINUOUS)
        return w;
    const double lo = c->lower[k], hi = c->upper[k], T = 2.0 * IK_PI;
    if (hi - lo < T && v >= lo && v <= hi)
        return v; /* the only equivalent in range, kept bit for bit */
    /* ref is inside [lo, hi] and w within pi of it: if w left the range,
     * the in-range equivalent nearest ref is the first one back inside */
    if (w < lo)
        w += T * ceil((lo - w) / T);
    else if (w > hi)
        w -= T * ceil((w - hi) / T);
    return (w >= lo && w <= hi) ? w : v;
}
