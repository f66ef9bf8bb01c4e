/*
 * ws_stream.c: the streams of a WebSocket connection (GET /v1/stream): the
 * rules of proto/STREAM.md on top of the connection of server/ws_conn.c,
 * which moves the bytes (the seam is server/ws_conn.h).
 *
 * A connection carries up to --max-streams named streams (found by name
 * in a hash index), each a typed session of proto/proto_session.h on one
 * chain (inline or by registered id) with fixed options: the open message
 * is decoded once, each target and each path sample becomes a job through
 * the constructor HTTP requests use, and nothing is turned back into JSON.
 * A bad message gets an "error" message naming the stream, seq and JSON
 * path, and the connection stays open.
 *
 * Solving a stream (the policy):
 *   - Warm start: every solve starts from the stream's previous solution
 *     (or, before the first, from the open message's seed) and prefers the
 *     branch nearest to it (proto_session_prepare), so answers to a smooth
 *     sequence of targets do not flip. A target's own seed re-synchronises
 *     the stream with the arm.
 *   - Order and conflation: a stream has at most one solve running and one
 *     target waiting. A target that arrives while another waits replaces it
 *     (keeping the newest seed sent since the last solve, the arm's state);
 *     the next solution's "skipped" says how many targets were dropped since
 *     the previous solution (so answered + skipped + errors = sent). All
 *     messages read from the socket in one go are decoded before any target
 *     is solved, so a client that sends faster than ikd solves only gets its
 *     newest target per stream solved: nothing queues without bound.
 *   - Where: server/solve.c decides (inline on the loop when cheap, else on
 *     the pool, refused with an "overloaded" error when the pool queue is
 *     full), times the solve and records it.
 *   - Paths: the waypoints are bound to the stream's session once
 *     (proto_session_path) and sample k is due at k / rate_hz after the
 *     path message (proto_stream_path_next): each due sample is solved in
 *     order as soon as the stream is idle, a late wake-up catches up sample
 *     by sample (WS_PATH_BURST at a time, then the loop serves others), and
 *     samples are skipped (counted in path_end's "skipped") only beyond the
 *     lag window; the last sample is always solved, then "path_end" is
 *     sent. A new target or path on the stream cancels a running path
 *     (path_end with completed false); a solve of a cancelled path still
 *     running is discarded.
 *   - "close" ends a running path (path_end, completed false), then lets a
 *     running solve and a waiting target finish and be answered, then
 *     answers "closed". Messages to a closing stream get unknown_stream.
 *   - Shutdown (srv__ws_on_drain): running paths end, running solves and
 *     waiting targets are answered; once nothing runs the connection gets
 *     its 1001 close frame (srv__ws_idle).
 *
 * Large messages: a message above WS_DECODE_INLINE_MAX is decoded on the
 * pool (for an open message, its chain and session too: an inline URDF of a
 * megabyte takes milliseconds), and the connection is not read meanwhile;
 * the messages the same socket read held after it wait in the connection's
 * inbox and are handled in order once it is back, so a connection's
 * messages are answered in the order sent.
 *
 * Memory: the chains open streams hold count against --stream-chain-bytes
 * (each chain once; an open past it is refused). A stream holds one
 * reference to its connection and is freed when it is closed and no pool
 * solve, tick or timer handle still refers to it. Pool work touches only
 * its own proto_jobs (and the names of the streams of a tick, which never
 * change). A connection holds at most --max-streams streams and two ticks
 * of at most that many targets each.
 *
 * Not here: the socket, framing, pings and close codes (ws_conn.c), the
 * message formats (proto/proto_stream.c), the session (proto/proto_session.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_session.h"
#include "proto/proto_stream.h"
#include "server/metrics.h"
#include "server/pool.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/trim.h"
#include "server/ws_conn.h"

#define WS_PATH_BURST 64  /* path samples solved per turn of the loop */
/* Messages larger than this are decoded on the pool (a JSON text of a
 * megabyte, an inline URDF chain, takes milliseconds); as HTTP bodies. */
#define WS_DECODE_INLINE_MAX PROTO_DECODE_INLINE_MAX /* proto/proto_limits.h */

typedef struct ws_stream ws_stream;
typedef struct ws_tick ws_tick;

struct ws_stream {
    ws_conn *conn;
    ws_stream *next; /* in the connection's list while open */
    char name[PROTO_STREAM_NAME_MAX + 1];
    uint64_t hash;   /* of name, for the index */
    proto_session *session; /* chain, options, seed, the last answer */
    unsigned refs;
    bool closed;
    bool busy;        /* a pool solve is running */
    bool close_after; /* "close" arrived: "closed" once nothing of it runs */
    unsigned ticks;   /* ticks (running or waiting) holding a target of it */
    ws_stream *kick_next; /* in the connection's list of streams to kick */
    bool to_kick;         /* in that list (holding a reference) */
    uint64_t tick_mark; /* the tick being read that has a target of it */
    size_t tick_index;  /* where in that tick */
    /* the waiting target, decoded */
    proto_job *pending;
    long long pending_seq;
    size_t pending_skipped; /* targets dropped before it */
    size_t skipped; /* targets dropped and not yet counted by a later one */
    /* the running path */
    proto_stream_path *path;
    unsigned path_gen; /* bumped when a path ends; stale pool results are dropped */
    long long path_seq;
    size_t path_count, path_sent;
    long long path_last;     /* index of the last sample solved, -1 before the first */
    size_t path_skipped;     /* samples passed over (solving could not keep up) */
    uint64_t path_start_ns;  /* uv_hrtime() when the path message arrived */
    uv_timer_t timer;
    bool timer_open;
};

/* One solve of a stream: target 0 of job. */
typedef struct ws_task {
    srv_solve solve;
    ws_stream *s;
    long long seq;
    size_t skipped;
    size_t index, count; /* a path sample when count > 0 */
    unsigned path_gen;
} ws_task;

