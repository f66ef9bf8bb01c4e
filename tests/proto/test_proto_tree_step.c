/*
 * test_proto_tree_step.c: what a tree answer reports about its motion and
 * its errors (proto/proto_kind_tree.c against proto/README.md, "How the
 * numeric solver chooses an answer", Responses, and STREAM.md's
 * max_joint_step):
 *   - a solution past options.max_joint_step is refused (no_ik_solution,
 *     reason joint_step, no cause), the joints answered are the seed's and
 *     max_joint_step is the motion that was refused, in options.units,
 *     whether an angular or a prismatic joint moves most; on requests and
 *     on a stream; an in_collision answer past the step alike;
 *   - an answer within the step reports the motion it asks for;
 *   - each tip's position_error and orientation_error, and the answer's
 *     (the largest over the tips), are those of the answered joints; an
 *     orientation the weights leave free still has its orientation_error.
 * Nothing is taken from the solver: the tree here has one solution inside
 * its limits for every target built from joint values (tip B's circle
 * fixes the shared joint s and its slider p, tip A's position then the
 * elbow a), so the refused motion is computed from those joint values,
 * and every pose by this file's own forward kinematics.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_session.h"
#include "solver/ik_math.h"
#include "tests/proto/proto_check.h"

/* s: the shared turn about z; tip A after the elbow a (1.0 then 0.8 along
 * x); tip B on a vertical slider p 0.5 behind s, 0.2 above it. */
static const char TREE[] =
    "{\"kind\":\"tree\",\"joints\":["
    "{\"name\":\"s\",\"type\":\"revolute\",\"axis\":[0,0,1],"
    "\"limits\":{\"lower\":-3,\"upper\":3}},"
    "{\"name\":\"a\",\"parent\":\"s\",\"type\":\"revolute\",\"origin\":{\"xyz\":[1.0,0,0]},"
    "\"axis\":[0,0,1],\"limits\":{\"lower\":0.05,\"upper\":3}},"
    "{\"name\":\"a_tip\",\"parent\":\"a\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0.8,0,0]}},"
    "{\"name\":\"p\",\"parent\":\"s\",\"type\":\"prismatic\",\"origin\":{\"xyz\":[-0.5,0,0]},"
    "\"axis\":[0,0,1],\"limits\":{\"lower\":-1,\"upper\":1}},"
    "{\"name\":\"b_tip\",\"parent\":\"p\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0,0,0.2]}}],"
    "\"tips\":[\"a_tip\",\"b_tip\"]}";

#define DEG (180.0 / IK_PI)

/* Tip A's and tip B's positions, and tip A's yaw, for q = (s, a, p) in
 * radians and metres. */
static ik_vec3 tip_a(const double *q)
{
    return ik_v3(cos(q[0]) + 0.8 * cos(q[0] + q[1]), sin(q[0]) + 0.8 * sin(q[0] + q[1]), 0.0);
}

static ik_vec3 tip_b(const double *q)
{
    return ik_v3(-0.5 * cos(q[0]), -0.5 * sin(q[0]), q[2] + 0.2);
}

static double dist(ik_vec3 u, ik_vec3 v)
{
    return sqrt((u.x - v.x) * (u.x - v.x) + (u.y - v.y) * (u.y - v.y) + (u.z - v.z) * (u.z - v.z));
}

/* The angle of the rotation from u to v (unit quaternions). */
static double quat_angle(ik_quat u, ik_quat v)
{
    /* conj(u) * v */
    double w = u.w * v.w + u.x * v.x + u.y * v.y + u.z * v.z;
    double x = u.w * v.x - u.x * v.w - u.y * v.z + u.z * v.y;
    double y = u.w * v.y + u.x * v.z - u.y * v.w - u.z * v.x;
    double z = u.w * v.z - u.x * v.y + u.y * v.x - u.z * v.w;
    return 2.0 * atan2(sqrt(x * x + y * y + z * z), fabs(w));
}

static ik_quat yaw_quat(double yaw)
{
    return (ik_quat){0.0, 0.0, sin(yaw / 2), cos(yaw / 2)};
}

/* The request: both tips' positions from joint values want (radians,
 * metres), tip A's orientation too when a_yaw is given (weighted by
 * a_weights when not NULL), the seed in `units`, these options. */
