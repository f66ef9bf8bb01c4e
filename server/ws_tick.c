/*
 * ws_tick.c: ticks, the targets of many streams of one WebSocket
 * connection in one message (proto/STREAM.md "tick"), answered in one
 * message in the order of the targets: for a game server's thousands of
 * feet and hands a frame, one message instead of one per stream.
 *
 * A tick message is read at once: each target's stream is found (a target
 * naming no open stream, or a stream already named earlier in the tick, is
 * answered with its error in its place), and the tick becomes the
 * connection's waiting tick: a newer one replaces it (its targets are then
 * dropped unsolved, each counted as skipped by the next target of its
 * stream, its seed kept). The waiting tick starts once the whole read is
 * done, no tick runs and none of its streams has a solve running (a
 * stream's solve that completes calls back through ws_streams.solved);
 * while a tick holds a stream, the stream's own targets and path wait.
 * At most two ticks per connection, of at most --max-streams targets each.
 *
 * Solving: the targets are cut into parts of about equal estimated cost
 * (srv_solve_parts, server/solve.h; each stream's cost is the last one of
 * its targets decoded, ws_stream.cost_us), and each part does all of its
 * targets' work on one thread: decoding the target with its stream's
 * session (proto_session_tick_target, which reads the message: the tick
 * keeps the message and its text), its warm start
 * (proto_session_prepare), the solve, writing the answers
 * (proto_stream_tick_solution) and making each solution its stream's warm
 * start (proto_session_solved). A cheap tick is one part, all of it on the
 * loop; any other goes to the pool in parts, at most srv_solve_parallel()
 * in flight, so that the loop only finds the streams, joins the parts'
 * answers and sends them: a thousand characters' tick costs the loop a
 * few microseconds per target, wherever the thousand are solved. The first
 * part is the tick's admission: a full queue (--max-queue) answers every
 * target "overloaded". A target that its session refuses is answered with
 * its error in its place (the targets its stream dropped before it are
 * then counted by the stream's next answer). When every part is back the
 * answer is joined and sent and what waited on the streams runs.
 *
 * Threads: while the tick runs, its parts use the sessions of the streams
 * it holds (ws_stream.held), each stream's in one part only; the loop
 * then only reads those sessions' chains and options (decoding other
 * messages' targets), and a skip that would change one waits for the end
 * of the tick (srv__stream_skip). Pool work also reads the streams' names,
 * which never change.
 *
 * A binary tick (proto/STREAM.md "Binary ticks") is the same tick: only
 * its answer is written in binary (proto/proto_stream_binary.c).
 *
 * Not here: the streams themselves (ws_stream.c), the order of a
 * connection's messages (ws_messages.c), the tick's wire formats
 * (proto/proto_stream.c, proto/proto_stream_binary.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json_write.h"
#include "proto/proto_scene.h"
#include "server/metrics.h"
#include "server/solve.h"
#include "server/stream_chains.h"
#include "server/ws_stream.h"

/* A target of a tick answered with an error, and the stream it named. */
typedef struct ws_tick_error {
    proto_error e;
    char stream[PROTO_STREAM_NAME_MAX + 1];
} ws_tick_error;

typedef struct ws_tick_entry {
    ws_stream *s;       /* its stream (a reference, and s->ticks), unless answered
                           with an error found when the tick was read */
    proto_scene *scene; /* the stream's scene when the tick was read (a reference,
                           and a hold against --stream-chain-bytes, so that a scene
                           message after it cannot make room for another one while
                           the tick keeps this one): a scene message after the tick
                           is for the targets after it */
    proto_job *job;     /* decoded and not yet settled (proto_session_solved) */
    ws_tick_error *err; /* answered with this error */
    bool decoded;       /* job or err came from its target */
    bool has_seed;      /* its target has a "seed" */
    bool has_seq;
    long long seq;
    size_t skipped; /* the stream's targets dropped before this one */
    double cost_us; /* the decoded job's estimated cost */
} ws_tick_entry;

