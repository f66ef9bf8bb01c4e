/*
 * ik_reason.h: why a solve failed, in one table, and the bound behind the
 * first reason (a chain's maximum reach).
 *
 * The status (ik_status.h) says what the answer is; the reason says why a
 * failing solve failed, as far as the solver can tell:
 *   OUT_OF_REACH  the target is farther from the chain's first joint than
 *                 the chain's maximum reach (ik_chain_max_reach()): no joint
 *                 values, limits or not, can reach it. Certain.
 *   NO_SOLUTION   a closed form (ik_closed.h) proved that no joint values
 *                 reach the target, limits aside, although it is within
 *                 the maximum reach (too close, or an orientation the wrist
 *                 cannot take). Certain.
 *   LIMITS        the target is reachable, but not inside the joint limits:
 *                 certain from a closed form; from the numeric solver, the
 *                 best pose found has a joint on a limit that the step
 *                 towards the target would push further out.
 *   BUDGET        no solution was found in the time or iteration budget;
 *                 the target may or may not be reachable.
 *   IN_COLLISION  with a collision check that avoids (ik_collide.h): the
 *                 solutions found put the robot nearer than the margin to
 *                 an obstacle or to itself (the result names the closest
 *                 pair). Certain, and said at once, when links that the
 *                 target fixes (those rigid with the base, and for a full
 *                 pose those rigid with the tip) are already that near;
 *                 otherwise as far as the budget could search.
 *   PRIORITY      trees (ik_tree.h): the tip's target is not met because
 *                 the tips of higher priority, all met, leave it too little
 *                 freedom (its error is the least the solver found under
 *                 them); the target alone may be reachable.
 * IK_REASON_NONE goes with success (and with invalid input).
 *
 * Not here: the statuses themselves (ik_status.h), the wire names of
 * proto/ (which reuse the short names below).
 */
#ifndef IK_REASON_H
#define IK_REASON_H

#include "ik_chain.h"

#define IK_REASON_MAP(XX)                                                                          \
    XX(NONE, 0, "none", "no failure")                                                              \
    XX(OUT_OF_REACH, 1, "out_of_reach", "the target is beyond the chain's maximum reach")          \
    XX(NO_SOLUTION, 2, "no_solution",                                                              \
       "no joint values reach the target, limits aside (proved by the closed form)")               \
    XX(LIMITS, 3, "outside_limits", "the target is reachable only outside the joint limits")      \
    XX(BUDGET, 4, "budget", "no solution found within the time or iteration budget")              \
    XX(IN_COLLISION, 5, "in_collision",                                                            \
       "every solution found puts the robot nearer than the margin to an obstacle or to itself") \
    XX(PRIORITY, 6, "priority",                                                                    \
       "the higher-priority tips, all met, leave this one too little freedom (trees)")

typedef enum ik_reason {
#define IK__REASON_ENUM(name, val, str, msg) IK_REASON_##name = val,
    IK_REASON_MAP(IK__REASON_ENUM)
#undef IK__REASON_ENUM
} ik_reason;

/* Short snake_case name; "unknown" for a value not in the table. Static,
 * never NULL. */
const char *ik_reason_name(int reason);
/* One-sentence description; static, never NULL. */
const char *ik_reason_message(int reason);

/* An upper bound of the distance from the chain's first joint origin (the
 * translation of c->pre[0], base frame) to the tip, over every joint value
 * inside the limits: the lengths of the fixed translations after the first
 * joint, plus for each prismatic joint the largest |limit|. Rotations do
 * not change lengths, so no pose of the chain gets farther; the bound is
 * reached when the links can line up (a UR5 or an IRB 120 comes within a
 * few centimetres of it). Infinite only for unbounded chains. */
double ik_chain_max_reach(const ik_chain *c);

/* True when position p (base frame) is farther from the chain's first joint
 * origin than ik_chain_max_reach() (by more than one part in 1e12). */
bool ik_chain_beyond_reach(const ik_chain *c, ik_vec3 p);

#endif /* IK_REASON_H */
