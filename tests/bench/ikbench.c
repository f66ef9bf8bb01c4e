/*
 * ikbench.c: the solver benchmarks of ikd (build/ikbench).
 *
 *   ikbench chain --urdf FILE --base LINK --tip LINK [--samples N] [--seed S]
 *                 [--timeout-ms MS] [--tol T] [--targets FILE]
 *                 [--max-iterations N] [--verbose]
 *     The TRAC-IK protocol (see tests/data/SOURCES.md): N joint
 *     configurations drawn uniformly inside the limits (continuous joints in
 *     [-pi, pi]), forward kinematics gives a full-pose target, every solve is
 *     seeded from the mid-limit pose with a time budget (default 5 ms) and a
 *     tolerance (default 1e-5); --timeout-ms 0 removes the time budget and
 *     --max-iterations N bounds the solver iterations instead (a
 *     clock-independent comparison of solver versions). With --targets FILE the targets are read from
 *     a file instead, one per line: joint values, " | ", then
 *     "px py pz qx qy qz qw" (the format of $IKD_DATA/targets/).
 *     Success is decided HERE, not by the solver's status: the returned joints
 *     must be inside the limits, and the tip pose computed by this file's own
 *     forward kinematics (plain composition of the described joints'
 *     transforms with ik_math quaternions, independent of ik_chain.c) must
 *     have every component of the position error and of the rotation vector
 *     of R_target R_actual^T, in the base frame, within the tolerance.
 *     Times are wall-clock per solve; failures count with the time they
 *     used. The last line is one JSON object:
 *       {"bench":"chain","robot":"<urdf stem>","dof":..,"samples":..,
 *        "success":..,"mean_us":..,"median_us":..,"p99_us":..,
 *        "mean_iterations":..}
 *
 *   ikbench closed --urdf FILE --base LINK --tip LINK [the chain options]
 *     The closed-form solver (solver/ik_closed.h) against the numeric one on
 *     the same targets, in the same run. The chain's family is detected
 *     (a chain without one prints {"family":"none","why":..} and exits 0);
 *     the numeric solver solves every target once (the chain benchmark's
 *     protocol), the closed form solves every target once for success
 *     (decided here, by this file's forward kinematics, as above) and the
 *     largest position error, then the whole set over and over for 0.2 s
 *     for its mean time (the choice of the answer nearest the mid-limit
 *     seed included), and again listing every solution (up to 64, sorted).
 *     Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID) for both
 *     solvers, so that a busy shared machine does not distort the ratio.
 *     Then the same targets as one batch through the wire format
 *     (proto_job_decode, proto_job_run, proto_job_encode, as POST
 *     /v1/solve/batch runs them, on this thread): the mean time_ms the
 *     results report (batch_reported_us) against the solver's own time
 *     measured the same way (each ik_closed_solve timed alone on the wall
 *     clock, solver_wall_us), their difference (service_added_us: what the
 *     service adds inside a result's timing) and the batch's run time per
 *     target (batch_run_us); rounds alternated, the best of five.
 *       {"bench":"closed","robot":..,"family":"ur"|"opw","samples":..,
 *        "success":..,"mean_us":..,"max_pos_err":..,"mean_branches":..,
 *        "mean_solutions":..,"all64_mean_us":..,"numeric_success":..,
 *        "numeric_mean_us":..,"speedup":..,"batch_reported_us":..,
 *        "solver_wall_us":..,"service_added_us":..,"batch_run_us":..}
 *
 *   ikbench tree --urdf FILE --base LINK --tips LINK,LINK[,...] [--samples N]
 *                [--position-tips LINK,...] [--seed S] [--timeout-ms MS]
 *                [--tol T] [--max-iterations N] [--verbose]
 *     Several end effectors on one tree (solver/ik_tree.h), same protocol
 *     as chain: N random configurations of the whole tree, every tip's full
 *     pose as its target (the tips of --position-tips: their position only,
 *     checked on position alone; "position_tips" counts them), one tree
 *     solve per sample from the mid-limit pose, then every tip solved as
 *     its own chain (ik_numeric_solve) on the same targets in the same run
 *     as the baseline. Both are verified here by
 *     the same independent forward kinematics. Prints
 *       {"bench":"tree","robot":..,"base":..,"tips":..,"dof":..,
 *        "shared_joints":..,"samples":..,"success":..,"mean_us":..,
 *        "median_us":..,"p99_us":..,"mean_iterations":..,
 *        "mean_restarts":..,"separate_mean_iterations":..,
 *        "separate_mean_restarts":..,"separate_success":..,
 *        "separate_consistent":..,"separate_mean_us":..,
 *        "ratio_tree_vs_separate":..}
 *     (the separate iterations and restarts summed over the tips)
 *     (separate_consistent: samples whose separate answers also agree on
 *     every shared joint, i.e. would be a valid pose of the tree), and the
 *     same means in thread CPU time (cpu_mean_us, separate_cpu_mean_us,
 *     cpu_ratio), which a loaded machine's preemptions do not inflate.
 *     --verbose also prints the failed and slow (over 1 ms) samples and
 *     how many samples, and how much of the total time, took 0, 1, 2-3,
 *     4-7, 8-15 and 16 or more restarts (on standard error).
 *
 *   ikbench stream --urdf FILE --base LINK --tip LINK [--centre Q1,Q2,...]
 *                  [--phases N] [--samples STEPS] [--timeout-ms MS] [--tol T]
 *                  [--max-iterations N] [--unseeded]
 *     A robot controller's stream at solver level: smooth joint-space
 *     motions (each joint a sinusoid of 0.3 rad, at most a quarter of its
 *     half range, around the centre (default the middle of the limits), at
 *     its own frequency; test_robot_stream.py's motion()), N of them
 *     (default 12) started at phases 0, 0.5, 1, ..., STEPS steps each
 *     (default 300), turned into full poses by forward kinematics and
 *     solved one at a time, each solve seeded with the previous answer
 *     (IK_SEARCH_NEAREST_TO_SEED, as streams do), once plainly and once
 *     following the motion (ik_numeric_opts.follow, what streams use now),
 *     alternately, in the same run. Success is decided here as for chain;
 *     a failed answer leaves the next solve seeded with the last good one.
 *     Per variant: successes, restarts, mean iterations, the mean thread CPU
 *     time per solve, and continuity: the largest answer step over the
 *     motion's own largest step (worst and median over the motions), steps
 *     above 3 times the motion's own (flips) and the motions that had any.
 *       {"bench":"stream","robot":..,"dof":..,"centre":[..],"motions":..,
 *        "steps":..,"plain":{"success":..,"flips":..,"motions_flipped":..,
 *        "largest_over_motion":..,"median_largest_over_motion":..,
 *        "restarts":..,"mean_iterations":..,"cpu_mean_us":..},
 *        "follow":{the same},"cpu_ratio_follow_vs_plain":..}
 *     With --unseeded the stream opens without a seed: its first answer is
 *     a first-found solve from the mid-limit pose (a branch of its own, not
 *     necessarily the motion's), and its steps are measured from there.
 *
 *   ikbench snake [--samples N] [--seed S] [--timeout-ms MS] [--tol T]
 *     DOF scaling: snakes of 6, 12, 24, 48 and 64 revolute joints (axes x
 *     and y in turn, 1 m long, each within +-1 rad; no compiled bound on a
 *     chain's joints), N full-pose targets each from random configurations
 *     within +-0.6 rad by this file's forward kinematics, solved from the
 *     mid-limit pose and verified here; thread CPU time per solve:
 *       {"bench":"dof_scaling","samples":N,"snakes":[{"dof":..,"success":..,
 *        "cpu_mean_us":..,"us_per_joint":..,"mean_iterations":..,
 *        "cost_vs_6":..},...]}
 *
 *   ikbench priority --urdf FILE --base LINK --tips A,B [--samples N]
 *                    [--seed S] [--timeout-ms MS] [--tol T]
 *     Strict priorities on a tree whose two tips share joints: tip A at
 *     priority 0 on the pose of a random configuration, tip B at priority 1
 *     10 m away ("far") or on the pose of another random configuration
 *     ("conflict"), N samples each from the mid-limit pose: how often each
 *     tip is met (this file's forward kinematics), the outcomes and the
 *     thread CPU time per solve; then tip B's arm alone with its target out
 *     of reach, as a one-tip tree and as a chain: status, cause and the
 *     best of 200 solves' CPU time:
 *       {"bench":"priority",...,"far":{"priority0_met":..,"priority1_met":..,
 *        "unreachable":..,"not_converged":..,"timed_out":..,"cpu_mean_us":..,
 *        "cpu_max_us":..},"conflict":{the same},"out_of_reach":{"tree":..,
 *        "tree_cause":..,"tree_iterations":..,"tree_restarts":..,
 *        "tree_cpu_us":..,"chain":..,"chain_cause":..,"chain_cpu_us":..}}
 *
 *   ikbench collide --urdf FILE --base LINK --tip LINK --spheres FILE
 *                   [--samples N] [--seed S] [--timeout-ms MS] [--tol T]
 *                   [--margin M]
 *     Collision-aware IK (solver/ik_collide.h): the chain's collision model
 *     built as the wire builds it (proto/proto_collide.c: the URDF, the
 *     spheres per link of FILE's "collision_spheres"), among FILE's scene
 *     ("scene": boxes, spheres, capsules). N targets from configurations
 *     drawn inside the limits whose robot is 1 to 8 cm from an obstacle
 *     (the obstacle its closest pair): targets known to be reachable
 *     without collision, near obstacles. Every target is solved twice, in
 *     the same run, alternately: plainly (the baseline: no collision
 *     check) and avoiding collisions with margin M (default 0); both from
 *     the mid-limit pose with the chain benchmark's budget and tolerance.
 *     Success is decided here: on target by this file's forward kinematics
 *     and, avoiding, at least M clear (ik_collide_distance at the answer).
 *     Times: thread CPU time per solve (and wall), mean and p99. Also the
 *     share of the plain answers that collide, and one distance query and
 *     one penalty with its gradient alone (thread CPU, over the targets):
 *       {"bench":"collide","robot":..,"spheres":..,"obstacles":..,
 *        "samples":..,"margin":..,"plain_success":..,"plain_colliding":..,
 *        "plain_cpu_mean_us":..,"avoid_success":..,"avoid_colliding":..,
 *        "avoid_cpu_mean_us":..,"avoid_cpu_p99_us":..,"ratio":..,
 *        "plain_wall_mean_us":..,"avoid_wall_mean_us":..,"distance_us":..,
 *        "penalty_us":..}
 *     A chain with a closed form (ik_closed.h: the UR5) is also solved by
 *     it, plainly and avoiding, on the same targets in the same run:
 *       {"bench":"collide_closed","robot":..,"samples":..,"margin":..,
 *        "plain_success":..,"plain_colliding":..,"plain_cpu_mean_us":..,
 *        "avoid_success":..,"avoid_colliding":..,"avoid_cpu_mean_us":..,
 *        "ratio":..}
 *
 *   ikbench two-bone [--samples N] [--seed S]
 *     N random limbs with reachable targets (seed 001 solver, ik_twobone.h),
 *     full solve including the reach-case tests, the whole set solved over
 *     and over for 0.2 s; prints
 *       {"bench":"two_bone","samples":N,"ns_per_solve":..}
 *
 *   ikbench proto [--samples N] [--body FILE]
 *     The wire-format layer alone, without the daemon: one POST /v1/solve
 *     body (default: the two-bone body of tests/bench/http_post.lua) goes
 *     through proto_job_decode(), proto_job_run(), proto_job_encode() and
 *     proto_job_free() N times (default 20000), one request after another,
 *     each stage timed on its own (mean microseconds per request). The body
 *     must be a valid request. Prints
 *       {"bench":"proto_two_bone","samples":N,"decode_us":..,"run_us":..,
 *        "encode_us":..,"free_us":..,"total_us":..,"response_bytes":..}
 *     ("proto_body" instead of "proto_two_bone" with --body).
 *
 *   ikbench doubles [--samples N]
 *     The number writers alone, on N answer-like doubles (default 200,000:
 *     |x| < 2 as coordinates and quaternion parts are, one in eight the
 *     1e-17 noise of an exact zero) and on N of any bit pattern:
 *     proto_json_format_shortest() (every answer's numbers),
 *     proto_json_format_digits() at 6 digits (options.digits) and
 *     proto_json_format_digits() at 17 digits (what reads back always: the
 *     baseline), passes alternated, the best of five rounds per writer.
 *     Then the numbers of one real two-bone answer (positions, unit
 *     quaternions, 0.0, 1.0, time_ms) appended as an answer appends them,
 *     by proto_jw_double_digits() with a comma after each, N/8 times per
 *     round, in this thread's CPU time, shortest and at 6 digits (best of
 *     five rounds): the figure to compare across builds.
 *     Prints nanoseconds per number:
 *       {"bench":"doubles","samples":N,"answer_shortest_ns":..,
 *        "answer_digits6_ns":..,"answer_digits17_ns":..,
 *        "answer_shortest_vs_17":..,"any_shortest_ns":..,...,
 *        "solve_answer_ns":..,"solve_answer_digits6_ns":..}
 *
 * Exit status 0 when the benchmark ran (whatever the success rate), 1 on
 * bad usage or unreadable input.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "proto/proto.h"
#include "proto/proto_collide.h"
#include "proto/proto_json.h"
#include "proto/proto_json_write.h"
#include "tests/proto/urdf_read.h"
#include "solver/ik_chain.h"
#include "solver/ik_closed.h"
#include "solver/ik_collide.h"
#include "solver/ik_math.h"
#include "solver/ik_numeric.h"
#include "solver/ik_reason.h"
#include "solver/ik_rng.h"
#include "solver/ik_status.h"
#include "solver/ik_tree.h"
#include "solver/ik_twobone.h"
#include "tests/solver/storage.h"
#include "tests/bench/bench_file.h"

/* ---- small utilities ------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* This thread's CPU time: the closed-form benchmark's clock, so that the
 * time other processes take from a shared machine is not counted (both
 * solvers are measured with it, in the same run). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- chains --------------------------------------------------------------- */

