/*
 * ws_stream.h: inside the stream side of a WebSocket connection (the rules
 * of proto/STREAM.md), what its three files share:
 *   ws_stream.c    the streams: the index by name, lifetime, the session's
 *                  warm start, conflation, solving, paths and their timers,
 *                  and the open, close, target and path messages;
 *   ws_tick.c      ticks: the targets of many streams in one message,
 *                  solved in parts and answered in one message;
 *   ws_messages.c  a connection's messages in order (the large ones
 *                  decoded off the loop, the inbox), dispatched to the two
 *                  above, and the hooks the connection calls
 *                  (server/ws_conn.h).
 * They call each other one way, ws_messages.c -> ws_tick.c -> ws_stream.c
 * -> the connection (server/ws_conn.h); the one call back up ("a stream's
 * pool solve completed": a tick may have waited for it) goes through
 * ws_streams.solved, which ws_tick.c sets. The chains the streams hold are
 * bounded in server/stream_chains.c.
 *
 * A stream holds one reference to its connection and is freed when it is
 * closed and no pool solve, tick or timer handle still refers to it
 * (refs). Loop thread only, but for what a running tick's parts do on the
 * pool with the sessions of the streams it holds (ws_stream.held).
 */
#ifndef SRV_WS_STREAM_H
#define SRV_WS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto/proto_session.h"
#include "proto/proto_stream.h"
#include "server/srv.h"
#include "server/registry.h"
#include "server/ws_conn.h"

typedef struct ws_stream ws_stream;
typedef struct ws_tick ws_tick;

struct ws_stream {
    ws_conn *conn;
    ws_stream *next; /* in the connection's list while open */
    char name[PROTO_STREAM_NAME_MAX + 1];
    uint64_t hash;          /* of name, for the index */
    proto_session *session; /* chain, options, seed, the last answer */
    size_t own_bytes;       /* held against --stream-bytes until freed */
    unsigned refs;
    bool closed;
    bool busy;            /* a pool solve is running */
    bool close_after;     /* "close" arrived: "closed" once nothing of it runs */
    unsigned ticks;       /* ticks (running or waiting) holding a target of it */
    /* The running tick's parts use the session on the pool (decode,
     * prepare, solved): the loop then only reads the session's chain and
     * options, and a skip that would keep a seed waits in skip_later
     * (srv__stream_skip) until the tick finishes. */
    bool held;
    proto_job *skip_later;
    /* Scenes the stream has replaced that its jobs (pending, solving,
     * skip_later) were built in: still counted against
     * --stream-chain-bytes while a job keeps them alive (each a
     * reference). Three jobs: three at most, and one being added. */
    struct proto_scene *retired[4];
    unsigned char nretired;
    const proto_job *solving; /* the job of the running pool solve */
    double cost_us;       /* estimated cost of one of its targets
                             (proto_job_cost_us of the last one decoded; 0
                             before any) */
    ws_stream *kick_next; /* in the connection's list of streams to kick */
    bool to_kick;         /* in that list (holding a reference) */
    uint64_t tick_mark;   /* the tick being read that has a target of it */
    size_t tick_index;    /* where in that tick */
    /* the waiting target, decoded */
    proto_job *pending;
    long long pending_seq;
    size_t pending_skipped; /* targets dropped before it */
    size_t skipped;         /* targets dropped and not yet counted by a later one */
    /* the running path */
    proto_stream_path *path;
    unsigned path_gen; /* bumped when a path ends; stale pool results are dropped */
    long long path_seq;
    size_t path_count, path_sent;
    long long path_last;    /* index of the last sample solved, -1 before the first */
    size_t path_skipped;    /* samples passed over (solving could not keep up) */
    uint64_t path_start_ns; /* uv_hrtime() when the path message arrived */
    uv_timer_t timer;
    bool timer_open;
};

/* The stream side of one connection (srv__ws_streams). */
struct ws_streams {
    ws_stream *head; /* the open streams */
    size_t count;
    ws_stream **slots; /* the index: open addressing on the name's hash */
    size_t nslots;     /* a power of two above twice count, or 0 */
    ws_tick *running, *waiting;
    uint64_t tick_gen; /* ticks read so far (tick_mark) */
    ws_stream *kick;   /* streams given a target in this read (to_kick) */
    /* Runs after a stream's solve completed on the pool (and its answer
     * was queued): what waited for the stream may start. ws_tick.c sets it
     * (a waiting tick starts once none of its streams has a solve
     * running); NULL until then. */
    void (*solved)(ws_conn *c);
    /* Runs after a closing stream answered "closed" and left the
     * connection: an open of its name that waited for it may go on.
     * ws_messages.c sets it; NULL until then. */
    void (*settled)(ws_conn *c);
};

