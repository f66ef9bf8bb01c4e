/*
 * test_client_binary_decode.c: libikdclient's binary tick form without a
 * daemon (clients/c/lib/binary.c; proto/STREAM.md, "Binary ticks").
 *
 *   - A binary answer laid out here by hand from STREAM.md's tables (not by
 *     ikd's writer: a second reading of the document) decodes into the
 *     ikd_tick the document describes: solutions with the members their
 *     fields and flags give, NaN-masked members left out as JSON leaves
 *     them out, planar points, the tip, errors with and without stream and
 *     seq; a copy equals it.
 *   - Every truncation, a byte more, and a catalogue of corruptions (counts
 *     past the bytes or past max_entries, entry sizes, kinds, record
 *     shapes, names, text lengths, seqs) are refused as IKD_E_BAD_ANSWER
 *     with the tick's seq, reading nothing outside the message (each input
 *     in an allocation of exactly its size, for AddressSanitizer), and a
 *     count of 2^32 - 1 allocates nothing; another magic or version is not
 *     this form's (handed on whole).
 *   - A tick is written byte for byte as the document lays it out, a
 *     number that is not finite is refused by name with nothing appended,
 *     and the rule of what fits the form.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/c/lib/internal.h"

/* ---- an answer laid out by hand ------------------------------------------ */

typedef struct out {
    unsigned char b[4096];
    size_t n;
    size_t entry[8]; /* where each entry starts */
    int entries;
} out;

static void u16(out *o, size_t at, unsigned v)
{
    o->b[at] = (unsigned char)v;
    o->b[at + 1] = (unsigned char)(v >> 8);
}

static void u32(out *o, size_t at, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        o->b[at + k] = (unsigned char)(v >> 8 * k);
}

static void f64(out *o, size_t at, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    for (int k = 0; k < 8; k++)
        o->b[at + k] = (unsigned char)(u >> 8 * k);
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static void head(out *o, uint32_t count, uint32_t skipped, double seq)
{
    memset(o, 0, sizeof *o);
    memcpy(o->b, "IKDS", 4);
    u16(o, 4, 1);
    u32(o, 8, count);
    u32(o, 12, skipped);
    f64(o, 16, seq);
    o->n = 24;
}

/* A solution entry: its shape, its record (code, flags, iterations,
 * restarts, then nd doubles), the name. */
static void solution(out *o, const char *name, double seq, uint32_t skipped, unsigned fields,
                     unsigned J, unsigned P, unsigned Q, unsigned D, int code, unsigned flags,
                     uint32_t iterations, uint32_t restarts, const double *d, size_t nd)
{
    size_t at = o->n, l = strlen(name), rec = 16 + 8 * nd;
    size_t size = 24 + 16 + rec + pad8(l);
    o->entry[o->entries++] = at;
    u32(o, at, (uint32_t)size);
    o->b[at + 4] = 1;
    o->b[at + 5] = (unsigned char)l;
    o->b[at + 6] = 1;
    f64(o, at + 8, seq);
    u32(o, at + 16, skipped);
    u32(o, at + 20, (uint32_t)rec);
    u32(o, at + 24, fields);
    u16(o, at + 28, J);
    u16(o, at + 30, P);
    u16(o, at + 32, Q);
    u16(o, at + 34, D);
    u32(o, at + 40, (uint32_t)code);
    u32(o, at + 44, flags);
    u32(o, at + 48, iterations);
    u32(o, at + 52, restarts);
    for (size_t i = 0; i < nd; i++)
        f64(o, at + 56 + 8 * i, d[i]);
    memcpy(o->b + at + 40 + rec, name, l);
    o->n = at + size;
}

static void error_entry(out *o, const char *name, bool has_seq, double seq, const char *code,
                        const char *path, const char *message)
{
    size_t at = o->n, l = strlen(name), lc = strlen(code), lp = strlen(path), lm = strlen(message);
    size_t size = 24 + pad8(l + lc + lp + lm);
    o->entry[o->entries++] = at;
    u32(o, at, (uint32_t)size);
    o->b[at + 4] = 2;
    o->b[at + 5] = (unsigned char)l;
    o->b[at + 6] = has_seq ? 1 : 0;
    f64(o, at + 8, has_seq ? seq : 0);
    u16(o, at + 16, (unsigned)lc);
    u16(o, at + 18, (unsigned)lp);
    u32(o, at + 20, (uint32_t)lm);
    unsigned char *p = o->b + at + 24;
    memcpy(p, name, l);
    memcpy(p + l, code, lc);
    memcpy(p + l + lc, path, lp);
    memcpy(p + l + lc + lp, message, lm);
    o->n = at + size;
}

enum {
    F_JOINTS = 1,
    F_POSITIONS = 2,
    F_ROTATIONS = 4,
    F_LOCAL = 8,
    F_TIP = 16,
    F_POSERR = 32,
    F_ORIERR = 64,
    F_STEP = 128,
    F_TIME = 256
};
enum { R_POSE = 1, R_TIP = 2, R_ORIERR = 4, R_STEP = 8 };

/* The answer of the tests: four entries of tick 120. */
static void sample(out *o)
{
    head(o, 4, 3, 120);
    const double a[] = {0.5,  -1.25,                        /* joints */
                        1,    2,     3,   4,   5, 6,        /* two points */
                        7,    8,     9,   0,   0, 0.6, 0.8, /* tip */
                        1e-7, 2e-7,  NAN, 0.03};            /* errors, step (none), time */
    solution(o, "leg0", 7, 2,
             F_JOINTS | F_POSITIONS | F_TIP | F_POSERR | F_ORIERR | F_STEP | F_TIME, 2, 2, 0, 3, 1,
             R_POSE | R_TIP | R_ORIERR, 12, 1, a, sizeof a / sizeof a[0]);
    const double b[] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0.01};
    solution(o, "leg1", 121, 0, F_JOINTS | F_ROTATIONS | F_LOCAL | F_TIME, 1, 0, 1, 2, -31, 0, 64,
             0, b, sizeof b / sizeof b[0]);
    error_entry(o, "", false, 0, "invalid_request", "/targets/2/stream",
                "\"stream\" must be 1 to 64 characters");
    error_entry(o, "c3", true, 9, "unknown_stream", "/targets/3/stream", "no stream \"c3\"");
}

