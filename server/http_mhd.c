/*
 * http_mhd.c: the one module of ikd's HTTP side that talks to
 * libmicrohttpd: its access handler and request-completed notification,
 * the refusals of request bodies past --max-body or the body budget (the
 * bytes themselves and their accounting are http_body.c's, which talks to
 * no connection), the checks every request passes
 * before its handler (route, Origin, token, method, announced size), CORS,
 * suspending and resuming connections for pool work (srv_http_submit, the
 * one way a handler hands work on), and turning the response values of the
 * handlers (server/http_handler.h) into libmicrohttpd responses. The
 * handlers (http_handlers.c, http_batch.c) never see a connection, and
 * this file never names a handler: it finds a request's route in the table
 * the endpoints registered at start-up (server/http_route.h) and calls
 * what the route gives.
 *
 * libmicrohttpd outside this file, deliberately: loop.c drives the daemon
 * (MHD_run on the loop) and serve.c starts and stops it; http_headers.c
 * reads a request's headers and raw URL (the NUL bytes no header or URL
 * may hold, list headers over several lines), for this file and for the
 * WebSocket upgrade; tls.c gives libmicrohttpd its certificate; guard.c is
 * libmicrohttpd's connection notification, and it writes its raw 408 on
 * the socket of a connection that is still receiving its request
 * (libmicrohttpd 0.9.75 cannot answer before the request is in);
 * ws_upgrade.c makes the 101 response of the WebSocket upgrade (the stream
 * route's upgrade: the handshake is the WebSocket side's rule) and ws_conn.c
 * owns the upgraded socket until it gives it back (MHD_upgrade_action).
 *
 * How one request flows through libmicrohttpd's access handler:
 *   1st call (headers): allocate the request, refuse a URL or header
 *       holding a NUL byte (400, server/http_headers.h), route it, check
 *       the Origin (a POST or DELETE from an Origin outside
 *       --allow-origin gets 403 before its body is read: browsers send
 *       some cross-origin requests,
 *       Content-Type text/plain, without a preflight), the token, the
 *       method and Content-Length. Nothing is queued here (queuing on the
 *       first call makes libmicrohttpd close the connection and cut
 *       throughput fourfold), except 413 on an oversized Content-Length,
 *       503 on an announced body that does not fit what is left of the
 *       body budget now, and any refusal of a request that waits for
 *       "100 Continue" (Expect) before its body, where closing is what we
 *       want: the body is never read (nor sent).
 *   body calls: append to the request's buffer, counting the bytes that
 *       arrived against --body-budget (an announcement reserves nothing).
 *       Past --max-body (a chunked body without Content-Length), or past
 *       the budget, the buffer is dropped, the rest of the body is read and
 *       discarded (libmicrohttpd cannot answer mid-body) and 413 or 503 is
 *       answered at the end; a body that runs on beyond twice the limit
 *       makes us close the connection without an answer.
 *   final call (upload_data_size 0): the refusal decided earlier, the CORS
 *       preflight, or the route's handler (or upgrade). A handler that goes
 *       to the pool leaves the request without an answer: the connection is
 *       suspended, and resumed (then srv_mhd_run(), as libmicrohttpd does
 *       not wake the loop by itself) when srv_http_respond() comes; the
 *       prepared response is queued when the access handler is called
 *       again.
 *
 * Answers: a body that holds part of the answer budget (srv_response.held,
 * a batch's answer) is handed to libmicrohttpd with a free callback that
 * gives the bytes back once it is sent or its connection ended. Every
 * answer to a request whose Origin is allowed (the --allow-origin list, any
 * Origin when there is none) carries Access-Control-Allow-Origin and
 * exposes Retry-After and Location, and every answer to one a cache may
 * keep (GET, HEAD) Vary: Origin, with or without an Origin; while
 * draining, an answer carries Connection: close unless the client
 * pipelined more requests behind it (pipelined_more), so that a keep-alive
 * client sends nothing more that could go unanswered, and nothing it sent
 * before is dropped.
 *
 * Streamed answers (srv_http_stream_*, a large batch's): a response from
 * libmicrohttpd's content reader, of unknown size (chunked transfer). The
 * reader copies the queued pieces into libmicrohttpd's write buffer; when
 * none is queued it suspends the connection and returns 0, and the next
 * piece (or the end) resumes it and runs libmicrohttpd. Suspending is what
 * keeps this from spinning: libmicrohttpd 0.9.75 keeps a connection whose
 * reader returned 0 among the ones it runs again at once (MHD_get_timeout
 * says 0) for as long as the reader has nothing. A client that reads
 * slowly only leaves the connection waiting for its socket, as for any
 * answer; the pieces it has not taken stay queued, as many as the
 * producer lets queue.
 *
 * Vanishing clients: a request's memory is freed by the request-completed
 * notification, unless pool work still holds it; then the notification
 * only marks it dead and the last release (srv_http_release) frees it.
 *
 * Not here: a request's body bytes and the body budget (http_body.c; the
 * request record both files share is server/http_req.h), what each
 * endpoint does (http_handlers.c, http_batch.c), the
 * route table (http_route.c), the pure rules of status codes, tokens and
 * media types (http_rules.c), the loop glue (loop.c), flags and startup
 * (serve.c, config.c), the request deadline (guard.c), WebSocket framing
 * (ws_conn.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "proto/proto_json_write.h"
#include "server/guard.h"
#include "server/http_handler.h"
#include "server/http_headers.h"
#include "server/http_req.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/sockinfo.h"
#include "server/tls_front.h"
#include "server/trim.h"
#include "server/ws_handshake.h"

/* Finished requests, up to SPARES of them, are kept for the next ones:
 * with the small body a request holds (server/http_req.h), a single solve
 * then takes no allocation of the HTTP side. */
