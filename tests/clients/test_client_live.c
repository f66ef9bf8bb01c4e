/*
 * test_client_live.c: libikdclient against the real daemon (each test
 * starts its own ikd; tests/clients/daemon.h).
 *
 * Every answer is checked by geometry or forward kinematics computed here,
 * not by the client's or ikd's own account: a two-bone leg keeps its hip
 * and both bone lengths and puts its foot on the target; a three-joint arm
 * registered as a "joints" chain puts its tool on the target by this
 * file's own forward kinematics, within its joint limits.
 *
 * HTTP: solve and batch; register, solve by id, describe, delete; the
 * client registering a chain again when ikd answers unknown_chain (the
 * chain deleted behind its back); errors with code, status and path; the
 * bearer token. Streams: a stream of several targets driven by the test's
 * own poll() loop on ikd_conn_fd / ikd_conn_events / ikd_conn_timeout_ms;
 * 200 targets sent at once (every one answered or counted skipped); a tick
 * with per-stream results and errors in order; an unknown_type error
 * reaching the callback, and failing a blocking helper when there is no
 * callback; a stream solved 10,000 times without its solutions being kept
 * (memory flat); the send queue bounded; a message over max_message; a
 * path and close; the connection dialled again after ikd restarts, its
 * stream reopened and a target queued meanwhile answered; a polite close.
 */
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <time.h>

#include "tests/clients/daemon.h"
#include "tests/clients/rigs.h"
#include <ikd/client.h>

#define WAIT_MS 10000

/* ---- events -------------------------------------------------------------- */

typedef struct seen {
    int connected, opened, solutions, ticks, errors, messages, disconnected, closed, path_end;
    long long path_index, path_sent, path_count;
    bool path_completed;
    char lost_message[512];
    long long last_seq, skipped;
    int last_error;
    char last_error_wire[40], last_error_path[256], last_error_stream[72];
    int close_code;
    bool will_reconnect;
    bool checked_leg; /* each solution checked against targets[] */
    double (*targets)[3];
    size_t ntargets;
    ikd_tick *tick; /* a copy of the last tick */
    int last_disconnect_code;
} seen;

static void on_event(ikd_conn *c, const ikd_event *ev, void *user)
{
    seen *s = user;
    switch (ev->kind) {
    case IKD_EV_CONNECTED:
        s->connected++;
        break;
    case IKD_EV_OPENED:
        s->opened++;
        ck_assert_ptr_nonnull(ev->chain_id);
        break;
    case IKD_EV_SOLUTION:
        s->solutions++;
        if (ev->has_index) { /* a path's sample: the path's seq, sample after sample */
            ck_assert_int_eq(ev->index, s->path_index++);
            ck_assert_int_gt(ev->count, ev->index);
            s->last_seq = ev->seq;
            break;
        }
        ck_assert_msg(ev->seq > s->last_seq, "seq %lld after %lld", ev->seq, s->last_seq);
        s->skipped += ev->skipped;
        ck_assert_int_eq(ev->skipped, ev->seq - s->last_seq - 1);
        s->last_seq = ev->seq;
        if (s->targets) {
            ck_assert(ev->seq >= 1 && (size_t)ev->seq <= s->ntargets);
            check_leg(ev->result, s->targets[ev->seq - 1]);
        }
        break;
    case IKD_EV_TICK:
        s->ticks++;
        ikd_tick_free(s->tick);
        s->tick = ikd_tick_copy(ev->tick);
        break;
    case IKD_EV_ERROR:
        s->errors++;
        s->last_error = ev->error->code;
        snprintf(s->last_error_wire, sizeof s->last_error_wire, "%s", ev->error->wire_code);
        snprintf(s->last_error_path, sizeof s->last_error_path, "%s", ev->error->path);
        snprintf(s->last_error_stream, sizeof s->last_error_stream, "%s", ev->error->stream);
        if (ev->error->code == IKD_E_CONNECTION_LOST)
            snprintf(s->lost_message, sizeof s->lost_message, "%s", ev->error->message);
        break;
    case IKD_EV_MESSAGE:
        s->messages++;
        break;
    case IKD_EV_DISCONNECTED:
        s->disconnected++;
        s->close_code = ev->close_code;
        s->will_reconnect = ev->will_reconnect;
        s->last_disconnect_code = ev->error->code;
        break;
    case IKD_EV_CLOSED:
        s->closed++;
        break;
    case IKD_EV_PATH_END:
        s->path_end++;
        s->path_sent = ev->sent;
        s->path_count = ev->count;
        s->path_completed = ev->completed;
        break;
    }
}

