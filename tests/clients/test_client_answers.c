/*
 * test_client_answers.c: libikdclient against a live ikd on sequences of
 * legitimate messages whose answers the client must take, never refuse
 * as IKD_E_BAD_ANSWER. The client refuses answers that lie (a seq never
 * sent, an older solution, a path sample after its path_end, a tick answer
 * of other targets); ikd's own answers must never look like one.
 *
 *   - A target, a path and a target queued at once on a numeric stream
 *     (the KUKA iiwa from IKD_DATA: its solves run on the pool): ikd ends
 *     the path that never started at once, before the first target's
 *     solution; that solution is an IKD_EV_SOLUTION, not an error, and
 *     the path's PATH_END says it sent nothing and did not complete.
 *   - A random mix (fixed seed) of targets, paths, ticks (JSON and binary)
 *     and polls on the arm and a two-bone leg: no IKD_EV_ERROR at all,
 *     every answer's seq one that was sent; once more with ikd restarted
 *     midway (the connection dialled again, the streams reopened, seqs
 *     going on): no error but the loss's IKD_E_CONNECTION_LOST.
 *   - Explicit seqs started again from 1 after ikd restarted (the streams
 *     reopened by the reconnection), paths and ticks included: taken.
 *   - Seqs 0, negative and of magnitude 2^53 - 1 on targets, a path and
 *     ticks (JSON and binary): taken, each answer of its seq.
 *   - Ticks that all have the same seq, of two targets and of one in
 *     turn, queued faster than ikd solves them (it replaces many): every
 *     answer taken, none matched against another tick of that seq.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ikd/client.h"
#include "tests/clients/daemon.h"

#define WAIT_MS 10000
#define MAX_SEQ 4096

static const char LEG[] = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}";

/* The iiwa as an urdf chain object (its text escaped into JSON); free it. */
static char *arm_chain(void)
{
    const char *data = getenv("IKD_DATA") ? getenv("IKD_DATA") : "tests/data";
    char path[512];
    snprintf(path, sizeof path, "%s/robots/kuka_iiwa14_r820.urdf", data);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    static const char head[] =
        "{\"kind\":\"urdf\",\"base\":\"base_link\",\"tip\":\"tool0\",\"urdf\":\"";
    size_t cap = 1 << 20, n = 0;
    char *s = malloc(cap);
    ck_assert_ptr_nonnull(s);
    memcpy(s, head, sizeof head - 1);
    n = sizeof head - 1;
    int ch;
    while ((ch = fgetc(f)) != EOF) {
        ck_assert(n + 8 < cap);
        if (ch == '"' || ch == '\\') {
            s[n++] = '\\';
            s[n++] = (char)ch;
        } else if (ch == '\n') {
            s[n++] = '\\';
            s[n++] = 'n';
        } else if (ch >= 0x20) {
            s[n++] = (char)ch;
        }
    }
    fclose(f);
    memcpy(s + n, "\"}", 3);
    return s;
}

static void arm_target(int i, ikd_target *t)
{
    *t = (ikd_target){.position = {0.4 + 0.05 * sin(i), 0.2 * cos(i / 3.0), 0.6}};
}

static void leg_target(int i, ikd_target *t)
{
    *t = (ikd_target){.position = {0.2, 0.1 + 0.01 * sin(i), 0.25}};
}

typedef struct seen {
    int errors;
    char first_error[600];
    int solutions;
    long long sol_seq[64];
    int ends;
    long long end_seq, end_sent;
    bool end_completed;
    bool answered_unsent;
    bool (*sent)[2][MAX_SEQ]; /* per stream (arm, leg): seqs sent */
    int ticks;
    long long last_tick;
} seen;

static int stream_ix(const char *name)
{
    return name && strcmp(name, "leg") == 0;
}

