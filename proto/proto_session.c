/*
 * proto_session.c: a WebSocket stream's typed session (contract in
 * proto_session.h; the messages in proto/STREAM.md).
 *
 * Everything a stream fixes at "open" is decoded there, once, into the
 * internal convention: the options (proto__options_read, exactly a
 * request's "options") and the seed (proto__seed_read, exactly a
 * request's "seed"). Each target message then costs one target decode and
 * one job construction (proto__job_new, shared with HTTP requests); a path
 * message's waypoints are decoded as targets once (proto_session_path) and
 * each sample is interpolated between those typed targets, so no stream
 * message is ever turned back into JSON and parsed again.
 *
 * A tree's stream works the same way on its tree targets ({"tips": ...}):
 * a path's waypoints are tree targets, and each sample interpolates every
 * tip's target between its two waypoints (proto_session_sample).
 *
 * Where a solve starts (proto_session_prepare): the target's own seed (a
 * re-synchronisation after the arm moved by other means), else the seed of
 * a target that was skipped since the last solve (conflation,
 * proto_session_skip: the newest seed sent is the arm's state), else the
 * open seed while the stream has no answer yet, else the previous answer
 * (proto_job_warm_start), always preferring the branch nearest that start.
 */
#include "proto/proto_session.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_codec.h"
#include "proto/proto_scene.h"

struct proto_session {
    proto_chain *chain;
    proto_limits lim;
    proto_options opt;
    double *seed;    /* the open seed (proto__seed_len doubles), or NULL */
    proto_job *prev; /* the last answer: the next job's warm start */
    double *kept;    /* the seed of a skipped target (proto__seed_len doubles) */
    bool has_kept;   /* kept holds one not yet spent */
    proto_scene *scene; /* the stream's scene (a reference each job shares), or NULL */
};

int proto_session_open(proto_chain *chain, const json_t *options, const json_t *seed,
                       const proto_limits *lim, proto_session **out, proto_error *err)
{
    *out = NULL;
    proto_session *s = calloc(1, sizeof *s);
    if (!s)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    if (lim)
        s->lim = *lim;
    else
        proto_limits_default(&s->lim);
    proto_in oin = proto_in_tree(options), sin = proto_in_tree(seed);
    if (proto__options_read(&oin, chain, &s->lim, &s->opt, err))
        goto fail;
    if (seed) {
        size_t len = proto__seed_len(chain);
        s->seed = calloc(len ? len : 1, sizeof *s->seed);
        if (!s->seed) {
            proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
            goto fail;
        }
        if (proto__seed_read(&sin, "/seed", chain, &s->opt, s->seed, err))
            goto fail;
    } else if (s->opt.servo_period > 0) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "/seed",
                        "a servo stream needs the arm's current joints as \"seed\" (each "
                        "answer moves from there)");
        goto fail;
    }
    proto_chain_ref(chain);
    s->chain = chain;
    *out = s;
    return 0;
fail:
    proto__options_release(&s->opt);
    free(s->seed);
    free(s);
    return -1;
}

void proto_session_free(proto_session *s)
{
    if (!s)
        return;
    proto_job_free(s->prev);
    proto_scene_free(s->scene);
    proto_chain_unref(s->chain);
    proto__options_release(&s->opt);
    free(s->seed);
    free(s->kept);
    free(s);
}

size_t proto_session_bytes(const proto_session *s)
{
    return sizeof *s + 2 * proto__seed_len(s->chain) * sizeof(double);
}

const proto_chain *proto_session_chain(const proto_session *s)
{
    return s->chain;
}

/* A one-target job of the session for target *t (checked at path), with
 * room for a seed, in scene (the session's, or the one a tick's target
 * was read with); t NULL on a tree, whose target the caller decodes
 * (proto__job_target). */
static int scene_job(proto_session *s, const proto_scene *scene, const proto_target *t,
                     const char *path, proto_job **out, proto_error *err)
{
    if (proto__job_new(s->chain, &s->opt, PROTO_SOLVE, 1, t, path,
                       proto__seed_len(s->chain) > 0, out, err))
        return -1;
    (*out)->scene = proto_scene_ref((proto_scene *)scene);
    return 0;
}

int proto_session_scene(proto_session *s, const json_t *scene, const char *scene_id,
                        proto_chain_lookup_fn lookup, void *ud, proto_error *err)
{
    proto_scene *n = NULL;
    if (scene_id ? proto__chain_collide_check(s->chain, "/scene_id", err) ||
                       proto_scene_resolve(scene_id, "/scene_id", lookup, ud, &n, err)
                 : proto__chain_collide_check(s->chain, "/scene", err) ||
                       proto_scene_read(scene, "/scene", s->opt.frame, &n, err))
        return -1;
    proto_session_set_scene(s, n);
    return 0;
}

const proto_scene *proto_session_scene_of(const proto_session *s)
{
    return s->scene;
}

void proto_session_set_scene(proto_session *s, proto_scene *scene)
{
    proto_scene_free(s->scene);
    s->scene = scene;
}

static bool is_tree(const proto_session *s)
{
    return s->chain->kind == PROTO_CHAIN_TREE;
}