static ikd_conn *conn_new(seen *s, const char *token)
{
    ikd_conn_opts o = {
        .url = daemon_url, .token = token, .on_event = s ? on_event : NULL, .user = s};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    return c;
}

static int64_t test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls until cond holds (or fails the test after WAIT_MS). */
#define POLL_UNTIL(c, cond)                                                                        \
    do {                                                                                           \
        int64_t until_ = test_now() + WAIT_MS;                                                     \
        while (!(cond)) {                                                                          \
            ck_assert_msg(test_now() < until_, "timed out waiting for: " #cond);                   \
            ikd_conn_poll((c), 50);                                                                \
        }                                                                                          \
    } while (0)

static ikd_client *client_new(const char *token)
{
    ikd_client_opts o = {.url = daemon_url, .token = token};
    ikd_error e;
    ikd_client *c = ikd_client_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    return c;
}

static void teardown(void)
{
    ck_assert_int_eq(daemon_stop(), 0);
}

/* ---- HTTP ---------------------------------------------------------------- */

START_TEST(http_solve_and_batch)
{
    daemon_start(0, NULL);
    ikd_client *cl = client_new(NULL);
    ikd_chain leg = {.json = LEG};
    ikd_error e;
    ikd_answer *a;
    double t[3];
    leg_target(1, t);
    ikd_target target = {.position = {t[0], t[1], t[2]}};
    ck_assert_msg(ikd_solve(cl, &leg, &target, NULL, NULL, &a, &e) == 0, "%s", e.message);
    ck_assert_str_eq(a->solver, "two_bone");
    ck_assert_uint_eq(a->count, 1);
    check_leg(&a->results[0], t);
    ikd_answer_free(a);

    enum { N = 40 };
    ikd_target ts[N];
    double want[N][3];
    for (int i = 0; i < N; i++) {
        leg_target(i + 2, want[i]);
        if (i == 7) /* out of reach */
            want[i][0] = want[i][1] = 0, want[i][2] = -1;
        ts[i] = (ikd_target){.position = {want[i][0], want[i][1], want[i][2]}};
    }
    ck_assert_msg(ikd_solve_batch(cl, &leg, ts, N, NULL, "{\"solver\":\"two_bone\"}", &a, &e) == 0,
                  "%s", e.message);
    ck_assert_uint_eq(a->count, N);
    ck_assert(a->has_counts);
    ck_assert_int_eq(a->counts_success, N - 1);
    ck_assert_int_eq(a->counts_no_ik_solution, 1);
    for (int i = 0; i < N; i++) {
        if (i == 7) {
            ck_assert_int_eq(a->results[i].status, IKD_STATUS_NO_IK_SOLUTION);
            ck_assert_str_eq(a->results[i].cause, "out_of_reach");
            ck_assert_int_eq(a->results[i].code, -31);
            continue;
        }
        check_leg(&a->results[i], want[i]);
    }
    ikd_answer_free(a);
    ikd_client_free(cl);
}
END_TEST

START_TEST(http_register_solve_by_id)
{
    daemon_start(0, NULL);
    ikd_client *cl = client_new(NULL);
    ikd_error e;
    ikd_chain_info *ci, *again;
    ck_assert_msg(ikd_chain_register(cl, ARM, &ci, &e) == 0, "%s", e.message);
    ck_assert(ci->created);
    ck_assert_str_eq(ci->kind, "joints");
    ck_assert_int_eq(ci->dof, 3);
    ck_assert_uint_eq(ci->joint_count, 3);
    ck_assert_str_eq(ci->joint_names[2], "elbow");
    ck_assert_double_eq(ci->joints[1].lower, -2);
    ck_assert_int_eq(ikd_chain_register(cl, ARM, &again, &e), 0);
    ck_assert(!again->created);
    ck_assert_str_eq(again->id, ci->id);
    ikd_chain_info_free(again);

    ikd_chain byid = {.id = ci->id};
    for (int i = 0; i < 10; i++) {
        double q[3] = {-2.5 + 0.5 * i, -1.2 + 0.25 * i, 1.9 - 0.4 * i}, t[3];
        arm_fk(q, t);
        ikd_target target = {.position = {t[0], t[1], t[2]}};
        ikd_answer *a;
        ck_assert_msg(ikd_solve(cl, &byid, &target, NULL, NULL, &a, &e) == 0, "%s", e.message);
        const ikd_result *r = &a->results[0];
        ck_assert_msg(r->status == IKD_STATUS_SUCCESS, "target %d: %s", i, r->status_text);
        ck_assert_uint_eq(r->joint_count, 3);
        double got[3];
        arm_fk(r->joints, got);
        for (int k = 0; k < 3; k++) {
            ck_assert_double_eq_tol(got[k], t[k], 1.1e-5);
            ck_assert(r->joints[k] >= ARM_LO[k] - 1e-12 && r->joints[k] <= ARM_HI[k] + 1e-12);
        }
        ck_assert_str_eq(a->joint_names[0], "pan");
        ikd_answer_free(a);
    }
    ikd_chain_info *got;
    ck_assert_int_eq(ikd_chain_get(cl, ci->id, &got, &e), 0);
    ck_assert_str_eq(got->id, ci->id);
    ck_assert_ptr_nonnull(strstr(got->text, "\"elbow\""));
    ikd_chain_info_free(got);
    ck_assert_int_eq(ikd_chain_delete(cl, ci->id, &e), 0);
    ck_assert_int_eq(ikd_chain_get(cl, ci->id, &got, &e), IKD_E_UNKNOWN_CHAIN);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(e.http_status, 404);
    ck_assert_str_eq(e.wire_code, "unknown_chain");
    ikd_chain_info_free(ci);
    ikd_client_free(cl);
}
END_TEST

START_TEST(http_registers_again_on_unknown_chain)
{
    daemon_start(0, NULL);
    ikd_client *a = client_new(NULL), *b = client_new(NULL);
    ikd_error e;
    ikd_chain_info *ci;
    ck_assert_int_eq(ikd_chain_register(a, LEG, &ci, &e), 0);
    /* the chain vanishes from ikd behind the client's back (a restarted
     * replica, an eviction) */
    char path[96];
    snprintf(path, sizeof path, "/v1/chains/%s", ci->id);
    int status = 0;
    ck_assert_int_eq(ikd_request(b, "DELETE", path, NULL, 0, &status, NULL, NULL, &e), 0);
    ck_assert_int_eq(status, 204);
    double t[3];
    leg_target(3, t);
    ikd_target target = {.position = {t[0], t[1], t[2]}};
    ikd_chain byid = {.id = ci->id};
    ikd_answer *ans;
    /* b never registered it: ikd's error, with its path */
    ck_assert_int_eq(ikd_solve(b, &byid, &target, NULL, NULL, &ans, &e), IKD_E_UNKNOWN_CHAIN);
    ck_assert_str_eq(e.path, "/chain_id");
    /* a did: it registers the text again and the solve succeeds */
    ck_assert_msg(ikd_solve(a, &byid, &target, NULL, NULL, &ans, &e) == 0, "%s", e.message);
    check_leg(&ans->results[0], t);
    ck_assert_str_eq(ans->chain_id, ci->id);
    ikd_answer_free(ans);
    ikd_chain_info_free(ci);
    ikd_client_free(a);
    ikd_client_free(b);
}
END_TEST

START_TEST(http_errors_name_their_member)
{
    daemon_start(0, NULL);
    ikd_client *cl = client_new(NULL);
    ikd_chain leg = {.json = LEG};
    ikd_target target = {.position = {0.2, 0.1, 0.25}};
    ikd_answer *a;
    ikd_error e;
    ck_assert_int_eq(ikd_solve(cl, &leg, &target, NULL, "{\"tolerance\":-1}", &a, &e),
                     IKD_E_INVALID_REQUEST);
    ck_assert_int_eq(e.http_status, 400);
    ck_assert_str_eq(e.path, "/options/tolerance");
    ck_assert_ptr_null(a);
    ikd_target bad = {.position = {0.2, NAN, 0.25}};
    ck_assert_int_eq(ikd_solve(cl, &leg, &bad, NULL, NULL, &a, &e), IKD_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(e.message, "target.position[1]"));
    char *solvers;
    ck_assert_int_eq(ikd_solvers(cl, &solvers, &e), 0);
    ck_assert_ptr_nonnull(strstr(solvers, "\"two_bone\""));
    ikd_text_free(solvers);
    ikd_client_free(cl);
    /* nobody listening */
    ikd_client_opts o = {.url = "http://127.0.0.1:1", .timeout_ms = 2000};
    ikd_client *none = ikd_client_new(&o, &e);
    ck_assert_int_eq(ikd_solve(none, &leg, &target, NULL, NULL, &a, &e), IKD_E_CONNECT);
    ikd_client_free(none);
}
END_TEST

START_TEST(bearer_token)
{
    const char *flags[] = {"--token", "s3cret", NULL};
    daemon_start(0, flags);
    ikd_chain leg = {.json = LEG};
    ikd_target target = {.position = {0.2, 0.1, 0.25}};
    ikd_answer *a;
    ikd_error e;
    ikd_client *anon = client_new(NULL), *ok = client_new("s3cret");
    ck_assert_int_eq(ikd_solve(anon, &leg, &target, NULL, NULL, &a, &e), IKD_E_UNAUTHORIZED);
    ck_assert_int_eq(e.http_status, 401);
    ck_assert_int_eq(ikd_solve(ok, &leg, &target, NULL, NULL, &a, &e), 0);
    ikd_answer_free(a);
    ikd_client_free(anon);
    ikd_client_free(ok);

    ikd_conn *c = conn_new(NULL, NULL);
    ck_assert_int_eq(ikd_conn_wait_connected(c, WAIT_MS, &e), IKD_E_UNAUTHORIZED);
    ck_assert_int_eq(e.http_status, 401);
    ck_assert_int_eq(ikd_conn_process(c, 0), IKD_E_CLOSED);
    ikd_conn_free(c);
    c = conn_new(NULL, "s3cret");
    ck_assert_msg(ikd_conn_wait_connected(c, WAIT_MS, &e) == 0, "%s", e.message);
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    ikd_result *r;
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &target, NULL, WAIT_MS, &r, &e), 0);
    double t[3] = {0.2, 0.1, 0.25};
    check_leg(r, t);
    ikd_result_free(r);
    ikd_conn_free(c);
}
END_TEST

