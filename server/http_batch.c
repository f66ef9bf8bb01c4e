/*
 * http_batch.c: POST /v1/solve/batch, a pipeline of pool stages; the loop
 * only moves bytes.
 *
 *   decode   one pool item decodes the body (proto_job_decode_json,
 *            PROTO_BATCH; or, when the body has "items", many rigs each
 *            with its own chain: proto_items_decode_json);
 *            this is when the batch is admitted (--max-queue: 503 and
 *            Retry-After: 1 when that many units are admitted already), and
 *            it keeps one admission slot until it is answered. Its answer
 *            is reserved then against --answer-budget at the most it can
 *            take (proto_job_encode_bound): 503 when the answers held for
 *            clients leave no room for it, 413 when it could never fit
 *   chunks   the targets are solved in chunks sized from measured time:
 *            a batch's first chunk is small (BATCH_FIRST targets at most),
 *            each later one about BATCH_CHUNK_US at the time per target the
 *            batch's chunks took so far, and never more targets than fit
 *            BATCH_WORST_US at their time budget (proto_job_budget_us), so
 *            that a batch of expensive targets the cost model underrates
 *            cannot hold a pool thread for long. Batch chunks from all
 *            batches together take at most one pool thread each (--threads
 *            of them queued or running), handed out round robin between
 *            the batches: a single solve or stream target queues behind the
 *            chunks that run, never behind a batch (server/solve.c solves,
 *            times and records each chunk)
 *   encode   one pool item writes the answer (proto_job_encode); the
 *            reservation becomes the answer's length, given back when
 *            libmicrohttpd has sent it (or the client left)
 * A batch whose client closed its connection is cancelled at its next
 * chunk (srv_http_client_gone). Later stages of an admitted batch are
 * never refused.
 */
#include <stdlib.h>

#include "proto/proto_json.h"
#include "server/http_handler.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/solve.h"

/* Microseconds of solving a chunk aims at, measured. */
#define BATCH_CHUNK_US 5000.0
/* Targets in a batch's chunks before any of them was measured. */
#define BATCH_FIRST 4
/* Targets in a chunk at most. */
#define BATCH_CHUNK_MAX 4096
/* A chunk's worst case (its targets' time budgets together), when more
 * than one target. */
#define BATCH_WORST_US 100000.0

typedef struct srv_batch batch;

typedef struct chunk {
    srv_solve solve;
    batch *b;
} chunk;

struct srv_batch {
    srv_request *q;
    srv_work stage; /* decode / encode */
    proto_error err;
    bool failed;    /* a stage failed: err holds the answer */
    bool cancelled; /* the client left: no more chunks */
    bool holds_slot;
    proto_items *items; /* a batch of items, else q->job */
    double budget_us;   /* the largest time budget of one target (or item) */
    size_t bound;       /* the most the answer can take (decode_work) */
    size_t reserved;    /* bytes of ctx->answer_bytes reserved for the answer */
    size_t next;        /* first target not yet handed to a chunk */
    size_t running;     /* chunks queued or running */
    double us_per_target; /* measured so far (0: nothing measured) */
    bool queued;        /* waits in the ctx's round robin (holds q) */
    batch *qnext;
    char *out;
    size_t out_len;
};

void srv_http_batch_free(void *p)
{
    batch *b = p;
    if (!b)
        return;
    srv_ctx *ctx = b->q->ctx;
    if (b->holds_slot)
        ctx->admitted--;
    ctx->answer_bytes -= b->reserved;
    free(b->out);
    proto_items_free(b->items);
    free(b);
}

static void fail(batch *b, proto_errcode code, const char *msg)
{
    proto_error e;
    proto_error_set(&e, code, "", "%s", msg);
    srv_http_respond_error(b->q, &e);
}

static void encode_work(srv_work *w)
{
    batch *b = w->data;
    if (b->items)
        b->out = proto_items_encode(b->items, &b->out_len);
    else
        b->out = proto_job_encode(b->q->job, &b->out_len);
}

/* Targets (or items) of the batch. */
static size_t batch_count(const batch *b)
{
    return b->items ? proto_items_count(b->items) : proto_job_count(b->q->job);
}

static void encode_done(srv_work *w, int status)
{
    batch *b = w->data;
    srv_request *q = b->q;
    if (!srv_http_release(q))
        return;
    if (status != SRV_OK || !b->out) {
        fail(b, PROTO_E_INTERNAL,
             status != SRV_OK ? "the daemon is shutting down" : "out of memory");
        return;
    }
    /* the job is not needed any more (its results are in the answer: 1.5 KB
     * a target or so, which a client that does not read would hold too);
     * the reservation becomes what the answer really holds, until
     * libmicrohttpd lets go of it */
    proto_job_free(q->job);
    q->job = NULL;
    proto_items_free(b->items);
    b->items = NULL;
    srv_ctx *ctx = q->ctx;
    ctx->answer_bytes -= b->reserved;
    b->reserved = 0;
    srv_response v = {0};
    v.status = 200;
    v.body = b->out;
    v.len = b->out_len;
    v.held = b->out_len;
    ctx->answer_bytes += v.held;
    b->out = NULL;
    srv_http_respond(q, &v);
}

