/*
 * serve.c: the daemon's life cycle: flags, startup, signals, graceful
 * shutdown.
 *
 * Startup: parse flags and environment (config.c), size libuv's thread pool
 * (UV_THREADPOOL_SIZE, set before the loop first queues work), raise the
 * open-file limit to its hard maximum (each connection is a descriptor),
 * start libmicrohttpd in external-epoll mode (MHD_USE_EPOLL |
 * MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_TURBO, no internal
 * thread) with a raised connection limit, a per-connection timeout for idle
 * or stalled clients and the request-completed notification, attach it to
 * the loop (loop.c), and print one line "ikd listening on HOST:PORT" on
 * standard output (with the real port when --listen asked for port 0).
 *
 * Shutdown on SIGTERM, SIGINT or SIGHUP (a drain; ikd has no configuration
 * file to reload, so SIGHUP is not a reload: a supervisor restarts ikd with
 * its new flags): readiness turns 503, the listening socket is closed
 * (MHD_quiesce_daemon), WebSocket streams are closed with 1001
 * (srv_ws_shutdown), and the last answer on each connection carries
 * "Connection: close" (requests pipelined behind it are answered first,
 * server/http_mhd.c), so that keep-alive clients send nothing more on
 * their connections. The loop keeps serving what was accepted and stops
 * once no request is active, the pool is idle, no WebSocket connection is
 * left, and either no connection is open or DRAIN_QUIET_MS passed without a
 * new request (a request a keep-alive client wrote just before its answer
 * said close is read and answered in that time). Then the daemon stops and
 * the process exits 0. --drain-timeout is a hard deadline:
 * past it, ikd stops even with requests active (dropping them), and when
 * pool work is still running (which cannot be interrupted, and whose
 * suspended connection MHD_stop_daemon would abort on) it exits at once
 * with status 1. A second signal is logged and otherwise ignored.
 */
#include <errno.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/config.h"
#include "server/guard.h"
#include "server/http.h"
#include "server/http_route.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/srv.h"
#include "server/srv_main.h"
#include "server/trim.h"
#include "server/web.h"
#include "server/ws.h"

#define DRAIN_QUIET_MS 200
#define DRAIN_TICK_MS 10

typedef struct daemon_state {
    srv_ctx ctx; /* first: callbacks get back here from the ctx pointer */
    uv_signal_t sigterm, sigint, sighup;
    uv_timer_t drain;
    uint64_t drain_deadline;
    uint64_t quiet_since;   /* loop time of the last sign of a request */
    uint64_t begun_seen;    /* ctx->requests_begun at that time */
    bool stopped;
} daemon_state;

static void close_cb_noop(uv_handle_t *h)
{
    (void)h;
}

/* Stops the services startup started, in this order (each does nothing
 * when its part never started): solves waiting for a turn are cancelled,
 * WebSocket connections ended, the timers closed, libmicrohttpd stopped. */
static void stop_services(srv_ctx *ctx)
{
    srv_solve_stop(ctx);
    srv_ws_abort(ctx);
    srv_guard_stop(ctx);
    srv_trim_stop(ctx);
    srv_loop_detach(ctx);
    if (ctx->mhd)
        MHD_stop_daemon(ctx->mhd);
    ctx->mhd = NULL;
    srv_http_stop(ctx);
}

static void stop_daemon(daemon_state *d)
{
    srv_ctx *ctx = &d->ctx;
    if (d->stopped)
        return;
    d->stopped = true;
    srv_log(ctx, SRV_LOG_INFO, "stopping (%zu requests still active)", ctx->active_requests);
    uv_timer_stop(&d->drain);
    uv_close((uv_handle_t *)&d->drain, close_cb_noop);
    uv_close((uv_handle_t *)&d->sigterm, close_cb_noop);
    uv_close((uv_handle_t *)&d->sigint, close_cb_noop);
    uv_close((uv_handle_t *)&d->sighup, close_cb_noop);
    stop_services(ctx);
}

