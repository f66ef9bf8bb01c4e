/*
 * registry_redis.h: inside the shared registry (--redis; the contract is
 * server/registry.h's "shared registry" section), what its two files
 * share:
 *   registry_redis_conn.c  the connections and commands: one loop's two
 *                          connections to Redis (commands, and the
 *                          subscription to deletions), connecting,
 *                          reconnecting after a back-off, the deadline of
 *                          every command, and the deletions announced on
 *                          the subscription;
 *   registry_redis.c       what the registry does with them: fetch (MGET,
 *                          decoded and kept locally), store (SET NX),
 *                          forget (DEL and PUBLISH), and the check of the
 *                          ids held here after this replica was cut off
 *                          from the announcements.
 * They call each other one way, registry_redis.c -> registry_redis_conn.c;
 * the calls back up go through function pointers registry_redis.c gives:
 * each command's srv__redis_reply_fn (its answer, or its end when the
 * connection went), and the srv__redis_hooks given at start (the
 * connections going down, the tick while up).
 *
 * Loop thread only: each loop has its own srv_redis (srv_ctx.redis).
 */
#ifndef SRV_REGISTRY_REDIS_H
#define SRV_REGISTRY_REDIS_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/config.h"
#include "server/registry.h"
#include "server/srv.h"

#define SRV_REDIS_CHANNEL "ikd:chains:deleted" /* where deletions are announced */
#define SRV_REDIS_SCENE_MESSAGE "scene:"       /* a deleted scene's id, on the channel */

/* A command's end: Redis's reply rep (an error reply included), or rep
 * NULL when it has none (status SRV_EIO: the connection went or Redis was
 * too slow; SRV_ESHUTDOWN), why saying what happened. Runs exactly once
 * per command sent, on the loop; r may be stopping. */
typedef void (*srv__redis_reply_fn)(srv_redis *r, void *data, const redisReply *rep, int status,
                                    const char *why);

/* What the connections tell registry_redis.c (both are required). */
typedef struct srv__redis_hooks {
    /* The connections go down (before the commands in flight end); last:
     * no loop of this process is up now, so deletions may be missed. */
    void (*down)(srv_redis *r, bool last);
    /* When both connections come up (before the loop counts as up),
     * then every tick (TICK_MS) while they are. */
    void (*tick)(srv_redis *r);
} srv__redis_hooks;

typedef struct srv__redis_cmd srv__redis_cmd;

struct srv_redis {
    /* the connections' (registry_redis_conn.c) */
    srv_ctx *ctx;
    const srv__redis_hooks *hooks;
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
    srv__redis_cmd *head, *tail; /* in flight, in the order sent */
    size_t inflight;
    char state[160];
    bool stopping;
    bool timer_closed;
    /* the registry's (registry_redis.c) */
    size_t decoding;  /* decodes of fetched values on the pool (r is not
                         freed while one runs) */
    srv_reg_id *sync; /* this loop checks the local registry: its ids */
    size_t nsync, sync_sent, sync_open, sync_dropped;
};

/* ---- registry_redis_conn.c ---- */

/* ctx's srv_redis, connecting in the background (as
 * srv_registry_redis_start); hooks must outlive it. */
int srv__redis_start(srv_ctx *ctx, const srv__redis_hooks *hooks);
/* As srv_registry_redis_stop. */
void srv__redis_stop(srv_ctx *ctx);
/* Connects now when down and the back-off has passed. */
void srv__redis_connect_due(srv_redis *r);
/* Sends a command on the connection for commands: 0 (fn runs later with
 * data), or SRV_EIO / SRV_EBUSY / SRV_ENOMEM (nothing sent; fn never
 * runs). fn NULL: the connection's own (its reply is not waited for, and
 * an error reply drops the connections: no use going on). */
int srv__redis_send(srv_redis *r, srv__redis_reply_fn fn, void *data, int argc,
                    const char **argv, const size_t *lens);
/* Frees r once it is stopping and nothing refers to it any more (call
 * after decoding drops). */
void srv__redis_maybe_free(srv_redis *r);

#endif /* SRV_REGISTRY_REDIS_H */
