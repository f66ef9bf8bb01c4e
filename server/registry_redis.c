/*
 * registry_redis.c: the shared chain registry in Redis (--redis; the
 * contract is server/registry.h's "shared registry" section).
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
 * in its local registry (unless a deletion came while it was fetched:
 * srv__registry_put_fetched). A deletion is DEL, then PUBLISH of the id on
 * "ikd:chains:deleted" ("scene:<id>" for a scene), to which every loop of
 * every replica is subscribed (a second connection): each drops the id
 * from its local registry. When no loop was subscribed for a while, the
 * first up again checks every id held with EXISTS and drops those Redis
 * no longer has (deleted meanwhile, or lost by a Redis that restarted).
 *
 * Connections: one hiredis asynchronous context per loop for commands and
 * one for the subscription, on the loop through hiredis's libuv adapter
 * (so nothing here leaves the loop's thread). The host name is resolved
 * with uv_getaddrinfo (on libuv's pool, never on the loop) and hiredis is
 * given the address. AUTH and SELECT follow the URL. Both connections are
 * made together and dropped together; while they are down, a command gets
 * SRV_EIO at once (the request answers 503), and they are made again
 * after a back-off (BACKOFF_MIN_MS doubling to BACKOFF_MAX_MS; at once
 * when a request needs Redis and the back-off has passed).
 *
 * Never stalling: hiredis 0.14 has no timeouts of its own. Commands are
 * kept in the order sent (Redis answers in that order) with a deadline of
 * --redis-timeout; a tick (TICK_MS) drops both connections when the
 * oldest is overdue, or when connecting takes longer than that, and every
 * command in flight then ends with SRV_EIO. So a Redis that is down,
 * paused or slow costs a request at most --redis-timeout, and costs the
 * requests that do not need Redis nothing. Commands in flight per loop are
 * bounded (INFLIGHT_MAX: SRV_EBUSY beyond).
 *
 * Inside hiredis's callbacks nothing is freed that hiredis is using: a
 * connection that fails there asks the tick to drop both (reset_pending).
 *
 * Not here: the local registry and the scopes (registry.c), what requests
 * do with a fetch (http_chains.c, http_batch.c, ws_messages.c).
 */
#include <arpa/inet.h>
#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/srv.h"

#define KEY_PREFIX "ikd:chain:"
#define SCENE_KEY_PREFIX "ikd:scene:"
#define SCENE_MESSAGE "scene:" /* a deleted scene's id, on CHANNEL */
#define CHANNEL "ikd:chains:deleted"
#define KEY_MAX (sizeof SCENE_KEY_PREFIX + SRV_CHAIN_ID_LEN)
#define INFLIGHT_MAX 4096
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define TICK_MS 25
#define SYNC_WINDOW 64 /* EXISTS in flight while checking the local registry */

enum { SYNC_DONE = 0, SYNC_NEEDED, SYNC_RUNNING };

typedef enum cmd_kind { C_SETUP, C_PING, C_FETCH, C_STORE, C_FORGET, C_CHECK } cmd_kind;

typedef struct cmd {
    struct cmd *prev, *next;
    struct srv_redis *r;
    cmd_kind kind;
    srv_registry_op *op; /* NULL: the connection's own (AUTH, SELECT, PUBLISH) */
    uint64_t deadline;
    bool abandoned; /* its op ended already; the reply only frees it */
    size_t at;      /* C_CHECK: its id's place in srv_redis.sync */
} cmd;

struct srv_redis {
    srv_ctx *ctx;
    srv_redis_url url;
    redisAsyncContext *ac;  /* commands; NULL when down */
    redisAsyncContext *sub; /* the subscription to deletions */
    bool ac_up, sub_up;     /* Redis answered on each (PING, SUBSCRIBE) */
    bool up;                /* both up: READY */
    bool ever_up;
    bool resolving;
    uv_getaddrinfo_t gai;
    uint64_t connect_deadline; /* while connecting (resolving included) */
    bool connecting;
    uint64_t retry_at;
    unsigned backoff_ms;
    bool reset_pending;
    char reset_why[160];
    uv_timer_t timer;
    cmd *head, *tail;
    size_t inflight;
    size_t decoding; /* decodes of fetched values on the pool */
    srv_reg_id *sync; /* this loop checks the local registry: its ids */
    size_t nsync, sync_sent, sync_open, sync_dropped;
    char state[160];
    bool stopping;
    bool timer_closed;
};

