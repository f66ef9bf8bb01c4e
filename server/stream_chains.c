/*
 * stream_chains.c: the chains open WebSocket streams hold, counted once
 * each against --stream-chain-bytes (contract in stream_chains.h).
 *
 * Every chain some open stream holds is kept once, with the number of
 * streams holding it, in a table keyed by the chain's address (chained,
 * grown as it fills); the budget ctx->stream_chain_bytes holds the sum of
 * their proto_chain_memory(). The table is freed when nothing is held.
 */
#include "server/stream_chains.h"

#include <stdint.h>
#include <stdlib.h>

#include "server/metrics.h"

typedef struct held_chain {
    struct held_chain *next;
    const proto_chain *chain;
    size_t streams;
} held_chain;

struct srv_stream_chains {
    held_chain **buckets;
    size_t nbuckets, count;
};

static size_t chain_bucket(const srv_stream_chains *t, const proto_chain *c)
{
    uintptr_t h = (uintptr_t)c;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (t->nbuckets - 1);
}

static held_chain **chain_slot(srv_stream_chains *t, const proto_chain *c)
{
    held_chain **p = &t->buckets[chain_bucket(t, c)];
    while (*p && (*p)->chain != c)
        p = &(*p)->next;
    return p;
}

static bool chains_grow(srv_stream_chains *t)
{
    size_t n = t->nbuckets ? 2 * t->nbuckets : 64;
    held_chain **b = calloc(n, sizeof *b);
    if (!b)
        return false;
    held_chain **old = t->buckets;
    size_t oldn = t->nbuckets;
    t->buckets = b;
    t->nbuckets = n;
    for (size_t i = 0; i < oldn; i++)
        for (held_chain *x = old[i], *next; x; x = next) {
            next = x->next;
            held_chain **p = &t->buckets[chain_bucket(t, x->chain)];
            x->next = *p;
            *p = x;
        }
    free(old);
    return true;
}

/* One more stream holds c: 0, or -1 with *e set (nothing held) when c is
 * new and does not fit --stream-chain-bytes. */
int srv_stream_chains_hold(srv_ctx *ctx, const proto_chain *c, proto_error *e)
{
    srv_stream_chains *t = ctx->stream_chains;
    if (!t && !(t = ctx->stream_chains = calloc(1, sizeof *t)))
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    if (t->nbuckets) {
        held_chain *x = *chain_slot(t, c);
        if (x) {
            x->streams++;
            return 0;
        }
    }
    size_t bytes = proto_chain_memory(c), budget = ctx->cfg.stream_chain_bytes;
    if (bytes > budget)
        return proto_error_set(e, PROTO_E_TOO_LARGE, "/chain",
                               "the chain holds %zu bytes, more than streams may hold "
                               "altogether (--stream-chain-bytes %zu)",
                               bytes, budget);
    if (!srv_budget_reserve(&ctx->stream_chain_bytes, bytes)) {
        srv_metrics_rejected(ctx, "stream_chains");
        return proto_error_set(e, PROTO_E_OVERLOADED, "/chain",
                               "the chains of open streams fill their budget "
                               "(--stream-chain-bytes); close streams or retry later");
    }
    held_chain *x = t->count < t->nbuckets || chains_grow(t) ? malloc(sizeof *x) : NULL;
    if (!x) {
        srv_budget_release(&ctx->stream_chain_bytes, bytes);
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    }
    x->chain = c;
    x->streams = 1;
    held_chain **p = &t->buckets[chain_bucket(t, c)];
    x->next = *p;
    *p = x;
    t->count++;
    return 0;
}

/* A stream that held c lets go of it. */
void srv_stream_chains_release(srv_ctx *ctx, const proto_chain *c)
{
    srv_stream_chains *t = ctx->stream_chains;
    if (!t || !t->nbuckets)
        return;
    held_chain **p = chain_slot(t, c);
    held_chain *x = *p;
    if (!x || --x->streams > 0)
        return;
    *p = x->next;
    t->count--;
    srv_budget_release(&ctx->stream_chain_bytes, proto_chain_memory(c));
    free(x);
    if (t->count == 0) { /* nothing held: no table kept either */
        free(t->buckets);
        free(t);
        ctx->stream_chains = NULL;
    }
}
