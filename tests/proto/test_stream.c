/*
 * test_stream.c: proto/proto_stream.h on its own: decoding every message type,
 * every envelope error (with the stream and seq still recovered for the
 * reply), the UTF-8 validator against RFC 3629's edge cases, path sampling
 * (linear positions, slerp orientations checked by rotation angle, the
 * sample count and the last sample on the last waypoint) and the encoders
 * (their output is parsed back with jansson).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_codec.h"
#include "proto/proto_scene.h"
#include "proto/proto_session.h"
#include "proto/proto_stream.h"
#include "solver/ik_math.h"
#include "tests/proto/oracle.h"
#include "tests/proto/proto_check.h"

/* A stream session on a three-joint chain (the numeric solver takes
 * position, orientation and weights), to bind and sample paths. */
static proto_session *joints_session(void)
{
    static const char chain[] =
        "{\"kind\":\"joints\",\"joints\":["
        "{\"name\":\"a\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"b\",\"type\":\"continuous\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]}},"
        "{\"name\":\"c\",\"type\":\"continuous\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[1,0,0]}},"
        "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}";
    return pc_session_on(chain, NULL);
}

static int decode(const char *text, proto_stream_msg *m, proto_error *e)
{
    return proto_stream_decode(text, strlen(text), m, e);
}

static void expect_error(const char *text, const char *code, const char *path)
{
    proto_stream_msg m;
    proto_error e;
    ck_assert_msg(decode(text, &m, &e) == -1, "accepted: %s", text);
    ck_assert_str_eq(proto_error_name(e.code), code);
    ck_assert_str_eq(e.path, path);
    ck_assert_ptr_null(m.root);
    ck_assert_ptr_null(m.path);
}

START_TEST(test_decode_open)
{
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode("{\"type\":\"open\",\"stream\":\"arm-1\",\"chain\":{\"joints\":[]},"
                            "\"options\":{\"tolerance\":1e-6}}",
                            &m, &e),
                     0);
    ck_assert_int_eq(m.type, PROTO_STREAM_OPEN);
    ck_assert_str_eq(m.stream, "arm-1");
    ck_assert(json_is_object(m.chain));
    ck_assert_ptr_null(m.chain_id);
    ck_assert(json_is_object(m.options));
    proto_stream_msg_free(&m);
    ck_assert_ptr_null(m.root);
    proto_stream_msg_free(&m); /* twice is fine */

    ck_assert_int_eq(decode("{\"type\":\"open\",\"stream\":\"a\",\"chain_id\":\"c0ffee\"}", &m, &e),
                     0);
    ck_assert_ptr_null(m.chain);
    ck_assert_str_eq(m.chain_id, "c0ffee");
    ck_assert_ptr_null(m.options);
    ck_assert_ptr_null(m.seed);
    proto_stream_msg_free(&m);

    /* the arm's state as the open seed (validated later, as HTTP's) */
    ck_assert_int_eq(
        decode("{\"type\":\"open\",\"stream\":\"a\",\"chain_id\":\"c\",\"seed\":[0.1,0.2]}", &m, &e),
        0);
    ck_assert(json_is_array(m.seed));
    ck_assert_uint_eq(json_array_size(m.seed), 2);
    proto_stream_msg_free(&m);
    ck_assert_ptr_null(m.seed);
}
END_TEST

START_TEST(test_decode_target_close)
{
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode("{\"seq\":-17,\"target\":{\"position\":[1,2,3]},\"type\":\"target\","
                            "\"stream\":\"s.1:x_y\"}",
                            &m, &e),
                     0);
    ck_assert_int_eq(m.type, PROTO_STREAM_TARGET);
    ck_assert(m.has_seq);
    ck_assert_int_eq(m.seq, -17);
    ck_assert(json_is_object(m.target));
    ck_assert_ptr_null(m.seed);
    proto_stream_msg_free(&m);

    ck_assert_int_eq(decode("{\"type\":\"target\",\"stream\":\"s\",\"seq\":1,"
                            "\"target\":{\"position\":[1,2,3]},\"seed\":[0.5]}",
                            &m, &e),
                     0);
    ck_assert(json_is_array(m.seed));
    proto_stream_msg_free(&m);

    ck_assert_int_eq(decode("{\"type\":\"target\",\"stream\":\"s\",\"seq\":9007199254740991,"
                            "\"target\":null}",
                            &m, &e),
                     0);
    ck_assert_int_eq(m.seq, 9007199254740991LL);
    ck_assert(json_is_null(m.target)); /* validated later by proto_job_decode_json */
    proto_stream_msg_free(&m);

    ck_assert_int_eq(decode("{\"type\":\"close\",\"stream\":\"s\"}", &m, &e), 0);
    ck_assert_int_eq(m.type, PROTO_STREAM_CLOSE);
    ck_assert(!m.has_seq);
    proto_stream_msg_free(&m);
}
END_TEST

START_TEST(test_decode_errors)
{
    expect_error("", "invalid_json", "");
    /* an empty WebSocket text message reaches the decoder as (NULL, 0) */
    {
        proto_stream_msg m;
        proto_error e;
        ck_assert_int_eq(proto_stream_decode(NULL, 0, &m, &e), -1);
        ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
        ck_assert_msg(strstr(e.message, "empty") && !strstr(e.message, "-1"), "%s", e.message);
        ck_assert_int_eq(proto_stream_decode("", 0, &m, &e), -1);
        ck_assert_msg(strstr(e.message, "empty") && !strstr(e.message, "-1"), "%s", e.message);
    }
    expect_error("{\"type\":\"open\"", "invalid_json", "");
    expect_error("{\"type\":\"close\",\"stream\":\"a\",\"stream\":\"b\"}", "invalid_json", "");
    expect_error("[1,2]", "invalid_request", "");
    expect_error("\"open\"", "invalid_json", ""); /* jansson rejects bare scalars */
    expect_error("{\"stream\":\"s\"}", "invalid_request", "/type");
    expect_error("{\"type\":7,\"stream\":\"s\"}", "invalid_request", "/type");
    expect_error("{\"type\":\"jump\",\"stream\":\"s\"}", "unknown_type", "/type");
    expect_error("{\"type\":\"close\"}", "invalid_request", "/stream");
    expect_error("{\"type\":\"close\",\"stream\":\"\"}", "invalid_request", "/stream");
    expect_error("{\"type\":\"close\",\"stream\":\"a b\"}", "invalid_request", "/stream");
    expect_error("{\"type\":\"close\",\"stream\":\"a\\\"b\"}", "invalid_request", "/stream");
    expect_error("{\"type\":\"close\",\"stream\":12}", "invalid_request", "/stream");
    expect_error("{\"type\":\"close\",\"stream\":"
                 "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
                 "invalid_request", "/stream"); /* 65 characters */
    expect_error("{\"type\":\"close\",\"stream\":\"s\",\"extra\":1}", "invalid_request", "/extra");
    expect_error("{\"type\":\"target\",\"stream\":\"s\",\"target\":{}}", "invalid_request", "/seq");
    expect_error("{\"type\":\"target\",\"stream\":\"s\",\"seq\":1.5,\"target\":{}}",
                 "invalid_request", "/seq");
    expect_error("{\"type\":\"target\",\"stream\":\"s\",\"seq\":9007199254740992,\"target\":{}}",
                 "invalid_request", "/seq");
    expect_error("{\"type\":\"target\",\"stream\":\"s\",\"seq\":-9007199254740992,\"target\":{}}",
                 "invalid_request", "/seq");
    /* the most negative 64-bit integer, whose magnitude no long long holds */
    expect_error("{\"type\":\"target\",\"stream\":\"s\",\"seq\":-9223372036854775808,"
                 "\"target\":{}}",
                 "invalid_request", "/seq");
    expect_error("{\"type\":\"target\",\"stream\":\"s\",\"seq\":1}", "invalid_request", "/target");
    expect_error("{\"type\":\"open\",\"stream\":\"s\"}", "invalid_request", "");
    expect_error("{\"type\":\"open\",\"stream\":\"s\",\"chain\":{},\"chain_id\":\"x\"}",
                 "invalid_request", "");
    expect_error("{\"type\":\"open\",\"stream\":\"s\",\"chain_id\":5}", "invalid_request",
                 "/chain_id");
    expect_error("{\"type\":\"open\",\"stream\":\"s\",\"chain_id\":\"x\",\"options\":[]}",
                 "invalid_request", "/options");
}
END_TEST

START_TEST(test_errors_keep_stream_and_seq)
{
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode("{\"type\":\"target\",\"stream\":\"s7\",\"seq\":42,\"bogus\":1,"
                            "\"target\":{}}",
                            &m, &e),
                     -1);
    ck_assert_str_eq(m.stream, "s7");
    ck_assert(m.has_seq);
    ck_assert_int_eq(m.seq, 42);
    ck_assert_str_eq(e.path, "/bogus");

    ck_assert_int_eq(decode("not json", &m, &e), -1);
    ck_assert_str_eq(m.stream, "");
    ck_assert(!m.has_seq);
}
END_TEST

