/*
 * ws_conn.c: a WebSocket connection of ikd (GET /v1/stream) once upgraded:
 * the socket on the loop, wslay's framing, idle pings, the send-queue cap
 * and the closing handshake. The streams that live on a connection are
 * the stream side's (server/ws_messages.c, ws_stream.c, ws_tick.c), reached
 * only through the hooks srv_ws_start was given; the seam between the two
 * is server/ws_conn.h.
 *
 * The upgrade. The HTTP side's response to it is server/ws_upgrade.c's
 * (the handshake's checks, the 101). libmicrohttpd then hands
 * srv__ws_on_upgrade() the raw non-blocking socket and the bytes it had already read past the headers
 * (extra_in), which are fed to the framer before anything read from the
 * socket.
 *
 * The connection. Everything runs on the loop thread: one uv_poll_t watches
 * the socket, wslay frames the messages (it answers pings and runs the
 * closing handshake) without buffering them: a data message is assembled
 * from its frames in one buffer by server/ws_assembly.c, and held to
 * --max-message over all its fragments with close code 1009, so that it
 * costs its bytes and nothing per fragment. The socket
 * belongs to libmicrohttpd: it is never closed here; the end of a connection
 * is MHD_upgrade_action(CLOSE) followed by srv_mhd_run(), after the poll
 * handle has stopped watching the descriptor. Close codes: 1000 (the
 * client's), 1001 (ikd shuts down), 1007 (a text message or a close
 * reason that is not UTF-8; wslay misses the latter when the reason comes
 * in a later read than the code: on_frame_end checks it),
 * 1002 (a protocol error; wslay finds most, ikd the 1-byte close frame,
 * and the client's valid close codes wslay does not know, 1012 to 1014, are
 * echoed here), 1008 (the client does not read: the send queue passed
 * --max-send-queue while the writes were blocked, or the writes stayed
 * blocked for --timeout; a queue over the cap with writes flowing is
 * backpressure: the connection is not read until it is under the cap
 * again; the queue counts control
 * frames too, such as the pongs wslay queues for a client's pings, and a
 * connection whose writes are blocked is not read until the socket takes
 * data again, so a client that floods and never reads holds at most one
 * read's worth beyond the cap, and fills its socket rather than the queue),
 * 1009 (a message above --max-message), 1013 (a message past one read's
 * worth counts against --body-budget while it arrives, as HTTP bodies do,
 * and the budget is full). After ikd sends a close frame the
 * client has WS_CLOSE_GRACE_MS to answer it (--timeout after a 1008, to
 * read what was queued first; the period starts again while it still
 * reads) before the connection is cut. A client silent for --timeout seconds gets a ping; if it still
 * sends nothing (not even the pong) for another period it is gone, and its
 * connection is dropped.
 *
 * Reading: every text message of one socket read is handed to the stream
 * side (its on_text hook) before any target is solved (on_read_done), at
 * most WS_READ_BUDGET bytes per wake-up so that one client cannot hold the
 * loop. While the stream side works on a message off the loop
 * (srv__ws_pause), the connection is not read. Writing: frames are
 * gathered into one buffer and sent with one send() per wake-up.
 *
 * Shutdown (srv_ws_shutdown): what the client sent before the signal (the
 * bytes its socket holds then, however many reads they take, and the end
 * of a message begun in them) is read and answered; messages begun after
 * it are ignored, and the stream side
 * answers what runs and waits; then the connection gets its 1001 close
 * frame. A message begun before the signal whose bytes stop for
 * WS_DRAIN_STALL_MS is given up (on_idle_tick) rather than holding the
 * 1001 until --drain-timeout.
 *
 * libmicrohttpd: this file is one of the deliberate exceptions that
 * http_mhd.c's opening comment names: the socket is given back with
 * MHD_upgrade_action.
 *
 * Not here: the stream rules (ws_messages.c, ws_stream.c, ws_tick.c), the
 * message formats (proto/proto_stream.c), the assembly of a message from
 * its frames (ws_assembly.c), the upgrade's response (ws_upgrade.c), the
 * handshake arithmetic (ws_handshake.c), HTTP routing (http_route.c, http_handlers.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <wslay/wslay.h>

#include "proto/proto_stream.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/ws_assembly.h"
#include "server/ws.h"
#include "server/ws_conn.h"
#include "server/ws_handshake.h"

#define WS_CLOSE_GRACE_MS 1000     /* wait for the client's close frame */
#define WS_DRAIN_STALL_MS 2000     /* shutting down: a message begun before the
                                      signal whose bytes stopped is given up */
#define WS_READ_BUDGET SRV_WS_READ_BUDGET /* bytes read per poll event, for fairness */
#define WS_OUT_CAP (64 * 1024)     /* frames gathered for one send() */
#define WS_MSG_OVERHEAD 64         /* bytes charged per queued message */
#define WS_CODE_TRY_AGAIN_LATER 1013 /* RFC 6455's registry; wslay names none */

