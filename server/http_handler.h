/*
 * http_handler.h: the seam inside ikd's HTTP side, between the one module that
 * talks to libmicrohttpd (server/http_mhd.c: the access handler, bodies and
 * their budget, the checks every request passes before its handler, CORS,
 * suspending and resuming connections, turning a response value into a
 * libmicrohttpd response) and the handlers (server/http_handlers.c, and the
 * batch pipeline of server/http_batch.c), which receive a decoded request
 * and answer with a response value. Handlers never see a connection or a
 * socket. Internal to those files; the daemon's entry points are in
 * server/http.h.
 *
 * A handler answers at once (srv_http_respond() while it runs) or later,
 * from the loop thread, after pool work: the connection is then suspended
 * until the answer comes. Pool work that refers to a request holds it
 * (srv_http_hold) and lets go when it completes (srv_http_release): a
 * request whose client left meanwhile is freed by the last release, and its
 * result is dropped.
 */
#ifndef SRV_HTTP_HANDLER_H
#define SRV_HTTP_HANDLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "server/srv.h"
#include "server/http.h"

/* ---- routes (http_handlers.c) ------------------------------------------- */

typedef enum srv_route {
    SRV_RT_SOLVE,
    SRV_RT_BATCH,
    SRV_RT_CHAINS,
    SRV_RT_CHAIN_ID,
    SRV_RT_SOLVERS,
    SRV_RT_STREAM,
    SRV_RT_LIVEZ,
    SRV_RT_READYZ,
    SRV_RT_METRICS,
    SRV_RT_OPENAPI,
    SRV_RT_STATIC,
    SRV_RT_NONE
} srv_route;

enum srv_method {
    SRV_M_GET = 1,
    SRV_M_HEAD = 2,
    SRV_M_POST = 4,
    SRV_M_DELETE = 8,
    SRV_M_OPTIONS = 16,
    SRV_M_OTHER = 32
};

typedef struct srv_route_def {
    const char *path;  /* NULL for SRV_RT_CHAIN_ID (prefix), STATIC and NONE */
    const char *label; /* the metrics label */
    unsigned methods;  /* srv_method bits */
    const char *allow; /* the Allow header */
    bool open;         /* no token needed */
    bool takes_body;
} srv_route_def;

extern const srv_route_def srv_routes[SRV_RT_NONE + 1];

/* The route of a URL path (SRV_RT_STATIC when --web serves that file). */
srv_route srv_http_route_of(const srv_ctx *ctx, const char *url);

/* ---- requests and responses ---------------------------------------------- */

typedef struct srv_request {
    srv_ctx *ctx;
    srv_route route;
    unsigned method; /* srv_method */
    const char *url;
    char *body; /* the whole body, NUL-terminated, or NULL; the HTTP layer's */
    size_t len;
    /* the handler's state while the request works */
    proto_job *job;
    proto_chain *chain;
    void *batch;      /* http_batch.c's pipeline */
    unsigned pending; /* pool items holding the request */
    bool dead;        /* the client is gone: results are dropped */
    /* the body is a binary batch (Content-Type PROTO_BINARY_TYPE), the
     * client takes binary answers (Accept names PROTO_BINARY_TYPE) */
    bool binary_in, binary_out;
} srv_request;

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
    bool upgrade;             /* GET /v1/stream: the HTTP layer upgrades */
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

/* Pool work refers to q: hold it before submitting; release it when the
 * work completed (loop thread). srv_http_release returns false when the
 * client had left and q is now freed: the caller must not touch q again. */
void srv_http_hold(srv_request *q);
bool srv_http_release(srv_request *q);

/* ---- handlers (http_handlers.c, http_batch.c) ----------------------------- */

/* Answers q (route, method and token already checked, the body in whole):
 * at once, or later after pool work. */
void srv_http_dispatch(srv_request *q);
/* Frees what handlers keep in q (job, chain, batch) when q is freed. */
void srv_http_request_cleanup(srv_request *q);

/* POST /v1/solve/batch: decoded on the pool, solved in chunks, encoded on
 * the pool, answered (http_batch.c). */
void srv_http_batch(srv_request *q);
void srv_http_batch_free(void *batch);

#endif /* SRV_HTTP_HANDLER_H */
