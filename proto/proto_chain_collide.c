/*
 * proto_chain_collide.c: a URDF chain's collision model from its chain
 * object (the wire's "collision_spheres", "collision_skeleton" and "srdf",
 * proto/README.md "Collisions"), kept with the chain; the chain's
 * description of it (which links are modelled and how, which are not);
 * and the names the answers give the model's links.
 *
 * The model is built with the chain, from the robot read out of the
 * document the chain's joints were read from (one parse for both:
 * proto_urdf.h's proto_urdf_doc), as proto_collide.h says (the client's
 * spheres, else the URDF's own <collision> primitives, else the skeleton
 * when asked, else unmodelled), so that every request on the chain finds
 * it made. A chain without any geometry keeps no model (NULL): its
 * answers carry no min_distance. When the chain object asks for nothing
 * about collisions and the URDF's own collisions cannot be read, the
 * chain still loads (it always has) and the reason is kept: a request
 * that asks for collisions gets that error.
 *
 * Bounds: at most IK_COLLIDE_MAX_SPHERES spheres, counted while the object
 * is read (too_large); the SRDF at most the URDF's byte limit; the model
 * (about 80 kB) is counted in the chain's memory, which the registry's
 * budget bounds.
 */
#include "proto/proto_kind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_collide.h"
#include "proto/proto_scene.h"

/* The client's spheres of member v at path into *out (heap) and *n. */
static int read_spheres(const json_t *v, const char *path, proto_collide_sphere **out, size_t *n,
                        proto_error *err)
{
    *out = NULL;
    *n = 0;
    if (!json_is_object(v))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "collision_spheres must be an object: link name -> "
                               "[[x, y, z, radius], ...]");
    size_t total = 0;
    const char *key;
    json_t *list;
    char pl[PROTO_PATH_MAX], pi[PROTO_PATH_MAX];
    json_object_foreach((json_t *)v, key, list)
    {
        proto_json_path_key(pl, path, key);
        size_t k;
        if (proto_json_array(list, pl, 0, IK_COLLIDE_MAX_SPHERES, true, &k, err))
            return -1;
        if (strlen(key) >= PROTO_URDF_NAME_MAX)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, pl,
                                   "a link name longer than %d bytes", PROTO_URDF_NAME_MAX - 1);
        total += k;
        if (total > IK_COLLIDE_MAX_SPHERES)
            return proto_error_set(err, PROTO_E_TOO_LARGE, path,
                                   "collision_spheres has more than the %d spheres allowed",
                                   IK_COLLIDE_MAX_SPHERES);
    }
    proto_collide_sphere *s = calloc(total ? total : 1, sizeof *s);
    if (!s)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    size_t i = 0;
    json_object_foreach((json_t *)v, key, list)
    {
        proto_json_path_key(pl, path, key);
        for (size_t k = 0; k < json_array_size(list); k++) {
            proto_json_path_index(pi, pl, k);
            s[i].link = key; /* valid while v lives: the call's */
            if (proto_json_numbers(json_array_get(list, k), pi, 4, s[i].s, err)) {
                free(s);
                return -1;
            }
            i++;
        }
    }
    *out = s;
    *n = total;
    return 0;
}

/* The chain object's collision members into *spec (its spheres in
 * *spheres, heap, NULL when none: free() it whatever the result). */
static int read_spec(const json_t *o, const char *path, const proto_limits *lim,
                     proto_collide_spec *spec, proto_collide_sphere **spheres, proto_error *err)
{
    const json_t *js = json_object_get(o, "collision_spheres");
    const json_t *jk = json_object_get(o, "collision_skeleton");
    const json_t *jd = json_object_get(o, "srdf");
    char p[PROTO_PATH_MAX];
    memset(spec, 0, sizeof *spec);
    *spheres = NULL;
    if (js) {
        proto_json_path_key(p, path, "collision_spheres");
        if (read_spheres(js, p, spheres, &spec->nspheres, err))
            return -1;
        spec->spheres = *spheres;
    }
    if (jk) {
        proto_json_path_key(p, path, "collision_skeleton");
        if (proto_json_positive(jk, p, PROTO_MAX_ABS, &spec->skeleton_radius, err))
            return -1;
    }
    if (jd) {
        proto_json_path_key(p, path, "srdf");
        if (proto_json_string(jd, p, 0, &spec->srdf, err))
            return -1;
        spec->srdf_len = json_string_length(jd);
        if (spec->srdf_len > lim->max_urdf_bytes)
            return proto_error_set(err, PROTO_E_TOO_LARGE, p,
                                   "the SRDF document has %zu bytes; the limit is %zu",
                                   spec->srdf_len, lim->max_urdf_bytes);
    }
    return 0;
}

/* Whether the chain object o has a collision member of its own (those
 * read_spec reads). */
static bool asks_collisions(const json_t *o)
{
    return json_object_get(o, "collision_spheres") || json_object_get(o, "collision_skeleton") ||
           json_object_get(o, "srdf");
}

