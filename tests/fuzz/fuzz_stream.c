/*
 * fuzz_stream.c: the WebSocket stream message decoder (proto_stream_decode,
 * proto/proto_stream.h) and the path sampler behind "path" messages.
 *
 * The input is one text message. A decode must either succeed or fail with
 * nothing allocated; a decoded path is sampled at its first, middle and last
 * sample (each a target object), and an error reply encoded from what the
 * decoder could read must be valid JSON.
 */
#include "tests/fuzz/fuzz.h"

#include "proto/proto_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
    if (!proto_stream_name_valid(m.stream))
        fuzz_fail("a decoded message has an invalid stream name");
    if (m.has_seq && (m.seq > PROTO_STREAM_SEQ_MAX || m.seq < -PROTO_STREAM_SEQ_MAX))
        fuzz_fail("a decoded seq is out of range");
    if (m.type == PROTO_STREAM_PATH) {
        if (!m.path)
            fuzz_fail("a path message without its path");
        size_t count = proto_stream_path_count(m.path);
        if (count < 2)
            fuzz_fail("a path of fewer than two samples");
        size_t at[3] = {0, count / 2, count - 1};
        for (int i = 0; i < 3; i++) {
            json_t *t = proto_stream_path_sample(m.path, at[i]);
            if (!json_is_object(t))
                fuzz_fail("a path sample is not an object");
            json_decref(t);
        }
    }
    proto_stream_msg_free(&m);
    return 0;
}
