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

void srv_solve_run(srv_ctx *ctx, srv_solve *s)
{
    uint64_t t0 = uv_hrtime();
    proto_job_run(s->job, s->begin, s->end);
    s->seconds = (double)(uv_hrtime() - t0) * 1e-9;
    srv_metrics_solved(ctx, s->job, s->begin, s->end, s->seconds);
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
    if (!ctx || !s || !s->job || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    if (srv_solve_is_cheap(ctx, s->job)) {
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
    if (!ctx || !s || !s->job || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    s->w.data = s;
    return srv_pool_submit_always(ctx, &s->w, solve_work, solve_done);
}
