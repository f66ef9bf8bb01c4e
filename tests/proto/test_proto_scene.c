/*
 * test_proto_scene.c: a request's scene and collision options as proto/
 * decodes them (proto/README.md "Collisions"): the obstacles in ikd's
 * internal convention (a box written in Unity's convention has its sides
 * and centre permuted as points are), the names answers give them, the
 * errors with their paths, the checks that need a collision model, and
 * the answer's min_distance and closest for a tool inside a box, computed
 * here from the sphere's centre (forward kinematics) and the box; and
 * registered scenes (POST /v1/scenes): content ids, the body's own frame,
 * the lookup by scene_id and its errors.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_kind.h"
#include "proto/proto_scene.h"

/* One revolute joint about z, then a 0.5 link along x to the tool, which
 * has a sphere of radius 0.05 at its origin (the URDF's own primitive). */
static const char URDF[] =
    "<robot name='s'><link name='base'/><link name='arm'/>"
    "<link name='tool'><collision><geometry><sphere radius='0.05'/></geometry></collision></link>"
    "<joint name='j' type='revolute'><parent link='base'/><child link='arm'/>"
    "<axis xyz='0 0 1'/><limit lower='-3' upper='3' effort='1' velocity='1'/></joint>"
    "<joint name='t' type='fixed'><parent link='arm'/><child link='tool'/>"
    "<origin xyz='0.5 0 0'/></joint></robot>";

static json_t *chain(void)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", URDF, "base", "base", "tip",
                     "tool");
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

static const char *const ROS_BODY =
    "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,2,3],\"name\":\"b\"}]}";

static proto_scene *registered;

static void *lookup_scene(void *ud, proto_reg_kind kind, const char *id)
{
    (void)ud;
    if (kind != PROTO_REG_SCENE || !registered || strcmp(id, registered->id) != 0)
        return NULL;
    return proto_scene_ref(registered);
}

