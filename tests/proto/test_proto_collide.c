/*
 * test_proto_collide.c: proto/proto_collide.h (a chain's or tree's
 * collision model from its URDF, the client's spheres and an SRDF) and the
 * reading it rests on, proto_urdf_robot_read():
 *   - a small URDF of our own with every case: a world link above the base,
 *     a cylinder, a rotated box, a mesh-only link, a sensor on a fixed
 *     joint, a tool beyond the tip with a sphere and a mesh, a finger behind
 *     a prismatic joint off the chain: each link's state, and each
 *     primitive where the test's own forward kinematics (proto_check.h's
 *     pc_fk, matrices of its own) puts it;
 *   - the skeleton standing for the links without geometry;
 *   - the iiwa from its URDF with our spheres (tests/data/collision) and
 *     our SRDF: the same distances as the model built by hand from the
 *     same numbers, with the SRDF's pairs allowed;
 *   - the PR2's two arms as a tree: the gripper palms in, the fingers and
 *     the head off the chain, the URDF's boxes and cylinders used;
 *   - errors: a link the URDF does not have (path), a negative radius or a
 *     number that is not finite (path), too many spheres, an SRDF that
 *     names an unknown link, a malformed <collision>; and such a
 *     <collision> in a chain's decode, as a chain and as a tree (kept as
 *     the description's collision error, or the decode's error when the
 *     chain object asks for collisions).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_collide.h"
#include "proto/proto_srdf.h"
#include "tests/proto/urdf_read.h"
#include "solver/ik_numeric.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"
#include "tests/solver/chains.h"
#include "tests/solver/collide_data.h"
#include "tests/solver/storage.h"
#include "proto_check.h"

static ik_collide_model M, H;
static unsigned char ws[1 << 18];

static const char ROBOT[] =
    "<robot name='t'>"
    "<link name='world'/>"
    "<joint name='fix_world' type='fixed'><parent link='world'/><child link='base'/>"
    "  <origin xyz='0 0 -0.5'/></joint>"
    "<link name='base'><collision><origin xyz='0 0 0.05'/>"
    "  <geometry><cylinder radius='0.1' length='0.1'/></geometry></collision></link>"
    "<joint name='j1' type='revolute'><parent link='base'/><child link='l1'/>"
    "  <origin xyz='0 0 0.1'/><axis xyz='0 0 1'/><limit lower='-3' upper='3'/></joint>"
    "<link name='l1'><collision><origin xyz='0 0 0.2' rpy='0.3 0 0'/>"
    "  <geometry><box size='0.1 0.1 0.4'/></geometry></collision></link>"
    "<joint name='j2' type='revolute'><parent link='l1'/><child link='l2'/>"
    "  <origin xyz='0 0 0.4'/><axis xyz='0 1 0'/><limit lower='-2' upper='2'/></joint>"
    "<link name='l2'><collision><geometry><mesh filename='package://x/l2.stl'/></geometry>"
    "  </collision></link>"
    "<joint name='j2s' type='fixed'><parent link='l2'/><child link='sensor'/>"
    "  <origin xyz='0.05 0 0.1' rpy='0 0 1'/></joint>"
    "<link name='sensor'><collision><origin xyz='0.01 0 0'/><geometry><sphere radius='0.03'/>"
    "  </geometry></collision></link>"
    "<joint name='j3' type='revolute'><parent link='l2'/><child link='l3'/>"
    "  <origin xyz='0 0 0.3'/><axis xyz='0 1 0'/><limit lower='-2' upper='2'/></joint>"
    "<link name='l3'/>"
    "<joint name='jt' type='fixed'><parent link='l3'/><child link='tool'/>"
    "  <origin xyz='0 0 0.1'/></joint>"
    "<link name='tool'><collision><geometry><sphere radius='0.04'/></geometry></collision>"
    "  <collision><geometry><mesh filename='a.stl'/></geometry></collision></link>"
    "<joint name='jf' type='prismatic'><parent link='tool'/><child link='finger'/>"
    "  <axis xyz='1 0 0'/><limit lower='0' upper='0.04'/></joint>"
    "<link name='finger'><collision><geometry><box size='0.01 0.01 0.05'/></geometry>"
    "  </collision></link>"
    "</robot>";

static ik_chain robot_chain(const char *tip)
{
    proto_error err;
    ik_chain *c =
        test_adopt(proto_urdf_load_chain(ROBOT, strlen(ROBOT), "base", tip, 64, NULL, &err));
    ck_assert_msg(c != NULL, "%s", err.message);
    return *c;
}

static const proto_collide_link *state_of(const proto_collide_link *L, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(L[i].name, name) == 0)
            return &L[i];
    ck_abort_msg("no link %s", name);
    return NULL;
}

/* The model's distance to a point at p, and which link is nearest. */
static double point_distance(const ik_collide_model *m, const double *q, ik_vec3 p, int *link)
{
    ik_obstacle o;
    ck_assert_int_eq(ik_obstacle_sphere(&o, p, 0.0), IK_OK);
    ik_collide_scene sc = {&o, 1};
    ik_collide_pair pr;
    double d = ik_collide_distance(m, &sc, q, ws, sizeof ws, &pr);
    *link = pr.link;
    return d;
}

