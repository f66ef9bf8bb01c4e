/*
 * ws_handshake.c: RFC 6455 section 4.2 server-side checks and the accept
 * key, with nettle's SHA-1 and base64 (see ws_handshake.h).
 *
 * The accept key is base64(SHA-1(Sec-WebSocket-Key || GUID)) with the GUID
 * "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" (RFC 6455 1.3; its example key
 * "dGhlIHNhbXBsZSBub25jZQ==" gives "s3pPLMBiTxaeKmzOYCD9iGZOxoo=").
 */
#include "server/ws_handshake.h"

#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <string.h>
#include <strings.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int srv_ws_accept_key(const char *key, char out[SRV_WS_ACCEPT_LEN + 1])
{
    if (!key)
        return -1;
    size_t klen = strlen(key);
    /* 16 bytes encode to 22 characters plus "==". */
    if (klen != 24 || key[22] != '=' || key[23] != '=')
        return -1;
    struct base64_decode_ctx dc;
    uint8_t raw[BASE64_DECODE_LENGTH(24)];
    size_t rlen = sizeof raw;
    base64_decode_init(&dc);
    if (!base64_decode_update(&dc, &rlen, raw, klen, key) || !base64_decode_final(&dc) ||
        rlen != 16)
        return -1;

    struct sha1_ctx sc;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&sc);
    sha1_update(&sc, klen, (const uint8_t *)key);
    sha1_update(&sc, sizeof ws_guid - 1, (const uint8_t *)ws_guid);
    sha1_digest(&sc, sizeof digest, digest);
    base64_encode_raw(out, sizeof digest, digest);
    out[SRV_WS_ACCEPT_LEN] = '\0';
    return 0;
}

bool srv_ws_header_has_token(const char *value, const char *token)
{
    if (!value || !token)
        return false;
    size_t tlen = strlen(token);
    const char *p = value;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((size_t)(end - start) == tlen && tlen > 0 && strncasecmp(start, token, tlen) == 0)
            return true;
    }
    return false;
}

bool srv_ws_origin_allowed(const char *origin, const char *const *allowed, size_t n)
{
    if (n == 0 || !origin)
        return true;
    for (size_t i = 0; i < n; i++)
        if (allowed[i] && strcasecmp(origin, allowed[i]) == 0)
            return true;
    return false;
}
