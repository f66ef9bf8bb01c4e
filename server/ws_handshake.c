/*
 * ws_handshake.c: RFC 6455 section 4.2 server-side checks and the accept
 * key, with nettle's SHA-1 and base64 (see ws_handshake.h).
 *
 * The accept key is base64(SHA-1(Sec-WebSocket-Key || GUID)) with the GUID
 * "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" (RFC 6455 1.3; its example key
 * "dGhlIHNhbXBsZSBub25jZQ==" gives "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", which
 * tests/server/test_ws.c checks).
 *
 * The bearer token in Sec-WebSocket-Protocol (see ws_handshake.h) is
 * compared by encoding the expected token with nettle's base64url, never by
 * decoding what the client sent, so there is one canonical form (unpadded).
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

/* Compares one protocol element (start..end, without the prefix) with the
 * unpadded base64url encoding of token, three token bytes at a time. Every
 * byte of the token is encoded and compared, so the time depends on the
 * token's length only. */
static bool bearer_matches(const char *start, size_t len, const char *token)
{
    size_t tlen = strlen(token), pos = 0;
    unsigned char diff = (unsigned char)(tlen == 0);
    for (size_t i = 0; i < tlen; i += 3) {
        size_t n = tlen - i < 3 ? tlen - i : 3;
        char enc[8]; /* at most 4 used: 3 bytes or a padded group */
        struct base64_encode_ctx ec;
        base64url_encode_init(&ec);
        size_t got = base64_encode_update(&ec, enc, n, (const uint8_t *)token + i);
        base64_encode_final(&ec, enc + got);
        /* unpadded: 1 byte -> 2 characters, 2 -> 3, 3 -> 4 */
        size_t keep = n + 1;
        for (size_t k = 0; k < keep; k++, pos++) {
            unsigned char have = pos < len ? (unsigned char)start[pos] : 0;
            diff |= (unsigned char)(have ^ (unsigned char)enc[k]);
        }
    }
    diff |= (unsigned char)(pos != len);
    return diff == 0;
}

srv_ws_bearer srv_ws_protocol_bearer(const char *value, const char *token)
{
    if (!value)
        return SRV_WS_BEARER_NONE;
    static const char prefix[] = SRV_WS_BEARER_PREFIX;
    const size_t plen = sizeof prefix - 1;
    srv_ws_bearer found = SRV_WS_BEARER_NONE;
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
        size_t len = (size_t)(end - start);
        if (len < plen || strncmp(start, prefix, plen) != 0)
            continue;
        if (token && bearer_matches(start + plen, len - plen, token))
            return SRV_WS_BEARER_OK;
        found = SRV_WS_BEARER_WRONG;
    }
    return found;
}

bool srv_ws_close_code_valid(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}
