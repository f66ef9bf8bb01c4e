/*
 * ik_tree_avoid.h: the tree solver with a collision check (internal to the
 * solver library: ik__ names, not exported). ik_tree_solve() (ik_tree.h)
 * hands a solve whose options carry a collision check to
 * ik__tree_solve_avoiding() (ik_tree_avoid.c), which runs the tree's own
 * search, ik__tree_solve_plain() (ik_tree.c: the solve of ik_tree.h
 * without collisions, which never looks at opts->collide), as often as the
 * budget allows. Both take and return what ik_tree_solve() does.
 */
#ifndef IK_TREE_AVOID_H
#define IK_TREE_AVOID_H

#include "ik_tree.h"

int ik__tree_solve_plain(const ik_tree *tree, const ik_tree_goal *goals, const double *seed,
                         const ik_tree_opts *opts, void *ws, size_t ws_size, double *q_out,
                         ik_tree_result *res);

int ik__tree_solve_avoiding(const ik_tree *tree, const ik_tree_goal *goals, const double *seed,
                            const ik_tree_opts *opts, void *ws, size_t ws_size, double *q_out,
                            ik_tree_result *res);

#endif /* IK_TREE_AVOID_H */
