/*
 * test_proto_seed.c: seeds of joint values on the wire (issue 23): the
 * name-to-value form (ROS JointState style) on chains with named joints,
 * its missing joints at their default start (mid-limits), unknown names
 * refused at /seed/<name>; and the units check, which refuses a seed value
 * more than a turn outside its joint's range, and a joints chain's
 * revolute limit beyond two turns in radians, each with a message naming
 * the units it was read in and the JSON path.
 *
 * Answers are checked by forward kinematics computed here (ik_chain_fk on
 * the chain read from the URDF; the joint-list FK of proto_check.h), and
 * a map's answer against the same request with the list the map stands
 * for, never against a value the solver reported.
 */
#include "tests/proto/proto_check.h"

#include "proto/proto_session.h"
#include "tests/proto/urdf_read.h"
#include "tests/solver/storage.h"

static const char *const UR5_NAMES[6] = {"shoulder_pan_joint", "shoulder_lift_joint",
                                         "elbow_joint",        "wrist_1_joint",
                                         "wrist_2_joint",      "wrist_3_joint"};

static char *g_xml;
static size_t g_len;
static ik_chain g_chain;

static void ur5_load(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", pc_data_dir());
    g_xml = pc_read_file(path, &g_len);
    ck_assert_msg(g_xml != NULL, "cannot read %s", path);
    ik_joint joints[32];
    size_t n;
    proto_error e;
    ck_assert_int_eq(proto_urdf_chain(g_xml, g_len, "base_link", "tool0", joints, 32, &n, NULL, &e),
                     0);
    ck_assert_int_eq(chain_init(&g_chain, joints, n), IK_OK);
    ck_assert_uint_eq(g_chain.dof, 6);
}

/* A UR5 request: the pose of joints q0 as target, seed (JSON text), options
 * (JSON text or NULL); "seeds" instead when batch (seed is then the array). */
static char *ur5_body(const double *q0, const char *seed, const char *options, bool batch)
{
    ik_xform x = ik_chain_fk(&g_chain, q0);
    json_t *req = json_pack("{s:{s:s, s:s, s:s, s:s}}", "chain", "kind", "urdf", "urdf", g_xml,
                            "base", "base_link", "tip", "tool0");
    json_t *t = json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", x.p.x, x.p.y, x.p.z,
                          "orientation", x.q.x, x.q.y, x.q.z, x.q.w);
    if (batch)
        json_object_set_new(req, "targets", json_pack("[o,O]", t, t));
    else
        json_object_set_new(req, "target", t);
    json_object_set_new(req, batch ? "seeds" : "seed", json_loads(seed, 0, NULL));
    json_object_set_new(req, "options", json_loads(options ? options : "{}", 0, NULL));
    char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(req);
    return b;
}

/* The result's joints, checked on the target by FK. */
static void ur5_joints(const json_t *res, const double *q0, double *q)
{
    ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
    const json_t *a = json_object_get(res, "joints");
    ck_assert_uint_eq(json_array_size(a), 6);
    for (size_t k = 0; k < 6; k++)
        q[k] = json_number_value(json_array_get(a, k));
    ik_xform want = ik_chain_fk(&g_chain, q0), got = ik_chain_fk(&g_chain, q);
    ck_assert_double_le(ik_vec3_dist(want.p, got.p), 1e-5);
}

static const json_t *first(const json_t *r)
{
    const json_t *a = json_object_get(r, "results");
    return a ? json_array_get(a, 0) : r;
}

