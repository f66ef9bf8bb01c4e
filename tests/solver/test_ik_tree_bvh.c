/*
 * test_ik_tree_bvh.c: solver/ik_tree.h on a character: the CMU 02_01 walk
 * ($IKD_DATA/motion/cmu_02_01_walk.bvh, read by bvh.h) as a tree rooted at
 * the hips (their recorded position each frame), three tips over shared
 * joints: both feet (Hips, LHipJoint/RHipJoint, UpLeg, Leg, Foot) and the
 * left hand (Hips, LowerBack, Spine, Spine1, LeftShoulder, LeftArm,
 * LeftForeArm, then the hand's origin). Every BVH joint is three revolute
 * joints about its channel axes in the listed order (ZYX), limited to the
 * range the walk itself uses plus 20 degrees; 45 variables, the hips'
 * three shared by all tips.
 *
 * Every frame of the walk (frames 1 to 343; frame 0 of the file is a rest
 * pose, not part of the walk): both feet planted on their recorded frames (full
 * pose, priority 0) and the left hand on a target circling its recorded
 * position (position, priority 1), warm-started from the previous frame's
 * answer with the Distance objective, as a stream would. Checked by forward
 * kinematics of the whole BVH hierarchy (bvh.h, the recorded channels with
 * the solved ones written over them, not the solver's chains):
 *   - the rig itself: its tips at the recorded channels are the recorded
 *     feet (so the targets are reachable and the tree matches the BVH);
 *   - both feet on their recorded pose and the hand on its target;
 *   - bone lengths unchanged (every joint's distance to its parent equals
 *     its OFFSET's length);
 *   - no knee or elbow flip: the knee's (elbow's) offset from the
 *     hip-ankle (shoulder-wrist) line keeps the side it has in the
 *     recording (checked where the limb is bent);
 *   - no jump: no variable moves more than 0.3 rad between frames.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "storage.h"
#include "solver/ik_tree.h"
#include "bvh.h"

#define RIG_MAX 16
#define MARGIN  0.35 /* radians beyond the recorded range */

typedef struct rig {
    int nb;
    int bj[RIG_MAX];        /* BVH joints in the tree, parents first */
    int rot[RIG_MAX][3];    /* their rotation channels (index in the joint) */
    size_t desc[RIG_MAX][3]; /* described joint of each channel */
    size_t var[RIG_MAX][3];  /* tree variable of each channel */
    ik_joint j[4 * RIG_MAX + 1];
    int parent[4 * RIG_MAX + 1];
    size_t n;
    size_t tips[3]; /* LeftFoot, RightFoot, the left hand's origin */
} rig;

static bvh *walk;
static ik_tree tree;
static rig R;
static unsigned char ws[1 << 17];

static int last_desc(int b)
{
    for (int k = 0; k < R.nb; k++)
        if (R.bj[k] == b)
            return (int)R.desc[k][2];
    return -1;
}

