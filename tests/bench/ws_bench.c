/*
 * ws_bench.c: a load client for ikd's WebSocket streams (build/ws_bench).
 *
 *   ws_bench two-bone --url HOST:PORT [--connections 50] [--streams 4]
 *            [--window 1] [--seconds 5] [--warmup-ms 500] [--token T]
 *     Every connection opens --streams streams on a two-bone limb (chain kind
 *     "bones", three joint positions, seed 001's solver) and keeps --window
 *     targets outstanding on each: it sends a target whenever a solution
 *     comes back, so the load follows the daemon's own pace. A connection
 *     thus has streams * window targets in flight. The window is spread over
 *     streams because ikd conflates: of the targets of one stream that it
 *     reads together, only the newest is solved (the others come back as
 *     "skipped"), so a window above 1 on one stream mostly measures
 *     skipping. Targets are reachable positions drawn once from a fixed
 *     pseudo-random sequence.
 *
 *   ws_bench chain --url HOST:PORT --urdf FILE --base LINK --tip LINK
 *            --targets FILE [--connections 8] [--streams 1] [--window 1] ...
 *     The same with a URDF chain and full-pose targets read from a file in
 *     the format of $IKD_DATA/targets/ (joint values, " | ", then
 *     px py pz qx qy qz qw; the joint values are ignored). Consecutive targets
 *     of a stream are unrelated poses, so the warm start helps little: this
 *     measures the daemon against the solver's own rate (ikbench chain).
 *     With --smooth N the targets follow a motion instead, as a robot
 *     controller streams them: N poses between each pair of consecutive
 *     configurations of the file, by forward kinematics of the joint values
 *     interpolated linearly, so that each stream's warm start applies.
 *
 *   ws_bench tick --url HOST:PORT [--characters 1000] [--window 1]
 *            [--fields local_rotations] [--digits 6] [--separate] ...
 *     A game server's ticks: one connection, --characters streams, each
 *     opened on a two-bone rig of its own (the limb above, scaled by 1 to
 *     1.05 per character, so every chain differs) with options.fields and
 *     options.digits (--fields "" and --digits 0 for full answers). A tick
 *     is one "tick" message holding a target for every character, answered
 *     by one "tick_solution" message; --window ticks are kept outstanding
 *     (the next is sent when one is answered). With --separate the same
 *     ticks go as --characters "target" messages written together (the
 *     baseline: the same rigs as separate streams), and a tick is answered
 *     when every character's solution has come back. A tick whose targets
 *     were conflated (a newer tick replaced it) counts as skipped.
 *
 * It starts nothing itself: ikd must already listen on --url
 * (tests/bench/run.sh starts it on port 0 and reads the port).
 *
 * How it talks: one libuv loop, --connections TCP connections. The opening
 * handshake is written by hand (a random Sec-WebSocket-Key; the answer's
 * Sec-WebSocket-Accept is checked with nettle's SHA-1 and base64); after it,
 * wslay's client context does the framing, with masks taken from
 * getrandom(2). Outgoing bytes are gathered in a buffer and handed to
 * uv_write, one write in flight per connection.
 *
 * What it counts: after every stream is open and --warmup-ms has passed,
 * for --seconds: solutions received (and failed ones: status other than
 * "success"), targets the daemon reported as skipped (conflation: a newer
 * target replaced a waiting one), error messages, and the latency of each
 * solution from the moment its target was queued to the moment its message
 * was decoded, in a histogram of 1 us buckets up to 1 s, and the mean of
 * the results' own "time_ms" (the solver's time inside ikd, which for a
 * stream includes the search for the branch nearest the previous
 * solution). Solutions are matched by the stream's name and the client's
 * seq; a solution for seq s resolves every outstanding seq up to s (those
 * were skipped). Replies are scanned for their envelope members, not parsed
 * in full, so that the client costs little next to the daemon on the same
 * machine.
 *
 * Output: progress and errors on stderr; one JSON object on the last line
 * of stdout, e.g.
 *   {"bench":"ws_two_bone","connections":50,"streams":4,"window":1,"seconds":5.00,
 *    "solutions":..,"skipped":..,"failed":..,"errors":..,
 *    "solutions_per_s":..,"p50_us":..,"p99_us":..,"max_us":..,"solve_us_mean":..}
 * and in tick mode
 *   {"bench":"ws_tick","form":"tick","characters":1000,"window":1,"fields":"local_rotations",
 *    "digits":6,"seconds":5.00,"ticks":..,"skipped_ticks":..,"ticks_per_s":..,
 *    "solutions_per_s":..,"p50_us":..,"p99_us":..,"max_us":..,"bytes_in_per_tick":..,
 *    "bytes_out_per_tick":..}
 * (latencies per tick, from its first byte queued to its last answer read;
 * bytes in: what the client sent per tick, out: what ikd answered).
 * Exit status 0 when solutions were measured and no error message or
 * protocol violation was seen, 1 otherwise.
 */
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/types.h>
#include <uv.h>
#include <wslay/wslay.h>

#include "tests/proto/urdf_read.h"
#include "solver/ik_chain.h"
#include "tests/bench/bench_file.h"

#define HIST_BUCKETS 1000000 /* 1 us each: latencies up to 1 s, the rest in the last */
#define READ_CHUNK   65536
#define TARGET_MAX   256 /* bytes of one target object's text */
#define TICK_WINDOW_MAX 64

/* ---- configuration and global state ----------------------------------- */

typedef struct bench_cfg {
    bool chain_mode;
    bool tick_mode; /* tick: --characters streams on one connection, ticks */
    bool separate;  /* tick: the baseline, one target message per character */
    const char *fields;
    int digits;
    char host[256];
    int port;
    int connections;
    int streams; /* per connection */
    double seconds;
    int window; /* per stream */
    unsigned warmup_ms;
    const char *token;
    const char *urdf, *base, *tip, *targets;
    int smooth; /* chain: steps between the file's configurations, 0 = off */
} bench_cfg;

