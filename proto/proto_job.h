/*
 * proto_job.h: a job's insides, for the files that decode, run and answer
 * jobs (proto_job_*.c, proto_solver.c, the chain kinds' solver bindings,
 * proto_binary.c, proto_items.c, proto_session.c, the codec) and for the
 * tests that check decoded values: the solvers' names, a target, the
 * options, a result, the answers' members (PROTO_FIELD_MAP), the job
 * itself and its constructor, how a result is answered, and the solver
 * binding's entry points. Not part of the contract with the daemon
 * (proto.h is); a chain's insides are proto/proto_kind.h's.
 *
 * Everything here is in ikd's internal convention (ROS frame, radians):
 * decoding converts from the caller's frame and units, encoding converts
 * back.
 */
#ifndef PROTO_JOB_H
#define PROTO_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "proto/proto_frame.h"
#include "proto/proto_json_write.h"
#include "solver/ik_chain.h"
#include "solver/ik_collide.h"
#include "solver/ik_math.h"

/* options.all_solutions: solutions listed per target at most (the nearest;
 * "solution_count" says how many there are), and targets of a batch that
 * asks for them, so that one answer holds at most 128 x 512 rows. */
#define PROTO_MAX_SOLUTIONS 512
#define PROTO_MAX_SOLUTION_TARGETS 128
/* A servo stream with collisions slows within options.servo.slow_distance
 * beyond the margin, in proportion to the room left (MoveIt Servo's
 * collision velocity scaling, solver/ik_collide.h ik_collide_servo_scale):
 * this by default, at most the max (the chain's length unit). */
#define PROTO_SERVO_SLOW_DEFAULT 0.1
#define PROTO_SERVO_SLOW_MAX     1e6

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

/* The member name (without "options.") of options.objective's values,
 * indexed by ik_tree_objective; NULL-terminated (proto_names.c). */
