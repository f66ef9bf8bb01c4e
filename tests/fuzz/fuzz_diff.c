/*
 * fuzz_diff.c: every way ikd reads a wire object, against the general way
 * (the jansson tree), and every answer against the reference encoder.
 *
 * The first byte of an input picks what the rest is:
 *   0  a POST /v1/solve body: proto_job_decode (the tree-less reader
 *      first) against proto_json_parse + proto_job_decode_json;
 *   1  a POST /v1/solve/batch body: proto_batch_decode, and
 *      proto_job_decode(PROTO_BATCH) or, for a body with "items",
 *      proto_items_decode, against the tree (proto_items_decode_json for
 *      a body with "items", else proto_job_decode_json); items item by
 *      item (job, or error in the answer);
 *   2  a stream message: proto_stream_decode and the daemon's
 *      proto_stream_decode_raw against the tree decoder
 *      (proto__stream_decode_tree); a target message's (the raw reading's
 *      by proto_session_message_target) and each tick target's job on four
 *      sessions (a bones leg, a joint arm in Unity's frame and degrees, a
 *      planar arm, a tree of two tips), and each tick target against the
 *      "target" message that carries the same target and seed (both
 *      readings);
 *   3  a binary batch (proto/README.md, "Binary batches"): its job
 *      against its JSON twin's (the head with "targets" written out as
 *      JSON numbers that read back to the same doubles, null for a
 *      non-finite one), and its answer against the twin's JSON answer;
 *   4  a binary tick (proto/STREAM.md, "Binary ticks"): each target's
 *      envelope and its job or error on the four sessions against its
 *      JSON twin's (the tick with the same names, seqs and numbers; a
 *      planar session against the twin with [x, y]), and each accepted
 *      target's binary answer entry against its JSON answer entry.
 * Two readings must agree on acceptance, on the error (code, path and
 * message; a tick target's path and message under "/targets/<i>" where
 * the target message's are at its root), and on the job field by field
 * (chain id, kind, solver, options, targets, seeds, a tree's goals, byte
 * for byte). An accepted job is solved (a small budget), its results
 * copied into the other reading's job, and both answers must be the same
 * text, which must be the reference encoder's (tests/proto/oracle.h: a
 * jansson tree, reprinted with 17 digits on both sides).
 * A difference aborts (fuzz_fail) with what differed. tests/fuzz/run.sh
 * seeds it from the fixtures, the stream corpus and the binary batches.
 */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "proto/proto_codec.h"
#include "proto/proto_session.h"
#include "proto/proto_stream.h"
#include "tests/proto/oracle.h"

static proto_limits lim;
static proto_chain *known; /* the chain a chain_id may name */

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

static void failf(const char *what, const char *a, const char *b)
{
    fprintf(stderr, "fuzz_diff: %s\n  one:   %s\n  other: %s\n", what, a ? a : "(null)",
            b ? b : "(null)");
    fuzz_fail(what);
}

static void same_error(const proto_error *a, const proto_error *b, const char *what)
{
    if (a->code != b->code || strcmp(a->path, b->path) || strcmp(a->message, b->message)) {
        char x[600], y[600];
        snprintf(x, sizeof x, "%d %s %s", a->code, a->path, a->message);
        snprintf(y, sizeof y, "%d %s %s", b->code, b->path, b->message);
        failf(what, x, y);
    }
}

/* ---- jobs ------------------------------------------------------------- */

static void same_job(const proto_job *a, const proto_job *b, const char *what)
{
    if (a->n != b->n || a->kind != b->kind || a->solver != b->solver || a->dof != b->dof ||
        a->npos != b->npos || a->nrot != b->nrot || a->dims2 != b->dims2 ||
        a->ntips != b->ntips || a->sol_cap != b->sol_cap)
        failf(what, "the jobs differ in shape", "");
    if (strcmp(proto_chain_id(a->chain), proto_chain_id(b->chain)))
        failf(what, proto_chain_id(a->chain), proto_chain_id(b->chain));
    if (memcmp(&a->opt, &b->opt, sizeof a->opt))
        failf(what, "options differ", "");
    if (memcmp(a->targets, b->targets, a->n * sizeof *a->targets))
        failf(what, "targets differ", "");
    if (memcmp(a->has_seed, b->has_seed, a->n * sizeof *a->has_seed))
        failf(what, "seeds differ (which targets have one)", "");
    size_t sl = proto__seed_len(a->chain);
    for (size_t i = 0; i < a->n; i++)
        if (a->has_seed[i] && memcmp(a->seed_q + i * sl, b->seed_q + i * sl, sl * sizeof(double)))
            failf(what, "seeds differ", "");
    if (a->ntips && (memcmp(a->goals, b->goals, a->n * a->ntips * sizeof *a->goals) ||
                     memcmp(a->keep, b->keep, a->n)))
        failf(what, "tree goals differ", "");
}

