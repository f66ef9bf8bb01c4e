/*
 * proto_value.c: the decoders of the values every part of the wire format
 * shares (a point, a quaternion, a rotation matrix, a name, a skeleton's
 * bones, a joint object of a joint list, a target object), used by chains
 * (proto_chain.c,
 * proto_tree.c), requests (proto_job_decode.c) and streams
 * (proto_session.c). Each checks its value strictly and fills the caller's
 * proto_error with the value's JSON path; the points, quaternions and
 * matrices are returned as written, joints and targets converted from the
 * frame and units they are given in. A leaf of proto's call graph: it
 * calls no other file of proto but the JSON reader and the frames.
 */
#include "proto/proto_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "proto/proto_urdf.h"

int proto__vec3(const json_t *v, const char *path, ik_vec3 *out, proto_error *err)
{
    double d[3];
    if (proto_json_numbers(v, path, 3, d, err))
        return -1;
    *out = ik_v3(d[0], d[1], d[2]);
    return 0;
}

int proto__quat(const json_t *v, const char *path, ik_quat *out, proto_error *err)
{
    double d[4];
    if (proto_json_numbers(v, path, 4, d, err))
        return -1;
    double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
    if (!(fabs(n - 1.0) <= PROTO_QUAT_UNIT_TOL)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s must be a unit quaternion [x, y, z, w] (its norm is %.6g; "
                               "at most %g away from 1 is normalised)",
                               name, n, PROTO_QUAT_UNIT_TOL);
    }
    ik_quat q = {d[0] / n, d[1] / n, d[2] / n, d[3] / n};
    *out = q;
    return 0;
}

int proto__mat3(const json_t *v, const char *path, double m[9], proto_error *err)
{
    size_t n;
    if (proto_json_array(v, path, 3, 3, false, &n, err))
        return -1;
    double r[9];
    for (size_t i = 0; i < 3; i++) {
        char p[PROTO_PATH_MAX];
        proto_json_path_index(p, path, i);
        if (proto_json_numbers(json_array_get(v, i), p, 3, r + 3 * i, err))
            return -1;
    }
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = r[3 * i] * r[3 * j] + r[3 * i + 1] * r[3 * j + 1] +
                       r[3 * i + 2] * r[3 * j + 2];
            double e = fabs(s - (i == j ? 1.0 : 0.0));
            if (e > worst)
                worst = e;
        }
    double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) +
                 r[2] * (r[3] * r[7] - r[4] * r[6]);
    if (!(worst <= PROTO_MAT_ORTHO_TOL) || !(fabs(det - 1.0) <= PROTO_MAT_ORTHO_TOL)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s must be a rotation matrix (orthonormal rows, determinant +1; "
                               "got max |R R^T - I| = %.3g, det = %.6g)",
                               name, worst, det);
    }
    memcpy(m, r, sizeof r);
    return 0;
}

/* ---- names and joints ------------------------------------------------- */

int proto__name(char *dst, const json_t *v, const char *path, proto_error *err)
{
    const char *s;
    if (proto_json_string(v, path, PROTO_NAME_MAX - 1, &s, err))
        return -1;
    if (!*s)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path, "names must not be empty");
    snprintf(dst, PROTO_NAME_MAX, "%s", s);
    return 0;
}

int proto__urdf_source(const json_t *o, const char *path, const proto_limits *lim,
                       const char **xml, size_t *len, const char **base, proto_error *err)
{
    char p[PROTO_PATH_MAX];
    json_t *v = proto_json_require(o, path, "urdf", err);
    proto_json_path_key(p, path, "urdf");
    if (!v || proto_json_string(v, p, 0, xml, err))
        return -1;
    *len = json_string_length(v);
    if (*len > lim->max_urdf_bytes)
        return proto_error_set(err, PROTO_E_TOO_LARGE, p,
                               "the URDF document has %zu bytes; the limit is %zu", *len,
                               lim->max_urdf_bytes);
    v = proto_json_require(o, path, "base", err);
    proto_json_path_key(p, path, "base");
    return !v || proto_json_string(v, p, PROTO_URDF_NAME_MAX - 1, base, err) ? -1 : 0;
}

