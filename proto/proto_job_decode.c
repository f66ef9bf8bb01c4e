/*
 * proto_job_decode.c: solve and batch requests -> proto_job (contract in
 * proto.h; the JSON is documented for clients in proto/README.md, section
 * "Requests").
 *
 * Decoding is strict and complete before anything runs: the chain (inline or
 * by id), every target and seed, and the options are validated and converted
 * to ikd's internal convention (ROS frame, radians) up front, so
 * proto_job_run() cannot fail on input and any request error is reported with
 * its JSON path.
 *
 * Memory: a job is one struct plus one block holding every per-target array
 * (targets, seeds, results and their outputs), sized from the chain and the
 * target count once decoding knows them (job_alloc).
 *
 * It also frees jobs (proto_job_free), next to the one constructor.
 *
 * Not here: running a job and warm starts (proto_job_run.c), answers
 * (proto_job_encode.c), the solver bindings (proto_solver.c).
 */
#include "proto/proto_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_status.h"

/* ---- seeds ------------------------------------------------------------ */

int proto__seed_decode(const json_t *v, const char *path, const proto_chain *c,
                       const proto_options *o, double *out, proto_error *err)
{
    size_t len = proto__seed_len(c);
    if (len == 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s chains take no seed", proto_chain_kind_names[c->kind]);
    size_t n;
    switch (c->skel ? PROTO_CHAIN_SKELETON : c->kind) { /* trees of bones as skeletons */
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
                x = proto_frame_vec_in(o->frame, x);
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
                q = proto_frame_quat_in(o->frame, q);
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
            if (proto__angular_joint(c, i))
                out[i] = proto_angle_in(o->units, out[i]);
        return 0;
    }
}

/* ---- targets without a tree ------------------------------------------- */

bool proto__target_scan(proto_scan *r, proto_stream_raw *t)
{
    proto__scan_end(r); /* whitespace: the text starts at the brace */
    t->text = r->p;
    if (!proto__scan_char(r, '{'))
        return false;
    unsigned seen = 0;
    if (!proto__scan_char(r, '}')) {
        do {
            const char *k;
            size_t n;
            if (!proto__scan_key(r, &k, &n))
                return false;
            unsigned bit;
            double *dst;
            size_t count;
            if (proto__scan_is(k, n, "position"))
                bit = 8, dst = t->position, count = 3;
            else if (proto__scan_is(k, n, "orientation"))
                bit = PROTO_RAW_ORIENTATION, dst = t->orientation, count = 4;
            else if (proto__scan_is(k, n, "up"))
                bit = PROTO_RAW_UP, dst = t->up, count = 3;
            else if (proto__scan_is(k, n, "pole"))
                bit = PROTO_RAW_POLE, dst = t->pole, count = 3;
            else
                return false;
            if ((seen & bit) || !proto__scan_numbers(r, dst, count))
                return false;
            seen |= bit;
        } while (proto__scan_char(r, ','));
        if (!proto__scan_char(r, '}'))
            return false;
    }
    t->len = (size_t)(r->p - t->text);
    t->has = seen & ~8u;
    return (seen & 8u) != 0;
}

/* The range proto_json_numbers() checks. */
static bool raw_in_range(const double *v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!(v[k] >= -PROTO_MAX_ABS && v[k] <= PROTO_MAX_ABS))
            return false;
    return true;
}

