/*
 * serve.c: the daemon's life cycle: flags, startup, the loops and their
 * threads, signals, graceful shutdown.
 *
 * Startup: parse flags and environment (config.c), size libuv's thread pool
 * (UV_THREADPOOL_SIZE, read by libuv once, before any loop first queues
 * work: the pool is one for the process), raise the open-file limit to its
 * hard maximum (each connection is a descriptor), make what the loops share
 * (srv_shared: the registry, the metrics, the page, the routes, the
 * budgets, the tables), open the listening sockets (server/accept.c: one
 * per loop on the same port), then set up --loops loops (one per core by
 * default), each a libuv loop with its own libmicrohttpd daemon in
 * external-epoll mode (MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
 * MHD_ALLOW_UPGRADE | MHD_USE_TURBO, no internal thread, no listening
 * socket of its own: accept.c gives it its connections) with a raised
 * connection limit, a per-connection timeout for idle or stalled clients
 * and the request-completed notification, attached to the loop (loop.c),
 * and print one line "ikd listening on HOST:PORT" on standard output (with
 * the real port when --listen asked for port 0). The first loop runs on
 * the main thread, every other on a thread of its own ("ikd-loop-N"); the
 * pool's threads are "ikd-pool".
 *
 * SIGHUP with --tls-cert reloads the certificate and key (reload_tls) for
 * every loop (their TLS fronts take the process's one store): the usual
 * meaning of SIGHUP to a TLS server, which certificate renewal tools send.
 * Without TLS there is nothing to reload (ikd has no configuration file: a
 * supervisor restarts it with new flags), and SIGHUP drains, as it always
 * did.
 *
 * Shutdown on SIGTERM, SIGINT, or SIGHUP without TLS (a drain): the first
 * loop handles the signal and forwards it to
 * every loop (a uv_async_t each). Each loop then drains on its own:
 * readiness turns 503, it stops accepting and closes its listening socket,
 * WebSocket streams are closed with 1001 (srv_ws_shutdown), and the last
 * answer on each connection carries "Connection: close" (requests
 * pipelined behind it are answered first, server/http_mhd.c), so that
 * keep-alive clients send nothing more on their connections. The loop
 * keeps serving what was accepted and stops once no request is active,
 * its pool work is done, no WebSocket connection is left, and either no
 * connection is open or DRAIN_QUIET_MS passed without a new request (a
 * request a keep-alive client wrote just before its answer said close is
 * read and answered in that time). Once every loop has stopped, the
 * process exits 0, once. --drain-timeout is a hard deadline for each
 * loop: past it, the loop stops even with requests active (dropping
 * them), and when its pool work is still running (which cannot be
 * interrupted, and whose suspended connection MHD_stop_daemon would abort
 * on) the process exits at once with status 1. A second signal is logged
 * and otherwise ignored (the first loop keeps its signal handles until
 * every loop has stopped).
 */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proto/proto.h"
#include "server/accept.h"
#include "server/config.h"
#include "server/guard.h"
#include "server/http.h"
#include "server/http_headers.h"
#include "server/http_route.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/srv.h"
#include "server/srv_main.h"
#include "server/stream_chains.h"
#include "server/tls.h"
#include "server/tls_front.h"
#include "server/trim.h"
#include "server/web.h"
#include "server/ws.h"

#define DRAIN_QUIET_MS 200
#define DRAIN_TICK_MS  10

typedef struct daemon_state daemon_state;

/* One loop: its context, its libuv loop, its drain. */
typedef struct loop_state {
    srv_ctx ctx;
    daemon_state *d;
    uv_loop_t loop;
    bool loop_ok;         /* uv_loop_init succeeded */
    bool started;         /* its services were set up */
    uv_async_t drain_now; /* the signal, forwarded by the first loop */
    bool drain_open;
    uv_timer_t drain;
    uint64_t drain_deadline;
    uint64_t quiet_since; /* loop time of the last sign of a request */
    uint64_t begun_seen;  /* ctx.requests_begun at that time */
    bool draining, stopped;
    uv_thread_t thread;
    bool threaded;
} loop_state;

