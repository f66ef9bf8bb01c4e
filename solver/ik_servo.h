/*
 * ik_servo.h: one control period of a velocity-limited servo, the rule a
 * stream in servo mode (proto/STREAM.md, options.servo) answers with, in
 * the spirit of MoveIt Servo: the arm is at q, the IK solution it should go
 * to is goal; in one period of T seconds joint k may move at most
 * vmax[k] * T. The whole motion goal - q is scaled by one factor
 *   s = min(1, min_k vmax[k] T / |goal[k] - q[k]|)
 * so that the joints keep moving together along the straight joint-space
 * line to the goal (the end effector's path stays the one the IK step
 * describes, only slower), every joint within its limit, and the goal is
 * reached after ceil(1 / s) periods when it does not move. Near a
 * singularity, where a small target motion asks for a large joint motion,
 * this is what slows the arm down instead of letting it jump.
 *
 * Pure arithmetic: no allocation, no globals, thread-safe; NaN never
 * comes out of finite input.
 */
#ifndef IK_SERVO_H
#define IK_SERVO_H

#include <stddef.h>

/* Writes q + s (goal - q) to out (n values; out may alias q or goal) and
 * returns s in [0, 1]: 1 means out is the goal (arrived). vmax: n positive
 * limits (units per second); period: seconds, > 0. Returns -1 and writes
 * nothing when an input is not finite, a limit not positive, or period not
 * positive. */
double ik_servo_step(size_t n, const double *q, const double *goal, const double *vmax,
                     double period, double *out);

#endif /* IK_SERVO_H */