START_TEST(test_links_placed_and_modelled)
{
    ik_chain c = robot_chain("l3");
    ck_assert_uint_eq(c.dof, 3);
    const char *tips[] = {"l3"};
    proto_collide_spec spec = {0};
    proto_collide_link *L;
    size_t n;
    proto_error err;
    ck_assert_msg(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                      &L, &n, &err) == 0,
                  "%s", err.message);
    ck_assert_uint_eq(n, 8);
    ck_assert_int_eq(state_of(L, n, "world")->state, PROTO_LINK_NONE);
    ck_assert_int_eq(state_of(L, n, "base")->state, PROTO_LINK_PRIMITIVES);
    ck_assert_int_eq(state_of(L, n, "l1")->state, PROTO_LINK_PRIMITIVES);
    ck_assert_int_eq(state_of(L, n, "l2")->state, PROTO_LINK_UNMODELLED);
    ck_assert_int_eq(state_of(L, n, "sensor")->state, PROTO_LINK_PRIMITIVES);
    ck_assert_int_eq(state_of(L, n, "l3")->state, PROTO_LINK_NONE);
    ck_assert_int_eq(state_of(L, n, "tool")->state, PROTO_LINK_PRIMITIVES);
    ck_assert(state_of(L, n, "tool")->meshes_ignored);
    ck_assert_int_eq(state_of(L, n, "finger")->state, PROTO_LINK_OFF_CHAIN);
    ck_assert_int_eq(state_of(L, n, "finger")->model_link, -1);
    ck_assert_uint_eq(state_of(L, n, "sensor")->spheres, 1);
    ck_assert_str_eq(proto_link_state_name(PROTO_LINK_UNMODELLED), "unmodelled");
    ck_assert_str_eq(proto_link_state_name(PROTO_LINK_OFF_CHAIN), "off_chain");
    /* every pair allowed: the points below see one link each */
    for (size_t a = 0; a < M.nlinks; a++)
        for (size_t b = 0; b < M.nlinks; b++)
            ik_collide_allow(&M, (int)a, (int)b, true);
    ik_rng g = {31};
    for (int i = 0; i < 50; i++) {
        double q[3] = {ik_rng_uniform(&g, -3, 3), ik_rng_uniform(&g, -2, 2),
                       ik_rng_uniform(&g, -2, 2)};
        /* the sensor's sphere: base -> l2 -> j2s origin -> (0.01, 0, 0) */
        pc_joint js[5] = {{{0, 0, 0.1}, {0, 0, 0}, {0, 0, 1}, 'r'},
                          {{0, 0, 0.4}, {0, 0, 0}, {0, 1, 0}, 'r'},
                          {{0.05, 0, 0.1}, {0, 0, 1}, {0, 0, 0}, 'f'},
                          {{0.01, 0, 0}, {0, 0, 0}, {0, 0, 0}, 'f'}};
        int link;
        ik_vec3 p = pc_fk(js, 4, q, NULL);
        ck_assert_double_eq_tol(point_distance(&M, q, p, &link), -0.03, 1e-12);
        ck_assert_int_eq(link, state_of(L, n, "sensor")->model_link);
        /* the tool's sphere: its frame, 0.1 beyond l3 */
        pc_joint jt[4] = {{{0, 0, 0.1}, {0, 0, 0}, {0, 0, 1}, 'r'},
                          {{0, 0, 0.4}, {0, 0, 0}, {0, 1, 0}, 'r'},
                          {{0, 0, 0.3}, {0, 0, 0}, {0, 1, 0}, 'r'},
                          {{0, 0, 0.1}, {0, 0, 0}, {0, 0, 0}, 'f'}};
        p = pc_fk(jt, 4, q, NULL);
        ck_assert_double_eq_tol(point_distance(&M, q, p, &link), -0.04, 1e-12);
        ck_assert_int_eq(link, state_of(L, n, "tool")->model_link);
        /* the rotated box: the point at its centre is inside, the points
         * 0.21 along its own z (rpy 0.3 about x) outside */
        pc_joint jb[2] = {{{0, 0, 0.1}, {0, 0, 0}, {0, 0, 1}, 'r'},
                          {{0, 0, 0.2}, {0.3, 0, 0}, {0, 0, 0}, 'f'}};
        double R[9];
        p = pc_fk(jb, 2, q, R);
        ck_assert_double_lt(point_distance(&M, q, p, &link), 0.0);
        ck_assert_int_eq(link, state_of(L, n, "l1")->model_link);
        ik_vec3 zb = ik_v3(R[2], R[5], R[8]);
        ck_assert_double_ge(point_distance(&M, q, ik_vec3_madd(p, zb, 0.5), &link), 0.0);
    }
    /* the world link above the base and the base's cylinder: on body 0 */
    ck_assert_int_eq(M.link[state_of(L, n, "world")->model_link].body, 0);
    ck_assert_int_eq(M.link[state_of(L, n, "base")->model_link].body, 0);
    free(L);
}
END_TEST

