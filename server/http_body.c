/*
 * http_body.c: a request's body as it arrives, for server/http_mhd.c: the
 * bytes appended to the request (a small body in the request itself, a
 * larger one grown geometrically, never beyond an announced length or
 * --max-body), counted against --body-budget as they arrive (an announced
 * Content-Length reserves nothing: a client announcing 8 MB and sending
 * nothing costs the others nothing), and dropped, with what they held of
 * the budget, when the request is refused mid-body. It talks to no
 * connection: it says what happened (srv_body_result, server/http_req.h)
 * and http_mhd.c refuses and answers.
 */
#include <stdlib.h>
#include <string.h>

#include "server/budget.h"
#include "server/http_req.h"

void srv__http_body_free(http_req *r)
{
    if (r->q.body != r->small)
        free(r->q.body);
    r->q.body = NULL;
}

/* Accounts for the request holding `total` bytes of body in the budget
 * ctx->sh->body_bytes (never less than it holds already); false when that
 * would pass --body-budget. */
static bool body_reserve(http_req *r, size_t total)
{
    srv_ctx *ctx = r->q.ctx;
    if (total <= r->held)
        return true;
    if (!srv_budget_reserve(&ctx->sh->body_bytes, total - r->held))
        return false;
    r->held = total;
    return true;
}

void srv__http_body_drop(http_req *r, size_t n)
{
    srv_ctx *ctx = r->q.ctx;
    r->discarded = r->q.len + n;
    srv__http_body_free(r);
    r->q.len = r->cap = 0;
    srv_budget_release(&ctx->sh->body_bytes, r->held);
    r->held = 0;
}

srv_body_result srv__http_body_append(http_req *r, const char *data, size_t n)
{
    srv_ctx *ctx = r->q.ctx;
    size_t max = ctx->cfg.limits.max_body_bytes;
    if (r->has_err || r->preflight || !r->q.route->takes_body) {
        /* Discarded; the error is answered once the body is in
         * (libmicrohttpd 0.9.75 cannot queue a response mid-body). A body
         * that goes on far past the limit is cut by closing the connection. */
        r->discarded += n;
        return r->discarded > 2 * max + 65536 ? SRV_BODY_CLOSE : SRV_BODY_TAKEN;
    }
    if (n > max - r->q.len)
        return SRV_BODY_TOO_LARGE;
    /* the budget counts what arrived (and the NUL the handlers get) */
    if (!body_reserve(r, r->q.len + n + 1))
        return SRV_BODY_OVER_BUDGET;
    if (!r->q.body && r->q.len + n + 1 <= SMALL_BODY) {
        r->q.body = r->small;
        r->cap = SMALL_BODY;
    }
    if (r->q.len + n + 1 > r->cap) {
        /* grown geometrically (realloc of a large block remaps its pages
         * rather than copying them), never beyond an announced length or
         * --max-body */
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->q.len + n + 1)
            cap *= 2;
        if (r->announced && cap > r->announced + 1 && r->q.len + n + 1 <= r->announced + 1)
            cap = r->announced + 1;
        if (cap > max + 1)
            cap = max + 1;
        bool small = r->q.body == r->small;
        char *p = realloc(small ? NULL : r->q.body, cap);
        if (!p)
            return SRV_BODY_CLOSE;
        if (small)
            memcpy(p, r->small, r->q.len);
        r->q.body = p;
        r->cap = cap;
    }
    memcpy(r->q.body + r->q.len, data, n);
    r->q.len += n;
    r->q.body[r->q.len] = '\0';
    return SRV_BODY_TAKEN;
}
