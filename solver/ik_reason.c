/*
 * ik_reason.c: names and messages of the failure reasons (ik_reason.h),
 * generated from the same X-macro as the enum, and the maximum reach of a
 * chain (a sum of link lengths: triangle inequality along the chain).
 */
#include "solver/ik_reason.h"

#include <math.h>

#include "solver/ik_reach.h"

const char *ik_reason_name(int reason)
{
    switch (reason) {
#define IK__REASON_NAME(name, val, str, msg)                                                       \
    case val:                                                                                      \
        return str;
        IK_REASON_MAP(IK__REASON_NAME)
#undef IK__REASON_NAME
    }
    return "unknown";
}

const char *ik_reason_message(int reason)
{
    switch (reason) {
#define IK__REASON_MSG(name, val, str, msg)                                                        \
    case val:                                                                                      \
        return msg;
        IK_REASON_MAP(IK__REASON_MSG)
#undef IK__REASON_MSG
    }
    return "unknown reason";
}

/* tip = o_0 + sum_{i>=1} R_i pre_i.p + R_n tip.p (+ prismatic motions along
 * unit axes), so |tip - o_0| is at most the sum of the lengths. */
double ik_chain_max_reach(const ik_chain *c)
{
    double s = 0.0;
    for (size_t i = 0; i < c->dof; i++) {
        if (i > 0)
            s += ik_vec3_len(c->pre[i].p);
        if (c->type[i] == IK_JOINT_PRISMATIC)
            s += fmax(fabs(c->lower[i]), fabs(c->upper[i]));
    }
    return s + ik_vec3_len(c->tip.p);
}

bool ik_chain_beyond_reach(const ik_chain *c, ik_vec3 p)
{
    double d = ik_vec3_dist(p, c->pre[0].p);
    double r = ik_chain_max_reach(c);
    return isfinite(d) && d > r * (1.0 + IK_REACH_ROUNDING) + 1e-300;
}
