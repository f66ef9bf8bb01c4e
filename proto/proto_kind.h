/*
 * proto_kind.h: a chain's insides, for the files that make, describe and
 * solve chains: proto_chain.c (lifetime, ids, the memo of chain texts,
 * what every kind shares), one file per kind (proto_kind_planar.c,
 * _links3d.c, _bones.c, _skeleton.c, _joints.c, _urdf.c, _tree.c) behind
 * one table of operations (proto_kind_ops, proto_kinds.c), the serial
 * chains' shared numeric and closed-form binding (proto_serial.c) and the
 * values chain objects share (proto_value.c); and for the files that need
 * a chain's fields to decode, run or answer a job.
 *
 * A chain kind is added by one file that fills a proto_kind_ops and one
 * row in proto_kinds.c (and its name in proto_names.c).
 */
#ifndef PROTO_KIND_H
#define PROTO_KIND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_job.h"
#include "proto/proto_json.h"
#include "proto/proto_urdf.h"
#include "solver/ik_chain.h"
#include "solver/ik_closed.h"
#include "solver/ik_collide.h"
#include "solver/ik_math.h"
#include "solver/ik_reach.h"
#include "solver/ik_reason.h"
#include "solver/ik_skeleton.h"
#include "solver/ik_status.h"
#include "solver/ik_tree.h"

#define PROTO_NAME_MAX 64
#define PROTO_ID_HEX 32 /* 128 bits of SHA-256, hex */
/* Content ids (proto_id.c): the canonical text of v (the text jansson's
 * json_dumps() gives, keys sorted, integers as reals, 17 digits; malloc'd, NUL-terminated, its
 * length in *len when len is not NULL; NULL when out of memory), the id of
 * a canonical text, and the id of v (its canonical text's) with, when text
 * is not NULL, that text (*len bytes); 0, or -1 when out of memory. */
char *proto__canonical_text(const json_t *v, size_t *len);
void proto__text_id(const char *text, size_t len, char id[PROTO_ID_HEX + 1]);
int proto__content_id(const json_t *v, char id[PROTO_ID_HEX + 1], char **text, size_t *len);

/* Tolerances on the caller's rotations. */
#define PROTO_QUAT_UNIT_TOL 1e-3 /* | |q| - 1 | above this is rejected */
#define PROTO_MAT_ORTHO_TOL 1e-3 /* max |R R^T - I| and |det R - 1| */
/* Shortest link length accepted (bones, planar lengths). */
#define PROTO_MIN_LENGTH 1e-6
typedef enum proto_chain_kind {
    PROTO_CHAIN_PLANAR = 0, /* 2 or 3 lengths in the x-y plane */
    PROTO_CHAIN_LINKS3D,    /* 3 lengths in 3D from an origin frame */
    PROTO_CHAIN_BONES,      /* joint positions (+ rotations) */
    PROTO_CHAIN_SKELETON,   /* TRS hierarchy with a two-bone limb */
    PROTO_CHAIN_JOINTS,     /* URDF-semantics joint list */
    PROTO_CHAIN_URDF,       /* a URDF document, base and tip links */
    PROTO_CHAIN_TREE        /* several tips over shared joints (proto_kind_tree.c) */
} proto_chain_kind;

extern const char *const proto_chain_kind_names[];

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
     * its tree is the skeleton's pose compiled (proto_kind_tree.c) */
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
    /* urdf chains: the collision model (own allocation; NULL without any
     * geometry), the part in it of every URDF link on the chain's side of
     * its joints (proto_collide.h) and the count of the others (off the
     * chain: counted, not kept, so that a chain's memory grows with the
     * chain and not with the document), or why the URDF's own collisions
     * could not be read when the chain object asked nothing about
     * collisions (proto_chain_collide.c) */
    ik_collide_model *collide;
    struct proto_collide_link *collide_links;
    size_t ncollide_links;
    size_t collide_off_chain;
    proto_error *collide_err;
};

