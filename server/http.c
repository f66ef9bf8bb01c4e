/*
 * http.c: the HTTP side of ikd: routing, request bodies, and the policy that
 * decides where a solve runs.
 *
 * Endpoints (JSON in and out, Content-Type application/json):
 *   POST   /v1/solve          one target            -> 200 proto_job_encode()
 *   POST   /v1/solve/batch    many targets          -> 200 proto_job_encode()
 *   POST   /v1/chains         register a chain      -> 201 (new) / 200 (known), id
 *   GET    /v1/chains/{id}    describe it           -> 200 / 404
 *   DELETE /v1/chains/{id}    forget it             -> 204 / 404
 *   GET    /v1/solvers        solvers and options   -> 200
 *   GET    /v1/stream         WebSocket upgrade     -> 101 (server/ws.c)
 *   GET    /livez             the process runs      -> 200 (no token needed)
 *   GET    /readyz            accepting work        -> 200, 503 while shutting down
 *   GET    /metrics           Prometheus text       -> 200
 *   GET    /openapi.yaml      the API contract      -> 200 (no token needed)
 *   GET    / and /NAME        the live page (--web)  -> 200 from memory (web.h),
 *                                                        no token needed
 *   OPTIONS on any of them    CORS preflight        -> 204, no token needed;
 *                                                        403 for an Origin outside
 *                                                        --allow-origin
 * A POST or DELETE whose Origin is outside --allow-origin gets 403
 * forbidden_origin before its body is read: browsers send some cross-origin
 * requests (Content-Type text/plain) without a preflight.
 * Answers to an allowed Origin carry Access-Control-Allow-Origin (add_cors).
 * Errors carry proto_error_format()'s body: wrong method 405 (with Allow),
 * unknown path 404, missing/wrong bearer token 401, body over --max-body
 * 413, bad JSON 400, pool queue full 503 with Retry-After.
 *
 * How one request flows through libmicrohttpd's access handler:
 *   1st call (headers): allocate the request, route it, check method and
 *       token, check Content-Length. Nothing is queued here (queuing on the
 *       first call makes libmicrohttpd close the connection and cut
 *       throughput fourfold), except 413 on an oversized Content-Length,
 *       where closing is what we want: the body is never read.
 *   body calls: append to the request's buffer. Past --max-body (a chunked
 *       body without Content-Length) the buffer is dropped, the rest of the
 *       body is read and discarded (libmicrohttpd cannot answer mid-body)
 *       and 413 is answered at the end; a body that runs on beyond twice the
 *       limit makes us close the connection without an answer.
 *   final call (upload_data_size 0): answer, or hand the work to the pool.
 *
 * Where solves run (the policy):
 *   - POST /v1/solve: decoded on the loop when its body is at most
 *     LOOP_DECODE_MAX (64 KiB; a larger one is decoded, solved and encoded
 *     by one pool item, as is a POST /v1/chains body, which is registered
 *     on the loop afterwards). If proto_job_cost_us() is below
 *     --inline-cost-us (default 5 us: the analytic seed solvers), it is
 *     solved and encoded inline, right in the final call: a hop to the pool
 *     and back costs 10-30 us, far more than the solve. Otherwise the
 *     connection is suspended and one pool item solves and encodes.
 *   - POST /v1/solve/batch: every stage runs on the pool, the loop only
 *     moves bytes: one item decodes, then the targets are split into chunks
 *     of about BATCH_CHUNK_US of estimated work, at most one per pool thread
 *     in flight (the next one is submitted when one completes, behind what
 *     arrived meanwhile, so single solves and stream targets wait for one
 *     chunk, not the batch), then one item encodes. A batch whose client
 *     closed its connection is cancelled at its next chunk (client_gone).
 *     Admission is decided once, when the first stage is submitted: if
 *     --max-queue units are admitted already (ctx->admitted: a batch holds
 *     one from its decode to its answer) the request gets 503 + Retry-After:
 *     1 and a JSON error; later stages of admitted work are never refused.
 *   - A suspended connection is resumed on the loop thread when its last
 *     stage completes, followed by srv_mhd_run() (libmicrohttpd does not
 *     wake the loop by itself); the prepared response is queued when the
 *     access handler is called again.
 *
 * Vanishing clients: a request's memory is freed by the request-completed
 * notification, unless pool work for it is still outstanding; then the
 * notification only marks it dead and the last stage's completion frees it
 * (the result is discarded, nothing touches the gone connection).
 *
 * Not here: the loop glue (loop.c), flags and startup/shutdown (serve.c,
 * config.c), WebSocket framing (ws*.c), the JSON format (proto/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "proto/proto_json.h"
#include "server/build_info.h"
#include "server/guard.h"
#include "server/http.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/srv.h"
#include "server/web.h"
#include "server/ws.h"
#include "server/ws_handshake.h"

/* ---- status of an error --------------------------------------------------- */

int srv_http_status(proto_errcode code)
{
    switch (code) {
#define SRV_HTTP_STATUS_CASE(name, wire, http, moveit, text)                                      \
    case PROTO_E_##name:                                                                           \
        return http;
        PROTO_ERROR_MAP(SRV_HTTP_STATUS_CASE)
#undef SRV_HTTP_STATUS_CASE
    default:
        return 500;
    }
}