/* ctx->ws: the open connections, and the stream side's hooks. */
struct srv_ws {
    const srv_ws_hooks *hooks;
    ws_conn *head;
    size_t nconns;
};

struct ws_conn {
    srv_ctx *ctx;
    const srv_ws_hooks *hooks; /* the stream side's (ctx->ws's) */
    ws_conn *prev, *next; /* in ctx->ws while not dead */
    wslay_event_context_ptr wslay;
    struct MHD_UpgradeResponseHandle *urh;
    MHD_socket fd;
    uv_poll_t poll;
    uv_timer_t timer; /* the idle check, then the closing handshake deadline */
    int poll_events;
    char *extra; /* extra_in bytes not yet fed to wslay */
    size_t extra_off, extra_len;
    size_t read_budget;
    bool read_short; /* the last recv() returned less than asked: drained */
    char *out;       /* framed bytes gathered from wslay, sent by out_flush */
    size_t out_off, out_len;
    srv_ws_msg msg; /* the data message being received (ws_assembly.h) */
    bool frame_ctrl; /* the frame being received is a control frame */
    bool frame_close; /* ...a close frame: gathered, checked at its end */
    unsigned char close_in[125]; /* a client's close frame (125 bytes at most) */
    unsigned close_in_len;
    bool msg_over;   /* the message passed --max-message: closing with 1009 */
    ws_streams *streams; /* the stream side's (server/ws_stream.h) */
    unsigned refs;
    bool dead;     /* torn down: no I/O any more */
    bool closing;  /* ikd queued a close frame: no more messages */
    bool failed;   /* the socket failed or reached EOF */
    bool pinged;   /* idle: a ping is out and nothing came back yet */
    uint64_t blocked_since; /* uv_now() when writes got blocked; 0 when not */
    size_t queue_over; /* the newest message, queued under the cap: it may pass it */
    uint64_t sent;          /* bytes sent so far */
    uint64_t sent_mark;     /* ...when the closing handshake's deadline was set */
    uint64_t close_grace;   /* that deadline's period, ms */
    bool draining; /* shutting down: no new messages; close once idle */
    uint64_t received;   /* bytes read from the socket so far */
    uint64_t drain_mark; /* received, plus what the socket held, at the signal:
                            the messages begun within it are answered */
    uint64_t msg_begin;  /* received when the data message being assembled began */
    bool msg_open;       /* a data message is being assembled */
    bool paused;   /* the stream side works on a message off the loop: not read */
    bool drop_streams; /* closed for not reading: its streams go at the next I/O */
    ws_inbox *inbox; /* the stream side's (ws_messages.c) */
    /* a close frame waiting for the answers queued before it (wslay sends
     * control frames ahead of queued messages, and nothing after a close) */
    bool close_pending;
    uint16_t close_code;
    const char *close_reason; /* static text */
    uint64_t last_rx; /* uv_now() of the last bytes read */
};

static void conn_teardown(ws_conn *c);
static void conn_after_io(ws_conn *c);
static void on_cut(uv_timer_t *t);
static void on_poll(uv_poll_t *p, int status, int events);
static void conn_begin_close(ws_conn *c, uint16_t code, const char *reason);
static void conn_close(ws_conn *c, uint16_t code, const char *reason, bool now);
static void conn_close_after(ws_conn *c, uint16_t code, const char *reason, bool now,
                             uint64_t grace_ms);
static void deliver_msg(ws_conn *c, uint8_t opcode, const char *text, size_t len);

/* ---- references ----------------------------------------------------------- */

/* The message buffer goes (if the stream side did not take it), and its
 * bytes back to --body-budget. */
static void msg_free(ws_conn *c)
{
    srv__ws_msg_free(&c->msg, &c->ctx->sh->body_bytes);
}

static void conn_unref(ws_conn *c)
{
    if (--c->refs > 0)
        return;
    msg_free(c);
    wslay_event_context_free(c->wslay);
    free(c->extra);
    free(c->out);
    free(c);
}

static void conn_handle_closed(uv_handle_t *h)
{
    conn_unref(h->data);
}

/* ---- sending ------------------------------------------------------------------ */

/* What the send queue holds, as counted against --max-send-queue: every
 * queued message's payload, control frames included (the pongs wslay
 * queues by itself for the client's pings), plus WS_MSG_OVERHEAD per
 * message for wslay's own bookkeeping, so that a flood of empty pings
 * counts too, and the framed bytes the socket has not taken yet. */
static size_t conn_queued_bytes(const ws_conn *c)
{
    return wslay_event_get_queued_msg_length(c->wslay) +
           wslay_event_get_queued_msg_count(c->wslay) * WS_MSG_OVERHEAD +
           (c->out_len - c->out_off);
}

/* How long a client that does not read has to read what was queued and
 * the 1008 close frame after it: --timeout (its memory is bounded, as it
 * is not read meanwhile). */
