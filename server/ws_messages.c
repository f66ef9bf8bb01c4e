/*
 * ws_messages.c: the messages of a WebSocket connection, in the order sent,
 * handed to the streams (server/ws_stream.c) and ticks (server/ws_tick.c);
 * and the hooks through which the connection (server/ws_conn.c) reaches
 * the stream side: srv_ws_stream_hooks, which serve.c gives srv_ws_start.
 *
 * Each text message is decoded (proto_stream_decode_raw; a binary message is a
 * binary tick, proto_stream_decode_binary) and dispatched by its type: open, close, target and path to their stream, tick to the ticks. A
 * bad message gets an "error" message naming the stream, seq and JSON
 * path, and the connection stays open. All messages read from the socket
 * in one go are decoded before any target is solved (on_read_done then
 * runs the streams given a target, then the waiting tick), so a client
 * that sends faster than ikd solves only gets its newest target per stream
 * solved.
 *
 * Large messages: a message above SRV_DECODE_INLINE_MAX (server/solve.h)
 * is decoded on the pool (for an open message, its chain and session too:
 * an inline URDF of a megabyte takes milliseconds), and the connection is
 * not read meanwhile (srv__ws_pause); the messages the same socket read
 * held after it wait in the connection's inbox and are handled in order
 * once it is back, so a connection's messages are answered in the order
 * sent.
 *
 * Opens, and scene messages, by an id this replica does not hold (with
 * --redis): the chain or scene is fetched from the shared registry first,
 * and the connection waits for it as for a message decoded on the pool
 * (open_fetch).
 *
 * Not here: the socket and framing (ws_conn.c), one stream's rules
 * (ws_stream.c), ticks (ws_tick.c), the message formats
 * (proto/proto_stream.c).
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/trim.h"
#include "server/ws.h"
#include "server/ws_stream.h"

static bool open_fetch(ws_conn *c, proto_stream_msg *m, const proto_error *err);
static bool reopen_later(ws_conn *c, proto_stream_msg *m, proto_session *session,
                         const proto_error *err);

/* ---- one message ------------------------------------------------------------------ */

/* A decoded message (rc 0) or its decoding error (rc -1, *e). session,
 * err: an open message's session prepared off the loop (see
 * srv__stream_open). *text: the malloc'd text m was decoded from, which a
 * tick takes (the caller frees what is left), or NULL. */
static void handle_msg(ws_conn *c, proto_stream_msg *m, int rc, proto_error *e,
                       proto_session *session, const proto_error *err, char **text)
{
    if (rc != 0) {
        srv__ws_send_error(c, m->stream, m->has_seq, m->seq, e);
        return;
    }
    if (m->type == PROTO_STREAM_OPEN) {
        if (reopen_later(c, m, session, err))
            return; /* opened once the stream of its name has closed */
        if (!session && open_fetch(c, m, err))
            return; /* opened once the chain is fetched */
        srv__stream_open(c, m, session, err);
        return;
    }
    if (m->type == PROTO_STREAM_TICK) {
        srv__tick_read(c, m, text);
        return;
    }
    ws_stream *s = srv__stream_find(c, m->stream);
    if (!s || s->close_after) {
        proto_error_set(e, PROTO_E_UNKNOWN_STREAM, "/stream",
                        "no stream \"%s\" is open on this connection", m->stream);
        srv__ws_send_error(c, m->stream, m->has_seq, m->seq, e);
    } else if (m->type == PROTO_STREAM_CLOSE) {
        srv__stream_close(s);
    } else if (m->type == PROTO_STREAM_TARGET) {
        srv__stream_target(s, m);
    } else if (m->type == PROTO_STREAM_PATH) {
        srv__stream_path(s, m);
    } else if (m->type == PROTO_STREAM_SCENE) {
        /* the stream's new scene, for the targets after it (moving
         * obstacles); answered only when refused. By an id this replica
         * does not hold: once fetched (open_fetch) */
        if (m->scene_id && open_fetch(c, m, NULL))
            return;
        if (srv__stream_scene(s, m, srv_registry_lookup, srv__ws_ctx(c)->registry, e))
            srv__ws_send_error(c, m->stream, false, 0, e);
    }
}

