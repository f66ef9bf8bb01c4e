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
 * One decoder reads a request in either of the codec's modes
 * (proto/proto_codec.h): straight from the text first (a body of any form
 * the text mode takes: no jansson tree is built but the chain's, and a
 * chain sent again is the per-thread memo's, proto__chain_from_text), and,
 * when the text mode declines (anything it does not take, every error),
 * from the body's tree, which words the error. The same member rules run
 * in the same order either way. Each item of a batch of items is such a
 * body (proto__job_decode_item). A binary batch's targets come filled from
 * its doubles (proto_binary.c) with its JSON head read as a tree. A large
 * batch's text may also be read in parts (proto_batch_decode_parts): the
 * decoder reads all but the targets after the first and notes where each
 * part of them begins; the parts are read later, side by side, by the
 * same target reader.
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
#include "proto/proto_codec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "solver/ik_status.h"

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
    /* a bones solve's seed has room for its rotations (a stream's warm start) */
    size_t nrot = seeds && n == 1 && job->chain->kind == PROTO_CHAIN_BONES ? job->chain->nbones : 0;
    size_t seedsz = seeds ? n * sl * sizeof(double) + nrot * sizeof(ik_quat) : 0;
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
    job->rot_room = nrot ? (ik_quat *)(b + n * sl * sizeof(double)) : NULL;
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
    static const proto_target none;
    if (proto__resolve_solver(chain, &job->opt, t0 ? t0 : &none, &job->solver, err))
        goto fail;
    /* collisions: the chain needs a model; the closed form answers its
     * nearest solution clear of them, but does not list only those */
    if (job->opt.avoid_collisions || job->opt.has_margin) {
        const char *at = job->opt.avoid_collisions ? "/options/avoid_collisions"
                                                   : "/options/collision_margin";
        if (proto__chain_collide_check(chain, at, err))
            goto fail;
        if (job->opt.avoid_collisions && job->opt.all_solutions) {
            proto_error_set(err, PROTO_E_INVALID_REQUEST, at,
                            "options.avoid_collisions and options.all_solutions do not go "
                            "together (every solution is listed, clear of collisions or not)");
            goto fail;
        }
    }
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
    proto_kinds[chain->kind]->dims(chain, &job->dof, &job->npos, &job->nrot);
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
    proto_scene_free(job->scene);
    free(job);
}

const proto_scene *proto_job_scene(const proto_job *job)
{
    return job->scene;
}

int proto__job_target(proto_job *job, size_t i, proto_in *in, const char *path, proto_error *err)
{
    proto_target_out out = {&job->targets[i], job->chain, job->ntips ? job->goals + i * job->ntips : NULL,
                            job->keep ? &job->keep[i] : NULL};
    if (proto__target_read(in, path, job->chain, job->opt.frame, &out, err))
        return -1;
    return job->ntips ? 0 : proto__check_target(job, &job->targets[i], path, err);
}

/* ---- requests ------------------------------------------------------------------ */

/* Text mode: members of a request taken as the envelope is read (proto_
 * codec.h's proto_known): a chain this thread keeps for the same text, and
 * a single solve's target, read before its chain is known (its rules run
 * once it is), so that neither is skimmed and read again. */
typedef struct early {
    const proto_limits *lim;
    proto_chain *chain; /* a reference, or NULL */
    bool has_target;
    proto_object target;
} early;

static size_t early_member(size_t k, const char *p, size_t avail, void *ud)
{
    early *e = ud;
    size_t len = 0;
    if (k == PROTO_R_CHAIN) {
        e->chain = proto__chain_memo(p, avail, e->lim, &len);
        return e->chain ? len : 0;
    }
    proto_in in = proto_in_text(p, avail);
    if (proto__object_read(&in, "", proto_target_members, PROTO_T_COUNT, PROTO_TARGET_ANY, NULL,
                           &e->target, NULL))
        return 0; /* a skim, and the text mode declines it then */
    e->has_target = true;
    return (size_t)(in.s.p - p);
}

/* Target i of a request into *t (t0, before the job) or the job: from
 * in (element i of "targets", or "target"), read already (pre), or
 * filled (fill). */
