/*
 * test_client_binary.c: libikdclient's binary ticks (ikd_conn_set_binary_ticks;
 * proto/STREAM.md, "Binary ticks") against the real daemon (each test
 * starts its own ikd; tests/clients/daemon.h).
 *
 * Two connections send the same ticks, one in the binary form and one in
 * JSON, so that every answer of the binary form is checked twice: by
 * geometry computed here (tests/clients/rigs.h: the leg's hip, bones and
 * foot, the three-joint arm's and the planar arm's own forward kinematics,
 * within their limits) and against the JSON form's answer to the same
 * targets, number for number (ikd writes each binary double as the one its
 * JSON reads back as). Which form each answer came in is ikd's binary or
 * text message (ev->binary), not the client's account of what it sent.
 *
 *   - position ticks (legs, arm, planar arm with dims 2) and full-pose
 *     ticks (UR5 from its URDF, the targets of tests/data/targets/ur5.txt)
 *     answered in binary, equal to JSON's;
 *   - a tick that does not fit (a pole, a seed, orientations on some
 *     targets only, a seq beyond 2^53) goes as JSON, the targets added
 *     before in binary written into it right;
 *   - errors per target in a binary answer are the JSON answer's (code,
 *     path, message, stream, seq), and the binary form's own (a planar z);
 *     a tick ikd refuses whole fails the tick's waiter.
 */
#include <math.h>
#include <time.h>

#include "tests/clients/daemon.h"
#include "tests/clients/rigs.h"
#include <ikd/client.h>

#define WAIT_MS 10000

typedef struct seen {
    int ticks, binary_ticks, errors;
    bool last_binary;
    char last_error_path[256];
} seen;

static void on_event(ikd_conn *c, const ikd_event *ev, void *user)
{
    seen *s = user;
    if (ev->kind == IKD_EV_TICK) {
        s->ticks++;
        s->binary_ticks += ev->binary;
        s->last_binary = ev->binary;
        ck_assert_ptr_nonnull(ev->text);
        ck_assert_int_eq(ev->binary, ev->text_len >= 4 && memcmp(ev->text, "IKDS", 4) == 0);
    } else if (ev->kind == IKD_EV_ERROR) {
        s->errors++;
        snprintf(s->last_error_path, sizeof s->last_error_path, "%s", ev->error->path);
    }
}

static ikd_conn *conn_new(seen *s, bool binary)
{
    ikd_conn_opts o = {.url = daemon_url, .on_event = on_event, .user = s};
    ikd_error e;
    ikd_conn *c = ikd_conn_new(&o, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_int_eq(ikd_conn_set_binary_ticks(c, binary), 0);
    return c;
}

static int64_t test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void teardown(void)
{
    ck_assert_int_eq(daemon_stop(), 0);
}

static void open_wait(ikd_conn *c, const char *name, const ikd_chain *chain, const char *options)
{
    ikd_error e;
    ck_assert_msg(ikd_stream_open_wait(c, name, chain, NULL, options, WAIT_MS, &e) == 0,
                  "open %s: %s", name, e.message);
}

/* Sends the tick built on c and waits for its answer. */
static ikd_tick *send_wait(ikd_conn *c, long long seq)
{
    ikd_error e;
    ikd_tick *t;
    ck_assert_msg(ikd_tick_send(c, &e) == 0, "%s", e.message);
    ck_assert_msg(ikd_tick_wait(c, seq, WAIT_MS, &t, &e) == 0, "tick %lld: %s", seq, e.message);
    ck_assert_int_eq(t->seq, seq);
    return t;
}

static void same(double a, double b, const char *what, size_t i)
{
    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s %zu: %.17g in binary, %.17g in JSON", what, i,
                  a, b);
}

static void same_doubles(const double *a, const double *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        same(a[i], b[i], what, i);
}

/* The binary form's result against the JSON form's for the same target:
 * the same status and numbers; every member JSON has, binary has, but
 * the words (reason, cause), which are JSON's only. */
