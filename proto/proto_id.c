/*
 * proto_id.c: content ids, the ids of registered chains and scenes: the
 * first 128 bits of SHA-256 (nettle) of an object's canonical text, in
 * lower-case hex. The canonical text is what jansson's json_dumps() gives
 * for the object with every integer made the real it equals (1 and 1.0
 * alike), keys sorted, compact, 17 significant digits (JSON_COMPACT |
 * JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY), written
 * straight from the tree by proto_jw_canonical (proto_json_write.c). Equal
 * objects therefore share an id across requests, replicas and restarts,
 * however their JSON was spaced or ordered; the text, and so every id,
 * must never change (ids name what Redis holds). Contract in proto_kind.h.
 */
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json_write.h"
#include "proto/proto_kind.h"

void proto__text_id(const char *text, size_t len, char id[PROTO_ID_HEX + 1])
{
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, (const uint8_t *)text);
    sha256_digest(&ctx, sizeof digest, digest);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < PROTO_ID_HEX / 2; i++) {
        id[2 * i] = hex[digest[i] >> 4];
        id[2 * i + 1] = hex[digest[i] & 15];
    }
    id[PROTO_ID_HEX] = '\0';
}

/* ---- the canonical text ------------------------------------------------
 *
 * Written straight from the tree by proto_json_write.c's tree writer
 * (proto_jw_canonical) rather than by json_dumps() of a copy of the tree
 * with its integers made reals, which cost several times the CPU (a new
 * tree, and snprintf("%.17g") for every number): the same text.
 * tests/proto/test_proto_json.c and tests/fuzz/fuzz_json.c compare it with
 * json_dumps() of the integers-made-reals tree byte for byte. */

char *proto__canonical_text(const json_t *v, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_jw_canonical(&w, v);
    return proto_jw_finish(&w, len);
}

/* Clients that send their chain inline send the same one again and again
 * (an animation tool's limb on every drag event), and hashing it was a
 * sizeable part of decoding it from a tree. Each thread therefore
 * remembers the ids of the last few short canonical texts it hashed: a
 * pure memo (the id is a function of the text, which is compared in full),
 * per thread so that it needs no lock, and small (ID_MEMO entries of at
 * most ID_MEMO_TEXT bytes). */
#define ID_MEMO 4
#define ID_MEMO_TEXT 256

typedef struct id_memo {
    size_t len; /* 0: empty */
    char text[ID_MEMO_TEXT];
    char id[PROTO_ID_HEX + 1];
} id_memo;

static _Thread_local id_memo memo[ID_MEMO];
static _Thread_local unsigned memo_next;

static void memo_id(const char *text, size_t len, char id[PROTO_ID_HEX + 1])
{
    if (len > ID_MEMO_TEXT) {
        proto__text_id(text, len, id);
        return;
    }
    for (size_t i = 0; i < ID_MEMO; i++)
        if (memo[i].len == len && memcmp(memo[i].text, text, len) == 0) {
            memcpy(id, memo[i].id, PROTO_ID_HEX + 1);
            return;
        }
    proto__text_id(text, len, id);
    id_memo *m = &memo[memo_next++ % ID_MEMO];
    m->len = len;
    memcpy(m->text, text, len);
    memcpy(m->id, id, PROTO_ID_HEX + 1);
}

int proto__content_id(const json_t *v, char id[PROTO_ID_HEX + 1], char **text, size_t *len)
{
    char buf[1024]; /* a chain's text fits, unless it holds a URDF */
    proto_jw w;
    proto_jw_init(&w, buf, sizeof buf);
    proto_jw_canonical(&w, v);
    if (w.oom) {
        proto_jw_release(&w);
        return -1;
    }
    memo_id(w.p, w.len, id);
    if (!text) {
        proto_jw_release(&w);
        return 0;
    }
    *text = proto_jw_finish(&w, len);
    return *text ? 0 : -1;
}
