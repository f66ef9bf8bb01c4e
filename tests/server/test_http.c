/*
 * test_http.c: the real daemon over HTTP (server/http_mhd.c, http_handlers.c, http_batch.c, loop.c, serve.c).
 *
 * Every test starts $IKD_BIN on 127.0.0.1 port 0 (or [::1]), reads the
 * bound port from its one stdout line "ikd listening on HOST:PORT", talks
 * to it with libcurl and stops it with SIGTERM at teardown, requiring exit
 * status 0. Covered: every endpoint, the JSON errors (404, 405 with Allow,
 * 413 by Content-Length and by a chunked body, 400), keep-alive on one
 * connection, 200 concurrent clients, the bearer token, CORS (preflight,
 * the Origin allow-list), the chain registry
 * (content-addressed ids, 201 then 200, GET/DELETE, LRU eviction), a slow
 * client cut by the connection timeout while others are served, a client
 * that vanishes while its batch is on the pool, solves inline and on the
 * pool, a 10,000-target batch on the KUKA iiwa 14 checked by forward
 * kinematics, and SIGTERM with requests in flight (all answered, exit 0).
 *
 * Robots come from $IKD_DATA (tests/run.sh sets it).
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "tests/proto/urdf_read.h"
#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "tests/solver/storage.h"

/* ---- the daemon under test ------------------------------------------- */

static pid_t daemon_pid;
static FILE *daemon_out;
static char base_url[300];
static int daemon_port;

/* Starts the daemon with extra flags (NULL-terminated); fails the test if it
 * does not print its address. */
static void start_daemon_at(const char *listen, const char *const *extra)
{
    const char *bin = getenv("IKD_BIN") ? getenv("IKD_BIN") : "build/ikd";
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--log-level";
    argv[n++] = "warn";
    for (; extra && *extra && n < 62; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(bin, (char *const *)argv);
        perror("execv");
        _exit(127);
    }
    close(fds[1]);
    daemon_pid = pid;
    daemon_out = fdopen(fds[0], "r");
    char line[256] = "";
    ck_assert_msg(fgets(line, sizeof line, daemon_out) != NULL, "the daemon printed nothing");
    const char *prefix = "ikd listening on ";
    ck_assert_msg(strncmp(line, prefix, strlen(prefix)) == 0, "unexpected line: %s", line);
    char *colon = strrchr(line, ':');
    ck_assert_ptr_nonnull(colon);
    daemon_port = atoi(colon + 1);
    ck_assert_int_gt(daemon_port, 0);
    line[strcspn(line, "\n")] = '\0';
    snprintf(base_url, sizeof base_url, "http://%s", line + strlen(prefix));
}

static void start_daemon(const char *const *extra)
{
    start_daemon_at("127.0.0.1:0", extra);
}

/* SIGTERM and wait; returns the exit status (or 128 + signal). */
static int stop_daemon(void)
{
    if (daemon_pid <= 0)
        return 0;
    kill(daemon_pid, SIGTERM);
    int st = 0;
    while (waitpid(daemon_pid, &st, 0) < 0 && errno == EINTR)
        ;
    daemon_pid = 0;
    if (daemon_out)
        fclose(daemon_out);
    daemon_out = NULL;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- one HTTP client with a reusable connection --------------------- */

typedef struct resp {
    long status;
    char *body;
    size_t len;
    char allow[128];
    char retry_after[32];
    char content_type[128];
    char location[256];
    char allow_origin[256];  /* Access-Control-Allow-Origin */
    char allow_methods[128]; /* Access-Control-Allow-Methods */
} resp;

static CURL *easy;
static const char *req_origin; /* Origin header of the next requests, or NULL */

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    resp *r = ud;
    size_t k = sz * n;
    char *b = realloc(r->body, r->len + k + 1);
    if (!b)
        return 0;
    memcpy(b + r->len, p, k);
    r->body = b;
    r->len += k;
    b[r->len] = '\0';
    return k;
}

static void copy_header(char *dst, size_t size, const char *line, size_t n, const char *name)
{
    size_t nl = strlen(name);
    if (n > nl + 1 && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
        const char *v = line + nl + 1;
        while (*v == ' ')
            v++;
        size_t vl = n - (size_t)(v - line);
        while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        snprintf(dst, size, "%.*s", (int)vl, v);
    }
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    resp *r = ud;
    size_t k = sz * n;
    copy_header(r->allow, sizeof r->allow, p, k, "Allow");
    copy_header(r->retry_after, sizeof r->retry_after, p, k, "Retry-After");
    copy_header(r->content_type, sizeof r->content_type, p, k, "Content-Type");
    copy_header(r->location, sizeof r->location, p, k, "Location");
    copy_header(r->allow_origin, sizeof r->allow_origin, p, k, "Access-Control-Allow-Origin");
    copy_header(r->allow_methods, sizeof r->allow_methods, p, k, "Access-Control-Allow-Methods");
    return k;
}