START_TEST(test_utf8)
{
    ck_assert(proto_stream_utf8_valid("", 0));
    ck_assert(proto_stream_utf8_valid("plain ascii", 11));
    ck_assert(proto_stream_utf8_valid("\xc3\xa9", 2));             /* U+00E9 */
    ck_assert(proto_stream_utf8_valid("\xe2\x82\xac", 3));         /* U+20AC */
    ck_assert(proto_stream_utf8_valid("\xf0\x9f\x98\x80", 4));     /* U+1F600 */
    ck_assert(proto_stream_utf8_valid("\xf4\x8f\xbf\xbf", 4));     /* U+10FFFF */
    ck_assert(proto_stream_utf8_valid("\xed\x9f\xbf", 3));         /* U+D7FF */
    ck_assert(!proto_stream_utf8_valid("\xc3", 1));                /* truncated */
    ck_assert(!proto_stream_utf8_valid("\xe2\x82", 2));            /* truncated */
    ck_assert(!proto_stream_utf8_valid("\x80", 1));                /* lone continuation */
    ck_assert(!proto_stream_utf8_valid("\xc0\xaf", 2));            /* overlong '/' */
    ck_assert(!proto_stream_utf8_valid("\xe0\x80\xaf", 3));        /* overlong */
    ck_assert(!proto_stream_utf8_valid("\xf0\x80\x80\xaf", 4));    /* overlong */
    ck_assert(!proto_stream_utf8_valid("\xed\xa0\x80", 3));        /* surrogate U+D800 */
    ck_assert(!proto_stream_utf8_valid("\xf4\x90\x80\x80", 4));    /* U+110000 */
    ck_assert(!proto_stream_utf8_valid("\xff", 1));
    ck_assert(!proto_stream_utf8_valid("ok\xc3(", 4));             /* bad continuation */
    /* the length is honoured: a valid prefix of an invalid buffer */
    ck_assert(proto_stream_utf8_valid("ok\xff", 2));
}
END_TEST

START_TEST(test_names)
{
    ck_assert(proto_stream_name_valid("a"));
    ck_assert(proto_stream_name_valid("Z9_.:-"));
    ck_assert(!proto_stream_name_valid(""));
    ck_assert(!proto_stream_name_valid(NULL));
    ck_assert(!proto_stream_name_valid("a/b"));
    ck_assert(!proto_stream_name_valid("\xc3\xa9"));
    char name[PROTO_STREAM_NAME_MAX + 2];
    memset(name, 'x', sizeof name);
    name[PROTO_STREAM_NAME_MAX] = '\0';
    ck_assert(proto_stream_name_valid(name));
    name[PROTO_STREAM_NAME_MAX] = 'x';
    name[PROTO_STREAM_NAME_MAX + 1] = '\0';
    ck_assert(!proto_stream_name_valid(name));
}
END_TEST

/* Sample i of path p (bound to a joints session on first use) as the
 * typed target its job carries; *t gets the whole target when not NULL. */
static void sample_pose(proto_stream_path *p, size_t i, double pos[3], double q[4],
                        proto_target *t)
{
    proto_session *ss = joints_session();
    proto_error e;
    ck_assert_msg(proto_session_path(ss, p, &e) == 0, "%s at %s", e.message, e.path);
    proto_job *job;
    ck_assert_msg(proto_session_sample(ss, p, i, &job, &e) == 0, "%s", e.message);
    const proto_target *s = &job->targets[0];
    pos[0] = s->position.x, pos[1] = s->position.y, pos[2] = s->position.z;
    if (q) {
        ck_assert(s->has_orientation);
        q[0] = s->orientation.x, q[1] = s->orientation.y, q[2] = s->orientation.z,
        q[3] = s->orientation.w;
    }
    if (t)
        *t = *s;
    proto_job_free(job);
    proto_session_free(ss);
}

START_TEST(test_path_interpolation)
{
    /* Two segments over 2 s at 10 Hz: 21 samples; the second waypoint turns
     * 90 degrees about z. */
    const char *text =
        "{\"type\":\"path\",\"stream\":\"s\",\"seq\":3,\"rate_hz\":10,\"duration_s\":2,"
        "\"waypoints\":["
        "{\"position\":[0,0,0],\"orientation\":[0,0,0,1],\"weights\":[1,1,1,1,1,0.5]},"
        "{\"position\":[1,0,0],\"orientation\":[0,0,0.7071067811865476,0.7071067811865476]},"
        "{\"position\":[1,2,0],\"orientation\":[0,0,0.7071067811865476,0.7071067811865476]}]}";
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode(text, &m, &e), 0);
    ck_assert_int_eq(m.type, PROTO_STREAM_PATH);
    proto_stream_path *p = m.path;
    m.path = NULL; /* taken out: outlives the message */
    proto_stream_msg_free(&m);
    ck_assert_uint_eq(proto_stream_path_count(p), 21);
    ck_assert_double_eq_tol(proto_stream_path_rate_hz(p), 10.0, 1e-12);

    double pos[3], q[4];
    proto_target t0;
    sample_pose(p, 0, pos, q, &t0);
    ck_assert_double_eq_tol(pos[0], 0, 1e-12);
    /* other members come from the segment's first waypoint */
    ck_assert(t0.has_weights);
    ck_assert_double_eq_tol(t0.weight[5], 0.5, 1e-15);
    sample_pose(p, 9, pos, q, &t0); /* still segment 0 */
    ck_assert(t0.has_weights);
    sample_pose(p, 10, pos, q, &t0); /* segment 1 starts at the waypoint without */
    ck_assert(!t0.has_weights);

    sample_pose(p, 5, pos, q, NULL); /* t = 0.5 s: half of segment 0 */
    ck_assert_double_eq_tol(pos[0], 0.5, 1e-12);
    ck_assert_double_eq_tol(pos[1], 0.0, 1e-12);
    ik_quat qh = {q[0], q[1], q[2], q[3]};
    ck_assert_double_eq_tol(ik_quat_angle_between(ik_quat_identity(), qh), IK_PI / 4, 1e-9);
    ck_assert_double_eq_tol(q[2] * q[2] + q[3] * q[3], 1.0, 1e-12);

    sample_pose(p, 15, pos, q, NULL); /* t = 1.5 s: half of segment 1 */
    ck_assert_double_eq_tol(pos[0], 1.0, 1e-12);
    ck_assert_double_eq_tol(pos[1], 1.0, 1e-12);

    sample_pose(p, 20, pos, q, NULL); /* the last waypoint exactly */
    ck_assert_double_eq_tol(pos[0], 1.0, 1e-12);
    ck_assert_double_eq_tol(pos[1], 2.0, 1e-12);
    ck_assert_double_eq_tol(q[2], 0.7071067811865476, 1e-12);

    proto_session *ss = joints_session();
    proto_job *job;
    ck_assert_int_eq(proto_session_sample(ss, p, 21, &job, &e), -1);
    ck_assert_ptr_null(job);
    proto_session_free(ss);
    proto_stream_path_free(p);
    proto_stream_path_free(NULL);
}
END_TEST

START_TEST(test_path_defaults_and_position_only)
{
    /* No rate, no duration: 60 Hz, one second per segment -> 61 samples. */
    const char *text = "{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,"
                       "\"waypoints\":[{\"position\":[0,0,0]},{\"position\":[0,0,3]}]}";
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode(text, &m, &e), 0);
    ck_assert_uint_eq(proto_stream_path_count(m.path), 61);
    double pos[3];
    sample_pose(m.path, 20, pos, NULL, NULL);
    ck_assert_double_eq_tol(pos[2], 1.0, 1e-12);
    proto_target t;
    sample_pose(m.path, 20, pos, NULL, &t);
    ck_assert(!t.has_orientation);
    proto_stream_msg_free(&m);

    /* A duration shorter than one period still gives both ends. */
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":1,"
                            "\"duration_s\":0.1,\"waypoints\":[{\"position\":[0,0,0]},"
                            "{\"position\":[1,0,0]}]}",
                            &m, &e),
                     0);
    ck_assert_uint_eq(proto_stream_path_count(m.path), 2);
    sample_pose(m.path, 1, pos, NULL, NULL);
    ck_assert_double_eq_tol(pos[0], 1.0, 1e-12);
    proto_stream_msg_free(&m);
}
END_TEST

/* A path is bound to its stream's session when it arrives: a waypoint the
 * stream's solver cannot use is refused then, named by its index, and the
 * samples of a bound path are jobs in the stream's frame. */