/* Decodes o (copied into an allocation of exactly its size). */
static int decode(const unsigned char *p, size_t n, size_t max, ikd__dec *d, ikd_tick *t,
                  ikd_error *e)
{
    char *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    int rc = ikd__decode_tick_binary(d, copy, n, max, t, e);
    free(copy); /* nothing decoded points into the message */
    return rc;
}

static void check_sample(const ikd_tick *t)
{
    ck_assert_int_eq(t->seq, 120);
    ck_assert_int_eq(t->skipped, 3);
    ck_assert_uint_eq(t->count, 4);
    const ikd_tick_entry *e = t->entries;
    ck_assert_str_eq(e[0].stream, "leg0");
    ck_assert_int_eq(e[0].seq, 7);
    ck_assert_int_eq(e[0].skipped, 2);
    ck_assert_ptr_null(e[0].error);
    const ikd_result *r = e[0].result;
    ck_assert_int_eq(r->status, IKD_STATUS_SUCCESS);
    ck_assert_str_eq(r->status_text, "success");
    ck_assert_int_eq(r->code, 1);
    ck_assert_int_eq(r->iterations, 12);
    ck_assert_int_eq(r->restarts, 1);
    ck_assert_uint_eq(r->has, IKD_HAS_CODE | IKD_HAS_ITERATIONS | IKD_HAS_RESTARTS |
                                  IKD_HAS_JOINTS | IKD_HAS_POSITIONS | IKD_HAS_TIP |
                                  IKD_HAS_POSITION_ERROR | IKD_HAS_ORIENTATION_ERROR |
                                  IKD_HAS_TIME_MS);
    ck_assert_uint_eq(r->joint_count, 2);
    ck_assert_double_eq(r->joints[0], 0.5);
    ck_assert_double_eq(r->joints[1], -1.25);
    ck_assert_uint_eq(r->position_count, 2);
    ck_assert_int_eq(r->position_dim, 3);
    for (int k = 0; k < 6; k++)
        ck_assert_double_eq(r->positions[k], k + 1);
    ck_assert_double_eq(r->tip_position[2], 9);
    ck_assert_double_eq(r->tip_orientation[2], 0.6);
    ck_assert_double_eq(r->tip_orientation[3], 0.8);
    ck_assert_double_eq(r->position_error, 1e-7);
    ck_assert_double_eq(r->orientation_error, 2e-7);
    ck_assert_double_eq(r->max_joint_step, 0); /* NaN in the record: left out */
    ck_assert_double_eq(r->time_ms, 0.03);
    ck_assert_ptr_null(r->reason);
    ck_assert_uint_eq(r->rotation_count, 0);

    r = e[1].result;
    ck_assert_str_eq(e[1].stream, "leg1");
    ck_assert_int_eq(e[1].seq, 121);
    ck_assert_int_eq(r->status, IKD_STATUS_NO_IK_SOLUTION);
    ck_assert_str_eq(r->status_text, "no_ik_solution");
    ck_assert_int_eq(r->code, -31);
    /* no pose: the members JSON leaves out are out, time_ms stays */
    ck_assert_uint_eq(r->has,
                      IKD_HAS_CODE | IKD_HAS_ITERATIONS | IKD_HAS_RESTARTS | IKD_HAS_TIME_MS);
    ck_assert_ptr_null(r->joints);
    ck_assert_ptr_null(r->rotations);
    ck_assert_ptr_null(r->local_rotations);
    ck_assert_double_eq(r->time_ms, 0.01);
    ck_assert_int_eq(r->iterations, 64);

    ck_assert_ptr_null(e[2].result);
    ck_assert_str_eq(e[2].stream, "");
    ck_assert_int_eq(e[2].seq, 0);
    ck_assert_int_eq(e[2].error->code, IKD_E_INVALID_REQUEST);
    ck_assert_str_eq(e[2].error->wire_code, "invalid_request");
    ck_assert_str_eq(e[2].error->path, "/targets/2/stream");
    ck_assert_str_eq(e[2].error->message, "\"stream\" must be 1 to 64 characters");
    ck_assert(!e[2].error->has_seq);

    ck_assert_str_eq(e[3].stream, "c3");
    ck_assert_int_eq(e[3].seq, 9);
    ck_assert_int_eq(e[3].error->code, IKD_E_UNKNOWN_STREAM);
    ck_assert_str_eq(e[3].error->stream, "c3");
    ck_assert(e[3].error->has_seq);
    ck_assert_int_eq(e[3].error->seq, 9);
    ck_assert_str_eq(e[3].error->message, "no stream \"c3\"");
}

