/*
 * test_ik_twobone.c: seed 001's two-bone solve (solver/ik_twobone.h).
 *
 * Worked examples computed by hand from the seed's formulas (a 3-4-5
 * triangle with its right angle at the knee), then thousands of random
 * limbs checked geometrically, never against the solver's own output: the
 * foot lands on the target, both bones keep their lengths, the knee lies on
 * the circle where the two spheres meet (centre and radius computed here
 * independently) and is the circle point nearest the current knee (or the
 * pole), compared against many other points of the circle. Unreachable
 * targets must give the seed's straight poses; hostile input must give
 * IK_EINVAL with the output untouched, never NaN.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_rng.h"
#include "solver/ik_status.h"
#include "solver/ik_twobone.h"

#define N_RANDOM 5000

/* ---- helpers ---------------------------------------------------------- */

static ik_rng rng_state;

static double urand(void) /* [0, 1) */
{
    return ik_rng_unit(&rng_state);
}
static double urange(double lo, double hi)
{
    return lo + (hi - lo) * urand();
}
static ik_vec3 rand_unit(void)
{
    for (;;) {
        ik_vec3 v = ik_v3(urange(-1, 1), urange(-1, 1), urange(-1, 1));
        double l = sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
        if (l > 0.1 && l <= 1.0)
            return ik_v3(v.x / l, v.y / l, v.z / l);
    }
}
static ik_vec3 vadd(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.x + b.x, a.y + b.y, a.z + b.z);
}
static ik_vec3 vsub(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.x - b.x, a.y - b.y, a.z - b.z);
}
static ik_vec3 vmul(ik_vec3 a, double s)
{
    return ik_v3(a.x * s, a.y * s, a.z * s);
}
static double vdot(ik_vec3 a, ik_vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static ik_vec3 vcross(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
/* |a| without overflow or underflow: scaled by the largest component. */
static double vlen(ik_vec3 a)
{
    double m = fmax(fabs(a.x), fmax(fabs(a.y), fabs(a.z)));
    if (!(m > 0) || !isfinite(m))
        return m;
    ik_vec3 s = ik_v3(a.x / m, a.y / m, a.z / m);
    return m * sqrt(vdot(s, s));
}
static double vdist(ik_vec3 a, ik_vec3 b)
{
    return vlen(vsub(a, b));
}
static bool vfinite(ik_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}
static void assert_vec(ik_vec3 a, ik_vec3 b, double tol)
{
    ck_assert_double_eq_tol(a.x, b.x, tol);
    ck_assert_double_eq_tol(a.y, b.y, tol);
    ck_assert_double_eq_tol(a.z, b.z, tol);
}

/* A random limb: hip a, bone lengths, current knee b and foot c. */
typedef struct limb {
    ik_vec3 a, b, c;
    double lab, lbc;
} limb;

static limb rand_limb(double scale)
{
    limb L;
    L.a = vmul(ik_v3(urange(-1, 1), urange(-1, 1), urange(-1, 1)), scale);
    L.lab = scale * urange(0.1, 1.0);
    L.lbc = scale * urange(0.1, 1.0);
    L.b = vadd(L.a, vmul(rand_unit(), L.lab));
    L.c = vadd(L.b, vmul(rand_unit(), L.lbc));
    /* recompute the lengths as the solver sees them (after rounding) */
    L.lab = vdist(L.b, L.a);
    L.lbc = vdist(L.c, L.b);
    return L;
}

/* The circle where |x - a| = lab meets |x - t| = lbc, computed here from
 * plane geometry (not the seed's angle form): centre, radius, axis. */
static void circle(ik_vec3 a, ik_vec3 t, double lab, double lbc, ik_vec3 *m, double *r,
                   ik_vec3 *axis)
{
    double d = vdist(a, t);
    ik_vec3 w = vmul(vsub(t, a), 1.0 / d); /* a -> t */
    double h = (d * d + lab * lab - lbc * lbc) / (2 * d);
    *m = vadd(a, vmul(w, h));
    double r2 = lab * lab - h * h;
    *r = r2 > 0 ? sqrt(r2) : 0;
    *axis = w;
}

/* Two unit vectors spanning the plane perpendicular to unit w. */
static void basis(ik_vec3 w, ik_vec3 *e1, ik_vec3 *e2)
{
    ik_vec3 helper = fabs(w.x) < 0.6 ? ik_v3(1, 0, 0) : ik_v3(0, 1, 0);
    ik_vec3 x = vcross(w, helper);
    *e1 = vmul(x, 1.0 / vlen(x));
    *e2 = vcross(w, *e1);
}

/* ---- worked examples -------------------------------------------------- */

START_TEST(test_right_angle_by_hand)
{
    /* l_ab = 3, l_bc = 4, target at 5 along +x: cos(theta) =
     * (16 - 9 - 25) / (-2 * 3 * 5) = 0.6, r = 3 * 0.8 = 2.4,
     * n = (-1, 0, 0), m = a - 3 * 0.6 * n = (1.8, 0, 0); the knee starts on
     * +y, so u = (0, 1, 0) and b' = (1.8, 2.4, 0). */
    ik_vec3 a = ik_v3(0, 0, 0), b = ik_v3(0, 3, 0), c = ik_v3(0, 3, 4), t = ik_v3(5, 0, 0);
    ik_twobone_result r;
    ck_assert_int_eq(ik_twobone_solve(a, b, c, t, NULL, &r), IK_OK);
    ck_assert_int_eq(r.reach, IK_REACH_OK);
    assert_vec(r.b, ik_v3(1.8, 2.4, 0), 1e-14);
    ck_assert(memcmp(&r.c, &t, sizeof t) == 0);
    ck_assert_double_eq(r.error, 0);
    /* the right angle is at the knee */
    ck_assert_double_eq_tol(vdot(vsub(r.b, a), vsub(r.c, r.b)), 0, 1e-13);

    /* The same with the knee starting below: b' = (1.8, -2.4, 0). */
    ck_assert_int_eq(ik_twobone_solve(a, ik_v3(0, -3, 0), ik_v3(4, -3, 0), t, NULL, &r), IK_OK);
    assert_vec(r.b, ik_v3(1.8, -2.4, 0), 1e-14);

    /* A pole on +z wins over the current knee: b' = (1.8, 0, 2.4). */
    ik_vec3 pole = ik_v3(2, 0, 10);
    ck_assert_int_eq(ik_twobone_solve(a, b, c, t, &pole, &r), IK_OK);
    assert_vec(r.b, ik_v3(1.8, 0, 2.4), 1e-14);
}
END_TEST

START_TEST(test_unreachable_by_hand)
{
    ik_vec3 a = ik_v3(1, 1, 1), b = ik_v3(1, 4, 1), c = ik_v3(1, 4, 5);
    ik_twobone_result r;
    /* too far: t at 10 along +x: b' = a + 3x, c' = a + 7x, error 3 */
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(11, 1, 1), NULL, &r), IK_EUNREACHABLE);
    ck_assert_int_eq(r.reach, IK_REACH_TOO_FAR);
    assert_vec(r.b, ik_v3(4, 1, 1), 1e-14);
    assert_vec(r.c, ik_v3(8, 1, 1), 1e-14);
    ck_assert_double_eq_tol(r.error, 3, 1e-14);
    /* too close: |3 - 4| = 1 > 0.5; the longer bone (bc) points towards the
     * target, the thigh away: b' = a - 3x, c' = b' + 4x = a + x. */
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(1.5, 1, 1), NULL, &r), IK_EUNREACHABLE);
    ck_assert_int_eq(r.reach, IK_REACH_TOO_CLOSE);
    assert_vec(r.b, ik_v3(-2, 1, 1), 1e-14);
    assert_vec(r.c, ik_v3(2, 1, 1), 1e-14);
    ck_assert_double_eq_tol(r.error, 0.5, 1e-14);
    /* too close with the thigh longer (4 then 3): thigh towards the target,
     * shin back: b' = a + 4y, c' = a + y. */
    ik_vec3 b2 = ik_v3(1, 5, 1), c2 = ik_v3(4, 5, 1);
    ck_assert_int_eq(ik_twobone_solve(a, b2, c2, ik_v3(1, 1.5, 1), NULL, &r), IK_EUNREACHABLE);
    assert_vec(r.b, ik_v3(1, 5, 1), 1e-14);
    assert_vec(r.c, ik_v3(1, 2, 1), 1e-14);
    ck_assert_double_eq_tol(r.error, 0.5, 1e-14);
    /* exactly at full reach: reachable, straight */
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(8, 1, 1), NULL, &r), IK_OK);
    assert_vec(r.b, ik_v3(4, 1, 1), 1e-7);
}
END_TEST

