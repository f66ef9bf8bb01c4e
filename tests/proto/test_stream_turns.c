/*
 * test_stream_turns.c: a planar arm's stream is turn-aware. Seed 000's
 * two- and three-link solvers answer their angles from atan2, in
 * (-pi, pi]; on a stream (each solve seeded by the previous answer) a
 * target circling the base twice must get answers that go on turning
 * (3.2 rad after 3.1, never -3.1: a whole-turn jump the arm did not ask
 * for), as the numeric solver's continuous joints do.
 *
 * Each answer is checked by forward kinematics computed here (the angles
 * summed along the links), and the largest joint step between two answers
 * against the motion's own (2 pi / 90 per target).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_session.h"
#include "tests/proto/proto_check.h"

#define STEPS 180 /* two turns */

static void circle(const char *chain, size_t nlinks, const double *len)
{
    proto_session *s = pc_session_on(chain, NULL);
    double prev[3] = {0}, worst = 0.0;
    for (int f = 0; f < STEPS; f++) {
        const double a = 0.3 + 2.0 * M_PI * f / 90.0;
        const double p[2] = {1.2 * cos(a), 1.2 * sin(a)}, up[2] = {cos(a + 1.0), sin(a + 1.0)};
        json_t *target = nlinks == 3 ? json_pack("{s:[f,f], s:[f,f]}", "position", p[0], p[1],
                                                 "up", up[0], up[1])
                                     : json_pack("{s:[f,f]}", "position", p[0], p[1]);
        proto_job *job = NULL;
        proto_error e;
        ck_assert_msg(proto_session_target(s, target, NULL, &job, &e) == 0, "%s", e.message);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
        const json_t *jq = json_object_get(res, "joints");
        double q[3], sum = 0.0, x = 0.0, y = 0.0;
        for (size_t k = 0; k < nlinks; k++) {
            q[k] = json_real_value(json_array_get(jq, k));
            sum += q[k];
            x += len[k] * cos(sum);
            y += len[k] * sin(sum);
            if (f > 0)
                worst = fmax(worst, fabs(q[k] - prev[k]));
            prev[k] = q[k];
        }
        ck_assert_double_le(hypot(x - p[0], y - p[1]), 1e-9);
        if (nlinks == 3)
            ck_assert_double_le(hypot(cos(sum) - up[0], sin(sum) - up[1]), 1e-9);
        json_decref(res);
        json_decref(target);
        proto_session_solved(s, job);
    }
    ck_assert_msg(worst < 0.2, "%zu links: an answer jumped by %g rad (the target moved %g)",
                  nlinks, worst, 2.0 * M_PI / 90.0);
    proto_session_free(s);
}

START_TEST(test_planar_streams_keep_turning)
{
    static const double two[] = {1.0, 0.8}, three[] = {1.0, 0.8, 0.3};
    circle("{\"kind\":\"planar\",\"lengths\":[1.0,0.8]}", 2, two);
    circle("{\"kind\":\"planar\",\"lengths\":[1.0,0.8,0.3]}", 3, three);
}
END_TEST

/* ---- links3d -------------------------------------------------------------- */

/* Seed 000's three-link arm in 3D, worked out here from its five joint
 * values by the rotation order ik_planar.h documents (solver axes: x left,
 * y up, z forward; Ry(a) about y, the hinge H(a) = Rx(-a), the roll about
 * the unit axis from the base to the second joint, applied last), then
 * into ROS axes (solver x, y, z -> ROS y, z, x) from the origin o. */
typedef struct m3 {
    double m[3][3];
} m3;

static m3 m3_mul(m3 a, m3 b)
{
    m3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = a.m[i][0] * b.m[0][j] + a.m[i][1] * b.m[1][j] + a.m[i][2] * b.m[2][j];
    return r;
}

/* Rotation by a about the unit axis (x, y, z) (Rodrigues). */
static m3 m3_axis(double x, double y, double z, double a)
{
    const double c = cos(a), s = sin(a), t = 1.0 - c;
    m3 r = {{{t * x * x + c, t * x * y - s * z, t * x * z + s * y},
             {t * x * y + s * z, t * y * y + c, t * y * z - s * x},
             {t * x * z - s * y, t * y * z + s * x, t * z * z + c}}};
    return r;
}

/* r times (0, 0, l), added to b */
static void along(m3 r, double l, const double *b, double *out)
{
    for (int i = 0; i < 3; i++)
        out[i] = b[i] + r.m[i][2] * l;
}

static void links3d_fk(const double *len, const double *o, const double *q, double tip[3],
                       double last[3])
{
    const double zero[3] = {0, 0, 0};
    m3 r1 = m3_mul(m3_axis(0, 1, 0, q[0]), m3_axis(1, 0, 0, -q[1]));
    m3 r2 = m3_mul(r1, m3_axis(1, 0, 0, -q[2]));
    m3 r3 = m3_mul(r2, m3_axis(1, 0, 0, -q[3]));
    double j1[3], j2[3];
    along(r1, len[0], zero, j1);
    along(r2, len[1], j1, j2); /* on the roll's axis: the roll keeps it */
    const double n = sqrt(j2[0] * j2[0] + j2[1] * j2[1] + j2[2] * j2[2]);
    m3 roll = m3_axis(j2[0] / n, j2[1] / n, j2[2] / n, q[4]);
    double j3[3];
    along(m3_mul(roll, r3), len[2], j2, j3);
    const double d[3] = {j3[0] - j2[0], j3[1] - j2[1], j3[2] - j2[2]};
    tip[0] = o[0] + j3[2], tip[1] = o[1] + j3[0], tip[2] = o[2] + j3[1];
    last[0] = d[2] / len[2], last[1] = d[0] / len[2], last[2] = d[1] / len[2];
}