START_TEST(test_path_bound_to_session)
{
    static const char bones[] = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],"
                                "[0,0,0.1]]}";
    proto_error e;
    proto_chain *c = proto_chain_decode(bones, strlen(bones), NULL, &e);
    ck_assert_ptr_nonnull(c);
    proto_session *ss;
    json_t *opt = json_pack("{s:s}", "frame", "unity");
    ck_assert_int_eq(proto_session_open(c, opt, NULL, NULL, &ss, &e), 0);
    json_decref(opt);
    proto_chain_unref(c);
    /* two_bone takes no orientation: the second waypoint is named */
    proto_stream_msg m;
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                            "[{\"position\":[0,0,0],\"orientation\":[0,0,0,1]},"
                            "{\"position\":[1,0,0],\"orientation\":[0,0,0,1]}]}",
                            &m, &e),
                     0);
    ck_assert_int_eq(proto_session_path(ss, m.path, &e), -1);
    ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
    ck_assert_str_eq(e.path, "/waypoints/0/orientation");
    proto_job *job;
    ck_assert_int_eq(proto_session_sample(ss, m.path, 0, &job, &e), -1); /* unbound */
    proto_stream_msg_free(&m);
    /* an unknown member of a waypoint, as of a target */
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                            "[{\"position\":[0,0,0]},{\"position\":[1,0,0],\"pol\":[0,0,1]}]}",
                            &m, &e),
                     0);
    ck_assert_int_eq(proto_session_path(ss, m.path, &e), -1);
    ck_assert_str_eq(e.path, "/waypoints/1/pol");
    proto_stream_msg_free(&m);
    /* a good path: samples converted from the stream's frame (unity
     * (x, y, z) is ROS (z, -x, y)) */
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":2,"
                            "\"duration_s\":1,\"waypoints\":[{\"position\":[0,0,0]},"
                            "{\"position\":[1,2,3],\"pole\":[0,1,0]}]}",
                            &m, &e),
                     0);
    ck_assert_int_eq(proto_session_path(ss, m.path, &e), 0);
    ck_assert_int_eq(proto_session_sample(ss, m.path, 1, &job, &e), 0);
    ck_assert_double_eq_tol(job->targets[0].position.x, 1.5, 1e-12);
    ck_assert_double_eq_tol(job->targets[0].position.y, -0.5, 1e-12);
    ck_assert_double_eq_tol(job->targets[0].position.z, 1.0, 1e-12);
    ck_assert(!job->targets[0].has_pole); /* segment 0 starts without one */
    proto_job_free(job);
    /* the last sample lies on the last waypoint; its other members are
     * still those of the segment's first waypoint */
    ck_assert_int_eq(proto_session_sample(ss, m.path, 2, &job, &e), 0);
    ck_assert_double_eq_tol(job->targets[0].position.x, 3.0, 1e-12);
    ck_assert_double_eq_tol(job->targets[0].position.y, -1.0, 1e-12);
    ck_assert_double_eq_tol(job->targets[0].position.z, 2.0, 1e-12);
    ck_assert(!job->targets[0].has_pole);
    proto_job_free(job);
    proto_stream_msg_free(&m);
    proto_session_free(ss);
}
END_TEST

/* Paths on schedule: samples in order as they fall due, a late wake-up
 * catches up one sample at a time, skips only beyond the lag window, the
 * last sample never skipped. */
START_TEST(test_path_schedule)
{
    proto_stream_msg m;
    proto_error e;
    /* 1000 Hz for 0.3 s: 301 samples, one per millisecond */
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":1000,"
                            "\"duration_s\":0.3,\"waypoints\":[{\"position\":[0,0,0]},"
                            "{\"position\":[1,0,0]}]}",
                            &m, &e),
                     0);
    const proto_stream_path *p = m.path;
    ck_assert_uint_eq(proto_stream_path_count(p), 301);
    size_t skip;
    double wait;
    /* sample 0 is due at once */
    ck_assert_uint_eq(proto_stream_path_next(p, -1, 0.0, &skip, &wait), 0);
    ck_assert_uint_eq(skip, 0);
    /* not yet due: says how long to wait */
    ck_assert_uint_eq(proto_stream_path_next(p, 0, 0.25, &skip, &wait), 301);
    ck_assert_double_eq_tol(wait, 0.75, 1e-9);
    /* a wake-up 40 ms late catches up in order: samples 1, 2, ... each due */
    for (long long last = 0; last < 40; last++) {
        ck_assert_uint_eq(proto_stream_path_next(p, last, 41.0, &skip, &wait), (size_t)last + 1);
        ck_assert_uint_eq(skip, 0);
    }
    /* 150 ms late (beyond the 100 ms window): the oldest within it */
    ck_assert_uint_eq(proto_stream_path_next(p, 0, 151.0, &skip, &wait), 51);
    ck_assert_uint_eq(skip, 50);
    /* long after the end: the last sample, never past it */
    ck_assert_uint_eq(proto_stream_path_next(p, 10, 10000.0, &skip, &wait), 300);
    ck_assert_uint_eq(skip, 289);
    ck_assert_uint_eq(proto_stream_path_next(p, 300, 10000.0, &skip, &wait), 301);
    proto_stream_msg_free(&m);

    /* at 2 Hz the window is two periods (1 s), not 100 ms */
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":2,"
                            "\"duration_s\":5,\"waypoints\":[{\"position\":[0,0,0]},"
                            "{\"position\":[1,0,0]}]}",
                            &m, &e),
                     0);
    ck_assert_uint_eq(proto_stream_path_next(m.path, 0, 1400.0, &skip, &wait), 1);
    ck_assert_uint_eq(skip, 0);
    proto_stream_msg_free(&m);
}
END_TEST

START_TEST(test_path_errors)
{
    const char *two = "[{\"position\":[0,0,0]},{\"position\":[1,0,0]}]";
    char buf[512];
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0}", "invalid_request", "/waypoints");
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":[{\"position\":[0,0,0]}]}",
                 "invalid_request", "/waypoints");
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":[1,2]}",
                 "invalid_request", "/waypoints/0");
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                 "[{\"position\":[0,0,0]},{\"position\":[1,0]}]}",
                 "invalid_request", "/waypoints/1/position");
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                 "[{\"position\":[0,0,0]},{\"position\":[1,0,\"x\"]}]}",
                 "invalid_request", "/waypoints/1/position");
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                 "[{\"position\":[0,0,0],\"orientation\":[0,0,0,1]},{\"position\":[1,0,0]}]}",
                 "invalid_request", "/waypoints/1");
    expect_error("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                 "[{\"position\":[0,0,0],\"orientation\":[0,0,0,0]},"
                 "{\"position\":[1,0,0],\"orientation\":[0,0,0,1]}]}",
                 "invalid_request", "/waypoints/0/orientation");
    snprintf(buf, sizeof buf, "{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":0,"
                              "\"waypoints\":%s}", two);
    expect_error(buf, "invalid_request", "/rate_hz");
    snprintf(buf, sizeof buf, "{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":5000,"
                              "\"waypoints\":%s}", two);
    expect_error(buf, "invalid_request", "/rate_hz");
    snprintf(buf, sizeof buf, "{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"duration_s\":-1,"
                              "\"waypoints\":%s}", two);
    expect_error(buf, "invalid_request", "/duration_s");
    snprintf(buf, sizeof buf, "{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"rate_hz\":1000,"
                              "\"duration_s\":1e6,\"waypoints\":%s}", two);
    expect_error(buf, "too_large", "/duration_s");
    snprintf(buf, sizeof buf, "{\"type\":\"path\",\"stream\":\"s\",\"waypoints\":%s}", two);
    expect_error(buf, "invalid_request", "/seq");
}
END_TEST

/* A waypoint's orientation follows the rule of a target's: a unit
 * quaternion within 1e-3 (normalised), otherwise rejected with the same
 * message and the waypoint's path. */
START_TEST(test_path_orientation_unit)
{
    static const char *const bad[] = {"[0,0,0,2]", "[0,0,0,0.5]", "[0.1,0,0,0.99]", "[0,0,0,0]"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                 "[{\"position\":[0,0,0],\"orientation\":[0,0,0,1]},"
                 "{\"position\":[1,0,0],\"orientation\":%s}]}",
                 bad[k]);
        expect_error(text, "invalid_request", "/waypoints/1/orientation");
        proto_stream_msg m;
        proto_error e, te;
        ck_assert_int_eq(decode(text, &m, &e), -1);
        /* the target's message for the same quaternion, after its name */
        char req[256];
        snprintf(req, sizeof req,
                 "{\"chain\":{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\","
                 "\"axis\":[0,0,1]},{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}"
                 "]},\"target\":{\"position\":[1,0,0],\"orientation\":%s}}",
                 bad[k]);
        proto_job *job;
        ck_assert_int_eq(proto_job_decode(req, strlen(req), PROTO_SOLVE, NULL, NULL, NULL, &job, &te),
                         -1);
        ck_assert_str_eq(te.path, "/target/orientation");
        const char *tm = strstr(te.message, " must be"), *wm = strstr(e.message, " must be");
        ck_assert_msg(tm && wm && strcmp(tm, wm) == 0, "waypoint: %s / target: %s", e.message,
                      te.message);
    }
    /* within the tolerance: accepted and normalised */
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode("{\"type\":\"path\",\"stream\":\"s\",\"seq\":0,\"waypoints\":"
                            "[{\"position\":[0,0,0],\"orientation\":[0,0,0,1.0009]},"
                            "{\"position\":[1,0,0],\"orientation\":[0,0,0.9995,0]}]}",
                            &m, &e),
                     0);
    double pos[3], q[4];
    sample_pose(m.path, 0, pos, q, NULL);
    ck_assert_double_eq_tol(q[3], 1.0, 1e-15);
    sample_pose(m.path, proto_stream_path_count(m.path) - 1, pos, q, NULL);
    ck_assert_double_eq_tol(q[2], 1.0, 1e-15);
    proto_stream_msg_free(&m);
}
END_TEST