/* The stream side of one connection (srv__ws_streams). */
struct ws_streams {
    ws_stream *head; /* the open streams */
    size_t count;
    ws_stream **slots; /* the index: open addressing on the name's hash */
    size_t nslots;     /* a power of two above twice count, or 0 */
    ws_tick *running, *waiting;
    uint64_t tick_gen; /* ticks read so far (tick_mark) */
    ws_stream *kick;   /* streams given a target in this read (to_kick) */
};

/* ---- ticks ----------------------------------------------------------------- */

/* A target of a tick answered with an error, and the stream it named. */
typedef struct ws_tick_error {
    proto_error e;
    char stream[PROTO_STREAM_NAME_MAX + 1];
} ws_tick_error;

typedef struct ws_tick_entry {
    ws_stream *s;   /* with a job: its stream (a reference, and s->ticks) */
    proto_job *job; /* the target, or NULL when answered with err */
    ws_tick_error *err;
    bool has_seq;
    long long seq;
    size_t skipped; /* the stream's targets dropped before this one */
} ws_tick_entry;

/* Entries [solve.begin, solve.end) of a tick, solved and encoded together. */
typedef struct ws_tick_part {
    srv_solve solve;
    ws_tick *t;
    proto_jw out;           /* its answers, comma-separated */
    proto_errcode failed;   /* not solved: its targets answered with this */
} ws_tick_part;

struct ws_tick {
    ws_conn *conn; /* a reference */
    long long seq;
    size_t skipped; /* ticks replaced before this one since the last answered */
    size_t n;
    ws_tick_entry *e;
    proto_job **jobs; /* e[i].job, the parts' srv_solve.jobs */
    ws_tick_part *parts;
    size_t nparts, next_part, completed;
    bool pumping; /* in tick_pump: parts completing inline do not finish it */
    bool flush;   /* a part completed on the pool: flush the answer */
    bool orphan;  /* the connection was torn down */
};

static void stream_kick(ws_stream *s);
static void stream_settle(ws_stream *s);
static void tick_kick(ws_conn *c);

/* ---- the index of streams by name ----------------------------------------- */

static uint64_t name_hash(const char *name)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    return h;
}

/* The connection's stream side, made on first use; NULL when out of memory. */
static ws_streams *side(ws_conn *c)
{
    ws_streams **st = srv__ws_streams(c);
    if (!*st)
        *st = calloc(1, sizeof **st);
    return *st;
}

static void index_put(ws_stream **slots, size_t nslots, ws_stream *s)
{
    size_t i = (size_t)s->hash & (nslots - 1);
    while (slots[i])
        i = (i + 1) & (nslots - 1);
    slots[i] = s;
}

/* Adds s to the index (growing it); -1 when out of memory. */
static int index_add(ws_streams *st, ws_stream *s)
{
    if ((st->count + 1) * 2 > st->nslots) {
        size_t n = st->nslots ? 2 * st->nslots : 16;
        ws_stream **slots = calloc(n, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < st->nslots; i++)
            if (st->slots[i])
                index_put(slots, n, st->slots[i]);
        free(st->slots);
        st->slots = slots;
        st->nslots = n;
    }
    index_put(st->slots, st->nslots, s);
    return 0;
}

/* Removes s from the index (linear probing: the entries after it move back
 * so that no search stops early). */
static void index_remove(ws_streams *st, ws_stream *s)
{
    if (!st->nslots)
        return;
    size_t mask = st->nslots - 1, i = (size_t)s->hash & mask;
    while (st->slots[i] && st->slots[i] != s)
        i = (i + 1) & mask;
    if (!st->slots[i])
        return;
    st->slots[i] = NULL;
    for (size_t j = (i + 1) & mask; st->slots[j]; j = (j + 1) & mask) {
        size_t k = (size_t)st->slots[j]->hash & mask; /* where it wants to be */
        /* it may move to the hole at i unless its place lies in (i, j] */
        bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
        if (!stays) {
            st->slots[i] = st->slots[j];
            st->slots[j] = NULL;
            i = j;
        }
    }
}

/* ---- the chains streams hold (--stream-chain-bytes) ----------------------------- */

/* Every chain some open stream holds, once, with the number of streams
 * holding it: ctx->stream_chain_bytes sums their proto_chain_memory(), and
 * --stream-chain-bytes bounds it (a chain evicted from the registry lives
 * on in the streams using it, and an inline chain is each stream's own).
 * A table keyed by the chain's address, chained, grown as it fills. */
typedef struct held_chain {
    struct held_chain *next;
    const proto_chain *chain;
    size_t streams;
} held_chain;

struct srv_stream_chains {
    held_chain **buckets;
    size_t nbuckets, count;
};

static size_t chain_bucket(const srv_stream_chains *t, const proto_chain *c)
{
    uintptr_t h = (uintptr_t)c;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (t->nbuckets - 1);
}

static held_chain **chain_slot(srv_stream_chains *t, const proto_chain *c)
{
    held_chain **p = &t->buckets[chain_bucket(t, c)];
    while (*p && (*p)->chain != c)
        p = &(*p)->next;
    return p;
}

static bool chains_grow(srv_stream_chains *t)
{
    size_t n = t->nbuckets ? 2 * t->nbuckets : 64;
    held_chain **b = calloc(n, sizeof *b);
    if (!b)
        return false;
    held_chain **old = t->buckets;
    size_t oldn = t->nbuckets;
    t->buckets = b;
    t->nbuckets = n;
    for (size_t i = 0; i < oldn; i++)
        for (held_chain *x = old[i], *next; x; x = next) {
            next = x->next;
            held_chain **p = &t->buckets[chain_bucket(t, x->chain)];
            x->next = *p;
            *p = x;
        }
    free(old);
    return true;
}

/* One more stream holds c: 0, or -1 with *e set (nothing held) when c is
 * new and does not fit --stream-chain-bytes. */