/* A links3d target circling its base twice (its up turning with it, and
 * tilting so that the roll turns too): every answer meets the target by
 * the forward kinematics above, and no joint steps more than a small
 * multiple of the motion's own 2 pi / 90. */
START_TEST(test_links3d_stream_keeps_turning)
{
    static const double len[3] = {1.0, 0.8, 0.3}, o[3] = {0.1, -0.2, 0.3};
    proto_session *s = pc_session_on("{\"kind\":\"links3d\",\"lengths\":[1.0,0.8,0.3],"
                                     "\"origin\":{\"position\":[0.1,-0.2,0.3]}}",
                                     NULL);
    double prev[5] = {0}, worst = 0.0;
    for (int f = 0; f < STEPS; f++) {
        const double a = 0.3 + 2.0 * M_PI * f / 90.0;
        const double p[3] = {o[0] + 1.2 * cos(a), o[1] + 1.2 * sin(a), o[2] + 0.4 + 0.2 * sin(2 * a)};
        const double up[3] = {cos(a + 0.5 + 0.3 * sin(a)), sin(a + 0.5 + 0.3 * sin(a)), 0.6};
        json_t *target = json_pack("{s:[f,f,f], s:[f,f,f]}", "position", p[0], p[1], p[2], "up",
                                   up[0], up[1], up[2]);
        proto_job *job = NULL;
        proto_error e;
        ck_assert_msg(proto_session_target(s, target, NULL, &job, &e) == 0, "%s", e.message);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
        const json_t *jq = json_object_get(res, "joints");
        double q[5], tip[3], last[3];
        for (size_t k = 0; k < 5; k++) {
            q[k] = json_real_value(json_array_get(jq, k));
            if (f > 0)
                worst = fmax(worst, fabs(q[k] - prev[k]));
            prev[k] = q[k];
        }
        links3d_fk(len, o, q, tip, last);
        const double un = sqrt(up[0] * up[0] + up[1] * up[1] + up[2] * up[2]);
        for (int i = 0; i < 3; i++) {
            ck_assert_double_eq_tol(tip[i], p[i], 1e-9);
            ck_assert_double_eq_tol(last[i], up[i] / un, 1e-9);
        }
        json_decref(res);
        json_decref(target);
        proto_session_solved(s, job);
    }
    ck_assert_msg(worst < 0.2, "links3d: an answer jumped by %g rad (the target moved %g)", worst,
                  2.0 * M_PI / 90.0);
    proto_session_free(s);
}
END_TEST

/* A single links3d solve takes a seed as the other kinds take theirs
 * (five joint values in options.units, here the fixture's answer moved
 * by whole turns): every angle is answered within half a turn of it, the
 * pose (by the forward kinematics above) unchanged. A seed of another
 * length, or by joint name, is refused at /seed. */
START_TEST(test_links3d_seed)
{
    static const double len[3] = {0.5, 0.4, 0.1}, o[3] = {0.0, 0.0, 0.2};
    static const double p[3] = {0.6, 0.2, 0.3}, up[3] = {0.2, 0.1, -1.0};
    const double T = 2.0 * M_PI;
    const double seed[5] = {0.32 + T, 0.99 - T, -1.57, 2.56 + 2 * T, -3.11 + T};
    for (int deg = 0; deg < 2; deg++) {
        const double k = deg ? 180.0 / M_PI : 1.0;
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"links3d\",\"lengths\":[0.5,0.4,0.1],"
                 "\"origin\":{\"position\":[0.0,0.0,0.2]}},"
                 "\"target\":{\"position\":[0.6,0.2,0.3],\"up\":[0.2,0.1,-1.0]},"
                 "\"seed\":[%.17g,%.17g,%.17g,%.17g,%.17g],\"options\":{\"units\":\"%s\"}}",
                 seed[0] * k, seed[1] * k, seed[2] * k, seed[3] * k, seed[4] * k,
                 deg ? "degrees" : "radians");
        proto_error e;
        json_t *res = pc_solve(body, PROTO_SOLVE, &e);
        ck_assert_msg(res != NULL, "%s", e.message);
        ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
        const json_t *jq = json_object_get(res, "joints");
        double q[5], tip[3], last[3];
        for (size_t j = 0; j < 5; j++) {
            q[j] = json_real_value(json_array_get(jq, j)) / k;
            ck_assert_msg(fabs(q[j] - seed[j]) <= M_PI, "%s: joint %zu answered %g for the seed %g",
                          deg ? "degrees" : "radians", j, q[j], seed[j]);
        }
        links3d_fk(len, o, q, tip, last);
        const double un = sqrt(up[0] * up[0] + up[1] * up[1] + up[2] * up[2]);
        for (int i = 0; i < 3; i++) {
            ck_assert_double_eq_tol(tip[i], p[i], 1e-9);
            ck_assert_double_eq_tol(last[i], up[i] / un, 1e-9);
        }
        json_decref(res);
    }
    const char *chain = "{\"chain\":{\"kind\":\"links3d\",\"lengths\":[1,1,1]},"
                        "\"target\":{\"position\":[1,1,0],\"up\":[0,0,1]},";
    const char *bad[] = {"\"seed\":[0,0,0,0]}", "\"seed\":[0,0,0,0,0,0]}",
                         "\"seed\":{\"yaw\":0.3}}", "\"seed\":[0,0,\"a\",0,0]}"};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        char body[512];
        snprintf(body, sizeof body, "%s%s", chain, bad[b]);
        pc_reject(body, PROTO_SOLVE, "invalid_request", 400, NULL);
        proto_error e;
        ck_assert_ptr_null(pc_solve(body, PROTO_SOLVE, &e));
        ck_assert_msg(strncmp(e.path, "/seed", 5) == 0, "path %s for %s", e.path, body);
    }
}
END_TEST

