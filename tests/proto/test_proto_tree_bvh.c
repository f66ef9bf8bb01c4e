/*
 * test_proto_tree_bvh.c: a character through the wire format: the CMU
 * 02_01 walk ($IKD_DATA/motion/cmu_02_01_walk.bvh, read by
 * tests/solver/bvh.h) sent as a tree chain in JSON, a joint list whose
 * joints name their parents: every BVH joint on the way to the feet and the
 * left hand is a fixed joint (its OFFSET) and three revolute joints about
 * its channel axes in the listed order (ZYX), limited to the range the walk
 * itself uses plus 20 degrees; the root frame sits on the hips (their
 * recorded position each frame), so the hips' rotations are shared by
 * every tip. Three tips: both feet and the left hand.
 *
 * One stream (proto_session, as the daemon's streams run) on that chain,
 * opened with the recorded pose of frame 1 as its seed, gets one target
 * message per frame of the walk: both feet on their recorded poses (full
 * pose, priority 0) and the left hand on a target circling its recorded
 * position (position, priority 1). Every answer is checked by forward
 * kinematics of the whole BVH hierarchy (bvh.h, the recorded channels with
 * the answered joint values written over them, matched by name), not by
 * the solver's chains:
 *   - both feet on their recorded pose, the hand on its target;
 *   - bone lengths unchanged;
 *   - no knee or elbow flip: the knee's (elbow's) offset from the
 *     hip-ankle (shoulder-wrist) line keeps the side it has in the
 *     recording (where the limb is bent);
 *   - no jump: no joint moves more than 0.3 rad between frames.
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

#define MARGIN 0.35 /* radians beyond the recorded range */

static bvh *walk;

/* The rig: which BVH joints are in the tree, and the chain object. */
static bool in_rig[MAX_JOINTS];

static const char *const axis_name[] = {"x", "y", "z"};

/* The name of joint j's rotation channel c in the chain: "<joint>.<axis>". */
static void channel_name(int j, int ch, char *out, size_t size)
{
    snprintf(out, size, "%s.%s", walk->j[j].name, axis_name[walk->j[j].ch[ch] - CH_XROT]);
}

/* The name of the last rotation joint of BVH joint j (its child's parent). */
static void last_name(int j, char *out, size_t size)
{
    int last = -1;
    for (int ch = 0; ch < walk->j[j].nch; ch++)
        if (walk->j[j].ch[ch] >= CH_XROT)
            last = ch;
    ck_assert_int_ge(last, 0);
    channel_name(j, last, out, size);
}

static json_t *rig_chain(void)
{
    const char *ends[3] = {"LeftFoot", "RightFoot", "LeftForeArm"};
    memset(in_rig, 0, sizeof in_rig);
    for (int e = 0; e < 3; e++)
        for (int b = bvh_find(walk, ends[e]); b >= 0; b = walk->j[b].parent)
            in_rig[b] = true;
    json_t *joints = json_array();
    char name[96], parent[96];
    for (int b = 0; b < walk->njoints; b++) {
        if (!in_rig[b])
            continue;
        const bvh_joint *bj = &walk->j[b];
        /* the offset (none for the hips: the root frame is on them) */
        json_t *f = json_pack("{s:s, s:s}", "name", bj->name, "type", "fixed");
        if (bj->parent >= 0) {
            last_name(bj->parent, parent, sizeof parent);
            json_object_set_new(f, "parent", json_string(parent));
            json_object_set_new(
                f, "origin",
                json_pack("{s:[f,f,f]}", "xyz", bj->offset.x, bj->offset.y, bj->offset.z));
        }
        json_array_append_new(joints, f);
        snprintf(parent, sizeof parent, "%s", bj->name);
        for (int ch = 0; ch < bj->nch; ch++) {
            if (bj->ch[ch] < CH_XROT)
                continue;
            double lo = INFINITY, hi = -INFINITY;
            for (int fr = 0; fr < walk->nframes; fr++) {
                double v =
                    walk->motion[(size_t)fr * (size_t)walk->nchannels + (size_t)(bj->first + ch)] *
                    IK_PI / 180.0;
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
            int a = bj->ch[ch] - CH_XROT;
            channel_name(b, ch, name, sizeof name);
            json_array_append_new(
                joints, json_pack("{s:s, s:s, s:s, s:[i,i,i], s:{s:f, s:f}}", "name", name,
                                  "parent", parent, "type", "revolute", "axis", a == 0, a == 1,
                                  a == 2, "limits", "lower", lo - MARGIN, "upper", hi + MARGIN));
            snprintf(parent, sizeof parent, "%s", name);
        }
    }
    /* the hand's origin: its offset after the forearm */
    const bvh_joint *hand = &walk->j[bvh_find(walk, "LeftHand")];
    last_name(bvh_find(walk, "LeftForeArm"), parent, sizeof parent);
    json_array_append_new(joints, json_pack("{s:s, s:s, s:s, s:{s:[f,f,f]}}", "name", "LeftHand",
                                            "parent", parent, "type", "fixed", "origin", "xyz",
                                            hand->offset.x, hand->offset.y, hand->offset.z));
    char lf[96], rf[96];
    last_name(bvh_find(walk, "LeftFoot"), lf, sizeof lf);
    last_name(bvh_find(walk, "RightFoot"), rf, sizeof rf);
    return json_pack("{s:s, s:o, s:[s,s,s]}", "kind", "tree", "joints", joints, "tips", lf, rf,
                     "LeftHand");
}

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

/* The answered value of the joint named name. */
static double answered(const json_t *names, const json_t *q, const char *name)
{
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), name) == 0)
            return json_number_value(json_array_get(q, i));
    ck_abort_msg("no joint %s in the answer", name);
    return 0;
}