static int target_at(proto_in *in, proto_object *pre, const proto__fill *fill, size_t i,
                     const char *path, const proto_chain *c, proto_frame f,
                     const proto_target_out *out, proto_error *err)
{
    if (pre)
        return proto__target_finish(pre, path, c, f, out, err);
    if (!fill)
        return proto__target_read(in, path, c, f, out, err);
    proto_object o;
    if (fill->fill(fill->ud, i, path, &o, err))
        return -1;
    return proto__target_finish(&o, path, c, f, out, err);
}

/* Text mode, a large batch (proto_batch_decode_parts): its targets after
 * the first are read later, in parts, on any threads; the decoder only
 * notes where each part begins (parts_mark). */
struct proto_batch_parts {
    size_t n;         /* parts */
    size_t per;       /* targets in a part (the first: per - 1, from 1) */
    size_t targets;   /* the batch's */
    const char *end;  /* the end of the targets' text */
    const char *close; /* the array's closing bracket */
    const char *at[]; /* part k begins here: before the comma ahead of its
                         first target */
};

typedef struct split {
    size_t per_min, parts_max; /* asked for */
    proto_batch_parts *parts;  /* made by the decoder, or NULL */
} split;

/* The parts of n targets (per_min..: at most parts_max of them), or NULL
 * when fewer than two (or out of memory: the whole batch is read then). */
static proto_batch_parts *parts_new(const split *sp, size_t n)
{
    if (!sp || sp->per_min < 2 || sp->parts_max < 2 || n < 2 * sp->per_min)
        return NULL;
    size_t per = (n + sp->parts_max - 1) / sp->parts_max;
    if (per < sp->per_min)
        per = sp->per_min;
    size_t np = (n + per - 1) / per;
    if (np < 2)
        return NULL;
    proto_batch_parts *pt = malloc(sizeof *pt + np * sizeof pt->at[0]);
    if (pt) {
        pt->n = np;
        pt->per = per;
        pt->targets = n;
    }
    return pt;
}

/* The targets after the first (jt is after target 0) are read later:
 * where each part begins, found in one pass over their text (the
 * envelope's skim balanced it): the commas between targets are those
 * outside brackets and strings. jt is left at the array's end. */
static bool parts_mark(proto_batch_parts *pt, proto_in *jt)
{
    proto__scan_ws(&jt->s); /* then the comma ahead of target 1 */
    size_t i; /* commas between targets */
    if (jt->s.p >= jt->s.end || *jt->s.p != ',' ||
        !proto__scan_commas(&jt->s, pt->at, pt->per, pt->targets - 1, &i) ||
        *jt->s.p != ']' || i + 1 != pt->targets)
        return false;
    pt->end = jt->s.end;
    pt->close = jt->s.p;
    return true;
}

/*
 * The one decoder of request bodies: req in tree or text mode, kind
 * PROTO_SOLVE or PROTO_BATCH, the targets of a binary batch from fill
 * (else NULL), opts the options of a request that has none of its own
 * (an item's: its batch's; else NULL). In text mode paths are not built
 * (an error declines and the tree mode words it); in tree and filled
 * modes every error names its path, found in the order below.
 */
