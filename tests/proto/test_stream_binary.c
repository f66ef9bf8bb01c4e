/*
 * test_stream_binary.c: the binary form of ticks (proto/proto_stream_binary.c,
 * proto/STREAM.md "Binary ticks") against the JSON tick, the reference.
 *
 * Requests: each binary tick below is written by this test's own writer of
 * the documented layout, and so is its JSON twin (the same streams, seqs
 * and targets as JSON numbers that read back to the same doubles); both
 * must decode to the same targets (envelope: stream, seq) and, on a
 * stream's session, to the same job (solved from the same warm start, the
 * same answer text) or the same error (code, path and message): a bad seq
 * or stream name, a position out of range, an orientation that is not a
 * unit quaternion, an orientation on a planar chain, a target for a tree.
 * The errors only the binary form has (its framing, NaN, a planar target
 * off its plane) are named too.
 *
 * Answers: a tick's answer in both forms from the same jobs; the binary
 * one, read by this test's own reader, must hold the JSON answer's
 * stream, seq, skipped, code and every number (default digits, which
 * read back exactly) as the same double, and its errors the JSON errors'
 * code, path and message.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary_le.h"
#include "proto/proto.h"
#include "proto/proto_session.h"
#include "proto/proto_stream.h"
#include "tests/proto/proto_check.h"

/* ---- the layout, written and read by this test ------------------------------------ */

/* One target of a tick: its stream, its seq (NaN: none, the tick's), its
 * position and orientation. */
typedef struct tt {
    const char *stream;
    double seq;
    double p[3];
    double q[4];
} tt;

/* The binary tick of n targets (orientations when orient). */
static unsigned char *to_binary(double seq, const tt *t, size_t n, bool orient, size_t *len)
{
    size_t names = 0;
    for (size_t i = 0; i < n; i++)
        names += 1 + strlen(t[i].stream);
    size_t at = (24 + names + 7) & ~(size_t)7, stride = orient ? 64 : 32;
    *len = at + n * stride;
    unsigned char *b = calloc(1, *len);
    memcpy(b, "IKDT", 4);
    le16(b + 4, 1);
    le16(b + 6, orient ? 1 : 0);
    le32(b + 8, (uint32_t)n);
    le32(b + 12, (uint32_t)names);
    le64d(b + 16, seq);
    unsigned char *p = b + 24;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(t[i].stream);
        *p++ = (unsigned char)l;
        memcpy(p, t[i].stream, l);
        p += l;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char *r = b + at + i * stride;
        le64d(r, t[i].seq);
        for (int k = 0; k < 3; k++)
            le64d(r + 8 + 8 * k, t[i].p[k]);
        for (int k = 0; orient && k < 4; k++)
            le64d(r + 32 + 8 * k, t[i].q[k]);
    }
    return b;
}

/* The JSON twin (a planar chain's position as [x, y]). */
static char *to_json(double seq, const tt *t, size_t n, bool orient, bool planar)
{
    size_t cap = 256 + n * 512, len = 0;
    char *s = malloc(cap);
    len +=
        (size_t)snprintf(s + len, cap - len, "{\"type\":\"tick\",\"seq\":%.17g,\"targets\":[", seq);
    for (size_t i = 0; i < n; i++) {
        len +=
            (size_t)snprintf(s + len, cap - len, "%s{\"stream\":\"%s\"", i ? "," : "", t[i].stream);
        if (!isnan(t[i].seq))
            len += (size_t)snprintf(s + len, cap - len, ",\"seq\":%.17g", t[i].seq);
        len += (size_t)snprintf(s + len, cap - len, ",\"target\":{\"position\":[%.17g,%.17g",
                                t[i].p[0], t[i].p[1]);
        if (!planar)
            len += (size_t)snprintf(s + len, cap - len, ",%.17g", t[i].p[2]);
        len += (size_t)snprintf(s + len, cap - len, "]");
        if (orient)
            len +=
                (size_t)snprintf(s + len, cap - len, ",\"orientation\":[%.17g,%.17g,%.17g,%.17g]",
                                 t[i].q[0], t[i].q[1], t[i].q[2], t[i].q[3]);
        len += (size_t)snprintf(s + len, cap - len, "}}");
    }
    snprintf(s + len, cap - len, "]}");
    return s;
}

