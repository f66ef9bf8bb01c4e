/*
 * proto_impl.h: proto/'s internal structures and the functions its files
 * share: proto_value.c (values), proto_chain.c (chains and ids),
 * proto_job_decode.c, proto_job_run.c and proto_job_encode.c (a job's
 * decode, run and answers), proto_solver.c (the solver bindings) and
 * proto_session.c (stream sessions). Not part of the contract with the
 * daemon (proto.h is); the tests include it to check the decoded values.
 *
 * Everything here is in ikd's internal convention (ROS frame, radians):
 * decoding converts from the caller's frame and units, encoding converts
 * back.
 */
#ifndef PROTO_IMPL_H
#define PROTO_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "proto/proto_frame.h"
#include "proto/proto_json.h"
#include "proto/proto_json_write.h"
#include "proto/proto_stream.h"
#include "solver/ik_chain.h"
#include "solver/ik_closed.h"
#include "solver/ik_math.h"
#include "solver/ik_skeleton.h"
#include "solver/ik_tree.h"

#define PROTO_NAME_MAX 64
#define PROTO_ID_HEX 32 /* 128 bits of SHA-256, hex */

/* Tolerances on the caller's rotations. */
#define PROTO_QUAT_UNIT_TOL 1e-3 /* | |q| - 1 | above this is rejected */
#define PROTO_MAT_ORTHO_TOL 1e-3 /* max |R R^T - I| and |det R - 1| */
/* Shortest link length accepted (bones, planar lengths). */
#define PROTO_MIN_LENGTH 1e-6
/* options.all_solutions: solutions listed per target at most (the nearest;
 * "solution_count" says how many there are), and targets of a batch that
 * asks for them, so that one answer holds at most 128 x 512 rows. */
#define PROTO_MAX_SOLUTIONS 512
#define PROTO_MAX_SOLUTION_TARGETS 128

typedef enum proto_chain_kind {
    PROTO_CHAIN_PLANAR = 0, /* 2 or 3 lengths in the x-y plane */
    PROTO_CHAIN_LINKS3D,    /* 3 lengths in 3D from an origin frame */
    PROTO_CHAIN_BONES,      /* joint positions (+ rotations) */
    PROTO_CHAIN_SKELETON,   /* TRS hierarchy with a two-bone limb */
    PROTO_CHAIN_JOINTS,     /* URDF-semantics joint list */
    PROTO_CHAIN_URDF,       /* a URDF document, base and tip links */
    PROTO_CHAIN_TREE        /* several tips over shared joints (proto_tree.c) */
} proto_chain_kind;

extern const char *const proto_chain_kind_names[];

typedef enum proto_solver {
    PROTO_SOLVER_AUTO = 0,
    PROTO_SOLVER_TWO_LINK,
    PROTO_SOLVER_THREE_LINK,
    PROTO_SOLVER_THREE_LINK_3D,
    PROTO_SOLVER_TWO_BONE,
    PROTO_SOLVER_FABRIK,
    PROTO_SOLVER_CCD,
    PROTO_SOLVER_NUMERIC,
    PROTO_SOLVER_CLOSED, /* solver/ik_closed.h, 6-joint OPW and UR arms */
    PROTO_SOLVER_COUNT
} proto_solver;

extern const char *const proto_solver_names[];

struct proto_chain {
    atomic_size_t refs;
    proto_chain_kind kind;
    char id[PROTO_ID_HEX + 1];
    json_t *source;  /* the chain object as sent (own reference) */
    size_t memory;   /* approximate bytes held */

    /* planar / links3d */
    size_t nlinks;
    double lengths[3];
    double base2[2];   /* planar base (x, y) */
    ik_xform origin;   /* links3d: the solver's base frame (ROS, solver axes) */

    /* bones: n joint positions (n - 1 bones) and world rotations */
    size_t nbones;
    ik_vec3 *positions;
    ik_quat *rotations;

    /* skeleton */
    ik_bone *skel;
    size_t nskel;
    size_t limb[3]; /* hip, knee, foot */