#define SPARES 64

/* ctx->http: the HTTP side's state of one daemon. */
struct srv_http {
    http_req *spares; /* finished requests kept for reuse */
    unsigned n_spares;
};

static http_req *req_of(srv_request *q)
{
    return (http_req *)q;
}

static void drop_pieces(http_req *r)
{
    while (r->out_head) {
        out_piece *p = r->out_head;
        r->out_head = p->next;
        free(p->data);
        free(p);
    }
    r->out_tail = NULL;
    r->out_pieces = r->out_off = 0;
}

/* Gives back what a response value held of the answer budget (its body
 * then goes on without being counted). */
static void response_drop_held(srv_ctx *ctx, srv_response *v)
{
    srv_budget_release(&ctx->sh->answer_bytes, v->held);
    v->held = 0;
}

/* Frees a response value's body that will not be sent, giving back what
 * it held of the answer budget. */
static void response_drop(srv_ctx *ctx, srv_response *v)
{
    free(v->body);
    v->body = NULL;
    response_drop_held(ctx, v);
}

static void req_free(http_req *r)
{
    srv_ctx *ctx = r->q.ctx;
    drop_pieces(r);
    srv_gauge_sub(&ctx->active_requests, 1);
    srv_budget_release(&ctx->sh->body_bytes, r->held);
    if (r->q.route && r->q.route->cleanup)
        r->q.route->cleanup(&r->q);
    response_drop(ctx, &r->ready);
    srv__http_body_free(r);
    srv_trim_note(ctx, r->q.len); /* a large body, and what decoding it took */
    srv_http *h = ctx->http;
    if (!h || h->n_spares >= SPARES) {
        free(r);
        return;
    }
    r->next_spare = h->spares;
    h->spares = r;
    h->n_spares++;
}

int srv_http_start(srv_ctx *ctx)
{
    if (!ctx->http && !(ctx->http = calloc(1, sizeof *ctx->http)))
        return SRV_ENOMEM;
    return SRV_OK;
}

