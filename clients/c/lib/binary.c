/*
 * binary.c: the binary form of ticks (proto/STREAM.md, "Binary ticks"), for
 * programs that count microseconds: a tick's targets as doubles in fixed
 * places in one binary WebSocket message ("IKDT"), and ikd's binary answer
 * ("IKDS") read into the same ikd_tick as a JSON tick_solution, with no
 * number printed or parsed on either side. tick.c decides which form a
 * tick takes; this file only writes and reads the bytes.
 *
 * Writing: a target fits the form when it is a position (2 or 3 numbers)
 * with, or without, an orientation and nothing else (no pole, up, weights,
 * JSON text or seed) and its seq is exact as a double; names and records
 * are appended to two buffers as the tick is built, and the head written
 * when it is sent. Every number is checked to be finite, and named as the
 * JSON encoder names it (encode.c).
 *
 * Reading: ikd's bytes are not trusted. The head's count is checked
 * against the bytes there and against the caller's bound (a tick holds at
 * most the connection's max_streams targets) before the entries are
 * allocated; each entry's size, kind, name, lengths and record shape are
 * checked against the entry and the message before a byte of them is read;
 * the message must end where its last entry ends. What is decoded lives in
 * the decoder's arena (internal.h), as a JSON answer's does, so its size
 * follows the message's (at most max_message) and the count's bound.
 *
 * The answer's entries become ikd_tick_entry as the JSON answer's do: a
 * solution's stream, seq, skipped and result; an error's stream ("" when
 * ikd names none, as a JSON item without "stream"), seq, and an ikd_error
 * with ikd's code word, path and message. A result read from a record has
 * the members its fields give places for and its flags say hold a value
 * (a member that is NaN in the record because the JSON answer leaves it
 * out is left out here too), code, iterations and restarts always, and
 * status from the MoveIt code; reason, cause, arrived, solutions and
 * solution_count are JSON only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define TICK_HEAD      24                 /* "IKDT", version, flags, count, names' bytes, seq */
#define ANSWER_HEAD    24                 /* "IKDS", version, 0, count, skipped, seq */
#define ENTRY_HEAD     24                 /* size, kind, name length, flags, 0, seq, two counts */
#define SOLUTION_SHAPE 16                 /* fields, J, P, Q, D, 0 */
#define RECORD_FIXED   16                 /* code, flags, iterations, restarts */
#define SEQ_MAX        9007199254740991.0 /* 2^53 - 1 */

enum { ENTRY_SOLUTION = 1, ENTRY_ERROR = 2 };

/* A record's fields (proto/README.md, "Binary batches"), in their order. */
enum {
    BF_JOINTS = 1u << 0,
    BF_POSITIONS = 1u << 1,
    BF_ROTATIONS = 1u << 2,
    BF_LOCAL_ROTATIONS = 1u << 3,
    BF_TIP = 1u << 4,
    BF_POSITION_ERROR = 1u << 5,
    BF_ORIENTATION_ERROR = 1u << 6,
    BF_MAX_JOINT_STEP = 1u << 7,
    BF_TIME_MS = 1u << 8,
    BF_ALL = (1u << 9) - 1
};
/* A record's flags: which members hold a value. */
enum {
    BR_POSE = 1u << 0,
    BR_TIP = 1u << 1,
    BR_ORIENTATION_ERROR = 1u << 2,
    BR_MAX_JOINT_STEP = 1u << 3
};

/* ---- little-endian numbers ----------------------------------------------- */

static uint16_t le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double le_f64(const unsigned char *p)
{
    uint64_t u = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> 8 * k);
}

static void put_f64(unsigned char *p, double d)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &d, sizeof d);
#else
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(u >> 8 * k);
#endif
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* d is an integer of magnitude at most 2^53 - 1 (NaN is not). */
static bool seq_of(double d, long long *out)
{
    if (!(fabs(d) <= SEQ_MAX) || d != floor(d))
        return false;
    *out = (long long)d;
    return true;
}

/* ---- writing a tick ------------------------------------------------------ */