    /* joints / urdf / planar: the compiled chain for the numeric solver
     * (own allocation; NULL for the other kinds) */
    ik_chain *chain;
    /* names of the movable joints (joints/urdf) or bones (skeleton) */
    char (*names)[PROTO_NAME_MAX];
    size_t nnames;
    /* urdf: the <limit velocity> of each movable joint (0: none given),
     * read with the chain (proto__chain_velocities); or, when the document
     * has one that is not a number, why (kept, so that no servo request
     * parses the document again) */
    double *velocity;
    proto_error *velocity_err;
    /* tree: the compiled tree (own allocation) and its tips' names (links
     * of a URDF, joints of a joint list, bones of a skeleton); names holds
     * its joints', in the tree's variable order. A tree of bones (skel
     * set) keeps its bones above and names holds theirs, in bone order;
     * its tree is the skeleton's pose compiled (proto_tree.c) */
    ik_tree *tree;
    size_t tree_storage; /* bytes of its storage (after the view) */
    char (*tip_names)[PROTO_NAME_MAX];
    /* a tree of bones: the bones on the tips' paths, in bone order (bone
     * path_bones[k] is the tree's described joints 3k, 3k + 1, 3k + 2) */
    size_t *path_bones;
    size_t npath;
    /* joints / urdf: the closed form of the chain (ik_closed_init, which
     * proves it by forward kinematics), made on first use
     * (proto__chain_closed) and kept */
    _Atomic(ik_closed *) closed;
};

/* One target in the internal convention. */
typedef struct proto_target {
    ik_vec3 position;
    bool has_orientation;
    ik_quat orientation;
    bool has_up;
    ik_vec3 up;
    bool has_pole;
    ik_vec3 pole;
    bool has_weights;
    double weight[6];
    /* planar targets are 2-D: position.z and up.z are 0 */
} proto_target;

/* The members of an answer's result that options.fields can select
 * ("status" is always answered): the name, in the order answers list
 * them. One bit each in proto_options.omit. */
#define PROTO_FIELD_MAP(XX)                                                                        \
    XX(CODE, "code")                                                                               \
    XX(REASON, "reason")                                                                           \
    XX(CAUSE, "cause")                                                                             \
    XX(JOINTS, "joints")                                                                           \
    XX(POSITIONS, "positions")                                                                     \
    XX(ROTATIONS, "rotations")                                                                     \
    XX(LOCAL_ROTATIONS, "local_rotations")                                                         \
    XX(TIP, "tip")                                                                                 \
    XX(TIPS, "tips")                                                                               \
    XX(POSITION_ERROR, "position_error")                                                           \
    XX(ORIENTATION_ERROR, "orientation_error")                                                     \
    XX(MAX_JOINT_STEP, "max_joint_step")                                                           \
    XX(ARRIVED, "arrived")                                                                         \
    XX(SOLUTIONS, "solutions")                                                                     \
    XX(SOLUTION_COUNT, "solution_count")                                                           \
    XX(ITERATIONS, "iterations")                                                                   \
    XX(RESTARTS, "restarts")                                                                       \
    XX(TIME_MS, "time_ms")

enum {
#define PROTO__FIELD_BIT(name, text) PROTO__FIELD_IDX_##name,
    PROTO_FIELD_MAP(PROTO__FIELD_BIT)
#undef PROTO__FIELD_BIT
        PROTO_FIELD_COUNT
};
#define PROTO_FIELD(name) (1u << PROTO__FIELD_IDX_##name)

typedef struct proto_options {
    /* options.fields: the result members left out (PROTO_FIELD bits; 0:
     * every member, the default); options.digits: significant digits of
     * every real in a result (1..17; 0: the shortest that reads back) */
    unsigned omit;
    int digits;
    proto_solver solver;
    proto_frame frame;
    proto_units units;
    double tolerance;          /* length */
    double angular_tolerance;  /* radians */
    size_t max_iterations;     /* 0: solver default */
    size_t iter_cap;           /* the daemon's limit, bounds the numeric search */
    double timeout_ms;
    bool nearest;              /* nearest-to-seed instead of first found */
    double max_joint_step;     /* > 0: refuse answers that move a joint more
                                  (radians for angular joints, length for
                                  prismatic ones; the caller's value in
                                  max_joint_step_in); 0: no limit */
    double max_joint_step_in;  /* the same as the caller gave it */
    /* servo streams (options.servo): the controller's period in seconds
     * (0: not a servo stream) and each joint's velocity limit (radians or
     * length per second; the chain's dof values, in a heap block that
     * whoever decoded the options frees with proto__options_release: a
     * stream's session, which outlives every job made from its options) */
    double servo_period;
    double *servo_velocity;
    int bend;                  /* planar: +1, -1, or 0 (auto: +1, or nearest seed) */
    /* tree chains: options.objective (an ik_tree_objective) when given;
     * otherwise distance for nearest solves, none for the others */
    bool has_objective;
    int objective;
    bool all_solutions;        /* closed solver: every solution in the answer */
    bool follow;               /* a stream's solve (proto_job_warm_start):
                                  numeric continuations steer a redundant
                                  chain's self-motion (ik_numeric_opts.follow) */
} proto_options;

