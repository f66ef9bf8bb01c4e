/*
 * http_chains.c: chains by id over HTTP: POST /v1/chains, GET and DELETE
 * /v1/chains/{id}, and, for every request that names chains by id (a
 * solve, a batch), the fetch of the ids this replica does not hold from
 * the shared registry (--redis; server/registry.h). Handlers as
 * server/http_handler.h has them: a decoded request in, a response value
 * out, no connection.
 *
 *   POST   /v1/chains        201 (new) / 200 (known): the chain's
 *                            description and id, Location; with --redis
 *                            answered once Redis has the chain (SET NX: 201
 *                            when Redis did not have it), 503 when it
 *                            cannot take it (the chain is then held by this
 *                            replica only)
 *   GET    /v1/chains/{id}   200 the description / 404; an id this replica
 *                            does not hold is fetched first (503 when Redis
 *                            cannot be asked)
 *   DELETE /v1/chains/{id}   204 / 404: removed here and, with --redis,
 *                            from Redis and from every replica's local
 *                            registry (announced); 503 when Redis cannot be
 *                            asked
 * The description leaves out the chain's document (a URDF is tens of
 * kilobytes) unless ?include=source asks for it; a description with it is
 * written on the pool when large.
 *
 * Fetching what a request misses: its decode (on the loop, or on the pool
 * for a large body) failed with unknown_chain or unknown_scene; srv_http_chains_missed
 * notes the ids its body names that no registry here holds (in the
 * request's scope, made then; the body is scanned where it was decoded),
 * srv_http_chains_fetch asks Redis for them in one MGET and, once they are
 * in, calls the handler's again, which decodes with the scope's lookup
 * (srv_http_lookup) and so finds them whatever the local registry evicted
 * meanwhile. A fetch that finds none of them answers the decode's 404; a
 * Redis that cannot be asked, 503 with Retry-After (overloaded, saying
 * why) within --redis-timeout.
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

#define CHAINS_PREFIX "/v1/chains/"

/* ---- the lookup of a request, and fetching what it misses ----------------------- */

void srv_http_lookup(srv_request *q, proto_chain_lookup_fn *fn, void **ud)
{
    /* with --redis every decode notes what it misses (a batch of items
     * decodes through its unknown ids, each answered on its own) */
    if (!q->scope && srv_registry_shared(q->ctx) && (q->scope = malloc(sizeof *q->scope)))
        srv_registry_scope_init(q->scope, q->ctx->registry);
    if (q->scope) {
        *fn = srv_registry_scope_lookup;
        *ud = q->scope;
    } else {
        *fn = srv_registry_lookup;
        *ud = q->ctx->registry;
    }
}

bool srv_http_chains_missed(srv_request *q, const proto_error *err)
{
    srv_ctx *ctx = q->ctx;
    if (!err)
        return q->scope && q->scope->nmissed > 0;
    bool scene = err->code == PROTO_E_UNKNOWN_SCENE;
    if ((err->code != PROTO_E_UNKNOWN_CHAIN && !scene) || !srv_registry_shared(ctx))
        return false;
    if (!q->scope) {
        if (!(q->scope = malloc(sizeof *q->scope)))
            return false;
        srv_registry_scope_init(q->scope, ctx->registry);
    }
    if (q->body && !q->binary_in)
        srv_registry_scope_scan(q->scope, q->body, q->len);
    if (q->scope->nmissed == 0) {
        /* a binary batch's head, or a body the scan cannot read: the id
         * of the error's message ("... with id \"<id>\"", a chain's or,
         * for unknown_scene, a scene's) */
        const char *p = strstr(err->message, "id \"");
        char id[SRV_CHAIN_ID_LEN + 1];
        if (p && sscanf(p + 4, "%32[0-9a-f]", id) == 1 && srv_registry_id_form(id)) {
            proto_reg_kind k = scene ? PROTO_REG_SCENE : PROTO_REG_CHAIN;
            /* notes the miss */
            srv__registry_obj_unref(k, srv_registry_scope_lookup(q->scope, k, id));
        }
    }
    return q->scope->nmissed > 0;
}

typedef struct fetch_wait {
    srv_registry_op op;
    srv_request *q;
    void (*again)(srv_request *q);
    proto_error miss; /* the decode's unknown_chain or unknown_scene */
} fetch_wait;