/* The index of name s among the first n of names, or -1. */
static int earlier_name(char (*names)[PROTO_NAME_MAX], size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

int proto__skeleton_bones(proto_chain *c, const json_t *o, const char *path, proto_frame frame,
                          size_t min, const proto_limits *lim, proto_error *err)
{
    static const char *const bkeys[] = {"name", "parent", "translation", "rotation", "scale",
                                        NULL};
    json_t *bones = proto_json_require(o, path, "bones", err);
    if (!bones)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "bones");
    size_t n;
    if (proto_json_array(bones, p, min, lim->max_joints, true, &n, err))
        return -1;
    c->skel = calloc(n, sizeof *c->skel);
    c->names = calloc(n, sizeof *c->names);
    if (!c->skel || !c->names)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    c->memory += n * (sizeof *c->skel + sizeof *c->names);
    c->nskel = c->nnames = n;
    for (size_t i = 0; i < n; i++) {
        char pb[PROTO_PATH_MAX], pf[PROTO_PATH_MAX];
        proto_json_path_index(pb, p, i);
        json_t *b = json_array_get(bones, i);
        if (proto_json_check_object(b, pb, bkeys, err))
            return -1;
        json_t *v = proto_json_require(b, pb, "name", err);
        proto_json_path_key(pf, pb, "name");
        if (!v || proto__name(c->names[i], v, pf, err))
            return -1;
        if (earlier_name(c->names, i, c->names[i]) >= 0)
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pf, "bone name \"%s\" is used twice",
                                   c->names[i]);
        ik_bone *bone = &c->skel[i];
        bone->parent = -1;
        bone->rotation = ik_quat_identity();
        bone->scale = ik_v3(1, 1, 1);
        v = json_object_get(b, "parent");
        proto_json_path_key(pf, pb, "parent");
        if (v && !json_is_null(v)) {
            const char *s;
            if (proto_json_string(v, pf, PROTO_NAME_MAX - 1, &s, err))
                return -1;
            int k = earlier_name(c->names, i, s);
            if (k < 0)
                return proto_error_set(err, PROTO_E_INVALID_CHAIN, pf,
                                       "parent \"%s\" of bone \"%s\" is not an earlier bone", s,
                                       c->names[i]);
            bone->parent = k;
        }
        v = json_object_get(b, "translation");
        proto_json_path_key(pf, pb, "translation");
        if (v && proto__vec3(v, pf, &bone->translation, err))
            return -1;
        v = json_object_get(b, "rotation");
        proto_json_path_key(pf, pb, "rotation");
        if (v && proto__quat(v, pf, &bone->rotation, err))
            return -1;
        v = json_object_get(b, "scale");
        proto_json_path_key(pf, pb, "scale");
        if (v && proto__vec3(v, pf, &bone->scale, err))
            return -1;
        if (fabs(bone->scale.x) < PROTO_MIN_LENGTH || fabs(bone->scale.y) < PROTO_MIN_LENGTH ||
            fabs(bone->scale.z) < PROTO_MIN_LENGTH)
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pf,
                                   "scale components must be at least %g in magnitude",
                                   PROTO_MIN_LENGTH);
        /* to ROS: T_ros = M T M^T. M is a signed permutation, so the scale
         * diag(s) becomes diag(|M| s): its components are permuted, their
         * signs kept (each sign of M appears squared). */
        ik_vec3 s = bone->scale;
        ik_vec3 cx = proto_frame_vec_in(frame, ik_v3(1, 0, 0));
        ik_vec3 cy = proto_frame_vec_in(frame, ik_v3(0, 1, 0));
        ik_vec3 cz = proto_frame_vec_in(frame, ik_v3(0, 0, 1));
        bone->scale = ik_v3(fabs(cx.x) * s.x + fabs(cy.x) * s.y + fabs(cz.x) * s.z,
                            fabs(cx.y) * s.x + fabs(cy.y) * s.y + fabs(cz.y) * s.z,
                            fabs(cx.z) * s.x + fabs(cy.z) * s.y + fabs(cz.z) * s.z);
        bone->translation = proto_frame_vec_in(frame, bone->translation);
        bone->rotation = proto_frame_quat_in(frame, bone->rotation);
    }
    return 0;
}

