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
 * by its session and the jobs in flight, a registered one by the registry
 * too: proto_scene_ref, and proto_scene_free releases one reference).
 * Reentrant.
 *
 * Registered scenes (POST /v1/scenes, "scene_id" in requests and streams):
 * the body is a scene object with, optionally, "frame" (the convention its
 * coordinates are written in, "ros" by default, as a chain's own "frame"),
 * read once into ikd's internal frame, so that requests in any convention
 * use it. Its id is content-addressed as a chain's (SHA-256 of the body's
 * canonical text, 32 hex digits): the same scene registered twice, on any
 * replica, has the same id. The canonical text leaves out what is written
 * with its default, which is the same world as what leaves it out
 * ("frame": "ros", an empty list, an empty name, an orientation without
 * rotation; -0 is 0), so that equal worlds written alike have one id;
 * another convention, order, name or number is another scene. It keeps
 * that canonical text (the document the shared registry stores, and GET's
 * ?include=source), which decodes to the same id.
 */
#ifndef PROTO_SCENE_H
#define PROTO_SCENE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "proto/proto_error.h"
#include "proto/proto_frame.h"
#include "solver/ik_collide.h"

#define PROTO_MAX_OBSTACLES 256
#define PROTO_SCENE_NAME_MAX 64
#define PROTO_SCENE_ID_LEN 32 /* a registered scene's id: hex digits */

typedef struct proto_scene {
    atomic_size_t refs;
    size_t count;             /* obstacles: boxes, then spheres, then capsules */
    size_t nboxes, nspheres;  /* where each list begins */
    ik_obstacle *ob;          /* count, in the block */
    char (*name)[PROTO_SCENE_NAME_MAX]; /* count, "" when unnamed */
    /* registered scenes only (proto_scene_decode): */
    char id[PROTO_SCENE_ID_LEN + 1]; /* "" for a request's own scene */
    proto_frame frame;               /* the body's "frame" */
    char *text;                      /* the canonical body (malloc'd), or NULL */
    size_t text_len, memory;         /* memory: bytes held, block and text */
} proto_scene;

int proto_scene_read(const json_t *v, const char *path, proto_frame f, proto_scene **out,
                     proto_error *err);
/* A registration's body (POST /v1/scenes; lim NULL: the defaults): a new
 * scene with its id, or NULL with *err set (paths from the body's root). */
proto_scene *proto_scene_decode(const char *body, size_t len, const proto_limits *lim,
                                proto_error *err);
/* A scene's text as stored under a shared key (Redis) whose id is not the
 * id it decodes to: whether it is the id text had as written, with its
 * defaults in (an empty list, "frame": "ros", ...), which is how ikd named
 * scenes before ids left defaults out, and how a replica of that version
 * still stores them during a rolling upgrade. If so, s (decoded from text)
 * takes that id: the replica knows the scene by the id it was given. */
bool proto_scene_stored_as(proto_scene *s, const char *text, size_t len, const char *id);
/* The registered scene a request names by id (lookup/ud as for
 * proto_job_decode: a NULL lookup knows no id): 0 and a new reference in
 * *out, or -1 with *err set: unknown_scene (or invalid_request for an id
 * longer than 128 bytes) at path. */
int proto_scene_resolve(const char *id, const char *path, proto_chain_lookup_fn lookup, void *ud,
                        proto_scene **out, proto_error *err);
/* A registered scene's description (GET /v1/scenes/{id}): {"id", "frame",
 * "obstacles", "boxes", "spheres", "capsules", "memory_bytes"} and, with source,
 * "scene": the body it was registered with (canonical). New reference, or
 * NULL when out of memory. */
json_t *proto_scene_describe(const proto_scene *s, bool source);
proto_scene *proto_scene_ref(proto_scene *s);
void proto_scene_free(proto_scene *s);
/* What answers call obstacle i: its name, else "<list>/<index>". */
void proto_scene_obstacle_name(const proto_scene *s, int i, char *out, size_t size);
/* The solver's view of s (NULL: no obstacle). */
ik_collide_scene proto_scene_view(const proto_scene *s);

#endif /* PROTO_SCENE_H */
