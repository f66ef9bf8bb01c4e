/*
 * proto_scene.h: the world a request's, a batch's or a stream's answers
 * must keep the robot out of (the wire's "scene", proto/README.md
 * "Collisions"): boxes, spheres and capsules in the chain's base frame and
 * units, written in the request's frame convention (options.frame, as its
 * targets are).
 *
 *   {"boxes":    [{"size": [x, y, z], "position": [x, y, z],
 *                  "orientation": [x, y, z, w], "name": "pillar"}],
 *    "spheres":  [{"radius": r, "position": [x, y, z]}],
 *    "capsules": [{"radius": r, "from": [x, y, z], "to": [x, y, z]}]}
 *
 * Every member is optional (an empty scene checks self-collision only);
 * "orientation" defaults to none; "name" (at most PROTO_SCENE_NAME_MAX - 1
 * bytes) is what answers call the obstacle, else "boxes/1" (its list and
 * index). A box side must be > 0, a radius >= 0. At most
 * PROTO_MAX_OBSTACLES obstacles in all (too_large); the bytes are the
 * request's, bounded by its body limit.
 *
 * Errors: 0, or -1 with *err set (invalid_request, too_large) at the
 * value's JSON path.
 *
 * Memory: one heap block, reference counted (a stream's scene is shared
 * by its session and the jobs in flight: proto_scene_ref, and
 * proto_scene_free releases one reference). Reentrant.
 */
#ifndef PROTO_SCENE_H
#define PROTO_SCENE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>

#include "proto/proto_error.h"
#include "proto/proto_frame.h"
#include "solver/ik_collide.h"

#define PROTO_MAX_OBSTACLES 256
#define PROTO_SCENE_NAME_MAX 64

typedef struct proto_scene {
    atomic_size_t refs;
    size_t count;             /* obstacles: boxes, then spheres, then capsules */
    size_t nboxes, nspheres;  /* where each list begins */
    ik_obstacle *ob;          /* count, in the block */
    char (*name)[PROTO_SCENE_NAME_MAX]; /* count, "" when unnamed */
} proto_scene;

int proto_scene_read(const json_t *v, const char *path, proto_frame f, proto_scene **out,
                     proto_error *err);
proto_scene *proto_scene_ref(proto_scene *s);
void proto_scene_free(proto_scene *s);
/* What answers call obstacle i: its name, else "<list>/<index>". */
void proto_scene_obstacle_name(const proto_scene *s, int i, char *out, size_t size);
/* The solver's view of s (NULL: no obstacle). */
ik_collide_scene proto_scene_view(const proto_scene *s);

#endif /* PROTO_SCENE_H */