int proto__joint_decode(const json_t *jo, const char *pj, size_t i, proto_frame frame,
                        proto_units units, bool tree, ik_joint *out, char name[PROTO_NAME_MAX],
                        proto_error *err)
{
    static const char *const jkeys[] = {"name", "type", "origin", "axis", "limits", NULL};
    static const char *const tkeys[] = {"name", "type", "origin", "axis", "limits", "parent", NULL};
    static const char *const okeys[] = {"xyz", "rpy", NULL};
    static const char *const lkeys[] = {"lower", "upper", NULL};
    static const char *const types[] = {"fixed", "revolute", "continuous", "prismatic", NULL};
    char pf[PROTO_PATH_MAX];
    if (proto_json_check_object(jo, pj, tree ? tkeys : jkeys, err))
        return -1;
    json_t *v = json_object_get(jo, "name");
    proto_json_path_key(pf, pj, "name");
    if (v) {
        if (proto__name(name, v, pf, err))
            return -1;
    } else {
        snprintf(name, PROTO_NAME_MAX, "joint%zu", i);
    }
    v = proto_json_require(jo, pj, "type", err);
    proto_json_path_key(pf, pj, "type");
    int type;
    if (!v || proto_json_enum(v, pf, types, &type, err))
        return -1;
    out->type = (ik_joint_type)type;
    ik_vec3 xyz = ik_v3(0, 0, 0), rpy = ik_v3(0, 0, 0);
    v = json_object_get(jo, "origin");
    if (v) {
        char po[PROTO_PATH_MAX];
        proto_json_path_key(po, pj, "origin");
        if (proto_json_check_object(v, po, okeys, err))
            return -1;
        json_t *w = json_object_get(v, "xyz");
        proto_json_path_key(pf, po, "xyz");
        if (w && proto__vec3(w, pf, &xyz, err))
            return -1;
        w = json_object_get(v, "rpy");
        proto_json_path_key(pf, po, "rpy");
        if (w && proto__vec3(w, pf, &rpy, err))
            return -1;
    }
    ik_xform origin = {xyz, ik_quat_from_rpy(proto_angle_in(units, rpy.x),
                                             proto_angle_in(units, rpy.y),
                                             proto_angle_in(units, rpy.z))};
    out->origin = proto_frame_xform_in(frame, origin);
    ik_vec3 axis = ik_v3(1, 0, 0);
    v = json_object_get(jo, "axis");
    proto_json_path_key(pf, pj, "axis");
    if (v && proto__vec3(v, pf, &axis, err))
        return -1;
    if (out->type != IK_JOINT_FIXED && !(ik_vec3_len(axis) > 1e-9))
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, pf, "joint \"%s\" has a zero axis",
                               name);
    out->axis = out->type == IK_JOINT_PRISMATIC ? proto_frame_vec_in(frame, axis)
                                                : proto_frame_axis_in(frame, axis);
    out->lower = -INFINITY;
    out->upper = INFINITY;
    v = json_object_get(jo, "limits");
    proto_json_path_key(pf, pj, "limits");
    if (out->type == IK_JOINT_REVOLUTE || out->type == IK_JOINT_PRISMATIC) {
        if (!v)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, pf,
                                   "joint \"%s\" is %s and needs limits {\"lower\", \"upper\"}",
                                   name, types[type]);
        if (proto_json_check_object(v, pf, lkeys, err))
            return -1;
        double lu[2];
        for (int k = 0; k < 2; k++) {
            char pl[PROTO_PATH_MAX];
            json_t *w = proto_json_require(v, pf, lkeys[k], err);
            proto_json_path_key(pl, pf, lkeys[k]);
            if (!w || proto_json_number(w, pl, -PROTO_MAX_ABS, PROTO_MAX_ABS, &lu[k], err))
                return -1;
            if (out->type == IK_JOINT_REVOLUTE)
                lu[k] = proto_angle_in(units, lu[k]);
        }
        if (lu[0] > lu[1])
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pf,
                                   "joint \"%s\" has lower limit above its upper limit", name);
        out->lower = lu[0];
        out->upper = lu[1];
    } else if (v) {
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, pf,
                               "joint \"%s\" is %s: limits apply to revolute and prismatic joints",
                               name, types[type]);
    }
    return 0;
}

