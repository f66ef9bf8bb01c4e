/*
 * registry.c: the chain registry behind POST/GET/DELETE /v1/chains and
 * "chain_id" in requests.
 *
 * Content-addressed: the key is proto_chain_id(), so registering the same
 * chain twice yields the same id and one stored copy. Memory-bounded: the
 * sum of proto_chain_memory() of the stored chains stays at or below
 * max_bytes; storing a new chain evicts the least recently used ones (a get
 * or a repeated put counts as a use). Ids survive only the process: nothing
 * is persisted, a restarted daemon starts empty.
 *
 * Structure: a chained hash table (FNV-1a on the id) for lookup and an
 * intrusive doubly-linked list for eviction; a reader-writer lock guards
 * both, so every function is safe from any thread, and lookups (every
 * request by chain_id, from every loop) run side by side: a lookup only
 * reads the table, takes a reference and stamps the entry's last use (an
 * atomic word, written at most once a millisecond, so that a chain every
 * loop uses is not a cache line they all write). The list is kept in the
 * order of the entries' placement (put, or a re-put, moves an entry to the
 * head); eviction looks at the tail, and an entry used since it was placed
 * goes back into the list at the place of its last use instead of going
 * out, so what goes out is the least recently used (to the millisecond).
 * Stored chains hold one reference each; lookups hand out new references,
 * so an evicted or deleted chain lives on in the jobs still using it.
 *
 * Scenes (POST /v1/scenes) are entries of a second kind beside chains:
 * an entry is found by its kind and id, holds a reference of its kind,
 * and counts its bytes against the same bound, so one LRU serves both.
 *
 * Scopes (registry.h): what one request resolved, the chains and scenes
 * fetched for it from the shared registry and the ids it missed, so that a
 * decode that missed an id can fetch it and decode again.
 */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "proto/proto_scene.h"
#include "server/registry.h"
#include "server/srv.h"

/* A use is stamped when the last stamp is older than this (ns). */
#define STAMP_NS 1000000u

typedef struct entry {
    proto_reg_kind kind; /* a chain or a scene: ids are per kind */
    void *obj;           /* proto_chain * or proto_scene *, by kind */
    const char *id;      /* the object's id: lives as long as it */
    size_t bytes;
    struct entry *hnext;              /* hash bucket chain */
    struct entry *prev, *next;        /* by placed, head = the latest */
    uint64_t placed;                  /* when it took its place in the list
                                         (uv_hrtime; write lock) */
    atomic_uint_least64_t used;       /* its last use stamped (uv_hrtime),
                                         0 before any */
} entry;

struct srv_registry {
    uv_rwlock_t lock;
    size_t max_bytes, bytes, count, evictions;
    size_t removals; /* srv_registry_remove_kind calls, found or not, and
                        srv__registry_bar_fetches calls: a fetch sent
                        before one does not put what it brings */
    size_t nbuckets;
    entry **buckets;
    entry *head, *tail;
};

static size_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

srv_registry *srv_registry_new(size_t max_bytes)
{
    srv_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->nbuckets = 256;
    r->buckets = calloc(r->nbuckets, sizeof *r->buckets);
    if (!r->buckets || uv_rwlock_init(&r->lock) != 0) {
        free(r->buckets);
        free(r);
        return NULL;
    }
    r->max_bytes = max_bytes;
    return r;
}

static void list_unlink(srv_registry *r, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        r->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        r->tail = e->prev;
    e->prev = e->next = NULL;
}

static void list_push_front(srv_registry *r, entry *e)
{
    e->prev = NULL;
    e->next = r->head;
    if (r->head)
        r->head->prev = e;
    r->head = e;
    if (!r->tail)
        r->tail = e;
}

/* (write lock) e takes its place again, now. */
static void place_first(srv_registry *r, entry *e, uint64_t now)
{
    list_unlink(r, e);
    e->placed = now;
    list_push_front(r, e);
}

/* (write lock) e, used since it was placed, goes where its last use puts
 * it: after every entry placed later (they are near the head). */
static void place_by_use(srv_registry *r, entry *e, uint64_t used)
{
    list_unlink(r, e);
    e->placed = used;
    entry *before = NULL; /* the last one placed later than used */
    for (entry *x = r->head; x && x->placed > used; x = x->next)
        before = x;
    if (!before) {
        list_push_front(r, e);
        return;
    }
    e->prev = before;
    e->next = before->next;
    if (before->next)
        before->next->prev = e;
    else
        r->tail = e;
    before->next = e;
}