/* ---- sessions --------------------------------------------------------------------- */

static const char BONES[] = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}";
static const char JOINTS[] =
    "{\"kind\":\"joints\",\"joints\":["
    "{\"name\":\"a\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
    "{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]},"
    "\"limits\":{\"lower\":-2,\"upper\":2}},"
    "{\"name\":\"c\",\"type\":\"continuous\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[1,0,0]}},"
    "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}";
static const char PLANAR[] = "{\"kind\":\"planar\",\"lengths\":[1,0.75,0.5]}";
static const char TREE[] =
    "{\"kind\":\"tree\",\"joints\":[{\"name\":\"s\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
    "{\"name\":\"a\",\"parent\":\"s\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0.2,0]},"
    "\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":\"ha\",\"parent\":"
    "\"a\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}}],\"tips\":[\"ha\"]}";

/* ---- requests: the binary tick against its JSON twin ------------------------------- */

static int decode_bin(const unsigned char *b, size_t len, proto_stream_msg *m, proto_error *e)
{
    return proto_stream_decode_binary((const char *)b, len, m, e);
}

static void same_error(const proto_error *a, const proto_error *b)
{
    ck_assert_str_eq(proto_error_name(a->code), proto_error_name(b->code));
    ck_assert_str_eq(a->path, b->path);
    ck_assert_str_eq(a->message, b->message);
}

/* The JSON answer entry of job (solved), for comparing two jobs (without
 * time_ms). */
static char *answer_of(proto_session *s, proto_job *job)
{
    proto_session_prepare(s, job);
    proto_job_run(job, 0, 1);
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_stream_tick_solution(&w, "x", 1, 0, job, 0);
    char *t = proto_jw_finish(&w, NULL);
    /* the solve's own time differs between two runs: left out */
    char *at = strstr(t, ",\"time_ms\":");
    ck_assert_ptr_nonnull(at);
    size_t cut = strcspn(at + 1, ",}") + 1;
    memmove(at, at + cut, strlen(at + cut) + 1);
    return t;
}

/* Decodes the binary tick of t and its JSON twin; each target must give
 * the same envelope and, on session s, the same job or error. Returns the
 * count of targets refused (by either reading: they agree). */
