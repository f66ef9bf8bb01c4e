/*
 * ik_collide.h: the robot's geometry as spheres on its links, obstacles in
 * its base frame, and the distances between them: what a collision-aware
 * solve (ik_numeric.h, ik_tree.h with a collision check) and a servo that
 * slows near obstacles need.
 *
 * THE ROBOT (ik_collide_model). Geometry hangs on BODIES: the rigid frames
 * of the kinematic structure. Body 0 is the base (the chain's or tree's
 * root frame, never moving); every other body has a parent body, a fixed
 * transform from the parent's frame to its joint frame (URDF origin, as
 * ik_chain.h's pre[]) and either a joint moved by one solver variable
 * (revolute, continuous or prismatic, ik_chain.h semantics) or none
 * (fixed: a tip frame). ik_collide_model_from_chain() makes body k + 1 of
 * movable joint k and body dof + 1 of the tip; ik_collide_model_from_tree()
 * one body per tree variable and one per tip. LINKS are named parts of the
 * robot (URDF <link>s; the names stay with proto/): each sits on one body
 * with a fixed offset (its frame in the body's frame). SPHERES are the
 * geometry (cuRobo's model: Sundaralingam et al., "cuRobo: parallelized
 * collision-free robot motion generation", ICRA 2023): a centre in its
 * link's frame and a radius. Other primitives are turned into spheres that
 * cover them when they are added (CONSERVATIVE: the covered volume
 * contains the primitive, so a distance measured on the spheres is never
 * larger than the primitive's):
 *   capsule (segment a-b, radius r): spheres of radius 1.15 r on the
 *       segment, 1.14 r apart (the capsule's surface is covered, each
 *       sphere bulging at most 0.15 r beyond it);
 *   cylinder (URDF: radius r, length l along the z axis of its pose):
 *       spheres on the axis, each covering a slice of height 2 h with
 *       radius sqrt(r^2 + h^2), h at most r / 2;
 *   box (URDF: full size along x, y, z of its pose): a grid of cells, each
 *       covered by the sphere through its corners, cells at most as long as
 *       the box's smallest side (at most 64 spheres per box);
 *   the kinematic skeleton (ik_collide_add_skeleton): a capsule from every
 *       joint to the next of radius r (the coarse model of a robot that
 *       has no geometry of its own).
 *
 * ALLOWED PAIRS (MoveIt's allowed-collision matrix). Two links of the
 * robot are checked against each other unless the pair is allowed.
 * ik_collide_model_finish() allows every pair of links whose bodies are
 * rigidly joined (the same body, or bodies joined by fixed joints only:
 * their distance never changes) or ADJACENT (joined by one joint: MoveIt's
 * default, which the SRDF of a MoveIt robot lists as "Adjacent");
 * ik_collide_allow() allows or forbids any pair afterwards (SRDF
 * <disable_collisions link1 link2>); ik_collide_allow_colliding() allows
 * every pair in contact at a given configuration (MoveIt setup
 * assistant's "Default": for generated models, whose neighbouring links
 * overlap at the joints). Links are always checked against obstacles.
 *
 * THE WORLD (ik_obstacle, ik_collide_scene): spheres (centre, radius),
 * boxes (centre, orientation, full size) and capsules (from, to, radius), in
 * the base frame and the chain's length unit; the scene is an array of
 * them owned by the caller.
 *
 * DISTANCES are signed, surface to surface: positive is the gap, negative
 * the depth of penetration (for a sphere inside a box, minus the distance
 * from its centre to the nearest face plus its radius). The distance of the
 * robot is the smallest over every sphere pair of links that are not
 * allowed and every sphere-obstacle pair; the CLOSEST PAIR names the two
 * links (or the link and the obstacle) and the nearest points.
 *
 * THE PENALTY (for the search): P(q) = 1/2 sum over the same pairs of
 * max(0, active - d)^2, whose gradient with respect to the variables
 * pushes every pair nearer than `active` apart; it is computed by one
 * backward pass over the bodies (the forces on the spheres summed into
 * forces and moments per body, then projected on each joint's axis), in
 * O(spheres + bodies) after the pairs.
 *
 * UNITS AND FRAMES: ik_math.h's conventions; lengths in the chain's unit,
 * everything in the base frame.
 *
 * MEMORY: a model has fixed capacity (IK_COLLIDE_MAX_BODIES, _LINKS,
 * _SPHERES), holds no pointers and can be copied and shared read-only
 * between threads; it is large (about 70 KB): keep it off small stacks.
 * Queries allocate nothing: they take a workspace of
 * ik_collide_workspace_size(model) bytes (any alignment), scratch only,
 * one per concurrent call. A scene is the caller's array, read only.
 *
 * THREADS: no globals, no static state.
 *
 * NO NaN: builders reject non-finite numbers, negative radii and empty
 * boxes (IK_EINVAL, nothing changed); queries on finite joint values
 * return finite distances (+INFINITY only when there is no pair at all).
 *
 * Performance: links are culled by a bounding sphere per link (against an
 * obstacle, by that sphere's own distance from it), and a link's spheres
 * are posed only when a pair needs them, so obstacles far from the arm
 * cost a few operations each. Measured figures: build/ikbench collide.
 *
 * Not here: meshes (a service cannot fetch them; proto/ reports links that
 * have only meshes), continuous (swept) collision between two poses, the
 * search itself (ik_numeric.c, ik_tree.c with ik_avoid.h).
 */
