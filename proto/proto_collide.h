/*
 * proto_collide.h: a robot's collision model (solver/ik_collide.h) built
 * from its documents for a URDF chain or tree: spheres per link given by
 * the client (the wire's collision_spheres, cuRobo's model), the URDF's
 * own <collision> primitives, the kinematic skeleton as a coarse model,
 * and an SRDF's allowed pairs (MoveIt's <disable_collisions>).
 *
 * A chain or tree given by a joint list (proto_collide_build_joints) has
 * links too: PROTO_COLLIDE_BASE, the base (before the first joint), and
 * for each joint the link it moves, named by the joint's name (a fixed
 * joint's link rides on its parent's); they have no geometry of their own
 * but the client's spheres and the skeleton.
 *
 * WHICH LINKS. The links rigidly joined to the chain's bodies: the base
 * link, the child link of every joint on the paths from the base to the
 * tips, and every link reached from those through fixed joints only (a
 * tool or a hand beyond the tip, a sensor on a forearm, the world link
 * above the base). A link beyond a movable joint that is not on a path (a
 * gripper's finger, the other arm when solving one) is OFF_CHAIN: not in
 * the model. Each link in the model is placed on its body with the fixed
 * transform between them (the joint origins composed).
 *
 * WHAT GEOMETRY, per link in the model, the first that applies:
 *   SPHERES     the client's spheres for it ([x, y, z, radius] in the
 *               link's frame), whatever the URDF says;
 *   PRIMITIVES  the URDF's <collision> spheres, boxes and cylinders
 *               (covered by spheres, ik_collide.h); meshes beside them are
 *               not used (meshes_ignored);
 *   SKELETON    spec.skeleton_radius > 0 and the link is the frame of its
 *               body (the base link, or a movable joint's child): capsules
 *               from its joint to the next (ik_collide_add_skeleton);
 *   UNMODELLED  only meshes (or geometry other than the three primitives):
 *               not checked, and said so (never guessed);
 *   NONE        no collision geometry at all (not checked, as in MoveIt).
 *
 * ALLOWED PAIRS: ik_collide_model_finish()'s defaults (rigidly joined and
 * adjacent links), then the SRDF's entries (proto_srdf.h) for the links in
 * the model (entries naming links off the chain are skipped; links the
 * URDF does not have are an error).
 *
 * ERRORS (0 or -1 with *err, path relative to the chain object):
 *   invalid_request  a sphere that is not four finite numbers or has a
 *                    negative radius (path /collision_spheres/<link>/<i>);
 *   invalid_chain    collision_spheres for a link the URDF (or the joint
 *                    list) does not have (path /collision_spheres/<link>);
 *                    a joint list whose links' names are not all
 *                    different (no path: the caller checks them first);
 *   invalid_urdf     the URDF's collisions malformed;
 *   invalid_srdf     the SRDF malformed or naming a link the URDF does not
 *                    have (path /srdf);
 *   too_large        more spheres than IK_COLLIDE_MAX_SPHERES or links than
 *                    IK_COLLIDE_MAX_LINKS in the model.
 *
 * Memory: *links is a heap array (free()); the model is the caller's.
 * Thread-safe; allocates only while running (libxml2's trees).
 */
#ifndef PROTO_COLLIDE_H
#define PROTO_COLLIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "proto/proto_urdf.h"
#include "solver/ik_collide.h"
#include "solver/ik_tree.h"

/* The one table of link states: X(ENUM, wire name, meaning). */
#define PROTO_LINK_STATE_MAP(X)                                                                    \
    X(SPHERES, "spheres", "the client's spheres")                                                  \
    X(PRIMITIVES, "primitives", "the URDF's collision spheres, boxes and cylinders")               \
    X(SKELETON, "skeleton", "capsules along the kinematic skeleton")                               \
    X(UNMODELLED, "unmodelled", "only meshes: not checked")                                        \
    X(NONE, "none", "no collision geometry")                                                       \
    X(OFF_CHAIN, "off_chain", "beyond a joint off the chain: not in the model")

typedef enum proto_link_state {
#define PROTO__LINK_STATE_ENUM(name, wire, text) PROTO_LINK_##name,
    PROTO_LINK_STATE_MAP(PROTO__LINK_STATE_ENUM)
#undef PROTO__LINK_STATE_ENUM
} proto_link_state;

/* The wire name of a state; "" outside the table. Static. */
const char *proto_link_state_name(proto_link_state s);

typedef struct proto_collide_link {
    char name[PROTO_URDF_NAME_MAX];
    proto_link_state state;
    int model_link;      /* its index in the model, -1 when not in it */
    size_t spheres;      /* spheres it has in the model */
    bool meshes_ignored; /* PRIMITIVES: meshes beside them not used */
} proto_collide_link;

/* One sphere the client gave for a link: [x, y, z, radius], link frame. */
typedef struct proto_collide_sphere {
    const char *link;
    double s[4];
} proto_collide_sphere;

typedef struct proto_collide_spec {
    const proto_collide_sphere *spheres; /* grouped by link, any order */
    size_t nspheres;
    double skeleton_radius; /* > 0: SKELETON for links without
                               geometry; 0: none */
    const char *srdf;       /* NULL: none */
    size_t srdf_len;
} proto_collide_spec;

/* Builds *m for the chain (tree NULL: ntips must be 1 and chain the chain
 * compiled from the joints proto_urdf_doc_chain() reads from the same
 * document, base and tip) or the tree (chain NULL: the tree built from the
 * same document, base and tips, in that order) as described above,
 * finished and with the SRDF applied; *links (heap) and *nlinks describe
 * every link of the URDF. The URDF is the robot already read
 * (proto_urdf_doc_robot, from the document the chain or tree was read
 * from: no second parse; the caller may free the document first). */
int proto_collide_build_robot(const proto_urdf_robot *urdf, const char *base,
                              const char *const *tips, size_t ntips, const ik_chain *chain,
                              const ik_tree *tree, const proto_collide_spec *spec,
                              ik_collide_model *m, proto_collide_link **links, size_t *nlinks,
                              proto_error *err);

/* The base link's name on a chain or tree given by a joint list. */
#define PROTO_COLLIDE_BASE "base"

/* Builds *m as proto_collide_build_robot() does for the chain (parent NULL, tree
 * NULL, ntips 1) or the tree (parent[i]: joint i's parent joint, -1 for
 * the base; chain NULL) given by the n joints (joints[i] named names[i],
 * fixed ones included, in the list's order) that were compiled into it,
 * whose tips end in the joints tip_joint[]; *links as there, link 0 the
 * base, link i + 1 joint i's. */
int proto_collide_build_joints(const ik_joint *joints, const int *parent,
                               char (*names)[PROTO_URDF_NAME_MAX], size_t n,
                               const size_t *tip_joint, size_t ntips, const ik_chain *chain,
                               const ik_tree *tree, const proto_collide_spec *spec,
                               ik_collide_model *m, proto_collide_link **links, size_t *nlinks,
                               proto_error *err);

#endif /* PROTO_COLLIDE_H */
