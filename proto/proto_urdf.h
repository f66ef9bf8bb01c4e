/*
 * proto_urdf.h: reading a serial chain, or a tree of several (one base
 * link, several tip links), out of a URDF document (libxml2).
 *
 * A URDF robot is a tree of <link> elements connected by <joint> elements
 * (each joint names one parent and one child link). An IK chain is the path
 * through that tree from a base link down to a tip link. These functions
 * parse the document, find that path and return its joints, in order from
 * the base to the tip, as solver/ik_chain.h describes them (ik_joint: URDF
 * semantics, fixed joints included), optionally with their names.
 *
 * What is read, per joint on the path (URDF specification, ROS wiki
 * "urdf/XML/joint"):
 *   type            revolute, continuous, prismatic or fixed; floating and
 *                   planar joints are rejected (not serial-chain joints).
 *   <origin xyz rpy>  defaults zero; rpy is roll-pitch-yaw about fixed x, y, z
 *                   (ik_math.h); the origin is optional.
 *   <axis xyz>      default (1, 0, 0); a zero axis on a movable joint is an
 *                   error; the axis is stored as written (ik_chain_init
 *                   normalises it).
 *   <limit lower upper>  required on revolute and prismatic joints (lower and
 *                   upper default 0 when the element is present without
 *                   them, as in URDF); lower > upper is an error. Continuous
 *                   joints get lower = -INFINITY, upper = +INFINITY; fixed
 *                   joints 0 and 0. effort is not read; velocity only by
 *                   proto_urdf_doc_chain() (servo streams).
 * Numbers are parsed with strtod in the "C" locale's format (the process must
 * not have switched LC_NUMERIC to a comma locale); a value that is not a
 * number, has trailing garbage, is not finite, or a vector without exactly
 * three components is an error naming the joint and the attribute.
 *
 * Everything off the path is not validated beyond what finding the path needs
 * (links are collected by name, every joint's parent and child are read): a
 * floating joint elsewhere in the robot does not matter. A link that is the
 * child of two joints is an error wherever it is (the document is not a
 * tree).
 *
 * Safety: documents are parsed with XML_PARSE_NONET (no network access), no
 * entity substitution (XML_PARSE_NOENT is never set), no DTD loading and no
 * XML_PARSE_HUGE, and any <!DOCTYPE> is refused as soon as the parser meets
 * it (URDF never needs one), which rules out external entities (XXE) and
 * entity expansion bombs ("billion laughs"). Documents of several MiB parse
 * fine; len must fit in an int (about 2 GiB), otherwise "too_large". The
 * caller enforces its own byte limit before calling (proto.h's
 * max_urdf_bytes).
 *
 * Errors: every function returns 0 on success and -1 on error, with *err
 * filled (err may be NULL) as proto_error.h describes: code "invalid_urdf"
 * (HTTP 422) with a message that names the offending link or joint, or
 * "too_large" (HTTP 413) when the path has more joints than the caller's
 * capacity. On error the output arrays and counts are unspecified (they may
 * have been partly written) unless stated otherwise. The path field of err is
 * left empty ("") : the caller, which knows where the URDF sat in its JSON
 * request, may fill it in.
 *
 * Memory: the functions that take the document's text allocate and free
 * libxml2's tree internally; nothing allocated survives a call, and nothing
 * is kept between calls. A chain or a tree is read from an open document
 * (proto_urdf_open), so that one parse serves several readings (a chain's
 * joints, then its collision model): the proto_urdf_doc_* functions take
 * the handle; the tree and its index live until proto_urdf_close.
 *
 * Thread-safety: all functions may be called from many threads at once. The
 * first call initialises libxml2 once (xmlInitParser under pthread_once);
 * xmlCleanupParser is never called (it would break other libxml2 users in
 * the process).
 *
 * proto_urdf_doc_robot() reads the whole robot instead: every link with
 * its <collision> primitives, every joint (for proto_collide.c, which
 * places the links on a chain's bodies).
 *
 * Not here: <mimic> (a mimic joint is returned as an independent joint),
 * xacro, meshes (a <collision> mesh is only noted), inertias, visual data,
 * <transmission>, SDF.
 */
#ifndef PROTO_URDF_H
#define PROTO_URDF_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "solver/ik_chain.h"

/* Room for a link or joint name, including the terminating NUL. A joint
 * name on the chain that does not fit is rejected with "too_large" whenever
 * names are requested. */
#define PROTO_URDF_NAME_MAX 64

/* Lists the names of every <link> of the document, in document order, into
 * names[0..*n_links-1] (names longer than PROTO_URDF_NAME_MAX - 1 bytes are
 * truncated here, this is for display). Returns 0 even when there are more
 * than cap links: *n_links is then the total count and only cap names are
 * written. Useful to tell a client which base and tip links exist. */
int proto_urdf_links(const char *xml, size_t len, char (*names)[PROTO_URDF_NAME_MAX], size_t cap,
                     size_t *n_links, proto_error *err);

/* ---- one document, read several ways ------------------------------------ */

