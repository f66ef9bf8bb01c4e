/*
 * registry.h: the chain registry behind POST/GET/DELETE /v1/chains and
 * "chain_id" in requests, which holds registered scenes too (/v1/scenes,
 * "scene_id").
 *
 * Two parts:
 *   - the local registry (server/registry.c): a content-addressed,
 *     memory-bounded, LRU store of proto_chain, one per process. Ids come
 *     from proto_chain_id(). Every function is thread-safe (one internal
 *     reader-writer lock: lookups from every loop run side by side).
 *     Without --redis it is the whole registry, and ids live as long as
 *     the process;
 *   - with --redis, the shared registry (server/registry_redis.c, its
 *     connections in server/registry_redis_conn.c): every
 *     registration is written to Redis, an id the local registry does not
 *     hold is fetched from there (and kept locally, bounded as above), a
 *     deletion is removed there and announced to every replica (one cut
 *     off from the announcements checks what it holds when it is back). Ids then
 *     outlive restarts and are known to every replica; how long Redis
 *     keeps them is Redis's own memory policy (maxmemory-policy). Redis
 *     down or slow never stalls a loop: what needs it fails within
 *     --redis-timeout, and everything else (inline chains, ids held
 *     locally) goes on.
 *
 * THREADS of the shared part: one hiredis asynchronous context per loop
 * (plus one subscribed to deletions), made by srv_registry_redis_start on
 * the loop's own thread and driven by that loop (hiredis's libuv
 * adapter), so nothing of it crosses threads: serve.c calls
 * srv_registry_redis_start on each loop's srv_ctx before the loops run,
 * and a fetch's done runs on the thread of the loop that asked. What they
 * share is the local registry, whose functions are thread-safe, and the
 * count of loops whose connections are up (srv_shared's redis_up).
 */
#ifndef SRV_REGISTRY_H
#define SRV_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"

typedef struct srv_registry srv_registry;

/* A new, empty registry bounded by max_bytes, or NULL when out of memory. */
srv_registry *srv_registry_new(size_t max_bytes);
void srv_registry_free(srv_registry *r); /* drops its references; NULL is fine */

/* Stores c (the registry takes its own reference; the caller keeps its own).
 * *created is true when the id was new, false when it was already there (the
 * stored one is kept and marked most recently used). Evicts least recently
 * used chains until the total memory fits max_bytes. Returns 0, or
 * SRV_ENOMEM when c alone is larger than max_bytes (nothing is changed). */
int srv_registry_put(srv_registry *r, proto_chain *c, bool *created);

/* New reference to the chain with that id (marks it most recently used, to
 * the millisecond), or NULL. */
proto_chain *srv_registry_get(srv_registry *r, const char *id);

/* Removes the id. Returns 0 or SRV_ENOTFOUND. In-flight jobs keep their own
 * references. */
int srv_registry_remove(srv_registry *r, const char *id);

/* Counts for metrics/tests (entries: chains and scenes). */
size_t srv_registry_count(srv_registry *r);
size_t srv_registry_bytes(srv_registry *r);
size_t srv_registry_evictions(srv_registry *r);

/* Scenes (POST /v1/scenes, proto/proto_scene.h) are entries of the same
 * registry, of their own kind (a scene's id names no chain): their bytes
 * (proto_scene's memory) count against the same max_bytes, and the same
 * LRU evicts chains and scenes alike. As srv_registry_put, get and remove.
 * With --redis they are shared as chains are (srv_registry_store and the
 * others below take the kind). */
struct proto_scene;
int srv_registry_put_scene(srv_registry *r, struct proto_scene *s, bool *created);
struct proto_scene *srv_registry_get_scene(srv_registry *r, const char *id);
int srv_registry_remove_kind(srv_registry *r, proto_reg_kind kind, const char *id);

/* proto_chain_lookup_fn adapter: ud is the srv_registry*. New reference or
 * NULL. */
void *srv_registry_lookup(void *ud, proto_reg_kind kind, const char *id);

/* ---- what one request resolved: a scope ----------------------------------
 *
 * A request that names chains by id decodes with srv_registry_scope_lookup
 * (ud: its scope), which finds an id among the chains fetched for the
 * request (held by the scope, so that the local registry evicting them
 * cannot make the next decode miss again) or in the local registry, and
 * notes the ids it missed. After a decode that failed with unknown_chain,
 * the request fetches the missed ids (srv_registry_fetch) into its scope and
 * decodes again. Any thread, one at a time per scope. */

