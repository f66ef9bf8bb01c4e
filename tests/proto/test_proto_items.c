/*
 * test_proto_items.c: the many-rigs batch (proto/proto_items.c): a
 * POST /v1/solve/batch body with "items", each its own chain (inline or
 * chain_id), target, seed and options, answered in order.
 *
 * Checked independently of the code under test: two-bone answers by their
 * geometry (bone lengths kept, the end on a reachable target), joint
 * answers by forward kinematics of a chain the test builds itself; that
 * each item's result is the result of the same request sent alone to
 * POST /v1/solve (its members, byte for byte); that an item's error is
 * the error of that request alone, its path under "/items/<i>", while the
 * other items are answered; and the envelope's own errors and limits.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_codec.h"
#include "proto/proto_kind.h"
#include "tests/proto/proto_check.h"

#define BONES "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}"
#define PLANAR "{\"kind\":\"planar\",\"lengths\":[1,0.75]}"
#define JOINTS                                                                                     \
    "{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"revolute\",\"axis\":[0,0,1],"     \
    "\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,"  \
    "0],\"origin\":{\"xyz\":[0,0,0.5]},\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"tip\","  \
    "\"type\":\"fixed\",\"origin\":{\"xyz\":[0,0,0.5]}}]}"

/* The registry of this test: one chain, BONES, under its own id. */
static proto_chain *registered;

static void *lookup(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind != PROTO_REG_CHAIN)
        return NULL;
    (void)ud;
    if (registered && strcmp(id, proto_chain_id(registered)) == 0) {
        proto_chain_ref(registered);
        return registered;
    }
    return NULL;
}

/* Decodes, runs and encodes an items body; the parsed answer, or NULL with
 * *err set. */