/* ---- routes ------------------------------------------------------------ */

enum route {
    RT_SOLVE,
    RT_BATCH,
    RT_CHAINS,
    RT_CHAIN_ID,
    RT_SOLVERS,
    RT_STREAM,
    RT_LIVEZ,
    RT_READYZ,
    RT_METRICS,
    RT_OPENAPI,
    RT_STATIC,
    RT_NONE
};

enum method { M_GET = 1, M_HEAD = 2, M_POST = 4, M_DELETE = 8, M_OPTIONS = 16, M_OTHER = 32 };

static const struct route_def {
    const char *path; /* NULL for RT_CHAIN_ID (prefix match) and RT_NONE */
    const char *label;
    unsigned methods;
    const char *allow;
    bool open;        /* no token needed */
    bool takes_body;
} routes[] = {
    [RT_SOLVE] = {"/v1/solve", "/v1/solve", M_POST, "POST", false, true},
    [RT_BATCH] = {"/v1/solve/batch", "/v1/solve/batch", M_POST, "POST", false, true},
    [RT_CHAINS] = {"/v1/chains", "/v1/chains", M_POST, "POST", false, true},
    [RT_CHAIN_ID] = {NULL, "/v1/chains/{id}", M_GET | M_HEAD | M_DELETE, "GET, HEAD, DELETE",
                     false, false},
    [RT_SOLVERS] = {"/v1/solvers", "/v1/solvers", M_GET | M_HEAD, "GET, HEAD", false, false},
    [RT_STREAM] = {"/v1/stream", "/v1/stream", M_GET, "GET", false, false},
    [RT_LIVEZ] = {"/livez", "/livez", M_GET | M_HEAD, "GET, HEAD", true, false},
    [RT_READYZ] = {"/readyz", "/readyz", M_GET | M_HEAD, "GET, HEAD", true, false},
    [RT_METRICS] = {"/metrics", "/metrics", M_GET | M_HEAD, "GET, HEAD", false, false},
    [RT_OPENAPI] = {"/openapi.yaml", "/openapi.yaml", M_GET | M_HEAD, "GET, HEAD", true, false},
    [RT_STATIC] = {NULL, "static", M_GET | M_HEAD, "GET, HEAD", true, false},
    [RT_NONE] = {NULL, "other", 0, NULL, true, false},
};

#define CHAINS_PREFIX "/v1/chains/"

/* Request bodies above this many bytes (a large single solve, a URDF chain
 * registration) are decoded on the pool: parsing megabytes of JSON or XML
 * takes milliseconds, which the loop owes every other client. Below it a
 * decode takes microseconds and a pool hop would cost more. */
#define LOOP_DECODE_MAX (64 * 1024)

/* Estimated microseconds of solving per batch chunk (see decode_done). */
#define BATCH_CHUNK_US 5000.0

static enum route route_of(const char *url)
{
    for (int i = 0; i < RT_NONE; i++)
        if (routes[i].path && strcmp(url, routes[i].path) == 0)
            return (enum route)i;
    size_t n = strlen(CHAINS_PREFIX);
    if (strncmp(url, CHAINS_PREFIX, n) == 0 && url[n] && !strchr(url + n, '/'))
        return RT_CHAIN_ID;
    return RT_NONE;
}

static enum method method_of(const char *m)
{
    if (strcmp(m, "GET") == 0)
        return M_GET;
    if (strcmp(m, "POST") == 0)
        return M_POST;
    if (strcmp(m, "HEAD") == 0)
        return M_HEAD;
    if (strcmp(m, "DELETE") == 0)
        return M_DELETE;
    if (strcmp(m, "OPTIONS") == 0)
        return M_OPTIONS;
    return M_OTHER;
}

/* ---- the request -------------------------------------------------------- */

enum req_state {
    ST_READING,  /* headers/body arriving */
    ST_WORKING,  /* connection suspended, pool work outstanding */
    ST_READY,    /* resp prepared by pool completion, to queue on next call */
    ST_ANSWERED  /* a response was queued */
};

typedef struct http_req http_req;

typedef struct chunk {
    srv_work w;
    http_req *req;
    size_t begin, end;
    double seconds; /* wall time of the chunk, measured on its pool thread */
} chunk;

struct http_req {
    srv_ctx *ctx;
    struct MHD_Connection *conn;
    enum route route;
    enum method method;
    enum req_state state;
    bool dead;            /* the connection is gone; discard results */
    bool preflight;       /* a CORS preflight (OPTIONS) on a known route */
    bool suspended;
    unsigned status_sent; /* for metrics; 0 = none */

    proto_error err;      /* set when the request is refused before dispatch */
    bool has_err;

    char *body;
    size_t len, cap;
    size_t held;          /* bytes of ctx->body_bytes this request accounts for */
    bool received;        /* the request is in whole (srv_guard_received) */
    size_t discarded;     /* body bytes read and thrown away after a refusal */

