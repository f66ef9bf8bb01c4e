/*
 * ik_skeleton.h: a translate-rotate-scale bone hierarchy and seed 001's bone
 * orientation update for a two-bone limb ("3D 2-Bone Inverse Kinematics",
 * shared/seeds/001_266e5f870b3c3550.txt, sections "Some Recap" and
 * "Adjusting the Orientations").
 *
 * Hierarchy (seed 001 "Some Recap"): bone i has a parent index (-1 for a
 * root; parents come before their children in the array), a local
 * translation Delta_i, a local rotation q_i (x,y,z,w) and a local scale s_i
 * (per axis, may be non-uniform). Its transform relative to its parent is
 *     T_i = trans(Delta_i) * rot(q_i) * scale(s_i)
 * and its global (aggregate) transform is G_i = G_parent(i) * T_i (G of a
 * root is T_i). Because the scale may be non-uniform the transforms are
 * general affine maps, stored as 3x4 matrices (ik_mat34: the top three rows
 * of the seed's 4x4 homogeneous matrix; the last row is always 0 0 0 1).
 * NOTE on the seed's matrices: its scale matrix shows 1s in the last column,
 * which would add a translation of (1,1,1); a scale matrix is diagonal and
 * ikd uses diag(s_x, s_y, s_z, 1). Its rotation matrix shows
 * 2(q_y q_z - q_w q_x) in row 3, column 2; the correct entry is
 * 2(q_y q_z + q_w q_x) (row 2, column 3 is the one with the minus sign).
 * Quaternions are normalised before use.
 *
 * Orientation update (seed 001 "Adjusting the Orientations"), for a limb
 * hip k -> knee j -> foot i (parent(i) = j, parent(j) = k):
 *   1. a, b, c = origins of G_k, G_j, G_i; solve two-bone towards t
 *      (ik_twobone.h) for b', c';
 *   2. bone k: b_local = G_k^-1 b, b'_local = G_k^-1 b'; q_k <- q_k *
 *      between(b_local, b'_local) (ik_quat_between, the seed's
 *      GetRotationBetween); recompute the globals below k;
 *   3. bone j: c_local = G_j^-1 c with the OLD G_j, c'_local = G_j'^-1 c'
 *      with the new one (as the seed's code does); q_j <- q_j * between.
 * One refinement over the seed, needed for non-uniform scale: the rotation
 * q is applied before the bone's own scale (T = trans * rot * scale), so the
 * directions are compared in the bone's rotation frame, i.e. after
 * multiplying the local points by the bone's scale (s * (G^-1 x)). With a
 * uniform scale this is the seed's formula exactly (directions do not
 * change under a uniform scale).
 * Exactness (to rounding): a rotation keeps a bone's world length only if
 * every transform above that bone's rotation scales uniformly. Hence:
 *   - the knee lands on b' when the hip's ancestors scale uniformly (the
 *     hip's own scale may be anything, non-uniform or mirroring);
 *   - the foot lands on c' when, in addition, the hip's own scale is
 *     uniform (the knee's and the foot's scales may be anything).
 * Otherwise the bones still point exactly at b' (from the hip) and at c'
 * (from wherever the knee landed) but the sheared frame stretches them, so
 * the foot misses by what their world lengths changed. No rotation-only
 * update can do better there: the reachable foot positions form an
 * ellipsoid, not the sphere of the two-bone solve. The bone lengths fed to
 * the two-bone solve are the world distances of the current pose.
 *
 * Memory: the caller owns every array (bones, globals); nothing allocates.
 * Thread-safe for distinct arrays. On error nothing is changed.
 *
 * Not here: keyframe interpolation, skinning, joint limits, chains longer
 * than two bones (those go to the general solvers).
 */
#ifndef IK_SKELETON_H
#define IK_SKELETON_H

#include <stddef.h>

#include "ik_math.h"
#include "ik_twobone.h"

/* Affine 3x4, row-major: x' = M[r][0..2] . x + M[r][3]. */
typedef struct ik_mat34 {
    double m[3][4];
} ik_mat34;

typedef struct ik_bone {
    int parent;          /* -1 for a root, else < this bone's index */
    ik_vec3 translation; /* Delta_i, in the parent's frame */
    ik_quat rotation;    /* q_i, x,y,z,w; normalised when used; non-zero */
    ik_vec3 scale;       /* s_i per axis; every component finite and non-zero */
} ik_bone;

/* ---- affine helpers --------------------------------------------------- */

ik_mat34 ik_mat34_identity(void);
/* trans(t) * rot(normalize(q)) * scale(s). */
ik_mat34 ik_mat34_from_trs(ik_vec3 t, ik_quat q, ik_vec3 s);
/* a * b: apply b first, then a. */
ik_mat34 ik_mat34_mul(const ik_mat34 *a, const ik_mat34 *b);
/* Inverse of an invertible affine map. Returns IK_OK, or IK_EINVAL (and
 * leaves *out unchanged) when the linear part is singular or not finite. */
int ik_mat34_inverse(const ik_mat34 *a, ik_mat34 *out);
ik_vec3 ik_mat34_point(const ik_mat34 *a, ik_vec3 p);
/* Linear part only (no translation). */
ik_vec3 ik_mat34_dir(const ik_mat34 *a, ik_vec3 d);
/* Translation column: where the frame's origin lands. */
ik_vec3 ik_mat34_origin(const ik_mat34 *a);

/* ---- hierarchy -------------------------------------------------------- */

/* IK_OK when every bone is valid: parent in [-1, index), finite numbers, a
 * non-zero rotation, non-zero scale components. IK_EINVAL otherwise. */
int ik_skeleton_check(const ik_bone *bones, size_t n);

/* Bone i's transform relative to its parent: T_i = trans * rot * scale. */
ik_mat34 ik_bone_local(const ik_bone *bone);

/* Global transforms G_i = G_parent * T_i of all n bones into globals[0..n-1]
 * (caller-provided, n entries). Returns IK_OK, or IK_EINVAL (globals
 * unchanged) when ik_skeleton_check fails. A valid skeleton whose globals
 * overflow (finite scales and translations whose products or sums along
 * the hierarchy are not representable) is IK_EINVAL too; then every entry
 * of globals is set to the identity: never a non-finite number. */
int ik_skeleton_globals(const ik_bone *bones, size_t n, ik_mat34 *globals);

/* Seed 001's orientation update of the limb hip -> knee -> foot towards the
 * target t (same frame as the globals, i.e. the roots' parent frame), with
 * an optional pole point (NULL: keep the knee as close as possible to where
 * it is). Requires bones[foot].parent == knee and bones[knee].parent == hip.
 * On IK_OK or IK_EUNREACHABLE: bones[hip].rotation and bones[knee].rotation
 * hold the updated (unit) local rotations, globals[0..n-1] the globals of
 * the updated pose, and *res (if not NULL) the two-bone answer b', c' and the
 * error. The status is the two-bone status. IK_EINVAL (nothing changed) for
 * an invalid skeleton, wrong indices, a non-finite target or pole, a
 * degenerate limb (zero-length bone) or a singular bone transform. If the
 * globals of the updated pose overflow (ik_skeleton_globals), the bones are
 * left unchanged, globals is set to identities and IK_EINVAL returned. */
int ik_skeleton_twobone(ik_bone *bones, size_t n, size_t hip, size_t knee, size_t foot,
                        ik_vec3 target, const ik_vec3 *pole, ik_mat34 *globals,
                        ik_twobone_result *res);

#endif /* IK_SKELETON_H */