bool proto__target_raw(const proto_stream_raw *r, proto_frame f, bool dims2, proto_target *t)
{
    if (dims2 || !raw_in_range(r->position, 3))
        return false;
    memset(t, 0, sizeof *t);
    t->orientation = ik_quat_identity();
    t->position = proto_frame_vec_in(f, ik_v3(r->position[0], r->position[1], r->position[2]));
    if (r->has & PROTO_RAW_ORIENTATION) {
        /* proto__quat()'s rule and arithmetic */
        const double *d = r->orientation;
        if (!raw_in_range(d, 4))
            return false;
        double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
        if (!(fabs(n - 1.0) <= PROTO_QUAT_UNIT_TOL))
            return false;
        ik_quat q = {d[0] / n, d[1] / n, d[2] / n, d[3] / n};
        t->orientation = proto_frame_quat_in(f, q);
        t->has_orientation = true;
    }
    if (r->has & PROTO_RAW_UP) {
        ik_vec3 up = ik_v3(r->up[0], r->up[1], r->up[2]);
        if (!raw_in_range(r->up, 3) || !(ik_vec3_len(up) > 1e-12))
            return false;
        t->up = proto_frame_vec_in(f, up);
        t->has_up = true;
    }
    if (r->has & PROTO_RAW_POLE) {
        if (!raw_in_range(r->pole, 3))
            return false;
        t->pole = proto_frame_vec_in(f, ik_v3(r->pole[0], r->pole[1], r->pole[2]));
        t->has_pole = true;
    }
    return true;
}

/* ---- options ---------------------------------------------------------- */

static const char *const search_names[] = {"first", "nearest", NULL};

/* The names options.fields takes: "status" (always answered), then
 * PROTO_FIELD_MAP's in its order (bit k is name k + 1). */
static const char *const field_names[] = {
    "status",
#define PROTO__FIELD_NAME(name, text) text,
    PROTO_FIELD_MAP(PROTO__FIELD_NAME)
#undef PROTO__FIELD_NAME
        NULL};

/* options.fields: an array of member names; every member it does not name
 * is left out of the answer's results ("status" never is). */
static int decode_fields(const json_t *v, const char *path, proto_options *o, proto_error *err)
{
    size_t n;
    if (proto_json_array(v, path, 0, PROTO_FIELD_COUNT + 1, false, &n, err))
        return -1;
    unsigned keep = 0;
    for (size_t i = 0; i < n; i++) {
        char p[PROTO_PATH_MAX];
        int e;
        proto_json_path_index(p, path, i);
        if (proto_json_enum(json_array_get(v, i), p, field_names, &e, err))
            return -1;
        if (e > 0)
            keep |= 1u << (e - 1);
    }
    o->omit = ((1u << PROTO_FIELD_COUNT) - 1) & ~keep;
    return 0;
}

static int decode_options(const json_t *v, const char *path, const proto_limits *lim,
                          proto_options *o, proto_error *err)
{
    static const char *const keys[] = {"solver",   "tolerance",  "angular_tolerance",
                                       "max_iterations", "timeout_ms", "search",
                                       "units",    "frame",      "bend",
                                       "max_joint_step", "servo", "fields",
                                       "digits",   "objective", "all_solutions", NULL};
    memset(o, 0, sizeof *o);
    o->timeout_ms = proto_limits_default_timeout_ms(lim);
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
    if (OPT("all_solutions")) {
        if (!json_is_boolean(x))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "options.all_solutions must be true or false");
        o->all_solutions = json_is_true(x);
    }
    if (OPT("bend")) {
        long long b;
        if (proto_json_integer(x, p, -1, 1, &b, err))
            return -1;
        if (b == 0)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p, "options.bend must be 1 or -1");
        o->bend = (int)b;
    }
    if (OPT("fields") && decode_fields(x, p, o, err))
        return -1;
    if (OPT("digits")) {
        long long d;
        if (proto_json_integer(x, p, 1, 17, &d, err))
            return -1;
        o->digits = (int)d;
    }
    if (OPT("objective")) {
        if (proto_json_enum(x, p, proto_objective_names, &o->objective, err))
            return -1;
        o->has_objective = true;
    }
#undef OPT
    return 0;
}

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
    double *v = malloc(n * sizeof *v);
    if (!v)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    o->servo_velocity = v;
    x = json_object_get(sv, "velocity");
    if (x) {
        if (proto_json_numbers(x, "/options/servo/velocity", n, v, err))
            return -1;
        for (size_t k = 0; k < n; k++) {
            if (!(v[k] > 0))
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo/velocity",
                                       "options.servo.velocity[%zu] must be > 0", k);
            v[k] = proto__angular_joint(c, k) ? proto_angle_in(o->units, v[k]) : v[k];
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
        v[k] = uv[k];
    }
    return 0;
}

