/*
 * test_config.c: server/config.c: listen addresses (IPv4, bracketed IPv6,
 * bare port), size suffixes, every flag in both spellings, environment
 * variables and their precedence (the solve limits of proto_limits
 * included), --help, and rejected values. Also the
 * constant-time bearer-token check of server/http.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "server/http.h"
#include "server/srv.h"

START_TEST(test_listen)
{
    char *h = NULL;
    uint16_t p = 0;
    ck_assert_int_eq(srv_config_parse_listen("127.0.0.1:8080", &h, &p), SRV_OK);
    ck_assert_str_eq(h, "127.0.0.1");
    ck_assert_uint_eq(p, 8080);
    free(h);
    ck_assert_int_eq(srv_config_parse_listen("[::1]:0", &h, &p), SRV_OK);
    ck_assert_str_eq(h, "::1");
    ck_assert_uint_eq(p, 0);
    free(h);
    ck_assert_int_eq(srv_config_parse_listen("9000", &h, &p), SRV_OK);
    ck_assert_str_eq(h, "127.0.0.1");
    ck_assert_uint_eq(p, 9000);
    free(h);
    h = NULL;
    ck_assert_int_eq(srv_config_parse_listen("::1:80", &h, &p), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_listen("[::1]80", &h, &p), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_listen("host:65536", &h, &p), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_listen("host:", &h, &p), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_listen(":80", &h, &p), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_listen("host:-1", &h, &p), SRV_EINVAL);
    ck_assert_ptr_null(h);
}
END_TEST

START_TEST(test_sizes)
{
    size_t v;
    ck_assert_int_eq(srv_config_parse_size("64", &v), SRV_OK);
    ck_assert_uint_eq(v, 64);
    ck_assert_int_eq(srv_config_parse_size("8K", &v), SRV_OK);
    ck_assert_uint_eq(v, 8192);
    ck_assert_int_eq(srv_config_parse_size("16M", &v), SRV_OK);
    ck_assert_uint_eq(v, 16u << 20);
    ck_assert_int_eq(srv_config_parse_size("1GiB", &v), SRV_OK);
    ck_assert_uint_eq(v, 1u << 30);
    ck_assert_int_eq(srv_config_parse_size("", &v), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_size("-1", &v), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_size("12X", &v), SRV_EINVAL);
    ck_assert_int_eq(srv_config_parse_size("99999999999999999999999", &v), SRV_EINVAL);
}
END_TEST

static int parse(srv_config *cfg, int argc, char **argv, char *err)
{
    FILE *devnull = fopen("/dev/null", "w");
    int rc = srv_config_parse(cfg, argc, argv, devnull, err, 256);
    fclose(devnull);
    return rc;
}

START_TEST(test_flags)
{
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *argv[] = {"ikd", "--listen", "[::1]:0", "--threads=3", "--max-connections", "5000",
                    "--max-body", "1M", "--max-message=64K", "--max-joints", "12",
                    "--max-targets", "500", "--log-format", "json", "--token", "s3cret",
                    "--allow-origin", "https://a.example,https://b.example", "--allow-origin",
                    "https://c.example", "--registry-bytes", "2M", "--timeout", "5",
                    "--max-queue", "9", "--inline-cost-us", "2.5", "--log-level", "warn",
                    "--max-send-queue", "128K", "--max-iterations", "250",
                    "--max-time-ms=12.5", "--max-urdf", "512K", "--web", "build/web"};
    int argc = (int)(sizeof argv / sizeof argv[0]);
    ck_assert_int_eq(parse(&cfg, argc, argv, err), SRV_OK);
    ck_assert_str_eq(cfg.listen_host, "::1");
    ck_assert_uint_eq(cfg.listen_port, 0);
    ck_assert_uint_eq(cfg.threads, 3);
    ck_assert_uint_eq(cfg.max_connections, 5000);
    ck_assert_uint_eq(cfg.limits.max_body_bytes, 1u << 20);
    ck_assert_uint_eq(cfg.max_message_bytes, 64u << 10);
    ck_assert_uint_eq(cfg.limits.max_joints, 12);
    ck_assert_uint_eq(cfg.limits.max_targets, 500);
    ck_assert_int_eq(cfg.log_format, SRV_LOG_JSON);
    ck_assert_str_eq(cfg.token, "s3cret");
    ck_assert_uint_eq(cfg.n_allow_origins, 3);
    ck_assert_str_eq(cfg.allow_origins[1], "https://b.example");
    ck_assert_str_eq(cfg.allow_origins[2], "https://c.example");
    ck_assert_uint_eq(cfg.registry_bytes, 2u << 20);
    ck_assert_uint_eq(cfg.conn_timeout_s, 5);
    ck_assert_uint_eq(cfg.pool_queue_max, 9);
    ck_assert_double_eq_tol(cfg.inline_cost_us, 2.5, 1e-12);
    ck_assert_str_eq(cfg.web_dir, "build/web");
    ck_assert_int_eq(cfg.log_level, SRV_LOG_WARN);
    ck_assert_uint_eq(cfg.ws_send_queue_bytes, 128u << 10);
    ck_assert_uint_eq(cfg.limits.max_iterations, 250);
    ck_assert_double_eq_tol(cfg.limits.max_time_ms, 12.5, 1e-12);
    ck_assert_uint_eq(cfg.limits.max_urdf_bytes, 512u << 10);
    srv_config_free(&cfg);
}
END_TEST

/* The solve limits of proto_limits: defaults, environment, flags. */
START_TEST(test_solve_limits)
{
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *none[] = {"ikd"};
    ck_assert_int_eq(parse(&cfg, 1, none, err), SRV_OK);
    ck_assert_uint_eq(cfg.limits.max_iterations, 10000);
    ck_assert_double_eq(cfg.limits.max_time_ms, 1000);
    ck_assert_uint_eq(cfg.limits.max_urdf_bytes, 4u << 20);
    srv_config_free(&cfg);

    setenv("IKD_MAX_ITERATIONS", "42", 1);
    setenv("IKD_MAX_TIME_MS", "0.5", 1);
    setenv("IKD_MAX_URDF", "2M", 1);
    srv_config_default(&cfg);
    ck_assert_int_eq(parse(&cfg, 1, none, err), SRV_OK);
    ck_assert_uint_eq(cfg.limits.max_iterations, 42);
    ck_assert_double_eq_tol(cfg.limits.max_time_ms, 0.5, 1e-12);
    ck_assert_uint_eq(cfg.limits.max_urdf_bytes, 2u << 20);
    srv_config_free(&cfg);
    /* the flag wins */
    char *argv[] = {"ikd", "--max-iterations", "7", "--max-time-ms", "20", "--max-urdf=1K"};
    srv_config_default(&cfg);
    ck_assert_int_eq(parse(&cfg, 6, argv, err), SRV_OK);
    ck_assert_uint_eq(cfg.limits.max_iterations, 7);
    ck_assert_double_eq(cfg.limits.max_time_ms, 20);
    ck_assert_uint_eq(cfg.limits.max_urdf_bytes, 1024);
    srv_config_free(&cfg);
    /* a bad environment value names its variable */
    setenv("IKD_MAX_TIME_MS", "soon", 1);
    srv_config_default(&cfg);
    ck_assert_int_eq(parse(&cfg, 1, none, err), SRV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "IKD_MAX_TIME_MS"));
    srv_config_free(&cfg);
    unsetenv("IKD_MAX_ITERATIONS");
    unsetenv("IKD_MAX_TIME_MS");
    unsetenv("IKD_MAX_URDF");
}
END_TEST