/* A parsed and indexed URDF document (libxml2's tree, kept until it is
 * closed). Opening checks what every function here checks first
 * (well-formed XML without a DOCTYPE, a <robot> root, named links and
 * joints, parents and children given, no link declared twice or with two
 * parents), with the same errors. */
typedef struct proto_urdf_doc proto_urdf_doc;

/* Parses xml[0..len): a handle to free with proto_urdf_close(), or NULL
 * with *err set (nothing allocated). */
proto_urdf_doc *proto_urdf_open(const char *xml, size_t len, proto_error *err);
void proto_urdf_close(proto_urdf_doc *d); /* NULL is fine */

/* Extracts the joints on the path from base_link down to tip_link, in order
 * from the base, fixed joints included: joints[0..*n_joints-1]. cap is the
 * capacity of joints (and of names). names, if not NULL, receives each
 * joint's name (names[i] for joints[i]). base_link and tip_link must name
 * different <link> elements of the document and tip_link must be a
 * descendant of base_link. More than cap joints on the path gives
 * "too_large". With vel (not NULL, with vel_rc and vel_err) it also reads,
 * in the same parse, the <limit velocity> of each joint it returns: vel[i] for joints[i] (cap entries; 0 for a fixed joint, a joint
 * without one, or a value that is not positive). A velocity that is not a
 * number does not fail the call (only servo streams need velocities):
 * *vel_rc is then -1 and *vel_err says which joint, else *vel_rc is 0. */
int proto_urdf_doc_chain(const proto_urdf_doc *d, const char *base_link, const char *tip_link,
                         ik_joint *joints, size_t cap, size_t *n_joints,
                         char (*names)[PROTO_URDF_NAME_MAX], double *vel, int *vel_rc,
                         proto_error *vel_err, proto_error *err);

/* The joints on the paths from base_link down to each of the ntips links
 * tip_links[0..ntips-1], as a tree (a torso joint on the path of two arms
 * is listed once): joints[0..*n_joints-1] in the order the paths meet
 * them, parents before children, fixed joints included; parent[i] is the
 * index of the joint whose child link is joint i's parent link, or -1 when
 * that link is base_link; tip_joint[t] is the joint whose child is
 * tip_links[t]; names (if not NULL) as proto_urdf_doc_chain's. Every tip
 * must be a descendant of base_link, and no tip may be named twice or be
 * the base. More than cap joints in all gives "too_large". */
int proto_urdf_doc_tree(const proto_urdf_doc *d, const char *base_link,
                        const char *const *tip_links, size_t ntips, ik_joint *joints, int *parent,
                        size_t cap, size_t *n_joints, size_t *tip_joint,
                        char (*names)[PROTO_URDF_NAME_MAX], proto_error *err);

/* ---- the whole robot ---------------------------------------------------- */

typedef enum proto_urdf_shape_kind {
    PROTO_URDF_SPHERE = 0, /* size[0]: radius */
    PROTO_URDF_BOX,        /* size: x, y, z (full sides) */
    PROTO_URDF_CYLINDER,   /* size[0]: radius, size[1]: length (along z) */
    PROTO_URDF_MESH,       /* a mesh file: not read (a service cannot fetch it) */
    PROTO_URDF_OTHER       /* any other geometry element */
} proto_urdf_shape_kind;

/* One <collision> of a link: its kind, its <origin> in the link's frame. */
typedef struct proto_urdf_shape {
    proto_urdf_shape_kind kind;
    ik_xform origin;
    double size[3];
} proto_urdf_shape;

typedef struct proto_urdf_link_info {
    char name[PROTO_URDF_NAME_MAX]; /* truncated when long_name */
    bool long_name;
    int parent_joint;       /* index into joint[], -1 for a root link */
    size_t shape0, nshapes; /* its <collision>s: shape[shape0 ..] */
} proto_urdf_link_info;

typedef struct proto_urdf_joint_info {
    char name[PROTO_URDF_NAME_MAX];
    int parent, child; /* link indices (-1: not a <link> of the document) */
    bool usable;       /* decoded as proto_urdf_doc_chain() decodes a chain's
                          joints (floating, planar or malformed ones: not) */
    ik_joint joint;
} proto_urdf_joint_info;

typedef struct proto_urdf_robot {
    proto_urdf_link_info *link; /* document order */
    size_t nlinks;
    proto_urdf_joint_info *joint;
    size_t njoints;
    proto_urdf_shape *shape;
    size_t nshapes;
} proto_urdf_robot;

/* Reads every link (with its <collision> elements: origin, and sphere
 * radius, box size or cylinder radius and length; a mesh or another
 * geometry only noted) and every joint of the open document into *out
 * (heap arrays: free with proto_urdf_robot_free()). The document is
 * checked as proto_urdf_open() checks it (one parent per link, named
 * links and joints); a <collision> without geometry, or whose numbers are
 * not finite, not the right count or negative, is "invalid_urdf" naming
 * the link. Joints off any chain need not be usable. On error *out is
 * empty. */
int proto_urdf_doc_robot(const proto_urdf_doc *d, proto_urdf_robot *out, proto_error *err);
void proto_urdf_robot_free(proto_urdf_robot *r);

#endif /* PROTO_URDF_H */