static json_t *solve_items(const char *body, const proto_limits *lim, proto_error *err)
{
    proto_items *it = NULL;
    if (proto_items_decode(body, strlen(body), lim, lookup, NULL, &it, err))
        return NULL;
    proto_items_run(it, 0, proto_items_count(it));
    size_t len = 0;
    char *text = proto_items_encode(it, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(len, strlen(text));
    json_error_t je;
    json_t *a = json_loads(text, 0, &je);
    ck_assert_msg(a != NULL, "not JSON: %s", text);
    free(text);
    proto_items_free(it);
    return a;
}

/* The same item sent alone to POST /v1/solve: its answer's result members
 * (the chain-level members removed), or its error as {"error": {...}}. */
static json_t *alone(const char *item)
{
    proto_job *job = NULL;
    proto_error err;
    if (proto_job_decode(item, strlen(item), PROTO_SOLVE, NULL, lookup, NULL, &job, &err))
        return json_pack("{s:{s:s, s:s, s:s}}", "error", "code", proto_error_name(err.code),
                         "message", err.message, "path", err.path);
    proto_job_run(job, 0, 1);
    char *text = proto_job_encode(job, NULL);
    json_t *a = json_loads(text, 0, NULL);
    free(text);
    proto_job_free(job);
    static const char *const top[] = {"chain_id", "solver",     "units",
                                      "frame",    "joint_names", "bone_names"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        json_object_del(a, top[i]);
    return a;
}

static double dist3(const json_t *a, const json_t *b)
{
    double s = 0;
    for (size_t k = 0; k < 3; k++) {
        double d = json_real_value(json_array_get(a, k)) - json_real_value(json_array_get(b, k));
        s += d * d;
    }
    return sqrt(s);
}

/* Items of every kind, in order, each the answer it gets alone; two-bone
 * and joint answers checked by geometry and forward kinematics. */
START_TEST(test_items_in_order)
{
    proto_error err;
    registered = proto_chain_decode(BONES, strlen(BONES), NULL, &err);
    ck_assert_ptr_nonnull(registered);
    char item[8][1024];
    snprintf(item[0], sizeof item[0], "{\"chain\":%s,\"target\":{\"position\":[0.2,0.1,0.25]}}",
             BONES);
    snprintf(item[1], sizeof item[1],
             "{\"chain_id\":\"%s\",\"target\":{\"position\":[-0.1,0.2,0.4],\"pole\":[1,0,0.5]},"
             "\"options\":{\"fields\":[\"positions\"],\"digits\":9}}",
             proto_chain_id(registered));
    snprintf(item[2], sizeof item[2],
             "{\"chain\":%s,\"target\":{\"position\":[1.2,0.4]},\"seed\":[0.3,-0.4],"
             "\"options\":{\"units\":\"degrees\"}}",
             PLANAR);
    /* a pose of the joint chain by its forward kinematics (a about z at
     * the base, b about y 0.5 up, the tip 0.5 further along z) */
    double fa = 0.5, fb = 0.8, fx = 0.5 * sin(fb);
    double tx = cos(fa) * fx, ty = sin(fa) * fx, tz = 0.5 + 0.5 * cos(fb);
    snprintf(item[3], sizeof item[3],
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g]},\"seed\":[0.4,0.6],"
             "\"options\":{\"timeout_ms\":100}}",
             JOINTS, tx, ty, tz);
    snprintf(item[4], sizeof item[4], "{\"chain\":%s,\"target\":{\"position\":[3,3,3]}}", BONES);
    char body[8192];
    int n = snprintf(body, sizeof body, "{\"items\":[%s,%s,%s,%s,%s]}", item[0], item[1], item[2],
                     item[3], item[4]);
    ck_assert_int_lt(n, (int)sizeof body);
    json_t *a = solve_items(body, NULL, &err);
    ck_assert_msg(a != NULL, "%s at %s", err.message, err.path);
    ck_assert_int_eq(json_integer_value(json_object_get(a, "count")), 5);
    json_t *counts = json_object_get(a, "counts");
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "success")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "no_ik_solution")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "error")), 0);
    json_t *res = json_object_get(a, "results");
    ck_assert_uint_eq(json_array_size(res), 5);
    for (int i = 0; i < 5; i++) {
        json_t *want = alone(item[i]), *got = json_array_get(res, (size_t)i);
        json_object_del(want, "time_ms");
        json_t *g = json_deep_copy(got);
        json_object_del(g, "time_ms");
        char *ws = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
        char *gs = json_dumps(g, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_msg(strcmp(ws, gs) == 0, "item %d:\n got  %s\n want %s", i, gs, ws);
        free(ws);
        free(gs);
        json_decref(want);
        json_decref(g);
    }
    /* geometry: item 0's end on its target, its bones as long as the chain's */
    json_t *p0 = json_object_get(json_array_get(res, 0), "positions");
    json_t *t0 = json_pack("[f,f,f]", 0.2, 0.1, 0.25), *c0 = json_pack("[f,f,f]", 0.0, 0.0, 1.0),
           *c1 = json_pack("[f,f,f]", 0.1, 0.0, 0.55), *c2 = json_pack("[f,f,f]", 0.0, 0.0, 0.1);
    ck_assert_double_le(dist3(json_array_get(p0, 2), t0), 1e-9);
    ck_assert_double_eq_tol(dist3(json_array_get(p0, 0), json_array_get(p0, 1)), dist3(c0, c1),
                            1e-9);
    ck_assert_double_eq_tol(dist3(json_array_get(p0, 1), json_array_get(p0, 2)), dist3(c1, c2),
                            1e-9);
    /* item 1 asked for positions alone, at 9 digits */
    json_t *r1 = json_array_get(res, 1);
    ck_assert_uint_eq(json_object_size(r1), 2);
    ck_assert_ptr_nonnull(json_object_get(r1, "positions"));
    /* item 3 by forward kinematics */
    json_t *q3 = json_object_get(json_array_get(res, 3), "joints");
    double qa = json_real_value(json_array_get(q3, 0)), qb = json_real_value(json_array_get(q3, 1));
    double x = 0.5 * sin(qb), z = 0.5 + 0.5 * cos(qb);
    ck_assert_double_eq_tol(cos(qa) * x, tx, 1e-5);
    ck_assert_double_eq_tol(sin(qa) * x, ty, 1e-5);
    ck_assert_double_eq_tol(z, tz, 1e-5);
    json_decref(t0);
    json_decref(c0);
    json_decref(c1);
    json_decref(c2);
    json_decref(a);
    proto_chain_unref(registered);
    registered = NULL;
}
END_TEST

/* A bad item answers its error with its path; the others are solved. The
 * batch's options hold for items without their own (errors in them keep
 * their "/options" path); an item's own options replace them. */
