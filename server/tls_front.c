/*
 * tls_front.c: the TLS front of one loop (contract in server/tls_front.h).
 *
 * Why not libmicrohttpd's own TLS (MHD_USE_TLS): with an external event
 * loop, libmicrohttpd 0.9.75 (Debian 12's) keeps a connection whose
 * handshake waits for the client among those it must run again at once
 * (MHD_get_timeout says 0 until the client's next flight): one client that
 * opens a connection and sends nothing kept the loop at a full core, and a
 * crowd of them would have starved every other client. It also relays an
 * upgraded TLS connection (a WSS stream) through buffers carved from what
 * is left of the connection's memory pool, which is nothing after the 101
 * (it falls back to 4 bytes each way: a 200 KB message took 50,000 turns),
 * and does not finish closing such a connection until the client gives up
 * (20 s for python-websockets). All three were fixed upstream after 0.9.75
 * ("Upgraded TLS: use more available memory for pumping the data", and
 * the handshake's readiness), not in Debian 12. So TLS ends here, on the
 * loop, with GnuTLS, and libmicrohttpd serves plain HTTP behind it.
 *
 * A connection:
 *   accept     accept.c accepts, admits (--max-connections and the limit
 *              per address hold for a connection from its accept, its
 *              handshake included) and hands each connection to a loop,
 *              whose front takes it (srv_tls_front_add, accept.c's filter)
 *              with its admission, which it keeps until it has closed the
 *              client's socket (lingering included: libmicrohttpd's
 *              connection holds none): the socket (TCP_NODELAY) gets a
 *              GnuTLS server session of the certificate store
 *              (server/tls.h).
 *   handshake  driven by the socket's readiness, within FRONT_HANDSHAKE_MS
 *              (and --request-timeout): a timer cuts the ones past it. What
 *              GnuTLS reads goes through net_pull, which fails a client
 *              that sends more than FRONT_BARE_BYTES yielding no data (a
 *              handshake message GnuTLS would hold whole, up to 16 MB).
 *   hand over  a socketpair: libmicrohttpd gets one end with the client's
 *              address (srv_accept_add; when it refuses, the connection is
 *              closed), the front keeps the other.
 *   relay      records from the client are decrypted into the front's
 *              buffer (FRONT_BUF bytes) and written into the socketpair;
 *              what libmicrohttpd writes (an answer, the 408 of the
 *              request deadline, a WebSocket's frames) is read into the
 *              other buffer and sent as records. A full buffer stops the
 *              reading of its side (backpressure), so a connection holds
 *              two buffers and its GnuTLS session, nothing more.
 *   close      the client's end (close_notify, EOF, an error) is passed on
 *              as a shutdown of the socketpair's writing side, so
 *              libmicrohttpd sees the end of the request stream and
 *              answers what it has; libmicrohttpd's end (it closed the
 *              connection) is answered by a close_notify after what it
 *              wrote and the end of the TCP stream, and the socket is
 *              closed once the kernel has sent all of it (SIOCOUTQNSD; a
 *              socket closed before would leave the kernel the bytes for
 *              as long as the client acknowledges its probes, counted by
 *              no limit); what it wrote has --timeout to go out, from the
 *              front or from the kernel (lingering), from the client's
 *              last progress, then the timer cuts the connection with a
 *              reset, which frees what the kernel holds at once.
 *
 * Not here: the certificate (tls.c), HTTP (libmicrohttpd, http_mhd.c).
 */
#include "server/tls_front.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/accept.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/sockinfo.h"
#include "server/tls.h"

#define FRONT_BUF (16 * 1024)      /* each direction: one TLS record's plaintext */
#define FRONT_HANDSHAKE_MS 10000   /* a handshake at most (less with --request-timeout) */
/* What a client may send that yields no data: its handshake, and after it
 * what comes between two records of data. GnuTLS holds a handshake message
 * until it is whole, and its 3-byte length says up to 16 MB (GnuTLS 3.7
 * held all of it, during the handshake and after it, as a TLS 1.3
 * post-handshake message). A ClientHello is a few hundred bytes (2 KB with
 * a post-quantum key share), ikd asks for no client certificate, and a
 * record of data is at most 16 KiB and its overhead. */
