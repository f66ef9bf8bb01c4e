/*
 * test_proto_chain.c: chain objects (proto_chain_decode*, ids, reference
 * counting, describe) for every kind, and the ways a chain is rejected
 * (unknown fields, zero-length links, too many joints, bad joints, a URDF
 * without a serial chain between the named links, a broken skeleton limb).
 */
#include "tests/proto/proto_check.h"

#include "proto/proto_kind.h"
#include "proto/proto_session.h"

static proto_chain *decode(const char *s, proto_error *e)
{
    proto_error_clear(e);
    return proto_chain_decode(s, strlen(s), NULL, e);
}

static void reject(const char *s, const char *code, int status, const char *path)
{
    proto_error e;
    proto_chain *c = decode(s, &e);
    ck_assert_msg(c == NULL, "accepted: %s", s);
    ck_assert_msg(strcmp(proto_error_name(e.code), code) == 0, "code %s (%s) for %s", proto_error_name(e.code), e.message, s);
    ck_assert_int_eq(pc_http_status(e.code), status);
    if (path)
        ck_assert_msg(strcmp(e.path, path) == 0, "path %s (%s) for %s", e.path, e.message, s);
}

START_TEST(test_every_kind_decodes)
{
    static const char *const ok[] = {
        "{\"kind\":\"planar\",\"lengths\":[1,0.5]}",
        "{\"kind\":\"planar\",\"lengths\":[1,0.5,0.25],\"base\":[1,2]}",
        "{\"kind\":\"links3d\",\"lengths\":[1,1,0.5],\"frame\":\"unity\","
        "\"origin\":{\"position\":[0,1,0],\"orientation\":[0,0,0,1]}}",
        "{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,1,0],[0,2,0]],"
        "\"rotations\":[[0,0,0,1],[0,0,0,1],[0,0,0,1]]}",
        "{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"hip\"},"
        "{\"name\":\"knee\",\"parent\":\"hip\",\"translation\":[0,0,-1]},"
        "{\"name\":\"foot\",\"parent\":\"knee\",\"translation\":[0,0,-1],\"scale\":[1,2,1]}],"
        "\"limb\":[\"hip\",\"knee\",\"foot\"]}",
        "{\"kind\":\"joints\",\"units\":\"degrees\",\"joints\":["
        "{\"name\":\"a\",\"type\":\"revolute\",\"axis\":[0,0,1],"
        "\"limits\":{\"lower\":-180,\"upper\":180}},"
        "{\"name\":\"f\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0],\"rpy\":[0,90,0]}},"
        "{\"name\":\"b\",\"type\":\"continuous\",\"axis\":[0,1,0]},"
        "{\"name\":\"c\",\"type\":\"prismatic\",\"axis\":[1,0,0],"
        "\"limits\":{\"lower\":0,\"upper\":0.5}}]}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        proto_error e;
        proto_chain *c = decode(ok[i], &e);
        ck_assert_msg(c != NULL, "%s: %s at %s", ok[i], e.message, e.path);
        ck_assert_uint_eq(strlen(proto_chain_id(c)), 32);
        ck_assert(proto_chain_memory(c) > 0);
        json_t *d = proto_chain_describe(c);
        ck_assert_str_eq(json_string_value(json_object_get(d, "id")), proto_chain_id(c));
        ck_assert(json_array_size(json_object_get(d, "solvers")) >= 1);
        ck_assert(json_is_object(json_object_get(d, "chain")));
        json_decref(d);
        proto_chain_unref(c);
    }
    /* joint names of movable joints, in chain order */
    proto_error e;
    proto_chain *c = decode(ok[5], &e);
    json_t *d = proto_chain_describe(c);
    json_t *names = json_object_get(d, "joint_names");
    ck_assert_uint_eq(json_array_size(names), 3);
    ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "b");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "dof")), 3);
    /* limits in radians in the description */
    json_t *j0 = json_array_get(json_object_get(d, "joints"), 0);
    ck_assert_double_eq_tol(json_number_value(json_object_get(j0, "upper")), IK_PI, 1e-12);
    json_decref(d);
    proto_chain_unref(c);
}
END_TEST

