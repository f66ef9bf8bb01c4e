/*
 * anim_cases.h: the checks FABRIK and CCD share (ik_anim.h is their common
 * contract), included by test_ik_fabrik.c and test_ik_ccd.c, each of which
 * defines ANIM_SOLVE (the solver under test) and ANIM_NAME before including
 * it and adds its own solver-specific cases.
 *
 * Every result is verified from the positions it returns, never against
 * another run of the solver: the end effector against the target, each bone
 * length against the input, the root against the input root, the bend of
 * every joint against its limit (ik_anim_bend and an independent formula),
 * the rotations against the bone directions they must produce.
 */
#ifndef ANIM_CASES_H
#define ANIM_CASES_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_anim.h"
#include "solver/ik_math.h"
#include "solver/ik_status.h"

#define MAXJ 16

/* ---- deterministic randomness ----------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static inline double rnd(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (double)(r->s >> 11) / 9007199254740992.0;
}

static inline double rnd_in(rng *r, double lo, double hi)
{
    return lo + (hi - lo) * rnd(r);
}

static inline ik_vec3 rnd_unit(rng *r)
{
    for (;;) {
        ik_vec3 v = ik_v3(rnd_in(r, -1, 1), rnd_in(r, -1, 1), rnd_in(r, -1, 1));
        double l = ik_vec3_len(v);
        if (l > 0.1 && l <= 1.0)
            return ik_vec3_scale(v, 1.0 / l);
    }
}

/* A random chain of n joints: random lengths, random directions. */
static inline void rnd_chain(rng *r, size_t n, ik_vec3 *p, double *len)
{
    p[0] = ik_v3(rnd_in(r, -2, 2), rnd_in(r, -2, 2), rnd_in(r, -2, 2));
    for (size_t i = 0; i + 1 < n; i++) {
        len[i] = rnd_in(r, 0.2, 1.5);
        p[i + 1] = ik_vec3_madd(p[i], rnd_unit(r), len[i]);
    }
}

/* The end effector of the same bones laid out along random directions: a
 * target the chain can reach by construction. */
static inline ik_vec3 rnd_reachable(rng *r, size_t n, ik_vec3 root, const double *len)
{
    ik_vec3 e = root;
    for (size_t i = 0; i + 1 < n; i++)
        e = ik_vec3_madd(e, rnd_unit(r), len[i]);
    return e;
}

static inline double chain_total(size_t n, const double *len)
{
    double t = 0;
    for (size_t i = 0; i + 1 < n; i++)
        t += len[i];
    return t;
}

/* ---- checks ----------------------------------------------------------- */

static inline void check_finite(const ik_vec3 *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert(ik_vec3_isfinite(p[i]));
}

/* Lengths kept to 1e-9 relative, root exactly where it was. */
static inline void check_shape(const ik_vec3 *in, const ik_vec3 *out, size_t n)
{
    check_finite(out, n);
    ck_assert(out[0].x == in[0].x && out[0].y == in[0].y && out[0].z == in[0].z);
    for (size_t i = 0; i + 1 < n; i++) {
        double l0 = ik_vec3_dist(in[i + 1], in[i]);
        double l1 = ik_vec3_dist(out[i + 1], out[i]);
        ck_assert_double_eq_tol(l1, l0, 1e-9 * l0);
    }
}

/* rot_world[i] takes the input bone direction to the output one;
 * rot_world[i] = rot_world[i-1] * rot_local[i]. */
static inline void check_rotations(const ik_vec3 *in, const ik_vec3 *out, size_t n,
                                   const ik_quat *rw, const ik_quat *rl)
{
    for (size_t i = 0; i + 1 < n; i++) {
        ik_vec3 d0 = ik_vec3_normalize(ik_vec3_sub(in[i + 1], in[i]));
        ik_vec3 d1 = ik_vec3_normalize(ik_vec3_sub(out[i + 1], out[i]));
        ik_vec3 r = ik_quat_rotate(rw[i], d0);
        ck_assert_double_eq_tol(r.x, d1.x, 1e-9);
        ck_assert_double_eq_tol(r.y, d1.y, 1e-9);
        ck_assert_double_eq_tol(r.z, d1.z, 1e-9);
        /* minimal: its angle is the angle between the directions */
        double ang = 2.0 * atan2(sqrt(rw[i].x * rw[i].x + rw[i].y * rw[i].y + rw[i].z * rw[i].z),
                                 fabs(rw[i].w));
        ck_assert_double_eq_tol(ang, ik_acos_clamped(ik_vec3_dot(d0, d1)), 1e-6);
        ik_quat parent = i ? rw[i - 1] : ik_quat_identity();
        ik_quat w = ik_quat_mul(parent, rl[i]);
        ck_assert_double_le(ik_quat_angle_between(w, rw[i]), 1e-9);
    }
}