struct daemon_state {
    srv_shared sh;
    loop_state *loops;
    unsigned n;
    /* on the first loop: */
    uv_signal_t sigterm, sigint, sighup;
    uv_async_t finished; /* another loop's thread ended its loop (unreferenced:
                            the signal handles keep the first loop running;
                            closed after every thread was joined, as a thread
                            sends to it after its loop ended) */
    bool finished_open;
    uv_work_t pool_start; /* starts libuv's pool (see start_pool) */
    atomic_uint running; /* loops other than the first still running */
    bool signalled;
    bool closed; /* the first loop's last handles are closed */
};

static void close_cb_noop(uv_handle_t *h)
{
    (void)h;
}

/* Stops the services startup started, in this order (each does nothing
 * when its part never started): solves waiting for a turn are cancelled,
 * requests waiting for Redis answered (503), accepting ends, WebSocket
 * connections ended, the timers closed, TLS connections closed,
 * libmicrohttpd stopped. */
static void stop_services(srv_ctx *ctx)
{
    srv_solve_stop(ctx);
    srv_registry_redis_stop(ctx);
    srv_accept_close(ctx);
    srv_ws_abort(ctx);
    srv_guard_stop(ctx);
    srv_tls_front_stop(ctx);
    srv_loop_detach(ctx);
    if (ctx->mhd)
        MHD_stop_daemon(ctx->mhd);
    ctx->mhd = NULL;
    srv_http_stop(ctx);
}

/* The first loop closes its last handles once every loop has stopped:
 * then its uv_run returns. */
static void maybe_finish(daemon_state *d)
{
    if (d->closed || !d->loops[0].stopped || atomic_load(&d->running) > 0)
        return;
    d->closed = true;
    uv_close((uv_handle_t *)&d->sigterm, close_cb_noop);
    uv_close((uv_handle_t *)&d->sigint, close_cb_noop);
    uv_close((uv_handle_t *)&d->sighup, close_cb_noop);
    srv_trim_stop(&d->loops[0].ctx);
}

static void stop_loop(loop_state *l)
{
    srv_ctx *ctx = &l->ctx;
    if (l->stopped)
        return;
    l->stopped = true;
    srv_log(ctx, SRV_LOG_DEBUG, "loop %u stopping (%zu requests still active)", ctx->index,
            srv_gauge_get(&ctx->active_requests));
    uv_timer_stop(&l->drain);
    uv_close((uv_handle_t *)&l->drain, close_cb_noop);
    stop_services(ctx);
    if (ctx->index == 0)
        maybe_finish(l->d);
}

