/*
 * conn.c: the transport of an ikd_conn (conn.h has the layout): the URL,
 * the non-blocking socket, TLS, the upgrade, WebSocket frames through
 * wslay's frame API (wslay_frame_send masks and frames into the send
 * buffer; wslay_frame_recv parses frames out of the bytes read), pings and
 * pongs, the close handshake, the deadlines, and what happens when the
 * connection is lost (redial with backoff, or the end).
 *
 * Nothing here blocks except getaddrinfo() at each dial (numeric addresses
 * never do). ikd_conn_process runs the state machine as far as it can
 * go without waiting: connect, TLS handshake, upgrade, then reads (at most
 * READ_ROUNDS reads of READ_CHUNK per call, so that a flood cannot keep a
 * game loop inside; ikd_conn_timeout_ms answers 0 while more is waiting)
 * and writes.
 *
 * Frames from ikd are checked as RFC 6455 asks of a client: unmasked, no
 * reserved bits, a continuation only inside a message, control frames
 * whole and at most 125 bytes; text is handed on as it is (the decoder
 * reads it). A violation ends the connection (close 1002); a message over
 * max_message ends it with 1009 before its bytes are buffered.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"

#define READ_CHUNK          65536
#define READ_ROUNDS         32
#define DEFAULT_MAX_MESSAGE ((size_t)16 << 20)
#define DEFAULT_SEND_QUEUE  ((size_t)8 << 20)
#define DEFAULT_CONNECT_MS  10000
#define DEFAULT_IDLE_MS     30000
#define BACKOFF_FIRST_MS    100
#define BACKOFF_MAX_MS      5000
#define REFUSED_BODY_MAX    65536

/* ---- wslay's frame callbacks -------------------------------------------- */

static ssize_t fr_send(const uint8_t *data, size_t len, int flags, void *user)
{
    ikd_conn *c = user;
    if (ikd__buf_put(&c->out, data, len))
        return -1;
    return (ssize_t)len;
}

static ssize_t fr_recv(uint8_t *buf, size_t len, int flags, void *user)
{
    ikd_conn *c = user;
    size_t avail = c->in.len - c->in_off;
    if (!avail)
        return 0; /* wslay: WSLAY_ERR_WANT_READ */
    if (len > avail)
        len = avail;
    memcpy(buf, c->in.p + c->in_off, len);
    c->in_off += len;
    return (ssize_t)len;
}

static int fr_mask(uint8_t *buf, size_t len, void *user)
{
    ikd_conn *c = user;
    if (c->rnd_off + len > sizeof c->rnd) {
        if (getrandom(c->rnd, sizeof c->rnd, 0) != (ssize_t)sizeof c->rnd)
            return -1;
        c->rnd_off = 0;
    }
    memcpy(buf, c->rnd + c->rnd_off, len);
    c->rnd_off += len;
    return 0;
}

/* ---- the URL ------------------------------------------------------------ */

/* ws://, wss://, http:// or https://, then HOST or [V6], an optional
 * :PORT, an optional path prefix (to which /v1/stream is added unless the
 * URL names it). */
