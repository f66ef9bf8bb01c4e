/*
 * proto_job.c: solve and batch requests -> proto_job, and results ->
 * response bodies (contract in proto.h; the JSON is documented for clients in
 * proto/README.md, sections "Requests" and "Responses").
 *
 * Decoding is strict and complete before anything runs: the chain (inline or
 * by id), every target and seed, and the options are validated and converted
 * to ikd's internal convention (ROS frame, radians) up front, so
 * proto_job_run() cannot fail on input and any request error is reported with
 * its JSON path. Encoding converts back to the caller's frame and units.
 *
 * Memory: a job is one struct plus one block holding every per-target array
 * (targets, seeds, results and their outputs), sized from the chain and the
 * target count once decoding knows them.
 */
#include "proto/proto_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_status.h"

void proto_limits_default(proto_limits *l)
{
    l->max_body_bytes = 8u << 20;
    l->max_joints = 64;
    l->max_targets = 100000;
    l->max_iterations = 10000;
    l->max_time_ms = 1000;
    l->max_urdf_bytes = 4u << 20;
}

/* ---- targets ---------------------------------------------------------- */

static int decode_target(const json_t *v, const char *path, const proto_job *job,
                         proto_target *t, proto_error *err)
{
    static const char *const keys2[] = {"position", "up", NULL};
    static const char *const keys3[] = {"position", "orientation", "rotation", "up",
                                        "pole",     "weights",     NULL};
    proto_frame f = job->opt.frame;
    memset(t, 0, sizeof *t);
    t->orientation = ik_quat_identity();
    if (proto_json_check_object(v, path, job->dims2 ? keys2 : keys3, err))
        return -1;
    char p[PROTO_PATH_MAX];
    json_t *x = proto_json_require(v, path, "position", err);
    if (!x)
        return -1;
    proto_json_path_key(p, path, "position");
    if (job->dims2) {
        double d[2];
        if (proto_json_numbers(x, p, 2, d, err))
            return -1;
        t->position = ik_v3(d[0], d[1], 0);
        if ((x = json_object_get(v, "up"))) {
            proto_json_path_key(p, path, "up");
            if (proto_json_numbers(x, p, 2, d, err))
                return -1;
            if (!(hypot(d[0], d[1]) > 1e-12))
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                       "target.up must be a non-zero direction");
            t->has_up = true;
            t->up = ik_v3(d[0], d[1], 0);
        }
        return 0;
    }
    if (proto__vec3(x, p, &t->position, err))
        return -1;
    t->position = proto_frame_vec_in(f, t->position);
    json_t *o = json_object_get(v, "orientation"), *r = json_object_get(v, "rotation");
    if (o && r) {
        proto_json_path_key(p, path, "rotation");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "give either target.orientation or target.rotation, not both");
    }
    if (o) {
        proto_json_path_key(p, path, "orientation");
        if (proto__quat(o, p, &t->orientation, err))
            return -1;
        t->orientation = proto_frame_quat_in(f, t->orientation);
        t->has_orientation = true;
    } else if (r) {
        double m[9];
        proto_json_path_key(p, path, "rotation");
        if (proto__mat3(r, p, m, err))
            return -1;
        proto_frame_mat3_in(f, m, m);
        t->orientation = ik_quat_normalize(ik_quat_from_mat3(m));
        t->has_orientation = true;
    }
    if ((x = json_object_get(v, "up"))) {
        proto_json_path_key(p, path, "up");
        if (proto__vec3(x, p, &t->up, err))
            return -1;
        if (!(ik_vec3_len(t->up) > 1e-12))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "target.up must be a non-zero direction");
        t->up = proto_frame_vec_in(f, t->up);
        t->has_up = true;
    }
    if ((x = json_object_get(v, "pole"))) {
        proto_json_path_key(p, path, "pole");
        if (proto__vec3(x, p, &t->pole, err))
            return -1;
        t->pole = proto_frame_vec_in(f, t->pole);
        t->has_pole = true;
    }
    if ((x = json_object_get(v, "weights"))) {
        proto_json_path_key(p, path, "weights");
        double w[6];
        size_t n;
        if (proto_json_array(x, p, 6, 6, false, &n, err))
            return -1;
        bool any = false;
        for (size_t i = 0; i < 6; i++) {
            char pi[PROTO_PATH_MAX];
            proto_json_path_index(pi, p, i);
            if (proto_json_number(json_array_get(x, i), pi, 0, PROTO_MAX_ABS, &w[i], err))
                return -1;
            any |= w[i] > 0;
        }
        if (!any)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "target.weights must have at least one weight > 0");
        if ((w[3] > 0 || w[4] > 0 || w[5] > 0) && !t->has_orientation)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "rotation weights need target.orientation or target.rotation");
        /* weights follow their axes: permuted like the axes, signs dropped */
        for (int k = 0; k < 2; k++) {
            ik_vec3 cx = proto_frame_vec_in(f, ik_v3(1, 0, 0));
            ik_vec3 cy = proto_frame_vec_in(f, ik_v3(0, 1, 0));
            ik_vec3 cz = proto_frame_vec_in(f, ik_v3(0, 0, 1));
            double *s = w + 3 * k;
            t->weight[3 * k + 0] = fabs(cx.x) * s[0] + fabs(cy.x) * s[1] + fabs(cz.x) * s[2];
            t->weight[3 * k + 1] = fabs(cx.y) * s[0] + fabs(cy.y) * s[1] + fabs(cz.y) * s[2];
            t->weight[3 * k + 2] = fabs(cx.z) * s[0] + fabs(cy.z) * s[1] + fabs(cz.z) * s[2];
        }
        t->has_weights = true;
    }
    return 0;
}

