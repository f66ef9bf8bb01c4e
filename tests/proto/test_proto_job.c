/*
 * test_proto_job.c: requests through decode -> run -> encode for every chain
 * kind and solver, every answer checked independently (forward kinematics
 * written in this test, or the geometry of bone answers), in radians and
 * degrees, in the ros, unity and unreal conventions; batches, seeds, warm
 * starts, chain ids, status codes, and one test per way a request is
 * rejected.
 */
#include "tests/proto/proto_check.h"

#include <ctype.h>

#include "proto/proto_kind.h"
#include "proto/proto_session.h"
#include "proto/proto_stream.h"

#include "tests/proto/urdf_read.h"
#include "solver/ik_anim.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "tests/solver/storage.h"

static json_t *ok(const char *body, proto_kind kind)
{
    proto_error e;
    json_t *r = pc_solve(body, kind, &e);
    ck_assert_msg(r != NULL, "rejected: %s at %s (%s)", e.message, e.path, body);
    return r;
}

static void assert_success(const json_t *r)
{
    ck_assert_msg(strcmp(json_string_value(json_object_get(r, "status")), "success") == 0,
                  "status %s", json_string_value(json_object_get(r, "status")));
    ck_assert_int_eq(json_integer_value(json_object_get(r, "code")), 1);
}

static double jnum(const json_t *a, size_t i)
{
    return json_number_value(json_array_get(a, i));
}

/* ---- seed 000 ---------------------------------------------------------- */

START_TEST(test_two_link)
{
    const double tx[] = {1.2, -0.3, 0.1, 1.4};
    const double ty[] = {0.4, 1.1, -1.3, 0.0};
    for (int units = 0; units < 2; units++)
        for (size_t k = 0; k < 4; k++) {
            char body[512];
            snprintf(body, sizeof body,
                     "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.6],\"base\":[0.1,-0.2]},"
                     "\"target\":{\"position\":[%.17g,%.17g]},\"options\":{\"units\":\"%s\"}}",
                     tx[k], ty[k], units ? "degrees" : "radians");
            json_t *r = ok(body, PROTO_SOLVE);
            assert_success(r);
            ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "two_link");
            json_t *q = json_object_get(r, "joints");
            double s = units ? IK_PI / 180 : 1;
            double a = jnum(q, 0) * s, b = jnum(q, 1) * s;
            /* FK of the planar arm */
            double x = 0.1 + cos(a) + 0.6 * cos(a + b), y = -0.2 + sin(a) + 0.6 * sin(a + b);
            ck_assert_double_eq_tol(x, tx[k], 1e-9);
            ck_assert_double_eq_tol(y, ty[k], 1e-9);
            json_t *p = json_object_get(r, "positions");
            ck_assert_uint_eq(json_array_size(p), 3);
            ck_assert_uint_eq(json_array_size(json_array_get(p, 0)), 2);
            ck_assert_double_eq_tol(jnum(json_array_get(p, 2), 0), tx[k], 1e-9);
            json_decref(r);
        }
    /* out of reach: fully extended, no_ik_solution with the error */
    json_t *r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.6]},"
                   "\"target\":{\"position\":[3,0]}}",
                   PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "no_ik_solution");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "code")), -31);
    ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "unreachable");
    ck_assert_double_eq_tol(pc_num(r, "position_error"), 1.4, 1e-12);
    json_decref(r);
}
END_TEST

START_TEST(test_two_link_bend_and_seed)
{
    /* both bends reach; the seed picks the nearer one */
#define SEED_FMT                                                                                   \
    "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},\"target\":{\"position\":[1,1]},"     \
    "\"seed\":[%g,%g]}"
    char body[256];
    snprintf(body, sizeof body, SEED_FMT, 0.0, 1.5); /* near (0, pi/2) */
    json_t *r = ok(body, PROTO_SOLVE);
    ck_assert_double_eq_tol(jnum(json_object_get(r, "joints"), 0), 0, 1e-9);
    ck_assert_double_eq_tol(jnum(json_object_get(r, "joints"), 1), IK_PI / 2, 1e-9);
    json_decref(r);
    snprintf(body, sizeof body, SEED_FMT, 1.5, -1.5); /* near (pi/2, -pi/2) */
    r = ok(body, PROTO_SOLVE);
    ck_assert_double_eq_tol(jnum(json_object_get(r, "joints"), 0), IK_PI / 2, 1e-9);
    ck_assert_double_eq_tol(jnum(json_object_get(r, "joints"), 1), -IK_PI / 2, 1e-9);
    json_decref(r);
    r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
           "\"target\":{\"position\":[1,1]},\"options\":{\"bend\":-1}}",
           PROTO_SOLVE);
    ck_assert_double_eq_tol(jnum(json_object_get(r, "joints"), 0), 0, 1e-9);
    json_decref(r);
}
END_TEST

START_TEST(test_three_link_planar)
{
    json_t *r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.8,0.3]},"
                   "\"target\":{\"position\":[1.2,0.7],\"up\":[0,2]},"
                   "\"options\":{\"units\":\"degrees\"}}",
                   PROTO_SOLVE);
    assert_success(r);
    ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "three_link");
    json_t *q = json_object_get(r, "joints");
    double a = jnum(q, 0) * IK_PI / 180, b = a + jnum(q, 1) * IK_PI / 180,
           c = b + jnum(q, 2) * IK_PI / 180;
    ck_assert_double_eq_tol(cos(a) + 0.8 * cos(b) + 0.3 * cos(c), 1.2, 1e-9);
    ck_assert_double_eq_tol(sin(a) + 0.8 * sin(b) + 0.3 * sin(c), 0.7, 1e-9);
    /* the last link points along up */
    ck_assert_double_eq_tol(cos(c), 0, 1e-9);
    ck_assert_double_eq_tol(sin(c), 1, 1e-9);
    json_decref(r);
    /* without up: the general solver, position only */
    r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.8,0.3]},"
           "\"target\":{\"position\":[1.2,0.7]}}",
           PROTO_SOLVE);
    assert_success(r);
    ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "numeric");
    q = json_object_get(r, "joints");
    a = jnum(q, 0), b = a + jnum(q, 1), c = b + jnum(q, 2);
    ck_assert_double_eq_tol(cos(a) + 0.8 * cos(b) + 0.3 * cos(c), 1.2, 1e-5);
    ck_assert_double_eq_tol(sin(a) + 0.8 * sin(b) + 0.3 * sin(c), 0.7, 1e-5);
    json_decref(r);
}
END_TEST

/* The caller's forward direction and up direction in each convention. */
static ik_vec3 fwd_of(const char *f)
{
    return strcmp(f, "unity") == 0 ? ik_v3(0, 0, 1) : ik_v3(1, 0, 0);
}

START_TEST(test_three_link_3d)
{
    static const char *const frames[] = {"ros", "unity", "unreal"};
    for (int fi = 0; fi < 3; fi++) {
        const char *f = frames[fi];
        ik_vec3 up = strcmp(f, "unity") == 0 ? ik_v3(0, 1, 0) : ik_v3(0, 0, 1);
        /* a target in front, a little up, with the end pointing down */
        ik_vec3 t = ik_vec3_add(ik_vec3_scale(fwd_of(f), 1.3), ik_vec3_scale(up, 0.4));
        char body[768];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"links3d\",\"lengths\":[1,0.8,0.3],\"frame\":\"%s\"},"
                 "\"target\":{\"position\":[%.17g,%.17g,%.17g],\"up\":[%g,%g,%g]},"
                 "\"options\":{\"frame\":\"%s\"}}",
                 f, t.x, t.y, t.z, -up.x, -up.y, -up.z, f);
        json_t *r = ok(body, PROTO_SOLVE);
        assert_success(r);
        ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "three_link_3d");
        ck_assert_uint_eq(json_array_size(json_object_get(r, "joint_names")), 5);
        json_t *p = json_object_get(r, "positions");
        ck_assert_uint_eq(json_array_size(p), 4);
        ik_vec3 j[4];
        for (int k = 0; k < 4; k++)
            j[k] = pc_vec(json_array_get(p, k));
        const double len[3] = {1, 0.8, 0.3};
        for (int k = 0; k < 3; k++)
            ck_assert_double_eq_tol(ik_vec3_dist(j[k], j[k + 1]), len[k], 1e-9);
        ck_assert_double_eq_tol(ik_vec3_dist(j[3], t), 0, 1e-9);
        /* link 3 along the target's up (pointing down here) */
        ik_vec3 d3 = ik_vec3_normalize(ik_vec3_sub(j[3], j[2]));
        ck_assert_double_eq_tol(ik_vec3_dot(d3, up), -1, 1e-9);
        /* each bone's world rotation turns the convention's forward onto
         * the bone, in the caller's frame */
        json_t *rot = json_object_get(r, "rotations");
        for (int k = 0; k < 3; k++) {
            ik_vec3 dir = ik_vec3_normalize(ik_vec3_sub(j[k + 1], j[k]));
            ik_vec3 got = ik_quat_rotate(pc_quat(json_array_get(rot, k)), fwd_of(f));
            ck_assert_double_eq_tol(ik_vec3_dist(got, dir), 0, 1e-9);
        }
        /* local rotations chain up to the world ones */
        json_t *loc = json_object_get(r, "local_rotations");
        ik_quat w = ik_quat_identity();
        for (int k = 0; k < 3; k++) {
            w = ik_quat_mul(w, pc_quat(json_array_get(loc, k)));
            ik_quat e = pc_quat(json_array_get(rot, k));
            ck_assert_double_eq_tol(fabs(ik_quat_dot(w, e)), 1, 1e-9);
        }
        json_decref(r);
    }
}
END_TEST

/* ---- seed 001, FABRIK, CCD --------------------------------------------- */

static void check_bones(const json_t *r, const ik_vec3 *p0, size_t n, ik_vec3 t, double tol)
{
    json_t *p = json_object_get(r, "positions");
    ck_assert_uint_eq(json_array_size(p), n);
    ik_vec3 prev = pc_vec(json_array_get(p, 0));
    ck_assert_double_eq_tol(ik_vec3_dist(prev, p0[0]), 0, 1e-12);
    for (size_t k = 1; k < n; k++) {
        ik_vec3 x = pc_vec(json_array_get(p, k));
        ck_assert_double_eq_tol(ik_vec3_dist(x, prev), ik_vec3_dist(p0[k], p0[k - 1]), 1e-9);
        prev = x;
    }
    ck_assert_double_eq_tol(ik_vec3_dist(prev, t), 0, tol);
    /* rotations: rotation k turns the input direction of bone k onto its new
     * direction (input rotations identity) */
    json_t *rot = json_object_get(r, "rotations");
    ck_assert_uint_eq(json_array_size(rot), n);
    for (size_t k = 0; k + 1 < n; k++) {
        ik_vec3 d0 = ik_vec3_normalize(ik_vec3_sub(p0[k + 1], p0[k]));
        ik_vec3 d1 = ik_vec3_normalize(ik_vec3_sub(pc_vec(json_array_get(p, k + 1)),
                                                   pc_vec(json_array_get(p, k))));
        ik_vec3 got = ik_quat_rotate(pc_quat(json_array_get(rot, k)), d0);
        ck_assert_double_eq_tol(ik_vec3_dist(got, d1), 0, 1e-9);
    }
}