void proto__options_release(proto_options *o)
{
    free(o->servo_velocity);
    o->servo_velocity = NULL;
}

int proto__options_decode(const json_t *jo, const proto_chain *c, const proto_limits *lim,
                          proto_options *o, proto_error *err)
{
    if (decode_options(jo, "/options", lim, o, err))
        return -1;
    /* planar chains live in their own x-y plane (targets, seeds and answers
     * are 2-D): a frame convention would do nothing, so it is refused */
    if (c->kind == PROTO_CHAIN_PLANAR && json_is_object(jo) && json_object_get(jo, "frame"))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/frame",
                               "options.frame does not apply to planar chains (they live in "
                               "their own x-y plane); leave it out");
    /* the secondary objectives choose among a tree's solutions */
    if (o->has_objective && c->kind != PROTO_CHAIN_TREE)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/objective",
                               "options.objective applies to tree chains, not to %s chains (use "
                               "search \"nearest\" to stay near a seed)",
                               proto_chain_kind_names[c->kind]);
    if (o->has_objective && o->objective == IK_TREE_OBJ_MID_LIMITS && c->skel)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/objective",
                               "options.objective mid_limits needs joint limits, and a tree of "
                               "bones has none (its bones turn freely as ball joints)");
    /* last: the only check that allocates */
    const json_t *sv = json_is_object(jo) ? json_object_get(jo, "servo") : NULL;
    if (sv && servo_options(sv, c, o, err)) {
        proto__options_release(o);
        return -1;
    }
    return 0;
}


/* ---- jobs ------------------------------------------------------------- */

/* n zeroed bytes. glibc's calloc never takes a block from the thread's
 * cache of freed ones (malloc does), so a job made and freed per request
 * by calloc walks the allocator's bins each time. The empty asm hides from
 * gcc that p is malloc's, which it would otherwise turn back into calloc. */
static void *zalloc(size_t n)
{
    void *p = malloc(n);
    __asm__("" : "+r"(p));
    if (p)
        memset(p, 0, n);
    return p;
}

/* The bytes of `slots` results and their outputs (joint values, points,
 * rotations, all solutions, a tree's tips) and done flags. */
static size_t results_bytes(const proto_job *job, size_t slots)
{
    size_t per = job->dof * sizeof(double) + job->npos * sizeof(ik_vec3) +
                 2 * job->nrot * sizeof(ik_quat) + job->sol_cap * job->dof * sizeof(double) +
                 job->ntips * sizeof(proto_tip_result);
    return slots * (per + sizeof(proto_result) + sizeof(bool)) + 16;
}

/* Lays out `slots` results over b (zeroed, results_bytes(job, slots),
 * aligned for doubles). */
static void results_layout(proto_job *job, char *b, size_t slots)
{
    size_t nt = job->ntips;
    job->slots = slots;
    job->results = (proto_result *)b;
    b += slots * sizeof(proto_result);
    for (size_t i = 0; i < slots; i++) {
        proto_result *r = &job->results[i];
        r->q = (double *)b;
        b += job->dof * sizeof(double);
        r->positions = (ik_vec3 *)b;
        b += job->npos * sizeof(ik_vec3);
        r->rotations = (ik_quat *)b;
        b += job->nrot * sizeof(ik_quat);
        r->local = (ik_quat *)b;
        b += job->nrot * sizeof(ik_quat);
        r->all = job->sol_cap ? (double *)b : NULL;
        b += job->sol_cap * job->dof * sizeof(double);
        r->tips = nt ? (proto_tip_result *)b : NULL;
        b += nt * sizeof(proto_tip_result);
    }
    job->done = (bool *)b;
}

