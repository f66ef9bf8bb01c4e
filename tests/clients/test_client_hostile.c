/*
 * test_client_hostile.c: libikdclient's connection against a server that
 * is not ikd and does not keep ikd's promises, without a daemon: a
 * WebSocket server of the test's own (one thread, a plain socket, the
 * upgrade answered by hand with nettle's SHA-1) that sends what it is
 * told.
 *
 *   - A JSON tick answer of more entries than the connection's max_streams
 *     (no tick holds more targets) is refused as IKD_E_BAD_ANSWER before
 *     its entries are read, and fails the tick it answers (ikd_tick_wait,
 *     with and without an event callback); max_streams entries are read.
 *   - A tick answer that cannot be read and whose seq cannot be read
 *     either (a string, a fraction, past 64 bits) fails no tick: its error
 *     carries no seq, and the next answer is read.
 *   - A tick answer (or a stream's solution) of a seq never sent, past the
 *     highest sent, is refused as IKD_E_BAD_ANSWER without a seq: it fails
 *     nothing waiting, and the answer of what was sent is read after it.
 *   - On a tree stream, a path sample after its path_end, a path_end of a
 *     seq never sent, a solution older than one answered: refused the same
 *     way, the true answers read.
 *   - A tick answer of another count of entries than the tick's targets,
 *     or whose entries name other streams than the targets at their
 *     places, is refused as IKD_E_BAD_ANSWER, failing that tick.
 *   - An answer without its seq (tick_solution, solution, path_end)
 *     answers nothing: a hang-up after it reports the tick (the stream's
 *     target) lost, once, with its seq.
 *   - A server that upgrades each connection and hangs up at once is
 *     redialled with a backoff that grows, as after failed dials.
 *   - A stream whose close was sent when the connection dropped is closed
 *     (IKD_EV_CLOSED), not opened again on the next connection.
 *   - An HTTP answer of another count of results than the targets sent
 *     (ikd_solve, ikd_solve_batch) is refused as IKD_E_BAD_ANSWER (a
 *     plain HTTP server of the test's own, one exchange); a batch answer
 *     of no results is refused by its reader.
 */
#include <arpa/inet.h>
#include <check.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clients/c/lib/conn.h"
#include "tests/clients/tick_answer.h"

#define WAIT_MS 5000

/* ---- the server ---------------------------------------------------------- */

typedef struct server {
    int listener, port;
    const char *send;          /* one text message sent after the upgrade */
    const char *then;          /* and another after it, or NULL */
    bool wait_first;           /* send once the client has sent something */
    bool hang_up;              /* then close rather than wait for the client to */
    const char *const *script; /* or these, NULL-terminated, once the client sent something */
    pthread_t thread;
} server;

static void write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k <= 0)
            return; /* the client left: the test says what it saw */
        b += k;
        n -= (size_t)k;
    }
}

/* The upgrade request's head from fd, answered with 101 and ikd.v1. */
static bool upgrade(int fd)
{
    char head[8192] = "";
    size_t n = 0;
    while (n < sizeof head - 1 && !strstr(head, "\r\n\r\n")) {
        ssize_t k = read(fd, head + n, sizeof head - 1 - n);
        if (k <= 0)
            return false;
        n += (size_t)k;
        head[n] = '\0';
    }
    const char *key = strcasestr(head, "Sec-WebSocket-Key:");
    if (!key)
        return false;
    key += strlen("Sec-WebSocket-Key:");
    while (*key == ' ')
        key++;
    size_t klen = strcspn(key, "\r\n");
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&sha);
    sha1_update(&sha, klen, (const uint8_t *)key);
    sha1_update(&sha, strlen(guid), (const uint8_t *)guid);
    sha1_digest(&sha, sizeof digest, digest);
    char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
    base64_encode_raw(accept, sizeof digest, digest);
    accept[sizeof accept - 1] = '\0';
    char answer[512];
    int len = snprintf(answer, sizeof answer,
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                       "Sec-WebSocket-Protocol: ikd.v1\r\n\r\n",
                       accept);
    write_all(fd, answer, (size_t)len);
    return true;
}

/* text as one unmasked text frame (RFC 6455 section 5.2). */
static void send_text(int fd, const char *text)
{
    size_t n = strlen(text);
    unsigned char h[10] = {0x81};
    size_t hl = 2;
    if (n < 126) {
        h[1] = (unsigned char)n;
    } else if (n < 65536) {
        h[1] = 126, h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int k = 0; k < 8; k++)
            h[2 + k] = (unsigned char)((uint64_t)n >> (56 - 8 * k));
        hl = 10;
    }
    write_all(fd, h, hl);
    write_all(fd, text, n);
}

