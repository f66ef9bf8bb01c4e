/*
 * tick.c: ticks on an ikd_conn (proto/STREAM.md, "tick"): one message with
 * a target for many streams, built target by target (ikd_tick_begin,
 * ikd_tick_add, ikd_tick_send) and answered by one IKD_EV_TICK.
 *
 * Two forms, one API. JSON text, written as the targets are added; or,
 * once a connection asks for it (ikd_conn_set_binary_ticks), the binary
 * form of STREAM.md's "Binary ticks" (binary.c), which ikd answers in
 * binary: the numbers go as doubles and come back as doubles, nothing is
 * printed or parsed. A tick goes binary when every one of its targets fits
 * the form, by the rule of the JavaScript and Python clients: a position
 * and an orientation on every target, or on none, no pole, up, weights,
 * target JSON or seed; and its seqs are exact as doubles (else the tick is
 * JSON, and ikd answers a bad seq as it does in JSON). The first target
 * that does not fit turns the tick into JSON: the targets added so far are
 * written as their JSON twins, then this one, so that every tick can be
 * sent whatever it holds.
 *
 * Bounds, the same in both forms: at most max_streams targets, at most
 * max_send_queue bytes; an add that fails (a NaN, a bound, no memory)
 * leaves the tick as it was, in the form it was in.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "conn.h"

#define TICK_HEAD 24 /* a binary tick's head, written at send */

#define PUT(b, lit)                                                                                \
    do {                                                                                           \
        if (ikd__buf_put((b), lit, sizeof(lit) - 1))                                               \
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");                               \
    } while (0)

int ikd_conn_set_binary_ticks(ikd_conn *c, bool on)
{
    if (!c)
        return IKD_E_INVALID_ARGUMENT;
    c->binary_ticks = on;
    return 0;
}

bool ikd_tick_is_binary(const ikd_conn *c)
{
    return c && c->tick_open && c->tick_binary;
}

/* {"type":"tick","seq":S,"targets":[ into b (emptied first). */
static int json_head(ikd__buf *b, long long seq, ikd_error *err)
{
    b->len = 0;
    PUT(b, "{\"type\":\"tick\",\"seq\":");
    if (ikd__put_integer(b, seq))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    PUT(b, ",\"targets\":[");
    return 0;
}

/* Target i of the tick as JSON, appended to b (a comma first after the
 * first); on error b may hold part of it. */
static int json_entry(ikd__buf *b, size_t i, const char *stream, const ikd_target *target,
                      const ikd_seed *seed, long long seq, ikd_error *err)
{
    int rc;
    if (i)
        PUT(b, ",");
    PUT(b, "{\"stream\":");
    if ((rc = ikd__put_name(b, stream, err)))
        return rc;
    if (seq != IKD_SEQ_AUTO) {
        PUT(b, ",\"seq\":");
        if (ikd__put_integer(b, seq))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    PUT(b, ",\"target\":");
    if ((rc = ikd__put_target(b, target, "target", err)))
        return rc;
    if (seed) {
        PUT(b, ",\"seed\":");
        if ((rc = ikd__put_seed(b, seed, "seed", err)))
            return rc;
    }
    PUT(b, "}");
    return 0;
}

/* The binary tick built so far, written as its JSON twin into b. */
static int binary_as_json(ikd_conn *c, ikd__buf *b, ikd_error *err)
{
    int rc = json_head(b, c->tick_seq, err);
    const unsigned char *p = (const unsigned char *)c->tick.p + TICK_HEAD;
    for (size_t i = 0; !rc && i < c->tick_count; i++) {
        char name[256];
        size_t l = *p++;
        memcpy(name, p, l);
        name[l] = '\0';
        p += l;
        double q[4];
        long long seq;
        ikd_target t = {.dims = (unsigned char)c->tick_dims.p[i]};
        ikd__tick_get_binary(&c->tick_recs, i, c->tick_orient, &seq, t.position, q);
        if (c->tick_orient)
            t.orientation = q;
        rc = json_entry(b, i, name, &t, NULL, seq, err);
    }
    return rc;
}

/* FNV-1a over name and a 0 after it. */
uint32_t ikd__names_hash(uint32_t h, const char *name)
{
    for (const char *p = name;; p++) {
        h = (h ^ (unsigned char)*p) * 16777619u;
        if (!*p)
            return h;
    }
}

int ikd_tick_begin(ikd_conn *c, long long seq, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc)
        return rc;
    if (seq == IKD_SEQ_AUTO)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "a tick needs its own seq");
    bool binary = c->binary_ticks && ikd__seq_binary_ok(seq);
    if (binary) {
        static const char zero[TICK_HEAD];
        c->tick.len = 0;
        if (ikd__buf_put(&c->tick, zero, sizeof zero))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    } else if ((rc = json_head(&c->tick, seq, err))) {
        return rc;
    }
    c->tick_recs.len = c->tick_dims.len = 0;
    c->tick_binary = binary;
    c->tick_open = true;
    c->tick_seq = seq;
    c->tick_count = 0;
    c->tick_names = IKD__NAMES_HASH0;
    return 0;
}

/* Prefixes err's message with the entry it is about. */
static int named(ikd_error *err, size_t i, const char *stream, int rc)
{
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "tick entry %zu (stream %s): %.400s", i, stream, err->message);
    memcpy(err->message, msg, sizeof msg);
    return rc;
}