static void resp_free(resp *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

static void setup_easy(CURL *h, const char *method, const char *path, const char *body,
                       size_t len, const char *token, resp *r, struct curl_slist **hdrs)
{
    char url[512];
    snprintf(url, sizeof url, "%s%s", base_url, path);
    curl_easy_reset(h); /* keeps the connection cache */
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    *hdrs = curl_slist_append(*hdrs, "Expect:");
    if (req_origin) {
        char origin[300];
        snprintf(origin, sizeof origin, "Origin: %s", req_origin);
        *hdrs = curl_slist_append(*hdrs, origin);
    }
    if (token) {
        char auth[256];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        *hdrs = curl_slist_append(*hdrs, auth);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "HEAD") == 0)
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    }
}

/* One request on the shared handle (keep-alive across calls). */
static long request(const char *method, const char *path, const char *body, const char *token,
                    resp *r)
{
    if (!easy)
        easy = curl_easy_init();
    resp_free(r);
    struct curl_slist *hdrs = NULL;
    setup_easy(easy, method, path, body, body ? strlen(body) : 0, token, r, &hdrs);
    CURLcode rc = curl_easy_perform(easy);
    curl_slist_free_all(hdrs);
    ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r->status);
    return r->status;
}

/* Parses r's body as JSON (fails the test otherwise). Caller decrefs. */
static json_t *body_json(const resp *r)
{
    json_error_t je;
    json_t *j = r->body ? json_loads(r->body, 0, &je) : NULL;
    ck_assert_msg(j != NULL, "not JSON: %s", r->body ? r->body : "(empty)");
    return j;
}

/* Checks the JSON error body: {"error":{"code":code,"message":...,"path":...}}. */
static void assert_error(const resp *r, long status, const char *code)
{
    ck_assert_int_eq(r->status, status);
    ck_assert_str_eq(r->content_type, "application/json");
    json_t *j = body_json(r);
    json_t *e = json_object_get(j, "error");
    ck_assert_msg(json_is_object(e), "no error object: %s", r->body);
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    ck_assert(json_is_string(json_object_get(e, "message")));
    ck_assert(json_is_string(json_object_get(e, "path")));
    json_decref(j);
}

/* Value of a Prometheus sample line ("name{labels} value"), or -1. */
static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static void teardown(void)
{
    req_origin = NULL;
    if (easy)
        curl_easy_cleanup(easy);
    easy = NULL;
    int code = stop_daemon();
    ck_assert_int_eq(code, 0);
}

/* ---- request bodies ---------------------------------------------------- */

static const char planar_chain[] = "{\"kind\":\"planar\",\"lengths\":[1.0,0.8]}";

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* ---- tests: endpoints and errors --------------------------------------- */

START_TEST(test_endpoints)
{
    start_daemon(NULL);
    resp r = {0};
    ck_assert_int_eq(request("GET", "/livez", NULL, NULL, &r), 200);
    ck_assert_str_eq(r.content_type, "application/json");
    json_t *j = body_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
    json_decref(j);

    ck_assert_int_eq(request("GET", "/readyz", NULL, NULL, &r), 200);
    ck_assert_int_eq(request("HEAD", "/readyz", NULL, NULL, &r), 200);

    ck_assert_int_eq(request("GET", "/v1/solvers", NULL, NULL, &r), 200);
    j = body_json(&r);
    ck_assert(json_is_object(j) || json_is_array(j));
    json_decref(j);

    ck_assert_int_eq(request("GET", "/metrics", NULL, NULL, &r), 200);
    ck_assert_ptr_nonnull(strstr(r.content_type, "text/plain"));
    ck_assert_double_eq(metric(r.body, "ikd_http_requests_total{route=\"/livez\",status=\"200\"}"), 1);
    ck_assert_double_eq(metric(r.body, "ikd_http_requests_total{route=\"/readyz\",status=\"200\"}"), 2);
    ck_assert_double_eq(metric(r.body, "ikd_http_requests_total{route=\"/v1/solvers\",status=\"200\"}"), 1);
    ck_assert_double_eq(metric(r.body, "ikd_pool_queue_depth"), 0);
    ck_assert_double_eq(metric(r.body, "ikd_ws_streams_open"), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "# TYPE ikd_solve_duration_seconds histogram"));
    resp_free(&r);
}
END_TEST

