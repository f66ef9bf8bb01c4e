/*
 * registry_redis.c: what the shared chain registry does with Redis
 * (--redis; the contract is server/registry.h's "shared registry"
 * section): fetch, store, forget, and the check of the ids held here after
 * this replica was cut off. The connections and the commands' deadlines
 * are registry_redis_conn.c's (server/registry_redis.h).
 *
 * Keys and values: a registration is SET at "ikd:chain:<id>" with NX (the
 * value is the registration's document, the chain object as the client
 * sent it; NX answers whether it was there already), a scene's at
 * "ikd:scene:<id>" (its canonical body), with no expiry:
 * Redis's own memory policy decides what it keeps (maxmemory and an LRU
 * policy, or none). A replica that does not hold an id fetches it with
 * one MGET for all the ids a request names, decodes each value with its
 * own limits (on the pool when large), checks that it has the id it was
 * fetched for (a value that does not is ignored, and logged), and keeps it
 * in its local registry (unless a deletion, or the check below, came
 * while it was fetched: srv__registry_put_fetched; the request that
 * fetched it is answered with it either way, as it asked Redis before).
 * A deletion is DEL, then PUBLISH of the id on
 * "ikd:chains:deleted" ("scene:<id>" for a scene), to which every loop of
 * every replica is subscribed (a second connection): each drops the id
 * from its local registry. When no loop was subscribed for a while, the
 * first up again checks every id held with EXISTS and drops those Redis
 * no longer has (deleted meanwhile, or lost by a Redis that restarted);
 * a fetch sent before the check began keeps nothing, so that what it
 * brings after the check looked cannot escape it.
 *
 * Not here: the local registry and the scopes (registry.c), what requests
 * do with a fetch (http_chains.c, http_batch.c, ws_messages.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/registry_redis.h"
#include "server/solve.h"
#include "server/srv.h"

#define KEY_PREFIX "ikd:chain:"
#define SCENE_KEY_PREFIX "ikd:scene:"
#define KEY_MAX (sizeof SCENE_KEY_PREFIX + SRV_CHAIN_ID_LEN)
#define SYNC_WINDOW 64 /* EXISTS in flight while checking the local registry */

enum { SYNC_DONE = 0, SYNC_NEEDED, SYNC_RUNNING };

/* ---- operations ---------------------------------------------------------------------------- */

static void op_finish(srv_registry_op *op, int status, const char *what)
{
    op->status = status;
    if (what)
        snprintf(op->what, sizeof op->what, "%s", what);
    op->done(op);
}

static void fetch_free_texts(srv_registry_op *op)
{
    for (size_t i = 0; op->texts && i < op->nids; i++)
        free(op->texts[i]);
    free(op->texts);
    free(op->lens);
    free(op->ids);
    op->texts = NULL;
    op->lens = NULL;
    op->ids = NULL;
}

/* The command of op (named name in the metrics) ended without an answer
 * (rep NULL: status and why) or with Redis's error: op ends with SRV_EIO
 * (SRV_ESHUTDOWN when shutting down), its texts freed first; true. False
 * when rep is an answer. */
static bool op_failed(srv_redis *r, srv_registry_op *op, const char *name,
                      const redisReply *rep, int status, const char *why)
{
    char what[160];
    if (rep && rep->type != REDIS_REPLY_ERROR)
        return false;
    if (rep) {
        snprintf(what, sizeof what, "Redis refused: %.120s", rep->str);
        op->refused = true;
        status = SRV_EIO;
        why = what;
    }
    srv_metrics_shared(r->ctx->metrics, name,
                       status == SRV_ESHUTDOWN ? "shutdown" : "unavailable");
    fetch_free_texts(op);
    op_finish(op, status, why);
    return true;
}

/* The Redis key of an id of kind k, in key (KEY_MAX bytes). */
static void key_of(char *key, proto_reg_kind k, const char *id)
{
    snprintf(key, KEY_MAX, "%s%s", k == PROTO_REG_SCENE ? SCENE_KEY_PREFIX : KEY_PREFIX, id);
}

/* ---- fetched values ------------------------------------------------------------------------ */

typedef struct decode_work {
    srv_work w;
    srv_redis *r;
    srv_registry_op *op;
    void **chains; /* proto_chain * or proto_scene *, by op->ids[i].kind */
    proto_error err;
    bool refused;
} decode_work;