void srv_http_registry_unavailable(srv_request *q, const char *why)
{
    proto_error e;
    proto_error_set(&e, PROTO_E_OVERLOADED, "",
                    "the shared chain registry (Redis) is unavailable: %.120s; chain ids this "
                    "replica does not hold cannot be looked up now, retry later",
                    why && *why ? why : "no answer");
    srv_metrics_rejected(q->ctx, "registry_unavailable");
    srv_http_respond_error(q, &e);
}

static void fetch_done(srv_registry_op *op)
{
    fetch_wait *w = op->data;
    srv_request *q = w->q;
    if (!srv_http_release(q)) {
        free(w);
        return;
    }
    if (op->status == SRV_EINVAL)
        srv_http_respond_error(q, &op->err); /* a fetched chain refused here */
    else if (op->status != SRV_OK)
        srv_http_registry_unavailable(q, op->what);
    else if (op->found == 0 && w->miss.code != PROTO_E_NONE)
        srv_http_respond_error(q, &w->miss);
    else
        w->again(q);
    free(w);
}

void srv_http_chains_fetch(srv_request *q, const proto_error *err, void (*again)(srv_request *q))
{
    static const proto_error none; /* code PROTO_E_NONE */
    if (!err)
        err = &none;
    fetch_wait *w = calloc(1, sizeof *w);
    if (!w) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    w->q = q;
    w->again = again;
    w->miss = *err;
    w->op.done = fetch_done;
    w->op.data = w;
    srv_http_hold(q);
    int rc = srv_registry_fetch(q->ctx, q->scope, &w->op);
    if (rc == SRV_OK)
        return;
    srv_http_release(q); /* still held by the handler's caller */
    char why[sizeof w->op.what];
    memcpy(why, w->op.what, sizeof why);
    free(w);
    if (rc == SRV_ENOTFOUND && err->code == PROTO_E_NONE)
        again(q);
    else if (rc == SRV_ENOTFOUND)
        srv_http_respond_error(q, err);
    else
        srv_http_registry_unavailable(q, why);
}

/* ---- descriptions ---------------------------------------------------------------- */

int srv_http_include_source(srv_request *q)
{
    const char *v = srv_http_query(q, "include");
    if (!v)
        return 0;
    if (strcmp(v, "source") == 0)
        return 1;
    proto_error e;
    proto_error_set(&e, PROTO_E_INVALID_REQUEST, "", "?include takes one value: source");
    srv_http_respond_error(q, &e);
    return -1;
}

/* The description of chain c (proto_chain_describe with its id; the
 * chain's own document only with source), as text (malloc'd; NULL when
 * out of memory). Any thread: a large one (with source: megabytes for a
 * URDF) is written on the pool. */
static char *chain_text(const proto_chain *c, bool source, size_t *len)
{
    json_t *desc = proto_chain_describe(c);
    if (!desc || !json_is_object(desc)) {
        json_decref(desc);
        desc = json_object();
    }
    if (!source)
        json_object_del(desc, "chain");
    json_object_set_new(desc, "id", json_string(proto_chain_id(c)));
    char *text = proto_json_dump(desc);
    json_decref(desc);
    *len = text ? strlen(text) : 0;
    return text;
}

/* Whether a chain's description is written off the loop. */
static bool chain_is_large(const proto_chain *c, bool source)
{
    return source && proto_chain_memory(c) > SRV_DECODE_INLINE_MAX;
}

/* Answers q with a chain's description text (taken; NULL: out of memory).
 * A large one holds its bytes of the answer budget until sent: the
 * `reserved` bytes (answer_budget_full, before the text was written on
 * the pool) become its length. */