START_TEST(test_skeleton_and_spheres)
{
    ik_chain c = robot_chain("l3");
    const char *tips[] = {"l3"};
    proto_collide_sphere sp[3] = {
        {"l1", {0, 0, 0.1, 0.05}}, {"l1", {0, 0, 0.3, 0.05}}, {"finger", {0, 0, 0, 0.01}}};
    proto_collide_spec spec = {sp, 3, 0.04, NULL, 0};
    proto_collide_link *L;
    size_t n;
    proto_error err;
    ck_assert_msg(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                      &L, &n, &err) == 0,
                  "%s", err.message);
    /* the client's spheres win over the URDF's box; the mesh-only link and
     * the empty one get the skeleton; the finger is still off the chain */
    ck_assert_int_eq(state_of(L, n, "l1")->state, PROTO_LINK_SPHERES);
    ck_assert_uint_eq(state_of(L, n, "l1")->spheres, 2);
    ck_assert_int_eq(state_of(L, n, "l2")->state, PROTO_LINK_SKELETON);
    ck_assert_int_eq(state_of(L, n, "l3")->state, PROTO_LINK_SKELETON);
    ck_assert_uint_gt(state_of(L, n, "l2")->spheres, 3);
    ck_assert_int_eq(state_of(L, n, "world")->state, PROTO_LINK_NONE); /* not a body's frame */
    ck_assert_int_eq(state_of(L, n, "finger")->state, PROTO_LINK_OFF_CHAIN);
    /* the skeleton of l2 covers its segment, from j2 to j3 */
    for (size_t a = 0; a < M.nlinks; a++)
        for (size_t b = 0; b < M.nlinks; b++)
            ik_collide_allow(&M, (int)a, (int)b, true);
    double q[3] = {0.4, -0.7, 1.1};
    pc_joint js[3] = {{{0, 0, 0.1}, {0, 0, 0}, {0, 0, 1}, 'r'},
                      {{0, 0, 0.4}, {0, 0, 0}, {0, 1, 0}, 'r'},
                      {{0, 0, 0.15}, {0, 0, 0}, {0, 0, 0}, 'f'}};
    int link;
    ck_assert_double_lt(point_distance(&M, q, pc_fk(js, 3, q, NULL), &link), 0.0);
    ck_assert_int_eq(link, state_of(L, n, "l2")->model_link);
    free(L);
}
END_TEST