START_TEST(test_two_bone_and_pole)
{
    ik_vec3 p0[3] = {{0, 0, 1}, {0.1, 0, 0.5}, {0, 0, 0}};
    json_t *r = ok("{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]},"
                   "\"target\":{\"position\":[0.3,0.2,0.2]}}",
                   PROTO_SOLVE);
    assert_success(r);
    ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "two_bone");
    check_bones(r, p0, 3, ik_v3(0.3, 0.2, 0.2), 1e-9);
    json_decref(r);
    /* with a pole behind (-x), the knee goes behind */
    r = ok("{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]},"
           "\"target\":{\"position\":[0,0,0.3],\"pole\":[-5,0,0.5]}}",
           PROTO_SOLVE);
    assert_success(r);
    ck_assert(pc_vec(json_array_get(json_object_get(r, "positions"), 1)).x < -0.1);
    json_decref(r);
    /* in unity's frame, answers are in unity's frame */
    r = ok("{\"chain\":{\"kind\":\"bones\",\"frame\":\"unity\","
           "\"positions\":[[0,1,0],[0,0.5,0.1],[0,0,0]]},"
           "\"target\":{\"position\":[0.2,0.2,0.3]},\"options\":{\"frame\":\"unity\"}}",
           PROTO_SOLVE);
    assert_success(r);
    ik_vec3 u0[3] = {{0, 1, 0}, {0, 0.5, 0.1}, {0, 0, 0}};
    check_bones(r, u0, 3, ik_v3(0.2, 0.2, 0.3), 1e-9);
    json_decref(r);
}
END_TEST

START_TEST(test_fabrik_ccd)
{
    ik_vec3 p0[5] = {{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 0, 3}, {0, 0, 4}};
    static const char *const solvers[] = {"auto", "fabrik", "ccd"};
    for (int s = 0; s < 3; s++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,1],[0,0,2],[0,0,3],"
                 "[0,0,4]]},\"target\":{\"position\":[1.5,1,2]},"
                 "\"options\":{\"solver\":\"%s\",\"tolerance\":1e-6,\"max_iterations\":500}}",
                 solvers[s]);
        json_t *r = ok(body, PROTO_SOLVE);
        assert_success(r);
        ck_assert_str_eq(json_string_value(json_object_get(r, "solver")),
                         s == 2 ? "ccd" : "fabrik");
        check_bones(r, p0, 5, ik_v3(1.5, 1, 2), 1e-6);
        json_decref(r);
    }
    /* out of reach */
    json_t *r = ok("{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,1],[0,0,2],"
                   "[0,0,3]]},\"target\":{\"position\":[10,0,0]}}",
                   PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "no_ik_solution");
    ck_assert_double_eq_tol(pc_num(r, "position_error"), 7, 1e-9);
    json_decref(r);
}
END_TEST

/* The test's own translate-rotate-scale forward kinematics (uniform or unit
 * scale) of a three-bone skeleton: world position of each bone origin. */
static void skel_fk(const ik_vec3 *tr, const ik_quat *rot, ik_vec3 *out)
{
    ik_quat R = ik_quat_identity();
    ik_vec3 p = ik_v3(0, 0, 0);
    for (int k = 0; k < 3; k++) {
        p = ik_vec3_add(p, ik_quat_rotate(R, tr[k]));
        R = ik_quat_mul(R, ik_quat_normalize(rot[k]));
        out[k] = p;
    }
}

START_TEST(test_skeleton)
{
    static const char *const frames[] = {"ros", "unity"};
    for (int fi = 0; fi < 2; fi++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"skeleton\",\"frame\":\"%s\",\"bones\":["
                 "{\"name\":\"hip\",\"translation\":[0,1,0]},"
                 "{\"name\":\"knee\",\"parent\":\"hip\",\"translation\":[0.05,-0.5,0]},"
                 "{\"name\":\"foot\",\"parent\":\"knee\",\"translation\":[0,-0.5,0]}],"
                 "\"limb\":[\"hip\",\"knee\",\"foot\"]},"
                 "\"target\":{\"position\":[0.3,0.3,0.2]},\"options\":{\"frame\":\"%s\"}}",
                 frames[fi], frames[fi]);
        json_t *r = ok(body, PROTO_SOLVE);
        assert_success(r);
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "bone_names"), 2)),
                         "foot");
        json_t *rot = json_object_get(r, "rotations");
        ck_assert_uint_eq(json_array_size(rot), 3);
        ik_quat q[3];
        for (int k = 0; k < 3; k++)
            q[k] = pc_quat(json_array_get(rot, k));
        ik_vec3 tr[3] = {{0, 1, 0}, {0.05, -0.5, 0}, {0, -0.5, 0}}, w[3];
        skel_fk(tr, q, w);
        /* FK of the updated skeleton, in the caller's frame, reaches the
         * target */
        ck_assert_double_eq_tol(ik_vec3_dist(w[2], ik_v3(0.3, 0.3, 0.2)), 0, 1e-9);
        ck_assert_double_eq_tol(ik_vec3_dist(w[1], pc_vec(json_array_get(
                                                     json_object_get(r, "positions"), 1))),
                                0, 1e-9);
        json_decref(r);
    }
}
END_TEST

/* ---- joints and URDF --------------------------------------------------- */

/* A 4-joint arm, described in the caller's numbers. */
static const pc_joint ARM[] = {
    {{0, 0, 0.1}, {0, 0, 0}, {0, 0, 1}, 'r'},
    {{0, 0, 0.3}, {0.3, 0, 0}, {0, 1, 0}, 'r'},
    {{0.4, 0, 0}, {0, 0, 0.2}, {0, 1, 0}, 'r'},
    {{0.3, 0, 0}, {0, 0.1, 0}, {1, 0, 0}, 'r'},
    {{0.1, 0.02, 0}, {0, 0, 0}, {0, 0, 0}, 'f'},
};

static void arm_json(char *buf, size_t size, const char *frame, bool degrees)
{
    double s = degrees ? 180 / IK_PI : 1;
    size_t n = (size_t)snprintf(buf, size,
                                "{\"kind\":\"joints\",\"frame\":\"%s\",\"units\":\"%s\","
                                "\"joints\":[",
                                frame, degrees ? "degrees" : "radians");
    for (size_t i = 0; i < sizeof ARM / sizeof ARM[0]; i++) {
        const pc_joint *j = &ARM[i];
        n += (size_t)snprintf(buf + n, size - n,
                              "%s{\"name\":\"j%zu\",\"type\":\"%s\",\"origin\":{\"xyz\":[%.17g,"
                              "%.17g,%.17g],\"rpy\":[%.17g,%.17g,%.17g]}",
                              i ? "," : "", i, j->type == 'r' ? "revolute" : "fixed", j->xyz[0],
                              j->xyz[1], j->xyz[2], j->rpy[0] * s, j->rpy[1] * s, j->rpy[2] * s);
        if (j->type == 'r')
            n += (size_t)snprintf(buf + n, size - n,
                                  ",\"axis\":[%g,%g,%g],\"limits\":{\"lower\":%.17g,"
                                  "\"upper\":%.17g}",
                                  j->axis[0], j->axis[1], j->axis[2], -3 * s, 3 * s);
        n += (size_t)snprintf(buf + n, size - n, "}");
    }
    snprintf(buf + n, size - n, "]}");
}

/* Rotation matrix -> quaternion by the test (Shepperd, w-major branch only
 * used for the well-conditioned test rotations; falls back to ik_math). */
static ik_quat mat_to_quat(const double m[9])
{
    return ik_quat_from_mat3(m);
}

START_TEST(test_joints_frames_and_units)
{
    static const char *const frames[] = {"ros", "unity", "unreal"};
    const double qt[4] = {0.4, -0.6, 0.9, 0.3};
    for (int fi = 0; fi < 3; fi++)
        for (int deg = 0; deg < 2; deg++) {
            /* the target: the test's FK in the caller's own numbers */
            double R[9];
            ik_vec3 tp = pc_fk(ARM, 5, qt, R);
            ik_quat tq = mat_to_quat(R);
            char chain[4096], body[8192];
            arm_json(chain, sizeof chain, frames[fi], deg);
            snprintf(body, sizeof body,
                     "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g],"
                     "\"orientation\":[%.17g,%.17g,%.17g,%.17g]},"
                     "\"options\":{\"frame\":\"%s\",\"units\":\"%s\",\"timeout_ms\":100}}",
                     chain, tp.x, tp.y, tp.z, tq.x, tq.y, tq.z, tq.w, frames[fi],
                     deg ? "degrees" : "radians");
            json_t *r = ok(body, PROTO_SOLVE);
            assert_success(r);
            json_t *q = json_object_get(r, "joints");
            ck_assert_uint_eq(json_array_size(q), 4);
            double qs[4];
            for (int k = 0; k < 4; k++)
                qs[k] = jnum(q, (size_t)k) * (deg ? IK_PI / 180 : 1);
            /* FK done in the caller's frame lands on the target */
            double R2[9];
            ik_vec3 p2 = pc_fk(ARM, 5, qs, R2);
            ck_assert_double_eq_tol(ik_vec3_dist(p2, tp), 0, 1e-5);
            for (int k = 0; k < 9; k++)
                ck_assert_double_eq_tol(R2[k], R[k], 3e-5);
            /* the reported tip is in the caller's frame too */
            json_t *tip = json_object_get(r, "tip");
            ck_assert_double_eq_tol(
                ik_vec3_dist(pc_vec(json_object_get(tip, "position")), tp), 0, 1e-5);
            ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "joint_names"),
                                                              3)),
                             "j3");
            ck_assert(pc_num(r, "orientation_error") >= 0);
            json_decref(r);
        }
}
END_TEST

