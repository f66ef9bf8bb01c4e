/*
 * registry.h: the chain registry behind POST/GET/DELETE /v1/chains and
 * "chain_id" in requests (server/registry.c says how it is built).
 *
 * A content-addressed, memory-bounded, LRU store of proto_chain. Ids come
 * from proto_chain_id() and live only as long as the process. Every function
 * is thread-safe (one internal reader-writer lock: lookups from every loop
 * run side by side).
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

/* Counts for metrics/tests. */
size_t srv_registry_count(srv_registry *r);
size_t srv_registry_bytes(srv_registry *r);
size_t srv_registry_evictions(srv_registry *r);

/* proto_chain_lookup_fn adapter: ud is the srv_registry*. New reference or
 * NULL. */
proto_chain *srv_registry_lookup(void *ud, const char *id);

#endif /* SRV_REGISTRY_H */
