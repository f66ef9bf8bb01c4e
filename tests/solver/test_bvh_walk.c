/*
 * test_bvh_walk.c: seed 001's two-bone IK and bone orientation update on
 * real motion: the CMU 02_01 walk ($IKD_DATA/motion/cmu_02_01_walk.bvh, see
 * SOURCES.md: 31 joints, 96 channels, 344 frames at 120 Hz, every rotation
 * channel triple "Zrotation Yrotation Xrotation", Hips with 6 channels).
 *
 * The BVH reader is tests/solver/bvh.h (shared with test_ik_tree_bvh.c). Forward
 * kinematics of every frame follows the BVH definition: a joint's local
 * transform is its OFFSET (plus the position channels, Hips only) and the
 * product of its rotation channels in the order listed (ZYX: R = Rz Ry Rx),
 * composed down from the root. Then, for both legs (UpLeg = hip, Leg =
 * knee, Foot = ankle) of every frame:
 *   - knee spin: the knee turned about the hip-ankle axis by up to 30
 *     degrees, the recorded knee given as the pole: the solve must restore
 *     the recorded knee and keep the ankle on the recorded ankle;
 *   - thigh swing: the whole leg (knee and ankle) rotated rigidly about the
 *     hip by up to 30 degrees about a random axis, target = the recorded
 *     ankle: the ankle goes back exactly (bone lengths kept to 1e-9 of the
 *     leg length) and the knee ends near the recorded knee. Bound asserted:
 *     |b' - b| <= 2 |b_p - b|. Reason: the recorded knee b lies on the
 *     solve's circle (same hip, same ankle, same bone lengths), and b' is
 *     the circle point nearest to the perturbed knee b_p, so
 *     |b' - b_p| <= |b - b_p| and the triangle inequality gives the bound.
 * Finally the orientation update (ik_skeleton.h) runs on the BVH hierarchy
 * itself for a few frames (ankle targets taken from other frames, so they
 * are reachable, and a few out of reach), with a uniform scale on the root
 * (CMU units to metres): FK recomputed here from the updated rotations must
 * put the ankle on the target, the knee on b', and leave the rest of the
 * body in place.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_skeleton.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"
#include "solver/ik_twobone.h"

#include "bvh.h"

/* ---- fixture ---------------------------------------------------------- */

static bvh *walk;

static void load_walk(void)
{
    const char *root = getenv("IKD_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/motion/cmu_02_01_walk.bvh", root ? root : "tests/data");
    char *text = read_file(path);
    ck_assert_msg(text != NULL, "cannot read %s (set IKD_DATA)", path);
    walk = malloc(sizeof *walk);
    ck_assert(walk != NULL);
    bool ok = bvh_parse(text, walk);
    free(text);
    ck_assert_msg(ok, "BVH syntax error in %s", path);
}

static void unload_walk(void)
{
    if (walk) {
        free(walk->motion);
        free(walk);
        walk = NULL;
    }
}

static ik_rng rng_state;

static double urand(void)
{
    return ik_rng_unit(&rng_state);
}
static double urange(double lo, double hi)
{
    return lo + (hi - lo) * urand();
}
static ik_vec3 rand_unit(void)
{
    for (;;) {
        ik_vec3 v = ik_v3(urange(-1, 1), urange(-1, 1), urange(-1, 1));
        double n = ik_vec3_len(v);
        if (n > 0.1 && n <= 1)
            return ik_vec3_scale(v, 1 / n);
    }
}
static double vdist(ik_vec3 a, ik_vec3 b)
{
    return ik_vec3_len(ik_vec3_sub(a, b));
}

static const char *legs[2][3] = {{"LeftUpLeg", "LeftLeg", "LeftFoot"},
                                 {"RightUpLeg", "RightLeg", "RightFoot"}};

/* ---- tests ------------------------------------------------------------ */

START_TEST(test_bvh_shape)
{
    ck_assert_int_eq(walk->njoints, 31);
    ck_assert_int_eq(walk->nchannels, 96);
    ck_assert_int_eq(walk->nframes, 344);
    ck_assert_double_eq_tol(walk->frame_time, 1.0 / 120, 1e-6);
    ck_assert_str_eq(walk->j[0].name, "Hips");
    ck_assert_int_eq(walk->j[0].nch, 6);
    for (int i = 1; i < walk->njoints; i++) {
        ck_assert_int_eq(walk->j[i].nch, 3);
        ck_assert_int_eq(walk->j[i].ch[0], CH_ZROT);
        ck_assert_int_eq(walk->j[i].ch[1], CH_YROT);
        ck_assert_int_eq(walk->j[i].ch[2], CH_XROT);
    }
    /* FK sanity: bone lengths are frame-independent, and the walk covers
     * about 3.4 m (SOURCES.md) = about 60 CMU units of hip travel */
    int hip = bvh_find(walk, "LeftUpLeg"), knee = bvh_find(walk, "LeftLeg");
    ck_assert(hip >= 0 && knee >= 0);
    ik_xform g0[MAX_JOINTS], g1[MAX_JOINTS];
    bvh_frame_globals(walk, 0, g0);
    bvh_frame_globals(walk, walk->nframes - 1, g1);
    ck_assert_double_eq_tol(vdist(g0[hip].p, g0[knee].p), vdist(g1[hip].p, g1[knee].p), 1e-9);
    ck_assert_double_eq_tol(vdist(g0[hip].p, g0[knee].p), ik_vec3_len(walk->j[knee].offset), 1e-9);
    double travel = vdist(g0[0].p, g1[0].p) * 0.056444;
    ck_assert(travel > 2.0 && travel < 5.0);
}
END_TEST

