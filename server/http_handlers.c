/*
 * http_handlers.c: the endpoints of ikd's HTTP API: their route table,
 * which srv_http_handlers_register adds to the daemon's at start-up
 * (server/http_route.h), and a handler per endpoint. Each receives a
 * decoded request (server/http_handler.h: route, method, URL, the whole
 * body) and answers with a response value (srv_http_respond), at once or
 * after pool work handed on with srv_http_submit; none touches a
 * connection. The batch pipeline is http_batch.c's, the stream upgrade
 * ws_conn.c's; everything that talks to libmicrohttpd is http_mhd.c's.
 *
 * Endpoints (JSON in and out, Content-Type application/json):
 *   POST   /v1/solve          one target            -> 200 proto_job_encode()
 *   POST   /v1/solve/batch    many targets          -> 200 (http_batch.c)
 *   POST   /v1/chains         register a chain      -> 201 (new) / 200 (known), id
 *   GET    /v1/chains/{id}    describe it           -> 200 / 404
 *   DELETE /v1/chains/{id}    forget it             -> 204 / 404
 *   GET    /v1/solvers        solvers and options   -> 200
 *   GET    /v1/stream         WebSocket upgrade     -> 101 (server/ws_conn.c)
 *   GET    /livez             the process runs      -> 200 (no token needed)
 *   GET    /readyz            accepting work        -> 200, 503 while shutting down
 *   GET    /metrics           Prometheus text       -> 200
 *   GET    /openapi.yaml      the API contract      -> 200 (no token needed)
 *   GET    / and /NAME        the live page (--web)  -> 200 from memory (web.h),
 *                                                        no token needed
 *   OPTIONS on any of them    CORS preflight        -> 204 (http_mhd.c)
 *
 * Where a single solve runs: server/solve.c decides (inline when cheap,
 * the pool otherwise, where it is also encoded). A request body above
 * SRV_DECODE_INLINE_MAX (server/solve.h: a large single solve, a URDF chain
 * registration) is decoded on the pool: parsing megabytes of JSON or XML
 * takes milliseconds, which the loop owes every other client; a chain
 * decoded there is registered back on the loop. When --max-queue units of work are
 * admitted already, the request gets 503 + Retry-After: 1.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json_write.h"
#include "server/build_info.h"
#include "server/http_handler.h"
#include "server/metrics.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/web.h"
#include "server/ws.h"

#define CHAINS_PREFIX "/v1/chains/"

/* Frees what the handlers keep in q (its job, batch). */
static void request_cleanup(srv_request *q)
{
    proto_job_free(q->job);
    q->job = NULL;
    srv_http_batch_free(q->batch);
    q->batch = NULL;
}

/* ---- POST /v1/solve ------------------------------------------------------- */

/* A single solve: the job's solve (inline or on the pool), then its
 * answer encoded where it was solved. */
typedef struct single {
    srv_solve solve;
    srv_request *q;
    char *out;
    size_t out_len;
    bool heap;          /* malloc'd (pool work); else on the handler's stack */
    bool decode_failed; /* a body decoded on the pool was refused: err */
    proto_error err;    /* (last: not cleared, written only on a refusal) */
} single;

static void single_encode(srv_solve *s)
{
    single *w = s->data;
    w->out = proto_job_encode(s->job, &w->out_len);
}

static void single_done(srv_solve *s, int status)
{
    single *w = s->data;
    srv_request *q = w->q;
    char *out = w->out;
    size_t len = w->out_len;
    bool refused = status == SRV_OK && w->decode_failed;
    proto_error e;
    if (refused)
        e = w->err;
    if (w->heap)
        free(w);
    if (!srv_http_release(q)) {
        free(out);
        return;
    }
    if (refused) {
        srv_http_respond_error(q, &e);
    } else if (status != SRV_OK) {
        free(out);
        proto_error_set(&e, PROTO_E_INTERNAL, "", "the daemon is shutting down");
        srv_http_respond_error(q, &e);
    } else {
        srv_http_respond_body(q, 200, out, len);
    }
}

/* w for q's job (w: on the stack for a solve done inline, else NULL to
 * allocate one). */