#ifndef IK_COLLIDE_H
#define IK_COLLIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ik_chain.h"
#include "ik_math.h"

#define IK_COLLIDE_MAX_BODIES  160
#define IK_COLLIDE_MAX_LINKS   128
#define IK_COLLIDE_MAX_SPHERES 1024
/* The most spheres one box, cylinder or capsule is covered with. */
#define IK_COLLIDE_MAX_COVER 64

struct ik_tree;

/* ---- the robot ------------------------------------------------------------ */

typedef struct ik_collide_body {
    int parent;         /* body index below this one; -1 for body 0 only */
    int var;            /* the variable that moves its joint, -1: fixed */
    ik_joint_type type; /* REVOLUTE, CONTINUOUS, PRISMATIC; FIXED when var < 0 */
    ik_vec3 axis;       /* unit, joint frame */
    double pre_R[9];    /* parent frame -> joint frame at zero motion */
    double pre_p[3];
    int rigid; /* derived: the nearest body at or below this one
                  that has a joint (0 for the base) */
} ik_collide_body;

typedef struct ik_collide_sphere {
    double c[3];   /* centre, in its body's frame */
    double r;      /* radius, >= 0 */
    uint16_t link; /* its link */
} ik_collide_sphere;

typedef struct ik_collide_link {
    int body;
    ik_xform offset; /* the link frame in its body's frame */
    uint32_t first;  /* derived by finish: its spheres, sorted by link */
    uint32_t count;
    double bound_c[3]; /* derived: a sphere (body frame) holding them all */
    double bound_r;
} ik_collide_link;

typedef struct ik_collide_model {
    size_t nbodies, nlinks, nspheres;
    size_t nvars;     /* variables (largest var + 1) */
    size_t task_rows; /* the most rows a solver's task has (6 per tip) */
    bool finished;    /* ik_collide_model_finish() ran since the last add */
    double scale;     /* derived: mean sphere radius (activation distances) */
    size_t ntips;     /* tip bodies recorded (from_chain 1, from_tree ntips) */
    int tip_body[16];
    int var_body[IK_COLLIDE_MAX_BODIES]; /* variable v's body */
    ik_collide_body body[IK_COLLIDE_MAX_BODIES];
    ik_collide_link link[IK_COLLIDE_MAX_LINKS];
    ik_collide_sphere sphere[IK_COLLIDE_MAX_SPHERES];
    /* allowed[a][b / 64] bit b % 64: the pair (a, b) is not checked */
    uint64_t allowed[IK_COLLIDE_MAX_LINKS][IK_COLLIDE_MAX_LINKS / 64];
} ik_collide_model;

/* The bodies of chain c (body 0 the base, k + 1 joint k, dof + 1 the tip),
 * no links. IK_OK, or IK_EINVAL (c NULL or invalid, or more bodies than
 * the capacity); on error *m is zeroed. */
int ik_collide_model_from_chain(ik_collide_model *m, const ik_chain *c);
/* The bodies of a tree (ik_tree.h): body 0 the root, one body per
 * variable (in the order the tips' chains meet them), then one per tip
 * (body ik_collide_tip_body(m, t)). As from_chain otherwise. */