START_TEST(test_registered_scene)
{
    proto_error err;
    proto_scene *a = proto_scene_decode(ROS_BODY, strlen(ROS_BODY), NULL, &err);
    ck_assert_msg(a != NULL, "%s", err.message);
    /* the same scene written otherwise: the same id */
    const char *again = "{ \"boxes\": [ {\"name\": \"b\", \"position\": [1.0, 2.0, 3.0], "
                        "\"size\": [0.1, 0.2, 0.3]} ] }";
    proto_scene *b = proto_scene_decode(again, strlen(again), NULL, &err);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(a->id, b->id);
    ck_assert_uint_eq(strlen(a->id), PROTO_SCENE_ID_LEN);
    /* the same box written in Unity's convention (p_ros = (z, -x, y)):
     * another id, the same obstacle in ikd's frame */
    const char *unity = "{\"frame\":\"unity\",\"boxes\":[{\"size\":[0.2,0.3,0.1],"
                        "\"position\":[-2,3,1],\"name\":\"b\"}]}";
    proto_scene *u = proto_scene_decode(unity, strlen(unity), NULL, &err);
    ck_assert_msg(u != NULL, "%s", err.message);
    ck_assert_str_ne(u->id, a->id);
    ck_assert_int_eq(u->frame, PROTO_FRAME_UNITY);
    ck_assert_double_eq_tol(u->ob[0].p.x, 1.0, 1e-12);
    ck_assert_double_eq_tol(u->ob[0].p.y, 2.0, 1e-12);
    ck_assert_double_eq_tol(u->ob[0].p.z, 3.0, 1e-12);
    ck_assert_double_eq_tol(u->ob[0].half.x, a->ob[0].half.x, 1e-12);
    ck_assert_double_eq_tol(u->ob[0].half.y, a->ob[0].half.y, 1e-12);
    ck_assert_double_eq_tol(u->ob[0].half.z, a->ob[0].half.z, 1e-12);
    ck_assert_double_eq_tol(a->ob[0].half.x, 0.05, 1e-12);
    /* the description, and the source it gives back */
    json_t *d = proto_scene_describe(a, true);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "boxes")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "obstacles")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(d, "frame")), "ros");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "memory_bytes")), (json_int_t)a->memory);
    json_t *src = json_object_get(json_object_get(d, "scene"), "boxes");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(src, 0), "name")), "b");
    json_decref(d);
    /* by id in a solve: the scene answers are checked against */
    registered = a;
    json_t *body = json_pack("{s:o, s:{s:[f,f,f]}, s:s}", "chain", chain(), "target",
                             "position", 0.5, 0.0, 0.0, "scene_id", a->id);
    char *text = json_dumps(body, JSON_COMPACT);
    proto_job *job = NULL;
    ck_assert_int_eq(proto_job_decode(text, strlen(text), PROTO_SOLVE, NULL, lookup_scene, NULL,
                                      &job, &err), 0);
    ck_assert_ptr_eq(job->scene, a);
    proto_job_free(job);
    free(text);
    /* an unknown id, and both members */
    json_object_set_new(body, "scene_id", json_string("0123"));
    text = json_dumps(body, JSON_COMPACT);
    ck_assert_int_eq(proto_job_decode(text, strlen(text), PROTO_SOLVE, NULL, lookup_scene, NULL,
                                      &job, &err), -1);
    ck_assert_int_eq(err.code, PROTO_E_UNKNOWN_SCENE);
    ck_assert_str_eq(err.path, "/scene_id");
    free(text);
    json_object_set_new(body, "scene_id", json_string(a->id));
    json_object_set_new(body, "scene", json_pack("{s:[]}", "boxes"));
    text = json_dumps(body, JSON_COMPACT);
    ck_assert_int_eq(proto_job_decode(text, strlen(text), PROTO_SOLVE, NULL, lookup_scene, NULL,
                                      &job, &err), -1);
    ck_assert_int_eq(err.code, PROTO_E_INVALID_REQUEST);
    ck_assert_str_eq(err.path, "/scene_id");
    free(text);
    json_decref(body);
    registered = NULL;
    /* bad bodies, with their paths from the body's root */
    static const struct {
        const char *body, *path;
        proto_errcode code;
    } bad[] = {
        {"{\"frame\":\"left\"}", "/frame", PROTO_E_INVALID_REQUEST},
        {"{\"spheres\":[{\"radius\":-1,\"position\":[0,0,0]}]}", "/spheres/0/radius",
         PROTO_E_INVALID_REQUEST},
        {"[]", "", PROTO_E_INVALID_REQUEST},
        {"{\"walls\":[]}", "/walls", PROTO_E_INVALID_REQUEST},
        {"{", "", PROTO_E_INVALID_JSON},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(proto_scene_decode(bad[i].body, strlen(bad[i].body), NULL, &err));
        ck_assert_int_eq(err.code, bad[i].code);
        ck_assert_str_eq(err.path, bad[i].path);
    }
    proto_scene_free(a);
    proto_scene_free(b);
    proto_scene_free(u);
}
END_TEST

/* The id of a registration's body. */
static void id_of(const char *body, char id[PROTO_SCENE_ID_LEN + 1])
{
    proto_error err;
    proto_scene *s = proto_scene_decode(body, strlen(body), NULL, &err);
    ck_assert_msg(s != NULL, "%s: %s at %s", body, err.message, err.path);
    memcpy(id, s->id, PROTO_SCENE_ID_LEN + 1);
    proto_scene_free(s);
}

/* Equal worlds, equal ids: what is written with its default (an empty or
 * absent list, "frame": "ros", an empty name, an orientation without
 * rotation, -0) is the same scene as what leaves it out; any other
 * difference of numbers, names, order or convention is another scene. */
