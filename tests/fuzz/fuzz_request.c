/*
 * fuzz_request.c: the request decoder (proto_job_decode, proto.h) and what
 * follows a successful decode: solve, encode, free.
 *
 * The first byte picks what the text is: a single solve, a batch, or a
 * chain registration (proto_chain_decode); the rest is the body. The limits
 * are the daemon's defaults except a smaller solve budget (1 ms, 200
 * iterations) and batch size (64), so that one input stays fast. A chain_id
 * is resolved by a lookup that knows one chain (decoded from the first
 * registration of the run), so the by-id path is covered too. Every answer
 * must be a valid JSON text (jansson reads it back).
 */
#include "tests/fuzz/fuzz.h"

#include "proto/proto.h"

static proto_chain *known; /* the chain the lookup knows */

static proto_chain *lookup(void *ud, const char *id)
{
    (void)ud;
    if (known && strcmp(id, proto_chain_id(known)) == 0) {
        proto_chain_ref(known);
        return known;
    }
    return NULL;
}

static void check_text(const char *s, size_t len)
{
    json_error_t e;
    json_t *v = json_loadb(s, len, JSON_REJECT_DUPLICATES, &e);
    if (!v) {
        fprintf(stderr, "%s\n%.*s\n", e.text, (int)len, s);
        fuzz_fail("an answer is not valid JSON");
    }
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_iterations = 200;
    lim.max_time_ms = 1;
    lim.max_targets = 64;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    proto_error err;

    switch (data[0] % 3) {
    case 0:
    case 1: {
        proto_job *job = NULL;
        proto_kind kind = data[0] % 3 ? PROTO_BATCH : PROTO_SOLVE;
        if (proto_job_decode(body, len, kind, &lim, lookup, NULL, &job, &err) != 0) {
            if (job)
                fuzz_fail("a failed decode returned a job");
            char buf[1024];
            size_t n = proto_error_format(&err, buf, sizeof buf);
            if (n < sizeof buf)
                check_text(buf, n);
            return 0;
        }
        size_t n = proto_job_count(job);
        proto_job_run(job, 0, n);
        size_t outlen = 0;
        char *out = proto_job_encode(job, &outlen);
        if (!out)
            fuzz_fail("proto_job_encode returned NULL");
        check_text(out, outlen);
        free(out);
        proto_job_free(job);
        return 0;
    }
    default: {
        proto_chain *c = proto_chain_decode(body, len, &lim, &err);
        if (!c)
            return 0;
        json_t *d = proto_chain_describe(c);
        if (!d)
            fuzz_fail("proto_chain_describe returned NULL");
        json_decref(d);
        if (!known)
            known = c;
        else
            proto_chain_unref(c);
        return 0;
    }
    }
}
