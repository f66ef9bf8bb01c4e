/*
 * test_proto_batch_read.c: batch bodies read straight from their text (the
 * text mode of proto/proto_job_decode.c's decoder, proto/proto_codec.h),
 * without the jansson tree of their targets, differentially:
 * for every body, proto_batch_decode must give what the general path gives
 * (the whole tree from proto_json_parse, then proto_items_decode_json for
 * a body with "items" or proto_job_decode_json): the same error (code,
 * path and message) or a job with the same chain, options, solver, targets
 * (byte for byte), seeds and tree goals. The bodies: every request of
 * tests/fixtures, generated batches on every chain kind the reader takes
 * (numbers written every way JSON allows: integers, -0, exponents, 17
 * digits, more than 19 digits, whitespace anywhere, members in any order;
 * seeds, options, chain_id), cases at its edges (escaped keys, duplicates,
 * weights, NUL bytes, overflow, empty and oversized arrays, the limits),
 * and 40,000 random mutations of valid bodies. The fast path must have
 * done the work on every generated valid body (it is not a test of the
 * general path against itself). Every body is also read in parts
 * (proto_batch_decode_parts, issue 22): all its parts reading means the
 * same job, and a body the text mode reads whole is read in parts when
 * its kind allows; a large batch's parts read on four threads at once.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_codec.h"

#define BONES "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}"

/* The registry of this test: BONES under its own id. */
static proto_chain *registered;

static void *lookup(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind != PROTO_REG_CHAIN)
        return NULL;
    (void)ud;
    if (registered && strcmp(id, proto_chain_id(registered)) == 0) {
        proto_chain_ref(registered);
        return registered;
    }
    return NULL;
}

static void setup(void)
{
    proto_error err;
    registered = proto_chain_decode(BONES, strlen(BONES), NULL, &err);
    ck_assert_ptr_nonnull(registered);
}

static void teardown(void)
{
    proto_chain_unref(registered);
    registered = NULL;
}

/* The general path, as the daemon took it before the batch reader. */
static int general(const char *body, size_t len, const proto_limits *lim, proto_job **job,
                   proto_items **items, proto_error *err)
{
    *job = NULL;
    *items = NULL;
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_BATCH, err);
    if (!root)
        return -1;
    int rc = json_is_object(root) && json_object_get(root, "items")
                 ? proto_items_decode_json(root, lim, lookup, NULL, items, err)
                 : proto_job_decode_json(root, PROTO_BATCH, lim, lookup, NULL, job, err);
    json_decref(root);
    return rc;
}

static void same_job(const proto_job *a, const proto_job *b, const char *what)
{
    ck_assert_msg(a->n == b->n && a->kind == b->kind && a->solver == b->solver &&
                      a->dof == b->dof && a->npos == b->npos && a->nrot == b->nrot &&
                      a->dims2 == b->dims2 && a->ntips == b->ntips,
                  "%s: the jobs differ in shape", what);
    ck_assert_str_eq(proto_chain_id(a->chain), proto_chain_id(b->chain));
    ck_assert_msg(memcmp(&a->opt, &b->opt, sizeof a->opt) == 0, "%s: options differ", what);
    ck_assert_msg(memcmp(a->targets, b->targets, a->n * sizeof *a->targets) == 0,
                  "%s: targets differ", what);
    ck_assert_msg(!a->seed_q == !b->seed_q, "%s: seeds differ", what);
    ck_assert_msg(memcmp(a->has_seed, b->has_seed, a->n * sizeof(bool)) == 0, "%s: seeds differ",
                  what);
    if (a->seed_q)
        ck_assert_msg(memcmp(a->seed_q, b->seed_q,
                             a->n * proto__seed_len(a->chain) * sizeof(double)) == 0,
                      "%s: seeds differ", what);
    if (a->ntips)
        ck_assert_msg(memcmp(a->goals, b->goals, a->n * a->ntips * sizeof *a->goals) == 0 &&
                          memcmp(a->keep, b->keep, a->n) == 0,
                      "%s: goals differ", what);
}

static size_t n_fast, n_general, n_parts;

/* The same body read in parts (proto_batch_decode_parts: parts of 2
 * targets and more, at most 3 of them, read last first: their order does
 * not matter). whole is the text mode's job of the whole body, or NULL
 * when the text mode declined it. Every part reading means the text
 * mode's job; a body the text mode read whole and parts take (one chain,
 * not a tree, no seeds, no max_joint_step, 4 targets and more) is read in
 * parts. Otherwise nothing is allocated. */