/* A message: text (JSON), or binary (a binary tick, decoded at once: its
 * targets are numbers in place, nothing to parse). owned: text when it is
 * a malloc'd buffer of the caller's, given here; NULL when text is the
 * message the connection is delivering, which a tick (either form) then
 * takes from it (srv__ws_take_text): its parts read it on the pool. */
static void handle_text(ws_conn *c, const char *text, size_t len, char *owned, bool binary)
{
    proto_stream_msg m;
    proto_error e;
    int rc = binary ? proto_stream_decode_binary(text, len, &m, &e)
                    : proto_stream_decode_raw(text, len, &m, &e);
    if (rc == 0 && m.type == PROTO_STREAM_TICK && !owned)
        owned = srv__ws_take_text(c, text);
    handle_msg(c, &m, rc, &e, NULL, NULL, &owned);
    free(owned);
    proto_stream_msg_free(&m);
}

/* ---- large messages, off the loop: the inbox ---------------------------------------- */

/* A connection's messages that wait while one is decoded on the pool: the
 * connection is not read meanwhile (srv__ws_pause), so they are only what
 * one socket read held beyond it, and they are handled in order after it. */
typedef struct inbox_msg {
    struct inbox_msg *next;
    size_t len;
    bool binary;
    char *text; /* len bytes, malloc'd */
} inbox_msg;

/* An open of a name whose stream is still closing (a solve or tick of it
 * runs): it waits, and the messages after it wait in the inbox, until the
 * old stream has answered "closed" (reopen_settled). */
typedef struct reopen_wait {
    proto_stream_msg m; /* moved from the caller's */
    proto_session *session;
    bool failed;
    proto_error err;
} reopen_wait;

struct ws_inbox {
    inbox_msg *head, *tail;
    bool decoding; /* a message is on the pool, or an open waits (reopen) */
    reopen_wait *reopen;
};

/* One message decoded on the pool: its envelope, and for an open message
 * its chain and session, the costly part (an inline URDF). */
typedef struct decode_work {
    srv_work w;
    ws_conn *c;
    char *text;
    size_t len;
    proto_stream_msg m;
    int rc;
    proto_error e;
    proto_session *session;
    bool session_failed;
    proto_error session_err;
} decode_work;

static ws_inbox *inbox_of(ws_conn *c)
{
    ws_inbox **in = srv__ws_inbox(c);
    if (!*in)
        *in = calloc(1, sizeof **in);
    return *in;
}

static void inbox_free(ws_conn *c)
{
    ws_inbox **in = srv__ws_inbox(c);
    if (!*in)
        return;
    for (inbox_msg *x = (*in)->head, *next; x; x = next) {
        next = x->next;
        free(x->text);
        free(x);
    }
    (*in)->head = (*in)->tail = NULL;
    reopen_wait *w = (*in)->reopen;
    if (w) { /* nothing comes back for it: the wait ends here */
        (*in)->reopen = NULL;
        (*in)->decoding = false;
        proto_session_free(w->session);
        proto_stream_msg_free(&w->m);
        free(w);
        srv__ws_unref(c);
    }
    if (!(*in)->decoding) {
        free(*in);
        *in = NULL;
    }
}

static void decode_msg_work(srv_work *w)
{
    decode_work *d = w->data;
    d->rc = proto_stream_decode_raw(d->text, d->len, &d->m, &d->e);
    if (d->rc == 0 && d->m.type == PROTO_STREAM_OPEN) {
        d->session = srv__stream_open_session(w->ctx, &d->m, NULL, &d->session_err);
        d->session_failed = !d->session;
    }
}

static void inbox_drain(ws_conn *c);

/* After a message waited off the loop (its decode, a fetch, a reopen): the
 * inbox read on when the connection is still open, else freed; the wait's
 * reference dropped. */
static void inbox_resume(ws_conn *c)
{
    if (srv__ws_open(c)) {
        inbox_drain(c);
    } else {
        inbox_free(c);           /* closing or torn down meanwhile */
        srv__ws_pause(c, false); /* a closing one reads its close frame */
    }
    srv__ws_unref(c);
}
static void on_read_done(ws_conn *c);

