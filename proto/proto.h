/*
 * proto.h: the wire format's contract with the daemon (server/) and the
 * one-shot CLI ("ikd solve"): requests become solver calls, results become
 * responses. proto/README.md documents the JSON itself for clients.
 *
 * The flow for one HTTP request (POST /v1/solve or /v1/solve/batch):
 *   proto_job_decode()   body -> proto_job (validated; chain resolved)
 *   proto_job_run()      solve targets [begin, end); may run on any thread,
 *                        disjoint ranges of one job in parallel
 *   proto_job_encode()   -> malloc'd JSON response body
 *   proto_job_free()
 * A WebSocket stream opens a typed session (proto/proto_session.h): its
 * chain, options and seed are decoded once, and each target or path sample
 * becomes a one-target job through the same constructor as a request's,
 * warm-started from the previous answer (proto_job_warm_start()).
 *
 * Ownership: every function that returns a pointer says who frees it. On
 * error nothing is allocated and *err says what and where. proto never sees a
 * socket or the event loop; it is safe to use from many threads as long as
 * one job is not touched by two threads except through disjoint
 * proto_job_run() ranges. Chains are immutable and reference-counted
 * (atomically), so a registry and in-flight jobs can share them.
 */
#ifndef PROTO_H
#define PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "proto/proto_limits.h"

/* ---- chains ----------------------------------------------------------- */

typedef struct proto_chain proto_chain;

/* Decodes a chain object (the value of "chain" in a request, or the body of
 * POST /v1/chains) at JSON pointer `path`. Returns a new reference (free with
 * proto_chain_unref) or NULL with *err set. */
proto_chain *proto_chain_decode_json(json_t *chain, const char *path, const proto_limits *lim,
                                     proto_error *err);
/* The same from a request body (POST /v1/chains): the whole body is the
 * chain object. */
proto_chain *proto_chain_decode(const char *body, size_t len, const proto_limits *lim,
                                proto_error *err);
void proto_chain_ref(proto_chain *c);
void proto_chain_unref(proto_chain *c); /* NULL is fine */
/* Lets go of the chains the calling thread keeps for the inline chains it
 * decoded (a few per thread, see proto_chain.c): for a thread that ends
 * while the process goes on (a daemon's event loop), before it ends. The
 * thread may decode again afterwards. */
void proto_thread_release(void);
/* Content-addressed id: the same chain (same canonical JSON) gives the same
 * id. Static for the chain's lifetime; never NULL. */
const char *proto_chain_id(const proto_chain *c);
/* Approximate bytes held by the chain (for the registry's memory bound). */
size_t proto_chain_memory(const proto_chain *c);
/* Description for GET /v1/chains/{id}: new reference, caller decrefs. */
json_t *proto_chain_describe(const proto_chain *c);

/* What a registry holds: chains (POST /v1/chains) and scenes (POST
 * /v1/scenes, proto/proto_scene.h), each kind with ids of its own. */
typedef enum proto_reg_kind { PROTO_REG_CHAIN = 0, PROTO_REG_SCENE } proto_reg_kind;

/* How the daemon's registry is seen from proto: returns a NEW reference to
 * the object of that kind with that id (a proto_chain * for
 * PROTO_REG_CHAIN, a struct proto_scene * for PROTO_REG_SCENE), or NULL
 * when there is none. */
typedef void *(*proto_chain_lookup_fn)(void *ud, proto_reg_kind kind, const char *id);

/* The chain a request or a stream names: the chain object (decoded at
 * "/chain") when chain is not NULL, else the registered chain with that id
 * (lookup/ud as for proto_job_decode; a NULL lookup knows no id), or
 * unknown_chain at "/chain_id". New reference, or NULL with *err set. */
proto_chain *proto_chain_resolve(json_t *chain, const char *chain_id, const proto_limits *lim,
                                 proto_chain_lookup_fn lookup, void *ud, proto_error *err);

/* ---- jobs ------------------------------------------------------------- */

typedef enum proto_kind { PROTO_SOLVE = 0, PROTO_BATCH = 1 } proto_kind;

typedef struct proto_job proto_job;

/* Decodes a request body. kind selects the single or the batch form.
 * lookup/ud resolve "chain_id" (lookup may be NULL: then chain_id is an
 * unknown_chain error). Returns 0 and a job in *out (free with
 * proto_job_free), or -1 with *err set and nothing allocated. */
