/*
 * ik_planar.h: the analytic solvers of seed 000 ("Inverse Kinematics Study",
 * shared/seeds/000_73a759827fd96439.txt): two-link planar IK, three-link
 * planar IK with an end orientation, and three-link IK in 3D ("The Natural
 * Hard Way").
 *
 * What the seed defines, and how it is implemented here:
 *   - Two-link ("Two-Link Inverse Kinematics"): d = |E - O|,
 *     theta_E = atan2(y, x), the interior angle at the base by the law of
 *     cosines theta_a = acos((d^2 + l1^2 - l2^2) / (2 l1 d)) and the elbow's
 *     exterior angle theta_1 = pi - theta_b with
 *     theta_b = acos((l1^2 + l2^2 - d^2) / (2 l1 l2)). The first link's angle
 *     is theta_E + theta_a as the seed's Unity code writes it
 *     (angI + ang1); the seed's math line "theta_0 = theta_a - theta_E" is the
 *     same triangle with the opposite bend. NOTE: the seed's derivation writes
 *     the law of cosines as l2^2 = d^2 + l1^2 - 2 d l2 cos(theta_a); that is a
 *     typo (the side adjacent to theta_a is l1, not l2). The seed's own code
 *     uses 2 * l1 * d, and so does ikd.
 *   - Three-link planar ("3-Link Implementation"): the intermediate target
 *     P = E - l3 * up (the target's up vector), a two-link solve towards P,
 *     and the last link set along up.
 *   - Three-link in 3D ("Three-Link Inverse Kinematics in R^3"): E_L = E - O,
 *     P_T = E_L - l3 E_y, yaw theta_y = atan2(x_T, z_T), r_T = sqrt(x_T^2 +
 *     z_T^2), theta_E = atan2(y_T, r_T), d = sqrt(y_T^2 + r_T^2), the two-link
 *     solve in the working plane, then the base roll beta about the axis
 *     O -> P_T so that the whole chain and E_y are coplanar, and theta_2 from
 *     the up vector in the third joint's frame (theta_2 = atan2 of E_y's
 *     components along the third joint's axes).
 *   - Both of the seed's "systems" are returned: the position system (every
 *     joint's position) and the angles; the 3D solver also returns the bone
 *     system (each bone's local and world rotation as a quaternion).
 *
 * FRAMES (right-handed, like the rest of ikd; see ik_math.h CONVENTIONS):
 *   - Planar solvers work in the x-y plane with z out of the page. Angles are
 *     radians, counter-clockwise positive, measured from +x. The base O is a
 *     parameter; every position is in the same frame as O and E.
 *   - The 3D solver works in the base frame O given as a rigid transform
 *     (position and orientation, the seed's O and O_x, O_y, O_z). In O's local
 *     frame y is UP, z is FORWARD and x is LEFT: exactly the axes the seed
 *     names ("the y-axis is up, x-axis is left and z-axis is forward"), which
 *     form a right-handed frame (x = y cross z). Unity itself is left-handed
 *     (x right); ikd never is. Conversions from a caller's convention happen
 *     at the wire format (proto/), not here.
 *   - 3D chain, documented rotation order. Let Ry(a) be the rotation by a
 *     about local +y and H(a) = Rx(-a) the rotation by a about the hinge axis
 *     k = forward x up = -x (positive angles lift a link from forward towards
 *     up, as the planar angles lift from +x towards +y). Let Rp(r) be the
 *     rotation by r about p = the unit vector from O to P_T in O's local frame
 *     (the seed code's t.normalized). Every bone's link points along its own
 *     local +z. Then, in O's local frame,
 *         bone 1:  R1 = Rp(roll) * Ry(yaw) * H(theta0)
 *         bone 2:  R2 = R1 * H(theta1)
 *         bone 3:  R3 = R2 * H(theta2)
 *     joints: J0 = 0, J1 = R1 (0,0,l1), J2 = J1 + R2 (0,0,l2) (= P_T when
 *     reachable), J3 = J2 + R3 (0,0,l3) (= E when reachable). World values
 *     are O applied to these. The roll is applied last, about the fixed axis
 *     p, as the seed's code does (origin.Rotate(t.normalized, ..., World)).
 *     The seed measures beta = atan2(E_y . O_y, E_y . O_x) in the frame whose
 *     z axis is p and whose y axis is the working plane's up; the applied roll
 *     is roll = beta - pi/2 (the seed's code rotates by -(roll - pi/2) in
 *     Unity's left-handed frame), which turns the working plane's up onto the
 *     part of E_y perpendicular to p.
 *
 * BEND: +1 is the seed's choice (theta0 = theta_E + theta_a: the elbow lies
 * on the counter-clockwise side of the line base -> target, "above" it in the
 * working plane); -1 mirrors it (theta0 = theta_E - theta_a). Any other value
 * is IK_EINVAL. In 3D the roll turns the working plane's up onto the part of
 * E_y perpendicular to O -> P_T, so bend +1 puts the elbow on the side E_y
 * points to (the test checks it).
 *
 * REACH (the seed's "Error Checks", |l1 - l2| <= d <= l1 + l2). Where the
 * seed just returns, ikd returns the closest pose with IK_EUNREACHABLE:
 *   - too far (d > l1 + l2): fully extended towards the target:
 *     theta0 = theta_E, theta1 = 0;
 *   - too close (d < |l1 - l2|): folded, the longer link pointing towards the
 *     target and the shorter one back: theta1 = -bend * pi, and theta0 =
 *     theta_E if l1 >= l2, theta_E + bend * pi otherwise (the limits of the
 *     reachable solution at d = |l1 - l2|, so the answer is continuous).
 *   error = |end - target| (0 when reachable up to rounding).
 * A target past an edge by no more than a rounding error (1e-12 of
 * l1 + l2: one computed on the edge by the caller) is met, stretched or
 * folded, with IK_OK.
 *
 * DEGENERATE INPUT (never NaN out):
 *   - non-finite numbers, lengths <= 0, a zero up vector, bend not +-1, or a
 *     target whose offset from the base overflows: IK_EINVAL, *out unchanged;
 *   - target on the base (d == 0): theta_E = 0, i.e. "towards the target"
 *     means +x (3D: forward, +z of O, yaw 0). With l1 == l2 that target is
 *     reachable and the elbow stands at theta_E + bend * pi/2;
 *   - 3D: P_T on the vertical axis (x_T = z_T = 0): yaw = 0; E_y parallel to
 *     the axis O -> P_T (or P_T on the base): roll = 0 (any plane containing
 *     the axis contains E_y).
 * Lengths and coordinates may span the whole double range (1e-300..1e300):
 * the formulas are evaluated in units of the longest link.
 *
 * Angles returned: theta0 and yaw, roll, theta2 wrapped into (-pi, pi];
 * theta1 in [-pi, pi].
 *
 * All functions are pure: no allocation, no globals, thread-safe, and on
 * error nothing is written.
 *
 * Not here: joint limits, more than three links (ik_chain.h and the numeric
 * solvers), 3D two-bone limbs with a pole (ik_twobone.h, seed 001).
 */
