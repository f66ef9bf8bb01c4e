/*
 * test_metrics.c: server/metrics.c: counters by label, the solve histogram
 * (cumulative buckets, sum, count), the stream gauge, the sampled gauges,
 * solve outcomes, the build info and the process metrics, and the
 * Prometheus text format of the whole exposition.
 */
#include <check.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "server/build_info.h"
#include "server/metrics.h"

/* Value of the sample line that starts with `series` followed by a space;
 * fails the test when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    ck_abort_msg("series %s not found in:\n%s", series, text);
    return -1;
}

START_TEST(test_requests_and_rejects)
{
    srv_metrics *m = srv_metrics_new();
    srv_metrics_request(m, "/v1/solve", 200);
    srv_metrics_request(m, "/v1/solve", 200);
    srv_metrics_request(m, "/v1/solve", 400);
    srv_metrics_request(m, "/livez", 200);
    srv_metrics_reject(m, "pool_full");
    srv_metrics_reject(m, "pool_full");
    srv_metrics_reject(m, "unauthorized");
    srv_metrics_held held = {.registry = 1234, .request_bodies = 56};
    srv_metrics_set_held(m, &held);
    size_t len = 0;
    char *t = srv_metrics_render(m, 3, 7, 5, &len);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(len, strlen(t));
    ck_assert_double_eq(sample(t, "ikd_http_requests_total{route=\"/v1/solve\",status=\"200\"}"), 2);
    ck_assert_double_eq(sample(t, "ikd_http_requests_total{route=\"/v1/solve\",status=\"400\"}"), 1);
    ck_assert_double_eq(sample(t, "ikd_http_requests_total{route=\"/livez\",status=\"200\"}"), 1);
    ck_assert_double_eq(sample(t, "ikd_rejected_total{reason=\"pool_full\"}"), 2);
    ck_assert_double_eq(sample(t, "ikd_rejected_total{reason=\"unauthorized\"}"), 1);
    ck_assert_double_eq(sample(t, "ikd_pool_queue_depth"), 3);
    ck_assert_double_eq(sample(t, "ikd_registry_chains"), 7);
    ck_assert_double_eq(sample(t, "ikd_http_requests_active"), 5);
    ck_assert_double_eq(sample(t, "ikd_held_bytes{what=\"registry\"}"), 1234);
    ck_assert_double_eq(sample(t, "ikd_held_bytes{what=\"request_bodies\"}"), 56);
    ck_assert_ptr_nonnull(strstr(t, "# TYPE ikd_http_requests_total counter\n"));
    ck_assert_ptr_nonnull(strstr(t, "# TYPE ikd_pool_queue_depth gauge\n"));
    free(t);
    srv_metrics_free(m);
}
END_TEST

START_TEST(test_histogram)
{
    srv_metrics *m = srv_metrics_new();
    srv_metrics_observe_solve(m, "two_bone", 2e-6);     /* <= 5e-6 */
    srv_metrics_observe_solve(m, "two_bone", 5e-6);     /* boundary: le is inclusive */
    srv_metrics_observe_solve(m, "two_bone", 3e-4);     /* <= 5e-4 */
    srv_metrics_observe_solve(m, "two_bone", 10.0);     /* only +Inf */
    srv_metrics_observe_solves(m, "numeric", 1e-3, 10); /* ten at 1 ms */
    srv_metrics_observe_solves(m, "numeric", 1e-3, 0);  /* nothing */
    srv_metrics_observe_solve(m, "numeric", -1.0);      /* clamped to 0 */
    char *t = srv_metrics_render(m, 0, 0, 0, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"two_bone\",le=\"5e-06\"}"), 2);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"two_bone\",le=\"0.00025\"}"), 2);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"two_bone\",le=\"0.0005\"}"), 3);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"two_bone\",le=\"1\"}"), 3);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"two_bone\",le=\"+Inf\"}"), 4);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_count{solver=\"two_bone\"}"), 4);
    ck_assert_double_eq_tol(sample(t, "ikd_solve_duration_seconds_sum{solver=\"two_bone\"}"),
                            2e-6 + 5e-6 + 3e-4 + 10.0, 1e-9);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"numeric\",le=\"0.0005\"}"), 1);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_bucket{solver=\"numeric\",le=\"0.001\"}"), 11);
    ck_assert_double_eq(sample(t, "ikd_solve_duration_seconds_count{solver=\"numeric\"}"), 11);
    ck_assert_double_eq_tol(sample(t, "ikd_solve_duration_seconds_sum{solver=\"numeric\"}"), 1e-2, 1e-12);
    ck_assert_ptr_nonnull(strstr(t, "# TYPE ikd_solve_duration_seconds histogram\n"));
    free(t);
    srv_metrics_free(m);
}
END_TEST