/* The block of `slots` results (replacing any), zeroed. */
static int results_alloc(proto_job *job, size_t slots)
{
    char *b = calloc(1, results_bytes(job, slots));
    if (!b)
        return -1;
    free(job->results_block);
    job->results_block = b;
    results_layout(job, b, slots);
    return 0;
}

/* The job's block: seeds, targets, a tree's goals and keep rules, seed
 * flags and, for a single target (a solve, a stream's), its result too, in
 * one allocation. A batch's results have their own (results_block), which
 * proto_job_limit_results replaces with a window of them. */
static int job_alloc(proto_job *job, bool seeds)
{
    size_t n = job->n, sl = proto__seed_len(job->chain), nt = job->ntips;
    size_t seedsz = seeds ? n * sl * sizeof(double) : 0;
    size_t sz = n * (sizeof(proto_target) + nt * sizeof(proto_tip_goal) + (nt > 0) + sizeof(bool));
    size_t res = (seedsz + sz + 15) & ~(size_t)15; /* where a single result begins */
    /* doubles first for alignment */
    /* (a batch's block by calloc: large ones come zeroed from the system
     * without a pass over them) */
    char *b = n == 1 ? zalloc(res + results_bytes(job, 1)) : calloc(1, seedsz + sz + 16);
    if (!b)
        return -1;
    job->block = b;
    job->seed_q = seeds ? (double *)b : NULL;
    b += seedsz;
    job->targets = (proto_target *)b;
    b += n * sizeof(proto_target);
    if (nt) {
        job->goals = (proto_tip_goal *)b;
        b += n * nt * sizeof(proto_tip_goal);
        job->keep = (unsigned char *)b;
        b += n;
    }
    job->has_seed = (bool *)b;
    if (n != 1)
        return results_alloc(job, n);
    results_layout(job, (char *)job->block + res, 1);
    return 0;
}

int proto_job_limit_results(proto_job *job, size_t slots)
{
    if (slots == 0 || slots >= job->n)
        return 0;
    return results_alloc(job, slots);
}

int proto__job_new(proto_chain *chain, const proto_options *opt, proto_kind kind, size_t n,
                   const proto_target *t0, const char *t0_path, bool seeds, proto_job **out,
                   proto_error *err)
{
    *out = NULL;
    proto_job *job = zalloc(sizeof *job);
    if (!job)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    job->kind = kind;
    proto_chain_ref(chain);
    job->chain = chain;
    job->dims2 = chain->kind == PROTO_CHAIN_PLANAR;
    job->opt = *opt;
    job->n = n;
    job->ntips = chain->tree ? chain->tree->ntips : 0;
    /* the solver, from the chain and the first target (a tree's does not
     * depend on its targets) */
    proto_target none;
    memset(&none, 0, sizeof none);
    if (proto__resolve_solver(chain, &job->opt, t0 ? t0 : &none, &job->solver, err))
        goto fail;
    if (job->opt.max_joint_step_in > 0 && job->solver != PROTO_SOLVER_NUMERIC &&
        job->solver != PROTO_SOLVER_CLOSED) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/max_joint_step",
                        "options.max_joint_step is used by the numeric and closed solvers only, "
                        "not by %s",
                        proto_solver_names[job->solver]);
        goto fail;
    }
    if (job->opt.all_solutions) {
        if (job->solver != PROTO_SOLVER_CLOSED) {
            const ik_closed *k = proto__chain_closed(chain);
            proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/all_solutions",
                            "options.all_solutions needs the closed solver, and this request "
                            "is solved by %s: %s",
                            proto_solver_names[job->solver],
                            !k ? "the chain is not a joints or urdf chain"
                            : k->kind == IK_CLOSED_NONE ? ik_closed_why_message(k->why)
                                                        : "the target is not a full pose");
            goto fail;
        }
        if (n > PROTO_MAX_SOLUTION_TARGETS) {
            proto_error_set(err, PROTO_E_TOO_LARGE, "/targets",
                            "targets has %zu elements; with options.all_solutions the limit is "
                            "%d",
                            n, PROTO_MAX_SOLUTION_TARGETS);
            goto fail;
        }
        job->sol_cap = PROTO_MAX_SOLUTIONS;
    }
    proto__result_dims(chain, job->solver, &job->dof, &job->npos, &job->nrot);
    if (job_alloc(job, seeds)) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto fail;
    }
    if (t0) {
        job->targets[0] = *t0;
        if (proto__check_target(job, &job->targets[0], t0_path, err))
            goto fail;
    }
    *out = job;
    return 0;