typedef struct bench_chain {
    ik_joint joints[TEST_JOINTS_CAP];
    size_t n_joints;
    ik_chain chain;
    char robot[64];
} bench_chain;

static int load_urdf(const char *path, const char *base, const char *tip, bench_chain *bc)
{
    size_t len = 0;
    char *xml = bench_read_file(path, &len);
    if (!xml) {
        fprintf(stderr, "ikbench: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    proto_error err;
    int rc = proto_urdf_chain(xml, len, base, tip, bc->joints, TEST_JOINTS_CAP, &bc->n_joints,
                              NULL, &err);
    free(xml);
    if (rc != 0) {
        fprintf(stderr, "ikbench: %s: %s\n", path, err.message);
        return -1;
    }
    /* the runs hold joint values in arrays of TEST_DOF_CAP */
    size_t dof = 0;
    for (size_t i = 0; i < bc->n_joints; i++)
        dof += bc->joints[i].type != IK_JOINT_FIXED;
    if (dof > TEST_DOF_CAP) {
        fprintf(stderr, "ikbench: %s: %zu movable joints, more than %d\n", path, dof,
                TEST_DOF_CAP);
        return -1;
    }
    return 0;
}

static void stem_of(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, b, n);
    out[n] = '\0';
}

/* Independent forward kinematics: the described joints composed one by one
 * with quaternions (no merging, no matrices). */
static ik_xform reference_fk(const bench_chain *bc, const double *q)
{
    ik_xform T = ik_xform_identity();
    size_t k = 0;
    for (size_t i = 0; i < bc->n_joints; i++) {
        const ik_joint *j = &bc->joints[i];
        T = ik_xform_mul(T, j->origin);
        if (j->type == IK_JOINT_FIXED)
            continue;
        ik_xform m = ik_xform_identity();
        if (j->type == IK_JOINT_PRISMATIC)
            m.p = ik_vec3_scale(ik_vec3_normalize(j->axis), q[k]);
        else
            m.q = ik_quat_from_axis_angle(j->axis, q[k]);
        T = ik_xform_mul(T, m);
        T.q = ik_quat_normalize(T.q);
        k++;
    }
    return T;
}

/* The success test of the benchmark (see the top of the file). */
static int verify(const bench_chain *bc, const ik_xform *target, const double *q, double tol)
{
    if (!ik_chain_within_limits(&bc->chain, q, 0.0))
        return 0;
    ik_xform a = reference_fk(bc, q);
    double e[3] = {target->p.x - a.p.x, target->p.y - a.p.y, target->p.z - a.p.z};
    ik_vec3 r = ik_quat_to_rotvec(ik_quat_mul(target->q, ik_quat_conj(a.q)));
    double f[6] = {e[0], e[1], e[2], r.x, r.y, r.z};
    for (int i = 0; i < 6; i++)
        if (!(fabs(f[i]) < tol))
            return 0;
    return 1;
}

/* ---- chain benchmark ------------------------------------------------------ */

typedef struct chain_args {
    const char *urdf, *base, *tip, *targets;
    size_t samples;
    uint64_t seed;
    double timeout_ms, tol;
    size_t max_iterations;
    int verbose;
} chain_args;

static int load_targets(const char *path, const bench_chain *bc, size_t max, double *qs,
                        ik_xform *poses, size_t *count)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ikbench: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    const size_t dof = bc->chain.dof;
    char line[4096];
    size_t n = 0;
    int rc = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        char *bar = strchr(line, '|');
        if (!bar)
            continue;
        char *s = line, *end;
        for (size_t k = 0; k < dof; k++) {
            qs[n * dof + k] = strtod(s, &end);
            if (end == s || end > bar) {
                rc = -1;
                break;
            }
            s = end;
        }
        double v[7];
        s = bar + 1;
        for (int k = 0; k < 7 && rc == 0; k++) {
            v[k] = strtod(s, &end);
            if (end == s)
                rc = -1;
            s = end;
        }
        if (rc != 0) {
            fprintf(stderr, "ikbench: %s: bad target line %zu (expected %zu joints)\n", path,
                    n + 1, dof);
            break;
        }
        poses[n].p = ik_v3(v[0], v[1], v[2]);
        poses[n].q = ik_quat_normalize((ik_quat){v[3], v[4], v[5], v[6]});
        n++;
    }
    fclose(f);
    *count = n;
    return rc;
}

/* The chain and its targets for the chain and closed benchmarks: the URDF
 * loaded and compiled into *bc, then a->samples targets (or those of
 * a->targets) as joint values qs (dof per row) and poses. Returns 0, or 1
 * after a message (the arrays are the caller's to free either way). */
static int chain_setup(const chain_args *a, bench_chain *bc, double **qs_out,
                       ik_xform **poses_out, size_t *n_out)
{
    *qs_out = NULL;
    *poses_out = NULL;
    if (load_urdf(a->urdf, a->base, a->tip, bc) != 0)
        return 1;
    stem_of(a->urdf, bc->robot, sizeof bc->robot);
    if (chain_init(&bc->chain, bc->joints, bc->n_joints) != IK_OK) {
        fprintf(stderr, "ikbench: invalid chain\n");
        return 1;
    }
    const size_t dof = bc->chain.dof;
    size_t n = a->samples;
    double *qs = *qs_out = malloc(n * dof * sizeof *qs);
    ik_xform *poses = *poses_out = malloc(n * sizeof *poses);
    if (!qs || !poses)
        return 1;
    if (a->targets) {
        if (load_targets(a->targets, bc, n, qs, poses, &n) != 0)
            return 1;
        /* Sanity: the file's joints must give the file's poses here too. */
        for (size_t i = 0; i < n; i++) {
            if (!verify(bc, &poses[i], &qs[i * dof], 1e-9)) {
                fprintf(stderr, "ikbench: warning: target %zu does not match this chain's FK\n",
                        i + 1);
                break;
            }
        }
    } else {
        ik_rng r = {a->seed};
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; k < dof; k++) {
                double lo = bc->chain.lower[k], hi = bc->chain.upper[k];
                if (bc->chain.type[k] == IK_JOINT_CONTINUOUS) {
                    lo = -IK_PI;
                    hi = IK_PI;
                }
                qs[i * dof + k] = ik_rng_uniform(&r, lo, hi);
            }
            poses[i] = reference_fk(bc, &qs[i * dof]);
        }
    }
    if (n == 0) {
        fprintf(stderr, "ikbench: no samples\n");
        return 1;
    }
    *n_out = n;
    return 0;
}

