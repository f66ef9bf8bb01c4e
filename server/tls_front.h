/*
 * tls_front.h: ikd's own TLS front (--tls-cert): TLS ended on the loop, in
 * front of a libmicrohttpd daemon that serves plain HTTP (server/tls_front.c
 * says why libmicrohttpd's own TLS is not used, and how this works).
 *
 * The front listens on --listen instead of libmicrohttpd (whose daemon is
 * then started with MHD_USE_NO_LISTEN_SOCKET), does each TLS handshake
 * with a session of the process's certificate store (server/tls.h), hands
 * the connection to the daemon as one end of a socketpair
 * (MHD_add_connection, with the client's address, so libmicrohttpd's
 * limits per address apply), and relays between the two: records from the
 * client decrypted into the socketpair, what libmicrohttpd writes
 * encrypted to the client. HTTPS and WSS are then plain HTTP and WebSocket
 * to everything behind it.
 *
 * One front per loop (ctx->tls_front), on the loop's daemon. Loop thread
 * only.
 */
#ifndef SRV_TLS_FRONT_H
#define SRV_TLS_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/srv.h"

/* Listens on cfg's --listen address (with SO_REUSEPORT when reuse_port,
 * for several loops sharing the port) and serves TLS into ctx->mhd, which
 * must be started and attached to ctx->loop. Sets ctx->port to the bound
 * port and ctx->tls_front. Returns 0, or SRV_EIO / SRV_ENOMEM / SRV_EINVAL
 * with a message in err (nothing started). */
int srv_tls_front_start(srv_ctx *ctx, bool reuse_port, char *err, size_t errsize);

/* Stops accepting connections (the drain): the listening socket is closed;
 * connections go on. */
void srv_tls_front_quiesce(srv_ctx *ctx);

/* Closes every connection (libmicrohttpd sees its end of each close) and
 * the listening socket; ctx->tls_front becomes NULL, and its memory is
 * freed once the loop has closed its handles. */
void srv_tls_front_stop(srv_ctx *ctx);

/* For the drain's test of pipelined requests (server/sockinfo.h's
 * question, asked of the connection libmicrohttpd reads on fd, its end of
 * a socketpair): the bytes relayed into the socketpair that libmicrohttpd
 * has read (*taken) and those the client sent that it has not read yet
 * (*waiting: unread in the socketpair, decrypted and not yet relayed, or
 * still in GnuTLS or the TCP socket). false when fd is not a connection
 * of the front. */
bool srv_tls_front_received(srv_ctx *ctx, int fd, uint64_t *taken, uint64_t *waiting);

/* Connections of the front now: handshaking, and relaying. */
size_t srv_tls_front_handshaking(srv_ctx *ctx);
size_t srv_tls_front_relaying(srv_ctx *ctx);

#endif /* SRV_TLS_FRONT_H */
