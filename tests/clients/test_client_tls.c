/*
 * test_client_tls.c: libikdclient over TLS (https:// through libcurl, wss://
 * through GnuTLS, clients/c/lib/tls.c), against ikd behind Debian's haproxy
 * ending TLS, as docker/haproxy-tls.cfg does in deployments (here a minimal
 * TCP frontend of this test's own, so that the test depends on nothing but
 * TLS). The certificates are made by the test with openssl: a test CA with
 * the server's certificate for localhost and 127.0.0.1, and an unrelated
 * CA that must not be trusted.
 *
 * Covered: an HTTPS solve; a WSS stream by address and by name
 * ("localhost", which may resolve to ::1 first where haproxy does not
 * listen: the next address is tried); a tick of 300 streams whose messages
 * span many TLS records both ways; the wrong CA refused over HTTPS and WSS
 * with IKD_E_TLS.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include "tests/clients/daemon.h"
#include <ikd/client.h>

#define WAIT_MS 15000

static char tmpdir[256];
static char ca_pem[300], other_ca_pem[300], server_pem[300];

static pid_t haproxy_pid;
static int tls_port;

static const char *const LEG =
    "{\"kind\":\"bones\",\"positions\":[[0.0,0.0,1.0],[0.1,0.0,0.55],[0.0,0.0,0.1]]}";

static int run(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Unchecked fixture (runs once, before the tests fork): the certificates. */
static void make_certs(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ikd-client-tls-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir))
        abort();
    snprintf(ca_pem, sizeof ca_pem, "%s/ca.pem", tmpdir);
    snprintf(other_ca_pem, sizeof other_ca_pem, "%s/other.pem", tmpdir);
    snprintf(server_pem, sizeof server_pem, "%s/server.pem", tmpdir);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "(cd %s && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 2 -subj /CN=ikd-test-ca -keyout ca.key -out ca.pem && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-subj /CN=localhost -keyout srv.key -out srv.csr && "
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-days 2 -extfile ext -out srv.crt && cat srv.crt srv.key > server.pem && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 2 -subj /CN=another-ca -keyout other.key -out other.pem) >/dev/null 2>&1",
             tmpdir);
    if (run(cmd) != 0)
        abort();
}

static void remove_certs(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    run(cmd);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t n = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &n);
    close(fd);
    return ntohs(a.sin_port);
}

static bool port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* ikd, and haproxy ending TLS in front of it. */
static void setup(void)
{
    daemon_start(0, NULL);
    tls_port = free_port();
    char cfg[400], text[1500];
    snprintf(cfg, sizeof cfg, "%s/haproxy-%d.cfg", tmpdir, tls_port);
    snprintf(text, sizeof text,
             "global\n    maxconn 200\n"
             "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 60s\n"
             "    timeout server 60s\n"
             "frontend tls\n    bind 127.0.0.1:%d ssl crt %s alpn http/1.1\n"
             "    default_backend ikd\n"
             "backend ikd\n    server ikd 127.0.0.1:%d\n",
             tls_port, server_pem, daemon_port);
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execlp("haproxy", "haproxy", "-db", "-q", "-f", cfg, (char *)NULL);
        _exit(127);
    }
    haproxy_pid = pid;
    for (int i = 0; i < 200 && !port_open(tls_port); i++) {
        struct timespec ts = {0, 25000000};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(port_open(tls_port), "haproxy did not come up");
}

static void teardown(void)
{
    if (haproxy_pid > 0) {
        kill(haproxy_pid, SIGTERM);
        waitpid(haproxy_pid, NULL, 0);
        haproxy_pid = 0;
    }
    ck_assert_int_eq(daemon_stop(), 0);
}

