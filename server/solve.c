/*
 * solve.c: where a job is solved, timed and recorded (contract in
 * server/solve.h).
 */
#include <math.h>
#include <string.h>

#include "server/solve.h"
#include "server/metrics.h"

bool srv_solve_is_cheap(const srv_ctx *ctx, const proto_job *job)
{
    return proto_job_cost_us(job) * (double)proto_job_count(job) < ctx->cfg.inline_cost_us;
}

size_t srv_solve_parallel(const srv_ctx *ctx)
{
    return ctx->cfg.threads > 0 ? ctx->cfg.threads : 1;
}

size_t srv_solve_parts(const srv_ctx *ctx, double cost_us, size_t n)
{
    if (n == 0)
        return 0;
    if (!(cost_us >= ctx->cfg.inline_cost_us))
        return 1;
    double most = floor(cost_us / SRV_SOLVE_PART_MIN_US); /* parts worth a hop */
    double least = ceil(cost_us / SRV_SOLVE_PART_MAX_US);
    double p = (double)srv_solve_parallel(ctx);
    if (p > most)
        p = most;
    if (p < least)
        p = least;
    if (p < 1)
        p = 1;
    return p >= (double)n ? n : (size_t)p;
}

/* Estimated cost of jobs[begin, end). */
static double jobs_cost(const srv_solve *s)
{
    double c = 0;
    for (size_t i = s->begin; i < s->end; i++)
        if (s->jobs[i])
            c += proto_job_cost_us(s->jobs[i]);
    return c;
}

/* One-target jobs jobs[begin, end), each recorded with its share of the
 * time, in runs of one solver and status (a tick's jobs mostly share
 * them: one metrics update per run rather than per job). */
static void run_jobs(srv_ctx *ctx, srv_solve *s)
{
    uint64_t t0 = uv_hrtime();
    size_t solved = 0;
    for (size_t i = s->begin; i < s->end; i++) {
        if (s->jobs[i]) {
            proto_job_run(s->jobs[i], 0, 1);
            solved++;
        }
    }
    s->seconds = (double)(uv_hrtime() - t0) * 1e-9;
    double each = solved ? s->seconds / (double)solved : 0.0;
    const char *solver = NULL, *status = NULL;
    size_t n = 0;
    for (size_t i = s->begin; i <= s->end; i++) {
        const proto_job *job = i < s->end ? s->jobs[i] : NULL;
        if (i < s->end && !job)
            continue;
        const char *sv = job ? proto_job_solver_name(job) : NULL;
        const char *st = job ? proto_job_status(job, 0) : NULL;
        if (n > 0 && (!job || strcmp(sv, solver) != 0 || strcmp(st, status) != 0)) {
            srv_metrics_observe_solves(ctx->metrics, solver, each, n);
            srv_metrics_outcome(ctx->metrics, solver, status, n);
            n = 0;
        }
        solver = sv;
        status = st;
        n++;
    }
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
    } else if (s->jobs) {
        run_jobs(ctx, s);
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
    if (!ctx || !s || !(s->job || s->items || s->jobs) || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    if ((s->job && srv_solve_is_cheap(ctx, s->job)) ||
        (s->jobs && jobs_cost(s) < ctx->cfg.inline_cost_us)) {
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
    if (!ctx || !s || !(s->job || s->items || s->jobs) || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    s->w.data = s;
    return srv_pool_submit_always(ctx, &s->w, solve_work, solve_done);
}