static void *serve(void *p)
{
    server *s = p;
    int fd = accept(s->listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    char drain[4096];
    if (s->script && upgrade(fd) && read(fd, drain, sizeof drain) > 0) {
        for (const char *const *m = s->script; *m; m++)
            send_text(fd, *m);
        while (read(fd, drain, sizeof drain) > 0) {
        }
    } else if (!s->script && upgrade(fd) && (!s->wait_first || read(fd, drain, sizeof drain) > 0)) {
        send_text(fd, s->send);
        if (s->then)
            send_text(fd, s->then);
        while (!s->hang_up && read(fd, drain, sizeof drain) > 0) {
        } /* until the client closes */
    }
    close(fd);
    return NULL;
}

/* s->listener on a free loopback port (s->port), its thread run(s). */
static void server_run(server *s, void *(*run)(void *))
{
    s->listener = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(s->listener, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(s->listener, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s->listener, 1), 0);
    socklen_t al = sizeof a;
    ck_assert_int_eq(getsockname(s->listener, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&s->thread, NULL, run, s), 0);
}

static void server_start(server *s, const char *send, const char *then)
{
    s->send = send;
    s->then = then;
    s->wait_first = s->hang_up = false;
    s->script = NULL;
    server_run(s, serve);
}

static void server_join(server *s)
{
    pthread_join(s->thread, NULL);
    close(s->listener);
}

/* ---- tick answers -------------------------------------------------------- */

#define RESULT_S0 "{\"status\":\"success\",\"joints\":[0.25,-0.5]}"

typedef struct seen {
    int ticks, errors;
    int error_code;
    bool error_has_seq;
    long long error_seq;
    int lost; /* IKD_E_CONNECTION_LOST errors */
    bool lost_has_seq;
    long long lost_seq;
} seen;

static void on_event(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    seen *s = user;
    if (ev->kind == IKD_EV_TICK)
        s->ticks++;
    if (ev->kind == IKD_EV_ERROR) {
        s->errors++;
        s->error_code = ev->error->code;
        s->error_has_seq = ev->has_seq;
        s->error_seq = ev->seq;
        if (ev->error->code == IKD_E_CONNECTION_LOST) {
            s->lost++;
            s->lost_has_seq = ev->has_seq;
            s->lost_seq = ev->seq;
        }
    }
}

/* A tick of seq with n targets (streams s0, s1, ...; at most 4, the
 * connections' max_streams) sent on c, once it is up. */
static void send_tick(ikd_conn *c, long long seq, size_t n)
{
    ikd_error e;
    ikd_target t = {.position = {0, 0.3, 0.5}};
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    ck_assert_msg(ikd_tick_begin(c, seq, &e) == 0, "%s", e.message);
    for (size_t i = 0; i < n && i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "s%zu", i);
        ck_assert_msg(ikd_tick_add(c, name, &t, NULL, IKD_SEQ_AUTO, &e) == 0, "%s", e.message);
    }
    ck_assert_msg(ikd_tick_send(c, &e) == 0, "%s", e.message);
}

/* ikd_tick_wait for seq 7 (sent) on a connection with max_streams 4 to a server
 * that sends a tick answer of n entries (with an event callback when s):
 * its return code, e and *tick as it gave them. */
static int wait_tick(size_t n, seen *s, ikd_tick **tick, ikd_error *e)
{
    char *answer = tick_answer(n);
    server srv;
    server_start(&srv, answer, NULL);
    srv.wait_first = true; /* the answer follows the tick it answers */
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
    ikd_conn_opts o = {.url = url, .max_streams = 4, .on_event = s ? on_event : NULL, .user = s};
    ikd_conn *c = ikd_conn_new(&o, e);
    ck_assert_msg(c != NULL, "%s", e->message);
    send_tick(c, 7, n); /* the targets of its answer (past 4: as many as it can) */
    int rc = ikd_tick_wait(c, 7, WAIT_MS, tick, e);
    if (!rc)
        ck_assert_uint_eq((*tick)->count, n);
    else /* refused before its entries were read: the decoder holds little */
        ck_assert_uint_lt(ikd__dec_memory(&c->dec), 64 * 1024);
    ikd_conn_free(c);
    server_join(&srv);
    free(answer);
    return rc;
}