/* Entries [solve.begin, solve.end) of a tick, solved and encoded together. */
typedef struct ws_tick_part {
    srv_solve solve;
    ws_tick *t;
    proto_jw out;         /* its answers, comma-separated */
    proto_errcode failed; /* not solved: its targets answered with this */
} ws_tick_part;

struct ws_tick {
    ws_conn *conn;        /* a reference */
    proto_stream_msg msg; /* the message its targets are read from (owned) */
    char *text;           /* the text msg was read from (owned; NULL when the
                             targets were decoded as the tick was read) */
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
    bool binary;  /* a binary tick: answered in binary (proto_stream_binary.c) */
    /* parts whose answers are not yet written; the part that writes the
     * last ones joins the answer (off the loop when it is on the pool) */
    atomic_size_t unwritten;
    char *answer; /* the joined answer, or NULL (then joined at the end) */
    size_t answer_len;
};

/* Entry e is answered with error *err (stream: the name it gave, or ""). */
static void entry_error(ws_tick_entry *e, const char *stream, bool has_seq, long long seq,
                        const proto_error *err)
{
    e->has_seq = has_seq;
    e->seq = seq;
    e->err = malloc(sizeof *e->err);
    if (e->err) { /* else answered "internal" (entry_write) */
        e->err->e = *err;
        snprintf(e->err->stream, sizeof e->err->stream, "%.*s", PROTO_STREAM_NAME_MAX,
                 stream ? stream : "");
    }
}

/* The answer's pieces in the tick's form: JSON's, or binary's for a
 * binary tick (whose entries have no comma between them). */
static void put_error(proto_jw *w, bool binary, const char *stream, bool has_seq, long long seq,
                      const proto_error *e)
{
    if (binary)
        proto_stream_tick_error_binary(w, stream, has_seq, seq, e);
    else
        proto_stream_tick_error(w, stream, has_seq, seq, e);
}

static void put_comma(proto_jw *w, bool binary)
{
    if (!binary)
        proto_jw_raw(w, ",", 1);
}

/* Writes entry e's answer (any thread: reads only the entry, its job and
 * its stream's name). */
static void entry_write(proto_jw *w, const ws_tick_entry *e, bool binary)
{
    if (e->job && !e->err && binary) {
        proto_stream_tick_solution_binary(w, e->s->name, e->seq, e->skipped, e->job, 0);
    } else if (e->job && !e->err) {
        proto_stream_tick_solution(w, e->s->name, e->seq, e->skipped, e->job, 0);
    } else if (e->err) {
        put_error(w, binary, e->err->stream, e->has_seq, e->seq, &e->err->e);
    } else {
        proto_error oom;
        proto_error_set(&oom, PROTO_E_INTERNAL, "", "out of memory");
        put_error(w, binary, NULL, e->has_seq, e->seq, &oom);
    }
}

/* Frees the tick and what it still holds (unsolved jobs, its references to
 * streams and to the connection, which may go with it). */
static void tick_free(ws_tick *t)
{
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        proto_job_free(e->job);
        srv_stream_scenes_release(srv__ws_ctx(t->conn), e->scene);
        proto_scene_free(e->scene);
        free(e->err);
        if (e->s) {
            e->s->ticks--;
            srv__stream_unref(e->s);
        }
    }
    for (size_t k = 0; k < t->nparts; k++)
        proto_jw_release(&t->parts[k].out);
    free(t->parts);
    free(t->jobs);
    free(t->e);
    proto_stream_msg_free(&t->msg);
    free(t->text);
    free(t->answer);
    ws_conn *c = t->conn;
    free(t);
    srv__ws_unref(c);
}

/* Decodes entry i's target with its stream's session (any thread: reads
 * the session's chain and options, and the tick's message). A refused
 * target is answered with its error. */
static void entry_decode(ws_tick *t, size_t i)
{
    ws_tick_entry *e = &t->e[i];
    if (!e->s || e->decoded)
        return;
    e->decoded = true;
    proto_error err;
    proto_stream_tick_target tt;
    if (proto_stream_tick_target_get(&t->msg, i, &tt, &err) != 0 || /* read before */
        proto_session_tick_target(e->s->session, e->scene, &tt, i, &e->job, &err) != 0) {
        e->job = NULL;
        entry_error(e, tt.stream, true, tt.seq, &err); /* no memory: "internal" */
        return;
    }
    e->cost_us = proto_job_cost_us(e->job);
    t->jobs[i] = e->job;
}

