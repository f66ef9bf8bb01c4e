/*
 * http_req.h: the HTTP side's record of one request (http_req), shared by
 * the two files that handle it and by nothing else: server/http_mhd.c
 * (libmicrohttpd's callbacks, the checks before a handler, answers) and
 * server/http_body.c (the request body and the body budget). Handlers see
 * only its first member, the srv_request of server/http_handler.h.
 */
#ifndef IKD_SERVER_HTTP_REQ_H
#define IKD_SERVER_HTTP_REQ_H

#include <stdbool.h>
#include <stddef.h>

#include "server/http_handler.h"

/* Bodies of up to this many bytes (with their NUL) are kept in the request
 * itself (http_req.small). */
#define SMALL_BODY 1024

enum req_state {
    ST_READING,  /* headers/body arriving */
    ST_WORKING,  /* the handler works on the pool; no answer yet */
    ST_READY,    /* the answer came while working: queue it on the next call */
    ST_ANSWERED  /* a response was queued */
};

/* A piece of a streamed answer, queued until the client has taken it. */
typedef struct out_piece {
    struct out_piece *next;
    char *data;
    size_t len;
} out_piece;

typedef struct http_req {
    srv_request q; /* what the handlers see (first member) */
    struct MHD_Connection *conn;
    const char *origin; /* its Origin header (libmicrohttpd's copy), or NULL */
    enum req_state state;
    bool in_dispatch;     /* the handler is running: an answer is queued at once */
    bool suspended;
    bool preflight;       /* a CORS preflight (OPTIONS) on a known route */
    unsigned status_sent; /* for metrics; 0 = none */
    bool has_err;         /* err holds a refusal decided before the body was in */
    size_t cap;
    size_t held;      /* bytes of ctx->sh->body_bytes this request accounts for */
    size_t announced; /* Content-Length, 0 when none */
    size_t head_bytes; /* the request line and headers, as libmicrohttpd read them */
    bool chunked;      /* a body without Content-Length: its bytes are not known */
    bool received;    /* the request is in whole (srv_guard_received) */
    size_t discarded; /* body bytes read and thrown away after a refusal */
    srv_response ready; /* the answer prepared while working (ST_READY) */
    /* a streamed answer (srv_http_stream_begin): its pieces in order, the
     * bytes of the first already taken, whether it ended (and was cut) */
    out_piece *out_head, *out_tail;
    size_t out_pieces, out_off;
    bool out_ended, out_cut;
    void (*drained)(srv_request *q);
    struct http_req *next_spare; /* in ctx->http's spares */
    /* (not cleared for a new request:) */
    proto_error err; /* written only with has_err */
    char small[SMALL_BODY]; /* a small body's bytes (q.body points here) */
} http_req;

/* What srv__http_body_append did with the bytes it was given. */
typedef enum srv_body_result {
    SRV_BODY_TAKEN,       /* appended, or read and discarded after a refusal */
    SRV_BODY_TOO_LARGE,   /* they pass --max-body: refuse, then srv__http_body_drop */
    SRV_BODY_OVER_BUDGET, /* they pass --body-budget: refuse, then srv__http_body_drop */
    SRV_BODY_CLOSE        /* out of memory, or a discarded body far past the limit */
} srv_body_result;

/* Appends n bytes that arrived to r's body (kept NUL-terminated), counting
 * them against --body-budget; a request already refused, a preflight or a
 * route without a body only counts them as discarded. On any result but
 * SRV_BODY_TAKEN nothing is appended. */
srv_body_result srv__http_body_append(http_req *r, const char *data, size_t n);

/* Drops the body received so far (a refusal decided mid-body, n bytes
 * just arrived): its memory and its part of the budget are given back; the
 * rest is read and discarded, and the refusal answered once it is in. */
void srv__http_body_drop(http_req *r, size_t n);

/* Frees r's body (unless it is the request's own small one); q.len stays. */
void srv__http_body_free(http_req *r);

#endif
