/*
 * proto_stream.h: the messages of a WebSocket stream (GET /v1/stream), decoded and
 * encoded without any socket. proto/STREAM.md documents them for clients;
 * server/ws*.c moves them over the connection.
 *
 * Client -> ikd (one JSON object per WebSocket text message):
 *   {"type":"open",  "stream":"s1", "chain":{...} | "chain_id":"...", "options":{...},
 *                    "seed":[...]}
 *   {"type":"close", "stream":"s1"}
 *   {"type":"target","stream":"s1", "seq":17, "target":{...}, "seed":[...]}
 *   {"type":"path",  "stream":"s1", "seq":18, "waypoints":[{target},...],
 *                    "rate_hz":60, "duration_s":2}
 *   {"type":"tick",  "seq":19, "targets":[{"stream":"c1", "seq":7, "target":{...},
 *                    "seed":[...]}, ...]}
 *                    (the targets of many streams at once; "seq" of a target
 *                    defaults to the tick's)
 * ikd -> client:
 *   {"type":"opened","stream":"s1","chain_id":"..."}
 *   {"type":"closed","stream":"s1"}
 *   {"type":"solution","stream":"s1","seq":17,"skipped":0,"result":{...}}
 *      (path samples add "index":i,"count":n)
 *   {"type":"path_end","stream":"s1","seq":18,"sent":n,"skipped":0,"count":n,"completed":true}
 *   {"type":"error","stream":"s1","seq":17,"error":{"code":..,"message":..,"path":..}}
 *   {"type":"tick_solution","seq":19,"skipped":0,"solutions":[
 *       {"stream":"c1","seq":7,"skipped":0,"result":{...}},
 *       {"stream":"c2","seq":19,"error":{...}}, ...]}
 *      (one per target of the tick, in its order)
 *
 * Decoding validates the envelope only (type, stream name, seq, the shape of
 * a path, that a tick has a non-empty array of targets); each target of a
 * tick is read on its own (proto_stream_tick_target_get), so that one bad
 * target is answered with its error and the others are solved; the chain, options, seeds and targets are decoded by the stream's
 * typed session (proto/proto_session.h), with JSON paths that point into the
 * same message.
 *
 * Paths: waypoints are targets whose "position" ([x,y,z]) is interpolated
 * linearly and whose "orientation" (quaternion [x,y,z,w], either on every
 * waypoint or on none) by slerp; every other member of a sample is the one
 * of the waypoint that starts its segment (proto_session_sample does it on
 * the decoded targets). The waypoints are equally spaced in time over
 * duration_s; sample i is at time i / rate_hz, the last one exactly on the
 * last waypoint.
 *
 * Thread-safety: no globals; a decoded message or path is used by one thread
 * at a time. Nothing here blocks or touches the event loop.
 */
#ifndef PROTO_STREAM_H
#define PROTO_STREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto_error.h"
#include "proto/proto_json_write.h"

/* Stream names: 1..64 characters of [A-Za-z0-9_.:-] (never need escaping). */
#define PROTO_STREAM_NAME_MAX 64
/* Limits of a path message. */
#define PROTO_STREAM_MAX_WAYPOINTS 1024
#define PROTO_STREAM_MAX_SAMPLES   100000
#define PROTO_STREAM_MAX_RATE_HZ   1000.0
#define PROTO_STREAM_DEFAULT_RATE_HZ 60.0

/* Largest seq magnitude: 2^53 - 1, every such integer survives a JavaScript
 * client's doubles. */
#define PROTO_STREAM_SEQ_MAX 9007199254740991LL

typedef enum proto_stream_type {
    PROTO_STREAM_OPEN = 0,
    PROTO_STREAM_CLOSE,
    PROTO_STREAM_TARGET,
    PROTO_STREAM_PATH,
    PROTO_STREAM_TICK,
    PROTO_STREAM_SCENE
} proto_stream_type;

typedef struct proto_stream_path proto_stream_path;
/* A target of a tick read without a JSON tree (proto_codec.h). */
typedef struct proto_stream_raw proto_stream_raw;

/* One decoded client message. The json_t pointers are borrowed from root,
 * which the message owns. */