START_TEST(test_bvh_knee_spin_with_pole)
{
    rng_state.s = 30;
    int solved = 0;
    for (int f = 0; f < walk->nframes; f++) {
        ik_xform g[MAX_JOINTS];
        bvh_frame_globals(walk, f, g);
        for (int leg = 0; leg < 2; leg++) {
            ik_vec3 a = g[bvh_find(walk, legs[leg][0])].p;
            ik_vec3 b = g[bvh_find(walk, legs[leg][1])].p;
            ik_vec3 c = g[bvh_find(walk, legs[leg][2])].p;
            double L = vdist(a, b) + vdist(b, c);
            /* spin the knee about the hip-ankle axis: lengths unchanged */
            double phi = urange(-30, 30) * IK_PI / 180;
            ik_quat spin = ik_quat_from_axis_angle(ik_vec3_sub(c, a), phi);
            ik_vec3 bp = ik_vec3_add(a, ik_quat_rotate(spin, ik_vec3_sub(b, a)));
            ik_twobone_result r;
            int st = ik_twobone_solve(a, bp, c, c, &b, &r);
            ck_assert_int_eq(st, IK_OK);
            ck_assert_double_eq_tol(vdist(r.c, c) / L, 0, 1e-9);
            ck_assert_double_eq_tol(vdist(r.b, b) / L, 0, 1e-9);
            solved++;
        }
    }
    ck_assert_int_eq(solved, 2 * 344);
}
END_TEST

START_TEST(test_bvh_thigh_swing)
{
    rng_state.s = 31;
    double worst_ratio = 0;
    for (int f = 0; f < walk->nframes; f++) {
        ik_xform g[MAX_JOINTS];
        bvh_frame_globals(walk, f, g);
        for (int leg = 0; leg < 2; leg++) {
            ik_vec3 a = g[bvh_find(walk, legs[leg][0])].p;
            ik_vec3 b = g[bvh_find(walk, legs[leg][1])].p;
            ik_vec3 c = g[bvh_find(walk, legs[leg][2])].p;
            double lab = vdist(a, b), lbc = vdist(b, c), L = lab + lbc;
            for (int rep = 0; rep < 4; rep++) {
                /* swing the whole leg rigidly about the hip */
                double ang = urange(1, 30) * IK_PI / 180;
                ik_quat sw = ik_quat_from_axis_angle(rand_unit(), ang);
                ik_vec3 bp = ik_vec3_add(a, ik_quat_rotate(sw, ik_vec3_sub(b, a)));
                ik_vec3 cp = ik_vec3_add(a, ik_quat_rotate(sw, ik_vec3_sub(c, a)));
                ik_twobone_result r;
                ck_assert_int_eq(ik_twobone_solve(a, bp, cp, c, NULL, &r), IK_OK);
                /* the ankle back on the recorded ankle, lengths kept */
                ck_assert_double_eq_tol(vdist(r.c, c) / L, 0, 1e-9);
                ck_assert_double_eq_tol((vdist(r.b, a) - lab) / L, 0, 1e-9);
                ck_assert_double_eq_tol((vdist(r.c, r.b) - lbc) / L, 0, 1e-9);
                /* the knee near the recorded one: |b' - b| <= 2 |b_p - b| */
                double moved = vdist(bp, b), off = vdist(r.b, b);
                ck_assert(off <= 2 * moved + 1e-9 * L);
                if (moved > 1e-6 * L && off / moved > worst_ratio)
                    worst_ratio = off / moved;
            }
        }
    }
    ck_assert(worst_ratio <= 2.0);
}
END_TEST

/* The BVH hierarchy as ik_bone's at frame f; the root scaled by s. */
static void bones_at(const bvh *b, int f, double s, ik_bone *bones)
{
    for (int i = 0; i < b->njoints; i++) {
        bones[i].parent = b->j[i].parent;
        bvh_local(b, f, i, &bones[i].translation, &bones[i].rotation);
        bones[i].scale = i == 0 ? ik_v3(s, s, s) : ik_v3(1, 1, 1);
    }
}

/* Independent FK of ik_bone's (translation, rotation, scale) by points. */
static ik_vec3 bone_point(const ik_bone *bones, int i, ik_vec3 x)
{
    while (i >= 0) {
        const ik_bone *bb = &bones[i];
        ik_vec3 sx = ik_v3(x.x * bb->scale.x, x.y * bb->scale.y, x.z * bb->scale.z);
        x = ik_vec3_add(bb->translation, ik_quat_rotate(ik_quat_normalize(bb->rotation), sx));
        i = bb->parent;
    }
    return x;
}