void srv_http_stop(srv_ctx *ctx)
{
    srv_http *h = ctx->http;
    if (!h)
        return;
    ctx->http = NULL;
    while (h->spares) {
        http_req *r = h->spares;
        h->spares = r->next_spare;
        free(r);
    }
    free(h);
}

size_t srv_http_active_all(const srv_shared *sh)
{
    size_t n = 0;
    for (unsigned i = 0; i < sh->nloops; i++)
        n += srv_gauge_get(&sh->loops[i]->active_requests);
    return n;
}

/* ---- responses ---------------------------------------------------------- */

static void add_cors(http_req *r, struct MHD_Response *resp)
{
    srv_ctx *ctx = r->q.ctx;
    const char *origin = r->origin;
    bool allowed =
        origin && srv_ws_origin_allowed(origin, (const char *const *)ctx->cfg.allow_origins,
                                        ctx->cfg.n_allow_origins);
    if (allowed || r->q.method & (SRV_M_GET | SRV_M_HEAD))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ORIGIN);
    if (!allowed)
        return;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_EXPOSE_HEADERS,
                            "Retry-After, Location");
}

/* While draining: true when the client pipelined more requests behind
 * r's that ikd has received (read by libmicrohttpd past r, or waiting in
 * the socket): r's answer then keeps the connection open, so that those
 * are answered too, the last with Connection: close. Told from the bytes
 * the kernel says were read from the socket against those of the requests
 * so far (false when either is unknown: a chunked body, no TCP_INFO); with
 * TLS, the TLS front says the same of the plaintext it relayed. */
static bool pipelined_more(http_req *r)
{
    if (r->chunked)
        return false;
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    uint64_t taken, waiting, before;
    if (!i)
        return false;
    bool known = r->q.ctx->tls_front
                     ? srv_tls_front_received(r->q.ctx, i->connect_fd, &taken, &waiting)
                     : srv_sock_received(i->connect_fd, &taken, &waiting);
    if (!known || !srv_guard_consumed(r->q.ctx, r->conn, &before))
        return false;
    return waiting > 0 || taken > before + r->head_bytes + r->announced;
}

static enum MHD_Result queue_mhd(http_req *r, unsigned status, struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO;
    if (status != MHD_HTTP_SWITCHING_PROTOCOLS)
        add_cors(r, resp);
    if (r->q.ctx->shutting_down && status != MHD_HTTP_SWITCHING_PROTOCOLS && !pipelined_more(r))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    r->status_sent = status;
    r->state = ST_ANSWERED;
    return rc;
}

/* A protocol upgrade (GET /v1/stream: its route's upgrade, server/ws_upgrade.c,
 * validates the handshake and makes libmicrohttpd's upgrade response). */
