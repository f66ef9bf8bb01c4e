/*
 * registry_redis_conn.c: the shared registry's connections to Redis and
 * the commands sent on them (--redis; what the registry does with them is
 * server/registry_redis.c's, see server/registry_redis.h).
 *
 * Connections: one hiredis asynchronous context per loop for commands and
 * one for the subscription to "ikd:chains:deleted", on the loop through
 * hiredis's libuv adapter (so nothing here leaves the loop's thread). The
 * host name is resolved with uv_getaddrinfo (on libuv's pool, never on
 * the loop) and hiredis is given the address. AUTH and SELECT follow the
 * URL. Both connections are made together and dropped together; while
 * they are down, a command gets SRV_EIO at once (the request answers
 * 503), and they are made again after a back-off (BACKOFF_MIN_MS doubling
 * to BACKOFF_MAX_MS; at once when a request needs Redis and the back-off
 * has passed). A message on the subscription (a deleted id: "<id>", or
 * "scene:<id>" for a scene) drops the id from the local registry.
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
 * Not here: the keys and values, fetch, store, forget and the check after
 * a cut-off (registry_redis.c); the local registry (registry.c).
 */
#include <arpa/inet.h>
#include <hiredis/adapters/libuv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/metrics.h"
#include "server/registry_redis.h"

#define INFLIGHT_MAX 4096
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define TICK_MS 25

struct srv__redis_cmd {
    struct srv__redis_cmd *prev, *next;
    srv_redis *r;
    srv__redis_reply_fn fn; /* NULL: the connection's own (AUTH, SELECT, PUBLISH) */
    void *data;
    uint64_t deadline;
    bool abandoned; /* it ended already (fn ran); the reply only frees it */
};

typedef srv__redis_cmd cmd;

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

void srv__redis_maybe_free(srv_redis *r)
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

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);
static void check_up(srv_redis *r);

int srv__redis_send(srv_redis *r, srv__redis_reply_fn fn, void *data, int argc,
                    const char **argv, const size_t *lens)
{
    if (!r->ac)
        return SRV_EIO;
    if (r->inflight >= INFLIGHT_MAX)
        return SRV_EBUSY;
    cmd *c = calloc(1, sizeof *c);
    if (!c)
        return SRV_ENOMEM;
    c->r = r;
    c->fn = fn;
    c->data = data;
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

/* The answer to the connection's own commands (AUTH, SELECT, PUBLISH): an
 * error drops the connections (AUTH or SELECT refused: no use going on). */
static void own_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                      const char *why)
{
    if (!rep || rep->type != REDIS_REPLY_ERROR || r->reset_pending)
        return;
    srv_log(r->ctx, SRV_LOG_ERROR, "Redis refused: %.120s", rep->str);
    r->reset_pending = true;
    snprintf(r->reset_why, sizeof r->reset_why, "Redis refused: %.120s", rep->str);
    kick_tick(r);
}

/* The answer to PING: Redis is there. */
static void ping_reply(srv_redis *r, void *data, const redisReply *rep, int status,
                       const char *why)
{
    if (rep && rep->type != REDIS_REPLY_ERROR) {
        r->ac_up = true;
        check_up(r);
    } else {
        own_reply(r, data, rep, status, why);
    }
}

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
    srv__redis_reply_fn fn = c->fn ? c->fn : own_reply;
    void *data = c->data;
    free(c);
    char what[160] = "";
    if (!rep)
        snprintf(what, sizeof what, "Redis connection lost: %.120s",
                 ac->errstr[0] ? ac->errstr : "closed");
    fn(r, data, rep, rep ? SRV_OK : SRV_EIO, rep ? NULL : what);
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
    size_t n = sizeof SRV_REDIS_SCENE_MESSAGE - 1;
    bool scene = strncmp(s, SRV_REDIS_SCENE_MESSAGE, n) == 0;
    if (scene)
        s += n;
    if (srv_registry_id_form(s))
        srv_registry_remove_kind(r->ctx->registry, scene ? PROTO_REG_SCENE : PROTO_REG_CHAIN, s);
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
        srv__redis_maybe_free(r);
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
        /* the tick's work at once, before any loop can say it is up: the
         * check after a cut-off (or the start) bars the fetches sent
         * before, not one a client sent once it saw the registry up */
        if (!r->reset_pending)
            r->hooks->tick(r);
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
    r->ac = ac; /* srv__redis_send sends on r->ac */
    int rc = SRV_OK;
    if (r->url.password[0]) {
        const char *argv[3] = {"AUTH", r->url.user, r->url.password};
        size_t lens[3] = {4, strlen(r->url.user), strlen(r->url.password)};
        rc = r->url.user[0] ? srv__redis_send(r, NULL, NULL, 3, argv, lens)
                            : srv__redis_send(r, NULL, NULL, 2,
                                              (const char *[]){"AUTH", r->url.password},
                                       (const size_t[]){4, strlen(r->url.password)});
    }
    if (rc == SRV_OK && !subscriber && r->url.db) {
        char db[12];
        snprintf(db, sizeof db, "%u", r->url.db);
        rc = srv__redis_send(r, NULL, NULL, 2, (const char *[]){"SELECT", db},
                      (const size_t[]){6, strlen(db)});
    }
    if (rc == SRV_OK && !subscriber) /* its answer says Redis is there */
        rc = srv__redis_send(r, ping_reply, NULL, 1, (const char *[]){"PING"},
                             (const size_t[]){4});
    r->ac = keep;
    if (rc == SRV_OK && subscriber &&
        redisAsyncCommand(ac, on_message, r, "SUBSCRIBE %s", SRV_REDIS_CHANNEL) != REDIS_OK)
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
        srv__redis_maybe_free(r);
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

void srv__redis_connect_due(srv_redis *r)
{
    if (!r->ac && !r->resolving && now_ms(r) >= r->retry_at)
        connect_start(r);
}

/* Down: the loop's count of connected registries, every command in flight
 * failed with code and why, both connections freed. */
static void drop_all(srv_redis *r, int code, const char *why)
{
    bool last = r->up && atomic_fetch_sub(&r->ctx->sh->redis_up, 1) == 1;
    r->up = false;
    r->hooks->down(r, last);
    /* the commands end first: hiredis's NULL replies then only free them */
    cmd *list = r->head;
    r->head = r->tail = NULL;
    r->inflight = 0;
    for (cmd *c = list; c; c = c->next) {
        c->abandoned = true;
        (c->fn ? c->fn : own_reply)(r, c->data, NULL, code, why);
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
        srv__redis_maybe_free(r);
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
        r->hooks->tick(r);
}

static void timer_closed(uv_handle_t *h)
{
    srv_redis *r = h->data;
    r->timer_closed = true;
    srv__redis_maybe_free(r);
}

/* ---- start, stop and state -------------------------------------------------------------------- */

int srv__redis_start(srv_ctx *ctx, const srv__redis_hooks *hooks)
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
    r->hooks = hooks;
    r->backoff_ms = BACKOFF_MIN_MS;
    set_state(r, "connecting");
    uv_timer_init(ctx->loop, &r->timer);
    r->timer.data = r;
    uv_timer_start(&r->timer, on_tick, TICK_MS, TICK_MS);
    ctx->redis = r;
    connect_start(r);
    return SRV_OK;
}

void srv__redis_stop(srv_ctx *ctx)
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

