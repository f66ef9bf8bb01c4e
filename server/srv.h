/*
 * srv.h: the daemon's shared context and the services every server/ module
 * uses: the event loop and libmicrohttpd driver, the thread pool, the chain
 * registry, metrics and logging. It is the contract between the HTTP side
 * (server/serve.c, server/http.c, ...) and the WebSocket side (server/ws*.c).
 *
 * Threads. One libuv loop (ctx->loop) owns every socket: libmicrohttpd runs
 * in external-epoll mode on it (no internal thread) and WebSocket streams
 * live on it too. Unless a function says "any thread", call it from the loop
 * thread only. Work handed to srv_pool_submit() runs on libuv's thread pool;
 * its completion callback runs back on the loop thread.
 *
 * libmicrohttpd facts this relies on (libmicrohttpd 0.9.75): in this mode
 * MHD_resume_connection() and MHD_upgrade_action(CLOSE) wake nothing, so the
 * caller must call srv_mhd_run() afterwards (loop thread only), or the
 * connection hangs until the next unrelated event.
 *
 * Errors: 0 or a negative SRV_E* value from the table below.
 *
 * Not here: HTTP routing (server/http.h), the WebSocket protocol
 * (server/ws.h, owned by the WebSocket module), flag parsing
 * (server/config.h).
 */
#ifndef SRV_H
#define SRV_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto/proto.h"

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

/* Static message for a status ("unknown status" for anything else). */
const char *srv_strerror(int status);

/* The HTTP status a wire error code is answered with: the HTTP column of
 * proto/proto_error.h's PROTO_ERROR_MAP (500 for PROTO_E_NONE). */
int srv_http_status(proto_errcode code);

/* ---- configuration ---------------------------------------------------- */

typedef enum srv_log_format { SRV_LOG_TEXT = 0, SRV_LOG_JSON = 1 } srv_log_format;

typedef enum srv_log_level {
    SRV_LOG_DEBUG = 0,
    SRV_LOG_INFO = 1,
    SRV_LOG_WARN = 2,
    SRV_LOG_ERROR = 3
} srv_log_level;

/* Everything the flags and environment configure (server/config.c fills it;
 * srv_config_default() gives the defaults listed in "ikd --help"). Strings
 * are owned by the config and freed by srv_config_free(). */
typedef struct srv_config {
    char *listen_host;          /* "127.0.0.1", "::1", "0.0.0.0" (no brackets) */
    uint16_t listen_port;       /* 0 = ephemeral; the bound port is in ctx->port */
    unsigned threads;           /* thread pool size; default: number of cores */
    unsigned max_connections;   /* MHD_OPTION_CONNECTION_LIMIT; default 10000 */
    unsigned conn_timeout_s;    /* idle/slow-client timeout; default 30 s */
    unsigned drain_timeout_s;   /* hard deadline of a drain; default 10 s */
    unsigned request_timeout_s; /* receiving a whole request; default 60 s (408) */
    unsigned max_conn_per_addr; /* connections from one IP address; default 1000 */
    size_t body_budget_bytes;   /* request bodies held at once, all clients; default 256 MiB */
    proto_limits limits;        /* body, joints, targets... (proto_limits_default) */
    size_t max_message_bytes;   /* WebSocket: largest received message; default 1 MiB */
    size_t ws_send_queue_bytes; /* WebSocket: per-connection send-queue cap; default 4 MiB */
    size_t registry_bytes;      /* chain registry memory bound; default 64 MiB */
    size_t pool_queue_max;      /* work items queued or running on the pool before 503 */
    double inline_cost_us;      /* proto_job_cost_us() below this runs inline on the loop */
    srv_log_format log_format;  /* text (default) or json lines on stderr */
    srv_log_level log_level;    /* default SRV_LOG_INFO */
    char *token;                /* bearer token; NULL = no authentication */
    char **allow_origins;       /* WebSocket upgrade Origin allow-list (exact match) */
    size_t n_allow_origins;     /* 0 = any Origin is accepted */
    char *web_dir;              /* --web: the live page's directory; NULL = no page */
} srv_config;

void srv_config_default(srv_config *cfg);
void srv_config_free(srv_config *cfg);

/* ---- the context ------------------------------------------------------ */

typedef struct srv_registry srv_registry;
typedef struct srv_metrics srv_metrics;
typedef struct srv_web srv_web;
typedef struct srv_mhd_glue srv_mhd_glue;

typedef struct srv_ctx {
    uv_loop_t *loop;          /* the one loop; owns every socket */
    struct MHD_Daemon *mhd;   /* external-epoll daemon driven by the loop */
    srv_config cfg;           /* read-only after startup */
    uint16_t port;            /* the bound port (useful when cfg.listen_port is 0) */
    srv_registry *registry;   /* chain registry (any thread) */
    srv_metrics *metrics;     /* Prometheus metrics (any thread) */
    srv_web *web;             /* the live page's files (server/web.h); NULL without --web */
    bool shutting_down;       /* set on SIGTERM/SIGINT; readiness is then 503 */
    size_t pool_depth;        /* work items submitted and not yet completed */
    size_t admitted;          /* admitted work in flight, what --max-queue bounds:
                                 items of srv_pool_submit, plus one per batch
                                 from its decode to its answer */
    size_t active_requests;   /* HTTP requests begun and not yet completed */
    uint64_t requests_begun;  /* HTTP requests begun since startup (the drain
                                 watches it for quiet) */
    size_t body_bytes;        /* request body bytes held now (--body-budget) */
    void *guard;              /* the request deadline (server/guard.c) */
    void *ws;                 /* owned by server/ws*.c (NULL until it sets it;
                                 released by srv_ws_shutdown) */
    srv_mhd_glue *mhd_glue;   /* private to server/loop.c (srv_loop_attach
                                 sets it) */
} srv_ctx;