static enum MHD_Result queue_upgrade(http_req *r)
{
    proto_error e;
    proto_error_clear(&e);
    struct MHD_Response *resp = r->q.route->upgrade(r->q.ctx, r->conn, &e);
    if (!resp) {
        if (e.code == PROTO_E_NONE)
            proto_error_set(&e, PROTO_E_INTERNAL, "", "WebSocket upgrade failed");
        if (e.code == PROTO_E_FORBIDDEN_ORIGIN)
            srv_metrics_rejected(r->q.ctx, "bad_origin");
        srv_http_respond_error(&r->q, &e);
        return MHD_YES;
    }
    srv_guard_forget(r->q.ctx, r->conn); /* a WebSocket has no request deadline */
    return queue_mhd(r, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

/* ---- streamed answers ------------------------------------------------------ */

/* The reader's block size (libmicrohttpd fills its write buffer, which
 * may be smaller). */
#define STREAM_BLOCK (64 * 1024)

/* Resumes a connection suspended by stream_reader and runs libmicrohttpd. */
static void stream_wake(http_req *r)
{
    if (!r->suspended)
        return;
    r->suspended = false;
    MHD_resume_connection(r->conn);
    srv_mhd_run(r->q.ctx);
}

/* libmicrohttpd's content reader of a streamed answer (loop thread, inside
 * MHD_run): copies queued pieces into its buffer. With nothing queued the
 * connection is suspended until the next piece or the end comes
 * (stream_wake): returning 0 without suspending would leave the connection
 * among those libmicrohttpd 0.9.75 runs again at once (MHD_get_timeout
 * says 0), a busy loop for as long as a chunk takes to solve. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    http_req *r = cls;
    size_t n = 0;
    bool took = false;
    while (n < max && r->out_head) {
        out_piece *p = r->out_head;
        size_t k = p->len - r->out_off;
        if (k > max - n)
            k = max - n;
        memcpy(buf + n, p->data + r->out_off, k);
        n += k;
        r->out_off += k;
        if (r->out_off == p->len) {
            r->out_head = p->next;
            if (!r->out_head)
                r->out_tail = NULL;
            r->out_pieces--;
            r->out_off = 0;
            free(p->data);
            free(p);
            took = true;
        }
    }
    if (took && r->drained && !r->q.dead)
        r->drained(&r->q);
    if (n > 0)
        return (ssize_t)n;
    if (r->out_ended)
        return r->out_cut ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    r->suspended = true;
    MHD_suspend_connection(r->conn);
    return 0;
}

void srv_http_stream_begin(srv_request *q, int status, const char *content_type,
                           void (*drained)(srv_request *q))
{
    http_req *r = req_of(q);
    r->drained = drained;
    srv_response v = {0};
    v.status = status;
    v.content_type = content_type;
    v.streamed = true;
    srv_http_respond(q, &v);
}

void srv_http_stream_write(srv_request *q, char *piece, size_t len)
{
    http_req *r = req_of(q);
    out_piece *p = NULL;
    if (!q->dead && !r->out_ended && len > 0 && (p = malloc(sizeof *p))) {
        p->next = NULL;
        p->data = piece;
        p->len = len;
        if (r->out_tail)
            r->out_tail->next = p;
        else
            r->out_head = p;
        r->out_tail = p;
        r->out_pieces++;
    } else {
        free(piece);
        if (!q->dead && !r->out_ended && len > 0) /* out of memory: the answer is cut */
            srv_http_stream_end(q, false);
        return;
    }
    if (r->state == ST_ANSWERED)
        stream_wake(r);
}

void srv_http_stream_end(srv_request *q, bool complete)
{
    http_req *r = req_of(q);
    if (q->dead || r->out_ended)
        return;
    r->out_ended = true;
    r->out_cut = !complete;
    if (r->out_cut)
        drop_pieces(r);
    if (r->state == ST_ANSWERED)
        stream_wake(r);
}

size_t srv_http_stream_queued(const srv_request *q)
{
    return ((const http_req *)q)->out_pieces;
}

/* A body that holds part of the answer budget, handed to libmicrohttpd:
 * the bytes are given back when it frees the body (sent, or the connection
 * ended). */
typedef struct held_body {
    srv_ctx *ctx;
    void *body;
    size_t bytes;
} held_body;

static void held_body_free(void *cls)
{
    held_body *h = cls;
    srv_budget_release(&h->ctx->sh->answer_bytes, h->bytes);
    free(h->body);
    srv_trim_note(h->ctx, h->bytes);
    free(h);
}

/* A response value as libmicrohttpd's response, queued. Takes its body. */
static enum MHD_Result queue_value(http_req *r, srv_response *v)
{
    struct MHD_Response *resp;
    held_body *h = !v->streamed && v->body && v->held ? malloc(sizeof *h) : NULL;
    if (v->streamed) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_reader, r,
                                                 NULL);
    } else if (h) {
        h->ctx = r->q.ctx;
        h->body = v->body;
        h->bytes = v->held;
        resp = MHD_create_response_from_buffer_with_free_callback_cls(v->len, v->body,
                                                                      held_body_free, h);
        if (!resp)
            held_body_free(h);
        v->held = 0;
    } else if (v->body) {
        response_drop_held(r->q.ctx, v);
        resp = MHD_create_response_from_buffer(v->len, v->body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(v->body);
    } else {
        resp = MHD_create_response_from_buffer(v->len, (void *)v->static_body,
                                               MHD_RESPMEM_PERSISTENT);
    }
    v->body = NULL;
    if (!resp)
        return MHD_NO;
    if (v->len > 0 || v->content_type || v->streamed)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                v->content_type ? v->content_type : "application/json");
    if (v->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, v->allow);
    if (v->retry_after)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (v->status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (v->location[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, v->location);
    if (v->page_file) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    }
    return queue_mhd(r, (unsigned)v->status, resp);
}

