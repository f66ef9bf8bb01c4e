/*
 * proto_job_encode.c: the one JSON encoder of a job's answers: the whole
 * response body written directly from the job (proto_job_encode, and a
 * batch's in pieces), each result's members in PROTO_FIELD_MAP's order,
 * with the status words and MoveIt codes every result is answered with
 * (proto_job_result_json gives a result as a tree: this text, read back).
 * Encoding converts back to the caller's frame and units. Contract in
 * proto.h; the JSON in proto/README.md, section "Responses". The
 * reference encoder the tests compare it with, byte for byte, builds a
 * jansson tree (tests/proto/oracle.h).
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"

/* True when value k of an answer's "joints" is an angle (so options.units
 * applies): all of them but a prismatic joint's. */
bool proto__answer_angle(const proto_chain *c, size_t k)
{
    return (!c->chain && !c->tree) || c->kind == PROTO_CHAIN_PLANAR || proto__angular_joint(c, k);
}

/* ---- encoding --------------------------------------------------------- */

/* How each solver status is answered: the status word and MoveIt's code
 * (moveit_msgs/MoveItErrorCodes, whose constant is the word in capitals;
 * tests/proto/test_proto_job.c pins every row against MoveIt's list). */
#define PROTO_MOVEIT_MAP(XX)                                                                       \
    XX(IK_OK, "success", 1)                                                                        \
    XX(IK_EUNREACHABLE, "no_ik_solution", -31)                                                     \
    XX(IK_ENOTCONV, "no_ik_solution", -31)                                                         \
    XX(IK_ELIMITS, "no_ik_solution", -31)                                                          \
    XX(IK_ESTEP, "no_ik_solution", -31)                                                            \
    XX(IK_ECOLLISION, "no_ik_solution", -31)                                                       \
    XX(IK_ETIMEDOUT, "timed_out", -6)                                                              \
    XX(IK_EINVAL, "invalid_goal_constraints", -16)

int proto__moveit(int st, const char **word)
{
    switch (st) {
#define PROTO__MOVEIT_CASE(status, w, code)                                                        \
    case status:                                                                                   \
        *word = w;                                                                                 \
        return code;
        PROTO_MOVEIT_MAP(PROTO__MOVEIT_CASE)
#undef PROTO__MOVEIT_CASE
    }
    *word = "failure"; /* MoveIt's FAILURE */
    return 99999;
}

/* True when every number of result r is finite and at most 1e300 in
 * magnitude, as the solvers give them: then no conversion an answer makes
 * (a frame's permutation with signs, radians to degrees, seconds to
 * milliseconds) can make one non-finite, and non_finite_member() need not
 * convert them to look. Tree answers and answers with all solutions are
 * always looked at. */
static bool plainly_finite(const proto_job *job, const proto_result *r)
{
    /* (every comparison with a NaN is false) */
    bool ok = job->ntips == 0 && job->sol_cap == 0 && fabs(r->pos_err) <= 1e300 &&
              fabs(r->time_s) <= 1e300 && (r->rot_err < 0 || r->rot_err <= 1e300);
    for (size_t k = 0; ok && k < job->dof; k++)
        ok = fabs(r->q[k]) <= 1e300;
    for (size_t k = 0; ok && k < job->npos; k++) {
        ik_vec3 v = r->positions[k];
        ok = fabs(v.x) <= 1e300 && fabs(v.y) <= 1e300 && fabs(v.z) <= 1e300;
    }
    for (size_t k = 0; ok && k < job->nrot; k++) {
        ik_quat a = r->rotations[k], b = r->local[k];
        ok = fabs(a.x) <= 1e300 && fabs(a.y) <= 1e300 && fabs(a.z) <= 1e300 &&
             fabs(a.w) <= 1e300 && fabs(b.x) <= 1e300 && fabs(b.y) <= 1e300 &&
             fabs(b.z) <= 1e300 && fabs(b.w) <= 1e300;
    }
    if (ok && r->has_tip) {
        double t[7] = {r->tip.p.x, r->tip.p.y, r->tip.p.z, r->tip.q.x,
                       r->tip.q.y, r->tip.q.z, r->tip.q.w};
        for (int k = 0; ok && k < 7; k++)
            ok = fabs(t[k]) <= 1e300;
    }
    return ok;
}