static int parse_url(ikd_conn *c, const char *url, ikd_error *err)
{
    const char *p;
    if (strncmp(url, "ws://", 5) == 0 || strncmp(url, "http://", 7) == 0) {
        c->use_tls = false;
        p = strstr(url, "://") + 3;
    } else if (strncmp(url, "wss://", 6) == 0 || strncmp(url, "https://", 8) == 0) {
        c->use_tls = true;
        p = strstr(url, "://") + 3;
    } else {
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT,
                         "the URL must start with ws://, wss://, http:// or https://");
    }
    const char *host = p, *host_end;
    if (*p == '[') {
        host = p + 1;
        host_end = strchr(host, ']');
        if (!host_end)
            return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "an IPv6 address without ']'");
        p = host_end + 1;
    } else {
        host_end = p + strcspn(p, ":/?#");
        p = host_end;
    }
    if (host_end == host)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the URL has no host");
    const char *port = c->use_tls ? "443" : "80";
    size_t port_len = strlen(port);
    if (*p == ':') {
        port = ++p;
        port_len = strspn(p, "0123456789");
        p += port_len;
        if (port_len == 0 || port_len > 5 || atoi(port) > 65535)
            return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the URL's port is not a port");
    }
    if (*p && *p != '/')
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the URL has something odd after the host");
    size_t path_len = strcspn(p, "?#");
    while (path_len && p[path_len - 1] == '/')
        path_len--;
    c->host = strndup(host, (size_t)(host_end - host));
    c->port = strndup(port, port_len);
    const char *suffix = "/v1/stream";
    bool named = path_len >= 10 && memcmp(p + path_len - 10, suffix, 10) == 0;
    size_t n = path_len + (named ? 0 : 10) + 1;
    c->path = malloc(n);
    size_t hh = strlen(c->host ? c->host : "") + port_len + 4;
    c->host_header = malloc(hh);
    if (!c->host || !c->port || !c->path || !c->host_header)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    snprintf(c->path, n, "%.*s%s", (int)path_len, p, named ? "" : suffix);
    bool v6 = strchr(c->host, ':') != NULL;
    snprintf(c->host_header, hh, "%s%s%s:%s", v6 ? "[" : "", c->host, v6 ? "]" : "", c->port);
    return 0;
}