START_TEST(test_errors)
{
    const char *flags[] = {"--max-body", "4096", NULL};
    start_daemon(flags);
    resp r = {0};
    request("GET", "/nope", NULL, NULL, &r);
    assert_error(&r, 404, "not_found");
    request("GET", "/v1/solve/", NULL, NULL, &r);
    assert_error(&r, 404, "not_found");
    request("GET", "/v1/chains/a/b", NULL, NULL, &r);
    assert_error(&r, 404, "not_found");

    request("PUT", "/v1/solve", "{}", NULL, &r);
    assert_error(&r, 405, "method_not_allowed");
    ck_assert_str_eq(r.allow, "POST");
    request("GET", "/v1/solve/batch", NULL, NULL, &r);
    assert_error(&r, 405, "method_not_allowed");
    ck_assert_str_eq(r.allow, "POST");
    request("POST", "/livez", "{}", NULL, &r);
    assert_error(&r, 405, "method_not_allowed");
    ck_assert_str_eq(r.allow, "GET, HEAD");
    request("PATCH", "/v1/chains/abc", NULL, NULL, &r);
    assert_error(&r, 405, "method_not_allowed");
    ck_assert_str_eq(r.allow, "GET, HEAD, DELETE");

    request("POST", "/v1/solve", "{\"chain\": [1, 2", NULL, &r);
    assert_error(&r, 400, "invalid_json");
    request("POST", "/v1/solve/batch", "not json", NULL, &r);
    assert_error(&r, 400, "invalid_json");
    request("POST", "/v1/chains", "{\"kind\":", NULL, &r);
    assert_error(&r, 400, "invalid_json");
    request("POST", "/v1/solve", "", NULL, &r);
    assert_error(&r, 400, "invalid_json");

    /* 413 announced by Content-Length: answered before the body is read. */
    char *big = malloc(10001);
    memset(big, ' ', 10000);
    big[0] = '{';
    big[9999] = '}';
    big[10000] = '\0';
    request("POST", "/v1/solve", big, NULL, &r);
    assert_error(&r, 413, "too_large");
    /* 413 on a chunked body without Content-Length. */
    struct curl_slist *hdrs = NULL;
    resp_free(&r);
    CURL *h = curl_easy_init();
    setup_easy(h, "POST", "/v1/solve", big, 10000, NULL, &r, &hdrs);
    hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    assert_error(&r, 413, "too_large");
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    free(big);

    /* The daemon still serves, and counted the refusals. */
    ck_assert_int_eq(request("GET", "/metrics", NULL, NULL, &r), 200);
    ck_assert_double_eq(metric(r.body, "ikd_rejected_total{reason=\"too_large\"}"), 2);
    ck_assert_double_eq(metric(r.body, "ikd_http_requests_total{route=\"other\",status=\"404\"}"), 3);
    resp_free(&r);
}
END_TEST

START_TEST(test_keepalive)
{
    start_daemon(NULL);
    resp r = {0};
    long total_connects = 0;
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(request("GET", i % 2 ? "/livez" : "/v1/solvers", NULL, NULL, &r), 200);
        long c = 0;
        curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &c);
        total_connects += c;
    }
    /* Errors keep the connection too. */
    request("GET", "/nope", NULL, NULL, &r);
    long c = 0;
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &c);
    total_connects += c;
    request("POST", "/v1/chains", "{oops", NULL, &r);
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &c);
    total_connects += c;
    ck_assert_int_eq(total_connects, 1);
    resp_free(&r);
}
END_TEST

START_TEST(test_ipv6)
{
    start_daemon_at("[::1]:0", NULL);
    ck_assert_ptr_nonnull(strstr(base_url, "[::1]"));
    resp r = {0};
    ck_assert_int_eq(request("GET", "/livez", NULL, NULL, &r), 200);
    resp_free(&r);
}
END_TEST

START_TEST(test_token)
{
    const char *flags[] = {"--token", "t0k3n-value", NULL};
    start_daemon(flags);
    resp r = {0};
    ck_assert_int_eq(request("GET", "/livez", NULL, NULL, &r), 200);
    ck_assert_int_eq(request("GET", "/readyz", NULL, NULL, &r), 200);
    const char *guarded[][2] = {{"GET", "/v1/solvers"}, {"GET", "/metrics"},
                                {"POST", "/v1/solve"},  {"POST", "/v1/solve/batch"},
                                {"POST", "/v1/chains"}, {"GET", "/v1/chains/abc"},
                                {"GET", "/v1/stream"}};
    for (size_t i = 0; i < sizeof guarded / sizeof guarded[0]; i++) {
        const char *body = strcmp(guarded[i][0], "POST") == 0 ? "{}" : NULL;
        request(guarded[i][0], guarded[i][1], body, NULL, &r);
        assert_error(&r, 401, "unauthorized");
        request(guarded[i][0], guarded[i][1], body, "t0k3n-valuE", &r);
        assert_error(&r, 401, "unauthorized");
        request(guarded[i][0], guarded[i][1], body, "t0k3n-value-longer", &r);
        assert_error(&r, 401, "unauthorized");
    }
    ck_assert_int_eq(request("GET", "/v1/solvers", NULL, "t0k3n-value", &r), 200);
    ck_assert_int_eq(request("GET", "/metrics", NULL, "t0k3n-value", &r), 200);
    ck_assert_double_eq(metric(r.body, "ikd_rejected_total{reason=\"unauthorized\"}"), 21);
    resp_free(&r);
}
END_TEST