static int run_chain(const chain_args *a)
{
    static bench_chain bc;
    double *qs = NULL, *times = NULL;
    ik_xform *poses = NULL;
    void *ws = NULL;
    size_t n = 0;
    int rc = 1;
    if (chain_setup(a, &bc, &qs, &poses, &n) != 0)
        goto out;
    const size_t dof = bc.chain.dof;
    times = malloc(n * sizeof *times);
    size_t wsz = ik_numeric_workspace_size(&bc.chain);
    ws = malloc(wsz);
    if (!times || !ws)
        goto out;

    ik_numeric_opts o = ik_numeric_opts_default();
    o.tol_pos = a->tol;
    o.tol_rot = a->tol;
    o.timeout_s = a->timeout_ms * 1e-3;
    o.max_iterations = a->max_iterations;
    o.rng_seed = a->seed;
    double mid[TEST_DOF_CAP], q[TEST_DOF_CAP];
    ik_chain_mid(&bc.chain, mid);
    size_t ok = 0, status_ok = 0, iterations = 0;
    for (size_t i = 0; i < n; i++) {
        ik_target t = ik_target_full_pose(poses[i]);
        ik_numeric_result res;
        double t0 = now_s();
        int st = ik_numeric_solve(&bc.chain, &t, mid, &o, ws, wsz, q, &res);
        times[i] = (now_s() - t0) * 1e6;
        int good = verify(&bc, &poses[i], q, a->tol);
        ok += (size_t)good;
        iterations += res.iterations;
        status_ok += st == IK_OK;
        if (a->verbose && (!good || st != IK_OK))
            fprintf(stderr, "sample %zu: status %s, verified %d, pos %.3g rot %.3g, %zu it, %zu "
                    "restarts, %.0f us\n",
                    i, ik_status_name(st), good, res.pos_err_max, res.rot_err_max,
                    res.iterations, res.restarts, times[i]);
        if (a->verbose && (!good || st != IK_OK)) {
            fprintf(stderr, "  target joints:");
            for (size_t k = 0; k < dof; k++)
                fprintf(stderr, " %.6f", qs[i * dof + k]);
            fprintf(stderr, "\n  returned:     ");
            for (size_t k = 0; k < dof; k++)
                fprintf(stderr, " %.6f", q[k]);
            fprintf(stderr, "\n");
        }
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += times[i];
    qsort(times, n, sizeof *times, cmp_double);
    size_t p99 = (size_t)((double)n * 0.99);
    if (p99 >= n)
        p99 = n - 1;
    double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    if (status_ok != ok)
        fprintf(stderr, "ikbench: note: solver reported %zu successes, verification %zu\n",
                status_ok, ok);
    printf("{\"bench\":\"chain\",\"robot\":\"%s\",\"dof\":%zu,\"samples\":%zu,"
           "\"success\":%.5f,\"mean_us\":%.2f,\"median_us\":%.2f,\"p99_us\":%.2f,"
           "\"mean_iterations\":%.1f}\n",
           bc.robot, dof, n, (double)ok / (double)n, sum / (double)n, median, times[p99],
           (double)iterations / (double)n);
    rc = 0;
out:
    free(qs);
    free(poses);
    free(times);
    free(ws);
    return rc;
}

/* ---- closed-form benchmark ------------------------------------------------ */

/* Largest position error component (metres) of q against target, by this
 * file's own forward kinematics. */
static double pos_err_of(const bench_chain *bc, const ik_xform *target, const double *q)
{
    ik_xform x = reference_fk(bc, q);
    return fmax(fabs(target->p.x - x.p.x), fmax(fabs(target->p.y - x.p.y), fabs(target->p.z - x.p.z)));
}

/* run_closed's batch figures (see there): the mean time_ms of the results
 * of one batch of the targets through proto (best of five rounds), the
 * mean solver time measured the same way, and the batch's run time per
 * target (proto_job_run's wall time over the targets). */
static int closed_batch(const chain_args *a, const bench_chain *bc, const ik_closed *k,
                        const ik_xform *poses, size_t n, const double *mid,
                        const ik_numeric_opts *o, double *reported_us, double *solver_us,
                        double *run_us)
{
    size_t len = 0;
    char *xml = bench_read_file(a->urdf, &len);
    if (!xml)
        return 1;
    json_t *targets = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(targets,
                              json_pack("{s:[f,f,f],s:[f,f,f,f]}", "position", poses[i].p.x,
                                        poses[i].p.y, poses[i].p.z, "orientation", poses[i].q.x,
                                        poses[i].q.y, poses[i].q.z, poses[i].q.w));
    json_t *req = json_pack("{s:{s:s,s:s%,s:s,s:s},s:o,s:{s:s}}", "chain", "kind", "urdf", "urdf",
                            xml, len, "base", a->base, "tip", a->tip, "targets", targets,
                            "options", "solver", "closed");
    free(xml);
    char *body = req ? json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(req);
    if (!body)
        return 1;
    proto_limits lim;
    proto_limits_default(&lim);
    if (lim.max_targets < n)
        lim.max_targets = n;
    double best_rep = INFINITY, best_solver = INFINITY, best_run = INFINITY, sink = 0.0;
    int rc = 1;
    for (int round = 0; round < 5; round++) {
        proto_job *job;
        proto_error err;
        if (proto_job_decode(body, strlen(body), PROTO_BATCH, &lim, NULL, NULL, &job, &err)) {
            fprintf(stderr, "ikbench: the batch is refused: %s: %s\n", err.path, err.message);
            goto out;
        }
        double t0 = now_s();
        proto_job_run(job, 0, n);
        double run = now_s() - t0, rep = 0.0;
        for (size_t i = 0; i < n; i++) {
            json_t *r = proto_job_result_json(job, i);
            rep += json_real_value(json_object_get(r, "time_ms")) * 1e3;
            json_decref(r);
        }
        size_t out_len;
        free(proto_job_encode(job, &out_len));
        proto_job_free(job);
        double sol = 0.0, q[TEST_DOF_CAP];
        for (size_t i = 0; i < n; i++) {
            ik_target t = ik_target_full_pose(poses[i]);
            double s0 = now_s();
            ik_closed_solve(&bc->chain, k, &t, mid, o, q, NULL);
            sol += now_s() - s0;
            sink += q[0];
        }
        best_rep = fmin(best_rep, rep / (double)n);
        best_solver = fmin(best_solver, sol * 1e6 / (double)n);
        best_run = fmin(best_run, run * 1e6 / (double)n);
    }
    if (sink == 42.4242)
        fprintf(stderr, " ");
    *reported_us = best_rep;
    *solver_us = best_solver;
    *run_us = best_run;
    rc = 0;
out:
    free(body);
    return rc;
}

static int run_closed(const chain_args *a)
{
    static bench_chain bc;
    double *qs = NULL, *all = NULL;
    ik_xform *poses = NULL;
    void *ws = NULL;
    size_t n = 0;
    int rc = 1;
    if (chain_setup(a, &bc, &qs, &poses, &n) != 0)
        goto out;
    ik_closed k;
    ik_closed_init(&k, &bc.chain);
    if (k.kind == IK_CLOSED_NONE) {
        printf("{\"bench\":\"closed\",\"robot\":\"%s\",\"family\":\"none\",\"why\":\"%s\"}\n",
               bc.robot, ik_closed_why_name(k.why));
        rc = 0;
        goto out;
    }
    size_t wsz = ik_numeric_workspace_size(&bc.chain);
    ws = malloc(wsz);
    all = malloc(64 * 6 * sizeof *all);
    if (!ws || !all)
        goto out;
    ik_numeric_opts o = ik_numeric_opts_default();
    o.tol_pos = a->tol;
    o.tol_rot = a->tol;
    o.timeout_s = a->timeout_ms * 1e-3;
    o.max_iterations = a->max_iterations;
    o.rng_seed = a->seed;
    double mid[TEST_DOF_CAP], q[TEST_DOF_CAP];
    ik_chain_mid(&bc.chain, mid);
    /* the numeric solver on the same targets, same run (the baseline) */
    size_t num_ok = 0;
    double t0 = cpu_s();
    for (size_t i = 0; i < n; i++) {
        ik_target t = ik_target_full_pose(poses[i]);
        ik_numeric_solve(&bc.chain, &t, mid, &o, ws, wsz, q, NULL);
        num_ok += (size_t)verify(&bc, &poses[i], q, a->tol);
    }
    double num_us = (cpu_s() - t0) * 1e6 / (double)n;
    /* closed form: success and exactness, untimed */
    size_t ok = 0, branches = 0, solutions = 0;
    double max_pos = 0.0;
    for (size_t i = 0; i < n; i++) {
        ik_target t = ik_target_full_pose(poses[i]);
        ik_closed_result res;
        int st = ik_closed_solve(&bc.chain, &k, &t, mid, &o, q, &res);
        int good = verify(&bc, &poses[i], q, a->tol);
        ok += (size_t)good;
        branches += res.branches;
        solutions += res.solutions;
        if (good)
            max_pos = fmax(max_pos, pos_err_of(&bc, &poses[i], q));
        if (a->verbose && (!good || st != IK_OK))
            fprintf(stderr, "sample %zu: %s (%s), verified %d, pos %.3g\n", i, ik_status_name(st),
                    ik_reason_name(res.reason), good, res.pos_err_max);
    }
    /* closed form: time per solve (the choice of the answer included), the
     * whole set solved over and over for at least 0.2 s */
    size_t solves = 0;
    double sink = 0.0;
    t0 = cpu_s();
    double el;
    do {
        for (size_t i = 0; i < n; i++) {
            ik_target t = ik_target_full_pose(poses[i]);
            ik_closed_solve(&bc.chain, &k, &t, mid, &o, q, NULL);
            sink += q[0];
        }
        solves += n;
        el = cpu_s() - t0;
    } while (el < 0.2);
    double closed_us = el * 1e6 / (double)solves;
    /* every solution, up to 64, sorted */
    size_t all_solves = 0;
    t0 = cpu_s();
    do {
        for (size_t i = 0; i < n; i++) {
            ik_target t = ik_target_full_pose(poses[i]);
            sink += (double)ik_closed_solve_all(&bc.chain, &k, &t, mid, &o, all, 64, NULL);
        }
        all_solves += n;
        el = cpu_s() - t0;
    } while (el < 0.2);
    double all_us = el * 1e6 / (double)all_solves;
    if (sink == 42.4242)
        fprintf(stderr, " ");
    /* the same targets as one batch through the wire format (decode, run,
     * encode, as POST /v1/solve/batch runs them, on this thread): the time
     * each result reports (time_ms) against the solver's own, both on the
     * wall clock the results use, each solve timed alone as the service
     * times it, rounds alternated, the best of five */
    double reported_us, solver_wall_us, run_us;
    if (closed_batch(a, &bc, &k, poses, n, mid, &o, &reported_us, &solver_wall_us, &run_us))
        goto out;
    printf("{\"bench\":\"closed\",\"robot\":\"%s\",\"family\":\"%s\",\"samples\":%zu,"
           "\"success\":%.5f,\"mean_us\":%.3f,\"max_pos_err\":%.3g,"
           "\"mean_branches\":%.2f,\"mean_solutions\":%.2f,\"all64_mean_us\":%.3f,"
           "\"numeric_success\":%.5f,\"numeric_mean_us\":%.2f,\"speedup\":%.1f,"
           "\"batch_reported_us\":%.3f,\"solver_wall_us\":%.3f,\"service_added_us\":%.3f,"
           "\"batch_run_us\":%.3f}\n",
           bc.robot, ik_closed_kind_name(k.kind), n, (double)ok / (double)n, closed_us, max_pos,
           (double)branches / (double)n, (double)solutions / (double)n, all_us,
           (double)num_ok / (double)n, num_us, num_us / closed_us, reported_us, solver_wall_us,
           reported_us - solver_wall_us, run_us);
    rc = 0;
out:
    free(qs);
    free(poses);
    free(ws);
    free(all);
    return rc;
}

/* verify() for a position-only target: inside the limits, every position
 * component within tol by this file's forward kinematics. */
static int verify_position(const bench_chain *bc, const ik_xform *target, const double *q,
                           double tol)
{
    if (!ik_chain_within_limits(&bc->chain, q, 0.0))
        return 0;
    ik_xform a = reference_fk(bc, q);
    return fabs(target->p.x - a.p.x) < tol && fabs(target->p.y - a.p.y) < tol &&
           fabs(target->p.z - a.p.z) < tol;
}

/* Whether name is one of the comma-separated list (NULL: none). */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncmp(p, name, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* ---- tree benchmark ---------------------------------------------------------- */

/* Several tips from one base (ik_tree.h): N random configurations of the
 * whole tree inside the limits, every tip's full pose by reference_fk, one
 * tree solve per sample from the mid-limit pose, then (same targets, same
 * run, alternating) every tip solved as its own chain with ik_numeric_solve
 * from its mid-limit pose: the baseline. Both are verified here by
 * reference_fk on every tip. When the tips share a joint (a torso) the
 * separate chains may give it different values, so their answers are not a
 * valid pose of the tree; "separate_consistent" counts the samples whose
 * separate answers agree on every shared joint (to the tolerance). */
static int run_tree(const chain_args *a, const char *tips_arg, const char *pos_tips)
{
    static bench_chain bc[IK_TREE_MAX_TIPS];
    static ik_tree tree;
    bool posonly[IK_TREE_MAX_TIPS];
    char tips[1024];
    snprintf(tips, sizeof tips, "%s", tips_arg);
    size_t nt = 0;
    for (char *save = NULL, *tok = strtok_r(tips, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (nt == IK_TREE_MAX_TIPS || load_urdf(a->urdf, a->base, tok, &bc[nt]) != 0 ||
            chain_init(&bc[nt].chain, bc[nt].joints, bc[nt].n_joints) != IK_OK) {
            fprintf(stderr, "ikbench: bad tip %s\n", tok);
            return 1;
        }
        posonly[nt] = in_list(pos_tips, tok);
        nt++;
    }
    const ik_joint *chains[IK_TREE_MAX_TIPS];
    size_t lens[IK_TREE_MAX_TIPS];
    for (size_t t = 0; t < nt; t++) {
        chains[t] = bc[t].joints;
        lens[t] = bc[t].n_joints;
    }
    if (nt < 1 || tree_from_chains(&tree, chains, lens, nt) != IK_OK || tree.dof > TEST_DOF_CAP) {
        fprintf(stderr, "ikbench: invalid tree, or more than %d variables\n", TEST_DOF_CAP);
        return 1;
    }
    char robot[64];
    stem_of(a->urdf, robot, sizeof robot);
    size_t shared = 0;
    for (size_t v = 0; v < tree.dof; v++)
        shared += (tree.tips_of[v] & (tree.tips_of[v] - 1)) != 0;
    const size_t n = a->samples, dof = tree.dof;
    double *qs = malloc(n * dof * sizeof *qs);
    double *tt = malloc(n * sizeof *tt), *ts = malloc(n * sizeof *ts);
    size_t wsz = ik_tree_workspace_size(&tree), wsn = 0;
    for (size_t t = 0; t < nt; t++) /* the longest tip chain's */
        if (ik_numeric_workspace_size(&bc[t].chain) > wsn)
            wsn = ik_numeric_workspace_size(&bc[t].chain);
    void *ws = malloc(wsz), *wn = malloc(wsn);
    int rc = 1;
    if (!qs || !tt || !ts || !ws || !wn)
        goto out;
    ik_rng r = {a->seed};
    for (size_t i = 0; i < n; i++)
        for (size_t v = 0; v < dof; v++)
            qs[i * dof + v] = tree.type[v] == IK_JOINT_CONTINUOUS
                                  ? ik_rng_uniform(&r, -IK_PI, IK_PI)
                                  : ik_rng_uniform(&r, tree.lower[v], tree.upper[v]);
    ik_tree_opts to = ik_tree_opts_default();
    to.tol_pos = to.tol_rot = a->tol;
    to.timeout_s = a->timeout_ms * 1e-3;
    to.max_iterations = a->max_iterations;
    to.rng_seed = a->seed;
    ik_numeric_opts no = ik_numeric_opts_default();
    no.tol_pos = no.tol_rot = a->tol;
    no.timeout_s = a->timeout_ms * 1e-3;
    no.max_iterations = a->max_iterations;
    no.rng_seed = a->seed;
    size_t ok_tree = 0, ok_sep = 0, consistent = 0, iterations = 0, sep_iterations = 0,
           sep_restarts = 0, tree_restarts = 0;
    size_t hist_n[6] = {0};
    double hist_us[6] = {0};
    double cpu_tree = 0.0, cpu_sep = 0.0;
    for (size_t i = 0; i < n; i++) {
        ik_xform goal[IK_TREE_MAX_TIPS];
        ik_tree_goal g[IK_TREE_MAX_TIPS];
        for (size_t t = 0; t < nt; t++) {
            double qc[TEST_DOF_CAP];
            ik_tree_gather(&tree, t, &qs[i * dof], qc);
            goal[t] = reference_fk(&bc[t], qc);
            g[t] = ik_tree_goal_target(posonly[t] ? ik_target_position(goal[t].p)
                                                  : ik_target_full_pose(goal[t]));
        }
        double q[TEST_DOF_CAP], qsep[IK_TREE_MAX_TIPS][TEST_DOF_CAP];
        ik_tree_result res;
        double t0 = now_s(), c0 = cpu_s();
        ik_tree_solve(&tree, g, NULL, &to, ws, wsz, q, &res);
        tt[i] = (now_s() - t0) * 1e6;
        cpu_tree += cpu_s() - c0;
        iterations += res.iterations;
        tree_restarts += res.restarts;
        int good = ik_tree_within_limits(&tree, q, 0.0);
        for (size_t t = 0; t < nt && good; t++) {
            double qc[TEST_DOF_CAP];
            ik_tree_gather(&tree, t, q, qc);
            good = posonly[t] ? verify_position(&bc[t], &goal[t], qc, a->tol)
                              : verify(&bc[t], &goal[t], qc, a->tol);
        }
        ok_tree += (size_t)good;
        {
            size_t b = res.restarts == 0 ? 0 : res.restarts < 2 ? 1 : res.restarts < 4 ? 2
                     : res.restarts < 8 ? 3 : res.restarts < 16 ? 4 : 5;
            hist_n[b]++;
            hist_us[b] += tt[i];
        }
        if (a->verbose && (!good || tt[i] > 1000.0))
            fprintf(stderr, "sample %zu: %s, verified %d, %zu iterations, %zu restarts, %.0f us\n",
                    i, ik_status_name(res.status), good, res.iterations, res.restarts, tt[i]);
        /* the baseline: every tip as its own chain */
        t0 = now_s();
        c0 = cpu_s();
        for (size_t t = 0; t < nt; t++) {
            ik_target tg =
                posonly[t] ? ik_target_position(goal[t].p) : ik_target_full_pose(goal[t]);
            ik_numeric_result nr;
            ik_numeric_solve(&bc[t].chain, &tg, NULL, &no, wn, wsn, qsep[t], &nr);
            sep_iterations += nr.iterations;
            sep_restarts += nr.restarts;
        }
        ts[i] = (now_s() - t0) * 1e6;
        cpu_sep += cpu_s() - c0;
        int sgood = 1;
        for (size_t t = 0; t < nt; t++)
            sgood &= posonly[t] ? verify_position(&bc[t], &goal[t], qsep[t], a->tol)
                                : verify(&bc[t], &goal[t], qsep[t], a->tol);
        ok_sep += (size_t)sgood;
        int same = 1; /* shared joints: the same value in every chain */
        for (size_t v = 0; v < dof; v++) {
            double first = NAN;
            for (size_t t = 0; t < nt; t++)
                for (size_t k = 0; k < tree.chain[t].dof; k++)
                    if (tree.var[t][k] == v) {
                        if (isnan(first))
                            first = qsep[t][k];
                        else if (fabs(qsep[t][k] - first) > a->tol)
                            same = 0;
                    }
        }
        consistent += (size_t)(sgood && same);
    }
    if (a->verbose)
        for (int b = 0; b < 6; b++)
            fprintf(stderr,
                    "restarts bucket %d (0,1,2-3,4-7,8-15,16+): %zu samples, %.0f us total\n", b,
                    hist_n[b], hist_us[b]);
    double st = 0.0, ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        st += tt[i];
        ss += ts[i];
    }
    qsort(tt, n, sizeof *tt, cmp_double);
    size_t p99 = (size_t)((double)n * 0.99);
    if (p99 >= n)
        p99 = n - 1;
    size_t npos = 0;
    for (size_t t = 0; t < nt; t++)
        npos += posonly[t];
    printf("{\"bench\":\"tree\",\"robot\":\"%s\",\"base\":\"%s\",\"tips\":%zu,"
           "\"position_tips\":%zu,\"dof\":%zu,\"shared_joints\":%zu,\"samples\":%zu,"
           "\"success\":%.5f,"
           "\"mean_us\":%.2f,\"median_us\":%.2f,\"p99_us\":%.2f,\"mean_iterations\":%.1f,"
           "\"mean_restarts\":%.2f,\"separate_mean_iterations\":%.1f,"
           "\"separate_mean_restarts\":%.2f,\"separate_success\":%.5f,\"separate_consistent\":%.5f,"
           "\"separate_mean_us\":%.2f,\"ratio_tree_vs_separate\":%.3f,"
           "\"cpu_mean_us\":%.2f,\"separate_cpu_mean_us\":%.2f,\"cpu_ratio\":%.3f}\n",
           robot, a->base, nt, npos, dof, shared, n, (double)ok_tree / (double)n, st / (double)n,
           n % 2 ? tt[n / 2] : 0.5 * (tt[n / 2 - 1] + tt[n / 2]), tt[p99],
           (double)iterations / (double)n, (double)tree_restarts / (double)n,
           (double)sep_iterations / (double)n, (double)sep_restarts / (double)n,
           (double)ok_sep / (double)n,
           (double)consistent / (double)n, ss / (double)n, ss > 0.0 ? st / ss : 0.0,
           1e6 * cpu_tree / (double)n, 1e6 * cpu_sep / (double)n,
           cpu_sep > 0.0 ? cpu_tree / cpu_sep : 0.0);
    rc = 0;
out:
    free(qs);
    free(tt);
    free(ts);
    free(ws);
    free(wn);
    return rc;
}

/* ---- long chains: cost against the number of joints ------------------------ */

/* A snake of n revolute joints (ik_chain.h has no bound of its own): axes x
 * and y in turn, 1 m in all, each joint within +-1 rad, a fixed tip, as
 * test_ik_numeric.c's test_long_snakes. */
static void snake_joints(bench_chain *bc, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        ik_joint *j = &bc->joints[k];
        j->type = IK_JOINT_REVOLUTE;
        j->origin = ik_xform_identity();
        j->origin.p = ik_v3(0, 0, k ? 1.0 / (double)n : 0.0);
        j->axis = k % 2 ? ik_v3(0, 1, 0) : ik_v3(1, 0, 0);
        j->lower = -1.0;
        j->upper = 1.0;
    }
    ik_joint *t = &bc->joints[n];
    memset(t, 0, sizeof *t);
    t->type = IK_JOINT_FIXED;
    t->origin = ik_xform_identity();
    t->origin.p = ik_v3(0, 0, 1.0 / (double)n);
    bc->n_joints = n + 1;
    snprintf(bc->robot, sizeof bc->robot, "snake%zu", n);
}

/* DOF scaling: snakes of 6, 12, 24, 48 and 64 joints, N full-pose targets
 * each by this file's forward kinematics from random configurations within
 * +-0.6 rad, solved from the mid-limit pose (the chain protocol's budget
 * and tolerance), verified here; thread CPU time per solve. */
static int run_snake(const chain_args *a)
{
    static const size_t sizes[] = {6, 12, 24, 48, 64};
    static bench_chain bc;
    printf("{\"bench\":\"dof_scaling\",\"samples\":%zu,\"snakes\":[", a->samples);
    double first_us = 0.0;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const size_t n = sizes[s];
        snake_joints(&bc, n);
        if (chain_init(&bc.chain, bc.joints, bc.n_joints) != IK_OK)
            return 1;
        size_t wsz = ik_numeric_workspace_size(&bc.chain);
        void *ws = malloc(wsz);
        if (!ws)
            return 1;
        ik_numeric_opts o = ik_numeric_opts_default();
        o.tol_pos = o.tol_rot = a->tol;
        o.timeout_s = a->timeout_ms * 1e-3;
        o.max_iterations = a->max_iterations;
        ik_rng r = {a->seed + n};
        size_t ok = 0, iterations = 0;
        double cpu = 0.0, q[TEST_DOF_CAP], qt[TEST_DOF_CAP];
        for (size_t i = 0; i < a->samples; i++) {
            for (size_t k = 0; k < n; k++)
                qt[k] = ik_rng_uniform(&r, -0.6, 0.6);
            ik_xform goal = reference_fk(&bc, qt);
            ik_target t = ik_target_full_pose(goal);
            ik_numeric_result res;
            o.rng_seed = a->seed + i;
            double c0 = cpu_s();
            ik_numeric_solve(&bc.chain, &t, NULL, &o, ws, wsz, q, &res);
            cpu += cpu_s() - c0;
            iterations += res.iterations;
            ok += (size_t)verify(&bc, &goal, q, a->tol);
        }
        free(ws);
        const double us = 1e6 * cpu / (double)a->samples;
        if (s == 0)
            first_us = us;
        printf("%s{\"dof\":%zu,\"success\":%.5f,\"cpu_mean_us\":%.2f,\"us_per_joint\":%.3f,"
               "\"mean_iterations\":%.1f,\"cost_vs_6\":%.2f}",
               s ? "," : "", n, (double)ok / (double)a->samples, us, us / (double)n,
               (double)iterations / (double)a->samples, us / first_us);
    }
    printf("]}\n");
    return 0;
}