/* ---- targets ---------------------------------------------------------- */

int proto__target_decode(const json_t *v, const char *path, proto_frame f, bool dims2,
                         proto_target *t, proto_error *err)
{
    static const char *const keys2[] = {"position", "up", NULL};
    static const char *const keys3[] = {"position", "orientation", "rotation", "up",
                                        "pole",     "weights",     NULL};
    memset(t, 0, sizeof *t);
    t->orientation = ik_quat_identity();
    if (proto_json_check_object(v, path, dims2 ? keys2 : keys3, err))
        return -1;
    char p[PROTO_PATH_MAX];
    json_t *x = proto_json_require(v, path, "position", err);
    if (!x)
        return -1;
    proto_json_path_key(p, path, "position");
    if (dims2) {
        double d[2];
        if (proto_json_numbers(x, p, 2, d, err))
            return -1;
        t->position = ik_v3(d[0], d[1], 0);
        if ((x = json_object_get(v, "up"))) {
            proto_json_path_key(p, path, "up");
            if (proto_json_numbers(x, p, 2, d, err))
                return -1;
            if (!(hypot(d[0], d[1]) > 1e-12))
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                       "target.up must be a non-zero direction");
            t->has_up = true;
            t->up = ik_v3(d[0], d[1], 0);
        }
        return 0;
    }
    if (proto__vec3(x, p, &t->position, err))
        return -1;
    t->position = proto_frame_vec_in(f, t->position);
    json_t *o = json_object_get(v, "orientation"), *r = json_object_get(v, "rotation");
    if (o && r) {
        proto_json_path_key(p, path, "rotation");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "give either target.orientation or target.rotation, not both");
    }
    if (o) {
        proto_json_path_key(p, path, "orientation");
        if (proto__quat(o, p, &t->orientation, err))
            return -1;
        t->orientation = proto_frame_quat_in(f, t->orientation);
        t->has_orientation = true;
    } else if (r) {
        double m[9];
        proto_json_path_key(p, path, "rotation");
        if (proto__mat3(r, p, m, err))
            return -1;
        proto_frame_mat3_in(f, m, m);
        t->orientation = ik_quat_normalize(ik_quat_from_mat3(m));
        t->has_orientation = true;
    }
    if ((x = json_object_get(v, "up"))) {
        proto_json_path_key(p, path, "up");
        if (proto__vec3(x, p, &t->up, err))
            return -1;
        if (!(ik_vec3_len(t->up) > 1e-12))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "target.up must be a non-zero direction");
        t->up = proto_frame_vec_in(f, t->up);
        t->has_up = true;
    }
    if ((x = json_object_get(v, "pole"))) {
        proto_json_path_key(p, path, "pole");
        if (proto__vec3(x, p, &t->pole, err))
            return -1;
        t->pole = proto_frame_vec_in(f, t->pole);
        t->has_pole = true;
    }
    if ((x = json_object_get(v, "weights"))) {
        proto_json_path_key(p, path, "weights");
        double w[6];
        size_t n;
        if (proto_json_array(x, p, 6, 6, false, &n, err))
            return -1;
        bool any = false;
        for (size_t i = 0; i < 6; i++) {
            char pi[PROTO_PATH_MAX];
            proto_json_path_index(pi, p, i);
            if (proto_json_number(json_array_get(x, i), pi, 0, PROTO_MAX_ABS, &w[i], err))
                return -1;
            any |= w[i] > 0;
        }
        if (!any)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "target.weights must have at least one weight > 0");
        if ((w[3] > 0 || w[4] > 0 || w[5] > 0) && !t->has_orientation)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "rotation weights need target.orientation or target.rotation");
        /* weights follow their axes: permuted like the axes, signs dropped */
        for (int k = 0; k < 2; k++) {
            ik_vec3 cx = proto_frame_vec_in(f, ik_v3(1, 0, 0));
            ik_vec3 cy = proto_frame_vec_in(f, ik_v3(0, 1, 0));
            ik_vec3 cz = proto_frame_vec_in(f, ik_v3(0, 0, 1));
            double *s = w + 3 * k;
            t->weight[3 * k + 0] = fabs(cx.x) * s[0] + fabs(cy.x) * s[1] + fabs(cz.x) * s[2];
            t->weight[3 * k + 1] = fabs(cx.y) * s[0] + fabs(cy.y) * s[1] + fabs(cz.y) * s[2];
            t->weight[3 * k + 2] = fabs(cx.z) * s[0] + fabs(cy.z) * s[1] + fabs(cz.z) * s[2];
        }
        t->has_weights = true;
    }
    return 0;
}