static json_t *parse(const char *s, size_t len)
{
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(strlen(s), len);
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    ck_assert_msg(j != NULL, "not JSON: %s", s);
    return j;
}

/* The direct solution writer prints exactly what the tree form prints, for
 * plain solutions and path samples, on a bones chain (degrees, unity frame)
 * and a joint-list chain, reachable and not. */
START_TEST(test_job_solution_matches_tree)
{
    static const char *const reqs[] = {
        "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]},"
        "\"target\":{\"position\":[0.3,0.2,0.2]}}",
        "{\"chain\":{\"kind\":\"bones\",\"frame\":\"unity\",\"positions\":[[0,0,1],[0.1,0,0.5],"
        "[0,0,0]]},\"target\":{\"position\":[5,5,5]},\"options\":{\"units\":\"degrees\"}}",
        "{\"chain\":{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"revolute\","
        "\"axis\":[0,0,1],\"origin\":{\"xyz\":[0,0,0.1]},\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"b\","
        "\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,0.5]},\"limits\":{\"lower\":-3,\"upper\":3}},"
        "{\"name\":\"tip\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0,0,0.5]}}]},"
        "\"target\":{\"position\":[0.3,0.1,0.6]}}",
    };
    for (size_t k = 0; k < sizeof reqs / sizeof reqs[0]; k++) {
        proto_job *job = NULL;
        proto_error e;
        int rc = proto_job_decode(reqs[k], strlen(reqs[k]), PROTO_SOLVE, NULL, NULL, NULL, &job, &e);
        ck_assert_msg(rc == 0, "request %zu: %s at %s", k, e.message, e.path);
        proto_job_run(job, 0, 1);
        json_t *res = oracle_result_json(job, 0);
        ck_assert_ptr_nonnull(res);
        for (size_t count = 0; count <= 7; count += 7) {
            size_t la, lb;
            char *a = oracle_stream_solution("s.1", 42, 3, res, 5, count, &la);
            char *b = proto_stream_encode_job_solution("s.1", 42, 3, job, 0, 5, count, &lb);
            ck_assert_ptr_nonnull(a);
            ck_assert_ptr_nonnull(b);
            ck_assert_str_eq(a, b);
            ck_assert_uint_eq(la, lb);
            ck_assert_ptr_nonnull(strstr(b, "\"result\":{\"status\":"));
            free(a);
            free(b);
        }
        json_decref(res);
        proto_job_free(job);
    }
}
END_TEST

START_TEST(test_encoders)
{
    size_t len;
    char *s = proto_stream_encode_opened("s1", "abc\"def", &len);
    json_t *j = parse(s, len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "opened");
    ck_assert_str_eq(json_string_value(json_object_get(j, "chain_id")), "abc\"def");
    json_decref(j);
    free(s);

    s = proto_stream_encode_closed("s1", &len);
    j = parse(s, len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "closed");
    ck_assert_str_eq(json_string_value(json_object_get(j, "stream")), "s1");
    json_decref(j);
    free(s);

    json_t *res = json_pack("{s:s, s:[f,f]}", "status", "ok", "joints", 0.25, -1.5);
    s = oracle_stream_solution("s1", -9007199254740991LL, 7, res, 0, 0, &len);
    j = parse(s, len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "solution");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "seq")), -9007199254740991LL);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "skipped")), 7);
    ck_assert_ptr_null(json_object_get(j, "index"));
    ck_assert(json_equal(json_object_get(j, "result"), res));
    json_decref(j);
    free(s);

    s = oracle_stream_solution("s1", 4, 0, res, 3, 10, &len);
    j = parse(s, len);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "index")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "count")), 10);
    json_decref(j);
    free(s);
    json_decref(res);

    s = proto_stream_encode_path_end("p", 5, 3, 2, 10, false, &len);
    j = parse(s, len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "path_end");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "sent")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "skipped")), 2);
    ck_assert(json_is_false(json_object_get(j, "completed")));
    json_decref(j);
    free(s);

    proto_error e;
    proto_error_set(&e, PROTO_E_INVALID_REQUEST, "/target/position/1", "bad \"number\"");
    s = proto_stream_encode_error("s1", true, 12, &e, &len);
    j = parse(s, len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "error");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "seq")), 12);
    json_t *inner = json_object_get(j, "error");
    ck_assert_str_eq(json_string_value(json_object_get(inner, "code")), "invalid_request");
    ck_assert_str_eq(json_string_value(json_object_get(inner, "message")), "bad \"number\"");
    ck_assert_str_eq(json_string_value(json_object_get(inner, "path")), "/target/position/1");
    json_decref(j);
    free(s);

    /* no stream, no seq; a message cut inside a UTF-8 sequence still encodes */
    proto_error_set(&e, PROTO_E_INVALID_JSON, "", "bad byte \xc3");
    s = proto_stream_encode_error(NULL, false, 0, &e, &len);
    j = parse(s, len);
    ck_assert_ptr_null(json_object_get(j, "stream"));
    ck_assert_ptr_null(json_object_get(j, "seq"));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                     "invalid_json");
    json_decref(j);
    free(s);
}
END_TEST


/* A stream opened with options.fields and options.digits answers its
 * solutions with the members asked for (and status), every number at that
 * many digits; the warm start of the next target is the full answer, not
 * the rounded text. */
START_TEST(test_session_fields_digits)
{
    proto_error e;
    proto_chain *c = proto_chain_decode(
        "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]}", 58, NULL, &e);
    ck_assert_ptr_nonnull(c);
    json_t *opt = json_loads("{\"fields\":[\"local_rotations\"],\"digits\":6}", 0, NULL);
    proto_session *s = NULL;
    ck_assert_int_eq(proto_session_open(c, opt, NULL, NULL, &s, &e), 0);
    proto_chain_unref(c);
    json_decref(opt);
    for (int k = 0; k < 3; k++) {
        json_t *t = json_pack("{s:[f,f,f]}", "position", 0.3, 0.2 + 0.01 * k, 0.2);
        proto_job *job = NULL;
        ck_assert_int_eq(proto_session_target(s, t, NULL, &job, &e), 0);
        json_decref(t);
        proto_session_prepare(s, job);
        proto_job_run(job, 0, 1);
        size_t len;
        char *m = proto_stream_encode_job_solution("leg", k, 0, job, 0, 0, 0, &len);
        json_t *j = parse(m, len);
        json_t *r = json_object_get(j, "result");
        ck_assert_uint_eq(json_object_size(r), 2);
        ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "success");
        json_t *l = json_object_get(r, "local_rotations");
        ck_assert_uint_eq(json_array_size(l), 3);
        for (size_t b = 0; b < 3; b++)
            for (size_t q = 0; q < 4; q++) {
                double v = json_real_value(json_array_get(json_array_get(l, b), q));
                char t6[32];
                snprintf(t6, sizeof t6, "%.5e", v);
                ck_assert_double_eq(strtod(t6, NULL), v);
            }
        json_decref(j);
        free(m);
        proto_session_solved(s, job);
    }
    proto_session_free(s);
}
END_TEST

/* ---- ticks: the targets of many streams in one message ---------------- */

static proto_session *bones_session(const char *options)
{
    static const char chain[] = "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]}";
    return pc_session_on(chain, options);
}

