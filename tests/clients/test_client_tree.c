/*
 * test_client_tree.c: libikdclient against a live ikd as a robot
 * controller or a game server drives it on tree streams (several tips over
 * shared joints, proto/STREAM.md "Trees"), paths of tree waypoints, and
 * ticks sent faster than ikd answers them while the program does not read.
 *
 *   - Ticks of a two-armed tree (its targets as JSON: ikd_target.json) and
 *     a leg: one entry per target in order, each its stream's seq, the
 *     tree's answer with one tip per tip of the chain, each tip the test's
 *     own forward kinematics of the joints answered and on its target.
 *   - A path of tree waypoints: every sample in order (index 0 ..
 *     count-1), each the FK of its joints, the last on the last waypoint,
 *     and PATH_END's counts agreeing with the samples seen.
 *   - Ticks queued without calling ikd_conn_process (the program busy)
 *     until the send queue refuses one (IKD_E_SEND_QUEUE_FULL, a small
 *     max_send_queue) or 3,000 are queued, then read: every answer's seq
 *     increasing and one that was sent, every tick and every stream's
 *     target accounted for exactly once (1 + skipped), the connection's
 *     memory bounded by its limits, and the connection still open.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ikd/client.h"
#include "tests/clients/daemon.h"

#define WAIT_MS 10000

/* the two-armed robot of proto/STREAM.md, "Trees" */
static const char ARMS[] =
    "{\"kind\":\"tree\",\"tips\":[\"l_tool\",\"r_tool\"],\"joints\":["
    "{\"name\":\"waist\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0,0.4]},"
    "\"axis\":[0,0,1],\"limits\":{\"lower\":-1.5,\"upper\":1.5}},"
    "{\"name\":\"l_shoulder\",\"parent\":\"waist\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0."
    "2,0.3]},"
    "\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},"
    "{\"name\":\"l_elbow\",\"parent\":\"l_shoulder\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0."
    "3,0,0]},"
    "\"axis\":[0,1,0],\"limits\":{\"lower\":0,\"upper\":2.5}},"
    "{\"name\":\"l_tool\",\"parent\":\"l_elbow\",\"type\":\"fixed\","
    "\"origin\":{\"xyz\":[0.25,0,0]}},"
    "{\"name\":\"r_shoulder\",\"parent\":\"waist\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,-0."
    "2,0.3]},"
    "\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},"
    "{\"name\":\"r_elbow\",\"parent\":\"r_shoulder\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0."
    "3,0,0]},"
    "\"axis\":[0,1,0],\"limits\":{\"lower\":0,\"upper\":2.5}},"
    "{\"name\":\"r_tool\",\"parent\":\"r_elbow\",\"type\":\"fixed\","
    "\"origin\":{\"xyz\":[0.25,0,0]}}]}";
static const char LEG[] = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}";
static const double SEED[5] = {0.3, 0.4, 0.9, -0.2, 1.2};

/* ---- the test's own forward kinematics of ARMS -------------------------- */

/* r = r * (rotation by q about the y axis, or z when z) */
static void turn(double r[3][3], double q, bool z)
{
    double c = cos(q), s = sin(q), m[3][3];
    for (int i = 0; i < 3; i++) {
        if (z) {
            m[i][0] = r[i][0] * c + r[i][1] * s;
            m[i][1] = -r[i][0] * s + r[i][1] * c;
            m[i][2] = r[i][2];
        } else {
            m[i][0] = r[i][0] * c - r[i][2] * s;
            m[i][1] = r[i][1];
            m[i][2] = r[i][0] * s + r[i][2] * c;
        }
    }
    memcpy(r, m, sizeof m);
}

static void step(double r[3][3], const double p[3], const double o[3], double out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = p[i] + r[i][0] * o[0] + r[i][1] * o[1] + r[i][2] * o[2];
}