static unsigned open_connections(srv_ctx *ctx)
{
    const union MHD_DaemonInfo *i =
        MHD_get_daemon_info(ctx->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return i ? i->num_connections : 0;
}

static void on_drain_tick(uv_timer_t *t)
{
    loop_state *l = t->data;
    srv_ctx *ctx = &l->ctx;
    uint64_t now = uv_now(ctx->loop);
    size_t active = srv_gauge_get(&ctx->active_requests);
    size_t depth = srv_gauge_get(&ctx->pool_depth);
    if (now >= l->drain_deadline) {
        if (depth > 0) {
            srv_log(ctx, SRV_LOG_WARN,
                    "drain deadline passed with %zu pool items and %zu requests active on loop "
                    "%u: exiting",
                    depth, active, ctx->index);
            _exit(1);
        }
        srv_log(ctx, SRV_LOG_WARN, "drain deadline passed with %zu requests active on loop %u",
                active, ctx->index);
        stop_loop(l);
        return;
    }
    if (active > 0 || depth > 0 || ctx->requests_begun != l->begun_seen) {
        l->quiet_since = now;
        l->begun_seen = ctx->requests_begun;
        return;
    }
    if (srv_ws_open_connections(ctx) > 0)
        return;
    if (open_connections(ctx) == 0 || now - l->quiet_since >= DRAIN_QUIET_MS)
        stop_loop(l);
}

/* The loop drains (the signal reached it). */
static void begin_drain(loop_state *l)
{
    srv_ctx *ctx = &l->ctx;
    if (l->draining || l->stopped)
        return;
    l->draining = true;
    ctx->shutting_down = true;
    srv_accept_stop(ctx);
    srv_ws_shutdown(ctx);
    srv_mhd_run(ctx);
    l->drain_deadline = uv_now(ctx->loop) + (uint64_t)ctx->cfg.drain_timeout_s * 1000;
    l->quiet_since = uv_now(ctx->loop);
    l->begun_seen = ctx->requests_begun;
    uv_timer_start(&l->drain, on_drain_tick, 0, DRAIN_TICK_MS);
}

static void on_drain_now(uv_async_t *a)
{
    begin_drain(a->data);
}

/* SIGHUP with TLS: the certificate and key are read again (server/tls.h)
 * and every handshake from now on takes them; nothing is dropped. A pair
 * that fails its checks is logged and the old one kept. */
static void reload_tls(srv_ctx *ctx)
{
    char err[512], about[256];
    if (srv_tls_reload(ctx->tls, err, sizeof err) != SRV_OK) {
        srv_log(ctx, SRV_LOG_ERROR, "SIGHUP: the TLS certificate was not reloaded, the one in "
                                    "use stays: %s", err);
        srv_metrics_rejected(ctx, "tls_reload_failed");
        return;
    }
    srv_tls_describe(ctx->tls, about, sizeof about);
    srv_log(ctx, SRV_LOG_INFO, "SIGHUP: TLS certificate reloaded: %s", about);
}

static void on_signal(uv_signal_t *s, int signum)
{
    daemon_state *d = s->data;
    srv_ctx *ctx = &d->loops[0].ctx;
    if (signum == SIGHUP && d->sh.tls) {
        reload_tls(ctx);
        return;
    }
    if (d->signalled) {
        srv_log(ctx, SRV_LOG_WARN, "signal %d again: still draining", signum);
        return;
    }
    d->signalled = true;
    srv_log(ctx, SRV_LOG_INFO,
            "signal %d: draining %zu requests, %zu pool items, %zu streams on %u loops", signum,
            srv_http_active_all(&d->sh), srv_pool_depth_all(&d->sh), srv_ws_open_streams(ctx),
            d->n);
    for (unsigned i = 1; i < d->n; i++)
        uv_async_send(&d->loops[i].drain_now);
    begin_drain(&d->loops[0]);
}

static void on_finished(uv_async_t *a)
{
    maybe_finish(a->data);
}

static void pool_noop(uv_work_t *w)
{
    (void)w;
}

static void pool_noop_done(uv_work_t *w, int status)
{
    (void)w;
    (void)status;
}

/* libuv starts its pool's threads when the first work is queued, and a
 * thread takes the name of the one that creates it: they are started here,
 * from the main thread named "ikd-pool" for the moment, so that they are
 * told from the loops' threads by name. */
static void start_pool(daemon_state *d)
{
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    pthread_setname_np(pthread_self(), "ikd-pool");
    uv_queue_work(&d->loops[0].loop, &d->pool_start, pool_noop, pool_noop_done);
    pthread_setname_np(pthread_self(), name);
}

static void raise_fd_limit(srv_ctx *ctx)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            srv_log(ctx, SRV_LOG_WARN, "cannot raise the open-file limit: %s", strerror(errno));
    }
}

/* Starts the loop's libmicrohttpd daemon: every option the daemon is
 * started with is here. It has no listening socket (accept.c hands it its
 * connections); the connection limit is the whole --max-connections
 * (accept.c holds it for all loops together, and the per-address one).
 * With --tls-cert the loop's TLS front takes each connection first
 * (start_front) and gives the daemon one end of a socketpair.
 * Returns 0, or SRV_EIO (logged). */
static int start_mhd(srv_ctx *ctx)
{
    const srv_config *cfg = &ctx->cfg;
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_TURBO |
                     MHD_USE_NO_LISTEN_SOCKET;
    ctx->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, srv_http_access, ctx, MHD_OPTION_NOTIFY_COMPLETED, srv_http_completed,
        ctx, MHD_OPTION_NOTIFY_CONNECTION, srv_guard_notify, ctx, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)cfg->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)cfg->max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        cfg->connection_memory_bytes, MHD_OPTION_URI_LOG_CALLBACK, srv_http_uri_seen, ctx,
        MHD_OPTION_END);
    if (!ctx->mhd) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot start libmicrohttpd");
        return SRV_EIO;
    }
    return SRV_OK;
}

/* With --tls-cert: the loop's TLS front, made accept.c's filter of the
 * loop (server/tls_front.h). Returns 0 or SRV_ENOMEM (logged). */
static int start_front(srv_ctx *ctx)
{
    char err[256];
    if (!ctx->tls)
        return SRV_OK;
    if (srv_tls_front_start(ctx, err, sizeof err) != SRV_OK) {
        srv_log(ctx, SRV_LOG_ERROR, "%s", err);
        return SRV_ENOMEM;
    }
    srv_accept_set_filter(ctx, srv_tls_front_add);
    return SRV_OK;
}

