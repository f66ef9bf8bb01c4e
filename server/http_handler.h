/*
 * http_handler.h: the seam inside ikd's HTTP side, between the one module that
 * talks to libmicrohttpd (server/http_mhd.c: the access handler, bodies and
 * their budget, the checks every request passes before its handler, CORS,
 * suspending and resuming connections, turning a response value into a
 * libmicrohttpd response) and the handlers (server/http_handlers.c, and the
 * batch pipeline of server/http_batch.c), which receive a decoded request
 * and answer with a response value. Handlers never see a connection or a
 * socket, and the HTTP layer never names a handler: each is reached through
 * the route it registered (server/http_route.h). Internal to those files;
 * the daemon's entry points are in server/http.h.
 *
 * A handler answers at once (srv_http_respond() while it runs) or later,
 * from the loop thread, after pool work: the connection is then suspended
 * until the answer comes. Work goes to the pool through srv_http_submit,
 * which holds the request until the work is done (srv_http_release): a
 * request whose client left meanwhile is freed by the last release, and its
 * result is dropped.
 */
#ifndef SRV_HTTP_HANDLER_H
#define SRV_HTTP_HANDLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "server/http.h"
#include "server/http_route.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/srv.h"

/* ---- requests and responses ---------------------------------------------- */

struct srv_request {
    srv_ctx *ctx;
    const srv_route *route; /* the table's (server/http_route.h) */
    srv_method method;
    const char *url;
    char *body; /* the whole body, NUL-terminated, or NULL; the HTTP layer's */
    size_t len;
    /* the handler's state while the request works */
    proto_job *job;
    srv_registry_scope *scope; /* chains fetched for it from the shared
                                  registry, ids it missed (server/registry.h);
                                  NULL until one is missed */
    void *batch;      /* http_batch.c's pipeline */
    unsigned pending; /* holds not yet let go of (srv_http_submit, srv_http_hold) */
    bool dead;        /* the client is gone: results are dropped */
    /* the body is a binary batch (Content-Type PROTO_BINARY_TYPE), the
     * client takes binary answers (Accept names PROTO_BINARY_TYPE) */
    bool binary_in, binary_out;
};

/* What a handler answers. Headers beyond Content-Type are the few the API
 * uses. */
typedef struct srv_response {
    int status;
    const char *content_type; /* static; NULL: application/json */
    char *body;               /* malloc'd, taken by srv_http_respond; or NULL */
    const void *static_body;  /* bytes that outlive the response (not freed) */
    size_t len;
    const char *allow;        /* Allow (405, OPTIONS), or NULL */
    bool retry_after;         /* Retry-After: 1 (503) */
    bool page_file;           /* Cache-Control: no-cache, X-Content-Type-Options */
    char location[160];       /* Location, or "" */
    bool streamed;            /* the body comes in pieces (srv_http_stream_begin) */
    size_t held;              /* bytes of ctx->answer_bytes body accounts for:
                                 given back when body is freed (sent, or the
                                 client left) */
} srv_response;

/* The answer to q: now (while the handler runs) or later (loop thread,
 * after pool work; the suspended connection resumes). Takes resp->body. A
 * request that already has its answer, or whose client left, frees it. */
void srv_http_respond(srv_request *q, srv_response *resp);
/* The JSON error body of *e with its status (srv_http_status), Allow for
 * 405, Retry-After for 503, WWW-Authenticate for 401. */
void srv_http_respond_error(srv_request *q, const proto_error *e);
/* v (taken) as JSON with status; out of memory answers 500. */
void srv_http_respond_json(srv_request *q, int status, json_t *v);
/* The body (taken, malloc'd) as JSON with status. */
void srv_http_respond_body(srv_request *q, int status, char *body, size_t len);

/* ---- answers written out in pieces ---------------------------------------- */

/* A large answer (a batch's) is sent as it is made, so that neither ikd nor
 * the client holds all of it: srv_http_stream_begin answers q (loop thread,
 * after pool work, as srv_http_respond) with status and content_type
 * (static; NULL: application/json) and a body that follows in pieces, by
 * HTTP/1.1's chunked transfer coding (an HTTP/1.0 client reads to the end
 * of the connection). srv_http_stream_write appends a piece (malloc'd,
 * taken; freed at once when the client left), srv_http_stream_end ends the
 * body: complete, or cut when the answer cannot be finished (the
 * connection then closes without the last chunk, which a client sees as an
 * incomplete answer, never as a complete wrong one). drained (may be NULL)
 * runs on the loop thread each time the client has taken a whole piece,
 * so that a producer that keeps srv_http_stream_queued() bounded can make
 * the next: the memory an answer holds is what its producer lets queue.
 * Pieces wait while the client is slow; libmicrohttpd's --timeout cuts a
 * client that stops reading. */
void srv_http_stream_begin(srv_request *q, int status, const char *content_type,
                           void (*drained)(srv_request *q));