START_TEST(test_joints_rotation_matrix_and_weights)
{
    const double qt[4] = {-0.5, 0.3, 0.7, -0.2};
    double R[9];
    ik_vec3 tp = pc_fk(ARM, 5, qt, R);
    char chain[4096], body[8192];
    arm_json(chain, sizeof chain, "ros", false);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g],"
             "\"rotation\":[[%.17g,%.17g,%.17g],[%.17g,%.17g,%.17g],[%.17g,%.17g,%.17g]]},"
             "\"options\":{\"timeout_ms\":100}}",
             chain, tp.x, tp.y, tp.z, R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8]);
    json_t *r = ok(body, PROTO_SOLVE);
    assert_success(r);
    double qs[4], R2[9];
    for (int k = 0; k < 4; k++)
        qs[k] = jnum(json_object_get(r, "joints"), (size_t)k);
    ck_assert_double_eq_tol(ik_vec3_dist(pc_fk(ARM, 5, qs, R2), tp), 0, 1e-5);
    for (int k = 0; k < 9; k++)
        ck_assert_double_eq_tol(R2[k], R[k], 3e-5);
    json_decref(r);
    /* position-only by weights: any orientation, the position is met */
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g],"
             "\"orientation\":[0,0,0,1],\"weights\":[1,1,1,0,0,0]}}",
             chain, tp.x, tp.y, tp.z);
    r = ok(body, PROTO_SOLVE);
    assert_success(r);
    for (int k = 0; k < 4; k++)
        qs[k] = jnum(json_object_get(r, "joints"), (size_t)k);
    ck_assert_double_eq_tol(ik_vec3_dist(pc_fk(ARM, 5, qs, NULL), tp), 0, 1e-5);
    json_decref(r);
    /* position only (no orientation) */
    snprintf(body, sizeof body, "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g]}}",
             chain, tp.x, tp.y, tp.z);
    r = ok(body, PROTO_SOLVE);
    assert_success(r);
    ck_assert_ptr_null(json_object_get(r, "orientation_error"));
    json_decref(r);
}
END_TEST

/* The worked example of proto/README.md: UR5 base_link -> tool0 from
 * $IKD_DATA, the first benchmark target, through the JSON path; checked by
 * FK on a chain the test builds itself from the same URDF. */
START_TEST(test_ur5_worked_example)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", pc_data_dir());
    size_t len;
    char *xml = pc_read_file(path, &len);
    ck_assert_msg(xml != NULL, "cannot read %s", path);
    snprintf(path, sizeof path, "%s/targets/ur5.txt", pc_data_dir());
    char *targets = pc_read_file(path, NULL);
    ck_assert_ptr_nonnull(targets);
    for (int line = 0; line < 5; line++) {
        char *s = targets;
        for (int k = 0; k < line; k++)
            s = strchr(s, '\n') + 1;
        s = strchr(s, '|') + 1;
        double t[7];
        for (int k = 0; k < 7; k++)
            t[k] = strtod(s, &s);
        json_t *req = json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:[f,f,f], s:[f,f,f,f]}, s:{s:f}}",
                                "chain", "kind", "urdf", "urdf", xml, "base", "base_link", "tip",
                                "tool0", "target", "position", t[0], t[1], t[2], "orientation",
                                t[3], t[4], t[5], t[6], "options", "timeout_ms", 200.0);
        char *body = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        json_t *r = ok(body, PROTO_SOLVE);
        free(body);
        assert_success(r);
        ck_assert_uint_eq(json_array_size(json_object_get(r, "joints")), 6);
        /* independent FK */
        ik_joint joints[16];
        size_t n;
        proto_error e;
        ck_assert_int_eq(proto_urdf_chain(xml, len, "base_link", "tool0", joints, 16, &n, NULL,
                                          &e),
                         0);
        ik_chain c;
        ck_assert_int_eq(chain_init(&c, joints, n), 0);
        double q[6];
        for (int k = 0; k < 6; k++)
            q[k] = jnum(json_object_get(r, "joints"), (size_t)k);
        ik_xform x = ik_chain_fk(&c, q);
        ck_assert_double_eq_tol(ik_vec3_dist(x.p, ik_v3(t[0], t[1], t[2])), 0, 2e-5);
        ik_quat tq = {t[3], t[4], t[5], t[6]};
        ck_assert_double_eq_tol(ik_quat_angle_between(x.q, tq), 0, 3e-5);
        ck_assert(ik_chain_within_limits(&c, q, 1e-9));
        json_decref(r);
    }
    free(targets);
    free(xml);
}
END_TEST

/* ---- batches, seeds, ids, warm starts ---------------------------------- */

START_TEST(test_batch)
{
    json_t *r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
                   "\"targets\":[{\"position\":[1,1]},{\"position\":[5,0]},{\"position\":[0,1.5]}],"
                   "\"seeds\":[null,[0,0],[1,1]]}",
                   PROTO_BATCH);
    ck_assert_int_eq(json_integer_value(json_object_get(r, "count")), 3);
    json_t *counts = json_object_get(r, "counts");
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "success")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "no_ik_solution")), 1);
    json_t *res = json_object_get(r, "results");
    ck_assert_uint_eq(json_array_size(res), 3);
    const double tx[] = {1, 5, 0}, ty[] = {1, 0, 1.5};
    for (size_t i = 0; i < 3; i++) {
        json_t *ri = json_array_get(res, i);
        json_t *end = json_array_get(json_object_get(ri, "positions"), 2);
        if (i == 1) {
            ck_assert_str_eq(json_string_value(json_object_get(ri, "status")), "no_ik_solution");
            continue;
        }
        ck_assert_double_eq_tol(jnum(end, 0), tx[i], 1e-9);
        ck_assert_double_eq_tol(jnum(end, 1), ty[i], 1e-9);
    }
    json_decref(r);
    /* a batch of joint chains runs in disjoint ranges */
    char chain[4096], body[16384];
    arm_json(chain, sizeof chain, "ros", false);
    size_t n = (size_t)snprintf(body, sizeof body, "{\"chain\":%s,\"targets\":[", chain);
    ik_vec3 tp[8];
    for (int i = 0; i < 8; i++) {
        double q[4] = {0.1 * i, -0.2, 0.3 + 0.05 * i, 0.4};
        tp[i] = pc_fk(ARM, 5, q, NULL);
        n += (size_t)snprintf(body + n, sizeof body - n, "%s{\"position\":[%.17g,%.17g,%.17g]}",
                              i ? "," : "", tp[i].x, tp[i].y, tp[i].z);
    }
    snprintf(body + n, sizeof body - n, "]}");
    proto_job *job;
    proto_error e;
    ck_assert_int_eq(proto_job_decode(body, strlen(body), PROTO_BATCH, NULL, NULL, NULL, &job, &e),
                     0);
    ck_assert_uint_eq(proto_job_count(job), 8);
    ck_assert(proto_job_cost_us(job) > 1);
    ck_assert_str_eq(proto_job_solver_name(job), "numeric");
    proto_job_run(job, 4, 8);
    proto_job_run(job, 0, 4);
    for (size_t i = 0; i < 8; i++) {
        json_t *ri = proto_job_result_json(job, i);
        assert_success(ri);
        double q[4];
        for (int k = 0; k < 4; k++)
            q[k] = jnum(json_object_get(ri, "joints"), (size_t)k);
        ck_assert_double_eq_tol(ik_vec3_dist(pc_fk(ARM, 5, q, NULL), tp[i]), 0, 1e-5);
        json_decref(ri);
    }
    proto_job_free(job);
}
END_TEST

static void *registry_lookup(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind != PROTO_REG_CHAIN)
        return NULL;
    proto_chain *c = ud;
    if (strcmp(proto_chain_id(c), id) != 0)
        return NULL;
    proto_chain_ref(c);
    return c;
}

START_TEST(test_chain_id_and_warm_start)
{
    proto_error e;
    const char *cj = "{\"kind\":\"planar\",\"lengths\":[1,1]}";
    proto_chain *c = proto_chain_decode(cj, strlen(cj), NULL, &e);
    ck_assert_ptr_nonnull(c);
    char body[256];
    snprintf(body, sizeof body, "{\"chain_id\":\"%s\",\"target\":{\"position\":[1,1]}}",
             proto_chain_id(c));
    proto_job *a, *b;
    ck_assert_int_eq(proto_job_decode(body, strlen(body), PROTO_SOLVE, NULL, registry_lookup, c,
                                      &a, &e),
                     0);
    proto_job_run(a, 0, 1);
    /* unknown id, and no registry at all */
    const char *bad = "{\"chain_id\":\"0123\",\"target\":{\"position\":[1,1]}}";
    ck_assert_int_eq(proto_job_decode(bad, strlen(bad), PROTO_SOLVE, NULL, registry_lookup, c,
                                      &b, &e),
                     -1);
    ck_assert_str_eq(proto_error_name(e.code), "unknown_chain");
    ck_assert_int_eq(pc_http_status(e.code), 404);
    ck_assert_ptr_null(b);
    pc_reject(body, PROTO_SOLVE, "unknown_chain", 404, "/chain_id");

    /* a stream job: the session's chain, warm-started from the previous
     * answer, keeps the previous branch */
    json_t *tgt = json_pack("{s:[f,f]}", "position", 1.0, 0.9);
    proto_session *ss;
    ck_assert_int_eq(proto_session_open(c, NULL, NULL, NULL, &ss, &e), 0);
    ck_assert_int_eq(proto_session_target(ss, tgt, NULL, &b, &e), 0);
    proto_job_warm_start(b, a);
    proto_job_run(b, 0, 1);
    json_t *ra = proto_job_result_json(a, 0), *rb = proto_job_result_json(b, 0);
    double a1 = jnum(json_object_get(ra, "joints"), 1), b1 = jnum(json_object_get(rb, "joints"), 1);
    ck_assert(a1 * b1 > 0); /* same elbow side */
    json_decref(ra);
    json_decref(rb);
    proto_job_free(b);
    proto_session_free(ss);
    json_decref(tgt);
    /* a stream's target message must not carry its own chain */
    const char *tm = "{\"type\":\"target\",\"stream\":\"s\",\"seq\":1,"
                     "\"target\":{\"position\":[1,0.9]},\"chain\":{\"kind\":\"planar\"}}";
    proto_stream_msg m;
    ck_assert_int_eq(proto_stream_decode(tm, strlen(tm), &m, &e), -1);
    ck_assert_str_eq(e.path, "/chain");
    proto_job_free(a);
    proto_chain_unref(c);
}
END_TEST

/* ---- streams: no flips after an unreachable target ------------------------ */

/* Runs a stream on chain c the way server/ws_stream.c does: a session
 * opened with options, every message's target decoded by the session,
 * prepared (warm start), solved and kept as the next warm start.
 * res[i] is the result object answering targets[i]; the caller decrefs
 * them. extra[i], when not NULL, adds members to message i (a "seed"). */