/* The member of result i that would hold a non-finite number, in the order
 * the answer lists them, or NULL. The values are checked as they would be
 * printed (after the conversion to the caller's units and frame). */
static const char *non_finite_member(const proto_job *job, size_t i)
{
    const proto_result *r = proto__result(job, i);
    if (plainly_finite(job, r))
        return NULL;
    const proto_chain *c = job->chain;
    proto_frame f = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    bool skel = c->skel != NULL; /* skeletons and trees of bones: local rotations */
    for (size_t k = 0; k < job->dof; k++) {
        bool ang = proto__answer_angle(c, k);
        if (!isfinite(ang ? proto_angle_out(u, r->q[k]) : r->q[k]))
            return "joints";
    }
    for (size_t k = 0; k < job->npos; k++)
        if (!ik_vec3_isfinite(proto_frame_vec_out(f, r->positions[k])))
            return "positions";
    for (size_t k = 0; k < job->nrot; k++)
        if (!ik_quat_isfinite(proto_frame_quat_out(f, skel ? r->local[k] : r->rotations[k])))
            return "rotations";
    for (size_t k = 0; !skel && k < job->nrot; k++)
        if (!ik_quat_isfinite(proto_frame_quat_out(f, r->local[k])))
            return "local_rotations";
    if (r->has_tip) {
        ik_xform t = proto_frame_xform_out(f, r->tip);
        if (!ik_vec3_isfinite(t.p) || !ik_quat_isfinite(t.q))
            return "tip";
    }
    for (size_t k = 0; k < job->ntips; k++) {
        const proto_tip_result *tr = &r->tips[k];
        ik_xform t = proto_frame_xform_out(f, tr->pose);
        if (!ik_vec3_isfinite(t.p) || !ik_quat_isfinite(t.q) ||
            (tr->checked && !isfinite(tr->pos_err)) ||
            (tr->checked && !(tr->rot_err < 0) && !isfinite(proto_angle_out(u, tr->rot_err))))
            return "tips";
    }
    for (size_t k = 0; k < r->nall * job->dof; k++)
        if (!isfinite(proto__answer_angle(c, k % job->dof) ? proto_angle_out(u, r->all[k]) : r->all[k]))
            return "solutions";
    if (!isfinite(r->pos_err))
        return "position_error";
    if (!(r->rot_err < 0) && !isfinite(proto_angle_out(u, r->rot_err)))
        return "orientation_error";
    if (!isfinite(r->time_s * 1e3))
        return "time_ms";
    return NULL;
}

/* How result i is answered: the status word, MoveIt's code, the reason and
 * whether the pose members (joints, positions, rotations, tip, errors) are
 * printed. The solvers promise finite answers; a result that holds a
 * non-finite number anyway is answered as a failure (MoveIt's FAILURE)
 * whose reason names the member, "non_finite_<member>" (reason points into
 * a buffer of PROTO_REASON_MAX), rather than with the number left out. */
void proto__result_outcome(const proto_job *job, size_t i, proto__outcome *o)
{
    proto_result *r = proto__result(job, i);
    o->code = proto__moveit(r->status, &o->word);
    o->reason = ik_status_name(r->status);
    o->pose = r->status != IK_EINVAL && r->status != IK_ENOSPC;
    o->time_ms = isfinite(r->time_s * 1e3) ? r->time_s * 1e3 : 0.0;
    const char *bad = o->pose ? non_finite_member(job, i)
                              : isfinite(r->time_s * 1e3) ? NULL
                                                          : "time_ms";
    if (bad) {
        o->word = "failure", o->code = 99999; /* MoveIt's FAILURE */
        snprintf(o->buf, sizeof o->buf, "non_finite_%s", bad);
        o->reason = o->buf;
        o->pose = false;
    }
    r->answered = o->word;
}