void srv_http_stream_write(srv_request *q, char *piece, size_t len);
void srv_http_stream_end(srv_request *q, bool complete);
/* Pieces written and not yet taken whole by the client. */
size_t srv_http_stream_queued(const srv_request *q);

/* Frees the body early (a batch's job holds what it needs). */
void srv_http_body_release(srv_request *q);
/* True when the client of a waiting request closed its connection
 * (libmicrohttpd does not watch suspended connections): a batch stops at
 * its next chunk. */
bool srv_http_client_gone(srv_request *q);

/* ---- pool work ------------------------------------------------------------ */

/* The one way a handler hands work on: s (its job, or its work function,
 * or a later stage of admitted work: server/solve.h) goes where
 * srv_solve_submit decides, holding q meanwhile. Returns 0: s->done runs
 * exactly once (before this returns when solved inline) and must end by
 * letting go of q with srv_http_release. Otherwise q was let go of and
 * answered (503 and Retry-After: 1 when --max-queue units of work are
 * admitted already, 500 otherwise), s->done never runs, and the caller
 * only frees what it made for s. */
int srv_http_submit(srv_request *q, srv_solve *s);

/* Something else refers to q (a batch waiting for its turn): hold it; let
 * go of it when done (loop thread). srv_http_release returns false when
 * the client had left and q is now freed: the caller must not touch q
 * again. */
void srv_http_hold(srv_request *q);
bool srv_http_release(srv_request *q);

/* The value of the query parameter name of q's URL (?include=source), or
 * NULL. Lives as long as q. */
const char *srv_http_query(srv_request *q, const char *name);

/* ?include=source (GET and POST of chains and scenes): 1 with it, 0
 * without, -1 (q answered 400) when the query asks for something else. */
int srv_http_include_source(srv_request *q);

/* ---- scenes by id (http_scenes.c) ----------------------------------------- */

/* POST /v1/scenes, and GET and DELETE /v1/scenes/{id}. */
void srv_http_scenes_post(srv_request *q);
void srv_http_scene_id(srv_request *q);

/* ---- chains by id (http_chains.c) ----------------------------------------- */

/* POST /v1/chains, and GET and DELETE /v1/chains/{id}. */
void srv_http_chains_post(srv_request *q);
void srv_http_chain_id(srv_request *q);

/* The lookup q's decodes use: q's scope (chains fetched for it, then the
 * local registry) once it has one, else the local registry. */
void srv_http_lookup(srv_request *q, proto_chain_lookup_fn *fn, void **ud);

/* After a decode of q's body failed with err: true when err is
 * unknown_chain, the registry is shared (--redis) and ids to fetch were
 * noted in q's scope (made now; the body scanned for every chain id it
 * names). With err NULL, after a decode that succeeded: true when it
 * missed ids all the same (a batch of items answers those items with
 * unknown_chain). Any thread: a body decoded on the pool is scanned there. */
bool srv_http_chains_missed(srv_request *q, const proto_error *err);
/* Loop thread, after srv_http_chains_missed said true (q not answered):
 * fetches the noted ids (q held meanwhile); once they are in, again(q)
 * runs, which decodes again (with srv_http_lookup). When the fetch cannot
 * help, q is answered instead: err (404) when none was found (with err
 * NULL, again runs all the same), 503 when Redis cannot be asked (at
 * once, or within --redis-timeout), the refusal of a fetched chain this
 * replica's limits refuse. */
void srv_http_chains_fetch(srv_request *q, const proto_error *err, void (*again)(srv_request *q));
/* 503 with Retry-After for q: the shared registry (Redis) could not be
 * asked (why). */
void srv_http_registry_unavailable(srv_request *q, const char *why);
/* 404 for q: no chain or scene (k) with this id (unknown_chain,
 * unknown_scene). */
void srv_http_registry_unknown(srv_request *q, proto_reg_kind k, const char *id);
/* DELETE /v1/chains/{id} and /v1/scenes/{id}: 204 when this replica or,
 * with --redis, the shared registry held it (removed from both and
 * announced to every replica), 404 when neither did, 503 when Redis
 * cannot be asked. */
void srv_http_registry_delete(srv_request *q, proto_reg_kind k, const char *id);
/* GET of an id (kind k) this replica does not hold: 404 without --redis
 * (or for an id of the wrong form), else the id fetched from Redis and
 * again(q) run once the scope holds it (srv_http_chains_fetch). */
void srv_http_registry_get_miss(srv_request *q, proto_reg_kind k, const char *id,
                                void (*again)(srv_request *q));

/* ---- the batch pipeline (http_batch.c) ------------------------------------- */

/* POST /v1/solve/batch: decoded on the pool, solved in chunks, encoded on
 * the pool, answered. */
void srv_http_batch(srv_request *q);
/* Frees q's batch (q->batch) with what it holds. */
void srv_http_batch_free(void *batch);

#endif /* SRV_HTTP_HANDLER_H */
