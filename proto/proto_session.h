/*
 * proto_session.h: a WebSocket stream's typed session: what a stream's
 * "open" message decodes to (its chain, options and seed, each decoded once)
 * and how each later target or path sample becomes a job. The server moves
 * the messages (server/ws_stream.c); proto/proto_stream.h decodes their
 * envelopes; proto/STREAM.md documents them for clients.
 *
 * The flow of one stream:
 *   proto_session_open()     open message -> session (options and seed
 *                            checked and kept in the internal convention)
 *   proto_session_message_target()  a target message -> an unsolved job
 *   proto_session_tick_target()  the same for one target of a tick message
 *   proto_session_path()     a path message's path -> its waypoints decoded
 *                            as targets (never as JSON again);
 *   proto_session_sample()   sample i of it -> an unsolved one-target job,
 *                            interpolated from the typed waypoints
 *   proto_session_prepare()  right before solving a job: where it starts
 *                            (its own seed, the open seed, or the previous
 *                            answer) and the nearest-branch preference
 *   proto_job_run()          on any thread
 *   proto_session_solved()   the answer becomes the next job's warm start
 *   proto_session_skip()     or: the job was replaced unsolved (conflation),
 *                            its seed holds for the next one
 * Jobs are built by the same constructor as HTTP requests' (proto_job.h's
 * proto__job_new), so a target is checked exactly as a request's target is,
 * with JSON paths into the stream message ("/target/position/2",
 * "/waypoints/3/orientation").
 *
 * Ownership: a session holds one reference to its chain and owns its last
 * answer. Jobs it hands out are the caller's (proto_job_free) until passed
 * to proto_session_solved(), which takes them. A session is used by one
 * thread at a time (the loop); its jobs may run elsewhere.
 */
#ifndef PROTO_SESSION_H
#define PROTO_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "proto/proto_stream.h"

typedef struct proto_session proto_session;

/* Opens a session on chain (the session takes its own reference) with the
 * open message's options (NULL: none) and seed (NULL: none; the arm's
 * current joints, or a bones or skeleton seed, checked as a request's
 * "seed" at "/seed"). A servo stream (options.servo) needs a seed. lim NULL
 * means the defaults. 0 and *out, or -1 with *err set (paths under
 * "/options" and "/seed") and nothing allocated. */
int proto_session_open(proto_chain *chain, const json_t *options, const json_t *seed,
                       const proto_limits *lim, proto_session **out, proto_error *err);

/* Frees the session and its last answer; NULL is fine. */
void proto_session_free(proto_session *s);
/* The bytes the session holds of its own as opened: its struct, its seed
 * and the room of a skipped target's seed (not its chain or scene, held
 * and counted by whoever holds them, nor its last answer, one job). */
size_t proto_session_bytes(const proto_session *s);
/* The stream's scene (an open message's "scene", or a scene message's:
 * proto/STREAM.md), replacing the one it had for the jobs made from now
 * on (jobs already made keep theirs); read in the stream's frame on a
 * chain with a collision model. With scene_id (not NULL) instead, the
 * registered scene of that id (lookup/ud as for proto_job_decode; the
 * session holds a reference). 0, or -1 with *err set (paths under
 * "/scene", or "/scene_id": unknown_scene) and the scene unchanged. */
int proto_session_scene(proto_session *s, const json_t *scene, const char *scene_id,
                        proto_chain_lookup_fn lookup, void *ud, proto_error *err);
/* The stream's scene (borrowed; NULL: none), and setting it back (the
 * session takes the reference scene; NULL: none): what the daemon does
 * when the scene a message gave cannot be held (--stream-chain-bytes). */
const struct proto_scene *proto_session_scene_of(const proto_session *s);
void proto_session_set_scene(proto_session *s, struct proto_scene *scene);

/* The session's chain (borrowed, lives as long as the session). */
const proto_chain *proto_session_chain(const proto_session *s);

/* A target message: its "target" (paths under "/target") and its optional
 * "seed" (NULL: none; a re-synchronisation with the arm's state, at
 * "/seed") -> a new unsolved job of one target. 0 and *out (the caller's),
 * or -1 with *err set. */
int proto_session_target(proto_session *s, const json_t *target, const json_t *seed,
                         proto_job **out, proto_error *err);
/* The same for a target message m as proto_stream_decode_raw() read it:
 * its target read from the text (m->raw), the tree mode wording what the
 * rules refuse, or its tree's (m->target, m->seed). */
int proto_session_message_target(proto_session *s, const proto_stream_msg *m, proto_job **out,
                                 proto_error *err);

/* Target i of a tick message (t from proto_stream_tick_target_get()):
 * the same as proto_session_target() with paths under "/targets/<i>/target"
 * and "/targets/<i>/seed", in scene: the session's scene when the tick was
 * read (proto_session_scene_of then; the caller holds a reference), not
 * the session's now, since a scene message after the tick replaces it
 * for the targets after it and may do so while this runs on another
 * thread. */
int proto_session_tick_target(proto_session *s, const struct proto_scene *scene,
                              const proto_stream_tick_target *t, size_t i, proto_job **out,
                              proto_error *err);

/* Binds a path (as proto_stream_decode() left it in a path message) to the
 * session: every waypoint is decoded as a target of this stream (paths
 * under "/waypoints/<i>"; a tree's as a tree target) and checked against
 * the solver it will get.
 * Needed before proto_session_sample(). 0, or -1 with *err set (the path
 * is then unusable, the caller frees it). */
int proto_session_path(proto_session *s, proto_stream_path *p, proto_error *err);

/* Sample i (< proto_stream_path_count(p)) of a bound path -> a new
 * unsolved job of one target: the position interpolated linearly between
 * the waypoints around it, the orientation by slerp (when both have one),
 * every other member (up, pole, weights) from the waypoint that starts the
 * segment; on a tree the same for each tip that both waypoints target,
 * the rest (the other tips, priorities, weights, keep) from the waypoint
 * that starts the segment. 0 and *out, or -1 with *err set (out of memory, i out of range
 * or an unbound path). */
int proto_session_sample(proto_session *s, const proto_stream_path *p, size_t i,
                         proto_job **out, proto_error *err);

/* job (one of this session's) is dropped unsolved, because a newer target
 * of the stream replaced it (conflation). The newest seed sent since the
 * last solve is the arm's state, so a seed of job's own is kept and the
 * next job prepared starts from it unless it has a seed of its own. Takes
 * job (freed here). */
void proto_session_skip(proto_session *s, proto_job *job);

/* Right before job (one of this session's) is solved: a job with its own
 * seed starts there; one without starts from the seed of a skipped target
 * (proto_session_skip) when one is kept, else from the open seed while the
 * session has no answer yet, else from the previous answer
 * (proto_job_warm_start); either way it prefers the branch nearest its
 * start. A kept seed is spent by it. */
void proto_session_prepare(proto_session *s, proto_job *job);

/* job was solved (proto_job_run covered it) and its answer written: it
 * becomes the warm start of the next job, without its scene (dropped
 * here). Takes job (freed with the session or by the next call). */
void proto_session_solved(proto_session *s, proto_job *job);

#endif /* PROTO_SESSION_H */
