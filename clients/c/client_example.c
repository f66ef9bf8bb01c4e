/*
 * client_example.c: a game server's use of libikdclient, the C network
 * client of ikd. It builds against the INSTALLED library (make install,
 * then pkg-config ikdclient; clients/c/README.md has the commands) and
 * talks to the ikd at the URL given as its argument (default
 * http://127.0.0.1:8080, what `make run` serves):
 *
 *   1. HTTP (blocking, at start-up): registers a character's leg, a
 *      two-bone chain (seed 001), and solves one target by its id;
 *   2. a WebSocket driven by the program's own poll() loop, as a game loop
 *      drives it: three characters' legs opened as streams (by the chain
 *      id), then ten ticks, each one "tick" message carrying every
 *      character's foot target (in the binary form: doubles, nothing to
 *      print or parse), each answered by one tick_solution with every
 *      character's answer in order. The next tick is sent when the
 *      previous one is answered.
 *
 * Every answer is checked by its geometry (the hip where it was, both bone
 * lengths kept, the foot on the target). It prints what it did and "all
 * checks passed", and exits 0; a failed check prints "FAILED: ..." and
 * exits 1.
 */
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ikd/client.h>

#define CHARACTERS 3
#define TICKS      10

static const char *const LEG =
    "{\"kind\":\"bones\",\"positions\":[[0.0,0.0,1.0],[0.1,0.0,0.55],[0.0,0.0,0.1]]}";
static const double HIP[3] = {0, 0, 1}, BONE = 0.4609772228646444; /* |(0.1, 0, -0.45)| */

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