static int decode_request(proto_in *req, proto_kind kind, const proto_limits *lim,
                          proto_chain_lookup_fn lookup, void *ud, const proto__fill *fill,
                          const proto_in *opts, split *sp, proto_job **out, proto_error *err)
{
    bool text = proto_in_is_text(req), batch = kind == PROTO_BATCH;
    *out = NULL;
    proto_object env;
    early pre; /* (not zeroed whole: its object is written before it is read) */
    pre.lim = lim, pre.chain = NULL, pre.has_target = false;
    proto_known known = {PROTO_BIT(PROTO_R_CHAIN) | (batch ? 0 : PROTO_BIT(PROTO_R_TARGET)),
                         early_member, &pre, NULL};
    if (proto__object_read(req, "", proto_request_members, PROTO_R_COUNT,
                           batch ? PROTO_REQUEST_BATCH : PROTO_REQUEST_SOLVE, &known, &env, err)) {
        proto_chain_unref(pre.chain);
        return -1;
    }
    proto_in none = proto_in_tree(NULL);
#define HAS(m) ((env.has & PROTO_BIT(PROTO_R_##m)) != 0)
#define MEMBER(m) (HAS(m) ? &env.in[PROTO_R_##m] : &none)

    /* the chain */
    proto_chain *chain = pre.chain;
    if ((HAS(CHAIN) && HAS(CHAIN_ID)) || (!HAS(CHAIN) && !HAS(CHAIN_ID))) {
        proto_chain_unref(chain);
        return HAS(CHAIN) ? proto_error_set(err, PROTO_E_INVALID_REQUEST, "/chain_id",
                                            "give either chain or chain_id, not both")
                          : proto_error_set(err, PROTO_E_INVALID_REQUEST, "/chain",
                                            "chain or chain_id is required");
    }
    char p[PROTO_PATH_MAX];
    if (HAS(CHAIN_ID)) {
        char id[129];
        size_t n;
        if (proto__member_read(&env, proto_request_members, PROTO_R_CHAIN_ID, false, "", p, err))
            return -1;
        const char *s = proto__member_string(&env, PROTO_R_CHAIN_ID, &n);
        if (n > 128) {
            char what[96];
            snprintf(what, sizeof what, "is too long (%zu bytes; at most %zu)", n, (size_t)128);
            return proto__bad(err, "/chain_id", what);
        }
        memcpy(id, s, n);
        id[n] = '\0';
        chain = proto_chain_resolve(NULL, id, lim, lookup, ud, err);
    } else if (chain) {
        /* the memo's, taken as the envelope was read */
    } else if (text) {
        chain = proto__chain_from_text(MEMBER(CHAIN)->s.p,
                                       (size_t)(MEMBER(CHAIN)->s.end - MEMBER(CHAIN)->s.p), lim, err);
    } else {
        chain = proto_chain_resolve((json_t *)MEMBER(CHAIN)->node, NULL, lim, lookup, ud, err);
    }
    if (!chain)
        return -1;

    proto_job *job = NULL;
    proto_batch_parts *pt = NULL; /* text mode, a large batch: its parts */
    proto_scene *scene = NULL;
    proto_options opt;
    proto_in oin = !HAS(OPTIONS) && opts ? *opts : *MEMBER(OPTIONS);
    if (proto__options_read(&oin, chain, lim, &opt, err))
        goto fail;
    if (HAS(SCENE) && HAS(SCENE_ID)) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/scene_id",
                        "give either scene or scene_id, not both");
        goto fail;
    }
    if (HAS(SCENE)) {
        /* the scene: read from the tree (the text mode declines it), in
         * the request's frame convention, on a chain with a model */
        if (text || proto__chain_collide_check(chain, "/scene", err) ||
            proto_scene_read(MEMBER(SCENE)->node, "/scene", opt.frame, &scene, err))
            goto fail;
    } else if (HAS(SCENE_ID)) {
        /* a registered scene, in ikd's frame already (proto_scene.h) */
        char id[130];
        size_t n = 0;
        const char *sid = NULL;
        if (!proto__member_read(&env, proto_request_members, PROTO_R_SCENE_ID, false, "", p, err))
            sid = proto__member_string(&env, PROTO_R_SCENE_ID, &n);
        if (sid)
            snprintf(id, sizeof id, "%.*s", (int)(n < 129 ? n : 129), sid);
        if (!sid || proto__chain_collide_check(chain, "/scene_id", err) ||
            proto_scene_resolve(id, "/scene_id", lookup, ud, &scene, err))
            goto fail;
    }
    if (opt.servo_period > 0) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo",
                        "options.servo applies to streams (GET /v1/stream), where each answer "
                        "is one control period");
        goto fail;
    }

    /* targets: count them first */
    proto_in *jt = batch ? MEMBER(TARGETS) : MEMBER(TARGET), t0in, el;
    size_t n = 1;
    const char *tpath = batch ? "/targets" : "/target";
    if (fill) {
        n = fill->n;
        if (n < 1 || n > lim->max_targets) {
            proto_error_set(err, PROTO_E_INVALID_REQUEST, tpath, "not a batch a feed decodes");
            goto fail;
        }
    } else if (!proto_in_present(jt)) {
        proto__required(err, "", batch ? "targets" : "target");
        goto fail;
    } else if (batch && proto__array(jt, tpath, 1, lim->max_targets, true, &n, err)) {
        goto fail;
    }
    /* the first target decides the solver */
    proto_target t0;
    p[0] = '\0';
    if (batch && !text)
        proto_json_path_index(p, tpath, 0);
    else if (!text)
        snprintf(p, sizeof p, "%s", tpath);
    bool tree = chain->kind == PROTO_CHAIN_TREE;
    proto_target_out o0 = {&t0, chain, NULL, NULL};
    if (!tree) {
        if (!fill && !(batch ? proto__element(jt, 0, &t0in) : (t0in = *jt, true)))
            goto fail;
        if (target_at(&t0in, pre.has_target ? &pre.target : NULL, fill, 0, p, chain, opt.frame,
                      &o0, err))
            goto fail;
        if (batch && !fill)
            proto__element_done(jt, &t0in);
    }
    proto_in *js = batch ? MEMBER(SEEDS) : MEMBER(SEED);
    bool seeds = proto_in_present(js);
    const char *spath = batch ? "/seeds" : "/seed";
    if (seeds && batch) {
        size_t ns;
        if (proto__array(js, spath, n, n, false, &ns, err))
            goto fail;
    }
    if (proto__job_new(chain, &opt, kind, n, tree ? NULL : &t0, p, seeds, &job, err))
        goto fail;
    job->scene = scene;
    scene = NULL;
    proto_chain_unref(chain);
    chain = NULL;
    size_t sl = seeds ? proto__seed_len(job->chain) : 0;
    if (sp && text && batch && !tree && !seeds && !fill && job->opt.max_joint_step_in <= 0)
        pt = parts_new(sp, job->n);
    for (size_t i = 0; i < job->n; i++) {
        if (pt && i > 0) { /* the others are read later, by their parts */
            if (!parts_mark(pt, jt))
                goto fail;
            break;
        }
        if (batch && !text)
            proto_json_path_index(p, tpath, i);
        if (i > 0 || tree) {
            proto_target_out oi = {&job->targets[i], job->chain, job->ntips ? job->goals + i * job->ntips : NULL,
                                   job->keep ? &job->keep[i] : NULL};
            if (!fill && !(batch ? proto__element(jt, i, &el) : (el = *jt, true)))
                goto fail;
            if (target_at(&el, pre.has_target ? &pre.target : NULL, fill, i, p, job->chain,
                          job->opt.frame, &oi, err) ||
                (!tree && proto__check_target(job, &job->targets[i], p, err)))
                goto fail;
            if (batch && !fill)
                proto__element_done(jt, &el);
        }
        if (seeds) {
            proto_in s = *js;
            if (batch && !proto__element(js, i, &s))
                goto fail;
            if (batch && !text)
                proto_json_path_index(p, spath, i);
            else if (!text)
                snprintf(p, sizeof p, "%s", spath);
            if (batch && (text ? proto__scan_null(&s.s) : json_is_null(s.node))) {
                proto__element_done(js, &s);
                continue;
            }
            if (proto__seed_read(&s, p, job->chain, &job->opt, job->seed_q + i * sl, err))
                goto fail;
            if (batch)
                proto__element_done(js, &s);
            job->has_seed[i] = true;
        }
    }
    if (batch && !fill && (!proto__elements_end(jt) || (seeds && !proto__elements_end(js))))
        goto fail;
    /* a step needs somewhere to step from: every target a seed */
    if (job->opt.max_joint_step_in > 0) {
        for (size_t i = 0; i < job->n; i++) {
            if (job->has_seed[i])
                continue;
            if (batch && seeds)
                proto_json_path_index(p, spath, i);
            else
                snprintf(p, sizeof p, "%s", seeds ? spath : "/options/max_joint_step");
            proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                            "options.max_joint_step needs a seed for every target (the step is "
                            "measured from it)");
            goto fail;
        }
    }
    if (sp)
        sp->parts = pt;
    *out = job;
    return 0;