static void build_rig(void)
{
    const char *ends[3] = {"LeftFoot", "RightFoot", "LeftForeArm"};
    bool in[MAX_JOINTS] = {false};
    for (int e = 0; e < 3; e++) {
        int b = bvh_find(walk, ends[e]);
        ck_assert_int_ge(b, 0);
        for (; b >= 0; b = walk->j[b].parent)
            in[b] = true;
    }
    memset(&R, 0, sizeof R);
    for (int b = 0; b < walk->njoints; b++) {
        if (!in[b])
            continue;
        ck_assert_int_lt(R.nb, RIG_MAX);
        const bvh_joint *bj = &walk->j[b];
        int k = R.nb++;
        R.bj[k] = b;
        /* the offset (the root frame sits on the hips: none for them) */
        ik_joint f;
        memset(&f, 0, sizeof f);
        f.type = IK_JOINT_FIXED;
        f.origin = ik_xform_identity();
        if (bj->parent >= 0)
            f.origin.p = bj->offset;
        R.parent[R.n] = bj->parent >= 0 ? last_desc(bj->parent) : -1;
        R.j[R.n++] = f;
        int c = 0;
        for (int ch = 0; ch < bj->nch; ch++) {
            if (bj->ch[ch] < CH_XROT)
                continue;
            ck_assert_int_lt(c, 3);
            ik_joint r;
            memset(&r, 0, sizeof r);
            r.type = IK_JOINT_REVOLUTE;
            r.origin = ik_xform_identity();
            r.axis = bj->ch[ch] == CH_XROT   ? ik_v3(1, 0, 0)
                     : bj->ch[ch] == CH_YROT ? ik_v3(0, 1, 0)
                                             : ik_v3(0, 0, 1);
            double lo = INFINITY, hi = -INFINITY;
            for (int fr = 0; fr < walk->nframes; fr++) {
                double v = walk->motion[(size_t)fr * (size_t)walk->nchannels +
                                        (size_t)(bj->first + ch)] * IK_PI / 180.0;
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
            r.lower = lo - MARGIN;
            r.upper = hi + MARGIN;
            R.rot[k][c] = ch;
            R.desc[k][c] = R.n;
            R.parent[R.n] = (int)R.n - 1;
            R.j[R.n++] = r;
            c++;
        }
        ck_assert_int_eq(c, 3);
    }
    R.tips[0] = (size_t)last_desc(bvh_find(walk, "LeftFoot"));
    R.tips[1] = (size_t)last_desc(bvh_find(walk, "RightFoot"));
    /* the hand's origin: its offset after the forearm */
    ik_joint h;
    memset(&h, 0, sizeof h);
    h.type = IK_JOINT_FIXED;
    h.origin = ik_xform_identity();
    h.origin.p = walk->j[bvh_find(walk, "LeftHand")].offset;
    R.parent[R.n] = last_desc(bvh_find(walk, "LeftForeArm"));
    R.tips[2] = R.n;
    R.j[R.n++] = h;
    ck_assert_int_eq(tree_init(&tree, R.j, R.parent, R.n, R.tips, 3), IK_OK);
    for (int k = 0; k < R.nb; k++)
        for (int c = 0; c < 3; c++) {
            size_t v = 0;
            while (v < tree.dof && tree.source_index[v] != R.desc[k][c])
                v++;
            ck_assert_uint_lt(v, tree.dof);
            R.var[k][c] = v;
        }
}

static void setup(void)
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
    ck_assert(ok);
    build_rig();
}

static void teardown(void)
{
    if (walk) {
        free(walk->motion);
        free(walk);
        walk = NULL;
    }
}

/* World frames of every BVH joint at frame f with the tree's joints set to
 * q (the recorded channels elsewhere). */
static void frame_fk(int f, const double *q, ik_xform *g)
{
    static double row[512];
    ck_assert_int_le(walk->nchannels, 512);
    memcpy(row, &walk->motion[(size_t)f * (size_t)walk->nchannels],
           (size_t)walk->nchannels * sizeof *row);
    if (q)
        for (int k = 0; k < R.nb; k++)
            for (int c = 0; c < 3; c++)
                row[walk->j[R.bj[k]].first + R.rot[k][c]] = q[R.var[k][c]] * 180.0 / IK_PI;
    bvh one = *walk;
    one.motion = row;
    one.nframes = 1;
    bvh_frame_globals(&one, 0, g);
}

/* The tree's variables as recorded at frame f. */
static void recorded_q(int f, double *q)
{
    const double *row = &walk->motion[(size_t)f * (size_t)walk->nchannels];
    for (int k = 0; k < R.nb; k++)
        for (int c = 0; c < 3; c++)
            q[R.var[k][c]] = row[walk->j[R.bj[k]].first + R.rot[k][c]] * IK_PI / 180.0;
}

/* Unit offset of the middle joint m from the line a-c. */
static ik_vec3 bend(ik_vec3 a, ik_vec3 m, ik_vec3 c, double *len)
{
    ik_vec3 ac = ik_vec3_normalize(ik_vec3_sub(c, a));
    ik_vec3 perp = ik_vec3_reject(ik_vec3_sub(m, a), ac);
    *len = ik_vec3_len(perp);
    return ik_vec3_normalize(perp);
}

