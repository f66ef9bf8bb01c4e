/*
 * proto_chain.c: chain objects of the wire format -> immutable,
 * reference-counted proto_chain (contract in proto.h; JSON in
 * proto/README.md, section "Chains").
 *
 * Seven kinds, each in a file of its own behind one table of operations
 * (proto/proto_kind.h, proto_kinds.c): decoded strictly (unknown fields
 * named, every number finite and bounded, lengths >= PROTO_MIN_LENGTH) and
 * converted once to ikd's internal convention (ROS frame, radians) using
 * the chain's own "frame" and "units" fields:
 *   planar    seed 000's two- and three-link planar arms (lengths, base)
 *   links3d   seed 000's three-link arm in 3D (lengths, origin frame)
 *   bones     joint positions (and world rotations) for seed 001's two-bone
 *             solve, FABRIK and CCD
 *   skeleton  seed 001's translate-rotate-scale hierarchy and its limb
 *   joints    a joint list with URDF semantics (ik_chain.h)
 *   urdf      a URDF document and its base and tip links (proto/proto_urdf.h)
 *   tree      several tips over shared joints
 * This file holds what they share: lifetime, ids, the memo of chain texts,
 * the entry points and the parts of a description every kind has.
 *
 * Ids are content addresses: the first 128 bits (hex) of the SHA-256 of the
 * chain object's canonical JSON (keys sorted, compact, every number written
 * as a 17-digit real so that 1 and 1.0 hash alike; proto_id.c). Equal
 * chains therefore share an id across requests, replicas and restarts.
 *
 * Reference counting is atomic (stdatomic), so a registry and in-flight jobs
 * on other threads may share one chain; a chain is never modified after
 * decoding.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_status.h"

/* ---- lifetime --------------------------------------------------------- */

static proto_chain *chain_new(void)
{
    proto_chain *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    atomic_init(&c->refs, 1);
    c->memory = sizeof *c;
    return c;
}

void proto_chain_ref(proto_chain *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void proto_chain_unref(proto_chain *c)
{
    if (!c)
        return;
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    json_decref(c->source);
    free(c->velocity);
    free(c->velocity_err);
    free(atomic_load(&c->closed));
    free(c->chain);
    free(c->positions);
    free(c->rotations);
    free(c->skel);
    free(c->names);
    free(c->tree);
    free(c->tip_names);
    free(c->path_bones);
    free(c->collide);
    free(c->collide_links);
    free(c->collide_err);
    free(c);
}

/* Doubles per seed for chain c (its kind's). */
size_t proto__seed_len(const proto_chain *c)
{
    return proto_kinds[c->kind]->seed_len(c);
}

const char *proto_chain_id(const proto_chain *c)
{
    return c->id;
}

size_t proto_chain_memory(const proto_chain *c)
{
    return c->memory;
}

/* ---- ids -------------------------------------------------------------- */

/* The id: SHA-256 of the canonical text of the source tree (keys sorted,
 * integers as reals; proto__content_id()). */
static int make_id(proto_chain *c, proto_error *err)
{
    if (proto__content_id(c->source, c->id, NULL, NULL))
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    /* the source tree the chain keeps, as jansson holds it (several times
     * its canonical text) */
    c->memory += proto__json_tree_bytes(c->source);
    return 0;
}

/* ---- kinds ------------------------------------------------------------ */

/* ---- entry points ----------------------------------------------------- */

proto_chain *proto_chain_decode_json(json_t *chain, const char *path, const proto_limits *lim,
                                     proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    if (!path)
        path = "";
    if (!json_is_object(chain)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        proto_error_set(err, PROTO_E_INVALID_REQUEST, path, "%s must be an object", name);
        return NULL;
    }
    json_t *k = proto_json_require(chain, path, "kind", err);
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "kind");
    int kind;
    if (!k || proto_json_enum(k, p, proto_chain_kind_names, &kind, err))
        return NULL;
    proto_chain *c = chain_new();
    if (!c) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        return NULL;
    }
    c->kind = (proto_chain_kind)kind;
    int rc = proto_kinds[c->kind]->decode(c, chain, path, lim, err);
    if (rc == 0) {
        c->source = json_incref(chain);
        rc = make_id(c, err);
    }
    if (rc) {
        proto_chain_unref(c);
        return NULL;
    }
    return c;
}

/* ---- inline chains by their text -------------------------------------- */

/* A client that sends its chain inline sends the same text again and again
 * (an animation tool's limb on every drag event, a game's rig every tick):
 * each thread keeps the chains it decoded from the last few short texts,
 * with the limits they were decoded under, and hands out another reference
 * when the same bytes come again. A chain is a function of its text and
 * the limits (it is immutable and its reference count atomic), so the
 * shared chain is the one a new decode would give. Bounded: CHAIN_MEMO
 * chains per thread, each from at most CHAIN_MEMO_TEXT bytes: enough for a
 * seven-joint arm written with spaces (1.6 kB), whose decode, its id's
 * canonical text included, takes tens of microseconds. */
#define CHAIN_MEMO 4
#define CHAIN_MEMO_TEXT 2048

typedef struct chain_memo {
    size_t len; /* 0: empty */
    char text[CHAIN_MEMO_TEXT];
    proto_limits lim;
    proto_chain *chain; /* a reference */
} chain_memo;

static _Thread_local chain_memo chains[CHAIN_MEMO];
static _Thread_local unsigned chains_next;