void srv_http_respond(srv_request *q, srv_response *resp)
{
    http_req *r = req_of(q);
    if (q->dead || r->state == ST_ANSWERED || r->state == ST_READY) {
        response_drop(q->ctx, resp);
        return;
    }
    if (r->in_dispatch) {
        queue_value(r, resp);
        return;
    }
    /* after pool work: queued when libmicrohttpd calls again */
    r->ready = *resp;
    resp->body = NULL;
    resp->held = 0;
    r->state = ST_READY;
    if (r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->conn);
        srv_mhd_run(q->ctx);
    }
}

void srv_http_respond_body(srv_request *q, int status, char *body, size_t len)
{
    srv_response v = {0};
    v.status = status;
    v.body = body;
    v.len = len;
    if (!body) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    srv_http_respond(q, &v);
}

void srv_http_respond_json(srv_request *q, int status, json_t *v)
{
    char *s = v ? proto_json_dump(v) : NULL;
    json_decref(v);
    srv_http_respond_body(q, status, s, s ? strlen(s) : 0);
}

void srv_http_respond_error(srv_request *q, const proto_error *e)
{
    srv_response v = {0};
    v.status = srv_http_status(e->code);
    size_t n = proto_error_format(e, NULL, 0);
    v.body = malloc(n + 1);
    if (!v.body)
        return;
    proto_error_format(e, v.body, n + 1);
    v.len = n;
    if (e->code == PROTO_E_METHOD_NOT_ALLOWED)
        v.allow = q->route ? q->route->allow : NULL;
    v.retry_after = v.status == MHD_HTTP_SERVICE_UNAVAILABLE;
    srv_http_respond(q, &v);
}

/* ---- pool work and vanishing clients --------------------------------------- */

void srv_http_hold(srv_request *q)
{
    q->pending++;
}

int srv_http_submit(srv_request *q, srv_solve *s)
{
    q->pending++;
    int rc = srv_solve_submit(q->ctx, s);
    if (rc == SRV_OK)
        return SRV_OK;
    q->pending--;
    proto_error e;
    if (rc == SRV_EBUSY) {
        proto_error_set(&e, PROTO_E_OVERLOADED, "", "the solver queue is full; retry later");
        srv_metrics_rejected(q->ctx, "pool_full");
    } else {
        proto_error_set(&e, PROTO_E_INTERNAL, "", "cannot queue work: %s", srv_strerror(rc));
    }
    srv_http_respond_error(q, &e);
    return rc;
}

bool srv_http_release(srv_request *q)
{
    q->pending--;
    if (q->dead && q->pending == 0) {
        req_free(req_of(q));
        return false;
    }
    return !q->dead;
}

void srv_http_body_release(srv_request *q)
{
    http_req *r = req_of(q);
    srv__http_body_free(r);
    srv_budget_release(&q->ctx->sh->body_bytes, r->held);
    r->held = 0;
}