fail:
    /* the options own nothing past the servo check (options.servo is
     * refused there): released at any failure */
    proto__options_release(&opt);
    free(pt);
    proto_chain_unref(chain);
    proto_scene_free(scene);
    proto_job_free(job);
    return -1;
#undef HAS
#undef MEMBER
}

int proto_job_decode_json(json_t *req, proto_kind kind, const proto_limits *lim,
                          proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                          proto_error *err)
{
    proto_limits def;
    proto_in in = proto_in_tree(req);
    lim = proto__limits_or_default(lim, &def);
    return decode_request(&in, kind, lim, lookup, ud, NULL, NULL, NULL, out, err);
}

int proto__job_decode_filled(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                             void *ud, const proto__fill *fill, proto_job **out, proto_error *err)
{
    proto_limits def;
    proto_in in = proto_in_tree(req);
    lim = proto__limits_or_default(lim, &def);
    return decode_request(&in, PROTO_BATCH, lim, lookup, ud, fill, NULL, NULL, out, err);
}

int proto__job_decode_item(proto_in *in, const proto_in *opts, const proto_limits *lim,
                           proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                           proto_error *err)
{
    return decode_request(in, PROTO_SOLVE, lim, lookup, ud, NULL, opts, NULL, out, err);
}

/* The text mode of a body (sp: a large batch's targets in parts). */
static int decode_text(const char *body, size_t len, proto_kind kind, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, split *sp, proto_job **out)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    *out = NULL;
    if (!body || len == 0 || len > lim->max_body_bytes)
        return -1;
    proto_in in = proto_in_text(body, len);
    proto_error err;
    if (decode_request(&in, kind, lim, lookup, ud, NULL, NULL, sp, out, &err) == 0) {
        if (proto__scan_end(&in.s))
            return 0;
        proto_job_free(*out);
        *out = NULL;
        if (sp) {
            free(sp->parts);
            sp->parts = NULL;
        }
    }
    return -1;
}