static char *request(const double *want, const double *a_yaw, const char *a_weights,
                     const double *seed_in, const char *options)
{
    ik_vec3 a = tip_a(want), b = tip_b(want);
    char ori[256] = "";
    if (a_yaw) {
        ik_quat o = yaw_quat(*a_yaw);
        snprintf(ori, sizeof ori, ",\"orientation\":[%.17g,%.17g,%.17g,%.17g]%s%s", o.x, o.y, o.z,
                 o.w, a_weights ? ",\"weights\":" : "", a_weights ? a_weights : "");
    }
    size_t size = sizeof TREE + 1024;
    char *body = malloc(size);
    ck_assert_ptr_nonnull(body);
    snprintf(body, size,
             "{\"chain\":%s,\"target\":{\"tips\":{"
             "\"a_tip\":{\"position\":[%.17g,%.17g,%.17g]%s},"
             "\"b_tip\":{\"position\":[%.17g,%.17g,%.17g]}}},"
             "\"seed\":[%.17g,%.17g,%.17g],\"options\":{%s}}",
             TREE, a.x, a.y, a.z, ori, b.x, b.y, b.z, seed_in[0], seed_in[1], seed_in[2], options);
    return body;
}

static json_t *solve(const char *body)
{
    proto_error e;
    json_t *r = pc_solve(body, PROTO_SOLVE, &e);
    ck_assert_msg(r != NULL, "rejected: %s at %s", e.message, e.path);
    return r;
}

/* The answer's joints in radians and metres (given in `units`). */
static void answered(const json_t *r, double scale, double *q)
{
    const json_t *j = json_object_get(r, "joints");
    ck_assert_uint_eq(json_array_size(j), 3);
    for (size_t v = 0; v < 3; v++)
        q[v] = json_number_value(json_array_get(j, v)) / (v < 2 ? scale : 1.0);
}

/* The largest motion from `from` to `to` (radians, metres) as README
 * states it: angles in units (scale: 1 or DEG), the slider in metres. */
static double motion(const double *from, const double *to, double scale)
{
    return fmax(fmax(fabs(to[0] - from[0]), fabs(to[1] - from[1])) * scale, fabs(to[2] - from[2]));
}

/* Each tip's position_error and orientation_error, and the answer's (the
 * largest), are those of the answered joints q against the targets built
 * from want (a_yaw: tip A's orientation, or NULL), angles in units. */
static void check_errors(const json_t *r, const double *q, const double *want, const double *a_yaw,
                         double scale)
{
    const json_t *tips = json_object_get(r, "tips");
    ck_assert_uint_eq(json_array_size(tips), 2);
    double ea = dist(tip_a(q), tip_a(want)), eb = dist(tip_b(q), tip_b(want));
    ck_assert_double_eq_tol(pc_num(json_array_get(tips, 0), "position_error"), ea, 1e-9);
    ck_assert_double_eq_tol(pc_num(json_array_get(tips, 1), "position_error"), eb, 1e-9);
    ck_assert_double_eq_tol(pc_num(r, "position_error"), fmax(ea, eb), 1e-9);
    ck_assert_double_le(
        dist(pc_vec(json_object_get(json_array_get(tips, 0), "position")), tip_a(q)), 1e-9);
    ck_assert_double_le(
        dist(pc_vec(json_object_get(json_array_get(tips, 1), "position")), tip_b(q)), 1e-9);
    /* tip B has no orientation to check */
    ck_assert_ptr_null(json_object_get(json_array_get(tips, 1), "orientation_error"));
    if (a_yaw) {
        double oa = quat_angle(yaw_quat(q[0] + q[1]), yaw_quat(*a_yaw)) * scale;
        ck_assert_double_eq_tol(pc_num(json_array_get(tips, 0), "orientation_error"), oa,
                                1e-9 * scale);
        ck_assert_double_eq_tol(pc_num(r, "orientation_error"), oa, 1e-9 * scale);
    } else {
        ck_assert_ptr_null(json_object_get(json_array_get(tips, 0), "orientation_error"));
        ck_assert_ptr_null(json_object_get(r, "orientation_error"));
    }
}

/* The cases: the joint values the targets come from, the seed (radians,
 * metres), the units, and max_joint_step in those units, below the motion. */
typedef struct step_case {
    double want[3], seed[3];
    bool degrees;
    double step_in;
} step_case;