static void reset(srv_redis *r, const char *why);
static void connect_start(srv_redis *r);
static void on_tick(uv_timer_t *t);

/* The tick at once (then every TICK_MS): it does what a callback of
 * hiredis may not (dropping the connections). */
static void kick_tick(srv_redis *r)
{
    if (!r->stopping)
        uv_timer_start(&r->timer, on_tick, 0, TICK_MS);
}

static uint64_t now_ms(srv_redis *r)
{
    return uv_now(r->ctx->loop);
}

static uint64_t timeout_ms(srv_redis *r)
{
    double t = r->ctx->cfg.redis_timeout_ms;
    return t < 1 ? 1 : (uint64_t)t;
}

static void maybe_free(srv_redis *r)
{
    if (r->stopping && r->timer_closed && !r->resolving && r->decoding == 0 && !r->ac &&
        !r->sub)
        free(r);
}

/* ---- commands ---------------------------------------------------------------------------- */

static void cmd_unlink(srv_redis *r, cmd *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        r->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        r->tail = c->prev;
    c->prev = c->next = NULL;
    r->inflight--;
}

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

static const char *op_name(cmd_kind k)
{
    return k == C_FETCH ? "fetch" : k == C_STORE ? "store" : "forget";
}

/* Ends the op of c with status (the op's texts freed first). */
static void cmd_fail(cmd *c, int status, const char *what)
{
    srv_registry_op *op = c->op;
    c->op = NULL;
    if (!op)
        return;
    srv_metrics_shared(c->r->ctx->metrics, op_name(c->kind),
                       status == SRV_ESHUTDOWN ? "shutdown" : "unavailable");
    fetch_free_texts(op);
    op_finish(op, status, what);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);
static void check_up(srv_redis *r);
static void sync_reply(srv_redis *r, size_t at, const redisReply *rep);

/* Sends a command; 0, or SRV_EIO / SRV_EBUSY / SRV_ENOMEM (nothing sent). */
static int send_cmd(srv_redis *r, cmd_kind kind, srv_registry_op *op, int argc, const char **argv,
                    const size_t *lens)
{
    if (!r->ac)
        return SRV_EIO;
    if (r->inflight >= INFLIGHT_MAX)
        return SRV_EBUSY;
    cmd *c = calloc(1, sizeof *c);
    if (!c)
        return SRV_ENOMEM;
    c->r = r;
    c->kind = kind;
    c->op = op;
    c->deadline = now_ms(r) + timeout_ms(r);
    if (redisAsyncCommandArgv(r->ac, on_reply, c, argc, argv, lens) != REDIS_OK) {
        free(c);
        return SRV_EIO;
    }
    c->prev = r->tail;
    if (r->tail)
        r->tail->next = c;
    else
        r->head = c;
    r->tail = c;
    r->inflight++;
    return SRV_OK;
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

/* The Redis key of an id of kind k, in key (KEY_MAX bytes). */
static void key_of(char *key, proto_reg_kind k, const char *id)
{
    snprintf(key, KEY_MAX, "%s%s", k == PROTO_REG_SCENE ? SCENE_KEY_PREFIX : KEY_PREFIX, id);
}

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
    maybe_free(r);
}

/* The MGET answer of a fetch: its values decoded (on the pool when they
 * are large), then fetch_finish. */