    /* Pool stages. */
    proto_job *job;
    proto_chain *chain;   /* POST /v1/chains decoded on the pool, to register */
    chunk stage;          /* decode / single solve / encode item */
    chunk *chunks;
    size_t nchunks, pending;
    size_t next_chunk;    /* the next chunk to submit (a few run at a time) */
    bool holds_slot;      /* a batch past its decode: one ctx->admitted slot */
    bool cancelled;       /* the batch's client left: no more chunks */
    bool failed;          /* a stage failed: err holds the answer */
    char *out;            /* encoded body */
    size_t out_len;
    unsigned ready_status;
    bool ready_retry;     /* add Retry-After to the prepared error */
};

static void req_free(http_req *r)
{
    r->ctx->active_requests--;
    r->ctx->body_bytes -= r->held;
    if (r->holds_slot)
        r->ctx->admitted--;
    proto_job_free(r->job);
    proto_chain_unref(r->chain);
    free(r->chunks);
    free(r->body);
    free(r->out);
    free(r);
}

/* ---- responses ---------------------------------------------------------- */

/* Browsers (web animation tools) call ikd from pages of other origins:
 * every answer to a request whose Origin is allowed (the --allow-origin list,
 * any Origin when there is none, as for WebSocket upgrades) says so, and
 * lets the page read Retry-After and Location. An Origin outside the list
 * gets no CORS headers, so the browser keeps the answer from the page. */
static void add_cors(http_req *r, struct MHD_Response *resp)
{
    const char *origin =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    if (!origin || !srv_ws_origin_allowed(origin, (const char *const *)r->ctx->cfg.allow_origins,
                                          r->ctx->cfg.n_allow_origins))
        return;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ORIGIN);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_EXPOSE_HEADERS, "Retry-After, Location");
}

static enum MHD_Result queue(http_req *r, unsigned status, struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO;
    if (status != MHD_HTTP_SWITCHING_PROTOCOLS)
        add_cors(r, resp);
    /* while draining, every answer ends its connection, so that a
     * keep-alive client sends nothing more that could go unanswered */
    if (r->ctx->shutting_down && status != MHD_HTTP_SWITCHING_PROTOCOLS)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    r->status_sent = status;
    r->state = ST_ANSWERED;
    return rc;
}

/* Takes ownership of body (malloc'd). */
static struct MHD_Response *json_response(char *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    return resp;
}

static enum MHD_Result answer_json(http_req *r, unsigned status, json_t *v)
{
    char *s = v ? proto_json_dump(v, false) : NULL;
    json_decref(v);
    if (!s)
        return MHD_NO;
    return queue(r, status, json_response(s, strlen(s)));
}

static struct MHD_Response *error_response(const proto_error *e, const char *allow,
                                           bool retry)
{
    size_t n = proto_error_format(e, NULL, 0);
    char *buf = malloc(n + 1);
    if (!buf)
        return NULL;
    proto_error_format(e, buf, n + 1);
    struct MHD_Response *resp = json_response(buf, n);
    if (resp && allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (resp && retry)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (resp && e->code == PROTO_E_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    return resp;
}

static enum MHD_Result answer_error(http_req *r, const proto_error *e)
{
    const char *allow = e->code == PROTO_E_METHOD_NOT_ALLOWED ? routes[r->route].allow
                                                                        : NULL;
    int status = srv_http_status(e->code);
    bool retry = status == MHD_HTTP_SERVICE_UNAVAILABLE;
    return queue(r, (unsigned)status, error_response(e, allow, retry));
}

static void refuse(http_req *r, proto_errcode code, const char *reason, const char *msg)
{
    proto_error_set(&r->err, code, "", "%s", msg);
    r->has_err = true;
    if (reason)
        srv_metrics_rejected(r->ctx, reason);
}

/* ---- authentication ---------------------------------------------------- */

/* No Origin (not a browser), or one --allow-origin allows. */
static bool origin_allowed(http_req *r)
{
    const char *origin =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    return srv_ws_origin_allowed(origin, (const char *const *)r->ctx->cfg.allow_origins,
                                 r->ctx->cfg.n_allow_origins);
}

bool srv_http_token_ok(const char *header, const char *token)
{
    static const char prefix[] = "Bearer ";
    const char *have = "";
    if (header && strncasecmp(header, prefix, sizeof prefix - 1) == 0)
        have = header + sizeof prefix - 1;
    /* Constant time in the length of the expected token: every byte of it
     * is compared whatever the header holds. */
    size_t hl = strlen(have), tl = strlen(token);
    unsigned char diff = (unsigned char)(hl != tl);
    for (size_t i = 0; i < tl; i++) {
        unsigned char h = i < hl ? (unsigned char)have[i] : 0;
        diff |= (unsigned char)(h ^ (unsigned char)token[i]);
    }
    return diff == 0 && tl > 0;
}

/* The token comes in Authorization: Bearer, or, on the stream upgrade only,
 * as a Sec-WebSocket-Protocol element (ws_handshake.h: browsers cannot set
 * Authorization on a WebSocket). Neither is ever logged. */
static bool authorized(http_req *r)
{
    const char *token = r->ctx->cfg.token;
    if (srv_http_token_ok(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                      MHD_HTTP_HEADER_AUTHORIZATION),
                          token))
        return true;
    return r->route == RT_STREAM &&
           srv_ws_protocol_bearer(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                              "Sec-WebSocket-Protocol"),
                                  token) == SRV_WS_BEARER_OK;
}

