/*
 * ws_handshake.h: the pure parts of the WebSocket opening handshake
 * (RFC 6455 section 4.2): the header checks and the Sec-WebSocket-Accept
 * key. No sockets and no libmicrohttpd here, so that they can be tested on
 * their own (tests/server/test_ws.c); server/ws_upgrade.c applies them to a request.
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

/* True when a client's close frame may carry code (RFC 6455 7.4.1 and
 * IANA's WebSocket Close Code registry): 1000 to 1003, 1007 to 1014, and
 * 3000 to 4999 (registered and private use). 1004 is reserved, 1005, 1006
 * and 1015 are never sent, and the rest of 0 to 2999 is unassigned. */
bool srv_ws_close_code_valid(unsigned code);

/* True when origin equals (case-insensitively, as RFC 6454 serialises
 * scheme and host in lower case) one of the n allowed origins, or when n is
 * 0 (no list configured: every origin, and no Origin header, is allowed).
 * With a list, a missing Origin (NULL) is allowed too: it comes from
 * non-browser clients, which an Origin check cannot restrict anyway. */
bool srv_ws_origin_allowed(const char *origin, const char *const *allowed, size_t n);

/* ---- browser-safe bearer token: the Sec-WebSocket-Protocol scheme --------
 *
 * Browsers cannot set Authorization on a WebSocket, but they can offer
 * subprotocols. A client offers two: SRV_WS_PROTOCOL ("ikd.v1"), the one ikd
 * selects and answers with, and SRV_WS_BEARER_PREFIX followed by the token
 * in unpadded base64url (RFC 4648 section 5), which only carries the token
 * and is never selected, so the token is not echoed back. The same scheme as
 * Kubernetes' API server (base64url.bearer.authorization.k8s.io.<token>).
 * Example for the token "s3cret":
 *   Sec-WebSocket-Protocol: ikd.v1, base64url.bearer.ikd.czNjcmV0
 */
#define SRV_WS_PROTOCOL "ikd.v1"
#define SRV_WS_BEARER_PREFIX "base64url.bearer.ikd."

typedef enum srv_ws_bearer {
    SRV_WS_BEARER_NONE = 0, /* no element with SRV_WS_BEARER_PREFIX offered */
    SRV_WS_BEARER_OK,       /* an element carries exactly token */
    SRV_WS_BEARER_WRONG     /* bearer elements offered, none carries token */
} srv_ws_bearer;

/* Looks for SRV_WS_BEARER_PREFIX elements in the comma-separated
 * Sec-WebSocket-Protocol value (may be NULL) and compares each one's rest
 * with the unpadded base64url form of token, in time independent of where
 * they differ. An empty token is never OK; a NULL token only detects
 * whether a bearer element is offered (NONE or WRONG). Allocates nothing. */
srv_ws_bearer srv_ws_protocol_bearer(const char *value, const char *token);

#endif /* SRV_WS_HANDSHAKE_H */