static single *single_init(single *w, srv_request *q)
{
    bool heap = !w;
    if (heap && !(w = malloc(sizeof *w)))
        return NULL;
    memset(w, 0, offsetof(single, err));
    w->heap = heap;
    w->q = q;
    w->solve.job = q->job;
    w->solve.begin = 0;
    w->solve.end = 1;
    w->solve.after = single_encode;
    w->solve.done = single_done;
    w->solve.data = w;
    return w;
}

/* A body too large to decode on the loop: decoded, solved and encoded in
 * one pool item. */
static void big_solve_work(srv_ctx *ctx, srv_solve *s)
{
    single *w = s->data;
    srv_request *q = w->q;
    if (proto_job_decode(q->body, q->len, PROTO_SOLVE, &ctx->cfg.limits, srv_registry_lookup,
                         ctx->registry, &q->job, &w->err) != 0) {
        w->decode_failed = true;
        return;
    }
    s->job = q->job;
    srv_solve_run(ctx, s);
}

static void handle_solve(srv_request *q)
{
    proto_error e;
    single *w;
    if (q->len > SRV_DECODE_INLINE_MAX) {
        if (!(w = single_init(NULL, q)))
            return;
        w->solve.work = big_solve_work;
        if (srv_http_submit(q, &w->solve) != SRV_OK)
            free(w);
        return;
    }
    if (proto_job_decode(q->body, q->len, PROTO_SOLVE, &q->ctx->cfg.limits, srv_registry_lookup,
                         q->ctx->registry, &q->job, &e) != 0) {
        srv_http_respond_error(q, &e);
        return;
    }
    /* a cheap solve runs inline, within srv_http_submit, so its state
     * lives on this stack */
    single here;
    if (!(w = single_init(srv_solve_is_cheap(q->ctx, q->job) ? &here : NULL, q)))
        return;
    if (srv_http_submit(q, &w->solve) != SRV_OK && w->heap)
        free(w);
}

/* ---- chains ------------------------------------------------------------------ */

/* The description of chain c (proto_chain_describe with its id), as text
 * (malloc'd; NULL when out of memory). Any thread: a large chain's (it
 * echoes the chain, megabytes for a URDF) is written on the pool. */
static char *chain_text(const proto_chain *c, size_t *len)
{
    json_t *desc = proto_chain_describe(c);
    if (!desc || !json_is_object(desc)) {
        json_decref(desc);
        desc = json_object();
    }
    json_object_set_new(desc, "id", json_string(proto_chain_id(c)));
    char *text = proto_json_dump(desc, false);
    json_decref(desc);
    *len = text ? strlen(text) : 0;
    return text;
}

/* Whether a chain's description is written off the loop. */
static bool chain_is_large(const proto_chain *c)
{
    return proto_chain_memory(c) > SRV_DECODE_INLINE_MAX;
}

/* Answers q with a chain's description text (taken; NULL: out of memory).
 * A large one holds its bytes of the answer budget until sent. */
static void chain_answer(srv_request *q, int status, const char *id, char *text, size_t len)
{
    proto_error e;
    if (!text) {
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv_http_respond_error(q, &e);
        return;
    }
    srv_response v = {0};
    v.status = status;
    v.body = text;
    v.len = len;
    if (len > SRV_DECODE_INLINE_MAX) {
        v.held = len;
        srv_budget_take(&q->ctx->answer_bytes, len); /* room was checked before */
    }
    if (status == 201 || (status == 200 && q->method == SRV_M_POST))
        snprintf(v.location, sizeof v.location, CHAINS_PREFIX "%s", id);
    srv_http_respond(q, &v);
}

/* A large description would not fit the answer budget now: 503. */
static bool answer_budget_full(srv_request *q, size_t bytes)
{
    srv_ctx *ctx = q->ctx;
    if (srv_budget_fits(&ctx->answer_bytes, bytes))
        return false;
    proto_error e;
    proto_error_set(&e, PROTO_E_OVERLOADED, "",
                    "answers waiting for their clients fill the answer budget (--answer-budget); "
                    "retry later");
    srv_metrics_rejected(ctx, "answer_budget");
    srv_http_respond_error(q, &e);
    return true;
}