/* ---- strict priorities on trees with shared joints ------------------------- */

/* Tip A at priority 0 on the pose of a random configuration, tip B at
 * priority 1 10 m away (far) or on the pose of another random
 * configuration (conflict), N samples each, solved from the mid-limit pose
 * with the chain protocol's budget: how often A is met (this file's FK),
 * how often B, the outcomes, and the thread CPU time per solve. Then tip
 * B alone as a one-tip tree and as a chain, its target out of reach:
 * what each answers and how long it takes. */
static int run_priority(const chain_args *a, const char *tips_arg)
{
    static bench_chain bc[2];
    static ik_tree tree;
    char tips[512];
    snprintf(tips, sizeof tips, "%s", tips_arg);
    size_t nt = 0;
    for (char *save = NULL, *tok = strtok_r(tips, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (nt == 2 || load_urdf(a->urdf, a->base, tok, &bc[nt]) != 0 ||
            chain_init(&bc[nt].chain, bc[nt].joints, bc[nt].n_joints) != IK_OK) {
            fprintf(stderr, "ikbench: priority needs two tips: %s\n", tok);
            return 1;
        }
        nt++;
    }
    const ik_joint *chains[2] = {bc[0].joints, bc[1].joints};
    size_t lens[2] = {bc[0].n_joints, bc[1].n_joints};
    if (nt != 2 || tree_from_chains(&tree, chains, lens, 2) != IK_OK || tree.dof > TEST_DOF_CAP) {
        fprintf(stderr, "ikbench: priority needs two tips (at most %d variables)\n", TEST_DOF_CAP);
        return 1;
    }
    size_t shared = 0;
    for (size_t v = 0; v < tree.dof; v++)
        shared += (tree.tips_of[v] & (tree.tips_of[v] - 1)) != 0;
    char robot[64];
    stem_of(a->urdf, robot, sizeof robot);
    size_t wsz = ik_tree_workspace_size(&tree);
    void *ws = malloc(wsz);
    if (!ws)
        return 1;
    ik_tree_opts to = ik_tree_opts_default();
    to.tol_pos = to.tol_rot = a->tol;
    to.timeout_s = a->timeout_ms * 1e-3;
    to.max_iterations = a->max_iterations;
    printf("{\"bench\":\"priority\",\"robot\":\"%s\",\"base\":\"%s\",\"dof\":%zu,"
           "\"shared_joints\":%zu,\"samples\":%zu",
           robot, a->base, tree.dof, shared, a->samples);
    for (int far = 1; far >= 0; far--) {
        ik_rng r = {a->seed + (uint64_t)far};
        size_t top = 0, low = 0, unreachable = 0, notconv = 0, timedout = 0;
        double cpu = 0.0, worst = 0.0;
        for (size_t i = 0; i < a->samples; i++) {
            double qa[TEST_DOF_CAP], qb[TEST_DOF_CAP], q[TEST_DOF_CAP], qc[TEST_DOF_CAP];
            for (size_t v = 0; v < tree.dof; v++) {
                double lo = tree.lower[v], hi = tree.upper[v];
                if (tree.type[v] == IK_JOINT_CONTINUOUS) {
                    lo = -IK_PI;
                    hi = IK_PI;
                }
                qa[v] = ik_rng_uniform(&r, lo, hi);
                qb[v] = ik_rng_uniform(&r, lo, hi);
            }
            ik_tree_gather(&tree, 0, qa, qc);
            ik_xform ga = reference_fk(&bc[0], qc);
            ik_tree_gather(&tree, 1, far ? qa : qb, qc);
            ik_xform gb = reference_fk(&bc[1], qc);
            if (far)
                gb.p = ik_vec3_add(gb.p, ik_v3(10, 0, 0));
            ik_tree_goal g[2] = {ik_tree_goal_target(ik_target_full_pose(ga)),
                                 ik_tree_goal_target(ik_target_full_pose(gb))};
            g[1].priority = 1;
            ik_tree_result res;
            double c0 = cpu_s();
            int st = ik_tree_solve(&tree, g, NULL, &to, ws, wsz, q, &res);
            double c = cpu_s() - c0;
            cpu += c;
            worst = fmax(worst, c);
            unreachable += st == IK_EUNREACHABLE;
            notconv += st == IK_ENOTCONV;
            timedout += st == IK_ETIMEDOUT;
            ik_tree_gather(&tree, 0, q, qc);
            top += (size_t)verify(&bc[0], &ga, qc, a->tol);
            ik_tree_gather(&tree, 1, q, qc);
            low += (size_t)verify(&bc[1], &gb, qc, a->tol);
        }
        printf(",\"%s\":{\"priority0_met\":%.5f,\"priority1_met\":%.5f,\"unreachable\":%zu,"
               "\"not_converged\":%zu,\"timed_out\":%zu,\"cpu_mean_us\":%.2f,"
               "\"cpu_max_us\":%.2f}",
               far ? "far" : "conflict", (double)top / (double)a->samples,
               (double)low / (double)a->samples, unreachable, notconv, timedout,
               1e6 * cpu / (double)a->samples, 1e6 * worst);
    }
    free(ws);
    /* tip B alone, out of reach: a one-tip tree and the chain */
    static ik_tree one;
    if (tree_from_chains(&one, &chains[1], &lens[1], 1) != IK_OK)
        return 1;
    wsz = ik_tree_workspace_size(&one);
    size_t wsn = ik_numeric_workspace_size(&bc[1].chain);
    ws = malloc(wsz > wsn ? wsz : wsn);
    if (!ws)
        return 1;
    double mid[TEST_DOF_CAP], q[TEST_DOF_CAP];
    ik_chain_mid(&bc[1].chain, mid);
    ik_xform far_pose = reference_fk(&bc[1], mid);
    far_pose.p = ik_vec3_add(far_pose.p, ik_v3(10, 0, 0));
    ik_tree_goal g = ik_tree_goal_target(ik_target_full_pose(far_pose));
    ik_target t = ik_target_full_pose(far_pose);
    ik_numeric_opts no = ik_numeric_opts_default();
    no.tol_pos = no.tol_rot = a->tol;
    no.timeout_s = a->timeout_ms * 1e-3;
    no.max_iterations = a->max_iterations;
    ik_tree_result tr;
    ik_numeric_result nr;
    int tst = ik_tree_solve(&one, &g, NULL, &to, ws, wsz, q, &tr);
    int cst = ik_numeric_solve(&bc[1].chain, &t, NULL, &no, ws, wsn, q, &nr);
    double tree_cpu = INFINITY, chain_cpu = INFINITY;
    for (int round = 0; round < 200; round++) { /* the best of 200 each */
        double c0 = cpu_s();
        ik_tree_solve(&one, &g, NULL, &to, ws, wsz, q, NULL);
        tree_cpu = fmin(tree_cpu, cpu_s() - c0);
        c0 = cpu_s();
        ik_numeric_solve(&bc[1].chain, &t, NULL, &no, ws, wsn, q, NULL);
        chain_cpu = fmin(chain_cpu, cpu_s() - c0);
    }
    free(ws);
    printf(",\"out_of_reach\":{\"tree\":\"%s\",\"tree_cause\":\"%s\",\"tree_iterations\":%zu,"
           "\"tree_restarts\":%zu,\"tree_cpu_us\":%.2f,\"chain\":\"%s\",\"chain_cause\":\"%s\","
           "\"chain_cpu_us\":%.2f}}\n",
           ik_status_name(tst), ik_reason_name(tr.reason), tr.iterations, tr.restarts,
           1e6 * tree_cpu, ik_status_name(cst), ik_reason_name(nr.reason), 1e6 * chain_cpu);
    return 0;
}

/* ---- stream benchmark ------------------------------------------------------ */

typedef struct stream_figures {
    size_t solves, success, flips, motions_flipped, restarts, iterations;
    double cpu, worst;
    double ratio[64]; /* per motion: largest answer step / the motion's own */
} stream_figures;

/* Joint k of motion p at step i (test_robot_stream.py's motion()). */
static double stream_q(const ik_chain *c, const double *centre, size_t k, size_t i, size_t steps,
                       double phase)
{
    double w = 2.0 * IK_PI * (double)i / (double)steps * (1.0 + 0.5 * (double)(k % 3)) + phase +
               0.7 * (double)k;
    double half = 0.5 * fmin(c->upper[k] - c->lower[k], 2.0 * IK_PI);
    if (c->type[k] == IK_JOINT_CONTINUOUS)
        return 0.3 + 2.5 * sin(w);
    return centre[k] + fmin(0.25 * half, 0.3) * sin(w);
}

/* One motion streamed with options o into f (its ratio at index m);
 * unseeded: the first solve from the mid-limit pose (no seed, first
 * found), as a stream opened without a seed. */
static void stream_motion(const bench_chain *bc, const double *centre, size_t steps, double phase,
                          const ik_numeric_opts *o, void *ws, size_t wsz, stream_figures *f,
                          size_t m, bool unseeded)
{
    const ik_chain *c = &bc->chain;
    const size_t dof = c->dof;
    double seed[TEST_DOF_CAP], prev_m[TEST_DOF_CAP], own = 0.0, worst = 0.0;
    size_t flips = 0;
    for (size_t i = 0; i <= steps; i++) {
        double qm[TEST_DOF_CAP], q[TEST_DOF_CAP];
        for (size_t k = 0; k < dof; k++)
            qm[k] = stream_q(c, centre, k, i, steps, phase);
        if (i == 0) {
            memcpy(seed, qm, dof * sizeof *qm); /* the stream opens on the arm's pose */
            memcpy(prev_m, qm, dof * sizeof *qm);
        }
        for (size_t k = 0; k < dof; k++)
            own = fmax(own, fabs(qm[k] - prev_m[k]));
        memcpy(prev_m, qm, dof * sizeof *qm);
        ik_xform pose = reference_fk(bc, qm);
        ik_target t = ik_target_full_pose(pose);
        ik_numeric_result res;
        double t0 = cpu_s();
        ik_numeric_opts first = *o;
        first.search = IK_SEARCH_FIRST_FOUND;
        const bool open = unseeded && i == 0;
        int st = ik_numeric_solve(c, &t, open ? NULL : seed, open ? &first : o, ws, wsz, q, &res);
        f->cpu += cpu_s() - t0;
        f->solves++;
        f->restarts += res.restarts;
        f->iterations += res.iterations;
        if (st != IK_OK || !verify(bc, &pose, q, o->tol_pos))
            continue;
        f->success++;
        double step = 0.0;
        for (size_t k = 0; k < dof; k++)
            step = fmax(step, fabs(q[k] - seed[k]));
        if (i > 0) /* the opening answer is no step of the stream */
            worst = fmax(worst, step);
        flips += i > 0 && step > 3.0 * own;
        memcpy(seed, q, dof * sizeof *q);
    }
    f->flips += flips;
    f->motions_flipped += flips > 0;
    f->ratio[m] = own > 0.0 ? worst / own : 0.0;
    f->worst = fmax(f->worst, f->ratio[m]);
}

static void print_stream_figures(const char *name, stream_figures *f, size_t motions)
{
    qsort(f->ratio, motions, sizeof *f->ratio, cmp_double);
    double med = motions % 2 ? f->ratio[motions / 2]
                             : 0.5 * (f->ratio[motions / 2 - 1] + f->ratio[motions / 2]);
    printf("\"%s\":{\"success\":%.4f,\"flips\":%zu,\"motions_flipped\":%zu,"
           "\"largest_over_motion\":%.3f,\"median_largest_over_motion\":%.3f,"
           "\"restarts\":%zu,\"mean_iterations\":%.2f,\"cpu_mean_us\":%.2f}",
           name, (double)f->success / (double)f->solves, f->flips, f->motions_flipped, f->worst,
           med, f->restarts, (double)f->iterations / (double)f->solves,
           1e6 * f->cpu / (double)f->solves);
}

static int run_stream(const chain_args *a, const char *centre_arg, size_t phases, size_t steps,
                      bool unseeded)
{
    static bench_chain bc;
    if (load_urdf(a->urdf, a->base, a->tip, &bc) != 0)
        return 1;
    stem_of(a->urdf, bc.robot, sizeof bc.robot);
    if (chain_init(&bc.chain, bc.joints, bc.n_joints) != IK_OK) {
        fprintf(stderr, "ikbench: invalid chain\n");
        return 1;
    }
    const ik_chain *c = &bc.chain;
    double centre[TEST_DOF_CAP];
    ik_chain_mid(c, centre);
    if (centre_arg) {
        const char *s = centre_arg;
        for (size_t k = 0; k < c->dof; k++) {
            char *end;
            centre[k] = strtod(s, &end);
            if (end == s || !isfinite(centre[k]) || (*end != ',' && k + 1 < c->dof) ||
                (*end && k + 1 == c->dof)) {
                fprintf(stderr, "ikbench: --centre needs %zu numbers, comma-separated\n", c->dof);
                return 1;
            }
            s = end + 1;
        }
    }
    if (phases > 64)
        phases = 64;
    size_t wsz = ik_numeric_workspace_size(c);
    void *ws = malloc(wsz);
    static stream_figures plain, fol;
    if (!ws)
        return 1;
    ik_numeric_opts o = ik_numeric_opts_default();
    o.tol_pos = a->tol;
    o.tol_rot = a->tol;
    o.timeout_s = a->timeout_ms * 1e-3;
    o.max_iterations = a->max_iterations;
    o.search = IK_SEARCH_NEAREST_TO_SEED;
    ik_numeric_opts of = o;
    of.follow = true;
    for (size_t p = 0; p < phases; p++) {
        stream_motion(&bc, centre, steps, 0.5 * (double)p, &o, ws, wsz, &plain, p, unseeded);
        stream_motion(&bc, centre, steps, 0.5 * (double)p, &of, ws, wsz, &fol, p, unseeded);
    }
    free(ws);
    printf("{\"bench\":\"stream\",\"robot\":\"%s\",\"dof\":%zu,\"centre\":[", bc.robot, c->dof);
    for (size_t k = 0; k < c->dof; k++)
        printf("%s%.4g", k ? "," : "", centre[k]);
    printf("],\"unseeded\":%s,\"motions\":%zu,\"steps\":%zu,", unseeded ? "true" : "false",
           phases, steps);
    print_stream_figures("plain", &plain, phases);
    printf(",");
    print_stream_figures("follow", &fol, phases);
    printf(",\"cpu_ratio_follow_vs_plain\":%.3f}\n", plain.cpu > 0 ? fol.cpu / plain.cpu : 0.0);
    return 0;
}

/* ---- two-bone benchmark ----------------------------------------------------- */

typedef struct twobone_case {
    ik_vec3 a, b, c, t;
} twobone_case;

static ik_vec3 random_dir(ik_rng *r)
{
    for (;;) {
        ik_vec3 v = ik_v3(ik_rng_uniform(r, -1, 1), ik_rng_uniform(r, -1, 1), ik_rng_uniform(r, -1, 1));
        double l = ik_vec3_len(v);
        if (l > 0.1 && l <= 1.0)
            return ik_vec3_scale(v, 1.0 / l);
    }
}

/* Random limbs (bone lengths 0.2-1, random pose) and targets at a distance
 * drawn uniformly in [|l1 - l2|, l1 + l2] from the root: reachable, the
 * full solve of ik_twobone_solve() including its reach-case tests. The
 * loop over all cases is repeated until 0.2 s have passed. */
static int run_twobone(size_t samples, uint64_t seed)
{
    twobone_case *cs = malloc(samples * sizeof *cs);
    if (!cs)
        return 1;
    ik_rng r = {seed};
    for (size_t i = 0; i < samples; i++) {
        double l1 = ik_rng_uniform(&r, 0.2, 1.0), l2 = ik_rng_uniform(&r, 0.2, 1.0);
        cs[i].a = ik_v3(ik_rng_uniform(&r, -1, 1), ik_rng_uniform(&r, -1, 1), ik_rng_uniform(&r, -1, 1));
        cs[i].b = ik_vec3_madd(cs[i].a, random_dir(&r), l1);
        cs[i].c = ik_vec3_madd(cs[i].b, random_dir(&r), l2);
        double d = ik_rng_uniform(&r, fabs(l1 - l2) + 1e-6, l1 + l2 - 1e-6);
        cs[i].t = ik_vec3_madd(cs[i].a, random_dir(&r), d);
    }
    size_t solves = 0, ok = 0;
    volatile double sink = 0.0; /* keeps the solves from being optimised away */
    double t0 = now_s(), elapsed;
    do {
        for (size_t i = 0; i < samples; i++) {
            ik_twobone_result out;
            int st = ik_twobone_solve(cs[i].a, cs[i].b, cs[i].c, cs[i].t, NULL, &out);
            ok += st == IK_OK;
            sink += out.c.x;
        }
        solves += samples;
        elapsed = now_s() - t0;
    } while (elapsed < 0.2);
    free(cs);
    if (ok != solves)
        fprintf(stderr, "ikbench: %zu of %zu two-bone solves not IK_OK\n", solves - ok, solves);
    printf("{\"bench\":\"two_bone\",\"samples\":%zu,\"ns_per_solve\":%.2f}\n", samples,
           elapsed * 1e9 / (double)solves);
    return 0;
}

/* ---- proto benchmark ------------------------------------------------------- */

/* The body tests/bench/http_post.lua sends. */
static const char proto_default_body[] =
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]},"
    "\"target\":{\"position\":[0.3,0.6,0.2]}}";