int proto_job_decode(const char *body, size_t len, proto_kind kind, const proto_limits *lim,
                     proto_chain_lookup_fn lookup, void *ud, proto_job **out, proto_error *err);

/* The same from parsed JSON (a request body already parsed). */
int proto_job_decode_json(json_t *req, proto_kind kind, const proto_limits *lim,
                          proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                          proto_error *err);

/* Number of targets (1 for PROTO_SOLVE). */
size_t proto_job_count(const proto_job *job);
/* True when target i of job starts from a seed of its own (the request's,
 * or a stream message's, "seed"); false otherwise and for i out of range.
 * Any thread. */
bool proto_job_has_seed(const proto_job *job, size_t i);
/* Rough cost of one target in microseconds (analytic solvers well under 1,
 * numeric solvers tens to thousands): the daemon solves cheap jobs inline on
 * the loop and sends expensive ones and batches to the thread pool. */
double proto_job_cost_us(const proto_job *job);
/* The most one target may take in microseconds, as far as the job's options
 * bound it: the time budget (options.timeout_ms) for the numeric and tree
 * solvers, or with none their iterations at a guessed cost each; the
 * analytic, closed-form, FABRIK and CCD solvers' cost (their work is
 * bounded). The daemon bounds a batch chunk's worst case with it. */
double proto_job_budget_us(const proto_job *job);
/* Solves targets [begin, end). Thread-safe for disjoint ranges. */
void proto_job_run(proto_job *job, size_t begin, size_t end);
/* Makes target 0 of job start from prev's solution of its last target
 * (joint values as seed, bone positions as current pose) and prefer the
 * branch nearest to it. Both jobs must use the same chain. When that
 * solution is no pose to continue from (not a success, or a planar arm,
 * bones or skeleton answer whose points lie on one line, which bends to no
 * side), job starts from prev's own starting point instead, so a stream
 * keeps the bend of its last proper answer (or, when prev had no seed,
 * starts from the chain's own pose). Marks job as a stream's, whose
 * numeric solves follow a motion (solver/ik_numeric.h, FOLLOWING A MOTION).
 * May allocate job's seed (freed by proto_job_free); out of memory leaves
 * job unseeded. */
void proto_job_warm_start(proto_job *job, const proto_job *prev);
/* The result of target i as the JSON object the responses contain (new
 * reference). Only after proto_job_run() covered i. A result holding a
 * non-finite number (which the solvers never give) is answered as status
 * "failure", code 99999, reason "non_finite_<member>", without the pose
 * members, here and in proto_job_encode(). */
json_t *proto_job_result_json(const proto_job *job, size_t i);
/* The "status" word target i is answered with ("success",
 * "no_ik_solution", "timed_out", ...: MoveIt's codes in snake case), a
 * static string for metrics labels. Only after proto_job_run() covered i;
 * once i's answer is encoded, the word it was answered with (noted then,
 * not worked out again). */
const char *proto_job_status(const proto_job *job, size_t i);
/* Name of the solver the job uses ("two_bone", "numeric", ...), a static
 * string for metrics labels. */
const char *proto_job_solver_name(const proto_job *job);
/* The whole response body (malloc'd, NUL-terminated; caller frees), after
 * every target was run. *len gets strlen. NULL only when out of memory. */
char *proto_job_encode(const proto_job *job, size_t *len);
/* An upper bound of proto_job_encode()'s length for this job (whatever its
 * results), known before solving: the daemon reserves it against the bytes
 * it may hold for clients. */
size_t proto_job_encode_bound(const proto_job *job);
void proto_job_free(proto_job *job); /* NULL is fine */
/* The scene job is solved in (a reference the job holds; NULL: none), for
 * a daemon that counts the scenes its streams keep alive. */
const struct proto_scene *proto_job_scene(const proto_job *job);

/* ---- batch answers in pieces ---------------------------------------------- */

