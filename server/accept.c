/*
 * accept.c: listening, admitting and handing connections to the loops
 * (contract in accept.h).
 *
 * Listening. Each loop has a listening socket of its own on the same
 * address and port (SO_REUSEPORT: the kernel spreads new connections over
 * them by a hash of their addresses, so no loop wakes for another's
 * connection), watched by a uv_poll_t on its loop. One socket per loop
 * rather than one socket watched by every loop: on one shared socket every
 * loop wakes for every connection and all but one find nothing to accept.
 * With one loop the socket is an ordinary one, and before several bind a
 * given port a plain bind checks that no other socket listens there (a
 * second ikd started on the same port by mistake would otherwise join the
 * first's and take half of its connections). libmicrohttpd runs without a
 * listening socket of its own (MHD_USE_NO_LISTEN_SOCKET): its daemons get
 * their connections from here (MHD_add_connection, on the loop that drives
 * the daemon).
 *
 * Admission. Before accepting, a loop reserves one unit of
 * sh->connections (--max-connections, all loops): when none is left it
 * stops watching its socket (new connections wait in the backlog) and is
 * woken when a connection of any loop closes. Once accepted, the
 * connection's address takes one of --max-connections-per-address in the
 * process's table (sh->addrs: one entry per address with connections open,
 * under a mutex taken once per connection opened or closed); a connection
 * beyond it is closed at once, as libmicrohttpd's own per-address limit
 * does (counted as rejected "connections_per_address").
 *
 * Balance. The kernel's hash spreads many connections evenly, but a few
 * long ones (fifty keep-alive clients, a game server's WebSocket) land
 * unevenly: a loop that holds more than one connection above the loop
 * with the fewest hands its new connection to that loop (a queue under
 * the target's lock, and a uv_async_t that wakes it), so that the loops
 * hold their connections within one of each other. Each loop's count
 * (ctx->assigned) is raised by whoever hands a connection to it and
 * lowered by the loop itself when the connection closes.
 *
 * Draining: a loop stops watching and closes its listening socket; what was
 * handed to it before is still added and served. A loop that no longer
 * takes connections refuses handed ones (its queue closed), and the loop
 * that accepted them keeps them.
 *
 * Out of descriptors (EMFILE, ENFILE) or memory while accepting: the loop
 * stops watching for ACCEPT_RETRY_MS and tries again.
 *
 * Letting go: libmicrohttpd closes a socket as soon as the kernel took its
 * last bytes, and the kernel then keeps them for a client that does not
 * read for as long as it acknowledges the window probes, counted by no
 * limit. So when libmicrohttpd is about to close a socket whose kernel
 * still holds bytes unsent, the loop keeps a duplicate of it (kept) with
 * the connection's admission, ends the stream after them (shutdown), and
 * closes it once the kernel has sent them (SIOCOUTQNSD, looked at every
 * KEEP_TICK_MS), or resets it (SO_LINGER 0: the kernel drops them) when
 * the client has taken nothing for --timeout (KEEP_DEFAULT_S with
 * --timeout 0), as the TLS front does with its own sockets.
 * TCP_USER_TIMEOUT, set then, has the kernel reset it as well should no
 * duplicate be had. Only then: on a live connection it would also cut a
 * WebSocket whose client stopped reading before ikd's own 1008 and its
 * grace.
 */
#include "server/accept.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/sockinfo.h"

#define ACCEPT_BATCH    32   /* connections accepted per wake-up at most */
#define ACCEPT_RETRY_MS 100  /* out of descriptors: wait this long */
#define ACCEPT_BACKLOG  1024 /* each listening socket's */
#define KEEP_TICK_MS    250  /* how often the kept sockets are looked at */
#define KEEP_DEFAULT_S  30   /* their time with --timeout 0 */

/* ---- the connections per address ------------------------------------------ */

typedef struct addr_entry {
    struct addr_entry *next;
    sa_family_t family;
    unsigned char bytes[16]; /* the IPv4 (4) or IPv6 (16) address */
    unsigned count;          /* connections open from it */
} addr_entry;

struct srv_addrs {
    uv_mutex_t lock;
    addr_entry **buckets;
    size_t nbuckets, count;
    /* loops that stopped accepting for want of a unit of sh->connections
     * (the loops' own flags, srv_accept.paused, are guarded by lock too) */
    unsigned paused;
};

