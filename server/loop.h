/*
 * loop.h: libmicrohttpd driven by the libuv loop (server/loop.c).
 *
 * libmicrohttpd runs in external-epoll mode with no thread of its own: its
 * epoll descriptor is watched on ctx->loop, and its timeouts are a timer on
 * the same loop. What that takes (the poll and timer handles, the
 * re-entrancy flags) is private to loop.c: srv_loop_attach allocates it and
 * hangs it on ctx->mhd_glue, srv_loop_detach releases it.
 *
 * libmicrohttpd facts this relies on (libmicrohttpd 0.9.75): in this mode
 * MHD_resume_connection() and MHD_upgrade_action(CLOSE) wake nothing, so the
 * caller must call srv_mhd_run() afterwards, or the connection hangs until
 * the next unrelated event.
 *
 * Threads: loop thread only.
 */
#ifndef SRV_LOOP_H
#define SRV_LOOP_H

#include "server/srv.h"

/* Starts watching ctx->mhd's epoll fd and its timeouts on ctx->loop and runs
 * libmicrohttpd once. Returns 0, SRV_ENOMEM or SRV_EIO (then nothing was
 * started and ctx->mhd_glue stays NULL). */
int srv_loop_attach(srv_ctx *ctx);

/* Stops and closes the poll and timer handles; the loop finishes closing
 * them on its next run, and then frees ctx->mhd_glue and sets it to NULL.
 * Between the two, srv_mhd_run still runs libmicrohttpd but arms no timer. */
void srv_loop_detach(srv_ctx *ctx);

/* Runs libmicrohttpd now (MHD_run) and re-arms the timer from
 * MHD_get_timeout. Call it after MHD_resume_connection() and after
 * MHD_upgrade_action(..., MHD_UPGRADE_ACTION_CLOSE). Safe to call from
 * inside a libmicrohttpd callback (the nested run is deferred). Does nothing
 * when ctx->mhd is NULL or the loop is not attached. */
void srv_mhd_run(srv_ctx *ctx);

#endif /* SRV_LOOP_H */
