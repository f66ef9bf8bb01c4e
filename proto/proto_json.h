/*
 * proto_json.h: the strict JSON reading every proto/ decoder is built on
 * (jansson underneath).
 *
 * Reading: one parse entry point (duplicate keys rejected, the body size
 * bounded, jansson's line and column in the message) and typed getters that
 * either store a checked value or fill the caller's proto_error with the JSON
 * pointer of the offending value and a message naming it the way a client
 * wrote it ("target.position[2] must be a finite number"). The text is read
 * by jansson's own json_loadb(), so trees and errors are jansson's. Objects
 * are checked against the list of fields they may carry, so an unknown (e.g.
 * misspelt) field is an error that names it instead of being ignored. Text
 * read without a tree (the hot paths) is the scanner's, proto/proto_scan.h.
 *
 * Numbers: every number the wire format accepts is finite (jansson itself
 * refuses NaN and Infinity literals and reals that overflow a double, such as
 * 1e400: that is an invalid_json error "real number overflow") and lies
 * within PROTO_MAX_ABS in magnitude unless a narrower range is asked for.
 * Reals that underflow (1e-400) read as 0. Integers must be JSON integers
 * (no fraction, no exponent).
 *
 * Writing lives behind its own header, proto/proto_json_write.h.
 *
 * Paths are RFC 6901 JSON pointers ("" is the whole document, "/a/0/b");
 * keys are escaped (~ as ~0, / as ~1). Buffers are PROTO_PATH_MAX bytes and a
 * longer path is truncated (the message still names the field).
 *
 * Every function is reentrant; nothing here keeps state.
 */
#ifndef PROTO_JSON_H
#define PROTO_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "proto/proto_error.h"

#define PROTO_PATH_MAX 256

/* Sanity bound on the magnitude of every number in a request (coordinates,
 * lengths, joint values, limits): 1e6. Anything larger is almost surely a
 * unit mistake and would lose the precision the solvers need. */
#define PROTO_MAX_ABS 1e6

/* "<base>/<key>" (key escaped) and "<base>/<i>" into out. */
void proto_json_path_key(char out[PROTO_PATH_MAX], const char *base, const char *key);
void proto_json_path_index(char out[PROTO_PATH_MAX], const char *base, size_t i);

/* The dotted form of a JSON pointer for messages: "/target/position/2" ->
 * "target.position[2]"; "" -> "the request". */
void proto_json_path_name(char *out, size_t size, const char *path);

/* Internal: the heap bytes jansson holds for the tree v (every node,
 * object hash table, array table and string, with malloc's per-block
 * overhead, as glibc rounds them on 64-bit machines). An estimate from
 * jansson 2.14's structures, within a few percent of the resident memory a
 * tree costs; what a registry bound counts. Shared subtrees are counted
 * each time they appear. */
size_t proto__json_tree_bytes(const json_t *v);

/* What a JSON text was sent as, so that a syntax error can say what the
 * text should have looked like there. */
typedef enum proto_json_ctx {
    PROTO_JSON_SOLVE = 0, /* a POST /v1/solve body: {"chain":...,"target":...} */
    PROTO_JSON_BATCH,     /* a POST /v1/solve/batch body: {"chain":...,"targets":[...]} */
    PROTO_JSON_CHAIN,     /* a POST /v1/chains body: a bare chain object */
    PROTO_JSON_STREAM,    /* a stream message: {"type":"open",...,"chain":...} */
    PROTO_JSON_SCENE      /* a POST /v1/scenes body: a scene object (no XML hint) */
} proto_json_ctx;

/* Parses a body of len bytes (need not be NUL-terminated) sent as ctx.
 * Rejects bodies longer than max_bytes (too_large, 413), empty bodies,
 * syntax errors and duplicate keys (invalid_json, 400, with line and column,
 * see proto_json_syntax_error). Returns a new reference or NULL with *err
 * set. */
json_t *proto_json_parse(const char *body, size_t len, size_t max_bytes, proto_json_ctx ctx,
                         proto_error *err);

/* Sets *err to the invalid_json error (400) for text, sent as ctx, that
 * jansson's reader refused with *je, worded the same for request bodies and
 * stream messages: "<jansson's reason> (line L, column C)". When the text
 * starts with '<' (a URDF sent as it is), a hint follows with the JSON that
 * ctx expects around a URDF chain ({"kind":"urdf","urdf":"<robot ...>",
 * "base":...,"tip":...}, bare for PROTO_JSON_CHAIN, as "chain" of a solve,
 * a batch or a stream's open message otherwise) and, over HTTP, the
 * command that prints the chain object (ikd chain). Text that starts with
 * a UTF-8 byte order mark gets a message saying so, whatever jansson said.
 * Returns -1. */
int proto_json_syntax_error(const char *text, size_t len, const json_error_t *je,
                            proto_json_ctx ctx, proto_error *err);

/* v must be an object whose keys are all in allowed (NULL-terminated). */
int proto_json_check_object(const json_t *v, const char *path, const char *const *allowed,
                            proto_error *err);

/* A required field: returns it, or NULL with err "<name> is required". */
json_t *proto_json_require(const json_t *obj, const char *path, const char *key,
                           proto_error *err);

/* A number within [lo, hi] (both finite). */
int proto_json_number(const json_t *v, const char *path, double lo, double hi, double *out,
                      proto_error *err);
/* A number > 0 and <= hi. */
int proto_json_positive(const json_t *v, const char *path, double hi, double *out,
                        proto_error *err);
/* A JSON integer within [lo, hi]. */
int proto_json_integer(const json_t *v, const char *path, long long lo, long long hi,
                       long long *out, proto_error *err);
int proto_json_bool(const json_t *v, const char *path, bool *out, proto_error *err);
/* A string; *out points into v (valid while v lives). max_len 0 = no bound. */
int proto_json_string(const json_t *v, const char *path, size_t max_len, const char **out,
                      proto_error *err);
/* A string out of names (NULL-terminated); *out gets its index. */
int proto_json_enum(const json_t *v, const char *path, const char *const *names, int *out,
                    proto_error *err);
/* An array with min..max elements; its size in *n. Exceeding max is
 * too_large (413) when too_large is true, else invalid_request. */
int proto_json_array(const json_t *v, const char *path, size_t min, size_t max, bool too_large,
                     size_t *n, proto_error *err);
/* An array of exactly n numbers, each within [-PROTO_MAX_ABS, PROTO_MAX_ABS]. */
int proto_json_numbers(const json_t *v, const char *path, size_t n, double *out,
                       proto_error *err);

/* The getters' words, for readers that check values another way (the
 * codec, proto_codec.h): "<name of path> <what>"; "must be one of" the
 * names (NULL-terminated); d not finite or outside [lo, hi] (0 when it is
 * neither). Each returns -1 with *err set. */
int proto__bad(proto_error *err, const char *path, const char *what);
int proto__enum_error(proto_error *err, const char *path, const char *const *names);
int proto__number_in(double d, const char *path, double lo, double hi, proto_error *err);

/* A new JSON array of n doubles (a NULL return means out of memory). */
json_t *proto_json_array_of(const double *v, size_t n);

#endif /* PROTO_JSON_H */
