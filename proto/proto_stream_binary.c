/*
 * proto_stream_binary.c: the binary form of ticks and their answers
 * (proto/STREAM.md, "Binary ticks"), for game servers that count
 * microseconds: a tick's targets as doubles in fixed places in one binary
 * WebSocket message ("IKDT"), answered by one binary message ("IKDS") of
 * fixed-layout entries, instead of 70 KB of text to write and 180 KB to
 * parse back each tick. The form is chosen per message: a binary message
 * is a binary tick and gets a binary answer; text messages are JSON, as
 * ever, so a client that never sends a binary message never sees one.
 *
 * A tick is the JSON tick's twin, described by the same tables: each
 * target is the codec's filled target {"position":[x,y,z]} (with
 * "orientation" when the tick has them; proto_codec.h) of the stream it
 * names, given its meaning by the stream's session with the rules and
 * error messages of the JSON form, at the same paths
 * (/targets/<i>/target/position/<k>, /targets/<i>/stream, /targets/<i>/seq);
 * the envelope's errors are the JSON tick's, worded alike. The form's own
 * rules: a planar chain's z must be 0 (its targets lie in its plane), and
 * numbers JSON cannot write (NaN, infinities) are named "must be a finite
 * number". An answer's entry is either a solution (the stream, seq,
 * skipped and the binary batch's record of its result, proto_binary.c:
 * one writer for both binary answers, following PROTO_FIELD_MAP's binary
 * column) or an error (code, path and message as the JSON error has
 * them).
 *
 * Bounds: a tick's targets are bounded by the message (--max-message: at
 * least 33 bytes each) and then by --max-streams, as the JSON tick's; a
 * name by 255 bytes (one byte of length; only 1..64 valid). Nothing here
 * allocates but the decoded targets (owned by the message).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_codec.h"
#include "proto/proto_job.h"
#include "proto/proto_le.h"

#define TICK_HEAD      24 /* "IKDT", version, flags, count, names' bytes, seq */
#define ANSWER_HEAD    24 /* "IKDS", version, 0, count, skipped, seq */
#define ENTRY_HEAD     24 /* size, kind, name length, flags, 0, seq, two counts */
#define SOLUTION_SHAPE 16 /* fields, dof, npos, nrot, dims, 0 */

enum { ENTRY_SOLUTION = 1, ENTRY_ERROR = 2 };

/* The numbers of a target record: seq, then the target's members in the
 * table's order (position, orientation when the tick's flag says so). */
static size_t record_doubles(bool orientation)
{
    return 1 + proto_target_members[PROTO_T_POSITION].count +
           (orientation ? proto_target_members[PROTO_T_ORIENTATION].count : 0);
}

/* A seq as a double: an integer of magnitude at most PROTO_STREAM_SEQ_MAX. */
static bool seq_of(double d, long long *out)
{
    if (!(fabs(d) <= (double)PROTO_STREAM_SEQ_MAX) || d != floor(d))
        return false;
    *out = (long long)d;
    return true;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* ---- ticks ------------------------------------------------------------------------ */

int proto_stream_decode_binary(const char *data, size_t len, proto_stream_msg *out,
                               proto_error *err)
{
    memset(out, 0, sizeof *out);
    proto_error_clear(err);
    const unsigned char *b = (const unsigned char *)data;
    if (!b || len < TICK_HEAD || memcmp(b, "IKDT", 4) != 0 || proto_le_u16(b + 4) != 1)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary message is a binary tick: it starts with \"IKDT\" and "
                               "version 1 (proto/STREAM.md, \"Binary ticks\")");
    out->type = PROTO_STREAM_TICK;
    out->binary = true;
    unsigned flags = proto_le_u16(b + 6);
    size_t n = proto_le_u32(b + 8), names = proto_le_u32(b + 12);
    out->has_seq = seq_of(proto_le_f64(b + 16), &out->seq);
    if (!out->has_seq)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/seq",
                               "\"seq\" must be an integer of magnitude below 2^53");
    if (flags & ~1u)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary tick's flags are 0 or 1 (orientations), not %u", flags);
    if (n == 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/targets",
                               "\"targets\" must be a non-empty array of {\"stream\", \"seq\", "
                               "\"target\"} objects");
    bool orientation = flags & 1;
    size_t stride = 8 * record_doubles(orientation);
    size_t at = pad8(TICK_HEAD + names);
    if (names > len || at > len || (len - at) / stride != n || (len - at) % stride != 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary tick of %zu targets%s with %zu bytes of names has %zu "
                               "bytes, not %zu",
                               n, orientation ? " with orientations" : "", names,
                               at + n * stride, len); /* 32-bit n and names: no overflow */
    /* n <= len / stride: the targets are bounded by the message */
    proto_stream_raw *ts = calloc(n, sizeof *ts);
    if (!ts)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    const unsigned char *p = b + TICK_HEAD, *end = p + names;
    for (size_t i = 0; i < n; i++) {
        proto_stream_raw *t = &ts[i];
        size_t l = p < end ? *p : 0;
        if (p >= end || l > (size_t)(end - p - 1)) {
            free(ts);
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                                   "a binary tick's names (%zu bytes) end inside target %zu's",
                                   names, i);
        }
        p++;
        if (l >= 1 && l <= PROTO_STREAM_NAME_MAX) {
            memcpy(t->stream, p, l);
            t->stream[l] = '\0';
        }
        if (!proto_stream_name_valid(t->stream)) {
            t->stream[0] = '\0';
            t->bad = PROTO_RAW_BAD_STREAM;
        }
        p += l;
        const unsigned char *q = b + at + i * stride;
        double s = proto_le_f64(q);
        t->has_seq = true;
        t->seq = out->seq; /* NaN: the tick's, as a JSON target without "seq" */
        if (!isnan(s) && !seq_of(s, &t->seq))
            t->bad = PROTO_RAW_BAD_SEQ; /* first, as the JSON form names it */
        t->filled = true;
        t->has = PROTO_BIT(PROTO_T_POSITION) | (orientation ? PROTO_BIT(PROTO_T_ORIENTATION) : 0);
        q += 8;
        for (size_t k = 0; k < proto_target_members[PROTO_T_POSITION].count; k++, q += 8)
            t->num[PROTO_T_POSITION_AT + k] = proto_le_f64(q);
        t->n[PROTO_T_POSITION] = proto_target_members[PROTO_T_POSITION].count;
        for (size_t k = 0; orientation && k < proto_target_members[PROTO_T_ORIENTATION].count;
             k++, q += 8)
            t->num[PROTO_T_ORIENTATION_AT + k] = proto_le_f64(q);
        t->n[PROTO_T_ORIENTATION] = proto_target_members[PROTO_T_ORIENTATION].count;
    }
    if (p != end) {
        free(ts);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary tick's names of %zu targets take %zu bytes, not %zu", n,
                               (size_t)(p - (b + TICK_HEAD)), names);
    }
    out->raw = ts;
    out->nraw = n;
    return 0;
}