static void encode(batch *b)
{
    b->stage.data = b;
    srv_http_hold(b->q);
    srv_pool_submit_always(b->q->ctx, &b->stage, encode_work, encode_done);
}

/* ---- chunks ---------------------------------------------------------------- */

/* Targets of b's next chunk (see the file comment). */
static size_t chunk_size(const batch *b)
{
    double per;
    if (b->us_per_target > 0) {
        per = BATCH_CHUNK_US / b->us_per_target;
    } else {
        double cost = b->items ? proto_items_cost_us(b->items) : proto_job_cost_us(b->q->job);
        per = BATCH_CHUNK_US / (cost > 0.01 ? cost : 0.01);
        if (per > BATCH_FIRST)
            per = BATCH_FIRST;
    }
    if (b->budget_us > 0 && per > BATCH_WORST_US / b->budget_us)
        per = BATCH_WORST_US / b->budget_us;
    size_t n = per < 1 ? 1 : per > BATCH_CHUNK_MAX ? BATCH_CHUNK_MAX : (size_t)per;
    size_t left = batch_count(b) - b->next;
    return n < left ? n : left;
}

static bool has_targets(const batch *b)
{
    return !b->cancelled && !b->failed && !b->q->dead && b->next < batch_count(b);
}

/* The round robin of batches with targets left to hand out is
 * ctx->batch_head..batch_tail; ctx->batch_chunks counts the chunks of all
 * batches on the pool (at most --threads). */
static void ready_push(batch *b)
{
    if (b->queued || !has_targets(b))
        return;
    srv_ctx *ctx = b->q->ctx;
    b->queued = true;
    b->qnext = NULL;
    srv_http_hold(b->q); /* a queued batch keeps its request */
    if (ctx->batch_tail)
        ctx->batch_tail->qnext = b;
    else
        ctx->batch_head = b;
    ctx->batch_tail = b;
}

static void chunk_done(srv_solve *s, int status);
static void finish_if_done(batch *b);

/* Hands out chunks round robin while pool threads are free of batch
 * chunks. */
static void pump(srv_ctx *ctx)
{
    while (ctx->batch_chunks < ctx->cfg.threads && ctx->batch_head) {
        batch *b = ctx->batch_head;
        ctx->batch_head = b->qnext;
        if (!ctx->batch_head)
            ctx->batch_tail = NULL;
        b->queued = false;
        srv_request *q = b->q;
        if (!srv_http_release(q))
            continue; /* the client left and nothing else held the batch */
        if (!has_targets(b)) {
            finish_if_done(b);
            continue;
        }
        chunk *c = calloc(1, sizeof *c);
        if (!c) {
            b->failed = true;
            finish_if_done(b);
            continue;
        }
        c->b = b;
        c->solve.job = q->job;
        c->solve.items = b->items;
        c->solve.begin = b->next;
        c->solve.end = b->next + chunk_size(b);
        c->solve.done = chunk_done;
        c->solve.data = c;
        b->next = c->solve.end;
        srv_http_hold(q);
        if (srv_solve_submit_stage(ctx, &c->solve) != SRV_OK) {
            q->pending--;
            free(c);
            b->failed = true;
            finish_if_done(b);
            continue;
        }
        b->running++;
        ctx->batch_chunks++;
        ready_push(b); /* behind the other batches */
    }
}

/* After a chunk or a hand-out that ended the batch's solving: once nothing
 * of it runs, its answer (or its failure). */
static void finish_if_done(batch *b)
{
    srv_request *q = b->q;
    if (b->running > 0 || b->queued || q->dead || has_targets(b))
        return;
    if (b->cancelled)
        fail(b, PROTO_E_INTERNAL, "the client left: the batch was cancelled");
    else if (b->failed)
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
    else
        encode(b);
}

