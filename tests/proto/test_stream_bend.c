/*
 * test_stream_bend.c: two-bone streams without a pole keep the previous
 * answer's bend plane (proto_solver.c with solver/ik_twobone.h's
 * ik_twobone_plane_pole), so that a knee never comes out bent the other
 * way when the leg passes near straight.
 *
 * The CMU 02_01 walk ($IKD_DATA/motion/cmu_02_01_walk.bvh, read by
 * tests/solver/bvh.h) in the hips' own frame (each frame's positions taken
 * relative to the recorded hips and turned back by their rotation, as an
 * animation system solves limbs under its root motion), both legs, each as
 * a stream (proto_session, as the daemon's streams run it) on
 *   - a bones chain of the hip, knee and ankle of frame 1, and
 *   - a skeleton chain of the bones from the hips down to the foot with
 *     frame 1's rotations (the hips' own turned to identity), its limb the
 *     leg,
 * opened without a seed (the chain's own pose, frame 1's), one target per
 * frame: the recorded ankle, no pole. Every answer is checked here by the
 * recording: the ankle on the target, and the knee on the side of the
 * hip-ankle line where the recorded knee is, on every frame where the
 * recorded leg is bent (its knee 0.1 units off the line). Before the bend
 * plane was kept, the knees answered from the nearest point of the circle
 * to the previous knee flipped on 37 and 79 of 343 frames (both chain
 * kinds); now on none.
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
#include "tests/solver/bvh.h"

static bvh *walk;

static void setup(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/motion/cmu_02_01_walk.bvh", pc_data_dir());
    char *text = read_file(path);
    ck_assert_msg(text != NULL, "cannot read %s (set IKD_DATA)", path);
    walk = malloc(sizeof *walk);
    ck_assert(walk != NULL);
    bool ok = bvh_parse(text, walk);
    free(text);
    ck_assert(ok);
}

static void teardown(void)
{
    if (walk) {
        free(walk->motion);
        free(walk);
        walk = NULL;
    }
}

/* Unit offset of the middle point m from the line a-c, its length in len. */
static ik_vec3 bend(ik_vec3 a, ik_vec3 m, ik_vec3 c, double *len)
{
    ik_vec3 ac = ik_vec3_normalize(ik_vec3_sub(c, a));
    ik_vec3 perp = ik_vec3_reject(ik_vec3_sub(m, a), ac);
    *len = ik_vec3_len(perp);
    return ik_vec3_normalize(perp);
}

/* Joint j of frame f in the hips' own frame. */
static ik_vec3 in_hips(const ik_xform *g, int hips, int j)
{
    return ik_quat_rotate(ik_quat_conj(g[hips].q), ik_vec3_sub(g[j].p, g[hips].p));
}

static ik_vec3 vec_of(const json_t *a)
{
    return ik_v3(json_number_value(json_array_get(a, 0)), json_number_value(json_array_get(a, 1)),
                 json_number_value(json_array_get(a, 2)));
}

/* The chain of the leg (hip, knee, foot BVH joints): bones (skeleton
 * false) or skeleton, from frame 1. */
static json_t *leg_chain(int hip, int knee, int foot, int hips, bool skeleton)
{
    static ik_xform g[MAX_JOINTS];
    bvh_frame_globals(walk, 1, g);
    if (!skeleton) {
        ik_vec3 a = in_hips(g, hips, hip), b = in_hips(g, hips, knee), c = in_hips(g, hips, foot);
        return json_pack("{s:s, s:[[f,f,f],[f,f,f],[f,f,f]]}", "kind", "bones", "positions", a.x,
                         a.y, a.z, b.x, b.y, b.z, c.x, c.y, c.z);
    }
    int path[MAX_JOINTS], np = 0;
    for (int j = foot; j >= 0; j = walk->j[j].parent)
        path[np++] = j;
    json_t *bones = json_array();
    for (int k = np - 1; k >= 0; k--) {
        const int j = path[k];
        ik_vec3 t;
        ik_quat q;
        bvh_local(walk, 1, j, &t, &q);
        if (walk->j[j].parent < 0) { /* the hips: their own frame */
            t = ik_v3(0, 0, 0);
            q = ik_quat_identity();
        }
        json_t *b = json_pack("{s:s, s:[f,f,f], s:[f,f,f,f]}", "name", walk->j[j].name,
                              "translation", t.x, t.y, t.z, "rotation", q.x, q.y, q.z, q.w);
        if (walk->j[j].parent >= 0)
            json_object_set_new(b, "parent", json_string(walk->j[walk->j[j].parent].name));
        json_array_append_new(bones, b);
    }
    return json_pack("{s:s, s:o, s:[s,s,s]}", "kind", "skeleton", "bones", bones, "limb",
                     walk->j[hip].name, walk->j[knee].name, walk->j[foot].name);
}

START_TEST(test_knees_keep_their_side)
{
    static const char *const legs[2][3] = {{"LeftUpLeg", "LeftLeg", "LeftFoot"},
                                            {"RightUpLeg", "RightLeg", "RightFoot"}};
    const bool skeleton = _i == 1;
    const int hips = bvh_find(walk, "Hips");
    static ik_xform g[MAX_JOINTS];
    for (int l = 0; l < 2; l++) {
        const int hip = bvh_find(walk, legs[l][0]), knee = bvh_find(walk, legs[l][1]),
                  foot = bvh_find(walk, legs[l][2]);
        json_t *chain = leg_chain(hip, knee, foot, hips, skeleton);
        proto_error e;
        proto_chain *c = proto_chain_decode_json(chain, "", NULL, &e);
        ck_assert_msg(c != NULL, "%s at %s", e.message, e.path);
        proto_session *s = NULL;
        ck_assert_msg(proto_session_open(c, NULL, NULL, NULL, &s, &e) == 0, "%s", e.message);
        int bent = 0, flipped = 0;
        for (int f = 1; f < walk->nframes; f++) {
            bvh_frame_globals(walk, f, g);
            const ik_vec3 ra = in_hips(g, hips, hip), rb = in_hips(g, hips, knee),
                          rc = in_hips(g, hips, foot);
            json_t *target = json_pack("{s:[f,f,f]}", "position", rc.x, rc.y, rc.z);
            proto_job *job = NULL;
            ck_assert_msg(proto_session_target(s, target, NULL, &job, &e) == 0, "%s", e.message);
            proto_session_prepare(s, job);
            proto_job_run(job, 0, 1);
            json_t *res = proto_job_result_json(job, 0);
            ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
            const json_t *pos = json_object_get(res, "positions");
            const ik_vec3 a = vec_of(json_array_get(pos, 0)), b = vec_of(json_array_get(pos, 1)),
                          cc = vec_of(json_array_get(pos, 2));
            ck_assert_double_le(ik_vec3_dist(cc, rc), 1e-9 * (1 + ik_vec3_len(rc)));
            double lr, lg;
            const ik_vec3 br = bend(ra, rb, rc, &lr), bg = bend(a, b, cc, &lg);
            if (lr >= 0.1) {
                bent++;
                flipped += ik_vec3_dot(br, bg) <= 0.0;
            }
            json_decref(res);
            json_decref(target);
            proto_session_solved(s, job);
        }
        ck_assert_int_eq(bent, walk->nframes - 1);
        ck_assert_msg(flipped == 0, "%s chain, %s: the knee flipped on %d of %d frames",
                      skeleton ? "skeleton" : "bones", legs[l][1], flipped, bent);
        proto_session_free(s);
        proto_chain_unref(c);
        json_decref(chain);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_bend");
    TCase *tc = tcase_create("walk");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_knees_keep_their_side, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