#ifndef IK_PLANAR_H
#define IK_PLANAR_H

#include "ik_math.h"
#include "ik_reach.h"

typedef struct ik_vec2 {
    double x, y;
} ik_vec2;

static inline ik_vec2 ik_v2(double x, double y)
{
    ik_vec2 v = {x, y};
    return v;
}
/* The unit direction at angle a (radians, counter-clockwise from +x). */
static inline ik_vec2 ik_vec2_from_angle(double a)
{
    return ik_v2(cos(a), sin(a));
}

/* ---- two-link planar (seed 000 "Two-Link Inverse Kinematics") ----------- */

typedef struct ik_twolink2d {
    double l1, l2;  /* link lengths, > 0 */
    ik_vec2 base;   /* O */
    ik_vec2 target; /* E */
    int bend;       /* +1 (seed's choice) or -1 */
} ik_twolink2d;

typedef struct ik_twolink2d_result {
    double theta0;     /* first link's angle from +x, (-pi, pi] */
    double theta1;     /* second joint, relative to the first link, [-pi, pi] */
    ik_vec2 joints[3]; /* position system: base, elbow, end */
    double error;      /* |end - target| */
    ik_reach reach;
} ik_twolink2d_result;

/* Solves seed 000's two-link problem. Returns IK_OK (reachable, end on the
 * target), IK_EUNREACHABLE (closest pose as above, error > 0) or IK_EINVAL
 * (*out unchanged). */