/* The request body of the proto benchmark: the file's, or the two-bone
 * HTTP benchmark body (malloc'd, NUL-terminated; NULL with a message on
 * error). */
static char *load_body(const char *body_path, size_t *len)
{
    if (body_path) {
        char *body = bench_read_file(body_path, len);
        if (!body)
            fprintf(stderr, "ikbench: cannot read %s: %s\n", body_path, strerror(errno));
        return body;
    }
    *len = sizeof proto_default_body - 1;
    char *body = malloc(*len + 1);
    if (body)
        memcpy(body, proto_default_body, *len + 1);
    return body;
}

/* Decode, run, encode and free of one request after another (as the daemon's
 * loop handles them), each stage timed on its own with the monotonic clock
 * (about 20 ns per reading, charged to the stage it ends). One untimed
 * request first warms the allocator and the caches. */
static int run_proto(size_t samples, const char *body_path)
{
    size_t len = 0;
    char *body = load_body(body_path, &len);
    if (!body)
        return 1;
    proto_limits lim;
    proto_limits_default(&lim);
    double t[4] = {0, 0, 0, 0};
    size_t out_len = 0;
    int rc = 1;
    for (size_t i = 0; i <= samples; i++) {
        proto_error err;
        proto_job *job;
        double t0 = now_s();
        if (proto_job_decode(body, len, PROTO_SOLVE, &lim, NULL, NULL, &job, &err)) {
            fprintf(stderr, "ikbench: the body is not a valid request: %s: %s\n", err.path,
                    err.message);
            goto out;
        }
        double t1 = now_s();
        proto_job_run(job, 0, proto_job_count(job));
        double t2 = now_s();
        char *o = proto_job_encode(job, &out_len);
        double t3 = now_s();
        proto_job_free(job);
        double t4 = now_s();
        if (!o) {
            fprintf(stderr, "ikbench: proto_job_encode failed\n");
            goto out;
        }
        free(o);
        if (i > 0) {
            t[0] += t1 - t0;
            t[1] += t2 - t1;
            t[2] += t3 - t2;
            t[3] += t4 - t3;
        }
    }
    double k = 1e6 / (double)samples;
    printf("{\"bench\":\"%s\",\"samples\":%zu,\"decode_us\":%.3f,\"run_us\":%.3f,"
           "\"encode_us\":%.3f,\"free_us\":%.3f,\"total_us\":%.3f,\"response_bytes\":%zu}\n",
           body_path ? "proto_body" : "proto_two_bone", samples, t[0] * k, t[1] * k, t[2] * k,
           t[3] * k, (t[0] + t[1] + t[2] + t[3]) * k, out_len);
    rc = 0;
out:
    free(body);
    return rc;
}

