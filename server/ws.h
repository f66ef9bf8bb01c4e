/*
 * ws.h: the entry points of the WebSocket side (GET /v1/stream; the
 * connections are server/ws_conn.c's, the streams on them
 * server/ws_messages.c's, ws_stream.c's and ws_tick.c's): the start that
 * joins the two, the upgrade the stream route makes, and the shutdown and
 * counts the daemon's life cycle (server/serve.c) needs. The side keeps its
 * state in ctx->ws. Loop thread only.
 */
#ifndef SRV_WS_H
#define SRV_WS_H

#include <microhttpd.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "server/srv.h"

/* What the connection calls on the stream side (server/ws_conn.h). */
typedef struct srv_ws_hooks srv_ws_hooks;
/* The streams' hooks (server/ws_messages.c). */
extern const srv_ws_hooks srv_ws_stream_hooks;

/* Before the daemon starts: the WebSocket side's state (ctx->ws), whose
 * connections hand their messages to hooks (kept, not copied). 0 or
 * SRV_ENOMEM. */
int srv_ws_start(srv_ctx *ctx, const srv_ws_hooks *hooks);

/* The upgrade of the stream route (server/http_route.h), called by the HTTP
 * side for GET /v1/stream after the bearer-token check.
 * Validates the upgrade (method, Upgrade/Connection/Sec-WebSocket-Key/
 * Version headers, Origin against cfg.allow_origins) and returns the
 * libmicrohttpd upgrade response (status 101) for the router to queue and
 * destroy, or NULL with *err set (its code, answered with the HTTP status
 * srv_http_status gives, and the message of the JSON error body). */
struct MHD_Response *srv_ws_upgrade(srv_ctx *ctx, struct MHD_Connection *conn, proto_error *err);

/* On SIGTERM, SIGINT or SIGHUP (after ctx->shutting_down is set, which
 * refuses new upgrades): reads what each connection already sent (the
 * bytes its socket holds, and the end of a message begun in them), then
 * ignores new messages, ends running paths, lets running solves and waiting
 * targets be answered, and only then sends the 1001 close frame; each
 * connection ends when the client answers it, or after a one-second grace. */
void srv_ws_shutdown(srv_ctx *ctx);

/* Before MHD_stop_daemon: ends every connection still open at once (its
 * upgrade handle resolved with MHD_upgrade_action CLOSE + srv_mhd_run) and
 * frees ctx->ws. Pool solves still running for a stream are discarded when
 * they complete. */
void srv_ws_abort(srv_ctx *ctx);

/* Number of open streams, and of open WebSocket connections. */
size_t srv_ws_open_streams(srv_ctx *ctx);
size_t srv_ws_open_connections(srv_ctx *ctx);

#endif /* SRV_WS_H */