/* ---- streams ------------------------------------------------------------- */

/* The test's own loop, as a game server's would be. */
static void own_poll(ikd_conn *c)
{
    int t = ikd_conn_timeout_ms(c);
    if (t < 0 || t > 50)
        t = 50;
    struct pollfd p = {ikd_conn_fd(c), (short)ikd_conn_events(c), 0};
    int n = p.fd >= 0 ? poll(&p, 1, t) : 0;
    ck_assert_int_ge(ikd_conn_process(c, n > 0 ? p.revents : 0), 0);
}

START_TEST(stream_of_targets_in_own_loop)
{
    daemon_start(0, NULL);
    enum { N = 40 };
    double targets[N][3];
    for (int i = 0; i < N; i++) { /* a smooth motion */
        targets[i][0] = 0.2 * cos(0.05 * i);
        targets[i][1] = 0.1 + 0.2 * sin(0.05 * i);
        targets[i][2] = 0.3 + 0.004 * i;
    }
    seen s = {.targets = targets, .ntargets = N};
    ikd_conn *c = conn_new(&s, NULL);
    ikd_chain leg = {.json = LEG};
    ikd_error e;
    /* sent before the connection is up: queued behind the upgrade */
    ck_assert_int_eq(ikd_stream_open(c, "leg", &leg, NULL, "{\"solver\":\"two_bone\"}", &e), 0);
    int64_t until = test_now() + WAIT_MS;
    double knee_prev[3] = {0};
    int sent = 0;
    while (s.solutions < N) {
        ck_assert(test_now() < until);
        if (s.opened && sent == s.solutions && sent < N) {
            ikd_target t = {.position = {targets[sent][0], targets[sent][1], targets[sent][2]}};
            long long seq;
            ck_assert_int_eq(ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &t, NULL, &seq, &e), 0);
            ck_assert_int_eq(seq, ++sent);
        }
        own_poll(c);
    }
    ck_assert_int_eq(s.connected, 1);
    ck_assert_int_eq(s.errors, 0);
    ck_assert_int_eq(s.skipped, 0);
    /* warm start: the knee moves little between neighbouring targets */
    ikd_result *r;
    ikd_target t = {.position = {targets[N - 1][0], targets[N - 1][1], targets[N - 1][2]}};
    s.targets = NULL;
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &t, NULL, WAIT_MS, &r, &e), 0);
    memcpy(knee_prev, r->positions + 3, sizeof knee_prev);
    ikd_result_free(r);
    t.position[2] += 0.004;
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &t, NULL, WAIT_MS, &r, &e), 0);
    ck_assert_double_lt(dist(knee_prev, r->positions + 3), 0.05);
    ikd_result_free(r);
    ikd_conn_free(c);
}
END_TEST