/* The word noted when the result was answered (the daemon records its
 * metrics after encoding where it can: a batch's chunk, a single solve),
 * else worked out here. */
const char *proto_job_status(const proto_job *job, size_t i)
{
    const proto_result *r = proto__result(job, i);
    if (r->answered)
        return r->answered;
    proto__outcome oc;
    proto__result_outcome(job, i, &oc);
    return oc.word;
}

/* The answer's "max_joint_step": the largest joint motion from the seed,
 * angles in options.units, prismatic joints in length units. */
double proto__answer_step(const proto_job *job, const proto_result *r)
{
    double a = proto_angle_out(job->opt.units, r->step_ang);
    return a > r->step_lin ? a : r->step_lin;
}

/* The solver status a tree's tip is answered with: success when it is on
 * its target, else the answer's own failure (no_ik_solution when the
 * answer as a whole succeeded nonetheless, which it cannot). */
static int tip_status(const proto_result *r, const proto_tip_result *tr)
{
    if (tr->reached)
        return IK_OK;
    return r->status == IK_OK ? IK_ENOTCONV : r->status;
}

/* Whether result members of field f (PROTO_FIELD bits) are answered. */
static bool want(const proto_job *job, unsigned f)
{
    return !(job->opt.omit & f);
}

json_t *proto_job_result_json(const proto_job *job, size_t i)
{
    /* the answer's own text, read back: the one encoder's, as a tree */
    char buf[2048];
    proto_jw w;
    proto_jw_init(&w, buf, sizeof buf);
    proto__job_result_write(&w, job, i);
    json_t *v = w.oom ? NULL : json_loadb(w.p, w.len, 0, NULL);
    proto_jw_release(&w);
    return v;
}

/* ---- direct encoding -------------------------------------------------- */

/* proto_job_encode() writes the answer straight into one buffer sized from
 * the job, without building a jansson tree: the text is byte for byte what
 * jansson gives for the tree the reference encoder builds
 * (tests/proto/oracle.h; same keys in the same order, reals read back bit
 * for bit), which tests/proto/test_proto_encode.c and
 * tests/fuzz/fuzz_diff.c check. It never prints a non-finite real (which
 * JSON cannot hold): result_outcome() answers a result holding one as a
 * failure without its pose members. */

#define KEY(w, k) proto_jw_raw(w, "\"" k "\":", sizeof(k) + 2)

/* ",\"key\":" or "\"key\":" for the first member, from sk = ",\"key\":" (n
 * bytes): one copy of a constant, as it runs for every member of every
 * answer. */
static inline void key_sep(proto_jw *w, bool *first, const char *sk, size_t n)
{
    if (*first)
        proto_jw_raw(w, sk + 1, n - 1);
    else
        proto_jw_raw(w, sk, n);
    *first = false;
}
#define MEMBER(w, first, k) key_sep(w, first, ",\"" k "\":", sizeof(k) + 3)

/* A word of ikd's own tables (a status, reason, solver, unit or frame
 * name, a chain id's hex digits) as a JSON string: such words hold no
 * character JSON escapes (tests/proto/test_proto_job.c compares every
 * answer with jansson's text), so they are copied without the scan
 * proto_jw_string makes of names that come from clients. */
static void put_word(proto_jw *w, const char *s)
{
    size_t n = strlen(s);
    if (w->len + n + 3 > w->cap && proto_jw_reserve(w, n + 2))
        return;
    w->p[w->len] = '"';
    memcpy(w->p + w->len + 1, s, n);
    w->p[w->len + 1 + n] = '"';
    w->len += n + 2;
}

/* n reals (finite: result_outcome() checked them) as an array, at
 * options.digits. */