START_TEST(test_streams_gauge_and_escaping)
{
    srv_metrics *m = srv_metrics_new();
    srv_metrics_streams_add(m, +1);
    srv_metrics_streams_add(m, +1);
    srv_metrics_streams_add(m, -1);
    ck_assert_int_eq(srv_metrics_streams(m), 1);
    srv_metrics_reject(m, "we\"ird\\label\n");
    char *t = srv_metrics_render(m, 0, 0, 0, NULL);
    ck_assert_double_eq(sample(t, "ikd_ws_streams_open"), 1);
    ck_assert_double_eq(sample(t, "ikd_rejected_total{reason=\"we\\\"ird\\\\label\\n\"}"), 1);
    /* Every line is a comment or "name{labels} value". */
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
        ck_assert_msg(line[0] == '#' || strncmp(line, "ikd_", 4) == 0 ||
                          strncmp(line, "process_", 8) == 0,
                      "bad line %s", line);
    free(t);
    srv_metrics_free(m);
    srv_metrics_free(NULL);
}
END_TEST

/* Outcomes by solver and status; the build and the process: version and
 * commit as compiled in, and process values that this very process has
 * (some memory, its standard streams open, a start time within the last
 * hour and not in the future). */
START_TEST(test_outcomes_build_process)
{
    srv_metrics *m = srv_metrics_new();
    srv_metrics_outcome(m, "two_bone", "success", 3);
    srv_metrics_outcome(m, "numeric", "timed_out", 1);
    srv_metrics_outcome(m, "two_bone", "success", 2);
    srv_metrics_outcome(m, "two_bone", "no_ik_solution", 1);
    srv_metrics_outcome(m, "numeric", "success", 0); /* nothing */
    char *t = srv_metrics_render(m, 0, 0, 0, NULL);
    ck_assert_double_eq(sample(t, "ikd_solves_total{solver=\"two_bone\",status=\"success\"}"), 5);
    ck_assert_double_eq(
        sample(t, "ikd_solves_total{solver=\"two_bone\",status=\"no_ik_solution\"}"), 1);
    ck_assert_double_eq(sample(t, "ikd_solves_total{solver=\"numeric\",status=\"timed_out\"}"),
                        1);
    ck_assert_ptr_null(strstr(t, "status=\"success\",solver=\"numeric\""));
    ck_assert_ptr_null(strstr(t, "{solver=\"numeric\",status=\"success\"}"));
    char bi[512];
    snprintf(bi, sizeof bi, "ikd_build_info{version=\"%s\",commit=\"%s\",libmicrohttpd=\"%s\","
             "libuv=\"%s\",jansson=\"%s\"}", srv_version, srv_commit, MHD_get_version(),
             uv_version_string(), JANSSON_VERSION);
    ck_assert_double_eq(sample(t, bi), 1);
    ck_assert_double_gt(sample(t, "process_resident_memory_bytes"), 100000);
    ck_assert_double_ge(sample(t, "process_virtual_memory_bytes"),
                        sample(t, "process_resident_memory_bytes"));
    ck_assert_double_ge(sample(t, "process_open_fds"), 3);
    ck_assert_double_ge(sample(t, "process_max_fds"), sample(t, "process_open_fds"));
    ck_assert_double_ge(sample(t, "process_cpu_seconds_total"), 0);
    double start = sample(t, "process_start_time_seconds"), now = (double)time(NULL);
    ck_assert_double_le(start, now + 1);
    ck_assert_double_gt(start, now - 3600);
    free(t);
    srv_metrics_free(m);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_requests_and_rejects);
    tcase_add_test(tc, test_histogram);
    tcase_add_test(tc, test_streams_gauge_and_escaping);
    tcase_add_test(tc, test_outcomes_build_process);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
