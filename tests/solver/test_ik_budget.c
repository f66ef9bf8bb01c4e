/*
 * test_ik_budget.c: solver/ik_budget.h, the time budget on the thread's CPU
 * time with a wall-clock ceiling, and its use by the numeric and the tree
 * solvers. Deterministic: the clocks are injected (ik_clock), so a
 * preempted thread is a wall clock that jumps while the CPU clock stands
 * still, and no test depends on the machine's load or speed. Answers are
 * checked by forward kinematics (ik_chain_fk), never by the solver's word.
 * One test reads the real clocks, only to see that they advance.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_budget.h"
#include "solver/ik_chain.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "solver/ik_tree.h"
#include "chains.h"

/* A scripted pair of clocks: each reading of the CPU clock advances it by
 * cpu_step; each reading of the wall clock advances it by wall_step, and
 * the jump_at-th wall reading (1-based; 0: none) by jump more (a time slice
 * given to another process). */
typedef struct fake {
    double cpu, wall;
    double cpu_step, wall_step;
    double jump;
    int jump_at, wall_reads, cpu_reads;
} fake;

static double fake_cpu(void *ud)
{
    fake *f = ud;
    f->cpu_reads++;
    f->cpu += f->cpu_step;
    return f->cpu;
}

static double fake_wall(void *ud)
{
    fake *f = ud;
    f->wall_reads++;
    f->wall += f->wall_step;
    if (f->wall_reads == f->jump_at)
        f->wall += f->jump;
    return f->wall;
}

static ik_clock clock_of(fake *f)
{
    ik_clock c = {fake_cpu, fake_wall, f};
    return c;
}

static _Alignas(64) unsigned char ws[1 << 20];

static ik_chain ur5(void)
{
    ik_joint j[UR5_JOINTS];
    ur5_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, UR5_JOINTS), IK_OK);
    return c;
}

/* A two-link arm in the x-y plane whose shoulder may only turn within
 * [0, 0.3]: a target at 90 degrees is within reach but only outside the
 * limits, so no search ever finds it and only a budget ends one. */
static ik_chain blocked_arm(void)
{
    ik_joint j[3];
    j[0] = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), 0.0, 0.3);
    j[1] = joint(IK_JOINT_REVOLUTE, ik_v3(0.5, 0, 0), ZERO, ik_v3(0, 0, 1), -0.5, 0.5);
    j[2] = joint(IK_JOINT_FIXED, ik_v3(0.5, 0, 0), ZERO, ZERO, 0, 0);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 3), IK_OK);
    return c;
}

static bool reaches(const ik_chain *c, ik_xform goal, const double *q, double tol)
{
    ik_xform x = ik_chain_fk(c, q);
    double e[6];
    ik_pose_error(goal, x, e);
    for (int i = 0; i < 6; i++)
        if (!(fabs(e[i]) <= tol))
            return false;
    return ik_chain_within_limits(c, q, 0.0);
}

/* ---- the budget itself ---------------------------------------------------- */

START_TEST(test_budget_cpu_then_ceiling)
{
    /* both clocks together (an idle machine): spent after 5 ms of CPU */
    fake f = {0};
    f.cpu_step = f.wall_step = 1e-3;
    ik_clock k = clock_of(&f);
    ik_budget b;
    ik_budget_start(&b, &k, 0.005);
    int reads = 0;
    while (!ik_budget_spent(&b, IK_BUDGET_WORK_FLOOR))
        reads++;
    ck_assert_int_eq(reads, 4); /* 1..4 ms not spent, 5 ms spent */
    /* the CPU clock stands still (the thread never runs): the wall-clock
     * ceiling, IK_BUDGET_WALL_FACTOR times the budget, ends it */
    memset(&f, 0, sizeof f);
    f.wall_step = 1e-3;
    ik_budget_start(&b, &k, 0.005);
    reads = 0;
    while (!ik_budget_spent(&b, IK_BUDGET_WORK_FLOOR))
        reads++;
    ck_assert_int_eq(reads, (int)(IK_BUDGET_WALL_FACTOR * 5) - 1);
    ck_assert_double_eq_tol(ik_budget_wall_s(&b), IK_BUDGET_WALL_FACTOR * 0.005 + 1e-3, 1e-12);
    /* ... but not before the floor of work is done */
    ck_assert(!ik_budget_spent(&b, IK_BUDGET_WORK_FLOOR - 1));
    ck_assert(ik_budget_spent(&b, IK_BUDGET_WORK_FLOOR));
    /* no limit: never spent */
    ik_budget_start(&b, &k, 0.0);
    for (int i = 0; i < 1000; i++)
        ck_assert(!ik_budget_spent(&b, IK_BUDGET_WORK_FLOOR));
}
END_TEST

