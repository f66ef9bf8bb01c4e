/*
 * proto_batch_read.c: a POST /v1/solve/batch body decoded without building
 * the jansson tree of its targets (contract in proto.h,
 * proto_batch_decode).
 *
 * A game server's batch is a small envelope around a long "targets" array
 * of small objects ({"position":[x,y,z]}). Read whole, that array becomes
 * a jansson object, an array and three reals per target, several times the
 * text in memory, every node allocated, hashed, and then freed again: most
 * of a large batch's decoding. Here the body is read in two passes instead:
 *
 *   the envelope   the top-level members are found by a scan that only
 *                  matches brackets and quotes; every member but "targets"
 *                  is read with the fast reader (proto__json_read, the
 *                  tree jansson would build) into a small object, and the
 *                  targets array is only counted;
 *   the targets    are read one by one, in order, straight from the text:
 *                  their numbers (proto__json_number reads them as
 *                  jansson does) become the target proto__target_decode
 *                  would make of them (proto__target_numbers); a target
 *                  they do not make (a number out of range, a member that
 *                  does not apply) is written into one reused object of
 *                  its shape, which proto__target_decode itself then
 *                  refuses, as it would the tree's.
 *
 * Only what this file reads it decodes: a target object whose members are
 * "position", "orientation", "up" and "pole", each an array of at most
 * four numbers, plain keys without escapes, no other member, nothing
 * duplicated, nesting at most ENVELOPE_DEPTH deep in the other members.
 * Anything else, every invalid text and every request that fails, goes to
 * the general path, which parses the whole body and decodes the tree: so
 * the outcome, job or error (code, path and message), is by construction
 * the general path's (tests/proto/test_proto_batch_read.c checks it
 * differentially on fixtures, generated batches and mutations).
 *
 * Not here: batches of "items" (many rigs, each with its own chain object
 * to read: the general path), single solves.
 */
#include "proto/proto_impl.h"

#include <stdlib.h>
#include <string.h>

/* Nesting of the envelope's members followed by the scan; deeper goes to
 * the general path (whose depth limit then applies exactly). */
#define ENVELOPE_DEPTH 64
/* Members of the envelope read here; a body with more is not a batch. */
#define ENVELOPE_MAX 8
/* Shapes of target objects kept as reusable objects at once. */
#define SHAPES_MAX 8

typedef struct scan {
    const unsigned char *p, *end;
} scan;

static void ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static bool take(scan *s, unsigned char c)
{
    if (s->p >= s->end || *s->p != c)
        return false;
    s->p++;
    return true;
}

/* A string of printable ASCII without escapes (a key as requests write
 * them): its text in [*k, *k + *n). */
static bool plain_string(scan *s, const unsigned char **k, size_t *n)
{
    if (!take(s, '"'))
        return false;
    const unsigned char *start = s->p;
    while (s->p < s->end && *s->p != '"') {
        if (*s->p < 0x20 || *s->p >= 0x7f || *s->p == '\\')
            return false;
        s->p++;
    }
    if (s->p >= s->end)
        return false;
    *k = start;
    *n = (size_t)(s->p - start);
    s->p++;
    return true;
}

/* Skips a string (escapes included; what they say is checked later). */
static bool skip_string(scan *s)
{
    s->p++;
    while (s->p < s->end) {
        unsigned char c = *s->p++;
        if (c == '"')
            return true;
        if (c == '\\' && s->p < s->end)
            s->p++;
    }
    return false;
}

/* Finds the end of one value by its brackets and quotes alone, without
 * matching the kinds of brackets (the text is read properly afterwards);
 * an array's elements are counted in *elements when it is not NULL (an
 * array of scalars counts as empty: the batch reader takes arrays of
 * objects only, and a wrong count only sends a body the general way). */
static bool skip_value(scan *s, size_t *elements)
{
    if (s->p >= s->end)
        return false;
    unsigned char c = *s->p;
    if (c == '"')
        return skip_string(s);
    if (c != '{' && c != '[') {
        /* a number or a literal: up to the next separator */
        while (s->p < s->end && *s->p != ',' && *s->p != '}' && *s->p != ']' && *s->p != ' ' &&
               *s->p != '\n' && *s->p != '\r' && *s->p != '\t')
            s->p++;
        return true;
    }
    /* what the scan stops at: quotes, brackets, commas */
    static const unsigned char stop[256] = {['"'] = 1, ['{'] = 2, ['['] = 2,
                                            ['}'] = 3, [']'] = 3, [','] = 4};
    int depth = 0;
    size_t commas = 0;
    bool any = false; /* an element: a string or a bracket inside */
    while (s->p < s->end) {
        switch (stop[*s->p]) {
        case 0:
            s->p++;
            break;
        case 1:
            if (!skip_string(s))
                return false;
            any = true;
            break;
        case 2:
            s->p++;
            if (++depth > ENVELOPE_DEPTH)
                return false;
            if (depth > 1)
                any = true;
            break;
        case 3:
            s->p++;
            if (--depth == 0) {
                if (elements)
                    *elements = any ? commas + 1 : 0;
                return true;
            }
            break;
        default:
            s->p++;
            if (depth == 1)
                commas++;
            break;
        }
    }
    return false;
}