extern const char *const proto_objective_names[];

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
 * them, and the member's place in a binary answer's records (the bit of
 * the head's "fields" word, in the records' order; -1: none, the member
 * is JSON's only). One bit each in proto_options.omit. The JSON writer
 * (proto_job_encode.c) and the binary one (proto_binary.c) follow it. */
#define PROTO_FIELD_MAP(XX)                                                                        \
    XX(CODE, "code", -1)                                                                           \
    XX(REASON, "reason", -1)                                                                       \
    XX(CAUSE, "cause", -1)                                                                         \
    XX(JOINTS, "joints", 0)                                                                        \
    XX(POSITIONS, "positions", 1)                                                                  \
    XX(ROTATIONS, "rotations", 2)                                                                  \
    XX(LOCAL_ROTATIONS, "local_rotations", 3)                                                      \
    XX(TIP, "tip", 4)                                                                              \
    XX(TIPS, "tips", -1)                                                                           \
    XX(POSITION_ERROR, "position_error", 5)                                                        \
    XX(ORIENTATION_ERROR, "orientation_error", 6)                                                  \
    XX(MAX_JOINT_STEP, "max_joint_step", 7)                                                        \
    XX(ARRIVED, "arrived", -1)                                                                     \
    XX(SOLUTIONS, "solutions", -1)                                                                 \
    XX(SOLUTION_COUNT, "solution_count", -1)                                                       \
    XX(ITERATIONS, "iterations", -1)                                                               \
    XX(RESTARTS, "restarts", -1)                                                                   \
    XX(TIME_MS, "time_ms", 8)                                                                      \
    XX(MIN_DISTANCE, "min_distance", -1)                                                           \
    XX(CLOSEST, "closest", -1)

enum {
#define PROTO__FIELD_BIT(name, text, bin) PROTO__FIELD_IDX_##name,
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
    /* with avoid_collisions, the arm slows once nearer than the margin plus
     * this (the chain's length unit; options.servo.slow_distance) */
    double servo_slow;
    int bend;                  /* planar: +1, -1, or 0 (auto: +1, or nearest seed) */
    /* tree chains: options.objective (an ik_tree_objective) when given;
     * otherwise distance for nearest solves, none for the others */
    bool has_objective;
    int objective;
    bool all_solutions;        /* closed solver: every solution in the answer */
    /* collisions (proto/README.md "Collisions"): options.avoid_collisions
     * and options.collision_margin (length, >= 0; has_margin: given) */
    bool avoid_collisions;
    bool has_margin;
    double collision_margin;
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
    /* a chain with a collision model: the answer's signed distance to the
     * scene and to itself, and the pair nearest (ik_collide.h) */
    bool has_distance;
    double min_distance;
    ik_collide_pair closest;
    /* the status word this result was last answered with (set by
     * proto__result_outcome; NULL from its solve until then): what
     * proto_job_status gives the metrics, read after the encoder without
     * working it out again. The encoder itself never reads it. */
    const char *answered;
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
    /* seeds: proto__seed_len() doubles per target (joint values or bone
     * positions); has_seed[i] says whether target i has one */
    bool *has_seed;
    double *seed_q;
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
    /* a bones stream's warm start: the world rotations that go with the
     * seed's positions (the answer it came from), one per position, so that
     * each bone turns on from them; NULL otherwise */
    ik_quat *seed_rot;
    ik_quat *rot_room; /* where seed_rot goes (a bones job's block, or seed_owned's), or NULL */
    /* the request's scene (proto_scene.h; a reference: a stream's jobs
     * share their session's), or NULL */
    struct proto_scene *scene;
};

/* Target i's result. */
static inline proto_result *proto__result(const proto_job *job, size_t i)
{
    return &job->results[job->slots == job->n ? i : i % job->slots];
}

/* ---- proto_job_decode.c ---- */

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
 * straight into w (the stream encoder uses it for solutions); its MoveIt
 * code, whose bucket of a batch's "counts" proto__count_bucket() gives
 * (success, no_ik_solution, timed_out, other). */
int proto__job_result_write(proto_jw *w, const proto_job *job, size_t i);
static inline int proto__count_bucket(int code)
{
    return code == 1 ? 0 : code == -31 ? 1 : code == -6 ? 2 : 3;
}
/* A batch's tail, ],"counts":{...}}, with the first n buckets of success,
 * no_ik_solution, timed_out, other and error (a batch of items has the
 * fifth). */
void proto__counts_write(proto_jw *w, const size_t counts[PROTO_COUNT_BUCKETS], size_t n);
/* proto_binary.c: the binary answer's record of result i of job (written by
 * the binary batches and the binary ticks alike): its "fields" word (the
 * members it has places for, PROTO_FIELD_MAP's binary column) and the
 * record itself at p (proto_job_binary_record(job) bytes) with fields f;
 * its MoveIt code. */
unsigned proto__binary_fields(const proto_job *job);
int proto__binary_record(unsigned char *p, const proto_job *job, size_t i, unsigned f);

/* proto_job_encode.c: the status word and MoveIt code (moveit_msgs/
 * MoveItErrorCodes) a solver status is answered with; statuses outside the
 * table are "failure", 99999. */
int proto__moveit(int status, const char **word);

/* ---- proto_solver.c: the solver binding ---- */

/* The solver auto picks for a chain and the first target, or an error when
 * the requested solver does not apply. */
int proto__resolve_solver(const proto_chain *c, const proto_options *o, const proto_target *t0,
                          proto_solver *out, proto_error *err);
/* Checks target i against the resolved solver (required/forbidden fields). */
int proto__check_target(const proto_job *job, const proto_target *t, const char *path,
                        proto_error *err);
void proto__run_one(proto_job *job, size_t i, void *ws, size_t ws_size);
/* Frees what proto__options_read allocated in o (options.servo's
 * velocities); o stays valid without them. */
void proto__options_release(proto_options *o);

#endif /* PROTO_JOB_H */
