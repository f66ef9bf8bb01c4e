/*
 * proto_value.c: the decoders of the values the chain objects share (a
 * point, a quaternion, a rotation matrix, a name, a skeleton's bones, a
 * joint object of a joint list, a URDF's source), used by chains
 * (the kinds' files) and a path's waypoints (proto_stream.c);
 * a request's own objects (targets, seeds, options) are the codec's
 * (proto_codec.c). Each checks its value strictly and fills the caller's
 * proto_error with the value's JSON path; the points, quaternions and
 * matrices are returned as written, joints and targets converted from the
 * frame and units they are given in. A leaf of proto's call graph: it
 * calls no other file of proto but the JSON reader and the frames.
 */
#include "proto/proto_kind.h"

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
    return proto__unit_quat(d, path, out, err);
}

int proto__unit_quat(const double d[4], const char *path, ik_quat *out, proto_error *err)
{
    double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
    if (!(fabs(n - 1.0) <= PROTO_QUAT_UNIT_TOL)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s must be a unit quaternion [x, y, z, w] (its norm is %.6g; "
                               "at most %g away from 1 is normalised)",
                               name, n, PROTO_QUAT_UNIT_TOL);
    }
    *out = (ik_quat){d[0] / n, d[1] / n, d[2] / n, d[3] / n};
    return 0;
}

/* ---- names and joints ------------------------------------------------- */

/* A name: a non-empty string of at most PROTO_NAME_MAX - 1 bytes, copied
 * into dst. */
static int name_value(char *dst, const json_t *v, const char *path, proto_error *err)
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

int proto__name_index(char (*names)[PROTO_NAME_MAX], size_t n, const char *s)
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
        if (!v || name_value(c->names[i], v, pf, err))
            return -1;
        if (proto__name_index(c->names, i, c->names[i]) >= 0)
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
            int k = proto__name_index(c->names, i, s);
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
        if (name_value(name, v, pf, err))
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
            /* a revolute limit beyond PROTO_LIMIT_TURNS turns in radians is
             * a limit in degrees sent without the chain's "units" */
            if (out->type == IK_JOINT_REVOLUTE && units == PROTO_UNITS_RADIANS &&
                fabs(lu[k]) > PROTO_LIMIT_TURNS * 2.0 * IK_PI)
                return proto_error_set(err, PROTO_E_INVALID_CHAIN, pl,
                                       "joint \"%s\"'s %s limit %g is more than %d turns: "
                                       "limits are in the chain's \"units\" (radians); it "
                                       "looks like degrees (give the chain \"units\": "
                                       "\"degrees\")",
                                       name, lkeys[k], lu[k], PROTO_LIMIT_TURNS);
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

/* ---- members of several kinds ---------------------------------------- */

int proto__opt_enum(const json_t *obj, const char *path, const char *key,
                    const char *const *names, int def, int *out, proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, key);
    return proto_json_enum(v, p, names, out, err);
}

int proto__lengths(const json_t *obj, const char *path, size_t min, size_t max, double *out,
                       size_t *n, proto_error *err)
{
    json_t *v = proto_json_require(obj, path, "lengths", err);
    if (!v)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "lengths");
    if (proto_json_array(v, p, min, max, false, n, err))
        return -1;
    for (size_t i = 0; i < *n; i++) {
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, p, i);
        double d;
        if (proto_json_number(json_array_get(v, i), pi, -PROTO_MAX_ABS, PROTO_MAX_ABS, &d, err))
            return -1;
        if (!(d >= PROTO_MIN_LENGTH))
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi,
                                   "link %zu has length %g; links must be at least %g long", i,
                                   d, PROTO_MIN_LENGTH);
        out[i] = d;
    }
    return 0;
}

void proto__describe_size(json_t *d, const proto_chain *c, const char *key, size_t n)
{
    json_object_set_new(d, key, json_integer((json_int_t)n));
    if (!c->names)
        return;
    json_t *a = json_array();
    for (size_t i = 0; i < c->nnames; i++)
        json_array_append_new(a, json_string(c->names[i]));
    json_object_set_new(d, c->skel ? "bone_names" : "joint_names", a);
}