START_TEST(test_scene_ids_of_equal_worlds)
{
    static const char *const empty[] = {
        "{}",
        "{\"spheres\": []}",
        "{\"boxes\": [], \"spheres\": [], \"capsules\": []}",
        "{\"frame\": \"ros\", \"capsules\": []}",
    };
    char first[PROTO_SCENE_ID_LEN + 1], id[PROTO_SCENE_ID_LEN + 1];
    id_of(empty[0], first);
    for (size_t i = 1; i < sizeof empty / sizeof empty[0]; i++) {
        id_of(empty[i], id);
        ck_assert_msg(strcmp(id, first) == 0, "%s", empty[i]);
    }
    static const char *const box[] = {
        "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3]}]}",
        "{\"capsules\":[],\"boxes\":[{\"position\":[1.0,0.0,3.0],\"size\":[0.1,0.2,0.3]}],"
        "\"spheres\":[]}",
        "{\"frame\":\"ros\",\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,-0.0,3],"
        "\"orientation\":[0,0,0,1],\"name\":\"\"}]}",
        "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3],"
        "\"orientation\":[0.0,-0.0,0,-1]}]}",
    };
    id_of(box[0], first);
    ck_assert_str_ne(first, id);
    for (size_t i = 1; i < sizeof box / sizeof box[0]; i++) {
        id_of(box[i], id);
        ck_assert_msg(strcmp(id, first) == 0, "%s", box[i]);
    }
    static const char *const other[] = {
        "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3.000001]}]}",
        "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3],\"name\":\"a\"}]}",
        "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3],"
        "\"orientation\":[0,0,0.38268343236508984,0.9238795325112867]}]}",
        "{\"frame\":\"unity\",\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3]}]}",
        "{\"boxes\":[{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3]},"
        "{\"size\":[0.1,0.2,0.3],\"position\":[1,0,3]}]}",
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        id_of(other[i], id);
        ck_assert_msg(strcmp(id, first) != 0, "%s", other[i]);
    }
    /* the source kept (what Redis stores and GET gives back) is that
     * canonical form, and has the id it was kept under */
    proto_error err;
    proto_scene *s = proto_scene_decode(box[2], strlen(box[2]), NULL, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->text, "{\"boxes\":[{\"position\":[1.0,0.0,3.0],"
                              "\"size\":[0.10000000000000001,0.20000000000000001,"
                              "0.29999999999999999]}]}");
    proto_scene *again = proto_scene_decode(s->text, s->text_len, NULL, &err);
    ck_assert_ptr_nonnull(again);
    ck_assert_str_eq(again->id, s->id);
    ck_assert_str_eq(again->text, s->text);
    proto_scene_free(again);
    proto_scene_free(s);
}
END_TEST

START_TEST(test_scene_read)
{
    proto_job *job;
    proto_error err;
    json_t *b = json_pack(
        "{s:o, s:{s:[f,f,f]}, s:{s:s}, s:{s:[{s:[f,f,f], s:[f,f,f], s:s}], s:[{s:f, s:[f,f,f]}],"
        " s:[{s:f, s:[f,f,f], s:[f,f,f]}]}}",
        "chain", chain(), "target", "position", 0.0, 0.1, 0.4, "options", "frame", "unity",
        "scene", "boxes", "size", 1.0, 2.0, 3.0, "position", 1.0, 2.0, 3.0, "name", "crate",
        "spheres", "radius", 0.2, "position", 1.0, 0.0, 0.0, "capsules", "radius", 0.1, "from",
        0.0, 0.0, 0.0, "to", 0.0, 1.0, 0.0);
    ck_assert_msg(decode(b, &job, &err) == 0, "%s at %s", err.message, err.path);
    const proto_scene *s = job->scene;
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->count, 3);
    /* Unity (x, y, z) is ROS (z, -x, y): the box's centre and its sides */
    const ik_obstacle *o = &s->ob[0];
    ck_assert_int_eq(o->shape, IK_SHAPE_BOX);
    ck_assert_double_eq_tol(o->p.x, 3.0, 1e-12);
    ck_assert_double_eq_tol(o->p.y, -1.0, 1e-12);
    ck_assert_double_eq_tol(o->p.z, 2.0, 1e-12);
    ck_assert_double_eq_tol(o->half.x, 1.5, 1e-12);
    ck_assert_double_eq_tol(o->half.y, 0.5, 1e-12);
    ck_assert_double_eq_tol(o->half.z, 1.0, 1e-12);
    ck_assert_double_eq_tol(s->ob[1].p.y, -1.0, 1e-12);
    ck_assert_double_eq_tol(s->ob[2].p2.z, 1.0, 1e-12);
    char name[96];
    proto_scene_obstacle_name(s, 0, name, sizeof name);
    ck_assert_str_eq(name, "crate");
    proto_scene_obstacle_name(s, 1, name, sizeof name);
    ck_assert_str_eq(name, "spheres/0");
    proto_scene_obstacle_name(s, 2, name, sizeof name);
    ck_assert_str_eq(name, "capsules/0");
    proto_job_free(job);
}
END_TEST