typedef struct proto_stream_msg {
    proto_stream_type type;
    char stream[PROTO_STREAM_NAME_MAX + 1]; /* "" when unknown */
    bool has_seq;
    long long seq;
    json_t *root;        /* the whole message (owned) */
    json_t *chain;       /* open: inline chain object, or NULL */
    const char *chain_id;/* open: registered chain id, or NULL */
    json_t *options;     /* open: options object, or NULL */
    json_t *scene;       /* open (or NULL), scene: the scene object
                            (validated later, proto_session_scene) */
    const char *scene_id;/* open, scene: a registered scene's id, or NULL
                            (never beside scene) */
    json_t *target;      /* target: the target value (validated later) */
    json_t *seed;        /* open, target: the seed value, or NULL (validated
                            later, as HTTP's "seed") */
    proto_stream_path *path; /* path: the decoded path (owned) */
    json_t *targets;     /* tick: the "targets" array, at least one element */
    proto_stream_raw *raw; /* tick, target read without a tree: the targets
                              (owned; then root, target, targets are NULL) */
    size_t nraw;
    proto_stream_raw *raw_tips; /* the raw targets' tips (owned; proto_stream_raw.tipv) */
    bool binary; /* a binary tick (proto_stream_decode_binary): answered in binary */
} proto_stream_msg;

/* Decodes one text message of len bytes (need not be NUL-terminated).
 * Returns 0 with *out filled (release with proto_stream_msg_free), or -1
 * with *err set (codes invalid_json, invalid_request, unknown_type,
 * too_large; http_status is meaningless here) and nothing allocated; even
 * then out->type, out->stream and out->has_seq/seq hold what could be read,
 * so that the error reply can name the stream and seq. A tick has no
 * "stream" (out->stream stays ""); its targets are not read here, except
 * that a tick of the common shape (every target with "stream", optional
 * "seq", and a "target" whose members the text mode takes, proto_codec.h,
 * a tree's "tips" each a tip's target of such members; no "seed"; keys
 * unescaped and unique; no escapes in strings)
 * is read straight into typed targets without building a JSON tree: its
 * targets then refer to text, which must outlive their use
 * (proto_session_tick_target()). Both readings decode the same tick to the
 * same targets (tests/proto/test_stream.c proves it differentially). */
int proto_stream_decode(const char *text, size_t len, proto_stream_msg *out, proto_error *err);
/* The same, and a target message of that common shape ("type", "stream",
 * "seq" and such a "target"; no "seed") is read without a tree too: its
 * target is then out->raw (nraw 1, out->target NULL), referring to text,
 * which must outlive its use (proto_session_message_target()); the
 * daemon's reading. */
int proto_stream_decode_raw(const char *text, size_t len, proto_stream_msg *out,
                            proto_error *err);

/* Decodes one binary message of len bytes: a binary tick (proto/STREAM.md,
 * "Binary ticks"; proto_stream_binary.c), the JSON tick's twin. As
 * proto_stream_decode: 0 with *out a tick whose targets are read
 * (out->binary set: its answer is written in binary, below), or -1 with
 * *err set (invalid_request, worded as the JSON tick's errors where the
 * JSON form has them) and out->has_seq/seq as far as they could be read. */
int proto_stream_decode_binary(const char *data, size_t len, proto_stream_msg *out,
                               proto_error *err);

/* Releases what a successful decode allocated and clears *m. NULL is fine;
 * calling it on a cleared message is fine. */
void proto_stream_msg_free(proto_stream_msg *m);

/* True when s[0..len) is valid UTF-8 (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF). A text message that is not gets the
 * connection closed with 1007. */
bool proto_stream_utf8_valid(const char *s, size_t len);

/* True when name is a valid stream name (see PROTO_STREAM_NAME_MAX). */
bool proto_stream_name_valid(const char *name);

/* ---- ticks ------------------------------------------------------------- */

/* One target of a tick: {"stream":..,"seq":..,"target":{..},"seed":[..]},
 * "seq" and "seed" optional. The json_t pointers are borrowed from the
 * message. */
typedef struct proto_stream_tick_target {
    char stream[PROTO_STREAM_NAME_MAX + 1]; /* "" when missing or invalid */
    bool has_seq;
    long long seq;       /* the target's own seq, else the tick's */
    const json_t *target;
    const json_t *seed;  /* or NULL */
    const proto_stream_raw *raw; /* instead of target: read without a tree */
} proto_stream_tick_target;

/* Targets of a decoded tick message (0 for any other message). */
size_t proto_stream_tick_count(const proto_stream_msg *m);
/* Reads target i of a tick message (its envelope: the stream name, seq,
 * that "target" is there, no unknown member; the target and seed
 * themselves are the session's to decode, proto_session_tick_target). 0,
 * or -1 with *err set (invalid_request, paths "/targets/<i>/..."; i out of
 * range is invalid_request at "/targets"), and then too *out holds the
 * stream and seq as far as they could be read, for the target's answer.
 * Allocates nothing. */
int proto_stream_tick_target_get(const proto_stream_msg *m, size_t i,
                                 proto_stream_tick_target *out, proto_error *err);

/* ---- paths ------------------------------------------------------------- */

