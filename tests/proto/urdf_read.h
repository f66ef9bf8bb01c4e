/*
 * urdf_read.h: the string-taking forms of proto/proto_urdf.h's chain, tree
 * and robot readers and of proto/proto_collide.h's model builder, which
 * only tests, fuzzers and benchmarks use (the daemon opens a document once
 * and reads it with the proto_urdf_doc_* functions): each opens the
 * document, reads it as the proto_urdf_doc_* function of the same name
 * does, and closes it. They keep proto_urdf.h's names so
 * that the tests written against them read as before. Static functions
 * only, so that any test may include it.
 */
#ifndef IKD_TESTS_URDF_READ_H
#define IKD_TESTS_URDF_READ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_collide.h"
#include "proto/proto_urdf.h"
#include "solver/ik_status.h"

/* proto_urdf_doc_chain() on xml[0..len), with the velocities (vel,
 * vel_rc, vel_err: NULL for none). */
static inline int proto_urdf_chain_velocities(const char *xml, size_t len, const char *base_link,
                                              const char *tip_link, ik_joint *joints, size_t cap,
                                              size_t *n_joints,
                                              char (*names)[PROTO_URDF_NAME_MAX], double *vel,
                                              int *vel_rc, proto_error *vel_err, proto_error *err)
{
    proto_urdf_doc *d = proto_urdf_open(xml, len, err);
    int r = d ? proto_urdf_doc_chain(d, base_link, tip_link, joints, cap, n_joints, names, vel,
                                     vel_rc, vel_err, err)
              : -1;
    proto_urdf_close(d);
    return r;
}

/* proto_urdf_doc_chain() (without velocities) on xml[0..len). */
static inline int proto_urdf_chain(const char *xml, size_t len, const char *base_link,
                                   const char *tip_link, ik_joint *joints, size_t cap,
                                   size_t *n_joints, char (*names)[PROTO_URDF_NAME_MAX],
                                   proto_error *err)
{
    return proto_urdf_chain_velocities(xml, len, base_link, tip_link, joints, cap, n_joints,
                                       names, NULL, NULL, NULL, err);
}

/* proto_urdf_doc_tree() on xml[0..len). */
static inline int proto_urdf_tree(const char *xml, size_t len, const char *base_link,
                                  const char *const *tip_links, size_t ntips, ik_joint *joints,
                                  int *parent, size_t cap, size_t *n_joints, size_t *tip_joint,
                                  char (*names)[PROTO_URDF_NAME_MAX], proto_error *err)
{
    proto_urdf_doc *d = proto_urdf_open(xml, len, err);
    int r = d ? proto_urdf_doc_tree(d, base_link, tip_links, ntips, joints, parent, cap, n_joints,
                                    tip_joint, names, err)
              : -1;
    proto_urdf_close(d);
    return r;
}

/* proto_urdf_doc_robot() on xml[0..len). */
static inline int proto_urdf_robot_read(const char *xml, size_t len, proto_urdf_robot *out,
                                        proto_error *err)
{
    memset(out, 0, sizeof *out);
    proto_urdf_doc *d = proto_urdf_open(xml, len, err);
    int r = d ? proto_urdf_doc_robot(d, out, err) : -1;
    proto_urdf_close(d);
    return r;
}

/* proto_collide_build_robot() on the robot of xml[0..len). */
static inline int proto_collide_build(const char *urdf, size_t len, const char *base,
                                      const char *const *tips, size_t ntips,
                                      const ik_chain *chain, const ik_tree *tree,
                                      const proto_collide_spec *spec, ik_collide_model *m,
                                      proto_collide_link **links, size_t *nlinks,
                                      proto_error *err)
{
    *links = NULL;
    *nlinks = 0;
    proto_urdf_robot R;
    if (proto_urdf_robot_read(urdf, len, &R, err))
        return -1;
    int r = proto_collide_build_robot(&R, base, tips, ntips, chain, tree, spec, m, links, nlinks,
                                      err);
    proto_urdf_robot_free(&R);
    return r;
}

/* proto_urdf_chain() followed by ik_chain_init(): returns the compiled
 * chain (chain->dof movable joints) in one allocation, the view followed
 * by its storage (free() it), and, if names is not NULL, *names the names
 * of the movable joints in chain order (an allocation of chain->dof
 * entries: free() it). A path with more than max_joints joints is
 * "too_large"; a path without any movable joint, or one ik_chain_init()
 * rejects, is "invalid_urdf". On error NULL, err set and *names
 * unchanged. */
static inline ik_chain *proto_urdf_load_chain(const char *xml, size_t len, const char *base_link,
                                              const char *tip_link, size_t max_joints,
                                              char (**names)[PROTO_URDF_NAME_MAX],
                                              proto_error *err)
{
    if (max_joints == 0 || max_joints > SIZE_MAX / sizeof(ik_joint) / 4) {
        proto_error_set(err, PROTO_E_INVALID_REQUEST, "", "max_joints is out of range");
        return NULL;
    }
    ik_joint *joints = malloc(max_joints * sizeof *joints);
    char(*jn)[PROTO_URDF_NAME_MAX] = malloc(max_joints * sizeof *jn);
    char(*out_names)[PROTO_URDF_NAME_MAX] = NULL;
    ik_chain *chain = NULL;
    size_t n = 0;
    if (!joints || !jn) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto done;
    }
    if (proto_urdf_chain(xml, len, base_link, tip_link, joints, max_joints, &n, jn, err))
        goto done;
    size_t dof = 0;
    for (size_t i = 0; i < n; i++)
        dof += joints[i].type != IK_JOINT_FIXED;
    if (dof == 0) {
        proto_error_set(err, PROTO_E_INVALID_URDF, "",
                        "the chain from '%.64s' to '%.64s' has no movable joint", base_link,
                        tip_link);
        goto done;
    }
    const size_t store = ik_chain_storage_size(dof);
    chain = malloc(sizeof *chain + store);
    if (names)
        out_names = malloc(dof * sizeof *out_names);
    if (!chain || (names && !out_names)) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto fail;
    }
    int st = ik_chain_init(chain, chain + 1, store, joints, n);
    if (st != IK_OK) {
        proto_error_set(err, PROTO_E_INVALID_URDF, "",
                        "the chain from '%.64s' to '%.64s' cannot be built: %s", base_link,
                        tip_link, ik_status_message(st));
        goto fail;
    }
    if (names) {
        for (size_t i = 0; i < chain->dof; i++)
            memcpy(out_names[i], jn[chain->source_index[i]], PROTO_URDF_NAME_MAX);
        *names = out_names;
    }
    goto done;
fail:
    free(chain);
    free(out_names);
    chain = NULL;
done:
    free(joints);
    free(jn);
    return chain;
}

#endif /* IKD_TESTS_URDF_READ_H */