/* A target (at tpath) and its optional seed (at spath) -> a job in scene. */
static int target_job(proto_session *s, const proto_scene *scene, proto_in *target,
                      const char *tpath, proto_in *seed, const char *spath, proto_job **out,
                      proto_error *err)
{
    *out = NULL;
    proto_job *job;
    if (is_tree(s)) {
        if (scene_job(s, scene, NULL, tpath, &job, err))
            return -1;
        if (proto__job_target(job, 0, target, tpath, err)) {
            proto_job_free(job);
            return -1;
        }
    } else {
        proto_target t;
        proto_target_out to = {&t, s->chain, NULL, NULL};
        if (proto__target_read(target, tpath, s->chain, s->opt.frame, &to, err) ||
            scene_job(s, scene, &t, tpath, &job, err))
            return -1;
    }
    if (proto_in_present(seed)) {
        if (proto__seed_read(seed, spath, s->chain, &job->opt, job->seed_q, err)) {
            proto_job_free(job);
            return -1;
        }
        job->has_seed[0] = true;
    }
    *out = job;
    return 0;
}

/* Target i of a tick, or with i MESSAGE (no tick has that many) a target
 * message's, whose paths are at the root. */
#define MESSAGE SIZE_MAX

/* The path of member key of target i. */
static void target_path(char out[PROTO_PATH_MAX], size_t i, const char *key)
{
    char base[PROTO_PATH_MAX] = "";
    if (i != MESSAGE)
        proto_json_path_index(base, "/targets", i);
    proto_json_path_key(out, base, key);
}

/* A target read from the text (o, proto__tick_target) given its meaning
 * with the stream's chain, into a job in scene (a tree's goals and keep
 * rule straight into the job's): 0, 1 when the text mode declines it (the
 * tree mode then words the error), or -1 with *err set (out of memory, or
 * what a tree's job refuses whatever its target: the tree mode's error). */
static int text_job(proto_session *s, const proto_scene *scene, proto_object *o, proto_job **out,
                    proto_error *err)
{
    proto_target tg;
    proto_target_out to = {&tg, s->chain, NULL, NULL};
    if (!is_tree(s)) {
        if (proto__target_finish(o, "", s->chain, s->opt.frame, &to, err))
            return 1;
        return scene_job(s, scene, &tg, "", out, err) == 0 ? 0
               : err->code == PROTO_E_INTERNAL             ? -1
                                                           : 1;
    }
    if (scene_job(s, scene, NULL, "", out, err))
        return -1;
    to.goals = (*out)->goals;
    to.keep = (*out)->keep;
    if (proto__target_finish(o, "", s->chain, s->opt.frame, &to, err) == 0)
        return 0;
    proto_job_free(*out);
    *out = NULL;
    return 1;
}

int proto_session_tick_target(proto_session *s, const proto_scene *scene,
                              const proto_stream_tick_target *t, size_t i, proto_job **out,
                              proto_error *err)
{
    char tpath[PROTO_PATH_MAX], spath[PROTO_PATH_MAX];
    json_t *v = NULL; /* a raw target's tree, to word its error */
    if (t->raw) {
        /* read from the text: the rules with the stream's chain (the
         * target's path is written only for an error) */
        proto_object o;
        *out = NULL;
        if (t->raw->filled) {
            /* a binary tick's: the rules word the errors, at their paths */
            proto_target tg;
            proto_target_out to = {&tg, s->chain, NULL, NULL};
            target_path(tpath, i, "target");
            if (is_tree(s))
                return proto__unknown_member(err, tpath, "position");
            if (proto__tick_target_filled(t->raw, s->chain, tpath, &o, err) ||
                proto__target_finish(&o, tpath, s->chain, s->opt.frame, &to, err))
                return -1;
            return scene_job(s, scene, &tg, tpath, out, err);
        }
        proto__tick_target(t->raw, &o);
        int rc = text_job(s, scene, &o, out, err);
        if (rc <= 0)
            return rc;
        /* a target the rules refuse: the tree mode words the error */
        v = json_loadb(t->raw->text, t->raw->len, JSON_REJECT_DUPLICATES, NULL);
        if (!v)
            return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    }
    target_path(tpath, i, "target");
    target_path(spath, i, "seed");
    proto_in tin = proto_in_tree(v ? v : t->target), sin = proto_in_tree(t->seed);
    int rc = target_job(s, scene, &tin, tpath, &sin, spath, out, err);
    json_decref(v);
    return rc;
}

int proto_session_target(proto_session *s, const json_t *target, const json_t *seed,
                         proto_job **out, proto_error *err)
{
    proto_stream_tick_target t = {.target = target, .seed = seed};
    return proto_session_tick_target(s, s->scene, &t, MESSAGE, out, err);
}

int proto_session_message_target(proto_session *s, const proto_stream_msg *m, proto_job **out,
                                 proto_error *err)
{
    proto_stream_tick_target t = {.target = m->target, .seed = m->seed, .raw = m->raw};
    return proto_session_tick_target(s, s->scene, &t, MESSAGE, out, err);
}