static void decode_msg_done(srv_work *w, int status)
{
    decode_work *d = w->data;
    ws_conn *c = d->c;
    srv_ctx *ctx = srv__ws_ctx(c);
    ws_inbox *in = *srv__ws_inbox(c);
    in->decoding = false;
    if (status == SRV_OK && srv__ws_open(c)) {
        handle_msg(c, &d->m, d->rc, &d->e, d->session, d->session_failed ? &d->session_err : NULL,
                   &d->text);
        d->session = NULL;
    }
    proto_session_free(d->session);
    if (d->rc == 0)
        proto_stream_msg_free(&d->m);
    srv_trim_note(ctx, d->len);
    free(d->text);
    free(d);
    inbox_resume(c);
}

/* Sends text (a copy, taken) to the pool; false when it cannot go. */
static bool decode_off_loop(ws_conn *c, char *text, size_t len)
{
    ws_inbox *in = *srv__ws_inbox(c);
    decode_work *d = calloc(1, sizeof *d);
    if (!d)
        return false;
    d->c = c;
    d->text = text;
    d->len = len;
    d->w.data = d;
    if (srv_pool_submit_always(srv__ws_ctx(c), &d->w, decode_msg_work, decode_msg_done) != SRV_OK) {
        free(d);
        return false;
    }
    in->decoding = true;
    srv__ws_ref(c);
    srv__ws_pause(c, true);
    return true;
}

/* Handles what waits, in order, until a large message goes to the pool;
 * when nothing waits any more, the connection is read again and the
 * streams' targets are solved. */
static void inbox_drain(ws_conn *c)
{
    ws_inbox *in = *srv__ws_inbox(c);
    while (in->head && !in->decoding && srv__ws_open(c)) {
        inbox_msg *x = in->head;
        in->head = x->next;
        if (!in->head)
            in->tail = NULL;
        if (x->len > SRV_DECODE_INLINE_MAX && !x->binary &&
            decode_off_loop(c, x->text, x->len)) {
            free(x);
            break;
        }
        handle_text(c, x->text, x->len, x->text, x->binary);
        free(x);
    }
    if (in->decoding)
        return;
    srv__ws_pause(c, false);
    on_read_done(c);
    srv__ws_idle(c);
    srv__ws_flush(c);
}

/* ---- opens by an id the shared registry has: the fetch ------------------------------ */

/* An open message waiting for its chain from the shared registry (--redis):
 * the connection is not read meanwhile, and what one read held after it
 * waits in the inbox, as behind a message decoded on the pool. */
typedef struct open_wait {
    srv_registry_op op;
    srv_registry_scope scope;
    ws_conn *c;
    proto_stream_msg m; /* moved from the caller's: an open or a scene message */
    const char *path;   /* "/chain_id" or "/scene_id": what is fetched first */
} open_wait;

static void open_fetched(srv_registry_op *op)
{
    open_wait *w = op->data;
    ws_conn *c = w->c;
    srv_ctx *ctx = srv__ws_ctx(c);
    ws_inbox *in = *srv__ws_inbox(c);
    in->decoding = false;
    if (srv__ws_open(c)) {
        proto_error e;
        ws_stream *s = w->m.type == PROTO_STREAM_SCENE ? srv__stream_find(c, w->m.stream) : NULL;
        if (op->status == SRV_OK && w->m.type == PROTO_STREAM_OPEN) {
            /* what is still missing answers its own unknown_chain or unknown_scene */
            proto_session *session = srv__stream_open_session(ctx, &w->m, &w->scope, &e);
            srv__stream_open(c, &w->m, session, session ? NULL : &e);
        } else if (op->status == SRV_OK && s && !s->close_after) {
            if (srv__stream_scene(s, &w->m, srv_registry_scope_lookup, &w->scope, &e))
                srv__ws_send_error(c, w->m.stream, false, 0, &e);
        } else {
            if (op->status == SRV_EINVAL)
                e = op->err;
            else if (op->status == SRV_OK)
                proto_error_set(&e, PROTO_E_UNKNOWN_STREAM, "/stream",
                                "no stream \"%s\" is open on this connection", w->m.stream);
            else
                proto_error_set(&e, PROTO_E_OVERLOADED, w->path,
                                "the shared chain registry (Redis) is unavailable: %.120s; chain "
                                "and scene ids this replica does not hold cannot be looked up "
                                "now, retry later",
                                op->what);
            srv__ws_send_error(c, w->m.stream, false, 0, &e);
        }
    }
    proto_stream_msg_free(&w->m);
    srv_registry_scope_free(&w->scope);
    free(w);
    inbox_resume(c);
}