START_TEST(test_walk_feet_planted_hand_on_target)
{
    const int hips = bvh_find(walk, "Hips");
    const int lfoot = bvh_find(walk, "LeftFoot"), rfoot = bvh_find(walk, "RightFoot");
    const int hand = bvh_find(walk, "LeftHand");
    const int limb[3][3] = {
        {bvh_find(walk, "LeftUpLeg"), bvh_find(walk, "LeftLeg"), lfoot},
        {bvh_find(walk, "RightUpLeg"), bvh_find(walk, "RightLeg"), rfoot},
        {bvh_find(walk, "LeftArm"), bvh_find(walk, "LeftForeArm"), hand}};
    ck_assert_uint_eq(tree.dof, 45);
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.0;
    o.max_iterations = 20000;
    o.objective = IK_TREE_OBJ_DISTANCE;
    double q[TEST_DOF_CAP], prev[TEST_DOF_CAP];
    recorded_q(1, prev); /* frame 0 is the file's rest pose, not the walk */
    ck_assert(ik_tree_within_limits(&tree, prev, 0.0));
    ik_xform rec[MAX_JOINTS], got[MAX_JOINTS];
    double worst_jump = 0.0, worst_flip = 1.0;
    size_t checked_bends = 0;
    for (int f = 1; f < walk->nframes; f++) {
        frame_fk(f, NULL, rec);
        const ik_vec3 h = rec[hips].p; /* the root frame: at the hips, world axes */
        const double ph = 2.0 * IK_PI * f / 120.0;
        ik_vec3 hand_w = ik_vec3_add(rec[hand].p, ik_v3(cos(ph), 0.5 * sin(2 * ph), sin(ph)));
        ik_xform lf = rec[lfoot], rf = rec[rfoot];
        lf.p = ik_vec3_sub(lf.p, h);
        rf.p = ik_vec3_sub(rf.p, h);
        ik_tree_goal g[3] = {ik_tree_goal_target(ik_target_full_pose(lf)),
                             ik_tree_goal_target(ik_target_full_pose(rf)),
                             ik_tree_goal_target(ik_target_position(ik_vec3_sub(hand_w, h)))};
        g[2].priority = 1;
        ik_tree_result res;
        {   /* the rig reproduces the recording */
            double qr[TEST_DOF_CAP];
            recorded_q(f, qr);
            for (int s = 0; s < 2; s++) {
                ik_xform a = ik_tree_fk(&tree, qr, (size_t)s);
                double e[6];
                ik_pose_error(s ? rf : lf, a, e);
                for (int r = 0; r < 6; r++)
                    ck_assert_double_le(fabs(e[r]), 1e-9);
            }
        }
        int rc = ik_tree_solve(&tree, g, prev, &o, ws, sizeof ws, q, &res);
        ck_assert_msg(rc == IK_OK, "frame %d: %s, levels met %zu", f, ik_status_name(rc),
                      res.levels_met);
        ck_assert(ik_tree_within_limits(&tree, q, 0.0));
        frame_fk(f, q, got);
        /* feet planted, hand on target */
        for (int s = 0; s < 2; s++) {
            int ft = s ? rfoot : lfoot;
            double e[6];
            ik_pose_error(rec[ft], got[ft], e);
            for (int r = 0; r < 6; r++)
                ck_assert_msg(fabs(e[r]) <= 1e-5, "frame %d foot %d e[%d] = %g", f, s, r, e[r]);
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
            if (lr < 0.1) /* nearly straight in the recording: no side to keep */
                continue;
            checked_bends++;
            double d = ik_vec3_dot(br, bg);
            worst_flip = fmin(worst_flip, d);
            ck_assert_msg(d > 0.0, "frame %d limb %d flipped (cos %.3f, bend %.3f recorded %.3f)",
                          f, l, d, lg, lr);
        }
        /* no jump */
        for (size_t v = 0; v < tree.dof; v++) {
            double d = fabs(q[v] - prev[v]);
            worst_jump = fmax(worst_jump, d);
            ck_assert_msg(d <= 0.3, "frame %d variable %zu jumps %.3f rad", f, v, d);
        }
        memcpy(prev, q, sizeof prev);
    }
    ck_assert_uint_gt(checked_bends, (size_t)walk->nframes);
    printf("walk: %d frames, largest step %.3f rad, worst bend cosine %.3f\n", walk->nframes - 1,
           worst_jump, worst_flip);
}
END_TEST

static Suite *tree_bvh_suite(void)
{
    Suite *s = suite_create("ik_tree_bvh");
    TCase *tc = tcase_create("walk");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_walk_feet_planted_hand_on_target);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tree_bvh_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
