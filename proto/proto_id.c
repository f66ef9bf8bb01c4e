/*
 * proto_id.c: content ids, the ids of registered chains and scenes: the
 * first 128 bits of SHA-256 (nettle) of an object's canonical text (keys
 * sorted, every integer written as the real it equals:
 * proto_jw_canonical_reals), in lower-case hex. Equal objects therefore
 * share an id across requests, replicas and restarts, however their JSON
 * was spaced or ordered. Contract in proto_kind.h.
 */
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdlib.h>

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

int proto__content_id(const json_t *v, char id[PROTO_ID_HEX + 1], char **text, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_jw_canonical_reals(&w, v);
    if (w.oom) {
        proto_jw_release(&w);
        return -1;
    }
    proto__text_id(w.p, w.len, id);
    if (!text) {
        proto_jw_release(&w);
        return 0;
    }
    *text = proto_jw_finish(&w, len);
    return *text ? 0 : -1;
}