/* ---- random reachable targets ----------------------------------------- */

static void check_reachable(const limb *L, ik_vec3 t, const ik_vec3 *pole, double scale)
{
    ik_twobone_result r;
    int st = ik_twobone_solve(L->a, L->b, L->c, t, pole, &r);
    ck_assert_int_eq(st, IK_OK);
    ck_assert_int_eq(r.reach, IK_REACH_OK);
    ck_assert(vfinite(r.b) && vfinite(r.c));
    double tol = 1e-12 * scale;
    /* forward kinematics: the foot on the target, bones keep their lengths */
    ck_assert_double_eq_tol(vdist(r.c, t), 0, tol);
    ck_assert_double_eq_tol(vdist(r.b, L->a), L->lab, tol);
    ck_assert_double_eq_tol(vdist(r.c, r.b), L->lbc, tol);
    ck_assert_double_eq(r.error, 0);

    /* the knee on the circle, and no circle point is closer to the knee
     * (or the pole) than the one chosen */
    ik_vec3 m, w, e1, e2;
    double rad;
    circle(L->a, t, L->lab, L->lbc, &m, &rad, &w);
    ck_assert_double_eq_tol(vdot(vsub(r.b, m), w), 0, 1e-9 * scale);
    ck_assert_double_eq_tol(vdist(r.b, m), rad, 1e-9 * scale);
    ik_vec3 ref = pole ? *pole : L->b;
    double best = vdist(r.b, ref);
    basis(w, &e1, &e2);
    for (int k = 0; k < 64; k++) {
        double phi = 2 * IK_PI * k / 64.0;
        ik_vec3 x = vadd(m, vadd(vmul(e1, rad * cos(phi)), vmul(e2, rad * sin(phi))));
        ck_assert(best <= vdist(x, ref) + 1e-12 * scale);
    }
}