static double dist(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

/* The leg's answer put the foot on the target and kept the bones. */
static void check_leg(const ikd_result *r, const double *target, const char *who)
{
    char what[128];
    snprintf(what, sizeof what, "%s: status success (got %s)", who, r->status_text);
    check(r->status == IKD_STATUS_SUCCESS && r->position_count == 3, what);
    if (r->status != IKD_STATUS_SUCCESS || r->position_count != 3)
        return;
    const double *p = r->positions; /* hip, knee, foot */
    snprintf(what, sizeof what, "%s: the hip stays", who);
    check(dist(p, HIP) < 1e-9, what);
    snprintf(what, sizeof what, "%s: both bone lengths kept", who);
    check(fabs(dist(p, p + 3) - BONE) < 1e-9 && fabs(dist(p + 3, p + 6) - BONE) < 1e-9, what);
    snprintf(what, sizeof what, "%s: the foot on the target", who);
    check(dist(p + 6, target) < 1e-9, what);
}

/* Character k's foot target at tick t: a step forward and back. */
static void foot_target(int k, int t, double out[3])
{
    out[0] = 0.05 * k + 0.15 * sin(0.4 * t);
    out[1] = 0.1;
    out[2] = 0.25 + 0.05 * cos(0.4 * t);
}

/* ---- the game loop's side ------------------------------------------------ */

typedef struct game {
    int opened;
    long long answered; /* the last tick answered */
    int binary;         /* ticks answered in the binary form */
    int errors;
    int closing; /* the end is ours: ikd_conn_close */
} game;

static void on_event(ikd_conn *conn, const ikd_event *ev, void *user)
{
    (void)conn;
    game *g = user;
    switch (ev->kind) {
    case IKD_EV_OPENED:
        g->opened++;
        break;
    case IKD_EV_TICK: {
        const ikd_tick *t = ev->tick;
        check(t->count == CHARACTERS, "a tick answer holds every character");
        for (size_t k = 0; k < t->count; k++) {
            const ikd_tick_entry *e = &t->entries[k];
            if (e->error) {
                printf("FAILED: %s: %s\n", e->stream, e->error->message);
                failures++;
                continue;
            }
            double want[3];
            foot_target((int)k, (int)t->seq, want);
            check_leg(e->result, want, e->stream);
        }
        g->answered = t->seq;
        g->binary += ev->binary;
        break;
    }
    case IKD_EV_ERROR:
        printf("FAILED: ikd said %s: %s (at %s)\n", ikd_errcode_name(ev->error->code),
               ev->error->message, ev->error->path);
        failures++;
        g->errors++;
        break;
    case IKD_EV_DISCONNECTED:
        if (g->closing)
            break;
        printf("FAILED: the connection ended: %s\n", ev->error->message);
        failures++;
        g->errors++;
        break;
    default:
        break;
    }
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "http://127.0.0.1:8080";
    ikd_error err;

    /* 1. HTTP */
    ikd_client_opts copts = {.url = url, .token = getenv("IKD_TOKEN")};
    ikd_client *http = ikd_client_new(&copts, &err);
    ikd_chain_info *leg = NULL;
    if (!http || ikd_chain_register(http, LEG, &leg, &err)) {
        printf("FAILED: registering the leg at %s: %s\n", url, err.message);
        ikd_client_free(http);
        return 1;
    }
    printf("registered the leg: chain %s\n", leg->id);
    ikd_chain by_id = {.id = leg->id};
    double target[3] = {0.2, 0.1, 0.25};
    ikd_target t = {.position = {target[0], target[1], target[2]}};
    ikd_answer *answer;
    if (ikd_solve(http, &by_id, &t, NULL, NULL, &answer, &err) == 0) {
        const ikd_result *r = &answer->results[0];
        printf("solve by id: %s by %s, knee (%.4f, %.4f, %.4f)\n", r->status_text, answer->solver,
               r->positions[3], r->positions[4], r->positions[5]);
        check_leg(r, target, "solve by id");
        ikd_answer_free(answer);
    } else {
        printf("FAILED: solve by id: %s\n", err.message);
        failures++;
    }

    /* 2. a WebSocket in the program's own loop */
    game g = {0};
    ikd_conn_opts opts = {
        .url = url, .token = getenv("IKD_TOKEN"), .on_event = on_event, .user = &g};
    ikd_conn *conn = ikd_conn_new(&opts, &err);
    if (!conn) {
        printf("FAILED: connecting: %s\n", err.message);
        return 1;
    }
    /* ticks as one binary message of doubles each way (STREAM.md, "Binary
     * ticks"): these targets (positions only) fit the form */
    ikd_conn_set_binary_ticks(conn, true);
    char name[16];
    for (int k = 0; k < CHARACTERS; k++) { /* queued now, sent once connected */
        snprintf(name, sizeof name, "hero%d", k);
        if (ikd_stream_open(conn, name, &by_id, NULL,
                            "{\"fields\":[\"positions\",\"local_rotations\"]}", &err)) {
            printf("FAILED: open %s: %s\n", name, err.message);
            return 1;
        }
    }
    long long sent = 0;
    while (g.answered < TICKS && !g.errors) {
        if (g.opened == CHARACTERS && sent == g.answered) {
            /* the next tick: every character's foot target in one message */
            sent++;
            ikd_tick_begin(conn, sent, &err);
            for (int k = 0; k < CHARACTERS; k++) {
                double p[3];
                foot_target(k, (int)sent, p);
                ikd_target ft = {.position = {p[0], p[1], p[2]}};
                snprintf(name, sizeof name, "hero%d", k);
                ikd_tick_add(conn, name, &ft, NULL, IKD_SEQ_AUTO, &err);
            }
            if (ikd_tick_send(conn, &err)) {
                printf("FAILED: tick %lld: %s\n", sent, err.message);
                return 1;
            }
        }
        /* the game loop's poll: the connection's socket and deadline */
        int timeout = ikd_conn_timeout_ms(conn);
        struct pollfd p = {ikd_conn_fd(conn), (short)ikd_conn_events(conn), 0};
        int n = poll(&p, p.fd >= 0 ? 1 : 0, timeout < 0 || timeout > 1000 ? 1000 : timeout);
        if (ikd_conn_process(conn, n > 0 ? p.revents : 0) < 0) {
            printf("FAILED: the connection closed\n");
            return 1;
        }
    }
    printf("%lld ticks of %d characters answered, %d in binary\n", g.answered, CHARACTERS,
           g.binary);
    check(g.binary == TICKS, "every tick went binary");
    ikd_conn_stats st;
    ikd_conn_get_stats(conn, &st);
    printf("connection: %llu messages in, %llu out, %zu bytes held\n", st.messages_in,
           st.messages_out, st.memory_bytes);
    g.closing = 1;
    ikd_conn_close(conn);
    while (ikd_conn_poll(conn, 1000) >= 0)
        ;
    ikd_conn_free(conn);
    ikd_chain_info_free(leg);
    ikd_client_free(http);
    if (failures)
        return 1;
    printf("all checks passed\n");
    return 0;
}