static uint64_t slow_grace(const ws_conn *c)
{
    uint64_t period = (uint64_t)c->ctx->cfg.conn_timeout_s * 1000;
    return period > WS_CLOSE_GRACE_MS ? period : WS_CLOSE_GRACE_MS;
}

/* Whether the queue is over --max-send-queue: the connection is then not
 * read (conn_after_io) until it is under it again, so that the answers of
 * what one read brought (hundreds of targets) slow the client down rather
 * than grow the queue further. */
static bool queue_full(const ws_conn *c)
{
    /* closing: read on, for the client's close frame */
    return !c->closing && conn_queued_bytes(c) > c->ctx->cfg.ws_send_queue_bytes;
}

/* Past the send-queue cap, while its writes are blocked (the socket takes
 * nothing more), the client is not reading: the connection is closed with
 * 1008. A client whose socket took all that was sent reads: the queue may
 * pass the cap by the answers of one read or one turn of the loop (it is
 * not read meanwhile, queue_full), and is sent on. The queue may also
 * pass the cap by its newest message when it was under the cap before it
 * (c->queue_over): one answer larger than the cap (a tick of many large
 * answers) is not a client that does not read; what is queued after it
 * while it waits counts as ever. */
static void check_send_queue(ws_conn *c)
{
    size_t queued = conn_queued_bytes(c), cap = c->ctx->cfg.ws_send_queue_bytes;
    if (queued <= cap)
        c->queue_over = 0;
    if (c->dead || c->closing || queued <= cap || queued - cap <= c->queue_over ||
        c->out_len <= c->out_off)
        return;
    srv_metrics_rejected(c->ctx, "send_queue");
    srv_log(c->ctx, SRV_LOG_WARN, "WebSocket client does not read: send queue over %zu bytes",
            c->ctx->cfg.ws_send_queue_bytes);
    conn_close_after(c, WSLAY_CODE_POLICY_VIOLATION,
                     "send queue over its cap: the client does not read", true, slow_grace(c));
    c->drop_streams = true; /* nothing more is sent: stop solving for it */
}

/* Queues a message (wslay copies it), then checks the cap. */
static void send_frame(ws_conn *c, uint8_t opcode, const char *text, size_t len)
{
    if (!text || c->dead || c->closing)
        return;
    struct wslay_event_msg msg = {opcode, (const uint8_t *)text, len};
    bool under = conn_queued_bytes(c) <= c->ctx->cfg.ws_send_queue_bytes;
    if (wslay_event_queue_msg(c->wslay, &msg) != 0)
        return;
    if (under)
        c->queue_over = len + WS_MSG_OVERHEAD;
    check_send_queue(c);
    if (c->closing) /* cut while the stream side sends: its streams go at the
                     * loop's next turn, for a poll waiting on a socket that
                     * takes nothing may never fire again */
        uv_timer_start(&c->timer, on_cut, 0, 0);
}

static void send_text(ws_conn *c, const char *text, size_t len)
{
    send_frame(c, WSLAY_TEXT_FRAME, text, len);
}

static void send_error(ws_conn *c, const char *stream, bool has_seq, long long seq,
                       const proto_error *e)
{
    size_t len;
    char *t = proto_stream_encode_error(stream, has_seq, seq, e, &len);
    send_text(c, t, len);
    free(t);
}

/* The closing handshake's deadline. A client still reading what was
 * queued before the close frame (bytes went out since the last look) gets
 * another grace period: the queue no longer grows, so this ends. */
static void on_close_timeout(uv_timer_t *t)
{
    ws_conn *c = t->data;
    if (c->sent != c->sent_mark) {
        c->sent_mark = c->sent;
        uv_timer_start(&c->timer, on_close_timeout, c->close_grace, 0);
        return;
    }
    srv_log(c->ctx, SRV_LOG_DEBUG, "WebSocket client did not finish the closing handshake");
    conn_teardown(c);
}

/* A connection cut with 1008 as an answer was queued (send_frame): its
 * streams go (what the stream side was sending is done by now), then the
 * closing handshake's deadline runs. */
static void on_cut(uv_timer_t *t)
{
    ws_conn *c = t->data;
    uv_timer_start(&c->timer, on_close_timeout, c->close_grace, 0);
    conn_after_io(c);
}

/* The timer's tick (a quarter of --timeout, at most a second): the idle
 * check and the blocked-writes check. A client that sent nothing for
 * --timeout gets a ping; one that still sent nothing (not even the pong)
 * for twice --timeout is gone (a peer that vanished without a FIN would
 * otherwise hold its streams forever). A connection whose writes stayed
 * blocked for --timeout (the client does not read, and is not read
 * either: its pings and messages wait in the socket, under the send-queue
 * cap) is closed with 1008; it may still read what was queued and the
 * close frame for another --timeout. */
static uint64_t tick_ms(const srv_ctx *ctx)
{
    uint64_t period = (uint64_t)ctx->cfg.conn_timeout_s * 1000;
    return period >= 4000 ? 1000 : period / 4;
}