static size_t check_twins(proto_session *s, bool planar, double seq, const tt *t, size_t n,
                          bool orient)
{
    size_t len;
    unsigned char *b = to_binary(seq, t, n, orient, &len);
    char *j = to_json(seq, t, n, orient, planar);
    proto_stream_msg mb, mj;
    proto_error eb, ej;
    ck_assert_int_eq(decode_bin(b, len, &mb, &eb), 0);
    ck_assert_msg(proto_stream_decode(j, strlen(j), &mj, &ej) == 0, "%s: %s", j, ej.message);
    ck_assert(mb.binary);
    ck_assert(!mj.binary);
    ck_assert_int_eq(mb.seq, mj.seq);
    ck_assert_uint_eq(proto_stream_tick_count(&mb), n);
    ck_assert_uint_eq(proto_stream_tick_count(&mj), n);
    size_t refused = 0;
    for (size_t i = 0; i < n; i++) {
        proto_stream_tick_target a, c;
        int ra = proto_stream_tick_target_get(&mb, i, &a, &eb);
        int rc = proto_stream_tick_target_get(&mj, i, &c, &ej);
        ck_assert_msg(ra == rc, "target %zu: binary %d, JSON %d (%s)", i, ra, rc,
                      ra ? eb.message : ej.message);
        ck_assert_str_eq(a.stream, c.stream);
        ck_assert_int_eq(a.has_seq, c.has_seq);
        ck_assert_int_eq(a.seq, c.seq);
        if (ra) {
            same_error(&eb, &ej);
            refused++;
            continue;
        }
        proto_job *ja = NULL, *jc = NULL;
        ra = proto_session_tick_target(s, proto_session_scene_of(s), &a, i, &ja, &eb);
        rc = proto_session_tick_target(s, proto_session_scene_of(s), &c, i, &jc, &ej);
        ck_assert_msg(ra == rc, "target %zu: binary %s, JSON %s", i, ra ? eb.message : "ok",
                      rc ? ej.message : "ok");
        if (ra) {
            same_error(&eb, &ej);
            refused++;
            continue;
        }
        char *xa = answer_of(s, ja), *xc = answer_of(s, jc);
        ck_assert_str_eq(xa, xc);
        free(xa);
        free(xc);
        proto_job_free(ja);
        proto_job_free(jc);
    }
    proto_stream_msg_free(&mb);
    proto_stream_msg_free(&mj);
    free(b);
    free(j);
    return refused;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(test_twins_accepted)
{
    proto_session *bones = pc_session_on(BONES, NULL);
    const tt t[] = {{"c1", NAN, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"c2", 7, {0.3, -0.1, 0.2}, {0, 0, 0, 1}},
                    {"c3", -9007199254740991.0, {0.1, 0.2, 0.3}, {0, 0, 0, 1}}};
    ck_assert_uint_eq(check_twins(bones, false, 120, t, N(t), false), 0);
    /* the seq: a target's own, else the tick's */
    size_t len;
    unsigned char *b = to_binary(120, t, N(t), false, &len);
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode_bin(b, len, &m, &e), 0);
    proto_stream_tick_target x;
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 0, &x, &e), 0);
    ck_assert_str_eq(x.stream, "c1");
    ck_assert_int_eq(x.seq, 120);
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 1, &x, &e), 0);
    ck_assert_int_eq(x.seq, 7);
    proto_stream_msg_free(&m);
    free(b);
    proto_session_free(bones);

    /* orientations on a chain that takes them, in Unity's frame and degrees */
    /* (an iteration budget, no clock: the two solves run alike) */
    proto_session *joints = pc_session_on(JOINTS, "{\"frame\":\"unity\",\"units\":\"degrees\","
                                                 "\"max_iterations\":100,\"timeout_ms\":1000}");
    const tt o[] = {{"arm", NAN, {1.2, 0.3, 0.4}, {0, 0.3826834323650898, 0, 0.9238795325112867}},
                    {"arm2", 3, {0.5, 0.5, 0.5}, {0, 0, 0, 1}}};
    ck_assert_uint_eq(check_twins(joints, false, 1, o, N(o), true), 0);
    proto_session_free(joints);

    /* a planar chain: z is 0, the twin has [x, y] */
    proto_session *planar = pc_session_on(PLANAR, NULL);
    const tt p[] = {{"p", NAN, {1.0, 0.5, 0}, {0, 0, 0, 1}}};
    ck_assert_uint_eq(check_twins(planar, true, 2, p, N(p), false), 0);
    proto_session_free(planar);
}
END_TEST

/* The errors a JSON tick can have too: worded alike, at the same paths. */
START_TEST(test_twins_refused)
{
    proto_session *bones = pc_session_on(BONES, NULL);
    const tt t[] = {{"ok", NAN, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"bad name", NAN, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"", NAN, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"s", 0.5, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"s2", 9007199254740992.0, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"s3", NAN, {1e300, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"s4", NAN, {0.2, -2e9, 0.25}, {0, 0, 0, 1}}};
    ck_assert_uint_eq(check_twins(bones, false, 5, t, N(t), false), N(t) - 1);
    proto_session_free(bones);

    proto_session *joints = pc_session_on(JOINTS, NULL);
    const tt q[] = {{"a", NAN, {1, 0, 1}, {0, 0, 0, 2}}, {"b", NAN, {1, 0, 1}, {0, 0, 0, 0}}};
    ck_assert_uint_eq(check_twins(joints, false, 5, q, N(q), true), 2);
    proto_session_free(joints);

    /* an orientation on a planar chain; a target for a tree */
    proto_session *planar = pc_session_on(PLANAR, NULL);
    const tt p[] = {{"p", NAN, {1, 0.5, 0}, {0, 0, 0, 1}}};
    ck_assert_uint_eq(check_twins(planar, true, 5, p, N(p), true), 1);
    proto_session_free(planar);
    proto_session *tree = pc_session_on(TREE, NULL);
    ck_assert_uint_eq(check_twins(tree, false, 5, p, N(p), false), 1);
    proto_session_free(tree);
}
END_TEST

/* The binary tick's error (code and path; the message names what). */
static void binary_error(const unsigned char *b, size_t len, const char *path, const char *word)
{
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode_bin(b, len, &m, &e), -1);
    ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
    ck_assert_str_eq(e.path, path);
    ck_assert_msg(strstr(e.message, word) != NULL, "\"%s\" lacks \"%s\"", e.message, word);
    ck_assert_ptr_null(m.raw);
}

