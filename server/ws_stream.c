/*
 * ws_stream.c: the streams of a WebSocket connection (GET /v1/stream): the
 * rules of proto/STREAM.md for one stream, on top of the connection of
 * server/ws_conn.c, which moves the bytes (the seam is server/ws_conn.h).
 * The messages reach a stream through server/ws_messages.c; ticks, the
 * targets of many streams in one message, are server/ws_tick.c's
 * (server/ws_stream.h says how the three share the work).
 *
 * A connection carries up to --max-streams named streams (found by name
 * in a hash index, below), each a typed session of proto/proto_session.h on one
 * chain (inline or by registered id: an id the shared registry has and this
 * replica does not is fetched first, ws_messages.c) with fixed options: the open message
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
 *   - Shutdown (the connection's on_drain hook, ws_messages.c): running
 *     paths end, running solves and waiting targets are answered; once
 *     nothing runs the connection gets its 1001 close frame (srv__ws_idle).
 *
 * Memory: the chains and scenes open streams hold count against
 * --stream-chain-bytes (server/stream_chains.c: each once; an open or a
 * scene message past it is refused, the stream keeping its old scene;
 * a tick's targets hold their scenes until the tick is done).
 * A stream holds one reference to its connection and is freed when it is
 * closed and no pool solve, tick or timer handle still refers to it. Pool
 * work touches only its own proto_jobs, except a running tick's parts,
 * which decode, prepare and settle their targets with the sessions of the
 * streams the tick holds (ws_stream.held: the loop then defers what would
 * change such a session, srv__stream_skip). A connection holds at most
 * --max-streams streams.
 *
 * Not here: the socket, framing, pings and close codes (ws_conn.c), the
 * order of messages and large ones (ws_messages.c), ticks (ws_tick.c), the
 * message formats (proto/proto_stream.c), the session
 * (proto/proto_session.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_scene.h"
#include "server/metrics.h"
#include "server/registry.h"
#include "server/solve.h"
#include "server/stream_chains.h"
#include "server/ws_stream.h"

#define WS_PATH_BURST 64 /* path samples solved per turn of the loop */
/* the longest wait the path timer is armed for: a later sample (rate_hz
 * may be as small as a double gets) is looked at again then */
#define WS_PATH_WAIT_MAX_MS (24.0 * 3600 * 1000)

/* One solve of a stream: target 0 of job. */
typedef struct ws_task {
    srv_solve solve;
    ws_stream *s;
    long long seq;
    size_t skipped;
    size_t index, count; /* a path sample when count > 0 */
    unsigned path_gen;
} ws_task;

/* ---- the index of streams by name ----------------------------------------- */

static uint64_t name_hash(const char *name)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    return h;
}

/* The connection's stream side, made on first use; NULL when out of memory. */
ws_streams *srv__ws_side(ws_conn *c)
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

/* ---- scenes replaced while jobs were built in them ----------------------------- */

static bool scene_in_use(const ws_stream *s, const proto_scene *r)
{
    return (s->pending && proto_job_scene(s->pending) == r) ||
           (s->solving && proto_job_scene(s->solving) == r) ||
           (s->skip_later && proto_job_scene(s->skip_later) == r);
}

/* Gives back the retired scenes no job of s keeps alive any more. */
static void scenes_sweep(ws_stream *s)
{
    srv_ctx *ctx = srv__ws_ctx(s->conn);
    unsigned char k = 0;
    for (unsigned char i = 0; i < s->nretired; i++) {
        proto_scene *r = s->retired[i];
        if (scene_in_use(s, r)) {
            s->retired[k++] = r;
        } else {
            srv_stream_scenes_release(ctx, r);
            proto_scene_free(r);
        }
    }
    s->nretired = k;
}

/* True when s counts scene r already: its own scene, or one it retired
 * (the same registered scene, sent again by scene_id). */
static bool scene_counted(const ws_stream *s, const proto_scene *r)
{
    if (proto_session_scene_of(s->session) == r)
        return true;
    for (unsigned char i = 0; i < s->nretired; i++)
        if (s->retired[i] == r)
            return true;
    return false;
}

/* The scene s had (held, a reference, taken) is replaced: given back, or
 * kept counted while a job of s was built in it (once: a scene s still
 * counts elsewhere is given back, so that retired holds distinct scenes,
 * one per job at most). */