START_TEST(test_bvh_skeleton_update)
{
    const double unit = 0.056444; /* CMU units -> metres (SOURCES.md) */
    int frames[] = {0, 60, 120, 200, 300};
    rng_state.s = 32;
    for (size_t fi = 0; fi < sizeof frames / sizeof frames[0]; fi++) {
        int f = frames[fi];
        for (int leg = 0; leg < 2; leg++) {
            int hip = bvh_find(walk, legs[leg][0]), knee = bvh_find(walk, legs[leg][1]),
                foot = bvh_find(walk, legs[leg][2]);
            int other_foot = bvh_find(walk, legs[1 - leg][2]);
            int toe = bvh_find(walk, leg == 0 ? "LeftToeBase" : "RightToeBase");
            int head = bvh_find(walk, "Head");
            ck_assert(hip >= 0 && knee >= 0 && foot >= 0 && toe >= 0 && head >= 0);
            for (int k = 0; k < 3; k++) {
                ik_bone bones[MAX_JOINTS];
                bones_at(walk, f, unit, bones);
                int n = walk->njoints;
                ik_vec3 a = bone_point(bones, hip, ik_v3(0, 0, 0));
                /* target: this leg's ankle offset from the hip in another
                 * frame (reachable), or 1.2 leg lengths along it (not) */
                ik_xform g2[MAX_JOINTS];
                int f2 = (f + 37 + 53 * k) % walk->nframes;
                bvh_frame_globals(walk, f2, g2);
                ik_vec3 off = ik_vec3_scale(ik_vec3_sub(g2[foot].p, g2[hip].p), unit);
                bool reach = k < 2;
                if (!reach) {
                    double full = vdist(a, bone_point(bones, knee, ik_v3(0, 0, 0))) +
                                  vdist(bone_point(bones, knee, ik_v3(0, 0, 0)),
                                        bone_point(bones, foot, ik_v3(0, 0, 0)));
                    off = ik_vec3_scale(ik_vec3_normalize(off), 1.2 * full);
                }
                ik_vec3 target = ik_vec3_add(a, off);

                ik_vec3 toe_off = ik_vec3_sub(bone_point(bones, toe, ik_v3(0, 0, 0)),
                                              bone_point(bones, foot, ik_v3(0, 0, 0)));
                ik_vec3 head0 = bone_point(bones, head, ik_v3(0, 0, 0));
                ik_vec3 other0 = bone_point(bones, other_foot, ik_v3(0, 0, 0));

                ik_mat34 g[MAX_JOINTS];
                ik_twobone_result res;
                int st = ik_skeleton_twobone(bones, (size_t)n, (size_t)hip, (size_t)knee,
                                             (size_t)foot, target, NULL, g, &res);
                ck_assert_int_eq(st, reach ? IK_OK : IK_EUNREACHABLE);

                double L = 15.0 * unit; /* about a leg length */
                ik_vec3 k1 = bone_point(bones, knee, ik_v3(0, 0, 0));
                ik_vec3 f1 = bone_point(bones, foot, ik_v3(0, 0, 0));
                ck_assert_double_eq_tol(vdist(k1, res.b) / L, 0, 1e-9);
                ck_assert_double_eq_tol(vdist(f1, res.c) / L, 0, 1e-9);
                if (reach)
                    ck_assert_double_eq_tol(vdist(f1, target) / L, 0, 1e-9);
                /* the rest of the body stays; the toe moves with the foot */
                ck_assert_double_eq_tol(vdist(bone_point(bones, head, ik_v3(0, 0, 0)), head0), 0,
                                        1e-12);
                ck_assert_double_eq_tol(
                    vdist(bone_point(bones, other_foot, ik_v3(0, 0, 0)), other0), 0, 1e-12);
                ck_assert_double_eq_tol(
                    ik_vec3_len(ik_vec3_sub(bone_point(bones, toe, ik_v3(0, 0, 0)), f1)),
                    ik_vec3_len(toe_off), 1e-12);
                /* the library's globals agree with this FK */
                for (int i = 0; i < n; i++) {
                    ik_vec3 p = ik_v3(0.3, 0.1, -0.2);
                    ck_assert_double_eq_tol(vdist(ik_mat34_point(&g[i], p), bone_point(bones, i, p)),
                                            0, 1e-12);
                }
            }
        }
    }
}
END_TEST

static Suite *bvh_suite(void)
{
    Suite *s = suite_create("bvh_walk");
    TCase *tc = tcase_create("cmu_02_01");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, load_walk, unload_walk);
    tcase_add_test(tc, test_bvh_shape);
    tcase_add_test(tc, test_bvh_knee_spin_with_pole);
    tcase_add_test(tc, test_bvh_thigh_swing);
    tcase_add_test(tc, test_bvh_skeleton_update);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bvh_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
