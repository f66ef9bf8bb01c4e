/*
 * srv.h: what every server/ module shares: the status table (SRV_*, the
 * errors of every srv_ function) and the daemon's context: a loop's
 * srv_ctx, and what the loops share (srv_shared); serve.c owns both and
 * passes a loop's srv_ctx to every service.
 *
 * Threads. Each libuv loop (ctx->loop) owns its sockets: its
 * libmicrohttpd daemon runs in external-epoll mode on it (no internal
 * thread, server/loop.h) and its WebSocket streams live on it too. Unless
 * a function says "any thread", call it from the thread of the loop whose
 * srv_ctx it takes. Work handed to the thread pool (server/pool.h, one for
 * the process) runs off the loops; its completion callback runs back on
 * the thread of the loop that submitted it.
 *
 * Errors: 0 or a negative SRV_E* value from the table below.
 *
 * The services, each declared by the header named after its file:
 *   server/config.h         flags and environment -> srv_config
 *   server/accept.h         listening, and handing connections to loops
 *   server/budget.h         a bound kept by reserve and release
 *   server/loop.h           libmicrohttpd driven by the loop (srv_mhd_run)
 *   server/pool.h           the thread pool and its admission bound
 *   server/solve.h          where a job is solved (inline or on the pool)
 *   server/registry.h       the chain registry
 *   server/metrics.h        Prometheus metrics
 *   server/log.h            log lines
 *   server/http.h           the HTTP side's entry points and rules
 *   server/http_route.h     the route table the endpoints register with
 *   server/http_handler.h   the seam between the HTTP glue and the handlers
 *   server/ws.h             the WebSocket side's entry points
 *   server/ws_conn.h        the seam between a connection and its streams
 *   server/ws_stream.h      inside the streams (messages, ticks, streams)
 *   server/stream_chains.h  the chains open streams hold
 *   server/guard.h          the whole-request deadline
 *   server/web.h            the live page's files
 *   server/trim.h           memory given back after large requests
 *   server/tls.h            the certificate of HTTPS and WSS
 *   server/tls_front.h      TLS ended on the loop, in front of libmicrohttpd
 *   server/http_headers.h   a request's headers as libmicrohttpd holds them
 */
#ifndef SRV_H
#define SRV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/budget.h"
#include "server/config.h"

/* ---- status table ----------------------------------------------------- */

#define SRV_STATUS_MAP(X)                                                  \
    X(OK, 0, "success")                                                    \
    X(EBUSY, -1, "thread pool queue is full")                              \
    X(ENOMEM, -2, "out of memory")                                         \
    X(EINVAL, -3, "invalid argument")                                      \
    X(ENOTFOUND, -4, "not found")                                          \
    X(ESHUTDOWN, -5, "the daemon is shutting down")                        \
    X(EIO, -6, "I/O or system error")

typedef enum srv_status {
#define SRV_STATUS_ENUM(name, value, msg) SRV_##name = value,
    SRV_STATUS_MAP(SRV_STATUS_ENUM)
#undef SRV_STATUS_ENUM
} srv_status;

/* Static message for a status ("unknown status" for anything else). Any
 * thread. */
const char *srv_strerror(int status);

/* ---- the context ------------------------------------------------------
 *
 * ikd runs several libuv loops (--loops, one per core by default), each on
 * its own thread with its own libmicrohttpd daemon and its own connections:
 * a connection, its requests, its WebSocket streams and its ticks stay on
 * the loop that took it (server/accept.c hands each new connection to a
 * loop). The state is in two groups:
 *   - srv_shared, one per process: what every loop shares, the
 *     configuration, the registry, the metrics, the page, the routes, the
 *     bounds (srv_budget, server/budget.h) that hold for all clients of
 *     all loops together, the table of the chains streams hold, the
 *     connections per address and the loops themselves. Its budgets are
 *     atomic, the registry, the metrics and the tables take their own
 *     locks: any thread may use it;
 *   - srv_ctx, one per loop: the loop's handles, its daemon, its
 *     connections' state (HTTP requests, the request deadline, WebSocket
 *     connections and their streams), the turn's inline budget and the
 *     batches' round robin, each module's behind its own typed pointer.
 *     Loop thread only, but for the gauges (srv_gauge) that a scrape on
 *     another loop sums.
 * Every module receives the srv_ctx of the loop it runs on; ctx->sh is the
 * process's. ctx->cfg is a copy of sh->cfg, and ctx->registry,
 * ctx->metrics, ctx->web and ctx->routes are sh's pointers, made once
 * before the loops start (read-only afterwards: the hot path reads them
 * without going through sh).
 */

struct MHD_Daemon;
typedef struct srv_registry srv_registry;
typedef struct srv_metrics srv_metrics;
typedef struct srv_web srv_web;
typedef struct srv_tls srv_tls;
typedef struct srv_mhd_glue srv_mhd_glue;
typedef struct srv_batch srv_batch;
typedef struct srv_trim srv_trim;
typedef struct srv_turn srv_turn;
typedef struct srv_stream_chains srv_stream_chains;
typedef struct srv_guard srv_guard;
typedef struct srv_http srv_http;
typedef struct srv_ws srv_ws;
typedef struct srv_routes srv_routes;
typedef struct srv_redis srv_redis;
typedef struct srv_accept srv_accept;
typedef struct srv_addrs srv_addrs;
typedef struct srv_ctx srv_ctx;

/* A count that one loop thread changes and any thread may read (the
 * gauges a scrape sums over the loops): a relaxed atomic word written
 * without a locked instruction, as only its loop writes it. */
typedef struct srv_gauge {
    atomic_size_t v; /* private: use the functions below */
} srv_gauge;