bool ikd__seq_binary_ok(long long seq)
{
    return seq >= -(long long)SEQ_MAX && seq <= (long long)SEQ_MAX;
}

bool ikd__tick_target_binary(const ikd_target *t, const ikd_seed *seed, long long seq)
{
    return t && !t->json && !t->pole && !t->up && !t->weights && !seed &&
           (t->dims == 0 || t->dims == 2 || t->dims == 3) &&
           (seq == IKD_SEQ_AUTO || ikd__seq_binary_ok(seq));
}

size_t ikd__tick_record_size(bool orientation)
{
    return 8 * (orientation ? 8 : 4);
}

size_t ikd__tick_binary_size(size_t n, size_t names, bool orientation)
{
    return pad8(TICK_HEAD + names) + n * ikd__tick_record_size(orientation);
}

int ikd__tick_put_binary(ikd__buf *names, ikd__buf *recs, const char *name, const ikd_target *t,
                         long long seq, bool orientation, const char *what, ikd_error *err)
{
    int dims = t->dims ? t->dims : 3;
    for (int k = 0; k < dims; k++)
        if (!isfinite(t->position[k]))
            return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s.position[%d] is not finite", what, k);
    for (int k = 0; orientation && k < 4; k++)
        if (!isfinite(t->orientation[k]))
            return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s.orientation[%d] is not finite", what,
                             k);
    size_t l = strlen(name), rec = ikd__tick_record_size(orientation);
    if (l < 1 || l > 255)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "a stream name of %zu bytes", l);
    if (ikd__buf_reserve(names, 1 + l) || ikd__buf_reserve(recs, rec))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    names->p[names->len] = (char)l;
    memcpy(names->p + names->len + 1, name, l);
    names->len += 1 + l;
    unsigned char *r = (unsigned char *)recs->p + recs->len;
    put_f64(r, seq == IKD_SEQ_AUTO ? NAN : (double)seq); /* NaN: the tick's seq */
    for (int k = 0; k < 3; k++)
        put_f64(r + 8 + 8 * k, k < dims ? t->position[k] : 0); /* planar: z 0 */
    for (int k = 0; orientation && k < 4; k++)
        put_f64(r + 32 + 8 * k, t->orientation[k]);
    recs->len += rec;
    return 0;
}

void ikd__tick_get_binary(const ikd__buf *recs, size_t i, bool orientation, long long *seq,
                          double position[3], double q[4])
{
    const unsigned char *r =
        (const unsigned char *)recs->p + i * ikd__tick_record_size(orientation);
    double s = le_f64(r);
    *seq = isnan(s) ? IKD_SEQ_AUTO : (long long)s;
    for (int k = 0; k < 3; k++)
        position[k] = le_f64(r + 8 + 8 * k);
    for (int k = 0; orientation && k < 4; k++)
        q[k] = le_f64(r + 32 + 8 * k);
}

void ikd__tick_head_binary(char *head, long long seq, size_t n, size_t names, bool orientation)
{
    unsigned char *h = (unsigned char *)head;
    memcpy(h, "IKDT", 4);
    put16(h + 4, 1);
    put16(h + 6, orientation ? 1 : 0);
    put32(h + 8, (uint32_t)n);
    put32(h + 12, (uint32_t)names);
    put_f64(h + 16, (double)seq);
}

/* ---- reading an answer --------------------------------------------------- */

typedef struct reader {
    ikd__dec *d;
    const unsigned char *b;
    size_t n;
    char why[240];
} reader;

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return -1;
}

/* k doubles at p into the arena (NULL when k is 0); the caller checked
 * that they lie inside the message. */
static int doubles(reader *r, const unsigned char *p, size_t k, const double **out)
{
    *out = NULL;
    if (!k)
        return 0;
    double *v = ikd__arena_alloc(&r->d->arena, k * sizeof(double));
    if (!v)
        return fail(r, "out of memory");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(v, p, k * sizeof(double));
#else
    for (size_t i = 0; i < k; i++)
        v[i] = le_f64(p + 8 * i);
#endif
    *out = v;
    return 0;
}