#define FRONT_BARE_BYTES (32 * 1024)
#define FRONT_TICK_MS 250

typedef struct front_conn front_conn;

struct front_conn {
    struct srv_tls_front *f;
    front_conn *prev, *next; /* the front's list: handshaking ones first */
    int net;                 /* the client's TCP socket */
    int app;                 /* the front's end of the socketpair; -1 before */
    int mhd_fd;              /* libmicrohttpd's end; -1 before */
    uv_poll_t net_poll, app_poll;
    bool app_poll_open;
    int net_events, app_events;
    gnutls_session_t s;
    srv_tls_ref ref;
    bool handshaking;
    bool net_eof;            /* the client sent its last byte */
    bool net_fin;            /* its TCP stream ended (net_pull saw it) */
    bool app_eof;            /* libmicrohttpd closed its end */
    bool app_gone;           /* the same, seen while its last bytes wait */
    bool closing;
    bool lingering;          /* libmicrohttpd is done; its last bytes wait */
    bool draining;           /* all given to the kernel, which has not sent it all */
    size_t unsent;           /* draining: what the kernel held unsent at the last look */
    int closes;              /* poll handles still closing */
    uint64_t deadline;       /* the handshake's, or the lingering's; loop time */
    uint64_t relayed;        /* plaintext bytes written into the socketpair */
    size_t bare;             /* read from the client since it last yielded data */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    srv_admission adm;       /* the connection's, until its socket is closed */
    size_t in_off, in_len;   /* in: decrypted, for libmicrohttpd */
    size_t out_off, out_len; /* out: from libmicrohttpd, to encrypt */
    unsigned char *in, *out; /* FRONT_BUF each, after the handshake */
};

struct srv_tls_front {
    srv_ctx *ctx;
    uv_timer_t timer;
    front_conn *head, *tail; /* handshaking and lingering ones at the tail */
    size_t handshaking, relaying;
    front_conn **by_fd; /* relaying connections by libmicrohttpd's fd */
    size_t nby_fd;
    uint64_t handshake_ms;
    uint64_t linger_ms; /* --timeout: libmicrohttpd's last bytes at most */
    int closes; /* its own handles still closing */
    bool stopped;
};

static void conn_pump(front_conn *c);
static void conn_close(front_conn *c);
static void set_events(front_conn *c, int net, int app);

/* ---- the list and the table by fd -------------------------------------------- */

static void list_unlink(struct srv_tls_front *f, front_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        f->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        f->tail = c->prev;
    c->prev = c->next = NULL;
}

static void list_push_tail(struct srv_tls_front *f, front_conn *c)
{
    c->prev = f->tail;
    c->next = NULL;
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
}

static bool by_fd_put(struct srv_tls_front *f, int fd, front_conn *c)
{
    if ((size_t)fd >= f->nby_fd) {
        size_t n = f->nby_fd ? f->nby_fd : 256;
        while (n <= (size_t)fd)
            n *= 2;
        front_conn **t = realloc(f->by_fd, n * sizeof *t);
        if (!t)
            return false;
        memset(t + f->nby_fd, 0, (n - f->nby_fd) * sizeof *t);
        f->by_fd = t;
        f->nby_fd = n;
    }
    f->by_fd[fd] = c;
    return true;
}

/* ---- closing ------------------------------------------------------------------ */

static void conn_free(front_conn *c)
{
    if (c->net >= 0)
        close(c->net);
    if (c->app >= 0)
        close(c->app);
    srv_accept_release(&c->adm); /* the sockets are closed: the slot is free */
    srv_tls_session_free(c->s);
    srv_tls_ref_release(&c->ref);
    free(c->in);
    free(c);
}

static void handle_closed(uv_handle_t *h)
{
    front_conn *c = h->data;
    if (--c->closes == 0)
        conn_free(c);
}