START_TEST(test_item_errors)
{
    proto_error err;
    const char *body =
        "{\"options\":{\"fields\":[\"joints\"]},\"items\":["
        "{\"chain\":" PLANAR ",\"target\":{\"position\":[1.2,0.4]}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.1,0.2,\"x\"]}},"
        "{\"chain_id\":\"0123456789abcdef0123456789abcdef\",\"target\":{\"position\":[0,0,1]}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]},\"options\":{\"fields\":"
        "[\"positions\"]}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]},\"options\":{\"digits\":0}},"
        "{\"chain\":" PLANAR ",\"target\":{\"position\":[1.2,0.4]},\"options\":{\"frame\":\"unity\"}},"
        "7"
        "]}";
    json_t *a = solve_items(body, NULL, &err);
    ck_assert_msg(a != NULL, "%s at %s", err.message, err.path);
    json_t *res = json_object_get(a, "results");
    ck_assert_uint_eq(json_array_size(res), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(a, "counts"), "error")), 5);
    /* 0: the batch's options */
    json_t *r = json_array_get(res, 0);
    ck_assert_uint_eq(json_object_size(r), 2);
    ck_assert_ptr_nonnull(json_object_get(r, "joints"));
    static const struct {
        size_t i;
        const char *code, *path;
    } errs[] = {
        {1, "invalid_request", "/items/1/target/position/2"},
        {2, "unknown_chain", "/items/2/chain_id"},
        {4, "invalid_request", "/items/4/options/digits"},
        {5, "invalid_request", "/items/5/options/frame"},
        {6, "invalid_request", "/items/6"},
    };
    for (size_t k = 0; k < sizeof errs / sizeof errs[0]; k++) {
        json_t *e = json_object_get(json_array_get(res, errs[k].i), "error");
        ck_assert_msg(e != NULL, "item %zu has no error", errs[k].i);
        ck_assert_str_eq(json_string_value(json_object_get(e, "code")), errs[k].code);
        ck_assert_str_eq(json_string_value(json_object_get(e, "path")), errs[k].path);
        ck_assert_ptr_nonnull(json_string_value(json_object_get(e, "message")));
        ck_assert_uint_eq(json_object_size(json_array_get(res, errs[k].i)), 1);
    }
    /* 3: its own options, positions instead of joints */
    r = json_array_get(res, 3);
    ck_assert_ptr_nonnull(json_object_get(r, "positions"));
    ck_assert_ptr_null(json_object_get(r, "joints"));
    json_decref(a);

    /* an error inside the batch's options is the item's, at /options */
    body = "{\"options\":{\"frame\":\"unity\"},\"items\":[{\"chain\":" PLANAR
           ",\"target\":{\"position\":[1.2,0.4]}},{\"chain\":" BONES
           ",\"target\":{\"position\":[0.2,0.1,0.25]}}]}";
    a = solve_items(body, NULL, &err);
    ck_assert_ptr_nonnull(a);
    res = json_object_get(a, "results");
    json_t *e = json_object_get(json_array_get(res, 0), "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "path")), "/options/frame");
    ck_assert_ptr_null(json_object_get(json_array_get(res, 1), "error"));
    json_decref(a);
}
END_TEST

/* The envelope's errors fail the whole request, with their paths; the
 * item count is bounded by max_items (413 too_large). */
START_TEST(test_envelope_errors)
{
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_items = 3;
    static const struct {
        const char *body, *code, *path;
    } bad[] = {
        {"{\"items\":[]}", "invalid_request", "/items"},
        {"{\"items\":{}}", "invalid_request", "/items"},
        {"{\"items\":[1,2,3,4]}", "too_large", "/items"},
        {"{\"items\":[1],\"targets\":[]}", "invalid_request", "/targets"},
        {"{\"items\":[1],\"chain\":{}}", "invalid_request", "/chain"},
        {"{\"items\":[1],\"options\":7}", "invalid_request", "/options"},
        {"[1]", "invalid_request", ""},
        {"{\"items\":[1]", "invalid_json", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        proto_items *it = NULL;
        proto_error err;
        ck_assert_int_eq(
            proto_items_decode(bad[i].body, strlen(bad[i].body), &lim, NULL, NULL, &it, &err), -1);
        ck_assert_ptr_null(it);
        ck_assert_msg(strcmp(proto_error_name(err.code), bad[i].code) == 0 &&
                          strcmp(err.path, bad[i].path) == 0,
                      "%s: %s at %s (%s)", bad[i].body, proto_error_name(err.code), err.path,
                      err.message);
    }
    ck_assert_uint_eq(lim.max_items, 3);
    proto_limits_default(&lim);
    ck_assert_uint_eq(lim.max_items, PROTO_DEFAULT_MAX_ITEMS);
}
END_TEST

/* Items solved in disjoint ranges (as the daemon's chunks do) answer the
 * same as one range. */
START_TEST(test_ranges)
{
    char body[65536];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"items\":[");
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(body + o, sizeof body - o,
                              "%s{\"chain\":" BONES ",\"target\":{\"position\":[%g,0.1,0.3]},"
                              "\"options\":{\"fields\":[\"local_rotations\"],\"digits\":6}}",
                              i ? "," : "", 0.001 * i);
    snprintf(body + o, sizeof body - o, "]}");
    proto_items *a = NULL, *b = NULL;
    proto_error err;
    ck_assert_int_eq(proto_items_decode(body, strlen(body), NULL, NULL, NULL, &a, &err), 0);
    ck_assert_int_eq(proto_items_decode(body, strlen(body), NULL, NULL, NULL, &b, &err), 0);
    ck_assert_uint_eq(proto_items_count(a), 100);
    ck_assert_double_gt(proto_items_cost_us(a), 0);
    proto_items_run(a, 0, 100);
    proto_items_run(b, 50, 100);
    proto_items_run(b, 0, 17);
    proto_items_run(b, 17, 50);
    char *ta = proto_items_encode(a, NULL), *tb = proto_items_encode(b, NULL);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    proto_items_free(a);
    proto_items_free(b);
}
END_TEST

