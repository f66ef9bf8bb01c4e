/*
 * oracle.h: the reference encoders of answers, for the tests that check
 * ikd's one encoder of each answer form (proto/proto_job_encode.c,
 * proto/proto_stream.c) byte for byte: a result built as a jansson tree the
 * way proto/README.md ("Responses") specifies it, the whole answer around
 * it, and a stream's solution message around a result tree. They are
 * written independently of the encoders (a tree, printed by
 * proto_json_dump or jansson) and share with them only what a result
 * means: its outcome (proto__result_outcome: status word, MoveIt code,
 * reason, whether the pose is answered) and the conversions back to the
 * caller's frame and units. Used by tests/proto/test_proto_encode.c,
 * tests/proto/test_stream.c and tests/fuzz/fuzz_diff.c; static functions
 * only, so that any test may include it. Also the reference of the
 * canonical text ids are the hash of (proto_id.c): jansson's own, for
 * tests/proto/test_proto_json.c and tests/fuzz/fuzz_json.c.
 */
#ifndef IKD_TESTS_ORACLE_H
#define IKD_TESTS_ORACLE_H

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_kind.h"
#include "proto/proto_scene.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"

/* The canonical text of v as jansson writes it: every integer made the
 * real it converts to, keys sorted, compact, 17 significant digits
 * (proto__canonical_text must give the same bytes). A new string, or NULL
 * when memory ran out. */
static json_t *oracle_ints_as_reals(const json_t *v)
{
    const char *key;
    json_t *x, *out;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        return json_real((double)json_integer_value(v));
    case JSON_OBJECT:
        out = json_object();
        json_object_foreach((json_t *)v, key, x)
            json_object_set_new_nocheck(out, key, oracle_ints_as_reals(x));
        return out;
    case JSON_ARRAY:
        out = json_array();
        json_array_foreach(v, i, x) json_array_append_new(out, oracle_ints_as_reals(x));
        return out;
    default:
        return json_deep_copy(v);
    }
}

static inline char *oracle_canonical_text(const json_t *v)
{
    json_t *r = oracle_ints_as_reals(v);
    char *s = r ? json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) |
                                    JSON_ENCODE_ANY)
                : NULL;
    json_decref(r);
    return s;
}

/* Whether result members of field f (PROTO_FIELD bits) are answered. */
static inline bool oracle_want(const proto_job *job, unsigned f)
{
    return !(job->opt.omit & f);
}

/* A real as the answer holds it: rounded to options.digits. */
static inline json_t *oracle_real(const proto_job *job, double v)
{
    return json_real(proto_json_round_digits(v, job->opt.digits));
}

static inline json_t *oracle_reals(const proto_job *job, const double *d, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, oracle_real(job, d[i]));
    return a;
}

static inline json_t *oracle_vec(const proto_job *job, ik_vec3 v, bool dims2)
{
    double d[3] = {v.x, v.y, v.z};
    return oracle_reals(job, d, dims2 ? 2 : 3);
}

static inline json_t *oracle_quat(const proto_job *job, ik_quat q)
{
    double d[4] = {q.x, q.y, q.z, q.w};
    return oracle_reals(job, d, 4);
}

/* A tree's tip is answered success when it is on its target, else with
 * the answer's own failure (no_ik_solution when the answer as a whole
 * succeeded nonetheless). */
static inline int oracle_tip_status(const proto_result *r, const proto_tip_result *tr)
{
    if (tr->reached)
        return IK_OK;
    return r->status == IK_OK ? IK_ENOTCONV : r->status;
}

/* The result of target i as the object the answers contain (new
 * reference). */
