/*
 * ik_anim_internal.h: the machinery FABRIK (ik_fabrik.c) and CCD (ik_ccd.c)
 * share, implemented in ik_anim.c. Internal to solver/ (ik__ prefix); the
 * public contract is ik_anim.h.
 */
#ifndef IK_ANIM_INTERNAL_H
#define IK_ANIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ik_anim.h"

/* One solve in progress. p is the caller's out array. */
typedef struct ik__anim {
    size_t n;   /* joints */
    ik_vec3 *p; /* current positions (out) */
    ik_vec3 target;
    const double *len;           /* bone lengths (workspace) */
    const ik_vec3 *dir0;         /* input bone directions, unit (workspace) */
    ik_quat *rot;                /* per-bone accumulated rotation (workspace; CCD) */
    const ik_anim_limit *limits; /* NULL: none */
    const ik_vec3 *pole;         /* NULL: none */
    ik_vec3 root_ref;            /* unit reference direction of joint 0 */
    ik_vec3 root;                /* p[0] of the input */
    double total;                /* total length */
    double min_reach;            /* max(0, 2 max(l) - total) */
    double tol;
    int max_iterations;
    bool any_cone, any_hinge;
} ik__anim;

/* Unit vector along v, the zero vector when v is zero: sqrt of the dot
 * product when that is finite (the hot path), else ik_vec3_normalize(),
 * which scales to avoid overflow. */
static inline ik_vec3 ik__anim_unit(ik_vec3 v)
{
    double l2 = ik_vec3_dot(v, v);
    if (l2 > 1e-300 && l2 < 1e300)
        return ik_vec3_scale(v, 1.0 / sqrt(l2));
    return ik_vec3_normalize(v);
}

/* |v|, the hot-path twin of ik_vec3_len() (same value, same overflow
 * safety through the fallback). */
static inline double ik__anim_len(ik_vec3 v)
{
    double l2 = ik_vec3_dot(v, v);
    if (l2 > 1e-300 && l2 < 1e300)
        return sqrt(l2);
    return ik_vec3_len(v);
}

static inline double ik__anim_dist(ik_vec3 a, ik_vec3 b)
{
    return ik__anim_len(ik_vec3_sub(a, b));
}

/* The minimal rotation taking direction u to direction v, as
 * ik_quat_between() (seed 001's GetRotationBetween), computed by the
 * half-angle form q = normalize(u x v, |u||v| + u.v) without trigonometry;
 * nearly opposite, zero or huge input goes to ik_quat_between(). */
static inline ik_quat ik__anim_between(ik_vec3 u, ik_vec3 v)
{
    double lu2 = ik_vec3_dot(u, u), lv2 = ik_vec3_dot(v, v);
    if (!(lu2 > 1e-300 && lu2 < 1e300 && lv2 > 1e-300 && lv2 < 1e300))
        return ik_quat_between(u, v);
    double s = sqrt(lu2) * sqrt(lv2);
    double w = s + ik_vec3_dot(u, v);
    if (!(w > 1e-6 * s))
        return ik_quat_between(u, v);
    ik_vec3 c = ik_vec3_cross(u, v);
    double k = 1.0 / sqrt(w * w + ik_vec3_dot(c, c));
    ik_quat q = {c.x * k, c.y * k, c.z * k, w * k};
    return q;
}

/* Validates everything (hinge limits only if allow_hinge), checks the
 * workspace, then fills *a and copies joints to out (memmove: they may
 * alias). Returns IK_OK or IK_EINVAL / IK_ENOSPC with nothing written. */
int ik__anim_begin(ik__anim *a, const ik_vec3 *joints, size_t n, ik_vec3 target,
                   const ik_anim_options *opt, bool allow_hinge, void *work, size_t work_bytes,
                   ik_vec3 *out);

/* Status, error and rotations from the final pose. Returns the status. */
int ik__anim_finish(const ik__anim *a, int iterations, ik_quat *rot_world, ik_quat *rot_local,
                    ik_anim_result *res);

/* max_bend of joint i (INFINITY when unlimited). */
double ik__anim_max_bend(const ik__anim *a, size_t i);

/* Unit direction of bone i in the current pose; fallback when degenerate. */
ik_vec3 ik__anim_bone_dir(const ik__anim *a, size_t i, ik_vec3 fallback);

/* The parent direction of joint i in the current pose (root_ref for 0). */
ik_vec3 ik__anim_parent_dir(const ik__anim *a, size_t i);

/* d (unit) clamped into the cone of half-angle max about ref (unit). */
ik_vec3 ik__anim_clamp_cone(ik_vec3 d, ik_vec3 ref, double max);

/* Every bone straight along (target - root), then cone-clamped root out. */
void ik__anim_extend(ik__anim *a);

/* Cone-clamps every joint from the root out, keeping lengths (moves the
 * joints beyond a clamped bone rigidly). */
void ik__anim_enforce_cones(ik__anim *a);

/* Turns every interior joint towards the pole (ik_anim.h "POLE"). With
 * check_limits, a joint is only turned where all limits it affects still
 * hold afterwards. */
void ik__anim_pole_step(ik__anim *a, bool check_limits);

/* Signed angle from u to v about the unit axis n, both projected on the
 * plane perpendicular to n; 0 when a projection vanishes. */
double ik__anim_signed_angle(ik_vec3 u, ik_vec3 v, ik_vec3 n);

/* Turns every joint beyond joint i (p[i+1..n-1]) by q about p[i] and
 * composes q into the accumulated rotations of bones i..n-2. */
void ik__anim_turn(ik__anim *a, size_t i, ik_quat q);

/* The current hinge axis of joint i (unit): its input axis turned by the
 * accumulated rotation of bone i-1. */
ik_vec3 ik__anim_hinge_axis(const ik__anim *a, size_t i);

/* The turn of hinge joint i about axis by phi, reduced so that its hinge
 * angle stays within the range (phi 0 moves an out-of-range joint to the
 * nearer bound). */
ik_quat ik__anim_hinge_turn(const ik__anim *a, size_t i, ik_vec3 axis, double phi);

/* True when the chain is straight along the root-target line with the
 * target not reached (the solvers' fixed point, see ik_anim.c). */
bool ik__anim_stuck_on_line(const ik__anim *a);

/* Bends every joint out of that line (within the limits). */
void ik__anim_kick(ik__anim *a);

/* How many times one solve may kick. */
#define IK__ANIM_MAX_KICKS 4

#endif /* IK_ANIM_INTERNAL_H */
