/*
 * walk_bench.c: a character's walk streamed through the wire format, as a
 * tree of a skeleton's bones against the same character as a tree of
 * joints, in the same run.
 *
 *   walk_bench [--data DIR] [--rounds R]
 *
 * The CMU 02_01 walk (DIR/motion/cmu_02_01_walk.bvh, DIR default $IKD_DATA
 * or tests/data; read by tests/solver/bvh.h) is streamed frame by frame
 * through two proto sessions, as the daemon's streams run them (target
 * decode, warm start, solve; the answer is not encoded), R times (default
 * 5), the two sessions taking turns frame by frame so that both see the
 * same machine:
 *   joints  the baseline: the tree of joints of test_proto_tree_bvh.c, each
 *           BVH joint on the way to the feet and the left hand a fixed
 *           joint (its OFFSET) and three revolute joints about its channel
 *           axes, limited to the walk's range plus 0.35 rad (45 variables);
 *   bones   the whole BVH hierarchy as a tree of bones (proto_kind_tree.c: each
 *           bone on the way to a tip a ball joint, the tree compiled anew
 *           around each solve's start; 48 variables, the hand's own turn
 *           included).
 * Both get the same targets every frame: the feet on their recorded poses
 * (full pose), the left hand on a target circling its recorded position
 * (priority 1), relative to the recorded hips; both sessions open on the
 * recorded pose of frame 1 and use the default options (a 5 ms budget).
 * Prints
 *   {"bench":"walk_tree","frames":..,"rounds":..,"joints_success":..,
 *    "bones_success":..,"joints_frame_us":..,"bones_frame_us":..,
 *    "joints_cpu_us":..,"bones_cpu_us":..,"ratio_bones_vs_joints":..,
 *    "cpu_ratio":..,"joints_mean_iterations":..,"bones_mean_iterations":..}
 * (*_frame_us: mean wall-clock microseconds per frame; *_cpu_us: the same
 * in thread CPU time; the ratios bones over joints). The tests check the
 * answers (tests/server/test_tree_skeleton.py, test_proto_tree_bvh.c);
 * this counts successes only.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/proto.h"
#include "proto/proto_session.h"
#include "solver/ik_math.h"
#include "tests/solver/bvh.h"

#define MARGIN 0.35

static const char *const TIPS[3] = {"LeftFoot", "RightFoot", "LeftHand"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "<joint>.<axis>" of joint j's rotation channel ch. */
static void channel_name(const bvh *w, int j, int ch, char *out, size_t size)
{
    static const char *const ax[] = {"x", "y", "z"};
    snprintf(out, size, "%s.%s", w->j[j].name, ax[w->j[j].ch[ch] - CH_XROT]);
}

static void last_name(const bvh *w, int j, char *out, size_t size)
{
    int last = 0;
    for (int ch = 0; ch < w->j[j].nch; ch++)
        if (w->j[j].ch[ch] >= CH_XROT)
            last = ch;
    channel_name(w, j, last, out, size);
}