/* A fetched text of kind k decoded (any thread): a new reference, or NULL
 * with *e set. */
static void *decode_one(srv_ctx *ctx, proto_reg_kind k, const char *text, size_t len,
                        proto_error *e)
{
    if (k == PROTO_REG_SCENE)
        return proto_scene_decode(text, len, &ctx->cfg.limits, e);
    return proto_chain_decode(text, len, &ctx->cfg.limits, e);
}

/* Decodes the fetched texts into chains and scenes (any thread). */
static void decode_all(srv_ctx *ctx, srv_registry_op *op, void **chains, proto_error *err,
                       bool *refused)
{
    for (size_t i = 0; i < op->nids; i++) {
        chains[i] = NULL;
        if (!op->texts[i])
            continue;
        proto_error e;
        proto_reg_kind k = op->ids[i].kind;
        void *c = decode_one(ctx, k, op->texts[i], op->lens[i], &e);
        if (!c && e.code == PROTO_E_TOO_LARGE) {
            if (!*refused) /* a value this replica's limits refuse */
                *err = e;
            *refused = true;
            continue;
        }
        if (!c) {
            /* not the client's error: what Redis holds there is no chain
             * or scene this replica reads (written by another program, or
             * by another version of ikd); the id stays unknown here */
            char key[KEY_MAX];
            key_of(key, k, op->ids[i].id);
            srv_log(ctx, SRV_LOG_WARN, "Redis holds at %s a value that does not decode (%s at "
                    "'%s'): ignored", key, e.message, e.path);
            continue;
        }
        const char *got = srv__registry_obj_id(k, c);
        if (strcmp(got, op->ids[i].id) != 0 &&
            !(k == PROTO_REG_SCENE &&
              proto_scene_stored_as(c, op->texts[i], op->lens[i], op->ids[i].id))) {
            char key[KEY_MAX];
            key_of(key, k, op->ids[i].id);
            srv_log(ctx, SRV_LOG_WARN, "Redis holds at %s a value whose id is %s: ignored", key,
                    got);
            srv__registry_obj_unref(k, c);
            continue;
        }
        chains[i] = c;
    }
}

/* Back on the loop: the chains join the local registry and the scope. */
static void fetch_finish(srv_redis *r, srv_registry_op *op, void **chains,
                         const proto_error *err, bool refused)
{
    srv_ctx *ctx = r->ctx;
    size_t bound = ctx->cfg.registry_bytes > 0 ? ctx->cfg.registry_bytes : (size_t)64 << 20;
    bool too_large = false;
    op->found = 0;
    for (size_t i = 0; i < op->nids; i++) {
        void *c = chains[i];
        proto_reg_kind k = op->ids[i].kind;
        if (!c)
            continue;
        if (op->scope->held_bytes + srv__registry_obj_bytes(k, c) > bound) {
            too_large = true;
            srv__registry_obj_unref(k, c);
            continue;
        }
        /* too large for it, or deleted since the fetch went: the scope holds it */
        srv__registry_put_fetched(ctx->registry, k, c, op->removals);
        if (srv__registry_scope_hold(op->scope, k, c))
            op->found++;
    }
    free(chains);
    int status = SRV_OK;
    if (refused) {
        op->err = *err;
        status = SRV_EINVAL;
    } else if (too_large) {
        proto_error_set(&op->err, PROTO_E_TOO_LARGE, "",
                        "the chains and scenes this request names need more memory than "
                        "the registry holds (--registry-bytes)");
        status = SRV_EINVAL;
    }
    srv_metrics_shared(ctx->metrics, "fetch", op->found ? "found" : "missing");
    fetch_free_texts(op);
    op_finish(op, status, NULL);
}

static void decode_work_run(srv_work *w)
{
    decode_work *d = w->data;
    decode_all(d->r->ctx, d->op, d->chains, &d->err, &d->refused);
}

static void decode_work_done(srv_work *w, int status)
{
    decode_work *d = w->data;
    srv_redis *r = d->r;
    r->decoding--;
    if (status != SRV_OK) { /* cancelled before it ran */
        free(d->chains);
        fetch_free_texts(d->op);
        op_finish(d->op, SRV_ESHUTDOWN, "ikd is shutting down");
    } else {
        fetch_finish(r, d->op, d->chains, &d->err, d->refused);
    }
    free(d);
    srv__redis_maybe_free(r);
}