START_TEST(tick_answer_past_max_streams_refused)
{
    ikd_tick *t = NULL;
    ikd_error e;
    /* max_streams entries: read */
    ck_assert_msg(wait_tick(4, NULL, &t, &e) == 0, "%s", e.message);
    ck_assert_str_eq(t->entries[3].stream, "s3");
    ck_assert_double_eq(t->entries[3].result->joints[1], -0.5);
    ikd_tick_free(t);
    /* one more, and many more: refused, naming the bound, failing the tick */
    static const size_t past[] = {5, 20000};
    for (size_t k = 0; k < 2; k++) {
        t = NULL;
        int rc = wait_tick(past[k], NULL, &t, &e);
        ck_assert_msg(rc == IKD_E_BAD_ANSWER, "%zu entries: %d %s", past[k], rc, e.message);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(e.message, "more than 4 entries (max_streams") != NULL, "%s",
                      e.message);
        ck_assert(e.has_seq);
        ck_assert_int_eq(e.seq, 7);
    }
    /* with an event callback the error reaches it with the tick's seq, and
     * the tick's wait fails at once rather than at its timeout */
    seen s = {0};
    ck_assert_int_eq(wait_tick(5, &s, &t, &e), IKD_E_BAD_ANSWER);
    ck_assert_int_eq(s.ticks, 0);
    ck_assert_int_eq(s.errors, 1);
    ck_assert_int_eq(s.error_code, IKD_E_BAD_ANSWER);
    ck_assert(s.error_has_seq);
    ck_assert_int_eq(s.error_seq, 7);
}
END_TEST

/* A tick answer that cannot be read, whose seq cannot be read either (a
 * string, a fraction, past 64 bits), fails no tick: its error carries no
 * seq (not 0, which would fail tick 0), and the answer to tick 0 that
 * follows it is read. */
START_TEST(tick_answer_bogus_seq_fails_no_tick)
{
    static const char *const bogus[] = {"\"0\"", "0.5", "18446744073709551616"};
    for (size_t k = 0; k < sizeof bogus / sizeof *bogus; k++) {
        char bad[160];
        snprintf(bad, sizeof bad, "{\"type\":\"tick_solution\",\"seq\":%s,\"solutions\":[]}",
                 bogus[k]);
        server srv;
        server_start(&srv, bad,
                     "{\"type\":\"tick_solution\",\"seq\":0,\"skipped\":0,"
                     "\"solutions\":[{\"stream\":\"s0\",\"seq\":0,\"result\":" RESULT_S0 "}]}");
        srv.wait_first = true; /* the answers follow the tick */
        char url[64];
        snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
        seen s = {0};
        ikd_error e;
        ikd_conn_opts o = {.url = url, .max_streams = 4, .on_event = on_event, .user = &s};
        ikd_conn *c = ikd_conn_new(&o, &e);
        ck_assert_msg(c != NULL, "%s", e.message);
        send_tick(c, 0, 1);
        ikd_tick *t = NULL;
        int rc = ikd_tick_wait(c, 0, WAIT_MS, &t, &e);
        ck_assert_msg(rc == 0, "seq %s: %d %s", bogus[k], rc, e.message);
        ck_assert_uint_eq(t->count, 1);
        ikd_tick_free(t);
        ck_assert_int_eq(s.errors, 1);
        ck_assert_int_eq(s.error_code, IKD_E_BAD_ANSWER);
        ck_assert_msg(!s.error_has_seq, "seq %s: the error says seq %lld", bogus[k], s.error_seq);
        ikd_conn_free(c);
        server_join(&srv);
    }
}
END_TEST

/* A tick answer of a seq never sent (past the highest sent) answers no
 * tick: it would answer every tick waiting (ikd_tick_wait takes an answer
 * of its seq or a newer one, ikd having replaced the older tick). It is an
 * IKD_EV_ERROR IKD_E_BAD_ANSWER without a seq, as the JavaScript and
 * Python clients refuse it, whether it can be read or not (past
 * max_streams); the answer to the tick sent is read after it. Before, the
 * C client handed it to the program as tick 5's answer, and ikd_tick_wait
 * for tick 5 returned tick 99's entries. */
START_TEST(tick_answer_of_seq_never_sent_refused)
{
    char *past = tick_answer(5); /* seq 7, past max_streams */
    const char *never[] = {
        "{\"type\":\"tick_solution\",\"seq\":99,\"skipped\":0,\"solutions\":[{\"stream\":"
        "\"s0\",\"seq\":99,\"skipped\":0,\"result\":" RESULT_S0 "}]}",
        past};
    for (size_t k = 0; k < sizeof never / sizeof *never; k++) {
        server srv;
        server_start(&srv, never[k],
                     "{\"type\":\"tick_solution\",\"seq\":5,\"skipped\":0,\"solutions\":[{"
                     "\"stream\":\"s0\",\"seq\":5,\"skipped\":0,\"result\":" RESULT_S0 "}]}");
        srv.wait_first = true;
        char url[64];
        snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
        seen s = {0};
        ikd_error e;
        ikd_conn_opts o = {.url = url, .max_streams = 4, .on_event = on_event, .user = &s};
        ikd_conn *c = ikd_conn_new(&o, &e);
        ck_assert_msg(c != NULL, "%s", e.message);
        send_tick(c, 5, 1);
        ikd_tick *t = NULL;
        int rc = ikd_tick_wait(c, 5, WAIT_MS, &t, &e);
        ck_assert_msg(rc == 0, "answer %zu: %d %s", k, rc, e.message);
        ck_assert_msg(t->seq == 5, "answer %zu: tick 5 answered by tick %lld", k, t->seq);
        ck_assert_uint_eq(t->count, 1);
        ck_assert_int_eq(t->entries[0].seq, 5);
        ikd_tick_free(t);
        ck_assert_int_eq(s.ticks, 1);
        ck_assert_int_eq(s.errors, 1);
        ck_assert_int_eq(s.error_code, IKD_E_BAD_ANSWER);
        ck_assert_msg(!s.error_has_seq, "the error fails tick %lld", s.error_seq);
        ikd_conn_free(c);
        server_join(&srv);
    }
    free(past);
}
END_TEST

