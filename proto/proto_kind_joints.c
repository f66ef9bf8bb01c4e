/*
 * proto_kind_joints.c: joint lists (kind "joints"): a serial chain given
 * joint by joint with URDF's semantics (proto__joint_decode), compiled to
 * an ik_chain; solved by numeric, or closed when the chain's six joints
 * form an OPW or UR arm (proto_serial.c). Seeds are joint values. Its
 * collision members (collision_spheres, collision_skeleton, srdf) name
 * the links "base" and its joints (proto_chain_collide.c).
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int decode_joints(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                         proto_error *err)
{
    static const char *const keys[] = {
        "kind", "joints", "frame", "units", "collision_spheres", "collision_skeleton",
        "srdf", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int fi, ui;
    if (proto__opt_enum(o, path, "frame", proto_frame_names, 0, &fi, err) ||
        proto__opt_enum(o, path, "units", proto_units_names, 0, &ui, err))
        return -1;
    proto_frame frame = (proto_frame)fi;
    proto_units units = (proto_units)ui;
    json_t *arr = proto_json_require(o, path, "joints", err);
    if (!arr)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "joints");
    size_t n;
    if (proto_json_array(arr, p, 1, lim->max_joints, true, &n, err))
        return -1;
    ik_joint *j = calloc(n, sizeof *j);
    char(*names)[PROTO_NAME_MAX] = calloc(n, sizeof *names);
    if (!j || !names) {
        free(j);
        free(names);
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    }
    int rc = -1;
    size_t movable = 0;
    for (size_t i = 0; i < n; i++) {
        char pj[PROTO_PATH_MAX];
        proto_json_path_index(pj, p, i);
        if (proto__joint_decode(json_array_get(arr, i), pj, i, frame, units, false, &j[i], names[i],
                                err))
            goto out;
        if (j[i].type != IK_JOINT_FIXED)
            movable++;
    }
    if (movable == 0) {
        proto_error_set(err, PROTO_E_INVALID_CHAIN, p, "the chain has no movable joint");
        goto out;
    }
    int crc = proto__chain_compile(c, j, n, names, err);
    if (crc) {
        if (crc > 0)
            proto_error_set(err, PROTO_E_INVALID_CHAIN, p, "the joint list does not form a chain");
        goto out;
    }
    const size_t tip = n - 1;
    if (proto__chain_collide_joints(c, o, path, j, NULL, names, n, &tip, 1, frame, lim, err))
        goto out;
    rc = 0;
out:
    free(j);
    free(names);
    return rc;
}

const proto_kind_ops proto_kind_joints = {
    decode_joints,      proto__serial_describe, proto__serial_seed_len,  proto__serial_allows,
    proto__serial_pick, proto__serial_dims,     proto__serial_workspace, proto__serial_run};