static inline json_t *oracle_result_json(const proto_job *job, size_t i)
{
    const proto_result *r = proto__result(job, i);
    const proto_chain *c = job->chain;
    proto_frame f = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    proto__outcome oc;
    proto__result_outcome(job, i, &oc);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "status", json_string(oc.word));
    if (oracle_want(job, PROTO_FIELD(CODE)))
        json_object_set_new(o, "code", json_integer(oc.code));
    if (oracle_want(job, PROTO_FIELD(REASON)))
        json_object_set_new(o, "reason", json_string(oc.reason));
    bool valid = oc.pose;
    if (valid && r->cause != IK_REASON_NONE && oracle_want(job, PROTO_FIELD(CAUSE)))
        json_object_set_new(o, "cause", json_string(ik_reason_name(r->cause)));
    if (valid && job->dof && oracle_want(job, PROTO_FIELD(JOINTS))) {
        json_t *a = json_array();
        for (size_t k = 0; k < job->dof; k++) {
            bool ang = proto__answer_angle(c, k);
            json_array_append_new(a, oracle_real(job, ang ? proto_angle_out(u, r->q[k]) : r->q[k]));
        }
        json_object_set_new(o, "joints", a);
    }
    if (valid && job->npos && oracle_want(job, PROTO_FIELD(POSITIONS))) {
        json_t *a = json_array();
        for (size_t k = 0; k < job->npos; k++)
            json_array_append_new(a, oracle_vec(job, proto_frame_vec_out(f, r->positions[k]),
                                              job->dims2));
        json_object_set_new(o, "positions", a);
    }
    if (valid && job->nrot) {
        bool skel = c->skel != NULL; /* skeletons and trees of bones: local rotations */
        json_t *a = oracle_want(job, PROTO_FIELD(ROTATIONS)) ? json_array() : NULL;
        json_t *l = !skel && oracle_want(job, PROTO_FIELD(LOCAL_ROTATIONS)) ? json_array() : NULL;
        for (size_t k = 0; k < job->nrot; k++) {
            if (a)
                json_array_append_new(
                    a, oracle_quat(job, proto_frame_quat_out(f, skel ? r->local[k] : r->rotations[k])));
            if (l)
                json_array_append_new(l, oracle_quat(job, proto_frame_quat_out(f, r->local[k])));
        }
        if (a)
            json_object_set_new(o, "rotations", a);
        if (l)
            json_object_set_new(o, "local_rotations", l);
    }
    if (valid && r->has_tip && oracle_want(job, PROTO_FIELD(TIP))) {
        ik_xform t = proto_frame_xform_out(f, r->tip);
        json_t *tip = json_object();
        json_object_set_new(tip, "position", oracle_vec(job, t.p, job->dims2));
        if (!job->dims2)
            json_object_set_new(tip, "orientation", oracle_quat(job, t.q));
        json_object_set_new(o, "tip", tip);
    }
    if (valid && job->ntips && oracle_want(job, PROTO_FIELD(TIPS))) {
        json_t *a = json_array();
        for (size_t k = 0; k < job->ntips; k++) {
            const proto_tip_result *tr = &r->tips[k];
            ik_xform t = proto_frame_xform_out(f, tr->pose);
            json_t *tip = json_object();
            if (tr->checked) {
                const char *w;
                int code = proto__moveit(oracle_tip_status(r, tr), &w);
                json_object_set_new(tip, "status", json_string(w));
                json_object_set_new(tip, "code", json_integer(code));
            }
            json_object_set_new(tip, "position", oracle_vec(job, t.p, false));
            json_object_set_new(tip, "orientation", oracle_quat(job, t.q));
            if (tr->checked) {
                json_object_set_new(tip, "position_error", oracle_real(job, tr->pos_err));
                if (tr->rot_err >= 0)
                    json_object_set_new(tip, "orientation_error",
                                        oracle_real(job, proto_angle_out(u, tr->rot_err)));
            }
            json_array_append_new(a, tip);
        }
        json_object_set_new(o, "tips", a);
    }
    if (valid) {
        if (oracle_want(job, PROTO_FIELD(POSITION_ERROR)))
            json_object_set_new(o, "position_error", oracle_real(job, r->pos_err));
        if (r->rot_err >= 0 && oracle_want(job, PROTO_FIELD(ORIENTATION_ERROR)))
            json_object_set_new(o, "orientation_error",
                                oracle_real(job, proto_angle_out(u, r->rot_err)));
        if (r->has_step && oracle_want(job, PROTO_FIELD(MAX_JOINT_STEP)))
            json_object_set_new(o, "max_joint_step", oracle_real(job, proto__answer_step(job, r)));
        if (r->servo >= 0 && oracle_want(job, PROTO_FIELD(ARRIVED)))
            json_object_set_new(o, "arrived", json_boolean(r->servo == 1));
        if (job->sol_cap && oracle_want(job, PROTO_FIELD(SOLUTIONS))) {
            json_t *a = json_array();
            for (size_t s = 0; s < r->nall; s++) {
                json_t *row = json_array();
                for (size_t k = 0; k < job->dof; k++) {
                    double v = r->all[s * job->dof + k];
                    json_array_append_new(
                        row, oracle_real(job, proto__answer_angle(c, k) ? proto_angle_out(u, v) : v));
                }
                json_array_append_new(a, row);
            }
            json_object_set_new(o, "solutions", a);
        }
        if (job->sol_cap && oracle_want(job, PROTO_FIELD(SOLUTION_COUNT)))
            json_object_set_new(o, "solution_count", json_integer((json_int_t)r->total));
    }
    if (oracle_want(job, PROTO_FIELD(ITERATIONS)))
        json_object_set_new(o, "iterations", json_integer((json_int_t)r->iterations));
    if (oracle_want(job, PROTO_FIELD(RESTARTS)))
        json_object_set_new(o, "restarts", json_integer((json_int_t)r->restarts));
    if (oracle_want(job, PROTO_FIELD(TIME_MS)))
        json_object_set_new(o, "time_ms", oracle_real(job, oc.time_ms));
    /* collisions (README "Collisions"): the distance whenever the chain
     * has a model, the pair when the answer is in collision */
    if (valid && r->has_distance) {
        if (oracle_want(job, PROTO_FIELD(MIN_DISTANCE)))
            json_object_set_new(o, "min_distance", isfinite(r->min_distance)
                                                       ? oracle_real(job, r->min_distance)
                                                       : json_null());
        const ik_collide_pair *p = &r->closest;
        if (oracle_want(job, PROTO_FIELD(CLOSEST)) && p->link >= 0 && isfinite(p->distance) &&
            (r->status == IK_ECOLLISION || p->distance < job->opt.collision_margin)) {
            json_t *cp = json_object();
            json_object_set_new(cp, "link", json_string(proto__collide_link_name(c, p->link)));
            if (p->other_link >= 0) {
                json_object_set_new(cp, "other_link",
                                    json_string(proto__collide_link_name(c, p->other_link)));
            } else {
                char name[PROTO_SCENE_NAME_MAX + 24];
                proto_scene_obstacle_name(job->scene, p->obstacle, name, sizeof name);
                json_object_set_new(cp, "obstacle", json_string(name));
            }
            json_object_set_new(cp, "distance", oracle_real(job, p->distance));
            json_object_set_new(o, "closest", cp);
        }
    }
    return o;
}