START_TEST(test_random_reachable)
{
    rng_state.s = 1;
    for (int i = 0; i < N_RANDOM; i++) {
        limb L = rand_limb(1.0);
        double lo = fabs(L.lab - L.lbc), hi = L.lab + L.lbc;
        double d = urange(lo, hi);
        ik_vec3 t = vadd(L.a, vmul(rand_unit(), d));
        check_reachable(&L, t, NULL, 1.0);
    }
}
END_TEST

START_TEST(test_random_pole)
{
    rng_state.s = 2;
    for (int i = 0; i < N_RANDOM; i++) {
        limb L = rand_limb(1.0);
        double d = urange(fabs(L.lab - L.lbc), L.lab + L.lbc);
        ik_vec3 t = vadd(L.a, vmul(rand_unit(), d));
        ik_vec3 pole = ik_v3(urange(-3, 3), urange(-3, 3), urange(-3, 3));
        check_reachable(&L, t, &pole, 1.0);
    }
}
END_TEST

START_TEST(test_random_scales)
{
    /* the same geometry from 1e-300 to 1e300: units are the caller's */
    static const double scales[] = {1e-300, 1e-150, 1e-6, 1e6, 1e150, 1e300};
    rng_state.s = 3;
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        for (int i = 0; i < 500; i++) {
            limb L = rand_limb(scales[s]);
            /* keep off the reach bounds by more than the rounding of t */
            double lo = fabs(L.lab - L.lbc), hi = L.lab + L.lbc;
            double d = urange(lo + 1e-9 * hi, hi * (1 - 1e-9));
            ik_vec3 t = vadd(L.a, vmul(rand_unit(), d));
            /* compare in units of the scale (squares would overflow) */
            ik_twobone_result r;
            ck_assert_int_eq(ik_twobone_solve(L.a, L.b, L.c, t, NULL, &r), IK_OK);
            double k = 1.0 / scales[s];
            ck_assert_double_eq_tol(vdist(vmul(r.b, k), vmul(L.a, k)), L.lab * k, 1e-12);
            ck_assert_double_eq_tol(vdist(vmul(r.c, k), vmul(r.b, k)), L.lbc * k, 1e-12);
            ck_assert(vfinite(r.b) && vfinite(r.c));
        }
    }
}
END_TEST

