/*
 * proto_codec.h: one description per wire object, and the one reader that
 * follows it from a jansson tree or straight from the text.
 *
 * Each object a request carries (a target, a tree's tip target, options,
 * a request's and a tick target's envelope) is a table of its members: an
 * X-macro row of name, shape and count, in the order the members are
 * decoded (which is the order their errors are found in). From that table
 * follow, in the same code for every path (a single solve, a batch, a
 * binary batch, a stream's target and tick messages):
 *   - the reading: proto__object_read() in one of three modes,
 *       tree    a node of a jansson tree (proto_json_parse): every error
 *               named with its JSON path, in the getters' words
 *               (proto_json.h);
 *       text    the request's text through the one scanner (proto_scan.h),
 *               without a tree: anything it does not take, and every
 *               error, declines (-1), and the caller then reads the whole
 *               text as a tree, which words the error; so what the text
 *               mode accepts is by construction what the tree mode
 *               accepts, with the same meaning (tests/fuzz/fuzz_diff.c
 *               compares the two on every path);
 *       filled  numbers put in place by a reader of another form (the
 *               binary batches' doubles), checked and worded as the tree
 *               mode words them;
 *   - the meaning: each object's rules (proto__target_finish(), the
 *     options' and seeds' readers) turn what was read into ikd's internal
 *     convention (ROS frame, radians) and check it, member by member in
 *     the table's order, alike in every mode.
 * A member added to a table is read by every path; its rule says what it
 * means. The answers' members have their table too (PROTO_FIELD_MAP,
 * proto_job.h), from which both the JSON and the binary answers are
 * written.
 *
 * Memory: a proto_object lives on the caller's stack (under a kilobyte);
 * nothing here allocates but the error messages' snprintf into the
 * caller's proto_error, and options.servo's velocities (one block of the
 * chain's joints, proto__options_release). Reentrant.
 */
#ifndef PROTO_CODEC_H
#define PROTO_CODEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_kind.h"
#include "proto/proto_stream.h"
#include "proto/proto_scan.h"

/* ---- where a value is read from ------------------------------------------- */

/* A value to read: a node of a jansson tree (tree mode), or text (text
 * mode: the scanner at the value's first byte, its end the end of the text
 * the value lies in). Neither: an absent member. */
typedef struct proto_in {
    const json_t *node;
    proto_scan s;  /* s.p NULL unless text mode */
    size_t count;  /* text mode, a skimmed array: its elements */
} proto_in;

static inline proto_in proto_in_tree(const json_t *v)
{
    proto_in in = {v, {NULL, NULL}, 0};
    return in;
}

static inline proto_in proto_in_text(const char *p, size_t n)
{
    proto_in in = {NULL, {p, p + n}, 0};
    return in;
}

static inline bool proto_in_is_text(const proto_in *in)
{
    return in->s.p != NULL;
}

static inline bool proto_in_present(const proto_in *in)
{
    return in->node || in->s.p;
}

/* ---- descriptions ------------------------------------------------------------ */

/* The shape of a member's value: what the reading checks before the
 * member's rule sees it. */
enum {
    PROTO_VALUE = 0, /* any value: the rule reads it (text mode: skimmed, its text kept) */
    PROTO_NUMBER,    /* a number (finite, as JSON's are) */
    PROTO_INTEGER,   /* a JSON integer */
    PROTO_BOOL,      /* true or false */
    PROTO_STRING,    /* a string (text mode: printable ASCII, no escapes) */
    PROTO_NUMBERS,   /* an array of `count` numbers (count2d on a planar chain) within
                        [-PROTO_MAX_ABS, PROTO_MAX_ABS], or [0, ...] when nonneg */
    PROTO_ROWS       /* a 3x3 matrix: three arrays of three such numbers */
};

/* One member of an object. */
typedef struct proto_member {
    const char *name;
    unsigned char len; /* strlen(name) */
    unsigned char shape;
    unsigned char count, count2d; /* NUMBERS, ROWS: numbers (0 count2d: not on planar chains) */
    unsigned char at;             /* its first place in proto_object.num */
    bool nonneg;                  /* NUMBERS: each >= 0 */
} proto_member;