static void on_idle_tick(uv_timer_t *t)
{
    ws_conn *c = t->data;
    uint64_t period = (uint64_t)c->ctx->cfg.conn_timeout_s * 1000;
    uint64_t now = uv_now(c->ctx->loop);
    if (c->draining && c->msg_open && now - c->last_rx >= WS_DRAIN_STALL_MS) {
        /* its end would be answered, but no byte came for a while: the
         * 1001 does not wait for it until --drain-timeout */
        srv_log(c->ctx, SRV_LOG_INFO, "WebSocket message begun before shutdown stalled: "
                                      "given up");
        c->msg_open = false;
        srv__ws_idle(c);
        conn_after_io(c);
        return;
    }
    if (period == 0)
        return; /* only the drain's check above: no idle timeout */
    if (c->blocked_since && now - c->blocked_since + 10 >= period) {
        srv_metrics_rejected(c->ctx, "send_queue");
        srv_log(c->ctx, SRV_LOG_WARN,
                "WebSocket client does not read: writes blocked for %u s",
                c->ctx->cfg.conn_timeout_s);
        conn_close_after(c, WSLAY_CODE_POLICY_VIOLATION,
                         "writes blocked for --timeout: the client does not read", true,
                         slow_grace(c));
        c->drop_streams = true;
        conn_after_io(c);
        return;
    }
    uint64_t silent = now - c->last_rx + 10;
    if (silent < period || queue_full(c))
        return; /* not read for its queue over the cap: not silent */
    if (c->pinged && silent >= 2 * period) {
        srv_log(c->ctx, SRV_LOG_INFO, "WebSocket client silent for %u s: connection dropped",
                2 * c->ctx->cfg.conn_timeout_s);
        srv_metrics_rejected(c->ctx, "timeout");
        conn_teardown(c);
        return;
    }
    if (c->pinged)
        return;
    struct wslay_event_msg ping = {WSLAY_PING, (const uint8_t *)"ikd", 3};
    wslay_event_queue_msg(c->wslay, &ping);
    c->pinged = true;
    conn_after_io(c);
}

/* ikd ends the connection: no message is queued after this one; the close
 * frame follows the messages already queued (conn_after_io queues it once
 * they are out), or goes at once when `now` (a client that does not read
 * would never let them out). The client then has WS_CLOSE_GRACE_MS to
 * answer it. reason is static text. */
static void conn_close(ws_conn *c, uint16_t code, const char *reason, bool now)
{
    conn_close_after(c, code, reason, now, WS_CLOSE_GRACE_MS);
}

/* conn_close() with grace_ms for the client to answer. */
static void conn_close_after(ws_conn *c, uint16_t code, const char *reason, bool now,
                             uint64_t grace_ms)
{
    if (c->dead)
        return;
    if (!c->closing) {
        c->closing = true;
        c->close_pending = true;
        c->close_code = code;
        c->close_reason = reason;
    }
    if (c->close_pending && (now || wslay_event_get_queued_msg_count(c->wslay) == 0)) {
        c->close_pending = false;
        wslay_event_queue_close(c->wslay, c->close_code, (const uint8_t *)c->close_reason,
                                strlen(c->close_reason));
    }
    c->close_grace = grace_ms;
    c->sent_mark = c->sent;
    uv_timer_start(&c->timer, on_close_timeout, grace_ms, 0);
}

static void conn_begin_close(ws_conn *c, uint16_t code, const char *reason)
{
    conn_close(c, code, reason, false);
}

/* ---- wslay callbacks --------------------------------------------------------------- */