/* ---- seeds ------------------------------------------------------------ */

/* Doubles per seed for the job's chain: joint values, bone positions (3 per
 * joint) or skeleton local rotations (4 per bone); 0 when seeds do not
 * apply. */
static size_t seed_len(const proto_job *job)
{
    const proto_chain *c = job->chain;
    switch (c->kind) {
    case PROTO_CHAIN_PLANAR:
    case PROTO_CHAIN_JOINTS:
    case PROTO_CHAIN_URDF:
        return c->chain->dof;
    case PROTO_CHAIN_BONES:
        return 3 * c->nbones;
    case PROTO_CHAIN_SKELETON:
        return 4 * c->nskel;
    default:
        return 0;
    }
}

static bool angular_joint(const proto_chain *c, size_t i)
{
    return c->chain->type[i] != IK_JOINT_PRISMATIC;
}

/* True when value k of an answer's "joints" is an angle (so options.units
 * applies): all of them but a prismatic joint's. */
static bool answer_angle(const proto_chain *c, size_t k)
{
    return !c->chain || c->kind == PROTO_CHAIN_PLANAR || angular_joint(c, k);
}

static int decode_seed(const json_t *v, const char *path, proto_job *job, double *out,
                       proto_error *err)
{
    const proto_chain *c = job->chain;
    size_t len = seed_len(job);
    if (len == 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s chains take no seed", proto_chain_kind_names[c->kind]);
    size_t n;
    switch (c->kind) {
    case PROTO_CHAIN_BONES:
    case PROTO_CHAIN_SKELETON: {
        size_t k = c->kind == PROTO_CHAIN_BONES ? c->nbones : c->nskel;
        if (proto_json_array(v, path, k, k, false, &n, err))
            return -1;
        for (size_t i = 0; i < k; i++) {
            char p[PROTO_PATH_MAX];
            proto_json_path_index(p, path, i);
            if (c->kind == PROTO_CHAIN_BONES) {
                ik_vec3 x;
                if (proto__vec3(json_array_get(v, i), p, &x, err))
                    return -1;
                x = proto_frame_vec_in(job->opt.frame, x);
                if (i > 0) {
                    ik_vec3 prev = ik_v3(out[3 * i - 3], out[3 * i - 2], out[3 * i - 1]);
                    if (!(ik_vec3_dist(prev, x) >= PROTO_MIN_LENGTH))
                        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                               "seed bones must be at least %g long",
                                               PROTO_MIN_LENGTH);
                }
                out[3 * i] = x.x;
                out[3 * i + 1] = x.y;
                out[3 * i + 2] = x.z;
            } else {
                ik_quat q;
                if (proto__quat(json_array_get(v, i), p, &q, err))
                    return -1;
                q = proto_frame_quat_in(job->opt.frame, q);
                out[4 * i] = q.x;
                out[4 * i + 1] = q.y;
                out[4 * i + 2] = q.z;
                out[4 * i + 3] = q.w;
            }
        }
        return 0;
    }
    default:
        if (proto_json_numbers(v, path, len, out, err))
            return -1;
        for (size_t i = 0; i < len; i++)
            if (angular_joint(c, i))
                out[i] = proto_angle_in(job->opt.units, out[i]);
        return 0;
    }
}

/* ---- options ---------------------------------------------------------- */

static const char *const search_names[] = {"first", "nearest", NULL};

static int decode_options(const json_t *v, const char *path, const proto_limits *lim,
                          proto_options *o, proto_error *err)
{
    static const char *const keys[] = {"solver",   "tolerance",  "angular_tolerance",
                                       "max_iterations", "timeout_ms", "search",
                                       "units",    "frame",      "bend",
                                       "max_joint_step", "servo", NULL};
    memset(o, 0, sizeof *o);
    o->timeout_ms = 5 < lim->max_time_ms ? 5 : lim->max_time_ms;
    o->iter_cap = lim->max_iterations;
    if (!v)
        return 0;
    if (proto_json_check_object(v, path, keys, err))
        return -1;
    char p[PROTO_PATH_MAX];
    json_t *x;
    int e;
#define OPT(key) ((x = json_object_get(v, key)) && (proto_json_path_key(p, path, key), 1))
    if (OPT("solver")) {
        if (proto_json_enum(x, p, proto_solver_names, &e, err))
            return -1;
        o->solver = (proto_solver)e;
    }
    if (OPT("units")) {
        if (proto_json_enum(x, p, proto_units_names, &e, err))
            return -1;
        o->units = (proto_units)e;
    }
    if (OPT("frame")) {
        if (proto_json_enum(x, p, proto_frame_names, &e, err))
            return -1;
        o->frame = (proto_frame)e;
    }
    if (OPT("tolerance") && proto_json_positive(x, p, PROTO_MAX_ABS, &o->tolerance, err))
        return -1;
    if (OPT("angular_tolerance")) {
        double a;
        if (proto_json_positive(x, p, o->units == PROTO_UNITS_DEGREES ? 180 : IK_PI, &a, err))
            return -1;
        o->angular_tolerance = proto_angle_in(o->units, a);
    }
    if (OPT("max_iterations")) {
        long long i;
        if (proto_json_integer(x, p, 1, (long long)lim->max_iterations, &i, err))
            return -1;
        o->max_iterations = (size_t)i;
    }
    if (OPT("timeout_ms") && proto_json_number(x, p, 0, lim->max_time_ms, &o->timeout_ms, err))
        return -1;
    if (OPT("search")) {
        if (proto_json_enum(x, p, search_names, &e, err))
            return -1;
        o->nearest = e == 1;
    }
    if (OPT("max_joint_step")) {
        if (proto_json_positive(x, p, PROTO_MAX_ABS, &o->max_joint_step_in, err))
            return -1;
        o->max_joint_step = o->max_joint_step_in; /* angles converted per joint */
    }
    if (OPT("bend")) {
        long long b;
        if (proto_json_integer(x, p, -1, 1, &b, err))
            return -1;
        if (b == 0)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p, "options.bend must be 1 or -1");
        o->bend = (int)b;
    }