static int too_large(ikd_conn *c, ikd_error *err)
{
    return ikd__fail(err, IKD_E_MESSAGE_TOO_LARGE,
                     "the tick would be larger than max_send_queue (%zu bytes)", c->max_send_queue);
}

/* Adds a target that fits the binary form to a binary tick. */
static int add_binary(ikd_conn *c, const char *stream, const ikd_target *target, long long seq,
                      ikd_error *err)
{
    bool orient = target->orientation != NULL;
    size_t names = c->tick.len - TICK_HEAD + 1 + strlen(stream);
    if (ikd__tick_binary_size(c->tick_count + 1, names, orient) > c->max_send_queue)
        return too_large(c, err);
    size_t mark = c->tick.len, rec_mark = c->tick_recs.len;
    int rc =
        ikd__tick_put_binary(&c->tick, &c->tick_recs, stream, target, seq, orient, "target", err);
    if (rc)
        return rc == IKD_E_INVALID_ARGUMENT ? named(err, c->tick_count, stream, rc) : rc;
    unsigned char dims = (unsigned char)(target->dims ? target->dims : 3);
    if (ikd__buf_put(&c->tick_dims, &dims, 1)) {
        c->tick.len = mark;
        c->tick_recs.len = rec_mark;
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    c->tick_orient = orient;
    c->tick_names = ikd__names_hash(c->tick_names, stream);
    c->tick_count++;
    return 0;
}

int ikd_tick_add(ikd_conn *c, const char *stream, const ikd_target *target, const ikd_seed *seed,
                 long long seq, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc || (rc = ikd__check_name(stream, err)))
        return rc;
    if (!c->tick_open)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_tick_add before ikd_tick_begin");
    if (c->tick_count >= (size_t)c->max_streams)
        return ikd__fail(err, IKD_E_TOO_LARGE,
                         "a tick holds at most max_streams (%d) targets, one per stream",
                         c->max_streams);
    if (c->tick_binary && ikd__tick_target_binary(target, seed, seq) &&
        (c->tick_count == 0 || (target->orientation != NULL) == c->tick_orient))
        return add_binary(c, stream, target, seq, err);
    /* JSON: appended to the tick, or, when the tick was binary so far, to
     * its JSON twin written aside and swapped in once this target is in */
    ikd__buf *b = &c->tick;
    size_t mark = b->len;
    if (c->tick_binary) {
        b = &c->build;
        mark = 0;
        if ((rc = binary_as_json(c, b, err))) {
            b->len = 0;
            return rc;
        }
    }
    rc = json_entry(b, c->tick_count, stream, target, seed, seq, err);
    if (rc == IKD_E_INVALID_ARGUMENT)
        named(err, c->tick_count, stream, rc);
    else if (!rc && b->len + 2 > c->max_send_queue)
        rc = too_large(c, err);
    if (rc) {
        b->len = mark; /* the tick stays as it was before this target */
        return rc;
    }
    if (c->tick_binary) {
        ikd__buf t = c->tick;
        c->tick = c->build;
        c->build = t;
        c->build.len = 0;
        c->tick_binary = false;
    }
    c->tick_names = ikd__names_hash(c->tick_names, stream);
    c->tick_count++;
    return 0;
}

int ikd_tick_send(ikd_conn *c, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    int rc = ikd__conn_check(c, err);
    if (rc)
        return rc;
    if (!c->tick_open || !c->tick_count)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "a tick needs ikd_tick_begin and targets");
    ikd__buf *b = &c->tick;
    size_t mark = b->len;
    if (c->tick_binary) {
        static const char zero[8];
        size_t names = b->len - TICK_HEAD;
        size_t pad = ikd__tick_binary_size(0, names, false) - b->len;
        if (ikd__buf_put(b, zero, pad) || ikd__buf_put(b, c->tick_recs.p, c->tick_recs.len))
            rc = ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        else {
            ikd__tick_head_binary(b->p, c->tick_seq, c->tick_count, names, c->tick_orient);
            rc = ikd__conn_queue(c, WSLAY_BINARY_FRAME, b->p, b->len, err);
        }
    } else {
        PUT(b, "]}");
        rc = ikd__conn_queue(c, WSLAY_TEXT_FRAME, b->p, b->len, err);
    }
    if (rc) {
        b->len = mark; /* still open: send may be tried again */
        return rc;
    }
    c->tick_open = false;
    c->tick_last_sent = c->tick_seq;
    c->tick_sent = true;
    ikd__seqs_note(&c->tick_seqs, c->tick_seq);
    if (c->ticks_len == IKD__TICKS_KEPT) { /* the oldest goes unchecked */
        c->ticks_head = (c->ticks_head + 1) % IKD__TICKS_KEPT;
        c->ticks_len--;
    }
    ikd__tick_sent *k = &c->ticks_kept[(c->ticks_head + c->ticks_len++) % IKD__TICKS_KEPT];
    k->seq = c->tick_seq;
    k->count = c->tick_count;
    k->names = c->tick_names;
    /* a huge tick's buffers are not kept (the bytes are queued) */
    c->tick.len = c->tick_recs.len = c->tick_dims.len = 0;
    ikd__buf_trim(&c->tick, 4 << 20);
    ikd__buf_trim(&c->tick_recs, 4 << 20);
    ikd__buf_trim(&c->tick_dims, 1 << 20);
    return 0;
}