/* The answer to one target, internal convention. */
typedef struct proto_result {
    int status;             /* ik_status */
    double pos_err;         /* length */
    double rot_err;         /* radians; < 0 when not applicable */
    size_t iterations;
    size_t restarts;
    double time_s;
    double *q;              /* job->dof values (joint values) */
    ik_vec3 *positions;     /* job->npos points (ROS frame) */
    ik_quat *rotations;     /* job->nrot world rotations */
    ik_quat *local;         /* job->nrot local rotations */
    bool has_tip;
    ik_xform tip;
    /* numeric solves from a seed: the largest joint motion the answer asks
     * for, over angular joints (radians) and prismatic joints (length) */
    bool has_step;
    double step_ang, step_lin;
    int servo; /* servo streams: 1 arrived at the solution, 0 on the way;
                  -1 not a servo answer */
    struct proto_tip_result *tips; /* tree chains: job->ntips, else NULL */
    int cause; /* why a solve failed (solver/ik_reason.h), IK_REASON_NONE
                  when it did not or the solver cannot tell */
    /* options.all_solutions: up to job->sol_cap solutions (dof values each,
     * nearest the seed first) and how many exist */
    double *all;
    size_t nall, total;
} proto_result;

/* Tree chains: one tip's goal in a target (internal convention). */
typedef struct proto_tip_goal {
    bool active;       /* false: no target; the target's keep rule applies */
    proto_target t;    /* position, orientation or rotation, weights */
    unsigned priority; /* 0 highest */
    double weight;     /* > 0 */
} proto_tip_goal;

/* Tree chains: one tip of an answer. */
typedef struct proto_tip_result {
    bool checked;   /* it had a target, or kept its pose */
    bool reached;   /* checked and within tolerance */
    ik_xform pose;  /* the answered joints' tip pose, ROS frame */
    double pos_err; /* checked: distance to its target */
    double rot_err; /* checked with rotation rows: angle to it; else < 0 */
} proto_tip_result;

struct proto_job {
    proto_kind kind;
    proto_chain *chain;
    proto_options opt;
    proto_solver solver; /* resolved, never AUTO */
    size_t n;            /* targets */
    proto_target *targets;
    /* seeds: joint values (dof per target) or bone positions (npos per
     * target); has_seed[i] says whether target i has one */
    bool *has_seed;
    double *seed_q;
    ik_vec3 *seed_pos;
    size_t dof;  /* joint values in a result */
    size_t npos; /* positions in a result */
    size_t nrot; /* rotations in a result */
    size_t sol_cap; /* solutions kept per result (options.all_solutions) */
    bool dims2;  /* planar: positions are 2-D */
    /* the results of `slots` targets (n, unless proto_job_limit_results
     * asked for fewer): target i's result is results[i % slots]
     * (proto__result), done[i % slots] says it ran */
    size_t slots;
    proto_result *results;
    bool *done;
    /* tree chains: each target's goals (ntips per target) and keep rule
     * (an ik_tree_keep), in the block; ntips 0 for the other kinds */
    size_t ntips;
    proto_tip_goal *goals;
    unsigned char *keep;
    void *block;         /* one allocation behind targets, seeds, goals, keep, has_seed
                            and a single target's result, its outputs and done */
    void *results_block; /* the results' own allocation (more than one target, or
                            after proto_job_limit_results), else NULL */
    double *seed_owned; /* a warm-start seed for a job decoded without seeds */
};

/* Target i's result. */
static inline proto_result *proto__result(const proto_job *job, size_t i)
{
    return &job->results[job->slots == job->n ? i : i % job->slots];
}

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

/* A target of a tick read without a JSON tree (proto_stream.c): the
 * stream, seq and the numbers as the text gives them, not yet checked
 * (proto_session.c checks them as proto__target_decode() would, and hands
 * the target's text to it when a check fails, so that the error is its
 * own). */