/* An open by chain_id or scene_id, or a scene message by scene_id, that
 * neither the local registry nor (err: its resolution failed off the loop)
 * the pool found: with --redis, fetches the ids and opens the stream (sets
 * its scene) when they are in (taking m's content; true), or answers why
 * not. false when there is nothing to fetch: the message goes on as it
 * is. */
static bool open_fetch(ws_conn *c, proto_stream_msg *m, const proto_error *err)
{
    srv_ctx *ctx = srv__ws_ctx(c);
    if (!srv_registry_shared(ctx) ||
        (err && err->code != PROTO_E_UNKNOWN_CHAIN && err->code != PROTO_E_UNKNOWN_SCENE))
        return false;
    open_wait *w = calloc(1, sizeof *w);
    if (!w)
        return false;
    srv_registry_scope_init(&w->scope, ctx->registry);
    /* each lookup notes its id when neither the scope nor the local
     * registry holds it */
    if (m->type == PROTO_STREAM_OPEN && !m->chain && m->chain_id)
        proto_chain_unref(srv_registry_scope_lookup(&w->scope, PROTO_REG_CHAIN, m->chain_id));
    if (m->scene_id)
        proto_scene_free(srv_registry_scope_lookup(&w->scope, PROTO_REG_SCENE, m->scene_id));
    ws_inbox *in = w->scope.nmissed ? inbox_of(c) : NULL;
    if (!in) {
        srv_registry_scope_free(&w->scope);
        free(w);
        return false;
    }
    w->path = w->scope.missed[0].kind == PROTO_REG_SCENE ? "/scene_id" : "/chain_id";
    w->c = c;
    w->op.done = open_fetched;
    w->op.data = w;
    int rc = srv_registry_fetch(ctx, &w->scope, &w->op);
    if (rc != SRV_OK) {
        proto_error e;
        proto_error_set(&e, PROTO_E_OVERLOADED, w->path,
                        "the shared chain registry (Redis) is unavailable: %.120s; chain and "
                        "scene ids this replica does not hold cannot be looked up now, retry "
                        "later",
                        w->op.what);
        srv__ws_send_error(c, m->stream, false, 0, &e);
        srv_registry_scope_free(&w->scope);
        free(w);
        return true;
    }
    w->m = *m;
    memset(m, 0, sizeof *m);
    in->decoding = true;
    srv__ws_ref(c);
    srv__ws_pause(c, true);
    return true;
}

/* ---- an open of a name still closing --------------------------------------------- */

static void reopen_settled(ws_conn *c)
{
    ws_inbox *in = *srv__ws_inbox(c);
    reopen_wait *w = in ? in->reopen : NULL;
    if (!w || srv__stream_find(c, w->m.stream))
        return; /* another stream closed: this one still waits */
    in->reopen = NULL;
    in->decoding = false;
    proto_error e;
    /* as any open: by an id another replica holds, fetched first */
    handle_msg(c, &w->m, 0, &e, w->session, w->failed ? &w->err : NULL, NULL);
    proto_stream_msg_free(&w->m);
    free(w);
    inbox_resume(c);
}

/* An open (m, and session and err as handle_msg has them) of the name of a
 * stream that was asked to close and still runs: answered after its
 * "closed", as the client sent them, rather than refused with
 * stream_exists; the connection is not read meanwhile, and what one read
 * held after it waits in the inbox. True when it waits (m's content and
 * session taken). */
