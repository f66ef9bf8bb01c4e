/*
 * proto_id.c: content ids, the ids of registered chains and scenes: the
 * first 128 bits of SHA-256 (nettle) of an object's canonical text, in
 * lower-case hex. The canonical text is what jansson's json_dumps() gives
 * for the object with every integer made the real it equals (1 and 1.0
 * alike), keys sorted, compact, 17 significant digits (JSON_COMPACT |
 * JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY), written
 * here straight from the tree (section "the canonical text"). Equal
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
 * Written here rather than by json_dumps() of a copy of the tree with its
 * integers made reals, which cost several times the CPU (a new tree, and
 * snprintf("%.17g") for every number): the same text, written straight from
 * the tree. jansson's dump with these flags: objects with their keys in
 * strcmp order (its JSON_SORT_KEYS compares the keys' bytes, and keys hold
 * no NUL), ',' and ':' without spaces, strings escaped as jansson escapes
 * them (proto_jw_string, shared with every answer), every number as its
 * double with 17 significant digits in %.17g's layout and jansson's
 * touch-ups (".0" on integral values, no '+' or leading zeros in the
 * exponent: proto_json_format_digits(v, 17), the options.digits writer).
 * tests/proto/test_proto_json.c and tests/fuzz/fuzz_json.c compare it with
 * json_dumps() of the integers-made-reals tree byte for byte. */

typedef struct member {
    const char *key;
    json_t *value;
} member;

static int by_key(const void *a, const void *b)
{
    return strcmp(((const member *)a)->key, ((const member *)b)->key);
}

static void put_canonical(proto_jw *w, const json_t *v, int depth);

static void put_object(proto_jw *w, const json_t *v, int depth)
{
    member small[16], *m = small;
    size_t n = json_object_size(v), k = 0;
    if (n > sizeof small / sizeof small[0] && !(m = malloc(n * sizeof *m))) {
        w->oom = true;
        return;
    }
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        if (k == n)
            break;
        m[k++] = (member){key, x};
    }
    if (k <= sizeof small / sizeof small[0]) { /* every object of a chain */
        for (size_t i = 1; i < k; i++)
            for (size_t j = i; j > 0 && strcmp(m[j - 1].key, m[j].key) > 0; j--) {
                member t = m[j];
                m[j] = m[j - 1];
                m[j - 1] = t;
            }
    } else {
        qsort(m, k, sizeof *m, by_key);
    }
    proto_jw_raw(w, "{", 1);
    for (size_t i = 0; i < k; i++) {
        if (i)
            proto_jw_raw(w, ",", 1);
        proto_jw_string(w, m[i].key, strlen(m[i].key));
        proto_jw_raw(w, ":", 1);
        put_canonical(w, m[i].value, depth + 1);
    }
    proto_jw_raw(w, "}", 1);
    if (m != small)
        free(m);
}

static void put_canonical(proto_jw *w, const json_t *v, int depth)
{
    if (depth > 2048) { /* jansson's own parser stops far earlier */
        w->oom = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(w, v, depth);
        break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        proto_jw_raw(w, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i)
                proto_jw_raw(w, ",", 1);
            put_canonical(w, json_array_get(v, i), depth + 1);
        }
        proto_jw_raw(w, "]", 1);
        break;
    }
    case JSON_STRING:
        proto_jw_string(w, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        proto_jw_double_digits(w, (double)json_integer_value(v), 17);
        break;
    case JSON_REAL:
        proto_jw_double_digits(w, json_real_value(v), 17);
        break;
    case JSON_TRUE:
        proto_jw_raw(w, "true", 4);
        break;
    case JSON_FALSE:
        proto_jw_raw(w, "false", 5);
        break;
    case JSON_NULL:
        proto_jw_raw(w, "null", 4);
        break;
    }
}

char *proto__canonical_text(const json_t *v, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    put_canonical(&w, v, 0);
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
    put_canonical(&w, v, 0);
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