/* The baseline: the tree of joints (and its seed, frame 1's channels). */
static json_t *joints_chain(const bvh *w, bool *in_rig, json_t **seed)
{
    memset(in_rig, 0, MAX_JOINTS * sizeof *in_rig);
    const char *ends[3] = {"LeftFoot", "RightFoot", "LeftForeArm"};
    for (int e = 0; e < 3; e++)
        for (int b = bvh_find(w, ends[e]); b >= 0; b = w->j[b].parent)
            in_rig[b] = true;
    json_t *joints = json_array();
    *seed = json_array();
    char name[96], parent[96];
    for (int b = 0; b < w->njoints; b++) {
        if (!in_rig[b])
            continue;
        const bvh_joint *bj = &w->j[b];
        json_t *f = json_pack("{s:s, s:s}", "name", bj->name, "type", "fixed");
        if (bj->parent >= 0) {
            last_name(w, bj->parent, parent, sizeof parent);
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
            for (int fr = 0; fr < w->nframes; fr++) {
                double v = w->motion[(size_t)fr * (size_t)w->nchannels + (size_t)(bj->first + ch)] *
                           IK_PI / 180.0;
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
            int a = bj->ch[ch] - CH_XROT;
            channel_name(w, b, ch, name, sizeof name);
            json_array_append_new(
                joints, json_pack("{s:s, s:s, s:s, s:[i,i,i], s:{s:f, s:f}}", "name", name,
                                  "parent", parent, "type", "revolute", "axis", a == 0, a == 1,
                                  a == 2, "limits", "lower", lo - MARGIN, "upper", hi + MARGIN));
            snprintf(parent, sizeof parent, "%s", name);
        }
    }
    const bvh_joint *hand = &w->j[bvh_find(w, "LeftHand")];
    last_name(w, bvh_find(w, "LeftForeArm"), parent, sizeof parent);
    json_array_append_new(joints, json_pack("{s:s, s:s, s:s, s:{s:[f,f,f]}}", "name", "LeftHand",
                                            "parent", parent, "type", "fixed", "origin", "xyz",
                                            hand->offset.x, hand->offset.y, hand->offset.z));
    char lf[96], rf[96];
    last_name(w, bvh_find(w, "LeftFoot"), lf, sizeof lf);
    last_name(w, bvh_find(w, "RightFoot"), rf, sizeof rf);
    json_t *c = json_pack("{s:s, s:o, s:[s,s,s]}", "kind", "tree", "joints", joints, "tips", lf, rf,
                          "LeftHand");
    /* the seed in the tree's joint order (the description's names) */
    proto_error e;
    char *text = json_dumps(c, JSON_COMPACT | JSON_REAL_PRECISION(17));
    proto_chain *pc = proto_chain_decode(text, strlen(text), NULL, &e);
    free(text);
    if (!pc) {
        fprintf(stderr, "walk_bench: %s at %s\n", e.message, e.path);
        exit(1);
    }
    json_t *desc = proto_chain_describe(pc);
    const json_t *names = json_object_get(desc, "joint_names");
    const double *row = &w->motion[(size_t)w->nchannels];
    for (size_t i = 0; i < json_array_size(names); i++)
        for (int b = 0; b < w->njoints; b++)
            for (int ch = 0; in_rig[b] && ch < w->j[b].nch; ch++) {
                if (w->j[b].ch[ch] < CH_XROT)
                    continue;
                channel_name(w, b, ch, name, sizeof name);
                if (strcmp(name, json_string_value(json_array_get(names, i))) == 0)
                    json_array_append_new(*seed,
                                          json_real(row[w->j[b].first + ch] * IK_PI / 180.0));
            }
    json_decref(desc);
    proto_chain_unref(pc);
    return c;
}

/* The tree of bones (and its seed, frame 1's local rotations). */
static json_t *bones_chain(const bvh *w, json_t **seed)
{
    json_t *bones = json_array();
    *seed = json_array();
    for (int b = 0; b < w->njoints; b++) {
        const bvh_joint *bj = &w->j[b];
        json_t *o = json_pack("{s:s}", "name", bj->name);
        if (bj->parent >= 0) {
            json_object_set_new(o, "parent", json_string(w->j[bj->parent].name));
            json_object_set_new(o, "translation",
                                json_pack("[f,f,f]", bj->offset.x, bj->offset.y, bj->offset.z));
        }
        json_array_append_new(bones, o);
        ik_vec3 t;
        ik_quat q;
        bvh_local(w, 1, b, &t, &q);
        json_array_append_new(*seed, json_pack("[f,f,f,f]", q.x, q.y, q.z, q.w));
    }
    return json_pack("{s:s, s:o, s:[s,s,s]}", "kind", "tree", "bones", bones, "tips", TIPS[0],
                     TIPS[1], TIPS[2]);
}

static json_t *pose_target(ik_xform x)
{
    return json_pack("{s:[f,f,f], s:[f,f,f,f]}", "position", x.p.x, x.p.y, x.p.z, "orientation",
                     x.q.x, x.q.y, x.q.z, x.q.w);
}

/* Frame f's target for tips named lf, rf, hand. */
static json_t *frame_target(const bvh *w, int f, const char *lf, const char *rf, const char *hand)
{
    ik_xform g[MAX_JOINTS];
    bvh_frame_globals(w, f, g);
    const ik_vec3 h = g[bvh_find(w, "Hips")].p;
    ik_xform l = g[bvh_find(w, "LeftFoot")], r = g[bvh_find(w, "RightFoot")];
    l.p = ik_vec3_sub(l.p, h);
    r.p = ik_vec3_sub(r.p, h);
    const double ph = 2.0 * IK_PI * f / 120.0;
    ik_vec3 hp = ik_vec3_sub(
        ik_vec3_add(g[bvh_find(w, "LeftHand")].p, ik_v3(cos(ph), 0.5 * sin(2 * ph), sin(ph))), h);
    json_t *tips = json_object();
    json_object_set_new(tips, lf, pose_target(l));
    json_object_set_new(tips, rf, pose_target(r));
    json_object_set_new(tips, hand,
                        json_pack("{s:[f,f,f], s:i}", "position", hp.x, hp.y, hp.z, "priority", 1));
    return json_pack("{s:o}", "tips", tips);
}

typedef struct runner {
    proto_chain *chain;
    proto_session *s;
    json_t *seed;
    size_t success, iterations;
    double wall, cpu;
} runner;

static void open_runner(runner *r, json_t *chain, json_t *seed)
{
    memset(r, 0, sizeof *r);
    char *text = json_dumps(chain, JSON_COMPACT | JSON_REAL_PRECISION(17));
    proto_error e;
    r->chain = proto_chain_decode(text, strlen(text), NULL, &e);
    free(text);
    if (!r->chain) {
        fprintf(stderr, "walk_bench: %s at %s\n", e.message, e.path);
        exit(1);
    }
    r->seed = seed;
}

static void start(runner *r)
{
    proto_error e;
    proto_session_free(r->s);
    if (proto_session_open(r->chain, NULL, r->seed, NULL, &r->s, &e)) {
        fprintf(stderr, "walk_bench: %s at %s\n", e.message, e.path);
        exit(1);
    }
}

static void step(runner *r, const json_t *target)
{
    proto_error e;
    proto_job *job = NULL;
    double w0 = now_s(), c0 = cpu_s();
    if (proto_session_target(r->s, target, NULL, &job, &e)) {
        fprintf(stderr, "walk_bench: %s at %s\n", e.message, e.path);
        exit(1);
    }
    proto_session_prepare(r->s, job);
    proto_job_run(job, 0, 1);
    r->cpu += cpu_s() - c0;
    r->wall += now_s() - w0;
    r->success += strcmp(proto_job_status(job, 0), "success") == 0;
    json_t *res = proto_job_result_json(job, 0);
    r->iterations += (size_t)json_integer_value(json_object_get(res, "iterations"));
    json_decref(res);
    proto_session_solved(r->s, job);
}

int main(int argc, char **argv)
{
    const char *data = getenv("IKD_DATA") ? getenv("IKD_DATA") : "tests/data";
    long rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--data") == 0)
            data = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--rounds") == 0)
            rounds = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: walk_bench [--data DIR] [--rounds R]\n");
            return 1;
        }
    }
    if (rounds < 1)
        rounds = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/motion/cmu_02_01_walk.bvh", data);
    char *text = read_file(path);
    static bvh walk;
    if (!text || !bvh_parse(text, &walk)) {
        fprintf(stderr, "walk_bench: cannot read %s\n", path);
        free(text);
        return 1;
    }
    free(text);
    bool in_rig[MAX_JOINTS];
    json_t *js, *bs;
    json_t *jc = joints_chain(&walk, in_rig, &js), *bc = bones_chain(&walk, &bs);
    char lf[96], rf[96];
    last_name(&walk, bvh_find(&walk, "LeftFoot"), lf, sizeof lf);
    last_name(&walk, bvh_find(&walk, "RightFoot"), rf, sizeof rf);
    const int nf = walk.nframes - 1;
    json_t **jt = calloc((size_t)walk.nframes, sizeof *jt);
    json_t **bt = calloc((size_t)walk.nframes, sizeof *bt);
    if (!jt || !bt)
        return 1;
    for (int f = 1; f < walk.nframes; f++) {
        jt[f] = frame_target(&walk, f, lf, rf, "LeftHand");
        bt[f] = frame_target(&walk, f, TIPS[0], TIPS[1], TIPS[2]);
    }
    runner J, B;
    open_runner(&J, jc, js);
    open_runner(&B, bc, bs);
    for (long k = 0; k < rounds; k++) {
        start(&J);
        start(&B);
        for (int f = 1; f < walk.nframes; f++) {
            /* alternate which goes first */
            if (f % 2) {
                step(&J, jt[f]);
                step(&B, bt[f]);
            } else {
                step(&B, bt[f]);
                step(&J, jt[f]);
            }
        }
    }
    const double n = (double)nf * (double)rounds;
    printf("{\"bench\":\"walk_tree\",\"frames\":%d,\"rounds\":%ld,\"joints_success\":%zu,"
           "\"bones_success\":%zu,\"joints_frame_us\":%.2f,\"bones_frame_us\":%.2f,"
           "\"joints_cpu_us\":%.2f,\"bones_cpu_us\":%.2f,\"ratio_bones_vs_joints\":%.3f,"
           "\"cpu_ratio\":%.3f,\"joints_mean_iterations\":%.2f,\"bones_mean_iterations\":%.2f}\n",
           nf, rounds, J.success, B.success, 1e6 * J.wall / n, 1e6 * B.wall / n, 1e6 * J.cpu / n,
           1e6 * B.cpu / n, B.wall / J.wall, B.cpu / J.cpu, (double)J.iterations / n,
           (double)B.iterations / n);
    for (int f = 1; f < walk.nframes; f++) {
        json_decref(jt[f]);
        json_decref(bt[f]);
    }
    free(jt);
    free(bt);
    proto_session_free(J.s);
    proto_session_free(B.s);
    proto_chain_unref(J.chain);
    proto_chain_unref(B.chain);
    json_decref(js);
    json_decref(bs);
    json_decref(jc);
    json_decref(bc);
    free(walk.motion);
    return 0;
}