#undef OPT
    return 0;
}

/* ---- jobs ------------------------------------------------------------- */

static int job_alloc(proto_job *job, bool seeds)
{
    size_t n = job->n, sl = seed_len(job);
    size_t sz = n * (sizeof(proto_target) + sizeof(proto_result) + 2 * sizeof(bool));
    size_t per = job->dof * sizeof(double) + job->npos * sizeof(ik_vec3) +
                 2 * job->nrot * sizeof(ik_quat);
    size_t seedsz = seeds ? n * sl * sizeof(double) : 0;
    /* doubles first for alignment */
    char *b = calloc(1, seedsz + n * per + sz + 16);
    if (!b)
        return -1;
    job->block = b;
    job->seed_q = seeds ? (double *)b : NULL;
    b += seedsz;
    job->results = (proto_result *)b;
    b += n * sizeof(proto_result);
    job->targets = (proto_target *)b;
    b += n * sizeof(proto_target);
    for (size_t i = 0; i < n; i++) {
        proto_result *r = &job->results[i];
        r->q = (double *)b;
        b += job->dof * sizeof(double);
        r->positions = (ik_vec3 *)b;
        b += job->npos * sizeof(ik_vec3);
        r->rotations = (ik_quat *)b;
        b += job->nrot * sizeof(ik_quat);
        r->local = (ik_quat *)b;
        b += job->nrot * sizeof(ik_quat);
    }
    job->has_seed = (bool *)b;
    b += n * sizeof(bool);
    job->done = (bool *)b;
    return 0;
}

/* A request's "options" for its chain: decode_options, then what depends on
 * the chain. */
/* options.servo for chain c: {"period_s": T, "velocity": [...]}, the
 * velocities in options.units per second (length per second for prismatic
 * joints), or, without "velocity", the URDF's <limit velocity>. */
static int servo_options(const json_t *sv, const proto_chain *c, proto_options *o,
                         proto_error *err)
{
    static const char *const keys[] = {"period_s", "velocity", NULL};
    const char *path = "/options/servo";
    if (c->kind != PROTO_CHAIN_JOINTS && c->kind != PROTO_CHAIN_URDF)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "options.servo applies to joints and urdf chains (the numeric "
                               "solver), not to %s chains",
                               proto_chain_kind_names[c->kind]);
    if (proto_json_check_object(sv, path, keys, err))
        return -1;
    json_t *x = proto_json_require(sv, path, "period_s", err);
    if (!x || proto_json_positive(x, "/options/servo/period_s", 1.0, &o->servo_period, err))
        return -1;
    const size_t n = c->chain->dof;
    x = json_object_get(sv, "velocity");
    if (x) {
        double v[IK_MAX_DOF];
        if (proto_json_numbers(x, "/options/servo/velocity", n, v, err))
            return -1;
        for (size_t k = 0; k < n; k++) {
            if (!(v[k] > 0))
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo/velocity",
                                       "options.servo.velocity[%zu] must be > 0", k);
            o->servo_velocity[k] = angular_joint(c, k) ? proto_angle_in(o->units, v[k]) : v[k];
        }
        return 0;
    }
    const double *uv = proto__chain_velocities((proto_chain *)c, err);
    if (!uv && c->kind == PROTO_CHAIN_URDF)
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (!uv || !(uv[k] > 0))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo/velocity",
                                   "joint %s has no velocity limit (%s); give "
                                   "options.servo.velocity",
                                   c->names ? c->names[k] : "?",
                                   c->kind == PROTO_CHAIN_URDF ? "no <limit velocity> in the URDF"
                                                               : "joints chains have none");
        o->servo_velocity[k] = uv[k];
    }
    return 0;
}

static int chain_options(const json_t *jo, const proto_chain *c, const proto_limits *lim,
                         proto_options *o, proto_error *err)
{
    if (decode_options(jo, "/options", lim, o, err))
        return -1;
    const json_t *sv = json_is_object(jo) ? json_object_get(jo, "servo") : NULL;
    if (sv && servo_options(sv, c, o, err))
        return -1;
    /* planar chains live in their own x-y plane (targets, seeds and answers
     * are 2-D): a frame convention would do nothing, so it is refused */
    if (c->kind == PROTO_CHAIN_PLANAR && json_is_object(jo) && json_object_get(jo, "frame"))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/frame",
                               "options.frame does not apply to planar chains (they live in "
                               "their own x-y plane); leave it out");
    return 0;
}

int proto_options_check(const json_t *options, const proto_chain *chain, const proto_limits *lim,
                        proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    proto_options o;
    return chain_options(options, chain, lim, &o, err);
}

