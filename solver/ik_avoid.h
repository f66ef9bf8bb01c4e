/*
 * ik_avoid.h: the search half of collision avoidance (internal to the
 * solver library: ik__ names, not exported), shared by the numeric chain
 * solver (ik_numeric.c) and the tree solver (ik_tree_avoid.c).
 *
 * A solver that found joint values meeting its task (every checked tip on
 * its target) whose robot is nearer than the margin to an obstacle or to
 * itself hands them here. ik__avoid_repair() moves them, while the task
 * stays met, out of collision: every iteration is a Gauss-Newton step on
 * the task (its damped least-squares correction, which keeps the tips on
 * their targets to first order) plus a motion in the task's null space
 * down the gradient of the collision penalty of ik_collide.h (the
 * gradient-projection method of Liegeois, 1977; as a repulsive field,
 * Khatib, 1986), sized by the Gauss-Newton rule that, to first order,
 * brings the penalty to zero:
 *   dq = dq_task - t h,   h = g - Jw^T (Jw Jw^T + mu I)^-1 Jw g,
 *   t  = (2 P + g . dq_task) / (g . h),
 * with g the penalty's gradient, P the penalty (ACTIVE, below, beyond the
 * margin), each joint's motion capped and the trial halved until the
 * penalty falls (or the task error, at the same penalty). A redundant
 * chain (a 7-joint arm on full poses, any arm on position-only targets)
 * has the freedom for it; a chain without (6 joints, full pose) returns
 * at once and the solver restarts elsewhere instead.
 *
 * Pure: no allocation (the scratch lives in the collision check's
 * workspace, after the queries'), no globals.
 */
#ifndef IK_AVOID_H
#define IK_AVOID_H

#include <stdbool.h>
#include <stddef.h>

#include "ik_chain.h"
#include "ik_collide.h"

/* The task a solution meets, seen through the solver's own evaluation. */
typedef struct ik__avoid_task {
    size_t n;                  /* variables (the model's nvars) */
    const ik_joint_type *type; /* n entries: limits as ik_chain.h's */
    const double *lower, *upper;
    /* Evaluates the task at q: its active rows, weighted, into Jw (*m x n,
     * row-major; *m at most the model's task_rows) and ew (*m), and
     * returns whether every checked component is met. */
    bool (*eval)(void *ctx, const double *q, double *Jw, double *ew, size_t *m);
    /* True while the solver's budget allows another iteration (NULL:
     * always). */
    bool (*budget_left)(void *ctx);
    void *ctx;
} ik__avoid_task;

/* Doubles of scratch the repair needs for n variables and up to rows task
 * rows (counted into ik_collide_workspace_size()). */
size_t ik__avoid_doubles(size_t n, size_t rows);
/* Where the repair's scratch starts in an aligned collision workspace
 * (after the queries' own). */
double *ik__avoid_scratch(const ik_collide_model *m, void *ws);
/* n doubles of that workspace the repair never touches, for the solver
 * (the clearest colliding solution it keeps aside). */
double *ik__avoid_keep(const ik_collide_model *m, void *ws);

/* q (t->n values) meets the task. Returns true when q, moved as described
 * above, meets the task with the robot at least chk->margin clear: q is
 * that configuration and *closest its closest pair. Otherwise false: q is
 * the configuration met with the largest distance seen (the one given,
 * unless the repair got farther), *closest its pair. */
bool ik__avoid_repair(const ik__avoid_task *t, const ik_collide_check *chk, double *q,
                      ik_collide_pair *closest);

/* The activation distance of the penalty for a check: the margin plus
 * half the model's mean sphere radius (pairs that near are pushed apart
 * together, so that clearing one does not press another in). */
double ik__avoid_active(const ik_collide_check *chk);

#endif /* IK_AVOID_H */