/* ---- the kinds ---- */

/* What each kind does (proto_kinds.c: one row per kind, indexed by
 * proto_chain_kind). */
typedef struct proto_kind_ops {
    /* the members of chain object o at path (its kind checked) into c,
     * in the internal convention; 0, or -1 with *err set */
    int (*decode)(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                  proto_error *err);
    /* its own members of GET /v1/chains/{id}: its size ("dof" or
     * "bones"), names, joints, a tree's tips */
    void (*describe)(const proto_chain *c, json_t *d);
    /* doubles per seed (joint values, bone positions, 3 per joint, or
     * local rotations, 4 per bone); 0 when seeds do not apply */
    size_t (*seed_len)(const proto_chain *c);
    /* the solver binding: whether solver s applies, the one "auto"
     * picks for the first target t0, the result's sizes, the workspace
     * a solve needs and the solve of target i into r */
    bool (*allows)(const proto_chain *c, proto_solver s);
    proto_solver (*pick)(const proto_chain *c, const proto_target *t0);
    void (*dims)(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot);
    size_t (*workspace)(const proto_job *job);
    void (*run)(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size);
} proto_kind_ops;

extern const proto_kind_ops proto_kind_planar, proto_kind_links3d, proto_kind_bones,
    proto_kind_skeleton, proto_kind_joints, proto_kind_urdf, proto_kind_tree;
extern const proto_kind_ops *const proto_kinds[];

/* ---- proto_chain.c ---- */

/* The chain whose JSON text is text[0..len) (a request's
 * "chain" value), decoded at "/chain" under lim: a new reference, or NULL
 * with *err set (only the code is meaningful when the text is not JSON:
 * callers decode the request again for the exact error). Each thread
 * keeps the chains of its last few short texts and hands out the same one
 * for the same bytes and limits. */
proto_chain *proto__chain_from_text(const char *text, size_t len, const proto_limits *lim,
                                    proto_error *err);
/* The chain this thread keeps (decoded under lim) for a text that p (avail
 * bytes) begins with: a new reference and the text's length in *len, or
 * NULL. A kept text is a whole JSON object, so the value at p is that text:
 * the reader need not skim it again. */
proto_chain *proto__chain_memo(const char *p, size_t avail, const proto_limits *lim, size_t *len);

/* Doubles per seed for chain c (its kind's seed_len). */
size_t proto__seed_len(const proto_chain *c);

/* ---- proto_serial.c: serial chains (planar, joints, urdf) ---- */

/* Compiles the joints into c->chain, allocated here: only chains that
 * need the numeric solver or forward kinematics carry one; with names
 * (the joints', not NULL), the movable joints' into c->names in chain
 * order. Returns 0; 1 when ik_chain_init() refuses the joints (the caller
 * names the reason); -1 with *err set when out of memory. */
int proto__chain_compile(proto_chain *c, const ik_joint *j, size_t n,
                         char (*names)[PROTO_NAME_MAX], proto_error *err);
/* The closed form of a joints or urdf chain (its family, or
 * kind IK_CLOSED_NONE and why not), made and proved on first use (a few
 * hundred microseconds for a 6-joint chain, nothing for others) and kept;
 * NULL for other kinds or when out of memory. Thread-safe. */
const ik_closed *proto__chain_closed(proto_chain *c);

/* A target as the solvers' ik_target: weighted, a full pose, or a
 * position (trees' tip targets too). */
ik_target proto__solver_target(const proto_target *t);
/* The binding of joints and urdf chains (numeric or closed), and the
 * numeric solve of a planar chain; the seed length of the three (a
 * value per joint of the compiled chain). */