/* ---- targets from the text ----------------------------------------------------- */

/* The members a target read here may have, in the order of its object. */
static const char *const target_keys[] = {"position", "orientation", "up", "pole"};
#define TARGET_KEYS 4

typedef struct shape {
    unsigned sig; /* the array length of each member (0: absent), base 5 */
    json_t *obj;  /* {"position":[0.0,0.0,0.0], ...} of that shape */
} shape;

typedef struct feed {
    proto__target_feed base;
    scan s; /* the targets' text, from after its '[' to its ']' */
    size_t next;
    shape shapes[SHAPES_MAX];
    size_t nshapes;
} feed;

static json_t *shape_object(feed *f, unsigned sig, const size_t len[TARGET_KEYS])
{
    for (size_t k = 0; k < f->nshapes; k++)
        if (f->shapes[k].sig == sig)
            return f->shapes[k].obj;
    if (f->nshapes == SHAPES_MAX)
        return NULL;
    json_t *o = json_object();
    for (int m = 0; o && m < TARGET_KEYS; m++) {
        if (!len[m])
            continue;
        json_t *a = json_array();
        for (size_t k = 0; a && k < len[m]; k++)
            if (json_array_append_new(a, json_real(0.0))) {
                json_decref(a);
                a = NULL;
            }
        if (!a || json_object_set_new(o, target_keys[m], a)) {
            json_decref(o);
            o = NULL;
        }
    }
    if (!o)
        return NULL;
    f->shapes[f->nshapes++] = (shape){sig, o};
    return o;
}

/* Target i, read from the text: as a target when the numbers make one
 * (proto__target_numbers), else into the object of its shape. */
static int feed_next(proto__target_feed *base, size_t i, proto_frame fr, bool dims2,
                     proto_target *t, json_t **out)
{
    feed *f = (feed *)base;
    scan *s = &f->s;
    *out = NULL;
    if (i != f->next || i >= base->n)
        return 0;
    f->next++;
    ws(s);
    if (i > 0) {
        if (!take(s, ','))
            return 0;
        ws(s);
    }
    if (!take(s, '{'))
        return 0;
    double v[TARGET_KEYS][4];
    size_t len[TARGET_KEYS] = {0, 0, 0, 0};
    unsigned seen = 0;
    ws(s);
    for (;;) {
        const unsigned char *k;
        size_t kn;
        if (!plain_string(s, &k, &kn))
            return 0;
        int m = 0;
        while (m < TARGET_KEYS && !(strlen(target_keys[m]) == kn &&
                                   memcmp(target_keys[m], k, kn) == 0))
            m++;
        if (m == TARGET_KEYS || (seen & (1u << m)))
            return 0;
        seen |= 1u << m;
        ws(s);
        if (!take(s, ':'))
            return 0;
        ws(s);
        if (!take(s, '['))
            return 0;
        ws(s);
        if (!take(s, ']')) {
            for (;;) {
                proto_json_num num;
                size_t took = proto__json_number((const char *)s->p, (size_t)(s->end - s->p), &num);
                if (took == 0 || len[m] == 4)
                    return 0;
                s->p += took;
                v[m][len[m]++] = num.is_int ? (double)num.i : num.d;
                ws(s);
                if (take(s, ']'))
                    break;
                if (!take(s, ','))
                    return 0;
                ws(s);
            }
            if (len[m] == 0)
                return 0;
        } else {
            return 0; /* an empty array: the general path says what is wrong */
        }
        ws(s);
        if (take(s, '}'))
            break;
        if (!take(s, ','))
            return 0;
        ws(s);
    }
    if (i + 1 == base->n) { /* the last: nothing but the end after it */
        ws(s);
        if (s->p != s->end)
            return 0;
    }
    if (t) {
        proto_target_numbers tn;
        memcpy(tn.pos, v[0], sizeof tn.pos);
        memcpy(tn.quat, v[1], sizeof tn.quat);
        memcpy(tn.up, v[2], sizeof tn.up);
        memcpy(tn.pole, v[3], sizeof tn.pole);
        tn.npos = len[0], tn.nquat = len[1], tn.nup = len[2], tn.npole = len[3];
        if (proto__target_numbers(&tn, fr, dims2, t) == 0)
            return 1;
    }
    /* not a target as it stands: the object, whose decoding says why */
    unsigned sig = 0;
    for (int m = TARGET_KEYS - 1; m >= 0; m--)
        sig = sig * 5 + (unsigned)len[m];
    json_t *o = shape_object(f, sig, len);
    if (!o)
        return 0;
    for (int m = 0; m < TARGET_KEYS; m++) {
        json_t *a = len[m] ? json_object_get(o, target_keys[m]) : NULL;
        for (size_t k = 0; k < len[m]; k++)
            json_real_set(json_array_get(a, k), v[m][k]);
    }
    *out = o;
    return 0;
}