/* Solves job with a small budget (its options are compared before). */
static void run_small(proto_job *job)
{
    job->opt.timeout_ms = 0;
    job->opt.max_iterations = job->opt.max_iterations && job->opt.max_iterations < 30
                                  ? job->opt.max_iterations
                                  : 30;
    job->opt.iter_cap = 30;
    proto_job_run(job, 0, job->n);
}

/* dst's results made src's (the same shape: same_job said so). */
static void copy_results(proto_job *dst, const proto_job *src)
{
    dst->opt.timeout_ms = src->opt.timeout_ms;
    dst->opt.max_iterations = src->opt.max_iterations;
    dst->opt.iter_cap = src->opt.iter_cap;
    for (size_t i = 0; i < src->n; i++) {
        const proto_result *s = proto__result(src, i);
        proto_result *d = proto__result(dst, i);
        proto_result keep = *d;
        *d = *s;
        d->q = keep.q, d->positions = keep.positions, d->rotations = keep.rotations;
        d->local = keep.local, d->tips = keep.tips, d->all = keep.all;
        memcpy(d->q, s->q, src->dof * sizeof *d->q);
        memcpy(d->positions, s->positions, src->npos * sizeof *d->positions);
        memcpy(d->rotations, s->rotations, src->nrot * sizeof *d->rotations);
        memcpy(d->local, s->local, src->nrot * sizeof *d->local);
        if (src->ntips)
            memcpy(d->tips, s->tips, src->ntips * sizeof *d->tips);
        if (src->sol_cap)
            memcpy(d->all, s->all, s->nall * src->dof * sizeof *d->all);
        dst->done[i % dst->slots] = src->done[i % src->slots];
    }
}