int proto_stream_open_check(const json_t *options, const json_t *seed, const proto_chain *chain,
                            const proto_limits *lim, proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    proto_options o;
    if (chain_options(options, chain, lim, &o, err))
        return -1;
    if (seed)
        return proto_seed_check(seed, chain, options, lim, "/seed", err);
    if (o.servo_period > 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/seed",
                               "a servo stream needs the arm's current joints as \"seed\" (each "
                               "answer moves from there)");
    return 0;
}

int proto_seed_check(const json_t *seed, const proto_chain *chain, const json_t *options,
                     const proto_limits *lim, const char *path, proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    proto_job job;
    memset(&job, 0, sizeof job);
    job.chain = (proto_chain *)chain;
    job.dims2 = chain->kind == PROTO_CHAIN_PLANAR;
    if (chain_options(options, chain, lim, &job.opt, err))
        return -1;
    size_t len = seed_len(&job);
    double *buf = calloc(len ? len : 1, sizeof *buf);
    if (!buf)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    int rc = decode_seed(seed, path, &job, buf, err);
    free(buf);
    return rc;
}

int proto_job_decode_json(json_t *req, proto_kind kind, const proto_limits *lim,
                          proto_chain *chain, proto_chain_lookup_fn lookup, void *ud,
                          proto_job **out, proto_error *err)
{
    static const char *const keys1[] = {"chain", "chain_id", "target", "seed", "options", NULL};
    static const char *const keysb[] = {"chain",   "chain_id", "targets",
                                        "seeds",   "options",  NULL};
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    *out = NULL;
    if (proto_json_check_object(req, "", kind == PROTO_BATCH ? keysb : keys1, err))
        return -1;
    proto_job *job = calloc(1, sizeof *job);
    if (!job)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    job->kind = kind;

    /* the chain */
    json_t *jc = json_object_get(req, "chain"), *jid = json_object_get(req, "chain_id");
    if (chain) {
        if (jc || jid) {
            proto_error_set(err, PROTO_E_INVALID_REQUEST, jc ? "/chain" : "/chain_id",
                            "this stream already has its chain; send no chain or chain_id");
            goto fail;
        }
        proto_chain_ref(chain);
        job->chain = chain;
    } else if (jc && jid) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/chain_id",
                        "give either chain or chain_id, not both");
        goto fail;
    } else if (jc || jid) {
        const char *id = NULL;
        if (jid && proto_json_string(jid, "/chain_id", 128, &id, err))
            goto fail;
        job->chain = proto_chain_resolve(jc, id, lim, lookup, ud, err);
        if (!job->chain)
            goto fail;
    } else {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/chain", "chain or chain_id is required");
        goto fail;
    }
    job->dims2 = job->chain->kind == PROTO_CHAIN_PLANAR;

    if (chain_options(json_object_get(req, "options"), job->chain, lim, &job->opt, err))
        goto fail;
    if (job->opt.servo_period > 0 && !chain) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo",
                        "options.servo applies to streams (GET /v1/stream), where each answer "
                        "is one control period");
        goto fail;
    }

    /* targets: count them first */
    json_t *jt;
    const char *tpath = kind == PROTO_BATCH ? "/targets" : "/target";
    if (kind == PROTO_BATCH) {
        jt = proto_json_require(req, "", "targets", err);
        if (!jt || proto_json_array(jt, tpath, 1, lim->max_targets, true, &job->n, err))
            goto fail;
    } else {
        jt = proto_json_require(req, "", "target", err);
        if (!jt)
            goto fail;
        job->n = 1;
    }
    /* the solver, from the chain and the first target */
    proto_target t0;
    char p[PROTO_PATH_MAX];
    if (kind == PROTO_BATCH)
        proto_json_path_index(p, tpath, 0);
    else
        snprintf(p, sizeof p, "%s", tpath);
    if (decode_target(kind == PROTO_BATCH ? json_array_get(jt, 0) : jt, p, job, &t0, err))
        goto fail;
    if (proto__resolve_solver(job->chain, &job->opt, &t0, &job->solver, err))
        goto fail;
    if (job->opt.max_joint_step_in > 0 && job->solver != PROTO_SOLVER_NUMERIC) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/max_joint_step",
                        "options.max_joint_step is used by the numeric solver only, not by %s",
                        proto_solver_names[job->solver]);
        goto fail;
    }
    proto__result_dims(job->chain, job->solver, &job->dof, &job->npos, &job->nrot);

    json_t *js = json_object_get(req, kind == PROTO_BATCH ? "seeds" : "seed");
    const char *spath = kind == PROTO_BATCH ? "/seeds" : "/seed";
    if (js && kind == PROTO_BATCH) {
        size_t ns;
        if (proto_json_array(js, spath, job->n, job->n, false, &ns, err))
            goto fail;
    }
    if (job_alloc(job, js != NULL)) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto fail;
    }
    size_t sl = seed_len(job);
    for (size_t i = 0; i < job->n; i++) {
        if (kind == PROTO_BATCH)
            proto_json_path_index(p, tpath, i);
        if (i == 0)
            job->targets[0] = t0;
        else if (decode_target(json_array_get(jt, i), p, job, &job->targets[i], err))
            goto fail;
        if (proto__check_target(job, &job->targets[i], p, err))
            goto fail;
        if (js) {
            json_t *s = kind == PROTO_BATCH ? json_array_get(js, i) : js;
            if (kind == PROTO_BATCH)
                proto_json_path_index(p, spath, i);
            else
                snprintf(p, sizeof p, "%s", spath);
            if (json_is_null(s) && kind == PROTO_BATCH)
                continue;
            if (decode_seed(s, p, job, job->seed_q + i * sl, err))
                goto fail;
            job->has_seed[i] = true;
        }
    }
    /* a step needs somewhere to step from: every target a seed (a stream
     * gives its warm start instead, and says so with chain != NULL) */
    if (job->opt.max_joint_step_in > 0 && !chain) {
        for (size_t i = 0; i < job->n; i++) {
            if (job->has_seed[i])
                continue;
            if (kind == PROTO_BATCH && js)
                proto_json_path_index(p, spath, i);
            else
                snprintf(p, sizeof p, "%s", js ? spath : "/options/max_joint_step");
            proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                            "options.max_joint_step needs a seed for every target (the step is "
                            "measured from it)");
            goto fail;
        }
    }
    *out = job;
    return 0;