static unsigned open_connections(srv_ctx *ctx)
{
    const union MHD_DaemonInfo *i =
        MHD_get_daemon_info(ctx->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return i ? i->num_connections : 0;
}

static void on_drain_tick(uv_timer_t *t)
{
    daemon_state *d = t->data;
    srv_ctx *ctx = &d->ctx;
    uint64_t now = uv_now(ctx->loop);
    if (now >= d->drain_deadline) {
        if (ctx->pool_depth > 0) {
            srv_log(ctx, SRV_LOG_WARN,
                    "drain deadline passed with %zu pool items and %zu requests active: exiting",
                    ctx->pool_depth, ctx->active_requests);
            _exit(1);
        }
        srv_log(ctx, SRV_LOG_WARN, "drain deadline passed with %zu requests active",
                ctx->active_requests);
        stop_daemon(d);
        return;
    }
    if (ctx->active_requests > 0 || ctx->pool_depth > 0 || ctx->requests_begun != d->begun_seen) {
        d->quiet_since = now;
        d->begun_seen = ctx->requests_begun;
        return;
    }
    if (srv_ws_open_connections(ctx) > 0)
        return;
    if (open_connections(ctx) == 0 || now - d->quiet_since >= DRAIN_QUIET_MS)
        stop_daemon(d);
}

static void on_signal(uv_signal_t *s, int signum)
{
    daemon_state *d = s->data;
    srv_ctx *ctx = &d->ctx;
    if (ctx->shutting_down) {
        srv_log(ctx, SRV_LOG_WARN, "signal %d again: still draining", signum);
        return;
    }
    ctx->shutting_down = true;
    srv_log(ctx, SRV_LOG_INFO, "signal %d: draining %zu requests, %zu pool items, %zu streams",
            signum, ctx->active_requests, ctx->pool_depth, srv_ws_open_streams(ctx));
    MHD_socket fd = MHD_quiesce_daemon(ctx->mhd);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    srv_ws_shutdown(ctx);
    srv_mhd_run(ctx);
    d->drain_deadline = uv_now(ctx->loop) + (uint64_t)ctx->cfg.drain_timeout_s * 1000;
    d->quiet_since = uv_now(ctx->loop);
    d->begun_seen = ctx->requests_begun;
    uv_timer_start(&d->drain, on_drain_tick, 0, DRAIN_TICK_MS);
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

/* Starts libmicrohttpd on the configured address. Returns 0, SRV_EINVAL
 * (the host is not an IP address) or SRV_EIO (it cannot listen there); both
 * are logged. */
static int start_mhd(srv_ctx *ctx)
{
    const srv_config *cfg = &ctx->cfg;
    bool v6 = strchr(cfg->listen_host, ':') != NULL;
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
    } addr;
    memset(&addr, 0, sizeof addr);
    int rc = v6 ? uv_ip6_addr(cfg->listen_host, cfg->listen_port, &addr.in6)
                : uv_ip4_addr(cfg->listen_host, cfg->listen_port, &addr.in4);
    if (rc != 0) {
        srv_log(ctx, SRV_LOG_ERROR, "invalid listen address \"%s\" (use an IP address)",
                cfg->listen_host);
        return SRV_EINVAL;
    }
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
                     MHD_USE_TURBO | (v6 ? MHD_USE_IPv6 : 0);
    ctx->mhd = MHD_start_daemon(
        flags, cfg->listen_port, NULL, NULL, srv_http_access, ctx, MHD_OPTION_SOCK_ADDR, &addr.sa,
        MHD_OPTION_NOTIFY_COMPLETED, srv_http_completed, ctx, MHD_OPTION_NOTIFY_CONNECTION,
        srv_guard_notify, ctx, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)cfg->max_conn_per_addr,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->connection_memory_bytes,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024, MHD_OPTION_END);
    if (!ctx->mhd) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot listen on %s port %u", cfg->listen_host,
                (unsigned)cfg->listen_port);
        return SRV_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(ctx->mhd, MHD_DAEMON_INFO_BIND_PORT);
    ctx->port = info && info->port ? info->port : cfg->listen_port;
    return SRV_OK;
}

