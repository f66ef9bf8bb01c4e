/*
 * guard.c: the deadline for receiving a whole request (--request-timeout),
 * against clients that trickle a request byte by byte and so are never
 * idle for --timeout (slowloris).
 *
 * libmicrohttpd tells us when a connection starts and closes
 * (MHD_OPTION_NOTIFY_CONNECTION, srv_guard_notify); each connection gets a
 * node, kept in a list ordered by deadline: the connection's start, or the
 * end of its previous request, plus --request-timeout. The access handler
 * says when a request has been received whole (srv_guard_received: the
 * node leaves the list while ikd works on it and answers) and the
 * completion callback when it is over (srv_guard_rearm: the node goes back
 * at the tail with a new deadline, so the idle time of a keep-alive
 * connection counts towards its next request). A WebSocket upgrade takes
 * its connection out for good (srv_guard_forget).
 *
 * Under pressure (GUARD_PRESSURE_PERCENT of --max-connections open, as when
 * a crowd from several addresses trickles requests on every slot, which
 * the per-address limit cannot stop) the deadline shrinks, as Apache's
 * mod_reqtimeout and nginx do: a request must then be in whole within
 * GUARD_PRESSURE_MS of its start, plus a second for every
 * GUARD_PRESSURE_RATE bytes of body that arrived (a large upload at a
 * decent rate is not cut); an idle keep-alive connection waiting for its
 * next request counts as one that has sent nothing yet. The oldest go
 * first, every tick while the pressure lasts.
 *
 * Clients gone mid-body: libmicrohttpd 0.9.75 (edge-triggered epoll)
 * misses a client's end that came before its read that emptied the socket,
 * and would wait for the rest of the body until --timeout, holding its
 * bytes and a drain. So each tick, a request whose body stopped coming
 * since the previous tick is looked at (a peek at its socket; again after
 * 2, 4, 8, ... ticks without progress, so that a crowd of stalled uploads
 * costs little), and one whose client ended its side is cut without an
 * answer (counted as client_gone, not request_timeout). An upload that
 * keeps coming costs nothing.
 *
 * A timer (GUARD_TICK_MS) cuts every connection at the head of the list
 * whose deadline passed: it writes "408 Request Timeout" with a JSON error
 * on the socket (libmicrohttpd has written nothing yet on a connection that
 * is still receiving its request) and shuts the socket down, then runs
 * libmicrohttpd, which sees the end of the connection and closes it. This
 * raw answer, and the connection notification, are why this file talks to
 * libmicrohttpd: one of the deliberate exceptions http_mhd.c's opening
 * comment names.
 *
 * Memory: one node per connection (freed when libmicrohttpd closes it).
 * Threads: loop thread only, like libmicrohttpd's callbacks here.
 */
#include "server/guard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/accept.h"
#include "server/http.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"

#define GUARD_TICK_MS 250
#define GUARD_PRESSURE_PERCENT 90      /* of --max-connections open */
#define GUARD_PRESSURE_MS 5000         /* a whole request then, at most... */
#define GUARD_PRESSURE_RATE (64 * 1024) /* ...plus a second per this many body bytes */

typedef struct guard_node guard_node;
struct guard_node {
    guard_node *prev, *next;
    struct MHD_Connection *conn;
    uint64_t deadline; /* loop time (ms) */
    uint64_t start;    /* when the request began (or the previous one ended) */
    size_t body;       /* body bytes of this request that arrived so far */
    uint64_t consumed; /* bytes of the requests over so far (head and body) */
    bool consumed_unknown; /* one had a body of unknown length (chunked) */
    bool listed;
    bool upgraded;     /* a WebSocket now: never listed again */
    size_t body_seen;  /* body at the previous tick */
    unsigned stalled;  /* ticks since the body last grew */
    srv_admission admission; /* the connection's units of the bounds on
                                connections (server/accept.h) */
};

struct srv_guard {
    srv_ctx *ctx;
    uv_timer_t timer;
    guard_node *head, *tail;
    uint64_t timeout_ms;
    size_t cut; /* connections cut so far (for the log) */
};

