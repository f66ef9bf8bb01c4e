/*
 * ik_math.c: vectors, quaternions and rigid transforms (see ik_math.h for the
 * conventions). Everything here is pure arithmetic: no allocation, no state.
 *
 * The minimal rotation between two directions is seed 001's
 * "GetRotationBetween" (axis u x v, angle acos(u . v)), made total: parallel
 * input gives identity and opposite input a half turn about a perpendicular
 * axis instead of the seed's early return.
 */
#include "solver/ik_math.h"

#include <float.h>

/* fmax(a, b) for a, b that are magnitudes (+0 or more, or NaN): the
 * larger, or the one that is not NaN. The C library's fmax is a call that
 * gcc does not inline without -ffinite-math-only, and the lengths and
 * normalizations below run a handful of times in every answer. */
static inline double mag_max(double a, double b)
{
    return isnan(b) || a > b ? a : b;
}

/* ---- vec3 ------------------------------------------------------------- */

double ik_vec3_len(ik_vec3 a)
{
    double m = mag_max(fabs(a.x), mag_max(fabs(a.y), fabs(a.z)));
    if (!(m > 0.0) || !isfinite(m))
        return m > 0.0 ? m : 0.0; /* zero, NaN -> 0; inf -> inf */
    if (m > 1e150 || m < 1e-150) {
        ik_vec3 s = ik_vec3_scale(a, 1.0 / m);
        return m * sqrt(ik_vec3_dot(s, s));
    }
    return sqrt(ik_vec3_dot(a, a));
}

bool ik_vec3_isfinite(ik_vec3 a)
{
    return isfinite(a.x) && isfinite(a.y) && isfinite(a.z);
}

ik_vec3 ik_vec3_normalize(ik_vec3 a)
{
    if (!ik_vec3_isfinite(a))
        return ik_v3(0.0, 0.0, 0.0);
    double l = ik_vec3_len(a);
    if (!(l > 0.0))
        return ik_v3(0.0, 0.0, 0.0);
    return ik_vec3_scale(a, 1.0 / l);
}

ik_vec3 ik_vec3_reject(ik_vec3 v, ik_vec3 n)
{
    return ik_vec3_madd(v, n, -ik_vec3_dot(v, n));
}

ik_vec3 ik_vec3_any_perpendicular(ik_vec3 a)
{
    ik_vec3 n = ik_vec3_normalize(a);
    if (ik_vec3_len2(n) == 0.0)
        return ik_v3(1.0, 0.0, 0.0);
    /* Cross with the world axis least aligned with n. */
    ik_vec3 ax;
    double fx = fabs(n.x), fy = fabs(n.y), fz = fabs(n.z);
    if (fx <= fy && fx <= fz)
        ax = ik_v3(1.0, 0.0, 0.0);
    else if (fy <= fz)
        ax = ik_v3(0.0, 1.0, 0.0);
    else
        ax = ik_v3(0.0, 0.0, 1.0);
    return ik_vec3_normalize(ik_vec3_cross(n, ax));
}

ik_vec3 ik_vec3_lerp(ik_vec3 a, ik_vec3 b, double t)
{
    return ik_v3(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t);
}

/* ---- quaternion ------------------------------------------------------- */

ik_quat ik_quat_mul(ik_quat a, ik_quat b)
{
    ik_quat r;
    r.w = a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z;
    r.x = a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y;
    r.y = a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x;
    r.z = a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w;
    return r;
}

ik_quat ik_quat_conj(ik_quat q)
{
    ik_quat r = {-q.x, -q.y, -q.z, q.w};
    return r;
}