fail:
    proto_job_free(job);
    return -1;
}

int proto_job_decode(const char *body, size_t len, proto_kind kind, const proto_limits *lim,
                     proto_chain_lookup_fn lookup, void *ud, proto_job **out, proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    *out = NULL;
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, err);
    if (!root)
        return -1;
    int rc = proto_job_decode_json(root, kind, lim, NULL, lookup, ud, out, err);
    json_decref(root);
    return rc;
}

void proto_job_free(proto_job *job)
{
    if (!job)
        return;
    proto_chain_unref(job->chain);
    free(job->block);
    free(job->seed_owned);
    free(job);
}

size_t proto_job_count(const proto_job *job)
{
    return job->n;
}

const char *proto_job_solver_name(const proto_job *job)
{
    return proto_solver_names[job->solver];
}

double proto_job_cost_us(const proto_job *job)
{
    switch (job->solver) {
    case PROTO_SOLVER_TWO_LINK:
    case PROTO_SOLVER_THREE_LINK:
    case PROTO_SOLVER_THREE_LINK_3D:
    case PROTO_SOLVER_TWO_BONE:
        return 0.5;
    case PROTO_SOLVER_FABRIK:
    case PROTO_SOLVER_CCD: {
        size_t it = job->opt.max_iterations ? job->opt.max_iterations : 32;
        return 0.01 * (double)it * (double)job->npos;
    }
    default:
        /* the numeric solver: tens of microseconds typically, bounded by
         * the time budget */
        return job->opt.timeout_ms > 0 ? fmin(50.0 * (double)job->dof, 1000 * job->opt.timeout_ms)
                                       : 50.0 * (double)job->dof;
    }
}

void proto_job_run(proto_job *job, size_t begin, size_t end)
{
    if (end > job->n)
        end = job->n;
    if (begin >= end)
        return;
    size_t ws_size = proto__workspace_size(job);
    void *ws = ws_size ? malloc(ws_size) : NULL;
    for (size_t i = begin; i < end; i++) {
        if (ws_size && !ws) {
            memset(&job->results[i].status, 0, sizeof(int));
            job->results[i].status = IK_ENOSPC;
        } else {
            proto__run_one(job, i, ws, ws_size);
        }
        job->done[i] = true;
    }
    free(ws);
}

/* True when the answer's points lie on one line (within 1e-7 of the
 * chain's length): a straight or folded limb, which says nothing about the
 * side the knee or elbow bends to. Only for chains whose seed is a pose
 * with such a side (planar arms, bones, skeletons). */
static bool straight_answer(const proto_job *job, const proto_result *r)
{
    const proto_chain *c = job->chain;
    if (c->kind != PROTO_CHAIN_PLANAR && c->kind != PROTO_CHAIN_BONES &&
        c->kind != PROTO_CHAIN_SKELETON)
        return false;
    size_t n = job->npos;
    if (n < 3)
        return false;
    const ik_vec3 *p = r->positions;
    double len = 0, far = 0;
    size_t j = 0;
    for (size_t k = 1; k < n; k++) {
        len += ik_vec3_dist(p[k], p[k - 1]);
        double d = ik_vec3_dist(p[k], p[0]);
        if (d > far)
            far = d, j = k;
    }
    if (!(len > 0))
        return true;
    ik_vec3 u = ik_vec3_scale(ik_vec3_sub(p[j], p[0]), 1 / far);
    for (size_t k = 1; k < n; k++) {
        ik_vec3 v = ik_vec3_sub(p[k], p[0]);
        if (ik_vec3_len(ik_vec3_sub(v, ik_vec3_scale(u, ik_vec3_dot(v, u)))) > 1e-7 * len)
            return false;
    }
    return true;
}