int proto_session_path(proto_session *s, proto_stream_path *p, proto_error *err)
{
    if (p->bound)
        return 0;
    const size_t nt = is_tree(s) ? s->chain->tree->ntips : 0;
    if (nt) {           /* a tree's: each waypoint's goals and keep rule */
        free(p->goals); /* a failed binding's */
        p->goals = calloc(1, p->npoints * (nt * sizeof *p->goals + 1));
        if (!p->goals)
            return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        p->keep = (unsigned char *)(p->goals + p->npoints * nt);
        p->ntips = nt;
    }
    for (size_t i = 0; i < p->npoints; i++) {
        /* decoded as a target message's target, and so checked against
         * the solver it will get */
        char path[PROTO_PATH_MAX];
        snprintf(path, sizeof path, "/waypoints/%zu", i);
        proto_in in = proto_in_tree(p->pts[i].json), none = proto_in_tree(NULL);
        proto_job *probe;
        if (target_job(s, s->scene, &in, path, &none, NULL, &probe, err))
            return -1;
        if (nt) {
            memcpy(p->goals + i * nt, probe->goals, nt * sizeof *p->goals);
            p->keep[i] = probe->keep[0];
        } else {
            p->pts[i].t = probe->targets[0];
        }
        proto_job_free(probe);
    }
    for (size_t i = 0; i < p->npoints; i++) {
        json_decref(p->pts[i].json);
        p->pts[i].json = NULL;
    }
    p->bound = true;
    return 0;
}

int proto_session_sample(proto_session *s, const proto_stream_path *p, size_t i, proto_job **out,
                         proto_error *err)
{
    *out = NULL;
    if (!p->bound || i >= p->count)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "no sample %zu of this path", i);
    /* time of the sample along the path, in segments (0 .. npoints-1);
     * the last sample lies exactly on the last waypoint */
    size_t nseg = p->npoints - 1;
    double u;
    if (i + 1 == p->count)
        u = (double)nseg;
    else
        u = ((double)i / p->rate_hz) / p->duration_s * (double)nseg;
    if (u > (double)nseg)
        u = (double)nseg;
    size_t seg = (size_t)u;
    if (seg >= nseg)
        seg = nseg - 1;
    double f = u - (double)seg;
    char path[PROTO_PATH_MAX];
    snprintf(path, sizeof path, "/waypoints/%zu", seg);
    if (p->goals) {
        /* a tree: each tip's target between its two waypoints (the
         * segment's first decides the rest) */
        const size_t nt = p->ntips;
        if (scene_job(s, s->scene, NULL, path, out, err))
            return -1;
        proto_job *job = *out;
        for (size_t k = 0; k < nt; k++) {
            const proto_tip_goal *ga = &p->goals[seg * nt + k], *gb = &p->goals[(seg + 1) * nt + k];
            proto_tip_goal g = *ga;
            if (ga->active && gb->active) {
                g.t.position = ik_vec3_lerp(ga->t.position, gb->t.position, f);
                if (ga->t.has_orientation && gb->t.has_orientation)
                    g.t.orientation = ik_quat_slerp(ga->t.orientation, gb->t.orientation, f);
            }
            job->goals[k] = g;
        }
        job->keep[0] = p->keep[seg];
        return 0;
    }
    const proto_target *a = &p->pts[seg].t, *b = &p->pts[seg + 1].t;
    proto_target t = *a;
    t.position = ik_vec3_lerp(a->position, b->position, f);
    if (a->has_orientation && b->has_orientation)
        t.orientation = ik_quat_slerp(a->orientation, b->orientation, f);
    return scene_job(s, s->scene, &t, path, out, err);
}

void proto_session_skip(proto_session *s, proto_job *job)
{
    if (!job)
        return;
    size_t len = proto__seed_len(s->chain);
    if (job->n > 0 && job->has_seed[0] && job->seed_q && len > 0 && job->chain == s->chain) {
        if (!s->kept)
            s->kept = malloc(len * sizeof *s->kept);
        if (s->kept) { /* out of memory: the seed is lost, the stream goes on */
            memcpy(s->kept, job->seed_q, len * sizeof *s->kept);
            s->has_kept = true;
        }
    }
    proto_job_free(job);
}

void proto_session_prepare(proto_session *s, proto_job *job)
{
    size_t len = proto__seed_len(s->chain);
    if (job->n > 0 && !job->has_seed[0] && job->seed_q) {
        const double *from = s->has_kept ? s->kept : !s->prev ? s->seed : NULL;
        if (from) {
            memcpy(job->seed_q, from, len * sizeof *from);
            job->has_seed[0] = true;
        }
    }
    s->has_kept = false;
    proto_job_warm_start(job, s->prev);
}

void proto_session_solved(proto_session *s, proto_job *job)
{
    if (job == s->prev)
        return;
    proto_job_free(s->prev);
    /* kept for its answer, not its world: a scene the stream has replaced
     * is not kept alive by it (a daemon counts the scenes streams hold) */
    proto_scene_free(job->scene);
    job->scene = NULL;
    s->prev = job;
}