static void on_event(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    seen *s = user;
    if (ev->kind == IKD_EV_ERROR && ev->error->code != IKD_E_CONNECTION_LOST) {
        if (!s->errors++)
            snprintf(s->first_error, sizeof s->first_error, "%s (stream %s, seq %lld)",
                     ev->error->message, ev->stream ? ev->stream : "-", ev->seq);
    } else if (ev->kind == IKD_EV_SOLUTION) {
        if (s->solutions < 64)
            s->sol_seq[s->solutions] = ev->seq;
        s->solutions++;
        if (s->sent &&
            (ev->seq < 0 || ev->seq >= MAX_SEQ || !(*s->sent)[stream_ix(ev->stream)][ev->seq]))
            s->answered_unsent = true;
    } else if (ev->kind == IKD_EV_PATH_END) {
        s->ends++;
        s->end_seq = ev->seq;
        s->end_sent = ev->sent;
        s->end_completed = ev->completed;
    } else if (ev->kind == IKD_EV_TICK) {
        s->ticks++;
        s->last_tick = ev->tick->seq;
    }
}

static ikd_conn *connect_ws(seen *s, bool reconnect)
{
    char url[160];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", daemon_port);
    ikd_conn_opts o = {.url = url, .on_event = on_event, .user = s, .reconnect = reconnect};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    return c;
}

static void open_stream(ikd_conn *c, const char *name, const char *chain, const char *options)
{
    ikd_error e;
    ikd_chain ch = {.json = chain};
    ck_assert_msg(ikd_stream_open_wait(c, name, &ch, NULL, options, WAIT_MS, &e) == 0, "%s",
                  e.message);
}

START_TEST(path_ended_before_an_older_solution)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = connect_ws(&s, false);
    char *arm = arm_chain();
    open_stream(c, "arm", arm, "{\"solver\":\"numeric\"}");
    free(arm);
    ikd_error e;
    ikd_target t1, t3, w[2];
    arm_target(0, &t1);
    arm_target(1, &w[0]);
    arm_target(2, &w[1]);
    arm_target(3, &t3);
    /* queued together, read by ikd in one go: seq 1 solves on the pool
     * while the path (seq 2) waits, and seq 3 cuts the path */
    ck_assert_int_eq(ikd_stream_target(c, "arm", IKD_SEQ_AUTO, &t1, NULL, NULL, &e), 0);
    ck_assert_int_eq(ikd_stream_path(c, "arm", IKD_SEQ_AUTO, w, 2, 100, 0.2, NULL, &e), 0);
    ck_assert_int_eq(ikd_stream_target(c, "arm", IKD_SEQ_AUTO, &t3, NULL, NULL, &e), 0);
    for (int i = 0; i < WAIT_MS / 10 && !(s.ends && s.solutions >= 2) && !s.errors; i++)
        ikd_conn_poll(c, 10);
    ck_assert_msg(s.errors == 0, "refused: %s", s.first_error);
    ck_assert_int_eq(s.solutions, 2);
    ck_assert_int_eq(s.sol_seq[0], 1);
    ck_assert_int_eq(s.sol_seq[1], 3);
    ck_assert_int_eq(s.ends, 1);
    ck_assert_int_eq(s.end_seq, 2);
    ck_assert_int_eq(s.end_sent, 0);
    ck_assert(!s.end_completed);
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

static unsigned rnd_state = 12345;
static double rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (double)(rnd_state >> 1) / 2147483648.0;
}

