/*
 * pool.c: the thread pool (contract in pool.h): libuv's uv_queue_work with
 * two counters.
 *
 * ctx->pool_depth (submitted by the loop, not yet completed; only the loop
 * writes it) is what the loop's drain waits for, and summed over the loops
 * what metrics show; the budget ctx->sh->admitted bounds the admission of
 * every loop together:
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
    srv_gauge_sub(&w->ctx->pool_depth, 1);
    if (w->admitted && !w->keep_admission)
        srv_budget_release(&w->ctx->sh->admitted, 1);
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
    srv_gauge_add(&ctx->pool_depth, 1);
    return SRV_OK;
}

int srv_pool_submit(srv_ctx *ctx, srv_work *w, void (*work)(srv_work *w),
                    void (*done)(srv_work *w, int status))
{
    if (!ctx)
        return SRV_EINVAL;
    if (!srv_budget_reserve(&ctx->sh->admitted, 1))
        return SRV_EBUSY;
    int rc = srv_pool_submit_always(ctx, w, work, done);
    if (rc == SRV_OK)
        w->admitted = true;
    else
        srv_budget_release(&ctx->sh->admitted, 1);
    return rc;
}

size_t srv_pool_depth_all(const srv_shared *sh)
{
    size_t n = 0;
    for (unsigned i = 0; i < sh->nloops; i++)
        n += srv_gauge_get(&sh->loops[i]->pool_depth);
    return n;
}