START_TEST(test_errors_of_the_form)
{
    const tt t[] = {{"c1", NAN, {0.2, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"c22", NAN, {0.2, 0.1, 0.25}, {0, 0, 0, 1}}};
    size_t len;
    unsigned char *b = to_binary(9, t, 2, false, &len);
    unsigned char *c = malloc(len + 64);
    binary_error(b, 0, "", "IKDT");
    binary_error(b, 23, "", "IKDT");
    memcpy(c, b, len);
    c[0] = 'X';
    binary_error(c, len, "", "IKDT");
    memcpy(c, b, len);
    c[4] = 2;
    binary_error(c, len, "", "version 1");
    memcpy(c, b, len);
    c[6] = 2;
    binary_error(c, len, "", "flags");
    memcpy(c, b, len);
    le64d(c + 16, 1.5);
    binary_error(c, len, "/seq", "2^53");
    le64d(c + 16, NAN);
    binary_error(c, len, "/seq", "2^53");
    memcpy(c, b, len);
    le32(c + 8, 0);
    binary_error(c, len, "/targets", "non-empty");
    /* the sizes: a byte short, a byte over, a count that does not fit */
    binary_error(b, len - 1, "", "bytes");
    memcpy(c, b, len);
    c[len] = 0;
    binary_error(c, len + 1, "", "bytes");
    memcpy(c, b, len);
    le32(c + 8, 3);
    binary_error(c, len, "", "bytes");
    memcpy(c, b, len);
    le32(c + 12, 0xFFFFFFFFu);
    binary_error(c, len, "", "bytes");
    {
        /* names longer than the message: told the length such a tick has */
        size_t names = (size_t)b[12] | (size_t)b[13] << 8, stride;
        stride = (len - ((24 + names + 7) & ~(size_t)7)) / 2;
        char want[64];
        snprintf(want, sizeof want, "has %zu bytes, not %zu",
                 ((24 + (size_t)0xFFFFFFFFu + 7) & ~(size_t)7) + 2 * stride, len);
        binary_error(c, len, "", want);
    }
    /* names: one running past the section, bytes left after the last */
    memcpy(c, b, len);
    c[24 + 3] = 200; /* the second name's length */
    binary_error(c, len, "", "names");
    memcpy(c, b, len);
    c[24] = 1; /* "c" then "1" read as a length of 49 */
    binary_error(c, len, "", "names");
    free(b);
    /* one target "c1" in a names section of 7 bytes: 4 left over */
    b = to_binary(9, t, 1, false, &len);
    ck_assert_uint_eq(len, 32 + 32);
    le32(b + 12, 7);
    binary_error(b, len, "", "names");
    free(b);
    free(c);
}
END_TEST

/* The binary form's own rules on a target: NaN or infinite numbers, a
 * planar chain's z. */
START_TEST(test_errors_own_rules)
{
    proto_session *bones = pc_session_on(BONES, NULL);
    proto_session *planar = pc_session_on(PLANAR, NULL);
    const tt t[] = {{"c1", NAN, {NAN, 0.1, 0.25}, {0, 0, 0, 1}},
                    {"c2", NAN, {0.2, INFINITY, 0.25}, {0, 0, 0, 1}},
                    {"c3", NAN, {1, 0.5, 0.25}, {0, 0, 0, 1}},
                    {"c4", NAN, {1, 0.5, NAN}, {0, 0, 0, 1}}};
    static const char *const paths[] = {
        "/targets/0/target/position/0", "/targets/1/target/position/1",
        "/targets/2/target/position/2", "/targets/3/target/position/2"};
    size_t len;
    unsigned char *b = to_binary(3, t, N(t), false, &len);
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode_bin(b, len, &m, &e), 0);
    for (size_t i = 0; i < N(t); i++) {
        proto_stream_tick_target x;
        ck_assert_int_eq(proto_stream_tick_target_get(&m, i, &x, &e), 0);
        proto_job *job = NULL;
        proto_session *on = i < 2 ? bones : planar;
        ck_assert_int_eq(proto_session_tick_target(on, proto_session_scene_of(on), &x, i, &job, &e), -1);
        ck_assert_ptr_null(job);
        ck_assert_str_eq(e.path, paths[i]);
        ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
        ck_assert_msg(strstr(e.message, i == 2 ? "must be 0" : "finite") != NULL, "%s", e.message);
    }
    proto_stream_msg_free(&m);
    free(b);
    proto_session_free(bones);
    proto_session_free(planar);
}
END_TEST