/* World frames of every BVH joint at frame f, the channels of the rig
 * replaced by the answer's joints (q NULL: as recorded). */
static void frame_fk(int f, const json_t *names, const json_t *q, ik_xform *g)
{
    static double row[512];
    ck_assert_int_le(walk->nchannels, 512);
    memcpy(row, &walk->motion[(size_t)f * (size_t)walk->nchannels],
           (size_t)walk->nchannels * sizeof *row);
    for (int b = 0; q && b < walk->njoints; b++) {
        if (!in_rig[b])
            continue;
        for (int ch = 0; ch < walk->j[b].nch; ch++) {
            if (walk->j[b].ch[ch] < CH_XROT)
                continue;
            char name[96];
            channel_name(b, ch, name, sizeof name);
            row[walk->j[b].first + ch] = answered(names, q, name) * 180.0 / IK_PI;
        }
    }
    bvh one = *walk;
    one.motion = row;
    one.nframes = 1;
    bvh_frame_globals(&one, 0, g);
}

/* Unit offset of the middle joint m from the line a-c. */
static ik_vec3 bend(ik_vec3 a, ik_vec3 m, ik_vec3 c, double *len)
{
    ik_vec3 ac = ik_vec3_normalize(ik_vec3_sub(c, a));
    ik_vec3 perp = ik_vec3_reject(ik_vec3_sub(m, a), ac);
    *len = ik_vec3_len(perp);
    return ik_vec3_normalize(perp);
}

static json_t *pose_target(ik_xform x)
{
    return json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", x.p.x, x.p.y, x.p.z, "orientation",
                     x.q.x, x.q.y, x.q.z, x.q.w);
}