static void parts_agree(const char *body, size_t len, const proto_limits *lim,
                        const proto_job *whole, const char *what)
{
    proto_job *jp;
    proto_batch_parts *pt;
    bool takes = whole && whole->n >= 4 && !whole->seed_q && whole->ntips == 0 &&
                 whole->opt.max_joint_step_in <= 0;
    int rc = proto_batch_decode_parts(body, len, lim, lookup, NULL, 2, 3, &jp, &pt);
    if (rc == 1) { /* not for parts (too few targets, seeds...): decoded whole */
        ck_assert_msg(whole && !takes, "%s: decoded whole in parts' stead", what);
        ck_assert_ptr_null(pt);
        same_job(jp, whole, what);
        proto_job_free(jp);
        return;
    }
    if (rc) {
        ck_assert_ptr_null(jp);
        ck_assert_ptr_null(pt);
        ck_assert_msg(!takes, "%s: not taken in parts", what);
        return;
    }
    size_t np = proto_batch_parts_count(pt);
    ck_assert_msg(np >= 2 && np <= 3, "%s: %zu parts", what, np);
    bool ok = true;
    for (size_t k = np; k-- > 0;)
        ok = proto_batch_decode_part(jp, pt, k) == 0 && ok;
    ck_assert_msg(ok || !takes, "%s: a part declined what the text mode read", what);
    if (ok) {
        ck_assert_msg(whole != NULL, "%s: read in parts, declined whole", what);
        same_job(jp, whole, what);
        n_parts++;
    }
    proto_job_free(jp);
    proto_batch_parts_free(pt);
}

/* body decoded both ways must agree; returns whether it was accepted. */
static bool same_as_general(const char *body, size_t len, const proto_limits *lim)
{
    proto_job *j1, *j2, *jf;
    proto_items *i1, *i2;
    proto_error e1, e2;
    memset(&e1, 0, sizeof e1);
    memset(&e2, 0, sizeof e2);
    int r1 = proto_batch_decode(body, len, lim, lookup, NULL, &j1, &i1, &e1);
    int r2 = general(body, len, lim, &j2, &i2, &e2);
    char what[160];
    snprintf(what, sizeof what, "%.*s%s", len > 120 ? 120 : (int)len, body,
             len > 120 ? "..." : "");
    ck_assert_msg(r1 == r2, "%s: %d, generally %d (%s)", what, r1, r2, r1 ? e1.message : e2.message);
    if (getenv("BR_DEBUG") && r1)
        fprintf(stderr, "rejected: %s %s\n", e1.path, e1.message);
    if (r1) {
        ck_assert_msg(e1.code == e2.code && strcmp(e1.path, e2.path) == 0 &&
                          strcmp(e1.message, e2.message) == 0,
                      "%s:\n %d %s %s\n generally %d %s %s", what, e1.code, e1.path, e1.message,
                      e2.code, e2.path, e2.message);
        ck_assert_ptr_null(j1);
        ck_assert_ptr_null(i1);
        parts_agree(body, len, lim, NULL, what);
        return false;
    }
    ck_assert_msg(!j1 == !j2 && !i1 == !i2, "%s: not the same form", what);
    if (j1)
        same_job(j1, j2, what);
    else
        ck_assert_uint_eq(proto_items_count(i1), proto_items_count(i2));
    /* which way it went */
    if (proto__job_decode_text(body, len, PROTO_BATCH, lim, lookup, NULL, &jf) == 0) {
        n_fast++;
        same_job(jf, j2, what);
        parts_agree(body, len, lim, jf, what);
        proto_job_free(jf);
    } else {
        ck_assert_ptr_null(jf);
        n_general++;
        parts_agree(body, len, lim, NULL, what);
    }
    proto_job_free(j1);
    proto_job_free(j2);
    proto_items_free(i1);
    proto_items_free(i2);
    return true;
}

static bool same_str(const char *body)
{
    proto_limits lim;
    proto_limits_default(&lim);
    return same_as_general(body, strlen(body), &lim);
}

