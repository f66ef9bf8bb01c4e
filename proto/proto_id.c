/*
 * proto_id.c: content ids, the ids of registered chains and scenes: the
 * first 128 bits of SHA-256 (nettle) of an object's canonical text, in
 * lower-case hex. The canonical text is jansson's json_dumps() of the
 * object with every integer made the real it equals (1 and 1.0 alike),
 * keys sorted, compact, 17 significant digits (JSON_COMPACT |
 * JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY). Equal
 * objects therefore share an id across requests, replicas and restarts,
 * however their JSON was spaced or ordered; the text, and so every id,
 * must never change (ids name what Redis holds). Contract in proto_kind.h.
 */
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* v with every integer made the real it converts to: new objects and
 * arrays, the other values shared (a URDF's text is not copied); NULL when
 * out of memory. */
static json_t *ints_as_reals(const json_t *v)
{
    const char *key;
    json_t *x, *out = NULL;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        return json_real((double)json_integer_value(v));
    case JSON_OBJECT:
        out = json_object();
        json_object_foreach((json_t *)v, key, x)
        {
            if (!out || json_object_set_new_nocheck(out, key, ints_as_reals(x))) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    case JSON_ARRAY:
        out = json_array();
        json_array_foreach(v, i, x)
        {
            if (!out || json_array_append_new(out, ints_as_reals(x))) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    default:
        return json_incref((json_t *)v);
    }
}

char *proto__canonical_text(const json_t *v, size_t *len)
{
    json_t *r = ints_as_reals(v);
    char *text = r ? json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) |
                                       JSON_ENCODE_ANY)
                   : NULL;
    json_decref(r);
    if (text && len)
        *len = strlen(text);
    return text;
}

int proto__content_id(const json_t *v, char id[PROTO_ID_HEX + 1], char **text, size_t *len)
{
    size_t n;
    char *t = proto__canonical_text(v, &n);
    if (!t)
        return -1;
    proto__text_id(t, n, id);
    if (text) {
        *text = t;
        if (len)
            *len = n;
    } else {
        free(t);
    }
    return 0;
}