static void same_result(const ikd_result *b, const ikd_result *j)
{
    ck_assert_int_eq(b->status, j->status);
    ck_assert_str_eq(b->status_text, j->status_text);
    unsigned words = IKD_HAS_REASON | IKD_HAS_CAUSE;
    ck_assert_msg((j->has & ~words & ~b->has) == 0, "binary lacks members 0x%x of JSON's",
                  j->has & ~words & ~b->has);
    if (j->has & IKD_HAS_CODE)
        ck_assert_int_eq(b->code, j->code);
    if (j->has & IKD_HAS_ITERATIONS)
        ck_assert_int_eq(b->iterations, j->iterations);
    ck_assert_uint_eq(b->joint_count, j->joint_count);
    same_doubles(b->joints, j->joints, j->joint_count, "joint");
    ck_assert_uint_eq(b->position_count, j->position_count);
    ck_assert_int_eq(b->position_dim, j->position_dim);
    same_doubles(b->positions, j->positions, j->position_count * (size_t)j->position_dim,
                 "position number");
    ck_assert_uint_eq(b->rotation_count, j->rotation_count);
    same_doubles(b->rotations, j->rotations, 4 * j->rotation_count, "rotation number");
    ck_assert_uint_eq(b->local_rotation_count, j->local_rotation_count);
    same_doubles(b->local_rotations, j->local_rotations, 4 * j->local_rotation_count,
                 "local rotation number");
    if (j->has & IKD_HAS_TIP) {
        same_doubles(b->tip_position, j->tip_position, 3, "tip position");
        same_doubles(b->tip_orientation, j->tip_orientation, 4, "tip orientation");
    }
    if (j->has & IKD_HAS_POSITION_ERROR)
        same(b->position_error, j->position_error, "position_error", 0);
    if (j->has & IKD_HAS_ORIENTATION_ERROR)
        same(b->orientation_error, j->orientation_error, "orientation_error", 0);
    if (j->has & IKD_HAS_MAX_JOINT_STEP)
        same(b->max_joint_step, j->max_joint_step, "max_joint_step", 0);
}

static void same_error(const ikd_error *b, const ikd_error *j)
{
    ck_assert_int_eq(b->code, j->code);
    ck_assert_str_eq(b->wire_code, j->wire_code);
    ck_assert_str_eq(b->path, j->path);
    ck_assert_str_eq(b->message, j->message);
    ck_assert_str_eq(b->stream, j->stream);
    ck_assert_int_eq(b->has_seq, j->has_seq);
    ck_assert_int_eq(b->seq, j->seq);
}

/* The two answers, entry by entry. */
static void same_tick(const ikd_tick *b, const ikd_tick *j)
{
    ck_assert_int_eq(b->seq, j->seq);
    ck_assert_int_eq(b->skipped, j->skipped);
    ck_assert_uint_eq(b->count, j->count);
    for (size_t i = 0; i < j->count; i++) {
        const ikd_tick_entry *x = &b->entries[i], *y = &j->entries[i];
        ck_assert_str_eq(x->stream, y->stream);
        ck_assert_int_eq(x->seq, y->seq);
        ck_assert_int_eq(x->skipped, y->skipped);
        ck_assert_int_eq(!x->result, !y->result);
        if (y->result)
            same_result(x->result, y->result);
        else
            same_error(x->error, y->error);
    }
}

/* The arm's answer puts its tool on t, within its limits, by this file's
 * forward kinematics. */
static void check_arm(const ikd_result *r, const double *t)
{
    ck_assert_msg(r != NULL, "the arm's target answered with an error");
    ck_assert_msg(r->status == IKD_STATUS_SUCCESS, "status %s", r->status_text);
    ck_assert_uint_eq(r->joint_count, 3);
    double got[3];
    arm_fk(r->joints, got);
    for (int k = 0; k < 3; k++) {
        ck_assert_double_eq_tol(got[k], t[k], 1.1e-5);
        ck_assert(r->joints[k] >= ARM_LO[k] - 1e-12 && r->joints[k] <= ARM_HI[k] + 1e-12);
    }
}