static bool reopen_later(ws_conn *c, proto_stream_msg *m, proto_session *session,
                         const proto_error *err)
{
    ws_stream *old = srv__stream_find(c, m->stream);
    ws_inbox *in = old && old->close_after ? inbox_of(c) : NULL;
    reopen_wait *w = in ? calloc(1, sizeof *w) : NULL;
    if (!w)
        return false; /* stream_exists, as before */
    w->m = *m;
    memset(m, 0, sizeof *m);
    w->session = session;
    w->failed = err != NULL;
    if (err)
        w->err = *err;
    in->reopen = w;
    in->decoding = true;
    (*srv__ws_streams(c))->settled = reopen_settled;
    srv__ws_ref(c);
    srv__ws_pause(c, true);
    return true;
}

/* ---- the hooks of server/ws_conn.h --------------------------------------------------- */

static void on_message(ws_conn *c, const char *text, size_t len, bool binary)
{
    ws_inbox *in = *srv__ws_inbox(c);
    if (in && (in->decoding || in->head)) {
        /* behind a message on the pool: in order, after it */
        inbox_msg *x = malloc(sizeof *x);
        char *copy = x ? srv__ws_take_text(c, text) : NULL;
        if (x && !copy && len == 0)
            copy = malloc(1); /* an empty message has no buffer to take */
        if (!copy) {
            free(x);
            proto_error e;
            proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
            srv__ws_send_error(c, NULL, false, 0, &e);
            return;
        }
        x->next = NULL;
        x->len = len;
        x->binary = binary;
        x->text = copy;
        if (in->tail)
            in->tail->next = x;
        else
            in->head = x;
        in->tail = x;
        return;
    }
    if (len > SRV_DECODE_INLINE_MAX && !binary && inbox_of(c)) {
        char *own = srv__ws_take_text(c, text);
        if (own && decode_off_loop(c, own, len))
            return;
        handle_text(c, text, len, own, binary);
        return;
    }
    handle_text(c, text, len, NULL, binary);
}

static void on_text(ws_conn *c, const char *text, size_t len)
{
    on_message(c, text, len, false);
}

static void on_binary(ws_conn *c, const char *data, size_t len)
{
    on_message(c, data, len, true);
}

static void on_read_done(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st)
        return;
    while (st->kick) {
        ws_stream *s = st->kick;
        st->kick = s->kick_next;
        s->to_kick = false;
        if (s->pending)
            srv__stream_kick(s);
        srv__stream_settle(s); /* "closed" after a close behind the target or tick */
        srv__stream_unref(s);
        if (!*srv__ws_streams(c))
            return; /* the connection was torn down meanwhile */
    }
    srv__tick_kick(c);
}

static void on_drain(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st)
        return;
    for (ws_stream *s = st->head, *next; s; s = next) {
        next = s->next;
        srv__stream_path_end(s, false);
        srv__stream_kick(s);
    }
    srv__tick_kick(c);
}

static bool busy(ws_conn *c)
{
    const ws_inbox *in = *srv__ws_inbox(c);
    if (in && (in->decoding || in->head))
        return true;
    const ws_streams *st = *srv__ws_streams(c);
    if (!st)
        return false;
    if (st->running || st->waiting)
        return true;
    for (const ws_stream *s = st->head; s; s = s->next)
        if (s->busy || s->pending)
            return true;
    return false;
}

static void drop_streams(ws_conn *c)
{
    inbox_free(c); /* a message still on the pool frees it when it is back */
    ws_streams **pst = srv__ws_streams(c);
    ws_streams *st = *pst;
    if (!st)
        return;
    srv__ticks_drop(st);
    while (st->head)
        srv__stream_drop(st->head);
    while (st->kick) {
        ws_stream *s = st->kick;
        st->kick = s->kick_next;
        s->to_kick = false;
        srv__stream_unref(s);
    }
    free(st->slots);
    free(st);
    *pst = NULL;
}

const srv_ws_hooks srv_ws_stream_hooks = {
    on_text, on_read_done, on_drain, busy, drop_streams, on_binary,
};
