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

/* Frees what the handlers keep in q (its job, batch, scope). */
static void request_cleanup(srv_request *q)
{
    proto_job_free(q->job);
    q->job = NULL;
    srv_http_batch_free(q->batch);
    q->batch = NULL;
    if (q->scope) {
        srv_registry_scope_free(q->scope);
        free(q->scope);
        q->scope = NULL;
    }
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
    bool fetch;         /* ... for chain ids the shared registry may hold */
    proto_error err;    /* (last: not cleared, written only on a refusal) */
} single;

static void single_encode(srv_solve *s)
{
    single *w = s->data;
    w->out = proto_job_encode(s->job, &w->out_len);
}

static void handle_solve(srv_request *q);

static void single_done(srv_solve *s, int status)
{
    single *w = s->data;
    srv_request *q = w->q;
    char *out = w->out;
    size_t len = w->out_len;
    bool refused = status == SRV_OK && w->decode_failed;
    bool fetch = refused && w->fetch;
    proto_error e;
    if (refused)
        e = w->err;
    if (w->heap)
        free(w);
    if (!srv_http_release(q)) {
        free(out);
        return;
    }
    if (fetch) {
        srv_http_chains_fetch(q, &e, handle_solve); /* then decoded again */
    } else if (refused) {
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
    proto_chain_lookup_fn lookup;
    void *ud;
    srv_http_lookup(q, &lookup, &ud);
    if (proto_job_decode(q->body, q->len, PROTO_SOLVE, &ctx->cfg.limits, lookup, ud, &q->job,
                         &w->err) != 0) {
        w->decode_failed = true;
        /* the body is scanned here, off the loop, for the ids to fetch */
        w->fetch = srv_http_chains_missed(q, &w->err);
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
    proto_chain_lookup_fn lookup;
    void *ud;
    srv_http_lookup(q, &lookup, &ud);
    if (proto_job_decode(q->body, q->len, PROTO_SOLVE, &q->ctx->cfg.limits, lookup, ud, &q->job,
                         &e) != 0) {
        if (srv_http_chains_missed(q, &e))
            srv_http_chains_fetch(q, &e, handle_solve); /* then decoded again */
        else
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

/* ---- the others --------------------------------------------------------------- */

static void handle_metrics(srv_request *q)
{
    srv_response v = {0};
    v.status = 200;
    v.content_type = "text/plain; version=0.0.4; charset=utf-8";
    srv_metrics_held held = {0};
    held.shared_up = srv_registry_shared(q->ctx) ? srv_registry_shared_up(q->ctx) : -1;
    held.registry = srv_registry_bytes(q->ctx->registry);
    held.request_bodies = srv_budget_used(&q->ctx->sh->body_bytes);
    held.answers = srv_budget_used(&q->ctx->sh->answer_bytes);
    held.stream_chains = srv_budget_used(&q->ctx->sh->stream_chain_bytes);
    held.streams = srv_budget_used(&q->ctx->sh->stream_bytes);
    const srv_shared *sh = q->ctx->sh;
    for (unsigned i = 0; i < sh->nloops && i < SRV_METRICS_LOOPS_MAX; i++)
        held.loop_connections[held.loops++] = atomic_load(&sh->loops[i]->assigned);
    srv_metrics_set_held(q->ctx->metrics, &held);
    v.body = srv_metrics_render(q->ctx->metrics, srv_pool_depth_all(q->ctx->sh),
                                srv_registry_count(q->ctx->registry),
                                srv_http_active_all(q->ctx->sh), &v.len);
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
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "max_connections",
        (json_int_t)c->max_connections, "max_connections_per_address",
        (json_int_t)c->max_conn_per_addr, "idle_timeout_s", (json_int_t)c->conn_timeout_s,
        "request_timeout_s", (json_int_t)c->request_timeout_s, "drain_timeout_s",
        (json_int_t)c->drain_timeout_s, "body_budget_bytes", (json_int_t)c->body_budget_bytes,
        "answer_budget_bytes", (json_int_t)c->answer_budget_bytes,
        "connection_memory_bytes", (json_int_t)c->connection_memory_bytes,
        "max_message_bytes", (json_int_t)c->max_message_bytes, "max_send_queue_bytes",
        (json_int_t)c->ws_send_queue_bytes, "max_streams", (json_int_t)c->max_streams,
        "stream_chain_bytes", (json_int_t)c->stream_chain_bytes, "stream_bytes",
        (json_int_t)c->stream_bytes, "registry_bytes",
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

/* Ready until a drain begins. With --redis the answer also says whether
 * the shared registry is up, but stays 200 while it is not: this replica
 * still serves inline chains and the ids it holds, and a replica taken
 * out of rotation for it would only move its clients onto others that
 * cannot reach Redis either (ikd_registry_shared_up is the alert). */
static void handle_readyz(srv_request *q)
{
    srv_ctx *ctx = q->ctx;
    json_t *v = json_pack("{s:s}", "status", ctx->shutting_down ? "shutting_down" : "ready");
    if (v && srv_registry_shared(ctx))
        json_object_set_new(v, "registry",
                            json_pack("{s:s, s:b, s:s}", "kind", "shared", "up",
                                      srv_registry_shared_up(ctx), "state",
                                      srv_registry_shared_state(ctx)));
    srv_http_respond_json(q, ctx->shutting_down ? 503 : 200, v);
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
     .handle = srv_http_chains_post, .cleanup = request_cleanup, .query = "include"},
    {.path = "/v1/scenes", .label = "/v1/scenes", .methods = SRV_M_POST, .takes_body = true,
     .handle = srv_http_scenes_post, .cleanup = request_cleanup, .query = "include"},
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
     .methods = GET_HEAD | SRV_M_DELETE, .handle = srv_http_chain_id,
     .cleanup = request_cleanup, .query = "include"},
    {.path = "/v1/scenes/", .prefix = true, .label = "/v1/scenes/{id}",
     .methods = GET_HEAD | SRV_M_DELETE, .handle = srv_http_scene_id,
     .cleanup = request_cleanup, .query = "include"},
    {.match = is_page_file, .label = "static", .methods = GET_HEAD, .open = true,
     .handle = handle_static, .any_query = true},
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