/* ---- pool stages ------------------------------------------------------- */

static double elapsed_s(uint64_t t0)
{
    return (double)(uv_hrtime() - t0) * 1e-9;
}

/* Resumes the suspended connection with the prepared answer (loop thread). */
static void finish_stage(http_req *r)
{
    r->state = ST_READY;
    r->suspended = false;
    MHD_resume_connection(r->conn);
    srv_mhd_run(r->ctx);
}

static void fail_stage(http_req *r, proto_errcode code, const char *msg)
{
    proto_error_set(&r->err, code, "", "%s", msg);
    r->failed = true;
    r->ready_status = (unsigned)srv_http_status(code);
    finish_stage(r);
}

/* Solve (and, for single solves, encode) on a pool thread. */
static void encode_work(srv_work *w)
{
    chunk *c = w->data;
    http_req *r = c->req;
    r->out = proto_job_encode(r->job, &r->out_len);
}

static void single_work(srv_work *w)
{
    chunk *c = w->data;
    uint64_t t0 = uv_hrtime();
    proto_job_run(c->req->job, 0, 1);
    c->seconds = elapsed_s(t0);
    encode_work(w);
}

static void encoded_done(srv_work *w, int status)
{
    chunk *c = w->data;
    http_req *r = c->req;
    r->pending--;
    if (r->dead) {
        req_free(r);
        return;
    }
    if (r->route == RT_SOLVE && status == SRV_OK) /* a batch counts its chunks */
        srv_metrics_solved(r->ctx, r->job, 0, 1, c->seconds);
    if (status != SRV_OK || !r->out) {
        fail_stage(r, PROTO_E_INTERNAL, status != SRV_OK ? "the daemon is shutting down"
                                                        : "out of memory");
        return;
    }
    r->ready_status = 200;
    finish_stage(r);
}

/* A single solve whose body is too large to decode on the loop: decode,
 * solve and encode on the pool. */
static void single_decode_work(srv_work *w)
{
    chunk *c = w->data;
    http_req *r = c->req;
    if (proto_job_decode(r->body, r->len, PROTO_SOLVE, &r->ctx->cfg.limits, srv_registry_lookup,
                         r->ctx->registry, &r->job, &r->err) != 0) {
        r->failed = true;
        return;
    }
    single_work(w);
}

static void single_decoded_done(srv_work *w, int status)
{
    http_req *r = ((chunk *)w->data)->req;
    if (status == SRV_OK && r->failed && !r->dead) {
        r->pending--;
        r->ready_status = (unsigned)srv_http_status(r->err.code);
        finish_stage(r);
        return;
    }
    encoded_done(w, status);
}

/* A chain registration too large to decode on the loop (a URDF document):
 * decoded on the pool, registered on the loop when the request resumes. */
static void chain_decode_work(srv_work *w)
{
    http_req *r = ((chunk *)w->data)->req;
    r->chain = proto_chain_decode(r->body, r->len, &r->ctx->cfg.limits, &r->err);
    if (!r->chain)
        r->failed = true;
}