/* Ends c at once: both sockets closed (libmicrohttpd sees its end close),
 * c freed once its handles closed. */
static void conn_close(front_conn *c)
{
    if (c->closing)
        return;
    struct srv_tls_front *f = c->f;
    c->closing = true;
    list_unlink(f, c);
    if (c->handshaking)
        f->handshaking--;
    else
        f->relaying--;
    if (c->mhd_fd >= 0 && (size_t)c->mhd_fd < f->nby_fd && f->by_fd[c->mhd_fd] == c)
        f->by_fd[c->mhd_fd] = NULL;
    c->closes = 1;
    uv_close((uv_handle_t *)&c->net_poll, handle_closed);
    if (c->app_poll_open) {
        c->closes++;
        uv_close((uv_handle_t *)&c->app_poll, handle_closed);
    }
}

/* libmicrohttpd's last bytes wait, in the front or in the kernel: they get
 * --timeout from the client's last progress (as libmicrohttpd gives a
 * connection that stalls), then on_tick cuts the connection; its
 * admission still counts it against the limits. */
static void conn_linger(front_conn *c)
{
    if (c->lingering)
        return;
    c->lingering = true;
    c->deadline = uv_now(c->f->ctx->loop) + c->f->linger_ms;
    list_unlink(c->f, c);
    list_push_tail(c->f, c);
}


/* libmicrohttpd is done and what it wrote went to the kernel: close_notify
 * (once, without waiting for the client's) and the end of the stream,
 * then close once the kernel has sent them (on_tick looks). */
static void conn_finish(front_conn *c)
{
    gnutls_bye(c->s, GNUTLS_SHUT_WR);
    shutdown(c->net, SHUT_WR);
    c->unsent = srv_sock_unsent(c->net);
    if (c->unsent <= 1) {
        conn_close(c);
        return;
    }
    c->draining = true;
    set_events(c, 0, 0);
    conn_linger(c);
}

/* ---- relaying ------------------------------------------------------------------- */

static void on_net(uv_poll_t *p, int status, int events);
static void on_app(uv_poll_t *p, int status, int events);

static void set_events(front_conn *c, int net, int app)
{
    if (c->closing)
        return;
    if (net != c->net_events) {
        c->net_events = net;
        if (net)
            uv_poll_start(&c->net_poll, net, on_net);
        else
            uv_poll_stop(&c->net_poll);
    }
    if (c->app_poll_open && app != c->app_events) {
        c->app_events = app;
        if (app)
            uv_poll_start(&c->app_poll, app, on_app);
        else
            uv_poll_stop(&c->app_poll);
    }
}