static void chain_answer(srv_request *q, int status, const char *id, char *text, size_t len,
                         size_t reserved)
{
    proto_error e;
    srv_budget *ab = &q->ctx->sh->answer_bytes;
    size_t held = text && len > SRV_DECODE_INLINE_MAX ? len : 0;
    if (held > reserved)
        srv_budget_take(ab, held - reserved); /* its estimate fell short */
    else
        srv_budget_release(ab, reserved - held);
    if (!text) {
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    srv_response v = {0};
    v.status = status;
    v.body = text;
    v.len = len;
    v.held = held;
    if (status == 201 || (status == 200 && q->method == SRV_M_POST))
        snprintf(v.location, sizeof v.location, CHAINS_PREFIX "%s", id);
    srv_http_respond(q, &v);
}

/* A large description to write on the pool: its estimated bytes reserved
 * against the answer budget (reserved, not only checked, so that the bound
 * holds for every loop together while the text is written), or 503 (true)
 * when they do not fit now. */
static bool answer_budget_full(srv_request *q, size_t bytes)
{
    srv_ctx *ctx = q->ctx;
    if (srv_budget_reserve(&ctx->sh->answer_bytes, bytes))
        return false;
    proto_error e;
    proto_error_set(&e, PROTO_E_OVERLOADED, "",
                    "answers waiting for their clients fill the answer budget (--answer-budget); "
                    "retry later");
    srv_metrics_rejected(ctx, "answer_budget");
    srv_http_respond_error(q, &e);
    return true;
}

/* ---- POST /v1/chains ------------------------------------------------------------ */

/* A registration on its way: decoded (on the pool when large), put in the
 * local registry, written to Redis (with --redis), answered. */
typedef struct chain_work {
    srv_solve s; /* its pool work */
    srv_registry_op op;
    srv_request *q;
    srv_registry *registry; /* q's: for after q is gone */
    proto_chain *chain;
    proto_error err;
    bool source;  /* ?include=source */
    bool created; /* new in the local registry */
    char *text;   /* the description */
    size_t len;
    srv_budget *ab;  /* the answer budget, when reserved holds some of it */
    size_t reserved; /* of the answer budget (answer_budget_full) */
} chain_work;

static void chain_work_free(chain_work *cw)
{
    if (cw->reserved)
        srv_budget_release(cw->ab, cw->reserved); /* not answered with it */
    proto_chain_unref(cw->chain);
    free(cw->text);
    free(cw);
}

/* The answer of a registration: 201 when new (to Redis, with --redis; to
 * this replica, without), 200 when known. */
static void registered_answer(chain_work *cw, bool created)
{
    srv_request *q = cw->q;
    char *text = cw->text;
    size_t len = cw->len;
    cw->text = NULL;
    if (!text)
        text = chain_text(cw->chain, cw->source, &len);
    chain_answer(q, created ? 201 : 200, proto_chain_id(cw->chain), text, len, cw->reserved);
    cw->reserved = 0;
    chain_work_free(cw);
}

/* A registration Redis did not take (--redis) is answered 503 and leaves
 * nothing here either, as a DELETE answered 503 does: the copy it put in
 * the local registry goes (kept, this replica would serve an id no other
 * replica knows, and Redis never learns of it). */
static void chain_unregister(chain_work *cw)
{
    if (cw->created)
        srv_registry_remove_kind(cw->registry, PROTO_REG_CHAIN, proto_chain_id(cw->chain));
}

static void stored(srv_registry_op *op)
{
    chain_work *cw = op->data;
    srv_request *q = cw->q;
    if (op->status != SRV_OK)
        chain_unregister(cw);
    if (!srv_http_release(q)) {
        chain_work_free(cw);
        return;
    }
    if (op->status != SRV_OK) {
        srv_http_registry_unavailable(q, op->what);
        chain_work_free(cw);
        return;
    }
    registered_answer(cw, !op->existed);
}

/* Registers cw's decoded chain: local registry, then Redis (with --redis),
 * then the answer. Takes cw. */
static void chain_register(chain_work *cw)
{
    srv_request *q = cw->q;
    srv_ctx *ctx = q->ctx;
    bool created = false;
    cw->registry = ctx->registry;
    if (srv_registry_put(ctx->registry, cw->chain, &created) != SRV_OK) {
        proto_error e;
        proto_error_set(&e, PROTO_E_TOO_LARGE, "",
                        "the chain needs more memory than the registry holds (--registry-bytes)");
        srv_metrics_rejected(ctx, "too_large");
        srv_http_respond_error(q, &e);
        chain_work_free(cw);
        return;
    }
    if (!srv_registry_shared(ctx)) {
        registered_answer(cw, created);
        return;
    }
    /* the registration's document as the client sent it: the chain object */
    cw->created = created;
    cw->op.done = stored;
    cw->op.data = cw;
    srv_http_hold(q);
    int rc = srv_registry_store(ctx, PROTO_REG_CHAIN, proto_chain_id(cw->chain), q->body,
                                q->len, &cw->op);
    if (rc == SRV_OK)
        return;
    chain_unregister(cw);
    srv_http_release(q);
    srv_http_registry_unavailable(q, cw->op.what);
    chain_work_free(cw);
}

static void chain_decode_work(srv_ctx *ctx, srv_solve *s)
{
    chain_work *cw = s->data;
    cw->chain = proto_chain_decode(cw->q->body, cw->q->len, &ctx->cfg.limits, &cw->err);
    if (cw->chain && cw->source)
        cw->text = chain_text(cw->chain, true, &cw->len);
}

static void chain_decoded_done(srv_solve *s, int status)
{
    chain_work *cw = s->data;
    srv_request *q = cw->q;
    if (!srv_http_release(q)) {
        chain_work_free(cw);
        return;
    }
    proto_error e = cw->err;
    if (status != SRV_OK)
        proto_error_set(&e, PROTO_E_INTERNAL, "", "the daemon is shutting down");
    if (status != SRV_OK || !cw->chain) {
        srv_http_respond_error(q, &e);
        chain_work_free(cw);
        return;
    }
    chain_register(cw);
}

void srv_http_chains_post(srv_request *q)
{
    int source = srv_http_include_source(q);
    if (source < 0)
        return;
    chain_work *cw = calloc(1, sizeof *cw);
    if (!cw) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    cw->q = q;
    cw->source = source;
    if (q->len > SRV_DECODE_INLINE_MAX) {
        /* with source, its answer echoes the chain: about the body's size */
        if (source && answer_budget_full(q, q->len)) {
            free(cw);
            return;
        }
        if (source) {
            cw->ab = &q->ctx->sh->answer_bytes;
            cw->reserved = q->len;
        }
        cw->s.work = chain_decode_work;
        cw->s.done = chain_decoded_done;
        cw->s.data = cw;
        if (srv_http_submit(q, &cw->s) != SRV_OK)
            chain_work_free(cw); /* answered */
        return;
    }
    if (!(cw->chain = proto_chain_decode(q->body, q->len, &q->ctx->cfg.limits, &cw->err))) {
        srv_http_respond_error(q, &cw->err);
        free(cw);
        return;
    }
    chain_register(cw);
}

/* ---- GET and DELETE /v1/chains/{id} ---------------------------------------------- */

static void chain_text_work(srv_ctx *ctx, srv_solve *s)
{
    chain_work *cw = s->data;
    cw->text = chain_text(cw->chain, true, &cw->len);
}

static void chain_text_done(srv_solve *s, int status)
{
    chain_work *cw = s->data;
    srv_request *q = cw->q;
    if (!srv_http_release(q)) {
        chain_work_free(cw);
        return;
    }
    if (status != SRV_OK) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "the daemon is shutting down");
        srv_http_respond_error(q, &e);
        chain_work_free(cw);
        return;
    }
    registered_answer(cw, false);
}

