/*
 * test_proto_joints_collide.c: collision geometry on chains and trees
 * given by a joint list (proto/README.md "Collisions", "Links of a joint
 * list"): the links named "base" and by the joints, the chain's
 * description of them, the errors with their paths, and an answer's
 * min_distance checked against forward kinematics and sphere-box and
 * sphere-sphere distances computed here (also for the same arm written in
 * Unreal's convention, whose spheres must be converted as its origins, and
 * for a tree of joints, whose hands hang from their parents' links).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_error.h"
#include "proto/proto_limits.h"

/* pan (z) at 0.2 up, lift (y) 0.1 above it, elbow (y) 0.4 above that, a
 * fixed tool 0.3 along the elbow's x. Written in ROS's convention, or
 * (unreal) in Unreal's: points (x, -y, z), axes -(x, -y, z). */
static json_t *arm(bool unreal)
{
    const double s = unreal ? -1.0 : 1.0; /* y of points; axes' sign */
    json_t *c =
        json_pack("{s:s, s:s, s:["
                  "{s:s, s:s, s:{s:[f,f,f]}, s:[f,f,f], s:{s:f, s:f}},"
                  "{s:s, s:s, s:{s:[f,f,f]}, s:[f,f,f], s:{s:f, s:f}},"
                  "{s:s, s:s, s:{s:[f,f,f]}, s:[f,f,f], s:{s:f, s:f}},"
                  "{s:s, s:s, s:{s:[f,f,f]}}],"
                  " s:{s:[[f,f,f,f]], s:[[f,f,f,f]], s:[[f,f,f,f]], s:[[f,f,f,f]]}}",
                  "kind", "joints", "frame", unreal ? "unreal" : "ros", "joints", /* */
                  "name", "pan", "type", "revolute", "origin", "xyz", 0.0, 0.0, 0.2, "axis", 0.0,
                  0.0, s, "limits", "lower", -3.0, "upper", 3.0, /* */
                  "name", "lift", "type", "revolute", "origin", "xyz", 0.0, 0.0, 0.1, "axis", 0.0,
                  1.0, 0.0, "limits", "lower", -1.8, "upper", 1.8, /* */
                  "name", "elbow", "type", "revolute", "origin", "xyz", 0.0, 0.0, 0.4, "axis", 0.0,
                  1.0, 0.0, "limits", "lower", 0.0, "upper", 2.6,                  /* */
                  "name", "tool", "type", "fixed", "origin", "xyz", 0.3, 0.0, 0.0, /* */
                  "collision_spheres", "base", 0.0, 0.0, 0.05, 0.05, "lift", 0.0, s * 0.02, 0.2,
                  0.05, "elbow", 0.15, s * 0.05, 0.0, 0.04, "tool", 0.0, 0.0, 0.0, 0.03);
    if (unreal) /* Unreal's z axis is ROS's, its pseudo-vectors flip */
        json_array_set_new(json_object_get(json_array_get(json_object_get(c, "joints"), 0), "axis"),
                           2, json_real(-1.0));
    return c;
}

/* Decodes body (a solve); 0 and *job, or -1 and *err. */
static int decode(json_t *body, proto_job **job, proto_error *err)
{
    char *text = json_dumps(body, JSON_COMPACT);
    int rc = proto_job_decode(text, strlen(text), PROTO_SOLVE, NULL, NULL, NULL, job, err);
    free(text);
    json_decref(body);
    return rc;
}

/* ---- the geometry, written for this test ---- */

typedef struct {
    double R[3][3], p[3];
} frame;

static frame frame_mul(frame a, frame b)
{
    frame r;
    for (int i = 0; i < 3; i++) {
        r.p[i] = a.p[i];
        for (int j = 0; j < 3; j++) {
            r.R[i][j] = 0;
            for (int k = 0; k < 3; k++)
                r.R[i][j] += a.R[i][k] * b.R[k][j];
            r.p[i] += a.R[i][j] * b.p[j];
        }
    }
    return r;
}

/* translate (x, y, z), then turn by q about z (axis 2) or y (axis 1) */
static frame joint(double x, double y, double z, int axis, double q)
{
    frame f = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {x, y, z}};
    const double c = cos(q), s = sin(q);
    if (axis == 2) {
        f.R[0][0] = c, f.R[0][1] = -s, f.R[1][0] = s, f.R[1][1] = c;
    } else if (axis == 1) {
        f.R[0][0] = c, f.R[0][2] = s, f.R[2][0] = -s, f.R[2][2] = c;
    }
    return f;
}