fail:
    proto_job_free(job);
    return -1;
}

void proto_job_free(proto_job *job)
{
    if (!job)
        return;
    proto_chain_unref(job->chain);
    free(job->block);
    free(job->results_block);
    free(job->seed_owned);
    free(job);
}

int proto__job_target(proto_job *job, size_t i, const json_t *v, const char *path,
                      proto_error *err)
{
    if (job->ntips)
        return proto__tree_target_decode(v, path, job->chain, job->opt.frame,
                                          job->goals + i * job->ntips, &job->keep[i], err);
    if (proto__target_decode(v, path, job->opt.frame, job->dims2, &job->targets[i], err) ||
        proto__check_target(job, &job->targets[i], path, err))
        return -1;
    return 0;
}

/* Target i of a request: its "target" (a solve), element i of its
 * "targets" (jt, a batch), or what a feed gives for it: 1 when the feed
 * filled *t itself (t not NULL; frame f, dims2), else 0 and the object in
 * *v (NULL with *err set when the feed gives none). */
static int target_at(json_t *jt, proto__target_feed *feed, proto_kind kind, size_t i,
                     proto_frame f, bool dims2, proto_target *t, json_t **v, proto_error *err)
{
    if (!feed) {
        *v = kind == PROTO_BATCH ? json_array_get(jt, i) : jt;
        return 0;
    }
    *v = NULL;
    if (feed->next(feed, i, f, dims2, t, v) == 1)
        return 1;
    if (!*v) {
        if (feed->has_failed)
            *err = feed->failed;
        else
            proto_error_set(err, PROTO_E_INVALID_REQUEST, "/targets", "a target is unreadable");
    }
    return 0;
}

/* proto_job_decode_json, with a batch's targets from feed instead of
 * req's "targets" when feed is not NULL. */