START_TEST(test_ids_are_content_addressed)
{
    proto_error e;
    proto_chain *a = decode("{\"kind\":\"planar\",\"lengths\":[1,2]}", &e);
    proto_chain *b = decode("{ \"lengths\" : [1.0, 2.0],\n \"kind\" : \"planar\" }", &e);
    proto_chain *c = decode("{\"kind\":\"planar\",\"lengths\":[1,2.0000001]}", &e);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(proto_chain_id(a), proto_chain_id(b));
    ck_assert_str_ne(proto_chain_id(a), proto_chain_id(c));
    for (const char *p = proto_chain_id(a); *p; p++)
        ck_assert(strchr("0123456789abcdef", *p));
    /* reference counting: the chain lives until the last unref */
    proto_chain_ref(a);
    proto_chain_unref(a);
    ck_assert_uint_eq(strlen(proto_chain_id(a)), 32);
    proto_chain_unref(a);
    proto_chain_unref(b);
    proto_chain_unref(c);
    proto_chain_unref(NULL);
}
END_TEST

START_TEST(test_rejections)
{
    /* structure */
    reject("[1]", "invalid_request", 400, "");
    reject("{\"lengths\":[1,1]}", "invalid_request", 400, "/kind");
    reject("{\"kind\":\"wheel\"}", "invalid_request", 400, "/kind");
    reject("{\"kind\":\"planar\",\"lengths\":[1,1],\"colour\":1}", "invalid_request", 400,
           "/colour");
    reject("{\"kind\":\"planar\",\"lengths\":[1,1],", "invalid_json", 400, "");
    reject("{\"kind\":\"planar\",\"kind\":\"planar\",\"lengths\":[1,1]}", "invalid_json", 400, "");
    /* lengths */
    reject("{\"kind\":\"planar\",\"lengths\":[1]}", "invalid_request", 400, "/lengths");
    reject("{\"kind\":\"planar\",\"lengths\":[1,1,1,1]}", "invalid_request", 400, "/lengths");
    reject("{\"kind\":\"planar\",\"lengths\":[1,0]}", "invalid_chain", 422, "/lengths/1");
    reject("{\"kind\":\"planar\",\"lengths\":[1,-2]}", "invalid_chain", 422, "/lengths/1");
    reject("{\"kind\":\"planar\",\"lengths\":[1,\"2\"]}", "invalid_request", 400, "/lengths/1");
    reject("{\"kind\":\"planar\",\"lengths\":[1,1e7]}", "invalid_request", 400, "/lengths/1");
    reject("{\"kind\":\"planar\",\"lengths\":[1,1e400]}", "invalid_json", 400, "");
    reject("{\"kind\":\"links3d\",\"lengths\":[1,1]}", "invalid_request", 400, "/lengths");
    reject("{\"kind\":\"links3d\",\"lengths\":[1,1,1],\"origin\":{\"orientation\":[0,0,0,2]}}",
           "invalid_request", 400, "/origin/orientation");
    /* bones */
    reject("{\"kind\":\"bones\",\"positions\":[[0,0,0]]}", "invalid_request", 400, "/positions");
    reject("{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,0],[1,0,0]]}", "invalid_chain", 422,
           "/positions/1");
    reject("{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,1]]}", "invalid_request", 400,
           "/positions/1");
    reject("{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,1,0]],\"rotations\":[[0,0,0,1]]}",
           "invalid_request", 400, "/rotations");
    {
        /* more joints than max_joints (64) */
        char big[4096];
        size_t n = (size_t)snprintf(big, sizeof big, "{\"kind\":\"bones\",\"positions\":[");
        for (int i = 0; i < 65; i++)
            n += (size_t)snprintf(big + n, sizeof big - n, "%s[0,%d,0]", i ? "," : "", i);
        snprintf(big + n, sizeof big - n, "]}");
        reject(big, "too_large", 413, "/positions");
    }
    /* skeleton */
    reject("{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"a\"},{\"name\":\"b\",\"parent\":\"c\"},"
           "{\"name\":\"c\"}],\"limb\":[\"a\",\"b\",\"c\"]}",
           "invalid_chain", 422, "/bones/1/parent");
    reject("{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"a\"},{\"name\":\"b\",\"parent\":\"a\","
           "\"translation\":[0,1,0]},{\"name\":\"c\",\"parent\":\"a\",\"translation\":[0,1,0]}],"
           "\"limb\":[\"a\",\"b\",\"c\"]}",
           "invalid_chain", 422, "/limb");
    reject("{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"a\"},{\"name\":\"b\",\"parent\":\"a\"},"
           "{\"name\":\"c\",\"parent\":\"b\",\"translation\":[0,1,0]}],"
           "\"limb\":[\"a\",\"b\",\"c\"]}",
           "invalid_chain", 422, "/limb");
    reject("{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"a\"},{\"name\":\"a\"},{\"name\":\"c\"}],"
           "\"limb\":[\"a\",\"b\",\"c\"]}",
           "invalid_chain", 422, "/bones/1/name");
    reject("{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"a\"},{\"name\":\"b\",\"parent\":\"a\","
           "\"scale\":[1,0,1]},{\"name\":\"c\",\"parent\":\"b\"}],\"limb\":[\"a\",\"b\",\"x\"]}",
           "invalid_chain", 422, "/bones/1/scale");
    /* joints */
    reject("{\"kind\":\"joints\",\"joints\":[]}", "invalid_request", 400, "/joints");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"fixed\"}]}", "invalid_chain", 422,
           "/joints");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"ball\"}]}", "invalid_request", 400,
           "/joints/0/type");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"revolute\"}]}", "invalid_request", 400,
           "/joints/0/limits");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"revolute\","
           "\"limits\":{\"lower\":1,\"upper\":0}}]}",
           "invalid_chain", 422, "/joints/0/limits");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"continuous\",\"axis\":[0,0,0]}]}",
           "invalid_chain", 422, "/joints/0/axis");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"continuous\",\"limits\":{}}]}",
           "invalid_request", 400, "/joints/0/limits");
    reject("{\"kind\":\"joints\",\"joints\":[{\"type\":\"continuous\","
           "\"origin\":{\"xyz\":[0,0,0],\"rpy\":[0,0]}}]}",
           "invalid_request", 400, "/joints/0/origin/rpy");
    {
        /* the solver has no bound of its own: 64 movable joints (the
         * default max_joints) compile, 65 are refused by the limit */
        char big[8192];
        for (int count = 64; count <= 65; count++) {
            size_t n = (size_t)snprintf(big, sizeof big, "{\"kind\":\"joints\",\"joints\":[");
            for (int i = 0; i < count; i++)
                n += (size_t)snprintf(big + n, sizeof big - n,
                                      "%s{\"type\":\"continuous\",\"origin\":{\"xyz\":[0.1,0,0]}}",
                                      i ? "," : "");
            snprintf(big + n, sizeof big - n, "]}");
            if (count == 65) {
                reject(big, "too_large", 413, "/joints");
                continue;
            }
            proto_error e;
            proto_chain *c = decode(big, &e);
            ck_assert_msg(c != NULL, "%s", e.message);
            json_t *d = proto_chain_describe(c);
            ck_assert_uint_eq(json_array_size(json_object_get(d, "joint_names")), 64);
            json_decref(d);
            proto_chain_unref(c);
        }
    }
}
END_TEST