typedef struct sols {
    int count, errors, error_code;
    long long seq[4];
    bool error_has_seq;
    char error_stream[sizeof((ikd_error *)0)->stream];
} sols;

static void on_solution(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    sols *s = user;
    if (ev->kind == IKD_EV_SOLUTION && s->count < 4)
        s->seq[s->count++] = ev->seq;
    if (ev->kind == IKD_EV_ERROR) {
        s->errors++;
        s->error_code = ev->error->code;
        s->error_has_seq = ev->has_seq;
        snprintf(s->error_stream, sizeof s->error_stream, "%s", ev->error->stream);
    }
}

/* A stream's solution of a seq never sent (past the highest target or path
 * sent on it) is refused the same way (the JavaScript and Python clients
 * refuse it): IKD_E_BAD_ANSWER naming the stream, no seq, no solution
 * event; the solution of the target sent is the stream's only one. Before,
 * it reached the program as a solution, and ikd_stream_solve for seq 1
 * would have returned seq 99's result. */
START_TEST(solution_of_seq_never_sent_refused)
{
    server srv;
    server_start(&srv, "{\"type\":\"opened\",\"stream\":\"arm\"}",
                 "{\"type\":\"solution\",\"stream\":\"arm\",\"seq\":99,\"skipped\":0,"
                 "\"result\":" RESULT_S0 "}");
    srv.wait_first = true;
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
    sols n = {0};
    ikd_error e;
    ikd_conn_opts o = {.url = url, .on_event = on_solution, .user = &n};
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    ikd_chain chain = {.json = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0,0,0.5],[0,0,0]]}"};
    ikd_target t = {.position = {0, 0.3, 0.5}};
    ck_assert_msg(ikd_stream_open(c, "arm", &chain, NULL, NULL, &e) == 0, "%s", e.message);
    ck_assert_msg(ikd_stream_target(c, "arm", 1, &t, NULL, NULL, &e) == 0, "%s", e.message);
    for (int i = 0; i < WAIT_MS / 10 && n.count + n.errors < 1; i++)
        ikd_conn_poll(c, 10);
    ck_assert_msg(n.count == 0, "a solution of seq %lld reached the program", n.seq[0]);
    ck_assert_int_eq(n.errors, 1);
    ck_assert_int_eq(n.error_code, IKD_E_BAD_ANSWER);
    ck_assert(!n.error_has_seq);
    ck_assert_str_eq(n.error_stream, "arm");
    ikd_conn_free(c);
    server_join(&srv);
}
END_TEST

typedef struct path_lies {
    int solutions, ends, errors, bad_seq;
    long long seq[8], index[8];
} path_lies;

static void on_path_lies(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    path_lies *l = user;
    if (ev->kind == IKD_EV_SOLUTION && l->solutions < 8) {
        l->seq[l->solutions] = ev->seq;
        l->index[l->solutions++] = ev->has_index ? ev->index : -1;
    }
    l->ends += ev->kind == IKD_EV_PATH_END;
    if (ev->kind == IKD_EV_ERROR) {
        l->errors++;
        l->bad_seq += ev->error->code != IKD_E_BAD_ANSWER || ev->has_seq;
    }
}

#define TREE_RESULT(x)                                                                             \
    "{\"status\":\"success\",\"joints\":[" x ",0.4,0.9,-0.2,1.2],\"tips\":[{\"status\":"           \
    "\"success\",\"position\":[0.2,0.3,0.3]},{\"status\":\"success\",\"position\":"                \
    "[0.4,-0.1,0.5]}]}"

/* On a tree stream, a path sample after its path_end, a path_end of a seq
 * never sent and a solution older than one answered are refused as
 * IKD_E_BAD_ANSWER without a seq, as the JavaScript and Python clients
 * refuse them (ikd answers a stream in seq order, and nothing of a path
 * after its end); the true answers are read. Before, all three reached the
 * program as answers. */