static void point(frame f, const double l[3], double out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = f.p[i] + f.R[i][0] * l[0] + f.R[i][1] * l[1] + f.R[i][2] * l[2];
}

/* signed distance of a point to the axis-aligned box (centre c, half h) */
static double box_distance(const double p[3], const double c[3], const double h[3])
{
    double d[3], out = 0, in = -INFINITY;
    for (int i = 0; i < 3; i++) {
        d[i] = fabs(p[i] - c[i]) - h[i];
        out += d[i] > 0 ? d[i] * d[i] : 0;
        in = fmax(in, d[i]);
    }
    return out > 0 ? sqrt(out) : in;
}

/* The arm's four spheres at joints q (ROS), with their bodies (0 base,
 * 2 lift, 3 elbow and tool), into w; and the least distance over the box
 * (centre c, half h), the ball o (centre, radius) and the pairs of
 * spheres on bodies that are not adjacent. */
static double expected_distance(const double q[3], const double c[3], const double h[3],
                                const double o[4], double w[4][3])
{
    frame pan = joint(0, 0, 0.2, 2, q[0]);
    frame lift = frame_mul(pan, joint(0, 0, 0.1, 1, q[1]));
    frame elbow = frame_mul(lift, joint(0, 0, 0.4, 1, q[2]));
    frame tool = frame_mul(elbow, joint(0.3, 0, 0, 0, 0));
    frame base = joint(0, 0, 0, 0, 0);
    const double local[4][4] = {
        {0, 0, 0.05, 0.05}, {0, 0.02, 0.2, 0.05}, {0.15, 0.05, 0, 0.04}, {0, 0, 0, 0.03}};
    const frame at[4] = {base, lift, elbow, tool};
    const int body[4] = {0, 2, 3, 3};
    double best = INFINITY;
    for (int s = 0; s < 4; s++) {
        point(at[s], local[s], w[s]);
        best = fmin(best, box_distance(w[s], c, h) - local[s][3]);
        best = fmin(best,
                    sqrt((w[s][0] - o[0]) * (w[s][0] - o[0]) + (w[s][1] - o[1]) * (w[s][1] - o[1]) +
                         (w[s][2] - o[2]) * (w[s][2] - o[2])) -
                        local[s][3] - o[3]);
    }
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++)
            if (abs(body[a] - body[b]) > 1)
                best = fmin(best, sqrt((w[a][0] - w[b][0]) * (w[a][0] - w[b][0]) +
                                       (w[a][1] - w[b][1]) * (w[a][1] - w[b][1]) +
                                       (w[a][2] - w[b][2]) * (w[a][2] - w[b][2])) -
                                      local[a][3] - local[b][3]);
    return best;
}

/* ---- tests ---- */

START_TEST(test_links_described)
{
    proto_limits lim;
    proto_limits_default(&lim);
    proto_error err;
    json_t *c = arm(false);
    json_object_set_new(c, "collision_skeleton", json_real(0.02));
    proto_chain *pc = proto_chain_decode_json(c, "/chain", &lim, &err);
    json_decref(c);
    ck_assert_msg(pc != NULL, "%s at %s", err.message, err.path);
    json_t *d = proto_chain_describe(pc);
    json_t *x = json_object_get(d, "collision");
    ck_assert_ptr_nonnull(x);
    json_t *links = json_object_get(x, "links");
    static const char *const names[] = {"base", "pan", "lift", "elbow", "tool"};
    static const char *const states[] = {"spheres", "skeleton", "spheres", "spheres", "spheres"};
    ck_assert_uint_eq(json_array_size(links), 5);
    for (size_t l = 0; l < 5; l++) {
        json_t *o = json_array_get(links, l);
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), names[l]);
        ck_assert_str_eq(json_string_value(json_object_get(o, "state")), states[l]);
    }
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(links, 0), "spheres")), 1);
    ck_assert_int_gt(json_integer_value(json_object_get(json_array_get(links, 1), "spheres")), 0);
    json_decref(d);
    proto_chain_unref(pc);
}
END_TEST

/* The error of a solve on chain c (taken) with a scene. */
static void refused(json_t *c, const char *code, const char *path)
{
    json_t *b = json_pack("{s:o, s:{s:[f,f,f]}, s:{s:[{s:[f,f,f], s:[f,f,f]}]}}", "chain", c,
                          "target", "position", 0.5, 0.0, 0.3, "scene", "boxes", "size", 0.1, 0.1,
                          0.1, "position", 2.0, 0.0, 0.0);
    char *text = json_dumps(b, JSON_COMPACT);
    proto_job *job = NULL;
    proto_error err;
    ck_assert_int_eq(decode(b, &job, &err), -1);
    ck_assert_msg(strcmp(proto_error_name(err.code), code) == 0 && strcmp(err.path, path) == 0,
                  "got %s at %s (%s) for %.300s", proto_error_name(err.code), err.path, err.message,
                  text);
    free(text);
}

