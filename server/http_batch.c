/*
 * http_batch.c: POST /v1/solve/batch, a pipeline of pool stages; the loop
 * only moves bytes.
 *
 *   decode   one pool item decodes the body (proto_batch_decode: one
 *            chain's targets read without their jansson tree; or, when the
 *            body has "items", many rigs each with its own chain; or the
 *            binary form, proto_batch_decode_binary); a large text batch
 *            of one chain's targets is read in parts instead (issue 22:
 *            proto_batch_decode_parts reads all but the targets after the
 *            first, then parts of BATCH_PART_MIN targets and more, at most
 *            two per pool thread, are read side by side on the pool, the
 *            batch going on when the last one is in; a part that meets
 *            what the text mode declines sends the body to one more pool
 *            item that decodes it whole, which words the error);
 *            this is when the batch is admitted (--max-queue: 503 and
 *            Retry-After: 1 when that many units are admitted already), and
 *            it keeps one admission slot until it is answered. Its answer
 *            is reserved then against --answer-budget at the most it can
 *            hold at once (see "answer"): 503 when the answers held for
 *            clients leave no room for it, 413 when it could never fit
 *   chunks   the targets are solved in chunks sized from measured time:
 *            a batch's first chunk is small (BATCH_FIRST targets at most),
 *            each later one about BATCH_CHUNK_US at the time per target the
 *            batch's chunks took so far (solving and encoding), never more
 *            targets than fit BATCH_WORST_US at their time budget
 *            (proto_job_budget_us), so that a batch of expensive targets
 *            the cost model underrates cannot hold a pool thread for long,
 *            and never more than BATCH_CHUNK_BYTES of answer
 *            (proto_job_result_bytes, an upper estimate). Batch chunks from
 *            all batches together take at most one pool thread each
 *            (--threads of them queued or running), handed out round robin
 *            between the batches: a single solve or stream target queues
 *            behind the chunks that run, never behind a batch
 *            (server/solve.c solves, times and records each chunk). Each
 *            chunk's results are encoded on its pool thread right after
 *            they are solved (proto_job_encode_results)
 *   answer   a batch solved in one chunk is answered in one body: its
 *            reservation (proto_job_encode_bound) becomes the answer's
 *            length, given back when libmicrohttpd has sent it (or the
 *            client left), and the job is freed then. A larger one is
 *            written out as its chunks finish, in order (the head at once,
 *            each chunk's text when every chunk before it was written, the
 *            tail with the counts last: srv_http_stream_*, chunked
 *            transfer), so that its memory is bounded by the chunk size,
 *            not the batch: it is handed a chunk only while its chunks
 *            running, solved but waiting for an earlier one, and written
 *            but not yet taken by the client number fewer than
 *            BATCH_WINDOW_EXTRA plus the pool threads (the window). A slow
 *            client holds that many chunks' text and no more, which is
 *            what such a batch reserves until it ends; the client taking a
 *            piece (batch_drained) lets the next chunk go, and the job
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

#include <uv.h>

#include "server/http_handler.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/solve.h"

/* Microseconds of pool time (solving and encoding) a chunk aims at,
 * measured. */
#define BATCH_CHUNK_US 5000.0
/* Targets in a batch's chunks before any of them was measured. */
#define BATCH_FIRST 4
/* Targets in a chunk at most. */
#define BATCH_CHUNK_MAX 4096
/* A chunk's worst case (its targets' time budgets together), when more
 * than one target. */
#define BATCH_WORST_US 100000.0
/* A chunk's answer at most, bytes (an upper estimate). */
#define BATCH_CHUNK_BYTES (1024.0 * 1024.0)
/* Chunks of text a streamed batch may hold beyond one per pool thread. */
#define BATCH_WINDOW_EXTRA 2
/* The head and the tail of a streamed answer together, at most. */
#define BATCH_ENDS_BYTES 65536
/* A large batch's targets read in parts (proto_batch_decode_parts): this
 * many targets in a part at least (a millisecond or so of reading), and
 * bodies of this many bytes and more only (a smaller one is decoded whole
 * in less time than parts would save). */
#define BATCH_PART_MIN 4096
#define BATCH_PARTS_BYTES (256 * 1024)

typedef struct srv_batch batch;

/* A part of a large batch's targets, read on the pool
 * (proto_batch_decode_part). */
typedef struct decode_part {
    srv_solve solve;
    batch *b;
    size_t k;
    bool ok; /* its targets read */
} decode_part;

