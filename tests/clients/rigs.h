/*
 * rigs.h: the rigs the client library's live tests solve, and the geometry
 * that checks their answers independently of ikd: a two-bone leg (its hip
 * and both bone lengths kept, its foot on the target), a three-joint arm
 * registered as a "joints" chain with this file's own forward kinematics,
 * and a two-link planar arm (seed 000) with its own.
 */
#ifndef TESTS_CLIENTS_RIGS_H
#define TESTS_CLIENTS_RIGS_H

#include <check.h>
#include <math.h>

#include <ikd/client.h>

static const char *const LEG __attribute__((unused)) =
    "{\"kind\":\"bones\",\"positions\":[[0.0,0.0,1.0],[0.1,0.0,0.55],[0.0,0.0,0.1]]}";
__attribute__((unused)) static const double HIP[3] = {0, 0, 1}, KNEE[3] = {0.1, 0, 0.55},
                                            FOOT[3] = {0, 0, 0.1};

static inline double dist(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

/* A reachable target for the leg, from a fixed sequence. */
static inline void leg_target(int i, double out[3])
{
    double a = 0.37 * i, r = 0.3 + 0.25 * (0.5 + 0.5 * sin(1.3 * i));
    out[0] = r * cos(a) * 0.6;
    out[1] = r * sin(a) * 0.6;
    out[2] = 1.0 - r * 0.8 - 0.1;
    /* within reach: |target - hip| < 0.92 */
    double d = dist(out, HIP);
    if (d > 0.85)
        for (int k = 0; k < 3; k++)
            out[k] = HIP[k] + (out[k] - HIP[k]) * 0.85 / d;
}

/* The leg's answer kept the hip and the bones and reached the target. */
static inline void check_leg(const ikd_result *r, const double *target)
{
    ck_assert_msg(r != NULL, "the leg's target answered with an error");
    ck_assert_msg(r->status == IKD_STATUS_SUCCESS, "status %s", r->status_text);
    ck_assert_uint_eq(r->position_count, 3);
    ck_assert_int_eq(r->position_dim, 3);
    const double *p = r->positions;
    ck_assert_double_eq_tol(dist(p, HIP), 0, 1e-9);
    ck_assert_double_eq_tol(dist(p, p + 3), dist(HIP, KNEE), 1e-9);
    ck_assert_double_eq_tol(dist(p + 3, p + 6), dist(KNEE, FOOT), 1e-9);
    ck_assert_double_eq_tol(dist(p + 6, target), 0, 1e-9);
}

/* ---- a three-joint arm and its forward kinematics ------------------------ */

static const char *const ARM __attribute__((unused)) =
    "{\"kind\":\"joints\",\"joints\":["
    "{\"name\":\"pan\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0,0.3]},\"axis\":[0,0,1],"
    "\"limits\":{\"lower\":-3,\"upper\":3}},"
    "{\"name\":\"lift\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0,0.1]},\"axis\":[0,1,0],"
    "\"limits\":{\"lower\":-2,\"upper\":2}},"
    "{\"name\":\"elbow\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0,0.4]},\"axis\":[0,1,0],"
    "\"limits\":{\"lower\":-2.5,\"upper\":2.5}},"
    "{\"name\":\"tool\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0,0,0.35]}}]}";
__attribute__((unused)) static const double ARM_LO[3] = {-3, -2, -2.5}, ARM_HI[3] = {3, 2, 2.5};

/* p = o1 + Rz(q0) (o2 + Ry(q1) (o3 + Ry(q2) o4)) */
static inline void arm_fk(const double *q, double out[3])
{
    double x = 0, z = 0.35; /* o4, in the elbow's frame */
    double c = cos(q[2]), s = sin(q[2]);
    double x2 = c * x + s * z, z2 = -s * x + c * z + 0.4;
    c = cos(q[1]);
    s = sin(q[1]);
    double x1 = c * x2 + s * z2, z1 = -s * x2 + c * z2 + 0.1;
    c = cos(q[0]);
    s = sin(q[0]);
    out[0] = c * x1;
    out[1] = s * x1;
    out[2] = z1 + 0.3;
}

/* ---- a two-link planar arm (seed 000) ------------------------------------- */

static const char *const PLANAR __attribute__((unused)) =
    "{\"kind\":\"planar\",\"lengths\":[1.0,0.8]}";

/* The tip of the planar arm at joints q: l1 (cos q0, sin q0) + l2 (cos(q0 + q1), sin(q0 + q1)). */
static inline void planar_fk(const double *q, double out[2])
{
    out[0] = 1.0 * cos(q[0]) + 0.8 * cos(q[0] + q[1]);
    out[1] = 1.0 * sin(q[0]) + 0.8 * sin(q[0] + q[1]);
}

#endif /* TESTS_CLIENTS_RIGS_H */