/* ---- tests: registry --------------------------------------------------- */

static char *register_chain(const char *chain, long expect_status)
{
    resp r = {0};
    ck_assert_int_eq(request("POST", "/v1/chains", chain, NULL, &r), expect_status);
    json_t *j = body_json(&r);
    const char *id = json_string_value(json_object_get(j, "id"));
    ck_assert_ptr_nonnull(id);
    char *copy = strdup(id);
    char loc[300];
    snprintf(loc, sizeof loc, "/v1/chains/%s", id);
    ck_assert_str_eq(r.location, loc);
    json_decref(j);
    resp_free(&r);
    return copy;
}

START_TEST(test_chains)
{
    start_daemon(NULL);
    char *id1 = register_chain(planar_chain, 201);
    char *id2 = register_chain(planar_chain, 200);
    ck_assert_str_eq(id1, id2);
    /* The same chain written differently is the same content. */
    char *id3 = register_chain("{ \"lengths\": [1, 0.8], \"kind\": \"planar\" }", 200);
    ck_assert_str_eq(id1, id3);
    char *other = register_chain("{\"kind\":\"planar\",\"lengths\":[1.0,0.9]}", 201);
    ck_assert_str_ne(id1, other);

    char path[300];
    snprintf(path, sizeof path, "/v1/chains/%s", id1);
    resp r = {0};
    ck_assert_int_eq(request("GET", path, NULL, NULL, &r), 200);
    json_t *j = body_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), id1);
    json_decref(j);
    ck_assert_int_eq(request("DELETE", path, NULL, NULL, &r), 204);
    request("GET", path, NULL, NULL, &r);
    assert_error(&r, 404, "unknown_chain");
    request("DELETE", path, NULL, NULL, &r);
    assert_error(&r, 404, "unknown_chain");
    request("GET", "/v1/chains/no-such-chain", NULL, NULL, &r);
    assert_error(&r, 404, "unknown_chain");

    /* A chain that proto rejects is a 4xx with the JSON error. */
    request("POST", "/v1/chains", "{\"kind\":\"planar\",\"lengths\":[0,0]}", NULL, &r);
    ck_assert_int_ge(r.status, 400);
    ck_assert_int_lt(r.status, 500);
    json_decref(body_json(&r));
    resp_free(&r);
    free(id1);
    free(id2);
    free(id3);
    free(other);
}
END_TEST

START_TEST(test_registry_lru)
{
    /* Size the registry for two chains of the shape used below. */
    proto_limits lim;
    proto_limits_default(&lim);
    proto_error err;
    proto_chain *probe = proto_chain_decode(planar_chain, strlen(planar_chain), &lim, &err);
    ck_assert_ptr_nonnull(probe);
    size_t m = proto_chain_memory(probe);
    proto_chain_unref(probe);
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%zu", 2 * m + m / 2);
    const char *flags[] = {"--registry-bytes", bytes, NULL};
    start_daemon(flags);

    char *ids[3];
    for (int i = 0; i < 3; i++) {
        char chain[128];
        snprintf(chain, sizeof chain, "{\"kind\":\"planar\",\"lengths\":[1.0,0.%d]}", 5 + i);
        ids[i] = register_chain(chain, 201);
    }
    resp r = {0};
    char path[300];
    snprintf(path, sizeof path, "/v1/chains/%s", ids[0]);
    request("GET", path, NULL, NULL, &r);
    assert_error(&r, 404, "unknown_chain"); /* evicted: least recently used */
    for (int i = 1; i < 3; i++) {
        snprintf(path, sizeof path, "/v1/chains/%s", ids[i]);
        ck_assert_int_eq(request("GET", path, NULL, NULL, &r), 200);
    }
    ck_assert_int_eq(request("GET", "/metrics", NULL, NULL, &r), 200);
    ck_assert_double_eq(metric(r.body, "ikd_registry_chains"), 2);
    resp_free(&r);
    for (int i = 0; i < 3; i++)
        free(ids[i]);
}
END_TEST

