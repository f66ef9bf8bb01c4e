/*
 * accept.h: listening, and handing each new connection to a loop
 * (server/accept.c says how): the listening sockets, the admission of a
 * connection against --max-connections and --max-connections-per-address
 * for all loops together, and the balance of connections between the
 * loops.
 *
 * A connection is admitted before libmicrohttpd sees it: the loop that
 * accepted it reserves one unit of ctx->sh->connections and one of its
 * address in sh->addrs, and hands it, with that admission, to the loop
 * with the fewest connections (itself, unless it holds more than one
 * above the fewest), whose daemon takes it (MHD_add_connection). The
 * admission then belongs to the connection: guard.c's connection
 * notification takes it when libmicrohttpd starts the connection
 * (srv_accept_take) and gives it back when libmicrohttpd closes it
 * (srv_accept_release), so every bound holds exactly, however the loops
 * race. A filter (the TLS front) keeps the admission instead, for as long
 * as it holds the client's socket, and gives libmicrohttpd an empty one.
 * At --max-connections a loop stops accepting (new connections wait in
 * the listening socket's backlog, as libmicrohttpd's own limit does) until
 * a connection of any loop closes.
 *
 * Threads: each function says which; "the loop thread" is ctx's.
 */
#ifndef SRV_ACCEPT_H
#define SRV_ACCEPT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "server/srv.h"

/* What an admitted connection holds (a unit of the connection count and of
 * its address), kept by guard.c's node of the connection. Opaque. */
typedef struct srv_admission {
    void *addr;    /* private: the address's entry in sh->addrs; NULL: none held */
    srv_ctx *loop; /* private: the loop whose count holds it */
} srv_admission;

/* The process's table of connections per address (sh->addrs); NULL when
 * out of memory. Freed after every loop stopped. */
srv_addrs *srv_addrs_new(void);
void srv_addrs_free(srv_addrs *a); /* NULL is fine */
/* Connections open from the address of sa now (tests, metrics). Any
 * thread. */
unsigned srv_addrs_count(srv_addrs *a, const struct sockaddr *sa);

/* Before the loops start (main thread; ctx: any loop's, for its
 * configuration and logs): opens the n listening sockets of
 * cfg.listen_host and cfg.listen_port, one per loop, into fds[0..n-1], and
 * sets *port to the bound port (the real one when cfg asks for port 0).
 * With n > 1 they share the port (SO_REUSEPORT: the first binds, the others
 * join its port); a port some other socket listens on already is refused
 * first, so two ikd never share a port by mistake. Returns 0, SRV_EINVAL
 * (the host is not an IP address) or SRV_EIO (it cannot listen there),
 * each with its reason logged; then no socket is left open. */
int srv_accept_listen(srv_ctx *ctx, int *fds, unsigned n, uint16_t *port);

/* Sets up ctx->accept on ctx->loop and starts watching the listening
 * socket fd (taken: closed by srv_accept_stop, or here on error). Before
 * the loops start. 0 or SRV_ENOMEM/SRV_EIO. */
int srv_accept_start(srv_ctx *ctx, int fd);

/* The loop drains (loop thread): stops accepting and closes its listening
 * socket; connections already handed to this loop are still served.
 * Safe to call twice. */
void srv_accept_stop(srv_ctx *ctx);

/* The loop ends (loop thread, before MHD_stop_daemon): stops (as
 * srv_accept_stop) and closes the handles, which finish closing in the
 * loop's next run. */
void srv_accept_close(srv_ctx *ctx);
/* After every loop ended (their threads joined): frees ctx->accept, which
 * other loops may look at until then. */
void srv_accept_free(srv_ctx *ctx);

/* guard.c's connection notification, when libmicrohttpd starts a
 * connection (loop thread): the admission the connection was added with,
 * moved into *out (false, *out empty: none, a connection not added through
 * this module). */
bool srv_accept_take(srv_ctx *ctx, srv_admission *out);

/* Gives the loop's daemon the connection fd (loop thread), with its
 * admission *a, which the connection takes (or which is given back here
 * when libmicrohttpd refuses it: it then closes fd); *a may be empty (a
 * filter that keeps the admission itself). true when taken. The filter's
 * way of handing a connection on. */
bool srv_accept_add(srv_ctx *ctx, int fd, srv_admission *a, const struct sockaddr *sa,
                    socklen_t len);

/* What a loop does with each connection it serves, instead of giving it to
 * its daemon: takes fd and the admission *a (moved out of *a), and hands
 * the connection on with srv_accept_add, or closes it and gives *a back
 * (srv_accept_release); it may keep *a until it closes fd and hand an
 * empty admission on. The TLS front (server/tls_front.h) is one: it
 * does the handshake first, and gives the daemon one end of a socketpair.
 * Loop thread. */
typedef void srv_accept_filter(srv_ctx *ctx, int fd, srv_admission *a, const struct sockaddr *sa,
                               socklen_t len);
/* Sets ctx's filter, after srv_accept_start and before the loop runs. */
void srv_accept_set_filter(srv_ctx *ctx, srv_accept_filter *filter);

/* The connection that held *a closed (loop thread): its units are given
 * back, and loops that stopped accepting at --max-connections are woken.
 * *a is emptied; an empty one is fine. */
void srv_accept_release(srv_admission *a);

/* libmicrohttpd is about to close fd (-1: unknown), whose connection held
 * *a (loop thread; *a is emptied): when the kernel still holds bytes of
 * it unsent, the loop keeps the socket and *a until the kernel has sent
 * them, or resets it once the client has taken nothing for --timeout (30 s
 * with --timeout 0); else as srv_accept_release. Without it a closed
 * socket's unsent bytes stay in the kernel (FIN-WAIT-1) for as long as the
 * client acknowledges its probes, counted by no limit. A socket that is
 * not TCP (the TLS front's socketpair: the front keeps its own) holds
 * nothing unsent. */
void srv_accept_let_go(srv_ctx *ctx, int fd, srv_admission *a);

/* How long a socket kept for its last bytes waits for the client to take
 * some: --timeout, 30 s with --timeout 0 (a connection libmicrohttpd let
 * go is never held for ever). The TLS front's lingering too. Any thread. */
uint64_t srv_accept_linger_ms(const srv_ctx *ctx);

#endif /* SRV_ACCEPT_H */
