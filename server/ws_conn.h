/*
 * ws_conn.h: the seam inside ikd's WebSocket side, between the connection
 * (server/ws_conn.c: the socket, wslay framing, pings, the
 * send-queue cap and the closing handshake) and the streams that live on it
 * (the stream rules of proto/STREAM.md: server/ws_messages.c, ws_stream.c,
 * ws_tick.c). Internal to those files; the daemon's entry points are
 * srv_ws_* in server/ws.h.
 *
 * The calls go one way: the stream side calls the connection (below), and
 * the connection reaches the stream side only through the hooks it was
 * given at start-up (srv_ws_hooks, passed to srv_ws_start), so that
 * neither file names the other's functions both ways. A connection owns
 * the stream side's state (srv__ws_streams, srv__ws_inbox) and knows
 * nothing of it beyond the hooks; the stream side never touches the socket
 * or wslay, it queues whole text messages and asks for them to be flushed.
 * Everything runs on the loop thread.
 *
 * Lifetime: a connection is freed when its last reference goes (one for
 * being open, one per open libuv handle, one per stream struct the stream
 * side holds, taken with srv__ws_ref). srv__ws_send and the other calls
 * are safe on a connection that is closing or torn down: they do nothing.
 */
#ifndef SRV_WS_CONN_H
#define SRV_WS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <microhttpd.h>

#include "proto/proto_error.h"
#include "server/srv.h"

typedef struct ws_conn ws_conn;
typedef struct ws_streams ws_streams;
typedef struct ws_inbox ws_inbox;

/* ---- the connection, for the stream side (ws_conn.c) ------------------ */

srv_ctx *srv__ws_ctx(const ws_conn *c);
/* The stream side's state of this connection: its own to allocate, keep
 * and free (NULL until it makes one; its drop_streams hook frees it). */
ws_streams **srv__ws_streams(ws_conn *c);
/* The stream side's messages waiting on this connection (its own to keep
 * and free, at its drop_streams hook at the latest). */
ws_inbox **srv__ws_inbox(ws_conn *c);
/* Inside on_text or on_binary only, for the message it was given: that
 * buffer becomes the caller's (malloc'd, to free; the connection
 * assembles its next message in a new one), so that a message can outlive
 * the hook without a copy.
 * NULL (nothing changes) when text is not the connection's buffer. */
char *srv__ws_take_text(ws_conn *c, const char *text);
/* paused: the stream side works on a message off the loop, the connection
 * is not read (messages already read still arrive); false resumes. */
void srv__ws_pause(ws_conn *c, bool paused);
/* True while messages may still be queued: not closing, not torn down. */
bool srv__ws_open(const ws_conn *c);
void srv__ws_ref(ws_conn *c);
void srv__ws_unref(ws_conn *c);

/* Queues one text message (copied; text may be NULL, then nothing
 * happens). A client whose send queue passes --max-send-queue is cut with
 * 1008. */
void srv__ws_send(ws_conn *c, const char *text, size_t len);
/* The same for a binary message (a binary tick's answer). */
void srv__ws_send_binary(ws_conn *c, const char *data, size_t len);
/* Queues an "error" message (proto_stream_encode_error). */
void srv__ws_send_error(ws_conn *c, const char *stream, bool has_seq, long long seq,
                        const proto_error *e);
/* Sends what is queued and re-arms the socket's watch (after work that
 * completed outside a socket event: a pool solve, a path timer). */
void srv__ws_flush(ws_conn *c);
/* The same when the socket is next ready (in the next poll of the loop):
 * answers queued meanwhile go out together. */
void srv__ws_flush_soon(ws_conn *c);
/* The stream side went idle: a draining connection then gets its 1001
 * close frame, after the answers queued before it. */
void srv__ws_idle(ws_conn *c);

/* ---- the connection, for the upgrade (server/ws_upgrade.c) -------------- */

/* libmicrohttpd's upgrade handler (MHD_UpgradeHandler), with the daemon's
 * srv_ctx as cls: the connection begins on the socket it is handed. */
void srv__ws_on_upgrade(void *cls, struct MHD_Connection *connection, void *con_cls,
                        const char *extra_in, size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh);

/* ---- the stream side, for the connection: its hooks --------------------- */

struct srv_ws_hooks {
    /* One complete, valid UTF-8 text message from the client. */
    void (*on_text)(ws_conn *c, const char *text, size_t len);
    /* Every message of one socket read was handed over: solve what waits. */
    void (*on_read_done)(ws_conn *c);
    /* ikd shuts down: running paths end, waiting targets are solved. */
    void (*on_drain)(ws_conn *c);
    /* True when a stream of the connection has a solve running or a target
     * waiting, or a tick runs or waits, or a message waits its turn. */
    bool (*busy)(ws_conn *c);
    /* The connection is torn down: every stream is dropped (no message is
     * sent); pool solves still running are discarded when they complete.
     * The stream side's state is freed. */
    void (*drop_streams)(ws_conn *c);
    /* One complete binary message from the client (NULL: refused with an
     * error message). */
    void (*on_binary)(ws_conn *c, const char *data, size_t len);
};

#endif /* SRV_WS_CONN_H */