static const step_case CASES[] = {
    /* the shared turn moves most (0.7 rad) */
    {{0.9, 1.4, 0.3}, {0.2, 1.0, 0.1}, false, 0.35},
    /* the slider moves most (0.8 m; the angles 0.05 rad) */
    {{0.25, 1.05, 0.9}, {0.2, 1.0, 0.1}, false, 0.3},
    /* degrees: 0.7 rad is 40.1 degrees, the slider's 0.2 m below 20 */
    {{0.9, 1.4, 0.3}, {0.2, 1.0, 0.1}, true, 20.0},
    /* degrees, the slider past the step: 0.8 m against 0.5 (the angles,
     * 0.29 degrees, within it) */
    {{0.205, 0.995, 0.9}, {0.2, 1.0, 0.1}, true, 0.5},
};

/* A solution past options.max_joint_step is refused: joint_step, no
 * cause, the seed's joints, max_joint_step the motion refused (that of
 * the one solution, in units), the tips and errors those of the seed. */
START_TEST(test_refused_reports_the_step)
{
    const step_case *c = &CASES[_i];
    const double scale = c->degrees ? DEG : 1.0;
    const double seed_in[3] = {c->seed[0] * scale, c->seed[1] * scale, c->seed[2]};
    char opts[256];
    snprintf(opts, sizeof opts,
             "\"units\":\"%s\",\"max_joint_step\":%.17g,\"timeout_ms\":0,\"max_iterations\":10000",
             c->degrees ? "degrees" : "radians", c->step_in);
    char *body = request(c->want, NULL, NULL, seed_in, opts);
    json_t *r = solve(body);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "no_ik_solution");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "code")), -31);
    ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "joint_step");
    ck_assert_ptr_null(json_object_get(r, "cause")); /* solutions exist */
    const json_t *q = json_object_get(r, "joints");
    for (size_t v = 0; v < 3; v++)
        ck_assert_double_eq_tol(json_number_value(json_array_get(q, v)), seed_in[v], 1e-12);
    const double refused = motion(c->seed, c->want, scale);
    ck_assert_double_gt(refused, c->step_in);
    ck_assert_msg(fabs(pc_num(r, "max_joint_step") - refused) <= 1e-4 * scale,
                  "case %d: max_joint_step %.9g, the motion refused %.9g", _i,
                  pc_num(r, "max_joint_step"), refused);
    /* the tips where the seed leaves them, not on target */
    const json_t *tips = json_object_get(r, "tips");
    for (size_t t = 0; t < 2; t++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tips, t), "status")),
                         "no_ik_solution");
    check_errors(r, c->seed, c->want, NULL, scale);
    json_decref(r);
    free(body);
}
END_TEST

/* Within the step (or without one) the answer is the one solution, and
 * max_joint_step the motion it asks for, from its joints and the seed;
 * each tip's errors, tip A's orientation_error included, those of the
 * answered joints. */
START_TEST(test_answer_reports_its_motion)
{
    const step_case *c = &CASES[_i];
    const double scale = c->degrees ? DEG : 1.0;
    const double seed_in[3] = {c->seed[0] * scale, c->seed[1] * scale, c->seed[2]};
    for (int with_step = 0; with_step < 2; with_step++) {
        char opts[256];
        snprintf(opts, sizeof opts, "\"units\":\"%s\",%s\"timeout_ms\":0,\"max_iterations\":10000",
                 c->degrees ? "degrees" : "radians", with_step ? "\"max_joint_step\":60," : "");
        /* tip A's full pose: its yaw is s + a */
        const double yaw = c->want[0] + c->want[1];
        char *body = request(c->want, &yaw, NULL, seed_in, opts);
        json_t *r = solve(body);
        ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "success");
        double q[3];
        answered(r, scale, q);
        for (size_t v = 0; v < 3; v++)
            ck_assert_double_eq_tol(q[v], c->want[v], 1e-4);
        ck_assert_double_le(dist(tip_a(q), tip_a(c->want)), 2e-5);
        ck_assert_double_le(dist(tip_b(q), tip_b(c->want)), 2e-5);
        ck_assert_double_eq_tol(pc_num(r, "max_joint_step"), motion(c->seed, q, scale),
                                1e-9 * scale);
        check_errors(r, q, c->want, &yaw, scale);
        json_decref(r);
        free(body);
    }
}
END_TEST