/* The error of a request with scene (a JSON text) and options. */
static void refused(const char *scene, const char *options, const char *code, const char *path)
{
    json_error_t je;
    json_t *b = json_pack("{s:o, s:{s:[f,f,f]}}", "chain", chain(), "target", "position", 0.5,
                          0.0, 0.0);
    if (scene)
        json_object_set_new(b, "scene", json_loads(scene, 0, &je));
    if (options)
        json_object_set_new(b, "options", json_loads(options, 0, &je));
    proto_job *job = NULL;
    proto_error err;
    ck_assert_int_eq(decode(b, &job, &err), -1);
    ck_assert_msg(strcmp(proto_error_name(err.code), code) == 0 && strcmp(err.path, path) == 0,
                  "%s: got %s at %s (%s)", scene ? scene : options, proto_error_name(err.code),
                  err.path, err.message);
}

START_TEST(test_scene_errors)
{
    refused("{\"boxes\":[{\"size\":[1,0,1],\"position\":[0,0,0]}]}", NULL, "invalid_request",
            "/scene/boxes/0/size");
    refused("{\"boxes\":[{\"size\":[1,1,1]}]}", NULL, "invalid_request",
            "/scene/boxes/0/position");
    refused("{\"boxes\":[{\"size\":[1,1,1],\"position\":[0,0,0],\"orientation\":[0,0,0,2]}]}",
            NULL, "invalid_request", "/scene/boxes/0/orientation");
    refused("{\"spheres\":[{\"radius\":-0.1,\"position\":[0,0,0]}]}", NULL, "invalid_request",
            "/scene/spheres/0/radius");
    refused("{\"spheres\":[{\"radius\":0.1,\"position\":[0,0,0],\"colour\":1}]}", NULL,
            "invalid_request", "/scene/spheres/0/colour");
    refused("{\"planes\":[]}", NULL, "invalid_request", "/scene/planes");
    refused("[]", NULL, "invalid_request", "/scene");
    refused(NULL, "{\"collision_margin\":-1}", "invalid_request", "/options/collision_margin");
    refused(NULL, "{\"avoid_collisions\":1}", "invalid_request", "/options/avoid_collisions");
    /* too many: 257 spheres over the lists */
    json_t *sc = json_object(), *sp = json_array(), *bx = json_array();
    for (int i = 0; i < 200; i++)
        json_array_append_new(sp, json_pack("{s:f, s:[f,f,f]}", "radius", 0.1, "position", 9.0,
                                            9.0, (double)i));
    for (int i = 0; i < 57; i++)
        json_array_append_new(bx, json_pack("{s:[f,f,f], s:[f,f,f]}", "size", 1.0, 1.0, 1.0,
                                            "position", 9.0, 9.0, (double)i));
    json_object_set_new(sc, "spheres", sp);
    json_object_set_new(sc, "boxes", bx);
    char *t = json_dumps(sc, JSON_COMPACT);
    json_decref(sc);
    refused(t, NULL, "too_large", "/scene");
    free(t);
}
END_TEST

