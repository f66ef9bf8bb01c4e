/*
 * http.h: the HTTP side's entry points (server/http_mhd.c): the callbacks
 * libmicrohttpd calls, which serve.c registers when it starts the daemon,
 * and the HTTP side's pure rules (server/http_rules.c), which other
 * modules share with it: the HTTP status of a wire error code, the
 * bearer-token check, media types and Content-Length. Loop thread only,
 * except the rules (any thread). The endpoints register their routes
 * (server/http_route.h) before the daemon starts.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "server/srv.h"

/* libmicrohttpd's access handler (cls = srv_ctx*) and request-completed
 * notification (MHD_OPTION_NOTIFY_COMPLETED, cls = srv_ctx*). */
enum MHD_Result srv_http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version,
                                const char *upload_data, size_t *upload_data_size,
                                void **con_cls);
void srv_http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);

/* The API's endpoints (server/http_handlers.c) register their routes
 * (server/http_route.h) in ctx->routes: 0 or SRV_ENOMEM. Before the daemon
 * starts. */
int srv_http_handlers_register(srv_ctx *ctx);

/* Before MHD_start_daemon(): the HTTP side's state (ctx->http). 0, or
 * SRV_ENOMEM. */
int srv_http_start(srv_ctx *ctx);
/* After MHD_stop_daemon(): frees the finished requests kept for reuse and
 * ctx->http; requests that finish later are freed at once. */
void srv_http_stop(srv_ctx *ctx);

/* ---- the rules (server/http_rules.c) ------------------------------------- */

/* The HTTP status a wire error code is answered with: the HTTP column of
 * proto/proto_error.h's PROTO_ERROR_MAP (500 for PROTO_E_NONE). */
int srv_http_status(proto_errcode code);

/* Constant-time check of an Authorization header value against
 * "Bearer <token>" (header may be NULL). */
bool srv_http_token_ok(const char *header, const char *token);

/* Whether the header value v (a Content-Type, or, with list, an Accept
 * list; v may be NULL) names the media type t: as its type (parameters
 * after ';' ignored, any case), or, with list, as one of its elements (but
 * with q=0). */
bool srv_http_names_type(const char *v, const char *t, bool list);

/* A Content-Length value (libmicrohttpd has refused a malformed one with
 * 400 before the access handler sees it: digits), saturated at the
 * largest value rather than wrapped. */
unsigned long long srv_http_content_length(const char *v);

#endif /* SRV_HTTP_H */
