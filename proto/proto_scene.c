/*
 * proto_scene.c: reading a scene (boxes, spheres, capsules) into the
 * solver's obstacles (contract in proto_scene.h).
 */
#include "proto/proto_scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json.h"
#include "proto/proto_kind.h"

static const char *const lists[] = {"boxes", "spheres", "capsules", NULL}; /* for the key check */

/* A point member key of obstacle o at po, converted from frame f. */
static int point(const json_t *o, const char *po, const char *key, proto_frame f, ik_vec3 *out,
                 proto_error *err)
{
    char p[PROTO_PATH_MAX];
    json_t *v = proto_json_require(o, po, key, err);
    proto_json_path_key(p, po, key);
    if (!v || proto__vec3(v, p, out, err))
        return -1;
    *out = proto_frame_vec_in(f, *out);
    return 0;
}

static int radius(const json_t *o, const char *po, double *r, proto_error *err)
{
    char p[PROTO_PATH_MAX];
    json_t *v = proto_json_require(o, po, "radius", err);
    proto_json_path_key(p, po, "radius");
    return !v || proto_json_number(v, p, 0, PROTO_MAX_ABS, r, err) ? -1 : 0;
}

/* Obstacle e of list k at po into *ob and name. */
static int obstacle(const json_t *e, const char *po, int k, proto_frame f, ik_obstacle *ob,
                    char name[PROTO_SCENE_NAME_MAX], proto_error *err)
{
    static const char *const keys[3][5] = {{"size", "position", "orientation", "name", NULL},
                                           {"radius", "position", "name", NULL},
                                           {"radius", "from", "to", "name", NULL}};
    if (proto_json_check_object(e, po, keys[k], err))
        return -1;
    char p[PROTO_PATH_MAX];
    const json_t *jn = json_object_get(e, "name");
    if (jn) {
        const char *s;
        proto_json_path_key(p, po, "name");
        if (proto_json_string(jn, p, PROTO_SCENE_NAME_MAX - 1, &s, err))
            return -1;
        snprintf(name, PROTO_SCENE_NAME_MAX, "%s", s);
    }
    ik_vec3 a, b;
    double r;
    int st;
    if (k == 0) {
        ik_vec3 size;
        ik_quat q = {0.0, 0.0, 0.0, 1.0};
        json_t *v = proto_json_require(e, po, "size", err);
        proto_json_path_key(p, po, "size");
        if (!v || proto__vec3(v, p, &size, err))
            return -1;
        if (!(size.x > 0.0 && size.y > 0.0 && size.z > 0.0))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "a box's size must be three lengths > 0");
        if (point(e, po, "position", f, &a, err))
            return -1;
        const json_t *jq = json_object_get(e, "orientation");
        proto_json_path_key(p, po, "orientation");
        if (jq && proto__quat(jq, p, &q, err))
            return -1;
        /* a side keeps its length whatever the convention: the box's own
         * axes are converted as points are */
        size = proto_frame_vec_in(f, size);
        size = ik_v3(fabs(size.x), fabs(size.y), fabs(size.z));
        st = ik_obstacle_box(ob, a, proto_frame_quat_in(f, q), size);
    } else if (k == 1) {
        if (radius(e, po, &r, err) || point(e, po, "position", f, &a, err))
            return -1;
        st = ik_obstacle_sphere(ob, a, r);
    } else {
        if (radius(e, po, &r, err) || point(e, po, "from", f, &a, err) ||
            point(e, po, "to", f, &b, err))
            return -1;
        st = ik_obstacle_capsule(ob, a, b, r);
    }
    if (st != IK_OK)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, po, "the obstacle is not valid");
    return 0;
}

int proto_scene_read(const json_t *v, const char *path, proto_frame f, proto_scene **out,
                     proto_error *err)
{
    *out = NULL;
    if (proto_json_check_object(v, path, lists, err))
        return -1;
    char pl[3][PROTO_PATH_MAX], po[PROTO_PATH_MAX];
    size_t n[3] = {0, 0, 0}, total = 0;
    for (int k = 0; k < 3; k++) {
        const json_t *l = json_object_get(v, lists[k]);
        proto_json_path_key(pl[k], path, lists[k]);
        if (l && proto_json_array(l, pl[k], 0, PROTO_MAX_OBSTACLES, true, &n[k], err))
            return -1;
        total += n[k];
    }
    if (total > PROTO_MAX_OBSTACLES)
        return proto_error_set(err, PROTO_E_TOO_LARGE, path,
                               "the scene has %zu obstacles; the limit is %d", total,
                               PROTO_MAX_OBSTACLES);
    proto_scene *s = calloc(1, sizeof *s + total * (sizeof(ik_obstacle) + PROTO_SCENE_NAME_MAX));
    if (!s)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    atomic_init(&s->refs, 1);
    s->memory = sizeof *s + total * (sizeof(ik_obstacle) + PROTO_SCENE_NAME_MAX);
    s->ob = (ik_obstacle *)(s + 1);
    s->name = (char(*)[PROTO_SCENE_NAME_MAX])(s->ob + total);
    s->nboxes = n[0];
    s->nspheres = n[1];
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < n[k]; i++) {
            proto_json_path_index(po, pl[k], i);
            if (obstacle(json_array_get(json_object_get(v, lists[k]), i), po, k, f,
                         &s->ob[s->count], s->name[s->count], err)) {
                free(s);
                return -1;
            }
            s->count++;
        }
    *out = s;
    return 0;
}

proto_scene *proto_scene_ref(proto_scene *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void proto_scene_free(proto_scene *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        free(s->text);
        free(s);
    }
}