static int chains_hold(srv_ctx *ctx, const proto_chain *c, proto_error *e)
{
    srv_stream_chains *t = ctx->stream_chains;
    if (!t && !(t = ctx->stream_chains = calloc(1, sizeof *t)))
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    if (t->nbuckets) {
        held_chain *x = *chain_slot(t, c);
        if (x) {
            x->streams++;
            return 0;
        }
    }
    size_t bytes = proto_chain_memory(c), budget = ctx->cfg.stream_chain_bytes;
    if (bytes > budget)
        return proto_error_set(e, PROTO_E_TOO_LARGE, "/chain",
                               "the chain holds %zu bytes, more than streams may hold "
                               "altogether (--stream-chain-bytes %zu)",
                               bytes, budget);
    if (ctx->stream_chain_bytes + bytes > budget) {
        srv_metrics_rejected(ctx, "stream_chains");
        return proto_error_set(e, PROTO_E_OVERLOADED, "/chain",
                               "the chains of open streams fill their budget "
                               "(--stream-chain-bytes); close streams or retry later");
    }
    if (t->count >= t->nbuckets && !chains_grow(t))
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    held_chain *x = malloc(sizeof *x);
    if (!x)
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    x->chain = c;
    x->streams = 1;
    held_chain **p = &t->buckets[chain_bucket(t, c)];
    x->next = *p;
    *p = x;
    t->count++;
    ctx->stream_chain_bytes += bytes;
    return 0;
}

/* A stream that held c lets go of it. */
static void chains_release(srv_ctx *ctx, const proto_chain *c)
{
    srv_stream_chains *t = ctx->stream_chains;
    if (!t || !t->nbuckets)
        return;
    held_chain **p = chain_slot(t, c);
    held_chain *x = *p;
    if (!x || --x->streams > 0)
        return;
    *p = x->next;
    t->count--;
    ctx->stream_chain_bytes -= proto_chain_memory(c);
    free(x);
    if (t->count == 0) { /* nothing held: no table kept either */
        free(t->buckets);
        free(t);
        ctx->stream_chains = NULL;
    }
}

/* ---- lifetime -------------------------------------------------------------- */

static void stream_unref(ws_stream *s)
{
    if (--s->refs > 0)
        return;
    ws_conn *c = s->conn;
    chains_release(srv__ws_ctx(c), proto_session_chain(s->session));
    proto_session_free(s->session);
    proto_job_free(s->pending);
    proto_stream_path_free(s->path);
    free(s);
    srv__ws_unref(c);
}

static void stream_timer_closed(uv_handle_t *h)
{
    stream_unref(h->data);
}

static ws_stream *stream_find(ws_conn *c, const char *name)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st || !st->nslots)
        return NULL;
    size_t mask = st->nslots - 1;
    for (size_t i = (size_t)name_hash(name) & mask; st->slots[i]; i = (i + 1) & mask)
        if (strcmp(st->slots[i]->name, name) == 0)
            return st->slots[i];
    return NULL;
}

static size_t stream_count(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    return st ? st->count : 0;
}