static void check_planar(const ikd_result *r, const double *t)
{
    ck_assert_msg(r != NULL, "the planar target answered with an error");
    ck_assert_msg(r->status == IKD_STATUS_SUCCESS, "status %s", r->status_text);
    ck_assert_uint_eq(r->joint_count, 2);
    double got[2];
    planar_fk(r->joints, got);
    ck_assert_double_eq_tol(got[0], t[0], 1e-9);
    ck_assert_double_eq_tol(got[1], t[1], 1e-9);
}

/* ---- position ticks ------------------------------------------------------ */

enum { LEGS = 4 };
static const char *const LEG_NAMES[LEGS] = {"leg0", "leg1", "leg2", "leg3"};

/* Streams: four legs, the arm, the planar arm, on both connections. */
static void open_rigs(ikd_conn *c)
{
    ikd_chain leg = {.json = LEG}, arm = {.json = ARM}, planar = {.json = PLANAR};
    for (int k = 0; k < LEGS; k++)
        open_wait(c, LEG_NAMES[k], &leg, NULL);
    open_wait(c, "arm", &arm, NULL);
    open_wait(c, "flat", &planar, NULL);
}

/* Tick i's targets: legs, arm (from joints inside its limits), planar. */
static void rig_targets(int i, double legs[LEGS][3], double arm[3], double flat[2])
{
    for (int k = 0; k < LEGS; k++)
        leg_target(LEGS * i + k, legs[k]);
    double q[3] = {-2.5 + 0.23 * i, -1.2 + 0.11 * i, 1.9 - 0.17 * i};
    arm_fk(q, arm);
    double a = 0.3 * i, r = 0.6 + 0.04 * (i % 7);
    flat[0] = r * cos(a);
    flat[1] = r * sin(a);
}

static void add_rigs(ikd_conn *c, long long seq, double legs[LEGS][3], const double *arm,
                     const double *flat)
{
    ikd_error e;
    ck_assert_int_eq(ikd_tick_begin(c, seq, &e), 0);
    for (int k = 0; k < LEGS; k++) {
        ikd_target t = {.position = {legs[k][0], legs[k][1], legs[k][2]}};
        ck_assert_int_eq(
            ikd_tick_add(c, LEG_NAMES[k], &t, NULL, k == 1 ? 1000 + seq : IKD_SEQ_AUTO, &e), 0);
    }
    ikd_target ta = {.position = {arm[0], arm[1], arm[2]}};
    ck_assert_int_eq(ikd_tick_add(c, "arm", &ta, NULL, IKD_SEQ_AUTO, &e), 0);
    /* z is not sent: a planar target's dims 2 (binary: z 0) */
    ikd_target tf = {.position = {flat[0], flat[1], 123.0}, .dims = 2};
    ck_assert_int_eq(ikd_tick_add(c, "flat", &tf, NULL, IKD_SEQ_AUTO, &e), 0);
}

static void check_rigs(const ikd_tick *t, long long seq, double legs[LEGS][3], const double *arm,
                       const double *flat)
{
    ck_assert_uint_eq(t->count, LEGS + 2);
    for (int k = 0; k < LEGS; k++) {
        ck_assert_str_eq(t->entries[k].stream, LEG_NAMES[k]);
        ck_assert_int_eq(t->entries[k].seq, k == 1 ? 1000 + seq : seq);
        check_leg(t->entries[k].result, legs[k]);
    }
    ck_assert_str_eq(t->entries[LEGS].stream, "arm");
    check_arm(t->entries[LEGS].result, arm);
    ck_assert_str_eq(t->entries[LEGS + 1].stream, "flat");
    check_planar(t->entries[LEGS + 1].result, flat);
}