START_TEST(stream_burst_accounted)
{
    daemon_start(0, NULL);
    enum { N = 200 };
    static double targets[N][3];
    for (int i = 0; i < N; i++)
        leg_target(i, targets[i]);
    seen s = {.targets = targets, .ntargets = N};
    ikd_conn *c = conn_new(&s, NULL);
    ikd_chain leg = {.json = LEG};
    ikd_error e;
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    for (int i = 0; i < N; i++) {
        ikd_target t = {.position = {targets[i][0], targets[i][1], targets[i][2]}};
        ck_assert_int_eq(ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &t, NULL, NULL, &e), 0);
    }
    POLL_UNTIL(c, s.last_seq == N);
    /* every target answered or skipped by ikd's conflation */
    ck_assert_int_eq(s.solutions + s.skipped, N);
    ck_assert_int_eq(s.errors, 0);
    ikd_conn_free(c);
}
END_TEST

START_TEST(tick_per_stream_results)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = conn_new(&s, NULL);
    ikd_chain leg = {.json = LEG};
    ikd_error e;
    ck_assert_int_eq(ikd_stream_open_wait(c, "c1", &leg, NULL,
                                          "{\"fields\":[\"local_rotations\"],\"digits\":6}",
                                          WAIT_MS, &e),
                     0);
    ck_assert_int_eq(ikd_stream_open_wait(c, "c2", &leg, NULL, NULL, WAIT_MS, &e), 0);
    double t2[3] = {0.15, -0.1, 0.3};
    double bad_q[4] = {0, 0, 0, 2};
    ikd_target tc2 = {.position = {t2[0], t2[1], t2[2]}};
    ikd_target tc1 = {.position = {0.2, 0.1, 0.25}, .orientation = bad_q};
    ikd_target tc3 = {.position = {0.2, 0.1, 0.25}};
    ck_assert_int_eq(ikd_tick_begin(c, 120, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c2", &tc2, NULL, 7, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c1", &tc1, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c3", &tc3, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    ikd_tick *t;
    ck_assert_msg(ikd_tick_wait(c, 120, WAIT_MS, &t, &e) == 0, "%s", e.message);
    ck_assert_int_eq(s.ticks, 1);
    ck_assert_int_eq(t->seq, 120);
    ck_assert_uint_eq(t->count, 3);
    ck_assert_str_eq(t->entries[0].stream, "c2");
    ck_assert_int_eq(t->entries[0].seq, 7);
    check_leg(t->entries[0].result, t2);
    ck_assert_str_eq(t->entries[1].stream, "c1");
    ck_assert_int_eq(t->entries[1].seq, 120);
    ck_assert_ptr_null(t->entries[1].result);
    ck_assert_int_eq(t->entries[1].error->code, IKD_E_INVALID_REQUEST);
    ck_assert_str_eq(t->entries[1].error->path, "/targets/1/target/orientation");
    ck_assert_str_eq(t->entries[2].stream, "c3");
    ck_assert_int_eq(t->entries[2].error->code, IKD_E_UNKNOWN_STREAM);
    ck_assert_str_eq(t->entries[2].error->path, "/targets/2/stream");
    ikd_tick_free(t);

    /* both valid: c1 answers its compact fields only, as unit quaternions */
    ck_assert_int_eq(ikd_tick_begin(c, 121, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c1", &tc3, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c2", &tc2, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    ck_assert_int_eq(ikd_tick_wait(c, 121, WAIT_MS, &t, &e), 0);
    const ikd_result *r1 = t->entries[0].result;
    ck_assert_uint_eq(r1->has, IKD_HAS_LOCAL_ROTATIONS);
    ck_assert_uint_eq(r1->local_rotation_count, 3);
    for (size_t i = 0; i < 3; i++) {
        const double *q = r1->local_rotations + 4 * i;
        ck_assert_double_eq_tol(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], 1, 1e-5);
    }
    check_leg(t->entries[1].result, t2);
    ikd_tick_free(t);
    /* a tick without targets is the caller's mistake, said at once */
    ck_assert_int_eq(ikd_tick_begin(c, 122, &e), 0);
    ck_assert_int_eq(ikd_tick_send(c, &e), IKD_E_INVALID_ARGUMENT);
    /* a NaN names its entry, and the tick stays as it was */
    ikd_target nan_target = {.position = {0.2, NAN, 0.25}};
    ck_assert_int_eq(ikd_tick_add(c, "c1", &tc3, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c2", &nan_target, NULL, IKD_SEQ_AUTO, &e),
                     IKD_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(e.message, "tick entry 1 (stream c2): target.position[1]"));
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    ck_assert_int_eq(ikd_tick_wait(c, 122, WAIT_MS, &t, &e), 0);
    ck_assert_uint_eq(t->count, 1);
    ikd_tick_free(t);
    ikd_tick_free(s.tick);
    s.tick = NULL;
    ikd_conn_free(c);
}
END_TEST

START_TEST(unknown_type_reaches_the_caller)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = conn_new(&s, NULL);
    ikd_error e;
    const char *bogus = "{\"type\":\"bogus\"}";
    ck_assert_int_eq(ikd_send_text(c, bogus, strlen(bogus), &e), 0);
    POLL_UNTIL(c, s.errors == 1);
    ck_assert_int_eq(s.last_error, IKD_E_UNKNOWN_TYPE);
    ck_assert_str_eq(s.last_error_wire, "unknown_type");
    ck_assert_str_eq(s.last_error_path, "/type");
    ikd_conn_free(c);

    /* no callback: the blocking helper that waits meanwhile fails with it */
    c = conn_new(NULL, NULL);
    ikd_chain leg = {.json = LEG};
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    ck_assert_int_eq(ikd_send_text(c, bogus, strlen(bogus), &e), 0);
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    ikd_result *r;
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &t, NULL, WAIT_MS, &r, &e), IKD_E_UNKNOWN_TYPE);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(e.path, "/type");
    ikd_conn_free(c);
}
END_TEST