START_TEST(test_errors)
{
    ik_chain c = robot_chain("l3");
    const char *tips[] = {"l3"};
    proto_collide_link *L = NULL;
    size_t n = 0;
    proto_error err;
    proto_collide_sphere unknown[1] = {{"nope", {0, 0, 0, 0.1}}};
    proto_collide_spec spec = {unknown, 1, 0, NULL, 0};
    ck_assert_int_eq(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                         &L, &n, &err),
                     -1);
    ck_assert_int_eq(err.code, PROTO_E_INVALID_CHAIN);
    ck_assert_str_eq(err.path, "/collision_spheres/nope");
    ck_assert_ptr_null(L);
    proto_collide_sphere neg[2] = {{"l1", {0, 0, 0, 0.1}}, {"l1", {0, 0, 0, -0.1}}};
    spec.spheres = neg;
    spec.nspheres = 2;
    ck_assert_int_eq(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                         &L, &n, &err),
                     -1);
    ck_assert_int_eq(err.code, PROTO_E_INVALID_REQUEST);
    ck_assert_str_eq(err.path, "/collision_spheres/l1/1");
    ck_assert_ptr_nonnull(strstr(err.message, "negative radius"));
    proto_collide_sphere nan[1] = {{"l/1", {0, NAN, 0, 0.1}}};
    spec.spheres = nan;
    spec.nspheres = 1;
    ck_assert_int_eq(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                         &L, &n, &err),
                     -1);
    ck_assert_str_eq(err.path, "/collision_spheres/l~11"); /* escaped */
    /* too many spheres */
    static proto_collide_sphere many[IK_COLLIDE_MAX_SPHERES + 1];
    for (size_t i = 0; i <= IK_COLLIDE_MAX_SPHERES; i++)
        many[i] = (proto_collide_sphere){"l1", {0, 0, 0, 0.01}};
    spec.spheres = many;
    spec.nspheres = IK_COLLIDE_MAX_SPHERES + 1;
    ck_assert_int_eq(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                         &L, &n, &err),
                     -1);
    ck_assert_int_eq(err.code, PROTO_E_TOO_LARGE);
    /* an SRDF naming a link the URDF does not have */
    static const char srdf[] =
        "<robot name='t'><disable_collisions link1='l1' link2='l9'/></robot>";
    spec.spheres = NULL;
    spec.nspheres = 0;
    spec.srdf = srdf;
    spec.srdf_len = strlen(srdf);
    ck_assert_int_eq(proto_collide_build(ROBOT, strlen(ROBOT), "base", tips, 1, &c, NULL, &spec, &M,
                                         &L, &n, &err),
                     -1);
    ck_assert_int_eq(err.code, PROTO_E_INVALID_SRDF);
    ck_assert_str_eq(err.path, "/srdf");
    ck_assert_ptr_nonnull(strstr(err.message, "l9"));
    /* a malformed collision */
    static const char bad[] = "<robot name='b'><link name='a'><collision><geometry>"
                              "<sphere radius='-1'/></geometry></collision></link></robot>";
    proto_urdf_robot R;
    ck_assert_int_eq(proto_urdf_robot_read(bad, strlen(bad), &R, &err), -1);
    ck_assert_int_eq(err.code, PROTO_E_INVALID_URDF);
    ck_assert_ptr_nonnull(strstr(err.message, "link 'a'"));
    static const char nogeo[] = "<robot name='b'><link name='a'><collision/></link></robot>";
    ck_assert_int_eq(proto_urdf_robot_read(nogeo, strlen(nogeo), &R, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.message, "no <geometry>"));
}
END_TEST

/* A chain's decode (proto_chain_decode) whose URDF has a malformed
 * <collision> on its chain: without collision members the chain loads and
 * its description says why it has no model; with one (or as a tree alike)
 * the decode fails at /urdf naming the link; an error of the chain itself
 * comes first. The collision model reads the same parse as the joints. */