static void fetch_reply(srv_redis *r, srv_registry_op *op, redisReply *rep)
{
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

/* ---- replies ----------------------------------------------------------------------------------- */

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    cmd *c = privdata;
    srv_redis *r = c->r;
    redisReply *rep = reply;
    if (c->abandoned) {
        free(c);
        return;
    }
    cmd_unlink(r, c);
    srv_registry_op *op = c->op;
    cmd_kind kind = c->kind;
    if (kind == C_CHECK) {
        size_t at = c->at;
        free(c);
        sync_reply(r, at, rep);
        return;
    }
    if (!rep || rep->type == REDIS_REPLY_ERROR) {
        char what[160];
        snprintf(what, sizeof what, "Redis %s: %.120s", rep ? "refused" : "connection lost",
                 rep ? rep->str : (ac->errstr[0] ? ac->errstr : "closed"));
        if (!op && rep && !r->reset_pending) { /* AUTH or SELECT refused: no use going on */
            srv_log(r->ctx, SRV_LOG_ERROR, "%s", what);
            r->reset_pending = true;
            snprintf(r->reset_why, sizeof r->reset_why, "%s", what);
            kick_tick(r);
        }
        if (op && rep)
            op->refused = true;
        cmd_fail(c, SRV_EIO, what);
        free(c);
        return;
    }
    free(c);
    if (kind == C_PING) {
        r->ac_up = true;
        check_up(r);
        return;
    }
    if (!op)
        return;
    if (kind == C_FETCH) {
        if (rep->type != REDIS_REPLY_ARRAY) {
            fetch_free_texts(op);
            op_finish(op, SRV_EIO, "Redis answered MGET with something else than an array");
            return;
        }
        fetch_reply(r, op, rep);
        return;
    }
    /* store: OK (written) or nil (there already); forget: the keys deleted */
    op->existed = kind == C_STORE ? rep->type == REDIS_REPLY_NIL
                                  : rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
    srv_metrics_shared(r->ctx->metrics, op_name(kind), "ok");
    op_finish(op, SRV_OK, NULL);
}

/* A message on the deletions' channel: the id leaves the local registry. */
static void on_message(redisAsyncContext *ac, void *reply, void *privdata)
{
    srv_redis *r = privdata;
    redisReply *rep = reply;
    if (!rep || r->stopping || rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
        rep->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(rep->element[0]->str, "subscribe") == 0) {
        r->sub_up = true;
        check_up(r);
        return;
    }
    if (strcmp(rep->element[0]->str, "message") != 0)
        return;
    redisReply *id = rep->element[2];
    if (id->type != REDIS_REPLY_STRING)
        return;
    const char *s = id->str;
    bool scene = strncmp(s, SCENE_MESSAGE, sizeof SCENE_MESSAGE - 1) == 0;
    if (scene)
        s += sizeof SCENE_MESSAGE - 1;
    if (srv_registry_id_form(s))
        srv_registry_remove_kind(r->ctx->registry, scene ? PROTO_REG_SCENE : PROTO_REG_CHAIN, s);
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
        if (send_cmd(r, C_CHECK, NULL, 2, (const char *[]){"EXISTS", key},
                     (const size_t[]){6, strlen(key)}) != SRV_OK)
            return; /* the next answer, or the next tick, sends it */
        r->tail->at = r->sync_sent++;
        r->sync_open++;
    }
    if (r->sync_open == 0)
        sync_end(r, true);
}

/* Redis's answer to the EXISTS of the id at sync[at]: 0, gone (deleted,
 * or lost by a Redis that restarted empty); refused (an ACL without
 * EXISTS): the copy is kept. */
static void sync_reply(srv_redis *r, size_t at, const redisReply *rep)
{
    if (!r->sync || at >= r->nsync)
        return;
    r->sync_open--;
    if (!rep)
        return; /* connection lost: drop_all ends the check */
    bool gone = rep->type == REDIS_REPLY_INTEGER && rep->integer == 0;
    if (gone) {
        srv_registry_remove_kind(r->ctx->registry, r->sync[at].kind, r->sync[at].id);
        r->sync_dropped++;
    }
    srv_metrics_shared(r->ctx->metrics, "check", gone ? "dropped"
                       : rep->type == REDIS_REPLY_INTEGER ? "kept" : "refused");
    sync_send(r);
}

/* ---- connections -------------------------------------------------------------------------------- */

static void set_state(srv_redis *r, const char *text)
{
    snprintf(r->state, sizeof r->state, "%s", text);
}