/* The bend at joint i computed here, independently of ik_anim_bend. */
static inline double bend_here(const ik_vec3 *p, size_t i, ik_vec3 root_dir)
{
    ik_vec3 a = i ? ik_vec3_sub(p[i], p[i - 1]) : root_dir;
    ik_vec3 b = ik_vec3_sub(p[i + 1], p[i]);
    double c = ik_vec3_dot(a, b) / (ik_vec3_len(a) * ik_vec3_len(b));
    return acos(c > 1 ? 1 : (c < -1 ? -1 : c));
}

/* ---- shared cases ----------------------------------------------------- */

START_TEST(test_reachable_random)
{
    rng r = {0x9E3779B97F4A7C15ull};
    unsigned char work[MAXJ * 128];
    int max_it = 0;
    long sum_it = 0;
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = 4 + (size_t)(rnd(&r) * 8); /* 3..10 bones */
        if (n > 11)
            n = 11;
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        ik_quat rw[MAXJ], rl[MAXJ];
        rnd_chain(&r, n, p, len);
        ik_vec3 t = rnd_reachable(&r, n, p[0], len);
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.max_iterations = ANIM_RANDOM_ITERATIONS;
        o.tolerance = 1e-6 * chain_total(n, len);
        ik_anim_result res;
        int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, rw, rl, &res);
        ck_assert_msg(st == IK_OK, "trial %d: status %s error %g after %d iterations", trial,
                      ik_status_name(st), res.error, res.iterations);
        ck_assert_int_eq(res.status, st);
        ck_assert_double_le(ik_vec3_dist(out[n - 1], t), o.tolerance);
        ck_assert_double_eq_tol(res.error, ik_vec3_dist(out[n - 1], t), 1e-15);
        ck_assert_int_le(res.iterations, o.max_iterations);
        check_shape(p, out, n);
        check_rotations(p, out, n, rw, rl);
        max_it = res.iterations > max_it ? res.iterations : max_it;
        sum_it += res.iterations;
    }
    fprintf(stderr, "%s: 3000 random reachable targets, mean %.1f, max %d iterations\n", ANIM_NAME,
            (double)sum_it / 3000.0, max_it);
}
END_TEST

START_TEST(test_unreachable_extended)
{
    rng r = {12345};
    unsigned char work[MAXJ * 128];
    for (int trial = 0; trial < 1000; trial++) {
        size_t n = 2 + (size_t)(rnd(&r) * 10);
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        rnd_chain(&r, n, p, len);
        double total = chain_total(n, len);
        ik_vec3 dir = rnd_unit(&r);
        double dist = total * rnd_in(&r, 1.0001, 3.0);
        ik_vec3 t = ik_vec3_madd(p[0], dir, dist);
        ik_anim_result res;
        int st = ANIM_SOLVE(p, n, t, NULL, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_eq(st, IK_EUNREACHABLE);
        check_shape(p, out, n);
        double s = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            s += len[i];
            ik_vec3 want = ik_vec3_madd(p[0], dir, s);
            ck_assert_double_le(ik_vec3_dist(out[i + 1], want), 1e-9 * total);
        }
        ck_assert_double_eq_tol(res.error, dist - total, 1e-9 * dist);
    }
}
END_TEST

/* Two-bone limbs: with a pole, the knee ends on the pole's side of the
 * root-target line, and with the pole on the other side, on that side. */