size_t proto__serial_seed_len(const proto_chain *c);
bool proto__serial_allows(const proto_chain *c, proto_solver s);
proto_solver proto__serial_pick(const proto_chain *c, const proto_target *t0);
void proto__serial_dims(const proto_chain *c, size_t *dof, size_t *npos, size_t *nrot);
size_t proto__serial_workspace(const proto_job *job);
void proto__serial_run(proto_job *job, size_t i, proto_result *r, void *ws, size_t ws_size);
/* The description of a compiled chain's joints: "dof", "joint_names" and
 * "joints" (their types and limits), for joints and urdf chains. */
void proto__serial_describe(const proto_chain *c, json_t *d);

/* ---- proto_kind_urdf.c ---- */

/* A URDF chain's joint velocity limits (chain->dof values,
 * 0 where the URDF gives none), read with the chain when it was decoded
 * (never parsed again); NULL for other kinds, or with *err set (the same
 * error every time, at /options/servo/velocity) when the document has a
 * velocity that is not a number. */
const double *proto__chain_velocities(proto_chain *c, proto_error *err);

/* ---- proto_chain_collide.c: a chain's collision model ---- */

/* The members "collision_spheres", "collision_skeleton" and "srdf" of
 * chain object o at path, with the robot read from the URDF document the
 * chain was built from (proto_urdf_doc_robot on the same parse; NULL when
 * that failed, with *robot_err saying why) and its base and tips: the
 * model into c (see the file's comment). 0, or -1 with *err set (paths
 * under path). */
int proto__chain_collide(proto_chain *c, const json_t *o, const char *path,
                         const proto_urdf_robot *robot, const proto_error *robot_err,
                         const char *base, const char *const *tips, size_t ntips,
                         const proto_limits *lim, proto_error *err);
/* The same members of a chain (parent NULL) or tree (parent[i]: joint i's
 * parent joint, -1 for none) given by the joint list joints (all n of
 * them, fixed ones too, named names[i]), whose tips end in the joints
 * tip_joint[]: its links are "base" and the one each joint moves, named by
 * the joint (proto_collide.h); the spheres are written in frame. Nothing
 * without those members (the chain keeps no model). */
int proto__chain_collide_joints(proto_chain *c, const json_t *o, const char *path,
                                const ik_joint *joints, const int *parent,
                                char (*names)[PROTO_NAME_MAX], size_t n, const size_t *tip_joint,
                                size_t ntips, proto_frame frame, const proto_limits *lim,
                                proto_error *err);
/* 0 when c has a collision model; else -1 with *err saying why (at path
 * when the chain itself gives no path). */
int proto__chain_collide_check(const proto_chain *c, const char *path, proto_error *err);
/* The description's "collision" member, when the chain has geometry. */
void proto__chain_collide_describe(const proto_chain *c, json_t *d);
/* The URDF name of the model's link model_link ("?" when unknown). */
const char *proto__collide_link_name(const proto_chain *c, int model_link);
/* A solve's collision check (serial chains and trees): the workspace it
 * takes at the head of the solve's (0 without a model, a multiple of 64);
 * the check of job (its chain's model, its scene, its options) on that
 * head, which *ws and *ws_size then skip (false, nothing taken, without a
 * model); and the answer's min_distance and closest at r->q (chk NULL:
 * none). */
size_t proto__collide_ws(const proto_job *job);
bool proto__collide_check(const proto_job *job, ik_collide_check *chk, void **ws, size_t *ws_size);
void proto__collide_measure(const ik_collide_check *chk, proto_result *r);

/* ---- proto_value.c: values chain objects share ---- */

/* Each fills *err with the value's path on error. */
/* The "bones" of a skeleton chain object o at path (at least min, parents
 * first, written in frame) into c->skel, c->nskel, c->names, c->nnames and
 * c->memory, in the internal convention (skeleton chains, and trees of
 * bones in proto_kind_tree.c). 0, or -1 with *err set. */
int proto__skeleton_bones(proto_chain *c, const json_t *o, const char *path, proto_frame frame,
                          size_t min, const proto_limits *lim, proto_error *err);
/* The index of name s among the first n of names (a chain's bones or
 * joints), or -1. */
