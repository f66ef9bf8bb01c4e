/*
 * test_ik_fabrik.c: FABRIK (solver/ik_fabrik.h), verified by the positions
 * it returns: the shared animation-chain cases of anim_cases.h (random
 * reachable and unreachable targets on random 3-10 bone chains, pole, cone
 * limits, options, degenerate input) plus FABRIK's own: hinge limits are
 * refused, and the closed-form two-bone answer of seed 001 is reproduced.
 */
#include <stdio.h>

#include "solver/ik_fabrik.h"

#define ANIM_SOLVE                ik_fabrik_solve
#define ANIM_NAME                 "fabrik"
#define ANIM_RANDOM_ITERATIONS    1000
#define ANIM_CONE_SUCCESS_PERCENT 80

#include "anim_cases.h"

START_TEST(test_hinge_refused)
{
    ik_vec3 p[3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}}, out[3] = {{9, 9, 9}, {9, 9, 9}, {9, 9, 9}};
    ik_anim_limit lim[2] = {ik_anim_limit_none(), ik_anim_limit_hinge(ik_v3(0, 0, 1), -1, 1)};
    ik_anim_options o;
    ik_anim_options_default(&o);
    o.limits = lim;
    unsigned char work[256];
    ik_anim_result res;
    ck_assert_int_eq(
        ik_fabrik_solve(p, 3, ik_v3(1, 1, 0), &o, work, sizeof work, out, NULL, NULL, &res),
        IK_EINVAL);
    ck_assert_double_eq(out[1].x, 9);
}
END_TEST

/* Two bones in a plane: the knee must land where the two circles meet
 * (law of cosines, seed 000/001), on the side of the input knee. */
START_TEST(test_two_bone_law_of_cosines)
{
    rng r = {8};
    unsigned char work[256];
    for (int trial = 0; trial < 500; trial++) {
        double l1 = rnd_in(&r, 0.3, 2), l2 = rnd_in(&r, 0.3, 2);
        double a0 = rnd_in(&r, 0.2, 2.8);
        ik_vec3 p[3] = {{0, 0, 0}, {l1, 0, 0}, {l1 + l2 * cos(a0), l2 * sin(a0), 0}}, out[3];
        double d = rnd_in(&r, fabs(l1 - l2) + 0.05, l1 + l2 - 0.05);
        double phi = rnd_in(&r, -3, 3);
        ik_vec3 t = ik_v3(d * cos(phi), d * sin(phi), 0);
        ik_anim_options o;
        ik_anim_options_default(&o);
        o.max_iterations = 5000;
        o.tolerance = 1e-10;
        ik_anim_result res;
        ck_assert_int_eq(ik_fabrik_solve(p, 3, t, &o, work, sizeof work, out, NULL, NULL, &res),
                         IK_OK);
        /* angle at the root between the target and the knee */
        double c = (l1 * l1 + d * d - l2 * l2) / (2 * l1 * d);
        double want = acos(c);
        double got = ik_acos_clamped(ik_vec3_dot(ik_vec3_normalize(out[1]), ik_vec3_normalize(t)));
        ck_assert_double_eq_tol(got, want, 1e-6);
        ck_assert_double_eq_tol(out[1].z, 0, 1e-12);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ik_fabrik");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    add_anim_cases(tc);
    tcase_add_test(tc, test_hinge_refused);
    tcase_add_test(tc, test_two_bone_law_of_cosines);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