static entry **find_slot(srv_registry *r, proto_reg_kind kind, const char *id)
{
    entry **slot = &r->buckets[hash_id(id) % r->nbuckets];
    while (*slot && ((*slot)->kind != kind || strcmp((*slot)->id, id) != 0))
        slot = &(*slot)->hnext;
    return slot;
}

/* A new reference to an object of kind k, and the release of one. */
static void obj_ref(proto_reg_kind k, void *o)
{
    if (k == PROTO_REG_SCENE)
        proto_scene_ref(o);
    else
        proto_chain_ref(o);
}

void srv__registry_obj_unref(proto_reg_kind k, void *o)
{
    if (k == PROTO_REG_SCENE)
        proto_scene_free(o);
    else
        proto_chain_unref(o);
}

/* Unlinks e from both structures and drops the registry's reference. */
static void drop(srv_registry *r, entry **slot)
{
    entry *e = *slot;
    *slot = e->hnext;
    list_unlink(r, e);
    r->bytes -= e->bytes;
    r->count--;
    srv__registry_obj_unref(e->kind, e->obj);
    free(e);
}

static void grow(srv_registry *r)
{
    size_t n = r->nbuckets * 2;
    entry **b = calloc(n, sizeof *b);
    if (!b)
        return; /* keep the old table: longer chains, still correct */
    for (size_t i = 0; i < r->nbuckets; i++) {
        entry *e = r->buckets[i];
        while (e) {
            entry *next = e->hnext;
            size_t k = hash_id(e->id) % n;
            e->hnext = b[k];
            b[k] = e;
            e = next;
        }
    }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = n;
}

void srv_registry_free(srv_registry *r)
{
    if (!r)
        return;
    entry *e = r->head;
    while (e) {
        entry *next = e->next;
        srv__registry_obj_unref(e->kind, e->obj);
        free(e);
        e = next;
    }
    free(r->buckets);
    uv_rwlock_destroy(&r->lock);
    free(r);
}

/* Stores obj of kind k (its id and bytes), as srv_registry_put. */
/* since: NULL, or the removals a fetch was sent after (nothing is put
 * when one came since: SRV_EBUSY). */
static int put(srv_registry *r, proto_reg_kind k, void *obj, const char *id, size_t bytes,
               bool *created, const size_t *since)
{
    int rc = SRV_OK;
    uint64_t now = uv_hrtime();
    uv_rwlock_wrlock(&r->lock);
    if (since && *since != r->removals) {
        rc = SRV_EBUSY;
        goto out;
    }
    entry **slot = find_slot(r, k, id);
    if (*slot) {
        place_first(r, *slot, now);
        if (created)
            *created = false;
        goto out;
    }
    if (bytes > r->max_bytes) {
        rc = SRV_ENOMEM;
        goto out;
    }
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        rc = SRV_ENOMEM;
        goto out;
    }
    while (r->bytes + bytes > r->max_bytes && r->tail) {
        entry *t = r->tail;
        uint64_t used = atomic_load_explicit(&t->used, memory_order_relaxed);
        if (used > t->placed) { /* used since: it is not the least recent */
            place_by_use(r, t, used);
            continue;
        }
        drop(r, find_slot(r, t->kind, t->id));
        r->evictions++;
    }
    obj_ref(k, obj);
    e->kind = k;
    e->obj = obj;
    e->id = id;
    e->bytes = bytes;
    atomic_init(&e->used, 0);
    e->placed = now;
    slot = find_slot(r, k, id);
    *slot = e;
    list_push_front(r, e);
    r->bytes += bytes;
    r->count++;
    if (r->count > r->nbuckets)
        grow(r);
    if (created)
        *created = true;
out:
    uv_rwlock_wrunlock(&r->lock);
    return rc;
}

size_t srv__registry_obj_bytes(proto_reg_kind k, const void *obj)
{
    return k == PROTO_REG_SCENE ? ((const proto_scene *)obj)->memory : proto_chain_memory(obj);
}

const char *srv__registry_obj_id(proto_reg_kind k, const void *obj)
{
    return k == PROTO_REG_SCENE ? ((const proto_scene *)obj)->id : proto_chain_id(obj);
}

int srv__registry_put_kind(srv_registry *r, proto_reg_kind k, void *obj, bool *created)
{
    return put(r, k, obj, srv__registry_obj_id(k, obj), srv__registry_obj_bytes(k, obj), created,
               NULL);
}