/* ---- generated bodies ------------------------------------------------------- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_u(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_u() >> 11) * 0x1.0p-53;
}

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        ck_assert_int_ge(n, 0);
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = 2 * b->cap + (size_t)n + 64;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
}

/* Some whitespace, often none. */
static void space(buf *b)
{
    static const char *const ws[] = {"", "", "", " ", "\n  ", "\t", "\r\n"};
    put(b, "%s", ws[next_u() % 7]);
}

/* v written one of the ways JSON allows (as an integer only when it is
 * one, -0 included). */
static void number(buf *b, double v)
{
    if (v == (int)v && next_u() % 2) {
        put(b, "%s%d", signbit(v) ? "-" : "", (int)fabs(v));
        return;
    }
    switch (next_u() % 6) {
    case 0:
        put(b, "%.17g", v);
        break;
    case 1:
        put(b, "%.6f", v);
        break;
    case 2:
        put(b, "%.10e", v);
        break;
    case 3:
        put(b, "%.12E", v);
        break;
    case 4: /* more digits than 19: the strtod way */
        put(b, "%.6f1234567890123456789", v);
        break;
    default:
        put(b, "%.1f", v);
        break;
    }
}

static void numbers(buf *b, const double *v, size_t n)
{
    put(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            put(b, ",");
        space(b);
        number(b, v[i]);
        space(b);
    }
    put(b, "]");
}

/* A coordinate: often a round number. */
static double coord(double lo, double hi)
{
    switch (next_u() % 5) {
    case 0:
        return (double)(int)uniform(lo, hi);
    case 1:
        return next_u() % 2 ? -0.0 : 0.0;
    default:
        return uniform(lo, hi);
    }
}

/* A chain kind and what its targets may hold. */
typedef struct kind {
    const char *chain; /* the "chain" member's text (or chain_id: NULL) */
    int dims;          /* 2 or 3 */
    bool orientation, up, pole;
    const char *seed; /* one seed's text, or NULL */
} kind;

static const kind KINDS[] = {
    {BONES, 3, false, false, true, "[[0,0,1],[0.1,0.05,0.55],[0,0,0.1]]"},
    {NULL, 3, false, false, true, NULL}, /* BONES by chain_id */
    {"{\"kind\":\"planar\",\"lengths\":[1,0.75]}", 2, false, false, false, "[0.3,-0.4]"},
    {"{\"kind\":\"planar\",\"lengths\":[1,0.75,0.25]}", 2, false, true, false, NULL},
    {"{\"kind\":\"links3d\",\"lengths\":[0.5,0.4,0.1]}", 3, false, true, false, NULL},
    /* (up: every target of a batch has one or none, as its solver asks) */
    {"{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"revolute\",\"axis\":[0,0,1],"
     "\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,"
     "1,0],\"origin\":{\"xyz\":[0,0,0.5]},\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":"
     "\"c\",\"type\":\"revolute\",\"axis\":[1,0,0],\"origin\":{\"xyz\":[0,0,0.4]},\"limits\":"
     "{\"lower\":-3,\"upper\":3}},{\"name\":\"tip\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0,"
     "0,0.3]}}]}",
     3, true, false, false, "[0.1,0.2,0.3]"},
};

static const char *const OPTIONS[] = {
    NULL,
    "{\"frame\":\"unity\"}",
    "{\"units\":\"degrees\",\"fields\":[\"joints\"],\"digits\":6}",
    "{\"frame\":\"unreal\",\"timeout_ms\":5}",
    "{\"solver\":\"fabrik\"}",
};

/* A valid batch (most often) of n targets on kind k, members in random
 * order. */
