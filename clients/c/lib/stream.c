/*
 * stream.c: the messages of proto/STREAM.md on an ikd_conn: what the
 * program sends (open, target, path, close, raw text; ticks are tick.c's),
 * what ikd answers turned into events (one per message, in order: a
 * binary message that is a binary tick's answer, binary.c, becomes the
 * same IKD_EV_TICK as a JSON tick_solution), and the blocking helpers
 * that wait for one of them.
 *
 * The streams table keeps, per stream opened through this connection, its
 * open message (to open it again after a reconnection), its next automatic
 * seq, and the last seq sent and answered (so that a lost connection can
 * name the targets it leaves unanswered). A stream leaves the table when
 * ikd answers "closed", or an error to its "open" (an error naming the
 * stream without a seq while it is not yet open), or when the connection
 * is lost after its "close" was sent. Names are found through
 * a small open-addressing index (FNV-1a), rebuilt when a stream leaves.
 *
 * Events carry pointers into the decoder's arena, which the next message
 * reuses: a callback copies what it keeps (ikd_result_copy). Callbacks may
 * send; they may not run the connection (ikd_conn_process and the blocking
 * helpers refuse to, with IKD_E_INVALID_ARGUMENT).
 */
#include <stdio.h>
#include <stdlib.h>

#include "conn.h"

#define ARENA_KEEP ((size_t)8 << 20) /* decoded bytes kept between messages */

/* ---- the streams table --------------------------------------------------- */

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The index: index_cap slots (a power of two, at least twice the streams),
 * each 0 (empty) or 1 + a position in c->streams. Kept in the same
 * allocation after the streams. */
static uint32_t *index_of(const ikd_conn *c)
{
    return (uint32_t *)(c->streams + c->streams_cap);
}

static size_t index_cap(const ikd_conn *c)
{
    return c->streams_cap * 2;
}

static void index_put(ikd_conn *c, size_t pos)
{
    uint32_t *ix = index_of(c);
    size_t mask = index_cap(c) - 1;
    for (size_t i = name_hash(c->streams[pos].name) & mask;; i = (i + 1) & mask) {
        if (!ix[i]) {
            ix[i] = (uint32_t)pos + 1;
            return;
        }
    }
}

static void index_rebuild(ikd_conn *c)
{
    memset(index_of(c), 0, index_cap(c) * sizeof(uint32_t));
    for (size_t i = 0; i < c->nstreams; i++)
        index_put(c, i);
}