const char *srv_http_query(srv_request *q, const char *name)
{
    return MHD_lookup_connection_value(req_of(q)->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A client that half-closes after its request and still reads is taken for
 * gone too; HTTP clients do not do that. */
bool srv_http_client_gone(srv_request *q)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(req_of(q)->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!i)
        return false;
    char b;
    ssize_t n = recv(i->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* ---- authentication and origins ------------------------------------------ */

/* No Origin (not a browser), or one --allow-origin allows. */
static bool origin_allowed(http_req *r)
{
    srv_ctx *ctx = r->q.ctx;
    return srv_ws_origin_allowed(r->origin, (const char *const *)ctx->cfg.allow_origins,
                                 ctx->cfg.n_allow_origins);
}

/* The token comes in Authorization: Bearer, or, on the stream upgrade only,
 * as a Sec-WebSocket-Protocol element (ws_handshake.h: browsers cannot set
 * Authorization on a WebSocket), on any of the lines that header takes.
 * Neither is ever logged. */
static bool authorized(http_req *r)
{
    const char *token = r->q.ctx->cfg.token;
    if (srv_http_token_ok(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                      MHD_HTTP_HEADER_AUTHORIZATION),
                          token))
        return true;
    if (!r->q.route->token_in_protocol)
        return false;
    char *protocols = srv_http_header_list(r->conn, "Sec-WebSocket-Protocol");
    bool ok = srv_ws_protocol_bearer(protocols, token) == SRV_WS_BEARER_OK;
    free(protocols);
    return ok;
}

static void refuse(http_req *r, proto_errcode code, const char *reason, const char *msg)
{
    proto_error_set(&r->err, code, "", "%s", msg);
    r->has_err = true;
    if (reason)
        srv_metrics_rejected(r->q.ctx, reason);
}

/* OPTIONS on a known route: 204 with what the route allows. A browser's
 * preflight from an Origin outside --allow-origin gets 403 (and no CORS
 * headers), so that the refusal is visible in its network log too. */
static enum MHD_Result answer_preflight(http_req *r)
{
    const srv_route *d = r->q.route;
    const char *origin = r->origin;
    if (origin && !origin_allowed(r)) {
        proto_error e;
        proto_error_set(&e, PROTO_E_FORBIDDEN_ORIGIN, "", "Origin %.200s is not allowed here",
                        origin);
        srv_metrics_rejected(r->q.ctx, "bad_origin");
        srv_http_respond_error(&r->q, &e);
        return MHD_YES;
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
    return queue_mhd(r, 204, resp);
}

/* ---- the body ---------------------------------------------------------------- */

/* Takes n more bytes of r's body (server/http_body.c), refusing the
 * request when they pass --max-body or the body budget. */
static enum MHD_Result body_data(http_req *r, const char *data, size_t n)
{
    switch (srv__http_body_append(r, data, n)) {
    case SRV_BODY_TAKEN:
        return MHD_YES;
    case SRV_BODY_TOO_LARGE:
        refuse(r, PROTO_E_TOO_LARGE, "too_large",
               "the request body exceeds the limit (--max-body)");
        srv__http_body_drop(r, n);
        return MHD_YES;
    case SRV_BODY_OVER_BUDGET:
        refuse(r, PROTO_E_OVERLOADED, "body_budget",
               "request bodies being received fill the body budget (--body-budget); retry "
               "later");
        srv__http_body_drop(r, n);
        return MHD_YES;
    case SRV_BODY_CLOSE:
        break;
    }
    return MHD_NO;
}

/* ---- libmicrohttpd callbacks ------------------------------------------------- */

/* Answers r's refusal on the first call (see the file comment). */
static enum MHD_Result refuse_now(http_req *r)
{
    r->in_dispatch = true;
    srv_http_respond_error(&r->q, &r->err);
    r->in_dispatch = false;
    return MHD_YES;
}

/* First call: refuse NUL bytes in the URL or a header, route, check the
 * Origin, the token, the method and the announced size. */
static enum MHD_Result begin(srv_ctx *ctx, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, void **con_cls)
{
    bool nul_url = *con_cls == SRV_HTTP_NUL_URL, query = *con_cls == SRV_HTTP_QUERY_URL;
    srv_http *h = ctx->http;
    http_req *r = h ? h->spares : NULL;
    if (r) {
        h->spares = r->next_spare;
        h->n_spares--;
    } else if (!(r = malloc(sizeof *r))) {
        return MHD_NO;
    }
    memset(r, 0, offsetof(http_req, err));
    r->q.ctx = ctx;
    r->q.url = url;
    r->conn = conn;
    r->q.route = srv_http_route_find(ctx, url);
    r->q.method = srv_http_method_of(method);
    *con_cls = r;
    srv_gauge_add(&ctx->active_requests, 1);
    ctx->requests_begun++;
    const union MHD_ConnectionInfo *hi =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    r->head_bytes = hi ? hi->header_size : 0;
    srv_http_head hv;
    srv_http_head_read(conn, method, version, &hv);
    r->chunked = hv.transfer_encoding || !hi;
    unsigned long long announced = hv.length ? srv_http_content_length(hv.length) : 0;
    r->announced = (size_t)announced;
    r->origin = hv.origin;
    const srv_route *d = r->q.route;
    char qmsg[256];

    if (nul_url || hv.nul_header) {
        /* before anything reads the text a NUL would cut short */
        char msg[160];
        if (nul_url)
            snprintf(msg, sizeof msg, "the URL holds an encoded NUL byte (%%00)");
        else
            snprintf(msg, sizeof msg, "header %.64s holds a NUL byte", hv.nul_header);
        refuse(r, PROTO_E_INVALID_REQUEST, "nul_byte", msg);
    } else if (hv.length_conflict || (hv.length && hv.transfer_encoding)) {
        /* a proxy in front may end the body elsewhere (RFC 9112 6.1) */
        refuse(r, PROTO_E_INVALID_REQUEST, "content_length",
               hv.length_conflict ? "Content-Length headers disagree"
                                  : "Content-Length and Transfer-Encoding together");
        return refuse_now(r); /* its body's end is unknown: libmicrohttpd then closes */
    } else if (!d) {
        char msg[256];
        snprintf(msg, sizeof msg, "no such endpoint: %.200s", url);
        refuse(r, PROTO_E_NOT_FOUND, NULL, msg);
    } else if ((r->q.method == SRV_M_POST || r->q.method == SRV_M_DELETE) && !origin_allowed(r)) {
        /* A browser sends some cross-origin requests without a preflight
         * (a POST with Content-Type text/plain): refused before anything is
         * read or done, not merely hidden from the page. */
        char msg[300];
        snprintf(msg, sizeof msg, "Origin %.200s may not change anything here (--allow-origin)",
                 r->origin);
        refuse(r, PROTO_E_FORBIDDEN_ORIGIN, "bad_origin", msg);
    } else if (r->q.method == SRV_M_OPTIONS) {
        /* CORS preflight: browsers send it without credentials, so no
         * token is asked; answered once any body is in */
        r->preflight = true;
    } else if (!d->open && ctx->cfg.token && !authorized(r)) {
        refuse(r, PROTO_E_UNAUTHORIZED, "unauthorized",
               d->token_in_protocol
                   ? "a valid bearer token is required (Authorization: Bearer ..., or the "
                     "subprotocols " SRV_WS_PROTOCOL ", " SRV_WS_BEARER_PREFIX
                     "<base64url token>)"
                   : "a valid bearer token is required (Authorization: Bearer ...)");
    } else if (!(d->methods & r->q.method)) {
        char msg[128];
        snprintf(msg, sizeof msg, "method %.32s is not allowed here", method);
        refuse(r, PROTO_E_METHOD_NOT_ALLOWED, "method", msg);
    } else if (query && !d->any_query &&
               !srv_http_query_check(conn, r->q.method == SRV_M_DELETE ? NULL : d->query,
                                     d->label, qmsg, sizeof qmsg)) {
        /* unknown parameters are refused, as unknown JSON members are (a
         * DELETE reads none) */
        refuse(r, PROTO_E_INVALID_REQUEST, "query", qmsg);
    } else if (d->takes_body) {
        if (announced > ctx->cfg.limits.max_body_bytes) {
            refuse(r, PROTO_E_TOO_LARGE, "too_large",
                   "the request body exceeds the limit (--max-body)");
            return refuse_now(r); /* before the body: libmicrohttpd then closes */
        }
        /* The body budget: an announced body that does not fit what is
         * left of it now is refused before it is read; nothing is reserved
         * (bytes are counted as they arrive, http_body.c). */
        r->announced = (size_t)announced;
        if (announced > 0 && !srv_budget_fits(&ctx->sh->body_bytes, (size_t)announced + 1)) {
            refuse(r, PROTO_E_OVERLOADED, "body_budget",
                   "request bodies in flight fill the body budget (--body-budget); retry "
                   "later");
            return refuse_now(r);
        }
    }
    if (r->has_err && hv.expect_continue)
        return refuse_now(r);
    return MHD_YES;
}

/* The batch's binary forms, asked for by Content-Type and Accept. */
static void media_types(http_req *r)
{
    if (!r->q.route->binary)
        return;
    r->q.binary_in = srv_http_names_type(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                            MHD_HTTP_HEADER_CONTENT_TYPE),
                                PROTO_BINARY_TYPE, false);
    r->q.binary_out = srv_http_names_type(
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
        PROTO_BINARY_TYPE, true);
}

/* The final call: the refusal, the preflight, the upgrade or the route's
 * handler. */
static enum MHD_Result answer(http_req *r)
{
    r->in_dispatch = true;
    if (r->has_err) {
        srv_http_respond_error(&r->q, &r->err);
    } else if (r->preflight) {
        r->in_dispatch = false;
        return answer_preflight(r);
    } else if (r->q.route->takes_body && r->q.len == 0) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INVALID_JSON, "", "the request body is empty");
        srv_http_respond_error(&r->q, &e);
    } else if (r->q.route->upgrade) {
        enum MHD_Result rc = queue_upgrade(r);
        r->in_dispatch = false;
        return rc;
    } else {
        media_types(r);
        r->q.route->handle(&r->q);
    }
    r->in_dispatch = false;
    if (r->state == ST_ANSWERED)
        return MHD_YES;
    if (r->q.pending == 0)
        return MHD_NO; /* a handler that neither answered nor works: out of memory */
    /* the handler works on the pool: wait for its answer */
    r->state = ST_WORKING;
    r->suspended = true;
    MHD_suspend_connection(r->conn);
    return MHD_YES;
}