/* Moves what can move both ways, then watches what it waits for. */
static void conn_pump(front_conn *c)
{
    int net = 0, app = 0;
    if (c->draining)
        return; /* the kernel sends the rest */
    /* client -> libmicrohttpd */
    for (;;) {
        if (c->in_off < c->in_len) {
            ssize_t n = send(c->app, c->in + c->in_off, c->in_len - c->in_off,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                app |= UV_WRITABLE;
                break;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) { /* libmicrohttpd closed its end */
                c->app_eof = true;
                c->in_off = c->in_len = 0;
                break;
            }
            c->in_off += (size_t)n;
            c->relayed += (uint64_t)n;
            if (c->in_off < c->in_len)
                continue;
            c->in_off = c->in_len = 0;
        }
        if (c->net_eof || c->app_eof)
            break;
        ssize_t r = gnutls_record_recv(c->s, c->in, FRONT_BUF);
        if (r > 0) {
            c->in_len = (size_t)r;
            c->bare = 0;
            continue;
        }
        if (r == GNUTLS_E_AGAIN && !c->net_fin) {
            net |= UV_READABLE;
            break;
        }
        if (r == GNUTLS_E_INTERRUPTED)
            continue;
        if (r == GNUTLS_E_REHANDSHAKE) { /* a TLS 1.2 renegotiation: refused */
            gnutls_alert_send(c->s, GNUTLS_AL_WARNING, GNUTLS_A_NO_RENEGOTIATION);
            continue;
        }
        /* close_notify, the end of the TCP stream (net_fin) or a fatal
         * error: the requests are all in; libmicrohttpd answers them and
         * closes */
        c->net_eof = true;
        shutdown(c->app, SHUT_WR);
        break;
    }
    /* libmicrohttpd -> client */
    for (;;) {
        if (c->out_off < c->out_len) {
            ssize_t r = gnutls_record_send(c->s, c->out + c->out_off, c->out_len - c->out_off);
            if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
                net |= gnutls_record_get_direction(c->s) ? UV_WRITABLE : UV_READABLE;
                if (!c->app_gone)
                    app |= UV_DISCONNECT; /* libmicrohttpd's end, read or not */
                break;
            }
            if (r < 0) { /* the client is gone */
                conn_close(c);
                return;
            }
            c->out_off += (size_t)r;
            if (c->lingering) /* the client reads: --timeout from now */
                c->deadline = uv_now(c->f->ctx->loop) + c->f->linger_ms;
            if (c->out_off < c->out_len)
                continue;
            c->out_off = c->out_len = 0;
        }
        if (c->app_eof)
            break;
        ssize_t n = recv(c->app, c->out, FRONT_BUF, MSG_DONTWAIT);
        if (n > 0) {
            c->out_len = (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            app |= UV_READABLE;
            break;
        }
        if (n < 0 && errno == EINTR)
            continue;
        c->app_eof = true; /* libmicrohttpd closed the connection */
    }
    if (c->app_eof && c->out_off == c->out_len) {
        conn_finish(c);
        return;
    }
    if (c->net_eof && c->app_eof) {
        conn_close(c);
        return;
    }
    if (c->app_eof || c->app_gone)
        conn_linger(c); /* for a client that does not read */
    set_events(c, net, app);
}

/* Either socket's readiness (or error, which the calls then show). */
static void on_app(uv_poll_t *p, int status, int events)
{
    front_conn *c = p->data;
    if (events & UV_DISCONNECT)
        c->app_gone = true;
    conn_pump(c);
}

/* ---- handshakes ------------------------------------------------------------------ */

/* The handshake is done: libmicrohttpd gets the connection. */
static void hand_over(front_conn *c)
{
    struct srv_tls_front *f = c->f;
    srv_ctx *ctx = f->ctx;
    int sp[2];
    c->in = malloc(2 * FRONT_BUF);
    if (!c->in || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) != 0) {
        srv_log(ctx, SRV_LOG_WARN, "TLS: cannot hand a connection over: %s",
                c->in ? strerror(errno) : "out of memory");
        conn_close(c);
        return;
    }
    c->out = c->in + FRONT_BUF;
    c->app = sp[0];
    if (uv_poll_init(ctx->loop, &c->app_poll, c->app) != 0) {
        close(sp[1]);
        conn_close(c);
        return;
    }
    c->app_poll.data = c;
    c->app_poll_open = true;
    c->handshaking = false;
    f->handshaking--;
    f->relaying++;
    /* relaying ones are kept at the list's head, handshaking ones at its
     * tail (on_tick walks those) */
    list_unlink(f, c);
    c->next = f->head;
    if (f->head)
        f->head->prev = c;
    else
        f->tail = c;
    f->head = c;
    c->mhd_fd = sp[1];
    if (!by_fd_put(f, sp[1], c)) {
        close(sp[1]);
        c->mhd_fd = -1;
        conn_close(c);
        return;
    }
    /* libmicrohttpd closes sp[1] itself when it refuses it; its connection
     * holds no admission (c->adm stays with the front, which holds the
     * client's socket longer: lingering) */
    srv_admission none = {NULL, NULL};
    if (!srv_accept_add(ctx, sp[1], &none, (const struct sockaddr *)&c->addr, c->addrlen)) {
        f->by_fd[sp[1]] = NULL;
        c->mhd_fd = -1;
        srv_metrics_rejected(ctx, "connection_limit");
        conn_close(c);
        return;
    }
    srv_mhd_run(ctx);
    conn_pump(c);
}