int ik_collide_model_from_tree(ik_collide_model *m, const struct ik_tree *t);
/* The body of tip t of a model made by from_tree (from_chain: t 0 only);
 * -1 when there is none. */
int ik_collide_tip_body(const ik_collide_model *m, size_t t);
/* The body moved by variable v, -1 when there is none. */
int ik_collide_var_body(const ik_collide_model *m, size_t v);

/* Adds a link on body `body` with its frame at `offset` in the body's
 * frame; returns its index (>= 0), or IK_EINVAL (no such body, offset not
 * finite or its quaternion not unit within 1e-6) or IK_ENOSPC (no room). */
int ik_collide_add_link(ik_collide_model *m, int body, ik_xform offset);

/* Geometry of link `link`, given in the link's frame. Each returns IK_OK,
 * IK_EINVAL (no such link, a number not finite, a negative radius, a box
 * side or cylinder length not positive, a quaternion not unit) or
 * IK_ENOSPC (the spheres would exceed IK_COLLIDE_MAX_SPHERES); on error
 * the model is unchanged. A radius of 0 is a point. */
int ik_collide_add_sphere(ik_collide_model *m, int link, ik_vec3 centre, double radius);
int ik_collide_add_capsule(ik_collide_model *m, int link, ik_vec3 a, ik_vec3 b, double radius);
int ik_collide_add_cylinder(ik_collide_model *m, int link, ik_xform pose, double radius,
                            double length);
int ik_collide_add_box(ik_collide_model *m, int link, ik_xform pose, ik_vec3 size);
/* The kinematic skeleton: for every body b with link_of_body[b] >= 0 (an
 * array of m->nbodies entries), a capsule of `radius` on that link from
 * the body's origin to the joint origin of each child body (a sphere when
 * the child sits at the origin). IK_OK, or an error as above. */
int ik_collide_add_skeleton(ik_collide_model *m, const int *link_of_body, double radius);

/* Sorts the spheres by link, computes the bounds, the scale and the
 * default allowed pairs (rigidly joined and adjacent links, see above).
 * Must be called after the last add and before any query (queries on an
 * unfinished model report IK_EINVAL / no distance); may be called again
 * after more adds. Returns IK_OK or IK_EINVAL (m NULL). */
int ik_collide_model_finish(ik_collide_model *m);
/* Allows (allowed true) or forbids the pair (a, b) of links; a == b is
 * ignored (a link is never checked against itself). Returns IK_OK or
 * IK_EINVAL (no such link). Call after ik_collide_model_finish(), which
 * sets the defaults. */
int ik_collide_allow(ik_collide_model *m, int a, int b, bool allowed);
bool ik_collide_allowed(const ik_collide_model *m, int a, int b);
/* Allows every pair of links in contact (distance < 0) at configuration q
 * (m->nvars values); returns how many pairs were newly allowed, or a
 * negative ik_status (IK_EINVAL, IK_ENOSPC when ws_size is too small). */
int ik_collide_allow_colliding(ik_collide_model *m, const double *q, void *ws, size_t ws_size);

/* ---- the world ------------------------------------------------------------ */

typedef enum ik_shape { IK_SHAPE_SPHERE = 0, IK_SHAPE_BOX, IK_SHAPE_CAPSULE } ik_shape;

typedef struct ik_obstacle {
    ik_shape shape;
    ik_vec3 p;      /* sphere, box: centre; capsule: one end */
    ik_vec3 p2;     /* capsule: the other end */
    ik_vec3 half;   /* box: half sizes */
    ik_quat q;      /* box: orientation (unit) */
    double radius;  /* sphere, capsule */
    double R[9];    /* derived: box rotation matrix */
    double bound_r; /* derived: a sphere around bound_c holding it */
    ik_vec3 bound_c;
} ik_obstacle;

typedef struct ik_collide_scene {
    const ik_obstacle *obstacle; /* may be NULL when count is 0 */
    size_t count;
} ik_collide_scene;

/* Obstacles; each returns IK_OK or IK_EINVAL (a number not finite, radius
 * negative, a box side not positive, a quaternion zero; the quaternion is
 * normalised) with *o unchanged. */
int ik_obstacle_sphere(ik_obstacle *o, ik_vec3 centre, double radius);
int ik_obstacle_box(ik_obstacle *o, ik_vec3 centre, ik_quat orientation, ik_vec3 size);
int ik_obstacle_capsule(ik_obstacle *o, ik_vec3 from, ik_vec3 to, double radius);