static void stream_run(proto_chain *c, json_t *const *targets, size_t n, const char *options,
                       const char *const *extra, json_t **res)
{
    proto_error e;
    json_t *jo = NULL;
    if (options) {
        json_error_t je;
        jo = json_loads(options, 0, &je);
        ck_assert_ptr_nonnull(jo);
    }
    proto_session *ss;
    ck_assert_msg(proto_session_open(c, jo, NULL, NULL, &ss, &e) == 0, "%s", e.message);
    json_decref(jo);
    for (size_t i = 0; i < n; i++) {
        json_t *x = NULL;
        if (extra && extra[i]) {
            json_error_t je;
            x = json_loads(extra[i], 0, &je);
            ck_assert_ptr_nonnull(x);
        }
        proto_job *job;
        ck_assert_msg(proto_session_target(ss, targets[i], x ? json_object_get(x, "seed") : NULL,
                                           &job, &e) == 0,
                      "target %zu: %s", i, e.message);
        json_decref(x);
        proto_session_prepare(ss, job);
        proto_job_run(job, 0, 1);
        res[i] = proto_job_result_json(job, 0);
        proto_session_solved(ss, job);
    }
    proto_session_free(ss);
}

static json_t *pos_target(ik_vec3 p)
{
    return json_pack("{s:[f,f,f]}", "position", p.x, p.y, p.z);
}

/* The part of the knee's offset from the hip perpendicular to the line from
 * the hip to the target t: the side the knee bends to. */
static ik_vec3 knee_side(const json_t *r, ik_vec3 t)
{
    json_t *p = json_object_get(r, "positions");
    ik_vec3 hip = pc_vec(json_array_get(p, 0)), knee = pc_vec(json_array_get(p, 1));
    ik_vec3 d = ik_vec3_normalize(ik_vec3_sub(t, hip)), k = ik_vec3_sub(knee, hip);
    return ik_vec3_sub(k, ik_vec3_scale(d, ik_vec3_dot(k, d)));
}

static const char *status_of(const json_t *r)
{
    return json_string_value(json_object_get(r, "status"));
}

/* Bent at a, then out of reach twice (the limb straight, on the far side
 * of the line to b), then reachable again at b and near it: the knee stays
 * on a's side. */
static void check_no_knee_flip(proto_chain *c, ik_vec3 hip, json_t *ta, ik_vec3 a, ik_vec3 b)
{
    json_t *first;
    stream_run(c, &ta, 1, NULL, NULL, &first);
    ck_assert_str_eq(status_of(first), "success");
    ik_vec3 side = knee_side(first, b);
    ck_assert(ik_vec3_len(side) > 1e-3);
    /* straight limbs leaning to the other side of the hip-b line */
    ik_vec3 db = ik_vec3_normalize(ik_vec3_sub(b, hip)), sn = ik_vec3_normalize(side);
    ik_vec3 u1 = ik_vec3_add(hip, ik_vec3_scale(ik_vec3_normalize(ik_vec3_sub(db, ik_vec3_scale(
                                                                                 sn, 0.5))),
                                                10));
    ik_vec3 u2 = ik_vec3_add(hip, ik_vec3_scale(ik_vec3_normalize(ik_vec3_sub(db, ik_vec3_scale(
                                                                                 sn, 0.2))),
                                                20));
    ik_vec3 b2 = ik_vec3_add(b, ik_vec3_scale(ik_vec3_sub(a, b), 0.1));
    json_t *t[6] = {ta, pos_target(u1), pos_target(u2), pos_target(b), pos_target(b2),
                    pos_target(a)};
    json_t *jobs[6];
    stream_run(c, t, 6, NULL, NULL, jobs);
    ck_assert_str_eq(status_of(jobs[1]), "no_ik_solution");
    ck_assert_str_eq(status_of(jobs[2]), "no_ik_solution");
    const ik_vec3 tg[6] = {a, u1, u2, b, b2, a};
    for (size_t i = 3; i < 6; i++) {
        ck_assert_str_eq(status_of(jobs[i]), "success");
        ik_vec3 s = knee_side(jobs[i], tg[i]), s0 = knee_side(first, tg[i]);
        ck_assert_msg(ik_vec3_dot(s, s0) > 0, "answer %zu: the knee flipped", i);
    }
    for (size_t i = 0; i < 6; i++) {
        if (i)
            json_decref(t[i]);
        json_decref(jobs[i]);
    }
    json_decref(first);
}

START_TEST(test_stream_no_flip_two_bone)
{
    proto_error e;
    /* the bones leg of proto/STREAM.md, with its own sequence: bent with a
     * pole, out of reach straight below, the first target again */
    const char *bj = "{\"kind\":\"bones\",\"positions\":[[0.0,0.0,1.0],[0.1,0.0,0.55],"
                     "[0.0,0.0,0.1]]}";
    proto_chain *c = proto_chain_decode(bj, strlen(bj), NULL, &e);
    ck_assert_ptr_nonnull(c);
    json_t *t[3] = {json_pack("{s:[f,f,f], s:[f,f,f]}", "position", 0.2, 0.1, 0.25, "pole", 1.0,
                              0.0, 0.5),
                    pos_target(ik_v3(0, 0, -0.5)), pos_target(ik_v3(0.2, 0.1, 0.25))};
    json_t *jobs[3];
    stream_run(c, t, 3, NULL, NULL, jobs);
    ik_vec3 s0 = knee_side(jobs[0], ik_v3(0.2, 0.1, 0.25));
    ik_vec3 s2 = knee_side(jobs[2], ik_v3(0.2, 0.1, 0.25));
    ck_assert_msg(ik_vec3_dot(s0, s2) > 0, "the knee flipped after an unreachable target");
    for (int i = 0; i < 3; i++) {
        json_decref(t[i]);
        json_decref(jobs[i]);
    }
    /* generic sequences, with and without a pole on the first target */
    json_t *ta = json_pack("{s:[f,f,f], s:[f,f,f]}", "position", 0.2, 0.1, 0.25, "pole", 1.0, 0.0,
                           0.5);
    check_no_knee_flip(c, ik_v3(0, 0, 1), ta, ik_v3(0.2, 0.1, 0.25), ik_v3(0.1, -0.1, 0.4));
    json_decref(ta);
    ta = pos_target(ik_v3(0.3, 0.2, 0.3));
    check_no_knee_flip(c, ik_v3(0, 0, 1), ta, ik_v3(0.3, 0.2, 0.3), ik_v3(-0.1, 0.2, 0.35));
    json_decref(ta);
    proto_chain_unref(c);

    /* a skeleton leg (seeds are local rotations) */
    const char *sj = "{\"kind\":\"skeleton\",\"bones\":["
                     "{\"name\":\"hip\",\"translation\":[0,1,0]},"
                     "{\"name\":\"knee\",\"parent\":\"hip\",\"translation\":[0.05,-0.5,0]},"
                     "{\"name\":\"foot\",\"parent\":\"knee\",\"translation\":[0,-0.5,0]}],"
                     "\"limb\":[\"hip\",\"knee\",\"foot\"]}";
    c = proto_chain_decode(sj, strlen(sj), NULL, &e);
    ck_assert_ptr_nonnull(c);
    ta = pos_target(ik_v3(0.3, 0.3, 0.2));
    check_no_knee_flip(c, ik_v3(0, 1, 0), ta, ik_v3(0.3, 0.3, 0.2), ik_v3(0.1, 0.25, -0.2));
    json_decref(ta);
    ta = json_pack("{s:[f,f,f], s:[f,f,f]}", "position", 0.2, 0.4, 0.1, "pole", -1.0, 0.5, 0.0);
    check_no_knee_flip(c, ik_v3(0, 1, 0), ta, ik_v3(0.2, 0.4, 0.1), ik_v3(0.3, 0.3, 0.3));
    json_decref(ta);
    proto_chain_unref(c);
}
END_TEST

/* A planar arm: the elbow side a seed chose survives an unreachable
 * target (where the arm is straight and either side is as near). */
START_TEST(test_stream_no_flip_planar)
{
    proto_error e;
    const char *cj = "{\"kind\":\"planar\",\"lengths\":[1,0.8]}";
    proto_chain *c = proto_chain_decode(cj, strlen(cj), NULL, &e);
    ck_assert_ptr_nonnull(c);
    for (int sgn = -1; sgn <= 1; sgn += 2) {
        json_t *t[4] = {json_pack("{s:[f,f]}", "position", 1.0, 0.8),
                        json_pack("{s:[f,f]}", "position", 5.0, 0.0),
                        json_pack("{s:[f,f]}", "position", 0.0, -4.0),
                        json_pack("{s:[f,f]}", "position", 0.9, -0.6)};
        char seed[64];
        snprintf(seed, sizeof seed, "{\"seed\":[0,%d]}", sgn);
        const char *extra[4] = {seed, NULL, NULL, NULL};
        json_t *jobs[4];
        stream_run(c, t, 4, NULL, extra, jobs);
        for (int i = 0; i < 4; i++) {
            json_t *r = json_incref(jobs[i]);
            double q1 = jnum(json_object_get(r, "joints"), 1);
            if (i == 0 || i == 3)
                ck_assert_msg(q1 * sgn > 0.1, "side %d, answer %d: theta1 %g", sgn, i, q1);
            json_decref(r);
            json_decref(t[i]);
            json_decref(jobs[i]);
        }
    }
    proto_chain_unref(c);
}
END_TEST

/* Joint chains: after a target the arm cannot reach (or a solve that
 * failed), the next solve starts from the last answer that succeeded, so
 * the joint values come back near it rather than wherever the failed
 * search ended. */
static void check_joints_stay(proto_chain *c, json_t *ta, json_t *tu, const char *options,
                              double tol)
{
    json_t *t[4] = {ta, tu, tu, ta};
    json_t *jobs[4];
    stream_run(c, t, 4, options, NULL, jobs);
    ck_assert_str_eq(status_of(jobs[0]), "success");
    ck_assert_str_ne(status_of(jobs[1]), "success");
    ck_assert_str_eq(status_of(jobs[3]), "success");
    json_t *r0 = json_incref(jobs[0]), *r3 = json_incref(jobs[3]);
    json_t *q0 = json_object_get(r0, "joints"), *q3 = json_object_get(r3, "joints");
    for (size_t k = 0; k < json_array_size(q0); k++)
        ck_assert_msg(fabs(ik_wrap_angle(jnum(q3, k) - jnum(q0, k))) < tol,
                      "joint %zu moved from %g to %g", k, jnum(q0, k), jnum(q3, k));
    json_decref(r0);
    json_decref(r3);
    for (int i = 0; i < 4; i++)
        json_decref(jobs[i]);
}