static void handshake(front_conn *c)
{
    int r = gnutls_handshake(c->s);
    if (r == GNUTLS_E_SUCCESS) {
        hand_over(c);
        return;
    }
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED || !gnutls_error_is_fatal(r)) {
        set_events(c, gnutls_record_get_direction(c->s) ? UV_WRITABLE : UV_READABLE, 0);
        return;
    }
    srv_log(c->f->ctx, SRV_LOG_DEBUG, "TLS handshake failed: %s", gnutls_strerror(r));
    srv_metrics_rejected(c->f->ctx, "tls_handshake");
    conn_close(c);
}

/* GnuTLS's reading from the client: at most FRONT_BARE_BYTES that yield no
 * data (beyond, a read error: the handshake or the connection fails). The
 * end of the TCP stream after the handshake is kept from GnuTLS (it would
 * take it for an error that ends the session, answers unsent included):
 * GnuTLS is told to wait, and conn_pump sees net_fin. */
static ssize_t net_pull(gnutls_transport_ptr_t p, void *buf, size_t size)
{
    front_conn *c = p;
    if (c->bare >= FRONT_BARE_BYTES) {
        errno = EMSGSIZE;
        return -1;
    }
    if (size > FRONT_BARE_BYTES - c->bare)
        size = FRONT_BARE_BYTES - c->bare;
    ssize_t n = recv(c->net, buf, size, 0);
    if (n > 0)
        c->bare += (size_t)n;
    if (n == 0 && !c->handshaking) {
        c->net_fin = true;
        errno = EAGAIN;
        return -1;
    }
    return n;
}

static void on_net(uv_poll_t *p, int status, int events)
{
    front_conn *c = p->data;
    if (c->handshaking)
        handshake(c);
    else
        conn_pump(c);
}

/* ---- accepting -------------------------------------------------------------------- */

void srv_tls_front_add(srv_ctx *ctx, int fd, srv_admission *adm, const struct sockaddr *sa,
                       socklen_t len)
{
    struct srv_tls_front *f = ctx->tls_front;
    front_conn *c = f && len <= sizeof c->addr ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        close(fd);
        srv_accept_release(adm);
        return;
    }
    c->f = f;
    c->net = fd;
    c->app = c->mhd_fd = -1;
    memcpy(&c->addr, sa, len);
    c->addrlen = len;
    c->adm = *adm;
    adm->addr = NULL;
    adm->loop = NULL;
    c->handshaking = true;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (srv_tls_session_new(ctx->tls, &c->ref, &c->s) != SRV_OK ||
        uv_poll_init_socket(ctx->loop, &c->net_poll, fd) != 0) {
        srv_tls_session_free(c->s);
        srv_accept_release(&c->adm);
        free(c);
        close(fd);
        return;
    }
    gnutls_transport_set_int(c->s, fd); /* GnuTLS's own writing to fd */
    gnutls_transport_set_pull_function(c->s, net_pull);
    gnutls_transport_set_ptr2(c->s, c, (gnutls_transport_ptr_t)(intptr_t)fd);
    c->net_poll.data = c;
    c->deadline = uv_now(ctx->loop) + f->handshake_ms;
    f->handshaking++;
    list_push_tail(f, c);
    handshake(c);
}

/* Cuts the handshakes and the lingering connections past their deadline
 * (they are at the list's tail), and closes the lingering ones whose last
 * bytes the kernel has sent (those whose client took some since the last
 * look get --timeout from now). */