/* A connection failed or closed inside hiredis (which frees it): the tick
 * drops the other one and connects again later. */
static void lost(srv_redis *r, const redisAsyncContext *ac, const char *why)
{
    if (ac == r->ac) {
        r->ac = NULL;
        r->ac_up = false;
    } else if (ac == r->sub) {
        r->sub = NULL;
        r->sub_up = false;
    } else {
        return; /* one dropped by reset() */
    }
    if (r->stopping) {
        maybe_free(r);
        return;
    }
    if (!r->reset_pending) {
        r->reset_pending = true;
        snprintf(r->reset_why, sizeof r->reset_why, "%s", why);
    }
}

/* Up once Redis answered on both connections (a TCP connection alone says
 * nothing: a stopped Redis's kernel still accepts them). */
static void check_up(srv_redis *r)
{
    if (r->ac_up && r->sub_up && !r->up) {
        r->up = true;
        atomic_fetch_add(&r->ctx->sh->redis_up, 1);
        r->connecting = false;
        r->backoff_ms = BACKOFF_MIN_MS;
        set_state(r, "connected");
        srv_log(r->ctx, SRV_LOG_INFO, "the shared registry: connected to Redis at %.64s:%u%s",
                r->url.host, (unsigned)r->url.port, r->ever_up ? " again" : "");
        r->ever_up = true;
    }
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    srv_redis *r = ac->data;
    if (status != REDIS_OK) {
        char why[160];
        snprintf(why, sizeof why, "cannot connect to Redis at %.64s:%u: %s", r->url.host,
                 (unsigned)r->url.port, ac->errstr);
        lost(r, ac, why);
        kick_tick(r);
    }
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    srv_redis *r = ac->data;
    char why[160];
    snprintf(why, sizeof why, "Redis closed the connection%s%s", ac->errstr[0] ? ": " : "",
             ac->errstr);
    lost(r, ac, why);
    kick_tick(r);
}

/* A context to ip:port on the loop, with its callbacks; NULL on failure
 * (the reason in why). */