static void put_reals(proto_jw *w, const double *d, size_t n, int digits)
{
    proto_jw_raw(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            proto_jw_raw(w, ",", 1);
        proto_jw_double_digits(w, d[i], digits);
    }
    proto_jw_raw(w, "]", 1);
}

static void put_vec(proto_jw *w, ik_vec3 v, bool dims2, int digits)
{
    double d[3] = {v.x, v.y, v.z};
    put_reals(w, d, dims2 ? 2 : 3, digits);
}

static void put_quat(proto_jw *w, ik_quat q, int digits)
{
    double d[4] = {q.x, q.y, q.z, q.w};
    put_reals(w, d, 4, digits);
}

/* The last quaternions of one answer and where their text is in the
 * buffer. An answer repeats quaternions: a chain's first bone has the
 * same world and local rotation, a tip bone the rotation of the bone
 * before it. The same bits give the same text, so a repeat is copied
 * rather than formatted again. */
#define QUAT_MEMO 4
typedef struct quat_memo {
    ik_quat q[QUAT_MEMO];
    size_t off[QUAT_MEMO], len[QUAT_MEMO];
    unsigned n;
} quat_memo;

static void put_quat_memo(proto_jw *w, quat_memo *m, ik_quat q, int digits)
{
    unsigned have = m->n < QUAT_MEMO ? m->n : QUAT_MEMO;
    for (unsigned i = 0; i < have; i++) {
        if (memcmp(&m->q[i], &q, sizeof q) != 0)
            continue;
        size_t n = m->len[i];
        if (w->len + n + 1 > w->cap && proto_jw_reserve(w, n))
            return;
        memcpy(w->p + w->len, w->p + m->off[i], n);
        w->len += n;
        return;
    }
    size_t start = w->len;
    put_quat(w, q, digits);
    unsigned k = m->n++ % QUAT_MEMO;
    m->q[k] = q;
    m->off[k] = start;
    m->len[k] = w->len - start;
}

/* A real member (finite: result_outcome() checked it). */
#define REAL_MEMBER(w, first, k, v)                                                                \
    do {                                                                                           \
        MEMBER(w, first, k);                                                                       \
        proto_jw_double_digits(w, v, dg);                                                          \
    } while (0)

/* A string member's value (link and obstacle names: any bytes, escaped). */
static void put_name(proto_jw *w, const char *s)
{
    proto_jw_string(w, s, strlen(s));
}

/* min_distance (+INFINITY, no pair checked: null), and the closest pair
 * when the answer is nearer than the margin (in collision): "closest":
 * {"link", "other_link" or "obstacle", "distance"}. */
static void put_collision(proto_jw *w, bool *first, const proto_job *job, const proto_result *r)
{
    const int dg = job->opt.digits;
    if (want(job, PROTO_FIELD(MIN_DISTANCE))) {
        MEMBER(w, first, "min_distance");
        if (isfinite(r->min_distance))
            proto_jw_double_digits(w, r->min_distance, dg);
        else
            proto_jw_raw(w, "null", 4);
    }
    const ik_collide_pair *p = &r->closest;
    if (!want(job, PROTO_FIELD(CLOSEST)) || p->link < 0 || !isfinite(p->distance) ||
        !(r->status == IK_ECOLLISION || p->distance < job->opt.collision_margin))
        return;
    MEMBER(w, first, "closest");
    proto_jw_raw(w, "{", 1);
    KEY(w, "link");
    put_name(w, proto__collide_link_name(job->chain, p->link));
    if (p->other_link >= 0) {
        proto_jw_raw(w, ",", 1);
        KEY(w, "other_link");
        put_name(w, proto__collide_link_name(job->chain, p->other_link));
    } else {
        char name[PROTO_SCENE_NAME_MAX + 24];
        proto_scene_obstacle_name(job->scene, p->obstacle, name, sizeof name);
        proto_jw_raw(w, ",", 1);
        KEY(w, "obstacle");
        put_name(w, name);
    }
    proto_jw_raw(w, ",", 1);
    KEY(w, "distance");
    proto_jw_double_digits(w, p->distance, dg);
    proto_jw_raw(w, "}", 1);
}

