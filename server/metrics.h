/*
 * metrics.h: the daemon's Prometheus metrics (server/metrics.c lists the
 * series) and their text exposition for GET /metrics.
 *
 * Every hook is thread-safe. Labels must be static strings or strings that
 * outlive the process's use of them (route names, solver names from
 * proto_job_solver_name, reason literals): they are not copied.
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>

#include "proto/proto.h"

typedef struct srv_ctx srv_ctx;
typedef struct srv_metrics srv_metrics;

/* New, all counters zero; NULL when out of memory. */
srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m); /* NULL is fine */

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
/* Both of the above for n solves of one solver and status, in one lock. */
void srv_metrics_solves_outcome(srv_metrics *m, const char *solver, double seconds_each,
                                const char *status, size_t n);
/* A rejected request/message by reason ("pool_full", "too_large",
 * "unauthorized", "bad_origin", "rate", ...). */
void srv_metrics_reject(srv_metrics *m, const char *reason);
/* One operation on the shared registry (op: "fetch", "store", "forget",
 * "connection") and its result ("found", "missing", "ok", "unavailable",
 * "lost", "shutdown"): ikd_registry_shared_total{op,result}. */
void srv_metrics_shared(srv_metrics *m, const char *op, const char *result);
/* Open-stream gauge: +1 when a WebSocket stream opens, -1 when it closes. */
void srv_metrics_streams_add(srv_metrics *m, int delta);
long srv_metrics_streams(srv_metrics *m);
/* The bytes ikd holds for clients, by what holds them (the bounds of
 * README's "Bounds"): ikd_held_bytes{what} at the next render. Sampled by
 * the caller before a render, as the three gauges below. */
#define SRV_METRICS_LOOPS_MAX 256 /* --loops at most */
typedef struct srv_metrics_held {
    size_t registry;       /* the chain registry's accounting (--registry-bytes) */
    size_t request_bodies; /* request body bytes received and held (--body-budget) */
    size_t answers;        /* batch answers reserved or held until sent (--answer-budget) */
    size_t stream_chains;  /* chains and scenes open streams hold (--stream-chain-bytes) */
    size_t streams;        /* the open streams' own state (--stream-bytes) */
    int shared_up;         /* the shared registry's connections: 1 up, 0 down,
                              -1 no --redis (ikd_registry_shared_up) */
    /* the connections each event loop serves now (ikd_loop_connections{loop}) */
    unsigned loops;
    size_t loop_connections[SRV_METRICS_LOOPS_MAX];
} srv_metrics_held;
void srv_metrics_set_held(srv_metrics *m, const srv_metrics_held *held);
/* Prometheus text exposition (malloc'd, caller frees; *len = strlen if len
 * is not NULL); NULL when out of memory. The three gauges are sampled by the
 * caller. */
char *srv_metrics_render(srv_metrics *m, size_t pool_depth, size_t registry_chains,
                         size_t active_requests, size_t *len);

/* Context shorthands for the hooks above (on ctx->metrics). */
/* Targets [begin, end) of job were solved in seconds (all of them
 * together): the latency histogram gets each its share, ikd_solves_total
 * each its status. After proto_job_run() covered the range; any thread. */
void srv_metrics_solved(srv_ctx *ctx, const proto_job *job, size_t begin, size_t end,
                        double seconds);
void srv_metrics_rejected(srv_ctx *ctx, const char *reason);
void srv_metrics_stream_open(srv_ctx *ctx);
void srv_metrics_stream_close(srv_ctx *ctx);

#endif /* SRV_METRICS_H */