START_TEST(path_answers_that_lie_refused)
{
    static const char *const script[] = {
        "{\"type\":\"opened\",\"stream\":\"arms\"}",
        "{\"type\":\"solution\",\"stream\":\"arms\",\"seq\":1,\"skipped\":0,\"index\":0,"
        "\"count\":2,\"result\":" TREE_RESULT("0") "}",
        "{\"type\":\"solution\",\"stream\":\"arms\",\"seq\":1,\"skipped\":0,\"index\":1,"
        "\"count\":2,\"result\":" TREE_RESULT("1") "}",
        "{\"type\":\"path_end\",\"stream\":\"arms\",\"seq\":1,\"sent\":2,\"skipped\":0,"
        "\"count\":2,\"completed\":true}",
        /* the lies: a sample after the end, a path_end never sent */
        "{\"type\":\"solution\",\"stream\":\"arms\",\"seq\":1,\"skipped\":0,\"index\":1,"
        "\"count\":2,\"result\":" TREE_RESULT("7") "}",
        "{\"type\":\"path_end\",\"stream\":\"arms\",\"seq\":9,\"sent\":2,\"skipped\":0,"
        "\"count\":2,\"completed\":true}",
        "{\"type\":\"solution\",\"stream\":\"arms\",\"seq\":3,\"skipped\":1,"
        "\"result\":" TREE_RESULT("3") "}",
        /* and an older solution after it */
        "{\"type\":\"solution\",\"stream\":\"arms\",\"seq\":2,\"skipped\":0,"
        "\"result\":" TREE_RESULT("2") "}",
        "{\"type\":\"closed\",\"stream\":\"arms\"}", NULL};
    server srv;
    server_start(&srv, NULL, NULL);
    srv.script = script;
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
    path_lies l = {0};
    ikd_error e;
    ikd_conn_opts o = {.url = url, .on_event = on_path_lies, .user = &l};
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    ikd_chain chain = {.json = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0,0,0.5],[0,0,0]]}"};
    ikd_target w[2] = {{.position = {0, 0.3, 0.5}}, {.position = {0, 0.2, 0.5}}};
    /* open, path 1, targets 2 and 3: one write, read by the server at once */
    ck_assert_msg(ikd_stream_open(c, "arms", &chain, NULL, NULL, &e) == 0, "%s", e.message);
    ck_assert_msg(ikd_stream_path(c, "arms", IKD_SEQ_AUTO, w, 2, 0, 0, NULL, &e) == 0, "%s",
                  e.message);
    for (int k = 0; k < 2; k++)
        ck_assert_msg(ikd_stream_target(c, "arms", IKD_SEQ_AUTO, &w[k], NULL, NULL, &e) == 0, "%s",
                      e.message);
    ikd_conn_stats st = {0};
    for (int i = 0; i < WAIT_MS / 10 && (ikd_conn_get_stats(c, &st), st.streams); i++)
        ikd_conn_poll(c, 10); /* until "closed" */
    ck_assert_uint_eq(st.streams, 0);
    ck_assert_msg(l.solutions == 3, "%d solutions reached the program", l.solutions);
    ck_assert_int_eq(l.seq[0], 1);
    ck_assert_int_eq(l.index[0], 0);
    ck_assert_int_eq(l.seq[1], 1);
    ck_assert_int_eq(l.index[1], 1);
    ck_assert_int_eq(l.seq[2], 3);
    ck_assert_int_eq(l.ends, 1);
    ck_assert_int_eq(l.errors, 3);
    ck_assert_int_eq(l.bad_seq, 0);
    ikd_conn_free(c);
    server_join(&srv);
}
END_TEST

#define ENTRY(name, seq)                                                                           \
    "{\"stream\":\"" name "\",\"seq\":" seq ",\"skipped\":0,\"result\":" RESULT_S0 "}"

/* ikd answers a tick with one entry per target, in the order of its targets
 * (proto/STREAM.md): an answer of another count of entries, or whose
 * entries name other streams than the targets at their places, is refused
 * as IKD_E_BAD_ANSWER with the tick's seq, failing that tick (as an HTTP
 * batch answer of another count of results is refused). An entry without
 * a stream (ikd names none when the name itself was refused) matches any.
 * Before, each was handed to the program as tick 5's answer: a program
 * reading entries[i] for its target i read past the answer, or applied
 * one character's pose to another. */
