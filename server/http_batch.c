/*
 * http_batch.c: POST /v1/solve/batch, a pipeline of pool stages; the loop
 * only moves bytes.
 *
 *   decode   one pool item decodes the body (proto_batch_decode: one
 *            chain's targets read without their jansson tree; or, when the
 *            body has "items", many rigs each with its own chain);
 *            this is when the batch is admitted (--max-queue: 503 and
 *            Retry-After: 1 when that many units are admitted already), and
 *            it keeps one admission slot until it is answered
 *   chunks   the targets are split into chunks of about BATCH_CHUNK_US of
 *            estimated work and at most BATCH_CHUNK_BYTES of answer (16 to
 *            4096 targets), at most one per pool
 *            thread in flight: the next chunk is submitted when one
 *            completes, behind whatever arrived meanwhile, so single solves
 *            and stream targets wait for one chunk, never for the whole
 *            batch (server/solve.c solves, times and records each); each
 *            chunk's results are encoded on its pool thread right after
 *            they are solved (proto_job_encode_results)
 *   answer   a batch of one chunk is answered in one body; a larger one is
 *            written out as its chunks finish, in order (the head at once,
 *            each chunk's text when every chunk before it was written, the
 *            tail with the counts last: srv_http_stream_*, chunked
 *            transfer), so that its memory is bounded by the chunk size,
 *            not the batch: a chunk is submitted only while the chunks
 *            running, solved but waiting for an earlier one, and written
 *            but not yet taken by the client number fewer than
 *            BATCH_WINDOW_EXTRA plus the pool threads. A slow client
 *            holds that many chunks' text and no more; the client taking
 *            a piece (batch_drained) lets the next chunk go, and the job
 *            keeps the results of that many chunks only
 *            (proto_job_limit_results)
 * A batch whose client closed its connection is cancelled at its next
 * chunk (srv_http_client_gone, or libmicrohttpd's end of the connection
 * while it writes). Later stages of an admitted batch are never refused;
 * one that fails (the daemon stopping under it, out of memory) after its
 * answer began is cut: the connection closes without the last chunk.
 */
#include <stdlib.h>
#include <string.h>

#include "server/http_handler.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/solve.h"

/* Estimated microseconds of solving per batch chunk, and at most this
 * many bytes of its answer (proto_job_result_bytes, an upper estimate). */
#define BATCH_CHUNK_US 5000.0
#define BATCH_CHUNK_BYTES (1024.0 * 1024.0)
/* Chunks of text a streamed batch may hold beyond one per pool thread. */
#define BATCH_WINDOW_EXTRA 2

typedef struct batch batch;

typedef struct chunk {
    srv_solve solve;
    batch *b;
    char *text; /* its results' text (streamed), once solved */
    size_t len;
    size_t counts[PROTO_COUNT_BUCKETS];
    bool solved;
} chunk;

struct batch {
    srv_request *q;
    srv_work stage; /* decode */
    proto_error err;
    bool failed;    /* a stage failed: err holds the answer */
    bool cancelled; /* the client left: no more chunks */
    bool holds_slot;
    bool streamed;  /* answered in pieces as the chunks finish */
    bool binary;    /* answered in the binary form (proto_binary.c) */
    proto_items *items; /* a batch of items, else q->job */
    chunk *chunks;
    size_t nchunks, next_chunk, running;
    size_t next_out; /* streamed: the next chunk to write */
    size_t held;     /* streamed: chunks solved, waiting for an earlier one */
    size_t counts[PROTO_COUNT_BUCKETS];
    char *out; /* one chunk: the whole answer */
    size_t out_len;
};