/* ---- number writers ------------------------------------------------------- */

/* ns per number of the three writers over v[0..n), best of five rounds. */
static void time_writers(const double *v, size_t n, double ns[3], size_t *sink)
{
    double best[3] = {1e30, 1e30, 1e30};
    for (int round = 0; round < 5; round++) {
        for (int w = 0; w < 3; w++) {
            char buf[PROTO_DOUBLE_MAX];
            double t0 = now_s();
            for (size_t i = 0; i < n; i++)
                *sink += (size_t)(w == 0   ? proto_json_format_shortest(v[i], buf)
                                  : w == 1 ? proto_json_format_digits(v[i], 6, buf)
                                           : proto_json_format_digits(v[i], 17, buf));
            double t = now_s() - t0;
            if (t < best[w])
                best[w] = t;
        }
    }
    for (int w = 0; w < 3; w++)
        ns[w] = best[w] * 1e9 / (double)n;
}

/* The numbers of the answer to tests/bench/http_bench.sh's two-bone POST
 * /v1/solve, in its order (positions, rotations, local_rotations,
 * position_error, time_ms), and three an answer often has besides: the
 * noise of a quaternion part that is zero, a half and a whole number. */
/* clang-format off */
static const double solve_answer[] = {
    0.0, 0.0, 0.0,
    -0.10465832682693102, 0.48391990270833907, -0.06977221788462065,
    0.3, 0.6, 0.2,
    -0.07034004722480636, 0.0, 0.10551007083720955, 0.9919273676577025,
    0.34369928838060615, 0.0, -0.5155489325709093, 0.7849076998549963,
    0.34369928838060615, 0.0, -0.5155489325709093, 0.7849076998549963,
    -0.07034004722480636, 0.0, 0.10551007083720955, 0.9919273676577025,
    0.39613517506411483, 0.0, -0.5942027625961722, 0.7,
    0.0, 0.0, 0.0, 1.0,
    0.0,
    0.030033999792067334,
    6.123233995736766e-17, 1.5, 2.0,
};
/* clang-format on */