/* ---- queries -------------------------------------------------------------- */

typedef struct ik_collide_pair {
    int link;        /* a robot link; -1 when there is no pair */
    int other_link;  /* the other link of a self-collision, or -1 */
    int obstacle;    /* the obstacle's index in the scene, or -1 */
    double distance; /* signed, surface to surface; +INFINITY: no pair */
    ik_vec3 point;   /* the nearest point of the link's sphere, base frame */
    ik_vec3 other;   /* ... of the other link's sphere or of the obstacle */
} ik_collide_pair;

/* Workspace bytes for queries and for the searches of ik_numeric.h and
 * ik_tree.h on this model (scratch, see MEMORY). Never 0. */
size_t ik_collide_workspace_size(const ik_collide_model *m);

/* The robot's signed distance at q (m->nvars values): the smallest over
 * the pairs that are checked (see DISTANCES), +INFINITY when there are
 * none (no geometry). closest (may be NULL) gets the pair. NaN for invalid
 * input (NULL model or q, unfinished model, workspace too small). */
double ik_collide_distance(const ik_collide_model *m, const ik_collide_scene *scene,
                           const double *q, void *ws, size_t ws_size, ik_collide_pair *closest);

/* The penalty of THE PENALTY above with activation distance `active` at
 * q, its gradient into grad (m->nvars values; may be NULL) and the
 * closest pair (exact while it is nearer than `active`; otherwise only
 * known to be at least `active` away: a pair seen, or none, distance
 * +INFINITY). Returns the penalty (>= 0), NaN for invalid input. */
double ik_collide_penalty(const ik_collide_model *m, const ik_collide_scene *scene, const double *q,
                          double active, double *grad, void *ws, size_t ws_size,
                          ik_collide_pair *closest);

/* The distance from the obstacles (no self pairs) of the links rigidly
 * joined to body `body` when that body's frame is `pose` (base frame),
 * whatever the variables: the base's links (body 0) or, for a full-pose
 * target, the links that move with the tip. +INFINITY when they have no
 * spheres or there is no obstacle. */
double ik_collide_rigid_distance(const ik_collide_model *m, const ik_collide_scene *scene, int body,
                                 ik_xform pose, ik_collide_pair *closest);

/* ---- servo ---------------------------------------------------------------- */

/* How much of a servo's motion from q to next (this period's step, already
 * velocity limited: ik_servo.h) may be taken near obstacles, MoveIt Servo's
 * collision velocity scaling: 1 when the step does not bring the robot
 * nearer (a motion away from an obstacle is never held back); otherwise
 * at most (d - margin) / slow, d being the distance at q (the arm slows
 * in proportion to the room left once nearer than margin + slow), and
 * small enough that the distance at q + s (next - q) stays at least
 * margin (bisected): the arm stops short of the obstacle. Returns s in
 * [0, 1] (q + s (next - q) is the step to take) and the closest pair at q
 * in closest (may be NULL); -1 on invalid input (slow not positive,
 * margin negative, numbers not finite, workspace too small). */
double ik_collide_servo_scale(const ik_collide_model *m, const ik_collide_scene *scene,
                              const double *q, const double *next, double margin, double slow,
                              void *ws, size_t ws_size, ik_collide_pair *closest);

/* ---- what a solver is asked to do ------------------------------------------- */

/* The collision check handed to ik_numeric_solve() (ik_numeric_opts) and
 * ik_tree_solve() (ik_tree_opts). */
typedef struct ik_collide_check {
    const ik_collide_model *model; /* finished; built on the same chain/tree */
    ik_collide_scene scene;        /* may be empty: self-collision only */
    double margin;                 /* >= 0: the clearance an answer needs */
    bool avoid;                    /* true: an answer succeeds only with
                                      distance >= margin, and the search
                                      looks for one; false: the distance is
                                      only measured and reported */
    void *ws;                      /* ik_collide_workspace_size(model) bytes */
    size_t ws_size;
} ik_collide_check;

/* IK_OK when chk can be used with nvars variables: a finished model with
 * nvars variables, margin finite and >= 0, obstacles finite, the workspace
 * large enough; IK_EINVAL or IK_ENOSPC otherwise. */
int ik_collide_check_valid(const ik_collide_check *chk, size_t nvars);

#endif /* IK_COLLIDE_H */