/* The answer of a (solved) against the reference encoder's. */
static void check_answer(const proto_job *a, const char *what)
{
    size_t n;
    char *got = proto_job_encode(a, &n);
    if (!got || n != strlen(got))
        failf(what, "proto_job_encode failed", "");
    json_t *t = oracle_tree(a);
    char *want = json_dumps(t, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_t *g = json_loads(got, 0, NULL);
    char *again = g ? json_dumps(g, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (!again || !want || strcmp(again, want))
        failf(what, got, want);
    free(again);
    free(want);
    free(got);
    json_decref(g);
    json_decref(t);
}

/* Two readings' accepted jobs: equal, and answered alike once solved. */
static void same_answers(proto_job *a, proto_job *b, const char *what)
{
    same_job(a, b, what);
    run_small(a);
    copy_results(b, a);
    size_t la, lb;
    char *ta = proto_job_encode(a, &la), *tb = proto_job_encode(b, &lb);
    if (!ta || !tb || la != lb || memcmp(ta, tb, la))
        failf(what, ta, tb);
    free(ta);
    free(tb);
    check_answer(a, what);
}

/* ---- requests --------------------------------------------------------- */

/* The tree reading of a body: 0 and *job or *items, or -1 and *err. */
static int tree_decode(const char *body, size_t len, proto_kind kind, proto_job **job,
                       proto_items **items, proto_error *err)
{
    *job = NULL;
    *items = NULL;
    json_t *root = proto_json_parse(body, len, lim.max_body_bytes,
                                    kind == PROTO_BATCH ? PROTO_JSON_BATCH : PROTO_JSON_SOLVE, err);
    if (!root)
        return -1;
    int rc = kind == PROTO_BATCH && json_is_object(root) && json_object_get(root, "items")
                 ? proto_items_decode_json(root, &lim, lookup, NULL, items, err)
                 : proto_job_decode_json(root, kind, &lim, lookup, NULL, job, err);
    json_decref(root);
    return rc;
}

static void same_items(proto_items *a, proto_items *b)
{
    size_t n = proto_items_count(a);
    if (n != proto_items_count(b))
        failf("items: counts differ", "", "");
    for (size_t i = 0; i < n; i++) {
        proto_job *ja = proto_items_job(a, i), *jb = proto_items_job(b, i);
        if (!ja != !jb)
            failf("items: an item decoded one way only", "", "");
        if (ja) {
            same_job(ja, jb, "items");
            run_small(ja);
            copy_results(jb, ja);
        }
    }
    size_t la, lb;
    char *ta = proto_items_encode(a, &la), *tb = proto_items_encode(b, &lb);
    if (!ta || !tb || la != lb || strcmp(ta, tb))
        failf("items: answers differ", ta, tb);
    free(ta);
    free(tb);
}

static void one_request(const char *body, size_t len, proto_kind kind)
{
    const char *what = kind == PROTO_BATCH ? "batch" : "solve";
    proto_job *tj, *fj = NULL, *bj = NULL;
    proto_items *ti, *bi = NULL;
    proto_error te, fe, be;
    int trc = tree_decode(body, len, kind, &tj, &ti, &te);
    if (kind == PROTO_BATCH) {
        int brc = proto_batch_decode(body, len, &lim, lookup, NULL, &bj, &bi, &be);
        if (brc != trc)
            failf("proto_batch_decode", brc ? be.message : "accepted",
                  trc ? te.message : "accepted");
        if (brc)
            same_error(&be, &te, "proto_batch_decode");
        else if (!bi != !ti)
            failf("proto_batch_decode: not the same form", "", "");
        else if (bi)
            same_items(bi, ti);
        else
            same_job(bj, tj, "proto_batch_decode");
    }
    /* proto_job_decode reads batches of one chain only */
    json_t *root = kind == PROTO_BATCH ? json_loadb(body, len, 0, NULL) : NULL;
    bool items = json_is_object(root) && json_object_get(root, "items");
    json_decref(root);
    if (items) { /* proto_items_decode against a tree reading of its own */
        proto_items *di = NULL, *ui;
        proto_job *uj;
        proto_error ue;
        int urc = tree_decode(body, len, kind, &uj, &ui, &ue);
        int drc = proto_items_decode(body, len, &lim, lookup, NULL, &di, &fe);
        if (drc != urc)
            failf("proto_items_decode", drc ? fe.message : "accepted",
                  urc ? ue.message : "accepted");
        if (drc)
            same_error(&fe, &ue, "proto_items_decode");
        else
            same_items(di, ui);
        proto_items_free(di);
        proto_items_free(ui);
        proto_job_free(uj);
    } else {
        int frc = proto_job_decode(body, len, kind, &lim, lookup, NULL, &fj, &fe);
        if (frc != trc)
            failf(what, frc ? fe.message : "accepted", trc ? te.message : "accepted");
        if (frc)
            same_error(&fe, &te, what);
        else
            same_answers(tj, fj, what);
    }
    proto_job_free(tj);
    proto_job_free(fj);
    proto_job_free(bj);
    proto_items_free(ti);
    proto_items_free(bi);
}

/* ---- binary batches ----------------------------------------------------- */

static uint32_t u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double f64(const unsigned char *p)
{
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--)
        u = u << 8 | p[k];
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The JSON twin of a binary batch whose layout is right: its head with
 * "targets" appended, each target's numbers written so that they read
 * back to the same doubles (null for a non-finite one; x, y only on a
 * planar chain, *planar_z set when a z is not 0); NULL when the head is no
 * object to append to or names targets, seeds or items itself (errors of
 * the binary form's own). */
static char *binary_twin(const unsigned char *b, size_t len, bool *planar_z)
{
    size_t head = u32(b + 8), n = u32(b + 12);
    bool orient = b[6] & 1;
    size_t at = (16 + head + 7) & ~(size_t)7, stride = orient ? 7 : 3;
    json_t *h = json_loadb((const char *)b + 16, head, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(h) || json_object_get(h, "targets") || json_object_get(h, "seeds") ||
        json_object_get(h, "items") || json_object_size(h) == 0) {
        json_decref(h);
        return NULL;
    }
    const json_t *kind = json_object_get(json_object_get(h, "chain"), "kind");
    bool planar = json_is_string(kind) && !strcmp(json_string_value(kind), "planar");
    json_decref(h);
    /* the head's text up to its closing brace, then the targets */
    const char *ht = (const char *)b + 16;
    size_t close = head;
    while (close > 0 && ht[close - 1] != '}')
        close--;
    if (close == 0)
        return NULL;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_jw_raw(&w, ht, close - 1);
    proto_jw_raw(&w, ",\"targets\":[", 12);
    *planar_z = false;
    for (size_t i = 0; i < n && at + (i + 1) * stride * 8 <= len; i++) {
        proto_jw_raw(&w, i ? ",{" : "{", i ? 2 : 1);
        for (size_t k = 0; k < stride; k++) {
            double d = f64(b + at + (i * stride + k) * 8);
            if (k == 2 && planar) {
                *planar_z |= d != 0;
                continue;
            }
            if (k == 0)
                proto_jw_raw(&w, "\"position\":[", 12);
            else if (k == 3)
                proto_jw_raw(&w, "],\"orientation\":[", 17);
            else
                proto_jw_raw(&w, ",", 1);
            if (isfinite(d)) {
                char buf[PROTO_DOUBLE_MAX];
                proto_jw_raw(&w, buf, (size_t)proto_json_format_shortest(d, buf));
            } else {
                proto_jw_raw(&w, "null", 4);
            }
        }
        proto_jw_raw(&w, "]}", 2);
    }
    proto_jw_raw(&w, "]}", 2);
    return proto_jw_finish(&w, NULL);
}

/* Result i of the binary answer against the JSON answer's number text. */
static void same_numbers(const json_t *a, const unsigned char **q, const char *what)
{
    if (json_is_number(a)) {
        double d = f64(*q), e = json_number_value(a);
        *q += 8;
        if (memcmp(&d, &e, sizeof d))
            failf(what, "a binary number is not the JSON answer's", "");
        return;
    }
    for (size_t k = 0; k < json_array_size(a); k++)
        same_numbers(json_array_get(a, k), q, what);
}

static void one_binary(const char *body, size_t len)
{
    proto_job *bj = NULL, *tj = NULL;
    proto_items *ti = NULL;
    proto_error be, te;
    int brc = proto_batch_decode_binary(body, len, &lim, lookup, NULL, &bj, &be);
    const unsigned char *b = (const unsigned char *)body;
    if (len < 16 || memcmp(b, "IKDB", 4) || b[4] != 1 || b[5] != 0 || (b[6] & ~1) || b[7]) {
        proto_job_free(bj);
        return;
    }
    size_t head = u32(b + 8), n = u32(b + 12), stride = b[6] & 1 ? 56 : 24;
    size_t at = (16 + head + 7) & ~(size_t)7;
    if (head > len || at > len || (len - at) % stride || (len - at) / stride != n || n < 1 ||
        n > lim.max_targets || len > lim.max_body_bytes) {
        proto_job_free(bj);
        return; /* the binary form's own errors */
    }
    for (size_t k = 16 + head; k < at; k++)
        if (b[k]) { /* nonzero padding: the binary form's own error too */
            proto_job_free(bj);
            return;
        }
    bool planar_z = false;
    /* a NUL in the head: jansson reads the head, but its reading of NUL
     * bytes depends on what follows them, which the twin changes */
    char *twin = memchr(b + 16, 0, head) ? NULL : binary_twin(b, len, &planar_z);
    if (!twin) {
        proto_job_free(bj);
        return;
    }
    if (planar_z) { /* a z other than 0 on a planar chain: the binary form's own error */
        free(twin);
        proto_job_free(bj);
        return;
    }
    int trc = tree_decode(twin, strlen(twin), PROTO_BATCH, &tj, &ti, &te);
    if (brc != trc)
        failf("binary and its JSON twin", brc ? be.message : "accepted",
              trc ? te.message : "accepted");
    if (brc) {
        same_error(&be, &te, "binary and its JSON twin");
    } else {
        same_job(bj, tj, "binary and its JSON twin");
        run_small(bj);
        copy_results(tj, bj);
        size_t counts[PROTO_COUNT_BUCKETS] = {0}, rl, jl;
        char *rec = proto_job_encode_binary_results(bj, 0, bj->n, counts, &rl);
        char *js = proto_job_encode(tj, &jl);
        json_t *ans = json_loads(js, 0, NULL);
        size_t per = proto_job_binary_record(bj);
        if (!rec || !ans || rl != bj->n * per)
            failf("binary answer", "", js);
        /* the places of a record (the head's fields word, in
         * proto/README.md's order) and their doubles */
        size_t hl;
        char *hd = proto_job_encode_binary_head(bj, &hl);
        uint32_t fields = hd ? u32((const unsigned char *)hd + 16) : 0;
        free(hd);
        static const char *const members[] = {"joints",         "positions",
                                              "rotations",      "local_rotations",
                                              "tip",            "position_error",
                                              "orientation_error", "max_joint_step",
                                              "time_ms"};
        const size_t doubles[9] = {bj->dof, (bj->dims2 ? 2 : 3) * bj->npos, 4 * bj->nrot,
                                   4 * bj->nrot, 7, 1, 1, 1, 1};
        for (size_t i = 0; bj->opt.digits == 0 && i < bj->n; i++) {
            json_t *r = json_array_get(json_object_get(ans, "results"), i);
            const unsigned char *p = (const unsigned char *)rec + i * per;
            if ((int32_t)u32(p) != json_integer_value(json_object_get(r, "code")) &&
                !(bj->opt.omit & PROTO_FIELD(CODE)))
                failf("binary answer: code", "", js);
            p += 16;
            for (int m = 0; m < 9; m++) {
                if (!(fields & (1u << m)))
                    continue;
                json_t *v = json_object_get(r, members[m]);
                if (v && m == 4) {
                    same_numbers(json_object_get(v, "position"), &p, "binary tip");
                    same_numbers(json_object_get(v, "orientation"), &p, "binary tip");
                } else if (v) {
                    same_numbers(v, &p, members[m]);
                } else {
                    for (size_t k = 0; k < doubles[m]; k++, p += 8)
                        if (!isnan(f64(p)))
                            failf("binary answer: a number where JSON has none", members[m], js);
                }
            }
        }
        free(rec);
        free(js);
        json_decref(ans);
    }
    free(twin);
    proto_job_free(bj);
    proto_job_free(tj);
    proto_items_free(ti);
}

/* ---- streams ------------------------------------------------------------ */

#define SESSIONS 4
static proto_session *sessions[SESSIONS];

static void open_sessions(void)
{
    static const char *const chains[SESSIONS] = {
        "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}",
        "{\"kind\":\"joints\",\"joints\":["
        "{\"name\":\"a\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,1]},"
        "\"limits\":{\"lower\":-2,\"upper\":2}},"
        "{\"name\":\"t\",\"type\":\"fixed\",\"origin\":{\"xyz\":[1,0,0]}}]}",
        "{\"kind\":\"planar\",\"lengths\":[1,0.75,0.5]}",
        "{\"kind\":\"tree\",\"joints\":[{\"name\":\"s\",\"type\":\"continuous\",\"axis\":[0,0,1]},"
        "{\"name\":\"a\",\"parent\":\"s\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,0.2,0]},"
        "\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":\"ha\",\"parent\":"
        "\"a\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}},{\"name\":\"b\",\"parent\":"
        "\"s\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0,-0.2,0]},\"axis\":[0,1,0],"
        "\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":\"hb\",\"parent\":\"b\",\"type\":"
        "\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}}],\"tips\":[\"ha\",\"hb\"]}"};
    static const char *const options[SESSIONS] = {NULL, "{\"frame\":\"unity\",\"units\":\"degrees\"}",
                                                  NULL, "{\"frame\":\"unreal\"}"};
    for (int k = 0; k < SESSIONS; k++) {
        proto_error e;
        proto_chain *c = proto_chain_decode(chains[k], strlen(chains[k]), NULL, &e);
        json_t *o = options[k] ? json_loads(options[k], 0, NULL) : NULL;
        if (!c || proto_session_open(c, o, NULL, NULL, &sessions[k], &e) != 0)
            fuzz_fail("cannot open the fuzzing sessions");
        json_decref(o);
        proto_chain_unref(c);
    }
}

/* Two jobs (or errors) of one session from two readings of a target. */
static void same_outcome(int ra, proto_job *ja, const proto_error *ea, int rb, proto_job *jb,
                         const proto_error *eb, const char *what)
{
    if (ra != rb)
        failf(what, ra ? ea->message : "accepted", rb ? eb->message : "accepted");
    if (ra)
        same_error(ea, eb, what);
    else
        same_job(ja, jb, what);
    proto_job_free(ja);
    proto_job_free(jb);
}

/* An error of tick target i made comparable with its target message's:
 * the path's "/targets/<i>" taken off (tick), and every "targets[<i>]."
 * taken out of the message (both: the prefix of the tick's names, and the
 * same text wherever a key holds it). */
static void untick(proto_error *e, size_t i, bool tick)
{
    char p[64], m[64];
    int pl = snprintf(p, sizeof p, "/targets/%zu", i), ml = snprintf(m, sizeof m, "targets[%zu].", i);
    if (tick && !strncmp(e->path, p, (size_t)pl))
        memmove(e->path, e->path + pl, strlen(e->path + pl) + 1);
    for (char *at; (at = strstr(e->message, m));)
        memmove(at, at + ml, strlen(at + ml) + 1);
}

/* Tick target i of the tree reading (t: its target and seed) against the
 * target message that carries them. */
static void tick_as_target(const proto_stream_tick_target *t, size_t i)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    static const char open[] = "{\"type\":\"target\",\"stream\":\"s\",\"seq\":1,\"target\":";
    proto_jw_raw(&w, open, sizeof open - 1);
    proto_jw_value(&w, t->target);
    if (t->seed) {
        proto_jw_raw(&w, ",\"seed\":", 8);
        proto_jw_value(&w, t->seed);
    }
    proto_jw_raw(&w, "}", 1);
    size_t len;
    char *text = proto_jw_finish(&w, &len);
    proto_stream_msg m, r; /* read with its target as a tree, and as the daemon does */
    proto_error e;
    if (!text || proto_stream_decode(text, len, &m, &e) != 0 ||
        proto_stream_decode_raw(text, len, &r, &e) != 0)
        failf("a tick target's target message does not decode", text, e.message);
    for (int k = 0; k < 2 * SESSIONS; k++) {
        proto_job *ja = NULL, *jb = NULL;
        proto_error ea, eb;
        proto_session *s = sessions[k % SESSIONS];
        int ra = proto_session_tick_target(s, proto_session_scene_of(s), t, i, &ja, &ea);
        int rb = k < SESSIONS ? proto_session_target(s, m.target, m.seed, &jb, &eb)
                              : proto_session_message_target(s, &r, &jb, &eb);
        if (ra)
            untick(&ea, i, true);
        if (rb)
            untick(&eb, i, false);
        if (ra && rb) /* a path or message cut at its bound is cut at another place */
            for (int f = 0; f < 2; f++) {
                char *x = f ? ea.path : ea.message, *y = f ? eb.path : eb.message;
                size_t lx = strlen(x), ly = strlen(y);
                if (lx != ly && (lx > 200 || ly > 200))
                    x[lx < ly ? lx : ly] = y[lx < ly ? lx : ly] = '\0';
            }
        same_outcome(ra, ja, &ea, rb, jb, &eb, "a tick target and its target message");
    }
    proto_stream_msg_free(&m);
    proto_stream_msg_free(&r);
    free(text);
}

/* A decoding of a stream message (ra, a, ea) against the tree's (rb, b, eb):
 * acceptance, envelope and error. */
static void same_message(int ra, const proto_stream_msg *a, const proto_error *ea, int rb,
                         const proto_stream_msg *b, const proto_error *eb, const char *what)
{
    if (ra != rb)
        failf(what, ra ? ea->message : "accepted", rb ? eb->message : "accepted");
    if (a->type != b->type || strcmp(a->stream, b->stream) || a->has_seq != b->has_seq ||
        (a->has_seq && a->seq != b->seq))
        failf("stream message: envelopes differ", a->stream, b->stream);
    if (ra)
        same_error(ea, eb, what);
}

static void one_message(const char *text, size_t len)
{
    proto_stream_msg a, b, c;
    proto_error ea, eb, ec;
    int ra = proto_stream_decode(text, len, &a, &ea);
    int rb = proto__stream_decode_tree(text, len, &b, &eb);
    int rc = proto_stream_decode_raw(text, len, &c, &ec);
    same_message(ra, &a, &ea, rb, &b, &eb, "stream message");
    same_message(rc, &c, &ec, rb, &b, &eb, "stream message (proto_stream_decode_raw)");
    if (ra)
        return;
    if (a.type == PROTO_STREAM_TARGET) {
        /* a's target is a tree, c's (the daemon's reading) mostly text */
        for (int k = 0; k < SESSIONS; k++) {
            proto_job *ja = NULL, *jb = NULL, *jc = NULL;
            proto_error xa, xb, xc;
            int sa = proto_session_target(sessions[k], a.target, a.seed, &ja, &xa);
            int sb = proto_session_target(sessions[k], b.target, b.seed, &jb, &xb);
            int sc = proto_session_message_target(sessions[k], &c, &jc, &xc);
            proto_job *jd = NULL;
            proto_error xd;
            int sd = proto_session_target(sessions[k], b.target, b.seed, &jd, &xd);
            same_outcome(sa, ja, &xa, sb, jb, &xb, "target message");
            same_outcome(sc, jc, &xc, sd, jd, &xd, "target message (read from the text)");
        }
    }
    if (a.type == PROTO_STREAM_TICK) {
        size_t n = proto_stream_tick_count(&a);
        if (n != proto_stream_tick_count(&b))
            failf("tick: counts differ", "", "");
        for (size_t i = 0; i < n && i < 16; i++) {
            proto_stream_tick_target ta, tb;
            int ga = proto_stream_tick_target_get(&a, i, &ta, &ea);
            int gb = proto_stream_tick_target_get(&b, i, &tb, &eb);
            if (ga != gb || strcmp(ta.stream, tb.stream) || ta.has_seq != tb.has_seq ||
                ta.seq != tb.seq)
                failf("tick target: envelopes differ", ta.stream, tb.stream);
            if (ga) {
                same_error(&ea, &eb, "tick target");
                continue;
            }
            for (int k = 0; k < SESSIONS; k++) {
                proto_job *ja = NULL, *jb = NULL;
                proto_error xa, xb;
                int sa = proto_session_tick_target(sessions[k], proto_session_scene_of(sessions[k]), &ta, i, &ja, &xa);
                int sb = proto_session_tick_target(sessions[k], proto_session_scene_of(sessions[k]), &tb, i, &jb, &xb);
                same_outcome(sa, ja, &xa, sb, jb, &xb, "tick target");
            }
            tick_as_target(&tb, i);
        }
    }
    proto_stream_msg_free(&a);
    proto_stream_msg_free(&b);
    proto_stream_msg_free(&c);
}

/* ---- binary ticks -------------------------------------------------------- */

#define TW(w, lit) proto_jw_raw(w, lit, sizeof(lit) - 1)

/* A double as JSON (false when JSON has none for it). */
static bool json_double(proto_jw *w, double d)
{
    if (!isfinite(d))
        return false;
    char buf[PROTO_DOUBLE_MAX];
    proto_jw_raw(w, buf, (size_t)proto_json_format_shortest(d, buf));
    return true;
}

/* A seq as JSON: an integral double as an integer, any other as a real
 * (which the JSON form refuses, as the binary one does). */
static bool json_seq(proto_jw *w, double d)
{
    if (d == floor(d) && fabs(d) < 9e18) {
        proto_jw_integer(w, (json_int_t)d);
        return true;
    }
    return json_double(w, d);
}

/* The JSON twin of a binary tick that decoded (b, len; n targets), with
 * [x, y] positions when planar; NULL when a name or the tick's seq has no
 * JSON text to compare (a byte that is not a name's, that would need
 * escaping). twin[i] is false for a target whose numbers JSON cannot
 * write (NaN, infinities) or, planar, whose z is not 0: their errors are
 * the binary form's own. */
static char *tick_twin(const unsigned char *b, size_t n, bool planar, bool *twin)
{
    size_t names = u32(b + 12), at = (24 + names + 7) & ~(size_t)7;
    bool orient = b[6] & 1;
    size_t stride = orient ? 64 : 32;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    TW(&w, "{\"type\":\"tick\",\"seq\":");
    json_seq(&w, f64(b + 16));
    TW(&w, ",\"targets\":[");
    const unsigned char *p = b + 24;
    for (size_t i = 0; i < n; i++) {
        size_t l = *p++;
        for (size_t k = 0; k < l; k++)
            if (p[k] < 0x20 || p[k] > 0x7e || p[k] == '"' || p[k] == '\\') {
                proto_jw_release(&w);
                return NULL;
            }
        if (i)
            TW(&w, ",");
        TW(&w, "{\"stream\":\"");
        proto_jw_raw(&w, (const char *)p, l);
        TW(&w, "\"");
        p += l;
        const unsigned char *r = b + at + i * stride;
        twin[i] = true;
        if (!isnan(f64(r))) {
            TW(&w, ",\"seq\":");
            if (!json_seq(&w, f64(r))) {
                proto_jw_release(&w);
                return NULL; /* an infinite seq: no JSON text */
            }
        }
        TW(&w, ",\"target\":{\"position\":[");
        for (size_t k = 0; k < (orient ? 7 : 3); k++) {
            double d = f64(r + 8 + 8 * k);
            if (k == 2 && planar) {
                twin[i] &= d == 0;
                continue;
            }
            if (k == 3)
                TW(&w, "],\"orientation\":[");
            else if (k)
                TW(&w, ",");
            if (!json_double(&w, d)) {
                twin[i] = false;
                TW(&w, "0");
            }
        }
        TW(&w, "]}}");
    }
    TW(&w, "]}");
    return proto_jw_finish(&w, NULL);
}

/* The binary answer entry of job's result (solved) against its JSON
 * answer entry: stream, seq, skipped, code and every number. */
static void same_entry(const proto_job *job)
{
    proto_jw bw, jw;
    proto_jw_init(&bw, NULL, 0);
    proto_jw_init(&jw, NULL, 0);
    proto_stream_tick_solution_binary(&bw, "s.1", 42, 3, job, 0);
    proto_stream_tick_solution(&jw, "s.1", 42, 3, job, 0);
    size_t bl, jl;
    char *bin = proto_jw_finish(&bw, &bl), *js = proto_jw_finish(&jw, &jl);
    json_t *e = js ? json_loads(js, 0, NULL) : NULL;
    const unsigned char *x = (const unsigned char *)bin;
    if (!bin || !e || bl < 40 || u32(x) != bl || x[4] != 1 || x[5] != 3 || f64(x + 8) != 42 ||
        u32(x + 16) != 3 || memcmp(x + 40 + u32(x + 20), "s.1", 3))
        failf("binary tick entry: envelope", "", js);
    json_t *r = json_object_get(e, "result");
    const unsigned char *p = x + 40;
    if (!(job->opt.omit & PROTO_FIELD(CODE)) &&
        (int32_t)u32(p) != json_integer_value(json_object_get(r, "code")))
        failf("binary tick entry: code", "", js);
    p += 16;
    static const char *const members[] = {"joints",          "positions",      "rotations",
                                          "local_rotations", "tip",            "position_error",
                                          "orientation_error", "max_joint_step", "time_ms"};
    uint32_t fields = u32(x + 24);
    size_t dims = x[34];
    const size_t doubles[9] = {job->dof, dims * job->npos, 4 * job->nrot, 4 * job->nrot, 7, 1, 1,
                               1, 1};
    for (int m = 0; job->opt.digits == 0 && m < 9; m++) {
        if (!(fields & (1u << m)))
            continue;
        json_t *v = json_object_get(r, members[m]);
        if (v && m == 4) {
            same_numbers(json_object_get(v, "position"), &p, "binary tick tip");
            same_numbers(json_object_get(v, "orientation"), &p, "binary tick tip");
        } else if (v) {
            same_numbers(v, &p, members[m]);
        } else {
            for (size_t k = 0; k < doubles[m]; k++, p += 8)
                if (!isnan(f64(p)))
                    failf("binary tick entry: a number where JSON has none", members[m], js);
        }
    }
    json_decref(e);
    free(bin);
    free(js);
}

static void one_binary_tick(const char *body, size_t len)
{
    proto_stream_msg mb, mj[2];
    proto_error eb, ej;
    if (proto_stream_decode_binary(body, len, &mb, &eb) != 0)
        return; /* the form's own framing (a bad seq has no twin to read) */
    const unsigned char *b = (const unsigned char *)body;
    size_t n = proto_stream_tick_count(&mb);
    bool *twin = calloc(2 * n, sizeof *twin);
    char *text[2] = {tick_twin(b, n, false, twin), tick_twin(b, n, true, twin + n)};
    for (int t = 0; t < 2; t++)
        if (!text[t] || proto_stream_decode(text[t], strlen(text[t]), &mj[t], &ej) != 0) {
            if (text[t]) /* a twin of a tick that decoded decodes */
                failf("binary tick: its JSON twin is refused", ej.message, text[t]);
            for (int u = 0; u < t; u++)
                proto_stream_msg_free(&mj[u]);
            free(text[0]);
            free(text[1]);
            free(twin);
            proto_stream_msg_free(&mb);
            return;
        }
    if (mb.seq != mj[0].seq || proto_stream_tick_count(&mj[0]) != n)
        failf("binary tick: envelope", "", text[0]);
    for (size_t i = 0; i < n && i < 16; i++) {
        proto_stream_tick_target tb, tj[2];
        int gb = proto_stream_tick_target_get(&mb, i, &tb, &eb);
        for (int t = 0; t < 2; t++) {
            int gj = proto_stream_tick_target_get(&mj[t], i, &tj[t], &ej);
            if (gb != gj || strcmp(tb.stream, tj[t].stream) || tb.has_seq != tj[t].has_seq ||
                tb.seq != tj[t].seq)
                failf("binary tick target: envelopes differ", tb.stream, tj[t].stream);
            if (gb)
                same_error(&eb, &ej, "binary tick target");
        }
        if (gb)
            continue;
        for (int k = 0; k < SESSIONS; k++) {
            int t = k == 2; /* the planar session's twin */
            proto_job *ja = NULL, *jb = NULL;
            proto_error xa, xb;
            int sa = proto_session_tick_target(sessions[k], proto_session_scene_of(sessions[k]), &tb, i, &ja, &xa);
            if (!twin[t * n + i]) { /* the form's own error, or accepted without a twin */
                if (sa == 0)
                    proto_job_free(ja);
                continue;
            }
            int sb = proto_session_tick_target(sessions[k], proto_session_scene_of(sessions[k]), &tj[t], i, &jb, &xb);
            if (sa == 0 && sb == 0) {
                same_job(ja, jb, "binary tick target and its JSON twin");
                run_small(ja);
                same_entry(ja);
                proto_job_free(ja);
                proto_job_free(jb);
                continue;
            }
            same_outcome(sa, ja, &xa, sb, jb, &xb, "binary tick target and its JSON twin");
        }
    }
    for (int t = 0; t < 2; t++) {
        proto_stream_msg_free(&mj[t]);
        free(text[t]);
    }
    free(twin);
    proto_stream_msg_free(&mb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!sessions[0]) {
        open_sessions();
        proto_limits_default(&lim);
        lim.max_iterations = 200;
        lim.max_time_ms = 1;
        lim.max_targets = 64;
        lim.max_items = 64;
        static const char reg[] =
            "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}";
        proto_error e;
        known = proto_chain_decode(reg, sizeof reg - 1, &lim, &e);
    }
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] == 4) {
        one_binary_tick(body, len);
        return 0;
    }
    switch (data[0] & 3) {
    case 0:
        one_request(body, len, PROTO_SOLVE);
        break;
    case 1:
        one_request(body, len, PROTO_BATCH);
        break;
    case 2:
        one_message(body, len);
        break;
    default:
        one_binary(body, len);
        break;
    }
    return 0;
}