/* A tip's orientation that its weights leave free (README, Responses:
 * orientation_error on weighted targets, on each tip of a tree): the tip's
 * orientation_error is still the angle to it, and the answer's the largest
 * over the tips, as on chains (proto_serial.c). */
START_TEST(test_weighted_orientation_error)
{
    const step_case *c = &CASES[_i];
    const double scale = c->degrees ? DEG : 1.0;
    const double seed_in[3] = {c->seed[0] * scale, c->seed[1] * scale, c->seed[2]};
    char opts[128];
    snprintf(opts, sizeof opts, "\"units\":\"%s\",\"timeout_ms\":0,\"max_iterations\":10000",
             c->degrees ? "degrees" : "radians");
    /* tip A's yaw 0.4 rad off the one its position gives: the position
     * alone is weighted, so the solve succeeds */
    const double yaw = c->want[0] + c->want[1] + 0.4;
    char *body = request(c->want, &yaw, "[1,1,1,0,0,0]", seed_in, opts);
    json_t *r = solve(body);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "success");
    double q[3];
    answered(r, scale, q);
    for (size_t v = 0; v < 3; v++)
        ck_assert_double_eq_tol(q[v], c->want[v], 1e-4);
    ck_assert_ptr_nonnull(
        json_object_get(json_array_get(json_object_get(r, "tips"), 0), "orientation_error"));
    check_errors(r, q, c->want, &yaw, scale);
    json_decref(r);
    free(body);
}
END_TEST

/* The same tree from a URDF with a sphere (radius 0.05) on tip A, for
 * collision-aware solves. */
static const char URDF[] =
    "<robot name='t'><link name='base'/>"
    "<joint name='s' type='revolute'><parent link='base'/><child link='ls'/>"
    "<axis xyz='0 0 1'/><limit lower='-3' upper='3' effort='1' velocity='1'/></joint>"
    "<link name='ls'/>"
    "<joint name='a' type='revolute'><parent link='ls'/><child link='la'/><origin xyz='1 0 0'/>"
    "<axis xyz='0 0 1'/><limit lower='0.05' upper='3' effort='1' velocity='1'/></joint>"
    "<link name='la'/>"
    "<joint name='at' type='fixed'><parent link='la'/><child link='a_tip'/>"
    "<origin xyz='0.8 0 0'/></joint>"
    "<link name='a_tip'><collision><geometry><sphere radius='0.05'/></geometry></collision>"
    "</link>"
    "<joint name='p' type='prismatic'><parent link='ls'/><child link='lp'/>"
    "<origin xyz='-0.5 0 0'/><axis xyz='0 0 1'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "<link name='lp'/>"
    "<joint name='bt' type='fixed'><parent link='lp'/><child link='b_tip'/>"
    "<origin xyz='0 0 0.2'/></joint><link name='b_tip'/></robot>";

/* Every solution in collision (a ball of radius 0.1 on tip A's target)
 * and past the step: the in_collision answer is refused as a solution is
 * (README: no answer moves past the step; a joint_step refusal has no
 * cause), max_joint_step the motion refused, min_distance the seed's. */
START_TEST(test_in_collision_refused)
{
    const step_case *c = &CASES[0];
    ik_vec3 a = tip_a(c->want), b = tip_b(c->want);
    json_t *req = json_pack(
        "{s:{s:s, s:s, s:s, s:[s,s]}, s:{s:{s:{s:[f,f,f]}, s:{s:[f,f,f]}}}, s:[f,f,f],"
        " s:{s:[{s:s, s:f, s:[f,f,f]}]}, s:{s:b, s:f, s:f, s:f, s:i}}",
        "chain", "kind", "tree", "urdf", URDF, "base", "base", "tips", "a_tip", "b_tip", "target",
        "tips", "a_tip", "position", a.x, a.y, a.z, "b_tip", "position", b.x, b.y, b.z, "seed",
        c->seed[0], c->seed[1], c->seed[2], "scene", "spheres", "name", "ball", "radius", 0.1,
        "position", a.x, a.y, a.z, "options", "avoid_collisions", 1, "collision_margin", 0.01,
        "max_joint_step", c->step_in, "timeout_ms", 0.0, "max_iterations", 3000);
    ck_assert_ptr_nonnull(req);
    char *body = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_t *r = solve(body);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "no_ik_solution");
    ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "joint_step");
    ck_assert_msg(json_object_get(r, "cause") == NULL, "cause %s",
                  json_string_value(json_object_get(r, "cause")));
    double q[3];
    answered(r, 1.0, q);
    for (size_t v = 0; v < 3; v++)
        ck_assert_double_eq_tol(q[v], c->seed[v], 1e-12);
    ck_assert_double_eq_tol(pc_num(r, "max_joint_step"), motion(c->seed, c->want, 1.0), 1e-4);
    ck_assert_double_eq_tol(pc_num(r, "min_distance"), dist(tip_a(c->seed), a) - 0.15, 1e-9);
    check_errors(r, c->seed, c->want, NULL, 1.0);
    json_decref(r);
    free(body);
    json_decref(req);
}
END_TEST