/* ns per number of solve_answer appended by proto_jw_double_digits at
 * digits (0: shortest), each with its comma, rounds times per round; the
 * best of five rounds in this thread's CPU time. */
static double time_solve_answer(int digits, size_t rounds, size_t *sink)
{
    const size_t n = sizeof solve_answer / sizeof *solve_answer;
    char buf[2048];
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = cpu_s();
        for (size_t r = 0; r < rounds; r++) {
            proto_jw w;
            proto_jw_init(&w, buf, sizeof buf);
            for (size_t i = 0; i < n; i++) {
                proto_jw_double_digits(&w, solve_answer[i], digits);
                proto_jw_raw(&w, ",", 1);
            }
            *sink += w.len;
            proto_jw_release(&w);
        }
        double t = cpu_s() - t0;
        if (t < best)
            best = t;
    }
    return best * 1e9 / (double)(rounds * n);
}

static int run_doubles(size_t samples)
{
    double *ans = malloc(samples * sizeof *ans), *any = malloc(samples * sizeof *any);
    if (!ans || !any)
        return 1;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < samples; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* an answer's coordinates and quaternion parts, one in eight the
         * 1e-17 noise of an exact zero */
        double u = (double)(x >> 11) / 9007199254740992.0;
        ans[i] = i % 8 == 7 ? (u - 0.5) * 1e-16 : (u - 0.5) * 4.0;
        uint64_t bits = x * 0x2545f4914f6cdd1dull;
        memcpy(&any[i], &bits, sizeof bits);
        if (!isfinite(any[i]))
            any[i] = 1.0;
    }
    double a[3], b[3];
    size_t sink = 0;
    time_writers(ans, samples, a, &sink);
    time_writers(any, samples, b, &sink);
    size_t rounds = samples / 8 ? samples / 8 : 1;
    double solve = time_solve_answer(0, rounds, &sink);
    double solve6 = time_solve_answer(6, rounds, &sink);
    printf("{\"bench\":\"doubles\",\"samples\":%zu,\"answer_shortest_ns\":%.1f,"
           "\"answer_digits6_ns\":%.1f,\"answer_digits17_ns\":%.1f,\"answer_shortest_vs_17\":%.2f,"
           "\"any_shortest_ns\":%.1f,\"any_digits6_ns\":%.1f,\"any_digits17_ns\":%.1f,"
           "\"solve_answer_ns\":%.2f,\"solve_answer_digits6_ns\":%.2f,\"chars\":%zu}\n",
           samples, a[0], a[1], a[2], a[0] / a[2], b[0], b[1], b[2], solve, solve6, sink);
    free(ans);
    free(any);
    return 0;
}

/* ---- collision-aware IK benchmark --------------------------------------- */

#define COLLIDE_MAX_OBST 256

/* FILE's spheres (into sp, their link names kept in the JSON tree *doc,
 * which the caller frees) and scene (into obst). */
static int collide_read(const char *path, json_t **doc, proto_collide_sphere *sp, size_t cap,
                        size_t *ns, ik_obstacle *obst, size_t *nobst)
{
    json_error_t e;
    *doc = json_load_file(path, 0, &e);
    if (!*doc) {
        fprintf(stderr, "ikbench: %s: %s\n", path, e.text);
        return -1;
    }
    *ns = *nobst = 0;
    const char *link;
    json_t *list;
    json_object_foreach(json_object_get(*doc, "collision_spheres"), link, list)
    {
        size_t i;
        json_t *s4;
        json_array_foreach(list, i, s4)
        {
            if (*ns == cap)
                return -1;
            sp[*ns].link = link;
            for (int k = 0; k < 4; k++)
                sp[*ns].s[k] = json_number_value(json_array_get(s4, (size_t)k));
            (*ns)++;
        }
    }
    json_t *scene = json_object_get(*doc, "scene"), *o;
    size_t i;
#define V3(a) ik_v3(json_number_value(json_array_get(a, 0)), json_number_value(json_array_get(a, 1)), \
                    json_number_value(json_array_get(a, 2)))
    json_array_foreach(json_object_get(scene, "boxes"), i, o)
    {
        json_t *q = json_object_get(o, "orientation");
        ik_quat qq = {json_number_value(json_array_get(q, 0)), json_number_value(json_array_get(q, 1)),
                      json_number_value(json_array_get(q, 2)), json_number_value(json_array_get(q, 3))};
        if (*nobst == COLLIDE_MAX_OBST ||
            ik_obstacle_box(&obst[(*nobst)++], V3(json_object_get(o, "position")), qq,
                            V3(json_object_get(o, "size"))) != IK_OK)
            return -1;
    }
    json_array_foreach(json_object_get(scene, "spheres"), i, o)
    {
        if (*nobst == COLLIDE_MAX_OBST ||
            ik_obstacle_sphere(&obst[(*nobst)++], V3(json_object_get(o, "position")),
                               json_number_value(json_object_get(o, "radius"))) != IK_OK)
            return -1;
    }
    json_array_foreach(json_object_get(scene, "capsules"), i, o)
    {
        if (*nobst == COLLIDE_MAX_OBST ||
            ik_obstacle_capsule(&obst[(*nobst)++], V3(json_object_get(o, "from")),
                                V3(json_object_get(o, "to")),
                                json_number_value(json_object_get(o, "radius"))) != IK_OK)
            return -1;
    }
#undef V3
    return 0;
}