typedef struct bench {
    bench_cfg cfg;
    uv_loop_t *loop;
    uv_timer_t timer;
    json_t *chain;               /* the chain every stream opens on */
    char (*targets)[TARGET_MAX]; /* target objects as JSON text */
    size_t ntargets;
    int opened, closed; /* streams opened, connections closed */
    bool sending, measuring;
    uint64_t t0, t1; /* measurement window, ns */
    uint64_t solutions, skipped, failed, errors, violations;
    uint64_t max_ns;
    double solve_ms_sum; /* the results' own "time_ms" */
    uint64_t solve_ms_n;
    uint32_t *hist;
    uint8_t rnd[4096]; /* mask source */
    size_t rnd_left;
    /* tick mode */
    long long next_tick, done_tick; /* ticks sent; every tick <= done_tick resolved */
    uint64_t tick_sent_ns[TICK_WINDOW_MAX];
    int tick_left[TICK_WINDOW_MAX];   /* --separate: characters not yet answered */
    bool tick_skip[TICK_WINDOW_MAX];  /* --separate: a target of it was skipped */
    uint64_t ticks, skipped_ticks, bytes_in, bytes_out;
    char *tick_buf; /* the message being built */
    size_t tick_cap;
} bench;

typedef enum conn_state { C_CONNECTING, C_HANDSHAKE, C_OPENING, C_RUNNING, C_CLOSING } conn_state;

/* One stream of a connection: its seqs and their send times. */
typedef struct bstream {
    long long next_seq; /* next seq to send */
    long long done_seq; /* every seq <= this one is answered or skipped */
    uint64_t *sent_ns;  /* ring of --window slots, by seq */
    size_t target_i;
} bstream;

typedef struct conn {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    bench *b;
    int id;
    conn_state state;
    bool handle_closed;
    wslay_event_context_ptr ws;
    char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
    char hs[8192]; /* the handshake answer so far */
    size_t hs_len;
    const uint8_t *in; /* bytes being fed to wslay */
    size_t in_len;
    char rbuf[READ_CHUNK];
    /* Outgoing bytes: `out` gathers, `wbuf` is the one uv_write in flight. */
    char *out, *wbuf;
    size_t out_len, out_cap, wbuf_cap;
    bool writing;
    bstream *st; /* --streams, named "s0", "s1", ... */
    int opened;
} conn;

static void die(const char *what)
{
    fprintf(stderr, "ws_bench: %s\n", what);
    exit(1);
}

/* ---- small helpers ------------------------------------------------------ */

static const char *memfind(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    return k <= n ? memmem(hay, n, needle, k) : NULL;
}

/* The integer after `key` (e.g. "\"seq\":") in msg, or fails. */
static bool scan_ll(const char *msg, size_t n, const char *key, long long *out)
{
    const char *p = memfind(msg, n, key);
    if (!p)
        return false;
    p += strlen(key);
    const char *end = msg + n;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return false;
    long long v = 0;
    while (p < end && *p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    *out = neg ? -v : v;
    return true;
}

static void random_bytes(bench *b, uint8_t *buf, size_t len)
{
    while (len > 0) {
        if (b->rnd_left == 0) {
            size_t got = 0;
            while (got < sizeof b->rnd) {
                ssize_t r = getrandom(b->rnd + got, sizeof b->rnd - got, 0);
                if (r < 0 && errno != EINTR)
                    die("getrandom failed");
                if (r > 0)
                    got += (size_t)r;
            }
            b->rnd_left = sizeof b->rnd;
        }
        size_t k = len < b->rnd_left ? len : b->rnd_left;
        memcpy(buf, b->rnd + sizeof b->rnd - b->rnd_left, k);
        b->rnd_left -= k;
        buf += k;
        len -= k;
    }
}

/* ---- writing ------------------------------------------------------------ */

static void flush(conn *c);

static void on_written(uv_write_t *req, int status)
{
    conn *c = req->data;
    c->writing = false;
    if (status < 0) {
        if (c->state != C_CLOSING)
            fprintf(stderr, "ws_bench: connection %d: write: %s\n", c->id, uv_strerror(status));
        return;
    }
    flush(c);
}

/* Hands the gathered bytes to uv_write unless a write is in flight (its
 * completion calls this again). */
static void flush(conn *c)
{
    if (c->writing || c->out_len == 0 || c->handle_closed)
        return;
    char *t = c->wbuf;
    size_t tc = c->wbuf_cap;
    c->wbuf = c->out;
    c->wbuf_cap = c->out_cap;
    c->out = t;
    c->out_cap = tc;
    uv_buf_t buf = uv_buf_init(c->wbuf, (unsigned)c->out_len);
    c->out_len = 0;
    c->wreq.data = c;
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &buf, 1, on_written);
    if (rc < 0)
        fprintf(stderr, "ws_bench: connection %d: write: %s\n", c->id, uv_strerror(rc));
    else
        c->writing = true;
}

static void out_append(conn *c, const void *data, size_t len)
{
    if (c->out_len + len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 16384;
        while (cap < c->out_len + len)
            cap *= 2;
        char *p = realloc(c->out, cap);
        if (!p)
            die("out of memory");
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

/* ---- wslay callbacks ---------------------------------------------------- */

static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                          void *ud)
{
    out_append(ud, data, len);
    return (ssize_t)len;
}

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                          void *ud)
{
    conn *c = ud;
    if (c->in_len == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t k = len < c->in_len ? len : c->in_len;
    memcpy(buf, c->in, k);
    c->in += k;
    c->in_len -= k;
    return (ssize_t)k;
}

static int ws_genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
    conn *c = ud;
    random_bytes(c->b, buf, len);
    return 0;
}

static void queue_text(conn *c, const char *text, size_t len)
{
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)text, len};
    if (wslay_event_queue_msg(c->ws, &m) != 0)
        die("wslay_event_queue_msg failed");
}