/* Registers the decoded chain c (the reference is taken over): false, with
 * q answered 413, when the registry cannot hold it; *created says whether
 * it is new. */
static bool chain_put(srv_request *q, proto_chain *c, bool *created)
{
    if (srv_registry_put(q->ctx->registry, c, created) == SRV_OK)
        return true;
    proto_error e;
    proto_error_set(&e, PROTO_E_TOO_LARGE, "",
                    "the chain needs more memory than the registry holds (--registry-bytes)");
    srv_metrics_rejected(q->ctx, "too_large");
    srv_http_respond_error(q, &e);
    return false;
}

/* Registers the decoded chain c (the reference is taken over) and answers
 * 201 (new) or 200 with its description and Location. */
static void chain_register(srv_request *q, proto_chain *c)
{
    bool created = false;
    if (!chain_put(q, c, &created)) {
        proto_chain_unref(c);
        return;
    }
    size_t len;
    char *text = chain_text(c, &len);
    chain_answer(q, created ? 201 : 200, proto_chain_id(c), text, len);
    proto_chain_unref(c);
}

/* A chain registration too large to decode on the loop (a URDF document):
 * decoded and described on the pool, registered back on the loop. And the
 * description of a large registered chain (GET /v1/chains/{id}), written
 * on the pool. */
typedef struct chain_work {
    srv_solve s; /* its work */
    srv_request *q;
    proto_chain *chain;
    proto_error err;
    char *text; /* the description */
    size_t len;
} chain_work;

static void chain_decode_work(srv_ctx *ctx, srv_solve *s)
{
    chain_work *cw = s->data;
    cw->chain = proto_chain_decode(cw->q->body, cw->q->len, &ctx->cfg.limits, &cw->err);
    if (cw->chain)
        cw->text = chain_text(cw->chain, &cw->len);
}

static void chain_decoded_done(srv_solve *s, int status)
{
    chain_work *cw = s->data;
    srv_request *q = cw->q;
    proto_chain *c = cw->chain;
    proto_error e = cw->err;
    char *text = cw->text;
    size_t len = cw->len;
    free(cw);
    if (!srv_http_release(q)) {
        proto_chain_unref(c);
        free(text);
        return;
    }
    bool created = false;
    if (status != SRV_OK) {
        proto_chain_unref(c);
        free(text);
        proto_error_set(&e, PROTO_E_INTERNAL, "", "the daemon is shutting down");
        srv_http_respond_error(q, &e);
    } else if (!c) {
        srv_http_respond_error(q, &e);
    } else if (!chain_put(q, c, &created)) {
        proto_chain_unref(c);
        free(text);
    } else {
        chain_answer(q, created ? 201 : 200, proto_chain_id(c), text, len);
        proto_chain_unref(c);
    }
}

static void chain_text_work(srv_ctx *ctx, srv_solve *s)
{
    chain_work *cw = s->data;
    cw->text = chain_text(cw->chain, &cw->len);
}

static void chain_text_done(srv_solve *s, int status)
{
    chain_work *cw = s->data;
    srv_request *q = cw->q;
    char *text = cw->text;
    size_t len = cw->len;
    char id[64]; /* a chain id (32 hex digits) */
    snprintf(id, sizeof id, "%s", proto_chain_id(cw->chain));
    proto_chain_unref(cw->chain);
    free(cw);
    if (!srv_http_release(q)) {
        free(text);
        return;
    }
    if (status != SRV_OK) {
        free(text);
        proto_error e;
        proto_error_set(&e, PROTO_E_INTERNAL, "", "the daemon is shutting down");
        srv_http_respond_error(q, &e);
        return;
    }
    chain_answer(q, 200, id, text, len);
}

/* Queues cw's work on the pool for q; on refusal q is answered. */
static void chain_submit(srv_request *q, chain_work *cw, void (*work)(srv_ctx *, srv_solve *),
                         void (*done)(srv_solve *, int))
{
    cw->q = q;
    cw->s.work = work;
    cw->s.done = done;
    cw->s.data = cw;
    if (srv_http_submit(q, &cw->s) != SRV_OK) {
        proto_chain_unref(cw->chain);
        free(cw);
    }
}

