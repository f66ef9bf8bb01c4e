/*
 * ws.c: placeholder for the WebSocket side until server/ws.c of the
 * WebSocket module lands (that file replaces this one entirely).
 *
 * It lets the HTTP router link against the three functions srv.h declares
 * for the WebSocket side: GET /v1/stream is answered 501 "not_implemented"
 * and there are never any streams to close.
 */
#include "server/srv.h"

struct MHD_Response *srv_ws_upgrade(srv_ctx *ctx, struct MHD_Connection *conn, proto_error *err)
{
    proto_error_set(err, 501, "not_implemented", "", "WebSocket streams are not available");
    return NULL;
}

void srv_ws_shutdown(srv_ctx *ctx)
{
    ctx->ws = NULL;
}

size_t srv_ws_open_streams(srv_ctx *ctx)
{
    return 0;
}