typedef struct chunk {
    srv_solve solve;
    batch *b;
    struct chunk *next; /* streamed: the next chunk in target order */
    char *text;         /* its results' text (streamed), once solved */
    size_t len;
    size_t counts[PROTO_COUNT_BUCKETS];
    double encode_s; /* the time its text took */
    bool solved;
} chunk;

struct srv_batch {
    srv_request *q;
    srv_solve stage; /* decode */
    proto_error err;
    bool failed;    /* a stage failed: err holds the answer */
    bool fetch;     /* ... for chain ids the shared registry may hold */
    bool cancelled; /* the client left: no more chunks */
    bool holds_slot; /* holds its unit of ctx->sh->admitted (from its decode) */
    /* a large batch's targets read in parts (decode_parts): *parts until
     * they are all in, parts_left of them queued or running */
    proto_batch_parts *parts;
    decode_part *part;
    size_t parts_left;
    bool parts_bad;      /* a part declined: decode the body whole */
    bool parts_cut;      /* the daemon stopped under a part, or one was
                            refused (answered then) */
    bool whole;          /* decode the body whole (after parts_bad) */
    bool streamed;  /* answered in pieces as the chunks finish */
    bool binary;    /* answered in the binary form (proto_binary.c) */
    bool finished;  /* answered, failed or cut: nothing more to do */
    proto_items *items; /* a batch of items, else q->job */
    double budget_us;   /* the largest time budget of one target (or item) */
    size_t per_max;     /* targets in a chunk at most */
    size_t result_bytes; /* one result's answer at most */
    size_t bound;       /* the most the answer can take (decode_work) */
    size_t reserved;    /* bytes of the budget ctx->sh->answer_bytes reserved for
                           the answer */
    size_t next;        /* first target not yet handed to a chunk */
    size_t running;     /* chunks queued or running */
    double us_per_target; /* measured so far (0: nothing measured) */
    bool queued;        /* waits in the ctx's round robin (holds q) */
    batch *qnext;
    chunk *first, *last; /* streamed: chunks not yet written, in order */
    size_t held;         /* streamed: chunks solved, waiting for an earlier one */
    size_t counts[PROTO_COUNT_BUCKETS];
    char *out; /* one chunk: the whole answer */
    size_t out_len;
};

void srv_http_batch_free(void *p)
{
    batch *b = p;
    if (!b)
        return;
    srv_ctx *ctx = b->q->ctx;
    if (b->holds_slot)
        srv_budget_release(&ctx->sh->admitted, 1);
    srv_budget_release(&ctx->sh->answer_bytes, b->reserved);
    while (b->first) {
        chunk *c = b->first;
        b->first = c->next;
        free(c->text);
        free(c);
    }
    free(b->out);
    proto_items_free(b->items);
    proto_batch_parts_free(b->parts);
    free(b->part);
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

/* ---- the answer's pieces ----------------------------------------------------- */

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
    uint64_t t0 = uv_hrtime();
    if (!b->streamed)
        b->out = encode_whole(b, batch_count(b), &b->out_len);
    else
        c->text = encode_results(b, s->begin, s->end, c->counts, &c->len);
    c->encode_s = (double)(uv_hrtime() - t0) * 1e-9;
}

/* The answer's Content-Type. */
static const char *answer_type(const batch *b)
{
    return b->binary ? PROTO_BINARY_TYPE : NULL;
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
    size_t n = per < 1 ? 1 : per > (double)b->per_max ? b->per_max : (size_t)per;
    size_t left = batch_count(b) - b->next;
    return n < left ? n : left;
}

/* The most targets a chunk of b may have, whatever is measured. */
static size_t chunk_max(const batch *b)
{
    double per = BATCH_CHUNK_MAX;
    if (b->budget_us > 0 && per > BATCH_WORST_US / b->budget_us)
        per = BATCH_WORST_US / b->budget_us;
    if (per > BATCH_CHUNK_BYTES / (double)b->result_bytes)
        per = BATCH_CHUNK_BYTES / (double)b->result_bytes;
    return per < 1 ? 1 : (size_t)per;
}

static size_t window(const batch *b)
{
    return b->q->ctx->cfg.threads + BATCH_WINDOW_EXTRA;
}

static bool has_targets(const batch *b)
{
    return !b->cancelled && !b->failed && !b->q->dead && b->next < batch_count(b);
}

