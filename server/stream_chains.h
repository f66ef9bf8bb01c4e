/*
 * stream_chains.h: the memory of the chains, scenes and paths open
 * WebSocket streams hold, bounded by --stream-chain-bytes for all connections
 * together (server/stream_chains.c). A chain or scene evicted from the
 * registry lives on in the streams using it, and an inline one is each
 * stream's own: this is the bound on them. Each counts once however many
 * streams hold it.
 *
 * Threads: any loop thread. The table is the process's (ctx->sh), shared
 * by every loop's streams: it takes its own lock, held only to find,
 * count and insert a chain (opens and closes of streams, never their
 * targets); the budget is atomic.
 */
#ifndef SRV_STREAM_CHAINS_H
#define SRV_STREAM_CHAINS_H

#include "proto/proto.h"
#include "proto/proto_stream.h"
#include "server/srv.h"

struct proto_scene;

/* The process's table (sh->stream_chains), empty; NULL when out of memory.
 * Freed with srv_stream_chains_free once no stream is open. */
srv_stream_chains *srv_stream_chains_new(void);
void srv_stream_chains_free(srv_stream_chains *t); /* NULL is fine */

/* One more stream holds c: 0, or -1 with *e set (nothing held) when c is
 * new and does not fit: PROTO_E_TOO_LARGE when c alone is larger than the
 * bound, PROTO_E_OVERLOADED when the chains held leave no room for it now
 * (counted in the metrics as "stream_chains"), PROTO_E_INTERNAL when out
 * of memory. */
int srv_stream_chains_hold(srv_ctx *ctx, const proto_chain *c, proto_error *e);

/* A stream that held c lets go of it (c's bytes are given back when no
 * stream holds it any more). */
void srv_stream_chains_release(srv_ctx *ctx, const proto_chain *c);

/* The same for a stream's scene s (its own, or a registered one; NULL:
 * none, 0), its errors at path ("/scene" or "/scene_id"). A tick's target
 * holds its stream's scene too until the tick is done (ws_tick.c), and a
 * stream keeps holding a scene it replaced while a job of it built in
 * that scene waits or runs (ws_stream.c, ws_stream.retired), so that a
 * scene kept alive stays counted. */
int srv_stream_scenes_hold(srv_ctx *ctx, const struct proto_scene *s, const char *path,
                           proto_error *e);
void srv_stream_scenes_release(srv_ctx *ctx, const struct proto_scene *s); /* NULL is fine */

/* The same for a stream's running path p (bound to its stream: its
 * waypoints decoded), its errors at "/waypoints": held while it runs, so
 * that a client cannot make streams hold paths beyond the bound (1024
 * waypoints of a 40 kB message hold about 200 kB, for as long as the path
 * is scheduled to run). */
int srv_stream_paths_hold(srv_ctx *ctx, const proto_stream_path *p, proto_error *e);
void srv_stream_paths_release(srv_ctx *ctx, const proto_stream_path *p); /* NULL is fine */

#endif /* SRV_STREAM_CHAINS_H */