static redisAsyncContext *context_new(srv_redis *r, const char *ip, char *why, size_t whysize)
{
    redisAsyncContext *ac = redisAsyncConnect(ip, r->url.port);
    if (!ac || ac->err) {
        snprintf(why, whysize, "cannot connect to Redis at %.64s:%u: %s", r->url.host,
                 (unsigned)r->url.port, ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        return NULL;
    }
    if (redisLibuvAttach(ac, r->ctx->loop) != REDIS_OK) {
        snprintf(why, whysize, "cannot watch the connection to Redis");
        redisAsyncFree(ac);
        return NULL;
    }
    ac->data = r;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return ac;
}

/* AUTH and SELECT, as the URL says, queued on ac before anything else. */
static int setup(srv_redis *r, redisAsyncContext *ac, bool subscriber)
{
    redisAsyncContext *keep = r->ac;
    r->ac = ac; /* send_cmd sends on r->ac */
    int rc = SRV_OK;
    if (r->url.password[0]) {
        const char *argv[3] = {"AUTH", r->url.user, r->url.password};
        size_t lens[3] = {4, strlen(r->url.user), strlen(r->url.password)};
        rc = r->url.user[0] ? send_cmd(r, C_SETUP, NULL, 3, argv, lens)
                            : send_cmd(r, C_SETUP, NULL, 2, (const char *[]){"AUTH", r->url.password},
                                       (const size_t[]){4, strlen(r->url.password)});
    }
    if (rc == SRV_OK && !subscriber && r->url.db) {
        char db[12];
        snprintf(db, sizeof db, "%u", r->url.db);
        rc = send_cmd(r, C_SETUP, NULL, 2, (const char *[]){"SELECT", db},
                      (const size_t[]){6, strlen(db)});
    }
    if (rc == SRV_OK && !subscriber) /* its answer says Redis is there */
        rc = send_cmd(r, C_PING, NULL, 1, (const char *[]){"PING"}, (const size_t[]){4});
    r->ac = keep;
    if (rc == SRV_OK && subscriber &&
        redisAsyncCommand(ac, on_message, r, "SUBSCRIBE %s", CHANNEL) != REDIS_OK)
        rc = SRV_EIO;
    return rc;
}

static void connect_ip(srv_redis *r, const char *ip)
{
    char why[160];
    redisAsyncContext *ac = context_new(r, ip, why, sizeof why);
    redisAsyncContext *sub = ac ? context_new(r, ip, why, sizeof why) : NULL;
    if (!ac || !sub) {
        if (ac)
            redisAsyncFree(ac);
        reset(r, why);
        return;
    }
    r->ac = ac;
    r->sub = sub;
    if (setup(r, ac, false) != SRV_OK || setup(r, sub, true) != SRV_OK) {
        reset(r, "cannot send to Redis");
        return;
    }
    set_state(r, "connecting");
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    srv_redis *r = req->data;
    r->resolving = false;
    char ip[INET6_ADDRSTRLEN] = "";
    if (status == 0 && res) {
        const void *a = res->ai_family == AF_INET6
                            ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                            : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
        inet_ntop(res->ai_family, a, ip, sizeof ip);
    }
    uv_freeaddrinfo(res);
    if (r->stopping) {
        maybe_free(r);
        return;
    }
    if (!ip[0]) {
        char why[200];
        snprintf(why, sizeof why, "cannot resolve the Redis host %.64s: %s", r->url.host,
                 status ? uv_strerror(status) : "no address");
        reset(r, why);
        return;
    }
    connect_ip(r, ip);
}

static void connect_start(srv_redis *r)
{
    if (r->ac || r->resolving || r->stopping)
        return;
    r->connecting = true;
    r->connect_deadline = now_ms(r) + timeout_ms(r);
    unsigned char buf[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, r->url.host, buf) == 1 || inet_pton(AF_INET6, r->url.host, buf) == 1) {
        connect_ip(r, r->url.host);
        return;
    }
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    r->gai.data = r;
    if (uv_getaddrinfo(r->ctx->loop, &r->gai, on_resolved, r->url.host, NULL, &hints) != 0) {
        reset(r, "cannot resolve the Redis host");
        return;
    }
    r->resolving = true;
    set_state(r, "resolving the Redis host");
}

/* Down: the loop's count of connected registries, every command in flight
 * failed with code and why, both connections freed. */
static void drop_all(srv_redis *r, int code, const char *why)
{
    unsigned done = SYNC_DONE; /* no loop subscribed: deletions may be missed */
    if (r->up && atomic_fetch_sub(&r->ctx->sh->redis_up, 1) == 1)
        atomic_compare_exchange_strong(&r->ctx->sh->redis_sync, &done, SYNC_NEEDED);
    r->up = false;
    sync_end(r, false);
    /* the ops end first: hiredis's NULL replies then only free the commands */
    cmd *list = r->head;
    r->head = r->tail = NULL;
    r->inflight = 0;
    for (cmd *c = list; c; c = c->next) {
        c->abandoned = true;
        cmd_fail(c, code, why);
    }
    redisAsyncContext *ac = r->ac, *sub = r->sub;
    r->ac = r->sub = NULL;
    if (ac)
        redisAsyncFree(ac);
    if (sub)
        redisAsyncFree(sub);
}

/* Drops both connections (outside hiredis's callbacks), ends every command
 * in flight with SRV_EIO, and connects again after the back-off. */
static void reset(srv_redis *r, const char *why)
{
    bool was_up = r->up;
    r->ac_up = r->sub_up = false;
    r->connecting = false;
    r->reset_pending = false;
    drop_all(r, SRV_EIO, why);
    if (r->stopping) {
        maybe_free(r);
        return;
    }
    if (was_up || strcmp(r->state, why) != 0)
        srv_log(r->ctx, was_up ? SRV_LOG_ERROR : SRV_LOG_WARN,
                "the shared registry is unavailable: %s; ids this replica does not hold get "
                "503 until Redis is back",
                why);
    set_state(r, why);
    r->retry_at = now_ms(r) + r->backoff_ms;
    r->backoff_ms = r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2;
    srv_metrics_shared(r->ctx->metrics, "connection", "lost");
}

