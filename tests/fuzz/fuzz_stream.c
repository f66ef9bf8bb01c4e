/*
 * fuzz_stream.c: the WebSocket stream message decoder (proto_stream_decode,
 * proto/proto_stream.h) and the typed session behind "target" and "path"
 * messages (proto/proto_session.h).
 *
 * The input is one text message. A decode must either succeed or fail with
 * nothing allocated, and an error reply encoded from what the decoder could
 * read must be valid JSON. A decoded target or path is handed to sessions
 * on two chains (a bones leg and a three-joint arm): a target becomes a job
 * or a clean error; a path that binds is sampled at its first, middle and
 * last sample, each a job whose target is finite. Every target of a tick
 * is read (a valid stream name, or an error at its own path under
 * "/targets/<i>"), handed to both sessions the same way, and the tick's
 * answer written from its errors must be valid JSON.
 */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "proto/proto_codec.h"
#include "proto/proto_session.h"
#include "proto/proto_stream.h"

static proto_session *sessions[2];

static void open_sessions(void)
{
    static const char *const chains[2] = {
        "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}",
        "{\"kind\":\"joints\",\"joints\":["
        "{\"name\":\"a\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]},"
        "\"limits\":{\"lower\":-2,\"upper\":2}},"
        "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}"};
    for (int k = 0; k < 2; k++) {
        proto_error e;
        proto_chain *c = proto_chain_decode(chains[k], strlen(chains[k]), NULL, &e);
        if (!c || proto_session_open(c, NULL, NULL, NULL, &sessions[k], &e) != 0)
            fuzz_fail("cannot open the fuzzing sessions");
        proto_chain_unref(c);
    }
}

static void check_job(proto_job *job)
{
    const proto_target *t = &job->targets[0];
    if (!ik_vec3_isfinite(t->position) || !ik_quat_isfinite(t->orientation))
        fuzz_fail("a stream job's target is not finite");
    proto_job_free(job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sessions[0])
        open_sessions();
    const char *text = (const char *)data;
    (void)proto_stream_utf8_valid(text, size);
    proto_stream_msg m;
    proto_error err;
    if (proto_stream_decode(text, size, &m, &err) != 0) {
        if (m.stream[0] && !proto_stream_name_valid(m.stream))
            fuzz_fail("a failed decode kept an invalid stream name");
        size_t n = 0;
        char *s = proto_stream_encode_error(m.stream, m.has_seq, m.seq, &err, &n);
        if (!s)
            fuzz_fail("proto_stream_encode_error returned NULL");
        json_t *v = json_loadb(s, n, JSON_REJECT_DUPLICATES, NULL);
        if (!v)
            fuzz_fail("an error reply is not valid JSON");
        json_decref(v);
        free(s);
        return 0;
    }
    if (m.type == PROTO_STREAM_TICK ? m.stream[0] != '\0' : !proto_stream_name_valid(m.stream))
        fuzz_fail("a decoded message has an invalid stream name");
    if (m.has_seq && (m.seq > PROTO_STREAM_SEQ_MAX || m.seq < -PROTO_STREAM_SEQ_MAX))
        fuzz_fail("a decoded seq is out of range");
    for (int k = 0; k < 2; k++) {
        proto_job *job;
        if (m.type == PROTO_STREAM_TARGET) {
            if (proto_session_target(sessions[k], m.target, m.seed, &job, &err) == 0)
                check_job(job);
            else if (err.code == PROTO_E_NONE)
                fuzz_fail("a refused target without an error code");
        }
    }
    if (m.type == PROTO_STREAM_TICK) {
        size_t n = proto_stream_tick_count(&m);
        if (n == 0)
            fuzz_fail("a tick without targets");
        proto_jw w;
        proto_jw_init(&w, NULL, 0);
        proto_stream_tick_head(&w, m.seq, 0);
        for (size_t i = 0; i < n && i < 64; i++) {
            proto_stream_tick_target t;
            if (i)
                proto_jw_raw(&w, ",", 1);
            char base[64];
            snprintf(base, sizeof base, "/targets/%zu", i);
            if (proto_stream_tick_target_get(&m, i, &t, &err) != 0) {
                if (strncmp(err.path, base, strlen(base)) != 0)
                    fuzz_fail("a tick target's error is not at its own path");
                if (t.stream[0] && !proto_stream_name_valid(t.stream))
                    fuzz_fail("a refused tick target kept an invalid stream name");
                proto_stream_tick_error(&w, t.stream, t.has_seq, t.seq, &err);
                continue;
            }
            if (!proto_stream_name_valid(t.stream) || !(t.target || t.raw))
                fuzz_fail("a tick target read without its stream or target");
            for (int k = 0; k < 2; k++) {
                proto_job *job;
                if (proto_session_tick_target(sessions[k], proto_session_scene_of(sessions[k]), &t, i, &job, &err) == 0)
                    check_job(job);
                else if (strncmp(err.path, base, strlen(base)) != 0)
                    fuzz_fail("a tick target's error is not at its own path");
            }
            proto_stream_tick_error(&w, t.stream, true, t.seq, &err);
        }
        proto_stream_tick_tail(&w);
        size_t len;
        char *answer = proto_jw_finish(&w, &len);
        if (!answer)
            fuzz_fail("a tick answer could not be written");
        json_t *v = json_loadb(answer, len, JSON_REJECT_DUPLICATES, NULL);
        if (!v)
            fuzz_fail("a tick answer is not valid JSON");
        json_decref(v);
        free(answer);
    }
    if (m.type == PROTO_STREAM_PATH) {
        if (!m.path)
            fuzz_fail("a path message without its path");
        size_t count = proto_stream_path_count(m.path);
        if (count < 2)
            fuzz_fail("a path of fewer than two samples");
        for (int k = 0; k < 2; k++) {
            if (proto_session_path(sessions[k], m.path, &err) != 0)
                continue;
            size_t at[3] = {0, count / 2, count - 1};
            for (int i = 0; i < 3; i++) {
                proto_job *job;
                if (proto_session_sample(sessions[k], m.path, at[i], &job, &err) != 0)
                    fuzz_fail("a sample of a bound path failed");
                check_job(job);
            }
            break; /* bound to this session's chain */
        }
    }
    proto_stream_msg_free(&m);
    return 0;
}
