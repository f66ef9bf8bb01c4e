/*
 * stream_chains.c: the chains, scenes and paths open WebSocket streams
 * hold, counted once each against --stream-chain-bytes (contract in
 * stream_chains.h).
 *
 * Every chain or scene some open stream holds is kept once, with its bytes
 * and the number of streams holding it, in a table keyed by its address
 * (chained, grown as it fills); the budget ctx->sh->stream_chain_bytes
 * holds the sum of their bytes (proto_chain_memory(), a scene's memory).
 * The buckets are freed when nothing is held.
 * One mutex guards the table: every loop's streams share it, and a stream
 * takes it twice in its life (open and close).
 */
#include "server/stream_chains.h"

#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

#include "proto/proto_scene.h"
#include "server/metrics.h"

typedef struct held_chain {
    struct held_chain *next;
    const void *obj; /* a proto_chain or a proto_scene */
    size_t bytes, streams;
} held_chain;

struct srv_stream_chains {
    uv_mutex_t lock;
    held_chain **buckets;
    size_t nbuckets, count;
};

srv_stream_chains *srv_stream_chains_new(void)
{
    srv_stream_chains *t = calloc(1, sizeof *t);
    if (t && uv_mutex_init(&t->lock) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

void srv_stream_chains_free(srv_stream_chains *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (held_chain *x = t->buckets[i], *next; x; x = next) {
            next = x->next;
            free(x);
        }
    free(t->buckets);
    uv_mutex_destroy(&t->lock);
    free(t);
}

static size_t chain_bucket(const srv_stream_chains *t, const void *c)
{
    uintptr_t h = (uintptr_t)c;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (t->nbuckets - 1);
}

static held_chain **chain_slot(srv_stream_chains *t, const void *c)
{
    held_chain **p = &t->buckets[chain_bucket(t, c)];
    while (*p && (*p)->obj != c)
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
            held_chain **p = &t->buckets[chain_bucket(t, x->obj)];
            x->next = *p;
            *p = x;
        }
    free(old);
    return true;
}

/* What a stream holds: a chain, or a scene ("what" in errors, at path). */
typedef struct held_what {
    const void *obj;
    size_t bytes;
    const char *what, *path;
} held_what;

/* (t->lock held) One more stream holds h->obj: 0, or -1 with *e set. */
static int hold_locked(srv_ctx *ctx, srv_stream_chains *t, const held_what *h, proto_error *e)
{
    if (t->nbuckets) {
        held_chain *x = *chain_slot(t, h->obj);
        if (x) {
            x->streams++;
            return 0;
        }
    }
    size_t bytes = h->bytes, budget = ctx->cfg.stream_chain_bytes;
    if (bytes > budget)
        return proto_error_set(e, PROTO_E_TOO_LARGE, h->path,
                               "the %s holds %zu bytes, more than streams may hold "
                               "altogether (--stream-chain-bytes %zu)",
                               h->what, bytes, budget);
    if (!srv_budget_reserve(&ctx->sh->stream_chain_bytes, bytes)) {
        srv_metrics_rejected(ctx, "stream_chains");
        return proto_error_set(e, PROTO_E_OVERLOADED, h->path,
                               "the chains, scenes and paths of open streams fill their budget "
                               "(--stream-chain-bytes); close streams or retry later");
    }
    held_chain *x = t->count < t->nbuckets || chains_grow(t) ? malloc(sizeof *x) : NULL;
    if (!x) {
        srv_budget_release(&ctx->sh->stream_chain_bytes, bytes);
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    }
    x->obj = h->obj;
    x->bytes = bytes;
    x->streams = 1;
    held_chain **p = &t->buckets[chain_bucket(t, h->obj)];
    x->next = *p;
    *p = x;
    t->count++;
    return 0;
}

static int hold(srv_ctx *ctx, const held_what *h, proto_error *e)
{
    srv_stream_chains *t = ctx->sh->stream_chains;
    if (!t)
        return proto_error_set(e, PROTO_E_INTERNAL, "", "out of memory");
    uv_mutex_lock(&t->lock);
    int rc = hold_locked(ctx, t, h, e);
    uv_mutex_unlock(&t->lock);
    return rc;
}

static void release(srv_ctx *ctx, const void *obj)
{
    srv_stream_chains *t = ctx->sh->stream_chains;
    if (!t || !obj)
        return;
    uv_mutex_lock(&t->lock);
    held_chain **p = t->nbuckets ? chain_slot(t, obj) : NULL;
    held_chain *x = p ? *p : NULL;
    if (x && --x->streams == 0) {
        *p = x->next;
        t->count--;
        srv_budget_release(&ctx->sh->stream_chain_bytes, x->bytes);
        free(x);
        if (t->count == 0) { /* nothing held: no buckets kept either */
            free(t->buckets);
            t->buckets = NULL;
            t->nbuckets = 0;
        }
    }
    uv_mutex_unlock(&t->lock);
}

int srv_stream_chains_hold(srv_ctx *ctx, const proto_chain *c, proto_error *e)
{
    held_what h = {c, proto_chain_memory(c), "chain", "/chain"};
    return hold(ctx, &h, e);
}

void srv_stream_chains_release(srv_ctx *ctx, const proto_chain *c)
{
    release(ctx, c);
}

int srv_stream_scenes_hold(srv_ctx *ctx, const proto_scene *s, const char *path, proto_error *e)
{
    if (!s)
        return 0;
    held_what h = {s, s->memory, "scene", path};
    return hold(ctx, &h, e);
}

void srv_stream_scenes_release(srv_ctx *ctx, const proto_scene *s)
{
    release(ctx, s);
}

int srv_stream_paths_hold(srv_ctx *ctx, const proto_stream_path *p, proto_error *e)
{
    held_what h = {p, proto_stream_path_bytes(p), "path", "/waypoints"};
    return hold(ctx, &h, e);
}

void srv_stream_paths_release(srv_ctx *ctx, const proto_stream_path *p)
{
    release(ctx, p);
}