START_TEST(binary_answer_decodes_as_documented)
{
    out o;
    sample(&o);
    ikd__dec d = {0};
    ikd_tick t;
    ikd_error e;
    ck_assert_int_eq(decode(o.b, o.n, 1024, &d, &t, &e), 0);
    check_sample(&t);
    ikd_tick *copy = ikd_tick_copy(&t);
    ikd__dec_free(&d); /* the copy owns its bytes */
    check_sample(copy);
    ikd_tick_free(copy);

    /* a planar chain's points (D 2) */
    head(&o, 1, 0, 5);
    const double p[] = {0.1, 0.2, 0.3, 0.4};
    solution(&o, "flat", 5, 0, F_POSITIONS, 0, 2, 0, 2, 1, R_POSE, 0, 0, p, 4);
    ikd__dec d2 = {0};
    ck_assert_int_eq(decode(o.b, o.n, 1024, &d2, &t, &e), 0);
    ck_assert_int_eq(t.entries[0].result->position_dim, 2);
    ck_assert_uint_eq(t.entries[0].result->position_count, 2);
    ck_assert_double_eq(t.entries[0].result->positions[3], 0.4);
    /* an empty tick answer is still one */
    head(&o, 0, 0, 6);
    ck_assert_int_eq(decode(o.b, o.n, 1024, &d2, &t, &e), 0);
    ck_assert_uint_eq(t.count, 0);
    ikd__dec_free(&d2);
}
END_TEST