/* body read by proto_items_decode (the text mode first) and from its
 * tree (proto_json_parse, proto_items_decode_json): the same error, or
 * the same answer once both are solved. The text mode's items, or NULL. */
static proto_items *same_as_tree(const char *body)
{
    proto_items *a = NULL, *b = NULL;
    proto_error ea, eb;
    int ra = proto_items_decode(body, strlen(body), NULL, lookup, NULL, &a, &ea);
    json_t *root = proto_json_parse(body, strlen(body), PROTO_DEFAULT_MAX_BODY_BYTES,
                                   PROTO_JSON_BATCH, &eb);
    int rb = root ? proto_items_decode_json(root, NULL, lookup, NULL, &b, &eb) : -1;
    json_decref(root);
    ck_assert_msg(ra == rb, "%s: %d, from the tree %d", body, ra, rb);
    if (ra) {
        ck_assert_msg(ea.code == eb.code && !strcmp(ea.path, eb.path) &&
                          !strcmp(ea.message, eb.message),
                      "%s: %s %s, from the tree %s %s", body, ea.path, ea.message, eb.path,
                      eb.message);
        return NULL;
    }
    size_t n = proto_items_count(a);
    proto_items_run(a, 0, n);
    proto_items_run(b, 0, n);
    char *ta = proto_items_encode(a, NULL), *tb = proto_items_encode(b, NULL);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    for (size_t i = 0; i < n; i++) /* the tree's chains are each their own */
        ck_assert(!proto_items_job(b, i) || i == 0 ||
                  proto_items_job(b, i)->chain != proto_items_job(b, 0)->chain);
    proto_items_free(b);
    return a;
}

/* Items are read from the text, each as a POST /v1/solve body is (its
 * chain the thread's kept one for the same text: one chain object for
 * items that send the same one, where the tree decodes each); an item the
 * text mode declines (an error, an escaped key, a seed by joint names) is
 * read from its own tree, the others still from the text; a body that is
 * not JSON anywhere (an item, unused batch options) is the whole body's
 * error. Each the same as the tree's reading. */
START_TEST(test_items_from_text)
{
    const char *body =
        "{\"options\":{\"fields\":[\"joints\"],\"digits\":6},\"items\":["
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.1,0.2]}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.3]},\"seed\":[[0,0,1],[0.1,0,0.55],"
        "[0,0,0.1]],\"options\":{\"fields\":[\"positions\"]}},"
        "{\"chain\":" BONES ",\"t\\u0061rget\":{\"position\":[0.2,0.1,0.25]}},"
        "{\"chain\":" JOINTS ",\"target\":{\"position\":[0.3,0,0.9]},\"seed\":{\"b\":0.5}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.35]},\"options\":{\"fields\":[\"joints\"],"
        "\"digits\":9}}]}";
    proto_items *it = same_as_tree(body);
    ck_assert_ptr_nonnull(it);
    ck_assert_ptr_null(proto_items_job(it, 1));
    const proto_chain *c = proto_items_job(it, 0)->chain;
    ck_assert_ptr_eq(proto_items_job(it, 2)->chain, c);
    ck_assert_ptr_ne(proto_items_job(it, 3)->chain, c); /* from its tree */
    ck_assert_ptr_eq(proto_items_job(it, 5)->chain, c);
    proto_items_free(it);
    static const char *const whole[] = {
        /* an item that is not JSON, after items that are */
        "{\"items\":[{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]}},"
        "{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]},}]}",
        "{\"items\":[{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]}},[1,,2]]}",
        /* batch options no item takes: not JSON, unknown members */
        "{\"options\":{\"digits\":tru},\"items\":[{\"chain\":" BONES
        ",\"target\":{\"position\":[0.2,0.1,0.25]},\"options\":{\"fields\":[\"joints\"]}}]}",
        "{\"options\":{\"bogus\":1},\"items\":[{\"chain\":" BONES
        ",\"target\":{\"position\":[0.2,0.1,0.25]},\"options\":{\"fields\":[\"joints\"]}}]}",
        "{\"items\":[{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]}}],\"options\":[]}",
    };
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        proto_items_free(same_as_tree(whole[i]));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_items");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_items_in_order);
    tcase_add_test(tc, test_item_errors);
    tcase_add_test(tc, test_envelope_errors);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_items_from_text);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