static void scene_retire(ws_stream *s, proto_scene *old)
{
    scenes_sweep(s); /* at most three left, each kept by a job */
    if (old && scene_in_use(s, old) && !scene_counted(s, old)) {
        s->retired[s->nretired++] = old;
        return;
    }
    srv_stream_scenes_release(srv__ws_ctx(s->conn), old);
    proto_scene_free(old);
}

/* ---- lifetime -------------------------------------------------------------- */

/* The running path goes: its bytes given back, then its memory. */
static void path_free(ws_stream *s)
{
    if (!s->path)
        return;
    srv_stream_paths_release(srv__ws_ctx(s->conn), s->path);
    proto_stream_path_free(s->path);
    s->path = NULL;
}

void srv__stream_unref(ws_stream *s)
{
    if (--s->refs > 0)
        return;
    ws_conn *c = s->conn;
    srv_stream_chains_release(srv__ws_ctx(c), proto_session_chain(s->session));
    srv_stream_scenes_release(srv__ws_ctx(c), proto_session_scene_of(s->session));
    proto_session_free(s->session);
    srv_budget_release(&srv__ws_ctx(c)->sh->stream_bytes, s->own_bytes);
    proto_job_free(s->pending);
    proto_job_free(s->skip_later);
    s->pending = s->skip_later = NULL;
    scenes_sweep(s); /* no job left (nor a solve): every retired scene */
    path_free(s);
    free(s);
    srv__ws_unref(c);
}

void srv__stream_skip(ws_stream *s, proto_job *job)
{
    if (!job)
        return;
    if (!s->held) {
        proto_session_skip(s->session, job);
    } else if (proto_job_has_seed(job, 0)) {
        proto_job_free(s->skip_later); /* an older seed: the newer one wins */
        s->skip_later = job;
    } else {
        proto_job_free(job); /* all a skip does with a job without a seed */
    }
}

void srv__stream_unhold(ws_stream *s)
{
    s->held = false;
    proto_job *job = s->skip_later;
    s->skip_later = NULL;
    srv__stream_skip(s, job);
    scenes_sweep(s);
}

static void stream_timer_closed(uv_handle_t *h)
{
    srv__stream_unref(h->data);
}

ws_stream *srv__stream_find(ws_conn *c, const char *name)
{
    ws_streams *st = *srv__ws_streams(c);
    if (!st || !st->nslots)
        return NULL;
    size_t mask = st->nslots - 1;
    uint64_t h = name_hash(name);
    for (size_t i = (size_t)h & mask; st->slots[i]; i = (i + 1) & mask)
        if (st->slots[i]->hash == h && strcmp(st->slots[i]->name, name) == 0)
            return st->slots[i];
    return NULL;
}

/* What an open stream holds of its own, against --stream-bytes: its
 * struct and its session, each with the allocator's word or two. */
static size_t stream_bytes(const proto_session *session)
{
    return sizeof(ws_stream) + proto_session_bytes(session) + 4 * 16;
}

static size_t stream_count(ws_conn *c)
{
    ws_streams *st = *srv__ws_streams(c);
    return st ? st->count : 0;
}

/* Removes the stream from its connection (no message is sent). */
void srv__stream_drop(ws_stream *s)
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
    scenes_sweep(s);
    path_free(s);
    s->path_gen++;
    if (s->timer_open) {
        uv_timer_stop(&s->timer);
        uv_close((uv_handle_t *)&s->timer, stream_timer_closed);
    }
    srv__stream_unref(s);
}

/* ---- paths ------------------------------------------------------------------- */

void srv__stream_path_end(ws_stream *s, bool completed)
{
    if (!s->path)
        return;
    size_t len;
    char *t = proto_stream_encode_path_end(s->name, s->path_seq, s->path_sent, s->path_skipped,
                                           s->path_count, completed, &len);
    srv__ws_send(s->conn, t, len);
    free(t);
    path_free(s);
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
        srv__stream_path_end(s, true);
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
    s->solving = NULL;
    bool stale = t->count > 0 && (t->path_gen != s->path_gen || !s->path);
    bool live = status == SRV_OK && !s->closed && srv__ws_open(c);
    if (live && !stale)
        deliver(s, sv->job, t->seq, t->skipped, t->index, t->count);
    else
        proto_job_free(sv->job);
    if (live && !was_inline) {
        /* what waited for this solve, a discarded sample's too: the
         * target or path that cut its path, or a close */
        srv__stream_kick(s);
        srv__stream_settle(s);
    }
    if (!was_inline) {
        ws_streams *st = *srv__ws_streams(c);
        if (st && st->solved)
            st->solved(c); /* a tick may have waited for this solve */
        /* a solve that waited for its turn runs among many: the answers of
         * the turn go out together when the socket is next ready */
        if (deferred)
            srv__ws_flush_soon(c);
        else
            srv__ws_flush(c);
    }
    scenes_sweep(s);
    free(t);
    srv__stream_unref(s);
}

