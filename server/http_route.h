/*
 * http_route.h: the route table of ikd's HTTP side (server/http_route.c):
 * the endpoints register their routes at start-up (server/http_handlers.c
 * registers the API's), and the module that talks to libmicrohttpd
 * (server/http_mhd.c) finds a request's route here and calls its handler,
 * never naming one itself. A route says everything the HTTP layer checks
 * before its handler runs: the methods (and so the Allow header), whether a
 * token is needed, whether a body is read, and the metrics label.
 *
 * The table is process-wide (ctx->routes): written before the daemon
 * starts, read-only afterwards, so any thread may look routes up.
 */
#ifndef SRV_HTTP_ROUTE_H
#define SRV_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "server/srv.h"

struct MHD_Connection;
struct MHD_Response;
typedef struct srv_request srv_request; /* server/http_handler.h */

/* A request's method, as a bit of srv_route.methods. */
typedef enum srv_method {
    SRV_M_GET = 1,
    SRV_M_HEAD = 2,
    SRV_M_POST = 4,
    SRV_M_DELETE = 8,
    SRV_M_OPTIONS = 16,
    SRV_M_OTHER = 32
} srv_method;

/* The bit of an HTTP method name (SRV_M_OTHER for any other). */
srv_method srv_http_method_of(const char *name);

typedef struct srv_route {
    /* What the route serves: exactly path; or, with prefix, path followed
     * by one more segment (no '/'; "/v1/chains/" + an id); or, with match
     * and no path, any URL it accepts (the live page's files). */
    const char *path;
    bool prefix;
    bool (*match)(const srv_ctx *ctx, const char *url);
    const char *label; /* the metrics label (static) */
    unsigned methods;  /* srv_method bits; other methods get 405 with Allow */
    bool open;         /* no token needed */
    bool takes_body;   /* its body is read (and bounded by --max-body) */
    /* the token may also come as a Sec-WebSocket-Protocol element
     * (server/ws_handshake.h: browsers cannot set Authorization on a
     * WebSocket) */
    bool token_in_protocol;
    /* the body and answer may be the binary form (Content-Type and Accept
     * naming PROTO_BINARY_TYPE set srv_request.binary_in and binary_out) */
    bool binary;
    /* Answers a request that passed the checks (route, Origin, token,
     * method, body size), with its whole body: at once or after pool work
     * (server/http_handler.h). */
    void (*handle)(srv_request *q);
    /* Or, instead of handle, a protocol upgrade: validates the request and
     * makes libmicrohttpd's 101 response, or returns NULL with *err set
     * (answered with its status and message). The one handler that sees the
     * connection: an upgrade is a change of who owns it (server/ws.h). */
    struct MHD_Response *(*upgrade)(srv_ctx *ctx, struct MHD_Connection *conn, proto_error *err);
    /* Frees what handle kept in the request (srv_request's job, batch)
     * when the request is freed; or NULL. */
    void (*cleanup)(srv_request *q);
    /* The query parameter its GET, HEAD and POST read (srv_http_query), or
     * NULL for none (a DELETE reads none): any
     * other, a repeated one or one without a value is refused (400) before
     * the handler, as unknown JSON members are; with any_query, every
     * query is let through unread (the page's files, which a browser may
     * ask for with a cache-busting query). */
    const char *query;
    bool any_query;
    /* Set by srv_http_route_add: the Allow header's value, the methods in
     * the order GET, HEAD, POST, DELETE. */
    const char *allow;
} srv_route;

/* Adds a copy of r to the table (ctx->routes, made on first use) before
 * the daemon starts; a URL is routed to the first route, in the order
 * added, that serves it. 0, SRV_ENOMEM, or SRV_EINVAL for a route without
 * label, handle or upgrade, or what it serves. */
int srv_http_route_add(srv_ctx *ctx, const srv_route *r);

/* The route of a URL path, or NULL when none serves it. Any thread. */
const srv_route *srv_http_route_find(const srv_ctx *ctx, const char *url);

/* Frees the table (after the daemon stopped). */
void srv_http_routes_free(srv_ctx *ctx);

#endif /* SRV_HTTP_ROUTE_H */