srv_addrs *srv_addrs_new(void)
{
    srv_addrs *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->nbuckets = 256;
    a->buckets = calloc(a->nbuckets, sizeof *a->buckets);
    if (!a->buckets || uv_mutex_init(&a->lock) != 0) {
        free(a->buckets);
        free(a);
        return NULL;
    }
    return a;
}

void srv_addrs_free(srv_addrs *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nbuckets; i++)
        for (addr_entry *e = a->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(a->buckets);
    uv_mutex_destroy(&a->lock);
    free(a);
}

/* The key of an address: its family and bytes; false for another family. */
static bool addr_key(const struct sockaddr *sa, sa_family_t *family, unsigned char bytes[16])
{
    memset(bytes, 0, 16);
    *family = sa->sa_family;
    if (sa->sa_family == AF_INET) {
        memcpy(bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return true;
    }
    return false;
}

static size_t addr_hash(sa_family_t family, const unsigned char bytes[16])
{
    uint64_t h = 1469598103934665603ull ^ family;
    for (int i = 0; i < 16; i++)
        h = (h ^ bytes[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

/* (a->lock held) */
static addr_entry **addr_slot(srv_addrs *a, sa_family_t family, const unsigned char bytes[16])
{
    addr_entry **p = &a->buckets[addr_hash(family, bytes) & (a->nbuckets - 1)];
    while (*p && !((*p)->family == family && memcmp((*p)->bytes, bytes, 16) == 0))
        p = &(*p)->next;
    return p;
}

/* (a->lock held) Doubles the buckets; on failure the chains only grow. */
static void addrs_grow(srv_addrs *a)
{
    size_t n = a->nbuckets * 2;
    addr_entry **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < a->nbuckets; i++)
        for (addr_entry *e = a->buckets[i], *next; e; e = next) {
            next = e->next;
            addr_entry **p = &b[addr_hash(e->family, e->bytes) & (n - 1)];
            e->next = *p;
            *p = e;
        }
    free(a->buckets);
    a->buckets = b;
    a->nbuckets = n;
}

/* One more connection from sa when fewer than max are open from it: its
 * entry, else NULL (also when out of memory, or for an address of another
 * family: then the entry is a shared one for all such). */
static addr_entry *addrs_reserve(srv_addrs *a, const struct sockaddr *sa, unsigned max)
{
    sa_family_t family;
    unsigned char bytes[16];
    if (!addr_key(sa, &family, bytes))
        family = AF_UNSPEC;
    uv_mutex_lock(&a->lock);
    addr_entry **p = addr_slot(a, family, bytes);
    addr_entry *e = *p;
    if (!e && (e = calloc(1, sizeof *e))) {
        e->family = family;
        memcpy(e->bytes, bytes, 16);
        *p = e;
        if (++a->count > a->nbuckets)
            addrs_grow(a);
    }
    if (e && e->count < max)
        e->count++;
    else
        e = NULL;
    uv_mutex_unlock(&a->lock);
    return e;
}

unsigned srv_addrs_count(srv_addrs *a, const struct sockaddr *sa)
{
    sa_family_t family;
    unsigned char bytes[16];
    if (!addr_key(sa, &family, bytes))
        family = AF_UNSPEC;
    uv_mutex_lock(&a->lock);
    addr_entry *e = *addr_slot(a, family, bytes);
    unsigned n = e ? e->count : 0;
    uv_mutex_unlock(&a->lock);
    return n;
}

/* ---- listening --------------------------------------------------------------- */

typedef union sock_addr {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
    struct sockaddr_storage ss;
} sock_addr;

/* A listening socket on addr (nonblocking); reuse_port: it may share the
 * port with the others of this process. -1 with errno on failure. */
static int listen_socket(const sock_addr *addr, socklen_t len, bool reuse_port, bool listening)
{
    int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (addr->sa.sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    if ((reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) ||
        bind(fd, &addr->sa, len) != 0 || (listening && listen(fd, ACCEPT_BACKLOG) != 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int srv_accept_listen(srv_ctx *ctx, int *fds, unsigned n, uint16_t *port)
{
    const srv_config *cfg = &ctx->cfg;
    bool v6 = strchr(cfg->listen_host, ':') != NULL;
    sock_addr addr;
    memset(&addr, 0, sizeof addr);
    int rc = v6 ? uv_ip6_addr(cfg->listen_host, cfg->listen_port, &addr.in6)
                : uv_ip4_addr(cfg->listen_host, cfg->listen_port, &addr.in4);
    if (rc != 0) {
        srv_log(ctx, SRV_LOG_ERROR, "invalid listen address \"%s\" (use an IP address)",
                cfg->listen_host);
        return SRV_EINVAL;
    }
    socklen_t len = v6 ? sizeof addr.in6 : sizeof addr.in4;
    for (unsigned i = 0; i < n; i++)
        fds[i] = -1;
    const char *why = NULL;
    int err = 0;
    if (n > 1 && cfg->listen_port != 0) {
        /* nobody listens there: a socket that does not share the port binds */
        int probe = listen_socket(&addr, len, false, false);
        if (probe < 0) {
            why = "bind";
            err = errno;
        } else {
            close(probe);
        }
    }
    for (unsigned i = 0; !why && i < n; i++) {
        if ((fds[i] = listen_socket(&addr, len, n > 1, true)) < 0) {
            why = "bind";
            err = errno;
        } else if (i == 0) {
            /* the others join the port the first one got */
            socklen_t l = sizeof addr;
            if (getsockname(fds[0], &addr.sa, &l) != 0) {
                why = "getsockname";
                err = errno;
            }
        }
    }
    if (why) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot listen on %s port %u: %s (%s)", cfg->listen_host,
                (unsigned)cfg->listen_port, strerror(err), why);
        for (unsigned i = 0; i < n; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return SRV_EIO;
    }
    *port = ntohs(v6 ? addr.in6.sin6_port : addr.in4.sin_port);
    return SRV_OK;
}

/* ---- a loop's accepting ------------------------------------------------------- */

/* A socket libmicrohttpd let go whose last bytes the kernel holds: a
 * duplicate, with the connection's admission. */
typedef struct kept {
    struct kept *next;
    int fd;
    srv_admission adm;
    size_t unsent;     /* at the last look */
    uint64_t deadline; /* loop time: reset past it */
} kept;

/* A connection accepted by one loop and handed to another, with its
 * admission. */
typedef struct handed {
    struct handed *next;
    int fd;
    srv_admission adm;
    sock_addr addr;
    socklen_t len;
} handed;

struct srv_accept {
    srv_ctx *ctx;
    int fd; /* the listening socket; -1 once closed */
    uv_poll_t poll;
    uv_timer_t retry; /* after running out of descriptors */
    uv_async_t wake;  /* connections handed here, or a unit of
                         sh->connections freed while paused */
    uv_mutex_t lock;  /* the queue and whether it is open */
    handed *head, *tail;
    bool open;             /* handed connections are taken (under lock) */
    bool watching;         /* the poll handle watches fd */
    bool stopped;          /* srv_accept_stop: no more accepting */
    bool closed;           /* srv_accept_close: the handles are closing */
    bool paused;      /* stopped watching at --max-connections (guarded by
                         sh->addrs->lock) */
    srv_admission *adding; /* the admission of the connection libmicrohttpd
                              is being given (srv_accept_take) */
    srv_accept_filter *filter; /* srv_accept_set_filter's; NULL: none */
    struct kept *kept;         /* sockets let go with bytes unsent */
    uv_timer_t keep_tick;      /* looks at them while there are some */
};

static void on_readable(uv_poll_t *p, int status, int events);

static void watch(srv_accept *a, bool on)
{
    if (on == a->watching || a->stopped)
        return;
    a->watching = on;
    if (on)
        uv_poll_start(&a->poll, UV_READABLE, on_readable);
    else
        uv_poll_stop(&a->poll);
}

bool srv_accept_add(srv_ctx *ctx, int fd, srv_admission *adm, const struct sockaddr *sa,
                    socklen_t len)
{
    srv_accept *a = ctx->accept;
    a->adding = adm;
    enum MHD_Result r = MHD_add_connection(ctx->mhd, fd, sa, len); /* closes fd when it refuses */
    a->adding = NULL;
    srv_accept_release(adm); /* nothing when the connection took it */
    return r == MHD_YES;
}

void srv_accept_set_filter(srv_ctx *ctx, srv_accept_filter *filter)
{
    ctx->accept->filter = filter;
}

/* A connection this loop serves: to libmicrohttpd, or through the filter
 * (the TLS front) when there is one. */
static void add_connection(srv_ctx *ctx, int fd, srv_admission *adm, const sock_addr *addr,
                           socklen_t len)
{
    if (ctx->accept->filter)
        ctx->accept->filter(ctx, fd, adm, &addr->sa, len);
    else
        srv_accept_add(ctx, fd, adm, &addr->sa, len);
}

/* The loop a connection accepted by ctx goes to: ctx itself, unless it
 * holds more than one connection above the loop with the fewest. */
static srv_ctx *pick_loop(srv_ctx *ctx)
{
    srv_shared *sh = ctx->sh;
    size_t mine = atomic_load_explicit(&ctx->assigned, memory_order_relaxed);
    srv_ctx *best = ctx;
    size_t fewest = mine;
    for (unsigned i = 0; i < sh->nloops; i++) {
        size_t n = atomic_load_explicit(&sh->loops[i]->assigned, memory_order_relaxed);
        if (n < fewest) {
            fewest = n;
            best = sh->loops[i];
        }
    }
    return mine > fewest + 1 ? best : ctx;
}

/* Hands an admitted connection to loop `to`; false when it takes none (it
 * drains): the caller keeps it. */
static bool hand_over(srv_ctx *to, int fd, const srv_admission *adm, const sock_addr *addr,
                      socklen_t len)
{
    srv_accept *t = to->accept;
    handed *h = malloc(sizeof *h);
    if (!h)
        return false;
    h->next = NULL;
    h->fd = fd;
    h->adm = *adm;
    h->adm.loop = to;
    h->addr = *addr;
    h->len = len;
    uv_mutex_lock(&t->lock);
    bool ok = t->open;
    if (ok) {
        if (t->tail)
            t->tail->next = h;
        else
            t->head = h;
        t->tail = h;
        uv_async_send(&t->wake);
    }
    uv_mutex_unlock(&t->lock);
    if (!ok)
        free(h);
    return ok;
}

/* No unit of sh->connections was left: true when this loop stops
 * accepting until one is freed, false when one was freed meanwhile (then
 * try again). Under the lock of the address table, which a connection
 * that closes takes after giving its unit back: either it sees this loop
 * paused and wakes it, or this sees its unit. */
static bool pause_accepting(srv_accept *a)
{
    srv_shared *sh = a->ctx->sh;
    srv_addrs *t = sh->addrs;
    uv_mutex_lock(&t->lock);
    bool full = !srv_budget_fits(&sh->connections, 1);
    if (full && !a->paused) {
        a->paused = true;
        t->paused++;
    }
    uv_mutex_unlock(&t->lock);
    if (full)
        watch(a, false);
    return full;
}

static void on_retry(uv_timer_t *t)
{
    srv_accept *a = t->data;
    watch(a, true);
}

static void on_readable(uv_poll_t *p, int status, int events)
{
    srv_accept *a = p->data;
    srv_ctx *ctx = a->ctx;
    srv_shared *sh = ctx->sh;
    bool added = false;
    for (int i = 0; i < ACCEPT_BATCH && !a->stopped; i++) {
        if (!srv_budget_reserve(&sh->connections, 1)) {
            if (pause_accepting(a))
                break;
            continue;
        }
        sock_addr addr;
        socklen_t len = sizeof addr;
        int fd = accept4(a->fd, &addr.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            srv_budget_release(&sh->connections, 1);
            if (e == EINTR || e == ECONNABORTED || e == EPROTO)
                continue;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                srv_log(ctx, SRV_LOG_WARN, "cannot accept connections: %s; trying again in %d ms",
                        strerror(e), ACCEPT_RETRY_MS);
                watch(a, false);
                uv_timer_start(&a->retry, on_retry, ACCEPT_RETRY_MS, 0);
            }
            break; /* EAGAIN: nothing more waits */
        }
        srv_admission adm = {addrs_reserve(sh->addrs, &addr.sa, ctx->cfg.max_conn_per_addr), NULL};
        if (!adm.addr) {
            close(fd);
            srv_budget_release(&sh->connections, 1);
            srv_metrics_rejected(ctx, "connections_per_address");
            continue;
        }
        srv_ctx *to = pick_loop(ctx);
        atomic_fetch_add_explicit(&to->assigned, 1, memory_order_relaxed);
        if (to != ctx) {
            if (hand_over(to, fd, &adm, &addr, len))
                continue;
            atomic_fetch_sub_explicit(&to->assigned, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&ctx->assigned, 1, memory_order_relaxed);
        }
        adm.loop = ctx;
        add_connection(ctx, fd, &adm, &addr, len);
        added = true;
    }
    if (added)
        srv_mhd_run(ctx);
}

/* Adds the connections handed to this loop. */
static void take_handed(srv_accept *a)
{
    uv_mutex_lock(&a->lock);
    handed *h = a->head;
    a->head = a->tail = NULL;
    uv_mutex_unlock(&a->lock);
    if (!h)
        return;
    while (h) {
        handed *next = h->next;
        add_connection(a->ctx, h->fd, &h->adm, &h->addr, h->len);
        free(h);
        h = next;
    }
    srv_mhd_run(a->ctx);
}

static void on_wake(uv_async_t *w)
{
    srv_accept *a = w->data;
    take_handed(a);
    srv_addrs *t = a->ctx->sh->addrs;
    uv_mutex_lock(&t->lock);
    bool resume = a->paused;
    if (resume) {
        a->paused = false;
        t->paused--;
    }
    uv_mutex_unlock(&t->lock);
    if (resume)
        watch(a, true);
}

int srv_accept_start(srv_ctx *ctx, int fd)
{
    srv_accept *a = calloc(1, sizeof *a);
    if (!a || uv_mutex_init(&a->lock) != 0) {
        free(a);
        close(fd);
        return SRV_ENOMEM;
    }
    a->ctx = ctx;
    a->fd = fd;
    if (uv_poll_init(ctx->loop, &a->poll, fd) != 0) {
        uv_mutex_destroy(&a->lock);
        free(a);
        close(fd);
        return SRV_EIO;
    }
    uv_timer_init(ctx->loop, &a->retry);
    uv_async_init(ctx->loop, &a->wake, on_wake);
    uv_timer_init(ctx->loop, &a->keep_tick);
    a->poll.data = a->retry.data = a->wake.data = a->keep_tick.data = a;
    a->open = true;
    ctx->accept = a;
    watch(a, true);
    return SRV_OK;
}

void srv_accept_stop(srv_ctx *ctx)
{
    srv_accept *a = ctx->accept;
    if (!a || a->stopped)
        return;
    watch(a, false);
    a->stopped = true;
    uv_timer_stop(&a->retry);
    if (a->fd >= 0) {
        close(a->fd); /* not watched any more */
        a->fd = -1;
    }
    srv_addrs *t = ctx->sh->addrs;
    uv_mutex_lock(&t->lock);
    if (a->paused) {
        a->paused = false;
        t->paused--;
    }
    uv_mutex_unlock(&t->lock);
    /* what was handed here before is served; nothing more is taken */
    uv_mutex_lock(&a->lock);
    a->open = false;
    uv_mutex_unlock(&a->lock);
    take_handed(a);
}

void srv_accept_close(srv_ctx *ctx)
{
    srv_accept *a = ctx->accept;
    if (!a || a->closed)
        return;
    srv_accept_stop(ctx);
    a->closed = true;
    while (a->kept) {
        kept *k = a->kept;
        a->kept = k->next;
        close(k->fd);
        srv_accept_release(&k->adm);
        free(k);
    }
    uv_close((uv_handle_t *)&a->keep_tick, NULL);
    uv_close((uv_handle_t *)&a->poll, NULL);
    uv_close((uv_handle_t *)&a->retry, NULL);
    uv_close((uv_handle_t *)&a->wake, NULL);
}

void srv_accept_free(srv_ctx *ctx)
{
    srv_accept *a = ctx->accept;
    if (!a)
        return;
    ctx->accept = NULL;
    uv_mutex_destroy(&a->lock);
    free(a);
}

/* ---- the admission of a connection ------------------------------------------------ */

bool srv_accept_take(srv_ctx *ctx, srv_admission *out)
{
    srv_accept *a = ctx->accept;
    if (!a || !a->adding || !a->adding->addr) {
        out->addr = NULL;
        out->loop = NULL;
        return false;
    }
    *out = *a->adding;
    a->adding->addr = NULL;
    a->adding->loop = NULL;
    return true;
}

uint64_t srv_accept_linger_ms(const srv_ctx *ctx)
{
    return (uint64_t)(ctx->cfg.conn_timeout_s ? ctx->cfg.conn_timeout_s : KEEP_DEFAULT_S) * 1000;
}

/* Closes the kept sockets whose bytes the kernel has sent, and resets
 * those whose client took nothing for their time (those that took some
 * since the last look get it from now). */
static void on_keep_tick(uv_timer_t *t)
{
    srv_accept *a = t->data;
    uint64_t now = uv_now(a->ctx->loop);
    size_t cut = 0;
    for (kept **p = &a->kept, *k; (k = *p);) {
        size_t n = srv_sock_unsent(k->fd);
        if (n > 1 && n < k->unsent) { /* the client reads */
            k->unsent = n;
            k->deadline = now + srv_accept_linger_ms(a->ctx);
        }
        if (n > 1 && now < k->deadline) {
            p = &k->next;
            continue;
        }
        if (n > 1) { /* a reset: the kernel drops what it holds */
            srv_sock_reset_on_close(k->fd);
            cut++;
        }
        *p = k->next;
        close(k->fd);
        srv_accept_release(&k->adm);
        free(k);
    }
    if (cut)
        srv_log(a->ctx, SRV_LOG_INFO, "%zu connections reset: their client did not read the "
                "end of an answer within %llu ms",
                cut, (unsigned long long)srv_accept_linger_ms(a->ctx));
    if (!a->kept)
        uv_timer_stop(&a->keep_tick);
}

void srv_accept_let_go(srv_ctx *ctx, int fd, srv_admission *adm)
{
    srv_accept *a = ctx->accept;
    if (fd < 0 || srv_sock_unsent(fd) == 0 || !a || a->closed) {
        srv_accept_release(adm);
        return;
    }
    unsigned ms = (unsigned)srv_accept_linger_ms(ctx);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
    kept *k = malloc(sizeof *k);
    int dup_fd = k ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (dup_fd < 0) { /* TCP_USER_TIMEOUT still bounds it */
        free(k);
        srv_accept_release(adm);
        return;
    }
    shutdown(dup_fd, SHUT_WR);
    k->fd = dup_fd;
    k->adm = *adm;
    adm->addr = NULL;
    adm->loop = NULL;
    k->unsent = srv_sock_unsent(dup_fd);
    k->deadline = uv_now(ctx->loop) + ms;
    k->next = a->kept;
    a->kept = k;
    if (!uv_is_active((uv_handle_t *)&a->keep_tick))
        uv_timer_start(&a->keep_tick, on_keep_tick, KEEP_TICK_MS, KEEP_TICK_MS);
}

void srv_accept_release(srv_admission *a)
{
    if (!a->addr)
        return;
    srv_ctx *loop = a->loop;
    srv_shared *sh = loop->sh;
    srv_addrs *t = sh->addrs;
    addr_entry *e = a->addr;
    a->addr = NULL;
    a->loop = NULL;
    atomic_fetch_sub_explicit(&loop->assigned, 1, memory_order_relaxed);
    /* the unit first, then the table's lock (see pause_accepting) */
    srv_budget_release(&sh->connections, 1);
    uv_mutex_lock(&t->lock);
    if (--e->count == 0) {
        addr_entry **p = addr_slot(t, e->family, e->bytes);
        *p = e->next;
        t->count--;
        free(e);
    }
    /* the loops that stopped accepting for want of this unit are woken */
    for (unsigned i = 0; t->paused > 0 && i < sh->nloops; i++) {
        srv_accept *o = sh->loops[i]->accept;
        if (!o || !o->paused)
            continue;
        uv_mutex_lock(&o->lock);
        if (o->open)
            uv_async_send(&o->wake);
        uv_mutex_unlock(&o->lock);
    }
    uv_mutex_unlock(&t->lock);
}