START_TEST(binary_answer_truncations_refused)
{
    out o;
    sample(&o);
    for (size_t k = 0; k < o.n; k++) {
        ikd__dec d = {0};
        ikd_tick t;
        ikd_error e;
        int rc = decode(o.b, k, 1024, &d, &t, &e);
        if (k < 6) { /* no magic and version yet: not this form's */
            ck_assert_int_eq(rc, 1);
        } else {
            ck_assert_msg(rc == IKD_E_BAD_ANSWER, "%zu bytes of %zu accepted (%d)", k, o.n, rc);
            ck_assert_ptr_nonnull(strstr(e.message, "binary tick answer"));
            ck_assert_int_eq(e.has_seq, k >= 24);
            if (k >= 24)
                ck_assert_int_eq(e.seq, 120);
        }
        ikd__dec_free(&d);
    }
    /* a byte more than its entries */
    o.n += 8;
    ikd__dec d = {0};
    ikd_tick t;
    ikd_error e;
    ck_assert_int_eq(decode(o.b, o.n, 1024, &d, &t, &e), IKD_E_BAD_ANSWER);
    ck_assert_ptr_nonnull(strstr(e.message, "after its 4 entries"));
    ikd__dec_free(&d);
}
END_TEST

/* A corruption of the sample: bytes written at entry `entry`'s offset
 * `at` (entry -1: the message's own offset). */
typedef struct edit {
    const char *what;
    int entry;
    size_t at;
    int width; /* 1, 2, 4 bytes of v, or 8 for d */
    uint32_t v;
    double d;
    const char *says; /* a piece of the error's message */
} edit;