START_TEST(test_paths_agree)
{
    /* Lengths near 1 take the solver's fast path, lengths near 2^100 its
     * careful path (see ik_twobone.c). Scaling by a power of two is exact,
     * so both must give the same answer up to rounding, pole or not,
     * reachable or not. */
    rng_state.s = 5;
    const double k = ldexp(1.0, 100);
    for (int i = 0; i < 2000; i++) {
        limb L = rand_limb(1.0);
        ik_vec3 t = vadd(L.a, vmul(rand_unit(), urange(0, 2.2)));
        ik_vec3 pole = ik_v3(urange(-3, 3), urange(-3, 3), urange(-3, 3));
        const ik_vec3 *pp = (i & 1) ? &pole : NULL;
        ik_vec3 pole_k = vmul(pole, k);
        ik_twobone_result r1, r2;
        int s1 = ik_twobone_solve(L.a, L.b, L.c, t, pp, &r1);
        int s2 = ik_twobone_solve(vmul(L.a, k), vmul(L.b, k), vmul(L.c, k), vmul(t, k),
                                  pp ? &pole_k : NULL, &r2);
        ck_assert_int_eq(s1, s2);
        ck_assert_int_eq(r1.reach, r2.reach);
        assert_vec(r1.b, vmul(r2.b, 1 / k), 1e-12);
        assert_vec(r1.c, vmul(r2.c, 1 / k), 1e-12);
        ck_assert_double_eq_tol(r1.error, r2.error / k, 1e-12);
    }
}
END_TEST

/* ---- random unreachable targets --------------------------------------- */

START_TEST(test_random_unreachable)
{
    rng_state.s = 4;
    for (int i = 0; i < N_RANDOM; i++) {
        limb L = rand_limb(1.0);
        ik_vec3 dir = rand_unit();
        bool far = (i % 2 == 0) || fabs(L.lab - L.lbc) < 1e-3;
        double d = far ? (L.lab + L.lbc) * urange(1.001, 5.0)
                       : fabs(L.lab - L.lbc) * urange(0.01, 0.999);
        ik_vec3 t = vadd(L.a, vmul(dir, d));
        ik_twobone_result r;
        ck_assert_int_eq(ik_twobone_solve(L.a, L.b, L.c, t, NULL, &r), IK_EUNREACHABLE);
        ck_assert_int_eq(r.reach, far ? IK_REACH_TOO_FAR : IK_REACH_TOO_CLOSE);
        /* lengths kept, everything on the line a-t */
        ck_assert_double_eq_tol(vdist(r.b, L.a), L.lab, 1e-12);
        ck_assert_double_eq_tol(vdist(r.c, r.b), L.lbc, 1e-12);
        ck_assert_double_eq_tol(vlen(vcross(vsub(r.b, L.a), dir)), 0, 1e-12);
        ck_assert_double_eq_tol(vlen(vcross(vsub(r.c, L.a), dir)), 0, 1e-12);
        if (far) {
            /* fully extended towards the target */
            assert_vec(r.b, vadd(L.a, vmul(dir, L.lab)), 1e-12);
            assert_vec(r.c, vadd(L.a, vmul(dir, L.lab + L.lbc)), 1e-12);
            ck_assert_double_eq_tol(r.error, d - L.lab - L.lbc, 1e-12);
        } else {
            /* the foot at |l_ab - l_bc| towards the target; the longer bone
             * points towards it, the shorter away */
            assert_vec(r.c, vadd(L.a, vmul(dir, fabs(L.lab - L.lbc))), 1e-12);
            ik_vec3 longer = L.lab > L.lbc ? vsub(r.b, L.a) : vsub(r.c, r.b);
            ik_vec3 shorter = L.lab > L.lbc ? vsub(r.c, r.b) : vsub(r.b, L.a);
            ck_assert(vdot(longer, dir) > 0);
            ck_assert(vdot(shorter, dir) < 0);
            ck_assert_double_eq_tol(r.error, fabs(L.lab - L.lbc) - d, 1e-12);
        }
    }
}
END_TEST

/* A target on the edge of the reach computed the way a client computes it
 * (hip + (l_ab + l_bc) times a direction, or |l_ab - l_bc| times it) lands
 * a rounding error on either side: the limb meets it (stretched or
 * folded: the foot on the target and both bones their length, within
 * rounding), so the answer is IK_OK, not IK_EUNREACHABLE with an error of
 * 1e-16; on the fast path (lengths near 1) and the careful one (near
 * 2^100). A target a billionth of l_ab + l_bc past an edge stays out of
 * reach. */