static bool header_safe(const char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* ---- life ---------------------------------------------------------------- */

static void close_socket(ikd_conn *c)
{
    ikd__tls_free(c->tls);
    c->tls = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    if (c->ai)
        freeaddrinfo(c->ai);
    c->ai = c->ai_next = NULL;
    if (c->fr)
        wslay_frame_context_free(c->fr);
    c->fr = NULL;
}

static int dial(ikd_conn *c, ikd_error *err);

/* The connection is gone (why in *why): answers waiting are reported lost,
 * then DISCONNECTED; with reconnect (and a loss a redial can mend), the
 * address is dialled again later. */
static void lose(ikd_conn *c, const ikd_error *why, int close_code, bool fatal)
{
    close_socket(c);
    c->out.len = c->out_off = 0;
    c->in.len = c->in_off = 0;
    c->msg.len = 0;
    c->in_msg = c->frame_started = false;
    c->more_pending = false;
    c->tick_open = false;
    c->ticks_len = 0; /* the ticks in flight are lost with it */
    bool again = c->reconnect && !c->user_closed && !fatal;
    ikd__conn_lost_answers(c, why);
    /* the backoff starts again only after a connection that lasted: one
     * that a server drops as soon as it is up counts as a failed dial, so
     * that a flapping server is not redialled ten times a second */
    if (c->open_since && ikd__now_ms() - c->open_since >= BACKOFF_MAX_MS)
        c->backoff_ms = BACKOFF_FIRST_MS;
    c->open_since = 0;
    if (again) {
        c->state = CS_IDLE;
        /* jitter: between 75% and 125% of the backoff */
        unsigned r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = 0;
        int wait = c->backoff_ms * 3 / 4 + (int)(r % (unsigned)(c->backoff_ms / 2 + 1));
        c->redial_at = ikd__now_ms() + wait;
        c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
    } else {
        c->state = CS_DONE;
    }
    ikd_event ev = {0};
    ev.kind = IKD_EV_DISCONNECTED;
    ev.error = why;
    ev.will_reconnect = again;
    ev.close_code = close_code;
    ikd__conn_emit(c, &ev);
}

static void lose_with(ikd_conn *c, int code, bool fatal, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void lose_with(ikd_conn *c, int code, bool fatal, const char *fmt, ...)
{
    ikd_error e;
    ikd__error_clear(&e);
    e.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    lose(c, &e, 0, fatal);
}

ikd_conn *ikd_conn_new(const ikd_conn_opts *o, ikd_error *err)
{
    ikd__error_clear(err);
    if (!o || !o->url) {
        ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_conn_new: opts and opts->url are required");
        return NULL;
    }
    if (!header_safe(o->token)) {
        ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the token holds a control character");
        return NULL;
    }
    ikd_conn *c = calloc(1, sizeof *c);
    if (!c) {
        ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    c->fd = -1;
    c->url = strdup(o->url);
    c->token = o->token ? strdup(o->token) : NULL;
    c->ca_file = o->ca_file ? strdup(o->ca_file) : NULL;
    c->on_event = o->on_event;
    c->user = o->user;
    c->max_message = o->max_message ? o->max_message : DEFAULT_MAX_MESSAGE;
    c->max_send_queue = o->max_send_queue ? o->max_send_queue : DEFAULT_SEND_QUEUE;
    c->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_CONNECT_MS;
    c->idle_timeout_ms = o->idle_timeout_ms > 0   ? o->idle_timeout_ms
                         : o->idle_timeout_ms < 0 ? 0
                                                  : DEFAULT_IDLE_MS;
    c->max_streams = o->max_streams > 0 ? o->max_streams : 1024;
    c->reconnect = o->reconnect;
    c->backoff_ms = BACKOFF_FIRST_MS;
    c->rnd_off = sizeof c->rnd;
    if (!c->url || (o->token && !c->token) || (o->ca_file && !c->ca_file)) {
        ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        ikd_conn_free(c);
        return NULL;
    }
    if (parse_url(c, c->url, err) || dial(c, err)) {
        ikd_conn_free(c);
        return NULL;
    }
    return c;
}

void ikd_conn_free(ikd_conn *c)
{
    if (!c)
        return;
    close_socket(c);
    ikd__buf_free(&c->out);
    ikd__buf_free(&c->in);
    ikd__buf_free(&c->msg);
    ikd__buf_free(&c->build);
    ikd__buf_free(&c->tick);
    ikd__buf_free(&c->tick_recs);
    ikd__buf_free(&c->tick_dims);
    ikd__dec_free(&c->dec);
    ikd__conn_streams_free(c);
    free(c->url);
    free(c->token);
    free(c->ca_file);
    free(c->host);
    free(c->port);
    free(c->path);
    free(c->host_header);
    free(c);
}

/* ---- dialling ------------------------------------------------------------ */

/* A connect to the next address; 0 when one is under way (or done). */
static int connect_next(ikd_conn *c, ikd_error *err)
{
    int last = 0;
    while (c->ai_next) {
        struct addrinfo *a = c->ai_next;
        c->ai_next = a->ai_next;
        int fd =
            socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
            if (c->fd >= 0)
                close(c->fd);
            c->fd = fd;
            c->state = CS_CONNECTING;
            return 0;
        }
        last = errno;
        close(fd);
    }
    return ikd__fail(err, IKD_E_CONNECT, "cannot connect to %s:%s: %s", c->host, c->port,
                     strerror(last ? last : ECONNREFUSED));
}

/* Starts a connection: resolves, connects, and puts the upgrade request
 * (and, after a loss, the streams' open messages) in front of whatever
 * was queued meanwhile. */
static int dial(ikd_conn *c, ikd_error *err)
{
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(c->host, c->port, &hints, &ai);
    if (rc != 0) {
        c->state = CS_DONE;
        return ikd__fail(err, IKD_E_CONNECT, "cannot resolve %s: %s", c->host, gai_strerror(rc));
    }
    c->ai = c->ai_next = ai;
    if (connect_next(c, err)) {
        close_socket(c);
        c->state = CS_DONE;
        return IKD_E_CONNECT;
    }
    struct wslay_frame_callbacks cb = {fr_send, fr_recv, fr_mask};
    if (!c->fr && wslay_frame_context_init(&c->fr, &cb, c) != 0) {
        close_socket(c);
        c->state = CS_DONE;
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    /* the queue becomes: the request, the opens, then what was queued */
    ikd__buf queued = c->out;
    size_t queued_off = c->out_off;
    memset(&c->out, 0, sizeof c->out);
    c->out_off = 0;
    rc = ikd__handshake_request(&c->out, c->path, c->host_header, c->token, c->accept, err);
    if (!rc)
        rc = ikd__conn_reopen(c);
    if (!rc && queued.len > queued_off &&
        ikd__buf_put(&c->out, queued.p + queued_off, queued.len - queued_off))
        rc = ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    ikd__buf_free(&queued);
    if (rc) {
        close_socket(c);
        c->state = CS_DONE;
        return rc;
    }
    c->close_sent = false;
    c->ping_out = false;
    c->refused_status = 0;
    c->deadline = ikd__now_ms() + c->connect_timeout_ms;
    return 0;
}

/* ---- sending ------------------------------------------------------------- */

bool ikd__conn_usable(const ikd_conn *c)
{
    return c->state != CS_DONE && c->state != CS_CLOSING && !c->user_closed;
}

int ikd__conn_queue(ikd_conn *c, uint8_t opcode, const void *data, size_t len, ikd_error *err)
{
    bool control = wslay_is_ctrl_frame(opcode);
    if (!control && !ikd__conn_usable(c))
        return ikd__fail(err, IKD_E_CLOSED, "the connection is closed");
    if (!c->fr) {
        /* between a loss and the redial: frames wait for the next context */
        struct wslay_frame_callbacks cb = {fr_send, fr_recv, fr_mask};
        if (wslay_frame_context_init(&c->fr, &cb, c) != 0)
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    size_t queued = c->out.len - c->out_off;
    size_t frame = len + 14;
    if (!control && (len > c->max_send_queue || queued + frame > c->max_send_queue)) {
        if (len > c->max_send_queue)
            return ikd__fail(err, IKD_E_MESSAGE_TOO_LARGE,
                             "a message of %zu bytes is larger than max_send_queue (%zu)", len,
                             c->max_send_queue);
        return ikd__fail(err, IKD_E_SEND_QUEUE_FULL,
                         "the send queue holds %zu bytes: a message of %zu more would pass "
                         "max_send_queue (%zu)",
                         queued, len, c->max_send_queue);
    }
    /* the bytes written are dropped from the front once they are many */
    if (c->out_off > 65536 && c->out_off * 2 > c->out.len) {
        memmove(c->out.p, c->out.p + c->out_off, c->out.len - c->out_off);
        c->out.len -= c->out_off;
        c->out_off = 0;
    }
    if (ikd__buf_reserve(&c->out, frame))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    struct wslay_frame_iocb io = {0};
    io.fin = 1;
    io.opcode = opcode;
    io.mask = 1;
    io.payload_length = len;
    io.data = data;
    io.data_length = len;
    ssize_t r = wslay_frame_send(c->fr, &io);
    if (r != (ssize_t)len)
        return ikd__fail(err, IKD_E_NO_MEMORY, "a frame could not be written (wslay: %zd)", r);
    c->stats.messages_out += !control;
    return 0;
}

/* Writes what is queued; 0, or -1 when the connection was lost. */
static int flush_out(ikd_conn *c)
{
    while (c->out.len > c->out_off && c->fd >= 0) {
        const char *p = c->out.p + c->out_off;
        size_t n = c->out.len - c->out_off;
        long w;
        ikd_error e;
        ikd__error_clear(&e);
        if (c->tls) {
            w = ikd__tls_write(c->tls, p, n > 16384 ? 16384 : n, &e);
        } else {
            w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                w = 0;
            else if (w < 0)
                ikd__fail(&e, IKD_E_CONNECTION_LOST, "send: %s", strerror(errno));
        }
        if (w < 0) {
            lose(c, &e, 0, false);
            return -1;
        }
        if (w == 0)
            break;
        c->out_off += (size_t)w;
        c->stats.bytes_out += (unsigned long long)w;
    }
    if (c->out.len == c->out_off) {
        c->out.len = c->out_off = 0;
        ikd__buf_trim(&c->out, 1 << 20);
    }
    return 0;
}

int ikd_conn_flush(ikd_conn *c)
{
    if (!c)
        return IKD_E_INVALID_ARGUMENT;
    if (c->state == CS_UPGRADING || c->state == CS_OPEN || c->state == CS_CLOSING)
        if (flush_out(c))
            return IKD_E_CONNECTION_LOST;
    return c->state == CS_DONE ? IKD_E_CLOSED : 0;
}

int ikd_conn_close(ikd_conn *c)
{
    if (!c)
        return IKD_E_INVALID_ARGUMENT;
    if (c->user_closed || c->state == CS_DONE)
        return 0;
    c->user_closed = true;
    c->tick_open = false;
    if (c->state == CS_OPEN) {
        uint8_t body[2] = {1000 >> 8, 1000 & 0xff};
        ikd__conn_queue(c, WSLAY_CONNECTION_CLOSE, body, 2, NULL);
        c->close_sent = true;
        c->state = CS_CLOSING;
        c->deadline = ikd__now_ms() + c->connect_timeout_ms;
        flush_out(c);
        return 0;
    }
    /* not upgraded yet: nothing to close politely */
    ikd_error e;
    ikd__fail(&e, IKD_E_CLOSED, "closed by ikd_conn_close");
    lose(c, &e, 0, true);
    return 0;
}

/* ---- receiving ----------------------------------------------------------- */

/* A whole control frame from ikd. */
static void on_control(ikd_conn *c, uint8_t op)
{
    if (op == WSLAY_PING) {
        /* answered, unless the queue is full (then ikd's next ping is) */
        if (c->out.len - c->out_off < c->max_send_queue)
            ikd__conn_queue(c, WSLAY_PONG, c->ctrl, c->ctrl_len, NULL);
        return;
    }
    if (op == WSLAY_PONG) {
        c->ping_out = false;
        return;
    }
    /* close: echo it (unless ours went first), then the connection ends */
    int code = c->ctrl_len >= 2 ? (c->ctrl[0] << 8) | c->ctrl[1] : 0;
    if (!c->close_sent) {
        uint8_t body[2] = {(uint8_t)(code ? code >> 8 : 1000 >> 8),
                           (uint8_t)(code ? code & 0xff : 1000 & 0xff)};
        ikd__conn_queue(c, WSLAY_CONNECTION_CLOSE, body, 2, NULL);
        c->close_sent = true;
        flush_out(c);
    }
    ikd_error e;
    ikd__error_clear(&e);
    if (c->user_closed) {
        e.code = IKD_E_CLOSED;
        snprintf(e.message, sizeof e.message, "closed (ikd answered the close with %d)", code);
    } else {
        e.code = IKD_E_CONNECTION_LOST;
        snprintf(e.message, sizeof e.message, "ikd closed the connection with %d%s%.*s", code,
                 c->ctrl_len > 2 ? ": " : "", (int)(c->ctrl_len > 2 ? c->ctrl_len - 2 : 0),
                 (const char *)c->ctrl + 2);
    }
    /* 1008 (not reading) and 1009 (too large) would happen again */
    lose(c, &e, code, code == 1008 || code == 1009 || code == 1007);
}

/* Sends a close frame with code and ends the connection: a protocol
 * violation by ikd, or a message too large. */
static void fail_ws(ikd_conn *c, int close_code, int err_code, const char *why)
{
    uint8_t body[2] = {(uint8_t)(close_code >> 8), (uint8_t)(close_code & 0xff)};
    ikd__conn_queue(c, WSLAY_CONNECTION_CLOSE, body, 2, NULL);
    c->close_sent = true;
    flush_out(c);
    lose_with(c, err_code, close_code == 1009, "%s (closed with %d)", why, close_code);
}

/* Takes every frame out of the bytes read. */
static void read_frames(ikd_conn *c)
{
    while (c->state == CS_OPEN || c->state == CS_CLOSING) {
        struct wslay_frame_iocb io;
        ssize_t r = wslay_frame_recv(c->fr, &io);
        if (r == WSLAY_ERR_WANT_READ)
            break;
        if (r < 0) {
            fail_ws(c, 1002, IKD_E_PROTOCOL, "a frame that breaks RFC 6455");
            return;
        }
        if (!c->frame_started) {
            c->frame_started = true;
            c->frame_op = io.opcode;
            c->frame_fin = io.fin;
            c->frame_len = io.payload_length;
            c->frame_got = 0;
            bool control = wslay_is_ctrl_frame(io.opcode);
            const char *bad = NULL;
            if (io.mask)
                bad = "a masked frame from the server";
            else if (io.rsv)
                bad = "a frame with reserved bits set";
            else if (control && io.opcode != WSLAY_PING && io.opcode != WSLAY_PONG &&
                     io.opcode != WSLAY_CONNECTION_CLOSE)
                bad = "an unknown control opcode";
            else if (!control && io.opcode != WSLAY_CONTINUATION_FRAME &&
                     io.opcode != WSLAY_TEXT_FRAME && io.opcode != WSLAY_BINARY_FRAME)
                bad = "an unknown data opcode";
            else if (io.opcode == WSLAY_CONTINUATION_FRAME && !c->in_msg)
                bad = "a continuation frame outside a message";
            else if (!control && io.opcode != WSLAY_CONTINUATION_FRAME && c->in_msg)
                bad = "a new message inside a fragmented one";
            if (bad) {
                fail_ws(c, 1002, IKD_E_PROTOCOL, bad);
                return;
            }
            if (control) {
                c->ctrl_len = 0;
            } else {
                if (io.opcode != WSLAY_CONTINUATION_FRAME) {
                    c->in_msg = true;
                    c->msg_op = io.opcode;
                    c->msg.len = 0;
                }
                if (io.payload_length > c->max_message - c->msg.len) {
                    char why[128];
                    snprintf(why, sizeof why, "a message from ikd larger than max_message (%zu)",
                             c->max_message);
                    fail_ws(c, 1009, IKD_E_MESSAGE_TOO_LARGE, why);
                    return;
                }
            }
        }
        if (wslay_is_ctrl_frame(c->frame_op)) {
            memcpy(c->ctrl + c->ctrl_len, io.data, io.data_length);
            c->ctrl_len += io.data_length;
        } else if (io.data_length && ikd__buf_put(&c->msg, io.data, io.data_length)) {
            lose_with(c, IKD_E_NO_MEMORY, false, "out of memory for a message");
            return;
        }
        c->frame_got += io.data_length;
        if (c->frame_got < c->frame_len)
            continue;
        c->frame_started = false;
        if (wslay_is_ctrl_frame(c->frame_op)) {
            on_control(c, c->frame_op);
            continue;
        }
        if (!c->frame_fin)
            continue;
        c->in_msg = false;
        c->stats.messages_in++;
        c->msg.p[c->msg.len] = '\0';
        ikd__conn_on_message(c, c->msg_op == WSLAY_BINARY_FRAME, c->msg.p, c->msg.len);
        /* a huge message's buffer is not kept */
        ikd__buf_trim(&c->msg, 1 << 20);
        c->msg.len = 0;
    }
    /* what the frame parser took is gone from the read buffer */
    if (c->in_off == c->in.len)
        c->in.len = c->in_off = 0;
}

/* The upgrade's answer, as it arrives. */
static void read_upgrade(ikd_conn *c)
{
    if (c->refused_status) {
        /* reading a refusal's body */
        size_t have = c->in.len - c->in_off;
        if (c->body_left >= 0 && have < (size_t)c->body_left)
            return;
        ikd_error e;
        ikd__decode_http_error(c->in.p + c->in_off, have, c->refused_status, &e);
        if (e.code == IKD_E_HTTP)
            e.code = IKD_E_HANDSHAKE;
        lose(c, &e, 0, c->refused_status < 500);
        return;
    }
    size_t used;
    long body_len;
    ikd_error e;
    ikd__error_clear(&e);
    int st = ikd__handshake_answer(c->in.p, c->in.len, c->accept, &used, &body_len, &e);
    if (st == 0)
        return;
    if (st < 0) {
        lose(c, &e, 0, true);
        return;
    }
    c->in_off = used;
    if (st != 101) {
        c->refused_status = st;
        c->body_left = body_len > REFUSED_BODY_MAX ? REFUSED_BODY_MAX : body_len;
        read_upgrade(c);
        return;
    }
    c->state = CS_OPEN;
    c->open_since = c->last_recv = ikd__now_ms();
    ikd_event ev = {0};
    ev.kind = IKD_EV_CONNECTED;
    ikd__conn_emit(c, &ev);
    if (c->state == CS_OPEN || c->state == CS_CLOSING)
        read_frames(c);
}

/* Reads what the socket has (at most READ_ROUNDS chunks) and handles it. */
static void read_in(ikd_conn *c)
{
    for (int round = 0; round < READ_ROUNDS; round++) {
        if (c->state != CS_UPGRADING && c->state != CS_OPEN && c->state != CS_CLOSING)
            return;
        if (c->in_off && c->in_off == c->in.len)
            c->in.len = c->in_off = 0;
        if (c->state == CS_UPGRADING && c->in.len > 16384 + REFUSED_BODY_MAX) {
            lose_with(c, IKD_E_HANDSHAKE, true, "the upgrade's answer is too long");
            return;
        }
        if (ikd__buf_reserve(&c->in, READ_CHUNK)) {
            lose_with(c, IKD_E_NO_MEMORY, false, "out of memory for reading");
            return;
        }
        long n;
        ikd_error e;
        ikd__error_clear(&e);
        if (c->tls) {
            n = ikd__tls_read(c->tls, c->in.p + c->in.len, READ_CHUNK, &e);
        } else {
            n = recv(c->fd, c->in.p + c->in.len, READ_CHUNK, 0);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                n = 0;
            else if (n == 0)
                n = -2;
            else if (n < 0)
                ikd__fail(&e, IKD_E_CONNECTION_LOST, "recv: %s", strerror(errno));
        }
        if (n == 0) {
            c->more_pending = c->tls && ikd__tls_pending(c->tls) > 0;
            return;
        }
        if (n == -2) {
            if (c->state == CS_UPGRADING && c->refused_status) {
                size_t have = c->in.len - c->in_off;
                c->body_left = (long)have;
                read_upgrade(c);
                return;
            }
            lose_with(c, c->user_closed ? IKD_E_CLOSED : IKD_E_CONNECTION_LOST, false,
                      "ikd closed the connection");
            return;
        }
        if (n < 0) {
            lose(c, &e, 0, false);
            return;
        }
        c->in.len += (size_t)n;
        c->stats.bytes_in += (unsigned long long)n;
        c->last_recv = ikd__now_ms();
        c->ping_out = false;
        if (c->state == CS_UPGRADING)
            read_upgrade(c);
        else
            read_frames(c);
    }
    c->more_pending = true; /* the rounds ran out: more may be waiting */
}

/* ---- the loop ------------------------------------------------------------ */

int ikd_conn_fd(const ikd_conn *c)
{
    return c ? c->fd : -1;
}

int ikd_conn_events(const ikd_conn *c)
{
    if (!c || c->fd < 0)
        return 0;
    switch (c->state) {
    case CS_CONNECTING:
        return IKD_WANT_WRITE;
    case CS_TLS:
        return ikd__tls_wants(c->tls);
    case CS_UPGRADING:
    case CS_OPEN:
    case CS_CLOSING:
        return IKD_WANT_READ |
               (c->out.len > c->out_off || (c->tls && ikd__tls_write_pending(c->tls))
                    ? IKD_WANT_WRITE
                    : 0);
    default:
        return 0;
    }
}

int ikd_conn_timeout_ms(const ikd_conn *c)
{
    if (!c || c->state == CS_DONE)
        return -1;
    if (c->more_pending)
        return 0;
    int64_t now = ikd__now_ms(), at;
    switch (c->state) {
    case CS_IDLE:
        at = c->redial_at;
        break;
    case CS_OPEN:
        if (!c->idle_timeout_ms)
            return -1;
        at = c->last_recv + (c->ping_out ? c->idle_timeout_ms : c->idle_timeout_ms / 2);
        break;
    default:
        at = c->deadline;
        break;
    }
    int64_t d = at - now;
    return d < 0 ? 0 : d > 2147483647 ? 2147483647 : (int)d;
}

bool ikd_conn_is_open(const ikd_conn *c)
{
    return c && c->state == CS_OPEN;
}

/* One step of the state machine; whether the state changed. */
static bool step(ikd_conn *c)
{
    conn_state before = c->state;
    int64_t now = ikd__now_ms();
    ikd_error e;
    ikd__error_clear(&e);
    switch (c->state) {
    case CS_IDLE:
        if (now >= c->redial_at) {
            c->stats.reconnects++;
            if (dial(c, &e)) {
                c->state = CS_IDLE; /* lose() decides again */
                lose(c, &e, 0, false);
            }
        }
        break;
    case CS_CONNECTING: {
        struct pollfd p = {c->fd, POLLOUT, 0};
        if (poll(&p, 1, 0) <= 0)
            break;
        int soerr = 0;
        socklen_t len = sizeof soerr;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr) {
            if (connect_next(c, &e) == 0)
                break;
            lose_with(c, IKD_E_CONNECT, false, "cannot connect to %s:%s: %s", c->host, c->port,
                      strerror(soerr));
            break;
        }
        if (c->use_tls) {
            if (ikd__tls_new(&c->tls, c->fd, c->host, c->ca_file, &e)) {
                lose(c, &e, 0, true);
                break;
            }
            c->state = CS_TLS;
        } else {
            c->state = CS_UPGRADING;
        }
        break;
    }
    case CS_TLS: {
        int rc = ikd__tls_handshake(c->tls, &e);
        if (rc == 0)
            c->state = CS_UPGRADING;
        else if (rc < 0)
            lose(c, &e, 0, true);
        break;
    }
    case CS_UPGRADING:
    case CS_OPEN:
    case CS_CLOSING:
        if (flush_out(c))
            break;
        read_in(c);
        if (c->state == CS_OPEN || c->state == CS_CLOSING)
            flush_out(c);
        break;
    default:
        break;
    }
    /* deadlines */
    now = ikd__now_ms();
    if ((c->state == CS_CONNECTING || c->state == CS_TLS || c->state == CS_UPGRADING) &&
        now >= c->deadline) {
        lose_with(c, IKD_E_TIMEOUT, false, "no upgrade within %d ms", c->connect_timeout_ms);
    } else if (c->state == CS_CLOSING && now >= c->deadline) {
        lose_with(c, IKD_E_CLOSED, true, "closed (ikd did not answer the close in time)");
    } else if (c->state == CS_OPEN && c->idle_timeout_ms) {
        if (now - c->last_recv >= c->idle_timeout_ms) {
            lose_with(c, IKD_E_TIMEOUT, false, "ikd was silent for %d ms", c->idle_timeout_ms);
        } else if (!c->ping_out && now - c->last_recv >= c->idle_timeout_ms / 2) {
            if (ikd__conn_queue(c, WSLAY_PING, "ikd", 3, NULL) == 0)
                c->ping_out = true;
            flush_out(c);
        }
    }
    return c->state != before;
}

int ikd_conn_process(ikd_conn *c, int revents)
{
    if (!c)
        return IKD_E_INVALID_ARGUMENT;
    if (c->in_callback)
        return IKD_E_INVALID_ARGUMENT; /* not from inside a callback */
    c->dispatched = 0;
    c->more_pending = false;
    for (int guard = 0; guard < 8 && step(c); guard++)
        ;
    if (c->state == CS_DONE)
        return c->dispatched ? c->dispatched : IKD_E_CLOSED;
    return c->dispatched;
}

int ikd_conn_poll(ikd_conn *c, int timeout_ms)
{
    if (!c)
        return IKD_E_INVALID_ARGUMENT;
    if (c->state == CS_DONE)
        return IKD_E_CLOSED;
    int t = ikd_conn_timeout_ms(c);
    if (t < 0 || (timeout_ms >= 0 && timeout_ms < t))
        t = timeout_ms;
    int revents = 0;
    if (c->fd >= 0) {
        struct pollfd p = {c->fd, (short)ikd_conn_events(c), 0};
        int n = poll(&p, 1, t);
        if (n > 0)
            revents = p.revents;
    } else if (t > 0) {
        struct timespec ts = {t / 1000, (long)(t % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return ikd_conn_process(c, revents);
}

void ikd_conn_get_stats(const ikd_conn *c, ikd_conn_stats *s)
{
    if (!c || !s)
        return;
    *s = c->stats;
    s->send_queued = c->out.len - c->out_off;
    s->streams = c->nstreams;
    size_t mem = sizeof *c + c->out.cap + c->in.cap + c->msg.cap + c->build.cap + c->tick.cap +
                 c->tick_recs.cap + c->tick_dims.cap + ikd__dec_memory(&c->dec) +
                 c->streams_cap * sizeof(ikd__stream);
    for (size_t i = 0; i < c->nstreams; i++)
        mem += c->streams[i].open_len;
    s->memory_bytes = mem;
}