void proto_job_warm_start(proto_job *job, const proto_job *prev)
{
    if (job->n > 0 && job->seed_q && job->has_seed[0] && seed_len(job) > 0) {
        /* the client's seed (a stream's open seed, or a re-synchronisation
         * after the arm moved by other means) wins over the previous
         * answer, and the solve continues from it */
        job->opt.nearest = true;
        return;
    }
    if (!prev || prev->n == 0 || prev->chain != job->chain || job->n == 0)
        return;
    size_t last = prev->n - 1;
    const proto_result *r = &prev->results[last];
    if (!prev->done[last] || r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    size_t sl = seed_len(job);
    if (sl == 0)
        return;
    /* An answer that failed (out of reach, not converged, timed out) or
     * came out straight is no pose to continue from: a straight limb has no
     * bend side, so the next knee could go either way, and a failed numeric
     * search may have ended anywhere. The stream then keeps the previous
     * job's own starting point, which by induction is the last answer that
     * was a proper pose (or the chain's own pose when there was none). */
    bool carry = r->status != IK_OK || straight_answer(prev, r);
    if (carry && !(prev->seed_q && prev->has_seed[last]))
        return; /* no seed: the job starts from the chain's own pose */
    if (!job->seed_q) {
        /* the job was decoded without seeds: give it room for one */
        double *s = calloc(sl, sizeof *s);
        if (!s)
            return;
        free(job->seed_owned);
        job->seed_owned = s;
        job->seed_q = s;
    }
    double *s = job->seed_q;
    const proto_chain *c = job->chain;
    if (carry) {
        memmove(s, prev->seed_q + last * sl, sl * sizeof *s);
    } else {
        switch (c->kind) {
        case PROTO_CHAIN_BONES:
            for (size_t i = 0; i < c->nbones; i++) {
                s[3 * i] = r->positions[i].x;
                s[3 * i + 1] = r->positions[i].y;
                s[3 * i + 2] = r->positions[i].z;
            }
            break;
        case PROTO_CHAIN_SKELETON:
            for (size_t i = 0; i < c->nskel; i++) {
                s[4 * i] = r->local[i].x;
                s[4 * i + 1] = r->local[i].y;
                s[4 * i + 2] = r->local[i].z;
                s[4 * i + 3] = r->local[i].w;
            }
            break;
        default:
            if (prev->dof != sl)
                return;
            memcpy(s, r->q, sl * sizeof *s);
        }
    }
    job->has_seed[0] = true;
    job->opt.nearest = true;
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

static void status_words(int st, const char **word, int *code)
{
    *code = proto__moveit(st, word);
}

/* The member of result i that would hold a non-finite number, in the order
 * the answer lists them, or NULL. The values are checked as they would be
 * printed (after the conversion to the caller's units and frame). */
static const char *non_finite_member(const proto_job *job, size_t i)
{
    const proto_result *r = &job->results[i];
    const proto_chain *c = job->chain;
    proto_frame f = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    bool skel = c->kind == PROTO_CHAIN_SKELETON;
    for (size_t k = 0; k < job->dof; k++) {
        bool ang = answer_angle(c, k);
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
#define PROTO_REASON_MAX 48
typedef struct outcome {
    const char *word;
    int code;
    const char *reason;
    bool pose;
    double time_ms; /* finite */
    char buf[PROTO_REASON_MAX];
} outcome;

static void result_outcome(const proto_job *job, size_t i, outcome *o)
{
    const proto_result *r = &job->results[i];
    status_words(r->status, &o->word, &o->code);
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
}

const char *proto_job_status(const proto_job *job, size_t i)
{
    outcome oc;
    result_outcome(job, i, &oc);
    return oc.word;
}

/* The answer's "max_joint_step": the largest joint motion from the seed,
 * angles in options.units, prismatic joints in length units. */
static double answer_step(const proto_job *job, const proto_result *r)
{
    double a = proto_angle_out(job->opt.units, r->step_ang);
    return a > r->step_lin ? a : r->step_lin;
}

static json_t *vec_json(ik_vec3 v, bool dims2)
{
    double d[3] = {v.x, v.y, v.z};
    return proto_json_array_of(d, dims2 ? 2 : 3);
}

static json_t *quat_json(ik_quat q)
{
    double d[4] = {q.x, q.y, q.z, q.w};
    return proto_json_array_of(d, 4);
}

json_t *proto_job_result_json(const proto_job *job, size_t i)
{
    const proto_result *r = &job->results[i];
    const proto_chain *c = job->chain;
    proto_frame f = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    outcome oc;
    result_outcome(job, i, &oc);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "status", json_string(oc.word));
    json_object_set_new(o, "code", json_integer(oc.code));
    json_object_set_new(o, "reason", json_string(oc.reason));
    bool valid = oc.pose;
    if (valid && job->dof) {
        json_t *a = json_array();
        for (size_t k = 0; k < job->dof; k++) {
            bool ang = answer_angle(c, k);
            json_array_append_new(a, json_real(ang ? proto_angle_out(u, r->q[k]) : r->q[k]));
        }
        json_object_set_new(o, "joints", a);
    }
    if (valid && job->npos) {
        json_t *a = json_array();
        for (size_t k = 0; k < job->npos; k++)
            json_array_append_new(a, vec_json(proto_frame_vec_out(f, r->positions[k]),
                                              job->dims2));
        json_object_set_new(o, "positions", a);
    }
    if (valid && job->nrot) {
        bool skel = c->kind == PROTO_CHAIN_SKELETON;
        json_t *a = json_array(), *l = skel ? NULL : json_array();
        for (size_t k = 0; k < job->nrot; k++) {
            json_array_append_new(
                a, quat_json(proto_frame_quat_out(f, skel ? r->local[k] : r->rotations[k])));
            if (l)
                json_array_append_new(l, quat_json(proto_frame_quat_out(f, r->local[k])));
        }
        json_object_set_new(o, "rotations", a);
        if (l)
            json_object_set_new(o, "local_rotations", l);
    }
    if (valid && r->has_tip) {
        ik_xform t = proto_frame_xform_out(f, r->tip);
        json_t *tip = json_object();
        json_object_set_new(tip, "position", vec_json(t.p, job->dims2));
        if (!job->dims2)
            json_object_set_new(tip, "orientation", quat_json(t.q));
        json_object_set_new(o, "tip", tip);
    }
    if (valid) {
        json_object_set_new(o, "position_error", json_real(r->pos_err));
        if (r->rot_err >= 0)
            json_object_set_new(o, "orientation_error", json_real(proto_angle_out(u, r->rot_err)));
        if (r->has_step)
            json_object_set_new(o, "max_joint_step", json_real(answer_step(job, r)));
        if (r->servo >= 0)
            json_object_set_new(o, "arrived", json_boolean(r->servo == 1));
    }
    json_object_set_new(o, "iterations", json_integer((json_int_t)r->iterations));
    json_object_set_new(o, "restarts", json_integer((json_int_t)r->restarts));
    json_object_set_new(o, "time_ms", json_real(oc.time_ms));
    return o;
}

/* ---- direct encoding -------------------------------------------------- */

/* proto_job_encode() writes the answer straight into one buffer sized from
 * the job, without building a jansson tree: the text is byte for byte what
 * proto_json_dump() gives for the tree proto_job_result_json() and the
 * object below would build (same keys in the same order, same number
 * text), which tests/proto/test_proto_job.c checks against jansson's
 * json_dumps() of those trees. Neither prints a non-finite real (which
 * JSON cannot hold and jansson's json_real() refuses): result_outcome()
 * answers a result holding one as a failure without its pose members. */

#define KEY(w, k) proto_jw_raw(w, "\"" k "\":", sizeof(k) + 2)

/* ",\"key\":" or "\"key\":" for the first member. */
static void key_sep(proto_jw *w, bool *first, const char *k, size_t n)
{
    if (!*first)
        proto_jw_raw(w, ",", 1);
    *first = false;
    proto_jw_raw(w, "\"", 1);
    proto_jw_raw(w, k, n);
    proto_jw_raw(w, "\":", 2);
}
#define MEMBER(w, first, k) key_sep(w, first, k, sizeof(k) - 1)

/* n reals (finite: result_outcome() checked them) as an array. */
static void put_reals(proto_jw *w, const double *d, size_t n)
{
    proto_jw_raw(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            proto_jw_raw(w, ",", 1);
        proto_jw_double(w, d[i]);
    }
    proto_jw_raw(w, "]", 1);
}

static void put_vec(proto_jw *w, ik_vec3 v, bool dims2)
{
    double d[3] = {v.x, v.y, v.z};
    put_reals(w, d, dims2 ? 2 : 3);
}

static void put_quat(proto_jw *w, ik_quat q)
{
    double d[4] = {q.x, q.y, q.z, q.w};
    put_reals(w, d, 4);
}

/* A real member (finite: result_outcome() checked it). */
static void put_real_member(proto_jw *w, bool *first, const char *k, size_t n, double v)
{
    key_sep(w, first, k, n);
    proto_jw_double(w, v);
}
#define REAL_MEMBER(w, first, k, v) put_real_member(w, first, k, sizeof(k) - 1, v)

/* The members of proto_job_result_json(job, i), without the braces. */
static void put_result_members(proto_jw *w, bool *first, const proto_job *job, size_t i)
{
    const proto_result *r = &job->results[i];
    const proto_chain *c = job->chain;
    proto_frame f = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    outcome oc;
    result_outcome(job, i, &oc);
    MEMBER(w, first, "status");
    proto_jw_string(w, oc.word, strlen(oc.word));
    MEMBER(w, first, "code");
    proto_jw_integer(w, oc.code);
    MEMBER(w, first, "reason");
    proto_jw_string(w, oc.reason, strlen(oc.reason));
    bool valid = oc.pose;
    if (valid && job->dof) {
        MEMBER(w, first, "joints");
        proto_jw_raw(w, "[", 1);
        for (size_t k = 0; k < job->dof; k++) {
            bool ang = answer_angle(c, k);
            if (k)
                proto_jw_raw(w, ",", 1);
            proto_jw_double(w, ang ? proto_angle_out(u, r->q[k]) : r->q[k]);
        }
        proto_jw_raw(w, "]", 1);
    }
    if (valid && job->npos) {
        MEMBER(w, first, "positions");
        proto_jw_raw(w, "[", 1);
        for (size_t k = 0; k < job->npos; k++) {
            if (k)
                proto_jw_raw(w, ",", 1);
            put_vec(w, proto_frame_vec_out(f, r->positions[k]), job->dims2);
        }
        proto_jw_raw(w, "]", 1);
    }
    if (valid && job->nrot) {
        bool skel = c->kind == PROTO_CHAIN_SKELETON;
        MEMBER(w, first, "rotations");
        proto_jw_raw(w, "[", 1);
        for (size_t k = 0; k < job->nrot; k++) {
            if (k)
                proto_jw_raw(w, ",", 1);
            put_quat(w, proto_frame_quat_out(f, skel ? r->local[k] : r->rotations[k]));
        }
        proto_jw_raw(w, "]", 1);
        if (!skel) {
            MEMBER(w, first, "local_rotations");
            proto_jw_raw(w, "[", 1);
            for (size_t k = 0; k < job->nrot; k++) {
                if (k)
                    proto_jw_raw(w, ",", 1);
                put_quat(w, proto_frame_quat_out(f, r->local[k]));
            }
            proto_jw_raw(w, "]", 1);
        }
    }
    if (valid && r->has_tip) {
        ik_xform t = proto_frame_xform_out(f, r->tip);
        MEMBER(w, first, "tip");
        proto_jw_raw(w, "{", 1);
        KEY(w, "position");
        put_vec(w, t.p, job->dims2);
        if (!job->dims2) {
            proto_jw_raw(w, ",", 1);
            KEY(w, "orientation");
            put_quat(w, t.q);
        }
        proto_jw_raw(w, "}", 1);
    }
    if (valid) {
        REAL_MEMBER(w, first, "position_error", r->pos_err);
        if (r->rot_err >= 0)
            REAL_MEMBER(w, first, "orientation_error", proto_angle_out(u, r->rot_err));
        if (r->has_step)
            REAL_MEMBER(w, first, "max_joint_step", answer_step(job, r));
        if (r->servo >= 0) {
            MEMBER(w, first, "arrived");
            if (r->servo == 1)
                proto_jw_raw(w, "true", 4);
            else
                proto_jw_raw(w, "false", 5);
        }
    }
    MEMBER(w, first, "iterations");
    proto_jw_integer(w, (json_int_t)r->iterations);
    MEMBER(w, first, "restarts");
    proto_jw_integer(w, (json_int_t)r->restarts);
    REAL_MEMBER(w, first, "time_ms", oc.time_ms);
}

void proto__job_result_write(proto_jw *w, const proto_job *job, size_t i)
{
    bool first = true;
    proto_jw_raw(w, "{", 1);
    put_result_members(w, &first, job, i);
    proto_jw_raw(w, "}", 1);
}

/* An upper estimate of the answer's length, so that the buffer is
 * allocated once: every double takes at most 25 characters and its
 * separator. */
static size_t encode_estimate(const proto_job *job)
{
    size_t doubles = job->dof + 3 * job->npos + 8 * job->nrot + 7 + 3;
    size_t names = job->chain->nnames * (PROTO_NAME_MAX + 3) + 64;
    return 256 + names + job->n * (320 + 26 * doubles);
}

char *proto_job_encode(const proto_job *job, size_t *len)
{
    const proto_chain *c = job->chain;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    if (proto_jw_reserve(&w, encode_estimate(job)))
        return NULL;
    bool first = true;
    proto_jw_raw(&w, "{", 1);
    MEMBER(&w, &first, "chain_id");
    const char *id = proto_chain_id(c);
    proto_jw_string(&w, id, strlen(id));
    MEMBER(&w, &first, "solver");
    const char *sn = proto_solver_names[job->solver];
    proto_jw_string(&w, sn, strlen(sn));
    MEMBER(&w, &first, "units");
    const char *un = proto_units_names[job->opt.units];
    proto_jw_string(&w, un, strlen(un));
    if (!job->dims2) {
        MEMBER(&w, &first, "frame");
        const char *fn = proto_frame_names[job->opt.frame];
        proto_jw_string(&w, fn, strlen(fn));
    }
    if (c->kind == PROTO_CHAIN_LINKS3D) {
        MEMBER(&w, &first, "joint_names");
        static const char n5[] = "[\"yaw\",\"theta0\",\"theta1\",\"theta2\",\"roll\"]";
        proto_jw_raw(&w, n5, sizeof n5 - 1);
    } else if (c->names) {
        if (c->kind == PROTO_CHAIN_SKELETON)
            MEMBER(&w, &first, "bone_names");
        else
            MEMBER(&w, &first, "joint_names");
        proto_jw_raw(&w, "[", 1);
        for (size_t i = 0; i < c->nnames; i++) {
            if (i)
                proto_jw_raw(&w, ",", 1);
            proto_jw_string(&w, c->names[i], strlen(c->names[i]));
        }
        proto_jw_raw(&w, "]", 1);
    }
    if (job->kind == PROTO_SOLVE) {
        put_result_members(&w, &first, job, 0);
    } else {
        size_t counts[4] = {0, 0, 0, 0};
        for (size_t i = 0; i < job->n; i++) {
            /* by the code each result is answered with */
            outcome oc;
            result_outcome(job, i, &oc);
            size_t k = oc.code == 1 ? 0 : oc.code == -31 ? 1 : oc.code == -6 ? 2 : 3;
            counts[k]++;
        }
        MEMBER(&w, &first, "count");
        proto_jw_integer(&w, (json_int_t)job->n);
        MEMBER(&w, &first, "counts");
        proto_jw_raw(&w, "{", 1);
        KEY(&w, "success");
        proto_jw_integer(&w, (json_int_t)counts[0]);
        proto_jw_raw(&w, ",", 1);
        KEY(&w, "no_ik_solution");
        proto_jw_integer(&w, (json_int_t)counts[1]);
        proto_jw_raw(&w, ",", 1);
        KEY(&w, "timed_out");
        proto_jw_integer(&w, (json_int_t)counts[2]);
        proto_jw_raw(&w, ",", 1);
        KEY(&w, "other");
        proto_jw_integer(&w, (json_int_t)counts[3]);
        proto_jw_raw(&w, "}", 1);
        MEMBER(&w, &first, "results");
        proto_jw_raw(&w, "[", 1);
        for (size_t i = 0; i < job->n; i++) {
            if (i)
                proto_jw_raw(&w, ",", 1);
            bool f1 = true;
            proto_jw_raw(&w, "{", 1);
            put_result_members(&w, &f1, job, i);
            proto_jw_raw(&w, "}", 1);
        }
        proto_jw_raw(&w, "]", 1);
    }
    proto_jw_raw(&w, "}", 1);
    return proto_jw_finish(&w, len);
}