static void unlink_node(srv_guard *g, guard_node *n)
{
    if (!n->listed)
        return;
    if (n->prev)
        n->prev->next = n->next;
    else
        g->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        g->tail = n->prev;
    n->prev = n->next = NULL;
    n->listed = false;
}

static void append_node(srv_guard *g, guard_node *n)
{
    unlink_node(g, n);
    if (n->upgraded)
        return;
    n->start = uv_now(g->ctx->loop);
    n->deadline = n->start + g->timeout_ms;
    n->body = n->body_seen = 0;
    n->stalled = 0;
    n->prev = g->tail;
    if (g->tail)
        g->tail->next = n;
    else
        g->head = n;
    g->tail = n;
    n->listed = true;
}

static guard_node *node_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* Answers 408 on the raw socket (not to a client that is gone) and shuts
 * it down (see the file comment). */
static void cut(srv_guard *g, guard_node *n, bool gone)
{
    proto_error e;
    proto_error_set(&e, PROTO_E_REQUEST_TIMEOUT, "",
                    "the request was not received whole within --request-timeout");
    char body[384];
    size_t bl = proto_error_format(&e, body, sizeof body);
    if (bl >= sizeof body)
        bl = sizeof body - 1;
    char head[192];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d Request Timeout\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      srv_http_status(e.code), bl);
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(n->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    unlink_node(g, n);
    n->upgraded = true; /* never listed again */
    if (!i)
        return;
    if (!gone) {
        /* best effort: a client that does not read simply misses the answer */
        (void)!send(i->connect_fd, head, (size_t)hl, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)!send(i->connect_fd, body, bl, MSG_NOSIGNAL | MSG_DONTWAIT);
        g->cut++;
    }
    shutdown(i->connect_fd, SHUT_RDWR);
    srv_metrics_rejected(g->ctx, gone ? "client_gone" : "request_timeout");
}

/* Under pressure: cuts the requests older than the pressure deadline (see
 * the file comment); the list is in order of start, so the walk stops at
 * the first one younger than GUARD_PRESSURE_MS. */
static size_t cut_under_pressure(srv_guard *g, uint64_t now)
{
    size_t max = g->ctx->cfg.max_connections;
    size_t open = srv_budget_used(&g->ctx->sh->connections);
    if (open * 100 < max * GUARD_PRESSURE_PERCENT)
        return 0;
    size_t n = 0;
    for (guard_node *x = g->head, *next; x && now - x->start >= GUARD_PRESSURE_MS; x = next) {
        next = x->next;
        uint64_t allowed = GUARD_PRESSURE_MS + (uint64_t)(x->body / GUARD_PRESSURE_RATE) * 1000;
        if (now - x->start >= allowed) {
            cut(g, x, false);
            n++;
        }
    }
    if (n)
        srv_log(g->ctx, SRV_LOG_INFO,
                "%zu connections cut: %zu of %zu connections open, and no whole request within "
                "%d s",
                n, open, max, GUARD_PRESSURE_MS / 1000);
    return n;
}

/* Whether the client of n has ended its side or reset: a peek. */
static bool client_gone(guard_node *n)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(n->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char b;
    ssize_t k = i ? recv(i->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
    return i && (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR));
}

/* Cuts the requests whose body stopped coming because their client is gone
 * (see the file comment); how many. */
static size_t cut_gone(srv_guard *g)
{
    size_t n = 0;
    for (guard_node *x = g->head, *next; x; x = next) {
        next = x->next;
        if (x->body == 0)
            continue;
        if (x->body != x->body_seen) {
            x->body_seen = x->body;
            x->stalled = 0;
            continue;
        }
        x->stalled++;
        if ((x->stalled & (x->stalled - 1)) == 0 && client_gone(x)) {
            cut(g, x, true);
            n++;
        }
    }
    return n;
}