/* ---- tests: many clients, slow clients -------------------------------- */

/* Runs n copies of one request in parallel on n connections (curl multi);
 * returns how many got `expect`. */
static int parallel(int n, const char *method, const char *path, const char *body, long expect)
{
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)n);
    CURL **hs = calloc((size_t)n, sizeof *hs);
    resp *rs = calloc((size_t)n, sizeof *rs);
    struct curl_slist **hd = calloc((size_t)n, sizeof *hd);
    for (int i = 0; i < n; i++) {
        hs[i] = curl_easy_init();
        setup_easy(hs[i], method, path, body, body ? strlen(body) : 0, NULL, &rs[i], &hd[i]);
        curl_easy_setopt(hs[i], CURLOPT_FRESH_CONNECT, 1L);
        curl_multi_add_handle(multi, hs[i]);
    }
    int running = 1;
    while (running) {
        curl_multi_perform(multi, &running);
        if (running)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    int ok = 0;
    for (int i = 0; i < n; i++) {
        long st = 0;
        curl_easy_getinfo(hs[i], CURLINFO_RESPONSE_CODE, &st);
        ok += st == expect;
        curl_multi_remove_handle(multi, hs[i]);
        curl_easy_cleanup(hs[i]);
        curl_slist_free_all(hd[i]);
        resp_free(&rs[i]);
    }
    curl_multi_cleanup(multi);
    free(hs);
    free(rs);
    free(hd);
    return ok;
}

START_TEST(test_many_clients)
{
    start_daemon(NULL);
    ck_assert_int_eq(parallel(200, "GET", "/v1/solvers", NULL, 200), 200);
    free(register_chain(planar_chain, 201));
    ck_assert_int_eq(parallel(200, "POST", "/v1/chains", planar_chain, 200), 200);
}
END_TEST

static int raw_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)daemon_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {20, 0}; /* a guard against hanging, not a timing check */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

START_TEST(test_slow_client)
{
    const char *flags[] = {"--timeout", "1", NULL};
    start_daemon(flags);
    int fd = raw_connect();
    const char head[] = "POST /v1/chains HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Length: 200\r\n\r\n{\"kind\":\"planar\",";
    ck_assert_int_eq(send(fd, head, sizeof head - 1, 0), (ssize_t)(sizeof head - 1));
    /* Others are served while it stalls. */
    resp r = {0};
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(request("POST", "/v1/chains", planar_chain, NULL, &r), i ? 200 : 201);
    /* The stalled connection is closed by the daemon (no answer). */
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    ck_assert_msg(n == 0, "expected the daemon to close the stalled connection (got %zd, %s)",
                  n, n < 0 ? strerror(errno) : "data");
    close(fd);
    ck_assert_int_eq(request("GET", "/metrics", NULL, NULL, &r), 200);
    ck_assert_double_eq(metric(r.body, "ikd_rejected_total{reason=\"timeout\"}"), 1);
    resp_free(&r);
}
END_TEST

/* ---- tests: solving ------------------------------------------------------ */

/* Seed 001's limb: bones from the root through the knee to the end. */
static const char two_bone_request[] =
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]},"
    "\"target\":{\"position\":[0.3,0.6,0.2]}}";

/* The reachable two-bone answer: the end on the target, both bone lengths
 * kept (checked on the returned positions, not against a stored answer). */
static void check_two_bone(const resp *r)
{
    ck_assert_int_eq(r->status, 200);
    json_t *j = body_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "success");
    json_t *pos = json_object_get(j, "positions");
    ck_assert_int_eq(json_array_size(pos), 3);
    double p[3][3];
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 3; k++)
            p[i][k] = json_number_value(json_array_get(json_array_get(pos, i), k));
    ck_assert_double_eq_tol(p[2][0], 0.3, 1e-6);
    ck_assert_double_eq_tol(p[2][1], 0.6, 1e-6);
    ck_assert_double_eq_tol(p[2][2], 0.2, 1e-6);
    double l1 = sqrt(pow(p[1][0] - p[0][0], 2) + pow(p[1][1] - p[0][1], 2) + pow(p[1][2] - p[0][2], 2));
    double l2 = sqrt(pow(p[2][0] - p[1][0], 2) + pow(p[2][1] - p[1][1], 2) + pow(p[2][2] - p[1][2], 2));
    ck_assert_double_eq_tol(l1, 0.5, 1e-6);
    ck_assert_double_eq_tol(l2, 0.5, 1e-6);
    json_decref(j);
}

/* CORS for browser clients: preflight without the token, the allow-list
 * shared with WebSocket upgrades, no CORS headers for other Origins, and
 * their POSTs refused. */