/* The whole answer of job (after it ran) as a tree: the chain members,
 * then a solve's result members, or a batch's count, results and counts
 * (counted by the status word each result is answered with). */
static inline json_t *oracle_tree(const proto_job *job)
{
    const proto_chain *c = job->chain;
    json_t *o = json_object();
    json_object_set_new(o, "chain_id", json_string(proto_chain_id(c)));
    json_object_set_new(o, "solver", json_string(proto_solver_names[job->solver]));
    json_object_set_new(o, "units", json_string(proto_units_names[job->opt.units]));
    if (!job->dims2)
        json_object_set_new(o, "frame", json_string(proto_frame_names[job->opt.frame]));
    if (c->kind == PROTO_CHAIN_LINKS3D) {
        json_object_set_new(o, "joint_names",
                            json_pack("[s,s,s,s,s]", "yaw", "theta0", "theta1", "theta2", "roll"));
    } else if (c->names) {
        json_t *a = json_array();
        for (size_t i = 0; i < c->nnames; i++)
            json_array_append_new(a, json_string(c->names[i]));
        json_object_set_new(o, c->skel ? "bone_names" : "joint_names", a);
    }
    if (c->tip_names) {
        json_t *a = json_array();
        for (size_t i = 0; i < c->tree->ntips; i++)
            json_array_append_new(a, json_string(c->tip_names[i]));
        json_object_set_new(o, "tip_names", a);
    }
    if (job->kind == PROTO_SOLVE) {
        json_t *r = oracle_result_json(job, 0);
        if (!r || json_object_update(o, r))
            abort();
        json_decref(r);
    } else {
        json_t *res = json_array();
        json_int_t counts[4] = {0, 0, 0, 0};
        for (size_t i = 0; i < job->n; i++) {
            json_t *r = oracle_result_json(job, i);
            const char *w = json_string_value(json_object_get(r, "status"));
            counts[strcmp(w, "success") == 0          ? 0
                   : strcmp(w, "no_ik_solution") == 0 ? 1
                   : strcmp(w, "timed_out") == 0      ? 2
                                                      : 3]++;
            json_array_append_new(res, r);
        }
        /* counts after the results, so that an answer can be written out
         * as its results are solved */
        json_object_set_new(o, "count", json_integer((json_int_t)job->n));
        json_object_set_new(o, "results", res);
        json_object_set_new(o, "counts",
                            json_pack("{s:I, s:I, s:I, s:I}", "success", counts[0],
                                      "no_ik_solution", counts[1], "timed_out", counts[2],
                                      "other", counts[3]));
    }
    return o;
}

/* A stream's solution message around a result tree (NULL: null), as
 * proto/STREAM.md gives it: malloc'd text, *len its length. */
static inline char *oracle_stream_solution(const char *stream, long long seq, size_t skipped,
                                           const json_t *result, size_t index, size_t count,
                                           size_t *len)
{
    json_t *m = json_pack("{s:s, s:s, s:I, s:I}", "type", "solution", "stream", stream, "seq",
                          (json_int_t)seq, "skipped", (json_int_t)skipped);
    if (count > 0) {
        json_object_set_new(m, "index", json_integer((json_int_t)index));
        json_object_set_new(m, "count", json_integer((json_int_t)count));
    }
    json_object_set(m, "result", result ? (json_t *)result : json_null());
    char *s = proto_json_dump(m);
    json_decref(m);
    if (s && len)
        *len = strlen(s);
    return s;
}

#endif /* IKD_TESTS_ORACLE_H */
