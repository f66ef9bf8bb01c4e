/*
 * pool.h: the thread pool that solves off the loop (server/pool.c), and the
 * admission bound (--max-queue) that keeps it from queueing without limit.
 *
 * The pool is libuv's (uv_queue_work) on ctx->loop; serve.c sizes it with
 * UV_THREADPOOL_SIZE before the loop first uses it. Work runs on a pool
 * thread; its completion callback runs back on the loop thread.
 *
 * Counters (in srv_ctx): ctx->pool_depth counts items submitted and not
 * yet completed (the ikd_pool_queue_depth gauge, and what a drain waits
 * for; loop thread only); the budget ctx->admitted counts admitted work in
 * flight, what cfg.pool_queue_max bounds.
 *
 * Threads: every function here is for the loop thread only.
 */
#ifndef SRV_POOL_H
#define SRV_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "server/srv.h"

typedef struct srv_work srv_work;

/* One unit of pool work. The caller allocates it (usually embedded in its
 * own request struct; `data` is free for the caller) and keeps it alive until
 * `done` has run. */
struct srv_work {
    uv_work_t req;                       /* private */
    srv_ctx *ctx;                        /* set by srv_pool_submit */
    void (*work)(srv_work *w);           /* runs on a pool thread */
    void (*done)(srv_work *w, int status); /* loop thread; status 0 or SRV_ESHUTDOWN
                                            (cancelled before it started) */
    void *data;                          /* caller's */
    /* Set before srv_pool_submit: the unit of ctx->admitted the work holds
     * passes to the caller when done runs (a batch keeps its admission from
     * its decode to its answer), who gives it back with
     * srv_budget_release(&ctx->admitted, 1). */
    bool keep_admission;
    bool admitted;                       /* private: holds a unit of ctx->admitted */
};

/* Queues w on the pool as newly admitted work (a single solve, a stream
 * solve, a batch's decode), holding one unit of ctx->admitted until done
 * (or, with keep_admission, beyond it). Returns 0 (then done always runs
 * exactly once, on the loop thread), SRV_EBUSY when ctx->admitted has no
 * room left (cfg.pool_queue_max: the caller answers 503 + Retry-After, or
 * an error message on a stream; nothing was queued and done never runs), SRV_EINVAL
 * for a NULL argument, or SRV_EIO when libuv refuses the work (nothing was
 * queued). Counts the depth for metrics. */
int srv_pool_submit(srv_ctx *ctx, srv_work *w, void (*work)(srv_work *w),
                    void (*done)(srv_work *w, int status));

/* The same without the queue bound and not counted in ctx->admitted, for
 * the later stages of work that was already admitted (a batch's chunks,
 * which hold the batch's one slot, see http_batch.c): never SRV_EBUSY. */
int srv_pool_submit_always(srv_ctx *ctx, srv_work *w, void (*work)(srv_work *w),
                           void (*done)(srv_work *w, int status));

#endif /* SRV_POOL_H */