/* Solves job (taken) for the stream: where server/solve.c decides. A
 * refusal is answered with the message's seq. */
static void stream_solve(ws_stream *s, proto_job *job, long long seq, size_t skipped, size_t index,
                         size_t count)
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
    s->solving = job;
    if (srv_solve_submit(ctx, &t->solve) == SRV_OK)
        return;
    s->busy = false;
    s->solving = NULL;
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
        size_t next = proto_stream_path_next(s->path, s->path_last, elapsed_ms, &skipped, &wait_ms);
        if (next >= s->path_count || burst >= WS_PATH_BURST) {
            /* (a wait beyond uint64_t, or infinite, converted would be
             * undefined: 0 on x86, a timer due at once for ever) */
            if (next >= s->path_count && !(wait_ms < WS_PATH_WAIT_MAX_MS))
                wait_ms = WS_PATH_WAIT_MAX_MS;
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
void srv__stream_kick(ws_stream *s)
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
void srv__stream_settle(ws_stream *s)
{
    ws_conn *c = s->conn;
    if (s->busy || s->pending || s->ticks)
        return;
    if (s->close_after && !s->closed) {
        size_t len;
        char *t = proto_stream_encode_closed(s->name, &len);
        srv__ws_send(c, t, len);
        free(t);
        srv__stream_drop(s);
        ws_streams *st = *srv__ws_streams(c);
        if (st && st->settled)
            st->settled(c);
    }
    srv__ws_idle(c);
}

/* ---- messages ------------------------------------------------------------------ */

/* The session an open message asks for: its chain resolved (decoded when
 * inline: megabytes of URDF for some) and its options and seed checked.
 * Any thread (the registry is). NULL with *e set when refused. */
proto_session *srv__stream_open_session(srv_ctx *ctx, const proto_stream_msg *m,
                                        srv_registry_scope *scope, proto_error *e)
{
    proto_chain_lookup_fn fn = scope ? srv_registry_scope_lookup : srv_registry_lookup;
    void *ud = scope ? (void *)scope : (void *)ctx->registry;
    proto_chain *chain = proto_chain_resolve(m->chain, m->chain_id, &ctx->cfg.limits, fn, ud, e);
    if (!chain)
        return NULL;
    proto_session *session = NULL;
    int rc = proto_session_open(chain, m->options, m->seed, &ctx->cfg.limits, &session, e);
    proto_chain_unref(chain);
    if (rc == 0 && (m->scene || m->scene_id) &&
        proto_session_scene(session, m->scene, m->scene_id, fn, ud, e)) {
        proto_session_free(session);
        return NULL;
    }
    return rc == 0 ? session : NULL;
}

/* An open message. session: the one prepared off the loop (taken), or
 * NULL to open it here; err: why it could not be prepared, or NULL. */
void srv__stream_open(ws_conn *c, proto_stream_msg *m, proto_session *session,
                      const proto_error *err)
{
    srv_ctx *ctx = srv__ws_ctx(c);
    proto_error e;
    ws_streams *st = srv__ws_side(c);
    if (!st) {
        proto_session_free(session);
        proto_error_set(&e, PROTO_E_INTERNAL, "", "out of memory");
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (srv__stream_find(c, m->stream)) {
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
    if (!session && !(session = srv__stream_open_session(ctx, m, NULL, &e))) {
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (srv_stream_chains_hold(ctx, proto_session_chain(session), &e) != 0) {
        proto_session_free(session);
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    if (srv_stream_scenes_hold(ctx, proto_session_scene_of(session),
                               m->scene_id ? "/scene_id" : "/scene", &e) != 0) {
        srv_stream_chains_release(ctx, proto_session_chain(session));
        proto_session_free(session);
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    size_t own = stream_bytes(session);
    if (!srv_budget_reserve(&ctx->sh->stream_bytes, own)) {
        srv_stream_chains_release(ctx, proto_session_chain(session));
        srv_stream_scenes_release(ctx, proto_session_scene_of(session));
        proto_session_free(session);
        srv_metrics_rejected(ctx, "streams");
        proto_error_set(&e, PROTO_E_OVERLOADED, "/stream",
                        "the open streams fill their budget (--stream-bytes); close streams or "
                        "retry later");
        srv__ws_send_error(c, m->stream, false, 0, &e);
        return;
    }
    ws_stream *s = calloc(1, sizeof *s);
    if (s) {
        snprintf(s->name, sizeof s->name, "%s", m->stream);
        s->hash = name_hash(s->name);
        s->own_bytes = own;
    }
    if (!s || index_add(st, s) != 0) {
        free(s);
        srv_budget_release(&ctx->sh->stream_bytes, own);
        srv_stream_chains_release(ctx, proto_session_chain(session));
        srv_stream_scenes_release(ctx, proto_session_scene_of(session));
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
    char *t =
        proto_stream_encode_opened(s->name, proto_chain_id(proto_session_chain(session)), &len);
    srv__ws_send(c, t, len);
    free(t);
}

int srv__stream_scene(ws_stream *s, const proto_stream_msg *m, proto_chain_lookup_fn lookup,
                      void *ud, proto_error *e)
{
    srv_ctx *ctx = srv__ws_ctx(s->conn);
    /* the old scene stays the stream's until the new one is held */
    proto_scene *old = proto_scene_ref((proto_scene *)proto_session_scene_of(s->session));
    if (proto_session_scene(s->session, m->scene, m->scene_id, lookup, ud, e)) {
        proto_scene_free(old);
        return -1;
    }
    if (srv_stream_scenes_hold(ctx, proto_session_scene_of(s->session),
                               m->scene_id ? "/scene_id" : "/scene", e) != 0) {
        proto_session_set_scene(s->session, old);
        return -1;
    }
    scene_retire(s, old);
    return 0;
}

/* The stream asked to close: answered "closed" once nothing of it runs. */
void srv__stream_close(ws_stream *s)
{
    srv__stream_kick(s); /* a waiting target is solved first */
    srv__stream_path_end(s, false);
    s->close_after = true;
    srv__stream_settle(s);
}

void srv__stream_target(ws_stream *s, proto_stream_msg *m)
{
    srv__stream_path_end(s, false);
    proto_job *job;
    proto_error e;
    if (proto_session_message_target(s->session, m, &job, &e) != 0) {
        srv__ws_send_error(s->conn, s->name, true, m->seq, &e);
        return;
    }
    s->cost_us = proto_job_cost_us(job);
    if (s->pending) {
        /* a re-synchronising seed survives the conflation of its target:
         * the newest seed sent since the last solve is the arm's state */
        s->skipped += 1 + s->pending_skipped;
        srv__stream_skip(s, s->pending);
    }
    s->pending = job;
    scenes_sweep(s); /* the target it replaced may have kept one */
    s->pending_seq = m->seq;
    s->pending_skipped = s->skipped;
    s->skipped = 0;
    srv__stream_to_kick(s);
    /* solved after the whole read was decoded (the on_read_done hook), or
     * after the ticks that hold the stream */
}

void srv__stream_to_kick(ws_stream *s)
{
    ws_streams *st = *srv__ws_streams(s->conn);
    if (s->to_kick || !st)
        return;
    s->to_kick = true;
    s->refs++;
    s->kick_next = st->kick;
    st->kick = s;
}

void srv__stream_path(ws_stream *s, proto_stream_msg *m)
{
    srv_ctx *ctx = srv__ws_ctx(s->conn);
    srv__stream_kick(s); /* a target sent before the path is solved first */
    srv__stream_path_end(s, false);
    proto_error e;
    if (proto_session_path(s->session, m->path, &e) != 0 ||
        srv_stream_paths_hold(ctx, m->path, &e) != 0) {
        srv__ws_send_error(s->conn, s->name, true, m->seq, &e);
        return;
    }
    if (!s->timer_open) {
        if (uv_timer_init(ctx->loop, &s->timer) != 0) {
            srv_stream_paths_release(ctx, m->path);
            return;
        }
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