double ik_quat_dot(ik_quat a, ik_quat b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

bool ik_quat_isfinite(ik_quat q)
{
    return isfinite(q.x) && isfinite(q.y) && isfinite(q.z) && isfinite(q.w);
}

ik_quat ik_quat_normalize(ik_quat q)
{
    if (!ik_quat_isfinite(q))
        return ik_quat_identity();
    double m = mag_max(mag_max(fabs(q.x), fabs(q.y)), mag_max(fabs(q.z), fabs(q.w)));
    if (!(m > 0.0))
        return ik_quat_identity();
    ik_quat s = {q.x / m, q.y / m, q.z / m, q.w / m};
    double l = sqrt(ik_quat_dot(s, s));
    ik_quat r = {s.x / l, s.y / l, s.z / l, s.w / l};
    return r;
}

ik_quat ik_quat_from_axis_angle(ik_vec3 axis, double angle)
{
    ik_vec3 n = ik_vec3_normalize(axis);
    if (ik_vec3_len2(n) == 0.0 || !isfinite(angle))
        return ik_quat_identity();
    double s = sin(0.5 * angle);
    ik_quat q = {n.x * s, n.y * s, n.z * s, cos(0.5 * angle)};
    return q;
}

ik_vec3 ik_quat_to_rotvec(ik_quat q)
{
    q = ik_quat_normalize(q);
    if (q.w < 0.0) { /* shorter way round: angle in [0, pi] */
        q.x = -q.x;
        q.y = -q.y;
        q.z = -q.z;
        q.w = -q.w;
    }
    ik_vec3 v = ik_v3(q.x, q.y, q.z);
    double s = ik_vec3_len(v);
    if (s < 1e-12) /* small angle: 2 * v to first order */
        return ik_vec3_scale(v, 2.0);
    double angle = 2.0 * atan2(s, q.w);
    return ik_vec3_scale(v, angle / s);
}

ik_quat ik_quat_from_rotvec(ik_vec3 r)
{
    double angle = ik_vec3_len(r);
    if (angle < 1e-12) {
        ik_quat q = {0.5 * r.x, 0.5 * r.y, 0.5 * r.z, 1.0};
        return ik_quat_normalize(q);
    }
    return ik_quat_from_axis_angle(r, angle);
}

ik_vec3 ik_quat_rotate(ik_quat q, ik_vec3 v)
{
    /* v' = v + 2w (u x v) + 2 u x (u x v), u = vector part. */
    ik_vec3 u = ik_v3(q.x, q.y, q.z);
    ik_vec3 t = ik_vec3_scale(ik_vec3_cross(u, v), 2.0);
    return ik_vec3_add(ik_vec3_madd(v, t, q.w), ik_vec3_cross(u, t));
}

/* ik_quat_between() where u x v is short (s < 1e-3): parallel, opposite,
 * or nearly so; out of line, off the common path. Near opposite
 * directions a x b is only known to rounding / s, and the part of it
 * along a would turn a off b by up to twice that (0.15 at s = 1e-15):
 * that part is taken out, so that a half turn about the axis still lands
 * a on b (above s = 1e-3 it is below 1e-12 and left alone). */
static __attribute__((noinline, cold)) ik_quat between_short(ik_vec3 a, ik_vec3 axis, double s,
                                                             double c)
{
    if (s < 1e-15) {
        if (c > 0.0)
            return ik_quat_identity();
        return ik_quat_from_axis_angle(ik_vec3_any_perpendicular(a), IK_PI);
    }
    if (c < 0.0)
        axis = ik_vec3_sub(axis, ik_vec3_scale(a, ik_vec3_dot(axis, a)));
    return ik_quat_from_axis_angle(axis, atan2(s, c));
}

ik_quat ik_quat_between(ik_vec3 u, ik_vec3 v)
{
    ik_vec3 a = ik_vec3_normalize(u);
    ik_vec3 b = ik_vec3_normalize(v);
    if (ik_vec3_len2(a) == 0.0 || ik_vec3_len2(b) == 0.0)
        return ik_quat_identity();
    double c = ik_vec3_dot(a, b);
    ik_vec3 axis = ik_vec3_cross(a, b);
    double s = ik_vec3_len(axis);
    if (s < 1e-3)
        return between_short(a, axis, s, c);
    /* Seed 001: axis u x v, angle acos(u . v). Without trigonometry: with
     * h = a + b, |h|^2 = 2 + 2 cos(angle), and (u x v, 1 + cos(angle)) is
     * the rotation's quaternion times 2 cos(angle / 2) = |h|; 1 + cos is
     * taken as |h|^2 / 2, which keeps its digits near pi where 1 + c would
     * not (below s = 1e-3 between_short takes over). One Newton step
     * then makes it unit to rounding without a second root (|axis|, known
     * to rounding / s near pi, is the only part off). */
    double h = ik_vec3_len(ik_vec3_add(a, b));
    ik_quat q = {axis.x / h, axis.y / h, axis.z / h, 0.5 * h};
    double k = 1.5 - 0.5 * ik_quat_dot(q, q);
    if (!isfinite(k)) /* u or v not finite: no rotation, as from an angle */
        return ik_quat_identity();
    return (ik_quat){q.x * k, q.y * k, q.z * k, q.w * k};
}

ik_quat ik_quat_from_rpy(double roll, double pitch, double yaw)
{
    ik_quat qx = ik_quat_from_axis_angle(ik_v3(1, 0, 0), roll);
    ik_quat qy = ik_quat_from_axis_angle(ik_v3(0, 1, 0), pitch);
    ik_quat qz = ik_quat_from_axis_angle(ik_v3(0, 0, 1), yaw);
    return ik_quat_mul(qz, ik_quat_mul(qy, qx));
}

void ik_quat_to_mat3(ik_quat q, double m[9])
{
    double xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
    double xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
    double wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
    m[0] = 1.0 - 2.0 * (yy + zz);
    m[1] = 2.0 * (xy - wz);
    m[2] = 2.0 * (xz + wy);
    m[3] = 2.0 * (xy + wz);
    m[4] = 1.0 - 2.0 * (xx + zz);
    m[5] = 2.0 * (yz - wx);
    m[6] = 2.0 * (xz - wy);
    m[7] = 2.0 * (yz + wx);
    m[8] = 1.0 - 2.0 * (xx + yy);
}

ik_quat ik_quat_from_mat3(const double m[9])
{
    ik_quat q;
    double tr = m[0] + m[4] + m[8];
    if (tr > 0.0) {
        double s = sqrt(tr + 1.0) * 2.0;
        q.w = 0.25 * s;
        q.x = (m[7] - m[5]) / s;
        q.y = (m[2] - m[6]) / s;
        q.z = (m[3] - m[1]) / s;
    } else if (m[0] > m[4] && m[0] > m[8]) {
        double s = sqrt(1.0 + m[0] - m[4] - m[8]) * 2.0;
        q.w = (m[7] - m[5]) / s;
        q.x = 0.25 * s;
        q.y = (m[1] + m[3]) / s;
        q.z = (m[2] + m[6]) / s;
    } else if (m[4] > m[8]) {
        double s = sqrt(1.0 + m[4] - m[0] - m[8]) * 2.0;
        q.w = (m[2] - m[6]) / s;
        q.x = (m[1] + m[3]) / s;
        q.y = 0.25 * s;
        q.z = (m[5] + m[7]) / s;
    } else {
        double s = sqrt(1.0 + m[8] - m[0] - m[4]) * 2.0;
        q.w = (m[3] - m[1]) / s;
        q.x = (m[2] + m[6]) / s;
        q.y = (m[5] + m[7]) / s;
        q.z = 0.25 * s;
    }
    return ik_quat_normalize(q);
}

void ik_mat3_rotvec_error(const double Rt[9], const double R[9], double r[3])
{
    double E[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            E[3 * i + j] = Rt[3 * i] * R[3 * j] + Rt[3 * i + 1] * R[3 * j + 1] +
                           Rt[3 * i + 2] * R[3 * j + 2];
    const double tr = E[0] + E[4] + E[8];
    if (tr > -0.9) {
        /* 2 sin(theta) axis = (E21 - E12, E02 - E20, E10 - E01),
         * cos(theta) = (trace - 1) / 2 */
        const double vx = E[7] - E[5], vy = E[2] - E[6], vz = E[3] - E[1];
        const double s2 = sqrt(vx * vx + vy * vy + vz * vz);
        const double k = s2 < 1e-200 ? 0.5 : atan2(0.5 * s2, 0.5 * (tr - 1.0)) / s2;
        r[0] = k * vx;
        r[1] = k * vy;
        r[2] = k * vz;
    } else {
        ik_vec3 v = ik_quat_to_rotvec(ik_quat_from_mat3(E));
        r[0] = v.x;
        r[1] = v.y;
        r[2] = v.z;
    }
}

void ik_quat_to_rpy(ik_quat q, double *roll, double *pitch, double *yaw)
{
    double m[9];
    ik_quat_to_mat3(ik_quat_normalize(q), m);
    /* R = Rz(y) Ry(p) Rx(r): m[6] = -sin p. */
    double sp = ik_clamp(-m[6], -1.0, 1.0);
    *pitch = asin(sp);
    if (fabs(sp) < 1.0 - 1e-12) {
        *roll = atan2(m[7], m[8]);
        *yaw = atan2(m[3], m[0]);
    } else { /* gimbal lock: put everything in yaw */
        *roll = 0.0;
        *yaw = atan2(-m[1], m[4]);
    }
}

double ik_quat_angle_between(ik_quat a, ik_quat b)
{
    ik_quat d = ik_quat_mul(ik_quat_conj(ik_quat_normalize(a)), ik_quat_normalize(b));
    return ik_vec3_len(ik_quat_to_rotvec(d));
}

ik_quat ik_quat_slerp(ik_quat a, ik_quat b, double t)
{
    a = ik_quat_normalize(a);
    b = ik_quat_normalize(b);
    if (ik_quat_dot(a, b) < 0.0) {
        b.x = -b.x;
        b.y = -b.y;
        b.z = -b.z;
        b.w = -b.w;
    }
    ik_quat d = ik_quat_mul(ik_quat_conj(a), b);
    ik_vec3 r = ik_vec3_scale(ik_quat_to_rotvec(d), t);
    return ik_quat_normalize(ik_quat_mul(a, ik_quat_from_rotvec(r)));
}

/* ---- rigid transforms ------------------------------------------------- */

ik_xform ik_xform_mul(ik_xform a, ik_xform b)
{
    ik_xform r;
    r.q = ik_quat_mul(a.q, b.q);
    r.p = ik_vec3_add(ik_quat_rotate(a.q, b.p), a.p);
    return r;
}

ik_xform ik_xform_inverse(ik_xform a)
{
    ik_xform r;
    r.q = ik_quat_conj(a.q);
    r.p = ik_vec3_scale(ik_quat_rotate(r.q, a.p), -1.0);
    return r;
}

ik_vec3 ik_xform_point(ik_xform a, ik_vec3 p)
{
    return ik_vec3_add(ik_quat_rotate(a.q, p), a.p);
}

ik_vec3 ik_xform_dir(ik_xform a, ik_vec3 d)
{
    return ik_quat_rotate(a.q, d);
}

/* ---- scalars ---------------------------------------------------------- */

double ik_clamp(double v, double lo, double hi)
{
    if (!(v >= lo))
        return lo;
    if (v > hi)
        return hi;
    return v;
}

double ik_wrap_angle(double a)
{
    /* Fast paths, bit for bit what fmod gives below: within three half
     * turns a single exact subtraction (Sterbenz) does it. */
    if (a > -IK_PI && a <= IK_PI)
        return a;
    if (a > IK_PI && a <= 3.0 * IK_PI)
        return a - 2.0 * IK_PI;
    if (a <= -IK_PI && a > -3.0 * IK_PI)
        return a + 2.0 * IK_PI;
    if (!isfinite(a))
        return 0.0;
    double r = fmod(a, 2.0 * IK_PI);
    if (r <= -IK_PI)
        r += 2.0 * IK_PI;
    else if (r > IK_PI)
        r -= 2.0 * IK_PI;
    return r;
}

double ik_acos_clamped(double c)
{
    return acos(ik_clamp(c, -1.0, 1.0));
}