static size_t heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 0; /* ASan's allocator is not malloc's: the stats bound stands alone */
#else
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks;
#endif
}

START_TEST(memory_bounded_when_solutions_are_not_kept)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = conn_new(&s, NULL);
    ikd_chain leg = {.json = LEG};
    ikd_error e;
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    enum { N = 10000, WINDOW = 1 }; /* one at a time: every target solved */
    size_t heap0 = 0, peak_stats = 0;
    long long sent = 0;
    int64_t until = test_now() + 300000;
    while (s.last_seq < N) {
        ck_assert(test_now() < until);
        while (sent < N && sent - s.last_seq < WINDOW) {
            double p[3];
            leg_target((int)sent, p);
            ikd_target t = {.position = {p[0], p[1], p[2]}};
            ck_assert_int_eq(ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &t, NULL, NULL, &e), 0);
            sent++;
        }
        ikd_conn_poll(c, 50);
        if (s.last_seq >= 1000 && !heap0)
            heap0 = heap_in_use(); /* after warming up */
        ikd_conn_stats st;
        ikd_conn_get_stats(c, &st);
        if (st.memory_bytes > peak_stats)
            peak_stats = st.memory_bytes;
    }
    ck_assert_int_eq(s.solutions, N);
    ck_assert_int_eq(s.skipped, 0);
    size_t heap1 = heap_in_use();
    /* the connection's buffers: a few reads' worth, whatever the count */
    ck_assert_msg(peak_stats < 512 * 1024, "the connection held %zu bytes", peak_stats);
    ck_assert_msg(heap1 <= heap0 + 64 * 1024, "the heap grew from %zu to %zu bytes", heap0, heap1);
    ikd_conn_free(c);
}
END_TEST