static ikd__stream *find_stream(const ikd_conn *c, const char *name)
{
    if (!c->streams_cap || !name)
        return NULL;
    const uint32_t *ix = index_of(c);
    size_t mask = index_cap(c) - 1;
    for (size_t i = name_hash(name) & mask; ix[i]; i = (i + 1) & mask) {
        ikd__stream *s = &c->streams[ix[i] - 1];
        if (strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

/* A new entry (its name set, the rest zero), or NULL when out of memory. */
static ikd__stream *add_stream(ikd_conn *c, const char *name)
{
    if (c->nstreams == c->streams_cap) {
        size_t cap = c->streams_cap ? c->streams_cap * 2 : 16;
        size_t bytes = cap * sizeof(ikd__stream) + cap * 2 * sizeof(uint32_t);
        ikd__stream *p = realloc(c->streams, bytes);
        if (!p)
            return NULL;
        c->streams = p;
        c->streams_cap = cap;
        index_rebuild(c);
    }
    ikd__stream *s = &c->streams[c->nstreams];
    memset(s, 0, sizeof *s);
    ikd__strlcpy(s->name, name, sizeof s->name);
    index_put(c, c->nstreams);
    c->nstreams++;
    return s;
}

static void remove_stream(ikd_conn *c, ikd__stream *s)
{
    free(s->open_msg);
    size_t pos = (size_t)(s - c->streams);
    c->streams[pos] = c->streams[--c->nstreams];
    index_rebuild(c);
}

void ikd__conn_streams_free(ikd_conn *c)
{
    for (size_t i = 0; i < c->nstreams; i++)
        free(c->streams[i].open_msg);
    free(c->streams);
    c->streams = NULL;
    c->nstreams = c->streams_cap = 0;
}

int ikd__conn_reopen(ikd_conn *c)
{
    for (size_t i = 0; i < c->nstreams; i++) {
        ikd__stream *s = &c->streams[i];
        s->opened = false;
        s->sent = s->answered = s->path_active = false;
        if (ikd__conn_queue(c, WSLAY_TEXT_FRAME, s->open_msg, s->open_len, NULL))
            return IKD_E_NO_MEMORY;
    }
    return 0;
}

void ikd__conn_lost_answers(ikd_conn *c, const ikd_error *why)
{
    const char *cause = why && why->message[0] ? why->message : "no reason given";
    for (size_t i = 0; i < c->nstreams; i++) {
        ikd__stream *s = &c->streams[i];
        bool waiting = s->sent && (!s->answered || s->last_answered < s->last_sent);
        if (!waiting && !s->path_active)
            continue;
        ikd_error e;
        ikd__fail(&e, IKD_E_CONNECTION_LOST,
                  "the connection was lost before the answer to seq %lld: %.400s", s->last_sent,
                  cause);
        ikd__strlcpy(e.stream, s->name, sizeof e.stream);
        e.seq = s->last_sent;
        e.has_seq = true;
        s->sent = s->path_active = false;
        ikd_event ev = {0};
        ev.kind = IKD_EV_ERROR;
        ev.stream = s->name;
        ev.seq = e.seq;
        ev.has_seq = true;
        ev.error = &e;
        ikd__conn_emit(c, &ev);
    }
    if (c->tick_sent && (!c->tick_answered || c->tick_last_answered < c->tick_last_sent)) {
        ikd_error e;
        ikd__fail(&e, IKD_E_CONNECTION_LOST,
                  "the connection was lost before the answer to tick %lld: %.400s",
                  c->tick_last_sent, cause);
        e.seq = c->tick_last_sent;
        e.has_seq = true;
        c->tick_sent = false;
        ikd_event ev = {0};
        ev.kind = IKD_EV_ERROR;
        ev.seq = e.seq;
        ev.has_seq = true;
        ev.error = &e;
        ikd__conn_emit(c, &ev);
    }
    /* a stream whose close was sent is closed with the connection (ikd
     * forgets it): IKD_EV_CLOSED, and it is not opened again on the next */
    for (size_t i = c->nstreams; i-- > 0;) {
        if (i >= c->nstreams || !c->streams[i].closing)
            continue; /* a callback may have closed others */
        char name[IKD__STREAM_MAX + 1];
        ikd__strlcpy(name, c->streams[i].name, sizeof name);
        remove_stream(c, &c->streams[i]);
        ikd_event ev = {0};
        ev.kind = IKD_EV_CLOSED;
        ev.stream = name;
        ikd__conn_emit(c, &ev);
    }
}

/* ---- sending ------------------------------------------------------------- */

int ikd__conn_check(ikd_conn *c, ikd_error *err)
{
    if (!c)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "no connection");
    if (!ikd__conn_usable(c))
        return ikd__fail(err, IKD_E_CLOSED, "the connection is closed");
    return 0;
}

int ikd__check_name(const char *stream, ikd_error *err)
{
    if (!ikd__stream_name_ok(stream))
        return ikd__fail(
            err, IKD_E_INVALID_ARGUMENT,
            "a stream name is 1 to 64 characters of A-Z a-z 0-9 _ . : - (got \"%.80s\")",
            stream ? stream : "(null)");
    return 0;
}

#define PUT(b, lit)                                                                                \
    do {                                                                                           \
        if (ikd__buf_put((b), lit, sizeof(lit) - 1))                                               \
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");                               \
    } while (0)

int ikd__put_name(ikd__buf *b, const char *name, ikd_error *err)
{
    /* a checked name needs no escaping */
    if (ikd__buf_put(b, "\"", 1) || ikd__buf_puts(b, name) || ikd__buf_put(b, "\"", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

int ikd_send_text(ikd_conn *c, const char *json, size_t len, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc)
        return rc;
    if (!json)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "no text");
    rc = ikd__conn_queue(c, WSLAY_TEXT_FRAME, json, len, err);
    if (!rc) /* its seqs are not known: no answer is refused as never sent */
        c->raw_sent = true;
    return rc;
}

int ikd_stream_open(ikd_conn *c, const char *stream, const ikd_chain *chain, const ikd_seed *seed,
                    const char *options_json, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc || (rc = ikd__check_name(stream, err)))
        return rc;
    if (find_stream(c, stream))
        return ikd__fail(err, IKD_E_STREAM_EXISTS, "a stream \"%s\" is open on this connection",
                         stream);
    if (c->nstreams >= (size_t)c->max_streams)
        return ikd__fail(err, IKD_E_TOO_MANY_STREAMS, "max_streams (%d) streams are open",
                         c->max_streams);
    ikd__buf *b = &c->build;
    b->len = 0;
    PUT(b, "{\"type\":\"open\",\"stream\":");
    if ((rc = ikd__put_name(b, stream, err)))
        return rc;
    PUT(b, ",");
    if ((rc = ikd__put_chain(b, chain, err)))
        return rc;
    if (seed) {
        PUT(b, ",\"seed\":");
        if ((rc = ikd__put_seed(b, seed, "seed", err)))
            return rc;
    }
    if (options_json) {
        PUT(b, ",\"options\":");
        if ((rc = ikd__put_json(b, options_json, '{', "options", err)))
            return rc;
    }
    PUT(b, "}");
    char *copy = malloc(b->len);
    if (!copy)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    memcpy(copy, b->p, b->len);
    /* between a loss and the redial the open is not queued: the redial
     * opens every stream of the table, this one included */
    if (c->state != CS_IDLE && (rc = ikd__conn_queue(c, WSLAY_TEXT_FRAME, b->p, b->len, err))) {
        free(copy);
        return rc;
    }
    ikd__stream *s = add_stream(c, stream);
    if (!s) {
        free(copy);
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    s->open_msg = copy;
    s->open_len = b->len;
    s->next_seq = 1;
    return 0;
}

static long long take_seq(ikd__stream *s, long long seq)
{
    if (seq == IKD_SEQ_AUTO)
        seq = s ? s->next_seq : 1;
    if (s)
        s->next_seq = seq + 1;
    return seq;
}

static void note_sent(ikd__stream *s, long long seq, bool path)
{
    if (!s)
        return;
    s->last_sent = seq;
    s->sent = true;
    ikd__seqs_note(&s->seqs, seq);
    if (path)
        s->path_active = true;
}

int ikd_stream_target(ikd_conn *c, const char *stream, long long seq, const ikd_target *target,
                      const ikd_seed *seed, long long *seq_out, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc || (rc = ikd__check_name(stream, err)))
        return rc;
    ikd__stream *s = find_stream(c, stream);
    long long q = seq == IKD_SEQ_AUTO ? (s ? s->next_seq : 1) : seq;
    ikd__buf *b = &c->build;
    b->len = 0;
    PUT(b, "{\"type\":\"target\",\"stream\":");
    if ((rc = ikd__put_name(b, stream, err)))
        return rc;
    PUT(b, ",\"seq\":");
    if (ikd__put_integer(b, q))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    PUT(b, ",\"target\":");
    if ((rc = ikd__put_target(b, target, "target", err)))
        return rc;
    if (seed) {
        PUT(b, ",\"seed\":");
        if ((rc = ikd__put_seed(b, seed, "seed", err)))
            return rc;
    }
    PUT(b, "}");
    if ((rc = ikd__conn_queue(c, WSLAY_TEXT_FRAME, b->p, b->len, err)))
        return rc;
    take_seq(s, q);
    note_sent(s, q, false);
    if (seq_out)
        *seq_out = q;
    return 0;
}

int ikd_stream_path(ikd_conn *c, const char *stream, long long seq, const ikd_target *waypoints,
                    size_t count, double rate_hz, double duration_s, long long *seq_out,
                    ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc || (rc = ikd__check_name(stream, err)))
        return rc;
    if (!waypoints || count < 2 || count > 1024)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "a path has 2 to 1024 waypoints");
    ikd__stream *s = find_stream(c, stream);
    long long q = seq == IKD_SEQ_AUTO ? (s ? s->next_seq : 1) : seq;
    ikd__buf *b = &c->build;
    b->len = 0;
    PUT(b, "{\"type\":\"path\",\"stream\":");
    if ((rc = ikd__put_name(b, stream, err)))
        return rc;
    PUT(b, ",\"seq\":");
    if (ikd__put_integer(b, q))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    PUT(b, ",\"waypoints\":[");
    char what[40];
    for (size_t i = 0; i < count; i++) {
        if (i)
            PUT(b, ",");
        snprintf(what, sizeof what, "waypoints[%zu]", i);
        if ((rc = ikd__put_target(b, &waypoints[i], what, err)))
            return rc;
    }
    PUT(b, "]");
    if (rate_hz > 0) {
        PUT(b, ",\"rate_hz\":");
        if (ikd__put_double(b, rate_hz))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    if (duration_s > 0) {
        PUT(b, ",\"duration_s\":");
        if (ikd__put_double(b, duration_s))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    PUT(b, "}");
    if ((rc = ikd__conn_queue(c, WSLAY_TEXT_FRAME, b->p, b->len, err)))
        return rc;
    take_seq(s, q);
    note_sent(s, q, true);
    if (seq_out)
        *seq_out = q;
    return 0;
}

int ikd_stream_close(ikd_conn *c, const char *stream, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc || (rc = ikd__check_name(stream, err)))
        return rc;
    ikd__buf *b = &c->build;
    b->len = 0;
    PUT(b, "{\"type\":\"close\",\"stream\":");
    if ((rc = ikd__put_name(b, stream, err)))
        return rc;
    PUT(b, "}");
    if ((rc = ikd__conn_queue(c, WSLAY_TEXT_FRAME, b->p, b->len, err)))
        return rc;
    ikd__stream *s = find_stream(c, stream);
    if (s)
        s->closing = true;
    return 0;
}

/* ---- receiving ----------------------------------------------------------- */

/* Whether the waiter is answered (or failed) by ev. */
static void wake(ikd_conn *c, ikd__waiter *w, const ikd_event *ev)
{
    bool stream_match = w->stream && ev->stream && strcmp(w->stream, ev->stream) == 0;
    switch (ev->kind) {
    case IKD_EV_CONNECTED:
        if (w->kind == IKD_EV_CONNECTED)
            w->done = true;
        return;
    case IKD_EV_OPENED:
        if (w->kind == IKD_EV_OPENED && stream_match)
            w->done = true;
        return;
    case IKD_EV_SOLUTION:
        if (w->kind == IKD_EV_SOLUTION && stream_match && ev->seq >= w->seq) {
            w->result = ikd_result_copy(ev->result);
            w->rc = w->result ? 0 : ikd__fail(w->err, IKD_E_NO_MEMORY, "out of memory");
            w->done = true;
        }
        return;
    case IKD_EV_TICK:
        if (w->kind == IKD_EV_TICK && ev->seq >= w->seq) {
            w->tick = ikd_tick_copy(ev->tick);
            w->rc = w->tick ? 0 : ikd__fail(w->err, IKD_E_NO_MEMORY, "out of memory");
            w->done = true;
        }
        return;
    case IKD_EV_ERROR: {
        bool mine;
        if (w->kind == IKD_EV_OPENED)
            mine = stream_match;
        else if (w->kind == IKD_EV_SOLUTION)
            mine = stream_match && (!ev->has_seq || ev->seq >= w->seq);
        else if (w->kind == IKD_EV_TICK)
            mine = !ev->stream && ev->has_seq && ev->seq >= w->seq;
        else
            mine = false;
        if (mine || !c->on_event) {
            if (w->err)
                *w->err = *ev->error;
            w->rc = ev->error->code ? ev->error->code : IKD_E_SERVER;
            w->done = true;
        }
        return;
    }
    case IKD_EV_MESSAGE:
        if (!c->on_event) {
            w->rc = ikd__fail(w->err, IKD_E_UNEXPECTED, "ikd sent a message of type %.40s: %.300s",
                              ev->type ? ev->type : "(binary)", ev->binary ? "" : ev->text);
            w->done = true;
        }
        return;
    case IKD_EV_DISCONNECTED:
        if (w->kind == IKD_EV_CONNECTED && ev->will_reconnect && c->on_event)
            return; /* still trying: wait on */
        if (w->err)
            *w->err = *ev->error;
        w->rc = ev->error && ev->error->code ? ev->error->code : IKD_E_CONNECTION_LOST;
        w->done = true;
        return;
    default:
        return;
    }
}

void ikd__conn_emit(ikd_conn *c, const ikd_event *ev)
{
    c->dispatched++;
    if (c->waiter && !c->waiter->done)
        wake(c, c->waiter, ev);
    if (c->on_event) {
        bool nested = c->in_callback;
        c->in_callback = true;
        c->on_event(c, ev, c->user);
        c->in_callback = nested;
    }
}

/* An IKD_EV_ERROR about an answer of type `type` (text p, n) that cannot be
 * taken: e says why. */
static void emit_bad(ikd_conn *c, ikd_error *e, const char *type, const char *p, size_t n)
{
    ikd_event bad = {0};
    bad.kind = IKD_EV_ERROR;
    bad.error = e;
    bad.type = type;
    bad.text = p;
    bad.text_len = n;
    ikd__conn_emit(c, &bad);
}

/* An answer of a seq never sent (past the highest sent, or none sent)
 * answers nothing: taken as an answer, it would answer every target (tick)
 * waiting. Refused as the JavaScript and Python clients refuse it: an
 * IKD_EV_ERROR with IKD_E_BAD_ANSWER that names no seq, so that it fails
 * nothing waiting; true when it was. */
static bool seq_never_sent(const ikd_conn *c, const ikd__seqs_sent *q, long long seq)
{
    /* after ikd_send_text the client no longer knows what was sent */
    return !c->raw_sent && (!q->ever || seq > q->max);
}

static bool tick_never_sent(const ikd_conn *c, long long seq)
{
    return seq_never_sent(c, &c->tick_seqs, seq);
}

/* An error about an answer of a tick never sent: without its seq. */
static void unseq(ikd_error *e)
{
    size_t l = strlen(e->message);
    snprintf(e->message + l, sizeof e->message - l, " (of seq %lld, never sent)", e->seq);
    e->has_seq = false;
    e->seq = 0;
}

/* Whether tick answer t is not one entry per target of its tick, in order
 * (its count, its entries' names; an entry without a name matches any):
 * then *e says so, with the tick's seq. The ticks kept before it were
 * replaced (ikd answers ticks in order): they leave with it. An answer to
 * a tick no longer kept is not checked, nor any once tick seqs were sent
 * out of increasing order (a seq sent again: ikd may have replaced the
 * tick kept of that seq, and answered a later one of the same seq). */
static bool tick_lies(ikd_conn *c, const ikd_tick *t, ikd_error *e)
{
    if (c->tick_seqs.unordered)
        return false;
    for (; c->ticks_len; c->ticks_len--, c->ticks_head = (c->ticks_head + 1) % IKD__TICKS_KEPT) {
        const ikd__tick_sent *k = &c->ticks_kept[c->ticks_head];
        if (k->seq != t->seq)
            continue;
        size_t count = k->count;
        uint32_t names = k->names, got = IKD__NAMES_HASH0;
        c->ticks_head = (c->ticks_head + 1) % IKD__TICKS_KEPT;
        c->ticks_len--;
        bool named = true;
        for (size_t i = 0; i < t->count && named; i++) {
            named = t->entries[i].stream && t->entries[i].stream[0];
            if (named)
                got = ikd__names_hash(got, t->entries[i].stream);
        }
        if (t->count != count)
            ikd__fail(e, IKD_E_BAD_ANSWER, "a tick answer of %zu entries to a tick of %zu targets",
                      t->count, count);
        else if (named && got != names)
            ikd__fail(e, IKD_E_BAD_ANSWER,
                      "a tick answer whose entries name other streams than the tick's targets");
        else
            return false;
        e->seq = t->seq;
        e->has_seq = true;
        return true;
    }
    return false;
}

/* s: the stream of a solution, NULL for a tick answer. */
static bool never_sent(ikd_conn *c, const char *type, const ikd__stream *s, long long seq,
                       const char *p, size_t n)
{
    const ikd__seqs_sent *q = s ? &s->seqs : &c->tick_seqs;
    if (!seq_never_sent(c, q, seq))
        return false;
    ikd_error e;
    if (q->ever)
        ikd__fail(&e, IKD_E_BAD_ANSWER, "a %s of seq %lld, never sent (the last sent is %lld)",
                  type, seq, q->max);
    else
        ikd__fail(&e, IKD_E_BAD_ANSWER, "a %s of seq %lld, none sent", type, seq);
    if (s)
        ikd__strlcpy(e.stream, s->name, sizeof e.stream);
    emit_bad(c, &e, type, p, n);
    return true;
}

/* A solution of s older than the last one (ikd answers a stream in the
 * order of its targets, here in seq order), or of the path whose path_end
 * came last (nothing of a path comes after its path_end; an older
 * target's solution may: ikd ends a path that never started at once,
 * while an older target is still being solved), answers nothing either:
 * refused as never_sent refuses. Not checked once the program sent a seq
 * that is not above all before it (its seqs are then not in order). */
static bool out_of_order(ikd_conn *c, const ikd__stream *s, long long seq, const char *p, size_t n)
{
    bool older = s->has_delivered && seq < s->delivered;
    bool ended = s->has_path_ended && seq == s->path_ended;
    if (s->seqs.unordered || (!older && !ended))
        return false;
    ikd_error e;
    if (older)
        ikd__fail(&e, IKD_E_BAD_ANSWER, "a solution of seq %lld after that of seq %lld", seq,
                  s->delivered);
    else
        ikd__fail(&e, IKD_E_BAD_ANSWER, "a solution of seq %lld after its path_end", seq);
    ikd__strlcpy(e.stream, s->name, sizeof e.stream);
    emit_bad(c, &e, "solution", p, n);
    return true;
}

void ikd__conn_on_message(ikd_conn *c, bool binary, const char *p, size_t n)
{
    ikd_event ev = {0};
    ev.text = p;
    ev.text_len = n;
    ikd__dec_reset(&c->dec, ARENA_KEEP);
    ikd__msg *m = &c->m;
    ikd_error e;
    if (binary) {
        ev.binary = true;
        /* a tick holds at most max_streams targets: so does its answer */
        int rc = ikd__decode_tick_binary(&c->dec, p, n, (size_t)c->max_streams, &m->tick, &e);
        ev.kind = rc > 0 ? IKD_EV_MESSAGE : rc < 0 ? IKD_EV_ERROR : IKD_EV_TICK;
        if (!rc && never_sent(c, "tick_solution", NULL, m->tick.seq, p, n))
            return;
        if (!rc && tick_lies(c, &m->tick, &e)) {
            rc = -1; /* fails its tick, as an answer that cannot be read */
            ev.kind = IKD_EV_ERROR;
        }
        if (rc < 0 && e.has_seq && tick_never_sent(c, e.seq))
            unseq(&e); /* of a tick never sent: it fails none */
        if (rc <= 0) {
            ev.type = "tick_solution";
            ev.seq = rc ? e.seq : m->tick.seq;
            ev.has_seq = rc ? e.has_seq : true;
            ev.skipped = m->tick.skipped;
            ev.tick = rc ? NULL : &m->tick;
            ev.error = rc ? &e : NULL;
            if (ev.has_seq && c->tick_sent) {
                c->tick_last_answered = ev.seq;
                c->tick_answered = true;
            }
        }
        ikd__conn_emit(c, &ev);
        return;
    }
    /* a tick holds at most max_streams targets: so does its answer */
    if (ikd__decode_message(&c->dec, p, n, (size_t)c->max_streams, m, &e)) {
        ev.kind = IKD_EV_ERROR;
        ev.error = &e;
        if (m->type && strcmp(m->type, "tick_solution") == 0 && m->has_seq &&
            tick_never_sent(c, m->seq)) {
            unseq(&e); /* of a tick never sent: it fails none */
        } else if (m->type && strcmp(m->type, "tick_solution") == 0 && m->has_seq) {
            /* a tick answer that cannot be read fails its tick (ikd_tick_wait), as a
             * binary one does */
            ev.type = m->type;
            ev.seq = e.seq = m->seq;
            ev.has_seq = e.has_seq = true;
            if (c->tick_sent) {
                c->tick_last_answered = m->seq;
                c->tick_answered = true;
            }
        }
        ikd__conn_emit(c, &ev);
        return;
    }
    ev.type = m->type;
    ev.stream = m->stream;
    ev.seq = m->seq;
    ev.has_seq = m->has_seq;
    ev.skipped = m->skipped;
    ev.has_index = m->has_index;
    ev.index = m->index;
    ev.count = m->count;
    ev.sent = m->sent;
    ev.completed = m->completed;
    ikd__stream *s = find_stream(c, m->stream);
    const char *t = m->type;
    const char *missing = NULL;
    if (strcmp(t, "solution") == 0) {
        if (!m->stream || !m->has_seq || !m->has_result)
            missing = "stream, seq and result";
        ev.kind = IKD_EV_SOLUTION;
        ev.result = &m->result;
        if (s && m->has_seq &&
            (never_sent(c, t, s, m->seq, p, n) || out_of_order(c, s, m->seq, p, n)))
            return;
        if (s && m->has_seq) { /* an answer without its seq answers nothing known */
            s->delivered = m->seq;
            s->has_delivered = true;
            s->last_answered = m->seq;
            s->answered = true;
        }
    } else if (strcmp(t, "tick_solution") == 0) {
        if (!m->has_seq || !m->has_solutions)
            missing = "seq and solutions";
        ev.kind = IKD_EV_TICK;
        ev.tick = &m->tick;
        if (m->has_seq && m->has_solutions && never_sent(c, t, NULL, m->seq, p, n))
            return;
        if (m->has_seq && m->has_solutions && tick_lies(c, &m->tick, &e)) {
            /* fails its tick, as an answer that cannot be read */
            ev.kind = IKD_EV_ERROR;
            ev.error = &e;
            ev.tick = NULL;
            c->tick_last_answered = m->seq;
            c->tick_answered = true;
            ikd__conn_emit(c, &ev);
            return;
        }
        if (m->has_seq) {
            c->tick_last_answered = m->seq;
            c->tick_answered = true;
        }
    } else if (strcmp(t, "opened") == 0) {
        if (!m->stream)
            missing = "stream";
        ev.kind = IKD_EV_OPENED;
        ev.chain_id = m->chain_id;
        if (s)
            s->opened = true;
    } else if (strcmp(t, "path_end") == 0) {
        if (!m->stream)
            missing = "stream";
        ev.kind = IKD_EV_PATH_END;
        if (s && m->has_seq && never_sent(c, t, s, m->seq, p, n))
            return;
        if (s && m->has_seq) {
            if (!s->has_path_ended || m->seq > s->path_ended)
                s->path_ended = m->seq;
            s->has_path_ended = true;
        }
        if (s) {
            s->path_active = false;
            if (m->has_seq) {
                s->last_answered = m->seq;
                s->answered = true;
            }
        }
    } else if (strcmp(t, "closed") == 0) {
        if (!m->stream)
            missing = "stream";
        ev.kind = IKD_EV_CLOSED;
    } else if (strcmp(t, "error") == 0) {
        if (!m->has_error)
            missing = "error";
        ev.kind = IKD_EV_ERROR;
        ev.error = &m->error;
        if (s && m->has_seq) {
            if (!s->answered || m->seq > s->last_answered)
                s->last_answered = m->seq;
            s->answered = true;
        }
        if (!m->stream && m->has_seq && c->tick_sent) {
            c->tick_last_answered = m->seq;
            c->tick_answered = true;
        }
    } else {
        ev.kind = IKD_EV_MESSAGE;
    }
    if (missing) {
        ikd__fail(&e, IKD_E_BAD_ANSWER, "a \"%s\" message without %s", t, missing);
        emit_bad(c, &e, t, p, n);
        return;
    }
    ikd__conn_emit(c, &ev);
    /* after the event: the stream is gone (closed, or its open refused) */
    s = find_stream(c, m->stream);
    if (s && (ev.kind == IKD_EV_CLOSED || (ev.kind == IKD_EV_ERROR && !m->has_seq && !s->opened)))
        remove_stream(c, s);
}

/* ---- blocking helpers ---------------------------------------------------- */

/* Drives the connection until w is done or timeout_ms passes. */
static int wait_for(ikd_conn *c, ikd__waiter *w, int timeout_ms)
{
    if (c->in_callback)
        return ikd__fail(w->err, IKD_E_INVALID_ARGUMENT,
                         "a blocking helper cannot run inside a callback");
    int64_t end = ikd__now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
    c->waiter = w;
    while (!w->done) {
        int64_t left = end - ikd__now_ms();
        if (timeout_ms >= 0 && left <= 0) {
            w->rc = ikd__fail(w->err, IKD_E_TIMEOUT, "no answer within %d ms", timeout_ms);
            break;
        }
        int rc = ikd_conn_poll(c, timeout_ms < 0 ? -1 : (int)left);
        if (rc < 0 && !w->done) {
            w->rc = ikd__fail(w->err, rc, "the connection is closed");
            break;
        }
    }
    c->waiter = NULL;
    return w->rc;
}

int ikd_conn_wait_connected(ikd_conn *c, int timeout_ms, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "no connection");
    if (c->state == CS_OPEN)
        return 0;
    if (c->state == CS_DONE)
        return ikd__fail(err, IKD_E_CLOSED, "the connection is closed");
    ikd__waiter w = {0};
    w.kind = IKD_EV_CONNECTED;
    w.err = err;
    return wait_for(c, &w, timeout_ms);
}

int ikd_stream_open_wait(ikd_conn *c, const char *stream, const ikd_chain *chain,
                         const ikd_seed *seed, const char *options_json, int timeout_ms,
                         ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    int rc = ikd_stream_open(c, stream, chain, seed, options_json, err);
    if (rc)
        return rc;
    ikd__waiter w = {0};
    w.kind = IKD_EV_OPENED;
    w.stream = stream;
    w.err = err;
    return wait_for(c, &w, timeout_ms);
}

int ikd_stream_solve(ikd_conn *c, const char *stream, const ikd_target *target,
                     const ikd_seed *seed, int timeout_ms, ikd_result **out, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    if (!out)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_stream_solve: out is required");
    *out = NULL;
    long long seq;
    int rc = ikd_stream_target(c, stream, IKD_SEQ_AUTO, target, seed, &seq, err);
    if (rc)
        return rc;
    ikd__waiter w = {0};
    w.kind = IKD_EV_SOLUTION;
    w.stream = stream;
    w.seq = seq;
    w.err = err;
    rc = wait_for(c, &w, timeout_ms);
    if (rc) {
        ikd_result_free(w.result);
        return rc;
    }
    *out = w.result;
    return 0;
}

int ikd_tick_wait(ikd_conn *c, long long seq, int timeout_ms, ikd_tick **out, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !out)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_tick_wait: conn and out are required");
    *out = NULL;
    ikd__waiter w = {0};
    w.kind = IKD_EV_TICK;
    w.seq = seq;
    w.err = err;
    int rc = wait_for(c, &w, timeout_ms);
    if (rc) {
        ikd_tick_free(w.tick);
        return rc;
    }
    *out = w.tick;
    return 0;
}