static int run_collide(const chain_args *a, const char *spheres_path, double margin)
{
    static bench_chain bc;
    static ik_collide_model model;
    static proto_collide_sphere sp[IK_COLLIDE_MAX_SPHERES];
    static ik_obstacle obst[COLLIDE_MAX_OBST];
    json_t *doc = NULL;
    char *xml = NULL;
    double *qs = NULL, *times = NULL;
    ik_xform *poses = NULL;
    void *ws = NULL, *cws = NULL;
    proto_collide_link *links = NULL;
    int rc = 1;
    size_t ns, nobst, nlinks, len;
    if (load_urdf(a->urdf, a->base, a->tip, &bc) != 0 ||
        chain_init(&bc.chain, bc.joints, bc.n_joints) != IK_OK)
        goto out;
    stem_of(a->urdf, bc.robot, sizeof bc.robot);
    if (collide_read(spheres_path, &doc, sp, IK_COLLIDE_MAX_SPHERES, &ns, obst, &nobst) != 0) {
        fprintf(stderr, "ikbench: %s: unreadable spheres or scene\n", spheres_path);
        goto out;
    }
    xml = bench_read_file(a->urdf, &len);
    const char *tips[1] = {a->tip};
    proto_collide_spec spec = {sp, ns, 0.0, NULL, 0};
    proto_error err;
    if (!xml || proto_collide_build(xml, len, a->base, tips, 1, &bc.chain, NULL, &spec, &model,
                                    &links, &nlinks, &err) != 0) {
        fprintf(stderr, "ikbench: collision model: %s\n", xml ? err.message : "no URDF");
        goto out;
    }
    const size_t dof = bc.chain.dof, n = a->samples;
    const size_t wsz = ik_numeric_workspace_size(&bc.chain), cwsz = ik_collide_workspace_size(&model);
    qs = malloc(n * dof * sizeof *qs);
    poses = malloc(n * sizeof *poses);
    times = malloc(2 * n * sizeof *times);
    ws = malloc(wsz);
    cws = malloc(cwsz);
    if (!qs || !poses || !times || !ws || !cws)
        goto out;
    ik_collide_scene scene = {obst, nobst};

    /* targets: configurations 1 to 8 cm from an obstacle, their closest */
    ik_rng r = {a->seed};
    size_t k = 0, tries = 0;
    while (k < n && tries < 1000 * n) {
        double *q = qs + k * dof;
        for (size_t j = 0; j < dof; j++)
            q[j] = ik_rng_uniform(&r, bc.chain.lower[j], bc.chain.upper[j]);
        tries++;
        ik_collide_pair p;
        double d = ik_collide_distance(&model, &scene, q, cws, cwsz, &p);
        if (d < 0.01 || d > 0.08 || p.obstacle < 0)
            continue;
        poses[k++] = reference_fk(&bc, q);
    }
    if (k < n) {
        fprintf(stderr, "ikbench: only %zu configurations near the obstacles\n", k);
        goto out;
    }

    ik_collide_check chk = {&model, scene, margin, true, cws, cwsz};
    ik_numeric_opts plain = ik_numeric_opts_default(), avoid;
    plain.tol_pos = plain.tol_rot = a->tol;
    plain.timeout_s = a->timeout_ms * 1e-3;
    plain.max_iterations = a->max_iterations;
    plain.rng_seed = a->seed;
    avoid = plain;
    avoid.collide = &chk;
    double mid[TEST_DOF_CAP], q[TEST_DOF_CAP];
    ik_chain_mid(&bc.chain, mid);
    size_t ok[2] = {0, 0}, colliding[2] = {0, 0};
    double wall[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        ik_target t = ik_target_full_pose(poses[i]);
        for (int v = 0; v < 2; v++) {
            double w0 = now_s(), c0 = cpu_s();
            ik_numeric_solve(&bc.chain, &t, mid, v ? &avoid : &plain, ws, wsz, q, NULL);
            times[v * n + i] = (cpu_s() - c0) * 1e6;
            wall[v] += (now_s() - w0) * 1e6;
            bool clear = ik_collide_distance(&model, &scene, q, cws, cwsz, NULL) >= margin;
            bool good = verify(&bc, &poses[i], q, a->tol);
            colliding[v] += good && !clear;
            ok[v] += good && (v == 0 || clear);
        }
    }
    double mean[2] = {0, 0};
    for (int v = 0; v < 2; v++)
        for (size_t i = 0; i < n; i++)
            mean[v] += times[v * n + i] / (double)n;
    qsort(times + n, n, sizeof *times, cmp_double);
    size_t p99 = (size_t)((double)n * 0.99);
    if (p99 >= n)
        p99 = n - 1;

    /* one query alone, over the targets' configurations */
    double grad[TEST_DOF_CAP], sink = 0.0, c0 = cpu_s();
    for (size_t i = 0; i < n; i++)
        sink += ik_collide_distance(&model, &scene, qs + i * dof, cws, cwsz, NULL);
    double c1 = cpu_s();
    for (size_t i = 0; i < n; i++)
        sink += ik_collide_penalty(&model, &scene, qs + i * dof, margin + 0.5 * model.scale, grad,
                                   cws, cwsz, NULL);
    double c2 = cpu_s();
    printf("{\"bench\":\"collide\",\"robot\":\"%s\",\"dof\":%zu,\"spheres\":%zu,\"obstacles\":%zu,"
           "\"samples\":%zu,\"margin\":%g,\"plain_success\":%.4f,\"plain_colliding\":%.4f,"
           "\"plain_cpu_mean_us\":%.2f,\"avoid_success\":%.4f,\"avoid_colliding\":%.4f,"
           "\"avoid_cpu_mean_us\":%.2f,\"avoid_cpu_p99_us\":%.2f,\"ratio\":%.2f,"
           "\"plain_wall_mean_us\":%.2f,\"avoid_wall_mean_us\":%.2f,\"distance_us\":%.3f,"
           "\"penalty_us\":%.3f}\n",
           bc.robot, dof, model.nspheres, nobst, n, margin, (double)ok[0] / (double)n,
           (double)colliding[0] / (double)n, mean[0], (double)ok[1] / (double)n,
           (double)colliding[1] / (double)n, mean[1], times[n + p99], mean[1] / mean[0],
           wall[0] / (double)n, wall[1] / (double)n, (c1 - c0) / (double)n * 1e6,
           (c2 - c1) / (double)n * 1e6);
    if (!(sink == sink))
        fprintf(stderr, "ikbench: a query gave NaN\n");
    static ik_closed K;
    if (ik_closed_init(&K, &bc.chain) == IK_OK && K.kind != IK_CLOSED_NONE) {
        /* the closed form on the same targets, plainly and avoiding */
        double cpu[2] = {0, 0};
        size_t cok[2] = {0, 0}, ccol[2] = {0, 0};
        for (size_t i = 0; i < n; i++) {
            ik_target t = ik_target_full_pose(poses[i]);
            for (int v = 0; v < 2; v++) {
                double c = cpu_s();
                ik_closed_solve(&bc.chain, &K, &t, mid, v ? &avoid : &plain, q, NULL);
                cpu[v] += (cpu_s() - c) * 1e6;
                bool clear = ik_collide_distance(&model, &scene, q, cws, cwsz, NULL) >= margin;
                bool good = verify(&bc, &poses[i], q, a->tol);
                ccol[v] += good && !clear;
                cok[v] += good && (v == 0 || clear);
            }
        }
        printf("{\"bench\":\"collide_closed\",\"robot\":\"%s\",\"samples\":%zu,\"margin\":%g,"
               "\"plain_success\":%.4f,\"plain_colliding\":%.4f,\"plain_cpu_mean_us\":%.2f,"
               "\"avoid_success\":%.4f,\"avoid_colliding\":%.4f,\"avoid_cpu_mean_us\":%.2f,"
               "\"ratio\":%.2f}\n",
               bc.robot, n, margin, (double)cok[0] / (double)n, (double)ccol[0] / (double)n,
               cpu[0] / (double)n, (double)cok[1] / (double)n, (double)ccol[1] / (double)n,
               cpu[1] / (double)n, cpu[1] / cpu[0]);
    }
    rc = 0;
out:
    json_decref(doc);
    free(xml);
    free(links);
    free(qs);
    free(poses);
    free(times);
    free(ws);
    free(cws);
    return rc;
}

/* ---- command line --------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: ikbench chain --urdf FILE --base LINK --tip LINK\n"
            "                     [--samples N] [--seed S] [--timeout-ms MS] [--tol T]\n"
            "                     [--targets FILE] [--max-iterations N] [--verbose]\n"
            "       ikbench closed --urdf FILE --base LINK --tip LINK [the chain options]\n"
            "       ikbench tree --urdf FILE --base LINK --tips LINK,LINK[,...]\n"
            "                    [--position-tips LINK,...] [--samples N] [--seed S]\n"
            "                    [--timeout-ms MS] [--tol T] [--max-iterations N] [--verbose]\n"
            "       ikbench priority --urdf FILE --base LINK --tips A,B [--samples N] [--seed S]\n"
            "                        [--timeout-ms MS] [--tol T] [--max-iterations N]\n"
            "       ikbench snake [--samples N] [--seed S] [--timeout-ms MS] [--tol T]\n"
            "                     [--max-iterations N]\n"
            "       ikbench stream --urdf FILE --base LINK --tip LINK [--centre Q1,Q2,...]\n"
            "                      [--phases N] [--samples STEPS] [--timeout-ms MS] [--tol T]\n"
            "                      [--max-iterations N] [--unseeded]\n"
            "       ikbench collide --urdf FILE --base LINK --tip LINK --spheres FILE\n"
            "                       [--samples N] [--seed S] [--timeout-ms MS] [--tol T]\n"
            "                       [--margin M]\n"
            "       ikbench two-bone [--samples N] [--seed S]\n"
            "       ikbench proto [--samples N] [--body FILE]\n"
            "       ikbench doubles [--samples N]\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v == 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* A finite number >= min. */
static int parse_double(const char *s, double min, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= min) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 1;
    }
    chain_args a = {0};
    const char *body = NULL, *tips = NULL, *centre = NULL, *spheres = NULL, *pos_tips = NULL;
    double margin = 0.0;
    size_t phases = 12;
    bool samples_given = false, unseeded = false;
    a.samples = 2000;
    a.seed = 1;
    a.timeout_ms = 5.0;
    a.tol = 1e-5;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(k, "--verbose") == 0) {
            a.verbose = 1;
            continue;
        }
        if (strcmp(k, "--unseeded") == 0) {
            unseeded = true;
            continue;
        }
        if (!v) {
            usage();
            return 1;
        }
        if (strcmp(k, "--urdf") == 0)
            a.urdf = v;
        else if (strcmp(k, "--base") == 0)
            a.base = v;
        else if (strcmp(k, "--tip") == 0)
            a.tip = v;
        else if (strcmp(k, "--tips") == 0)
            tips = v;
        else if (strcmp(k, "--position-tips") == 0)
            pos_tips = v;
        else if (strcmp(k, "--targets") == 0)
            a.targets = v;
        else if (strcmp(k, "--body") == 0)
            body = v;
        else if (strcmp(k, "--centre") == 0)
            centre = v;
        else if (strcmp(k, "--spheres") == 0)
            spheres = v;
        else if (strcmp(k, "--margin") == 0)
            bad = parse_double(v, 0.0, &margin);
        else if (strcmp(k, "--phases") == 0)
            bad = parse_size(v, &phases);
        else if (strcmp(k, "--samples") == 0) {
            bad = parse_size(v, &a.samples);
            samples_given = true;
        }
        else if (strcmp(k, "--seed") == 0) {
            size_t s;
            bad = parse_size(v, &s);
            a.seed = s;
        } else if (strcmp(k, "--timeout-ms") == 0)
            bad = parse_double(v, 0.0, &a.timeout_ms);
        else if (strcmp(k, "--max-iterations") == 0)
            bad = parse_size(v, &a.max_iterations);
        else if (strcmp(k, "--tol") == 0)
            bad = parse_double(v, 1e-300, &a.tol);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "ikbench: bad option %s %s\n", k, v);
            return 1;
        }
        i++;
    }
    if (strcmp(argv[1], "chain") == 0) {
        if (!(a.urdf && a.base && a.tip) || (a.timeout_ms == 0.0 && a.max_iterations == 0)) {
            usage();
            return 1;
        }
        return run_chain(&a);
    }
    if (strcmp(argv[1], "closed") == 0) {
        if (!(a.urdf && a.base && a.tip) || (a.timeout_ms == 0.0 && a.max_iterations == 0)) {
            usage();
            return 1;
        }
        return run_closed(&a);
    }
    if (strcmp(argv[1], "tree") == 0) {
        if (!(a.urdf && a.base && tips) || (a.timeout_ms == 0.0 && a.max_iterations == 0)) {
            usage();
            return 1;
        }
        return run_tree(&a, tips, pos_tips);
    }
    if (strcmp(argv[1], "stream") == 0) {
        if (!(a.urdf && a.base && a.tip) || (a.timeout_ms == 0.0 && a.max_iterations == 0)) {
            usage();
            return 1;
        }
        return run_stream(&a, centre, phases, samples_given ? a.samples : 300, unseeded);
    }
    if (strcmp(argv[1], "priority") == 0) {
        if (!(a.urdf && a.base && tips) || (a.timeout_ms == 0.0 && a.max_iterations == 0)) {
            usage();
            return 1;
        }
        return run_priority(&a, tips);
    }
    if (strcmp(argv[1], "snake") == 0) {
        if (a.timeout_ms == 0.0 && a.max_iterations == 0) {
            usage();
            return 1;
        }
        return run_snake(&a);
    }
    if (strcmp(argv[1], "collide") == 0) {
        if (!(a.urdf && a.base && a.tip && spheres) ||
            (a.timeout_ms == 0.0 && a.max_iterations == 0)) {
            usage();
            return 1;
        }
        return run_collide(&a, spheres, margin);
    }
    if (strcmp(argv[1], "two-bone") == 0)
        return run_twobone(a.samples, a.seed);
    if (strcmp(argv[1], "proto") == 0)
        return run_proto(samples_given ? a.samples : 20000, body);
    if (strcmp(argv[1], "doubles") == 0)
        return run_doubles(samples_given ? a.samples : 200000);
    usage();
    return 1;
}
