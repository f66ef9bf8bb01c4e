/*
 * loop.c: libmicrohttpd driven by the libuv loop.
 *
 * libmicrohttpd runs with MHD_USE_EPOLL and no internal thread: its epoll fd
 * (MHD_DAEMON_INFO_EPOLL_FD) is watched by one uv_poll_t, and after every
 * MHD_run the uv_timer_t is re-armed from MHD_get_timeout (0 = run again on
 * the next loop iteration; "no timeout" stops the timer). libmicrohttpd
 * 0.9.75 does not wake this loop on MHD_resume_connection or
 * MHD_upgrade_action(CLOSE), so those callers run srv_mhd_run themselves.
 *
 * Not here: the thread pool (pool.c).
 */
#include "server/daemon.h"

static void on_timer(uv_timer_t *t);

void srv_mhd_run(srv_ctx *ctx)
{
    if (!ctx->mhd)
        return;
    if (ctx->mhd_running) {
        /* Called from inside a libmicrohttpd callback: run once more when
         * the outer MHD_run returns instead of re-entering it. */
        ctx->mhd_rerun = true;
        return;
    }
    ctx->mhd_running = true;
    do {
        ctx->mhd_rerun = false;
        MHD_run(ctx->mhd);
    } while (ctx->mhd_rerun);
    ctx->mhd_running = false;

    MHD_UNSIGNED_LONG_LONG timeout;
    if (MHD_get_timeout(ctx->mhd, &timeout) == MHD_YES)
        uv_timer_start(&ctx->mhd_timer, on_timer, (uint64_t)timeout, 0);
    else
        uv_timer_stop(&ctx->mhd_timer);
}

static void on_timer(uv_timer_t *t)
{
    srv_mhd_run(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    srv_mhd_run(p->data);
}

int srv_loop_attach(srv_ctx *ctx)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(ctx->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info)
        return SRV_EIO;
    if (uv_timer_init(ctx->loop, &ctx->mhd_timer) != 0)
        return SRV_EIO;
    ctx->mhd_timer.data = ctx;
    if (uv_poll_init(ctx->loop, &ctx->mhd_poll, info->epoll_fd) != 0) {
        uv_close((uv_handle_t *)&ctx->mhd_timer, NULL);
        return SRV_EIO;
    }
    ctx->mhd_poll.data = ctx;
    uv_poll_start(&ctx->mhd_poll, UV_READABLE, on_poll);
    srv_mhd_run(ctx);
    return SRV_OK;
}

void srv_loop_detach(srv_ctx *ctx)
{
    uv_poll_stop(&ctx->mhd_poll);
    uv_timer_stop(&ctx->mhd_timer);
    uv_close((uv_handle_t *)&ctx->mhd_poll, NULL);
    uv_close((uv_handle_t *)&ctx->mhd_timer, NULL);
}