/* A batch's answer (a PROTO_BATCH job's, or a batch of items') written out
 * as the batch is solved, chunk by chunk, so that neither the daemon nor
 * the client waits for the whole: the head (the members before the
 * results, then "results":[), the results of consecutive ranges [begin,
 * end) in order (each range after proto_job_run() or proto_items_run()
 * covered it; a range that does not start at 0 starts with its comma),
 * then the tail (],"counts":{...}}). Each results piece adds its results
 * to counts[] by the bucket each is counted in (success, no_ik_solution,
 * timed_out, other, and error for items answered with their error), and
 * the tail prints the sums, so that the ranges can be encoded on any
 * threads and the counts added up in any order. The pieces joined are
 * byte for byte proto_job_encode()'s (proto_items_encode()'s) text. Each
 * piece is malloc'd and NUL-terminated (caller frees), *len its length;
 * NULL only when out of memory. */
#define PROTO_COUNT_BUCKETS 5
char *proto_job_encode_head(const proto_job *job, size_t *len);
char *proto_job_encode_results(const proto_job *job, size_t begin, size_t end,
                               size_t counts[PROTO_COUNT_BUCKETS], size_t *len);
char *proto_job_encode_tail(const proto_job *job, const size_t counts[PROTO_COUNT_BUCKETS],
                            size_t *len);
/* An upper estimate of the bytes one result of job's answer takes (as its
 * options.fields and digits ask), for sizing the pieces. */
size_t proto_job_result_bytes(const proto_job *job);
/* For a batch answered in pieces: keeps the results of only `slots`
 * targets at a time instead of every target's, so that the memory of the
 * results is bounded by the pieces in flight, not by the batch. Target i's
 * result then takes the place of target i - slots's: a range may run only
 * when the results sharing its places were encoded, and only the results
 * of ranges that ran since are there to encode (proto_job_encode() no
 * longer applies). Call before anything runs. 0 (slots 0 or not below the
 * target count: nothing changes), or -1 when out of memory (the job is as
 * it was). */
int proto_job_limit_results(proto_job *job, size_t slots);

/* ---- many rigs: batches of items (proto_items.c) ------------------------- */

/* A POST /v1/solve/batch body with "items": each item a POST /v1/solve body
 * of its own (chain or chain_id, target, seed, options), the batch's
 * "options" holding for items without their own. An item that is not valid
 * is answered with its error object (its path under "/items/<i>") and the
 * others are solved. */
typedef struct proto_items proto_items;

/* Decodes the body: -1 with *err set (nothing allocated) only when the
 * envelope is wrong (not JSON, not an object, "items" missing, empty, not
 * an array or longer than lim->max_items (too_large), unknown members, a
 * batch "options" that is not an object); each item's own errors are kept
 * for its answer. 0 and *out (free with proto_items_free) otherwise. */
int proto_items_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_items **out,
                       proto_error *err);
/* The same from parsed JSON (req is not changed). */
int proto_items_decode_json(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                            void *ud, proto_items **out, proto_error *err);
size_t proto_items_count(const proto_items *it);
/* Mean estimated cost of one item's solve, microseconds (as
 * proto_job_cost_us), for splitting the batch into chunks. */
double proto_items_cost_us(const proto_items *it);
/* Item i's job (one target), or NULL when the item is answered with an
 * error; borrowed. */
proto_job *proto_items_job(const proto_items *it, size_t i);
/* Solves items [begin, end); thread-safe for disjoint ranges. */
void proto_items_run(proto_items *it, size_t begin, size_t end);
/* The answer: {"count": N, "results": [...], "counts": {"success",
 * "no_ik_solution", "timed_out", "other", "error"}}, each result the
 * result members of a solve (options.fields and digits as the item's
 * options say) or {"error": {...}}. malloc'd, NUL-terminated, *len its
 * length; NULL only when out of memory. Only after every item ran. */
char *proto_items_encode(const proto_items *it, size_t *len);
/* The same answer in pieces, as proto_job_encode_head() and the others. */
char *proto_items_encode_head(const proto_items *it, size_t *len);
char *proto_items_encode_results(const proto_items *it, size_t begin, size_t end,
                                 size_t counts[PROTO_COUNT_BUCKETS], size_t *len);
char *proto_items_encode_tail(const proto_items *it, const size_t counts[PROTO_COUNT_BUCKETS],
                              size_t *len);
/* The largest proto_job_result_bytes() of its items (an error's answer
 * counted too). */
size_t proto_items_result_bytes(const proto_items *it);
void proto_items_free(proto_items *it); /* NULL is fine */

/* ---- batch bodies (proto_items.c) ------------------------------------------- */