int srv_serve(int argc, char **argv)
{
    static daemon_state d; /* callbacks reach it through handle data */
    srv_ctx *ctx = &d.ctx;
    memset(&d, 0, sizeof d);
    srv_config_default(&ctx->cfg);
    char err[512] = "";
    int rc = srv_config_parse(&ctx->cfg, argc, argv, stdout, err, sizeof err);
    if (rc != SRV_OK) {
        if (rc < 0)
            fprintf(stderr, "ikd: %s\n", err);
        srv_config_free(&ctx->cfg);
        return rc == 1 ? 0 : 2;
    }

    char nthreads[16];
    snprintf(nthreads, sizeof nthreads, "%u", ctx->cfg.threads);
    setenv("UV_THREADPOOL_SIZE", nthreads, 1);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(ctx);

    int exit_code = 1;
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot create the event loop");
        srv_config_free(&ctx->cfg);
        return 1;
    }
    ctx->loop = &loop;
    srv_budget_init(&ctx->body_bytes, ctx->cfg.body_budget_bytes);
    srv_budget_init(&ctx->answer_bytes, ctx->cfg.answer_budget_bytes);
    srv_budget_init(&ctx->admitted, ctx->cfg.pool_queue_max);
    srv_budget_init(&ctx->stream_chain_bytes, ctx->cfg.stream_chain_bytes);
    srv_budget_init(&ctx->connections, ctx->cfg.max_connections);
    srv_budget_init(&ctx->batch_chunks, ctx->cfg.threads);
    ctx->registry = srv_registry_new(ctx->cfg.registry_bytes);
    ctx->metrics = srv_metrics_new();
    if (!ctx->registry || !ctx->metrics)
        goto out;
    if (ctx->cfg.web_dir) {
        if (srv_web_load(ctx->cfg.web_dir, &ctx->web, err, sizeof err) != 0) {
            srv_log(ctx, SRV_LOG_ERROR, "%s", err);
            goto out;
        }
        srv_log(ctx, SRV_LOG_INFO, "serving the page from %s (%zu files, %zu bytes)",
                ctx->cfg.web_dir, srv_web_count(ctx->web), srv_web_bytes(ctx->web));
    }
    /* the routes, then each module's state (the WebSocket side joined to
     * its streams' hooks), then libmicrohttpd on the loop */
    if (srv_http_handlers_register(ctx) != SRV_OK || srv_http_start(ctx) != SRV_OK ||
        srv_ws_start(ctx, &srv_ws_stream_hooks) != SRV_OK || srv_guard_start(ctx) != SRV_OK) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot start: out of memory");
        goto fail;
    }
    srv_solve_start(ctx); /* without it no solve waits for a later turn */
    srv_trim_start(ctx); /* without it nothing is trimmed: only memory */
    if (start_mhd(ctx) != SRV_OK)
        goto fail;
    if (srv_loop_attach(ctx) != SRV_OK) {
        srv_log(ctx, SRV_LOG_ERROR, "cannot watch libmicrohttpd's epoll descriptor");
        goto fail;
    }
    uv_timer_init(&loop, &d.drain);
    d.drain.data = &d;
    uv_signal_init(&loop, &d.sigterm);
    uv_signal_init(&loop, &d.sigint);
    uv_signal_init(&loop, &d.sighup);
    d.sigterm.data = d.sigint.data = d.sighup.data = &d;
    uv_signal_start(&d.sigterm, on_signal, SIGTERM);
    uv_signal_start(&d.sigint, on_signal, SIGINT);
    uv_signal_start(&d.sighup, on_signal, SIGHUP);

    bool v6 = strchr(ctx->cfg.listen_host, ':') != NULL;
    printf("ikd listening on %s%s%s:%u\n", v6 ? "[" : "", ctx->cfg.listen_host, v6 ? "]" : "",
           (unsigned)ctx->port);
    fflush(stdout);
    srv_log(ctx, SRV_LOG_INFO, "serving with %u pool threads, up to %u connections",
            ctx->cfg.threads, ctx->cfg.max_connections);

    uv_run(&loop, UV_RUN_DEFAULT);
    exit_code = 0;
    srv_log(ctx, SRV_LOG_INFO, "stopped");
    goto out;
fail:
    stop_services(ctx);
out:
    srv_solve_stop(ctx);
    uv_run(&loop, UV_RUN_NOWAIT); /* let closed handles finish */
    if (uv_loop_close(&loop) != 0)
        srv_log(ctx, SRV_LOG_WARN, "event loop closed with handles still open");
    srv_http_routes_free(ctx);
    srv_registry_free(ctx->registry);
    srv_metrics_free(ctx->metrics);
    srv_web_free(ctx->web);
    srv_config_free(&ctx->cfg);
    return exit_code;
}
