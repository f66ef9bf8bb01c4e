/*
 * solve.c: where a job is solved, timed and recorded (contract in
 * server/solve.h), and the inline budget of a turn of the loop.
 *
 * The budget: ctx->turn counts the nanoseconds of inline solving (solve,
 * after, done) since the last reset. A uv_prepare_t resets it before the
 * loop polls its sockets (so the I/O of a turn, streams' reads included,
 * gets SRV_TURN_BUDGET_US); a uv_check_t right after the poll resets it
 * again and runs the solves that waited, in order, within that budget
 * (timers, such as paths' samples, share what it leaves). While solves
 * wait, a uv_idle_t keeps the next poll from blocking, so that they run in
 * the next turn, after the sockets had theirs.
 */
#include <math.h>
#include <string.h>

#include "server/solve.h"

#include <stdlib.h>

#include "server/metrics.h"

struct srv_turn {
    srv_ctx *ctx;
    uv_prepare_t prepare;
    uv_check_t check;
    uv_idle_t idle;
    uint64_t spent_ns;
    srv_solve *head, *tail; /* waiting for a later turn */
    int open;               /* handles not yet closed */
};

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

/* Solves the one-target jobs jobs[begin, end) (NULL entries are skipped)
 * and times them. */
static void run_jobs(srv_solve *s)
{
    uint64_t t0 = uv_hrtime();
    for (size_t i = s->begin; i < s->end; i++)
        if (s->jobs[i])
            proto_job_run(s->jobs[i], 0, 1);
    s->seconds = (double)(uv_hrtime() - t0) * 1e-9;
}

/* Records jobs[begin, end), each with its share of the time, in runs of
 * one solver and status (a tick's jobs mostly share them: one metrics
 * update per run rather than per job). */
static void record_jobs(srv_ctx *ctx, const srv_solve *s)
{
    size_t solved = 0;
    for (size_t i = s->begin; i < s->end; i++)
        solved += s->jobs[i] != NULL;
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
            srv_metrics_solves_outcome(ctx->metrics, solver, each, status, n);
            n = 0;
        }
        solver = sv;
        status = st;
        n++;
    }
}

/* Items [begin, end) of a batch of items, each recorded with its share of
 * the time. */
static void record_items(srv_ctx *ctx, srv_solve *s)
{
    double each = s->end > s->begin ? s->seconds / (double)(s->end - s->begin) : 0.0;
    for (size_t i = s->begin; i < s->end; i++) {
        proto_job *job = proto_items_job(s->items, i);
        if (job)
            srv_metrics_solved(ctx, job, 0, 1, each);
    }
}

/* srv_solve_run, begun at t0 (uv_hrtime). */
static void run_from(srv_ctx *ctx, srv_solve *s, uint64_t t0)
{
    if (s->jobs) {
        /* a tick's part: encoded by its after first, as below (the jobs it
         * hands back to their streams stay in s->jobs, alive until the
         * tick lets go of the streams, after done) */
        run_jobs(s);
        if (s->after)
            s->after(s);
        record_jobs(ctx, s);
        return;
    }
    if (s->items) {
        t0 = uv_hrtime();
        proto_items_run(s->items, s->begin, s->end);
    } else {
        proto_job_run(s->job, s->begin, s->end);
    }
    s->seconds = (double)(uv_hrtime() - t0) * 1e-9;
    /* encoded first (a batch's chunk, a single solve): the encoder notes
     * each result's status word, which the metrics then read
     * (proto_job_status) rather than work it out a second time */
    if (s->after)
        s->after(s);
    if (s->items)
        record_items(ctx, s);
    else
        srv_metrics_solved(ctx, s->job, s->begin, s->end, s->seconds);
}

void srv_solve_run(srv_ctx *ctx, srv_solve *s)
{
    run_from(ctx, s, uv_hrtime());
}

/* A cheap solve on the loop, counted against the turn's budget (one clock
 * reading starts both the solve's time and the turn's). */
static void run_inline(srv_ctx *ctx, srv_solve *s)
{
    uint64_t t0 = uv_hrtime();
    run_from(ctx, s, t0);
    s->done(s, SRV_OK);
    if (ctx->turn)
        ctx->turn->spent_ns += uv_hrtime() - t0;
}

