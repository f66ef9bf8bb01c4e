/*
 * test_proto_answer.c: one meaning of an answer's orientation_error on
 * chains and trees (issue 23): the angle of the rotation from the answered
 * tip's orientation to the target's (the norm of the rotation vector, in
 * options.units), on a chain, on a tree's tip and as a tree answer's
 * largest; and a tree answer's tips saying which were met.
 *
 * The angle is computed here from the answered quaternions (2 acos |<a, b>|
 * by the half-angle sine, exact near 0), never taken from the solver; the
 * UR5's tip pose by ik_chain_fk on the chain read from the URDF.
 */
#include "tests/proto/proto_check.h"

static double quat_angle(ik_quat a, ik_quat b)
{
    /* the angle of b * conj(a): 2 atan2(|v|, |w|) */
    ik_quat d = ik_quat_mul(b, ik_quat_conj(a));
    double v = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
    return 2.0 * atan2(v, fabs(d.w));
}

static char *g_xml;
static size_t g_len;

static void ur5_read(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", pc_data_dir());
    g_xml = pc_read_file(path, &g_len);
    ck_assert_msg(g_xml != NULL, "cannot read %s", path);
}

/* The UR5 (base_link to tool0) as a urdf chain, or as a one-tip tree,
 * with a target out of reach (position 2 m out, a turned orientation),
 * units as given. */
static char *body(bool tree, const char *units, ik_quat q)
{
    json_t *c = tree ? json_pack("{s:s, s:s, s:s, s:[s]}", "kind", "tree", "urdf", g_xml, "base",
                                 "base_link", "tips", "tool0")
                     : json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", g_xml, "base",
                                 "base_link", "tip", "tool0");
    json_t *t = json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", 1.2, 0.9, 1.1, "orientation", q.x,
                          q.y, q.z, q.w);
    if (tree)
        t = json_pack("{s:{s:o}}", "tips", "tool0", t);
    json_t *req = json_pack("{s:o, s:o, s:{s:s, s:s}}", "chain", c, "target", t, "options",
                            "solver", "numeric", "units", units);
    char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(req);
    return b;
}

START_TEST(test_orientation_error_is_the_angle_on_chains_and_trees)
{
    ur5_read();
    const ik_quat want = ik_quat_normalize((ik_quat){0.3, -0.5, 0.2, 0.6});
    for (int deg = 0; deg < 2; deg++) {
        const double scale = deg ? 180.0 / IK_PI : 1.0;
        for (int tree = 0; tree < 2; tree++) {
            char *b = body(tree, deg ? "degrees" : "radians", want);
            proto_error e;
            json_t *r = pc_solve(b, PROTO_SOLVE, &e);
            ck_assert_msg(r != NULL, "refused: %s at %s", e.message, e.path);
            ck_assert_str_eq(json_string_value(json_object_get(r, "cause")), "out_of_reach");
            const json_t *tip =
                tree ? json_array_get(json_object_get(r, "tips"), 0) : json_object_get(r, "tip");
            ck_assert_ptr_nonnull(tip);
            double angle = quat_angle(pc_quat(json_object_get(tip, "orientation")), want);
            ck_assert_double_gt(angle, 1e-3); /* the test means something */
            ck_assert_double_eq_tol(pc_num(r, "orientation_error"), angle * scale, 1e-9 * scale);
            if (tree) {
                ck_assert_double_eq_tol(pc_num(tip, "orientation_error"), angle * scale,
                                        1e-9 * scale);
                /* the tip missed: its status says so */
                ck_assert_str_eq(json_string_value(json_object_get(tip, "status")),
                                 "no_ik_solution");
            }
            json_decref(r);
            free(b);
        }
    }
    free(g_xml);
}
END_TEST

/* A weighted target whose rotation weights are all 0 still names an
 * orientation: the answer's orientation_error is the angle to it, as on
 * every other target with one, not 0 because the solver left it out. */
START_TEST(test_orientation_error_of_a_weighted_target_without_rotation_weights)
{
    ur5_read();
    const ik_quat want = ik_quat_normalize((ik_quat){0.3, -0.5, 0.2, 0.6});
    json_t *req = json_pack(
        "{s:{s:s, s:s, s:s, s:s}, s:{s:[f,f,f], s:[f,f,f,f], s:[i,i,i,i,i,i]}}", "chain", "kind",
        "urdf", "urdf", g_xml, "base", "base_link", "tip", "tool0", "target", "position", 0.4, 0.2,
        0.3, "orientation", want.x, want.y, want.z, want.w, "weights", 1, 1, 1, 0, 0, 0);
    char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(req);
    proto_error e;
    json_t *r = pc_solve(b, PROTO_SOLVE, &e);
    ck_assert_msg(r != NULL, "refused: %s at %s", e.message, e.path);
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "success");
    double angle = quat_angle(pc_quat(json_object_get(json_object_get(r, "tip"), "orientation")), want);
    ck_assert_double_gt(angle, 1e-3); /* the orientation was free: not met */
    ck_assert_double_eq_tol(pc_num(r, "orientation_error"), angle, 1e-9);
    json_decref(r);
    free(b);
    free(g_xml);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("proto_answer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_orientation_error_is_the_angle_on_chains_and_trees);
    tcase_add_test(tc, test_orientation_error_of_a_weighted_target_without_rotation_weights);
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
