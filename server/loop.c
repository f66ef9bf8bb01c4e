/*
 * loop.c: libmicrohttpd driven by the libuv loop (contract in loop.h).
 *
 * libmicrohttpd runs with MHD_USE_EPOLL and no internal thread: its epoll fd
 * (MHD_DAEMON_INFO_EPOLL_FD) is watched by one uv_poll_t, and after every
 * MHD_run the uv_timer_t is re-armed from MHD_get_timeout (0 = run again on
 * the next loop iteration; "no timeout" stops the timer). libmicrohttpd
 * 0.9.75 does not wake this loop on MHD_resume_connection or
 * MHD_upgrade_action(CLOSE), so those callers run srv_mhd_run themselves.
 *
 * The handles and flags live in a struct of this file's own (srv_mhd_glue),
 * allocated by srv_loop_attach and freed once both handles have closed.
 *
 * Not here: the thread pool (pool.c).
 */
#include "server/loop.h"

#include <microhttpd.h>
#include <stdlib.h>

struct srv_mhd_glue {
    srv_ctx *ctx;
    uv_poll_t poll;
    uv_timer_t timer;
    bool running;  /* re-entrancy guard for srv_mhd_run */
    bool rerun;    /* a nested srv_mhd_run asked for one more pass */
    bool detached; /* srv_loop_detach closed the handles */
    int open;      /* handles not yet closed */
};

static void on_timer(uv_timer_t *t);

void srv_mhd_run(srv_ctx *ctx)
{
    srv_mhd_glue *g = ctx->mhd_glue;
    if (!ctx->mhd || !g)
        return;
    if (g->running) {
        /* Called from inside a libmicrohttpd callback: run once more when
         * the outer MHD_run returns instead of re-entering it. */
        g->rerun = true;
        return;
    }
    g->running = true;
    do {
        g->rerun = false;
        /* At --max-connections libmicrohttpd stops watching the listening
         * socket, and watches it again only in the run after the one that
         * closed a connection: nothing would wake that run (the epoll fd
         * has nothing else to say), so it is run at once. */
        size_t before = srv_budget_used(&ctx->connections);
        MHD_run(ctx->mhd);
        if (before >= ctx->cfg.max_connections && srv_budget_used(&ctx->connections) < before)
            g->rerun = true;
    } while (g->rerun);
    g->running = false;
    if (g->detached)
        return;

    MHD_UNSIGNED_LONG_LONG timeout;
    if (MHD_get_timeout(ctx->mhd, &timeout) == MHD_YES)
        uv_timer_start(&g->timer, on_timer, (uint64_t)timeout, 0);
    else
        uv_timer_stop(&g->timer);
}

static void on_timer(uv_timer_t *t)
{
    srv_mhd_glue *g = t->data;
    srv_mhd_run(g->ctx);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    srv_mhd_glue *g = p->data;
    srv_mhd_run(g->ctx);
}

static void on_closed(uv_handle_t *h)
{
    srv_mhd_glue *g = h->data;
    if (--g->open > 0)
        return;
    if (g->ctx->mhd_glue == g)
        g->ctx->mhd_glue = NULL;
    free(g);
}

int srv_loop_attach(srv_ctx *ctx)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(ctx->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info)
        return SRV_EIO;
    srv_mhd_glue *g = calloc(1, sizeof *g);
    if (!g)
        return SRV_ENOMEM;
    g->ctx = ctx;
    if (uv_timer_init(ctx->loop, &g->timer) != 0) {
        free(g);
        return SRV_EIO;
    }
    g->timer.data = g;
    g->open = 1;
    if (uv_poll_init(ctx->loop, &g->poll, info->epoll_fd) != 0) {
        uv_close((uv_handle_t *)&g->timer, on_closed); /* frees g */
        return SRV_EIO;
    }
    g->poll.data = g;
    g->open = 2;
    ctx->mhd_glue = g;
    uv_poll_start(&g->poll, UV_READABLE, on_poll);
    srv_mhd_run(ctx);
    return SRV_OK;
}

void srv_loop_detach(srv_ctx *ctx)
{
    srv_mhd_glue *g = ctx->mhd_glue;
    if (!g || g->detached)
        return;
    g->detached = true;
    uv_poll_stop(&g->poll);
    uv_timer_stop(&g->timer);
    uv_close((uv_handle_t *)&g->poll, on_closed);
    uv_close((uv_handle_t *)&g->timer, on_closed);
}