START_TEST(test_budget_preemption_not_charged)
{
    /* a 4 ms time slice given away at the first reading, then the thread
     * runs: 1 ms of CPU per reading; still 5 ms of computing */
    fake f = {0};
    f.cpu_step = 1e-3;
    f.wall_step = 1e-3;
    f.jump = 4e-3;
    f.jump_at = 2;
    ik_clock k = clock_of(&f);
    ik_budget b;
    ik_budget_start(&b, &k, 0.005);
    int reads = 0;
    while (!ik_budget_spent(&b, IK_BUDGET_WORK_FLOOR))
        reads++;
    ck_assert_int_eq(reads, 4);
    ck_assert_double_eq_tol(b.cpu_end - b.cpu0, 5e-3, 1e-12);
}
END_TEST

START_TEST(test_budget_share)
{
    fake f = {0};
    f.cpu_step = 1e-3;
    f.wall_step = 1e-3;
    ik_clock k = clock_of(&f);
    ik_budget whole, part;
    ik_budget_start(&whole, &k, 0.010);  /* cpu 1 ms, wall 1 ms at start */
    ik_budget_share(&part, &whole, 0.5); /* cpu 2 ms: 9 left, 4.5 of it */
    ck_assert_double_eq_tol(part.cpu_end - part.cpu0, 4.5e-3, 1e-12);
    ck_assert_double_eq_tol(part.wall_end - part.wall0,
                            0.5 * (IK_BUDGET_WALL_FACTOR * 0.010 - 1e-3), 1e-12);
    /* nothing left: a share is spent at once */
    f.cpu = 1.0;
    ik_budget_share(&part, &whole, 0.5);
    ck_assert(ik_budget_spent(&part, 0));
    /* an unlimited whole gives unlimited parts */
    ik_budget_start(&whole, &k, 0.0);
    ik_budget_share(&part, &whole, 0.5);
    ck_assert(!ik_budget_spent(&part, IK_BUDGET_WORK_FLOOR));
}
END_TEST

START_TEST(test_real_clocks_advance)
{
    double c0 = ik_clock_cpu(NULL), w0 = ik_clock_wall(NULL);
    volatile double s = 0;
    double c1, w1;
    do {
        for (int i = 0; i < 100000; i++)
            s += sqrt((double)i);
        c1 = ik_clock_cpu(NULL);
        w1 = ik_clock_wall(NULL);
    } while (c1 == c0 || w1 == w0);
    ck_assert_double_gt(c1, c0);
    ck_assert_double_gt(w1, w0);
}
END_TEST

/* ---- the numeric solver ----------------------------------------------------- */

/* A solve whose thread is descheduled for 6 ms at its first clock reading
 * (more than the 5 ms budget, less than its wall-clock ceiling) still gets
 * its CPU time and solves; a wall-clock budget would have stopped it with
 * IK_ETIMEDOUT before its first iteration. */
