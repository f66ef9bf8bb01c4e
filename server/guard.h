/*
 * guard.h: the deadline for receiving a whole request (--request-timeout,
 * and a shorter one while connections are scarce), kept per connection
 * (server/guard.c says how). Loop thread only.
 */
#ifndef SRV_GUARD_H
#define SRV_GUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/srv.h"

typedef struct srv_guard srv_guard;

/* Starts the guard's timer on ctx->loop and sets ctx->guard. 0, or
 * SRV_ENOMEM (then no deadline is enforced). */
int srv_guard_start(srv_ctx *ctx);
/* Stops and closes the timer; connections still open are no longer cut.
 * ctx->guard becomes NULL; the guard is freed once its timer has closed. */
void srv_guard_stop(srv_ctx *ctx);

/* libmicrohttpd's connection notification (MHD_OPTION_NOTIFY_CONNECTION,
 * cls = srv_ctx*): allocates a connection's node when it starts (its
 * socket context), which keeps the connection's admission
 * (server/accept.h), and frees it when it closes, giving the admission
 * back. */
void srv_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);

/* n more body bytes of the request on conn arrived (under pressure, the
 * deadline grows with them; server/guard.c). */
void srv_guard_progress(srv_ctx *ctx, struct MHD_Connection *conn, size_t n);
/* The requests of conn that are over took n more bytes of it (head and
 * body; known false: a body of unknown length, chunked). The drain tells
 * from it whether a client pipelined more requests (server/http_mhd.c). */
void srv_guard_consumed_add(srv_ctx *ctx, struct MHD_Connection *conn, uint64_t n, bool known);
/* The bytes of conn's requests that are over: true and *n, or false when
 * unknown. */
bool srv_guard_consumed(srv_ctx *ctx, struct MHD_Connection *conn, uint64_t *n);
/* The request on conn was received whole: no deadline until it is over. */
void srv_guard_received(srv_ctx *ctx, struct MHD_Connection *conn);
/* The request on conn is over: the next one is due within
 * --request-timeout from now. */
void srv_guard_rearm(srv_ctx *ctx, struct MHD_Connection *conn);
/* conn became a WebSocket: never cut by the guard. */
void srv_guard_forget(srv_ctx *ctx, struct MHD_Connection *conn);

#endif /* SRV_GUARD_H */
