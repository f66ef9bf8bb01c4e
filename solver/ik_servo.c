/*
 * ik_servo.c: one velocity-limited servo period (contract in ik_servo.h):
 * the motion to the goal scaled by the largest factor that keeps every
 * joint within vmax * period.
 */
#include "solver/ik_servo.h"

#include <math.h>

double ik_servo_step(size_t n, const double *q, const double *goal, const double *vmax,
                     double period, double *out)
{
    if (!(period > 0.0) || !isfinite(period))
        return -1.0;
    double s = 1.0;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(q[k]) || !isfinite(goal[k]) || !(vmax[k] > 0.0) || !isfinite(vmax[k]))
            return -1.0;
        const double d = fabs(goal[k] - q[k]), lim = vmax[k] * period;
        if (d > lim && lim / d < s)
            s = lim / d;
    }
    for (size_t k = 0; k < n; k++)
        out[k] = s >= 1.0 ? goal[k] : q[k] + s * (goal[k] - q[k]);
    return s;
}
