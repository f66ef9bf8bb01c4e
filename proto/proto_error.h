/*
 * proto_error.h: the caller-owned error every proto/ decoder fills in.
 *
 * Like jansson's json_error_t, it is a fixed-size struct owned by the caller:
 * decoding never allocates an error. A rejection names what was wrong
 * (message), where (path, an RFC 6901 JSON pointer such as
 * "/target/position/2", or "" for the whole document; for URDF, the joint or
 * link name inside the message) and which class of error it is (code), plus
 * the HTTP status the daemon answers with. Its JSON form is
 *   {"error":{"code":"invalid_request","message":"...","path":"/..."}}
 *
 * Codes in use, with the HTTP status they are set with (proto/README.md
 * documents them for clients; tests/proto/test_fixtures.c checks that every
 * code the sources of proto/ and server/ set is listed here and there):
 *   invalid_json        (400) the body is not JSON (syntax, duplicate keys,
 *                             a number that overflows, an empty body)
 *   invalid_request     (400) a value is missing, of the wrong type, out of
 *                             range, non-finite, an unknown field, a member
 *                             that does not apply...
 *   unknown_type        (400) WebSocket: "type" is none of the client messages
 *   stream_exists       (400) WebSocket: "open" with the name of an open stream
 *   too_many_streams    (400) WebSocket: more streams than a connection may have
 *   unauthorized        (401) --token is set and the request lacks it
 *   forbidden_origin    (403) a browser Origin outside --allow-origin
 *   not_found           (404) no such endpoint
 *   unknown_chain       (404) chain_id names no registered chain
 *   unknown_stream      (404) WebSocket: no stream of that name is open
 *   method_not_allowed  (405) the endpoint does not take that method
 *   request_timeout     (408) the request was not received whole within
 *                             --request-timeout (written by server/guard.c)
 *   too_large           (413) a configured limit (body, joints, targets, URDF,
 *                             registry memory, path samples) is exceeded
 *   invalid_chain       (422) the chain cannot be built (zero-length links, bad
 *                             joint, not a serial chain...)
 *   invalid_urdf        (422) the URDF document is malformed or unusable
 *   upgrade_required    (426) GET /v1/stream without the WebSocket upgrade
 *   internal            (500) ikd failed, not the request: out of memory, work
 *                             that could not be queued, a failed upgrade
 *   overloaded          (503) the solver queue is full, or request bodies in
 *                             flight fill --body-budget; send again later
 *   shutting_down       (503) a WebSocket upgrade while ikd shuts down
 * On a WebSocket the error travels in an "error" message and the status is
 * not sent.
 */
#ifndef PROTO_ERROR_H
#define PROTO_ERROR_H

#include <stddef.h>

typedef struct proto_error {
    int http_status;
    char code[32];
    char message[256];
    char path[256];
} proto_error;

/* Fills *e (which may be NULL: then nothing happens). path may be NULL for
 * "". The message is printf-formatted and truncated to fit. Returns -1 so a
 * decoder can write "return proto_error_set(...);". */
int proto_error_set(proto_error *e, int http_status, const char *code, const char *path,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Clears *e to "no error" (status 0, empty strings). */
void proto_error_clear(proto_error *e);

/* Writes the JSON error body into buf (NUL-terminated, truncated to size)
 * and returns the length it needed, like snprintf. Strings are escaped. */
size_t proto_error_format(const proto_error *e, char *buf, size_t size);

#endif /* PROTO_ERROR_H */