/* Keeps the built model m and its links in c (m freed when it has no
 * sphere). */
static void keep(proto_chain *c, ik_collide_model *m, proto_collide_link *links, size_t nlinks)
{
    /* the links off the chain are counted, not kept */
    size_t kept = 0;
    for (size_t l = 0; l < nlinks; l++) {
        if (links[l].state == PROTO_LINK_OFF_CHAIN)
            c->collide_off_chain++;
        else
            links[kept++] = links[l];
    }
    proto_collide_link *fit = kept ? realloc(links, kept * sizeof *links) : NULL;
    if (fit || !kept) {
        if (!kept)
            free(links);
        links = fit;
        nlinks = kept;
    }
    c->collide_links = links;
    c->ncollide_links = kept;
    c->memory += nlinks * sizeof(proto_collide_link);
    if (m->nspheres > 0) {
        c->collide = m;
        c->memory += sizeof *m;
    } else {
        free(m);
    }
}

/* A builder's error at its path (relative to the chain object; rel when
 * it gives none) under path. */
static void place_error(proto_error *e, const char *path, const char *rel)
{
    char r[PROTO_PATH_MAX];
    snprintf(r, sizeof r, "%s", e->path[0] ? e->path : rel);
    snprintf(e->path, sizeof e->path, "%s%s", path, r);
}

int proto__chain_collide(proto_chain *c, const json_t *o, const char *path,
                         const proto_urdf_robot *robot, const proto_error *robot_err,
                         const char *base, const char *const *tips, size_t ntips,
                         const proto_limits *lim, proto_error *err)
{
    const bool asked = asks_collisions(o);
    proto_collide_spec spec;
    proto_collide_sphere *spheres = NULL;
    int rc = -1;
    if (read_spec(o, path, lim, &spec, &spheres, err))
        goto out;
    ik_collide_model *m = malloc(sizeof *m);
    if (!m) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    proto_collide_link *links = NULL;
    size_t nlinks = 0;
    proto_error e;
    proto_error_clear(&e);
    if (!robot) /* the URDF's links and collisions could not be read */
        e = *robot_err;
    if (!robot || proto_collide_build_robot(robot, base, tips, ntips, c->tree ? NULL : c->chain,
                                            c->tree, &spec, m, &links, &nlinks, &e)) {
        free(m);
        /* its paths are the chain object's own ("/srdf"), or none: the
         * URDF's ("/urdf") */
        place_error(&e, path, "/urdf");
        if (asked || e.code == PROTO_E_INTERNAL) {
            if (err)
                *err = e;
            goto out;
        }
        c->collide_err = malloc(sizeof *c->collide_err);
        if (!c->collide_err) {
            proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
            goto out;
        }
        *c->collide_err = e;
        c->memory += sizeof e;
        rc = 0;
        goto out;
    }
    keep(c, m, links, nlinks);
    rc = 0;
out:
    free(spheres);
    return rc;
}

_Static_assert(PROTO_NAME_MAX == PROTO_URDF_NAME_MAX, "joint names are link names");

int proto__chain_collide_joints(proto_chain *c, const json_t *o, const char *path,
                                const ik_joint *joints, const int *parent,
                                char (*names)[PROTO_NAME_MAX], size_t n, const size_t *tip_joint,
                                size_t ntips, proto_frame frame, const proto_limits *lim,
                                proto_error *err)
{
    if (!asks_collisions(o))
        return 0; /* nothing to model: no geometry of its own */
    /* its links are named "base" and by its joints: all different */
    char pj[PROTO_PATH_MAX], pi[PROTO_PATH_MAX], pn[PROTO_PATH_MAX];
    proto_json_path_key(pj, path, "joints");
    for (size_t i = 0; i < n; i++) {
        int k =
            strcmp(names[i], PROTO_COLLIDE_BASE) == 0 ? -2 : proto__name_index(names, i, names[i]);
        if (k == -1)
            continue;
        proto_json_path_index(pi, pj, i);
        proto_json_path_key(pn, pi, "name");
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, pn,
                               k == -2 ? "joint \"%.64s\": with collision members a joint list's "
                                         "links are \"" PROTO_COLLIDE_BASE "\" and its joints' "
                                         "names, so no joint may be named \"" PROTO_COLLIDE_BASE
                                         "\""
                                       : "joint name \"%.64s\" is used twice: with collision "
                                         "members it names a link",
                               names[i]);
    }
    proto_collide_spec spec;
    proto_collide_sphere *spheres = NULL;
    int rc = -1;
    if (read_spec(o, path, lim, &spec, &spheres, err))
        goto out;
    for (size_t i = 0; i < spec.nspheres; i++) { /* written in the chain's frame */
        ik_vec3 v =
            proto_frame_vec_in(frame, ik_v3(spheres[i].s[0], spheres[i].s[1], spheres[i].s[2]));
        spheres[i].s[0] = v.x;
        spheres[i].s[1] = v.y;
        spheres[i].s[2] = v.z;
    }
    ik_collide_model *m = malloc(sizeof *m);
    if (!m) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    proto_collide_link *links = NULL;
    size_t nlinks = 0;
    proto_error e;
    proto_error_clear(&e);
    if (proto_collide_build_joints(joints, parent, names, n, tip_joint, ntips,
                                   c->tree ? NULL : c->chain, c->tree, &spec, m, &links, &nlinks,
                                   &e)) {
        free(m);
        place_error(&e, path, "");
        if (err)
            *err = e;
        goto out;
    }
    keep(c, m, links, nlinks);
    rc = 0;