static void batch(buf *b, const kind *k, size_t n)
{
    b->len = 0;
    bool seeds = k->seed && next_u() % 2;
    /* the solver of the first target takes up for all or for none; links3d
     * always */
    bool ups = k->up && (strstr(k->chain, "links3d") || next_u() % 2);
    const char *opt = OPTIONS[next_u() % 5];
    if (k->dims == 2 && opt && strstr(opt, "frame"))
        opt = NULL; /* planar chains take no frame */
    if (opt && strstr(opt, "fabrik") && k->chain && !strstr(k->chain, "bones"))
        opt = NULL;
    int order[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) {
        int j = (int)(next_u() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    space(b);
    put(b, "{");
    bool first = true;
    for (int m = 0; m < 4; m++) {
        const char *sep = first ? "" : ",";
        switch (order[m]) {
        case 0:
            space(b);
            if (k->chain)
                put(b, "%s\"chain\"", sep);
            else
                put(b, "%s\"chain_id\"", sep);
            space(b);
            put(b, ":");
            space(b);
            put(b, "%s", k->chain ? k->chain : "");
            if (!k->chain)
                put(b, "\"%s\"", proto_chain_id(registered));
            break;
        case 1:
            if (!opt)
                continue;
            put(b, "%s\"options\":%s", sep, opt);
            break;
        case 2:
            if (!seeds)
                continue;
            put(b, "%s\"seeds\":[", sep);
            for (size_t i = 0; i < n; i++)
                put(b, "%s%s", i ? "," : "", next_u() % 3 ? k->seed : "null");
            put(b, "]");
            break;
        case 3:
            put(b, "%s", sep);
            space(b);
            put(b, "\"targets\"");
            space(b);
            put(b, ":");
            space(b);
            put(b, "[");
            for (size_t i = 0; i < n; i++) {
                if (i)
                    put(b, ",");
                space(b);
                put(b, "{");
                int mem[4] = {0, 1, 2, 3};
                for (int q = 3; q > 0; q--) {
                    int j = (int)(next_u() % (uint64_t)(q + 1)), t = mem[q];
                    mem[q] = mem[j];
                    mem[j] = t;
                }
                bool f1 = true;
                for (int q = 0; q < 4; q++) {
                    double v[4];
                    const char *key = NULL;
                    size_t nv = 0;
                    if (mem[q] == 0) {
                        key = "position";
                        nv = (size_t)k->dims;
                        for (size_t c = 0; c < nv; c++)
                            v[c] = coord(-2, 2);
                    } else if (mem[q] == 1 && k->orientation && next_u() % 2) {
                        key = "orientation";
                        nv = 4;
                        double a = next_u() % 4 ? uniform(-3, 3) : 0.0;
                        v[0] = 0, v[1] = 0, v[2] = sin(a / 2), v[3] = cos(a / 2);
                    } else if (mem[q] == 2 && ups) {
                        key = "up";
                        nv = (size_t)k->dims;
                        for (size_t c = 0; c < nv; c++)
                            v[c] = next_u() % 2 ? (double)(1 + next_u() % 3) : uniform(1, 3);
                    } else if (mem[q] == 3 && k->pole && next_u() % 2) {
                        key = "pole";
                        nv = 3;
                        for (size_t c = 0; c < nv; c++)
                            v[c] = coord(-2, 2);
                    }
                    if (!key)
                        continue;
                    put(b, "%s", f1 ? "" : ",");
                    f1 = false;
                    space(b);
                    put(b, "\"%s\"", key);
                    space(b);
                    put(b, ":");
                    space(b);
                    numbers(b, v, nv);
                    space(b);
                }
                put(b, "}");
                space(b);
            }
            put(b, "]");
            break;
        }
        first = false;
        space(b);
    }
    put(b, "}");
    space(b);
}

START_TEST(test_fixtures)
{
    DIR *d = opendir("tests/fixtures");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    size_t n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 13 || strcmp(e->d_name + l - 13, ".request.json") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "tests/fixtures/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        static char text[1 << 20];
        size_t len = fread(text, 1, sizeof text, f);
        fclose(f);
        proto_limits lim;
        proto_limits_default(&lim);
        same_as_general(text, len, &lim);
        n++;
    }
    closedir(d);
    ck_assert_uint_gt(n, 20);
}
END_TEST

START_TEST(test_generated)
{
    buf b = {malloc(4096), 0, 4096};
    proto_limits lim;
    proto_limits_default(&lim);
    n_fast = n_general = n_parts = 0;
    size_t accepted = 0, fast_before;
    for (int round = 0; round < 600; round++) {
        const kind *k = &KINDS[(size_t)round % (sizeof KINDS / sizeof KINDS[0])];
        batch(&b, k, 1 + next_u() % 40);
        fast_before = n_fast;
        if (same_as_general(b.p, b.len, &lim)) {
            accepted++;
            /* every accepted generated body is one the reader takes */
            ck_assert_msg(n_fast == fast_before + 1, "went the general way: %.*s", (int)b.len,
                          b.p);
        }
    }
    printf("generated: %zu accepted, all the fast way, %zu read in parts too\n", accepted,
           n_parts);
    ck_assert_uint_gt(accepted, 500);
    ck_assert_uint_gt(n_parts, 100);
    free(b.p);
}
END_TEST

START_TEST(test_edges)
{
    static const char *const bodies[] = {
        /* the reader's own territory, taken */
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}]}",
        " {\"targets\" : [ {\"position\" : [ 0.2 , 0.1 , 0.25 ] } ] , \"chain\" : " BONES " } ",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[-0,0,1e-1]},{\"position\":[0,-0.0,2E-1]}]}",
        /* what it leaves to the general path: same outcome */
        "{\"chain\":" BONES ",\"targets\":[{\"posi\\u0074ion\":[0.2,0.1,0.25]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"position\":[0,0,0]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}],\"targets\":[]}",
        "{\"chain\":" BONES ",\"targets\":[]}",
        "{\"chain\":" BONES ",\"targets\":{}}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25,1,2]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[1e400,0,0]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[2e6,0,0]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[01,0,0]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]},]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}}}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}]} x",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}]}}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"weights\":[1,1,1,0,0,0]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"rotation\":[[1,0,0],[0,1,"
        "0],[0,0,1]]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"orientation\":[0,0,0,1]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"up\":[0,0,1]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"pole\":[0,0,0]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}],\"seeds\":[null,null]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}],\"extra\":1}",
        "{\"chain\":" BONES ",\"chain_id\":\"x\",\"targets\":[{\"position\":[0.2,0.1,0.25]}]}",
        "{\"chain_id\":\"nope\",\"targets\":[{\"position\":[0.2,0.1,0.25]}]}",
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]}],\"options\":{\"a\":{\"b\":"
        "{\"c\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]"
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}}}",
        "{\"chain\":" BONES ",\"options\":{\"frame\":\"unity\",\"frame\":\"ros\"},\"targets\":[{"
        "\"position\":[0.2,0.1,0.25]}]}",
        "{\"items\":[{\"chain\":" BONES ",\"target\":{\"position\":[0.2,0.1,0.25]}}]}",
        "{\"chain\":" BONES ",\"items\":[]}",
        "[{\"chain\":" BONES "}]",
        "\"targets\"",
        "{}",
        "{",
        "",
        "<robot name=\"x\"/>",
        "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75]},\"targets\":[{\"position\":[1,0.4]}],"
        "\"options\":{\"frame\":\"unity\"}}",
        "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75]},\"targets\":[{\"position\":[1,0.4],"
        "\"up\":[0,1]}]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        same_str(bodies[i]);
    /* NUL bytes: after a number (jansson swallows one there), in a key */
    static const char nul1[] = "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2\0,0.1,0.25]}]}";
    static const char nul2[] = "{\"chain\":" BONES ",\"targets\":[{\"pos\0tion\":[0.2,0.1,0.25]}]}";
    proto_limits lim;
    proto_limits_default(&lim);
    same_as_general(nul1, sizeof nul1 - 1, &lim);
    same_as_general(nul2, sizeof nul2 - 1, &lim);
    /* the limits: targets and bytes */
    const char *two = "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]},{"
                      "\"position\":[0.2,0.1,0.3]}]}";
    lim.max_targets = 1;
    same_as_general(two, strlen(two), &lim);
    proto_limits_default(&lim);
    lim.max_body_bytes = strlen(two) - 1;
    same_as_general(two, strlen(two), &lim);
    lim.max_body_bytes = strlen(two);
    ck_assert(same_as_general(two, strlen(two), &lim));
}
END_TEST