START_TEST(test_cors)
{
    const char *flags[] = {"--token", "tk", "--allow-origin", "https://anim.example", NULL};
    start_daemon(flags);
    resp r = {0};
    req_origin = "https://anim.example";
    ck_assert_int_eq(request("OPTIONS", "/v1/solve", NULL, NULL, &r), 204);
    ck_assert_str_eq(r.allow_origin, "https://anim.example");
    ck_assert_str_eq(r.allow_methods, "POST, OPTIONS");
    ck_assert_str_eq(r.allow, "POST, OPTIONS");
    ck_assert_int_eq(request("POST", "/v1/solve", two_bone_request, "tk", &r), 200);
    ck_assert_str_eq(r.allow_origin, "https://anim.example");
    request("POST", "/v1/solve", two_bone_request, NULL, &r);
    assert_error(&r, 401, "unauthorized"); /* readable by the page: it says why */
    ck_assert_str_eq(r.allow_origin, "https://anim.example");
    ck_assert_int_eq(request("OPTIONS", "/v1/chains/abc", NULL, NULL, &r), 204);
    ck_assert_str_eq(r.allow_methods, "GET, HEAD, DELETE, OPTIONS");

    req_origin = "https://other.example";
    request("OPTIONS", "/v1/solve", NULL, NULL, &r);
    assert_error(&r, 403, "forbidden_origin");
    ck_assert_str_eq(r.allow_origin, "");
    /* a state-changing request is refused, not merely hidden from the page */
    request("POST", "/v1/solve", two_bone_request, "tk", &r);
    assert_error(&r, 403, "forbidden_origin");
    ck_assert_str_eq(r.allow_origin, "");

    req_origin = NULL; /* non-browser clients: no CORS headers at all */
    ck_assert_int_eq(request("OPTIONS", "/v1/solve", NULL, NULL, &r), 204);
    ck_assert_str_eq(r.allow_origin, "");
    request("OPTIONS", "/v1/nothing", NULL, NULL, &r);
    assert_error(&r, 404, "not_found");
    resp_free(&r);
}
END_TEST

START_TEST(test_solve_inline)
{
    start_daemon(NULL);
    resp r = {0};
    request("POST", "/v1/solve", two_bone_request, NULL, &r);
    check_two_bone(&r);
    /* A request proto rejects names the offending path. */
    request("POST", "/v1/solve",
            "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]},"
            "\"target\":{\"position\":[0.3,\"x\",0.2]}}",
            NULL, &r);
    assert_error(&r, 400, "invalid_request");
    json_t *j = body_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "path")),
                     "/target/position/1");
    json_decref(j);
    request("POST", "/v1/solve", "{\"chain_id\":\"nope\",\"target\":{\"position\":[0,0,1]}}",
            NULL, &r);
    assert_error(&r, 404, "unknown_chain");
    ck_assert_int_eq(request("GET", "/metrics", NULL, NULL, &r), 200);
    ck_assert_ptr_nonnull(strstr(r.body, "ikd_solve_duration_seconds_count{solver="));
    resp_free(&r);
}
END_TEST

START_TEST(test_solve_on_pool_by_id)
{
    /* Every solve is "expensive": the pool path, suspend and resume. */
    const char *flags[] = {"--inline-cost-us", "0", NULL};
    start_daemon(flags);
    char *id = register_chain("{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]}",
                              201);
    char body[512];
    snprintf(body, sizeof body, "{\"chain_id\":\"%s\",\"target\":{\"position\":[0.3,0.6,0.2]}}", id);
    resp r = {0};
    for (int i = 0; i < 20; i++) {
        request("POST", "/v1/solve", body, NULL, &r);
        check_two_bone(&r);
    }
    ck_assert_int_eq(parallel(100, "POST", "/v1/solve", body, 200), 100);
    resp_free(&r);
    free(id);
}
END_TEST

/* The KUKA iiwa 14 from $IKD_DATA: its URDF text and compiled chain. */
typedef struct arm {
    char *urdf;
    ik_chain chain;
} arm;

static void load_iiwa(arm *a)
{
    const char *data = getenv("IKD_DATA") ? getenv("IKD_DATA") : "tests/data";
    char path[512];
    snprintf(path, sizeof path, "%s/robots/kuka_iiwa14_r820.urdf", data);
    a->urdf = read_file(path);
    ck_assert_msg(a->urdf != NULL, "cannot read %s", path);
    ik_joint joints[TEST_JOINTS_CAP];
    size_t n = 0;
    proto_error err;
    ck_assert_int_eq(proto_urdf_chain(a->urdf, strlen(a->urdf), "base_link", "tool0", joints,
                                      TEST_JOINTS_CAP, &n, NULL, &err),
                     0);
    ck_assert_int_eq(chain_init(&a->chain, joints, n), 0);
    ck_assert_uint_eq(a->chain.dof, 7);
}