/* Removes the stream from its connection (no message is sent). */
static void stream_drop(ws_stream *s)
{
    ws_conn *c = s->conn;
    if (s->closed)
        return;
    s->closed = true;
    ws_streams *st = *srv__ws_streams(c);
    for (ws_stream **p = &st->head; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    index_remove(st, s);
    st->count--;
    srv_metrics_stream_close(srv__ws_ctx(c));
    proto_job_free(s->pending);
    s->pending = NULL;
    proto_stream_path_free(s->path);
    s->path = NULL;
    s->path_gen++;
    if (s->timer_open) {
        uv_timer_stop(&s->timer);
        uv_close((uv_handle_t *)&s->timer, stream_timer_closed);
    }
    stream_unref(s);
}

/* ---- paths ------------------------------------------------------------------- */

static void path_end(ws_stream *s, bool completed)
{
    if (!s->path)
        return;
    size_t len;
    char *t = proto_stream_encode_path_end(s->name, s->path_seq, s->path_sent, s->path_skipped,
                                           s->path_count, completed, &len);
    srv__ws_send(s->conn, t, len);
    free(t);
    proto_stream_path_free(s->path);
    s->path = NULL;
    s->path_gen++;
    if (s->timer_open)
        uv_timer_stop(&s->timer);
}

/* After sample index of the running path was answered (or refused). */
static void path_sample_done(ws_stream *s, size_t index, bool sent)
{
    if (!s->path)
        return;
    if (sent)
        s->path_sent++;
    if (index + 1 >= s->path_count)
        path_end(s, true);
}

/* ---- solving ----------------------------------------------------------------- */

/* Sends the solution of job (target 0), which becomes the session's warm
 * start. Takes job. */
static void deliver(ws_stream *s, proto_job *job, long long seq, size_t skipped, size_t index,
                    size_t count)
{
    size_t len = 0;
    char *t = proto_stream_encode_job_solution(s->name, seq, skipped, job, 0, index, count, &len);
    srv__ws_send(s->conn, t, len);
    free(t);
    proto_session_solved(s->session, job);
    if (count > 0)
        path_sample_done(s, index, true);
}

static void task_done(srv_solve *sv, int status)
{
    ws_task *t = sv->data;
    ws_stream *s = t->s;
    ws_conn *c = s->conn;
    bool was_inline = sv->ran_inline;
    bool deferred = sv->deferred;
    s->busy = false;
    bool stale = t->count > 0 && (t->path_gen != s->path_gen || !s->path);
    if (status != SRV_OK || s->closed || !srv__ws_open(c) || stale) {
        proto_job_free(sv->job);
    } else {
        deliver(s, sv->job, t->seq, t->skipped, t->index, t->count);
        if (!was_inline) {
            stream_kick(s);
            stream_settle(s);
        }
    }
    if (!was_inline) {
        tick_kick(c); /* a tick may have waited for this solve */
        /* a solve that waited for its turn runs among many: the answers of
         * the turn go out together when the socket is next ready */
        if (deferred)
            srv__ws_flush_soon(c);
        else
            srv__ws_flush(c);
    }
    free(t);
    stream_unref(s);
}

/* Solves job (taken) for the stream: where server/solve.c decides. A
 * refusal is answered with the message's seq. */
static void stream_solve(ws_stream *s, proto_job *job, long long seq, size_t skipped,
                         size_t index, size_t count)
{
    ws_conn *c = s->conn;
    srv_ctx *ctx = srv__ws_ctx(c);
    proto_session_prepare(s->session, job);
    ws_task *t = calloc(1, sizeof *t);
    if (!t) {
        proto_job_free(job);
        return;
    }
    t->s = s;
    t->seq = seq;
    t->skipped = skipped;
    t->index = index;
    t->count = count;
    t->path_gen = s->path_gen;
    t->solve.job = job;
    t->solve.begin = 0;
    t->solve.end = 1;
    t->solve.done = task_done;
    t->solve.data = t;
    t->solve.may_defer = true; /* past the turn's inline budget: a later turn */
    s->refs++;
    s->busy = true;
    if (srv_solve_submit(ctx, &t->solve) == SRV_OK)
        return;
    s->busy = false;
    s->refs--;
    free(t);
    proto_job_free(job);
    srv_metrics_rejected(ctx, "pool_full");
    proto_error e;
    proto_error_set(&e, PROTO_E_OVERLOADED, "", "the solver pool is full; send again later");
    srv__ws_send_error(c, s->name, true, seq, &e);
    if (count > 0)
        path_sample_done(s, index, false);
}

static void on_path_tick(uv_timer_t *t);

/* Solves the running path's samples on schedule (proto_stream_path_next:
 * each due sample in order, catching up after a late wake-up, skipping only
 * beyond the lag window) while the stream is idle; a busy stream comes back
 * here when its solve completes. At most WS_PATH_BURST samples per call, so
 * that a long catch-up lets the loop serve others in between; then the
 * timer is armed for the next due sample (0: right after this turn). */
static void path_step(ws_stream *s)
{
    for (int burst = 0;; burst++) {
        if (!s->path || s->busy || s->ticks || s->closed || !srv__ws_open(s->conn))
            return;
        double elapsed_ms = (double)(uv_hrtime() - s->path_start_ns) / 1e6;
        size_t skipped;
        double wait_ms;
        size_t next = proto_stream_path_next(s->path, s->path_last, elapsed_ms, &skipped,
                                             &wait_ms);
        if (next >= s->path_count || burst >= WS_PATH_BURST) {
            if (s->timer_open)
                uv_timer_start(&s->timer, on_path_tick,
                               next >= s->path_count ? (uint64_t)ceil(wait_ms) : 0, 0);
            return;
        }
        s->path_skipped += skipped;
        s->path_last = (long long)next;
        proto_job *job;
        proto_error e;
        if (proto_session_sample(s->session, s->path, next, &job, &e) != 0) {
            srv__ws_send_error(s->conn, s->name, true, s->path_seq, &e);
            path_sample_done(s, next, false);
        } else {
            stream_solve(s, job, s->path_seq, skipped, next, s->path_count);
        }
    }
}

static void on_path_tick(uv_timer_t *t)
{
    ws_stream *s = t->data;
    srv__ws_ref(s->conn);
    path_step(s);
    srv__ws_flush(s->conn);
    srv__ws_unref(s->conn);
}

/* Runs what the stream has waiting: the pending target first, then the
 * path; nothing while a tick holds the stream. */
static void stream_kick(ws_stream *s)
{
    if (s->closed || s->busy || s->ticks || !srv__ws_open(s->conn))
        return;
    if (s->pending) {
        proto_job *job = s->pending;
        s->pending = NULL;
        stream_solve(s, job, s->pending_seq, s->pending_skipped, 0, 0);
    }
    path_step(s);
}

/* When the stream or its connection waits for the stream to go idle:
 * "closed" after a close message, the 1001 close frame when shutting down. */
static void stream_settle(ws_stream *s)
{
    ws_conn *c = s->conn;
    if (s->busy || s->pending || s->ticks)
        return;
    if (s->close_after && !s->closed) {
        size_t len;
        char *t = proto_stream_encode_closed(s->name, &len);
        srv__ws_send(c, t, len);
        free(t);
        stream_drop(s);
    }
    srv__ws_idle(c);
}

/* ---- messages ------------------------------------------------------------------ */

/* The session an open message asks for: its chain resolved (decoded when
 * inline: megabytes of URDF for some) and its options and seed checked.
 * Any thread (the registry is). NULL with *e set when refused. */
static proto_session *open_session(srv_ctx *ctx, const proto_stream_msg *m, proto_error *e)
{
    proto_chain *chain = proto_chain_resolve(m->chain, m->chain_id, &ctx->cfg.limits,
                                             srv_registry_lookup, ctx->registry, e);
    if (!chain)
        return NULL;
    proto_session *session = NULL;
    int rc = proto_session_open(chain, m->options, m->seed, &ctx->cfg.limits, &session, e);
    proto_chain_unref(chain);
    return rc == 0 ? session : NULL;
}

/* An open message. session: the one prepared off the loop (taken), or
 * NULL to open it here; err: why it could not be prepared, or NULL. */
static void on_open(ws_conn *c, proto_stream_msg *m, proto_session *session,
                    const proto_error *err)
{
    srv_ctx *ctx = srv__ws_ctx(c);
    proto_error e;
    ws_streams *st = side(c);
    if (!st) {
        proto_session_free(session);
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (stream_find(c, m->stream)) {
        proto_session_free(session);
        proto_error_set(&e, PROTO_E_STREAM_EXISTS, "/stream",
                        "a stream of this name is already open on this connection");
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (stream_count(c) >= ctx->cfg.max_streams) {
        proto_session_free(session);
        proto_error_set(&e, PROTO_E_TOO_MANY_STREAMS, "/stream",
                        "at most %u streams may be open on one connection (--max-streams)",
                        ctx->cfg.max_streams);
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (err) {
        srv__ws_send_error(c, m->stream, false, 0, err);
        return;
    }
    if (!session && !(session = open_session(ctx, m, &e))) {
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (chains_hold(ctx, proto_session_chain(session), &e) != 0) {
        proto_session_free(session);
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    ws_stream *s = calloc(1, sizeof *s);
    if (s) {
        snprintf(s->name, sizeof s->name, "%s", m->stream);
        s->hash = name_hash(s->name);
    }
    if (!s || index_add(st, s) != 0) {
        free(s);
        chains_release(ctx, proto_session_chain(session));
        proto_session_free(session);
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    s->conn = c;
    s->session = session;
    s->refs = 1;
    s->path_last = -1;
    s->next = st->head;
    st->head = s;
    st->count++;
    srv__ws_ref(c);
    srv_metrics_stream_open(ctx);
    size_t len;
    char *t = proto_stream_encode_opened(s->name, proto_chain_id(proto_session_chain(session)),
                                         &len);
    srv__ws_send(c, t, len);
    free(t);
}

/* The stream asked to close: answered "closed" once nothing of it runs. */
static void on_close_stream(ws_stream *s)
{
    stream_kick(s); /* a waiting target is solved first */
    path_end(s, false);
    s->close_after = true;
    stream_settle(s);
}

static void on_target(ws_stream *s, proto_stream_msg *m)
{
    path_end(s, false);
    proto_job *job;
    proto_error e;
    if (proto_session_target(s->session, m->target, m->seed, &job, &e) != 0) {
        srv__ws_send_error(s->conn, s->name, true, m->seq, &e);
        return;
    }
    if (s->pending) {
        /* a re-synchronising seed survives the conflation of its target:
         * the newest seed sent since the last solve is the arm's state */
        s->skipped += 1 + s->pending_skipped;
        proto_session_skip(s->session, s->pending);
    }
    s->pending = job;
    s->pending_seq = m->seq;
    s->pending_skipped = s->skipped;
    s->skipped = 0;
    ws_streams *st = *srv__ws_streams(s->conn);
    if (!s->to_kick) { /* srv__ws_on_read_done looks at these only */
        s->to_kick = true;
        s->refs++;
        s->kick_next = st->kick;
        st->kick = s;
    }
    /* solved after the whole read was decoded (srv__ws_on_read_done), or
     * after the ticks that hold the stream */
}

static void on_path(ws_stream *s, proto_stream_msg *m)
{
    srv_ctx *ctx = srv__ws_ctx(s->conn);
    stream_kick(s); /* a target sent before the path is solved first */
    path_end(s, false);
    proto_error e;
    if (proto_session_path(s->session, m->path, &e) != 0) {
        srv__ws_send_error(s->conn, s->name, true, m->seq, &e);
        return;
    }
    if (!s->timer_open) {
        if (uv_timer_init(ctx->loop, &s->timer) != 0)
            return;
        s->timer.data = s;
        s->timer_open = true;
        s->refs++;
    }
    s->path = m->path;
    m->path = NULL;
    s->path_seq = m->seq;
    s->path_count = proto_stream_path_count(s->path);
    s->path_sent = 0;
    s->path_last = -1;
    s->path_skipped = 0;
    s->path_start_ns = uv_hrtime();
    path_step(s);
}

/* ---- ticks: the targets of many streams in one message ------------------------ */

/* Entry e is answered with error *err (stream: the name it gave, or ""). */
static void entry_error(ws_tick_entry *e, const char *stream, bool has_seq, long long seq,
                        const proto_error *err)
{
    e->has_seq = has_seq;
    e->seq = seq;
    e->err = malloc(sizeof *e->err);
    if (e->err) { /* else answered "internal" (entry_write) */
        e->err->e = *err;
        snprintf(e->err->stream, sizeof e->err->stream, "%s", stream ? stream : "");
    }
}

/* Writes entry e's answer (any thread: reads only the entry, its job and
 * its stream's name). */
static void entry_write(proto_jw *w, const ws_tick_entry *e)
{
    if (e->job) {
        proto_stream_tick_solution(w, e->s->name, e->seq, e->skipped, e->job, 0);
    } else if (e->err) {
        proto_stream_tick_error(w, e->err->stream, e->has_seq, e->seq, &e->err->e);
    } else {
        proto_error oom;
        proto_error_set(&oom, PROTO_E_INTERNAL, "", "out of memory");
        proto_stream_tick_error(w, NULL, e->has_seq, e->seq, &oom);
    }
}

/* Frees the tick and what it still holds (unsolved jobs, its references to
 * streams and to the connection, which may go with it). */
static void tick_free(ws_tick *t)
{
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        proto_job_free(e->job);
        free(e->err);
        if (e->s) {
            e->s->ticks--;
            stream_unref(e->s);
        }
    }
    for (size_t k = 0; k < t->nparts; k++)
        proto_jw_release(&t->parts[k].out);
    free(t->parts);
    free(t->jobs);
    free(t->e);
    ws_conn *c = t->conn;
    free(t);
    srv__ws_unref(c);
}

/* The waiting tick t is replaced by a newer one: its targets are dropped
 * unsolved, each counted as skipped by the next target of its stream (a
 * target waiting on the stream, which came after the tick, or a later one),
 * its seed kept for that one (proto_session_skip). */
static void tick_drop(ws_tick *t)
{
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        if (!e->job)
            continue;
        ws_stream *s = e->s;
        if (s->pending)
            s->pending_skipped += 1 + e->skipped;
        else
            s->skipped += 1 + e->skipped;
        proto_session_skip(s->session, e->job);
        e->job = NULL;
    }
    tick_free(t);
}

/* Writes the answers of a part right after it was solved, on the same
 * thread. */
static void part_encode(srv_solve *sv)
{
    ws_tick_part *p = sv->data;
    const ws_tick *t = p->t;
    proto_jw_reserve(&p->out, (sv->end - sv->begin) * 256);
    for (size_t i = sv->begin; i < sv->end; i++) {
        if (i > sv->begin)
            proto_jw_raw(&p->out, ",", 1);
        entry_write(&p->out, &t->e[i]);
    }
}

/* Sends the tick's answer: the parts' answers joined, those of a part that
 * could not be solved as errors. */
static void tick_answer(ws_tick *t)
{
    proto_jw w;
    size_t need = 128;
    for (size_t k = 0; k < t->nparts; k++)
        need += t->parts[k].out.len + 1;
    proto_jw_init(&w, NULL, 0);
    proto_jw_reserve(&w, need);
    proto_stream_tick_head(&w, t->seq, t->skipped);
    for (size_t k = 0; k < t->nparts; k++) {
        ws_tick_part *p = &t->parts[k];
        if (k > 0)
            proto_jw_raw(&w, ",", 1);
        if (!p->failed) {
            if (p->out.oom)
                w.oom = true;
            else
                proto_jw_raw(&w, p->out.p, p->out.len);
            continue;
        }
        proto_error err;
        if (p->failed == PROTO_E_OVERLOADED)
            proto_error_set(&err, p->failed, "", "the solver pool is full; send again later");
        else
            proto_error_set(&err, p->failed, "", "the solve could not be run (ikd is shutting down)");
        for (size_t i = p->solve.begin; i < p->solve.end; i++) {
            ws_tick_entry *e = &t->e[i];
            if (i > p->solve.begin)
                proto_jw_raw(&w, ",", 1);
            if (e->job)
                proto_stream_tick_error(&w, e->s->name, e->has_seq, e->seq, &err);
            else
                entry_write(&w, e);
        }
    }
    proto_stream_tick_tail(&w);
    size_t len = 0;
    char *text = proto_jw_finish(&w, &len);
    if (text) {
        srv__ws_send(t->conn, text, len);
    } else {
        proto_error err;
        proto_error_set(&err, PROTO_E_INTERNAL, "", "out of memory");
        srv__ws_send_error(t->conn, NULL, true, t->seq, &err);
    }
    free(text);
}

/* Every part of the running tick t completed: its answer is sent, each
 * solved target becomes its stream's warm start, the streams are released
 * (what waits on them runs), then the waiting tick may start. */
static void tick_finish(ws_tick *t)
{
    ws_conn *c = t->conn;
    ws_streams *st = *srv__ws_streams(c);
    if (!t->orphan && st && st->running == t)
        st->running = NULL;
    bool live = !t->orphan && srv__ws_open(c);
    if (live) {
        tick_answer(t);
        for (size_t k = 0; k < t->nparts; k++) {
            ws_tick_part *p = &t->parts[k];
            for (size_t i = p->solve.begin; i < p->solve.end; i++) {
                ws_tick_entry *e = &t->e[i];
                if (e->job && !p->failed) {
                    proto_session_solved(e->s->session, e->job);
                    e->job = NULL;
                }
            }
        }
    }
    srv__ws_ref(c);
    for (size_t i = 0; i < t->n; i++) {
        ws_stream *s = t->e[i].s;
        if (!s)
            continue;
        t->e[i].s = NULL;
        s->ticks--;
        if (live) {
            stream_kick(s);
            stream_settle(s);
        }
        stream_unref(s);
    }
    bool flush = t->flush;
    tick_free(t);
    if (live)
        tick_kick(c);
    if (flush) /* completed on the pool: nothing else writes it out */
        srv__ws_flush(c);
    srv__ws_unref(c);
}

/* Submits the tick's next parts, at most srv_solve_parallel() in flight
 * (the first one is the tick's admission: refused when --max-queue is
 * reached, and then every part is answered "overloaded"); finishes the
 * tick when every part completed. */
static void tick_pump(ws_tick *t)
{
    if (t->pumping)
        return;
    t->pumping = true;
    srv_ctx *ctx = srv__ws_ctx(t->conn);
    size_t parallel = srv_solve_parallel(ctx);
    while (t->next_part < t->nparts && t->next_part - t->completed < parallel) {
        ws_tick_part *p = &t->parts[t->next_part++];
        if (t->orphan) {
            p->failed = PROTO_E_INTERNAL;
            t->completed++;
            continue;
        }
        bool first = p == &t->parts[0];
        int rc = first ? srv_solve_submit(ctx, &p->solve) : srv_solve_submit_stage(ctx, &p->solve);
        if (rc == SRV_OK)
            continue;
        if (first && rc == SRV_EBUSY) {
            srv_metrics_rejected(ctx, "pool_full");
            for (size_t k = 0; k < t->nparts; k++)
                t->parts[k].failed = PROTO_E_OVERLOADED;
            t->completed = t->nparts;
            t->next_part = t->nparts;
            break;
        }
        p->failed = PROTO_E_INTERNAL;
        t->completed++;
    }
    t->pumping = false;
    if (t->completed == t->nparts)
        tick_finish(t);
}

static void part_done(srv_solve *sv, int status)
{
    ws_tick_part *p = sv->data;
    ws_tick *t = p->t;
    if (status != SRV_OK)
        p->failed = PROTO_E_INTERNAL;
    if (!sv->ran_inline)
        t->flush = true;
    t->completed++;
    tick_pump(t);
}

/* Starts the running tick t: every target prepared from its stream's warm
 * start, then solved in parts (srv_solve_parts) of about equal estimated
 * cost. */
static void tick_start(ws_tick *t)
{
    srv_ctx *ctx = srv__ws_ctx(t->conn);
    double cost = 0;
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        if (e->job) {
            proto_session_prepare(e->s->session, e->job);
            cost += proto_job_cost_us(e->job);
        }
    }
    size_t np = srv_solve_parts(ctx, cost, t->n);
    t->parts = calloc(np, sizeof *t->parts);
    if (!t->parts) {
        /* answered as one part that was not solved */
        static const size_t one = 1;
        t->parts = calloc(one, sizeof *t->parts);
        if (!t->parts) {
            tick_finish(t); /* no answer can be written: the targets go unanswered */
            return;
        }
        np = 1;
        t->parts[0].failed = PROTO_E_INTERNAL;
        t->parts[0].solve.begin = 0;
        t->parts[0].solve.end = t->n;
        t->nparts = 1;
        t->next_part = t->completed = 1;
        tick_finish(t);
        return;
    }
    t->nparts = np;
    /* cut where the running cost passes k / np of the whole */
    double acc = 0;
    size_t begin = 0, i = 0;
    for (size_t k = 0; k < np; k++) {
        double upto = cost * (double)(k + 1) / (double)np;
        size_t left = np - k - 1; /* parts after this one: one entry each at least */
        while (i < t->n - left && (i == begin || acc < upto || k + 1 == np)) {
            if (t->e[i].job)
                acc += proto_job_cost_us(t->e[i].job);
            i++;
        }
        ws_tick_part *p = &t->parts[k];
        p->t = t;
        proto_jw_init(&p->out, NULL, 0);
        p->solve.jobs = t->jobs;
        p->solve.begin = begin;
        p->solve.end = i;
        p->solve.after = part_encode;
        p->solve.done = part_done;
        p->solve.data = p;
        begin = i;
    }
    tick_pump(t);
}

/* Starts the waiting tick when none runs and none of its streams has a
 * solve running (it comes back here when that solve completes). */
static void tick_kick(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st || st->running || !st->waiting || !srv__ws_open(c))
        return;
    ws_tick *t = st->waiting;
    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].s && t->e[i].s->busy)
            return;
    st->waiting = NULL;
    st->running = t;
    tick_start(t);
}

/* A tick message: each target decoded by its stream's session (or
 * answered with its error), the whole becoming the waiting tick (replacing
 * the one waiting), started once the read is decoded. */
static void on_tick(ws_conn *c, proto_stream_msg *m)
{
    srv_ctx *ctx = srv__ws_ctx(c);
    proto_error err;
    size_t n = proto_stream_tick_count(m);
    if (n > ctx->cfg.max_streams) {
        proto_error_set(&err, PROTO_E_TOO_LARGE, "/targets",
                        "a tick carries at most %u targets, one per stream (--max-streams)",
                        ctx->cfg.max_streams);
        srv__ws_send_error(c, NULL, true, m->seq, &err);
        return;
    }
    ws_streams *st = side(c);
    ws_tick *t = st ? calloc(1, sizeof *t) : NULL;
    if (t) {
        t->e = calloc(n, sizeof *t->e);
        t->jobs = calloc(n, sizeof *t->jobs);
    }
    if (!t || !t->e || !t->jobs) {
        if (t) {
            free(t->e);
            free(t->jobs);
            free(t);
        }
        proto_error_set(&err, PROTO_E_INTERNAL, "", "out of memory");
        srv__ws_send_error(c, NULL, true, m->seq, &err);
        return;
    }
    t->conn = c;
    srv__ws_ref(c);
    t->seq = m->seq;
    t->n = n;
    if (st->waiting) {
        t->skipped = st->waiting->skipped + 1;
        ws_tick *old = st->waiting;
        st->waiting = NULL;
        tick_drop(old);
    }
    uint64_t gen = ++st->tick_gen;
    for (size_t i = 0; i < n; i++) {
        ws_tick_entry *e = &t->e[i];
        proto_stream_tick_target tt;
        if (proto_stream_tick_target_get(m, i, &tt, &err) != 0) {
            entry_error(e, tt.stream, tt.has_seq, tt.seq, &err);
            continue;
        }
        char where[64];
        ws_stream *s = stream_find(c, tt.stream);
        if (!s || s->close_after || s->tick_mark == gen)
            snprintf(where, sizeof where, "/targets/%zu/stream", i);
        if (!s || s->close_after) {
            proto_error_set(&err, PROTO_E_UNKNOWN_STREAM, where,
                            "no stream \"%s\" is open on this connection", tt.stream);
            entry_error(e, tt.stream, true, tt.seq, &err);
            continue;
        }
        if (s->tick_mark == gen) {
            proto_error_set(&err, PROTO_E_INVALID_REQUEST, where,
                            "stream \"%s\" has a target earlier in this tick (/targets/%zu): a "
                            "tick carries one target per stream",
                            tt.stream, s->tick_index);
            entry_error(e, tt.stream, true, tt.seq, &err);
            continue;
        }
        s->tick_mark = gen;
        s->tick_index = i;
        path_end(s, false); /* a target cancels a running path */
        proto_job *job;
        if (proto_session_tick_target(s->session, &tt, i, &job, &err) != 0) {
            entry_error(e, tt.stream, true, tt.seq, &err);
            continue;
        }
        if (s->pending) {
            /* a target waiting on the stream came before this one */
            s->skipped += 1 + s->pending_skipped;
            proto_session_skip(s->session, s->pending);
            s->pending = NULL;
        }
        e->s = s;
        s->refs++;
        s->ticks++;
        e->job = job;
        t->jobs[i] = job;
        e->has_seq = true;
        e->seq = tt.seq;
        e->skipped = s->skipped;
        s->skipped = 0;
    }
    st->waiting = t;
    /* started after the whole read was decoded (srv__ws_on_read_done) */
}

/* A decoded message (rc 0) or its decoding error (rc -1, *e). session,
 * err: an open message's session prepared off the loop (see on_open). */
static void handle_msg(ws_conn *c, proto_stream_msg *m, int rc, proto_error *e,
                       proto_session *session, const proto_error *err)
{
    if (rc != 0) {
        srv__ws_send_error(c, m->stream, m->has_seq, m->seq, e);
        return;
    }
    if (m->type == PROTO_STREAM_OPEN) {
        on_open(c, m, session, err);
        return;
    }
    if (m->type == PROTO_STREAM_TICK) {
        on_tick(c, m);
        return;
    }
    ws_stream *s = stream_find(c, m->stream);
    if (!s || s->close_after) {
        proto_error_set(e, PROTO_E_UNKNOWN_STREAM, "/stream",
                        "no stream \"%s\" is open on this connection", m->stream);
        srv__ws_send_error(c, m->stream, m->has_seq, m->seq, e);
    } else if (m->type == PROTO_STREAM_CLOSE) {
        on_close_stream(s);
    } else if (m->type == PROTO_STREAM_TARGET) {
        on_target(s, m);
    } else if (m->type == PROTO_STREAM_PATH) {
        on_path(s, m);
    }
}

static void handle_text(ws_conn *c, const char *text, size_t len)
{
    proto_stream_msg m;
    proto_error e;
    int rc = proto_stream_decode(text, len, &m, &e);
    handle_msg(c, &m, rc, &e, NULL, NULL);
    proto_stream_msg_free(&m);
}

/* ---- large messages, off the loop ------------------------------------------------ */

/* A connection's messages that wait while one is decoded on the pool: the
 * connection is not read meanwhile (srv__ws_pause), so they are only what
 * one socket read held beyond it, and they are handled in order after it. */
typedef struct inbox_msg {
    struct inbox_msg *next;
    size_t len;
    char text[]; /* len bytes */
} inbox_msg;

struct ws_inbox {
    inbox_msg *head, *tail;
    bool decoding; /* a message is on the pool */
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
        free(x);
    }
    (*in)->head = (*in)->tail = NULL;
    if (!(*in)->decoding) {
        free(*in);
        *in = NULL;
    }
}