/* The MGET answer of a fetch: its values decoded (on the pool when they
 * are large), then fetch_finish. */
static void fetch_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                        const char *why)
{
    srv_registry_op *op = data;
    if (op_failed(r, op, "fetch", rep, status, why))
        return;
    if (rep->type != REDIS_REPLY_ARRAY) {
        fetch_free_texts(op);
        op_finish(op, SRV_EIO, "Redis answered MGET with something else than an array");
        return;
    }
    size_t total = 0;
    for (size_t i = 0; i < op->nids && i < rep->elements; i++) {
        redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len == 0)
            continue;
        op->texts[i] = malloc((size_t)e->len + 1);
        if (!op->texts[i])
            continue;
        memcpy(op->texts[i], e->str, (size_t)e->len);
        op->texts[i][e->len] = '\0';
        op->lens[i] = (size_t)e->len;
        total += (size_t)e->len;
    }
    void **chains = calloc(op->nids ? op->nids : 1, sizeof *chains);
    decode_work *d = chains && total > SRV_DECODE_INLINE_MAX ? calloc(1, sizeof *d) : NULL;
    if (d) {
        d->r = r;
        d->op = op;
        d->chains = chains;
        d->w.data = d;
        if (srv_pool_submit_always(r->ctx, &d->w, decode_work_run, decode_work_done) == SRV_OK) {
            r->decoding++;
            return;
        }
        free(d);
    }
    if (!chains) {
        fetch_free_texts(op);
        op_finish(op, SRV_ENOMEM, "out of memory");
        return;
    }
    proto_error err;
    bool refused = false;
    decode_all(r->ctx, op, chains, &err, &refused);
    fetch_finish(r, op, chains, &err, refused);
}

/* ---- store and forget's answers --------------------------------------------------------------- */

/* SET NX: OK (written) or nil (there already). */
static void store_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                        const char *why)
{
    srv_registry_op *op = data;
    if (op_failed(r, op, "store", rep, status, why))
        return;
    op->existed = rep->type == REDIS_REPLY_NIL;
    srv_metrics_shared(r->ctx->metrics, "store", "ok");
    op_finish(op, SRV_OK, NULL);
}

/* DEL: the keys deleted. */
static void forget_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                         const char *why)
{
    srv_registry_op *op = data;
    if (op_failed(r, op, "forget", rep, status, why))
        return;
    op->existed = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
    srv_metrics_shared(r->ctx->metrics, "forget", "ok");
    op_finish(op, SRV_OK, NULL);
}

/* ---- checking the local registry against Redis ---------------------------------------------- */

/* The check ends: done (every id answered), or cut short by a lost
 * connection (run again once a loop is up). */
static void sync_end(srv_redis *r, bool done)
{
    unsigned running = SYNC_RUNNING;
    if (!r->sync)
        return;
    atomic_compare_exchange_strong(&r->ctx->sh->redis_sync, &running,
                                   done ? SYNC_DONE : SYNC_NEEDED);
    if (done)
        srv_log(r->ctx, SRV_LOG_INFO, "the shared registry: %zu of the %zu ids held here were "
                "gone from Redis and are dropped", r->sync_dropped, r->nsync);
    free(r->sync);
    r->sync = NULL;
}

static void check_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                        const char *why);

/* On a loop that is up (its subscription among them): the check starts
 * when it is needed and no loop runs it; then, and on each answer, EXISTS
 * for the ids not asked yet, SYNC_WINDOW in flight. */