/* ---- ws_stream.c ---------------------------------------------------------- */

/* The connection's stream side, made on first use; NULL when out of memory. */
ws_streams *srv__ws_side(ws_conn *c);
/* The open stream of that name on c, or NULL. */
ws_stream *srv__stream_find(ws_conn *c, const char *name);
/* Drops a reference (s->refs); the last frees the stream and drops its
 * reference to the connection. */
void srv__stream_unref(ws_stream *s);
/* Removes the stream from its connection (no message is sent). */
void srv__stream_drop(ws_stream *s);
/* job (one of the stream's, taken) was replaced unsolved by a newer target
 * of the stream: proto_session_skip now, or, while a running tick holds
 * the stream, once it finishes (only the newest job with a seed of its
 * own is kept for then: it alone decides the seed the skips keep). */
void srv__stream_skip(ws_stream *s, proto_job *job);
/* Puts s on its connection's list of streams to kick and settle once the
 * read is done (the on_read_done hook): its target waits there, or a tick
 * that held it was dropped. */
void srv__stream_to_kick(ws_stream *s);
/* The running tick that held s finished: the skip that waited is done. */
void srv__stream_unhold(ws_stream *s);
/* Ends the running path, if any, with path_end (completed or not). */
void srv__stream_path_end(ws_stream *s, bool completed);
/* Runs what the stream has waiting: the pending target first, then the
 * path; nothing while a solve runs or a tick holds the stream. */
void srv__stream_kick(ws_stream *s);
/* When the stream or its connection waits for the stream to go idle:
 * "closed" after a close message, the 1001 close frame when shutting down. */
void srv__stream_settle(ws_stream *s);

/* The session an open message asks for: its chain resolved (decoded when
 * inline: megabytes of URDF for some; by id from scope, the chains fetched
 * for it from the shared registry, when not NULL, else from the local
 * registry) and its options and seed checked. Any thread (the registry
 * is). NULL with *e set when refused. */
proto_session *srv__stream_open_session(srv_ctx *ctx, const proto_stream_msg *m,
                                        srv_registry_scope *scope, proto_error *e);
/* The messages of proto/STREAM.md on one stream. open: session is the one
 * prepared off the loop (taken), or NULL to open it here; err why it
 * could not be prepared, or NULL. */
void srv__stream_open(ws_conn *c, proto_stream_msg *m, proto_session *session,
                      const proto_error *err);
void srv__stream_close(ws_stream *s);
/* A scene message (or its id, fetched: lookup/ud as for
 * proto_session_scene): the stream's new scene, held against
 * --stream-chain-bytes in place of the old one. 0, or -1 with *e set and
 * the stream's scene unchanged. */
int srv__stream_scene(ws_stream *s, const proto_stream_msg *m, proto_chain_lookup_fn lookup,
                      void *ud, proto_error *e);
void srv__stream_target(ws_stream *s, proto_stream_msg *m);
void srv__stream_path(ws_stream *s, proto_stream_msg *m);

/* ---- ws_tick.c ------------------------------------------------------------- */

/* A tick message: its targets' streams found; it becomes the connection's
 * waiting tick (replacing the one waiting), started by srv__tick_kick once
 * the read is done. The tick takes *m (left cleared) and *text, the
 * malloc'd text m was decoded from (left NULL; its targets are decoded
 * later, in the tick's parts, from it), or, with text NULL, decodes the
 * targets at once. */
void srv__tick_read(ws_conn *c, proto_stream_msg *m, char **text);
/* Starts the waiting tick when none runs and none of its streams has a
 * solve running. */
void srv__tick_kick(ws_conn *c);
/* The connection is torn down: the waiting tick is freed, the running one
 * frees itself when its parts come back from the pool. */
void srv__ticks_drop(ws_streams *st);

#endif /* SRV_WS_STREAM_H */