START_TEST(test_numeric_preempted_still_solves)
{
    ik_chain c = ur5();
    double qt[6] = {0.4, -1.1, 1.3, -1.6, 1.2, 0.3}, q[6];
    ik_xform goal = ik_chain_fk(&c, qt);
    ik_target t = ik_target_full_pose(goal);
    fake f = {0};
    f.cpu_step = 1e-6;
    f.wall_step = 1e-6;
    f.jump = 6e-3;
    f.jump_at = 2; /* the start reads once, the first check is the second */
    ik_clock k = clock_of(&f);
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.005;
    o.clock = &k;
    ik_numeric_result res;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert(reaches(&c, goal, q, 1e-5));
    ck_assert_uint_gt(res.iterations, 0);
    ck_assert_int_gt(f.wall_reads, 1);
    /* the result reports both clocks */
    ck_assert_double_ge(res.elapsed_s, 6e-3);
    ck_assert_double_lt(res.cpu_s, 1e-3);
    /* a stall longer than the ceiling (50 ms) before the first iteration:
     * the floor of iterations still solves it */
    memset(&f, 0, sizeof f);
    f.cpu_step = f.wall_step = 1e-6;
    f.jump = 50e-3;
    f.jump_at = 2;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert(reaches(&c, goal, q, 1e-5));
    ck_assert_uint_le(res.iterations, IK_BUDGET_WORK_FLOOR);
    ck_assert_double_ge(res.elapsed_s, 50e-3);
}
END_TEST

/* A search that cannot succeed: with the CPU clock standing still the
 * wall-clock ceiling ends it; with both advancing, the CPU budget. */
START_TEST(test_numeric_ceiling_and_cpu)
{
    ik_chain c = blocked_arm();
    ik_target t = ik_target_position(ik_v3(0, 0.9, 0));
    double q[2];
    ik_numeric_result res;
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.005;
    fake f = {0};
    ik_clock k = clock_of(&f);
    o.clock = &k;
    f.wall_step = 1e-4;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_ETIMEDOUT);
    ck_assert_double_ge(res.elapsed_s, IK_BUDGET_WALL_FACTOR * 0.005);
    ck_assert_double_le(res.elapsed_s, IK_BUDGET_WALL_FACTOR * 0.005 + 3e-4);
    ck_assert_uint_ge(res.iterations, IK_BUDGET_WORK_FLOOR);
    ck_assert(ik_chain_within_limits(&c, q, 0.0));
    memset(&f, 0, sizeof f);
    f.wall_step = f.cpu_step = 1e-4;
    ck_assert_int_eq(ik_numeric_solve(&c, &t, NULL, &o, ws, sizeof ws, q, &res), IK_ETIMEDOUT);
    ck_assert_double_ge(res.cpu_s, 0.005);
    ck_assert_double_le(res.cpu_s, 0.005 + 3e-4);
}
END_TEST

/* ---- the tree solver ---------------------------------------------------------- */

START_TEST(test_tree_preempted_still_solves)
{
    ik_joint j[UR5_JOINTS];
    ur5_joints(j);
    const ik_joint *chains[1] = {j};
    size_t len[1] = {UR5_JOINTS};
    static ik_tree tree;
    ck_assert_int_eq(tree_from_chains(&tree, chains, len, 1), IK_OK);
    ik_chain c = ur5();
    double qt[6] = {0.4, -1.1, 1.3, -1.6, 1.2, 0.3}, q[6];
    ik_xform goal = ik_chain_fk(&c, qt);
    ik_tree_goal g = ik_tree_goal_target(ik_target_full_pose(goal));
    fake f = {0};
    f.cpu_step = 1e-6;
    f.wall_step = 1e-6;
    f.jump = 6e-3;
    f.jump_at = 3;
    ik_clock k = clock_of(&f);
    ik_tree_opts o = ik_tree_opts_default();
    o.timeout_s = 0.005;
    o.clock = &k;
    ik_tree_result res;
    ck_assert_uint_le(ik_tree_workspace_size(&tree), sizeof ws);
    ck_assert_int_eq(ik_tree_solve(&tree, &g, NULL, &o, ws, sizeof ws, q, &res), IK_OK);
    ck_assert(reaches(&c, goal, q, 1e-5));
    ck_assert_double_ge(res.elapsed_s, 6e-3);
    ck_assert_double_lt(res.cpu_s, 1e-3);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ik_budget");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_budget_cpu_then_ceiling);
    tcase_add_test(tc, test_budget_preemption_not_charged);
    tcase_add_test(tc, test_budget_share);
    tcase_add_test(tc, test_real_clocks_advance);
    tcase_add_test(tc, test_numeric_preempted_still_solves);
    tcase_add_test(tc, test_numeric_ceiling_and_cpu);
    tcase_add_test(tc, test_tree_preempted_still_solves);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
