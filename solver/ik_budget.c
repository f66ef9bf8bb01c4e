/*
 * ik_budget.c: time budgets on the thread's CPU time with a wall-clock
 * ceiling (contract and reasons in ik_budget.h).
 */
#include "solver/ik_budget.h"

#include <math.h>
#include <time.h>

static double read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double ik_clock_cpu(const ik_clock *clock)
{
    return clock ? clock->cpu_s(clock->ud) : read_clock(CLOCK_THREAD_CPUTIME_ID);
}

double ik_clock_wall(const ik_clock *clock)
{
    return clock ? clock->wall_s(clock->ud) : read_clock(CLOCK_MONOTONIC);
}

void ik_budget_start(ik_budget *b, const ik_clock *clock, double limit_s)
{
    b->clock = clock;
    b->cpu0 = ik_clock_cpu(clock);
    b->wall0 = ik_clock_wall(clock);
    if (limit_s > 0.0 && isfinite(limit_s)) {
        b->cpu_end = b->cpu0 + limit_s;
        b->wall_end = b->wall0 + IK_BUDGET_WALL_FACTOR * limit_s;
    } else {
        b->cpu_end = b->wall_end = INFINITY;
    }
}

void ik_budget_share(ik_budget *part, const ik_budget *whole, double fraction)
{
    part->clock = whole->clock;
    part->cpu0 = ik_clock_cpu(whole->clock);
    part->wall0 = ik_clock_wall(whole->clock);
    part->cpu_end = whole->cpu_end;
    part->wall_end = whole->wall_end;
    if (isfinite(whole->cpu_end)) {
        double left = whole->cpu_end - part->cpu0;
        part->cpu_end = part->cpu0 + (left > 0.0 ? left * fraction : 0.0);
    }
    if (isfinite(whole->wall_end)) {
        double left = whole->wall_end - part->wall0;
        part->wall_end = part->wall0 + (left > 0.0 ? left * fraction : 0.0);
    }
}

bool ik_budget_spent(const ik_budget *b, size_t work)
{
    if (!isfinite(b->cpu_end))
        return false;
    if (ik_clock_cpu(b->clock) >= b->cpu_end)
        return true;
    return work >= IK_BUDGET_WORK_FLOOR && ik_clock_wall(b->clock) >= b->wall_end;
}

double ik_budget_wall_s(const ik_budget *b)
{
    return ik_clock_wall(b->clock) - b->wall0;
}

double ik_budget_cpu_s(const ik_budget *b)
{
    return ik_clock_cpu(b->clock) - b->cpu0;
}