/* A POST /v1/solve/batch body of either form: one chain's "targets" (0 and
 * *job) or "items" (0 and *items), or -1 with *err set; exactly what
 * proto_json_parse(PROTO_JSON_BATCH) then proto_items_decode_json (when
 * the body is an object with "items") or proto_job_decode_json
 * (PROTO_BATCH) give for it, only without building the body's jansson
 * tree (one chain's targets, and items, read straight from the text as
 * proto_job_decode reads single solves). The other of *job and *items is
 * NULL; on error both are. job NULL: items only (proto_items_decode). */
int proto_batch_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_job **job,
                       proto_items **items, proto_error *err);

/* A large batch's targets decoded in parts side by side (proto_job_decode.c;
 * issue 22: a 100,000-target body takes tens of milliseconds to read,
 * which one thread would add to every such batch). proto_batch_decode_parts
 * reads what a batch of one chain's targets holds but its targets after
 * the first (the chain, the options, target 0, which picks the solver)
 * and finds where each part of the targets begins (a skim: no number
 * read): 0 with *job and *parts (2 to parts_max parts, each of per_min
 * targets at least), when the body is a text the text mode of
 * proto_batch_decode takes, of one chain that is not a tree, without
 * seeds or options.max_joint_step, with 2 * per_min targets at least;
 * 1 with *job decoded whole (and *parts NULL) for any other body of one
 * chain's targets the text mode reads. Else -1 with nothing allocated:
 * proto_batch_decode decodes the body (and words any error). Then proto_batch_decode_part(job, parts, k) reads the
 * targets of part k, on any thread, parts at the same time on different
 * threads, each once: 0, or -1 when one of them is wrong or not one the
 * text mode reads (the job is of no use then: free it and decode the body
 * with proto_batch_decode, which reads it or words the error). The job is decoded as proto_batch_decode would have
 * when every part returned 0; until then it may only be freed. The body
 * must stay until the parts ran. */
typedef struct proto_batch_parts proto_batch_parts;
int proto_batch_decode_parts(const char *body, size_t len, const proto_limits *lim,
                             proto_chain_lookup_fn lookup, void *ud, size_t per_min,
                             size_t parts_max, proto_job **job, proto_batch_parts **parts);
size_t proto_batch_parts_count(const proto_batch_parts *p);
int proto_batch_decode_part(proto_job *job, const proto_batch_parts *p, size_t k);
void proto_batch_parts_free(proto_batch_parts *p); /* NULL is fine */

/* ---- the binary form of batches (proto_binary.c) ---------------------------- */

/* The media type of binary batches, requests (Content-Type) and answers
 * (Accept); proto/README.md, "Binary batches", gives the layout. */
#define PROTO_BINARY_TYPE "application/vnd.ikd.batch"

/* A binary batch request: 0 and *out, or -1 with *err set (nothing
 * allocated). Its JSON head is decoded as a batch body's members are, and
 * its targets as JSON targets with the same numbers would be, with the
 * same errors and paths. */
int proto_batch_decode_binary(const char *body, size_t len, const proto_limits *lim,
                              proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                              proto_error *err);
/* Whether a batch's answer has a binary form (a batch of one chain that is
 * not a tree). */
bool proto_job_binary_ok(const proto_job *job);
/* Bytes of one result's record in the binary answer. */
size_t proto_job_binary_record(const proto_job *job);
/* The binary answer in pieces, as proto_job_encode_head() and the others
 * give the JSON one (head, results of consecutive ranges, tail with the
 * counts): malloc'd bytes (caller frees), *len their count; NULL only when
 * out of memory. Each number is the double the JSON answer (default
 * digits) reads back as. */
char *proto_job_encode_binary_head(const proto_job *job, size_t *len);
char *proto_job_encode_binary_results(const proto_job *job, size_t begin, size_t end,
                                      size_t counts[PROTO_COUNT_BUCKETS], size_t *len);
char *proto_job_encode_binary_tail(const proto_job *job, const size_t counts[PROTO_COUNT_BUCKETS],
                                   size_t *len);

/* ---- discovery -------------------------------------------------------- */

/* GET /v1/solvers: the solvers, the chain kinds they apply to and their
 * options with defaults (new reference). */
json_t *proto_solvers_describe(const proto_limits *lim);

#endif /* PROTO_H */