/* Answers GET with chain c (a reference, taken over). */
static void describe(srv_request *q, proto_chain *c, bool source)
{
    if (chain_is_large(c, source)) {
        size_t estimate = proto_chain_memory(c);
        if (answer_budget_full(q, estimate)) {
            proto_chain_unref(c);
            return;
        }
        chain_work *cw = calloc(1, sizeof *cw);
        if (!cw) {
            srv_budget_release(&q->ctx->sh->answer_bytes, estimate);
            proto_chain_unref(c);
            proto_error e;
            proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
            srv_http_respond_error(q, &e);
            return;
        }
        cw->ab = &q->ctx->sh->answer_bytes;
        cw->reserved = estimate;
        cw->q = q;
        cw->chain = c;
        cw->source = source;
        cw->s.work = chain_text_work;
        cw->s.done = chain_text_done;
        cw->s.data = cw;
        if (srv_http_submit(q, &cw->s) != SRV_OK)
            chain_work_free(cw);
        return;
    }
    size_t len;
    char *text = chain_text(c, source, &len);
    chain_answer(q, 200, proto_chain_id(c), text, len, 0);
    proto_chain_unref(c);
}

/* The error of an id of kind k that no registry holds. */
static void unknown_error(proto_error *e, proto_reg_kind k, const char *id)
{
    if (k == PROTO_REG_SCENE)
        proto_error_set(e, PROTO_E_UNKNOWN_SCENE, "", "no scene with id \"%.200s\"", id);
    else
        proto_error_set(e, PROTO_E_UNKNOWN_CHAIN, "", "no chain with id \"%.200s\"", id);
}

void srv_http_registry_unknown(srv_request *q, proto_reg_kind k, const char *id)
{
    proto_error e;
    unknown_error(&e, k, id);
    srv_http_respond_error(q, &e);
}

/* GET of an id fetched from Redis: the scope holds it now. */
static void get_again(srv_request *q)
{
    const char *id = q->url + strlen(CHAINS_PREFIX);
    proto_chain *c = srv_registry_scope_lookup(q->scope, PROTO_REG_CHAIN, id);
    int source = srv_http_include_source(q);
    if (source < 0) {
        proto_chain_unref(c);
        return;
    }
    if (!c) {
        srv_http_registry_unknown(q, PROTO_REG_CHAIN, id);
        return;
    }
    describe(q, c, source);
}