static void sync_send(srv_redis *r)
{
    unsigned needed = SYNC_NEEDED;
    if (!r->sync) {
        if (atomic_load(&r->ctx->sh->redis_sync) != SYNC_NEEDED ||
            !atomic_compare_exchange_strong(&r->ctx->sh->redis_sync, &needed, SYNC_RUNNING))
            return;
        /* a fetch sent before (answered, perhaps, before deletions this
         * replica missed) keeps nothing: what it brings after this would
         * escape the check; its request still has it */
        srv__registry_bar_fetches(r->ctx->registry);
        r->sync = srv__registry_ids(r->ctx->registry, &r->nsync);
        r->sync_sent = r->sync_open = r->sync_dropped = 0;
        if (!r->sync) { /* none held, or out of memory (the next tick tries again) */
            atomic_store(&r->ctx->sh->redis_sync, r->nsync ? SYNC_NEEDED : SYNC_DONE);
            return;
        }
    }
    while (r->sync_sent < r->nsync && r->sync_open < SYNC_WINDOW) {
        char key[KEY_MAX];
        key_of(key, r->sync[r->sync_sent].kind, r->sync[r->sync_sent].id);
        if (srv__redis_send(r, check_reply, (void *)(uintptr_t)r->sync_sent, 2,
                            (const char *[]){"EXISTS", key},
                            (const size_t[]){6, strlen(key)}) != SRV_OK)
            return; /* the next answer, or the next tick, sends it */
        r->sync_sent++;
        r->sync_open++;
    }
    if (r->sync_open == 0)
        sync_end(r, true);
}

/* Redis's answer to the EXISTS of the id at sync[at] (data): 0, gone (deleted,
 * or lost by a Redis that restarted empty); refused (an ACL without
 * EXISTS): the copy is kept. */
static void check_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                        const char *why)
{
    size_t at = (size_t)(uintptr_t)data;
    if (!r->sync || at >= r->nsync)
        return;
    r->sync_open--;
    if (!rep)
        return; /* connection lost: on_down ends the check */
    bool gone = rep->type == REDIS_REPLY_INTEGER && rep->integer == 0;
    /* dropped when this removed the copy: not when a DELETE announced
     * since (or the LRU) did, which counts neither kept nor dropped */
    bool dropped = gone && srv_registry_remove_kind(r->ctx->registry, r->sync[at].kind,
                                                    r->sync[at].id) == SRV_OK;
    if (dropped)
        r->sync_dropped++;
    if (!gone || dropped)
        srv_metrics_shared(r->ctx->metrics, "check", dropped ? "dropped"
                           : rep->type == REDIS_REPLY_INTEGER ? "kept" : "refused");
    sync_send(r);
}

/* The connections go down: when no loop is up any more, deletions may be
 * missed from now on, so the check is needed (unless one is running: it
 * is cut short below and marked needed again); a check this loop runs
 * ends. */
static void on_down(srv_redis *r, bool last)
{
    unsigned done = SYNC_DONE;
    if (last)
        atomic_compare_exchange_strong(&r->ctx->sh->redis_sync, &done, SYNC_NEEDED);
    sync_end(r, false);
}

/* ---- the daemon's entry points -------------------------------------------------------------------- */

static const srv__redis_hooks hooks = {.down = on_down, .tick = sync_send};

int srv_registry_redis_start(srv_ctx *ctx)
{
    if (!ctx->cfg.redis_url)
        return SRV_OK;
    /* until a loop is first up, no loop hears the deletions, yet fetches
     * go out (on a connection for commands that answers before the
     * subscription does): the first loop up checks what they brought, as
     * after a cut (a loop started later: one check more, of what is held) */
    unsigned done = SYNC_DONE;
    atomic_compare_exchange_strong(&ctx->sh->redis_sync, &done, SYNC_NEEDED);
    return srv__redis_start(ctx, &hooks);
}

void srv_registry_redis_stop(srv_ctx *ctx)
{
    srv__redis_stop(ctx);
}

/* The redis to send on, connecting first when it is down and its back-off
 * has passed; NULL (with SRV_ENOTFOUND or SRV_EIO in *rc and the reason in
 * op->what) when nothing can be sent now. */
static srv_redis *usable(srv_ctx *ctx, srv_registry_op *op, int *rc)
{
    srv_redis *r = ctx->redis;
    op->ctx = ctx;
    op->status = SRV_OK;
    op->what[0] = '\0';
    op->existed = false;
    op->found = 0;
    proto_error_clear(&op->err);
    if (!r || r->stopping) {
        *rc = r ? SRV_EIO : SRV_ENOTFOUND;
        snprintf(op->what, sizeof op->what, "%s", r ? "ikd is shutting down" : "no --redis");
        return NULL;
    }
    srv__redis_connect_due(r);
    if (!r->ac) {
        *rc = SRV_EIO;
        snprintf(op->what, sizeof op->what, "%s", r->state);
        return NULL;
    }
    return r;
}

