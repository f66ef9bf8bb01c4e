/*
 * collide_data.h: the sphere models and scenes of tests/data/collision
 * (our own, see tests/data/SOURCES.md) read into solver structures for the
 * solver tests and benchmarks, and an independent reference of the
 * robot's distance to check ik_collide.c against.
 *
 * A model file is JSON: "collision_spheres" maps link names to lists of
 * [x, y, z, radius] in the link's frame (the wire format's member), and
 * "scene" holds "boxes" ({size, position, orientation}), "spheres"
 * ({radius, position}) and "capsules" ({radius, from, to}). The caller
 * says on which body each link sits (links of a serial chain: the base
 * link on body 0, the child link of movable joint k on body k + 1, the
 * tip link on the tip body).
 *
 * The reference (ref_distance) poses the spheres with ik_chain_frames()
 * and ik_xform_point() (quaternions, not ik_collide.c's matrices), checks
 * every pair of spheres of links the caller lists as checked, and every
 * sphere against every obstacle with distance functions written here
 * from their definitions: for a box, the point is taken into the box's
 * frame by the inverse rotation and the distance is that to the nearest
 * point of the solid (outside) or minus that to the nearest face
 * (inside). tests/solver/test_ik_collide.c checks these functions
 * themselves against sampled surfaces.
 *
 * Header-only, static functions, for tests (uses jansson and check).
 */
#ifndef TESTS_SOLVER_COLLIDE_DATA_H
#define TESTS_SOLVER_COLLIDE_DATA_H

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_chain.h"
#include "solver/ik_collide.h"
#include "solver/ik_math.h"
#include "solver/ik_status.h"

#define CD_MAX_SPHERES 256
#define CD_MAX_OBST    32

/* A sphere model as read: link index (into the caller's names), centre in
 * the link frame, radius. */
typedef struct cd_sphere {
    int link;
    ik_vec3 c;
    double r;
} cd_sphere;

typedef struct cd_robot {
    cd_sphere s[CD_MAX_SPHERES];
    size_t ns;
    ik_obstacle obst[CD_MAX_OBST];
    size_t nobst;
} cd_robot;

static inline json_t *cd_load_json(const char *file)
{
    const char *dir = getenv("IKD_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/collision/%s", dir ? dir : "tests/data", file);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    ck_assert_msg(j != NULL, "%s: %s", path, e.text);
    return j;
}

static inline ik_vec3 cd_vec(json_t *a)
{
    return ik_v3(json_number_value(json_array_get(a, 0)), json_number_value(json_array_get(a, 1)),
                 json_number_value(json_array_get(a, 2)));
}

/* Reads file's spheres for the links names[0..nlinks-1] (every link of the
 * file must be among them; names NULL: the spheres are skipped) and its
 * scene. */
static inline void cd_read(const char *file, const char *const *names, size_t nlinks, cd_robot *out)
{
    memset(out, 0, sizeof *out);
    json_t *j = cd_load_json(file);
    const char *key;
    json_t *val;
    json_object_foreach(json_object_get(j, "collision_spheres"), key, val)
    {
        if (!names)
            break;
        int l = -1;
        for (size_t i = 0; i < nlinks; i++)
            if (strcmp(names[i], key) == 0)
                l = (int)i;
        ck_assert_msg(l >= 0, "%s: link %s is not on the chain", file, key);
        size_t k;
        json_t *sp;
        json_array_foreach(val, k, sp)
        {
            ck_assert_uint_lt(out->ns, CD_MAX_SPHERES);
            out->s[out->ns].link = l;
            out->s[out->ns].c = cd_vec(sp);
            out->s[out->ns].r = json_number_value(json_array_get(sp, 3));
            out->ns++;
        }
    }
    json_t *scene = json_object_get(j, "scene");
    size_t k;
    json_t *o;
    json_array_foreach(json_object_get(scene, "boxes"), k, o)
    {
        json_t *q = json_object_get(o, "orientation");
        ik_quat qq = {
            json_number_value(json_array_get(q, 0)), json_number_value(json_array_get(q, 1)),
            json_number_value(json_array_get(q, 2)), json_number_value(json_array_get(q, 3))};
        ck_assert_int_eq(ik_obstacle_box(&out->obst[out->nobst++],
                                         cd_vec(json_object_get(o, "position")), qq,
                                         cd_vec(json_object_get(o, "size"))),
                         IK_OK);
    }
    json_array_foreach(json_object_get(scene, "spheres"), k, o)
    {
        ck_assert_int_eq(ik_obstacle_sphere(&out->obst[out->nobst++],
                                            cd_vec(json_object_get(o, "position")),
                                            json_number_value(json_object_get(o, "radius"))),
                         IK_OK);
    }
    json_array_foreach(json_object_get(scene, "capsules"), k, o)
    {
        ck_assert_int_eq(ik_obstacle_capsule(&out->obst[out->nobst++],
                                             cd_vec(json_object_get(o, "from")),
                                             cd_vec(json_object_get(o, "to")),
                                             json_number_value(json_object_get(o, "radius"))),
                         IK_OK);
    }
    json_decref(j);
}

/* Builds m on chain c: link i on body link_body[i] (identity offset), the
 * spheres of r, finished. */
static inline void cd_model_chain(ik_collide_model *m, const ik_chain *c, const cd_robot *r,
                                  const int *link_body, size_t nlinks)
{
    ck_assert_int_eq(ik_collide_model_from_chain(m, c), IK_OK);
    for (size_t i = 0; i < nlinks; i++)
        ck_assert_int_eq(ik_collide_add_link(m, link_body[i], ik_xform_identity()), (int)i);
    for (size_t i = 0; i < r->ns; i++)
        ck_assert_int_eq(ik_collide_add_sphere(m, r->s[i].link, r->s[i].c, r->s[i].r), IK_OK);
    ck_assert_int_eq(ik_collide_model_finish(m), IK_OK);
}

