/*
 * http_scenes.c: registered scenes over HTTP (issue 21: a large static
 * world sent once, then named by "scene_id" in requests, batches and
 * streams). Handlers as server/http_handler.h has them: a decoded request
 * in, a response value out, no connection.
 *
 *   POST   /v1/scenes        201 (new) / 200 (known): the scene's
 *                            description and id (proto_scene_describe),
 *                            Location: /v1/scenes/{id}; with --redis
 *                            answered once Redis has it (201 when Redis
 *                            did not), 503 when it cannot take it
 *   GET    /v1/scenes/{id}   200 the description (?include=source adds
 *                            the scene itself) / 404 unknown_scene; with
 *                            --redis an id this replica does not hold is
 *                            fetched first
 *   DELETE /v1/scenes/{id}   204 / 404 unknown_scene; with --redis removed
 *                            from Redis and from every replica
 *
 * A scene lives in the chain registry (server/registry.h), as an entry of
 * its own kind: its bytes count against --registry-bytes with the chains',
 * and the same LRU evicts either; with --redis it is shared as chains are
 * (its canonical body at ikd:scene:<id>), and requests and streams naming
 * it on another replica fetch it (http_chains.c, ws_messages.c). Requests
 * and streams that use it hold their own reference, so a DELETE or an
 * eviction never pulls it from under them.
 *
 * A body larger than SRV_DECODE_INLINE_MAX is decoded on the pool, as
 * chains are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json_write.h"
#include "proto/proto_scene.h"
#include "server/http_handler.h"
#include "server/metrics.h"
#include "server/registry.h"
#include "server/solve.h"

#define SCENES_PREFIX "/v1/scenes/"

/* Answers q with scene s's description (status 201, 200), Location on a
 * registration. */
static void answer(srv_request *q, int status, const proto_scene *s, bool source)
{
    json_t *d = proto_scene_describe(s, source);
    char *text = d ? proto_json_dump(d) : NULL;
    json_decref(d);
    if (!text) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    srv_response v = {0};
    v.status = status;
    v.body = text;
    v.len = strlen(text);
    if (q->method == SRV_M_POST)
        snprintf(v.location, sizeof v.location, SCENES_PREFIX "%s", s->id);
    srv_http_respond(q, &v);
}

/* A registration written to Redis (--redis). */
typedef struct store_wait {
    srv_registry_op op;
    srv_request *q;
    srv_registry *registry; /* q's: for after q is gone */
    proto_scene *scene;
    bool source;
    bool created; /* new in the local registry */
} store_wait;

/* A registration Redis did not take is answered 503 and leaves nothing
 * here either (as http_chains.c's chain_unregister). */
static void scene_unregister(store_wait *w)
{
    if (w->created)
        srv_registry_remove_kind(w->registry, PROTO_REG_SCENE, w->scene->id);
}

static void stored(srv_registry_op *op)
{
    store_wait *w = op->data;
    if (op->status != SRV_OK)
        scene_unregister(w);
    if (srv_http_release(w->q)) {
        if (op->status != SRV_OK)
            srv_http_registry_unavailable(w->q, op->what);
        else
            answer(w->q, op->existed ? 200 : 201, w->scene, w->source);
    }
    proto_scene_free(w->scene);
    free(w);
}

/* Puts the decoded scene (a reference, taken) in the registry, and in
 * Redis with --redis, and answers. */
static void scene_register(srv_request *q, proto_scene *s, bool source)
{
    srv_ctx *ctx = q->ctx;
    bool created = false;
    store_wait *w = NULL;
    if (srv_registry_put_scene(ctx->registry, s, &created) != SRV_OK) {
        proto_error e;
        proto_error_set(&e, PROTO_E_TOO_LARGE, "",
                        "the scene needs more memory than the registry holds (--registry-bytes)");
        srv_metrics_rejected(ctx, "too_large");
        srv_http_respond_error(q, &e);
    } else if (!srv_registry_shared(ctx)) {
        answer(q, created ? 201 : 200, s, source);
    } else if (!(w = calloc(1, sizeof *w))) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
    } else {
        w->q = q;
        w->registry = ctx->registry;
        w->scene = s;
        w->source = source;
        w->created = created;
        w->op.done = stored;
        w->op.data = w;
        srv_http_hold(q);
        if (srv_registry_store(ctx, PROTO_REG_SCENE, s->id, s->text, s->text_len, &w->op) ==
            SRV_OK)
            return; /* stored() answers and frees */
        scene_unregister(w);
        srv_http_release(q);
        srv_http_registry_unavailable(q, w->op.what);
        free(w);
    }
    proto_scene_free(s);
}

/* A registration decoded on the pool. */
typedef struct scene_work {
    srv_solve s;
    srv_request *q;
    proto_scene *scene;
    proto_error err;
    bool source;
} scene_work;

static void decode_work(srv_ctx *ctx, srv_solve *s)
{
    scene_work *w = s->data;
    w->scene = proto_scene_decode(w->q->body, w->q->len, &ctx->cfg.limits, &w->err);
}

static void decode_done(srv_solve *s, int status)
{
    scene_work *w = s->data;
    srv_request *q = w->q;
    if (!srv_http_release(q)) {
        proto_scene_free(w->scene);
        free(w);
        return;
    }
    if (status != SRV_OK) {
        proto_scene_free(w->scene);
        w->scene = NULL;
        proto_error_set(&w->err, PROTO_E_INTERNAL, "", "the daemon is shutting down");
    }
    if (w->scene)
        scene_register(q, w->scene, w->source);
    else
        srv_http_respond_error(q, &w->err);
    free(w);
}

void srv_http_scenes_post(srv_request *q)
{
    int source = srv_http_include_source(q);
    if (source < 0)
        return;
    proto_error e;
    if (q->len <= SRV_DECODE_INLINE_MAX) {
        proto_scene *s = proto_scene_decode(q->body, q->len, &q->ctx->cfg.limits, &e);
        if (s)
            scene_register(q, s, source);
        else
            srv_http_respond_error(q, &e);
        return;
    }
    scene_work *w = calloc(1, sizeof *w);
    if (!w) {
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    w->q = q;
    w->source = source;
    w->s.work = decode_work;
    w->s.done = decode_done;
    w->s.data = w;
    if (srv_http_submit(q, &w->s) != SRV_OK)
        free(w); /* answered */
}

/* GET of an id fetched from Redis: the scope holds it now. */
static void get_again(srv_request *q)
{
    const char *id = q->url + strlen(SCENES_PREFIX);
    int source = srv_http_include_source(q);
    if (source < 0)
        return;
    proto_scene *s = srv_registry_scope_lookup(q->scope, PROTO_REG_SCENE, id);
    if (!s) {
        srv_http_registry_unknown(q, PROTO_REG_SCENE, id);
        return;
    }
    answer(q, 200, s, source);
    proto_scene_free(s);
}

void srv_http_scene_id(srv_request *q)
{
    srv_ctx *ctx = q->ctx;
    const char *id = q->url + strlen(SCENES_PREFIX);
    if (q->method == SRV_M_DELETE) {
        srv_http_registry_delete(q, PROTO_REG_SCENE, id);
        return;
    }
    int source = srv_http_include_source(q);
    if (source < 0)
        return;
    proto_scene *s = srv_registry_get_scene(ctx->registry, id);
    if (s) {
        answer(q, 200, s, source);
        proto_scene_free(s);
        return;
    }
    srv_http_registry_get_miss(q, PROTO_REG_SCENE, id, get_again);
}