static ssize_t on_recv(wslay_event_context_ptr wctx, uint8_t *buf, size_t len, int flags,
                       void *user)
{
    ws_conn *c = user;
    if (c->extra_off < c->extra_len) {
        size_t n = c->extra_len - c->extra_off;
        if (n > len)
            n = len;
        memcpy(buf, c->extra + c->extra_off, n);
        c->extra_off += n;
        return (ssize_t)n;
    }
    if (c->read_budget == 0 || c->read_short) {
        /* a short read drained the socket: asking again would only return
         * EAGAIN (the poll is level-triggered, so nothing is missed) */
        wslay_event_set_error(wctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (len > c->read_budget)
        len = c->read_budget;
    if (c->draining && c->received < c->drain_mark && len > c->drain_mark - c->received)
        len = (size_t)(c->drain_mark - c->received); /* no read crosses the mark */
    for (;;) {
        ssize_t r = recv(c->fd, buf, len, 0);
        if (r > 0) {
            c->received += (size_t)r;
            c->read_budget -= (size_t)r;
            c->read_short = (size_t)r < len;
            c->last_rx = uv_now(c->ctx->loop);
            c->pinged = false;
            return r;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wslay_event_set_error(wctx, WSLAY_ERR_WOULDBLOCK);
        } else {
            c->failed = true;
            wslay_event_set_error(wctx, WSLAY_ERR_CALLBACK_FAILURE);
        }
        return -1;
    }
}

/* Sends what out holds; 0, or -1 when the socket failed. */
static int out_flush(ws_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t r = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (r > 0) {
            c->out_off += (size_t)r;
            c->sent += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            c->failed = true;
            return -1;
        }
    }
    c->out_off = c->out_len = 0;
    return 0;
}

/* wslay's writer: frames are gathered in out (one send() per wakeup for all
 * the answers of a connection, instead of one per frame piece) and sent by
 * out_flush(); when out is full and the socket takes nothing, wslay waits. */
static ssize_t on_send(wslay_event_context_ptr wctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    ws_conn *c = user;
    if (!c->out && !(c->out = malloc(WS_OUT_CAP))) {
        wslay_event_set_error(wctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    if (c->out_len == WS_OUT_CAP) {
        if (out_flush(c) != 0) {
            wslay_event_set_error(wctx, WSLAY_ERR_CALLBACK_FAILURE);
            return -1;
        }
        if (c->out_len == WS_OUT_CAP) {
            wslay_event_set_error(wctx, WSLAY_ERR_WOULDBLOCK);
            return -1;
        }
    }
    if (c->out_off > 0 && c->out_len + len > WS_OUT_CAP) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    size_t n = WS_OUT_CAP - c->out_len;
    if (n > len)
        n = len;
    memcpy(c->out + c->out_len, data, n);
    c->out_len += n;
    return (ssize_t)n;
}

/* A frame begins. Data frames are assembled into c->msg (ws_assembly.c),
 * their payloads together held to --max-message (1009). */
static void on_frame_start(wslay_event_context_ptr wctx,
                           const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
    ws_conn *c = user;
    c->frame_ctrl = wslay_is_ctrl_frame(arg->opcode);
    c->frame_close = arg->opcode == WSLAY_CONNECTION_CLOSE;
    c->close_in_len = 0;
    /* a close frame of 1 byte (RFC 6455 5.5.1): wslay would answer it with
     * an empty close, ikd answers 1002 first. A control frame over 125
     * bytes never gets here: wslay's frame layer answers it with an empty
     * close itself, and has no way to give that close a code. */
    if (c->frame_close && arg->payload_length == 1)
        conn_close(c, WSLAY_CODE_PROTOCOL_ERROR, "a close frame of 1 byte", true);
    if (c->frame_ctrl)
        return; /* wslay keeps control frames (125 bytes at most) itself */
    bool continuation = arg->opcode == WSLAY_CONTINUATION_FRAME;
    if (!continuation) {
        c->msg_begin = c->received;
        c->msg_open = true;
    }
    if (srv__ws_msg_frame(&c->msg, continuation, arg->payload_length,
                          c->ctx->cfg.max_message_bytes) != SRV_WS_MSG_OK &&
        !c->msg_over) {
        c->msg_over = true;
        wslay_event_shutdown_read(wctx);
        conn_close(c, WSLAY_CODE_MESSAGE_TOO_BIG, "message over --max-message", true);
    }
}

static void on_frame_chunk(wslay_event_context_ptr wctx,
                           const struct wslay_event_on_frame_recv_chunk_arg *arg, void *user)
{
    ws_conn *c = user;
    if (c->frame_close)
        for (size_t i = 0; i < arg->data_length && c->close_in_len < sizeof c->close_in; i++)
            c->close_in[c->close_in_len++] = arg->data[i];
    if (c->frame_ctrl || c->msg_over)
        return;
    srv_ws_msg_verdict v =
        srv__ws_msg_append(&c->msg, &c->ctx->sh->body_bytes, arg->data, arg->data_length);
    if (v == SRV_WS_MSG_BUDGET) {
        c->msg_over = true;
        wslay_event_shutdown_read(wctx);
        srv_metrics_rejected(c->ctx, "body_budget");
        conn_close(c, WS_CODE_TRY_AGAIN_LATER,
                   "messages being received fill --body-budget: retry later", true);
    } else if (v == SRV_WS_MSG_NOMEM) {
        c->failed = true;
        wslay_event_shutdown_read(wctx);
    }
}

/* A frame ends; wslay handles a close frame after this. Its reason is
 * checked here too: wslay checks each read of a close frame's payload as
 * if it began with the code (its first 2 bytes skipped), so a reason that
 * is not UTF-8 and came in a later read than the code passed. */
static void on_frame_end(wslay_event_context_ptr wctx, void *user)
{
    ws_conn *c = user;
    if (!c->frame_close || c->close_in_len < 2 || c->closing)
        return;
    unsigned code = (unsigned)c->close_in[0] << 8 | c->close_in[1];
    if (!srv_ws_close_code_valid(code))
        return; /* wslay answers 1002 */
    if (!proto_stream_utf8_valid((const char *)c->close_in + 2, c->close_in_len - 2))
        conn_close(c, WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA, "close reason is not UTF-8", true);
    else if (code > 1011 && code < 3000)
        conn_close(c, (uint16_t)code, "", true); /* IANA's 1012 to 1014, which
                                                    wslay would refuse */
}

static void on_msg(wslay_event_context_ptr wctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *user)
{
    ws_conn *c = user;
    if (wslay_is_ctrl_frame(arg->opcode))
        return; /* wslay answers ping and close itself */
    /* the message as assembled by on_frame_chunk (wslay hands none over
     * without buffering); a large buffer is not kept for the next one */
    const char *text = c->msg.buf ? c->msg.buf : "";
    size_t len = c->msg.len;
    c->msg.len = 0;
    /* shutting down: a message begun by the drain mark (no read crosses
     * it) was sent before the signal and is answered, none begun after */
    c->msg_open = false;
    bool before_signal = !c->draining || c->msg_begin <= c->drain_mark;
    if (!(c->closing || c->dead || !before_signal || c->msg_over))
        deliver_msg(c, arg->opcode, text, len);
    srv__ws_msg_done(&c->msg, &c->ctx->sh->body_bytes);
}

static void deliver_msg(ws_conn *c, uint8_t opcode, const char *text, size_t len)
{
    if (opcode == WSLAY_BINARY_FRAME && c->hooks->on_binary) {
        c->hooks->on_binary(c, text, len);
        return;
    }
    if (opcode == WSLAY_BINARY_FRAME) {
        proto_error e;
        proto_error_set(&e, PROTO_E_INVALID_REQUEST, "",
                        "binary messages are not supported: send JSON text messages");
        send_error(c, NULL, false, 0, &e);
        return;
    }
    if (!proto_stream_utf8_valid(text, len)) {
        conn_begin_close(c, WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA, "text message is not UTF-8");
        return;
    }
    c->hooks->on_text(c, text, len);
}

static const struct wslay_event_callbacks ws_callbacks = {
    on_recv, on_send, NULL, on_frame_start, on_frame_chunk, on_frame_end, on_msg,
};

/* ---- the connection ------------------------------------------------------------ */

/* Sends what is queued and re-arms the poll, or tears the connection down
 * when wslay has nothing left to read or write. */
static void conn_after_io(ws_conn *c)
{
    if (c->dead)
        return;
    if (c->drop_streams) {
        /* closed with 1008 while the stream side was sending (not a place
         * to drop what runs): its streams go now */
        c->drop_streams = false;
        c->hooks->drop_streams(c); /* the connection keeps its open reference */
    }
    /* Frame into out and send it, again while the socket takes all of it
     * and wslay has more (out is bounded, wslay's queue may hold several
     * buffers' worth); a few rounds, then the next wakeup goes on. */
    for (int round = 0; round < 8 && !c->failed; round++) {
        if (wslay_event_want_write(c->wslay) && wslay_event_send(c->wslay) == WSLAY_ERR_NOMEM)
            c->failed = true;
        if (c->failed || out_flush(c) != 0 || c->out_len > 0)
            break; /* the socket is full: wait for UV_WRITABLE */
        if (!wslay_event_want_write(c->wslay))
            break;
    }
    if (c->close_pending && !c->failed && wslay_event_get_queued_msg_count(c->wslay) == 0) {
        conn_close(c, c->close_code, c->close_reason, true);
        if (wslay_event_send(c->wslay) == WSLAY_ERR_NOMEM || out_flush(c) != 0)
            c->failed = true;
    }
    /* A connection whose writes are blocked (the socket takes nothing more)
     * is not read: whatever it sends would only queue more answers and
     * pongs behind them. Reading resumes when the socket is writable. */
    bool blocked = c->out_len > c->out_off;
    if (!blocked)
        c->blocked_since = 0;
    else if (!c->blocked_since)
        c->blocked_since = uv_now(c->ctx->loop) | 1; /* never 0 */
    if (blocked && !c->closing) {
        check_send_queue(c); /* over the cap and blocked: the client does not read */
        if (c->closing) {
            conn_after_io(c); /* its streams go, the close frame is sent */
            return;
        }
    }
    bool rd = wslay_event_want_read(c->wslay) && !blocked && !c->paused && !queue_full(c);
    bool wr = wslay_event_want_write(c->wslay) || blocked;
    if (c->failed || (!rd && !wr && !c->paused)) {
        conn_teardown(c);
        return;
    }
    int ev = (rd ? UV_READABLE : 0) | (wr ? UV_WRITABLE : 0);
    if (c->extra_off < c->extra_len && !c->paused)
        ev |= UV_WRITABLE; /* fires at once: the extra bytes are read then */
    if (ev != c->poll_events) {
        c->poll_events = ev;
        if (ev)
            uv_poll_start(&c->poll, ev, on_poll);
        else
            uv_poll_stop(&c->poll); /* paused, with nothing to send */
    }
}

static void conn_read(ws_conn *c)
{
    c->read_budget = WS_READ_BUDGET;
    c->read_short = false;
    /* A protocol error makes wslay queue its own close frame (1002, 1007,
     * 1009) and stop reading; only a socket failure (set by on_recv) or no
     * memory ends the connection at once. */
    if (wslay_event_recv(c->wslay) == WSLAY_ERR_NOMEM)
        c->failed = true;
    check_send_queue(c); /* the pongs wslay queued for the client's pings */
    if (c->dead || c->closing)
        return;
    c->hooks->on_read_done(c);
    srv__ws_idle(c); /* shutting down: the last message before the signal may be in */
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    ws_conn *c = p->data;
    c->refs++;
    if (status < 0)
        c->failed = true;
    else if (wslay_event_want_read(c->wslay) && c->out_len <= c->out_off && !c->paused &&
             !queue_full(c) && ((events & UV_READABLE) || c->extra_off < c->extra_len))
        conn_read(c);
    conn_after_io(c);
    conn_unref(c);
}

/* Ends the connection now: streams dropped, handles closed, the socket
 * handed back to libmicrohttpd. */
static void conn_teardown(ws_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    srv_ctx *ctx = c->ctx;
    uint16_t sent = wslay_event_get_status_code_sent(c->wslay);
    if (sent == WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA)
        srv_metrics_rejected(ctx, "bad_utf8");
    else if (sent == WSLAY_CODE_MESSAGE_TOO_BIG)
        srv_metrics_rejected(ctx, "too_large");
    else if (sent == WSLAY_CODE_PROTOCOL_ERROR)
        srv_metrics_rejected(ctx, "ws_protocol");
    c->hooks->drop_streams(c);
    msg_free(c);
    srv_ws *ws = ctx->ws;
    if (ws) {
        if (c->prev)
            c->prev->next = c->next;
        else
            ws->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        ws->nconns--;
    }
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
    uv_poll_stop(&c->poll);
    uv_close((uv_handle_t *)&c->poll, conn_handle_closed); /* leaves epoll now */
    /* Read what the client still sent, so that the descriptor is not closed
     * with unread data (which would reset the connection and could lose the
     * close frame on its way to the client). */
    char sink[4096];
    for (int i = 0; i < 16 && recv(c->fd, sink, sizeof sink, 0) > 0; i++)
        ;
    MHD_upgrade_action(c->urh, MHD_UPGRADE_ACTION_CLOSE);
    srv_mhd_run(ctx);
    srv_log(ctx, SRV_LOG_DEBUG, "WebSocket connection closed");
    conn_unref(c);
}

int srv_ws_start(srv_ctx *ctx, const srv_ws_hooks *hooks)
{
    if (!ctx->ws && !(ctx->ws = calloc(1, sizeof *ctx->ws)))
        return SRV_ENOMEM;
    ctx->ws->hooks = hooks;
    return SRV_OK;
}

/* libmicrohttpd's upgrade handler (server/ws_upgrade.c makes the response
 * that names it): the 101 was sent, the socket is ours to use (not to
 * close). Runs inside MHD_run. */
void srv__ws_on_upgrade(void *cls, struct MHD_Connection *connection, void *con_cls,
                        const char *extra_in, size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh)
{
    srv_ctx *ctx = cls;
    srv_ws *ws = ctx->ws;
    ws_conn *c = ws ? calloc(1, sizeof *c) : NULL;
    if (!c)
        goto fail;
    c->ctx = ctx;
    c->hooks = ws->hooks;
    c->fd = sock;
    c->urh = urh;
    if (extra_in_size > 0) {
        c->extra = malloc(extra_in_size);
        if (!c->extra)
            goto fail;
        memcpy(c->extra, extra_in, extra_in_size);
        c->extra_len = extra_in_size;
    }
    if (wslay_event_context_server_init(&c->wslay, &ws_callbacks, c) != 0)
        goto fail;
    /* Every message is sent whole and at once: no Nagle delay (with the
     * client's delayed ACK it adds ~40 ms to each answer), and no cork left
     * over from libmicrohttpd's response writing. */
    int one = 1, zero = 0;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(sock, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
    wslay_event_config_set_max_recv_msg_length(c->wslay, ctx->cfg.max_message_bytes);
    wslay_event_config_set_no_buffering(c->wslay, 1); /* on_frame_chunk assembles */
    if (uv_poll_init_socket(ctx->loop, &c->poll, sock) != 0)
        goto fail;
    c->poll.data = c;
    c->refs++;
    uv_timer_init(ctx->loop, &c->timer);
    c->timer.data = c;
    c->refs++;
    c->last_rx = uv_now(ctx->loop);
    if (ctx->cfg.conn_timeout_s > 0)
        uv_timer_start(&c->timer, on_idle_tick, tick_ms(ctx), tick_ms(ctx));
    c->refs++; /* open */
    c->next = ws->head;
    if (ws->head)
        ws->head->prev = c;
    ws->head = c;
    ws->nconns++;
    c->poll_events = UV_READABLE | (c->extra_len ? UV_WRITABLE : 0);
    uv_poll_start(&c->poll, c->poll_events, on_poll);
    if (ctx->shutting_down) /* upgraded just before the signal */
        conn_begin_close(c, WSLAY_CODE_GOING_AWAY, "ikd is shutting down");
    srv_log(ctx, SRV_LOG_DEBUG, "WebSocket connection open");
    return;
fail:
    srv_log(ctx, SRV_LOG_ERROR, "cannot set up a WebSocket connection (out of memory)");
    if (c) {
        if (c->wslay)
            wslay_event_context_free(c->wslay);
        free(c->extra);
        free(c);
    }
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    srv_mhd_run(ctx);
}

/* ---- the seam of server/ws_conn.h ------------------------------------------------- */

srv_ctx *srv__ws_ctx(const ws_conn *c)
{
    return c->ctx;
}

ws_streams **srv__ws_streams(ws_conn *c)
{
    return &c->streams;
}

ws_inbox **srv__ws_inbox(ws_conn *c)
{
    return &c->inbox;
}

char *srv__ws_take_text(ws_conn *c, const char *text)
{
    return srv__ws_msg_take(&c->msg, &c->ctx->sh->body_bytes, text);
}

void srv__ws_pause(ws_conn *c, bool paused)
{
    c->paused = paused;
    if (!paused)
        conn_after_io(c);
}

bool srv__ws_open(const ws_conn *c)
{
    return !c->dead && !c->closing;
}

void srv__ws_ref(ws_conn *c)
{
    c->refs++;
}

void srv__ws_unref(ws_conn *c)
{
    conn_unref(c);
}

void srv__ws_send(ws_conn *c, const char *text, size_t len)
{
    send_text(c, text, len);
}

void srv__ws_send_binary(ws_conn *c, const char *data, size_t len)
{
    send_frame(c, WSLAY_BINARY_FRAME, data, len);
}

void srv__ws_send_error(ws_conn *c, const char *stream, bool has_seq, long long seq,
                        const proto_error *e)
{
    send_error(c, stream, has_seq, seq, e);
}

void srv__ws_flush(ws_conn *c)
{
    conn_after_io(c);
}

void srv__ws_flush_soon(ws_conn *c)
{
    if (c->dead || (c->poll_events & UV_WRITABLE))
        return;
    c->poll_events |= UV_WRITABLE; /* on_poll then sends (conn_after_io) */
    uv_poll_start(&c->poll, c->poll_events, on_poll);
}

void srv__ws_idle(ws_conn *c)
{
    /* shutting down: not before all the client began to send by the signal is read */
    if (!c->draining || c->dead || c->closing || c->received < c->drain_mark ||
        (c->msg_open && c->msg_begin <= c->drain_mark) || c->hooks->busy(c))
        return;
    c->hooks->on_drain(c); /* a path begun by a message read after the signal ends too */
    if (!c->hooks->busy(c))
        conn_begin_close(c, WSLAY_CODE_GOING_AWAY, "ikd is shutting down");
}

/* ---- the daemon's entry points (server/ws.h) ---------------------------------------- */

void srv_ws_shutdown(srv_ctx *ctx)
{
    srv_ws *ws = ctx->ws;
    if (!ws)
        return;
    for (ws_conn *c = ws->head, *next; c; c = next) {
        next = c->next;
        c->refs++;
        /* what the client sent before the signal is in the socket already:
         * it is read (now, and in later turns when it is more than one
         * read's worth or the connection waits for a message decoded off
         * the loop) and answered; the 1001 waits for it */
        int held = 0;
        if (ioctl(c->fd, FIONREAD, &held) != 0 || held < 0)
            held = 0;
        c->drain_mark = c->received + (uint64_t)held;
        c->draining = true;
        if (!c->closing && ctx->cfg.conn_timeout_s == 0) /* the stall check */
            uv_timer_start(&c->timer, on_idle_tick, 250, 250);
        if (!c->closing && !c->paused && wslay_event_want_read(c->wslay))
            conn_read(c);
        c->hooks->on_drain(c);
        srv__ws_idle(c);
        conn_after_io(c);
        conn_unref(c);
    }
}

void srv_ws_abort(srv_ctx *ctx)
{
    srv_ws *ws = ctx->ws;
    if (!ws)
        return;
    while (ws->head)
        conn_teardown(ws->head);
    free(ws);
    ctx->ws = NULL;
}

size_t srv_ws_open_streams(srv_ctx *ctx)
{
    /* the gauge is kept by srv__stream_open and srv__stream_drop */
    long n = srv_metrics_streams(ctx->metrics);
    return n > 0 ? (size_t)n : 0;
}

size_t srv_ws_open_connections(srv_ctx *ctx)
{
    srv_ws *ws = ctx->ws;
    return ws ? ws->nconns : 0;
}