START_TEST(test_decode_tick)
{
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode("{\"type\":\"tick\",\"seq\":5,\"targets\":["
                            "{\"stream\":\"a\",\"seq\":9,\"target\":{\"position\":[1,2,3]}},"
                            "{\"target\":{\"position\":[4,5,6]},\"stream\":\"b.2\","
                            "\"seed\":[[0,0,1],[0.1,0,0.5],[0,0,0]]}]}",
                            &m, &e),
                     0);
    ck_assert_int_eq(m.type, PROTO_STREAM_TICK);
    ck_assert_str_eq(m.stream, "");
    ck_assert(m.has_seq);
    ck_assert_int_eq(m.seq, 5);
    ck_assert_uint_eq(proto_stream_tick_count(&m), 2);
    proto_stream_tick_target t;
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 0, &t, &e), 0);
    ck_assert_str_eq(t.stream, "a");
    ck_assert(t.has_seq);
    ck_assert_int_eq(t.seq, 9);
    ck_assert(json_is_object(t.target));
    ck_assert_ptr_null(t.seed);
    /* a target without its own seq carries the tick's */
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 1, &t, &e), 0);
    ck_assert_str_eq(t.stream, "b.2");
    ck_assert(t.has_seq);
    ck_assert_int_eq(t.seq, 5);
    ck_assert(json_is_array(t.seed));
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 2, &t, &e), -1);
    proto_stream_msg_free(&m);
    ck_assert_uint_eq(proto_stream_tick_count(&m), 0);

    /* the envelope of a tick */
    expect_error("{\"type\":\"tick\",\"targets\":[]}", "invalid_request", "/seq");
    expect_error("{\"type\":\"tick\",\"seq\":1}", "invalid_request", "/targets");
    expect_error("{\"type\":\"tick\",\"seq\":1,\"targets\":{}}", "invalid_request", "/targets");
    expect_error("{\"type\":\"tick\",\"seq\":1,\"targets\":[]}", "invalid_request", "/targets");
    /* a tick belongs to no one stream: its targets name theirs */
    expect_error("{\"type\":\"tick\",\"seq\":1,\"stream\":\"a\",\"targets\":[{}]}",
                 "invalid_request", "/stream");
    expect_error("{\"type\":\"tick\",\"seq\":1,\"targets\":[{}],\"rate_hz\":3}", "invalid_request",
                 "/rate_hz");
    ck_assert_int_eq(decode("{\"type\":\"tick\",\"seq\":77,\"targets\":7}", &m, &e), -1);
    ck_assert(m.has_seq);
    ck_assert_int_eq(m.seq, 77);
}
END_TEST

static void expect_tick_target_error(const char *element, const char *path, const char *stream,
                                     bool has_seq, long long seq)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"type\":\"tick\",\"seq\":3,\"targets\":[{\"stream\":\"ok\",\"target\":{}},%s]}",
             element);
    proto_stream_msg m;
    proto_error e;
    ck_assert_msg(decode(text, &m, &e) == 0, "%s: %s", text, e.message);
    proto_stream_tick_target t;
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 0, &t, &e), 0);
    ck_assert_msg(proto_stream_tick_target_get(&m, 1, &t, &e) == -1, "accepted %s", element);
    ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
    ck_assert_str_eq(e.path, path);
    ck_assert_str_eq(t.stream, stream);
    ck_assert(t.has_seq == has_seq);
    if (has_seq)
        ck_assert_int_eq(t.seq, seq);
    proto_stream_msg_free(&m);
}

/* One bad target of a tick does not make the tick bad: each target's
 * envelope is read on its own, its errors at /targets/<i>, with the stream
 * and seq recovered for its answer. */
START_TEST(test_tick_target_errors)
{
    expect_tick_target_error("7", "/targets/1", "", true, 3);
    expect_tick_target_error("{\"target\":{}}", "/targets/1/stream", "", true, 3);
    expect_tick_target_error("{\"stream\":\"a b\",\"target\":{}}", "/targets/1/stream", "", true,
                             3);
    expect_tick_target_error("{\"stream\":\"s\",\"seq\":8}", "/targets/1/target", "s", true, 8);
    expect_tick_target_error("{\"stream\":\"s\",\"seq\":1.5,\"target\":{}}", "/targets/1/seq", "s",
                             true, 3);
    expect_tick_target_error("{\"stream\":\"s\",\"seq\":9007199254740992,\"target\":{}}",
                             "/targets/1/seq", "s", true, 3);
    expect_tick_target_error("{\"stream\":\"s\",\"seq\":4,\"target\":{},\"type\":\"target\"}",
                             "/targets/1/type", "s", true, 4);
}
END_TEST

/* A tick's targets are decoded by their streams' sessions, with paths into
 * the tick message. */
START_TEST(test_tick_session_paths)
{
    proto_session *s = bones_session(NULL);
    proto_stream_msg m;
    proto_error e;
    ck_assert_int_eq(decode("{\"type\":\"tick\",\"seq\":1,\"targets\":["
                            "{\"stream\":\"a\",\"target\":{\"position\":[0.3,0.2,0.2]}},"
                            "{\"stream\":\"a\",\"target\":{\"position\":[0.3,0.2,2e9]}},"
                            "{\"stream\":\"a\",\"target\":{\"position\":[0.3,0.2,0.2]},"
                            "\"seed\":[[0,0,1]]}]}",
                            &m, &e),
                     0);
    proto_stream_tick_target t;
    proto_job *job = NULL;
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 0, &t, &e), 0);
    ck_assert_int_eq(proto_session_tick_target(s, proto_session_scene_of(s), &t, 0, &job, &e), 0);
    ck_assert_ptr_nonnull(job);
    proto_job_free(job);
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 1, &t, &e), 0);
    ck_assert_int_eq(proto_session_tick_target(s, proto_session_scene_of(s), &t, 1, &job, &e), -1);
    ck_assert_ptr_null(job);
    ck_assert_str_eq(e.path, "/targets/1/target/position/2");
    ck_assert_ptr_nonnull(strstr(e.message, "targets[1].target.position[2]"));
    ck_assert_int_eq(proto_stream_tick_target_get(&m, 2, &t, &e), 0);
    ck_assert_int_eq(proto_session_tick_target(s, proto_session_scene_of(s), &t, 2, &job, &e), -1);
    ck_assert_str_eq(e.path, "/targets/2/seed");
    proto_stream_msg_free(&m);
    proto_session_free(s);
}
END_TEST

/* The pieces of a tick's answer: each solution is the solution message of
 * that target without its "type" member, byte for byte; an error names the
 * stream and seq; the whole parses back. */
START_TEST(test_tick_encoders)
{
    proto_session *s = bones_session("{\"fields\":[\"local_rotations\"],\"digits\":6}");
    json_t *target = json_loads("{\"position\":[0.3,0.2,0.2]}", 0, NULL);
    proto_job *job;
    proto_error e;
    ck_assert_int_eq(proto_session_target(s, target, NULL, &job, &e), 0);
    json_decref(target);
    proto_session_prepare(s, job);
    proto_job_run(job, 0, 1);
    size_t len;
    char *msg = proto_stream_encode_job_solution("c1", 41, 2, job, 0, 0, 0, &len);
    static const char type[] = "{\"type\":\"solution\",";
    ck_assert_int_eq(strncmp(msg, type, strlen(type)), 0);

    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_stream_tick_head(&w, -9007199254740991LL, 4);
    proto_jw w2;
    proto_jw_init(&w2, NULL, 0);
    proto_stream_tick_solution(&w2, "c1", 41, 2, job, 0);
    char *entry = proto_jw_finish(&w2, NULL);
    ck_assert_str_eq(entry + 1, msg + strlen(type));
    ck_assert_int_eq(entry[0], '{');
    proto_jw_raw(&w, entry, strlen(entry));
    proto_jw_raw(&w, ",", 1);
    proto_error_set(&e, PROTO_E_UNKNOWN_STREAM, "/targets/1/stream", "no stream \"zz\"");
    proto_stream_tick_error(&w, "zz", true, 7, &e);
    proto_jw_raw(&w, ",", 1);
    proto_stream_tick_error(&w, "", false, 0, &e);
    proto_stream_tick_tail(&w);
    char *text = proto_jw_finish(&w, &len);
    json_t *j = parse(text, len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "tick_solution");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "seq")), -9007199254740991LL);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "skipped")), 4);
    json_t *sol = json_object_get(j, "solutions");
    ck_assert_uint_eq(json_array_size(sol), 3);
    json_t *a = json_array_get(sol, 0), *b = json_array_get(sol, 1), *c = json_array_get(sol, 2);
    ck_assert_str_eq(json_string_value(json_object_get(a, "stream")), "c1");
    ck_assert_str_eq(json_string_value(json_object_get(b, "stream")), "zz");
    ck_assert_int_eq(json_integer_value(json_object_get(b, "seq")), 7);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(b, "error"), "code")), "unknown_stream");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(b, "error"), "path")),
        "/targets/1/stream");
    ck_assert_ptr_null(json_object_get(c, "stream"));
    ck_assert_ptr_null(json_object_get(c, "seq"));
    ck_assert_ptr_nonnull(json_object_get(c, "error"));
    json_decref(j);
    free(text);
    free(entry);
    free(msg);
    proto_session_solved(s, job);
    proto_session_free(s);
}
END_TEST

/* The answer a session keeps as its warm start does not keep the scene it
 * was solved in: once the stream's scene is replaced, only the stream's
 * holders of it count (a daemon bounds the scenes its streams hold;
 * before, every stream kept its last answer's scene alive besides). */