/* ---- the envelope ------------------------------------------------------------ */

typedef struct member {
    const unsigned char *key, *value;
    size_t klen, vlen;
} member;

enum { READ_DONE = 0, READ_GENERAL = 1, READ_ITEMS = 2 };

/* The body the fast way: READ_DONE with *out, or READ_GENERAL (or
 * READ_ITEMS, a batch of items) when the general path must read it. */
int proto__batch_read(const char *body, size_t len, const proto_limits *lim,
                      proto_chain_lookup_fn lookup, void *ud, proto_job **out)
{
    *out = NULL;
    scan s = {(const unsigned char *)body, (const unsigned char *)body + len};
    member m[ENVELOPE_MAX];
    size_t nm = 0, elements = 0;
    int targets = -1;
    ws(&s);
    if (!take(&s, '{'))
        return READ_GENERAL;
    ws(&s);
    for (;;) {
        if (nm == ENVELOPE_MAX || !plain_string(&s, &m[nm].key, &m[nm].klen))
            return READ_GENERAL;
        for (size_t k = 0; k < nm; k++)
            if (m[k].klen == m[nm].klen && memcmp(m[k].key, m[nm].key, m[nm].klen) == 0)
                return READ_GENERAL; /* a duplicate */
        ws(&s);
        if (!take(&s, ':'))
            return READ_GENERAL;
        ws(&s);
        m[nm].value = s.p;
        bool is_targets = m[nm].klen == 7 && memcmp(m[nm].key, "targets", 7) == 0;
        if (m[nm].klen == 5 && memcmp(m[nm].key, "items", 5) == 0)
            return READ_ITEMS;
        if (is_targets && (s.p >= s.end || *s.p != '['))
            return READ_GENERAL;
        if (!skip_value(&s, is_targets ? &elements : NULL))
            return READ_GENERAL;
        m[nm].vlen = (size_t)(s.p - m[nm].value);
        if (is_targets) {
            /* the scan matches brackets by count alone: the closing one
             * must be the array's */
            if (s.p[-1] != ']')
                return READ_GENERAL;
            targets = (int)nm;
        }
        nm++;
        ws(&s);
        if (take(&s, '}'))
            break;
        if (!take(&s, ','))
            return READ_GENERAL;
        ws(&s);
    }
    ws(&s);
    if (s.p != s.end || targets < 0 || elements == 0)
        return READ_GENERAL;

    json_t *req = json_object();
    if (!req)
        return READ_GENERAL;
    for (size_t k = 0; k < nm; k++) {
        if ((int)k == targets)
            continue;
        json_t *v = proto__json_read((const char *)m[k].value, m[k].vlen,
                                     JSON_REJECT_DUPLICATES | JSON_DECODE_ANY);
        if (!v || json_object_setn_new_nocheck(req, (const char *)m[k].key, m[k].klen, v)) {
            json_decref(req);
            return READ_GENERAL;
        }
    }
    feed f = {.base = {.n = elements, .next = feed_next}};
    /* the array's elements, between its brackets */
    f.s.p = m[targets].value + 1;
    f.s.end = m[targets].value + m[targets].vlen - 1;
    proto_error err;
    int rc = proto__job_decode_fed(req, lim, lookup, ud, &f.base, out, &err);
    for (size_t k = 0; k < f.nshapes; k++)
        json_decref(f.shapes[k].obj);
    json_decref(req);
    return rc == 0 ? READ_DONE : READ_GENERAL;
}

int proto_batch_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_job **job,
                       proto_items **items, proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    *job = NULL;
    *items = NULL;
    if (body && len > 0 && len <= lim->max_body_bytes &&
        proto__batch_read(body, len, lim, lookup, ud, job) == READ_DONE)
        return 0;
    /* the general path: the whole tree, then the decoder of its form */
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_BATCH, err);
    if (!root)
        return -1;
    int rc;
    if (json_is_object(root) && json_object_get(root, "items"))
        rc = proto_items_decode_json(root, lim, lookup, ud, items, err);
    else
        rc = proto_job_decode_json(root, PROTO_BATCH, lim, lookup, ud, job, err);
    json_decref(root);
    return rc;
}