START_TEST(test_reach_edge_rounding)
{
    rng_state.s = 6;
    for (int i = 0; i < N_RANDOM; i++) {
        const double k = (i & 4) ? ldexp(1.0, 100) : 1.0;
        limb L = rand_limb(k);
        const double sum = L.lab + L.lbc, dif = fabs(L.lab - L.lbc);
        const bool far = (i & 1) || dif < 1e-3 * k;
        ik_vec3 dir = rand_unit();
        for (int past = 0; past < 2; past++) {
            const double d = (far ? sum : dif) + (past ? (far ? 1e-9 : -1e-9) * sum : 0.0);
            ik_vec3 t = vadd(L.a, vmul(dir, d));
            ik_twobone_result r;
            int st = ik_twobone_solve(L.a, L.b, L.c, t, NULL, &r);
            if (past) {
                ck_assert_int_eq(st, IK_EUNREACHABLE);
                ck_assert_double_gt(vdist(r.c, t), 1e-10 * sum);
                continue;
            }
            ck_assert_msg(st == IK_OK, "%s, %s path: status %d, error %g", far ? "stretched" : "folded",
                          k > 1 ? "careful" : "fast", st, r.error / sum);
            ck_assert_double_le(vdist(r.c, t), 1e-12 * sum);
            ck_assert_double_eq_tol(vdist(r.b, L.a), L.lab, 1e-12 * sum);
            ck_assert_double_eq_tol(vdist(r.c, r.b), L.lbc, 1e-12 * sum);
        }
    }
}
END_TEST

/* ---- degenerate and hostile input ------------------------------------- */

START_TEST(test_target_on_root)
{
    ik_twobone_result r;
    /* equal bones, t == a: reachable; the seed's n = (1,0,0); the knee on
     * the circle of radius l around a perpendicular to x, nearest b. */
    ik_vec3 a = ik_v3(0, 0, 0), b = ik_v3(0.6, 0.8, 0), c = ik_v3(1.6, 0.8, 0);
    ck_assert_int_eq(ik_twobone_solve(a, b, c, a, NULL, &r), IK_OK);
    assert_vec(r.b, ik_v3(0, 1, 0), 1e-15);
    ck_assert(memcmp(&r.c, &a, sizeof a) == 0);
    /* unequal bones, t == a: too close along the seed's n = (1,0,0) */
    ck_assert_int_eq(ik_twobone_solve(a, ik_v3(0, 2, 0), ik_v3(0, 2, 1), a, NULL, &r),
                     IK_EUNREACHABLE);
    ck_assert_int_eq(r.reach, IK_REACH_TOO_CLOSE);
    assert_vec(r.b, ik_v3(-2, 0, 0), 1e-15);
    assert_vec(r.c, ik_v3(-1, 0, 0), 1e-15);
    ck_assert_double_eq_tol(r.error, 1, 1e-15);
    /* the foot already on the hip: c == a */
    ck_assert_int_eq(ik_twobone_solve(a, b, a, ik_v3(0.5, 0.5, 0.5), NULL, &r), IK_OK);
    ck_assert(vfinite(r.b));
}
END_TEST

START_TEST(test_knee_on_axis)
{
    /* b on the line a-t (straight limb bending): any perpendicular, lengths
     * kept, no NaN. */
    ik_vec3 a = ik_v3(0, 0, 0), b = ik_v3(1, 0, 0), c = ik_v3(2, 0, 0);
    ik_twobone_result r;
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(1.5, 0, 0), NULL, &r), IK_OK);
    ck_assert(vfinite(r.b));
    ck_assert_double_eq_tol(vdist(r.b, a), 1, 1e-15);
    ck_assert_double_eq_tol(vdist(r.b, r.c), 1, 1e-15);
    ck_assert_double_eq_tol(r.b.x, 0.75, 1e-15);
    /* a pole on the axis falls back to the current knee */
    b = ik_v3(0.5, 0.5, 0);
    c = ik_v3(1, 0, 0);
    ik_vec3 pole = ik_v3(5, 0, 0);
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(1, 0, 0), &pole, &r), IK_OK);
    assert_vec(r.b, b, 1e-15);
}
END_TEST

