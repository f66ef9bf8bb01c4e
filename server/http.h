/*
 * http.h: the HTTP side's entry points (server/http_mhd.c): the handlers
 * libmicrohttpd calls, which serve.c registers when it starts the daemon,
 * and the two rules other modules share with it: the HTTP status of a wire
 * error code and the bearer-token check. Loop thread only, except
 * srv_http_status and srv_http_token_ok (any thread).
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

/* Before MHD_start_daemon(): the HTTP side's state (ctx->http). 0, or
 * SRV_ENOMEM. */
int srv_http_start(srv_ctx *ctx);
/* After MHD_stop_daemon(): frees the finished requests kept for reuse and
 * ctx->http; requests that finish later are freed at once. */
void srv_http_stop(srv_ctx *ctx);

/* The HTTP status a wire error code is answered with: the HTTP column of
 * proto/proto_error.h's PROTO_ERROR_MAP (500 for PROTO_E_NONE). */
int srv_http_status(proto_errcode code);

/* Constant-time check of an Authorization header value against
 * "Bearer <token>" (header may be NULL). */
bool srv_http_token_ok(const char *header, const char *token);

#endif /* SRV_HTTP_H */