#define PROTO_RAW_ORIENTATION 1u
#define PROTO_RAW_UP 2u
#define PROTO_RAW_POLE 4u
struct proto_stream_raw {
    char stream[PROTO_STREAM_NAME_MAX + 1];
    bool has_seq;
    long long seq;
    const char *text; /* the "target" value's text, in the message */
    size_t len;
    unsigned has; /* PROTO_RAW_* */
    double position[3], orientation[4], up[3], pole[3];
};

/* proto_job_decode.c: a target object scanned without a tree (only
 * "position", "orientation", "up", "pole", each once, position required;
 * false for anything else), its text in t->text, t->len. */
bool proto__target_scan(proto_scan *r, proto_stream_raw *t);
/* *t from a scanned target exactly as proto__target_decode() decodes its
 * text in frame f; false when one of its checks fails, or for a planar
 * chain's 2-D target (dims2), whose shape the scanner does not take: the
 * caller then decodes the text. */
bool proto__target_raw(const proto_stream_raw *r, proto_frame f, bool dims2, proto_target *t);

/* proto_stream.c: proto_stream_decode() without the tree-less tick reader
 * (for the tests that prove the two alike). */
int proto__stream_decode_tree(const char *text, size_t len, proto_stream_msg *out,
                              proto_error *err);

/* proto_chain.c: the chain whose JSON text is text[0..len) (a request's
 * "chain" value), decoded at "/chain" under lim: a new reference, or NULL
 * with *err set (only the code is meaningful when the text is not JSON:
 * callers decode the request again for the exact error). Each thread
 * keeps the chains of its last few short texts and hands out the same one
 * for the same bytes and limits. */
proto_chain *proto__chain_from_text(const char *text, size_t len, const proto_limits *lim,
                                    proto_error *err);
/* The length of a text this thread keeps a chain for (under lim) that p
 * (avail bytes) begins with, or 0. A kept text is a whole JSON object, so
 * the value at p is that text: the reader need not skim it again. */
size_t proto__chain_memo_extent(const char *p, size_t avail, const proto_limits *lim);

/* proto_chain.c: doubles per seed for chain c: joint values, bone
 * positions (3 per joint) or skeleton local rotations (4 per bone); 0 when
 * seeds do not apply. */
size_t proto__seed_len(const proto_chain *c);

/* proto_value.c: value decoders shared by chains, requests and streams.
 * Each fills *err with the value's path on error. */
/* The "bones" of a skeleton chain object o at path (at least min, parents
 * first, written in frame) into c->skel, c->nskel, c->names, c->nnames and
 * c->memory, in the internal convention (skeleton chains, and trees of
 * bones in proto_tree.c). 0, or -1 with *err set. */
int proto__skeleton_bones(proto_chain *c, const json_t *o, const char *path, proto_frame frame,
                          size_t min, const proto_limits *lim, proto_error *err);
/* [x, y, z], each within PROTO_MAX_ABS (no frame conversion). */
int proto__vec3(const json_t *v, const char *path, ik_vec3 *out, proto_error *err);
/* [x, y, z, w], unit within PROTO_QUAT_UNIT_TOL, returned normalised. */
int proto__quat(const json_t *v, const char *path, ik_quat *out, proto_error *err);
/* [[r00, r01, r02], [...], [...]]: orthonormal with det +1 within
 * PROTO_MAT_ORTHO_TOL; returned as a row-major matrix. */
int proto__mat3(const json_t *v, const char *path, double m[9], proto_error *err);
/* A name: a non-empty string of at most PROTO_NAME_MAX - 1 bytes, copied
 * into dst. */
int proto__name(char *dst, const json_t *v, const char *path, proto_error *err);
/* The "urdf" member of a URDF chain object o at path (a string of at most
 * lim->max_urdf_bytes: *xml, *len) and its "base" link name (*base): a
 * chain's and a tree's. 0, or -1 with *err set. */
int proto__urdf_source(const json_t *o, const char *path, const proto_limits *lim,
                       const char **xml, size_t *len, const char **base, proto_error *err);
/* One joint object of a joint list (a joints chain's, or with "parent"
 * allowed, which the caller reads, a tree's) at path pj, index i (its
 * default name joint<i>), in the chain's frame and units, into *out and
 * name. 0, or -1 with *err set. */
int proto__joint_decode(const json_t *jo, const char *pj, size_t i, proto_frame frame,
                        proto_units units, bool tree, ik_joint *out, char name[PROTO_NAME_MAX],
                        proto_error *err);
/* A target object at JSON pointer path, in the caller's frame f (dims2:
 * a planar chain's 2-D target), into *t in the internal convention. */
