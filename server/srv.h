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
 *   server/config.h    flags and environment -> srv_config
 *   server/loop.h      libmicrohttpd driven by the loop (srv_mhd_run)
 *   server/pool.h      the thread pool and its admission bound
 *   server/registry.h  the chain registry
 *   server/metrics.h   Prometheus metrics
 *   server/log.h       log lines
 *   server/http.h      the HTTP side's handlers, status of a wire error
 *   server/ws.h        the WebSocket side's entry points
 *   server/guard.h     the whole-request deadline
 *   server/web.h       the live page's files
 *   server/trim.h      memory given back after large requests
 */
#ifndef SRV_H
#define SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

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

/* ---- the context ------------------------------------------------------ */

struct MHD_Daemon;
typedef struct srv_registry srv_registry;
typedef struct srv_metrics srv_metrics;
typedef struct srv_web srv_web;
typedef struct srv_mhd_glue srv_mhd_glue;
typedef struct srv_batch srv_batch;
typedef struct srv_trim srv_trim;
typedef struct srv_turn srv_turn;
typedef struct srv_stream_chains srv_stream_chains;

typedef struct srv_ctx {
    uv_loop_t *loop;          /* the one loop; owns every socket */
    struct MHD_Daemon *mhd;   /* external-epoll daemon driven by the loop */
    srv_config cfg;           /* read-only after startup */
    uint16_t port;            /* the bound port (useful when cfg.listen_port is 0) */
    srv_registry *registry;   /* chain registry (any thread) */
    srv_metrics *metrics;     /* Prometheus metrics (any thread) */
    srv_web *web;             /* the live page's files (server/web.h); NULL without --web */
    bool shutting_down;       /* set on SIGTERM, SIGINT or SIGHUP; readiness is
                                 then 503 */
    size_t pool_depth;        /* work items submitted and not yet completed */
    size_t admitted;          /* admitted work in flight, what --max-queue bounds:
                                 items of srv_pool_submit, plus one per batch
                                 from its decode to its answer */
    size_t active_requests;   /* HTTP requests begun and not yet completed */
    uint64_t requests_begun;  /* HTTP requests begun since startup (the drain
                                 watches it for quiet) */
    size_t body_bytes;        /* request body bytes held now (--body-budget) */
    size_t connections;       /* libmicrohttpd's connections open, WebSockets
                                 included (server/guard.c counts them) */
    size_t answer_bytes;      /* batch answers reserved or held for clients
                                 until sent (--answer-budget) */
    srv_batch *batch_head, *batch_tail; /* batches with chunks to hand out,
                                           round robin (http_batch.c) */
    unsigned batch_chunks;    /* batch chunks on the pool (<= threads) */
    srv_trim *trim;           /* memory given back after large requests
                                 (server/trim.h) */
    srv_turn *turn;           /* the inline budget of a turn of the loop
                                 (server/solve.h) */
    void *http_spares;        /* finished HTTP requests kept for reuse
                                 (server/http_mhd.c) */
    unsigned n_http_spares;
    bool http_stopped;        /* srv_http_stop() ran: nothing more is kept */
    srv_stream_chains *stream_chains; /* the chains open streams hold
                                         (ws_stream.c) */
    size_t stream_chain_bytes; /* their memory (--stream-chain-bytes) */
    void *guard;              /* the request deadline (server/guard.c) */
    void *ws;                 /* owned by server/ws*.c (NULL until it sets it;
                                 released by srv_ws_abort) */
    srv_mhd_glue *mhd_glue;   /* private to server/loop.c (srv_loop_attach
                                 sets it) */
} srv_ctx;

#endif /* SRV_H */
