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
 * must be a valid JSON text (jansson reads it back). A batch body is also
 * decoded by proto_batch_decode, which reads a batch's targets without
 * their tree: unless the body holds "items", it must agree with
 * proto_job_decode exactly (the same error, or the same targets). A first
 * byte of 3 makes the rest a binary batch (proto_batch_decode_binary):
 * decoded, solved and answered in the binary form, whose pieces must have
 * the sizes the layout gives.
 */
#include "tests/fuzz/fuzz.h"

#include "proto/proto.h"
#include "proto/proto_kind.h"

static proto_chain *known; /* the chain the lookup knows */

static void *lookup(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind != PROTO_REG_CHAIN)
        return NULL;
    (void)ud;
    if (known && strcmp(id, proto_chain_id(known)) == 0) {
        proto_chain_ref(known);
        return known;
    }
    return NULL;
}

/* proto_batch_decode against proto_job_decode's outcome (rc, job, err)
 * on the same batch body. */
static void check_batch_reader(const char *body, size_t len, const proto_limits *lim, int rc,
                               const proto_job *job, const proto_error *err)
{
    json_t *root = json_loadb(body, len, 0, NULL);
    bool items = root && json_is_object(root) && json_object_get(root, "items");
    json_decref(root);
    if (items)
        return;
    proto_job *fj = NULL;
    proto_items *fi = NULL;
    proto_error ferr;
    int frc = proto_batch_decode(body, len, lim, lookup, NULL, &fj, &fi, &ferr);
    if (frc != rc || fi)
        fuzz_fail("proto_batch_decode and proto_job_decode disagree");
    if (rc) {
        if (ferr.code != err->code || strcmp(ferr.path, err->path) != 0 ||
            strcmp(ferr.message, err->message) != 0)
            fuzz_fail("proto_batch_decode and proto_job_decode give different errors");
        return;
    }
    size_t n = job->n;
    if (fj->n != n || fj->solver != job->solver || fj->ntips != job->ntips ||
        memcmp(&fj->opt, &job->opt, sizeof job->opt) != 0 ||
        memcmp(fj->targets, job->targets, n * sizeof *job->targets) != 0 ||
        memcmp(fj->has_seed, job->has_seed, n * sizeof(bool)) != 0 ||
        strcmp(proto_chain_id(fj->chain), proto_chain_id(job->chain)) != 0)
        fuzz_fail("proto_batch_decode and proto_job_decode give different jobs");
    proto_job_free(fj);
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

    if (data[0] == 3) { /* a binary batch (proto_binary.c) */
        proto_job *job = NULL;
        if (proto_batch_decode_binary(body, len, &lim, lookup, NULL, &job, &err) != 0) {
            if (job)
                fuzz_fail("a failed binary decode returned a job");
            return 0;
        }
        size_t n = proto_job_count(job), counts[PROTO_COUNT_BUCKETS] = {0}, l[3];
        proto_job_run(job, 0, n);
        char *p[3] = {proto_job_encode_binary_head(job, &l[0]),
                      proto_job_encode_binary_results(job, 0, n, counts, &l[1]),
                      proto_job_encode_binary_tail(job, counts, &l[2])};
        if (!p[0] || !p[1] || !p[2] || l[0] != 32 || l[1] != n * proto_job_binary_record(job) ||
            l[2] != 20 || counts[0] + counts[1] + counts[2] + counts[3] != n)
            fuzz_fail("a binary answer of the wrong size");
        for (int k = 0; k < 3; k++)
            free(p[k]);
        proto_job_free(job);
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
    case 1: {
        proto_job *job = NULL;
        proto_kind kind = data[0] % 3 ? PROTO_BATCH : PROTO_SOLVE;
        int rc = proto_job_decode(body, len, kind, &lim, lookup, NULL, &job, &err);
        if (kind == PROTO_BATCH)
            check_batch_reader(body, len, &lim, rc, job, &err);
        if (rc != 0) {
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