int srv_registry_fetch(srv_ctx *ctx, srv_registry_scope *scope, srv_registry_op *op)
{
    int rc;
    if (!scope->nmissed) {
        snprintf(op->what, sizeof op->what, "nothing to fetch");
        return SRV_ENOTFOUND;
    }
    srv_redis *r = usable(ctx, op, &rc);
    if (!r) {
        if (rc == SRV_EIO)
            srv_metrics_shared(ctx->metrics, "fetch", "unavailable");
        return rc;
    }
    size_t n = scope->nmissed;
    op->scope = scope;
    op->nids = n;
    op->ids = malloc(n * sizeof *op->ids);
    op->texts = calloc(n, sizeof *op->texts);
    op->lens = calloc(n, sizeof *op->lens);
    char (*keys)[KEY_MAX] = malloc(n * sizeof *keys);
    const char **argv = malloc((n + 1) * sizeof *argv);
    size_t *lens = malloc((n + 1) * sizeof *lens);
    if (!op->ids || !op->texts || !op->lens || !keys || !argv || !lens) {
        free(keys);
        free(argv);
        free(lens);
        fetch_free_texts(op);
        return SRV_ENOMEM;
    }
    op->removals = srv__registry_removals(ctx->registry); /* before Redis answers */
    argv[0] = "MGET";
    lens[0] = 4;
    for (size_t i = 0; i < n; i++) {
        op->ids[i] = scope->missed[i];
        key_of(keys[i], op->ids[i].kind, op->ids[i].id);
        argv[i + 1] = keys[i];
        lens[i + 1] = strlen(keys[i]);
    }
    rc = srv__redis_send(r, fetch_reply, op, (int)n + 1, argv, lens);
    free(keys);
    free(argv);
    free(lens);
    if (rc != SRV_OK) {
        fetch_free_texts(op);
        snprintf(op->what, sizeof op->what, "%s",
                 rc == SRV_EBUSY ? "too many commands waiting for Redis" : r->state);
        return rc;
    }
    /* the next decode notes what it still misses, and never these again */
    if (!srv__registry_scope_asked(scope))
        scope->nmissed = 0;
    return SRV_OK;
}

int srv_registry_store(srv_ctx *ctx, proto_reg_kind k, const char *id, const char *text,
                       size_t len, srv_registry_op *op)
{
    int rc;
    srv_redis *r = usable(ctx, op, &rc);
    if (!r)
        return rc;
    char key[KEY_MAX];
    key_of(key, k, id);
    const char *argv[4] = {"SET", key, text, "NX"};
    size_t lens[4] = {3, strlen(key), len, 2};
    rc = srv__redis_send(r, store_reply, op, 4, argv, lens);
    if (rc != SRV_OK)
        snprintf(op->what, sizeof op->what, "%s",
                 rc == SRV_EBUSY ? "too many commands waiting for Redis" : r->state);
    return rc;
}

int srv_registry_forget(srv_ctx *ctx, proto_reg_kind k, const char *id, srv_registry_op *op)
{
    int rc;
    srv_redis *r = usable(ctx, op, &rc);
    if (!r)
        return rc;
    char key[KEY_MAX], message[sizeof SRV_REDIS_SCENE_MESSAGE + SRV_CHAIN_ID_LEN];
    key_of(key, k, id);
    snprintf(message, sizeof message, "%s%s", k == PROTO_REG_SCENE ? SRV_REDIS_SCENE_MESSAGE : "",
             id);
    rc = srv__redis_send(r, forget_reply, op, 2, (const char *[]){"DEL", key},
                         (const size_t[]){3, strlen(key)});
    if (rc == SRV_OK) /* every replica drops it (its own reply is not waited for) */
        srv__redis_send(r, NULL, NULL, 3, (const char *[]){"PUBLISH", SRV_REDIS_CHANNEL, message},
                        (const size_t[]){7, sizeof SRV_REDIS_CHANNEL - 1, strlen(message)});
    else
        snprintf(op->what, sizeof op->what, "%s",
                 rc == SRV_EBUSY ? "too many commands waiting for Redis" : r->state);
    return rc;
}