static void handle_chains_post(srv_request *q)
{
    proto_error e;
    if (q->len > SRV_DECODE_INLINE_MAX) {
        /* its answer echoes the chain: about the body's size */
        if (answer_budget_full(q, q->len))
            return;
        chain_work *cw = calloc(1, sizeof *cw);
        if (cw)
            chain_submit(q, cw, chain_decode_work, chain_decoded_done);
        return;
    }
    proto_chain *c = proto_chain_decode(q->body, q->len, &q->ctx->cfg.limits, &e);
    if (!c) {
        srv_http_respond_error(q, &e);
        return;
    }
    chain_register(q, c);
}

static void handle_chain_id(srv_request *q)
{
    const char *id = q->url + strlen(CHAINS_PREFIX);
    proto_error e;
    if (q->method == SRV_M_DELETE) {
        if (srv_registry_remove(q->ctx->registry, id) == SRV_OK) {
            srv_response v = {0};
            v.status = 204;
            srv_http_respond(q, &v);
            return;
        }
    } else {
        proto_chain *c = srv_registry_get(q->ctx->registry, id);
        if (c && chain_is_large(c)) {
            chain_work *cw = answer_budget_full(q, proto_chain_memory(c))
                                 ? NULL
                                 : calloc(1, sizeof *cw);
            if (!cw) {
                proto_chain_unref(c);
                return;
            }
            cw->chain = c;
            chain_submit(q, cw, chain_text_work, chain_text_done);
            return;
        }
        if (c) {
            size_t len;
            char *text = chain_text(c, &len);
            chain_answer(q, 200, proto_chain_id(c), text, len);
            proto_chain_unref(c);
            return;
        }
    }
    proto_error_set(&e, PROTO_E_UNKNOWN_CHAIN, "", "no chain with id \"%.200s\"", id);
    srv_http_respond_error(q, &e);
}

/* ---- the others --------------------------------------------------------------- */

static void handle_metrics(srv_request *q)
{
    srv_response v = {0};
    v.status = 200;
    v.content_type = "text/plain; version=0.0.4; charset=utf-8";
    srv_metrics_held held = {0};
    held.registry = srv_registry_bytes(q->ctx->registry);
    held.request_bodies = srv_budget_used(&q->ctx->body_bytes);
    held.answers = srv_budget_used(&q->ctx->answer_bytes);
    held.stream_chains = srv_budget_used(&q->ctx->stream_chain_bytes);
    srv_metrics_set_held(q->ctx->metrics, &held);
    v.body = srv_metrics_render(q->ctx->metrics, q->ctx->pool_depth,
                                srv_registry_count(q->ctx->registry), q->ctx->active_requests,
                                &v.len);
    if (!v.body)
        return;
    srv_http_respond(q, &v);
}

/* A file of the live page, from the table loaded at startup (web.h): the
 * bytes are the table's own, so the response does not copy them. */
static void handle_static(srv_request *q)
{
    const srv_web_file *f = srv_web_find(q->ctx->web, q->url);
    if (!f)
        return; /* routed here only when it exists (is_page_file) */
    srv_response v = {0};
    v.status = 200;
    v.content_type = f->content_type;
    v.static_body = f->data;
    v.len = f->len;
    v.page_file = true;
    srv_http_respond(q, &v);
}

/* proto/openapi.yaml as compiled in (build_info.h), not copied. */
static void handle_openapi(srv_request *q)
{
    srv_response v = {0};
    v.status = 200;
    v.content_type = "application/yaml";
    v.static_body = srv_openapi_yaml;
    v.len = srv_openapi_yaml_len;
    srv_http_respond(q, &v);
}

/* GET /v1/solvers: proto's description, its limits completed by the
 * daemon's own bounds (limits.server), so that a client can read every
 * bound it is held to. NULL when out of memory. */