/* n bytes of text into dst (size with the NUL), truncated as the JSON
 * reader truncates (a NUL inside ends the text there). */
static void text_into(char *dst, size_t size, const unsigned char *p, size_t n)
{
    size_t m = n < size - 1 ? n : size - 1;
    memcpy(dst, p, m);
    dst[m] = '\0';
}

static ikd_status status_of_code(int code, const char **word)
{
    switch (code) {
    case 1:
        *word = "success";
        return IKD_STATUS_SUCCESS;
    case -31:
        *word = "no_ik_solution";
        return IKD_STATUS_NO_IK_SOLUTION;
    case -6:
        *word = "timed_out";
        return IKD_STATUS_TIMED_OUT;
    case -16:
        *word = "invalid_goal_constraints";
        return IKD_STATUS_INVALID_GOAL_CONSTRAINTS;
    default:
        *word = "failure";
        return IKD_STATUS_FAILURE;
    }
}

/* The stream's name of an entry: L bytes at p, a valid name (or "" when
 * L is 0 and allowed). */
static int entry_name(reader *r, const unsigned char *p, size_t l, bool may_be_empty,
                      const char **out)
{
    char name[256];
    memcpy(name, p, l);
    name[l] = '\0';
    if (l == 0 ? !may_be_empty : (strlen(name) != l || !ikd__stream_name_ok(name)))
        return fail(r,
                    "a stream name of %zu bytes that is not 1 to 64 characters of "
                    "A-Z a-z 0-9 _ . : -",
                    l);
    *out = ikd__arena_strndup(&r->d->arena, name, l);
    return *out ? 0 : fail(r, "out of memory");
}