/* ---- the reference distance ---------------------------------------------- */

/* Signed distance of the sphere (c, r) from obstacle o, and the nearest
 * point of the obstacle's surface in *at (may be NULL). */
static inline double ref_obstacle(ik_vec3 c, double r, const ik_obstacle *o, ik_vec3 *at)
{
    if (o->shape == IK_SHAPE_SPHERE) {
        ik_vec3 d = ik_vec3_sub(c, o->p);
        double len = ik_vec3_len(d);
        if (at)
            *at =
                ik_vec3_madd(o->p, len > 0 ? ik_vec3_scale(d, 1 / len) : ik_v3(0, 0, 1), o->radius);
        return len - o->radius - r;
    }
    if (o->shape == IK_SHAPE_CAPSULE) {
        ik_vec3 ab = ik_vec3_sub(o->p2, o->p);
        double L2 = ik_vec3_dot(ab, ab);
        double t = L2 > 0 ? ik_vec3_dot(ik_vec3_sub(c, o->p), ab) / L2 : 0.0;
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
        ik_vec3 x = ik_vec3_madd(o->p, ab, t);
        ik_vec3 d = ik_vec3_sub(c, x);
        double len = ik_vec3_len(d);
        if (at && len > 0)
            *at = ik_vec3_madd(x, ik_vec3_scale(d, 1 / len), o->radius);
        return len - o->radius - r;
    }
    /* box: into its frame by the inverse rotation */
    ik_vec3 l = ik_quat_rotate(ik_quat_conj(o->q), ik_vec3_sub(c, o->p));
    double h[3] = {o->half.x, o->half.y, o->half.z}, v[3] = {l.x, l.y, l.z}, near[3];
    bool inside = true;
    for (int i = 0; i < 3; i++) {
        near[i] = v[i] < -h[i] ? -h[i] : (v[i] > h[i] ? h[i] : v[i]);
        inside = inside && fabs(v[i]) <= h[i];
    }
    double d;
    if (!inside) {
        d = sqrt((v[0] - near[0]) * (v[0] - near[0]) + (v[1] - near[1]) * (v[1] - near[1]) +
                 (v[2] - near[2]) * (v[2] - near[2]));
    } else {
        /* the nearest of the six faces */
        d = INFINITY;
        int face = 0;
        for (int i = 0; i < 3; i++) {
            double g = h[i] - fabs(v[i]);
            if (g < d) {
                d = g;
                face = i;
            }
        }
        near[face] = v[face] < 0 ? -h[face] : h[face];
        d = -d;
    }
    if (at)
        *at = ik_vec3_add(o->p, ik_quat_rotate(o->q, ik_v3(near[0], near[1], near[2])));
    return d - r;
}

/* The robot's distance at q by brute force: every pair of spheres of links
 * a < b with checked[a * nlinks + b], every sphere against every obstacle.
 * link_body as for cd_model_chain; body 0 is the base, body k + 1 the
 * frame of movable joint k, body dof + 1 the tip. */
static inline double ref_distance(const ik_chain *c, const cd_robot *r, const int *link_body,
                                  size_t nlinks, const bool *checked, const ik_obstacle *obst,
                                  size_t nobst, const double *q)
{
    ik_xform F[IK_COLLIDE_MAX_BODIES];
    F[0] = ik_xform_identity();
    ik_chain_frames(c, q, F + 1);
    ik_vec3 w[CD_MAX_SPHERES];
    for (size_t i = 0; i < r->ns; i++)
        w[i] = ik_xform_point(F[link_body[r->s[i].link]], r->s[i].c);
    double best = INFINITY;
    for (size_t i = 0; i < r->ns; i++) {
        for (size_t k = 0; k < nobst; k++)
            best = fmin(best, ref_obstacle(w[i], r->s[i].r, &obst[k], NULL));
        for (size_t j = 0; j < r->ns; j++) {
            int a = r->s[i].link, b = r->s[j].link;
            if (a < b && checked[a * (int)nlinks + b])
                best = fmin(best, ik_vec3_dist(w[i], w[j]) - r->s[i].r - r->s[j].r);
        }
    }
    return best;
}

/* ---- the KUKA iiwa 14 (tests/data/collision/kuka_iiwa14_r820.json) -------- */

#define IIWA_LINKS 9
static const char *const IIWA_LINK_NAMES[IIWA_LINKS] = {
    "base_link", "link_1", "link_2", "link_3", "link_4", "link_5", "link_6", "link_7", "tool0"};
/* base_link on the base, link_k on joint k's body, tool0 on the tip's */
static const int IIWA_LINK_BODY[IIWA_LINKS] = {0, 1, 2, 3, 4, 5, 6, 7, 8};

/* The pairs checked by default, written out from the URDF's joint list
 * rather than taken from ik_collide.c: every pair but the adjacent ones (a
 * link and the next, tool0 being joined to link_7 by a fixed joint), and
 * tool0 with link_6 (tool0 moves rigidly with link_7, which joint a7
 * joins to link_6). */
static inline void iiwa_checked(bool checked[IIWA_LINKS * IIWA_LINKS])
{
    for (int a = 0; a < IIWA_LINKS; a++)
        for (int b = 0; b < IIWA_LINKS; b++)
            checked[a * IIWA_LINKS + b] = a != b && abs(a - b) != 1;
    checked[6 * IIWA_LINKS + 8] = checked[8 * IIWA_LINKS + 6] = false;
}

#endif /* TESTS_SOLVER_COLLIDE_DATA_H */