/* ---- answers ------------------------------------------------------------------------ */

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Every number of the JSON value v as the next doubles at *q. */
static void same_numbers(const json_t *v, const unsigned char **q)
{
    if (json_is_number(v)) {
        double d = rd64d(*q);
        *q += 8;
        ck_assert_msg(same_double(d, json_number_value(v)), "%.17g != %.17g", d,
                      json_number_value(v));
        return;
    }
    ck_assert_msg(json_is_array(v), "not numbers");
    for (size_t k = 0; k < json_array_size(v); k++)
        same_numbers(json_array_get(v, k), q);
}

/* The binary answer (b, len) holds the JSON answer (j) entry by entry. */
static void same_answer(const unsigned char *b, size_t len, const json_t *j)
{
    ck_assert_uint_ge(len, 24);
    ck_assert_int_eq(memcmp(b, "IKDS", 4), 0);
    ck_assert_uint_eq(rd16(b + 4), 1);
    const json_t *sols = json_object_get(j, "solutions");
    ck_assert_uint_eq(rd32(b + 8), json_array_size(sols));
    ck_assert_uint_eq(rd32(b + 12), json_integer_value(json_object_get(j, "skipped")));
    ck_assert(same_double(rd64d(b + 16), (double)json_integer_value(json_object_get(j, "seq"))));
    size_t at = 24;
    static const char *const members[] = {
        "joints",         "positions",         "rotations",      "local_rotations", "tip",
        "position_error", "orientation_error", "max_joint_step", "time_ms"};
    for (size_t i = 0; i < json_array_size(sols); i++) {
        const json_t *s = json_array_get(sols, i);
        const unsigned char *e = b + at;
        size_t size = rd32(e);
        ck_assert_uint_eq(size % 8, 0);
        ck_assert_uint_le(at + size, len);
        size_t name = e[5];
        const json_t *js = json_object_get(s, "stream"), *jq = json_object_get(s, "seq");
        ck_assert_int_eq(e[6] & 1, jq != NULL);
        if (jq)
            ck_assert(same_double(rd64d(e + 8), (double)json_integer_value(jq)));
        const json_t *err = json_object_get(s, "error");
        if (err) {
            ck_assert_uint_eq(e[4], 2);
            size_t lc = rd16(e + 16), lp = rd16(e + 18), lm = rd32(e + 20);
            ck_assert_uint_le(24 + name + lc + lp + lm, size);
            const char *x = (const char *)e + 24;
            ck_assert_uint_eq(name, js ? json_string_length(js) : 0);
            ck_assert_int_eq(memcmp(x, js ? json_string_value(js) : "", name), 0);
            const char *code = json_string_value(json_object_get(err, "code"));
            const char *path = json_string_value(json_object_get(err, "path"));
            const char *msg = json_string_value(json_object_get(err, "message"));
            ck_assert_uint_eq(lc, strlen(code));
            ck_assert_int_eq(memcmp(x + name, code, lc), 0);
            ck_assert_uint_eq(lp, strlen(path));
            ck_assert_int_eq(memcmp(x + name + lc, path, lp), 0);
            ck_assert_uint_eq(lm, strlen(msg));
            ck_assert_int_eq(memcmp(x + name + lc + lp, msg, lm), 0);
        } else {
            ck_assert_uint_eq(e[4], 1);
            ck_assert_uint_eq(rd32(e + 16), json_integer_value(json_object_get(s, "skipped")));
            size_t rec = rd32(e + 20);
            uint32_t fields = rd32(e + 24);
            size_t dof = rd16(e + 28), npos = rd16(e + 30), nrot = rd16(e + 32),
                   dims = rd16(e + 34);
            ck_assert_uint_eq(size, 40 + rec + ((name + 7) & ~(size_t)7));
            ck_assert_int_eq(memcmp(e + 40 + rec, json_string_value(js), name), 0);
            ck_assert_uint_eq(name, json_string_length(js));
            const json_t *r = json_object_get(s, "result");
            const unsigned char *p = e + 40;
            ck_assert_int_eq((int32_t)rd32(p), json_integer_value(json_object_get(r, "code")));
            ck_assert_uint_eq(rd32(p + 8), json_integer_value(json_object_get(r, "iterations")));
            p += 16;
            const size_t doubles[9] = {dof, dims * npos, 4 * nrot, 4 * nrot, 7, 1, 1, 1, 1};
            for (int m = 0; m < 9; m++) {
                if (!(fields & (1u << m)))
                    continue;
                const json_t *v = json_object_get(r, members[m]);
                if (v && m == 4) {
                    same_numbers(json_object_get(v, "position"), &p);
                    same_numbers(json_object_get(v, "orientation"), &p);
                } else if (v) {
                    same_numbers(v, &p);
                } else {
                    for (size_t k = 0; k < doubles[m]; k++, p += 8)
                        ck_assert(isnan(rd64d(p)));
                }
            }
            ck_assert_ptr_eq(p, e + 40 + rec);
        }
        at += size;
    }
    ck_assert_uint_eq(at, len);
}