static json_t *solvers_describe(const srv_ctx *ctx)
{
    const srv_config *c = &ctx->cfg;
    json_t *d = proto_solvers_describe(&c->limits);
    json_t *server = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "max_connections",
        (json_int_t)c->max_connections, "max_connections_per_address",
        (json_int_t)c->max_conn_per_addr, "idle_timeout_s", (json_int_t)c->conn_timeout_s,
        "request_timeout_s", (json_int_t)c->request_timeout_s, "drain_timeout_s",
        (json_int_t)c->drain_timeout_s, "body_budget_bytes", (json_int_t)c->body_budget_bytes,
        "answer_budget_bytes", (json_int_t)c->answer_budget_bytes,
        "connection_memory_bytes", (json_int_t)c->connection_memory_bytes,
        "max_message_bytes", (json_int_t)c->max_message_bytes, "max_send_queue_bytes",
        (json_int_t)c->ws_send_queue_bytes, "max_streams", (json_int_t)c->max_streams,
        "stream_chain_bytes", (json_int_t)c->stream_chain_bytes, "registry_bytes",
        (json_int_t)c->registry_bytes,
        "max_queue", (json_int_t)c->pool_queue_max);
    json_t *limits = json_object_get(d, "limits");
    if (!d || !server || !json_is_object(limits) || json_object_set_new(limits, "server", server)) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static void handle_livez(srv_request *q)
{
    srv_http_respond_json(q, 200, json_pack("{s:s}", "status", "ok"));
}

static void handle_readyz(srv_request *q)
{
    if (q->ctx->shutting_down)
        srv_http_respond_json(q, 503, json_pack("{s:s}", "status", "shutting_down"));
    else
        srv_http_respond_json(q, 200, json_pack("{s:s}", "status", "ready"));
}

static void handle_solvers(srv_request *q)
{
    srv_http_respond_json(q, 200, solvers_describe(q->ctx));
}

/* Whether --web serves url (the route of the live page's files). */
static bool is_page_file(const srv_ctx *ctx, const char *url)
{
    return srv_web_find(ctx->web, url) != NULL;
}

/* ---- the route table ----------------------------------------------------------- */

#define GET_HEAD (SRV_M_GET | SRV_M_HEAD)

/* In the order a URL is matched: exact paths, the chains' prefix, the
 * page's files. */
static const srv_route routes[] = {
    {.path = "/v1/solve", .label = "/v1/solve", .methods = SRV_M_POST, .takes_body = true,
     .handle = handle_solve, .cleanup = request_cleanup},
    {.path = "/v1/solve/batch", .label = "/v1/solve/batch", .methods = SRV_M_POST,
     .takes_body = true, .binary = true, .handle = srv_http_batch, .cleanup = request_cleanup},
    {.path = "/v1/chains", .label = "/v1/chains", .methods = SRV_M_POST, .takes_body = true,
     .handle = handle_chains_post, .cleanup = request_cleanup},
    {.path = "/v1/solvers", .label = "/v1/solvers", .methods = GET_HEAD,
     .handle = handle_solvers},
    {.path = "/v1/stream", .label = "/v1/stream", .methods = SRV_M_GET,
     .token_in_protocol = true, .upgrade = srv_ws_upgrade},
    {.path = "/livez", .label = "/livez", .methods = GET_HEAD, .open = true,
     .handle = handle_livez},
    {.path = "/readyz", .label = "/readyz", .methods = GET_HEAD, .open = true,
     .handle = handle_readyz},
    {.path = "/metrics", .label = "/metrics", .methods = GET_HEAD, .handle = handle_metrics},
    {.path = "/openapi.yaml", .label = "/openapi.yaml", .methods = GET_HEAD, .open = true,
     .handle = handle_openapi},
    {.path = CHAINS_PREFIX, .prefix = true, .label = "/v1/chains/{id}",
     .methods = GET_HEAD | SRV_M_DELETE, .handle = handle_chain_id,
     .cleanup = request_cleanup},
    {.match = is_page_file, .label = "static", .methods = GET_HEAD, .open = true,
     .handle = handle_static},
};

int srv_http_handlers_register(srv_ctx *ctx)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        int rc = srv_http_route_add(ctx, &routes[i]);
        if (rc != SRV_OK)
            return rc;
    }
    return SRV_OK;
}