/* A solution entry of size bytes at x (its head read into e). */
static int read_solution(reader *r, const unsigned char *x, size_t size, size_t l,
                         ikd_tick_entry *e)
{
    if (size < ENTRY_HEAD + SOLUTION_SHAPE)
        return fail(r, "a solution of %zu bytes, shorter than its head and shape", size);
    uint64_t rec = le32(x + 20);
    unsigned fields = le32(x + 24);
    size_t J = le16(x + 28), P = le16(x + 30), Q = le16(x + 32), D = le16(x + 34);
    if (fields & ~(unsigned)BF_ALL)
        return fail(r, "fields 0x%x name members this client does not know", fields);
    if (D != 2 && D != 3)
        return fail(r, "points of %zu numbers, not 2 or 3", D);
    size_t sizes[9] = {J, P * D, 4 * Q, 4 * Q, 7, 1, 1, 1, 1}, k = 0;
    for (int m = 0; m < 9; m++)
        if (fields & (1u << m))
            k += sizes[m];
    if (rec != RECORD_FIXED + 8 * (uint64_t)k)
        return fail(r, "a record of %llu bytes where its fields take %zu", (unsigned long long)rec,
                    RECORD_FIXED + 8 * k);
    if (ENTRY_HEAD + SOLUTION_SHAPE + rec + l > size)
        return fail(r, "a record of %llu bytes and a name of %zu in a solution of %zu",
                    (unsigned long long)rec, l, size);
    const unsigned char *p = x + ENTRY_HEAD + SOLUTION_SHAPE;
    if (entry_name(r, p + rec, l, false, &e->stream))
        return -1;
    ikd_result *res = ikd__arena_alloc(&r->d->arena, sizeof *res);
    if (!res)
        return fail(r, "out of memory");
    memset(res, 0, sizeof *res);
    res->code = (int32_t)le32(p);
    unsigned flags = le32(p + 4);
    res->iterations = le32(p + 8);
    res->restarts = le32(p + 12);
    res->status = status_of_code(res->code, &res->status_text);
    res->has = IKD_HAS_CODE | IKD_HAS_ITERATIONS | IKD_HAS_RESTARTS;
    bool pose = flags & BR_POSE;
    const unsigned char *q = p + RECORD_FIXED;
    int rc = 0;
    if (fields & BF_JOINTS) {
        if (pose) {
            rc |= doubles(r, q, J, &res->joints);
            res->joint_count = J;
            res->has |= IKD_HAS_JOINTS;
        }
        q += 8 * J;
    }
    if (fields & BF_POSITIONS) {
        if (pose) {
            rc |= doubles(r, q, P * D, &res->positions);
            res->position_count = P;
            res->position_dim = (int)D;
            res->has |= IKD_HAS_POSITIONS;
        }
        q += 8 * P * D;
    }
    if (fields & BF_ROTATIONS) {
        if (pose) {
            rc |= doubles(r, q, 4 * Q, &res->rotations);
            res->rotation_count = Q;
            res->has |= IKD_HAS_ROTATIONS;
        }
        q += 32 * Q;
    }
    if (fields & BF_LOCAL_ROTATIONS) {
        if (pose) {
            rc |= doubles(r, q, 4 * Q, &res->local_rotations);
            res->local_rotation_count = Q;
            res->has |= IKD_HAS_LOCAL_ROTATIONS;
        }
        q += 32 * Q;
    }
    if (fields & BF_TIP) {
        if (flags & BR_TIP) {
            for (int i = 0; i < 3; i++)
                res->tip_position[i] = le_f64(q + 8 * i);
            for (int i = 0; i < 4; i++)
                res->tip_orientation[i] = le_f64(q + 24 + 8 * i);
            res->has |= IKD_HAS_TIP;
        }
        q += 56;
    }
    static const struct {
        unsigned field, shown, has;
        size_t offset;
    } one[] = {
        {BF_POSITION_ERROR, BR_POSE, IKD_HAS_POSITION_ERROR, offsetof(ikd_result, position_error)},
        {BF_ORIENTATION_ERROR, BR_ORIENTATION_ERROR, IKD_HAS_ORIENTATION_ERROR,
         offsetof(ikd_result, orientation_error)},
        {BF_MAX_JOINT_STEP, BR_MAX_JOINT_STEP, IKD_HAS_MAX_JOINT_STEP,
         offsetof(ikd_result, max_joint_step)},
        {BF_TIME_MS, 0, IKD_HAS_TIME_MS, offsetof(ikd_result, time_ms)},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        if (!(fields & one[i].field))
            continue;
        if (!one[i].shown || (flags & one[i].shown)) {
            double v = le_f64(q);
            memcpy((char *)res + one[i].offset, &v, sizeof v);
            res->has |= one[i].has;
        }
        q += 8;
    }
    if (rc)
        return -1;
    e->skipped = le32(x + 16);
    e->result = res;
    return 0;
}

/* An error entry of size bytes at x. */
static int read_error(reader *r, const unsigned char *x, size_t size, size_t l, bool has_seq,
                      ikd_tick_entry *e)
{
    size_t lc = le16(x + 16), lp = le16(x + 18), lm = le32(x + 20);
    if ((uint64_t)ENTRY_HEAD + l + lc + lp + lm > size)
        return fail(r,
                    "an error's name and texts of %zu, %zu, %zu and %zu bytes in an entry of %zu",
                    l, lc, lp, lm, size);
    if (lc == 0)
        return fail(r, "an error without code");
    const unsigned char *p = x + ENTRY_HEAD;
    /* ikd's codes are words (proto/README.md, "Errors") */
    for (size_t i = 0; i < lc; i++)
        if (lc >= sizeof e->error->wire_code ||
            !((p[l + i] >= 'a' && p[l + i] <= 'z') || (p[l + i] >= '0' && p[l + i] <= '9') ||
              p[l + i] == '_'))
            return fail(r, "an error's code of %zu bytes that is not a word of a-z 0-9 _", lc);
    if (entry_name(r, p, l, true, &e->stream))
        return -1;
    ikd_error *er = ikd__arena_alloc(&r->d->arena, sizeof *er);
    if (!er)
        return fail(r, "out of memory");
    memset(er, 0, sizeof *er);
    text_into(er->wire_code, sizeof er->wire_code, p + l, lc);
    text_into(er->path, sizeof er->path, p + l + lc, lp);
    text_into(er->message, sizeof er->message, p + l + lc + lp, lm);
    er->code = ikd_errcode_from_wire(er->wire_code);
    ikd__strlcpy(er->stream, e->stream, sizeof er->stream);
    er->seq = e->seq;
    er->has_seq = has_seq;
    e->error = er;
    return 0;
}

