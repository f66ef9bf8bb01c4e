/*
 * http_batch.c: POST /v1/solve/batch, a pipeline of pool stages; the loop
 * only moves bytes.
 *
 *   decode   one pool item decodes the body (proto_job_decode_json,
 *            PROTO_BATCH; or, when the body has "items", many rigs each
 *            with its own chain: proto_items_decode_json);
 *            this is when the batch is admitted (--max-queue: 503 and
 *            Retry-After: 1 when that many units are admitted already), and
 *            it keeps one admission slot until it is answered
 *   chunks   the targets are split into chunks of about BATCH_CHUNK_US of
 *            estimated work (16 to 4096 targets), at most one per pool
 *            thread in flight: the next chunk is submitted when one
 *            completes, behind whatever arrived meanwhile, so single solves
 *            and stream targets wait for one chunk, never for the whole
 *            batch (server/solve.c solves, times and records each)
 *   encode   one pool item writes the answer (proto_job_encode)
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

/* Estimated microseconds of solving per batch chunk. */
#define BATCH_CHUNK_US 5000.0

typedef struct batch batch;

typedef struct chunk {
    srv_solve solve;
    batch *b;
} chunk;

struct batch {
    srv_request *q;
    srv_work stage; /* decode / encode */
    proto_error err;
    bool failed;    /* a stage failed: err holds the answer */
    bool cancelled; /* the client left: no more chunks */
    bool holds_slot;
    proto_items *items; /* a batch of items, else q->job */
    chunk *chunks;
    size_t nchunks, next_chunk, running;
    char *out;
    size_t out_len;
};

void srv_http_batch_free(void *p)
{
    batch *b = p;
    if (!b)
        return;
    if (b->holds_slot)
        b->q->ctx->admitted--;
    free(b->chunks);
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
    if (status != SRV_OK) {
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    char *out = b->out;
    b->out = NULL;
    srv_http_respond_body(q, 200, out, b->out_len);
}

static void chunk_done(srv_solve *s, int status);

/* Submits the batch's next chunk; false when none could be. */
static bool submit_chunk(batch *b)
{
    if (b->next_chunk >= b->nchunks)
        return false;
    chunk *c = &b->chunks[b->next_chunk++];
    srv_http_hold(b->q);
    if (srv_solve_submit_stage(b->q->ctx, &c->solve) != SRV_OK) {
        b->q->pending--;
        b->failed = true;
        return false;
    }
    b->running++;
    return true;
}

static void chunk_done(srv_solve *s, int status)
{
    chunk *c = s->data;
    batch *b = c->b;
    srv_request *q = b->q;
    b->running--;
    if (status != SRV_OK)
        b->failed = true;
    if (!q->dead && !b->cancelled && !b->failed && srv_http_client_gone(q)) {
        b->cancelled = true;
        srv_metrics_rejected(q->ctx, "batch_cancelled");
        srv_log(q->ctx, SRV_LOG_INFO, "batch of %zu %s cancelled: its client left",
                batch_count(b), b->items ? "items" : "targets");
    }
    /* the next chunk queues behind whatever was submitted meanwhile (single
     * solves, stream targets), so a batch cannot starve them */
    if (!q->dead && !b->cancelled && !b->failed)
        submit_chunk(b);
    bool last = b->running == 0;
    if (!srv_http_release(q) || !last)
        return;
    if (b->cancelled) {
        fail(b, PROTO_E_INTERNAL, "the client left: the batch was cancelled");
        return;
    }
    if (b->failed) {
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    b->stage.data = b;
    srv_http_hold(q);
    srv_pool_submit_always(q->ctx, &b->stage, encode_work, encode_done);
}

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
    if (rc != 0)
        b->failed = true;
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
    /* the batch keeps one admission slot until it is answered */
    b->holds_slot = true;
    q->ctx->admitted++;
    size_t n = batch_count(b);
    double cost = b->items ? proto_items_cost_us(b->items) : proto_job_cost_us(q->job);
    double fit = BATCH_CHUNK_US / (cost > 0.01 ? cost : 0.01);
    size_t per = fit < 16 ? 16 : fit > 4096 ? 4096 : (size_t)fit;
    size_t nchunks = n ? (n + per - 1) / per : 0;
    if (nchunks == 0) {
        b->stage.data = b;
        srv_http_hold(q);
        srv_pool_submit_always(q->ctx, &b->stage, encode_work, encode_done);
        return;
    }
    b->chunks = calloc(nchunks, sizeof *b->chunks);
    if (!b->chunks) {
        fail(b, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    b->nchunks = nchunks;
    for (size_t i = 0; i < nchunks; i++) {
        chunk *c = &b->chunks[i];
        c->b = b;
        c->solve.job = q->job;
        c->solve.items = b->items;
        c->solve.begin = i * per;
        c->solve.end = c->solve.begin + per < n ? c->solve.begin + per : n;
        c->solve.done = chunk_done;
        c->solve.data = c;
    }
    for (unsigned t = 0; t < q->ctx->cfg.threads && submit_chunk(b); t++)
        ;
    if (b->running == 0)
        fail(b, PROTO_E_INTERNAL, "cannot queue work");
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