static int decode_request(json_t *req, proto_kind kind, const proto_limits *lim,
                          proto_chain_lookup_fn lookup, void *ud, proto__target_feed *feed,
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

    /* the chain */
    json_t *jc = json_object_get(req, "chain"), *jid = json_object_get(req, "chain_id");
    if (jc && jid)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/chain_id",
                               "give either chain or chain_id, not both");
    if (!jc && !jid)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/chain",
                               "chain or chain_id is required");
    const char *id = NULL;
    if (jid && proto_json_string(jid, "/chain_id", 128, &id, err))
        return -1;
    proto_chain *chain = proto_chain_resolve(jc, id, lim, lookup, ud, err);
    if (!chain)
        return -1;

    proto_job *job = NULL;
    proto_options opt;
    if (proto__options_decode(json_object_get(req, "options"), chain, lim, &opt, err))
        goto fail;
    if (opt.servo_period > 0) {
        proto__options_release(&opt);
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo",
                        "options.servo applies to streams (GET /v1/stream), where each answer "
                        "is one control period");
        goto fail;
    }

    /* targets: count them first */
    json_t *jt = NULL;
    size_t n = 1;
    const char *tpath = kind == PROTO_BATCH ? "/targets" : "/target";
    if (feed) {
        n = feed->n;
        if (n < 1 || n > lim->max_targets) {
            proto_error_set(err, PROTO_E_INVALID_REQUEST, tpath, "not a batch a feed decodes");
            goto fail;
        }
    } else if (kind == PROTO_BATCH) {
        jt = proto_json_require(req, "", "targets", err);
        if (!jt || proto_json_array(jt, tpath, 1, lim->max_targets, true, &n, err))
            goto fail;
    } else {
        jt = proto_json_require(req, "", "target", err);
        if (!jt)
            goto fail;
    }
    /* the first target decides the solver */
    proto_target t0;
    char p[PROTO_PATH_MAX];
    if (kind == PROTO_BATCH)
        proto_json_path_index(p, tpath, 0);
    else
        snprintf(p, sizeof p, "%s", tpath);
    bool dims2 = chain->kind == PROTO_CHAIN_PLANAR, tree = chain->kind == PROTO_CHAIN_TREE;
    if (!tree) {
        json_t *v0;
        if (!target_at(jt, feed, kind, 0, opt.frame, dims2, &t0, &v0, err) &&
            (!v0 || proto__target_decode(v0, p, opt.frame, dims2, &t0, err)))
            goto fail;
    }
    json_t *js = json_object_get(req, kind == PROTO_BATCH ? "seeds" : "seed");
    const char *spath = kind == PROTO_BATCH ? "/seeds" : "/seed";
    if (js && kind == PROTO_BATCH) {
        size_t ns;
        if (proto_json_array(js, spath, n, n, false, &ns, err))
            goto fail;
    }
    if (proto__job_new(chain, &opt, kind, n, tree ? NULL : &t0, p, js != NULL, &job, err))
        goto fail;
    proto_chain_unref(chain);
    chain = NULL;
    size_t sl = proto__seed_len(job->chain);
    for (size_t i = 0; i < job->n; i++) {
        /* a feed's targets: the path only for an error (and a feed without
         * paths fails the whole decode on any error) */
        if (kind == PROTO_BATCH && !feed)
            proto_json_path_index(p, tpath, i);
        if (i > 0 || tree) {
            json_t *v;
            proto_target *ti = tree ? NULL : &job->targets[i];
            if (target_at(jt, feed, kind, i, job->opt.frame, dims2, ti, &v, err)) {
                if (proto__check_target(job, ti, "", err)) {
                    proto_json_path_index(p, tpath, i);
                    proto__check_target(job, ti, p, err);
                    goto fail;
                }
            } else {
                if (feed && feed->paths)
                    proto_json_path_index(p, tpath, i);
                if (!v || proto__job_target(job, i, v, p, err))
                    goto fail;
            }
        }
        if (js) {
            json_t *s = kind == PROTO_BATCH ? json_array_get(js, i) : js;
            if (kind == PROTO_BATCH)
                proto_json_path_index(p, spath, i);
            else
                snprintf(p, sizeof p, "%s", spath);
            if (json_is_null(s) && kind == PROTO_BATCH)
                continue;
            if (proto__seed_decode(s, p, job->chain, &job->opt, job->seed_q + i * sl, err))
                goto fail;
            job->has_seed[i] = true;
        }
    }
    /* a step needs somewhere to step from: every target a seed */
    if (job->opt.max_joint_step_in > 0) {
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
    proto_chain_unref(chain);
    proto_job_free(job);
    return -1;
}

/* ---- single solves without a tree -------------------------------------- */

/* Bodies up to this many bytes are tried without a tree: the ones the
 * daemon decodes on its loop (server/http_handlers.c decodes larger ones on
 * the pool), with chains short enough for the per-thread chain memo. */
#define SOLVE_FAST_MAX 16384

/*
 * A POST /v1/solve body of the common shape, read without building a
 * jansson tree: "chain" (an object whose text gives the chain through
 * proto__chain_from_text(), so that a client sending the same limb again
 * gets the chain decoded the first time) or "chain_id" (a plain string),
 * "target" (proto__target_scan(): position and optionally orientation, up,
 * pole), optionally "options" (an object, decoded from its own text); each
 * once, in any order. Everything else (a seed, rotations, weights, escapes
 * in keys, anything that fails a check) is declined: -1, nothing
 * allocated, and the caller decodes the body with a tree, which words the
 * error. What is taken gives the job the tree would give
 * (tests/proto/test_proto_job.c compares the two on random bodies).
 */