START_TEST(test_stream_no_flip_joints)
{
    char chain[4096];
    arm_json(chain, sizeof chain, "ros", false);
    proto_error e;
    proto_chain *c = proto_chain_decode(chain, strlen(chain), NULL, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    json_t *ta = json_pack("{s:[f,f,f]}", "position", 0.3, 0.4, 0.5);
    json_t *tu = json_pack("{s:[f,f,f]}", "position", -20.0, -3.0, -10.0);
    check_joints_stay(c, ta, tu, "{\"tolerance\":1e-9}", 1e-3);
    json_decref(ta);
    json_decref(tu);
    proto_chain_unref(c);

    /* the UR5 of tests/data with a full-pose target of its benchmark */
    char path[512];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", pc_data_dir());
    char *xml = pc_read_file(path, NULL);
    ck_assert_msg(xml != NULL, "cannot read %s", path);
    snprintf(path, sizeof path, "%s/targets/ur5.txt", pc_data_dir());
    char *targets = pc_read_file(path, NULL);
    ck_assert_ptr_nonnull(targets);
    char *s = strchr(targets, '|') + 1;
    double tv[7];
    for (int k = 0; k < 7; k++)
        tv[k] = strtod(s, &s);
    json_t *cj = json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", xml, "base",
                           "base_link", "tip", "tool0");
    c = proto_chain_decode_json(cj, "/chain", NULL, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ta = json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", tv[0], tv[1], tv[2], "orientation",
                   tv[3], tv[4], tv[5], tv[6]);
    tu = json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", -tv[0] * 30, tv[1] * 30, 9.0,
                   "orientation", tv[3], tv[4], tv[5], tv[6]);
    check_joints_stay(c, ta, tu, "{\"timeout_ms\":50}", 1e-3);
    json_decref(ta);
    json_decref(tu);
    json_decref(cj);
    proto_chain_unref(c);
    free(targets);
    free(xml);
}
END_TEST

START_TEST(test_status_codes)
{
    /* one iteration cannot reach a far pose: not converged -> no_ik_solution */
    char chain[4096], body[8192];
    arm_json(chain, sizeof chain, "ros", false);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0.5,0.4],\"orientation\":[1,0,0,0]},"
             "\"seed\":[0,0,0,0],\"options\":{\"max_iterations\":1,\"timeout_ms\":0}}",
             chain);
    json_t *r = ok(body, PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "no_ik_solution");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "code")), -31);
    ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "not_converged");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "iterations")), 1);
    json_decref(r);
}
END_TEST

/* proto_job_status, the word the daemon's metrics count: the one each
 * answer is encoded with, also once the encoder has noted it and when a
 * result's place is solved again for a later target (a batch answered in
 * pieces: an unreachable target after a reachable one in the same place,
 * and back). Reach is the test's own: a two-link arm of lengths 1 and 1
 * reaches a point at most 2 from its base. */
START_TEST(test_status_word_once_answered)
{
    const char *body = "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
                       "\"targets\":[{\"position\":[1,1]},{\"position\":[5,0]},"
                       "{\"position\":[0,1.5]},{\"position\":[0,-3]}]}";
    const double tx[] = {1, 5, 0, 0}, ty[] = {1, 0, 1.5, -3};
    proto_job *job;
    proto_error e;
    ck_assert_int_eq(proto_job_decode(body, strlen(body), PROTO_BATCH, NULL, NULL, NULL, &job, &e),
                     0);
    ck_assert_int_eq(proto_job_limit_results(job, 1), 0);
    for (size_t i = 0; i < 4; i++) {
        const char *want = hypot(tx[i], ty[i]) <= 2 ? "success" : "no_ik_solution";
        proto_job_run(job, i, i + 1);
        ck_assert_str_eq(proto_job_status(job, i), want);
        size_t counts[PROTO_COUNT_BUCKETS] = {0}, len;
        char *text = proto_job_encode_results(job, i, i + 1, counts, &len);
        json_t *r = json_loads(text + (text[0] == ','), 0, NULL); /* (a comma after the first) */
        ck_assert_msg(r != NULL, "%s", text);
        ck_assert_str_eq(json_string_value(json_object_get(r, "status")), want);
        ck_assert_str_eq(proto_job_status(job, i), want);
        json_decref(r);
        free(text);
    }
    proto_job_free(job);
}
END_TEST

/* options.max_joint_step with a seed: an answer within the step is given
 * with its "max_joint_step" (checked against the joints and the seed
 * here), a larger one is refused (no_ik_solution, joint_step, the seed
 * returned); without a seed, or on an analytic solver, the request is
 * refused with the option's path. */
START_TEST(test_max_joint_step)
{
    char chain[4096], body[8192];
    const double qt[4] = {0.3, 0.5, 0.8, -0.2};
    for (int deg = 0; deg < 2; deg++) {
        double u = deg ? 180 / IK_PI : 1;
        arm_json(chain, sizeof chain, "ros", deg);
        /* the target by this test's own FK of the arm */
        ik_joint j[5];
        for (size_t i = 0; i < 5; i++) {
            j[i].type = ARM[i].type == 'r' ? IK_JOINT_REVOLUTE : IK_JOINT_FIXED;
            j[i].origin.p = ik_v3(ARM[i].xyz[0], ARM[i].xyz[1], ARM[i].xyz[2]);
            j[i].origin.q = ik_quat_from_rpy(ARM[i].rpy[0], ARM[i].rpy[1], ARM[i].rpy[2]);
            j[i].axis = ik_v3(ARM[i].axis[0], ARM[i].axis[1], ARM[i].axis[2]);
            j[i].lower = -3;
            j[i].upper = 3;
        }
        ik_chain c;
        ck_assert_int_eq(chain_init(&c, j, 5), IK_OK);
        ik_vec3 p = ik_chain_fk(&c, qt).p;
        for (int far = 0; far < 2; far++) {
            double d = far ? 1.0 : 0.05, seed[4];
            for (int k = 0; k < 4; k++)
                seed[k] = (qt[k] + d) * u;
            snprintf(body, sizeof body,
                     "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g]},"
                     "\"seed\":[%.17g,%.17g,%.17g,%.17g],\"options\":{\"units\":\"%s\","
                     "\"max_joint_step\":%.17g,\"timeout_ms\":0,\"max_iterations\":3000}}",
                     chain, p.x, p.y, p.z, seed[0], seed[1], seed[2], seed[3],
                     deg ? "degrees" : "radians", 0.2 * u);
            json_t *r = ok(body, PROTO_SOLVE);
            const json_t *jq = json_object_get(r, "joints");
            double big = 0;
            for (size_t k = 0; k < 4; k++)
                big = fmax(big, fabs(jnum(jq, k) - seed[k]));
            double step = json_real_value(json_object_get(r, "max_joint_step"));
            if (far) {
                ck_assert_str_eq(json_string_value(json_object_get(r, "status")),
                                 "no_ik_solution");
                ck_assert_int_eq(json_integer_value(json_object_get(r, "code")), -31);
                ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "joint_step");
                ck_assert_double_eq_tol(big, 0, 1e-12); /* the seed: no motion */
                /* and the step reported is the one refused (issue 10), not
                 * the seed's own zero */
                ck_assert_double_gt(step, 0.2 * u);
            } else {
                ck_assert_double_eq_tol(step, big, 1e-9 * u);
                assert_success(r);
                ck_assert_double_le(big, 0.2 * u + 1e-12);
                double q[4];
                for (size_t k = 0; k < 4; k++)
                    q[k] = jnum(jq, k) / u;
                ck_assert_double_lt(ik_vec3_dist(ik_chain_fk(&c, q).p, p), 1e-5);
            }
            json_decref(r);
        }
    }
    /* no seed: nothing to measure a step from */
    arm_json(chain, sizeof chain, "ros", false);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.3,0.2,0.5]},"
             "\"options\":{\"max_joint_step\":0.2}}",
             chain);
    proto_job *job;
    proto_error e;
    ck_assert_int_eq(proto_job_decode(body, strlen(body), PROTO_SOLVE, NULL, NULL, NULL, &job, &e),
                     -1);
    ck_assert_str_eq(e.path, "/options/max_joint_step");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"targets\":[{\"position\":[0.3,0.2,0.5]},{\"position\":[0.3,0.2,0.5]}],"
             "\"seeds\":[[0,0,0,0],null],\"options\":{\"max_joint_step\":0.2}}",
             chain);
    ck_assert_int_eq(proto_job_decode(body, strlen(body), PROTO_BATCH, NULL, NULL, NULL, &job, &e),
                     -1);
    ck_assert_str_eq(e.path, "/seeds/1");
    const char *bad[] = {
        "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},\"target\":{\"position\":[1,1]},"
        "\"seed\":[0,0],\"options\":{\"max_joint_step\":0.2}}",
        "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},\"target\":{\"position\":[1,1]},"
        "\"seed\":[0,0],\"options\":{\"max_joint_step\":0}}",
    };
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(
            proto_job_decode(bad[i], strlen(bad[i]), PROTO_SOLVE, NULL, NULL, NULL, &job, &e), -1);
        ck_assert_str_eq(e.path, "/options/max_joint_step");
    }
}
END_TEST

/* MoveIt's moveit_msgs/MoveItErrorCodes, as the message defines them. */
static const struct {
    const char *name;
    int val;
} moveit_codes[] = {
    {"SUCCESS", 1},
    {"FAILURE", 99999},
    {"PLANNING_FAILED", -1},
    {"INVALID_MOTION_PLAN", -2},
    {"MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE", -3},
    {"CONTROL_FAILED", -4},
    {"UNABLE_TO_AQUIRE_SENSOR_DATA", -5},
    {"TIMED_OUT", -6},
    {"PREEMPTED", -7},
    {"START_STATE_IN_COLLISION", -10},
    {"START_STATE_VIOLATES_PATH_CONSTRAINTS", -11},
    {"GOAL_IN_COLLISION", -12},
    {"GOAL_VIOLATES_PATH_CONSTRAINTS", -13},
    {"GOAL_CONSTRAINTS_VIOLATED", -14},
    {"INVALID_GROUP_NAME", -15},
    {"INVALID_GOAL_CONSTRAINTS", -16},
    {"INVALID_ROBOT_STATE", -17},
    {"INVALID_LINK_NAME", -18},
    {"INVALID_OBJECT_NAME", -19},
    {"FRAME_TRANSFORM_FAILURE", -21},
    {"COLLISION_CHECKING_UNAVAILABLE", -22},
    {"ROBOT_STATE_STALE", -23},
    {"SENSOR_INFO_STALE", -24},
    {"NO_IK_SOLUTION", -31},
};

/* Every solver status (and one outside the table) is answered with a word
 * whose capitals are a MoveIt constant of exactly that value. */
