/*
 * ws_tick.c: ticks, the targets of many streams of one WebSocket
 * connection in one message (proto/STREAM.md "tick"), answered in one
 * message in the order of the targets: for a game server's thousands of
 * feet and hands a frame, one message instead of one per stream.
 *
 * A tick message is decoded at once, each target by its stream's session
 * (a target naming no open stream, or a stream already named earlier in
 * the tick, is answered with its error in its place), and becomes the
 * connection's waiting tick: a newer one replaces it (its targets are then
 * dropped unsolved, each counted as skipped by the next target of its
 * stream, its seed kept). The waiting tick starts once the whole read is
 * decoded, no tick runs and none of its streams has a solve running (a
 * stream's solve that completes calls back through ws_streams.solved);
 * while a tick holds a stream, the stream's own targets and path wait.
 * At most two ticks per connection, of at most --max-streams targets each.
 *
 * Solving: every target starts from its stream's warm start
 * (proto_session_prepare); the targets are cut into parts of about equal
 * estimated cost (srv_solve_parts, server/solve.h: one inline part when
 * cheap, else parts on the pool, at most srv_solve_parallel() in flight),
 * each part's answers written on the thread that solved it
 * (proto_stream_tick_solution). The first part is the tick's admission: a
 * full queue (--max-queue) answers every target "overloaded". When every
 * part is back the answer is joined and sent, each solution becomes its
 * stream's warm start, and what waited on the streams runs. Pool work
 * touches only the tick's own jobs and the names of its streams, which
 * never change.
 *
 * Not here: the streams themselves (ws_stream.c), the order of a
 * connection's messages (ws_messages.c), the tick's wire format
 * (proto/proto_stream.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json_write.h"
#include "server/metrics.h"
#include "server/solve.h"
#include "server/ws_stream.h"

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
    proto_jw out;         /* its answers, comma-separated */
    proto_errcode failed; /* not solved: its targets answered with this */
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
            srv__stream_unref(e->s);
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
            proto_error_set(&err, p->failed, "",
                            "the solve could not be run (ikd is shutting down)");
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

/* A tick message: each target decoded by its stream's session (or
 * answered with its error), the whole becoming the waiting tick (replacing
 * the one waiting), started once the read is decoded. */
void srv__tick_read(ws_conn *c, proto_stream_msg *m)
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
        ws_stream *s = srv__stream_find(c, tt.stream);
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
        srv__stream_path_end(s, false); /* a target cancels a running path */
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
    st->solved = srv__tick_kick; /* it may wait for a stream's solve */
    /* started after the whole read was decoded (the on_read_done hook) */
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
