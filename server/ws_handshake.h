/*
 * ws_handshake.h: the pure parts of the WebSocket opening handshake
 * (RFC 6455 section 4.2): the header checks and the Sec-WebSocket-Accept
 * key. No sockets and no libmicrohttpd here, so that they can be tested on
 * their own (tests/server/test_ws.c); server/ws.c applies them to a request.
 */
#ifndef SRV_WS_HANDSHAKE_H
#define SRV_WS_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>

/* Length of a Sec-WebSocket-Accept value (base64 of a 20-byte SHA-1). */
#define SRV_WS_ACCEPT_LEN 28

/* Computes Sec-WebSocket-Accept = base64(SHA-1(key + the RFC 6455 GUID))
 * into out (NUL-terminated). Returns 0, or -1 when key is not the base64
 * form of 16 bytes (RFC 6455 4.2.1 item 5), leaving out unchanged. */
int srv_ws_accept_key(const char *key, char out[SRV_WS_ACCEPT_LEN + 1]);

/* True when the comma-separated header value (e.g. "keep-alive, Upgrade")
 * contains token, compared case-insensitively with surrounding blanks
 * ignored. NULL value: false. */
bool srv_ws_header_has_token(const char *value, const char *token);

/* True when origin equals (case-insensitively, as RFC 6454 serialises
 * scheme and host in lower case) one of the n allowed origins, or when n is
 * 0 (no list configured: every origin, and no Origin header, is allowed).
 * With a list, a missing Origin (NULL) is allowed too: it comes from
 * non-browser clients, which an Origin check cannot restrict anyway. */
bool srv_ws_origin_allowed(const char *origin, const char *const *allowed, size_t n);

#endif /* SRV_WS_HANDSHAKE_H */