START_TEST(test_decode_malformed_collisions)
{
    static const char urdf[] =
        "<robot name='m'><link name='base'/>"
        "<joint name='j1' type='revolute'><parent link='base'/><child link='l1'/>"
        "  <axis xyz='0 0 1'/><limit lower='-1' upper='1'/></joint>"
        "<link name='l1'><collision><geometry><sphere radius='-1'/></geometry></collision></link>"
        "</robot>";
    for (int tree = 0; tree < 2; tree++) {
        json_t *o = tree ? json_pack("{s:s, s:s, s:s, s:[s]}", "kind", "tree", "urdf", urdf, "base",
                                     "base", "tips", "l1")
                         : json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", urdf, "base",
                                     "base", "tip", "l1");
        ck_assert_ptr_nonnull(o);
        proto_error err;
        proto_chain *c = proto_chain_decode_json(o, "", NULL, &err);
        ck_assert_msg(c != NULL, "%s", err.message);
        json_t *d = proto_chain_describe(c);
        const json_t *coll = json_object_get(d, "collision");
        const char *why = json_string_value(json_object_get(coll, "error"));
        ck_assert_ptr_nonnull(why);
        ck_assert_ptr_nonnull(strstr(why, "link 'l1'"));
        ck_assert_ptr_nonnull(strstr(why, "must not be negative"));
        json_decref(d);
        proto_chain_unref(c);

        json_object_set_new(o, "collision_skeleton", json_real(0.05));
        ck_assert_ptr_null(proto_chain_decode_json(o, "", NULL, &err));
        ck_assert_int_eq(err.code, PROTO_E_INVALID_URDF);
        ck_assert_str_eq(err.path, "/urdf");
        ck_assert_ptr_nonnull(strstr(err.message, "link 'l1'"));

        if (tree)
            json_object_set_new(o, "tips", json_pack("[s]", "nope"));
        else
            json_object_set_new(o, "tip", json_string("nope"));
        ck_assert_ptr_null(proto_chain_decode_json(o, "", NULL, &err));
        ck_assert_int_eq(err.code, PROTO_E_INVALID_URDF);
        ck_assert_str_eq(err.path, "/urdf");
        ck_assert_ptr_nonnull(strstr(err.message, "unknown tip link 'nope'"));
        json_decref(o);
    }
}
END_TEST

/* ---- the iiwa: URDF + our spheres + our SRDF against the hand-built model -- */

static char *data(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", pc_data_dir(), rel);
    char *t = pc_read_file(path, len);
    ck_assert_msg(t != NULL, "cannot read %s", path);
    return t;
}

START_TEST(test_iiwa_from_documents)
{
    size_t ulen, slen;
    char *urdf = data("robots/kuka_iiwa14_r820.urdf", &ulen);
    char *srdf = data("collision/kuka_iiwa14_r820.srdf", &slen);
    proto_error err;
    ik_chain *cp =
        test_adopt(proto_urdf_load_chain(urdf, ulen, "base_link", "tool0", 64, NULL, &err));
    ck_assert_ptr_nonnull(cp);
    ik_chain c = *cp;
    /* the spheres as a client sends them */
    cd_robot r;
    cd_read("kuka_iiwa14_r820.json", IIWA_LINK_NAMES, IIWA_LINKS, &r);
    proto_collide_sphere sp[CD_MAX_SPHERES];
    for (size_t i = 0; i < r.ns; i++)
        sp[i] = (proto_collide_sphere){IIWA_LINK_NAMES[r.s[i].link],
                                       {r.s[i].c.x, r.s[i].c.y, r.s[i].c.z, r.s[i].r}};
    const char *tips[] = {"tool0"};
    for (int with_srdf = 0; with_srdf < 2; with_srdf++) {
        proto_collide_spec spec = {sp, r.ns, 0, with_srdf ? srdf : NULL, with_srdf ? slen : 0};
        proto_collide_link *L;
        size_t n;
        ck_assert_msg(proto_collide_build(urdf, ulen, "base_link", tips, 1, &c, NULL, &spec, &M, &L,
                                          &n, &err) == 0,
                      "%s", err.message);
        ck_assert_uint_eq(M.nspheres, r.ns);
        ck_assert_int_eq(state_of(L, n, "link_3")->state, PROTO_LINK_SPHERES);
        ck_assert_int_eq(state_of(L, n, "base")->state, PROTO_LINK_NONE); /* fixed to base_link */
        /* by hand: the same spheres, and the SRDF's pairs read here */
        cd_model_chain(&H, &c, &r, IIWA_LINK_BODY, IIWA_LINKS);
        if (with_srdf) {
            proto_srdf_entry *e;
            size_t ne;
            ck_assert_int_eq(proto_srdf_read(srdf, slen, &e, &ne, &err), 0);
            ck_assert_uint_eq(ne, 8 + 23); /* Adjacent, Never */
            for (size_t i = 0; i < ne; i++) {
                int a = -1, b = -1;
                for (int k = 0; k < IIWA_LINKS; k++) {
                    if (!strcmp(IIWA_LINK_NAMES[k], e[i].link1))
                        a = k;
                    if (!strcmp(IIWA_LINK_NAMES[k], e[i].link2))
                        b = k;
                }
                ck_assert_int_eq(ik_collide_allow(&H, a, b, true), IK_OK);
            }
            free(e);
        }
        ik_rng g = {32};
        size_t self = 0;
        for (int i = 0; i < 2000; i++) {
            double q[7];
            for (int k = 0; k < 7; k++)
                q[k] = ik_rng_uniform(&g, c.lower[k], c.upper[k]);
            ik_collide_scene sc = {r.obst, r.nobst};
            ik_collide_pair pa, pb;
            double da = ik_collide_distance(&M, &sc, q, ws, sizeof ws, &pa);
            double db = ik_collide_distance(&H, &sc, q, ws, sizeof ws, &pb);
            ck_assert_double_eq_tol(da, db, 1e-12);
            int base = state_of(L, n, "base_link")->model_link;
            if (pa.other_link >= 0 && pa.link != base && pa.other_link != base)
                self++;
        }
        /* the SRDF leaves only the base against the wrist */
        if (with_srdf)
            ck_assert_uint_eq(self, 0);
        free(L);
    }
    free(urdf);
    free(srdf);
}
END_TEST