static int solve_fast(const char *body, size_t len, const proto_limits *lim,
                      proto_chain_lookup_fn lookup, void *ud, proto_job **out)
{
    if (len == 0 || len > SOLVE_FAST_MAX || len > lim->max_body_bytes)
        return -1;
    proto_scan r = {body, body + len};
    const char *ct = NULL, *ot = NULL, *id = NULL;
    size_t cn = 0, on = 0, idn = 0;
    proto_stream_raw t;
    bool has_target = false;
    if (!proto__scan_char(&r, '{'))
        return -1;
    do {
        const char *k;
        size_t n;
        if (!proto__scan_key(&r, &k, &n))
            return -1;
        if (proto__scan_is(k, n, "chain")) {
            if (ct)
                return -1;
            /* a limb sent again: its text is known whole, no skim */
            proto__scan_end(&r); /* (skips the whitespace) */
            if ((cn = proto__chain_memo_extent(r.p, (size_t)(r.end - r.p), lim)) > 0) {
                ct = r.p;
                r.p += cn;
            } else if (!proto__scan_value(&r, &ct, &cn) || *ct != '{') {
                return -1;
            }
        } else if (proto__scan_is(k, n, "chain_id")) {
            if (id || !proto__scan_string(&r, &id, &idn) || idn > 128)
                return -1;
        } else if (proto__scan_is(k, n, "target")) {
            if (has_target || !proto__target_scan(&r, &t))
                return -1;
            has_target = true;
        } else if (proto__scan_is(k, n, "options")) {
            if (ot || !proto__scan_value(&r, &ot, &on) || *ot != '{')
                return -1;
        } else {
            return -1;
        }
    } while (proto__scan_char(&r, ','));
    if (!proto__scan_char(&r, '}') || !proto__scan_end(&r) || !has_target || !ct == !id)
        return -1;

    proto_error err;
    proto_chain *chain;
    if (ct) {
        chain = proto__chain_from_text(ct, cn, lim, &err);
    } else {
        char idz[129];
        memcpy(idz, id, idn);
        idz[idn] = '\0';
        chain = proto_chain_resolve(NULL, idz, lim, lookup, ud, &err);
    }
    if (!chain)
        return -1;
    int rc = -1;
    proto_options opt;
    json_t *jo = NULL;
    if (chain->kind == PROTO_CHAIN_TREE) /* tree targets name their tips */
        goto out;
    if (ot && !(jo = proto_json_loadb(ot, on, JSON_REJECT_DUPLICATES, NULL)))
        goto out;
    /* servo is for streams, and a joint step needs a seed: both refused */
    if (proto__options_decode(jo, chain, lim, &opt, &err))
        goto out;
    if (opt.servo_period > 0 || opt.max_joint_step_in > 0) {
        proto__options_release(&opt);
        goto out;
    }
    proto_target tg;
    if (!proto__target_raw(&t, opt.frame, chain->kind == PROTO_CHAIN_PLANAR, &tg))
        goto out;
    rc = proto__job_new(chain, &opt, PROTO_SOLVE, 1, &tg, "/target", false, out, &err);
out:
    json_decref(jo);
    proto_chain_unref(chain);
    return rc;
}

int proto_job_decode_json(json_t *req, proto_kind kind, const proto_limits *lim,
                          proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                          proto_error *err)
{
    return decode_request(req, kind, lim, lookup, ud, NULL, out, err);
}

int proto__job_decode_fed(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                          void *ud, proto__target_feed *feed, proto_job **out, proto_error *err)
{
    return decode_request(req, PROTO_BATCH, lim, lookup, ud, feed, out, err);
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
    if (kind == PROTO_SOLVE && solve_fast(body, len, lim, lookup, ud, out) == 0)
        return 0;
    *out = NULL;
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes,
                                    kind == PROTO_BATCH ? PROTO_JSON_BATCH : PROTO_JSON_SOLVE, err);
    if (!root)
        return -1;
    int rc = proto_job_decode_json(root, kind, lim, lookup, ud, out, err);
    json_decref(root);
    return rc;
}