START_TEST(binary_answer_corruptions_refused)
{
    static const edit edits[] = {
        {"count past the bytes", -1, 8, 4, 30, 0, "cannot fit"},
        {"count of 2^32 - 1", -1, 8, 4, 0xFFFFFFFFu, 0, "max_streams"},
        {"count one more than the entries", -1, 8, 4, 5, 0, "ends inside its head"},
        {"tick seq not an integer", -1, 16, 8, 0, 0.5, "seq"},
        {"tick seq NaN", -1, 16, 8, 0, NAN, "seq"},
        {"tick seq past 2^53", -1, 16, 8, 0, 1e16, "seq"},
        {"entry shorter than its head", 0, 0, 4, 16, 0, "multiple of 8"},
        {"entry past the message", 0, 0, 4, 0x7FFFFFF8u, 0, "multiple of 8"},
        {"entry size not a multiple of 8", 0, 0, 4, 0, 0, "multiple of 8"},
        {"kind 3", 0, 4, 1, 3, 0, "kind 3"},
        {"kind 0", 2, 4, 1, 0, 0, "kind 0"},
        {"solution without seq", 0, 6, 1, 0, 0, "without seq"},
        {"entry seq not an integer", 0, 8, 8, 0, 7.5, "seq"},
        {"record size off by 8", 0, 20, 4, 16 + 8 * 19 + 8, 0, "record of"},
        {"record size huge", 1, 20, 4, 0xFFFFFFF0u, 0, "record of"},
        {"points of 4 numbers", 0, 34, 2, 4, 0, "not 2 or 3"},
        {"points of 0 numbers", 1, 34, 2, 0, 0, "not 2 or 3"},
        {"a field this client does not know", 0, 24, 4, 0x3F3, 0, "fields"},
        {"more joints than the record holds", 0, 28, 2, 3, 0, "record of"},
        {"a name longer than the entry", 0, 5, 1, 200, 0, "name of"},
        {"a name with a bad character", 0, 0, 0, 0, 0, "stream name"},
        {"a solution without its stream", 1, 5, 1, 0, 0, "stream name"},
        {"an error without code", 3, 16, 2, 0, 0, "without code"},
        {"an error's message past the entry", 3, 20, 4, 0xFFFFFFFFu, 0, "texts of"},
        {"an error's code with a NUL", 3, 24 + 2, 1, 0, 0, "not a word"},
        {"an error's code with a capital", 3, 24 + 2, 1, 'U', 0, "not a word"},
        {"an error's path past the entry", 2, 18, 2, 0xFFFF, 0, "texts of"},
        {"an error's name with a NUL", 3, 25, 1, 0, 0, "stream name"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const edit *x = &edits[i];
        out o;
        sample(&o);
        size_t at = (x->entry < 0 ? 0 : o.entry[x->entry]) + x->at;
        if (strcmp(x->what, "entry size not a multiple of 8") == 0)
            u32(&o, at, (uint32_t)(o.entry[1] - o.entry[0] - 4));
        else if (strcmp(x->what, "a name with a bad character") == 0)
            o.b[o.entry[0] + 24 + 16 + 16 + 8 * 19 + 1] = '!'; /* "l!g0" */
        else if (x->width == 1)
            o.b[at] = (unsigned char)x->v;
        else if (x->width == 2)
            u16(&o, at, x->v);
        else if (x->width == 4)
            u32(&o, at, x->v);
        else
            f64(&o, at, x->d);
        ikd__dec d = {0};
        ikd_tick t;
        ikd_error e;
        int rc = decode(o.b, o.n, 1024, &d, &t, &e);
        ck_assert_msg(rc == IKD_E_BAD_ANSWER, "%s: accepted (%d)", x->what, rc);
        ck_assert_msg(strstr(e.message, x->says) != NULL, "%s: %s", x->what, e.message);
        /* refused before the entries were allocated, or with few */
        ck_assert_msg(ikd__dec_memory(&d) < 64 * 1024, "%s: %zu bytes", x->what,
                      ikd__dec_memory(&d));
        ikd__dec_free(&d);
    }
    /* more entries than a tick can hold: refused before they are allocated */
    out o;
    sample(&o);
    ikd__dec d = {0};
    ikd_tick t;
    ikd_error e;
    ck_assert_int_eq(decode(o.b, o.n, 3, &d, &t, &e), IKD_E_BAD_ANSWER);
    ck_assert_ptr_nonnull(strstr(e.message, "max_streams"));
    ck_assert_uint_eq(ikd__dec_memory(&d), 0);
    ck_assert_int_eq(decode(o.b, o.n, 4, &d, &t, &e), 0);
    ikd__dec_free(&d);
    /* another magic or version: not this form's, nothing read */
    o.b[3] = 'X';
    ck_assert_int_eq(decode(o.b, o.n, 1024, &d, &t, &e), 1);
    o.b[3] = 'S';
    u16(&o, 4, 2);
    ck_assert_int_eq(decode(o.b, o.n, 1024, &d, &t, &e), 1);
    ck_assert_uint_eq(ikd__dec_memory(&d), 0);
    ikd__dec_free(&d);
}
END_TEST

/* ---- a tick as written --------------------------------------------------- */

static double le_f64(const char *p)
{
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--)
        u = u << 8 | (unsigned char)p[k];
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint32_t le_u32(const char *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

START_TEST(binary_tick_written_as_documented)
{
    ikd__buf names = {0}, recs = {0};
    ikd_error e;
    double q1[4] = {0, 0, 0.6, 0.8}, q2[4] = {1, 0, 0, 0};
    ikd_target a = {.position = {0.1, 0.2, 0.3}, .orientation = q1};
    ikd_target b = {.position = {-1, -2, 99}, .dims = 2, .orientation = q2};
    ck_assert_int_eq(
        ikd__tick_put_binary(&names, &recs, "hand_l", &a, IKD_SEQ_AUTO, true, "target", &e), 0);
    ck_assert_int_eq(ikd__tick_put_binary(&names, &recs, "b", &b, 42, true, "target", &e), 0);
    /* a NaN is named, and nothing of it is appended */
    ikd_target nan = {.position = {0, 0, 0}, .orientation = q1};
    double qn[4] = {0, NAN, 0, 1};
    nan.orientation = qn;
    ck_assert_int_eq(ikd__tick_put_binary(&names, &recs, "c", &nan, 1, true, "target", &e),
                     IKD_E_INVALID_ARGUMENT);
    ck_assert_str_eq(e.message, "target.orientation[1] is not finite");
    ck_assert_uint_eq(names.len, 1 + 6 + 1 + 1);
    ck_assert_uint_eq(recs.len, 2 * 64);

    size_t size = ikd__tick_binary_size(2, names.len, true);
    ck_assert_uint_eq(size, 24 + 16 + 2 * 64); /* 9 bytes of names padded to 16 */
    char msg[256] = {0};
    ikd__tick_head_binary(msg, 77, 2, names.len, true);
    memcpy(msg + 24, names.p, names.len);
    memcpy(msg + 40, recs.p, recs.len);
    ck_assert(memcmp(msg, "IKDT", 4) == 0);
    ck_assert_int_eq(msg[4], 1); /* version 1 */
    ck_assert_int_eq(msg[5], 0);
    ck_assert_int_eq(msg[6], 1); /* flags: orientations */
    ck_assert_uint_eq(le_u32(msg + 8), 2);
    ck_assert_uint_eq(le_u32(msg + 12), 9);
    ck_assert_double_eq(le_f64(msg + 16), 77);
    ck_assert_int_eq(msg[24], 6);
    ck_assert(memcmp(msg + 25, "hand_l", 6) == 0);
    ck_assert_int_eq(msg[31], 1);
    ck_assert_int_eq(msg[32], 'b');
    const char *r = msg + 40;
    ck_assert(isnan(le_f64(r))); /* the tick's seq */
    ck_assert_double_eq(le_f64(r + 8), 0.1);
    ck_assert_double_eq(le_f64(r + 24), 0.3);
    ck_assert_double_eq(le_f64(r + 48), 0.6);
    ck_assert_double_eq(le_f64(r + 56), 0.8);
    r += 64;
    ck_assert_double_eq(le_f64(r), 42);
    ck_assert_double_eq(le_f64(r + 8), -1);
    ck_assert_double_eq(le_f64(r + 24), 0); /* planar: z 0, whatever position[2] holds */
    ck_assert_double_eq(le_f64(r + 32), 1);
    /* read back (to write it as JSON after all) */
    long long seq;
    double pos[3], q[4];
    ikd__tick_get_binary(&recs, 1, true, &seq, pos, q);
    ck_assert_int_eq(seq, 42);
    ck_assert_double_eq(pos[1], -2);
    ck_assert_double_eq(q[0], 1);
    ikd__tick_get_binary(&recs, 0, true, &seq, pos, q);
    ck_assert_int_eq(seq, IKD_SEQ_AUTO);
    ck_assert_uint_eq(ikd__tick_binary_size(3, 5, false), 32 + 3 * 32);
    ikd__buf_free(&names);
    ikd__buf_free(&recs);

    /* what fits */
    double v3[3] = {0, 0, 1}, w6[6] = {1, 1, 1, 1, 1, 1};
    ikd_target plain = {.position = {1, 2, 3}};
    ck_assert(ikd__tick_target_binary(&plain, NULL, IKD_SEQ_AUTO));
    ck_assert(ikd__tick_target_binary(&plain, NULL, (1LL << 53) - 1));
    ck_assert(ikd__tick_target_binary(&plain, NULL, -((1LL << 53) - 1)));
    ck_assert(!ikd__tick_target_binary(&plain, NULL, 1LL << 53));
    ck_assert(!ikd__tick_target_binary(NULL, NULL, 1));
    ikd_seed seed = {.values = v3, .count = 3, .width = 1};
    ck_assert(!ikd__tick_target_binary(&plain, &seed, 1));
    ikd_target t = plain;
    t.pole = v3;
    ck_assert(!ikd__tick_target_binary(&t, NULL, 1));
    t = plain;
    t.up = v3;
    ck_assert(!ikd__tick_target_binary(&t, NULL, 1));
    t = plain;
    t.weights = w6;
    ck_assert(!ikd__tick_target_binary(&t, NULL, 1));
    t = plain;
    t.json = "{\"position\":[1,2,3]}";
    ck_assert(!ikd__tick_target_binary(&t, NULL, 1));
    t = plain;
    t.dims = 4;
    ck_assert(!ikd__tick_target_binary(&t, NULL, 1));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_binary_decode");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, binary_answer_decodes_as_documented);
    tcase_add_test(tc, binary_answer_truncations_refused);
    tcase_add_test(tc, binary_answer_corruptions_refused);
    tcase_add_test(tc, binary_tick_written_as_documented);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
