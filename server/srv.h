/*
 * srv.h: what every server/ module shares: the status table (SRV_*, the
 * errors of every srv_ function) and the daemon's context (srv_ctx), the
 * one struct that serve.c owns and passes to every service.
 *
 * Threads. One libuv loop (ctx->loop) owns every socket: libmicrohttpd runs
 * in external-epoll mode on it (no internal thread, server/loop.h) and
 * WebSocket streams live on it too. Unless a function says "any thread",
 * call it from the loop thread only. Work handed to the thread pool
 * (server/pool.h) runs off the loop; its completion callback runs back on
 * the loop thread.
 *
 * Errors: 0 or a negative SRV_E* value from the table below.
 *
 * The services, each declared by the header named after its file:
 *   server/config.h         flags and environment -> srv_config
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
 */
#ifndef SRV_H
#define SRV_H

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
 * srv_ctx holds the state of every module, in two groups:
 *   - process-wide: what every connection of the process shares, the
 *     configuration, the registry, the metrics, the page, the shutdown
 *     flag and the bounds (srv_budget, server/budget.h) that hold for all
 *     clients together;
 *   - per loop: what belongs to one libuv loop and the libmicrohttpd daemon
 *     it drives: the handles, the connections' state (HTTP requests, the
 *     request deadline, WebSocket connections and their streams), the
 *     turn's inline budget and the batches' round robin.
 * There is one loop today, so both groups live in the one struct. When ikd
 * runs several loops (issue 22), the first group becomes one struct shared
 * by every loop's context (its budgets are atomic already, the registry and
 * the metrics are thread-safe; the shutdown flag becomes atomic and the
 * table of the chains streams hold takes a lock), and the second is made
 * once per loop; a module keeps its per-loop state behind its own typed
 * pointer below, never in the shared group.
 */

struct MHD_Daemon;
typedef struct srv_registry srv_registry;
typedef struct srv_metrics srv_metrics;
typedef struct srv_web srv_web;
typedef struct srv_mhd_glue srv_mhd_glue;
typedef struct srv_batch srv_batch;
typedef struct srv_trim srv_trim;
typedef struct srv_turn srv_turn;
typedef struct srv_stream_chains srv_stream_chains;
typedef struct srv_guard srv_guard;
typedef struct srv_http srv_http;
typedef struct srv_ws srv_ws;
typedef struct srv_routes srv_routes;

typedef struct srv_ctx {
    /* ---- process-wide ---- */
    srv_config cfg;           /* read-only after startup */
    srv_registry *registry;   /* chain registry (any thread) */
    srv_metrics *metrics;     /* Prometheus metrics (any thread) */
    srv_web *web;             /* the live page's files (server/web.h); NULL without --web */
    bool shutting_down;       /* set on SIGTERM, SIGINT or SIGHUP; readiness is
                                 then 503 */
    /* the bounds held for all clients together (server/budget.h) */
    srv_budget body_bytes;    /* request body bytes held now (--body-budget;
                                 server/http_mhd.c) */
    srv_budget answer_bytes;  /* answers reserved or held for clients until
                                 sent (--answer-budget; http_mhd.c,
                                 http_batch.c, http_handlers.c) */
    srv_budget admitted;      /* admitted work in flight (--max-queue;
                                 server/pool.h): items of srv_pool_submit,
                                 plus one per batch from its decode to its
                                 answer */
    srv_budget stream_chain_bytes; /* the memory of the chains open streams
                                      hold (--stream-chain-bytes;
                                      server/stream_chains.c) */
    srv_budget connections;   /* libmicrohttpd's connections open, WebSockets
                                 included (--max-connections, which
                                 libmicrohttpd enforces; server/guard.c
                                 counts them) */
    srv_budget batch_chunks;  /* batch chunks on the pool, all batches
                                 (--threads; http_batch.c) */
    srv_stream_chains *stream_chains; /* the chains open streams hold, each
                                         once (server/stream_chains.c) */
    srv_routes *routes;       /* the HTTP routes, registered at startup
                                 (server/http_route.h) */

    /* ---- per loop ---- */
    uv_loop_t *loop;          /* the loop; owns every socket of this context */
    struct MHD_Daemon *mhd;   /* external-epoll daemon driven by the loop */
    uint16_t port;            /* the bound port (useful when cfg.listen_port is 0) */
    srv_mhd_glue *mhd_glue;   /* private to server/loop.c (srv_loop_attach
                                 sets it) */
    srv_http *http;           /* the HTTP side: routes, finished requests kept
                                 for reuse (server/http_mhd.c) */
    srv_guard *guard;         /* the request deadline (server/guard.c) */
    srv_ws *ws;               /* the WebSocket connections and the hooks of
                                 their streams (server/ws_conn.c) */
    srv_turn *turn;           /* the inline budget of a turn of the loop
                                 (server/solve.h) */
    srv_trim *trim;           /* memory given back after large requests
                                 (server/trim.h) */
    srv_batch *batch_head, *batch_tail; /* batches with chunks to hand out,
                                           round robin (http_batch.c) */
    size_t pool_depth;        /* work items submitted and not yet completed
                                 (a gauge: summed over loops at a scrape) */
    size_t active_requests;   /* HTTP requests begun and not yet completed */
    uint64_t requests_begun;  /* HTTP requests begun since startup (the drain
                                 watches it for quiet) */
} srv_ctx;

#endif /* SRV_H */