out:
    free(spheres);
    return rc;
}

const char *proto__collide_link_name(const proto_chain *c, int model_link)
{
    for (size_t l = 0; l < c->ncollide_links; l++)
        if (c->collide_links[l].model_link == model_link)
            return c->collide_links[l].name;
    return "?";
}

int proto__chain_collide_check(const proto_chain *c, const char *path, proto_error *err)
{
    if (c->collide)
        return 0;
    if (c->collide_err) {
        if (err)
            *err = *c->collide_err;
        return -1;
    }
    if (c->kind != PROTO_CHAIN_URDF && c->kind != PROTO_CHAIN_JOINTS &&
        !(c->kind == PROTO_CHAIN_TREE && !c->skel))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "collisions are checked on chains with links (urdf and joints "
                               "chains, trees given by a URDF or a joint list), and this %s "
                               "chain is not",
                               proto_chain_kind_names[c->kind]);
    return proto_error_set(err, PROTO_E_INVALID_CHAIN, path,
                           "the chain has no collision geometry: give its links "
                           "collision_spheres (or collision_skeleton), or a URDF with "
                           "<collision> spheres, boxes or cylinders");
}

void proto__chain_collide_describe(const proto_chain *c, json_t *d)
{
    if (c->collide_err) {
        json_t *x = json_object();
        json_object_set_new(x, "error", json_string(c->collide_err->message));
        json_object_set_new(d, "collision", x);
        return;
    }
    if (!c->collide_links)
        return;
    bool any = false;
    for (size_t l = 0; l < c->ncollide_links; l++)
        any |= c->collide_links[l].state != PROTO_LINK_NONE;
    if (!any)
        return;
    /* the links of the model only: the URDF's others are counted, not
     * listed, so that the description grows with the chain and not with
     * the document (a URDF may hold thousands of links off the chain) */
    json_t *x = json_object(), *links = json_array(), *unmod = json_array();
    for (size_t l = 0; l < c->ncollide_links; l++) {
        const proto_collide_link *k = &c->collide_links[l];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(k->name));
        json_object_set_new(o, "state", json_string(proto_link_state_name(k->state)));
        json_object_set_new(o, "spheres", json_integer((json_int_t)k->spheres));
        if (k->meshes_ignored)
            json_object_set_new(o, "meshes_ignored", json_true());
        json_array_append_new(links, o);
        if (k->state == PROTO_LINK_UNMODELLED)
            json_array_append_new(unmod, json_string(k->name));
    }
    json_object_set_new(x, "spheres",
                        json_integer(c->collide ? (json_int_t)c->collide->nspheres : 0));
    json_object_set_new(x, "links", links);
    json_object_set_new(x, "off_chain", json_integer((json_int_t)c->collide_off_chain));
    json_object_set_new(x, "unmodelled", unmod);
    json_object_set_new(d, "collision", x);
}

/* ---- a solve's collision check ---- */

/* The collision workspace's bytes at the start of a solve's workspace (0
 * without a model), a multiple of 64 so that the rest stays aligned. */
size_t proto__collide_ws(const proto_job *job)
{
    const ik_collide_model *m = job->chain->collide;
    return m ? (ik_collide_workspace_size(m) + 63) & ~(size_t)63 : 0;
}

/* The collision check of job (its chain's model, its scene, its options)
 * on the head of the workspace, which *ws and *ws_size then skip; false
 * (nothing taken) when the chain has no model. */
bool proto__collide_check(const proto_job *job, ik_collide_check *chk, void **ws, size_t *ws_size)
{
    size_t n = proto__collide_ws(job);
    if (!n || *ws_size < n)
        return false;
    chk->model = job->chain->collide;
    chk->scene = proto_scene_view(job->scene);
    chk->margin = job->opt.collision_margin;
    chk->avoid = job->opt.avoid_collisions;
    chk->ws = *ws;
    chk->ws_size = n;
    *ws = (char *)*ws + n;
    *ws_size -= n;
    return true;
}

void proto__collide_measure(const ik_collide_check *chk, proto_result *r)
{
    r->has_distance = chk != NULL;
    if (chk)
        r->min_distance =
            ik_collide_distance(chk->model, &chk->scene, r->q, chk->ws, chk->ws_size, &r->closest);
}