static void on_tick(uv_timer_t *t)
{
    srv_guard *g = t->data;
    uint64_t now = uv_now(g->ctx->loop);
    size_t n = 0;
    while (g->head && g->head->deadline <= now) {
        cut(g, g->head, false);
        n++;
    }
    if (n)
        srv_log(g->ctx, SRV_LOG_INFO, "%zu connections cut: no whole request within %u s", n,
                g->ctx->cfg.request_timeout_s);
    n += cut_gone(g) + cut_under_pressure(g, now);
    if (n)
        srv_mhd_run(g->ctx);
}

int srv_guard_start(srv_ctx *ctx)
{
    srv_guard *g = calloc(1, sizeof *g);
    if (!g)
        return SRV_ENOMEM;
    g->ctx = ctx;
    g->timeout_ms = (uint64_t)ctx->cfg.request_timeout_s * 1000;
    uv_timer_init(ctx->loop, &g->timer);
    g->timer.data = g;
    uv_timer_start(&g->timer, on_tick, GUARD_TICK_MS, GUARD_TICK_MS);
    ctx->guard = g;
    return SRV_OK;
}

static void timer_closed(uv_handle_t *h)
{
    free(h->data);
}

void srv_guard_stop(srv_ctx *ctx)
{
    srv_guard *g = ctx->guard;
    if (!g)
        return;
    ctx->guard = NULL;
    /* the nodes still listed belong to connections libmicrohttpd closes
     * later (srv_guard_notify frees them without the guard) */
    for (guard_node *n = g->head; n;) {
        guard_node *next = n->next;
        n->prev = n->next = NULL;
        n->listed = false;
        n = next;
    }
    uv_timer_stop(&g->timer);
    uv_close((uv_handle_t *)&g->timer, timer_closed);
}

void srv_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe)
{
    srv_ctx *ctx = cls;
    srv_guard *g = ctx->guard;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        guard_node *n = calloc(1, sizeof *n);
        *socket_context = n;
        if (!n) {
            /* out of memory: the connection is refused (its admission goes
             * back to server/accept.c, which closes nothing itself) */
            const union MHD_ConnectionInfo *i =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (i)
                shutdown(i->connect_fd, SHUT_RDWR);
            return;
        }
        n->conn = conn;
        srv_accept_take(ctx, &n->admission);
        if (g)
            append_node(g, n);
        return;
    }
    guard_node *n = *socket_context;
    *socket_context = NULL;
    if (!n)
        return;
    /* (libmicrohttpd closes the socket after this) */
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    srv_accept_let_go(ctx, i ? i->connect_fd : -1, &n->admission);
    if (g)
        unlink_node(g, n);
    free(n);
}

void srv_guard_consumed_add(srv_ctx *ctx, struct MHD_Connection *conn, uint64_t n, bool known)
{
    guard_node *x = node_of(conn);
    if (!x)
        return;
    x->consumed += n;
    if (!known)
        x->consumed_unknown = true;
}

bool srv_guard_consumed(srv_ctx *ctx, struct MHD_Connection *conn, uint64_t *n)
{
    guard_node *x = node_of(conn);
    if (!x || x->consumed_unknown)
        return false;
    *n = x->consumed;
    return true;
}

void srv_guard_progress(srv_ctx *ctx, struct MHD_Connection *conn, size_t n)
{
    guard_node *x = ctx->guard ? node_of(conn) : NULL;
    if (x)
        x->body += n;
}

void srv_guard_received(srv_ctx *ctx, struct MHD_Connection *conn)
{
    guard_node *n = ctx->guard ? node_of(conn) : NULL;
    if (n)
        unlink_node(ctx->guard, n);
}

void srv_guard_rearm(srv_ctx *ctx, struct MHD_Connection *conn)
{
    guard_node *n = ctx->guard ? node_of(conn) : NULL;
    if (n)
        append_node(ctx->guard, n);
}

void srv_guard_forget(srv_ctx *ctx, struct MHD_Connection *conn)
{
    guard_node *n = ctx->guard ? node_of(conn) : NULL;
    if (!n)
        return;
    unlink_node(ctx->guard, n);
    n->upgraded = true;
}
