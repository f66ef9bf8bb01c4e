/*
 * stream_chains.h: the memory of the chains open WebSocket streams hold,
 * bounded by --stream-chain-bytes for all connections together
 * (server/stream_chains.c). A chain evicted from the registry lives on in
 * the streams using it, and an inline chain is each stream's own: this is
 * the bound on them. Each chain counts once however many streams hold it.
 *
 * Threads: loop thread (the table is process-wide state of srv_ctx: with
 * several loops, issue 22, it takes a lock; the budget is atomic already).
 */
#ifndef SRV_STREAM_CHAINS_H
#define SRV_STREAM_CHAINS_H

#include "proto/proto.h"
#include "server/srv.h"

/* One more stream holds c: 0, or -1 with *e set (nothing held) when c is
 * new and does not fit: PROTO_E_TOO_LARGE when c alone is larger than the
 * bound, PROTO_E_OVERLOADED when the chains held leave no room for it now
 * (counted in the metrics as "stream_chains"), PROTO_E_INTERNAL when out
 * of memory. */
int srv_stream_chains_hold(srv_ctx *ctx, const proto_chain *c, proto_error *e);

/* A stream that held c lets go of it (c's bytes are given back when no
 * stream holds it any more). */
void srv_stream_chains_release(srv_ctx *ctx, const proto_chain *c);

#endif /* SRV_STREAM_CHAINS_H */
