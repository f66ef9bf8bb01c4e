/*
 * test_config.c: server/config.c: listen addresses (IPv4, bracketed IPv6,
 * bare port), size suffixes, every flag in both spellings, environment
 * variables and their precedence (the solve limits of proto_limits
 * included), --help, and rejected values. Also the
 * constant-time bearer-token check of server/http_mhd.c.
 *
 * The flag table SRV_CONFIG_MAP against what is made of it and written
 * about it: every VALUE() default is accepted by its own flag, --help
 * lists every row with its variable and default under its topic's heading
 * (topics in SRV_CONFIG_TOPICS's order) in a layout that long names do not
 * break (no line over 79 columns, every variable in one column), and
 * README.md's flag table documents exactly the table's flags with the same
 * defaults.
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

/* IKD_ALLOW_ORIGIN set to a list naming no Origin fails closed too, the
 * empty value included: it used to be skipped like an unset variable,
 * which left every Origin allowed while --allow-origin "" refused to
 * start. */
START_TEST(test_allow_origin_env_fails_closed)
{
    const char *bad[] = {"", ",", " "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("IKD_ALLOW_ORIGIN", bad[i], 1);
        srv_config cfg;
        srv_config_default(&cfg);
        char err[256] = "";
        char *argv[] = {"ikd"};
        ck_assert_msg(parse(&cfg, 1, argv, err) == SRV_EINVAL, "accepted IKD_ALLOW_ORIGIN=\"%s\"",
                      bad[i]);
        ck_assert_msg(strstr(err, "IKD_ALLOW_ORIGIN"), "%s", err);
        srv_config_free(&cfg);
    }
    unsetenv("IKD_ALLOW_ORIGIN");
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

/* An empty token from any source is refused at startup: IKD_TOKEN="" used
 * to count as unset and leave every endpoint open, while --token "" was
 * refused. A token no header can carry as given (a control character, a
 * blank at either end) is refused too; none is ever shown. */
START_TEST(test_token_fails_closed)
{
    setenv("IKD_TOKEN", "", 1);
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *argv[] = {"ikd"};
    ck_assert_int_eq(parse(&cfg, 1, argv, err), SRV_EINVAL);
    ck_assert_msg(strstr(err, "IKD_TOKEN") && strstr(err, "empty"), "%s", err);
    ck_assert_ptr_null(cfg.token);
    srv_config_free(&cfg);
    unsetenv("IKD_TOKEN");

    const char *bad[] = {"", " lead", "trail ", "new\nline", "tab\there", "del\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_config_default(&cfg);
        char *a[] = {"ikd", "--token", (char *)bad[i]};
        ck_assert_msg(parse(&cfg, 3, a, err) == SRV_EINVAL, "token %zu accepted", i);
        ck_assert_msg(strstr(err, "--token"), "%s", err);
        if (bad[i][0])
            ck_assert_msg(strstr(err, bad[i]) == NULL, "the token is shown: %s", err);
        srv_config_free(&cfg);
        setenv("IKD_TOKEN", bad[i], 1);
        srv_config_default(&cfg);
        ck_assert_msg(parse(&cfg, 1, argv, err) == SRV_EINVAL, "IKD_TOKEN %zu accepted", i);
        srv_config_free(&cfg);
        unsetenv("IKD_TOKEN");
    }
    srv_config_default(&cfg);
    char *ok[] = {"ikd", "--token", "s3cret with inner space"};
    ck_assert_int_eq(parse(&cfg, 3, ok, err), SRV_OK);
    ck_assert_str_eq(cfg.token, "s3cret with inner space");
    srv_config_free(&cfg);
}
END_TEST

/* Every size has an upper bound, named in the error: --connection-memory
 * 1G (libmicrohttpd zeroing a gigabyte per request) and 2^64-1 (every
 * connection reset) used to start. */
START_TEST(test_sizes_bounded)
{
    static const struct {
        const char *flag, *top, *over;
    } cases[] = {
        {"--connection-memory", "1M", "1025K"}, {"--max-body", "1G", "1025M"},
        {"--max-urdf", "1G", "2G"},             {"--registry-bytes", "64G", "65G"},
        {"--max-message", "1G", "1073741825"},  {"--max-send-queue", "1G", "4G"},
        {"--stream-chain-bytes", "64G", "128G"}, {"--body-budget", "64G", "1024G"},
        {"--answer-budget", "64G", "18446744073709551615"},
        {"--connection-memory", "8K", "18446744073709551615"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_config cfg;
        srv_config_default(&cfg);
        char err[256] = "";
        char *top[] = {"ikd", (char *)cases[i].flag, (char *)cases[i].top};
        ck_assert_msg(parse(&cfg, 3, top, err) == SRV_OK, "%s %s refused: %s", cases[i].flag,
                      cases[i].top, err);
        srv_config_free(&cfg);
        srv_config_default(&cfg);
        char *over[] = {"ikd", (char *)cases[i].flag, (char *)cases[i].over};
        ck_assert_msg(parse(&cfg, 3, over, err) == SRV_EINVAL, "%s %s accepted", cases[i].flag,
                      cases[i].over);
        ck_assert_msg(strstr(err, cases[i].flag) && (strstr(err, "at most") || strstr(err, " to ")),
                      "the error names no range: %s", err);
        srv_config_free(&cfg);
    }
    /* the environment is held to the same bound */
    setenv("IKD_CONNECTION_MEMORY", "1G", 1);
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *argv[] = {"ikd"};
    ck_assert_int_eq(parse(&cfg, 1, argv, err), SRV_EINVAL);
    ck_assert_msg(strstr(err, "IKD_CONNECTION_MEMORY") && strstr(err, "8K to 1M"), "%s", err);
    srv_config_free(&cfg);
    unsetenv("IKD_CONNECTION_MEMORY");
}
END_TEST

START_TEST(test_redis_url)
{
    srv_redis_url u;
    ck_assert_int_eq(srv_config_parse_redis("redis://cache", &u), SRV_OK);
    ck_assert_str_eq(u.host, "cache");
    ck_assert_uint_eq(u.port, 6379);
    ck_assert_uint_eq(u.db, 0);
    ck_assert_str_eq(u.user, "");
    ck_assert_str_eq(u.password, "");
    ck_assert_int_eq(srv_config_parse_redis("redis://127.0.0.1:7001/3", &u), SRV_OK);
    ck_assert_str_eq(u.host, "127.0.0.1");
    ck_assert_uint_eq(u.port, 7001);
    ck_assert_uint_eq(u.db, 3);
    ck_assert_int_eq(srv_config_parse_redis("redis://:p@ss:w@[::1]:6380/", &u), SRV_OK);
    ck_assert_str_eq(u.host, "::1");
    ck_assert_uint_eq(u.port, 6380);
    ck_assert_str_eq(u.user, "");
    ck_assert_str_eq(u.password, "p@ss:w");
    ck_assert_int_eq(srv_config_parse_redis("redis://ikd:secret@redis:6379", &u), SRV_OK);
    ck_assert_str_eq(u.user, "ikd");
    ck_assert_str_eq(u.password, "secret");
    ck_assert_str_eq(u.host, "redis");
    ck_assert_int_eq(srv_config_parse_redis("redis://secret@redis", &u), SRV_OK);
    ck_assert_str_eq(u.user, "");
    ck_assert_str_eq(u.password, "secret");
    const char *bad[] = {"",
                         "redis:/x",
                         "rediss://host", /* TLS to Redis: not supported */
                         "http://host",
                         "redis://",
                         "redis://host:0",
                         "redis://host:65536",
                         "redis://host:port",
                         "redis://host/16",
                         "redis://host/x",
                         "redis://host?db=1",
                         "redis://[::1",
                         "redis://::1:6379",
                         "redis://ho\nst"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(srv_config_parse_redis(bad[i], &u) == SRV_EINVAL, "accepted %s", bad[i]);

    /* the flag: validated, kept, never shown */
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *ok[] = {"ikd", "--redis", "redis://:hunter2@127.0.0.1:7001", "--redis-timeout", "250"};
    ck_assert_int_eq(parse(&cfg, 5, ok, err), SRV_OK);
    ck_assert_str_eq(cfg.redis_url, "redis://:hunter2@127.0.0.1:7001");
    ck_assert(cfg.redis_timeout_ms == 250);
    srv_config_free(&cfg);
    ck_assert_ptr_null(cfg.redis_url);
    srv_config_default(&cfg);
    ck_assert(cfg.redis_timeout_ms == 500);
    ck_assert_ptr_null(cfg.redis_url);
    char *wrong[] = {"ikd", "--redis", "redis://:hunter2@host:99999"};
    ck_assert_int_eq(parse(&cfg, 3, wrong, err), SRV_EINVAL);
    ck_assert_msg(strstr(err, "--redis") && !strstr(err, "hunter2"), "%s", err);
    srv_config_free(&cfg);
}
END_TEST

/* ---- the flag table against --help and README.md ------------------------- */

#define TDFLT_VALUE(text) text, NULL
#define TDFLT_PROTO       NULL, NULL
#define TDFLT_NONE(word)  NULL, word

static const char *const headings[] = {
#define HEADING(topic, heading) heading,
    SRV_CONFIG_TOPICS(HEADING)
#undef HEADING
};
#define NHEADINGS (sizeof headings / sizeof headings[0])

enum test_topic {
#define TOPIC(topic, heading) T_##topic,
    SRV_CONFIG_TOPICS(TOPIC)
#undef TOPIC
};

static const struct row {
    int topic;
    const char *flag, *env, *value, *word;
} rows[] = {
#define ROW(id, topic, flag, env, type, field, dflt, help) {T_##topic, flag, env, TDFLT_##dflt},
    SRV_CONFIG_MAP(ROW)
#undef ROW
};
#define NROWS (sizeof rows / sizeof rows[0])

/* What --help says of each row: its variable and default. */
typedef struct shown {
    char env[64];
    char dflt[64];
    char range[64]; /* "at most 1M", "8K to 1M": the bound --help shows, or "" */
    bool bytes;     /* a size (its value is BYTES) */
} shown;

static char *help_text(void)
{
    srv_config cfg;
    srv_config_default(&cfg);
    char err[256] = "";
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    char *help[] = {"ikd", "--help"};
    ck_assert_int_eq(srv_config_parse(&cfg, 2, help, out, err, sizeof err), 1);
    fclose(out);
    srv_config_free(&cfg);
    return buf;
}

/* The entry of --help for flag ("  --flag VALUE   ENV", then its help on
 * lines indented by 8 spaces), split into variable and default. */
static void help_row(const char *help, const char *flag, shown *sh)
{
    char start[96];
    snprintf(start, sizeof start, "\n  --%s ", flag);
    const char *line = strstr(help, start);
    ck_assert_msg(line != NULL, "--help lacks --%s", flag);
    ck_assert_msg(strstr(line + 1, start) == NULL, "--help lists --%s twice", flag);
    line++;
    const char *eol = strchr(line, '\n');
    ck_assert_ptr_nonnull(eol);
    /* the variable: the last word of the flag's line */
    const char *env = eol;
    while (env > line && env[-1] != ' ')
        env--;
    ck_assert_uint_lt((size_t)(eol - env), sizeof sh->env);
    memcpy(sh->env, env, (size_t)(eol - env));
    sh->env[eol - env] = '\0';
    /* the help: the following lines that start with 8 spaces, joined */
    char text[1024] = "";
    size_t len = 0;
    for (const char *l = eol + 1; strncmp(l, "        ", 8) == 0;) {
        const char *e = strchr(l, '\n');
        ck_assert_ptr_nonnull(e);
        int n = snprintf(text + len, sizeof text - len, "%s%.*s", len ? " " : "", (int)(e - l - 8),
                         l + 8);
        ck_assert(n > 0 && (size_t)n < sizeof text - len);
        len += (size_t)n;
        l = e + 1;
    }
    ck_assert_msg(len > 0, "--%s has no help text", flag);
    const char *d = strstr(text, " (default ");
    ck_assert_msg(d != NULL && text[strlen(text) - 1] == ')', "--%s shows no default", flag);
    sh->range[0] = '\0';
    sh->bytes = strncmp(line + 4 + strlen(flag), " BYTES ", 7) == 0;
    if (d > text && d[-1] == ')') {
        const char *open = d - 1;
        while (open > text && *open != '(')
            open--;
        size_t rn = (size_t)(d - 1 - open - 1);
        ck_assert_uint_lt(rn, sizeof sh->range);
        memcpy(sh->range, open + 1, rn);
        sh->range[rn] = '\0';
    }
    d += strlen(" (default ");
    size_t n = strlen(d) - 1;
    ck_assert_uint_lt(n, sizeof sh->dflt);
    memcpy(sh->dflt, d, n);
    sh->dflt[n] = '\0';
    ck_assert_msg(n > 0, "--%s shows an empty default", flag);
}

START_TEST(test_table_defaults_parse)
{
    for (size_t i = 0; i < NROWS; i++) {
        if (!rows[i].value)
            continue;
        srv_config cfg;
        srv_config_default(&cfg);
        char err[256] = "";
        char arg[128];
        snprintf(arg, sizeof arg, "--%s=%s", rows[i].flag, rows[i].value);
        char *argv[] = {"ikd", arg};
        ck_assert_msg(parse(&cfg, 2, argv, err) == SRV_OK, "the default of --%s is refused: %s",
                      rows[i].flag, err);
        srv_config_free(&cfg);
    }
}
END_TEST

START_TEST(test_help_lists_table)
{
    char *help = help_text();
    for (size_t i = 0; i < NROWS; i++) {
        shown sh;
        help_row(help, rows[i].flag, &sh);
        ck_assert_str_eq(sh.env, rows[i].env);
        if (rows[i].value || rows[i].word)
            ck_assert_str_eq(sh.dflt, rows[i].value ? rows[i].value : rows[i].word);
        for (size_t k = 0; k < i; k++) {
            ck_assert_str_ne(rows[k].flag, rows[i].flag);
            ck_assert_str_ne(rows[k].env, rows[i].env);
        }
    }
    free(help);
}
END_TEST

/* The layout: headings in SRV_CONFIG_TOPICS's order, each row under its
 * own topic's heading, no line wider than 79 columns (the longest flags
 * and variables included), and every variable starting in one column. */
START_TEST(test_help_layout)
{
    char *help = help_text();
    const char *at[NHEADINGS];
    for (size_t t = 0; t < NHEADINGS; t++) {
        char h[128];
        snprintf(h, sizeof h, "\n\n%s:\n", headings[t]);
        at[t] = strstr(help, h);
        ck_assert_msg(at[t] != NULL, "--help has no heading \"%s\"", headings[t]);
        if (t > 0)
            ck_assert_msg(at[t] > at[t - 1], "heading \"%s\" is out of order", headings[t]);
    }
    const char *other = strstr(help, "\n\nOther:\n");
    ck_assert_ptr_nonnull(other);
    ck_assert(other > at[NHEADINGS - 1]);
    for (size_t i = 0; i < NROWS; i++) {
        char start[96];
        snprintf(start, sizeof start, "\n  --%s ", rows[i].flag);
        const char *line = strstr(help, start);
        ck_assert_ptr_nonnull(line);
        int t = rows[i].topic;
        const char *next = (size_t)t + 1 < NHEADINGS ? at[t + 1] : other;
        ck_assert_msg(line > at[t] && line < next, "--%s is not under \"%s\"", rows[i].flag,
                      headings[t]);
    }
    int env_col = -1;
    for (const char *l = help; *l;) {
        const char *e = strchr(l, '\n');
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(e - l <= 79, "--help line wider than 79 columns: %.*s", (int)(e - l), l);
        if (strncmp(l, "  --", 4) == 0 && e[-1] != ' ') {
            const char *env = e;
            while (env > l && env[-1] != ' ')
                env--;
            if (strncmp(env, "IKD_", 4) == 0) {
                if (env_col < 0)
                    env_col = (int)(env - l);
                ck_assert_msg((int)(env - l) == env_col, "a variable out of its column: %.*s",
                              (int)(e - l), l);
            }
        }
        l = e + 1;
    }
    ck_assert_int_gt(env_col, 0);
    free(help);
}
END_TEST

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = (cap + 4096 + 1) * 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* Copies the cell text without backticks and backslashes (README escapes
 * the '|' of "text|json"). */
static void plain(char *out, size_t size, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < size; i++)
        if (s[i] != '`' && s[i] != '\\')
            out[k++] = s[i];
    out[k] = '\0';
}

/* README.md's table of flags under "## Running the daemon" (rows "| `--flag
 * ARG`, `--other ARG` | default, default | what |") names every row of
 * SRV_CONFIG_MAP once, each with the default --help shows, and the
 * variables it names are the table's. */
START_TEST(test_readme_flags)
{
    char *readme = read_file("README.md");
    char *help = help_text();
    const char *sec = strstr(readme, "\n## Running the daemon\n");
    ck_assert_msg(sec != NULL, "README.md has no \"Running the daemon\" section");
    const char *end = strstr(sec + 1, "\n## ");
    size_t seen[NROWS] = {0};
    size_t documented = 0;
    for (const char *line = strstr(sec, "\n| `--"); line && (!end || line < end);
         line = strstr(line + 1, "\n| `--")) {
        line++;
        const char *eol = strchr(line, '\n');
        const char *c1 = line + 2;
        const char *c2 = strstr(c1, " | ");
        ck_assert_msg(c2 != NULL && c2 < eol, "README flag row without a default: %.60s", line);
        c2 += 3;
        const char *c3 = strstr(c2, " | ");
        ck_assert_msg(c3 != NULL && c3 < eol, "README flag row without a description: %.60s", line);
        char defaults[256];
        plain(defaults, sizeof defaults, c2, (size_t)(c3 - c2));

        /* flags of the first cell, and the defaults in the same order */
        char *save = NULL;
        char *d = strtok_r(defaults, ",", &save);
        size_t nflags = 0;
        for (const char *f = strstr(c1, "`--"); f && f < c2; f = strstr(f + 1, "`--")) {
            char flag[64];
            size_t n = strcspn(f + 3, " `");
            ck_assert_uint_lt(n, sizeof flag);
            memcpy(flag, f + 3, n);
            flag[n] = '\0';
            size_t r = 0;
            while (r < NROWS && strcmp(rows[r].flag, flag) != 0)
                r++;
            ck_assert_msg(r < NROWS, "README documents --%s, which SRV_CONFIG_MAP lacks", flag);
            seen[r]++;
            ck_assert_msg(d != NULL, "README gives --%s no default", flag);
            while (*d == ' ')
                d++;
            shown sh;
            help_row(help, flag, &sh);
            ck_assert_msg(strcmp(d, sh.dflt) == 0,
                          "README says --%s defaults to \"%s\", the table says \"%s\"", flag, d,
                          sh.dflt);
            /* a size's upper bound is documented in its row */
            if (sh.bytes) {
                char row[2048];
                plain(row, sizeof row, line, (size_t)(eol - line));
                ck_assert_msg(sh.range[0] && strstr(row, sh.range),
                              "README does not give --%s's bound \"%s\"", flag, sh.range);
            }
            d = strtok_r(NULL, ",", &save);
            nflags++;
        }
        ck_assert_msg(d == NULL, "README row has more defaults than flags: %.60s", line);
        ck_assert_uint_gt(nflags, 0);
        documented += nflags;

        /* an IKD_ variable named in the row is one of its flags' */
        for (const char *v = strstr(c1, "IKD_"); v && v < c2; v = strstr(v + 1, "IKD_")) {
            size_t n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
            bool known = false;
            for (size_t r = 0; r < NROWS; r++)
                known |= seen[r] && strlen(rows[r].env) == n && strncmp(rows[r].env, v, n) == 0;
            ck_assert_msg(known, "README names %.*s for a flag that does not read it", (int)n, v);
        }
    }
    for (size_t r = 0; r < NROWS; r++)
        ck_assert_msg(seen[r] == 1, "README documents --%s %zu times (once expected)", rows[r].flag,
                      seen[r]);
    ck_assert_uint_eq(documented, NROWS);
    free(help);
    free(readme);
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
    tcase_add_test(tc, test_token_fails_closed);
    tcase_add_test(tc, test_sizes_bounded);
    tcase_add_test(tc, test_redis_url);
    tcase_add_test(tc, test_allow_origin_fails_closed);
    tcase_add_test(tc, test_allow_origin_env_fails_closed);
    tcase_add_test(tc, test_table_defaults_parse);
    tcase_add_test(tc, test_help_lists_table);
    tcase_add_test(tc, test_help_layout);
    tcase_add_test(tc, test_readme_flags);
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