/* ---- the PR2's arms as a tree ----------------------------------------------- */

START_TEST(test_pr2_tree)
{
    size_t len;
    char *urdf = data("robots/pr2.urdf", &len);
    const char *tips[2] = {"l_wrist_roll_link", "r_wrist_roll_link"};
    static ik_joint j[TEST_JOINTS_CAP];
    int parent[TEST_JOINTS_CAP];
    size_t nj, tip_joint[2];
    proto_error err;
    ck_assert_int_eq(proto_urdf_tree(urdf, len, "torso_lift_link", tips, 2, j, parent,
                                     TEST_JOINTS_CAP, &nj, tip_joint, NULL, &err),
                     0);
    static ik_tree T;
    ck_assert_int_eq(tree_init(&T, j, parent, nj, tip_joint, 2), IK_OK);
    proto_collide_spec spec = {NULL, 0, 0.05, NULL, 0};
    proto_collide_link *L;
    size_t n;
    ck_assert_msg(proto_collide_build(urdf, len, "torso_lift_link", tips, 2, NULL, &T, &spec, &M,
                                      &L, &n, &err) == 0,
                  "%s", err.message);
    ck_assert_int_eq(state_of(L, n, "r_gripper_palm_link")->model_link >= 0, 1);
    ck_assert_int_eq(state_of(L, n, "r_gripper_l_finger_link")->state, PROTO_LINK_OFF_CHAIN);
    ck_assert_int_eq(state_of(L, n, "head_pan_link")->state, PROTO_LINK_OFF_CHAIN);
    ck_assert_int_eq(state_of(L, n, "base_link")->state, PROTO_LINK_OFF_CHAIN); /* prismatic */
    size_t prim = 0, skel = 0, unmod = 0;
    for (size_t i = 0; i < n; i++) {
        prim += L[i].state == PROTO_LINK_PRIMITIVES;
        skel += L[i].state == PROTO_LINK_SKELETON;
        unmod += L[i].state == PROTO_LINK_UNMODELLED;
    }
    ck_assert_uint_gt(prim, 0);
    ck_assert_uint_gt(skel, 0);
    /* the arms' bodies: a palm moves with its wrist */
    double q[TEST_DOF_CAP], q2[TEST_DOF_CAP];
    ik_tree_mid(&T, q);
    memcpy(q2, q, sizeof q);
    int palm = state_of(L, n, "r_gripper_palm_link")->model_link;
    ck_assert_int_eq(M.body[M.link[palm].body].rigid, M.body[ik_collide_tip_body(&M, 1)].rigid);
    (void)unmod;
    (void)q2;
    free(L);
    free(urdf);
}
END_TEST

/* ---- our three sphere models on their URDFs --------------------------- */

/* Each robot of tests/data/collision built from its URDF and spheres, then
 * solved avoiding its scene: targets from configurations 1 to 8 cm from an
 * obstacle, seeded from the mid-limit pose; every answer on target (by
 * ik_chain_fk, checked against the URDF elsewhere) and clear. The scenes are
 * near enough that a share of the plain answers would collide. */
