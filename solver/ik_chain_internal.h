/*
 * ik_chain_internal.h: ik_chain.c's walk down a chain, resumable, for the
 * tree solver (ik_tree.c). Internal to solver/ (ik__ prefix); the public
 * contract is ik_chain.h.
 *
 * The tips of a tree share the leading joints of their chains (a torso, a
 * spine, an arm before its fingers): the walk's state after a shared joint
 * is the same for every chain that holds it (the same described joints
 * compile to the same fast transforms), so a tree evaluates each shared
 * joint once and resumes every other chain from there (ik_tree.c,
 * evaluate).
 */
#ifndef IK_CHAIN_INTERNAL_H
#define IK_CHAIN_INTERNAL_H

#include <stddef.h>

#include "ik_chain.h"

/* The walk's state at movable joint i of a chain, base frame. */
typedef struct ik__walk {
    double R[9]; /* the running rotation after joint i's motion (the joint's
                    frame times its B_i, ik_chain.c) */
    double p[3]; /* the running position after joint i's motion */
    double z[3]; /* joint i's axis */
    double o[3]; /* joint i's origin before its motion */
} ik__walk;

/* Walks chain c from movable joint `from` on, joint i's value being
 * q[index[i]] (index NULL: q[i]): st[0..from-1] must hold the states of
 * the joints before (of this chain, or of another whose first `from`
 * joints are the same), st[from..dof-1] are written, and the tip's
 * rotation and position go to R, p. from = 0 starts at the base. */
void ik__chain_walk_from(const ik_chain *c, const double *q, const size_t *index, size_t from,
                         ik__walk *st, double R[9], double p[3]);

#endif /* IK_CHAIN_INTERNAL_H */