START_TEST(tick_answer_of_other_targets_refused)
{
    static const struct {
        const char *answer;
        int rc;
    } cases[] = {
        {"{\"type\":\"tick_solution\",\"seq\":5,\"solutions\":[" ENTRY("s0", "5") "]}",
         IKD_E_BAD_ANSWER},
        {"{\"type\":\"tick_solution\",\"seq\":5,\"solutions\":[" ENTRY("s0", "5") "," ENTRY(
             "s1", "5") "," ENTRY("s2", "5") "]}",
         IKD_E_BAD_ANSWER},
        {"{\"type\":\"tick_solution\",\"seq\":5,\"solutions\":[" ENTRY("s1", "5") "," ENTRY(
             "s0", "5") "]}",
         IKD_E_BAD_ANSWER},
        {"{\"type\":\"tick_solution\",\"seq\":5,\"solutions\":[" ENTRY("s0", "5") "," ENTRY(
             "other", "5") "]}",
         IKD_E_BAD_ANSWER},
        {"{\"type\":\"tick_solution\",\"seq\":5,\"solutions\":[" ENTRY("s0", "5") "," ENTRY(
             "s1", "5") "]}",
         0},
        {"{\"type\":\"tick_solution\",\"seq\":5,\"solutions\":[" ENTRY(
             "s0", "5") ",{\"seq\":5,\"error\":{\"code\":\"invalid_request\",\"message\":\"x\"}}]}",
         0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *script[] = {cases[k].answer, NULL};
        server srv;
        server_start(&srv, NULL, NULL);
        srv.script = script;
        char url[64];
        snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
        ikd_error e;
        ikd_conn_opts o = {.url = url};
        ikd_conn *c = ikd_conn_new(&o, &e);
        ck_assert_msg(c != NULL, "%s", e.message);
        ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
        ikd_target t = {.position = {0, 0.3, 0.5}};
        ck_assert_int_eq(ikd_tick_begin(c, 5, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "s0", &t, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "s1", &t, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_send(c, &e), 0);
        ikd_tick *tk = NULL;
        int rc = ikd_tick_wait(c, 5, WAIT_MS, &tk, &e);
        ck_assert_msg(rc == cases[k].rc, "case %zu: %d %s", k, rc, rc ? e.message : "");
        if (rc) {
            ck_assert_ptr_null(tk);
            ck_assert(e.has_seq);
            ck_assert_int_eq(e.seq, 5);
        } else {
            ck_assert_uint_eq(tk->count, 2);
        }
        ikd_tick_free(tk);
        ikd_conn_free(c);
        server_join(&srv);
    }
}
END_TEST

/* An answer without its seq answers nothing the client can name: a server
 * that answers tick 0 (or stream seq 0) so and hangs up has the tick (the
 * stream's target) reported lost, once, with its seq. Before, the answer
 * moved the last answered seq to 0, and the loss reported nothing. */
START_TEST(answer_without_seq_leaves_tick_lost)
{
    static const char *const answers[] = {
        "{\"type\":\"tick_solution\",\"skipped\":0,\"solutions\":[]}",
        "{\"type\":\"solution\",\"stream\":\"arm\","
        "\"result\":{\"status\":\"success\",\"joints\":[0.25,-0.5]}}",
        "{\"type\":\"path_end\",\"stream\":\"arm\"}"};
    for (size_t k = 0; k < sizeof answers / sizeof *answers; k++) {
        bool tick = k == 0;
        server srv;
        server_start(&srv, tick ? answers[k] : "{\"type\":\"opened\",\"stream\":\"arm\"}",
                     tick ? NULL : answers[k]);
        srv.wait_first = srv.hang_up = true;
        char url[64];
        snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
        seen s = {0};
        ikd_error e;
        ikd_conn_opts o = {.url = url, .max_streams = 4, .on_event = on_event, .user = &s};
        ikd_conn *c = ikd_conn_new(&o, &e);
        ck_assert_msg(c != NULL, "%s", e.message);
        ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
        ikd_target t = {.position = {0, 0.3, 0.5}};
        if (tick) {
            ck_assert_int_eq(ikd_tick_begin(c, 0, &e), 0);
            ck_assert_int_eq(ikd_tick_add(c, "arm", &t, NULL, 0, &e), 0);
            ck_assert_int_eq(ikd_tick_send(c, &e), 0);
        } else {
            ikd_chain chain = {.json = "{\"kind\":\"bones\",\"positions\":"
                                       "[[0,0,1],[0,0,0.5],[0,0,0]]}"};
            ck_assert_msg(ikd_stream_open(c, "arm", &chain, NULL, NULL, &e) == 0, "%s", e.message);
            ck_assert_msg(ikd_stream_target(c, "arm", 0, &t, NULL, NULL, &e) == 0, "%s", e.message);
        }
        for (int i = 0; i < WAIT_MS / 10 && ikd_conn_is_open(c); i++)
            ikd_conn_poll(c, 10); /* until the hang-up is seen */
        ck_assert_msg(s.lost == 1, "%s: %d losses reported", answers[k], s.lost);
        ck_assert(s.lost_has_seq);
        ck_assert_int_eq(s.lost_seq, 0);
        ikd_conn_free(c);
        server_join(&srv);
    }
}
END_TEST

/* Upgrades FLAPS connections on s->listener, each hung up at once; the
 * time of each accept in ms (CLOCK_MONOTONIC) in flap_at. */
#define FLAPS 4
static int64_t flap_at[FLAPS];

static void *flap(void *p)
{
    server *s = p;
    for (int i = 0; i < FLAPS; i++) {
        int fd = accept(s->listener, NULL, NULL);
        if (fd < 0)
            return NULL;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        flap_at[i] = (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
        upgrade(fd);
        close(fd);
    }
    return NULL;
}

/* A server that upgrades each connection and hangs up at once: the client
 * waits longer before each redial (100, 200, 400 ms with jitter), as it
 * does after failed dials. Before, each upgrade started the backoff again,
 * and such a server was redialled every 100 ms for as long as it went on. */
START_TEST(flapping_server_backoff_grows)
{
    server srv;
    server_run(&srv, flap);
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
    ikd_error e;
    ikd_conn_opts o = {.url = url, .reconnect = true};
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ikd_conn_stats st = {0};
    for (int i = 0; i < 400 && st.reconnects < FLAPS; i++) {
        ikd_conn_poll(c, 10);
        ikd_conn_get_stats(c, &st);
    }
    ikd_conn_free(c);
    server_join(&srv);
    /* the third wait is 400 ms +-25%; 100 ms +-25% before */
    ck_assert_msg(flap_at[3] - flap_at[2] >= 250, "redialled after %lld ms",
                  (long long)(flap_at[3] - flap_at[2]));
}
END_TEST

/* ---- a close cut short -------------------------------------------------- */

static bool reopened; /* the client sent something on the second connection */

/* Connection 1: the open answered, the close read and not answered, a
 * hang-up. Connection 2: whether the client sends anything within 500 ms. */
static void *close_cut(void *p)
{
    server *s = p;
    char buf[4096];
    int fd = accept(s->listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    if (upgrade(fd) && read(fd, buf, sizeof buf) > 0) {
        send_text(fd, "{\"type\":\"opened\",\"stream\":\"arm\"}");
        (void)!read(fd, buf, sizeof buf);
    }
    close(fd);
    fd = accept(s->listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    if (upgrade(fd)) {
        struct timeval tv = {.tv_usec = 500000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        reopened = read(fd, buf, sizeof buf) > 0;
    }
    close(fd);
    return NULL;
}

typedef struct closes {
    int closed, reconnected;
} closes;

static void count_closes(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    closes *n = user;
    n->closed += ev->kind == IKD_EV_CLOSED && ev->stream && strcmp(ev->stream, "arm") == 0;
    n->reconnected += ev->kind == IKD_EV_CONNECTED;
}

/* A stream whose close was sent when the connection dropped is closed
 * (IKD_EV_CLOSED, once) and not opened again on the next connection.
 * Before, it was reopened, and its close never reported. */
START_TEST(stream_closing_when_lost_is_closed_not_reopened)
{
    server srv;
    reopened = false;
    server_run(&srv, close_cut);
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", srv.port);
    closes n = {0};
    ikd_error e;
    ikd_conn_opts o = {.url = url, .reconnect = true, .on_event = count_closes, .user = &n};
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    ikd_chain chain = {.json = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0,0,0.5],[0,0,0]]}"};
    ck_assert_msg(ikd_stream_open_wait(c, "arm", &chain, NULL, NULL, WAIT_MS, &e) == 0, "%s",
                  e.message);
    ck_assert_int_eq(ikd_stream_close(c, "arm", &e), 0);
    for (int i = 0; i < WAIT_MS / 10 && n.reconnected < 2; i++)
        ikd_conn_poll(c, 10);
    ck_assert_int_eq(n.reconnected, 2);
    ikd_conn_free(c);
    server_join(&srv);
    ck_assert_int_eq(n.closed, 1);
    ck_assert_msg(!reopened, "the closed stream was opened again");
}
END_TEST

/* ---- HTTP answers ------------------------------------------------------- */

/* One HTTP exchange on s->listener: the request read whole (its headers
 * and Content-Length bytes), then 200 with s->send as its JSON body. */
static void *http_serve(void *p)
{
    server *s = p;
    int fd = accept(s->listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    char req[65536];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd, req + got, sizeof req - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        req[got] = '\0';
        char *end = strstr(req, "\r\n\r\n");
        const char *cl = strcasestr(req, "content-length:");
        if (end && (!cl || got >= (size_t)(end + 4 - req) + strtoul(cl + 15, NULL, 10)))
            break;
    }
    char head[160];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     strlen(s->send));
    write_all(fd, head, (size_t)n);
    write_all(fd, s->send, strlen(s->send));
    shutdown(fd, SHUT_WR);
    char drain[4096];
    while (read(fd, drain, sizeof drain) > 0) {
    }
    close(fd);
    return NULL;
}

#define RESULT "{\"status\":\"success\",\"joints\":[0.25,-0.5]}"

/* ikd_solve (count 0) or ikd_solve_batch of count targets against a server
 * that answers with answer: the return code (*e as it gave it). */
static int solve_against(const char *answer, size_t count, ikd_error *e)
{
    server srv;
    srv.send = answer;
    srv.then = NULL;
    server_run(&srv, http_serve);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    ikd_client_opts o = {.url = url, .timeout_ms = WAIT_MS};
    ikd_client *c = ikd_client_new(&o, e);
    ck_assert_msg(c != NULL, "%s", e->message);
    ikd_chain chain = {.json = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0,0,0.5],[0,0,0]]}"};
    ikd_target t[3] = {
        {.position = {0, 0.3, 0.5}}, {.position = {0, 0.2, 0.5}}, {.position = {0, 0.1, 0.5}}};
    ikd_answer *ans = NULL;
    int rc = count ? ikd_solve_batch(c, &chain, t, count, NULL, NULL, &ans, e)
                   : ikd_solve(c, &chain, t, NULL, NULL, &ans, e);
    if (!rc) /* as many results as targets: each can be read */
        ck_assert_uint_eq(ans->count, (count ? count : 1));
    else
        ck_assert_ptr_null(ans);
    ikd_answer_free(ans);
    ikd_client_free(c);
    server_join(&srv);
    return rc;
}

/* An answer of fewer (or more) results than the targets sent is refused
 * as IKD_E_BAD_ANSWER: a caller reads one result per target (before, a
 * batch of 3 answered with 1 result, or a solve with none, was returned,
 * and results[i] read past the answer). */
START_TEST(answer_of_other_result_count_refused)
{
    ikd_error e;
    ck_assert_msg(solve_against("{\"results\":[" RESULT "," RESULT "]}", 2, &e) == 0, "%s",
                  e.message);
    ck_assert_msg(solve_against(RESULT, 0, &e) == 0, "%s", e.message);
    static const struct {
        const char *answer;
        size_t count;
    } bad[] = {{"{\"results\":[" RESULT "]}", 3},
               {"{\"results\":[" RESULT "," RESULT "," RESULT "]}", 2},
               {"{\"results\":[]}", 0},
               {"{\"results\":[" RESULT "," RESULT "]}", 0}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        int rc = solve_against(bad[k].answer, bad[k].count, &e);
        ck_assert_msg(rc == IKD_E_BAD_ANSWER, "%s to %zu targets: %d %s", bad[k].answer,
                      bad[k].count, rc, rc ? e.message : "");
    }
}
END_TEST

/* A batch answer of no results is no answer ikd gives (it refuses an
 * empty batch): its reader refuses it, as the client's fuzz target
 * (tests/fuzz/fuzz_client.c) expects of it. */
START_TEST(batch_answer_without_results_refused)
{
    static const char empty[] = "{\"results\":[],\"counts\":{\"success\":0}}";
    static const char one[] = "{\"results\":[" RESULT "]}";
    ikd__dec d = {0};
    ikd_answer a;
    ikd_error e;
    ck_assert_int_eq(ikd__decode_answer(&d, empty, sizeof empty - 1, &a, &e), IKD_E_BAD_ANSWER);
    ck_assert_msg(strstr(e.message, "without results") != NULL, "%s", e.message);
    ck_assert_int_eq(ikd__decode_answer(&d, one, sizeof one - 1, &a, &e), 0);
    ck_assert_uint_eq(a.count, 1);
    ck_assert_str_eq(a.results[0].status_text, "success");
    ikd__dec_free(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_hostile");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tick_answer_past_max_streams_refused);
    tcase_add_test(tc, tick_answer_bogus_seq_fails_no_tick);
    tcase_add_test(tc, tick_answer_of_seq_never_sent_refused);
    tcase_add_test(tc, solution_of_seq_never_sent_refused);
    tcase_add_test(tc, path_answers_that_lie_refused);
    tcase_add_test(tc, tick_answer_of_other_targets_refused);
    tcase_add_test(tc, answer_without_seq_leaves_tick_lost);
    tcase_add_test(tc, flapping_server_backoff_grows);
    tcase_add_test(tc, stream_closing_when_lost_is_closed_not_reopened);
    tcase_add_test(tc, answer_of_other_result_count_refused);
    tcase_add_test(tc, batch_answer_without_results_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