void srv_http_batch_free(void *p)
{
    batch *b = p;
    if (!b)
        return;
    if (b->holds_slot)
        b->q->ctx->admitted--;
    for (size_t i = 0; i < b->nchunks; i++)
        free(b->chunks[i].text);
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

/* Targets (or items) of the batch. */
static size_t batch_count(const batch *b)
{
    return b->items ? proto_items_count(b->items) : proto_job_count(b->q->job);
}

/* The pieces of the answer in its form. */
static char *encode_head(const batch *b, size_t *len)
{
    if (b->items)
        return proto_items_encode_head(b->items, len);
    return b->binary ? proto_job_encode_binary_head(b->q->job, len)
                     : proto_job_encode_head(b->q->job, len);
}

static char *encode_results(const batch *b, size_t begin, size_t end,
                            size_t counts[PROTO_COUNT_BUCKETS], size_t *len)
{
    if (b->items)
        return proto_items_encode_results(b->items, begin, end, counts, len);
    return b->binary ? proto_job_encode_binary_results(b->q->job, begin, end, counts, len)
                     : proto_job_encode_results(b->q->job, begin, end, counts, len);
}

static char *encode_tail(const batch *b, const size_t counts[PROTO_COUNT_BUCKETS], size_t *len)
{
    if (b->items)
        return proto_items_encode_tail(b->items, counts, len);
    return b->binary ? proto_job_encode_binary_tail(b->q->job, counts, len)
                     : proto_job_encode_tail(b->q->job, counts, len);
}

/* One chunk's batch: the whole answer, its pieces joined. */
static char *encode_whole(const batch *b, size_t n, size_t *len)
{
    size_t counts[PROTO_COUNT_BUCKETS] = {0}, l[3];
    char *p[3];
    p[0] = encode_head(b, &l[0]);
    p[1] = encode_results(b, 0, n, counts, &l[1]);
    p[2] = encode_tail(b, counts, &l[2]);
    char *out = p[0] && p[1] && p[2] ? malloc(l[0] + l[1] + l[2] + 1) : NULL;
    if (out) {
        memcpy(out, p[0], l[0]);
        memcpy(out + l[0], p[1], l[1]);
        memcpy(out + l[0] + l[1], p[2], l[2]);
        out[l[0] + l[1] + l[2]] = '\0';
        *len = l[0] + l[1] + l[2];
    }
    for (int k = 0; k < 3; k++)
        free(p[k]);
    return out;
}

/* Pool thread, right after a chunk is solved: its text. */
static void chunk_encode(srv_solve *s)
{
    chunk *c = s->data;
    batch *b = c->b;
    if (!b->streamed)
        b->out = encode_whole(b, batch_count(b), &b->out_len);
    else
        c->text = encode_results(b, s->begin, s->end, c->counts, &c->len);
}

/* The answer's Content-Type. */
static const char *answer_type(const batch *b)
{
    return b->binary ? PROTO_BINARY_TYPE : NULL;
}

static void chunk_done(srv_solve *s, int status);

/* Whether the next chunk may go: chunks left, a pool thread for it, and,
 * streamed, the text held within the window. */
static bool may_submit(const batch *b)
{
    srv_request *q = b->q;
    if (q->dead || b->cancelled || b->failed || b->next_chunk >= b->nchunks)
        return false;
    size_t threads = q->ctx->cfg.threads;
    if (b->running >= threads)
        return false;
    /* proto_job_limit_results() relies on this bound */
    return !b->streamed ||
           b->running + b->held + srv_http_stream_queued(q) < threads + BATCH_WINDOW_EXTRA;
}

/* Submits the batch's next chunk; false when none could be. */
static bool submit_chunk(batch *b)
{
    if (!may_submit(b))
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

static void submit_chunks(batch *b)
{
    while (submit_chunk(b))
        ;
}

/* The client took a piece of the streamed answer: room for more. */
static void batch_drained(srv_request *q)
{
    submit_chunks(q->batch);
}

/* Streamed: writes the solved chunks that are next in order, then, after
 * the last, the tail. */
static void write_ready(batch *b)
{
    srv_request *q = b->q;
    while (b->next_out < b->nchunks && b->chunks[b->next_out].solved) {
        chunk *c = &b->chunks[b->next_out++];
        b->held--;
        for (int k = 0; k < PROTO_COUNT_BUCKETS; k++)
            b->counts[k] += c->counts[k];
        char *t = c->text;
        c->text = NULL;
        if (!t) {
            b->failed = true; /* out of memory */
            return;
        }
        srv_http_stream_write(q, t, c->len);
    }
    if (b->next_out < b->nchunks)
        return;
    size_t len;
    char *tail = encode_tail(b, b->counts, &len);
    if (!tail) {
        b->failed = true;
        return;
    }
    srv_http_stream_write(q, tail, len);
    srv_http_stream_end(q, true);
}

static void chunk_done(srv_solve *s, int status)
{
    chunk *c = s->data;
    batch *b = c->b;
    srv_request *q = b->q;
    b->running--;
    c->solved = status == SRV_OK;
    if (status != SRV_OK)
        b->failed = true;
    if (!q->dead && !b->cancelled && !b->failed && srv_http_client_gone(q)) {
        b->cancelled = true;
        srv_metrics_rejected(q->ctx, "batch_cancelled");
        srv_log(q->ctx, SRV_LOG_INFO, "batch of %zu %s cancelled: its client left",
                batch_count(b), b->items ? "items" : "targets");
    }
    if (b->streamed && !q->dead) {
        if (c->solved)
            b->held++;
        if (!b->cancelled && !b->failed)
            write_ready(b);
        if (b->cancelled || b->failed)
            srv_http_stream_end(q, false);
    }
    /* the next chunk queues behind whatever was submitted meanwhile (single
     * solves, stream targets), so a batch cannot starve them */
    submit_chunks(b);
    bool last = b->running == 0;
    if (!srv_http_release(q) || !last || b->streamed)
        return;
    if (b->cancelled) {
        fail(b, PROTO_E_INTERNAL, "the client left: the batch was cancelled");
        return;
    }
    if (b->failed) {
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    srv_response v = {0};
    v.status = 200;
    v.content_type = answer_type(b);
    v.body = b->out;
    v.len = b->out_len;
    b->out = NULL;
    if (!v.body) {
        fail(b, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    srv_http_respond(q, &v);
}

static void decode_work(srv_work *w)
{
    batch *b = w->data;
    srv_request *q = b->q;
    const proto_limits *lim = &q->ctx->cfg.limits;
    int rc = q->binary_in ? proto_batch_decode_binary(q->body, q->len, lim, srv_registry_lookup,
                                                      q->ctx->registry, &q->job, &b->err)
                          : proto_batch_decode(q->body, q->len, lim, srv_registry_lookup,
                                               q->ctx->registry, &q->job, &b->items, &b->err);
    if (rc)
        b->failed = true;
}

/* After the decode (loop thread, the request held): the error, or the
 * chunks. */
static void decode_answer(batch *b, int status)
{
    srv_request *q = b->q;
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
    /* the binary form when asked for and the batch has one */
    b->binary = q->binary_out && !b->items && proto_job_binary_ok(q->job);
    double bytes = (double)(b->items    ? proto_items_result_bytes(b->items)
                            : b->binary ? proto_job_binary_record(q->job)
                                        : proto_job_result_bytes(q->job));
    if (fit > BATCH_CHUNK_BYTES / bytes)
        fit = BATCH_CHUNK_BYTES / bytes;
    size_t per = fit < 16 ? 16 : fit > 4096 ? 4096 : (size_t)fit;
    size_t nchunks = (n + per - 1) / per; /* n >= 1: decoding refuses empty batches */
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
        c->solve.after = chunk_encode;
        c->solve.done = chunk_done;
        c->solve.data = c;
    }
    if (nchunks > 1) {
        size_t len;
        char *head = encode_head(b, &len);
        if (!head) {
            fail(b, PROTO_E_INTERNAL, "out of memory");
            return;
        }
        /* the chunks between the next one to write and the next one to
         * submit, each running or waiting to be written, number fewer than
         * the window: their results fit that many chunks' places */
        size_t window = q->ctx->cfg.threads + BATCH_WINDOW_EXTRA;
        if (!b->items && proto_job_limit_results(q->job, window * per)) {
            free(head);
            fail(b, PROTO_E_INTERNAL, "out of memory");
            return;
        }
        b->streamed = true;
        srv_http_stream_begin(q, 200, answer_type(b), batch_drained);
        srv_http_stream_write(q, head, len);
    }
    submit_chunks(b);
    if (b->running == 0) {
        if (b->streamed)
            srv_http_stream_end(q, false);
        else
            fail(b, PROTO_E_INTERNAL, "cannot queue work");
    }
}

static void decode_done(srv_work *w, int status)
{
    batch *b = w->data;
    srv_request *q = b->q;
    /* released last: answering runs libmicrohttpd, which may see the
     * client gone and end the request, freed by the last release */
    if (!q->dead)
        decode_answer(b, status);
    srv_http_release(q);
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