START_TEST(test_moveit_codes_pinned)
{
    static const int statuses[] = {
#define ST(name, val, str, msg) val,
        IK_STATUS_MAP(ST)
#undef ST
            12345};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        const char *word = NULL;
        int code = proto__moveit(statuses[i], &word);
        ck_assert_ptr_nonnull(word);
        char up[64];
        size_t n = 0;
        for (; word[n] && n + 1 < sizeof up; n++)
            up[n] = (char)toupper((unsigned char)word[n]);
        up[n] = '\0';
        bool found = false;
        for (size_t k = 0; k < sizeof moveit_codes / sizeof moveit_codes[0]; k++)
            if (strcmp(moveit_codes[k].name, up) == 0) {
                found = true;
                ck_assert_msg(moveit_codes[k].val == code, "status %d: %s answered %d, MoveIt says %d",
                              statuses[i], up, code, moveit_codes[k].val);
            }
        ck_assert_msg(found, "status %d: %s is not a MoveIt code", statuses[i], up);
    }
    /* the two the issue named */
    const char *w;
    ck_assert_int_eq(proto__moveit(IK_EINVAL, &w), -16);
    ck_assert_str_eq(w, "invalid_goal_constraints");
    ck_assert_int_eq(proto__moveit(IK_ESTEP, &w), -31);
    /* the wire error table's MoveIt column: each code given is MoveIt's */
    for (int c = PROTO_E_NONE + 1; c < PROTO_E_COUNT; c++) {
        int mv = proto_error_moveit((proto_errcode)c);
        bool found = mv == 0;
        for (size_t k = 0; k < sizeof moveit_codes / sizeof moveit_codes[0]; k++)
            found |= moveit_codes[k].val == mv;
        ck_assert_msg(found, "error %s: MoveIt code %d is not MoveIt's",
                      proto_error_name((proto_errcode)c), mv);
    }
    ck_assert_int_eq(proto_error_moveit(PROTO_E_INVALID_REQUEST), -16);
}
END_TEST

START_TEST(test_solvers_describe)
{
    json_t *d = proto_solvers_describe(NULL);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "solvers")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(d, "limits"),
                                                        "max_joints")),
                     64);
    ck_assert(json_is_object(json_object_get(json_object_get(d, "options"), "frame")));
    json_decref(d);
}
END_TEST

/* The defaults GET /v1/solvers reports are the ones decoding and the
 * solvers use, with the JSON type of the option's values; where a default
 * depends on the solver it is given per solver. */
START_TEST(test_solvers_describe_defaults)
{
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_iterations = 777;
    lim.max_time_ms = 3;
    json_t *d = proto_solvers_describe(&lim);
    json_t *o = json_object_get(d, "options");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        json_t *def = json_object_get(v, "default");
        ck_assert_msg(def != NULL && !json_is_null(def), "options.%s has no default", key);
        json_t *vals = json_object_get(v, "values");
        /* a default listed with values has the values' type */
        if (vals && !json_is_object(def))
            ck_assert_msg(json_typeof(def) == json_typeof(json_array_get(vals, 0)),
                          "options.%s: default and values differ in type", key);
    }
    /* tolerance: per solver, the solvers' own */
    json_t *tol = json_object_get(json_object_get(o, "tolerance"), "default");
    ck_assert(json_is_object(tol));
    ik_numeric_opts no = ik_numeric_opts_default();
    ck_assert(json_is_real(json_object_get(tol, "numeric")));
    ck_assert_double_eq(json_real_value(json_object_get(tol, "numeric")), no.tol_pos);
    ck_assert_double_eq(json_real_value(json_object_get(tol, "fabrik")),
                        IK_ANIM_DEFAULT_TOLERANCE);
    ck_assert_double_eq(json_real_value(json_object_get(tol, "ccd")), IK_ANIM_DEFAULT_TOLERANCE);
    ck_assert_double_eq(
        json_real_value(json_object_get(json_object_get(o, "angular_tolerance"), "default")),
        no.tol_rot);
    /* max_iterations: the anim solvers' default, the daemon's cap for numeric */
    json_t *it = json_object_get(json_object_get(o, "max_iterations"), "default");
    ck_assert(json_is_object(it));
    ck_assert(json_is_integer(json_object_get(it, "numeric")));
    ck_assert_int_eq(json_integer_value(json_object_get(it, "numeric")), 777);
    ck_assert_int_eq(json_integer_value(json_object_get(it, "fabrik")),
                     IK_ANIM_DEFAULT_ITERATIONS);
    ck_assert_int_eq(json_integer_value(json_object_get(it, "ccd")), IK_ANIM_DEFAULT_ITERATIONS);
    /* timeout_ms: 5, but never above the daemon's cap */
    ck_assert_double_eq(
        json_real_value(json_object_get(json_object_get(o, "timeout_ms"), "default")), 3.0);
    /* bend: an integer per solver it applies to */
    json_t *b = json_object_get(json_object_get(o, "bend"), "default");
    ck_assert(json_is_object(b));
    static const char *const bs[] = {"two_link", "three_link", "three_link_3d"};
    for (int k = 0; k < 3; k++) {
        ck_assert(json_is_integer(json_object_get(b, bs[k])));
        ck_assert_int_eq(json_integer_value(json_object_get(b, bs[k])), 1);
    }
    json_decref(d);

    /* and they are what a request without the options gets: FABRIK and CCD
     * on a target inside the chain's length but nearer the root than the
     * bones can fold run exactly the reported iterations */
    static const char *const anim[] = {"fabrik", "ccd"};
    json_t *r = NULL;
    for (int k = 0; k < 2; k++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,1],[0,0,4]]},"
                 "\"target\":{\"position\":[0.1,0,0.4]},\"options\":{\"solver\":\"%s\"}}",
                 anim[k]);
        r = ok(body, PROTO_SOLVE);
        ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "no_ik_solution");
        ck_assert_int_eq(json_integer_value(json_object_get(r, "iterations")),
                         IK_ANIM_DEFAULT_ITERATIONS);
        json_decref(r);
    }
    /* a planar arm without bend or seed bends as with bend 1, not -1 */
    r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
           "\"target\":{\"position\":[1,1]}}",
           PROTO_SOLVE);
    json_t *r1 = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
                    "\"target\":{\"position\":[1,1]},\"options\":{\"bend\":1}}",
                    PROTO_SOLVE);
    double q = jnum(json_object_get(r, "joints"), 1), q1 = jnum(json_object_get(r1, "joints"), 1);
    ck_assert(fabs(q) > 0.1);
    ck_assert_double_eq_tol(q, q1, 1e-12);
    json_decref(r);
    json_decref(r1);
}
END_TEST

/* Planar chains live in their own x-y plane: a frame convention, in the
 * chain or in the options, would do nothing, so it is refused with its
 * path, whatever its value (even "ros"). */
/* proto_options_check and proto_chain_resolve, the two halves of a
 * request a stream's "open" checks on their own: the same answers as the
 * request decoder gives (paths under /options, unknown_chain at /chain_id). */
static void *lookup_one(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind != PROTO_REG_CHAIN)
        return NULL;
    proto_chain *c = ud;
    if (strcmp(id, proto_chain_id(c)) != 0)
        return NULL;
    proto_chain_ref(c);
    return c;
}

/* A stream's options, checked once when its session opens. */
static int session_check(const json_t *options, proto_chain *c, proto_error *e)
{
    proto_session *ss;
    int rc = proto_session_open(c, options, NULL, NULL, &ss, e);
    proto_session_free(rc == 0 ? ss : NULL);
    return rc;
}

START_TEST(test_options_check_and_chain_resolve)
{
    proto_error e;
    json_t *jp = json_loads("{\"kind\":\"planar\",\"lengths\":[1,1]}", 0, NULL);
    json_t *jb = json_loads("{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]}",
                            0, NULL);
    proto_chain *planar = proto_chain_resolve(jp, NULL, NULL, NULL, NULL, &e);
    proto_chain *bones = proto_chain_resolve(jb, "ignored", NULL, NULL, NULL, &e);
    ck_assert_ptr_nonnull(planar);
    ck_assert_ptr_nonnull(bones);

    json_t *o = json_loads("{\"frame\":\"unity\",\"units\":\"degrees\"}", 0, NULL);
    ck_assert_int_eq(session_check(NULL, planar, &e), 0);
    ck_assert_int_eq(session_check(o, bones, &e), 0);
    ck_assert_int_eq(session_check(o, planar, &e), -1);
    ck_assert_str_eq(e.path, "/options/frame");
    json_decref(o);
    o = json_loads("{\"units\":\"furlongs\"}", 0, NULL);
    ck_assert_int_eq(session_check(o, bones, &e), -1);
    ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
    ck_assert_str_eq(e.path, "/options/units");
    json_decref(o);

    proto_chain *again = proto_chain_resolve(NULL, proto_chain_id(bones), NULL, lookup_one, bones,
                                             &e);
    ck_assert_ptr_eq(again, bones);
    proto_chain_unref(again);
    ck_assert_ptr_null(proto_chain_resolve(NULL, "nope", NULL, lookup_one, bones, &e));
    ck_assert_str_eq(proto_error_name(e.code), "unknown_chain");
    ck_assert_str_eq(e.path, "/chain_id");
    ck_assert_int_eq(pc_http_status(e.code), 404);
    ck_assert_ptr_null(proto_chain_resolve(NULL, "nope", NULL, NULL, NULL, &e));
    ck_assert_str_eq(proto_error_name(e.code), "unknown_chain");

    proto_chain_unref(planar);
    proto_chain_unref(bones);
    json_decref(jp);
    json_decref(jb);
}
END_TEST