static void on_idle(uv_idle_t *h)
{
    (void)h; /* only there so that the poll does not block */
}

static void on_prepare(uv_prepare_t *h)
{
    srv_turn *t = h->data;
    t->spent_ns = 0;
}

static void on_check(uv_check_t *h)
{
    srv_turn *t = h->data;
    srv_ctx *ctx = t->ctx;
    t->spent_ns = 0;
    while (t->head && t->spent_ns < (uint64_t)SRV_TURN_BUDGET_US * 1000) {
        srv_solve *s = t->head;
        t->head = s->next_deferred;
        if (!t->head)
            t->tail = NULL;
        run_inline(ctx, s);
    }
    if (!t->head)
        uv_idle_stop(&t->idle);
}

static void turn_closed(uv_handle_t *h)
{
    srv_turn *t = h->data;
    if (--t->open == 0)
        free(t);
}

int srv_solve_start(srv_ctx *ctx)
{
    srv_turn *t = calloc(1, sizeof *t);
    if (!t)
        return SRV_ENOMEM;
    t->ctx = ctx;
    uv_prepare_init(ctx->loop, &t->prepare);
    uv_check_init(ctx->loop, &t->check);
    uv_idle_init(ctx->loop, &t->idle);
    t->prepare.data = t->check.data = t->idle.data = t;
    t->open = 3;
    uv_prepare_start(&t->prepare, on_prepare);
    uv_check_start(&t->check, on_check);
    uv_unref((uv_handle_t *)&t->prepare); /* they do not keep the loop alive */
    uv_unref((uv_handle_t *)&t->check);
    ctx->turn = t;
    return SRV_OK;
}

void srv_solve_stop(srv_ctx *ctx)
{
    srv_turn *t = ctx->turn;
    if (!t)
        return;
    ctx->turn = NULL;
    while (t->head) {
        srv_solve *s = t->head;
        t->head = s->next_deferred;
        s->done(s, SRV_ESHUTDOWN);
    }
    t->tail = NULL;
    uv_close((uv_handle_t *)&t->prepare, turn_closed);
    uv_close((uv_handle_t *)&t->check, turn_closed);
    uv_close((uv_handle_t *)&t->idle, turn_closed);
}

static void solve_work(srv_work *w)
{
    srv_solve *s = w->data;
    if (s->work)
        s->work(w->ctx, s);
    else
        srv_solve_run(w->ctx, s);
}

static void solve_done(srv_work *w, int status)
{
    srv_solve *s = w->data;
    s->done(s, status);
}

int srv_solve_submit(srv_ctx *ctx, srv_solve *s)
{
    if (!ctx || !s || !(s->job || s->items || s->jobs || s->work) || !s->done)
        return SRV_EINVAL;
    s->ran_inline = false;
    s->deferred = false;
    /* work and stages go to the pool whatever their cost */
    bool cheap = !s->stage && !s->work &&
                 ((s->job && srv_solve_is_cheap(ctx, s->job)) ||
                  (s->jobs && jobs_cost(s) < ctx->cfg.inline_cost_us));
    if (cheap) {
        srv_turn *t = ctx->turn;
        if (s->may_defer && t &&
            (t->head || t->spent_ns >= (uint64_t)SRV_TURN_BUDGET_US * 1000)) {
            /* this turn's budget is spent (or others wait already): a
             * later turn, in order */
            s->deferred = true;
            s->next_deferred = NULL;
            if (t->tail)
                t->tail->next_deferred = s;
            else
                t->head = s;
            t->tail = s;
            uv_idle_start(&t->idle, on_idle);
            return SRV_OK;
        }
        s->ran_inline = true;
        run_inline(ctx, s);
        return SRV_OK;
    }
    s->w.data = s;
    s->w.keep_admission = s->keep_admission;
    return s->stage ? srv_pool_submit_always(ctx, &s->w, solve_work, solve_done)
                    : srv_pool_submit(ctx, &s->w, solve_work, solve_done);
}

int srv_solve_submit_stage(srv_ctx *ctx, srv_solve *s)
{
    if (s)
        s->stage = true;
    return srv_solve_submit(ctx, s);
}