#define SRV_CHAIN_ID_LEN 32 /* a chain id: 32 lower-case hex digits */
#define SRV_FETCH_MAX 256   /* ids noted for one fetch at most */

/* An id of a registered object: a chain's or a scene's (the same form). */
typedef struct srv_reg_id {
    proto_reg_kind kind;
    char id[SRV_CHAIN_ID_LEN + 1];
} srv_reg_id;

/* A reference to a registered object, of its kind. */
typedef struct srv_reg_ref {
    proto_reg_kind kind;
    void *obj; /* proto_chain * or struct proto_scene * */
} srv_reg_ref;

typedef struct srv_registry_scope {
    srv_registry *r;
    srv_reg_ref *held; /* fetched for this request (references) */
    size_t nheld, capheld, held_bytes;
    srv_reg_id *missed; /* ids not found and not asked for yet, each once */
    size_t nmissed, capmissed;
    srv_reg_id *asked; /* ids fetched before (not noted again) */
    size_t nasked, capasked;
} srv_registry_scope;

/* An empty scope on r (allocates nothing). */
void srv_registry_scope_init(srv_registry_scope *s, srv_registry *r);
/* Drops its references and frees what it allocated; it can be used again. */
void srv_registry_scope_free(srv_registry_scope *s);
/* proto_chain_lookup_fn: ud is the scope. New reference or NULL (then the
 * id is noted in missed when it looks like an id, was not asked for
 * before, and there is room: SRV_FETCH_MAX). */
void *srv_registry_scope_lookup(void *ud, proto_reg_kind kind, const char *id);
/* Notes the chain and scene ids a JSON body names ("chain_id" and
 * "scene_id" members at any depth: a batch of items names one per item)
 * that neither the scope nor the
 * local registry holds, so that one fetch gets them all: decoding stops at
 * the first it misses. Any thread; a body that is not JSON notes nothing. */
void srv_registry_scope_scan(srv_registry_scope *s, const char *body, size_t len);
/* Whether id is a chain id's form (32 lower-case hex digits). */
bool srv_registry_id_form(const char *id);

/* Internal (registry_redis.c): adds obj of kind k, a reference taken
 * over, to the scope; false when memory ran out (obj is then dropped). */
bool srv__registry_scope_hold(srv_registry_scope *s, proto_reg_kind k, void *obj);
/* Internal (registry_redis.c): the bytes obj of kind k holds
 * (proto_chain_memory, a scene's memory), and its id. */
size_t srv__registry_obj_bytes(proto_reg_kind k, const void *obj);
const char *srv__registry_obj_id(proto_reg_kind k, const void *obj);
/* Internal: releases a reference to obj of kind k (NULL is fine). */
void srv__registry_obj_unref(proto_reg_kind k, void *obj);
/* Internal: puts obj of kind k in r, as srv_registry_put. */
int srv__registry_put_kind(srv_registry *r, proto_reg_kind k, void *obj, bool *created);
/* Internal (registry_redis.c): the srv_registry_remove_kind calls so far,
 * and a fetched obj put as srv__registry_put_kind unless one came since
 * (SRV_EBUSY, nothing put): a fetch that Redis answered before a DEL
 * (a DELETE's, or another replica's, announced) must not put back what
 * the DELETE removed, when its answer is decoded after that (on the pool,
 * or on another loop). The request that fetched it still has it. */
size_t srv__registry_removals(srv_registry *r);
int srv__registry_put_fetched(srv_registry *r, proto_reg_kind k, void *obj, size_t since);
/* Internal (registry_redis.c): counts as a removal for the fetches in
 * flight (one sent before puts nothing). The check after a cut-off calls
 * it before it takes the ids held (srv__registry_ids): a fetch that Redis
 * answered before the cut, decoded after the check looked, may bring an
 * id deleted while no loop heard the announcements, which the check would
 * never see. */
void srv__registry_bar_fetches(srv_registry *r);
/* Internal (registry_redis.c): the kind and id of every entry, in a new
 * array (*n of them); NULL when there are none (*n 0) or memory ran out
 * (*n the count). */