START_TEST(send_queue_bounded)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn_opts o = {.url = daemon_url, .on_event = on_event, .user = &s, .max_send_queue = 8192};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ikd_chain leg = {.json = LEG};
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    int queued = 0, rc;
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    while ((rc = ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &t, NULL, NULL, &e)) == 0)
        queued++;
    ck_assert_int_eq(rc, IKD_E_SEND_QUEUE_FULL);
    ck_assert_int_gt(queued, 20);
    ikd_conn_stats st;
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_le(st.send_queued, 8192);
    /* a message larger than the whole queue can never go */
    char big[9000];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    big[sizeof big - 1] = '}';
    ck_assert_int_eq(ikd_send_text(c, big, sizeof big, &e), IKD_E_MESSAGE_TOO_LARGE);
    POLL_UNTIL(c, s.last_seq == queued);
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_eq(st.send_queued, 0);
    ck_assert_int_eq(ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &t, NULL, NULL, &e), 0);
    ikd_conn_free(c);
}
END_TEST

START_TEST(tick_bounds)
{
    daemon_start(0, NULL);
    ikd_conn_opts o = {.url = daemon_url, .max_streams = 4, .max_send_queue = 200};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    ck_assert_int_eq(ikd_tick_begin(c, 1, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "a", &t, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "b", &t, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "c", &t, NULL, IKD_SEQ_AUTO, &e), 0);
    /* 200 bytes hold three entries (50 bytes each after 33 of head), not four */
    ck_assert_int_eq(ikd_tick_add(c, "d", &t, NULL, IKD_SEQ_AUTO, &e), IKD_E_MESSAGE_TOO_LARGE);
    ikd_conn_free(c);
    o.max_send_queue = 0;
    c = ikd_conn_new(&o, &e);
    ck_assert_int_eq(ikd_tick_begin(c, 1, &e), 0);
    const char *names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(ikd_tick_add(c, names[i], &t, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "e", &t, NULL, IKD_SEQ_AUTO, &e), IKD_E_TOO_LARGE);
    ikd_conn_free(c);
    /* a token that would end the header line */
    ikd_client_opts co = {.url = daemon_url, .token = "a\r\nX-Evil: 1"};
    ck_assert_ptr_null(ikd_client_new(&co, &e));
    ck_assert_int_eq(e.code, IKD_E_INVALID_ARGUMENT);
    ikd_conn_opts bad = {.url = daemon_url, .token = "a\r\nX-Evil: 1"};
    ck_assert_ptr_null(ikd_conn_new(&bad, &e));
    ck_assert_int_eq(e.code, IKD_E_INVALID_ARGUMENT);
}
END_TEST