static void expect_einval(ik_vec3 a, ik_vec3 b, ik_vec3 c, ik_vec3 t, const ik_vec3 *pole)
{
    ik_twobone_result r, before;
    memset(&r, 0x5a, sizeof r);
    before = r;
    ck_assert_int_eq(ik_twobone_solve(a, b, c, t, pole, &r), IK_EINVAL);
    ck_assert(memcmp(&r, &before, sizeof r) == 0);
}

START_TEST(test_hostile)
{
    ik_vec3 a = ik_v3(0, 0, 0), b = ik_v3(0, 3, 0), c = ik_v3(0, 3, 4), t = ik_v3(5, 0, 0);
    double bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        for (int comp = 0; comp < 3; comp++) {
            ik_vec3 v[5] = {a, b, c, t, ik_v3(1, 1, 1)};
            for (int which = 0; which < 5; which++) {
                ik_vec3 w[5];
                memcpy(w, v, sizeof w);
                double *p = comp == 0 ? &w[which].x : comp == 1 ? &w[which].y : &w[which].z;
                *p = bad[k];
                expect_einval(w[0], w[1], w[2], w[3], which == 4 ? &w[4] : NULL);
            }
        }
    }
    /* zero-length bones, coincident points */
    expect_einval(a, a, c, t, NULL);
    expect_einval(a, b, b, t, NULL);
    expect_einval(a, a, a, a, NULL);
    /* differences that overflow */
    expect_einval(ik_v3(-1e308, 0, 0), ik_v3(1e308, 0, 0), ik_v3(1e308, 1, 0), t, NULL);
    ik_vec3 far_pole = ik_v3(-1e308, 0, 0);
    expect_einval(ik_v3(1e308, 0, 0), ik_v3(1e308, 1, 0), ik_v3(1e308, 1, 1), ik_v3(1e308, 0, 1),
                  &far_pole);
    expect_einval(ik_v3(1e308, 0, 0), b, c, ik_v3(-1e308, 0, 0), NULL);

    /* huge but representable: a valid answer */
    ik_twobone_result r;
    ck_assert_int_eq(ik_twobone_solve(ik_v3(0, 0, 0), ik_v3(0, 3e300, 0), ik_v3(0, 3e300, 4e300),
                                      ik_v3(5e300, 0, 0), NULL, &r),
                     IK_OK);
    assert_vec(vmul(r.b, 1e-300), ik_v3(1.8, 2.4, 0), 1e-14);
    /* tiny */
    ck_assert_int_eq(ik_twobone_solve(ik_v3(0, 0, 0), ik_v3(0, 3e-300, 0),
                                      ik_v3(0, 3e-300, 4e-300), ik_v3(5e-300, 0, 0), NULL, &r),
                     IK_OK);
    assert_vec(vmul(r.b, 1e300), ik_v3(1.8, 2.4, 0), 1e-14);
    /* wildly unequal bones: 1e-300 and 1 */
    ck_assert_int_eq(ik_twobone_solve(ik_v3(0, 0, 0), ik_v3(0, 1e-300, 0), ik_v3(1, 0, 0),
                                      ik_v3(0, 1, 0), NULL, &r),
                     IK_OK);
    ck_assert(vfinite(r.b) && vfinite(r.c));
    ck_assert_double_eq_tol(vdist(r.c, r.b), 1, 1e-15);
}
END_TEST

/* ik_twobone_plane_pole: the pole that keeps a limb's bend plane. With a
 * target on the current hip-foot line the knee comes back where it is;
 * for others the knee lies in the plane through the new hip-target line
 * nearest the old plane (normal along the old normal's part across that
 * line), on the same side, at the seed's circle. A limb bent by 1e-3 of
 * its length moved so that the nearest point of the circle to the knee
 * would put it on the other side keeps its side; a straight limb and a
 * target on the root give no pole (and leave *pole as it was). */