static inline void srv_gauge_add(srv_gauge *g, size_t n)
{
    atomic_store_explicit(&g->v, atomic_load_explicit(&g->v, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void srv_gauge_sub(srv_gauge *g, size_t n)
{
    atomic_store_explicit(&g->v, atomic_load_explicit(&g->v, memory_order_relaxed) - n,
                          memory_order_relaxed);
}

/* Any thread. */
static inline size_t srv_gauge_get(const srv_gauge *g)
{
    return atomic_load_explicit(&((srv_gauge *)g)->v, memory_order_relaxed);
}

typedef struct srv_shared {
    srv_config cfg;         /* read-only after startup (each loop has a copy) */
    srv_registry *registry; /* chain registry (any thread) */
    srv_metrics *metrics;   /* Prometheus metrics (any thread) */
    srv_web *web;           /* the live page's files (server/web.h); NULL without --web */
    srv_tls *tls;           /* the certificate of HTTPS and WSS (server/tls.h),
                               every loop's TLS front takes it; NULL without
                               --tls-cert */
    srv_routes *routes;     /* the HTTP routes, registered at startup
                               (server/http_route.h) */
    /* the bounds held for all clients of all loops together
     * (server/budget.h) */
    srv_budget body_bytes;   /* request body bytes held now (--body-budget;
                                server/http_mhd.c) */
    srv_budget answer_bytes; /* answers reserved or held for clients until
                                sent (--answer-budget; http_mhd.c,
                                http_batch.c, http_handlers.c) */
    srv_budget admitted;     /* admitted work in flight (--max-queue;
                                server/pool.h): items of srv_pool_submit,
                                plus one per batch from its decode to its
                                answer */
    srv_budget stream_chain_bytes; /* the memory of the chains open streams
                                      hold (--stream-chain-bytes;
                                      server/stream_chains.c) */
    srv_budget stream_bytes; /* the open streams' own state, each stream's
                                struct and session (--stream-bytes;
                                server/ws_stream.c) */
    srv_budget connections;  /* connections open, WebSockets included
                                (--max-connections; server/accept.c
                                reserves one before a connection is
                                accepted) */
    srv_budget batch_chunks; /* batch chunks on the pool, all batches of all
                                loops (--threads; http_batch.c) */
    srv_stream_chains *stream_chains; /* the chains open streams hold, each
                                         once (server/stream_chains.c) */
    srv_addrs *addrs;       /* connections open per client address
                               (--max-connections-per-address;
                               server/accept.c) */
    srv_trim *trim;         /* memory given back after large requests, one
                               for the process (server/trim.h) */
    atomic_uint redis_up;   /* loops whose connections to the shared
                               registry are up (server/registry_redis_conn.c) */
    atomic_uint redis_sync; /* whether the local registry must be checked
                               against Redis: deletions may have been
                               missed while no loop was subscribed
                               (server/registry_redis.c, SYNC_*) */
    srv_ctx **loops;        /* the loops, loops[0] on the main thread */
    unsigned nloops;
} srv_shared;

struct srv_ctx {
    srv_shared *sh;         /* the process's */
    unsigned index;         /* this loop's place in sh->loops */
    /* read-only views of sh, for the hot path (see above) */
    srv_config cfg;         /* a copy of sh->cfg: its strings are sh's */
    srv_registry *registry;
    srv_metrics *metrics;
    srv_web *web;
    srv_tls *tls;
    srv_routes *routes;

    /* ---- the loop's own ---- */
    uv_loop_t *loop;          /* the loop; owns every socket of this context */
    struct MHD_Daemon *mhd;   /* external-epoll daemon driven by the loop */
    uint16_t port;            /* the bound port (useful when cfg.listen_port is 0) */
    bool shutting_down;       /* this loop drains (SIGTERM, SIGINT or SIGHUP,
                                 forwarded to every loop): readiness is then
                                 503 */
    srv_mhd_glue *mhd_glue;   /* private to server/loop.c (srv_loop_attach
                                 sets it) */
    srv_accept *accept;       /* the listening socket's watch and the
                                 connections handed to this loop
                                 (server/accept.c) */
    srv_http *http;           /* the HTTP side: routes, finished requests kept
                                 for reuse (server/http_mhd.c) */
    srv_guard *guard;         /* the request deadline (server/guard.c) */
    srv_redis *redis;         /* this loop's connections to the shared registry
                                 (--redis; server/registry_redis.h), or NULL */
    struct srv_tls_front *tls_front; /* TLS ended in front of the daemon
                                        (server/tls_front.h); NULL without
                                        --tls-cert */
    srv_ws *ws;               /* the WebSocket connections and the hooks of
                                 their streams (server/ws_conn.c) */
    srv_turn *turn;           /* the inline budget of a turn of the loop
                                 (server/solve.h) */
    srv_batch *batch_head, *batch_tail; /* batches with chunks to hand out,
                                           round robin (http_batch.c) */
    uv_async_t *batch_wake;   /* wakes this loop's batches when another
                                 loop gave a chunk's thread back
                                 (http_batch.c); NULL when not set up */
    atomic_bool batch_waiting; /* batches wait here for a chunk's thread */
    srv_gauge pool_depth;     /* work items submitted and not yet completed */
    srv_gauge active_requests; /* HTTP requests begun and not yet completed */
    atomic_size_t assigned; /* connections handed to this loop and not yet
                               closed: counted by the loop that accepted
                               each, given back by this one
                               (server/accept.c balances on it) */
    uint64_t requests_begun;  /* HTTP requests begun since startup (the drain
                                 watches it for quiet) */
};

#endif /* SRV_H */
