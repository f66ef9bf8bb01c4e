/*
 * proto_kind_urdf.c: URDF chains (kind "urdf"): a URDF document and its
 * base and tip links (proto/proto_urdf.h reads the path between them, and
 * in the same parse each joint's <limit velocity>, kept for servo streams:
 * proto__chain_velocities), compiled to an ik_chain, with its collision
 * model read from the same parse (proto_chain_collide.c); solved as a
 * joint list is (proto_serial.c). Seeds are joint values.
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_urdf.h"

const double *proto__chain_velocities(proto_chain *c, proto_error *err)
{
    if (c->kind != PROTO_CHAIN_URDF || !c->chain)
        return NULL;
    if (c->velocity_err) {
        if (err)
            *err = *c->velocity_err;
        return NULL;
    }
    return c->velocity;
}

static int decode_urdf(proto_chain *c, const json_t *o, const char *path, const proto_limits *lim,
                       proto_error *err)
{
    static const char *const keys[] = {"kind", "urdf", "base", "tip", "collision_spheres",
                                       "collision_skeleton", "srdf", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    const char *xml, *base, *tip;
    char p[PROTO_PATH_MAX];
    size_t len;
    if (proto__urdf_source(o, path, lim, &xml, &len, &base, err))
        return -1;
    json_t *v = proto_json_require(o, path, "tip", err);
    proto_json_path_key(p, path, "tip");
    if (!v || proto_json_string(v, p, PROTO_URDF_NAME_MAX - 1, &tip, err))
        return -1;
    const size_t cap = lim->max_joints;
    ik_joint *joints = calloc(cap, sizeof *joints);
    char(*names)[PROTO_URDF_NAME_MAX] = calloc(cap, sizeof *names);
    /* the joints' velocity limits are read in the same parse (servo
     * streams use them), so that nothing parses the document again */
    double *vel = calloc(cap, sizeof *vel);
    /* the document, parsed once for the joints and the collision model's
     * robot (read before the model is built, so that libxml2's tree is
     * freed first) */
    proto_urdf_doc *doc = NULL;
    proto_urdf_robot robot = {0};
    proto_error robot_err;
    int rc = -1;
    if (!joints || !names || !vel) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    size_t n = 0;
    proto_json_path_key(p, path, "urdf");
    int vel_rc = 0;
    proto_error vel_err;
    proto_error_clear(&vel_err);
    /* room for one more joint than allowed, to tell "too many" apart */
    if (!(doc = proto_urdf_open(xml, len, err)) ||
        proto_urdf_doc_chain(doc, base, tip, joints, cap, &n, names, vel, &vel_rc, &vel_err, err)) {
        if (err)
            snprintf(err->path, sizeof err->path, "%s", p);
        goto out;
    }
    const bool robot_ok = proto_urdf_doc_robot(doc, &robot, &robot_err) == 0;
    proto_urdf_close(doc);
    doc = NULL;
    size_t movable = 0;
    for (size_t i = 0; i < n; i++)
        movable += joints[i].type != IK_JOINT_FIXED;
    if (movable == 0) {
        proto_error_set(err, PROTO_E_INVALID_URDF, p,
                        "the chain from \"%s\" to \"%s\" has no movable joint", base, tip);
        goto out;
    }
    if (movable > lim->max_joints) {
        proto_error_set(err, PROTO_E_TOO_LARGE, p,
                        "the chain has %zu movable joints; the limit is %zu", movable,
                        lim->max_joints);
        goto out;
    }
    int crc = proto__chain_compile(c, joints, n, names, err);
    if (crc) {
        if (crc > 0)
            proto_error_set(err, PROTO_E_INVALID_URDF, p,
                            "the joints from \"%s\" to \"%s\" do not form a valid chain", base,
                            tip);
        goto out;
    }
    if (vel_rc == 0) {
        c->velocity = calloc(c->chain->dof, sizeof *c->velocity);
        if (c->velocity)
            for (size_t i = 0; i < c->chain->dof; i++)
                c->velocity[i] = vel[c->chain->source_index[i]];
        c->memory += c->chain->dof * sizeof *c->velocity;
    } else {
        c->velocity_err = malloc(sizeof *c->velocity_err);
        if (c->velocity_err) {
            proto_error_set(c->velocity_err, vel_err.code, "/options/servo/velocity",
                            "the URDF's joint velocity limits cannot be read (%s); give "
                            "options.servo.velocity",
                            vel_err.message);
        }
        c->memory += sizeof *c->velocity_err;
    }
    if (!c->velocity && !c->velocity_err) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    c->memory += len;
    if (proto__chain_collide(c, o, path, robot_ok ? &robot : NULL, &robot_err, base, &tip, 1, lim,
                             err))
        goto out;
    rc = 0;
out:
    proto_urdf_close(doc);
    proto_urdf_robot_free(&robot);
    free(joints);
    free(names);
    free(vel);
    return rc;
}

const proto_kind_ops proto_kind_urdf = {
    decode_urdf,        proto__serial_describe, proto__serial_seed_len,  proto__serial_allows,
    proto__serial_pick, proto__serial_dims,     proto__serial_workspace, proto__serial_run};