START_TEST(test_session_answer_lets_go_of_its_scene)
{
    proto_session *s = bones_session(NULL);
    proto_error e;
    json_t *w = json_loads("{\"spheres\":[{\"radius\":0.1,\"position\":[5,0,0]}]}", 0, NULL);
    proto_scene *scene;
    ck_assert_int_eq(proto_scene_read(w, "/scene", PROTO_FRAME_ROS, &scene, &e), 0);
    proto_session_set_scene(s, proto_scene_ref(scene)); /* ours, and the session's */
    json_t *t = json_loads("{\"position\":[0.3,0.2,0.2]}", 0, NULL);
    proto_job *job;
    ck_assert_int_eq(proto_session_target(s, t, NULL, &job, &e), 0);
    ck_assert_ptr_eq(job->scene, scene);
    proto_session_solved(s, job); /* kept as the warm start */
    proto_session_set_scene(s, NULL);
    size_t refs = atomic_load(&scene->refs);
    ck_assert_uint_eq(refs, 1); /* ours only */
    proto_scene_free(scene);
    json_decref(t);
    json_decref(w);
    proto_session_free(s);
}
END_TEST

/* Conflation in the session: a target dropped unsolved (a newer one of the
 * stream replaced it) passes its seed on: the next solve of the stream
 * starts from it unless that target has a seed of its own; once a solve
 * started from it, it is spent. */
START_TEST(test_session_skip_keeps_seed)
{
    proto_session *s = bones_session(NULL);
    proto_error e;
    json_t *t = json_loads("{\"position\":[0.3,0.2,0.2]}", 0, NULL);
    /* the knee bent towards -x, then towards +x */
    json_t *seed_neg = json_loads("[[0,0,1],[-0.2,0,0.5],[0,0,0]]", 0, NULL);
    json_t *seed_pos = json_loads("[[0,0,1],[0.2,0.05,0.5],[0,0,0]]", 0, NULL);
    proto_job *j1, *j2, *j3, *j4;
    ck_assert_int_eq(proto_session_target(s, t, seed_neg, &j1, &e), 0);
    proto_session_skip(s, j1); /* takes j1 */
    ck_assert_int_eq(proto_session_target(s, t, NULL, &j2, &e), 0);
    ck_assert(!j2->has_seed[0]);
    proto_session_prepare(s, j2);
    ck_assert(j2->has_seed[0]);
    ck_assert_double_eq(j2->seed_q[3], -0.2); /* the knee's x of the skipped seed */
    proto_job_run(j2, 0, 1);
    proto_session_solved(s, j2);
    /* spent: the next one starts from the answer (the knee where j2 put it) */
    ck_assert_int_eq(proto_session_target(s, t, NULL, &j3, &e), 0);
    proto_session_prepare(s, j3);
    ck_assert(j3->has_seed[0]);
    ck_assert_double_eq(j3->seed_q[3], j2->results[0].positions[1].x);
    ck_assert_double_lt(j3->seed_q[3], 0);
    /* a newer target's own seed wins over a skipped one's */
    proto_session_skip(s, j3);
    ck_assert_int_eq(proto_session_target(s, t, seed_neg, &j3, &e), 0);
    proto_session_skip(s, j3);
    ck_assert_int_eq(proto_session_target(s, t, seed_pos, &j4, &e), 0);
    proto_session_prepare(s, j4);
    ck_assert_double_eq(j4->seed_q[3], 0.2);
    proto_job_free(j4);
    json_decref(t);
    json_decref(seed_neg);
    json_decref(seed_pos);
    proto_session_free(s);
}
END_TEST

/* ---- the tree-less tick reader against the general decoder ------------ */

static unsigned long long diff_rng = 88172645463325252ULL;
static unsigned diff_rand(unsigned n)
{
    diff_rng ^= diff_rng << 13;
    diff_rng ^= diff_rng >> 7;
    diff_rng ^= diff_rng << 17;
    return (unsigned)(diff_rng % n);
}

static void put(char *buf, size_t *o, const char *s)
{
    size_t n = strlen(s);
    memcpy(buf + *o, s, n);
    *o += n;
    buf[*o] = '\0';
}

static void put_ws(char *buf, size_t *o)
{
    static const char *const ws[] = {"", "", "", " ", "\n", "\t ", "\r\n"};
    put(buf, o, ws[diff_rand(7)]);
}

/* A number in one of the forms a client writes, near the bounds the
 * decoders check now and then. */
static void put_number(char *buf, size_t *o, double around)
{
    char t[64];
    switch (diff_rand(12)) {
    case 0: snprintf(t, sizeof t, "%d", (int)diff_rand(7) - 3); break;
    case 1: snprintf(t, sizeof t, "%.17g", around * (1 + 1e-4 * ((int)diff_rand(21) - 10))); break;
    case 2: snprintf(t, sizeof t, "%.3e", around); break;
    case 3: snprintf(t, sizeof t, "%s", diff_rand(2) ? "1e6" : "-1000000.0000001"); break;
    case 4: snprintf(t, sizeof t, "%s", diff_rand(2) ? "-0" : "0.0"); break;
    case 5: snprintf(t, sizeof t, "%s", diff_rand(2) ? "123456789012345678901" : "2.5E-3"); break;
    default: snprintf(t, sizeof t, "%.6f", around + 0.01 * ((int)diff_rand(201) - 100)); break;
    }
    put(buf, o, t);
}

static void put_numbers(char *buf, size_t *o, const double *around, int n)
{
    put(buf, o, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            put(buf, o, ",");
        put_ws(buf, o);
        put_number(buf, o, around[i]);
    }
    put(buf, o, "]");
}

/* A random tick over streams "a" .. "d" (and an unknown one), mostly of the
 * shape the tree-less reader takes, now and then with what it declines. */
static void random_tick(char *buf)
{
    size_t o = 0;
    buf[0] = '\0';
    put(buf, &o, "{");
    put_ws(buf, &o);
    int order = (int)diff_rand(3);
    char seq[48];
    snprintf(seq, sizeof seq, "\"seq\":%lld",
             diff_rand(10) ? (long long)diff_rand(1000) : 9007199254740991LL + diff_rand(2));
    if (order == 1) {
        put(buf, &o, seq);
        put(buf, &o, ",");
    }
    put(buf, &o, "\"type\":\"tick\",");
    if (order == 0) {
        put(buf, &o, seq);
        put(buf, &o, ",");
    }
    put(buf, &o, "\"targets\":[");
    int n = 1 + (int)diff_rand(5);
    for (int i = 0; i < n; i++) {
        if (i)
            put(buf, &o, ",");
        put_ws(buf, &o);
        static const char *const names[] = {"a", "b", "c", "d", "zz", "a\\u0062"};
        char el[64];
        snprintf(el, sizeof el, "{\"stream\":\"%s\"", names[diff_rand(10) ? diff_rand(4) : 4 + diff_rand(2)]);
        put(buf, &o, el);
        if (diff_rand(2)) {
            snprintf(el, sizeof el, ",\"seq\":%d", (int)diff_rand(100) - 50);
            put(buf, &o, el);
        }
        put(buf, &o, ",\"target\":{");
        static const double pos[3] = {0.3, 0.2, 0.25}, quat[4] = {0, 0, 0.6, 0.8};
        static const double up[3] = {0, 0, 1}, pole[3] = {1, 0, 0.5};
        bool first = true;
        int members = (int)diff_rand(16);
        for (int k = 0; k < 4; k++) {
            if (k > 0 && !(members & (1 << k)))
                continue;
            if (!first)
                put(buf, &o, ",");
            first = false;
            put_ws(buf, &o);
            static const char *const keys[] = {"\"position\":", "\"orientation\":", "\"up\":",
                                               "\"pole\":"};
            put(buf, &o, keys[k]);
            put_numbers(buf, &o, k == 0 ? pos : k == 1 ? quat : k == 2 ? up : pole, k == 1 ? 4 : 3);
        }
        if (diff_rand(20) == 0)
            put(buf, &o, ",\"weights\":[1,1,1,0,0,0]");
        put(buf, &o, "}");
        if (diff_rand(20) == 0)
            put(buf, &o, ",\"seed\":[[0,0,1],[0.1,0,0.5],[0,0,0]]");
        put(buf, &o, "}");
    }
    put(buf, &o, "]");
    if (diff_rand(30) == 0)
        put(buf, &o, ",\"seq\":3"); /* a duplicate key */
    put(buf, &o, "}");
    put_ws(buf, &o);
}

static void same_target(const proto_target *a, const proto_target *b)
{
    ck_assert(memcmp(&a->position, &b->position, sizeof a->position) == 0);
    ck_assert(a->has_orientation == b->has_orientation);
    ck_assert(memcmp(&a->orientation, &b->orientation, sizeof a->orientation) == 0);
    ck_assert(a->has_up == b->has_up);
    ck_assert(!a->has_up || memcmp(&a->up, &b->up, sizeof a->up) == 0);
    ck_assert(a->has_pole == b->has_pole);
    ck_assert(!a->has_pole || memcmp(&a->pole, &b->pole, sizeof a->pole) == 0);
    ck_assert(a->has_weights == b->has_weights);
}