START_TEST(test_map_seed_same_as_list)
{
    ur5_load();
    const double q0[6] = {0.4, -1.1, 1.3, -0.6, 1.2, 0.3};
    const double s[6] = {0.5, -1.0, 1.1, -0.4, 1.0, 0.1};
    char list[256], map[512];
    snprintf(list, sizeof list, "[%.17g,%.17g,%.17g,%.17g,%.17g,%.17g]", s[0], s[1], s[2], s[3],
             s[4], s[5]);
    /* the names out of order: a map has none */
    snprintf(map, sizeof map,
             "{\"%s\":%.17g,\"%s\":%.17g,\"%s\":%.17g,\"%s\":%.17g,\"%s\":%.17g,"
             "\"%s\":%.17g}",
             UR5_NAMES[5], s[5], UR5_NAMES[0], s[0], UR5_NAMES[3], s[3], UR5_NAMES[1], s[1],
             UR5_NAMES[4], s[4], UR5_NAMES[2], s[2]);
    const char *opts[2] = {"{\"search\":\"nearest\"}",
                           "{\"solver\":\"numeric\",\"max_joint_step\":1.5}"};
    for (int o = 0; o < 2; o++) {
        char *bl = ur5_body(q0, list, opts[o], false), *bm = ur5_body(q0, map, opts[o], false);
        proto_error e;
        json_t *rl = pc_solve(bl, PROTO_SOLVE, &e);
        ck_assert_msg(rl != NULL, "list refused: %s", e.message);
        json_t *rm = pc_solve(bm, PROTO_SOLVE, &e);
        ck_assert_msg(rm != NULL, "map refused: %s at %s", e.message, e.path);
        double ql[6], qm[6];
        ur5_joints(first(rl), q0, ql);
        ur5_joints(first(rm), q0, qm);
        for (size_t k = 0; k < 6; k++)
            ck_assert_double_eq_tol(ql[k], qm[k], 1e-12);
        /* the step is measured from the map's values */
        ck_assert_double_eq_tol(pc_num(first(rl), "max_joint_step"),
                                pc_num(first(rm), "max_joint_step"), 1e-12);
        json_decref(rl);
        json_decref(rm);
        free(bl);
        free(bm);
    }
    /* a batch's seeds, one a map, one a list */
    char both[1024];
    snprintf(both, sizeof both, "[%s,%s]", map, list);
    char *bb = ur5_body(q0, both, "{\"search\":\"nearest\"}", true);
    proto_error e;
    json_t *rb = pc_solve(bb, PROTO_BATCH, &e);
    ck_assert_msg(rb != NULL, "batch refused: %s at %s", e.message, e.path);
    double q1[6], q2[6];
    ur5_joints(json_array_get(json_object_get(rb, "results"), 0), q0, q1);
    ur5_joints(json_array_get(json_object_get(rb, "results"), 1), q0, q2);
    for (size_t k = 0; k < 6; k++)
        ck_assert_double_eq_tol(q1[k], q2[k], 1e-12);
    json_decref(rb);
    free(bb);
    free(g_xml);
}
END_TEST

/* A joints chain of three revolute joints with limits [0, 2] (mid 1) and
 * names a, b, c. */
static char *abc_body(const char *seed, const char *chain_units, const char *units)
{
    char *b = malloc(2048);
    snprintf(
        b, 2048,
        "{\"chain\":{\"kind\":\"joints\"%s,\"joints\":["
        "{\"name\":\"a\",\"type\":\"revolute\",\"axis\":[0,0,1],\"limits\":{\"lower\":0,"
        "\"upper\":%s}},"
        "{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,0.3]},"
        "\"limits\":{\"lower\":0,\"upper\":2}},"
        "{\"name\":\"c\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0.3,0,0]},"
        "\"limits\":{\"lower\":0,\"upper\":2}},"
        "{\"name\":\"tip\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0.2,0,0]}}]},"
        "\"target\":{\"position\":[0.25,0.1,0.1]},\"seed\":%s,\"options\":{\"search\":"
        "\"nearest\",\"units\":\"%s\"}}",
        chain_units ? chain_units : "", chain_units ? "114.59" : "2", seed,
        units ? units : "radians");
    return b;
}

START_TEST(test_map_missing_names_take_mid_limits)
{
    char *bl = abc_body("[1,0.5,1]", NULL, NULL), *bm = abc_body("{\"b\":0.5}", NULL, NULL);
    proto_error e;
    json_t *rl = pc_solve(bl, PROTO_SOLVE, &e);
    ck_assert_msg(rl != NULL, "list refused: %s", e.message);
    json_t *rm = pc_solve(bm, PROTO_SOLVE, &e);
    ck_assert_msg(rm != NULL, "map refused: %s at %s", e.message, e.path);
    const json_t *jl = json_object_get(first(rl), "joints"),
                 *jm = json_object_get(first(rm), "joints");
    ck_assert_uint_eq(json_array_size(jl), 3);
    for (size_t k = 0; k < 3; k++)
        ck_assert_double_eq_tol(json_number_value(json_array_get(jl, k)),
                                json_number_value(json_array_get(jm, k)), 1e-12);
    /* the step is measured from the map's values (mid-limits filled in) */
    ck_assert_double_eq_tol(pc_num(first(rl), "max_joint_step"),
                            pc_num(first(rm), "max_joint_step"), 1e-12);
    json_decref(rl);
    json_decref(rm);
    free(bl);
    free(bm);
}
END_TEST