/* Decodes and prepares entries [begin, end) (the thread that solves them,
 * with the tick holding their streams). */
static void entries_prepare(ws_tick *t, size_t begin, size_t end)
{
    for (size_t i = begin; i < end; i++) {
        ws_tick_entry *e = &t->e[i];
        entry_decode(t, i);
        if (e->job)
            proto_session_prepare(e->s->session, e->job);
    }
}

/* The waiting tick t is replaced by a newer one: its targets are dropped
 * unsolved, each counted as skipped by the next target of its stream (a
 * target waiting on the stream, which came after the tick, or a later one),
 * its seed kept for that one (proto_session_skip). */
static void tick_drop(ws_tick *t)
{
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        ws_stream *s = e->s;
        if (!s)
            continue;
        /* a target refused by its session (decoded as the tick was read)
         * drops nothing itself: its stream's next answer counts its skips */
        size_t dropped = e->err ? e->skipped : 1 + e->skipped;
        if (s->pending)
            s->pending_skipped += dropped;
        else
            s->skipped += dropped;
        if (e->err)
            continue;
        /* only a target with a seed of its own changes the session when
         * skipped: those are decoded for it (the loop may read a held
         * stream's session) */
        if (!e->decoded && e->has_seed)
            entry_decode(t, i);
        t->jobs[i] = NULL;
        srv__stream_skip(s, e->job);
        e->job = NULL;
    }
    /* the streams it held wait for it no more: they are kicked and settled
     * once the read is done (a target or a close sent behind it) */
    for (size_t i = 0; i < t->n; i++) {
        ws_stream *s = t->e[i].s;
        if (!s)
            continue;
        t->e[i].s = NULL;
        s->ticks--;
        srv__stream_to_kick(s);
        srv__stream_unref(s);
    }
    tick_free(t);
}

static bool tick_join(ws_tick *t, char **text, size_t *len);

/* Right after a part was solved, on the same thread: writes its answers,
 * then each solution becomes its stream's warm start; the part that
 * writes the last answers joins them all. */
static void part_after(srv_solve *sv)
{
    ws_tick_part *p = sv->data;
    ws_tick *t = p->t;
    proto_jw_reserve(&p->out, (sv->end - sv->begin) * 256);
    for (size_t i = sv->begin; i < sv->end; i++) {
        if (i > sv->begin)
            put_comma(&p->out, t->binary);
        entry_write(&p->out, &t->e[i], t->binary);
    }
    /* t->jobs[i] stays: the solve's metrics read the status word the
     * answer noted (srv_solve_run), and the stream keeps the job until
     * its next solve, which waits for tick_finish */
    for (size_t i = sv->begin; i < sv->end; i++) {
        ws_tick_entry *e = &t->e[i];
        if (e->job && !e->err) {
            proto_session_solved(e->s->session, e->job);
            e->job = NULL;
        }
    }
    if (atomic_fetch_sub(&t->unwritten, 1) == 1)
        tick_join(t, &t->answer, &t->answer_len);
}

/* A part on the pool: its targets decoded and prepared, then solved
 * (srv_solve_run: the solve, the metrics, part_after). */
static void part_work(srv_ctx *ctx, srv_solve *sv)
{
    ws_tick_part *p = sv->data;
    entries_prepare(p->t, sv->begin, sv->end);
    srv_solve_run(ctx, sv);
}

/* The tick's answer: the parts' answers joined, those of a part that
 * could not be solved as errors, into *text (malloc'd) and *len; false
 * when out of memory. Any thread once every part that ran has written its
 * answers. */