/* Sends targets on stream k until --window are outstanding (or sending
 * has stopped). */
static void fill_window(conn *c, int k)
{
    bench *b = c->b;
    bstream *st = &c->st[k];
    char msg[TARGET_MAX + 128];
    while (b->sending && st->next_seq - 1 - st->done_seq < b->cfg.window) {
        long long seq = st->next_seq++;
        int n = snprintf(msg, sizeof msg,
                         "{\"type\":\"target\",\"stream\":\"s%d\",\"seq\":%lld,\"target\":%s}", k,
                         seq, b->targets[st->target_i]);
        st->target_i = (st->target_i + 1) % b->ntargets;
        st->sent_ns[seq % b->cfg.window] = uv_hrtime();
        queue_text(c, msg, (size_t)n);
    }
}

/* ---- ticks --------------------------------------------------------------- */

static void tick_append(bench *b, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > b->tick_cap) {
        size_t cap = b->tick_cap ? b->tick_cap : 65536;
        while (cap < *len + n + 1)
            cap *= 2;
        char *p = realloc(b->tick_buf, cap);
        if (!p)
            die("out of memory");
        b->tick_buf = p;
        b->tick_cap = cap;
    }
    memcpy(b->tick_buf + *len, s, n);
    *len += n;
}

/* Sends ticks until --window are outstanding: one tick message, or (with
 * --separate) one target message per character, seq = the tick. */
static void fill_ticks(conn *c)
{
    bench *b = c->b;
    int n = b->cfg.streams;
    while (b->sending && b->next_tick - 1 - b->done_tick < b->cfg.window) {
        long long t = b->next_tick++;
        size_t slot = (size_t)(t % b->cfg.window);
        b->tick_sent_ns[slot] = uv_hrtime();
        b->tick_left[slot] = n;
        b->tick_skip[slot] = false;
        char head[96];
        size_t len = 0;
        if (!b->cfg.separate) {
            int h = snprintf(head, sizeof head, "{\"type\":\"tick\",\"seq\":%lld,\"targets\":[", t);
            tick_append(b, &len, head, (size_t)h);
        }
        for (int k = 0; k < n; k++) {
            bstream *st = &c->st[k];
            const char *target = b->targets[(st->target_i + (size_t)t) % b->ntargets];
            int h = b->cfg.separate
                        ? snprintf(head, sizeof head,
                                   "{\"type\":\"target\",\"stream\":\"s%d\",\"seq\":%lld,\"target\":",
                                   k, t)
                        : snprintf(head, sizeof head, "%s{\"stream\":\"s%d\",\"target\":",
                                   k ? "," : "", k);
            if (b->cfg.separate)
                len = 0;
            tick_append(b, &len, head, (size_t)h);
            tick_append(b, &len, target, strlen(target));
            tick_append(b, &len, "}", 1);
            if (b->cfg.separate) {
                if (b->measuring)
                    b->bytes_in += len;
                queue_text(c, b->tick_buf, len);
            }
        }
        if (!b->cfg.separate) {
            tick_append(b, &len, "]}", 2);
            if (b->measuring)
                b->bytes_in += len;
            queue_text(c, b->tick_buf, len);
        }
    }
}

static size_t count_of(const char *msg, size_t len, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = memfind(msg, len, needle); p;
         p = memfind(p + k, len - (size_t)(p + k - msg), needle))
        n++;
    return n;
}

/* Tick t is resolved (answered, or skipped when skipped): measured. */
static void tick_resolved(bench *b, long long t, bool skipped, uint64_t now)
{
    if (!b->measuring)
        return;
    if (skipped) {
        b->skipped_ticks++;
        return;
    }
    uint64_t ns = now - b->tick_sent_ns[t % b->cfg.window];
    uint64_t us = ns / 1000;
    b->hist[us < HIST_BUCKETS ? us : HIST_BUCKETS - 1]++;
    if (ns > b->max_ns)
        b->max_ns = ns;
    b->ticks++;
    b->solutions += (uint64_t)b->cfg.streams;
}

/* A tick_solution: every tick up to its seq is resolved (those before it
 * were replaced unsolved); it must hold one answer per character, each a
 * success. */
static void on_tick_solution(conn *c, const char *msg, size_t len, uint64_t now)
{
    bench *b = c->b;
    long long t, skipped;
    if (!scan_ll(msg, len, "\"seq\":", &t) || !scan_ll(msg, len, "\"skipped\":", &skipped) ||
        t <= b->done_tick || t >= b->next_tick || skipped != t - b->done_tick - 1) {
        if (b->violations++ == 0)
            fprintf(stderr, "ws_bench: unexpected tick answer (sent up to %lld, resolved up to "
                            "%lld): %.*s\n",
                    b->next_tick - 1, b->done_tick, (int)(len < 300 ? len : 300), msg);
        return;
    }
    size_t answers = count_of(msg, len, "{\"stream\":");
    if (answers != (size_t)b->cfg.streams && b->violations++ == 0)
        fprintf(stderr, "ws_bench: a tick answer holds %zu answers, not %d\n", answers,
                b->cfg.streams);
    if (memfind(msg, len, "\"error\":") && b->errors++ < 5)
        fprintf(stderr, "ws_bench: a tick answer holds errors: %.*s\n",
                (int)(len < 500 ? len : 500), msg);
    if (b->measuring) {
        b->bytes_out += len;
        b->failed += (uint64_t)b->cfg.streams - count_of(msg, len, "\"status\":\"success\"");
    }
    for (long long k = b->done_tick + 1; k < t; k++)
        tick_resolved(b, k, true, now);
    tick_resolved(b, t, false, now);
    b->done_tick = t;
    fill_ticks(c);
}

/* --separate: a solution of character k for tick seq; it resolves that
 * character's ticks up to seq (those before it skipped). */