START_TEST(test_map_refusals)
{
    char *b = abc_body("{\"b\":0.5,\"elbow\":1}", NULL, NULL);
    pc_reject(b, PROTO_SOLVE, "invalid_request", 400, "/seed/elbow");
    proto_error e;
    ck_assert_ptr_null(pc_solve(b, PROTO_SOLVE, &e));
    ck_assert_ptr_nonnull(strstr(e.message, "\"elbow\""));
    free(b);
    b = abc_body("{\"b\":\"x\"}", NULL, NULL);
    pc_reject(b, PROTO_SOLVE, "invalid_request", 400, "/seed/b");
    free(b);
    /* a planar chain has no joint names */
    pc_reject("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},\"target\":{\"position\":"
              "[1,1]},\"seed\":{\"joint0\":0.1}}",
              PROTO_SOLVE, "invalid_request", 400, "/seed");
}
END_TEST

START_TEST(test_degrees_seed_refused)
{
    ur5_load();
    const double q0[6] = {0.4, -1.1, 1.3, -0.6, 1.2, 0.3};
    char *b = ur5_body(q0, "[0,-90,90,0,90,0]", NULL, false);
    pc_reject(b, PROTO_SOLVE, "invalid_request", 400, "/seed/1");
    proto_error e;
    ck_assert_ptr_null(pc_solve(b, PROTO_SOLVE, &e));
    ck_assert_msg(strstr(e.message, "options.units") && strstr(e.message, "degrees") &&
                      strstr(e.message, "shoulder_lift_joint"),
                  "%s", e.message);
    free(b);
    /* in a map: the path names the joint */
    b = ur5_body(q0, "{\"elbow_joint\":90}", NULL, false);
    pc_reject(b, PROTO_SOLVE, "invalid_request", 400, "/seed/elbow_joint");
    free(b);
    /* the same values in degrees, said so: accepted and solved */
    b = ur5_body(q0, "[0,-90,90,0,90,0]", "{\"units\":\"degrees\"}", false);
    json_t *r = pc_solve(b, PROTO_SOLVE, &e);
    ck_assert_msg(r != NULL, "%s", e.message);
    json_decref(r);
    free(b);
    /* within a turn of the range: a seed, not a units mistake */
    b = ur5_body(q0, "[0,-7,4,0,0,0]", NULL, false);
    r = pc_solve(b, PROTO_SOLVE, &e);
    ck_assert_msg(r != NULL, "%s", e.message);
    json_decref(r);
    free(b);
    free(g_xml);
}
END_TEST

START_TEST(test_degrees_limits_refused)
{
    /* upper 114.59 (two radians in degrees) in a chain without units */
    char *b = abc_body("[1,1,1]", ",\"units\":\"radians\"", NULL);
    pc_reject(b, PROTO_SOLVE, "invalid_chain", 422, "/chain/joints/0/limits/upper");
    proto_error e;
    ck_assert_ptr_null(pc_solve(b, PROTO_SOLVE, &e));
    ck_assert_msg(strstr(e.message, "\"units\"") && strstr(e.message, "degrees"), "%s", e.message);
    free(b);
    /* the chain says degrees: accepted, and a seed in degrees with it */
    b = abc_body("[57.3,57.3,57.3]", ",\"units\":\"degrees\"", "degrees");
    json_t *r = pc_solve(b, PROTO_SOLVE, &e);
    ck_assert_msg(r != NULL, "%s at %s", e.message, e.path);
    json_decref(r);
    free(b);
    /* the same seed read in radians (options.units) is refused */
    b = abc_body("[57.3,57.3,57.3]", ",\"units\":\"degrees\"", NULL);
    pc_reject(b, PROTO_SOLVE, "invalid_request", 400, "/seed/0");
    free(b);
}
END_TEST

