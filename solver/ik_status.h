/*
 * ik_status.h: the one table of outcomes every ikd solver reports.
 *
 * Like libuv's UV_ERRNO_MAP, a single X-macro generates the enum, the short
 * names and the messages, so they never drift apart. 0 is success; every
 * other outcome is a negative int. The wire format (proto/) maps these onto
 * MoveIt's codes (SUCCESS=1, NO_IK_SOLUTION=-31, TIMED_OUT=-6, INVALID_...).
 *
 * What each status promises about the result a solver wrote:
 *   IK_OK           the target is met within the requested tolerance.
 *   IK_EUNREACHABLE the target is out of reach; the closest pose the solver
 *                   defines (e.g. seed 001: fully extended towards the
 *                   target) is returned, with its error.
 *   IK_ENOTCONV     the iteration budget ran out; the best pose found is
 *                   returned, with its error.
 *   IK_ETIMEDOUT    the time budget ran out; the best pose found is returned.
 *   IK_EINVAL       invalid input (non-finite numbers, zero-length links,
 *                   bad joint description...); outputs are left untouched.
 *   IK_ENOSPC       the caller's workspace or output array is too small;
 *                   outputs are left untouched.
 *   IK_ELIMITS      a target is only reachable outside the joint limits; the
 *                   closest pose within the limits is returned.
 *   IK_ESTEP        solutions exist, but each needs a larger joint step
 *                   from the seed than the caller allows; the seed (no
 *                   motion) is returned.
 *   IK_ECOLLISION   with a collision check that avoids (ik_collide.h):
 *                   the solutions found all put the robot nearer than the
 *                   margin to an obstacle or to itself; the clearest of
 *                   them is returned, with the closest pair.
 */
#ifndef IK_STATUS_H
#define IK_STATUS_H

#define IK_STATUS_MAP(XX)                                                                          \
    XX(OK, 0, "ok", "target reached within tolerance")                                            \
    XX(EUNREACHABLE, -1, "unreachable", "target out of reach; closest pose returned")            \
    XX(ENOTCONV, -2, "not_converged", "iteration budget exhausted; best pose returned")           \
    XX(ETIMEDOUT, -3, "timed_out", "time budget exhausted; best pose returned")                   \
    XX(EINVAL, -4, "invalid_input", "invalid input")                                              \
    XX(ENOSPC, -5, "no_space", "workspace or output too small")                                   \
    XX(ELIMITS, -6, "joint_limits", "target reachable only outside the joint limits")            \
    XX(ESTEP, -7, "joint_step", "every solution needs a joint step above the limit; seed returned") \
    XX(ECOLLISION, -8, "in_collision", "every solution found is in collision; the clearest returned")

typedef enum ik_status {
#define IK__STATUS_ENUM(name, val, str, msg) IK_##name = val,
    IK_STATUS_MAP(IK__STATUS_ENUM)
#undef IK__STATUS_ENUM
} ik_status;

/* Short snake_case name ("unreachable"); "unknown" for a value not in the
 * table. Never NULL; the string is static. */
const char *ik_status_name(int status);
/* One-sentence description; static, never NULL. */
const char *ik_status_message(int status);

#endif /* IK_STATUS_H */