int proto__target_decode(const json_t *v, const char *path, proto_frame f, bool dims2,
                         proto_target *t, proto_error *err);
/* A target given as numbers (a batch reader's): its members position,
 * orientation, up and pole, each n* numbers (0: absent). */
typedef struct proto_target_numbers {
    double pos[4], quat[4], up[4], pole[4];
    size_t npos, nquat, nup, npole;
} proto_target_numbers;
/* The target proto__target_decode() makes of the object with these
 * members and numbers, into *t: 0, or -1 when it would refuse it (then
 * proto__target_decode() says why, with the path). */
int proto__target_numbers(const proto_target_numbers *n, proto_frame f, bool dims2,
                          proto_target *t);

/* True when joint i of a compiled chain turns (revolute or continuous), so
 * that options.units applies to its values; false for a prismatic joint. */
static inline bool proto__angular_joint(const proto_chain *c, size_t i)
{
    return (c->tree ? c->tree->type[i] : c->chain->type[i]) != IK_JOINT_PRISMATIC;
}

/* ---- proto_job_decode.c: the pieces of a request, shared by HTTP
 * requests and stream sessions (proto_session.c) ---- */

/* A seed at path for chain c with options *o (frame and units), into out
 * (proto__seed_len(c) doubles, internal convention). */
int proto__seed_decode(const json_t *v, const char *path, const proto_chain *c,
                       const proto_options *o, double *out, proto_error *err);
/* An "options" object (NULL: none given) for chain c, paths under
 * "/options": the options every solver shares, then what depends on the
 * chain (options.servo, no frame on planar chains). */
int proto__options_decode(const json_t *jo, const proto_chain *c, const proto_limits *lim,
                          proto_options *o, proto_error *err);
/* The one constructor of jobs, for HTTP requests and stream sessions alike:
 * a job of n targets on chain (which it takes its own reference to) with
 * options *opt, its solver resolved from the first target *t0 (decoded,
 * internal convention), *t0 checked against that solver (errors at
 * t0_path) and stored as target 0; targets 1..n-1 are the caller's to fill
 * (and to check with proto__check_target), and, when seeds, job->seed_q
 * has room for n seeds (has_seed all false). A tree chain's solver does
 * not depend on its targets: t0 is NULL then, and every target is the
 * caller's to decode (proto__job_target). 0 and *out, or -1 with *err
 * set and nothing allocated. */
int proto__job_new(proto_chain *chain, const proto_options *opt, proto_kind kind, size_t n,
                   const proto_target *t0, const char *t0_path, bool seeds, proto_job **out,
                   proto_error *err);
/* Target i of job from the target object v at JSON pointer path, in the
 * job's frame, checked against its solver: a tree's into job->goals and
 * job->keep (proto__tree_target_decode), any other into job->targets[i]
 * (proto__target_decode, proto__check_target). 0, or -1 with *err set. */
int proto__job_target(proto_job *job, size_t i, const json_t *v, const char *path,
                      proto_error *err);

/* A batch's targets from somewhere else than a jansson array (the batch
 * reader of proto_batch_read.c, the binary form of proto_binary.c): n of
 * them, asked for in order from 0, each once. next(feed, i, f, dims2, t,
 * &v) returns 1 when it filled *t itself (t not NULL: as
 * proto__target_decode would, in frame f; a tree's targets are never
 * asked for so), else 0 and target i as an object in *v (borrowed, valid
 * until the next call), or NULL when the feed cannot give it, with the
 * reason in *failed when has_failed. With paths, errors name their
 * targets' paths (else they are not built: a reader whose every failure
 * goes the general way does not need them). */
typedef struct proto__target_feed proto__target_feed;
struct proto__target_feed {
    size_t n;
    int (*next)(proto__target_feed *feed, size_t i, proto_frame f, bool dims2, proto_target *t,
                json_t **v);
    bool paths;
    bool has_failed;
    proto_error failed;
};
/* proto_job_decode_json(req, PROTO_BATCH, ...) with the targets from feed
 * (req holds the other members). A target the feed cannot give fails the
 * decode with the feed's reason, or like a wrong target. */
int proto__job_decode_fed(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                          void *ud, proto__target_feed *feed, proto_job **out, proto_error *err);

/* proto_batch_read.c: the fast way of proto_batch_decode alone (for
 * tests): 0 and *out when it decoded the body, else nonzero (the general
 * path must read it) with nothing allocated. */