START_TEST(test_pole_side)
{
    rng r = {777};
    unsigned char work[MAXJ * 128];
    int checked = 0;
    for (int trial = 0; trial < 2000; trial++) {
        size_t n = 3;
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        rnd_chain(&r, n, p, len);
        double total = chain_total(n, len);
        ik_vec3 t = rnd_reachable(&r, n, p[0], len);
        double reach = ik_vec3_dist(t, p[0]);
        if (reach > 0.95 * total || reach < fabs(len[0] - len[1]) + 0.05 * total)
            continue; /* a limb nearly straight or folded has no clear side */
        ik_vec3 axis = ik_vec3_normalize(ik_vec3_sub(t, p[0]));
        ik_vec3 side = ik_vec3_any_perpendicular(axis);
        side = ik_quat_rotate(ik_quat_from_axis_angle(axis, rnd_in(&r, 0, 2 * IK_PI)), side);
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            ik_vec3 mid = ik_vec3_lerp(p[0], t, rnd_in(&r, 0.2, 0.8));
            ik_vec3 pole = ik_vec3_madd(mid, side, sgn * total * rnd_in(&r, 0.5, 3));
            ik_anim_options o;
            ik_anim_options_default(&o);
            o.pole = &pole;
            o.max_iterations = ANIM_RANDOM_ITERATIONS;
            o.tolerance = 1e-6 * total;
            ik_anim_result res;
            int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
            ck_assert_msg(st == IK_OK, "trial %d: %s, error %g after %d iterations", trial,
                          ik_status_name(st), res.error, res.iterations);
            check_shape(p, out, n);
            ik_vec3 off = ik_vec3_reject(ik_vec3_sub(out[1], p[0]), axis);
            ik_vec3 want = ik_vec3_reject(ik_vec3_sub(pole, p[0]), axis);
            ck_assert_msg(ik_vec3_dot(off, want) > 0, "trial %d: knee off the pole side", trial);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 1000);
}
END_TEST

/* Longer chains with a pole: the target is still reached, and the last
 * interior joint (the one the final pole step turns last, so no later turn
 * moves its neighbours) lies on the pole side of the line through its
 * neighbours. */
START_TEST(test_pole_long_chains)
{
    rng r = {4242};
    unsigned char work[MAXJ * 128];
    for (int trial = 0; trial < 500; trial++) {
        size_t n = 4 + (size_t)(rnd(&r) * 7);
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        rnd_chain(&r, n, p, len);
        double total = chain_total(n, len);
        ik_vec3 t = rnd_reachable(&r, n, p[0], len);
        ik_vec3 pole = ik_vec3_madd(p[0], rnd_unit(&r), 3 * total);
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.pole = &pole;
        o.max_iterations = ANIM_RANDOM_ITERATIONS;
        o.tolerance = 1e-6 * total;
        ik_anim_result res;
        int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_msg(st == IK_OK, "trial %d: %s", trial, ik_status_name(st));
        check_shape(p, out, n);
        size_t j = n - 2;
        ik_vec3 nrm = ik_vec3_normalize(ik_vec3_sub(out[j + 1], out[j - 1]));
        ik_vec3 off = ik_vec3_reject(ik_vec3_sub(out[j], out[j - 1]), nrm);
        ik_vec3 want = ik_vec3_reject(ik_vec3_sub(pole, out[j - 1]), nrm);
        if (ik_vec3_len(off) > 1e-6 * total && ik_vec3_len(want) > 1e-6 * total)
            ck_assert_double_ge(ik_vec3_dot(off, want), 0);
    }
}
END_TEST

/* Random cone limits on every joint: after the solve every bend is within
 * its limit, whatever the status; targets made by a pose that obeys the
 * limits are reached most of the time. */