START_TEST(message_over_max_message)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn_opts o = {
        .url = daemon_url, .on_event = on_event, .user = &s, .max_message = 200, .reconnect = true};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ikd_chain leg = {.json = LEG};
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    ikd_result *r;
    /* the target's answer is lost, and says why */
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &t, NULL, WAIT_MS, &r, &e), IKD_E_CONNECTION_LOST);
    ck_assert_ptr_nonnull(strstr(e.message, "max_message"));
    ck_assert_str_eq(e.stream, "leg");
    POLL_UNTIL(c, s.disconnected == 1);
    ck_assert_int_eq(s.last_disconnect_code, IKD_E_MESSAGE_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(s.lost_message, "max_message"));
    ck_assert(!s.will_reconnect); /* it would happen again */
    ck_assert_int_eq(ikd_conn_process(c, 0), IKD_E_CLOSED);
    ikd_conn_free(c);
}
END_TEST

START_TEST(path_and_close)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = conn_new(&s, NULL);
    ikd_chain leg = {.json = LEG};
    ikd_error e;
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    ikd_target w[3] = {{.position = {0.2, 0.1, 0.25}},
                       {.position = {0.15, 0.05, 0.3}},
                       {.position = {0.1, 0.1, 0.35}}};
    long long seq;
    ck_assert_int_eq(ikd_stream_path(c, "leg", IKD_SEQ_AUTO, w, 3, 200, 0.05, &seq, &e), 0);
    POLL_UNTIL(c, s.path_end == 1);
    ck_assert_int_ge(s.solutions, 2);
    ck_assert(s.path_completed);
    ck_assert_int_eq(s.path_count, 11); /* floor(0.05 * 200) + 1 */
    ck_assert_int_eq(s.path_sent + s.skipped, s.path_count);
    ck_assert_int_eq(s.solutions, s.path_sent);
    ck_assert_int_eq(s.last_seq, seq);
    ikd_conn_stats st;
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_eq(st.streams, 1);
    ck_assert_int_eq(ikd_stream_close(c, "leg", &e), 0);
    POLL_UNTIL(c, s.closed == 1);
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_eq(st.streams, 0);
    /* its name is free again */
    ck_assert_int_eq(ikd_stream_open(c, "leg", &leg, NULL, NULL, &e), 0);
    ck_assert_int_eq(ikd_stream_open(c, "leg", &leg, NULL, NULL, &e), IKD_E_STREAM_EXISTS);
    /* a polite close */
    ck_assert_int_eq(ikd_conn_close(c), 0);
    POLL_UNTIL(c, s.disconnected == 1);
    ck_assert_int_eq(s.close_code, 1000);
    ck_assert_int_eq(s.last_disconnect_code, IKD_E_CLOSED);
    ck_assert_int_eq(ikd_conn_process(c, 0), IKD_E_CLOSED);
    ck_assert_int_eq(ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &w[0], NULL, NULL, &e),
                     IKD_E_CLOSED);
    ikd_conn_free(c);
}
END_TEST

