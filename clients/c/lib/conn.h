/*
 * conn.h: the inside of an ikd_conn, shared by its four files:
 *   conn.c    the transport: the socket, TLS (tls.c), the HTTP/1.1 upgrade
 *             (handshake.c), WebSocket frames through wslay's frame API, the
 *             deadlines, losing and redialling the connection;
 *   stream.c  what travels on it: the streams table, the messages sent
 *             (open, target, path, close), the messages received turned
 *             into events, and the blocking helpers;
 *   tick.c    ticks: built target by target in JSON or in the binary form
 *             (binary.c writes and reads its bytes), and sent.
 *
 * Buffers: out holds the bytes to write (the upgrade request, then frames,
 * already masked), bounded by max_send_queue for messages (a pong or a
 * close frame may pass it by its 125 bytes); in holds bytes read and not
 * yet framed (at most one read's worth: frames are taken out as they
 * come); msg holds the message being assembled from its frames (at most
 * max_message). A message is decoded and dispatched as soon as its last
 * frame is in, so nothing read waits in a queue.
 */
#ifndef IKD_CLIENT_CONN_H
#define IKD_CLIENT_CONN_H

#include <netdb.h>
#include <wslay/wslay.h>

#include "internal.h"

/* ---- TLS (tls.c) -------------------------------------------------------- */

typedef struct ikd__tls ikd__tls;
/* A client session on fd for host (SNI and the certificate's name), trusting
 * ca_file (PEM) or the system's CAs. */
int ikd__tls_new(ikd__tls **t, int fd, const char *host, const char *ca_file, ikd_error *err);
/* A handshake step: 0 done, 1 not yet (ikd__tls_wants says for what), or
 * an IKD_E_* code with *err filled. */
int ikd__tls_handshake(ikd__tls *t, ikd_error *err);
/* > 0 bytes, 0 would block, -1 failed (*err), -2 the peer closed. */
long ikd__tls_read(ikd__tls *t, void *p, size_t n, ikd_error *err);
/* > 0 bytes written (after a call that would block, the bytes of that
 * call: pass the same data again), 0 would block, -1 failed (*err). */
long ikd__tls_write(ikd__tls *t, const void *p, size_t n, ikd_error *err);
/* IKD_WANT_READ or IKD_WANT_WRITE: what the last call that would block
 * waits for. */
int ikd__tls_wants(const ikd__tls *t);
/* Whether a write is half done (the same bytes must be passed again). */
bool ikd__tls_write_pending(const ikd__tls *t);
/* Decrypted bytes already buffered inside the session. */
size_t ikd__tls_pending(const ikd__tls *t);
void ikd__tls_free(ikd__tls *t);

/* ---- the upgrade (handshake.c) ------------------------------------------ */

/* Appends the upgrade request to out and writes the Sec-WebSocket-Accept
 * value the answer must carry into accept (at least 29 bytes). */
int ikd__handshake_request(ikd__buf *out, const char *path, const char *host_header,
                           const char *token, char *accept, ikd_error *err);
/* Reads the answer's head from p[0..n): 0 when incomplete (*used 0), the
 * head's length in *used and 101 when the upgrade is accepted, the status
 * (>= 200) when refused (*body_len: Content-Length, or -1 when none), or an
 * IKD_E_* code with *err filled when the answer is wrong. */
int ikd__handshake_answer(const char *p, size_t n, const char *accept, size_t *used, long *body_len,
                          ikd_error *err);

/* ---- the connection ----------------------------------------------------- */

typedef enum conn_state {
    CS_IDLE,       /* no socket: waiting to dial again (redial_at) */
    CS_CONNECTING, /* TCP connect in progress */
    CS_TLS,        /* TLS handshake */
    CS_UPGRADING,  /* the upgrade request sent, its answer being read */
    CS_OPEN,       /* messages flow */
    CS_CLOSING,    /* our close frame queued: waiting for ikd's */
    CS_DONE        /* ended for good */
} conn_state;

/* A tick sent and not yet answered: its seq, its count of targets and a
 * hash of its targets' stream names in order (ikd__names_hash), to check
 * its answer by. The last IKD__TICKS_KEPT are kept; an answer to an older
 * one is not checked. */
#define IKD__TICKS_KEPT 64
typedef struct ikd__tick_sent {
    long long seq;
    size_t count;
    uint32_t names;
} ikd__tick_sent;

uint32_t ikd__names_hash(uint32_t h, const char *name);
#define IKD__NAMES_HASH0 2166136261u

/* The seqs sent on a stream, or of ticks: the highest (when ever), and
 * whether one went out not above every earlier one (then the order of
 * answers is not checked, and which tick answers which is not known). */
typedef struct ikd__seqs_sent {
    long long max;
    bool ever, unordered;
} ikd__seqs_sent;

/* Notes seq as sent in *q. */
static inline void ikd__seqs_note(ikd__seqs_sent *q, long long seq)
{
    if (q->ever && seq <= q->max)
        q->unordered = true;
    else
        q->max = seq;
    q->ever = true;
}

