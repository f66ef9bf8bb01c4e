/*
 * ik_budget.h: the time budget of an iterative solve (ik_numeric.h,
 * ik_tree.h), made robust to preemption.
 *
 * A wall-clock budget charges a solve for the time its thread spent
 * descheduled: on a machine whose cores are busy with other work, a solve
 * that needs 50 microseconds of computing can be stopped after a few
 * iterations because the scheduler gave its core to someone else for a tick
 * (4 ms). So a budget of T seconds counts two clocks:
 *   - the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): the budget is
 *     spent when the thread has computed for T seconds since the start;
 *   - the wall clock (CLOCK_MONOTONIC), as a ceiling: the budget is spent in
 *     any case once IK_BUDGET_WALL_FACTOR * T seconds have passed, so that a
 *     caller waiting for the answer (a stream, a request) never waits longer
 *     than that, however busy the machine.
 * On an idle machine both clocks advance together and the CPU time ends the
 * budget at T; when the thread gets at least 1 / IK_BUDGET_WALL_FACTOR of a
 * core, it still gets its whole T of computing; below that the ceiling ends
 * it first. One exception keeps a single long stall from deciding a solve:
 * the ceiling never ends one before it has done IK_BUDGET_WORK_FLOOR units
 * of work (solver iterations: nearly every solve of the benchmark robots
 * needs fewer, about 0.1 ms of computing). A thread descheduled for 12 ms
 * right after it started (measured on a 2-core machine with two busy
 * loops beside it) therefore still finishes an ordinary solve; the wall
 * time of a solve is at most the ceiling or the time those few iterations
 * take, whichever is longer.
 *
 * The clocks can be injected (ik_clock) so that tests drive the budget
 * deterministically (a preempted thread is a wall clock that jumps while the
 * CPU clock does not). NULL means the real clocks.
 *
 * Pure: no allocation, no globals, thread-safe (CLOCK_THREAD_CPUTIME_ID is
 * per thread by definition). Not here: iteration budgets (each solver counts
 * its own).
 */
#ifndef IK_BUDGET_H
#define IK_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

/* The wall-clock ceiling of a budget, as a multiple of its CPU time. */
#define IK_BUDGET_WALL_FACTOR 10.0
/* Work (iterations) done before the ceiling may end a budget. */
#define IK_BUDGET_WORK_FLOOR 256

/* Two clocks in seconds (any origin, non-decreasing), for tests. */
typedef struct ik_clock {
    double (*cpu_s)(void *ud);  /* the calling thread's CPU time */
    double (*wall_s)(void *ud); /* monotonic wall-clock time */
    void *ud;
} ik_clock;

/* The real clocks' readings (clock NULL), or the injected ones. */
double ik_clock_cpu(const ik_clock *clock);
double ik_clock_wall(const ik_clock *clock);

typedef struct ik_budget {
    const ik_clock *clock; /* NULL: the real clocks */
    double cpu0, wall0;    /* readings at the start */
    double cpu_end;        /* CPU reading that ends it (INFINITY: none) */
    double wall_end;       /* wall reading that ends it (INFINITY: none) */
} ik_budget;

/* Starts a budget of limit_s seconds of CPU time (wall-clock ceiling
 * IK_BUDGET_WALL_FACTOR * limit_s) now; limit_s <= 0 (or not finite) means
 * no time limit. */
void ik_budget_start(ik_budget *b, const ik_clock *clock, double limit_s);

/* A part of whole starting now: fraction (in (0, 1]) of what is left of
 * each of whole's two clocks. Used to share a budget between independent
 * sub-problems. */
void ik_budget_share(ik_budget *part, const ik_budget *whole, double fraction);

/* True when the CPU clock has reached its end, or the wall clock its
 * ceiling with at least IK_BUDGET_WORK_FLOOR units of work done (work: the
 * caller's count since the start, e.g. iterations). Reads the clocks. */
bool ik_budget_spent(const ik_budget *b, size_t work);

/* Seconds of wall-clock and of CPU time since the start. */
double ik_budget_wall_s(const ik_budget *b);
double ik_budget_cpu_s(const ik_budget *b);

#endif /* IK_BUDGET_H */