static void on_tick(uv_timer_t *t)
{
    struct srv_tls_front *f = t->data;
    uint64_t now = uv_now(f->ctx->loop);
    size_t cut = 0, unread = 0;
    for (front_conn *c = f->tail, *prev; c && (c->handshaking || c->lingering); c = prev) {
        prev = c->prev;
        size_t unsent = c->draining ? srv_sock_unsent(c->net) : 0;
        if (c->draining && unsent <= 1) {
            conn_close(c); /* the kernel has sent the last bytes */
            continue;
        }
        if (c->draining && unsent < c->unsent) { /* the client reads */
            c->unsent = unsent;
            c->deadline = now + f->linger_ms;
        }
        if (c->deadline <= now) {
            if (c->handshaking) {
                cut++;
            } else {
                /* a reset: the kernel drops what it holds for the client */
                srv_sock_reset_on_close(c->net);
                unread++;
            }
            conn_close(c);
        }
    }
    if (unread) {
        srv_log(f->ctx, SRV_LOG_INFO, "%zu TLS connections cut: their client did not read the "
                "end of an answer within %llu ms", unread, (unsigned long long)f->linger_ms);
        for (size_t i = 0; i < unread; i++)
            srv_metrics_rejected(f->ctx, "tls_unread");
    }
    if (cut) {
        srv_log(f->ctx, SRV_LOG_INFO, "%zu TLS handshakes cut: not done within %llu ms", cut,
                (unsigned long long)f->handshake_ms);
        for (size_t i = 0; i < cut; i++)
            srv_metrics_rejected(f->ctx, "tls_handshake_timeout");
    }
}

/* ---- the daemon's entry points ------------------------------------------------------ */

int srv_tls_front_start(srv_ctx *ctx, char *err, size_t errsize)
{
    const srv_config *cfg = &ctx->cfg;
    struct srv_tls_front *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errsize, "out of memory");
        return SRV_ENOMEM;
    }
    f->ctx = ctx;
    f->handshake_ms = FRONT_HANDSHAKE_MS;
    if ((uint64_t)cfg->request_timeout_s * 1000 < f->handshake_ms)
        f->handshake_ms = (uint64_t)cfg->request_timeout_s * 1000;
    f->linger_ms = srv_accept_linger_ms(ctx);
    uv_timer_init(ctx->loop, &f->timer);
    f->timer.data = f;
    uv_timer_start(&f->timer, on_tick, FRONT_TICK_MS, FRONT_TICK_MS);
    ctx->tls_front = f;
    return SRV_OK;
}

static void own_handle_closed(uv_handle_t *h)
{
    struct srv_tls_front *f = h->data;
    if (--f->closes == 0) {
        free(f->by_fd);
        free(f);
    }
}

void srv_tls_front_stop(srv_ctx *ctx)
{
    struct srv_tls_front *f = ctx->tls_front;
    if (!f)
        return;
    ctx->tls_front = NULL;
    while (f->head)
        conn_close(f->head);
    uv_timer_stop(&f->timer);
    f->closes = 1;
    uv_close((uv_handle_t *)&f->timer, own_handle_closed);
}

bool srv_tls_front_received(srv_ctx *ctx, int fd, uint64_t *taken, uint64_t *waiting)
{
    struct srv_tls_front *f = ctx->tls_front;
    if (!f || fd < 0 || (size_t)fd >= f->nby_fd || !f->by_fd[fd])
        return false;
    front_conn *c = f->by_fd[fd];
    int unread = 0, in_tcp = 0;
    if (ioctl(fd, FIONREAD, &unread) != 0 || unread < 0)
        return false;
    if (ioctl(c->net, FIONREAD, &in_tcp) != 0 || in_tcp < 0)
        in_tcp = 0;
    *taken = c->relayed - (uint64_t)unread;
    *waiting = (uint64_t)unread + (c->in_len - c->in_off) + gnutls_record_check_pending(c->s) +
               (uint64_t)in_tcp;
    return true;
}

size_t srv_tls_front_handshaking(srv_ctx *ctx)
{
    return ctx->tls_front ? ctx->tls_front->handshaking : 0;
}

size_t srv_tls_front_relaying(srv_ctx *ctx)
{
    return ctx->tls_front ? ctx->tls_front->relaying : 0;
}