int srv__registry_put_fetched(srv_registry *r, proto_reg_kind k, void *obj, size_t since)
{
    return put(r, k, obj, srv__registry_obj_id(k, obj), srv__registry_obj_bytes(k, obj), NULL,
               &since);
}

int srv_registry_put(srv_registry *r, proto_chain *c, bool *created)
{
    return srv__registry_put_kind(r, PROTO_REG_CHAIN, c, created);
}

int srv_registry_put_scene(srv_registry *r, proto_scene *s, bool *created)
{
    return srv__registry_put_kind(r, PROTO_REG_SCENE, s, created);
}

/* A new reference to the object of kind k with that id, as
 * srv_registry_get. */
static void *get(srv_registry *r, proto_reg_kind k, const char *id)
{
    void *c = NULL;
    uint64_t now = uv_hrtime();
    uv_rwlock_rdlock(&r->lock);
    entry *e = *find_slot(r, k, id);
    if (e) {
        uint64_t used = atomic_load_explicit(&e->used, memory_order_relaxed);
        if (used <= e->placed || (now > used && now - used >= STAMP_NS))
            atomic_store_explicit(&e->used, now > e->placed ? now : e->placed + 1,
                                  memory_order_relaxed);
        obj_ref(k, e->obj);
        c = e->obj;
    }
    uv_rwlock_rdunlock(&r->lock);
    return c;
}

proto_chain *srv_registry_get(srv_registry *r, const char *id)
{
    return get(r, PROTO_REG_CHAIN, id);
}

proto_scene *srv_registry_get_scene(srv_registry *r, const char *id)
{
    return get(r, PROTO_REG_SCENE, id);
}

int srv_registry_remove_kind(srv_registry *r, proto_reg_kind k, const char *id)
{
    int rc = SRV_ENOTFOUND;
    uv_rwlock_wrlock(&r->lock);
    r->removals++;
    entry **slot = find_slot(r, k, id);
    if (*slot) {
        drop(r, slot);
        rc = SRV_OK;
    }
    uv_rwlock_wrunlock(&r->lock);
    return rc;
}

int srv_registry_remove(srv_registry *r, const char *id)
{
    return srv_registry_remove_kind(r, PROTO_REG_CHAIN, id);
}

static size_t read_field(srv_registry *r, const size_t *field)
{
    uv_rwlock_rdlock(&r->lock);
    size_t v = *field;
    uv_rwlock_rdunlock(&r->lock);
    return v;
}

size_t srv__registry_removals(srv_registry *r)
{
    return read_field(r, &r->removals);
}

void srv__registry_bar_fetches(srv_registry *r)
{
    uv_rwlock_wrlock(&r->lock);
    r->removals++;
    uv_rwlock_wrunlock(&r->lock);
}

srv_reg_id *srv__registry_ids(srv_registry *r, size_t *n)
{
    uv_rwlock_rdlock(&r->lock);
    srv_reg_id *ids = r->count ? malloc(r->count * sizeof *ids) : NULL;
    size_t k = 0;
    for (entry *e = r->head; ids && e; e = e->next, k++) {
        ids[k].kind = e->kind;
        snprintf(ids[k].id, sizeof ids[k].id, "%s", e->id);
    }
    *n = ids ? k : r->count;
    uv_rwlock_rdunlock(&r->lock);
    return ids;
}

size_t srv_registry_count(srv_registry *r) { return read_field(r, &r->count); }
size_t srv_registry_bytes(srv_registry *r) { return read_field(r, &r->bytes); }
size_t srv_registry_evictions(srv_registry *r) { return read_field(r, &r->evictions); }

void *srv_registry_lookup(void *ud, proto_reg_kind kind, const char *id)
{
    return get((srv_registry *)ud, kind, id);
}

/* ---- scopes ---------------------------------------------------------------------------- */

void srv_registry_scope_init(srv_registry_scope *s, srv_registry *r)
{
    memset(s, 0, sizeof *s);
    s->r = r;
}

void srv_registry_scope_free(srv_registry_scope *s)
{
    for (size_t i = 0; i < s->nheld; i++)
        srv__registry_obj_unref(s->held[i].kind, s->held[i].obj);
    free(s->held);
    free(s->missed);
    free(s->asked);
    srv_registry *r = s->r;
    srv_registry_scope_init(s, r);
}

bool srv_registry_id_form(const char *id)
{
    size_t n = 0;
    for (; id[n]; n++)
        if (n >= SRV_CHAIN_ID_LEN || !((id[n] >= '0' && id[n] <= '9') || (id[n] >= 'a' && id[n] <= 'f')))
            return false;
    return n == SRV_CHAIN_ID_LEN;
}

