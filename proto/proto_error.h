/*
 * proto_error.h: the one table of wire error codes, and the caller-owned
 * error every proto/ decoder fills in.
 *
 * Like jansson's json_error_t, a proto_error is a fixed-size struct owned by
 * the caller: decoding never allocates an error. A rejection names which
 * class of error it is (code, a row of PROTO_ERROR_MAP), what was wrong
 * (message) and where (path, an RFC 6901 JSON pointer such as
 * "/target/position/2", or "" for the whole document; for URDF, the joint or
 * link name inside the message). Its JSON form, over HTTP and in a stream's
 * "error" message alike, is
 *   {"error":{"code":"invalid_request","message":"...","path":"/..."}}
 *
 * PROTO_ERROR_MAP is the only list of codes (libuv's UV_ERRNO_MAP habit):
 * the enum, the wire names, the HTTP status the daemon answers with and the
 * MoveIt code (moveit_msgs/MoveItErrorCodes) where one applies (0 where
 * none does) are all generated from it, so they cannot drift apart.
 * proto/README.md's error table is checked against it row by row
 * (tests/proto/test_fixtures.c). The HTTP column is data for the daemon
 * (server/ maps a code to its status); proto itself never speaks HTTP, and
 * on a WebSocket stream no status is sent.
 *
 *   X(ENUM, wire name, HTTP status, MoveIt code, what it means)
 */
#ifndef PROTO_ERROR_H
#define PROTO_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#define PROTO_ERROR_MAP(X)                                                                         \
    X(INVALID_JSON, "invalid_json", 400, -16,                                                      \
      "the body is not JSON (syntax, duplicate keys, a number that overflows, an empty body)")     \
    X(INVALID_REQUEST, "invalid_request", 400, -16,                                                \
      "a value is missing, of the wrong type, out of range, non-finite, an unknown field, a "      \
      "member that does not apply")                                                                \
    X(UNKNOWN_TYPE, "unknown_type", 400, 0,                                                        \
      "WebSocket: \"type\" is none of the client messages")                                        \
    X(STREAM_EXISTS, "stream_exists", 400, 0,                                                      \
      "WebSocket: \"open\" with the name of an open stream")                                       \
    X(TOO_MANY_STREAMS, "too_many_streams", 400, 0,                                                \
      "WebSocket: more streams than a connection may have")                                        \
    X(UNAUTHORIZED, "unauthorized", 401, 0, "--token is set and the request lacks it")             \
    X(FORBIDDEN_ORIGIN, "forbidden_origin", 403, 0, "a browser Origin outside --allow-origin")     \
    X(NOT_FOUND, "not_found", 404, 0, "no such endpoint")                                          \
    X(UNKNOWN_CHAIN, "unknown_chain", 404, -15, "chain_id names no registered chain")             \
    X(UNKNOWN_SCENE, "unknown_scene", 404, 0, "scene_id names no registered scene")               \
    X(UNKNOWN_STREAM, "unknown_stream", 404, 0, "WebSocket: no stream of that name is open")       \
    X(METHOD_NOT_ALLOWED, "method_not_allowed", 405, 0, "the endpoint does not take that method")  \
    X(REQUEST_TIMEOUT, "request_timeout", 408, 0,                                                  \
      "the request was not received whole within --request-timeout")                               \
    X(TOO_LARGE, "too_large", 413, 0,                                                              \
      "a configured limit (body, joints, targets, URDF, registry memory, path samples) is "        \
      "exceeded")                                                                                  \
    X(INVALID_CHAIN, "invalid_chain", 422, -15,                                                    \
      "the chain cannot be built (zero-length links, a bad joint, not a serial chain)")           \
    X(INVALID_URDF, "invalid_urdf", 422, -15, "the URDF document is malformed or unusable")        \
    X(INVALID_SRDF, "invalid_srdf", 422, -15,                                                      \
      "the SRDF document is malformed or names links the URDF does not have")                      \
    X(UPGRADE_REQUIRED, "upgrade_required", 426, 0,                                                \
      "GET /v1/stream without the WebSocket upgrade")                                              \
    X(INTERNAL, "internal", 500, 99999,                                                            \
      "ikd failed, not the request: out of memory, work that could not be queued, a failed "       \
      "upgrade")                                                                                   \
    X(OVERLOADED, "overloaded", 503, 0,                                                            \
      "the solver queue is full, or request bodies in flight fill --body-budget; send again "      \
      "later")                                                                                     \
    X(SHUTTING_DOWN, "shutting_down", 503, 0, "a WebSocket upgrade while ikd shuts down")

typedef enum proto_errcode {
    PROTO_E_NONE = 0, /* no error (a cleared proto_error) */
#define PROTO_ERROR_ENUM(name, wire, http, moveit, text) PROTO_E_##name,
    PROTO_ERROR_MAP(PROTO_ERROR_ENUM)
#undef PROTO_ERROR_ENUM
        PROTO_E_COUNT
} proto_errcode;

typedef struct proto_error {
    proto_errcode code;
    char message[256];
    char path[256];
} proto_error;

/* Fills *e (which may be NULL: then nothing happens). path may be NULL for
 * "". The message is printf-formatted and truncated to fit. Returns -1 so a
 * decoder can write "return proto_error_set(...);". */
int proto_error_set(proto_error *e, proto_errcode code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The formatter of every message above: snprintf's, into buf (size bytes,
 * NUL-terminated, truncated; returns the length the whole text needs),
 * except that %g without a precision prints the shortest text that reads
 * back as the same double, in fixed notation for integers below 1e16
 * ("1000000.5", "1000000", "0.1", "1e-07"; %g wrote "1e+06" for the first
 * two), so that the numbers of a message (a bound and the value that broke
 * it) round-trip. */
size_t proto_error_format_text(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears *e to "no error" (PROTO_E_NONE, empty strings). */
void proto_error_clear(proto_error *e);

/* The wire name of a code ("invalid_request"); "" for PROTO_E_NONE and
 * anything outside the table. Static. */
const char *proto_error_name(proto_errcode code);

/* The MoveIt code of a code, 0 when none applies. */
int proto_error_moveit(proto_errcode code);

/* Writes the JSON error body into buf (NUL-terminated, truncated to size)
 * and returns the length it needed, like snprintf. Strings are escaped. */
size_t proto_error_format(const proto_error *e, char *buf, size_t size);

/* The error object {"code","message","path"} of e into w (proto_json_write.h),
 * as the batch of items and the stream messages answer it: a message cut
 * inside a UTF-8 sequence is answered "(message not printable)", with an
 * empty path. false, with nothing written, when out of memory. */
struct proto_jw;
bool proto_error_write(struct proto_jw *w, const proto_error *e);

#endif /* PROTO_ERROR_H */