static void decode_msg_work(srv_work *w)
{
    decode_work *d = w->data;
    d->rc = proto_stream_decode(d->text, d->len, &d->m, &d->e);
    if (d->rc == 0 && d->m.type == PROTO_STREAM_OPEN) {
        d->session = open_session(w->ctx, &d->m, &d->session_err);
        d->session_failed = !d->session;
    }
}

static void inbox_drain(ws_conn *c);

static void decode_msg_done(srv_work *w, int status)
{
    decode_work *d = w->data;
    ws_conn *c = d->c;
    srv_ctx *ctx = srv__ws_ctx(c);
    ws_inbox *in = *srv__ws_inbox(c);
    in->decoding = false;
    if (status == SRV_OK && srv__ws_open(c)) {
        handle_msg(c, &d->m, d->rc, &d->e, d->session,
                   d->session_failed ? &d->session_err : NULL);
        d->session = NULL;
    }
    proto_session_free(d->session);
    if (d->rc == 0)
        proto_stream_msg_free(&d->m);
    srv_trim_note(ctx, d->len);
    free(d->text);
    free(d);
    if (srv__ws_open(c)) {
        inbox_drain(c);
    } else {
        inbox_free(c);            /* closing or torn down meanwhile */
        srv__ws_pause(c, false); /* a closing one reads its close frame */
    }
    srv__ws_unref(c);
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
    if (srv_pool_submit_always(srv__ws_ctx(c), &d->w, decode_msg_work, decode_msg_done) !=
        SRV_OK) {
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
        if (x->len > WS_DECODE_INLINE_MAX) {
            char *text = malloc(x->len);
            if (text) {
                memcpy(text, x->text, x->len);
                if (decode_off_loop(c, text, x->len)) {
                    free(x);
                    break;
                }
                free(text);
            }
        }
        handle_text(c, x->text, x->len);
        free(x);
    }
    if (in->decoding)
        return;
    srv__ws_pause(c, false);
    srv__ws_on_read_done(c);
    srv__ws_idle(c);
    srv__ws_flush(c);
}