START_TEST(test_planar_takes_no_frame)
{
    static const char *const frames[] = {"ros", "unity", "unreal"};
    for (int k = 0; k < 3; k++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
                 "\"target\":{\"position\":[1,1]},\"options\":{\"frame\":\"%s\"}}",
                 frames[k]);
        pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/options/frame");
        proto_error e;
        ck_assert_ptr_null(pc_solve(body, PROTO_SOLVE, &e));
        ck_assert_msg(strstr(e.message, "planar") != NULL, "%s", e.message);
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1,0.5]},"
                 "\"targets\":[{\"position\":[1,1]}],\"options\":{\"frame\":\"%s\"}}",
                 frames[k]);
        pc_reject(body, PROTO_BATCH, "invalid_request", 400, "/options/frame");
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1],\"frame\":\"%s\"},"
                 "\"target\":{\"position\":[1,1]}}",
                 frames[k]);
        pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/chain/frame");
        ck_assert_ptr_null(pc_solve(body, PROTO_SOLVE, &e));
        ck_assert_msg(strstr(e.message, "planar") != NULL, "%s", e.message);
    }
    /* a stream's options are checked without a target (server/ws_stream.c opens its session
     * them when the stream opens): the frame is the error, not the missing
     * target */
    proto_error e;
    const char *cj = "{\"kind\":\"planar\",\"lengths\":[1,1]}";
    proto_chain *c = proto_chain_decode(cj, strlen(cj), NULL, &e);
    ck_assert_ptr_nonnull(c);
    json_t *probe = json_pack("{s:s}", "frame", "ros");
    proto_session *ss;
    ck_assert_int_eq(proto_session_open(c, probe, NULL, NULL, &ss, &e), -1);
    ck_assert_str_eq(e.path, "/options/frame");
    json_decref(probe);
    /* the other options stay fine on planar chains, and frames on the
     * others */
    json_t *r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},"
                   "\"target\":{\"position\":[1,1]},\"options\":{\"units\":\"degrees\"}}",
                   PROTO_SOLVE);
    ck_assert_ptr_null(json_object_get(r, "frame"));
    json_decref(r);
    r = ok("{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]},"
           "\"target\":{\"position\":[0.3,0.2,0.2]},\"options\":{\"frame\":\"unreal\"}}",
           PROTO_SOLVE);
    ck_assert_str_eq(json_string_value(json_object_get(r, "frame")), "unreal");
    json_decref(r);
    proto_chain_unref(c);
}
END_TEST

/* ---- rejections -------------------------------------------------------- */

#define PLANAR "\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]}"
#define BONES3 "\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,1,0],[0,2,0]]}"

START_TEST(test_rejections)
{
    /* malformed JSON, with line and column */
    proto_error e;
    ck_assert_ptr_null(pc_solve("{\n \"chain\": {,\n}", PROTO_SOLVE, &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    ck_assert_ptr_nonnull(strstr(e.message, "line 2"));
    pc_reject("", PROTO_SOLVE, "invalid_json", 400, "");
    pc_reject("[]", PROTO_SOLVE, "invalid_request", 400, "");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"target\":{}}", PROTO_SOLVE,
              "invalid_json", 400, "");
    /* missing and unknown fields, wrong types */
    pc_reject("{\"target\":{\"position\":[1,1]}}", PROTO_SOLVE, "invalid_request", 400, "/chain");
    pc_reject("{" PLANAR "}", PROTO_SOLVE, "invalid_request", 400, "/target");
    pc_reject("{" PLANAR ",\"target\":{\"positon\":[1,1]}}", PROTO_SOLVE, "invalid_request", 400,
              "/target/positon");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"option\":{}}", PROTO_SOLVE,
              "invalid_request", 400, "/option");
    pc_reject("{" PLANAR ",\"target\":{\"position\":\"1,1\"}}", PROTO_SOLVE, "invalid_request",
              400, "/target/position");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,true]}}", PROTO_SOLVE, "invalid_request",
              400, "/target/position/1");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1,0]}}", PROTO_SOLVE, "invalid_request",
              400, "/target/position");
    pc_reject("{" PLANAR ",\"targets\":[{\"position\":[1,1]}]}", PROTO_SOLVE, "invalid_request",
              400, "/targets");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]}}", PROTO_BATCH, "invalid_request", 400,
              "/target");
    /* numbers: non-finite literal, overflow, absurd magnitude */
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,NaN]}}", PROTO_SOLVE, "invalid_json", 400,
              "");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1e400]}}", PROTO_SOLVE, "invalid_json",
              400, "");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,2e6]}}", PROTO_SOLVE, "invalid_request",
              400, "/target/position/1");
    /* chain errors surface with their path inside the request */
    pc_reject("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0]},\"target\":{\"position\":[1,1]}}",
              PROTO_SOLVE, "invalid_chain", 422, "/chain/lengths/1");
    pc_reject("{" PLANAR ",\"chain_id\":\"x\",\"target\":{\"position\":[1,1]}}", PROTO_SOLVE,
              "invalid_request", 400, "/chain_id");
    /* seeds */
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"seed\":[0]}", PROTO_SOLVE,
              "invalid_request", 400, "/seed");
    pc_reject("{" PLANAR ",\"targets\":[{\"position\":[1,1]}],\"seeds\":[[0,0],[0,0]]}",
              PROTO_BATCH, "invalid_request", 400, "/seeds");
    pc_reject("{" PLANAR ",\"targets\":[{\"position\":[1,1]},{\"position\":[1,1]}],"
              "\"seeds\":[[0,0],[0]]}",
              PROTO_BATCH, "invalid_request", 400, "/seeds/1");
    pc_reject("{\"chain\":{\"kind\":\"links3d\",\"lengths\":[1,1,1]},"
              "\"target\":{\"position\":[1,1,0],\"up\":[0,0,1]},\"seed\":[0,0,0,0]}",
              PROTO_SOLVE, "invalid_request", 400, "/seed");
    /* options */
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"tolerance\":0}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/tolerance");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"tolerance\":-1}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/tolerance");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"timeout_ms\":-1}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/timeout_ms");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"timeout_ms\":5000}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/timeout_ms");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"max_iterations\":0}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/max_iterations");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"max_iterations\":2.5}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/max_iterations");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"frame\":\"maya\"}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/frame");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"units\":\"grad\"}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/units");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"bend\":0}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/bend");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1]},\"options\":{\"solver\":\"ccd\"}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/solver");
    pc_reject("{" BONES3 ",\"target\":{\"position\":[1,1,0]},\"options\":{\"solver\":\"numeric\"}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/solver");
    /* target fields the solver needs or would ignore */
    pc_reject("{\"chain\":{\"kind\":\"links3d\",\"lengths\":[1,1,1]},"
              "\"target\":{\"position\":[1,1,0]}}",
              PROTO_SOLVE, "invalid_request", 400, "/target/up");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1],\"up\":[0,1]}}", PROTO_SOLVE,
              "invalid_request", 400, "/target/up");
    pc_reject("{" BONES3 ",\"target\":{\"position\":[1,1,0],\"orientation\":[0,0,0,1]}}",
              PROTO_SOLVE, "invalid_request", 400, "/target/orientation");
    pc_reject("{" PLANAR ",\"target\":{\"position\":[1,1],\"pole\":[0,1]}}", PROTO_SOLVE,
              "invalid_request", 400, "/target/pole");
    pc_reject("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1,1]},"
              "\"targets\":[{\"position\":[1,1],\"up\":[0,1]},{\"position\":[1,1]}]}",
              PROTO_BATCH, "invalid_request", 400, "/targets/1/up");
    pc_reject("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1,1]},"
              "\"target\":{\"position\":[1,1],\"up\":[0,0]}}",
              PROTO_SOLVE, "invalid_request", 400, "/target/up");
    /* rotations: far from unit, not orthonormal, both given */
    char chain[4096], body[8192];
    arm_json(chain, sizeof chain, "ros", false);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],\"orientation\":[0,0,0,1.1]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/orientation");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],"
             "\"orientation\":[0,0,0,1.0004]}}",
             chain);
    json_t *r = ok(body, PROTO_SOLVE); /* near-unit is normalised */
    json_decref(r);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],"
             "\"rotation\":[[1,0,0],[0,1,0],[0,0.1,1]]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/rotation");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],"
             "\"rotation\":[[1,0,0],[0,1,0],[0,0,-1]]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/rotation");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],\"orientation\":[0,0,0,1],"
             "\"rotation\":[[1,0,0],[0,1,0],[0,0,1]]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/rotation");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],\"weights\":[0,0,0,0,0,0]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/weights");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],\"weights\":[1,1,1,1,0,0]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/weights");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5],\"weights\":[1,1,-1,0,0,0]}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/weights/2");
    snprintf(body, sizeof body, "{\"chain\":%s,\"target\":{\"position\":[0.2,0,0.5]},"
                                "\"seed\":[0,0,0,\"a\"]}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/seed/3");
}
END_TEST

START_TEST(test_limits)
{
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_targets = 2;
    proto_job *job;
    proto_error e;
    const char *b3 = "{" PLANAR ",\"targets\":[{\"position\":[1,1]},{\"position\":[1,1]},"
                     "{\"position\":[1,1]}]}";
    ck_assert_int_eq(proto_job_decode(b3, strlen(b3), PROTO_BATCH, &lim, NULL, NULL, &job, &e),
                     -1);
    ck_assert_str_eq(proto_error_name(e.code), "too_large");
    ck_assert_int_eq(pc_http_status(e.code), 413);
    ck_assert_str_eq(e.path, "/targets");
    lim.max_body_bytes = 10;
    ck_assert_int_eq(proto_job_decode(b3, strlen(b3), PROTO_BATCH, &lim, NULL, NULL, &job, &e),
                     -1);
    ck_assert_str_eq(proto_error_name(e.code), "too_large");
    ck_assert_str_eq(e.path, "");
    proto_limits_default(&lim);
    lim.max_joints = 3;
    const char *b4 = "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,1,0],[0,2,0],"
                     "[0,3,0]]},\"target\":{\"position\":[1,1,0]}}";
    ck_assert_int_eq(proto_job_decode(b4, strlen(b4), PROTO_SOLVE, &lim, NULL, NULL, &job, &e),
                     -1);
    ck_assert_str_eq(proto_error_name(e.code), "too_large");
    ck_assert_str_eq(e.path, "/chain/positions");
    proto_limits_default(&lim);
    lim.max_iterations = 50;
    const char *b5 = "{" PLANAR ",\"target\":{\"position\":[1,1]},"
                     "\"options\":{\"max_iterations\":51}}";
    ck_assert_int_eq(proto_job_decode(b5, strlen(b5), PROTO_SOLVE, &lim, NULL, NULL, &job, &e),
                     -1);
    ck_assert_str_eq(e.path, "/options/max_iterations");
}
END_TEST

/* ---- single solves read without a tree, against the tree ------------------ */

static unsigned long long fast_rng = 0x9e3779b97f4a7c15ULL;
static unsigned fast_rand(unsigned n)
{
    fast_rng ^= fast_rng << 13;
    fast_rng ^= fast_rng >> 7;
    fast_rng ^= fast_rng << 17;
    return (unsigned)(fast_rng % n);
}

static void fast_put(char *b, size_t *o, const char *s)
{
    size_t n = strlen(s);
    memcpy(b + *o, s, n);
    *o += n;
    b[*o] = '\0';
}

static void fast_ws(char *b, size_t *o)
{
    static const char *const ws[] = {"", "", "", " ", "\n ", "\t"};
    fast_put(b, o, ws[fast_rand(6)]);
}