START_TEST(test_walk_over_the_wire)
{
    json_t *chain = rig_chain();
    /* through the text, as a client sends it */
    char *text = json_dumps(chain, JSON_COMPACT | JSON_REAL_PRECISION(17));
    proto_error e;
    proto_chain *c = proto_chain_decode(text, strlen(text), NULL, &e);
    ck_assert_msg(c != NULL, "%s at %s", e.message, e.path);
    free(text);
    json_t *desc = proto_chain_describe(c);
    const json_t *names = json_object_get(desc, "joint_names");
    ck_assert_int_eq(json_integer_value(json_object_get(desc, "dof")), 45);
    /* the hips' three rotations are shared by all three tips */
    ck_assert_uint_eq(json_array_size(json_object_get(desc, "shared_joints")), 3);
    const json_t *tip_names = json_object_get(json_object_get(desc, "chain"), "tips");
    /* the stream opens on the recorded pose of frame 1 (frame 0 is the
     * file's rest pose) */
    json_t *seed = json_array();
    {
        const double *row = &walk->motion[(size_t)1 * (size_t)walk->nchannels];
        for (size_t i = 0; i < json_array_size(names); i++) {
            const char *nm = json_string_value(json_array_get(names, i));
            double v = NAN;
            for (int b = 0; b < walk->njoints && isnan(v); b++)
                for (int ch = 0; in_rig[b] && ch < walk->j[b].nch; ch++) {
                    char cn[96];
                    if (walk->j[b].ch[ch] < CH_XROT)
                        continue;
                    channel_name(b, ch, cn, sizeof cn);
                    if (strcmp(cn, nm) == 0)
                        v = row[walk->j[b].first + ch] * IK_PI / 180.0;
                }
            ck_assert(!isnan(v));
            json_array_append_new(seed, json_real(v));
        }
    }
    proto_session *s = NULL;
    /* a budget of iterations, not of time: a busy machine or a sanitizer
     * build changes no answer */
    json_t *opts = json_pack("{s:f, s:i}", "timeout_ms", 0.0, "max_iterations", 10000);
    ck_assert_msg(proto_session_open(c, opts, seed, NULL, &s, &e) == 0, "%s at %s", e.message,
                  e.path);
    const int hips = bvh_find(walk, "Hips");
    const int lfoot = bvh_find(walk, "LeftFoot"), rfoot = bvh_find(walk, "RightFoot");
    const int hand = bvh_find(walk, "LeftHand");
    const int limb[3][3] = {{bvh_find(walk, "LeftUpLeg"), bvh_find(walk, "LeftLeg"), lfoot},
                            {bvh_find(walk, "RightUpLeg"), bvh_find(walk, "RightLeg"), rfoot},
                            {bvh_find(walk, "LeftArm"), bvh_find(walk, "LeftForeArm"), hand}};
    double prev[64];
    for (size_t i = 0; i < json_array_size(seed); i++)
        prev[i] = json_number_value(json_array_get(seed, i));
    ik_xform rec[MAX_JOINTS], got[MAX_JOINTS];
    size_t checked_bends = 0;
    double worst_jump = 0.0;
    for (int f = 1; f < walk->nframes; f++) {
        frame_fk(f, NULL, NULL, rec);
        const ik_vec3 h = rec[hips].p; /* the root frame: on the hips, world axes */
        const double ph = 2.0 * IK_PI * f / 120.0;
        ik_vec3 hand_w = ik_vec3_add(rec[hand].p, ik_v3(cos(ph), 0.5 * sin(2 * ph), sin(ph)));
        ik_xform lf = rec[lfoot], rf = rec[rfoot];
        lf.p = ik_vec3_sub(lf.p, h);
        rf.p = ik_vec3_sub(rf.p, h);
        ik_vec3 hr = ik_vec3_sub(hand_w, h);
        json_t *tips = json_object();
        json_object_set_new(tips, json_string_value(json_array_get(tip_names, 0)), pose_target(lf));
        json_object_set_new(tips, json_string_value(json_array_get(tip_names, 1)), pose_target(rf));
        json_object_set_new(
            tips, "LeftHand",
            json_pack("{s:[f,f,f], s:i}", "position", hr.x, hr.y, hr.z, "priority", 1));
        json_t *target = json_pack("{s:o}", "tips", tips);
        proto_job *job = NULL;
        ck_assert_msg(proto_session_target(s, target, NULL, &job, &e) == 0, "%s at %s", e.message,
                      e.path);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_msg(strcmp(json_string_value(json_object_get(res, "status")), "success") == 0,
                      "frame %d: %s (%s)", f, json_string_value(json_object_get(res, "status")),
                      json_string_value(json_object_get(res, "reason")));
        const json_t *q = json_object_get(res, "joints");
        frame_fk(f, names, q, got);
        /* feet planted, hand on target */
        for (int t = 0; t < 2; t++) {
            int ft = t ? rfoot : lfoot;
            double d = ik_vec3_dist(got[ft].p, rec[ft].p);
            ck_assert_msg(d <= 2e-5, "frame %d foot %d off by %g", f, t, d);
            ck_assert_double_le(ik_quat_angle_between(got[ft].q, rec[ft].q), 2e-5);
        }
        ck_assert_double_le(ik_vec3_dist(got[hand].p, hand_w), 2e-5);
        /* bone lengths */
        for (int i = 0; i < walk->njoints; i++) {
            int p = walk->j[i].parent;
            if (p < 0)
                continue;
            double want = ik_vec3_len(walk->j[i].offset);
            ck_assert_double_eq_tol(ik_vec3_dist(got[i].p, got[p].p), want, 1e-9 * (1 + want));
        }
        /* no knee or elbow flip */
        for (int l = 0; l < 3; l++) {
            double lr, lg;
            ik_vec3 br = bend(rec[limb[l][0]].p, rec[limb[l][1]].p, rec[limb[l][2]].p, &lr);
            ik_vec3 bg = bend(got[limb[l][0]].p, got[limb[l][1]].p, got[limb[l][2]].p, &lg);
            if (lr < 0.1)
                continue;
            checked_bends++;
            ck_assert_msg(ik_vec3_dot(br, bg) > 0.0, "frame %d limb %d flipped", f, l);
        }
        /* no jump */
        for (size_t v = 0; v < json_array_size(q); v++) {
            double x = json_number_value(json_array_get(q, v));
            worst_jump = fmax(worst_jump, fabs(x - prev[v]));
            ck_assert_msg(fabs(x - prev[v]) <= 0.3, "frame %d joint %s jumps %.3f rad", f,
                          json_string_value(json_array_get(names, v)), fabs(x - prev[v]));
            prev[v] = x;
        }
        json_decref(res);
        json_decref(target);
        proto_session_solved(s, job);
    }
    ck_assert_uint_gt(checked_bends, (size_t)walk->nframes);
    printf("walk over the wire: %d frames, largest step %.3f rad\n", walk->nframes - 1, worst_jump);
    proto_session_free(s);
    json_decref(opts);
    proto_chain_unref(c);
    json_decref(seed);
    json_decref(desc);
    json_decref(chain);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_tree_bvh");
    TCase *tc = tcase_create("walk");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_walk_over_the_wire);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