typedef struct ikd__stream {
    char name[IKD__STREAM_MAX + 1];
    char *open_msg; /* the open message, to open it again after a reconnection */
    size_t open_len;
    long long next_seq;  /* the seq IKD_SEQ_AUTO gives next */
    long long last_sent; /* the last target's or path's seq (when sent) */
    long long last_answered;
    long long delivered;  /* the last solution's seq (when has_delivered): answers come in order */
    long long path_ended; /* the last path_end's seq (when has_path_ended): no sample of it after */
    ikd__seqs_sent seqs;  /* of its targets and paths */
    bool sent, answered, path_active, opened, has_delivered, has_path_ended;
    bool closing; /* its close sent: a loss closes it rather than reopening it */
} ikd__stream;

/* What a blocking helper waits for (stream.c). */
typedef struct ikd__waiter {
    ikd_event_kind kind; /* CONNECTED, OPENED, SOLUTION or TICK */
    const char *stream;
    long long seq;
    bool done;
    int rc;
    ikd_error *err;
    ikd_result *result; /* SOLUTION: the copy */
    ikd_tick *tick;     /* TICK: the copy */
} ikd__waiter;

struct ikd_conn {
    /* options */
    char *url, *token, *ca_file;
    ikd_event_cb on_event;
    void *user;
    size_t max_message, max_send_queue;
    int connect_timeout_ms, idle_timeout_ms, max_streams;
    bool reconnect;

    /* the address */
    bool use_tls;
    char *host, *port, *path, *host_header;

    /* the transport */
    conn_state state;
    int fd;
    struct addrinfo *ai, *ai_next;
    ikd__tls *tls;
    ikd__buf out; /* bytes to write, from out_off */
    size_t out_off;
    ikd__buf in; /* bytes read, from in_off */
    size_t in_off;
    long body_left; /* a refused upgrade: its body's bytes still to read (-1: to the end) */
    int refused_status;
    char accept[32];
    wslay_frame_context_ptr fr;
    bool frame_started, frame_fin;
    uint8_t frame_op;
    uint64_t frame_len, frame_got;
    ikd__buf msg; /* the message being assembled */
    uint8_t msg_op;
    bool in_msg;
    uint8_t ctrl[128];
    size_t ctrl_len;
    bool close_sent, user_closed, more_pending, ping_out;
    int64_t deadline, last_recv, redial_at;
    int64_t open_since; /* the last upgrade's time, 0 when none since the last loss */
    int backoff_ms;
    uint8_t rnd[256]; /* mask keys, drawn 256 bytes at a time */
    size_t rnd_off;

    /* messages */
    ikd__buf build;     /* the message being written */
    ikd__buf tick;      /* the tick being built: JSON text, or a binary tick's head and names */
    ikd__buf tick_recs; /* a binary tick's records */
    ikd__buf tick_dims; /* a binary tick's targets' dims, one byte each (to write it as JSON) */
    bool tick_open;
    bool binary_ticks; /* ikd_conn_set_binary_ticks */
    bool tick_binary;  /* the tick being built goes binary (every target so far fits) */
    bool tick_orient;  /* ... and its targets have orientations */
    long long tick_seq;
    size_t tick_count;
    long long tick_last_sent, tick_last_answered;
    bool tick_sent, tick_answered;
    ikd__seqs_sent tick_seqs; /* unordered: answers not checked against ticks_kept */
    bool raw_sent;            /* ikd_send_text was used: seqs sent are not all known */
    uint32_t tick_names;      /* the hash of the tick being built's names */
    ikd__tick_sent ticks_kept[IKD__TICKS_KEPT]; /* a ring: ticks_len from ticks_head */
    size_t ticks_head, ticks_len;
    ikd__stream *streams; /* nstreams used, unordered */
    size_t nstreams, streams_cap;
    ikd__dec dec;
    ikd__msg m;

    /* dispatch */
    ikd__waiter *waiter;
    int dispatched;
    bool in_callback;
    ikd_conn_stats stats;
};

/* conn.c */
/* Frames and queues one message (opcode WSLAY_TEXT_FRAME, ...); control
 * frames pass the send cap. 0 or an IKD_E_* code (nothing queued). */
int ikd__conn_queue(ikd_conn *c, uint8_t opcode, const void *data, size_t len, ikd_error *err);
/* Whether messages may be queued now (not ended for good). */
bool ikd__conn_usable(const ikd_conn *c);

/* stream.c */
/* 0 when messages may be sent on c, else IKD_E_INVALID_ARGUMENT (no c) or
 * IKD_E_CLOSED, with *err filled. */
int ikd__conn_check(ikd_conn *c, ikd_error *err);
/* 0 when stream is a valid name, else IKD_E_INVALID_ARGUMENT naming it. */
int ikd__check_name(const char *stream, ikd_error *err);
/* Appends "name" (a checked name needs no escaping). */
int ikd__put_name(ikd__buf *b, const char *name, ikd_error *err);
/* A complete message from ikd: decoded and dispatched as events. */
void ikd__conn_on_message(ikd_conn *c, bool binary, const char *p, size_t n);
/* Hands an event to a waiting helper and to on_event. */
void ikd__conn_emit(ikd_conn *c, const ikd_event *ev);
/* The connection is lost (why): an IKD_E_CONNECTION_LOST error, its
 * message saying why, for every stream and tick waiting for an answer;
 * IKD_EV_CLOSED for every stream whose close was sent (never reopened). */
void ikd__conn_lost_answers(ikd_conn *c, const ikd_error *why);
/* Appends (framed) the open message of every stream, for a reconnection. */
int ikd__conn_reopen(ikd_conn *c);
void ikd__conn_streams_free(ikd_conn *c);

#endif /* IKD_CLIENT_CONN_H */