START_TEST(test_urdf_chains)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", pc_data_dir());
    size_t len;
    char *xml = pc_read_file(path, &len);
    ck_assert_msg(xml != NULL, "cannot read %s (set IKD_DATA)", path);
    json_t *req = json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", xml, "base",
                            "base_link", "tip", "tool0");
    proto_error e;
    proto_chain *c = proto_chain_decode_json(req, "/chain", NULL, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    json_t *d = proto_chain_describe(c);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "dof")), 6);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "joint_names"), 0)),
                     "shoulder_pan_joint");
    json_decref(d);
    proto_chain_unref(c);

    /* tip above base: no serial chain from base down to tip */
    json_object_set_new(req, "base", json_string("tool0"));
    json_object_set_new(req, "tip", json_string("base_link"));
    ck_assert_ptr_null(proto_chain_decode_json(req, "/chain", NULL, &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_urdf");
    ck_assert_int_eq(pc_http_status(e.code), 422);
    ck_assert_str_eq(e.path, "/chain/urdf");
    /* a link that does not exist */
    json_object_set_new(req, "base", json_string("base_link"));
    json_object_set_new(req, "tip", json_string("no_such_link"));
    ck_assert_ptr_null(proto_chain_decode_json(req, "/chain", NULL, &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_urdf");
    /* a URDF larger than the limit */
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_urdf_bytes = 100;
    json_object_set_new(req, "tip", json_string("tool0"));
    ck_assert_ptr_null(proto_chain_decode_json(req, "/chain", &lim, &e));
    ck_assert_str_eq(proto_error_name(e.code), "too_large");
    /* not XML */
    json_object_set_new(req, "urdf", json_string("<robot"));
    ck_assert_ptr_null(proto_chain_decode_json(req, "/chain", NULL, &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_urdf");
    json_object_del(req, "urdf");
    ck_assert_ptr_null(proto_chain_decode_json(req, "/chain", NULL, &e));
    ck_assert_str_eq(e.path, "/chain/urdf");
    json_decref(req);
    free(xml);
}
END_TEST

/* A servo stream on a URDF chain without options.servo.velocity takes the
 * joints' <limit velocity>. They are read with the chain, once: a document
 * whose velocity cannot be read refuses every servo open with the same
 * error without parsing the document again (it used to parse it on every
 * open, on the loop: 123 ms for a 3.9 MB URDF), and a good one answers
 * from what was read at decode. The test swaps the chain's kept source
 * document after decoding: nothing may read it again. */
#define VEL_DOC(v1)                                                                                \
    "<robot name=\"r\"><link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>"                     \
    "<joint name=\"j1\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/>"                 \
    "<origin xyz=\"0 0 0.5\"/><axis xyz=\"0 0 1\"/>"                                              \
    "<limit lower=\"-2\" upper=\"2\" velocity=\"" v1 "\"/></joint>"                                  \
    "<joint name=\"j2\" type=\"revolute\"><parent link=\"b\"/><child link=\"c\"/>"                 \
    "<origin xyz=\"0 0 0.5\"/><axis xyz=\"0 1 0\"/>"                                              \
    "<limit lower=\"-2\" upper=\"2\" velocity=\"2\"/></joint></robot>"

static int servo_open(proto_chain *c, proto_error *e)
{
    json_t *opts = json_pack("{s:{s:f}}", "servo", "period_s", 0.01);
    json_t *seed = json_pack("[f,f]", 0.0, 0.0);
    proto_session *s = NULL;
    proto_error_clear(e);
    int rc = proto_session_open(c, opts, seed, NULL, &s, e);
    proto_session_free(s);
    json_decref(opts);
    json_decref(seed);
    return rc;
}

START_TEST(test_urdf_velocities_read_once)
{
    proto_error e;
    json_t *req = json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", VEL_DOC("fast"),
                            "base", "a", "tip", "c");
    proto_chain *bad = proto_chain_decode_json(req, "/chain", NULL, &e);
    ck_assert_msg(bad != NULL, "a velocity that is not a number does not spoil the chain: %s",
                  e.message);
    ck_assert_int_eq(servo_open(bad, &e), -1);
    ck_assert_msg(strstr(e.message, "velocity") && strstr(e.message, "j1"), "%s", e.message);
    char first[sizeof e.message];
    snprintf(first, sizeof first, "%s", e.message);
    /* the failure is kept: a document that would read now is never read */
    json_object_set_new(bad->source, "urdf", json_string(VEL_DOC("1.5")));
    ck_assert_int_eq(servo_open(bad, &e), -1);
    ck_assert_str_eq(e.message, first);
    proto_chain_unref(bad);

    json_object_set_new(req, "urdf", json_string(VEL_DOC("1.5")));
    proto_chain *good = proto_chain_decode_json(req, "/chain", NULL, &e);
    ck_assert_msg(good != NULL, "%s", e.message);
    /* read with the chain: a document that would not read now is never read */
    json_object_set_new(good->source, "urdf", json_string("<robot"));
    ck_assert_msg(servo_open(good, &e) == 0, "%s at %s", e.message, e.path);
    const double *v = proto__chain_velocities(good, &e);
    ck_assert_ptr_nonnull(v);
    ck_assert_double_eq_tol(v[0], 1.5, 1e-12);
    ck_assert_double_eq_tol(v[1], 2.0, 1e-12);
    proto_chain_unref(good);
    json_decref(req);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_chain");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_every_kind_decodes);
    tcase_add_test(tc, test_ids_are_content_addressed);
    tcase_add_test(tc, test_rejections);
    tcase_add_test(tc, test_urdf_chains);
    tcase_add_test(tc, test_urdf_velocities_read_once);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