void proto_scene_obstacle_name(const proto_scene *s, int i, char *out, size_t size)
{
    if (!s || i < 0 || (size_t)i >= s->count) {
        snprintf(out, size, "?");
        return;
    }
    if (s->name[i][0]) {
        snprintf(out, size, "%s", s->name[i]);
        return;
    }
    size_t k = (size_t)i;
    int list = k < s->nboxes ? 0 : k < s->nboxes + s->nspheres ? 1 : 2;
    size_t idx = list == 0 ? k : list == 1 ? k - s->nboxes : k - s->nboxes - s->nspheres;
    snprintf(out, size, "%s/%zu", lists[list], idx);
}

ik_collide_scene proto_scene_view(const proto_scene *s)
{
    ik_collide_scene v = {NULL, 0};
    if (s) {
        v.obstacle = s->ob;
        v.count = s->count;
    }
    return v;
}

/* ---- registered scenes ------------------------------------------------------------ */

/* v, a number or an array of them, with -0 written as 0. */
static void unsigned_zeros(json_t *v)
{
    if (json_is_real(v) && json_real_value(v) == 0.0)
        json_real_set(v, 0.0);
    for (size_t i = 0; i < json_array_size(v); i++)
        unsigned_zeros(json_array_get(v, i));
}

/* A valid registration's body as its id names it (a new tree, NULL when
 * out of memory): without what is written with its default, which is the
 * same world as what leaves it out: "frame": "ros", an empty list, an
 * empty name, an orientation without rotation (x, y, z all 0); and -0
 * written as 0. Keys are sorted and numbers written alike when hashed
 * (proto__content_id). Applied to its own result it changes nothing, so
 * the text kept (what Redis stores) decodes to the same id. */
static json_t *canonical(const json_t *root)
{
    json_t *c = json_deep_copy(root);
    const char *frame = json_string_value(json_object_get(c, "frame"));
    if (frame && strcmp(frame, proto_frame_names[PROTO_FRAME_ROS]) == 0)
        json_object_del(c, "frame");
    for (int k = 0; c && lists[k]; k++) {
        json_t *l = json_object_get(c, lists[k]);
        if (l && json_array_size(l) == 0) {
            json_object_del(c, lists[k]); /* frees l */
            continue;
        }
        for (size_t i = 0; i < json_array_size(l); i++) {
            json_t *o = json_array_get(l, i), *v;
            const char *name = json_string_value(json_object_get(o, "name"));
            if (name && !name[0])
                json_object_del(o, "name");
            json_t *q = json_object_get(o, "orientation");
            if (q && json_number_value(json_array_get(q, 0)) == 0.0 &&
                json_number_value(json_array_get(q, 1)) == 0.0 &&
                json_number_value(json_array_get(q, 2)) == 0.0)
                json_object_del(o, "orientation");
            const char *key;
            json_object_foreach(o, key, v)
                unsigned_zeros(v);
        }
    }
    return c;
}

proto_scene *proto_scene_decode(const char *body, size_t len, const proto_limits *lim,
                                proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_SCENE, err);
    if (!root)
        return NULL;
    proto_scene *s = NULL;
    json_t *obstacles = NULL, *canon = NULL;
    int frame = PROTO_FRAME_ROS;
    if (!json_is_object(root)) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                        "a scene is an object: {\"boxes\": [...], \"spheres\": [...], "
                        "\"capsules\": [...], \"frame\": \"ros\"}");
        goto out;
    }
    if (proto__opt_enum(root, "", "frame", proto_frame_names, PROTO_FRAME_ROS, &frame, err) ||
        !(obstacles = json_copy(root)))
        goto out;
    json_object_del(obstacles, "frame");
    if (proto_scene_read(obstacles, "", (proto_frame)frame, &s, err))
        goto out;
    s->frame = (proto_frame)frame;
    if (!(canon = canonical(root)) || proto__content_id(canon, s->id, &s->text, &s->text_len)) {
        proto_scene_free(s);
        s = NULL;
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    s->memory += s->text_len + 1;
out:
    json_decref(canon);
    json_decref(obstacles);
    json_decref(root);
    return s;
}

bool proto_scene_stored_as(proto_scene *s, const char *text, size_t len, const char *id)
{
    char as_written[PROTO_ID_HEX + 1];
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    bool same = v && proto__content_id(v, as_written, NULL, NULL) == 0 &&
                strcmp(as_written, id) == 0;
    json_decref(v);
    if (same)
        memcpy(s->id, as_written, sizeof as_written);
    return same;
}

int proto_scene_resolve(const char *id, const char *path, proto_chain_lookup_fn lookup, void *ud,
                        proto_scene **out, proto_error *err)
{
    *out = NULL;
    size_t n = strlen(id);
    if (n > 128)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "is too long (%zu bytes; at most 128)", n);
    if (lookup)
        *out = lookup(ud, PROTO_REG_SCENE, id);
    if (!*out)
        return proto_error_set(err, PROTO_E_UNKNOWN_SCENE, path,
                               "no scene is registered with id \"%s\" (POST /v1/scenes)", id);
    return 0;
}

json_t *proto_scene_describe(const proto_scene *s, bool source)
{
    json_t *d = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "id", s->id, "frame",
                          proto_frame_names[s->frame], "obstacles", (json_int_t)s->count,
                          "boxes", (json_int_t)s->nboxes, "spheres", (json_int_t)s->nspheres,
                          "capsules", (json_int_t)(s->count - s->nboxes - s->nspheres), "memory_bytes",
                          (json_int_t)s->memory);
    if (d && source && s->text) {
        json_error_t je;
        json_t *src = json_loadb(s->text, s->text_len, 0, &je);
        if (!src || json_object_set_new(d, "scene", src)) {
            json_decref(d);
            return NULL;
        }
    }
    return d;
}