/* Entry i at r->b + at: its size in *size. */
static int read_entry(reader *r, size_t at, ikd_tick_entry *e, size_t *size)
{
    memset(e, 0, sizeof *e);
    if (r->n - at < ENTRY_HEAD)
        return fail(r, "the message ends inside its head");
    const unsigned char *x = r->b + at;
    size_t sz = le32(x), l = x[5];
    int kind = x[4];
    bool has_seq = x[6] & 1;
    if (sz < ENTRY_HEAD || sz % 8 || sz > r->n - at)
        return fail(r, "%zu bytes, not a multiple of 8 from %d to the %zu left", sz, ENTRY_HEAD,
                    r->n - at);
    if (has_seq && !seq_of(le_f64(x + 8), &e->seq))
        return fail(r, "a seq that is not an integer of magnitude below 2^53");
    *size = sz;
    if (kind == ENTRY_SOLUTION) {
        if (!has_seq)
            return fail(r, "a solution without seq");
        return read_solution(r, x, sz, l, e);
    }
    if (kind == ENTRY_ERROR)
        return read_error(r, x, sz, l, has_seq, e);
    return fail(r, "an entry of kind %d, neither a solution (1) nor an error (2)", kind);
}

int ikd__decode_tick_binary(ikd__dec *d, const char *p, size_t n, size_t max_entries, ikd_tick *out,
                            ikd_error *err)
{
    memset(out, 0, sizeof *out);
    const unsigned char *b = (const unsigned char *)p;
    if (!b || n < 6 || memcmp(b, "IKDS", 4) != 0 || le16(b + 4) != 1)
        return 1;
    if (n < ANSWER_HEAD)
        return ikd__fail(err, IKD_E_BAD_ANSWER,
                         "a binary tick answer from ikd of %zu bytes ends inside its head", n);
    long long seq;
    if (!seq_of(le_f64(b + 16), &seq))
        return ikd__fail(err, IKD_E_BAD_ANSWER,
                         "a binary tick answer from ikd whose seq is not an integer of "
                         "magnitude below 2^53");
    size_t count = le32(b + 8);
    reader r = {d, b, n, ""};
    int rc = 0;
    ikd_tick_entry *entries = NULL;
    if (count > max_entries)
        rc = fail(&r, "%zu entries, but a tick holds at most %zu targets (max_streams)", count,
                  max_entries);
    else if (count > (n - ANSWER_HEAD) / ENTRY_HEAD)
        rc = fail(&r, "%zu entries cannot fit in its %zu bytes", count, n);
    else if (count && !(entries = ikd__arena_alloc(&d->arena, count * sizeof *entries)))
        rc = fail(&r, "out of memory");
    size_t at = ANSWER_HEAD, i = 0;
    for (; !rc && i < count; i++) {
        size_t size = 0;
        if (read_entry(&r, at, &entries[i], &size)) {
            char why[sizeof r.why];
            memcpy(why, r.why, sizeof why);
            rc = fail(&r, "entry %zu (at byte %zu): %.200s", i, at, why);
        }
        at += size;
    }
    if (!rc && at != n)
        rc = fail(&r, "%zu bytes after its %zu entries", n - at, count);
    if (rc) {
        ikd__fail(err, IKD_E_BAD_ANSWER, "a binary tick answer from ikd that cannot be read: %s",
                  r.why);
        if (err) { /* so that what waits for the tick hears of it */
            err->seq = seq;
            err->has_seq = true;
        }
        return IKD_E_BAD_ANSWER;
    }
    out->seq = seq;
    out->skipped = le32(b + 12);
    out->count = count;
    out->entries = entries;
    return 0;
}