/* Targets left, and, streamed, the text held within the window
 * (proto_job_limit_results() relies on this bound). */
static bool may_hand_out(const batch *b)
{
    return has_targets(b) &&
           (!b->streamed ||
            b->running + b->held + srv_http_stream_queued(b->q) < window(b));
}

/* The round robin of batches that may be handed a chunk is
 * ctx->batch_head..batch_tail; the budget ctx->sh->batch_chunks holds one unit
 * per chunk of any batch on the pool (at most --threads). A streamed batch whose window
 * is full waits outside it until its client takes a piece. */
static void ready_push(batch *b)
{
    if (b->queued || !may_hand_out(b))
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

/* The head of the round robin, b, is handed its next chunk: true when
 * the chunk went to the pool (holding the unit of ctx->sh->batch_chunks the
 * caller reserved for it). */
static bool hand_out(srv_ctx *ctx, batch *b)
{
    b->queued = false;
    srv_request *q = b->q;
    if (!srv_http_release(q))
        return false; /* the client left and nothing else held the batch */
    if (!may_hand_out(b)) {
        finish_if_done(b); /* or its window is full: drained pushes it */
        return false;
    }
    chunk *c = calloc(1, sizeof *c);
    if (!c) {
        b->failed = true;
        finish_if_done(b);
        return false;
    }
    c->b = b;
    c->solve.job = q->job;
    c->solve.items = b->items;
    c->solve.begin = b->next;
    c->solve.end = b->next + chunk_size(b);
    c->solve.after = chunk_encode;
    c->solve.done = chunk_done;
    c->solve.data = c;
    c->solve.stage = true; /* the batch was admitted at its decode */
    if (srv_http_submit(q, &c->solve) != SRV_OK) {
        free(c);
        b->failed = true;
        finish_if_done(b);
        return false;
    }
    b->next = c->solve.end;
    if (b->streamed) {
        if (b->last)
            b->last->next = c;
        else
            b->first = c;
        b->last = c;
    }
    b->running++;
    ready_push(b); /* behind the other batches */
    return true;
}

/* Hands out chunks round robin while pool threads are free of batch
 * chunks. The units are the process's (every loop's batches share
 * --threads of them): a loop whose batches still wait when they run out
 * says so (ctx->batch_waiting), and a loop that gives one back wakes it
 * (wake_others). */
static void pump(srv_ctx *ctx)
{
    while (ctx->batch_head && srv_budget_reserve(&ctx->sh->batch_chunks, 1)) {
        batch *b = ctx->batch_head;
        ctx->batch_head = b->qnext;
        if (!ctx->batch_head)
            ctx->batch_tail = NULL;
        if (!hand_out(ctx, b))
            srv_budget_release(&ctx->sh->batch_chunks, 1);
    }
    bool waiting = ctx->batch_head != NULL;
    if (waiting != atomic_load_explicit(&ctx->batch_waiting, memory_order_relaxed))
        atomic_store(&ctx->batch_waiting, waiting);
    /* a unit given back between the last reserve and the store above saw
     * no waiting loop: look again */
    if (waiting && ctx->batch_wake && srv_budget_fits(&ctx->sh->batch_chunks, 1))
        uv_async_send(ctx->batch_wake);
}

/* A unit of sh->batch_chunks was given back: the other loops whose batches
 * wait for one are woken (their pump takes it, or another loop's). */
static void wake_others(srv_ctx *ctx)
{
    srv_shared *sh = ctx->sh;
    if (sh->nloops < 2 || !srv_budget_fits(&sh->batch_chunks, 1))
        return;
    for (unsigned i = 0; i < sh->nloops; i++) {
        srv_ctx *o = sh->loops[i];
        if (o != ctx && atomic_load(&o->batch_waiting) && o->batch_wake)
            uv_async_send(o->batch_wake);
    }
}

static void on_batch_wake(uv_async_t *a)
{
    pump(a->data);
}

int srv_http_batch_start(srv_ctx *ctx)
{
    uv_async_t *a = malloc(sizeof *a);
    if (!a)
        return SRV_ENOMEM;
    if (uv_async_init(ctx->loop, a, on_batch_wake) != 0) {
        free(a);
        return SRV_EIO;
    }
    a->data = ctx;
    /* it never keeps the loop running; other loops may wake it until they
     * all ended (srv_http_batch_close) */
    uv_unref((uv_handle_t *)a);
    ctx->batch_wake = a;
    return SRV_OK;
}

static void batch_wake_closed(uv_handle_t *h)
{
    free(h);
}

void srv_http_batch_close(srv_ctx *ctx)
{
    if (!ctx->batch_wake)
        return;
    uv_close((uv_handle_t *)ctx->batch_wake, batch_wake_closed);
    ctx->batch_wake = NULL;
}

/* The client took a piece of the streamed answer: room for more (loop
 * thread, inside libmicrohttpd's content reader). */
static void batch_drained(srv_request *q)
{
    batch *b = q->batch;
    ready_push(b);
    pump(q->ctx);
}

/* Streamed: writes the solved chunks that are next in order, then, after
 * the last, the tail. */
static void write_ready(batch *b)
{
    srv_request *q = b->q;
    while (b->first && b->first->solved) {
        chunk *c = b->first;
        b->first = c->next;
        if (!b->first)
            b->last = NULL;
        b->held--;
        for (int k = 0; k < PROTO_COUNT_BUCKETS; k++)
            b->counts[k] += c->counts[k];
        char *t = c->text;
        size_t len = c->len;
        free(c);
        if (!t) {
            b->failed = true; /* out of memory */
            return;
        }
        srv_http_stream_write(q, t, len);
    }
    if (b->first || b->running > 0 || b->next < batch_count(b))
        return;
    size_t len;
    char *tail = encode_tail(b, b->counts, &len);
    if (!tail) {
        b->failed = true;
        return;
    }
    b->finished = true;
    srv_http_stream_write(q, tail, len);
    srv_http_stream_end(q, true);
}

/* After a chunk or a hand-out that ended the batch's solving: once nothing
 * of it runs, its answer (or its failure). */
static void finish_if_done(batch *b)
{
    srv_request *q = b->q;
    if (b->finished || b->running > 0 || b->queued || q->dead || has_targets(b))
        return;
    b->finished = true;
    if (b->streamed) {
        /* a complete answer ended in write_ready */
        srv_http_stream_end(q, false);
        return;
    }
    if (b->cancelled) {
        fail(b, PROTO_E_INTERNAL, "the client left: the batch was cancelled");
        return;
    }
    if (b->failed || !b->out) {
        fail(b, PROTO_E_INTERNAL, b->failed ? "the daemon is shutting down" : "out of memory");
        return;
    }
    /* the job is not needed any more (its results are in the answer, which
     * a client that does not read would hold too); the reservation becomes
     * what the answer really holds, until libmicrohttpd lets go of it */
    proto_job_free(q->job);
    q->job = NULL;
    proto_items_free(b->items);
    b->items = NULL;
    srv_ctx *ctx = q->ctx;
    if (b->out_len <= b->reserved)
        srv_budget_release(&ctx->sh->answer_bytes, b->reserved - b->out_len);
    else
        srv_budget_take(&ctx->sh->answer_bytes, b->out_len - b->reserved);
    b->reserved = 0;
    srv_response v = {0};
    v.status = 200;
    v.content_type = answer_type(b);
    v.body = b->out;
    v.len = b->out_len;
    v.held = b->out_len;
    b->out = NULL;
    srv_http_respond(q, &v);
}

static void chunk_done(srv_solve *s, int status)
{
    chunk *c = s->data;
    batch *b = c->b;
    srv_request *q = b->q;
    srv_ctx *ctx = q->ctx;
    size_t n = s->end - s->begin;
    double us = (s->seconds + c->encode_s) * 1e6 / (double)(n ? n : 1);
    b->running--;
    srv_budget_release(&ctx->sh->batch_chunks, 1);
    c->solved = status == SRV_OK;
    if (status != SRV_OK)
        b->failed = true;
    else
        b->us_per_target = b->us_per_target > 0 ? 0.5 * (b->us_per_target + us) : us;
    if (!b->streamed)
        free(c);
    if (!q->dead && !b->cancelled && !b->failed && srv_http_client_gone(q)) {
        b->cancelled = true;
        srv_metrics_rejected(ctx, "batch_cancelled");
        srv_log(ctx, SRV_LOG_INFO, "batch of %zu %s cancelled: its client left",
                batch_count(b), b->items ? "items" : "targets");
    }
    if (b->streamed && !q->dead && !b->finished) {
        if (c->solved)
            b->held++;
        if (!b->cancelled && !b->failed)
            write_ready(b);
        if (b->cancelled || b->failed) {
            b->finished = true;
            srv_http_stream_end(q, false);
        }
    }
    ready_push(b);
    /* the chunk's hold is released last: writing runs libmicrohttpd, which
     * may see the client gone and end the request */
    if (srv_http_release(q))
        finish_if_done(b);
    pump(ctx);
    wake_others(ctx);
}

/* ---- decoding and admission ------------------------------------------------- */

static void decode_work(srv_ctx *ctx, srv_solve *s)
{
    batch *b = s->data;
    srv_request *q = b->q;
    const proto_limits *lim = &ctx->cfg.limits;
    proto_chain_lookup_fn lookup;
    void *ud;
    srv_http_lookup(q, &lookup, &ud);
    int rc = -1;
    if (!q->binary_in && !b->whole && q->len >= BATCH_PARTS_BYTES)
        rc = proto_batch_decode_parts(q->body, q->len, lim, lookup, ud, BATCH_PART_MIN,
                                      2 * (size_t)ctx->cfg.threads, &q->job, &b->parts) < 0
                 ? -1
                 : 0; /* in parts (decode_parts), or whole already */
    if (rc)
        rc = q->binary_in ? proto_batch_decode_binary(q->body, q->len, lim, lookup, ud, &q->job,
                                                      &b->err)
                          : proto_batch_decode(q->body, q->len, lim, lookup, ud, &q->job,
                                               &b->items, &b->err);
    if (rc) {
        b->failed = true;
        /* the body is scanned here, off the loop, for the ids to fetch */
        b->fetch = srv_http_chains_missed(q, &b->err);
        return;
    }
    if (srv_http_chains_missed(q, NULL)) {
        /* items naming ids the shared registry may hold: fetched first */
        b->fetch = true;
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

/* Reserves the most b's answer can hold at once against --answer-budget:
 * its whole length, or, streamed, its window of chunks; false (answered
 * 503 or 413) when it does not fit. */
static bool reserve_answer(batch *b)
{
    srv_request *q = b->q;
    srv_ctx *ctx = q->ctx;
    size_t bound = b->bound;
    if (b->streamed) {
        size_t win = BATCH_ENDS_BYTES + window(b) * (64 + b->per_max * b->result_bytes);
        if (win < bound)
            bound = win;
    }
    size_t budget = ctx->cfg.answer_budget_bytes;
    proto_error e;
    if (bound > budget) {
        proto_error_set(&e, PROTO_E_TOO_LARGE, b->items ? "/items" : "/targets",
                        "the answer to %zu %s may hold %zu bytes at once, more than the "
                        "answer budget (--answer-budget %zu): send fewer per batch",
                        batch_count(b), b->items ? "items" : "targets", bound, budget);
        srv_metrics_rejected(ctx, "too_large");
        srv_http_respond_error(q, &e);
        return false;
    }
    if (!srv_budget_reserve(&ctx->sh->answer_bytes, bound)) {
        proto_error_set(&e, PROTO_E_OVERLOADED, "",
                        "answers waiting for their clients fill the answer budget "
                        "(--answer-budget); retry later");
        srv_metrics_rejected(ctx, "answer_budget");
        srv_http_respond_error(q, &e);
        return false;
    }
    b->reserved = bound;
    return true;
}

/* The chain ids the decode missed are in (fetched into q's scope): the
 * decode again, as a later stage of the admitted batch (its unit of
 * --max-queue is still held). */
static void decode_again(srv_request *q)
{
    batch *b = q->batch;
    b->failed = b->fetch = false;
    proto_items_free(b->items); /* a decode that missed some items' ids */
    b->items = NULL;
    proto_batch_parts_free(b->parts);
    b->parts = NULL;
    proto_job_free(q->job);
    q->job = NULL;
    b->stage.stage = true;
    b->stage.keep_admission = false;
    if (srv_http_submit(q, &b->stage) != SRV_OK)
        return; /* answered */
}

/* ---- a large batch's targets in parts ---------------------------------------- */

static void decode_answer(batch *b, int status);

static void part_work(srv_ctx *ctx, srv_solve *s)
{
    (void)ctx;
    decode_part *p = s->data;
    p->ok = proto_batch_decode_part(p->b->q->job, p->b->parts, p->k) == 0;
}

/* Every part is in (loop thread, the request held by the last one): the
 * batch goes on, or its body is decoded whole (a part declined). */
static void parts_in(batch *b)
{
    srv_request *q = b->q;
    proto_batch_parts_free(b->parts);
    b->parts = NULL;
    if (b->parts_cut) {
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    if (!b->parts_bad) {
        decode_answer(b, SRV_OK);
        return;
    }
    /* what the text mode declines: the body decoded whole reads it or
     * words its error (admitted already: a stage) */
    proto_job_free(q->job);
    q->job = NULL;
    b->whole = true;
    b->stage.stage = true;
    b->stage.keep_admission = false;
    srv_http_submit(q, &b->stage); /* refused: answered */
}

static void part_done(srv_solve *s, int status)
{
    decode_part *p = s->data;
    batch *b = p->b;
    srv_request *q = b->q;
    if (status != SRV_OK)
        b->parts_cut = true;
    else if (!p->ok)
        b->parts_bad = true;
    /* (p is b->part's, freed with the batch) */
    if (--b->parts_left == 0 && !q->dead && !b->finished)
        parts_in(b);
    srv_http_release(q);
}

/* The parts go to the pool, each a stage of the admitted batch. */
static void decode_parts(batch *b)
{
    srv_request *q = b->q;
    size_t n = proto_batch_parts_count(b->parts);
    b->part = calloc(n, sizeof *b->part);
    if (!b->part) {
        fail(b, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    b->parts_left = n;
    for (size_t k = 0; k < n; k++) {
        decode_part *p = &b->part[k];
        p->b = b;
        p->k = k;
        p->solve.work = part_work;
        p->solve.done = part_done;
        p->solve.data = p;
        p->solve.stage = true;
        if (srv_http_submit(q, &p->solve) != SRV_OK) {
            /* answered: the parts queued end, and nothing follows them */
            b->parts_left -= n - k;
            b->parts_cut = true;
            b->finished = true;
            return;
        }
    }
}

/* After the decode (loop thread, the request held): the error, the fetch
 * of chain ids the shared registry may hold, or the chunks. */
static void decode_answer(batch *b, int status)
{
    srv_request *q = b->q;
    if (status != SRV_OK) {
        fail(b, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    if (b->fetch) {
        srv_http_chains_fetch(q, b->failed ? &b->err : NULL, decode_again);
        return;
    }
    if (b->failed) {
        srv_http_respond_error(q, &b->err);
        return;
    }
    if (b->parts) { /* its targets still to read, in parts */
        decode_parts(b);
        return;
    }
    srv_http_body_release(q); /* the job holds what it needs */
    size_t n = batch_count(b);
    /* the binary form when asked for and the batch has one */
    b->binary = q->binary_out && !b->items && proto_job_binary_ok(q->job);
    b->result_bytes = b->items    ? proto_items_result_bytes(b->items)
                      : b->binary ? proto_job_binary_record(q->job)
                                  : proto_job_result_bytes(q->job);
    if (b->result_bytes == 0)
        b->result_bytes = 1;
    b->per_max = chunk_max(b);
    b->streamed = n > chunk_size(b); /* more than one chunk */
    if (!reserve_answer(b))
        return;
    if (n == 0) { /* decoding refuses empty batches; answered all the same */
        b->out = encode_whole(b, 0, &b->out_len);
        finish_if_done(b);
        return;
    }
    if (b->streamed) {
        size_t len;
        char *head = encode_head(b, &len);
        if (!head) {
            fail(b, PROTO_E_INTERNAL, "out of memory");
            return;
        }
        /* the chunks between the next one to write and the next one to
         * hand out, each running or waiting to be written, number fewer
         * than the window: their results fit that many chunks' places */
        if (!b->items && proto_job_limit_results(q->job, window(b) * b->per_max)) {
            free(head);
            fail(b, PROTO_E_INTERNAL, "out of memory");
            return;
        }
        srv_http_stream_begin(q, 200, answer_type(b), batch_drained);
        srv_http_stream_write(q, head, len);
    }
    ready_push(b);
    pump(q->ctx);
}

static void decode_done(srv_solve *s, int status)
{
    batch *b = s->data;
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
    b->stage.work = decode_work;
    b->stage.done = decode_done;
    b->stage.data = b;
    /* the batch is admitted here and keeps its unit of --max-queue until
     * it is answered (freed with q) */
    b->stage.keep_admission = true;
    if (srv_http_submit(q, &b->stage) == SRV_OK)
        b->holds_slot = true; /* refused: answered, b freed with q */
}