/* Random mutations of valid bodies: a byte deleted, replaced, inserted, a
 * bracket of another kind, or a stretch repeated. */
START_TEST(test_mutations)
{
    buf b = {malloc(4096), 0, 4096};
    proto_limits lim;
    proto_limits_default(&lim);
    static const char alphabet[] = "{}[],:\"\\ 0123456789.eE+-nultrfas\t\n\x01\x80\xff";
    size_t accepted = 0, total = 0;
    char *m = NULL;
    for (int base = 0; base < 200; base++) {
        batch(&b, &KINDS[(size_t)base % (sizeof KINDS / sizeof KINDS[0])], 1 + next_u() % 4);
        for (int k = 0; k < 200; k++) {
            size_t len = b.len;
            m = realloc(m, 2 * len + 8);
            memcpy(m, b.p, len);
            int edits = 1 + (int)(next_u() % 3);
            for (int e = 0; e < edits && len > 0; e++) {
                size_t at = next_u() % len;
                switch (next_u() % 5) {
                case 4: { /* a bracket for another kind of bracket */
                    static const char br[] = "{}[]";
                    for (size_t t = 0; t < len; t++) {
                        size_t q = (at + t) % len;
                        if (strchr(br, m[q]) && m[q]) {
                            m[q] = br[next_u() % 4];
                            break;
                        }
                    }
                    break;
                }
                case 0:
                    memmove(m + at, m + at + 1, len - at - 1);
                    len--;
                    break;
                case 1:
                    m[at] = alphabet[next_u() % (sizeof alphabet - 1)];
                    break;
                case 2:
                    memmove(m + at + 1, m + at, len - at);
                    m[at] = alphabet[next_u() % (sizeof alphabet - 1)];
                    len++;
                    break;
                default: {
                    size_t n = 1 + next_u() % 12;
                    if (at + n > len || len + n > 2 * b.len + 8)
                        break;
                    memmove(m + at + n, m + at, len - at);
                    len += n;
                    break;
                }
                }
            }
            accepted += same_as_general(m, len, &lim);
            total++;
        }
    }
    printf("mutations: %zu bodies, %zu accepted (%zu the fast way)\n", total, accepted, n_fast);
    free(m);
    free(b.p);
}
END_TEST