/* A thread's kept chains are released as it ends (a key's destructor; the
 * thread-local array alone would lose their references). */
static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static bool memo_keyed;

static void memo_release(void *p)
{
    chain_memo *m = p;
    for (size_t i = 0; i < CHAIN_MEMO; i++) {
        proto_chain_unref(m[i].chain);
        m[i].chain = NULL;
        m[i].len = 0;
    }
}

static void memo_key_make(void)
{
    memo_keyed = pthread_key_create(&memo_key, memo_release) == 0;
}

/* The kept chain, decoded under lim, whose text p (avail bytes) begins
 * with, or NULL. Kept texts are whole JSON objects, so at most one is. */
static chain_memo *memo_at(const char *p, size_t avail, const proto_limits *lim)
{
    for (size_t i = 0; i < CHAIN_MEMO; i++)
        if (chains[i].len && chains[i].len <= avail &&
            memcmp(chains[i].text, p, chains[i].len) == 0 &&
            memcmp(&chains[i].lim, lim, sizeof *lim) == 0)
            return &chains[i];
    return NULL;
}

proto_chain *proto__chain_memo(const char *p, size_t avail, const proto_limits *lim, size_t *len)
{
    const chain_memo *m = memo_at(p, avail, lim);
    if (!m)
        return NULL;
    *len = m->len;
    proto_chain_ref(m->chain);
    return m->chain;
}

proto_chain *proto__chain_from_text(const char *text, size_t len, const proto_limits *lim,
                                    proto_error *err)
{
    pthread_once(&memo_once, memo_key_make);
    bool keep = memo_keyed && len > 0 && len <= CHAIN_MEMO_TEXT &&
                pthread_setspecific(memo_key, chains) == 0;
    chain_memo *hit = keep ? memo_at(text, len, lim) : NULL;
    if (hit && hit->len == len) {
        proto_chain_ref(hit->chain);
        return hit->chain;
    }
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        proto_error_set(err, PROTO_E_INVALID_JSON, "/chain", "the chain is not JSON");
        return NULL;
    }
    proto_chain *c = proto_chain_decode_json(v, "/chain", lim, err);
    json_decref(v);
    if (c && keep) {
        chain_memo *m = &chains[chains_next++ % CHAIN_MEMO];
        proto_chain_unref(m->chain);
        m->len = len;
        memcpy(m->text, text, len);
        m->lim = *lim;
        proto_chain_ref(c);
        m->chain = c;
    }
    return c;
}

void proto_thread_release(void)
{
    for (size_t i = 0; i < CHAIN_MEMO; i++) {
        proto_chain_unref(chains[i].chain);
        chains[i].chain = NULL;
        chains[i].len = 0;
    }
}

proto_chain *proto_chain_resolve(json_t *chain, const char *chain_id, const proto_limits *lim,
                                 proto_chain_lookup_fn lookup, void *ud, proto_error *err)
{
    if (chain)
        return proto_chain_decode_json(chain, "/chain", lim, err);
    proto_chain *c = lookup && chain_id ? lookup(ud, PROTO_REG_CHAIN, chain_id) : NULL;
    if (!c)
        proto_error_set(err, PROTO_E_UNKNOWN_CHAIN, "/chain_id",
                        "no chain is registered with id \"%s\"", chain_id ? chain_id : "");
    return c;
}

proto_chain *proto_chain_decode(const char *body, size_t len, const proto_limits *lim,
                                proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_CHAIN, err);
    if (!root)
        return NULL;
    proto_chain *c = proto_chain_decode_json(root, "", lim, err);
    json_decref(root);
    return c;
}

json_t *proto_chain_describe(const proto_chain *c)
{
    json_t *d = json_object();
    if (!d)
        return NULL;
    json_object_set_new(d, "id", json_string(c->id));
    json_object_set_new(d, "kind", json_string(proto_chain_kind_names[c->kind]));
    proto_kinds[c->kind]->describe(c, d);
    proto__chain_collide_describe(c, d);
    json_t *sol = json_array();
    for (int s = PROTO_SOLVER_TWO_LINK; s < PROTO_SOLVER_COUNT; s++) {
        proto_options o;
        memset(&o, 0, sizeof o);
        o.solver = (proto_solver)s;
        proto_target t;
        memset(&t, 0, sizeof t);
        t.has_up = s == PROTO_SOLVER_THREE_LINK || s == PROTO_SOLVER_THREE_LINK_3D;
        proto_solver out;
        if (proto__resolve_solver(c, &o, &t, &out, NULL) == 0)
            json_array_append_new(sol, json_string(proto_solver_names[s]));
    }
    json_object_set_new(d, "solvers", sol);
    /* joints and urdf chains: which closed form, or why none */
    const ik_closed *k = proto__chain_closed((proto_chain *)c);
    if (k) {
        json_t *cf = json_object();
        json_object_set_new(cf, "family", json_string(ik_closed_kind_name(k->kind)));
        if (k->kind == IK_CLOSED_NONE) {
            json_object_set_new(cf, "why", json_string(ik_closed_why_name(k->why)));
            json_object_set_new(cf, "message", json_string(ik_closed_why_message(k->why)));
        } else {
            json_object_set_new(cf, "description", json_string(ik_closed_kind_message(k->kind)));
        }
        json_object_set_new(d, "closed_form", cf);
    }
    json_object_set_new(d, "memory_bytes", json_integer((json_int_t)c->memory));
    json_object_set(d, "chain", c->source);
    return d;
}