/* Whether id of kind k is among the n ids of list. */
static bool listed(const srv_reg_id *list, size_t n, proto_reg_kind k, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].kind == k && memcmp(list[i].id, id, SRV_CHAIN_ID_LEN) == 0)
            return true;
    return false;
}

/* Notes id as missed (once, unless asked for before, while there is
 * room; out of memory, it is not noted). */
static void note_missed(srv_registry_scope *s, proto_reg_kind k, const char *id)
{
    if (!srv_registry_id_form(id) || s->nmissed >= SRV_FETCH_MAX ||
        listed(s->missed, s->nmissed, k, id) || listed(s->asked, s->nasked, k, id))
        return;
    if (s->nmissed == s->capmissed) {
        size_t cap = s->capmissed ? 2 * s->capmissed : 8;
        srv_reg_id *m = realloc(s->missed, cap * sizeof *m);
        if (!m)
            return;
        s->missed = m;
        s->capmissed = cap;
    }
    s->missed[s->nmissed].kind = k;
    memcpy(s->missed[s->nmissed++].id, id, SRV_CHAIN_ID_LEN + 1);
}

bool srv__registry_scope_asked(srv_registry_scope *s)
{
    if (s->nasked + s->nmissed > s->capasked) {
        size_t cap = s->capasked ? 2 * s->capasked : 8;
        while (cap < s->nasked + s->nmissed)
            cap *= 2;
        srv_reg_id *a = realloc(s->asked, cap * sizeof *a);
        if (!a)
            return false;
        s->asked = a;
        s->capasked = cap;
    }
    memcpy(s->asked + s->nasked, s->missed, s->nmissed * sizeof *s->missed);
    s->nasked += s->nmissed;
    s->nmissed = 0;
    return true;
}

/* A new reference to the object of kind k and that id the scope holds,
 * or NULL. */
static void *scope_find(srv_registry_scope *s, proto_reg_kind k, const char *id)
{
    for (size_t i = 0; i < s->nheld; i++)
        if (s->held[i].kind == k && strcmp(srv__registry_obj_id(k, s->held[i].obj), id) == 0) {
            obj_ref(k, s->held[i].obj);
            return s->held[i].obj;
        }
    return NULL;
}

void *srv_registry_scope_lookup(void *ud, proto_reg_kind kind, const char *id)
{
    srv_registry_scope *s = ud;
    void *c = scope_find(s, kind, id);
    if (!c && s->r)
        c = get(s->r, kind, id);
    if (!c)
        note_missed(s, kind, id);
    return c;
}

/* Walks v for "chain_id" and "scene_id" members (depth bounded by
 * jansson's parse). */
static void scan_value(srv_registry_scope *s, json_t *v)
{
    if (s->nmissed >= SRV_FETCH_MAX)
        return;
    if (json_is_object(v)) {
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m) {
            bool scene = strcmp(key, "scene_id") == 0;
            if (json_is_string(m) && (scene || strcmp(key, "chain_id") == 0)) {
                proto_reg_kind k = scene ? PROTO_REG_SCENE : PROTO_REG_CHAIN;
                const char *id = json_string_value(m);
                void *c = srv_registry_id_form(id) ? scope_find(s, k, id) : NULL;
                if (!c && srv_registry_id_form(id) && s->r)
                    c = get(s->r, k, id);
                if (c)
                    srv__registry_obj_unref(k, c);
                else
                    note_missed(s, k, id);
            } else {
                scan_value(s, m);
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) scan_value(s, m);
    }
}

void srv_registry_scope_scan(srv_registry_scope *s, const char *body, size_t len)
{
    json_error_t e;
    json_t *root = body ? json_loadb(body, len, JSON_ALLOW_NUL, &e) : NULL;
    if (root)
        scan_value(s, root);
    json_decref(root);
}

bool srv__registry_scope_hold(srv_registry_scope *s, proto_reg_kind k, void *obj)
{
    if (s->nheld == s->capheld) {
        size_t cap = s->capheld ? 2 * s->capheld : 8;
        srv_reg_ref *h = realloc(s->held, cap * sizeof *h);
        if (!h) {
            srv__registry_obj_unref(k, obj);
            return false;
        }
        s->held = h;
        s->capheld = cap;
    }
    s->held[s->nheld].kind = k;
    s->held[s->nheld++].obj = obj;
    s->held_bytes += srv__registry_obj_bytes(k, obj);
    return true;
}