/* A tree of joints (the solve_tree_urdf fixture's two arms over a waist):
 * its seed by name, r_elbow left out (mid-limits 1.25), answers exactly
 * as the list with 1.25 in its place does (test_fixtures checks this
 * tree's answers by forward kinematics). */
START_TEST(test_tree_seed_by_name)
{
    const char *path = "tests/fixtures/solve_tree_urdf.request.json"; /* from the root */
    size_t len;
    char *text = pc_read_file(path, &len);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    json_t *req = json_loads(text, 0, NULL);
    free(text);
    ck_assert_ptr_nonnull(req);
    json_t *m = json_pack("{s:f, s:f, s:f, s:f}", "l_elbow", 0.8, "waist", 0.0, "l_shoulder", 0.2,
                          "r_shoulder", 0.0);
    json_t *l = json_pack("[f,f,f,f,f]", 0.0, 0.2, 0.8, 0.0, 1.25);
    json_t *r[2];
    for (int k = 0; k < 2; k++) {
        json_object_set(req, "seed", k ? m : l);
        json_object_set_new(req, "options", json_pack("{s:s}", "search", "nearest"));
        char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
        proto_error e;
        r[k] = pc_solve(b, PROTO_SOLVE, &e);
        ck_assert_msg(r[k] != NULL, "refused: %s at %s", e.message, e.path);
        ck_assert_str_eq(json_string_value(json_object_get(r[k], "status")), "success");
        free(b);
    }
    const json_t *a = json_object_get(r[0], "joints"), *b = json_object_get(r[1], "joints");
    ck_assert_uint_eq(json_array_size(a), 5);
    for (size_t k = 0; k < 5; k++)
        ck_assert_double_eq_tol(json_number_value(json_array_get(a, k)),
                                json_number_value(json_array_get(b, k)), 1e-12);
    json_decref(r[0]);
    json_decref(r[1]);
    json_decref(m);
    json_decref(l);
    json_decref(req);
}
END_TEST

/* A stream's seed, at open and with a target, takes the same forms. */
START_TEST(test_stream_seed_by_name)
{
    static const char chain[] =
        "{\"kind\":\"joints\",\"joints\":["
        "{\"name\":\"a\",\"type\":\"revolute\",\"axis\":[0,0,1],\"limits\":{\"lower\":-1,"
        "\"upper\":1}},"
        "{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]},"
        "\"limits\":{\"lower\":-1,\"upper\":1}},"
        "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}";
    proto_error e;
    proto_chain *c = proto_chain_decode(chain, strlen(chain), NULL, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    proto_session *s = NULL;
    json_t *bad = json_loads("{\"a\":0.1,\"zz\":0.2}", 0, NULL);
    ck_assert_int_ne(proto_session_open(c, NULL, bad, NULL, &s, &e), 0);
    ck_assert_str_eq(e.path, "/seed/zz");
    json_decref(bad);
    json_t *seed = json_loads("{\"b\":0.4}", 0, NULL);
    ck_assert_int_eq(proto_session_open(c, NULL, seed, NULL, &s, &e), 0);
    json_decref(seed);
    json_t *t = json_loads("{\"position\":[0.5,0.5,0.8]}", 0, NULL);
    json_t *deg = json_loads("{\"a\":45}", 0, NULL);
    proto_job *job = NULL;
    ck_assert_int_ne(proto_session_target(s, t, deg, &job, &e), 0);
    ck_assert_str_eq(e.path, "/seed/a");
    ck_assert_ptr_nonnull(strstr(e.message, "options.units"));
    json_decref(deg);
    json_decref(t);
    proto_session_free(s);
    proto_chain_unref(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("proto_seed");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_map_seed_same_as_list);
    tcase_add_test(tc, test_map_missing_names_take_mid_limits);
    tcase_add_test(tc, test_map_refusals);
    tcase_add_test(tc, test_degrees_seed_refused);
    tcase_add_test(tc, test_degrees_limits_refused);
    tcase_add_test(tc, test_stream_seed_by_name);
    tcase_add_test(tc, test_tree_seed_by_name);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