/* A stream (STREAM.md): a jump past max_joint_step is refused with the
 * previous joints and the step refused; the next target, near, is solved
 * from there and reports its own motion from them. */
START_TEST(test_stream_refusal)
{
    const step_case *c = &CASES[0];
    proto_error e;
    json_error_t je;
    json_t *chain = json_loads(TREE, 0, &je);
    ck_assert_ptr_nonnull(chain);
    proto_chain *pc = proto_chain_decode_json(chain, "/chain", NULL, &e);
    ck_assert_msg(pc != NULL, "%s at %s", e.message, e.path);
    json_t *seed = json_pack("[f,f,f]", c->seed[0], c->seed[1], c->seed[2]);
    json_t *opts = json_pack("{s:f, s:f, s:i}", "max_joint_step", c->step_in, "timeout_ms", 0.0,
                             "max_iterations", 10000);
    proto_session *s = NULL;
    ck_assert_msg(proto_session_open(pc, opts, seed, NULL, &s, &e) == 0, "%s at %s", e.message,
                  e.path);
    proto_chain_unref(pc);
    const double near[3] = {c->seed[0] + 0.1, c->seed[1] - 0.1, c->seed[2] + 0.05};
    const double *wants[2] = {c->want, near};
    for (int k = 0; k < 2; k++) {
        ik_vec3 a = tip_a(wants[k]), b = tip_b(wants[k]);
        json_t *tg = json_pack("{s:{s:{s:[f,f,f]}, s:{s:[f,f,f]}}}", "tips", "a_tip", "position",
                               a.x, a.y, a.z, "b_tip", "position", b.x, b.y, b.z);
        proto_job *job = NULL;
        ck_assert_msg(proto_session_target(s, tg, NULL, &job, &e) == 0, "%s at %s", e.message,
                      e.path);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *r = proto_job_result_json(job, 0);
        double q[3];
        answered(r, 1.0, q);
        if (k == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "joint_step");
            for (size_t v = 0; v < 3; v++)
                ck_assert_double_eq_tol(q[v], c->seed[v], 1e-12);
            ck_assert_double_eq_tol(pc_num(r, "max_joint_step"), motion(c->seed, c->want, 1.0),
                                    1e-4);
        } else {
            ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "success");
            for (size_t v = 0; v < 3; v++)
                ck_assert_double_eq_tol(q[v], near[v], 1e-4);
            ck_assert_double_eq_tol(pc_num(r, "max_joint_step"), motion(c->seed, q, 1.0), 1e-9);
        }
        check_errors(r, q, wants[k], NULL, 1.0);
        proto_session_solved(s, job);
        json_decref(r);
        json_decref(tg);
    }
    proto_session_free(s);
    json_decref(opts);
    json_decref(seed);
    json_decref(chain);
}
END_TEST

static Suite *step_suite(void)
{
    Suite *s = suite_create("proto_tree_step");
    TCase *tc = tcase_create("step");
    tcase_set_timeout(tc, 60);
    const int n = (int)(sizeof CASES / sizeof CASES[0]);
    tcase_add_loop_test(tc, test_refused_reports_the_step, 0, n);
    tcase_add_loop_test(tc, test_answer_reports_its_motion, 0, n);
    tcase_add_loop_test(tc, test_weighted_orientation_error, 0, n);
    tcase_add_test(tc, test_stream_refusal);
    tcase_add_test(tc, test_in_collision_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(step_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
