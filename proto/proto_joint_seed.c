/*
 * proto_joint_seed.c: what a seed of joint values means beyond its numbers
 * (proto__seed_read in proto_codec.c reads them): the name-to-value form
 * (ROS JointState style, {"shoulder_pan_joint": 0.3, ...}) on chains whose
 * joints have names, and the units check that refuses a value more than a
 * turn outside its joint's range (a seed in degrees sent as radians, the
 * common mistake), naming the units it was read in.
 *
 * A map's missing joints take the default start, the one a solve without a
 * seed starts from: the middle of the joint's limits (0 for continuous
 * joints). A name the chain does not have is an error at /seed/<name>.
 */
#include "proto/proto_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "solver/ik_tree.h"

/* Joint i's limits (continuous, and links3d's angles: infinite). */
static void joint_range(const proto_chain *c, size_t i, double *lo, double *hi)
{
    *lo = c->tree ? c->tree->lower[i] : c->chain ? c->chain->lower[i] : -INFINITY;
    *hi = c->tree ? c->tree->upper[i] : c->chain ? c->chain->upper[i] : INFINITY;
}

int proto__joint_seed_check(const proto_chain *c, const proto_options *o, const double *q, size_t n,
                            const char *path, bool by_name, proto_error *err)
{
    const double turn = 2.0 * IK_PI;
    for (size_t i = 0; i < n; i++) {
        double lo, hi;
        joint_range(c, i, &lo, &hi);
        if (!proto__angular_joint(c, i) || !isfinite(lo) || !isfinite(hi))
            continue;
        if (q[i] >= lo - turn && q[i] <= hi + turn)
            continue;
        char p[PROTO_PATH_MAX];
        const char *name = c->names && i < c->nnames ? c->names[i] : NULL;
        if (by_name && name)
            proto_json_path_key(p, path, name);
        else
            proto_json_path_index(p, path, i);
        const bool rad = o->units == PROTO_UNITS_RADIANS;
        return proto_error_set(
            err, PROTO_E_INVALID_REQUEST, p,
            "seed value %g for joint \"%s\" is more than a turn outside its range [%g, %g]: "
            "seeds are in options.units (%s)%s",
            proto_angle_out(o->units, q[i]), name ? name : "?", proto_angle_out(o->units, lo),
            proto_angle_out(o->units, hi), rad ? "radians" : "degrees",
            rad ? "; it looks like degrees (give options.units \"degrees\")" : "");
    }
    return 0;
}

int proto__joint_seed_map(const json_t *m, const char *path, const proto_chain *c,
                          const proto_options *o, double *out, proto_error *err)
{
    const size_t n = proto__seed_len(c);
    if (!c->names || c->nnames != n || c->kind == PROTO_CHAIN_PLANAR)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "a seed by joint names needs a chain with named joints (joints, "
                               "urdf or tree); give %s chains an array of %zu values",
                               proto_chain_kind_names[c->kind], n);
    if (c->tree)
        ik_tree_mid(c->tree, out);
    else
        ik_chain_mid(c->chain, out);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)m, name, v)
    {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, name);
        size_t i = 0;
        while (i < n && strcmp(c->names[i], name) != 0)
            i++;
        if (i == n)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "the chain has no movable joint named \"%.64s\"", name);
        if (proto_json_number(v, p, -PROTO_MAX_ABS, PROTO_MAX_ABS, &out[i], err))
            return -1;
        if (proto__angular_joint(c, i))
            out[i] = proto_angle_in(o->units, out[i]);
    }
    return proto__joint_seed_check(c, o, out, n, path, true, err);
}