START_TEST(test_answers)
{
    proto_session *bones = pc_session_on(BONES, NULL);
    proto_session *joints = pc_session_on(JOINTS, "{\"frame\":\"unity\",\"units\":\"degrees\"}");
    proto_session *sess[] = {bones, joints, bones};
    const char *names[] = {"c1", "arm", "c1"};
    proto_job *jobs[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 2; k++) {
        json_t *t = json_loads(k ? "{\"position\":[1.2,0.3,0.4]}" : "{\"position\":[0.2,0.1,0.25]}",
                               0, NULL);
        proto_error e;
        ck_assert_int_eq(proto_session_target(sess[k], t, NULL, &jobs[k], &e), 0);
        json_decref(t);
        proto_session_prepare(sess[k], jobs[k]);
        proto_job_run(jobs[k], 0, 1);
    }
    proto_error err;
    proto_error_set(&err, PROTO_E_UNKNOWN_STREAM, "/targets/2/stream",
                    "no stream \"zz\" is open on this connection");
    proto_jw a, j;
    proto_jw_init(&a, NULL, 0);
    proto_jw_init(&j, NULL, 0);
    proto_stream_tick_head_binary(&a, -9007199254740991LL, 4, 4);
    proto_stream_tick_head(&j, -9007199254740991LL, 4);
    for (int k = 0; k < 2; k++) {
        proto_stream_tick_solution_binary(&a, names[k], 40 + k, (size_t)k, jobs[k], 0);
        proto_stream_tick_solution(&j, names[k], 40 + k, (size_t)k, jobs[k], 0);
        proto_jw_raw(&j, ",", 1);
    }
    proto_stream_tick_error_binary(&a, "zz", true, 7, &err);
    proto_stream_tick_error(&j, "zz", true, 7, &err);
    proto_jw_raw(&j, ",", 1);
    proto_stream_tick_error_binary(&a, NULL, false, 0, &err);
    proto_stream_tick_error(&j, NULL, false, 0, &err);
    proto_stream_tick_tail(&j);
    size_t bl, jl;
    char *bin = proto_jw_finish(&a, &bl), *text = proto_jw_finish(&j, &jl);
    json_t *parsed = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(parsed);
    same_answer((const unsigned char *)bin, bl, parsed);
    /* a wrong number is seen: the test can fail */
    json_t *r0 = json_object_get(json_array_get(json_object_get(parsed, "solutions"), 0), "result");
    ck_assert_ptr_nonnull(json_object_get(r0, "position_error"));
    json_decref(parsed);
    free(bin);
    free(text);
    for (int k = 0; k < 2; k++)
        proto_session_solved(sess[k], jobs[k]);
    proto_session_free(bones);
    proto_session_free(joints);
}
END_TEST

static Suite *binary_tick_suite(void)
{
    Suite *s = suite_create("stream_binary");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_twins_accepted);
    tcase_add_test(tc, test_twins_refused);
    tcase_add_test(tc, test_errors_of_the_form);
    tcase_add_test(tc, test_errors_own_rules);
    tcase_add_test(tc, test_answers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(binary_tick_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