START_TEST(binary_position_ticks_answered_right)
{
    daemon_start(0, NULL);
    seen sb = {0}, sj = {0};
    ikd_conn *bc = conn_new(&sb, true), *jc = conn_new(&sj, false);
    open_rigs(bc);
    open_rigs(jc);
    enum { TICKS = 20 };
    for (int i = 0; i < TICKS; i++) {
        long long seq = 10 + i;
        double legs[LEGS][3], arm[3], flat[2];
        rig_targets(i, legs, arm, flat);
        add_rigs(bc, seq, legs, arm, flat);
        ck_assert(ikd_tick_is_binary(bc));
        add_rigs(jc, seq, legs, arm, flat);
        ck_assert(!ikd_tick_is_binary(jc));
        ikd_tick *tb = send_wait(bc, seq), *tj = send_wait(jc, seq);
        ck_assert(sb.last_binary);
        ck_assert(!sj.last_binary);
        check_rigs(tb, seq, legs, arm, flat);
        check_rigs(tj, seq, legs, arm, flat);
        same_tick(tb, tj);
        /* the binary answer's own: code, iterations and restarts always;
         * words never */
        const ikd_result *r = tb->entries[0].result;
        ck_assert_uint_eq(r->has & (IKD_HAS_CODE | IKD_HAS_ITERATIONS | IKD_HAS_RESTARTS),
                          IKD_HAS_CODE | IKD_HAS_ITERATIONS | IKD_HAS_RESTARTS);
        ck_assert_ptr_null(r->reason);
        ck_assert_ptr_nonnull(tj->entries[0].result->reason);
        ikd_tick_free(tb);
        ikd_tick_free(tj);
    }
    ck_assert_int_eq(sb.binary_ticks, TICKS);
    ck_assert_int_eq(sj.binary_ticks, 0);
    ck_assert_int_eq(sb.errors + sj.errors, 0);
    /* the binary form is smaller both ways */
    ikd_conn_stats stb, stj;
    ikd_conn_get_stats(bc, &stb);
    ikd_conn_get_stats(jc, &stj);
    ck_assert_uint_lt(stb.bytes_out, stj.bytes_out);
    ikd_conn_free(bc);
    ikd_conn_free(jc);
}
END_TEST

/* ---- full poses: the UR5 ------------------------------------------------- */

/* The UR5's URDF as a chain object's JSON text (base_link to tool0). */
static char *ur5_chain(void)
{
    const char *dir = getenv("IKD_DATA") ? getenv("IKD_DATA") : "tests/data";
    char path[512];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", dir);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *out = malloc(2 * (size_t)n + 128), *o = out;
    o += sprintf(o, "{\"kind\":\"urdf\",\"base\":\"base_link\",\"tip\":\"tool0\",\"urdf\":\"");
    int ch;
    while ((ch = fgetc(f)) != EOF) {
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
        } else if (ch == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (ch >= 0x20) {
            *o++ = (char)ch;
        }
    }
    fclose(f);
    strcpy(o, "\"}");
    return out;
}

/* Target k of tests/data/targets/ur5.txt: the tip pose after " | ". */
static void ur5_target(int k, double pose[7])
{
    const char *dir = getenv("IKD_DATA") ? getenv("IKD_DATA") : "tests/data";
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/targets/ur5.txt", dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    for (int i = 0; i <= k; i++)
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    const char *bar = strchr(line, '|');
    ck_assert_ptr_nonnull(bar);
    ck_assert_int_eq(sscanf(bar + 1, "%lf %lf %lf %lf %lf %lf %lf", &pose[0], &pose[1], &pose[2],
                            &pose[3], &pose[4], &pose[5], &pose[6]),
                     7);
}