/* 20,000 random ticks decoded by proto_stream_decode() (the tree-less reader
 * when it takes them) and by the general decoder alone: the same answer
 * for every target, on bones streams in two frames, a planar, a joint list
 * and a tree stream: the same stream, seq and error, the same job. */
START_TEST(test_tick_reader_matches_tree)
{
    static const char *const chains[5] = {
        "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.5],[0,0,0]]}",
        "{\"kind\":\"bones\",\"frame\":\"unity\",\"positions\":[[0,1,0],[0.1,0.5,0],[0,0,0]]}",
        "{\"kind\":\"planar\",\"lengths\":[1,0.8]}",
        "{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"b\",\"type\":\"continuous\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]}},"
        "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}",
        "{\"kind\":\"tree\",\"joints\":[{\"name\":\"s\",\"type\":\"continuous\","
        "\"axis\":[0,0,1]},{\"name\":\"a\",\"parent\":\"s\",\"type\":\"continuous\","
        "\"origin\":{\"xyz\":[1,0,0]},\"axis\":[0,0,1]},{\"name\":\"t\",\"parent\":\"a\","
        "\"type\":\"fixed\",\"origin\":{\"xyz\":[0.8,0,0]}}],\"tips\":[\"t\"]}"};
    static const char *const opts[5] = {NULL, "{\"units\":\"degrees\"}", NULL,
                                        "{\"frame\":\"unreal\"}", NULL};
    proto_session *ss[5];
    for (int k = 0; k < 5; k++) {
        proto_error e;
        proto_chain *c = proto_chain_decode(chains[k], strlen(chains[k]), NULL, &e);
        ck_assert_msg(c != NULL, "chain %d: %s", k, e.message);
        json_t *opt = opts[k] ? json_loads(opts[k], 0, NULL) : NULL;
        ck_assert_int_eq(proto_session_open(c, opt, NULL, NULL, &ss[k], &e), 0);
        json_decref(opt);
        proto_chain_unref(c);
    }
    size_t raw = 0, tree = 0, jobs = 0, errors = 0;
    static char text[8192];
    for (int r = 0; r < 20000; r++) {
        random_tick(text);
        size_t len = strlen(text);
        proto_stream_msg a, b;
        proto_error ea, eb;
        int ra = proto_stream_decode(text, len, &a, &ea);
        int rb = proto__stream_decode_tree(text, len, &b, &eb);
        ck_assert_msg(ra == rb, "%s", text);
        if (ra != 0) {
            ck_assert_str_eq(ea.message, eb.message);
            ck_assert_str_eq(ea.path, eb.path);
            continue;
        }
        ck_assert_ptr_null(b.raw);
        if (a.raw)
            raw++;
        else
            tree++;
        ck_assert_int_eq(a.type, b.type);
        ck_assert_int_eq(a.seq, b.seq);
        ck_assert_uint_eq(proto_stream_tick_count(&a), proto_stream_tick_count(&b));
        for (size_t i = 0; i < proto_stream_tick_count(&a); i++) {
            proto_stream_tick_target ta, tb;
            ra = proto_stream_tick_target_get(&a, i, &ta, &ea);
            rb = proto_stream_tick_target_get(&b, i, &tb, &eb);
            ck_assert_int_eq(ra, rb);
            ck_assert_str_eq(ta.stream, tb.stream);
            ck_assert(ta.has_seq == tb.has_seq);
            ck_assert_int_eq(ta.seq, tb.seq);
            if (ra != 0) {
                ck_assert_str_eq(ea.path, eb.path);
                continue;
            }
            for (int k = 0; k < 5; k++) {
                proto_job *ja = NULL, *jb = NULL;
                ra = proto_session_tick_target(ss[k], proto_session_scene_of(ss[k]), &ta, i, &ja, &ea);
                rb = proto_session_tick_target(ss[k], proto_session_scene_of(ss[k]), &tb, i, &jb, &eb);
                ck_assert_msg(ra == rb, "%s, target %zu, stream kind %d", text, i, k);
                if (ra != 0) {
                    ck_assert_int_eq(ea.code, eb.code);
                    ck_assert_str_eq(ea.message, eb.message);
                    ck_assert_str_eq(ea.path, eb.path);
                    errors++;
                    continue;
                }
                ck_assert_int_eq(ja->solver, jb->solver);
                same_target(&ja->targets[0], &jb->targets[0]);
                ck_assert(ja->has_seed[0] == jb->has_seed[0]);
                proto_job_free(ja);
                proto_job_free(jb);
                jobs++;
            }
        }
        proto_stream_msg_free(&a);
        proto_stream_msg_free(&b);
    }
    for (int k = 0; k < 5; k++)
        proto_session_free(ss[k]);
    /* both readings and both outcomes were exercised */
    ck_assert_uint_gt(raw, 3000);
    ck_assert_msg(tree > 500, "%zu raw, %zu tree", raw, tree);
    ck_assert_msg(jobs > 4000, "%zu jobs", jobs);
    ck_assert_msg(errors > 4000, "%zu errors", errors);
}
END_TEST

/* A target message as the daemon reads it (proto_stream_decode_raw): the
 * common shape from its text, without a tree (a reader that quietly
 * declined would cost speed and nothing else; a tree's tips too,
 * test_tree_targets_raw); a seed or an escape as a tree. Either way the
 * session gives what it gives the tree: the same job, or the same error at
 * the same path. */