/* The members of proto_job_result_json(job, i), without the braces;
 * returns the MoveIt code the result is answered with. */
static int put_result_members(proto_jw *w, bool *first, const proto_job *job, size_t i)
{
    const proto_result *r = proto__result(job, i);
    const proto_chain *c = job->chain;
    proto_frame f = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    const int dg = job->opt.digits;
    quat_memo qm;
    qm.n = 0;
    proto__outcome oc;
    proto__result_outcome(job, i, &oc);
    MEMBER(w, first, "status");
    put_word(w, oc.word);
    if (want(job, PROTO_FIELD(CODE))) {
        MEMBER(w, first, "code");
        proto_jw_integer(w, oc.code);
    }
    if (want(job, PROTO_FIELD(REASON))) {
        MEMBER(w, first, "reason");
        put_word(w, oc.reason);
    }
    bool valid = oc.pose;
    if (valid && r->cause != IK_REASON_NONE && want(job, PROTO_FIELD(CAUSE))) {
        const char *cn = ik_reason_name(r->cause);
        MEMBER(w, first, "cause");
        put_word(w, cn);
    }
    if (valid && job->dof && want(job, PROTO_FIELD(JOINTS))) {
        MEMBER(w, first, "joints");
        proto_jw_raw(w, "[", 1);
        for (size_t k = 0; k < job->dof; k++) {
            bool ang = proto__answer_angle(c, k);
            if (k)
                proto_jw_raw(w, ",", 1);
            proto_jw_double_digits(w, ang ? proto_angle_out(u, r->q[k]) : r->q[k], dg);
        }
        proto_jw_raw(w, "]", 1);
    }
    if (valid && job->npos && want(job, PROTO_FIELD(POSITIONS))) {
        MEMBER(w, first, "positions");
        proto_jw_raw(w, "[", 1);
        for (size_t k = 0; k < job->npos; k++) {
            if (k)
                proto_jw_raw(w, ",", 1);
            put_vec(w, proto_frame_vec_out(f, r->positions[k]), job->dims2, dg);
        }
        proto_jw_raw(w, "]", 1);
    }
    if (valid && job->nrot) {
        bool skel = c->skel != NULL; /* skeletons and trees of bones: local rotations */
        if (want(job, PROTO_FIELD(ROTATIONS))) {
            MEMBER(w, first, "rotations");
            proto_jw_raw(w, "[", 1);
            for (size_t k = 0; k < job->nrot; k++) {
                if (k)
                    proto_jw_raw(w, ",", 1);
                put_quat_memo(w, &qm, proto_frame_quat_out(f, skel ? r->local[k] : r->rotations[k]),
                              dg);
            }
            proto_jw_raw(w, "]", 1);
        }
        if (!skel && want(job, PROTO_FIELD(LOCAL_ROTATIONS))) {
            MEMBER(w, first, "local_rotations");
            proto_jw_raw(w, "[", 1);
            for (size_t k = 0; k < job->nrot; k++) {
                if (k)
                    proto_jw_raw(w, ",", 1);
                put_quat_memo(w, &qm, proto_frame_quat_out(f, r->local[k]), dg);
            }
            proto_jw_raw(w, "]", 1);
        }
    }
    if (valid && r->has_tip && want(job, PROTO_FIELD(TIP))) {
        ik_xform t = proto_frame_xform_out(f, r->tip);
        MEMBER(w, first, "tip");
        proto_jw_raw(w, "{", 1);
        KEY(w, "position");
        put_vec(w, t.p, job->dims2, dg);
        if (!job->dims2) {
            proto_jw_raw(w, ",", 1);
            KEY(w, "orientation");
            put_quat(w, t.q, dg);
        }
        proto_jw_raw(w, "}", 1);
    }
    if (valid && job->ntips && want(job, PROTO_FIELD(TIPS))) {
        MEMBER(w, first, "tips");
        proto_jw_raw(w, "[", 1);
        for (size_t k = 0; k < job->ntips; k++) {
            const proto_tip_result *tr = &r->tips[k];
            ik_xform t = proto_frame_xform_out(f, tr->pose);
            bool f1 = true;
            if (k)
                proto_jw_raw(w, ",", 1);
            proto_jw_raw(w, "{", 1);
            if (tr->checked) {
                const char *word;
                int code = proto__moveit(tip_status(r, tr), &word);
                MEMBER(w, &f1, "status");
                put_word(w, word);
                MEMBER(w, &f1, "code");
                proto_jw_integer(w, code);
            }
            MEMBER(w, &f1, "position");
            put_vec(w, t.p, false, dg);
            MEMBER(w, &f1, "orientation");
            put_quat(w, t.q, dg);
            if (tr->checked) {
                REAL_MEMBER(w, &f1, "position_error", tr->pos_err);
                if (tr->rot_err >= 0)
                    REAL_MEMBER(w, &f1, "orientation_error", proto_angle_out(u, tr->rot_err));
            }
            proto_jw_raw(w, "}", 1);
        }
        proto_jw_raw(w, "]", 1);
    }
    if (valid) {
        if (want(job, PROTO_FIELD(POSITION_ERROR)))
            REAL_MEMBER(w, first, "position_error", r->pos_err);
        if (r->rot_err >= 0 && want(job, PROTO_FIELD(ORIENTATION_ERROR)))
            REAL_MEMBER(w, first, "orientation_error", proto_angle_out(u, r->rot_err));
        if (r->has_step && want(job, PROTO_FIELD(MAX_JOINT_STEP)))
            REAL_MEMBER(w, first, "max_joint_step", proto__answer_step(job, r));
        if (r->servo >= 0 && want(job, PROTO_FIELD(ARRIVED))) {
            MEMBER(w, first, "arrived");
            if (r->servo == 1)
                proto_jw_raw(w, "true", 4);
            else
                proto_jw_raw(w, "false", 5);
        }
        if (job->sol_cap && want(job, PROTO_FIELD(SOLUTIONS))) {
            MEMBER(w, first, "solutions");
            proto_jw_raw(w, "[", 1);
            for (size_t s = 0; s < r->nall; s++) {
                if (s)
                    proto_jw_raw(w, ",", 1);
                proto_jw_raw(w, "[", 1);
                for (size_t k = 0; k < job->dof; k++) {
                    double v = r->all[s * job->dof + k];
                    if (k)
                        proto_jw_raw(w, ",", 1);
                    proto_jw_double_digits(w, proto__answer_angle(c, k) ? proto_angle_out(u, v) : v, dg);
                }
                proto_jw_raw(w, "]", 1);
            }
            proto_jw_raw(w, "]", 1);
        }
        if (job->sol_cap && want(job, PROTO_FIELD(SOLUTION_COUNT))) {
            MEMBER(w, first, "solution_count");
            proto_jw_integer(w, (json_int_t)r->total);
        }
    }
    if (want(job, PROTO_FIELD(ITERATIONS))) {
        MEMBER(w, first, "iterations");
        proto_jw_integer(w, (json_int_t)r->iterations);
    }
    if (want(job, PROTO_FIELD(RESTARTS))) {
        MEMBER(w, first, "restarts");
        proto_jw_integer(w, (json_int_t)r->restarts);
    }
    if (want(job, PROTO_FIELD(TIME_MS)))
        REAL_MEMBER(w, first, "time_ms", oc.time_ms);
    if (valid && r->has_distance)
        put_collision(w, first, job, r);
    return oc.code;
}

