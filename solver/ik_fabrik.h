/*
 * ik_fabrik.h: FABRIK, Forward And Backward Reaching Inverse Kinematics
 * (A. Aristidou and J. Lasenby, "FABRIK: A fast, iterative solver for the
 * Inverse Kinematics problem", Graphical Models 73(5), 2011, Algorithm 1),
 * for animation chains given as joint positions.
 *
 * Each iteration is a forward reaching pass (the end effector is put on the
 * target and every joint, from the tip back, is placed on the line to its
 * predecessor at the bone's length: p[i] = p[i+1] + l_i (p[i] - p[i+1]) /
 * |p[i] - p[i+1]|) and a backward reaching pass (the root is put back and
 * every joint, from the root out, is placed the same way towards its
 * successor). A target beyond the total length is answered at once with the
 * chain straight towards it (the paper's unreachable case).
 *
 * Rotation limits: cone limits only (ik_anim.h), enforced in both passes (the
 * bend between consecutive bones is symmetric); the backward pass enforces
 * them last, from the root out, so the returned pose always obeys them. A
 * hinge limit is IK_EINVAL here (use CCD, ik_ccd.h). Pole: a pre-bend
 * before the first iteration and a final step (ik_anim.h, "POLE").
 *
 * The chain, options, outputs, statuses, degenerate cases, workspace and
 * thread-safety are those of ik_anim.h.
 */
#ifndef IK_FABRIK_H
#define IK_FABRIK_H

#include <stddef.h>

#include "ik_anim.h"

/* Solves the chain joints[0..n-1] for target. opt may be NULL (defaults).
 * work: ik_anim_workspace_size(n) bytes (work_bytes is checked). Writes
 * out[0..n-1] and, when not NULL, rot_world[0..n-2] and rot_local[0..n-2]
 * (ik_anim.h, "OUTPUT"), and *res. Returns res->status. On IK_EINVAL and
 * IK_ENOSPC nothing but *res is written. */
int ik_fabrik_solve(const ik_vec3 *joints, size_t n, ik_vec3 target, const ik_anim_options *opt,
                    void *work, size_t work_bytes, ik_vec3 *out, ik_quat *rot_world,
                    ik_quat *rot_local, ik_anim_result *res);

#endif /* IK_FABRIK_H */