START_TEST(test_needs_a_model)
{
    proto_job *job;
    proto_error err;
    json_t *b = json_pack("{s:{s:s, s:[f,f]}, s:{s:[f,f]}, s:{s:b}}", "chain", "kind", "planar",
                          "lengths", 1.0, 1.0, "target", "position", 1.0, 1.0, "options",
                          "avoid_collisions", 1);
    ck_assert_int_eq(decode(b, &job, &err), -1);
    ck_assert_str_eq(err.path, "/options/avoid_collisions");
    ck_assert_str_eq(proto_error_name(err.code), "invalid_request");
    /* a URDF without any collision geometry */
    json_t *c = chain();
    json_object_set_new(c, "urdf",
                        json_string("<robot name='n'><link name='base'/><link name='tool'/>"
                                    "<joint name='j' type='revolute'><parent link='base'/>"
                                    "<child link='tool'/><origin xyz='0 0 1'/><axis xyz='1 0 0'/>"
                                    "<limit lower='-1' upper='1' effort='1' velocity='1'/>"
                                    "</joint></robot>"));
    b = json_pack("{s:o, s:{s:[f,f,f]}, s:{}}", "chain", c, "target", "position", 0.0, 0.0, 1.0,
                  "scene");
    ck_assert_int_eq(decode(b, &job, &err), -1);
    ck_assert_str_eq(err.path, "/scene");
    ck_assert_str_eq(proto_error_name(err.code), "invalid_chain");
}
END_TEST

/* The tool's sphere at angle a is at (0.5 cos a, 0.5 sin a, 0): a box
 * around the only place it can reach the target makes the solve fail in
 * collision, with the distance computed here. */
START_TEST(test_in_collision_answer)
{
    proto_job *job;
    proto_error err;
    json_t *b = json_pack(
        "{s:o, s:{s:[f,f,f]}, s:{s:[{s:[f,f,f], s:[f,f,f]}]}, s:{s:b, s:i, s:f}}", "chain",
        chain(), "target", "position", 0.0, 0.5, 0.0, "scene", "boxes", "size", 0.2, 0.2, 0.2,
        "position", 0.0, 0.5, 0.0, "options", "avoid_collisions", 1, "max_iterations", 300,
        "timeout_ms", 0.0);
    ck_assert_msg(decode(b, &job, &err) == 0, "%s at %s", err.message, err.path);
    proto_job_run(job, 0, 1);
    size_t n;
    char *text = proto_job_encode(job, &n);
    json_error_t je;
    json_t *a = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(json_string_value(json_object_get(a, "reason")), "in_collision");
    ck_assert_str_eq(json_string_value(json_object_get(a, "cause")), "in_collision");
    ck_assert_int_eq(json_integer_value(json_object_get(a, "code")), -31);
    json_t *cl = json_object_get(a, "closest");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "link")), "tool");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "obstacle")), "boxes/0");
    double q = json_real_value(json_array_get(json_object_get(a, "joints"), 0));
    double cx = 0.5 * cos(q), cy = 0.5 * sin(q);
    /* the sphere's centre against the box [-0.1, 0.1] x [0.4, 0.6] x [-0.1, 0.1] */
    double dx = fabs(cx) - 0.1, dy = fabs(cy - 0.5) - 0.1, dz = -0.1;
    double out = hypot(fmax(dx, 0.0), fmax(dy, 0.0));
    double d = (out > 0 ? out : fmax(dx, fmax(dy, dz))) - 0.05;
    ck_assert_double_eq_tol(json_real_value(json_object_get(a, "min_distance")), d, 1e-9);
    ck_assert_double_eq_tol(json_real_value(json_object_get(cl, "distance")), d, 1e-9);
    ck_assert(d < 0);
    json_decref(a);
    free(text);
    proto_job_free(job);
}
END_TEST

static Suite *scene_suite(void)
{
    Suite *s = suite_create("proto_scene");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_scene_read);
    tcase_add_test(tc, test_scene_errors);
    tcase_add_test(tc, test_needs_a_model);
    tcase_add_test(tc, test_in_collision_answer);
    tcase_add_test(tc, test_registered_scene);
    tcase_add_test(tc, test_scene_ids_of_equal_worlds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(scene_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