/* Both tips' positions (l_tool, r_tool) for joints q[5]. */
static void arms_tips(const double *q, double tips[2][3])
{
    double w[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, wp[3];
    static const double zero[3], waist[3] = {0, 0, 0.4};
    step(w, zero, waist, wp);
    turn(w, q[0], true);
    for (int arm = 0; arm < 2; arm++) {
        double r[3][3], p[3], e[3];
        memcpy(r, w, sizeof r);
        double sh[3] = {0, arm ? -0.2 : 0.2, 0.3}, up[3] = {0.3, 0, 0}, tool[3] = {0.25, 0, 0};
        step(r, wp, sh, p);
        turn(r, q[1 + 2 * arm], false);
        step(r, p, up, e);
        turn(r, q[2 + 2 * arm], false);
        step(r, e, tool, tips[arm]);
    }
}

static double dist3(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

/* Joints moving with i near the seed, and their tips as a tree target. */
static void tree_target(int i, double tips[2][3], char *json, size_t cap)
{
    double q[5];
    for (int k = 0; k < 5; k++)
        q[k] = SEED[k] + 0.02 * sin(0.1 * i + k);
    arms_tips(q, tips);
    snprintf(json, cap,
             "{\"tips\":{\"l_tool\":{\"position\":[%.17g,%.17g,%.17g]},"
             "\"r_tool\":{\"position\":[%.17g,%.17g,%.17g]}}}",
             tips[0][0], tips[0][1], tips[0][2], tips[1][0], tips[1][1], tips[1][2]);
}

/* A tree answer: two tips, each the FK of the joints; on its target when
 * success (returned), else its claimed error the FK's distance. */
static bool check_tree(const ikd_result *r, double tips[2][3], const char *what)
{
    ck_assert_msg(r->joint_count == 5, "%s: %zu joints", what, r->joint_count);
    ck_assert_msg(r->tip_count == 2, "%s: %zu tips", what, r->tip_count);
    double fk[2][3];
    arms_tips(r->joints, fk);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(dist3(r->tips[i].position, fk[i]) < 1e-6, "%s: tip %d not the FK", what, i);
        double d = dist3(fk[i], tips[i]);
        if (r->status == IKD_STATUS_SUCCESS)
            ck_assert_msg(d < 1e-3, "%s: tip %d off its target by %g", what, i, d);
        else
            ck_assert_msg(fabs(r->tips[i].position_error - d) < 1e-6, "%s: tip %d claims %g, is %g",
                          what, i, r->tips[i].position_error, d);
    }
    return r->status == IKD_STATUS_SUCCESS;
}

static void leg_target(int i, double p[3])
{
    p[0] = 0.2, p[1] = 0.1 + 0.001 * (i % 50), p[2] = 0.25;
}

static void check_leg(const ikd_result *r, const double *t, const char *what)
{
    ck_assert_msg(r->status == IKD_STATUS_SUCCESS, "%s: leg %s", what, r->status_text);
    ck_assert_msg(r->position_count == 3, "%s", what);
    ck_assert_msg(dist3(r->positions + 6, t) < 1e-6, "%s: the foot off its target", what);
    ck_assert_msg(fabs(dist3(r->positions, r->positions + 3) -
                       dist3((double[]){0, 0, 1}, (double[]){0.1, 0, 0.55})) < 1e-6,
                  "%s: the thigh", what);
}

static ikd_conn *connect_ws(ikd_conn_opts *o)
{
    char url[160];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", daemon_port);
    o->url = url;
    ikd_error e;
    ikd_conn *c = ikd_conn_new(o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    return c;
}

static void open_both(ikd_conn *c, const char *arms_options)
{
    ikd_error e;
    ikd_chain arms = {.json = ARMS}, leg = {.json = LEG};
    ikd_seed seed = {.values = SEED, .count = 5, .width = 1};
    ck_assert_msg(ikd_stream_open_wait(c, "arms", &arms, &seed, arms_options, WAIT_MS, &e) == 0,
                  "%s", e.message);
    ck_assert_msg(
        ikd_stream_open_wait(c, "leg", &leg, NULL, "{\"solver\":\"two_bone\"}", WAIT_MS, &e) == 0,
        "%s", e.message);
}

START_TEST(tree_ticks)
{
    daemon_start(0, NULL);
    ikd_conn_opts o = {0};
    ikd_conn *c = connect_ws(&o);
    open_both(c, NULL);
    ikd_error e;
    for (int i = 0; i < 30; i++) {
        double tips[2][3], lt[3];
        char json[512], what[32];
        tree_target(i, tips, json, sizeof json);
        leg_target(i, lt);
        ikd_target tt = {.json = json}, tl = {.position = {lt[0], lt[1], lt[2]}};
        ck_assert_int_eq(ikd_tick_begin(c, 100 + i, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "arms", &tt, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "leg", &tl, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_send(c, &e), 0);
        ikd_tick *t = NULL;
        ck_assert_msg(ikd_tick_wait(c, 100 + i, WAIT_MS, &t, &e) == 0, "%s", e.message);
        snprintf(what, sizeof what, "tick %d", 100 + i);
        ck_assert_int_eq(t->seq, 100 + i);
        ck_assert_uint_eq(t->count, 2);
        ck_assert_str_eq(t->entries[0].stream, "arms");
        ck_assert_str_eq(t->entries[1].stream, "leg");
        ck_assert_int_eq(t->entries[0].seq, 100 + i);
        ck_assert_ptr_nonnull(t->entries[0].result);
        ck_assert_msg(check_tree(t->entries[0].result, tips, what), "%s: not solved", what);
        check_leg(t->entries[1].result, lt, what);
        ikd_tick_free(t);
    }
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

typedef struct path_seen {
    int samples, ends, bad_order, not_fk;
    long long last_index, count, end_sent, end_skipped, end_count;
    bool completed;
    double last_tips[2][3];
    double last_fk[2][3];
} path_seen;

static void on_path(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    path_seen *s = user;
    if (ev->kind == IKD_EV_SOLUTION && ev->has_index) {
        s->bad_order += ev->index <= s->last_index;
        s->last_index = ev->index;
        s->count = ev->count;
        s->samples++;
        const ikd_result *r = ev->result;
        if (r->joint_count != 5 || r->tip_count != 2) {
            s->not_fk++;
            return;
        }
        arms_tips(r->joints, s->last_fk);
        for (int i = 0; i < 2; i++) {
            s->not_fk += dist3(r->tips[i].position, s->last_fk[i]) >= 1e-6;
            memcpy(s->last_tips[i], r->tips[i].position, sizeof s->last_tips[i]);
        }
    } else if (ev->kind == IKD_EV_PATH_END) {
        s->ends++;
        s->end_sent = ev->sent;
        s->end_count = ev->count;
        s->end_skipped = ev->skipped;
        s->completed = ev->completed;
    }
}

START_TEST(tree_path)
{
    daemon_start(0, NULL);
    path_seen s = {.last_index = -1};
    ikd_conn_opts o = {.on_event = on_path, .user = &s};
    ikd_conn *c = connect_ws(&o);
    open_both(c, NULL);
    ikd_error e;
    char json[3][512];
    double tips[3][2][3];
    ikd_target w[3];
    for (int k = 0; k < 3; k++) {
        tree_target(10 * k, tips[k], json[k], sizeof json[k]);
        w[k] = (ikd_target){.json = json[k]};
    }
    ck_assert_msg(ikd_stream_path(c, "arms", IKD_SEQ_AUTO, w, 3, 100, 0.3, NULL, &e) == 0, "%s",
                  e.message);
    for (int i = 0; i < WAIT_MS / 10 && !s.ends; i++)
        ikd_conn_poll(c, 10);
    ck_assert_int_eq(s.ends, 1);
    ck_assert(s.completed);
    ck_assert_int_eq(s.bad_order, 0);
    ck_assert_int_eq(s.not_fk, 0);
    ck_assert_int_eq(s.end_sent, s.samples);
    ck_assert_int_eq(s.end_sent + s.end_skipped, s.end_count);
    ck_assert_int_eq(s.last_index, s.end_count - 1);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(dist3(s.last_fk[i], tips[2][i]) < 1e-3, "the last sample's tip %d", i);
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

typedef struct flood {
    int answers, bad;
    long long last_seq, accounted, stream_acc[2], stream_seq[2];
} flood;

static void on_flood(ikd_conn *c, const ikd_event *ev, void *user)
{
    (void)c;
    flood *f = user;
    if (ev->kind == IKD_EV_ERROR) {
        f->bad++;
        return;
    }
    if (ev->kind != IKD_EV_TICK)
        return;
    const ikd_tick *t = ev->tick;
    f->bad += t->seq <= f->last_seq || t->count != 2;
    f->last_seq = t->seq;
    f->accounted += 1 + t->skipped;
    f->answers++;
    for (size_t i = 0; i < t->count && i < 2; i++) {
        const ikd_tick_entry *x = &t->entries[i];
        f->bad += strcmp(x->stream, i ? "leg" : "arms") != 0 || !x->result;
        /* a tick's own seq for each target: its stream's targets replaced
         * are counted in the entry's skipped */
        f->stream_acc[i] += 1 + x->skipped;
        f->stream_seq[i] = x->seq;
    }
}

START_TEST(ticks_faster_than_answers_unread)
{
    daemon_start(0, NULL);
    flood f = {0};
    ikd_conn_opts o = {.on_event = on_flood, .user = &f, .max_send_queue = 256 * 1024};
    ikd_conn *c = connect_ws(&o);
    open_both(c, "{\"solver\":\"numeric\"}");
    ikd_error e;
    int sent = 0, refused = 0;
    long long last = 0;
    /* the program is busy: it queues ticks and never runs the connection */
    for (int i = 0; i < 3000; i++) {
        double tips[2][3], lt[3];
        char json[512];
        tree_target(i, tips, json, sizeof json);
        leg_target(i, lt);
        ikd_target tt = {.json = json}, tl = {.position = {lt[0], lt[1], lt[2]}};
        ck_assert_int_eq(ikd_tick_begin(c, i + 1, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "arms", &tt, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_add(c, "leg", &tl, NULL, IKD_SEQ_AUTO, &e), 0);
        int rc = ikd_tick_send(c, &e);
        if (rc == IKD_E_SEND_QUEUE_FULL) {
            refused++;
            break; /* a control loop drops this one (or waits) */
        }
        ck_assert_msg(rc == 0, "%s", e.message);
        sent++;
        last = i + 1;
    }
    ikd_conn_stats st;
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_le(st.send_queued, 256 * 1024);
    ck_assert_msg(refused == 1, "the send queue (256 KiB) took %d ticks", sent);
    /* now it reads */
    for (int i = 0; i < 3 * WAIT_MS / 10 && f.last_seq != last; i++)
        ikd_conn_poll(c, 10);
    ck_assert_int_eq(f.last_seq, last);
    ck_assert_int_eq(f.bad, 0);
    ck_assert_msg(f.accounted == sent, "%d answers account for %lld ticks of %d sent", f.answers,
                  f.accounted, sent);
    ck_assert_int_eq(f.stream_acc[0], sent);
    ck_assert_int_eq(f.stream_acc[1], sent);
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_eq(st.send_queued, 0);
    /* the decoder keeps at most its arena between messages (8 MiB) */
    ck_assert_msg(st.memory_bytes < 16u << 20, "%zu bytes held", st.memory_bytes);
    ck_assert(ikd_conn_is_open(c));
    ikd_conn_free(c);
    ck_assert_int_eq(daemon_stop(), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_tree");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, tree_ticks);
    tcase_add_test(tc, tree_path);
    tcase_add_test(tc, ticks_faster_than_answers_unread);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