static void chunk_done(srv_solve *s, int status)
{
    chunk *c = s->data;
    batch *b = c->b;
    srv_request *q = b->q;
    srv_ctx *ctx = q->ctx;
    size_t n = s->end - s->begin;
    double us = s->seconds * 1e6 / (double)(n ? n : 1);
    free(c);
    b->running--;
    ctx->batch_chunks--;
    if (status != SRV_OK)
        b->failed = true;
    else
        b->us_per_target = b->us_per_target > 0 ? 0.5 * (b->us_per_target + us) : us;
    if (!q->dead && !b->cancelled && !b->failed && srv_http_client_gone(q)) {
        b->cancelled = true;
        srv_metrics_rejected(ctx, "batch_cancelled");
        srv_log(ctx, SRV_LOG_INFO, "batch of %zu %s cancelled: its client left",
                batch_count(b), b->items ? "items" : "targets");
    }
    ready_push(b);
    if (srv_http_release(q))
        finish_if_done(b);
    pump(ctx);
}

/* ---- decoding and admission ------------------------------------------------- */

static void decode_work(srv_work *w)
{
    batch *b = w->data;
    srv_request *q = b->q;
    const proto_limits *lim = &q->ctx->cfg.limits;
    json_t *root = proto_json_parse(q->body, q->len, lim->max_body_bytes, PROTO_JSON_BATCH,
                                    &b->err);
    int rc = -1;
    if (root && json_is_object(root) && json_object_get(root, "items"))
        rc = proto_items_decode_json(root, lim, srv_registry_lookup, q->ctx->registry, &b->items,
                                     &b->err);
    else if (root)
        rc = proto_job_decode_json(root, PROTO_BATCH, lim, srv_registry_lookup, q->ctx->registry,
                                   &q->job, &b->err);
    json_decref(root);
    if (rc != 0) {
        b->failed = true;
        return;
    }
    /* what the answer may take, and the slowest target's budget (an item
     * answered with its error takes its error object) */
    if (b->items) {
        size_t n = proto_items_count(b->items);
        b->bound = 256;
        for (size_t i = 0; i < n; i++) {
            const proto_job *job = proto_items_job(b->items, i);
            b->bound += job ? proto_job_encode_bound(job) : 1024;
            double us = job ? proto_job_budget_us(job) : 0;
            if (us > b->budget_us)
                b->budget_us = us;
        }
    } else {
        b->bound = proto_job_encode_bound(q->job);
        b->budget_us = proto_job_budget_us(q->job);
    }
}

/* Reserves the most b's answer can take against --answer-budget; false
 * (answered 503 or 413) when it does not fit. */
static bool reserve_answer(batch *b)
{
    srv_request *q = b->q;
    srv_ctx *ctx = q->ctx;
    size_t bound = b->bound;
    size_t budget = ctx->cfg.answer_budget_bytes;
    proto_error e;
    if (bound > budget) {
        proto_error_set(&e, PROTO_E_TOO_LARGE, b->items ? "/items" : "/targets",
                        "the answer to %zu %s may take %zu bytes, more than the answer "
                        "budget (--answer-budget %zu): send fewer per batch",
                        batch_count(b), b->items ? "items" : "targets", bound, budget);
        srv_metrics_rejected(ctx, "too_large");
        srv_http_respond_error(q, &e);
        return false;
    }
    if (ctx->answer_bytes + bound > budget) {
        proto_error_set(&e, PROTO_E_OVERLOADED, "",
                        "answers waiting for their clients fill the answer budget "
                        "(--answer-budget); retry later");
        srv_metrics_rejected(ctx, "answer_budget");
        srv_http_respond_error(q, &e);
        return false;
    }
    b->reserved = bound;
    ctx->answer_bytes += bound;
    return true;
}

static void decode_done(srv_work *w, int status)
{
    batch *b = w->data;
    srv_request *q = b->q;
    if (!srv_http_release(q))
        return;
    if (status != SRV_OK) {
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    if (b->failed) {
        srv_http_respond_error(q, &b->err);
        return;
    }
    srv_http_body_release(q); /* the job holds what it needs */
    if (!reserve_answer(b))
        return;
    /* the batch keeps one admission slot until it is answered */
    b->holds_slot = true;
    q->ctx->admitted++;
    if (batch_count(b) == 0) {
        encode(b);
        return;
    }
    ready_push(b);
    pump(q->ctx);
}

void srv_http_batch(srv_request *q)
{
    batch *b = calloc(1, sizeof *b);
    if (!b)
        return;
    b->q = q;
    q->batch = b;
    b->stage.data = b;
    srv_http_hold(q);
    int rc = srv_pool_submit(q->ctx, &b->stage, decode_work, decode_done);
    if (rc != SRV_OK) {
        q->pending--;
        proto_error e;
        if (rc == SRV_EBUSY) {
            proto_error_set(&e, PROTO_E_OVERLOADED, "", "the solver queue is full; retry later");
            srv_metrics_rejected(q->ctx, "pool_full");
        } else {
            proto_error_set(&e, PROTO_E_INTERNAL, "", "cannot queue work: %s", srv_strerror(rc));
        }
        srv_http_respond_error(q, &e);
    }
}
