/*
 * ws_conn.h: the seam inside ikd's WebSocket side, between the connection
 * (server/ws_conn.c: the upgrade, the socket, wslay framing, pings, the
 * send-queue cap and the closing handshake) and the streams that live on it
 * (server/ws_stream.c: the stream rules of proto/STREAM.md). Internal to
 * those two files; the daemon's entry points are srv_ws_* in server/ws.h.
 *
 * A connection owns a list of streams it knows nothing about beyond the
 * hooks below; the stream side never touches the socket or wslay, it queues
 * whole text messages and asks for them to be flushed. Everything runs on
 * the loop thread.
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

#include "proto/proto_error.h"
#include "server/srv.h"

typedef struct ws_conn ws_conn;
typedef struct ws_stream ws_stream;
typedef struct ws_inbox ws_inbox;

/* ---- the connection, for the stream side (ws_conn.c) ------------------ */

srv_ctx *srv__ws_ctx(const ws_conn *c);
/* The stream side's list head of this connection (its own to keep). */
ws_stream **srv__ws_streams(ws_conn *c);
/* The stream side's messages waiting on this connection (its own to keep
 * and free, at srv__ws_drop_streams at the latest). */
ws_inbox **srv__ws_inbox(ws_conn *c);
/* paused: the stream side works on a message off the loop, the connection
 * is not read (messages already read still arrive); false resumes. */
void srv__ws_pause(ws_conn *c, bool paused);
/* True while messages may still be queued: not closing, not torn down. */
bool srv__ws_open(const ws_conn *c);
/* True once ikd shuts down: no new messages are read on this connection. */
bool srv__ws_draining(const ws_conn *c);
void srv__ws_ref(ws_conn *c);
void srv__ws_unref(ws_conn *c);

/* Queues one text message (copied; text may be NULL, then nothing
 * happens). A client whose send queue passes --max-send-queue is cut with
 * 1008. */
void srv__ws_send(ws_conn *c, const char *text, size_t len);
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

/* ---- the streams, for the connection (ws_stream.c) -------------------- */

/* One complete, valid UTF-8 text message from the client. */
void srv__ws_on_text(ws_conn *c, const char *text, size_t len);
/* Every message of one socket read was handed over: solve what waits. */
void srv__ws_on_read_done(ws_conn *c);
/* ikd shuts down: running paths end, waiting targets are solved. */
void srv__ws_on_drain(ws_conn *c);
/* True when a stream of the connection has a solve running or a target
 * waiting. */
bool srv__ws_busy(ws_conn *c);
/* The connection is torn down: every stream is dropped (no message is
 * sent); pool solves still running are discarded when they complete. */
void srv__ws_drop_streams(ws_conn *c);

#endif /* SRV_WS_CONN_H */