/* Number of samples of a path (>= 2). */
size_t proto_stream_path_count(const proto_stream_path *p);
double proto_stream_path_rate_hz(const proto_stream_path *p);
/* Paths on schedule. Sample k is due k / rate_hz seconds after the path
 * started. Given the last sample taken (-1 before the first) and the
 * milliseconds elapsed since the start, returns the sample to solve now:
 * the next one in order as soon as it is due, so that a late wake-up
 * catches up on every sample it missed instead of jumping to the newest.
 * Samples are skipped only when solving cannot keep up: when the next one
 * is more than the lag window (PROTO_STREAM_PATH_LAG_MS, or two periods if
 * that is longer) late, the answer is the oldest sample still within the
 * window (never beyond the last sample, which is always solved), and
 * *skipped says how many were passed over. Returns the sample count when
 * nothing is due yet; *wait_ms then says in how many milliseconds the next
 * one is (0 otherwise). Pure arithmetic. */
#define PROTO_STREAM_PATH_LAG_MS 100.0
size_t proto_stream_path_next(const proto_stream_path *p, long long last, double elapsed_ms,
                              size_t *skipped, double *wait_ms);

/* Releases a path (NULL is fine). A path taken out of a message (set
 * msg->path to NULL after copying the pointer) outlives the message. */
void proto_stream_path_free(proto_stream_path *p);
/* The memory a path bound to its stream (proto_session_path) holds, for
 * the daemon's bound on what streams hold. */
size_t proto_stream_path_bytes(const proto_stream_path *p);

/* ---- encoders ---------------------------------------------------------- */
/* Every encoder returns a malloc'd NUL-terminated compact JSON text (caller
 * frees) and its length in *len, or NULL when out of memory. stream must be
 * a valid stream name, except in encode_error where it may be NULL or "". */

char *proto_stream_encode_opened(const char *stream, const char *chain_id, size_t *len);
char *proto_stream_encode_closed(const char *stream, size_t *len);
/* The solution message of the result of target i of job (after
 * proto_job_run covered it): {"type":"solution","stream":..,"seq":..,
 * "skipped":..[,"index":..,"count":..],"result":{...}}, index and count
 * (a path's sample) only when count > 0; the result as in HTTP answers. */
typedef struct proto_job proto_job;
char *proto_stream_encode_job_solution(const char *stream, long long seq, size_t skipped,
                                       const proto_job *job, size_t i, size_t index,
                                       size_t count, size_t *len);
/* sent: samples answered; skipped: samples passed over because solving
 * could not keep up (proto_stream_path_next). */
char *proto_stream_encode_path_end(const char *stream, long long seq, size_t sent,
                                   size_t skipped, size_t count, bool completed, size_t *len);
/* has_seq false omits "seq". */
char *proto_stream_encode_error(const char *stream, bool has_seq, long long seq,
                                const proto_error *e, size_t *len);

/* A tick's answer, written in pieces into a proto_jw (proto_json_write.h),
 * so that parts of it can be written on different threads and joined:
 *   head      {"type":"tick_solution","seq":..,"skipped":..,"solutions":[
 *             (skipped: ticks replaced unsolved since the previous answer)
 *   solution  {"stream":..,"seq":..,"skipped":..,"result":{...}}: exactly
 *             proto_stream_encode_job_solution()'s message without "type"
 *   error     {"stream":..,"seq":..,"error":{...}}, stream omitted when NULL
 *             or not a valid name, seq when has_seq is false
 *   tail      ]}
 * with a comma written between two entries by the caller. Out of memory is
 * the writer's (sticky; proto_jw_finish returns NULL). */
void proto_stream_tick_head(proto_jw *w, long long seq, size_t skipped);
void proto_stream_tick_solution(proto_jw *w, const char *stream, long long seq, size_t skipped,
                                const proto_job *job, size_t i);
void proto_stream_tick_error(proto_jw *w, const char *stream, bool has_seq, long long seq,
                             const proto_error *e);
void proto_stream_tick_tail(proto_jw *w);
/* The same answer in binary (proto/STREAM.md, "Binary ticks"), for a
 * binary tick: the head (n: the tick's targets), then one entry per
 * target, with nothing between entries and no tail. */
void proto_stream_tick_head_binary(proto_jw *w, long long seq, size_t skipped, size_t n);
void proto_stream_tick_solution_binary(proto_jw *w, const char *stream, long long seq,
                                       size_t skipped, const proto_job *job, size_t i);
void proto_stream_tick_error_binary(proto_jw *w, const char *stream, bool has_seq, long long seq,
                                    const proto_error *e);

#endif /* PROTO_STREAM_H */
