/*
 * tls_front.h: ikd's own TLS front (--tls-cert): TLS ended on the loop, in
 * front of a libmicrohttpd daemon that serves plain HTTP (server/tls_front.c
 * says why libmicrohttpd's own TLS is not used, and how this works).
 *
 * accept.c accepts and admits each connection and hands it to a loop,
 * whose front (accept.c's filter on that loop) does the TLS handshake with
 * a session of the process's certificate store (server/tls.h), hands the
 * connection to the loop's daemon as one end of a socketpair
 * (srv_accept_add, with the client's address and the connection's
 * admission), and relays between the two: records from the client
 * decrypted into the socketpair, what libmicrohttpd writes encrypted to
 * the client. HTTPS and WSS are then plain HTTP and WebSocket to
 * everything behind it.
 *
 * One front per loop (ctx->tls_front), on the loop's daemon. Loop thread
 * only.
 */
#ifndef SRV_TLS_FRONT_H
#define SRV_TLS_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/accept.h"
#include "server/srv.h"

/* Sets up ctx's front (ctx->tls_front) on ctx->loop, before the loop runs;
 * serve.c then makes srv_tls_front_add the loop's accept filter. Returns 0,
 * or SRV_ENOMEM with a message in err. */
int srv_tls_front_start(srv_ctx *ctx, char *err, size_t errsize);

/* accept.c's filter (server/accept.h's srv_accept_filter): takes the
 * accepted connection fd and its admission, and serves TLS on it. Loop
 * thread. */
void srv_tls_front_add(srv_ctx *ctx, int fd, srv_admission *adm, const struct sockaddr *sa,
                       socklen_t len);

/* Closes every connection (libmicrohttpd sees its end of each close);
 * ctx->tls_front becomes NULL, and its memory is freed once the loop has
 * closed its handles. */
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
