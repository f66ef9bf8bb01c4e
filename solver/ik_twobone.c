/*
 * ik_twobone.c: seed 001's closed-form two-bone IK in 3D
 * (shared/seeds/001_266e5f870b3c3550.txt, "Finding the New Positions").
 *
 * Implements, with the seed's names:
 *   n = (a - t) / len_at                         (unit vector from t to a)
 *   too close  len_at < |len_ab - len_bc|:  b' = a - s len_ab n,
 *              c' = b' + s len_bc n,  s = +1 if len_ab > len_bc else -1
 *   too far    len_at > len_ab + len_bc:    b' = a - len_ab n, c' = b' - len_bc n
 *   reachable  cos(theta) = (len_bc^2 - len_ab^2 - len_at^2) / (-2 len_ab len_at)
 *              r = len_ab sin(theta),  m = a - len_ab cos(theta) n,
 *              u = normalize((b - m) - ((b - m) . n) n),  b' = m + r u,  c' = t
 *
 * Two numerical refinements, algebraically identical to the seed:
 *   - cos(theta) is evaluated as ((l_ab - l_bc)(l_ab + l_bc) + l_at^2) /
 *     (2 l_ab l_at) in units of the longest bone: the same ratio with the
 *     signs folded in, without the cancellation of l_bc^2 - l_ab^2 and
 *     without overflow for huge coordinates;
 *   - sin(theta) = sqrt((1 - cos)(1 + cos)), which keeps its precision near
 *     a straight limb where 1 - cos^2 does not.
 * The seed's float threshold len_at < 1e-3 becomes a relative one (1e-12 of
 * the limb length), since ikd's units are the caller's. The reach tests
 * allow a rounding error (IK_REACH_ROUNDING of the limb length): a
 * target computed on the edge of the reach is met, stretched or folded.
 *
 * Two paths compute the same construction. The fast path (every length
 * within 1e-25..1e25, t not on a) writes it with squared lengths
 * (m = a + h (t - a), r^2 from the factored law of cosines; derivation at
 * ik_twobone_solve) so the reachable case has two square roots and a division
 * off the critical path plus one division and one square root at the end. Everything else (huge or tiny coordinates, t on
 * a, and every invalid input) goes to the careful path, which follows the
 * seed's cos(theta) form literally and validates.
 *
 * Not here: the bone rotation update (ik_skeleton.c).
 */
#include "solver/ik_twobone.h"

#include <float.h>
#include <math.h>

#include "solver/ik_status.h"

/* Relative size below which l_at counts as zero (seed: 1e-3 in float). */
#define TWOBONE_TINY_AT 1e-12
/* Relative size below which the knee's offset from the axis counts as zero
 * (the seed's GetPerpendicularUnitVector falls back to any perpendicular). */
#define TWOBONE_TINY_PERP 1e-14
/* Relative offset of the knee from the root-foot line below which a limb
 * has no bend plane to keep (ik_twobone_plane_pole): a limb straight to a
 * part in 10^4 (a 1 m leg with its knee within 0.1 mm of the line), whose
 * plane would be rounding noise. */
#define TWOBONE_PLANE_MIN 1e-4