static void on_tick(uv_timer_t *t)
{
    srv_redis *r = t->data;
    if (r->stopping)
        return;
    uint64_t now = now_ms(r);
    if (r->reset_pending) {
        char why[160];
        snprintf(why, sizeof why, "%s", r->reset_why);
        reset(r, why);
    } else if (r->head && r->head->deadline <= now) {
        char why[160];
        snprintf(why, sizeof why, "Redis did not answer within --redis-timeout (%g ms)",
                 r->ctx->cfg.redis_timeout_ms);
        reset(r, why);
    } else if (r->connecting && now >= r->connect_deadline && !r->resolving) {
        char why[160];
        snprintf(why, sizeof why, "could not connect to Redis at %.64s:%u within --redis-timeout",
                 r->url.host, (unsigned)r->url.port);
        reset(r, why);
    }
    if (!r->ac && !r->resolving && now >= r->retry_at)
        connect_start(r);
    if (r->up && !r->reset_pending)
        sync_send(r);
}

static void timer_closed(uv_handle_t *h)
{
    srv_redis *r = h->data;
    r->timer_closed = true;
    maybe_free(r);
}

/* ---- the daemon's entry points -------------------------------------------------------------------- */

int srv_registry_redis_start(srv_ctx *ctx)
{
    if (!ctx->cfg.redis_url)
        return SRV_OK;
    srv_redis *r = calloc(1, sizeof *r);
    if (!r)
        return SRV_ENOMEM;
    if (srv_config_parse_redis(ctx->cfg.redis_url, &r->url) != SRV_OK) {
        free(r);
        return SRV_EINVAL;
    }
    r->ctx = ctx;
    r->backoff_ms = BACKOFF_MIN_MS;
    set_state(r, "connecting");
    uv_timer_init(ctx->loop, &r->timer);
    r->timer.data = r;
    uv_timer_start(&r->timer, on_tick, TICK_MS, TICK_MS);
    ctx->redis = r;
    connect_start(r);
    return SRV_OK;
}

void srv_registry_redis_stop(srv_ctx *ctx)
{
    srv_redis *r = ctx->redis;
    if (!r)
        return;
    ctx->redis = NULL;
    r->stopping = true;
    drop_all(r, SRV_ESHUTDOWN, "ikd is shutting down");
    if (r->resolving)
        uv_cancel((uv_req_t *)&r->gai);
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->timer, timer_closed);
}

bool srv_registry_shared(const srv_ctx *ctx)
{
    return ctx->cfg.redis_url != NULL;
}

bool srv_registry_shared_up(const srv_ctx *ctx)
{
    /* every loop's: a request may land on any of them */
    return atomic_load(&ctx->sh->redis_up) == ctx->sh->nloops;
}

const char *srv_registry_shared_state(const srv_ctx *ctx)
{
    return ctx->redis ? ctx->redis->state : "off";
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
    if (!r->ac && !r->resolving && now_ms(r) >= r->retry_at)
        connect_start(r);
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
    rc = send_cmd(r, C_FETCH, op, (int)n + 1, argv, lens);
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
    rc = send_cmd(r, C_STORE, op, 4, argv, lens);
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
    char key[KEY_MAX], message[sizeof SCENE_MESSAGE + SRV_CHAIN_ID_LEN];
    key_of(key, k, id);
    snprintf(message, sizeof message, "%s%s", k == PROTO_REG_SCENE ? SCENE_MESSAGE : "", id);
    rc = send_cmd(r, C_FORGET, op, 2, (const char *[]){"DEL", key},
                  (const size_t[]){3, strlen(key)});
    if (rc == SRV_OK) /* every replica drops it (its own reply is not waited for) */
        send_cmd(r, C_SETUP, NULL, 3, (const char *[]){"PUBLISH", CHANNEL, message},
                 (const size_t[]){7, sizeof CHANNEL - 1, strlen(message)});
    else
        snprintf(op->what, sizeof op->what, "%s",
                 rc == SRV_EBUSY ? "too many commands waiting for Redis" : r->state);
    return rc;
}