static json_t *joint_of(json_t *c, size_t i)
{
    return json_array_get(json_object_get(c, "joints"), i);
}

START_TEST(test_errors)
{
    json_error_t je;
    json_t *c = arm(false);
    json_object_set_new(json_object_get(c, "collision_spheres"), "upper_arm",
                        json_loads("[[0,0,0,0.1]]", 0, &je));
    refused(c, "invalid_chain", "/chain/collision_spheres/upper_arm");
    c = arm(false);
    json_object_set_new(json_object_get(c, "collision_spheres"), "elbow",
                        json_loads("[[0,0,0,0.1],[0,0,0,-0.1]]", 0, &je));
    refused(c, "invalid_request", "/chain/collision_spheres/elbow/1");
    c = arm(false);
    json_object_set_new(json_object_get(c, "collision_spheres"), "elbow",
                        json_loads("[[0,0,0]]", 0, &je));
    refused(c, "invalid_request", "/chain/collision_spheres/elbow/0");
    c = arm(false); /* a joint named as the base link */
    json_object_set_new(joint_of(c, 0), "name", json_string("base"));
    refused(c, "invalid_chain", "/chain/joints/0/name");
    c = arm(false); /* two joints of one name name one link */
    json_object_set_new(joint_of(c, 2), "name", json_string("lift"));
    refused(c, "invalid_chain", "/chain/joints/2/name");
    c = arm(false);
    json_object_set_new(c, "srdf",
                        json_string("<robot name='a'><disable_collisions link1='base' "
                                    "link2='forearm' reason='Never'/></robot>"));
    refused(c, "invalid_srdf", "/chain/srdf");
    c = arm(false);
    json_object_set_new(c, "collision_skeleton", json_real(-0.1));
    refused(c, "invalid_request", "/chain/collision_skeleton");
    c = arm(false);
    json_object_set_new(c, "collision_spheres", json_array());
    refused(c, "invalid_request", "/chain/collision_spheres");
    c = arm(false); /* 1200 spheres over two links */
    for (int l = 0; l < 2; l++) {
        json_t *many = json_array();
        for (int i = 0; i < 600; i++)
            json_array_append_new(many, json_pack("[f,f,f,f]", 0.0, 0.0, (double)i, 0.01));
        json_object_set_new(json_object_get(c, "collision_spheres"), l ? "tool" : "elbow", many);
    }
    refused(c, "too_large", "/chain/collision_spheres");
    /* no collision members: no model, a scene is refused for that */
    c = arm(false);
    json_object_del(c, "collision_spheres");
    refused(c, "invalid_chain", "/scene");
    /* a tree of joints: the same names, a sphere on a link it lacks */
    c = json_loads("{\"kind\":\"tree\",\"tips\":[\"l\",\"r\"],\"joints\":["
                   "{\"name\":\"waist\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
                   "{\"name\":\"l\",\"parent\":\"waist\",\"type\":\"continuous\","
                   "\"origin\":{\"xyz\":[0,0.3,0]},\"axis\":[0,1,0]},"
                   "{\"name\":\"r\",\"parent\":\"waist\",\"type\":\"continuous\","
                   "\"origin\":{\"xyz\":[0,-0.3,0]},\"axis\":[0,1,0]}],"
                   "\"collision_spheres\":{\"l\":[[0,0,0,0.1]],\"hand\":[[0,0,0,0.1]]}}",
                   0, &je);
    ck_assert_ptr_nonnull(c);
    json_t *b = json_pack("{s:o, s:{s:{s:{s:[f,f,f]}}}}", "chain", c, "target", "tips", "l",
                          "position", 0.0, 0.3, 0.0);
    proto_job *job = NULL;
    proto_error err;
    ck_assert_int_eq(decode(b, &job, &err), -1);
    ck_assert_str_eq(proto_error_name(err.code), "invalid_chain");
    ck_assert_str_eq(err.path, "/chain/collision_spheres/hand");
}
END_TEST