START_TEST(binary_full_pose_ticks_equal_json)
{
    daemon_start(0, NULL);
    ikd_client_opts co = {.url = daemon_url};
    ikd_error e;
    ikd_client *http = ikd_client_new(&co, &e);
    char *text = ur5_chain();
    ikd_chain_info *ci;
    ck_assert_msg(ikd_chain_register(http, text, &ci, &e) == 0, "%s", e.message);
    free(text);
    ikd_chain ur5 = {.id = ci->id};
    seen sb = {0}, sj = {0};
    ikd_conn *bc = conn_new(&sb, true), *jc = conn_new(&sj, false);
    enum { ARMS = 3, TICKS = 8 };
    const char *names[ARMS] = {"u0", "u1", "u2"};
    for (int k = 0; k < ARMS; k++) {
        open_wait(bc, names[k], &ur5, NULL);
        open_wait(jc, names[k], &ur5, NULL);
    }
    int solved = 0;
    for (int i = 0; i < TICKS; i++) {
        ikd_conn *cs[2] = {bc, jc};
        ikd_tick *t[2];
        for (int w = 0; w < 2; w++) {
            ck_assert_int_eq(ikd_tick_begin(cs[w], i + 1, &e), 0);
            for (int k = 0; k < ARMS; k++) {
                double p[7];
                ur5_target(ARMS * i + k, p);
                ikd_target tg = {.position = {p[0], p[1], p[2]}, .orientation = p + 3};
                ck_assert_int_eq(ikd_tick_add(cs[w], names[k], &tg, NULL, IKD_SEQ_AUTO, &e), 0);
            }
            ck_assert_int_eq(ikd_tick_is_binary(cs[w]), w == 0);
            t[w] = send_wait(cs[w], i + 1);
        }
        ck_assert(sb.last_binary && !sj.last_binary);
        same_tick(t[0], t[1]);
        for (int k = 0; k < ARMS; k++) {
            const ikd_result *r = t[0]->entries[k].result;
            ck_assert_uint_eq(r->joint_count, 6);
            ck_assert(r->has & IKD_HAS_TIP);
            solved += r->status == IKD_STATUS_SUCCESS;
        }
        ikd_tick_free(t[0]);
        ikd_tick_free(t[1]);
    }
    ck_assert_int_ge(solved, ARMS * TICKS - 1); /* reachable poses: solved */
    ikd_chain_info_free(ci);
    ikd_client_free(http);
    ikd_conn_free(bc);
    ikd_conn_free(jc);
}
END_TEST

/* ---- ticks that do not fit ----------------------------------------------- */