START_TEST(test_target_message_raw)
{
    static const struct {
        const char *text;
        bool raw;
        const char *error; /* its path, NULL when accepted */
    } cases[] = {
        {"{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":{\"position\":[0.3,0.2,0.2]}}",
         true, NULL},
        {" { \"target\" : {\"up\":[0,0,1],\"position\":[0.3,0.2,0.2]} , \"seq\":-7,"
         "\"stream\":\"a\",\"type\":\"target\"}\n",
         true, "/target/up"},
        {"{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":{\"position\":[0.3,0.2,2e9]}}",
         true, "/target/position/2"},
        {"{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":{\"position\":[0.3,0.2]}}",
         true, "/target/position"},
        {"{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":{\"position\":[0.3,0.2,0.2]},"
         "\"seed\":[[0,0,1],[0.1,0,0.5],[0,0,0]]}",
         false, NULL},
        {"{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":{\"tips\":{}}}", true,
         "/target/tips"},
        {"{\"type\":\"t\\u0061rget\",\"stream\":\"a\",\"seq\":7,\"target\":{\"position\":[0,0,1]}}",
         false, NULL},
    };
    proto_session *s = bones_session(NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *text = cases[i].text;
        proto_stream_msg a, b;
        proto_error ea, eb;
        ck_assert_int_eq(proto_stream_decode_raw(text, strlen(text), &a, &ea), 0);
        ck_assert_int_eq(proto__stream_decode_tree(text, strlen(text), &b, &eb), 0);
        ck_assert_msg((a.raw != NULL) == cases[i].raw, "%s", text);
        ck_assert(a.raw ? !a.target && a.nraw == 1 : a.target != NULL);
        ck_assert_int_eq(a.type, PROTO_STREAM_TARGET);
        ck_assert_str_eq(a.stream, b.stream);
        ck_assert_int_eq(a.seq, b.seq);
        proto_job *ja = NULL, *jb = NULL;
        int ra = proto_session_message_target(s, &a, &ja, &ea);
        int rb = proto_session_target(s, b.target, b.seed, &jb, &eb);
        ck_assert_int_eq(ra, rb);
        if (ra) {
            ck_assert_int_eq(ea.code, eb.code);
            ck_assert_str_eq(ea.path, eb.path);
            ck_assert_str_eq(ea.message, eb.message);
        }
        ck_assert_msg(cases[i].error ? ra && !strcmp(ea.path, cases[i].error) : !ra, "%s: %s", text,
                      ra ? ea.path : "accepted");
        if (!ra) {
            same_target(&ja->targets[0], &jb->targets[0]);
            ck_assert(ja->has_seed[0] == jb->has_seed[0]);
        }
        proto_job_free(ja);
        proto_job_free(jb);
        proto_stream_msg_free(&a);
        proto_stream_msg_free(&b);
    }
    /* what the reader declines and the tree refuses: the tree's error */
    proto_stream_msg m;
    proto_error e;
    static const char noseq[] =
        "{\"type\":\"target\",\"stream\":\"a\",\"target\":{\"position\":[0,0,1]}}";
    ck_assert_int_eq(proto_stream_decode_raw(noseq, strlen(noseq), &m, &e), -1);
    ck_assert_str_eq(e.path, "/seq");
    ck_assert(m.raw == NULL);
    proto_session_free(s);
}
END_TEST

/* A tree's targets ({"keep", "tips"}) in a tick and in a target message,
 * as the daemon reads them: from the text, without a tree. An accepted
 * target is given its meaning by the session from that reading alone: its
 * own text is spoiled before the session sees it, so a session that
 * quietly fell back on the tree would fail here (and a reader that
 * declined fails the raw check). It gives the tree reading's goals and
 * keep rule; a target the rules refuse gets the tree's error at the same
 * path; tips the reader cannot take whole (a tip named twice, a member no
 * tip has) make the whole message the tree's. */
START_TEST(test_tree_targets_raw)
{
    static const char chain[] =
        "{\"kind\":\"tree\",\"joints\":[{\"name\":\"s\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"a\",\"parent\":\"s\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0.2,0]},"
        "\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":\"l\",\"parent\":\"a\","
        "\"type\":\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}},{\"name\":\"b\",\"parent\":\"s\","
        "\"type\":\"revolute\",\"origin\":{\"xyz\":[0,-0.2,0]},\"axis\":[0,1,0],"
        "\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":\"r\",\"parent\":\"b\",\"type\":"
        "\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}}],\"tips\":[\"l\",\"r\"]}";
    static const struct {
        const char *target;
        bool raw;          /* the message read without a tree */
        const char *error; /* its path, NULL when accepted */
    } cases[] = {
        {"{\"tips\":{\"r\":{\"position\":[0.3,-0.2,0.1],\"orientation\":[0,0,0.6,0.8]}}}", true,
         NULL},
        {" { \"keep\" : \"joints\" , \"tips\" : { \"l\" : { \"position\" : [ 1e-1 , 2 , -3 ] , "
         "\"rotation\" : [[1,0,0],[0,0,-1],[0,1,0]], \"weights\":[1,1,1,0.5,0,0], "
         "\"priority\":1, \"weight\":2.5 }, \"r\":{\"weight\":1,\"position\":[0,0,1]} } } ",
         true, NULL},
        {"{\"tips\":{},\"keep\":\"pose\"}", true, NULL},
        {"{\"tips\":{\"x\":{\"position\":[0,0,1]}}}", true, "/target/tips/x"},
        {"{\"tips\":{\"l\":{\"orientation\":[0,0,0,1]}}}", true, "/target/tips/l/position"},
        {"{\"tips\":{\"l\":{\"position\":[0,0,1],\"priority\":99}}}", true,
         "/target/tips/l/priority"},
        {"{\"tips\":{\"l\":{\"position\":[0,0,1]}},\"keep\":\"both\"}", true, "/target/keep"},
        {"{\"keep\":\"pose\"}", true, "/target/tips"},
        {"{\"position\":[0,0,1]}", true, "/target/position"},
        {"{\"tips\":{\"l\":{\"position\":[0,0,1],\"up\":[0,0,1]}}}", false, "/target/tips/l/up"},
        {"{\"tips\":[]}", false, "/target/tips"},
    };
    proto_error e;
    proto_session *s = pc_session_on(chain, NULL);
    ck_assert_uint_eq(proto_session_chain(s)->tree->ntips, 2);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int tick = 0; tick < 2; tick++) {
            char text[1024];
            snprintf(text, sizeof text,
                     tick ? "{\"type\":\"tick\",\"seq\":3,\"targets\":[{\"stream\":\"a\","
                            "\"target\":%s},{\"seq\":4,\"stream\":\"b\",\"target\":%s}]}"
                          : "{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":%s%s}",
                     cases[i].target, tick ? cases[i].target : "");
            proto_stream_msg a, b;
            proto_error ea, eb;
            ck_assert_int_eq(proto_stream_decode_raw(text, strlen(text), &a, &ea), 0);
            ck_assert_int_eq(proto__stream_decode_tree(text, strlen(text), &b, &eb), 0);
            ck_assert_msg((a.raw != NULL) == cases[i].raw, "%s", text);
            size_t n = tick ? 2 : 1;
            ck_assert_uint_eq(tick ? proto_stream_tick_count(&a) : a.raw ? a.nraw : 1, n);
            for (size_t k = 0; k < n; k++) {
                proto_stream_tick_target ta = {.raw = NULL}, tb = {.raw = NULL};
                if (tick) {
                    ck_assert_int_eq(proto_stream_tick_target_get(&a, k, &ta, &ea), 0);
                    ck_assert_int_eq(proto_stream_tick_target_get(&b, k, &tb, &eb), 0);
                }
                if (!cases[i].error && a.raw) /* the text mode alone */
                    text[a.raw[k].text - text] = 'x';
                proto_job *ja = NULL, *jb = NULL;
                int ra = tick ? proto_session_tick_target(s, NULL, &ta, k, &ja, &ea)
                              : proto_session_message_target(s, &a, &ja, &ea);
                int rb = tick ? proto_session_tick_target(s, NULL, &tb, k, &jb, &eb)
                              : proto_session_target(s, b.target, b.seed, &jb, &eb);
                ck_assert_msg(ra == rb, "%s: %s / %s", text, ra ? ea.message : "accepted",
                              rb ? eb.message : "accepted");
                if (ra) {
                    char at[PROTO_PATH_MAX];
                    snprintf(at, sizeof at, "%s%s", tick ? (k ? "/targets/1" : "/targets/0") : "",
                             cases[i].error);
                    ck_assert_int_eq(ea.code, eb.code);
                    ck_assert_str_eq(ea.path, eb.path);
                    ck_assert_str_eq(ea.message, eb.message);
                    ck_assert_msg(cases[i].error && !strcmp(ea.path, at), "%s: %s", text, ea.path);
                    continue;
                }
                ck_assert_msg(!cases[i].error, "%s accepted", text);
                ck_assert(memcmp(ja->goals, jb->goals, 2 * sizeof *ja->goals) == 0);
                ck_assert_int_eq(ja->keep[0], jb->keep[0]);
                if (i == 0) { /* tip "r" (the second), in ikd's own frame: as sent */
                    const proto_tip_goal *g = &ja->goals[1];
                    ck_assert(!ja->goals[0].active && g->active && g->t.has_orientation);
                    ck_assert(g->t.position.x == 0.3 && g->t.position.y == -0.2 &&
                              g->t.position.z == 0.1);
                    ck_assert(g->t.orientation.z == 0.6 && g->t.orientation.w == 0.8);
                    ck_assert(g->weight == 1.0 && ja->keep[0] == IK_TREE_KEEP_POSE);
                }
                if (i == 1) /* tip "l" with its own priority, weight and keep rule */
                    ck_assert(ja->goals[0].priority == 1 && ja->goals[0].weight == 2.5 &&
                              ja->goals[0].t.has_weights && ja->keep[0] == IK_TREE_KEEP_JOINTS);
                proto_job_free(ja);
                proto_job_free(jb);
            }
            proto_stream_msg_free(&a);
            proto_stream_msg_free(&b);
        }
    }
    /* a tip named twice: not JSON the tree decoder takes, so neither does
     * the raw reader */
    static const char twice[] =
        "{\"type\":\"target\",\"stream\":\"a\",\"seq\":7,\"target\":{"
        "\"tips\":{\"l\":{\"position\":[0,0,1]},\"l\":{\"position\":[0,0,1]}}}}";
    proto_stream_msg m;
    proto_error e2;
    ck_assert_int_eq(proto_stream_decode_raw(twice, strlen(twice), &m, &e), -1);
    ck_assert_int_eq(proto__stream_decode_tree(twice, strlen(twice), &m, &e2), -1);
    ck_assert_int_eq(e.code, PROTO_E_INVALID_JSON);
    ck_assert_str_eq(e.message, e2.message);
    proto_session_free(s);
}
END_TEST

static Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120); /* 20,000 random ticks: seconds, more under a sanitizer */
    tcase_add_test(tc, test_decode_open);
    tcase_add_test(tc, test_decode_target_close);
    tcase_add_test(tc, test_decode_errors);
    tcase_add_test(tc, test_errors_keep_stream_and_seq);
    tcase_add_test(tc, test_utf8);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_path_interpolation);
    tcase_add_test(tc, test_path_defaults_and_position_only);
    tcase_add_test(tc, test_path_errors);
    tcase_add_test(tc, test_path_orientation_unit);
    tcase_add_test(tc, test_path_schedule);
    tcase_add_test(tc, test_path_bound_to_session);
    tcase_add_test(tc, test_encoders);
    tcase_add_test(tc, test_job_solution_matches_tree);
    tcase_add_test(tc, test_session_fields_digits);
    tcase_add_test(tc, test_decode_tick);
    tcase_add_test(tc, test_tick_target_errors);
    tcase_add_test(tc, test_tick_session_paths);
    tcase_add_test(tc, test_tick_encoders);
    tcase_add_test(tc, test_session_skip_keeps_seed);
    tcase_add_test(tc, test_session_answer_lets_go_of_its_scene);
    tcase_add_test(tc, test_tick_reader_matches_tree);
    tcase_add_test(tc, test_target_message_raw);
    tcase_add_test(tc, test_tree_targets_raw);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stream_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