START_TEST(test_plane_pole)
{
    const ik_vec3 a = ik_v3(0, 0, 0), c = ik_v3(0, 0, -1);
    ik_vec3 b = ik_v3(0.3, 0, -0.5), pole;
    ik_twobone_result r, rn;
    /* target on the a-c line: the same knee as nearest-to-the-knee */
    ck_assert(ik_twobone_plane_pole(a, b, c, ik_v3(0, 0, -0.9), &pole));
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(0, 0, -0.9), &pole, &r), IK_OK);
    ck_assert_int_eq(ik_twobone_solve(a, b, c, ik_v3(0, 0, -0.9), NULL, &rn), IK_OK);
    ck_assert_double_lt(ik_vec3_dist(r.b, rn.b), 1e-12);
    /* random targets: the knee in the kept plane, on the same side */
    ik_rng rg = {77};
    const ik_vec3 N = ik_vec3_normalize(ik_vec3_cross(ik_vec3_sub(b, a), ik_vec3_sub(c, a)));
    for (int i = 0; i < 1000; i++) {
        ik_vec3 t = ik_vec3_scale(
            ik_v3(ik_rng_uniform(&rg, -1, 1), ik_rng_uniform(&rg, -1, 1), ik_rng_uniform(&rg, -1, 1)),
            0.9);
        if (ik_vec3_len(t) < 0.3 || ik_vec3_len(t) > 1.0)
            continue;
        if (!ik_twobone_plane_pole(a, b, c, t, &pole))
            continue;
        ck_assert_int_eq(ik_twobone_solve(a, b, c, t, &pole, &r), IK_OK);
        const ik_vec3 n = ik_vec3_normalize(ik_vec3_sub(a, t));
        const ik_vec3 want = ik_vec3_normalize(ik_vec3_cross(N, n)); /* the kept bend side */
        const ik_vec3 off = ik_vec3_reject(ik_vec3_sub(r.b, a), n);
        ck_assert_double_gt(ik_vec3_dot(ik_vec3_normalize(off), want), 1.0 - 1e-9);
    }
    /* nearly straight (1e-3 of the limb), the line turned back: nearest
     * flips the knee to the other side, the plane keeps it */
    b = ik_v3(1e-3, 0, -0.5);
    const ik_vec3 t = ik_v3(0.25, 0, -0.8); /* the line tilts towards the knee */
    ck_assert(ik_twobone_plane_pole(a, b, c, t, &pole));
    ck_assert_int_eq(ik_twobone_solve(a, b, c, t, &pole, &r), IK_OK);
    ck_assert_int_eq(ik_twobone_solve(a, b, c, t, NULL, &rn), IK_OK);
    const ik_vec3 n = ik_vec3_normalize(ik_vec3_sub(a, t)), side = ik_vec3_cross(ik_v3(0, 1, 0), n);
    ck_assert_double_gt(ik_vec3_dot(ik_vec3_reject(ik_vec3_sub(r.b, a), n), side), 0.0);
    ck_assert_double_lt(ik_vec3_dot(ik_vec3_reject(ik_vec3_sub(rn.b, a), n), side), 0.0);
    /* no pole: straight, target on the root, non-finite */
    const ik_vec3 keep = ik_v3(7, 7, 7);
    pole = keep;
    ck_assert(!ik_twobone_plane_pole(a, ik_v3(0, 0, -0.5), c, t, &pole));
    ck_assert(!ik_twobone_plane_pole(a, ik_v3(1e-6, 0, -0.5), c, t, &pole));
    ck_assert(!ik_twobone_plane_pole(a, ik_v3(0.3, 0, -0.5), c, a, &pole));
    ck_assert(!ik_twobone_plane_pole(a, ik_v3(NAN, 0, -0.5), c, t, &pole));
    ck_assert(!ik_twobone_plane_pole(a, ik_v3(0.3, 0, -0.5), c, t, NULL));
    ck_assert_double_eq(pole.x, 7.0);
    ck_assert_double_eq(ik_vec3_dist(pole, keep), 0.0);
}
END_TEST

static Suite *twobone_suite(void)
{
    Suite *s = suite_create("ik_twobone");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_right_angle_by_hand);
    tcase_add_test(tc, test_unreachable_by_hand);
    tcase_add_test(tc, test_random_reachable);
    tcase_add_test(tc, test_random_pole);
    tcase_add_test(tc, test_random_scales);
    tcase_add_test(tc, test_paths_agree);
    tcase_add_test(tc, test_random_unreachable);
    tcase_add_test(tc, test_reach_edge_rounding);
    tcase_add_test(tc, test_target_on_root);
    tcase_add_test(tc, test_knee_on_axis);
    tcase_add_test(tc, test_hostile);
    tcase_add_test(tc, test_plane_pole);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(twobone_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