int proto__tick_target_filled(const proto_stream_raw *t, const proto_chain *c, const char *path,
                              proto_object *o, proto_error *err)
{
    proto__tick_target(t, o);
    if (c->kind != PROTO_CHAIN_PLANAR || (o->has & ~PROTO_TARGET_PLANAR))
        return 0; /* (a member the chain does not have: the rules name it) */
    o->n[PROTO_T_POSITION] = proto_target_members[PROTO_T_POSITION].count2d;
    return proto__planar_z(o->num[PROTO_T_POSITION_AT + 2], path, err);
}

/* ---- answers ---------------------------------------------------------------------- */

/* n bytes at the end of w, zeroed; NULL when out of memory (sticky). */
static unsigned char *take(proto_jw *w, size_t n)
{
    if (w->oom || proto_jw_reserve(w, n) != 0) {
        w->oom = true;
        return NULL;
    }
    unsigned char *p = (unsigned char *)w->p + w->len;
    memset(p, 0, n);
    w->len += n;
    return p;
}

void proto_stream_tick_head_binary(proto_jw *w, long long seq, size_t skipped, size_t n)
{
    unsigned char *h = take(w, ANSWER_HEAD);
    if (!h)
        return;
    memcpy(h, "IKDS", 4);
    proto_le_put_u16(h + 4, 1);
    proto_le_put_u32(h + 8, (uint32_t)n);
    proto_le_put_u32(h + 12, (uint32_t)(skipped > UINT32_MAX ? UINT32_MAX : skipped));
    proto_le_put_f64(h + 16, (double)seq);
}

/* An entry's head: its size, kind, the stream's name (written by the
 * caller at its place), seq, and the two counts. */
static void entry_head(unsigned char *e, size_t size, int kind, size_t name, bool has_seq,
                       long long seq, uint32_t a, uint32_t b)
{
    proto_le_put_u32(e, (uint32_t)size);
    e[4] = (unsigned char)kind;
    e[5] = (unsigned char)name;
    e[6] = has_seq ? 1 : 0;
    proto_le_put_f64(e + 8, has_seq ? (double)seq : 0);
    proto_le_put_u32(e + 16, a);
    proto_le_put_u32(e + 20, b);
}

void proto_stream_tick_solution_binary(proto_jw *w, const char *stream, long long seq,
                                       size_t skipped, const proto_job *job, size_t i)
{
    size_t name = strlen(stream), rec = proto_job_binary_record(job);
    size_t size = ENTRY_HEAD + SOLUTION_SHAPE + rec + pad8(name);
    unsigned char *e = take(w, size);
    if (!e)
        return;
    entry_head(e, size, ENTRY_SOLUTION, name, true, seq,
               (uint32_t)(skipped > UINT32_MAX ? UINT32_MAX : skipped), (uint32_t)rec);
    unsigned char *s = e + ENTRY_HEAD;
    unsigned f = proto__binary_fields(job);
    proto_le_put_u32(s, f);
    proto_le_put_u16(s + 4, (uint16_t)job->dof);
    proto_le_put_u16(s + 6, (uint16_t)job->npos);
    proto_le_put_u16(s + 8, (uint16_t)job->nrot);
    proto_le_put_u16(s + 10, (uint16_t)(job->dims2 ? 2 : 3));
    proto__binary_record(s + SOLUTION_SHAPE, job, i, f);
    memcpy(s + SOLUTION_SHAPE + rec, stream, name);
}

void proto_stream_tick_error_binary(proto_jw *w, const char *stream, bool has_seq, long long seq,
                                    const proto_error *e)
{
    bool named = stream && proto_stream_name_valid(stream);
    const char *code = proto_error_name(e->code);
    size_t name = named ? strlen(stream) : 0, lc = strlen(code);
    size_t lp = strnlen(e->path, sizeof e->path), lm = strnlen(e->message, sizeof e->message);
    size_t size = ENTRY_HEAD + pad8(name + lc + lp + lm);
    unsigned char *x = take(w, size);
    if (!x)
        return;
    entry_head(x, size, ENTRY_ERROR, name, has_seq, seq, (uint32_t)(lc | lp << 16), (uint32_t)lm);
    unsigned char *s = x + ENTRY_HEAD;
    memcpy(s, stream ? stream : "", name);
    memcpy(s + name, code, lc);
    memcpy(s + name + lc, e->path, lp);
    memcpy(s + name + lc + lp, e->message, lm);
}