START_TEST(test_cone_limits)
{
    rng r = {31337};
    unsigned char work[MAXJ * 128];
    int ok = 0, total_trials = 1000;
    for (int trial = 0; trial < total_trials; trial++) {
        size_t n = 4 + (size_t)(rnd(&r) * 7);
        ik_vec3 p[MAXJ], out[MAXJ], q[MAXJ];
        double len[MAXJ];
        ik_anim_limit lim[MAXJ];
        rnd_chain(&r, n, p, len);
        for (size_t i = 0; i + 1 < n; i++)
            lim[i] = ik_anim_limit_cone(rnd_in(&r, 0.2, 1.5));
        if (trial % 4 == 0)
            lim[0] = ik_anim_limit_none();
        /* a pose obeying the limits, relative to bone 0's input direction */
        ik_vec3 parent = ik_vec3_normalize(ik_vec3_sub(p[1], p[0]));
        q[0] = p[0];
        for (size_t i = 0; i + 1 < n; i++) {
            double m = fmin(lim[i].max_bend, IK_PI);
            ik_vec3 ax = ik_vec3_any_perpendicular(parent);
            ax = ik_quat_rotate(ik_quat_from_axis_angle(parent, rnd_in(&r, 0, 2 * IK_PI)), ax);
            ik_vec3 d = ik_quat_rotate(ik_quat_from_axis_angle(ax, m * rnd(&r)), parent);
            q[i + 1] = ik_vec3_madd(q[i], d, len[i]);
            parent = d;
        }
        ik_vec3 t = q[n - 1];
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.limits = lim;
        o.max_iterations = 500;
        o.tolerance = 1e-5 * chain_total(n, len);
        ik_anim_result res;
        int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert(st == IK_OK || st == IK_ENOTCONV);
        ok += st == IK_OK;
        check_shape(p, out, n);
        ik_vec3 root_dir = ik_vec3_sub(p[1], p[0]);
        for (size_t i = 0; i + 1 < n; i++) {
            double b = bend_here(out, i, root_dir);
            ck_assert_double_eq_tol(b, ik_anim_bend(out, n, i, root_dir), 1e-6);
            ck_assert_msg(b <= lim[i].max_bend + 1e-9, "trial %d joint %zu bend %g > %g", trial, i,
                          b, lim[i].max_bend);
        }
    }
    fprintf(stderr, "%s: cone limits, %d of %d limit-respecting targets reached\n", ANIM_NAME, ok,
            total_trials);
    ck_assert_int_ge(ok, total_trials * ANIM_CONE_SUCCESS_PERCENT / 100);
}
END_TEST

/* Limits with the target out of reach, and a root limit against an explicit
 * root_direction: the limits still hold. */
START_TEST(test_cone_limits_unreachable)
{
    rng r = {99};
    unsigned char work[MAXJ * 128];
    for (int trial = 0; trial < 500; trial++) {
        size_t n = 3 + (size_t)(rnd(&r) * 8);
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        ik_anim_limit lim[MAXJ];
        rnd_chain(&r, n, p, len);
        for (size_t i = 0; i + 1 < n; i++)
            lim[i] = ik_anim_limit_cone(rnd_in(&r, 0.0, 1.0));
        ik_vec3 rd = rnd_unit(&r);
        ik_vec3 t = ik_vec3_madd(p[0], rnd_unit(&r), chain_total(n, len) * rnd_in(&r, 0.1, 2));
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.limits = lim;
        o.root_direction = ik_vec3_scale(rd, 3.0); /* need not be unit */
        ik_anim_result res;
        int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert(st == IK_OK || st == IK_ENOTCONV || st == IK_EUNREACHABLE);
        check_shape(p, out, n);
        for (size_t i = 0; i + 1 < n; i++)
            ck_assert_double_le(bend_here(out, i, rd), lim[i].max_bend + 1e-9);
    }
}
END_TEST

/* max_bend 0 everywhere: the chain is straight along root_direction. */
START_TEST(test_cone_zero)
{
    ik_vec3 p[4] = {{0, 0, 0}, {1, 1, 0}, {1, 2, 0}, {2, 2, 1}};
    ik_vec3 out[4];
    ik_anim_limit lim[3] = {ik_anim_limit_cone(0), ik_anim_limit_cone(0), ik_anim_limit_cone(0)};
    unsigned char work[1024];
    ik_anim_options o;
    ik_anim_options_default(&o);
    o.limits = lim;
    o.root_direction = ik_v3(0, 0, 1);
    ik_anim_result res;
    int st = ANIM_SOLVE(p, 4, ik_v3(3, 0, 0), &o, work, sizeof work, out, NULL, NULL, &res);
    ck_assert(st == IK_ENOTCONV || st == IK_EUNREACHABLE);
    check_shape(p, out, 4);
    for (int i = 1; i < 4; i++) {
        ck_assert_double_eq_tol(out[i].x, 0, 1e-9);
        ck_assert_double_eq_tol(out[i].y, 0, 1e-9);
    }
}
END_TEST