START_TEST(tick_that_does_not_fit_goes_json)
{
    daemon_start(0, NULL);
    seen s = {0};
    ikd_conn *c = conn_new(&s, true);
    open_rigs(c);
    ikd_error e;
    double pole[3] = {1, 0, 0.5}, q[4] = {0, 0, 0, 1};
    for (int how = 0; how < 4; how++) {
        long long seq = 100 + how;
        double legs[LEGS][3], arm[3], flat[2];
        rig_targets(how + 3, legs, arm, flat);
        /* the rigs in binary first: the arm and planar targets are written
         * into the JSON twin when a later target turns the tick */
        add_rigs(c, seq, legs, arm, flat);
        ck_assert(ikd_tick_is_binary(c));
        ck_assert_int_eq(ikd_tick_begin(c, seq, &e), 0); /* again, legs 0-2 only */
        ikd_target ta = {.position = {arm[0], arm[1], arm[2]}};
        ck_assert_int_eq(ikd_tick_add(c, "arm", &ta, NULL, IKD_SEQ_AUTO, &e), 0);
        ikd_target tf = {.position = {flat[0], flat[1]}, .dims = 2};
        ck_assert_int_eq(ikd_tick_add(c, "flat", &tf, NULL, 77, &e), 0);
        for (int k = 0; k < 3; k++) {
            ikd_target t = {.position = {legs[k][0], legs[k][1], legs[k][2]}};
            ck_assert_int_eq(ikd_tick_add(c, LEG_NAMES[k], &t, NULL, IKD_SEQ_AUTO, &e), 0);
        }
        ck_assert(ikd_tick_is_binary(c));
        ikd_target last = {.position = {legs[3][0], legs[3][1], legs[3][2]}};
        ikd_seed seed = {0};
        double knee_seed[9] = {0, 0, 1, 0.1, 0, 0.55, 0, 0, 0.1};
        const ikd_seed *sp = NULL;
        long long last_seq = IKD_SEQ_AUTO;
        if (how == 0) {
            last.pole = pole;
        } else if (how == 1) {
            seed = (ikd_seed){.values = knee_seed, .count = 3, .width = 3};
            sp = &seed;
        } else if (how == 2) {
            last.orientation = q; /* the others have none */
        } else {
            last_seq = (1LL << 53) + 1; /* not exact as a double */
        }
        int rc = ikd_tick_add(c, LEG_NAMES[3], &last, sp, last_seq, &e);
        ck_assert_msg(rc == 0, "%s", e.message);
        ck_assert(!ikd_tick_is_binary(c));
        ikd_tick *t = send_wait(c, seq);
        ck_assert_msg(!s.last_binary, "case %d answered in binary", how);
        ck_assert_uint_eq(t->count, 6);
        check_arm(t->entries[0].result, arm);
        ck_assert_int_eq(t->entries[1].seq, 77);
        check_planar(t->entries[1].result, flat);
        for (int k = 0; k < 3; k++)
            check_leg(t->entries[2 + k].result, legs[k]);
        ck_assert_str_eq(t->entries[5].stream, "leg3");
        if (how == 3) {
            /* ikd's own refusal of the seq, as JSON gives it */
            ck_assert_ptr_nonnull(t->entries[5].error);
            ck_assert_str_eq(t->entries[5].error->path, "/targets/5/seq");
        } else if (how < 2) {
            check_leg(t->entries[5].result, legs[3]);
        }
        ikd_tick_free(t);
    }
    /* a tick whose own seq is not exact as a double: JSON, refused by ikd
     * whole, which fails the tick's waiter */
    long long big = (1LL << 53) + 1;
    ck_assert_int_eq(ikd_tick_begin(c, big, &e), 0);
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    ck_assert_int_eq(ikd_tick_add(c, "leg0", &t, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert(!ikd_tick_is_binary(c));
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    int64_t until = test_now() + WAIT_MS;
    while (s.errors == 0 && test_now() < until)
        ikd_conn_poll(c, 50);
    ck_assert_int_eq(s.errors, 1);
    ck_assert_str_eq(s.last_error_path, "/seq");
    ikd_conn_free(c);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(binary_errors_per_target_as_json)
{
    daemon_start(0, NULL);
    seen sb = {0}, sj = {0};
    ikd_conn *bc = conn_new(&sb, true), *jc = conn_new(&sj, false);
    ikd_chain leg = {.json = LEG}, planar = {.json = PLANAR};
    ikd_conn *cs[2] = {bc, jc};
    ikd_tick *t[2];
    ikd_error e;
    double good[3] = {0.15, -0.1, 0.3};
    for (int w = 0; w < 2; w++) {
        open_wait(cs[w], "c1", &leg, NULL);
        open_wait(cs[w], "c2", &leg, NULL);
        ck_assert_int_eq(ikd_tick_begin(cs[w], 5, &e), 0);
        ikd_target ok = {.position = {good[0], good[1], good[2]}};
        ikd_target far = {.position = {2e6, 0, 0.3}}; /* past 1e6: a unit mistake */
        ck_assert_int_eq(ikd_tick_add(cs[w], "c1", &ok, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_add(cs[w], "nope", &ok, NULL, 9, &e), 0);
        ck_assert_int_eq(ikd_tick_add(cs[w], "c2", &far, NULL, IKD_SEQ_AUTO, &e), 0);
        ck_assert_int_eq(ikd_tick_is_binary(cs[w]), w == 0);
        t[w] = send_wait(cs[w], 5);
    }
    ck_assert(sb.last_binary && !sj.last_binary);
    same_tick(t[0], t[1]);
    const ikd_tick *b = t[0];
    check_leg(b->entries[0].result, good);
    ck_assert_ptr_null(b->entries[1].result);
    ck_assert_int_eq(b->entries[1].error->code, IKD_E_UNKNOWN_STREAM);
    ck_assert_str_eq(b->entries[1].error->path, "/targets/1/stream");
    ck_assert_str_eq(b->entries[1].stream, "nope");
    ck_assert_int_eq(b->entries[1].seq, 9);
    ck_assert_int_eq(b->entries[2].error->code, IKD_E_INVALID_REQUEST);
    ck_assert_str_eq(b->entries[2].error->path, "/targets/2/target/position/0");
    ck_assert_str_eq(b->entries[2].error->stream, "c2");
    ck_assert(b->entries[2].error->message[0]);
    ikd_tick_free(t[0]);
    ikd_tick_free(t[1]);

    /* the binary form's own rule: a planar target's z is 0 */
    open_wait(bc, "flat", &planar, NULL);
    ck_assert_int_eq(ikd_tick_begin(bc, 6, &e), 0);
    ikd_target tz = {.position = {1.2, 0.6, 0.5}};
    ck_assert_int_eq(ikd_tick_add(bc, "flat", &tz, NULL, IKD_SEQ_AUTO, &e), 0);
    ikd_tick *tt = send_wait(bc, 6);
    ck_assert(sb.last_binary);
    ck_assert_int_eq(tt->entries[0].error->code, IKD_E_INVALID_REQUEST);
    ck_assert_str_eq(tt->entries[0].error->path, "/targets/0/target/position/2");
    ikd_tick_free(tt);
    ck_assert_int_eq(sb.errors + sj.errors, 0);
    ikd_conn_free(bc);
    ikd_conn_free(jc);
}
END_TEST

START_TEST(binary_tick_refused_whole)
{
    const char *flags[] = {"--max-streams", "2", NULL};
    daemon_start(0, flags);
    seen s = {0};
    ikd_conn *c = conn_new(&s, true);
    ikd_chain leg = {.json = LEG};
    open_wait(c, "a", &leg, NULL);
    open_wait(c, "b", &leg, NULL);
    ikd_error e;
    ck_assert_int_eq(ikd_tick_begin(c, 42, &e), 0);
    ikd_target t = {.position = {0.2, 0.1, 0.25}};
    const char *names[] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(ikd_tick_add(c, names[k], &t, NULL, IKD_SEQ_AUTO, &e), 0);
    ck_assert(ikd_tick_is_binary(c));
    ck_assert_int_eq(ikd_tick_send(c, &e), 0);
    ikd_tick *none = NULL;
    int rc = ikd_tick_wait(c, 42, WAIT_MS, &none, &e);
    ck_assert_msg(rc < 0 && e.wire_code[0], "rc %d: %s", rc, e.message);
    ck_assert_ptr_null(none);
    ck_assert(e.has_seq);
    ck_assert_int_eq(e.seq, 42);
    ck_assert_int_eq(s.ticks, 0);
    /* the connection goes on: a tick that fits the limit is answered */
    ck_assert_int_eq(ikd_tick_begin(c, 43, &e), 0);
    ck_assert_int_eq(ikd_tick_add(c, "a", &t, NULL, IKD_SEQ_AUTO, &e), 0);
    ikd_tick *ok = send_wait(c, 43);
    double want[3] = {0.2, 0.1, 0.25};
    check_leg(ok->entries[0].result, want);
    ck_assert(s.last_binary);
    ikd_tick_free(ok);
    ikd_conn_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_binary");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, binary_position_ticks_answered_right);
    tcase_add_test(tc, binary_full_pose_ticks_equal_json);
    tcase_add_test(tc, tick_that_does_not_fit_goes_json);
    tcase_add_test(tc, binary_errors_per_target_as_json);
    tcase_add_test(tc, binary_tick_refused_whole);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
