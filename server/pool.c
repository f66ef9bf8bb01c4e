/*
 * pool.c: the thread pool (contract in pool.h): libuv's uv_queue_work with
 * two counters kept on the loop thread.
 *
 * ctx->pool_depth (submitted, not yet completed) is what metrics show and a
 * drain waits for; the budget ctx->admitted bounds admission:
 * srv_pool_submit reserves one unit of it or refuses with SRV_EBUSY beyond
 * cfg.pool_queue_max, so an overloaded daemon answers 503 at once instead
 * of queueing without bound. Work submitted with
 * srv_pool_submit_always (the later stages of admitted work) is counted in
 * the depth only.
 */
#include "server/pool.h"

static void pool_work(uv_work_t *req)
{
    srv_work *w = (srv_work *)((char *)req - offsetof(srv_work, req));
    w->work(w);
}

static void pool_after(uv_work_t *req, int status)
{
    srv_work *w = (srv_work *)((char *)req - offsetof(srv_work, req));
    w->ctx->pool_depth--;
    if (w->admitted && !w->keep_admission)
        srv_budget_release(&w->ctx->admitted, 1);
    w->done(w, status == UV_ECANCELED ? SRV_ESHUTDOWN : SRV_OK);
}

int srv_pool_submit_always(srv_ctx *ctx, srv_work *w, void (*work)(srv_work *w),
                           void (*done)(srv_work *w, int status))
{
    if (!ctx || !w || !work || !done)
        return SRV_EINVAL;
    w->ctx = ctx;
    w->work = work;
    w->done = done;
    w->admitted = false;
    w->req.data = w;
    if (uv_queue_work(ctx->loop, &w->req, pool_work, pool_after) != 0)
        return SRV_EIO;
    ctx->pool_depth++;
    return SRV_OK;
}

int srv_pool_submit(srv_ctx *ctx, srv_work *w, void (*work)(srv_work *w),
                    void (*done)(srv_work *w, int status))
{
    if (!ctx)
        return SRV_EINVAL;
    if (!srv_budget_reserve(&ctx->admitted, 1))
        return SRV_EBUSY;
    int rc = srv_pool_submit_always(ctx, w, work, done);
    if (rc == SRV_OK)
        w->admitted = true;
    else
        srv_budget_release(&ctx->admitted, 1);
    return rc;
}