/* ---- chain registry (server/registry.c) ------------------------------- */

/* A content-addressed, memory-bounded, LRU store of proto_chain. Ids come
 * from proto_chain_id() and live only as long as the process. Every function
 * is thread-safe (one internal mutex). */
srv_registry *srv_registry_new(size_t max_bytes);
void srv_registry_free(srv_registry *r); /* drops its references; NULL is fine */

/* Stores c (the registry takes its own reference; the caller keeps its own).
 * *created is true when the id was new, false when it was already there (the
 * stored one is kept and marked most recently used). Evicts least recently
 * used chains until the total memory fits max_bytes. Returns 0, or
 * SRV_ENOMEM when c alone is larger than max_bytes (nothing is changed). */
int srv_registry_put(srv_registry *r, proto_chain *c, bool *created);

/* New reference to the chain with that id (marks it most recently used), or
 * NULL. */
proto_chain *srv_registry_get(srv_registry *r, const char *id);

/* Removes the id. Returns 0 or SRV_ENOTFOUND. In-flight jobs keep their own
 * references. */
int srv_registry_remove(srv_registry *r, const char *id);

/* Counts for metrics/tests. */
size_t srv_registry_count(srv_registry *r);
size_t srv_registry_bytes(srv_registry *r);
size_t srv_registry_evictions(srv_registry *r);

/* proto_chain_lookup_fn adapter: ud is the srv_registry*. New reference or
 * NULL. */
proto_chain *srv_registry_lookup(void *ud, const char *id);

/* ---- metrics (server/metrics.c) --------------------------------------- */

/* Every hook is thread-safe. Labels must be static strings or strings that
 * outlive the process's use of them (route names, solver names from
 * proto_job_solver_name, reason literals). */
srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m);

/* One finished HTTP request: route label ("/v1/solve", "/v1/chains/{id}",
 * "other"...) and status code. */
void srv_metrics_request(srv_metrics *m, const char *route, int status);
/* One solve (one target) by solver name, its latency in seconds. */
void srv_metrics_observe_solve(srv_metrics *m, const char *solver, double seconds);
/* n solves of seconds_each each (a batch chunk's mean). */
void srv_metrics_observe_solves(srv_metrics *m, const char *solver, double seconds_each,
                                size_t n);
/* n targets of solver answered with status (proto_job_status's word). */
void srv_metrics_outcome(srv_metrics *m, const char *solver, const char *status, size_t n);
/* A rejected request/message by reason ("pool_full", "too_large",
 * "unauthorized", "bad_origin", "rate", ...). */
void srv_metrics_reject(srv_metrics *m, const char *reason);
/* Open-stream gauge: +1 when a WebSocket stream opens, -1 when it closes. */
void srv_metrics_streams_add(srv_metrics *m, int delta);
long srv_metrics_streams(srv_metrics *m);
/* Prometheus text exposition (malloc'd, caller frees; *len = strlen if len
 * is not NULL); NULL when out of memory. The three gauges are sampled by the
 * caller. */
char *srv_metrics_render(srv_metrics *m, size_t pool_depth, size_t registry_chains,
                         size_t active_requests, size_t *len);

/* Context shorthands for the hooks above. */
/* Targets [begin, end) of job were solved in seconds (all of them
 * together): the latency histogram gets each its share, ikd_solves_total
 * each its status. After proto_job_run() covered the range; any thread. */
void srv_metrics_solved(srv_ctx *ctx, const proto_job *job, size_t begin, size_t end,
                        double seconds);
void srv_metrics_rejected(srv_ctx *ctx, const char *reason);
void srv_metrics_stream_open(srv_ctx *ctx);
void srv_metrics_stream_close(srv_ctx *ctx);

/* ---- logging (server/log.c) ------------------------------------------- */

/* One line on stderr, as text ("2026-01-01T00:00:00.000Z INFO message") or
 * JSON ({"ts":...,"level":"info","msg":"..."}) per ctx->cfg.log_format.
 * ctx may be NULL (text). Lines below cfg.log_level are dropped. Any thread. */
void srv_log(srv_ctx *ctx, srv_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- the WebSocket side (implemented in server/ws.c) ------------------ */

/* Called by the router for GET /v1/stream after the bearer-token check.
 * Validates the upgrade (method, Upgrade/Connection/Sec-WebSocket-Key/
 * Version headers, Origin against cfg.allow_origins) and returns the
 * libmicrohttpd upgrade response (status 101) for the router to queue and
 * destroy, or NULL with *err set (status and code for the JSON error body). */
struct MHD_Response *srv_ws_upgrade(srv_ctx *ctx, struct MHD_Connection *conn, proto_error *err);

/* On SIGTERM/SIGINT (after ctx->shutting_down is set, which refuses new
 * upgrades): reads what each connection already sent, then ignores new
 * messages, ends running paths, lets running solves and waiting targets be
 * answered, and only then sends the 1001 close frame; each connection ends
 * when the client answers it, or after a one-second grace. Loop thread. */
void srv_ws_shutdown(srv_ctx *ctx);

/* Before MHD_stop_daemon: ends every connection still open at once (its
 * upgrade handle resolved with MHD_upgrade_action CLOSE + srv_mhd_run) and
 * frees ctx->ws. Pool solves still running for a stream are discarded when
 * they complete. Loop thread. */
void srv_ws_abort(srv_ctx *ctx);

/* Number of open streams, and of open WebSocket connections. */
size_t srv_ws_open_streams(srv_ctx *ctx);
size_t srv_ws_open_connections(srv_ctx *ctx);

#endif /* SRV_H */