enum MHD_Result srv_http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version,
                                const char *upload_data, size_t *upload_data_size,
                                void **con_cls)
{
    srv_ctx *ctx = cls;
    http_req *r = *con_cls;
    if (!r || r == SRV_HTTP_NUL_URL || r == SRV_HTTP_QUERY_URL)
        return begin(ctx, conn, url, method, version, con_cls);

    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        srv_guard_progress(ctx, conn, n);
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
        return answer(r);
    case ST_WORKING:
    case ST_ANSWERED:
        return MHD_YES; /* not ours to answer (yet) */
    case ST_READY: {
        srv_response v = r->ready;
        r->ready.body = NULL;
        r->ready.held = 0;
        return queue_value(r, &v);
    }
    }
    return MHD_YES;
}

void srv_http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    http_req *r = *con_cls;
    srv_guard_rearm(cls, conn);
    if (!r || r == SRV_HTTP_NUL_URL || r == SRV_HTTP_QUERY_URL)
        return; /* the access handler never saw it: only the URL's mark */
    *con_cls = NULL;
    if (r->status_sent)
        srv_metrics_request(r->q.ctx->metrics, r->q.route ? r->q.route->label : "other",
                            (int)r->status_sent);
    srv_guard_consumed_add(r->q.ctx, conn, r->head_bytes + r->announced, !r->chunked);
    if (toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
        srv_metrics_rejected(r->q.ctx, "timeout");
    if (r->q.pending > 0) {
        r->q.dead = true; /* freed by the last release */
        return;
    }
    req_free(r);
}