/* ---- the hooks of server/ws_conn.h ------------------------------------------------- */

void srv__ws_on_text(ws_conn *c, const char *text, size_t len)
{
    ws_inbox *in = *srv__ws_inbox(c);
    if (in && (in->decoding || in->head)) {
        /* behind a message on the pool: in order, after it */
        inbox_msg *x = malloc(sizeof *x + len);
        if (!x)
            return;
        x->next = NULL;
        x->len = len;
        memcpy(x->text, text, len);
        if (in->tail)
            in->tail->next = x;
        else
            in->head = x;
        in->tail = x;
        return;
    }
    if (len > WS_DECODE_INLINE_MAX && inbox_of(c)) {
        char *copy = malloc(len);
        if (copy) {
            memcpy(copy, text, len);
            if (decode_off_loop(c, copy, len))
                return;
            free(copy);
        }
    }
    handle_text(c, text, len);
}

void srv__ws_on_read_done(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st)
        return;
    while (st->kick) {
        ws_stream *s = st->kick;
        st->kick = s->kick_next;
        s->to_kick = false;
        if (s->pending)
            stream_kick(s);
        stream_unref(s);
        if (!*srv__ws_streams(c))
            return; /* the connection was torn down meanwhile */
    }
    tick_kick(c);
}

void srv__ws_on_drain(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st)
        return;
    for (ws_stream *s = st->head, *next; s; s = next) {
        next = s->next;
        path_end(s, false);
        stream_kick(s);
    }
    tick_kick(c);
}

bool srv__ws_busy(ws_conn *c)
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

void srv__ws_drop_streams(ws_conn *c)
{
    inbox_free(c); /* a message still on the pool frees it when it is back */
    ws_streams **pst = srv__ws_streams(c);
    ws_streams *st = *pst;
    if (!st)
        return;
    if (st->waiting) {
        ws_tick *t = st->waiting;
        st->waiting = NULL;
        tick_free(t);
    }
    if (st->running) {
        /* its parts still run on the pool: it frees itself when they end */
        st->running->orphan = true;
        st->running = NULL;
    }
    while (st->head)
        stream_drop(st->head);
    while (st->kick) {
        ws_stream *s = st->kick;
        st->kick = s->kick_next;
        s->to_kick = false;
        stream_unref(s);
    }
    free(st->slots);
    free(st);
    *pst = NULL;
}