int proto__job_result_write(proto_jw *w, const proto_job *job, size_t i)
{
    bool first = true;
    proto_jw_raw(w, "{", 1);
    int code = put_result_members(w, &first, job, i);
    proto_jw_raw(w, "}", 1);
    return code;
}

size_t proto_job_result_bytes(const proto_job *job)
{
    /* every real takes at most 24 characters at the shortest form (a sign,
     * 17 digits, a point, "e-308") and digits + 8 when rounded to digits,
     * plus its separator; keys, brackets and the other members take less
     * than 400 altogether */
    size_t w = (job->opt.digits ? (size_t)job->opt.digits + 8 : 24) + 1;
    size_t reals = 3; /* position_error, orientation_error, max_joint_step */
    if (want(job, PROTO_FIELD(JOINTS)))
        reals += job->dof;
    if (want(job, PROTO_FIELD(POSITIONS)))
        reals += 3 * job->npos;
    if (want(job, PROTO_FIELD(ROTATIONS)))
        reals += 4 * job->nrot;
    if (want(job, PROTO_FIELD(LOCAL_ROTATIONS)))
        reals += 4 * job->nrot;
    if (want(job, PROTO_FIELD(TIP)))
        reals += 7;
    if (want(job, PROTO_FIELD(TIME_MS)))
        reals += 1;
    if (want(job, PROTO_FIELD(SOLUTIONS)))
        reals += job->sol_cap * job->dof;
    /* a tree's tips: pose and errors, with 120 characters of keys and status */
    size_t tips = want(job, PROTO_FIELD(TIPS)) ? job->ntips : 0;
    reals += 9 * tips;
    /* collisions: min_distance and the closest pair's distance, its two
     * names (each escaped at worst six bytes a byte) and keys */
    size_t coll = job->chain->collide ? 6 * (PROTO_NAME_MAX + PROTO_SCENE_NAME_MAX + 24) + 80 : 0;
    reals += job->chain->collide ? 2 : 0;
    return 400 + coll + 120 * tips + 4 * (job->npos + 2 * job->nrot) + reals * w;
}