static void chain_decoded_done(srv_work *w, int status)
{
    http_req *r = ((chunk *)w->data)->req;
    r->pending--;
    if (r->dead) {
        req_free(r);
        return;
    }
    if (status != SRV_OK) {
        fail_stage(r, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    r->ready_status = r->failed ? (unsigned)srv_http_status(r->err.code) : 200;
    finish_stage(r);
}

/* Batch: chunk solved. */
static void chunk_work(srv_work *w)
{
    chunk *c = w->data;
    uint64_t t0 = uv_hrtime();
    proto_job_run(c->req->job, c->begin, c->end);
    c->seconds = elapsed_s(t0);
}

/* True when the client of a suspended request closed its connection
 * (libmicrohttpd does not watch suspended connections): a peek at the
 * socket reads its end. A client that half-closes after its request and
 * still reads is taken for gone too; HTTP clients do not do that. */
static bool client_gone(http_req *r)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!i)
        return false;
    char b;
    ssize_t n = recv(i->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void chunk_done(srv_work *w, int status);

/* Submits the batch's next chunk; false when none could be. */
static bool submit_chunk(http_req *r)
{
    if (r->next_chunk >= r->nchunks)
        return false;
    chunk *c = &r->chunks[r->next_chunk++];
    if (srv_pool_submit_always(r->ctx, &c->w, chunk_work, chunk_done) != SRV_OK) {
        r->failed = true;
        return false;
    }
    r->pending++;
    return true;
}

static void chunk_done(srv_work *w, int status)
{
    chunk *c = w->data;
    http_req *r = c->req;
    r->pending--;
    if (status != SRV_OK)
        r->failed = true;
    else
        srv_metrics_solved(r->ctx, r->job, c->begin, c->end, c->seconds);
    if (!r->dead && !r->cancelled && !r->failed && client_gone(r)) {
        r->cancelled = true;
        srv_metrics_rejected(r->ctx, "batch_cancelled");
        srv_log(r->ctx, SRV_LOG_INFO, "batch of %zu targets cancelled: its client left",
                proto_job_count(r->job));
    }
    /* the next chunk queues behind whatever was submitted meanwhile (single
     * solves, stream targets), so a batch cannot starve them */
    if (!r->dead && !r->cancelled && !r->failed)
        submit_chunk(r);
    if (r->pending > 0)
        return;
    if (r->dead) {
        req_free(r);
        return;
    }
    if (r->cancelled) {
        fail_stage(r, PROTO_E_INTERNAL, "the client left: the batch was cancelled");
        return;
    }
    if (r->failed) {
        fail_stage(r, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    r->stage.req = r;
    r->stage.w.data = &r->stage;
    r->stage.seconds = 0.0;
    srv_pool_submit_always(r->ctx, &r->stage.w, encode_work, encoded_done);
    r->pending++;
}

/* Batch: decoded on the pool; split into chunks. */
static void decode_work(srv_work *w)
{
    chunk *c = w->data;
    http_req *r = c->req;
    if (proto_job_decode(r->body, r->len, PROTO_BATCH, &r->ctx->cfg.limits,
                         srv_registry_lookup, r->ctx->registry, &r->job, &r->err) != 0)
        r->failed = true;
}

static void decode_done(srv_work *w, int status)
{
    http_req *r = ((chunk *)w->data)->req;
    r->pending--;
    if (r->dead) {
        req_free(r);
        return;
    }
    if (status != SRV_OK) {
        fail_stage(r, PROTO_E_INTERNAL, "the daemon is shutting down");
        return;
    }
    if (r->failed) {
        r->ready_status = (unsigned)srv_http_status(r->err.code);
        finish_stage(r);
        return;
    }
    free(r->body); /* the job holds what it needs */
    r->body = NULL;
    /* the batch keeps one admission slot until it is answered (req_free) */
    r->holds_slot = true;
    r->ctx->admitted++;
    size_t n = proto_job_count(r->job);
    /* Chunks of about BATCH_CHUNK_US of estimated work, at most one per
     * pool thread in flight: a single solve or stream target queued
     * meanwhile waits for one chunk, not for the whole batch. */
    double cost = proto_job_cost_us(r->job);
    double fit = BATCH_CHUNK_US / (cost > 0.01 ? cost : 0.01);
    size_t per = fit < 16 ? 16 : fit > 4096 ? 4096 : (size_t)fit;
    size_t nchunks = n ? (n + per - 1) / per : 0;
    if (nchunks == 0) {
        r->stage.seconds = 0.0;
        srv_pool_submit_always(r->ctx, &r->stage.w, encode_work, encoded_done);
        r->pending++;
        return;
    }
    r->chunks = calloc(nchunks, sizeof *r->chunks);
    if (!r->chunks) {
        fail_stage(r, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    r->nchunks = nchunks;
    for (size_t i = 0; i < nchunks; i++) {
        chunk *c = &r->chunks[i];
        c->req = r;
        c->begin = i * per;
        c->end = c->begin + per < n ? c->begin + per : n;
        c->w.data = c;
    }
    for (unsigned t = 0; t < r->ctx->cfg.threads && submit_chunk(r); t++)
        ;
    if (r->pending == 0)
        fail_stage(r, PROTO_E_INTERNAL, "cannot queue work");
}

/* Suspends the connection and submits the first stage, or refuses with 503
 * (queue full). Returns the access handler's result. */
static enum MHD_Result start_pool(http_req *r, void (*work)(srv_work *),
                                  void (*done)(srv_work *, int))
{
    r->stage.req = r;
    r->stage.w.data = &r->stage;
    int rc = srv_pool_submit(r->ctx, &r->stage.w, work, done);
    if (rc != SRV_OK) {
        proto_error e;
        if (rc == SRV_EBUSY) {
            proto_error_set(&e, PROTO_E_OVERLOADED, "", "the solver queue is full; retry later");
            srv_metrics_rejected(r->ctx, "pool_full");
        } else {
            proto_error_set(&e, PROTO_E_INTERNAL, "", "cannot queue work: %s", srv_strerror(rc));
        }
        return answer_error(r, &e);
    }
    r->pending++;
    r->state = ST_WORKING;
    r->suspended = true;
    MHD_suspend_connection(r->conn);
    return MHD_YES;
}

/* ---- handlers ------------------------------------------------------------ */

static enum MHD_Result handle_solve(http_req *r)
{
    proto_error e;
    if (r->len > LOOP_DECODE_MAX)
        return start_pool(r, single_decode_work, single_decoded_done);
    if (proto_job_decode(r->body, r->len, PROTO_SOLVE, &r->ctx->cfg.limits, srv_registry_lookup,
                         r->ctx->registry, &r->job, &e) != 0)
        return answer_error(r, &e);
    if (proto_job_cost_us(r->job) * (double)proto_job_count(r->job) < r->ctx->cfg.inline_cost_us) {
        uint64_t t0 = uv_hrtime();
        proto_job_run(r->job, 0, proto_job_count(r->job));
        srv_metrics_solved(r->ctx, r->job, 0, proto_job_count(r->job), elapsed_s(t0));
        size_t len;
        char *out = proto_job_encode(r->job, &len);
        if (!out)
            return MHD_NO;
        return queue(r, 200, json_response(out, len));
    }
    return start_pool(r, single_work, encoded_done);
}

static enum MHD_Result chain_register(http_req *r, proto_chain *c);

static enum MHD_Result handle_chains_post(http_req *r)
{
    proto_error e;
    if (r->len > LOOP_DECODE_MAX)
        return start_pool(r, chain_decode_work, chain_decoded_done);
    proto_chain *c = proto_chain_decode(r->body, r->len, &r->ctx->cfg.limits, &e);
    if (!c)
        return answer_error(r, &e);
    return chain_register(r, c);
}

/* Registers the decoded chain c (the reference is taken over) and answers
 * 201 (new) or 200 with its description and Location. */
static enum MHD_Result chain_register(http_req *r, proto_chain *c)
{
    proto_error e;
    bool created = false;
    int rc = srv_registry_put(r->ctx->registry, c, &created);
    if (rc != SRV_OK) {
        proto_chain_unref(c);
        proto_error_set(&e, PROTO_E_TOO_LARGE, "",
                        "the chain needs more memory than the registry holds (--registry-bytes)");
        srv_metrics_rejected(r->ctx, "too_large");
        return answer_error(r, &e);
    }
    json_t *desc = proto_chain_describe(c);
    if (!desc || !json_is_object(desc)) {
        json_decref(desc);
        desc = json_object();
    }
    const char *id = proto_chain_id(c);
    json_object_set_new(desc, "id", json_string(id));
    char location[512];
    snprintf(location, sizeof location, CHAINS_PREFIX "%s", id);
    proto_chain_unref(c);
    char *s = proto_json_dump(desc, false);
    json_decref(desc);
    if (!s)
        return MHD_NO;
    struct MHD_Response *resp = json_response(s, strlen(s));
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    return queue(r, created ? 201 : 200, resp);
}

static enum MHD_Result handle_chain_id(http_req *r, const char *url)
{
    const char *id = url + strlen(CHAINS_PREFIX);
    proto_error e;
    if (r->method == M_DELETE) {
        if (srv_registry_remove(r->ctx->registry, id) == SRV_OK)
            return queue(r, 204, MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
    } else {
        proto_chain *c = srv_registry_get(r->ctx->registry, id);
        if (c) {
            json_t *desc = proto_chain_describe(c);
            if (desc && json_is_object(desc))
                json_object_set_new(desc, "id", json_string(proto_chain_id(c)));
            proto_chain_unref(c);
            return answer_json(r, 200, desc);
        }
    }
    proto_error_set(&e, PROTO_E_UNKNOWN_CHAIN, "", "no chain with id \"%.200s\"", id);
    return answer_error(r, &e);
}

static enum MHD_Result handle_metrics(http_req *r)
{
    size_t len;
    char *s = srv_metrics_render(r->ctx->metrics, r->ctx->pool_depth,
                                 srv_registry_count(r->ctx->registry),
                                 r->ctx->active_requests, &len);
    if (!s)
        return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    return queue(r, 200, resp);
}

static enum MHD_Result handle_stream(http_req *r)
{
    proto_error e;
    proto_error_clear(&e);
    struct MHD_Response *resp = srv_ws_upgrade(r->ctx, r->conn, &e);
    if (!resp) {
        if (e.code == PROTO_E_NONE)
            proto_error_set(&e, PROTO_E_INTERNAL, "", "WebSocket upgrade failed");
        if (e.code == PROTO_E_FORBIDDEN_ORIGIN)
            srv_metrics_rejected(r->ctx, "bad_origin");
        return answer_error(r, &e);
    }
    srv_guard_forget(r->ctx, r->conn); /* a WebSocket has no request deadline */
    return queue(r, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

/* A file of the live page, from the table loaded at startup (web.h): the
 * bytes are the table's own, so the response does not copy them. */
static enum MHD_Result handle_static(http_req *r, const char *url)
{
    const srv_web_file *f = srv_web_find(r->ctx->web, url);
    if (!f)
        return MHD_NO; /* routed here only when it exists */
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, f->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    return queue(r, 200, resp);
}

/* proto/openapi.yaml as compiled in (build_info.h), not copied. */
static enum MHD_Result handle_openapi(http_req *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        srv_openapi_yaml_len, (void *)srv_openapi_yaml, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/yaml");
    return queue(r, 200, resp);
}

/* GET /v1/solvers: proto's description, its limits completed by the
 * daemon's own bounds (limits.server), so that a client can read every
 * bound it is held to. NULL when out of memory. */
static json_t *solvers_describe(const srv_ctx *ctx)
{
    const srv_config *c = &ctx->cfg;
    json_t *d = proto_solvers_describe(&c->limits);
    json_t *server = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "max_connections",
        (json_int_t)c->max_connections, "max_connections_per_address",
        (json_int_t)c->max_conn_per_addr, "idle_timeout_s", (json_int_t)c->conn_timeout_s,
        "request_timeout_s", (json_int_t)c->request_timeout_s, "drain_timeout_s",
        (json_int_t)c->drain_timeout_s, "body_budget_bytes", (json_int_t)c->body_budget_bytes,
        "max_message_bytes", (json_int_t)c->max_message_bytes, "max_send_queue_bytes",
        (json_int_t)c->ws_send_queue_bytes, "registry_bytes", (json_int_t)c->registry_bytes,
        "max_queue", (json_int_t)c->pool_queue_max);
    json_t *limits = json_object_get(d, "limits");
    if (!d || !server || !json_is_object(limits) || json_object_set_new(limits, "server", server)) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static enum MHD_Result dispatch(http_req *r, const char *url)
{
    switch (r->route) {
    case RT_LIVEZ:
        return answer_json(r, 200, json_pack("{s:s}", "status", "ok"));
    case RT_READYZ:
        if (r->ctx->shutting_down)
            return answer_json(r, 503, json_pack("{s:s}", "status", "shutting_down"));
        return answer_json(r, 200, json_pack("{s:s}", "status", "ready"));
    case RT_METRICS:
        return handle_metrics(r);
    case RT_OPENAPI:
        return handle_openapi(r);
    case RT_SOLVERS:
        return answer_json(r, 200, solvers_describe(r->ctx));
    case RT_CHAINS:
        return handle_chains_post(r);
    case RT_CHAIN_ID:
        return handle_chain_id(r, url);
    case RT_SOLVE:
        return handle_solve(r);
    case RT_BATCH:
        return start_pool(r, decode_work, decode_done);
    case RT_STREAM:
        return handle_stream(r);
    case RT_STATIC:
        return handle_static(r, url);
    case RT_NONE:
    default:
        break;
    }
    proto_error e;
    proto_error_set(&e, PROTO_E_NOT_FOUND, "", "no such endpoint: %.200s", url);
    return answer_error(r, &e);
}

/* OPTIONS on a known route: 204 with what the route allows. A browser's
 * preflight from an Origin outside --allow-origin gets 403 (and no CORS
 * headers), so that the refusal is visible in its network log too. */
static enum MHD_Result answer_preflight(http_req *r)
{
    const struct route_def *d = &routes[r->route];
    const char *origin =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    if (origin && !srv_ws_origin_allowed(origin, (const char *const *)r->ctx->cfg.allow_origins,
                                         r->ctx->cfg.n_allow_origins)) {
        proto_error e;
        proto_error_set(&e, PROTO_E_FORBIDDEN_ORIGIN, "", "Origin %.200s is not allowed here",
                        origin);
        srv_metrics_rejected(r->ctx, "bad_origin");
        return answer_error(r, &e);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    char allow[64];
    snprintf(allow, sizeof allow, "%s, OPTIONS", d->allow);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (origin) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS, allow);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_HEADERS,
                                "Authorization, Content-Type");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_MAX_AGE, "600");
    }
    return queue(r, 204, resp);
}

/* ---- libmicrohttpd callbacks ------------------------------------------------ */

static bool body_reserve(http_req *r, size_t total);

/* First call: route, authenticate, check the announced size. */
static enum MHD_Result begin(srv_ctx *ctx, struct MHD_Connection *conn, const char *url,
                             const char *method, void **con_cls)
{
    http_req *r = calloc(1, sizeof *r);
    if (!r)
        return MHD_NO;
    r->ctx = ctx;
    r->conn = conn;
    r->route = route_of(url);
    if (r->route == RT_NONE && srv_web_find(ctx->web, url))
        r->route = RT_STATIC;
    r->method = method_of(method);
    *con_cls = r;
    ctx->active_requests++;
    ctx->requests_begun++;
    const struct route_def *d = &routes[r->route];

    if (r->route == RT_NONE) {
        char msg[256];
        snprintf(msg, sizeof msg, "no such endpoint: %.200s", url);
        refuse(r, PROTO_E_NOT_FOUND, NULL, msg);
    } else if ((r->method == M_POST || r->method == M_DELETE) && !origin_allowed(r)) {
        /* A browser sends some cross-origin requests without a preflight
         * (a POST with Content-Type text/plain): refused before anything is
         * read or done, not merely hidden from the page. */
        char msg[300];
        snprintf(msg, sizeof msg, "Origin %.200s may not change anything here (--allow-origin)",
                 MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN));
        refuse(r, PROTO_E_FORBIDDEN_ORIGIN, "bad_origin", msg);
    } else if (r->method == M_OPTIONS) {
        /* CORS preflight: browsers send it without credentials, so no
         * token is asked; answered once any body is in */
        r->preflight = true;
    } else if (!d->open && ctx->cfg.token && !authorized(r)) {
        refuse(r, PROTO_E_UNAUTHORIZED, "unauthorized",
               r->route == RT_STREAM
                   ? "a valid bearer token is required (Authorization: Bearer ..., or the "
                     "subprotocols " SRV_WS_PROTOCOL ", " SRV_WS_BEARER_PREFIX
                     "<base64url token>)"
                   : "a valid bearer token is required (Authorization: Bearer ...)");
    } else if (!(d->methods & r->method)) {
        char msg[128];
        snprintf(msg, sizeof msg, "method %.32s is not allowed here", method);
        refuse(r, PROTO_E_METHOD_NOT_ALLOWED, "method", msg);
    } else if (d->takes_body) {
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
        if (announced > ctx->cfg.limits.max_body_bytes) {
            refuse(r, PROTO_E_TOO_LARGE, "too_large",
                   "the request body exceeds the limit (--max-body)");
            /* Answer before reading the body: libmicrohttpd then closes. */
            return answer_error(r, &r->err);
        }
        /* The body budget: an announced body is reserved whole now, so that
         * an upload that would not fit is refused before it is read. */
        if (announced > 0 && !body_reserve(r, (size_t)announced + 1)) {
            refuse(r, PROTO_E_OVERLOADED, "body_budget",
                   "request bodies in flight fill the body budget (--body-budget); retry "
                   "later");
            return answer_error(r, &r->err);
        }
    }
    return MHD_YES;
}

/* Accounts for the request holding `total` bytes of body in
 * ctx->body_bytes (never less than it holds already); false when that
 * would pass --body-budget. */
static bool body_reserve(http_req *r, size_t total)
{
    srv_ctx *ctx = r->ctx;
    if (total <= r->held)
        return true;
    size_t more = total - r->held;
    if (ctx->body_bytes + more > ctx->cfg.body_budget_bytes)
        return false;
    ctx->body_bytes += more;
    r->held = total;
    return true;
}

static enum MHD_Result body_data(http_req *r, const char *data, size_t n)
{
    size_t max = r->ctx->cfg.limits.max_body_bytes;
    if (r->has_err || r->preflight || !routes[r->route].takes_body) {
        /* Discarded; the error is answered once the body is in
         * (libmicrohttpd 0.9.75 cannot queue a response mid-body). A body
         * that goes on far past the limit is cut by closing the connection. */
        r->discarded += n;
        return r->discarded > 2 * max + 65536 ? MHD_NO : MHD_YES;
    }
    if (n > max - r->len) {
        refuse(r, PROTO_E_TOO_LARGE, "too_large",
               "the request body exceeds the limit (--max-body)");
        r->discarded = r->len + n;
        free(r->body);
        r->body = NULL;
        r->len = r->cap = 0;
        return MHD_YES;
    }
    if (r->len + n + 1 > r->cap) {
        /* an announced body (reserved whole in begin) is allocated whole
         * at once: no copies while it grows */
        size_t cap = r->cap ? r->cap : r->held > 0 ? r->held : 1024;
        while (cap < r->len + n + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        if (!body_reserve(r, cap)) {
            /* a body without Content-Length outgrew the budget: cut (no
             * answer can be queued mid-body) */
            srv_metrics_rejected(r->ctx, "body_budget");
            return MHD_NO;
        }
        char *p = realloc(r->body, cap);
        if (!p)
            return MHD_NO;
        r->body = p;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return MHD_YES;
}

enum MHD_Result srv_http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version,
                                const char *upload_data, size_t *upload_data_size,
                                void **con_cls)
{
    srv_ctx *ctx = cls;
    http_req *r = *con_cls;
    if (!r)
        return begin(ctx, conn, url, method, con_cls);

    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->state != ST_READING)
            return MHD_YES;
        return body_data(r, upload_data, n);
    }

    switch (r->state) {
    case ST_READING:
        if (!r->received) {
            r->received = true;
            srv_guard_received(ctx, conn);
        }
        break;
    case ST_WORKING:
        return MHD_YES; /* not ours to answer yet */
    case ST_ANSWERED:
        return MHD_YES;
    case ST_READY:
        if (r->failed || r->ready_status != 200) {
            proto_error e = r->err;
            if (e.code == PROTO_E_NONE)
                proto_error_set(&e, PROTO_E_INTERNAL, "", "request failed");
            return answer_error(r, &e);
        }
        if (r->chain) {
            proto_chain *c = r->chain;
            r->chain = NULL;
            return chain_register(r, c);
        }
        {
            char *out = r->out;
            r->out = NULL;
            return queue(r, 200, json_response(out, r->out_len));
        }
    }
    if (r->has_err)
        return answer_error(r, &r->err);
    if (r->preflight)
        return answer_preflight(r);
    if (routes[r->route].takes_body && r->len == 0) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INVALID_JSON, "", "the request body is empty");
        return answer_error(r, &e);
    }
    return dispatch(r, url);
}

void srv_http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    http_req *r = *con_cls;
    srv_guard_rearm(cls, conn);
    if (!r)
        return;
    *con_cls = NULL;
    if (r->status_sent)
        srv_metrics_request(r->ctx->metrics, routes[r->route].label, (int)r->status_sent);
    if (toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
        srv_metrics_rejected(r->ctx, "timeout");
    if (r->pending > 0) {
        r->dead = true; /* freed by the last pool completion */
        return;
    }
    req_free(r);
}