/* ---- bones ------------------------------------------------------------------ */

/* The rotation angle between unit quaternions a and b (either sign). */
static double quat_angle(const double *a, const double *b)
{
    double d = fabs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
    return 2.0 * acos(fmin(1.0, d));
}

/* v rotated by the unit quaternion q (x, y, z, w). */
static void quat_rotate(const double *q, const double *v, double *out)
{
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    const double t[3] = {2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]),
                         2 * (x * v[1] - y * v[0])};
    out[0] = v[0] + w * t[0] + (y * t[2] - z * t[1]);
    out[1] = v[1] + w * t[1] + (z * t[0] - x * t[2]);
    out[2] = v[2] + w * t[2] + (x * t[1] - y * t[0]);
}

/* A bones chain's target circling its root twice (two_bone for three
 * positions, fabrik for four): the answered world rotation of every bone
 * takes the bone's own rest direction (+x, the chain's rotations being
 * identity) onto its answered direction, and turns between two answers
 * by no more than a small multiple of the motion's 2 pi / 90: no bone
 * twists half a turn when its direction passes the opposite of its rest
 * direction. */
static void bones_circle(const char *chain, size_t n)
{
    proto_session *s = pc_session_on(chain, NULL);
    double prev[4][4] = {{0}}, worst = 0.0;
    for (int f = 0; f < STEPS; f++) {
        const double a = 0.3 + 2.0 * M_PI * f / 90.0;
        json_t *target = json_pack("{s:[f,f,f]}", "position", 1.2 * cos(a), 1.2 * sin(a), 0.3);
        proto_job *job = NULL;
        proto_error e;
        ck_assert_msg(proto_session_target(s, target, NULL, &job, &e) == 0, "%s", e.message);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
        const json_t *jp = json_object_get(res, "positions"), *jr = json_object_get(res, "rotations");
        for (size_t k = 0; k + 1 < n; k++) {
            double q[4], p0[3], p1[3], dir[3], x[3] = {1, 0, 0};
            for (int i = 0; i < 4; i++)
                q[i] = json_real_value(json_array_get(json_array_get(jr, k), i));
            for (int i = 0; i < 3; i++) {
                p0[i] = json_real_value(json_array_get(json_array_get(jp, k), i));
                p1[i] = json_real_value(json_array_get(json_array_get(jp, k + 1), i));
            }
            const double l = sqrt((p1[0] - p0[0]) * (p1[0] - p0[0]) + (p1[1] - p0[1]) * (p1[1] - p0[1]) +
                                  (p1[2] - p0[2]) * (p1[2] - p0[2]));
            quat_rotate(q, x, dir);
            for (int i = 0; i < 3; i++)
                ck_assert_double_eq_tol(dir[i], (p1[i] - p0[i]) / l, 1e-9);
            if (f > 0)
                worst = fmax(worst, quat_angle(q, prev[k]));
            memcpy(prev[k], q, sizeof q);
        }
        json_decref(res);
        json_decref(target);
        proto_session_solved(s, job);
    }
    ck_assert_msg(worst < 0.2, "%zu positions: a bone turned by %g rad between two answers (the target moved %g)",
                  n, worst, 2.0 * M_PI / 90.0);
    proto_session_free(s);
}

START_TEST(test_bones_stream_rotations_continuous)
{
    bones_circle("{\"kind\":\"bones\",\"positions\":[[0,0,0],[1,0,0],[1.8,0,0]]}", 3);
    bones_circle("{\"kind\":\"bones\",\"positions\":[[0,0,0],[0.6,0,0],[1.1,0,0],[1.5,0,0]]}", 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_turns");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_planar_streams_keep_turning);
    tcase_add_test(tc, test_links3d_stream_keeps_turning);
    tcase_add_test(tc, test_links3d_seed);
    tcase_add_test(tc, test_bones_stream_rotations_continuous);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