static inline bool finite3(ik_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

/* |v|: the plain square root when the squared length is a normal finite
 * double, the overflow-safe ik_vec3_len() otherwise (huge or tiny input). */
static inline double len3(ik_vec3 v)
{
    double s = v.x * v.x + v.y * v.y + v.z * v.z;
    if (s > DBL_MIN && s <= DBL_MAX)
        return sqrt(s);
    return ik_vec3_len(v);
}

/* Unit vector along v - (v . n) n, or 0-length result flagged by returning
 * false when that part is negligible against scale. */
static inline bool perp_unit(ik_vec3 v, ik_vec3 n, double scale, ik_vec3 *u)
{
    ik_vec3 w = ik_vec3_madd(v, n, -ik_vec3_dot(v, n));
    double l = len3(w);
    if (!(l > TWOBONE_TINY_PERP * scale))
        return false;
    *u = ik_vec3_scale(w, 1.0 / l);
    return true;
}

/* The careful path: any finite input, lengths without overflow, the seed's
 * cos(theta) form evaluated in units of the longest bone, the seed's
 * n = (1,0,0) when t sits on a. Also the validating path: every invalid
 * input ends here. */
static int solve_careful(ik_vec3 a, ik_vec3 b, ik_vec3 c, ik_vec3 t, const ik_vec3 *pole,
                         ik_twobone_result *out)
{
    /* A finite difference implies both operands are finite, so these three
     * checks also reject every non-finite coordinate of a, b, c and t. */
    ik_vec3 ab = ik_vec3_sub(b, a);
    ik_vec3 bc = ik_vec3_sub(c, b);
    ik_vec3 at = ik_vec3_sub(t, a);
    if (!finite3(ab) || !finite3(bc) || !finite3(at))
        return IK_EINVAL;
    if (pole && !finite3(ik_vec3_sub(*pole, a)))
        return IK_EINVAL;

    double len_ab = len3(ab);
    double len_bc = len3(bc);
    double len_at = len3(at);
    double reach = len_ab + len_bc;
    if (!(len_ab > 0.0) || !(len_bc > 0.0) || !(reach <= DBL_MAX) || !(len_at <= DBL_MAX))
        return IK_EINVAL;

    /* Unit vector from t to a; the seed's default when t sits on a. */
    ik_vec3 n;
    if (len_at < TWOBONE_TINY_AT * reach)
        n = ik_v3(1.0, 0.0, 0.0);
    else
        n = ik_vec3_scale(at, -1.0 / len_at);

    ik_twobone_result r;
    const double slack = IK_REACH_ROUNDING * reach;
    if (len_at < fabs(len_ab - len_bc) - slack) {
        /* Too close: the longer bone towards the target, the other away. */
        double sign = (len_ab > len_bc) ? 1.0 : -1.0;
        r.b = ik_vec3_madd(a, n, -sign * len_ab);
        r.c = ik_vec3_madd(r.b, n, sign * len_bc);
        r.reach = IK_REACH_TOO_CLOSE;
    } else if (len_at <= reach + slack) {
        /* Reachable: the knee on the circle where the spheres meet. */
        double inv = 1.0 / (len_ab > len_bc ? len_ab : len_bc);
        double A = len_ab * inv, B = len_bc * inv, D = len_at * inv;
        double den = 2.0 * A * D;
        double cos_t = 0.0; /* limit for t on a with equal bones */
        if (den > 0.0) {
            cos_t = ((A - B) * (A + B) + D * D) / den;
            if (!(cos_t >= -1.0))
                cos_t = -1.0;
            else if (cos_t > 1.0)
                cos_t = 1.0;
        }
        double sin_t = sqrt((1.0 - cos_t) * (1.0 + cos_t));
        double radius = len_ab * sin_t;
        ik_vec3 m = ik_vec3_madd(a, n, -len_ab * cos_t);

        ik_vec3 u;
        bool ok = false;
        if (pole)
            ok = perp_unit(ik_vec3_sub(*pole, m), n, reach, &u);
        if (!ok)
            ok = perp_unit(ik_vec3_sub(b, m), n, reach, &u);
        if (!ok)
            u = ik_vec3_any_perpendicular(n);

        r.b = ik_vec3_madd(m, u, radius);
        r.c = t;
        r.reach = IK_REACH_OK;
    } else {
        /* Too far: reach out towards the target to full extension. */
        r.b = ik_vec3_madd(a, n, -len_ab);
        r.c = ik_vec3_madd(r.b, n, -len_bc);
        r.reach = IK_REACH_TOO_FAR;
    }

    if (!finite3(r.b) || !finite3(r.c))
        return IK_EINVAL; /* the answer itself would overflow */
    if (r.reach == IK_REACH_OK) {
        r.error = 0.0;
    } else {
        r.error = len3(ik_vec3_sub(r.c, t));
        if (!(r.error <= DBL_MAX))
            return IK_EINVAL;
    }
    *out = r;
    return r.reach == IK_REACH_OK ? IK_OK : IK_EUNREACHABLE;
}

/* Squared lengths within which the fast path's products (up to the sixth
 * power of a length) can neither overflow nor underflow. */
#define FAST_MAX2 1e50
#define FAST_MIN2 1e-50

int ik_twobone_solve(ik_vec3 a, ik_vec3 b, ik_vec3 c, ik_vec3 t, const ik_vec3 *pole,
                     ik_twobone_result *out)
{
    /* Fast path: the same construction written with squared lengths, so
     * that the reachable case needs no square root or division before the
     * knee's direction is known:
     *   h   = l_ab cos(theta) / l_at = (l_at^2 + l_ab^2 - l_bc^2) / (2 l_at^2),
     *   m   = a - l_ab cos(theta) n = a + h (t - a),
     *   r^2 = l_ab^2 sin^2(theta)
     *       = ((l_ab + l_bc)^2 - l_at^2) (l_at^2 - (l_ab - l_bc)^2) / (4 l_at^2),
     *   u   = the part of (b - m) perpendicular to t - a, normalised (the
     *         part of m - a along that axis drops out, so b - a will do).
     * The reach tests are the seed's, squared: too close when
     * l_at^2 < (l_ab - l_bc)^2, too far when l_at^2 > (l_ab + l_bc)^2.
     * Every comparison below is false for NaN, so non-finite, huge, tiny
     * and degenerate input falls through to the careful path. */
    ik_vec3 ab = ik_vec3_sub(b, a);
    ik_vec3 bc = ik_vec3_sub(c, b);
    ik_vec3 at = ik_vec3_sub(t, a);
    double lab2 = ik_vec3_dot(ab, ab);
    double lbc2 = ik_vec3_dot(bc, bc);
    double lat2 = ik_vec3_dot(at, at);
    if (!(lab2 >= FAST_MIN2 && lab2 <= FAST_MAX2 && lbc2 >= FAST_MIN2 && lbc2 <= FAST_MAX2 &&
          lat2 <= FAST_MAX2))
        return solve_careful(a, b, c, t, pole, out);
    double lab = sqrt(lab2), lbc = sqrt(lbc2);
    double sum = lab + lbc, dif = lab - lbc;
    double sum2 = sum * sum;
    /* t (almost) on a: the seed's n = (1,0,0), handled by the careful path */
    if (!(lat2 >= (TWOBONE_TINY_AT * TWOBONE_TINY_AT) * sum2))
        return solve_careful(a, b, c, t, pole, out);
    ik_vec3 pv = ab;
    if (pole) {
        pv = ik_vec3_sub(*pole, a);
        if (!(ik_vec3_dot(pv, pv) <= FAST_MAX2))
            return solve_careful(a, b, c, t, pole, out);
    }

    ik_twobone_result r;
    double far = sum2 - lat2;       /* >= 0: not too far */
    double close = lat2 - dif * dif; /* >= 0: not too close */
    bool out_of_reach = false, too_close = false;
    if (close < 0.0 || far < 0.0) {
        /* past an edge, out of reach unless only by a rounding error
         * (IK_REACH_ROUNDING of l_ab + l_bc): then met, straight */
        const double slack = IK_REACH_ROUNDING * sum, edge = fabs(dif) - slack;
        too_close = close < 0.0 && edge > 0.0 && lat2 < edge * edge;
        out_of_reach = too_close || (far < 0.0 && lat2 > (sum + slack) * (sum + slack));
        far = far < 0.0 ? 0.0 : far;
        close = close < 0.0 ? 0.0 : close;
    }
    if (out_of_reach) {
        ik_vec3 n = ik_vec3_scale(at, -1.0 / sqrt(lat2));
        if (too_close) {
            double sign = (lab > lbc) ? 1.0 : -1.0;
            r.b = ik_vec3_madd(a, n, -sign * lab);
            r.c = ik_vec3_madd(r.b, n, sign * lbc);
            r.reach = IK_REACH_TOO_CLOSE;
        } else {
            r.b = ik_vec3_madd(a, n, -lab);
            r.c = ik_vec3_madd(r.b, n, -lbc);
            r.reach = IK_REACH_TOO_FAR;
        }
        r.error = len3(ik_vec3_sub(r.c, t));
    } else {
        /* The perpendicular part of pv, scaled by l_at^2 to spare a
         * division: w = l_at^2 pv - (pv . at) at. Then
         * b' = m + (r / |w|) w with r / |w| = sqrt(far close / (4 l_at^2 |w|^2)). */
        double h = 0.5 * (lat2 + dif * sum) / lat2;
        ik_vec3 m = ik_vec3_scale(at, h); /* relative to a */
        double thr2 = (TWOBONE_TINY_PERP * TWOBONE_TINY_PERP) * sum2 * lat2 * lat2;
        ik_vec3 w = ik_vec3_madd(ik_vec3_scale(pv, lat2), at, -ik_vec3_dot(pv, at));
        double w2 = ik_vec3_dot(w, w);
        if (!(w2 > thr2) && pole) {
            w = ik_vec3_madd(ik_vec3_scale(ab, lat2), at, -ik_vec3_dot(ab, at));
            w2 = ik_vec3_dot(w, w);
        }
        double k;
        if (w2 > thr2) {
            k = sqrt(far * close / (4.0 * lat2 * w2));
        } else {
            w = ik_vec3_any_perpendicular(ik_vec3_scale(at, -1.0));
            k = sqrt(far * (0.25 * close / lat2));
        }
        r.b = ik_vec3_add(a, ik_vec3_madd(m, w, k));
        r.c = t;
        r.error = 0.0;
        r.reach = IK_REACH_OK;
    }
    if (!finite3(r.b) || !finite3(r.c) || !(r.error <= DBL_MAX))
        return solve_careful(a, b, c, t, pole, out); /* overflow near DBL_MAX */
    *out = r;
    return r.reach == IK_REACH_OK ? IK_OK : IK_EUNREACHABLE;
}

bool ik_twobone_plane_pole(ik_vec3 a, ik_vec3 b, ik_vec3 c, ik_vec3 t, ik_vec3 *pole)
{
    const ik_vec3 ab = ik_vec3_sub(b, a), ac = ik_vec3_sub(c, a), at = ik_vec3_sub(a, t);
    if (!finite3(ab) || !finite3(ac) || !finite3(at) || !pole)
        return false;
    const double lab = len3(ab), lac = len3(ac), lbc = len3(ik_vec3_sub(c, b)), lat = len3(at);
    const ik_vec3 N = ik_vec3_cross(ab, ac);
    const double lN = len3(N);
    if (!(lN > TWOBONE_PLANE_MIN * (lab + lbc) * lac) || !(lat > TWOBONE_TINY_AT * (lab + lbc)) ||
        !isfinite(lN))
        return false;
    const ik_vec3 n = ik_vec3_scale(at, 1.0 / lat);
    const ik_vec3 u = ik_vec3_cross(ik_vec3_scale(N, 1.0 / lN), n);
    const double lu = len3(u);
    if (!(lu > 1e-9))
        return false;
    const ik_vec3 p = ik_vec3_add(a, ik_vec3_scale(u, (lab + lbc) / lu));
    if (!finite3(p))
        return false;
    *pole = p;
    return true;
}
