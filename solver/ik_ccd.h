/*
 * ik_ccd.h: CCD, cyclic coordinate descent, for animation chains given as
 * joint positions (L.-C. T. Wang and C. C. Chen, "A combined optimization
 * method for solving the inverse kinematics problem of mechanical
 * manipulators", IEEE Trans. Robotics and Automation 7(4), 1991; the form
 * used in games, as in Lander, "Oh My God, I Inverted Kine!", Game Developer
 * 1998).
 *
 * Each iteration sweeps the joints from the one nearest the tip back to the
 * root; joint i turns the whole sub-chain beyond it by the minimal rotation
 * that points the end effector at the target: the rotation about p[i] taking
 * (e - p[i]) to (t - p[i]), e the current end effector. The sub-chain is
 * turned rigidly, so bone lengths and every other joint's bend are kept.
 *
 * Rotation limits (ik_anim.h): a cone limit clamps the turned bone onto the
 * cone about its parent direction; a hinge joint turns only about its axis,
 * by the signed angle between the projections of (e - p[i]) and (t - p[i])
 * on the plane perpendicular to the axis, with its hinge angle clamped into
 * [hinge_min, hinge_max] (the nearer bound when the wanted angle falls
 * outside). Every joint's limit holds after its own step and no later step
 * changes it, so the returned pose obeys every limit.
 *
 * A target beyond the total length is answered at once with the chain
 * straight towards it (then clamped into cone limits from the root out),
 * unless the chain has a hinge, in which case CCD iterates and returns its
 * best pose with IK_EUNREACHABLE. Pole: a pre-bend before the first sweep
 * and a final step, unless the chain has a hinge (ik_anim.h, "POLE").
 *
 * The chain, options, outputs, statuses, degenerate cases, workspace and
 * thread-safety are those of ik_anim.h.
 */
#ifndef IK_CCD_H
#define IK_CCD_H

#include <stddef.h>

#include "ik_anim.h"

/* Solves the chain joints[0..n-1] for target; arguments, outputs and return
 * value as ik_fabrik_solve() (ik_fabrik.h). Hinge limits are allowed. */
int ik_ccd_solve(const ik_vec3 *joints, size_t n, ik_vec3 target, const ik_anim_options *opt,
                 void *work, size_t work_bytes, ik_vec3 *out, ik_quat *rot_world,
                 ik_quat *rot_local, ik_anim_result *res);

#endif /* IK_CCD_H */