int proto__batch_read(const char *body, size_t len, const proto_limits *lim,
                      proto_chain_lookup_fn lookup, void *ud, proto_job **out);

/* proto_job_encode.c: how result i is answered (shared by both forms of
 * answers, proto_binary.c's too): the status word, MoveIt's code, the
 * reason, whether the pose members (joints, positions, rotations, tip,
 * errors) are answered, and time_ms (finite). A result holding a
 * non-finite number is answered as a failure whose reason names the
 * member, "non_finite_<member>" (reason then points into buf). */
#define PROTO_REASON_MAX 48
typedef struct proto__outcome {
    const char *word;
    int code;
    const char *reason;
    bool pose;
    double time_ms;
    char buf[PROTO_REASON_MAX];
} proto__outcome;
void proto__result_outcome(const proto_job *job, size_t i, proto__outcome *o);
/* Whether value k of an answer's "joints" is an angle (options.units
 * applies), and the answer's "max_joint_step" of r. */
bool proto__answer_angle(const proto_chain *c, size_t k);
double proto__answer_step(const proto_job *job, const proto_result *r);

/* proto_job_encode.c: the object proto_job_result_json(job, i) would print, written
 * straight into w (the stream encoder uses it for solutions). */
void proto__job_result_write(proto_jw *w, const proto_job *job, size_t i);

/* proto_job_encode.c: the status word and MoveIt code (moveit_msgs/
 * MoveItErrorCodes) a solver status is answered with; statuses outside the
 * table are "failure", 99999. */
int proto__moveit(int status, const char **word);

/* ---- proto_tree.c: tree chains ---- */

/* The members of a tree chain object o at path (kind "tree": a URDF with
 * base and tips, or joints naming their parents and tips) into c: c->tree,
 * c->names, c->nnames, c->tip_names, c->memory. 0, or -1 with *err set. */
int proto__tree_decode(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                       proto_error *err);
/* A tree chain's own members of its description (joints, tips, shared
 * joints) added to d. */
void proto__tree_describe(const proto_chain *c, json_t *d);
/* A tree target object v at path ({"tips": {name: target, ...}, "keep"})
 * in frame f: goals[0..ntips-1] and *keep. 0, or -1 with *err set. */
int proto__tree_target_decode(const json_t *v, const char *path, const proto_chain *c,
                              proto_frame f, proto_tip_goal *goals, unsigned char *keep,
                              proto_error *err);
/* Solves target i of a tree job into r (proto__run_one's tree case). */
void proto__run_tree(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size);
/* The workspace bytes proto__run_tree needs on chain c (a tree). */
size_t proto__tree_workspace_size(const proto_chain *c);
/* The member name (without "options.") of options.objective's values,
 * indexed by ik_tree_objective; NULL-terminated. */
extern const char *const proto_objective_names[];

/* proto_chain.c: a URDF chain's joint velocity limits (chain->dof values,
 * 0 where the URDF gives none), read with the chain when it was decoded
 * (never parsed again); NULL for other kinds, or with *err set (the same
 * error every time, at /options/servo/velocity) when the document has a
 * velocity that is not a number. */
const double *proto__chain_velocities(proto_chain *c, proto_error *err);

/* proto_solver.c: the closed form of a joints or urdf chain (its family, or
 * kind IK_CLOSED_NONE and why not), made and proved on first use (a few
 * hundred microseconds for a 6-joint chain, nothing for others) and kept;
 * NULL for other kinds or when out of memory. Thread-safe. */
const ik_closed *proto__chain_closed(proto_chain *c);

/* proto_solver.c */
/* The solver auto picks for a chain and the first target, or an error when
 * the requested solver does not apply. */
int proto__resolve_solver(const proto_chain *c, const proto_options *o, const proto_target *t0,
                          proto_solver *out, proto_error *err);
/* Checks target i against the resolved solver (required/forbidden fields). */
int proto__check_target(const proto_job *job, const proto_target *t, const char *path,
                        proto_error *err);
void proto__run_one(proto_job *job, size_t i, void *ws, size_t ws_size);
size_t proto__workspace_size(const proto_job *job);
/* Frees what proto__options_decode allocated in o (options.servo's
 * velocities); o stays valid without them. */
void proto__options_release(proto_options *o);
/* Result dimensions for the resolved solver. */
void proto__result_dims(const proto_chain *c, proto_solver s, size_t *dof, size_t *npos,
                        size_t *nrot);

#endif /* PROTO_IMPL_H */