/* A DELETE sent on to Redis (--redis): the local copy is removed only
 * once Redis has deleted the key, or may have (sent, not answered), so
 * that a 503 for a Redis that cannot be reached means that nothing
 * happened, and a 503 after the DEL went out leaves this replica to
 * follow Redis; either way the client retries, as for every other 503
 * (404 when the first DELETE was carried out after all). */
typedef struct forget_wait {
    srv_registry_op op;
    srv_request *q;
    proto_reg_kind kind;
    bool held_here; /* when the DELETE came */
    char id[SRV_CHAIN_ID_LEN + 1];
} forget_wait;

_Static_assert(PROTO_SCENE_ID_LEN == SRV_CHAIN_ID_LEN, "one id length for both kinds");

static void forgotten(srv_registry_op *op)
{
    forget_wait *w = op->data;
    srv_request *q = w->q;
    /* deleted in Redis: this replica's copy too, even when the client has
     * gone (the announcement may have removed it first: it was sent
     * behind the DEL, and is read on another connection). And when the
     * DEL was sent but not answered (Redis paused or slower than
     * --redis-timeout, the connection lost): Redis may still run it, and
     * this replica's subscription, dropped with its connection, would not
     * hear of it; the copy here is forgotten, so that the next request
     * asks Redis, which has the id or not. Only a refusal (an error
     * reply) says that nothing was deleted. */
    if (op->status == SRV_OK || !op->refused)
        srv_registry_remove_kind(q->ctx->registry, w->kind, w->id);
    if (srv_http_release(q)) {
        if (op->status != SRV_OK) {
            srv_http_registry_unavailable(q, op->what);
        } else if (w->held_here || op->existed) {
            srv_response v = {0};
            v.status = 204;
            srv_http_respond(q, &v);
        } else {
            srv_http_registry_unknown(q, w->kind, w->id);
        }
    }
    free(w);
}

void srv_http_registry_delete(srv_request *q, proto_reg_kind k, const char *id)
{
    srv_ctx *ctx = q->ctx;
    bool shared = srv_registry_shared(ctx) && srv_registry_id_form(id);
    forget_wait *w = shared ? calloc(1, sizeof *w) : NULL;
    if (shared && !w) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    if (!w) {
        if (srv_registry_remove_kind(ctx->registry, k, id) != SRV_OK) {
            srv_http_registry_unknown(q, k, id);
            return;
        }
        srv_response v = {0};
        v.status = 204;
        srv_http_respond(q, &v);
        return;
    }
    w->q = q;
    w->kind = k;
    memcpy(w->id, id, sizeof w->id);
    void *held = srv_registry_lookup(ctx->registry, k, id);
    w->held_here = held != NULL;
    srv__registry_obj_unref(k, held);
    w->op.done = forgotten;
    w->op.data = w;
    srv_http_hold(q);
    if (srv_registry_forget(ctx, k, id, &w->op) != SRV_OK) {
        srv_http_release(q);
        srv_http_registry_unavailable(q, w->op.what);
        free(w);
    }
}

void srv_http_registry_get_miss(srv_request *q, proto_reg_kind k, const char *id,
                                void (*again)(srv_request *q))
{
    srv_ctx *ctx = q->ctx;
    proto_error miss;
    unknown_error(&miss, k, id);
    if (srv_registry_shared(ctx) && srv_registry_id_form(id) && !q->scope &&
        (q->scope = malloc(sizeof *q->scope)))
        srv_registry_scope_init(q->scope, ctx->registry);
    if (!srv_registry_shared(ctx) || !srv_registry_id_form(id) || !q->scope) {
        srv_http_respond_error(q, &miss);
        return;
    }
    srv__registry_obj_unref(k, srv_registry_scope_lookup(q->scope, k, id)); /* notes the miss */
    srv_http_chains_fetch(q, &miss, again);
}

void srv_http_chain_id(srv_request *q)
{
    srv_ctx *ctx = q->ctx;
    const char *id = q->url + strlen(CHAINS_PREFIX);
    if (q->method == SRV_M_DELETE) {
        srv_http_registry_delete(q, PROTO_REG_CHAIN, id);
        return;
    }
    int source = srv_http_include_source(q);
    if (source < 0)
        return;
    proto_chain *c = srv_registry_get(ctx->registry, id);
    if (c) {
        describe(q, c, source);
        return;
    }
    srv_http_registry_get_miss(q, PROTO_REG_CHAIN, id, get_again);
}