/* An upper estimate of the text of results [begin, end), so that the
 * buffer is allocated once. */
static size_t results_estimate(const proto_job *job, size_t begin, size_t end)
{
    return 64 + (end - begin) * proto_job_result_bytes(job);
}

/* "{" and the members of the answer before the result (a solve) or the
 * results (a batch): chain_id, solver, units, frame, the names, a tree's
 * tip names. */
static void put_chain_members(proto_jw *w, bool *first, const proto_job *job)
{
    const proto_chain *c = job->chain;
    proto_jw_raw(w, "{", 1);
    MEMBER(w, first, "chain_id");
    const char *id = proto_chain_id(c);
    put_word(w, id);
    MEMBER(w, first, "solver");
    const char *sn = proto_solver_names[job->solver];
    put_word(w, sn);
    MEMBER(w, first, "units");
    const char *un = proto_units_names[job->opt.units];
    put_word(w, un);
    if (!job->dims2) {
        MEMBER(w, first, "frame");
        const char *fn = proto_frame_names[job->opt.frame];
        put_word(w, fn);
    }
    if (c->kind == PROTO_CHAIN_LINKS3D) {
        MEMBER(w, first, "joint_names");
        static const char n5[] = "[\"yaw\",\"theta0\",\"theta1\",\"theta2\",\"roll\"]";
        proto_jw_raw(w, n5, sizeof n5 - 1);
    } else if (c->names) {
        if (c->skel) /* skeletons and trees of bones */
            MEMBER(w, first, "bone_names");
        else
            MEMBER(w, first, "joint_names");
        proto_jw_raw(w, "[", 1);
        for (size_t i = 0; i < c->nnames; i++) {
            if (i)
                proto_jw_raw(w, ",", 1);
            proto_jw_string(w, c->names[i], strlen(c->names[i]));
        }
        proto_jw_raw(w, "]", 1);
    }
    if (c->tip_names) {
        MEMBER(w, first, "tip_names");
        proto_jw_raw(w, "[", 1);
        for (size_t i = 0; i < job->ntips; i++) {
            if (i)
                proto_jw_raw(w, ",", 1);
            proto_jw_string(w, c->tip_names[i], strlen(c->tip_names[i]));
        }
        proto_jw_raw(w, "]", 1);
    }
}