static void fast_number(char *b, size_t *o, double around)
{
    char t[64];
    switch (fast_rand(10)) {
    case 0: snprintf(t, sizeof t, "%d", (int)fast_rand(5) - 2); break;
    case 1: snprintf(t, sizeof t, "%.17g", around); break;
    case 2: snprintf(t, sizeof t, "%.3E", around); break;
    case 3: snprintf(t, sizeof t, "%s", fast_rand(2) ? "1e6" : "1000000.5"); break;
    case 4: snprintf(t, sizeof t, "%s", fast_rand(2) ? "-0" : "0.0"); break;
    default: snprintf(t, sizeof t, "%.6f", around + 0.01 * ((int)fast_rand(101) - 50)); break;
    }
    fast_put(b, o, t);
}

static void fast_target(char *b, size_t *o)
{
    static const char *const keys[] = {"\"position\":", "\"orientation\":", "\"up\":",
                                       "\"pole\":"};
    static const double around[4][4] = {
        {0.3, 0.6, 0.2, 0}, {0, 0, 0.6, 0.8}, {0, 0, 1, 0}, {1, 0, 0.5, 0}};
    fast_put(b, o, "{");
    int members = (int)fast_rand(16) | 1, first = 1;
    for (int k = 0; k < 4; k++) {
        if (!(members & (1 << k)))
            continue;
        if (!first)
            fast_put(b, o, ",");
        first = 0;
        fast_ws(b, o);
        fast_put(b, o, keys[k]);
        fast_put(b, o, "[");
        int n = k == 1 ? 4 : fast_rand(15) ? 3 : 2; /* now and then a 2-D position */
        for (int i = 0; i < n; i++) {
            if (i)
                fast_put(b, o, ",");
            fast_number(b, o, around[k][i]);
        }
        fast_put(b, o, "]");
    }
    if (fast_rand(25) == 0)
        fast_put(b, o, ",\"weights\":[1,1,1,0,0,0]");
    fast_put(b, o, "}");
}

/* A random POST /v1/solve body: chains of several kinds (and broken ones),
 * by text or by id, targets, options, members in any order; now and then
 * what the tree-less reader declines. */
static void fast_body(char *b)
{
    static const char *const chains[] = {
        "{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]}",
        "{\"kind\":\"bones\",\"frame\":\"unity\",\"positions\":[[0,1,0],[0.1,0.5,0],[0,0,0]]}",
        "{ \"positions\": [[0,0,1],[0.1,0,0.55],[0,0,0.1]], \"kind\": \"bones\" }",
        "{\"kind\":\"planar\",\"lengths\":[1,0.8]}",
        "{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]},"
        "\"limits\":{\"lower\":-2,\"upper\":2}},"
        "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}",
        "{\"kind\":\"tree\",\"joints\":[{\"name\":\"s\",\"type\":\"continuous\","
        "\"axis\":[0,0,1]},{\"name\":\"a\",\"parent\":\"s\",\"type\":\"continuous\","
        "\"origin\":{\"xyz\":[1,0,0]},\"axis\":[0,0,1]},{\"name\":\"t\",\"parent\":\"a\","
        "\"type\":\"fixed\",\"origin\":{\"xyz\":[0.8,0,0]}}],\"tips\":[\"t\"]}",
        "{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,0],[0,1,0]]}",
        "{\"kind\":\"bones\"}",
        "{\"kind\":\"bones\",\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1,0]]}",
        "{\"kind\":\"bo\\u006ees\",\"positions\":[[0,0,0],[0,0.5,0],[0,1,0]]}",
        "[1,2]",
    };
    static const char *const opts[] = {
        "{\"fields\":[\"positions\"],\"digits\":6}", "{\"units\":\"degrees\"}",
        "{\"frame\":\"unreal\"}", "{\"solver\":\"two_bone\"}", "{\"solver\":\"fabrik\"}",
        "{\"max_joint_step\":0.1}", "{\"bogus\":1}", "{\"servo\":{\"period_s\":0.01}}",
        "{\"timeout_ms\":2,\"search\":\"nearest\"}", "{\"frame\":\"unity\",\"fields\":[\"joints\"]}",
    };
    size_t o = 0;
    b[0] = '\0';
    fast_put(b, &o, "{");
    int order[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) {
        int j = (int)fast_rand((unsigned)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int first = 1;
    for (int m = 0; m < 4; m++) {
        int what = order[m];
        if (what == 2 && fast_rand(3) == 0)
            continue; /* no options */
        if (what == 3 && fast_rand(12) != 0)
            continue; /* a seed now and then */
        if (!first)
            fast_put(b, &o, ",");
        first = 0;
        fast_ws(b, &o);
        if (what == 0) {
            if (fast_rand(8) == 0) {
                fast_put(b, &o, fast_rand(2) ? "\"chain_id\":\"registered\""
                                             : "\"chain_id\":\"nosuchchain\"");
            } else {
                fast_put(b, &o, "\"chain\":");
                fast_put(b, &o, chains[fast_rand(fast_rand(4) ? 5 : 11)]);
            }
        } else if (what == 1) {
            fast_put(b, &o, "\"target\":");
            fast_target(b, &o);
        } else if (what == 2) {
            fast_put(b, &o, "\"options\":");
            fast_put(b, &o, opts[fast_rand(10)]);
        } else {
            fast_put(b, &o, "\"seed\":[[0,0,0],[0.1,0.5,0],[0,1,0]]");
        }
    }
    fast_put(b, &o, "}");
    fast_ws(b, &o);
}

static proto_chain *fast_registered;

static void *fast_lookup(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind != PROTO_REG_CHAIN)
        return NULL;
    (void)ud;
    if (strcmp(id, "registered") != 0)
        return NULL;
    proto_chain_ref(fast_registered);
    return fast_registered;
}

static void fast_same_target(const proto_target *a, const proto_target *b)
{
    ck_assert(memcmp(&a->position, &b->position, sizeof a->position) == 0);
    ck_assert(a->has_orientation == b->has_orientation);
    ck_assert(memcmp(&a->orientation, &b->orientation, sizeof a->orientation) == 0);
    ck_assert(a->has_up == b->has_up && a->has_pole == b->has_pole);
    ck_assert(!a->has_up || memcmp(&a->up, &b->up, sizeof a->up) == 0);
    ck_assert(!a->has_pole || memcmp(&a->pole, &b->pole, sizeof a->pole) == 0);
    ck_assert(a->has_weights == b->has_weights);
}

/* 30,000 random bodies (on chains of five kinds, a tree among them, and
 * broken ones) decoded by proto_job_decode() (which reads the common
 * shape without a tree) and by the tree (proto_json_parse() then
 * proto_job_decode_json()): the same outcome, error word for word, the same
 * job (chain, solver, options, target, seeds), and, solved, the same
 * answer byte for byte (but for the numeric solver, whose search depends
 * on the clock). */
START_TEST(test_solve_reader_matches_tree)
{
    proto_error e;
    const char *reg = "{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]}";
    fast_registered = proto_chain_decode(reg, strlen(reg), NULL, &e);
    ck_assert_ptr_nonnull(fast_registered);
    proto_limits lim;
    proto_limits_default(&lim);
    size_t ok = 0, refused = 0;
    static char body[4096];
    for (int r = 0; r < 30000; r++) {
        fast_body(body);
        size_t len = strlen(body);
        proto_job *a = NULL, *b = NULL;
        proto_error ea, eb;
        int ra = proto_job_decode(body, len, PROTO_SOLVE, &lim, fast_lookup, NULL, &a, &ea);
        json_t *root = proto_json_parse(body, len, lim.max_body_bytes, PROTO_JSON_SOLVE, &eb);
        int rb = root ? proto_job_decode_json(root, PROTO_SOLVE, &lim, fast_lookup, NULL, &b, &eb)
                      : -1;
        json_decref(root);
        ck_assert_msg(ra == rb, "%s: %d against %d (%s)", body, ra, rb, ra ? ea.message : eb.message);
        if (ra != 0) {
            ck_assert_int_eq(ea.code, eb.code);
            ck_assert_str_eq(ea.message, eb.message);
            ck_assert_str_eq(ea.path, eb.path);
            refused++;
            continue;
        }
        ck_assert_str_eq(proto_chain_id(a->chain), proto_chain_id(b->chain));
        ck_assert_int_eq(a->solver, b->solver);
        ck_assert_uint_eq(a->n, b->n);
        ck_assert(memcmp(&a->opt, &b->opt, sizeof a->opt) == 0);
        ck_assert(a->dof == b->dof && a->npos == b->npos && a->nrot == b->nrot);
        fast_same_target(&a->targets[0], &b->targets[0]);
        ck_assert(a->has_seed[0] == b->has_seed[0]);
        if (a->solver != PROTO_SOLVER_NUMERIC) { /* its search depends on the clock */
            proto_job_run(a, 0, 1);
            proto_job_run(b, 0, 1);
            a->results[0].time_s = b->results[0].time_s = 0;
            size_t la, lb;
            char *ta = proto_job_encode(a, &la), *tb = proto_job_encode(b, &lb);
            ck_assert_str_eq(ta, tb);
            free(ta);
            free(tb);
        }
        proto_job_free(a);
        proto_job_free(b);
        ok++;
    }
    proto_chain_unref(fast_registered);
    ck_assert_msg(ok > 2000 && refused > 5000, "%zu solved, %zu refused", ok, refused);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_job");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_two_link);
    tcase_add_test(tc, test_two_link_bend_and_seed);
    tcase_add_test(tc, test_three_link_planar);
    tcase_add_test(tc, test_three_link_3d);
    tcase_add_test(tc, test_two_bone_and_pole);
    tcase_add_test(tc, test_fabrik_ccd);
    tcase_add_test(tc, test_skeleton);
    tcase_add_test(tc, test_joints_frames_and_units);
    tcase_add_test(tc, test_joints_rotation_matrix_and_weights);
    tcase_add_test(tc, test_ur5_worked_example);
    tcase_add_test(tc, test_batch);
    tcase_add_test(tc, test_chain_id_and_warm_start);
    tcase_add_test(tc, test_status_codes);
    tcase_add_test(tc, test_status_word_once_answered);
    tcase_add_test(tc, test_moveit_codes_pinned);
    tcase_add_test(tc, test_max_joint_step);
    tcase_add_test(tc, test_solvers_describe);
    tcase_add_test(tc, test_solvers_describe_defaults);
    tcase_add_test(tc, test_planar_takes_no_frame);
    tcase_add_test(tc, test_stream_no_flip_two_bone);
    tcase_add_test(tc, test_stream_no_flip_planar);
    tcase_add_test(tc, test_stream_no_flip_joints);
    tcase_add_test(tc, test_rejections);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_options_check_and_chain_resolve);
    tcase_add_test(tc, test_solve_reader_matches_tree);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
