/*
 * test_stream_turns.c: a planar arm's stream is turn-aware. Seed 000's
 * two- and three-link solvers answer their angles from atan2, in
 * (-pi, pi]; on a stream (each solve seeded by the previous answer) a
 * target circling the base twice must get answers that go on turning
 * (3.2 rad after 3.1, never -3.1: a whole-turn jump the arm did not ask
 * for), as the numeric solver's continuous joints do.
 *
 * Each answer is checked by forward kinematics computed here (the angles
 * summed along the links), and the largest joint step between two answers
 * against the motion's own (2 pi / 90 per target).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_session.h"
#include "tests/proto/proto_check.h"

#define STEPS 180 /* two turns */

static void circle(const char *chain, size_t nlinks, const double *len)
{
    proto_session *s = pc_session_on(chain, NULL);
    double prev[3] = {0}, worst = 0.0;
    for (int f = 0; f < STEPS; f++) {
        const double a = 0.3 + 2.0 * M_PI * f / 90.0;
        const double p[2] = {1.2 * cos(a), 1.2 * sin(a)}, up[2] = {cos(a + 1.0), sin(a + 1.0)};
        json_t *target = nlinks == 3 ? json_pack("{s:[f,f], s:[f,f]}", "position", p[0], p[1],
                                                 "up", up[0], up[1])
                                     : json_pack("{s:[f,f]}", "position", p[0], p[1]);
        proto_job *job = NULL;
        proto_error e;
        ck_assert_msg(proto_session_target(s, target, NULL, &job, &e) == 0, "%s", e.message);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        json_t *res = proto_job_result_json(job, 0);
        ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "success");
        const json_t *jq = json_object_get(res, "joints");
        double q[3], sum = 0.0, x = 0.0, y = 0.0;
        for (size_t k = 0; k < nlinks; k++) {
            q[k] = json_real_value(json_array_get(jq, k));
            sum += q[k];
            x += len[k] * cos(sum);
            y += len[k] * sin(sum);
            if (f > 0)
                worst = fmax(worst, fabs(q[k] - prev[k]));
            prev[k] = q[k];
        }
        ck_assert_double_le(hypot(x - p[0], y - p[1]), 1e-9);
        if (nlinks == 3)
            ck_assert_double_le(hypot(cos(sum) - up[0], sin(sum) - up[1]), 1e-9);
        json_decref(res);
        json_decref(target);
        proto_session_solved(s, job);
    }
    ck_assert_msg(worst < 0.2, "%zu links: an answer jumped by %g rad (the target moved %g)",
                  nlinks, worst, 2.0 * M_PI / 90.0);
    proto_session_free(s);
}

START_TEST(test_planar_streams_keep_turning)
{
    static const double two[] = {1.0, 0.8}, three[] = {1.0, 0.8, 0.3};
    circle("{\"kind\":\"planar\",\"lengths\":[1.0,0.8]}", 2, two);
    circle("{\"kind\":\"planar\",\"lengths\":[1.0,0.8,0.3]}", 3, three);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_turns");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_planar_streams_keep_turning);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