/* A plain solve (no avoidance) with a box beside the arm and a ball just
 * above the elbow's sphere (off the arm's plane: an arm whose spheres were
 * not converted from Unreal's convention would be farther from it): its
 * min_distance is the one computed here from its joints, for the arm
 * written in ROS's and in Unreal's conventions alike. */
START_TEST(test_min_distance)
{
    const double c[3] = {0.45, 0.0, 0.1}, h[3] = {0.2, 0.3, 0.1};
    /* targets the tool reaches (forward kinematics here) */
    const double reach[3][3] = {{0.3, 0.7, 0.4}, {-0.4, 0.9, 1.2}, {1.2, 0.2, 1.0}};
    const double zero[3] = {0, 0, 0};
    double targets[3][3], ball[3][4], w[4][3];
    for (int t = 0; t < 3; t++) {
        const double none[4] = {0, 0, 0, 0};
        expected_distance(reach[t], c, h, none, w);
        ball[t][0] = w[2][0], ball[t][1] = w[2][1], ball[t][2] = w[2][2] + 0.07, ball[t][3] = 0.01;
        const double *r = reach[t];
        frame f =
            frame_mul(frame_mul(frame_mul(joint(0, 0, 0.2, 2, r[0]), joint(0, 0, 0.1, 1, r[1])),
                                joint(0, 0, 0.4, 1, r[2])),
                      joint(0.3, 0, 0, 0, 0));
        point(f, zero, targets[t]);
    }
    for (int u = 0; u < 2; u++)
        for (int t = 0; t < 3; t++) {
            json_t *b =
                json_pack("{s:o, s:{s:[f,f,f]}, s:[f,f,f], s:{s:[{s:[f,f,f], s:[f,f,f]}],"
                          " s:[{s:f, s:[f,f,f]}]}, s:{s:i, s:f}}",
                          "chain", arm(u == 1), "target", "position", targets[t][0], targets[t][1],
                          targets[t][2], "seed", reach[t][0], reach[t][1], reach[t][2], "scene",
                          "boxes", "size", 2 * h[0], 2 * h[1], 2 * h[2], "position", c[0], c[1],
                          c[2], "spheres", "radius", ball[t][3], "position", ball[t][0], ball[t][1],
                          ball[t][2], "options", "max_iterations", 500, "timeout_ms", 0.0);
            proto_job *job;
            proto_error err;
            ck_assert_msg(decode(b, &job, &err) == 0, "%s at %s", err.message, err.path);
            proto_job_run(job, 0, 1);
            size_t n;
            char *text = proto_job_encode(job, &n);
            json_error_t je;
            json_t *a = json_loads(text, 0, &je);
            ck_assert_ptr_nonnull(a);
            ck_assert_str_eq(json_string_value(json_object_get(a, "status")), "success");
            json_t *jq = json_object_get(a, "joints");
            double q[3];
            for (int i = 0; i < 3; i++)
                q[i] = json_number_value(json_array_get(jq, (size_t)i));
            json_t *md = json_object_get(a, "min_distance");
            ck_assert_msg(json_is_number(md), "no min_distance: %s", text);
            const double want = expected_distance(q, c, h, ball[t], w);
            ck_assert_double_eq_tol(json_number_value(md), want, 1e-9);
            ck_assert(want < 0.03); /* the ball is the nearest */
            json_decref(a);
            free(text);
            proto_job_free(job);
        }
}
END_TEST

/* A tree of joints: a waist about z, two arms about y 0.3 to each side,
 * each with a hand 0.3 along its x (a fixed joint, the tip) that has a
 * sphere; a box beside the left hand's target. min_distance is the one
 * computed here: the hands against the box, against each other and
 * against the base's sphere (none of them adjacent). */