static bool tick_join(ws_tick *t, char **text, size_t *len)
{
    proto_jw w;
    size_t need = 128;
    for (size_t k = 0; k < t->nparts; k++)
        need += t->parts[k].out.len + 1;
    proto_jw_init(&w, NULL, 0);
    proto_jw_reserve(&w, need);
    if (t->binary)
        proto_stream_tick_head_binary(&w, t->seq, t->skipped, t->n);
    else
        proto_stream_tick_head(&w, t->seq, t->skipped);
    for (size_t k = 0; k < t->nparts; k++) {
        ws_tick_part *p = &t->parts[k];
        if (k > 0)
            put_comma(&w, t->binary);
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
            proto_error_set(&err, p->failed, "",
                            "the solve could not be run (ikd is shutting down)");
        for (size_t i = p->solve.begin; i < p->solve.end; i++) {
            ws_tick_entry *e = &t->e[i];
            if (i > p->solve.begin)
                put_comma(&w, t->binary);
            if (e->s && !e->err)
                put_error(&w, t->binary, e->s->name, e->has_seq, e->seq, &err);
            else
                entry_write(&w, e, t->binary);
        }
    }
    if (!t->binary)
        proto_stream_tick_tail(&w);
    *text = proto_jw_finish(&w, len);
    return *text != NULL;
}

/* Sends the tick's answer (joined by the last part, or here), in its
 * form. */
static void tick_answer(ws_tick *t)
{
    if (!t->answer && !tick_join(t, &t->answer, &t->answer_len)) {
        proto_error err;
        proto_error_set(&err, PROTO_E_INTERNAL, "", "out of memory");
        srv__ws_send_error(t->conn, NULL, true, t->seq, &err);
        return;
    }
    if (t->binary)
        srv__ws_send_binary(t->conn, t->answer, t->answer_len);
    else
        srv__ws_send(t->conn, t->answer, t->answer_len);
    free(t->answer);
    t->answer = NULL;
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
    if (live)
        tick_answer(t);
    srv__ws_ref(c);
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        ws_stream *s = e->s;
        if (!s)
            continue;
        e->s = NULL;
        s->ticks--;
        srv__stream_unhold(s);
        if (e->cost_us > 0)
            s->cost_us = e->cost_us;
        if (e->err) /* refused by its session: its skips go to the next answer */
            s->skipped += e->skipped;
        if (live) {
            srv__stream_kick(s);
            srv__stream_settle(s);
        }
        srv__stream_unref(s);
    }
    bool flush = t->flush;
    tick_free(t);
    if (live)
        srv__tick_kick(c);
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

/* A stream's estimated cost of one target before any was decoded. */
#define WS_TICK_UNKNOWN_US 50.0

/* Starts the running tick t: its streams held, its targets cut into parts
 * (srv_solve_parts) of about equal estimated cost; a cheap tick is
 * decoded and prepared here, on the loop, and solved inline; the others'
 * parts do all of it on the pool (part_work). */