static void on_tick_part(conn *c, int k, const char *msg, size_t len, uint64_t now)
{
    bench *b = c->b;
    bstream *st = &c->st[k];
    long long t, skipped;
    if (!scan_ll(msg, len, "\"seq\":", &t) || !scan_ll(msg, len, "\"skipped\":", &skipped) ||
        t <= st->done_seq || t >= b->next_tick || skipped != t - st->done_seq - 1) {
        if (b->violations++ == 0)
            fprintf(stderr, "ws_bench: unexpected solution: %.*s\n", (int)(len < 300 ? len : 300),
                    msg);
        return;
    }
    if (b->measuring) {
        b->bytes_out += len;
        if (!memfind(msg, len, "\"status\":\"success\""))
            b->failed++;
    }
    for (long long u = st->done_seq + 1; u <= t; u++) {
        size_t slot = (size_t)(u % b->cfg.window);
        if (u < t)
            b->tick_skip[slot] = true;
        if (--b->tick_left[slot] == 0) {
            /* the last character of tick u: ticks resolve in order */
            if (u != b->done_tick + 1 && b->violations++ == 0)
                fprintf(stderr, "ws_bench: tick %lld completed before tick %lld\n", u,
                        b->done_tick + 1);
            tick_resolved(b, u, b->tick_skip[slot], now);
            b->done_tick = u;
        }
    }
    st->done_seq = t;
    if (b->done_tick + 1 == b->next_tick || b->next_tick - 1 - b->done_tick < b->cfg.window)
        fill_ticks(c);
}

/* The stream a message names ("stream":"s<k>"), or -1. */
static int stream_of(const conn *c, const char *msg, size_t len)
{
    long long k;
    if (!scan_ll(msg, len, "\"stream\":\"s", &k) || k < 0 || k >= c->b->cfg.streams)
        return -1;
    return (int)k;
}

static void all_opened(bench *b);

static void on_solution(conn *c, int k, const char *msg, size_t len, uint64_t now)
{
    bench *b = c->b;
    bstream *st = &c->st[k];
    long long seq, skipped;
    if (!scan_ll(msg, len, "\"seq\":", &seq) || !scan_ll(msg, len, "\"skipped\":", &skipped) ||
        seq <= st->done_seq || seq >= st->next_seq || skipped < 0 ||
        skipped > seq - st->done_seq - 1) {
        if (b->violations++ == 0)
            fprintf(stderr,
                    "ws_bench: connection %d: unexpected solution (sent up to %lld, "
                    "resolved up to %lld): %.*s\n",
                    c->id, st->next_seq - 1, st->done_seq, (int)(len < 300 ? len : 300), msg);
        return;
    }
    if (b->measuring) {
        uint64_t ns = now - st->sent_ns[seq % b->cfg.window];
        uint64_t us = ns / 1000;
        b->hist[us < HIST_BUCKETS ? us : HIST_BUCKETS - 1]++;
        if (ns > b->max_ns)
            b->max_ns = ns;
        b->solutions++;
        b->skipped += (uint64_t)skipped;
        if (!memfind(msg, len, "\"status\":\"success\""))
            b->failed++;
        /* the solver's time inside ikd; the number is followed by at least
         * the closing braces, so strtod stops inside the message */
        const char *tm = memfind(msg, len, "\"time_ms\":");
        if (tm && tm + 12 < msg + len) {
            b->solve_ms_sum += strtod(tm + 10, NULL);
            b->solve_ms_n++;
        }
    }
    st->done_seq = seq;
}

static void ws_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                      void *ud)
{
    conn *c = ud;
    bench *b = c->b;
    if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
        if (c->state != C_CLOSING) {
            fprintf(stderr, "ws_bench: connection %d: closed by ikd with %u\n", c->id,
                    arg->status_code);
            b->violations++;
        }
        return;
    }
    if (arg->opcode != WSLAY_TEXT_FRAME)
        return;
    const char *msg = (const char *)arg->msg;
    size_t len = arg->msg_length;
    uint64_t now = uv_hrtime();
    bool answering = c->state == C_RUNNING || c->state == C_CLOSING;
    if (b->cfg.tick_mode && answering &&
        memfind(msg, len < 40 ? len : 40, "\"type\":\"tick_solution\"")) {
        if (c->state == C_RUNNING) /* late answers of the closing run are ignored */
            on_tick_solution(c, msg, len, now);
        return;
    }
    int k = stream_of(c, msg, len);
    if (b->cfg.tick_mode && k >= 0 && answering &&
        memfind(msg, len < 40 ? len : 40, "\"type\":\"solution\"")) {
        if (c->state == C_RUNNING)
            on_tick_part(c, k, msg, len, now);
        return;
    }
    if (k >= 0 && memfind(msg, len < 40 ? len : 40, "\"type\":\"solution\"")) {
        on_solution(c, k, msg, len, now);
        fill_window(c, k);
    } else if (k >= 0 && memfind(msg, len < 40 ? len : 40, "\"type\":\"opened\"") &&
               c->state == C_OPENING) {
        if (++c->opened == b->cfg.streams)
            c->state = C_RUNNING;
        if (++b->opened == b->cfg.connections * b->cfg.streams)
            all_opened(b);
    } else {
        if (b->errors++ < 5)
            fprintf(stderr, "ws_bench: connection %d: %.*s\n", c->id, (int)(len < 500 ? len : 500),
                    msg);
        long long seq;
        if (c->state == C_OPENING) {
            die("a stream could not be opened");
        } else if (k >= 0 && scan_ll(msg, len, "\"seq\":", &seq) && seq > c->st[k].done_seq &&
                   seq < c->st[k].next_seq) {
            c->st[k].done_seq = seq; /* answered, by an error */
            fill_window(c, k);
        }
    }
}

/* ---- connection life ---------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    conn *c = h->data;
    c->handle_closed = true;
    c->b->closed++;
    if (c->b->closed == c->b->cfg.connections)
        uv_close((uv_handle_t *)&c->b->timer, NULL);
}

static void conn_close(conn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    conn *c = h->data;
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

/* The answer to the opening handshake, once complete: 101 with the right
 * Sec-WebSocket-Accept. Leftover bytes are the first frames. */
