/*
 * ik_reach.h: the three reach cases shared by the seeds' analytic solvers.
 *
 * Both seeds split a two-link problem by the distance d from the root to the
 * (intermediate) target against the link lengths l1, l2:
 *   - seed 000 ("Error Checks"): the triangle exists when |l1 - l2| <= d <= l1 + l2;
 *   - seed 001 ("Finding the New Positions"): too close when
 *     len_at < |len_ab - len_bc|, too far when len_at > len_ab + len_bc,
 *     reachable otherwise.
 * The solvers in ik_planar.h and ik_twobone.h report which case applied, so a
 * caller (and the wire format) can tell "out of reach, too far" from "out of
 * reach, too close" beyond the common IK_EUNREACHABLE status.
 *
 * IK_REACH_ROUNDING: the share of the reach by which a target may pass an
 * edge of it and still be met (the rounding of a target computed on the
 * edge), for every solver that tests the reach (ik_planar.c, ik_twobone.c,
 * ik_chain_beyond_reach).
 *
 * Not here: any computation. This header only names the cases and that
 * share.
 */
#ifndef IK_REACH_H
#define IK_REACH_H

typedef enum ik_reach {
    IK_REACH_OK = 0,        /* |l1 - l2| <= d <= l1 + l2: target met exactly */
    IK_REACH_TOO_FAR = 1,   /* d > l1 + l2: fully extended towards the target */
    IK_REACH_TOO_CLOSE = 2  /* d < |l1 - l2|: folded, longer link towards it */
} ik_reach;

#define IK_REACH_ROUNDING 1e-12

#endif /* IK_REACH_H */