START_TEST(test_robots_avoid_their_scenes)
{
    static const char *const robots[3][4] = {
        {"kuka_iiwa14_r820", "base_link", "tool0", "link_3"},
        {"ur5", "base_link", "tool0", "forearm_link"},
        {"franka_panda", "panda_link0", "panda_link8", "panda_hand"}};
    static unsigned char nws[1 << 16];
    for (int rb = 0; rb < 3; rb++) {
        char rel[256];
        size_t ulen;
        snprintf(rel, sizeof rel, "robots/%s.urdf", robots[rb][0]);
        char *urdf = data(rel, &ulen);
        proto_error err;
        ik_chain *cp = test_adopt(
            proto_urdf_load_chain(urdf, ulen, robots[rb][1], robots[rb][2], 64, NULL, &err));
        ck_assert_ptr_nonnull(cp);
        ik_chain c = *cp;
        snprintf(rel, sizeof rel, "%s.json", robots[rb][0]);
        json_t *doc = cd_load_json(rel);
        static proto_collide_sphere sp[IK_COLLIDE_MAX_SPHERES];
        size_t ns = 0;
        const char *key;
        json_t *list;
        json_object_foreach(json_object_get(doc, "collision_spheres"), key, list)
        {
            size_t i;
            json_t *s4;
            json_array_foreach(list, i, s4)
            {
                sp[ns].link = key;
                for (int k = 0; k < 4; k++)
                    sp[ns].s[k] = json_number_value(json_array_get(s4, (size_t)k));
                ns++;
            }
        }
        cd_robot scene; /* its obstacles (no spheres: the link names differ) */
        cd_read(rel, NULL, 0, &scene);
        const char *tips[1] = {robots[rb][2]};
        proto_collide_spec spec = {sp, ns, 0, NULL, 0};
        proto_collide_link *L;
        size_t n;
        ck_assert_msg(proto_collide_build(urdf, ulen, robots[rb][1], tips, 1, &c, NULL, &spec, &M,
                                          &L, &n, &err) == 0,
                      "%s: %s", robots[rb][0], err.message);
        ck_assert_int_eq(state_of(L, n, robots[rb][3])->state, PROTO_LINK_SPHERES);
        ck_assert_uint_ge(M.nspheres, ns); /* and the URDF's primitives (the UR5's ee_link) */
        ik_collide_scene sc = {scene.obst, scene.nobst};
        H = M;
        for (size_t a = 0; a < H.nlinks; a++)
            for (size_t b = 0; b < H.nlinks; b++)
                ik_collide_allow(&H, (int)a, (int)b, true);
        ik_collide_check avoid = {&M, sc, 0.0, true, ws, sizeof ws};
        ik_numeric_opts o = ik_numeric_opts_default();
        o.timeout_s = 0;
        o.max_restarts = 200;
        o.collide = &avoid;
        ik_rng g = {40 + (uint64_t)rb};
        size_t targets = 0, ok = 0;
        double mid[TEST_DOF_CAP];
        ik_chain_mid(&c, mid);
        for (int tries = 0; tries < 100000 && targets < 40; tries++) {
            double qt[TEST_DOF_CAP], q[TEST_DOF_CAP];
            for (size_t k = 0; k < c.dof; k++)
                qt[k] = ik_rng_uniform(&g, c.lower[k], c.upper[k]);
            /* clear by 1 cm, an obstacle within 8 cm (H: every pair of
             * links allowed) */
            if (ik_collide_distance(&M, &sc, qt, ws, sizeof ws, NULL) < 0.01 ||
                ik_collide_distance(&H, &sc, qt, ws, sizeof ws, NULL) > 0.08)
                continue;
            targets++;
            ik_xform goal = ik_chain_fk(&c, qt);
            ik_target t = ik_target_full_pose(goal);
            if (ik_numeric_solve(&c, &t, mid, &o, nws, sizeof nws, q, NULL) != IK_OK)
                continue;
            ok++;
            double e[6];
            ik_pose_error(goal, ik_chain_fk(&c, q), e);
            for (int r = 0; r < 6; r++)
                ck_assert_double_lt(fabs(e[r]), 1e-5);
            ck_assert_double_ge(ik_collide_distance(&M, &sc, q, ws, sizeof ws, NULL), 0.0);
        }
        ck_assert_msg(targets == 40, "%s: %zu targets", robots[rb][0], targets);
        ck_assert_uint_ge(ok, 38);
        free(L);
        json_decref(doc);
        free(urdf);
    }
}
END_TEST

static Suite *collide_suite(void)
{
    Suite *s = suite_create("proto_collide");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_links_placed_and_modelled);
    tcase_add_test(tc, test_skeleton_and_spheres);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_decode_malformed_collisions);
    tcase_add_test(tc, test_iiwa_from_documents);
    tcase_add_test(tc, test_pr2_tree);
    tcase_add_test(tc, test_robots_avoid_their_scenes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(collide_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