static void tick_start(ws_tick *t)
{
    srv_ctx *ctx = srv__ws_ctx(t->conn);
    double cost = 0;
    double *each = malloc(t->n * sizeof *each);
    for (size_t i = 0; i < t->n; i++) {
        ws_tick_entry *e = &t->e[i];
        double c = 0;
        if (e->s && !e->err) {
            e->s->held = true;
            c = e->cost_us > 0      ? e->cost_us
                : e->s->cost_us > 0 ? e->s->cost_us
                                    : WS_TICK_UNKNOWN_US;
        }
        if (each)
            each[i] = c;
        cost += c;
    }
    bool cheap = !(cost >= ctx->cfg.inline_cost_us);
    size_t np = cheap ? 1 : srv_solve_parts(ctx, cost, t->n);
    t->parts = each && np ? calloc(np, sizeof *t->parts) : NULL;
    if (!t->parts) {
        free(each);
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
    atomic_init(&t->unwritten, np);
    if (cheap)
        entries_prepare(t, 0, t->n);
    /* cut where the running cost passes k / np of the whole */
    double acc = 0;
    size_t begin = 0, i = 0;
    for (size_t k = 0; k < np; k++) {
        double upto = cost * (double)(k + 1) / (double)np;
        size_t left = np - k - 1; /* parts after this one: one entry each at least */
        while (i < t->n - left && (i == begin || acc < upto || k + 1 == np))
            acc += each[i++];
        ws_tick_part *p = &t->parts[k];
        p->t = t;
        proto_jw_init(&p->out, NULL, 0);
        p->solve.jobs = t->jobs;
        p->solve.begin = begin;
        p->solve.end = i;
        p->solve.work = cheap ? NULL : part_work;
        p->solve.after = part_after;
        p->solve.done = part_done;
        p->solve.data = p;
        begin = i;
    }
    free(each);
    tick_pump(t);
}

/* Starts the waiting tick when none runs and none of its streams has a
 * solve running (it comes back here when that solve completes). */
void srv__tick_kick(ws_conn *c)
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

/* A tick message: each target's stream found (or the target answered
 * with its error), the whole becoming the waiting tick (replacing the one
 * waiting), started once the read is done. The tick takes the message (and
 * *text, which its targets refer to); without text its targets are
 * decoded here, on the loop. */
void srv__tick_read(ws_conn *c, proto_stream_msg *m, char **text)
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
    ws_streams *st = srv__ws_side(c);
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
    t->binary = m->binary;
    t->msg = *m; /* the tick's now: the caller frees a cleared message */
    memset(m, 0, sizeof *m);
    t->text = text ? *text : NULL;
    if (text)
        *text = NULL;
    if (st->waiting) {
        t->skipped = st->waiting->skipped + 1;
        ws_tick *old = st->waiting;
        st->waiting = NULL;
        tick_drop(old);
    }
    uint64_t gen = ++st->tick_gen;
    for (size_t i = 0; i < n; i++) {
        ws_tick_entry *e = &t->e[i];
        proto_stream_tick_target target, *tt = &target;
        if (proto_stream_tick_target_get(&t->msg, i, tt, &err) != 0) {
            entry_error(e, tt->stream, tt->has_seq, tt->seq, &err);
            continue;
        }
        char where[64];
        ws_stream *s = srv__stream_find(c, tt->stream);
        if (!s || s->close_after || s->tick_mark == gen)
            snprintf(where, sizeof where, "/targets/%zu/stream", i);
        if (!s || s->close_after) {
            proto_error_set(&err, PROTO_E_UNKNOWN_STREAM, where,
                            "no stream \"%s\" is open on this connection", tt->stream);
            entry_error(e, tt->stream, true, tt->seq, &err);
            continue;
        }
        if (s->tick_mark == gen) {
            proto_error_set(&err, PROTO_E_INVALID_REQUEST, where,
                            "stream \"%s\" has a target earlier in this tick (/targets/%zu): a "
                            "tick carries one target per stream",
                            tt->stream, s->tick_index);
            entry_error(e, tt->stream, true, tt->seq, &err);
            continue;
        }
        /* the stream holds its scene: found in the table, never refused */
        proto_scene *scene = (proto_scene *)proto_session_scene_of(s->session);
        if (srv_stream_scenes_hold(srv__ws_ctx(c), scene, "/scene", &err) != 0) {
            entry_error(e, tt->stream, true, tt->seq, &err);
            continue;
        }
        s->tick_mark = gen;
        s->tick_index = i;
        srv__stream_path_end(s, false); /* a target cancels a running path */
        if (s->pending) {
            /* a target waiting on the stream came before this one */
            s->skipped += 1 + s->pending_skipped;
            srv__stream_skip(s, s->pending);
            s->pending = NULL;
        }
        e->s = s;
        e->scene = proto_scene_ref(scene);
        s->refs++;
        s->ticks++;
        e->has_seq = true;
        e->seq = tt->seq;
        e->has_seed = tt->seed != NULL;
        e->skipped = s->skipped;
        s->skipped = 0;
        if (!t->text)
            entry_decode(t, i); /* the message's text goes with the caller */
    }
    st->waiting = t;
    st->solved = srv__tick_kick; /* it may wait for a stream's solve */
    /* started after the whole read was done (the on_read_done hook) */
}

void srv__ticks_drop(ws_streams *st)
{
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
}