START_TEST(reconnects_and_reopens)
{
    daemon_start(0, NULL);
    int port = daemon_port;
    seen s = {0};
    ikd_conn_opts o = {.url = daemon_url, .on_event = on_event, .user = &s, .reconnect = true};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ikd_chain leg = {.json = LEG};
    ck_assert_int_eq(ikd_stream_open_wait(c, "leg", &leg, NULL, NULL, WAIT_MS, &e), 0);
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    ikd_result *r;
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &t, NULL, WAIT_MS, &r, &e), 0);
    ikd_result_free(r);
    ck_assert_int_eq(daemon_stop(), 0);
    POLL_UNTIL(c, s.disconnected >= 1);
    ck_assert(s.will_reconnect);
    ck_assert_int_eq(s.close_code, 1001); /* ikd shutting down */
    /* sent while there is no connection: it goes after the reopening */
    double p[3] = {0.15, -0.1, 0.3};
    ikd_target t2 = {.position = {p[0], p[1], p[2]}};
    long long seq;
    ck_assert_int_eq(ikd_stream_target(c, "leg", IKD_SEQ_AUTO, &t2, NULL, &seq, &e), 0);
    /* and a stream opened meanwhile is opened once, with the others */
    ck_assert_int_eq(ikd_stream_open(c, "leg2", &leg, NULL, NULL, &e), 0);
    daemon_start(port, NULL);
    POLL_UNTIL(c, s.last_seq == seq && s.opened == 3);
    ck_assert_int_eq(s.connected, 2);
    ikd_conn_poll(c, 100);
    ck_assert_int_eq(s.opened, 3);
    ck_assert_msg(s.errors == 0, "an error: %s %s", s.last_error_wire, s.last_error_stream);
    ikd_conn_stats st;
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_ge(st.reconnects, 1);
    ck_assert_int_eq(ikd_stream_solve(c, "leg", &t2, NULL, WAIT_MS, &r, &e), 0);
    check_leg(r, p);
    ikd_result_free(r);
    ikd_conn_free(c);
}
END_TEST

START_TEST(connection_failures_and_silence)
{
    daemon_start(0, NULL);
    ikd_error e;
    /* nobody listening there */
    ikd_conn_opts none = {.url = "ws://127.0.0.1:1"};
    ikd_conn *c = ikd_conn_new(&none, &e);
    if (c) { /* the refusal may come at once or from the loop */
        ck_assert_int_eq(ikd_conn_wait_connected(c, WAIT_MS, &e), IKD_E_CONNECT);
        ikd_conn_free(c);
    } else {
        ck_assert_int_eq(e.code, IKD_E_CONNECT);
    }
    /* a path where ikd has no stream endpoint: its 404, not retried */
    char url[160];
    snprintf(url, sizeof url, "%s/elsewhere", daemon_url);
    ikd_conn_opts wrong = {.url = url, .reconnect = true};
    c = ikd_conn_new(&wrong, &e);
    ck_assert_int_eq(ikd_conn_wait_connected(c, WAIT_MS, &e), IKD_E_NOT_FOUND);
    ck_assert_int_eq(e.http_status, 404);
    ck_assert_int_eq(ikd_conn_process(c, 0), IKD_E_CLOSED);
    ikd_conn_free(c);
    /* a bad URL */
    ikd_conn_opts bad = {.url = "ftp://127.0.0.1"};
    ck_assert_ptr_null(ikd_conn_new(&bad, &e));
    ck_assert_int_eq(e.code, IKD_E_INVALID_ARGUMENT);

    /* idle: pings keep a quiet connection alive; a silent ikd is noticed */
    seen s = {0};
    ikd_conn_opts o = {.url = daemon_url, .on_event = on_event, .user = &s, .idle_timeout_ms = 1000};
    c = ikd_conn_new(&o, &e);
    ck_assert_int_eq(ikd_conn_wait_connected(c, WAIT_MS, &e), 0);
    int64_t until = test_now() + 3000; /* three idle periods: kept alive by pings */
    while (test_now() < until)
        ikd_conn_poll(c, 50);
    ck_assert_int_eq(s.disconnected, 0);
    ikd_conn_stats st;
    ikd_conn_get_stats(c, &st);
    ck_assert_uint_eq(st.messages_out, 0); /* pings only */
    kill(daemon_pid, SIGSTOP);
    int64_t t0 = test_now();
    POLL_UNTIL(c, s.disconnected == 1);
    kill(daemon_pid, SIGCONT);
    ck_assert_int_eq(s.last_disconnect_code, IKD_E_TIMEOUT);
    ck_assert_int_le(test_now() - t0, 4000);
    ikd_conn_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_live");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, http_solve_and_batch);
    tcase_add_test(tc, http_register_solve_by_id);
    tcase_add_test(tc, http_registers_again_on_unknown_chain);
    tcase_add_test(tc, http_errors_name_their_member);
    tcase_add_test(tc, bearer_token);
    tcase_add_test(tc, stream_of_targets_in_own_loop);
    tcase_add_test(tc, stream_burst_accounted);
    tcase_add_test(tc, tick_per_stream_results);
    tcase_add_test(tc, unknown_type_reaches_the_caller);
    tcase_add_test(tc, memory_bounded_when_solutions_are_not_kept);
    tcase_add_test(tc, send_queue_bounded);
    tcase_add_test(tc, tick_bounds);
    tcase_add_test(tc, message_over_max_message);
    tcase_add_test(tc, path_and_close);
    tcase_add_test(tc, reconnects_and_reopens);
    tcase_add_test(tc, connection_failures_and_silence);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