/* An X-macro table row: X(P, ID, "name", SHAPE, count, count2d, nonneg),
 * P the prefix of the members' enum. The places of the numbers follow
 * from the counts (PROTO__MEMBER_AT). */
#define PROTO__MEMBER_ID(P, id, name, shape, n, n2, nn) P##id,
#define PROTO__MEMBER_AT(P, id, name, shape, n, n2, nn)                                           \
    P##id##_AT, P##id##_LAST = P##id##_AT + ((n) ? (n) : 1) - 1,
#define PROTO__MEMBER_ROW(P, id, name, shape, n, n2, nn)                                          \
    {name, sizeof(name) - 1, shape, n, n2, P##id##_AT, nn},

#define PROTO_MEMBERS_MAX 20
#define PROTO_PLACES_MAX 40

/* What proto__object_read() found of an object. */
typedef struct proto_object {
    unsigned char mode;              /* PROTO_MODE_* */
    unsigned has;                    /* members present, bit k for member k */
    unsigned char n[PROTO_MEMBERS_MAX]; /* NUMBERS, ROWS: numbers read */
    double num[PROTO_PLACES_MAX];    /* NUMBER, NUMBERS, ROWS at their places */
    long long i[PROTO_MEMBERS_MAX];  /* INTEGER, BOOL */
    proto_in in[PROTO_MEMBERS_MAX];  /* each member's value (STRING: text mode, its bytes) */
    /* a tick's tree target (proto__tick_target): its tips as the raw
     * reader read them, each named by its text, else NULL */
    const struct proto_stream_raw *tipv;
    size_t ntips;
} proto_object;

enum { PROTO_MODE_TREE = 0, PROTO_MODE_TEXT, PROTO_MODE_FILLED };

#define PROTO_BIT(k) (1u << (k))

/* Reads object in at path (a JSON pointer), whose members may be those of
 * d (n of them) with a bit in allowed:
 *   tree mode: checks that it is an object whose keys are all allowed (the
 *     first other one named, proto_json_check_object's error) and notes
 *     each member's node; the values are read member by member
 *     (proto__member_read) as the rules ask for them;
 *   text mode: reads it whole, each member's value by its shape (a VALUE
 *     member skimmed, its text kept; for the members in known->members,
 *     when known is not NULL, known->fn(k, p, avail, ud) may take the
 *     value at p itself, returning the bytes it took, 0 for a skim), in->s
 *     left after it; any other key, a duplicate, a value not of its shape
 *     declines.
 * 0, or -1 (with *err set in tree mode; a key not allowed worded by
 * known->unknown when known has one, else by proto__unknown_member). */
typedef struct proto_known {
    unsigned members;
    size_t (*fn)(size_t k, const char *p, size_t avail, void *ud);
    void *ud;
    int (*unknown)(proto_error *err, const char *path, const char *key);
} proto_known;
int proto__object_read(proto_in *in, const char *path, const proto_member *d, size_t n,
                       unsigned allowed, const proto_known *known, proto_object *o,
                       proto_error *err);

/* Member k of o (present) made ready for its rule, its path (under path)
 * in at (tree and filled modes; text mode leaves at empty): tree mode
 * reads the value by its shape (dims2: a planar chain's count) with the
 * getters' messages; text and filled modes check what was read (count,
 * range; filled mode with the same messages). 0, or -1. */
int proto__member_read(proto_object *o, const proto_member *d, size_t k, bool dims2,
                       const char *path, char at[PROTO_PATH_MAX], proto_error *err);
/* The text mode's part of proto__member_read (inline: it runs for every
 * member read from text): the count and the range of NUMBERS and ROWS. */
static inline int proto__member_check(const proto_object *o, const proto_member *m, size_t k,
                                      bool dims2)
{
    if (m->shape != PROTO_NUMBERS && m->shape != PROTO_ROWS)
        return 0;
    size_t n = o->n[k];
    if (m->shape == PROTO_NUMBERS && n != (dims2 ? m->count2d : m->count))
        return -1;
    const double lo = m->nonneg ? 0 : -PROTO_MAX_ABS, *v = o->num + m->at;
    for (size_t e = 0; e < n; e++)
        if (!(v[e] >= lo && v[e] <= PROTO_MAX_ABS))
            return -1;
    return 0;
}

/* The member of d (n of them) named s[0..len), or n (inline: it runs for
 * every key of every object read from text). */
static inline size_t proto__member_find(const proto_member *d, size_t n, const char *s,
                                        size_t len)
{
    for (size_t k = 0; k < n; k++) {
        if (d[k].len != len || d[k].name[0] != s[0])
            continue;
        size_t i = 1;
        while (i < len && d[k].name[i] == s[i])
            i++;
        if (i == len)
            return k;
    }
    return n;
}

/* "<name of path/key> is required", as proto_json_require() words it
 * (the rules' other words: proto__bad() and its kin, proto_json.h).
 * Returns -1. */
int proto__required(proto_error *err, const char *path, const char *key);
/* An object at path holds a member key its kind does not have (tree mode:
 * the first such key; filled mode: the first such member). */
int proto__unknown_member(proto_error *err, const char *path, const char *key);

/* A STRING member's bytes (tree: the node's; text: the text's). */
const char *proto__member_string(const proto_object *o, size_t k, size_t *len);
/* ---- targets ----------------------------------------------------------------- */

/* A target's members: a chain's target (position, orientation or
 * rotation, up, pole, weights; a planar chain's position and up, 2-D), a
 * tree's tip target (no up, no pole; priority and weight) and a tree's
 * target (keep, tips: {tip name: tip target}). */
#define PROTO_TARGET_MAP(X, P)                                                                     \
    X(P, POSITION, "position", PROTO_NUMBERS, 3, 2, false)                                        \
    X(P, ORIENTATION, "orientation", PROTO_NUMBERS, 4, 0, false)                                  \
    X(P, ROTATION, "rotation", PROTO_ROWS, 9, 0, false)                                           \
    X(P, UP, "up", PROTO_NUMBERS, 3, 2, false)                                                    \
    X(P, POLE, "pole", PROTO_NUMBERS, 3, 0, false)                                                \
    X(P, WEIGHTS, "weights", PROTO_NUMBERS, 6, 0, true)                                           \
    X(P, PRIORITY, "priority", PROTO_INTEGER, 1, 0, false)                                        \
    X(P, WEIGHT, "weight", PROTO_NUMBER, 1, 0, false)                                             \
    X(P, KEEP, "keep", PROTO_STRING, 0, 0, false)                                                 \
    X(P, TIPS, "tips", PROTO_VALUE, 0, 0, false)

enum { PROTO_TARGET_MAP(PROTO__MEMBER_ID, PROTO_T_) PROTO_T_COUNT };
enum { PROTO_TARGET_MAP(PROTO__MEMBER_AT, PROTO_T_) PROTO_T_PLACES };
extern const proto_member proto_target_members[PROTO_T_COUNT];

/* The members each kind of target may have. */
#define PROTO_TARGET_PLANAR (PROTO_BIT(PROTO_T_POSITION) | PROTO_BIT(PROTO_T_UP))
#define PROTO_TARGET_CHAIN                                                                         \
    (PROTO_BIT(PROTO_T_POSITION) | PROTO_BIT(PROTO_T_ORIENTATION) | PROTO_BIT(PROTO_T_ROTATION) |  \
     PROTO_BIT(PROTO_T_UP) | PROTO_BIT(PROTO_T_POLE) | PROTO_BIT(PROTO_T_WEIGHTS))
#define PROTO_TARGET_TIP                                                                           \
    (PROTO_BIT(PROTO_T_POSITION) | PROTO_BIT(PROTO_T_ORIENTATION) | PROTO_BIT(PROTO_T_ROTATION) |  \
     PROTO_BIT(PROTO_T_WEIGHTS) | PROTO_BIT(PROTO_T_PRIORITY) | PROTO_BIT(PROTO_T_WEIGHT))
#define PROTO_TARGET_TREE (PROTO_BIT(PROTO_T_KEEP) | PROTO_BIT(PROTO_T_TIPS))
#define PROTO_TARGET_ANY ((1u << PROTO_T_COUNT) - 1)

/* Where a target's meaning goes: a chain's target (t), or a tree's (its
 * chain c, goals[c->tree->ntips] and *keep). */
typedef struct proto_target_out {
    proto_target *t;
    const proto_chain *c;
    proto_tip_goal *goals;
    unsigned char *keep;
} proto_target_out;

/* The target object in at path on chain c in frame f: a tree's into
 * out->goals and out->keep, any other's into out->t (a planar chain's
 * 2-D). 0, or -1 (with *err set but in text mode). */
int proto__target_read(proto_in *in, const char *path, const proto_chain *c, proto_frame f,
                       const proto_target_out *out, proto_error *err);
/* The meaning of a target already read (o, from proto__object_read with
 * PROTO_TARGET_ANY in text mode, or filled) on chain c in frame f. */
int proto__target_finish(proto_object *o, const char *path, const proto_chain *c, proto_frame f,
                         const proto_target_out *out, proto_error *err);

/* A tick's target, or a target message's, read from the text
 * (proto_stream.c's raw reader), kept until its stream's session knows the
 * chain: its envelope, and its target's members as the text mode read
 * them, before their meaning (proto__tick_target() makes the object of
 * them again): a tree's "keep" as its text, read by the rules, and its
 * "tips" read as records of the same kind (each tip's name its text). Seeds
 * are read as a tree instead. */
struct proto_stream_raw {
    char stream[PROTO_STREAM_NAME_MAX + 1];
    bool has_seq; /* a seq of its own (a tick's target without one has the tick's) */
    long long seq;
    const char *text; /* the target's text, in the message */
    size_t len;
    unsigned has;
    unsigned char n[PROTO_T_COUNT];
    double num[PROTO_T_PLACES];
    long long priority;
    proto_in keep, tips;
    /* a tree target's tips, read with it (proto_stream.c raw_tips): ntips
     * records of their members, each tip's name its text and len */
    const proto_stream_raw *tipv;
    size_t ntips;
    /* a binary tick's target (proto_stream_binary.c): its numbers filled
     * (no text: the rules word every error), and what its envelope got
     * wrong (PROTO_RAW_BAD_*, answered as the JSON form answers it) */
    bool filled;
    unsigned char bad;
};
enum { PROTO_RAW_BAD_SEQ = 1, PROTO_RAW_BAD_STREAM };
/* The target object of a tick's target, for proto__target_finish(). */
void proto__tick_target(const proto_stream_raw *t, proto_object *o);
/* The same for a binary tick's target on chain c, at path (its
 * "/targets/<i>/target"): a planar chain's position made 2-D (its third
 * number must be 0, the binary form's own rule). 0, or -1 with *err. */
int proto__tick_target_filled(const proto_stream_raw *t, const proto_chain *c, const char *path,
                              proto_object *o, proto_error *err);
/* That rule: z, the third number of the position of a binary target at
 * path on a planar chain, must be 0. 0, or -1 with *err. */
int proto__planar_z(double z, const char *path, proto_error *err);

/* A path message's path (proto_stream.h): its envelope decoded by
 * proto_stream_decode (waypoint positions and orientations checked, the
 * objects kept), its waypoints then decoded as targets of one stream by
 * proto_session_path (bound: t filled, the objects released). */
typedef struct proto_path_point {
    json_t *json;   /* the waypoint object until bound (reference held) */
    proto_target t; /* the waypoint as a target, once bound */
} proto_path_point;

struct proto_stream_path {
    size_t npoints;
    bool has_orientation;
    bool bound;
    double rate_hz;
    double duration_s;
    size_t count;
    /* a tree stream's path, once bound: each waypoint's goals (ntips per
     * waypoint) and keep rule (one allocation, freed with the path) */
    size_t ntips;
    proto_tip_goal *goals;
    unsigned char *keep;
    proto_path_point pts[]; /* npoints */
};

/* proto_stream.c: proto_stream_decode() in tree mode alone (for the tests
 * that prove the two modes alike). */
int proto__stream_decode_tree(const char *text, size_t len, proto_stream_msg *out,
                              proto_error *err);

/* ---- seeds and options --------------------------------------------------------- */

/* A seed at path for chain c with options *o (frame and units), into out
 * (proto__seed_len(c) doubles, internal convention). */
int proto__seed_read(proto_in *in, const char *path, const proto_chain *c, const proto_options *o,
                     double *out, proto_error *err);
/* Joint values (proto_joint_seed.c): a seed given as a map of joint names
 * to values (tree mode) into out, the joints it leaves out at their default
 * start (mid-limits); and the units check of n values q (internal units):
 * none more than a turn outside its joint's limits, the error at
 * path/index or, by_name, path/name. 0, or -1 with *err set. */
int proto__joint_seed_map(const json_t *m, const char *path, const proto_chain *c,
                          const proto_options *o, double *out, proto_error *err);
int proto__joint_seed_check(const proto_chain *c, const proto_options *o, const double *q,
                            size_t n, const char *path, bool by_name, proto_error *err);

#define PROTO_OPTIONS_MAP(X, P)                                                                    \
    X(P, SOLVER, "solver", PROTO_STRING, 0, 0, false)                                             \
    X(P, UNITS, "units", PROTO_STRING, 0, 0, false)                                               \
    X(P, FRAME, "frame", PROTO_STRING, 0, 0, false)                                               \
    X(P, TOLERANCE, "tolerance", PROTO_NUMBER, 1, 0, false)                                       \
    X(P, ANGULAR_TOLERANCE, "angular_tolerance", PROTO_NUMBER, 1, 0, false)                       \
    X(P, MAX_ITERATIONS, "max_iterations", PROTO_INTEGER, 1, 0, false)                            \
    X(P, TIMEOUT_MS, "timeout_ms", PROTO_NUMBER, 1, 0, false)                                     \
    X(P, SEARCH, "search", PROTO_STRING, 0, 0, false)                                             \
    X(P, MAX_JOINT_STEP, "max_joint_step", PROTO_NUMBER, 1, 0, false)                             \
    X(P, ALL_SOLUTIONS, "all_solutions", PROTO_BOOL, 1, 0, false)                                 \
    X(P, BEND, "bend", PROTO_INTEGER, 1, 0, false)                                                \
    X(P, FIELDS, "fields", PROTO_VALUE, 0, 0, false)                                              \
    X(P, DIGITS, "digits", PROTO_INTEGER, 1, 0, false)                                            \
    X(P, OBJECTIVE, "objective", PROTO_STRING, 0, 0, false)                                       \
    X(P, SERVO, "servo", PROTO_VALUE, 0, 0, false)                                                \
    X(P, AVOID_COLLISIONS, "avoid_collisions", PROTO_BOOL, 1, 0, false)                           \
    X(P, COLLISION_MARGIN, "collision_margin", PROTO_NUMBER, 1, 0, false)

enum { PROTO_OPTIONS_MAP(PROTO__MEMBER_ID, PROTO_O_) PROTO_O_COUNT };
enum { PROTO_OPTIONS_MAP(PROTO__MEMBER_AT, PROTO_O_) PROTO_O_PLACES };

/* An "options" object (in absent: none given) for chain c under lim, paths
 * under "/options": the options every solver shares in the table's order,
 * then what depends on the chain (options.servo, no frame on planar
 * chains, options.objective on trees). */
int proto__options_read(proto_in *in, const proto_chain *c, const proto_limits *lim,
                        proto_options *o, proto_error *err);

/* ---- envelopes ------------------------------------------------------------------- */

/* A request body's members: a single solve's (chain or chain_id, target,
 * seed, options), a batch's (targets, seeds), a batch of items' (items,
 * options). Read as VALUEs: the request's decoder reads each in its turn
 * (proto_job_decode.c; a batch of items', proto_items.c). */
#define PROTO_REQUEST_MAP(X, P)                                                                    \
    X(P, CHAIN, "chain", PROTO_VALUE, 0, 0, false)                                                \
    X(P, CHAIN_ID, "chain_id", PROTO_STRING, 0, 0, false)                                         \
    X(P, TARGET, "target", PROTO_VALUE, 0, 0, false)                                              \
    X(P, TARGETS, "targets", PROTO_VALUE, 0, 0, false)                                            \
    X(P, SEED, "seed", PROTO_VALUE, 0, 0, false)                                                  \
    X(P, SEEDS, "seeds", PROTO_VALUE, 0, 0, false)                                                \
    X(P, OPTIONS, "options", PROTO_VALUE, 0, 0, false)                                            \
    X(P, ITEMS, "items", PROTO_VALUE, 0, 0, false)                                                \
    X(P, SCENE, "scene", PROTO_VALUE, 0, 0, false)                                                \
    X(P, SCENE_ID, "scene_id", PROTO_STRING, 0, 0, false)

enum { PROTO_REQUEST_MAP(PROTO__MEMBER_ID, PROTO_R_) PROTO_R_COUNT };
enum { PROTO_REQUEST_MAP(PROTO__MEMBER_AT, PROTO_R_) PROTO_R_PLACES };
extern const proto_member proto_request_members[PROTO_R_COUNT];

#define PROTO_REQUEST_SOLVE                                                                        \
    (PROTO_BIT(PROTO_R_CHAIN) | PROTO_BIT(PROTO_R_CHAIN_ID) | PROTO_BIT(PROTO_R_TARGET) |          \
     PROTO_BIT(PROTO_R_SEED) | PROTO_BIT(PROTO_R_OPTIONS) | PROTO_BIT(PROTO_R_SCENE) |            \
     PROTO_BIT(PROTO_R_SCENE_ID))
#define PROTO_REQUEST_BATCH                                                                        \
    (PROTO_BIT(PROTO_R_CHAIN) | PROTO_BIT(PROTO_R_CHAIN_ID) | PROTO_BIT(PROTO_R_TARGETS) |         \
     PROTO_BIT(PROTO_R_SEEDS) | PROTO_BIT(PROTO_R_OPTIONS) | PROTO_BIT(PROTO_R_SCENE) |           \
     PROTO_BIT(PROTO_R_SCENE_ID))
#define PROTO_REQUEST_ITEMS (PROTO_BIT(PROTO_R_ITEMS) | PROTO_BIT(PROTO_R_OPTIONS))

/* ---- requests -------------------------------------------------------------------- */

/* The targets of a binary batch (proto_binary.c), filled: target i's
 * numbers put in o (filled mode: has, n, num) by fill, which may refuse
 * them itself (-1 with *err set at path, its paths under path). */
typedef struct proto__fill {
    size_t n;
    int (*fill)(void *ud, size_t i, const char *path, proto_object *o, proto_error *err);
    void *ud;
} proto__fill;

/* proto_job_decode_json(req, PROTO_BATCH, ...) with the targets from fill
 * (req, the binary batch's head, holds the other members). */
int proto__job_decode_filled(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                             void *ud, const proto__fill *fill, proto_job **out, proto_error *err);
/* The text mode alone (for the tests that prove it alike the tree mode):
 * 0 and *out when it decoded the body, else -1 with nothing allocated
 * (the tree mode must read it). */
int proto__job_decode_text(const char *body, size_t len, proto_kind kind,
                           const proto_limits *lim, proto_chain_lookup_fn lookup, void *ud,
                           proto_job **out);
/* An item of a batch of items (proto_items.c), a POST /v1/solve body, in
 * either mode (text: in->s left after it), with the batch's options (opts)
 * when it has none of its own. lim not NULL. */
int proto__job_decode_item(proto_in *in, const proto_in *opts, const proto_limits *lim,
                           proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                           proto_error *err);
/* Target i of job from in at path, in the job's frame, checked against
 * its solver: a tree's into job->goals and job->keep, any other's into
 * job->targets[i]. 0, or -1 (with *err set but in text mode). */
int proto__job_target(proto_job *job, size_t i, proto_in *in, const char *path,
                      proto_error *err);

/* ---- arrays ---------------------------------------------------------------------- */

/* Array in at path with min..max elements (proto_json_array's rules and
 * messages; text mode: the count of the skim): its size in *n. Then its
 * elements in order: proto__element(in, i, &el) gives element i (i from 0
 * up, each once; text mode: after its comma), whose reader leaves el.s
 * after it; proto__elements_end() checks that the array ends there. */
int proto__array(proto_in *in, const char *path, size_t min, size_t max, bool too_large,
                 size_t *n, proto_error *err);
bool proto__element(proto_in *in, size_t i, proto_in *el);
void proto__element_done(proto_in *in, const proto_in *el);
bool proto__elements_end(proto_in *in);

#endif /* PROTO_CODEC_H */
