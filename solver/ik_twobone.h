/*
 * ik_twobone.h: closed-form two-bone IK in 3D, as seed 001 defines it
 * ("3D 2-Bone Inverse Kinematics", shared/seeds/001_266e5f870b3c3550.txt,
 * section "Finding the New Positions").
 *
 * Inputs are four points in one right-handed frame (any frame, any length
 * unit): the fixed root a (hip), the current knee b, the current foot c and
 * the target t, plus an optional pole (hint) point. Bone lengths are taken
 * from the current pose: l_ab = |b - a|, l_bc = |c - b|, l_at = |t - a|, and
 * n = (a - t) / l_at is the unit vector from t to a.
 *
 * The three cases, exactly as the seed:
 *   - too close (l_at < |l_ab - l_bc|): the longer bone towards the target,
 *     the other away:  s = +1 if l_ab > l_bc else -1,
 *     b' = a - s l_ab n,  c' = b' + s l_bc n;
 *   - too far (l_at > l_ab + l_bc): fully extended towards the target:
 *     b' = a - l_ab n,  c' = b' - l_bc n;
 *   - reachable: c' = t and the knee on the circle where the sphere
 *     |x - a| = l_ab meets the sphere |x - t| = l_bc:
 *       cos(theta) = (l_bc^2 - l_ab^2 - l_at^2) / (-2 l_ab l_at)
 *       r = l_ab sin(theta),  m = a - l_ab cos(theta) n,
 *       b' = m + r u,
 *     u being the unit vector perpendicular to n towards the current knee:
 *     u = normalize(v - (v . n) n) with v = b - m (the point of the circle
 *     nearest to b). With a pole, v = pole - m instead (the knee points at
 *     the pole). The pole only matters in the reachable case: in the other
 *     two cases the limb is straight.
 * A target past an edge of the reach by no more than a rounding error
 * (1e-12 of l_ab + l_bc: one computed on the edge by the caller) is
 * reachable: the limb stretched or folded, c' = t.
 *
 * Degenerate input, as the seed:
 *   - l_at tiny (below 1e-12 of l_ab + l_bc; the seed uses 1e-3 in float
 *     units): n = (1, 0, 0);
 *   - b (or the pole) on the axis a-t, so v has no part perpendicular to n:
 *     u = any perpendicular of n (the seed's GetPerpendicularUnitVector,
 *     here ik_vec3_any_perpendicular(), deterministic); with a pole on the
 *     axis, the current knee is tried first;
 *   - zero-length bone (b == a or c == b), any non-finite coordinate (pole
 *     included), or coordinates whose differences overflow: IK_EINVAL and
 *     *out unchanged.
 * Never NaN: the law-of-cosines ratio is clamped into [-1, 1] and lengths
 * are computed without overflow.
 *
 * Performance: no allocation, no globals, no branches beyond the cases and
 * the degenerate guards; meant for millions of solves per second per core
 * (tests/bench/ikbench.c measures it). Thread-safe and deterministic.
 *
 * Not here: rotating bones to the new positions (ik_skeleton.h, the second
 * half of seed 001), joint limits.
 */
#ifndef IK_TWOBONE_H
#define IK_TWOBONE_H

#include "ik_math.h"
#include "ik_reach.h"

typedef struct ik_twobone_result {
    ik_vec3 b;     /* b', the new knee */
    ik_vec3 c;     /* c', the new foot */
    double error;  /* |c' - t|; 0 when reachable */
    ik_reach reach;
} ik_twobone_result;

/* Seed 001's two-bone solve. pole may be NULL (knee stays as close as
 * possible to b). Returns IK_OK (reachable, c' = t), IK_EUNREACHABLE (too far
 * or too close; closest pose of the seed and its error, which is positive
 * except within rounding of the reach boundary) or IK_EINVAL (*out
 * unchanged). Bone lengths are preserved: |b' - a| = l_ab and
 * |c' - b'| = l_bc up to rounding. */
int ik_twobone_solve(ik_vec3 a, ik_vec3 b, ik_vec3 c, ik_vec3 t, const ik_vec3 *pole,
                     ik_twobone_result *out);

/* KEEPING THE BEND PLANE (streams; engines' two-bone IK): the pole that
 * keeps the current limb's bend plane for a new target. The plane through
 * a, b and c has the normal N = (b - a) x (c - a); the limb bends towards
 * u = N x n / |N x n| (n the seed's unit vector from t to a, as above),
 * which is the current bend direction when the target stays on the current
 * a-c line, and turns with that line otherwise, whatever the knee's
 * distance from it. The pole a + (l_ab + l_bc) u put into
 * ik_twobone_solve() places the knee at m + r u. Nearest-to-the-knee (no
 * pole) projects the knee's position instead, so that a limb that passes
 * near straight (the knee close to the line) can come out bent the other
 * way: this keeps its side.
 * Returns true and sets *pole; false (*pole unchanged) when the limb is
 * straight (the knee within 1e-4 of l_ab + l_bc of the a-c line: no plane
 * but rounding noise; a stream then keeps the side it had), t is on a, u is not
 * defined (the new a-t line along N), or a number is not finite. */
bool ik_twobone_plane_pole(ik_vec3 a, ik_vec3 b, ik_vec3 c, ik_vec3 t, ik_vec3 *pole);

#endif /* IK_TWOBONE_H */
