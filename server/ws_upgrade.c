/*
 * ws_upgrade.c: the HTTP side of a WebSocket upgrade (GET /v1/stream):
 * srv_ws_upgrade (server/ws.h), which the stream route calls after the
 * bearer token check, validates the handshake (RFC 6455 4.2.1: Upgrade,
 * Connection, Sec-WebSocket-Version 13, exactly one Sec-WebSocket-Key, the
 * pure checks being ws_handshake.c's), the Origin against --allow-origin
 * and the offered subprotocols, and returns libmicrohttpd's upgrade
 * response with Sec-WebSocket-Accept and, when the client offered it, the
 * selected subprotocol ikd.v1. The response names the connection's
 * handler (srv__ws_on_upgrade, server/ws_conn.c), which gets the socket
 * once the 101 is sent.
 *
 * libmicrohttpd: like ws_conn.c, one of the deliberate exceptions that
 * http_mhd.c's opening comment names (the upgrade response is made here).
 *
 * Not here: the connection after the 101 (ws_conn.c), the accept key and
 * the header token rules (ws_handshake.c), the token check (the HTTP
 * side's router).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_headers.h"
#include "server/ws.h"
#include "server/ws_conn.h"
#include "server/ws_handshake.h"

static struct MHD_Response *upgrade_response(srv_ctx *ctx, struct MHD_Connection *conn,
                                             const char *upgrade, const char *connection,
                                             const char *protocols, proto_error *err);

struct MHD_Response *srv_ws_upgrade(srv_ctx *ctx, struct MHD_Connection *conn, proto_error *err)
{
    if (ctx->shutting_down) {
        proto_error_set(err, PROTO_E_SHUTTING_DOWN, "", "ikd is shutting down");
        return NULL;
    }
    /* the list headers on every line they take (RFC 9110 5.3) */
    char *upgrade = srv_http_header_list(conn, "Upgrade");
    char *connection = srv_http_header_list(conn, "Connection");
    char *protocols = srv_http_header_list(conn, "Sec-WebSocket-Protocol");
    char *keys = srv_http_header_list(conn, "Sec-WebSocket-Key"); /* each line of it */
    struct MHD_Response *resp = NULL;
    if (keys && strchr(keys, ',')) /* none in a base64 key: a second line */
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                        "send one Sec-WebSocket-Key header, not several (RFC 6455 4.1)");
    else
        resp = upgrade_response(ctx, conn, upgrade, connection, protocols, err);
    free(upgrade);
    free(connection);
    free(protocols);
    free(keys);
    return resp;
}

static struct MHD_Response *upgrade_response(srv_ctx *ctx, struct MHD_Connection *conn,
                                             const char *upgrade, const char *connection,
                                             const char *protocols, proto_error *err)
{
    const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    const char *version =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (!srv_ws_header_has_token(upgrade, "websocket") ||
        !srv_ws_header_has_token(connection, "upgrade")) {
        proto_error_set(err, PROTO_E_UPGRADE_REQUIRED, "",
                        "GET /v1/stream is a WebSocket: send Upgrade: websocket and "
                        "Connection: Upgrade");
        return NULL;
    }
    if (!version || strcmp(version, "13") != 0) {
        proto_error_set(err, PROTO_E_UPGRADE_REQUIRED, "",
                        "Sec-WebSocket-Version must be 13 (RFC 6455)");
        return NULL;
    }
    char accept[SRV_WS_ACCEPT_LEN + 1];
    if (srv_ws_accept_key(key, accept) != 0) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                        "Sec-WebSocket-Key must be the base64 form of 16 bytes");
        return NULL;
    }
    if (!srv_ws_origin_allowed(origin, (const char *const *)ctx->cfg.allow_origins,
                               ctx->cfg.n_allow_origins)) {
        proto_error_set(err, PROTO_E_FORBIDDEN_ORIGIN, "", "Origin %.200s may not open streams",
                        origin);
        return NULL;
    }
    /* The bearer subprotocol is never selected (that would echo the token):
     * a client that offers it must offer ikd.v1 too, or a browser would fail
     * the connection for want of a selected protocol. */
    bool select_ikd = srv_ws_header_has_token(protocols, SRV_WS_PROTOCOL);
    if (!select_ikd && srv_ws_protocol_bearer(protocols, NULL) != SRV_WS_BEARER_NONE) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                        "Sec-WebSocket-Protocol: offer " SRV_WS_PROTOCOL
                        " next to the bearer token element; it is the protocol ikd selects");
        return NULL;
    }
    if (!ctx->ws) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "the WebSocket side did not start");
        return NULL;
    }
    struct MHD_Response *resp = MHD_create_response_for_upgrade(srv__ws_on_upgrade, ctx);
    if (!resp) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "WebSocket upgrade failed");
        return NULL;
    }
    /* libmicrohttpd adds "Connection: Upgrade" itself. */
    if (MHD_add_response_header(resp, "Upgrade", "websocket") != MHD_YES ||
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept) != MHD_YES ||
        (select_ikd &&
         MHD_add_response_header(resp, "Sec-WebSocket-Protocol", SRV_WS_PROTOCOL) != MHD_YES)) {
        MHD_destroy_response(resp);
        proto_error_set(err, PROTO_E_INTERNAL, "", "WebSocket upgrade failed");
        return NULL;
    }
    return resp;
}