/* A batch request of n full-pose targets made by forward kinematics from
 * random joint values inside the limits (fixed seed). poses gets the target
 * frames when not NULL. Caller frees. */
static char *iiwa_batch(const arm *a, size_t n, ik_xform *poses)
{
    json_t *targets = json_array();
    unsigned seed = 12345;
    for (size_t i = 0; i < n; i++) {
        double q[TEST_DOF_CAP];
        for (size_t k = 0; k < a->chain.dof; k++) {
            double u = (double)rand_r(&seed) / RAND_MAX;
            q[k] = a->chain.lower[k] + u * (a->chain.upper[k] - a->chain.lower[k]);
        }
        ik_xform x = ik_chain_fk(&a->chain, q);
        if (poses)
            poses[i] = x;
        json_array_append_new(targets, json_pack("{s:[f,f,f],s:[f,f,f,f]}", "position", x.p.x,
                                                 x.p.y, x.p.z, "orientation", x.q.x, x.q.y,
                                                 x.q.z, x.q.w));
    }
    json_t *req = json_pack("{s:{s:s,s:s,s:s,s:s},s:o}", "chain", "kind", "urdf", "urdf", a->urdf,
                            "base", "base_link", "tip", "tool0", "targets", targets);
    char *s = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(req);
    return s;
}

START_TEST(test_batch_fk)
{
    start_daemon(NULL);
    arm a;
    load_iiwa(&a);
    enum { N = 10000 };
    ik_xform *poses = malloc(N * sizeof *poses);
    char *body = iiwa_batch(&a, N, poses);
    resp r = {0};
    ck_assert_int_eq(request("POST", "/v1/solve/batch", body, NULL, &r), 200);
    json_t *j = body_json(&r);
    json_t *results = json_object_get(j, "results");
    ck_assert_int_eq(json_array_size(results), N);
    size_t ok = 0;
    for (size_t i = 0; i < N; i++) {
        json_t *res = json_array_get(results, i);
        if (strcmp(json_string_value(json_object_get(res, "status")), "success") != 0)
            continue;
        ok++;
        json_t *jq = json_object_get(res, "joints");
        ck_assert_int_eq(json_array_size(jq), 7);
        double q[7];
        for (size_t k = 0; k < 7; k++)
            q[k] = json_number_value(json_array_get(jq, k));
        ck_assert(ik_chain_within_limits(&a.chain, q, 1e-9));
        ik_xform x = ik_chain_fk(&a.chain, q);
        ck_assert_double_eq_tol(x.p.x, poses[i].p.x, 1e-5);
        ck_assert_double_eq_tol(x.p.y, poses[i].p.y, 1e-5);
        ck_assert_double_eq_tol(x.p.z, poses[i].p.z, 1e-5);
        /* Rotation between the two frames: angle = 2 acos |<q1, q2>|. */
        double d = fabs(x.q.x * poses[i].q.x + x.q.y * poses[i].q.y + x.q.z * poses[i].q.z +
                        x.q.w * poses[i].q.w);
        double angle = 2.0 * acos(d > 1.0 ? 1.0 : d);
        ck_assert_double_le(angle, 2e-5);
    }
    /* The numeric solver's success rate on this benchmark is far above
     * this floor; the floor catches a batch that is not really solved. */
    ck_assert_msg(ok >= N * 9 / 10, "only %zu of %d targets solved", ok, N);
    json_decref(j);
    resp_free(&r);
    free(body);
    free(poses);
    free(a.urdf);
}
END_TEST

/* Polls /metrics until `series` reaches at least `want` (guarded). */
static void wait_metric(const char *series, double want)
{
    resp r = {0};
    for (int i = 0; i < 6000; i++) {
        request("GET", "/metrics", NULL, NULL, &r);
        if (metric(r.body, series) >= want)
            break;
        usleep(10000);
    }
    ck_assert_msg(metric(r.body, series) >= want, "%s never reached %g", series, want);
    resp_free(&r);
}

