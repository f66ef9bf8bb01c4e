/*
 * test_ik_servo.c: solver/ik_servo.h. Every period moves each joint at
 * most vmax * period, along the straight line to the goal (the joints'
 * motions stay proportional), the goal is reached in the expected number
 * of periods, an arrived step returns the goal exactly, and invalid input
 * writes nothing.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_servo.h"

START_TEST(test_bounded_steps_and_arrival)
{
    const double vmax[3] = {1.0, 2.0, 0.5}, T = 0.01;
    double q[3] = {0.0, 0.0, 0.0};
    const double goal[3] = {0.3, -0.1, 0.2}; /* joint 2: 0.2 / 0.005 = 40 periods */
    int periods = 0;
    for (;;) {
        double out[3], prev[3];
        memcpy(prev, q, sizeof q);
        double s = ik_servo_step(3, q, goal, vmax, T, out);
        ck_assert(s > 0.0 && s <= 1.0);
        for (int k = 0; k < 3; k++) {
            ck_assert_double_le(fabs(out[k] - prev[k]), vmax[k] * T * (1 + 1e-12));
            /* on the line from the start to the goal */
            ck_assert_double_eq_tol(out[k] / goal[k], out[0] / goal[0], 1e-12);
        }
        memcpy(q, out, sizeof q);
        periods++;
        if (s >= 1.0)
            break;
        ck_assert_int_lt(periods, 100);
    }
    ck_assert_int_eq(periods, 40);
    for (int k = 0; k < 3; k++)
        ck_assert_double_eq(q[k], goal[k]);
}
END_TEST

START_TEST(test_near_goal_and_invalid)
{
    const double vmax[2] = {1, 1};
    double q[2] = {0.1, 0.2}, goal[2] = {0.1005, 0.2}, out[2] = {7, 7};
    ck_assert_double_eq(ik_servo_step(2, q, goal, vmax, 0.01, out), 1.0);
    ck_assert_double_eq(out[0], goal[0]);
    double bad[2] = {1, 0};
    out[0] = out[1] = 7;
    ck_assert_double_eq(ik_servo_step(2, q, goal, bad, 0.01, out), -1.0);
    ck_assert_double_eq(ik_servo_step(2, q, goal, vmax, 0.0, out), -1.0);
    goal[1] = NAN;
    ck_assert_double_eq(ik_servo_step(2, q, goal, vmax, 0.01, out), -1.0);
    ck_assert_double_eq(out[0], 7);
    ck_assert_double_eq(out[1], 7);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ik_servo");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_bounded_steps_and_arrival);
    tcase_add_test(tc, test_near_goal_and_invalid);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