int proto__job_decode_text(const char *body, size_t len, proto_kind kind,
                           const proto_limits *lim, proto_chain_lookup_fn lookup, void *ud,
                           proto_job **out)
{
    return decode_text(body, len, kind, lim, lookup, ud, NULL, out);
}

/* ---- a large batch's targets in parts (proto.h) ---------------------------------- */

int proto_batch_decode_parts(const char *body, size_t len, const proto_limits *lim,
                             proto_chain_lookup_fn lookup, void *ud, size_t per_min,
                             size_t parts_max, proto_job **job, proto_batch_parts **parts)
{
    split sp = {per_min, parts_max, NULL};
    *parts = NULL;
    if (decode_text(body, len, PROTO_BATCH, lim, lookup, ud, &sp, job))
        return -1;
    if (!sp.parts)
        return 1; /* too few targets for parts: decoded whole */
    *parts = sp.parts;
    return 0;
}

size_t proto_batch_parts_count(const proto_batch_parts *p)
{
    return p->n;
}

int proto_batch_decode_part(proto_job *job, const proto_batch_parts *p, size_t k)
{
    if (k >= p->n)
        return -1;
    size_t i = k ? k * p->per : 1, end = (k + 1) * p->per;
    if (end > p->targets)
        end = p->targets;
    proto_in in = proto_in_text(p->at[k], (size_t)(p->end - p->at[k]));
    proto_error err;
    for (; i < end; i++) {
        proto_in el;
        if (!proto__element(&in, i, &el) || proto__job_target(job, i, &el, "", &err))
            return -1;
        proto__element_done(&in, &el);
    }
    /* nothing between its last target and the next part's comma, or the
     * array's end */
    proto__scan_ws(&in.s);
    return in.s.p == (k + 1 < p->n ? p->at[k + 1] : p->close) ? 0 : -1;
}

void proto_batch_parts_free(proto_batch_parts *p)
{
    free(p);
}

int proto_job_decode(const char *body, size_t len, proto_kind kind, const proto_limits *lim,
                     proto_chain_lookup_fn lookup, void *ud, proto_job **out, proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    if (proto__job_decode_text(body, len, kind, lim, lookup, ud, out) == 0)
        return 0;
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes,
                                    kind == PROTO_BATCH ? PROTO_JSON_BATCH : PROTO_JSON_SOLVE, err);
    if (!root)
        return -1;
    int rc = proto_job_decode_json(root, kind, lim, lookup, ud, out, err);
    json_decref(root);
    return rc;
}
