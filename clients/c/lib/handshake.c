/*
 * handshake.c: the WebSocket opening handshake of RFC 6455 section 4, by
 * hand (Debian 12's libcurl has no usable WebSocket API): the HTTP/1.1
 * upgrade request with a random Sec-WebSocket-Key, the ikd.v1 subprotocol
 * (proto/STREAM.md, "Connecting") and the bearer token in Authorization;
 * and the check of the answer: status 101, "Upgrade: websocket",
 * "Connection: Upgrade", Sec-WebSocket-Accept equal to base64(SHA-1(key +
 * the RFC's GUID)) computed with nettle, and no subprotocol other than
 * ikd.v1 selected. A refused upgrade's status and Content-Length are
 * returned so that the connection can read ikd's error object.
 */
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/random.h>

#include "conn.h"

#define WS_GUID  "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define HEAD_MAX 16384 /* an answer's head larger than this is refused */

int ikd__handshake_request(ikd__buf *out, const char *path, const char *host_header,
                           const char *token, char *accept, ikd_error *err)
{
    uint8_t raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return ikd__fail(err, IKD_E_HANDSHAKE, "getrandom failed for Sec-WebSocket-Key");
    char key[BASE64_ENCODE_RAW_LENGTH(16) + 1];
    base64_encode_raw(key, sizeof raw, raw);
    key[BASE64_ENCODE_RAW_LENGTH(16)] = '\0';

    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&sha);
    sha1_update(&sha, strlen(key), (const uint8_t *)key);
    sha1_update(&sha, strlen(WS_GUID), (const uint8_t *)WS_GUID);
    sha1_digest(&sha, sizeof digest, digest);
    base64_encode_raw(accept, sizeof digest, digest);
    accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';

    char head[1024];
    int n = snprintf(head, sizeof head,
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: ikd.v1\r\n"
                     "User-Agent: libikdclient/" IKD_CLIENT_VERSION "\r\n",
                     path, host_header, key);
    if (n < 0 || (size_t)n >= sizeof head)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the URL's host or path is too long");
    if (ikd__buf_put(out, head, (size_t)n))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if (token && (ikd__buf_puts(out, "Authorization: Bearer ") || ikd__buf_puts(out, token) ||
                  ikd__buf_puts(out, "\r\n")))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if (ikd__buf_puts(out, "\r\n"))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

/* Whether the comma-separated list value holds token (case-insensitive). */
static bool list_has(const char *v, size_t n, const char *token)
{
    size_t k = strlen(token);
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - s == k && strncasecmp(v + s, token, k) == 0)
            return true;
    }
    return false;
}

int ikd__handshake_answer(const char *p, size_t n, const char *accept, size_t *used, long *body_len,
                          ikd_error *err)
{
    *used = 0;
    *body_len = -1;
    const char *end = NULL;
    for (size_t i = 0; i + 3 < n; i++) {
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n') {
            end = p + i + 4;
            break;
        }
    }
    if (!end) {
        if (n > HEAD_MAX)
            return ikd__fail(err, IKD_E_HANDSHAKE, "the upgrade's answer has no end of head");
        return 0;
    }
    *used = (size_t)(end - p);
    /* the status: the three digits at p[9..11], within the n bytes (sscanf
     * skipped line ends and read on to a NUL past them) */
    const unsigned char *d = (const unsigned char *)p + 9;
    if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0 || !isdigit(d[0]) || !isdigit(d[1]) ||
        !isdigit(d[2]))
        return ikd__fail(err, IKD_E_HANDSHAKE, "the upgrade was answered by something not HTTP");
    int status = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
    bool upgrade = false, connection = false, accepted = false, protocol_ok = true;
    const char *line = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1;
    while (line < end - 2) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon) {
            size_t name_len = (size_t)(colon - line);
            const char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            size_t vn = (size_t)(eol - v);
            while (vn && (v[vn - 1] == '\r' || v[vn - 1] == ' ' || v[vn - 1] == '\t'))
                vn--;
#define NAME_IS(lit) (name_len == sizeof(lit) - 1 && strncasecmp(line, lit, name_len) == 0)
            if (NAME_IS("upgrade"))
                upgrade = list_has(v, vn, "websocket");
            else if (NAME_IS("connection"))
                connection = list_has(v, vn, "upgrade");
            else if (NAME_IS("sec-websocket-accept"))
                accepted = vn == strlen(accept) && memcmp(v, accept, vn) == 0;
            else if (NAME_IS("sec-websocket-protocol"))
                protocol_ok = vn == 6 && memcmp(v, "ikd.v1", 6) == 0;
            else if (NAME_IS("content-length"))
                *body_len = strtol(v, NULL, 10);
#undef NAME_IS
        }
        line = eol + 1;
    }
    if (status != 101) {
        if (status < 200)
            return ikd__fail(err, IKD_E_HANDSHAKE, "the upgrade was answered %d", status);
        return status;
    }
    if (!upgrade || !connection)
        return ikd__fail(err, IKD_E_HANDSHAKE,
                         "the 101 answer lacks \"Upgrade: websocket\" or \"Connection: Upgrade\"");
    if (!accepted)
        return ikd__fail(err, IKD_E_HANDSHAKE,
                         "the 101 answer's Sec-WebSocket-Accept is missing or wrong");
    if (!protocol_ok)
        return ikd__fail(err, IKD_E_HANDSHAKE,
                         "the 101 answer selects a subprotocol other than "
                         "ikd.v1");
    return 101;
}