srv_reg_id *srv__registry_ids(srv_registry *r, size_t *n);
/* Internal (registry_redis.c): the missed ids become asked ones; false
 * when memory ran out (nothing changed). */
bool srv__registry_scope_asked(srv_registry_scope *s);

/* ---- the shared registry (--redis; server/registry_redis*.c) -------------- */

typedef struct srv_ctx srv_ctx;

/* Per loop: connects ctx's loop to Redis (--redis), in the background,
 * and keeps connecting while it is unreachable. 0, SRV_EINVAL (a URL
 * config.c let through but this cannot use) or SRV_ENOMEM. Without --redis
 * does nothing and returns 0. On the loop's thread, or before its loop runs. */
int srv_registry_redis_start(srv_ctx *ctx);
/* Ends every command in flight (their done run with SRV_ESHUTDOWN) and
 * closes the connections; the memory is freed once the loop has closed
 * its handles. Loop thread. */
void srv_registry_redis_stop(srv_ctx *ctx);

/* True with --redis. Any thread. */
bool srv_registry_shared(const srv_ctx *ctx);
/* True while the connections to Redis of every loop are up. Any
 * thread. */
bool srv_registry_shared_up(const srv_ctx *ctx);
/* "connected", or why not ("connecting", "connection refused", "did not
 * answer within --redis-timeout", ...): static or kept until the next
 * change. Loop thread. */
const char *srv_registry_shared_state(const srv_ctx *ctx);

/* One operation on the shared registry, owned by the caller (it may embed
 * it) and kept alive until done has run. */
typedef struct srv_registry_op srv_registry_op;
struct srv_registry_op {
    /* the caller's */
    void (*done)(srv_registry_op *op); /* loop thread, exactly once */
    void *data;
    /* the outcome, when done runs */
    int status;   /* SRV_OK; SRV_EIO: Redis unreachable or slower than
                     --redis-timeout (what; says why); SRV_ESHUTDOWN */
    char what[160];
    bool existed; /* store: Redis had the id already; forget: it had it */
    bool refused; /* SRV_EIO because Redis answered with an error: the command
                     did not run (else, once sent, it may have run) */
    size_t removals; /* fetch: srv__registry_removals when it was sent */
    size_t found; /* fetch: ids found and decoded, added to the scope */
    proto_error err; /* fetch: a fetched chain this replica refuses (its
                        limits), status SRV_EINVAL */
    /* private */
    srv_ctx *ctx;
    srv_registry_scope *scope;
    srv_reg_id *ids;
    size_t nids;
    char **texts; /* fetched texts, decoded on the pool when large */
    size_t *lens;
    void *work;
};

/* Fetches the scope's missed ids (at most SRV_FETCH_MAX) from Redis: those
 * found are decoded with ctx's limits, checked against their id, added to
 * the local registry and held by the scope (op->found counts them); the
 * missed ids become asked ones, never noted again, so that decoding again
 * and fetching what it misses ends. Returns 0 (done runs later, on this loop's
 * thread), or, and then done never runs: SRV_ENOTFOUND without --redis or
 * with nothing missed, SRV_EIO when Redis is down now (op->what says why:
 * the caller answers at once), SRV_EBUSY when too many commands are in
 * flight. Loop thread. */
int srv_registry_fetch(srv_ctx *ctx, srv_registry_scope *scope, srv_registry_op *op);

/* Writes the text (its registration document: a chain object, a scene's
 * canonical body) of the object of kind k and that id to Redis unless the
 * id is there already (op->existed). Returns 0 (done runs later) or, and
 * then done never runs, SRV_ENOTFOUND without --redis, SRV_EIO, SRV_EBUSY
 * as above. text is copied. Loop thread. */
int srv_registry_store(srv_ctx *ctx, proto_reg_kind k, const char *id, const char *text,
                       size_t len, srv_registry_op *op);

/* Deletes the id of kind k from Redis and announces it, so that every
 * replica drops it from its local registry (op->existed: Redis had it).
 * Returns as srv_registry_store. Loop thread. */
int srv_registry_forget(srv_ctx *ctx, proto_reg_kind k, const char *id, srv_registry_op *op);

#endif /* SRV_REGISTRY_H */