START_TEST(test_env_and_precedence)
{
    setenv("IKD_TOKEN", "from-env", 1);
    setenv("IKD_THREADS", "7", 1);
    setenv("IKD_LISTEN", "0.0.0.0:9999", 1);
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *argv[] = {"ikd", "--threads", "2"};
    ck_assert_int_eq(parse(&cfg, 3, argv, err), SRV_OK);
    ck_assert_str_eq(cfg.token, "from-env");
    ck_assert_uint_eq(cfg.threads, 2); /* the flag wins */
    ck_assert_str_eq(cfg.listen_host, "0.0.0.0");
    ck_assert_uint_eq(cfg.listen_port, 9999);
    srv_config_free(&cfg);

    setenv("IKD_THREADS", "zero", 1);
    srv_config_default(&cfg);
    ck_assert_int_eq(parse(&cfg, 1, argv, err), SRV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "IKD_THREADS"));
    srv_config_free(&cfg);
    unsetenv("IKD_TOKEN");
    unsetenv("IKD_THREADS");
    unsetenv("IKD_LISTEN");
}
END_TEST

START_TEST(test_rejected_and_help)
{
    const char *bad[][2] = {{"--threads", "0"},       {"--threads", "x"},
                            {"--max-body", "0"},      {"--log-format", "xml"},
                            {"--listen", "nohost:"},  {"--token", ""},
                            {"--inline-cost-us", "-1"}, {"--nonsense", "1"},
                            {"--log-level", "loud"},  {"--max-connections", "0"},
                            {"--max-iterations", "0"}, {"--max-iterations", "-3"},
                            {"--max-iterations", "1e3"}, {"--max-iterations", "99999999999"},
                            {"--max-time-ms", "0"},   {"--max-time-ms", "-1"},
                            {"--max-time-ms", "nan"}, {"--max-time-ms", "inf"},
                            {"--max-time-ms", "5ms"}, {"--max-time-ms", "1e12"},
                            {"--max-urdf", "0"},      {"--max-urdf", "4X"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_config cfg;
        srv_config_default(&cfg);
        char err[256] = "";
        char *argv[] = {"ikd", (char *)bad[i][0], (char *)bad[i][1]};
        ck_assert_int_eq(parse(&cfg, 3, argv, err), SRV_EINVAL);
        ck_assert_msg(err[0] != '\0', "no message for %s", bad[i][0]);
        srv_config_free(&cfg);
    }
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *missing[] = {"ikd", "--listen"};
    ck_assert_int_eq(parse(&cfg, 2, missing, err), SRV_EINVAL);
    char *stray[] = {"ikd", "serve"};
    ck_assert_int_eq(parse(&cfg, 2, stray, err), SRV_EINVAL);
    srv_config_free(&cfg);

    /* --help lists every flag. */
    srv_config_default(&cfg);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    char *help[] = {"ikd", "--help"};
    ck_assert_int_eq(srv_config_parse(&cfg, 2, help, out, err, sizeof err), 1);
    fclose(out);
    const char *flags[] = {"--listen", "--threads", "--max-connections", "--max-body",
                           "--max-message", "--max-joints", "--max-targets", "--log-format",
                           "--token", "IKD_TOKEN", "--allow-origin", "--registry-bytes",
                           "--max-iterations", "IKD_MAX_ITERATIONS", "--max-time-ms",
                           "IKD_MAX_TIME_MS", "--max-urdf", "IKD_MAX_URDF", "--web", "IKD_WEB"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(strstr(buf, flags[i]) != NULL, "--help lacks %s", flags[i]);
    free(buf);
    srv_config_free(&cfg);
}
END_TEST

/* --allow-origin fails closed: a list without any Origin ("", ",", " ")
 * is refused instead of leaving the list empty (which allows every
 * Origin), and the entries of "a, b" are trimmed. */
START_TEST(test_allow_origin_fails_closed)
{
    const char *bad[] = {"", ",", " ", " , ,"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_config cfg;
        srv_config_default(&cfg);
        char err[256] = "";
        char *argv[] = {"ikd", "--allow-origin", (char *)bad[i]};
        ck_assert_msg(parse(&cfg, 3, argv, err) == SRV_EINVAL, "accepted \"%s\"", bad[i]);
        ck_assert_msg(strstr(err, "allow-origin"), "%s", err);
        srv_config_free(&cfg);
    }
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *argv[] = {"ikd", "--allow-origin", " https://a.example , https://b.example,"};
    ck_assert_int_eq(parse(&cfg, 3, argv, err), SRV_OK);
    ck_assert_uint_eq(cfg.n_allow_origins, 2);
    ck_assert_str_eq(cfg.allow_origins[0], "https://a.example");
    ck_assert_str_eq(cfg.allow_origins[1], "https://b.example");
    srv_config_free(&cfg);
}
END_TEST

START_TEST(test_token_check)
{
    ck_assert(srv_http_token_ok("Bearer abc", "abc"));
    ck_assert(srv_http_token_ok("bearer abc", "abc"));
    ck_assert(!srv_http_token_ok("Bearer abd", "abc"));
    ck_assert(!srv_http_token_ok("Bearer ab", "abc"));
    ck_assert(!srv_http_token_ok("Bearer abcd", "abc"));
    ck_assert(!srv_http_token_ok("Basic abc", "abc"));
    ck_assert(!srv_http_token_ok("abc", "abc"));
    ck_assert(!srv_http_token_ok(NULL, "abc"));
    ck_assert(!srv_http_token_ok("Bearer ", ""));
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_listen);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_flags);
    tcase_add_test(tc, test_solve_limits);
    tcase_add_test(tc, test_env_and_precedence);
    tcase_add_test(tc, test_rejected_and_help);
    tcase_add_test(tc, test_token_check);
    tcase_add_test(tc, test_allow_origin_fails_closed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