static void random_mix(bool binary, bool restart)
{
    daemon_start(0, NULL);
    int port = daemon_port;
    static bool sent[2][MAX_SEQ];
    memset(sent, 0, sizeof sent);
    seen s = {.sent = &sent};
    ikd_conn *c = connect_ws(&s, restart);
    ikd_conn_set_binary_ticks(c, binary);
    char *arm = arm_chain();
    open_stream(c, "arm", arm, "{\"solver\":\"numeric\"}");
    free(arm);
    open_stream(c, "leg", LEG, "{\"solver\":\"two_bone\"}");
    ikd_error e;
    long long q[2] = {0, 0}; /* the last seq of each stream */
    long long tick = 0;
    rnd_state = 12345;
    for (int i = 0; i < 1500; i++) {
        double x = rnd();
        int k = rnd() < 0.5 ? 0 : 1;
        const char *name = k ? "leg" : "arm";
        ikd_target t, w[3];
        (k ? leg_target : arm_target)(i, &t);
        if (restart && i == 700) {
            /* ikd restarts on the same port: dialled again, streams reopened */
            ck_assert_int_eq(daemon_stop(), 0);
            const char *const none[] = {NULL};
            daemon_start(port, none);
        }
        if (x < 0.4) {
            if (ikd_stream_target(c, name, ++q[k], &t, NULL, NULL, &e) == 0 || !restart)
                sent[k][q[k]] = true;
        } else if (x < 0.6) {
            for (int j = 0; j < 3; j++)
                (k ? leg_target : arm_target)(i + j, &w[j]);
            if (ikd_stream_path(c, name, ++q[k], w, 3, 1000, 0.02 + 0.05 * rnd(), NULL, &e) == 0 ||
                !restart)
                sent[k][q[k]] = true;
        } else if (x < 0.85) {
            ikd_target ta, tl;
            arm_target(i, &ta);
            leg_target(i, &tl);
            ck_assert_int_eq(ikd_tick_begin(c, ++tick, &e), 0);
            ck_assert_int_eq(ikd_tick_add(c, "arm", &ta, NULL, ++q[0], &e), 0);
            ck_assert_int_eq(ikd_tick_add(c, "leg", &tl, NULL, ++q[1], &e), 0);
            if (ikd_tick_send(c, &e) == 0 || !restart)
                sent[0][q[0]] = sent[1][q[1]] = true;
            else
                ikd_tick_begin(c, tick, &e); /* discards the tick not sent */
        } else {
            ikd_conn_poll(c, (int)(rnd() * 5));
        }
        ck_assert(q[0] < MAX_SEQ - 2 && q[1] < MAX_SEQ - 2);
    }
    /* a last tick, answered after everything else */
    ikd_target ta, tl;
    arm_target(0, &ta);
    leg_target(0, &tl);
    ck_assert_int_eq(ikd_tick_begin(c, ++tick, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "arm", &ta, NULL, ++q[0], &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "leg", &tl, NULL, ++q[1], &e), 0);
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    ikd_tick *last = NULL;
    ck_assert_msg(ikd_tick_wait(c, tick, WAIT_MS, &last, &e) == 0, "%s", e.message);
    ikd_tick_free(last);
    ck_assert_msg(s.errors == 0, "%d refused, the first: %s", s.errors, s.first_error);
    ck_assert(!s.answered_unsent);
    /* most are replaced by newer ones: ikd reads them faster than it solves
     * (the more so under a sanitizer) */
    ck_assert_msg(s.solutions + s.ticks >= 5, "%d solutions, %d tick answers", s.solutions,
                  s.ticks);
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}

START_TEST(random_mix_json_ticks)
{
    random_mix(false, false);
}
END_TEST

START_TEST(random_mix_binary_ticks)
{
    random_mix(true, false);
}
END_TEST

START_TEST(random_mix_across_a_restart)
{
    random_mix(true, true);
}
END_TEST

/* Until solution seq of stream name, or an error. */
static void wait_solution(ikd_conn *c, seen *s, int before)
{
    for (int i = 0; i < WAIT_MS / 10 && s->solutions == before && !s->errors; i++)
        ikd_conn_poll(c, 10);
}