static double dist(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

static void check_leg(const ikd_result *r, const double *target)
{
    static const double hip[3] = {0, 0, 1};
    ck_assert_msg(r->status == IKD_STATUS_SUCCESS, "status %s", r->status_text);
    ck_assert_double_eq_tol(dist(r->positions, hip), 0, 1e-9);
    ck_assert_double_eq_tol(dist(r->positions + 6, target), 0, 1e-9);
    ck_assert_double_eq_tol(dist(r->positions, r->positions + 3), sqrt(0.01 + 0.45 * 0.45), 1e-9);
}

START_TEST(https_solve)
{
    char url[64];
    snprintf(url, sizeof url, "https://127.0.0.1:%d", tls_port);
    ikd_client_opts o = {.url = url, .ca_file = ca_pem};
    ikd_error e;
    ikd_client *cl = ikd_client_new(&o, &e);
    ikd_chain leg = {.json = LEG};
    double t[3] = {0.2, 0.1, 0.25};
    ikd_target target = {.position = {t[0], t[1], t[2]}};
    ikd_answer *a;
    ck_assert_msg(ikd_solve(cl, &leg, &target, NULL, NULL, &a, &e) == 0, "%s", e.message);
    check_leg(&a->results[0], t);
    ikd_answer_free(a);
    ikd_client_free(cl);
    /* the wrong CA */
    o.ca_file = other_ca_pem;
    cl = ikd_client_new(&o, &e);
    ck_assert_int_eq(ikd_solve(cl, &leg, &target, NULL, NULL, &a, &e), IKD_E_TLS);
    ikd_client_free(cl);
}
END_TEST

START_TEST(wss_streams_and_a_large_tick)
{
    static const char *const hosts[] = {"127.0.0.1", "localhost"};
    for (int h = 0; h < 2; h++) {
        char url[64];
        snprintf(url, sizeof url, "wss://%s:%d", hosts[h], tls_port);
        ikd_conn_opts o = {.url = url, .ca_file = ca_pem};
        ikd_error e;
        ikd_conn *c = ikd_conn_new(&o, &e);
        ck_assert_msg(c != NULL, "%s", e.message);
        ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s: %s", url, e.message);
        ikd_chain leg = {.json = LEG};
        ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
        double t[3] = {0.15, -0.1, 0.3};
        ikd_target target = {.position = {t[0], t[1], t[2]}};
        ikd_result *r;
        ck_assert_int_eq(ikd_stream_solve(c, "leg", &target, NULL, WAIT_MS, &r, &e), 0);
        check_leg(r, t);
        ikd_result_free(r);
        if (h == 0) {
            /* 300 streams, one tick: messages of many TLS records each way */
            enum { N = 300 };
            char name[16];
            for (int i = 0; i < N; i++) {
                snprintf(name, sizeof name, "c%d", i);
                ck_assert_int_eq(ikd_stream_open(c, name, &leg, NULL, NULL, &e), 0);
            }
            ck_assert_int_eq(ikd_tick_begin(c, 1, &e), 0);
            static double want[N][3];
            for (int i = 0; i < N; i++) {
                snprintf(name, sizeof name, "c%d", i);
                want[i][0] = 0.1 + 0.0005 * i;
                want[i][1] = 0.05;
                want[i][2] = 0.3;
                ikd_target ti = {.position = {want[i][0], want[i][1], want[i][2]}};
                ck_assert_int_eq(ikd_tick_add(c, name, &ti, NULL, IKD_SEQ_AUTO, &e), 0);
            }
            ck_assert_int_eq(ikd_tick_send(c, &e), 0);
            ikd_tick *tk;
            ck_assert_msg(ikd_tick_wait(c, 1, WAIT_MS, &tk, &e) == 0, "%s", e.message);
            ck_assert_uint_eq(tk->count, N);
            for (int i = 0; i < N; i++) {
                snprintf(name, sizeof name, "c%d", i);
                ck_assert_str_eq(tk->entries[i].stream, name);
                check_leg(tk->entries[i].result, want[i]);
            }
            ikd_conn_stats st;
            ikd_conn_get_stats(c, &st);
            ck_assert_uint_gt(st.bytes_in, 100000);
            ikd_tick_free(tk);
        }
        ikd_conn_close(c);
        for (int i = 0; i < 50 && ikd_conn_poll(c, 100) >= 0; i++)
            ;
        ikd_conn_free(c);
    }
}
END_TEST

START_TEST(wss_untrusted)
{
    char url[64];
    snprintf(url, sizeof url, "wss://127.0.0.1:%d", tls_port);
    ikd_conn_opts o = {.url = url, .ca_file = other_ca_pem};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_int_eq(ikd_conn_wait_connected(c, WAIT_MS, &e), IKD_E_TLS);
    ck_assert_ptr_nonnull(strstr(e.message, "not trusted"));
    ck_assert_int_eq(ikd_conn_process(c, 0), IKD_E_CLOSED);
    ikd_conn_free(c);
    /* a CA file that is not there */
    o.ca_file = "/nonexistent/ca.pem";
    c = ikd_conn_new(&o, &e);
    ck_assert_int_eq(ikd_conn_wait_connected(c, WAIT_MS, &e), IKD_E_TLS);
    ikd_conn_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_tls");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, make_certs, remove_certs);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, https_solve);
    tcase_add_test(tc, wss_streams_and_a_large_tick);
    tcase_add_test(tc, wss_untrusted);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