static void handshake_done(conn *c, size_t head_len)
{
    c->hs[head_len - 2] = '\0'; /* keep one CRLF ending the last header line */
    if (strncmp(c->hs, "HTTP/1.1 101", 12) != 0) {
        fprintf(stderr, "ws_bench: connection %d: upgrade refused: %.*s\n", c->id,
                (int)strcspn(c->hs, "\r"), c->hs);
        exit(1);
    }
    bool ok = false;
    for (char *line = strstr(c->hs, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
        static const char name[] = "Sec-WebSocket-Accept:";
        if (strncasecmp(line + 2, name, sizeof name - 1) == 0) {
            const char *v = line + 2 + sizeof name - 1;
            while (*v == ' ' || *v == '\t')
                v++;
            ok = strncmp(v, c->accept, strlen(c->accept)) == 0 &&
                 (v[strlen(c->accept)] == '\r' || v[strlen(c->accept)] == ' ');
        }
    }
    if (!ok)
        die("the handshake answer has no or a wrong Sec-WebSocket-Accept");
    struct wslay_event_callbacks cb = {ws_recv_cb, ws_send_cb, ws_genmask_cb, NULL,
                                       NULL,       NULL,       ws_msg_cb};
    if (wslay_event_context_client_init(&c->ws, &cb, c) != 0)
        die("wslay_event_context_client_init failed");
    c->state = C_OPENING;
    for (int k = 0; k < c->b->cfg.streams; k++) {
        char name[32];
        snprintf(name, sizeof name, "s%d", k);
        json_t *open =
            json_pack("{s:s,s:s,s:O}", "type", "open", "stream", name, "chain", c->b->chain);
        if (open && c->b->cfg.tick_mode) {
            /* a rig of its own: the limb scaled by 1 .. 1.05 */
            double sc = 1.0 + 0.05 * (double)k / (double)c->b->cfg.streams;
            json_t *chain = json_pack("{s:s,s:[[i,i,i],[f,f,f],[f,f,f]]}", "kind", "bones",
                                      "positions", 0, 0, 0, 0.0, 0.5 * sc, 0.0, 0.0, sc, 0.0);
            json_t *opt = json_object();
            if (c->b->cfg.fields && c->b->cfg.fields[0])
                json_object_set_new(opt, "fields", json_pack("[s]", c->b->cfg.fields));
            if (c->b->cfg.digits > 0)
                json_object_set_new(opt, "digits", json_integer(c->b->cfg.digits));
            json_object_set_new(open, "chain", chain);
            json_object_set_new(open, "options", opt);
        }
        char *text = open ? json_dumps(open, JSON_COMPACT) : NULL;
        json_decref(open);
        if (!text)
            die("out of memory");
        queue_text(c, text, strlen(text));
        free(text);
    }
    /* frames that came with the handshake answer */
    size_t rest = c->hs_len - head_len;
    if (rest) {
        memmove(c->hs, c->hs + head_len, rest);
        c->in = (const uint8_t *)c->hs;
        c->in_len = rest;
        wslay_event_recv(c->ws);
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    conn *c = s->data;
    if (nread == 0)
        return;
    if (nread < 0) {
        if (c->state != C_CLOSING) {
            fprintf(stderr, "ws_bench: connection %d: %s\n", c->id, uv_strerror((int)nread));
            c->b->violations++;
        }
        conn_close(c);
        return;
    }
    if (c->state == C_HANDSHAKE) {
        size_t n = (size_t)nread;
        if (c->hs_len + n > sizeof c->hs - 1)
            die("handshake answer too long");
        memcpy(c->hs + c->hs_len, buf->base, n);
        c->hs_len += n;
        c->hs[c->hs_len] = '\0';
        char *end = strstr(c->hs, "\r\n\r\n");
        if (end)
            handshake_done(c, (size_t)(end - c->hs) + 4);
    } else {
        c->in = (const uint8_t *)buf->base;
        c->in_len = (size_t)nread;
        if (wslay_event_recv(c->ws) != 0) {
            fprintf(stderr, "ws_bench: connection %d: framing error\n", c->id);
            c->b->violations++;
            conn_close(c);
            return;
        }
    }
    if (c->ws) {
        wslay_event_send(c->ws);
        flush(c);
        if (c->state == C_CLOSING && !wslay_event_want_read(c->ws) &&
            !wslay_event_want_write(c->ws))
            conn_close(c);
    }
}

static void on_connect(uv_connect_t *req, int status)
{
    conn *c = req->data;
    if (status < 0) {
        fprintf(stderr, "ws_bench: connection %d: connect to %s:%d: %s\n", c->id, c->b->cfg.host,
                c->b->cfg.port, uv_strerror(status));
        exit(1);
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uint8_t nonce[16];
    random_bytes(c->b, nonce, sizeof nonce);
    char key[BASE64_ENCODE_RAW_LENGTH(16) + 1];
    base64_encode_raw(key, sizeof nonce, nonce);
    key[sizeof key - 1] = '\0';
    /* the answer's Sec-WebSocket-Accept: base64(SHA-1(key + GUID)), RFC 6455 */
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&sha);
    sha1_update(&sha, strlen(key), (const uint8_t *)key);
    sha1_update(&sha, sizeof guid - 1, (const uint8_t *)guid);
    sha1_digest(&sha, sizeof digest, digest);
    base64_encode_raw(c->accept, sizeof digest, digest);
    c->accept[sizeof c->accept - 1] = '\0';

    char req_text[1024];
    int n = snprintf(req_text, sizeof req_text,
                     "GET /v1/stream HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                     c->b->cfg.host, c->b->cfg.port, key,
                     c->b->cfg.token ? "Authorization: Bearer " : "",
                     c->b->cfg.token ? c->b->cfg.token : "", c->b->cfg.token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req_text)
        die("handshake request too long");
    c->state = C_HANDSHAKE;
    out_append(c, req_text, (size_t)n);
    flush(c);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc < 0)
        die(uv_strerror(rc));
}

/* ---- the run: warm-up, measurement, close ------------------------------- */

static void on_grace_over(uv_timer_t *t)
{
    bench *b = t->data;
    conn *cs = (conn *)b->loop->data;
    for (int i = 0; i < b->cfg.connections; i++)
        conn_close(&cs[i]);
}

static void on_measure_end(uv_timer_t *t)
{
    bench *b = t->data;
    b->measuring = false;
    b->sending = false;
    b->t1 = uv_hrtime();
    conn *cs = (conn *)b->loop->data;
    for (int i = 0; i < b->cfg.connections; i++) {
        conn *c = &cs[i];
        if (c->handle_closed || uv_is_closing((uv_handle_t *)&c->tcp))
            continue;
        c->state = C_CLOSING;
        wslay_event_queue_close(c->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
        wslay_event_send(c->ws);
        flush(c);
    }
    /* give the daemon a moment to answer the close frames, then hang up */
    uv_timer_start(&b->timer, on_grace_over, 2000, 0);
}

static void on_warmup_end(uv_timer_t *t)
{
    bench *b = t->data;
    b->measuring = true;
    b->t0 = uv_hrtime();
    uv_timer_start(&b->timer, on_measure_end, (uint64_t)(b->cfg.seconds * 1000.0 + 0.5), 0);
}

static void all_opened(bench *b)
{
    fprintf(stderr, "ws_bench: %d connections, %d streams open\n", b->cfg.connections, b->opened);
    b->sending = true;
    conn *cs = (conn *)b->loop->data;
    for (int i = 0; i < b->cfg.connections; i++) {
        if (b->cfg.tick_mode)
            fill_ticks(&cs[i]);
        else
            for (int k = 0; k < b->cfg.streams; k++)
                fill_window(&cs[i], k);
        wslay_event_send(cs[i].ws);
        flush(&cs[i]);
    }
    uv_timer_start(&b->timer, on_warmup_end, b->cfg.warmup_ms, 0);
}

static double percentile_us(const bench *b, double p)
{
    uint64_t n = b->cfg.tick_mode ? b->ticks : b->solutions;
    if (n == 0)
        return 0;
    uint64_t rank = (uint64_t)(p * (double)(n - 1)), seen = 0;
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        seen += b->hist[i];
        if (seen > rank)
            return (double)i + 0.5;
    }
    return (double)HIST_BUCKETS;
}

/* ---- inputs: the chain and the targets ---------------------------------- */

/* The whole file, or the end of the run with the reason. */
static char *read_file(const char *path)
{
    char *s = bench_read_file(path, NULL);
    if (!s) {
        fprintf(stderr, "ws_bench: cannot read %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return s;
}
/* Two-bone targets: reachable positions for the limb (0,0,0)-(0,0.5,0)-(0,1,0)
 * at distances 0.15..0.95 from the base, from a fixed xorshift sequence. */
static void make_two_bone_targets(bench *b)
{
    b->ntargets = 512;
    b->targets = calloc(b->ntargets, sizeof *b->targets);
    if (!b->targets)
        die("out of memory");
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < b->ntargets; i++) {
        double v[3], r2;
        do {
            for (int k = 0; k < 3; k++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v[k] = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            }
            r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        } while (r2 < 0.15 * 0.15 || r2 > 0.95 * 0.95);
        snprintf(b->targets[i], TARGET_MAX, "{\"position\":[%.6f,%.6f,%.6f]}", v[0], v[1], v[2]);
    }
    b->chain = json_pack("{s:s,s:[[i,i,i],[f,f,f],[f,f,f]]}", "kind", "bones", "positions", 0, 0, 0,
                         0.0, 0.5, 0.0, 0.0, 1.0, 0.0);
    if (!b->chain)
        die("out of memory");
}

/* --smooth: the targets become poses along a joint-space motion through the
 * file's configurations (the joint values before " | "), cfg.smooth steps
 * per segment, by the chain's own forward kinematics. */
static void make_smooth_targets(bench *b, const char *urdf)
{
    proto_error e;
    ik_chain *cp = proto_urdf_load_chain(urdf, strlen(urdf), b->cfg.base, b->cfg.tip, 1024, NULL,
                                         &e);
    if (!cp) {
        fprintf(stderr, "ws_bench: %s: %s\n", b->cfg.urdf, e.message);
        exit(1);
    }
    ik_chain chain = *cp;
    char *text = read_file(b->cfg.targets);
    size_t dof = chain.dof, nq = 0, cap = 64;
    double *qs = malloc(cap * dof * sizeof *qs);
    for (char *line = strtok(text, "\n"); line && qs; line = strtok(NULL, "\n")) {
        if (nq == cap) {
            double *g = realloc(qs, 2 * cap * dof * sizeof *qs);
            if (!g)
                die("out of memory");
            qs = g;
            cap *= 2;
        }
        char *p = line;
        for (size_t k = 0; k < dof; k++)
            qs[nq * dof + k] = strtod(p, &p);
        nq++;
        if (nq * (size_t)b->cfg.smooth >= 20000)
            break;
    }
    free(text);
    if (!qs || nq < 2)
        die("--smooth needs at least two configurations");
    if (nq == cap) { /* room for one more: the interpolated joints */
        double *g = realloc(qs, (cap + 1) * dof * sizeof *qs);
        if (!g)
            die("out of memory");
        qs = g;
    }
    free(b->targets);
    b->ntargets = (nq - 1) * (size_t)b->cfg.smooth;
    b->targets = calloc(b->ntargets, sizeof *b->targets);
    if (!b->targets)
        die("out of memory");
    size_t t = 0;
    for (size_t i = 0; i + 1 < nq; i++) {
        for (int step = 0; step < b->cfg.smooth; step++) {
            double a = (double)step / b->cfg.smooth;
            double *q = qs + nq * dof; /* the room after the configurations */
            for (size_t k = 0; k < dof; k++)
                q[k] = (1.0 - a) * qs[i * dof + k] + a * qs[(i + 1) * dof + k];
            ik_xform x = ik_chain_fk(&chain, q);
            snprintf(b->targets[t++], TARGET_MAX,
                     "{\"position\":[%.17g,%.17g,%.17g],\"orientation\":[%.17g,%.17g,%.17g,%.17g]}",
                     x.p.x, x.p.y, x.p.z, x.q.x, x.q.y, x.q.z, x.q.w);
        }
    }
    free(qs);
    free(cp);
}

/* Chain targets: "q1 .. qn | px py pz qx qy qz qw" per line. */
static void make_chain_targets(bench *b)
{
    char *text = read_file(b->cfg.targets);
    size_t cap = 1024;
    b->targets = calloc(cap, sizeof *b->targets);
    for (char *line = strtok(text, "\n"); line && b->targets; line = strtok(NULL, "\n")) {
        char *bar = strchr(line, '|');
        double v[7];
        if (!bar || sscanf(bar + 1, "%lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3],
                           &v[4], &v[5], &v[6]) != 7) {
            fprintf(stderr, "ws_bench: %s: a line without \"| px py pz qx qy qz qw\"\n",
                    b->cfg.targets);
            exit(1);
        }
        if (b->ntargets == cap) {
            void *g = realloc(b->targets, 2 * cap * sizeof *b->targets);
            if (!g)
                die("out of memory");
            b->targets = g;
            cap *= 2;
        }
        snprintf(b->targets[b->ntargets++], TARGET_MAX,
                 "{\"position\":[%.17g,%.17g,%.17g],\"orientation\":[%.17g,%.17g,%.17g,%.17g]}",
                 v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    }
    free(text);
    if (!b->targets)
        die("out of memory");
    if (b->ntargets == 0)
        die("no targets");
    char *urdf = read_file(b->cfg.urdf);
    if (b->cfg.smooth > 0)
        make_smooth_targets(b, urdf);
    b->chain = json_pack("{s:s,s:s,s:s,s:s}", "kind", "urdf", "urdf", urdf, "base", b->cfg.base,
                         "tip", b->cfg.tip);
    free(urdf);
    if (!b->chain)
        die("cannot build the chain (is the URDF UTF-8?)");
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: ws_bench two-bone --url HOST:PORT [--connections N] [--streams K]\n"
                    "                [--window W] [--seconds S] [--warmup-ms MS] [--token T]\n"
                    "       ws_bench chain --url HOST:PORT --urdf FILE --base LINK --tip LINK\n"
                    "                --targets FILE [--smooth N] [same options]\n"
                    "       ws_bench tick --url HOST:PORT [--characters N] [--window W]\n"
                    "                [--fields NAME] [--digits D] [--separate 0|1] [same options]\n");
    exit(1);
}

static const char *robot_name(const char *path, char *buf, size_t n)
{
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    snprintf(buf, n, "%s", s);
    char *dot = strrchr(buf, '.');
    if (dot)
        *dot = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    bench *b = calloc(1, sizeof *b);
    if (!b)
        die("out of memory");
    bench_cfg *cfg = &b->cfg;
    if (strcmp(argv[1], "chain") == 0)
        cfg->chain_mode = true;
    else if (strcmp(argv[1], "tick") == 0)
        cfg->tick_mode = true;
    else if (strcmp(argv[1], "two-bone") != 0)
        usage();
    cfg->connections = cfg->chain_mode ? 8 : cfg->tick_mode ? 1 : 50;
    cfg->seconds = 5;
    cfg->streams = cfg->chain_mode ? 1 : cfg->tick_mode ? 1000 : 4;
    cfg->fields = "local_rotations";
    cfg->digits = 6;
    cfg->window = 1;
    cfg->warmup_ms = 500;
    const char *url = NULL;
    for (int i = 2; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (strcmp(k, "--url") == 0)
            url = v;
        else if (strcmp(k, "--connections") == 0)
            cfg->connections = atoi(v);
        else if (strcmp(k, "--seconds") == 0)
            cfg->seconds = atof(v);
        else if (strcmp(k, "--streams") == 0)
            cfg->streams = atoi(v);
        else if (strcmp(k, "--window") == 0)
            cfg->window = atoi(v);
        else if (strcmp(k, "--warmup-ms") == 0)
            cfg->warmup_ms = (unsigned)atoi(v);
        else if (strcmp(k, "--token") == 0)
            cfg->token = v;
        else if (strcmp(k, "--urdf") == 0)
            cfg->urdf = v;
        else if (strcmp(k, "--base") == 0)
            cfg->base = v;
        else if (strcmp(k, "--tip") == 0)
            cfg->tip = v;
        else if (strcmp(k, "--targets") == 0)
            cfg->targets = v;
        else if (strcmp(k, "--smooth") == 0)
            cfg->smooth = atoi(v);
        else if (strcmp(k, "--characters") == 0)
            cfg->streams = atoi(v);
        else if (strcmp(k, "--fields") == 0)
            cfg->fields = v;
        else if (strcmp(k, "--digits") == 0)
            cfg->digits = atoi(v);
        else if (strcmp(k, "--separate") == 0 && (strcmp(v, "1") == 0 || strcmp(v, "0") == 0))
            cfg->separate = v[0] == '1';
        else
            usage();
    }
    if (!url || cfg->smooth < 0 || cfg->smooth > 10000 || cfg->connections < 1 ||
        cfg->streams < 1 || cfg->streams > (cfg->tick_mode ? 65536 : 64) || cfg->window < 1 ||
        !(cfg->seconds > 0) || cfg->digits < 0 || cfg->digits > 17 ||
        (cfg->tick_mode && (cfg->connections != 1 || cfg->window > TICK_WINDOW_MAX)))
        usage();
    if (strncmp(url, "ws://", 5) == 0)
        url += 5;
    const char *colon = strrchr(url, ':');
    if (!colon || colon == url || (size_t)(colon - url) >= sizeof cfg->host)
        usage();
    memcpy(cfg->host, url, (size_t)(colon - url));
    cfg->port = atoi(colon + 1);
    if (cfg->port <= 0 || cfg->port > 65535)
        usage();
    if (cfg->chain_mode) {
        if (!cfg->urdf || !cfg->base || !cfg->tip || !cfg->targets)
            usage();
        make_chain_targets(b);
    } else {
        make_two_bone_targets(b);
    }
    b->next_tick = 1;
    b->hist = calloc(HIST_BUCKETS, sizeof *b->hist);
    conn *cs = calloc((size_t)cfg->connections, sizeof *cs);
    if (!b->hist || !cs)
        die("out of memory");

    struct sockaddr_storage addr;
    if (uv_ip4_addr(cfg->host, cfg->port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(cfg->host, cfg->port, (struct sockaddr_in6 *)&addr) != 0)
        die("--url needs a numeric IPv4 or IPv6 address and a port");

    signal(SIGPIPE, SIG_IGN); /* a closed peer is reported by uv_write */
    b->loop = uv_default_loop();
    b->loop->data = cs;
    uv_timer_init(b->loop, &b->timer);
    b->timer.data = b;
    for (int i = 0; i < cfg->connections; i++) {
        conn *c = &cs[i];
        c->b = b;
        c->id = i;
        c->st = calloc((size_t)cfg->streams, sizeof *c->st);
        if (!c->st)
            die("out of memory");
        for (int k = 0; k < cfg->streams; k++) {
            bstream *st = &c->st[k];
            st->next_seq = 1;
            st->target_i = ((size_t)(i * cfg->streams + k) * 37) % b->ntargets;
            st->sent_ns = calloc((size_t)cfg->window, sizeof *st->sent_ns);
            if (!st->sent_ns)
                die("out of memory");
        }
        uv_tcp_init(b->loop, &c->tcp);
        c->tcp.data = c;
        c->creq.data = c;
        int rc = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&addr, on_connect);
        if (rc < 0)
            die(uv_strerror(rc));
    }
    uv_run(b->loop, UV_RUN_DEFAULT);

    double secs = (double)(b->t1 - b->t0) / 1e9;
    if (b->t1 == 0)
        secs = 0;
    char robot[256] = "";
    if (cfg->tick_mode) {
        double ticks = (double)b->ticks;
        printf("{\"bench\":\"ws_tick\",\"form\":\"%s\",\"characters\":%d,\"window\":%d,"
               "\"fields\":\"%s\",\"digits\":%d,\"seconds\":%.2f,\"ticks\":%llu,"
               "\"skipped_ticks\":%llu,\"failed\":%llu,\"errors\":%llu,\"ticks_per_s\":%.1f,"
               "\"solutions_per_s\":%.0f,\"p50_us\":%.0f,\"p99_us\":%.0f,\"max_us\":%.0f,"
               "\"bytes_in_per_tick\":%.0f,\"bytes_out_per_tick\":%.0f}\n",
               cfg->separate ? "separate" : "tick", cfg->streams, cfg->window, cfg->fields,
               cfg->digits, secs, (unsigned long long)b->ticks,
               (unsigned long long)b->skipped_ticks, (unsigned long long)b->failed,
               (unsigned long long)b->errors, secs > 0 ? ticks / secs : 0.0,
               secs > 0 ? (double)b->solutions / secs : 0.0, percentile_us(b, 0.50),
               percentile_us(b, 0.99), (double)b->max_ns / 1e3,
               ticks > 0 ? (double)b->bytes_in / (ticks + (double)b->skipped_ticks) : 0.0,
               ticks > 0 ? (double)b->bytes_out / ticks : 0.0);
    } else {
        if (cfg->chain_mode)
            printf("{\"bench\":\"%s\",\"robot\":\"%s\",\"smooth\":%d,",
                   cfg->smooth ? "ws_chain_smooth" : "ws_chain",
                   robot_name(cfg->urdf, robot, sizeof robot), cfg->smooth);
        else
            printf("{\"bench\":\"ws_two_bone\",");
        printf("\"connections\":%d,\"streams\":%d,\"window\":%d,\"seconds\":%.2f,"
               "\"solutions\":%llu,\"skipped\":%llu,\"failed\":%llu,\"errors\":%llu,"
               "\"solutions_per_s\":%.0f,\"p50_us\":%.0f,\"p99_us\":%.0f,\"max_us\":%.0f,"
               "\"solve_us_mean\":%.2f}\n",
               cfg->connections, cfg->streams, cfg->window, secs,
               (unsigned long long)b->solutions, (unsigned long long)b->skipped,
               (unsigned long long)b->failed, (unsigned long long)b->errors,
               secs > 0 ? (double)b->solutions / secs : 0.0, percentile_us(b, 0.50),
               percentile_us(b, 0.99), (double)b->max_ns / 1e3,
               b->solve_ms_n ? 1e3 * b->solve_ms_sum / (double)b->solve_ms_n : 0.0);
    }

    bool ok = b->solutions > 0 && b->errors == 0 && b->violations == 0;
    for (int i = 0; i < cfg->connections; i++) {
        if (cs[i].ws)
            wslay_event_context_free(cs[i].ws);
        for (int k = 0; k < cfg->streams; k++)
            free(cs[i].st[k].sent_ns);
        free(cs[i].st);
        free(cs[i].out);
        free(cs[i].wbuf);
    }
    uv_loop_close(b->loop);
    free(cs);
    free(b->hist);
    free(b->targets);
    free(b->tick_buf);
    json_decref(b->chain);
    free(b);
    return ok ? 0 : 1;
}