/* A number proto_json_numbers() takes. */
static bool in_range(double d)
{
    return d >= -PROTO_MAX_ABS && d <= PROTO_MAX_ABS;
}

int proto__target_numbers(const proto_target_numbers *n, proto_frame f, bool dims2,
                          proto_target *t)
{
    size_t dims = dims2 ? 2 : 3;
    if (n->npos != dims || (n->nup && n->nup != dims) || (dims2 && (n->nquat || n->npole)) ||
        (n->nquat && n->nquat != 4) || (n->npole && n->npole != 3))
        return -1;
    for (size_t k = 0; k < dims; k++)
        if (!in_range(n->pos[k]) || (n->nup && !in_range(n->up[k])))
            return -1;
    for (size_t k = 0; k < n->nquat; k++)
        if (!in_range(n->quat[k]))
            return -1;
    for (size_t k = 0; k < n->npole; k++)
        if (!in_range(n->pole[k]))
            return -1;
    /* what proto__target_decode does with the same numbers */
    memset(t, 0, sizeof *t);
    t->orientation = ik_quat_identity();
    if (dims2) {
        t->position = ik_v3(n->pos[0], n->pos[1], 0);
        if (n->nup) {
            if (!(hypot(n->up[0], n->up[1]) > 1e-12))
                return -1;
            t->has_up = true;
            t->up = ik_v3(n->up[0], n->up[1], 0);
        }
        return 0;
    }
    t->position = proto_frame_vec_in(f, ik_v3(n->pos[0], n->pos[1], n->pos[2]));
    if (n->nquat) {
        const double *d = n->quat;
        double m = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
        if (!(fabs(m - 1.0) <= PROTO_QUAT_UNIT_TOL))
            return -1;
        ik_quat q = {d[0] / m, d[1] / m, d[2] / m, d[3] / m};
        t->orientation = proto_frame_quat_in(f, q);
        t->has_orientation = true;
    }
    if (n->nup) {
        ik_vec3 u = ik_v3(n->up[0], n->up[1], n->up[2]);
        if (!(ik_vec3_len(u) > 1e-12))
            return -1;
        t->up = proto_frame_vec_in(f, u);
        t->has_up = true;
    }
    if (n->npole) {
        t->pole = proto_frame_vec_in(f, ik_v3(n->pole[0], n->pole[1], n->pole[2]));
        t->has_pole = true;
    }
    return 0;
}