/* A large batch's parts read side by side on four threads give the job
 * the whole body gives (ThreadSanitizer's build checks that they share
 * nothing they write). */
typedef struct parts_thread {
    pthread_t t;
    proto_job *job;
    const proto_batch_parts *pt;
    size_t first, step;
    int failed;
} parts_thread;

static void *read_parts(void *p)
{
    parts_thread *w = p;
    for (size_t k = w->first; k < proto_batch_parts_count(w->pt); k += w->step)
        w->failed += proto_batch_decode_part(w->job, w->pt, k) != 0;
    return NULL;
}

START_TEST(test_parts_threads)
{
    size_t n = 20000;
    buf b = {malloc(64 + n * 64), 0, 64 + n * 64};
    put(&b, "{\"chain\":" BONES ",\"options\":{\"digits\":6},\"targets\":[");
    for (size_t i = 0; i < n; i++)
        put(&b, "%s{\"position\":[%.6f,%.6f,%.6f]}", i ? "," : "", uniform(-0.5, 0.5),
            uniform(-0.5, 0.5), uniform(0.2, 0.9));
    put(&b, "]}");
    proto_limits lim;
    proto_limits_default(&lim);
    proto_job *whole, *jp;
    proto_items *items;
    proto_error err;
    proto_batch_parts *pt;
    ck_assert_int_eq(proto_batch_decode(b.p, b.len, &lim, lookup, NULL, &whole, &items, &err), 0);
    ck_assert_int_eq(
        proto_batch_decode_parts(b.p, b.len, &lim, lookup, NULL, 1000, 8, &jp, &pt), 0);
    ck_assert_uint_eq(proto_batch_parts_count(pt), 8);
    parts_thread w[4];
    for (size_t i = 0; i < 4; i++) {
        w[i] = (parts_thread){.job = jp, .pt = pt, .first = i, .step = 4};
        ck_assert_int_eq(pthread_create(&w[i].t, NULL, read_parts, &w[i]), 0);
    }
    for (size_t i = 0; i < 4; i++) {
        pthread_join(w[i].t, NULL);
        ck_assert_int_eq(w[i].failed, 0);
    }
    same_job(jp, whole, "20,000 targets in 8 parts on 4 threads");
    /* fewer than 2 * per_min targets: not in parts */
    proto_job *none;
    proto_batch_parts *no;
    ck_assert_int_eq(
        proto_batch_decode_parts(b.p, b.len, &lim, lookup, NULL, 10001, 8, &none, &no), 1);
    ck_assert_ptr_null(no);
    same_job(none, whole, "20,000 targets, too few for parts of 10,001");
    proto_job_free(none);
    proto_job_free(whole);
    proto_job_free(jp);
    proto_batch_parts_free(pt);
    free(b.p);
}
END_TEST

static Suite *batch_read_suite(void)
{
    Suite *s = suite_create("proto_batch_read");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fixtures);
    tcase_add_test(tc, test_generated);
    tcase_add_test(tc, test_edges);
    tcase_add_test(tc, test_mutations);
    tcase_add_test(tc, test_parts_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(batch_read_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