START_TEST(test_tree_min_distance)
{
    json_error_t je;
    json_t *c = json_loads(
        "{\"kind\":\"tree\",\"tips\":[\"l_hand\",\"r_hand\"],\"joints\":["
        "{\"name\":\"waist\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"l\",\"parent\":\"waist\",\"type\":\"revolute\","
        "\"origin\":{\"xyz\":[0,0.3,0]},\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},"
        "{\"name\":\"l_hand\",\"parent\":\"l\",\"type\":\"fixed\","
        "\"origin\":{\"xyz\":[0.3,0,0]}},"
        "{\"name\":\"r\",\"parent\":\"waist\",\"type\":\"revolute\","
        "\"origin\":{\"xyz\":[0,-0.3,0]},\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},"
        "{\"name\":\"r_hand\",\"parent\":\"r\",\"type\":\"fixed\","
        "\"origin\":{\"xyz\":[0.3,0,0]}}],"
        "\"collision_spheres\":{\"base\":[[0,0,-0.2,0.1]],\"l_hand\":[[0,0,0,0.05]],"
        "\"r_hand\":[[0.02,0,0,0.04]]}}",
        0, &je);
    ck_assert_msg(c != NULL, "%s", je.text);
    const double bc[3] = {0.2, 0.45, -0.15}, bh[3] = {0.05, 0.05, 0.3};
    const double zero[3] = {0, 0, 0}, rc[3] = {0.02, 0, 0}, base_c[3] = {0, 0, -0.2};
    double goal[3]; /* the left hand at l 0.5 (the right one holds its pose) */
    point(frame_mul(frame_mul(joint(0, 0, 0, 2, 0.0), joint(0, 0.3, 0, 1, 0.5)),
                    joint(0.3, 0, 0, 0, 0)),
          zero, goal);
    json_t *b =
        json_pack("{s:o, s:{s:{s:{s:[f,f,f]}}}, s:{s:[{s:[f,f,f], s:[f,f,f]}]},"
                  " s:{s:i, s:f}}",
                  "chain", c, "target", "tips", "l_hand", "position", goal[0], goal[1], goal[2],
                  "scene", "boxes", "size", 2 * bh[0], 2 * bh[1], 2 * bh[2], "position", bc[0],
                  bc[1], bc[2], "options", "max_iterations", 500, "timeout_ms", 0.0);
    proto_job *job;
    proto_error err;
    ck_assert_msg(decode(b, &job, &err) == 0, "%s at %s", err.message, err.path);
    proto_job_run(job, 0, 1);
    size_t n;
    char *text = proto_job_encode(job, &n);
    json_t *a = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(a);
    /* the joints by name */
    json_t *names = json_object_get(a, "joint_names"), *jq = json_object_get(a, "joints");
    ck_assert_uint_eq(json_array_size(names), 3);
    double w = NAN, ql = NAN, qr = NAN;
    for (size_t i = 0; i < 3; i++) {
        const char *nm = json_string_value(json_array_get(names, i));
        double v = json_number_value(json_array_get(jq, i));
        if (strcmp(nm, "waist") == 0)
            w = v;
        else if (strcmp(nm, "l") == 0)
            ql = v;
        else if (strcmp(nm, "r") == 0)
            qr = v;
    }
    ck_assert_msg(isfinite(w) && isfinite(ql) && isfinite(qr), "%s", text);
    ck_assert_str_eq(json_string_value(json_object_get(a, "status")), "success");
    double lp[3], rp[3];
    point(
        frame_mul(frame_mul(joint(0, 0, 0, 2, w), joint(0, 0.3, 0, 1, ql)), joint(0.3, 0, 0, 0, 0)),
        zero, lp);
    point(frame_mul(frame_mul(joint(0, 0, 0, 2, w), joint(0, -0.3, 0, 1, qr)),
                    joint(0.3, 0, 0, 0, 0)),
          rc, rp);
    for (int i = 0; i < 3; i++) /* it reached the target */
        ck_assert_double_eq_tol(lp[i], goal[i], 1e-4);
    double want = fmin(box_distance(lp, bc, bh) - 0.05, box_distance(rp, bc, bh) - 0.04);
    want = fmin(want, sqrt((lp[0] - rp[0]) * (lp[0] - rp[0]) + (lp[1] - rp[1]) * (lp[1] - rp[1]) +
                           (lp[2] - rp[2]) * (lp[2] - rp[2])) -
                          0.09);
    want = fmin(want, sqrt((lp[0] - base_c[0]) * (lp[0] - base_c[0]) + lp[1] * lp[1] +
                           (lp[2] - base_c[2]) * (lp[2] - base_c[2])) -
                          0.15);
    want = fmin(want, sqrt((rp[0] - base_c[0]) * (rp[0] - base_c[0]) + rp[1] * rp[1] +
                           (rp[2] - base_c[2]) * (rp[2] - base_c[2])) -
                          0.14);
    json_t *md = json_object_get(a, "min_distance");
    ck_assert_msg(json_is_number(md), "no min_distance: %s", text);
    ck_assert_double_eq_tol(json_number_value(md), want, 1e-9);
    json_decref(a);
    free(text);
    proto_job_free(job);
}
END_TEST

static Suite *joints_collide_suite(void)
{
    Suite *s = suite_create("proto_joints_collide");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_links_described);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_min_distance);
    tcase_add_test(tc, test_tree_min_distance);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(joints_collide_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