/* The loop's context: the shared group's views (srv.h). */
static void ctx_init(daemon_state *d, unsigned i)
{
    loop_state *l = &d->loops[i];
    srv_ctx *ctx = &l->ctx;
    ctx->sh = &d->sh;
    ctx->index = i;
    ctx->cfg = d->sh.cfg;
    ctx->registry = d->sh.registry;
    ctx->metrics = d->sh.metrics;
    ctx->web = d->sh.web;
    ctx->tls = d->sh.tls;
    ctx->routes = d->sh.routes;
    ctx->loop = &l->loop;
    atomic_init(&ctx->batch_waiting, false);
    atomic_init(&ctx->assigned, 0);
    l->d = d;
    d->sh.loops[i] = ctx;
}

/* Sets up loop i on its listening socket fd (taken). 0, or an error
 * (logged). */
static int start_loop(daemon_state *d, unsigned i, int fd)
{
    loop_state *l = &d->loops[i];
    srv_ctx *ctx = &l->ctx;
    l->started = true;
    /* each module's state (the WebSocket side joined to its streams'
     * hooks), then libmicrohttpd on the loop, then accepting */
    if (srv_http_start(ctx) != SRV_OK || srv_ws_start(ctx, &srv_ws_stream_hooks) != SRV_OK ||
        srv_guard_start(ctx) != SRV_OK || srv_http_batch_start(ctx) != SRV_OK) {
        close(fd);
        srv_log(ctx, SRV_LOG_ERROR, "cannot start: out of memory");
        return SRV_ENOMEM;
    }
    srv_solve_start(ctx); /* without it no solve waits for a later turn */
    /* the loop's connections to the shared registry, driven by the loop
     * once it runs */
    if (srv_registry_redis_start(ctx) != SRV_OK) {
        close(fd);
        srv_log(ctx, SRV_LOG_ERROR, "cannot start the shared registry (--redis)");
        return SRV_ENOMEM;
    }
    if (start_mhd(ctx) != SRV_OK) {
        close(fd);
        return SRV_EIO;
    }
    if (srv_loop_attach(ctx) != SRV_OK) {
        close(fd);
        srv_log(ctx, SRV_LOG_ERROR, "cannot watch libmicrohttpd's epoll descriptor");
        return SRV_EIO;
    }
    if (srv_accept_start(ctx, fd) != SRV_OK) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot watch the listening socket");
        return SRV_EIO;
    }
    if (start_front(ctx) != SRV_OK)
        return SRV_ENOMEM;
    uv_timer_init(&l->loop, &l->drain);
    l->drain.data = l;
    /* unreferenced: it never keeps the loop running; closed by the main
     * thread after every loop ended (other loops may send to it until
     * then) */
    uv_async_init(&l->loop, &l->drain_now, on_drain_now);
    l->drain_now.data = l;
    uv_unref((uv_handle_t *)&l->drain_now);
    l->drain_open = true;
    return SRV_OK;
}

static void loop_thread(void *arg)
{
    loop_state *l = arg;
    char name[16];
    snprintf(name, sizeof name, "ikd-loop-%u", l->ctx.index);
    pthread_setname_np(pthread_self(), name);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    proto_thread_release(); /* what proto kept for this thread's decodes */
    atomic_fetch_sub(&l->d->running, 1);
    uv_async_send(&l->d->finished);
}

/* After every loop ended (or startup failed): closes what is left on each
 * loop and the loop itself. */
static void close_loops(daemon_state *d)
{
    for (unsigned i = 0; i < d->n; i++) {
        loop_state *l = &d->loops[i];
        if (!l->loop_ok)
            continue;
        srv_ctx *ctx = &l->ctx;
        if (l->started && !l->stopped) { /* startup failed */
            l->stopped = true;
            if (l->drain.data) /* initialized */
                uv_close((uv_handle_t *)&l->drain, close_cb_noop);
            stop_services(ctx);
        }
        srv_solve_stop(ctx);
        if (l->drain_open)
            uv_close((uv_handle_t *)&l->drain_now, close_cb_noop);
        if (i == 0 && d->finished_open)
            uv_close((uv_handle_t *)&d->finished, close_cb_noop);
        srv_http_batch_close(ctx);
        if (i == 0 && ctx->sh->trim)
            srv_trim_stop(ctx);
        uv_run(&l->loop, UV_RUN_NOWAIT); /* let closed handles finish */
        if (uv_loop_close(&l->loop) != 0)
            srv_log(ctx, SRV_LOG_WARN, "event loop %u closed with handles still open", i);
        srv_accept_free(ctx);
    }
}