int ik_twolink2d_solve(const ik_twolink2d *p, ik_twolink2d_result *out);

/* ---- three-link planar with an end orientation (seed 000 "3-Link") ------ */

typedef struct ik_threelink2d {
    double l1, l2, l3; /* link lengths, > 0 */
    ik_vec2 base;      /* O */
    ik_vec2 target;    /* E: where the end of link 3 goes */
    ik_vec2 up;        /* direction of link 3 (target.up); need not be unit;
                          ik_vec2_from_angle() turns an angle into one */
    int bend;          /* +1 or -1, for the two-link part */
} ik_threelink2d;

typedef struct ik_threelink2d_result {
    double theta0;     /* first link from +x, (-pi, pi] */
    double theta1;     /* relative to link 1, [-pi, pi] */
    double theta2;     /* relative to link 2, (-pi, pi]: link 3 points along up */
    ik_vec2 joints[4]; /* base, joint 1, joint 2 (= P = E - l3 up), end */
    double error;      /* |end - target| */
    ik_reach reach;    /* of the two-link part towards P */
} ik_threelink2d_result;

/* Intermediate target P = E - l3 * unit(up), two-link towards P, then
 * theta2 = atan2(up) - theta0 - theta1. Link 3 always points along up, also
 * when P is out of reach (then the two-link part takes its closest pose and
 * the status is IK_EUNREACHABLE). IK_EINVAL as documented above. */
int ik_threelink2d_solve(const ik_threelink2d *p, ik_threelink2d_result *out);

/* ---- three-link in 3D (seed 000 "Three-Link IK in R^3", natural way) ---- */

typedef struct ik_threelink3d {
    double l1, l2, l3; /* link lengths, > 0 */
    ik_xform base;     /* O in world: position and orientation (unit quat;
                          normalised when used, zero is IK_EINVAL);
                          its local y is up, z forward, x left */
    ik_vec3 target;    /* E, world */
    ik_vec3 up;        /* E_y, world: direction of link 3; need not be unit */
    int bend;          /* +1 or -1 */
} ik_threelink3d;

typedef struct ik_threelink3d_result {
    /* Joint angles in the order documented at the top of this file. */
    double yaw;    /* theta_y about O's up axis, (-pi, pi] */
    double theta0; /* first link's elevation in the working plane */
    double theta1; /* second joint, relative, [-pi, pi] */
    double theta2; /* third joint, relative, (-pi, pi] */
    double roll;   /* about O -> P_T, applied last; = seed's beta - pi/2 */
    /* Position system (world): base, joint 1, joint 2 (P_T), end. */
    ik_vec3 joints[4];
    /* Bone system: bone i's rotation relative to its parent (bone 0's parent
     * is the base O) and in world. local[0] = R1 above, local[1] = H(theta1),
     * local[2] = H(theta2); world[i] = base.q * R(i+1). */
    ik_quat local[3];
    ik_quat world[3];
    double error;  /* |end - target| */
    ik_reach reach; /* of the two-link part towards P_T */
} ik_threelink3d_result;

/* Solves seed 000's three-link problem in 3D. Link 3 always points along
 * E_y; all three links and E_y lie in one plane through O. Returns IK_OK,
 * IK_EUNREACHABLE (P_T out of the two-link's reach: closest two-link pose,
 * link 3 still along E_y) or IK_EINVAL (*out unchanged). */
int ik_threelink3d_solve(const ik_threelink3d *p, ik_threelink3d_result *out);

#endif /* IK_PLANAR_H */