START_TEST(test_options_honoured)
{
    rng r = {2024};
    unsigned char work[MAXJ * 128];
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 5;
        ik_vec3 p[MAXJ], out[MAXJ];
        double len[MAXJ];
        rnd_chain(&r, n, p, len);
        double total = chain_total(n, len);
        ik_vec3 t = rnd_reachable(&r, n, p[0], len);
        double d0 = ik_vec3_dist(p[n - 1], t);
        ik_anim_options o;
        ik_anim_options_default(&o);
        ik_anim_result res;
        /* one iteration: at most one, and the status says whether it was enough */
        o.max_iterations = 1;
        o.tolerance = 1e-12 * total;
        int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_le(res.iterations, 1);
        if (d0 > o.tolerance)
            ck_assert_int_eq(res.iterations, 1);
        ck_assert(st == IK_OK || st == IK_ENOTCONV);
        ck_assert_int_eq(st == IK_OK, res.error <= o.tolerance);
        /* a huge tolerance: done without iterating */
        o.max_iterations = 0; /* default */
        o.tolerance = d0 * 1.01 + 1e-300;
        st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_eq(st, IK_OK);
        ck_assert_int_eq(res.iterations, 0);
        for (size_t i = 0; i < n; i++)
            ck_assert(out[i].x == p[i].x && out[i].y == p[i].y && out[i].z == p[i].z);
        /* tolerance 0 means the default, 1e-4 of the total length */
        o.tolerance = 0;
        o.max_iterations = ANIM_RANDOM_ITERATIONS;
        st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_eq(st, IK_OK);
        ck_assert_double_le(res.error, 1e-4 * total);
        /* a tight tolerance is met too */
        o.tolerance = 1e-10 * total;
        st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_eq(st, IK_OK);
        ck_assert_double_le(ik_vec3_dist(out[n - 1], t), 1e-10 * total);
        ck_assert_int_le(res.iterations, ANIM_RANDOM_ITERATIONS);
    }
    /* default iterations when opt is NULL */
    {
        ik_vec3 p[3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}}, out[3];
        ik_anim_result res;
        ANIM_SOLVE(p, 3, ik_v3(0.3, 1.2, 0.4), NULL, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_le(res.iterations, IK_ANIM_DEFAULT_ITERATIONS);
        check_shape(p, out, 3);
    }
}
END_TEST

/* Every invalid input of ik_anim.h: IK_EINVAL (or IK_ENOSPC) and the
 * outputs untouched. */
START_TEST(test_degenerate_input)
{
    ik_vec3 p[4] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {1, 1, 1}};
    ik_vec3 out[4];
    ik_quat rw[3], rl[3];
    unsigned char work[1024];
    ik_anim_result res;
    ik_vec3 t = ik_v3(0.5, 0.5, 0.5);
    const ik_vec3 sentinel = {-7, -7, -7};
#define RESET()                                                                                    \
    do {                                                                                           \
        for (int k_ = 0; k_ < 4; k_++)                                                             \
            out[k_] = sentinel;                                                                    \
        memset(&res, 0x55, sizeof res);                                                            \
    } while (0)
