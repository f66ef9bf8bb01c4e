/*
 * solve.c: where a job is solved, timed and recorded (contract in
 * server/solve.h).
 */
#include "server/solve.h"
#include "server/metrics.h"

bool srv_solve_is_cheap(const srv_ctx *ctx, const proto_job *job)
{
    return proto_job_cost_us(job) * (double)proto_job_count(job) < ctx->cfg.inline_cost_us;
}

/* Items [begin, end) of a batch of items, each recorded with its share of
 * the time. */
static void run_items(srv_ctx *ctx, srv_solve *s)
{
    uint64_t t0 = uv_hrtime();
    proto_items_run(s->items, s->begin, s->end);
    s->seconds = (double)(uv_hrtime() - t0) * 1e-9;
    double each = s->end > s->begin ? s->seconds / (double)(s->end - s->begin) : 0.0;
    for (size_t i = s->begin; i < s->end; i++) {
        proto_job *job = proto_items_job(s->items, i);
        if (job)
            srv_metrics_solved(ctx, job, 0, 1, each);
    }
}

void srv_solve_run(srv_ctx *ctx, srv_solve *s)
{
    if (s->items) {
        run_items(ctx, s);
    } else {
        uint64_t t0 = uv_hrtime();
        proto_job_run(s->job, s->begin, s->end);
        s->seconds = (double)(uv_hrtime() - t0) * 1e-9;
        srv_metrics_solved(ctx, s->job, s->begin, s->end, s->seconds);
    }
    if (s->after)
        s->after(s);
}

static void solve_work(srv_work *w)
{
    srv_solve *s = w->data;
    srv_solve_run(w->ctx, s);
}

static void solve_done(srv_work *w, int status)
{
    srv_solve *s = w->data;
    s->done(s, status);
}

int srv_solve_submit(srv_ctx *ctx, srv_solve *s)
{
    if (!ctx || !s || !(s->job || s->items) || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    if (s->job && srv_solve_is_cheap(ctx, s->job)) {
        s->ran_inline = true;
        srv_solve_run(ctx, s);
        s->done(s, SRV_OK);
        return SRV_OK;
    }
    s->w.data = s;
    return srv_pool_submit(ctx, &s->w, solve_work, solve_done);
}

int srv_solve_submit_stage(srv_ctx *ctx, srv_solve *s)
{
    if (!ctx || !s || !(s->job || s->items) || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    s->w.data = s;
    return srv_pool_submit_always(ctx, &s->w, solve_work, solve_done);
}