START_TEST(explicit_seqs_again_from_1_after_a_restart)
{
    daemon_start(0, NULL);
    int port = daemon_port;
    seen s = {0};
    ikd_conn *c = connect_ws(&s, true);
    open_stream(c, "leg", LEG, "{\"solver\":\"two_bone\"}");
    ikd_error e;
    ikd_target t, w[2];
    for (int round = 0; round < 2; round++) {
        /* targets 1..5, a path 6 run to its end, a tick 1 with the leg's 7 */
        for (long long q = 1; q <= 5; q++) {
            int before = s.solutions;
            leg_target((int)q, &t);
            ck_assert_int_eq(ikd_stream_target(c, "leg", q, &t, NULL, NULL, &e), 0);
            wait_solution(c, &s, before);
            ck_assert_msg(s.errors == 0, "round %d, seq %lld: %s", round, q, s.first_error);
            ck_assert_int_eq(s.sol_seq[(s.solutions - 1) % 64], q);
        }
        leg_target(6, &w[0]);
        leg_target(7, &w[1]);
        int ends = s.ends;
        ck_assert_int_eq(ikd_stream_path(c, "leg", 6, w, 2, 100, 0.05, NULL, &e), 0);
        for (int i = 0; i < WAIT_MS / 10 && s.ends == ends && !s.errors; i++)
            ikd_conn_poll(c, 10);
        ck_assert_msg(s.errors == 0, "round %d, path: %s", round, s.first_error);
        ck_assert_int_eq(s.end_seq, 6);
        ck_assert(s.end_completed);
        leg_target(8, &t);
        ck_assert_int_eq(ikd_tick_begin(c, 1, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "leg", &t, NULL, 7, &e), 0);
        ck_assert_int_eq(ikd_tick_send(c, &e), 0);
        ikd_tick *tk = NULL;
        ck_assert_msg(ikd_tick_wait(c, 1, WAIT_MS, &tk, &e) == 0, "round %d, tick: %s", round,
                      e.message);
        ck_assert_int_eq(tk->entries[0].seq, 7);
        ikd_tick_free(tk);
        if (round == 0) {
            /* ikd restarts on the same port: the connection is dialled
             * again and the leg reopened */
            ck_assert_int_eq(daemon_stop(), 0);
            const char *const none[] = {NULL};
            daemon_start(port, none);
            int opened = 0;
            for (int i = 0; i < WAIT_MS / 10 && !opened; i++) {
                ikd_conn_poll(c, 10);
                ikd_conn_stats st;
                ikd_conn_get_stats(c, &st);
                opened = st.reconnects > 0 && ikd_conn_is_open(c);
            }
            ck_assert(opened);
            s.errors = 0; /* the loss's own connection_lost errors, if any */
        }
    }
    ck_assert_int_eq(s.errors, 0);
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

/* Seqs at the edges of what ikd takes (magnitude up to 2^53 - 1), 0 and
 * negative ones, on targets, paths and ticks (JSON and binary). */
START_TEST(explicit_seqs_at_the_edges)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = connect_ws(&s, false);
    open_stream(c, "leg", LEG, "{\"solver\":\"two_bone\"}");
    open_stream(c, "big", LEG, "{\"solver\":\"two_bone\"}");
    ikd_error e;
    const long long max = 9007199254740991LL; /* 2^53 - 1 */
    const long long seqs[] = {0, -5, -max, max - 2};
    ikd_target t, w[2];
    for (size_t k = 0; k < sizeof seqs / sizeof *seqs; k++) {
        int before = s.solutions;
        leg_target((int)k, &t);
        ck_assert_int_eq(ikd_stream_target(c, "leg", seqs[k], &t, NULL, NULL, &e), 0);
        wait_solution(c, &s, before);
        ck_assert_msg(s.errors == 0, "seq %lld: %s", seqs[k], s.first_error);
        ck_assert_int_eq(s.sol_seq[(s.solutions - 1) % 64], seqs[k]);
    }
    /* in increasing order on their own stream: checked, and taken */
    int before = s.solutions;
    leg_target(1, &t);
    ck_assert_int_eq(ikd_stream_target(c, "big", max - 1, &t, NULL, NULL, &e), 0);
    wait_solution(c, &s, before);
    leg_target(2, &w[0]);
    leg_target(3, &w[1]);
    ck_assert_int_eq(ikd_stream_path(c, "big", max, w, 2, 100, 0.05, NULL, &e), 0);
    for (int i = 0; i < WAIT_MS / 10 && !s.ends && !s.errors; i++)
        ikd_conn_poll(c, 10);
    ck_assert_msg(s.errors == 0, "%s", s.first_error);
    ck_assert_int_eq(s.end_seq, max);
    ck_assert(s.end_completed);
    for (int binary = 0; binary < 2; binary++) {
        ikd_conn_set_binary_ticks(c, binary);
        const long long tseqs[] = {-max, 0, max};
        for (size_t k = 0; k < 3; k++) {
            leg_target((int)k, &t);
            ck_assert_int_eq(ikd_tick_begin(c, tseqs[k], &e), 0);
            ck_assert_int_eq(ikd_tick_add(c, "leg", &t, NULL, tseqs[2 - k], &e), 0);
            ck_assert_int_eq(ikd_tick_add(c, "big", &t, NULL, IKD_SEQ_AUTO, &e), 0);
            ck_assert_int_eq(ikd_tick_is_binary(c), binary);
            ck_assert_int_eq(ikd_tick_send(c, &e), 0);
            ikd_tick *tk = NULL;
            ck_assert_msg(ikd_tick_wait(c, tseqs[k], WAIT_MS, &tk, &e) == 0, "tick %lld: %s",
                          tseqs[k], e.message);
            ck_assert_int_eq(tk->seq, tseqs[k]);
            ck_assert_uint_eq(tk->count, 2);
            ck_assert_int_eq(tk->entries[0].seq, tseqs[2 - k]);
            ck_assert_int_eq(tk->entries[1].seq, tseqs[k]);
            ck_assert_ptr_nonnull(tk->entries[0].result);
            ikd_tick_free(tk);
        }
    }
    ck_assert_msg(s.errors == 0, "%s", s.first_error);
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

/* A program that gives every tick the same seq (it reads the answers by
 * their entries' streams): ticks of two targets and of one alternate,
 * queued faster than ikd solves them, so that ikd replaces many. */
START_TEST(ticks_of_one_seq_replaced)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = connect_ws(&s, false);
    char *arm = arm_chain();
    open_stream(c, "arm", arm, "{\"solver\":\"numeric\"}");
    free(arm);
    open_stream(c, "leg", LEG, "{\"solver\":\"two_bone\"}");
    ikd_error e;
    for (int i = 0; i < 200; i++) {
        ikd_target ta, tl;
        arm_target(i, &ta);
        leg_target(i, &tl);
        ck_assert_int_eq(ikd_tick_begin(c, 7, &e), 0);
        if (i % 2 == 0)
            ck_assert_int_eq(ikd_tick_add(c, "arm", &ta, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "leg", &tl, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_send(c, &e), 0);
        if (i % 20 == 19)
            ikd_conn_poll(c, 1);
        /* one answered before most are sent: more than one comes */
        for (int k = 0; i == 19 && k < WAIT_MS / 10 && !s.ticks; k++)
            ikd_conn_poll(c, 10);
    }
    /* a last tick of another seq, answered after all of them */
    ikd_target tl;
    leg_target(0, &tl);
    ck_assert_int_eq(ikd_tick_begin(c, 8, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "leg", &tl, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    for (int i = 0; i < WAIT_MS / 10 && !s.errors && s.last_tick != 8; i++)
        ikd_conn_poll(c, 10);
    ck_assert_msg(s.errors == 0, "%d refused, the first: %s", s.errors, s.first_error);
    ck_assert_int_eq(s.last_tick, 8);
    ck_assert_int_gt(s.ticks, 1);
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_answers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, path_ended_before_an_older_solution);
    tcase_add_test(tc, random_mix_json_ticks);
    tcase_add_test(tc, random_mix_binary_ticks);
    tcase_add_test(tc, random_mix_across_a_restart);
    tcase_add_test(tc, explicit_seqs_again_from_1_after_a_restart);
    tcase_add_test(tc, ticks_of_one_seq_replaced);
    tcase_add_test(tc, explicit_seqs_at_the_edges);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