#define UNTOUCHED()                                                                                \
    do {                                                                                           \
        for (int k_ = 0; k_ < 4; k_++)                                                             \
            ck_assert(out[k_].x == -7 && out[k_].y == -7 && out[k_].z == -7);                      \
        ck_assert_int_eq(res.iterations, 0);                                                       \
        ck_assert_double_eq(res.error, 0);                                                         \
    } while (0)
    RESET();
    ck_assert_int_eq(ANIM_SOLVE(p, 1, t, NULL, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
    UNTOUCHED();
    ck_assert_int_eq(res.status, IK_EINVAL);
    ck_assert_int_eq(ANIM_SOLVE(p, 0, t, NULL, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
    ck_assert_int_eq(ANIM_SOLVE(NULL, 4, t, NULL, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
    ck_assert_int_eq(ANIM_SOLVE(p, 4, t, NULL, work, sizeof work, NULL, rw, rl, &res), IK_EINVAL);
    ck_assert_int_eq(ANIM_SOLVE(p, 4, t, NULL, work, sizeof work, out, rw, rl, NULL), IK_EINVAL);
    UNTOUCHED();
    /* non-finite numbers */
    double bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++) {
        ik_vec3 q[4];
        memcpy(q, p, sizeof q);
        q[2].y = bad[b];
        RESET();
        ck_assert_int_eq(ANIM_SOLVE(q, 4, t, NULL, work, sizeof work, out, rw, rl, &res),
                         IK_EINVAL);
        UNTOUCHED();
        ck_assert_int_eq(
            ANIM_SOLVE(p, 4, ik_v3(0, bad[b], 0), NULL, work, sizeof work, out, rw, rl, &res),
            IK_EINVAL);
        UNTOUCHED();
        ik_vec3 pole = ik_v3(bad[b], 0, 0);
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.pole = &pole;
        ck_assert_int_eq(ANIM_SOLVE(p, 4, t, &o, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
        ik_anim_options_default(&o);
        o.root_direction = ik_v3(0, 0, bad[b]);
        ck_assert_int_eq(ANIM_SOLVE(p, 4, t, &o, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
        ik_anim_options_default(&o);
        o.tolerance = bad[b];
        ck_assert_int_eq(ANIM_SOLVE(p, 4, t, &o, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
        ik_anim_limit lim[3] = {ik_anim_limit_none(), ik_anim_limit_cone(bad[b] < 0 ? -1 : NAN),
                                ik_anim_limit_none()};
        ik_anim_options_default(&o);
        o.limits = lim;
        ck_assert_int_eq(ANIM_SOLVE(p, 4, t, &o, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
        UNTOUCHED();
    }
    /* huge coordinates whose differences overflow */
    {
        ik_vec3 q[3] = {{-1e308, 0, 0}, {1e308, 0, 0}, {1e308, 1, 0}};
        RESET();
        ck_assert_int_eq(ANIM_SOLVE(q, 3, t, NULL, work, sizeof work, out, rw, rl, &res),
                         IK_EINVAL);
        UNTOUCHED();
    }
    /* zero-length bones: coincident joints anywhere */
    for (int k = 0; k < 3; k++) {
        ik_vec3 q[4];
        memcpy(q, p, sizeof q);
        q[k + 1] = q[k];
        RESET();
        ck_assert_int_eq(ANIM_SOLVE(q, 4, t, NULL, work, sizeof work, out, rw, rl, &res),
                         IK_EINVAL);
        UNTOUCHED();
    }
    {
        ik_vec3 q[3] = {{0, 0, 0}, {1, 0, 0}, {1, 1e-14, 0}};
        ck_assert_int_eq(ANIM_SOLVE(q, 3, t, NULL, work, sizeof work, out, rw, rl, &res),
                         IK_EINVAL);
    }
    /* negative iterations / tolerance */
    {
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.max_iterations = -1;
        ck_assert_int_eq(ANIM_SOLVE(p, 4, t, &o, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
        ik_anim_options_default(&o);
        o.tolerance = -1e-3;
        ck_assert_int_eq(ANIM_SOLVE(p, 4, t, &o, work, sizeof work, out, rw, rl, &res), IK_EINVAL);
    }
    /* workspace */
    ck_assert_uint_eq(ik_anim_workspace_size(1), 0);
    ck_assert_uint_gt(ik_anim_workspace_size(4), 0);
    ck_assert_uint_eq(ik_anim_workspace_size(SIZE_MAX), SIZE_MAX);
    RESET();
    ck_assert_int_eq(
        ANIM_SOLVE(p, 4, t, NULL, work, ik_anim_workspace_size(4) - 1, out, rw, rl, &res),
        IK_ENOSPC);
    UNTOUCHED();
    ck_assert_int_eq(res.status, IK_ENOSPC);
    ck_assert_int_eq(ANIM_SOLVE(p, 4, t, NULL, NULL, 1024, out, rw, rl, &res), IK_ENOSPC);
    UNTOUCHED();
    ck_assert_int_ne(ANIM_SOLVE(p, 4, t, NULL, work, ik_anim_workspace_size(4), out, rw, rl, &res),
                     IK_ENOSPC);
#undef RESET
#undef UNTOUCHED
}
END_TEST

/* A target on the root: solved when the chain can fold onto it, the closest
 * fold otherwise; never NaN. */
START_TEST(test_target_on_root)
{
    unsigned char work[1024];
    ik_anim_result res;
    ik_vec3 out[4];
    /* equal bones fold exactly; start bent and start straight */
    ik_vec3 a[3] = {{1, 2, 3}, {2, 2, 3}, {2, 3, 3}};
    ik_vec3 b[3] = {{1, 2, 3}, {2, 2, 3}, {3, 2, 3}};
    ik_vec3 *chains[2] = {a, b};
    for (int c = 0; c < 2; c++) {
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.max_iterations = 200;
        int st =
            ANIM_SOLVE(chains[c], 3, chains[c][0], &o, work, sizeof work, out, NULL, NULL, &res);
        check_shape(chains[c], out, 3);
        ck_assert_int_eq(st, IK_OK);
        ck_assert_double_le(ik_vec3_dist(out[2], chains[c][0]), 1e-4 * 2);
    }
    /* a long first bone cannot fold onto the root: closest is 1 - 0.25 away */
    ik_vec3 d[3] = {{0, 0, 0}, {1, 0, 0}, {1, 0.25, 0}};
    int st = ANIM_SOLVE(d, 3, d[0], NULL, work, sizeof work, out, NULL, NULL, &res);
    check_shape(d, out, 3);
    ck_assert_int_eq(st, IK_EUNREACHABLE);
    ck_assert_double_eq_tol(res.error, 0.75, 1e-3);
}
END_TEST

/* A straight chain with the target on its own line, nearer than the tip:
 * the solvers must bend out of the line. */
START_TEST(test_straight_chain_on_line)
{
    unsigned char work[1024];
    ik_anim_result res;
    for (size_t n = 3; n <= 8; n++) {
        ik_vec3 p[MAXJ], out[MAXJ];
        for (size_t i = 0; i < n; i++)
            p[i] = ik_v3(0, 0, (double)i);
        ik_vec3 t = ik_v3(0, 0, 0.5 * (double)(n - 1));
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.max_iterations = ANIM_RANDOM_ITERATIONS;
        int st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_msg(st == IK_OK, "n %zu: %s error %g", n, ik_status_name(st), res.error);
        check_shape(p, out, n);
        /* with a pole the bend goes its way */
        ik_vec3 pole = ik_v3(0, 5, 1);
        o.pole = &pole;
        st = ANIM_SOLVE(p, n, t, &o, work, sizeof work, out, NULL, NULL, &res);
        ck_assert_int_eq(st, IK_OK);
        check_shape(p, out, n);
        ck_assert_double_gt(out[1].y + out[n / 2].y, 0);
    }
}
END_TEST

/* Solving in place (out == joints) gives the same as solving out of place. */
START_TEST(test_in_place)
{
    rng r = {5};
    unsigned char work[MAXJ * 128];
    for (int trial = 0; trial < 100; trial++) {
        size_t n = 6;
        ik_vec3 p[MAXJ], q[MAXJ], out[MAXJ];
        double len[MAXJ];
        rnd_chain(&r, n, p, len);
        memcpy(q, p, sizeof q);
        ik_vec3 t = rnd_reachable(&r, n, p[0], len);
        ik_anim_result r1, r2;
        ANIM_SOLVE(p, n, t, NULL, work, sizeof work, out, NULL, NULL, &r1);
        ANIM_SOLVE(q, n, t, NULL, work, sizeof work, q, NULL, NULL, &r2);
        ck_assert_int_eq(r1.status, r2.status);
        for (size_t i = 0; i < n; i++)
            ck_assert(out[i].x == q[i].x && out[i].y == q[i].y && out[i].z == q[i].z);
        ck_assert_double_le(ik_vec3_dist(out[n - 1], t), ik_vec3_dist(p[n - 1], t) + 1e-12);
    }
}
END_TEST

static inline void add_anim_cases(TCase *tc)
{
    tcase_add_test(tc, test_reachable_random);
    tcase_add_test(tc, test_unreachable_extended);
    tcase_add_test(tc, test_pole_side);
    tcase_add_test(tc, test_pole_long_chains);
    tcase_add_test(tc, test_cone_limits);
    tcase_add_test(tc, test_cone_limits_unreachable);
    tcase_add_test(tc, test_cone_zero);
    tcase_add_test(tc, test_options_honoured);
    tcase_add_test(tc, test_degenerate_input);
    tcase_add_test(tc, test_target_on_root);
    tcase_add_test(tc, test_straight_chain_on_line);
    tcase_add_test(tc, test_in_place);
}

#endif /* ANIM_CASES_H */