static void shared_free(daemon_state *d)
{
    srv_shared *sh = &d->sh;
    if (d->n > 0 && sh->routes) {
        d->loops[0].ctx.routes = sh->routes;
        srv_http_routes_free(&d->loops[0].ctx);
    }
    srv_registry_free(sh->registry);
    srv_metrics_free(sh->metrics);
    srv_web_free(sh->web);
    srv_tls_free(sh->tls);
    srv_stream_chains_free(sh->stream_chains);
    srv_addrs_free(sh->addrs);
    free(sh->loops);
    free(d->loops);
    srv_config_free(&sh->cfg);
}

int srv_serve(int argc, char **argv)
{
    static daemon_state d; /* callbacks reach it through handle data */
    srv_shared *sh = &d.sh;
    memset(&d, 0, sizeof d);
    srv_config_default(&sh->cfg);
    char err[512] = "";
    int rc = srv_config_parse(&sh->cfg, argc, argv, stdout, err, sizeof err);
    if (rc != SRV_OK) {
        if (rc < 0)
            fprintf(stderr, "ikd: %s\n", err);
        srv_config_free(&sh->cfg);
        return rc == 1 ? 0 : 2;
    }
    const srv_config *cfg = &sh->cfg;
    srv_ctx logger = {0}; /* for the log lines before the loops exist */
    logger.cfg = *cfg;

    char nthreads[16];
    snprintf(nthreads, sizeof nthreads, "%u", cfg->threads);
    setenv("UV_THREADPOOL_SIZE", nthreads, 1);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(&logger);

    int exit_code = 1;
    srv_budget_init(&sh->body_bytes, cfg->body_budget_bytes);
    srv_budget_init(&sh->answer_bytes, cfg->answer_budget_bytes);
    srv_budget_init(&sh->admitted, cfg->pool_queue_max);
    srv_budget_init(&sh->stream_chain_bytes, cfg->stream_chain_bytes);
    srv_budget_init(&sh->stream_bytes, cfg->stream_bytes);
    srv_budget_init(&sh->connections, cfg->max_connections);
    srv_budget_init(&sh->batch_chunks, cfg->threads);
    sh->registry = srv_registry_new(cfg->registry_bytes);
    sh->metrics = srv_metrics_new();
    sh->stream_chains = srv_stream_chains_new();
    sh->addrs = srv_addrs_new();
    d.n = cfg->loops;
    d.loops = calloc(d.n, sizeof *d.loops);
    sh->loops = calloc(d.n, sizeof *sh->loops);
    sh->nloops = d.n;
    int *fds = calloc(d.n, sizeof *fds);
    for (unsigned i = 0; fds && i < d.n; i++)
        fds[i] = -1;
    if (!sh->registry || !sh->metrics || !sh->stream_chains || !sh->addrs || !d.loops ||
        !sh->loops || !fds) {
        srv_log(&logger, SRV_LOG_ERROR, "cannot start: out of memory");
        d.n = d.loops ? d.n : 0;
        goto out;
    }
    if (cfg->tls_cert_file || cfg->tls_key_file) {
        if (srv_tls_open(cfg->tls_cert_file, cfg->tls_key_file, &sh->tls, err, sizeof err) !=
            SRV_OK) {
            srv_log(&logger, SRV_LOG_ERROR, "%s", err);
            goto out;
        }
        char about[256];
        srv_tls_describe(sh->tls, about, sizeof about);
        srv_log(&logger, SRV_LOG_INFO, "serving HTTPS and WSS only, with %s", about);
    }
    if (cfg->web_dir) {
        if (srv_web_load(cfg->web_dir, &sh->web, err, sizeof err) != 0) {
            srv_log(&logger, SRV_LOG_ERROR, "%s", err);
            goto out;
        }
        srv_log(&logger, SRV_LOG_INFO, "serving the page from %s (%zu files, %zu bytes)",
                cfg->web_dir, srv_web_count(sh->web), srv_web_bytes(sh->web));
    }
    /* the routes, registered once through the first loop's context */
    ctx_init(&d, 0);
    if (srv_http_handlers_register(&d.loops[0].ctx) != SRV_OK) {
        sh->routes = d.loops[0].ctx.routes;
        srv_log(&logger, SRV_LOG_ERROR, "cannot start: out of memory");
        goto out;
    }
    sh->routes = d.loops[0].ctx.routes;
    for (unsigned i = 0; i < d.n; i++) {
        ctx_init(&d, i);
        if (uv_loop_init(&d.loops[i].loop) != 0) {
            srv_log(&logger, SRV_LOG_ERROR, "cannot create the event loops");
            goto out;
        }
        d.loops[i].loop_ok = true;
    }
    uint16_t port = 0;
    if (srv_accept_listen(&d.loops[0].ctx, fds, d.n, &port) != SRV_OK)
        goto out;
    for (unsigned i = 0; i < d.n; i++)
        d.loops[i].ctx.port = port;
    if (srv_trim_start(&d.loops[0].ctx) != SRV_OK) /* without it nothing is trimmed: only memory */
        srv_log(&logger, SRV_LOG_WARN, "memory is not trimmed: out of memory");
    start_pool(&d); /* before a loop's startup queues work (--redis resolves its host) */
    for (unsigned i = 0; i < d.n; i++) {
        int fd = fds[i];
        fds[i] = -1;
        if (start_loop(&d, i, fd) != SRV_OK)
            goto out; /* the sockets not taken are closed there */
    }
    if (cfg->redis_url) {
        srv_redis_url u;
        srv_config_parse_redis(cfg->redis_url, &u);
        srv_log(&logger, SRV_LOG_INFO,
                "sharing the chain registry through Redis at %s:%u, database %u%s", u.host,
                (unsigned)u.port, u.db, u.password[0] ? ", with a password" : "");
        memset(&u, 0, sizeof u);
    }
    uv_loop_t *first = &d.loops[0].loop;
    uv_signal_init(first, &d.sigterm);
    uv_signal_init(first, &d.sigint);
    uv_signal_init(first, &d.sighup);
    uv_async_init(first, &d.finished, on_finished);
    uv_unref((uv_handle_t *)&d.finished);
    d.finished_open = true;
    d.sigterm.data = d.sigint.data = d.sighup.data = d.finished.data = &d;
    uv_signal_start(&d.sigterm, on_signal, SIGTERM);
    uv_signal_start(&d.sigint, on_signal, SIGINT);
    uv_signal_start(&d.sighup, on_signal, SIGHUP);

    /* the other loops' threads; without one, startup fails: the loops that
     * run drain at once */
    atomic_init(&d.running, d.n - 1);
    bool all = true;
    for (unsigned i = 1; i < d.n; i++) {
        loop_state *l = &d.loops[i];
        if (all && uv_thread_create(&l->thread, loop_thread, l) == 0) {
            l->threaded = true;
            continue;
        }
        if (all)
            srv_log(&logger, SRV_LOG_ERROR, "cannot start the thread of loop %u", i);
        all = false;
        atomic_fetch_sub(&d.running, 1); /* it never runs */
    }
    if (all) {
        bool v6 = strchr(cfg->listen_host, ':') != NULL;
        printf("ikd listening on %s%s%s:%u\n", v6 ? "[" : "", cfg->listen_host, v6 ? "]" : "",
               (unsigned)port);
        fflush(stdout);
        srv_log(&logger, SRV_LOG_INFO,
                "serving with %u loops and %u pool threads, up to %u connections", d.n,
                cfg->threads, cfg->max_connections);
    } else {
        d.signalled = true;
        for (unsigned i = 1; i < d.n; i++)
            if (d.loops[i].threaded)
                uv_async_send(&d.loops[i].drain_now);
        begin_drain(&d.loops[0]);
    }
    uv_run(first, UV_RUN_DEFAULT);
    for (unsigned i = 1; i < d.n; i++)
        if (d.loops[i].threaded)
            uv_thread_join(&d.loops[i].thread);
    exit_code = all ? 0 : 1;
    srv_log(&logger, SRV_LOG_INFO, "stopped");
out:
    if (fds)
        for (unsigned i = 0; i < d.n; i++)
            if (fds[i] >= 0)
                close(fds[i]);
    free(fds);
    close_loops(&d);
    shared_free(&d);
    return exit_code;
}