START_TEST(test_vanishing_client)
{
    const char *flags[] = {"--threads", "1", NULL};
    start_daemon(flags);
    arm a;
    load_iiwa(&a);
    char *body = iiwa_batch(&a, 4000, NULL);
    int fd = raw_connect();
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "POST /v1/solve/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      "\r\nContent-Length: %zu\r\n\r\n",
                      strlen(body));
    ck_assert_int_eq(send(fd, head, (size_t)hn, 0), hn);
    size_t off = 0, len = strlen(body);
    while (off < len) {
        ssize_t k = send(fd, body + off, len - off, 0);
        ck_assert_int_gt(k, 0);
        off += (size_t)k;
    }
    /* Its batch has begun: go away without reading the answer (its
     * first solve, not the pool's depth: on a loaded machine the first
     * look may come after the batch's last chunk left the pool) */
    wait_metric("ikd_solve_duration_seconds_count{solver=\"numeric\"}", 1);
    close(fd);
    /* Others are served meanwhile, inline and on the pool. */
    resp r = {0};
    for (int i = 0; i < 10; i++) {
        request("POST", "/v1/solve", two_bone_request, NULL, &r);
        check_two_bone(&r);
    }
    /* The abandoned batch drains; its result is dropped, nothing leaks or
     * crashes (teardown requires a clean exit). */
    for (int i = 0; i < 6000; i++) {
        request("GET", "/metrics", NULL, NULL, &r);
        if (metric(r.body, "ikd_pool_queue_depth") == 0)
            break;
        usleep(10000);
    }
    ck_assert_double_eq(metric(r.body, "ikd_pool_queue_depth"), 0);
    ck_assert_int_eq(request("GET", "/livez", NULL, NULL, &r), 200);
    resp_free(&r);
    free(body);
    free(a.urdf);
}
END_TEST

START_TEST(test_sigterm_in_flight)
{
    start_daemon(NULL);
    arm a;
    load_iiwa(&a);
    char *body = iiwa_batch(&a, 1000, NULL);
    enum { N = 8 };
    CURLM *multi = curl_multi_init();
    CURL *hs[N];
    resp rs[N];
    struct curl_slist *hd[N];
    memset(rs, 0, sizeof rs);
    for (int i = 0; i < N; i++) {
        hs[i] = curl_easy_init();
        setup_easy(hs[i], "POST", "/v1/solve/batch", body, strlen(body), NULL, &rs[i], &hd[i]);
        curl_multi_add_handle(multi, hs[i]);
    }
    /* Drive the transfers until the daemon has every request (N batches plus
     * the /metrics request asking), then signal it. */
    int running = 1;
    resp m = {0};
    for (int tries = 0; tries < 6000; tries++) {
        curl_multi_perform(multi, &running);
        curl_multi_poll(multi, NULL, 0, 5, NULL);
        request("GET", "/metrics", NULL, NULL, &m);
        if (metric(m.body, "ikd_http_requests_active") >= N + 1)
            break;
    }
    ck_assert_double_ge(metric(m.body, "ikd_http_requests_active"), N + 1);
    kill(daemon_pid, SIGTERM);
    /* Readiness turns 503 once the signal is handled (asked on the
     * connection we already have: the listening socket is closed). */
    for (int i = 0; i < 1000 && request("GET", "/readyz", NULL, NULL, &m) == 200; i++)
        usleep(2000);
    ck_assert_int_eq(m.status, 503);
    while (running) {
        curl_multi_perform(multi, &running);
        if (running)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    for (int i = 0; i < N; i++) {
        long st = 0;
        curl_easy_getinfo(hs[i], CURLINFO_RESPONSE_CODE, &st);
        ck_assert_int_eq(st, 200);
        json_t *j = body_json(&rs[i]);
        ck_assert_int_eq(json_array_size(json_object_get(j, "results")), 1000);
        json_decref(j);
        curl_multi_remove_handle(multi, hs[i]);
        curl_easy_cleanup(hs[i]);
        curl_slist_free_all(hd[i]);
        resp_free(&rs[i]);
    }
    curl_multi_cleanup(multi);
    resp_free(&m);
    curl_easy_cleanup(easy);
    easy = NULL;
    /* The daemon exits by itself, with status 0. */
    int st = 0;
    ck_assert_int_eq(waitpid(daemon_pid, &st, 0), daemon_pid);
    daemon_pid = 0;
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    free(body);
    free(a.urdf);
}
END_TEST

/* ---- the suite ----------------------------------------------------------- */

static Suite *http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("daemon");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_endpoints);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_keepalive);
    tcase_add_test(tc, test_ipv6);
    tcase_add_test(tc, test_token);
    tcase_add_test(tc, test_cors);
    tcase_add_test(tc, test_chains);
    tcase_add_test(tc, test_registry_lru);
    tcase_add_test(tc, test_many_clients);
    tcase_add_test(tc, test_slow_client);
    tcase_add_test(tc, test_solve_inline);
    tcase_add_test(tc, test_solve_on_pool_by_id);
    tcase_add_test(tc, test_batch_fk);
    tcase_add_test(tc, test_vanishing_client);
    tcase_add_test(tc, test_sigterm_in_flight);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    signal(SIGPIPE, SIG_IGN);
    SRunner *sr = srunner_create(http_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