int proto__name_index(char (*names)[PROTO_NAME_MAX], size_t n, const char *s);
/* [x, y, z], each within PROTO_MAX_ABS (no frame conversion). */
int proto__vec3(const json_t *v, const char *path, ik_vec3 *out, proto_error *err);
/* [x, y, z, w], unit within PROTO_QUAT_UNIT_TOL, returned normalised. */
int proto__quat(const json_t *v, const char *path, ik_quat *out, proto_error *err);
/* The same check of four numbers already read (d), whatever read them:
 * the quaternion normalised, or the error naming its norm at path. */
int proto__unit_quat(const double d[4], const char *path, ik_quat *out, proto_error *err);
/* The "urdf" member of a URDF chain object o at path (a string of at most
 * lim->max_urdf_bytes: *xml, *len) and its "base" link name (*base): a
 * chain's and a tree's. 0, or -1 with *err set. */
int proto__urdf_source(const json_t *o, const char *path, const proto_limits *lim,
                       const char **xml, size_t *len, const char **base, proto_error *err);
/* One joint object of a joint list (a joints chain's, or with "parent"
 * allowed, which the caller reads, a tree's) at path pj, index i (its
 * default name joint<i>), in the chain's frame and units, into *out and
 * name; a revolute limit beyond PROTO_LIMIT_TURNS turns in radians is
 * refused as degrees. 0, or -1 with *err set. */
#define PROTO_LIMIT_TURNS 2
int proto__joint_decode(const json_t *jo, const char *pj, size_t i, proto_frame frame,
                        proto_units units, bool tree, ik_joint *out, char name[PROTO_NAME_MAX],
                        proto_error *err);
/* How alike (relative) a bone's scale components must be where they must
 * be one factor (a skeleton's hip and the bones above it, a tree's bones
 * above a tip): float32's rounding, as engines export scales (1.0000001,
 * 0.99999994), which shears a limb by far less than the tolerance. */
#define PROTO_SCALE_ALIKE 1e-6

/* True when joint i of a compiled chain turns (revolute or continuous), so
 * that options.units applies to its values; false for a prismatic joint.
 * A links3d chain (none compiled): all five are angles. */
static inline bool proto__angular_joint(const proto_chain *c, size_t i)
{
    if (!c->chain && !c->tree)
        return true;
    return (c->tree ? c->tree->type[i] : c->chain->type[i]) != IK_JOINT_PRISMATIC;
}

/* The member key of chain object obj at path, one of names, as *out (def
 * when absent); 0, or -1 with *err set. */
int proto__opt_enum(const json_t *obj, const char *path, const char *key,
                    const char *const *names, int def, int *out, proto_error *err);
/* The "lengths" of a chain object obj at path: min..max numbers, each at
 * least PROTO_MIN_LENGTH, into out and *n. 0, or -1 with *err set. */
int proto__lengths(const json_t *obj, const char *path, size_t min, size_t max, double *out,
                   size_t *n, proto_error *err);
/* A description's size member key = n and, when the chain has names, its
 * "bone_names" (skeletons and trees of bones) or "joint_names". */
void proto__describe_size(json_t *d, const proto_chain *c, const char *key, size_t n);

/* The seed of target i of job (len doubles each), or NULL. */
static inline const double *proto__seed_of(const proto_job *job, size_t i, size_t len)
{
    return job->has_seed[i] && job->seed_q ? job->seed_q + i * len : NULL;
}

/* The cause of an analytic solver's failure from its reach case
 * (solver/ik_reach.h): too far is beyond the chain's reach, too close has
 * no solution although within reach. */
static inline int proto__reach_cause(int st, ik_reach reach)
{
    if (st != IK_EUNREACHABLE)
        return IK_REASON_NONE;
    return reach == IK_REACH_TOO_CLOSE ? IK_REASON_NO_SOLUTION : IK_REASON_OUT_OF_REACH;
}

#endif /* PROTO_KIND_H */