/* A batch's head: the chain members, "count", then "results":[. */
static void put_batch_head(proto_jw *w, const proto_job *job)
{
    bool first = true;
    put_chain_members(w, &first, job);
    MEMBER(w, &first, "count");
    proto_jw_integer(w, (json_int_t)job->n);
    MEMBER(w, &first, "results");
    proto_jw_raw(w, "[", 1);
}

/* Results [begin, end) of a batch, each added to counts[] by the code it
 * is answered with. */
static void put_batch_results(proto_jw *w, const proto_job *job, size_t begin, size_t end,
                              size_t counts[PROTO_COUNT_BUCKETS])
{
    for (size_t i = begin; i < end; i++) {
        if (i)
            proto_jw_raw(w, ",", 1);
        counts[proto__count_bucket(proto__job_result_write(w, job, i))]++;
    }
}

void proto__counts_write(proto_jw *w, const size_t counts[PROTO_COUNT_BUCKETS], size_t n)
{
    static const char *const names[PROTO_COUNT_BUCKETS] = {"success", "no_ik_solution",
                                                           "timed_out", "other", "error"};
    proto_jw_raw(w, "],\"counts\":{", 12);
    for (size_t k = 0; k < n; k++) {
        if (k)
            proto_jw_raw(w, ",", 1);
        put_word(w, names[k]);
        proto_jw_raw(w, ":", 1);
        proto_jw_integer(w, (json_int_t)counts[k]);
    }
    proto_jw_raw(w, "}}", 2);
}

char *proto_job_encode_head(const proto_job *job, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    put_batch_head(&w, job);
    return proto_jw_finish(&w, len);
}

char *proto_job_encode_results(const proto_job *job, size_t begin, size_t end,
                               size_t counts[PROTO_COUNT_BUCKETS], size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    if (end > job->n)
        end = job->n;
    if (begin > end)
        begin = end;
    if (proto_jw_reserve(&w, results_estimate(job, begin, end)))
        return NULL;
    put_batch_results(&w, job, begin, end, counts);
    return proto_jw_finish(&w, len);
}

char *proto_job_encode_tail(const proto_job *job, const size_t counts[PROTO_COUNT_BUCKETS],
                            size_t *len)
{
    (void)job;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto__counts_write(&w, counts, 4);
    return proto_jw_finish(&w, len);
}

/* The reservation of proto_job_encode's text: its names and results. */
size_t proto_job_encode_bound(const proto_job *job)
{
    const proto_chain *c = job->chain;
    size_t names = (c->nnames + job->ntips) * (PROTO_NAME_MAX + 3) + 256;
    return names + results_estimate(job, 0, job->n);
}

char *proto_job_encode(const proto_job *job, size_t *len)
{
    /* A single solve's answer (under a kilobyte for most chains) is written
     * on the stack and copied into an allocation of its exact size: the
     * estimate's would be a large block, slower to get from malloc than
     * the copy. */
    char stack[4096];
    proto_jw w;
    proto_jw_init(&w, stack, sizeof stack);
    size_t est = proto_job_encode_bound(job);
    if (est > sizeof stack && proto_jw_reserve(&w, est))
        return NULL;
    if (job->kind == PROTO_SOLVE) {
        bool first = true;
        put_chain_members(&w, &first, job);
        put_result_members(&w, &first, job, 0);
        proto_jw_raw(&w, "}", 1);
    } else {
        size_t counts[PROTO_COUNT_BUCKETS] = {0};
        put_batch_head(&w, job);
        put_batch_results(&w, job, 0, job->n, counts);
        proto__counts_write(&w, counts, 4);
    }
    return proto_jw_finish(&w, len);
}
